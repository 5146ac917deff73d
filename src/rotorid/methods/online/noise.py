"""Sensor noise levels the batch solve corrects for (errors in variables): the white-noise
density of an accelerometer or gyro from its raw samples, and the variance it leaves in the RLS2
rows' specific force (Alg. 6) and in the RLS rows' α̂ (Alg. 4)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.signal import sosfreqz

from rotorid.flight import Flight
from rotorid.signal import butter_filtfilt, cached_sos


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


#: Channels `band_limited` filters: every signal on either side of eq. 10 and 19.
_FILTERED = ("gyro", "acc", "cmd", "rotor_speed")


def lowpass_cutoff(setting: float | None, rate_hz: float | None, log_rate: float) -> float | None:
    """The cut-off (Hz) of `band_limited` from `OnlineSettings.lowpass_hz` (None: 0.3 × the
    estimator's rate, `rate_hz` or else the log's); None (no filter) for 0 or a cut-off the log's
    rate cannot hold (at or above 0.45 × it)."""
    cut = 0.3 * (rate_hz or log_rate) if setting is None else setting
    return cut if 0 < cut < 0.45 * log_rate else None


def band_limited(flight: Flight, cutoff: float) -> Flight:
    """`flight` with its gyro, accelerometer and motor signals through one zero-phase
    Butterworth low-pass at `cutoff` (`signal.butter_filtfilt`, on the log's mean rate): the same
    linear filter on each side of a linear relation keeps it, and removes what no regressor
    explains above the cut-off (frame vibration aliased into the estimator's steps)."""
    return flight.replace(
        **{
            c: butter_filtfilt(getattr(flight, c), flight.rate, cutoff)
            for c in _FILTERED
            if getattr(flight, c) is not None
        }
    )


def _response4(log_rate: float, cutoff: float) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies (Hz, 0 to Nyquist) and |H|⁴ of `band_limited`'s zero-phase pass (power gain)."""
    f = np.linspace(0.0, 0.5 * log_rate, 4097)
    _, h = sosfreqz(cached_sos(log_rate, cutoff), worN=f, fs=log_rate)
    return f, np.abs(h) ** 4


def in_band(log_rate: float, cutoff: float, step: float) -> float:
    """Share of a white noise's variance in one estimator step (a mean over `step` s, N²/step)
    that `band_limited` leaves: 2 N² ∫|H|⁴ df (the zero-phase pass squares |H|) over N²/step,
    at most 1."""
    f, h4 = _response4(log_rate, cutoff)
    return float(min(1.0, 2.0 * np.trapezoid(h4, f) * step))


def band_density(x: np.ndarray, log_rate: float, cutoff: float, step: float) -> np.ndarray:
    """White-noise density² per column of a signal `x` after `band_limited` at `cutoff`, read
    where the estimator reads it: the second difference over its `step`, whose variance for a
    white noise of density² N² is 2 N² ∫|H|⁴ (2 - 2 cos 2πf·step)² df, robustly (the median of
    its square over 0.4549, as `acc_noise_density`). Unlike the raw samples' density it holds
    only what passes the filter: a frame vibration above the cut-off is out, its alias below in."""
    k = max(1, round(step * log_rate))
    d2 = np.diff(np.asarray(x, dtype=float)[::k], n=2, axis=0)
    if len(d2) < 3:
        return np.zeros(np.shape(x)[1])
    f, h4 = _response4(log_rate, cutoff)
    h = k / log_rate
    gain = 2.0 * np.trapezoid(h4 * (2.0 - 2.0 * np.cos(2 * np.pi * f * h)) ** 2, f)
    return np.median(d2 * d2, axis=0) / (0.4549 * gain)
