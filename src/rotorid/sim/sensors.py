"""Sensor models applied after integration, vectorized over samples.

- IMU (`Imu`): gyro and accelerometer at a sample rate, with white noise of a given noise
  density, constant bias plus an optional bias random walk (rate random walk, b_dot = N w
  with w unit white noise, the IEEE Std 952 / Kalibr noise model), resolution (quantization),
  lever arm and an optional time offset (`delay`: the IMU samples the state `delay` seconds
  before its time stamp, i.e. it lags the commands and the motion capture). The accelerometer at
  position r relative to the CoM measures (Kwon et al. eq. 18-19)
      f_s = R^T (a_com - g) + omega_dot x r + omega x (omega x r).
  Noise density follows Kwon et al. eq. 49-50: sigma = ND * sqrt(rate).
- Motion capture (`Mocap`): position (ENU) of the body origin and attitude quaternion with
  white noise and a fixed delay.
- `gyro_dot` as PX4 logs it (optional): the derivative of the measured gyro through a causal
  2nd-order Butterworth low-pass (PX4's IMU_DGYRO_CUTOFF, default 30 Hz).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal as sps
from scipy.spatial.transform import Rotation, Slerp

from rotorid.sim.dynamics import rotate

DEG = np.pi / 180.0


@dataclass(frozen=True)
class Imu:
    """IMU specification: rate (Hz), noise densities (rad/s/sqrt(Hz), m/s^2/sqrt(Hz)), biases
    (constant, body), resolutions (quantization steps; 0 = none), and `gyro_dot_cutoff` (Hz)
    if the autopilot logs a filtered angular acceleration (PX4), else None. `gyro_rw`/`acc_rw`
    are bias random-walk densities (rad/s/sqrt(s), m/s^2/sqrt(s); 0 = constant bias) and
    `delay` (s) the IMU's time offset (applied by `rotorid.sim.simulator.fly`)."""

    rate: float
    gyro_nd: float = 0.0
    acc_nd: float = 0.0
    gyro_bias: tuple[float, float, float] = (0.0, 0.0, 0.0)
    acc_bias: tuple[float, float, float] = (0.0, 0.0, 0.0)
    gyro_res: float = 0.0
    acc_res: float = 0.0
    gyro_dot_cutoff: float | None = None
    gyro_rw: float = 0.0
    acc_rw: float = 0.0
    delay: float = 0.0

    def noiseless(self) -> Imu:
        """Without noise, biases and bias walks (the time offset is not noise: kept)."""
        return Imu(self.rate, gyro_dot_cutoff=self.gyro_dot_cutoff, delay=self.delay)


@dataclass(frozen=True)
class Mocap:
    """Motion capture: rate (Hz), position noise (m), attitude noise (rad per axis), delay (s)."""

    rate: float
    pos_noise: float = 0.0
    att_noise: float = 0.0
    delay: float = 0.0

    def noiseless(self) -> Mocap:
        return Mocap(self.rate, delay=self.delay)


def _quantize(x: np.ndarray, res: float) -> np.ndarray:
    return np.round(x / res) * res if res > 0 else x


def bias_walk(density: float, n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """A bias random walk (n, 3) starting at zero: increments of sigma = density / sqrt(rate)."""
    steps = density / np.sqrt(rate) * rng.standard_normal((n, 3))
    steps[0] = 0.0
    return np.cumsum(steps, axis=0)


def imu(
    spec: Imu,
    omega: np.ndarray,
    omega_dot: np.ndarray,
    spec_com: np.ndarray,
    r: np.ndarray,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Gyro, accelerometer (and gyro_dot) samples from true states at the IMU sample instants.

    `spec_com` is the specific force at the CoM (body), `r` the IMU position relative to the
    CoM (body). Returns arrays (N, 3) keyed gyro, acc[, gyro_dot].
    """
    r = np.broadcast_to(np.asarray(r, dtype=float), omega.shape)
    lever = np.cross(omega_dot, r) + np.cross(omega, np.cross(omega, r))
    s = np.sqrt(spec.rate)
    gyro = omega + np.asarray(spec.gyro_bias) + spec.gyro_nd * s * rng.standard_normal(omega.shape)
    acc = spec_com + lever + np.asarray(spec.acc_bias) + spec.acc_nd * s * rng.standard_normal(omega.shape)
    if spec.gyro_rw > 0:  # drawn only when asked, so scenarios without a walk keep their streams
        gyro = gyro + bias_walk(spec.gyro_rw, len(gyro), spec.rate, rng)
    if spec.acc_rw > 0:
        acc = acc + bias_walk(spec.acc_rw, len(acc), spec.rate, rng)
    out = {"gyro": _quantize(gyro, spec.gyro_res), "acc": _quantize(acc, spec.acc_res)}
    if spec.gyro_dot_cutoff is not None:
        b, a = sps.butter(2, spec.gyro_dot_cutoff, fs=spec.rate)
        d = np.gradient(out["gyro"], 1.0 / spec.rate, axis=0)
        zi = sps.lfilter_zi(b, a)[:, None] * d[:1]
        out["gyro_dot"], _ = sps.lfilter(b, a, d, axis=0, zi=zi)
    return out


def mocap(
    spec: Mocap, t_state: np.ndarray, pos: np.ndarray, q: np.ndarray, t: np.ndarray, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Pose samples at times `t`: the true pose at t - delay (held at the first state before
    the start), plus noise. `pos` is the body-origin position (N, 3), `q` the attitude."""
    tq = np.clip(t - spec.delay, t_state[0], t_state[-1])
    p = np.column_stack([np.interp(tq, t_state, pos[:, j]) for j in range(3)])
    rot = Slerp(t_state, Rotation.from_quat(q, scalar_first=True))(tq)
    if spec.att_noise > 0:
        rot = rot * Rotation.from_rotvec(spec.att_noise * rng.standard_normal((len(t), 3)))
    quat = rot.as_quat(scalar_first=True)
    quat *= np.where(quat[:, :1] < 0, -1.0, 1.0)
    return {"pos": p + spec.pos_noise * rng.standard_normal(p.shape), "quat": quat}


def origin_position(pos_com: np.ndarray, q: np.ndarray, com: np.ndarray) -> np.ndarray:
    """World position of the body origin from the CoM position: p_o = p_c - R c."""
    return pos_com - rotate(q, np.broadcast_to(com, pos_com.shape))
