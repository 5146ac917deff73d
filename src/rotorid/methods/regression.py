"""Least-squares cores shared by every method: ordinary and weighted LS with parameter
covariance, Total Least Squares by thin SVD (Six et al. eq. 13-22), and bias-compensated
least squares for regressors with known measurement noise (errors in variables)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

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


def r2(y: np.ndarray, yhat: np.ndarray) -> float:
    """Coefficient of determination 1 - SSE/SST of a prediction `yhat` of `y` (NaN if y is constant)."""
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    return r2_from_sse(float(np.sum((y - yhat) ** 2)), y)


def r2_from_sse(sse: float, y: np.ndarray) -> float:
    """1 - SSE/SST for a fit of `y` whose residual sum of squares is `sse` (NaN if y is constant)."""
    y = np.asarray(y, dtype=float)
    sst = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - sse / sst if sst > 0 else float("nan")


def frisch_bounds(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Bounds on the slope b of y = b x through the origin when both x and y carry errors of
    unknown variance (uncorrelated with each other and with the true values): the direct
    slope Σxy/Σx² (all error in y; attenuated by any error in x) and the reverse slope
    Σy²/Σxy (all error in x), between which every consistent estimate lies, with r² =
    direct/reverse the squared correlation (Frisch 1934, "Statistical Confluence Analysis";
    Klepper & Leamer 1984, Econometrica 52, Sec. 2). Returns (low, high, r²); the bounds are
    NaN when Σxy = 0 and the direct slope exceeds the reverse one when Σxy < 0 (no bracket)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    sxx, syy, sxy = float(x @ x), float(y @ y), float(x @ y)
    if sxx <= 0 or syy <= 0 or sxy == 0:
        return float("nan"), float("nan"), 0.0
    return sxy / sxx, syy / sxy, sxy * sxy / (sxx * syy)


def bracket_std(value: float, low: float, high: float) -> float:
    """Standard uncertainty of `value` as an estimate of a quantity known only to lie in
    [low, high]: the rectangular distribution over the bracket (GUM, JCGM 100:2008, 4.3.7:
    variance (high - low)²/12 about its centre) plus the estimate's offset from that centre,
    sqrt((value - centre)² + (high - low)²/12); an end point gets (high - low)/√3."""
    lo, hi = min(low, high), max(low, high)
    return math.sqrt((value - 0.5 * (lo + hi)) ** 2 + (hi - lo) ** 2 / 12.0)


def _cond(a: np.ndarray) -> float:
    """Condition number of `a` after scaling its columns to unit norm (scale-free)."""
    n = np.linalg.norm(a, axis=0)
    s = np.linalg.svd(a / np.where(n > 0, n, 1.0), compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def _check_excited(n: int, excited: np.ndarray, what: str) -> None:
    """`ExcitationError` unless n rows can determine the parameters and every regressor column
    (`excited`: which are non-zero somewhere) is excited."""
    if n <= len(excited):
        raise ExcitationError(f"{what}: {n} samples cannot determine {len(excited)} parameters")
    zero = np.flatnonzero(~excited)
    if zero.size:
        raise ExcitationError(
            f"{what}: regressor column(s) {zero.tolist()} are all zero: those parameters are not excited"
        )


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
    sw = np.ones(n) if weights is None else np.sqrt(np.asarray(weights, dtype=float))
    aw, bw = a * sw[:, None], b * sw
    _check_excited(n, np.any(aw != 0, axis=0), what)
    x, *_ = np.linalg.lstsq(aw, bw, rcond=None)
    r = b - a @ x
    rw = r * sw
    sigma2 = float(rw @ rw / (n - p))
    cov = sigma2 * np.linalg.pinv(aw.T @ aw)
    return Fit(x, cov, r, sigma2, _cond(aw))


@dataclass(frozen=True)
class Reduced:
    """Rows [A | b] reduced block by block (`reduce_rows`): the R of their QR, which columns of
    A are non-zero anywhere, A's column norms and the number of rows."""

    r: np.ndarray
    excited: np.ndarray
    norms: np.ndarray
    n: int

    @property
    def sse(self) -> float:
        """Residual sum of squares of the least-squares fit of b on A (R's last diagonal element squared)."""
        return float(self.r[-1, -1] ** 2) if len(self.r) > self.r.shape[1] - 1 else 0.0


def reduce_rows(blocks: Iterable[np.ndarray], b: np.ndarray) -> Reduced:
    """Reduce the rows A = vstack(`blocks`) with right-hand side `b` (its rows in the same
    order) without forming A: QR of [R | A_k b_k] block after block, so an hour of data costs
    one block of memory and no freshly mapped (page-faulted) temporaries of its length."""
    r = excited = colsq = None
    n = 0
    for a in blocks:
        a = a[:, None] if a.ndim == 1 else a
        if r is None:
            r, excited, colsq = np.zeros((0, a.shape[1] + 1)), np.zeros(a.shape[1], bool), np.zeros(a.shape[1])
        excited |= np.any(a != 0, axis=0)
        colsq += np.einsum("ij,ij->j", a, a)
        stack = np.empty((len(r) + len(a), a.shape[1] + 1))  # [R; A_k b_k], written once
        stack[: len(r)] = r
        stack[len(r) :, :-1] = a
        stack[len(r) :, -1] = b[n : n + len(a)]
        r = np.linalg.qr(stack, mode="r")
        n += len(a)
    if r is None or n != len(b):
        raise ValueError(f"reduce_rows: the blocks hold {n} rows, b {len(b)}")
    return Reduced(r, excited, np.sqrt(colsq), n)


def ols_blocks(blocks: Callable[[], Iterable[np.ndarray]], b: np.ndarray, what: str = "regression") -> Fit:
    """`ols(vstack(blocks()), b)` without forming the regressor (the same fit to rounding):
    `reduce_rows`, then the residual b - A x in a second pass over `blocks()`. The condition
    number is that of A with unit columns, R D⁻¹'s (A D⁻¹ = Q R D⁻¹)."""
    red = reduce_rows(blocks(), b)
    p = len(red.excited)
    _check_excited(red.n, red.excited, what)
    rr = red.r[:p, :p]
    x, *_ = np.linalg.lstsq(rr, red.r[:p, p], rcond=None)
    residual = np.empty(red.n)
    n = 0
    for a in blocks():
        residual[n : n + len(a)] = b[n : n + len(a)] - (a[:, None] if a.ndim == 1 else a) @ x
        n += len(a)
    sigma2 = float(residual @ residual / (red.n - p))
    s = np.linalg.svd(rr / red.norms, compute_uv=False)
    return Fit(x, sigma2 * np.linalg.pinv(rr.T @ rr), residual, sigma2, float(s[0] / s[-1]) if s[-1] > 0 else math.inf)


def tls(w: np.ndarray, what: str = "TLS", rows: int | None = None) -> Fit:
    """Total Least Squares of W_t chi_t = rho with the last element of chi_t fixed to 1
    (Six et al. eq. 13-17); standard deviations by eq. 18-21.

    `w` is the (r, n_t) matrix whose last column holds the known term (e.g. m W_m). Returns
    the first n_t - 1 parameters; `residual` is W_t [x; 1], `sigma2` is sigma_W^2 (eq. 19).
    `rows` is the true r when `w` is a compressed stand-in with the same W^T W (`compress`).
    """
    w = np.asarray(w, dtype=float)
    nt = w.shape[1]
    r = int(rows) if rows is not None else w.shape[0]
    if r <= nt:
        raise ExcitationError(f"{what}: {r} rows cannot determine {nt - 1} parameters")
    # thin SVD through the R of a QR (W = Q R, same singular values and V; eq. 15), so the
    # (r x n_t) U is never formed: W_bar = Q R_bar with R_bar = R - s u_R v^T (eq. 16)
    rr = np.linalg.qr(w, mode="r")
    u, s, vt = np.linalg.svd(rr)
    v = vt[-1]
    if abs(v[-1]) < 1e-12 * np.max(np.abs(v)):
        raise ExcitationError(
            f"{what}: the known column is orthogonal to the data's null space; the system is degenerate"
        )
    chi = v / v[-1]
    x = chi[:-1]
    r_bar = rr - s[-1] * np.outer(u[:, -1], v)  # eq. 16
    sigma_w2 = s[-1] ** 2 / (r - nt)  # eq. 19
    wb = r_bar[:, :-1]
    cov = sigma_w2 * (1.0 + x @ x) * np.linalg.pinv(wb.T @ wb)  # eq. 20
    return Fit(x, cov, w @ chi, float(sigma_w2), _cond(rr[:, :-1]))


def bias_compensated(w: np.ndarray, noise: np.ndarray, what: str = "BCLS", rows: int | None = None) -> Fit:
    """Bias-compensated least squares of W_t [x; 1] = rho when the entries of W_t carry
    measurement noise of known second moment `noise` = E[dW^T dW] (n_t, n_t, summed over the
    rows; the last column is the known term, whose noise may correlate with the others).

    Least squares on the measured W is attenuated, E[W^T W] = W0^T W0 + noise; subtracting the
    noise moment from the normal matrix, M = W^T W - noise, and solving its normal equations
    M_xx x = -m_xy gives a consistent estimate (Fuller 1987, Measurement Error Models, Sec. 2.2:
    the estimator with known error covariance, (M_XX - S_uu)^-1 (M_XY - S_ue); Söderström 2018,
    Errors-in-Variables Methods in System Identification, Ch. 7, bias-compensated least squares).
    `cov` is the small-noise sandwich M_xx^-1 (s^2 W_x^T W_x) M_xx^-1 with s^2 = ||rho||^2 / (r - p)
    (independent rows; `bc_hac_cov` for correlated ones); `w` may be compressed (`compress`,
    with `rows` the true r), as only W^T W and ||rho|| enter."""
    w = np.asarray(w, dtype=float)
    nt = w.shape[1]
    r = int(rows) if rows is not None else w.shape[0]
    if r <= nt:
        raise ExcitationError(f"{what}: {r} rows cannot determine {nt - 1} parameters")
    m = w.T @ w - np.asarray(noise, dtype=float)
    mxx = m[:-1, :-1]
    try:
        x = np.linalg.solve(mxx, -m[:-1, -1])
    except np.linalg.LinAlgError as e:
        raise ExcitationError(f"{what}: the noise-compensated normal matrix is singular") from e
    if not np.all(np.linalg.eigvalsh(0.5 * (mxx + mxx.T)) > 0):
        raise ExcitationError(f"{what}: the noise moment exceeds the signal (compensated normal matrix not positive)")
    chi = np.append(x, 1.0)
    res = w @ chi
    s2 = float(res @ res) / (r - nt + 1)
    binv = np.linalg.inv(mxx)
    cov = s2 * binv @ (w[:, :-1].T @ w[:, :-1]) @ binv
    return Fit(x, 0.5 * (cov + cov.T), res, s2, _cond(w[:, :-1]))


def block_parts(w: np.ndarray, blocks: np.ndarray, nb: int) -> Iterator[np.ndarray]:
    """The rows of each row block 0..nb-1 of `w` (`blocks`, each row's block index) in turn: a
    slice where the blocks are sorted (`assemble`'s layout; no gathered copy of W_t), else the
    rows gathered."""
    if np.all(blocks[1:] >= blocks[:-1]):
        edges = np.searchsorted(blocks, np.arange(nb + 1))
        return (w[a:b] for a, b in pairwise(edges))
    return (w[blocks == b] for b in range(nb))


def compress(
    w: np.ndarray, blocks: np.ndarray, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replace each row block W_j (n_j x n_t) by the R of its QR (n_t x n_t at most).

    Since W_j = Q_j R_j, every quantity TLS and the block weighting use (singular values, V,
    W_j^T W_j, ||W_j chi|| and column subsets) is the same for the stacked R_j, at a fraction
    of the cost. Returns the stacked R_j, their block indices and the true row count n_j of
    each block (pass `counts` and `rows=counts.sum()` on). With `rows` (a mask of W_t's rows),
    `compress(w[rows], blocks[rows])`, the same numbers, a block's rows gathered at a time
    rather than all of them (a held-out fold's or a left-out piece's complement is most of W_t)."""
    w = np.asarray(w, dtype=float)
    blocks = np.asarray(blocks, dtype=int)
    if rows is not None:
        nb = int(blocks[rows].max()) + 1
        rs = [np.linalg.qr(w[rows & (blocks == b)], mode="r") for b in range(nb)]
        idx = np.concatenate([np.full(len(r), b) for b, r in enumerate(rs)])
        return np.vstack(rs), idx, np.bincount(blocks[rows], minlength=nb)
    nb = int(blocks.max()) + 1
    rs = [np.linalg.qr(part, mode="r") for part in block_parts(w, blocks, nb)]
    idx = np.concatenate([np.full(len(r), b) for b, r in enumerate(rs)])
    return np.vstack(rs), idx, np.bincount(blocks, minlength=nb)


#: Lowest residual RMS of a row block in `block_weighted_tls`, as a fraction of its RMS at the
#: unweighted solution.
WEIGHT_FLOOR = 0.1


def block_rms(w: np.ndarray, blocks: np.ndarray, x: np.ndarray, count: np.ndarray) -> np.ndarray:
    """RMS per row block of the residual W_t [x; 1] (`count` rows per block, at least 1)."""
    res = w @ np.append(x, 1.0)
    return np.sqrt(np.bincount(blocks, weights=res**2, minlength=len(count)) / np.maximum(count, 1))


def weighting_collapsed(w: np.ndarray, blocks: np.ndarray, counts: np.ndarray, base: np.ndarray, fit: Fit) -> bool:
    """Whether the weighted fit `fit` of `block_weighted_tls(w, blocks, base, counts=counts)` sits
    at the floor in some row block: its residual RMS at most `WEIGHT_FLOOR` times that of the
    unweighted solution, the fixed point's guard (a block without a known term that its own
    parameters nearly zero)."""
    plain = tls(w * base[blocks][:, None], rows=int(np.sum(counts)))
    return bool(
        np.any(
            block_rms(w, blocks, fit.x, counts) <= WEIGHT_FLOOR * (1.0 + 1e-3) * block_rms(w, blocks, plain.x, counts)
        )
    )


def block_weighted_tls(
    w: np.ndarray,
    blocks: np.ndarray,
    base: np.ndarray | None = None,
    max_iter: int = 20,
    tol: float = 1e-4,
    floor: float = WEIGHT_FLOOR,
    what: str = "TLS",
    counts: np.ndarray | None = None,
) -> tuple[Fit, np.ndarray]:
    """TLS (`tls`) with every row block j scaled by base_j / sigma_j, sigma_j the RMS of the
    block's unweighted residual at the current solution, iterated to a fixed point (Six et al.
    Sec. III-B, after Briot & Gautier). `blocks` (r,) gives each row's block index 0..B-1;
    `base` (B,) are extra fixed factors (e.g. a configuration's k_w, eq. 25); `counts` the
    true rows per block when `w` was compressed (`compress`).

    A block without a known term (e.g. a yaw-moment row) can be zeroed by its parameters
    alone, and an unguarded fixed point then collapses onto that degenerate solution; so
    sigma_j is floored at `floor` times its value at the unweighted solution. Returns the
    fit of the weighted system and the final per-block factors (blocks with zero residual
    keep their base factor). Should a reweighting make the system degenerate, the last
    non-degenerate weighting is kept.
    """
    w = np.asarray(w, dtype=float)
    blocks = np.asarray(blocks, dtype=int)
    nb = int(blocks.max()) + 1 if counts is None else len(counts)
    base = np.ones(nb) if base is None else np.asarray(base, dtype=float)
    count = np.bincount(blocks, minlength=nb) if counts is None else np.asarray(counts)
    rows = int(count.sum())
    count = np.maximum(count, 1)

    def rms(fit: Fit) -> np.ndarray:
        return block_rms(w, blocks, fit.x, count)

    scale = base.copy()
    fit = tls(w * scale[blocks][:, None], what=what, rows=rows)
    lo = floor * rms(fit)
    for _ in range(max_iter):
        sig = np.maximum(rms(fit), lo)
        new = np.where(sig > 0, base / np.where(sig > 0, sig, 1.0), base)
        done = np.max(np.abs(new - scale) / np.abs(scale)) < tol
        try:
            fit = tls(w * new[blocks][:, None], what=what, rows=rows)
        except ExcitationError:
            break  # this weighting makes the system degenerate: keep the last proper one
        scale = new
        if done:
            break
    return fit, scale


def one_blas_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run `fn` with BLAS limited to one thread. The regressions are tall and skinny (many
    rows, a dozen columns at most), where a second BLAS thread only spin-waits: IDIM-TLS on
    2 cores took twice the CPU time and no less wall time with two."""

    @functools.wraps(fn)
    def limited(*args: Any, **kwargs: Any) -> Any:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return limited
