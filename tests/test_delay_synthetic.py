"""Delay method on small synthetic flights built directly from the model equations (fast, no
simulator): T_m and thrust-curve recovery, rising/falling constants, bad input, the errors-in-
variables ordering of the roll/pitch parameterizations, and the yaw coefficient."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import cumulative_trapezoid

from rotorid.errors import ExcitationError, RotoridError
from rotorid.flight import Flight
from rotorid.methods import delay
from rotorid.result import verdict
from rotorid.signal import butter_filtfilt, motor_lag, motor_lag_asymmetric
from rotorid.vehicle import Vehicle

K = np.array([0.0225, -0.0115, 0.128])  # per-rotor thrust curve over (0, 1, 2), like the Crazyflie
FS = 500.0


def _steps(rng: np.random.Generator, n: int, lo: float, hi: float, hold: int) -> np.ndarray:
    """Piecewise-constant random levels held for ~`hold` samples (throttle steps)."""
    k = n // hold + 1
    return np.repeat(rng.uniform(lo, hi, k), hold)[:n]


def thrust_flight(
    seed: int = 0, tm=(0.05, 0.05), duration: float = 12.0, noise: float = 0.3, jitter: bool = True
) -> Flight:
    """Vertical excitation: common throttle steps + small per-motor dither; acc_z = Σ f / m + noise."""
    rng = np.random.default_rng(seed)
    n = int(duration * FS)
    dt = np.full(n - 1, 1.0 / FS) * (rng.uniform(0.8, 1.2, n - 1) if jitter else 1.0)
    t = np.concatenate([[0.0], np.cumsum(dt)])
    u = _steps(rng, n, 0.35, 0.85, int(0.25 * FS))[:, None] + 0.02 * rng.standard_normal((n, 4))
    w = motor_lag_asymmetric(u, t, *tm) if tm[0] != tm[1] else motor_lag(u, t, tm[0])
    f = K[0] + K[1] * w + K[2] * w**2
    acc = np.zeros((n, 3))
    acc[:, 2] = f.sum(axis=1) / 0.027 + noise * rng.standard_normal(n)
    return Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"source": f"synthetic-thrust-{seed}"})


def attitude_flight(
    vehicle: Vehicle, inertia, tm: float, k_tau: float, seed: int, duration: float, gyro_noise: float, yaw: bool
) -> Flight:
    """Roll/pitch (or yaw) excitation about hover: differential commands through the lag give
    torques, ω̇ = τ / I (the paper's decoupled small-rate model, eq. 80: identify these with
    `gyroscopic=False`), gyro = ω + white noise."""
    rng = np.random.default_rng(seed)
    n = int(duration * FS)
    t = np.arange(n) / FS
    smooth = lambda x: butter_filtfilt(x, FS, 4.0)
    mix = vehicle.mixer(k_tau=k_tau)[3:]  # (3, M)
    exc = smooth(rng.standard_normal((n, 3)))
    exc /= exc.std(axis=0)
    scale = np.array([0.0, 0.0, 2e-4]) if yaw else np.array([5e-4, 5e-4, 2e-5])  # torque std (N m)
    u = 0.63 + (exc * scale) @ np.linalg.pinv(mix).T / 0.15  # 0.15 N per unit command near hover
    w = motor_lag(u, t, tm)
    f = K[0] + K[1] * w + K[2] * w**2
    tau = f @ mix.T
    wdot = tau / np.asarray(inertia)
    omega = cumulative_trapezoid(wdot, t, axis=0, initial=0.0)
    gyro = omega + gyro_noise * rng.standard_normal((n, 3))
    acc = np.tile([0.0, 0.0, 9.80665], (n, 1))
    return Flight(t=t, acc=acc, gyro=gyro, cmd=u, meta={"source": f"synthetic-attitude-{seed}"})


@pytest.fixture(scope="module")
def cf() -> Vehicle:
    return Vehicle.preset("crazyflie")


def curve(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    return x[0] + x[1] * u + x[2] * u**2


def test_tm_and_thrust_curve_recovered_with_jittered_steps(cf):
    r = delay.identify([thrust_flight(seed=1)], cf, settings=delay.DelaySettings(exponents=(0, 1, 2)))
    assert r.value("tm") == pytest.approx(0.05, rel=0.02)
    x = np.array([r.value(f"thrust_c{j}") for j in (0, 1, 2)])
    u = np.linspace(0.4, 0.8, 9)
    np.testing.assert_allclose(curve(x, u), curve(K, u), rtol=0.005)
    # the curvature std is honest: the error is within 3 sigma
    assert abs(r.value("tm") - 0.05) < 3 * r.params["tm"].std
    # the search is continuous: optimum resolved finer than the coarse grid spacing
    assert r.settings["tm_evaluations"] < 60
    assert r.observability["tm"]["identifiable"] is True


def test_lognormal_prior_pulls_a_weak_estimate(cf):
    """With little data a tight prior moves the MAP towards its mean; the uniform one does not."""
    f = thrust_flight(seed=2, duration=3.0, noise=3.0)
    free = delay.identify([f], cf).value("tm")
    tight = delay.identify([f], cf, settings=delay.DelaySettings(tm_prior=(0.08, 0.002))).value("tm")
    assert abs(tight - 0.08) < abs(free - 0.08)
    assert tight == pytest.approx(0.08, abs=0.006)


def test_asymmetric_constants_recovered_and_split_supported(cf):
    r = delay.identify([thrust_flight(seed=3, tm=(0.03, 0.07))], cf, settings=delay.DelaySettings(asymmetric_tm=True))
    assert r.value("tm_rise") == pytest.approx(0.03, rel=0.05)
    assert r.value("tm_fall") == pytest.approx(0.07, rel=0.05)
    assert "tm" not in r.params
    assert r.diagnostics["asym_supported"] is True and r.diagnostics["asym_p"] < 1e-3
    assert r.vehicle["tm_rise"] == pytest.approx(r.value("tm_rise"))


def test_symmetric_motor_does_not_support_a_split(cf):
    r = delay.identify([thrust_flight(seed=4, tm=(0.05, 0.05))], cf, settings=delay.DelaySettings(asymmetric_tm=True))
    assert r.diagnostics["asym_supported"] is False
    assert any("do not support the split" in n for n in r.notes)
    assert r.value("tm_rise") == pytest.approx(0.05, rel=0.06)
    assert r.value("tm_fall") == pytest.approx(0.05, rel=0.06)


def test_constant_commands_raise_excitation_error(cf):
    f = thrust_flight(seed=5)
    flat = f.replace(cmd=np.full_like(f.cmd, 0.6))
    with pytest.raises(ExcitationError, match=r"not enough excitation for T_m.*constant"):
        delay.identify([flat], cf)


def test_thrust_not_following_commands_raises(cf):
    f = thrust_flight(seed=6)
    rng = np.random.default_rng(0)
    acc = f.acc.copy()
    acc[:, 2] = 9.80665 + 0.3 * rng.standard_normal(len(f.t))
    with pytest.raises(ExcitationError, match="not enough excitation for T_m"):
        delay.identify([f.replace(acc=acc)], cf)


def test_optimum_at_edge_of_range_is_reported(cf):
    f = thrust_flight(seed=7, tm=(0.2, 0.2))
    r = delay.identify([f], cf, settings=delay.DelaySettings(tm_bounds=(0.005, 0.08)))
    assert r.value("tm") == pytest.approx(0.08, abs=3e-4)
    obs = r.observability["tm"]
    assert obs["at_bound"] == "the upper bound 0.08 s of the T_m search"
    assert "edge of the search range" in obs["reason"]
    assert any("edge of the search range" in n for n in r.notes)
    # never σ NaN: the one-sided profile-likelihood distance, and the verdict "not identified"
    assert 0.0 < r.params["tm"].std < 0.075
    assert verdict(r.params["tm"], obs).word == "not identified"


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"inertia_param": "best"}, "inertia_param"),
        ({"exponents": (2, 2)}, "exponents"),
        ({"exponents": ("0", "x")}, "must be integers"),
        ({"cutoff_hz": 0.0}, "cutoff_hz"),
        ({"tm_bounds": (0.1, 0.01)}, "tm_bounds"),
        ({"tm_prior": (0.07, -1.0)}, "tm_prior"),
        ({"izz_ratio": 0.0}, "izz_ratio"),
    ],
)
def test_bad_settings_are_rotorid_errors(kw, match):
    with pytest.raises(RotoridError, match=match):
        delay.DelaySettings(**kw)


def test_motor_count_mismatch_names_the_vehicle():
    f = thrust_flight(seed=8, duration=2.0)
    with pytest.raises(RotoridError, match="4 motor commands but vehicle 'hexa'"):
        delay.identify([f], Vehicle.preset("quad-x").replace(name="hexa", rotors=Vehicle.preset("quad-x").rotors * 2))


def test_per_motor_curves_share_the_constant(cf):
    r = delay.identify([thrust_flight(seed=9)], cf, settings=delay.DelaySettings(per_motor=True, exponents=(0, 1, 2)))
    c0 = {r.value(f"thrust_c0_m{i}") for i in range(1, 5)}
    assert len(c0) == 1
    assert np.asarray(r.vehicle["thrust_coeffs"]).shape == (4, 3)
    lumped = delay.identify([thrust_flight(seed=9)], cf)
    assert r.value("hover_cmd") == pytest.approx(lumped.value("hover_cmd"), rel=0.01)


def test_gyro_noise_biases_direct_low_and_reciprocal_is_consistent(cf):
    """Errors in variables (Sec. IV-B): noise in the angular acceleration (regressor of the direct
    fit) attenuates I by var_s / (var_s + var_n); the reciprocal fit regresses the noisy
    acceleration on the clean torque and stays consistent."""
    inertia = (1.4e-5, 1.6e-5, 2.8e-5)
    thrust = thrust_flight(seed=10)
    rp = attitude_flight(cf, inertia, 0.05, 0.005, seed=11, duration=20.0, gyro_noise=0.4, yaw=False)
    st = delay.DelaySettings(inertia_param="auto", cutoff_hz=60.0, gyroscopic=False)
    r = delay.identify([thrust], cf, roll_pitch=[rp], settings=st)
    fits = r.diagnostics["rp_fits"]
    # theory: passing the clean and the noisy gyro through the method's own derivative + filter
    # gives signal and noise variances, hence the attenuation factor of the direct fit
    clean = attitude_flight(cf, inertia, 0.05, 0.005, seed=11, duration=20.0, gyro_noise=0.0, yaw=False)
    ident = Vehicle.from_dict(r.vehicle)
    tm = (r.value("tm"), r.value("tm"))
    a_clean = delay.angular_columns([clean], ident, tm, st, "clean").acc[:, :2]
    a_noisy = delay.angular_columns([rp], ident, tm, st, "noisy").acc[:, :2]
    var_s, var_n = a_clean.var(axis=0), (a_noisy - a_clean).var(axis=0)
    attenuation = var_s / (var_s + var_n)
    assert np.all(attenuation < 0.9)
    # the method's noise estimate for the TLS scaling finds the real noise level (within 30 %)
    np.testing.assert_allclose(delay.angular_columns([rp], ident, tm, st, "noisy").noise_var[0], var_n, rtol=0.3)
    for k, name in enumerate(("I_xx", "I_yy")):
        direct, recip = fits["direct"][k], fits["reciprocal"][k]
        assert recip == pytest.approx(inertia[k], rel=0.03)
        assert direct / inertia[k] == pytest.approx(attenuation[k], abs=0.03)  # biased low as predicted
        assert fits["direct"][k] < fits["tls"][k] <= 1.03 * recip
        assert r.value(name) == pytest.approx(inertia[k], rel=0.04)
    assert r.settings["inertia_param_chosen"] in ("reciprocal", "tls")
    h = r.diagnostics["rp_holdout_r2"]
    assert h["direct"] < h[r.settings["inertia_param_chosen"]]


def test_yaw_coefficient_and_izz_ratio(cf):
    inertia = (1.4e-5, 1.4e-5, 1.832 * 1.4e-5)
    thrust = thrust_flight(seed=12)
    rp = attitude_flight(cf, inertia, 0.05, 0.005, seed=13, duration=15.0, gyro_noise=0.002, yaw=False)
    yw = attitude_flight(cf, inertia, 0.05, 0.005, seed=14, duration=15.0, gyro_noise=0.002, yaw=True)
    r = delay.identify([thrust], cf, roll_pitch=[rp], yaw=[yw], settings=delay.DelaySettings(gyroscopic=False))
    assert r.value("I_zz") == pytest.approx(1.832 * 0.5 * (r.value("I_xx") + r.value("I_yy")))
    assert r.value("k_tau") == pytest.approx(0.005, rel=0.05)
    assert r.vehicle["k_tau"] == pytest.approx(r.value("k_tau"))
    assert np.allclose(np.diag(r.vehicle["inertia"]), [r.value(n) for n in ("I_xx", "I_yy", "I_zz")])
    # no precession in this flight: the joint eq. 73-76 estimate must not claim to ground I_zz
    assert r.diagnostics["joint"]["grounded"] is False
    Vehicle.from_dict(r.vehicle)  # the identified vehicle is a valid, loadable description


def test_unexcited_roll_pitch_flight_names_the_flight(cf):
    """Commands without any differential part give zero roll/pitch torque: a clear error naming
    the flight and what to fly, not a bare regression message."""
    rp = thrust_flight(seed=15, duration=3.0)
    rp = rp.replace(cmd=np.repeat(rp.cmd[:, :1], 4, axis=1), meta={"source": "hover-only.bin"})
    with pytest.raises(ExcitationError, match=r"hover-only.bin 0.00–.*fly roll and pitch doublets"):
        delay.identify([thrust_flight(seed=16)], cf, roll_pitch=[rp])


def test_logged_gyro_dot_is_used_instead_of_differentiating(cf):
    """A log's own angular acceleration replaces the differentiated (here very noisy) gyro: the
    direct fit is then unbiased."""
    inertia = (1.4e-5, 1.6e-5, 2.8e-5)
    clean = attitude_flight(cf, inertia, 0.05, 0.005, seed=17, duration=10.0, gyro_noise=0.0, yaw=False)
    noisy = attitude_flight(cf, inertia, 0.05, 0.005, seed=17, duration=10.0, gyro_noise=0.4, yaw=False)
    st = delay.DelaySettings(inertia_param="direct", gyroscopic=False)
    thrust = [thrust_flight(seed=18)]
    without = delay.identify(thrust, cf, roll_pitch=[noisy], settings=st)
    with_dot = delay.identify(
        thrust, cf, roll_pitch=[noisy.replace(gyro_dot=np.gradient(clean.gyro, clean.t, axis=0))], settings=st
    )
    assert without.value("I_xx") < 0.95 * inertia[0]
    assert with_dot.value("I_xx") == pytest.approx(inertia[0], rel=0.02)
    assert with_dot.value("I_yy") == pytest.approx(inertia[1], rel=0.02)
