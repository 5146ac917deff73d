"""Physics of the simulator: tests that catch sign, frame and integration errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rotorid.frames import GRAVITY as G
from rotorid.sim.control import ThrustInverse, euler_zxy
from rotorid.sim.dynamics import Body, accelerations, hover_state, integrate, rotate
from rotorid.sim.sensors import Imu, Mocap, imu, mocap
from rotorid.sim.trajectory import evaluate, move
from rotorid.vehicle import Vehicle, crazyflie, quad_x

# a tumbling-friendly body: full inertia tensor with products, CoM offset, thrust zero at u=0
J_FULL = np.array([[0.021, 0.0012, -0.0017], [0.0012, 0.026, 0.0009], [-0.0017, 0.0009, 0.037]])


def _vehicle(com=(0.0, 0.0, 0.0), inertia=J_FULL, tm: float | None = 0.03) -> Vehicle:
    return quad_x(arm=0.2, mass=1.2).replace(
        motor_input="rad_s",
        thrust_coeffs=np.array([3e-6]),
        k_tau=0.015,
        cmd_min=0.0,
        cmd_max=1500.0,
        inertia=inertia,
        com=np.asarray(com, dtype=float),
        tm_rise=tm,
        tm_fall=tm,
    )


def _cf() -> Vehicle:
    return crazyflie().replace(
        thrust_coeffs=np.array([0.0227, -0.0119, 0.1283]),
        k_tau=0.0055,
        tm_rise=0.07,
        tm_fall=0.07,
        inertia=np.diag([1.57e-5, 1.62e-5, 2.92e-5]),
    )


def _const(cmds):
    return lambda k, s: cmds


def _tumble_state(w=(3.0, -2.0, 5.0)) -> tuple[float, ...]:
    q = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_quat(scalar_first=True)
    return (0.1, -0.2, 5.0, 1.0, 0.5, 2.0, *q, *w)


def test_hover_equilibrium_at_the_analytic_hover_command():
    v = _cf()
    u = v.hover_command()
    body = Body.from_vehicle(v)
    traj = integrate(body, hover_state((0, 0, 1)), [u] * 4, 1e-3, 3000, _const([u] * 4))
    assert np.abs(traj.x - traj.x[0]).max() < 1e-12
    acc = accelerations(body, traj)
    np.testing.assert_allclose(acc["spec_com"], np.tile([0, 0, G], (len(traj.x), 1)), atol=1e-12)
    np.testing.assert_allclose(acc["omega_dot"], 0.0, atol=1e-9)


def test_free_fall_with_motors_off_gives_zero_specific_force():
    v = _vehicle()
    body = Body.from_vehicle(v)
    traj = integrate(body, hover_state((0, 0, 10)), [0.0] * 4, 1e-3, 1000, _const([0.0] * 4))
    acc = accelerations(body, traj)
    assert np.abs(acc["spec_com"]).max() == 0.0
    assert traj.x[-1, 2] == pytest.approx(10 - 0.5 * G * 1.0**2, abs=1e-12)
    assert traj.x[-1, 5] == pytest.approx(-G * 1.0, abs=1e-12)


def test_pure_yaw_torque_with_diagonal_inertia_spins_only_about_z():
    # Crazyflie motors 2 and 4 have torque_dir +1: speeding them up (and slowing 1, 3 by the
    # same thrust) gives a positive body-z moment and no roll/pitch moment.
    v = _cf()
    body = Body.from_vehicle(v)
    u = v.hover_command()
    f_h = float(body.thrust(np.array([u]))[0])
    inv = ThrustInverse(body)
    up, down = inv([f_h + 0.01] * 4)[0], inv([f_h - 0.01] * 4)[0]
    cmds = [down, up, down, up]
    traj = integrate(body, hover_state((0, 0, 1)), [u] * 4, 1e-3, 500, _const(cmds))
    w = traj.x[:, 10:13]
    assert np.abs(w[:, :2]).max() < 1e-12
    assert w[-1, 2] > 0.5  # positive yaw rate, sign set by torque_dir
    acc = accelerations(body, traj)
    # at the end (motors settled near the new state) the z moment is k_tau * sum(dir_i f_i)
    f = body.thrust(traj.u[-1])
    assert acc["moment"][-1, 2] == pytest.approx(0.0055 * float(np.sum(v.torque_dirs * f)), rel=1e-12)


def test_tumbling_body_conserves_energy_and_world_angular_momentum():
    v = _vehicle(com=(0.01, -0.02, 0.005))
    body = Body.from_vehicle(v)
    traj = integrate(body, _tumble_state(), [0.0] * 4, 1e-3, 2000, _const([0.0] * 4))
    x = traj.x
    w, q = x[:, 10:13], x[:, 6:10]
    e_rot = 0.5 * np.einsum("ni,ij,nj->n", w, J_FULL, w)
    e_trans = 0.5 * v.mass * np.sum(x[:, 3:6] ** 2, axis=1) + v.mass * G * x[:, 2]
    l_world = rotate(q, w @ J_FULL.T)
    assert np.ptp(e_rot) / e_rot[0] < 1e-9
    assert np.ptp(e_trans) / e_trans[0] < 1e-9
    assert np.abs(l_world - l_world[0]).max() / np.linalg.norm(l_world[0]) < 1e-9
    assert np.ptp(w, axis=0).min() > 0.5  # it really tumbles (full tensor couples the axes)


def test_rk4_converges_at_fourth_order():
    v = _vehicle(com=(0.01, -0.02, 0.005))
    body = Body.from_vehicle(v)
    cmds = [900.0, 1100.0, 1000.0, 950.0]  # lagged motors: time-varying forcing over the run

    def end(dt: float) -> np.ndarray:
        return integrate(body, _tumble_state(), [400.0] * 4, dt, round(1.0 / dt), _const(cmds)).x[-1]

    ref = end(1 / 3200)
    errs = [np.abs(end(dt) - ref).max() for dt in (1 / 100, 1 / 200, 1 / 400)]
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    assert all(12.0 < r < 20.0 for r in ratios), (errs, ratios)


def test_offset_imu_sees_the_centripetal_term():
    v = _vehicle(inertia=np.diag([0.02, 0.02, 0.04]))
    body = Body.from_vehicle(v)
    spin = 10.0
    traj = integrate(body, (*hover_state((0, 0, 10))[:10], 0.0, 0.0, spin), [0.0] * 4, 1e-3, 100, _const([0.0] * 4))
    acc = accelerations(body, traj)
    r = np.array([0.1, 0.05, -0.02])
    meas = imu(Imu(1000.0), traj.x[:, 10:13], acc["omega_dot"], acc["spec_com"], r, np.random.default_rng(0))
    # free fall, constant spin about z: f = w x (w x r) = -spin^2 (r_x, r_y, 0)
    np.testing.assert_allclose(meas["acc"], np.tile([-(spin**2) * 0.1, -(spin**2) * 0.05, 0.0], (101, 1)), atol=1e-9)
    np.testing.assert_allclose(meas["gyro"], np.tile([0, 0, spin], (101, 1)), atol=1e-12)


def test_com_offset_produces_the_gravity_thrust_moment():
    # CoM 1 cm ahead of the thrust centre, equal rotor thrusts carrying the weight: the nose
    # drops, i.e. a positive pitch acceleration about +y (FLU) of c_x m g / I_yy.
    cx = 0.01
    v = _vehicle(com=(cx, 0.0, 0.0), inertia=np.diag([0.02, 0.025, 0.04]), tm=None)
    body = Body.from_vehicle(v)
    u = float(np.sqrt(v.mass * G / 4 / 3e-6))
    traj = integrate(body, hover_state((0, 0, 1)), [u] * 4, 1e-3, 50, _const([u] * 4))
    wd = accelerations(body, traj)["omega_dot"]
    assert wd[0, 1] == pytest.approx(cx * v.mass * G / 0.025, rel=1e-12)
    assert abs(wd[0, 0]) < 1e-12 and abs(wd[0, 2]) < 1e-12
    assert traj.x[-1, 11] > 0  # pitch rate builds up positive


def test_motor_lag_rise_and_fall_constants_are_exact():
    v = _vehicle(tm=None).replace(tm_rise=0.02, tm_fall=0.05)
    body = Body.from_vehicle(v)
    up = integrate(body, hover_state((0, 0, 100)), [500.0] * 4, 1e-3, 100, _const([900.0] * 4))
    down = integrate(body, hover_state((0, 0, 100)), [900.0] * 4, 1e-3, 100, _const([500.0] * 4))
    t = up.t
    np.testing.assert_allclose(up.u[:, 0], 900 - 400 * np.exp(-t / 0.02), rtol=1e-12)
    np.testing.assert_allclose(down.u[:, 0], 500 + 400 * np.exp(-t / 0.05), rtol=1e-12)
    clamp = integrate(body, hover_state((0, 0, 100)), [500.0] * 4, 1e-3, 10, _const([2000.0] * 4))
    assert clamp.cmd.max() == 1500.0  # saturation at cmd_max


def test_thrust_noise_has_the_requested_sigma_and_zero_mean():
    v = _vehicle(tm=None)
    body = Body.from_vehicle(v)
    u = float(np.sqrt(v.mass * G / 4 / 3e-6))
    noise = 0.0022 * np.random.default_rng(1).standard_normal((20000, 4))
    traj = integrate(body, hover_state((0, 0, 1)), [u] * 4, 1e-3, 20000, _const([u] * 4), thrust_noise=noise)
    f = accelerations(body, traj)["force"][:-1, 2] - v.mass * G
    assert np.std(f) == pytest.approx(0.0022 * 2, rel=0.03)  # 4 rotors: sigma * sqrt(4)
    assert abs(np.mean(f)) < 3 * 0.0044 / np.sqrt(20000)


def test_jerk_limited_move_respects_kwon_limits_and_arrives():
    mv = move(1.0, v_max=0.2, a_max=0.2, j_max=0.5, start=2.0)
    assert mv.duration == pytest.approx(6.4, abs=1e-12)  # 2 (0.4 + 0.6 + 0.4) + 3.6 cruise
    t = np.linspace(0, 10, 20001)
    p, v, a = evaluate([mv], t)
    assert p[-1] == pytest.approx(1.0, abs=1e-12) and p[0] == 0.0
    assert v.max() == pytest.approx(0.2, rel=1e-9) and np.abs(a).max() == pytest.approx(0.2, rel=1e-9)
    jerk = np.diff(a) / np.diff(t)
    assert np.abs(jerk).max() <= 0.5 * (1 + 1e-6)
    np.testing.assert_allclose(np.gradient(p, t), v, atol=1e-4)  # consistent integrals
    short = move(-0.05, v_max=0.2, a_max=0.2, j_max=0.5)  # too short to reach v_max
    ps, vs, _ = evaluate([short], t)
    assert ps[-1] == pytest.approx(-0.05, abs=1e-12) and np.abs(vs).max() < 0.2
    yaw = move(np.radians(45), np.radians(20), np.radians(15))  # double integrator
    assert yaw.duration == pytest.approx(45 / 20 + 20 / 15, abs=1e-12)


def test_thrust_inverse_round_trips_linear_quadratic_and_cubic_curves():
    for coeffs, exps in (
        ([0.0227, -0.0119, 0.1283], (0, 1, 2)),
        ([0.2], (1,)),
        ([0.01, 0.05, 0.02, 0.08], (0, 1, 2, 3)),
    ):
        v = _cf().replace(thrust_coeffs=np.array(coeffs), thrust_exponents=exps)
        body = Body.from_vehicle(v)
        inv = ThrustInverse(body)
        u = np.array([0.2, 0.45, 0.7, 0.95])
        f = body.thrust(u)
        np.testing.assert_allclose(inv(f.tolist()), u, atol=1e-10)
        assert inv([1e3] * 4) == [1.0] * 4  # clamped to the thrust at cmd_max


def test_euler_zxy_matches_scipy():
    angles = np.array([0.3, -0.4, 1.2])  # roll, pitch, yaw of R = Rz(yaw) Rx(roll) Ry(pitch)
    r = Rotation.from_euler("ZXY", [angles[2], angles[0], angles[1]])
    q = r.as_quat(scalar_first=True)
    np.testing.assert_allclose(euler_zxy(*q), angles, atol=1e-12)


def test_sensor_noise_density_quantization_and_mocap_delay():
    rng = np.random.default_rng(3)
    n = 40000
    w = np.zeros((n, 3))
    spec = Imu(rate=1000.0, gyro_nd=1e-3, acc_nd=2e-3, acc_bias=(0.1, 0.0, 0.0), acc_res=0.01)
    m = imu(spec, w, w, np.tile([0, 0, G], (n, 1)), np.zeros(3), rng)
    # Kwon eq. 49-50: sigma = ND sqrt(rate)
    assert np.std(m["gyro"], axis=0) == pytest.approx(np.full(3, 1e-3 * np.sqrt(1000)), rel=0.02)
    np.testing.assert_allclose(np.round(m["acc"] / 0.01) * 0.01, m["acc"], atol=1e-12)
    assert np.mean(m["acc"][:, 0]) == pytest.approx(0.1, abs=0.003)
    t = np.arange(1001) * 1e-3
    pos = np.column_stack([np.sin(t), t, t**2])
    q = np.tile([1.0, 0, 0, 0], (1001, 1))
    mc = mocap(Mocap(100.0, delay=0.02), t, pos, q, np.arange(101) / 100.0, rng)
    np.testing.assert_allclose(mc["pos"][10:], pos[np.arange(10, 101) * 10 - 20], atol=1e-12)
    np.testing.assert_allclose(mc["pos"][:2], np.tile(pos[0], (2, 1)), atol=1e-12)  # held before the start


def test_gyro_dot_is_the_filtered_gyro_derivative():
    t = np.arange(2000) * 1e-3
    alpha = np.array([2.0, -1.0, 0.5])
    w = np.outer(t, alpha)
    m = imu(
        Imu(1000.0, gyro_dot_cutoff=30.0),
        w,
        np.tile(alpha, (2000, 1)),
        np.zeros((2000, 3)),
        np.zeros(3),
        np.random.default_rng(0),
    )
    np.testing.assert_allclose(m["gyro_dot"][200:], np.tile(alpha, (1800, 1)), rtol=1e-6)


def test_linear_body_drag_decays_velocity_exponentially():
    # level, not rotating, yawed 30 deg, motors off: horizontal velocity decays as exp(-d t / m)
    v = _vehicle()
    body = Body.from_vehicle(v, drag=(0.6, 0.6, 0.0))
    x0 = (*hover_state((0, 0, 10), yaw=np.radians(30))[:3], 2.0, -1.0, 0.0, *hover_state(yaw=np.radians(30))[6:])
    traj = integrate(body, x0, [0.0] * 4, 1e-3, 1000, _const([0.0] * 4))
    decay = np.exp(-0.6 * traj.t / v.mass)
    np.testing.assert_allclose(traj.x[:, 3:5], np.outer(decay, [2.0, -1.0]), rtol=1e-9)
    acc = accelerations(body, traj)["acc_com"]
    np.testing.assert_allclose(acc[:, :2], -0.6 / v.mass * traj.x[:, 3:5], atol=1e-12)
