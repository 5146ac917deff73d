"""The final fit and the rotors' own gains (`TlsSettings.rotor_gains`), with the cancelled unknowns
the bias-compensated fit brings back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.regression import (
    Fit,
)
from rotorid.methods.tls.covariance import cancellation_var, fit_covariance, floor_var, widened
from rotorid.methods.tls.noise import NoiseMoment, pad_noise
from rotorid.methods.tls.problem import Gains, Solution, TlsProblem, build_rows, build_system
from rotorid.methods.tls.rows import Rows, acc_bias_estimate, kt_column
from rotorid.methods.tls.selection import YAW_PAIR, expanded, fixed_fit
from rotorid.methods.tls.settings import TlsSettings

#: Most passes of the rotor-gain estimate (`estimate_rotor_gains`), each on rows rebuilt with the gains of
#: the last; it stops once no gain moves by more than `GAIN_TOL` (a few passes settle them).
GAIN_PASSES = 5


GAIN_TOL = 1e-5


#: ... and once no accelerometer bias it re-estimates (`_rebiased`) moves by more than this, m/s²
#: (1e-5 g: a first moment's scale by as much, well inside com's σ).
BIAS_TOL = 1e-4


class GainColumns(NamedTuple):
    """The rotors' gain columns of W_t (`gain_columns`) and, per configuration with centred force
    rows, what each removed from them (pieces, 3, columns)."""

    columns: np.ndarray
    removed: dict[str, np.ndarray]


def gain_columns(problem: TlsProblem, bias: dict[str, np.ndarray] | None, gains: dict[str, np.ndarray]) -> GainColumns:
    """Columns of W_t for the rotors' gains at `gains` (`TlsSettings.rotor_gains`): rotor i's
    part of the k_t column, -g_i D_k,i (`assemble`), one column per rotor and configuration
    (zero in the other configurations' rows), the unknown of rotor i being k_t η_i (its gain
    becomes g_i (1 + η_i)). The first configuration's gains keep their mean (k_t is its mean
    rotor): its columns are rotor i's minus the last rotor's (η_n = -Σ η_i). With centred force
    rows (`idim_rows`), also what each column removed from them per configuration (pieces, 3,
    columns), for the accelerometer bias (`estimate_rotor_gains`); else an empty dict."""
    n, configs = problem.vehicle.n_rotors, problem.configs
    own = np.eye(n)
    kt, means = [], []
    for i in range(n):  # one rotor's rows at a time: only its k_t column is kept
        rows, _ = build_rows(problem, bias, {c: g * own[i] for c, g in gains.items()}, kt_only=True)
        column, blocks = kt_column(rows)
        kt.append(column)
        means.append({c: -r.force_mean[:, :, 0] for c, r in rows.items() if r.force_mean is not None})
        del rows
    cfg = blocks // 6
    one = np.column_stack(kt)
    first = (one[:, :-1] - one[:, -1:]) * (cfg == 0)[:, None]
    columns = np.column_stack([first, *(one * (cfg == ci)[:, None] for ci in range(1, len(configs)))])
    removed = {}
    for ci, c in enumerate(configs):
        if c in means[0]:
            per = np.stack([m[c] for m in means], axis=-1)  # (pieces, 3, rotors)
            before, after = (0, n * (len(configs) - 1)) if ci == 0 else (n * ci - 1, n * (len(configs) - 1 - ci))
            own_cols = per[..., :-1] - per[..., -1:] if ci == 0 else per
            pad = [np.zeros((*per.shape[:2], k)) for k in (before, after)]
            removed[c] = np.concatenate([pad[0], own_cols, pad[1]], axis=-1)
    return GainColumns(columns, removed)


def gain_map(gains: dict[str, np.ndarray]) -> np.ndarray:
    """Rotor thrust coefficients k_t g_i (1 + η_i) per configuration (rows, first configuration
    first) as a linear map of [k_t, the gain unknowns of `gain_columns`] (at η = 0)."""
    g = list(gains.values())
    n = len(g[0])
    first = np.vstack([np.eye(n - 1), -np.ones(n - 1)])
    m = np.zeros((n * len(g), 1 + (n - 1) + n * (len(g) - 1)))
    m[:, 0] = np.concatenate(g)
    m[:n, 1:n] = g[0][:, None] * first
    for ci in range(1, len(g)):
        m[n * ci : n * (ci + 1), n + n * (ci - 1) : n + n * ci] = np.diag(g[ci])
    return m


def coefficient_map(gains: dict[str, np.ndarray], k: int) -> np.ndarray:
    """The rotors' thrust coefficients (`gain_map`) as a linear map of every unknown of a fit with
    the gains' columns (`augmented`): its `k` kept unknowns (k_t first), then the gains'."""
    m = gain_map(gains)
    out = np.zeros((len(m), k + m.shape[1] - 1))
    out[:, [0, *range(k, out.shape[1])]] = m
    return out


def coefficient_names(configs: list[str], n: int) -> list[str]:
    """The rotors' thrust coefficients' names, `k_t_mI` (`k_t_mI@C` per configuration when several),
    in `gain_map`'s order."""
    sufs = [""] if len(configs) == 1 else [f"@{c}" for c in configs]
    return [f"k_t_m{i + 1}{s}" for s in sufs for i in range(n)]


class Augmented(NamedTuple):
    """W_t with the rotors' gain columns (`gain_columns`) before the known one, the fit's columns
    in it (the kept unknowns, then the gains'), its noise moment padded (the rotor-only gain
    columns carry none; None without one) and what each gain column removed from the centred
    force rows (`GainColumns.removed`)."""

    w: np.ndarray
    cols: list[int]
    noise: np.ndarray | None
    removed: dict[str, np.ndarray]


def augmented(
    problem: TlsProblem,
    bias: dict[str, np.ndarray] | None,
    gains: dict[str, np.ndarray],
    w: np.ndarray,
    kept: list[int],
    noise: np.ndarray | None,
) -> Augmented:
    """`w` (W_t of `problem` built with `bias` and the rotors' `gains`) with the gains' columns
    there (`gain_columns`), for the fit of the kept unknowns and the gains together."""
    extra, removed = gain_columns(problem, bias, gains)
    nw, ne = w.shape[1] - 1, extra.shape[1]
    wa = np.column_stack([w[:, :-1], extra, w[:, -1]])
    return Augmented(wa, [*kept, *range(nw, nw + ne)], None if noise is None else pad_noise(noise, nw, ne), removed)


class FinalFit(NamedTuple):
    """The final fit with its widened covariance (`final_fit`), the variance the doubt about each
    noise floor adds to it (`floor_var`) and the cancelled unknowns it should keep (`_restored`)."""

    fit: Fit
    floor: np.ndarray
    restore: tuple[str, ...]


def final_fit(
    w: np.ndarray,
    blocks: np.ndarray,
    rows: dict[str, Rows],
    masses: dict[str, float],
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    nm: NoiseMoment | None,
    settings: TlsSettings,
    fit: Fit | None = None,
    sol: Solution | None = None,
) -> FinalFit:
    """The final fit of the columns `kept` with its covariance: bias-compensated with the noise
    moment `nm` (`TlsSettings.eiv`), else `fit` (or TLS with the block factors `scale` held),
    the HAC covariance when asked (with centred force rows, the accelerometer bias's path into
    the moment rows in it either way, `_bias_profiled`), widened by what the essential step's
    cancellations and the doubt about the noise floors (`floor_var`, returned too: zeros without
    `nm`) add, and the cancelled unknowns of `sol` it should keep (`_restored`; none without `sol`)."""
    noise = None if nm is None else nm.total
    if noise is not None or fit is None:
        fit = fixed_fit(w, blocks, kept, active, scale, noise)
    if settings.covariance == "hac" or settings.centred:
        fit = replace(
            fit, cov=fit_covariance(w, blocks, rows, kept, active, scale, fit.x, noise, settings, (masses, None))
        )
    floor = np.zeros((0, len(kept))) if nm is None else floor_var(w, blocks, kept, active, scale, nm, fit.x)
    back = () if sol is None else _restored(sol.names, sol.history, w, blocks, kept, fit, active, scale, noise)
    extra = cancellation_var(w, blocks, kept, active, scale, noise) + floor.sum(axis=0)
    return FinalFit(replace(fit, cov=widened(fit.cov, extra)), floor, back)


def estimate_rotor_gains(problem: TlsProblem, sol: Solution, noise: NoiseMoment | None) -> Gains:
    """Each rotor's own gain (`TlsSettings.rotor_gains`) with the essential set, row blocks and
    block factors of `sol`: the gain columns (`gain_columns`) join W_t, whose rows are rebuilt
    with the gains found, and the accelerometer bias the compensated fit finds (`_rebiased`),
    until they settle (`GAIN_PASSES`); the last pass's fit, η ≈ 0, gives
    their covariance with every parameter (the errors-in-variables noise of `noise` is zero
    in these rotor-only columns), widened as `final_fit` does, the rotors' coefficients by
    the cancellations' bias of each (a combination of the unknowns, `cancellation_var`)."""
    configs, vehicle, masses, settings = problem.configs, problem.vehicle, problem.masses, problem.model
    gains = {c: np.ones(vehicle.n_rotors) for c in configs}
    bias = sol.bias0 if settings.nuisance else None
    system = rows = wa = None
    for npass in range(1, GAIN_PASSES + 1):
        system = rows = wa = None  # the last pass's system is let go before the next is built
        system, used = build_system(problem, bias, gains), gains
        rows, blocks, nw = system.rows, system.blocks, system.w.shape[1] - 1
        wa, cols, _, removed = augmented(problem, bias, gains, system.w, sol.kept, None)
        system = system._replace(w=np.empty((0, 0)))  # its W_t is in wa, taken out again at the end (`_without`)
        padded = None if noise is None else noise.padded(nw, len(cols) - len(sol.kept))
        na = None if padded is None else padded.total
        fit = fixed_fit(wa, blocks, cols, sol.active, sol.scale, na)
        k = len(sol.kept)
        kt, eta = fit.x[0], fit.x[k:] / fit.x[0]
        m = gain_map(gains)
        new = (m @ np.concatenate([[kt], kt * eta])) / kt
        if not np.all(np.isfinite(new) & (new > 0)):
            raise ExcitationError("the rotors' gains are not separated by these flights")
        gains = dict(zip(configs, (new / np.mean(new[: vehicle.n_rotors])).reshape(len(configs), -1), strict=True))
        left = {}
        if noise is not None and settings.centred:  # the compensated fit's bias for the next pass (`_rebiased`)
            left = acc_bias_estimate(
                rows, np.concatenate([expanded(fit.x[:k], sol.kept, nw), fit.x[k:]]), masses, removed
            )
        settled = np.max(np.abs(eta)) < GAIN_TOL and all(np.abs(b).max() < BIAS_TOL for b in left.values())
        if settled or npass == GAIN_PASSES:
            break  # the bias stays the one these rows were built with (`bias_of` adds what they leave)
        bias = {c: bias[c] + left.get(c, 0.0) for c in bias} if bias is not None else None
    if settings.covariance == "hac" or settings.centred:
        profile = (masses, removed)
        fit = replace(
            fit, cov=fit_covariance(wa, blocks, rows, cols, sol.active, sol.scale, fit.x, na, settings, profile)
        )
    back = _restored(sol.names, sol.history, wa, blocks, cols, fit, sol.active, sol.scale, na)
    mm = coefficient_map(used, k)  # the rotors' coefficients from every unknown of the fit
    combos = np.vstack([np.eye(len(cols)), mm])
    floor = np.zeros((0, len(combos)))
    if padded is not None:
        floor = floor_var(wa, blocks, cols, sol.active, sol.scale, padded, fit.x, combos)
    extra = cancellation_var(wa, blocks, cols, sol.active, sol.scale, na, combos) + floor.sum(axis=0)
    cov = widened(mm @ fit.cov @ mm.T, extra[len(cols) :])  # a sum's bias is not its terms' widened
    value = m @ np.concatenate([[kt], fit.x[k:]])
    kf = replace(fit, x=fit.x[:k], cov=widened(fit.cov, extra[: len(cols)])[:k, :k])
    system = system._replace(w=_without(wa, nw))
    return Gains(value, cov, np.sqrt(np.diag(cov)) / kt, system, kf, floor[:, :k], bias or {}, back, used)


def _without(wa: np.ndarray, nw: int) -> np.ndarray:
    """W_t (its `nw` unknowns' columns and the known one) out of `augmented`'s `wa`: the same numbers,
    so that W_t and wa need not both be held through the gains' passes and covariance."""
    return wa[:, [*range(nw), wa.shape[1] - 1]]


#: A rotor's gain further than this many assumed spreads (`TlsSettings.motor_spread`) from the
#: first configuration's mean is no rotor's own: the flights did not separate the gains (a
#: hover-only flight can give gains far off at a tiny σ), as `ACC_BIAS_PLAUSIBLE` judges a bias.
GAIN_PLAUSIBLE = 5.0


def unseparated_reason(gains: Gains | None, n_rotors: int, spread: float) -> str:
    """Why the rotors' gains `gains` (None: their fit was degenerate) do not count as measured,
    in words; "" when they do: every gain's σ below the assumed `spread` and every gain within
    `GAIN_PLAUSIBLE` spreads of the first configuration's mean."""
    if gains is None:
        known = "their fit is degenerate"
    else:
        worst = float(gains.rel_std.max())
        far = float(np.max(np.abs(gains.value / np.mean(gains.value[:n_rotors]) - 1.0)))
        if worst < spread and far <= GAIN_PLAUSIBLE * spread:
            return ""
        known = f"σ up to {100 * worst:.2g} %" if worst >= spread else f"a gain {100 * far:.3g} % off their mean"
    return (
        f"the rotors' gains are not separated by these flights ({known}; the assumed spread is {100 * spread:g} %): "
        "their spread is assumed instead; fly roll and pitch manoeuvres"
    )


#: A cancelled unknown comes back (`_restored`) when leaving the cancelled ones out moves a kept
#: one by more than this many of its reported σ.
RESTORE_Z = 1.0


def _restored(
    names: list[str],
    history: list[dict[str, Any]],
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    fit: Fit,
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None,
) -> tuple[str, ...]:
    """Names of the unknowns `essential` cancelled as not significant (not the yaw pair, not the
    unexcited) that the bias-compensated final fit should keep: their joint omitted-variable
    bias d = x_kept - x_all[kept] (`cancellation_var`) moves some kept unknown j by more than
    RESTORE_Z of its σ in `fit` (the reported, HAC σ of the fit without them, before the
    cancellations widen it). The paper's TLS, on which `essential` ranks, does not see it:
    products of inertia each within 1.5σ of zero can shift the rotors' gains and a first
    moment, the same in every flight. The fewest of them, by their t in the fit
    with all, that leave no such move come back. `kept` may hold more columns of `w` than
    `names` (the rotors' gains, `estimate_rotor_gains`), which are never candidates."""
    gone = {h["name"] for h in history if h["why"] == "largest %σ" and not h["name"].startswith(YAW_PAIR)}
    cand = [j for j, n in enumerate(names) if n in gone and np.any(w[active[blocks], j] != 0)]
    if noise is None or not cand:
        return ()
    cols = sorted([*kept, *cand])
    try:
        full = fixed_fit(w, blocks, cols, active, scale, noise)
    except ExcitationError:
        return ()
    at, var = [cols.index(j) for j in kept], RESTORE_Z**2 * np.diag(fit.cov)
    if not np.any((fit.x - full.x[at]) ** 2 > var):
        return ()
    t = {j: abs(full.x[cols.index(j)]) / np.sqrt(full.cov[cols.index(j), cols.index(j)]) for j in cand}
    order = sorted(cand, key=lambda j: -t[j])
    for m in range(1, len(order)):  # the fewest, most significant first, that leave no such move
        sub = sorted([*kept, *order[:m]])
        part = fixed_fit(w, blocks, sub, active, scale, noise)
        if np.all((part.x[[sub.index(j) for j in kept]] - full.x[at]) ** 2 <= var):
            return tuple(names[j] for j in order[:m])
    return tuple(names[j] for j in order)
