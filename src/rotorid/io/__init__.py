"""Log readers. `read(path)` picks a reader by magic bytes, then by suffix, and returns a list
of `Flight`s (one per continuous recording). `load("FILE@t0:t1,t2:t3")` also applies windows.

Readers never estimate: they decode, convert to FLU/ENU and SI, and check what they read.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rotorid.errors import LogFormatError, RotoridError, WindowError
from rotorid.flight import Flight

ReadFn = Callable[..., list[Flight]]


@dataclass(frozen=True)
class Reader:
    name: str
    suffixes: tuple[str, ...]
    magic: bytes | None
    read: ReadFn


READERS: dict[str, Reader] = {}


def register(name: str, suffixes: tuple[str, ...], magic: bytes | None = None) -> Callable[[ReadFn], ReadFn]:
    """Decorator: register `fn(path, **options) -> list[Flight]` as the reader `name`."""

    def deco(fn: ReadFn) -> ReadFn:
        READERS[name] = Reader(name, suffixes, magic, fn)
        return fn

    return deco


def _ensure_loaded() -> None:
    from rotorid.io import crazyflie  # noqa: F401  (registers itself)

    for mod in ("ulog", "table", "dataflash", "blackbox"):
        try:
            __import__(f"rotorid.io.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"rotorid.io.{mod}":
                raise


def detect(path: str | Path) -> Reader:
    """The reader for `path`: by magic bytes first, then by suffix."""
    _ensure_loaded()
    p = Path(path)
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        raise LogFormatError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise LogFormatError(f"{p}: is a folder, not a log file") from None
    if not head:
        raise LogFormatError(f"{p}: the file is empty")
    for r in READERS.values():
        if r.magic and head.startswith(r.magic):
            return r
    for r in READERS.values():
        if p.suffix.lower() in r.suffixes:
            return r
    known = ", ".join(
        f"{r.name} ({' '.join(x if x else 'no suffix' for x in r.suffixes) or 'by content'})" for r in READERS.values()
    )
    raise LogFormatError(f"{p}: unknown log format (first bytes {head[:4].hex()}); rotorid reads {known}")


def read(path: str | Path, hints: dict[str, Any] | None = None, **options: Any) -> list[Flight]:
    """Decode a log file into flights (FLU/ENU, SI).

    `options` go to the reader as given (an unknown one is an error); `hints` are passed only
    to readers that take them, e.g. the vehicle's `motor_input` and `motors` count, which a
    PX4 log needs to scale its outputs while a Crazyflie log fixes them itself.
    """
    reader = detect(path)
    accepted = inspect.signature(reader.read).parameters
    extra = {k: v for k, v in (hints or {}).items() if k in accepted and k not in options}
    return reader.read(Path(path), **options, **extra)


def check_motor_units(flight: Flight, motor_input: str) -> Flight:
    """Refuse a flight whose motor channels cannot mean what the vehicle declares: a vehicle
    whose motor input is rotor speed (rad/s) needs measured rotor speeds when the log's
    commands are normalized or PWM (a reader records their unit in `meta["units"]["cmd"]`)."""
    unit = str(flight.meta.get("units", {}).get("cmd", ""))
    if motor_input == "rad_s" and flight.rotor_speed is None and unit.startswith(("normalized", "pwm_us")):
        raise RotoridError(
            f"{flight.source}: the vehicle takes rotor speeds in rad/s, but this log has only {unit} motor "
            "commands and no measured rotor speed; log ESC rpm (PX4 esc_status) or use a vehicle whose "
            "motor_input is 'normalized'"
        )
    return flight


@dataclass(frozen=True)
class LogSpec:
    """A log argument `FILE@t0:t1[,t2:t3]`: a path and optional time windows (s)."""

    path: Path
    windows: tuple[tuple[float, float], ...] = ()

    def __str__(self) -> str:
        w = ",".join(f"{a:g}:{b:g}" for a, b in self.windows)
        return f"{self.path}@{w}" if w else str(self.path)


def parse_spec(spec: str) -> LogSpec:
    """Parse `FILE@t0:t1[,t2:t3...]` (times in seconds of the log's own clock)."""
    path, sep, rest = str(spec).rpartition("@")
    if not sep or not rest or ":" not in rest:
        return LogSpec(Path(spec))
    windows = []
    for part in rest.split(","):
        try:
            a, b = (float(x) for x in part.split(":"))
        except ValueError:
            raise WindowError(f"{spec}: window '{part}' is not of the form t0:t1 (seconds)") from None
        if not b > a:
            raise WindowError(f"{spec}: window '{part}' is empty (end must follow start)")
        windows.append((a, b))
    return LogSpec(Path(path), tuple(windows))


def load(spec: str | LogSpec, **options: Any) -> list[Flight]:
    """Read a log argument and cut its windows: one Flight per window (or per recording)."""
    s = spec if isinstance(spec, LogSpec) else parse_spec(spec)
    flights = read(s.path, **options)
    if not s.windows:
        return flights
    out = []
    for t0, t1 in s.windows:
        inside = [f for f in flights if f.t[0] <= t1 and f.t[-1] >= t0]
        if not inside:
            span = ", ".join(f"{f.t[0]:.2f}–{f.t[-1]:.2f}" for f in flights)
            raise WindowError(
                f"{s.path}: window {t0:g}:{t1:g} s lies outside the log (spans {span} s); run `rotorid info {s.path}`"
            )
        if len(flights) == 1:
            out.append(flights[0].window(t0, t1))
            continue
        # several pieces (a log split at gaps or bad samples): the window must lie inside the
        # log, and yields the part of each piece it covers
        first, last = flights[0], flights[-1]
        if t0 < first.t[0] - 0.5 / first.rate or t1 > last.t[-1] + 0.5 / last.rate:
            raise WindowError(
                f"{s.path}: window {t0:g}:{t1:g} s lies outside the log ({first.t[0]:.2f}–{last.t[-1]:.2f} s); "
                f"run `rotorid info {s.path}`"
            )
        for f in inside:
            a, b = max(t0, float(f.t[0])), min(t1, float(f.t[-1]))
            if np.count_nonzero((f.t >= a) & (f.t <= b)) >= 2:
                out.append(f.window(a, b))
    return out


WRITERS = {".csv": "table", ".parquet": "table", ".ulg": "ulog", ".bin": "dataflash"}


def write(flight: Flight, path: str | Path) -> Path:
    """Write a flight atomically in the format of the suffix: .csv/.parquet (interchange) or
    .ulg (PX4 ULog, FRD/NED topics) or .bin (ArduPilot DataFlash)."""
    p = Path(path)
    mod = WRITERS.get(p.suffix.lower())
    if mod is None:
        raise LogFormatError(f"{p}: rotorid writes {', '.join(WRITERS)} files, not '{p.suffix}'")
    module = importlib.import_module(f"rotorid.io.{mod}")
    return module.write(flight, p)
