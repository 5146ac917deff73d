"""The identified vehicle: a `Result` (delay, tls or online) mapped onto a `Vehicle`.

`vehicle_from_result(result, base)` is `base` with every quantity the result identified
replaced. Every method stores `vehicle_from_result(result, input_vehicle)` as
`Result.vehicle` (`with_vehicle`), so applying the mapping again to `Result.vehicle` gives the
same vehicle: validation and export may start from either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rotorid.errors import RotoridError, VehicleError
from rotorid.result import Result, with_units
from rotorid.vehicle import Vehicle

#: Inertia tensor elements, diagonal first (the canonical names of `rotorid.result.PARAMS`).
INERTIA = ("I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")

Getter = Callable[[str], float | None]


def getter(result: Result, config: str | None) -> Getter:
    """name -> finite value of `NAME@config` (when `config` is given) else `NAME`, or None."""

    def get(name: str) -> float | None:
        for n in ([f"{name}@{config}"] if config else []) + [name]:
            if n in result.params and np.isfinite(result.params[n].value):
                return float(result.params[n].value)
        return None

    return get


def parallel_axis(inertia: np.ndarray, mass: float, offset: np.ndarray) -> np.ndarray:
    """m (|c|² 1 - c cᵀ): what the inertia about a point at `offset` from the CoM exceeds the
    inertia about the CoM by (add it to move from the CoM, subtract it to move to the CoM)."""
    c = np.asarray(offset, dtype=float)
    return inertia + mass * (c @ c * np.eye(3) - np.outer(c, c))


def _mass(result: Result, get: Getter, config: str | None, base: Vehicle) -> float:
    """The configuration's measured mass (TLS `settings["masses"]`, the only one of a
    single-configuration run), else an identified `mass`, else the base's."""
    masses = result.settings.get("masses") or {}
    if config is None and len(masses) == 1:
        config = next(iter(masses))
    mass = masses.get(config) if config else None
    mass = mass if mass is not None else get("mass")
    return float(mass) if mass is not None else base.mass


def _thrust(result: Result, get: Getter, base: Vehicle) -> dict[str, Any]:
    """Thrust curve: per motor `thrust_cJ_mK`, lumped `thrust_cJ`, per motor `k_t_mK` (tls's
    rotor gains), or `k_t` (f = k_t u²)."""
    lumped: dict[int, float] = {}
    per_motor: dict[int, dict[int, float]] = {}
    for k, v in result.params.items():
        if not k.startswith("thrust_c"):
            continue
        e, _, m = k[len("thrust_c") :].partition("_m")
        if e.isdigit() and not m:
            lumped[int(e)] = v.value
        elif e.isdigit() and m.isdigit():
            per_motor.setdefault(int(e), {})[int(m)] = v.value
    if per_motor:
        exps = sorted(per_motor)
        coeffs = np.array([[per_motor[e][m + 1] for e in exps] for m in range(base.n_rotors)])
    elif lumped:
        exps = sorted(lumped)
        coeffs = np.array([lumped[e] for e in exps])
    elif (kt := get("k_t")) is not None:
        own = [get(f"k_t_m{m + 1}") for m in range(base.n_rotors)]
        exps, coeffs = [2], np.array([[k] for k in own] if None not in own else [kt])
    else:
        return {}
    return {"thrust_exponents": tuple(exps), "thrust_coeffs": coeffs}


def _torque_and_lag(result: Result, get: Getter) -> dict[str, Any]:
    """`k_tau` (or k_d / k_t) and the motor lag `tm` / `tm_rise` / `tm_fall` (or the T_m a TLS
    run assumed)."""
    ch: dict[str, Any] = {}
    k_tau = get("k_tau")
    if k_tau is None and get("k_d") is not None and get("k_t") is not None:
        k_tau = get("k_d") / get("k_t")
    if k_tau is not None:
        ch["k_tau"] = k_tau
    tm = get("tm")
    if tm is None and result.method == "tls":
        tm = result.settings.get("tm")
    if tm is not None:
        ch["tm_rise"] = ch["tm_fall"] = float(tm)
    for k in ("tm_rise", "tm_fall"):
        if (v := get(k)) is not None:
            ch[k] = v
    return ch


def _inertia(result: Result, get: Getter, base: Vehicle) -> np.ndarray | None:
    """Inertia tensor from `I_*`: products default to 0; a diagonal element not identified is
    the base's, else I_zz = I_xx + I_yy (a planar body). None when nothing is identified."""
    vals = {n: get(n) for n in INERTIA}
    if all(v is None for v in vals.values()):
        return None
    prev = base.inertia
    diag = [
        vals[n] if vals[n] is not None else (prev[i, i] if prev is not None else None)
        for i, n in enumerate(INERTIA[:3])
    ]
    if diag[2] is None and diag[0] is not None and diag[1] is not None:
        diag[2] = diag[0] + diag[1]
    if any(v is None for v in diag):
        raise VehicleError(
            f"result ({result.method}) identifies only some of I_xx, I_yy, I_zz and the base vehicle "
            f"'{base.name}' has no inertia to fill the rest; give --vehicle with an inertia"
        )
    xy, xz, yz = (vals[n] or 0.0 for n in INERTIA[3:])
    return np.array([[diag[0], xy, xz], [xy, diag[1], yz], [xz, yz, diag[2]]])


def is_physical(inertia: np.ndarray) -> bool:
    """A rigid body's inertia tensor: symmetric, principal moments positive and each at most
    the sum of the other two (the triangle inequalities, e.g. I_xx + I_yy >= I_zz)."""
    j = np.asarray(inertia, dtype=float)
    if not np.allclose(j, j.T):
        return False
    lam = np.linalg.eigvalsh(j)
    return bool(lam[0] > 0 and lam[0] + lam[1] >= lam[2] * (1 - 1e-12))


def nearest_physical(inertia: np.ndarray) -> np.ndarray:
    """The physical tensor (`is_physical`) nearest `inertia` in the Frobenius norm among those
    with its principal axes: its principal moments projected onto the cone λ_i + λ_j >= λ_k,
    λ_i >= ε (the nearest point of a polyhedron: every set of active constraints tried)."""
    j = 0.5 * (np.asarray(inertia, dtype=float) + np.asarray(inertia, dtype=float).T)
    lam, vec = np.linalg.eigh(j)
    eps = 1e-9 * max(float(np.abs(lam).sum()), 1e-300)
    a = np.array([[1.0, 1.0, -1.0], [1.0, -1.0, 1.0], [-1.0, 1.0, 1.0], *np.eye(3)])
    b = np.array([0.0, 0.0, 0.0, eps, eps, eps])
    best, best_d = None, np.inf
    for mask in range(1 << len(b)):
        act = [i for i in range(len(b)) if mask >> i & 1]
        x = lam.copy()
        if act:
            aa = a[act]
            x = lam - aa.T @ np.linalg.lstsq(aa @ aa.T, aa @ lam - b[act], rcond=None)[0]
        d = float(np.sum((x - lam) ** 2))
        if d < best_d and np.all(a @ x >= b - 1e-12 * max(abs(lam).max(), 1e-300)):
            best, best_d = x, d
    return (vec * best) @ vec.T


def _offset(get: Getter, prefix: str, prev: np.ndarray, first_moment: str = "", mass: float = 1.0) -> np.ndarray | None:
    """A body-frame point `PREFIX_x/y/z` (or first moment / mass), each axis not identified
    kept from `prev`. None when no axis is identified."""
    own = [get(f"{prefix}_{a}") for a in "xyz"]
    ms = [get(f"{first_moment}_{a}") if first_moment else None for a in "xyz"]
    if all(v is None for v in own + ms):
        return None
    return np.array(
        [c if c is not None else (s / mass if s is not None else p) for c, s, p in zip(own, ms, prev, strict=True)]
    )


def vehicle_from_result(result: Result, base: Vehicle, config: str | None = None) -> Vehicle:
    """The identified vehicle: `base` with every quantity the result identified replaced
    (`changes`)."""
    return base.replace(**changes(result, base, config))


def changes(result: Result, base: Vehicle, config: str | None = None) -> dict[str, Any]:
    """What the result changes in `base`, as `Vehicle` fields (not yet checked as a vehicle, so
    an export can examine a non-physical inertia before it is refused).

    Reads canonical names (`rotorid.result.PARAMS`), preferring `NAME@config` when `config`
    is given (default for a combined TLS result: its first configuration): mass (or
    `settings["masses"][config]`), thrust curve `thrust_cJ` (lumped) or `thrust_cJ_mK` (per
    motor) or `k_t_mK` (per motor, f = k_t_mK u^2) or `k_t`, `k_tau` (or k_d/k_t), motor lag `tm` or `tm_rise`/`tm_fall`
    (or the T_m a TLS run assumed), inertia `I_*` (products default to 0; a diagonal element
    not identified is taken from `base`, else I_zz = I_xx + I_yy; moved from the body origin
    to the CoM by the parallel-axis theorem when `settings["inertia_about"] == "origin"`, as
    TLS reports it), CoM `com_*` (or ms/m), IMU position `imu_*`.
    """
    cfgs = result.settings.get("configs") or []
    if config is None and len(cfgs) > 1:
        config = cfgs[0]  # a combined TLS result: the first configuration (the vehicle flown)
    get = getter(result, config)
    ch: dict[str, Any] = {"source": f"result:{result.method}", "name": base.name + (f"@{config}" if config else "")}
    ch["mass"] = _mass(result, get, config, base)
    ch |= _thrust(result, get, base)
    ch |= _torque_and_lag(result, get)
    com = _offset(get, "com", base.com if base.com is not None else np.zeros(3), "ms", ch["mass"])
    if com is not None:
        ch["com"] = com
    inertia = _inertia(result, get, base)
    if inertia is not None:
        if result.settings.get("inertia_about") == "origin":
            inertia = parallel_axis(
                inertia, -ch["mass"], ch.get("com", base.com if base.com is not None else np.zeros(3))
            )
        ch["inertia"] = inertia
    imu = _offset(get, "imu", base.imu_offset)
    if imu is not None:
        ch["imu_offset"] = imu
    return ch


def with_vehicle(result: Result, vehicle: Vehicle, config: str | None = None) -> Result:
    """Set `result.vehicle` to the identified vehicle (`vehicle_from_result` on the input
    `vehicle`) and return the result; when it cannot be built, leave it None with a note.
    Every parameter's unit is set for the motor input the method fitted (`motor_input`)."""
    result.params = with_units(result.params, motor_input(result, vehicle))
    try:
        result.vehicle = vehicle_from_result(result, vehicle, config).to_dict()
    except RotoridError as e:
        result.notes.append(f"no identified vehicle written: {e}")
    return result


def motor_input(result: Result, vehicle: Vehicle) -> str:
    """The kind of motor input the result's rotor coefficients are per: the vehicle's, or
    rad/s where the method used measured rotor speeds (`settings["speed_channel"]`)."""
    channel = result.settings.get("speed_channel")
    used = set(channel.values()) if isinstance(channel, dict) else {channel}
    return "rad_s" if used == {"rotor_speed"} else vehicle.motor_input
