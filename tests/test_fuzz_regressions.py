"""One regression test per failure class the reader fuzzing of issue 16 found, each from a
minimized reproducer built here (a small log + a few byte edits). Inputs that once hung or
asked for huge allocations run in the fuzz worker (time limit, RLIMIT_AS), so a regression
fails the test instead of the suite."""

from __future__ import annotations

import struct
import warnings
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from rotorid import frames, signal
from rotorid.errors import LogFormatError, RotoridError, clip, one_line, quote
from rotorid.flight import Flight, Series, align, grid_size
from rotorid.io import guard, load, read, table, ulog
from support import fuzzing
from support.helpers_cf import CF_TYPE, fixed_frequency, log_bytes


def _msg(kind: str, payload: bytes) -> bytes:
    return struct.pack("<HB", len(payload), ord(kind)) + payload


def ulog_bytes(
    formats: Sequence[str],
    topic: str,
    rows: Sequence[bytes],
    t0: int = 1_000_000,
    params: Sequence[tuple[str, str, bytes]] = (),
) -> bytes:
    """A minimal ULog: header, flag bits, `formats`, parameters (type, name, value bytes), one
    subscription to `topic` (msg id 0) and its data rows (packed payloads after the id)."""
    out = ulog.MAGIC + b"\x01" + struct.pack("<Q", t0) + _msg("B", bytes(40))
    out += b"".join(_msg("F", f.encode()) for f in formats)
    for ty, name, value in params:
        key = f"{ty} {name}".encode()
        out += _msg("P", struct.pack("<B", len(key)) + key + value)
    out += _msg("A", struct.pack("<BH", 0, 0) + topic.encode())
    return out + b"".join(_msg("D", struct.pack("<H", 0) + r) for r in rows)


def gyro_rows(n: int = 50, t0: int = 1_000_000, dt: int = 4000) -> list[bytes]:
    return [struct.pack("<Q3f", t0 + k * dt, 0.1, 0.2, 0.3) for k in range(n)]


GYRO_FMT = "vehicle_angular_velocity:uint64_t timestamp;float[3] xyz;"


def _read(tmp_path: Path, data: bytes, name: str = "x.ulg", **options: object) -> list[Flight]:
    p = tmp_path / name
    p.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return read(p, **options)


# -- crashes that were not RotoridError (ULog) ----------------------------------------------
def test_ulog_reference_sound(tmp_path: Path) -> None:
    """The hand-built ULog the reproducers start from reads: 50 gyro samples at 250 Hz, FLU."""
    (f,) = _read(tmp_path, ulog_bytes([GYRO_FMT], "vehicle_angular_velocity", gyro_rows()))
    assert len(f.t) == 50 and f.rate == pytest.approx(250.0)
    np.testing.assert_allclose(f.gyro[0], [0.1, -0.2, -0.3], rtol=1e-6)  # FRD -> FLU


def test_keyerror_motor_fields_not_numbered_from_zero(tmp_path: Path) -> None:
    """actuator_motors with a field 'control[3]' only: was KeyError('control[0]')."""
    fmt = "actuator_motors:uint64_t timestamp;float control[3];"
    rows = [struct.pack("<Qf", 1_000_000 + 4000 * k, 0.5) for k in range(20)]
    with pytest.raises(LogFormatError, match="none of the topics rotorid reads"):
        _read(tmp_path, ulog_bytes([fmt], "actuator_motors", rows))


def test_keyerror_topic_without_timestamp(tmp_path: Path) -> None:
    fmt = "vehicle_angular_velocity:uint64_t time;float[3] xyz;"
    with pytest.raises(LogFormatError):
        _read(tmp_path, ulog_bytes([fmt], "vehicle_angular_velocity", gyro_rows()))


def test_overflow_header_timestamp(tmp_path: Path) -> None:
    """A header time stamp beyond int64: was OverflowError in the time conversion."""
    data = ulog_bytes([GYRO_FMT], "vehicle_angular_velocity", gyro_rows(), t0=(1 << 63) + 5)
    with pytest.raises(LogFormatError, match=r"header time stamp \d+ µs is corrupt"):
        _read(tmp_path, data)


def test_overflow_sample_timestamps(tmp_path: Path) -> None:
    rows = gyro_rows()
    rows[10] = struct.pack("<Q3f", (1 << 64) - 1, 0.1, 0.2, 0.3)
    with pytest.raises(LogFormatError, match="corrupt time stamps"):
        _read(tmp_path, ulog_bytes([GYRO_FMT], "vehicle_angular_velocity", rows))


def test_valueerror_nan_parameter(tmp_path: Path) -> None:
    """PWM_MAIN_FUNC1 = NaN: was ValueError from int(nan)."""
    fmt = "actuator_outputs:uint64_t timestamp;uint32_t noutputs;float[4] output;"
    rows = [struct.pack("<QI4f", 1_000_000 + 4000 * k, 4, 1500, 1500, 1500, 1500) for k in range(20)]
    params = [("float", "PWM_MAIN_FUNC1", struct.pack("<f", float("nan")))]
    with pytest.raises(LogFormatError, match="parameter PWM_MAIN_FUNC1 has the invalid value 'nan'"):
        _read(tmp_path, ulog_bytes([fmt], "actuator_outputs", rows, params=params))


def test_zero_quaternion_is_dropped_not_a_scipy_error(tmp_path: Path) -> None:
    """A zero attitude quaternion: was ValueError from scipy Rotation in frames.py."""
    fmt = "vehicle_attitude:uint64_t timestamp;float[4] q;"
    rows = [struct.pack("<Q4f", 1_000_000 + 4000 * k, *((0, 0, 0, 0) if k == 7 else (1, 0, 0, 0))) for k in range(30)]
    with pytest.warns(UserWarning, match=r"1 samples are no rotation .* first at t = 0\.028 s"):
        (f,) = read(_write(tmp_path, ulog_bytes([fmt], "vehicle_attitude", rows)))
    assert len(f.t) == 30  # the grid bridges the 8 ms hole by slerp between equal attitudes
    level = frames.quat_ned_frd_to_enu_flu(np.array([[1.0, 0.0, 0.0, 0.0]]))  # PX4 identity in ENU/FLU
    np.testing.assert_allclose(f.quat, np.repeat(level, 30, axis=0), atol=1e-12)
    with pytest.raises(RotoridError, match=r"quaternion 1 is zero or not finite"):
        frames.quat_to_rot(np.array([[1.0, 0, 0, 0], [np.nan, 0, 0, 0]]))


def _write(tmp_path: Path, data: bytes, name: str = "x.ulg") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_recursion_in_pyulog(tmp_path: Path, worker: fuzzing.Worker) -> None:
    """A type that contains itself: was RecursionError from inside pyulog."""
    fmt = "vehicle_angular_velocity:uint64_t timestamp;vehicle_angular_velocity inner;"
    kind, msg = worker.run(ulog_bytes([fmt], "vehicle_angular_velocity", gyro_rows()), ".ulg")
    assert (kind, "contains itself") == (fuzzing.ROTORID, msg[msg.find("contains") :][:15])


def test_huge_nested_type(tmp_path: Path, worker: fuzzing.Worker) -> None:
    """Nested arrays flattening to 65535² fields: pyulog expanded them field by field (hang)."""
    fmts = ["big:float[65535] x;", "vehicle_angular_velocity:uint64_t timestamp;big[65535] b;"]
    kind, msg = worker.run(ulog_bytes(fmts, "vehicle_angular_velocity", gyro_rows()), ".ulg")
    assert kind == fuzzing.ROTORID and "flattens to more than 65535 fields" in msg


def test_oserror_seek_before_start(tmp_path: Path) -> None:
    """A definition claiming 60000 bytes at the end of a short file: pyulog sought before
    byte 0 (OSError on a real file)."""
    data = ulog.MAGIC + b"\x01" + struct.pack("<Q", 0) + struct.pack("<HB", 60000, 0x01) + bytes(10)
    with pytest.raises(LogFormatError, match=r"sought to byte -\d+"):
        _read(tmp_path, data)


def test_resync_loop_is_bounded(tmp_path: Path, worker: fuzzing.Worker) -> None:
    """A long definition section ending in an over-long unknown message: pyulog's resync
    seeks back further than it read and parses the same bytes again, forever."""
    info = b"".join(_msg("I", struct.pack("<B", 12) + b"char[8] k%03d" % i + b"abcdefgh") for i in range(1000))
    data = ulog.MAGIC + b"\x01" + bytes(8) + info + struct.pack("<HB", 10001, 0x01) + bytes(5000)
    kind, msg = worker.run(data, ".ulg")
    assert kind == fuzzing.ROTORID, msg
    assert "keeps re-reading the file" in msg or "sought to byte" in msg


def test_signalling_nan_is_dropped_not_a_runtime_warning(tmp_path: Path) -> None:
    """A Crazyflie float holding a signalling NaN: was numpy's 'invalid value encountered in
    cast' RuntimeWarning; now the sample is dropped with a warning and the log split there."""
    _, events = fixed_frequency(400)
    marker = 12345.0
    events[100] = (0, events[100][1], [marker, *events[100][2][1:]])
    data = log_bytes([CF_TYPE], events)
    body = data[:-4].replace(struct.pack("<f", marker), b"\x01\x00\x80\x7f")  # sNaN
    p = _write(tmp_path, body + struct.pack("<I", zlib.crc32(body)), "cf")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(UserWarning, match=r"1 samples hold NaN/inf \(first at t = 1\.100000 s\)"):
            a, b = read(p)
    assert (len(a.t), len(b.t)) == (100, 299)


def test_resync_rereading_large_messages_is_bounded(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two chunks removed from a real ULog: pyulog's header parse resyncs by re-reading
    messages of up to 64 KiB per byte it steps over (70 MB from a 117 kB file, 7-8 s — a
    hang to the fuzzer). The bytes-read budget stops it after a fraction of the call budget."""
    ops = [
        fuzzing.Op("remove", 0.9734432870416792, 0.0, 37445, True),
        fuzzing.Op("remove", 0.6177909439639407, 0.0, 63960),
    ]
    data = fuzzing.apply_ops(fuzzing._ulog_prefix(data_dir / "px4" / "sample_px4_events.ulg", 30_000), ops)
    files: list[guard.BoundedFile] = []

    class Recorded(guard.BoundedFile):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            files.append(self)

    monkeypatch.setattr(guard, "BoundedFile", Recorded)
    with pytest.raises(LogFormatError, match="keeps re-reading the file"):
        _read(tmp_path, data)
    f = files[-1]
    assert f.read_left < 0 and guard.OPS_PER_BYTE * f.size + guard.OPS_SLACK - f.ops_left < f.size


def test_parquet_duplicate_column_is_a_format_error(tmp_path: Path) -> None:
    """A bit flip that renames rpm_3 to rpm_2: was pyarrow's KeyError ('exists 2 times')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = np.arange(20) / 100.0
    pq.write_table(pa.Table.from_arrays([t, t, t], names=["t", "rpm_2", "rpm_2"]), tmp_path / "x.parquet")
    with pytest.raises(LogFormatError, match=r"column\(s\) 'rpm_2' appear more than once"):
        read(tmp_path / "x.parquet")


# -- hangs and huge allocations ----------------------------------------------------------------
def test_multi_event_crazyflie_time_jump(worker: fuzzing.Worker) -> None:
    """Two event types, one time stamp jumping by 2^40 µs: align asked for a grid of 10^12
    samples (hang, then MemoryError)."""
    slow = (7, "slow", [("rpm.m1", "H")])  # a channel only this event has: its clock meets the other
    events = [(0, 1_000_000 + 1000 * k, [0.0, 0.0, 1.0, 0, 0, 0, 1, 2, 3, 4]) for k in range(40)]
    events += [(7, 1_000_000 + 4000 * k, [20000]) for k in range(10)]
    events.append((7, 1 << 40, [20000]))
    events.append((0, (1 << 40) + 1, [0.0, 0.0, 1.0, 0, 0, 0, 1, 2, 3, 4]))
    kind, msg = worker.run(log_bytes([CF_TYPE, slow], sorted(events, key=lambda e: e[1])), "")
    assert kind == fuzzing.ROTORID, msg
    assert "time stamps" in msg


def test_flight_grids_are_bounded() -> None:
    """resample/align with absurd time stamps: refused before allocating (were MemoryError)."""
    f = Flight(t=np.array([0.0, 0.001, 1e9]), gyro=np.zeros((3, 3)), meta={"source": "jump"})
    with pytest.raises(RotoridError, match=r"jump: a 1000 Hz grid over 1e\+09 s would hold 1e\+12 samples"):
        f.resample(1000.0)
    s = Series(np.array([0.0, 1e-6, 2e-6, 1e6]), np.zeros((4, 3)))
    with pytest.raises(RotoridError, match="the time stamps jump"):
        align({"gyro": s}, meta={"source": "x"})
    with pytest.raises(RotoridError, match="sample rate inf Hz"):
        signal.butter_filtfilt(np.zeros((10, 3)), float("inf"), 5.0)


def test_a_channel_stamp_far_beyond_the_common_span_does_not_size_the_grid() -> None:
    """atheris finding (DataFlash, a 5.6 kB input): one channel's last stamp at ~1e23 s, far
    past the common span of 0.57 s. The float tolerance of the grid's stamps was taken at that
    magnitude (5e8 s), and `grid_size` added it to a 4-sample grid: 4.2e9 samples, a 31 GiB
    allocation past the size check. The tolerance is now the grid's own (its start and end),
    the held channel is read at the grid's magnitude, and a tolerance as long as a step is
    refused."""
    t = np.arange(101) / 100.0
    gyro = Series(t, np.ones((101, 3)))
    cmd = Series(np.array([0.0, 0.5, 1.0, 1e23]), np.array([[0.1], [0.2], [0.3], [0.4]]) * np.ones((1, 4)))
    flight, _ = align({"gyro": gyro, "cmd": cmd}, meta={"source": "x.bin"})
    assert len(flight.t) == 101 and flight.t[-1] == 1.0
    np.testing.assert_array_equal(flight.cmd[[0, 49, 50, 99, 100], 0], [0.1, 0.1, 0.2, 0.2, 0.3])
    with pytest.raises(RotoridError, match=r"x.bin: time stamps of that size are only resolved to 0\.02 s"):
        grid_size(1.0, 100.0, 100, "x.bin", tol=0.02)


def test_without_is_linear_in_gaps() -> None:
    """Flight.without over many intervals: vectorized (was a Python loop over intervals
    times samples) and the same as the definition."""
    t = np.arange(200_000) / 1000.0
    f = Flight(t=t, gyro=np.zeros((len(t), 3)), meta={"source": "x"})
    gaps = [(k + 0.1, k + 0.2) for k in range(0, 200, 2)]
    pieces = f.without(gaps)
    assert len(pieces) == 101
    assert pieces[0].t[-1] == pytest.approx(0.1) and pieces[1].t[0] == pytest.approx(0.2)
    assert sum(len(p.t) for p in pieces) == len(t) - 100 * 99  # 99 samples strictly inside each


# -- silent nonsense ---------------------------------------------------------------------------
def _cf(tmp_path: Path, edit: dict[int, list[float]] | None = None, ts: dict[int, int] | None = None) -> Path:
    """A 400-sample Crazyflie v2 log (1 kHz) with sample values / time stamps replaced."""
    _, events = fixed_frequency(400)
    events = [(eid, (ts or {}).get(k, t), (edit or {}).get(k, v)) for k, (eid, t, v) in enumerate(events)]
    p = tmp_path / "cf"
    p.write_bytes(log_bytes([CF_TYPE], events))
    return p


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([0.0, 0.0, 210.0, 0, 0, 0, 1, 1, 1, 1], r"'acc' column 2 reads 2059\.4 m/s² at t = 1\.100 s"),
        ([0.0, 0.0, 1.0, 0, 12000.0, 0, 1, 1, 1, 1], r"'gyro' column 1 reads 209\.44 rad/s at t = 1\.100 s"),
    ],
)
def test_impossible_values_are_errors(tmp_path: Path, values: list[float], match: str) -> None:
    with pytest.raises(LogFormatError, match=match):
        read(_cf(tmp_path, edit={100: values}))


def test_normalized_commands_outside_0_1(tmp_path: Path) -> None:
    fmt = "actuator_motors:uint64_t timestamp;float[4] control;"
    rows = [struct.pack("<Q4f", 1_000_000 + 4000 * k, 0.5, 0.5, 1.5 if k == 5 else 0.5, 0.5) for k in range(30)]
    with pytest.raises(LogFormatError, match=r"'cmd' column 2 reads 1\.5 normalized commands at t = 0\.020 s"):
        _read(tmp_path, ulog_bytes([fmt], "actuator_motors", rows))


@pytest.mark.parametrize(("unit", "ok"), [("rad_s", True), ("normalized", False), (None, False)])
def test_command_bound_follows_the_declared_unit(tmp_path: Path, unit: str | None, ok: bool) -> None:
    """Rotor-speed commands (rad/s, a simulated 'rad_s' vehicle) pass where the flight and so
    the ULog's info declare rad/s; the same numbers under PX4's normalized default are refused."""
    t = np.arange(100) / 200.0
    units = {"cmd": unit} if unit else {}
    f = Flight(t=t, cmd=np.full((100, 4), 1059.4), meta={"source": "sim", "units": units})
    p = ulog.write(f, tmp_path / "six.ulg")
    if ok:
        (g,) = read(p)
        assert g.meta["units"]["cmd"] == "rad_s"
        np.testing.assert_allclose(g.cmd, 1059.4, rtol=1e-6)
    else:
        with pytest.raises(LogFormatError, match=r"'cmd' column 0 reads 1059\.4 normalized commands"):
            read(p)


def test_csv_commands_take_the_vehicles_unit(tmp_path: Path) -> None:
    """A CSV declares no unit: with a normalized vehicle (`rotorid.io.load`'s hint) 1059 is
    refused as a command; a vehicle driven by rotor speed gives no hint, and 1059 rad/s passes."""
    t = np.arange(100) / 200.0
    f = Flight(t=t, cmd=np.full((100, 4), 1059.4), meta={"source": "sim"})
    p = table.write(f, tmp_path / "six.csv")
    with pytest.raises(LogFormatError, match=r"'cmd' column 0 reads 1059\.4 normalized commands"):
        read(p, hints={"motor_input": "normalized"})
    (g,) = read(p)
    assert "cmd" not in g.meta.get("units", {}) and g.cmd[0, 0] == pytest.approx(1059.4)
    (g,) = read(
        table.write(f.replace(cmd=np.full((100, 4), 0.4)), tmp_path / "n.csv"), hints={"motor_input": "normalized"}
    )
    assert g.meta["units"]["cmd"] == "normalized"


@pytest.mark.parametrize(
    ("step_us", "match"),
    [(2, r"logged at 5e\+05 Hz, outside the 1 Hz–100000 Hz"), (1_500_000, r"logged at 0\.6667 Hz")],
)
def test_rates_outside_1hz_100khz(tmp_path: Path, step_us: int, match: str) -> None:
    ts = {k: 1_000_000 + step_us * k for k in range(400)}
    with pytest.raises(LogFormatError, match=match):
        read(_cf(tmp_path, ts=ts))


def test_absurd_timestamps(tmp_path: Path) -> None:
    ts = {k: 10_000_000_000_000 + 1000 * k for k in range(400)}  # 1e7 s since boot
    with pytest.raises(LogFormatError, match=r"time stamps reach 1e\+07 s"):
        read(_cf(tmp_path, ts=ts))


def test_gaps_split_every_reader(tmp_path: Path) -> None:
    """A 1 s hole in a Crazyflie log (one event type, no alignment) splits it, with a warning."""
    ts = {k: 1_000_000 + 1000 * k + (1_000_000 if k >= 200 else 0) for k in range(400)}
    with pytest.warns(UserWarning, match=r"1 gap\(s\) longer than 0\.5 s \(1\.20–2\.20 s\)"):
        a, b = read(_cf(tmp_path, ts=ts))
    assert (len(a.t), len(b.t)) == (200, 200)
    assert b.t[0] - a.t[-1] == pytest.approx(1.001)


def test_window_across_a_2s_gap_is_never_bridged(tmp_path: Path) -> None:
    """Issue 16 part 5: a 2 s hole inside an analysis window gives the two pieces around it
    (nothing interpolated across), and a NaN in a built Flight is an error naming its time."""
    ts = {k: 1_000_000 + 1000 * k + (2_000_000 if k >= 200 else 0) for k in range(400)}
    p = _cf(tmp_path, ts=ts)
    with pytest.warns(UserWarning, match=r"gap\(s\) longer than 0\.5 s \(1\.20–3\.20 s\)"):
        a, b = load(f"{p}@1.1:3.3")
    assert (a.t[0], a.t[-1], b.t[0], b.t[-1]) == pytest.approx((1.1, 1.199, 3.2, 3.3), abs=1.1e-3)
    assert np.max(np.diff(a.t)) < 0.0011 and np.max(np.diff(b.t)) < 0.0011
    with pytest.raises(RotoridError, match=r"channel 'gyro' has NaN/inf at t=0\.020000 s"):
        Flight(t=np.arange(5) / 100.0, gyro=np.where(np.arange(15).reshape(5, 3) == 7, np.nan, 0.0))


def test_saturated_gyro_is_a_warning_naming_the_span(tmp_path: Path) -> None:
    sat = [0.0, 0.0, 1.0, 0, 2000.0, 0, 1, 1, 1, 1]  # 2000 deg/s = 34.9 rad/s, held 5 samples
    with pytest.warns(
        UserWarning, match=r"'gyro' is held at its extreme in 1 span\(s\) \(gyro\[1\] = 34\.91 at 1\.050–1\.054 s\)"
    ):
        (f,) = read(_cf(tmp_path, edit=dict.fromkeys(range(50, 55), sat)))
    assert f.gyro[:, 1].max() == pytest.approx(np.radians(2000.0))


# -- messages -----------------------------------------------------------------------------------
def test_messages_are_one_printable_line(tmp_path: Path) -> None:
    """An event name with a newline and terminal escapes ends up escaped and cut in the error."""
    name = "evil\n\x1b[2J\x1b[31m" + "x" * 500
    bad = (0, name, [("a", "f"), ("a", "f")])  # a variable declared twice
    p = tmp_path / "evil"
    body = log_bytes([bad], [])
    p.write_bytes(body)
    with pytest.raises(LogFormatError) as e:
        read(p)
    msg = str(e.value)
    assert msg.isprintable() and "\\n\\x1b[2J" in msg and f"…({len(name)} chars)" in msg
    assert len(msg) < 300


def test_message_helpers() -> None:
    assert one_line("a\r\nb\x00\u2028") == "a\\r\\nb\\x00\\u2028"
    assert quote("ok") == "'ok'"
    assert clip("é" * 70, 60) == "é" * 60 + "…(70 chars)"
    assert str(RotoridError("two\nlines")) == "two\\nlines"


def test_dataflash_cut_inside_its_only_imu_message(tmp_path: Path, data_dir: Path) -> None:
    """The ArduPilot fixture cut inside the first (and only) IMU message: pymavlink indexes
    the message, the table of whole messages is empty, and picking the lowest IMU instance
    was numpy's ValueError (zero-size reduction); now no IMU is found."""
    data = (data_dir / "ardupilot" / "backend_log_80k.bin").read_bytes()[:25_906]
    p = tmp_path / "x.bin"
    p.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(LogFormatError, match="no IMU, RCOU, ESC or ATT messages with at least two samples"):
            read(p)


def test_a_single_sample_is_no_flight(tmp_path: Path) -> None:
    """A Crazyflie log whose second event jumps back in time, read with allow_corrupt: the
    reader kept the one event before it, and `rotorid info`'s gap search took the median of
    no time steps (numpy's RuntimeWarning 'Mean of empty slice'). A piece of one sample is
    no flight: alone it is an error; beside a real piece it is left out with a warning."""
    slow = (7, "slow", [("rpm.m1", "H")])  # a channel only this event has: its clock meets the other
    fixed = [0.0, 0.0, 1.0, 0, 0, 0, 1, 2, 3, 4]
    events = [(0, 1_000_000, fixed), (7, 1_000_001, [20000]), (0, 1_001_000, fixed), (0, 0, fixed)]
    events += [(7, 1_004_001, [20000]), (0, 1_005_000, fixed)]
    p = tmp_path / "cf"
    p.write_bytes(log_bytes([CF_TYPE, slow], events))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(LogFormatError, match="no piece of the log holds two samples between gaps"):
            read(p, allow_corrupt=True)
    one = Flight(t=np.array([0.0]), gyro=np.zeros((1, 3)), meta={"source": "x", "rates": {"gyro": 100.0}})
    two = Flight(t=np.array([1.0, 1.01]), gyro=np.zeros((2, 3)), meta={"source": "x"})
    with pytest.warns(UserWarning, match=r"x: single samples between gaps left out \(t = 0\.000 s\)"):
        assert guard.check_flights([one, two], "x") == [two]


def _bbl(data_dir: Path, old: bytes, new: bytes) -> bytes:
    """The head of a real Betaflight log (`fuzzing._bbl_prefix`) with one header edit."""
    data = fuzzing._bbl_prefix(data_dir / "betaflight" / "better_tune.BBL", 2000)
    assert data.count(old) == 1
    return data.replace(old, new)


@pytest.mark.parametrize(
    "header", [b"H I interval:nan", b"H P interval:0/8", b"H P interval:1/99999999999", b"H I interval:1e308"]
)
def test_blackbox_frame_interval_is_bounded(data_dir: Path, worker: fuzzing.Worker, header: bytes) -> None:
    """orangebox counts skipped frames by stepping one frame at a time until an index fits the
    header's intervals: with 'I interval:nan' or a non-positive P numerator that never ends
    (campaign: a hang), with a huge P denominator it takes that many steps."""
    old = b"H I interval:32" if header.startswith(b"H I") else b"H P interval:1/8"
    kind, msg = worker.run(_bbl(data_dir, old, header), ".BBL")
    assert kind == fuzzing.ROTORID, msg
    assert "unreadable header" in msg and "is not a frame interval" in msg


def test_blackbox_field_index_not_a_number(tmp_path: Path, data_dir: Path) -> None:
    """A field named 'motor[p]': int('p') was a ValueError; a name whose index is not a number
    is no motor field (the other three motors are read)."""
    p = tmp_path / "x.bbl"
    p.write_bytes(_bbl(data_dir, b"motor[0],", b"motor[p],"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (f,) = read(p)
    assert f.cmd.shape[1] == 3


def test_huge_quaternion_component_is_a_format_error(tmp_path: Path) -> None:
    """A CSV quaternion component of 1e308: its norm overflowed (numpy RuntimeWarning) before
    the check refused it."""
    flight = fuzzing._small_flight()
    p = table.write(flight, tmp_path / "x.csv")
    text = p.read_text().splitlines()
    head = text[0].split(",")
    row = text[50].split(",")
    row[head.index("qx")] = "1e308"
    p.write_text("\n".join([*text[:50], ",".join(row), *text[51:]]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(LogFormatError, match=r"channel 'quat' has a component 1e\+308 at t = 5\.196 s"):
            read(p)


def test_time_stamps_a_few_ulp_apart_are_refused_without_a_runtime_warning() -> None:
    """Campaign finding (DataFlash, inputs 24333 and 49902 of hash ec900f29): stamps 1e-310 s
    apart made `Series.rate` overflow in a scalar divide (numpy's RuntimeWarning, not a
    decision). The rate is now inf, and aligning on it is the guard's one-line refusal."""
    t = np.array([0.0, 1e-310, 2e-310, 3e-310])
    gyro = Series(t, np.zeros((4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gyro.rate == np.inf
        with pytest.raises(RotoridError, match="Hz grid over"):
            align({"gyro": gyro, "acc": Series(t, np.zeros((4, 3)))}, meta={"source": "x.bin"})


@pytest.mark.parametrize("value", [b"1e-320", b"1e300", b"0.5"])
def test_blackbox_acc_1g_not_a_count_per_g(tmp_path: Path, data_dir: Path, value: bytes) -> None:
    """'H acc_1G:1e-320' (campaign, blackbox input 288082): dividing accSmooth by it overflowed
    (numpy RuntimeWarning); 1e300 would have read every acceleration as 0. acc is then not read,
    with a note, and the rest of the log is."""
    p = tmp_path / "x.bbl"
    p.write_bytes(_bbl(data_dir, b"H acc_1G:2048", b"H acc_1G:" + value))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", RuntimeWarning)
        (f,) = read(p)
    assert f.acc is None and f.gyro is not None
    assert any("acc_1G" in n and "acc not read" in n for n in f.meta.get("notes", []))


@pytest.mark.parametrize("mult", [-np.inf, np.nan, 1e300, -1.0])
def test_dataflash_corrupt_multiplier_is_a_format_error(tmp_path: Path, mult: float) -> None:
    """A MULT record whose value became -inf (campaign, dataflash input 205301): the acceleration
    times -inf gave a numpy RuntimeWarning and NaN; a negative or huge one would flip or blow up the
    data silently. The multiplier is now checked where it is looked up."""
    from rotorid.io import dataflash

    rng = np.random.default_rng(0)
    t = 1.0 + np.arange(200) / 400.0
    f = Flight(t=t, acc=rng.normal(0, 0.1, (200, 3)) + np.array([0, 0, 9.81]), gyro=rng.normal(0, 0.01, (200, 3)))
    path = dataflash.write(f, tmp_path / "m.bin")
    good = dataflash._records("MULT", 1, Id=[ord("0")], Mult=[1.0]).tobytes()
    data = path.read_bytes()
    assert data.count(good) == 1
    path.write_bytes(data.replace(good, dataflash._records("MULT", 1, Id=[ord("0")], Mult=[mult]).tobytes()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(LogFormatError, match=r"multiplier .* not a positive scale"):
            read(path)


def test_dataflash_sensor_instance_that_is_no_whole_number_is_a_format_error(tmp_path: Path) -> None:
    """atheris finding (DataFlash, a 1.5 kB input): two type characters of the IMU format swapped
    ('QBff…' -> 'QfBf…', the same length) made the instance field I a float holding NaN, and
    choosing the instance raised "cannot convert float NaN to integer" (ValueError)."""
    from rotorid.io import dataflash

    rng = np.random.default_rng(0)
    t = 1.0 + np.arange(200) / 400.0
    gyro = rng.normal(0, 0.01, (200, 3))
    gyro[:, 0] = struct.unpack("<f", bytes([0x00, 0xC0, 0x7F, 0x3F]))[0]  # I's zero byte + these: NaN
    f = Flight(t=t, acc=rng.normal(0, 0.1, (200, 3)) + np.array([0, 0, 9.81]), gyro=gyro)
    path = dataflash.write(f, tmp_path / "i.bin")
    data = path.read_bytes()
    assert data.count(b"QBffffffIIfBBHH") == 1
    path.write_bytes(data.replace(b"QBffffffIIfBBHH", b"QfBfffffIIfBBHH"))
    with pytest.raises(
        LogFormatError, match=r"IMU\.I \(the sensor instance\) holds nan, not a whole number in 0\.\.255"
    ):
        read(path)


def test_dataflash_esc_instance_out_of_range_is_a_format_error(tmp_path: Path) -> None:
    """atheris finding (DataFlash, a 300-byte input): the ESC format's instance turned float
    ('QBff…' -> 'QfBf…') held 1.4e28 and 6.2e10, and casting them to motor numbers raised numpy's
    RuntimeWarning (invalid value in cast) instead of a decision."""
    from rotorid.io import dataflash

    rng = np.random.default_rng(0)
    t = 1.0 + np.arange(200) / 400.0
    rpm = struct.unpack("<f", bytes([0x00, 0xC0, 0x7F, 0x46]))[0]  # 16368 rpm: an instance byte + these = NaN
    f = Flight(
        t=t,
        acc=rng.normal(0, 0.1, (200, 3)) + np.array([0, 0, 9.81]),
        gyro=rng.normal(0, 0.01, (200, 3)),
        rotor_speed=np.full((200, 4), rpm * 2 * np.pi / 60),
    )
    path = dataflash.write(f, tmp_path / "e.bin")
    data = path.read_bytes()
    assert data.count(b"QBffffcfcf") == 1
    path.write_bytes(data.replace(b"QBffffcfcf", b"QfBfffcfcf"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(LogFormatError, match=r"ESC\.Instance \(the sensor instance\) holds nan, not a whole"):
            read(path)


def test_dataflash_rcou_output_with_a_leading_zero_is_no_motor(tmp_path: Path) -> None:
    """atheris finding (DataFlash, a 2.6 kB input): an RCOU field renamed 'C12' -> 'C00' was taken
    as output 0 and then looked up as 'C0' (ValueError: no field of name C0). Outputs are C1, C2,
    ... without a leading zero, as the table reader's motor columns (the next test)."""
    from rotorid.io import dataflash

    rng = np.random.default_rng(0)
    t = 1.0 + np.arange(200) / 400.0
    f = Flight(
        t=t,
        acc=rng.normal(0, 0.1, (200, 3)) + np.array([0, 0, 9.81]),
        gyro=rng.normal(0, 0.01, (200, 3)),
        cmd=rng.uniform(0.3, 0.7, (200, 4)),
    )
    path = dataflash.write(f, tmp_path / "r.bin")
    data = path.read_bytes()
    assert data.count(b"C11,C12,C13") == 1
    # without SERVOn_FUNCTION parameters (renamed), as in the input: the non-zero outputs are the motors
    path.write_bytes(data.replace(b"C11,C12,C13", b"C11,C00,C13").replace(b"SERVO", b"SERVQ"))
    (got,) = read(path)
    assert got.cmd.shape[1] == 4 and np.allclose(got.cmd, f.cmd, atol=1e-3)


def test_motor_column_with_a_leading_zero_is_an_unknown_column(tmp_path: Path) -> None:
    """'cmd_00' (campaign, table input 503531, a removed chunk): it matched the motor pattern as
    motor 0 and was then looked up as 'cmd_0' (KeyError). Motor columns are ASCII digits without a
    leading zero; anything else is an unknown column with a suggestion."""
    p = tmp_path / "x.csv"
    p.write_text("t,cmd_00\n0.0,0.5\n0.01,0.5\n0.02,0.5\n")
    with pytest.raises(LogFormatError, match=r"unknown column 'cmd_00'; did you mean 'cmd_0'"):
        read(p)
    p.write_text("t,cmd_\u0663\n0.0,0.5\n0.01,0.5\n0.02,0.5\n")  # an Arabic-Indic 3: not a motor number
    with pytest.raises(LogFormatError, match="unknown column"):
        read(p)


class _Frames:
    """A stand-in for orangebox's Parser with the given frames (type, values) in log section 1."""

    field_names = ("loopIteration", "time", "gyroADC[0]")
    reader = type("Reader", (), {"field_defs": {}})()  # the header's field definitions

    def __init__(self, frames: list[tuple[str, tuple]]) -> None:
        self._frames, self.headers = frames, {}

    def set_log_index(self, index: int) -> None:
        assert index == 1

    def frames(self) -> Iterator:
        for kind, data in self._frames:
            yield type("Frame", (), {"type": type("T", (), {"value": kind})(), "data": data})()


def test_blackbox_frame_with_fewer_fields_than_the_header_ends_the_section(tmp_path: Path, data_dir: Path) -> None:
    """Corrupt bytes that orangebox decodes into a frame of another length (campaign, blackbox
    input 452328: frames of 0 of the header's 30 values among full ones): indexing its fields raised
    IndexError. Decoding stops at that frame, the frames before it are kept and the cut is said."""
    from rotorid.io import blackbox

    full = [("I", (0, 100, 5)), ("P", (1, 200, 6)), ("P", ()), ("P", (3, 400, 8))]
    _, _, rows, stop = blackbox._section(_Frames(full), 1, tmp_path / "x.bbl")
    assert rows == [(0, 100, 5), (1, 200, 6)] and stop == "frame 2 holds 0 of the header's 3 fields"
    # the campaign's input itself, rebuilt from its seed and mutations
    (seed,) = [s for s in fuzzing.seeds(data_dir, tmp_path) if s.name == "blackbox-inav-example_smooth_tune"]
    ops = [
        fuzzing.Op("dup", 0.45552772822718146, 0.3573784196770585, 23845),
        fuzzing.Op("flip", 0.7297557640688226, 0.09231496779734794, 1348, True),
        fuzzing.Op("byte", 0.3994214914224553, 0.8864163433438317, 59367),
        fuzzing.Op("byte", 0.6577824355623664, 0.1804925959072029, 9482, True),
    ]
    p = tmp_path / "x.TXT"
    p.write_bytes(fuzzing.apply_ops(seed.data, ops))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(LogFormatError, match="fewer than two decodable frames"):
            read(p)
