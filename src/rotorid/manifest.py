"""The fleet manifest (`rotorid batch MANIFEST`): one row per identification, read from TOML or
CSV, each value checked (types, dates, presets or vehicle files, method options) before anything
runs, as one-line `ManifestError`s naming the file, row and column."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import functools
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rotorid.errors import RotoridError, quote
from rotorid.registry import methods


class ManifestError(RotoridError):
    """The fleet manifest is malformed (missing column, bad date, unknown option, ...)."""


#: Manifest columns: what each holds. Lists (logs, roles) are `;`-separated in CSV, arrays in TOML.
COLUMNS: dict[str, str] = {
    "vehicle": "the vehicle's name in the fleet (serial, call sign)",
    "date": "ISO date or date-time of the flight (2026-03-14 or 2026-03-14T09:30)",
    "method": "delay, tls or online",
    "airframe": "preset name or vehicle .toml (what `identify --vehicle` takes)",
    "logs": "log files with optional windows FILE@t0:t1 (delay: thrust; tls: configuration A)",
    "roll_pitch": "[delay] roll/pitch excitation logs",
    "yaw": "[delay] yaw excitation logs",
    "configs": "[tls] further mass configurations NAME=LOG",
    "masses": "[tls] measured mass of a configuration NAME=KG",
    "weights": "[tls] weight k_w of a configuration NAME=K_W",
    "options": "method settings NAME=VALUE (the fields of the method's settings: DelaySettings, ...)",
}
REQUIRED = ("vehicle", "date", "method", "airframe", "logs")
#: Roles and tables only some methods take.
_ONLY = {"roll_pitch": "delay", "yaw": "delay", "configs": "tls", "masses": "tls", "weights": "tls"}


@dataclass(frozen=True)
class Job:
    """One manifest row: one identification. Paths are absolute (resolved against the
    manifest's folder), so a worker anywhere that sees the same file system can run it."""

    row: int
    vehicle: str
    date: dt.datetime
    method: str
    airframe: str
    logs: tuple[str, ...]
    roll_pitch: tuple[str, ...] = ()
    yaw: tuple[str, ...] = ()
    configs: dict[str, list[str]] = field(default_factory=dict)
    masses: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The date as written in reports: ISO date, with the time only when it is not midnight."""
        return (
            self.date.date().isoformat() if self.date.time() == dt.time() else self.date.isoformat(timespec="minutes")
        )


# ---------------------------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------------------------
def read_manifest(path: str | Path) -> list[Job]:
    """Parse a CSV or TOML manifest into jobs, checking everything but the logs themselves
    (columns, dates, methods, airframes, option names and values); a missing or unreadable log
    fails only its own row when the batch runs.

    CSV: a header with the `COLUMNS` (the `REQUIRED` ones at least); lists separated by `;`;
    `configs`, `masses`, `weights` and `options` as `NAME=VALUE; NAME=VALUE`. TOML: an optional
    `[defaults]` table and one `[[run]]` table per run with the same keys (arrays and tables).
    """
    p = Path(path)
    if not p.exists():
        raise ManifestError(f"{p}: no such manifest file")
    if not p.is_file():
        raise ManifestError(f"{p}: is not a regular file; give the manifest .csv or .toml")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(p)
    elif suffix == ".toml":
        rows = _toml_rows(p)
    else:
        raise ManifestError(f"{p}: a manifest is a .csv or .toml file")
    if not rows:
        raise ManifestError(f"{p}: the manifest lists no runs")
    return [_job(i, row, p) for i, row in enumerate(rows, start=1)]


def _csv_rows(p: Path) -> list[dict[str, Any]]:
    try:
        with open(p, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f, skipinitialspace=True)
            header = [h.strip() for h in reader.fieldnames or []]
            _check_columns(header, p, "column")
            rows = []
            for raw in reader:
                if None in raw:
                    raise ManifestError(f"{p}: line {reader.line_num} has more cells than the header")
                cells = {k.strip(): (v or "").strip() for k, v in raw.items()}
                if any(cells.values()):
                    rows.append({k: _csv_cell(k, v, p, reader.line_num) for k, v in cells.items() if v})
    except UnicodeDecodeError:
        raise ManifestError(f"{p}: not a text (UTF-8) CSV file") from None
    except csv.Error as e:
        raise ManifestError(f"{p}: not a valid CSV file ({e})") from None
    return rows


def _csv_cell(column: str, text: str, p: Path, line: int) -> Any:
    items = [s.strip() for s in text.split(";") if s.strip()]
    if column in ("configs", "masses", "weights", "options"):
        out: dict[str, Any] = {}
        for it in items:
            name, sep, value = (s.strip() for s in it.partition("="))
            if not sep or not name or not value:
                raise ManifestError(f"{p}: line {line}, {column}: '{it}' must look like NAME=VALUE")
            if column == "configs":
                out.setdefault(name, []).append(value)
            else:
                out[name] = _value(value)
        return out
    return items if column in ("logs", "roll_pitch", "yaw") else text


def _value(text: str) -> Any:
    """A CSV option value: true/false, none, an integer, a number, comma-separated numbers, else text."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    parts = text.split(",")
    try:
        nums = [int(x) if re.fullmatch(r"\s*[+-]?\d+\s*", x) else float(x) for x in parts]
    except ValueError:
        return text
    return nums[0] if len(nums) == 1 else tuple(nums)


#: What each manifest key holds (`_check_kinds`): text, text or a list of texts, or a table
#: (configs: of texts or lists of texts; masses, weights: of numbers; options: of values).
_KINDS = {
    **dict.fromkeys(("vehicle", "method", "airframe"), "text"),
    "date": "date",
    **dict.fromkeys(("logs", "roll_pitch", "yaw"), "texts"),
    "configs": "table of texts",
    **dict.fromkeys(("masses", "weights"), "table of numbers"),
    "options": "table",
}
#: Longest vehicle name in a manifest (characters), as `rotorid.vehicle.NAME_MAX`.
VEHICLE_NAME_MAX = 100


def _is_texts(v: object) -> bool:
    return isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def _kind_ok(kind: str, v: object) -> bool:
    if kind == "text":
        return isinstance(v, str)
    if kind == "date":
        return isinstance(v, str | dt.date | dt.datetime)
    if kind == "texts":
        return _is_texts(v)
    if not isinstance(v, dict):
        return False
    if kind == "table of texts":
        return all(_is_texts(x) for x in v.values())
    if kind == "table of numbers":
        return all(isinstance(x, int | float) and not isinstance(x, bool) for x in v.values())
    return True


def _check_kinds(row: dict[str, Any], p: Path, what: str) -> None:
    """A TOML manifest table's values against `_KINDS`: a one-line `ManifestError` naming the key."""
    for k, v in row.items():
        kind = _KINDS.get(k)
        if kind is not None and not _kind_ok(kind, v):
            raise ManifestError(f"{p}: {what}: '{k}' must be {kind}, got {quote(repr(v))}")


def _toml_rows(p: Path) -> list[dict[str, Any]]:
    from rotorid.util import read_text

    try:
        doc = tomllib.loads(read_text(p, "manifest"))
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{p}: not valid TOML ({quote(e, 200)})") from None
    except RecursionError:
        raise ManifestError(f"{p}: not a manifest (nested too deeply)") from None
    extra = sorted(set(doc) - {"defaults", "run"})
    if extra:
        raise ManifestError(f"{p}: unknown table(s) {', '.join(extra)}; a manifest has [defaults] and [[run]]")
    defaults = doc.get("defaults", {})
    runs = doc.get("run", [])
    if not isinstance(defaults, dict) or not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise ManifestError(f"{p}: write [defaults] as a table and each run as a [[run]] table")
    _check_columns(list(defaults), p, "key in [defaults]", required=False)
    _check_kinds(defaults, p, "[defaults]")
    rows = []
    for i, r in enumerate(runs, start=1):
        _check_columns([*defaults, *r], p, f"key in run {i}")
        _check_kinds(r, p, f"run {i}")
        rows.append({**defaults, **r, "options": {**defaults.get("options", {}), **r.get("options", {})}})
    return rows


def _check_columns(names: list[str], p: Path, what: str, required: bool = True) -> None:
    unknown = [n for n in names if n not in COLUMNS]
    if unknown:
        raise ManifestError(f"{p}: unknown {what} '{unknown[0]}'; use {', '.join(COLUMNS)}")
    missing = [n for n in REQUIRED if n not in names] if required else []
    if missing:
        raise ManifestError(f"{p}: missing {what} {', '.join(missing)} (needed: {', '.join(REQUIRED)})")


def _job(i: int, row: dict[str, Any], p: Path) -> Job:
    where = f"{p}: run {i}"
    missing = [k for k in REQUIRED if not row.get(k)]
    if missing:
        raise ManifestError(f"{where}: {', '.join(missing)} empty")
    if len(str(row["vehicle"])) > VEHICLE_NAME_MAX:
        raise ManifestError(f"{where}: vehicle name longer than {VEHICLE_NAME_MAX} characters")
    method = str(row["method"]).strip()
    known = methods()
    if method not in known:
        raise ManifestError(f"{where}: unknown method '{method}'; choose {', '.join(known)}")
    for key, only in _ONLY.items():
        if row.get(key) and method != only:
            raise ManifestError(f"{where}: '{key}' is for --method {only}, not {method}")
    base = p.parent

    def specs(key: str) -> tuple[str, ...]:
        v = row.get(key) or ()
        items = [v] if isinstance(v, str) else list(v)
        if not all(isinstance(s, str) for s in items):
            raise ManifestError(f"{where}: '{key}' must list log files (text)")
        return tuple(_resolve(s, base, where) for s in items)

    def numbers(key: str) -> dict[str, float]:
        try:
            return {str(k): float(v) for k, v in dict(row.get(key) or {}).items()}
        except (TypeError, ValueError):
            raise ManifestError(f"{where}: '{key}' must map configuration names to numbers") from None

    configs = {
        str(k): [_resolve(str(s), base, where) for s in ([v] if isinstance(v, str) else v)]
        for k, v in dict(row.get("configs") or {}).items()
    }
    options = normalize_options(method, dict(row.get("options") or {}), where)  # refused now, not after hours
    airframe = str(row["airframe"]).strip()
    if not _is_preset(airframe):
        airframe = str((base / airframe).resolve()) if not Path(airframe).is_absolute() else airframe
        if not Path(airframe).is_file():
            raise ManifestError(f"{where}: airframe '{row['airframe']}' is neither a preset nor an existing .toml file")
        _check_airframe(airframe, where)
    return Job(
        row=i,
        vehicle=str(row["vehicle"]).strip(),
        date=_date(row["date"], where),
        method=method,
        airframe=airframe,
        logs=specs("logs"),
        roll_pitch=specs("roll_pitch"),
        yaw=specs("yaw"),
        configs=configs,
        masses=numbers("masses"),
        weights=numbers("weights"),
        options=options,
    )


@functools.lru_cache(maxsize=64)
def _airframe_error(path: str) -> str | None:
    from rotorid.vehicle import Vehicle

    try:
        Vehicle.load(path)
    except RotoridError as e:
        return str(e)
    return None


def _check_airframe(path: str, where: str) -> None:
    """Read a vehicle file once per manifest (a broken one fails the manifest, not every row)."""
    error = _airframe_error(path)
    if error:
        raise ManifestError(f"{where}: {error}")


def _is_preset(name: str) -> bool:
    from rotorid.vehicle import PRESET_ALIASES, PRESETS

    return name in PRESETS or name in PRESET_ALIASES


def _resolve(spec: str, base: Path, where: str) -> str:
    """A log argument with its path made absolute against the manifest's folder (windows kept)."""
    from rotorid.io import parse_spec

    try:
        ls = parse_spec(spec.strip())
    except RotoridError as e:
        raise ManifestError(f"{where}: {e}") from None
    path = ls.path if ls.path.is_absolute() else (base / ls.path).resolve()
    return str(dataclasses.replace(ls, path=path))


def _date(value: Any, where: str) -> dt.datetime:
    """A manifest date (TOML date/date-time or ISO text) as a naive UTC datetime."""
    if isinstance(value, dt.datetime):
        d = value
    elif isinstance(value, dt.date):
        d = dt.datetime.combine(value, dt.time())
    else:
        try:
            d = dt.datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise ManifestError(f"{where}: date '{value}' is not an ISO date like 2026-03-14") from None
    return d.astimezone(dt.UTC).replace(tzinfo=None) if d.tzinfo else d


def _settings_class(method: str) -> type:
    return methods()[method].load("settings")


def normalize_options(method: str, options: Mapping[str, Any], where: str = "options") -> dict[str, Any]:
    """Options as the method's settings take them (lists -> tuples, a lone number for a tuple
    field -> a 1-tuple, an integer for a float field -> float), checked by building the
    settings: an unknown name or an invalid value raises `ManifestError` naming `where`."""
    cls = _settings_class(method)
    fields = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    bad = sorted(set(options) - set(fields))
    if bad:
        raise ManifestError(f"{where}: unknown {method} option(s) {', '.join(bad)}; allowed: {', '.join(fields)}")
    kw: dict[str, Any] = {}
    for k, v in options.items():
        if isinstance(v, list | tuple):
            v = tuple(v)
        elif fields[k].startswith("tuple") and isinstance(v, int | float | str) and not isinstance(v, bool):
            v = (v,)
        elif fields[k].startswith("float") and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        kw[k] = v
    try:
        cls(**kw)
    except RotoridError as e:
        raise ManifestError(f"{where}: {e}") from None
    except (TypeError, ValueError) as e:
        raise ManifestError(f"{where}: invalid {method} options ({e})") from None
    return kw


def settings_for(method: str, options: Mapping[str, Any]) -> Any:
    """The method's settings object from NAME=VALUE options (the settings dataclass's field
    names; everything not given keeps its default, the same default `rotorid identify` uses)."""
    return _settings_class(method)(**normalize_options(method, options))
