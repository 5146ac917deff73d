"""Betaflight / Cleanflight / INAV blackbox logs (`.bbl`, `.bfl`; INAV's `LOG00001.TXT` is found by
its header) through orangebox, the Python port of the community's blackbox decoder.

Axes: Cleanflight and Betaflight align the accelerometer (and gyro) X forward, Y left, Z up
(betaflight src/main/flight/imu.c), i.e. FLU; the fixtures confirm it (accSmooth ≈ +1 g on z,
angular accelerations follow the motor differentials of Betaflight's quad-X order with FLU
signs, tests/test_io_blackbox.py). So:
`gyroADC` · gyro_scale is deg/s (Cleanflight-family scale; blackbox-log-viewer converts the
same way) -> rad/s; `accSmooth` / acc_1G is g -> m/s²; `motor[i]` over the header's
`motorOutput` min..max -> 0…1; `eRPM[i]` (electrical rpm/100, bidirectional DShot) -> rotor
rad/s with `motor_poles`; `vbatLatest` -> the battery voltage in V (its unit depends on the
firmware version, `_vbat_volts_per_count`); `time` µs -> s since the flight controller started.

INAV (header `Firmware revision:INAV …`, `Firmware type:Cleanflight`) writes the same
self-describing format and is read with the same conversions; its sources (iNavFlight/inav):
- src/main/blackbox/blackbox.c writes the header ("H Data version:2", field definitions with the
  Cleanflight predictors and encodings) and, in loadMainState, `gyroADC[i] = lrintf(
  gyro.gyroADCf[i])` (deg/s, `gyro_scale` 0x3f800000 = 1.0), `accSmooth[i] = acc.accADCf[i] *
  acc_1G` (g · acc_1G), `attitude[] = attitude.values.roll, pitch, yaw` (decidegrees), `motor[i]`
  with `motorOutput` = idle throttle, max throttle; no eRPM in the main frames.
- src/main/flight/pid.c closes the rate loop on `gyro.gyroADCf[axis]` (error = target - gyro),
  and src/main/flight/mixer.c mixes `roll·mix.roll + pitch·mix.pitch - yawMultiplier·yaw·
  mix.yaw` with the Cleanflight quad-X table (`mmix` 1 rear right: roll -1, pitch +1, yaw -1;
  the INAV presets and user dumps carry the same rows). For the quad to fly, a positive gyro
  roll must be a right roll, pitch nose down, yaw counter-clockwise: X forward, Y left, Z up,
  as Betaflight (same mixer, same yaw sign). The accelerometer shares the frame: imu.c's
  Mahony filter fuses `gyroADCf` and `accADCf` in one body frame.
- The "X North/Forward, Y East/Right, Z Up" comment at the top of src/main/flight/imu.c names
  INAV's navigation (earth) frame NEU, not the body axes the sensors are logged in.
Because no INAV log was at hand to confirm this on data, every INAV log is checked when read,
without estimation (`_check_inav_signs`): the body rates implied by the logged attitude
(imu.c imuUpdateEulerAngles: roll = atan2(R21, R22), pitch = asin(-R20) positive nose down,
yaw = heading clockwise) must correlate positively with the gyro on every axis that moved, and
the specific force must point up the body z axis; a disagreement refuses the log.

Betaflight's chirp (CHIRP flight mode, 2025.12 on) with `debug_mode` CHIRP becomes the flight's
`meta["sid"]` as ArduPilot's SIDS does (`_chirp`; `rotorid.methods.freq.sweep` reads both). What
the firmware logs (betaflight/betaflight):
- src/main/flight/pid.c (master 47f44857), pidController: while CHIRP mode is on, `debug[0] =
  lrintf(5000 * sinarg)`, the sweep's phase wrapped to [0, 2π) (0 while the mode is off or the
  sweep is over); no other debug field. The excitation `cos(sinarg)` (times the frequency below
  1 Hz), through a lead-lag (`chirp_lag_freq_hz`, `chirp_lead_freq_hz`) and times
  `chirp_amplitude_<axis>` deg/s, is added to one axis' rate setpoint. That axis is not logged:
  it starts at roll after boot and steps roll -> pitch -> yaw each time the mode is switched off.
- src/main/common/chirp.c (0b1b0784): f = f0 β^t, β = (f1/f0)^(1/T), sinarg = 2π f0 (β^t - 1) /
  ln β, for T = `chirp_time_seconds` (then the sweep stops); f0, f1 = the header's
  `chirp_frequency_start_deci_hz`, `chirp_frequency_end_deci_hz` / 10 (pid.c pidInitConfig).
- The reader fits the sweep's start and the firmware's loop clock (chirp.c counts nominal loop
  periods; the log's µs follow the MCU, the loop the gyro's clock) to the logged phase, and
  refuses a phase the header's sweep does not rebuild (`_chirp_clock`, `CHIRP_PHASE_MATCH`).
- `debug_mode` is written as its number in debugType_e (src/main/build/debug.h): CHIRP is 97 in
  2025.12 (AUTOPILOT_POSITION before it; blackbox-log-viewer src/flightlog_fielddefs.js
  027aa318) and 96 in master's debug.h; a name "CHIRP" (a converted header) is accepted too.

Each log section of a file (one per arming with several flights on one card) is one Flight
(more if logging paused inside it). P frames before the first I frame of a section cannot be
decoded and are dropped, as every blackbox decoder does.
"""

from __future__ import annotations

import logging
import operator
import re
import struct
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rotorid import frames
from rotorid.errors import LogFormatError, quote
from rotorid.flight import Flight, Series, align
from rotorid.io import dropouts, guard, register
from rotorid.signal import exp_sweep_phase, runs

#: Largest plausible acc_1G (accelerometer counts per g): real sensors log 256-16384.
ACC_1G_MAX = 1e6
MAGIC = b"H Product:Blackb"  # "H Product:Blackbox…" cut to the 16 bytes io.detect compares
RATE_HINT = (
    "log it faster: in the Betaflight CLI `set blackbox_sample_rate = 1/1` (Betaflight 3.x-4.0: "
    "`set blackbox_p_ratio = 32`) so gyro and motors are logged at the PID loop rate, and for rotor speed "
    "`set dshot_bidir = ON` with `motor_poles` set to the motors' magnet count; what to fly: docs/fly-betaflight.md"
)
#: The INAV sign check compares mean gyro rates with attitude rates over intervals this long:
#: the logged attitude's 0.1° steps are 5 deg/s of rate over 20 ms, far below flight rates.
ATTITUDE_STEP = 0.02
#: A correlation beyond this many standard errors of zero (1/sqrt(n - 3)) has a sign; within it
#: the axis did not move enough to tell.
SIGN_SIGMAS = 3.0
INAV_RATE_HINT = (
    "log it faster: in the INAV CLI `set blackbox_rate_num = 1` and `set blackbox_rate_denom = 1` so gyro and "
    "motors are logged every loop; what to fly: docs/fly-betaflight.md"
)
#: Betaflight version from which `_acc_lowpass` no longer assumes the biquad (newer sources
#: filter the accelerometer with a PT2): such logs carry no `acc_lowpass`.
ACC_PT2_VERSION = (4, 5)
#: A cut-off at or above this (Hz) is no filter worth modelling on a 500 Hz-1 kHz accelerometer.
ACC_LPF_MAX_HZ = 200.0
_HEADER_FACTS = (
    "Firmware type",
    "Firmware revision",
    "Firmware date",
    "Craft name",
    "looptime",
    "I interval",
    "P interval",
    "P ratio",
    "pid_process_denom",
    "gyro_sync_denom",
    "acc_1G",
    "motorOutput",
    "motor_poles",
    "dshot_bidir",
    "debug_mode",
    "minthrottle",
    "maxthrottle",
    "acc_lpf_hz",
)


@contextmanager
def _quiet() -> Any:
    """orangebox logs a warning per undecodable frame kind (e.g. GPS home 'H'); rotorid reports
    what matters itself."""
    log = logging.getLogger("orangebox")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _number(headers: dict[str, Any], key: str, path: Path) -> float | None:
    """Header `key` as a finite number (None if absent); anything else is a LogFormatError."""
    if key not in headers:
        return None
    v = headers[key]
    try:
        x = float(int(v, 0) if isinstance(v, str) else v)
    except (TypeError, ValueError, OverflowError):
        x = np.nan
    if not np.isfinite(x):
        raise LogFormatError(f"{path}: header {key} is {quote(v)}, not a number; the header is corrupt")
    return x


def _float_bits(headers: dict[str, Any], key: str, path: Path) -> float | None:
    """A header float written as its IEEE-754 bits (e.g. gyro_scale 0x3f800000 = 1.0)."""
    v = _number(headers, key, path)
    return None if v is None else struct.unpack("<f", struct.pack("<I", int(v) & 0xFFFFFFFF))[0]


def _gyro_deg_s_scale(headers: dict[str, Any], path: Path) -> float:
    """deg/s per gyroADC count: Cleanflight/Betaflight/INAV write gyro_scale as deg/s per
    count; Baseflight as rad/µs per count."""
    scale = _float_bits(headers, "gyro_scale", path)
    if scale is None:
        return 1.0
    if not np.isfinite(scale) or scale <= 0:
        raise LogFormatError(f"{path}: header gyro_scale {quote(headers['gyro_scale'])} is not a positive float")
    if "baseflight" in str(headers.get("Firmware type", "")).lower():
        return scale * 1e6 * 180.0 / np.pi
    if not GYRO_SCALE[0] <= scale <= GYRO_SCALE[1]:
        warnings.warn(
            f"{path}: header gyro_scale {scale:.4g} deg/s per count is implausible "
            f"(firmwares write {GYRO_SCALE[0]:g}..{GYRO_SCALE[1]:g}, Betaflight 1.0); the header may be corrupt",
            stacklevel=5,
        )
    return scale


#: deg/s per gyro count a Cleanflight-family header may plausibly declare (Betaflight: 1.0;
#: raw sensors 1/131..1/8.2).
GYRO_SCALE = (1e-3, 10.0)
#: Motor output ranges a firmware writes lie within 0..MOTOR_MAX and span at least MOTOR_SPAN
#: (DShot 48..2047, PWM 1000..2000, INAV 1000..2000).
MOTOR_MAX, MOTOR_SPAN = 65535.0, 100.0
#: Motor pole counts of real motors (even, 2..MAX_POLES).
MAX_POLES = 64


#: Largest frame interval a header may declare (Betaflight writes I interval 32…256 and
#: P interval 1/1…1/32): orangebox's frame-skip count steps one frame at a time up to it.
MAX_INTERVAL = 1 << 16


def _check_intervals(headers: dict[str, Any]) -> None:
    """'I interval' and 'P interval' (N or NUM/DENOM) must be integers with 1 <= NUM and
    DENOM <= `MAX_INTERVAL`: orangebox loops until a frame index fits them, for ever on a NaN
    or a non-positive NUM and for DENOM steps on a huge one."""
    i_int, p_int = headers.get("I interval", 1), str(headers.get("P interval", "1"))
    num, _, denom = p_int.partition("/") if "/" in p_int else ("1", "", p_int)
    ok = isinstance(i_int, int) and abs(i_int) <= MAX_INTERVAL
    ok = ok and num.isdigit() and denom.isdigit() and int(num) >= 1 and 1 <= int(denom) <= MAX_INTERVAL
    if not ok:
        raise LogFormatError(
            f"header I interval {quote(i_int)} / P interval {quote(p_int)} is not a frame interval "
            f"(positive integers up to {MAX_INTERVAL})"
        )


#: orangebox's code of the tag8_8svb encoding (up to eight adjacent fields behind one tag byte).
TAG8_8SVB = 6


def _check_groups(field_defs: dict[Any, list[Any]]) -> None:
    """No frame kind may end with a tag8_8svb field: orangebox counts such a group one field
    short where it meets the frame's end (the firmware's decoder counts to the end), so the last
    field decodes as a group of none and its frame loop never advances — for ever."""
    for kind, defs in field_defs.items():
        if defs and getattr(defs[-1], "encoding", None) == TAG8_8SVB:
            raise LogFormatError(
                f"header: the last {getattr(kind, 'value', kind)} frame field {quote(getattr(defs[-1], 'name', '?'))} "
                f"is tag8_8svb-encoded (encoding {TAG8_8SVB}), which orangebox cannot decode (it would never finish); "
                "the header is probably corrupt"
            )


#: Most fields a frame definition may list (Betaflight logs ~60-100): orangebox looks each
#: name up in a list, so a header of 200 000 names took ~25 min.
MAX_FIELDS = 1024
_FIELD_LIST = re.compile(rb"H Field [A-Za-z] (?:name|signed|predictor|encoding):([^\n]*)")


def _check_field_lists(path: Path) -> None:
    """Refuse, before orangebox parses it, a header line listing more than `MAX_FIELDS` fields."""
    with open(path, "rb") as f:
        data = f.read()
    for m in _FIELD_LIST.finditer(data):
        n = m.group(1).count(b",") + 1
        if n > MAX_FIELDS:
            raise LogFormatError(
                f"{path}: header line {quote(m.group(0)[:40])} lists {n} fields (a log has at most {MAX_FIELDS}); "
                "the header is corrupt"
            )


def _section(parser: Any, index: int, path: Path) -> tuple[dict[str, Any], list[str], list[tuple], str | None]:
    """Headers, field names and decoded main frames of log section `index` (from its first I
    frame), plus why decoding stopped early (None if the section ended cleanly)."""
    parser.set_log_index(index)
    headers = dict(parser.headers)
    _check_intervals(headers)
    _check_groups(parser.reader.field_defs)
    names = [str(n) for n in parser.field_names]  # a corrupt header can make a name a number
    rows: list[tuple] = []
    seen_intra = False
    stop = None
    try:  # orangebox raises at a cut end (RuntimeError) and on corrupt bytes (TypeError, ...)
        for fr in parser.frames():
            if not seen_intra:
                if fr.type.value != "I":
                    continue
                seen_intra = True
            if len(fr.data) != len(names):  # corrupt bytes can decode to a frame of other length
                stop = f"frame {len(rows)} holds {len(fr.data)} of the header's {len(names)} fields"
                break
            rows.append(fr.data)
    except Exception as e:
        stop = f"orangebox: {type(e).__name__}: {quote(e)}"
    return headers, names, rows, stop


def _columns(rows: list[tuple], names: list[str], fields: list[str]) -> np.ndarray:
    """(n, k) float array of the named fields; a value that is not a number (a corrupt frame) is NaN."""
    idx = [names.index(f) for f in fields]
    get = operator.itemgetter(*idx) if len(idx) > 1 else lambda r: (r[idx[0]],)
    try:
        return np.array([get(r) for r in rows], dtype=np.float64).reshape(len(rows), len(fields))
    except (TypeError, ValueError):
        num = [[v if isinstance(v, int | float) else np.nan for v in get(r)] for r in rows]
        return np.array(num, dtype=np.float64).reshape(len(rows), len(fields))


def _indexed(names: list[str], base: str) -> list[str]:
    found = sorted(
        (int(n[len(base) + 1 : -1]), n)
        for n in names
        if n.startswith(base + "[") and n.endswith("]") and n[len(base) + 1 : -1].isdigit()
    )
    return [n for _, n in found]


def _flight(
    path: Path, index: int, headers: dict[str, Any], names: list[str], rows: list[tuple], motor_poles: int | None
) -> tuple[dict[str, Series], dict[str, Any]]:
    notes: list[str] = []
    units: dict[str, str] = {}
    if "time" not in names:
        raise LogFormatError(f"{path}: log {index} has no 'time' field")
    t = _columns(rows, names, ["time"])[:, 0] * 1e-6
    keep = np.isfinite(t)
    keep[1:] &= t[1:] > np.maximum.accumulate(np.where(np.isfinite(t), t, -np.inf))[:-1]
    if not keep.all():
        notes.append(f"log {index}: dropped {int((~keep).sum())} frames whose time did not advance (corrupt frames)")
    t = t[keep]

    def col(fields: list[str]) -> np.ndarray:
        return _columns(rows, names, fields)[keep]

    series: dict[str, Series] = {}
    gyro_f = [f"gyroADC[{i}]" for i in range(3)]
    if all(f in names for f in gyro_f):
        series["gyro"] = Series(t, np.radians(col(gyro_f) * _gyro_deg_s_scale(headers, path)))
    acc_f = [f"accSmooth[{i}]" for i in range(3)]
    if all(f in names for f in acc_f):
        one_g = _number(headers, "acc_1G", path) or 0.0
        if 1.0 <= one_g <= ACC_1G_MAX:  # counts per g: 256-16384 on real sensors
            series["acc"] = Series(t, col(acc_f) / one_g * frames.GRAVITY)
        else:
            notes.append(f"accSmooth present but the header's acc_1G ({one_g:g}) is no count per g: acc not read")
    motor_f = _indexed(names, "motor")
    if motor_f:
        lo, hi = _motor_range(headers, path)
        raw = col(motor_f)
        outside = float(np.mean((raw < lo - 1) | (raw > hi + 1))) if raw.size else 0.0
        if not (lo >= 0 and hi <= MOTOR_MAX and hi - lo >= MOTOR_SPAN) or outside > 0.1:
            warnings.warn(
                f"{path}: header motor output range {lo:g}..{hi:g} is implausible "
                f"({100 * outside:.0f} % of motor samples outside it; firmwares write e.g. 48..2047 or 1000..2000): "
                "the motor commands are clipped to it and may be scaled wrong",
                stacklevel=4,
            )
        series["cmd"] = Series(t, np.clip((raw - lo) / (hi - lo), 0.0, 1.0))
        units["cmd"] = f"normalized (motorOutput {lo:g}..{hi:g})"
    erpm_f = _indexed(names, "eRPM")
    if erpm_f:
        speed = _rotor_speed(path, headers, t, col(erpm_f), motor_poles)
        if speed is not None:
            series["rotor_speed"], units["rotor_speed"] = speed
    if "vbatLatest" in names:
        vbat = _vbat(path, headers, t, col(["vbatLatest"])[:, 0], notes, units)
        if vbat is not None:
            series["vbat"] = vbat
    for ch, s in list(series.items()):
        ok = np.all(np.isfinite(s.values.reshape(len(s.t), -1)), axis=1)
        if not ok.all():
            notes.append(f"log {index}: {ch}: dropped {int((~ok).sum())} frames with non-numeric values")
            series[ch] = Series(s.t[ok], s.values[ok])
    if _is_inav(headers) and "gyro" in series:
        att_f = [f"attitude[{i}]" for i in range(3)]
        attitude = Series(t, col(att_f)) if all(f in names for f in att_f) else None
        notes.append(_check_inav_signs(path, index, series["gyro"], series.get("acc"), attitude))
    chirp = _chirp(path, headers, names, t, col, notes)
    facts = {k: headers[k] for k in _HEADER_FACTS if k in headers}
    if "gyro_scale" in headers:
        facts["gyro_scale"] = _float_bits(headers, "gyro_scale", path)
    meta = {"log_index": index, "header": facts, "units": units, "notes": notes}
    acc_lowpass = _acc_lowpass(headers)
    if acc_lowpass is not None and "acc" in series:
        meta["acc_lowpass"] = acc_lowpass
    return series, meta | ({"sid": chirp} if chirp else {})


def _rotor_speed(
    path: Path, headers: dict[str, Any], t: np.ndarray, erpm: np.ndarray, motor_poles: int | None
) -> tuple[Series, str] | None:
    """Rotor speeds (rad/s) and their unit from the eRPM fields (eRPM / 100 per pole pair), or
    None with a warning where the motor's pole count is unknown."""
    poles = motor_poles or int(_number(headers, "motor_poles", path) or 0)
    if poles > 0 and (poles % 2 or poles > MAX_POLES):
        warnings.warn(
            f"{path}: motor_poles {poles} is implausible (an even count up to {MAX_POLES}, typically 14); "
            "rotor speeds from eRPM may be wrong",
            stacklevel=5,
        )
    if poles <= 0:
        warnings.warn(
            f"{path}: eRPM logged but motor_poles unknown; give --motor-poles N (motor_poles=N in Python) to read rotor speed",
            stacklevel=5,
        )
        return None
    rpm = erpm * 100.0 / (poles / 2.0)
    return Series(t, rpm * 2.0 * np.pi / 60.0), f"rad/s (from eRPM, {poles} motor poles)"


#: Betaflight's debug_mode number of CHIRP per firmware (year, month) (the module docstring says where from).
CHIRP_DEBUG_MODE = {(2025, 12): 97}
CHIRP_DEBUG_MODE_LATER = 96
#: debug[0] is 5000 x the chirp's phase in rad.
CHIRP_PHASE_SCALE = 5000.0
#: Zero-phase gaps shorter than this (s) do not end a sweep (the wrapped phase can round to 0).
CHIRP_GAP = 0.05
#: The logged phase may differ from the one rebuilt from the header by this much (rad): the
#: firmware's pow/log approximations and the loop's timing.
CHIRP_PHASE_MATCH = 0.5
#: A sweep's loop clock lies within this share of the log's (gyro clocks drift by a few %), and
#: it lasts at least CHIRP_MIN s (shorter, it holds no band to fit).
CHIRP_CLOCK, CHIRP_MIN = 0.1, 1.0
#: The logged phase is unwrapped up to this share of the logging rate (it aliases at one half).
CHIRP_UNWRAP = 0.4
_CHIRP_HEADER = ("chirp_frequency_start_deci_hz", "chirp_frequency_end_deci_hz", "chirp_time_seconds")


def _is_chirp_mode(headers: dict[str, Any]) -> bool:
    mode = headers.get("debug_mode")
    if isinstance(mode, str):
        return mode.strip().upper() == "CHIRP"
    m = re.match(r"\s*Betaflight\s+(\d+)\.(\d+)", str(headers.get("Firmware revision", "")))
    if not m or not isinstance(mode, int):
        return False
    version = (int(m.group(1)), int(m.group(2)))
    want = CHIRP_DEBUG_MODE.get(version, CHIRP_DEBUG_MODE_LATER if version > max(CHIRP_DEBUG_MODE) else None)
    return mode == want


def _chirp(
    path: Path, headers: dict[str, Any], names: list[str], t: np.ndarray, col: Any, notes: list[str]
) -> dict[str, Any] | None:
    """Betaflight's chirp as `meta["sid"]` (firmware "betaflight"): the header's band and
    duration, the sweep's start and the firmware's clock from the logged phase (`_chirp_clock`)
    and the span the mode was on; the axis is not logged (None) and is left to the sweep
    detection. A logged phase the header's sweep does not rebuild is refused. Notes what was
    read, or why not."""
    if not _is_chirp_mode(headers) or "debug[0]" not in names:
        return None
    missing = [k for k in _CHIRP_HEADER if k not in headers]
    if missing:
        notes.append(f"debug_mode CHIRP but the header lacks {', '.join(missing)}: the chirp is not read")
        return None
    f0, f1 = (_number(headers, k, path) / 10.0 for k in _CHIRP_HEADER[:2])
    span = _number(headers, "chirp_time_seconds", path)
    phase = col(["debug[0]"])[:, 0] / CHIRP_PHASE_SCALE
    on = np.isfinite(phase) & (phase != 0)
    if not (f0 > 0 and f1 > f0 and span > 0) or not on.any():
        notes.append(
            f"debug_mode CHIRP: no usable sweep (header {f0:g}-{f1:g} Hz over {span:g} s, "
            f"{int(on.sum())} frames with a phase)"
        )
        return None
    starts, ends = runs(on)
    gaps = t[starts[1:]] - t[ends[:-1] - 1]
    cut = np.flatnonzero(gaps > CHIRP_GAP)
    first_end = ends[cut[0]] if len(cut) else ends[-1]
    if len(cut):
        notes.append(f"debug CHIRP: {len(cut) + 1} sweeps in the log; the first is read (give a window around each)")
    i0 = starts[0]
    clock, t_start = _chirp_clock(t[i0:first_end], phase[i0:first_end], on[i0:first_end], f0, f1, span)
    rebuilt, _ = exp_sweep_phase(clock * (t[i0:first_end] - t_start), f0, f1, span)
    err = np.angle(np.exp(1j * (rebuilt - phase[i0:first_end])))
    miss = float(np.max(np.abs(np.where(on[i0:first_end], err, 0.0))))
    t_stop = float(min(t[first_end - 1], t_start + span / clock))
    if not (abs(clock - 1.0) <= CHIRP_CLOCK and t_stop - t_start >= CHIRP_MIN):
        notes.append(
            f"debug[0] (the chirp's phase) holds no sweep: {t_stop - t_start:.3g} s long (at least {CHIRP_MIN:g} s) "
            f"at {clock:.3g} x the log's clock (1 ± {CHIRP_CLOCK:g}); the chirp is not used"
        )
        return None
    if not miss <= CHIRP_PHASE_MATCH:
        notes.append(
            f"debug[0] (the chirp's phase) differs from the sweep rebuilt from the header by up to {miss:.2f} rad: "
            "the header's chirp_* settings are not the ones flown (or the log began inside the sweep); "
            "the chirp is not used and the commands' spectra decide the sweep"
        )
        return None
    amp = {a: _number(headers, f"chirp_amplitude_{a}", path) for a in ("roll", "pitch", "yaw")}
    notes.append(
        f"debug CHIRP: Betaflight chirp {f0:g}-{f1:g} Hz over {span:g} s from {t_start:.2f} s to {t_stop:.2f} s "
        f"(the firmware's loop clock {clock:.4f} x the log's); "
        "the swept axis is not logged (roll, pitch, yaw in turn after boot): it is found in the commands' spectra"
    )
    return {
        "firmware": "betaflight",
        "axis": None,
        "f_start": f0,
        "f_stop": f1,
        "t_sweep": span,
        "t_start": t_start,
        "t_stop": t_stop,
        "clock": clock,
        **{f"amplitude_{a}": v for a, v in amp.items() if v is not None},
    }


def _chirp_clock(
    t: np.ndarray, phase: np.ndarray, on: np.ndarray, f0: float, f1: float, span: float
) -> tuple[float, float]:
    """(firmware seconds per log second, the sweep's start on the log's clock) of one sweep:
    chirp.c counts its time in nominal loop periods (`count * Ts`), which drift from the log's
    µs with the gyro's clock, so the logged phase is unwrapped while the sweep stays below
    `CHIRP_UNWRAP` of the logging rate, turned into chirp.c's time by inverting its phase, and
    fitted by a line in the log's time."""
    t, phase = t[on], np.unwrap(phase[on])
    b = np.log(f1 / f0)
    with np.errstate(invalid="ignore", over="ignore"):  # a corrupt phase: NaN, refused by the caller
        tau = span / b * np.log1p(phase * b / (2 * np.pi * f0 * span))
        rate = 1.0 / max(float(np.median(np.diff(t))), 1e-9) if len(t) > 1 else 0.0
        fit = f0 * np.exp(b * tau / span) < CHIRP_UNWRAP * rate
    if fit.sum() < 3 or np.ptp(t[fit]) == 0:
        return 1.0, float(t[0] - tau[0])
    slope, offset = np.polyfit(t[fit], tau[fit], 1)
    return (float(slope), float(-offset / slope)) if slope > 0 else (np.nan, np.nan)


def _acc_lowpass(headers: dict[str, Any]) -> dict[str, Any] | None:
    """The low-pass Betaflight runs on the accelerometer before logging `accSmooth`, from the
    header's `acc_lpf_hz` (written as 100 × the cut-off in Hz by blackbox.c, so 1000 is the
    default 10 Hz): a biquad (RBJ, Q = 1/√2, i.e. a 2nd-order Butterworth) in
    sensors/acceleration.c of 3.x and 4.x sources (newer sources filter with a PT2; from
    `ACC_PT2_VERSION` on, the filter is left unmodelled rather than guessed). Its ~22 ms group delay at 10 Hz is in every
    logged specific force; a method that ignores it reads it as motor lag. None for other
    firmwares and versions (their filter is not modelled) and for an unfiltered accelerometer."""
    rev = str(headers.get("Firmware revision", "")).split()
    if len(rev) < 2 or rev[0] != "Betaflight" or "acc_lpf_hz" not in headers:
        return None
    try:
        version = tuple(int(v) for v in rev[1].split(".")[:2])
        hz = float(headers["acc_lpf_hz"]) / 100.0
    except (TypeError, ValueError):  # a corrupt header: nothing to model
        return None
    if version >= ACC_PT2_VERSION or not 1.0 <= hz < ACC_LPF_MAX_HZ:
        return None
    return {"kind": "biquad", "hz": hz}


#: Firmware name and version at the start of the header's "Firmware revision".
_REVISION = re.compile(r"\s*(Betaflight|Cleanflight)\s+(\d+)\.(\d+)", re.IGNORECASE)
#: vbatLatest's median over the flight may differ from the header's vbatref (the pack at arming,
#: same unit) by this share before the unit is doubted: a pack sags ~10-20 % under load.
VBATREF_MATCH = 0.3


def _vbat_volts_per_count(headers: dict[str, Any], path: Path) -> tuple[float | None, str]:
    """Volts per `vbatLatest` count and how that was decided, by firmware version as the
    community's viewer decodes it (betaflight/blackbox-log-viewer js/flightlog_fields_presenter.js,
    'vbatLatest'; js/flightlog.js vbatADCToMillivolts): Betaflight >= 4.0 logs 0.01 V, Betaflight
    >= 3.1 and Cleanflight >= 2.0 0.1 V; older firmwares the 12-bit ADC reading, mV = ADC · 33 · 10
    · vbatscale / 4095 with the header's `vbatscale`. None when the firmware is not one of these."""
    m = _REVISION.match(str(headers.get("Firmware revision", "")))
    if m is None:
        return None, f"firmware {quote(headers.get('Firmware revision', '?'))}: vbatLatest's unit unknown, not read"
    name, version = m.group(1).lower(), (int(m.group(2)), int(m.group(3)))
    if name == "betaflight" and version >= (4, 0):
        return 0.01, "0.01 V (Betaflight >= 4.0)"
    if (name == "betaflight" and version >= (3, 1)) or (name == "cleanflight" and version >= (2, 0)):
        return 0.1, "0.1 V (Betaflight >= 3.1, Cleanflight >= 2.0)"
    scale = _number(headers, "vbatscale", path) or _number(headers, "vbat_scale", path)
    if not scale or scale <= 0:
        return None, "vbatLatest is an ADC reading on this firmware and the header has no vbatscale: not read"
    return 33.0 * 10.0 * scale / 4095.0 / 1000.0, f"ADC counts x vbatscale {scale:g} (firmware before 3.1)"


def _vbat(
    path: Path, headers: dict[str, Any], t: np.ndarray, raw: np.ndarray, notes: list[str], units: dict[str, str]
) -> Series | None:
    """The battery voltage (V) from `vbatLatest` counts (`_vbat_volts_per_count`); samples of
    0 (no voltage meter) dropped; a median far from the header's `vbatref` is warned about."""
    per_count, how = _vbat_volts_per_count(headers, path)
    ok = np.isfinite(raw) & (raw > 0)
    if per_count is None or ok.sum() < 2:
        notes.append(how if per_count is None else "vbatLatest is 0 throughout (no voltage meter): not read")
        return None
    v = raw[ok] * per_count
    ref = _number(headers, "vbatref", path)
    if ref and abs(ref * per_count / np.median(v) - 1.0) > VBATREF_MATCH:
        warnings.warn(
            f"{path}: the battery voltage read as {np.median(v):.2f} V (vbatLatest in {how}) but the header's vbatref "
            f"says {ref * per_count:.2f} V at arming; the unit may be wrong for this firmware",
            stacklevel=5,
        )
    units["vbat"] = f"V (vbatLatest, {how})"
    return Series(t[ok], v)


def _is_inav(headers: dict[str, Any]) -> bool:
    return str(headers.get("Firmware revision", "")).strip().upper().startswith("INAV")


def _attitude_rates(t: np.ndarray, attitude_decideg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Body rates (FLU, rad/s) over consecutive ATTITUDE_STEP intervals implied by INAV's
    logged Euler angles, and the intervals' (start, end) indices. INAV's roll φ, pitch θ (nose
    down) and heading are the z-y-x Euler angles of body FLU in a z-up world with yaw ψ =
    -heading, so p = φ' - ψ' sin θ, q = θ' cos φ + ψ' cos θ sin φ, r = ψ' cos θ cos φ - θ' sin φ
    at the interval midpoints. Intervals steeper than ±60° pitch are left out (roll and heading
    turn ill-defined towards ±90°)."""
    step = max(1, round(ATTITUDE_STEP / max(float(np.median(np.diff(t))), 1e-9)))
    idx = np.arange(0, len(t), step)
    a, b = idx[:-1], idx[1:]
    ang = np.unwrap(np.radians(attitude_decideg[idx] / 10.0) * [1.0, 1.0, -1.0], axis=0)
    rate = np.diff(ang, axis=0) / np.diff(t[idx])[:, None]
    phi, theta = ((ang[1:, k] + ang[:-1, k]) / 2.0 for k in (0, 1))
    p = rate[:, 0] - rate[:, 2] * np.sin(theta)
    q = rate[:, 1] * np.cos(phi) + rate[:, 2] * np.cos(theta) * np.sin(phi)
    r = rate[:, 2] * np.cos(theta) * np.cos(phi) - rate[:, 1] * np.sin(phi)
    ok = np.cos(theta) > 0.5
    return np.column_stack([p, q, r])[ok], np.column_stack([a, b])[ok]


def _check_inav_signs(path: Path, index: int, gyro: Series, acc: Series | None, attitude: Series | None) -> str:
    """Refuse an INAV log whose gyro disagrees in sign with the rates of its own attitude
    (decidegrees, on the main frames' stamps), or whose specific force points down the body z
    axis (the module docstring says why these signs); returns the note recording what was
    verified. An axis that did not move enough to tell (|correlation| within SIGN_SIGMAS
    standard errors of zero) is left unverified, with a warning; a log without `attitude[]` is
    read with a warning that names the setting."""
    where = f"{path}: log {index} (INAV)"
    if acc is not None and np.median(acc.values[:, 2]) <= 0.0:
        raise LogFormatError(
            f"{where}: accSmooth[2] reads {np.median(acc.values[:, 2]) / frames.GRAVITY:.2f} g over the log, but a "
            "multirotor's thrust points up the body z axis; the accelerometer is aligned differently — check "
            "align_acc / align_board_* and convert the log to CSV with FLU axes (README, 'Any other logger: CSV or Parquet')"
        )
    if attitude is None:
        warnings.warn(
            f"{where}: no attitude[] logged, so the gyro signs were not checked against INAV's attitude; "
            "enable it with `blackbox ATTI` in the INAV CLI",
            stacklevel=5,
        )
        return f"log {index}: INAV gyro signs not checked (no attitude[] in the log)"
    att = attitude.values[np.searchsorted(attitude.t, gyro.t)]  # gyro kept a subset of the frames
    ok = np.all(np.isfinite(att), axis=1)
    t, w = gyro.t[ok], gyro.values[ok]
    rates, iv = _attitude_rates(t, att[ok]) if ok.sum() > 2 else (np.zeros((0, 3)), np.zeros((0, 2), int))
    cum = np.concatenate([np.zeros((1, 3)), np.cumsum((w[1:] + w[:-1]) / 2 * np.diff(t)[:, None], 0)])
    mean_gyro = (cum[iv[:, 1]] - cum[iv[:, 0]]) / (t[iv[:, 1]] - t[iv[:, 0]])[:, None]
    n = len(rates)
    bound = SIGN_SIGMAS / np.sqrt(max(n - 3, 1))
    corr = [_corr(mean_gyro[:, k], rates[:, k]) for k in range(3)]
    for axis, r in zip("xyz", corr, strict=True):
        if r < -bound:
            raise LogFormatError(
                f"{where}: gyro {axis} disagrees in sign with the rate of the logged attitude (correlation {r:.2f} "
                f"over {n} intervals of {ATTITUDE_STEP:g} s): its axes are not the X forward, Y left, Z up that INAV's "
                "rate loop and mixer imply, so rotorid does not guess — convert it to CSV with FLU axes (README, 'Any other logger: CSV or Parquet')"
            )
    unsure = [axis for axis, r in zip("xyz", corr, strict=True) if not r > bound]
    if unsure:
        warnings.warn(
            f"{where}: gyro {', '.join(unsure)} moved too little to check its sign against the logged attitude",
            stacklevel=5,
        )
    shown = ", ".join(f"{a} {r:.2f}" for a, r in zip("xyz", corr, strict=True))
    return f"log {index}: INAV gyro signs checked against attitude[] (correlation {shown}; over {n} intervals)"


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, 0 where either side is constant or there are under 3 pairs."""
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _motor_range(headers: dict[str, Any], path: Path) -> tuple[float, float]:
    mo = headers.get("motorOutput")
    if isinstance(mo, list | tuple) and len(mo) == 2 and all(isinstance(x, int | float) for x in mo) and mo[1] > mo[0]:
        return float(mo[0]), float(mo[1])
    lo, hi = _number(headers, "minthrottle", path), _number(headers, "maxthrottle", path)
    if lo is not None and hi is not None and hi > lo:
        return lo, hi
    raise LogFormatError(f"{path}: header motorOutput {quote(mo)} is not a min,max range; cannot normalize motor[]")


@register("blackbox", (".bbl", ".bfl"), magic=MAGIC)
@guard.reader
def read(
    path: Path, motor_poles: int | None = None, rate: float | None = None, allow_corrupt: bool = False
) -> list[Flight]:
    """Every log section of a blackbox file as Flights (FLU, SI), split at logging pauses.

    `motor_poles` converts eRPM to rotor speed when the header lacks it. A section cut short
    (card full, power loss) decodes up to the cut with a warning; `allow_corrupt` is accepted
    for a uniform reader interface.
    """
    from orangebox import Parser

    path = Path(path)
    _check_field_lists(path)
    with _quiet(), warnings.catch_warnings(), guard.library(path, "orangebox", what="blackbox"):
        warnings.simplefilter("ignore")  # orangebox's own deprecation noise
        parser = Parser.load(str(path))
        n_logs = parser.reader.log_count
    if n_logs < 1:
        raise LogFormatError(f"{path}: no blackbox log section (no 'H Product:Blackbox' header)")
    flights: list[Flight] = []
    skipped: list[str] = []
    for index in range(1, n_logs + 1):
        try:
            with _quiet():
                headers, names, rows, stop = _section(parser, index, path)
        except LogFormatError as e:  # rotorid's own check of the header (its values quoted)
            skipped.append(f"log {index}: unreadable header ({e})")
            continue
        except Exception as e:
            skipped.append(f"log {index}: unreadable header ({type(e).__name__}: {quote(e)})")
            continue
        if stop is not None:
            msg = (
                f"{path}: log {index} is cut or corrupt after {len(rows)} frames ({stop}); decoded the frames before it"
            )
            warnings.warn(msg, stacklevel=3)  # past guard.reader
        if len(rows) < 2:
            skipped.append(f"log {index}: fewer than two decodable frames")
            continue
        series, meta = _flight(path, index, headers, names, rows, motor_poles)
        series = {ch: s for ch, s in series.items() if len(s.t) >= 2}
        if not series:
            skipped.append(f"log {index}: no gyroADC, accSmooth, motor or eRPM fields")
            continue
        meta |= {
            "source": str(path),
            "format": "blackbox",
            "topics": {ch: "main frames" for ch in series},
            "rates": {ch: s.rate for ch, s in series.items()},
            "rate_hint": INAV_RATE_HINT if _is_inav(headers) else RATE_HINT,
        }
        meta["notes"] += skipped
        flight, _ = align(series, rate=rate or max(s.rate for s in series.values()), meta=meta)
        flights += dropouts.split(flight, {ch: x for ch, x in series.items() if ch != "vbat"}, path)
    if not flights:
        raise LogFormatError(f"{path}: no flight data in {n_logs} log section(s): {'; '.join(skipped)}")
    if skipped:
        warnings.warn(f"{path}: skipped {'; '.join(skipped)}", stacklevel=3)
    return flights
