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
- Optional (off by default): scale-factor errors and a misalignment of the sensor axes, the
  measured vector (I + S) R_m x of the true x (S = diag of the scale errors, R_m a small rotation;
  the deterministic part of the IMU error model of Rehder et al., ICRA 2016 / IEEE Std 952);
  frame vibration (`shake`): per rotor an imbalance acceleration rotating at the rotor's speed
  in the rotor plane plus a blade-pass (twice per rev) axial part of half its amplitude, both
  growing with the rotor speed squared (thrust), and a gyro part 0.02 rad/s per m/s^2 (an
  assumption: frame bending), seen through the sensor's anti-alias low-pass (a causal 2nd-order
  Butterworth at `aa_cutoff`, like the digital low-pass of MEMS IMUs) and then sampled, so what
  passes aliases as it does on real vehicles (PX4 docs "Vibration Isolation"). The low-pass acts
  on the motion too (a ~1-3 ms group delay).
- `gyro_dot` as PX4 logs it (optional): the derivative of the measured gyro through a causal
  2nd-order Butterworth low-pass (PX4's IMU_DGYRO_CUTOFF, default 30 Hz).
"""

from __future__ import annotations

import math
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
    `delay` (s) the IMU's time offset (applied by `rotorid.sim.simulator.fly`). `gyro_scale`/
    `acc_scale` are scale-factor errors per axis (0.01 = +1 %), `misalign` the sensor axes'
    rotation vector (rad) from the body axes; `vibration` (m/s^2 per rotor at hover thrust) at
    the rotors' rotation frequency `vibration_hz` (Hz at hover), `aa_cutoff` (Hz) the anti-alias
    low-pass (None = none), see `shake`."""

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
    gyro_scale: tuple[float, float, float] = (0.0, 0.0, 0.0)
    acc_scale: tuple[float, float, float] = (0.0, 0.0, 0.0)
    misalign: tuple[float, float, float] = (0.0, 0.0, 0.0)
    vibration: float = 0.0
    vibration_hz: float = 250.0
    aa_cutoff: float | None = None

    def noiseless(self) -> Imu:
        """Without noise, biases, bias walks and vibration (time offset, scale errors,
        misalignment and the anti-alias filter are not noise: kept)."""
        keep = ("gyro_dot_cutoff", "delay", "gyro_scale", "acc_scale", "misalign", "aa_cutoff")
        return Imu(self.rate, **{k: getattr(self, k) for k in keep})

    def axes(self, scale: tuple[float, float, float]) -> np.ndarray | None:
        """The sensor matrix (I + S) R_m for scale errors `scale`, None when it is the identity."""
        if not any(scale) and not any(self.misalign):
            return None
        return np.diag(1.0 + np.asarray(scale)) @ Rotation.from_rotvec(self.misalign).as_matrix()


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


def bias_walk(
    density: float, n: int, rate: float, rng: np.random.Generator, start: np.ndarray | None = None
) -> np.ndarray:
    """A bias random walk (n, 3) starting at zero: increments of sigma = density / sqrt(rate);
    with `start` (3,), the walk's value before these samples, going on from there (the next
    piece of a walk: summed in the same order, the whole walk's numbers)."""
    steps = density / np.sqrt(rate) * rng.standard_normal((n, 3))
    if start is None:
        steps[0] = 0.0
        return np.cumsum(steps, axis=0)
    return np.cumsum(np.concatenate([start[None], steps]), axis=0)[1:]


def imu(
    spec: Imu,
    omega: np.ndarray,
    omega_dot: np.ndarray,
    spec_com: np.ndarray,
    r: np.ndarray,
    rng: np.random.Generator,
    walks: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Gyro, accelerometer (and gyro_dot) samples from true states at the IMU sample instants.

    `spec_com` is the specific force at the CoM (body), `r` the IMU position relative to the
    CoM (body). Returns arrays (N, 3) keyed gyro, acc[, gyro_dot]. `walks` carries the bias
    walks from piece to piece of a flight sampled in pieces (their last values, keyed gyro
    and acc, updated here; empty before the first piece).
    """
    r = np.broadcast_to(np.asarray(r, dtype=float), omega.shape)
    lever = np.cross(omega_dot, r) + np.cross(omega, np.cross(omega, r))
    true_acc = spec_com + lever
    m_g, m_a = spec.axes(spec.gyro_scale), spec.axes(spec.acc_scale)
    omega = omega if m_g is None else omega @ m_g.T
    true_acc = true_acc if m_a is None else true_acc @ m_a.T
    s = np.sqrt(spec.rate)
    gyro = omega + np.asarray(spec.gyro_bias) + spec.gyro_nd * s * rng.standard_normal(omega.shape)
    acc = true_acc + np.asarray(spec.acc_bias) + spec.acc_nd * s * rng.standard_normal(omega.shape)
    walks, walk = {} if walks is None else walks, {}
    for key, density in (("gyro", spec.gyro_rw), ("acc", spec.acc_rw)):
        if density > 0:  # drawn only when asked, so scenarios without a walk keep their streams
            walk[key] = bias_walk(density, len(omega), spec.rate, rng, walks.get(key))
            walks[key] = walk[key][-1]
    gyro = gyro + walk["gyro"] if "gyro" in walk else gyro
    acc = acc + walk["acc"] if "acc" in walk else acc
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


def shake(
    spec: Imu, t: np.ndarray, signals: tuple[np.ndarray, ...], thrust_rel: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, ...]:
    """The IMU's front end on the simulation grid `t` (uniform): the true (omega, omega_dot,
    spec_com) `signals` (N, 3) each plus frame vibration (`spec.vibration`; rotor thrusts
    relative to hover `thrust_rel` (N, M)) and through the anti-alias low-pass, computed on a grid
    fine enough for the vibration and returned at `t` (see the module docstring)."""
    if spec.vibration <= 0 and spec.aa_cutoff is None:
        return signals
    dt = float(t[1] - t[0])
    rel = np.maximum(thrust_rel, 0.0)
    top = spec.vibration_hz * math.sqrt(max(float(rel.max()), 1.0)) if spec.vibration > 0 else 0.0
    up = max(1, math.ceil(10.0 * max(top, spec.aa_cutoff or 0.0) * dt))
    tf = np.arange((len(t) - 1) * up + 1) * (dt / up)
    fine = [np.column_stack([np.interp(tf, t, x[:, j]) for j in range(3)]) for x in signals]
    if spec.vibration > 0:
        gyro, acc = _vibration(spec, tf, np.column_stack([np.interp(tf, t, r) for r in rel.T]), rng)
        fine[0], fine[2] = fine[0] + gyro, fine[2] + acc
    if spec.aa_cutoff is not None:
        sos = sps.butter(2, spec.aa_cutoff, fs=up / dt, output="sos")
        zi = sps.sosfilt_zi(sos)[:, :, None]  # started at rest on the first value
        fine = [sps.sosfilt(sos, x, axis=0, zi=zi * x[0])[0] for x in fine]
    return tuple(x[::up] for x in fine)


def _vibration(spec: Imu, tf: np.ndarray, rel: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Gyro and accelerometer vibration (n, 3) on the fine grid `tf` for rotor thrusts relative
    to hover `rel` (n, M): rotor speed ~ sqrt(thrust), amplitude ~ thrust, random phases."""
    dtf = float(tf[1] - tf[0])
    freq = spec.vibration_hz * np.sqrt(rel)
    phase = 2 * np.pi * np.cumsum(freq, axis=0) * dtf + rng.uniform(0, 2 * np.pi, rel.shape[1])
    amp = spec.vibration * rel
    acc = np.column_stack(
        [
            np.sum(amp * np.cos(phase), axis=1),
            np.sum(amp * np.sin(phase), axis=1),
            np.sum(0.5 * amp * np.sin(2 * phase), axis=1),
        ]
    )
    gyro = 0.02 * np.column_stack([acc[:, 1], acc[:, 0], 0.5 * acc[:, 2]])
    return gyro, acc
