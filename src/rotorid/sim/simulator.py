"""Fly one simulated flight: references -> cascade controller -> RK4 plant -> sensors -> `Flight`.

The result is the same `Flight` a reader produces (channels at their own rates put on one grid
by `rotorid.flight.align`, exactly as readers do), plus the true states at the log instants.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight, Series, align, align_grid, on_grid
from rotorid.frames import GRAVITY
from rotorid.sim import dynamics
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
    body, ctrl, x0, u0 = _setup(vehicle, spec, source)
    dt, every = spec.dt, ctrl.every
    n_steps = round(spec.duration / dt)
    noise = spec.thrust_noise * rng.standard_normal((n_steps, body.n_rotors)) if spec.thrust_noise > 0 else None
    plant = None
    if spec.plant.active:
        low = _lowest_flown(vehicle, spec, noise, rng, source) if spec.plant.ground_radius > 0 else _lowest(ctrl)
        plant = Plant.build(spec.plant, body, vehicle.positions - body.com, x0, n_steps, dt, rng, low)
    traj = integrate(body, x0, u0, dt, n_steps, ctrl, every, noise, progress, plant)
    fx = _plant_record(body, plant)
    acc = accelerations(body, traj, fx.get("wrench"))
    t_all = traj.t
    q = traj.x[:, 6:10]
    pos_o = origin_position(traj.x[:, :3], q, body.com)
    grids = _grids(spec, len(t_all))
    (t_imu, k_imu), (t_log, k_log) = grids["imu"], grids["log"]
    i_imu, i_log = slice(0, len(t_all), k_imu), slice(0, len(t_all), k_log)
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
    if spec.log_cmd:
        series["cmd"] = Series(t_log, traj.cmd[i_log])
    if spec.log_rotor_speed:  # a saturated rotor (thrust ~ speed^2) runs below its command
        speed = traj.u[i_log] if "sat" not in fx else traj.u[i_log] * np.sqrt(fx["sat"][i_log])
        series["rotor_speed"] = Series(t_log, speed)
    if "vbat" in fx:
        series["vbat"] = Series(t_log, fx["vbat"][i_log])
    if spec.mocap is not None:
        t_mc = grids["mocap"][0]
        mc = mocap(spec.mocap, t_all, pos_o, q, t_mc, rng)
        series["pos"] = Series(t_mc, mc["pos"])
        series["quat"] = Series(t_mc, mc["quat"])
    flight, _ = align(series, rate=spec.log_rate, meta=_meta(vehicle, spec, source))
    n = len(flight.t)
    idx = slice(0, n * i_log.step, i_log.step)
    states = {"t": t_log[:n], **_states(vehicle, body, traj, acc, pos_o, idx)}
    if fx:
        states["thrust"] = states["thrust"] + fx["df"][idx]
        states |= {k: fx[k][idx] for k in ("vbat", "wind") if k in fx}
    return flight, states


def _setup(vehicle: Vehicle, spec: FlightSpec, source: str) -> tuple[Body, CascadeController, tuple, list[float]]:
    """The plant's body, the controller on the references and the initial state and motors."""
    if spec.duration <= 0:
        raise RotoridError(f"{source}: duration must be positive, got {spec.duration:g} s")
    body = Body.from_vehicle(vehicle, spec.drag, spec.rotor_drag, spec.thrust_scale, spec.tm_scale, spec.rotor_inflow)
    nominal = body.rotor_drag is None and spec.thrust_scale is None and spec.tm_scale is None
    model = body if nominal else Body.from_vehicle(vehicle, drag=spec.drag)
    n_steps = round(spec.duration / spec.dt)
    every = _every(spec.control_rate, spec.dt, "control")
    t_ctrl = np.arange(n_steps // every + 1) * (every * spec.dt)
    ref = spec.references(t_ctrl)
    ctrl = CascadeController(model, vehicle.mixer(), spec.gains, every, ref.pos, ref.vel, ref.acc, ref.yaw, ref.offsets)
    x0 = hover_state(ref.pos[0], float(ref.yaw[0]))
    return body, ctrl, x0, ctrl(0, x0)


def _lowest(ctrl: CascadeController) -> float:
    """The lowest height of the CoM the controller's references plan (`effects.Plant.build`)."""
    return float(ctrl.ref[:, 2].min())


def _lowest_flown(
    vehicle: Vehicle, spec: FlightSpec, noise: np.ndarray | None, rng: np.random.Generator, source: str
) -> float:
    """The lowest height of the CoM the flight reaches without the ground (`effects.Plant.build`
    puts the ground `ground_clearance` radii below the hubs there): the plan holds the position
    references only, and a thrust manoeuvre's collective doublets take the vehicle 20-25 cm below
    them, so a ground under the plan's lowest point was flown through, the rotors held at the
    ground effect's 4/3 cap for up to 9 % of a randomized thrust flight. A first pass of the same
    flight (the same noise and, from a copy of the generator, the same wind) with the ground
    effect off; the ground effect then only lifts the vehicle, so the clearance is the least."""
    body, ctrl, x0, u0 = _setup(vehicle, spec, source)
    off = dataclasses.replace(spec.plant, ground_radius=0.0)
    n_steps = round(spec.duration / spec.dt)
    p = None
    if off.active:
        p = Plant.build(off, body, vehicle.positions - body.com, x0, n_steps, spec.dt, deepcopy(rng), _lowest(ctrl))
    traj = integrate(body, x0, u0, spec.dt, n_steps, ctrl, ctrl.every, noise, None, p)
    return float(traj.x[:, 2].min())


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


def _meta(vehicle: Vehicle, spec: FlightSpec, source: str) -> dict[str, Any]:
    """The logged flight's metadata: source, format, the commands' unit (the vehicle's motor
    input, so writers record it and readers check against it), how long its motor samples and its
    commands hold (`_command_hold`; left out where no one value is true; the motor samples only
    without a motor lag) and the simulation settings."""
    every = _every(spec.control_rate, spec.dt, "control")
    cmd_hold = _command_hold(every, _every(spec.log_rate, spec.dt, "log"), spec.dt)
    hold = None if vehicle.tm_rise is not None else cmd_hold
    return {
        "source": source,
        "format": "rotorid-sim",
        "units": {"cmd": vehicle.motor_input},
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


def streamable(spec: FlightSpec) -> bool:
    """Whether `stream` flies `spec` in pieces: not with IMU effects whose filters run over the
    whole flight (frame vibration, the anti-alias low-pass, gyro_dot's filter), nor with ground
    effect (its ground sits under the lowest point of a first pass, `_lowest_flown`)."""
    i = spec.imu
    return i.vibration <= 0 and i.aa_cutoff is None and i.gyro_dot_cutoff is None and spec.plant.ground_radius <= 0


@dataclass(frozen=True)
class Streamed:
    """A simulated flight flown as it is read (`stream`): `meta` is the flight's; `pieces()`
    simulates it and yields its rows in order as `Flight`s of about `rows` rows, each with that
    meta; together they are `fly`'s Flight, every number (the true states are not kept)."""

    vehicle: Vehicle
    spec: FlightSpec
    rng: np.random.Generator
    source: str
    progress: Callable[[int], None] | None
    meta: dict[str, Any]
    rows: int = 1 << 14

    def replace(self, meta: dict[str, Any]) -> Streamed:
        return dataclasses.replace(self, meta=meta)

    def pieces(self) -> Iterator[Flight]:
        """Simulate the flight (from a copy of the generator: each call gives the same pieces)."""
        return _Pieces(self).run()


def stream(
    vehicle: Vehicle,
    spec: FlightSpec,
    rng: np.random.Generator,
    source: str = "sim",
    progress: Callable[[int], None] | None = None,
) -> Streamed | tuple[Flight, dict[str, np.ndarray]]:
    """`fly`, lazily where `streamable(spec)`: a `Streamed` flight, whose log rows and integration
    rows are held a piece at a time (what stays whole: the controller's references, 128 B per
    control instant, and with body effects their per-step records); otherwise `fly`'s flight
    and states."""
    if not streamable(spec):
        return fly(vehicle, spec, rng, source, progress)
    if spec.duration <= 0:
        raise RotoridError(f"{source}: duration must be positive, got {spec.duration:g} s")
    _, meta, _ = align_grid(
        _stamps(spec, round(spec.duration / spec.dt) + 1), spec.log_rate, _meta(vehicle, spec, source)
    )
    return Streamed(vehicle, spec, rng, source, progress, meta)


def _grids(spec: FlightSpec, n: int) -> dict[str, tuple[np.ndarray, int]]:
    """Each sensor group's time stamps and step interval on a flight of n integration instants,
    as `fly` logs them: "imu", "log" and with motion capture "mocap"."""

    def grid(rate: float, what: str) -> tuple[np.ndarray, int]:
        k = _every(rate, spec.dt, what)
        return np.arange(len(range(0, n, k))) / rate, k

    out = {"imu": grid(spec.imu.rate, "IMU"), "log": grid(spec.log_rate, "log")}
    if spec.mocap is not None:
        out["mocap"] = grid(spec.mocap.rate, "mocap")
    return out


def _channels(spec: FlightSpec) -> dict[str, str]:
    """The channels `fly` logs for `spec` (a streamable one: no gyro_dot), in its order, and
    the sensor group of each."""
    out = {"gyro": "imu", "acc": "imu"}
    out |= {c: "log" for c, on in (("cmd", spec.log_cmd), ("rotor_speed", spec.log_rotor_speed)) if on}
    out |= {"vbat": "log"} if spec.plant.battery else {}
    return out | ({"pos": "mocap", "quat": "mocap"} if spec.mocap is not None else {})


def _stamps(spec: FlightSpec, n: int) -> dict[str, Series]:
    """The logged channels' time stamps as `Series` (their values unused) for `align_grid`."""
    grids = _grids(spec, n)
    return {c: Series(grids[g][0], grids[g][0]) for c, g in _channels(spec).items()}


class _Draws:
    """Stands in for the flight's generator in `imu` and `mocap` on one piece: each
    `standard_normal` call draws the piece's rows from the next of `streams`, each positioned
    where the whole flight's draw of that array starts (`_fork`)."""

    def __init__(self, streams: list[np.random.Generator]) -> None:
        self.streams = iter(streams)

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        return next(self.streams).standard_normal(shape)


def _fork(rng: np.random.Generator, shape: tuple[int, int]) -> np.random.Generator:
    """A copy of `rng` where it stands, and `rng` moved past a standard-normal array of `shape`
    (drawn and dropped in blocks: the stream fills arrays in order, so rows drawn in pieces
    from the copy are the whole array's)."""
    copy = deepcopy(rng)
    for a in range(0, shape[0], _PIECE):
        rng.standard_normal((min(_PIECE, shape[0] - a), shape[1]))
    return copy


#: Rows a stream forks past at a time.
_PIECE = 1 << 16


class _Pieces:
    """`Streamed.pieces`: the plant run a block of steps at a time; each channel's samples
    computed once and in order (so each noise stream is drawn as in `fly`) as far as the rows
    run so far reach, with the rows and samples before kept only as far back as interpolation
    needs; the grid points the samples bracket on both sides put out as a piece."""

    def __init__(self, s: Streamed) -> None:
        spec, self.s = s.spec, s
        self.body, self.ctrl, x0, u0 = _setup(s.vehicle, spec, s.source)
        self.n_steps = round(spec.duration / spec.dt)
        self.n = self.n_steps + 1
        rng = deepcopy(s.rng)  # forked in the order `fly` draws
        self.noise = _fork(rng, (self.n_steps, self.body.n_rotors)) if spec.thrust_noise > 0 else None
        hubs = s.vehicle.positions - self.body.com
        self.plant = (
            Plant.build(spec.plant, self.body, hubs, x0, self.n_steps, spec.dt, rng, _lowest(self.ctrl))
            if spec.plant.active
            else None
        )
        self.grids, self.channels = _grids(spec, self.n), _channels(spec)
        walks = (spec.imu.gyro_rw > 0) + (spec.imu.acc_rw > 0)  # gyro, acc noise, then their bias walks
        draws = {"imu": [_fork(rng, (len(self.grids["imu"][0]), 3)) for _ in range(2 + walks)]}
        if spec.mocap is not None:  # attitude (if any), position noise
            draws["mocap"] = [
                _fork(rng, (len(self.grids["mocap"][0]), 3)) for _ in range(1 + (spec.mocap.att_noise > 0))
            ]
        self.draws = draws
        self.dyn = dynamics.Plant(self.body, spec.dt, x0, u0)
        #: per sensor group: its step interval, look-back in steps and next sample
        delay = {"imu": spec.imu.delay, "mocap": spec.mocap.delay if spec.mocap else 0.0}
        self.groups = {g: [k, math.ceil(delay.get(g, 0.0) / spec.dt) + 2, 0] for g, (_, k) in self.grids.items()}
        self.rows: dict[str, np.ndarray] = {}
        self.w0 = 0  # the first row kept
        self.samples: dict[str, list[np.ndarray]] = {}
        self.walks: dict[str, np.ndarray] = {}  # the IMU's bias walks where the last piece left them

    def run(self) -> Iterator[Flight]:
        spec = self.s.spec
        t_grid, _, _ = align_grid(_stamps(spec, self.n), rate=spec.log_rate)
        block = max(1, self.s.rows * _every(spec.log_rate, spec.dt, "log"))
        done, j = 0, 0
        while done < self.n_steps:
            k = min(block, self.n_steps - done)
            nz = None if self.noise is None else spec.thrust_noise * self.noise.standard_normal((k, self.body.n_rotors))
            last = done + k == self.n_steps
            part = self.dyn.run(k, self.ctrl, self.ctrl.every, nz, self.s.progress, last, self.plant)
            self._add_rows(part, done)
            done += k
            self._sample(last)
            j_end = len(t_grid) if last else self._reach(t_grid)
            if j_end > j:
                t = t_grid[j:j_end]
                series = {c: Series(*v) for c, v in self.samples.items()}
                yield Flight(t=t, meta=self.s.meta, **on_grid(series, t))
                j = j_end
                if not last:
                    self._forget(float(t_grid[j]))

    def _add_rows(self, part: dynamics.Trajectory, a: int) -> None:
        """Append the per-row quantities the sensors read of the trajectory rows a.. (`part`)."""
        k = np.minimum(np.arange(a, a + len(part.x)), self.n_steps - 1)  # the last step's repeated (`_plant_record`)
        p = self.plant
        acc = accelerations(self.body, part, None if p is None else p.df[k] @ self.body.B.T + p.extra[k])
        q = part.x[:, 6:10]
        new = {
            "omega": part.x[:, 10:13],
            "omega_dot": acc["omega_dot"],
            "spec_com": acc["spec_com"],
            "q": q,
            "pos_o": origin_position(part.x[:, :3], q, self.body.com),
            "u": part.u,
            "cmd": part.cmd,
        }
        if p is not None and p.spec.saturation > 0:
            new["sat"] = p.sat[k]
        if p is not None and p.spec.battery:
            new["vbat"] = p.vbat[k]
        self.rows = {c: np.concatenate([self.rows[c], v]) if self.rows else v for c, v in new.items()}

    def _sample(self, complete: bool) -> None:
        """Each group's next samples, as far as the rows reach (all that are left when `complete`)."""
        w1 = self.w0 + len(self.rows["q"])
        for c, g in self.groups.items():
            every, _, i0 = g
            n_c = len(self.grids[c][0])
            i1 = n_c if complete else min(n_c, max(0, (w1 - 2) // every + 1))
            if i1 <= i0:
                continue
            for name, (t, v) in self._group(c, np.arange(i0, i1)).items():
                old = self.samples.get(name)
                self.samples[name] = (
                    [t, v] if old is None else [np.concatenate([old[0], t]), np.concatenate([old[1], v])]
                )
            g[2] = i1

    def _group(self, c: str, i: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Samples `i` of the sensor group `c`, as `fly` computes them."""
        spec, r, every = self.s.spec, self.rows, self.groups[c][0]
        t = self.grids[c][0][i]
        k = i * every - self.w0  # rows in the window
        t_rows = np.arange(self.w0, self.w0 + len(r["q"])) * spec.dt
        if c == "imu":
            truth = (r["omega"], r["omega_dot"], r["spec_com"])
            if spec.imu.delay:
                tq = np.clip(t - spec.imu.delay, 0.0, (self.n - 1) * spec.dt)
                truth = tuple(np.column_stack([np.interp(tq, t_rows, x[:, j]) for j in range(3)]) for x in truth)
            else:
                truth = tuple(x[k] for x in truth)
            lever = np.asarray(self.s.vehicle.imu_offset) - self.body.com
            meas = imu(spec.imu, *truth, lever, _Draws(self.draws["imu"]), self.walks)
            return {name: (t, v) for name, v in meas.items()}
        if c == "mocap":
            mc = mocap(spec.mocap, t_rows, r["pos_o"], r["q"], t, _Draws(self.draws["mocap"]))
            return {"pos": (t, mc["pos"]), "quat": (t, mc["quat"])}
        out = {}
        if spec.log_cmd:
            out["cmd"] = (t, r["cmd"][k])
        if spec.log_rotor_speed:
            out["rotor_speed"] = (t, r["u"][k] if "sat" not in r else r["u"][k] * np.sqrt(r["sat"][k]))
        if "vbat" in r:
            out["vbat"] = (t, r["vbat"][k])
        return out

    def _reach(self, t_grid: np.ndarray) -> int:
        """Grid points every channel's samples bracket with two samples to spare on the right."""
        ends = [v[0][-1] - 2.0 * self._period(c) for c, v in self.samples.items()]
        return int(np.searchsorted(t_grid, min(ends))) if len(ends) == len(self.channels) else 0

    def _period(self, channel: str) -> float:
        return self.grids[self.channels[channel]][1] * self.s.spec.dt

    def _forget(self, t_next: float) -> None:
        """Drop the samples and rows the grid points from `t_next` on and the next samples no
        longer need."""
        for c, (t, v) in self.samples.items():
            keep = int(np.searchsorted(t, t_next - 3.0 * self._period(c)))
            self.samples[c] = [t[keep:], v[keep:]]
        first = min(max(0, g[2] * g[0] - g[1]) for g in self.groups.values())
        if first > self.w0:
            self.rows = {c: v[first - self.w0 :] for c, v in self.rows.items()}
            self.w0 = first
