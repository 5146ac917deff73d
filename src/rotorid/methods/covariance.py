"""Covariances of estimates from serially correlated data, shared by every method: the sandwich
B⁻¹ M B⁻¹ of least squares, TLS and bias-compensated fits with M the long-run variance of their
scores (the equal-weighted cosine estimate, `ewc_meat`, or the Newey-West meat, `hac_meat`),
widened by the fit's leverage; and the long-run variance of a series by Sokal's window with its
integrated autocorrelation time (`long_run_var`, `integrated_autocorr_time`), which the delay
method applies to its fits' influence series (`ols_influence`, `influence_cov`).

`COV_TYPES` is the one vocabulary of the methods' covariance choices."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

#: The covariance a method reports: "hac" robust to rows (samples) correlated in time (the
#: sandwich with a long-run variance), "iid" for independent rows (tls: the paper's eq. 18-20;
#: delay: White's lag-0 covariance, `DelaySettings.autocorr_correction` off).
COV_TYPES = ("hac", "iid")


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
    lags are in): the window uses only the lags below it, so the result is that of all lags.
    Segments of at most `ACOV_BLOCK` samples take all lags at once: `autocov` transforms each
    whole at the same length for any number of lags up to `ACOV_BLOCK`, so the first lags are
    the same numbers and a second pass would only transform it again."""
    kmax = max(max(lengths) // 2, 1)
    nlags = kmax if max(lengths) <= ACOV_BLOCK else min(FIRST_LAGS, kmax)
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
            # the last block (a short flight's only one) has no samples past it: the same
            # transform twice, so it is taken once (the same numbers, a third less time)
            spec *= (spec if n - s <= size else np.fft.rfft(seg[s : s + size], m, axis=0)).conj()
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


def influence_cov(z: np.ndarray, lengths: Sequence[int], correlated: bool = True) -> np.ndarray:
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


#: Largest leverage share k that `sandwich` corrects for (σ at most √2 wider): k near 1 means one
#: window holds all of a parameter's information, where no long-run variance from the flight's own
#: scores can be trusted.
LEVERAGE_MAX = 0.5


def hac_meat(scores: np.ndarray, segment: np.ndarray, lags: int) -> np.ndarray:
    """Heteroscedasticity- and autocorrelation-consistent "meat" sum_l k_l (Gamma_l + Gamma_l^T)
    of time-ordered scores g_t (T, p), Bartlett weights k_l = 1 - l/(lags+1), Gamma_0 counted
    once (Newey & West 1987, Econometrica 55). Products never pair two different segments
    (`segment` (T,): separate flights or pieces are independent). Positive semi-definite."""
    g = np.asarray(scores, dtype=float)
    seg = np.asarray(segment)
    meat = g.T @ g
    for lag in range(1, lags + 1):
        same = seg[lag:] == seg[:-lag]
        if same.all():  # one segment at this lag: views, not two masked copies (7x faster on one piece)
            gam = g[lag:].T @ g[:-lag]
        elif not same.any():
            break
        else:
            gam = g[lag:][same].T @ g[:-lag][same]
        meat += (1.0 - lag / (lags + 1.0)) * (gam + gam.T)
    return meat


def tls_hac_cov(
    w: np.ndarray,
    x: np.ndarray,
    instant: np.ndarray,
    segment: np.ndarray,
    lags: int | None = None,
    extra: np.ndarray | None = None,
) -> np.ndarray:
    """Covariance of the TLS solution x of W_t [x; 1] = rho (`tls`) when the rows' errors are
    correlated in time: the sandwich B^-1 M B^-1 with B = W_bar^T W_bar (first n_t - 1 columns
    of the closest compatible W_bar = W_t - rho chi_t^T / ||chi_t||^2, eq. 16) and M the
    Newey-West meat (`hac_meat`) of the per-instant scores g_t = sum over the rows of instant t
    of w_bar_i rho_i, times r / (r - n_t) (the degrees of freedom of eq. 19).

    For independent, identically distributed row errors M -> ||rho||^2 / r B and
    ||rho||^2 = s_nt^2 (1 + ||x||^2), so this is eq. 20 (Six et al.) exactly in that limit; with
    correlated rows it stays consistent where eq. 18's independence fails. `instant` (r,) maps
    each row to its time step 0..T-1 (rows of one instant, e.g. the six wrench components,
    share it; consecutive steps adjacent in time), `segment` (T,) the continuous piece each
    step belongs to; `lags` None (default) takes the long-run variance of the scores by
    `ewc_meat`, an int the Newey-West meat with that bandwidth; `extra` as in `bc_hac_cov`. Each
    variance is widened by the fit's share of its scores (the leverage, `sandwich`)."""
    w = np.asarray(w, dtype=float)
    chi = np.append(np.asarray(x, dtype=float), 1.0)
    r, nt = w.shape
    proj = (np.eye(nt) - np.outer(chi, chi) / (chi @ chi))[:, :-1]  # w proj: the rows less their residual
    binv = np.linalg.pinv(proj.T @ (w.T @ w) @ proj)

    def rows(s: slice) -> np.ndarray:
        return (w[s] @ proj) * (w[s] @ chi)[:, None]

    def shares(s: slice) -> np.ndarray:
        wb = w[s] @ proj
        return (wb @ binv) * wb

    scores = _step_sums(rows, r, instant, len(segment), extra)
    return sandwich(binv, scores, segment, lags, r / (r - nt), _step_sums(shares, r, instant, len(segment)))


#: Rows per chunk of `_step_sums` (its temporaries are a few chunks wide, not a few regressors).
CHUNK = 16384


def _step_sums(
    rows: Callable[[slice], np.ndarray], r: int, instant: np.ndarray, nsteps: int, extra: np.ndarray | None = None
) -> np.ndarray:
    """Per-step sums (nsteps, p) of the per-row quantities `rows(s)` (len(s), p) of the r rows,
    over the rows of each time step (`instant`), built `CHUNK` rows at a time so no (r, p)
    temporary is held; plus a first-step estimate's influence `extra` when given."""
    instant = np.asarray(instant)
    out = np.zeros((nsteps, rows(slice(0, 0)).shape[1]))
    for a in range(0, r, CHUNK):
        s = slice(a, min(a + CHUNK, r))
        np.add.at(out, instant[s], rows(s))
    return out if extra is None else out + extra


def sandwich(
    binv: np.ndarray, scores: np.ndarray, segment: np.ndarray, lags: int | None, dof: float, leverage: np.ndarray
) -> np.ndarray:
    """binv M binvᵀ times `dof`, M the long-run variance of the per-step `scores` (T, p): by
    default (None) the equal-weighted cosine estimate (`ewc_meat`), else the Newey-West meat with
    `lags` (`hac_meat`); binvᵀ, not binv, for a bread that is not symmetric (a pseudo-linear
    regression's total derivative, `online.solve.final_theta1_eiv`).

    `leverage` (T, p): each step's share G_t of the estimate's normal matrix, the diagonal of
    binv A_t (`leverage_diag`). Scores taken at the estimate are ẑ_t = z_t - G_t S with S = Σ z
    the error itself, so their long-run variance misses part of the error's: under the working
    model of least squares with homoscedastic errors (cov(z_t, S) = G_t Var S), E[Q(ẑ)] =
    (1 - k) Var S to first order, with k = Q(G) the same estimate of the leverage series (for a
    lag window Σ_ts w_|t-s| G_t G_s, for EWC T/ν Σ_j Λ_j(G)²). Each parameter's variance is
    divided by 1 - k, the correlations kept: the long-run form of HC2 (MacKinnon & White 1985,
    J. Econometrics 29; Bell & McCaffrey 2002's CR2 for clusters). Equal leverage costs EWC
    nothing (its cosines are orthogonal to a constant; a Bartlett window loses b = (L+1)/T, the
    first-order term of Kiefer & Vogelsang 2005's 1 - b + b²/3); a parameter informed in bursts
    loses more (online's I_zz, its column active on few rows; tls's first moments).

    EWC also serves scores of different correlation at once, where a lag window does not: an
    over-differenced series, whose Bartlett bias -Σ|l|γ_l / (L + 1) is the size of its long-run
    variance, against the slowly decaying rate error of a Kalman filter with gain 0.1 per step,
    which a window of a few tens of lags cuts short."""
    lrv = (lambda g: ewc_meat(g, segment)) if lags is None else (lambda g: hac_meat(g, segment, lags))
    d = 1.0 / np.sqrt(1.0 - np.minimum(np.diag(lrv(leverage)), LEVERAGE_MAX))
    cov = binv @ lrv(scores) @ binv.T * dof * d[:, None] * d[None, :]
    return 0.5 * (cov + cov.T)


def ewc_cosines(n: int) -> int:
    """Number of cosines of the equal-weighted cosine estimate (`ewc_meat`) for a segment of
    `n` steps: round(0.4 n^(2/3)) (Lazarus, Lewis, Stock & Watson 2018, J. Bus. Econ. Stat. 36,
    541-559, "HAR inference: recommendations and drawbacks", their rule for EWC), at least 1 and
    below n."""
    return int(min(max(round(0.4 * n ** (2.0 / 3.0)), 1), max(n - 1, 1)))


def ewc_meat(scores: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Long-run variance of the sum of time-ordered scores g_t (T, p) (the meat of a sandwich),
    by the equal-weighted cosine (EWC) estimator: per continuous segment of T_s steps,
    T_s / ν Σ_{j=1..ν} Λ_j Λ_jᵀ with Λ_j = sqrt(2 / T_s) Σ_t g_t cos(π j (t + 1/2) / T_s) (the
    orthonormal DCT-II of the segment, ν = `ewc_cosines(T_s)`), summed over the segments, which
    are independent (Müller 2007, J. Econometrics 141, 1331-1352; Sun 2013, Econometrics J. 16,
    1-26; Lazarus et al. 2018). Positive semi-definite, one estimate for every parameter and
    every combination of them; a segment of one step gives its outer product.

    Each Λ_j² estimates the scores' spectral density at j / (2 T_s) cycles per step through a
    window whose side lobes are at the level 1 / T_s of the whole segment; a lag window of width L
    (Bartlett, Newey-West) has them at 1 / L, and in the time domain the Bartlett meat is the
    truncated sum of autocovariances minus Σ_l |l| γ_l / (L + 1) (Parzen 1957, Ann. Math.
    Stat. 28; Andrews 1991, Econometrica 59, the bias of a kernel of characteristic exponent 1).
    Where the scores are dominated by a differentiated sensor's noise (power rising with
    frequency, lag-1 autocorrelation about -0.55, long-run variance 1/20-1/160 of the variance:
    k_t, the first moments and I_xx, I_yy from motion capture) that term is as large as the
    long-run variance itself even at Newey and West's (1994) widest bandwidth, 0.1 T."""
    from scipy.fft import dct

    g = np.asarray(scores, dtype=float)
    seg = np.asarray(segment)
    cuts = np.flatnonzero(seg[1:] != seg[:-1]) + 1
    meat = np.zeros((g.shape[1], g.shape[1]))
    for x in np.split(g, cuts):
        n = len(x)
        if n < 2:
            meat += x.T @ x
            continue
        nu = ewc_cosines(n)
        lam = dct(x, type=2, norm="ortho", axis=0)[1 : nu + 1]
        meat += n / nu * (lam.T @ lam)
    return meat


def leverage_diag(bread: np.ndarray, h: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Each step's leverage (T, p) on each parameter of a weighted least-squares estimate: the
    diagonal of bread A_t, A_t = Σ_k h_tkᵀ h_tk / r_tk the step's share of the normal matrix
    (`sandwich`'s `leverage`). `h` (T, K, p), `r` (T, K)."""
    h = np.asarray(h, dtype=float)
    return np.einsum("tkq,pq,tkp,tk->tp", h, np.asarray(bread, dtype=float), h, 1.0 / np.asarray(r, dtype=float))


def rls_hac_cov(bread: np.ndarray, h: np.ndarray, e: np.ndarray, r: np.ndarray, lags: int | None = None) -> np.ndarray:
    """Covariance of a (recursive) weighted least-squares estimate robust to heteroscedastic,
    autocorrelated row errors: bread M bread, `bread` = (P0^-1 + sum h h^T / r)^-1 (the RLS's
    own covariance without a-posteriori scaling), M the long-run variance of the per-step
    scores g_t = sum_k h_tk e_tk / r_tk (`sandwich`: `ewc_meat`, or the Newey-West meat with
    `lags`), widened by the fit's share of its scores; `h` (T, K, p) the regressor rows of each
    step, `e` (T, K) their residuals at the final estimate, `r` (T, K) the row variances the
    estimator weighted them with. With independent rows and correct r this is the RLS
    covariance itself."""
    g = np.einsum("tkp,tk->tp", np.asarray(h, dtype=float), np.asarray(e, dtype=float) / np.asarray(r, dtype=float))
    return sandwich(bread, g, np.zeros(len(g), dtype=int), lags, 1.0, leverage_diag(bread, h, r))


def bc_hac_cov(
    w: np.ndarray,
    x: np.ndarray,
    noise: np.ndarray,
    blocks: np.ndarray,
    instant: np.ndarray,
    segment: np.ndarray,
    lags: int | None = None,
    extra: np.ndarray | None = None,
) -> np.ndarray:
    """Covariance of the bias-compensated estimate x (`bias_compensated`) when the rows'
    errors are correlated in time: the sandwich B^-1 M B^-1 of its estimating equation
    sum_i (w_x,i rho_i - (S_i chi)_x) = 0, with B = W_x^T W_x - sum_i S_i,x x (the compensated
    normal matrix), M the long-run variance (`ewc_meat`, or `hac_meat` with `lags`, as in `tls_hac_cov`) of the
    per-instant scores g_t = sum over the rows of instant t of w_x,i rho_i - (S_i chi)_x, times
    r / (r - p) (Fuller 1987, Thm. 2.2.1's covariance with a HAC middle; Newey & West 1987).

    `noise` (B, n_t, n_t) is the noise moment of one row of each row block (E[dw_i dw_i^T], the
    same for every row of a block), `blocks` (r,) each row's block; `instant`, `segment` as in
    `tls_hac_cov`. The noise term centres each score: E[w rho] = S chi at the true chi. Each
    variance is widened by the fit's share of its scores (the leverage, `sandwich`).
    `extra` (T, n_t - 1), when given, is added to the per-step scores: a first-step estimate's
    influence on the estimating equation (Murphy & Topel 1985; Newey 1994)."""
    w = np.asarray(w, dtype=float)
    noise = np.asarray(noise, dtype=float)
    blocks = np.asarray(blocks, dtype=int)
    chi = np.append(np.asarray(x, dtype=float), 1.0)
    r, nt = w.shape
    q = (noise @ chi)[:, :-1]  # (B, n_t - 1): each block's row-noise moment times chi
    count = np.bincount(blocks, minlength=len(noise))
    bread = w[:, :-1].T @ w[:, :-1] - np.einsum("b,bij->ij", count, noise)[:-1, :-1]
    binv = np.linalg.pinv(bread)
    own = np.einsum("pq,bqp->bp", binv, noise[:, :-1, :-1])  # (B, n_t - 1): a row's noise share

    def rows(s: slice) -> np.ndarray:
        wx = w[s, :-1]
        return wx * (w[s] @ chi)[:, None] - q[blocks[s]]

    def shares(s: slice) -> np.ndarray:
        wx = w[s, :-1]
        return (wx @ binv) * wx - own[blocks[s]]

    scores = _step_sums(rows, r, instant, len(segment), extra)
    return sandwich(binv, scores, segment, lags, r / (r - nt), _step_sums(shares, r, instant, len(segment)))
