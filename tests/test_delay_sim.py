"""Delay method against the simulator's `eschmann-crazyflie` ground truth (short flights)."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.methods import delay
from rotorid.result import compare
from rotorid.signal import butter_filtfilt, derivative
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


@pytest.fixture(scope="session")
def esch():
    return scenarios.run("eschmann-crazyflie", seed=0, duration=10.0)


@pytest.fixture(scope="session")
def esch_result(esch):
    f = esch.flights
    return delay.identify([f["thrust"]], esch.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]])


def test_recovers_the_truth(esch, esch_result):
    err = compare(esch_result, esch.truth)
    assert abs(err["tm"]) < 3
    assert abs(err["hover_cmd"]) < 1
    assert abs(err["I_xx"]) < 5 and abs(err["I_yy"]) < 5
    assert abs(err["I_zz"]) < 5  # the scenario's I_zz follows eq. 93 with the default C
    assert abs(err["k_tau"]) < 10
    # thrust at the true hover command within 1 %
    true = Vehicle.from_dict(esch.truth.vehicle)
    ident = Vehicle.from_dict(esch_result.vehicle)
    u = np.full((1, 4), esch.truth.params["hover_cmd"])
    np.testing.assert_allclose(ident.thrust(u), true.thrust(u), rtol=0.01)
    # the reported std deviations are consistent with the actual errors (within 4 sigma)
    for name in ("tm", "I_xx", "I_yy"):
        e = esch_result.params[name]
        assert abs(e.value - esch.truth.params[name]) < 4 * e.std, name


def test_direct_inertia_is_biased_low_under_gyro_noise(esch):
    """White gyro noise sized so that theory predicts an attenuation of 0.8 for the direct fit
    (noise variance = signal variance / 4 after the method's derivative + filter). The direct
    fit lands there; the reciprocal fit and the automatic choice stay within 5 %."""
    rp = esch.flights["roll_pitch"]
    st = delay.DelaySettings()
    # the method's derivative + filter, away from the ends (the method trims `trim_s` there too)
    filt = lambda x: butter_filtfilt(derivative(x, rp.t), rp.rate, st.cutoff_hz, order=st.filter_order)[100:-100, :2]
    var_s = filt(rp.gyro).var(axis=0)
    unit = filt(np.random.default_rng(5).standard_normal((len(rp.t), 2))).var(axis=0)  # gain for sigma = 1
    sigma = np.sqrt(0.25 * var_s / unit)
    noisy = rp.gyro.copy()
    noisy[:, :2] += sigma * np.random.default_rng(6).standard_normal((len(rp.t), 2))
    r = delay.identify([esch.flights["thrust"]], esch.vehicle, roll_pitch=[rp.replace(gyro=noisy)], settings=st)
    fits = r.diagnostics["rp_fits"]
    for k, name in enumerate(("I_xx", "I_yy")):
        truth = esch.truth.params[name]
        assert fits["direct"][k] / truth == pytest.approx(0.8, abs=0.05)
        assert fits["reciprocal"][k] == pytest.approx(truth, rel=0.05)
        assert r.value(name) == pytest.approx(truth, rel=0.05)
    assert r.settings["inertia_param_chosen"] != "direct"
    h = r.diagnostics["rp_holdout_r2"]
    assert h["direct"] < h[r.settings["inertia_param_chosen"]]


def test_rising_and_falling_constants():
    sc = scenarios.run("eschmann-crazyflie", seed=1, duration=8.0, tm_rise=0.05, tm_fall=0.09)
    r = delay.identify([sc.flights["thrust"]], sc.vehicle, settings=delay.DelaySettings(asymmetric_tm=True))
    assert r.value("tm_rise") == pytest.approx(0.05, rel=0.03)
    assert r.value("tm_fall") == pytest.approx(0.09, rel=0.03)
    assert r.diagnostics["asym_supported"] is True


def test_joint_estimate_grounds_izz_with_precession(esch):
    """The simulated yaw flight precesses, so eq. 73-76 determine I_zz without the C ratio:
    with a wrong C the ratio-based I_zz is off, the joint estimate is not."""
    f = esch.flights
    st = delay.DelaySettings(izz_ratio=1.5)
    r = delay.identify([f["thrust"]], esch.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]], settings=st)
    truth = esch.truth.params
    assert r.value("I_zz") == pytest.approx(1.5 / 1.832 * truth["I_zz"], rel=0.02)
    joint = r.diagnostics["joint"]
    assert joint["grounded"] is True and joint["cond"] < 100
    assert joint["x"][2] == pytest.approx(truth["I_zz"], rel=0.02)
    assert joint["x"][3] == pytest.approx(truth["k_tau"], rel=0.02)
    assert any("precession grounds I_zz" in n for n in r.notes)
