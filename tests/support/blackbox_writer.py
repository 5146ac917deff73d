"""A minimal Betaflight blackbox encoder for tests: a header and intra (I) frames only.

What orangebox (and the firmware's own decoder) need to read it back: the `H Product:Blackbox…`
line the log sections are found by, `H Data version:2`, `H I interval:1` and `H P interval:1/1`
(every loop iteration an I frame), the four `H Field I` lines (name, signed, predictor 0 =
the value itself, encoding 0 signed / 1 unsigned variable-byte), a `loopIteration` and a
`time` field that both advance, and an end-of-log event (`E` 0xFF "End of log\\0") after the
last frame: orangebox yields a frame only once it sees the next frame's marker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rotorid import frames
from rotorid.flight import Flight

#: Betaflight 4.x's motor output range with DShot (motorOutput header).
MOTOR_RANGE = (48, 2047)
#: Accelerometer counts per g (a 16 g range sensor, as Betaflight logs acc_1G).
ACC_1G = 2048
#: Variable-byte encoding: 7 bits per byte, at most 5 bytes for 32 bits.
_VB_BYTES = 5


def _varbytes(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, keep) for unsigned 32-bit values `u` (any shape): each value's five candidate
    bytes, least significant 7 bits first with the continuation bit set on all but the last,
    and which of them the encoding keeps."""
    u = np.asarray(u, dtype=np.uint64) & 0xFFFFFFFF
    k = np.arange(_VB_BYTES)
    chunks = (u[..., None] >> (7 * k).astype(np.uint64)) & 0x7F
    n = 1 + np.sum(u[..., None] >= (np.uint64(1) << (7 * k[1:]).astype(np.uint64)), axis=-1)  # bytes used
    more = k < (n[..., None] - 1)
    return (chunks | np.where(more, np.uint64(0x80), np.uint64(0))).astype(np.uint8), k < n[..., None]


def encode(path: Path, fields: dict[str, np.ndarray], signed: dict[str, bool], headers: dict[str, str]) -> Path:
    """Write integer columns `fields` (name -> (N,) ints; `loopIteration` and `time` first)
    as a one-section blackbox log with the extra header lines `headers`."""
    names = list(fields)
    lines = [
        "Product:Blackbox flight data recorder by Nicholas Sherlock",
        "Data version:2",
        "I interval:1",
        "P interval:1/1",
        f"Field I name:{','.join(names)}",
        f"Field I signed:{','.join(str(int(signed[n])) for n in names)}",
        f"Field I predictor:{','.join('0' for _ in names)}",
        f"Field I encoding:{','.join('0' if signed[n] else '1' for n in names)}",
        *(f"{k}:{v}" for k, v in headers.items()),
    ]
    cols = []
    for n in names:
        v = np.asarray(fields[n], dtype=np.int64)
        cols.append(((v << 1) ^ (v >> 63)) & 0xFFFFFFFF if signed[n] else v)  # zig-zag for the signed
    body, keep = _varbytes(np.stack(cols, axis=1))
    rows = body.reshape(len(body), -1)
    keep = keep.reshape(len(body), -1)
    marker = np.full((len(rows), 1), ord("I"), dtype=np.uint8)
    frames = np.concatenate([marker, rows], axis=1)[np.concatenate([np.ones((len(rows), 1), bool), keep], axis=1)]
    head = "".join(f"H {line}\n" for line in lines).encode()
    path.write_bytes(head + frames.tobytes() + b"E\xffEnd of log\x00")
    return path


def write_flight(
    path: Path, flight: Flight, headers: dict[str, str] | None = None, debug: np.ndarray | None = None
) -> Path:
    """`flight` (FLU, SI; gyro, acc and cmd) as Betaflight logs it: gyroADC in deg/s
    (gyro_scale 1.0), accSmooth in counts of `ACC_1G`, motor[] over `MOTOR_RANGE`, and the
    eight debug[] fields (`debug`, (N, 8) ints, default zeros)."""
    n = len(flight.t)
    lo, hi = MOTOR_RANGE
    fields: dict[str, np.ndarray] = {
        "loopIteration": np.arange(n),
        "time": np.rint((flight.t - flight.t[0]) * 1e6).astype(np.int64) + 1_000_000,
    }
    fields |= {f"gyroADC[{i}]": np.rint(np.degrees(flight.gyro[:, i])) for i in range(3)}
    fields |= {f"accSmooth[{i}]": np.rint(flight.acc[:, i] / frames.GRAVITY * ACC_1G) for i in range(3)}
    fields |= {f"motor[{i}]": np.rint(lo + flight.cmd[:, i] * (hi - lo)) for i in range(flight.cmd.shape[1])}
    dbg = np.zeros((n, 8), dtype=np.int64) if debug is None else debug
    fields |= {f"debug[{i}]": dbg[:, i] for i in range(8)}
    signed = {k: k not in ("loopIteration", "time") and not k.startswith("motor") for k in fields}
    base = {
        "Firmware type": "Cleanflight",
        "Firmware revision": "Betaflight 2025.12.1 (test) STM32H743",
        "looptime": str(round(1e6 / flight.rate)),
        "gyro_scale": "0x3f800000",
        "acc_1G": str(ACC_1G),
        "motorOutput": f"{lo},{hi}",
        "debug_mode": "0",
    }
    return encode(path, fields, signed, base | (headers or {}))
