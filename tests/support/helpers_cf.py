"""A synthetic Crazyflie uSD-log writer for tests (FORMATS.md, versions 1 and 2): an
independent encoder (struct per event) to check the vectorized decoder against."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

#: (event id, event name, [(variable name, struct letter)])
EventDef = tuple[int, str, Sequence[tuple[str, str]]]
#: (event id, timestamp in file units (ms for v1, µs for v2), variable values)
Event = tuple[int, int, Sequence[float | int]]


def header(types: Sequence[EventDef], version: int = 2, magic: bytes = b"\xbc") -> bytes:
    out = magic + struct.pack("<HH", version, len(types))
    for eid, name, variables in types:
        out += struct.pack("<H", eid) + name.encode() + b"\0" + struct.pack("<H", len(variables))
        out += b"".join(f"{v}({letter})".encode() + b"\0" for v, letter in variables)
    return out


def event(types: Sequence[EventDef], ev: Event, version: int = 2) -> bytes:
    eid, ts, values = ev
    letters = "".join(letter for _, letter in dict((d[0], d[2]) for d in types)[eid])
    return struct.pack("<H" + ("I" if version == 1 else "Q") + letters, eid, ts, *values)


def log_bytes(
    types: Sequence[EventDef], events: Sequence[Event], version: int = 2, tail: bytes = b"", crc: bool = True
) -> bytes:
    """A complete log: header, events, `tail` (stray bytes), then the CRC-32 of it all."""
    body = header(types, version) + b"".join(event(types, e, version) for e in events) + tail
    return body + struct.pack("<I", zlib.crc32(body)) if crc else body


CF_TYPE: EventDef = (
    0,
    "fixedFrequency",
    [(f"acc.{a}", "f") for a in "xyz"]
    + [(f"gyro.{a}", "f") for a in "xyz"]
    + [(f"motor.m{i}", "I") for i in range(1, 5)],
)


def fixed_frequency(n: int, version: int = 2, rate: float = 1000.0, t0: float = 1.0) -> tuple[bytes, list[Event]]:
    """A log shaped like the real ones: one event type, acc ≈ 1 g up, small gyro, PWM motors."""
    scale = 1e3 if version == 1 else 1e6
    events = [
        (
            0,
            round((t0 + k / rate) * scale),
            [0.01 * (k % 7), -0.02, 1.0, 0.5 * (k % 3), 1.5, -2.0, *(20000 + 10 * k + j for j in range(4))],
        )
        for k in range(n)
    ]
    return log_bytes([CF_TYPE], events, version), events


def firmware_log(
    flight,
    states: dict,
    omega_max: float = 2500.0,
    k_omega: float | None = None,
    dropouts: Sequence[int] = (),
    vbat: tuple[float, float] = (4.1, 3.7),
    mocap_rate: float = 100.0,
    pwm_only: bool = False,
) -> bytes:
    """A simulated flight as the Crazyflie firmware logs it (version 2): one 1 kHz event
    `fixedFrequency` with `acc.*` (g), `gyro.*` (deg/s), `motor.m*` (0..65535; with `pwm_only`
    `pwm.m*_pwm` instead), `rpm.m*` (RPM deck, rev/min as uint16: ω = √(thrust / k_omega) when
    `k_omega` is given, so thrust = k ω², else `omega_max` × the rotor state), `pm.vbatMV`
    (falling linearly from vbat[0] to vbat[1] V), `stateEstimate.*` and a setpoint
    `ctrltarget.roll`; and an event `estPose` at `mocap_rate` with the external pose `locSrv.*`.
    RPM samples at the indices `dropouts` read 0 on motor 2 (the deck's drop-out)."""
    import numpy as np

    motor = "pwm.m{}_pwm" if pwm_only else "motor.m{}"
    ff_vars = (
        [(f"acc.{a}", "f") for a in "xyz"]
        + [(f"gyro.{a}", "f") for a in "xyz"]
        + [(motor.format(i), "H") for i in range(1, 5)]
        + [(f"rpm.m{i}", "H") for i in range(1, 5)]
        + [("pm.vbatMV", "H")]
        + [(f"stateEstimate.{c}", "f") for c in ("x", "y", "z", "vx", "vy", "vz", "qx", "qy", "qz", "qw")]
        + [("ctrltarget.roll", "f")]
    )
    pose_vars = [(f"locSrv.{c}", "f") for c in ("x", "y", "z", "qx", "qy", "qz", "qw")]
    types = [(0, "fixedFrequency", ff_vars), (1, "estPose", pose_vars)]
    n = len(flight.t)
    omega = np.sqrt(np.maximum(states["thrust"], 0.0) / k_omega) if k_omega else omega_max * states["u"]
    rpm = np.clip(np.round(omega * 60.0 / (2.0 * np.pi)), 0, 65535)
    rpm[np.asarray(dropouts, dtype=int), 1] = 0
    cols = np.column_stack(
        [
            flight.acc / 9.80665,
            np.degrees(flight.gyro),
            np.clip(np.round(flight.cmd * 65536.0), 0, 65535),
            rpm,
            np.round(1000.0 * np.linspace(vbat[0], vbat[1], n)),
            states["pos"],
            states["vel_com"],
            states["quat"][:, [1, 2, 3, 0]],
            np.zeros(n),
        ]
    )
    us = np.round(flight.t * 1e6).astype(np.int64)
    events = [
        (0, int(us[k]), [int(x) if ff_vars[j][1] == "H" else float(x) for j, x in enumerate(cols[k])]) for k in range(n)
    ]
    step = max(1, round(flight.rate / mocap_rate))
    pose = np.column_stack([states["pos"], states["quat"][:, [1, 2, 3, 0]]])
    events += [(1, int(us[k]) + 1, pose[k].tolist()) for k in range(0, n, step)]
    events.sort(key=lambda e: e[1])
    return log_bytes(types, events)
