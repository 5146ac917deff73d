"""Signal tools shared by every method: zero-phase Butterworth filtering applied identically
to every column ("parallel filtering", Six et al. Sec. III-C), central-difference derivatives,
decimation, and the first-order motor-lag filter (Eschmann et al. eq. 45-48)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache

import numpy as np
from scipy import signal as sps

from rotorid.errors import RotoridError


def butter_sos(fs: float, cutoff: float | tuple[float, float], order: int = 4, kind: str | None = None) -> np.ndarray:
    """Second-order sections of a Butterworth filter: a low-pass corner `cutoff` in Hz, or a
    (low, high) pair for a band-pass (`kind` inferred), checked against the rate `fs`."""
    kind = kind or ("bandpass" if np.ndim(cutoff) else "lowpass")
    if not (np.isfinite(fs) and fs > 0):
        raise RotoridError(f"sample rate {fs} Hz is not a positive number: the time stamps are corrupt")
    nyq = 0.5 * fs
    c = np.atleast_1d(cutoff).astype(float)
    if np.any(c <= 0) or np.any(c >= nyq):
        raise RotoridError(f"filter cut-off {cutoff} Hz must lie inside (0, {nyq:g}) Hz for data sampled at {fs:g} Hz")
    return sps.butter(order, c if kind == "bandpass" else c[0], btype=kind, fs=fs, output="sos")


@lru_cache(maxsize=64)
def _designed(fs: float, cutoff: float | tuple[float, float], order: int) -> np.ndarray:
    return butter_sos(fs, cutoff, order)


def cached_sos(fs: float, cutoff: float | tuple[float, float], order: int = 4) -> np.ndarray:
    """`butter_sos` (a cut-off or a (low, high) tuple), designed once per process for each
    (fs, cutoff, order): a design takes ~0.3 ms, more than filtering a block of rows. A copy."""
    return _designed(float(fs), cutoff, int(order)).copy()


def _padlen(sos: np.ndarray, n: int) -> int:
    """Odd-extension length at each end of a zero-phase pass over n samples."""
    return min(3 * (2 * len(sos) + 1), n - 1)


def butter_filtfilt(
    x: np.ndarray, fs: float, cutoff: float | tuple[float, float], order: int = 4, kind: str | None = None
) -> np.ndarray:
    """Zero-phase Butterworth filter along axis 0 of every column of `x` (`butter_sos`).

    Forward-backward (sosfiltfilt), so the phase is zero and the magnitude response is
    squared. `filtfilt_blocks` gives the same numbers a block at a time.
    """
    sos = butter_sos(fs, cutoff, order, kind)
    x = np.asarray(x, dtype=float)
    return sps.sosfiltfilt(sos, x, axis=0, padlen=_padlen(sos, x.shape[0]))


#: Most rows per block of `filtfilt_blocks` (its temporaries are a few blocks wide).
BLOCK = 8192


#: Fewest rows per block of `block_rows`: each block costs a few sosfilt calls and the
#: caller's per-block work (~0.1-0.5 ms of Python each), so smaller blocks are all overhead
#: (tls's rotor columns of a 25 500-row piece: ~10 % faster at 4096 than at 2048, slower again
#: at 6144, where a block's temporaries outgrow the cache).
MIN_BLOCK = 4096


def block_rows(n: int) -> int:
    """Rows per block for a zero-phase pass over n rows: about n/32 (so a long flight's
    temporaries stay a small fraction of its size), between `MIN_BLOCK` (a short flight's
    blocks are a megabyte or two of 78 columns anyway) and `BLOCK`."""
    return int(min(max(n // 32, MIN_BLOCK), BLOCK))


def filtfilt_blocks(
    sos: np.ndarray,
    rows: Callable[[int, int], np.ndarray],
    n: int,
    block: int,
    forward: np.ndarray | None = None,
) -> Iterator[tuple[int, np.ndarray]]:
    """The zero-phase filter `sosfiltfilt(sos, x, axis=0)` of `butter_filtfilt` (same odd
    extension, same initial states), block by block, never holding all of x or its image.

    `rows(a, b)` returns x[a:b] (b - a, C) of a signal of n rows. Yields (a, y[a:a+len]) for
    blocks of `block` rows from the last to the first. The forward pass runs once over the
    whole signal keeping only its state at each block start; the backward pass then walks
    the blocks from the end, re-running the forward pass of each block from its saved state
    and carrying the backward state into the next. A recursive filter's state holds all it
    knows of the past, so every sample sees exactly the arithmetic of the one-shot call.

    With `forward` (n, C), the forward pass is kept there as it runs and the backward pass
    reads it back instead of re-running each block's forward pass: one pass fewer, for a
    caller that holds an array of the output's size anyway (it may write the yielded blocks
    into that same array: each block's forward pass is read before it is yielded).
    """
    e = _padlen(sos, n)
    z_unit = sps.sosfilt_zi(sos)[:, :, None]  # steady state for a unit step, (sections, 2, 1)
    head, tail = rows(0, e + 1), rows(n - e - 1, n)
    left = 2.0 * head[0] - head[e:0:-1]
    right = 2.0 * tail[-1] - tail[-2::-1]
    z = z_unit * (left[0] if e else head[0])
    if e:
        _, z = sps.sosfilt(sos, left, axis=0, zi=z)
    starts = range(0, n, block)
    saved = []
    for a in starts:
        saved.append(z)
        y, z = sps.sosfilt(sos, rows(a, min(a + block, n)), axis=0, zi=z)
        if forward is not None:
            forward[a : a + len(y)] = y
    if e:
        y, z = sps.sosfilt(sos, right, axis=0, zi=z)
    _, zb = sps.sosfilt(sos, y[::-1], axis=0, zi=z_unit * y[-1])  # backward pass over the right pad
    for a, zf in zip(reversed(starts), reversed(saved), strict=True):
        if forward is None:
            y, _ = sps.sosfilt(sos, rows(a, min(a + block, n)), axis=0, zi=zf)
        else:
            y = forward[a : min(a + block, n)]
        y, zb = sps.sosfilt(sos, y[::-1], axis=0, zi=zb)
        yield a, y[::-1]


def _uniform_step(t: np.ndarray) -> float | None:
    """The step of `t` when it is a uniform grid (every step within 1e-6 of the mean, the
    rounding of t0 + k h), else None; checked a block at a time (no whole-length temporary)."""
    n = len(t)
    if n < 2:
        return None
    h = float(t[-1] - t[0]) / (n - 1)
    ok = h > 0 and all(np.all(np.abs(np.diff(t[a : a + BLOCK + 1]) - h) <= 1e-6 * h) for a in range(0, n - 1, BLOCK))
    return h if ok else None


def _d1(x: np.ndarray, t: np.ndarray, h: float | None) -> np.ndarray:
    """First derivative along axis 0: on a uniform grid of step h the fourth-order central
    difference (x[i-2] - 8 x[i-1] + 8 x[i+1] - x[i+2]) / 12h inside, `np.gradient`'s
    second-order formulas on the two rows at each end; else `np.gradient` on `t`.

    A derivative is compared with signals that are not differentiated (rotor wrench against
    I ω̇, m a), so its gain error is a parameter bias: the three-point difference passes a
    sine of frequency f with gain sin(2πfh)/(2πfh), 1 - (2πfh)²/6: -0.15 % at 3 Hz and 200 Hz,
    twice that through a second derivative (a motion-capture pose). The five-point
    difference's gain is 1 - (2πfh)⁴/30 (-2.6e-6 there; Fornberg 1988, Math. Comp. 51).
    Two rows (a log piece cut short) get the one-sided difference, one row a zero slope."""
    if len(x) < 3:
        return np.gradient(x, t, axis=0, edge_order=1) if len(x) == 2 else np.zeros(np.shape(x))
    if h is None or len(x) < 5:
        return np.gradient(x, t if h is None else h, axis=0, edge_order=2)
    y = np.gradient(x, h, axis=0, edge_order=2)
    y[2:-2] = (x[:-4] - x[4:] + 8.0 * (x[3:-1] - x[1:-3])) / (12.0 * h)
    return y


def derivative(x: np.ndarray, t: np.ndarray, order: int = 1) -> np.ndarray:
    """Central-difference derivative(s) along axis 0 (`_d1`: fourth-order accurate inside a
    uniform grid, second-order at its ends and on a non-uniform one)."""
    h = _uniform_step(t)
    for _ in range(order):
        x = _d1(x, t, h)
    return x


def derivative_blocks(x: np.ndarray, t: np.ndarray, out: np.ndarray | None = None, block: int = BLOCK) -> np.ndarray:
    """`derivative(x, t)` (first order) computed `block` rows at a time into `out`, which may
    be `x` itself (in place), so the temporaries are a few blocks whatever the length.

    Each block is `_d1` of its rows with two neighbours either side, the same formula per
    sample as the one-shot call (whether the grid is uniform is decided on the whole of `t`).
    """
    n = len(x)
    out = np.empty(np.shape(x)) if out is None else out
    h = _uniform_step(t)
    starts = list(range(0, n, max(block, 2)))
    if len(starts) > 1 and n - starts[-1] < 2:  # a block needs two rows (the next one's halo)
        starts.pop()
    left = None
    for a, b in zip(starts, [*starts[1:], n], strict=True):
        lo, hi = max(a - 2, 0), min(b + 2, n)
        rows = x[lo:hi] if left is None else np.concatenate([left, x[a:hi]])
        left = x[max(b - 2, lo) : b].copy()  # the next block's left halo, before `out` may overwrite it
        out[a:b] = _d1(rows, t[lo:hi], h)[a - lo : b - lo]
    return out


def decimate(x: np.ndarray, factor: int) -> np.ndarray:
    """Every `factor`-th sample (apply a low-pass first: `butter_filtfilt` below fs/2/factor)."""
    return np.asarray(x)[:: int(factor)]


class SensorLowpass:
    """The low-pass a firmware ran on a sensor before logging it (`Flight.meta["acc_lowpass"]`:
    {"kind": "biquad", "hz": cut-off}; an RBJ biquad with Q = 1/√2 is the 2nd-order Butterworth),
    applied to model rows along axis 0 block after block with its state carried, so a model
    compares with the filtered measurement. Designed at the log's rate `fs` (the firmware runs
    it at the sensor's; at a 10 Hz cut-off and ≥ 500 Hz the two differ by < 0.1 %); it starts at
    rest on the first row. `spec` None passes rows through."""

    def __init__(self, spec: dict[str, object] | None, fs: float) -> None:
        self.sos: np.ndarray | None = None
        self.zi: np.ndarray | None = None
        if spec is None:
            return
        if spec.get("kind") != "biquad":
            raise RotoridError(f"sensor low-pass {spec!r} is not a biquad: only the biquad is modelled")
        self.sos = cached_sos(fs, float(spec["hz"]), 2)  # type: ignore[arg-type]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.sos is None or not len(x):
            return x
        if self.zi is None:
            self.zi = sps.sosfilt_zi(self.sos).reshape((len(self.sos), 2) + (1,) * (x.ndim - 1)) * x[0]
        y, self.zi = sps.sosfilt(self.sos, x, axis=0, zi=self.zi)
        return y


#: Rows per block of the motor-lag kernels: their temporaries stay a few blocks (~1 MB for
#: four motors) whatever the flight's length, so memory is linear in the output alone.
CHUNK = 16_384


def is_uniform(t: np.ndarray, rtol: float = 1e-6) -> bool:
    d = np.diff(t)
    return bool(np.ptp(d) <= rtol * np.mean(d))


def motor_lag(u: np.ndarray, t: np.ndarray, tm: float, y0: np.ndarray | None = None) -> np.ndarray:
    """Rotor states from setpoints `u` (N, M) through a first-order lag with time constant `tm`.

    Exact discretisation with the setpoint held over each step (Eschmann et al. eq. 45-48):
    y[k] = a_k y[k-1] + (1 - a_k) u[k-1], a_k = exp(-(t_k - t_{k-1}) / tm); y[0] = y0
    (default u[0], the motor at rest on its setpoint). Uniform steps use one
    `scipy.signal.lfilter` call for all columns; non-uniform steps use the closed form of
    the time-varying recursion in chunks short enough for float64, still vectorized.
    """
    u = np.asarray(u, dtype=float)
    squeeze = u.ndim == 1
    u2 = u[:, None] if squeeze else u
    y0 = u2[0] if y0 is None else np.broadcast_to(np.asarray(y0, dtype=float), u2[0].shape)
    if tm <= 0:
        return u.copy()
    dt = np.diff(t)
    if is_uniform(t):
        a = float(np.exp(-dt.mean() / tm))
        y = np.empty_like(u2)
        y[0] = y0
        zi = (a * y0)[None, :]  # state so that y[1] = a*y0 + (1-a)*u[0]
        for i in range(0, len(u2) - 1, CHUNK):  # blocks carry the filter state: same numbers
            j = min(i + CHUNK, len(u2) - 1)
            y[i + 1 : j + 1], zi = sps.lfilter([1.0 - a], [1.0, -a], u2[i:j], axis=0, zi=zi)
        return y[:, 0] if squeeze else y
    dt /= tm
    y = _lag_varying(u2, dt, y0)
    return y[:, 0] if squeeze else y


def _lag_varying(u: np.ndarray, s: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """y[k] = e^{-s_k} y[k-1] + (1 - e^{-s_k}) u[k-1] by the closed form
    y[k] = e^{-S_k} (y0 + sum_{j<=k} e^{S_j} (1 - e^{-s_j}) u[j-1]), S = cumsum(s).

    `s` is (N-1,) or (N-1, M) (a step per motor). Evaluated in blocks of at most `CHUNK`
    rows whose accumulated S stays below 500 (so the exponentials stay finite), vectorized
    within each block: the temporaries are a few blocks whatever the flight's length.
    """
    n = u.shape[0]
    y = np.empty_like(u)
    y[0] = y0
    start = 1
    while start < n:
        seg = s[start - 1 : start - 1 + CHUNK]
        seg = seg if seg.ndim == 2 else seg[:, None]
        big_s = np.cumsum(seg, axis=0)
        k = int(np.searchsorted(_row_max(big_s), 500.0, side="right"))
        k = max(k, 1)  # at least one step per block, even a step longer than 500 T_m
        stop = start + k
        big_s, seg = big_s[:k], seg[:k]
        # (1 - e^{-s_j}) u[j-1] e^{S_j}: the sign taken on the (k, 1) factor where the step is
        # shared (a negation is exact, so the same numbers with one pass less over (k, M))
        acc = np.negative(np.expm1(-seg)) * u[start - 1 : stop - 1]
        acc *= np.exp(big_s)
        np.cumsum(acc, axis=0, out=acc)
        acc += y[start - 1]
        np.negative(big_s, out=big_s)
        np.exp(big_s, out=big_s)
        np.multiply(big_s, acc, out=y[start:stop])
        start = stop
    return y


def _row_max(a: np.ndarray) -> np.ndarray:
    """Each row's maximum of a tall (N, M) array, folded column by column: the same values as
    `a.max(axis=1)` (a maximum is exact in any order), without numpy's slow reduction along a
    short inner axis (it was 40 % of an asymmetric lag's time with four motors)."""
    out = a[:, 0]
    for j in range(1, a.shape[1]):
        out = np.maximum(out, a[:, j])
    return out


def motor_lag_asymmetric(
    u: np.ndarray, t: np.ndarray, tm_rise: float, tm_fall: float, max_iter: int = 50
) -> np.ndarray:
    """First-order lag whose constant is `tm_rise` while the setpoint is above the rotor state
    and `tm_fall` while it is below (RLtools' rising/falling motor model).

    The branch depends on the state, so the recursion is solved as a fixed point: start from
    the symmetric lag, choose each step's constant from sign(u - y), solve the resulting
    time-varying linear recursion in closed form (vectorized), repeat until no step changes
    branch (typically 2-5 passes). Equal constants reduce exactly to `motor_lag`.
    """
    return asymmetric_lag(u, t, tm_rise, tm_fall, max_iter=max_iter)[0]


def asymmetric_lag(
    u: np.ndarray,
    t: np.ndarray,
    tm_rise: float,
    tm_fall: float,
    rising: np.ndarray | None = None,
    max_iter: int = 50,
) -> tuple[np.ndarray, np.ndarray | None]:
    """`motor_lag_asymmetric` and the branch of each step it settled on ((N-1, M), True where
    rising; None where the constants are equal), starting the fixed point from `rising` when
    given (e.g. the branches of nearby constants: one pass where they hold) instead of the
    symmetric lag's. The fixed point is unique, so every start that converges gives the same
    states bit for bit: a state is computed from the branches before it alone (the blocks'
    cumulative sums run forward and a block ends where they pass a bound), so a pass makes every
    branch up to the first wrong one right, and the states of the branches found are always
    computed the same way."""
    if np.isclose(tm_rise, tm_fall):
        return motor_lag(u, t, tm_rise), None
    u = np.asarray(u, dtype=float)
    u2 = u[:, None] if u.ndim == 1 else u
    dt = np.diff(t)[:, None]
    if rising is None:
        y = motor_lag(u2, t, 0.5 * (tm_rise + tm_fall))
    else:
        y = _lag_varying(u2, np.where(rising, dt / tm_rise, dt / tm_fall), u2[0])
    for _ in range(max_iter):
        new = u2[:-1] > y[:-1]
        if rising is not None and np.array_equal(new, rising):
            break
        rising = new
        y = _lag_varying(u2, np.where(rising, dt / tm_rise, dt / tm_fall), u2[0])
    return (y[:, 0] if u.ndim == 1 else y), rising


def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) indices of the runs of True in a boolean array."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


#: ArduPilot's SID_AXIS values (ArduCopter mode_systemid.h) -> the rotorid axis they sweep:
#: 1-3 attitude input, 4-6 recovery, 7-9 rate target, 10-12 mixer, 13 mixer throttle.
SID_AXES = {1: "roll", 2: "pitch", 3: "yaw", 4: "roll", 5: "pitch", 6: "yaw", 7: "roll", 8: "pitch", 9: "yaw"}
SID_AXES |= {10: "roll", 11: "pitch", 12: "yaw", 13: "thrust"}


def sid_chirp(
    t: np.ndarray,
    magnitude: float,
    f_start: float,
    f_stop: float,
    t_fade_in: float,
    t_const: float,
    t_record: float,
    t_fade_out: float,
) -> tuple[np.ndarray, np.ndarray]:
    """ArduPilot's System ID chirp (AP_Math/chirp.cpp) at times `t` since the sweep began:
    (waveform, instantaneous frequency in Hz). The frequency holds at `f_start` for `t_const`
    s (ArduCopter: two cycles), then rises exponentially to `f_stop` at `t_record`; the
    amplitude fades in over `t_fade_in` s and out over the last `t_fade_out` s (half-cosines)."""
    t = np.asarray(t, dtype=float)
    tau = np.clip(t, 0.0, t_record)
    window = np.clip(tau / max(t_fade_in, 1e-9), 0.0, 1.0)
    window = 0.5 - 0.5 * np.cos(np.pi * window)
    out = np.clip((tau - (t_record - t_fade_out)) / max(t_fade_out, 1e-9), 0.0, 1.0)
    window = window * (0.5 + 0.5 * np.cos(np.pi * out))
    sweep = tau > t_const
    swept, f_swept = exp_sweep_phase(tau - t_const, f_start, f_stop, max(t_record - t_const, 1e-9))
    phase = np.where(sweep, swept, 2 * np.pi * f_start * (tau - t_const))
    freq = np.where(sweep, f_swept, f_start)
    inside = (t > 0) & (t <= t_record)
    return np.where(inside, window * magnitude * np.sin(phase), 0.0), np.where(inside, freq, 0.0)


def exp_sweep_phase(tau: np.ndarray, f_start: float, f_stop: float, span: float) -> tuple[np.ndarray, np.ndarray]:
    """(phase in rad, frequency in Hz) `tau` s into an exponential sweep from `f_start` to
    `f_stop` Hz over `span` s: f = f0 (f1/f0)^(tau/span), phase = 2π f0 span (f/f0 - 1) / ln(f1/f0)
    (ArduPilot's AP_Math/chirp.cpp and Betaflight's common/chirp.c fly the same sweep)."""
    b = np.log(f_stop / f_start)
    growth = np.exp(b * np.asarray(tau, dtype=float) / span)
    return 2 * np.pi * f_start * span / b * (growth - 1.0), f_start * growth


def betaflight_chirp(t: np.ndarray, f_start: float, f_stop: float, t_sweep: float) -> tuple[np.ndarray, np.ndarray]:
    """Betaflight's chirp excitation (src/main/common/chirp.c, chirpUpdate, betaflight master
    0b1b0784) at times `t` since CHIRP mode began: (cos of the sweep's phase, scaled by the
    frequency below 1 Hz so the angle stays bounded; frequency in Hz), zero outside the
    `t_sweep` s the sweep lasts. The firmware's lead-lag shaping (chirp_lag/lead_freq_hz) and
    per-axis amplitude follow; an instrument needs neither (an LTI filter and a gain cancel)."""
    t = np.asarray(t, dtype=float)
    phase, freq = exp_sweep_phase(t, f_start, f_stop, t_sweep)
    wave = np.cos(phase) * np.minimum(freq, 1.0)
    inside = (t >= 0) & (t < t_sweep)
    return np.where(inside, wave, 0.0), np.where(inside, freq, 0.0)
