"""Least-squares cores by Monte Carlo: OLS standard deviations have the right coverage, TLS
recovers an errors-in-variables problem that biases OLS, and its standard deviations
(Six et al. eq. 18-21) match the scatter of repeated estimates."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.errors import ExcitationError
from rotorid.methods.regression import ols, tls

RUNS = 400


def test_ols_std_has_the_right_coverage() -> None:
    rng = np.random.default_rng(21)
    n, sigma = 60, 0.5
    a = np.column_stack([np.ones(n), rng.normal(size=n), rng.uniform(-2, 2, n)])  # fixed design
    x_true = np.array([1.0, -2.0, 0.5])
    est, std, s2 = [], [], []
    for _ in range(RUNS):
        fit = ols(a, a @ x_true + sigma * rng.normal(size=n))
        est.append(fit.x)
        std.append(fit.std)
        s2.append(fit.sigma2)
    est, std = np.array(est), np.array(std)
    inside = np.abs(est - x_true) <= 1.96 * std
    assert np.all((inside.mean(axis=0) > 0.91) & (inside.mean(axis=0) < 0.99)), inside.mean(axis=0)
    exact = sigma * np.sqrt(np.diag(np.linalg.inv(a.T @ a)))
    np.testing.assert_allclose(est.std(axis=0), exact, rtol=0.1)  # scatter = the formula
    np.testing.assert_allclose(std.mean(axis=0), exact, rtol=0.03)  # reported std = the formula
    assert np.mean(s2) == pytest.approx(sigma**2, rel=0.03)


def test_weighted_ols_with_known_variances() -> None:
    rng = np.random.default_rng(22)
    n = 200
    a = np.column_stack([np.ones(n), np.linspace(-1, 1, n)])
    noise_sd = np.where(np.arange(n) < n // 2, 0.1, 1.0)
    x_true = np.array([0.3, 2.0])
    est, std = [], []
    for _ in range(RUNS):
        fit = ols(a, a @ x_true + noise_sd * rng.normal(size=n), weights=1.0 / noise_sd**2)
        est.append(fit.x)
        std.append(fit.std)
    exact = np.sqrt(np.diag(np.linalg.inv(a.T @ (a / noise_sd[:, None] ** 2))))
    np.testing.assert_allclose(np.std(est, axis=0), exact, rtol=0.1)
    np.testing.assert_allclose(np.mean(std, axis=0), exact, rtol=0.05)
    assert ols(a, a @ x_true).cond == pytest.approx(np.linalg.cond(a / np.linalg.norm(a, axis=0)), rel=1e-9)


def test_tls_removes_the_errors_in_variables_bias_and_its_std_is_honest() -> None:
    rng = np.random.default_rng(23)
    r, sigma = 400, 0.3
    x_true = np.array([1.5, -0.7, 0.3])
    a_true = rng.normal(size=(r, 3))
    w_true = np.column_stack([a_true, -a_true @ x_true])  # W_t [x; 1] = 0 (Six et al. eq. 13)
    t_est, t_std, o_est = [], [], []
    for _ in range(300):
        w = w_true + sigma * rng.normal(size=w_true.shape)  # noise in every column
        fit = tls(w)
        t_est.append(fit.x)
        t_std.append(fit.std)
        o_est.append(np.linalg.lstsq(w[:, :-1], -w[:, -1], rcond=None)[0])
    t_est, t_std, o_est = map(np.array, (t_est, t_std, o_est))
    # OLS is attenuated: E[x_ols] ~ (A'A + r sigma^2 I)^-1 A'A x (about 1/1.09 here); TLS is not
    ata = a_true.T @ a_true
    np.testing.assert_allclose(
        o_est.mean(axis=0), np.linalg.solve(ata + r * sigma**2 * np.eye(3), ata @ x_true), atol=0.01
    )
    assert np.linalg.norm(o_est.mean(axis=0) - x_true) > 10 * np.linalg.norm(t_est.mean(axis=0) - x_true)
    assert np.all(np.abs(t_est.mean(axis=0) - x_true) < 4 * t_est.std(axis=0) / np.sqrt(300) + 2e-3)
    # eq. 20 against the Monte-Carlo scatter
    np.testing.assert_allclose(t_std.mean(axis=0) / t_est.std(axis=0), 1.0, atol=0.12)
    # eq. 19: sigma_W^2 estimates the entry noise variance
    assert tls(w_true + sigma * rng.normal(size=w_true.shape)).sigma2 == pytest.approx(sigma**2, rel=0.1)


def test_tls_without_noise_is_exact() -> None:
    a = np.random.default_rng(24).normal(size=(50, 2))
    fit = tls(np.column_stack([a, -a @ np.array([2.0, -3.0])]))
    np.testing.assert_allclose(fit.x, [2.0, -3.0], atol=1e-10)
    np.testing.assert_allclose(fit.residual, 0.0, atol=1e-10)


def test_unexcited_problems_raise() -> None:
    a = np.column_stack([np.ones(10), np.zeros(10)])
    with pytest.raises(ExcitationError, match=r"regressor column\(s\) \[1\] are all zero"):
        ols(a, np.ones(10))
    with pytest.raises(ExcitationError, match="3 samples cannot determine 3 parameters"):
        ols(np.eye(3), np.ones(3))
    with pytest.raises(ExcitationError, match="3 rows cannot determine 2 parameters"):
        tls(np.ones((3, 3)))
