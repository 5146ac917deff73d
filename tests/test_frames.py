"""Frame conventions: PX4's FRD/NED against ours (FLU/ENU), Bryant angles, and the Bryant
rate maps of Six et al. eq. (4)-(5) against numerical differentiation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from rotorid import frames

RNG = np.random.default_rng(11)
Q_PX4 = Rotation.random(200, random_state=12).as_quat(scalar_first=True)
V = RNG.normal(size=(200, 3))


def test_involutions() -> None:
    np.testing.assert_array_equal(frames.frd_to_flu(frames.frd_to_flu(V)), V)
    np.testing.assert_array_equal(frames.ned_to_enu(frames.ned_to_enu(V)), V)
    np.testing.assert_array_equal(frames.ned_to_enu(np.array([1.0, 2.0, 3.0])), [2.0, 1.0, -3.0])
    np.testing.assert_array_equal(frames.frd_to_flu(np.array([1.0, 2.0, 3.0])), [1.0, -2.0, -3.0])
    back = frames.quat_enu_flu_to_ned_frd(frames.quat_ned_frd_to_enu_flu(Q_PX4))
    np.testing.assert_allclose(np.abs(np.sum(back * Q_PX4, axis=1)), 1.0, atol=1e-12)


def test_rotate_then_convert_equals_convert_then_rotate() -> None:
    """v_ENU from PX4's attitude and an FRD vector equals our attitude applied to the FLU vector."""
    px4 = frames.ned_to_enu(frames.body_to_world(Q_PX4, V))
    ours = frames.body_to_world(frames.quat_ned_frd_to_enu_flu(Q_PX4), frames.frd_to_flu(V))
    np.testing.assert_allclose(ours, px4, atol=1e-12)
    # and back: world -> body in both conventions
    np.testing.assert_allclose(
        frames.frd_to_flu(frames.world_to_body(Q_PX4, frames.enu_to_ned(V))),
        frames.world_to_body(frames.quat_ned_frd_to_enu_flu(Q_PX4), V),
        atol=1e-12,
    )


def test_level_attitudes() -> None:
    # PX4 level, nose north -> ours: level, nose north = +y ENU, i.e. yaw +90°
    q = frames.quat_ned_frd_to_enu_flu(np.array([1.0, 0, 0, 0]))
    np.testing.assert_allclose(frames.body_to_world(q, np.array([1.0, 0, 0])), [0, 1, 0], atol=1e-15)
    # at rest the accelerometer reads +g along body z (up) in FLU
    g = np.array([0, 0, -9.80665])
    np.testing.assert_allclose(frames.world_to_body(np.array([1.0, 0, 0, 0]), -g), [0, 0, 9.80665])
    assert frames.rot_to_quat(Rotation.from_quat([0, 0, 0, -1]))[0] == 1.0  # canonical sign w >= 0


def test_bryant_angles_are_z_y_x_and_round_trip() -> None:
    eta = np.column_stack([RNG.uniform(-3, 3, 50), RNG.uniform(-1.5, 1.5, 50), RNG.uniform(-3, 3, 50)])
    psi, th, ph = eta.T
    rz = Rotation.from_rotvec(np.column_stack([0 * psi, 0 * psi, psi]))
    ry = Rotation.from_rotvec(np.column_stack([0 * th, th, 0 * th]))
    rx = Rotation.from_rotvec(np.column_stack([ph, 0 * ph, 0 * ph]))
    q = frames.bryant_to_quat(eta)
    np.testing.assert_allclose(frames.quat_to_rot(q).as_matrix(), (rz * ry * rx).as_matrix(), atol=1e-12)
    for k in range(50):  # one at a time: a stack of unrelated angles would be unwrapped
        np.testing.assert_allclose(frames.quat_to_bryant(q[k]), eta[k], atol=1e-9)


def test_quat_to_bryant_unwraps_a_trajectory() -> None:
    t = np.linspace(0, 10, 1001)
    eta = np.column_stack([1.5 * t, 0.2 * np.sin(t), 0.3 * np.cos(2 * t)])  # yaw turns 15 rad
    np.testing.assert_allclose(frames.quat_to_bryant(frames.bryant_to_quat(eta)), eta, atol=1e-9)


def _eta(t: np.ndarray) -> np.ndarray:
    return np.column_stack([0.8 * np.sin(1.3 * t) + 0.2 * t, 0.5 * np.sin(2.1 * t + 0.4), 0.7 * np.cos(1.7 * t)])


def _eta_d(t: np.ndarray) -> np.ndarray:
    return np.column_stack([1.04 * np.cos(1.3 * t) + 0.2, 1.05 * np.cos(2.1 * t + 0.4), -1.19 * np.sin(1.7 * t)])


def _eta_dd(t: np.ndarray) -> np.ndarray:
    return np.column_stack([-1.352 * np.sin(1.3 * t), -2.205 * np.sin(2.1 * t + 0.4), -2.023 * np.cos(1.7 * t)])


def _omega_numeric(t: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Body rate from R^T dR/dt by central differences of the rotation matrices."""
    r = frames.quat_to_rot(frames.bryant_to_quat(_eta(t))).as_matrix()
    rd = (
        frames.quat_to_rot(frames.bryant_to_quat(_eta(t + h))).as_matrix()
        - frames.quat_to_rot(frames.bryant_to_quat(_eta(t - h))).as_matrix()
    ) / (2 * h)
    s = np.einsum("nji,njk->nik", r, rd)  # skew(omega)
    return np.column_stack([s[:, 2, 1], s[:, 0, 2], s[:, 1, 0]])


def test_bryant_rates_match_numerical_differentiation() -> None:
    t = np.linspace(0, 6, 61)
    omega, omega_dot = frames.bryant_rates(_eta(t), _eta_d(t), _eta_dd(t))
    np.testing.assert_allclose(omega, _omega_numeric(t), atol=1e-7)
    h = 1e-4
    num_dot = (
        frames.bryant_rates(_eta(t + h), _eta_d(t + h), _eta_dd(t + h))[0]
        - frames.bryant_rates(_eta(t - h), _eta_d(t - h), _eta_dd(t - h))[0]
    ) / (2 * h)
    np.testing.assert_allclose(omega_dot, num_dot, atol=1e-6)


@pytest.mark.parametrize("theta", [0.0, 0.7, -1.2])
def test_t_eta_rows(theta: float) -> None:
    eta = np.array([0.3, theta, -0.4])
    want = np.array(
        [
            [-np.sin(theta), 0, 1],
            [np.cos(theta) * np.sin(-0.4), np.cos(-0.4), 0],
            [np.cos(theta) * np.cos(-0.4), -np.sin(-0.4), 0],
        ]
    )
    np.testing.assert_allclose(frames.t_eta(eta)[0], want, atol=1e-15)


def test_ned_to_enu_is_an_exact_signed_permutation_even_at_the_float_limits() -> None:
    """A fuzzed ULog reached ned_to_enu with 1e308-sized positions: the conversion must neither
    overflow nor turn inf into NaN (the plausibility guard then refuses the values in words)."""
    import warnings

    v = np.array([[1e308, -np.inf, 2.5], [1.0, 2.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = frames.ned_to_enu(v)
    np.testing.assert_array_equal(out, [[-np.inf, 1e308, -2.5], [2.0, 1.0, -3.0]])
    np.testing.assert_array_equal(frames.enu_to_ned(out), v)
