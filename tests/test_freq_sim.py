"""The frequency-domain method end to end on simulated ArduPilot chirps (seeded)."""

import numpy as np
import pytest

from rotorid.errors import RotoridError
from rotorid.methods.freq import FreqSettings, identify, sweep
from rotorid.report.freq import figures
from rotorid.result import verdict
from rotorid.sim import scenarios


@pytest.fixture(scope="module")
def chirps():
    thrust = scenarios.run("chirp-thrust", seed=1)
    roll = scenarios.run("chirp-roll", seed=1)
    return [thrust.flights["thrust"], roll.flights["roll"]], roll


def test_recovers_motor_lag_and_roll_inertia(chirps):
    flights, sc = chirps
    res = identify(flights, sc.vehicle)
    truth = sc.truth.params
    assert set(res.params) == {"tm", "I_xx"}
    for name, tol in (("tm", 0.02), ("I_xx", 0.03)):
        e = res.params[name]
        assert e.value == pytest.approx(truth[name], rel=tol)
        assert 0 < e.std < 0.02 * e.value and np.isfinite(e.std)
        assert abs(e.value - truth[name]) < 3 * e.std
    assert any(n.startswith("dead time kept") for n in res.notes)  # the 500 Hz controller's hold
    # the thrust curve's slope moves with the collective as the roll sweep tilts the vehicle:
    # the curvature is kept and is the scenario's f''/f' at the flights' mean command
    assert any(n.startswith("thrust-curve curvature (gain moving with the collective) kept") for n in res.notes)
    fit = res.diagnostics["freq_fit"]
    i = list(fit["names"]).index("kappa")
    c = sc.true_vehicle.thrust_coeffs
    u0 = np.mean([f.cmd.mean() for f in flights])
    assert abs(fit["theta"][i] - 2 * c[2] / (c[1] + 2 * c[2] * u0)) < 3 * np.sqrt(fit["cov"][i, i])
    # the leakage-free variances and the curvature leave nothing the bins' noise cannot explain: σ not widened
    assert res.settings["chi2_red"] < res.settings["chi2_limit"] < 1.3
    assert not any("σ widened" in n for n in res.notes)
    assert res.diagnostics["freq_panels"]["0_thrust"]["used"].sum() > 40
    figs = figures(res)
    assert set(figs) == {"freq_bode_0_thrust", "freq_bode_1_roll", "freq_time_0_thrust", "freq_time_1_roll"}
    # over time, the model driven by the logged commands follows the measured output over the whole sweep
    for k in ("0_thrust", "1_roll"):
        p = res.diagnostics["freq_panels"][k]
        meas, model = p["time_meas"], p["time_model"]
        assert len(p["time_t"]) == len(meas) <= 10_000 and np.std(meas) > 0.5
        assert np.sqrt(np.mean((meas - model) ** 2)) < 0.05 * np.sqrt(np.mean(meas**2)), k
    assert [ln.get_label() for ln in figs["freq_time_1_roll"].axes[0].get_lines()] == ["measured", "model"]


def test_without_thrust_only_the_lag_and_a_note(chirps):
    flights, sc = chirps
    res = identify(flights[1:], sc.vehicle, FreqSettings(dead_time="on"))
    assert set(res.params) == {"tm"}
    assert res.params["tm"].value == pytest.approx(0.07, rel=0.03)
    assert any("fly a thrust chirp" in n for n in res.notes)


def test_a_lag_on_its_search_bound_is_not_identified(chirps):
    flights, sc = chirps
    res = identify(flights, sc.vehicle, FreqSettings(tm_bounds=(0.002, 0.03)))
    assert res.params["tm"].value == pytest.approx(0.03, rel=1e-3)
    assert verdict(res.params["tm"], res.observability["tm"]).word == "not identified"
    assert any("T_m stopped on a bound" in n for n in res.notes)


def test_sweep_found_in_the_command_spectrum_without_sids(chirps):
    flights, sc = chirps
    bare = flights[1].replace(meta={k: v for k, v in flights[1].meta.items() if k != "sid"})
    found = sweep.find(bare, sc.vehicle)
    assert [s.axis for s in found] == ["roll"]
    assert found[0].source == "spectrum" and found[0].rank > 0.9
    lo, hi = found[0].band
    assert 0.3 < lo < 1.5 and 10.0 < hi < 25.0


def test_no_coherent_axis_is_refused(chirps):
    flights, sc = chirps
    with pytest.raises(RotoridError, match="coherent bins"):
        identify(flights[1:], sc.vehicle, FreqSettings(band=(40.0, 60.0)))


def test_the_firmwares_accelerometer_low_pass_is_not_motor_lag(chirps):
    """Betaflight logs the accelerometer through a 10 Hz biquad (`meta["acc_lowpass"]`): ~22 ms of
    phase lag that the thrust axis read as motor lag (both shared freestyle logs gave T_m 32.8 ms).
    The chirp's thrust flight filtered so: with the filter recorded, T_m within 3σ of the truth;
    without it, the same samples put T_m ~30 ms late (the band and axis checks widen its σ)."""
    from rotorid.signal import SensorLowpass

    flights, sc = chirps
    spec = {"kind": "biquad", "hz": 10.0}
    f = flights[0]
    lp = f.replace(acc=SensorLowpass(spec, f.rate)(f.acc))
    tm = sc.truth.params["tm"]
    got = identify([lp.replace(meta={**f.meta, "acc_lowpass": spec})], sc.vehicle).params["tm"]
    assert abs(got.value - tm) < 3 * got.std and got.std < 0.05 * tm
    blind = identify([lp], sc.vehicle).params["tm"]
    assert blind.value - tm > 0.02 and blind.std > 5 * got.std
