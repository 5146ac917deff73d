"""The paper's procedure end to end for one set of delays: rows, essential parameters, the
noise moment, the rotors' gains or their assumed spread, and the final fit (Sec. III)."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
from rotorid.methods.tls.covariance import imu_cov, imu_moves, spread_cov
from rotorid.methods.tls.gains import augmented, estimate_rotor_gains, final_fit, gain_columns, unseparated_reason
from rotorid.methods.tls.noise import NoiseMoment, disturbance_moment, noise_moment
from rotorid.methods.tls.problem import Gains, Solution, System, TlsProblem, build_system
from rotorid.methods.tls.rows import Rows, acc_bias_estimate, skew
from rotorid.methods.tls.selection import essential, expanded, fit_set, fixed_fit
from rotorid.methods.tls.settings import TlsSettings

#: An accelerometer bias beyond this (m/s²), five times a MEMS zero-g offset's 1σ
#: (`ACC_BIAS_Z_SIGMA`), is no sensor offset: the flight does not separate the bias from the
#: thrust (a hover holds the force rows constant, so centring them leaves k_t nothing to fit).
ACC_BIAS_PLAUSIBLE = 5 * ACC_BIAS_Z_SIGMA


def bias_of(sol: Solution, masses: dict[str, float]) -> dict[str, np.ndarray]:
    """The accelerometer bias per configuration and piece (pieces, 3) of a centred solution: the
    first pass's b plus what the final fit leaves in the force rows' means."""
    x = np.zeros(len(sol.names))
    x[sol.kept] = sol.fit.x
    return {c: b + sol.bias0[c] for c, b in acc_bias_estimate(sol.rows, x, masses).items()}


def _selected(problem: TlsProblem, gain: dict[str, np.ndarray] | None = None) -> Solution:
    """Rows and essential parameters (the paper's procedure, Sec. III-B), with the accelerometer
    bias (`TlsSettings.acc_bias`) estimated and removed; with `gain` (`idim_rows`) the rotors'
    wrench scaled by it and their gain columns (`gain_columns`) in every fit of the selection.
    The fit and covariance are not yet the final ones (`solve`)."""
    settings = problem.model
    rows, resolved, w, blocks, names = build_system(problem, None, gain)
    w_ref = None
    if settings.nuisance:  # the paper's model sets r_σ's scale (`essential`)
        w_ref = w
        del rows  # each system is let go before the next is built (their size sets the peak)
        rows, resolved, w, blocks, names = build_system(problem, {}, gain)
    extra = None
    if gain is not None:
        extra = gain_columns(problem, {} if settings.nuisance else None, gain).columns
    fit, kept, scale, history, active = essential(w, blocks, problem.base, names, settings, w_ref, extra)
    del w_ref, extra
    bias0: dict[str, np.ndarray] = {}
    if settings.centred:  # b also enters the moment rows (-[s]x ms): once more with s - b throughout
        bias0 = acc_bias_estimate(rows, expanded(fit.x[: len(kept)], kept, len(names)), problem.masses)
        del rows, w
        rows, resolved, w, blocks, names = build_system(problem, bias0, gain)
        fit, scale = fit_set(w, blocks, kept, active, problem.base, settings)
    system = System(rows, resolved, w, blocks, names)
    return Solution(system, fit, kept, scale, history, active, bias0, np.zeros(0))


def _rebiased(problem: TlsProblem, sol: Solution, noise: np.ndarray) -> Solution:
    """`sol` with the accelerometer bias re-estimated from the bias-compensated fit and its system
    rebuilt with it. The first pass's b (`_selected`) comes from the paper's TLS, which the
    sensor noise biases, so b_z is off by about k_t's share of g; the final fit corrects k_t,
    but the moment rows keep s - b in -[s]x ms, where b_z's error scales the first moments by
    1 + Δb_z / g, the same bias with or without the compensation."""
    fit = fixed_fit(sol.w, sol.blocks, sol.kept, sol.active, sol.scale, noise)
    x = expanded(fit.x, sol.kept, len(sol.names))
    bias = {c: b + sol.bias0[c] for c, b in acc_bias_estimate(sol.rows, x, problem.masses).items()}
    sol = sol.without_system()  # the old system is let go before the new is built
    rows, resolved, w, blocks, _ = build_system(problem, bias)
    return replace(sol, system=System(rows, resolved, w, blocks, sol.names), bias0=bias)


def _kept_too(sol: Solution, names: tuple[str, ...]) -> Solution:
    """`sol` with the cancelled unknowns `names` kept (`_restored`), out of the history."""
    if not names:
        return sol
    kept = sorted([*sol.kept, *(sol.names.index(n) for n in names)])
    return replace(sol, kept=kept, history=[h for h in sol.history if h["name"] not in names])


def solve(problem: TlsProblem, restore: bool = True) -> Solution:
    """`_solve_once`, and once more with the cancelled unknowns `_restored` says the final fit
    should keep (`Solution.restored` names them; not with `cancel_z` inf, the paper's rule, nor
    without `restore`: `terms.keep_restored` found they do not predict held-out data better)."""
    first = _solve_once(problem)
    if not restore or not first.restore or not np.isfinite(problem.model.cancel_z):
        return first.solution
    return replace(_solve_once(problem, first.restore, first.noise).solution, restored=first.restore)


class Pass(NamedTuple):
    """One pass of `_solve_once`: its solution, the cancelled unknowns the final fit should keep
    (`_restored`) and the noise moment of its rows (None without `TlsSettings.eiv`)."""

    solution: Solution
    restore: tuple[str, ...]
    noise: NoiseMoment | None


def _solve_once(problem: TlsProblem, restore: tuple[str, ...] = (), nm: NoiseMoment | None = None) -> Pass:
    """Rows, essential parameters (`_selected`, with the cancelled `restore` kept), the final fit
    and its covariance, the cancelled unknowns to restore (`_restored`) and the noise moment
    (`noise_moment`; `nm`, that of an earlier pass over the same rows, is used as it is when
    `restore` is given): the paper's procedure, with the accelerometer-bias nuisance
    (`TlsSettings.acc_bias`), the HAC covariance and the rotors' own gains
    (`TlsSettings.rotor_gains`) or, where the flights do not separate them, their assumed spread
    (`TlsSettings.motor_spread`) when asked. With the gains, the essential set is chosen with
    their columns in every fit (`essential`'s `extra`): the paper's model with equal rotors hands
    the gains' hover moment to the first moments and can cancel one that is not zero, which
    would leave the gains unseparated."""
    settings, n_rotors = problem.model, problem.vehicle.n_rotors
    want = settings.rotor_gains and settings.motor_spread > 0
    ones = {c: np.ones(n_rotors) for c in problem.configs} if want else None
    sol = _kept_too(_selected(problem, ones), restore)
    if settings.eiv and not (restore and nm is not None):
        nm = noise_moment(problem, sol.rows, sol.resolved)
        nm = disturbance_moment(problem, sol, nm)
    noise = None if nm is None else nm.total
    if noise is not None and settings.centred and not want:  # with the gains, their passes do it
        sol = _rebiased(problem, sol, noise)
    why = ""
    if want:
        sol = sol.without_system()  # the gains' passes rebuild the system (memory)
        try:
            gains = estimate_rotor_gains(problem, sol, nm)
        except ExcitationError:  # the gains' fit is degenerate: nothing separates them
            gains = None
        why = unseparated_reason(gains, n_rotors, settings.motor_spread)
        if gains is not None and not why:
            return Pass(replace(_with_gains(sol, gains, nm, settings), noise=noise), gains.restore, nm)
        sol = _kept_too(_selected(problem), restore)  # equal rotors
        if nm is not None:  # read from this selection's residuals, as without the gains
            nm = disturbance_moment(problem, sol, nm.sensors())
            noise = nm.total
        if noise is not None and settings.centred:
            sol = _rebiased(problem, sol, noise)
    fit, floor, back = final_fit(
        sol.w, sol.blocks, sol.rows, problem.masses, sol.kept, sol.active, sol.scale, nm, settings, sol.fit, sol
    )
    spread = np.zeros_like(fit.cov)
    if settings.motor_spread > 0:
        spread = _spread(problem, sol, noise)
        fit = replace(fit, cov=fit.cov + spread)
    doubt, dist = (None, {}) if nm is None else (nm.doubt, nm.disturbance)
    sol = replace(sol, fit=fit, spread=spread, gains_unseparated=why, floor=floor, doubt=doubt, disturbance=dist)
    sol = replace(sol, noise=noise)
    return Pass(sol, back, nm)


def _with_gains(sol: Solution, gains: Gains, nm: NoiseMoment | None, settings: TlsSettings) -> Solution:
    """`sol` as the rotors' gains `gains` leave it: their system and fit, no assumed spread."""
    bias = gains.bias if settings.nuisance else sol.bias0
    doubt, dist = (None, {}) if nm is None else (nm.doubt, nm.disturbance)
    spread = np.zeros_like(gains.fit.cov)
    return replace(
        sol,
        system=gains.system,
        fit=gains.fit,
        spread=spread,
        gains=gains,
        floor=gains.floor,
        doubt=doubt,
        bias0=bias,
        disturbance=dist,
    )


def _spread(problem: TlsProblem, sol: Solution, noise: np.ndarray | None) -> np.ndarray:
    """The covariance the rotors' assumed gain spread adds to the final fit of `sol` (`spread_cov`)."""
    settings, configs = problem.model, problem.configs

    def solve_gain(gain: np.ndarray) -> np.ndarray:
        bias = sol.bias0 if settings.nuisance else None
        system = build_system(problem, bias, dict.fromkeys(configs, gain))
        w, blocks = system.w, system.blocks
        del system  # its rows: only W_t is fitted
        return fixed_fit(w, blocks, sol.kept, sol.active, sol.scale, noise).x

    return spread_cov(solve_gain, problem.vehicle.n_rotors, settings.motor_spread)


def imu_part(problem: TlsProblem, sol: Solution) -> np.ndarray:
    """The covariance the IMU's assumed scale and misalignment (`TlsSettings.imu_scale`,
    `imu_misalign`) add to the final fit of `sol` (`imu_cov` of `imu_jacobian`): of its kept
    unknowns, then, with the rotors' gains, of the gains' unknowns (`coefficient_map` takes them
    to the rotors' coefficients). Zeros with motion capture as source (the rows are the pose's;
    the IMU only timed it) or both 0."""
    settings = problem.model
    if settings.source != "imu" or not (settings.imu_scale > 0 or settings.imu_misalign > 0):
        n = len(sol.kept) + (0 if sol.gains is None else len(sol.gains.value) - 1)
        return np.zeros((n, n))
    return imu_cov(imu_jacobian(problem, sol), settings.imu_scale, np.radians(settings.imu_misalign))


def imu_jacobian(problem: TlsProblem, sol: Solution) -> np.ndarray:
    """(kept, 9) derivative of the final fit of `sol` along each move of the IMU's data
    (`imu_moves`), by a forward difference of 0.01: its W_t moved by the derivative of its rows
    (`build_system`'s `move`, exact: W_t is linear in the move), re-solved with the essential
    set, row blocks, block factors, lags, body drag and noise moment held (and with the rotors'
    gains, their columns, which no IMU datum enters: then the gains' unknowns follow the kept
    ones, for the rotors' coefficients). The accelerometer bias is not held: it is
    estimated per piece from the force rows' mean residual (`acc_bias_estimate`), so a turn of
    gravity in the IMU's axes goes into it, not into the first moments; its first-order move
    (from the moved rows and the re-solved fit) re-enters the moment rows' -[s - b]x ms, a few
    times over to its fixed point (`BIAS_PASSES`)."""
    k, nw, masses = len(sol.kept), len(sol.names), problem.masses
    bias = sol.bias0 if problem.model.nuisance else None
    gains = sol.gains.used if sol.gains is not None else None
    cols, noise, w0, removed = sol.kept, sol.noise, sol.w, None
    if gains is not None:  # the system's columns, the gains', the known one (`estimate_rotor_gains`)
        w0, cols, noise, removed = augmented(problem, bias, gains, w0, sol.kept, noise)
    fresh = replace(problem, memo={})  # keeps the rows' basis for the nine moves (`idim_rows`)
    centred, yaw = problem.model.centred, problem.model.yaw_moment

    def fit(w: np.ndarray) -> np.ndarray:
        return fixed_fit(w, sol.blocks, cols, sol.active, sol.scale, noise).x

    def unknowns(x: np.ndarray) -> np.ndarray:  # every column's unknown (`acc_bias_estimate`)
        return np.concatenate([expanded(x[:k], sol.kept, nw), x[k:]])

    h, eye, x0 = 0.01, np.eye(3), fit(w0)
    extra = None if gains is None else w0[:, nw:-1].copy()  # the gains' columns alone: the rest is sol.w's
    del w0
    b0 = acc_bias_estimate(sol.rows, unknowns(x0), masses, removed) if centred else {}
    jac = np.zeros((len(cols), 9))
    for i, (g, a) in enumerate(imu_moves(h)):
        moved = build_system(fresh, bias, gains, move=(g - eye, a - eye))
        w = _moved(sol.w, moved.w, extra)
        moved_rows = _means_only(moved.rows)
        del moved  # its W_t is in w (a W_t fewer at this stage's peak): only its rows' means are read
        x = fit(w)
        for _ in range(BIAS_PASSES if centred else 0):
            b = acc_bias_estimate(sol.rows, unknowns(x), masses, removed)
            db = {c: b[c] - b0[c] + d for c, d in acc_bias_estimate(moved_rows, unknowns(x), masses).items()}
            shifted = _rebiased_rows(sol.rows, db, w.shape, yaw)
            shifted += w  # w + the shift, in place (the same sums: addition commutes exactly)
            x = fit(shifted)
            del shifted
        jac[:, i] = (x - x0) / h
    return jac


def _means_only(rows: dict[str, Rows]) -> dict[str, Rows]:
    """`rows` with only what `acc_bias_estimate` reads of them, the means removed from them and
    which drags' columns they carry: their per-sample arrays let go (`imu_jacobian`'s moved rows)."""

    def empty(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[:0].copy()  # a copy: a view would keep the rows' buffer

    return {
        c: replace(
            r,
            t=empty(r.t),
            dk=empty(r.dk),
            d=empty(r.d),
            dm=empty(r.dm),
            piece=empty(r.piece),
            drag=empty(r.drag),
            body=empty(r.body),
        )
        for c, r in rows.items()
    }


def _moved(w: np.ndarray, dw: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
    """W_t `w` moved by `dw` (`imu_jacobian`), with the rotors' gain columns `extra` (None: none),
    which no IMU datum enters, between its unknowns' columns and the known one (`augmented`'s
    layout): built from `w` and `dw` alone (into `dw` without the gains), so that no augmented
    copy of W_t is held beside them."""
    if extra is None:
        return np.add(w, dw, out=dw)
    nw = w.shape[1] - 1
    out = np.empty((len(w), nw + extra.shape[1] + 1))
    np.add(w[:, :-1], dw[:, :-1], out=out[:, :nw])
    out[:, nw:-1] = extra
    np.add(w[:, -1], dw[:, -1], out=out[:, -1])
    return out


#: Passes of the accelerometer bias's first-order move in `imu_jacobian`, each one re-solve (on
#: six-config-a the Jacobian is within 3e-5 of its fixed point after two, 2 % after one).
BIAS_PASSES = 2


def _rebiased_rows(rows: dict[str, Rows], db: dict[str, np.ndarray], shape: tuple[int, int], yaw: bool) -> np.ndarray:
    """The change of W_t (`shape`, `assemble`'s layout) when the specific force's removed bias moves
    by `db` (per configuration, (pieces, 3)): the moment rows' -[s - b]x ms gain [db]x in the first
    moments' columns, constant over a piece (the force rows, centred, and the yaw row, centred
    with `yaw`, lose it)."""
    out = np.zeros(shape)
    start = 0
    for ci, (c, r) in enumerate(rows.items()):
        n = len(r.t)
        if c in db:
            turned = skew(db[c][r.piece])
            for j in range(3, 5 + (not yaw)):
                out[start + j * n : start + (j + 1) * n, 2 + 9 * ci : 5 + 9 * ci] = turned[:, j - 3, :]
        start += 6 * n
    return out
