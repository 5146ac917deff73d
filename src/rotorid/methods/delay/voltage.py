"""The battery voltage in delay's thrust curve (`rotorid.methods.voltage`): the exponent α of
the commands' factor (V / V_ref)^α before the motor lag fitted on the thrust flights, the σ it adds to T_m and
the coefficients, and what the thrust at hover loses over the flights' voltage range."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.methods import voltage
from rotorid.methods.delay.problem import ThrustProblem
from rotorid.methods.delay.search import TmSearch, residual_tau
from rotorid.methods.delay.settings import DelaySettings
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


def candidate(
    flights: list[Flight], vehicle: Vehicle, st: DelaySettings, rich: tuple[int, ...], sym: TmSearch
) -> voltage.VoltageModel:
    """The voltage curve to compare with the plain one: α fitted with the `rich` curve at the
    plain curve's T_m (`sym`, whose residual's autocorrelation time sets the effective sample
    count of α's σ), V_ref the thrust flights' median voltage."""
    v_ref, v_min, v_max = voltage.model_span(flights)

    def prob(alpha: float) -> ThrustProblem:
        model = voltage.VoltageModel(alpha, 0.0, v_ref, v_min, v_max)
        return ThrustProblem(flights, vehicle, rich, st.per_motor, st.acc_bias_z[0], model)

    n_eff = sym.n / sym.tau_int  # the Gaussian profile likelihood at the effective sample count
    alpha, std = voltage.fit_alpha(lambda a: 0.5 * n_eff * math.log(prob(a).sse((sym.tm, sym.tm))))
    if st.autocorr_correction:  # n_eff from the voltage curve's own residual: the plain one holds its misfit
        p = prob(alpha)
        tau = residual_tau(p.fit((sym.tm, sym.tm))[0].residual, p, [len(f.t) for f in flights])
        std *= math.sqrt(tau / sym.tau_int)  # σ ∝ 1/sqrt(n_eff); α itself does not depend on n_eff
    return voltage.VoltageModel(alpha, std, v_ref, v_min, v_max)


def alpha_term(prob: ThrustProblem, sym: TmSearch, model: voltage.VoltageModel) -> np.ndarray:
    """Δθ (T_m, coefficients) of α moved by its σ, for the covariance (`structure.widened`):
    the coefficients refitted at T_m with α + σ; T_m held (its search at α ± σ moves it by far
    less than its own σ)."""
    if not np.isfinite(model.std):
        return np.zeros(1 + len(sym.unc.fit.x))
    up = dataclasses.replace(prob, voltage=dataclasses.replace(model, alpha=model.alpha + model.std))
    return np.concatenate([[0.0], up.fit((sym.tm, sym.tm))[0].x - sym.unc.fit.x])
