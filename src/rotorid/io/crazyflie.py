"""Crazyflie uSD-card deck binary logs, versions 1 and 2 .

Decoded with numpy structured dtypes over the whole event stream: no Python loop per event.
A file with one event type is a fixed-size record array; several event types are located by
pointer doubling over the byte offsets (O(n log n), still vectorized).
"""

from __future__ import annotations

import itertools
import re
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


#: Firmware log variables rotorid reads (the Crazyflie firmware's log groups):
#: channel -> sources in order of preference, each (variable names, scale to SI). A motor
#: source is a pattern with `{i}` for the motor number 1..M. References: `acc`, `gyro`
#: (sensfusion/stabilizer, g and deg/s); `motor.m{i}` (power distribution, the requested ratio
#: 0..65535) and `pwm.m{i}_pwm` (motors.c, after battery compensation); `rpm.m{i}` (RPM deck,
#: deck/drivers/src/rpm.c, rev/min as uint16, set to 0 when no pulse arrived in time);
#: `pm.vbatMV` (mV) / `pm.vbat` (V) (pm_stm32f4.c); `stateEstimate.*` (stabilizer.c: world
#: position m, velocity m/s, body->world quaternion, scalar last in the names); `locSrv.*`
#: (crtp_localization_service.c: the external pose sent to the vehicle, e.g. motion capture).
SOURCES: dict[str, tuple[tuple[tuple[str, ...], float], ...]] = {
    "acc": ((("acc.x", "acc.y", "acc.z"), GRAVITY),),
    "gyro": ((("gyro.x", "gyro.y", "gyro.z"), np.pi / 180.0),),
    "cmd": ((("motor.m{i}",), 1.0 / 65536.0), (("pwm.m{i}_pwm",), 1.0 / 65536.0)),
    "rotor_speed": ((("rpm.m{i}",), 2.0 * np.pi / 60.0),),
    "vbat": ((("pm.vbatMV",), 1e-3), (("pm.vbat",), 1.0)),
    "pos": (
        (("locSrv.x", "locSrv.y", "locSrv.z"), 1.0),
        (("stateEstimate.x", "stateEstimate.y", "stateEstimate.z"), 1.0),
    ),
    "quat": (
        (("locSrv.qw", "locSrv.qx", "locSrv.qy", "locSrv.qz"), 1.0),
        (("stateEstimate.qw", "stateEstimate.qx", "stateEstimate.qy", "stateEstimate.qz"), 1.0),
    ),
    "vel": ((("stateEstimate.vx", "stateEstimate.vy", "stateEstimate.vz"), 1.0),),
}
#: Setpoint and controller groups: listed in `meta["setpoints"]` (rotorid fits no controller).
SETPOINT_PREFIXES = ("ctrltarget.", "controller.", "ctrl")
#: An RPM-deck sample reading below this fraction of the median of the vehicle's rotors, while
#: that median exceeds DROPOUT_SPINNING rev/min, is a drop-out (the deck reports 0 when no
#: pulse arrived in time), not a stopped rotor: rotors of a flying multirotor spin together.
DROPOUT_FRACTION = 0.2
DROPOUT_SPINNING = 1000.0


def _motor_names(ev: dict[str, np.ndarray], pattern: str) -> list[str]:
    """The variables of one event matching a motor pattern (`rpm.m{i}`), motors 1..M in order."""
    rx = re.compile("^" + re.escape(pattern).replace(r"\{i\}", r"([1-9][0-9]*)") + "$")
    found = sorted((int(m.group(1)), v) for v in ev if (m := rx.match(v)))
    return [v for _, v in found]


def _find(ev: dict[str, np.ndarray], channel: str) -> tuple[int, list[str], float] | None:
    """(preference rank, variable names, scale) of the best source of `channel` in one event."""
    for rank, (names, scale) in enumerate(SOURCES[channel]):
        if "{i}" in names[0]:
            found = _motor_names(ev, names[0])
            if found:
                return rank, found, scale
        elif all(v in ev for v in names):
            return rank, list(names), scale
    return None


def _rpm_dropouts(rpm: np.ndarray) -> np.ndarray:
    """Per sample: True where any rotor's RPM-deck reading is a drop-out (`DROPOUT_FRACTION`)."""
    med = np.median(rpm, axis=1)
    return np.any(rpm < DROPOUT_FRACTION * med[:, None], axis=1) & (med > DROPOUT_SPINNING)


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


def _sources(
    events: dict[str, dict[str, np.ndarray]], path: Path, allow_corrupt: bool
) -> tuple[dict[str, int], dict[str, tuple[int, int, str, list[str], float]], list[str]]:
    """Per event type the number of leading events with increasing stamps (types with fewer
    than 2 left out); per channel its best source over every event type, (preference rank,
    -samples, event, variable names, scale): the preferred source, then the most samples; the
    setpoint variables logged."""
    kept: dict[str, int] = {}
    best: dict[str, tuple[int, int, str, list[str], float]] = {}
    setpoints: list[str] = []
    for name, ev in events.items():
        n = _monotonic_prefix(ev["t"], name, path, allow_corrupt)
        if n < 2:
            continue
        kept[name] = n
        setpoints += [v for v in ev if v != "t" and v.startswith(SETPOINT_PREFIXES)]
        for ch in SOURCES:
            if (hit := _find(ev, ch)) is not None and (ch not in best or (hit[0], -n) < best[ch][:2]):
                best[ch] = (hit[0], -n, name, hit[1], hit[2])
    if not best:
        raise LogFormatError(f"{path}: no acc.*, gyro.*, motor.m*, pwm.m*_pwm or rpm.m* variables in any event type")
    return kept, best, setpoints


def _channels(
    events: dict[str, dict[str, np.ndarray]],
    kept: dict[str, int],
    best: dict[str, tuple[int, int, str, list[str], float]],
    path: Path,
) -> tuple[dict[str, Series], dict[str, np.ndarray]]:
    """Every channel in SI from its best source (`_sources`), as a `Series` on its event type's
    clock without the samples holding NaN/inf (warned) and, for rotor speeds, without the
    RPM-deck drop-outs (warned); and per channel the indices of the event samples kept."""
    series: dict[str, Series] = {}
    cut: dict[str, np.ndarray] = {}  # per channel: indices of the kept samples of its event type
    by_event: dict[str, list[str]] = {}
    for ch, (*_, ev_name, _names, _scale) in best.items():
        by_event.setdefault(ev_name, []).append(ch)
    for ev_name, chans in by_event.items():
        ev, n = events[ev_name], kept[ev_name]
        t = ev["t"][:n]
        found = {}
        for ch in chans:
            names, scale = best[ch][3], best[ch][4]
            found[ch] = np.column_stack([ev[v][:n] for v in names]) * scale
        ok = np.all(np.isfinite(np.column_stack(list(found.values()))), axis=1)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            warnings.warn(
                f"{path}: event {quote(ev_name)}: {bad.size} samples hold NaN/inf (first at t = {t[bad[0]]:.6f} s); "
                "dropped them and split the log there",
                stacklevel=3,
            )
        keep = np.arange(n) if ok.all() else np.flatnonzero(ok)
        t_kept = t if ok.all() else t[keep]  # one array per event type: channels sharing it share a clock
        for ch, v in found.items():
            v = v if ok.all() else v[keep]
            if ch == "rotor_speed" and (drop := _rpm_dropouts(v * 60.0 / (2.0 * np.pi))).any():
                warnings.warn(
                    f"{path}: event {quote(ev_name)}: {int(drop.sum())} RPM-deck samples read a rotor near 0 "
                    f"while the others spin (first at t = {t_kept[drop][0]:.6f} s): sensor drop-outs, removed "
                    "(short ones bridged, longer ones split the log)",
                    stacklevel=3,
                )
                series[ch] = Series(t_kept[~drop], v[~drop])
                cut[ch] = keep[~drop]
                continue
            if ch == "quat":
                v = v / np.linalg.norm(v, axis=1, keepdims=True)
            series[ch] = Series(t_kept, v)
            cut[ch] = keep
    return series, cut


@register("crazyflie", (".bin", ""), magic=MAGIC)
@guard.reader
def read(path: Path, allow_corrupt: bool = False, rate: float | None = None) -> list[Flight]:
    """A Crazyflie uSD log as Flights, from the firmware's own variables in any event type
    (`SOURCES`): acc g -> m/s^2 (9.80665), gyro deg/s -> rad/s, motor command `motor.m*` (else
    the PWM sent, `pwm.m*_pwm`) 0..65535 -> value/65536, RPM-deck `rpm.m*` rev/min -> rad/s,
    battery `pm.vbatMV` mV -> V (or `pm.vbat` V), position, velocity and attitude from the
    external pose `locSrv.*` where logged, else the on-board `stateEstimate.*` (quaternion
    reordered scalar first). Body axes are FLU, the world frame z up.

    RPM-deck drop-outs (a rotor reading ~0 while the others spin, `_rpm_dropouts`) are removed
    with a warning: short ones are bridged when the channels are put on one grid, longer ones
    split the log. Samples holding NaN/inf are dropped with a warning and the log is split there
    (one Flight per finite stretch). With several event types (or drop-outs) the channels are
    put on one grid by `rotorid.flight.align` (`rate` Hz, default the fastest).
    """
    path = Path(path)
    version, events = decode(path, allow_corrupt=allow_corrupt)
    if not any(len(ev["t"]) for ev in events.values()):
        raise LogFormatError(f"{path}: the log holds no events after its header")
    kept, best, setpoints = _sources(events, path, allow_corrupt)
    series, cut = _channels(events, kept, best, path)
    if "vbat" in series:
        series["vbat"] = Series(series["vbat"].t, series["vbat"].values[:, 0])
    cmd_var = best["cmd"][3][0] if "cmd" in best else ""
    meta = {
        "source": str(path),
        "format": f"crazyflie-v{version}",
        "units": {"cmd": f"normalized ({'PWM sent' if cmd_var.startswith('pwm.') else 'PWM'}/65536)"}
        if cmd_var
        else {},
        "topics": {ch: f"{b[2]}: {b[3][0]}{f' … {b[3][-1]}' if len(b[3]) > 1 else ''}" for ch, b in best.items()},
    }
    if setpoints:
        meta["setpoints"] = setpoints
    rates = {k: s.rate for k, s in series.items()}
    same_clock = len({id(s.t) for s in series.values()}) == 1
    if not same_clock:
        flight, _ = align(series, rate=rate, meta={**meta, "rates": rates})
        # a battery voltage logged slowly (pm at 1 Hz) is smooth, not a drop-out between its samples
        return flight.without(source_gaps({k: x for k, x in series.items() if k != "vbat"}))
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
