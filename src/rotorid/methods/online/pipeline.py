"""`identify`: the estimator over a whole flight (`passes.stream`), its final values and σ as a
`Result` with observability, notes and the assumptions each σ rests on."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rotorid.flight import Flight
from rotorid.identified import with_vehicle
from rotorid.methods.online.passes import OnlineProblem, Prepared, Stream, prepare, stream
from rotorid.methods.online.settings import THETA1, OnlineSettings
from rotorid.methods.online.solve import fit_series
from rotorid.result import Estimate, Observability, Result, build_result, rel_error_pct, unit_of
from rotorid.vehicle import Vehicle

#: What an assumed parameter rests on (`Estimate.assumption`), by the settings it comes from.
_SPREAD_WHY = (
    "one thrust coefficient for all rotors, their spread assumed {:.0%} (1σ, motor_spread): in hover a "
    "rotor stronger by ε_i moves the apparent CoM by Σ ε_i r_i / n"
)
_BIAS_WHY = "accelerometer z bias 0 ± {:g} m/s² (acc_bias_z_sigma): m = F/a moves by -m b/g; give a calibrated bias"


def _observability(
    params: dict[str, Estimate], frac: np.ndarray, informed: dict[str, bool]
) -> tuple[dict[str, Observability], list[str]]:
    """Per-parameter observability (MOI columns by their active fraction and σ, imu_z by its σ)
    and the parameters the flight never updated, which are not reported."""
    observability: dict[str, Observability] = {}
    for k, name in enumerate(THETA1[:3]):
        ok = bool(frac[k] > 0.005) and params[name].rel_std_pct < 10.0
        observability[name] = Observability(
            ok,
            rel_std_pct=params[name].rel_std_pct,
            active_fraction=float(frac[k]),
            reason="corrected while excited" if ok else f"body {'xyz'[k]} rate rarely above its KF σ",
            advice="" if ok else f"fly more rotation about body {'xyz'[k]}",
        )
    pz = params["imu_z"]
    if pz.rel_std_pct > 30.0:
        observability["imu_z"] = Observability(
            False,
            rel_std_pct=pz.rel_std_pct,
            reason="IMU height barely excited (needs simultaneous roll and pitch accelerations)",
            advice="fly faster roll and pitch motion",
        )
    never = [name for name in params if not informed[name]]
    for name in never:
        observability[name] = Observability(
            False,
            reason="never updated: the flight gave it less information than the initial guess's own "
            "variance, so the value would be that guess"
            + (
                f" (its column was active on {100 * frac[THETA1.index(name)]:.1f} % of the steps)"
                if name in THETA1[:3]
                else ""
            ),
            advice="fly motion that excites it (rotation about that axis for a moment of inertia)",
        )
    return observability, never


def identify(
    flight: Flight,
    vehicle: Vehicle,
    settings: OnlineSettings | None = None,
    truth: dict[str, float] | None = None,
) -> Result:
    """Run the online estimator over a flight and return its final estimates (Kwon et al.
    Tables 8–10: I_xx, I_yy, I_zz, com_x, com_y, mass, imu_z with std from the RLS covariances)
    and the trajectories in `result.diagnostics`. With `truth` (canonical name -> value, e.g.
    `scenario.truth.params`) the notes list each final value against it."""
    problem = OnlineProblem(flight, vehicle, settings or OnlineSettings())
    settings = problem.settings
    prepared = prepare(problem)
    run = stream(problem, prepared)
    est, tr, final = run.estimator, run.trajectories, run.final.params
    # the yaw moment is a nuisance term, not a vehicle parameter: said in the notes
    params_final = {name: p for name, p in final.items() if name != "yaw_moment"}
    estimates = {name: (float(v), math.sqrt(sd * sd + va)) for name, (v, sd, va) in params_final.items()}
    params = {name: Estimate(v, sd) for name, (v, sd) in estimates.items()}
    en = tr["enabled"]
    frac = tr["active"][en].mean(axis=0) if settings.variant == "kwon" else np.ones(3)
    observability, never = _observability(params, frac, run.final.informed)
    for name in never:
        del estimates[name]
    diagnostics: dict[str, Any] = dict(tr)
    diagnostics.update(fit_series(est, run.final))
    if flight.gyro_dot is not None:
        diagnostics["alpha_true"] = flight.gyro_dot
    intervals = flight.meta.get("sim", {}).get("intervals") if isinstance(flight.meta.get("sim"), dict) else None
    if intervals:
        diagnostics["intervals"] = intervals
    notes = _notes(problem, prepared, run, frac, never)
    if truth:
        diagnostics["truth"] = dict(truth)
        notes += [
            f"{name}: {v:.6g} / true {truth[name]:.6g} {unit_of(name)} ({rel_error_pct(v, truth[name]):+.2f} %)"
            for name, (v, _) in estimates.items()
            if name in truth and truth[name] != 0
        ]
    settings_out = {
        **dataclasses.asdict(settings),
        **est.motor_settings(),
        "log_rate_hz": flight.rate,
        "lowpass_hz_used": prepared.lowpass_hz,
        "runs": run.runs,
    }
    result = build_result("online", estimates, settings_out, diagnostics, observability, notes)
    for name, (_, sd, va) in params_final.items():
        if name in result.params and va > sd * sd:  # the σ is mostly the assumption's
            why = _BIAS_WHY.format(settings.acc_bias_z_sigma) if name in ("mass", "imu_z") else _SPREAD_WHY
            result.params[name] = dataclasses.replace(result.params[name], assumption=why.format(settings.motor_spread))
    return with_vehicle(result, vehicle)


def _notes(problem: OnlineProblem, prepared: Prepared, run: Stream, frac: np.ndarray, never: list[str]) -> list[str]:
    """`identify`'s notes: when the estimator enabled and how often it ran, what was not reported,
    the gyro bias removed, the constant yaw moment, what σ is and the correction law's activity."""
    settings, bias, en = problem.settings, prepared.bias, run.trajectories["enabled"]
    notes = [
        f"variant {settings.variant}: estimator enabled at t={run.estimator.t_enabled:.3f} s "
        f"({100 * en.mean():.1f}% of the log)"
        + (
            f"; run {run.runs} times, the KF's model held at the previous run's θ1 (fixed point)"
            if run.runs > 1
            else ""
        ),
        "imu_z is the IMU height above the CoM plus com_z of the vehicle (0 if unknown)",
    ]
    if prepared.lowpass_hz is not None:
        notes.append(
            f"gyro, accelerometer and motor signals low-passed alike at {prepared.lowpass_hz:.3g} Hz (zero phase) "
            "before the estimator: what no moment or force explains above it (frame vibration) stays out of α̂"
        )
    if never:
        notes.append(f"not reported (never updated by the flight, see observability): {', '.join(never)}")
    if bias is not None:
        notes.append(
            "gyro bias tracked against the logged attitude (time constants "
            + ", ".join(f"{a} {v:.3g}" for a, v in zip("xyz", bias.tau, strict=True))
            + f" s from its Allan "
            f"variance, gyro lag {1e3 * bias.lag:+.2f} ms) and removed; mean "
            + ", ".join(f"{a} {math.degrees(b):+.3f}" for a, b in zip("xyz", bias.series.mean(axis=0), strict=True))
            + " deg/s"
        )
    yaw = run.final.params.get("yaw_moment")
    if yaw is not None:
        notes.append(f"constant yaw moment (rotor spread times k_tau, yaw trim): {yaw.value:+.4g} ± {yaw.std:.2g} N m")
    notes.append(
        "σ is the HAC sandwich of the RLS over the whole flight (equal-weighted cosine long-run variance): "
        "the RLS rows share the Kalman-filtered rate and are correlated in time; it gives back what the fit "
        "takes from its own residuals where a parameter's information comes in bursts (its leverage)"
        + (
            "; mass and imu_z are corrected for the accelerometer noise in their regressor (errors in variables)"
            if settings.eiv and settings.variant != "rls-lpf"
            else ""
        )
    )
    if settings.variant == "kwon":
        notes.append(
            "correction law: MOI columns active on "
            + ", ".join(f"{'xyz'[k]} {100 * frac[k]:.0f}%" for k in range(3))
            + " of the enabled samples"
        )
    return notes
