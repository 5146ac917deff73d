"""The cascaded PD controller and mixer with clamping of Kwon et al. (eq. 40-48), generalized to
any rotor layout through the pseudo-inverse of the vehicle's mixer.

Position loop (eq. 40, plus the weight the paper leaves implicit in eq. 6):
    f = m (r_dd_ref + K_pp (r_ref - r) + K_pd (r_d_ref - r_d)) + m [0, 0, g]
Desired roll/pitch for heading psi_ref (z-x'-y'' Euler angles, eq. 42-43, solved exactly),
then the excitation offsets (Eschmann/Six manoeuvres) are added to the attitude setpoints
and the collective thrust is scaled by (1 + thrust offset).
Attitude loop (eq. 41): M = K_op (eta_ref - eta) + K_od (omega_ref - omega) + c x [0, 0, T], the
last term compensating the CoM offset c (moments about the body origin); omega_ref is zero but
for the optional rate offsets (a chirp added to the rate target, ArduPilot's SID_AXIS 7-9).
Mixer (eq. 47 generalized): rotor thrusts = pinv(A) [T, M], A the force-z and moment rows of
`Vehicle.mixer()`; clamped to the thrust at cmd_min/cmd_max (eq. 48) and turned into motor
commands by inverting the thrust polynomial.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rotorid.frames import GRAVITY
from rotorid.sim.dynamics import Body


@dataclass(frozen=True)
class Gains:
    """Diagonal PD gains: position (K_pp, K_pd) and attitude (K_op in N m/rad, K_od in N m s/rad)."""

    kpp: tuple[float, float, float]
    kpd: tuple[float, float, float]
    kop: tuple[float, float, float]
    kod: tuple[float, float, float]

    @staticmethod
    def kwon() -> Gains:
        """Kwon et al. Table 5."""
        return Gains((3.0, 3.0, 3.0), (2.0, 2.0, 4.0), (3.0, 3.0, 3.0), (0.5, 0.5, 0.5))

    @staticmethod
    def from_bandwidth(
        inertia: np.ndarray,
        att_wn: Sequence[float],
        att_zeta: float = 0.8,
        pos_wn: Sequence[float] = (1.0, 1.0, 1.5),
        pos_zeta: float = 0.9,
    ) -> Gains:
        """Gains placing each axis' closed-loop poles at natural frequency wn (rad/s) and damping
        zeta, attitude scaled by the principal moments. With a motor lag T_m the attitude loop
        J s^2 (T_m s + 1) + K_od s + K_op is stable only if wn < 2 zeta / T_m (Routh)."""
        j = np.diag(np.asarray(inertia, dtype=float))
        wn = np.asarray(att_wn, dtype=float)
        pw = np.asarray(pos_wn, dtype=float)
        return Gains(
            tuple(pw**2),
            tuple(2 * pos_zeta * pw),
            tuple(j * wn**2),
            tuple(2 * att_zeta * j * wn),
        )


def euler_zxy(qw: float, qx: float, qy: float, qz: float) -> tuple[float, float, float]:
    """Roll, pitch, yaw of R = Rz(psi) Rx(phi) Ry(theta) (Kwon eq. 44-46) from a quaternion."""
    r21 = 2 * (qy * qz + qw * qx)
    r20 = 2 * (qx * qz - qw * qy)
    r22 = 1 - 2 * (qx * qx + qy * qy)
    r01 = 2 * (qx * qy - qw * qz)
    r11 = 1 - 2 * (qx * qx + qz * qz)
    return math.asin(max(-1.0, min(1.0, r21))), math.atan2(-r20, r22), math.atan2(-r01, r11)


class ThrustInverse:
    """Motor command giving a rotor thrust, per motor: the largest root of the thrust polynomial
    (closed form up to quadratic, Newton's method from cmd_max beyond), with the thrust first
    clamped to what commands in [cmd_min, cmd_max] can produce (Kwon eq. 48)."""

    def __init__(self, body: Body) -> None:
        self.coeffs = body.coeffs.tolist()
        self.lo, self.hi = body.cmd_min, body.cmd_max
        grid = np.linspace(self.lo, self.hi, 1025)
        f = body.thrust(np.repeat(grid[:, None], body.n_rotors, axis=1))
        self.f_lo = f.min(axis=0).tolist()
        self.f_hi = f[-1].tolist()
        quadratic = all(len(c) == 3 and c[2] > 0.0 for c in self.coeffs)
        #: per motor (c1, c1^2, 4 c2, c0, 1 / (2 c2), f_lo, f_hi) for the common quadratic case
        self.quad = (
            [
                (c1, c1 * c1, 4 * c2, c0, 0.5 / c2, fl, fh)
                for (c0, c1, c2), fl, fh in zip(self.coeffs, self.f_lo, self.f_hi, strict=True)
            ]
            if quadratic
            else None
        )

    def __call__(self, thrusts: list[float]) -> list[float]:
        lo, hi = self.lo, self.hi
        if self.quad is not None:  # fast path (the per-step core runs this every control step)
            out = []
            for f, (c1, c1s, c2x4, c0, inv2c2, f_lo, f_hi) in zip(thrusts, self.quad, strict=True):
                f = f_lo if f < f_lo else (f_hi if f > f_hi else f)
                d = c1s - c2x4 * (c0 - f)
                u = (math.sqrt(d) - c1) * inv2c2 if d > 0.0 else -c1 * inv2c2
                out.append(lo if u < lo else (hi if u > hi else u))
            return out
        out = []
        for f, c, f_lo, f_hi in zip(thrusts, self.coeffs, self.f_lo, self.f_hi, strict=True):
            f = min(max(f, f_lo), f_hi)
            if len(c) == 2:
                u = (f - c[0]) / c[1]
            elif len(c) == 3 and c[2] != 0.0:
                c0, c1, c2 = c
                u = (-c1 + math.sqrt(max(c1 * c1 - 4 * c2 * (c0 - f), 0.0))) / (2 * c2)
            else:
                u = self._newton(c, f)
            out.append(min(max(u, lo), hi))
        return out

    def _newton(self, c: list[float], f: float) -> float:
        """Largest root of sum_j c_j u^j = f by Newton's method from cmd_max."""
        u = self.hi
        for _ in range(50):
            val, der = 0.0, 0.0
            for cj in reversed(c):
                der = der * u + val
                val = val * u + cj
            if der <= 0.0:
                break
            step = (val - f) / der
            u -= step
            if abs(step) < 1e-12 * max(1.0, abs(u)):
                break
        return u


#: Reference rows `CascadeController` holds as Python tuples at a time.
_REF_ROWS = 1 << 14


class CascadeController:
    """Position PD -> attitude PD -> mixer -> clamped motor commands (Kwon eq. 40-48).

    References are arrays sampled at the control rate: position/velocity/acceleration of the
    CoM (K, 3), yaw (K,), and excitation offsets added to roll/pitch setpoints and to the
    relative collective thrust (K, 3: d_roll, d_pitch, d_thrust), optionally followed by
    body-rate offsets (K, 6: ..., d_p, d_q, d_r in rad/s). The position loop's tilt is
    limited to `max_tilt` (the paper's gentle trajectories never reach it). The controller knows mass,
    CoM and geometry (`model`, normally the true body, as in the paper).
    """

    def __init__(
        self,
        model: Body,
        mixer: np.ndarray,
        gains: Gains,
        control_every: int,
        pos: np.ndarray,
        vel: np.ndarray,
        acc: np.ndarray,
        yaw: np.ndarray,
        offsets: np.ndarray | None = None,
        max_tilt: float = math.radians(35.0),
    ) -> None:
        a = np.asarray(mixer)[2:6]  # thrust along body z and moments about the body origin
        self.alloc = [tuple(r) for r in np.linalg.pinv(a).tolist()]
        self.inverse = ThrustInverse(model)
        self.m = model.mass
        self.cx, self.cy, _ = model.com.tolist()
        self.gains = (*gains.kpp, *gains.kpd, *gains.kop, *gains.kod)
        self.tan_tilt = math.tan(max_tilt)
        self.every = control_every
        n = len(yaw)
        off = np.zeros((n, 6))
        if offsets is not None:
            given = np.asarray(offsets, dtype=float)
            off[:, : given.shape[1]] = given
        self.ref = np.column_stack([pos, vel, acc, yaw, off])
        self._rows: tuple[int, list[tuple[float, ...]]] = (-1, [])

    def _reference(self, i: int) -> tuple[float, ...]:
        """Row i of the references as Python floats, turned into tuples `_REF_ROWS` rows at a
        time (an hour's references as tuples would take ~1 GB)."""
        block, rows = self._rows
        if i // _REF_ROWS != block:
            block = i // _REF_ROWS
            rows = [tuple(r) for r in self.ref[block * _REF_ROWS : (block + 1) * _REF_ROWS].tolist()]
            self._rows = (block, rows)
        return rows[i - block * _REF_ROWS]

    def __call__(self, k: int, s: tuple[float, ...]) -> list[float]:
        px, py, pz, vx, vy, vz, qw, qx, qy, qz, wx, wy, wz = s
        rpx, rpy, rpz, rvx, rvy, rvz, rax, ray, raz, psi, d_roll, d_pitch, d_thrust, d_p, d_q, d_r = self._reference(
            min(k // self.every, len(self.ref) - 1)
        )
        kpx, kpy, kpz, kdx, kdy, kdz, kox, koy, koz, kwx, kwy, kwz = self.gains
        m = self.m
        fx = m * (rax + kpx * (rpx - px) + kdx * (rvx - vx))
        fy = m * (ray + kpy * (rpy - py) + kdy * (rvy - vy))
        fz = max(m * (raz + kpz * (rpz - pz) + kdz * (rvz - vz) + GRAVITY), 0.1 * m * GRAVITY)
        fh = math.sqrt(fx * fx + fy * fy)
        if fh > self.tan_tilt * fz:  # tilt limit of the position loop (as autopilots have)
            fx, fy = fx * self.tan_tilt * fz / fh, fy * self.tan_tilt * fz / fh
        thrust = math.sqrt(fx * fx + fy * fy + fz * fz)
        sp, cp = math.sin(psi), math.cos(psi)
        roll_ref = math.atan2(fx * sp - fy * cp, fz) + d_roll  # Kwon eq. 42, exact for z-x'-y''
        pitch_ref = math.asin((fx * cp + fy * sp) / thrust) + d_pitch  # eq. 43
        thrust *= 1.0 + d_thrust
        roll, pitch, yaw = euler_zxy(qw, qx, qy, qz)
        e_yaw = (psi - yaw + math.pi) % (2 * math.pi) - math.pi
        mx = kox * (roll_ref - roll) + kwx * (d_p - wx) + self.cy * thrust  # eq. 41
        my = koy * (pitch_ref - pitch) + kwy * (d_q - wy) - self.cx * thrust
        mz = koz * e_yaw + kwz * (d_r - wz)
        return self.inverse([r0 * thrust + r1 * mx + r2 * my + r3 * mz for r0, r1, r2, r3 in self.alloc])
