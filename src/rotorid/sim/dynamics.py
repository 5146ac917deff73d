"""Ground-truth rigid-body dynamics: 6-DoF, full inertia tensor, CoM offset, first-order motors,
polynomial thrust, drag torque and thrust noise, integrated by RK4 at a fixed step.

State (13 floats): CoM position and velocity (world ENU), attitude quaternion (w, x, y, z,
body FLU -> world) and angular velocity (body). Equations (Kwon et al. eq. 6-9, written about
the CoM):

    m v_dot = R F_b + m g                       F_b = sum_i f_i r_f,i
    J_c w_dot + w x J_c w = tau_c                tau_c = sum_i f_i ((r_p,i - c) x r_f,i + torque_dir_i K_tau r_f,i)
    q_dot = q * (0, w) / 2

with f_i = sum_j K_j u_i^j + w_i (thrust noise, Kwon eq. 51, held over a step) and the motor
state u_i a first-order lag of its setpoint (the command, or what the body effects make of it:
the battery voltage's duty-cycle scaling) with rise/fall constants (optionally per motor).

Optional rotor drag (blade flapping and induced drag, the linear rotor-drag model of Martin &
Salaün, ICRA 2010; Kai et al., IFAC 2017; Faessler et al., RA-L 2018): each rotor feels a force
against the airspeed of its hub in the rotor plane, proportional to its rotor speed,

    F_i = -k_rd Omega_i P_i (v_b + w x r_i),    P_i = I - r_f,i r_f,i^T,  r_i = r_p,i - c

(v_b the body-frame velocity, still air), applied at the hub, so it also gives the moment
r_i x F_i about the CoM (the hub sits off the CoM). Optionally the axial inflow too
(`rotor_inflow` k_z): in blade-element and momentum theory a rotor climbing through its own
axis at v_c loses thrust linearly in Omega v_c at a fixed rotor speed (T = k_t Omega^2 -
k_z Omega v_c; Bangura & Mahony, ACRA 2012; Powers et al., ISER 2013), the same form
with P_i = k_rd (I - r_f r_f^T) + k_z r_f r_f^T. The rotor speed is taken as
Omega_i = sqrt(f_i) (exact up to the factor sqrt(k_t) for f = k_t Omega^2, which k_rd absorbs;
units N s/m per sqrt(N)), so the model works for any motor-input kind. The command is held over
each step, so the lag is solved exactly (an exponential) and the rotor wrench at the RK4 stage
times (t, t+h/2, t+h) is known before the step: only the rigid body is integrated by RK4.

The per-step core is compiled (`rotorid.sim.kernel`, numba); accelerations and sensor values
are recomputed vectorized after the loop from the logged states (`accelerations`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rotorid.errors import VehicleError
from rotorid.frames import GRAVITY
from rotorid.vehicle import Vehicle

#: controller(k, state) -> motor commands; state is the 13-tuple at step k.
Controller = Callable[[int, tuple[float, ...]], Sequence[float]]


class Effects(Protocol):
    """Body effects the kernel applies at each step (`rotorid.sim.effects.Plant`): `kernel_data`
    is their tuple (`rotorid.sim.kernel`), records included."""

    kernel_data: tuple


@dataclass(frozen=True)
class Body:
    """Everything the plant integrates, derived from a complete (true) `Vehicle`.

    `B` is the 6 x M wrench per unit rotor thrust about the CoM (force rows, moment rows);
    `coeffs` the dense thrust polynomial per motor, (M, D+1), lowest power first.
    `tm_rise`/`tm_fall` (per motor, (M,)) None means motors follow their command instantly.
    `rotor_drag` (M, 6, 6): the drag wrench about the CoM of rotor i per unit rotor speed is
    -rotor_drag[i] @ [v_b, w] (see the module docstring); None = no rotor drag.
    """

    mass: float
    inertia: np.ndarray
    com: np.ndarray
    B: np.ndarray
    coeffs: np.ndarray
    tm_rise: np.ndarray | None
    tm_fall: np.ndarray | None
    cmd_min: float
    cmd_max: float
    drag: np.ndarray
    rotor_drag: np.ndarray | None = None

    @staticmethod
    def from_vehicle(
        v: Vehicle,
        drag: Sequence[float] = (0.0, 0.0, 0.0),
        rotor_drag: float = 0.0,
        thrust_scale: Sequence[float] | None = None,
        tm_scale: Sequence[float] | None = None,
        rotor_inflow: float = 0.0,
    ) -> Body:
        """The plant of a fully specified vehicle (thrust curve, k_tau, inertia required).

        `drag`: linear body drag (N s/m per body axis); `rotor_drag`: k_rd of the rotor-drag
        model (N s/m per sqrt(N), see the module docstring), `rotor_inflow` its axial k_z (same
        units); `thrust_scale`/`tm_scale`: per-motor
        factors on the thrust polynomial and the motor time constants (spread between motors)."""
        missing = [k for k in ("thrust_coeffs", "k_tau", "inertia") if getattr(v, k) is None]
        if missing:
            raise VehicleError(f"vehicle '{v.name}': the simulator needs {', '.join(missing)}")
        com = np.zeros(3) if v.com is None else np.asarray(v.com, dtype=float)
        k = np.broadcast_to(np.atleast_2d(v.thrust_coeffs), (v.n_rotors, len(v.thrust_exponents)))
        dense = np.zeros((v.n_rotors, max(v.thrust_exponents) + 1))
        for j, e in enumerate(v.thrust_exponents):
            dense[:, e] += k[:, j]
        if thrust_scale is not None:
            dense = dense * np.asarray(thrust_scale, dtype=float)[:, None]
        rise = v.tm_rise
        fall = v.tm_fall if v.tm_fall is not None else rise
        ts = np.ones(v.n_rotors) if tm_scale is None else np.asarray(tm_scale, dtype=float)
        return Body(
            mass=float(v.mass),
            inertia=np.asarray(v.inertia, dtype=float),
            com=com,
            B=v.mixer(about=com),
            coeffs=dense,
            tm_rise=None if rise is None else rise * ts,
            tm_fall=None if rise is None else fall * ts,
            cmd_min=float(v.cmd_min),
            cmd_max=float(v.cmd_max),
            drag=np.asarray(drag, dtype=float),
            rotor_drag=_rotor_drag_matrices(v, com, rotor_drag, rotor_inflow) if rotor_drag or rotor_inflow else None,
        )

    @property
    def n_rotors(self) -> int:
        return self.B.shape[1]

    def thrust(self, u: np.ndarray) -> np.ndarray:
        """Per-rotor thrust (N) of motor states `u` (..., M), noise-free."""
        u = np.asarray(u, dtype=float)
        f = np.zeros_like(u)
        for c in self.coeffs.T[::-1]:  # Horner over powers (a handful), vectorized over samples
            f = f * u + c
        return f

    def rotor_drag_wrench(self, u: np.ndarray, v_body: np.ndarray, omega: np.ndarray) -> np.ndarray:
        """Rotor-drag wrench about the CoM (N, 6: force, moment; body) for motor states `u`
        (N, M), body-frame velocity `v_body` and angular rate `omega` (N, 3); zeros without it."""
        x = np.hstack([v_body, omega])
        if self.rotor_drag is None:
            return np.zeros_like(x)
        speed = np.sqrt(np.maximum(self.thrust(u), 0.0))
        k = np.tensordot(speed, self.rotor_drag, axes=(1, 0))  # (N, 6, 6)
        return -np.einsum("nij,nj->ni", k, x)


def _cross_matrix(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def _rotor_drag_matrices(v: Vehicle, com: np.ndarray, k: float, k_z: float = 0.0) -> np.ndarray:
    """Per rotor, the 6 x 6 map from [v_b, w] to minus the drag wrench about the CoM per unit
    rotor speed: [[P, -P [r]x], [[r]x P, -[r]x P [r]x]] (F = -P (v_b + w x r), M = r x F) with
    P = k (I - a a^T) + k_z a a^T (in-plane drag, axial inflow)."""
    out = np.empty((v.n_rotors, 6, 6))
    for i, (pos, axis) in enumerate(zip(v.positions, v.axes, strict=True)):  # a handful of rotors
        aa = np.outer(axis, axis)
        p, scale = (k * (np.eye(3) - aa) + k_z * aa, 1.0) if k_z else (np.eye(3) - aa, k)
        rx = _cross_matrix(pos - com)
        out[i] = scale * np.block([[p, -p @ rx], [rx @ p, -rx @ p @ rx]])
    return out


@dataclass(frozen=True)
class Trajectory:
    """Logged true states at every internal step k (time k*dt): `x` (N, 13), motor states
    `u` (N, M), the commands in force during step k `cmd` (N, M), and thrust noise `noise` (N, M)."""

    dt: float
    x: np.ndarray
    u: np.ndarray
    cmd: np.ndarray
    noise: np.ndarray

    @property
    def t(self) -> np.ndarray:
        return np.arange(len(self.x)) * self.dt


def hover_state(position: Sequence[float] = (0.0, 0.0, 0.0), yaw: float = 0.0) -> tuple[float, ...]:
    """A 13-state at rest, level, at `position` (CoM) with heading `yaw` (rad)."""
    return (*map(float, position), 0.0, 0.0, 0.0, math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2), 0.0, 0.0, 0.0)


def integrate(
    body: Body,
    x0: Sequence[float],
    u0: Sequence[float],
    dt: float,
    n_steps: int,
    controller: Controller,
    control_every: int = 1,
    thrust_noise: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
    effects: Effects | None = None,
) -> Trajectory:
    """Integrate `n_steps` RK4 steps of `dt` from state `x0` and motor states `u0`.

    `controller(k, state)` is called at steps k = 0, control_every, ... and its commands
    (clamped to [cmd_min, cmd_max]) are held until the next call. `thrust_noise` (n_steps, M)
    is added to the rotor thrusts during each step. `progress(k)` is called every 1000 steps.
    One `Plant` run over all the steps (`Plant.run` gives the same numbers in any chunks).
    `effects` (`rotorid.sim.effects.Plant`) adds body effects to each step and, with a battery,
    sets the motors' setpoints from the commands before the lag.
    """
    plant = Plant(body, dt, x0, u0)
    return plant.run(n_steps, controller, control_every, thrust_noise, progress, True, effects)


class Plant:
    """The RK4 plant of `integrate`, stepped in chunks: `run(n, ...)` integrates the next n steps
    and returns their rows, the state carried to the next call, so a flight flown in any chunks
    has the same numbers as in one. The per-step physics is the compiled kernel
    (`rotorid.sim.kernel`, imported here: numba only loads when a flight is flown)."""

    def __init__(self, body: Body, dt: float, x0: Sequence[float], u0: Sequence[float]) -> None:
        from rotorid.sim import kernel

        self.kernel, self.body, self.dt, self.k = kernel, body, dt, 0
        m = body.n_rotors
        instant = body.tm_rise is None
        lag = np.zeros((m, 4))
        if not instant:  # per motor: rise over h/2 and h, fall over h/2 and h
            for i, (r, f) in enumerate(zip(body.tm_rise.tolist(), body.tm_fall.tolist(), strict=True)):
                lag[i] = math.exp(-0.5 * dt / r), math.exp(-dt / r), math.exp(-0.5 * dt / f), math.exp(-dt / f)
        rd = np.zeros((m, 36)) if body.rotor_drag is None else body.rotor_drag.reshape(m, 36)
        self.data = (
            1.0 / body.mass,
            np.array(body.inertia, dtype=float).ravel(),
            np.linalg.inv(body.inertia).ravel(),
            np.array(body.drag, dtype=float),
            bool(np.any(body.drag)),
            np.ascontiguousarray(body.coeffs[:, ::-1], dtype=float),
            lag,
            instant,
            np.ascontiguousarray(rd, dtype=float),
            body.rotor_drag is not None,
            np.ascontiguousarray(body.B, dtype=float),
            np.array([dt, 0.5 * dt, dt / 6.0]),
            float(body.cmd_min),
            float(body.cmd_max),
        )
        self.x = np.array(x0, dtype=float)
        self.u = np.array(u0, dtype=float)
        self.cmd = self.u.copy()
        self.w0, self.k0 = np.zeros(6), np.zeros(36)
        kernel.rest(self.data, self.u, self.w0, self.k0)

    def run(
        self,
        n_steps: int,
        controller: Controller,
        control_every: int = 1,
        thrust_noise: np.ndarray | None = None,
        progress: Callable[[int], None] | None = None,
        last: bool = False,
        effects: Effects | None = None,
    ) -> Trajectory:
        """The next `n_steps` steps (see `integrate`; the step count k runs on from the last
        call, and `thrust_noise` holds these steps' rows): their rows, the state at each
        step's start, the motor states (after an instant motor took its new setpoint) and the
        commands in force; with `last`, the final state's row too (as `close` adds it). A
        controller with `kernel_data` (`rotorid.sim.control.CascadeController`) runs compiled;
        any other is called between compiled runs of the steps its commands hold for."""
        m = self.body.n_rotors
        noise = np.zeros((n_steps + last, m))
        if thrust_noise is not None:
            noise[:n_steps] = thrust_noise
        xs, us, cmds = np.empty((n_steps + last, 13)), np.empty((n_steps + last, m)), np.empty((n_steps + last, m))
        ctrl = getattr(controller, "kernel_data", None)
        fx = self.kernel.no_effects(m) if effects is None else effects.kernel_data
        state, args = (self.x, self.u, self.cmd, self.w0, self.k0), (ctrl is not None, fx, effects is not None)
        ctrl = self.kernel.no_control(m) if ctrl is None else ctrl
        for a in range(0, n_steps, _ROWS):  # the thrust noise's wrench a block at a time
            b = min(a + _ROWS, n_steps)
            nz = noise[a:b] @ self.body.B.T
            j = a
            while j < b:
                i, end = self.k + j, b
                if not args[0]:  # a Python controller: its commands, then the steps they hold for
                    if i % control_every == 0:
                        self.cmd[:] = [float(c) for c in controller(i, tuple(self.x.tolist()))]
                    end = min(end, j + control_every - i % control_every)
                if progress is not None:
                    end = min(end, j + 1000 - i % 1000)
                rows = (xs, us, cmds, j)
                self.kernel.run(i, end - j, control_every, state, self.data, ctrl, *args, nz[j - a : end - a], rows)
                if progress is not None and (self.k + end) % 1000 == 0:
                    progress(self.k + end)
                j = end
        self.k += n_steps
        if last:
            xs[-1], us[-1], cmds[-1] = self.x, self.u, self.cmd
        return Trajectory(dt=self.dt, x=xs, u=us, cmd=cmds, noise=noise)

    def close(self, *chunks: Trajectory) -> Trajectory:
        """The whole flight: the `chunks` run so far and the final state's row (commands held,
        no noise)."""
        m = self.body.n_rotors
        last = Trajectory(self.dt, np.array([self.x]), np.array([self.u]), np.array([self.cmd]), np.zeros((1, m)))
        parts = [*chunks, last]
        return Trajectory(
            dt=self.dt, **{k: np.concatenate([getattr(p, k) for p in parts]) for k in ("x", "u", "cmd", "noise")}
        )


#: Steps whose thrust-noise wrench `Plant.run` computes at a time.
_ROWS = 1 << 14


def rotate(q: np.ndarray, v: np.ndarray, inverse: bool = False) -> np.ndarray:
    """Rotate vectors v (N, 3) by unit quaternions q (N, 4) body->world (or back if inverse)."""
    w = q[:, :1]
    r = -q[:, 1:] if inverse else q[:, 1:]
    t = 2.0 * np.cross(r, v)
    return v + w * t + np.cross(r, t)


def accelerations(body: Body, traj: Trajectory, extra: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """True loads and accelerations at every logged step, vectorized (same equations as the
    integrator): body force `force` (N, 3), moment about the CoM `moment`, CoM acceleration
    `acc_com` (world), specific force at the CoM `spec_com` (body) and `omega_dot` (body).
    `extra` (N, 6): the wrench the body effects added at each step (force, moment; body)."""
    x = traj.x
    f = body.thrust(traj.u) + traj.noise
    wr = f @ body.B.T if extra is None else f @ body.B.T + extra
    force, moment = wr[:, :3], wr[:, 3:]
    q, vel, w = x[:, 6:10], x[:, 3:6], x[:, 10:13]
    v_body = rotate(q, vel, inverse=True)
    if np.any(body.drag):
        force = force - body.drag * v_body
    if body.rotor_drag is not None:
        rw = body.rotor_drag_wrench(traj.u, v_body, w)
        force, moment = force + rw[:, :3], moment + rw[:, 3:]
    acc = rotate(q, force) / body.mass + np.array([0.0, 0.0, -GRAVITY])
    h = w @ body.inertia.T
    wdot = np.linalg.solve(body.inertia, (moment - np.cross(w, h)).T).T
    return {"force": force, "moment": moment, "acc_com": acc, "spec_com": force / body.mass, "omega_dot": wdot}
