"""Named scenarios: determinism, truth consistency and the excitation each paper needs."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.errors import RotoridError
from rotorid.excitation import measure
from rotorid.frames import GRAVITY as G
from rotorid.signal import motor_lag
from rotorid.sim import scenarios
from rotorid.sim.scenarios import SIX_I_A, SIX_MS_A, six_mass_properties


@pytest.fixture(scope="session")
def cf():
    return scenarios.run("eschmann-crazyflie", seed=0, duration=8.0)


@pytest.fixture(scope="session")
def kwon():
    return scenarios.run("kwon-payload", seed=0, duration=20.0)


@pytest.fixture(scope="session")
def six_b():
    return scenarios.run("six-config-b", seed=0, duration=6.0, noise=False)


def test_names_and_bad_input():
    assert scenarios.PAPER == ("eschmann-crazyflie", "kwon-payload", "six-config-a", "six-config-b")
    variants = tuple(f"{n}{v}" for v in ("-mismatch", "-random") for n in scenarios.PAPER)
    assert scenarios.PAPER + variants + tuple(scenarios.CHIRP) == scenarios.NAMES
    with pytest.raises(RotoridError, match="unknown scenario 'nope'"):
        scenarios.run("nope")
    with pytest.raises(RotoridError, match=r"unknown override.*durration.*allowed: .*duration"):
        scenarios.run("six-config-a", durration=3)
    with pytest.raises(RotoridError, match="non-negative"):
        scenarios.run("six-config-a", seed=-1)
    with pytest.raises(RotoridError, match="duration must be positive"):
        scenarios.run("six-config-a", duration=-1.0)


def test_same_seed_same_arrays_other_seed_differs():
    first = scenarios.run("eschmann-crazyflie", seed=0, duration=3.0)
    again = scenarios.run("eschmann-crazyflie", seed=0, duration=3.0)
    other = scenarios.run("eschmann-crazyflie", seed=1, duration=3.0)
    for name, f in first.flights.items():
        for ch in f.channels:
            np.testing.assert_array_equal(getattr(f, ch), getattr(again.flights[name], ch))
        assert not np.array_equal(f.gyro, other.flights[name].gyro)
    assert first.truth.params == again.truth.params


def test_eschmann_flights_channels_truth_and_user_vehicle(cf):
    assert set(cf.flights) == {"thrust", "roll_pitch", "yaw"}
    f = cf.flights["thrust"]
    assert f.channels == ["acc", "gyro", "cmd"] and f.rate == pytest.approx(1000.0)
    assert f.duration == pytest.approx(8.0)
    p = cf.truth.params
    assert p["tm"] == 0.07 and (p["thrust_c0"], p["thrust_c1"], p["thrust_c2"]) == (0.0227, -0.0119, 0.1283)
    assert p["I_zz"] == pytest.approx(1.832 * (p["I_xx"] + p["I_yy"]) / 2)
    assert p["hover_cmd"] == pytest.approx(0.6305, abs=1e-4)  # the real logs hover at a median 0.64
    assert 4 * (0.0227 - 0.0119 * p["hover_cmd"] + 0.1283 * p["hover_cmd"] ** 2) == pytest.approx(0.027 * G)
    v = cf.vehicle
    assert v.thrust_coeffs is None and v.inertia is None and v.tm_rise is None and v.k_tau is None
    assert v.motor_input == "normalized" and v.mass == 0.027 and v.thrust_exponents == (0, 1, 2)


def test_eschmann_thrust_flight_identifies_the_lag_at_its_true_value(cf):
    """The thrust-curve least squares of Eschmann eq. 21 on the simulated thrust flight has its
    minimum residual at the true T_m and recovers K (up to the accelerometer bias)."""
    f = cf.flights["thrust"]

    def fit(tm: float) -> tuple[np.ndarray, float]:
        u = motor_lag(f.cmd, f.t, tm)
        a = np.column_stack([np.sum(u**j, axis=1) for j in range(3)])
        x, res, *_ = np.linalg.lstsq(a, 0.027 * f.acc[:, 2], rcond=None)
        return x, float(res[0])

    x, r0 = fit(0.07)
    assert r0 < 0.5 * fit(0.06)[1] and r0 < 0.5 * fit(0.08)[1]
    np.testing.assert_allclose(x, [0.0227, -0.0119, 0.1283], rtol=0.05, atol=6e-4)


def test_eschmann_flights_excite_their_axes(cf):
    e = {k: {a: m.value for a, m in measure(f).axes.items()} for k, f in cf.flights.items()}
    assert e["thrust"]["thrust"] > 0.1 and e["thrust"]["roll"] < 10
    assert e["roll_pitch"]["roll"] > 20 and e["roll_pitch"]["pitch"] > 20
    assert e["yaw"]["yaw"] > 8 and e["yaw"]["yaw"] > max(e["yaw"]["roll"], e["yaw"]["pitch"])
    assert e["yaw"]["yaw"] > 2 * e["roll_pitch"]["yaw"]


def test_asymmetric_lag_override_reaches_truth():
    sc = scenarios.run("eschmann-crazyflie", seed=2, duration=2.0, tm_rise=0.05, tm_fall=0.09, noise=False)
    assert sc.truth.params["tm_rise"] == 0.05 and sc.truth.params["tm_fall"] == 0.09
    assert sc.truth.params["tm"] == pytest.approx(0.07)
    assert sc.true_vehicle.tm_rise == 0.05 and sc.true_vehicle.tm_fall == 0.09


def test_kwon_truth_tables_and_equations(kwon):
    p = kwon.truth.params
    assert (p["I_xx"], p["I_yy"], p["I_zz"]) == (0.05, 0.05, 0.06)  # Table 3, g m^2 -> kg m^2
    assert (p["com_x"], p["com_y"], p["mass"]) == (0.008, -0.021, 0.5)
    # IMU 18/21/-11 mm from the CoM (Table 4), reported from the body origin like Vehicle.imu_offset
    np.testing.assert_allclose([p["imu_x"], p["imu_y"], p["imu_z"]], [-0.010, 0.0, -0.011], atol=1e-15)
    v = kwon.vehicle
    assert v.motor_input == "rad_s" and v.thrust_coeffs is not None and v.k_tau == pytest.approx(1 / 0.7)
    assert v.inertia is None and v.com is None
    f, st = kwon.flights["trajectory"], kwon.states["trajectory"]
    assert f.channels == ["acc", "gyro", "cmd", "rotor_speed", "quat", "pos"] and f.rate == pytest.approx(1000.0)
    # the autopilot's attitude and position (eq. 44-46), noise-free like the paper's controller uses
    np.testing.assert_allclose(f.quat, st["quat"] * np.sign(st["quat"][:, :1]), atol=1e-12)
    np.testing.assert_allclose(f.pos, st["pos"], atol=1e-12)
    # Kwon eq. 10 (H_1 theta_1 = M about the geometric centre) holds on the true signals up to
    # the thrust noise (eq. 51), computed from the logged rotor speeds.
    fr = 1.9e-6 * f.rotor_speed**2
    wr = fr @ kwon.true_vehicle.mixer().T
    w, wd, thrust = st["omega"], st["omega_dot"], wr[:, 2]
    j = np.diag([0.05, 0.05, 0.06])
    # c x [0, 0, T] with c = (8, -21, 0) mm
    lhs = wd @ j + np.cross(w, w @ j) + np.column_stack([-0.021 * thrust, -0.008 * thrust, 0 * thrust])
    res = wr[:, 3:] - lhs
    lever = np.array([0.2 / np.sqrt(2)] * 2 + [1 / 0.7])
    assert np.all(np.std(res, axis=0) < 3 * 0.0022 * 2 * lever)
    assert np.all(np.abs(np.mean(res, axis=0)) < 1e-4)


def test_kwon_intervals_excite_what_the_paper_says(kwon):
    f, st = kwon.flights["trajectory"], kwon.states["trajectory"]
    iv = f.meta["sim"]["intervals"]
    t, wd, w = st["t"], st["omega_dot"], st["omega"]

    def rms(i: str) -> np.ndarray:
        a, b = iv[i]
        s = (t >= a) & (t < b)
        return np.sqrt(np.mean(wd[s] ** 2, axis=0)), np.abs(w[s]).max(axis=0)

    (a1, w1), (a2, w2), (_, w3) = rms("1"), rms("2"), rms("3")
    assert np.all(a2[:2] > 4 * a1[:2])  # Interval 2 (x-y move) excites roll and pitch
    assert np.all(w2[:2] > 0.03) and np.all(w1[:2] < 0.01)
    assert w3[2] == pytest.approx(np.radians(20), rel=0.05)  # Interval 3: yaw at the 20 deg/s limit
    assert w1[2] < 0.02 and w2[2] < 0.02
    np.testing.assert_allclose(st["pos_com"][-1], [1.0, 1.0, 1.0], atol=0.03)  # the targets reached


def test_six_truth_about_the_body_origin():
    m, ms, i_o = six_mass_properties("A")
    assert m == 1.285
    np.testing.assert_array_equal(ms, SIX_MS_A)
    np.testing.assert_array_equal(i_o, SIX_I_A)
    mb, msb, ib = six_mass_properties("B")
    assert mb == pytest.approx(1.452)  # as measured in the paper
    np.testing.assert_allclose(msb - ms, [0.125 * 0.225, -0.042 * 0.225, -0.167 * 0.028])
    assert ib[1, 1] - i_o[1, 1] == pytest.approx(0.125 * (0.225**2 + 0.028**2) + 0.042 * 0.028**2)
    assert ib[0, 2] - i_o[0, 2] == pytest.approx(-0.125 * 0.225 * -0.028)


def test_six_flights_satisfy_the_newton_euler_equations_about_o_d(six_b):
    """Six et al. eq. (1)-(2) with the truth (IMU at O_d, noise off) hold to rounding."""
    p = six_b.truth.params
    ms = np.array([p["ms_x"], p["ms_y"], p["ms_z"]])
    i_o = np.array(
        [[p["I_xx"], p["I_xy"], p["I_xz"]], [p["I_xy"], p["I_yy"], p["I_yz"]], [p["I_xz"], p["I_yz"], p["I_zz"]]]
    )
    f, st = six_b.flights["train"], six_b.states["train"]
    wr = p["k_t"] * f.rotor_speed**2 @ six_b.true_vehicle.mixer(k_tau=p["k_d"] / p["k_t"]).T
    w, wd, acc = f.gyro, st["omega_dot"], f.acc
    r1 = p["mass"] * acc + np.cross(wd, ms) + np.cross(w, np.cross(w, ms)) - wr[:, :3]
    r2 = wd @ i_o.T + np.cross(w, w @ i_o.T) + np.cross(ms, acc) - wr[:, 3:]
    assert np.abs(r1).max() < 1e-10 and np.abs(r2).max() < 1e-10
    assert np.abs(wr[:, 3:]).max(axis=0).min() > 0.02  # and the moments are not trivially zero
    assert f.channels == ["acc", "gyro", "cmd", "rotor_speed", "quat", "pos"] and f.rate == pytest.approx(200.0)


def test_six_mocap_delay_and_pilot_excitation():
    sc = scenarios.run("six-config-a", seed=0, duration=12.0, mocap_delay=0.01, tm=0.03)
    assert sc.truth.params["tm"] == 0.03 and sc.true_vehicle.tm_rise == 0.03
    f, st = sc.flights["train"], sc.states["train"]
    # mocap position is the true body-origin position 2 samples (10 ms) earlier, plus 0.3 mm noise
    d = f.pos[2:] - st["pos"][:-2]
    assert np.std(d) == pytest.approx(3e-4, rel=0.1) and abs(np.mean(d)) < 1e-4
    e = measure(f).axes
    assert e["roll"].value > e["pitch"].value > 0.5 and e["thrust"].value > 0.03  # pilot: roll > pitch
    assert e["yaw"].value > 0.3  # some yaw, which configuration B needs for k_d and I_zz
    assert np.ptp(st["pos"][:, :2], axis=0).max() < 6.0  # stays in a 6 x 4 m arena
    assert not np.array_equal(f.gyro, sc.flights["test"].gyro)
    assert sc.vehicle.thrust_coeffs is None and sc.vehicle.mass == 1.285


def test_six_optional_gyro_dot_and_drag_overrides():
    sc = scenarios.run("six-config-a", seed=0, duration=3.0, gyro_dot=True, drag=(0.3, 0.3, 0.5))
    f, st = sc.flights["train"], sc.states["train"]
    assert "gyro_dot" in f.channels
    # PX4-like: the filtered derivative of the gyro follows the true angular acceleration
    err = f.gyro_dot[200:] - st["omega_dot"][200:]
    assert np.sqrt(np.mean(err**2)) < 0.3 * np.sqrt(np.mean(st["omega_dot"][200:] ** 2))
    assert "gyro_dot" not in scenarios.run("six-config-a", seed=0, duration=1.0).flights["train"].channels
