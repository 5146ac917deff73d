"""Honest σ for IDIM-TLS (issue 11): the Newey-West sandwich `covariance.tls_hac_cov` is the
paper's eq. 20 when rows are independent and tracks the true spread when they are not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from rotorid.errors import RotoridError
from rotorid.methods import covariance
from rotorid.methods import tls as tls_method
from rotorid.methods.covariance import bc_hac_cov, ewc_cosines, ewc_meat, hac_meat, tls_hac_cov
from rotorid.methods.regression import bias_compensated, tls
from rotorid.methods.tls import TlsSettings
from rotorid.motion import MotionSettings
from rotorid.result import verdict
from rotorid.vehicle import Vehicle

TRUE_X = np.array([0.7, -1.3, 2.0])


def _system(rng: np.random.Generator, n: int, phi: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W_t [x; 1] = rho for x = TRUE_X: smooth regressors observed with AR(1) errors of
    coefficient `phi` (unit variance) in every column; one row per instant, one segment."""
    t = np.arange(n)
    a = np.column_stack([np.sin(0.031 * t), np.cos(0.017 * t + 1), np.sin(0.053 * t) ** 2 + 0.5])
    e = lfilter([np.sqrt(1 - phi**2)], [1.0, -phi], rng.standard_normal((n, 4)), axis=0)
    w = np.column_stack([a, -a @ TRUE_X]) + 0.02 * e
    return w, np.arange(n), np.zeros(n, dtype=int)


def test_hac_is_eq20_for_independent_rows() -> None:
    w, inst, seg = _system(np.random.default_rng(1), 4000, 0.0)
    fit = tls(w)
    hac = tls_hac_cov(w, fit.x, inst, seg, lags=0)
    assert np.sqrt(np.diag(hac)) == pytest.approx(fit.std, rel=0.08)


def test_hac_tracks_the_spread_of_correlated_rows_and_eq20_does_not() -> None:
    """AR(1) row errors with phi = 0.8 (integrated autocorrelation time 9): over 60 draws the
    empirical SD of x is ~3x eq. 20's σ, and within 25 % of the HAC σ."""
    rng = np.random.default_rng(2)
    xs, s20, shac = [], [], []
    for _ in range(60):
        w, inst, seg = _system(rng, 3000, 0.8)
        fit = tls(w)
        xs.append(fit.x)
        s20.append(fit.std)
        shac.append(np.sqrt(np.diag(tls_hac_cov(w, fit.x, inst, seg, lags=40))))
    sd = np.std(xs, axis=0, ddof=1)
    assert np.all(sd / np.mean(s20, axis=0) > 2.0)
    assert sd / np.mean(shac, axis=0) == pytest.approx(np.ones(3), abs=0.25)


def _rule_of_thumb_lags(n: int) -> int:
    """Newey & West's (1994) rule-of-thumb Bartlett bandwidth, floor(4 (n/100)^(2/9)): the
    former default meat's."""
    return int(4.0 * (n / 100.0) ** (2.0 / 9.0))


def test_own_bandwidth_sees_over_differenced_errors() -> None:
    """Row errors that are a first difference of white noise, as the noise of a differentiated
    pose (its power grows with frequency): against regressors at 0.03-0.1 cycles per row (0.5-1.6 Hz
    at the 16.7 rows per second of a 200 Hz motion-capture fit) the scores' sum nearly cancels, so x
    scatters far less than the rows' variance suggests. With the rule-of-thumb bandwidth for
    every parameter (`_rule_of_thumb_lags`, as before) the HAC σ came out 1.5-2.4x the scatter over
    100 draws; with the equal-weighted cosine meat (`ewc_meat`, the default) within 25 %."""
    rng = np.random.default_rng(5)
    n = 3000
    t = np.arange(n)
    a = np.column_stack([np.sin(0.2 * t), np.cos(0.35 * t + 1), np.sin(0.6 * t) ** 2 + 0.5])
    xs, own, rule = [], [], []
    for _ in range(100):
        e = 0.05 * np.diff(rng.standard_normal(n + 1))
        w = np.column_stack([a + 1e-4 * rng.standard_normal((n, 3)), -a @ TRUE_X + e])
        fit = tls(w)
        xs.append(fit.x)
        own.append(np.sqrt(np.diag(tls_hac_cov(w, fit.x, t, np.zeros(n, dtype=int)))))
        rule.append(np.sqrt(np.diag(tls_hac_cov(w, fit.x, t, np.zeros(n, dtype=int), lags=_rule_of_thumb_lags(n)))))
    sd = np.std(xs, axis=0, ddof=1)
    assert np.all(np.mean(rule, axis=0) / sd > 1.4)
    assert sd / np.mean(own, axis=0) == pytest.approx(np.ones(3), abs=0.25)


def test_ewc_meat_is_not_led_by_a_twice_differentiated_noise() -> None:
    """Rows fitted by (bias-compensated) least squares, the final fit's path (`bc_hac_cov`), whose
    error is the second difference of white noise (a twice-differentiated pose's noise: power
    rising as f⁴, lag-1 autocorrelation -2/3) plus a white error of 1/600 of its variance,
    which alone moves x (the first column is nearly constant, like the thrust regressor at
    hover). Over 200 draws the Newey-West meat at L = 0.1 T (the widest window of Newey and
    West's 1994 rule, the former default) made σ 1.8-2.1x the scatter: the Bartlett kernel's
    -Σ|l|γ_l / (L + 1) is the size of the long-run variance even there. The equal-weighted cosine meat
    (`ewc_meat`, the default) is within 10 %."""
    rng = np.random.default_rng(11)
    n = 2500
    t = np.arange(n)
    seg, blocks, zero = np.zeros(n, dtype=int), np.zeros(n, dtype=int), np.zeros((1, 4, 4))
    a = np.column_stack([1.0 + 0.3 * np.sin(0.05 * t), np.cos(0.03 * t + 1), np.sin(0.08 * t)])
    xs, ewc, nw94 = [], [], []
    for _ in range(200):
        e = 0.05 * np.diff(rng.standard_normal(n + 2), 2) + 0.005 * rng.standard_normal(n)
        w = np.column_stack([a, -a @ TRUE_X + e])
        fit = bias_compensated(w, zero[0])
        xs.append(fit.x)
        ewc.append(np.sqrt(np.diag(bc_hac_cov(w, fit.x, zero, blocks, t, seg))))
        nw94.append(np.sqrt(np.diag(bc_hac_cov(w, fit.x, zero, blocks, t, seg, lags=n // 10))))
    sd = np.std(xs, axis=0, ddof=1)
    assert np.all(np.mean(nw94, axis=0) / sd > 1.5)
    assert sd / np.mean(ewc, axis=0) == pytest.approx(np.ones(3), abs=0.1)


def test_ewc_meat_is_the_cosine_sum_per_segment() -> None:
    """`ewc_meat` is Σ_s T_s / ν_s Σ_j Λ_j Λ_jᵀ with Λ_j = sqrt(2/T_s) Σ_t g_t cos(π j (t + ½) / T_s)
    per segment (ν_s = `ewc_cosines`), positive semi-definite; white scores give their variance."""
    rng = np.random.default_rng(12)
    g = rng.standard_normal((900, 2))
    seg = np.repeat([0, 3], [500, 400])
    want = np.zeros((2, 2))
    for x in (g[:500], g[500:]):
        m = len(x)
        nu = ewc_cosines(m)
        basis = np.sqrt(2.0 / m) * np.cos(np.pi * np.outer(np.arange(1, nu + 1), np.arange(m) + 0.5) / m)
        lam = basis @ x
        want += m / nu * lam.T @ lam
    got = ewc_meat(g, seg)
    assert got == pytest.approx(want, rel=1e-10)
    assert np.all(np.linalg.eigvalsh(got) >= 0)
    assert ewc_cosines(500) == 25 and ewc_cosines(2) == 1
    white = ewc_meat(rng.standard_normal((200_000, 1)), np.zeros(200_000, dtype=int))[0, 0] / 200_000
    assert white == pytest.approx(1.0, abs=0.1)


def test_meat_never_pairs_two_segments() -> None:
    g = np.array([[1.0], [1.0], [1.0], [1.0]])
    assert hac_meat(g, np.array([0, 0, 1, 1]), lags=1)[0, 0] == pytest.approx(4 + 2 * 0.5 * 2)
    assert hac_meat(g, np.array([0, 1, 2, 3]), lags=3)[0, 0] == pytest.approx(4)


def test_default_decimation_keeps_one_row_per_nyquist_interval_of_the_filter() -> None:
    st = TlsSettings()
    assert st.decimation(MotionSettings().at(200.0)) == 6  # 200 Hz / (2 x 15 Hz)
    assert st.decimation(MotionSettings(source="mocap").at(200.0)) == 12  # 8 Hz band
    assert st.decimation(MotionSettings().at(50.0)) == 4  # band fs/8 = 6.25 Hz
    assert TlsSettings(decimate=3).decimation(MotionSettings().at(200.0)) == 3
    with pytest.raises(Exception, match="covariance"):
        TlsSettings(covariance="white").resolve(200.0)


def test_motor_spread_enters_sigma_as_the_com_shift_it_implies_and_is_labelled_assumed() -> None:
    """A rotor stronger by ε_i is, in hover, a CoM shift Σ ε_i r_i / n (`TlsSettings.motor_spread`):
    for a '+' quadrotor of arm L and independent gains of 1σ σ_ε that is σ_ε L √2 / 4 per
    horizontal axis (2.4 mm at 3 %, L = 0.225 m). The σ the assumption adds to com_x, com_y is
    that within 5 %, the parameters it dominates are labelled assumed (verdict "assumed", never
    "well determined"), and with 0 (identical rotors) nothing is. (The gains not estimated,
    `TlsSettings.rotor_gains` False: the path a flight that does not separate them takes.)"""
    from test_tls_unit import kinematic_flight

    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285)
    fl = kinematic_flight(v, seed=3, dur=20.0, noise=(0.02, 0.002, 0, 0))
    ideal = {"imu_scale": 0.0, "imu_misalign": 0.0}  # the kinematic flight's IMU is the body's
    r0 = tls_method.identify({"A": [fl]}, v, settings=TlsSettings(motor_spread=0.0, essential=False, **ideal))
    r = tls_method.identify({"A": [fl]}, v, settings=TlsSettings(essential=False, rotor_gains=False, **ideal))
    assert r.settings["motor_spread"] == tls_method.MOTOR_SPREAD == 0.03
    for k in ("com_x", "com_y"):
        added = np.sqrt(r.params[k].std ** 2 - r0.params[k].std ** 2)
        assert added == pytest.approx(0.03 * 0.225 * np.sqrt(2) / 4, rel=0.05), k
        assert r.params[k].value == r0.params[k].value
        assert (
            "--motor-spread" in r.params[k].assumption and verdict(r.params[k], r.observability.get(k)).cls == "assumed"
        )
    assert not any(e.assumption for e in r0.params.values())
    assert all(e.std > 0 for e in r.params.values())
    with pytest.raises(RotoridError, match="motor-spread"):
        TlsSettings(motor_spread=1.5).resolve(200.0)


def _omitted(theta: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """W_t of y = x0 a0 + x1 a1 + theta a2 + noise with a2 correlated with a1 (corr 0.8), and
    P = ∂x1/∂theta of the fit that leaves a2 out (the omitted-variable map)."""
    rng = np.random.default_rng(seed)
    n = 2000
    a0, e1, e2 = rng.standard_normal((3, n))
    a1 = e1
    a2 = 0.8 * e1 + 0.6 * e2
    a = np.column_stack([a0 + 3.0, a1, a2])
    w = np.column_stack([a, -(a @ np.array([1.0, 2.0, theta])) + 0.05 * rng.standard_normal(n)])
    p = np.linalg.lstsq(a[:, :2], a[:, 2], rcond=None)[0]
    return w, p


def test_cancellation_variance_is_the_bias_of_a_parameter_set_to_zero() -> None:
    """`cancellation_var`: cancelling a column whose coefficient is 0.1 moves the kept
    estimates by P θ (0.08 on x1, 16x its σ): the term is that bias squared; cancelling a
    column whose coefficient is 0 adds (nearly) nothing."""
    blocks, active, scale = np.zeros(2000, dtype=int), np.array([True]), np.array([1.0])
    w, p = _omitted(0.1, 0)
    var = tls_method.cancellation_var(w, blocks, [0, 1], active, scale)
    assert np.sqrt(var[1]) == pytest.approx(abs(p[1] * 0.1), rel=0.05)  # x0 (uncorrelated) barely moves
    red = tls(w[:, [0, 1, 3]])
    assert np.sqrt(var[1]) > 10 * red.std[1]
    zero = [tls_method.cancellation_var(_omitted(0.0, s)[0], blocks, [0, 1], active, scale) for s in range(20)]
    assert np.mean([z[1] for z in zero]) < 0.5 * red.std[1] ** 2
    assert not tls_method.cancellation_var(w, blocks, [0, 1, 2], active, scale).any()  # nothing cancelled


def test_imu_lag_behind_the_rotors_is_estimated() -> None:
    """A 4 ms IMU lag behind the rotor signals (six-config-a, 20 s): with `imu_delay=None` it is
    found within 0.5 ms, and k_t, I_xx, I_zz come back to a fraction of the lag-blind errors
    (k_t -0.6 %, I_zz -15 % on the 75 s flight)."""
    from rotorid.result import compare
    from rotorid.sim import scenarios

    sc = scenarios.run("six-config-a", seed=0, duration=20.0, imu_delay=0.004, flights=("train",))
    fl = {"A": [sc.flights["train"]]}
    blind = compare(
        tls_method.identify(fl, sc.vehicle, settings=TlsSettings(motor_spread=0.0, imu_delay=0.0)), sc.truth
    )
    res = tls_method.identify(fl, sc.vehicle, settings=TlsSettings(motor_spread=0.0, imu_delay=None))
    assert res.settings["imu_delay"] == pytest.approx(0.004, abs=5e-4)
    err = compare(res, sc.truth)
    for k in ("k_t", "I_xx", "I_zz"):
        assert abs(err[k]) < 0.35 * abs(blind[k]), k
    with pytest.raises(RotoridError, match="imu-delay"):
        TlsSettings(imu_delay=0.1).resolve(200.0)


def test_the_sandwich_gives_back_what_the_fit_takes_from_a_sparsely_informed_parameter() -> None:
    """A slope informed by 8 of 400 rows (white errors, a constant alongside): the long-run
    variance of the scores at the estimate misses the fit's share of them. Over 1000 draws the
    mean of σ² over the exact variance was 0.67 (EWC) and 0.69 (Newey-West, 5 lags) before the
    leverage correction; with it 0.90 and 0.98."""
    rng = np.random.default_rng(2)
    t, n_on = 400, 8
    rows = np.linspace(10, t - 10, n_on).astype(int)
    zero, step = np.zeros(t, dtype=int), np.arange(t)
    ewc, nw = [], []
    for _ in range(1000):
        a = np.zeros(t)
        a[rows] = rng.standard_normal(n_on)
        y = a + rng.standard_normal(t)
        w = np.stack([a, np.ones(t), -y], -1)
        x = np.linalg.lstsq(w[:, :2], y, rcond=None)[0]
        exact = np.linalg.inv(w[:, :2].T @ w[:, :2])[0, 0]
        ewc.append(bc_hac_cov(w, x, np.zeros((1, 3, 3)), zero, step, zero)[0, 0] / exact)
        nw.append(bc_hac_cov(w, x, np.zeros((1, 3, 3)), zero, step, zero, lags=5)[0, 0] / exact)
    assert 0.85 < np.mean(ewc) < 1.1
    assert 0.9 < np.mean(nw) < 1.1


def test_equal_leverage_costs_the_cosine_estimate_nothing() -> None:
    """EWC's cosines are orthogonal to a constant: equal per-step leverage has k = 0."""
    lev = np.full((500, 1), 1.0 / 500)
    assert ewc_meat(lev, np.zeros(500, dtype=int))[0, 0] == pytest.approx(0.0, abs=1e-12)


def test_the_sandwich_does_not_depend_on_how_many_rows_it_reads_at_a_time(monkeypatch) -> None:
    """The scores and leverage are summed per step a chunk of rows at a time (`covariance.CHUNK`):
    chunks that split the rows of an instant (six per instant, blocks of rows apart, two segments)
    give the covariance of one chunk."""
    rng = np.random.default_rng(5)
    n = 300
    w = rng.standard_normal((6 * n, 4))
    x = np.linalg.lstsq(w[:, :3], -w[:, 3], rcond=None)[0]
    blocks = np.repeat(np.arange(6), n)
    step, seg = np.tile(np.arange(n), 6), np.repeat([0, 1], n // 2)
    noise = np.stack([0.01 * (b + 1) * np.eye(4) for b in range(6)])
    extra = 0.1 * rng.standard_normal((n, 3))
    whole = (bc_hac_cov(w, x, noise, blocks, step, seg, extra=extra), tls_hac_cov(w, x, step, seg, extra=extra))
    monkeypatch.setattr(covariance, "CHUNK", 7)
    chunked = (bc_hac_cov(w, x, noise, blocks, step, seg, extra=extra), tls_hac_cov(w, x, step, seg, extra=extra))
    for a, b in zip(whole, chunked, strict=True):
        assert np.all(np.linalg.eigvalsh(a) > 0)
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=0)
