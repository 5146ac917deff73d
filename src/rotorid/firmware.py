"""Parameters the flight firmware loads, from an identified vehicle.

Every mapping works on the identified per-rotor thrust curve F(u) (the mean over motors of
`Vehicle.thrust`) over the firmware's normalized motor output x in [0, 1], x = (u - lo) /
(hi - lo) with (lo, hi) the vehicle's command range (PWM µs for a PWM vehicle). Rotor-speed
(rad/s) curves have no throttle output and are refused. The curve's shape terms are fitted
over the range a multirotor flies, x in [x_h / 2, 1] (x_h the hover output), and the largest
deviation of the firmware's curve from the identified one there is written in the file.

- PX4 (`.params`, QGroundControl's "Vehicle-Id Component-Id Name Value Type" lines):
  ``THR_MDL_FAC`` a of PX4's thrust model rel_thrust = (1 - a) x + a x² (PX4 parameter reference,
  "Thrust to PWM model parameter": thrust = (1-factor)*PWM + factor*PWM^2); ``MPC_THR_HOVER``
  the hover thrust relative to full thrust F(x_h)/F(1) (the collective thrust setpoint is in
  that linearized unit); the SIH simulator's ``SIH_MASS``, ``SIH_IXX..SIH_IYZ`` (body FRD: the
  xy and xz products change sign), ``SIH_L_ROLL``/``SIH_L_PITCH`` (mean rotor moment arms about
  x and y from the CoM), ``SIH_T_MAX`` = F(1) and ``SIH_Q_MAX`` = K_tau F(1) per rotor and
  ``SIH_T_TAU`` (the motor time constant): src/modules/simulation/simulator_sih/sih.cpp
  applies T = SIH_T_MAX u and Q = SIH_Q_MAX u per rotor, a first-order lag SIH_T_TAU on u.
- ArduPilot (`.parm`, "NAME VALUE" lines): ``MOT_THST_EXPO`` e and ``MOT_THST_HOVER`` of
  AP_Motors' Thrust_Linearization (libraries/AP_Motors/AP_Motors_Thrust_Linearization.cpp):
  thrust fraction = (1 - e) x' + e x'² over x' = (x - MOT_SPIN_MIN) / (MOT_SPIN_MAX -
  MOT_SPIN_MIN); ``MOT_SPIN_MIN`` where the curve crosses zero thrust inside [0, 0.3] (else it
  is not measurable and ArduPilot's default 0.15 is assumed); MOT_SPIN_MAX stays at its default
  0.95; MOT_THST_HOVER = F(x_h) / F(MOT_SPIN_MAX).
- ArduPilot SITL (JSON frame model read by libraries/SITL/SIM_Frame.cpp `load_frame_params`,
  ``--model quad:FILE.json``; "#" comments are stripped by the loader): mass, diagonal_size,
  moment_inertia (principal axes only), num_motors, propExpo (= MOT_THST_EXPO), hoverThrOut
  (hover thrust over full thrust, = MOT_THST_HOVER: `Frame::init` sets the rotors' maximum
  outflow velocity to the hover one over √hoverThrOut, thrust growing with its square),
  spin_min/spin_max.
- Betaflight (CLI ``set`` lines): ``thrust_linear`` (percent) of src/main/flight/pid.c
  `pidApplyThrustLinearization` (4.3 and later): output = m (1 + TL (1 - m)²) for the desired
  thrust fraction m, fitted so that F(output)/F(1) = m; the hover throttle as a comment.
- Crazyflie (cflib's persistent-parameter YAML, ``type: persistent_param_state``, loaded by
  `ParamFileHelper`/cfclient): ``quadSysId.pwmToThrustA``/``pwmToThrustB`` of
  src/modules/src/power_distribution_quadrotor.c, thrust per rotor = A p² + B p (N) over the
  normalized motor ratio p (motor.m*/65535, before battery compensation),
  ``quadSysId.thrustToTorque`` (= K_tau, m) and ``quadSysId.armLength`` (CoM to rotor, m).

Battery voltage (where the identification fitted the voltage-aware thrust curve, params.json
settings "voltage_model"): the curve above then holds at that run's V_ref, and
- ArduPilot gets ``MOT_BAT_VOLT_MAX``/``MOT_BAT_VOLT_MIN``: AP_MotorsMulticopter
  update_lift_max_from_batt_voltage divides the thrust demand by lift_max = (1 - e) v + e v²,
  v = V / MOT_BAT_VOLT_MAX (constrained to MIN..MAX), i.e. it models thrust at output x as the
  curve at x (V / MOT_BAT_VOLT_MAX): the identified curve's exponent α = 1. The parameter
  reference (libraries/AP_Motors/AP_MotorsMulticopter.cpp) recommends 4.2 and 3.3 V per cell;
  the cells are counted from V_ref (`BATTERY_CELL_NOMINAL` V each).
- Crazyflie: the firmware's battery compensation (src/drivers/src/motors.c,
  motorsCompensateBatteryVoltage, CONFIG_ENABLE_THRUST_BAT_COMPENSATED) uses compiled-in
  constants, no parameter, so nothing voltage-aware is exported; the file says at which
  voltage its coefficients hold.

σ: each value's σ is propagated from the σ of the parameters it is computed from (numerical
derivative through `rotorid.identified.changes`); params.json holds no covariances, so the
correlations between the parameters are neglected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rotorid.errors import ExportError
from rotorid.vehicle import Vehicle

#: ArduPilot defaults assumed where the flight cannot measure them.
AP_SPIN_MIN, AP_SPIN_MAX = 0.15, 0.95
#: Search window for the zero-thrust output MOT_SPIN_MIN (ArduPilot's range is 0..0.3).
AP_SPIN_MIN_RANGE = (0.0, 0.3)
#: Grid of the curve fits.
_GRID = 200


@dataclass(frozen=True)
class Setting:
    """One firmware parameter: name, value, σ (NaN: none), and what it is (unit, meaning)."""

    name: str
    value: float
    sigma: float
    what: str


def _curve(v: Vehicle) -> Callable[[np.ndarray], np.ndarray]:
    """F(x): mean per-rotor thrust (N) at normalized motor output x."""
    if v.thrust_coeffs is None:
        raise ExportError(f"'{v.name}' has no thrust curve: identify one (delay or tls) first")
    if v.motor_input == "rad_s":
        raise ExportError(
            f"'{v.name}''s thrust curve is over rotor speed (rad/s); firmware thrust parameters are over the "
            "throttle output: identify with the motor commands (a normalized or PWM vehicle)"
        )
    k = np.atleast_2d(v.thrust_coeffs).mean(axis=0)
    e = np.array(v.thrust_exponents)
    lo, hi = _range(v)
    return lambda x: np.sum(k * (lo + np.asarray(x, dtype=float)[..., None] * (hi - lo)) ** e, axis=-1)


def _range(v: Vehicle) -> tuple[float, float]:
    if v.motor_input == "pwm_us" and v.pwm_min is not None and v.pwm_max is not None:
        return float(v.pwm_min), float(v.pwm_max)
    return float(v.cmd_min), float(v.cmd_max)


def hover_output(v: Vehicle) -> float:
    """The normalized motor output at hover."""
    lo, hi = _range(v)
    return (v.hover_command() - lo) / (hi - lo)


def _fit_range(v: Vehicle, top: float = 1.0) -> np.ndarray:
    return np.linspace(0.5 * hover_output(v), top, _GRID)


def expo_fit(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares a of y = (1 - a) x + a x² (PX4 THR_MDL_FAC, ArduPilot MOT_THST_EXPO)."""
    b = x * x - x
    return float(np.sum((y - x) * b) / np.sum(b * b))


def _deviation(model: np.ndarray, y: np.ndarray) -> float:
    return float(np.max(np.abs(model - y) / np.maximum(np.abs(y), 1e-12)))


def _lateral_arms(v: Vehicle) -> tuple[float, float]:
    """Mean |y| and |x| of the rotors from the CoM (m): the roll and pitch moment arms."""
    r = v.positions - (np.zeros(3) if v.com is None else v.com)
    return float(np.mean(np.abs(r[:, 1]))), float(np.mean(np.abs(r[:, 0])))


def _need(v: Vehicle, target: str, *what: str) -> None:
    missing = [w for w in what if (getattr(v, w) if w != "tm" else v.tm_rise) is None]
    if missing:
        raise ExportError(
            f"{target} export of '{v.name}' needs {', '.join(missing)}: identify it or give it in --vehicle"
        )


# -- the values --------------------------------------------------------------------------------
def px4_values(v: Vehicle) -> dict[str, float]:
    """PX4 parameters (see the module docstring) and the fit's deviation (`_dev`)."""
    _need(v, "PX4", "inertia", "k_tau", "tm")
    f = _curve(v)
    x = _fit_range(v)
    y = f(x) / f(1.0)
    a = expo_fit(x, y)
    t_max = float(f(1.0))
    j = v.inertia
    l_roll, l_pitch = _lateral_arms(v)
    tau = 0.5 * (v.tm_rise + (v.tm_fall or v.tm_rise))
    return {
        "THR_MDL_FAC": a,
        "MPC_THR_HOVER": float(f(hover_output(v)) / t_max),
        "SIH_MASS": float(v.mass),
        "SIH_IXX": float(j[0, 0]),
        "SIH_IYY": float(j[1, 1]),
        "SIH_IZZ": float(j[2, 2]),
        "SIH_IXY": -float(j[0, 1]),  # FLU -> FRD
        "SIH_IXZ": -float(j[0, 2]),
        "SIH_IYZ": float(j[1, 2]),
        "SIH_L_ROLL": l_roll,
        "SIH_L_PITCH": l_pitch,
        "SIH_T_MAX": t_max,
        "SIH_Q_MAX": float(v.k_tau) * t_max,
        "SIH_T_TAU": float(tau),
        "_dev": _deviation((1 - a) * x + a * x * x, y),
    }


def spin_min(v: Vehicle) -> float | None:
    """The motor output where the identified thrust crosses zero inside AP_SPIN_MIN_RANGE, or
    None when it does not (not measurable from this curve)."""
    f = _curve(v)
    x = np.linspace(*AP_SPIN_MIN_RANGE, 3001)
    y = f(x)
    cross = np.flatnonzero((y[:-1] <= 0) & (y[1:] > 0))
    if not cross.size:
        return None
    i = int(cross[-1])
    return float(x[i] - y[i] * (x[i + 1] - x[i]) / (y[i + 1] - y[i]))


def ardupilot_values(v: Vehicle) -> dict[str, float]:
    """ArduPilot MOT_* parameters (see the module docstring); `_spin_min_measured` 1/0, `_dev`."""
    f = _curve(v)
    smin = spin_min(v)
    s0 = AP_SPIN_MIN if smin is None else smin
    xp = np.linspace((0.5 * hover_output(v) - s0) / (AP_SPIN_MAX - s0), 1.0, _GRID).clip(0.0, 1.0)
    out = s0 + xp * (AP_SPIN_MAX - s0)
    y = f(out) / f(AP_SPIN_MAX)
    e = expo_fit(xp, y)
    vals = {
        "MOT_THST_EXPO": e,
        "MOT_THST_HOVER": float(f(hover_output(v)) / f(AP_SPIN_MAX)),
        "_spin_min_measured": float(smin is not None),
        "_dev": _deviation((1 - e) * xp + e * xp * xp, y),
    }
    if smin is not None:
        vals["MOT_SPIN_MIN"] = smin
    return vals


def sitl_values(v: Vehicle) -> dict[str, float]:
    """ArduPilot SITL frame model values (see the module docstring)."""
    _need(v, "ArduPilot SITL", "inertia")
    ap = ardupilot_values(v)
    r = v.positions - (np.zeros(3) if v.com is None else v.com)
    lam = np.linalg.eigvalsh(v.inertia)
    return {
        "mass": float(v.mass),
        "diagonal_size": 2.0 * float(np.mean(np.linalg.norm(r[:, :2], axis=1))),
        "Ixx": float(v.inertia[0, 0]),
        "Iyy": float(v.inertia[1, 1]),
        "Izz": float(v.inertia[2, 2]),
        "propExpo": ap["MOT_THST_EXPO"],
        "hoverThrOut": ap["MOT_THST_HOVER"],
        "spin_min": ap.get("MOT_SPIN_MIN", AP_SPIN_MIN),
        "spin_max": AP_SPIN_MAX,
        "_products": float(np.max(np.abs(v.inertia - np.diag(np.diag(v.inertia)))) / float(lam.max())),
        "_dev": ap["_dev"],
    }


def bf_output(m: np.ndarray, tl: float) -> np.ndarray:
    """Betaflight's motor output for the desired thrust fraction m (pid.c, 4.3+)."""
    return m * (1.0 + tl * (1.0 - m) ** 2)


def betaflight_values(v: Vehicle) -> dict[str, float]:
    """Betaflight thrust_linear (percent, 0..150) and the hover throttle (percent of the output
    range): TL minimizes the squared error of F(output(m))/F(1) - m over m in the flown range."""
    from scipy.optimize import minimize_scalar

    f = _curve(v)
    m = _fit_range(v)
    err = lambda tl: float(np.sum((f(bf_output(m, tl)) / f(1.0) - m) ** 2))
    tl = float(minimize_scalar(err, bounds=(0.0, 1.5), method="bounded", options={"xatol": 1e-6}).x)
    y = f(bf_output(m, tl)) / f(1.0)
    return {"thrust_linear": 100.0 * tl, "hover_pct": 100.0 * hover_output(v), "_dev": _deviation(y, m)}


def crazyflie_values(v: Vehicle) -> dict[str, float]:
    """Crazyflie power-distribution coefficients (see the module docstring)."""
    _need(v, "Crazyflie", "k_tau")
    f = _curve(v)
    x = _fit_range(v)
    a_mat = np.column_stack([x * x, x])
    (a, b), *_ = np.linalg.lstsq(a_mat, f(x), rcond=None)
    r = v.positions - (np.zeros(3) if v.com is None else v.com)
    return {
        "quadSysId.pwmToThrustA": float(a),
        "quadSysId.pwmToThrustB": float(b),
        "quadSysId.thrustToTorque": float(v.k_tau),
        "quadSysId.armLength": float(np.mean(np.linalg.norm(r[:, :2], axis=1))),
        "_dev": _deviation(a_mat @ np.array([a, b]), f(x)),
    }


VALUES: dict[str, Callable[[Vehicle], dict[str, float]]] = {
    "px4": px4_values,
    "ardupilot": ardupilot_values,
    "ardupilot-sitl": sitl_values,
    "betaflight": betaflight_values,
    "crazyflie": crazyflie_values,
}


#: ArduPilot's recommended battery-compensation voltages per cell (AP_MotorsMulticopter.cpp
#: MOT_BAT_VOLT_MAX/MIN), and the cell voltage a flight's median is counted in (LiPo, mid-charge).
AP_CELL_MAX, AP_CELL_MIN, BATTERY_CELL_NOMINAL = 4.2, 3.3, 3.8


def ardupilot_battery(model: dict[str, float], alpha: tuple[float, float]) -> str:
    """The `.parm` lines enabling ArduPilot's battery compensation for a run that fitted the
    voltage-aware curve (`model`: its settings' "voltage_model"; `alpha`: thrust_v_exp and σ)."""
    cells = max(1, round(model["v_ref"] / BATTERY_CELL_NOMINAL))
    a, sd = alpha
    lines = [
        f"Battery compensation: the flights' voltage {model['v_min']:.2f}–{model['v_max']:.2f} V (median "
        f"{model['v_ref']:.2f} V: {cells} cell{'s' * (cells > 1)}) entered the thrust curve as the command x (V/V_ref)^α, "
        f"α = {a:.3g} ± {sd:.2g}; ArduPilot's compensation assumes α = 1.",
        f"MOT_BAT_VOLT_MAX/MIN: ArduPilot's recommended {AP_CELL_MAX:g} and {AP_CELL_MIN:g} V per cell (no σ).",
    ]
    if abs(a - 1.0) > 2.0 * sd:
        lines.append(f"The data put α {abs(a - 1.0) / sd:.1f}σ from 1: the compensation will over- or under-correct.")
    body = f"MOT_BAT_VOLT_MAX,{round(AP_CELL_MAX * cells, 3)!r}\nMOT_BAT_VOLT_MIN,{round(AP_CELL_MIN * cells, 3)!r}\n"
    return _comment(lines) + body


# -- rendering ---------------------------------------------------------------------------------
def _sig(s: float) -> str:
    return f"σ {s:.3g}" if math.isfinite(s) else "no σ (from the vehicle description)"


def _comment(lines: Sequence[str], mark: str = "#") -> str:
    return "".join(f"{mark} {ln}\n" if ln else f"{mark}\n" for ln in lines)


_PX4_WHAT = {
    "THR_MDL_FAC": "thrust model factor: rel. thrust = (1-a) x + a x^2 over the motor output x",
    "MPC_THR_HOVER": "hover thrust relative to full thrust",
    "SIH_MASS": "kg",
    "SIH_IXX": "kg m^2, body FRD",
    "SIH_IYY": "kg m^2, body FRD",
    "SIH_IZZ": "kg m^2, body FRD",
    "SIH_IXY": "kg m^2, body FRD",
    "SIH_IXZ": "kg m^2, body FRD",
    "SIH_IYZ": "kg m^2, body FRD",
    "SIH_L_ROLL": "m, rotor moment arm about x",
    "SIH_L_PITCH": "m, rotor moment arm about y",
    "SIH_T_MAX": "N, thrust per rotor at full output",
    "SIH_Q_MAX": "N m, yaw torque per rotor at full output",
    "SIH_T_TAU": "s, motor time constant",
}


def render(fmt: str, vals: dict[str, float], sig: dict[str, float], header: Sequence[str]) -> str:
    """The file text of format `fmt` from the values, their σ and the header lines."""
    pub = {k: x for k, x in vals.items() if not k.startswith("_")}
    dev = f"the firmware's curve deviates from the identified one by up to {100 * vals['_dev']:.2g} % over the flown range"
    if fmt == "px4":
        lines = [
            *header,
            dev,
            "Load: QGroundControl > Vehicle Setup > Parameters > Tools > Load from file.",
            "SIH models thrust as SIH_T_MAX x output (linear): set THR_MDL_FAC = 0 when flying SIH;",
            "the THR_MDL_FAC below is for the real vehicle.",
            "",
            "Vehicle-Id Component-Id Name Value Type",
        ]
        body = "".join(
            f"# {k}: {_PX4_WHAT[k]}, {_sig(sig.get(k, math.nan))}\n1\t1\t{k}\t{x!r}\t9\n" for k, x in pub.items()
        )
        return _comment(lines) + body
    if fmt == "ardupilot":
        lines = [
            *header,
            dev,
            "Load: Mission Planner > Config > Full Parameter List > Load from file, or MAVProxy `param load FILE`.",
        ]
        lines.append(f"MOT_SPIN_MAX assumed at its default {AP_SPIN_MAX:g}.")
        if not vals["_spin_min_measured"]:
            lines.append(
                f"MOT_SPIN_MIN not measurable (the curve does not reach zero thrust in {AP_SPIN_MIN_RANGE[0]:g}–"
                f"{AP_SPIN_MIN_RANGE[1]:g}): ArduPilot's default {AP_SPIN_MIN:g} assumed; keep yours and re-export if it differs."
            )
        body = "".join(f"# {_sig(sig.get(k, math.nan))}\n{k},{x!r}\n" for k, x in pub.items())
        return _comment(lines) + body
    if fmt == "ardupilot-sitl":
        import json

        lines = [
            *header,
            dev,
            "Run: sim_vehicle.py -v ArduCopter -f quad --model quad:THIS_FILE.json",
            "(SIM_Frame strips '#' comments before parsing the JSON.)",
        ]
        if vals["_products"] > 0.01:
            lines.append(
                f"products of inertia up to {100 * vals['_products']:.2g} % of the largest principal moment dropped: SITL takes the diagonal"
            )
        lines += [f"{k}: {_sig(sig.get(k, math.nan))}" for k in pub]
        doc = {
            "mass": pub["mass"],
            "diagonal_size": pub["diagonal_size"],
            "moment_inertia": [pub["Ixx"], pub["Iyy"], pub["Izz"]],
            "num_motors": 4,
            "propExpo": pub["propExpo"],
            "hoverThrOut": pub["hoverThrOut"],
            "spin_min": pub["spin_min"],
            "spin_max": pub["spin_max"],
        }
        return _comment(lines) + json.dumps(doc, indent=2) + "\n"
    if fmt == "betaflight":
        tl = round(pub["thrust_linear"])
        lines = [
            *header,
            dev,
            "Paste into the Betaflight Configurator's CLI tab.",
            f"thrust_linear {pub['thrust_linear']:.3g} % ({_sig(sig.get('thrust_linear', math.nan))} %), rounded",
            f"hover throttle: {pub['hover_pct']:.3g} % of the motor output range ({_sig(sig.get('hover_pct', math.nan))} %);",
            "set your altitude-hold hover throttle to it (its name depends on the Betaflight version).",
        ]
        return _comment(lines) + f"set thrust_linear = {tl}\nsave\n"
    if fmt == "crazyflie":
        lines = [*header, dev, "Load: cfclient Parameters tab > Load, or cflib ParamFileHelper.store_params_from_file."]
        body = "params:\n"
        for k, x in pub.items():
            body += f"  # {_sig(sig.get(k, math.nan))}\n  {k}:\n    default_value: {x!r}\n    is_stored: true\n    stored_value: {x!r}\n"
        return _comment(lines) + body + "type: persistent_param_state\nversion: '1'\n"
    raise ExportError(f"unknown firmware format '{fmt}'")


def checked_num_motors(v: Vehicle, fmt: str) -> None:
    """The PX4 SIH, the SITL frame model and the Crazyflie power distribution are quadrotors."""
    if fmt in ("px4", "ardupilot-sitl", "crazyflie") and v.n_rotors != 4:
        raise ExportError(f"{fmt} export writes a quadrotor model; '{v.name}' has {v.n_rotors} rotors")
