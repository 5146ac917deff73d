"""`Estimate`, `Result` and `Truth`: what every method returns and every simulator knows.

Parameter names are shared by all methods and the simulator (see `PARAMS`), so
`compare(result, truth)` gives relative errors in one call and `params.json` reads the same
whatever produced it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rotorid.errors import RotoridError, quote
from rotorid.names import parse

#: Canonical parameter names -> (unit for a normalized motor input, description): the one
#: name of each parameter in params.json, the terminal, the report and the README. Per-motor
#: parameters carry a motor suffix `_m1`.. (1-based, the log's motor order), e.g.
#: `thrust_c2_m3`, `tm_m2`; `u` is the motor input (see `unit_of` for the other inputs).
PARAMS: dict[str, tuple[str, str]] = {
    "mass": ("kg", "mass"),
    "tm": ("s", "motor time constant"),
    "tm_rise": ("s", "motor time constant, rising"),
    "tm_fall": ("s", "motor time constant, falling"),
    "thrust_c0": ("N", "thrust curve coefficient of u^0 (per rotor)"),
    "thrust_c1": ("N", "thrust curve coefficient of u^1 (per rotor)"),
    "thrust_c2": ("N", "thrust curve coefficient of u^2 (per rotor)"),
    "thrust_c3": ("N", "thrust curve coefficient of u^3 (per rotor)"),
    "k_t": ("N", "thrust coefficient f = k_t u^2 (per rotor)"),
    "k_d": ("N m", "drag-torque coefficient tau = k_d u^2 (per rotor)"),
    "k_tau": ("m", "torque-to-thrust ratio k_tau = k_d / k_t"),
    "k_rd": ("N s/m", "rotor-drag coefficient: in-plane hub force -k_rd u v_hub (per rotor)"),
    "k_in": ("N s/m", "rotor-inflow coefficient: thrust lost climbing, axial hub force -k_in u v_hub (per rotor)"),
    "hover_cmd": ("1", "hover command"),
    "thrust_v_exp": ("1", "battery-voltage exponent α: the thrust curve holds in the command u (V/V_ref)^α"),
    "thrust_v_drop": ("%", "thrust lost at the hover command from the flights' highest battery voltage to the lowest"),
    # the body drag's unit follows its form (N s/m linear, N s^2/m^2 quadratic): the method sets it
    "d_bx": ("", "body (fuselage) drag coefficient along body x"),
    "d_by": ("", "body (fuselage) drag coefficient along body y"),
    "d_bz": ("", "body (fuselage) drag coefficient along body z"),
    "I_xx": ("kg m^2", "moment of inertia about x"),
    "I_yy": ("kg m^2", "moment of inertia about y"),
    "I_zz": ("kg m^2", "moment of inertia about z"),
    "I_xy": ("kg m^2", "product of inertia xy"),
    "I_xz": ("kg m^2", "product of inertia xz"),
    "I_yz": ("kg m^2", "product of inertia yz"),
    "ms_x": ("kg m", "first moment of mass x"),
    "ms_y": ("kg m", "first moment of mass y"),
    "ms_z": ("kg m", "first moment of mass z"),
    "com_x": ("m", "centre of mass x"),
    "com_y": ("m", "centre of mass y"),
    "com_z": ("m", "centre of mass z"),
    "imu_x": ("m", "IMU position x"),
    "imu_y": ("m", "IMU position y"),
    "imu_z": ("m", "IMU position z"),
}

_THRUST_COEFF = re.compile(r"^thrust_c(?P<j>\d+)$")

#: Key of `Result.settings` under which a method records the accelerometer bias it estimated and
#: removed, {configuration: [bx, by, bz]} m/s² (IMU source): validation removes it alike.
ACC_BIAS_KEY = "acc_bias_estimate"

#: The unit of one motor input (command or rotor speed) by the vehicle's `motor_input` kind;
#: a normalized command (0…1) has none.
INPUT_UNIT = {"normalized": "", "rad_s": "rad/s", "pwm_us": "us"}

#: Parameters whose unit carries the motor input: name -> (unit over the input, its power).
_PER_INPUT = {"k_t": ("N", 2), "k_d": ("N m", 2), "k_rd": ("N s/m", 1), "k_in": ("N s/m", 1), "hover_cmd": ("", -1)}


def unit_of(name: str, motor_input: str = "normalized") -> str:
    """Unit of a canonical parameter name (with optional `_mK` motor or `@config` suffix) for a
    vehicle whose motor input is `motor_input` (`normalized`, `rad_s`, `pwm_us`): the thrust
    curve coefficient `thrust_cJ` is in N per input^J (N for a normalized command, N/(rad/s)^2
    for J = 2 on rotor speed), `k_t`/`k_d` in N (N m) per input², `hover_cmd` in the input's
    unit ("1" when normalized)."""
    base = parse(name).base
    u = INPUT_UNIT.get(motor_input, "")
    coeff = _THRUST_COEFF.match(base)
    if coeff or base in _PER_INPUT:
        top, power = ("N", int(coeff.group("j"))) if coeff else _PER_INPUT[base]
        if power < 0:
            return u or "1"
        if not u or power == 0:
            return top
        per = u if "/" not in u else f"({u})"
        return f"{top}/{per}" + (f"^{power}" if power > 1 else "")
    return PARAMS.get(base, PARAMS.get(name, ("", "")))[0]


def with_units(params: Mapping[str, Estimate], motor_input: str) -> dict[str, Estimate]:
    """`params` with every unit set by `unit_of(name, motor_input)` (a name `unit_of` does not
    know keeps its unit)."""
    return {k: replace(e, unit=unit_of(k, motor_input) or e.unit) for k, e in params.items()}


@dataclass(frozen=True)
class Estimate:
    """A parameter estimate with its standard deviation (NaN when unknown) and unit.

    `assumption` names, in words, what the value rests on besides the flights (e.g. "I_zz from
    the assumed yaw-inertia ratio C_xy->z = 1.83 ± 0.4, Eschmann Table II"); "" when the flights
    measure it. Its σ must carry the assumption's own uncertainty, and an assumed parameter is
    never reported as "well determined" (README "How far to trust the numbers").
    """

    value: float
    std: float = float("nan")
    unit: str = ""
    assumption: str = ""

    @property
    def assumed(self) -> bool:
        """True when the value rests on an assumption, not on the flights alone."""
        return bool(self.assumption)

    @property
    def rel_std_pct(self) -> float:
        """%sigma = 100 sigma / |value| (Six et al. eq. 22)."""
        return 100.0 * self.std / abs(self.value) if self.value != 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        d = {"value": _num(self.value), "std": _num(self.std), "unit": self.unit}
        if self.assumption:
            d["assumption"] = self.assumption
        return d


def _num(x: Any) -> Any:
    """JSON-safe number: NaN/inf become None."""
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    return x


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return _num(float(x))
    if isinstance(x, Path):
        return str(x)
    return x


#: Relative standard deviation (%) up to which an estimate counts as well / loosely determined.
WELL_PCT = 10.0
LOOSE_PCT = 50.0
#: %σ below which σ says nothing: a flight log determines no parameter to better than 1e-8 of
#: itself (√eps of float64: below it, σ is rounding in the fit, not information from the data).
RESOLUTION_PCT = 100 * float(np.sqrt(np.finfo(float).eps))

_REF = re.compile(r"\s*\((?:eq|Eq|Sec|Alg|Fig|Table)\.?\s[^)]*\)")
_TECHNICAL = re.compile(r"\b(?:eq|Eq|Alg|Sec|Fig)\. ?\d|\bTable [IVX]+\b|condition number|r_σ|autocorrelation")
_NEGATIVE_R2 = re.compile(r"R² [-−]\d")


def plain(text: str) -> str:
    """`text` without its parenthesized paper references ("(eq. 93-94)", "(Sec. III-A1)")."""
    return _REF.sub("", text)


@dataclass(frozen=True)
class Verdict:
    """How far one parameter can be trusted: `cls` (ok, warn, assumed, bad), a short `word`
    for a table column and the plain-words `text`."""

    cls: str
    word: str
    text: str


def verdict(e: Estimate, obs: dict[str, Any] | None) -> Verdict:
    """The verdict on one parameter, from the method's observability entry when it has one,
    else from the relative standard deviation (Six et al. eq. 22); an assumed parameter is
    "assumed" however small its σ, unless it is also model-dependent (that says more: the value
    moves with any effect the model leaves out), whose text then names the assumption too."""
    obs = obs or {}
    advice = f" — {obs['advice']}" if obs.get("advice") else ""
    if obs.get("identifiable") is False:
        return Verdict(
            "bad", "not identifiable", plain(obs.get("reason") or "not identifiable from this flight") + advice
        )
    if obs.get("at_bound"):
        return Verdict("bad", "not identified", f"not identified: the estimate sits at {obs['at_bound']}" + advice)
    pct = obs.get("rel_std_pct", e.rel_std_pct)
    if e.assumed and not obs.get("model_dependent"):
        return Verdict(
            "assumed", "assumed", f"assumed (%σ {pct:.2g}, the assumption's spread included): {e.assumption}"
        )
    if not (isinstance(pct, int | float) and math.isfinite(pct)) or not (e.std > 0 and math.isfinite(e.std)):
        cls, word, base = "warn", "no σ", "no uncertainty available: cannot say how well determined"
    elif pct < RESOLUTION_PCT:
        cls, word = "warn", "no σ"
        base = (
            f"σ ({e.std:.2g}) is below the arithmetic's resolution: the model fits these samples to rounding, "
            "so σ cannot say how well the flights determine it (is the log simulated by this very model, "
            "or a channel copied from another?)"
        )
    elif obs.get("model_dependent"):
        cls, word = "warn", "model-dependent"
        terms = "the model's terms and an assumption's spread" if e.assumed else "the model's own terms only"
        base = f"model-dependent (%σ {pct:.2g}, {terms}): {plain(str(obs['model_dependent']))}"
        base += f"; σ includes what is assumed: {e.assumption}" if e.assumed else ""
    elif pct <= WELL_PCT:
        cls, word, base = "ok", "well", f"well determined (%σ {pct:.2g})"
    elif pct <= LOOSE_PCT:
        cls, word, base = "warn", "loose", f"loosely determined (%σ {pct:.2g})"
    else:
        cls, word, base = "bad", "poor", f"poorly determined (%σ {pct:.3g})"
    text = f"{base}: {plain(obs['reason'])}" if obs.get("reason") else base
    return Verdict(cls, word, text + (advice if cls != "ok" else ""))


def shown(e: Estimate, obs: dict[str, Any] | None) -> tuple[str, str, str]:
    """Value, σ and %σ as a table shows them: a number's, or "—" for an estimate at a search
    bound (a bound the search stopped on, not a measurement; params.json keeps the number with
    its `at_bound`) and for a σ that is not finite."""
    if (obs or {}).get("at_bound"):
        return "—", "—", "—"
    return _number(e.value, ".6g"), _number(e.std, ".3g"), _number(e.rel_std_pct, ".2f")


def _number(x: float, fmt: str) -> str:
    """`x` in `fmt`, or "—" when it is not a finite number (a σ the method could not give)."""
    return format(x, fmt) if isinstance(x, int | float) and math.isfinite(x) else "—"


def usable(e: Estimate, obs: dict[str, Any] | None) -> bool:
    """Usable for simulation (`overall`): well determined, or assumed with a %σ that, the
    assumption's spread included, is within the well-determined bound."""
    obs = obs or {}
    cls = verdict(e, obs).cls
    pct = obs.get("rel_std_pct", e.rel_std_pct)
    return cls == "ok" or (cls == "assumed" and isinstance(pct, int | float) and pct <= WELL_PCT)


def _listed(names: list[str]) -> str:
    """Names with per-motor ones folded: thrust_c2_m1 … thrust_c2_m4 -> `thrust_c2 (motors 1–4)`."""
    groups: dict[tuple[str, str | None], list[int | None]] = {}
    for n in names:
        p = parse(n)
        groups.setdefault((p.base, p.config), []).append(p.motor)
    out = []
    for (base, cfg), motors in groups.items():
        at = f"@{cfg}" if cfg else ""
        ms = sorted(m for m in motors if m is not None)
        if None in motors or len(ms) < 2:
            out += [f"{base}{f'_m{m}' if m is not None else ''}{at}" for m in motors]
        else:
            run = ms == list(range(ms[0], ms[-1] + 1))
            out.append(f"{base}{at} (motors {f'{ms[0]}–{ms[-1]}' if run else ', '.join(map(str, ms))})")
    return ", ".join(out)


def overall(result: Result) -> str:
    """The verdict on the whole run, built from the per-parameter verdicts: what is usable for
    simulation, what is loosely determined, assumed or not determined, and what to fly. An
    assumed parameter whose σ, the assumption's spread included, is within the well-determined
    bound is usable: its σ already says how far the assumption can move it."""
    by: dict[str, list[str]] = {k: [] for k in ("ok", "warn", "model-dependent", "no σ", "assumed", "bad")}
    advice: dict[str, list[str]] = {k: [] for k in by}
    usable_assumed: list[str] = []
    for name, e in result.params.items():
        obs = result.observability.get(name) or {}
        v = verdict(e, obs)
        cls = v.word if v.word in by else v.cls
        if cls == "assumed" and usable(e, obs):
            by["ok"].append(name)
            usable_assumed.append(name)
            continue
        by[cls].append(name)
        if obs.get("advice") and obs["advice"] not in advice[cls]:
            advice[cls].append(obs["advice"])
    on = f" ({_listed(usable_assumed)} on a stated assumption, its spread in σ)" if usable_assumed else ""
    parts = [f"usable for simulation: {_listed(by['ok']) or 'none'}{on}"]
    labels = (
        ("warn", "loosely determined"),
        ("model-dependent", "model-dependent (rest on a secondary model term)"),
        ("no σ", "without a usable σ"),
        ("assumed", "assumed"),
        ("bad", "not determined"),
    )
    for cls, label in labels:
        if by[cls]:
            todo = "; ".join(advice[cls])
            parts.append(f"{label}: {_listed(by[cls])}" + (f" ({todo} to measure them)" if todo else ""))
    return "; ".join(parts)


def technical(note: str) -> bool:
    """A note for the details (paper references, condition numbers, residual statistics)
    rather than for the main text."""
    return bool(_TECHNICAL.search(note))


def explained(note: str) -> str:
    """`note`, with a negative R² explained in words."""
    if not _NEGATIVE_R2.search(note):
        return note
    return (
        f"{note} (R² below 0: the prediction is worse than a constant at the measured mean — expected where "
        "that flight barely moves the axis, so there is little to predict; a warning where it moves it well)"
    )


@dataclass
class Result:
    """What a method returns.

    - `params`: canonical name -> `Estimate`.
    - `settings`: every option the method used (defaults included), for reproduction.
    - `diagnostics`: arrays and curves the report plots (not written to params.json unless
      small); `observability`: per-parameter verdicts {name: {"identifiable": bool,
      "rel_std_pct": .., "reason": "..", "advice": ".."}}.
    - `inputs`: [{"path", "sha256", "windows"}]; `notes`: plain-language remarks.
    - `vehicle`: the identified vehicle (`Vehicle.to_dict()`): the vehicle the method was
      given with every quantity the result identified replaced
      (`rotorid.identified.vehicle_from_result(result, input_vehicle)`), the same for every
      method; None when it could not be built (a note says why). Mapping the result onto it
      again gives it back, so validation and export may start from it.
    """

    method: str
    params: dict[str, Estimate]
    settings: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    observability: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    vehicle: dict[str, Any] | None = None

    def value(self, name: str) -> float:
        try:
            return self.params[name].value
        except KeyError:
            raise RotoridError(
                f"result of method '{self.method}' has no parameter '{name}' (has {', '.join(self.params)})"
            ) from None

    def summary(self, truth: Truth | None = None) -> str:
        """A statsmodels-like text table under the overall verdict: name, value, std, %sigma,
        unit, verdict (and truth, error); then the plain notes, paper-level ones counted."""
        unit_w = max([9, *(len(e.unit) for e in self.params.values())])
        head = f"{'parameter':<16}{'value':>14}{'std':>12}{'%σ':>8}  {'unit':<{unit_w}}  {'verdict':<17}"
        if truth is not None:
            head += f"{'truth':>14}{'error %':>9}"
        errors = compare(self, truth) if truth is not None else {}
        lines = [f"rotorid {self.method} — {len(self.params)} parameters", f"verdict: {overall(self)}"]
        lines += ["=" * len(head), head.rstrip(), "-" * len(head)]
        for k, e in self.params.items():
            word = verdict(e, self.observability.get(k)).word
            value, std, pct = shown(e, self.observability.get(k))
            row = f"{k:<16}{value:>14}{std:>12}{pct:>8}  {e.unit:<{unit_w}}  {word:<17}"
            if k in errors:
                row += f"{truth.params[k]:>14.6g}{errors[k]:>9.2f}"
            lines.append(row.rstrip())
        lines.append("=" * len(head))
        lines += [f"note: {explained(n)}" for n in self.notes if not technical(n)]
        hidden = sum(technical(n) for n in self.notes)
        if hidden:
            lines.append(f"({hidden} technical note{'s' if hidden > 1 else ''} in report.html, Details)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The params.json content (diagnostics excluded: they are for figures)."""
        return _jsonable(
            {
                "rotorid_result": 1,
                "method": self.method,
                "params": {k: e.to_dict() for k, e in self.params.items()},
                "observability": self.observability,
                "settings": self.settings,
                "inputs": self.inputs,
                "notes": self.notes,
                "vehicle": self.vehicle,
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    def save(self, path: str | Path) -> None:
        from rotorid.util import atomic_write_text

        atomic_write_text(Path(path), self.to_json() + "\n")

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Result:
        def f(x: Any) -> float:
            return float("nan") if x is None else float(x)

        return Result(
            method=d["method"],
            params={
                k: Estimate(f(v["value"]), f(v.get("std")), v.get("unit", ""), v.get("assumption", ""))
                for k, v in d["params"].items()
            },
            settings=d.get("settings", {}),
            observability=d.get("observability", {}),
            inputs=d.get("inputs", []),
            notes=d.get("notes", []),
            vehicle=d.get("vehicle"),
        )

    @staticmethod
    def load(path: str | Path) -> Result:
        """A params.json (bounded, checked against `check_result_dict`; one-line errors)."""
        from rotorid.util import load_json

        p = Path(path)
        if not p.exists():
            raise RotoridError(f"{p}: no such result file")
        if p.is_dir():
            raise RotoridError(f"{p}: is a folder; give the params.json inside it")
        d = load_json(p, "rotorid params.json")
        check_result_dict(d, str(p))
        return Result.from_dict(d)  # type: ignore[arg-type]


def check_result_dict(d: object, where: str) -> None:
    """A params.json document's schema: `method` text; `params` a table of entries with a
    numeric (or null) `value` and `std` and text `unit`/`assumption`; `settings`,
    `observability` and `vehicle` tables, `inputs` and `notes` lists (of texts)."""

    def bad(what: str) -> RotoridError:
        return RotoridError(f"{quote(where, 200)}: not a rotorid params.json ({what})")

    if not isinstance(d, dict) or "params" not in d or "method" not in d:
        raise bad("no 'method'/'params'")
    if not isinstance(d["method"], str) or not isinstance(d["params"], dict):
        raise bad("'method' must be text and 'params' a table")
    for name, e in d["params"].items():
        num = isinstance(e, dict) and all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool))
            for v in (e.get("value", "?"), e.get("std"))
        )
        if not num or not all(isinstance(e.get(k, ""), str) for k in ("unit", "assumption")):
            raise bad(f"parameter {quote(name)} needs a numeric 'value' and 'std' and text 'unit'")
    kinds = {"settings": dict, "observability": dict, "inputs": list, "notes": list, "vehicle": dict | None}
    for key, kind in kinds.items():
        if key in d and not isinstance(d[key], kind):
            raise bad(f"'{key}' has the wrong type")
    if not all(isinstance(n, str) for n in d.get("notes", [])):
        raise bad("'notes' must be texts")


@dataclass
class Truth:
    """Ground truth of a simulated flight: canonical name -> value, plus the true vehicle."""

    params: dict[str, float]
    vehicle: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({"params": self.params, "vehicle": self.vehicle})

    def save(self, path: str | Path) -> None:
        from rotorid.util import atomic_write_text

        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=2) + "\n")

    @staticmethod
    def load(path: str | Path) -> Truth:
        d = json.loads(Path(path).read_text())
        return Truth(params={k: float(v) for k, v in d["params"].items()}, vehicle=d.get("vehicle"))


def compare(result: Result, truth: Truth) -> dict[str, float]:
    """Relative error in percent, 100 (estimate - truth) / |truth|, for every parameter both
    know (NaN where the truth is zero)."""
    return {k: rel_error_pct(e.value, truth.params[k]) for k, e in result.params.items() if k in truth.params}


def rel_error_pct(value: float, truth: float) -> float:
    """100 (value - truth) / |truth| (NaN where the truth is zero)."""
    return 100.0 * (value - truth) / abs(truth) if truth != 0 else float("nan")


@dataclass
class Observability:
    """One parameter's observability entry as a method builds it (`Result.observability` holds
    `as_dict()` of each): whether the flights identify it, its %σ, and why not and what to fly.
    `essential`: tls's essential-parameter selection kept it; `active_fraction`: online's share
    of steps its column was corrected; `value_before_cancel`: tls's estimate before it was
    cancelled or withheld; `source`: what informs it, where not the obvious rows; `at_bound`: the
    search bound it sits at ("not identified"); `model_dependent`: why it rests on a secondary
    model term (`verdict`)."""

    identifiable: bool
    essential: bool | None = None
    rel_std_pct: float | None = None
    active_fraction: float | None = None
    value_before_cancel: float | None = None
    reason: str | None = None
    advice: str | None = None
    source: str | None = None
    at_bound: str | None = None
    model_dependent: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The params.json entry: the fields that were set (not None), in field order."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def build_result(
    method: str,
    estimates: Mapping[str, tuple[float, float]],
    settings: dict[str, Any],
    diagnostics: dict[str, Any] | None = None,
    observability: Mapping[str, Observability] | None = None,
    notes: list[str] | None = None,
) -> Result:
    """The `Result` of a method: one `Estimate` per canonical name from (value, σ), its unit
    from `unit_of`, in the order given, and each `Observability` as its dict. The method then
    sets `Result.vehicle` (`rotorid.identified.with_vehicle`)."""
    params = {name: Estimate(float(v), float(s), unit_of(name)) for name, (v, s) in estimates.items()}
    return Result(
        method=method,
        params=params,
        settings=settings,
        diagnostics=diagnostics if diagnostics is not None else {},
        observability={k: o.as_dict() for k, o in (observability or {}).items()},
        notes=notes if notes is not None else [],
    )
