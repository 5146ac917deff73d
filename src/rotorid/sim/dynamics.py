"""Ground-truth rigid-body dynamics: 6-DoF, full inertia tensor, CoM offset, first-order motors,
polynomial thrust, drag torque and thrust noise, integrated by RK4 at a fixed step.

State (13 floats): CoM position and velocity (world ENU), attitude quaternion (w, x, y, z,
body FLU -> world) and angular velocity (body). Equations (Kwon et al. eq. 6-9, written about
the CoM):

    m v_dot = R F_b + m g                       F_b = sum_i f_i r_f,i
    J_c w_dot + w x J_c w = tau_c                tau_c = sum_i f_i ((r_p,i - c) x r_f,i + torque_dir_i K_tau r_f,i)
    q_dot = q * (0, w) / 2

with f_i = sum_j K_j u_i^j + w_i (thrust noise, Kwon eq. 51, held over a step) and the motor
state u_i a first-order lag of its setpoint (the command, or what a `CommandHook` makes of it:
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

The per-step core uses Python floats and `math` (numpy's per-call overhead dominates on
3-vectors); accelerations and sensor values are recomputed vectorized after the loop from the
logged states (`accelerations`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rotorid.errors import VehicleError
from rotorid.frames import GRAVITY
from rotorid.vehicle import Vehicle

#: controller(k, state) -> motor commands; state is the 13-tuple at step k.
Controller = Callable[[int, tuple[float, ...]], Sequence[float]]
#: hook(k, state, motor states, perturbation wrench) -> the step's perturbation wrench (6-tuple,
#: body, about the CoM) held over step k (`rotorid.sim.effects.Plant.step`).
StepHook = Callable[[int, tuple[float, ...], list[float], tuple[float, ...]], tuple[float, ...]]
#: command_hook(k, motor states, commands) -> the setpoints the motors follow over step k, before
#: their lag (`rotorid.sim.effects.Plant.command`: a duty cycle times the battery voltage).
CommandHook = Callable[[int, list[float], list[float]], list[float]]


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
    hook: StepHook | None = None,
    command_hook: CommandHook | None = None,
) -> Trajectory:
    """Integrate `n_steps` RK4 steps of `dt` from state `x0` and motor states `u0`.

    `controller(k, state)` is called at steps k = 0, control_every, ... and its commands
    (clamped to [cmd_min, cmd_max]) are held until the next call. `thrust_noise` (n_steps, M)
    is added to the rotor thrusts during each step. `progress(k)` is called every 1000 steps.
    One `Plant` run over all the steps (`Plant.run` gives the same numbers in any chunks).
    `hook` (`StepHook`, e.g. `rotorid.sim.effects.Plant.step`) adds body effects to each step;
    `command_hook` (`CommandHook`) sets the motors' setpoints from the commands before the lag.
    """
    plant = Plant(body, dt, x0, u0)
    return plant.run(n_steps, controller, control_every, thrust_noise, progress, True, hook, command_hook)


class Plant:
    """The RK4 plant of `integrate`, stepped in chunks: `run(n, ...)` integrates the next n steps
    and returns their rows, the state carried to the next call, so a flight flown in any chunks
    has the same numbers as in one. The per-step core uses Python floats and `math` (numpy's
    per-call overhead dominates on 3-vectors); the rows go into preallocated arrays."""

    def __init__(self, body: Body, dt: float, x0: Sequence[float], u0: Sequence[float]) -> None:
        self.body, self.dt, self.k = body, dt, 0
        m_rot = body.n_rotors
        self.deriv = _rigid_body(
            1.0 / body.mass,
            body.inertia.ravel().tolist(),
            np.linalg.inv(body.inertia).ravel().tolist(),
            tuple(body.drag.tolist()) if np.any(body.drag) else None,
        )
        self.h = (dt, 0.5 * dt, dt / 6.0)
        self.cols = [tuple(body.B[:, i].tolist()) for i in range(m_rot)]
        self.quadratic = body.coeffs.shape[1] <= 3
        self.coeffs = [
            tuple(c) + (0.0,) * (3 - len(c)) if self.quadratic else tuple(reversed(c)) for c in body.coeffs.tolist()
        ]
        self.instant = body.tm_rise is None
        if self.instant:
            self.decay = [(0.0, 0.0, 0.0, 0.0)] * m_rot
        else:  # per motor: rise over h/2 and h, fall over h/2 and h
            self.decay = [
                (math.exp(-0.5 * dt / r), math.exp(-dt / r), math.exp(-0.5 * dt / f), math.exp(-dt / f))
                for r, f in zip(body.tm_rise.tolist(), body.tm_fall.tolist(), strict=True)
            ]
        self.rd = None if body.rotor_drag is None else body.rotor_drag.reshape(m_rot, 36)
        #: per rotor: its wrench column, thrust coefficients and lag factors, as one tuple
        self.rotors = [(*col, cs, *dec) for col, cs, dec in zip(self.cols, self.coeffs, self.decay, strict=True)]
        self.x = tuple(float(v) for v in x0)
        self.u = [float(v) for v in u0]
        self.cmd = list(self.u)
        self._rest()

    def _rest(self) -> None:
        """The wrench and rotor-drag map of the motor states now (at the step's start)."""
        f = [self.thrust(ui, cs) for ui, cs in zip(self.u, self.coeffs, strict=True)]
        self.w0 = self.wrench(f)
        self.k0 = None if self.rd is None else self.drag_matrix(f)

    def thrust(self, ui: float, cs: tuple[float, ...]) -> float:
        if self.quadratic:
            return (cs[2] * ui + cs[1]) * ui + cs[0]
        f = 0.0
        for c in cs:
            f = f * ui + c
        return f

    def drag_matrix(self, f: list) -> list | None:
        """The rotor-drag 6 x 6 maps (flattened, 36 floats) for rotor thrusts f (M,) or for
        several sets (K, M) at once; None without rotor drag."""
        if self.rd is None:
            return None
        return (np.sqrt(np.maximum(f, 0.0)) @ self.rd).tolist()

    def wrench(self, f: list[float]) -> tuple[float, float, float, float, float, float]:
        """The body wrench of rotor thrusts `f` (M,)."""
        fx = fy = fz = tx = ty = tz = 0.0
        for fi, (a, b, c, d, e, g) in zip(f, self.cols, strict=True):
            fx += fi * a
            fy += fi * b
            fz += fi * c
            tx += fi * d
            ty += fi * e
            tz += fi * g
        return fx, fy, fz, tx, ty, tz

    def motors(self, u: list[float], cmd: list[float], nz: tuple[float, ...]) -> tuple:
        """Motor states at t+h (exact lag, command held), the wrenches at t+h/2 and t+h and
        the rotor-drag maps there (None without rotor drag). Motors without lag are at their
        command at both instants (the same numbers: computed once)."""
        xh = yh = zh = lh = mh = nh = 0.0
        xf = yf = zf = lf = mf = nf = 0.0
        uf, fh, ff = [], [], []
        quadratic, drag, instant = self.quadratic, self.rd is not None, self.instant
        for ui, ci, (a, b, c, d, e, g, cs, rh, rf, fh_, ff_) in zip(u, cmd, self.rotors, strict=True):
            dh, df = (rh, rf) if ci > ui else (fh_, ff_)
            v = ci + (ui - ci) * dh
            f1 = (cs[2] * v + cs[1]) * v + cs[0] if quadratic else self.thrust(v, cs)
            xh += f1 * a
            yh += f1 * b
            zh += f1 * c
            lh += f1 * d
            mh += f1 * e
            nh += f1 * g
            if instant:
                uf.append(v)
                fh.append(f1)
                continue
            w = ci + (ui - ci) * df
            uf.append(w)
            f2 = (cs[2] * w + cs[1]) * w + cs[0] if quadratic else self.thrust(w, cs)
            if drag:
                fh.append(f1)
                ff.append(f2)
            xf += f2 * a
            yf += f2 * b
            zf += f2 * c
            lf += f2 * d
            mf += f2 * e
            nf += f2 * g
        n0, n1, n2, n3, n4, n5 = nz
        half = (xh + n0, yh + n1, zh + n2, lh + n3, mh + n4, nh + n5)
        if instant:  # the maps as a pair, as with lag (one matrix product's rounding)
            return uf, half, half, *(self.drag_matrix([fh, fh]) if drag else (None, None))
        return (
            uf,
            half,
            (xf + n0, yf + n1, zf + n2, lf + n3, mf + n4, nf + n5),
            *(self.drag_matrix([fh, ff]) if drag else (None, None)),
        )

    def step(self, nz: tuple[float, ...], target: list[float]) -> None:
        """One RK4 step of the rigid body, the motors lagging towards the held setpoints `target`;
        `nz` the thrust noise's wrench. The stages are written out on floats (no per-stage lists)."""
        uf, b, c, kb, kc = self.motors(self.u, target, nz)
        d, (h, h2, h6) = self.deriv, self.h
        n0, n1, n2, n3, n4, n5 = nz
        bx, by, bz, bl, bm, bn = b
        cx, cy, cz, cl, cm, cn = c
        w0 = self.w0
        px, py, pz, vx, vy, vz, qw, qx, qy, qz, wx, wy, wz = self.x
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9 = d(
            vx, vy, vz, qw, qx, qy, qz, wx, wy, wz, w0[0] + n0, w0[1] + n1, w0[2] + n2, w0[3] + n3, w0[4] + n4,
            w0[5] + n5, self.k0,
        )  # fmt: skip
        b0, b1, b2, b3, b4, b5, b6, b7, b8, b9 = d(
            vx + h2 * a0, vy + h2 * a1, vz + h2 * a2, qw + h2 * a3, qx + h2 * a4, qy + h2 * a5, qz + h2 * a6,
            wx + h2 * a7, wy + h2 * a8, wz + h2 * a9, bx, by, bz, bl, bm, bn, kb,
        )  # fmt: skip
        c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 = d(
            vx + h2 * b0, vy + h2 * b1, vz + h2 * b2, qw + h2 * b3, qx + h2 * b4, qy + h2 * b5, qz + h2 * b6,
            wx + h2 * b7, wy + h2 * b8, wz + h2 * b9, bx, by, bz, bl, bm, bn, kb,
        )  # fmt: skip
        e0, e1, e2, e3, e4, e5, e6, e7, e8, e9 = d(
            vx + h * c0, vy + h * c1, vz + h * c2, qw + h * c3, qx + h * c4, qy + h * c5, qz + h * c6,
            wx + h * c7, wy + h * c8, wz + h * c9, cx, cy, cz, cl, cm, cn, kc,
        )  # fmt: skip
        # position: its derivative is the velocity, whose stages are v + (h/2) k1 etc.
        px += h6 * (6 * vx + h * (a0 + b0 + c0))
        py += h6 * (6 * vy + h * (a1 + b1 + c1))
        pz += h6 * (6 * vz + h * (a2 + b2 + c2))
        qw += h6 * (a3 + 2 * (b3 + c3) + e3)
        qx += h6 * (a4 + 2 * (b4 + c4) + e4)
        qy += h6 * (a5 + 2 * (b5 + c5) + e5)
        qz += h6 * (a6 + 2 * (b6 + c6) + e6)
        n = 1.0 / math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        self.x = (
            px, py, pz, vx + h6 * (a0 + 2 * (b0 + c0) + e0), vy + h6 * (a1 + 2 * (b1 + c1) + e1),
            vz + h6 * (a2 + 2 * (b2 + c2) + e2), qw * n, qx * n, qy * n, qz * n, wx + h6 * (a7 + 2 * (b7 + c7) + e7),
            wy + h6 * (a8 + 2 * (b8 + c8) + e8), wz + h6 * (a9 + 2 * (b9 + c9) + e9),
        )  # fmt: skip
        self.u = uf
        self.w0 = (cx - n0, cy - n1, cz - n2, cl - n3, cm - n4, cn - n5)
        self.k0 = kc

    def run(
        self,
        n_steps: int,
        controller: Controller,
        control_every: int = 1,
        thrust_noise: np.ndarray | None = None,
        progress: Callable[[int], None] | None = None,
        last: bool = False,
        hook: StepHook | None = None,
        command_hook: CommandHook | None = None,
    ) -> Trajectory:
        """The next `n_steps` steps (see `integrate`; the step count k runs on from the last
        call, and `thrust_noise` holds these steps' rows): their rows, the state at each
        step's start, the motor states (after an instant motor took its new setpoint) and the
        commands in force; with `last`, the final state's row too (as `close` adds it)."""
        m = self.body.n_rotors
        lo, hi = self.body.cmd_min, self.body.cmd_max
        noise = np.zeros((n_steps + last, m))
        if thrust_noise is not None:
            noise[:n_steps] = thrust_noise
        xs, us, cmds = np.empty((n_steps + last, 13)), np.empty((n_steps + last, m)), np.empty((n_steps + last, m))
        for a in range(0, n_steps, _ROWS):  # rows gathered as tuples, stored a block at a time
            b = min(a + _ROWS, n_steps)
            rows = []
            for i, nz in enumerate(map(tuple, (noise[a:b] @ self.body.B.T).tolist()), start=self.k + a):
                new = i % control_every == 0
                if new:
                    self.cmd = [lo if c < lo else (hi if c > hi else c) for c in map(float, controller(i, self.x))]
                target = self.cmd if command_hook is None else command_hook(i, self.u, self.cmd)
                if self.instant and (new or command_hook is not None):
                    self.u = target
                    self._rest()
                rows.append((*self.x, *self.u, *self.cmd))
                self.step(nz if hook is None else hook(i, self.x, self.u, nz), target)
                if progress is not None and i % 1000 == 999:
                    progress(i + 1)
            block = np.array(rows)
            xs[a:b], us[a:b], cmds[a:b] = block[:, :13], block[:, 13 : 13 + m], block[:, 13 + m :]
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


def _rigid_body(
    inv_m: float, jm: Sequence[float], ji: Sequence[float], lin_drag: Sequence[float] | None
) -> Callable[..., tuple[float, ...]]:
    """deriv(vx, vy, vz, qw, qx, qy, qz, wx, wy, wz, fx, fy, fz, tx, ty, tz, kd): the derivatives
    of (v, q, w) (10 floats) under the body wrench f, less the linear drag `lin_drag` and the
    rotor drag of map `kd` (None: none) (Kwon eq. 6-9 about the CoM). The body's constants are
    bound here, once, not looked up per call."""
    jxx, jxy, jxz, _, jyy, jyz, _, _, jzz = jm
    ixx, ixy, ixz, iyx, iyy, iyz, izx, izy, izz = ji
    g = -GRAVITY

    def deriv(vx, vy, vz, qw, qx, qy, qz, wx, wy, wz, fx, fy, fz, tx, ty, tz, kd):
        if lin_drag is not None or kd is not None:
            # body-frame velocity R^T v = v - qw t' + q x t' with t' = 2 q x v
            ax = 2 * (qy * vz - qz * vy)
            ay = 2 * (qz * vx - qx * vz)
            az = 2 * (qx * vy - qy * vx)
            bx = vx - qw * ax + qy * az - qz * ay
            by = vy - qw * ay + qz * ax - qx * az
            bz = vz - qw * az + qx * ay - qy * ax
            if lin_drag is not None:  # linear drag on the body-frame velocity: F_b -= D R^T v
                dx, dy, dz = lin_drag
                fx -= dx * bx
                fy -= dy * by
                fz -= dz * bz
            if kd is not None:  # rotor drag: wrench -= K [v_b, w] (K's rows written out: no generator)
                fx -= kd[0] * bx + kd[1] * by + kd[2] * bz + kd[3] * wx + kd[4] * wy + kd[5] * wz
                fy -= kd[6] * bx + kd[7] * by + kd[8] * bz + kd[9] * wx + kd[10] * wy + kd[11] * wz
                fz -= kd[12] * bx + kd[13] * by + kd[14] * bz + kd[15] * wx + kd[16] * wy + kd[17] * wz
                tx -= kd[18] * bx + kd[19] * by + kd[20] * bz + kd[21] * wx + kd[22] * wy + kd[23] * wz
                ty -= kd[24] * bx + kd[25] * by + kd[26] * bz + kd[27] * wx + kd[28] * wy + kd[29] * wz
                tz -= kd[30] * bx + kd[31] * by + kd[32] * bz + kd[33] * wx + kd[34] * wy + kd[35] * wz
        # R F_b = F + qw t + q x t with t = 2 q x F
        ax = 2 * (qy * fz - qz * fy)
        ay = 2 * (qz * fx - qx * fz)
        az = 2 * (qx * fy - qy * fx)
        hx = jxx * wx + jxy * wy + jxz * wz
        hy = jxy * wx + jyy * wy + jyz * wz
        hz = jxz * wx + jyz * wy + jzz * wz
        mx = tx - (wy * hz - wz * hy)
        my = ty - (wz * hx - wx * hz)
        mz = tz - (wx * hy - wy * hx)
        return (
            (fx + qw * ax + qy * az - qz * ay) * inv_m,
            (fy + qw * ay + qz * ax - qx * az) * inv_m,
            (fz + qw * az + qx * ay - qy * ax) * inv_m + g,
            -0.5 * (qx * wx + qy * wy + qz * wz),
            0.5 * (qw * wx + qy * wz - qz * wy),
            0.5 * (qw * wy + qz * wx - qx * wz),
            0.5 * (qw * wz + qx * wy - qy * wx),
            ixx * mx + ixy * my + ixz * mz,
            iyx * mx + iyy * my + iyz * mz,
            izx * mx + izy * my + izz * mz,
        )

    return deriv


#: Steps whose rows `Plant.run` gathers as Python tuples before storing them in its arrays.
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
    `extra` (N, 6): the wrench a `StepHook` added at each step (force, moment; body)."""
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
