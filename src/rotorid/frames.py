"""Frame conventions: FRD<->FLU body, NED<->ENU world, Bryant angles (Six et al. eq. 4-5).

Quaternions are scalar-first (w, x, y, z) and rotate body vectors into the world frame.
All functions accept stacks of vectors (N, 3) or quaternions (N, 4). Thin over scipy's
`Rotation`, imported on first use (scipy.spatial costs a third of a second to import, and
`GRAVITY` is needed everywhere).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from rotorid.errors import RotoridError

if TYPE_CHECKING:
    from scipy.spatial.transform import Rotation

GRAVITY = 9.80665
"""Standard gravity, m/s² (the one definition in rotorid)."""
GRAVITY_ENU = np.array([0.0, 0.0, -GRAVITY])
"""Gravity vector in the ENU world frame, m/s²."""

_FLIP_YZ = np.array([1.0, -1.0, -1.0])
#: NED <-> ENU swaps x and y and negates z (an involution, so one matrix serves both ways).
_NED_ENU = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
_ENU_SIGN = np.array([1.0, 1.0, -1.0])


def frd_to_flu(v: np.ndarray) -> np.ndarray:
    """Body vectors FRD -> FLU (negate y and z). Its own inverse."""
    return np.asarray(v) * _FLIP_YZ


flu_to_frd = frd_to_flu


def ned_to_enu(v: np.ndarray) -> np.ndarray:
    """World vectors NED -> ENU (swap x/y, negate z). Its own inverse. A permutation with a sign,
    not a matrix product: exact, and a huge or infinite component stays where it is (no inf·0)."""
    return np.asarray(v)[..., [1, 0, 2]] * _ENU_SIGN


enu_to_ned = ned_to_enu


def _rotation() -> type[Rotation]:
    from scipy.spatial.transform import Rotation

    return Rotation


@functools.cache
def _r_frd_flu_enu_ned() -> tuple[Rotation, Rotation]:
    rot = _rotation()
    return rot.from_matrix(np.diag(_FLIP_YZ)), rot.from_matrix(_NED_ENU)


def valid_quat(q: np.ndarray) -> np.ndarray:
    """Per quaternion: True where it is finite with a norm that can be normalized (> 1e-6)."""
    q = np.asarray(q, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        n = np.linalg.norm(q, axis=-1)
    return np.all(np.isfinite(q), axis=-1) & (n > 1e-6)


def quat_to_rot(q: np.ndarray) -> Rotation:
    """scipy `Rotation` of scalar-first quaternions; a zero or non-finite one is a
    `RotoridError` naming its index (scipy would raise a bare ValueError)."""
    q = np.asarray(q, dtype=float)
    ok = valid_quat(q)
    if not np.all(ok):
        i = int(np.flatnonzero(~np.atleast_1d(ok))[0])
        raise RotoridError(f"quaternion {i} is zero or not finite ({np.atleast_2d(q)[i]}); it is no rotation")
    return _rotation().from_quat(q, scalar_first=True)


def rot_to_quat(r: Rotation) -> np.ndarray:
    """Scalar-first quaternion with non-negative w (a canonical sign)."""
    q = r.as_quat(scalar_first=True)
    return q * np.where(q[..., :1] < 0, -1.0, 1.0)


def quat_ned_frd_to_enu_flu(q: np.ndarray) -> np.ndarray:
    """Attitude FRD-body->NED-world (PX4) to FLU-body->ENU-world. Its own inverse."""
    frd_flu, enu_ned = _r_frd_flu_enu_ned()
    return rot_to_quat(enu_ned * quat_to_rot(q) * frd_flu)


quat_enu_flu_to_ned_frd = quat_ned_frd_to_enu_flu


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products a b of scalar-first quaternions (N, 4), vectorized (no `Rotation`)."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def slerp(t_knots: np.ndarray, q: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Quaternions `q` (K, 4, scalar-first, any norm) at strictly increasing `t_knots`,
    spherically interpolated at times `t` (inside their span) with non-negative w: the
    numbers of scipy's `Slerp` (q_k (q_k⁻¹ q_k+1)^α along the shortest arc) to rounding, in
    plain numpy arrays, so a log's attitude is put on a grid at the cost of a few array
    passes rather than `Rotation` products."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    i = np.clip(np.searchsorted(t_knots, t) - 1, 0, max(len(t_knots) - 2, 0))
    j = np.minimum(i + 1, len(t_knots) - 1)
    with np.errstate(invalid="ignore", divide="ignore"):  # a single knot: no step, alpha 0
        alpha = np.where(j > i, (t - t_knots[i]) / (t_knots[j] - t_knots[i]), 0.0)
    q0 = q[i]
    d = quat_mul(q0 * np.array([1.0, -1.0, -1.0, -1.0]), q[j])  # q0⁻¹ q1 (unit: the conjugate)
    d *= np.where(d[:, :1] < 0, -1.0, 1.0)  # the shortest arc
    s = np.linalg.norm(d[:, 1:], axis=1)  # sin(φ), φ half the angle between the knots
    phi = np.arctan2(s, d[:, 0])
    a_phi = alpha * phi
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(s > 1e-12, np.sin(a_phi) / s, alpha)  # sin(αφ) / sin(φ), → α as φ → 0
    part = np.column_stack([np.cos(a_phi), d[:, 1:] * ratio[:, None]])
    out = quat_mul(q0, part)
    return out * np.where(out[:, :1] < 0, -1.0, 1.0)


def body_to_world(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return quat_to_rot(q).apply(v)


def world_to_body(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return quat_to_rot(q).apply(v, inverse=True)


def bryant_to_quat(eta: np.ndarray) -> np.ndarray:
    """Bryant angles eta = [psi, theta, phi] (R = Rz(psi) Ry(theta) Rx(phi), Six et al.
    Sec. II) to quaternions."""
    return rot_to_quat(_rotation().from_euler("ZYX", np.asarray(eta)))


def quat_to_bryant(q: np.ndarray) -> np.ndarray:
    """Quaternions to Bryant angles [psi, theta, phi], unwrapped along the first axis."""
    eta = quat_to_rot(q).as_euler("ZYX")
    return np.unwrap(eta, axis=0) if eta.ndim == 2 else eta


def t_eta(eta: np.ndarray) -> np.ndarray:
    """T_eta of Six et al. eq. (4): body angular velocity omega = T_eta(eta) @ eta_dot, (N,3,3)."""
    eta = np.atleast_2d(eta)
    _, th, ph = eta[:, 0], eta[:, 1], eta[:, 2]
    st, ct, sp, cp = np.sin(th), np.cos(th), np.sin(ph), np.cos(ph)
    z, o = np.zeros_like(th), np.ones_like(th)
    return np.stack([np.stack([-st, z, o], -1), np.stack([ct * sp, cp, z], -1), np.stack([ct * cp, -sp, z], -1)], -2)


def bryant_rates(eta: np.ndarray, eta_d: np.ndarray, eta_dd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Body angular velocity and acceleration from Bryant angles and their derivatives,
    Six et al. eq. (4)-(5): omega = T eta_d, omega_dot = T_dot eta_d + T eta_dd."""
    eta, eta_d, eta_dd = (np.atleast_2d(a) for a in (eta, eta_d, eta_dd))
    _, th, ph = eta[:, 0], eta[:, 1], eta[:, 2]
    thd, phd = eta_d[:, 1], eta_d[:, 2]
    st, ct, sp, cp = np.sin(th), np.cos(th), np.sin(ph), np.cos(ph)
    z = np.zeros_like(th)
    t_dot = np.stack(
        [
            np.stack([-ct * thd, z, z], -1),
            np.stack([-st * thd * sp + ct * cp * phd, -sp * phd, z], -1),
            np.stack([-st * thd * cp - ct * sp * phd, -cp * phd, z], -1),
        ],
        -2,
    )
    t = t_eta(eta)
    omega = np.einsum("nij,nj->ni", t, eta_d)
    omega_dot = np.einsum("nij,nj->ni", t_dot, eta_d) + np.einsum("nij,nj->ni", t, eta_dd)
    return omega, omega_dot
