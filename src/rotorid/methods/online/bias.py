"""The gyro's bias tracked against the logged attitude (`gyro_bias`), which `identify` removes
before the estimator sees the flight (Kwon et al. assume an unbiased gyro)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from rotorid.flight import Flight


class GyroBias(NamedTuple):
    """The gyro bias tracked against the logged attitude (`gyro_bias`): `series` (N, 3) rad/s
    per sample, causal; `tau` (3,) s the tracking filter's time constant per axis; `white` (rad/s/√Hz) and
    `walk` (rad/s/√s) the noise levels its Allan variance gave (per axis); `lag` (s) the gyro's
    delay behind the attitude that was removed first."""

    series: np.ndarray
    tau: np.ndarray
    white: np.ndarray
    walk: np.ndarray
    lag: float


def rate_error(flight: Flight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per interval between two attitude samples: gyro - ω_q (rad/s, body), ω_q dt = log(R_kᵀ
    R_k+1) the body rotation the attitude says (exact for any motion), with the interval
    durations and ω_q."""
    from rotorid.frames import quat_to_rot

    r = quat_to_rot(flight.quat)
    dt = np.diff(flight.t)
    wq = (r[:-1].inv() * r[1:]).as_rotvec() / dt[:, None]
    g = 0.5 * (flight.gyro[:-1] + flight.gyro[1:])
    return g - wq, dt, wq


def _gyro_lag(d: np.ndarray, wq: np.ndarray, dt: np.ndarray) -> float:
    """The gyro's delay δ (s) behind the attitude: a gyro sampling the rate δ late reads
    ω(t - δ) ≈ ω - δ ω̇, so d = gyro - ω_q = b - δ ω̇ + noise, and δ is the least-squares slope
    of -d on ω̇ (central differences of ω_q; both demeaned per axis, pooled over the axes; the
    bias walks far slower than the manoeuvres' ω̇). 0 when the flight has no rotation."""
    wdot = np.gradient(wq, np.cumsum(dt) - 0.5 * dt, axis=0)
    a = wdot - wdot.mean(axis=0)
    den = float(np.sum(a * a))
    return -float(np.sum(a * (d - d.mean(axis=0)))) / den if den > 0 else 0.0


def allan_levels(d: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """White-noise density N (rad/s/√Hz) and rate random walk K (rad/s/√s) per axis of a
    rate-error series `d` (T, 3) at a constant step `dt`, from its overlapping Allan variance
    σ²(τ) = ⟨(θ_k+2m - 2 θ_k+m + θ_k)²⟩ / (2 τ²) of the integrated angle θ (IEEE Std 952-1997,
    Annex C), τ = m dt on an octave grid up to a quarter of the series, fitted by non-negative
    least squares in relative error to the sum of the noise terms' curves 3 Q²/τ² (angle
    noise: the attitude's and quantization), N²/τ (white rate noise) and K² τ / 3 (the bias's
    random walk). `d` holds the mean of two consecutive gyro samples (`rate_error`): θ is then
    their trapezoidal integral, whose second difference over m steps carries 2m - 1 white
    samples instead of 2m, so the white term is N² (1 - 1/(2m)) / τ (0.5 N²/τ at m = 1)."""
    from scipy.optimize import nnls

    theta = np.vstack([np.zeros((1, 3)), np.cumsum(d * dt, axis=0)])
    n = len(theta)
    ms = np.unique(np.round(2.0 ** np.arange(0, np.log2(max(n // 4, 2)) + 1e-9, 0.5)).astype(int))
    ms = ms[ms * 4 <= n]
    if len(ms) < 3:
        return np.full(3, np.nan), np.full(3, np.nan)
    tau = ms * dt
    av = np.array([np.mean((theta[2 * m :] - 2 * theta[m:-m] + theta[: -2 * m]) ** 2, axis=0) for m in ms])
    av /= 2.0 * tau[:, None] ** 2
    white, walk = np.zeros(3), np.zeros(3)
    basis = np.column_stack([3.0 / tau**2, (1.0 - 0.5 / ms) / tau, tau / 3.0])
    for k in range(3):
        if not np.all(av[:, k] > 0):  # a noise-free axis (a synthetic log): no levels
            continue
        coef, _ = nnls(basis / av[:, k : k + 1], np.ones(len(tau)))
        white[k], walk[k] = np.sqrt(coef[1]), np.sqrt(coef[2])
    return white, walk


def gyro_bias(flight: Flight, tau: float | None = None, lag: float | None = None) -> GyroBias | None:
    """The gyro's bias as a causal time series, tracked against the logged attitude; None
    without an attitude.

    The rate error d = gyro - ω_q (`rate_error`) measures the bias b(t) in white noise of
    density N; a bias that walks (density K) is tracked best by the steady-state Kalman filter
    of the model ḃ = w, d = b + v: its gain is K/N (Kalman-Bucy, P = K N), a first-order
    low-pass of time constant τ = N/K, with N and K from the Allan variance of d
    (`allan_levels`; per axis, capped at the flight's length; `tau` fixes it). Until τ
    has passed the filter is the running mean (the Kalman filter's transient from no prior), so
    a constant bias (K = 0, τ = the flight) gets the mean of the flight so far. The gyro's
    delay behind the attitude (`_gyro_lag`) is removed from d first: a 4 ms lag puts -δ ω̇ into
    d, as large as the bias in a fast manoeuvre. The series is causal (sample k uses the
    intervals up to k; sample 0 that ending at sample 1), so a live loop could run it too.

    A constant bias b reads as a steady rate: the correction law (Alg. 4) keeps an axis active
    in hover when |b| exceeds the KF's σ, the rows then carry α̂ noise without a moment
    (attenuating J), and the products of biased rates in the gyroscopic columns turn constant moments into inertia."""
    if flight.quat is None or len(flight.t) < 3:
        return None
    from scipy.signal import lfilter

    d, dt, wq = rate_error(flight)
    wdot = np.gradient(wq, np.cumsum(dt) - 0.5 * dt, axis=0)
    lag = _gyro_lag(d, wq, dt) if lag is None else lag
    d = d + lag * wdot
    step = float(np.median(dt))
    white, walk = allan_levels(d, step)
    span = float(flight.t[-1] - flight.t[0])
    if tau is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            taus = np.where(np.isfinite(white) & (walk > 0), white / walk, span)
    else:
        taus = np.full(3, float(tau))
    taus = np.clip(taus, step, span)  # no faster than a sample (a walk without white noise reads τ = 0)
    n = len(d)
    est = np.cumsum(d, axis=0) / np.arange(1, n + 1)[:, None]  # the running mean
    for k in range(3):  # then the low-pass, once 1/k < dt/τ
        k0 = min(n, max(1, round(float(taus[k]) / step)))
        if k0 < n:
            a = math.exp(-step / taus[k])
            est[k0:, k], _ = lfilter([1.0 - a], [1.0, -a], d[k0:, k], zi=[a * est[k0 - 1, k]])
    return GyroBias(np.vstack([est[:1], est]), taus, white, walk, float(lag))
