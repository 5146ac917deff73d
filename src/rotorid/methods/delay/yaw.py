"""K_tau by eq. 95-96 and the joint estimate of eq. 73-76 from the yaw flight."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.covariance import influence_cov, influence_sd, ols_influence
from rotorid.methods.delay.angular import Angular
from rotorid.methods.delay.inertia import EivBracket, RollPitch, eiv_bracket
from rotorid.methods.delay.settings import DelaySettings
from rotorid.methods.regression import ols, r2_from_sse


@dataclass(frozen=True)
class YawFit:
    """K_tau (eq. 95-96) with its σ, the torque side it was fitted to, its R², the fit's
    condition number and its errors-in-variables bracket."""

    k_tau: float
    std: float
    lhs: np.ndarray  # I_zz ω̇_z + (I_yy - I_xx) ω_x ω_y per sample
    r2: float
    cond: float
    eiv: EivBracket


def fit_k_tau(ang: Angular, inertia: tuple[float, float], rp: RollPitch, st: DelaySettings) -> YawFit:
    """K_tau by least squares (eq. 95-96): I_zz ω̇_z + (I_yy - I_xx) ω_x ω_y = K_tau Σ_i d_i f_i,
    I_zz = C (I_xx + I_yy)/2. σ to first order in everything it rests on, the three sources
    independent: the yaw flight's noise (influence series), the roll/pitch flights' (through
    I_xx, I_yy: ∂K/∂I_zz = Σ d ω̇_z / Σ d², ∂K/∂(I_yy - I_xx) = Σ d p_z / Σ d²; their
    errors-in-variables brackets included), the thrust parameters' (through the yaw torque d
    and through I_xx, I_yy), the ratio C's, and the yaw fit's own errors-in-variables bracket
    (`eiv_bracket`: d carries the rotor model's error, ω̇_z the gyro's and disturbances')."""
    c, c_sd = st.izz_ratio
    ixx, iyy = inertia
    izz = c * 0.5 * (ixx + iyy)
    d, acc, prec = ang.drag, ang.acc[:, 2], ang.prec[:, 2]
    lhs = izz * acc + (iyy - ixx) * prec
    fit = ols(d, lhs, what="yaw torque coefficient (eq. 95-96)")
    k = float(fit.x[0])
    lengths = [len(r["t"]) for r in ang.raw]
    var_yaw = influence_sd(ols_influence(d, fit.residual)[:, 0], lengths, st.autocorr_correction) ** 2
    a_izz, a_diff = float(d @ acc) / float(d @ d), float(d @ prec) / float(d @ d)
    cx, cy = a_izz * 0.5 * c - a_diff, a_izz * 0.5 * c + a_diff  # ∂K/∂I_xx, ∂K/∂I_yy
    g_drag = np.array([-k * float(d @ s) / float(d @ d) for s in ang.sens[:, :, 3].T])  # ∂K/∂θ via d (scale)
    g_drag += np.array([float(s @ fit.residual) / float(d @ d) for s in ang.sens[:, :, 3].T])
    g = g_drag + cx * rp.grad[0] + cy * rp.grad[1]
    zx, zy = rp.inertia.influence[rp.inertia.chosen]
    eiv = eiv_bracket(d, lhs, k, "yaw drag torque")
    var = (
        var_yaw
        + influence_sd(cx * zx + cy * zy, rp.lengths, st.autocorr_correction) ** 2
        + max(float(g @ rp.theta_cov @ g), 0.0)
        + (a_izz * 0.5 * (ixx + iyy) * c_sd) ** 2
        + float(np.array([cx, cy]) ** 2 @ rp.eiv_var)
        + eiv.std**2
    )
    return YawFit(k, math.sqrt(var), lhs, r2_from_sse(fit.sse, lhs), fit.cond, eiv)


def _joint_system(ang: Angular, dtau: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 73-76 with a common K_tau, rows x, y, z of J ω̇ + ω x (J ω) - K_tau Σ d_i f_i e_z = R_pf f
    interleaved per sample (3n, 4) and the torque side (3n,); `dtau` (n, 4) is added to the
    torques and the yaw drag column (a perturbation of the thrust parameters)."""
    a, p = ang.acc, ang.prec
    tau, drag = (ang.tau, ang.drag) if dtau is None else (ang.tau + dtau[:, :3], ang.drag + dtau[:, 3])
    z = np.zeros(len(a))
    rows = [
        np.column_stack([a[:, 0], -p[:, 0], p[:, 0], z]),
        np.column_stack([p[:, 1], a[:, 1], -p[:, 1], z]),
        np.column_stack([-p[:, 2], p[:, 2], a[:, 2], -drag]),
    ]
    return np.stack(rows, axis=1).reshape(-1, 4), tau.reshape(-1)


def joint_estimate(ang: Angular, st: DelaySettings, theta_cov: np.ndarray | None = None) -> dict[str, Any]:
    """The joint estimate of eq. 73-76 and its σ: the yaw flight's noise (influence series over
    the three rows of each sample, `covariance.influence_cov`) plus, given θ's covariance, the thrust
    parameters' (∂x/∂θ by central differences through the torques, `Angular.sens`)."""
    big_a, b = _joint_system(ang)
    try:
        fit = ols(big_a, b, what="joint inertia / K_tau (eq. 73-76)")
    except ExcitationError as e:
        return {
            "grounded": False,
            "x": [float("nan")] * 4,
            "std": [float("nan")] * 4,
            "rel_std_pct": [float("inf")] * 4,
            "cond": float("inf"),
            "error": str(e),
        }
    lengths = [len(r["t"]) for r in ang.raw]
    cov = influence_cov(ols_influence(big_a, fit.residual, 3), lengths, st.autocorr_correction)
    if theta_cov is not None and ang.sens is not None:
        g = np.zeros((4, ang.sens.shape[1]))
        for j in range(ang.sens.shape[1]):
            d = ang.sens[:, j, :]
            nd = float(np.linalg.norm(d))
            if nd == 0:
                continue
            eps = 1e-4 * float(np.linalg.norm(ang.tau)) / nd
            up, dn = (np.linalg.lstsq(*_joint_system(ang, e * d), rcond=None)[0] for e in (eps, -eps))
            g[:, j] = (up - dn) / (2 * eps)
        cov = cov + g @ theta_cov @ g.T
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(fit.x != 0, 100.0 * std / np.abs(fit.x), np.inf).tolist()
    grounded = bool(fit.x[2] > 0 and rel[2] < st.joint_max_rel_std and fit.x[3] != 0)
    return {"grounded": grounded, "x": fit.x.tolist(), "std": std.tolist(), "rel_std_pct": rel, "cond": fit.cond}
