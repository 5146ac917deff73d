"""Sensor noise levels the batch solve corrects for (errors in variables): the white-noise
density of an accelerometer or gyro from its raw samples, and the variance it leaves in the RLS2
rows' specific force (Alg. 6) and in the RLS rows' α̂ (Alg. 4)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class NoiseDensities(NamedTuple):
    """White-noise density² per body axis (`acc_noise_density`) of the accelerometer
    ((m/s²)²/Hz) and of the gyro ((rad/s)²/Hz)."""

    acc: np.ndarray
    gyro: np.ndarray


def acc_noise_density(acc: np.ndarray, t: np.ndarray) -> np.ndarray:
    """White-noise density² N² ((m/s²)²/Hz, per body axis) of an accelerometer (or, in
    (rad/s)²/Hz, a gyro) from its raw samples: a white noise of per-sample variance σ² has var(Δ²a) = 6 σ², and σ² = N²/Δt. The
    median of (Δ²a)² over 0.4549 (the median of χ²₁) is robust to the manoeuvres' own second
    difference, which at the log rate is small against the noise. Noise the IMU's anti-alias filter colours is underestimated (the correction then
    is too small, never of the wrong sign)."""
    d2 = np.diff(np.asarray(acc, dtype=float), n=2, axis=0)
    if len(d2) < 3:
        return np.zeros(3)
    return np.median(d2 * d2, axis=0) / (6.0 * 0.4549) * float(np.median(np.diff(t)))


def acc_row_noise(acc_nd2: np.ndarray, dt: np.ndarray) -> np.ndarray:
    """Variance (T, 3) of the accelerometer noise in each RLS2 row's regressor (the specific
    force, H2's first column, Alg. 6): the row holds the mean of two consecutive block means
    of the raw samples (the step's midpoint), each block of duration ≈ dt, so a white noise of
    density² N² (`acc_noise_density`) leaves N²/dt per block and N²/(2 dt) in the row (exact
    for equal blocks; a 250 Hz log's blocks of 3 and 2 samples give 4 % more). `dt` (T,) the
    steps' durations."""
    return np.asarray(acc_nd2, dtype=float)[None, :] / (2.0 * np.asarray(dt, dtype=float)[:, None])


def alpha_row_noise(gyro_nd2: np.ndarray, gain: np.ndarray, dt: np.ndarray) -> np.ndarray:
    """Variance (T, 3) of the gyro's white noise in each RLS row's α̂ (Alg. 4: α̂ = Δω̂/dt of the
    KF's rate). A gyro noise v_t (variance N²/dt per block, N² = `gyro_nd2`, `acc_noise_density`
    of the gyro) enters the KF's rate as ε_t = (1 - k_t) ε_t-1 + k_t v_t (k_t the gain of the step,
    `gain` (T, 3); the process model's dependence on ω̂ through ω x Jω is second order), so α̂
    carries k_t (v_t - ε_t-1) / dt_t, of variance k_t² (N²/dt_t + P_t-1) / dt_t² with
    P_t = (1 - k_t)² P_t-1 + k_t² N²/dt_t, from P = 0 at the first row (the KF's transient before
    the RLS is enabled is not recorded; P settles within 1/k steps). `dt` (T,) the steps."""
    g, dt = np.asarray(gain, dtype=float), np.asarray(dt, dtype=float)
    sv = np.asarray(gyro_nd2, dtype=float)[None, :] / dt[:, None]
    out, p = np.empty_like(g), np.zeros(g.shape[1])
    for t in range(len(g)):
        out[t] = g[t] * g[t] * (sv[t] + p) / (dt[t] * dt[t])
        p = (1.0 - g[t]) ** 2 * p + g[t] * g[t] * sv[t]
    return out
