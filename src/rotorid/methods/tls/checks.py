"""What the data not fitted and the model's own structure say about the final fit: the
IMU lag's doubt, the flights' disagreement, the parameters resting on a secondary term, and the
inertia tensor a rigid body can have; each widens σ or labels the parameter, with a note."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.flight import Flight
from rotorid.methods.tls.gains import augmented, coefficient_map, coefficient_names
from rotorid.methods.tls.heldout import (
    SECONDARY_Z,
    Jackknife,
    consistent_inertia,
    is_consistent,
    jackknife,
    jackknife_of,
    jackknife_widen,
    pieces,
    prefers,
    secondary_shift,
    segments,
)
from rotorid.methods.tls.lags import LagChoice
from rotorid.methods.tls.noise import pad_noise
from rotorid.methods.tls.problem import Solution, TlsProblem, build_system
from rotorid.methods.tls.selection import fixed_fit
from rotorid.methods.tls.settings import BODY_DRAG, CHI, K_IN, K_RD
from rotorid.methods.tls.terms import TermChoice
from rotorid.methods.tls.voltage import VoltageChoice
from rotorid.methods.voltage import VoltageModel, alpha_doubt
from rotorid.motion import airborne_pieces
from rotorid.result import Observability

#: Why the yaw pair of one configuration is model-dependent (Six et al. eq. 23).
ONE_CONFIG_YAW = (
    "in one configuration the yaw row fixes only the ratio k_d / I_zz (Six et al. eq. 23); each alone comes "
    "from secondary terms (the rotor drag's yaw moment, gyroscopic and centre-of-mass couplings), which any "
    "effect the model lacks moves: fly a second configuration with an off-centre payload (--config-b)"
)

#: Why the rotor-drag coefficient is model-dependent.
DRAG_LUMPED = (
    "the rotor drag's force is not told apart from a fuselage (body) drag the model does not have (held-out "
    "segments did not support one; --body-drag linear or quadratic forces it), which pushes alike against the "
    "airspeed: k_rd lumps every drag"
)


#: Why the rotor-drag coefficient is model-dependent next to a body drag (`TlsSettings.body_drag`).
DRAG_SPLIT = (
    "the rotor drag and the body drag both push against the airspeed: they are told apart only by the rotor "
    "drag's growth with the rotor speed and its hubs' lever arms, which motor lags and unequal rotors also move"
)


#: Why the rotor-inflow coefficient is model-dependent (`TlsSettings.rotor_inflow`).
INFLOW_LUMPED = (
    "the rotor inflow's axial force is told apart from a fuselage (body) drag along the rotor axes, and from "
    "any other thrust change with the climb (ground effect, motor saturation), only by its growth with the rotor "
    "speed and the hubs' lever arms: k_in lumps every axial drag"
)


#: Why the z first moment is model-dependent where the rotor drag is modelled.
DRAG_HEIGHT = (
    "the rotor drag's moment about the origin is its in-plane force times the hubs' height, the lever arm "
    "ms_z has in the roll and pitch rows: a drag the model lacks (fuselage drag, acting at the centre of mass) "
    "moves ms_z through it (six-config-a with body drag: com_z -32 %, 19σ)"
)


#: Why σ includes where the air's force acts (`air_force`: held-out segments undecided).
AIR_FORCE = (
    "σ includes the height at which the in-plane force the model does not explain (fuselage drag, gusts) acts: "
    "held-out segments tell it at the body origin (Six et al. eq. 2: the moment rows' -[s]x ms take the whole "
    "specific force) and at a height of its own not apart (t = {t:.1f}), and the estimates differ between them"
)
#: The note where a height of its own predicts held-out segments better (`air_force`).
AIR_AT_HEIGHT = (
    "the in-plane force the model does not explain (fuselage drag, gusts) acts at a height of its own, not at "
    "the body origin (Six et al. eq. 2: the moment rows' -[s]x ms take the whole specific force): with that "
    "height estimated the model predicts held-out segments better (t = {t:.1f}); the estimates are that model's"
)


class Checked(NamedTuple):
    """The final fit's covariance after the checks (kept order), the model-dependent parameters
    (unknown's name -> why), the notes and, with the rotors' gains (`Solution.gains`), their
    coefficients' covariance after the same checks (None without)."""

    cov: np.ndarray
    model_dependent: dict[str, str]
    notes: list[str]
    gains: np.ndarray | None = None


def checked(
    problem: TlsProblem,
    sol: Solution,
    choice: LagChoice | None,
    terms: tuple[TermChoice, ...] = (),
    volt: VoltageChoice | None = None,
    air: AirChoice | None = None,
) -> Checked:
    """The checks of `sol` in turn: the lag's doubt (`_lag_doubt`), the battery voltage exponent's
    where its curve is kept (`_alpha_doubt`), the optional terms' (`_term_doubt`), the
    leave-one-piece-out scatter (`_disagreement`) and what rests on the rotor drag (`_on_drag`).
    With the rotors' gains each doubt is a move of the kept unknowns and the gains' together, so
    the rotors' coefficients (`coefficient_map`) carry every term k_t carries."""
    k, gains = len(sol.kept), sol.gains
    cov, notes = sol.fit.cov.copy(), []
    coef = None if gains is None else gains.cov.copy()
    to_coef = None if gains is None else coefficient_map(gains.used, k)

    def add(d: np.ndarray, dc: np.ndarray | None = None) -> None:  # a doubt's move: its outer product
        nonlocal cov, coef
        cov += np.outer(d[:k], d[:k])
        if coef is not None and to_coef is not None:
            dc = to_coef @ d if dc is None else dc
            coef += np.outer(dc, dc)

    for term in terms:
        if term.widen:
            cov, coef = _widened(sol, cov, coef, term.widen)
    if choice is not None and choice.alternative is not None:
        add(_lag_doubt(problem, sol, choice.alternative))
        notes.append(
            f"σ includes the IMU lag's doubt: the held-out segments tell neither {1e3 * choice.alternative:.1f} ms "
            "nor 0 apart, and the estimates differ between them"
        )
    if volt is not None and volt.kept:
        add(_alpha_doubt(problem, sol, volt.model))
    for term in terms:
        if term.alternative is not None:
            add(*_term_doubt(sol, term.alternative))
        if term.alternative is not None and term.held_out:
            notes.append(
                f"σ includes the doubt about {term.term}: held-out segments tell the models with and without it "
                "not apart, and the estimates differ between them"
            )
    if air is not None and air.kept == "either":
        add(air.move)
        notes.append(AIR_FORCE.format(t=air.t))
    elif air is not None and air.kept == "height":
        root = np.sqrt(air.widen[:k])
        cov = cov * np.outer(root, root)
        notes.append(AIR_AT_HEIGHT.format(t=air.t))
    cov, coef, said = _disagreement(problem, sol, cov, coef)
    dependent = _on_drag(sol, np.sqrt(np.clip(np.diag(cov), 0, None)), problem.model.body_drag != "off")
    if K_IN in sol.names and sol.names.index(K_IN) in sol.kept:
        dependent[K_IN] = INFLOW_LUMPED
    if len(problem.configs) == 1:
        dependent |= {n: ONE_CONFIG_YAW for n in ("k_d", "I_zz") if sol.names.index(n) in sol.kept}
    return Checked(cov, dependent, notes + said, coef)


def _widened(
    sol: Solution, cov: np.ndarray, coef: np.ndarray | None, factor: dict[str, float]
) -> tuple[np.ndarray, np.ndarray | None]:
    """`cov` (of `sol`'s kept unknowns) with each unknown's variance grown by its `factor` (by name;
    1 where absent), its correlations kept; with the rotors' gains, their coefficients (k_t times
    each rotor's gain) carry k_t's added variance: (f - 1) σ²(k_t) times their ratios to k_t."""
    root = np.sqrt([factor.get(sol.names[j], 1.0) for j in sol.kept])
    grown = cov * np.outer(root, root)
    if coef is None or sol.gains is None:
        return grown, coef
    kt = sol.kept.index(0)
    ratio = sol.gains.value / sol.fit.x[kt]
    return grown, coef + np.outer(ratio, ratio) * (root[kt] ** 2 - 1.0) * cov[kt, kt]


def _bias(problem: TlsProblem, sol: Solution) -> dict[str, np.ndarray] | None:
    """The accelerometer bias the system of `sol` was built with (None: the paper's model)."""
    return sol.bias0 if problem.model.nuisance else None


def _refit(problem: TlsProblem, sol: Solution) -> np.ndarray:
    """The estimates of `problem`'s system (`fixed_fit` of the final essential set, block factors
    and noise moment of `sol`, with its first pass's accelerometer bias); with the rotors' gains,
    the system built with the gains `sol` used and their columns (`augmented`): the kept
    unknowns, then the gains'."""
    bias = _bias(problem, sol)
    if sol.gains is None:
        system = build_system(problem, bias)
        return fixed_fit(system.w, system.blocks, sol.kept, sol.active, sol.scale, sol.noise).x
    system = build_system(problem, bias, sol.gains.used)
    w, blocks = system.w, system.blocks
    del system  # its rows let go before the gains' columns are built (beside sol's system: this stage's peak)
    aug = augmented(problem, bias, sol.gains.used, w, sol.kept, sol.noise)
    del w  # in aug.w
    return fixed_fit(aug.w, blocks, aug.cols, sol.active, sol.scale, aug.noise).x


def _lag_doubt(problem: TlsProblem, sol: Solution, alternative: float) -> np.ndarray:
    """The difference of the estimates at the `alternative` IMU lag and at the one used (`_refit`
    on both systems)."""
    return _refit(problem.derive(imu_delay=alternative), sol) - _refit(problem, sol)


def _alpha_doubt(problem: TlsProblem, sol: Solution, model: VoltageModel) -> np.ndarray:
    """The move the voltage exponent's σ makes (`voltage.alpha_doubt`: the estimates at α + σ
    against those at α, both by `_refit`); α is held at its estimate in the final fit."""
    moved = lambda m: _refit(problem.derive(voltage_model=(m.alpha, m.v_ref)), sol)
    return alpha_doubt(model, moved, _refit(problem, sol))


def _term_doubt(sol: Solution, other: dict[str, float]) -> tuple[np.ndarray, np.ndarray | None]:
    """The other model's estimates (by name; an unknown it lacks is 0 there) less the kept ones of
    `sol`; with the rotors' gains, also its rotors' coefficients (`coefficient_names`; where it
    has none, its k_t times the gains' ratios to k_t, the first kept unknown) less those of `sol`
    (None without the gains)."""
    d = np.array([other.get(sol.names[j], 0.0) - v for j, v in zip(sol.kept, sol.fit.x, strict=True)])
    if sol.gains is None:
        return d, None
    value = sol.gains.value
    ratio = other.get(sol.names[sol.kept[0]], sol.fit.x[0]) / sol.fit.x[0]
    names = coefficient_names(list(sol.rows), len(value) // len(sol.rows))
    return d, np.array([other.get(n, v * ratio) - v for n, v in zip(names, value, strict=True)])


def _final_columns(problem: TlsProblem, sol: Solution) -> tuple[np.ndarray, list[int], np.ndarray | None]:
    """`sol`'s W_t, the columns of its final fit and their noise moment; with the rotors' gains,
    W_t with the gains' columns (`augmented`): the kept unknowns, then the gains'."""
    if sol.gains is None:
        return sol.w, sol.kept, sol.noise
    aug = augmented(problem, _bias(problem, sol), sol.gains.used, sol.w, sol.kept, sol.noise)
    return aug.w, aug.cols, aug.noise


def _unexplained(w: np.ndarray, blocks: np.ndarray, cols: list[int], x: np.ndarray, c: int, mass: float) -> np.ndarray:
    """The in-plane specific force the fit `x` (of the columns `cols`) leaves unexplained in
    configuration number `c` (2, n): its force rows' x and y residual over the mass."""
    return np.array([(w[blocks == 6 * c + j][:, cols] @ x + w[blocks == 6 * c + j, -1]) / mass for j in (0, 1)])


def _with_height(
    w: np.ndarray, sol: Solution, cols: list[int], x: np.ndarray, masses: dict[str, float], noise: np.ndarray | None
) -> tuple[np.ndarray, list[int], np.ndarray | None]:
    """`w` with a column per configuration for the moment the in-plane force r the fit `x` leaves
    unexplained (`_unexplained`, per unit mass) has about the origin, m h (r_y, -r_x, 0) in the
    roll and pitch rows (h its line of action's height: at the origin 0, at the centre of mass
    com_z, where Six et al.'s -[s]x ms, eq. 2, puts it at the origin); the columns of the fit with
    it, and the noise moment with the columns' (r's noise is s's: ms_z's in those rows)."""
    n, k = w.shape[1] - 1, len(sol.rows)
    extra = np.zeros((len(w), k))
    for ci, c in enumerate(sol.rows):
        r = masses[c] * _unexplained(w, sol.blocks, cols, x, ci, masses[c])
        extra[sol.blocks == 6 * ci + 3, ci] = r[1]
        extra[sol.blocks == 6 * ci + 4, ci] = -r[0]
    out = np.column_stack([w[:, :-1], extra, w[:, -1]])
    if noise is None:
        return out, [*cols, *range(n, n + k)], None
    padded = pad_noise(noise, n, k)
    for ci, c in enumerate(sol.rows):
        ms = sol.names.index("ms_z" if k == 1 else f"ms_z@{c}")
        at = [6 * ci + 3, 6 * ci + 4]  # r = s less the model's force: the same noise, of opposite sign as ms_z's
        padded[np.ix_(at, [n + ci], range(n + k + 1))] = -masses[c] * padded[np.ix_(at, [ms], range(n + k + 1))]
        padded[np.ix_(at, range(n + k + 1), [n + ci])] = -masses[c] * padded[np.ix_(at, range(n + k + 1), [ms])]
    return out, [*cols, *range(n, n + k)], padded


#: A height within this many σ of zero (`air_force`) leaves the models too alike for their
#: difference to enter σ (as an optional term's, `heldout.TermChoice`).
HEIGHT_Z = 2.0


class AirChoice(NamedTuple):
    """Where the in-plane force the model does not explain acts (`air_force`): the move of the
    final fit's unknowns (kept, then the gains') when its height is estimated and the factor (≥ 1)
    their variance grows by with it, the held-out t statistic of that model against the origin's,
    and which one stands ("height": the estimates move and σ grows; "origin": they stay; "either":
    the test tells neither apart and a height is beyond `HEIGHT_Z` σ of zero: the move enters σ)."""

    move: np.ndarray
    widen: np.ndarray
    t: float
    kept: str


def air_force(problem: TlsProblem, sol: Solution) -> AirChoice | None:
    """Whether the in-plane force the final fit does not explain (fuselage drag, gusts) acts at a
    height of its own (`_with_height`) rather than at the body origin, where Six et al.'s rows put
    it: the model with the height kept only when it predicts held-out segments better
    (`heldout.segments`, `heldout.prefers`), each fold's force residual from the fit of the other
    folds. Both fits as `sol`'s final one (`fixed_fit` of its essential set, block factors and
    noise moment). None without a z first moment or where a fit is degenerate."""
    if not all(f"ms_z{'' if len(sol.rows) == 1 else '@' + c}" in _kept_names(sol) for c in sol.rows):
        return None
    w, cols, noise = _final_columns(problem, sol)
    fit = lambda m, cs, sel, nm: fixed_fit(m[sel], sol.blocks[sel], cs, sol.active, sol.scale, nm).x
    folds = segments(sol.rows)
    sse = np.zeros((2, int(folds.max()) + 1))
    scale = sol.scale[sol.blocks]
    try:
        for g in range(sse.shape[1]):
            train, test = folds != g, (folds == g) & sol.active[sol.blocks]
            x = fit(w, cols, train, noise)
            rich, more, nm = _with_height(w, sol, cols, x, problem.masses, noise)
            for i, (m, cs, xi) in enumerate(((w, cols, x), (rich, more, fit(rich, more, train, nm)))):
                sse[i, g] = np.sum(((m[test][:, [*cs, -1]] @ np.append(xi, 1.0)) * scale[test]) ** 2)
        base = fixed_fit(w, sol.blocks, cols, sol.active, sol.scale, noise)
        rich, more, nm = _with_height(w, sol, cols, base.x, problem.masses, noise)
        richer = fixed_fit(rich, sol.blocks, more, sol.active, sol.scale, nm)
    except ExcitationError:
        return None
    k, height = len(cols), prefers(sse[0], sse[1])
    ratio = np.diag(richer.cov)[:k] / np.where(np.diag(base.cov) > 0, np.diag(base.cov), np.inf)
    beyond = np.any(np.abs(richer.x[k:]) > HEIGHT_Z * np.sqrt(np.diag(richer.cov)[k:]))
    decisive = prefers(sse[1], sse[0]).richer or not beyond
    kept = "height" if height.richer else "origin" if decisive else "either"
    return AirChoice(richer.x[:k] - base.x, np.maximum(ratio, 1.0), height.t, kept)


def _kept_names(sol: Solution) -> set[str]:
    return {sol.names[j] for j in sol.kept}


def _flight_names(problem: TlsProblem) -> list[str]:
    """A name per airborne piece, over all configurations (the order of `heldout.pieces`)."""
    names = []
    for c, flights in problem.configs.items():
        for i, f in enumerate(flights):
            name = _name(f, i) + (f" ({c})" if len(problem.configs) > 1 else "")
            n = len(airborne_pieces(f))
            names += [name] if n == 1 else [f"{name} piece {k + 1}" for k in range(n)]
    return names


def _name(f: Flight, i: int) -> str:
    """A flight's name for a note: its source or scenario flight, else its place."""
    meta = f.meta
    return str(meta.get("source") or meta.get("path") or meta.get("flight") or f"flight {i + 1}")


def _disagreement(
    problem: TlsProblem, sol: Solution, cov: np.ndarray, coef: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """With ≥ 2 airborne pieces, leave-one-out estimates (`heldout.jackknife`; with the rotors'
    gains, of the kept unknowns and the gains' together, `augmented`); where their scatter exceeds
    what σ allows (`heldout.jackknife_widen`), σ grows to the jackknife's (the kept unknowns' in
    `cov`, the rotors' coefficients' in `coef`) and a note names the pieces whose leaving out
    moves the estimate most."""
    groups = pieces(sol.rows)
    alone = len(sol.rows) > 1 and any(len(np.unique(r.piece)) < 2 for r in sol.rows.values())
    if len(np.unique(groups)) < 2 or alone:  # a configuration's only piece left out leaves its unknowns no row
        return cov, coef, []
    k = len(sol.kept)
    w, cols, noise = _final_columns(problem, sol)
    try:
        jack = jackknife(w, sol.blocks, groups, cols, sol.active, sol.scale, noise)
    except ExcitationError:  # a piece carries a column alone: nothing to compare without it
        return cov, coef, []
    own = Jackknife(jack.loo[:, :k], jack.var[:k])
    factor = jackknife_widen(np.diag(cov), own)
    widened = [sol.names[j] for j, f in zip(sol.kept, factor, strict=True) if f > 1]
    dev = np.abs(own.loo - own.loo.mean(axis=0))[:, factor > 1]
    if coef is not None and sol.gains is not None:
        theirs = jackknife_of(jack.loo @ coefficient_map(sol.gains.used, k).T)
        more = jackknife_widen(np.diag(coef), theirs)
        coef = coef * np.outer(np.sqrt(more), np.sqrt(more))
        names = coefficient_names(list(sol.rows), len(sol.gains.value) // len(sol.rows))
        widened += [n for n, f in zip(names, more, strict=True) if f > 1]
        dev = np.hstack([dev, np.abs(theirs.loo - theirs.loo.mean(axis=0))[:, more > 1]])
    if not widened:
        return cov, coef, []
    root = np.sqrt(factor)
    cov = cov * np.outer(root, root)
    flights = _flight_names(problem)
    most = np.flatnonzero(np.any(dev >= 0.5 * dev.max(axis=0), axis=1))  # within half the largest move
    worst = sorted({flights[g] for g in most}) if len(flights) == len(jack.loo) else []
    by = "; leaving out " + " or ".join(worst) + " moves them most" if worst else ""
    return (
        cov,
        coef,
        [
            f"the flights disagree beyond σ on {', '.join(widened)} (leave-one-out scatter, χ² test): σ widened to "
            f"the jackknife's{by}"
        ],
    )


def _on_drag(sol: Solution, std: np.ndarray, body: bool = False) -> dict[str, str]:
    """The rotor drag k_rd (`DRAG_LUMPED`; `DRAG_SPLIT`, and the body drag along x and y, next to a
    modelled body drag, `body`) and
    every first moment ms_* that moves by more than `SECONDARY_Z` σ when the rotor-drag column is
    left out of the same rows: the drag's moment about the origin (its force at the hubs' height)
    has the form of a first moment's lever arm, so a drag the model lacks (body drag) moves them
    through it; ms_z always (`DRAG_HEIGHT`), as it can move beyond σ with little shift, unless the
    body drag is modelled. Others (k_t, I_xx, I_yy) also move when a real rotor drag is left out,
    but the rows fix them without it: not only through it."""
    if K_RD not in sol.names or sol.names.index(K_RD) not in sol.kept:
        return {}
    drop = sol.names.index(K_RD)
    try:
        z = secondary_shift(sol.w, sol.blocks, sol.kept, drop, sol.active, sol.scale, sol.noise, std)
    except ExcitationError:
        z = np.zeros(len(sol.kept))
    out = {K_RD: DRAG_SPLIT if body else DRAG_LUMPED}
    if body:  # the body drag's in-plane coefficients share the rotor drag's force
        out |= {n: DRAG_SPLIT for n in BODY_DRAG[:2] if sol.names.index(n) in sol.kept}
    if (
        not body and "ms_z" in sol.names and sol.names.index("ms_z") in sol.kept
    ):  # one configuration: its z first moment
        out["ms_z"] = DRAG_HEIGHT
    for j, zj in zip(sol.kept, z, strict=True):
        if zj > SECONDARY_Z and sol.names[j].startswith("ms_"):
            out[sol.names[j]] = (
                f"it moves by {zj:.1f}σ when the rotor drag is left out: it rests on the rotor-drag model, "
                "which a drag the model lacks (fuselage drag) also moves"
            )
    return out


def inertia_checked(
    est: dict[str, tuple[float, float]], masses: dict[str, float]
) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """`est` with every configuration's inertia tensor (about the origin; a cancelled product 0)
    physically consistent (`heldout.consistent_inertia`): where it is not, the nearest consistent
    tensor, each entry's σ widened by how far it moved (in quadrature), and a note."""
    single = len(masses) == 1
    idx = {"I_xx": (0, 0), "I_yy": (1, 1), "I_zz": (2, 2), "I_xy": (0, 1), "I_xz": (0, 2), "I_yz": (1, 2)}
    notes = []
    out = dict(est)
    for c in masses:
        suf = "" if single else f"@{c}"
        if not all(f"{n}{suf}" in est for n in CHI[3:6]):
            continue
        tensor = np.zeros((3, 3))
        for n, (i, j) in idx.items():
            tensor[i, j] = tensor[j, i] = est.get(f"{n}{suf}", (0.0, 0.0))[0]
        if is_consistent(tensor):
            continue
        near = consistent_inertia(tensor)
        moved = []
        for n, (i, j) in idx.items():
            if f"{n}{suf}" in est and abs(near[i, j] - tensor[i, j]) > 0:
                value, std = est[f"{n}{suf}"]
                out[f"{n}{suf}"] = (float(near[i, j]), float(np.hypot(std, near[i, j] - value)))
                moved.append(f"{n}{suf} {value:.3g} → {near[i, j]:.3g}")
        notes.append(
            f"the estimated inertia tensor{' of ' + c if suf else ''} is not one a rigid body can have (positive "
            f"principal moments, each at most the sum of the others): reported as the nearest one that is, σ "
            f"widened by the move ({'; '.join(moved)})"
        )
    return out, notes


def with_labels(observability: dict[str, Observability], dependent: dict[str, str]) -> None:
    """Marks the parameters of `dependent` (and their derived k_tau, com_*) model-dependent (in place)."""
    derived = {"k_d": ("k_tau",), **{f"ms_{a}": (f"com_{a}",) for a in "xyz"}}
    for name, why in dependent.items():
        base, at, cfg = name.partition("@")
        for n in (name, *(d + at + cfg for d in derived.get(base, ()))):
            if n in observability:
                observability[n] = dataclasses.replace(observability[n], model_dependent=why)
            else:
                observability[n] = Observability(True, essential=True, model_dependent=why)
