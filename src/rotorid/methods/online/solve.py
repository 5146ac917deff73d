"""The batch solve of the rows the RLS processed (`OnlineEstimator.run` records them): the final
θ1 with the moved terms at the final MOI, the errors-in-variables corrections of θ1 (gyro noise in
α̂) and θ2 (accelerometer noise in the specific force), their HAC sandwich σ, the variances the
settings' assumptions add, and which parameters the flight informed."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rotorid.methods.covariance import leverage_diag, rls_hac_cov, sandwich
from rotorid.methods.online.estimator import OnlineEstimator, RlsRows, imu_height
from rotorid.methods.online.noise import NoiseDensities, acc_row_noise, alpha_row_noise
from rotorid.methods.online.settings import N1, THETA1
from rotorid.util import subsample


class FinalParam(NamedTuple):
    """A parameter's final value, its σ from the flight and the variance the settings' assumptions
    add (`_assumed`)."""

    value: float
    std: float
    assumed_var: float


class FinalFit(NamedTuple):
    """`final_std`'s result: the final parameters by name (θ1, the constant yaw moment when
    `OnlineSettings.yaw_moment` > 0, mass and imu_z) and which of them the flight informed."""

    params: dict[str, FinalParam]
    informed: dict[str, bool]


class Fuller(NamedTuple):
    """`_fuller`'s result: the scale of S_uu, the corrected bread (M - S_uu)⁻¹ and θ̃."""

    scale: float
    bread: np.ndarray
    theta: np.ndarray


class Theta1Fit(NamedTuple):
    """`final_theta1_eiv`'s result: θ1 corrected, its σ and the bread of its delta method."""

    theta: np.ndarray
    std: np.ndarray
    bread: np.ndarray


class Theta2Fit(NamedTuple):
    """`final_theta2`'s result: θ2 = [m, m z] corrected, its (2, 2) covariance and its bread."""

    theta: np.ndarray
    cov: np.ndarray
    bread: np.ndarray


def _final_theta1(est: OnlineEstimator, rows: RlsRows, bread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """θ1 and the rows' outputs with every moved term (Alg. 4 as changed here: an inactive MOI
    column's term Ĵ_k h_k moves to the output) evaluated at the final MOI instead of the running
    Ĵ_k of its step. Early in a flight the running value is the initial guess (1 g m² against
    50 g m² here), so the rows before an axis activates carry (J_k - Ĵ_k) h_k, a systematic error
    the CoM columns (regressor ≈ the constant thrust) absorb, the same in every flight and gone
    with j0 at the truth. The RLS solves its normal equations exactly,
    θ = bread (P0⁻¹ θ0 + Σ hᵀ y / r), so new outputs y + Δy give θ + bread Σ hᵀ Δy / r; three
    passes settle the fixed point."""
    h1, y1, r1, hm, jt = rows.h1, rows.y1, rows.r1, rows.moved, rows.jhat
    th = np.array(est.th1)
    y = y1
    for _ in range(3):
        dy = np.einsum("tjk,tk->tj", hm, jt - th[:3])
        th = np.array(est.th1) + bread @ np.einsum("tjp,tj->p", h1, dy / r1)
        y = y1 + dy
    return th, y


def _kf_jacobian(kfrow: np.ndarray, dt: np.ndarray, jm: np.ndarray, h1: np.ndarray) -> np.ndarray:
    """∂α̂_k/∂J_k (T, 3) of each row with the KF's process model held at J = `jm` (`KfModel`):
    the model's acceleration a_t (`kfrow` (T, 6): gains, then a_t) changes by -a_t / J_k, which
    moves the KF's rate by s_t = (1 - k_t) (s_t-1 - a_t dt_t / J_k), and α̂ = Δω̂/dt by
    (s_t - s_t-1) / dt_t; 0 where the column is inactive. The gyroscopic products' dependence on ω̂
    is second order and left out."""
    g, a = kfrow[:, :3], kfrow[:, 3:6]
    sens, prev = np.empty_like(g), np.zeros(3)
    for t in range(len(g)):
        sens[t] = (1.0 - g[t]) * (prev - a[t] * dt[t] / jm)
        prev = sens[t]
    d = np.diff(np.vstack([np.zeros((1, 3)), sens]), axis=0) / dt[:, None]
    return np.where(np.stack([h1[:, k, k] != 0 for k in range(3)], -1), d, 0.0)


def _fuller(m_mat: np.ndarray, th: np.ndarray, s_uu: np.ndarray, n: int) -> Fuller:
    """Fuller's known-error-covariance estimator (1987, *Measurement Error Models*, §2.2) of the
    least squares `th` with normal matrix `m_mat` whose columns carry noise of moment diag(`s_uu`)
    over `n` rows: θ̃ = (M - S_uu)⁻¹ M θ, with S_uu scaled by λ̂ - 1/(n-1) where the smallest root
    λ̂ of |C - λ S_uu| = 0 (C the noisy columns' Schur complement in M) is below 1 + 1/(n-1),
    which keeps M - S_uu positive definite. Returns the scale, (M - S_uu)⁻¹ and θ̃."""
    scale, a = 1.0, np.flatnonzero(s_uu > 0)
    if len(a):
        b = np.setdiff1d(np.arange(len(th)), a)
        c = m_mat[np.ix_(a, a)] - m_mat[np.ix_(a, b)] @ np.linalg.solve(m_mat[np.ix_(b, b)], m_mat[np.ix_(b, a)])
        d = 1.0 / np.sqrt(s_uu[a])
        lam = float(np.linalg.eigvalsh(d[:, None] * c * d[None, :])[0])
        scale = min(1.0, lam - 1.0 / (n - 1))
    b_mat = np.linalg.inv(m_mat - np.diag(scale * s_uu))
    return Fuller(scale, b_mat, b_mat @ (m_mat @ th))


def final_theta1_eiv(
    bread: np.ndarray,
    th: np.ndarray,
    h1: np.ndarray,
    y1: np.ndarray,
    r1: np.ndarray,
    vu: np.ndarray,
    dalpha: np.ndarray | None = None,
) -> Theta1Fit:
    """θ1 corrected for the gyro noise in α̂ (`alpha_row_noise`, variance `vu` (T, 3)), its σ
    and the corrected bread. The rows' α̂ is the MOI column of its own axis while that column is
    active (H1's diagonal), and its noise attenuates least squares as the accelerometer's does
    the mass (`final_theta2`): E[Σ hᵀh/r] = Σ h̄ᵀh̄/r + S_uu, S_uu = diag(Σ_t vu_tk / r_tk) over
    the MOI.
    Fuller (1987) §2.2 as `final_theta2`: θ̃ = (M - S_uu)⁻¹ M θ, M = `bread`⁻¹, S_uu scaled by
    λ̂ - 1/(n-1) when the smallest root λ̂ of |C - λ S_uu| = 0 (C the MOI block's Schur
    complement in M) is below 1 + 1/(n-1). σ: each parameter's long-run variance
    (`covariance.sandwich`) of the estimating equations' influence B ψ_t, B = (M - S_uu)⁻¹,
    ψ_t = Σ_k h_tkᵀ e_tk / r_tk + (vu_t / r_t) ∘ θ̃ on the MOI, widened by each step's leverage (the
    diagonal of B times the step's share of B⁻¹) for what the fit takes from its own scores.

    At the fixed point of `fixed_point` the regressor α̂ depends on the θ1 the KF holds
    (`dalpha` = ∂α̂_k/∂J_k, `_kf_jacobian`), which is the estimate itself: the estimating
    equations G(θ) = Σ h(θ)ᵀ (y - h(θ) θ) / r - S_uu θ have the total derivative
    -(M - S_uu + E - F), E[:, k] = Σ_t h_tkᵀ dalpha_tk θ_k / r_tk, F_kk = Σ_t dalpha_tk e_tk / r_tk,
    and the delta method gives θ's covariance B Ω Bᵀ with B = (M - S_uu + E - F)⁻¹ (the
    gradient, not the regressor, of a pseudo-linear regression sets its covariance; Ljung 1999,
    *System Identification*, Ch. 9). The returned bread is that B."""
    m_mat = np.linalg.inv(bread)
    w = np.zeros((len(h1), len(th)))
    for k in range(3):
        on = h1[:, k, k] != 0  # α̂_k in the row only while the column is active
        w[:, k] = np.where(on, vu[:, k] / r1[:, k], 0.0)
    s_uu = w.sum(axis=0)
    scale, b_mat, th_c = _fuller(m_mat, th, s_uu, h1.shape[0] * h1.shape[1])
    e = y1 - np.einsum("tkp,p->tk", h1, th_c)
    psi = np.einsum("tkp,tk->tp", h1, e / r1) + scale * w * th_c[None, :]
    if dalpha is not None:
        jac = np.zeros_like(m_mat)
        jac[:, :3] = np.einsum("tkp,tk->pk", h1, dalpha * th_c[None, :3] / r1)
        jac[:3, :3] -= np.diag(np.sum(dalpha * e / r1, axis=0))
        b_mat = np.linalg.inv(m_mat - np.diag(scale * s_uu) + jac)
    lev = leverage_diag(b_mat, h1, r1) - scale * w * np.diag(b_mat)[None, :]
    if dalpha is not None:  # the step's share of E - F, diagonal of B times it
        lev[:, :3] += (
            np.einsum("tpq,pq->tp", h1[:, :3], b_mat[:3]) * th_c[None, :3] - np.diag(b_mat)[None, :3] * e
        ) * (dalpha / r1)
    cov = sandwich(b_mat, psi, np.zeros(len(psi), dtype=int), None, 1.0, lev)
    return Theta1Fit(th_c, np.sqrt(np.clip(np.diag(cov), 0.0, None)), b_mat)


def final_theta2(
    bread2: np.ndarray, th2: np.ndarray, h2: np.ndarray, y2: np.ndarray, r2: np.ndarray, vu: np.ndarray
) -> Theta2Fit:
    """θ2 = [m, m z] corrected for the noise in its regressor, and its covariance.

    The RLS2 rows F = H2 θ2 (Alg. 7, eq. 19–20) regress the noise-free rotor force on the
    measured specific force, whose noise u (variance `vu`, `acc_row_noise`) attenuates least
    squares: E[Σ hᵀh/r] = Σ h̄ᵀh̄/r + S_uu with S_uu = diag(Σ_t,k vu_tk / r_tk, 0), so m comes out
    (1 - S_uu/M) times too small (≈ 3 σ_u²/|a|²). The
    known-error-covariance estimator (Fuller 1987, *Measurement Error Models*, §2.2) removes it:
    θ̃ = (M - S_uu)⁻¹ (P0⁻¹ θ0 + Σ hᵀ y / r), M = `bread2`⁻¹ (the prior and the rows' normal
    matrix), with Fuller's modification for a weakly determined M: with λ̂ the smallest root
    of |M - λ S_uu| = 0 (here the Schur complement of m z over S_uu's one entry), S_uu is
    scaled by λ̂ - 1/(n-1) when λ̂ < 1 + 1/(n-1), which keeps M - S_uu positive definite.
    Covariance: the sandwich B Ω B (`covariance.sandwich`), B = (M - S_uu)⁻¹, Ω the long-run
    variance (equal-weighted cosines, widened by the fit's share) of the estimating equations per
    step ψ_t = Σ_k h_tkᵀ e_tk / r_tk + (Σ_k vu_tk / r_tk) θ̃_0 e₀ (e₀ the first unit vector),
    which sum to 0 at θ̃ (Fuller §2.2's covariance is this with independent rows)."""
    m_mat = np.linalg.inv(bread2)
    w = np.sum(vu / r2, axis=1)  # each step's share of S_uu's entry
    scale, b, th = _fuller(m_mat, th2, np.array([w.sum(), 0.0]), h2.shape[0] * h2.shape[1])
    e = y2 - np.einsum("tkp,p->tk", h2, th)
    psi = np.einsum("tkp,tk->tp", h2, e / r2)
    psi[:, 0] += scale * w * th[0]
    lev = leverage_diag(b, h2, r2)
    lev[:, 0] -= scale * w * b[0, 0]
    return Theta2Fit(th, sandwich(b, psi, np.zeros(len(psi), dtype=int), None, 1.0, lev), b)


def final_std(est: OnlineEstimator, noise: NoiseDensities | None = None) -> FinalFit:
    """Final θ1 (`_final_theta1`) and σ of θ1, mass and imu_z, from the rows the RLS and RLS2
    processed with the estimators' own covariances as the bread. The RLS covariance alone assumes
    independent rows of the stated variance (Kwon et al. eq. 10 and Alg. 5 give the estimator,
    not its sampling distribution); here the rows share the KF-filtered rate and carry model
    error. θ1: the sandwich's long-run variance (`covariance.rls_hac_cov`). The
    moment residual holds J (α - α̂), and α̂ = Δω̂/dt is a first difference of the KF's rate
    error, so its spectral density at frequency 0 vanishes; the CoM columns (regressor ≈ the
    constant thrust) pass it to their scores unchanged. A lag-window bandwidth (Andrews, or
    Newey-West 1994 per parameter) either keeps the Bartlett-weighted negative lags from
    cancelling or cuts the scores short; the equal-weighted cosine estimate
    (`covariance.ewc_meat`, as tls) has neither bias, and the leverage widening gives back
    what the fit takes from scores in bursts. RLS2 (mass,
    m z): the same sandwich. With `eiv` and the KF (variant "kwon"), θ1 is corrected for the
    gyro's noise (density² `noise.gyro`) in α̂ (`final_theta1_eiv`). Also which parameters the
    flight informed: the information sum h^2 / r of its column exceeds that of its initial
    variance."""
    s, rows = est.settings, est.recorded_rows()
    names = [*THETA1, "mass", "imu_z"]
    if rows is None:
        st, nan = est.state, float("nan")
        values = [*st.theta1, st.mass, st.imu_z]
        return FinalFit(
            {k: FinalParam(v, nan, 0.0) for k, v in zip(names, values, strict=True)}, dict.fromkeys(names, False)
        )
    acc_nd2, gyro_nd2 = (None, None) if noise is None else noise
    h1, r1, h2, y2, r2 = rows.h1, rows.r1, rows.h2, rows.y2, rows.r2
    th2 = np.array(est.th2)
    bread1 = np.array(est.s1).reshape(N1, N1)
    th1, y1 = _final_theta1(est, rows, bread1)
    s00, s01, s11 = est.s2
    bread2 = np.array([[s00, s01], [s01, s11]])
    dt = s.force_nd**2 / r2  # each step's duration (the RLS2 row variance is force_nd²/dt)
    if s.variant == "kwon":
        kfrow = rows.kf
        eiv = s.eiv and gyro_nd2 is not None
        vu1 = alpha_row_noise(gyro_nd2, kfrow[:, :3], dt) if eiv else np.zeros((len(kfrow), 3))
        m = est.kf_model
        da = None if m is None else _kf_jacobian(kfrow, dt, np.maximum(m.theta1[:3], s.j_min), h1)
        th1, std1, bread1 = final_theta1_eiv(bread1, th1, h1, y1, r1, vu1, da)
    else:
        std1 = np.sqrt(np.clip(np.diag(rls_hac_cov(bread1, h1, y1 - h1 @ th1, r1)), 0.0, None))
    r2 = np.repeat(r2[:, None], y2.shape[1], axis=1)
    if s.eiv and acc_nd2 is not None and s.variant != "rls-lpf":  # rls-lpf's rows are low-passed: not white
        th2, cov2, bread2 = final_theta2(bread2, th2, h2, y2, r2, acc_row_noise(acc_nd2, dt))
    else:
        cov2 = rls_hac_cov(bread2, h2, y2 - h2 @ th2, r2)
    info1 = np.einsum("tkp,tk->p", h1**2, 1.0 / r1)
    info2 = np.einsum("tkp,tk->p", h2**2, 1.0 / r2)
    informed = {name: bool(info1[i] * s.theta1_var0[i] > 1.0) for i, name in enumerate(THETA1)}
    informed["mass"] = bool(info2[0] * s.theta2_var0[0] > 1.0)
    informed["imu_z"] = bool(info2[1] * s.theta2_var0[1] > 1.0)
    thrust = _rotor_thrusts(est, rows.moved, h1, y1, th1)
    var1, cov2b = _assumed(est, h1, r1, bread1, th1, thrust, h2, r2, bread2, th2)
    _, z_std = imu_height(th2[0], th2[1], cov2[0, 0], cov2[0, 1], cov2[1, 1], 1.0)
    _, z_b = imu_height(th2[0], th2[1], cov2b[0, 0], cov2b[0, 1], cov2b[1, 1], 1.0)
    out = {name: FinalParam(th1[i], std1[i], var1[i]) for i, name in enumerate(THETA1)}
    if s.yaw_moment > 0:
        out["yaw_moment"] = FinalParam(th1[5], std1[5], 0.0)  # a rotor spread is this moment: no spread term
    out["mass"] = FinalParam(th2[0], float(np.sqrt(max(cov2[0, 0], 0.0))), float(cov2b[0, 0]))
    out["imu_z"] = FinalParam(est.com_z + th2[1] / th2[0], float(z_std), float(z_b) ** 2)
    return FinalFit(out, informed)


def fit_series(est: OnlineEstimator, final: FinalFit) -> dict[str, np.ndarray]:
    """The RLS rows at the final estimate over time, for the report: at most `MAX_PLOT_POINTS`
    steps evenly spread (`util.subsample`; empty when the RLS never ran). `fit_t` (T,), the
    rows' times; per body axis (T, 3): `moment_meas`, the moment the gyro measures with the
    final MOI, J α̂ + ω x J ω (eq. 10's MOI columns with the moved entries back in place), against
    `moment_model`, the rotors' moment about the final CoM less the constant yaw moment (the
    output less the CoM and yaw columns); `force_meas`, H2 θ2 (the mass times the specific force
    moved from the IMU to the CoM, eq. 19–20), against `force_model`, the rotors' force (the
    RLS2 output). The rows are those the RLS saw: low-passed in the rls-lpf variant."""
    rows = est.recorded_rows()
    if rows is None:
        return {}
    p = final.params
    th1 = np.array([*(p[n].value for n in THETA1), p["yaw_moment"].value if "yaw_moment" in p else 0.0])
    mass = p["mass"].value
    th2 = np.array([mass, mass * (p["imu_z"].value - est.com_z)])
    sub = subsample(len(rows.t))
    h1, hm = rows.h1[sub], rows.moved[sub]
    return {
        "fit_t": rows.t[sub],
        "moment_meas": (h1[:, :, :3] + hm) @ th1[:3],
        "moment_model": rows.y1[sub] + np.einsum("tjk,tk->tj", hm, rows.jhat[sub]) - h1[:, :, 3:] @ th1[3:],
        "force_meas": rows.h2[sub] @ th2,
        "force_model": rows.y2[sub],
    }


def _rotor_thrusts(est: OnlineEstimator, hm: np.ndarray, h1: np.ndarray, y1: np.ndarray, th1: np.ndarray) -> np.ndarray:
    """Per-rotor thrust of every RLS row (T, n), recovered from the row's force and moment (the
    H1 force columns, and the output before the moved terms and the com_z F term) through the
    mixer's pseudo-inverse: exact for a quadrotor (rank 4), the minimum-norm allocation of the
    same wrench for more rotors. `hm` (T, 3, 3): the H1 entries moved to the output (`RlsRows.moved`)."""
    fx, fy, fz = -h1[:, 2, 4], h1[:, 2, 3], h1[:, 0, 4]
    m = y1 + np.einsum("tjk,k->tj", hm, th1[:3]) - est.com_z * np.stack([fy, -fx, np.zeros_like(fx)], -1)
    return np.column_stack([fx, fy, fz, m]) @ np.linalg.pinv(est.mixer).T


def _assumed(est, h1, r1, bread1, th1, thrust, h2, r2, bread2, th2) -> tuple[np.ndarray, np.ndarray]:
    """Variances the settings' assumptions add: θ1 from the rotors' gain spread
    (`OnlineSettings.motor_spread`), and the (2, 2) covariance of θ2 = [m, m z] from the
    accelerometer z bias (`acc_bias_z_sigma`), each through the batch form of the RLS solution
    θ = bread (P0⁻¹ θ0 + Σ hᵀ y / r): a change Δ(y - h θ) moves θ by bread Σ hᵀ Δ / r. A rotor
    stronger by ε_i adds ε_i f_i(t) (r_i - c) x z with its thrust f_i(t) of each row (`thrust`):
    the hover part is a CoM shift, the part that follows the manoeuvres (the differential
    thrust that drives α) scales the inertia."""
    s, mix = est.settings, est.mixer  # (6, n): force and moment about the body origin per unit thrust
    n = mix.shape[1]
    com = np.array([th1[3], th1[4], est.com_z])
    arm = mix[3:6] - np.cross(com, mix[0:3].T).T  # moment per unit thrust about the CoM
    jac = bread1 @ np.einsum("tkp,tk,ki,ti->pi", h1, 1.0 / r1, arm, thrust)  # (6, n) ∂θ1/∂ε_i
    centre = np.eye(n) - 1.0 / n
    var1 = s.motor_spread**2 * np.einsum("pi,ij,pj->p", jac, centre, jac)
    d2 = -th2[0] * np.einsum("tp,t->p", h2[:, 2, :], 1.0 / r2[:, 2])  # Δ(y - hθ) = -m b on the z row
    jb = bread2 @ d2
    return var1, s.acc_bias_z_sigma**2 * np.outer(jb, jb)
