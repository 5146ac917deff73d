"""The battery voltage in delay's thrust curve (`rotorid.methods.voltage`): the exponent α of
the commands' factor (V / V_ref)^α before the motor lag fitted on the thrust flights, the σ it adds to T_m and
the coefficients, and what the thrust at hover loses over the flights' voltage range."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.methods import voltage
from rotorid.methods.delay.problem import ThrustProblem
from rotorid.methods.delay.search import TmSearch, neg_log_prior, residual_tau
from rotorid.methods.delay.settings import DelaySettings, tm_support
from rotorid.vehicle import Vehicle


def usable(flights: list[Flight], others: list[Flight], vehicle: Vehicle, st: DelaySettings, notes: list[str]) -> bool:
    """Whether the voltage curve competes with the plain one: `st.voltage` is "auto" or "on" and
    the thrust `flights` and the `others` (roll/pitch, yaw; their commands are scaled alike)
    carry it. A note says why not when they log a voltage; "on" then raises."""
    if st.voltage == "off":
        return False
    why = voltage.unusable(flights, vehicle) or (voltage.unusable(others, vehicle) if others else None)
    if why is None:
        return True
    if st.voltage == "on":
        raise RotoridError(f"delay: --voltage on, but {why}; use --voltage auto or off")
    if any(f.vbat is not None for f in flights + others):
        notes.append(f"Battery voltage not in the thrust curve: {why}.")
    return False


def tm_at(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, n_eff: float) -> tuple[float, float]:
    """(T_m, negative log-posterior) of `prob` at its best T_m: the T_m search's objective (eq.
    55-61, weight `n_eff`) minimised (bounded Brent, to `tm_xtol`) within a factor 2 of the
    plain curve's `sym.tm` inside the search range."""
    lo, hi = tm_support(st)
    nlp = lambda tm: 0.5 * n_eff * math.log(prob.sse((tm, tm))) + float(neg_log_prior(tm, st.tm_prior))
    r = optimize.minimize_scalar(
        nlp, bounds=(max(lo, 0.5 * sym.tm), min(hi, 2.0 * sym.tm)), method="bounded", options={"xatol": st.tm_xtol}
    )
    return float(r.x), float(r.fun)


def candidate(
    flights: list[Flight], vehicle: Vehicle, st: DelaySettings, rich: tuple[int, ...], sym: TmSearch
) -> tuple[voltage.VoltageModel, float]:
    """The voltage curve to compare with the plain one and its T_m: α by the profile of the T_m
    search's likelihood over T_m (the voltage enters before the motor lag, so α and T_m are
    correlated: sag under load acts through T_m, and the plain curve's T_m absorbs part of it),
    with the `rich` curve; the effective sample count of α's σ from the plain curve's residual
    (`sym`), then from the voltage curve's own; V_ref the thrust flights' median voltage."""
    v_ref, v_min, v_max = voltage.model_span(flights)

    def prob(alpha: float) -> ThrustProblem:
        model = voltage.VoltageModel(alpha, 0.0, v_ref, v_min, v_max)
        return ThrustProblem(flights, vehicle, rich, st.per_motor, st.acc_bias_z[0], model)

    n_eff = sym.n / sym.tau_int
    alpha, std = voltage.fit_alpha(lambda a: tm_at(prob(a), sym, st, n_eff)[1])
    p = prob(alpha)
    tm, _ = tm_at(p, sym, st, n_eff)
    if st.autocorr_correction:  # n_eff from the voltage curve's own residual: the plain one holds its misfit
        tau = residual_tau(p.fit((tm, tm))[0].residual, p, [len(f.t) for f in flights])
        std *= math.sqrt(tau / sym.tau_int)  # σ ∝ 1/sqrt(n_eff); α itself does not depend on n_eff
    return voltage.VoltageModel(alpha, std, v_ref, v_min, v_max), tm


def identified(model: voltage.VoltageModel, st: DelaySettings, notes: list[str]) -> voltage.VoltageModel | None:
    """`model` where its α is identified; None with a note where it ran to a search bound
    (`voltage.at_bound`): no curve competes with it. `--voltage on` then refuses."""
    why = voltage.at_bound(model.alpha)
    if not why:
        return model
    if st.voltage == "on":
        raise RotoridError(f"delay: --voltage on, but {why}; use --voltage auto or off")
    notes.append(f"Battery voltage not in the thrust curve: {why}.")
    return None


def alpha_term(
    prob: ThrustProblem, sym: TmSearch, model: voltage.VoltageModel, st: DelaySettings, theta: np.ndarray | None = None
) -> np.ndarray:
    """Δθ (T_m, coefficients) of α moved by its σ (`voltage.alpha_doubt`), for the covariance
    (`structure.widened`): T_m searched again there (α and T_m are correlated) and the
    coefficients refitted; from `theta` (T_m, coefficients at α), by default `sym`'s."""

    def refit(moved: voltage.VoltageModel) -> np.ndarray:
        up = dataclasses.replace(prob, voltage=moved)
        tm, _ = tm_at(up, sym, st, sym.n / sym.tau_int)
        return np.concatenate([[tm], up.fit((tm, tm))[0].x])

    return voltage.alpha_doubt(model, refit, np.concatenate([[sym.tm], sym.unc.fit.x]) if theta is None else theta)
