"""The estimator's passes over a flight: the gyro bias removed, one run, and with the KF the
fixed-point re-runs whose process model is held at the previous run's final θ1."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.flight import Flight
from rotorid.methods.online.bias import GyroBias, gyro_bias
from rotorid.methods.online.estimator import KfModel, OnlineEstimator
from rotorid.methods.online.noise import (
    NoiseDensities,
    acc_noise_density,
    band_density,
    band_limited,
    in_band,
    lowpass_cutoff,
)
from rotorid.methods.online.settings import THETA1, OnlineSettings
from rotorid.methods.online.solve import FinalFit, final_std
from rotorid.vehicle import Vehicle

#: `identify`'s fixed-point passes (`OnlineSettings.fixed_point`) stop once no moment of inertia
#: moves by more than this share of its σ, or after `FIXED_POINT_PASSES` runs of the estimator.
FIXED_POINT_TOL = 0.1
FIXED_POINT_PASSES = 5


@dataclass(frozen=True)
class OnlineProblem:
    """What `identify` was given: one flight, the vehicle and the user's settings, never replaced
    (what the passes derive lives in `Prepared` and `Stream`)."""

    flight: Flight
    vehicle: Vehicle
    settings: OnlineSettings


@dataclass(frozen=True)
class Prepared:
    """What `prepare` derives before the estimator runs: the gyro bias tracked against the
    attitude (`gyro_bias`; None when `OnlineSettings.gyro_bias` is off or the flight has no
    attitude), the sensors' noise densities (from the raw flight; with the low-pass, those of
    what passes it, `noise.band_density`, times the share of a white noise it leaves in a step,
    `noise.in_band`), the flight the estimator sees (its gyro
    less that bias, band-limited at `lowpass_hz`, `noise.band_limited`) and that cut-off (None:
    none)."""

    bias: GyroBias | None
    noise: NoiseDensities
    flight: Flight
    lowpass_hz: float | None


class Stream(NamedTuple):
    """The estimator's last run over the flight: the estimator, its trajectories
    (`OnlineEstimator.run`), its final values and σ (`final_std`) and how many runs it took."""

    estimator: OnlineEstimator
    trajectories: dict[str, np.ndarray]
    final: FinalFit
    runs: int


def prepare(problem: OnlineProblem) -> Prepared:
    """Check the flight and derive the estimator's input (`Prepared`). A stuck motor
    (`motion.stuck_motors`, the check `rotorid.runs` makes) is an `ExcitationError`."""
    from rotorid.motion import stuck_motors  # scipy.signal: kept out of the streaming estimator's import

    flight, settings = problem.flight, problem.settings
    OnlineEstimator(problem.vehicle, settings).check(flight)
    stuck = stuck_motors([flight])
    if stuck:
        raise ExcitationError(f"{flight.source}: {stuck}; give a flight where the motors respond")
    bias = gyro_bias(flight) if settings.gyro_bias else None
    noise = NoiseDensities(acc_noise_density(flight.acc, flight.t), acc_noise_density(flight.gyro, flight.t))
    seen = flight if bias is None else flight.replace(gyro=flight.gyro - bias.series)
    cut = lowpass_cutoff(settings.lowpass_hz, settings.rate_hz, flight.rate) if settings.variant == "kwon" else None
    if cut is None:
        return Prepared(bias, noise, seen, None)
    step = 1.0 / (settings.rate_hz or flight.rate)
    seen = band_limited(seen, cut)
    share = in_band(flight.rate, cut, step)
    band = [band_density(x, flight.rate, cut, step) * share for x in (seen.acc, seen.gyro)]
    return Prepared(bias, NoiseDensities(*band), seen, cut)


def fixed_point(problem: OnlineProblem, prepared: Prepared, first: Stream) -> Stream:
    """Re-run the estimator with its KF's process model held at the previous run's final θ1
    (`KfModel`) until the MOI settle (`FIXED_POINT_TOL`), from the first run `first`; returns
    the last run (`Stream`).

    The KF's α̂ follows the gyro below its bandwidth and its model M/Ĵ above it, so each RLS row
    regresses M partly on M/Ĵ_t with the running Ĵ_t of its step: the estimate is pulled toward
    the running estimate, which starts at j0. Holding the KF at the final θ1 and
    iterating is the off-line form of such a pseudo-linear regression, whose regressors depend on
    the estimate (Ljung & Söderström 1983, *Theory and Practice of Recursive Identification*,
    pseudo-linear regressions): its fixed point does not depend on the initial guess. σ then
    needs the regressor's dependence on the held θ1 (`final_theta1_eiv`, `dalpha`)."""
    est, tr, final, run = first
    while run < FIXED_POINT_PASSES:
        run += 1
        th = [final.params[name].value for name in THETA1]
        th.append(final.params["yaw_moment"].value if "yaw_moment" in final.params else 0.0)
        model = KfModel(tuple(th), tuple(est.s1), est.theta1_scale)
        est = OnlineEstimator(problem.vehicle, problem.settings, model)
        tr = est.run(prepared.flight)
        new = final_std(est, prepared.noise)
        step = [
            (abs(new.params[n].value - final.params[n].value), new.params[n].std) for n in THETA1[:3] if new.informed[n]
        ]
        moved = [d / sd if sd > 0 else (0.0 if d == 0 else math.inf) for d, sd in step]
        final = new
        if not moved or max(moved) < FIXED_POINT_TOL:
            break
    return Stream(est, tr, final, run)


def stream(problem: OnlineProblem, prepared: Prepared) -> Stream:
    """The estimator run over the prepared flight (`prepare`), with its `final_std` (with the
    accelerometer's and the gyro's noise densities), re-run to its fixed point (`fixed_point`)
    when `OnlineSettings.fixed_point` and the KF. A flight that never enables the RLS is an
    `ExcitationError`."""
    settings, flight = problem.settings, prepared.flight
    est = OnlineEstimator(problem.vehicle, settings)
    tr = est.run(flight)
    if not est.enabled:
        raise ExcitationError(
            f"{flight.source}: estimator never enabled — the low-pass-filtered vertical acceleration never "
            f"exceeded a_z_allow={settings.a_z_allow} m/s² (t={flight.t[0]:.3f}–{flight.t[-1]:.3f} s); "
            "give a log that includes the take-off"
        )
    first = Stream(est, tr, final_std(est, prepared.noise), 1)
    if settings.fixed_point and settings.variant == "kwon":
        return fixed_point(problem, prepared, first)
    return first
