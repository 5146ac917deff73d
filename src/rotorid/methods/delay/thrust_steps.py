"""Steps 1 and 2 of the identification: the motor lag and the thrust curve with the hover check."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from rotorid.errors import ExcitationError
from rotorid.frames import GRAVITY
from rotorid.methods.delay.collected import Collected
from rotorid.methods.delay.problem import DelayProblem, ThrustProblem
from rotorid.methods.delay.search import AsymSearch, TmSearch, search_tm, search_tm_asymmetric
from rotorid.methods.delay.settings import STRUCTURED_TAU, DelaySettings, tm_support
from rotorid.methods.delay.structure import (
    asymmetry_check,
    curve_doubt,
    dead_time_check,
    inflow_check,
    motor_model_check,
    sample_hold_term,
    saturation_check,
    voltage_alternative,
    widened,
    window_scatter,
)
from rotorid.methods.delay.uncertainty import ThrustUncertainty, thrust_uncertainty
from rotorid.methods.delay.voltage import alpha_term
from rotorid.methods.regression import Fit, r2_from_sse
from rotorid.methods.voltage import VoltageModel, hover_drop
from rotorid.result import LOOSE_PCT, Observability
from rotorid.util import subsample
from rotorid.vehicle import Vehicle


@dataclass(frozen=True)
class MotorLag:
    """What step 1 derives: the symmetric T_m search (σ with any model-structure term), the
    motor constants the later steps use (rise, fall; equal unless `asymmetric_tm`) and the joint
    uncertainty of those constants and the thrust coefficients there (with the fit and states)."""

    search: TmSearch
    pair: tuple[float, float]
    unc: ThrustUncertainty


def motor_lag_step(problem: DelayProblem, out: Collected, searched: TmSearch | None = None) -> MotorLag:
    """Step 1: T_m (or rising/falling constants) from the thrust flight; the joint uncertainty
    (with the thrust fit and motor states) at the chosen constants. `searched`: the T_m search
    of this thrust problem already done (`structure.choose_curve`'s of the curve it chose), not
    run again. Raises `ExcitationError` when the thrust does not follow the commands or fits
    equally well for every T_m."""
    prob, st = problem.thrust, problem.settings
    sym = searched or search_tm(prob, st)
    tm_pair = (sym.tm, sym.tm)
    src = ", ".join(sorted({f.source for f in prob.flights}))
    fit = sym.unc.fit if sym.unc is not None else prob.fit(tm_pair)[0]
    thrust_r2 = r2_from_sse(fit.sse, prob.b)
    lo, hi = float(np.min(sym.sse)), float(np.max(sym.sse))
    flat = hi <= 1e-12 * float(np.dot(prob.b, prob.b))  # an exact fit (rounding level) at every T_m
    lr = 0.0 if flat else math.inf if lo == 0 else 0.5 * (sym.n / sym.tau_int) * math.log(hi / lo)
    if not thrust_r2 >= st.min_thrust_r2 or lr < 0.5 * special.chdtri(1, 0.001):
        raise ExcitationError(
            f"{src}: not enough excitation for T_m: the measured thrust (mass x accelerometer z) "
            f"{'does not follow the motor commands' if not thrust_r2 >= st.min_thrust_r2 else 'fits equally well for every T_m'} "
            f"(R² {thrust_r2:.2f}, log-likelihood range {lr:.2g}); fly the thrust manoeuvre (repeated climbs and "
            "descents with sharp throttle changes)"
        )
    tm_obs = Observability(True, rel_std_pct=100.0 * sym.std / sym.tm)
    if sym.at_edge:
        lo, hi = tm_support(st)
        sym = dataclasses.replace(sym, std=_edge_std(sym, lo, hi))
        side = "lower" if sym.tm - lo < hi - sym.tm else "upper"
        tm_obs = Observability(
            True,
            at_bound=f"the {side} bound {lo if side == 'lower' else hi:.4g} s of the T_m search",
            rel_std_pct=100.0 * sym.std / sym.tm,
            reason=f"T_m optimum {sym.tm:.4g} s lies at the edge of the search range [{lo:.4g}, {hi:.4g}] s",
            advice="widen tm_bounds if the motor can be that fast/slow, or fly sharper throttle steps",
        )
        out.notes.append(
            f"T_m: the optimum {sym.tm:.4g} s is at the {side} edge of the search range [{lo:.4g}, {hi:.4g}] s: "
            f"not identified; σ {sym.std:.2g} s is the distance to where the likelihood has fallen by e^-1/2."
        )
    out.diag.update(
        tm_grid=sym.grid,
        tm_sse=sym.sse,
        tm_rmse=np.sqrt(sym.sse / sym.n),
        tm_nlp=sym.nlp,
        tm_opt=sym.tm,
        tm_std=sym.std,
        tm_at_edge=sym.at_edge,
        thrust_r2=thrust_r2,
        tau_int=sym.tau_int,
    )
    if not st.asymmetric_tm:
        why: list[str] = []
        if sym.unc is not None:
            sym, why = _structure_terms(prob, sym, st, out, problem.voltage)
            tm_pair = (sym.tm, sym.tm)
        if why:
            tm_obs.reason = "σ includes the model-structure term: " + "; ".join(why)
        if sym.unc is not None:
            tm_obs.rel_std_pct = 100 * sym.std / sym.tm
        tm_obs = _behind_acc_filter(prob, sym, tm_obs, out)
        out.put("tm", sym.tm, sym.std)
        out.obs["tm"] = tm_obs
        return MotorLag(sym, tm_pair, sym.unc or thrust_uncertainty(prob, tm_pair, [], st))
    asym = _asymmetric_step(prob, sym, tm_obs, st, out)
    tm_pair = (asym.tm_rise, asym.tm_fall)
    return MotorLag(sym, tm_pair, asym.unc or thrust_uncertainty(prob, tm_pair, [], st))


def _behind_acc_filter(prob: ThrustProblem, sym: TmSearch, obs: Observability, out: Collected) -> Observability:
    """Where the firmware low-passed the accelerometer (`meta["acc_lowpass"]`, modelled in the
    fit), say so; and when T_m is then poorly determined or at a search bound below the filter's
    delay, refuse it with that reason: the filter's group delay at low frequency, √2/(2π f_c) for the biquad (22 ms at
    10 Hz), is in every measured specific force, and a motor lag below it leaves too little
    phase in what the filter passes to be told apart (a poor T_m above that delay keeps its
    ordinary verdict, one at the upper bound its "not identified")."""
    cut = sorted({float(f.meta["acc_lowpass"]["hz"]) for f in prob.flights if f.meta.get("acc_lowpass")})
    if not cut:
        return obs
    hz = ", ".join(f"{c:g}" for c in cut)
    delay_ms = 1e3 * math.sqrt(2.0) / (2.0 * math.pi * min(cut))
    out.notes.append(
        f"The firmware low-passed the accelerometer at {hz} Hz before logging it (a biquad, header acc_lpf_hz): "
        f"the thrust model passes through the same filter, whose ~{delay_ms:.0f} ms delay is not motor lag."
    )
    pct = 100.0 * sym.std / sym.tm
    if not ((sym.at_edge or pct > LOOSE_PCT) and sym.tm < 1e-3 * delay_ms):
        return obs
    return Observability(
        False,
        rel_std_pct=pct,
        at_bound=obs.at_bound,
        reason=(
            f"the log's accelerometer is low-passed at {hz} Hz (~{delay_ms:.0f} ms delay); the motor lag left after it "
            f"({1e3 * sym.tm:.1f} ± {1e3 * sym.std:.1f} ms{', at a search bound' if sym.at_edge else ''}) is faster "
            "than that filtered specific force resolves"
        ),
        advice=(
            "log the accelerometer unfiltered (Betaflight CLI: set acc_lpf_hz = 0) or the rotor speeds "
            "(bidirectional DShot eRPM) and fly the thrust manoeuvre again"
        ),
    )


def _structure_terms(
    prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected, model: VoltageModel | None
) -> tuple[TmSearch, list[str]]:
    """What the symmetric T_m's σ holds beyond the fit's own: the model-structure checks (dead
    time, rising/falling, inflow, saturation, the battery's motor model), the thrust curve's
    choice, the voltage exponent's σ, the windows' disagreement, and the log's time resolution
    (which also moves T_m, `sample_hold_term`); the reasons in words."""
    why = []
    checks = (
        (st.dead_time_check, dead_time_check, "dead_time_supported", lambda d: (
            f"a {1e3 * d['dead_time']:.1f} ms dead time with T_m {d['dead_time_tm']:.4g} s fits better than the pure lag"
        )),
        (st.asymmetry_check, asymmetry_check, "asym_supported", lambda d: (
            f"separate rising/falling constants {d['tm_rise']:.4g} s / {d['tm_fall']:.4g} s fit better than one"
        )),
        (st.inflow_check, inflow_check, "inflow_supported", lambda d: (
            f"a thrust falling with the climb speed (rotor inflow) with T_m {d['inflow_tm']:.4g} s fits better"
        )),
        (st.saturation_check, saturation_check, "saturation_supported", lambda d: (
            f"a thrust that saturates above the state {d['saturation_knee']:.3g} fits better"
        )),
    )  # fmt: skip
    for asked, check, supported, words in checks:  # each widens σ by its evidence (`evidence_weight`)
        if asked and (wide := check(prob, sym, st, out)) is not None:
            sym = wide
        if asked and out.diag.get(supported):
            why.append(words(out.diag))
    if "curve_tm" in out.diag:
        sym = widened(sym, np.eye(len(sym.unc.theta))[0] * (sym.tm - out.diag["curve_tm"]))
        why.append(f"the best-predicting thrust curve {out.diag['curve_best']} gives T_m {out.diag['curve_tm']:.4g} s")
    sym = _battery_terms(prob, sym, st, out, model, why)
    if (wide := window_scatter(prob, sym, st, out)) is not sym:
        sym = wide
        why.append("the thrust flights disagree beyond σ (leave-one-out)")
    held = sample_hold_term(prob, sym, st, out)
    out.diag["tm_hold_shift"] = held.tm - sym.tm
    return held, why


def _battery_terms(
    prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: Collected, model: VoltageModel | None, why: list[str]
) -> TmSearch:
    """The battery voltage in the symmetric T_m's σ: α's doubt where the curve holds the voltage;
    else the plain curve's two alternatives, each at its weight: the voltage curve with α as the
    data put it (`voltage_alternative`) and the motor model's α = 1 (`motor_model_check`). Reasons
    into `why`."""
    if model is not None:
        return widened(sym, alpha_term(prob, sym, model, st))
    if (wide := voltage_alternative(prob, sym, st, out)) is not None:
        sym = wide
        if out.diag["curve_voltage_weight"] >= 0.05:
            why.append(
                f"the battery-voltage curve gives T_m {out.diag['curve_voltage_tm']:.4g} s and predicts nearly as well"
            )
    if (wide := motor_model_check(prob, sym, st, out)) is not None:
        sym = wide
        if out.diag["motor_model_lr"] > 0:
            why.append(
                f"the battery's motor model (α = 1) gives T_m {out.diag['motor_model_tm']:.4g} s and fits better"
            )
    return sym


def _edge_std(sym: TmSearch, lo: float, hi: float) -> float:
    """σ of a T_m at a search bound, where the curvature says nothing: the distance from it to
    where the negative log-posterior has risen by 1/2 (the profile likelihood's one-sided 1σ
    interval, interpolated between the evaluated points), the whole range when it never does."""
    rise = sym.nlp - float(np.min(sym.nlp))
    inward = sym.grid > sym.tm if sym.tm - lo < hi - sym.tm else sym.grid < sym.tm
    order = np.argsort(np.abs(sym.grid - sym.tm))
    dist, r = np.abs(sym.grid - sym.tm)[order], rise[order]
    keep = inward[order] | (dist == 0)
    dist, r = dist[keep], r[keep]
    k = int(np.argmax(r >= 0.5)) if np.any(r >= 0.5) else -1
    if k <= 0:
        return hi - lo if k < 0 else float(dist[0] or hi - lo)
    return float(np.interp(0.5, [r[k - 1], r[k]], [dist[k - 1], dist[k]]))


def _asymmetric_step(
    prob: ThrustProblem, sym: TmSearch, tm_obs: Observability, st: DelaySettings, out: Collected
) -> AsymSearch:
    """Step 1b: separate rising/falling constants and whether the data support the split."""
    asym = search_tm_asymmetric(prob, sym, st)
    supported = asym.p_value < 0.01
    drop = 100.0 * (1.0 - asym.sse / float(np.min(sym.sse)))
    out.put("tm_rise", asym.tm_rise, asym.std[0])
    out.put("tm_fall", asym.tm_fall, asym.std[1])
    for k, v, s in (("tm_rise", asym.tm_rise, asym.std[0]), ("tm_fall", asym.tm_fall, asym.std[1])):
        out.obs[k] = (
            Observability(True, rel_std_pct=100 * s / v if s == s else float("nan"))
            if not asym.at_edge
            else replace(tm_obs, identifiable=False, reason="rising/falling optimum at the edge of the range")
        )
    out.notes.append(
        f"Separate rising/falling constants T_rise = {asym.tm_rise:.4g} s, T_fall = {asym.tm_fall:.4g} s "
        f"(symmetric T_m = {sym.tm:.4g} s) lower the residual by {drop:.2f} % (F = {asym.f_stat:.3g}, "
        f"p = {asym.p_value:.2g} with {sym.n / sym.tau_int:.0f} effective samples): the data "
        f"{'support' if supported else 'do not support'} the split."
    )
    out.diag.update(
        tm_rise=asym.tm_rise, tm_fall=asym.tm_fall, asym_f=asym.f_stat, asym_p=asym.p_value, asym_supported=supported
    )
    return asym


def _hover_grad(prob: ThrustProblem, x: np.ndarray, hover: float, exponents: tuple[int, ...]) -> np.ndarray:
    """Gradient of the hover command with respect to the thrust coefficients `x` (implicit
    function theorem on mean thrust(hover) = weight), for its first-order σ."""
    lmap = prob.mean_curve_map()
    e = np.array(exponents, dtype=float)
    kbar = lmap @ x
    dfdu = float(np.sum(kbar * np.where(e > 0, e * hover ** np.maximum(e - 1, 0), 0.0)))
    return -(hover**e) / dfdu @ lmap


def thrust_step(problem: DelayProblem, lag: MotorLag, out: Collected) -> Vehicle:
    """Step 2: the thrust curve and the hover command with their σ (marginal over T_m,
    `thrust_uncertainty`); returns the vehicle with the identified curve and motor lag."""
    prob, st, sym, tm_pair, unc = problem.thrust, problem.settings, lag.search, lag.pair, lag.unc
    fit, states = unc.fit, unc.states
    ccov = unc.coeff_cov
    own = np.sqrt(np.clip(np.diag(ccov), 0.0, None))  # the curve's: what the acc bias is weighed against
    std = own
    if "curve_rich" in out.diag:  # the coefficients' meaning, not the curve's shape: not in ccov
        std = np.hypot(own, curve_doubt(prob, tm_pair, fit.x, out.diag["curve_rich"], out))
    gb = unc.bias_grad[len(unc.dirs) :]
    beta, beta_sd = st.acc_bias_z
    bias_words = (
        f"the accelerometer z bias {beta:g} ± {beta_sd:g} m/s² (setting acc_bias_z): airborne flights cannot "
        "separate it from the constant thrust term K_0"
    )

    def rests_on_bias(g: float, sd: float) -> bool:  # the bias moves the value by > 0.1 of its other σ
        return abs(g) * max(beta_sd, abs(beta)) > 0.1 * math.sqrt(max(sd**2 - (g * beta_sd) ** 2, 0.0))

    for k, nm in enumerate(prob.names()):
        if rests_on_bias(gb[k], own[k]):
            for name in (
                [f"thrust_c0_m{i + 1}" for i in range(prob.vehicle.n_rotors)]
                if prob.shared_c0 and nm == "thrust_c0"
                else [nm]
            ):
                out.assumed[name] = bias_words
        if nm == "thrust_c0" and prob.shared_c0:
            for i in range(prob.vehicle.n_rotors):
                out.put(f"thrust_c0_m{i + 1}", fit.x[k], std[k])
            out.notes.append(
                "Per-motor curves: the constant term K_0 cannot be split among rotors with parallel axes "
                "(identical regressor columns in eq. 21); it is shared."
            )
        else:
            out.put(nm, fit.x[k], std[k])
        out.obs[nm if not (nm == "thrust_c0" and prob.shared_c0) else "thrust_c0_m1"] = Observability(
            True, rel_std_pct=float(100 * std[k] / abs(fit.x[k])) if fit.x[k] else float("inf")
        )
    ident = prob.vehicle.replace(
        thrust_exponents=st.exponents, thrust_coeffs=prob.coeffs(fit.x), tm_rise=tm_pair[0], tm_fall=tm_pair[1]
    )
    hover = ident.hover_command()
    grad = _hover_grad(prob, fit.x, hover, st.exponents)
    hover_std = float(math.sqrt(max(grad @ ccov @ grad, 0.0)))
    out.put("hover_cmd", hover, hover_std)
    if rests_on_bias(float(grad @ gb), hover_std):
        out.assumed["hover_cmd"] = bias_words
    out.obs["hover_cmd"] = Observability(True, rel_std_pct=100 * hover_std / hover)
    if problem.voltage is not None:
        _voltage_terms(problem.voltage, ident, hover, out)

    _thrust_diagnostics(prob, fit, ccov, states, st, out)
    _hover_check(prob, states, hover, st, out)
    out.notes.append(
        "Measured quantity: b = m · acc (the accelerometer's specific force, rotor force / mass, eq. 5 and 17); "
        f"body row(s) {', '.join('xyz'[r] for r in prob.rows)} used. Standard deviations account for the "
        f"residual autocorrelation at the optimum (integrated autocorrelation time {sym.tau_int:.1f} samples)."
    )
    if sym.tau_int > STRUCTURED_TAU:
        out.notes.append(
            f"Residuals are structured: the thrust residual at the optimum is correlated over {sym.tau_int:.0f} samples "
            "where the lag model leaves white sensor noise, so the model misses something (e.g. a time offset "
            "between the motor commands and the IMU, which T_m absorbs: T_m is then the effective command-to-"
            "acceleration lag; or motors that differ). σ includes the residual's correlation, not such a bias."
        )
    return ident


def _thrust_diagnostics(
    prob: ThrustProblem, fit: Fit, ccov: np.ndarray, states: list[np.ndarray], st: DelaySettings, out: Collected
) -> None:
    """What the report draws of the thrust fit: measured against modelled thrust (and without
    the lag), over time where one row per sample, and the mean motor's curve with its covariance."""
    meas = prob.b
    nodelay_fit, _ = prob.fit((0.0, 0.0))
    sub = subsample(len(meas))
    out.diag.update(
        thrust_meas=meas[sub],
        thrust_pred=(prob.design(states) @ fit.x)[sub],
        thrust_pred_nodelay=(meas - nodelay_fit.residual)[sub],
        thrust_t=np.concatenate([f.t for f in prob.flights])[sub] if prob.n_rows == 1 else sub.astype(float),
        thrust_nodelay_r2=r2_from_sse(nodelay_fit.sse, meas),
        thrust_cond=fit.cond,
        curve_coef=prob.mean_curve_map() @ fit.x,  # the mean motor's curve: thrust against command
        curve_cov=prob.mean_curve_map() @ ccov @ prob.mean_curve_map().T,
        curve_exponents=np.array(st.exponents, dtype=float),
        curve_rotors=prob.vehicle.n_rotors,
        curve_range=np.array([prob.vehicle.cmd_min, prob.vehicle.cmd_max]),
    )
    if prob.n_rows == 1:  # one row per sample: the motors' mean state beside each measured thrust
        out.diag["thrust_state"] = np.concatenate([w.mean(axis=1) for w in states])[sub]


def _voltage_terms(model: VoltageModel, ident: Vehicle, hover: float, out: Collected) -> None:
    """The voltage curve's exponent α with σ and the thrust the hover command loses over the
    flights' voltage range (`rotorid.methods.voltage.hover_drop`), as parameters and a note."""
    out.put("thrust_v_exp", model.alpha, model.std)
    out.obs["thrust_v_exp"] = Observability(
        True, rel_std_pct=100 * model.std / abs(model.alpha) if model.alpha else math.inf
    )
    m = ident.n_rotors
    drop, drop_std = hover_drop(model, lambda u: float(ident.thrust(np.full((1, m), u)).sum()), hover)
    out.put("thrust_v_drop", drop, drop_std)
    out.obs["thrust_v_drop"] = Observability(True, rel_std_pct=100 * drop_std / abs(drop) if drop else math.inf)
    out.notes.append(
        f"Battery voltage in the thrust curve: the coefficients and the hover command hold at V_ref = {model.v_ref:.3f} V "
        f"(the thrust flights' median); at another voltage V the curve holds in the lag of the command times (V/V_ref)^α, "
        f"α = {model.alpha:.3g} ± {model.std:.2g} (1 where rotor speed follows the effective voltage). Over the "
        f"flights' {model.v_min:.3f}–{model.v_max:.3f} V the thrust at the hover command falls by {drop:.2f} ± "
        f"{drop_std:.2g} % from the highest voltage to the lowest."
    )
    out.diag.update(voltage_alpha=model.alpha, voltage_alpha_std=model.std, voltage_v_ref=model.v_ref)


def _hover_check(
    prob: ThrustProblem, states: list[np.ndarray], hover: float, st: DelaySettings, out: Collected
) -> None:
    """Hover check (Fig. 6): motor states where |specific force| ~ g (zero world acceleration)
    against the hover command the thrust curve predicts."""
    acc = np.vstack([f.acc for f in prob.flights])
    ws = np.vstack(states).mean(axis=1)
    cmds = np.vstack([f.cmd for f in prob.flights]).mean(axis=1)
    dev = np.abs(np.linalg.norm(acc, axis=1) - GRAVITY)
    near = dev <= np.quantile(dev, st.hover_fraction)
    out.diag.update(hover_states=ws[near], hover_cmds=cmds[near], hover_pred=hover)
    med = float(np.median(ws[near]))
    off = f"{100 * (hover - med) / med:+.2f} %" if med != 0 else "motors off there: no hover to compare"
    out.notes.append(
        f"Hover check (Fig. 6): the motor states of the {100 * st.hover_fraction:g} % of samples nearest zero "
        f"world acceleration have median {med:.4f}; the thrust curve predicts hover at {hover:.4f} ({off})."
    )
    out.diag["hover_median"] = med
