"""IDIM-TLS `identify`: the stages in order, into a `Result`."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import numpy as np

from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.identified import with_vehicle
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
from rotorid.methods.regression import (
    one_blas_thread,
)
from rotorid.methods.tls.checks import AirChoice, Checked, air_force, checked, inertia_checked, with_labels
from rotorid.methods.tls.gains import coefficient_map
from rotorid.methods.tls.lags import solve_separated
from rotorid.methods.tls.notes import (
    MOCAP_YAW,
    assumed_of,
    coefficients,
    diagnostics,
    disturbance_diagnostics,
    estimates,
    floor_note,
    gain_report,
    imu_note,
    mocap_yaw_pair,
    nuisance_notes,
    observability_of,
    pose_note,
    recorded_settings,
    restored_note,
    voltage_notes,
    withhold_yaw_pair,
)
from rotorid.methods.tls.problem import Solution, TlsProblem
from rotorid.methods.tls.rows import yaw_moments
from rotorid.methods.tls.settings import BODY_DRAG, TlsSettings
from rotorid.methods.tls.solve import bias_of, imu_part
from rotorid.result import ACC_BIAS_KEY, Estimate, Observability, Result, build_result
from rotorid.vehicle import Vehicle


def _yaw_notes(
    settings: TlsSettings, kept_names: set[str], cfgs: list[str], active: np.ndarray, observability: dict[str, Any]
) -> list[str]:
    """The notes on what the yaw rows could not give: k_d from motion capture or from one
    configuration, and each configuration's yaw rows left out once k_d was cancelled (whose I_zz
    then rests on the roll/pitch rows' gyroscopic terms, said in `observability`)."""
    notes, single = [], len(cfgs) == 1
    if not mocap_yaw_pair(settings) and "k_d" in kept_names:
        notes.append("k_d, k_tau and I_zz are not reported from motion capture: " + MOCAP_YAW)
    if "k_d" not in kept_names and single:
        notes.append("k_d is not identifiable from one symmetric configuration (eq. 23): fly configuration B")
    for ci, c in enumerate(cfgs):
        if not active[6 * ci + 5]:
            suf = "" if single else f"@{c}"
            notes.append(f"yaw-moment rows{' of ' + c if suf else ''} left out once k_d was cancelled (no input left)")
            if f"I_zz{suf}" in kept_names:
                observability[f"I_zz{suf}"].source = "gyroscopic terms of the roll/pitch rows only"
    return notes


def _with_terms(
    sol: Solution, check: Checked, imu: np.ndarray, unseparated: bool, air: AirChoice | None = None
) -> tuple[Solution, np.ndarray, np.ndarray]:
    """`sol` with the checks' covariance (`check`) and the IMU's (`imu`, `solve.imu_part`: of the
    kept unknowns, then the gains') in its fit's and, with the rotors' gains, their coefficients'
    too (`Solution.gains`, through `coefficient_map`), so that these carry every term k_t carries;
    where the accelerometer bias is not separated from the thrust (`unseparated`), also its z
    offset's (a z bias b moves every rotor's coefficient by b/g of itself, as k_t's below).
    Where held-out segments give the unexplained in-plane force a height of its own (`air`,
    `checks.air_force`), the estimates and the coefficients moved by it. Returns also the IMU's
    covariance of the kept unknowns and of the coefficients (empty without the gains), for the
    assumed labels."""
    k = len(sol.kept)
    move = air.move if air is not None and air.kept == "height" else np.zeros(len(imu))
    sol = replace(sol, fit=replace(sol.fit, x=sol.fit.x + move[:k], cov=check.cov + imu[:k, :k]))
    if sol.gains is None or check.gains is None:
        return sol, imu[:k, :k], np.zeros((0, 0))
    to_coef = coefficient_map(sol.gains.used, k)
    sol = replace(sol, gains=replace(sol.gains, value=sol.gains.value + to_coef @ move))
    coef_imu = to_coef @ imu @ to_coef.T
    cov = check.gains + coef_imu
    if unseparated:
        cov = cov + np.outer(sol.gains.value, sol.gains.value) * (ACC_BIAS_Z_SIGMA / GRAVITY) ** 2
    return replace(sol, gains=replace(sol.gains, cov=cov)), imu[:k, :k], coef_imu


@one_blas_thread
def identify(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float] | None = None,
    weights: dict[str, float] | None = None,
    settings: TlsSettings | None = None,
) -> Result:
    """IDIM-TLS identification (Six et al.) of one or several mass configurations sharing
    the propeller coefficients (eq. 24-25). `configs` maps a configuration name ("A", "B",
    ...) to its flights; `masses` gives each configuration's measured mass (config A
    defaults to `vehicle.mass`), `weights` its row weight k_w (default 1)."""
    problem = TlsProblem.of(configs, vehicle, masses, weights, settings)
    sol, problem, unseparated, pose_lagged, imu_why, lag_choice, volt, volt_why, terms = solve_separated(problem)
    air = air_force(problem, sol)
    check = checked(problem, sol, lag_choice, terms, volt, air)
    # the IMU's assumed scale and axes (zeros when none is assumed)
    sol, imu, coef_imu = _with_terms(sol, check, imu_part(problem, sol), bool(unseparated), air)
    asked, settings, masses, cfgs = problem.settings, problem.model, problem.masses, list(problem.configs)
    rows, resolved, w, blocks, names = sol.rows, sol.resolved, sol.w, sol.blocks, sol.names
    fit, kept, scale, history, active, spread = (sol.fit, sol.kept, sol.scale, sol.history, sol.active, sol.spread)
    x, cov = np.zeros(len(names)), np.zeros((len(names), len(names)))
    x[kept] = fit.x
    cov[np.ix_(kept, kept)] = fit.cov
    kept_names = {names[j] for j in kept}
    est, inertia_notes = inertia_checked(estimates(x, cov, names, kept_names, masses, settings), masses)
    gain_notes = gain_report(sol, est)
    if unseparated and "k_t" in est:  # a z bias b moves k_t by b/g of itself (hover: k_t sum u^2 = m (g + b))
        kt, std = est["k_t"]
        est["k_t"] = (kt, float(np.hypot(std, kt * ACC_BIAS_Z_SIGMA / GRAVITY)))

    def own(term: np.ndarray) -> dict[str, tuple[float, float]]:  # an assumption's σ alone (`cov` stays the fit's)
        term_cov = np.zeros_like(cov)
        term_cov[np.ix_(kept, kept)] = term
        return estimates(x, term_cov, names, kept_names, masses, settings)

    imu_own = own(imu) | coefficients(sol, coef_imu)
    assumed = assumed_of(est, own(spread), imu_own, settings)
    observability = observability_of(names, fit, kept, history, cfgs, settings)
    for name in (*BODY_DRAG, *(("k_t",) if unseparated else ())):
        if name in est:  # its σ widened (k_t) or its column a remainder (the body drag): the reported %σ
            observability[name].rel_std_pct = Estimate(*est[name]).rel_std_pct
    if "k_tau" in est:
        value, std = est["k_tau"]
        observability["k_tau"] = Observability(True, essential=False, rel_std_pct=Estimate(value, std).rel_std_pct)
    with_labels(observability, check.model_dependent)  # the verdict says model-dependent first, then what σ assumes
    if not mocap_yaw_pair(settings):
        withhold_yaw_pair(est, observability, [names[j] for j in kept], cfgs)
    acc_bias = bias_of(sol, masses)
    diag: dict[str, Any] = {"configs": diagnostics(w, blocks, x, rows, scale), "history": history}
    diag |= {"names": names, "chi": x, "cov": cov, "cond": fit.cond, "sigma_w": float(np.sqrt(fit.sigma2))}
    diag |= ({"acc_bias": acc_bias} if acc_bias else {}) | disturbance_diagnostics(sol.disturbance)
    notes = ["I_* and ms_* are about the body origin O_d (Six et al. eq. 1-2); com_* = ms/m", *gain_notes]
    notes += check.notes + inertia_notes + [c.note for c in (lag_choice, *terms) if c]
    notes += imu_note(est, imu_own, settings)
    logged = any(f.vbat is not None for fs in problem.configs.values() for f in fs)
    notes += voltage_notes(est, observability, volt, volt_why, logged)
    if unseparated:
        notes.append(unseparated)
        assumed["k_t"] = "; ".join(filter(None, (assumed.get("k_t"), unseparated)))
    mean_bias = {c: np.mean(b[np.unique(rows[c].piece)], axis=0) for c, b in acc_bias.items()}
    notes += nuisance_notes(rows, mean_bias, yaw_moments(rows, x), asked.rotor_drag and not problem.posed)
    notes += floor_note(sol, [names[j] for j in kept], settings, resolved) + restored_note(sol.restored, settings)
    if asked.mocap_delay is None and (settings.source == "mocap" or settings.rotor_drag or settings.rotor_inflow):
        notes.append(pose_note(pose_lagged, settings, imu_why))
    single = len(cfgs) == 1
    notes += _yaw_notes(settings, kept_names, cfgs, active, observability)
    settings_out = recorded_settings(resolved, rows, masses, problem.weights, [names[j] for j in kept], active)
    settings_out["rotor_gains"] = sol.gains is not None  # estimated, or not separated (notes)
    settings_out["voltage_model"] = asdict(volt.model) if volt and volt.kept else None
    if mean_bias:  # validation removes it from the held-out specific force alike
        settings_out[ACC_BIAS_KEY] = {c: b.tolist() for c, b in mean_bias.items()}
    result = build_result("tls", est, settings_out, diag, observability, notes)
    for name, why in assumed.items():
        if name in result.params:
            result.params[name] = replace(result.params[name], assumption=why)
    unit = {"linear": "N s/m", "quadratic": "N s^2/m^2"}.get(settings.body_drag, "")
    result.params.update({n: replace(e, unit=unit) for n, e in result.params.items() if n in BODY_DRAG})
    return with_vehicle(result, vehicle, config=None if single else cfgs[0])
