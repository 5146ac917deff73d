"""The delays between the signals (`TlsSettings.imu_delay`, `TlsSettings.mocap_delay`) found from
the flights, and the solve with them (and without the accelerometer bias where it is not separable)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rotorid.errors import RotoridError
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
from rotorid.methods.tls.heldout import LEVEL, STRONG, held_out_sse, prefers, segments
from rotorid.methods.tls.likelihood import LagModel, lag_model
from rotorid.methods.tls.problem import Solution, TlsProblem
from rotorid.methods.tls.settings import MAX_IMU_DELAY, PLAUSIBLE_IMU_DELAY
from rotorid.methods.tls.solve import ACC_BIAS_PLAUSIBLE, bias_of, solve
from rotorid.methods.tls.terms import TermChoice, by_name, fit_terms
from rotorid.methods.tls.voltage import VoltageChoice, choose_voltage
from rotorid.motion import (
    airborne_pieces,
    pose_lag,
)

#: An accelerometer bias beyond this many σ of a sensor's zero-g offset (`ACC_BIAS_Z_SIGMA`) is in
#: doubt: a force the model lacks may stand in for it (`_bias_doubt`).
OFFSET_Z = 2.0


class Separated(NamedTuple):
    """What `solve_separated` found: the solution, the problem with what was found from the flights
    (`TlsProblem.derived`), why the accelerometer bias was left out ("" when separated), the
    pose's lag behind the IMU where it was measured (`_pose_lag`, None otherwise), why the
    IMU's lag could not be estimated ("" when it was, `_imu_lag`), how it was chosen (None
    where it was given or not searched, `choose_imu_delay`), the battery voltage's choice
    (`voltage.choose_voltage`; None where not considered) and why it was not considered, and
    how the optional terms tested on held-out segments were chosen (`terms.fit_terms`)."""

    solution: Solution
    problem: TlsProblem
    unseparated: str
    pose_lag: float | None
    imu_why: str
    imu_lag: LagChoice | None = None
    voltage: VoltageChoice | None = None
    voltage_why: str = ""
    terms: tuple[TermChoice, ...] = ()


def solve_separated(problem: TlsProblem) -> Separated:
    """`solve` (`terms.fit_terms`: with the optional terms held-out segments support); when
    the accelerometer bias it estimates is beyond any sensor offset
    (`ACC_BIAS_PLAUSIBLE`), the flights do not separate it from the thrust: solved again with
    the paper's model, and the reason in words for k_t's assumption. A `mocap_delay` of None is
    measured first (`_pose_lag`), then the battery voltage's exponent in the rotor terms
    (`choose_voltage`), then an `imu_delay` of None estimated (`_imu_lag`, with the voltage
    curve where kept: a sag left out of the model passed for a -3.3 ms lag on six-config-a,
    and α fitted at that lag came out 0.957 for the true 1 on a noise-free flight), then the
    optional terms; the rotor drag is left out when a
    flight has no attitude or no position or velocity, the rotor inflow until the optional terms
    try it (the stages before fit the model without it). What is found goes into the problem's
    `derived` record, the settings asked stay as they are."""
    asked = problem.settings
    if asked.rotor_drag and not problem.posed:
        problem = problem.derive(rotor_drag=False)
    problem = problem.derive(rotor_inflow=False)
    lag = _pose_lag(problem) if asked.mocap_delay is None else None
    if asked.mocap_delay is None:
        problem = problem.derive(mocap_delay=lag or 0.0)  # behind the IMU; + its own lag below
    problem, volt, volt_why = choose_voltage(problem)
    imu_why, choice = "", None
    if asked.imu_delay is None:
        choice, imu_why = _imu_lag(problem, lag)
        problem = problem.derive(imu_delay=0.0 if choice is None else choice.value)
    if lag is not None:  # the pose timed against the IMU, the IMU against the rotor signals
        problem = problem.derive(mocap_delay=lag + problem.model.imu_delay)
    sol, problem, terms = fit_terms(problem)
    terms = tuple(terms)
    if not problem.model.centred:
        return Separated(sol, problem, "", lag, imu_why, choice, volt, volt_why, terms)
    worst = max(float(np.abs(b).max()) for b in bias_of(sol, problem.masses).values())
    if worst <= ACC_BIAS_PLAUSIBLE:
        terms += _bias_doubt(problem, worst)
        return Separated(sol, problem, "", lag, imu_why, choice, volt, volt_why, terms)
    problem = problem.derive(acc_bias=False)
    why = (
        f"the accelerometer bias is not separable from the thrust in these flights (it came out "
        f"{worst:.2g} m/s², no sensor offset): solved without it, k_t assumes zero bias "
        f"± {ACC_BIAS_Z_SIGMA:g} m/s² (1σ); fly thrust changes to measure it"
    )
    return Separated(solve(problem), problem, why, lag, imu_why, choice, volt, volt_why, terms)


def _bias_doubt(problem: TlsProblem, worst: float) -> tuple[TermChoice, ...]:
    """The model without the accelerometer bias as a doubt of the one with it, where the bias came
    out beyond a sensor's zero-g offset (`worst`, its largest component, m/s², more than
    `OFFSET_Z` of `ACC_BIAS_Z_SIGMA`; below `ACC_BIAS_PLAUSIBLE`, where `solve_separated` leaves
    it out). A per-piece constant in the force rows also takes the steady part of any force the
    model lacks: rotor inflow in a climb the thrust's controller holds (the force rows' mean then
    carries the hover balance k_t Σu² = m g the centring removed) or the drag of a steady wind.
    Such a bias and a sensor's offset fit alike, so both models stand and their difference enters
    σ (six-config-a with rotor inflow: b_z +0.86 m/s² for none, k_t -6.7σ; without the bias
    -0.5σ). Empty where the bias is within an offset's range."""
    if worst <= OFFSET_Z * ACC_BIAS_Z_SIGMA:
        return ()
    zero = problem.derive(acc_bias=False)
    note = (
        f"σ includes the doubt about the accelerometer bias: it came out {worst:.2g} m/s², beyond a sensor's "
        f"zero-g offset (0 ± {ACC_BIAS_Z_SIGMA:g} m/s², 1σ), where a steady force the model lacks (rotor inflow, "
        "a steady wind's drag) may stand in for it; the estimates with no bias differ from these. With an "
        "accelerometer calibrated at rest, --no-acc-bias removes the doubt"
    )
    return (TermChoice("the accelerometer bias", "estimated", float("nan"), note, by_name(solve(zero)), False),)


def _imu_lag(problem: TlsProblem, lag: float | None) -> tuple[LagChoice | None, str]:
    """The IMU's lag behind the rotor signals (`choose_imu_delay`; None: 0) and, when it could not be
    found, why ("" otherwise). The motion-capture source needs it only when its pose was timed
    against the IMU (`lag`, `_pose_lag`): the pose then lags the rotor signals by `lag` plus
    this, found by the IMU-source model of the same flights (`lag` alone is only the pose's lag
    behind the IMU); 0 otherwise, or where the
    flights do not carry that model (the reason then goes into the pose's note, `pose_note`)."""
    if problem.model.source == "imu":
        return choose_imu_delay(problem, lag is not None), ""
    if lag is None:
        return None, ""
    try:  # its own memo: the motion columns of the other source
        return choose_imu_delay(problem.trial(memo={}, source="imu"), True), ""
    except RotoridError as e:
        return None, str(e)


def _pose_lag(problem: TlsProblem) -> float | None:
    """The logged pose's lag behind the IMU (`motion.pose_lag`), the mean over every airborne
    piece weighted by its length; None where no piece logs both (or the pose is not used: the
    IMU source's hub drags, the rotor inflow as asked, tried after this, read its velocity)."""
    settings = problem.model
    if settings.source == "imu" and not (settings.rotor_drag or problem.settings.rotor_inflow):
        return None
    lags, spans = [], []
    for p in (p for fs in problem.configs.values() for f in fs for p in airborne_pieces(f)):
        d = pose_lag(p, problem.vehicle, settings.motion)
        if d is not None:
            lags.append(d)
            spans.append(p.t[-1] - p.t[0])
    return float(np.average(lags, weights=spans)) if lags else None


class LagChoice(NamedTuple):
    """The IMU's lag behind the rotor signals as chosen from the flights (`choose_imu_delay`): the
    lag used, the one the search found, its σ (the likelihood's curvature), the held-out t
    statistic of the found lag against none (`heldout.prefers`), the note in words, and the lag
    whose estimates differ enough to enter σ (None: the held-out test was decisive). The σ counts
    the rows as independent: a lower bound where they are correlated in time."""

    value: float
    found: float
    std: float
    t: float
    note: str
    alternative: float | None


def estimate_imu_delay(problem: TlsProblem, pose_measured: bool = False) -> float:
    """The IMU's lag behind the rotor signals (`TlsSettings.imu_delay`) that maximises the
    Gaussian likelihood of the IDIM with a variance per row block (the model of the block
    weighting, Sec. III-B): τ minimising Σ_j n_j log rms_j(τ) over ±`MAX_IMU_DELAY`, with the
    essential set, active blocks and accelerometer bias of a first fit at τ = 0. The cost is not
    unimodal over that range (on a noise-free flight its well at the true lag is ~1 ms wide, and
    Brent over the whole range settled at -6 ms for a true 0): a 5 ms grid picks the well, Brent
    refines within one grid step either side of the best point. With `pose_measured`,
    the problem's `mocap_delay` is the pose's lag behind the IMU (`_pose_lag`): it moves with τ.
    The problem's memo (`idim_rows`) keeps the motion columns: only the rotor columns change with τ."""
    return _search(lag_model(problem, pose_measured))[0]


def _search(model: LagModel) -> tuple[float, float]:
    """The lag minimising `model.cost` (`estimate_imu_delay`) and the cost there."""
    from scipy.optimize import minimize_scalar

    grid = np.linspace(-MAX_IMU_DELAY, MAX_IMU_DELAY, 11)
    best = grid[int(np.argmin([model.cost(tau) for tau in grid]))]
    h = grid[1] - grid[0]
    bounds = (max(best - h, -MAX_IMU_DELAY), min(best + h, MAX_IMU_DELAY))
    found = minimize_scalar(model.cost, bounds=bounds, method="bounded", options={"xatol": 1e-4})
    return float(found.x), float(found.fun)


def choose_imu_delay(problem: TlsProblem, pose_measured: bool = False) -> LagChoice:
    """The IMU lag the flights support: the searched lag (`estimate_imu_delay`) is kept only when
    the model with it predicts held-out segments of the flights (`heldout.segments`: fit on the
    others, predict each) better than the paper's model without a lag by more than the folds'
    scatter (`heldout.prefers`), at `heldout.STRONG` beyond what a flight controller's filters
    explain (`PLAUSIBLE_IMU_DELAY`); otherwise 0 stands. The likelihood's cost, not unimodal, can
    settle on a lag that trades the rotor wrench against an effect the model lacks. Where the
    test is not decisive either way, the other lag's estimates enter σ (`alternative`)."""
    model = lag_model(problem, pose_measured)
    found, at = _search(model)
    h = 5e-4
    mid = float(np.clip(found, -MAX_IMU_DELAY + h, MAX_IMU_DELAY - h))  # the stencil stays in the searched range
    curv = (model.cost(mid + h) - 2 * (at if mid == found else model.cost(mid)) + model.cost(mid - h)) / h**2
    std = float(1 / np.sqrt(curv)) if curv > 0 else float("inf")
    w0, blocks, rows = model.system(0.0)
    folds = segments(rows)
    args = (model.kept, model.active, model.scale)
    sse0 = held_out_sse(w0, blocks, folds, *args)
    del w0
    sse = held_out_sse(model.system(found)[0], blocks, folds, *args)
    plausible = abs(found) <= PLAUSIBLE_IMU_DELAY
    pref = prefers(sse0, sse, LEVEL if plausible else STRONG)
    decisive = pref.richer or prefers(sse, sse0).richer
    ms = f"{1e3 * found:.1f} ms (σ ≥ {1e3 * std:.1g} ms, the likelihood's curvature with rows taken as independent)"
    if pref.richer:
        note = (
            f"IMU lag behind the rotor signals estimated: {ms} (it predicts held-out segments better, t = {pref.t:.1f})"
        )
        return LagChoice(found, found, std, pref.t, note, None)
    why = "beyond what a flight controller's filters explain, " if not plausible else ""
    note = (
        f"IMU lag behind the rotor signals taken as 0: the search found {ms}, {why}but it does not predict held-out "
        f"segments of the flights better than no lag (t = {pref.t:.1f}); give --imu-delay if it is known"
    )
    near = abs(found) <= 2 * std  # within its own σ of none: the estimates barely differ
    return LagChoice(0.0, found, std, pref.t, note, None if decisive or near else found)
