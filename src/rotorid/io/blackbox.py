"""Betaflight / Cleanflight / INAV blackbox logs (`.bbl`, `.bfl`) through orangebox, the
Python port of the community's blackbox decoder (FORMATS.md).

Axes: Cleanflight and Betaflight align the accelerometer (and gyro) X forward, Y left, Z up
(betaflight src/main/flight/imu.c), i.e. FLU; the fixtures confirm it (accSmooth ≈ +1 g on z,
angular accelerations follow the motor differentials of Betaflight's quad-X order with FLU
signs, tests/test_io_blackbox.py). INAV documents another convention (X forward, Y right,
Z up, same file) that no fixture lets rotorid confirm, so INAV logs are refused rather than
read with a guessed sign. So:
`gyroADC` · gyro_scale is deg/s (Cleanflight-family scale; blackbox-log-viewer converts the
same way) -> rad/s; `accSmooth` / acc_1G is g -> m/s²; `motor[i]` over the header's
`motorOutput` min..max -> 0…1; `eRPM[i]` (electrical rpm/100, bidirectional DShot) -> rotor
rad/s with `motor_poles`; `time` µs -> s since the flight controller started.

Each log section of a file (one per arming with several flights on one card) is one Flight
(more if logging paused inside it). P frames before the first I frame of a section cannot be
decoded and are dropped, as every blackbox decoder does.
"""

from __future__ import annotations

import logging
import operator
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

MAGIC = b"H Product:Blackbox"
RATE_HINT = (
    "log it faster: in the Betaflight CLI `set blackbox_sample_rate = 1/1` (Betaflight 3.x-4.0: "
    "`set blackbox_p_ratio = 32`) so gyro and motors are logged at the PID loop rate, and for rotor speed "
    "`set dshot_bidir = ON` with `motor_poles` set to the motors' magnet count"
)
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
    return scale


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


def _section(parser: Any, index: int, path: Path) -> tuple[dict[str, Any], list[str], list[tuple], str | None]:
    """Headers, field names and decoded main frames of log section `index` (from its first I
    frame), plus why decoding stopped early (None if the section ended cleanly)."""
    parser.set_log_index(index)
    headers = dict(parser.headers)
    _check_intervals(headers)
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
    firmware = f"{headers.get('Firmware type', '')} {headers.get('Firmware revision', '')}"
    if "inav" in firmware.lower():
        raise LogFormatError(
            f"{path}: an INAV log ({quote(firmware.strip())}): INAV's body axes (X forward, Y right, Z up) differ "
            "from Betaflight's and no INAV log has confirmed how its blackbox signs them, so rotorid does not "
            "read INAV yet; convert the log to CSV with FLU axes (FORMATS.md) after checking the signs"
        )
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
        if one_g > 0:
            series["acc"] = Series(t, col(acc_f) / one_g * frames.GRAVITY)
        else:
            notes.append("accSmooth present but the header has no acc_1G: acc not read")
    motor_f = _indexed(names, "motor")
    if motor_f:
        lo, hi = _motor_range(headers, path)
        series["cmd"] = Series(t, np.clip((col(motor_f) - lo) / (hi - lo), 0.0, 1.0))
        units["cmd"] = f"normalized (motorOutput {lo:g}..{hi:g})"
    erpm_f = _indexed(names, "eRPM")
    if erpm_f:
        poles = motor_poles or int(_number(headers, "motor_poles", path) or 0)
        if poles > 0:
            rpm = col(erpm_f) * 100.0 / (poles / 2.0)
            series["rotor_speed"] = Series(t, rpm * 2.0 * np.pi / 60.0)
            units["rotor_speed"] = f"rad/s (from eRPM, {poles} motor poles)"
        else:
            warnings.warn(
                f"{path}: eRPM logged but motor_poles unknown; give motor_poles= to read rotor speed", stacklevel=4
            )
    for ch, s in list(series.items()):
        ok = np.all(np.isfinite(s.values), axis=1)
        if not ok.all():
            notes.append(f"log {index}: {ch}: dropped {int((~ok).sum())} frames with non-numeric values")
            series[ch] = Series(s.t[ok], s.values[ok])
    facts = {k: headers[k] for k in _HEADER_FACTS if k in headers}
    if "gyro_scale" in headers:
        facts["gyro_scale"] = _float_bits(headers, "gyro_scale", path)
    meta = {"log_index": index, "header": facts, "units": units, "notes": notes}
    return series, meta


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
            "rate_hint": RATE_HINT,
        }
        meta["notes"] += skipped
        flight, _ = align(series, rate=rate or max(s.rate for s in series.values()), meta=meta)
        flights += dropouts.split(flight, series, path)
    if not flights:
        raise LogFormatError(f"{path}: no flight data in {n_logs} log section(s): {'; '.join(skipped)}")
    if skipped:
        warnings.warn(f"{path}: skipped {'; '.join(skipped)}", stacklevel=3)
    return flights
