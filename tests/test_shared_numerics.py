"""The shared numerics tls leans on for real logs: the attitude's slerp in numpy, the rotor-drag
regressor with its maps built once, and airborne pieces cut once per flight (issue 36)."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from rotorid import motion
from rotorid.flight import Flight
from rotorid.frames import slerp
from rotorid.vehicle import Vehicle


@pytest.mark.parametrize("step", [1e-7, 1e-3, 0.2, 2.5])
def test_slerp_is_scipys(step: float) -> None:
    """Any step between knots (near zero to beyond π/2), quaternions of either sign and any
    norm, query times on and between the knots: scipy's `Slerp` to 1e-12."""
    rng = np.random.default_rng(7)
    n = 4000
    tk = np.cumsum(rng.uniform(0.001, 0.003, n))
    q = Rotation.from_rotvec(np.cumsum(rng.standard_normal((n, 3)) * step, axis=0)).as_quat(scalar_first=True)
    q *= rng.choice([-1.0, 1.0], (n, 1)) * rng.uniform(0.5, 2.0, (n, 1))
    t = np.concatenate([tk[::7], rng.uniform(tk[0], tk[-1], 3 * n)])
    ref = Slerp(tk, Rotation.from_quat(q, scalar_first=True))(t).as_quat(scalar_first=True)
    ref *= np.where(ref[:, :1] < 0, -1.0, 1.0)
    got = slerp(tk, q, t)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert np.all(got[:, 0] >= 0)


def test_resampled_attitude_is_scipys() -> None:
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.0018, 0.0022, 2000))
    q = Rotation.from_rotvec(np.cumsum(rng.standard_normal((2000, 3)) * 0.01, axis=0)).as_quat(scalar_first=True)
    f = Flight(t=t, quat=q, acc=rng.standard_normal((2000, 3)))
    r = f.resample(500.0)
    ref = Slerp(t, Rotation.from_quat(q, scalar_first=True))(r.t).as_quat(scalar_first=True)
    np.testing.assert_allclose(r.quat, ref * np.where(ref[:, :1] < 0, -1.0, 1.0), rtol=0, atol=1e-12)


def test_drag_regressor_is_the_per_rotor_sum() -> None:
    """G = Σ_i u_i [P_i v_i ; p_i x P_i v_i], v_i = vel + ω x p_i, on a tilted-rotor layout."""
    v = Vehicle.load("quad-x")
    tilt = np.array([[0.1, 0.0, 0.0], [0.0, -0.1, 0.0], [0.05, 0.05, 0.0], [0.0, 0.0, 0.0]])
    v = dataclasses.replace(
        v,
        rotors=tuple(
            dataclasses.replace(r, axis=(r.axis + d) / np.linalg.norm(r.axis + d))
            for r, d in zip(v.rotors, tilt, strict=True)
        ),
    )
    rng = np.random.default_rng(5)
    u, vel, om = rng.uniform(300, 900, (500, 4)), rng.standard_normal((500, 3)), rng.standard_normal((500, 3))
    ref = np.zeros((500, 6))
    for i in range(4):
        p, a = v.positions[i], v.axes[i]
        hub = vel + np.cross(om, p)
        f = u[:, i : i + 1] * (hub - (hub @ a)[:, None] * a)
        ref += np.column_stack([f, np.cross(p, f)])
    got = motion.drag_regressor(u, vel, om, v)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_airborne_pieces_cut_once_and_let_the_flight_go() -> None:
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.uniform(0.0019, 0.0021, 3000))  # not uniform: resampled
    f = Flight(t=t, gyro=rng.standard_normal((3000, 3)), cmd=rng.uniform(0.4, 0.6, (3000, 4)))
    first = motion.airborne_pieces(f)
    again = motion.airborne_pieces(f)
    assert len(first) == 1 and again[0] is first[0]
    assert first[0].rate == pytest.approx(3000 / (t[-1] - t[0]), rel=1e-3)
    uniform = Flight(t=np.arange(3000) / 500.0, gyro=f.gyro, cmd=f.cmd)
    assert motion.airborne_pieces(uniform)[0] is uniform  # the flight itself: not held by the cache
    key = id(f), id(uniform)
    del f, uniform, first, again
    gc.collect()
    assert not set(key) & set(motion._KEPT)


def test_body_velocity_and_rate_made_once_and_read_only() -> None:
    rng = np.random.default_rng(2)
    n = 2000
    t = np.arange(n) / 500.0
    q = Rotation.from_rotvec(np.cumsum(rng.standard_normal((n, 3)) * 0.01, axis=0)).as_quat(scalar_first=True)
    f = Flight(t=t, quat=q, pos=np.cumsum(rng.standard_normal((n, 3)), 0) * 1e-3, gyro=rng.standard_normal((n, 3)))
    st = motion.MotionSettings(mocap_delay=0.004)
    made, real = [], motion._body_velocity
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(motion, "_body_velocity", lambda *a: made.append(a) or real(*a))
        now = motion.body_velocity(f, motion.MotionSettings())
        v1, v2 = motion.body_velocity(f, st), motion.body_velocity(f, st)
        v3 = motion.body_velocity(f, motion.MotionSettings(mocap_delay=0.008))
    assert len(made) == 1  # turned into body axes once: each delay (the lag searches) only reads it later
    assert now is motion.body_velocity(f, motion.MotionSettings()) and not now.flags.writeable
    np.testing.assert_array_equal(now, real(f, motion.MotionSettings().at(f.rate)))
    later = np.column_stack([np.interp(np.clip(t + 0.004, t[0], t[-1]), t, c) for c in now.T])
    np.testing.assert_array_equal(v1, later)
    np.testing.assert_array_equal(v2, later)
    assert not np.array_equal(v3, v1)
    assert motion.body_rate(f, st) is motion.body_rate(f, st)
