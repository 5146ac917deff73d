"""The battery voltage in the thrust curve, for the methods that fit one (delay, tls).

Motor model: an ESC (or a brushed motor's FET) applies the duty cycle u of the battery voltage
V, so the motor sees u V; its speed obeys J ω' = K_t i - Q(ω), i = (u V - K_e ω) / R, so it
follows u V through the motor's mechanical lag (steady ω = (u V - R i) / K_e, linear in u V
where the resistive drop R i is small). A thrust curve fitted in the command u therefore holds
at one voltage only; at another, the same curve holds in the lag of the effective command
u (V / V_ref) (the Crazyflie firmware's thrust = f(command x V_bat) compensation; ArduPilot's
MOT_BAT_VOLT_MAX/MIN scaling). The voltage acts before the lag: rotor state = lag(u (V /
V_ref)^α), the same lag (`rotorid.signal.motor_lag`) the plain curve puts the command through.
It matters where V moves within T_m, as battery sag under load does. The methods fit the
exponent α: 1 is that motor model, 0 no voltage effect (the plain curve), and the data choose
between the curves by held-out prediction. Commands that set the rotor speed (rad/s,
an ESC with speed control) do not scale with the voltage.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from rotorid.flight import Flight
from rotorid.vehicle import Vehicle

#: Motor inputs a duty cycle of the battery voltage drives (a rad/s command sets the speed).
DUTY_INPUTS = ("normalized", "pwm_us")
#: Range of the voltage exponent α searched (1 the motor model, 0 no effect).
ALPHA_BOUNDS = (-1.0, 3.0)
#: Step of α for the profile's curvature (its σ): a few percent of the model's 1.
ALPHA_STEP = 0.02
#: Relative voltage range (max - min) / median below which the flights say nothing of α.
MIN_SPAN = 0.005


@dataclass(frozen=True)
class VoltageModel:
    """The voltage curve: exponent α ± σ of u (V / V_ref)^α, the reference voltage V_ref (the
    median over the thrust flights: the coefficients hold there) and the flights' range."""

    alpha: float
    std: float
    v_ref: float
    v_min: float
    v_max: float


def unusable(flights: Sequence[Flight], vehicle: Vehicle) -> str | None:
    """Why the voltage curve cannot be fitted to these flights (words), None when it can."""
    if vehicle.motor_input not in DUTY_INPUTS:
        return f"the motor input is {vehicle.motor_input}, a speed command the battery voltage does not scale"
    missing = [f"{f.source}@{f.t[0]:.2f}" for f in flights if f.vbat is None]
    if missing:
        return f"no battery voltage (vbat) in {', '.join(missing[:3])}"
    v = np.concatenate([f.vbat for f in flights])
    if not np.all(v > 0):
        return "the battery voltage is not positive throughout"
    if float(np.ptp(v)) < MIN_SPAN * float(np.median(v)):
        return f"the battery voltage hardly varies ({v.min():.3f}–{v.max():.3f} V)"
    return None


def model_span(flights: Sequence[Flight]) -> tuple[float, float, float]:
    """(median, min, max) battery voltage over the flights, V."""
    v = np.concatenate([f.vbat for f in flights])
    return float(np.median(v)), float(v.min()), float(v.max())


def gain(flight: Flight, model: VoltageModel | None) -> np.ndarray | None:
    """(V / V_ref)^α per sample of `flight`, the factor on its commands before the motor lag; None without a model."""
    return None if model is None else (flight.vbat / model.v_ref) ** model.alpha


def fit_alpha(nlp: Callable[[float], float]) -> tuple[float, float]:
    """α minimising the negative log-likelihood `nlp(α)` (the method's profile likelihood) within
    `ALPHA_BOUNDS`, and its σ from that profile's curvature (inf when flat)."""
    a = float(optimize.minimize_scalar(nlp, bounds=ALPHA_BOUNDS, method="bounded", options={"xatol": 1e-4}).x)
    h = ALPHA_STEP
    curv = (nlp(a + h) - 2.0 * nlp(a) + nlp(a - h)) / h**2
    return a, (1.0 / math.sqrt(curv) if curv > 0 else math.inf)


#: How close to a bound of `ALPHA_BOUNDS` an α counts as at it (ten times the search's tolerance).
BOUND_TOL = 1e-3


def at_bound(alpha: float) -> str:
    """Why α is not identified where it ran to a bound of `ALPHA_BOUNDS` (the profile likelihood still
    falls toward it: the thrust follows something else with the voltage's trend, ground effect or
    saturation near the end of a flight, a sag the model does not have); "" inside the range."""
    bound = next((b for b in ALPHA_BOUNDS if abs(alpha - b) <= BOUND_TOL), None)
    if bound is None:
        return ""
    return (
        f"its exponent α ran to the search bound {bound:g} (not identified: the thrust follows something else "
        "with the voltage's trend, such as ground effect or saturation)"
    )


def alpha_doubt(model: VoltageModel, refit: Callable[[VoltageModel], np.ndarray], theta: np.ndarray) -> np.ndarray:
    """Δθ the doubt about α moves the other estimates `theta` by: `refit` (the method's estimates
    with α held at the given model's) at α + σ(α) minus `theta`, the sensitivity ∂θ/∂α times σ(α)
    to first order; its outer product Δθ Δθᵀ is the covariance α's doubt adds (α is held at its
    estimate when the other parameters are fitted). Zeros where σ(α) is not finite."""
    if not math.isfinite(model.std):
        return np.zeros_like(theta)
    return refit(dataclasses.replace(model, alpha=model.alpha + model.std)) - theta


def hover_drop(model: VoltageModel, thrust_at: Callable[[float], float], hover: float) -> tuple[float, float]:
    """Thrust lost at the hover command `hover` (at V_ref) from the flights' highest to lowest
    voltage, in percent of the thrust at the highest, and its σ from α's (first order).
    `thrust_at(u)` is the identified curve's thrust at effective command u."""

    def drop(a: float) -> float:
        hi, lo = (thrust_at(hover * (v / model.v_ref) ** a) for v in (model.v_max, model.v_min))
        return 100.0 * (1.0 - lo / hi)

    d = drop(model.alpha)
    if not math.isfinite(model.std):
        return d, math.inf
    h = max(model.std, 1e-3)
    return d, abs(drop(model.alpha + h) - drop(model.alpha - h)) / (2.0 * h) * model.std
