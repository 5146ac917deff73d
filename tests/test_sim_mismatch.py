"""Model-mismatch effects of the simulator (issue 11): rotor drag, IMU biases and their random
walk, IMU time offset, per-motor thrust and lag spread, the yaw-inertia ratio, and the
`*-mismatch` scenarios built from them."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.frames import GRAVITY as G
from rotorid.sim import scenarios
from rotorid.sim.dynamics import Body, accelerations, hover_state, integrate, rotate
from rotorid.sim.sensors import Imu, bias_walk, imu
from rotorid.vehicle import quad_x

K_RD = 0.004  # N s/m per sqrt(N)


def _vehicle(com=(0.0, 0.0, 0.0), tm: float | None = None):
    return quad_x(arm=0.2, mass=1.2).replace(
        motor_input="rad_s",
        thrust_coeffs=np.array([3e-6]),
        k_tau=0.015,
        cmd_min=0.0,
        cmd_max=1500.0,
        inertia=np.diag([0.02, 0.02, 0.04]),
        com=np.asarray(com, dtype=float),
        tm_rise=tm,
        tm_fall=tm,
    )


def _const(cmds):
    return lambda k, s: cmds


def _hover_speed(v) -> float:
    return float(np.sqrt(v.mass * G / 4 / 3e-6))


def test_rotor_drag_decays_horizontal_velocity_at_the_stated_rate():
    # level, yawed 30 deg, rotors carrying the weight (rotor speed = sqrt(f) per the model):
    # F = -k sum_i sqrt(f_i) v_perp, so v_h = v0 exp(-k 4 sqrt(f) t / m); no vertical force
    v = _vehicle()
    body = Body.from_vehicle(v, rotor_drag=K_RD)
    u = _hover_speed(v)
    yaw = np.radians(30)
    x0 = (*hover_state((0, 0, 10), yaw=yaw)[:3], 2.0, -1.0, 0.0, *hover_state(yaw=yaw)[6:])
    traj = integrate(body, x0, [u] * 4, 1e-3, 1000, _const([u] * 4))
    d = K_RD * 4 * np.sqrt(v.mass * G / 4)  # N s/m
    np.testing.assert_allclose(traj.x[:, 3:5], np.outer(np.exp(-d * traj.t / v.mass), [2.0, -1.0]), rtol=1e-9)
    np.testing.assert_allclose(traj.x[:, 5], 0.0, atol=1e-12)  # thrust axis: no drag along it
    np.testing.assert_allclose(traj.x[:, 10:13], 0.0, atol=1e-12)  # hubs in the CoM plane: no moment
    acc = accelerations(body, traj)
    np.testing.assert_allclose(acc["acc_com"][:, :2], -d / v.mass * traj.x[:, 3:5], atol=1e-12)
    # and the accelerometer sees it: specific force along the body velocity, against it
    vb = rotate(traj.x[:, 6:10], traj.x[:, 3:6], inverse=True)
    np.testing.assert_allclose(acc["spec_com"][:, :2], -d / v.mass * vb[:, :2], atol=1e-12)


def test_rotor_drag_at_hubs_above_the_com_pitches_the_nose_up():
    # CoM 5 cm below the rotor plane, flying forward (+x): the hubs' drag -a x acts 5 cm above
    # the CoM, moment r x F = (0, -0.05 a, 0): negative about +y (FLU), nose up, as flapping does
    v = _vehicle(com=(0.0, 0.0, -0.05))
    body = Body.from_vehicle(v, rotor_drag=K_RD)
    u = np.full((1, 4), _hover_speed(v))
    vb, w = np.array([[3.0, 0.0, 0.0]]), np.zeros((1, 3))
    wr = body.rotor_drag_wrench(u, vb, w)[0]
    a = K_RD * 4 * np.sqrt(v.mass * G / 4) * 3.0
    np.testing.assert_allclose(wr, [-a, 0.0, 0.0, 0.0, -0.05 * a, 0.0], atol=1e-12)
    # rotating, the hubs' own speed w x r counts too: a pure yaw rate gives tangential drag
    # that opposes the rotation (a damping moment about z), and no net force
    wr = body.rotor_drag_wrench(u, np.zeros((1, 3)), np.array([[0.0, 0.0, 2.0]]))[0]
    r2 = np.sum(v.positions[:, :2] ** 2)
    np.testing.assert_allclose(wr, [0, 0, 0, 0, 0, -K_RD * np.sqrt(v.mass * G / 4) * 2.0 * r2], atol=1e-12)
    assert Body.from_vehicle(v).rotor_drag is None
    np.testing.assert_array_equal(Body.from_vehicle(v).rotor_drag_wrench(u, vb, w), 0.0)


def test_imu_bias_appears_exactly_and_the_walk_is_seeded_with_its_density():
    n = 20000
    rng = np.random.default_rng(1)
    w, wd, f = rng.standard_normal((n, 3)), rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
    spec = Imu(500.0, gyro_bias=(0.01, -0.02, 0.03), acc_bias=(0.1, 0.2, -0.3))
    m = imu(spec, w, wd, f, np.zeros(3), np.random.default_rng(0))
    np.testing.assert_allclose(m["gyro"] - w, np.tile([0.01, -0.02, 0.03], (n, 1)), atol=1e-15)
    np.testing.assert_allclose(m["acc"] - f, np.tile([0.1, 0.2, -0.3], (n, 1)), atol=1e-15)
    walk = Imu(500.0, gyro_rw=2e-3, acc_rw=5e-3)
    a = imu(walk, w, wd, f, np.zeros(3), np.random.default_rng(7))
    b = imu(walk, w, wd, f, np.zeros(3), np.random.default_rng(7))
    np.testing.assert_array_equal(a["gyro"], b["gyro"])
    dg, da = a["gyro"] - w, a["acc"] - f
    np.testing.assert_array_equal(dg[0], 0.0)  # the walk starts at the constant bias (here 0)
    assert np.std(np.diff(dg, axis=0)) == pytest.approx(2e-3 / np.sqrt(500.0), rel=0.02)
    assert np.std(np.diff(da, axis=0)) == pytest.approx(5e-3 / np.sqrt(500.0), rel=0.02)
    ws = bias_walk(1.0, 100, 100.0, np.random.default_rng(3))
    assert ws.shape == (100, 3) and not np.array_equal(ws, bias_walk(1.0, 100, 100.0, np.random.default_rng(4)))
    assert Imu(500.0, gyro_rw=1.0, delay=0.004).noiseless() == Imu(500.0, delay=0.004)


def test_imu_time_offset_delays_every_imu_channel_and_nothing_else():
    base = scenarios.run("eschmann-crazyflie", seed=0, duration=2.0, noise=False)
    late = scenarios.run("eschmann-crazyflie", seed=0, duration=2.0, noise=False, imu_delay=0.004)
    f0, f1 = base.flights["roll_pitch"], late.flights["roll_pitch"]
    np.testing.assert_array_equal(f1.cmd, f0.cmd)  # same flight: the controller uses the true state
    np.testing.assert_allclose(f1.gyro[4:], f0.gyro[:-4], atol=1e-12)  # 4 samples at 1 kHz
    np.testing.assert_allclose(f1.acc[4:], f0.acc[:-4], atol=1e-12)
    assert np.abs(f1.gyro[4:] - f0.gyro[4:]).max() > 1e-3  # and the shift matters
    assert late.truth.vehicle["mismatch"] == {"imu_delay": 0.004}
    assert "mismatch" not in base.truth.vehicle


def test_motor_time_constant_spread_is_per_motor_and_exact():
    v = _vehicle(tm=0.02)
    scale = (0.95, 1.0, 1.05, 1.02)
    body = Body.from_vehicle(v, tm_scale=scale)
    traj = integrate(body, hover_state((0, 0, 100)), [400.0] * 4, 1e-3, 100, _const([900.0] * 4))
    expect = 900.0 - 500.0 * np.exp(-np.outer(traj.t, 1.0 / (0.02 * np.asarray(scale))))
    np.testing.assert_allclose(traj.u, expect, rtol=1e-12)


def test_thrust_spread_is_seeded_shows_in_per_motor_thrust_and_truth_is_the_mean():
    opts = {"duration": 2.0, "noise": False}
    sc = scenarios.run("eschmann-crazyflie", seed=4, thrust_spread=0.05, tm_spread=0.05, **opts)
    again = scenarios.run("eschmann-crazyflie", seed=4, thrust_spread=0.05, tm_spread=0.05, **opts)
    other = scenarios.run("eschmann-crazyflie", seed=5, thrust_spread=0.05, tm_spread=0.05, **opts)
    rec = sc.truth.vehicle["mismatch"]
    s = np.array(rec["thrust_scale"])
    assert rec == again.truth.vehicle["mismatch"] and not np.allclose(
        s, other.truth.vehicle["mismatch"]["thrust_scale"]
    )
    assert np.all(np.abs(s - 1) <= 0.05) and np.std(s) > 0.005
    st = sc.states["thrust"]
    nominal = Body.from_vehicle(sc.true_vehicle.replace(thrust_coeffs=np.array([0.0227, -0.0119, 0.1283])))
    np.testing.assert_allclose(st["thrust"] / nominal.thrust(st["u"]), np.tile(s, (len(st["u"]), 1)), rtol=1e-12)
    p = sc.truth.params
    assert p["thrust_c2"] == pytest.approx(0.1283 * s.mean(), rel=1e-12)
    assert p["thrust_c2_m3"] == pytest.approx(0.1283 * s[2], rel=1e-12)
    ts = np.array(rec["tm_scale"])
    assert p["tm"] == pytest.approx(0.07 * ts.mean()) and p["tm_m1"] == pytest.approx(0.07 * ts[0])
    # the lumped truth is consistent: the mean curve carries the weight at hover_cmd
    assert sc.true_vehicle.hover_command() == p["hover_cmd"]
    c = np.array([p["thrust_c0"], p["thrust_c1"], p["thrust_c2"]])
    assert 4 * np.polyval(c[::-1], p["hover_cmd"]) == pytest.approx(0.027 * G, rel=1e-9)


def test_yaw_inertia_ratio_override():
    sc = scenarios.run("eschmann-crazyflie", seed=0, duration=1.0, noise=False, izz_ratio=2.02)
    p = sc.truth.params
    assert p["I_zz"] == pytest.approx(2.02 * 0.5 * (p["I_xx"] + p["I_yy"]))
    assert sc.true_vehicle.inertia[2, 2] == p["I_zz"]


@pytest.mark.parametrize("name", list(scenarios.MISMATCH))
def test_mismatch_variant_with_its_effects_off_is_its_base_scenario(name):
    base, extra = scenarios.MISMATCH[name]
    off = {k: 0.0 for k in ("rotor_drag", "thrust_spread", "tm_spread", "gyro_rw", "acc_rw", "imu_delay")}
    off |= {k: v for k, v in scenarios.OVERRIDES[base].items() if k in extra}  # izz_ratio, mocap_delay
    off |= {k: scenarios.OVERRIDES[base]["tm"] for k in ("tm_rise", "tm_fall") if k in extra}  # the base's one lag
    own = {"eschmann-crazyflie": ((0.002, -0.003, 0.001), (0.03, -0.02, 0.05))}
    own |= dict.fromkeys(("six-config-a", "six-config-b"), ((0.001, -0.0015, 0.0008), (0.02, -0.015, 0.03)))
    g, a = own.get(base, ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    dur = 10.0 if base == "kwon-payload" else 1.0  # (kwon needs 10 s for its three intervals)
    m = scenarios.run(name, seed=2, duration=dur, gyro_bias=g, acc_bias=a, **off)
    b = scenarios.run(base, seed=2, duration=dur)
    for fname, f in b.flights.items():
        for ch in f.channels:
            np.testing.assert_array_equal(getattr(m.flights[fname], ch), getattr(f, ch))
    assert m.truth.params == b.truth.params


def test_mismatch_scenarios_switch_every_effect_on_and_record_it():
    sc = scenarios.run("eschmann-crazyflie-mismatch", seed=0, duration=2.0)
    rec = sc.truth.vehicle["mismatch"]
    assert set(rec) == {
        "thrust_scale",
        "tm_scale",
        "rotor_drag_per_mass_at_hover",
        "k_rotor_drag",
        "gyro_bias",
        "acc_bias",
        "gyro_rw",
        "acc_rw",
        "imu_delay",
    }
    # k_rd gives the stated D/m at hover: k_rd * 4 sqrt(m g / 4) / m
    assert rec["k_rotor_drag"] * 4 * np.sqrt(0.027 * G / 4) / 0.027 == pytest.approx(0.3)
    assert sc.truth.params["I_zz"] == pytest.approx(2.02 * 0.5 * (1.57e-5 + 1.62e-5))
    assert sc.vehicle.inertia is None and sc.vehicle.thrust_coeffs is None  # the user knows no more
    # configurations A and B of the Six vehicle share their propellers: the same spread, the same k_rd
    a = scenarios.run("six-config-a-mismatch", seed=3, duration=1.0).truth.vehicle["mismatch"]
    b = scenarios.run("six-config-b-mismatch", seed=3, duration=1.0).truth.vehicle["mismatch"]
    for k in ("thrust_scale", "tm_scale", "k_rotor_drag"):
        assert a[k] == b[k]
    assert a["mocap_delay"] == 0.008
