"""Crazyflie uSD-card deck binary logs, versions 1 and 2 (FORMATS.md).

Decoded with numpy structured dtypes over the whole event stream: no Python loop per event.
A file with one event type is a fixed-size record array; several event types are located by
pointer doubling over the byte offsets (O(n log n), still vectorized).
"""

from __future__ import annotations

import itertools
import struct
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rotorid.errors import LogFormatError, quote
from rotorid.flight import Flight, Series, align, source_gaps
from rotorid.frames import GRAVITY
from rotorid.io import guard, register

MAGIC = b"\xbc"
_TYPES = set("fIiHhBbdQqe?")


@dataclass(frozen=True)
class EventType:
    id: int
    name: str
    variables: tuple[str, ...]
    dtype: np.dtype  # the event's payload (variables only), packed


def parse_header(buf: bytes, path: Path) -> tuple[int, dict[int, EventType], int]:
    """Version, event types by id, and the offset where the events start."""
    if len(buf) < 5:
        raise LogFormatError(f"{path}: too short for a Crazyflie log header ({len(buf)} bytes)")
    if buf[0:1] != MAGIC:
        raise LogFormatError(f"{path}: wrong magic byte 0x{buf[0]:02x}, a Crazyflie uSD log starts with 0xBC")
    version, n_types = struct.unpack_from("<HH", buf, 1)
    if version not in (1, 2):
        raise LogFormatError(f"{path}: unknown Crazyflie log version {version} (rotorid reads 1 and 2)")
    off = 5
    types: dict[int, EventType] = {}

    def cstring(o: int) -> tuple[str, int]:
        end = buf.find(b"\x00", o)
        if end < 0:
            raise LogFormatError(f"{path}: header truncated at byte {o} (unterminated name)")
        return buf[o:end].decode("utf-8", errors="replace"), end + 1

    try:
        for _ in range(n_types):
            (eid,) = struct.unpack_from("<H", buf, off)
            name, off = cstring(off + 2)
            (nvar,) = struct.unpack_from("<H", buf, off)
            off += 2
            names, fields = [], []
            for _ in range(nvar):
                var, off = cstring(off)
                if len(var) < 4 or var[-3] != "(" or var[-1] != ")" or var[-2] not in _TYPES:
                    raise LogFormatError(
                        f"{path}: event {quote(name)} variable {quote(var)} has an unknown type (expected name(T), T a struct letter)"
                    )
                names.append(var[:-3])
                fields.append((var[:-3], "<" + var[-2]))
            if eid in types:
                raise LogFormatError(
                    f"{path}: event id {eid} is defined twice ({quote(types[eid].name)} and {quote(name)})"
                )
            if len(set(names)) != len(names):
                raise LogFormatError(
                    f"{path}: event {quote(name)} declares a variable twice ({quote(', '.join(names))})"
                )
            types[eid] = EventType(eid, name, tuple(names), np.dtype(fields))
    except struct.error:
        raise LogFormatError(f"{path}: header truncated at byte {off}") from None
    if not types:
        raise LogFormatError(f"{path}: the header declares no event types")
    return version, types, off


def _record_starts(body: np.ndarray, sizes: dict[int, int], path: Path, strict: bool) -> np.ndarray:
    """Start offsets of every event in `body`, for several event types of different sizes."""
    n = len(body)
    ids = np.full(n, 0xFFFFFFFF, dtype=np.int64)
    if n >= 2:
        ids[:-1] = body[:-1].astype(np.int64) | (body[1:].astype(np.int64) << 8)
    lut = np.zeros(65536, dtype=np.int64)
    for eid, size in sizes.items():
        lut[eid] = size
    size_at = np.where(ids <= 0xFFFF, lut[np.minimum(ids, 0xFFFF)], 0)
    # next record's offset; sentinels: n = clean end, n + 1 = undefined id, n + 2 = runs past the end
    end = np.arange(n) + size_at
    nxt = np.where(size_at == 0, n + 1, np.where(end > n, n + 2, end))
    ext = np.concatenate([nxt, [n, n + 1, n + 2]])  # the sentinels jump to themselves
    reach = np.zeros(n + 3, dtype=bool)
    reach[0] = True
    jump = ext
    # after pass k every record within 2^(k+1) - 1 hops of the first is marked
    for _ in range(int(np.ceil(np.log2(n / min(sizes.values()) + 2))) + 1):
        reach[jump[reach]] = True
        jump = jump[jump]
    if reach[n + 1]:
        bad = int(np.flatnonzero(reach[:n] & (size_at == 0))[0])
        if bad == n - 1:  # one stray byte: not even an event id
            reach[n + 1], reach[n + 2] = False, True
    if reach[n + 1]:
        if strict:
            raise LogFormatError(f"{path}: undefined event id {int(ids[bad])} at byte {bad} of the event stream")
        warnings.warn(f"{path}: undefined event id at byte {bad}; decoded the events before it", stacklevel=3)
    if reach[n + 2] and strict:
        raise LogFormatError(f"{path}: truncated mid-event at the end of the file")
    return np.flatnonzero(reach[:n] & (size_at > 0))  # defined records (a truncated last one included)


def decode(path: str | Path, allow_corrupt: bool = False) -> tuple[int, dict[str, dict[str, np.ndarray]]]:
    """Raw decode: version and {event name: {"t": seconds, variable: values}} (file units)."""
    path = Path(path)
    buf = path.read_bytes()
    if not buf:
        raise LogFormatError(f"{path}: the file is empty")
    version, types, off = parse_header(buf, path)
    if len(buf) < off + 4:
        raise LogFormatError(f"{path}: no events and no CRC after the header (truncated)")
    crc_ok = zlib.crc32(buf[:-4]) == struct.unpack("<I", buf[-4:])[0]
    if not crc_ok and not allow_corrupt:
        raise LogFormatError(
            f"{path}: CRC-32 mismatch: the file is corrupt or truncated; pass --allow-corrupt to decode the intact part"
        )
    if not crc_ok:
        warnings.warn(
            f"{path}: CRC-32 mismatch; decoded the structurally intact events (a truncated tail is dropped, "
            "values in the file may still be corrupt)",
            stacklevel=2,
        )
    body = (
        np.frombuffer(buf, dtype=np.uint8, count=len(buf) - off - 4, offset=off)
        if crc_ok
        else np.frombuffer(buf, dtype=np.uint8, offset=off)
    )
    ts_dt = "<u4" if version == 1 else "<u8"
    ts_scale = 1e-3 if version == 1 else 1e-6
    ts_size = np.dtype(ts_dt).itemsize
    out: dict[str, dict[str, np.ndarray]] = {}
    if len(types) == 1:
        (et,) = types.values()
        rec = np.dtype([("id", "<u2"), ("ts", ts_dt), *[(n, et.dtype.fields[n][0]) for n in et.variables]])
        nrec, rem = divmod(len(body), rec.itemsize)  # a partial last event is dropped
        if rem and crc_ok:
            msg = f"{path}: truncated mid-event ({rem} stray bytes after {nrec} events)"
            if not allow_corrupt:
                raise LogFormatError(msg)
            warnings.warn(f"{msg}; decoded the {nrec} whole events", stacklevel=2)
        arr = np.frombuffer(body[: nrec * rec.itemsize].tobytes(), dtype=rec)
        bad = np.flatnonzero(arr["id"] != et.id)
        if bad.size:
            msg = f"{path}: undefined event id {int(arr['id'][bad[0]])} at event {int(bad[0])}"
            if not allow_corrupt:
                raise LogFormatError(msg)
            warnings.warn(f"{msg}; decoded the events before it", stacklevel=2)
            arr = arr[: bad[0]]
        out[et.name] = _columns(arr, et.variables, ts_scale)
        return version, out
    sizes = {eid: 2 + ts_size + et.dtype.itemsize for eid, et in types.items()}
    starts = _record_starts(body, sizes, path, strict=crc_ok and not allow_corrupt)
    ids = body[starts].astype(np.int64) | (body[starts + 1].astype(np.int64) << 8)
    for eid, et in types.items():
        s = starts[ids == eid]
        s = s[s + sizes[eid] <= len(body)]
        rec = np.dtype([("id", "<u2"), ("ts", ts_dt), *[(n, et.dtype.fields[n][0]) for n in et.variables]])
        raw = body[s[:, None] + np.arange(rec.itemsize)].tobytes() if s.size else b""
        arr = np.frombuffer(raw, dtype=rec)
        out[et.name] = _columns(arr, et.variables, ts_scale)
    return version, out


def _columns(arr: np.ndarray, variables: tuple[str, ...], ts_scale: float) -> dict[str, np.ndarray]:
    """Decoded events as float64 columns: time stamps in s and every variable. A signalling
    NaN in a float field casts without numpy's warning: `read` drops non-finite samples and
    says so."""
    with np.errstate(invalid="ignore"):
        return {"t": arr["ts"].astype(np.float64) * ts_scale, **{n: arr[n].astype(np.float64) for n in variables}}


_CHANNELS = {
    "acc": (("acc.x", "acc.y", "acc.z"), GRAVITY),
    "gyro": (("gyro.x", "gyro.y", "gyro.z"), np.pi / 180.0),
}


def _monotonic_prefix(t: np.ndarray, name: str, path: Path, allow_corrupt: bool) -> int:
    """Number of leading events whose time stamps increase strictly; raise unless
    `allow_corrupt` when that is not all of them."""
    d = np.diff(t)
    bad = np.flatnonzero(d <= 0)
    if not bad.size:
        return len(t)
    i = int(bad[0])
    what = "repeat" if d[i] == 0 else "go backwards"
    msg = f"{path}: event {quote(name)}: time stamps {what} at event {i + 1} (t = {t[i]:.6f} s -> {t[i + 1]:.6f} s)"
    if not allow_corrupt:
        raise LogFormatError(
            f"{msg}; the file is corrupt or holds several recordings — pass --allow-corrupt to decode the events before it"
        )
    warnings.warn(f"{msg}; decoded the {i + 1} events before it", stacklevel=3)
    return i + 1


@register("crazyflie", (".bin", ""), magic=MAGIC)
@guard.reader
def read(path: Path, allow_corrupt: bool = False, rate: float | None = None) -> list[Flight]:
    """A Crazyflie uSD log as Flights: acc g -> m/s^2 (9.80665 on every axis), gyro
    deg/s -> rad/s, motor PWM 0..65535 -> normalized command value/65536. Body axes are FLU.

    Samples holding NaN/inf are dropped with a warning and the log is split there (one Flight
    per finite stretch), so windows around them stay usable. With several event types the
    channels are put on one grid by `rotorid.flight.align` (`rate` Hz, default the fastest).
    """
    path = Path(path)
    version, events = decode(path, allow_corrupt=allow_corrupt)
    if not any(len(ev["t"]) for ev in events.values()):
        raise LogFormatError(f"{path}: the log holds no events after its header")
    series: dict[str, Series] = {}
    cut: dict[str, np.ndarray] = {}  # per channel: indices of the kept samples of its event type
    for name, ev in events.items():
        n = _monotonic_prefix(ev["t"], name, path, allow_corrupt)
        t = ev["t"][:n]
        if n < 2:
            continue
        found: dict[str, np.ndarray] = {}
        for ch, (names, scale) in _CHANNELS.items():
            if all(v in ev for v in names):
                found[ch] = np.column_stack([ev[v][:n] for v in names]) * scale
        motors = sorted((v for v in ev if v.startswith("motor.m") and v[7:].isdigit()), key=lambda v: int(v[7:]))
        if motors:
            found["cmd"] = np.column_stack([ev[v][:n] for v in motors]) / 65536.0
        if not found:
            continue
        ok = np.all(np.isfinite(np.column_stack(list(found.values()))), axis=1)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            warnings.warn(
                f"{path}: event {quote(name)}: {bad.size} samples hold NaN/inf (first at t = {t[bad[0]]:.6f} s); "
                "dropped them and split the log there",
                stacklevel=2,
            )
        keep = np.arange(n) if ok.all() else np.flatnonzero(ok)
        t_kept = t if ok.all() else t[keep]  # one array per event type: channels sharing it share a clock
        for ch, v in found.items():
            series[ch] = Series(t_kept, v if ok.all() else v[keep])
            cut[ch] = keep
    if not series:
        raise LogFormatError(f"{path}: no acc.*, gyro.* or motor.m* variables in any event type")
    meta = {"source": str(path), "format": f"crazyflie-v{version}", "units": {"cmd": "normalized (PWM/65536)"}}
    rates = {k: s.rate for k, s in series.items()}
    same_clock = len({id(s.t) for s in series.values()}) == 1
    if not same_clock:
        flight, _ = align(series, rate=rate, meta={**meta, "rates": rates})
        return flight.without(source_gaps(series))
    s0 = next(iter(series.values()))
    keep = next(iter(cut.values()))
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(keep) > 1) + 1, [len(keep)]])
    return [
        Flight(
            t=s0.t[a:b],
            meta={**meta, "rates": rates, "piece": k} if len(bounds) > 2 else {**meta, "rates": rates},
            **{ch: s.values[a:b] for ch, s in series.items()},
        )
        for k, (a, b) in enumerate(itertools.pairwise(bounds))
        if b - a >= 2
    ]
