"""The optional terms of the model kept only where they predict held-out segments of the flights
better (`heldout.prefers`): the body (fuselage) drag's form (`TlsSettings.body_drag`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rotorid.methods.tls.heldout import held_out_sse, prefers, segments
from rotorid.methods.tls.problem import Solution, TlsProblem
from rotorid.methods.tls.rows import posed
from rotorid.methods.tls.settings import BODY_DRAG
from rotorid.methods.tls.solve import solve
from rotorid.motion import airborne_pieces, rotor_terms


class TermChoice(NamedTuple):
    """How an optional term was chosen (`choose_body_drag`): what was kept ("off" where the simpler
    model stands), the held-out t statistic of the richer model against the simpler, the note in
    words, and, where the test tells neither apart and the other model's body drag is not within
    2σ of zero (`_near_zero`), its estimates by unknown name (their difference enters σ,
    `checks.checked`; None otherwise)."""

    kept: str
    t: float
    note: str
    alternative: dict[str, float] | None


def body_scale(problem: TlsProblem) -> float:
    """The flights' mean Σ_i u_i over every airborne piece (`TlsSettings.body_scale`)."""
    st = problem.model
    sums = [
        rotor_terms(p, problem.vehicle, st.speed, st.tm).sum(axis=1)
        for fs in problem.configs.values()
        for f in fs
        for p in airborne_pieces(f)
    ]
    return float(np.mean(np.concatenate(sums)))


def _body_fit(problem: TlsProblem, form: str, scale: float) -> tuple[Solution, TlsProblem]:
    """The solution with the body drag of `form`: a first pass estimates d, which the second
    removes from the specific force (`TlsSettings.body_coef`), its columns estimating the rest."""
    first_problem = problem.derive(body_drag=form, body_scale=scale, body_coef=None)
    first = solve(first_problem)
    x = np.zeros(len(first.names))
    x[first.kept] = first.fit.x
    coef = tuple(float(x[first.names.index(n)] * scale) for n in BODY_DRAG)
    second = first_problem.derive(body_coef=coef)
    return solve(second), second


def _near_zero(sol: Solution, problem: TlsProblem, z: float = 2.0) -> bool:
    """Whether every body-drag coefficient of `sol` (in its units, `TlsSettings.body_coef` added)
    is within `z` σ of zero: the models with and without it then barely differ (as an IMU lag
    within its σ of none, `lags.choose_imu_delay`), and their difference does not enter σ."""
    st = problem.model
    at = [sol.kept.index(sol.names.index(n)) for n in BODY_DRAG]
    value = sol.fit.x[at] * st.body_scale + np.asarray(st.body_coef)
    std = np.sqrt(np.diag(sol.fit.cov)[at]) * st.body_scale
    return bool(np.all(np.abs(value) <= z * std))


def _by_name(sol: Solution) -> dict[str, float]:
    """The kept unknowns of `sol` by name (the rows' own units)."""
    return {sol.names[j]: float(v) for j, v in zip(sol.kept, sol.fit.x, strict=True)}


def fit_body_drag(problem: TlsProblem) -> tuple[Solution, TlsProblem, TermChoice | None]:
    """`solve` with the body drag the settings ask (`TlsSettings.body_drag`): a given form as it
    is; "auto" the form ("linear", "quadratic") whose model predicts held-out segments of the flights
    (`heldout.segments`) best, kept only when it predicts them better than the model without it
    (`heldout.prefers`), else "off" and a note. Both are compared on the simpler model's block
    factors. Without a velocity in every flight (`rows.posed`), "off"."""
    asked = problem.settings.body_drag
    flown = all(posed(f) for fs in problem.configs.values() for f in fs)
    if asked == "off" or not flown:
        return solve(problem.derive(body_drag="off")), problem.derive(body_drag="off"), None
    scale = body_scale(problem)
    if asked != "auto":
        sol, fitted = _body_fit(problem, asked, scale)
        return sol, fitted, None
    simple_problem = problem.derive(body_drag="off")
    simple = solve(simple_problem)
    folds = segments(simple.rows)
    base = (simple.active, simple.scale)
    sse0 = held_out_sse(simple.w, simple.blocks, folds, simple.kept, *base, simple.noise)
    best = None
    for form in ("linear", "quadratic"):
        sol, fitted = _body_fit(problem, form, scale)
        sse = held_out_sse(sol.w, sol.blocks, folds, sol.kept, *base, sol.noise)
        if best is None or sse.sum() < best[2].sum():
            best = (sol, fitted, sse, form)
        del sol
    sol, fitted, sse, form = best
    pref = prefers(sse0, sse)
    if pref.richer:
        note = (
            f"body (fuselage) drag modelled, {form} in the airspeed: it predicts held-out segments of the flights "
            f"better than the model without it (t = {pref.t:.1f})"
        )
        return sol, fitted, TermChoice(form, pref.t, note, None)
    decisive = prefers(sse, sse0).richer or _near_zero(sol, fitted)
    note = (
        f"no body (fuselage) drag modelled: the best form ({form}) does not predict held-out segments of the "
        f"flights better than the model without it (t = {pref.t:.1f}); --body-drag {form} forces it"
    )
    alternative = None if decisive else _by_name(sol)
    return simple, simple_problem, TermChoice("off", pref.t, note, alternative)
