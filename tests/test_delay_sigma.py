"""Honest σ of the delay method (issue 11): the long-run variance behind every σ, T_m's σ
against a small Monte Carlo, the ratio C_xy->z and the accelerometer bias as visible
assumptions whose spread the σ carry, and no σ = 0 or "well determined" on an assumed value."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from scipy.signal import lfilter
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.errors import RotoridError
from rotorid.methods import covariance, delay
from rotorid.report.html import verdict
from rotorid.vehicle import Vehicle
from test_delay_synthetic import K, attitude_flight, thrust_flight


@pytest.fixture(scope="module")
def cf() -> Vehicle:
    return Vehicle.preset("crazyflie")


def test_long_run_variance_of_known_processes():
    rng = np.random.default_rng(0)
    e = rng.standard_normal(200_000)
    assert delay.long_run_var(e)[1] == pytest.approx(1.0, abs=0.05)
    phi = 0.8  # AR(1): tau_int = (1 + phi) / (1 - phi) = 9
    ar = lfilter([1.0], [1.0, -phi], e)
    ar -= ar.mean()
    v, tau = delay.long_run_var(ar)
    assert tau == pytest.approx(9.0, rel=0.1)
    assert v == pytest.approx(tau * float(ar @ ar), rel=1e-9)
    # differenced noise: the negative lag-1 correlation cancels (true tau_int 0); the initial-
    # positive-sequence sum would say 1, Sokal's window resolves it down to its floor 1/c
    d = np.diff(e)
    assert delay.long_run_var(d)[1] == pytest.approx(1.0 / delay.SOKAL_C)


def test_segments_are_not_multiplied_across_their_boundary():
    """Two flights whose series are each constant with opposite signs: per segment they are
    perfectly correlated; pooled naively, products across the boundary would cancel them."""
    z = np.concatenate([np.full(400, 1.0), np.full(400, -1.0)])
    whole = delay.long_run_var(z)[0]
    split = delay.long_run_var(z, [400, 400])[0]
    assert split > whole
    assert delay.integrated_autocorr_time(np.r_[np.ones(50), np.zeros(50)], [50, 50]) == pytest.approx(1.0)


@pytest.mark.parametrize("nlags", [1, 7, 300, 1500])
def test_blocked_autocovariances_are_the_direct_sums(monkeypatch, nlags):
    """Γ_k = Σ_t z_t z_{t+k} within each segment, k < nlags, by the blocked FFT correlation
    (blocks shrunk to 256 samples, so segments span many blocks and lags cross their edges)."""
    monkeypatch.setattr(covariance, "ACOV_BLOCK", 256)
    rng = np.random.default_rng(3)
    lengths = [1000, 3, 2100]
    z = lfilter([1.0], [1.0, -0.9], rng.standard_normal((sum(lengths), 2)), axis=0)
    direct = np.zeros((nlags, 2))
    start = 0
    for n in lengths:
        seg = z[start : start + n]
        for k in range(min(nlags, n)):
            direct[k] += (seg[: n - k] * seg[k:]).sum(axis=0)
        start += n
    np.testing.assert_allclose(covariance.autocov(z, lengths, nlags), direct, rtol=1e-10, atol=1e-10 * direct[0].max())


def test_the_window_needs_only_the_lags_below_it(monkeypatch):
    """A series whose window closes late (AR(1) with phi 0.995, tau_int ~400, M ~2000) makes the
    first pass of few lags grow until it closes: the same variance as with every lag."""
    rng = np.random.default_rng(4)
    z = lfilter([1.0], [1.0, -0.995], rng.standard_normal(40_000))
    monkeypatch.setattr(covariance, "ACOV_BLOCK", 4096)  # segments of several blocks: passes
    monkeypatch.setattr(covariance, "FIRST_LAGS", 20_000)  # every lag at once
    every = delay.long_run_var(z, [25_000, 15_000])
    monkeypatch.setattr(covariance, "FIRST_LAGS", 16)
    assert delay.long_run_var(z, [25_000, 15_000]) == pytest.approx(every, rel=1e-9)
    assert every[1] > 100


def test_one_block_segments_take_every_lag_at_once(monkeypatch):
    """Segments within one `ACOV_BLOCK` are transformed once for all lags, bit for bit the
    windows the growing passes close (one transform length for any lags up to the block: the
    first lags are the same numbers), where those passes needed two transforms."""
    rng = np.random.default_rng(4)
    z = lfilter([1.0], [1.0, -0.995], rng.standard_normal((40_000, 2)), axis=0)
    lengths = [25_000, 15_000]
    acov = covariance.autocov
    calls = []
    monkeypatch.setattr(covariance, "autocov", lambda *a: calls.append(a[2]) or acov(*a))
    once = covariance._sokal_windows(z, lengths)
    assert calls == [12_500]
    nlags, passes = covariance.FIRST_LAGS, 0
    while True:  # the passes of a longer series (`_sokal_windows`)
        a, passes = acov(z, lengths, nlags), passes + 1
        grown = [covariance._sokal(a[:, i], complete=nlags == 12_500) for i in range(2)]
        if all(g is not None for g in grown):
            break
        nlags = min(8 * nlags, 12_500)
    assert once == grown, (once, grown)
    assert passes == 2 and once[0][1] > 100, passes


def test_tm_sigma_matches_the_scatter_over_seeds(cf):
    """40 synthetic thrust flights (white acceleration noise): the reported σ of T_m and of the
    thrust coefficients predicts the scatter of the estimates: ratio 1 within ~4 sampling
    errors (1/sqrt(2 * 39) = 11 %); the old coarse-grid tau_int made it ~0.1."""
    paper = delay.DelaySettings(exponents=(0, 1, 2))  # the curve whose coefficients are checked
    res = [
        delay.identify([thrust_flight(seed=100 + s, duration=4.0, noise=0.6)], cf, settings=paper) for s in range(40)
    ]
    for name, truth in (("tm", 0.05), ("thrust_c1", K[1]), ("thrust_c2", K[2])):
        v = np.array([r.value(name) for r in res])
        sd = np.array([r.params[name].std for r in res])
        assert np.all(sd > 0)
        ratio = float(np.std(v - truth, ddof=1) / sd.mean())
        assert 0.6 < ratio < 1.5, (name, ratio)
        assert np.mean(np.abs(v - truth) <= 3 * sd) >= 0.9, name


def test_default_ratio_sigma_is_the_table_ii_spread():
    c = delay.TABLE_II_RATIOS
    assert statistics.mean(c) == pytest.approx(1.832, abs=5e-4)  # eq. 93 is their mean
    predictive = statistics.stdev(c) * math.sqrt(1 + 1 / len(c))  # s sqrt(1 + 1/n)
    assert abs(delay.IZZ_RATIO_SIGMA - predictive) < 0.005
    assert delay.DelaySettings().izz_ratio == (1.832, delay.IZZ_RATIO_SIGMA)
    assert delay.DelaySettings(izz_ratio=2.0).izz_ratio == (2.0, delay.IZZ_RATIO_SIGMA)
    assert delay.DelaySettings(izz_ratio=(2.0, 0.1)).izz_ratio == (2.0, 0.1)
    for bad in ((2.0, -0.1), (0.0, 0.1), ("a", 1)):
        with pytest.raises(RotoridError, match="izz_ratio"):
            delay.DelaySettings(izz_ratio=bad)
    with pytest.raises(RotoridError, match="acc_bias_z"):
        delay.DelaySettings(acc_bias_z=(0.0, -1.0))


@pytest.fixture(scope="module")
def full(cf):
    inertia = (1.4e-5, 1.4e-5, 1.832 * 1.4e-5)
    rp = attitude_flight(cf, inertia, 0.05, 0.005, seed=13, duration=10.0, gyro_noise=0.002, yaw=False)
    yw = attitude_flight(cf, inertia, 0.05, 0.005, seed=14, duration=10.0, gyro_noise=0.002, yaw=True)
    thrust = thrust_flight(seed=12)
    return {
        c: delay.identify(
            [thrust], cf, roll_pitch=[rp], yaw=[yw], settings=delay.DelaySettings(gyroscopic=False, izz_ratio=c)
        )
        for c in ((1.832, delay.IZZ_RATIO_SIGMA), (1.832, 0.0))
    }


def test_assumed_parameters_carry_the_assumption_and_its_spread(full):
    r = full[(1.832, delay.IZZ_RATIO_SIGMA)]
    narrow = full[(1.832, 0.0)]
    for name in ("I_zz", "k_tau"):
        e = r.params[name]
        assert e.assumed and "C_xy->z = 1.832 ± 0.4" in e.assumption
        # the ratio's 22 % dominates: σ at least its share, and far above the flights' own σ
        assert e.rel_std_pct >= 100 * delay.IZZ_RATIO_SIGMA / 1.832 * 0.99
        assert e.rel_std_pct > 5 * narrow.params[name].rel_std_pct
        cls, text = verdict(e, r.observability.get(name))
        assert cls == "assumed" and "well determined" not in text
    for name in ("tm", "thrust_c1", "thrust_c2"):
        assert not r.params[name].assumed, name
        assert verdict(r.params[name], r.observability.get(name))[0] != "assumed"
    for name in ("I_xx", "I_yy"):  # measured: on this clean flight their σ is the IMU's assumed scale, not C
        assert "C_xy->z" not in r.params[name].assumption and "--imu-scale" in r.params[name].assumption


def test_no_parameter_has_zero_or_missing_sigma(full):
    for r in full.values():
        for name, e in r.params.items():
            assert math.isfinite(e.std) and e.std > 0, name


def test_accelerometer_bias_is_subtracted_and_its_spread_carried(cf):
    """A z bias the airborne flight cannot see shifts K_0 by m β / M (M rotors); given, it is
    removed; by default its 0.2 m/s² enter σ(K_0) and σ(hover) and mark them assumed."""
    beta = 0.15
    f = thrust_flight(seed=3, duration=8.0, noise=0.1)
    biased = f.replace(acc=f.acc + np.array([0.0, 0.0, beta]))
    clean = delay.identify([f], cf)
    default = delay.identify([biased], cf)
    given = delay.identify([biased], cf, settings=delay.DelaySettings(acc_bias_z=(beta, 0.01)))
    shift = cf.mass * beta / cf.n_rotors
    assert default.value("thrust_c0") - clean.value("thrust_c0") == pytest.approx(shift, rel=1e-3)
    assert given.value("thrust_c0") == pytest.approx(clean.value("thrust_c0"), abs=1e-3 * shift)
    e0, eh = default.params["thrust_c0"], default.params["hover_cmd"]
    assert e0.assumed and eh.assumed and "acc_bias_z" in e0.assumption
    assert e0.std == pytest.approx(cf.mass * delay.ACC_BIAS_Z_SIGMA / cf.n_rotors, rel=0.1)
    assert abs(default.value("thrust_c0") - K[0]) < 3 * e0.std
    assert "acc_bias_z" not in default.params["thrust_c2"].assumption and not default.params["tm"].assumed
    assert given.params["thrust_c0"].std < 0.25 * e0.std  # the 0.01 m/s² left is small


def test_cli_takes_the_ratio_and_the_bias_with_their_sigma(cf_logs, tmp_path):
    """`--izz-ratio C,SIGMA` and `--acc-bias-z VALUE,SIGMA` reach the settings; params.json names
    the assumption; a malformed value is one clear line and exit 2."""
    base = ["identify", "--method", "delay", "--vehicle", "crazyflie", f"{cf_logs['log10']}@35:65"]
    res = CliRunner().invoke(
        app, [*base, "--izz-ratio", "2.0,0.1", "--acc-bias-z", "0.05,0.01", "--out", str(tmp_path / "a")]
    )
    assert res.exit_code == 0, res.output
    p = json.loads((tmp_path / "a" / "params.json").read_text())
    assert p["settings"]["izz_ratio"] == [2.0, 0.1] and p["settings"]["acc_bias_z"] == [0.05, 0.01]
    assert "0.05 ± 0.01 m/s²" in p["params"]["thrust_c0"]["assumption"]
    assert "assumption" not in p["params"]["tm"]
    bad = CliRunner().invoke(app, [*base, "--izz-ratio", "1,2,3", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "--izz-ratio '1,2,3' must be VALUE or VALUE,SIGMA" in bad.output


def test_a_dead_time_the_lag_model_absorbs_widens_sigma_to_cover_it(cf):
    """Accelerometer samples 10 ms late (a sensor or logging offset): the lag-only T_m absorbs
    it (biased far beyond its statistical σ); the dead-time check finds the offset and widens σ
    by the two models' difference, so the truth is covered. Without an offset the check is not
    supported and its difference enters σ only at its evidence's weight: σ nearly as it was."""
    f = thrust_flight(seed=21, duration=8.0, noise=0.3, jitter=False)
    k = 5  # 10 ms at 500 Hz
    late = f.replace(t=f.t[k:], acc=f.acc[:-k], gyro=f.gyro[k:], cmd=f.cmd[k:])
    r = delay.identify([late], cf)
    plain = delay.identify([late], cf, settings=delay.DelaySettings(dead_time_check=False))
    e, e0 = r.params["tm"], plain.params["tm"]
    assert e.value == e0.value and e0.value - 0.05 > 5 * e0.std  # the offset biases the lag-only T_m
    assert r.diagnostics["dead_time"] == pytest.approx(0.010, abs=0.002) and r.diagnostics["dead_time_p"] < 0.01
    assert r.diagnostics["dead_time_tm"] == pytest.approx(0.05, rel=0.05)
    assert abs(e.value - 0.05) < 2 * e.std
    assert any(n.startswith("Residuals are structured: a dead time of") for n in r.notes)
    clean = delay.identify([f], cf)
    assert clean.diagnostics["dead_time_p"] >= 0.01 and not any("a dead time of" in n for n in clean.notes)
    unchecked = delay.identify([f], cf, settings=delay.DelaySettings(dead_time_check=False)).params["tm"].std
    assert unchecked <= clean.params["tm"].std < 1.1 * unchecked


def test_motors_rising_faster_than_they_fall_widen_sigma_to_cover_them(cf):
    """Motors rising in 30 ms and falling in 70 ms: one lag leaves the thrust curve beyond 2σ
    of the truth; the asymmetry check finds the two constants and widens σ of T_m and the curve
    by the two models' difference, so the curve and the mean lag are covered. With one lag the
    check does not fire and σ stays nearly as it was (its evidence's weight)."""
    f = thrust_flight(seed=31, tm=(0.03, 0.07), duration=8.0, noise=0.1)
    paper = delay.DelaySettings(exponents=(0, 1, 2))  # the curve whose coefficients are checked
    r = delay.identify([f], cf, settings=paper)
    unchecked = {f"{c}_check": False for c in ("asymmetry", "dead_time", "inflow", "saturation")}
    plain = delay.identify([f], cf, settings=delay.DelaySettings(**unchecked, exponents=(0, 1, 2)))  # the lag alone
    assert r.params["tm"].value == plain.params["tm"].value
    d = r.diagnostics
    assert d["asym_p"] < 0.01
    assert d["tm_rise"] == pytest.approx(0.03, rel=0.05) and d["tm_fall"] == pytest.approx(0.07, rel=0.05)
    assert abs(r.value("tm") - 0.05) < 2 * r.params["tm"].std
    for j in (1, 2):
        assert abs(plain.value(f"thrust_c{j}") - K[j]) > 2 * plain.params[f"thrust_c{j}"].std
    for j in range(3):
        assert abs(r.value(f"thrust_c{j}") - K[j]) < 2 * r.params[f"thrust_c{j}"].std
    assert any("the motors rise in" in n for n in r.notes)
    assert "rising/falling" in r.observability["tm"]["reason"]
    clean = thrust_flight(seed=31, duration=8.0, noise=0.1)
    one = delay.identify([clean], cf, settings=paper)
    assert one.diagnostics["asym_p"] >= 0.01
    off = delay.identify([clean], cf, settings=delay.DelaySettings(asymmetry_check=False, exponents=(0, 1, 2)))
    assert off.params["tm"].std <= one.params["tm"].std < 1.1 * off.params["tm"].std
