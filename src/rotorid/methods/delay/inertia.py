"""Roll/pitch inertia (eq. 80-82, Sec. IV-B, TLS), its held-out selection and σ, with the
errors-in-variables bracket."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.integrate import cumulative_trapezoid

from rotorid.errors import ExcitationError
from rotorid.methods.covariance import influence_sd
from rotorid.methods.delay.angular import Angular
from rotorid.methods.delay.settings import INERTIA_PARAMS, DelaySettings
from rotorid.methods.regression import bracket_std, frisch_bounds, ols, r2, tls
from rotorid.result import LOOSE_PCT


def _inertia_fit(a: np.ndarray, tau: np.ndarray, how: str, noise: np.ndarray, what: str) -> tuple[float, np.ndarray]:
    """I from torque = I * angular acceleration by one parameterization, and its influence
    series z (Î - I ≈ Σ_t z_t; σ² = `long_run_var(z)`), from the estimating equation:
    direct z = a r / Σa² (r = τ - I a); reciprocal k = 1/I with z = -τ r / (k² Στ²)
    (r = a - k τ); TLS in the noise-scaled columns u = a/s_a, v = τ/s_τ, slope x = I s_a/s_τ
    minimising Σ (v - x u)² / (1 + x²), with ψ_t = u e (1 + x²) + x e² (e = v - x u) and
    z = ψ / Σ (u² (1 + x²) - e²) (M-estimator influence, Huber 1981, Sec. 3.2)."""
    if how == "direct":
        fit = ols(a, tau, what=f"{what} (direct)")
        return float(fit.x[0]), a * fit.residual / float(a @ a)
    if how == "reciprocal":
        fit = ols(tau, a, what=f"{what} (reciprocal)")
        k = float(fit.x[0])
        if k <= 0:
            raise ExcitationError(f"{what}: angular acceleration does not follow the torque (slope {k:.3g} <= 0)")
        return 1.0 / k, -tau * fit.residual / (float(tau @ tau) * k**2)
    sa, st = (math.sqrt(v) if v > 0 else 1.0 for v in noise)
    u, v = a / sa, tau / st
    fit = tls(np.column_stack([u, -v]), what=f"{what} (TLS)")
    x = float(fit.x[0])
    e = v - x * u
    psi = u * e * (1 + x * x) + x * e * e
    return x * st / sa, psi / float(np.sum(u * u * (1 + x * x) - e * e)) * st / sa


def _dw_prediction(raw: dict[str, np.ndarray], idx: np.ndarray, horizon: float, col: int, coupling: float):
    """Measured and torque-integrated angular-rate changes over `horizon` within the samples `idx`
    of one flight: Δω_k = ω(t_k + H) - ω(t_k) vs ∫ (τ - c ω_j ω_k) dt (de-meaned over `idx`, c the
    gyroscopic coupling). Gyro noise enters only the target, so the criterion does not favour
    attenuated (biased) inertias."""
    t = raw["t"][idx]
    x = raw["tau"][idx, col] - coupling * raw["prec"][idx, col]
    x = x - x.mean()
    c = cumulative_trapezoid(x, t, initial=0.0)
    j = np.searchsorted(t, t + horizon)
    ok = j < len(t)
    k = np.flatnonzero(ok)
    return raw["gyro"][idx][j[ok], col] - raw["gyro"][idx][k, col], c[j[ok]] - c[k]


def gyro_coupling(ixx: float, iyy: float, izz: float) -> np.ndarray:
    """Gyroscopic coefficients of eq. 62 in the x and y rows: τ_x = I_xx ω̇_x + (I_zz - I_yy) ω_y ω_z,
    τ_y = I_yy ω̇_y + (I_xx - I_zz) ω_z ω_x."""
    return np.array([izz - iyy, ixx - izz])


def _fit_axes(
    ang: Angular, rows: np.ndarray | slice, how: str, st: DelaySettings, what: str, coupling: np.ndarray | None = None
) -> list[tuple[float, float]]:
    """(I, influence series) for x and y by one parameterization. With `st.gyroscopic` the ω x (J ω) terms of
    eq. 62 are moved to the torque side with I_zz = C (I_xx + I_yy)/2 (eq. 93), iterated to a
    fixed point (the paper's eq. 80 drops them: small angular rates), or with a given `coupling`."""
    acc, tau, prec = ang.acc[rows, :2], ang.tau[rows, :2], ang.prec[rows, :2]
    fit = lambda t: [_inertia_fit(acc[:, k], t[:, k], how, ang.noise_var[:, k], what) for k in (0, 1)]
    if coupling is not None:
        return fit(tau - coupling * prec)
    vals = fit(tau)
    for _ in range(3 if st.gyroscopic else 0):
        ixx, iyy = vals[0][0], vals[1][0]
        vals = fit(tau - gyro_coupling(ixx, iyy, st.izz_ratio[0] * 0.5 * (ixx + iyy)) * prec)
    return vals


@dataclass(frozen=True)
class InertiaFits:
    """I_xx, I_yy by each parameterization (`INERTIA_PARAMS`), their held-out scores and the one
    chosen."""

    fits: dict[str, list[tuple[float, float]]]  # parameterization -> [(I_xx, σ), (I_yy, σ)]
    holdout_r2: dict[str, float]  # parameterization -> held-out R² of the angular-rate change
    influence: dict[str, list[np.ndarray]]  # parameterization -> influence series of I_xx, I_yy
    chosen: str


@dataclass(frozen=True)
class RollPitch:
    """What the roll/pitch step derives for the σ of I_xx, I_yy and of what rests on them (I_zz,
    K_tau; `inertia_sigma`, `fit_k_tau`)."""

    inertia: InertiaFits
    grad: np.ndarray  # (2, P): ∂(I_xx, I_yy)/∂θ of the chosen fit (`inertia_grad`)
    lengths: list[int]  # samples per roll/pitch flight (segments of the influence series)
    theta_cov: np.ndarray  # covariance of the thrust parameters θ
    eiv_var: np.ndarray  # (2,): each axis's errors-in-variables variance (`eiv_bracket`)


class EivBracket(NamedTuple):
    """`eiv_bracket`'s verdict on a slope."""

    std: float
    reason: str
    identified: bool


def roll_pitch_inertia(ang: Angular, settings: DelaySettings) -> InertiaFits:
    """I_xx, I_yy by all three parameterizations (eq. 80-82, Sec. IV-B, TLS), the held-out
    selection, std. deviations (`influence_sd` of each fit's influence series, kept in `influence`
    for the σ of I_xx + I_yy)."""
    fits: dict[str, list[tuple[float, float]]] = {}
    holdout: dict[str, float] = {}
    influence: dict[str, list[np.ndarray]] = {}
    lengths = [len(r["t"]) for r in ang.raw]
    cpl = {}
    for how in INERTIA_PARAMS:
        vals = _fit_axes(ang, slice(None), how, settings, "roll/pitch inertia")
        fits[how] = [(v, influence_sd(z, lengths, settings.autocorr_correction)) for v, z in vals]
        influence[how] = [z for _, z in vals]
        ixx, iyy = vals[0][0], vals[1][0]
        cpl[how] = gyro_coupling(ixx, iyy, settings.izz_ratio[0] * 0.5 * (ixx + iyy)) * settings.gyroscopic
    # held-out: fit on one half of every flight (gyroscopic coupling from the full fit), predict
    # the angular-rate change on the other half
    for how in INERTIA_PARAMS:
        scores = []
        for k in (0, 1):
            vals = _fit_axes(ang, ang.fold == k, how, settings, "held-out roll/pitch inertia", cpl[how])
            for ax in (0, 1):
                ys, ps = [], []
                for raw in ang.raw:
                    m = len(raw["t"])
                    idx = np.arange(m // 2, m) if k == 0 else np.arange(0, m // 2)
                    y, p = _dw_prediction(raw, idx, settings.pred_horizon, ax, cpl[how][ax])
                    ys.append(y)
                    ps.append(p / vals[ax][0])
                scores.append(r2(np.concatenate(ys), np.concatenate(ps)))
        holdout[how] = float(np.mean(scores))
    chosen = settings.inertia_param
    if chosen == "auto":
        chosen = max(INERTIA_PARAMS, key=lambda h: holdout[h])
    return InertiaFits(fits, holdout, influence, chosen)


def inertia_grad(ang: Angular, how: str, coupling: np.ndarray) -> np.ndarray:
    """(2, P): ∂I_k/∂θ of the x and y inertia w.r.t. the thrust parameters θ (motor constant(s),
    coefficients; `Angular.sens`), by central differences of `_inertia_fit` in the direction of
    each parameter's filtered torque (the gyroscopic coupling held)."""
    p = ang.sens.shape[1]
    g = np.zeros((2, p))
    for k in (0, 1):
        tau = ang.tau[:, k] - coupling[k] * ang.prec[:, k]
        for j in range(p):
            d = ang.sens[:, j, k]
            nd = float(np.linalg.norm(d))
            if nd == 0:
                continue
            eps = 1e-4 * float(np.linalg.norm(tau)) / nd
            up, dn = (_inertia_fit(ang.acc[:, k], tau + e * d, how, ang.noise_var[:, k], "σ")[0] for e in (eps, -eps))
            g[k, j] = (up - dn) / (2 * eps)
    return g


#: Widest errors-in-variables bracket, as its half-width over its centre, for which a value
#: counts as identified: `LOOSE_PCT`, the bound of a "loosely determined" verdict. Beyond it
#: (a squared correlation below 1/3) the data cannot place the value within ±50 % even at the
#: bracket's centre.
EIV_MAX_HALF_WIDTH = LOOSE_PCT / 100.0
EIV_ADVICE = "fly sharper doublets on that axis (larger command steps, less wind) so the torque dominates the scatter"


def eiv_bracket(x: np.ndarray, y: np.ndarray, value: float, what: str) -> EivBracket:
    """Errors-in-variables term of a slope y = value x through the origin (inertia: torque on
    angular acceleration; K_tau: yaw torque side on the drag column): (σ, reason, identified).

    Both columns carry error: the angular acceleration the differentiated gyro's noise, the
    torque the rotor model's error (thrust curve, lag, motor spread) and every disturbance
    torque (wind, prop wash; the closed loop turns these into commands too). The high-band
    noise floor (`Angular.noise_var`) explains under 1 % of the scatter about the fit on every
    flight tried, so the
    noise-variance ratio a Deming / TLS fit needs is unknown, and the slope is only bounded:
    between the direct and the reverse least-squares slopes (`frisch_bounds`), a factor 1/r²
    apart. σ is the bracket as a rectangular distribution about the reported value
    (`bracket_std`, GUM 4.3.7): 0 for a perfect correlation, (high - low)/√3 for a value at an
    end of it. Not identified when the bracket's half-width exceeds `EIV_MAX_HALF_WIDTH` of
    its centre."""
    lo, hi, rr = frisch_bounds(x, y)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo * hi <= 0:
        return EivBracket(
            float("inf"),
            f"the {what} does not follow the angular acceleration (correlation {math.sqrt(rr):.2f})",
            False,
        )
    ok = abs(hi - lo) <= EIV_MAX_HALF_WIDTH * abs(hi + lo)
    reason = (
        f"errors in variables: the {what} and the angular acceleration correlate at r = {math.sqrt(rr):.2f}, "
        f"and the scatter is far above the sensors' noise floor, so the data bound the value only between the "
        f"direct ({lo:.4g}) and reverse ({hi:.4g}) fits (a factor {hi / lo:.2g}); σ includes that bracket"
    )
    if not ok:
        reason += f" — wider than ±{100 * EIV_MAX_HALF_WIDTH:.0f} % about its centre (r² < 1/3): not identifiable"
    return EivBracket(bracket_std(value, lo, hi), reason, ok)


def inertia_sigma(rp: RollPitch, c: np.ndarray, st: DelaySettings) -> float:
    """σ of c_x I_xx + c_y I_yy: the roll/pitch flights' own noise (`influence_sd` of the combined
    influence series) plus the thrust flight's, through ∂I/∂θ and θ's covariance (first order;
    independent flights), plus each axis's errors-in-variables bracket (`eiv_bracket`; the
    axes' unknown error splits independent)."""
    zx, zy = rp.inertia.influence[rp.inertia.chosen]
    g = c @ rp.grad
    eiv = float(c**2 @ rp.eiv_var)
    return math.sqrt(
        influence_sd(c[0] * zx + c[1] * zy, rp.lengths, st.autocorr_correction) ** 2
        + max(float(g @ rp.theta_cov @ g), 0.0)
        + eiv
    )


def predict_scores(ang: Angular, inertia: tuple[float, float, float], st: DelaySettings) -> dict[str, list[float]]:
    """How a roll/pitch model predicts other flights: R² and relative error norm of the filtered
    angular acceleration ((τ - gyroscopic) / I), and R² of the angular-rate change over the
    prediction horizon."""
    r2a, rel, r2w = [], [], []
    cpl = gyro_coupling(*inertia) * st.gyroscopic
    for ax in (0, 1):
        y, p = ang.acc[:, ax], (ang.tau[:, ax] - cpl[ax] * ang.prec[:, ax]) / inertia[ax]
        r2a.append(r2(y, p))
        rel.append(float(np.linalg.norm(y - p) / np.linalg.norm(y)))
        ys, ps = [], []
        for raw in ang.raw:
            yy, pp = _dw_prediction(raw, np.arange(len(raw["t"])), st.pred_horizon, ax, cpl[ax])
            ys.append(yy)
            ps.append(pp / inertia[ax])
        r2w.append(r2(np.concatenate(ys), np.concatenate(ps)))
    return {"r2_acc": r2a, "rel_err_acc": rel, "r2_dw": r2w}
