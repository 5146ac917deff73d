"""The estimator's passes over a flight: the gyro bias removed, one run, and with the KF the
fixed-point re-runs whose process model is held at the previous run's final θ1."""

from __future__ import annotations

import math

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.flight import Flight
from rotorid.methods.online.bias import gyro_bias
from rotorid.methods.online.estimator import KfModel, OnlineEstimator
from rotorid.methods.online.noise import acc_noise_density
from rotorid.methods.online.settings import THETA1, OnlineSettings
from rotorid.methods.online.solve import final_std
from rotorid.vehicle import Vehicle

#: `identify`'s fixed-point passes (`OnlineSettings.fixed_point`) stop once no moment of inertia
#: moves by more than this share of its σ, or after `FIXED_POINT_PASSES` runs of the estimator.
FIXED_POINT_TOL = 0.1
FIXED_POINT_PASSES = 5


def fixed_point(
    flight: Flight, vehicle: Vehicle, settings: OnlineSettings, est: OnlineEstimator, nd2: tuple
) -> tuple[OnlineEstimator, dict[str, np.ndarray], tuple, int]:
    """Re-run the estimator with its KF's process model held at the previous run's final θ1
    (`KfModel`) until the MOI settle (`FIXED_POINT_TOL`); returns the last estimator, its
    trajectories, its `final_std` and the number of runs.

    The KF's α̂ follows the gyro below its bandwidth and its model M/Ĵ above it, so each RLS row
    regresses M partly on M/Ĵ_t with the running Ĵ_t of its step: the estimate is pulled toward
    the running estimate, which starts at j0 (1 g m² against 50-60). On a noise-free kwon-payload
    flight that leaves I_xx, I_yy +0.66 % and I_zz -0.16 %; with j0 at the truth < 0.001 %, and
    the raw gyro (variant "rls") -0.001 %. Holding the KF at the final θ1 and
    iterating is the off-line form of such a pseudo-linear regression, whose regressors depend on
    the estimate (Ljung & Söderström 1983, *Theory and Practice of Recursive Identification*,
    pseudo-linear regressions): its fixed point does not depend on the initial guess (noise-free:
    +0.001, +0.001, -0.001 % from j0 = 1 g m² and from the truth alike), and the scatter of I_xx,
    I_yy, I_zz over 30 seeds falls from 0.47, 0.41, 0.87 % to 0.24, 0.28, 0.78 % (3 runs). σ then
    needs the regressor's dependence on the held θ1 (`final_theta1_eiv`, `dalpha`)."""
    final = final_std(est, *nd2)
    tr = None
    run = 1
    while run < FIXED_POINT_PASSES:
        run += 1
        th = [final[0][name][0] for name in THETA1] + [final[0].get("yaw_moment", (0.0,))[0]]
        model = KfModel(tuple(th), tuple(est.s1), est._scale(est._chi1))
        est = OnlineEstimator(vehicle, settings, model)
        tr = est.run(flight)
        new = final_std(est, *nd2)
        step = [(abs(new[0][n][0] - final[0][n][0]), new[0][n][1]) for n in THETA1[:3] if new[1][n]]
        moved = [d / sd if sd > 0 else (0.0 if d == 0 else math.inf) for d, sd in step]
        final = new
        if not moved or max(moved) < FIXED_POINT_TOL:
            break
    return est, tr, final, run


def stream(
    flight: Flight, vehicle: Vehicle, settings: OnlineSettings
) -> tuple[OnlineEstimator, dict[str, np.ndarray], np.ndarray | None, tuple, int]:
    """The estimator run over the flight (its gyro bias removed, `gyro_bias`): the estimator, its
    trajectories, the bias, its `final_std` (with the accelerometer's and the gyro's noise
    densities) and the number of runs (`fixed_point` when `OnlineSettings.fixed_point` and the
    KF). A stuck motor (`motion.stuck_motors`, the check `rotorid.runs` makes) or a flight that
    never enables the RLS is an `ExcitationError`."""
    from rotorid.motion import stuck_motors  # scipy.signal: kept out of the streaming estimator's import

    est = OnlineEstimator(vehicle, settings)
    est.check(flight)
    stuck = stuck_motors([flight])
    if stuck:
        raise ExcitationError(f"{flight.source}: {stuck}; give a flight where the motors respond")
    bias = gyro_bias(flight) if settings.gyro_bias else None
    nd2 = (acc_noise_density(flight.acc, flight.t), acc_noise_density(flight.gyro, flight.t))
    flight = flight if bias is None else flight.replace(gyro=flight.gyro - bias.series)
    tr = est.run(flight)
    if not est.enabled:
        raise ExcitationError(
            f"{flight.source}: estimator never enabled — the low-pass-filtered vertical acceleration never "
            f"exceeded a_z_allow={settings.a_z_allow} m/s² (t={flight.t[0]:.3f}–{flight.t[-1]:.3f} s); "
            "give a log that includes the take-off"
        )
    if settings.fixed_point and settings.variant == "kwon":
        est, tr2, final, runs = fixed_point(flight, vehicle, settings, est, nd2)
        return est, tr if tr2 is None else tr2, bias, final, runs
    return est, tr, bias, final_std(est, *nd2), 1
