"""PX4 ULog: a reader through pyulog (the PX4 project's own parser) and a writer of the
documented ULog binary format (https://docs.px4.io/main/en/dev_log/ulog_file_format).

The reader takes the topics of `TOPICS` in their order of preference, converts PX4's FRD
body / NED world to FLU / ENU and puts every channel on one grid with `rotorid.flight.align`.
Time is seconds since the log's header timestamp (its start); `meta["t0_us"]` keeps that
timestamp. `meta["topics"]`/`meta["rates"]` record where each channel came from and how fast
it was logged, and `meta["rate_hint"]` says how to log faster (used by `Flight.require_rate`).
A ULog has no checksum: a file cut short reads as its intact prefix (pyulog stops there).

The writer produces the same topics (FRD/NED, uint64 µs timestamps), so a simulated flight can
go through exactly the path a real PX4 log takes.
"""

from __future__ import annotations

import contextlib
import io
import struct
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from rotorid import frames
from rotorid.errors import LogFormatError, RotoridError, clip, quote
from rotorid.flight import Flight, Series, align, source_gaps, voltage_series
from rotorid.frames import frd_to_flu
from rotorid.io import guard, register
from rotorid.util import atomic_write

MAGIC = b"ULog\x01\x12\x35"
RPM_TO_RAD_S = 2.0 * np.pi / 60.0
#: SDLOG_PROFILE bits: 0 default set (1), 3 system identification (8), 4 high rate (16).
SDLOG_PROFILE_SYSID = 1 + 8 + 16
RATE_HINT = (
    "log it faster: set the PX4 parameter SDLOG_PROFILE to include the high-rate (bit 4) and "
    f"system-identification (bit 3) sets, e.g. SDLOG_PROFILE={SDLOG_PROFILE_SYSID}, so the logger records "
    "motor and IMU topics at >= 250 Hz; what to fly: docs/fly-px4.md"
)
TOPICS = (
    "vehicle_acceleration",
    "sensor_combined",
    "vehicle_angular_velocity",
    "actuator_motors",
    "actuator_outputs",
    "esc_status",
    "vehicle_attitude",
    "vehicle_local_position",
    "vehicle_land_detected",
    "battery_status",
)
_RELATIVE_TIMESTAMP_INVALID = 0x7FFFFFFF
#: info key in which rotorid's writer records the unit of the commands in actuator_motors
CMD_UNIT_INFO = "rotorid_cmd_unit"
_MOTOR_FUNCS = range(101, 113)  # PWM_MAIN_FUNCn values for "Motor 1..12"


# -- reading ---------------------------------------------------------------------------------
#: A data message holds at most 65535 bytes, so no logged type flattens to more fields.
_MAX_FIELDS = 0xFFFF
#: Time stamps (µs) beyond this are corrupt (2^62 µs ≈ 146 000 years): refused before int64 math.
_MAX_TIMESTAMP_US = 1 << 62


def _parse(path: Path) -> Any:
    """pyulog's parse of the topics rotorid reads, guarded: the definitions are checked first
    (`_check_formats`), the library runs on a `guard.BoundedFile` and its errors become
    LogFormatError with the offset."""
    from pyulog import ULog

    data = path.read_bytes()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # pyulog prints its warnings
        f = guard.BoundedFile(path, data)
        with guard.library(path, "pyulog", tell=lambda: f.offset, what="ULog"):
            header = ULog(f, parse_header_only=True)
        _check_formats(header.message_formats, path)
        f = guard.BoundedFile(path, data)
        with guard.library(path, "pyulog", tell=lambda: f.offset, what="ULog"):
            ulog = ULog(f, message_name_filter_list=list(TOPICS))
    for line in filter(None, (ln.strip() for ln in out.getvalue().splitlines()[:5])):
        warnings.warn(f"{path}: pyulog: {clip(line, 120)}", stacklevel=4)
    if getattr(ulog, "file_corruption", False):
        warnings.warn(f"{path}: the ULog file is corrupt (pyulog skipped damaged data); check the result", stacklevel=4)
    return ulog


def _check_formats(formats: dict[str, Any], path: Path) -> None:
    """Refuse definitions pyulog would expand without end: a type nesting itself, or one
    flattening to more fields than a message can hold (pyulog expands every subscribed type
    recursively, field by field)."""
    sizes: dict[str, int] = {}

    def flat(name: str, stack: tuple[str, ...]) -> int:
        if name in sizes:
            return sizes[name]
        if name in stack:
            raise LogFormatError(f"{path}: ULog type {quote(name)} contains itself; the definitions are corrupt")
        fmt = formats.get(name)
        n = 0
        for type_name, array_size, _ in fmt.fields if fmt is not None else ():
            inner = 1 if type_name not in formats else flat(type_name, (*stack, name))
            n += inner * max(array_size, 1)
            if n > _MAX_FIELDS:
                raise LogFormatError(
                    f"{path}: ULog type {quote(name)} flattens to more than {_MAX_FIELDS} fields; "
                    "the definitions are corrupt"
                )
        sizes[name] = n
        return n

    for name in formats:
        flat(name, ())


class _Topics:
    """The datasets of one parsed ULog by topic name (instance 0, else the lowest)."""

    def __init__(self, ulog: Any, path: Path) -> None:
        self.path = path
        self.t0 = int(ulog.start_timestamp)
        if self.t0 >= _MAX_TIMESTAMP_US:
            raise LogFormatError(f"{path}: the ULog header time stamp {self.t0} µs is corrupt")
        self.params: dict[str, Any] = dict(ulog.initial_parameters)
        self.info: dict[str, Any] = dict(ulog.msg_info_dict)
        self.data: dict[str, dict[str, np.ndarray]] = {}
        #: every instance of a topic with >= 2 samples, lowest multi_id first
        self.instances: dict[str, list[dict[str, np.ndarray]]] = {}
        for d in sorted(ulog.data_list, key=lambda d: d.multi_id):
            ts = d.data.get("timestamp")
            if ts is not None and len(ts) >= 2:
                self.data.setdefault(d.name, d.data)
                self.instances.setdefault(d.name, []).append(d.data)

    def get(self, topic: str) -> dict[str, np.ndarray] | None:
        return self.data.get(topic)

    def time(self, topic: str, relative: str | None = None, d: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Sample times in s since the log start: `timestamp_sample` if the topic has it, else
        `timestamp` (+ a `*_timestamp_relative` field when given); of instance `d` if given."""
        d = self.data[topic] if d is None else d
        ts = d["timestamp_sample"] if "timestamp_sample" in d else d["timestamp"]
        if np.any(ts >= _MAX_TIMESTAMP_US):
            raise LogFormatError(f"{self.path}: topic '{topic}' has corrupt time stamps (beyond 2^62 µs)")
        ts = ts.astype(np.int64)
        if relative is not None and relative in d:
            rel = d[relative].astype(np.int64)
            ts = ts + np.where(rel == _RELATIVE_TIMESTAMP_INVALID, 0, rel)
        return (ts - self.t0) * 1e-6

    def columns(self, topic: str, fields: list[str]) -> np.ndarray:
        d = self.data[topic]
        missing = [f for f in fields if f not in d]
        if missing:
            raise LogFormatError(f"{self.path}: topic '{topic}' lacks field(s) {quote(', '.join(missing))}")
        with np.errstate(invalid="ignore"):  # a signalling NaN in a float field: decided by `put`
            return np.column_stack([d[f].astype(np.float64) for f in fields])

    def param(self, *names: str) -> float | None:
        """The first of the named parameters that is in the log, as a finite float."""
        for n in names:
            if n in self.params:
                v = self.params[n]
                if not isinstance(v, int | float) or not np.isfinite(v):
                    raise LogFormatError(f"{self.path}: parameter {n} has the invalid value {quote(v)}")
                return float(v)
        return None


#: A time stamp this far (s) before the previous one is a restart of the clock (a reboot
#: inside the log), not a logger's reordering (milliseconds).
RESTART_S = 1.0


def _clean(t: np.ndarray, v: np.ndarray, notes: list[str], what: str, path: Path | str = "") -> Series:
    """Sort by time and drop duplicated time stamps (keeping the first), noting how many. A
    clock that restarts (a step back of more than `RESTART_S`: two recordings in one file)
    is a `LogFormatError`: merging the recordings by time would interleave two flights."""
    d = np.diff(t)
    if np.all(d > 0):
        return Series(t, v)
    back = np.flatnonzero(d < -RESTART_S)
    if back.size:
        i = int(back[0])
        raise LogFormatError(
            f"{path}: {what}: the time stamps restart at sample {i + 1} ({t[i]:.3f} s, then {t[i + 1]:.3f} s), "
            "as after a reboot: the file holds two recordings, which rotorid will not merge; split it there"
        )
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    keep = np.concatenate([[True], np.diff(t) > 0])
    notes.append(f"{what}: dropped {int((~keep).sum())} samples with repeated/out-of-order time stamps")
    return Series(t[keep], v[keep])


def _motor_columns(topics: _Topics, topic: str, prefix: str, motors: int | None, notes: list[str]) -> list[int]:
    d = topics.get(topic)
    assert d is not None
    n_fields = 0
    while f"{prefix}[{n_fields}]" in d:  # bounded by the fields the topic has
        n_fields += 1
    if motors is not None:
        if motors > n_fields:
            raise LogFormatError(f"{topics.path}: topic '{topic}' has {n_fields} outputs, fewer than motors={motors}")
        return list(range(motors))
    if topic == "actuator_motors":
        return [i for i in range(n_fields) if not np.all(np.isnan(d[f"{prefix}[{i}]"]))]
    funcs = {i: topics.param(f"PWM_MAIN_FUNC{i + 1}") or 0.0 for i in range(n_fields)}
    by_func = sorted((f, i) for i, f in funcs.items() if f in _MOTOR_FUNCS)
    if by_func:
        notes.append(f"{topic}: motors taken from PWM_MAIN_FUNCn (channels {[i + 1 for _, i in by_func]})")
        return [i for _, i in by_func]
    n_out = int(np.clip(np.max(d["noutputs"]), 0, n_fields)) if "noutputs" in d else n_fields
    cols = [i for i in range(n_out) if np.any(d[f"{prefix}[{i}]"] != 0)]
    notes.append(f"{topic}: no PWM_MAIN_FUNCn parameters; took the {len(cols)} non-zero outputs as motors")
    return cols


def _pwm_to_normalized(
    topics: _Topics, pwm: np.ndarray, cols: list[int], pwm_range: tuple[float, float] | None
) -> np.ndarray | None:
    """PWM µs -> normalized 0..1 with PWM_MAIN_MINn/MAXn (else PWM_MIN/PWM_MAX, else the
    user's `pwm_range`); None if no range is known. Values below the minimum (disarmed) -> 0."""
    lo, hi = np.empty(len(cols)), np.empty(len(cols))
    for j, i in enumerate(cols):
        mn = topics.param(f"PWM_MAIN_MIN{i + 1}", "PWM_MIN")
        mx = topics.param(f"PWM_MAIN_MAX{i + 1}", "PWM_MAX")
        if pwm_range is not None:
            mn, mx = pwm_range
        if mn is None or mx is None:
            return None
        if not mx > mn:
            raise LogFormatError(f"{topics.path}: PWM range of output {i + 1} is empty ({mn:g}..{mx:g} µs)")
        lo[j], hi[j] = mn, mx
    return np.clip((pwm - lo) / (hi - lo), 0.0, 1.0)


class _Channels:
    """Channels gathered from topics: series by channel, their source topic, units, notes."""

    def __init__(self, topics: _Topics) -> None:
        self.topics = topics
        self.series: dict[str, Series] = {}
        self.source: dict[str, str] = {}
        self.units: dict[str, str] = {}
        self.notes: list[str] = []

    def put(self, ch: str, topic: str, t: np.ndarray, v: np.ndarray) -> None:
        """Add channel `ch` from `topic`; samples holding NaN/inf are dropped with a warning
        (the grid then bridges them, or splits the log where they leave a gap)."""
        ok = np.all(np.isfinite(v.reshape(len(v), -1)), axis=1)
        if not ok.all():
            warnings.warn(
                f"{self.topics.path}: {topic}: {int((~ok).sum())} samples of '{ch}' hold NaN/inf "
                f"(first at t = {t[~ok][0]:.3f} s); dropped them",
                stacklevel=4,
            )
            t, v = t[ok], v[ok]
        if len(t) < 2:
            self.notes.append(f"{topic} -> {ch}: fewer than 2 finite samples; not read")
            return
        self.series[ch] = _clean(t, v, self.notes, f"{topic} -> {ch}", self.topics.path)
        self.source[ch] = topic


_XYZ = [f"xyz[{i}]" for i in range(3)]


def _read_imu(c: _Channels) -> None:
    """Specific force and angular rate (and PX4's angular acceleration), FRD -> FLU."""
    tp = c.topics
    if tp.get("vehicle_acceleration"):
        c.put(
            "acc",
            "vehicle_acceleration",
            tp.time("vehicle_acceleration"),
            frd_to_flu(tp.columns("vehicle_acceleration", _XYZ)),
        )
    elif tp.get("sensor_combined"):
        acc = tp.columns("sensor_combined", [f"accelerometer_m_s2[{i}]" for i in range(3)])
        t = tp.time("sensor_combined", "accelerometer_timestamp_relative")
        c.put("acc", "sensor_combined", t, frd_to_flu(acc))
    if tp.get("vehicle_angular_velocity"):
        t = tp.time("vehicle_angular_velocity")
        c.put("gyro", "vehicle_angular_velocity", t, frd_to_flu(tp.columns("vehicle_angular_velocity", _XYZ)))
        if "xyz_derivative[0]" in tp.get("vehicle_angular_velocity"):
            wd = tp.columns("vehicle_angular_velocity", [f"xyz_derivative[{i}]" for i in range(3)])
            if np.all(np.isfinite(wd)):
                c.put("gyro_dot", "vehicle_angular_velocity", t, frd_to_flu(wd))
            else:
                c.notes.append("vehicle_angular_velocity.xyz_derivative has NaN/inf: gyro_dot not read")
    elif tp.get("sensor_combined"):
        gyro = tp.columns("sensor_combined", [f"gyro_rad[{i}]" for i in range(3)])
        c.put("gyro", "sensor_combined", tp.time("sensor_combined"), frd_to_flu(gyro))


def _read_motors(
    c: _Channels, motors: int | None, motor_input: str, pwm_range: tuple[float, float] | None, path: Path
) -> int | None:
    """Motor commands (normalized, or PWM µs) and measured rotor speeds; the motor count."""
    tp = c.topics
    if motor_input not in ("normalized", "pwm_us"):
        raise RotoridError(f"{path}: motor_input must be 'normalized' or 'pwm_us' for a ULog, got {motor_input!r}")
    n_motors = motors
    topic = "actuator_motors" if tp.get("actuator_motors") and motor_input == "normalized" else "actuator_outputs"
    if tp.get(topic):
        prefix = "control" if topic == "actuator_motors" else "output"
        cols = _motor_columns(tp, topic, prefix, motors, c.notes)
        if cols:
            u = tp.columns(topic, [f"{prefix}[{i}]" for i in cols])
            if topic == "actuator_motors":
                if np.isnan(u).any():
                    c.notes.append("actuator_motors: NaN (PX4's 'motor stopped') read as 0")
                c.put("cmd", topic, tp.time(topic), np.nan_to_num(u, nan=0.0))
                c.units["cmd"] = clip(tp.info.get(CMD_UNIT_INFO, "normalized"))
            else:
                _put_pwm(c, u, cols, motor_input, pwm_range, path)
            n_motors = len(cols)
        else:
            c.notes.append(f"{topic}: no output holds motor data; no motor commands read")
    d = tp.get("esc_status")
    if d:
        n_esc = int(np.clip(np.max(d["esc_count"]), 0, 255)) if "esc_count" in d else 0
        n = min(n_esc, n_motors) if n_motors else n_esc
        if n > 0:
            rpm = tp.columns("esc_status", [f"esc[{i}].esc_rpm" for i in range(n)])
            c.put("rotor_speed", "esc_status", tp.time("esc_status"), rpm * RPM_TO_RAD_S)
            c.units["rotor_speed"] = "rad/s (from esc_rpm)"
    return n_motors


def _put_pwm(
    c: _Channels, pwm: np.ndarray, cols: list[int], motor_input: str, pwm_range: tuple[float, float] | None, path: Path
) -> None:
    """actuator_outputs (PWM µs) as commands: normalized by the PWM range when known and
    wanted, else raw µs (with a warning when normalized ones were wanted)."""
    u = _pwm_to_normalized(c.topics, pwm, cols, pwm_range) if motor_input == "normalized" else None
    if u is None:
        if motor_input == "normalized":
            warnings.warn(
                f"{path}: actuator_outputs are PWM µs and the log has no PWM_MAIN_MIN/MAX (or PWM_MIN/MAX) "
                "parameters; kept raw µs — give the range (pwm_range) to get normalized commands",
                stacklevel=5,
            )
        u, c.units["cmd"] = pwm, "pwm_us"
    else:
        c.units["cmd"] = "normalized"
    c.put("cmd", "actuator_outputs", c.topics.time("actuator_outputs"), u)


def _read_state(c: _Channels, path: Path) -> None:
    """Attitude (NED/FRD -> ENU/FLU; samples that are no rotation are dropped, with a
    warning), local position and velocity."""
    tp = c.topics
    if tp.get("vehicle_attitude"):
        q = tp.columns("vehicle_attitude", [f"q[{i}]" for i in range(4)])
        t = tp.time("vehicle_attitude")
        ok = frames.valid_quat(q)
        if not ok.all():
            warnings.warn(
                f"{path}: vehicle_attitude: {int((~ok).sum())} samples are no rotation (zero or NaN quaternion, "
                f"first at t = {t[~ok][0]:.3f} s); dropped them",
                stacklevel=4,
            )
        if ok.sum() >= 2:
            c.put("quat", "vehicle_attitude", t[ok], frames.quat_ned_frd_to_enu_flu(q[ok]))
    if tp.get("vehicle_local_position"):
        t = tp.time("vehicle_local_position")
        c.put(
            "pos", "vehicle_local_position", t, frames.ned_to_enu(tp.columns("vehicle_local_position", ["x", "y", "z"]))
        )
        vel = tp.columns("vehicle_local_position", ["vx", "vy", "vz"])
        c.put("vel", "vehicle_local_position", t, frames.ned_to_enu(vel))


#: battery_status fields holding the pack voltage (V), in order of preference: the reading itself
#: (what the motors see, sag included), else the filtered one that older PX4 versions also log
_VOLTAGE_FIELDS = ("voltage_v", "voltage_filtered_v")


def _read_battery(c: _Channels) -> None:
    """Battery voltage (V) from `battery_status`: the first instance (lowest multi_id) that
    reports one, others named in the notes; held over the other channels' span
    (`voltage_series`): the topic is logged at ~1-10 Hz and must not crop the flight."""
    found = []
    for d in c.topics.instances.get("battery_status", []):
        field = next((f for f in _VOLTAGE_FIELDS if f in d), None)
        if field is not None and np.any(d[field] > 0):
            found.append((d, field))
    if not found:
        return
    (d, field), what = found[0], f"battery_status.{found[0][1]}"
    if len(found) > 1:
        c.notes.append(f"battery_status: {len(found)} batteries report a voltage; read the first (instance 0)")
    others = {ch: s for ch, s in c.series.items() if ch != "landed"}
    s = voltage_series(c.topics.time("battery_status", d=d), d[field].astype(np.float64), what, c.notes, others)
    if s is not None:
        c.series["vbat"], c.source["vbat"], c.units["vbat"] = s, "battery_status", f"V ({what})"


def _read_landed(c: _Channels) -> None:
    """The land detector publishes on change: its last state holds to the end of the log."""
    tp = c.topics
    if tp.get("vehicle_land_detected"):
        ld = tp.columns("vehicle_land_detected", ["landed"])[:, 0] > 0
        t = tp.time("vehicle_land_detected")
        end = max(float(s.t[-1]) for s in c.series.values())
        if t[-1] < end:
            t, ld = np.append(t, end), np.append(ld, ld[-1])
        c.put("landed", "vehicle_land_detected", t, ld)


@register("ulog", (".ulg", ".ulog"), magic=MAGIC)
@guard.reader
def read(
    path: Path,
    motors: int | None = None,
    motor_input: str = "normalized",
    pwm_range: tuple[float, float] | None = None,
    rate: float | None = None,
    allow_corrupt: bool = False,
) -> list[Flight]:
    """A PX4 ULog as Flights (FLU/ENU, SI) on the grid of its fastest channel, split at
    logging drop-outs (`rotorid.flight.source_gaps`) instead of interpolated across them.

    `motors` fixes the number of motor outputs (default: from the log); `motor_input` is
    "normalized" (PWM outputs scaled by the PWM_MAIN_MIN/MAX parameters or `pwm_range`) or
    "pwm_us" (raw µs). `allow_corrupt` is accepted for a uniform reader interface; pyulog
    always skips damaged data, with a warning.
    """
    c = _Channels(_Topics(_parse(path), path))
    _read_imu(c)
    _read_motors(c, motors, motor_input, pwm_range, path)
    _read_state(c, path)
    if not c.series:
        raise LogFormatError(
            f"{path}: none of the topics rotorid reads is in this ULog ({', '.join(TOPICS[:-1])}); "
            "check the logger's SDLOG_PROFILE"
        )
    _read_battery(c)
    _read_landed(c)
    meta: dict[str, Any] = {
        "source": str(path),
        "format": "ulog",
        "t0_us": c.topics.t0,
        "topics": c.source,
        "rates": {ch: s.rate for ch, s in c.series.items()},
        "rate_hint": RATE_HINT,
        "units": c.units,
        "notes": c.notes,
    }
    # landed's long intervals and a battery monitor's slow samples are no gaps
    fast = {ch: s for ch, s in c.series.items() if ch not in ("landed", "vbat")}
    flight, _ = align(c.series, rate=rate or max(s.rate for s in fast.values()), meta=meta)
    gaps = source_gaps(fast)
    flight.meta["align"]["gaps"] = gaps
    if gaps:
        warnings.warn(
            f"{path}: {len(gaps)} logging drop-out(s) ({', '.join(f'{a:.2f}–{b:.2f} s' for a, b in gaps[:3])}"
            f"{', …' if len(gaps) > 3 else ''}); the log is split there instead of interpolated",
            stacklevel=3,
        )
    return flight.without(gaps)


# -- writing ---------------------------------------------------------------------------------
_FLAG_BITS = b"B"
_FORMAT, _INFO, _PARAM, _ADD, _DATA = b"F", b"I", b"P", b"A", b"D"


def _msg(kind: bytes, payload: bytes) -> bytes:
    return struct.pack("<HB", len(payload), kind[0]) + payload


def _kv(type_: str, key: str, value: bytes) -> bytes:
    k = f"{type_} {key}".encode()
    return struct.pack("<B", len(k)) + k + value


#: A topic's fields: (ulog type, field name, values (N,) or (N, k)).
Fields = list[tuple[str, str, np.ndarray]]


def _topic_specs(flight: Flight, motors_max: int, pwm: tuple[float, float] | None) -> list[tuple[str, Fields]]:
    """(topic, [(ulog type, field name, values (N,) or (N, k))]) in PX4 conventions (FRD/NED)."""
    specs: list[tuple[str, Fields]] = []
    if flight.acc is not None:
        specs.append(("vehicle_acceleration", [("float[3]", "xyz", frames.flu_to_frd(flight.acc))]))
    if flight.gyro is not None:
        fields = [("float[3]", "xyz", frames.flu_to_frd(flight.gyro))]
        if flight.gyro_dot is not None:
            fields.append(("float[3]", "xyz_derivative", frames.flu_to_frd(flight.gyro_dot)))
        specs.append(("vehicle_angular_velocity", fields))
    if flight.cmd is not None:
        m = flight.cmd.shape[1]
        if m > motors_max:
            raise RotoridError(f"{flight.source}: {m} motors; PX4's actuator_motors holds at most {motors_max}")
        if pwm is None:
            u = np.full((len(flight.t), motors_max), np.nan)
            u[:, :m] = flight.cmd
            specs.append(("actuator_motors", [(f"float[{motors_max}]", "control", u)]))
        else:  # an older PX4: PWM outputs only (16 channels, unused ones 0)
            out = np.zeros((len(flight.t), 16))
            out[:, :m] = pwm[0] + flight.cmd * (pwm[1] - pwm[0])
            noutputs = np.full(len(flight.t), 16)
            specs.append(("actuator_outputs", [("uint32_t", "noutputs", noutputs), ("float[16]", "output", out)]))
    if flight.rotor_speed is not None:
        rpm = np.rint(flight.rotor_speed / RPM_TO_RAD_S)
        specs.append(
            (
                "esc_status",
                [
                    ("uint8_t", "esc_count", np.full(len(flight.t), flight.rotor_speed.shape[1])),
                    (f"esc_report[{flight.rotor_speed.shape[1]}]", "esc", rpm),
                ],
            )
        )
    if flight.quat is not None:
        specs.append(("vehicle_attitude", [("float[4]", "q", frames.quat_enu_flu_to_ned_frd(flight.quat))]))
    if flight.pos is not None or flight.vel is not None:
        zeros = np.zeros((len(flight.t), 3))
        pos = frames.enu_to_ned(flight.pos) if flight.pos is not None else zeros
        vel = frames.enu_to_ned(flight.vel) if flight.vel is not None else zeros
        fields = [("float", n, pos[:, i]) for i, n in enumerate("xyz")]
        fields += [("float", n, vel[:, i]) for i, n in enumerate(("vx", "vy", "vz"))]
        specs.append(("vehicle_local_position", fields))
    if flight.landed is not None:
        specs.append(("vehicle_land_detected", [("bool", "landed", flight.landed.astype(np.uint8))]))
    if flight.vbat is not None:
        specs.append(
            (
                "battery_status",
                [("float", "voltage_v", flight.vbat), ("bool", "connected", np.ones(len(flight.t), np.uint8))],
            )
        )
    return specs


_NP = {"float": "<f4", "bool": "u1", "uint8_t": "u1", "int32_t": "<i4", "uint32_t": "<u4"}


def write(
    flight: Flight,
    path: str | Path,
    rates: dict[str, float] | None = None,
    t0_us: int = 20_000_000,
    params: dict[str, int | float] | None = None,
    pwm: tuple[float, float] | None = None,
    pwm_params: bool = True,
) -> Path:
    """Write `flight` as a ULog with the topics the reader prefers, in FRD/NED, atomically.

    Every topic carries `timestamp` and `timestamp_sample` (uint64 µs) = `t0_us` + t·10⁶
    rounded to the µs; the header timestamp is `t0_us`, so reading back gives t. `rates`
    optionally decimates topics ({"vehicle_attitude": 100, ...}; default: every sample).
    Rotor speed goes to `esc_status.esc[i].esc_rpm` as int32 rpm (PX4's type, ±0.05 rad/s), the
    battery voltage to `battery_status.voltage_v`.
    `params` are written as ULog parameters (ints as int32, floats as float).

    With `pwm=(min_us, max_us)` the (normalized) commands go to `actuator_outputs` as PWM µs
    instead, as an older PX4 logs them, with PWM_MAIN_MINn/MAXn/FUNCn parameters unless
    `pwm_params` is False.
    """
    path = Path(path)
    t_us = np.rint(flight.t * 1e6).astype(np.int64) + int(t0_us)
    if t_us[0] < t0_us:
        raise RotoridError(
            f"{flight.source}: ULog time stamps cannot precede the log start (t starts at {flight.t[0]:g} s)"
        )
    motors_max = 12
    specs = _topic_specs(flight, motors_max, pwm)
    if not specs:
        raise RotoridError(f"{flight.source}: the flight has no channel a ULog topic can hold")
    head = MAGIC + b"\x01" + struct.pack("<Q", int(t0_us))
    defs = _definitions(flight, specs, params, pwm if pwm_params else None)
    records = []  # per topic: (timestamps, packed D-message rows)
    for msg_id, (topic, fields) in enumerate(specs):
        fmt = f"{topic}:uint64_t timestamp;uint64_t timestamp_sample;" + "".join(f"{ty} {nm};" for ty, nm, _ in fields)
        defs.append(_msg(_FORMAT, fmt.encode()))
        keep = np.arange(len(t_us))
        if rates and topic in rates:
            keep = keep[:: max(1, round(flight.rate / rates[topic]))]
        records.append((t_us[keep], _data_rows(msg_id, fields, t_us, keep)))
    adds = [_msg(_ADD, struct.pack("<BH", 0, i) + topic.encode()) for i, (topic, _) in enumerate(specs)]
    blob = head + b"".join(defs) + b"".join(adds) + _interleave(records)
    atomic_write(path, lambda p: p.write_bytes(blob))
    return path


def _definitions(
    flight: Flight,
    specs: list[tuple[str, Fields]],
    params: dict[str, int | float] | None,
    pwm: tuple[float, float] | None,
) -> list[bytes]:
    """Flag bits, info (the commands' unit), parameters (PWM_MAIN_* for `pwm`) and the nested
    esc_report format, as ULog messages."""
    defs = [_msg(_FLAG_BITS, bytes(16) + struct.pack("<3Q", 0, 0, 0))]
    info = {"sys_name": "rotorid", "ver_hw": "SITL", "sys_os_name": "rotorid-writer"}
    if flight.cmd is not None:  # actuator_motors is normalized in PX4; say so if these are not
        info[CMD_UNIT_INFO] = str(flight.meta.get("units", {}).get("cmd", "normalized"))
    defs += [_msg(_INFO, _kv(f"char[{len(v)}]", k, v.encode())) for k, v in info.items()]
    all_params: dict[str, int | float] = {"SDLOG_PROFILE": SDLOG_PROFILE_SYSID}
    if pwm is not None and flight.cmd is not None:
        for i in range(1, flight.cmd.shape[1] + 1):
            all_params.update(
                {f"PWM_MAIN_MIN{i}": int(pwm[0]), f"PWM_MAIN_MAX{i}": int(pwm[1]), f"PWM_MAIN_FUNC{i}": 100 + i}
            )
    all_params.update(params or {})
    for k, v in all_params.items():
        if isinstance(v, bool | int | np.integer):
            defs.append(_msg(_PARAM, _kv("int32_t", k, struct.pack("<i", int(v)))))
        else:
            defs.append(_msg(_PARAM, _kv("float", k, struct.pack("<f", float(v)))))
    if any(topic == "esc_status" for topic, _ in specs):
        defs.append(_msg(_FORMAT, b"esc_report:uint64_t timestamp;int32_t esc_rpm;"))
    return defs


def _data_rows(msg_id: int, fields: Fields, t_us: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The D messages of one topic (samples `keep`) as packed rows (n, message bytes)."""
    dt = [("hdr", "<u2"), ("kind", "u1"), ("id", "<u2"), ("timestamp", "<u8"), ("timestamp_sample", "<u8")]
    for ty, nm, v in fields:
        if ty.startswith("esc_report"):
            dt.append((nm, [("timestamp", "<u8"), ("esc_rpm", "<i4")], (v.shape[1],)))
        else:
            base = ty.split("[")[0]
            dt.append((nm, _NP[base], (v.shape[1],)) if v.ndim == 2 else (nm, _NP[base]))
    rec = np.zeros(len(keep), dtype=np.dtype(dt))
    rec["hdr"], rec["kind"], rec["id"] = rec.dtype.itemsize - 3, _DATA[0], msg_id
    rec["timestamp"] = rec["timestamp_sample"] = t_us[keep]
    for ty, nm, v in fields:
        if ty.startswith("esc_report"):
            rec[nm]["timestamp"] = t_us[keep][:, None]
            rec[nm]["esc_rpm"] = v[keep]
        else:
            rec[nm] = v[keep]
    return rec.view(np.uint8).reshape(len(keep), rec.dtype.itemsize)


def _interleave(records: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    """Every topic's messages in time order, as the PX4 logger writes them."""
    ts = np.concatenate([r[0] for r in records])
    sizes = np.concatenate([np.full(len(r[0]), r[1].shape[1]) for r in records])
    order = np.argsort(ts, kind="stable")
    offsets = np.empty(len(ts), dtype=np.int64)
    offsets[order] = np.concatenate([[0], np.cumsum(sizes[order])[:-1]])
    body = np.empty(int(sizes.sum()), dtype=np.uint8)
    start = 0
    for _, rows in records:  # topics, not samples
        o = offsets[start : start + len(rows)]
        body[o[:, None] + np.arange(rows.shape[1])] = rows
        start += len(rows)
    return body.tobytes()
