"""The delays between the signals (`TlsSettings.imu_delay`, `TlsSettings.mocap_delay`) found from
the flights, and the solve with them (and without the accelerometer bias where it is not separable)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rotorid.errors import RotoridError
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
from rotorid.methods.regression import (
    compress,
)
from rotorid.methods.tls.problem import Solution, TlsProblem, build_system
from rotorid.methods.tls.rows import posed
from rotorid.methods.tls.selection import weighted_fit
from rotorid.methods.tls.settings import MAX_IMU_DELAY
from rotorid.methods.tls.solve import ACC_BIAS_PLAUSIBLE, bias_of, solve
from rotorid.motion import (
    airborne_pieces,
    pose_lag,
)


class Separated(NamedTuple):
    """What `solve_separated` found: the solution, the problem with what was found from the flights
    (`TlsProblem.derived`), why the accelerometer bias was left out ("" when separated), the
    pose's lag behind the IMU where it was measured (`_pose_lag`, None otherwise) and why the
    IMU's lag could not be estimated ("" when it was, `_imu_lag`)."""

    solution: Solution
    problem: TlsProblem
    unseparated: str
    pose_lag: float | None
    imu_why: str


def solve_separated(problem: TlsProblem) -> Separated:
    """`solve`; when the accelerometer bias it estimates is beyond any sensor offset
    (`ACC_BIAS_PLAUSIBLE`), the flights do not separate it from the thrust: solved again with
    the paper's model, and the reason in words for k_t's assumption. An `imu_delay` of None is
    estimated first (`_imu_lag`), a `mocap_delay` of None measured (`_pose_lag`); the rotor drag
    is left out when a flight has no attitude or no position or velocity. What is found goes
    into the problem's `derived` record, the settings asked stay as they are."""
    asked = problem.settings
    if asked.rotor_drag and not all(posed(f) for fs in problem.configs.values() for f in fs):
        problem = problem.derive(rotor_drag=False)
    lag = _pose_lag(problem) if asked.mocap_delay is None else None
    if asked.mocap_delay is None:
        problem = problem.derive(mocap_delay=lag or 0.0)  # behind the IMU; + its own lag below
    imu_why = ""
    if asked.imu_delay is None:
        imu_lag, imu_why = _imu_lag(problem, lag)
        problem = problem.derive(imu_delay=imu_lag)
    if lag is not None:  # the pose timed against the IMU, the IMU against the rotor signals
        problem = problem.derive(mocap_delay=lag + problem.model.imu_delay)
    sol = solve(problem)
    if not problem.model.centred:
        return Separated(sol, problem, "", lag, imu_why)
    worst = max(float(np.abs(b).max()) for b in bias_of(sol, problem.masses).values())
    if worst <= ACC_BIAS_PLAUSIBLE:
        return Separated(sol, problem, "", lag, imu_why)
    problem = problem.derive(acc_bias=False)
    why = (
        f"the accelerometer bias is not separable from the thrust in these flights (it came out "
        f"{worst:.2g} m/s², no sensor offset): solved without it, k_t assumes zero bias "
        f"± {ACC_BIAS_Z_SIGMA:g} m/s² (1σ); fly thrust changes to measure it"
    )
    return Separated(solve(problem), problem, why, lag, imu_why)


def _imu_lag(problem: TlsProblem, lag: float | None) -> tuple[float, str]:
    """The IMU's lag behind the rotor signals (`estimate_imu_delay`) and, when it could not be
    found, why ("" otherwise). The motion-capture source needs it only when its pose was timed
    against the IMU (`lag`, `_pose_lag`): the pose then lags the rotor signals by `lag` plus
    this, found by the IMU-source model of the same flights (on the mismatch flights, IMU 4 ms
    and pose 8 ms late, `lag` alone is 4 ms and left com_z -4.8σ̄); 0 otherwise, or where the
    flights do not carry that model (the reason then goes into the pose's note, `pose_note`)."""
    if problem.model.source == "imu":
        return estimate_imu_delay(problem, lag is not None), ""
    if lag is None:
        return 0.0, ""
    try:  # its own memo: the motion columns of the other source
        return estimate_imu_delay(problem.trial(memo={}, source="imu"), True), ""
    except RotoridError as e:
        return 0.0, str(e)


def _pose_lag(problem: TlsProblem) -> float | None:
    """The logged pose's lag behind the IMU (`motion.pose_lag`), the mean over every airborne
    piece weighted by its length; None where no piece logs both (or the pose is not used)."""
    settings = problem.model
    if settings.source == "imu" and not settings.rotor_drag:
        return None
    lags, spans = [], []
    for p in (p for fs in problem.configs.values() for f in fs for p in airborne_pieces(f)):
        d = pose_lag(p, problem.vehicle, settings.motion)
        if d is not None:
            lags.append(d)
            spans.append(p.t[-1] - p.t[0])
    return float(np.average(lags, weights=spans)) if lags else None


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
    from scipy.optimize import minimize_scalar

    trial = problem.trial(motor_spread=0.0).derive(imu_delay=0.0)
    st = trial.model
    sol = solve(trial)
    act, kept, bias0 = sol.active, sol.kept, sol.bias0
    del sol  # its system, the size of the one each cost builds

    def cost(tau: float) -> float:  # a measured pose lag (behind the IMU) moves with the IMU's
        lagged = trial.derive(imu_delay=tau, mocap_delay=st.mocap_delay + (tau if pose_measured else 0.0))
        system = build_system(lagged, bias0 if st.nuisance else None)
        w, blocks = system.w, system.blocks
        del system  # its rows: only W_t is fitted
        wc, bc, counts = compress(w, blocks)
        sel = act[bc]
        fit, _ = weighted_fit(wc[sel][:, [*kept, w.shape[1] - 1]], bc[sel], counts * act, problem.base, st)
        res = w[:, [*kept, w.shape[1] - 1]] @ np.append(fit.x, 1.0)
        ss = np.bincount(blocks, weights=res**2, minlength=len(counts))
        n = counts[act]
        return float(np.sum(n * np.log(ss[act] / n)) / 2)

    grid = np.linspace(-MAX_IMU_DELAY, MAX_IMU_DELAY, 11)
    best = grid[int(np.argmin([cost(tau) for tau in grid]))]
    h = grid[1] - grid[0]
    bounds = (max(best - h, -MAX_IMU_DELAY), min(best + h, MAX_IMU_DELAY))
    found = minimize_scalar(cost, bounds=bounds, method="bounded", options={"xatol": 1e-4})
    return float(found.x)
