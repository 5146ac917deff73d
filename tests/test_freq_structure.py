"""freq on chirp flights with physics its base model leaves out (issue 37, issue 32's spirit):
the rate damping kept where held-out frequencies show it, and σ grown where frequency bands
disagree (seeded)."""

import numpy as np
import pytest

from rotorid.errors import ExcitationError
from rotorid.methods.freq import identify, model
from rotorid.sim import effects, scenarios


@pytest.fixture(scope="module")
def randomized():
    """Thrust and roll chirps of one randomized-suite draw (rotor inflow among its effects)."""
    eff = effects.random_effects(np.random.default_rng(1000), None)
    thrust = scenarios.run("chirp-thrust", seed=0, **eff)
    roll = scenarios.run("chirp-roll", seed=0, **eff)
    return identify([thrust.flights["thrust"], roll.flights["roll"]], roll.vehicle), roll.truth.params


def test_randomized_physics_motor_lag_within_three_sigma(randomized):
    """Without the rate damping T_m came out several σ off on such draws (the inflow's phase
    lead taken for a shorter lag); now within 3σ."""
    res, truth = randomized
    e = res.params["tm"]
    assert abs(e.value - truth["tm"]) < 3 * e.std
    assert 0 < e.std < 0.5 * e.value


def test_rotor_inflow_is_a_rate_damping_kept_on_held_out_data():
    """Thrust falling 15 % per m/s of climb (the realistic magnitude): the thrust response is
    high-passed at d = 0.15 g; the damping is kept on held-out frequency blocks and T_m is right."""
    thrust = scenarios.run("chirp-thrust", seed=2, rotor_inflow=0.15)
    res = identify([thrust.flights["thrust"]], thrust.vehicle)
    assert any(n.startswith("rate damping (each axis' response falling with its rate) kept") for n in res.notes)
    fit = res.diagnostics["freq_fit"]
    i = list(fit["names"]).index("d_thrust")
    assert abs(fit["theta"][i] - 0.15 * 9.81) < max(3 * np.sqrt(fit["cov"][i, i]), 0.1 * 0.15 * 9.81)
    e = res.params["tm"]
    assert e.value == pytest.approx(thrust.truth.params["tm"], rel=0.02)
    assert abs(e.value - thrust.truth.params["tm"]) < 3 * e.std


def _lag_data(tm: float, lead: float, seed: int, axis: str = "thrust") -> list[model.AxisData]:
    """A first-order lag's response on 0.5-20 Hz bins with 1 % complex noise, its phase led by
    `lead` rad below 2 Hz (physics the model does not have, at one end of the band)."""
    f = np.linspace(0.5, 20.0, 120)
    h = model.response(f, 5.0, tm, 0.0, "acc") * np.exp(1j * lead * (f < 2.0))
    sd = 0.01 * np.abs(h)
    rng = np.random.default_rng(seed)
    noisy = h + sd * (rng.standard_normal(len(f)) + 1j * rng.standard_normal(len(f))) / np.sqrt(2)
    return [model.AxisData(axis, "acc", f, noisy, np.diag(sd**2).astype(complex))]


def test_bands_that_disagree_widen_sigma_and_bands_that_agree_do_not():
    bounds = (0.002, 0.5)
    right = _lag_data(0.07, 0.0, 0)
    fit = model.fit(right, bounds, False)
    same, rec = model.band_scatter(right, bounds, fit)
    assert rec is not None and rec.share == 0.0 and np.array_equal(same.cov, fit.cov)
    assert len(rec.theta) == model.JACK_BANDS and rec.p[0] > 0.01
    wrong = _lag_data(0.07, 0.1, 0)
    fit = model.fit(wrong, bounds, False)
    wide, rec = model.band_scatter(wrong, bounds, fit)
    assert rec.share > 0 and rec.p[0] < 1e-6
    # the fit alone, even with σ widened by its χ², is confidently wrong (5.5σ); the bands' scatter covers it
    err = abs(fit.get("tm") - 0.07)
    assert err > 3 * np.sqrt(fit.cov[0, 0])
    assert np.sqrt(wide.cov[0, 0]) > 2 * np.sqrt(fit.cov[0, 0]) and err < 3 * np.sqrt(wide.cov[0, 0])


def test_axes_that_disagree_on_the_lag_widen_sigma():
    """T_m is shared by every axis: two axes whose lags differ by 3 % (physics one of them sees)
    widen σ until it covers both; two that agree leave it alone."""
    bounds = (0.002, 0.5)
    agree = _lag_data(0.07, 0.0, 1) + _lag_data(0.07, 0.0, 2, "roll")
    fit = model.fit(agree, bounds, False)
    same, rec = model.axis_scatter(agree, bounds, fit)
    assert rec.factor == 1.0 and rec.p > 0.01 and np.array_equal(same.cov, fit.cov)
    differ = _lag_data(0.07, 0.0, 1) + _lag_data(0.072, 0.0, 2, "roll")
    fit = model.fit(differ, bounds, False)
    wide, rec = model.axis_scatter(differ, bounds, fit)
    assert rec.p < 1e-6 and rec.factor > 4
    assert sorted(np.round(rec.tm, 3)) == [0.07, 0.072]  # without each axis, the other's lag
    assert abs(fit.get("tm") - 0.07) < 3 * np.sqrt(wide.cov[0, 0]) and abs(fit.get("tm") - 0.072) < 3 * np.sqrt(
        wide.cov[0, 0]
    )


def test_no_axis_with_a_gain_is_refused():
    """Responses no non-zero gain fits (the measured response opposite to the model's at every
    bin): every axis collapses and the fit is refused in one line."""
    f = np.linspace(0.5, 20.0, 60)
    h = -model.response(f, 5.0, 0.07, 0.0, "acc")
    data = [model.AxisData("thrust", "acc", f, h, np.diag(np.full(len(f), 1e-4)).astype(complex))]
    with pytest.raises(ExcitationError, match="fits no non-zero gain"):
        model.fit(data, (0.002, 0.5), False)
