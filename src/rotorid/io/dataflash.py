"""ArduPilot DataFlash `.bin` logs: a reader through pymavlink's DFReader and a writer of the
same self-describing format.

pymavlink parses the `FMT` definitions and indexes every message (its fast indexer); the
messages rotorid needs are then decoded column-wise with numpy from those offsets, so a long
log reads in a fraction of a second. Units and multipliers come from `FMTU`/`UNIT`/`MULT`
(a format character's own multiplier, e.g. `c` = int16·0.01, wins, as in pymavlink).

Channels: `IMU` (AccX/Y/Z, GyrX/Y/Z; instance `imu`, default the lowest instance logged, i.e.
ArduPilot's first IMU), or with `imu_source="batch"` the batch sampler's raw sensor-rate
samples (`ISBH`/`ISBD`, value/`mul`); `RCOU` PWM µs of the motor outputs (channels whose
`SERVOn_FUNCTION` is Motor1…12) scaled to 0…1 by `MOT_PWM_MIN/MAX`; `ESC` RPM per output ->
rad/s; `ATT` Roll/Pitch/Yaw -> attitude; `BAT.Volt` (else `CURR.Volt`) -> battery voltage.
ArduPilot's body FRD / world NED become FLU / ENU.
Time is `TimeUS` (since boot) in seconds. A log cut mid-message (power loss) decodes to its
whole messages with a warning; logging drop-outs split the flight as for ULog.

The writer produces these messages (plus FMT/UNIT/MULT/FMTU/PARM) from a Flight, so a
simulated flight takes the path of a real ArduPilot log; pymavlink reads what it writes.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rotorid import frames
from rotorid.errors import LogFormatError, RotoridError, quote
from rotorid.flight import Flight, Series, align, voltage_series
from rotorid.io import dropouts, guard, register
from rotorid.io.ulog import _clean
from rotorid.signal import SID_AXES, sid_chirp
from rotorid.util import atomic_write_bytes

MAGIC = b"\xa3\x95"
HEAD = 3  # 0xA3 0x95 type
#: An RCOU output field: C1, C2, ... (1-based, no leading zero).
RCOU_OUTPUT = re.compile(r"C[1-9][0-9]*")
#: SERVOn_FUNCTION values of Motor1..8 and Motor9..12 (ArduPilot SRV_Channel::Aux_servo_function_t)
MOTOR_FUNCS = {**{33 + i: i + 1 for i in range(8)}, **{82 + i: i + 9 for i in range(4)}}
#: LOG_BITMASK bits (ArduCopter defines.h): 0 ATTITUDE_FAST, 7 IMU, 10 RCOUT, 17 MOTBATT, 18 IMU_FAST, 19 IMU_RAW
LOG_BITMASK_FAST = (1 << 0) | (1 << 7) | (1 << 10) | (1 << 17) | (1 << 18)
RATE_HINT = (
    "log it faster: in ArduPilot set LOG_BITMASK bit 18 IMU_FAST (IMU at the loop rate SCHED_LOOP_RATE) and "
    "bit 0 ATTITUDE_FAST; ArduCopter logs RCOU (bit 10 RCOUT) at only 10 Hz, so for the motors log ESC "
    "telemetry rpm (ESC messages, e.g. bidirectional DShot) and give the vehicle motor_input 'rad_s'; raw "
    "sensor-rate IMU samples come from the batch sampler (INS_LOG_BAT_MASK, INS_LOG_BAT_OPT, LOG_BITMASK bit 19 "
    "IMU_RAW; read with --imu-source batch, imu_source='batch' in Python); what to fly: docs/fly-ardupilot.md"
)
_SI = {
    "rad/s": 1.0,
    "deg/s": np.pi / 180.0,
    "m/s/s": 1.0,
    "rpm": 2.0 * np.pi / 60.0,
    "deg": np.pi / 180.0,
    "degheading": np.pi / 180.0,
    "us": 1.0,
    "V": 1.0,
}
#: Multipliers a column may carry (ArduPilot's are positive powers of ten and a few unit factors); a
#: corrupt MULT value (campaign, dataflash input 205301: -inf) would silently scale or flip data.
MULT_RANGE = (1e-12, 1e12)
_DOCUMENTED = {  # units ArduPilot documents by column prefix, for logs too old to carry FMTU
    "IMU": {"Gyr": "rad/s", "Acc": "m/s/s"},
    "RCOU": {"C": "us"},
    "ESC": {"RPM": "rpm"},
    "ATT": {"Roll": "deg", "Pitch": "deg", "Yaw": "deg"},
    "BAT": {"Volt": "V"},
}
#: columns rotorid reads per message ("S" text, "n" number, "a" 32 int16 samples): a FMT
#: without them is corrupt
_NEEDS = {
    "FMTU": {"FmtType": "n", "UnitIds": "S", "MultIds": "S"},
    "PARM": {"Name": "S", "Value": "n"},
    "IMU": {"TimeUS": "n", "I": "n", **{f"{q}{a}": "n" for q in ("Acc", "Gyr") for a in "XYZ"}},
    "ISBH": {"N": "n", "type": "n", "instance": "n", "mul": "n", "SampleUS": "n", "smp_rate": "n"},
    "ISBD": {"N": "n", "seqno": "n", **dict.fromkeys("xyz", "a")},
    "RCOU": {"TimeUS": "n", "C1": "n"},
    "ESC": {"TimeUS": "n", "Instance": "n", "RPM": "n"},
    "ATT": {"TimeUS": "n", "Roll": "n", "Pitch": "n", "Yaw": "n"},
    "BAT": {"TimeUS": "n", "Volt": "n"},
    "CURR": {"TimeUS": "n", "Volt": "n"},
    "SIDS": dict.fromkeys(("TimeUS", "Ax", "Mag", "FSt", "FSp", "TFin", "TC", "TR", "TFout"), "n"),
    "SIDD": dict.fromkeys(("TimeUS", "Time", "Targ"), "n"),
}
#: SIDS column -> the key of `Flight.meta["sid"]` (the settings of ArduPilot's System ID chirp)
_SIDS_KEYS = {"Ax": "axis", "Mag": "magnitude", "FSt": "f_start", "FSp": "f_stop", "TFin": "t_fade_in"}
_SIDS_KEYS |= {"TC": "t_const", "TR": "t_record", "TFout": "t_fade_out"}
#: SIDD.Targ may differ from the chirp rebuilt from SIDS by this share of its magnitude (float32, timing)
SID_MATCH = 0.05
#: one pymavlink index at a time: its C indexer prints to the process's stderr (fd 2), which
#: `_captured_stderr` points at a file while it runs
_FD2 = threading.Lock()


# -- reading ---------------------------------------------------------------------------------
def _dtype(fmt: Any, path: Path) -> np.dtype:
    """numpy dtype of a message payload from its DataFlash format characters."""
    from pymavlink.DFReader import FORMAT_TO_STRUCT

    fields = []
    for col, ch in zip(fmt.columns, fmt.format, strict=False):
        if ch not in FORMAT_TO_STRUCT:
            raise LogFormatError(f"{path}: message {fmt.name} has an unknown format character '{ch}'")
        code = FORMAT_TO_STRUCT[ch][0]
        if ch == "a":  # 32 int16 samples
            fields.append((col, "<i2", (32,)))
        elif code.endswith("s"):
            fields.append((col, f"S{code[:-1]}"))
        else:
            fields.append((col, "<" + code))
    if len(set(fmt.columns)) != len(fmt.columns):
        raise LogFormatError(
            f"{path}: FMT of {fmt.name} names a column twice ({quote(','.join(fmt.columns))}); the log is corrupt"
        )
    dt = np.dtype(fields)
    if len(fmt.columns) != len(fmt.format) or dt.itemsize != fmt.len - HEAD:
        raise LogFormatError(
            f"{path}: FMT of {fmt.name} is inconsistent ({len(fmt.columns)} columns for format '{fmt.format}', "
            f"{dt.itemsize + HEAD} bytes for length {fmt.len}); the log is corrupt"
        )
    return dt


def _indexer() -> type:
    """pymavlink's DataFlash reader without its clock search: rotorid times messages by their
    TimeUS, while DFReader.init_clock parses every message in Python when a log has no GPS
    week (an indoor identification flight), seconds per minute of log."""
    from pymavlink import DFReader

    class Index(DFReader.DFReader_binary):
        def __init__(self, filename: str) -> None:
            try:
                super().__init__(filename, zero_time_base=False)
            except BaseException:  # a corrupt file: pymavlink leaves it open and mapped
                for res in ("data_map", "filehandle"):
                    if hasattr(self, res):
                        getattr(self, res).close()
                raise

        def init_clock(self) -> None:
            self._rewind(keep_messages=True)

    return Index


@contextlib.contextmanager
def _captured_stderr() -> Iterator[io.StringIO]:
    """Everything written to stderr inside the block, by Python or by C code (fd 2)."""
    text = io.StringIO()
    with _FD2, tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            with contextlib.redirect_stderr(text), contextlib.redirect_stdout(text):
                yield text
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text.write(tmp.read().decode("ascii", errors="replace"))


class _Log:
    """One DataFlash file indexed by pymavlink; `table(name)` decodes a message type at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if path.stat().st_size < HEAD:
            raise LogFormatError(f"{path}: too short for a DataFlash log ({path.stat().st_size} bytes)")
        with _captured_stderr() as said, guard.library(path, "pymavlink", what="DataFlash"):
            self._r = _indexer()(str(path))
        #: bytes pymavlink skipped because no message started there (it prints one line each)
        self.skipped = sum(1 for line in said.getvalue().splitlines() if line.startswith("bad header"))
        self.buf = np.frombuffer(self._r.data_map, dtype=np.uint8)
        self.by_name = {f.name: f for t, f in self._r.formats.items() if isinstance(t, int) and t != 0x80}
        ends = [offs[-1] + f.len for t, f in self._r.formats.items() if (offs := self._r.offsets[t])]
        #: end of the last whole message, and whether the file goes on after it (cut mid-message)
        self.whole_end = max((e for e in ends if e <= len(self.buf)), default=0)
        self.cut = bool(ends) and (max(ends) > len(self.buf) or self.whole_end < len(self.buf))
        self._cache: dict[str, np.ndarray] = {}
        self.fmtu: dict[int, tuple[str, str]] = {}
        if "FMTU" in self.by_name:
            fu = self.table("FMTU")
            for row in fu:
                self.fmtu[int(row["FmtType"])] = (_text(row["UnitIds"]), _text(row["MultIds"]))
        self.params: dict[str, float] = {}
        if "PARM" in self.by_name:
            p = self.table("PARM")
            named = zip(p["Name"], _f64(p["Value"]), strict=True)
            self.params = {_text(n): float(v) for n, v in named if np.isfinite(v)}  # a NaN value is no setting

    def __enter__(self) -> _Log:
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the file: pymavlink keeps it open and mapped (decoded tables are copies)."""
        self.buf = np.empty(0, dtype=np.uint8)
        self._r.data_map.close()
        self._r.filehandle.close()

    def has(self, name: str) -> bool:
        """Whether the log holds at least one whole message `name` (a file cut inside the
        only one has none: `table` drops it)."""
        f = self.by_name.get(name)
        offs = self._r.offsets[f.type] if f is not None else []
        return len(offs) > 0 and offs[0] + f.len <= len(self.buf)

    def table(self, name: str) -> np.ndarray:
        """Every whole message `name` as a structured array (raw values)."""
        if name in self._cache:
            return self._cache[name]
        fmt = self.by_name[name]
        dt = _dtype(fmt, self.path)
        for col, kind in _NEEDS.get(name, {}).items():
            if col not in fmt.columns or _kind(dt[col]) != kind:
                what = {"S": "text", "n": "numeric", "a": "sample-array"}[kind]
                raise LogFormatError(
                    f"{self.path}: message {name} has no {what} column {col} "
                    f"(columns {quote(','.join(fmt.columns))}); its FMT definition is corrupt"
                )
        offs = np.asarray(self._r.offsets[fmt.type], dtype=np.int64)
        whole = offs[offs + fmt.len <= len(self.buf)]
        rows = self.buf[whole[:, None] + np.arange(HEAD, fmt.len)]
        rec = np.ascontiguousarray(rows).view(dt).reshape(len(whole))
        self._cache[name] = rec
        return rec

    def scale(self, name: str, col: str) -> tuple[float, str]:
        """(multiplier, unit) of a column from its format character or FMTU/MULT/UNIT."""
        fmt = self.by_name[name]
        i = fmt.columns.index(col)
        units, mults = self.fmtu.get(fmt.type, ("", ""))
        mult = fmt.msg_mults[i]
        if mult is None and i < len(mults):
            m = self._r.mult_lookup.get(mults[i])
            mult = m if m not in (None, 0.0) else None  # '-' (0): no multiplier
        unit = self._r.unit_lookup.get(units[i], "") if i < len(units) else ""
        scale = 1.0 if mult is None else float(mult)
        if not MULT_RANGE[0] <= scale <= MULT_RANGE[1]:  # also NaN
            raise LogFormatError(
                f"{self.path}: {name}.{col} has the multiplier {scale!r} (from the log's MULT/FMTU header), not a "
                f"positive scale within {MULT_RANGE[0]:g}..{MULT_RANGE[1]:g}: the header is corrupt"
            )
        return scale, unit

    def columns(self, name: str, cols: list[str], rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(time s, values (n, k) in SI) of columns sharing one unit, for `rows` (default all)."""
        rec = self.table(name) if rows is None else rows
        scale, unit = self.scale(name, cols[0])
        if not unit:
            unit = next((u for pre, u in _DOCUMENTED.get(name, {}).items() if cols[0].startswith(pre)), "")
        if unit not in _SI:
            raise LogFormatError(f"{self.path}: {name}.{cols[0]} is in {quote(unit)}, which rotorid does not convert")
        t_scale, _ = self.scale(name, "TimeUS")
        t = _f64(rec["TimeUS"]) * (t_scale if t_scale != 1.0 else 1e-6)
        v = np.column_stack([_f64(rec[c]) for c in cols]) * scale * _SI[unit]
        return t, v


def _f64(a: np.ndarray) -> np.ndarray:
    """`a` as float64; a signalling NaN in a float32 field becomes a quiet NaN without numpy's
    warning (the sample is then dropped, with a warning of rotorid's own)."""
    with np.errstate(invalid="ignore"):
        return a.astype(np.float64)


def _kind(dt: np.dtype) -> str:
    """ "a" for a sample array, "S" for text, "n" for a number, "" otherwise."""
    if dt.subdtype is not None:
        return "a"
    return {"S": "S", "i": "n", "u": "n", "f": "n"}.get(dt.kind, "")


def _text(b: bytes) -> str:
    return bytes(b).split(b"\x00", 1)[0].decode("ascii", errors="replace")


def _instances(log: _Log, name: str, col: str) -> np.ndarray:
    """The sensor instances `name`.`col` holds (ArduPilot logs them as a byte); one that is no
    whole number in 0..255 (a corrupt format giving the field a float type: NaN, 1.4e28, found
    by fuzzing) is a format error."""
    ids = np.unique(log.table(name)[col])
    bad = ids[~(np.isfinite(ids) & (ids == np.round(ids)) & (ids >= 0) & (ids <= 255))]
    if bad.size:
        raise LogFormatError(
            f"{log.path}: {name}.{col} (the sensor instance) holds {float(bad[0]):g}, not a whole number in 0..255"
        )
    return ids


def _pick(available: np.ndarray, want: int | None, what: str, path: Path) -> int:
    if want is None:
        return int(available.min())
    if want not in available:
        raise RotoridError(f"{path}: no {what} instance {want}; the log has {', '.join(map(str, available))}")
    return int(want)


def _batch(log: _Log, instance: int, notes: list[str]) -> dict[str, Series]:
    """Sensor-rate samples of one IMU from the batch sampler: each ISBH header (sensor type 0
    accel / 1 gyro, instance, first-sample time SampleUS, rate smp_rate, multiplier mul) owns
    the ISBD messages with its batch number N that follow it; value = raw / mul."""
    if not (log.has("ISBH") and log.has("ISBD")):
        raise RotoridError(f"{log.path}: no batch-sampler data (ISBH/ISBD); {RATE_HINT}")
    hdr, dat = log.table("ISBH"), log.table("ISBD")
    h_off = np.asarray(log._r.offsets[log.by_name["ISBH"].type])[: len(hdr)]
    d_off = np.asarray(log._r.offsets[log.by_name["ISBD"].type])[: len(dat)]
    owner = np.searchsorted(h_off, d_off) - 1
    ok = (owner >= 0) & (hdr["N"][np.maximum(owner, 0)] == dat["N"])
    if not ok.all():
        notes.append(f"ISBD: {int((~ok).sum())} batch messages without their ISBH header dropped")
    owner, dat = owner[ok], dat[ok]
    h = hdr[owner]
    mul, rate = _f64(h["mul"]), _f64(h["smp_rate"])
    if not np.all(np.isfinite(mul) & (mul > 0) & np.isfinite(rate) & (rate > 0)):
        raise LogFormatError(
            f"{log.path}: ISBH has a multiplier or sample rate that is not a positive number; the log is corrupt"
        )
    k = _f64(dat["seqno"])[:, None] * 32 + np.arange(32)
    t = _f64(h["SampleUS"])[:, None] * 1e-6 + k / rate[:, None]
    xyz = np.stack([_f64(dat[c]) for c in ("x", "y", "z")], axis=-1) / mul[:, None, None]
    out: dict[str, Series] = {}
    for sensor, ch in ((0, "acc"), (1, "gyro")):
        sel = (h["type"] == sensor) & (h["instance"] == instance)
        if sel.any():
            s = _finite(
                Series(t[sel].ravel(), frames.frd_to_flu(xyz[sel].reshape(-1, 3))), log.path, f"ISBD -> {ch}", notes
            )
            if s is not None:
                out[ch] = s
    if not out:
        raise RotoridError(f"{log.path}: the batch sampler holds no samples of IMU {instance}")
    return out


def _motor_channels(log: _Log, motors: int | None, notes: list[str]) -> list[int]:
    """RCOU channel numbers (1-based) of the motors, in motor order."""
    rc = log.table("RCOU")
    # outputs are C1, C2, ...: ASCII digits without a leading zero ('C00' would be looked up as 'C0')
    outs = sorted(int(c[1:]) for c in rc.dtype.names if RCOU_OUTPUT.fullmatch(c) and rc.dtype[c].kind in "iuf")
    by_func = sorted(
        (MOTOR_FUNCS[int(log.params.get(f"SERVO{c}_FUNCTION", -1))], c)
        for c in outs
        if int(log.params.get(f"SERVO{c}_FUNCTION", -1)) in MOTOR_FUNCS
    )
    chans = [c for _, c in by_func]
    if not chans:
        chans = [c for c in outs if np.any(rc[f"C{c}"] != 0)]
        notes.append(f"RCOU: no SERVOn_FUNCTION parameters; took the {len(chans)} non-zero outputs as motors")
    if motors is not None:
        if motors > len(chans):
            raise LogFormatError(f"{log.path}: {len(chans)} motor outputs in RCOU, fewer than motors={motors}")
        chans = chans[:motors]
    return chans


def _pwm_range(log: _Log, pwm_range: tuple[float, float] | None) -> tuple[float, float] | None:
    lo, hi = pwm_range if pwm_range is not None else (log.params.get("MOT_PWM_MIN"), log.params.get("MOT_PWM_MAX"))
    if not lo or not hi:  # ArduPilot: 0 = use the throttle channel's range
        lo, hi = log.params.get("RC3_MIN"), log.params.get("RC3_MAX")
    if lo is None or hi is None:
        return None
    if not hi > lo:
        raise LogFormatError(f"{log.path}: the motor PWM range is empty ({lo:g}..{hi:g} µs)")
    return float(lo), float(hi)


def _attitude(log: _Log) -> tuple[np.ndarray, np.ndarray]:
    from scipy.spatial.transform import Rotation

    t, rpy = log.columns("ATT", ["Roll", "Pitch", "Yaw"])
    q_ned = frames.rot_to_quat(Rotation.from_euler("ZYX", rpy[:, ::-1]))
    return t, frames.quat_ned_frd_to_enu_flu(q_ned)


def _finite(s: Series, path: Path, what: str, notes: list[str]) -> Series | None:
    """`s` sorted by time without repeated stamps or samples holding NaN/inf (dropped with a
    warning); None if fewer than two samples are left."""
    if len(s.t) < 2:
        notes.append(f"{what}: fewer than 2 samples; not read")
        return None
    ok = np.isfinite(s.t) & np.all(np.isfinite(s.values.reshape(len(s.t), -1)), axis=1)
    if not ok.all():
        warnings.warn(f"{path}: {what}: dropped {int((~ok).sum())} samples holding NaN/inf", stacklevel=4)
    if ok.sum() < 2:
        notes.append(f"{what}: fewer than 2 finite samples; not read")
        return None
    return _clean(s.t[ok], s.values[ok], notes, what, path)


def _battery(log: _Log, notes: list[str]) -> tuple[np.ndarray, np.ndarray, str] | None:
    """Battery voltage: (time s, V, source) from `BAT.Volt` (V; the lowest instance, others named
    in the notes), else an older log's `CURR.Volt` (int16 V x 100, ArduCopter 3.x Log_Write_Current
    `battery.voltage() * 100`; a float column is V). None when neither message is logged."""
    if log.has("BAT"):
        rows = log.table("BAT")
        inst = next((c for c in ("Inst", "Instance") if c in (rows.dtype.names or ())), None)  # 4.1+, older
        ids = _instances(log, "BAT", inst) if inst else np.array([0])
        t, v = log.columns("BAT", ["Volt"], rows if inst is None else rows[rows[inst] == ids.min()])
        if len(ids) > 1:
            notes.append(f"BAT: batteries {', '.join(map(str, ids))} logged; read instance {int(ids.min())}")
        return t, v[:, 0], "BAT"
    if not log.has("CURR"):
        return None
    rows = log.table("CURR")
    scale, unit = log.scale("CURR", "Volt")
    t_scale, _ = log.scale("CURR", "TimeUS")
    scale = 0.01 if not unit and rows.dtype["Volt"].kind in "iu" and scale == 1.0 else scale
    return _f64(rows["TimeUS"]) * (t_scale if t_scale != 1.0 else 1e-6), _f64(rows["Volt"]) * scale, "CURR"


@register("dataflash", (".bin",), magic=MAGIC)
@guard.reader
def read(
    path: Path,
    imu: int | None = None,
    imu_source: str = "imu",
    motors: int | None = None,
    motor_input: str = "normalized",
    pwm_range: tuple[float, float] | None = None,
    rate: float | None = None,
    allow_corrupt: bool = False,
) -> list[Flight]:
    """An ArduPilot DataFlash log as Flights (FLU/ENU, SI), split at logging drop-outs.

    `imu` picks the IMU instance (default: the lowest logged, ArduPilot's first IMU);
    `imu_source` is "imu" (IMU messages) or "batch" (the batch sampler's sensor-rate samples).
    `motors` fixes the motor count; `motor_input` "normalized" scales RCOU by MOT_PWM_MIN/MAX
    (else RC3_MIN/MAX, else the user's `pwm_range`), "pwm_us" keeps µs. `allow_corrupt` is
    accepted for a uniform reader interface: a cut log always decodes its whole messages.
    """
    path = Path(path)
    if imu_source not in ("imu", "batch"):
        raise RotoridError(f"{path}: imu_source must be 'imu' or 'batch', got {imu_source!r}")
    if motor_input not in ("normalized", "pwm_us"):
        raise RotoridError(f"{path}: motor_input must be 'normalized' or 'pwm_us' for a DataFlash log")
    with _Log(path) as log:
        return _flights(log, imu, imu_source, motors, motor_input, pwm_range, rate)


def _motor_commands(
    log: _Log, chans: list[int], motor_input: str, pwm_range: tuple[float, float] | None
) -> tuple[np.ndarray, np.ndarray, str]:
    """RCOU's motor channels `chans`: time, commands (normalized 0…1 over the PWM range, or raw
    µs when asked or when the range is unknown) and their unit."""
    t, pwm = log.columns("RCOU", [f"C{c}" for c in chans])
    rng = _pwm_range(log, pwm_range) if motor_input == "normalized" else None
    if rng is not None:
        return t, np.clip((pwm - rng[0]) / (rng[1] - rng[0]), 0.0, 1.0), f"normalized (PWM {rng[0]:g}..{rng[1]:g} µs)"
    if motor_input == "normalized":
        warnings.warn(
            f"{log.path}: RCOU is PWM µs and the log has no MOT_PWM_MIN/MAX (or RC3_MIN/MAX) parameters; "
            "kept raw µs — give the range (pwm_range) to get normalized commands",
            stacklevel=5,  # past _flights, read and guard.reader
        )
    return t, pwm, "pwm_us"


def _damage_notes(log: _Log, notes: list[str]) -> None:
    """Note and warn about bytes skipped inside the log and a log cut short mid-message."""
    if log.skipped:
        msg = f"{log.path}: skipped {log.skipped} bytes where no message started (corrupt stretches of the log)"
        notes.append(msg)
        warnings.warn(msg, stacklevel=5)  # past _flights, read and guard.reader
    if log.cut:
        msg = f"{log.path}: the log ends mid-message after byte {log.whole_end} of {len(log.buf)} "
        msg += "(cut short, e.g. power loss); decoded the whole messages before it"
        notes.append(msg)
        warnings.warn(msg, stacklevel=5)  # past _flights, read and guard.reader


def _rotor_speeds(
    log: _Log, chans: list[int], n_motors: int | None, notes: list[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """ESC telemetry rpm of the motor outputs `chans` on the first motor's time stamps (None,
    with a note, when a motor has none). ESC instance i drives output i + 1; without RCOU,
    every ESC instance logged is a motor."""
    esc = log.table("ESC")
    outs = chans or (range(1, n_motors + 1) if n_motors else _instances(log, "ESC", "Instance").astype(int) + 1)
    sel = [esc[esc["Instance"] == c - 1] for c in outs]
    per = [
        _finite(Series(*log.columns("ESC", ["RPM"], r)), log.path, f"ESC {c}", notes)
        for c, r in zip(outs, sel, strict=True)
    ]
    if not all(p is not None for p in per):
        notes.append("ESC: telemetry missing for some motors; rotor_speed not read")
        return None
    return per[0].t, np.column_stack([np.interp(per[0].t, p.t, p.values[:, 0]) for p in per])


def _flights(
    log: _Log,
    imu: int | None,
    imu_source: str,
    motors: int | None,
    motor_input: str,
    pwm_range: tuple[float, float] | None,
    rate: float | None,
) -> list[Flight]:
    """The channels of an indexed log, aligned and split at drop-outs (see `read`)."""
    path = log.path
    notes: list[str] = []
    series: dict[str, Series] = {}
    source: dict[str, str] = {}
    units: dict[str, str] = {}

    def put(ch: str, msg: str, t: np.ndarray, v: np.ndarray) -> None:
        s = _finite(Series(t, v), path, f"{msg} -> {ch}", notes)
        if s is not None:
            series[ch], source[ch] = s, msg

    if imu_source == "batch":
        inst = _pick(_instances(log, "ISBH", "instance") if log.has("ISBH") else np.array([0]), imu, "IMU", path)
        for ch, s in _batch(log, inst, notes).items():
            series[ch], source[ch] = s, "ISBD"
    elif log.has("IMU"):
        inst = _pick(_instances(log, "IMU", "I"), imu, "IMU", path)
        rows = log.table("IMU")
        rows = rows[rows["I"] == inst]
        t, acc = log.columns("IMU", ["AccX", "AccY", "AccZ"], rows)
        put("acc", "IMU", t, frames.frd_to_flu(acc))
        t, gyro = log.columns("IMU", ["GyrX", "GyrY", "GyrZ"], rows)
        put("gyro", "IMU", t, frames.frd_to_flu(gyro))
        notes.append(f"IMU instance {inst} (of {', '.join(map(str, _instances(log, 'IMU', 'I')))})")
    n_motors, chans = motors, []
    if log.has("RCOU"):
        chans = _motor_channels(log, motors, notes)
        if chans:
            t, cmd, units["cmd"] = _motor_commands(log, chans, motor_input, pwm_range)
            put("cmd", "RCOU", t, cmd)
            n_motors = len(chans)
            notes.append(f"RCOU: motors on output channels {chans}")
    if log.has("ESC") and (rpm := _rotor_speeds(log, chans, n_motors, notes)) is not None:
        put("rotor_speed", "ESC", *rpm)
        units["rotor_speed"] = "rad/s (from ESC rpm)"
    if log.has("ATT"):
        put("quat", "ATT", *_attitude(log))
    ok = {ch: s for ch, s in series.items() if len(s.t) >= 2}
    if not ok:
        raise LogFormatError(
            f"{path}: no IMU, RCOU, ESC or ATT messages with at least two samples; check LOG_BITMASK ({RATE_HINT})"
        )
    fast = dict(ok)  # the battery's slow samples are no drop-outs
    if (bat := _battery(log, notes)) and (s := voltage_series(bat[0], bat[1], f"{bat[2]}.Volt", notes, fast)):
        ok["vbat"], source["vbat"], units["vbat"] = s, bat[2], f"V ({bat[2]}.Volt)"
    _damage_notes(log, notes)
    sid = _sid(log, notes)
    meta: dict[str, Any] = {
        "source": str(path),
        "format": "dataflash",
        "topics": {ch: source[ch] for ch in ok},
        "rates": {ch: s.rate for ch, s in ok.items()},
        "rate_hint": RATE_HINT,
        "units": units,
        "notes": notes,
        "params": {
            k: log.params[k] for k in sorted(log.params) if k.startswith(("LOG_", "INS_LOG", "MOT_PWM", "SID_"))
        },
        **({"sid": sid} if sid else {}),
    }
    flight, _ = align(ok, rate=rate or max(s.rate for s in fast.values()), meta=meta)
    return dropouts.split(flight, fast, path)


def _sid(log: _Log, notes: list[str]) -> dict[str, float] | None:
    """ArduPilot's System ID sweep: the SIDS settings, its start (SIDD's TimeUS - Time) and a
    check of SIDD.Targ against the chirp those settings give (`rotorid.signal.sid_chirp`)."""
    if not (log.has("SIDS") and log.has("SIDD")):
        return None
    sids, sidd = log.table("SIDS"), log.table("SIDD")
    if len(sids) > 1:
        notes.append(f"SIDS: {len(sids)} sweeps in the log; the first is read (give a window around each)")
    sid = {key: float(sids[col][0]) for col, key in _SIDS_KEYS.items()}
    t_us = _f64(sidd["TimeUS"]) * 1e-6
    time, targ = _f64(sidd["Time"]), _f64(sidd["Targ"])
    after = t_us >= _f64(sids["TimeUS"][:1])[0] * 1e-6
    if not after.any() or not all(np.isfinite(v) for v in sid.values()) or int(sid["axis"]) not in SID_AXES:
        notes.append("SIDS/SIDD: no usable System ID sweep (axis, settings or data missing)")
        return None
    sid["t_start"] = float(np.median(t_us[after] - time[after]))
    keys = ("magnitude", "f_start", "f_stop", "t_fade_in", "t_const", "t_record", "t_fade_out")
    rebuilt, _ = sid_chirp(t_us[after] - sid["t_start"], *(sid[k] for k in keys))
    miss = float(np.max(np.abs(rebuilt - targ[after]))) / max(abs(sid["magnitude"]), 1e-12)
    if miss > SID_MATCH:
        notes.append(
            f"SIDD.Targ differs from the chirp rebuilt from SIDS by {100 * miss:.0f} % of SID_MAGNITUDE "
            "(a firmware whose chirp differs): the rebuilt chirp is the instrument"
        )
    sid["axis"] = int(sid["axis"])
    notes.append(
        f"SIDS: System ID sweep of {SID_AXES[sid['axis']]} (SID_AXIS {sid['axis']}) from {sid['t_start']:.2f} s"
    )
    return sid


# -- writing ---------------------------------------------------------------------------------
#: name -> (type id, format, columns, unit ids, multiplier ids)
_MSGS = {
    "FMT": (0x80, "BBnNZ", "Type,Length,Name,Format,Columns", None, None),
    "PARM": (64, "QNf", "TimeUS,Name,Value", "s--", "F--"),
    "UNIT": (177, "QbZ", "TimeUS,Id,Label", "s--", "F--"),
    "MULT": (178, "Qbd", "TimeUS,Id,Mult", "s--", "F--"),
    "FMTU": (179, "QBNN", "TimeUS,FmtType,UnitIds,MultIds", "s---", "F---"),
    "IMU": (163, "QBffffffIIfBBHH", "TimeUS,I,GyrX,GyrY,GyrZ,AccX,AccY,AccZ,EG,EA,T,GH,AH,GHz,AHz",
            "s#EEEooo--O--zz", "F-000000-----00"),
    "RCOU": (62, "Q" + "H" * 14, "TimeUS," + ",".join(f"C{i}" for i in range(1, 15)), "s" + "Y" * 14, "F" + "-" * 14),
    "ESC": (86, "QBffffcfcf", "TimeUS,Instance,RPM,RawRPM,Volt,Curr,Temp,CTot,MotTemp,Err",
            "s#qqvAOaO%", "F-00--BCB-"),
    "ATT": (72, "QffffffB", "TimeUS,DesRoll,Roll,DesPitch,Pitch,DesYaw,Yaw,AEKF", "sddddhh-", "F000000-"),
    "SIDD": (206, "Qfffffffff", "TimeUS,Time,Targ,F,Gx,Gy,Gz,Ax,Ay,Az", "ss-zkkkooo", "F---------"),
    "SIDS": (207, "QBfffffff", "TimeUS,Ax,Mag,FSt,FSp,TFin,TC,TR,TFout", "s--ssssss", "F--------"),
    "BAT": (147, "QBfff", "TimeUS,Inst,Volt,VoltR,Curr", "s#vvA", "F-000"),
    "CURR": (148, "Qhhh", "TimeUS,Throttle,Volt,Curr", None, None),  # older: int16 V x 100, no FMTU
}  # fmt: skip
_UNITS = {
    "s": "s", "#": "instance", "-": "", "E": "rad/s", "o": "m/s/s", "O": "degC", "z": "Hz", "Y": "us",
    "q": "rpm", "v": "V", "A": "A", "a": "Ah", "%": "%", "d": "deg", "h": "degheading", "k": "deg/s",
}  # fmt: skip
_MULTS = {"-": 0.0, "0": 1.0, "F": 1e-6, "B": 1e-2, "C": 1e-3}


def _record_dtype(name: str) -> np.dtype:
    from pymavlink.DFReader import FORMAT_TO_STRUCT

    _, fmt, cols, _, _ = _MSGS[name]
    fields = [("h1", "u1"), ("h2", "u1"), ("type", "u1")]
    for col, ch in zip(cols.split(","), fmt, strict=True):
        code = FORMAT_TO_STRUCT[ch][0]
        fields.append((col, f"S{code[:-1]}" if code.endswith("s") else "<" + code))
    return np.dtype(fields)


def _records(name: str, n: int, **values: Any) -> np.ndarray:
    rec = np.zeros(n, dtype=_record_dtype(name))
    rec["h1"], rec["h2"], rec["type"] = MAGIC[0], MAGIC[1], _MSGS[name][0]
    for k, v in values.items():
        rec[k] = v
    return rec


def write(
    flight: Flight,
    path: str | Path,
    pwm: tuple[float, float] = (1000.0, 2000.0),
    rates: dict[str, float] | None = None,
    params: dict[str, float] | None = None,
    battery: str = "BAT",
) -> Path:
    """Write `flight` as an ArduPilot DataFlash log (FRD/NED), atomically: IMU (instance 0,
    float32), SIDS/SIDD when `meta["sid"]` holds a System ID sweep, RCOU (commands 0…1 -> uint16 µs over `pwm`, with
    SERVOn_FUNCTION = Motor n and MOT_PWM_MIN/MAX), ESC (one instance per motor, rpm float32),
    ATT (degrees), the voltage as `battery` "BAT" (V) or "CURR" (older: int16 V·100), with `TimeUS`
    = t·10⁶ rounded to the µs (t >= 0). `rates` decimates messages ({"RCOU": 10.0} as ArduCopter
    logs it; default all). pos, vel, gyro_dot, landed and rad/s commands (a rad_s vehicle's: left
    out with a warning when rotor speeds go to ESC) have no counterpart here."""
    path = Path(path)
    if flight.t[0] < 0:
        raise RotoridError(f"{flight.source}: DataFlash TimeUS cannot be negative (t starts at {flight.t[0]:g} s)")
    cmd = flight.cmd
    if cmd is not None:
        unit = str(flight.meta.get("units", {}).get("cmd", "normalized"))
        if unit.startswith("rad") and flight.rotor_speed is not None:
            warnings.warn(
                f"{flight.source}: DataFlash has no message for motor commands in rad/s (RCOU holds PWM); "
                "wrote the rotor speeds (ESC) without them",
                stacklevel=2,
            )
            cmd = None
        elif not unit.startswith("normalized") or cmd.min() < 0 or cmd.max() > 1:
            raise RotoridError(
                f"{flight.source}: DataFlash RCOU holds PWM; these motor commands are not normalized 0…1 ({unit}); "
                "write a ULog or Parquet file instead"
            )
    if cmd is not None and cmd.shape[1] > 12:
        raise RotoridError(f"{flight.source}: {cmd.shape[1]} motors; ArduPilot drives at most 12")
    t_us = np.rint(flight.t * 1e6).astype(np.uint64)
    n = len(t_us)

    def keep(msg: str) -> np.ndarray:
        step = max(1, round(flight.rate / rates[msg])) if rates and msg in rates else 1
        return np.arange(0, n, step)

    data: list[np.ndarray] = []
    if flight.acc is not None or flight.gyro is not None:
        i = keep("IMU")
        acc = frames.flu_to_frd(flight.acc[i]) if flight.acc is not None else np.zeros((len(i), 3))
        gyro = frames.flu_to_frd(flight.gyro[i]) if flight.gyro is not None else np.zeros((len(i), 3))
        hz = round(flight.rate)
        imu = {f"Gyr{a}": gyro[:, k] for k, a in enumerate("XYZ")} | {f"Acc{a}": acc[:, k] for k, a in enumerate("XYZ")}
        data.append(_records("IMU", len(i), TimeUS=t_us[i], T=25.0, GH=1, AH=1, GHz=hz, AHz=hz, **imu))
    m = flight.n_motors
    if cmd is not None:
        i = keep("RCOU")
        us = np.rint(pwm[0] + cmd[i] * (pwm[1] - pwm[0]))
        data.append(_records("RCOU", len(i), TimeUS=t_us[i], **{f"C{k + 1}": us[:, k] for k in range(m)}))
    if flight.rotor_speed is not None:
        i = keep("ESC")
        rpm = flight.rotor_speed[i] * 60.0 / (2.0 * np.pi)
        for k in range(flight.rotor_speed.shape[1]):
            data.append(_records("ESC", len(i), TimeUS=t_us[i], Instance=k, RPM=rpm[:, k], RawRPM=rpm[:, k]))
    if flight.quat is not None:
        i = keep("ATT")
        ypr = np.degrees(frames.quat_to_rot(frames.quat_enu_flu_to_ned_frd(flight.quat[i])).as_euler("ZYX"))
        yaw = np.mod(ypr[:, 0], 360.0)
        data.append(_records("ATT", len(i), TimeUS=t_us[i], Roll=ypr[:, 2], Pitch=ypr[:, 1], Yaw=yaw, DesYaw=yaw))
    if flight.vbat is not None:
        v, i = flight.vbat[keep(battery)], keep(battery)
        data.append(_records(battery, len(i), TimeUS=t_us[i], Volt=np.rint(100 * v) if battery == "CURR" else v))
    sid = flight.meta.get("sid")
    if sid and sid.get("firmware") != "betaflight" and flight.acc is not None and flight.gyro is not None:
        data += _sid_records(flight, sid, t_us)
    if not data:
        raise RotoridError(f"{flight.source}: the flight has no channel a DataFlash log can hold")
    all_params: dict[str, float] = {"LOG_BITMASK": LOG_BITMASK_FAST}
    if cmd is not None:
        all_params |= {"MOT_PWM_MIN": pwm[0], "MOT_PWM_MAX": pwm[1]}
        all_params |= {f"SERVO{k + 1}_FUNCTION": 33 + k if k < 8 else 74 + k for k in range(m)}
    all_params |= params or {}
    atomic_write_bytes(path, b"".join(h.tobytes() for h in _header(all_params)) + _time_ordered(data))
    return path


def _sid_records(flight: Flight, sid: dict[str, float], t_us: np.ndarray) -> list[np.ndarray]:
    """SIDS once at the sweep's start and SIDD at every sample of the sweep, as ArduCopter's
    System ID mode logs them (Targ the chirp, F its frequency, G deg/s and A m/s² in FRD)."""
    keys = ("magnitude", "f_start", "f_stop", "t_fade_in", "t_const", "t_record", "t_fade_out")
    t0 = float(sid["t_start"])
    i = np.flatnonzero((flight.t >= t0) & (flight.t <= t0 + float(sid["t_record"])))
    targ, freq = sid_chirp(flight.t[i] - t0, *(float(sid[k]) for k in keys))
    gyro, acc = np.degrees(frames.flu_to_frd(flight.gyro[i])), frames.flu_to_frd(flight.acc[i])
    cols = {f"G{a}": gyro[:, k] for k, a in enumerate("xyz")} | {f"A{a}": acc[:, k] for k, a in enumerate("xyz")}
    sidd = _records("SIDD", len(i), TimeUS=t_us[i], Time=flight.t[i] - t0, Targ=targ, F=freq, **cols)
    start = {col: float(sid[key]) for col, key in _SIDS_KEYS.items()}
    sids = _records("SIDS", 1, TimeUS=np.rint(t0 * 1e6).astype(np.uint64), **start)
    return [sids, sidd]


def _header(params: dict[str, float]) -> list[np.ndarray]:
    """The log's header records: FMT, UNIT, MULT, FMTU and the PARM values `params`."""
    head = [_fmt_records()]
    head.append(_records("UNIT", len(_UNITS), Id=[ord(k) for k in _UNITS], Label=[v.encode() for v in _UNITS.values()]))
    head.append(_records("MULT", len(_MULTS), Id=[ord(k) for k in _MULTS], Mult=list(_MULTS.values())))
    named = [k for k, v in _MSGS.items() if v[3] is not None]
    head.append(
        _records(
            "FMTU",
            len(named),
            FmtType=[_MSGS[k][0] for k in named],
            UnitIds=[_MSGS[k][3].encode() for k in named],
            MultIds=[_MSGS[k][4].encode() for k in named],
        )
    )
    head.append(_records("PARM", len(params), Name=[k.encode() for k in params], Value=list(params.values())))
    return head


def _time_ordered(data: list[np.ndarray]) -> bytes:
    """The records of every message in time order, as ArduPilot's logger writes them
    (stable: IMU before RCOU at one time)."""
    ts = np.concatenate([d["TimeUS"] for d in data])
    blobs = [d.view(np.uint8).reshape(len(d), d.dtype.itemsize) for d in data]
    sizes = np.concatenate([np.full(len(d), d.dtype.itemsize) for d in data])
    order = np.argsort(ts, kind="stable")
    offsets = np.empty(len(ts), dtype=np.int64)
    offsets[order] = np.concatenate([[0], np.cumsum(sizes[order])[:-1]])
    body = np.empty(int(sizes.sum()), dtype=np.uint8)
    start = 0
    for rows in blobs:
        o = offsets[start : start + len(rows)]
        body[o[:, None] + np.arange(rows.shape[1])] = rows
        start += len(rows)
    return body.tobytes()


def _fmt_records() -> np.ndarray:
    """FMT messages defining every message this writer uses (FMT itself first)."""
    names = list(_MSGS)
    return _records(
        "FMT",
        len(names),
        Type=[_MSGS[k][0] for k in names],
        Length=[_record_dtype(k).itemsize for k in names],
        Name=[k.encode() for k in names],
        Format=[_MSGS[k][1].encode() for k in names],
        Columns=[_MSGS[k][2].encode() for k in names],
    )
