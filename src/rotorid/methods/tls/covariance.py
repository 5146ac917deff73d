"""The covariance of the final fit: the HAC sandwich with the accelerometer bias's path, and what
the cancellations, the noise floors' doubt and the rotors' gain spread add (eq. 18-22 widened)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.covariance import bc_hac_cov, tls_hac_cov
from rotorid.methods.regression import bias_compensated, tls
from rotorid.methods.tls.noise import NoiseMoment
from rotorid.methods.tls.rows import Rows, force_means, skew
from rotorid.methods.tls.selection import fixed_fit
from rotorid.methods.tls.settings import TlsSettings


def _bias_profiled(
    wk: np.ndarray,
    keep: np.ndarray,
    rows: dict[str, Rows],
    cols: list[int],
    x: np.ndarray,
    scale: np.ndarray,
    means: dict[str, np.ndarray],
    masses: dict[str, float],
) -> None:
    """Adds to the moment rows of `wk` (in place: W_t's rows `keep`, columns `cols` and the known
    one, block-scaled; x the estimate of `cols`) the accelerometer bias's path into them, so that
    a covariance of `wk` is the one of the parameters with the bias estimated too.

    The moment rows hold -[s - b]x ms = -[s]x ms - [ms]x b, b = b0 + M_k chi / m the force rows'
    mean residual over piece k (`acc_bias_estimate`, `means` = M_k per configuration, `force_means`): b
    is a function of the parameters, so the rows' Jacobian is W + ∂r/∂b ∂b/∂chi, the moment rows
    gaining -[ms]x M_k / m (the joint least squares of chi and b, whose chi block is the fit on W
    with b's columns projected out; Frisch-Waugh-Lovell). Held at b0, the covariance tied the
    first moments to k_t through the hover balance k_t Δu r = ms g (their σ far above their
    scatter), although an error of
    k_t moves b_z, hence s - b, alike and leaves ms as it is. The M_z row, when centred for a
    yaw moment, loses the per-piece constant again, so it gains nothing."""
    first = np.cumsum(keep) - 1  # each kept row's place in wk; a block's rows are kept together
    idx, start = [*cols, next(iter(means.values())).shape[-1] - 1], 0
    for ci, (c, r) in enumerate(rows.items()):
        n = len(r.t)
        if c in means:
            corr = -np.einsum("ab,pbk->pak", skew(_ms_of(x, cols, ci)[None])[0], means[c][..., idx]) / masses[c]
            cuts = np.flatnonzero(np.diff(r.piece)) + 1  # the pieces' rows are consecutive
            for j in _bias_moment_rows(r):
                if keep[start + j * n]:
                    at = first[start + j * n]
                    for a, b in zip(np.r_[0, cuts], np.r_[cuts, n], strict=True):  # in place, a piece at a time
                        wk[at + a : at + b] += corr[r.piece[a], j - 3] * scale[6 * ci + j]
        start += 6 * n


def _bias_moment_rows(r: Rows) -> tuple[int, ...]:
    """The moment rows (3, 4, 5: M_x, M_y, M_z) the accelerometer bias reaches through -[ms]x b:
    an M_z row centred for a yaw moment loses b's per-piece constant."""
    return (3, 4) if r.yaw_mean is not None else (3, 4, 5)


def _ms_of(x: np.ndarray, cols: list[int], ci: int) -> np.ndarray:
    """The first moments ms of configuration `ci` in the estimate x of the columns `cols` (0 where
    not estimated)."""
    return np.array([x[cols.index(j)] if j in cols else 0.0 for j in range(2 + 9 * ci, 5 + 9 * ci)])


def _bias_scores(
    w: np.ndarray,
    keep: np.ndarray,
    wk: np.ndarray,
    rows: dict[str, Rows],
    cols: list[int],
    x: np.ndarray,
    scale: np.ndarray,
    masses: dict[str, float],
) -> np.ndarray:
    """Per-step scores (T, len(cols)) the accelerometer bias's estimate adds to those of the
    moment rows of `wk` (W_t's rows `keep`, columns `cols` and the known one, block-scaled and
    `_bias_profiled`; x the estimate of `cols`): b = b0 + the force rows' mean residual over the
    piece / m (`acc_bias_estimate`), so step t moves it by ψ_t = r_t / (m T_k), r_t the centred force
    rows' residual, and the moment rows' estimating equation by G_k ψ_t, G_k = Σ_k J̃ᵀ ∂ρ/∂b,
    ∂ρ/∂b = -[ms]x (a first-step estimate's influence; Murphy & Topel 1985, Newey 1994).

    Without it the accelerometer's noise in -[s - b]x ms, centred by b over each piece, counted
    in the long-run variance at every frequency but zero, where it sums to nothing, and σ of
    the first moments came out above their scatter."""
    extra = np.zeros((sum(len(r.t) for r in rows.values()), len(cols)))
    first, start, step = np.cumsum(keep) - 1, 0, 0
    chi = np.zeros(w.shape[1])
    chi[[*cols, w.shape[1] - 1]] = np.append(x, 1.0)
    for ci, (c, r) in enumerate(rows.items()):
        n = len(r.t)
        if r.force_mean is not None:
            d_rho = -skew(_ms_of(x, cols, ci)[None])[0]  # ∂(moment rows' residual)/∂b
            cuts = np.r_[0, np.flatnonzero(np.diff(r.piece)) + 1]  # the pieces' rows are consecutive
            g = np.zeros((len(cuts), len(cols), 3))
            for j in _bias_moment_rows(r):
                if keep[start + j * n]:
                    at = first[start + j * n]  # the block's rows, consecutive in wk
                    sums = np.add.reduceat(wk[at : at + n, :-1], cuts, axis=0)
                    g += sums[:, :, None] * (scale[6 * ci + j] * d_rho[j - 3])[None, None]
            force = np.column_stack([w[start + a * n : start + (a + 1) * n] @ chi for a in range(3)])
            for k, (a, b) in enumerate(zip(cuts, np.r_[cuts[1:], n], strict=True)):
                extra[step + a : step + b] = force[a:b] @ g[k].T / (masses[c] * (b - a))
        start, step = start + 6 * n, step + n
    return extra


def fit_covariance(
    w: np.ndarray,
    blocks: np.ndarray,
    rows: dict[str, Rows],
    cols: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    x: np.ndarray,
    noise: np.ndarray | None,
    settings: TlsSettings,
    profile: tuple[dict[str, float], dict[str, np.ndarray] | None] | None = None,
) -> np.ndarray:
    """Covariance of the final (weighted) fit x of the columns `cols` over the fitted row blocks
    (`active`): with `settings.covariance` "hac", robust to rows correlated in time
    (`rotorid.methods.covariance.tls_hac_cov`; with `noise`, the bias-compensated fit's `rotorid.methods.covariance.bc_hac_cov`):
    the six wrench rows of one instant share its time step, and lags never cross pieces or
    configurations; "iid", eq. 18-20 (`regression.bias_compensated`'s with `noise`). With
    `profile` (masses, the gain columns' force means or None; `gain_columns`) and centred force
    rows, the accelerometer bias's path into the moment rows is in it (`_bias_profiled`)."""
    keep = active[blocks]
    idx = [*cols, w.shape[1] - 1]
    wk = w[np.ix_(keep, idx)]  # one copy: only the fitted rows' fitted columns
    wk *= scale[blocks[keep]][:, None]
    means = {} if profile is None else force_means(rows, profile[0], w.shape[1], profile[1])
    extra = None
    if means:
        _bias_profiled(wk, keep, rows, cols, x, scale, means, profile[0])
        extra = _bias_scores(w, keep, wk, rows, cols, x, scale, profile[0])
    per_row = None if noise is None else noise[:, idx][:, :, idx] * scale[:, None, None] ** 2
    if settings.covariance == "iid":
        if per_row is None:
            return tls(wk).cov
        return bias_compensated(
            wk, np.einsum("b,bij->ij", np.bincount(blocks[keep], minlength=len(scale)), per_row)
        ).cov
    sizes = [len(r.t) for r in rows.values()]
    start = np.cumsum([0, *sizes[:-1]])
    instant = np.concatenate([s0 + np.tile(np.arange(n), 6) for s0, n in zip(start, sizes, strict=True)])
    pieces = [r.piece for r in rows.values()]
    offsets = np.cumsum([0, *(int(p.max()) + 1 for p in pieces[:-1])])
    segment = np.concatenate([p + o for p, o in zip(pieces, offsets, strict=True)])
    if per_row is None:
        return tls_hac_cov(wk, x, instant[keep], segment, extra=extra)
    return bc_hac_cov(wk, x, per_row, blocks[keep], instant[keep], segment, extra=extra)


def cancellation_var(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None = None,
    combos: np.ndarray | None = None,
) -> np.ndarray:
    """Variance the essential-parameter step's cancellations add to each kept parameter (same
    order as `kept`; with `combos`, to each linear combination of them, a row each): the
    squared bias of setting the cancelled parameters θ_c to zero.

    Leaving out columns A_c moves the kept estimates by P θ_c, P = (A_kᵀA_k)⁻¹A_kᵀA_c (the
    omitted-variable bias; Greene, Econometric Analysis, 7th ed., Sec. 4.3.2). By Frisch-Waugh-
    Lovell the estimate P θ̂_c is d = x_reduced - x_full[kept] on the same rows and block factors
    (exact for least squares; these TLS fits agree closely with least squares). d² over-
    estimates the squared bias by the variance P Σ_c Pᵀ the full model adds, var_full - var_reduced
    (eq. 20 of both fits), so the term is max(d² - (var_full - var_reduced), 0): zero when the
    cancellation is harmless, the bias when a cancelled parameter is in fact not zero (e.g. ms_z
    of configuration A in a combined fit). Zero when nothing was
    cancelled or the full model is degenerate on these rows. `noise`: both fits bias-compensated
    (`fixed_fit`); where the full model's compensated normal matrix is not positive (its noise
    moment exceeds the signal in the cancelled columns' directions), the uncompensated fits
    instead: returning zero there hid the bias of rotor gains (`TlsSettings.rotor_gains`) that
    cancelling the products of inertia causes."""
    keep = active[blocks]
    excited = sorted({j for j in range(w.shape[1] - 1) if np.any(w[keep, j] != 0)} | set(kept))
    c = np.eye(len(kept)) if combos is None else combos
    if len(excited) == len(kept):
        return np.zeros(len(c))
    try:
        full = fixed_fit(w, blocks, excited, active, scale, noise)
        red = fixed_fit(w, blocks, kept, active, scale, noise)
    except ExcitationError:
        if noise is None:
            return np.zeros(len(c))
        return cancellation_var(w, blocks, kept, active, scale, combos=combos)
    at = [excited.index(j) for j in kept]
    d = c @ (red.x - full.x[at])
    return np.maximum(d**2 - np.einsum("ij,jk,ik->i", c, full.cov[np.ix_(at, at)] - red.cov, c), 0.0)


def floor_var(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: NoiseMoment,
    x: np.ndarray,
    combos: np.ndarray | None = None,
) -> np.ndarray:
    """Variance the doubt about the noise floors (and the disturbance, `disturbance_moment`) adds to the
    bias-compensated estimate x of the columns `kept` (`fixed_fit` with `noise.total`; with
    `combos`, to each linear combination of them, a column each), per part of the moment (P, n):
    (x_s - x)², x_s the fit with part s moved by its doubt (`NoiseMoment.moves`: scaled by
    1 + δ_s); the parts' doubts are independent, so their sum is the term.

    The compensation subtracts a moment read from a floor above the band; where the noise is a
    large part of a column's power (the twice-differentiated pose in ω̇), or the floor is not the band's noise, that reading's error is a term σ must
    carry. Where the move makes the compensated normal matrix indefinite (the moment would exceed
    the signal), it is halved until it does not (at most 8 times)."""
    c = np.eye(len(kept)) if combos is None else combos
    out = np.zeros((len(noise.parts), len(c)))
    for i, move in enumerate(noise.moves):
        for _ in range(9):
            if not np.any(move):
                break
            try:
                moved = fixed_fit(w, blocks, kept, active, scale, noise.total + move).x
            except ExcitationError:
                move = move / 2.0
                continue
            out[i] = (c @ (moved - x)) ** 2
            break
    return out


def widened(cov: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """`cov` with `extra` added to its diagonal, every correlation kept (each row and column
    scaled by sqrt(1 + extra_i / var_i))."""
    var = np.diag(cov)
    f = np.sqrt(np.where(var > 0, 1.0 + extra / np.where(var > 0, var, 1.0), 1.0))
    return cov * np.outer(f, f)


def spread_cov(solve: Callable[[np.ndarray], np.ndarray], n_rotors: int, spread: float) -> np.ndarray:
    """Covariance the rotors' gain spread adds to the fitted parameters (`TlsSettings.motor_spread`):
    σ_ε² J (I - 11ᵀ/n) Jᵀ with J_i = ∂x/∂ε_i by a forward difference of `solve(gain)` (the
    final fit's columns, rows and block factors, re-solved for rotor i's wrench scaled by
    1 + h; the system is linear in the gains and the TLS solution smooth in the system)."""
    h = 0.01
    x0 = solve(np.ones(n_rotors))
    jac = np.column_stack([(solve(1.0 + h * np.eye(n_rotors)[i]) - x0) / h for i in range(n_rotors)])
    proj = np.eye(n_rotors) - 1.0 / n_rotors
    return spread**2 * jac @ proj @ jac.T


def imu_moves(h: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The nine independent moves of the IMU's data by `h` as (G, A), gyro ω -> G ω and
    accelerometer s -> A s (measured = (I + S) R true, the sensors' model; to first order
    I + diag(ε) and I + [θ]x): each axis's gyro scale, each axis's accelerometer scale, a turn
    of both sensors' axes about each body axis."""
    eye = np.eye(3)
    stretch = [eye + h * np.diag(e) for e in eye]
    turn = [eye + h * np.cross(e, eye).T for e in eye]  # I + h [e]x
    return [(g, eye) for g in stretch] + [(eye, a) for a in stretch] + [(r, r) for r in turn]


def imu_cov(jac: np.ndarray, scale: float, misalign: float) -> np.ndarray:
    """Covariance the IMU's assumed scale errors (1σ `scale`, a fraction) and misalignment (1σ
    `misalign`, rad) add to the fitted parameters (`TlsSettings.imu_scale`, `imu_misalign`):
    J diag(σ²) Jᵀ, J (n, 9) the parameters' derivative along each of `imu_moves` (independent)."""
    var = np.repeat([scale, scale, misalign], 3) ** 2
    return (jac * var) @ jac.T
