"""Ground effect in IDIM-TLS (`TlsSettings.ground`), an optional term kept only where held-out
segments of the flights prefer it: each rotor's thrust times Cheeseman-Bennett's 1 / (1 - c / h²) at
its hub's height h above a ground level z_g (`rows.ground_gain`). To first order in c and for a
fixed z_g the term is linear in the fit, one column (the thrust columns built from u² / h²) with
the unknown k_t c; z_g is searched on a short geometric grid below the lowest hub by held-out
prediction, and the kept (z_g, c) refined on the exact factor (`_refined`); no rotor radius is needed."""

from __future__ import annotations

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.regression import Fit
from rotorid.methods.tls.heldout import TermChoice, held_out_sse, prefers, segments
from rotorid.methods.tls.noise import pad_noise
from rotorid.methods.tls.problem import Solution, TlsProblem, build_rows
from rotorid.methods.tls.rows import hub_heights, kt_column
from rotorid.methods.tls.selection import fixed_fit
from rotorid.methods.tls.solve import solve
from rotorid.motion import airborne_pieces
from rotorid.vehicle import Vehicle

#: The ground's depths below the lowest logged hub that `choose_ground` tries, in arm lengths (the
#: largest hub distance from the body origin in the rotor plane), a factor √2 apart: rotor radii of
#: 0.4-0.6 arm at 0.3-4 radii above the ground put the lowest hub 0.12-2.4 arms up; deeper than 4
#: arms the factor is nearly constant over a flight, a share of k_t no fit tells apart.
DEPTHS = 2.0 ** (np.arange(-6, 5) / 2.0)

#: The term's coefficient within this many σ of zero: the models with and without it barely differ
#: and their difference does not enter σ (as `terms._near_zero` for the body drag).
NEAR_ZERO_Z = 2.0


def _logs_height(problem: TlsProblem) -> bool:
    """Whether every flight logs a position and an attitude (the hubs' heights, `rows.hub_heights`)."""
    return all(f.pos is not None and f.quat is not None for fs in problem.configs.values() for f in fs)


def _lowest_hub(problem: TlsProblem) -> float:
    """The lowest hub height (m, world z) over every airborne piece of the flights."""
    return min(
        float(hub_heights(p, problem.vehicle).min())
        for fs in problem.configs.values()
        for f in fs
        for p in airborne_pieces(f)
    )


def _kt(problem: TlsProblem, sol: Solution, model: tuple[float, float] | None) -> np.ndarray:
    """The k_t column of `sol`'s W_t (its nuisance centring, its rotors' gains where estimated) with
    the ground model `model` (`TlsSettings.ground_model`; None: none), built alone (`kt_column`)."""
    bias = sol.bias0 if problem.model.nuisance else None
    gain = None
    if sol.gains is not None:  # the gains' values are k_t g_i: relative to the fit's k_t, as built
        rel = sol.gains.value / sol.fit.x[sol.kept.index(0)]
        gain = dict(zip(problem.configs, rel.reshape(len(problem.configs), -1), strict=True))
    rows, _ = build_rows(problem.derive(ground_model=model), bias, gain, kt_only=True)
    return kt_column(rows)[0]


def _slope(problem: TlsProblem, sol: Solution, level: float, c: float, base: np.ndarray, low: float) -> np.ndarray:
    """The derivative of the k_t column (`base`, built at c) in c, k_t ∂(u² g) / ∂c at the ground
    `level` (at c = 0 the thrust columns of u² / h²), by a step of 10⁻⁴ of the factor at the lowest
    hub (`low`, `_lowest_hub`), a ground depth up: its curvature and the rounding both ~10⁻¹² of it."""
    step = 1e-4 * (low - level) ** 2
    return (_kt(problem, sol, (level, c + step)) - base) / step


#: Gauss-Newton steps `_refined` takes on (z_g, c) from the search's level and first-order c.
REFINE_STEPS = 4


def _refined(problem: TlsProblem, sol: Solution, level: float, c: float) -> tuple[float, float]:
    """(z_g, c) of the exact factor 1 / (1 - c/h²) (`rows.ground_gain`) from the search's level on
    its grid and first-order c (1 + c/h², which falls short of the factor under ~2 R, where the
    thrust rises as (R/4h)⁴ too, and which a deeper ground with a larger c imitates): Gauss-Newton
    on the k_t column rebuilt at (z_g, c), with its derivatives in c and z_g as two more columns,
    on `sol`'s kept columns and rows. A step that leaves what a ground effect can be (0 < c up to
    rotors that do not overlap, `max_radius`; the ground below the lowest hub) ends it where it was:
    on a flight with little or no ground effect the two derivatives are nearly collinear."""
    kept, low = sol.kept, _lowest_hub(problem)
    top = max_radius(problem.vehicle) ** 2 / 16
    for _ in range(REFINE_STEPS):
        try:
            fit, _ = _joint_fit(problem, sol, level, c, low)
        except ExcitationError:
            break
        kt = float(fit.x[kept.index(0)])
        step = (c + float(fit.x[-2] / kt), level + float(fit.x[-1] / kt))
        if not (0 < step[0] <= top and step[1] < low):
            break
        c, level = step
    return level, c


def _joint_fit(problem: TlsProblem, sol: Solution, level: float, c: float, low: float) -> tuple[Fit, np.ndarray]:
    """The fit of `sol`'s kept columns and rows with the k_t column rebuilt at the ground model
    (z_g, c) = (`level`, c) and its derivatives in c and z_g as two more columns, last (the
    lowest hub at `low`): linear in (c, z_g) about the point, so its covariance has them estimated
    too (`_refined`'s step, `_profiled`); and that k_t column."""
    nw = sol.w.shape[1] - 1
    base = _kt(problem, sol, (level, c))
    dz = 1e-3 * (low - level)
    down = (_kt(problem, sol, (level + dz, c)) - base) / dz
    w = np.column_stack([base, sol.w[:, 1:-1], _slope(problem, sol, level, c, base, low), down, sol.w[:, -1]])
    noise = None if sol.noise is None else pad_noise(sol.noise, nw, 2)
    return fixed_fit(w, sol.blocks, [*sol.kept, nw, nw + 1], sol.active, sol.scale, noise), base


def _profiled(problem: TlsProblem, sol: Solution, level: float, c: float) -> tuple[dict[str, float], float]:
    """Per kept unknown of `sol` (by name), the factor (≥ 1) its variance grows by with the ground
    model (z_g, c) estimated too (`_joint_fit` at the kept point) rather than held where it was
    found: the final fit holds it, and k_t, which the hover balance ties to the thrust's factor
    near the ground, trades with both (six-config-a+b-random seed 1, motion capture: k_t +4.7σ at
    the held model, σ ×2.55 with it estimated); and c over its σ there (0 where the joint fit is
    degenerate, with no factors)."""
    try:
        joint, base = _joint_fit(problem, sol, level, c, _lowest_hub(problem))
        w = np.column_stack([base, sol.w[:, 1:]])  # the same k_t column, its ground held
        held = fixed_fit(w, sol.blocks, sol.kept, sol.active, sol.scale, sol.noise)
    except ExcitationError:
        return {}, 0.0
    ratio = np.diag(joint.cov)[: len(sol.kept)] / np.diag(held.cov)
    z = c * float(joint.x[sol.kept.index(0)]) / float(np.sqrt(joint.cov[-2, -2]))
    return {sol.names[j]: float(max(r, 1.0)) for j, r in zip(sol.kept, ratio, strict=True)}, z


def max_radius(vehicle: Vehicle) -> float:
    """The largest rotor radius (m) of rotors that do not overlap: half the smallest distance in the
    rotor plane between two hubs apart (a coaxial pair, at one place, sets none). A ground-effect
    c = R² / 16 beyond it is another effect that grows as the height's inverse square (a flight
    whose hubs went below the simulator's ground plane, its factor held at 4/3, gave R = 4.4 arms)."""
    xy = np.asarray(vehicle.positions, dtype=np.float64)[:, :2]
    apart = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    return float(apart[apart > 1e-9 * apart.max()].min() / 2)


def choose_ground(problem: TlsProblem, sol: Solution) -> tuple[Solution, TlsProblem, TermChoice | None]:
    """`sol` (of `problem`, the model without ground effect) or, where the settings ask it
    (`TlsSettings.ground`), the solution with the ground effect: per ground level z_g `DEPTHS` arms
    below the lowest hub, the column G = (k_t column at c₀ - at 0) / c₀ (the thrust columns of
    u² / h², exact: the rows are linear in u²) added to `sol`'s kept columns on its rows, block
    factors and noise moment; the level whose model predicts held-out segments best (with
    0 < c ≤ `max_radius`² / 16: a thrust falling near the ground is no ground effect, nor one of
    overlapping rotors) is kept where it predicts them better
    than `sol` (`heldout.prefers`; always with "on") and the problem solved again with it. Not
    kept, the richer model's estimates are the alternative whose difference enters σ unless the
    test is decisive or k_t c is within `NEAR_ZERO_Z` σ of zero. None: not asked, or a flight logs
    no position or attitude."""
    asked = problem.settings.ground
    if asked == "off" or not _logs_height(problem):
        return sol, problem, None
    arm = float(np.max(np.linalg.norm(np.asarray(problem.vehicle.positions, dtype=np.float64)[:, :2], axis=1)))
    low, kt0 = _lowest_hub(problem), _kt(problem, sol, None)
    folds, nw, kept = segments(sol.rows), sol.w.shape[1] - 1, sol.kept
    rich, fixed = [*kept, nw], (sol.active, sol.scale)
    noise = None if sol.noise is None else pad_noise(sol.noise, nw, 1)
    simple = held_out_sse(sol.w, sol.blocks, folds, kept, *fixed, sol.noise)
    best, plausible = None, max_radius(problem.vehicle) ** 2 / 16
    for depth in arm * DEPTHS:
        g = _slope(problem, sol, low - depth, 0.0, kt0, low)
        w = np.column_stack([sol.w[:, :-1], g, sol.w[:, -1]])
        try:  # a level whose column the rows cannot tell from the others' (noise moment above it) is none
            fit = fixed_fit(w, sol.blocks, rich, *fixed, noise)
            # a thrust falling near the ground, or rising as overlapping rotors would make it: another effect
            if not 0 < fit.x[-1] / fit.x[kept.index(0)] <= plausible:
                continue
            sse = held_out_sse(w, sol.blocks, folds, rich, *fixed, noise)
        except ExcitationError:
            continue
        if best is None or sse.sum() < best[2].sum():
            best = (depth, fit, sse)
        del w
    if best is None:
        note = (
            "no ground effect modelled: at no ground level below the flights does the thrust rise near the ground "
            f"as rotors of at most {max_radius(problem.vehicle):.3g} m radius (not overlapping) would make it"
        )
        return sol, problem, TermChoice("the ground effect", "off", float("nan"), note, None)
    depth, fit, sse = best
    kc, kt = float(fit.x[-1]), float(fit.x[kept.index(0)])
    pref, c = prefers(simple, sse), kc / kt

    def where(depth: float, c: float) -> str:
        return (
            f"thrust × 1/(1 - c/h²) at hub height h above a ground {depth:.3g} m below the lowest hub, c = {c:.3g} m² "
            f"(Cheeseman-Bennett with a rotor radius of {4 * np.sqrt(c):.3g} m)"
        )

    if pref.richer or asked == "on":
        why = "it predicts held-out segments of the flights better than the model without it"
        why = why if pref.richer else "asked (--ground on); held-out segments do not prefer it"
        level, c = _refined(problem, sol, low - depth, c)
        fitted = problem.derive(ground_model=(float(level), float(c)))
        widen, z = _profiled(problem, sol, level, c)
        if z <= NEAR_ZERO_Z and asked != "on":  # held-out segments prefer a factor the flights do not determine
            note = (
                f"no ground effect modelled: held-out segments prefer it (t = {pref.t:.1f}), but with its level "
                f"estimated too its c is within {NEAR_ZERO_Z:g}σ of zero (z = {z:.1f}; {where(low - level, c)})"
            )
            return sol, problem, TermChoice("the ground effect", "off", pref.t, note, None)
        note = (
            f"ground effect modelled, {where(low - level, c)}: {why} (t = {pref.t:.1f}); σ includes the ground "
            f"level's and c's (k_t σ ×{np.sqrt(widen.get('k_t', 1.0)):.2f})"
        )
        return solve(fitted), fitted, TermChoice("the ground effect", "on", pref.t, note, None, widen=widen)
    decisive = prefers(sse, simple).richer or abs(kc) <= NEAR_ZERO_Z * np.sqrt(fit.cov[-1, -1])
    moved = fit.x[:-1] - fixed_fit(sol.w, sol.blocks, kept, *fixed, sol.noise).x
    other = None if decisive else {sol.names[j]: float(v) for j, v in zip(kept, sol.fit.x + moved, strict=True)}
    note = (
        f"no ground effect modelled: the best ground level ({where(depth, c)}, to first order in c) does not "
        f"predict held-out segments of the flights better than the model without it (t = {pref.t:.1f}); "
        "--ground on forces it"
    )
    return sol, problem, TermChoice("the ground effect", "off", pref.t, note, other)
