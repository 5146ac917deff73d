"""ArduPilot DataFlash: the real (cut) ArduCopter fixture, the writer checked by pymavlink
itself (an independent reader) and by our reader, IMU choice, drop-outs, the rate check, the
delay method on a simulated DataFlash flight, and mutation fuzzing."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymavlink import DFReader
from typer.testing import CliRunner

from rotorid import frames
from rotorid.cli import app
from rotorid.errors import LogFormatError, RateError, RotoridError
from rotorid.flight import Flight
from rotorid.io import dataflash, read, write
from rotorid.sim import scenarios


@pytest.fixture(scope="session")
def fixture_log(data_dir: Path) -> Path:
    p = data_dir / "ardupilot" / "backend_log_80k.bin"
    if not p.exists():
        pytest.fail(f"ArduPilot fixture not found: {p}")
    return p


def _read_cut(path: Path, **options) -> list[Flight]:
    with pytest.warns(UserWarning, match=r"ends mid-message after byte 81918 of 81920"):
        return read(path, **options)


def test_real_arducopter_log(fixture_log: Path) -> None:
    (f,) = _read_cut(fixture_log)
    assert f.meta["format"] == "dataflash"
    assert f.meta["topics"] == {"acc": "IMU", "gyro": "IMU", "cmd": "RCOU", "quat": "ATT", "vbat": "BAT"}
    # a 4S pack at rest: BAT.Volt 16.434-16.449 V (4 samples), held over the IMU's span
    assert f.vbat.min() == pytest.approx(16.4344, abs=1e-3) and f.vbat.max() <= 16.4489 + 1e-4
    # on the ground before take-off: specific force ≈ +1 g along body z (FLU), no rotation
    assert np.linalg.norm(f.acc, axis=1) == pytest.approx(frames.GRAVITY, rel=0.02)
    assert np.all(f.acc[:, 2] > 9.5)
    assert np.abs(f.gyro).max() < 0.05
    # RCOU µs scaled by the log's own MOT_PWM_MIN/MAX into 0…1 (disarmed: at or near 0)
    assert f.meta["units"]["cmd"] == "normalized (PWM 1120..1920 µs)"
    assert f.meta["params"]["MOT_PWM_MIN"] == 1120 and f.meta["params"]["MOT_PWM_MAX"] == 1920
    assert f.cmd.shape[1] == 4 and f.cmd.min() >= 0 and f.cmd.max() < 0.1
    assert np.linalg.norm(f.quat, axis=1) == pytest.approx(1.0, abs=1e-6)
    assert f.t[0] == pytest.approx(140.21, abs=0.01)  # TimeUS since boot, in s
    assert "IMU instance 0 (of 0, 1)" in f.meta["notes"]


def test_imu_choice_and_batch_sampler(fixture_log: Path) -> None:
    (first,) = _read_cut(fixture_log)
    (second,) = _read_cut(fixture_log, imu=1)
    assert "IMU instance 1 (of 0, 1)" in second.meta["notes"]
    assert np.abs(first.acc.mean(0) - second.acc.mean(0)).max() > 0.1  # another sensor
    with pytest.raises(RotoridError, match=r"no IMU instance 7; the log has 0, 1"):
        read(fixture_log, imu=7)
    # the batch sampler's gyro samples of IMU 0 at the sensor rate, agreeing with its IMU messages
    (batch,) = _read_cut(fixture_log, imu_source="batch")
    assert batch.meta["topics"]["gyro"] == "ISBD"
    assert batch.meta["rates"]["gyro"] == pytest.approx(2000.3, abs=0.1)  # ISBH smp_rate
    np.testing.assert_allclose(batch.gyro.mean(0), first.gyro.mean(0), atol=1e-3)
    with pytest.raises(RotoridError, match="imu_source must be"):
        read(fixture_log, imu_source="fast")


def test_cli_info_names_the_channels(fixture_log: Path) -> None:
    res = CliRunner().invoke(app, ["info", str(fixture_log)])
    assert res.exit_code == 0, res.output
    assert "dataflash" in res.output and "RCOU" in res.output and "ATT" in res.output


# -- writer ------------------------------------------------------------------------------------
def _flight(n: int, rate: float, t0: float, seed: int, motors: int = 4) -> Flight:
    rng = np.random.default_rng(seed)
    t = t0 + np.arange(n) / rate
    rot = frames.quat_to_rot(np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)))
    yaw = rng.uniform(-3, 3) + 0.3 * np.sin(t)
    q = frames.rot_to_quat(rot.from_euler("ZYX", np.column_stack([yaw, 0.2 * np.sin(2 * t), -0.1 * np.cos(t)])))
    return Flight(
        t=t,
        acc=rng.normal(0, 3, (n, 3)) + np.array([0.0, 0.0, frames.GRAVITY]),
        gyro=rng.normal(0, 2, (n, 3)),
        cmd=rng.uniform(0, 1, (n, motors)),
        rotor_speed=rng.uniform(0, 3000, (n, motors)),
        quat=q,
        vbat=rng.uniform(3.0, 50.0) - 0.1 * (t - t0),
        meta={"source": "synthetic"},
    )


@st.composite
def flights(draw: st.DrawFn) -> Flight:
    n = draw(st.integers(20, 200))
    rate = draw(st.sampled_from([50.0, 400.0, 1000.0]))
    t0 = draw(st.floats(0.0, 5000.0))
    return _flight(n, rate, t0, draw(st.integers(0, 2**16)), draw(st.integers(1, 8)))


def _close(a: Flight, b: Flight, pwm_span: float = 1000.0) -> None:
    """`b` read back from `a` within DataFlash's resolution. The grid may end one sample early:
    `align` floors the span × the rate estimated from whole-µs stamps."""
    assert a.channels == b.channels
    assert len(b.t) >= len(a.t) - 1
    a = a.window(a.t[0], b.t[-1] + 5e-6)
    np.testing.assert_allclose(b.t, a.t, atol=1e-6)  # TimeUS: whole µs
    np.testing.assert_allclose(b.acc, a.acc, rtol=1e-6, atol=1e-5)  # float32
    np.testing.assert_allclose(b.gyro, a.gyro, rtol=1e-6, atol=1e-6)
    # uint16 µs. Commands are held (zero-order) onto the grid, and where a grid time lands an
    # ulp before a stamp `align` holds the previous command: accept either neighbour
    err = np.abs(b.cmd - a.cmd)
    err[1:] = np.minimum(err[1:], np.abs(b.cmd[1:] - a.cmd[:-1]))
    assert err.max() <= 0.5 / pwm_span + 1e-9
    np.testing.assert_allclose(b.rotor_speed, a.rotor_speed, rtol=1e-6, atol=1e-3)  # float32 rpm
    dots = np.abs(np.sum(a.quat * b.quat, axis=1))  # q and -q are one attitude
    assert np.all(dots > 1 - 1e-9)  # float32 degrees: ≤ 1e-4 rad
    np.testing.assert_allclose(b.vbat, a.vbat, rtol=1e-6)  # float32 V


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flights())
def test_round_trip_within_the_format_resolution(tmp_path: Path, flight: Flight) -> None:
    (back,) = read(write(flight, tmp_path / "f.bin"))
    _close(flight, back)
    assert back.meta["units"] == {
        "cmd": "normalized (PWM 1000..2000 µs)",
        "rotor_speed": "rad/s (from ESC rpm)",
        "vbat": "V (BAT.Volt)",
    }


def test_battery_instances_and_an_older_logs_curr(tmp_path: Path) -> None:
    """BAT at 10 Hz with a second battery (instance 1) logged after it: instance 0 is read and
    the other named; an older log's CURR.Volt (int16 V x 100, no FMTU) reads as volts."""
    f = _flight(1000, 400.0, 2.0, seed=8)
    path = dataflash.write(f, tmp_path / "bat.bin", rates={"BAT": 10.0})
    other = dataflash._records("BAT", 3, TimeUS=np.rint(f.t[:3] * 1e6).astype(np.uint64), Inst=1, Volt=7.4)
    path.write_bytes(path.read_bytes() + other.tobytes())
    (a,) = read(path)
    assert a.meta["rates"]["vbat"] == pytest.approx(10.0, rel=1e-3) and len(a.t) == len(f.t)
    np.testing.assert_allclose(a.vbat[::40][:-1], f.vbat[::40][:-1], rtol=1e-6)  # the BAT samples themselves
    assert "BAT: batteries 0, 1 logged; read instance 0" in a.meta["notes"]
    (c,) = read(dataflash.write(f, tmp_path / "curr.bin", battery="CURR"))
    assert c.meta["topics"]["vbat"] == "CURR" and c.meta["units"]["vbat"] == "V (CURR.Volt)"
    np.testing.assert_allclose(c.vbat, f.vbat, atol=0.005 + 1e-9)  # centivolts


def test_pymavlink_reads_what_we_write(tmp_path: Path) -> None:
    f = _flight(300, 400.0, 12.5, seed=3)
    path = dataflash.write(f, tmp_path / "sim.bin", pwm=(1100.0, 1900.0))
    log = DFReader.DFReader_binary(str(path), zero_time_base=False)
    imu = [log.recv_match(type="IMU") for _ in range(300)]
    assert [m.TimeUS for m in imu] == list(np.rint(f.t * 1e6).astype(int))
    frd = frames.flu_to_frd(f.acc)
    np.testing.assert_allclose([[m.AccX, m.AccY, m.AccZ] for m in imu], frd, rtol=1e-6, atol=1e-5)
    assert log.recv_match(type="IMU") is None
    log.rewind()
    rcou = log.recv_match(type="RCOU")
    expected_c1 = round(1100 + 800 * f.cmd[0, 0])
    assert expected_c1 == rcou.C1 and rcou.C5 == 0
    log.rewind()
    att = log.recv_match(type="ATT")  # NED Euler angles in degrees, as ArduPilot logs them
    ypr = np.degrees(frames.quat_to_rot(frames.quat_enu_flu_to_ned_frd(f.quat[:1])).as_euler("ZYX"))[0]
    assert att.Roll == pytest.approx(ypr[2], abs=1e-4) and att.Pitch == pytest.approx(ypr[1], abs=1e-4)
    log.rewind()
    esc = [log.recv_match(type="ESC") for _ in range(4)]
    assert sorted(m.Instance for m in esc) == [0, 1, 2, 3]
    params = {}
    log.rewind()
    while (m := log.recv_match(type="PARM")) is not None:
        params[m.Name] = m.Value
    assert params["MOT_PWM_MIN"] == 1100 and params["SERVO4_FUNCTION"] == 36 and params["LOG_BITMASK"] > 0
    assert log.formats[163].units[2] == "rad/s"  # FMTU/UNIT: pymavlink sees our units


def test_several_imus_pick_the_first_unless_told(tmp_path: Path) -> None:
    f = _flight(100, 400.0, 1.0, seed=4)
    path = dataflash.write(f, tmp_path / "two.bin")
    other = dataflash._records(
        "IMU", 100, TimeUS=np.rint(f.t * 1e6).astype(np.uint64), I=1, AccZ=-5.0, GyrX=0.25
    )  # a second IMU logged after the first (instance 1, FRD)
    path.write_bytes(path.read_bytes() + other.tobytes())
    (a,) = read(path)
    np.testing.assert_allclose(a.acc, f.acc, rtol=1e-6, atol=1e-5)
    (b,) = read(path, imu=1)
    assert np.all(b.acc[:, 2] == 5.0) and np.all(b.gyro[:, 0] == 0.25)


def test_drop_outs_split_the_flight(tmp_path: Path) -> None:
    f = _flight(2000, 1000.0, 3.0, seed=5)
    hole = (np.arange(2000) > 800) & (np.arange(2000) < 850)  # 3.8–3.85 s: 50 periods, below the 0.5 s gap rule
    path = dataflash.write(f.replace(**{c: getattr(f, c)[~hole] for c in f.channels}, t=f.t[~hole]), tmp_path / "d.bin")
    with pytest.warns(UserWarning, match=r"1 logging drop-out\(s\) \(3.80–3.85 s\)"):
        pieces = read(path)
    assert len(pieces) == 2
    assert pieces[0].t[-1] == pytest.approx(3.8) and pieces[1].t[0] == pytest.approx(3.85, abs=1.5e-3)
    assert np.diff(pieces[1].t).max() < 1.5e-3  # nothing interpolated across the hole
    assert pieces[0].meta["align"]["gaps"] == [pytest.approx((3.8, 3.85), abs=1e-6)]


def test_rate_check_names_the_ardupilot_parameters(tmp_path: Path) -> None:
    """ArduCopter logs RCOU at 10 Hz: the delay method refuses it and says what to set."""
    f = _flight(2000, 400.0, 1.0, seed=6)
    (g,) = read(dataflash.write(f, tmp_path / "slow.bin", rates={"RCOU": 10.0}))
    assert g.meta["rates"]["cmd"] == pytest.approx(10.0)
    with pytest.raises(RateError, match=r"'cmd' \(topic 'RCOU'\) is logged at 10.0 Hz") as e:
        g.require_rate(100.0, "cmd")
    for name in ("LOG_BITMASK", "IMU_FAST", "INS_LOG_BAT_MASK", "INS_LOG_BAT_OPT"):
        assert name in str(e.value)


def test_writer_refuses_what_dataflash_cannot_hold(tmp_path: Path) -> None:
    f = _flight(50, 100.0, 0.0, seed=7)
    with pytest.raises(RotoridError, match="not normalized"):
        dataflash.write(f.replace(cmd=f.cmd * 2000.0), tmp_path / "x.bin")
    with pytest.raises(RotoridError, match="cannot be negative"):
        dataflash.write(f.replace(t=f.t - 1.0), tmp_path / "x.bin")
    assert not (tmp_path / "x.bin").exists()
    with pytest.raises(RotoridError, match="motor_input must be"):
        read(dataflash.write(f, tmp_path / "y.bin"), motor_input="rad_s")


def test_rad_s_commands_leave_only_the_rotor_speeds(tmp_path: Path) -> None:
    """A rad_s vehicle's commands have no DataFlash message: the writer says so and writes the
    rotor speeds; the reader takes every ESC instance as a motor when there is no RCOU."""
    f = _flight(200, 400.0, 1.0, seed=10)
    f = f.replace(cmd=f.rotor_speed, meta={"source": "sim", "units": {"cmd": "rad_s"}})
    with pytest.warns(UserWarning, match="no message for motor commands in rad/s"):
        path = dataflash.write(f, tmp_path / "w.bin")
    (g,) = read(path)
    assert "cmd" not in g.channels and g.meta["topics"]["rotor_speed"] == "ESC"
    np.testing.assert_allclose(g.rotor_speed, f.rotor_speed, rtol=1e-6, atol=1e-3)


def test_raw_pwm_when_asked(tmp_path: Path) -> None:
    f = _flight(50, 100.0, 0.0, seed=8)
    (g,) = read(dataflash.write(f, tmp_path / "p.bin", pwm=(1000.0, 2000.0)), motor_input="pwm_us")
    assert g.meta["units"]["cmd"] == "pwm_us"
    np.testing.assert_allclose(g.cmd, np.rint(1000 + 1000 * f.cmd))


# -- end to end on a simulated ArduPilot flight ---------------------------------------------------
def test_delay_method_on_simulated_dataflash_flights(tmp_path: Path) -> None:
    """simulate -> DataFlash -> read -> delay recovers the truth within the tolerances of
    tests/test_delay_sim.py."""
    from rotorid.methods import delay
    from rotorid.result import compare

    sc = scenarios.run("eschmann-crazyflie", seed=0, duration=10.0)
    back = {name: read(write(f, tmp_path / f"{name}.bin")) for name, f in sc.flights.items()}
    r = delay.identify(back["thrust"], sc.vehicle, roll_pitch=back["roll_pitch"], yaw=back["yaw"])
    err = compare(r, sc.truth)
    assert abs(err["tm"]) < 3 and abs(err["hover_cmd"]) < 1
    assert abs(err["I_xx"]) < 5 and abs(err["I_yy"]) < 5 and abs(err["I_zz"]) < 5
    assert abs(err["k_tau"]) < 10


def test_cli_simulates_dataflash(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, ["simulate", "eschmann-crazyflie", "--out", str(tmp_path), "--format", "dataflash", "--duration", "2"]
    )
    assert res.exit_code == 0, res.output
    (f,) = read(tmp_path / "thrust.bin")
    assert f.meta["format"] == "dataflash" and f.duration == pytest.approx(2.0, abs=0.01)


# -- robustness --------------------------------------------------------------------------------
def test_mutation_fuzzing(fixture_log: Path, tmp_path: Path) -> None:
    """Truncation, flipped bytes, absurd lengths and noise on the whole real log (its first
    32 kB, fuzzed in tests/test_fuzz_readers.py, hold headers only) and on a written log with
    every message the reader decodes (IMU, RCOU, ESC, ATT, PARM, FMTU): only RotoridError, no
    hang, no allocation beyond the guard's bound (tests/support/fuzzing.py's worker)."""
    from support.fuzzing import OK, ROTORID, Worker, apply_ops, random_ops

    seeds = [
        fixture_log.read_bytes(),
        dataflash.write(_flight(120, 400.0, 1.0, seed=9), tmp_path / "s.bin").read_bytes(),
    ]
    rng = random.Random(13)
    worker = Worker(timeout=10.0)
    try:
        outcomes = [worker.run(apply_ops(seeds[k % 2], random_ops(rng)), ".bin") for k in range(60)]
    finally:
        worker.close()
    assert [o for o in outcomes if o[0] not in (OK, ROTORID)] == []
    assert {kind for kind, _ in outcomes} == {OK, ROTORID}  # both kinds of outcome are exercised


def test_not_a_dataflash_log(tmp_path: Path) -> None:
    p = tmp_path / "x.bin"
    p.write_bytes(dataflash.MAGIC + b"\x80" + bytes(40))
    with pytest.raises(LogFormatError):
        read(p)


def test_info_proposes_rotor_speed_methods_for_a_rad_s_vehicle(tmp_path: Path) -> None:
    """An ArduPilot log with ESC rpm and no fast RCOU (what ArduCopter can log) and a vehicle
    taking rotor speeds: `info` proposes tls and online (it used to say every method needed
    faster logs, counting the absent commands), not delay (which needs the commands)."""
    sc = scenarios.run("six-config-a", seed=0, duration=8.0)
    with pytest.warns(UserWarning, match="wrote the rotor speeds"):
        log = write(sc.flights["train"], tmp_path / "train.bin")
    veh = tmp_path / "v.toml"
    sc.vehicle.save(veh)
    res = CliRunner().invoke(app, ["info", str(log), "--vehicle", str(veh)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "rotorid identify --method tls" in text and "rotorid identify --method online" in text
    assert "--method delay" not in text and "needs faster logs" not in text
    assert "delay's command" not in text  # no line about a command it does not print
