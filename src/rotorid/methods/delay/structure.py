"""Model-structure checks of the lag model (a dead time, separate rising/falling constants, rotor
inflow, saturation, the battery's motor model), the thrust curve's choice and its doubt, the
thrust flights' disagreement and the log's time resolution: each a term in σ."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator

import numpy as np
from scipy import optimize, special

from rotorid.errors import ExcitationError, RotoridError
from rotorid.flight import Flight
from rotorid.methods import voltage as vm
from rotorid.methods.delay import voltage as volt
from rotorid.methods.delay.collected import Collected
from rotorid.methods.delay.problem import ThrustProblem
from rotorid.methods.delay.search import TmSearch, neg_log_prior, rise_fall_fit, search_tm
from rotorid.methods.delay.settings import DelaySettings, tm_support
from rotorid.methods.delay.uncertainty import thrust_uncertainty
from rotorid.methods.regression import ols_blocks, reduce_rows
from rotorid.methods.voltage import VoltageModel
from rotorid.signal import butter_filtfilt
from rotorid.vehicle import Vehicle


def widened(sym: TmSearch, delta: np.ndarray, weight: float = 1.0) -> TmSearch:
    """`sym` with the model-structure term w Δθ Δθᵀ added to the covariance of its uncertainty
    (T_m and the thrust coefficients) and T_m's σ read from it."""
    unc = dataclasses.replace(sym.unc, cov=sym.unc.cov + weight * np.outer(delta, delta))
    return dataclasses.replace(sym, unc=unc, std=float(unc.std[0]))


def evidence_weight(lr: float, extra: int, n_eff: float) -> float:
    """The posterior probability of the richer of two nested models at equal prior odds, its
    log-likelihood higher by `lr` for `extra` more parameters, from BIC (k ln n - 2 ln L, n the
    residual's effective sample count `n_eff`): w = 1 / (1 + exp(extra ln(n_eff) / 2 - lr))
    (Raftery 1995; Burnham & Anderson 2002, Sec. 6.4). Where a check's test does not support its
    richer model (1 % level), the two models' difference Δθ enters the covariance as w Δθ Δθᵀ, the
    spread model averaging gives the simpler model's estimate: next to nothing on a long clean
    flight (many effective samples, no evidence), a good part of Δθ Δθᵀ where a residual correlated
    by what neither model has (gusts, a slow disturbance: a few effective samples) leaves the test
    without power though the richer model fits better. Where the test supports it, Δθ Δθᵀ enters
    whole, as before."""
    return float(special.expit(lr - 0.5 * extra * math.log(max(n_eff, 1.0))))


def dead_time_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch | None:
    """Model-structure check of the lag model: a dead time d between the commands and the
    accelerometer (a logging or sensor time offset, which T_m absorbs otherwise; 0 <= d <=
    `dead_time_max`) fitted jointly with T_m. When the data support it (likelihood ratio at
    the residual's effective sample count, one-sided 1 % level, chi-bar² with half its mass at
    d = 0), the reported lag-only values stay (the paper's model, and the effective lag a
    controller sees) and the difference Δθ between the two models' T_m and thrust
    coefficients enters their covariance (Δθ Δθᵀ: the model-structure uncertainty, which
    the roll/pitch and yaw steps propagate like the rest); a note says so in words. Returns
    the search with σ so widened (`widened`), None when the data do not support the dead time."""
    lo, hi = tm_support(st)
    n_eff = sym.n / sym.tau_int
    sse = lambda x: prob.sse((x[0], x[0]), x[1])  # blocked QR: no (N, P) design matrix per evaluation
    nlp = lambda x: 0.5 * n_eff * math.log(sse(x)) + float(neg_log_prior(x[0], st.tm_prior))
    res = optimize.minimize(
        nlp,
        np.array([sym.tm, 0.25 * st.dead_time_max]),
        method="L-BFGS-B",
        bounds=[(lo, hi), (0.0, st.dead_time_max)],
    )
    tm_d, dead = float(res.x[0]), float(res.x[1])
    lr = max(0.5 * n_eff * math.log(sym.unc.fit.sse / sse(res.x)), 0.0)
    p = 0.5 * float(special.chdtrc(1, 2 * lr))
    out.diag.update(dead_time=dead, dead_time_tm=tm_d, dead_time_p=p, dead_time_supported=p < 0.01)
    x_d = prob.fit((tm_d, tm_d), dead)[0].x
    delta = np.concatenate([[sym.tm - tm_d], sym.unc.fit.x - x_d])
    if not p < 0.01:
        return widened(sym, delta, evidence_weight(lr, 1, n_eff))
    out.notes.append(
        f"Residuals are structured: a dead time of {1e3 * dead:.1f} ms between the motor commands and the accelerometer "
        f"fits the thrust flight better (likelihood ratio {lr:.3g}, p = {p:.2g}); with it T_m would be {tm_d:.4g} s "
        f"instead of {sym.tm:.4g} s. T_m is reported as the effective command-to-acceleration lag (the paper's model) "
        "and σ of T_m, the thrust curve and what rests on them includes the difference between the two models."
    )
    return widened(sym, delta)


#: High-pass corner (Hz) that takes the drift out of the climb speed integrated from the accelerometer.
CLIMB_HIGHPASS_HZ = 0.1


def climb_speed(flights: list[Flight]) -> np.ndarray:
    """Climb speed (m/s) along the body z axis of every sample of `flights`, concatenated: the
    accelerometer's z specific force less its mean over the flight, integrated and high-passed
    zero-phase at `CLIMB_HIGHPASS_HZ` (the integral's drift out). Near level flight, as a thrust
    flight is, body z is the vertical; no attitude or position is needed."""
    out = []
    for f in flights:
        a = f.acc[:, 2] - f.acc[:, 2].mean()
        v = np.concatenate([[0.0], np.cumsum(0.5 * (a[1:] + a[:-1]) * np.diff(f.t))])
        out.append(v - butter_filtfilt(v[:, None], f.rate, CLIMB_HIGHPASS_HZ, order=2)[:, 0])
    return np.concatenate(out)


def _extra_blocks(
    prob: ThrustProblem, tm: float, column: Callable[[np.ndarray, slice], np.ndarray]
) -> Iterator[np.ndarray]:
    """The thrust design (`ThrustProblem.design_states`) `CHUNK` rows at a time with one more
    column, `column(rotor states, their sample slice)` (N, M) along the rotor axes: a thrust
    force like the others, so through the flight's accelerometer low-pass."""
    r, at, lp, cur = prob.vehicle.axes[:, prob.rows], 0, None, -1
    for k, w in prob.state_blocks((tm, tm)):
        if k != cur:
            lp, cur = prob.lowpass(k), k
        col = column(w, slice(at, at + len(w))) @ r
        at += len(w)
        yield prob.lowpassed(lp, np.column_stack([prob.design_states([w]), col.reshape(-1)]))


def _inflow_blocks(prob: ThrustProblem, tm: float, v: np.ndarray) -> Iterator[np.ndarray]:
    """`_extra_blocks` with the rotors' u² times the climb speed `v` (the inflow's thrust loss)."""
    return _extra_blocks(prob, tm, lambda w, at: (w * w) * v[at, None])


def _knee_blocks(prob: ThrustProblem, tm: float, knee: float) -> Iterator[np.ndarray]:
    """`_extra_blocks` with each rotor's u² above `knee`², max(u² - knee², 0) (the thrust a
    saturating rotor does not add above its knee)."""
    return _extra_blocks(prob, tm, lambda w, at: np.maximum(w * w - knee * knee, 0.0))


def inflow_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch | None:
    """Model-structure check of the lag model against rotor inflow: a rotor climbing at v_c
    through its own inflow loses thrust, ΔT ≈ -k u² v_c (blade-element theory: 15-25 % of the
    hover thrust per m/s for small quadrotors), a force that follows the climb speed (the
    acceleration's integral), which a lag fit absorbs as less T_m (eschmann-crazyflie with 0.15 per
    m/s: T_m -36 %, z -5). The term k u² v_c (`climb_speed`, `_inflow_blocks`) is fitted with T_m;
    when the data support it (likelihood ratio at the residual's effective sample count, 1 % level,
    χ² with one degree of freedom) the lag-only values stay (the paper's model) and the difference
    Δθ between the two models' T_m and thrust coefficients enters their covariance, as
    `dead_time_check` does; a note gives the inflow model's T_m and its loss per m/s. Returns the
    search with σ so widened (`widened`), None when the data do not support the term."""
    lo, hi = tm_support(st)
    n_eff = sym.n / sym.tau_int
    v = climb_speed(prob.flights)
    sse = lambda tm: reduce_rows(_inflow_blocks(prob, tm, v), prob.b).sse
    res = optimize.minimize_scalar(sse, bounds=(lo, hi), method="bounded", options={"xatol": st.tm_xtol})
    tm_i, sse_i = float(res.x), float(res.fun)
    lr = max(0.5 * n_eff * math.log(sym.unc.fit.sse / sse_i), 0.0)
    p = float(special.chdtrc(1, 2 * lr))
    out.diag.update(inflow_tm=tm_i, inflow_p=p, inflow_supported=p < 0.01)
    x_i = ols_blocks(lambda: _inflow_blocks(prob, tm_i, v), prob.b, what="thrust curve with inflow").x
    delta = np.concatenate([[sym.tm - tm_i], sym.unc.fit.x - x_i[:-1]])
    if not p < 0.01:
        return widened(sym, delta, evidence_weight(lr, 1, n_eff))
    names = prob.names()
    per = f", {-x_i[-1] / x_i[names.index('thrust_c2')]:.2g} of the u² thrust per m/s" if "thrust_c2" in names else ""
    out.notes.append(
        f"Residuals are structured: a thrust that falls with the climb speed (rotor inflow{per}) fits the thrust "
        f"flight better (likelihood ratio {lr:.3g}, p = {p:.2g}); with it T_m would be {tm_i:.4g} s instead of "
        f"{sym.tm:.4g} s. T_m and the thrust curve are reported for the lag alone (the paper's model), and σ of them "
        "and of what rests on them includes the difference between the two models."
    )
    return widened(sym, delta)


def curve_doubt(
    prob: ThrustProblem, tm: tuple[float, float], x: np.ndarray, rich: tuple[int, ...], out: Collected
) -> np.ndarray:
    """The thrust curve's choice in its coefficients' σ (the choice's doubt enters σ).
    A simpler curve than the richest (eq. 19-21 with fewer terms) predicts the thrust as well,
    but each coefficient `x` it keeps absorbs the terms it drops: over a hover-centred command
    range u and u² are nearly collinear, so K_2 of u^0+u^2 is not the paper's K_2 of the full
    quadratic. The richest curve fitted at the same motor constants `tm` gives each kept term's
    coefficient there; the differences are returned (in `prob.names()` order) for the reported
    coefficients' σ, a note says so. They leave the covariance of the curve alone: the curves
    agree as functions, so the hover command and the torques that rest on the curve keep theirs."""
    full = dataclasses.replace(prob, exponents=rich)
    x_rich = dict(zip(full.names(), full.fit(tm)[0].x, strict=True))
    delta = x - np.array([x_rich[k] for k in prob.names()])
    out.diag["curve_rich_delta"] = delta
    moved = ", ".join(f"{k} {-d:+.3g}" for k, d in zip(prob.names(), delta, strict=True))
    out.notes.append(
        f"The thrust curve's choice: the richest curve, exponents {rich}, at the same T_m moves the chosen "
        f"coefficients by {moved}; their σ include that difference (the curve as a function, and the hover "
        "command, hardly move)."
    )
    return delta


def motor_model_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch | None:
    """Model-structure check of a plain curve on flights that log a varying battery voltage: the
    motor model (`rotorid.methods.voltage`, α = 1: the motor follows the duty cycle times the
    voltage through its lag, eq. 45-48 on the command times V/V_ref) with the same terms, its
    T_m searched again. Sag under load falls with the thrust the lag delays, a feedback that
    makes the plain curve's response faster: the plain T_m comes out low (9 % sag at hover: ~18 %
    on a thrust flight), and a free α can be pulled anywhere by other effects the flight has.
    When the motor model fits better (same number of parameters: a lower residual at its own
    T_m), its T_m and coefficients are as plausible as the plain ones, and their difference Δθ
    enters the covariance as the other checks' does, with a note; when it fits worse, Δθ enters
    at the motor model's posterior weight expit(lr) (`evidence_weight` with no extra parameter),
    as an unsupported check's does. Returns the search with σ so widened (`widened`); None when
    the curve already holds the voltage, or the log has none."""
    if prob.voltage is not None or st.voltage != "auto" or vm.unusable(prob.flights, prob.vehicle) is not None:
        return None
    motor = dataclasses.replace(prob, voltage=vm.VoltageModel(1.0, 0.0, *vm.model_span(prob.flights)))
    n_eff = sym.n / sym.tau_int
    tm, _ = volt.tm_at(motor, sym, st, n_eff)
    fit = motor.fit((tm, tm))[0]
    lr = 0.5 * n_eff * math.log(sym.unc.fit.sse / fit.sse)
    out.diag.update(motor_model_tm=tm, motor_model_lr=lr)
    delta = np.concatenate([[sym.tm - tm], sym.unc.fit.x - fit.x])
    if not lr > 0:  # as many parameters: the posterior weight of the motor model is expit(lr)
        return widened(sym, delta, evidence_weight(lr, 0, n_eff))
    out.notes.append(
        f"Battery voltage: the motor model (rotor state the lag of command x V/V_ref, α = 1) fits the thrust flight "
        f"better than the plain curve chosen (log-likelihood +{lr:.3g} with as many parameters); with it T_m would "
        f"be {tm:.4g} s instead of {sym.tm:.4g} s (sag under load acts through the lag). σ of T_m, the thrust curve "
        "and what rests on them includes the difference; --voltage on fits the voltage curve."
    )
    return widened(sym, delta)


def voltage_alternative(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch | None:
    """The voltage curve `choose_curve` did not keep, in the plain curve's σ. Where the flights
    log a varying battery voltage and the curve of the command times (V / V_ref)^α (its α
    identified) competes, the held-out choice may keep the plain curve (α = 0) although α is
    not known to be 0: sag under load bends the plain curve in u (K_2 low, K_1 or K_0 high) as
    much as it moves the held-out error. The voltage curve enters at its weight w from the two
    curves' held-out errors (pseudo-BMA, Yao et al. 2018: `evidence_weight` of the held-out
    log-likelihood ratio at the residual's effective sample count): w (Δθ Δθᵀ + a aᵀ), Δθ its
    difference in T_m and coefficients (same terms, its own T_m) and a α's doubt there
    (`volt.alpha_term`). Returns the search so widened, None without such a curve."""
    spec = out.diag.get("curve_voltage")
    if spec is None or prob.voltage is not None:
        return None
    alt, w = VoltageModel(**spec), float(out.diag["curve_voltage_weight"])
    p = dataclasses.replace(prob, voltage=alt)
    tm, _ = volt.tm_at(p, sym, st, sym.n / sym.tau_int)
    theta = np.concatenate([[tm], p.fit((tm, tm))[0].x])
    wide = widened(sym, np.concatenate([[sym.tm], sym.unc.fit.x]) - theta, w)
    wide = widened(wide, volt.alpha_term(p, sym, alt, st, theta), w)
    out.diag["curve_voltage_tm"] = tm
    if w >= 0.05:
        coeffs = ", ".join(f"{k} {v:.4g}" for k, v in zip(prob.names(), theta[1:], strict=True))
        out.notes.append(
            f"Battery voltage: the thrust curve in the command times (V/V_ref)^α (α = {alt.alpha:.3g} ± {alt.std:.2g}) "
            f"predicts the held-out thrust nearly as well as the plain curve chosen (weight {w:.2g} from their held-out "
            f"errors); with it T_m would be {tm:.4g} s and {coeffs}. σ of T_m, the thrust curve and what rests on them "
            "include that curve's difference and α's doubt at that weight."
        )
    return wide


#: Quantiles of the rotor states `saturation_check` tries as the knee above which thrust saturates.
KNEE_QUANTILES = (0.7, 0.8, 0.9, 0.95)


def saturation_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch | None:
    """Model-structure check of the thrust curve (eq. 19) against saturation: a rotor near its
    limit (the ESC's full duty cycle at a sagging battery, the motor's current limit) adds less
    thrust than the quadratic above some state, a knee; a lag fit then bends the whole curve
    (K_2 low, K_1 high) and takes the flattened thrust peaks partly for lag. The term
    k max(u² - u_k², 0) (`_knee_blocks`, k < 0: less thrust above the knee) is fitted with T_m,
    the knee u_k the best of `KNEE_QUANTILES` of the rotor states at the lag-only optimum. When
    the data support it (likelihood ratio at the residual's effective sample count, 1 % level,
    χ² with two degrees of freedom: the knee and k) with k < 0, the lag-only values stay (the
    paper's model) and the difference Δθ between the two models' T_m and thrust coefficients
    enters their covariance, as `inflow_check` does; a note gives the knee and the loss.
    Returns the search with σ so widened (`widened`), None when the data do not support it."""
    lo, hi = tm_support(st)
    n_eff = sym.n / sym.tau_int
    w = np.concatenate(prob.states((sym.tm, sym.tm)))
    knees = np.quantile(w, KNEE_QUANTILES)
    sse = lambda tm, knee: reduce_rows(_knee_blocks(prob, tm, knee), prob.b).sse
    knee = float(min(knees, key=lambda q: sse(sym.tm, q)))
    res = optimize.minimize_scalar(
        lambda tm: sse(tm, knee), bounds=(lo, hi), method="bounded", options={"xatol": st.tm_xtol}
    )
    tm_s, sse_s = float(res.x), float(res.fun)
    lr = max(0.5 * n_eff * math.log(sym.unc.fit.sse / sse_s), 0.0)
    p = float(special.chdtrc(2, 2 * lr))
    x_s = ols_blocks(lambda: _knee_blocks(prob, tm_s, knee), prob.b, what="thrust curve with a knee").x
    supported = p < 0.01 and x_s[-1] < 0
    out.diag.update(saturation_tm=tm_s, saturation_p=p, saturation_knee=knee, saturation_k=float(x_s[-1]))
    out.diag["saturation_supported"] = supported
    if not x_s[-1] < 0:  # more thrust above the knee: not a saturation
        return None
    delta = np.concatenate([[sym.tm - tm_s], sym.unc.fit.x - x_s[:-1]])
    if not supported:
        return widened(sym, delta, evidence_weight(lr, 2, n_eff))
    names = prob.names()
    per = (
        f"; above it each rotor adds {100 * (1 + x_s[-1] / x_s[names.index('thrust_c2')]):.0f} % of the u² thrust"
        if "thrust_c2" in names
        else ""
    )
    out.notes.append(
        f"Residuals are structured: the thrust rises less than the curve above the motor state {knee:.3g}{per} "
        f"(saturation; likelihood ratio {lr:.3g}, p = {p:.2g}); with that knee T_m would be {tm_s:.4g} s instead of "
        f"{sym.tm:.4g} s and the curve below it {', '.join(f'{k} {v:.4g}' for k, v in zip(names, x_s[:-1], strict=True))}. "
        "T_m and the thrust curve are reported for the paper's model, and σ of them and of what rests on them "
        "includes the difference between the two models."
    )
    return widened(sym, delta)


#: `asymmetry_check`'s screen: the largest relative split of its two evaluations, and the
#: p-value above which the full two-constant fit is skipped.
ASYM_SCREEN_STEP = 0.1
ASYM_SCREEN_P = 0.2


def asymmetry_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch | None:
    """Model-structure check of the symmetric lag: separate rising and falling constants (motors
    that spin up faster than they spin down, RLtools' and RotorS's motor models) fitted from the
    symmetric optimum. When the data support them (likelihood ratio at the residual's effective
    sample count, 1 % level, χ² with one degree of freedom), the reported symmetric values stay
    (the paper's model) and, as in `dead_time_check`, the difference Δθ between the two models'
    T_m (the constants' mean) and thrust coefficients enters their covariance (Δθ Δθᵀ), which
    the roll/pitch and yaw steps propagate; a note says so. A screen of two evaluations decides first whether the full fit is worth
    it (`ASYM_SCREEN_P`; the screen's p-value is the diagnostic then). Returns the search with
    σ so widened (`widened`), None when the data do not support the split."""
    n_eff = sym.n / sym.tau_int
    # screen (two evaluations, each ~7 symmetric ones): the split alone, T_m held, through a
    # parabola in δ = (T_rise - T_fall) / (2 T_m) stepped a few of T_m's own σ (a wide step's
    # vertex reads the SSE's skew as a split when an hour of samples makes every SSE difference
    # count); the full fit can only fit better, so a screen far from significance ends the check
    s0, h = sym.unc.fit.sse, float(np.clip(3.0 * sym.std / sym.tm, 0.002, ASYM_SCREEN_STEP))
    sp, sm = prob.sse((sym.tm * (1 + h), sym.tm * (1 - h))), prob.sse((sym.tm * (1 - h), sym.tm * (1 + h)))
    curv = (sp - 2 * s0 + sm) / h**2
    d0 = float(np.clip(-(sp - sm) / (2 * h * curv), -0.5, 0.5)) if curv > 0 else (h if sp < sm else -h)
    best = min(sp, sm, s0 - (sp - sm) ** 2 / (8 * h**2 * curv) if curv > 0 else s0)
    screen = float(special.chdtrc(1, max(n_eff * math.log(s0 / max(best, 1e-300)), 0.0)))
    if screen > ASYM_SCREEN_P:
        out.diag.update(asym_p=screen, asym_supported=False)
        return None
    tr, tf, _, _ = rise_fall_fit(prob, sym, st, sym.tm * np.array([1 + d0, 1 - d0]))  # from the screen's split
    fit = prob.fit((tr, tf))[0]
    lr = max(0.5 * n_eff * math.log(sym.unc.fit.sse / fit.sse), 0.0)
    p = float(special.chdtrc(1, 2 * lr))
    out.diag.update(tm_rise=tr, tm_fall=tf, asym_p=p, asym_supported=p < 0.01)
    delta = np.concatenate([[sym.tm - 0.5 * (tr + tf)], sym.unc.fit.x - fit.x])
    if not p < 0.01:
        return widened(sym, delta, evidence_weight(lr, 1, n_eff))
    out.notes.append(
        f"Residuals are structured: the motors rise in {tr:.4g} s and fall in {tf:.4g} s (likelihood ratio {lr:.3g}, "
        f"p = {p:.2g}) rather than following one lag of {sym.tm:.4g} s. T_m and the thrust curve are reported for the "
        "one lag (the paper's model), and σ of them and of what rests on them includes the difference between the two "
        "models; --asymmetric-tm fits the two constants instead."
    )
    return widened(sym, delta)


def sample_hold_term(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch:
    """The log's time resolution in T_m. The lag of eq. 45-48 holds each logged command for the
    whole sample interval Δt, exact when the command does hold there (the commands are logged at
    the controller's rate or faster, `meta["cmd_hold"]` ≥ Δt, else `meta["motor_hold"]`). A log slower than the controller samples
    a command that moves within each interval: its mean there lags the held sample by up to
    Δt/2, which T_m absorbs (a delay d and a lag T_m are one lag T_m + d to first order), so
    the fitted T_m lies between the truth - Δt/2 (a command smooth within the interval) and the
    truth (one held). Unless every flight records that its commands
    hold, T_m moves by Δt/4 to the middle of that interval and its variance gains the uniform
    interval's (Δt/4)²/3; the coefficients are refitted there. This is also σ's floor from the log's
    time resolution: an exactly fitting model no longer gives σ 1e-20."""
    dt = max(float(np.median(np.diff(f.t))) for f in prob.flights)
    if all(float(f.meta.get("cmd_hold", f.meta.get("motor_hold")) or 0.0) >= 0.99 * dt for f in prob.flights):
        return sym
    tm = sym.tm + 0.25 * dt
    unc = thrust_uncertainty(prob, (tm, tm), [(1.0, 1.0)], st)
    hold = np.zeros(len(unc.theta))
    hold[0] = 0.25 * dt / math.sqrt(3.0)
    # the covariance of the optimum, where the sandwich's residuals are the noise (at the moved
    # T_m they would also hold the shift's misfit, counted twice), with the structure terms
    unc = dataclasses.replace(unc, cov=sym.unc.cov + np.outer(hold, hold))
    out.notes.append(
        f"The log's time resolution: the commands are sampled every {1e3 * dt:.3g} ms and may move between samples "
        f"(a controller faster than the log), which the fitted lag absorbs as up to {0.5e3 * dt:.3g} ms less T_m; "
        f"T_m is reported mid-way, {tm:.4g} s instead of the fit's optimum {sym.tm:.4g} s, with that spread in σ."
    )
    return dataclasses.replace(sym, tm=tm, unc=unc, std=float(unc.std[0]))


def window_scatter(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected) -> TmSearch:
    """Disagreement between thrust flights (windows): with ≥ 2 of them, the T_m search and the
    thrust fit leaving each out in turn; their jackknife covariance (n-1)/n Σ (θ_i - θ̄)(θ_i - θ̄)ᵀ
    (Efron & Stein 1981) is what the flights' disagreement says about θ = (T_m, coefficients).
    Where its T_m variance exceeds what σ allows (under agreement (n-1) var_jack / σ² is about
    χ² with n-1 degrees of freedom; 1 % level, as the other checks), the covariance gains the
    jackknife's share that lifts σ(T_m) to it (what rests on T_m follows) and a note names the
    flight of largest jackknife influence (leaving it out moves T_m furthest from the mean of the
    leave-one-out values). Returns `sym`, so widened when the flights disagree."""
    flights = prob.flights
    if len(flights) < 2 or sym.unc is None:
        return sym
    theta = []
    for i in range(len(flights)):
        sub = dataclasses.replace(prob, flights=flights[:i] + flights[i + 1 :])
        s = search_tm(sub, st)
        theta.append(np.concatenate([[s.tm], sub.fit((s.tm, s.tm))[0].x]))
    th = np.array(theta)
    n = len(th)
    jack = (n - 1) / n * (th - th.mean(axis=0)).T @ (th - th.mean(axis=0))
    p = float(special.chdtrc(n - 1, (n - 1) * jack[0, 0] / sym.std**2))
    out.diag.update(tm_leave_one_out=th[:, 0], tm_jackknife_std=math.sqrt(jack[0, 0]), tm_jackknife_p=p)
    if not p < 0.01:
        return sym
    share = 1.0 - sym.std**2 / jack[0, 0]
    unc = dataclasses.replace(sym.unc, cov=sym.unc.cov + share * jack)
    k = int(np.argmax(np.abs(th[:, 0] - th[:, 0].mean())))  # the most influential flight (jackknife)
    f = flights[k]
    out.notes.append(
        f"The thrust flights disagree: leaving each out in turn gives T_m {', '.join(f'{v:.4g}' for v in th[:, 0])} s "
        f"(jackknife σ {math.sqrt(jack[0, 0]):.2g} s against σ {sym.std:.2g} s of one fit, p = {p:.2g}); without "
        f"{f.source}@{f.t[0]:.2f}:{f.t[-1]:.2f} T_m would be {th[k, 0]:.4g} s. σ of T_m, the thrust curve and what "
        "rests on them grows to cover the scatter."
    )
    return dataclasses.replace(sym, unc=unc, std=float(unc.std[0]))


#: Thrust curves `choose_curve` compares, simplest first: thrust ∝ ω² (rotor speeds, or a
#: command proportional to them), with an offset, with a linear term, the paper's full quadratic.
CURVE_CANDIDATES: tuple[tuple[int, ...], ...] = ((2,), (0, 2), (1, 2), (0, 1, 2))
#: Contiguous blocks per thrust flight for `choose_curve`'s held-out prediction.
CURVE_FOLDS = 5


def _held_out_errors(prob: ThrustProblem, states: list[np.ndarray]) -> np.ndarray:
    """Squared prediction error of each block (`CURVE_FOLDS` contiguous blocks per flight) by
    the curve fitted on the others, at the given rotor states."""
    a, b = prob.design(states), prob.b
    block = np.concatenate(
        [
            np.minimum(np.arange(len(f.t)) * CURVE_FOLDS // len(f.t), CURVE_FOLDS - 1) + CURVE_FOLDS * i
            for i, f in enumerate(prob.flights)
        ]
    )
    block = np.repeat(block, prob.n_rows)
    err = np.empty(CURVE_FOLDS * len(prob.flights))
    for k in range(len(err)):
        out = block == k
        x = np.linalg.lstsq(a[~out], b[~out], rcond=None)[0]
        err[k] = float(np.sum((b[out] - a[out] @ x) ** 2))
    return err


def _hover_failure(prob: ThrustProblem, states: list[np.ndarray]) -> str | None:
    """Why the curve fitted on all samples is no thrust curve (`Vehicle.hover_command`'s words:
    it does not rise through the weight within the command range, which a vehicle that flew
    does), None when it is one."""
    x = np.linalg.lstsq(prob.design(states), prob.b, rcond=None)[0]
    try:
        prob.vehicle.replace(thrust_exponents=prob.exponents, thrust_coeffs=prob.coeffs(x)).hover_command()
    except RotoridError as e:
        return str(e)
    return None


def choose_curve(
    flights: list[Flight], others: list[Flight], vehicle: Vehicle, st: DelaySettings, out: Collected
) -> tuple[tuple[int, ...], VoltageModel | None, TmSearch | None]:
    """The thrust curve from the data (held-out prediction): its terms (`CURVE_CANDIDATES`, or
    the user's `exponents`) and whether the battery voltage enters it (the command times
    (V / V_ref)^α through the motor lag, `rotorid.methods.voltage`, against the command alone, where the thrust
    flights and the `others` log the voltage and `st.voltage` allows it). Each candidate
    predicts every contiguous block of the thrust flights from a fit on the others, at the T_m
    of the richest plain curve (the voltage curves at the richest voltage curve's, found with
    α). Curves that do not rise through the weight within the command range are no thrust
    curves and drop out. The simplest curve (plain before voltage, fewer
    terms first) whose held-out error is not larger than the best's by more than twice the
    difference's standard error (across the blocks) is chosen: a richer curve must predict
    better, not only fit better. Its doubt enters σ in the motor-lag step: the T_m of the
    best-predicting curve when that one is another (`out.diag["curve_tm"]`), and the
    coefficients of the richest curve when a simpler one is chosen (`out.diag["curve_rich"]`,
    `curve_doubt`). Returns the
    exponents, the voltage model (None: the plain curve) and, when the richest plain curve is
    chosen, its T_m search (the motor-lag step's own search of the same problem, so not run
    again: None otherwise). Raises `ExcitationError` when no candidate is a thrust curve."""
    curves = CURVE_CANDIDATES if st.exponents is None else (tuple(st.exponents),)
    with_v = volt.usable(flights, others, vehicle, st, out.notes)
    if len(curves) == 1 and not with_v:
        return curves[0], None, None
    rich = curves[-1]
    plain = {c: ThrustProblem(flights, vehicle, c, st.per_motor, st.acc_bias_z[0]) for c in curves}
    sym = search_tm(plain[rich], dataclasses.replace(st, exponents=rich))
    probs = {} if st.voltage == "on" else {(c, False): p for c, p in plain.items()}
    states = {False: plain[rich].states((sym.tm, sym.tm))}
    model = None
    if with_v:
        model, tm_v = volt.candidate(flights, vehicle, st, rich, sym)
        model = volt.identified(model, st, out.notes)
    if model is not None:
        probs |= {(c, True): ThrustProblem(flights, vehicle, c, st.per_motor, st.acc_bias_z[0], model) for c in curves}
        states[True] = probs[(rich, True)].states((tm_v, tm_v))
    failed = {k: _hover_failure(p, states[k[1]]) for k, p in probs.items()}
    err = {k: _held_out_errors(p, states[k[1]]) for k, p in probs.items() if failed[k] is None}
    if not err:
        src = ", ".join(sorted({f.source for f in flights}))
        raise ExcitationError(
            f"{src}: the thrust flight does not determine a thrust curve: no curve of {curves} fitted to "
            "mass x accelerometer z rises through the weight within the command range (the full quadratic: "
            f"{failed[(rich, st.voltage == 'on')]}); fly the thrust manoeuvre (climbs and descents about hover) or give "
            "--exponents"
        )
    best = min(err, key=lambda k: float(err[k].sum()))

    def within(k: tuple[tuple[int, ...], bool]) -> bool:
        d = err[k] - err[best]
        return float(d.sum()) <= 2.0 * math.sqrt(len(d)) * float(np.std(d, ddof=1))

    chosen = next(k for k in err if within(k))  # plain before voltage, simplest first
    if model is not None and not chosen[1] and (chosen[0], True) in err:  # its doubt: `voltage_alternative`
        n_eff = sym.n / sym.tau_int
        lr = -0.5 * n_eff * math.log(float(err[(chosen[0], True)].sum() / err[chosen].sum()))
        out.diag.update(curve_voltage=dataclasses.asdict(model), curve_voltage_weight=evidence_weight(lr, 0, n_eff))
    rel = {k: float(e.sum() / err[best].sum()) for k, e in err.items()}
    out.diag.update(curve_held_out={c: r for (c, v), r in rel.items() if not v}, curve_best=best[0])
    if model is not None:
        out.diag.update(curve_held_out_voltage={c: r for (c, v), r in rel.items() if v}, curve_best_voltage=best[1])
    if chosen != best:  # the richest plain curve's search is `sym`, done already
        found = sym if best == (rich, False) else search_tm(probs[best], dataclasses.replace(st, exponents=best[0]))
        out.diag["curve_tm"] = found.tm
    if chosen[0] != rich:
        out.diag["curve_rich"] = rich
    out.notes.append(_curve_note(rel, [k for k in probs if k not in err], chosen, model))
    return chosen[0], model if chosen[1] else None, sym if chosen == (rich, False) else None


def _curve_note(
    rel: dict[tuple[tuple[int, ...], bool], float],
    dropped: list[tuple[tuple[int, ...], bool]],
    chosen: tuple[tuple[int, ...], bool],
    model: VoltageModel | None,
) -> str:
    """The notes' account of `choose_curve`: each candidate's held-out error, the chosen one."""
    name = lambda k: "+".join(f"u^{j}" for j in k[0]) + (" of u (V/V_ref)^α" if k[1] else "")
    words = ", ".join(f"{name(k)} {r:.4f}" for k, r in rel.items())
    gone = ", ".join(str(k[0]) + (" (voltage)" if k[1] else "") for k in dropped)
    text = (
        f"Thrust curve terms from the data: held-out error (each fifth of every thrust flight predicted from the rest, "
        f"relative to the best) {words}"
        + (f"; {gone} never carry the weight within the command range" if dropped else "")
        + f". Chosen: exponents {chosen[0]}"
    )
    if model is None:
        return (
            text
            + " (the simplest that predicts as well as the best within twice its standard error; --exponents fixes them)."
        )
    alpha = f"α = {model.alpha:.3g} ± {model.std:.2g}, V_ref {model.v_ref:.3f} V, flights {model.v_min:.3f}–{model.v_max:.3f} V"
    how = "with" if chosen[1] else "without"
    return (
        text + f", {how} the battery voltage (the lag of command x (V/V_ref)^α, {alpha}; the simplest that predicts as "
        "well as the best within twice its standard error, the plain curve first; --exponents and --voltage fix them)."
    )
