"""Honest σ for the online method (issue 11): the HAC sandwich of a recursive least squares,
`covariance.rls_hac_cov`, its long-run variance by equal-weighted cosines, widened by the leverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from rotorid.methods.covariance import hac_meat, rls_hac_cov, sandwich

THETA = np.array([0.05, -0.02])


def _draw(rng: np.random.Generator, n: int, phi: float, r: float = 1e-2):
    """Rows y = h theta + e of an RLS with AR(1) errors (coefficient phi, variance r) and its
    final estimate and bread (sum h h^T / r)^-1 (flat prior)."""
    t = np.arange(n)
    h = np.stack([np.sin(0.05 * t) + 0.3 * rng.standard_normal(n), np.ones(n)], -1)[:, None, :]
    e = np.sqrt(r) * lfilter([np.sqrt(1 - phi**2)], [1.0, -phi], rng.standard_normal(n))
    y = h[:, 0] @ THETA + e
    bread = np.linalg.inv(np.einsum("tkp,tkq->pq", h, h) / r)
    x = bread @ np.einsum("tkp,tk->p", h, y[:, None] / r)
    return x, bread, h, (y - h[:, 0] @ x)[:, None], np.full((n, 1), r)


def test_independent_rows_give_the_rls_covariance() -> None:
    _, bread, h, e, r = _draw(np.random.default_rng(0), 20000, 0.0)
    assert np.sqrt(np.diag(rls_hac_cov(bread, h, e, r, lags=0))) == pytest.approx(np.sqrt(np.diag(bread)), rel=0.05)
    assert np.sqrt(np.diag(rls_hac_cov(bread, h, e, r))) == pytest.approx(np.sqrt(np.diag(bread)), rel=0.15)


def test_correlated_rows_the_sandwich_tracks_the_spread() -> None:
    """AR(1) errors, phi = 0.7: the RLS covariance understates the spread of the estimate over
    80 draws by ~2x; the sandwich with the data-chosen bandwidth is within 25 %."""
    rng = np.random.default_rng(1)
    xs, s_rls, s_hac = [], [], []
    for _ in range(80):
        x, bread, h, e, r = _draw(rng, 3000, 0.7)
        xs.append(x)
        s_rls.append(np.sqrt(np.diag(bread)))
        s_hac.append(np.sqrt(np.diag(rls_hac_cov(bread, h, e, r))))
    sd = np.std(xs, axis=0, ddof=1)
    assert np.all(sd / np.mean(s_rls, axis=0) > 1.6)
    assert sd / np.mean(s_hac, axis=0) == pytest.approx(np.ones(2), abs=0.25)


def test_the_assumptions_enter_sigma_and_label_what_rests_on_them() -> None:
    """kwon-payload (10 s): with the default 3 % motor spread the CoM σ is the hover shift
    Σ ε_i r_i / n of an X quadrotor with 0.2 m arms, σ_ε sqrt(Σ r_ix²) / n = 0.03 · 0.0707 m,
    and the CoM is labelled assumed; the mass carries the accelerometer z bias, m σ_b / g.
    Without the assumptions the CoM σ is the flight's own few µm and nothing is assumed.
    (10 s, not 20: the CoM σ within 2.1 % of the shift's, the mass σ 0.03 %, without the
    assumptions 2.2 µm and 0.08 g, as at 20 s but for the flight's own parts, ×1.5.)"""
    from rotorid.methods import online
    from rotorid.sim import scenarios

    sc = scenarios.run("kwon-payload", seed=0, duration=10.0)
    fl, veh = sc.flights["trajectory"], sc.vehicle
    r = online.identify(fl, veh)
    for name in ("com_x", "com_y"):
        assert r.params[name].std == pytest.approx(0.03 * 0.2 * np.sqrt(4 * 0.5) / 4, rel=0.1), name
        assert r.params[name].assumed and "motor_spread" in r.params[name].assumption
    m = r.params["mass"]
    assert m.std == pytest.approx(m.value * 0.2 / 9.81, rel=0.05) and "acc_bias_z_sigma" in m.assumption
    bare = online.identify(fl, veh, online.OnlineSettings(motor_spread=0.0, acc_bias_z_sigma=0.0))
    assert not any(e.assumed for e in bare.params.values())
    assert bare.params["com_x"].std < 2e-5 and bare.params["mass"].std < 1e-3
    for name, e in bare.params.items():  # same values: the assumptions only widen σ
        assert r.params[name].value == e.value and r.params[name].std >= e.std, name


def test_over_differenced_errors_are_not_led_by_their_lags() -> None:
    """Row errors e = white + a first difference of an AR(0.5) series, 20 times its variance (the
    differentiated rate error in the online method's moment rows), with a constant regressor (the
    CoM columns' ≈ constant thrust): the long-run variance is the white part's alone. A Bartlett
    window of 10 lags overstates the spread of the estimate ~2x (its -Σ|l|γ_l / (L + 1) is the
    size of the long-run variance); the equal-weighted cosine estimate of `rls_hac_cov` is
    within 25 %."""
    rng = np.random.default_rng(2)
    n, xs, s_bart, s_hac = 3000, [], [], []
    for _ in range(60):
        h = np.stack([np.ones(n), np.sin(0.01 * np.arange(n)) + 0.2 * rng.standard_normal(n)], -1)[:, None, :]
        u = lfilter([1.0], [1.0, -0.5], rng.standard_normal(n + 1))
        e = 0.05 * rng.standard_normal(n) + 0.2 * np.diff(u)
        y = h[:, 0] @ THETA + e
        r = np.full((n, 1), 1.0)
        bread = np.linalg.inv(np.einsum("tkp,tkq->pq", h, h))
        x = bread @ np.einsum("tkp,tk->p", h, y[:, None])
        res = (y - h[:, 0] @ x)[:, None]
        xs.append(x)
        s_bart.append(np.sqrt(np.diag(rls_hac_cov(bread, h, res, r, lags=10))))
        s_hac.append(np.sqrt(np.diag(rls_hac_cov(bread, h, res, r))))
    sd = np.std(xs, axis=0, ddof=1)
    assert sd[0] / np.mean(s_bart, axis=0)[0] < 0.6
    assert sd[0] / np.mean(s_hac, axis=0)[0] == pytest.approx(1.0, abs=0.25)


def test_equal_leverage_is_kiefer_vogelsangs_first_order_term() -> None:
    """k = Σ w G_t G_s of equal shares G_t = 1/T is b = (L+1)/T up to O(b²)."""
    t, lags = 2000, 40
    k = hac_meat(np.full((t, 1), 1.0 / t), np.zeros(t, dtype=int), lags)[0, 0]
    assert k == pytest.approx((lags + 1) / t, rel=0.05)


def test_leverage_restores_the_variance_a_sparsely_informed_parameter_loses() -> None:
    """A parameter informed by 8 of 400 rows (white errors): the long-run variance of the
    scores at the estimate misses what the fit takes from them. Over 1000 draws the mean of σ²
    over the exact variance bread_00 is 0.71 without the leverage correction; with it, 0.93."""
    rng = np.random.default_rng(1)
    t, n_on = 400, 8
    rows = np.linspace(10, t - 10, n_on).astype(int)
    plain, corrected = [], []
    for _ in range(1000):
        a = np.zeros(t)
        a[rows] = rng.standard_normal(n_on)
        h = np.stack([a, np.ones(t)], -1)[:, None, :]
        y = a + rng.standard_normal(t)
        bread = np.linalg.inv(np.einsum("tkp,tkq->pq", h, h))
        res = y[:, None] - h @ (bread @ np.einsum("tkp,tk->p", h, y[:, None]))
        corrected.append(rls_hac_cov(bread, h, res, np.ones((t, 1)))[0, 0] / bread[0, 0])
        g = np.einsum("tkp,tk->tp", h, res)
        plain.append(sandwich(bread, g, np.zeros(t, dtype=int), None, 1.0, np.zeros_like(g))[0, 0] / bread[0, 0])
    assert np.mean(plain) < 0.8
    assert 0.9 < np.mean(corrected) < 1.1
