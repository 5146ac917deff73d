"""Least-squares cores by Monte Carlo: OLS standard deviations have the right coverage, TLS
recovers an errors-in-variables problem that biases OLS, and its standard deviations
(Six et al. eq. 18-21) match the scatter of repeated estimates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rotorid.errors import ExcitationError
from rotorid.methods.covariance import bc_hac_cov
from rotorid.methods.regression import bias_compensated, compress, ols, ols_blocks, reduce_rows, tls

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


def test_ols_by_blocks_is_the_ols_of_the_stacked_rows() -> None:
    """Uneven blocks, badly scaled columns: the same x, covariance, residual, σ² and condition
    number as `ols` on the whole regressor; the SSE from R alone (`reduce_rows`) too."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((1000, 4)) * np.array([1.0, 1e3, 1e-2, 5.0])
    b = a @ np.array([0.5, -2e-3, 40.0, 1.0]) + 0.1 * rng.standard_normal(1000)
    cuts = [0, 7, 300, 301, 999, 1000]
    whole = ols(a, b)
    fit = ols_blocks(lambda: (a[i:j] for i, j in itertools.pairwise(cuts)), b)
    for got, want in [(fit.x, whole.x), (fit.cov, whole.cov), (fit.residual, whole.residual)]:
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
    assert fit.sigma2 == pytest.approx(whole.sigma2, rel=1e-10) and fit.cond == pytest.approx(whole.cond, rel=1e-8)
    assert reduce_rows((a[i : i + 128] for i in range(0, 1000, 128)), b).sse == pytest.approx(fit.sse, rel=1e-10)
    with pytest.raises(ExcitationError, match=r"column\(s\) \[1\]"):
        ols_blocks(lambda: iter([a[:10] * [1, 0, 1, 1], a[10:] * [1, 0, 1, 1]]), b, what="t")
    with pytest.raises(ValueError, match="hold 10 rows"):
        reduce_rows(iter([a[:10]]), b)


def test_unexcited_problems_raise() -> None:
    a = np.column_stack([np.ones(10), np.zeros(10)])
    with pytest.raises(ExcitationError, match=r"regressor column\(s\) \[1\] are all zero"):
        ols(a, np.ones(10))
    with pytest.raises(ExcitationError, match="3 samples cannot determine 3 parameters"):
        ols(np.eye(3), np.ones(3))
    with pytest.raises(ExcitationError, match="3 rows cannot determine 2 parameters"):
        tls(np.ones((3, 3)))


def _eiv_draw(rng: np.random.Generator, n: int, noise: np.ndarray, phi: float) -> np.ndarray:
    """W = [X, -y] of y = X beta + e with the regressors X measured with noise of row covariance
    `noise` (2, 2), the equation error e and the measurement noise AR(1) in time with lag-1
    correlation `phi` (stationary, same variance); the true regressors are fixed across draws."""
    t = np.arange(n)
    x0 = np.column_stack([np.sin(2 * np.pi * t / 97.0), np.cos(2 * np.pi * t / 61.0) + 0.3])
    z = rng.normal(size=(n, 3))
    for i in range(1, n):  # AR(1) in time: rows correlated as after a low-pass
        z[i] = phi * z[i - 1] + np.sqrt(1 - phi**2) * z[i]
    u = z[:, :2] @ np.linalg.cholesky(noise).T
    y = x0 @ EIV_BETA + 0.2 * z[:, 2]
    return np.column_stack([x0 + u, -y])


EIV_BETA = np.array([1.5, -0.8])
EIV_NOISE = np.array([[0.09, 0.03], [0.03, 0.06]])


def _eiv_runs(phi: float, runs: int, n: int = 1500) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(31)
    moment = np.zeros((3, 3))
    moment[:2, :2] = EIV_NOISE
    ls, bc, std = [], [], []
    for _ in range(runs):
        w = _eiv_draw(rng, n, EIV_NOISE, phi)
        ls.append(np.linalg.lstsq(w[:, :2], -w[:, 2], rcond=None)[0])
        fit = bias_compensated(w, n * moment)
        seg = np.zeros(n, dtype=int)
        cov = bc_hac_cov(w, fit.x, moment[None], np.zeros(n, dtype=int), np.arange(n), seg, lags=20)
        bc.append(fit.x)
        std.append(np.sqrt(np.diag(cov)))
    return np.array(ls), np.array(bc), np.array(std)


def test_bias_compensated_ls_is_unbiased_where_ls_is_attenuated() -> None:
    ls, bc, _ = _eiv_runs(phi=0.0, runs=200)
    se = bc.std(axis=0, ddof=1) / np.sqrt(len(bc))
    assert np.all(np.abs(ls.mean(axis=0) - EIV_BETA) > 10 * se)  # errors in variables bias plain LS
    assert np.all(np.abs(bc.mean(axis=0) - EIV_BETA) < 3 * se), (bc.mean(axis=0), se)


def test_bias_compensated_covariance_matches_the_scatter_of_correlated_rows() -> None:
    _, bc, std = _eiv_runs(phi=0.6, runs=200)
    ratio = bc.std(axis=0, ddof=1) / std.mean(axis=0)
    assert np.all((ratio > 0.85) & (ratio < 1.2)), ratio
    inside = np.mean(np.abs(bc - EIV_BETA) <= 2 * std, axis=0)
    assert np.all(inside > 0.9), inside


def test_bias_compensated_without_noise_is_least_squares() -> None:
    rng = np.random.default_rng(32)
    w = _eiv_draw(rng, 300, EIV_NOISE, 0.0)
    fit = bias_compensated(w, np.zeros((3, 3)))
    np.testing.assert_allclose(fit.x, ols(w[:, :2], -w[:, 2]).x, rtol=1e-10)
    np.testing.assert_allclose(fit.cov, ols(w[:, :2], -w[:, 2]).cov, rtol=1e-8)
    with pytest.raises(ExcitationError, match="noise moment exceeds"):
        bias_compensated(w, 1e6 * np.eye(3))


def test_compress_takes_sorted_blocks_as_slices_with_the_same_numbers() -> None:
    """Row blocks in `assemble`'s layout (sorted: each a slice) give bit for bit the R factors of
    the same rows interleaved with another block's (gathered), and the QR of each block alone."""
    rng = np.random.default_rng(5)
    w = rng.normal(size=(700, 6))
    blocks = np.repeat([0, 1, 2], [300, 0, 400])  # block 1 empty
    labels = rng.permutation(blocks)  # the blocks' rows interleaved, each block's in its order
    mixed = np.empty_like(w)
    for b in (0, 2):
        mixed[labels == b] = w[blocks == b]
    r, idx, counts = compress(w, blocks)
    r2, idx2, counts2 = compress(mixed, labels)
    np.testing.assert_array_equal(r, r2)
    np.testing.assert_array_equal(idx, idx2)
    np.testing.assert_array_equal(counts, [300, 0, 400])
    np.testing.assert_array_equal(counts2, counts)
    np.testing.assert_array_equal(r[idx == 2], np.linalg.qr(w[300:], mode="r"))


def test_compress_of_a_row_mask_equals_compress_of_the_gathered_rows() -> None:
    """`compress(w, blocks, rows)` gathers a block's masked rows at a time (issue 36): bit for bit
    `compress(w[rows], blocks[rows])`, sorted or interleaved blocks, a block left with no row, and
    the last blocks masked out entirely (fewer blocks, as the gathered call counts them)."""
    rng = np.random.default_rng(6)
    w = rng.normal(size=(900, 5))
    blocks = np.repeat([0, 1, 2, 3], [300, 150, 250, 200])
    rows = rng.random(900) < 0.8
    rows[300:450] = False  # block 1: no row kept
    for b, m in ((blocks, rows), (rng.permutation(blocks), rows), (blocks, rows & (blocks < 2))):
        got, want = compress(w, b, m), compress(w[m], b[m])
        for x, y in zip(got, want, strict=True):
            assert x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    assert len(compress(w, blocks, rows & (blocks < 2))[2]) == 1
