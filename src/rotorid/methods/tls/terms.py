"""The optional terms of the model kept only where they predict held-out segments of the flights
better (`heldout.prefers`): the rotor drag k_rd, the rotor inflow k_in, the ground effect (`ground`), the body (fuselage) drag's form
(`TlsSettings.body_drag`) and the cancelled unknowns brought back (`solve._restored`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.tls.gains import coefficient_names
from rotorid.methods.tls.ground import choose_ground
from rotorid.methods.tls.heldout import Preference, TermChoice, held_out_sse, prefers, segments
from rotorid.methods.tls.problem import Solution, TlsProblem
from rotorid.methods.tls.settings import BODY_DRAG, K_IN, K_RD
from rotorid.methods.tls.solve import ACC_BIAS_PLAUSIBLE, bias_of, solve
from rotorid.motion import airborne_pieces, rotor_terms

#: A body-drag coefficient this many σ below zero rules its form out (`_fit_body_drag`).
NEGATIVE_Z = 2.0


class Fitted(NamedTuple):
    """What `fit_terms` found: the solution, the problem with the terms chosen (`TlsProblem.derived`)
    and how each term was chosen (those tested)."""

    solution: Solution
    problem: TlsProblem
    choices: list[TermChoice]


def fit_terms(problem: TlsProblem) -> Fitted:
    """`solve` with the optional terms held-out segments of the flights support, in turn: the rotor
    drag (`_keep_term`), the rotor inflow (`_try_inflow`), the ground effect (`ground.choose_ground`), the body drag (`_fit_body_drag`) and the cancelled unknowns the
    final fit would bring back (`_keep_restored`)."""
    simple_problem = problem.derive(body_drag="off")
    simple = solve(simple_problem)
    choices = []
    if K_RD in simple.names and simple.names.index(K_RD) in simple.kept:
        simple, simple_problem, rotor = _keep_term(ROTOR_DRAG, simple_problem, simple)
        choices += [rotor] if rotor else []
    simple, simple_problem, inflow = _try_inflow(simple_problem, simple)
    choices += [inflow] if inflow else []
    simple, simple_problem, ground = choose_ground(simple_problem, simple)
    choices += [ground] if ground else []
    found = simple_problem.model
    problem = problem.derive(
        rotor_drag=found.rotor_drag, rotor_inflow=found.rotor_inflow, ground_model=found.ground_model
    )
    sol, problem, body = _fit_body_drag(problem, simple, simple_problem)
    choices += [body] if body else []
    sol, restored = _keep_restored(problem, sol)
    return Fitted(sol, problem, choices + ([restored] if restored else []))


def _held_out(sol: Solution, drop: set[str]) -> tuple[Preference, bool]:
    """The held-out test of `sol`'s kept unknowns against the same rows without the unknowns `drop`
    (`heldout.held_out_sse`, `heldout.prefers`): whether the richer predicts better, and whether
    the test is decisive either way."""
    folds = segments(sol.rows)
    less = [j for j in sol.kept if sol.names[j] not in drop]
    args = (sol.active, sol.scale, sol.noise)
    rich = held_out_sse(sol.w, sol.blocks, folds, sol.kept, *args)
    simple = held_out_sse(sol.w, sol.blocks, folds, less, *args)
    pref = prefers(simple, rich)
    return pref, pref.richer or prefers(rich, simple).richer


def _beyond_noise(sol: Solution, names: tuple[str, ...], z: float = 2.0) -> bool:
    """Whether any unknown `names` of `sol` (kept) is beyond `z` of its σ from zero (the raw fit's
    units: `TlsSettings.body_coef` is added by the caller where it applies)."""
    at = [sol.kept.index(sol.names.index(n)) for n in names if sol.names.index(n) in sol.kept]
    std = np.sqrt(np.diag(sol.fit.cov)[at])
    return bool(np.any(np.abs(sol.fit.x[at]) > z * std))


def by_name(sol: Solution, configs: list[str] | None = None) -> dict[str, float]:
    """The kept unknowns of `sol` by name (the rows' own units), and the rotors' coefficients where
    it estimated the gains (`coefficient_names`; of the configurations `configs`, by default its
    rows', which a solution without its system no longer has)."""
    out = {sol.names[j]: float(v) for j, v in zip(sol.kept, sol.fit.x, strict=True)}
    if sol.gains is not None:
        cfgs = list(sol.rows) if configs is None else configs
        names = coefficient_names(cfgs, len(sol.gains.value) // len(cfgs))
        out |= dict(zip(names, map(float, sol.gains.value), strict=True))
    return out


class Term(NamedTuple):
    """A shared hub drag's unknown (`rows.Layout`), the term in words and its setting (a field of
    `problem.Derived`)."""

    name: str
    what: str
    setting: str


ROTOR_DRAG = Term(K_RD, "rotor drag", "rotor_drag")
ROTOR_INFLOW = Term(K_IN, "rotor inflow", "rotor_inflow")


def _keep_term(
    term: Term, problem: TlsProblem, sol: Solution, without: Solution | None = None, say_kept: bool = False
) -> tuple[Solution, TlsProblem, TermChoice | None]:
    """The hub drag `term` of `sol` (of `problem`) kept only when the rows with it predict held-out
    segments better than the same rows without its column; else the solution without it
    (`without`, or solved again), with a note (None: kept, unless `say_kept` asks a note then too)."""
    pref, decisive = _held_out(sol, {term.name})
    if pref.richer:
        note = (
            f"{term.what} modelled ({term.name}): it predicts held-out segments of the flights better than the model "
            f"without it (t = {pref.t:.1f})"
        )
        return sol, problem, TermChoice(f"the {term.what}", "on", pref.t, note, None) if say_kept else None
    alternative = None if decisive or not _beyond_noise(sol, (term.name,)) else by_name(sol)
    note = (
        f"no {term.what} modelled: {term.name} does not predict held-out segments of the flights better than the "
        f"model without it (t = {pref.t:.1f})"
    )
    dropped = problem.derive(**{term.setting: False})
    return (
        (solve(dropped) if without is None else without),
        dropped,
        TermChoice(f"the {term.what}", "off", pref.t, note, alternative),
    )


def _try_inflow(problem: TlsProblem, simple: Solution) -> tuple[Solution, TlsProblem, TermChoice | None]:
    """The rotor inflow (`TlsSettings.rotor_inflow`) tried on the model without it, `simple` (of
    `problem`): kept only where held-out segments support it (`_keep_term`) and k_in is not below
    zero by more than `NEGATIVE_Z` σ (thrust rising with the climb is no inflow: its column would
    stand for another effect); else `simple` stands, with a note. Without a velocity in every
    flight (`rows.posed`), or not asked, `simple` (None)."""
    if not (problem.settings.rotor_inflow and problem.posed):
        return simple, problem, None
    tried = problem.derive(rotor_inflow=True)
    try:
        sol = solve(tried)
    except ExcitationError:  # the flights do not carry the model with it
        sol = None
    at = None if sol is None or K_IN not in sol.names else sol.names.index(K_IN)
    if sol is None or at not in sol.kept:
        note = "no rotor inflow modelled: the flights do not determine k_in (a degenerate fit, or k_in cancelled)"
        return simple, problem, TermChoice("the rotor inflow", "off", float("nan"), note, None)
    i = sol.kept.index(at)
    z = sol.fit.x[i] / np.sqrt(sol.fit.cov[i, i])
    if z < -NEGATIVE_Z:
        note = (
            f"no rotor inflow modelled: k_in is below zero by {-z:.1f}σ (thrust rising with the climb, which no "
            "inflow gives)"
        )
        return simple, problem, TermChoice("the rotor inflow", "off", float("nan"), note, None)
    return _keep_term(ROTOR_INFLOW, tried, sol, simple, say_kept=True)


def _keep_restored(problem: TlsProblem, sol: Solution) -> tuple[Solution, TermChoice | None]:
    """The cancelled unknowns `solve` brought back (`Solution.restored`) kept only when they predict
    held-out segments better than the same rows without them; else the solution without them,
    with a note (None: kept, or none brought back)."""
    if not sol.restored:
        return sol, None
    pref, decisive = _held_out(sol, set(sol.restored))
    if pref.richer:
        return sol, None
    alternative = None if decisive or not _beyond_noise(sol, sol.restored) else by_name(sol)
    note = (
        f"{', '.join(sol.restored)} left cancelled: bringing them back (they move another parameter beyond its "
        f"σ) does not predict held-out segments of the flights better (t = {pref.t:.1f})"
    )
    return solve(problem, restore=False), TermChoice(", ".join(sol.restored), "off", pref.t, note, alternative)


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


def _body_first(problem: TlsProblem, form: str, scale: float) -> tuple[Solution, TlsProblem]:
    """The first pass with the body drag of `form`: its columns in the rows, nothing removed from
    the specific force yet (`_body_fit`)."""
    first = problem.derive(body_drag=form, body_scale=scale, body_coef=None)
    return solve(first), first


def _body_fit(first: Solution, problem: TlsProblem) -> tuple[Solution, TlsProblem]:
    """The solution with the body drag of the first pass `first` (of `problem`, `_body_first`):
    its d removed from the specific force (`TlsSettings.body_coef`), the columns estimating the
    rest, so that the moment rows' -[s]x ms sees s less the drag's specific force."""
    x = np.zeros(len(first.names))
    x[first.kept] = first.fit.x
    coef = tuple(float(x[first.names.index(n)] * problem.model.body_scale) for n in BODY_DRAG)
    second = problem.derive(body_coef=coef)
    return solve(second), second


def _body_z(sol: Solution, problem: TlsProblem) -> np.ndarray:
    """The body-drag coefficients of `sol` over their σ (in their units, `TlsSettings.body_coef`
    added): `_near_zero` and the sign a drag has (`_fit_body_drag`)."""
    st = problem.model
    at = [sol.kept.index(sol.names.index(n)) for n in BODY_DRAG]
    value = sol.fit.x[at] * st.body_scale + np.asarray(st.body_coef or (0.0, 0.0, 0.0))
    return value / (np.sqrt(np.diag(sol.fit.cov)[at]) * st.body_scale)


def _near_zero(sol: Solution, problem: TlsProblem, z: float = 2.0) -> bool:
    """Whether every body-drag coefficient of `sol` is within `z` σ of zero (`_body_z`): the models
    with and without it then barely differ (as an IMU lag within its σ of none,
    `lags.choose_imu_delay`), and their difference does not enter σ."""
    return bool(np.all(np.abs(_body_z(sol, problem)) <= z))


def _bias_off(sol: Solution, problem: TlsProblem) -> bool:
    """Whether `sol` puts the accelerometer bias beyond any sensor offset (`ACC_BIAS_PLAUSIBLE`;
    False where the bias is not estimated). A body-drag candidate that does while the model without
    it does not has a degenerate first fit, whose bias its final fit keeps (six-config-a with rotor
    inflow: the linear form's first fit left k_t at ~1 % of its value and a z bias of 9.86 m/s², g,
    and the moment rows' -[s]x ms, with s - b, lost gravity's lever: every first moment cancelled)."""
    return problem.model.centred and max(float(np.abs(b).max()) for b in bias_of(sol, problem.masses).values()) > (
        ACC_BIAS_PLAUSIBLE
    )


def _on_common_rows(sol: Solution, simple: Solution, rich: Solution) -> tuple[list[int], np.ndarray, np.ndarray]:
    """`sol`'s kept unknowns with a column on the row blocks both `simple` and `rich` fit, those
    blocks and `simple`'s block factors: the held-out comparison's terms (`_fit_body_drag`). Where
    one model cancelled k_d and so dropped the yaw rows (`selection.essential`), the other's k_d
    has no row left there to predict from and is not compared."""
    both = simple.active & rich.active
    rows = both[sol.blocks]
    return [j for j in sol.kept if np.any(sol.w[rows, j])], both, simple.scale


def _fit_body_drag(
    problem: TlsProblem, simple: Solution, simple_problem: TlsProblem
) -> tuple[Solution, TlsProblem, TermChoice | None]:
    """The solution with the body drag the settings ask (`TlsSettings.body_drag`): a given form as
    it is; "auto" the form ("linear", "quadratic") whose model (its first pass, `_body_first`)
    predicts held-out segments of the flights (`heldout.segments`) best, kept only when it predicts them better than the model
    without it, `simple` (`heldout.prefers`), else that with a note; a form whose fit is
    degenerate, or with a coefficient below zero by more than `NEGATIVE_Z` σ (a force along the
    airspeed is no drag: the columns would stand for another effect), is not a candidate. Both are
    compared on the row blocks both fit, with the simpler model's block factors (`_on_common_rows`). Without a velocity in every flight (`rows.posed`), "off"."""
    asked = problem.settings.body_drag
    flown = problem.posed
    if asked == "off" or not flown:
        return simple, simple_problem, None
    scale = body_scale(problem)
    if asked != "auto":
        sol, fitted = _body_fit(*_body_first(problem, asked, scale))
        return sol, fitted, None
    folds = segments(simple.rows)
    best, simple_off = None, _bias_off(simple, simple_problem)
    for form in ("linear", "quadratic"):
        try:
            sol, fitted = _body_first(problem, form, scale)
        except ExcitationError:  # the flights do not carry the model with it (a degenerate fit)
            continue
        if np.any(_body_z(sol, fitted) < -NEGATIVE_Z):  # pushes along the airspeed: no drag, another effect
            continue
        if _bias_off(sol, fitted) and not simple_off:  # its columns took the thrust's place
            continue
        sse0, sse = (
            held_out_sse(s.w, s.blocks, folds, *_on_common_rows(s, simple, sol), s.noise) for s in (simple, sol)
        )
        if best is None or sse.sum() < best[2].sum():  # its system let go: the next form's is built meanwhile
            best = (sol.without_system(), fitted, sse, form, sse0, list(sol.rows))
        del sol
    if best is None:
        note = (
            "no body (fuselage) drag modelled: the flights do not determine one (a degenerate fit, a coefficient "
            f"below zero by more than {NEGATIVE_Z:g}σ, which no drag has, or an accelerometer bias beyond any sensor "
            "offset with it)"
        )
        return simple, simple_problem, TermChoice("the body drag", "off", float("nan"), note, None)
    sol, fitted, sse, form, sse0, cfgs = best
    pref = prefers(sse0, sse)
    if pref.richer:
        note = (
            f"body (fuselage) drag modelled, {form} in the airspeed: it predicts held-out segments of the flights "
            f"better than the model without it (t = {pref.t:.1f})"
        )
        try:
            sol, fitted = _body_fit(sol, fitted)
        except ExcitationError:  # the second pass degenerate: the first pass's model stands, solved again (its system)
            sol = solve(fitted)
        return sol, fitted, TermChoice("the body drag", form, pref.t, note, None)
    decisive = prefers(sse, sse0).richer or _near_zero(sol, fitted)
    note = (
        f"no body (fuselage) drag modelled: the best form ({form}) does not predict held-out segments of the "
        f"flights better than the model without it (t = {pref.t:.1f}); --body-drag {form} forces it"
    )
    return (
        simple,
        simple_problem,
        TermChoice("the body drag", "off", pref.t, note, None if decisive else by_name(sol, cfgs)),
    )
