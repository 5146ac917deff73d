"""The guard between untrusted log bytes and a `Flight`: bounded work, wrapped library errors,
physically plausible channels. Every reader goes through it (a reader never
guesses silently); fuzzing (tests/test_fuzz_readers.py, benchmarks/fuzz.py) checks it holds.

API for reader authors (a new format needs only these):

``@register(name, suffixes, magic)`` then ``@guard.reader`` on ``read(path, ...)``
    After the read function returns, every Flight is checked by `check_flights`: per channel
    physical limits (`LIMITS`), rates within 1 Hz–100 kHz, time stamps not absurd; a value
    out of range is a `LogFormatError` naming file, channel, time and value; a channel held
    flat at its extreme (a saturated sensor) is a warning naming the span. Flights are then
    split at steps longer than `rotorid.flight.MAX_GAP` (0.5 s), with a warning.
``with guard.library(path, "pyulog", tell=f.tell, what="ULog"): ...``
    Around every call into a parsing library (pyulog, pymavlink, orangebox): any exception it
    raises that is not a `RotoridError` (ValueError, KeyError, OSError, RecursionError, ...)
    becomes a `LogFormatError` with the file, the offset `tell()` and the library's message
    (escaped and truncated); `MemoryError` becomes one saying which allocation the file asked
    for.
``guard.BoundedFile(path)``
    The file's bytes as a seekable binary file for a library, with budgets of read/seek
    calls and of bytes read proportional to the file size (`OPS_PER_BYTE`,
    `READ_PER_BYTE`), so a crafted length or a seek-back loop inside the library ends in a
    `LogFormatError` instead of a hang; seeking before the start is refused. `.offset` is the current position (for messages).
``guard.check_count(path, count, item_bytes, available, what)``
    Before allocating for a declared count (events, samples, fields): `count * item_bytes`
    must fit in the `available` bytes of the file, else `LogFormatError`.
``guard.check_alloc(path, nbytes, what)``
    Before a derived allocation (a grid, a table): at most `ALLOC_PER_BYTE` × the file size
    + `ALLOC_SLACK` bytes.

Nothing here looks at the wall clock: every bound is a count decided before the work.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rotorid.errors import LogFormatError, RotoridError, clip, quote
from rotorid.flight import MAX_GAP, Flight
from rotorid.frames import GRAVITY

#: A library may make this many read/seek calls per byte of the file (+ OPS_SLACK) before the
#: guard calls the file corrupt. A sound parser makes ~1 call per message (>= 3 bytes); a
#: resync that steps one byte at a time makes ~3 per byte.
OPS_PER_BYTE = 4
OPS_SLACK = 4096
#: ... and may read this many bytes per byte of the file (+ READ_SLACK): a sound parse reads
#: each byte about once; pyulog's resync re-reads up to 64 KiB per byte it steps over and, in
#: a loop, parses the same definitions again and again (fuzzing: 600-10 000x the file in 5 s).
READ_PER_BYTE = 8
READ_SLACK = 1 << 20
#: A reader may allocate at most this many bytes per byte of the file (+ ALLOC_SLACK):
#: float64 channels on a common grid cost ~10x the packed bytes they came from.
ALLOC_PER_BYTE = 64
ALLOC_SLACK = 64 << 20
#: Marker in the message of a LogFormatError raised for an allocation beyond the bounds.
OUT_OF_MEMORY = "asks for more memory than"


@dataclass(frozen=True)
class Limits:
    """Physical limits of a multirotor flight log (SI). Beyond them a value is not a
    measurement: the file is corrupt or in other units."""

    acc: float = 16.0 * GRAVITY  # m/s², the largest common accelerometer range (±16 g)
    gyro: float = 35.0  # rad/s, ≈ the ±2000 deg/s range of flight-controller gyros
    gyro_dot: float = 5.0e3  # rad/s²
    rotor_speed: float = 1.0e4  # rad/s (≈ 95 000 rpm)
    pwm_us: float = 3000.0  # µs
    pos: float = 1.0e5  # m from the local origin
    vel: float = 200.0  # m/s
    vbat: float = 100.0  # V, beyond any multirotor battery (a 24S pack is ~100 V full)
    quat_norm_tol: float = 0.05  # | |q| - 1 |
    rate_min: float = 1.0  # Hz
    rate_max: float = 1.0e5  # Hz
    time_max: float = 1.0e6  # s since boot / log start (11.6 days)
    saturation_run: int = 3  # samples held exactly at a column's extreme = saturated


LIMITS = Limits()


# -- bounds before allocation ------------------------------------------------------------------
def check_count(path: Path | str, count: int, item_bytes: int, available: int, what: str) -> int:
    """`count` items of `item_bytes` each must fit in `available` bytes of the file; returns
    `count`. Call before allocating for a count the file declares."""
    if count < 0 or count * max(int(item_bytes), 1) > max(int(available), 0):
        raise LogFormatError(
            f"{path}: {what}: the file declares {count} items of {item_bytes} bytes, more than the "
            f"{max(int(available), 0)} bytes left in it; the file is corrupt or truncated"
        )
    return count


def alloc_bound(size: int) -> int:
    """Bytes a reader may allocate for a file of `size` bytes."""
    return ALLOC_PER_BYTE * int(size) + ALLOC_SLACK


def check_alloc(path: Path | str, nbytes: float, what: str, size: int | None = None) -> None:
    """A derived allocation of `nbytes` must stay within `alloc_bound(file size)`."""
    size = Path(path).stat().st_size if size is None else size
    if not nbytes <= alloc_bound(size):
        raise LogFormatError(
            f"{path}: {what} {OUT_OF_MEMORY} a {size}-byte log can need ({nbytes / 2**20:.0f} MiB); "
            "its counts or time stamps are corrupt"
        )


class BoundedFile(io.BytesIO):
    """A file's bytes for a parsing library, with budgets of `OPS_PER_BYTE` read/seek calls
    and `READ_PER_BYTE` bytes read per byte of the file: a loop a crafted length keeps going
    ends in `LogFormatError`, not a hang."""

    def __init__(self, path: Path | str, data: bytes | None = None) -> None:
        self.path = Path(path)
        super().__init__(self.path.read_bytes() if data is None else data)
        self.size = len(self.getbuffer())
        self.ops_left = OPS_PER_BYTE * self.size + OPS_SLACK
        self.read_left = READ_PER_BYTE * self.size + READ_SLACK

    @property
    def offset(self) -> int:
        return self.tell() if not self.closed else -1

    def _spend(self, nbytes: int = 0) -> None:
        self.ops_left -= 1
        self.read_left -= nbytes
        if self.ops_left < 0 or self.read_left < 0:
            raise LogFormatError(
                f"{self.path}: the parser keeps re-reading the file near byte {self.tell()} "
                "(a corrupt length or a resync loop); the file is corrupt"
            )

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self._spend(len(data))
        return data

    def seek(self, pos: int, whence: int = 0, /) -> int:
        self._spend()
        target = pos if whence == 0 else self.tell() + pos if whence == 1 else self.size + pos
        if target < 0:
            raise LogFormatError(
                f"{self.path}: the parser sought to byte {target} from {self.tell()}; the file is corrupt"
            )
        return super().seek(pos, whence)


@contextlib.contextmanager
def library(path: Path | str, name: str, tell: Callable[[], int] | None = None, what: str = "log") -> Iterator[None]:
    """Turn every exception the parsing library `name` raises inside the block into a
    `LogFormatError` "not a readable `what` file" with the file, the offset (`tell()`, when
    given) and the library's message."""
    try:
        yield
    except RotoridError:
        raise
    except MemoryError:
        raise LogFormatError(
            f"{path}: {name} {OUT_OF_MEMORY} this machine has{_at(tell)}; the file is corrupt"
        ) from None
    except Exception as e:  # the library's own error types, and the ones it lets escape
        raise LogFormatError(
            f"{path}: not a readable {what} file ({name}{_at(tell)}: {type(e).__name__}: {quote(e)}); the file is corrupt"
        ) from None


def _at(tell: Callable[[], int] | None) -> str:
    if tell is None:
        return ""
    try:
        return f" at byte {int(tell())}"
    except (ValueError, OSError):  # a closed file
        return ""


# -- plausibility after decoding -------------------------------------------------------------
def _cmd_limits(flight: Flight, lim: Limits) -> tuple[float, float, str]:
    unit = str(flight.meta.get("units", {}).get("cmd", ""))
    if unit.startswith("normalized"):
        return 0.0, 1.0, "normalized commands"
    if unit.startswith("pwm"):
        return 0.0, lim.pwm_us, "PWM µs"
    if unit.startswith("rad"):
        return -lim.rotor_speed, lim.rotor_speed, "rad/s"
    # unit not declared (an interchange table): normalized or rad/s, as the vehicle says
    hi = 1.0 if float(np.max(flight.cmd)) <= 1.0 else lim.rotor_speed
    return (0.0 if hi == 1.0 else -lim.rotor_speed), hi, ("normalized commands" if hi == 1.0 else "rad/s")


def _bounds(flight: Flight, ch: str, lim: Limits) -> tuple[float, float, str, str] | None:
    """(low, high, unit, what else it could mean) for channel `ch`, or None if unchecked."""
    table: dict[str, tuple[float, str, str]] = {
        "acc": (lim.acc, "m/s²", f"beyond the ±{lim.acc / GRAVITY:g} g an accelerometer measures"),
        "gyro": (lim.gyro, "rad/s", f"beyond the ±{np.degrees(lim.gyro):.0f} deg/s a gyro measures (deg/s?)"),
        "gyro_dot": (lim.gyro_dot, "rad/s²", "not an angular acceleration a multirotor reaches"),
        "rotor_speed": (lim.rotor_speed, "rad/s", "not a rotor speed (rpm?)"),
        "pos": (lim.pos, "m", "not a position in a local frame"),
        "vel": (lim.vel, "m/s", "not a multirotor's velocity"),
    }
    if ch in table:
        hi, unit, why = table[ch]
        return -hi, hi, unit, why
    if ch == "vbat":
        return 0.0, lim.vbat, "V", f"not a battery voltage (0–{lim.vbat:g} V; mV?)"
    if ch == "cmd":
        lo, hi, unit = _cmd_limits(flight, lim)
        return lo, hi, unit, f"outside the {lo:g}…{hi:g} range of {unit}"
    return None


def _check_range(flight: Flight, ch: str, lim: Limits) -> None:
    b = _bounds(flight, ch, lim)
    if b is None:
        return
    lo, hi, unit, why = b
    v = getattr(flight, ch).reshape(len(flight.t), -1)
    tol = 1e-9 * max(abs(lo), abs(hi))
    bad = (v < lo - tol) | (v > hi + tol)
    if bad.any():
        i, j = (int(x[0]) for x in np.nonzero(bad))
        raise LogFormatError(
            f"{flight.source}: channel '{ch}' column {j} reads {v[i, j]:.6g} {unit} at t = {flight.t[i]:.3f} s, "
            f"{why}; the file is corrupt or scaled wrongly ({int(bad.any(axis=1).sum())} such samples)"
        )


def _check_quat(flight: Flight, lim: Limits) -> None:
    q = flight.quat
    huge = np.abs(q).max(axis=1) > 2.0  # no unit quaternion's component; its norm could overflow
    norm = np.linalg.norm(np.where(huge[:, None], 0.0, q), axis=1)
    bad = huge | (np.abs(norm - 1.0) > lim.quat_norm_tol)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = f"a component {q[i][np.argmax(np.abs(q[i]))]:.4g}" if huge[i] else f"norm {norm[i]:.4g}"
        raise LogFormatError(
            f"{flight.source}: channel 'quat' has {what} at t = {flight.t[i]:.3f} s, not a unit "
            f"quaternion ({int(bad.sum())} such samples); the attitude data are corrupt"
        )


def saturated_spans(t: np.ndarray, v: np.ndarray, floor: float, run: int) -> list[tuple[int, float, float, float]]:
    """Spans where a column sits exactly at its own extreme for >= `run` samples, with
    |extreme| >= `floor`: (column, value, t0, t1) — a sensor clipping at its range."""
    from rotorid.signal import runs

    out = []
    for j in range(v.shape[1]):  # columns, not samples
        col = v[:, j]
        for ext in {float(col.max()), float(col.min())}:
            if abs(ext) < floor:
                continue
            starts, ends = runs(col == ext)
            long = ends - starts >= run
            out += [(j, ext, float(t[a]), float(t[b - 1])) for a, b in zip(starts[long], ends[long], strict=True)]
    return out


def _warn_saturation(flight: Flight, lim: Limits) -> None:
    """Warn about saturated spans and list them, (t0, t1) s, in `meta["saturated"]` (the
    windows `rotorid.excitation.propose_windows` finds keep away from them)."""
    for ch, floor in (("acc", 2.0 * GRAVITY), ("gyro", 5.0)):
        v = getattr(flight, ch)
        if v is None:
            continue
        spans = saturated_spans(flight.t, v, floor, lim.saturation_run)
        if spans:
            flight.meta["saturated"] = sorted(
                {*map(tuple, flight.meta.get("saturated", [])), *((a, b) for *_, a, b in spans)}
            )
            listed = ", ".join(f"{ch}[{j}] = {x:.4g} at {a:.3f}–{b:.3f} s" for j, x, a, b in spans[:3])
            warnings.warn(
                f"{flight.source}: channel '{ch}' is held at its extreme in {len(spans)} span(s) ({listed}"
                f"{', …' if len(spans) > 3 else ''}): the sensor saturated, values there are clipped — "
                "keep those spans out of identification windows",
                stacklevel=4,
            )


def _check_time_and_rates(flight: Flight, lim: Limits) -> None:
    t_abs = float(max(abs(flight.t[0]), abs(flight.t[-1])))
    if t_abs > lim.time_max:
        raise LogFormatError(
            f"{flight.source}: time stamps reach {t_abs:.4g} s, beyond the {lim.time_max:g} s a log's clock "
            "can show; the time stamps are corrupt"
        )
    rates = {**dict.fromkeys(flight.channels, flight.rate), **flight.meta.get("rates", {})}
    topics = flight.meta.get("topics", {})
    for ch in flight.channels:
        r = float(rates.get(ch, flight.rate))
        if ch in ("landed", "vbat") or lim.rate_min <= r <= lim.rate_max:  # logged on change / slowly
            continue
        where = f" (topic {quote(topics[ch])})" if ch in topics else ""
        raise LogFormatError(
            f"{flight.source}: channel '{ch}'{where} is logged at {r:.4g} Hz, outside the "
            f"{lim.rate_min:g} Hz–{lim.rate_max:g} Hz a flight log holds; its time stamps are corrupt"
        )


def check_flight(flight: Flight, lim: Limits = LIMITS) -> Flight:
    """Raise `LogFormatError` if any channel of `flight` is physically impossible; warn about
    saturated spans. Returns `flight`."""
    _check_time_and_rates(flight, lim)
    for ch in flight.channels:
        if ch == "quat":
            _check_quat(flight, lim)
        else:
            _check_range(flight, ch, lim)
    _warn_saturation(flight, lim)
    return flight


def split_gaps(flight: Flight, max_gap: float = MAX_GAP) -> list[Flight]:
    """`flight` split at steps longer than `max_gap` s, with a warning listing them."""
    d = np.diff(flight.t)
    gaps = np.flatnonzero(d > max_gap)
    if not gaps.size:
        return [flight]
    listed = ", ".join(f"{flight.t[i]:.2f}–{flight.t[i + 1]:.2f} s" for i in gaps[:3])
    warnings.warn(
        f"{flight.source}: {gaps.size} gap(s) longer than {max_gap:g} s ({listed}{', …' if gaps.size > 3 else ''}); "
        "the log is split there",
        stacklevel=4,
    )
    return flight.split_at_gaps(max_gap)


def check_flights(flights: list[Flight], path: Path | str, lim: Limits = LIMITS) -> list[Flight]:
    """Every flight checked (`check_flight`) and split at gaps (`split_gaps`); a piece of a
    single sample (a reader's flight cut short after its first) is left out, with a warning."""
    if not flights:
        raise LogFormatError(f"{path}: no usable samples in the log")
    pieces = list(itertools.chain.from_iterable(split_gaps(check_flight(f, lim)) for f in flights))
    out = [f for f in pieces if len(f.t) >= 2]
    if not out:
        raise LogFormatError(f"{path}: no piece of the log holds two samples between gaps")
    if len(out) < len(pieces):
        listed = ", ".join(f"t = {f.t[0]:.3f} s" for f in pieces if len(f.t) < 2)
        warnings.warn(f"{path}: single samples between gaps left out ({clip(listed)})", stacklevel=3)
    return out


def reader(fn: Callable[..., list[Flight]]) -> Callable[..., list[Flight]]:
    """Decorator for a reader `read(path, ...) -> list[Flight]`: its flights go through
    `check_flights` (plausibility, gap splitting)."""

    @functools.wraps(fn)
    def read(path: Path | str, *args: Any, **kwargs: Any) -> list[Flight]:
        return check_flights(fn(Path(path), *args, **kwargs), path)

    return read
