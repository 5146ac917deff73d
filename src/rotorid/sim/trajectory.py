"""Reference trajectories and excitation signals for the simulator, all vectorized over time.

- Jerk-limited rest-to-rest moves (triple integrator, bang-off-bang in jerk) for position and
  acceleration-limited moves (double integrator) for yaw, as in Kwon et al. Sec. III-G with
  the limits of their Table 5.
- Excitation signals for the manoeuvres of Eschmann et al. (Sec. IV-A: thrust, roll/pitch and
  yaw flights around hover): chirps and random doublets.
- Band-limited random noise for pilot-like flights (Six et al. Sec. IV-A: manual flights of
  60-90 s exciting mostly thrust and roll).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import signal as sps

from rotorid.errors import RotoridError


@dataclass(frozen=True)
class Move:
    """One rest-to-rest move of `distance` starting at `start` (s): piecewise-constant highest
    derivative (jerk for order 3, acceleration for order 2) over `durations`."""

    start: float
    distance: float
    order: int
    durations: tuple[float, ...]
    levels: tuple[float, ...]

    @property
    def duration(self) -> float:
        return float(sum(self.durations))


def move(distance: float, v_max: float, a_max: float, j_max: float | None = None, start: float = 0.0) -> Move:
    """Time-optimal rest-to-rest move under velocity/acceleration(/jerk) limits.

    With `j_max` the triple-integrator S-curve (7 segments: +j, 0, -j, cruise, -j, 0, +j);
    without it the double-integrator trapezoid (+a, cruise, -a). The cruise speed is reduced
    when the distance is too short to reach `v_max` (bang-bang instead of bang-off-bang).
    """
    if v_max <= 0 or a_max <= 0 or (j_max is not None and j_max <= 0):
        raise RotoridError(f"trajectory limits must be positive (v={v_max}, a={a_max}, j={j_max})")
    s = math.copysign(1.0, distance) if distance != 0 else 1.0
    d = abs(distance)
    if j_max is None:
        v = min(v_max, math.sqrt(d * a_max))
        ta = v / a_max
        tv = d / v - ta if v > 0 else 0.0
        return Move(start, distance, 2, (ta, max(tv, 0.0), ta), (s * a_max, 0.0, -s * a_max))

    def accel_phase(v: float) -> tuple[float, float, float]:
        """(jerk time, constant-acceleration time, peak acceleration) to reach speed v."""
        if v * j_max >= a_max**2:
            return a_max / j_max, v / a_max - a_max / j_max, a_max
        tj = math.sqrt(v / j_max)
        return tj, 0.0, j_max * tj

    v = v_max
    tj, tc, _ = accel_phase(v)
    if v * (2 * tj + tc) > d:  # cannot reach v_max: largest v with v * Ta(v) = d
        v = 0.5 * (-(a_max**2) / j_max + math.sqrt(a_max**4 / j_max**2 + 4.0 * d * a_max))
        if v * j_max < a_max**2:
            v = (0.5 * d * math.sqrt(j_max)) ** (2.0 / 3.0)
        tj, tc, _ = accel_phase(v)
    tv = max(d / v - (2 * tj + tc), 0.0) if v > 0 else 0.0
    j = s * j_max
    return Move(start, distance, 3, (tj, tc, tj, tv, tj, tc, tj), (j, 0.0, -j, 0.0, -j, 0.0, j))


def evaluate(moves: list[Move], t: np.ndarray, initial: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position, velocity and acceleration of the sum of `moves` at times `t` (moves may overlap)."""
    t = np.asarray(t, dtype=float)
    p = np.full_like(t, initial)
    v = np.zeros_like(t)
    a = np.zeros_like(t)
    for mv in moves:
        tau = t - mv.start
        # segment boundaries and the state (p, v, a) at each boundary
        edges = np.concatenate([[0.0], np.cumsum(mv.durations)])
        state = np.zeros((len(edges), 3))
        for i, (dur, lev) in enumerate(zip(mv.durations, mv.levels, strict=True)):
            p0, v0, a0 = state[i]
            if mv.order == 3:
                state[i + 1] = (
                    p0 + v0 * dur + a0 * dur**2 / 2 + lev * dur**3 / 6,
                    v0 + a0 * dur + lev * dur**2 / 2,
                    a0 + lev * dur,
                )
            else:
                state[i + 1] = (p0 + v0 * dur + lev * dur**2 / 2, v0 + lev * dur, 0.0)
        seg = np.clip(np.searchsorted(edges, tau, side="right") - 1, 0, len(mv.durations) - 1)
        dt = np.clip(tau - edges[seg], 0.0, None)
        lev = np.asarray(mv.levels)[seg]
        p0, v0, a0 = state[seg].T
        if mv.order == 3:
            pp = p0 + v0 * dt + a0 * dt**2 / 2 + lev * dt**3 / 6
            vv = v0 + a0 * dt + lev * dt**2 / 2
            aa = a0 + lev * dt
        else:
            pp, vv, aa = p0 + v0 * dt + lev * dt**2 / 2, v0 + lev * dt, lev.astype(float)
        before, after = tau < 0, tau >= edges[-1]
        p += np.where(before, 0.0, np.where(after, mv.distance, pp))
        v += np.where(before | after, 0.0, vv)
        a += np.where(before | after, 0.0, aa)
    return p, v, a


# -- excitation signals ----------------------------------------------------------------------
def chirp(t: np.ndarray, t0: float, t1: float, f0: float, f1: float, amplitude: float) -> np.ndarray:
    """A logarithmic sine sweep from f0 to f1 Hz between t0 and t1, zero outside, with
    half-cosine fade-in/out of one period of f0 so it starts and ends smoothly."""
    t = np.asarray(t, dtype=float)
    if not t1 > t0:
        return np.zeros_like(t)
    inside = (t >= t0) & (t <= t1)
    tau = np.clip(t - t0, 0.0, t1 - t0)
    y = sps.chirp(tau, f0=f0, t1=t1 - t0, f1=f1, method="logarithmic", phi=-90.0)
    ramp = min(1.0 / f0, 0.5 * (t1 - t0))
    fade = np.clip(np.minimum(tau, (t1 - t0) - tau) / ramp, 0.0, 1.0)
    return np.where(inside, amplitude * y * 0.5 * (1 - np.cos(np.pi * fade)), 0.0)


def doublets(
    t: np.ndarray,
    t0: float,
    t1: float,
    amplitude: float,
    hold: tuple[float, float],
    rng: np.random.Generator,
    rise: float = 0.0,
) -> np.ndarray:
    """Random doublets between t0 and t1: +A then -A pulses of random width in `hold` (s),
    random amplitude in [0.5 A, A], separated by rests of the same random width. `rise` > 0
    smooths the edges with a moving average of that length (a pilot's finite stick speed)."""
    t = np.asarray(t, dtype=float)
    edges, levels = [t0], [0.0]
    x = t0
    while x < t1:
        w = rng.uniform(*hold)
        amp = amplitude * rng.uniform(0.5, 1.0) * rng.choice([-1.0, 1.0])
        for lev, dur in ((amp, w), (-amp, w), (0.0, rng.uniform(*hold))):
            edges.append(x)
            levels.append(lev)
            x += dur
    edges.append(x)
    levels.append(0.0)
    idx = np.searchsorted(np.asarray(edges), t, side="right") - 1
    y = np.where((t >= t0) & (t < t1), np.asarray(levels)[np.clip(idx, 0, len(levels) - 1)], 0.0)
    if rise > 0 and len(t) > 1:
        n = max(round(rise / (t[1] - t[0])), 1)
        y = np.convolve(y, np.ones(n) / n, mode="same")
    return y


def band_limited_noise(
    t: np.ndarray, rms: float, f_hi: float, rng: np.random.Generator, f_lo: float = 0.05, fade: float = 2.0
) -> np.ndarray:
    """Zero-mean Gaussian noise band-limited to [f_lo, f_hi] Hz (zero-phase Butterworth),
    scaled to the given RMS: the stick motion of a pilot exciting an axis. Half-cosine
    fade-in/out over `fade` s at both ends, so the flight starts and ends at rest."""
    t = np.asarray(t, dtype=float)
    fs = 1.0 / (t[1] - t[0])
    pad = int(3.0 * fs / f_lo)  # settle the filter's slow transient outside the flight
    w = rng.standard_normal(len(t) + 2 * pad)
    sos = sps.butter(2, (f_lo, f_hi), btype="bandpass", fs=fs, output="sos")
    y = sps.sosfiltfilt(sos, w)[pad : pad + len(t)]
    edge = np.clip(np.minimum(t - t[0], t[-1] - t) / fade, 0.0, 1.0) if fade > 0 else np.ones_like(t)
    y = y * 0.5 * (1 - np.cos(np.pi * edge))
    s = float(np.sqrt(np.mean(y**2)))
    return y * (rms / s) if s > 0 else y
