"""Long-run variances and autocorrelation times of serially correlated series (Sokal's window), and
the HAC covariance of a fit's influence series."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Sokal's window constant: autocovariances are summed up to the smallest lag M with
#: M >= c tau_int(M) (Sokal 1997, "Monte Carlo Methods in Statistical Mechanics", Sec. 3;
#: c = 5 as in emcee's `integrated_time`).
SOKAL_C = 5.0


def long_run_var(z: np.ndarray, lengths: Sequence[int] | None = None) -> tuple[float, float]:
    """Variance of the sum Σ_t z_t of a zero-mean, serially correlated series, and its
    integrated autocorrelation time.

    The autocovariances Γ_k = Σ_t z_t z_{t+k} are pooled over the segments `lengths` (one per
    flight: no products across a flight boundary) and summed over |k| <= M with Sokal's
    automatic window (`SOKAL_C`); variance = Γ_0 tau_int with tau_int = 1 + 2 Σ_{k<=M} Γ_k/Γ_0.
    Unlike a sum over the initial positive autocorrelations (Geyer), this keeps the negative
    lobes that low-pass filtered and differentiated noise has, which a truncation at the first
    zero crossing drops (overstating the variance). Applied to a fit's influence series
    (`ols_influence`) this is the heteroscedasticity- and autocorrelation-consistent variance
    of Newey & West (1987) with a truncated kernel and a data-driven bandwidth. tau_int is
    floored at 1/c: below that, Sokal's criterion holds already at M = 1 and cannot resolve it.
    """
    z = np.asarray(z, dtype=float)
    lengths = [len(z)] if lengths is None else [int(n) for n in lengths]
    return _sokal_windows(z[:, None], lengths)[0]


#: Lags of the first autocovariance pass (`_sokal_windows`), and the block length of the blocked
#: correlation (`autocov`): Sokal's window closes at M = c tau_int, a few hundred lags at most
#: for the residuals and influence series here, so the first pass usually decides.
FIRST_LAGS = 1024
ACOV_BLOCK = 1 << 16


def _sokal_windows(z: np.ndarray, lengths: Sequence[int]) -> list[tuple[float, float]]:
    """`_sokal` of each column of `z` (N, P), the autocovariances computed to `FIRST_LAGS` lags
    first and to 8 times more until every column's window closes (or all max(lengths) // 2
    lags are in): the window uses only the lags below it, so the result is that of all lags."""
    kmax = max(max(lengths) // 2, 1)
    nlags = min(FIRST_LAGS, kmax)
    while True:
        acov = autocov(z, lengths, nlags)
        out = [_sokal(acov[:, i], complete=nlags == kmax) for i in range(z.shape[1])]
        closed = [o for o in out if o is not None]
        if len(closed) == len(out):
            return closed
        nlags = min(8 * nlags, kmax)


def autocov(z: np.ndarray, lengths: Sequence[int], nlags: int) -> np.ndarray:
    """(nlags, P): the autocovariances Γ_k, k < nlags, of each column of `z` (N, P), pooled
    over the segments `lengths` (no product across a boundary). Blocked correlation: each block
    of `ACOV_BLOCK` (or nlags) samples against itself and the next nlags - 1 samples, by FFT
    zero-padded past their sum (no circular wrap), so the buffers are a few blocks whatever
    the flight's length (one transform of a whole hour at 1 kHz, 8 M points, allocated
    ~130 MB per column on every call: fresh memory the kernel mapped and zeroed)."""
    acov = np.zeros((nlags, z.shape[1]))
    size = max(nlags, ACOV_BLOCK)
    m = 1 << int(np.ceil(np.log2(size + nlags)))
    start = 0
    for n in lengths:
        seg = z[start : start + n]
        for s in range(0, n, size):
            spec = np.fft.rfft(seg[s : s + size + nlags - 1], m, axis=0)
            spec *= np.fft.rfft(seg[s : s + size], m, axis=0).conj()
            acov += np.fft.irfft(spec, m, axis=0)[:nlags]
        start += n
    return acov


def _sokal(acov: np.ndarray, complete: bool = True) -> tuple[float, float] | None:
    """(Γ_0 tau_int, tau_int) from the autocovariances Γ_k with Sokal's window (`long_run_var`);
    None when the window does not close within these lags and they are not `complete`."""
    kmax = len(acov)
    if not acov[0] > 0:
        return 0.0, 1.0
    tau = 1.0 + 2.0 * np.cumsum(acov[1:] / acov[0])
    lags = np.arange(1, kmax)
    ok = np.flatnonzero(lags >= SOKAL_C * tau)
    if not ok.size and not complete:
        return None
    t = float(tau[ok[0]]) if ok.size else float(tau[-1]) if tau.size else 1.0
    t = max(t, 1.0 / SOKAL_C)
    return float(acov[0]) * t, t


def integrated_autocorr_time(r: np.ndarray, lengths: Sequence[int] | None = None) -> float:
    """tau_int of a residual (de-meaned per segment; `long_run_var`): `n / tau_int` is the
    effective number of independent samples."""
    r = np.asarray(r, dtype=float)
    lengths = [len(r)] if lengths is None else list(lengths)
    idx = np.repeat(np.arange(len(lengths)), lengths)
    means = np.bincount(idx, weights=r) / np.maximum(np.bincount(idx), 1)
    return long_run_var(r - means[idx], lengths)[1]


def ols_influence(j: np.ndarray, r: np.ndarray, rows: int = 1) -> np.ndarray:
    """Influence series of a least-squares fit: θ̂ - θ ≈ Σ_t z_t with z_t = (JᵀJ)⁻¹ Σ_rows J_t r_t,
    the `rows` consecutive rows of one time sample summed (they share a sample's noise);
    J the Jacobian of the prediction (the regressor for a linear fit), r the residual."""
    j = np.asarray(j, dtype=float)
    j = j[:, None] if j.ndim == 1 else j
    binv = np.linalg.pinv(j.T @ j)
    g = (j * np.asarray(r, dtype=float)[:, None]).reshape(-1, rows, j.shape[1]).sum(axis=1)
    return g @ binv


def hac_cov(z: np.ndarray, lengths: Sequence[int], correlated: bool = True) -> np.ndarray:
    """Covariance of Σ_t z_t: each parameter's variance from `long_run_var`, correlations from
    the lag-0 (White) covariance ZᵀZ: D ZᵀZ D with D = diag(sqrt(tau_int)) (positive
    semi-definite by construction); D = 1 when not `correlated` (White's covariance)."""
    z = np.asarray(z, dtype=float)
    z = z[:, None] if z.ndim == 1 else z
    taus = [w[1] for w in _sokal_windows(z, [int(n) for n in lengths])] if correlated else np.ones(z.shape[1])
    d = np.sqrt(taus)
    return d[:, None] * (z.T @ z) * d[None, :]


def influence_sd(z: np.ndarray, lengths: Sequence[int], correlated: bool = True) -> float:
    """σ of Σ_t z_t: `long_run_var` over the flights, or White's (lag 0 only) when not
    `correlated` (the setting `autocorr_correction`)."""
    return math.sqrt(long_run_var(z, lengths)[0] if correlated else float(z @ z))
