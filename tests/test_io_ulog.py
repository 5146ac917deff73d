"""PX4 ULog: reading the real pyulog fixtures, the rate check, and the writer checked by
pyulog itself (an independent reader) and by our reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pyulog import ULog

from rotorid import frames
from rotorid.errors import LogFormatError, RateError, RotoridError
from rotorid.flight import Flight
from rotorid.io import read, ulog


@pytest.fixture(scope="session")
def events_flight(px4_logs: dict[str, Path]) -> Flight:
    (f,) = read(px4_logs["sample_px4_events"])
    return f


@pytest.fixture(scope="session")
def sample_flight(px4_logs: dict[str, Path]) -> Flight:
    """The first continuous piece of the older log (it has real logging drop-outs)."""
    with pytest.warns(UserWarning, match="6 logging drop-out"):
        pieces = read(px4_logs["sample"])
    return pieces[0]


def test_drop_outs_split_the_log_instead_of_being_interpolated(px4_logs: dict[str, Path]) -> None:
    with pytest.warns(UserWarning, match="split there"):
        pieces = read(px4_logs["sample"])
    spans = [(p.t[0], p.t[-1]) for p in pieces]
    assert len(pieces) == 6
    assert spans[0][1] == pytest.approx(41.35, abs=0.01) and spans[1][0] == pytest.approx(41.42, abs=0.01)
    for p in pieces:  # no interpolated samples bridge a drop-out
        assert np.diff(p.t).max() < 2.0 / p.rate


def test_new_topics_are_preferred(events_flight: Flight) -> None:
    f = events_flight
    assert f.meta["topics"] == {
        "acc": "vehicle_acceleration",
        "gyro": "vehicle_angular_velocity",
        "gyro_dot": "vehicle_angular_velocity",
        "cmd": "actuator_motors",
        "rotor_speed": "esc_status",
        "quat": "vehicle_attitude",
        "pos": "vehicle_local_position",
        "vel": "vehicle_local_position",
        "landed": "vehicle_land_detected",
        "vbat": "battery_status",
    }
    # the SITL battery: voltage_v 15.75-16.2 V, logged at ~5 Hz and held over the IMU's span
    assert f.vbat.min() == pytest.approx(15.748, abs=1e-3) and f.vbat.max() == pytest.approx(16.2, abs=1e-6)
    assert f.meta["units"]["vbat"] == "V (battery_status.voltage_v)"
    assert f.meta["rates"]["cmd"] == pytest.approx(10.0, abs=0.2)
    assert f.meta["rates"]["gyro"] == pytest.approx(50.0, abs=0.5)
    assert f.rate == pytest.approx(50.0, abs=0.5)  # the grid of the fastest channel
    assert f.cmd.shape[1] == 4  # control[4..11] are NaN (unused) in this log
    assert f.rotor_speed.shape[1] == 4


def test_frames_and_units_of_the_sitl_log(events_flight: Flight, px4_logs: dict[str, Path]) -> None:
    f = events_flight
    assert f.landed[0] and not f.landed.all() and f.landed[-1]  # on ground, flies, lands
    ground = f.landed & (f.t < f.t[0] + 3.0)
    np.testing.assert_allclose(f.acc[ground].mean(axis=0), [0, 0, 9.81], atol=0.1)  # FLU: z up
    assert f.pos[~f.landed, 2].max() > 1.0  # ENU: up is positive while flying
    # the rotors spin at ~3300 rpm in flight: rad/s
    assert f.rotor_speed.max() == pytest.approx(3324 * 2 * np.pi / 60, rel=1e-3)  # interpolated to 50 Hz
    # attitude: PX4 heading psi_NED becomes psi_ENU = pi/2 - psi_NED
    raw = ULog(str(px4_logs["sample_px4_events"]), ["vehicle_attitude"]).get_dataset("vehicle_attitude").data
    q_ned = np.column_stack([raw[f"q[{i}]"] for i in range(4)])[0]
    yaw_ned = frames.quat_to_rot(q_ned).as_euler("ZYX")[0]
    yaw_enu = frames.quat_to_rot(frames.quat_ned_frd_to_enu_flu(q_ned)).as_euler("ZYX")[0]
    assert np.angle(np.exp(1j * (yaw_enu - (np.pi / 2 - yaw_ned)))) == pytest.approx(0.0, abs=1e-9)


def test_slow_motor_topic_gets_a_clear_rate_error(events_flight: Flight) -> None:
    with pytest.raises(RateError) as e:
        events_flight.require_rate(250.0, "acc", "cmd")
    msg = str(e.value)
    assert "channel 'acc' (topic 'vehicle_acceleration') is logged at 20.8 Hz" in msg
    assert "SDLOG_PROFILE" in msg and "250 Hz" in msg
    with pytest.raises(RateError, match=r"channel 'cmd' \(topic 'actuator_motors'\) is logged at 10.0 Hz"):
        events_flight.require_rate(100.0, "cmd")
    assert events_flight.require_rate(5.0, "cmd") is events_flight


def test_old_log_uses_sensor_combined_and_actuator_outputs(sample_flight: Flight) -> None:
    f = sample_flight
    assert f.meta["topics"]["acc"] == f.meta["topics"]["gyro"] == "sensor_combined"
    assert f.meta["topics"]["cmd"] == "actuator_outputs"
    assert f.meta["rates"]["acc"] == pytest.approx(250.0, abs=1.0)
    assert f.meta["rates"]["cmd"] == pytest.approx(20.9, abs=0.2)
    assert f.cmd.shape[1] == 4  # the four non-zero outputs (noted in meta)
    assert any("non-zero outputs" in n for n in f.meta["notes"])
    assert f.meta["units"]["cmd"] == "normalized"
    np.testing.assert_array_equal(f.cmd, 0.0)  # disarmed at 900 µs < PWM_MIN 1075 µs
    np.testing.assert_allclose(np.linalg.norm(f.acc, axis=1).mean(), 9.81, atol=0.15)
    gaps = f.meta["align"]["gaps"]
    assert any(a == pytest.approx(41.35, abs=0.01) for a, _ in gaps)  # a real logging drop-out
    with pytest.raises(RateError, match="actuator_outputs"):
        f.require_rate(100.0, "cmd")


def test_old_log_raw_pwm(px4_logs: dict[str, Path]) -> None:
    with pytest.warns(UserWarning, match="drop-out"):
        f = read(px4_logs["sample"], motor_input="pwm_us")[0]
    assert f.meta["units"]["cmd"] == "pwm_us"
    np.testing.assert_array_equal(f.cmd, 900.0)


def test_motor_count_override(px4_logs: dict[str, Path]) -> None:
    (f,) = read(px4_logs["sample_px4_events"], motors=6)
    assert f.cmd.shape[1] == 6
    np.testing.assert_array_equal(f.cmd[:, 4:], 0.0)  # NaN = "motor stopped" in PX4
    assert "actuator_motors: NaN (PX4's 'motor stopped') read as 0" in f.meta["notes"]
    with pytest.raises(LogFormatError, match="has 12 outputs, fewer than motors=13"):
        read(px4_logs["sample_px4_events"], motors=13)


def test_bad_ulog_files(tmp_path: Path) -> None:
    p = tmp_path / "bad.ulg"
    p.write_bytes(b"ULog\x01\x12\x35\x01garbage")
    with pytest.raises(LogFormatError, match="not a readable ULog file"):
        read(p)
    with pytest.raises(RotoridError, match="motor_input must be"):
        read(_tiny(tmp_path), motor_input="rpm")


def _tiny(folder: Path) -> Path:
    t = np.arange(50) / 100.0
    return ulog.write(Flight(t=t, gyro=np.zeros((50, 3)), meta={"source": "tiny"}), folder / "tiny.ulg")


# -- the writer -----------------------------------------------------------------------------
@pytest.fixture(scope="session")
def synthetic() -> Flight:
    rng = np.random.default_rng(7)
    n = 1500
    t = 0.25 + np.arange(n) / 1000.0
    eta = np.column_stack([np.sin(t), 0.3 * np.sin(3 * t), 0.2 * np.cos(2 * t)])
    return Flight(
        t=t,
        acc=rng.normal(size=(n, 3)) + np.array([0, 0, 9.81]),
        gyro=rng.normal(size=(n, 3)),
        gyro_dot=rng.normal(size=(n, 3)) * 30,
        cmd=rng.uniform(0.2, 0.8, size=(n, 4)),
        rotor_speed=rng.uniform(500, 2500, size=(n, 4)),
        quat=frames.bryant_to_quat(eta),
        pos=rng.normal(size=(n, 3)),
        vel=rng.normal(size=(n, 3)),
        landed=(t < 0.5) | (t > 1.5),
        vbat=16.8 - 0.8 * (t - t[0]),
        meta={"source": "synthetic"},
    )


@pytest.fixture(scope="session")
def written(synthetic: Flight, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ulog.write(
        synthetic, tmp_path_factory.mktemp("ulog") / "sim.ulg", params={"PWM_MAIN_MIN1": 1000, "MPC_THR_HOVER": 0.42}
    )


def test_pyulog_reads_what_we_write(synthetic: Flight, written: Path) -> None:
    u = ULog(str(written))
    assert u.start_timestamp == 20_000_000
    assert u.initial_parameters["SDLOG_PROFILE"] == 25
    assert u.initial_parameters["PWM_MAIN_MIN1"] == 1000
    assert u.initial_parameters["MPC_THR_HOVER"] == pytest.approx(0.42, rel=1e-7)
    assert u.msg_info_dict["sys_name"] == "rotorid"
    f = synthetic
    us = 20_000_000 + np.rint(f.t * 1e6).astype(np.uint64)
    d = u.get_dataset("vehicle_angular_velocity").data
    np.testing.assert_array_equal(d["timestamp"], us)
    np.testing.assert_array_equal(d["timestamp_sample"], us)
    frd = np.column_stack([d[f"xyz[{i}]"] for i in range(3)])
    np.testing.assert_array_equal(frd, frames.flu_to_frd(f.gyro).astype(np.float32))
    lp = u.get_dataset("vehicle_local_position").data
    np.testing.assert_allclose(lp["z"], -f.pos[:, 2], rtol=1e-6)  # NED down
    np.testing.assert_allclose(lp["x"], f.pos[:, 1], rtol=1e-6)  # north = ENU y
    am = u.get_dataset("actuator_motors").data
    np.testing.assert_allclose(am["control[3]"], f.cmd[:, 3], rtol=1e-6)
    assert np.isnan(am["control[4]"]).all()
    esc = u.get_dataset("esc_status").data
    np.testing.assert_array_equal(esc["esc[2].esc_rpm"], np.rint(f.rotor_speed[:, 2] * 60 / (2 * np.pi)))
    q = np.column_stack([u.get_dataset("vehicle_attitude").data[f"q[{i}]"] for i in range(4)])
    # the same body vector seen in both worlds: R_ned,frd (FRD v) = NED(R_enu,flu v)
    v = np.array([0.3, -1.0, 2.0])
    lhs = frames.quat_to_rot(q).apply(frames.flu_to_frd(v))
    rhs = frames.enu_to_ned(frames.quat_to_rot(f.quat).apply(v))
    np.testing.assert_allclose(lhs, rhs, atol=1e-6)


def test_our_reader_round_trips_within_float32(synthetic: Flight, written: Path) -> None:
    (g,) = read(written)
    f = synthetic
    np.testing.assert_allclose(g.t, f.t, atol=1e-9)
    for ch in ("acc", "gyro", "gyro_dot", "cmd", "pos", "vel"):
        a, b = getattr(g, ch), getattr(f, ch)
        np.testing.assert_allclose(a, b, rtol=2e-7, atol=2e-7 * np.abs(b).max(), err_msg=ch)
    np.testing.assert_allclose(np.abs(np.sum(g.quat * f.quat, axis=1)), 1.0, atol=1e-6)
    np.testing.assert_allclose(g.rotor_speed, f.rotor_speed, atol=0.5 * 2 * np.pi / 60 + 1e-9)  # int32 rpm
    np.testing.assert_array_equal(g.landed, f.landed)
    np.testing.assert_allclose(g.vbat, f.vbat, rtol=1e-7)  # float32 V
    assert g.meta["rates"]["cmd"] == pytest.approx(1000.0)
    assert g.meta["units"]["cmd"] == "normalized"
    assert g.require_rate(250.0, "acc", "gyro", "cmd") is g


def test_writer_decimates_topics_and_rejects_empty_flights(synthetic: Flight, tmp_path: Path) -> None:
    p = ulog.write(synthetic, tmp_path / "slow.ulg", rates={"actuator_motors": 100.0, "vehicle_attitude": 250.0})
    (g,) = read(p)
    assert g.meta["rates"]["cmd"] == pytest.approx(100.0)
    assert g.meta["rates"]["quat"] == pytest.approx(250.0)
    assert g.rate == pytest.approx(1000.0)
    with pytest.raises(RateError, match=r"'cmd' \(topic 'actuator_motors'\) is logged at 100.0 Hz"):
        g.require_rate(250.0, "cmd")
    rad_s = synthetic.replace(cmd=synthetic.cmd * 1000, meta={"source": "x", "units": {"cmd": "rad_s"}})
    (h,) = read(ulog.write(rad_s, tmp_path / "rad_s.ulg"))
    assert h.meta["units"]["cmd"] == "rad_s"
    np.testing.assert_allclose(h.cmd, rad_s.cmd, rtol=1e-7)
    with pytest.raises(RotoridError, match="no channel a ULog topic can hold"):
        ulog.write(Flight(t=np.arange(3.0), meta={"source": "empty"}), tmp_path / "e.ulg")
    assert not (tmp_path / "e.ulg").exists()


def test_battery_voltage_of_the_first_battery_held_over_the_flight(synthetic: Flight, tmp_path: Path) -> None:
    """battery_status at 10 Hz starting 0.2 s late, a 0 V sample (no reading yet): the voltage
    is held back to the IMU's first sample rather than cropping the flight, the 0 V dropped."""
    f = synthetic.replace(vbat=np.where(synthetic.t < 0.3, 0.0, synthetic.vbat))
    p = ulog.write(f, tmp_path / "bat.ulg", rates={"battery_status": 10.0})
    u = ULog(str(p), ["battery_status"])
    np.testing.assert_allclose(u.get_dataset("battery_status").data["voltage_v"], f.vbat[::100], rtol=1e-7)
    (g,) = read(p)
    assert g.t[0] == pytest.approx(f.t[0]) and len(g.t) == len(f.t)
    first = f.vbat[100]  # the first non-zero sample written (t = 0.35 s)
    np.testing.assert_allclose(g.vbat[:101], first, rtol=1e-6)
    np.testing.assert_allclose(g.vbat[200:1401:100], f.vbat[200:1401:100], rtol=1e-6)
    assert any("dropped 1 samples without a reading" in n for n in g.meta["notes"])
    assert g.meta["rates"]["vbat"] == pytest.approx(10.0)


def test_pwm_outputs_of_an_older_px4(synthetic: Flight, tmp_path: Path) -> None:
    p = ulog.write(synthetic, tmp_path / "pwm.ulg", pwm=(1000.0, 2000.0))
    u = ULog(str(p), ["actuator_outputs"])
    np.testing.assert_allclose(
        u.get_dataset("actuator_outputs").data["output[2]"], 1000 + 1000 * synthetic.cmd[:, 2], rtol=1e-7
    )
    assert u.initial_parameters["PWM_MAIN_FUNC3"] == 103
    (f,) = read(p)
    assert f.meta["topics"]["cmd"] == "actuator_outputs"
    assert any("PWM_MAIN_FUNCn" in n for n in f.meta["notes"])
    np.testing.assert_allclose(f.cmd, synthetic.cmd, atol=1e-6)  # float32 µs -> normalized
    (raw,) = read(p, motor_input="pwm_us")
    np.testing.assert_allclose(raw.cmd, 1000 + 1000 * synthetic.cmd, rtol=1e-7)
    # PWM_MAIN_MIN/MAX missing: raw µs with a warning, unless the user gives the range
    q = ulog.write(synthetic, tmp_path / "noparams.ulg", pwm=(1100.0, 1900.0), pwm_params=False)
    with pytest.warns(UserWarning, match="no PWM_MAIN_MIN/MAX"):
        (g,) = read(q)
    assert g.meta["units"]["cmd"] == "pwm_us" and g.cmd.shape[1] == 4
    (h,) = read(q, pwm_range=(1100.0, 1900.0))
    np.testing.assert_allclose(h.cmd, synthetic.cmd, atol=1e-6)
