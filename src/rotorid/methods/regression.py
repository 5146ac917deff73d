"""Least-squares cores shared by every method: ordinary and weighted LS with parameter
covariance, and Total Least Squares by thin SVD (Six et al. eq. 13-22)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rotorid.errors import ExcitationError


@dataclass(frozen=True)
class Fit:
    """A linear fit: parameters `x`, their covariance `cov`, residual vector, residual
    variance, and the condition number of the (scaled) regressor."""

    x: np.ndarray
    cov: np.ndarray
    residual: np.ndarray
    sigma2: float
    cond: float

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    @property
    def rel_std_pct(self) -> np.ndarray:
        """%sigma = 100 sigma / |x| (Six et al. eq. 22); inf where x == 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.x != 0, 100.0 * self.std / np.abs(self.x), np.inf)

    @property
    def sse(self) -> float:
        return float(self.residual @ self.residual)


def _cond(a: np.ndarray) -> float:
    """Condition number of `a` after scaling its columns to unit norm (scale-free)."""
    n = np.linalg.norm(a, axis=0)
    s = np.linalg.svd(a / np.where(n > 0, n, 1.0), compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def ols(a: np.ndarray, b: np.ndarray, weights: np.ndarray | None = None, what: str = "regression") -> Fit:
    """Ordinary (or row-weighted) least squares min ||sqrt(w) (a x - b)||.

    Covariance sigma^2 (A^T W A)^-1 with sigma^2 = SSE/(n-p). Raises `ExcitationError` when
    a column of `a` is identically zero (that parameter is not excited at all).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    n, p = a.shape
    if n <= p:
        raise ExcitationError(f"{what}: {n} samples cannot determine {p} parameters")
    sw = np.ones(n) if weights is None else np.sqrt(np.asarray(weights, dtype=float))
    aw, bw = a * sw[:, None], b * sw
    zero = np.flatnonzero(~np.any(aw != 0, axis=0))
    if zero.size:
        raise ExcitationError(
            f"{what}: regressor column(s) {zero.tolist()} are all zero: those parameters are not excited"
        )
    x, *_ = np.linalg.lstsq(aw, bw, rcond=None)
    r = b - a @ x
    rw = r * sw
    sigma2 = float(rw @ rw / (n - p))
    cov = sigma2 * np.linalg.pinv(aw.T @ aw)
    return Fit(x, cov, r, sigma2, _cond(aw))


def tls(w: np.ndarray, what: str = "TLS") -> Fit:
    """Total Least Squares of W_t chi_t = rho with the last element of chi_t fixed to 1
    (Six et al. eq. 13-17); standard deviations by eq. 18-21.

    `w` is the (r, n_t) matrix whose last column holds the known term (e.g. m W_m). Returns
    the first n_t - 1 parameters; `residual` is W_t [x; 1], `sigma2` is sigma_W^2 (eq. 19).
    """
    w = np.asarray(w, dtype=float)
    r, nt = w.shape
    if r <= nt:
        raise ExcitationError(f"{what}: {r} rows cannot determine {nt - 1} parameters")
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    v = vt[-1]
    if abs(v[-1]) < 1e-12 * np.max(np.abs(v)):
        raise ExcitationError(
            f"{what}: the known column is orthogonal to the data's null space; the system is degenerate"
        )
    chi = v / v[-1]
    x = chi[:-1]
    w_bar = w - s[-1] * np.outer(u[:, -1], v)  # eq. 16
    sigma_w2 = s[-1] ** 2 / (r - nt)  # eq. 19
    wb = w_bar[:, :-1]
    cov = sigma_w2 * (1.0 + x @ x) * np.linalg.pinv(wb.T @ wb)  # eq. 20
    return Fit(x, cov, w @ chi, float(sigma_w2), _cond(w[:, :-1]))
