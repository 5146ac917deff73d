"""Log formats: one registry (`FORMATS`) for reading and writing.

`read(path)` picks a reader by magic bytes, then by suffix, and returns a list of `Flight`s (one
per continuous recording); `load("FILE@t0:t1,t2:t3", vehicle=...)` also applies windows and the
vehicle's hints; `write(flight, path)` writes the format of the suffix.

A format is a module with a reader decorated by `@register(name, suffixes, magic)`; a
module-level `write(flight, path) -> Path` beside it makes the format writable too. The
built-in formats are declared in `BUILTIN` with their reader as `"module:function"` (like
`rotorid.registry.MethodSpec`), so listing or detecting formats imports no reader (and no
numpy): a reader's module is imported when a file of its format is read; importing it registers
the same format again, now with the function. Plugin modules register through
`rotorid.registry.load_plugins()`.

Readers never estimate: they decode, convert to FLU/ENU and SI, and check what they read. What
they know of the log goes to `Flight.meta`: the commands' unit in `meta["units"]["cmd"]`, and
how long each motor sample holds after its stamp in `meta["motor_hold"]` (s, 0: point samples)
and each command in `meta["cmd_hold"]` where the format says it.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rotorid.errors import LogFormatError, RotoridError, WindowError
from rotorid.util import regular_file

if TYPE_CHECKING:
    from rotorid.flight import Flight
    from rotorid.vehicle import Vehicle

ReadFn = Callable[..., "list[Flight]"]
WriteFn = Callable[["Flight", Path], Path]


@dataclass(frozen=True)
class Format:
    """A log format: its name, file suffixes, magic bytes and reader `read(path, **options) ->
    list[Flight]`, given as the function or as its `"module:function"` path (imported by
    `reader()` on first use). `writes` declares whether the reader's module has a module-level
    `write(flight, path)` (None: look, which imports the module)."""

    name: str
    suffixes: tuple[str, ...]
    magic: bytes | None
    read: ReadFn | str
    writes: bool | None = None

    @property
    def module(self) -> str:
        """The reader's module."""
        return self.read.partition(":")[0] if isinstance(self.read, str) else self.read.__module__

    def reader(self) -> ReadFn:
        """The reader function (its module imported now)."""
        from rotorid.registry import resolve

        return resolve(self.read)

    @property
    def writable(self) -> bool:
        """Whether the format writes too (imports the module only when `writes` is not declared)."""
        return self.write is not None if self.writes is None else self.writes

    @property
    def write(self) -> WriteFn | None:
        """The module-level `write(flight, path)` of the reader's module, if it has one."""
        return getattr(importlib.import_module(self.module), "write", None)


#: The built-in formats, declared without importing their readers (tests/test_registry.py
#: checks each against what its module registers); the interchange format first.
BUILTIN = (
    Format("table", (".csv", ".parquet"), b"PAR1", "rotorid.io.table:read", writes=True),
    Format("crazyflie", (".bin", ""), b"\xbc", "rotorid.io.crazyflie:read", writes=False),
    Format("ulog", (".ulg", ".ulog"), b"ULog\x01\x12\x35", "rotorid.io.ulog:read", writes=True),
    Format("dataflash", (".bin",), b"\xa3\x95", "rotorid.io.dataflash:read", writes=True),
    Format("blackbox", (".bbl", ".bfl"), b"H Product:Blackb", "rotorid.io.blackbox:read", writes=False),
)

FORMATS: dict[str, Format] = {f.name: f for f in BUILTIN}


def register(name: str, suffixes: tuple[str, ...], magic: bytes | None = None) -> Callable[[ReadFn], ReadFn]:
    """Decorator: register `fn(path, **options) -> list[Flight]` as the reader of format `name`."""

    def deco(fn: ReadFn) -> ReadFn:
        FORMATS[name] = Format(name, suffixes, magic, fn)
        return fn

    return deco


def formats() -> dict[str, Format]:
    """Every registered format (built-in and plugins), by name."""
    from rotorid.registry import load_plugins

    load_plugins()
    return FORMATS


def detect(path: str | Path) -> Format:
    """The reader for `path`: by magic bytes first, then by suffix."""
    known_formats = formats()
    p = Path(path)
    try:
        regular_file(p, "log file")  # by stat: a FIFO, /dev/zero or /proc/self/mem is refused unread
        with open(p, "rb") as f:
            head = f.read(16)
    except RotoridError as e:
        raise LogFormatError(str(e)) from None
    except OSError as e:
        raise LogFormatError(f"{p}: cannot read this log file ({e.strerror})") from None
    if not head:
        raise LogFormatError(f"{p}: the file is empty")
    for r in known_formats.values():
        if r.magic and head.startswith(r.magic):
            return r
    for r in known_formats.values():
        if p.suffix.lower() in r.suffixes:
            return r
    known = ", ".join(
        f"{r.name} ({' '.join(x if x else 'no suffix' for x in r.suffixes) or 'by content'})"
        for r in known_formats.values()
    )
    raise LogFormatError(f"{p}: unknown log format (first bytes {head[:4].hex()}); rotorid reads {known}")


def read(path: str | Path, hints: dict[str, Any] | None = None, **options: Any) -> list[Flight]:
    """Decode a log file into flights (FLU/ENU, SI).

    `options` go to the reader; one it does not take is dropped when unset (False/None, e.g.
    `allow_corrupt=False` for a plugin reader without that option) and refused otherwise.
    `hints` are passed only to readers that take them, e.g. the vehicle's `motor_input` and
    `motors` count, which a PX4 log needs to scale its outputs while a Crazyflie log fixes them.
    """
    fmt = detect(path)
    reader = fmt.reader()
    params = inspect.signature(reader).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    accepted = set(options) | set(hints or {}) if takes_any else set(params)
    refused = [k for k, v in options.items() if k not in accepted and v not in (False, None)]
    if refused:
        raise RotoridError(f"{path}: the {fmt.name} reader does not take {', '.join(refused)}")
    given = {k: v for k, v in options.items() if k in accepted}
    extra = {k: v for k, v in (hints or {}).items() if k in accepted and k not in given}
    from rotorid.io.cache import cached_read

    return cached_read(Path(path), fmt.module, {**given, **extra}, lambda: reader(Path(path), **given, **extra))


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


def parse_spec(spec: str, join: bool = False) -> LogSpec:
    """Parse `FILE@t0:t1[,t2:t3...]` (times in seconds of the log's own clock). Overlapping
    windows would count their shared samples twice: refused, or with `join` sorted and joined."""
    path, sep, rest = str(spec).rpartition("@")
    if not sep or not rest or Path(spec).exists():  # no windows (a file name may hold an '@')
        return LogSpec(Path(spec))
    if ":" not in rest:
        raise WindowError(
            f"{spec}: window '{rest}' is not of the form t0:t1 (seconds): write e.g. {path}@35:65, "
            "several as FILE@t0:t1,t2:t3"
        )
    windows = []
    for part in rest.split(","):
        try:
            a, b = (float(x) for x in part.split(":"))
        except ValueError:
            raise WindowError(f"{spec}: window '{part}' is not of the form t0:t1 (seconds)") from None
        if not b > a:
            raise WindowError(f"{spec}: window '{part}' is empty (end must follow start)")
        windows.append((a, b))
    ordered = sorted(windows)
    for (a0, b0), (a1, b1) in itertools.pairwise(ordered):
        if a1 < b0 and not join:  # the shared samples would enter the fit twice and shrink σ by √2
            raise WindowError(
                f"{spec}: windows {a0:g}:{b0:g} and {a1:g}:{b1:g} overlap, so their samples would count twice; "
                f"give them once, e.g. {a0:g}:{max(b0, b1):g}"
            )
    if join:
        windows = []
        for a, b in ordered:
            if windows and a <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(b, windows[-1][1]))
            else:
                windows.append((a, b))
    return LogSpec(Path(path), tuple(windows))


def vehicle_hints(vehicle: Vehicle) -> dict[str, Any]:
    """What a reader may need from the vehicle: its rotor count and, unless it takes rotor
    speeds (which come from ESC rpm, never from a log's commands), its motor input kind."""
    hints: dict[str, Any] = {"motors": vehicle.n_rotors}
    if vehicle.motor_input != "rad_s":
        hints["motor_input"] = vehicle.motor_input
    return hints


def load(spec: str | LogSpec, vehicle: Vehicle | None = None, **options: Any) -> list[Flight]:
    """Read a log argument and cut its windows: one Flight per window (or per recording).

    With a `vehicle`, its hints reach the readers that take them (PX4 PWM scaling) and flights
    whose motor channels cannot mean what the vehicle declares are refused."""
    s = spec if isinstance(spec, LogSpec) else parse_spec(spec)
    if vehicle is None:
        flights = read(s.path, **options)
    else:
        hints = vehicle_hints(vehicle)
        flights = [check_motor_units(f, vehicle.motor_input) for f in read(s.path, hints=hints, **options)]
    return cut(flights, s)


def cut(flights: list[Flight], spec: LogSpec) -> list[Flight]:
    """The windows of `spec` cut from the flights `load(spec.path)` gave (all of them without
    windows): a caller that holds the whole log already cuts it without decoding it again."""
    import numpy as np

    from rotorid.flight import window_slack

    s = spec
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
        if t0 < first.t[0] - window_slack(first.rate) or t1 > last.t[-1] + window_slack(last.rate):
            raise WindowError(
                f"{s.path}: window {t0:g}:{t1:g} s lies outside the log ({first.t[0]:.2f}–{last.t[-1]:.2f} s); "
                f"run `rotorid info {s.path}`"
            )
        for f in inside:
            a, b = max(t0, float(f.t[0])), min(t1, float(f.t[-1]))
            if np.count_nonzero((f.t >= a) & (f.t <= b)) >= 2:
                out.append(f.window(a, b))
    return out


def write(flight: Flight, path: str | Path) -> Path:
    """Write a flight atomically in the format of the suffix (e.g. .csv/.parquet interchange,
    .ulg PX4 ULog with FRD/NED topics): the first registered format that has a writer for it."""
    p = Path(path)
    fmt = writable().get(p.suffix.lower())
    if fmt is None:
        raise LogFormatError(
            f"{p}: rotorid writes {', '.join(sorted(writable()))} files, not '{p.suffix or 'no suffix'}'"
        )
    return fmt.write(flight, p)


def write_pieces(pieces: Iterable[Flight], path: str | Path) -> Path:
    """`write` for a flight given as consecutive pieces (`rotorid.sim.simulator.Streamed`):
    appended as they come where the format's module can (`write_pieces`: CSV, Parquet), else
    joined and written whole."""
    from rotorid.flight import join

    p = Path(path)
    fmt = writable().get(p.suffix.lower())
    if fmt is None:
        return write(join(pieces), p)  # refused there, with the formats rotorid writes
    append = getattr(importlib.import_module(fmt.module), "write_pieces", None)
    return append(pieces, p) if append is not None else fmt.write(join(pieces), p)


def writable() -> dict[str, Format]:
    """Suffix -> the first registered format that writes it."""
    out: dict[str, Format] = {}
    for f in formats().values():
        if f.writable:
            for s in f.suffixes:
                if s:
                    out.setdefault(s, f)
    return out
