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
    from rotorid.sim import kernel

    return kernel.euler_zxy(float(qw), float(qx), float(qy), float(qz))


class ThrustInverse:
    """Motor command giving a rotor thrust, per motor: the largest root of the thrust polynomial
    (closed form up to quadratic, Newton's method from cmd_max beyond), with the thrust first
    clamped to what commands in [cmd_min, cmd_max] can produce (Kwon eq. 48). `kernel_data` is
    its tuple for the compiled kernel (`rotorid.sim.kernel.thrust_inverse`), which computes it."""

    def __init__(self, body: Body) -> None:
        coeffs = np.ascontiguousarray(body.coeffs, dtype=float)
        lo, hi = float(body.cmd_min), float(body.cmd_max)
        grid = np.linspace(lo, hi, 1025)
        f = body.thrust(np.repeat(grid[:, None], body.n_rotors, axis=1))
        f_lo, f_hi = f.min(axis=0), f[-1].copy()
        quadratic = coeffs.shape[1] == 3 and bool(np.all(coeffs[:, 2] > 0.0))
        #: per motor (c1, c1^2, 4 c2, c0, 1 / (2 c2), f_lo, f_hi) for the common quadratic case
        quad = np.zeros((body.n_rotors, 7))
        if quadratic:
            for i, ((c0, c1, c2), fl, fh) in enumerate(zip(coeffs.tolist(), f_lo.tolist(), f_hi.tolist(), strict=True)):
                quad[i] = c1, c1 * c1, 4 * c2, c0, 0.5 / c2, fl, fh
        self.kernel_data = (quad, quadratic, coeffs, f_lo, f_hi, lo, hi)

    def __call__(self, thrusts: Sequence[float]) -> list[float]:
        from rotorid.sim import kernel

        out = np.empty(len(self.kernel_data[3]))
        kernel.thrust_inverse(np.asarray(thrusts, dtype=float), self.kernel_data, out)
        return out.tolist()


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
        self.every = control_every
        n = len(yaw)
        off = np.zeros((n, 6))
        if offsets is not None:
            given = np.asarray(offsets, dtype=float)
            off[:, : given.shape[1]] = given
        self.ref = np.ascontiguousarray(np.column_stack([pos, vel, acc, yaw, off]), dtype=float)
        cx, cy, _ = model.com.tolist()
        self.kernel_data = (
            self.ref,
            np.array([*gains.kpp, *gains.kpd, *gains.kop, *gains.kod], dtype=float),
            float(model.mass),
            cx,
            cy,
            math.tan(max_tilt),
            int(control_every),
            np.ascontiguousarray(np.linalg.pinv(a), dtype=float),
            ThrustInverse(model).kernel_data,
        )

    def __call__(self, k: int, s: Sequence[float]) -> list[float]:
        """The motor commands at step k for the 13-state `s` (`rotorid.sim.kernel.control`)."""
        from rotorid.sim import kernel

        out = np.empty(self.kernel_data[7].shape[0])
        kernel.control(int(k), np.asarray(s, dtype=float), self.kernel_data, out)
        return out.tolist()
