"""Crazyflie uSD-log decoder: real logs, every kind of bad input, and an exact round trip
against an independent struct-based writer (tests/support/helpers_cf.py)."""

from __future__ import annotations

import itertools
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rotorid.errors import LogFormatError, WindowError
from rotorid.io import crazyflie, load, read
from support.helpers_cf import CF_TYPE, event, fixed_frequency, header, log_bytes

_counter = itertools.count()


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cf")


def put(folder: Path, data: bytes) -> Path:
    p = folder / f"log{next(_counter)}.bin"
    p.write_bytes(data)
    return p


# -- real logs ------------------------------------------------------------------------------
def test_log10_samples_and_rate(cf_logs: dict[str, Path]) -> None:
    (f,) = read(cf_logs["log10"])
    assert f.meta["format"] == "crazyflie-v2"
    assert 50_400 <= len(f.t) <= 50_600
    assert f.rate == pytest.approx(1011, abs=2)
    assert f.channels == ["acc", "gyro", "cmd"]
    assert f.cmd.shape == (len(f.t), 4)


def test_log15_at_rest_reads_one_g_in_si(cf_logs: dict[str, Path]) -> None:
    (f,) = read(cf_logs["log15"])
    rest = f.t < f.t[0] + 1.0
    acc = f.acc[rest].mean(axis=0)
    assert np.linalg.norm(acc) == pytest.approx(9.81, abs=0.03)  # 1 g, in m/s^2
    assert acc[2] > 9.7  # z up (FLU)
    assert np.abs(f.gyro[rest]).mean() < 0.05  # rad/s, not deg/s
    assert f.cmd.min() >= 0.0 and f.cmd.max() < 1.0  # PWM/65536
    assert f.cmd.max() > 0.5  # it flew


def test_real_logs_gyro_is_rad_s(cf_logs: dict[str, Path]) -> None:
    (f,) = read(cf_logs["log15"])
    # roll/pitch excitation reaches a few rad/s; in deg/s it would be hundreds
    assert 1.0 < np.abs(f.gyro).max() < 35.0  # the sensor saturates at 2000 deg/s = 34.9 rad/s


# -- bad input ------------------------------------------------------------------------------
def test_empty_file(scratch: Path) -> None:
    with pytest.raises(LogFormatError, match="empty"):
        read(put(scratch, b""))


def test_wrong_magic(scratch: Path) -> None:
    data, _ = fixed_frequency(5)
    with pytest.raises(LogFormatError, match="wrong magic byte 0xbd, a Crazyflie uSD log starts with 0xBC"):
        read(put(scratch, b"\xbd" + data[1:]))  # .bin: the Crazyflie reader by suffix
    other = scratch / "log.dat"
    other.write_bytes(b"\xbd" + data[1:])
    with pytest.raises(LogFormatError, match=r"unknown log format \(first bytes bd02"):
        read(other)


def test_unknown_version(scratch: Path) -> None:
    data, _ = fixed_frequency(5)
    bad = data[:1] + struct.pack("<H", 3) + data[3:]
    with pytest.raises(LogFormatError, match="unknown Crazyflie log version 3"):
        read(put(scratch, bad))


def test_truncated_file_is_a_crc_error_and_allow_corrupt_decodes_the_prefix(scratch: Path) -> None:
    data, events = fixed_frequency(50)
    rec = len(event([CF_TYPE], events[0]))
    cut = len(header([CF_TYPE])) + 30 * rec + rec // 2  # mid-event 31, CRC gone
    p = put(scratch, data[:cut])
    with pytest.raises(LogFormatError, match="CRC-32 mismatch"):
        read(p)
    with pytest.warns(UserWarning, match="CRC-32 mismatch"):
        (f,) = read(p, allow_corrupt=True)
    assert len(f.t) == 30
    assert f.cmd[-1, 0] == events[29][2][6] / 65536.0


def test_truncated_mid_event_with_valid_crc(scratch: Path) -> None:
    _, events = fixed_frequency(10)
    p = put(scratch, log_bytes([CF_TYPE], events, tail=b"\x00\x00\x07"))
    with pytest.raises(LogFormatError, match=r"truncated mid-event \(3 stray bytes after 10 events\)"):
        read(p)
    with pytest.warns(UserWarning, match="decoded the 10 whole events"):
        (f,) = read(p, allow_corrupt=True)
    assert len(f.t) == 10


def test_crc_mismatch_error_and_allow_corrupt(scratch: Path) -> None:
    data, events = fixed_frequency(20)
    bad = bytearray(data)
    bad[-1] ^= 0xFF  # corrupt the stored CRC only: every event is intact
    p = put(scratch, bytes(bad))
    with pytest.raises(LogFormatError, match=r"CRC-32 mismatch.*--allow-corrupt"):
        read(p)
    with pytest.warns(UserWarning, match="CRC-32"):
        (f,) = read(p, allow_corrupt=True)
    assert len(f.t) == 20
    assert f.t[-1] == pytest.approx(events[-1][1] * 1e-6, abs=1e-12)


def test_undefined_event_id_single_type(scratch: Path) -> None:
    _, events = fixed_frequency(10)
    events[6] = (9, *events[6][1:])
    body = header([CF_TYPE]) + b"".join(
        event([CF_TYPE, (9, "x", CF_TYPE[2])], e) for e in events
    )  # id 9 is not declared in the header
    p = put(scratch, body + struct.pack("<I", zlib.crc32(body)))
    with pytest.raises(LogFormatError, match="undefined event id 9 at event 6"):
        read(p)
    with pytest.warns(UserWarning, match="undefined event id 9 at event 6; decoded the events before it"):
        (f,) = read(p, allow_corrupt=True)
    assert len(f.t) == 6


TWO = [(1, "imu", [("acc.x", "f"), ("acc.y", "f"), ("acc.z", "f")]), (2, "motors", [("motor.m1", "H")])]


@pytest.mark.parametrize("tail", [b"\x01", b"\x01\x00\x05\x00"])  # a lone byte; an 'imu' event cut short
def test_truncated_mid_event_several_types(scratch: Path, tail: bytes) -> None:
    events = [(1, 1000 * k, [0.0, 0.0, 1.0]) if k % 2 else (2, 1000 * k, [k]) for k in range(1, 9)]
    p = put(scratch, log_bytes(TWO, events, tail=tail))
    with pytest.raises(LogFormatError, match="truncated mid-event at the end of the file"):
        read(p)
    _, ev = crazyflie.decode(p, allow_corrupt=True)
    assert (len(ev["imu"]["t"]), len(ev["motors"]["t"])) == (4, 4)


def test_undefined_event_id_several_types(scratch: Path) -> None:
    events = [(1, 1000 * k, [0.0, 0.0, 1.0]) if k % 2 else (2, 1000 * k, [k]) for k in range(1, 20)]
    defs = [*TWO, (7, "ghost", [("v", "f")])]
    body = header(TWO) + b"".join(event(defs, e) for e in events[:8]) + event(defs, (7, 9000, [1.0]))
    body += b"".join(event(defs, e) for e in events[8:])
    p = put(scratch, body + struct.pack("<I", zlib.crc32(body)))
    start = len(header(TWO)) + sum(len(event(defs, e)) for e in events[:8])
    with pytest.raises(LogFormatError, match=f"undefined event id 7 at byte {start - len(header(TWO))}"):
        read(p)
    with pytest.warns(UserWarning, match="undefined event id"):
        _, ev = crazyflie.decode(p, allow_corrupt=True)
    assert len(ev["imu"]["t"]) + len(ev["motors"]["t"]) == 8


def test_unknown_type_letter(scratch: Path) -> None:
    defs = [(0, "e", [("acc.x", "z")])]
    p = put(scratch, header(defs) + struct.pack("<I", 0))
    with pytest.raises(LogFormatError, match=r"variable 'acc.x\(z\)' has an unknown type"):
        read(p)


def test_header_without_types_and_duplicated_ids(scratch: Path) -> None:
    p = put(scratch, log_bytes([], []))
    with pytest.raises(LogFormatError, match="declares no event types"):
        read(p)
    p = put(scratch, log_bytes([(1, "a", [("x", "f")]), (1, "b", [("y", "f")])], []))
    with pytest.raises(LogFormatError, match="event id 1 is defined twice"):
        read(p)


def test_no_events(scratch: Path) -> None:
    with pytest.raises(LogFormatError, match="no events after its header"):
        read(put(scratch, log_bytes([CF_TYPE], [])))


@pytest.mark.parametrize(("ts7", "what"), [(6, "repeat"), (3, "go backwards")])
def test_non_monotonic_time_stamps(scratch: Path, ts7: int, what: str) -> None:
    _, events = fixed_frequency(12, version=1)
    events = [(0, k, v) for k, (_, _, v) in enumerate(events)]
    events[7] = (0, ts7, events[7][2])
    p = put(scratch, log_bytes([CF_TYPE], events, version=1))
    with pytest.raises(LogFormatError, match=f"time stamps {what} at event 7 .*--allow-corrupt"):
        read(p)
    with pytest.warns(UserWarning, match=what):
        (f,) = read(p, allow_corrupt=True)
    np.testing.assert_array_equal(f.t, np.arange(7) * 1e-3)


def test_nan_and_inf_samples_split_the_log(scratch: Path) -> None:
    _, events = fixed_frequency(100, rate=100.0, t0=0.0)
    events[40][2][0] = float("nan")
    events[41][2][4] = float("inf")
    p = put(scratch, log_bytes([CF_TYPE], events))
    with pytest.warns(UserWarning, match=r"2 samples hold NaN/inf \(first at t = 0.400000 s\)"):
        flights = read(p)
    assert [len(f.t) for f in flights] == [40, 58]
    assert all(np.isfinite(f.acc).all() and np.isfinite(f.gyro).all() for f in flights)
    with pytest.warns(UserWarning):
        (w,) = load(f"{p}@0.5:0.9")
    assert w.t[0] == pytest.approx(0.5) and w.t[-1] == pytest.approx(0.9)
    with pytest.warns(UserWarning):
        a, b = load(f"{p}@0.205:0.6")  # straddles the dropped samples: one part per piece
    assert (a.t[0], a.t[-1], b.t[0], b.t[-1]) == pytest.approx((0.21, 0.39, 0.42, 0.6))
    with pytest.warns(UserWarning), pytest.raises(WindowError, match="lies outside the log"):
        load(f"{p}@0.5:1.5")


# -- exact round trip against the independent writer ------------------------------------------
LETTERS = {
    "f": st.floats(width=32, allow_nan=False, allow_infinity=False),
    "d": st.floats(allow_nan=False, allow_infinity=False),
    "I": st.integers(0, 2**32 - 1),
    "i": st.integers(-(2**31), 2**31 - 1),
    "H": st.integers(0, 2**16 - 1),
    "h": st.integers(-(2**15), 2**15 - 1),
    "B": st.integers(0, 255),
    "b": st.integers(-128, 127),
    "q": st.integers(-(2**63), 2**63 - 1),
}


@st.composite
def logs(draw: st.DrawFn, max_types: int) -> tuple[int, list, list]:
    version = draw(st.sampled_from([1, 2]))
    n_types = draw(st.integers(1, max_types))
    ids = draw(
        st.lists(st.sampled_from([0, 1, 2, 3, 0x0100, 0x0201, 0xFFFF]), min_size=n_types, max_size=n_types, unique=True)
    )
    types = []
    for k, eid in enumerate(ids):
        letters = draw(st.lists(st.sampled_from(sorted(LETTERS)), max_size=4))
        types.append((eid, f"ev{k}", [(f"v{j}", c) for j, c in enumerate(letters)]))
    # payload words equal to event ids make fake record starts the decoder must not follow
    id_like = st.sampled_from(ids)
    kinds = draw(st.lists(st.integers(0, n_types - 1), min_size=1, max_size=60))
    events, ts = [], 0
    for k in kinds:
        eid, _, variables = types[k]
        ts += draw(st.integers(1, 5000))
        vals = [draw(id_like if c == "H" and draw(st.booleans()) else LETTERS[c]) for _, c in variables]
        events.append((eid, ts, vals))
    return version, types, events


def _check_decoded(path: Path, version: int, types: list, events: list) -> None:
    v, out = crazyflie.decode(path)
    assert v == version
    scale = 1e-3 if version == 1 else 1e-6
    for eid, name, variables in types:
        mine = [e for e in events if e[0] == eid]
        np.testing.assert_array_equal(out[name]["t"], np.array([e[1] for e in mine], dtype=np.float64) * scale)
        for j, (var, c) in enumerate(variables):
            want = np.array([e[2][j] for e in mine], dtype=np.dtype("<" + c)).astype(np.float64)
            np.testing.assert_array_equal(out[name][var], want)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(max_types=1))
def test_round_trip_one_event_type(scratch: Path, log: tuple[int, list, list]) -> None:
    version, types, events = log
    _check_decoded(put(scratch, log_bytes(types, events, version)), version, types, events)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(max_types=3))
def test_round_trip_several_event_types(scratch: Path, log: tuple[int, list, list]) -> None:
    version, types, events = log
    _check_decoded(put(scratch, log_bytes(types, events, version)), version, types, events)


def test_pointer_doubling_on_a_long_adversarial_stream(scratch: Path) -> None:
    """5000 events of three sizes whose payloads are full of valid event ids: every record
    start must be found through ~13 doubling passes, and none of the fake ones."""
    types = [(1, "a", [("x", "H"), ("y", "H")]), (2, "b", [("z", "H")]), (0x0101, "c", [("w", "d")])]
    rng = np.random.default_rng(3)
    kinds = rng.integers(0, 3, 5000)
    events = []
    for k, kind in enumerate(kinds):
        eid, _, variables = types[kind]
        vals = [float(rng.normal())] if kind == 2 else [int(rng.choice([1, 2, 0x0101])) for _ in variables]
        events.append((eid, 10 * k + 1, vals))
    for version in (1, 2):
        _check_decoded(put(scratch, log_bytes(types, events, version)), version, types, events)


def test_several_types_read_into_one_aligned_flight(scratch: Path) -> None:
    events = []
    for k in range(200):
        events.append((1, 1000 * k, [0.0, 0.0, 1.0]))
        if k % 4 == 0:
            events.append((2, 1000 * k + 500, [32768]))
    (f,) = read(put(scratch, log_bytes(TWO, events)))
    assert f.rate == pytest.approx(1000.0)
    assert f.meta["rates"]["cmd"] == pytest.approx(250.0)
    np.testing.assert_allclose(f.acc[:, 2], 9.80665)
    np.testing.assert_allclose(f.cmd, 0.5)
