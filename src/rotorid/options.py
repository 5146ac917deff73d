"""One declaration for each option a method takes: its settings dataclass field says, in its
metadata (`option(...)`), the `rotorid identify` flag, help text and how text is parsed; the
command line, `MethodSpec.options` and `rotorid.runs.Request.settings` are made from it. A
field no front end sets is declared `internal(...)`. Options that are not settings (log roles,
mass configurations) are declared as `Option` records of the method's `MethodSpec.inputs`.

Light on purpose (no numpy): `rotorid --help` builds the command line from these declarations.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rotorid.errors import RotoridError

#: Key of a settings field's metadata holding its `Option` (None: internal, no flag).
KEY = "rotorid.option"


@dataclass(frozen=True)
class Option:
    """How a front end sets one option.

    - `help`: the flag's help text; `flag`: its spelling (default `--name-with-dashes`);
    - `parse(value, flag)`: text (or a manifest's value) -> the field's value (default: as given);
    - `kind`: the type of a value on the command line, where the default does not say it (a
      default of None); a tuple default is written as text "A,B" (`kind` str);
    - `auto`: None is written "auto" on the command line (chosen from the data);
    - `many`: repeatable (a list of texts); `shared`: several methods take it (listed with the
      general options).
    """

    help: str
    flag: str | None = None
    parse: Callable[[Any, str], Any] | None = None
    kind: type | None = None
    auto: bool = False
    many: bool = False
    shared: bool = False
    name: str = ""
    default: Any = None

    @property
    def spelling(self) -> str:
        """The command-line flag: `flag`, or `--` and the name with dashes."""
        return self.flag or option_flag(self.name)

    @property
    def cli_default(self) -> Any:
        """The default as the command line writes it: "auto" for None when `auto`, "A,B" for a
        tuple, else the default itself."""
        if self.default is None:
            return "auto" if self.auto else None
        if isinstance(self.default, tuple):
            return ",".join(map(str, self.default))
        return self.default

    @property
    def cli_type(self) -> Any:
        """The type of the command-line value (`list[str]` for `many`; `| None` without a default)."""
        if self.many:
            return list[str] | None
        if self.auto or isinstance(self.default, tuple):
            kind: Any = str
        else:
            kind = self.kind or type(self.default)
        return kind | None if self.default is None and not self.auto else kind

    def value(self, given: Any) -> Any:
        """A given value (text or typed) as the settings field takes it: `parse`, else a number
        written as text (a manifest's or the API's "0.8") as the field's number."""
        if self.parse is not None:
            return self.parse(given, self.spelling)
        kind = self.kind or type(self.default)
        if isinstance(given, str) and kind in (int, float):
            try:
                return kind(given)
            except ValueError:
                raise RotoridError(f"{self.spelling} '{given}' must be a number") from None
        return given


def option(default: Any, help: str, **kw: Any) -> Any:
    """A settings field with its default and its `Option` (`help`, and `Option`'s other keywords)."""
    return dataclasses.field(default=default, metadata={KEY: Option(help, **kw)})


def internal(default: Any) -> Any:
    """A settings field no front end sets (the API and batch manifests still may)."""
    return dataclasses.field(default=default, metadata={KEY: None})


def options_of(cls: type) -> dict[str, Option]:
    """The `Option` of each field of the settings dataclass `cls` that has one, by field name,
    in field order, with its name and default filled in."""
    return {
        f.name: dataclasses.replace(f.metadata[KEY], name=f.name, default=f.default)
        for f in dataclasses.fields(cls)
        if f.metadata.get(KEY) is not None
    }


def undeclared(cls: type) -> list[str]:
    """The fields of `cls` declared neither `option(...)` nor `internal(...)`."""
    return [f.name for f in dataclasses.fields(cls) if KEY not in f.metadata]


def option_flag(name: str) -> str:
    """The command-line spelling of an option name: `mass_b` -> `--mass-b`."""
    return "--" + name.replace("_", "-")


def floats(text: str | tuple[float, ...] | None, n: int, what: str) -> tuple[float, ...] | None:
    """`"A,B"` -> (A, B): exactly `n` comma-separated numbers (a tuple passes through)."""
    if text is None or isinstance(text, tuple):
        return text
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise RotoridError(f"{what} '{text}' must be {n} comma-separated numbers") from None
    if len(vals) != n:
        raise RotoridError(f"{what} '{text}' must be {n} comma-separated numbers")
    if not all(math.isfinite(v) for v in vals):
        raise RotoridError(f"{what} '{text}' must be finite numbers (no nan or inf)")
    return vals


def pair(text: str | tuple[float, ...] | None, what: str) -> tuple[float, ...] | None:
    """`"A,B"` -> (A, B) (`floats` of two)."""
    return floats(text, 2, what)


def value_sigma(text: str | float | tuple[float, ...], what: str, limit: float = math.inf) -> float | tuple[float, ...]:
    """`"V"` -> V, `"V,SIGMA"` -> (V, SIGMA) (numbers and tuples pass through): a value with an
    optional σ, the method's default σ applying when none is given; |V| and SIGMA at most
    `limit`, SIGMA not negative."""
    if not isinstance(text, str):
        return text
    n = text.count(",") + 1
    if n > 2:
        raise RotoridError(f"{what} '{text}' must be VALUE or VALUE,SIGMA")
    vals = floats(text, n, what)
    if abs(vals[0]) > limit or (n == 2 and not 0 <= vals[1] <= limit):
        raise RotoridError(f"{what} '{text}': the value must lie within ±{limit:g} and SIGMA in 0..{limit:g}")
    return vals[0] if n == 1 else vals


def words(text: str | tuple[Any, ...], what: str) -> tuple[Any, ...]:
    """`"0,1,2"` -> ("0", "1", "2") (a sequence passes through as a tuple); the settings check
    each item."""
    return tuple(text.split(",")) if isinstance(text, str) else tuple(text)


def seconds_or_auto(v: str | float, flag: str) -> float | None:
    """A lag option (`flag`): "auto" (None: measured from the flights) or seconds."""
    return _number_or_auto(v, flag, "seconds")


def hz_or_auto(v: str | float, flag: str) -> float | None:
    """A frequency option (`flag`): "auto" (None: chosen from the log) or Hz."""
    return _number_or_auto(v, flag, "Hz")


def _number_or_auto(v: str | float, flag: str, unit: str) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if str(v).strip().lower() == "auto":
        return None
    try:
        return float(v)
    except ValueError:
        raise RotoridError(f"{flag} must be 'auto' or {unit}, got '{v}'") from None


def zero_is_none(v: float | None, what: str) -> float | None:
    """A rate where 0 means none (e.g. `--rate-hz 0`: every sample)."""
    return v or None


def band_option() -> Any:
    """The `band` settings field of the methods that take a frequency band (tls, freq): one
    `--band` for both."""
    return option(
        None,
        "Band LOW,HIGH in Hz: tls band-pass (default chosen from the rate); freq fitted band (default the sweep's).",
        kind=str,
        parse=pair,
        shared=True,
    )


def voltage_option() -> Any:
    """The `voltage` settings field of the methods whose thrust curve may take the battery
    voltage (delay, tls): one `--voltage` for both."""
    return option(
        "auto",
        "Battery voltage in the thrust curve (the lag of command x (V/V_ref)^α): auto (where the log has vbat, when "
        "it predicts held-out thrust better), on, off.",
        shared=True,
    )


def tm_bounds_option() -> Any:
    """The `tm_bounds` settings field of the methods that search the motor time constant (delay,
    freq): one `--tm-bounds` for both."""
    return option((0.002, 0.5), "T_m search range LO,HI (s) (delay, freq).", parse=pair, shared=True)
