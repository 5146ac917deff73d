"""Issue 32 for the delay method: σ of T_m includes the log's time resolution (no collapse on an
exactly fitting model, no bias beyond σ on logs slower than the controller), a 100 Hz log is
accepted, and thrust flights that disagree widen σ."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rotorid.errors import RateError
from rotorid.flight import Flight
from rotorid.methods import delay
from rotorid.methods.delay import structure
from rotorid.methods.delay.collected import Collected
from rotorid.result import verdict
from rotorid.signal import motor_lag
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


def _decimate(f: Flight, k: int) -> Flight:
    return f.replace(t=f.t[::k], **{c: getattr(f, c)[::k] for c in f.channels if c != "t"})


@pytest.fixture(scope="module")
def six():
    """Rotor speeds in rad/s, a 500 Hz controller logged at 200 Hz, T_m 70 ms (30 s)."""
    return scenarios.run("six-config-a", seed=0, duration=30.0, tm=0.07, flights=("train",))


@pytest.mark.parametrize("k", [1, 2])
def test_a_log_slower_than_the_controller_is_within_sigma(six, k):
    """The held-command lag read T_m 3.7 % (8σ) low at 200 Hz: the commands move within each
    interval. Now T_m sits mid-way with the interval's uniform spread in σ, at 200 and 100 Hz."""
    f = _decimate(six.flights["train"], k)
    assert f.rate == pytest.approx(200.0 / k)
    r = delay.identify([f], six.vehicle, settings=delay.DelaySettings(exponents=(2,)))
    tm = r.params["tm"]
    assert r.diagnostics["tm_hold_shift"] == pytest.approx(0.25 / f.rate)
    assert abs(tm.value - 0.07) < 3 * tm.std
    assert tm.std >= 0.25 / f.rate / math.sqrt(3)
    assert verdict(tm, r.observability["tm"]).word == "well"


def test_exact_model_keeps_sigma_at_the_time_resolution():
    """rad/s commands through exactly the method's lag, noise-free acceleration, `--exponents 2`:
    the fit is exact to rounding, and σ is still the log's time resolution, not 1e-20."""
    rng = np.random.default_rng(3)
    n, fs = 6000, 500.0
    t = np.arange(n) / fs
    u = np.repeat(rng.uniform(1200.0, 2200.0, n // 100 + 1), 100)[:n, None] + 20 * rng.standard_normal((n, 4))
    v = Vehicle.preset("crazyflie").replace(
        motor_input="rad_s", cmd_min=0.0, cmd_max=2600.0, thrust_exponents=(2,), thrust_coeffs=np.array([1.8e-8])
    )
    acc = np.zeros((n, 3))
    acc[:, 2] = 1.8e-8 * (motor_lag(u, t, 0.03) ** 2).sum(axis=1) / v.mass
    f = Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"source": "exact"})
    r = delay.identify([f], v, settings=delay.DelaySettings(exponents=(2,)))
    tm = r.params["tm"]
    assert r.diagnostics["thrust_r2"] > 1 - 1e-12
    assert tm.value == pytest.approx(0.03 + 0.5e-3, abs=1e-6)  # mid-interval: + Δt/4
    assert tm.std == pytest.approx(0.5e-3 / math.sqrt(3), rel=1e-3)
    assert verdict(tm, r.observability["tm"]).word == "well"


def test_rate_floor_tolerates_a_jittered_100_hz_log():
    t = np.cumsum(np.full(500, 1 / 99.5))
    f = Flight(t=t, acc=np.zeros((500, 3)), cmd=np.zeros((500, 4)), meta={"source": "x"})
    assert f.require_rate(delay.MIN_RATE_HZ, "cmd") is f
    with pytest.raises(RateError, match=r"logged at 97\.0 Hz, below the 100 Hz"):
        f.replace(t=np.cumsum(np.full(500, 1 / 97.0))).require_rate(delay.MIN_RATE_HZ, "cmd")


def _thrust(seed: int, tm: float) -> Flight:
    rng = np.random.default_rng(seed)
    n, fs = 2000, 500.0
    t = 20.0 * seed + np.arange(n) / fs
    u = np.repeat(rng.uniform(0.35, 0.85, n // 120 + 1), 120)[:n, None] + 0.02 * rng.standard_normal((n, 4))
    w = motor_lag(u, t, tm)
    acc = np.zeros((n, 3))
    acc[:, 2] = (0.0225 - 0.0115 * w + 0.128 * w**2).sum(axis=1) / 0.027 + 0.3 * rng.standard_normal(n)
    return Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"source": f"w{seed}"})


def test_disagreeing_flights_widen_sigma():
    """Three windows, one with a slower motor (a battery swap, a hot motor). A whole fit's σ
    already feels it through the residual's autocorrelation, so the leave-one-out scatter
    stays within it (p > 0.01) and nothing changes; a σ claiming ten times less (as one too
    confident fit would) is lifted to the jackknife's and a note names the odd window."""
    cf = Vehicle.preset("crazyflie")
    flights = [_thrust(i + 1, tm) for i, tm in enumerate((0.05, 0.05, 0.075))]
    r = delay.identify(flights, cf)
    assert r.diagnostics["tm_jackknife_p"] > 0.01
    assert not any("disagree" in n for n in r.notes)
    st = delay.DelaySettings(exponents=r.settings["exponents"])
    prob = delay.ThrustProblem(flights, cf, st.exponents, st.per_motor)
    sym = delay.search_tm(prob, st)
    confident = dataclasses.replace(sym, std=sym.std / 10, unc=dataclasses.replace(sym.unc, cov=sym.unc.cov / 100))
    out = Collected()
    wide = structure.window_scatter(prob, confident, st, out)
    jack = out.diag["tm_jackknife_std"]
    assert out.diag["tm_jackknife_p"] < 1e-6
    assert wide.std == pytest.approx(jack, rel=1e-9)
    loo = out.diag["tm_leave_one_out"]
    assert abs(loo[2] - 0.05) < 2e-3 and min(loo[:2]) > loo[2] + 5e-3  # without the odd one: 50 ms
    assert jack > 5 * confident.std
    assert len(out.notes) == 1 and "without w3@60.00:64.00 T_m would be 0.0" in out.notes[0]


def test_the_thrust_curve_is_chosen_from_held_out_data():
    """A full quadratic in a normalized command keeps its three terms (each predicts held-out
    thrust); rotor speeds in rad/s with thrust k ω² keep u² alone: the richer curves fit the
    noise, not held-out data."""
    cf = Vehicle.preset("crazyflie")
    quad = delay.identify([_thrust(1, 0.05)], cf)
    assert quad.settings["exponents"] == (0, 1, 2) and quad.settings["exponents_from_data"] is True
    assert quad.diagnostics["curve_held_out"][(2,)] > 10  # u² alone predicts 10x worse
    rng = np.random.default_rng(4)
    n, fs = 6000, 500.0
    t = np.arange(n) / fs
    u = np.repeat(rng.uniform(1200.0, 2200.0, n // 100 + 1), 100)[:n, None] + 20 * rng.standard_normal((n, 4))
    v = cf.replace(
        motor_input="rad_s", cmd_min=0.0, cmd_max=2600.0, thrust_exponents=(2,), thrust_coeffs=np.array([1.8e-8])
    )
    acc = np.zeros((n, 3))
    acc[:, 2] = 1.8e-8 * (motor_lag(u, t, 0.03) ** 2).sum(axis=1) / v.mass + 0.3 * rng.standard_normal(n)
    r = delay.identify([Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"source": "rad/s"})], v)
    assert r.settings["exponents"] == (2,)
    assert "Chosen: exponents (2,)" in " ".join(r.notes)
    assert abs(r.value("tm") - 0.03) < 3 * r.params["tm"].std
    fixed = delay.identify([_thrust(1, 0.05)], cf, settings=delay.DelaySettings(exponents=["0", "2"]))
    assert fixed.settings["exponents"] == (0, 2) and fixed.settings["exponents_from_data"] is False
