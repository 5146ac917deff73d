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
