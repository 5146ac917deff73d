"""Export an identified vehicle to the files simulators and controllers load.

Every file is produced programmatically (tomli-w, json, ElementTree, `repr` of Python floats,
which round-trips exactly): no number is ever copied by hand. Targets:

- ``toml``    — rotorid's own vehicle TOML (`Vehicle.from_toml` reads it back; the simulator
  flies it).
- ``rotorpy`` — a Python module defining RotorPy's ``quad_params`` dict.
- ``rltools`` — an RLtools / learning-to-fly parameter JSON with the ``dynamics`` block.
- ``gazebo``  — an SDF snippet: the base link's ``<inertial>`` and one
  ``gazebo_motor_model`` plugin per rotor (Gazebo Classic / PX4 SITL; gz-sim's
  MulticopterMotorModel reads the same elements).
- ``px4``, ``ardupilot``, ``ardupilot-sitl``, ``betaflight``, ``crazyflie`` — the parameters
  the flight firmware (or its simulator) loads, each with σ (`rotorid.firmware`).

Every export from a run (`export_params`) first checks what it writes: an inertia tensor that
is not physical (`rotorid.identified.is_physical`) is projected to the nearest physical one
when that moves no element by more than 3 σ (a note in the file and on the terminal), else
refused; a parameter the run calls poorly determined or not identifiable is refused unless
`allow_poor`, and then named in the file and on the terminal.

Conventions and unit conversions (rotorid: body FLU, SI, README "Conventions"):

- rotorid geometry is about the body origin and the inertia about the CoM. RotorPy and RLtools
  put the body frame at the CoM, so rotor (and IMU) positions are exported relative to the CoM.
- A rotor's thrust is the polynomial ``f = sum_j K_j u^j`` in the motor input ``u`` and its drag
  torque ``torque_dir * K_tau * f`` about its axis. RotorPy and Gazebo want ``f = k ω²`` with the
  rotor speed ω in rad/s and the yaw moment ``k_m ω²`` (RotorPy, N m/(rad/s)²) or
  ``momentConstant * f`` (Gazebo, m, = K_tau). For a vehicle commanded in rad/s, ω = u. For
  normalized (or PWM) commands ω is not in the log: the user gives the maximum rotor speed and
  ω = ω_max (u - u_min)/(u_max - u_min) is assumed (speed proportional to command). The pure
  quadratic then matches the identified curve exactly at hover, ``k = f(u_hover)/ω_hover²``;
  where the curve is not a pure square of the command the deviation over
  [u_hover/2, min(u_max, 3 u_hover/2)] is reported.
- RLtools keeps the full quadratic ``f = c0 + c1 a + c2 a²`` over its action ``a`` in
  ``[action_limit.min, action_limit.max]``: the command itself (normalized: [0, 1]; rad/s:
  [0, ω_max]), so no rotor speed is needed. ``rotor_torque_constants`` is K_tau (m).
- Gazebo's ``turningDirection`` is the propeller's spin seen from above: ``ccw`` pushes the body
  clockwise, i.e. rotorid ``torque_dir = -1``; ``cw`` is ``+1``.
"""

from __future__ import annotations

import json
import math
import re
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.errors import ExportError
from rotorid.frames import GRAVITY
from rotorid.util import atomic_write_text, windows_text
from rotorid.vehicle import Vehicle

if TYPE_CHECKING:
    from rotorid.result import Result

FIRMWARE = ("px4", "ardupilot", "ardupilot-sitl", "betaflight", "crazyflie")
FORMATS = ("toml", "rotorpy", "rltools", "gazebo", *FIRMWARE)
#: What each format writes, by quantity (`_QUANTITY` maps the run's parameters to them).
WRITES: dict[str, frozenset[str]] = {
    "toml": frozenset({"mass", "thrust", "k_tau", "tm", "inertia", "com", "imu"}),
    "rotorpy": frozenset({"mass", "thrust", "k_tau", "tm", "inertia", "com", "imu"}),
    "rltools": frozenset({"mass", "thrust", "k_tau", "tm", "inertia", "com"}),
    "gazebo": frozenset({"mass", "thrust", "k_tau", "tm", "inertia", "com"}),
    "px4": frozenset({"mass", "thrust", "k_tau", "tm", "inertia", "com"}),
    "ardupilot": frozenset({"mass", "thrust"}),
    "ardupilot-sitl": frozenset({"mass", "thrust", "inertia", "com"}),
    "betaflight": frozenset({"mass", "thrust"}),
    "crazyflie": frozenset({"thrust", "k_tau", "com"}),
}
_QUANTITY = (
    ("thrust_c", "thrust"),
    ("k_t", "thrust"),
    ("hover_cmd", "thrust"),
    ("k_tau", "k_tau"),
    ("k_d", "k_tau"),
    ("tm", "tm"),
    ("I_", "inertia"),
    ("mass", "mass"),
    ("com_", "com"),
    ("ms_", "com"),
    ("imu_", "imu"),
)
#: An inertia element may move by at most this many σ when projected to a physical tensor.
PROJECT_SIGMAS = 3.0
#: Relative deviation (over the hover range) above which the pure-quadratic fit is warned about.
QUADRATIC_WARN = 0.10


def _need(v: Vehicle, target: str, *fields: str) -> None:
    """Raise ExportError naming every field `target` needs that the vehicle lacks."""
    what = {
        "inertia": "the inertia tensor (I_xx, I_yy, I_zz): identify it (any method) or put `inertia` in the vehicle TOML",
        "thrust_coeffs": "a thrust curve: identify it (delay or tls) or put `thrust_coeffs` in the vehicle TOML",
        "k_tau": "the torque coefficient K_tau: fly a yaw manoeuvre and identify it (delay or tls), or put `k_tau` in the vehicle TOML",
        "tm": "the motor time constant T_m: identify it with --method delay, give it to a tls run with --tm, or put `tm_rise`/`tm_fall` in the vehicle TOML",
    }
    missing = []
    for f in fields:
        val = (v.tm_rise or v.tm_fall) if f == "tm" else getattr(v, f)
        if val is None:
            missing.append(what[f])
    if missing:
        raise ExportError(f"{target} export of '{v.name}' needs " + "; and ".join(missing))


def _tm(v: Vehicle) -> tuple[float, float]:
    rise = v.tm_rise if v.tm_rise is not None else v.tm_fall
    fall = v.tm_fall if v.tm_fall is not None else v.tm_rise
    return float(rise), float(fall)


def _com(v: Vehicle) -> np.ndarray:
    return np.zeros(3) if v.com is None else np.asarray(v.com, dtype=float)


def _coeff_table(v: Vehicle) -> np.ndarray:
    """Per-motor thrust coefficients (M, E) over `v.thrust_exponents`."""
    k = np.atleast_2d(np.asarray(v.thrust_coeffs, dtype=float))
    return np.broadcast_to(k, (v.n_rotors, k.shape[-1])).copy()


def _command_range(v: Vehicle) -> tuple[float, float]:
    if v.motor_input == "pwm_us" and v.pwm_min is not None and v.pwm_max is not None:
        return float(v.pwm_min), float(v.pwm_max)
    return float(v.cmd_min), float(v.cmd_max)


def rotor_speed_model(v: Vehicle, max_rotor_speed: float | None, target: str) -> tuple[float, float, float]:
    """(ω_max rad/s, command at ω = 0, command at ω_max) for targets that need absolute rotor
    speed. rad/s vehicles: ω = u (ω_max = `max_rotor_speed` or `cmd_max`). Others: ω is
    proportional to the command over its range and `max_rotor_speed` is required."""
    lo, hi = _command_range(v)
    if max_rotor_speed is not None and not (math.isfinite(max_rotor_speed) and max_rotor_speed > 0):
        raise ExportError(f"--max-rotor-speed must be a positive number of rad/s, got {max_rotor_speed!r}")
    if v.motor_input == "rad_s":
        w = float(max_rotor_speed) if max_rotor_speed is not None else hi
        return w, 0.0, w
    if max_rotor_speed is None:
        raise ExportError(
            f"{target} needs absolute rotor speed (thrust coefficient in N/(rad/s)^2) but '{v.name}' "
            f"is commanded with {v.motor_input.replace('_', ' ')} values; give the rotor speed at full command with "
            "--max-rotor-speed RAD_S (data sheet: KV x battery volts x 2π/60, or a tachometer)"
        )
    return float(max_rotor_speed), lo, hi


def quadratic_in_speed(v: Vehicle, max_rotor_speed: float | None, target: str) -> dict[str, float]:
    """The pure-quadratic rotor model ``f = k ω²`` matching the identified thrust curve at hover.

    Returns k (N/(rad/s)²), ω_max, ω_min (rad/s), ω at hover and the largest relative thrust
    deviation of the quadratic from the identified curve over [u_h/2, min(u_max, 1.5 u_h)]."""
    _need(v, target, "thrust_coeffs")
    w_max, u0, u1 = rotor_speed_model(v, max_rotor_speed, target)
    omega = lambda u: w_max * (np.asarray(u, dtype=float) - u0) / (u1 - u0)
    u_h = v.hover_command()
    mean_k = np.mean(_coeff_table(v), axis=0)
    curve = lambda u: np.sum(mean_k * np.asarray(u, dtype=float)[..., None] ** np.array(v.thrust_exponents), axis=-1)
    w_h = float(omega(u_h))
    if not w_h > 0:
        raise ExportError(f"{target}: the hover command {u_h:.4g} maps to no rotor speed; check cmd_min/cmd_max")
    k = float(curve(u_h)) / w_h**2
    lo, hi = _command_range(v)
    u = np.linspace(max(0.5 * u_h, lo + 1e-9 * (hi - lo)), min(hi, 1.5 * u_h), 64)
    f = curve(u)
    dev = float(np.max(np.abs(k * omega(u) ** 2 - f) / np.maximum(np.abs(f), 1e-12)))
    w_min = float(max(omega(v.cmd_min), 0.0)) if v.motor_input == "rad_s" else 0.0
    return {"k": k, "omega_max": w_max, "omega_min": w_min, "omega_hover": w_h, "deviation": dev}


def _warn_deviation(q: dict[str, float], target: str) -> None:
    if q["deviation"] > QUADRATIC_WARN:
        warnings.warn(
            f"{target}: the identified thrust curve is not a pure square of rotor speed; the exported "
            f"k ω² matches it at hover and deviates up to {100 * q['deviation']:.0f} % between half and "
            "1.5x hover thrust command",
            stacklevel=3,
        )


def _header(v: Vehicle, source: str, notes: Sequence[str] = ()) -> list[str]:
    from rotorid import __version__

    return [f"generated by rotorid {__version__} from {source or v.source}", f"vehicle '{v.name}'", *notes]


# -- rotorid TOML --------------------------------------------------------------------------
def to_toml(v: Vehicle, source: str = "", notes: Sequence[str] = ()) -> str:
    """rotorid's vehicle TOML (SI, body FLU about the body origin; read back by `Vehicle.load`)."""
    return "".join(f"# {line}\n" for line in _header(v, source, notes)) + v.to_toml()


# -- RotorPy ---------------------------------------------------------------------------------
def _py(x: Any) -> str:
    """Python source for a value: floats by `repr` (exact round trip), arrays as np.array."""
    if isinstance(x, np.ndarray):
        return f"np.array([{', '.join(_py(e) for e in x.tolist())}])"
    if isinstance(x, list):
        return f"[{', '.join(_py(e) for e in x)}]"
    if isinstance(x, bool | int | str):
        return repr(x)
    return repr(float(x))


def rotorpy_params(v: Vehicle, max_rotor_speed: float | None = None) -> dict[str, Any]:
    """RotorPy's ``quad_params`` (see `_rotorpy`)."""
    return _rotorpy(v, max_rotor_speed)[0]


def _rotorpy(v: Vehicle, max_rotor_speed: float | None) -> tuple[dict[str, Any], dict[str, float]]:
    """RotorPy's ``quad_params``: inertia about the CoM (kg m²), ``rotor_pos`` relative to the
    CoM (m), ``rotor_directions`` (sign of each rotor's yaw moment, = rotorid torque_dir),
    ``k_eta`` (N/(rad/s)²), ``k_m = K_tau k_eta`` (N m/(rad/s)²), ``tau_m`` (s), rotor speed
    limits (rad/s), and ``rI``, the IMU position relative to the CoM (m)."""
    target = "RotorPy"
    _need(v, target, "inertia", "thrust_coeffs", "k_tau", "tm")
    axes = v.axes
    if not np.allclose(axes, [0.0, 0.0, 1.0], atol=1e-9):
        bad = int(np.flatnonzero(~np.all(np.isclose(axes, [0.0, 0.0, 1.0], atol=1e-9), axis=1))[0])
        raise ExportError(
            f"{target} assumes every rotor thrusts along body z; rotor {bad + 1} of '{v.name}' has axis "
            f"{axes[bad].tolist()}; use --format rltools or gazebo"
        )
    q = quadratic_in_speed(v, max_rotor_speed, target)
    _warn_deviation(q, target)
    rise, fall = _tm(v)
    c = _com(v)
    j = v.inertia
    params = {
        "mass": float(v.mass),
        "Ixx": float(j[0, 0]),
        "Iyy": float(j[1, 1]),
        "Izz": float(j[2, 2]),
        "Ixy": float(j[0, 1]),
        "Iyz": float(j[1, 2]),
        "Ixz": float(j[0, 2]),
        "num_rotors": v.n_rotors,
        "rotor_pos": {f"r{i + 1}": p - c for i, p in enumerate(v.positions)},
        "rotor_directions": v.torque_dirs.astype(int),
        "rI": np.asarray(v.imu_offset, dtype=float) - c,
        "k_eta": q["k"],
        "k_m": float(v.k_tau) * q["k"],
        "tau_m": 0.5 * (rise + fall),
        "rotor_speed_min": q["omega_min"],
        "rotor_speed_max": q["omega_max"],
    }
    return params, q


def to_rotorpy(v: Vehicle, max_rotor_speed: float | None = None, source: str = "", notes: Sequence[str] = ()) -> str:
    """A Python module defining RotorPy's ``quad_params`` (see `rotorpy_params`)."""
    p, q = _rotorpy(v, max_rotor_speed)
    rise, fall = _tm(v)
    doc = [
        f"RotorPy quad_params for '{v.name}'.",
        "",
        *_header(v, source, notes),
        "Units SI; body frame x forward, y left, z up; positions relative to the centre of mass.",
        f"k_eta matches the identified thrust at hover ({q['omega_hover']:.6g} rad/s); max deviation "
        f"{100 * q['deviation']:.2g} % between half and 1.5x hover command.",
    ]
    if not math.isclose(rise, fall):
        doc.append(f"tau_m is the mean of the identified rising ({rise:.6g} s) and falling ({fall:.6g} s) constants.")
    lines = ['"""' + "\n".join(doc) + '\n"""', "", "import numpy as np", "", "quad_params = {"]
    for k, val in p.items():
        if k == "rotor_pos":
            lines.append(f"    {k!r}: {{")
            lines += [f"        {name!r}: {_py(pos)}," for name, pos in val.items()]
            lines.append("    },")
        else:
            lines.append(f"    {k!r}: {_py(val)},")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- RLtools / learning-to-fly ------------------------------------------------------------------
def rltools_dynamics(v: Vehicle) -> dict[str, Any]:
    """RLtools' multirotor ``dynamics`` parameters (l2f): per-rotor positions relative to the
    CoM, thrust and torque directions, thrust polynomial ``[c0, c1, c2]`` over the action
    (the motor command) in ``action_limit``, torque constant K_tau (m), rising/falling motor
    time constants (s), mass, gravity, J and J_inv about the CoM, and the hover command relative
    to the action range."""
    target = "RLtools"
    _need(v, target, "inertia", "thrust_coeffs", "k_tau", "tm")
    exps = v.thrust_exponents
    if max(exps) > 2 or min(exps) < 0:
        raise ExportError(
            f"{target} thrust curves are quadratic (c0 + c1 a + c2 a^2) but '{v.name}' has exponents "
            f"{list(exps)}; identify with --exponents 0,1,2 (or a subset)"
        )
    table = _coeff_table(v)
    poly = np.zeros((v.n_rotors, 3))
    for col, e in enumerate(exps):
        poly[:, e] += table[:, col]
    if v.motor_input == "pwm_us":
        raise ExportError(
            f"{target} needs the command as normalized (0..1) or rad/s, but '{v.name}' is commanded in PWM µs; "
            'convert the vehicle to normalized commands (motor_input = "normalized") and identify again'
        )
    lo, hi = float(v.cmd_min), float(v.cmd_max)
    rise, fall = _tm(v)
    c = _com(v)
    j = np.asarray(v.inertia, dtype=float)
    u_h = v.hover_command()
    return {
        "rotor_positions": (v.positions - c).tolist(),
        "rotor_thrust_directions": v.axes.tolist(),
        "rotor_torque_directions": (v.torque_dirs[:, None] * v.axes + 0.0).tolist(),
        "rotor_thrust_coefficients": poly.tolist(),
        "rotor_torque_constants": [float(v.k_tau)] * v.n_rotors,
        "rotor_time_constants_rising": [rise] * v.n_rotors,
        "rotor_time_constants_falling": [fall] * v.n_rotors,
        "mass": float(v.mass),
        "gravity": [0.0, 0.0, -GRAVITY],
        "J": j.tolist(),
        "J_inv": np.linalg.inv(j).tolist(),
        "hovering_throttle_relative": (u_h - lo) / (hi - lo),
        "action_limit": {"min": lo, "max": hi},
    }


def to_rltools(v: Vehicle, source: str = "", notes: Sequence[str] = ()) -> str:
    """RLtools parameter JSON: ``{"dynamics": {...}}`` (see `rltools_dynamics`) plus a
    ``rotorid`` block with provenance that RLtools ignores."""
    doc = {"dynamics": rltools_dynamics(v), "rotorid": {"note": "; ".join(_header(v, source, notes)), "units": "SI"}}
    text = json.dumps(doc, indent=2, allow_nan=False)
    # one line per vector / matrix row: join arrays that hold only numbers
    return _FLAT.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


_FLAT = re.compile(r"\[\s*([-+0-9.eE,\s]+?)\s*\]")


# -- Gazebo ----------------------------------------------------------------------------------
def _num(x: float) -> str:
    return repr(float(x))


def to_gazebo(v: Vehicle, max_rotor_speed: float | None = None, source: str = "", notes: Sequence[str] = ()) -> str:
    """An SDF snippet: the base link's ``<inertial>`` (mass kg, CoM pose m, inertia about the
    CoM kg m²) and one ``gazebo_motor_model`` plugin per rotor with ``motorConstant``
    (N/(rad/s)²), ``momentConstant`` (= K_tau, m), ``timeConstantUp``/``Down`` (s),
    ``maxRotVelocity`` (rad/s) and ``turningDirection``. Rotor drag and rolling moment are not
    identified by rotorid and set to 0 so the simulated model is the identified one."""
    target = "Gazebo"
    _need(v, target, "inertia", "thrust_coeffs", "k_tau", "tm")
    q = quadratic_in_speed(v, max_rotor_speed, target)
    _warn_deviation(q, target)
    rise, fall = _tm(v)
    c = _com(v)
    j = v.inertia

    def sub(parent: ET.Element, tag: str, text: str | None = None) -> ET.Element:
        e = ET.SubElement(parent, tag)
        if text is not None:
            e.text = text
        return e

    sdf = ET.Element("sdf", version="1.6")
    sdf.append(ET.Comment(" " + "; ".join(_header(v, source, notes)) + " "))
    model = sub(sdf, "model")
    model.set("name", v.name)
    link = sub(model, "link")
    link.set("name", "base_link")
    inertial = sub(link, "inertial")
    sub(inertial, "pose", " ".join(_num(x) for x in (*c, 0.0, 0.0, 0.0)))
    sub(inertial, "mass", _num(v.mass))
    inertia = sub(inertial, "inertia")
    for tag, (a, b) in zip(
        ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)), strict=True
    ):
        sub(inertia, tag, _num(j[a, b]))
    for i, rotor in enumerate(v.rotors):
        model.append(
            ET.Comment(
                f" rotor_{i}: position {' '.join(_num(x) for x in rotor.position)} m (body FLU, about the "
                f"model origin), axis {' '.join(_num(x) for x in rotor.axis)} "
            )
        )
        plugin = sub(model, "plugin")
        plugin.set("name", f"rotor_{i}_motor_model")
        plugin.set("filename", "libgazebo_motor_model.so")
        sub(plugin, "robotNamespace", "")
        sub(plugin, "jointName", f"rotor_{i}_joint")
        sub(plugin, "linkName", f"rotor_{i}")
        sub(plugin, "turningDirection", "ccw" if rotor.torque_dir < 0 else "cw")
        sub(plugin, "timeConstantUp", _num(rise))
        sub(plugin, "timeConstantDown", _num(fall))
        sub(plugin, "maxRotVelocity", _num(q["omega_max"]))
        sub(plugin, "motorConstant", _num(q["k"]))
        sub(plugin, "momentConstant", _num(v.k_tau))
        sub(plugin, "commandSubTopic", "/gazebo/command/motor_speed")
        sub(plugin, "motorNumber", str(i))
        sub(plugin, "rotorDragCoefficient", "0.0")
        sub(plugin, "rollingMomentCoefficient", "0.0")
        sub(plugin, "motorSpeedPubTopic", f"/motor_speed/{i}")
        sub(plugin, "rotorVelocitySlowdownSim", "10")
    ET.indent(sdf, space="  ")
    return '<?xml version="1.0"?>\n' + ET.tostring(sdf, encoding="unicode") + "\n"


def export(
    v: Vehicle,
    fmt: str,
    max_rotor_speed: float | None = None,
    source: str = "",
    notes: Sequence[str] = (),
    sigma: dict[str, float] | None = None,
) -> str:
    """The text of `v` in format `fmt` (one of `FORMATS`), `notes` in its header; a firmware
    format writes each value's σ from `sigma` (name -> σ; none given: "no σ")."""
    if fmt == "toml":
        return to_toml(v, source, notes)
    if fmt == "rotorpy":
        return to_rotorpy(v, max_rotor_speed, source, notes)
    if fmt == "rltools":
        return to_rltools(v, source, notes)
    if fmt == "gazebo":
        return to_gazebo(v, max_rotor_speed, source, notes)
    if fmt in FIRMWARE:
        from rotorid import firmware

        firmware.checked_num_motors(v, fmt)
        return firmware.render(fmt, firmware.VALUES[fmt](v), sigma or {}, _header(v, source, notes))
    raise ExportError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")


def quantity(name: str) -> str | None:
    """The vehicle quantity a run's parameter feeds (thrust, k_tau, tm, inertia, mass, com, imu),
    or None for one no export writes (k_rd, ...)."""
    from rotorid.names import parse

    base = parse(name).base
    for prefix, q in _QUANTITY:
        if base == prefix or (prefix.endswith(("_", "c")) and base.startswith(prefix)):
            return q
    return "tm" if base in ("tm_rise", "tm_fall") else None


def poor_parameters(result: Result, fmt: str, config: str | None, v: Vehicle | None = None) -> list[str]:
    """The parameters feeding what `fmt` writes that the run calls poorly determined or not
    identifiable, each with its verdict in words. The coefficients of a polynomial thrust curve
    (`thrust_cJ`) are judged together, by the thrust at the hover command of the identified
    vehicle `v` (its σ from theirs, independent): one coefficient is often loose alone (it
    trades off against the others) while the curve the firmware uses is well determined."""
    from rotorid.names import parse
    from rotorid.result import LOOSE_PCT, verdict

    out = []
    curve: dict[str, Any] = {}
    for name, e in result.params.items():
        p = parse(name)
        if quantity(name) not in WRITES[fmt] or (p.config is not None and config is not None and p.config != config):
            continue
        if p.base.startswith("thrust_c") and v is not None and v.thrust_coeffs is not None:
            curve[name] = e
            continue
        vd = verdict(e, result.observability.get(name))
        if vd.cls == "bad":
            out.append(f"{name} ({vd.word}{f', %σ {e.rel_std_pct:.3g}' if vd.word == 'poor' else ''})")
    if curve:
        u = v.hover_command()
        f = sum(e.value * u ** parse(n).exponent for n, e in curve.items()) / (
            v.n_rotors if any(parse(n).motor for n in curve) else 1
        )
        sd = math.sqrt(sum((e.std * u ** parse(n).exponent) ** 2 for n, e in curve.items()))
        sd /= v.n_rotors if any(parse(n).motor for n in curve) else 1
        pct = 100 * sd / abs(f) if f else math.inf
        if pct > LOOSE_PCT:  # NaN (no σ) is "no σ", not poor
            out.append(f"the thrust curve (thrust at hover %σ {pct:.3g}, from {', '.join(curve)})")
    return out


def _inertia_sigma(result: Result, config: str | None) -> np.ndarray:
    """σ of each inertia element (NaN where the run gives none)."""
    from rotorid.identified import INERTIA

    idx = {"I_xx": (0, 0), "I_yy": (1, 1), "I_zz": (2, 2), "I_xy": (0, 1), "I_xz": (0, 2), "I_yz": (1, 2)}
    s = np.full((3, 3), np.nan)
    for n in INERTIA:
        e = result.params.get(f"{n}@{config}") if config else None
        e = e or result.params.get(n)
        if e is not None:
            a, b = idx[n]
            s[a, b] = s[b, a] = e.std
    return s


def physical_inertia(result: Result, j: np.ndarray, config: str | None, what: str) -> tuple[np.ndarray, list[str]]:
    """`j` if it is a physical inertia tensor, else the nearest physical one with a note when no
    element moves by more than `PROJECT_SIGMAS` of its σ (an element without σ must not move);
    else `ExportError`."""
    from rotorid.identified import is_physical, nearest_physical

    if is_physical(j):
        return j, []
    p = nearest_physical(j)
    d = np.abs(p - j)
    sd = _inertia_sigma(result, config)
    tol = 1e-9 * float(np.abs(j).max())
    bad = (d > tol) & ~(d <= PROJECT_SIGMAS * np.nan_to_num(sd, nan=0.0))
    names = ("xx", "xy", "xz"), ("xy", "yy", "yz"), ("xz", "yz", "zz")
    moved = ", ".join(
        f"I_{names[a][b]} {j[a, b]:.4g} -> {p[a, b]:.4g}"
        for a, b in zip(*np.triu_indices(3), strict=True)
        if d[a, b] > tol
    )
    lam = np.linalg.eigvalsh(j)
    why = f"principal moments {', '.join(f'{x:.4g}' for x in lam)} kg m² (positive, each at most the sum of the other two)"
    if bad.any():
        raise ExportError(
            f"{what}: the identified inertia tensor is not physical ({why}) and the nearest physical tensor is "
            f"more than {PROJECT_SIGMAS:g} σ away ({moved}); refusing to write it — fly more roll, pitch and yaw "
            "excitation or give the inertia in --vehicle"
        )
    return p, [
        f"NOTE: the identified inertia tensor was not physical ({why}); projected to the nearest physical tensor, within {PROJECT_SIGMAS:g} σ: {moved}"
    ]


def _sigmas(
    result: Result,
    base: Vehicle,
    config: str | None,
    adjust: Callable[[dict[str, Any]], dict[str, Any]],
    fn: Callable[[Vehicle], dict[str, float]],
) -> dict[str, float]:
    """σ of each value of `fn(vehicle)` propagated from the σ of the run's parameters (central
    numerical derivatives through `rotorid.identified.changes`, then `adjust`, as the export
    does; correlations neglected: params.json holds none). NaN for a value no identified
    parameter moves (it comes from the vehicle description)."""
    from rotorid.errors import RotoridError
    from rotorid.identified import changes

    def values(r: Result) -> dict[str, float]:
        return fn(base.replace(**adjust(changes(r, base, config))))

    v0 = values(result)
    var = dict.fromkeys(v0, 0.0)
    for name, e in result.params.items():
        if quantity(name) is None or not (math.isfinite(e.std) and e.std > 0):
            continue
        h = 1e-3 * e.std
        try:
            up = values(replace(result, params={**result.params, name: replace(e, value=e.value + h)}))
            dn = values(replace(result, params={**result.params, name: replace(e, value=e.value - h)}))
        except RotoridError:
            continue
        for k in var:
            var[k] += ((up[k] - dn[k]) / (2 * h) * e.std) ** 2
    return {k: math.sqrt(x) if x > 0 else math.nan for k, x in var.items()}  # 0: not from the run


def _load(params: str | Path, vehicle: str | Path | None, config: str | None) -> tuple[Result, Vehicle, str | None]:
    """The run, its base vehicle (`vehicle` if given, else the one in params.json) and the
    configuration to export (default: the first of a combined result, with a warning)."""
    from rotorid.result import Result

    result = Result.load(params)
    if vehicle is not None:
        base = Vehicle.load(vehicle)
    elif result.vehicle is not None:
        base = Vehicle.from_dict(result.vehicle, source=f"{params} (vehicle)")
    else:
        raise ExportError(f"{params} stores no vehicle; give the vehicle the run used with --vehicle")
    have = list(dict.fromkeys(k.partition("@")[2] for k in result.params if "@" in k))
    if config is None and have:
        config = have[0]
        if len(have) > 1:
            warnings.warn(
                f"{params} holds mass configurations {', '.join(have)}; exporting {config} (choose with --config)",
                stacklevel=3,
            )
    if config is not None and config not in have:
        raise ExportError(f"{params} has no configuration '{config}' (has {', '.join(have) or 'none'})")
    return result, base, config


def _checked(
    result: Result, base: Vehicle, config: str | None, fmt: str, allow_poor: bool, params: str
) -> tuple[Vehicle, Callable[[dict[str, Any]], dict[str, Any]], list[str]]:
    """The identified vehicle as `fmt` may write it, the adjustment applied to the run's changes
    (a projection to a physical inertia; an inertia the format does not write left out when not
    physical) and the notes to write: poor parameters refused unless `allow_poor` (module
    docstring)."""
    from rotorid.errors import RotoridError
    from rotorid.identified import changes, is_physical

    notes: list[str] = []
    ch = changes(result, base, config)
    try:
        identified = base.replace(**{k: x for k, x in ch.items() if k != "inertia"})
    except RotoridError:
        identified = None
    poor = poor_parameters(result, fmt, config, identified)
    if poor and not allow_poor:
        raise ExportError(
            f"{params}: the {fmt} export would write what the run calls poorly determined or not identifiable: "
            f"{', '.join(poor)}; fly the manoeuvres its verdict asks for, give them in --vehicle, or pass "
            "--allow-poor to write them anyway (the file then says so)"
        )
    if poor:
        notes.append(
            f"WARNING: written with --allow-poor; the run calls these poorly determined or not identifiable: {', '.join(poor)}"
        )
    fix = np.zeros((3, 3))
    if "inertia" in ch and "inertia" in WRITES[fmt]:
        j, projected = physical_inertia(result, ch["inertia"], config, params)
        fix = j - ch["inertia"]
        notes += projected

    def adjust(c: dict[str, Any]) -> dict[str, Any]:
        if "inertia" in c and "inertia" in WRITES[fmt]:
            return {**c, "inertia": c["inertia"] + fix}  # a perturbed tensor moves with the projection
        if "inertia" in c and not is_physical(c["inertia"]):
            return {k: x for k, x in c.items() if k != "inertia"}
        return c

    return base.replace(**adjust(ch)), adjust, notes


def export_params(
    params: str | Path,
    fmt: str,
    out: str | Path,
    vehicle: str | Path | None = None,
    max_rotor_speed: float | None = None,
    config: str | None = None,
    allow_poor: bool = False,
) -> Path:
    """Read a `params.json`, build the identified vehicle (`rotorid.identified.changes` on the
    base vehicle: `vehicle` if given, else the one stored in params.json), check what it writes
    (physical inertia, no poor parameter unless `allow_poor`: see the module docstring) and
    write it in format `fmt` to `out` atomically (nothing is written when anything is missing).
    For a combined multi-configuration result `config` picks the configuration (default: the
    first). Notes go into the file's header and, as warnings, to the terminal."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
    result, base, config = _load(params, vehicle, config)
    v, adjust, notes = _checked(result, base, config, fmt, allow_poor, str(params))
    sigma = None
    if fmt in FIRMWARE:
        from rotorid import firmware

        sigma = _sigmas(result, base, config, adjust, firmware.VALUES[fmt])
        hover = result.params.get(f"hover_cmd@{config}") if config else None
        hover = hover or result.params.get("hover_cmd")
        if hover is not None and math.isfinite(hover.std):  # the run's own σ of the hover command
            lo, hi = _command_range(v)
            sigma["hover_pct"] = 100 * hover.std / (hi - lo)
    for n in notes:
        warnings.warn(f"{fmt} export: {n}", stacklevel=2)
    logs = [
        f"{i.get('path')} ({windows_text(i.get('windows'))}, sha256 {str(i.get('sha256'))[:12]})" for i in result.inputs
    ]
    provenance = [f"identified from {'; '.join(logs)}"] if logs else []
    volt = result.settings.get("voltage_model")
    if volt and fmt in FIRMWARE:
        provenance.append(
            f"the thrust curve holds at the battery voltage V_ref {volt['v_ref']:.3f} V (voltage-aware fit)"
            + ("; the Crazyflie firmware's battery compensation has no parameters" if fmt == "crazyflie" else "")
        )
    text = export(
        v, fmt, max_rotor_speed, source=f"{params} (method {result.method})", notes=provenance + notes, sigma=sigma
    )
    if volt and fmt == "ardupilot":
        from rotorid import firmware

        a = result.params.get("thrust_v_exp")
        text += firmware.ardupilot_battery(volt, (a.value, a.std) if a else (math.nan, math.nan))
    out = Path(out)
    if out.is_dir():
        raise ExportError(f"{out}: is a folder; --out takes a file name, e.g. {out / ('vehicle.' + _SUFFIX[fmt])}")
    atomic_write_text(out, text)
    return out


_SUFFIX = {
    "toml": "toml",
    "rotorpy": "py",
    "rltools": "json",
    "gazebo": "sdf",
    "px4": "params",
    "ardupilot": "parm",
    "ardupilot-sitl": "json",
    "betaflight": "txt",
    "crazyflie": "yaml",
}
