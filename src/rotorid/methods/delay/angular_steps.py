"""Steps 3 and 4 of the identification: roll/pitch inertia, I_zz, K_tau and the checks on the yaw flight."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.flight import Flight
from rotorid.methods.delay.angular import Angular, angular_columns
from rotorid.methods.delay.collected import Collected
from rotorid.methods.delay.inertia import (
    EIV_ADVICE,
    RollPitch,
    eiv_bracket,
    gyro_coupling,
    inertia_grad,
    inertia_sigma,
    predict_scores,
    roll_pitch_inertia,
)
from rotorid.methods.delay.problem import DelayProblem
from rotorid.methods.delay.settings import INERTIA_PARAMS, DelaySettings
from rotorid.methods.delay.uncertainty import ThrustUncertainty
from rotorid.methods.delay.yaw import fit_k_tau, joint_estimate
from rotorid.result import Observability
from rotorid.util import subsample
from rotorid.vehicle import Vehicle


def roll_pitch_step(problem: DelayProblem, ident: Vehicle, unc: ThrustUncertainty, out: Collected) -> RollPitch:
    """Step 3: I_xx, I_yy by the chosen parameterization (eq. 80-82), σ with the thrust
    parameters' uncertainty propagated (`inertia_sigma`); returns `roll_pitch_inertia`'s fits
    and choice with what the yaw step needs for its σ (∂I/∂θ, the flights' lengths)."""
    roll_pitch, st = problem.roll_pitch, problem.settings
    ang = angular_columns(roll_pitch, ident, unc.pair, st, "roll/pitch", unc.thrust_derivs, problem.voltage)
    with _naming(roll_pitch, "fly roll and pitch doublets in that window"):
        fitted = roll_pitch_inertia(ang, st)
    chosen, fits = fitted.chosen, fitted.fits
    out.settings["inertia_param_chosen"] = chosen
    ixx, iyy = (fits[chosen][k][0] for k in (0, 1))
    cpl = gyro_coupling(ixx, iyy, st.izz_ratio[0] * 0.5 * (ixx + iyy)) * st.gyroscopic
    eiv = [
        eiv_bracket(ang.acc[:, k], ang.tau[:, k] - cpl[k] * ang.prec[:, k], fits[chosen][k][0], "torque")
        for k in (0, 1)
    ]
    rp = RollPitch(
        inertia=fitted,
        grad=inertia_grad(ang, chosen, cpl),
        lengths=[len(r["t"]) for r in ang.raw],
        theta_cov=unc.cov,
        eiv_var=np.array([e.std**2 for e in eiv]),
    )
    for k, nm in enumerate(("I_xx", "I_yy")):
        v = fits[chosen][k][0]
        s = inertia_sigma(rp, np.eye(2)[k], st)
        out.put(nm, v, s)
        out.obs[nm] = Observability(eiv[k].identified, rel_std_pct=100 * s / v, reason=eiv[k].reason)
        if not eiv[k].identified:
            out.obs[nm].advice = EIV_ADVICE
    out.notes.append(
        "Roll/pitch inertia by parameterization (I_xx, I_yy; held-out R² of the angular-rate change over "
        f"{1e3 * st.pred_horizon:g} ms): "
        + "; ".join(
            f"{h}: {fits[h][0][0]:.4g}, {fits[h][1][0]:.4g} kg m² (R² {fitted.holdout_r2[h]:.3f})"
            for h in INERTIA_PARAMS
        )
        + f". Chosen: {chosen}"
        + (" (best held-out prediction)." if st.inertia_param == "auto" else " (requested).")
    )
    sub = subsample(len(ang.acc))
    out.diag.update(
        rp_t=np.concatenate([r["t"] for r in ang.raw])[sub],
        rp_acc=ang.acc[sub, :2],
        rp_tau=ang.tau[sub, :2],
        rp_fits={h: [v for v, _ in fits[h]] for h in INERTIA_PARAMS},
        rp_holdout_r2=fitted.holdout_r2,
        rp_chosen=chosen,
    )
    return rp


def yaw_step(problem: DelayProblem, ident: Vehicle, unc: ThrustUncertainty, rp: RollPitch, out: Collected) -> None:
    """Step 4: I_zz from the assumed ratio (eq. 93-94) and, with a yaw flight, K_tau by eq. 95-96
    scaled by it; their σ carry the ratio's own spread and both are marked assumed. The joint
    estimate (eq. 73-76) is reported as a check, not used: where the yaw flight precesses
    enough to ground I_zz, it is still a direct parameterization (torque regressed on angular
    acceleration), biased low by the noise in the angular acceleration. The
    roll/pitch model is cross-validated on the yaw flight."""
    yaw, st = problem.yaw, problem.settings
    c, c_sd = st.izz_ratio
    ixx, iyy = out.est["I_xx"][0], out.est["I_yy"][0]
    izz = c * 0.5 * (ixx + iyy)
    izz_std = math.hypot(0.5 * (ixx + iyy) * c_sd, 0.5 * c * inertia_sigma(rp, np.ones(2), st))
    ratio = f"the assumed yaw-inertia ratio C_xy->z = {c:g} ± {c_sd:.2g}"
    out.put("I_zz", izz, izz_std)
    out.assumed["I_zz"] = f"I_zz = C (I_xx + I_yy)/2 with {ratio} (Eschmann eq. 93-94)"
    missing = [k for k in ("I_xx", "I_yy") if not out.obs[k].identifiable]
    out.obs["I_zz"] = Observability(
        not missing,
        rel_std_pct=100 * izz_std / izz,
        reason=f"from I_zz = {c:g} (I_xx + I_yy)/2 (eq. 93-94), not measured"
        + (f"; rests on {' and '.join(missing)}, which the flights do not identify" if missing else ""),
    )
    if not yaw:
        out.notes.append("No yaw flight: K_tau was not identified.")
        return
    ang_y = angular_columns(yaw, ident, unc.pair, st, "yaw", unc.thrust_derivs, problem.voltage)
    with _naming(yaw, "fly yaw doublets in that window"):
        yfit = fit_k_tau(ang_y, (ixx, iyy), rp, st)
    ktau, ktau_std = yfit.k_tau, yfit.std
    out.put("k_tau", ktau, ktau_std)
    out.assumed["k_tau"] = f"the yaw flight measures I_zz / K_tau only (eq. 95-96); scaled by I_zz from {ratio}"
    eiv_words, eiv_ok = yfit.eiv.reason, yfit.eiv.identified
    out.obs["k_tau"] = Observability(
        eiv_ok and not missing,
        rel_std_pct=100 * ktau_std / abs(ktau),
        reason=f"scale set by the assumed I_zz ratio (eq. 93); {eiv_words}"
        + (f"; rests on {' and '.join(missing)}, which the flights do not identify" if missing else ""),
    )
    if not eiv_ok:
        out.obs["k_tau"].advice = "fly sharper yaw doublets (larger yaw command steps)"
    sub = subsample(len(ang_y.drag))
    out.diag.update(
        yaw_t=np.concatenate([r["t"] for r in ang_y.raw])[sub],
        yaw_drag=ang_y.drag[sub],
        yaw_lhs=yfit.lhs[sub],
        yaw_r2=yfit.r2,
        k_tau=ktau,
        yaw_cond=yfit.cond,
    )
    _joint_note(ang_y, rp, st, out)
    _cross_validate(ang_y, rp, st, out)


def _joint_note(ang_y: Angular, rp: RollPitch, st: DelaySettings, out: Collected) -> None:
    """The joint estimate (eq. 73-76) as a diagnostic and a note."""
    joint = joint_estimate(ang_y, st, rp.theta_cov)
    out.diag["joint"] = joint
    c, c_sd = st.izz_ratio
    if joint["grounded"]:
        out.notes.append(
            f"Joint estimate (eq. 73-76, precession grounds I_zz): I_xx {joint['x'][0]:.4g}, I_yy "
            f"{joint['x'][1]:.4g}, I_zz {joint['x'][2]:.4g} kg m² (%σ {joint['rel_std_pct'][2]:.2g}), "
            f"K_tau {joint['x'][3]:.4g} m; condition number {joint['cond']:.3g}. A check on C = {c:g} ± {c_sd:.2g}, "
            "not used: this direct fit is biased low by noise in the angular acceleration."
        )
    else:
        out.notes.append(
            f"Joint estimate (eq. 73-76) not usable: the yaw flight has too little precession to ground "
            f"I_zz (%σ {joint['rel_std_pct'][2]:.3g}, condition number {joint['cond']:.3g}); "
            f"I_zz uses C = {c:g} ± {c_sd:.2g} instead (Sec. III-A1; σ from the spread of Table II)."
        )


def _cross_validate(ang_y: Angular, rp: RollPitch, st: DelaySettings, out: Collected) -> None:
    """Cross-validation of every roll/pitch model on the yaw flight(s)."""
    xval = {}
    for h in INERTIA_PARAMS:
        ixx, iyy = (v for v, _ in rp.inertia.fits[h])
        xval[h] = predict_scores(ang_y, (ixx, iyy, st.izz_ratio[0] * 0.5 * (ixx + iyy)), st)
    out.diag["xval"] = xval
    chosen = rp.inertia.chosen
    c = xval[chosen]
    out.notes.append(
        f"Cross-validation on the yaw flight(s): the roll/pitch model ({chosen}) predicts angular "
        f"acceleration with R² {c['r2_acc'][0]:.2f} (x), {c['r2_acc'][1]:.2f} (y), relative error "
        f"{c['rel_err_acc'][0]:.2f}, {c['rel_err_acc'][1]:.2f}; angular-rate change R² "
        f"{c['r2_dw'][0]:.2f}, {c['r2_dw'][1]:.2f}."
    )


@contextmanager
def _naming(flights: list[Flight], advice: str) -> Iterator[None]:
    """Re-raise an `ExcitationError` of a fit with the flights' sources, windows and advice."""
    try:
        yield
    except ExcitationError as e:
        where = "; ".join(f"{f.source} {f.t[0]:.2f}–{f.t[-1]:.2f} s" for f in flights)
        raise ExcitationError(f"{where}: {e}; {advice}") from None
