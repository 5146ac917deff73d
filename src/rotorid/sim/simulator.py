"""Fly one simulated flight: references -> cascade controller -> RK4 plant -> sensors -> `Flight`.

The result is the same `Flight` a reader produces (channels at their own rates put on one grid
by `rotorid.flight.align`, exactly as readers do), plus the true states at the log instants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight, Series, align
from rotorid.frames import GRAVITY
from rotorid.sim.control import CascadeController, Gains
from rotorid.sim.dynamics import Body, Trajectory, accelerations, hover_state, integrate
from rotorid.sim.effects import Plant, PlantSpec
from rotorid.sim.sensors import Imu, Mocap, imu, mocap, origin_position, shake
from rotorid.vehicle import Vehicle


@dataclass(frozen=True)
class References:
    """Controller references on a time grid: CoM position/velocity/acceleration (K, 3), yaw
    (K,), and excitation offsets (K, 3) = (roll, pitch, relative thrust), or (K, 6) with body-rate
    offsets (rad/s) added to the rate target after them."""

    pos: np.ndarray
    vel: np.ndarray
    acc: np.ndarray
    yaw: np.ndarray
    offsets: np.ndarray


#: references(t) for control instants t (K,)
ReferenceFn = Callable[[np.ndarray], References]


@dataclass(frozen=True)
class FlightSpec:
    """How to fly and what to log. `dt` is the internal RK4 step; sensor and control rates
    must divide 1/dt. `thrust_noise` is the per-rotor thrust noise sigma (N, Kwon eq. 51).

    Plant effects the controller does not know (model mismatch; off by default): `rotor_drag`
    (k_rd, N s/m per sqrt(N), `rotorid.sim.dynamics`), `thrust_scale`/`tm_scale` (per-motor
    factors on thrust curve and motor time constants), `rotor_inflow` (k_z, same units as k_rd)
    and the body effects of `plant` (`rotorid.sim.effects`; a battery logs `vbat`). The
    controller uses the nominal vehicle."""

    duration: float
    references: ReferenceFn
    gains: Gains
    imu: Imu
    log_rate: float
    mocap: Mocap | None = None
    dt: float = 1e-3
    control_rate: float = 500.0
    thrust_noise: float = 0.0
    log_cmd: bool = True
    log_rotor_speed: bool = False
    drag: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotor_drag: float = 0.0
    thrust_scale: tuple[float, ...] | None = None
    tm_scale: tuple[float, ...] | None = None
    rotor_inflow: float = 0.0
    plant: PlantSpec = field(default_factory=PlantSpec)
    meta: dict[str, Any] = field(default_factory=dict)


def _every(rate: float, dt: float, what: str) -> int:
    n = 1.0 / (rate * dt)
    if rate <= 0 or abs(n - round(n)) > 1e-9 or round(n) < 1:
        raise RotoridError(f"{what} rate {rate:g} Hz must divide the internal rate {1 / dt:g} Hz")
    return round(n)


def fly(
    vehicle: Vehicle,
    spec: FlightSpec,
    rng: np.random.Generator,
    source: str = "sim",
    progress: Callable[[int], None] | None = None,
) -> tuple[Flight, dict[str, np.ndarray]]:
    """Simulate one flight of the (complete, true) `vehicle`. Returns the logged `Flight` and
    the true states at the log instants (t, pos, pos_com, vel_com, quat, omega, omega_dot,
    acc_com, spec_force (noise-free accelerometer), u, thrust, force, moment; with body effects
    also the world `wind` and, with a battery, `vbat`)."""
    if spec.duration <= 0:
        raise RotoridError(f"{source}: duration must be positive, got {spec.duration:g} s")
    body = Body.from_vehicle(vehicle, spec.drag, spec.rotor_drag, spec.thrust_scale, spec.tm_scale, spec.rotor_inflow)
    nominal = body.rotor_drag is None and spec.thrust_scale is None and spec.tm_scale is None
    model = body if nominal else Body.from_vehicle(vehicle, drag=spec.drag)
    dt = spec.dt
    n_steps = round(spec.duration / dt)
    every = _every(spec.control_rate, dt, "control")
    t_ctrl = np.arange(n_steps // every + 1) * (every * dt)
    ref = spec.references(t_ctrl)
    ctrl = CascadeController(model, vehicle.mixer(), spec.gains, every, ref.pos, ref.vel, ref.acc, ref.yaw, ref.offsets)
    x0 = hover_state(ref.pos[0], float(ref.yaw[0]))
    u0 = ctrl(0, x0)
    noise = spec.thrust_noise * rng.standard_normal((n_steps, body.n_rotors)) if spec.thrust_noise > 0 else None
    plant = None
    if spec.plant.active:
        plant = Plant.build(spec.plant, body, vehicle.positions - body.com, x0, n_steps, dt, rng)
    hooks = (None, None) if plant is None else (plant.step, plant.command if spec.plant.battery else None)
    traj = integrate(body, x0, u0, dt, n_steps, ctrl, every, noise, progress, *hooks)
    fx = _plant_record(body, plant)
    acc = accelerations(body, traj, fx.get("wrench"))
    t_all = traj.t
    q = traj.x[:, 6:10]
    pos_o = origin_position(traj.x[:, :3], q, body.com)

    def grid(rate: float, what: str) -> tuple[np.ndarray, slice]:
        k = _every(rate, dt, what)
        return np.arange(len(range(0, len(t_all), k))) / rate, slice(0, len(t_all), k)

    t_imu, i_imu = grid(spec.imu.rate, "IMU")
    r_imu = np.asarray(vehicle.imu_offset) - body.com
    f_hover = body.mass * GRAVITY / body.n_rotors
    thrust_rel = (body.thrust(traj.u) + fx.get("df", 0.0)) / f_hover
    truth_imu = shake(spec.imu, t_all, (traj.x[:, 10:13], acc["omega_dot"], acc["spec_com"]), thrust_rel, rng)
    if spec.imu.delay:  # the IMU lags its time stamps: sample the truth at t - delay
        tq = np.clip(t_imu - spec.imu.delay, 0.0, t_all[-1])
        truth_imu = tuple(np.column_stack([np.interp(tq, t_all, x[:, j]) for j in range(3)]) for x in truth_imu)
    else:
        truth_imu = tuple(x[i_imu] for x in truth_imu)
    meas = imu(spec.imu, *truth_imu, r_imu, rng)
    series = {name: Series(t_imu, v) for name, v in meas.items()}
    t_log, i_log = grid(spec.log_rate, "log")
    if spec.log_cmd:
        series["cmd"] = Series(t_log, traj.cmd[i_log])
    if spec.log_rotor_speed:  # a saturated rotor (thrust ~ speed^2) runs below its command
        speed = traj.u[i_log] if "sat" not in fx else traj.u[i_log] * np.sqrt(fx["sat"][i_log])
        series["rotor_speed"] = Series(t_log, speed)
    if "vbat" in fx:
        series["vbat"] = Series(t_log, fx["vbat"][i_log])
    if spec.mocap is not None:
        t_mc, _ = grid(spec.mocap.rate, "mocap")
        mc = mocap(spec.mocap, t_all, pos_o, q, t_mc, rng)
        series["pos"] = Series(t_mc, mc["pos"])
        series["quat"] = Series(t_mc, mc["quat"])
    hold = _command_hold(every, _every(spec.log_rate, dt, "log"), dt)
    meta = _meta(spec, source, vehicle.motor_input, None if body.tm_rise is not None else hold, hold)
    flight, _ = align(series, rate=spec.log_rate, meta=meta)
    n = len(flight.t)
    idx = slice(0, n * i_log.step, i_log.step)
    states = {"t": t_log[:n], **_states(vehicle, body, traj, acc, pos_o, idx)}
    if fx:
        states["thrust"] = states["thrust"] + fx["df"][idx]
        states |= {k: fx[k][idx] for k in ("vbat", "wind") if k in fx}
    return flight, states


def _plant_record(body: Body, plant: Plant | None) -> dict[str, np.ndarray]:
    """A `Plant`'s per-step records on the trajectory's N = n_steps + 1 instants (the last step's
    repeated): extra rotor thrust `df`, their wrench plus the air's `wrench`, the saturated
    share of each rotor's thrust `sat`, battery voltage `vbat` and world `wind`; {} without one."""
    if plant is None:
        return {}

    def pad(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, x[-1:]])

    out = {"df": pad(plant.df), "wrench": pad(plant.df @ body.B.T + plant.extra), "wind": pad(plant.wind)}
    if plant.spec.saturation > 0:
        out["sat"] = pad(plant.sat)
    if plant.spec.battery:
        out["vbat"] = pad(plant.vbat)
    return out


def _command_hold(ctrl_every: int, log_every: int, dt: float) -> float | None:
    """How long each logged command holds after its stamp (`Flight.meta["cmd_hold"]`, s): the
    controller holds each command for its period from its control instant (`integrate`), and
    each log sample holds that long (to the next sample when the log is faster) when every log
    instant is a control instant or every control instant a log instant; None on grids that do
    not nest (a sample holds for a part of the period that varies). Motors that follow their
    commands at once run on each command for as long, so it is also `meta["motor_hold"]` (rotor
    speeds too) there; with a motor lag the rotor speeds are point samples of a continuous state
    and only the commands hold."""
    if log_every % ctrl_every and ctrl_every % log_every:
        return None
    return ctrl_every * dt


def _meta(
    spec: FlightSpec, source: str, motor_input: str, hold: float | None, cmd_hold: float | None
) -> dict[str, Any]:
    """The logged flight's metadata: source, format, the commands' unit (the vehicle's motor
    input, so writers record it and readers check against it), how long its motor samples and its
    commands hold (`_command_hold`; left out where no one value is true) and the simulation settings."""
    return {
        "source": source,
        "format": "rotorid-sim",
        "units": {"cmd": motor_input},
        **({} if hold is None else {"motor_hold": hold}),
        **({} if cmd_hold is None else {"cmd_hold": cmd_hold}),
        "sim": {
            "dt": spec.dt,
            "control_rate": spec.control_rate,
            "imu_rate": spec.imu.rate,
            "mocap_rate": spec.mocap.rate if spec.mocap else None,
            "mocap_delay": spec.mocap.delay if spec.mocap else None,
            "thrust_noise": spec.thrust_noise,
            **({"imu_delay": spec.imu.delay} if spec.imu.delay else {}),
            **spec.meta,
        },
    }


def _states(
    vehicle: Vehicle, body: Body, traj: Trajectory, acc: dict[str, np.ndarray], pos_o: np.ndarray, i: slice
) -> dict[str, np.ndarray]:
    """True states at the simulation steps `i` (the log instants, every i.step-th), see `fly`:
    views of the whole-rate arrays when every step is logged (an hour's copies would be
    gigabytes), compact copies of the logged rows otherwise (so the whole rate can go)."""

    def at(a: np.ndarray, cols: slice = slice(None)) -> np.ndarray:
        return a[i, cols] if i.step == 1 else a[i, cols].copy()

    lever = np.asarray(vehicle.imu_offset) - body.com
    w, wd, u = at(traj.x, slice(10, 13)), at(acc["omega_dot"]), at(traj.u)
    return {
        "pos": at(pos_o),
        "pos_com": at(traj.x, slice(0, 3)),
        "vel_com": at(traj.x, slice(3, 6)),
        "quat": at(traj.x, slice(6, 10)),
        "omega": w,
        "omega_dot": wd,
        "acc_com": at(acc["acc_com"]),
        "spec_force": at(acc["spec_com"]) + np.cross(wd, lever) + np.cross(w, np.cross(w, lever)),
        "u": u,
        "cmd": at(traj.cmd),
        "thrust": body.thrust(u) + at(traj.noise),
        "force": at(acc["force"]),
        "moment": at(acc["moment"]),
    }
