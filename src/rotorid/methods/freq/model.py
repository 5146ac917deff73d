"""The physical model's transfer functions and their weighted fit to measured responses.

Per axis, from the command wrench `w` (`rotorid.methods.freq.sweep`) to the measured output,
a first-order motor lag `T_m` (Eschmann et al. eq. 4, the delay method's EMA in continuous
time) and an optional dead time `τ`:

    thrust:           a_z / w   = g e^{-sτ} / (1 + s T_m)           g = k / m
    roll, pitch, yaw: ω̇ / w     = g e^{-sτ} / (1 + s T_m) D(ω)      g = k / I   (yaw: k K_τ / I_zz)

with `k` every rotor's thrust slope at the flights' mean command `u₀` (N per unit command) and
`D(ω) = sin(ωΔ) / (ωΔ)` the central difference's response (the angular acceleration is the
gyro's central difference at the sample period Δ: an output with the motor lag's short memory,
whose spectral segments hold little of the transients a rate output, an integrator's, carries
over their edges). `T_m` and `τ` are shared by every axis and flight, each axis has its gain.

A rotor whose thrust falls with its climb rate (inflow, blade-element theory; vertical drag)
damps each axis: the body's climb rate and roll, pitch and yaw rates feed back on the thrusts,
`ω̇ = g w̃ - d ω`, so the response gains the high-pass `s / (s + d)` of the rate damping `d`
(the stability derivatives -Z_w, -L_p, -M_q, -N_r of rotorcraft frequency-domain
identification: Tischler & Remple, *Aircraft and Rotorcraft System Identification*, 2nd ed.,
ch. 11). Unmodelled, it leads the low-frequency phase and T_m shrinks to match (-41 % on the
chirp scenarios' Crazyflie whose thrust falls 25 % per m/s). One `d` per axis, kept only
where it predicts held-out frequency blocks better; the gain is the response's high-frequency
asymptote, so the inertia reads as without it.

The slope moves while the vehicle tilts (the altitude loop raises the collective by
1/cos φ - 1) and while it climbs: with a curved thrust curve `f(u) = f(u₀) + k (u - u₀) +
k κ (u - u₀)² / 2` the wrench of the lagged commands `ũ_i` is `k (w̃ + κ q)` with
`q = Σ_i a_i (ũ_i - u₀)² / 2` (for roll the product of the collective's and the axis'
deviations), so a large low-frequency sweep sees its gain rise with its amplitude. `q` goes
through the dead time (and the central difference) as `w` does, with one relative curvature
`κ = f''/f'` for every axis; with `b` its estimated response at the bins (the same spectral
estimate, `ũ` lagged by the first fit's `T_m`) the model is `g (H/g + κ b)`, kept only where
it predicts held-out frequency blocks better.

The fit minimizes Σ |ĥ - H(θ)|² / var(ĥ) over the bins kept (complex weighted least squares);
its covariance is the sandwich `A⁻¹ B A⁻¹ / 2`, `A = Re(Jᴴ W J)`, `B = Re(Jᴴ W C W J)`, with
`C` the estimates' covariance across neighbouring bins (`rotorid.methods.freq.frf`), widened by
the reduced χ² when the residuals exceed their variance beyond the scatter the bins' own noise
gives it (`CHI2_SIGMAS` standard deviations: what the model leaves out, measured from the data),
and by the scatter of the fits leaving out one frequency band (`band_scatter`) or one axis
(`axis_scatter`) at a time where it exceeds what the bins' noise allows: the model's structure
judged on data it was not fitted to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import optimize, special
from scipy import signal as sps

from rotorid.errors import ExcitationError

#: Upper bound of the dead time (s).
TAU_MAX = 0.1
#: Upper bound of the rate dampings (1/s: a corner at 3 Hz, a few times the inflow damping of a
#: small quadrotor's roll) and the values the search starts from.
DAMP_MAX = 20.0
DAMP_START = (0.0, 1.0, 3.0)
#: The reduced χ² widens σ only this many of its own standard deviations above its mean (bins
#: correlated through the window scatter it far more than independent ones would).
CHI2_SIGMAS = 2.0
#: Frequency blocks held out, one at a time, to judge the dead time and the curvature.
CV_BLOCKS = 5
#: Bins per chunk of a held-out block (twice the bins the spectral window correlates).
CHUNK_BINS = 12
#: Contiguous frequency bands (equal in log-frequency) the structure check leaves out in turn.
JACK_BANDS = 6
#: Level of the structure check's test, shared by the parameters it tests (Bonferroni).
JACK_LEVEL = 0.01


#: A fitted response this many times smaller than the measured one is a gain collapsed to nothing.
COLLAPSED = 1e9


class CollapsedGain(ExcitationError):
    """The fit drove the gain of `axes` to nothing (their response fits no non-zero gain: the
    rate damping's high-pass, say, taking all of it); the inertia through it would be infinite."""

    def __init__(self, axes: list[str]) -> None:
        super().__init__(
            f"freq: the {', '.join(axes)} response fits no non-zero gain; fly a chirp on the axis "
            "(ArduPilot SID_AXIS, Betaflight debug_mode CHIRP) or use --method delay"
        )
        self.axes = axes


@dataclass(frozen=True)
class AxisData:
    """The bins of one measured response kept for the fit: frequencies (Hz), estimates,
    their complex covariance, the output kind ("acc": specific force, or "angacc": the gyro's
    central difference at `fs` Hz), the axis whose gain it shares and the estimated response
    `b` of the curvature's input (module docstring; None before a first fit)."""

    axis: str
    kind: str
    f: np.ndarray
    h: np.ndarray
    cov: np.ndarray
    fs: float = 0.0
    b: np.ndarray | None = None

    @property
    def var(self) -> np.ndarray:
        return np.real(np.diag(self.cov))


@dataclass(frozen=True)
class Fit:
    """Estimates `theta` (names in `names`: "tm", optional "tau", "g_<axis>", optional
    "kappa"), their covariance, the reduced χ² (before widening), the most the bins' own noise
    lets it reach (`chi2_limit`, beyond which σ is widened) and the parameters stopped on a
    bound."""

    names: list[str]
    theta: np.ndarray
    cov: np.ndarray
    chi2_red: float
    at_bound: list[str]
    chi2_limit: float = 1.0

    @property
    def widened(self) -> bool:
        """Whether the residuals exceed their variance beyond the noise's own scatter."""
        return self.chi2_red > self.chi2_limit

    def get(self, name: str) -> float:
        return float(self.theta[self.names.index(name)])


def response(
    f: np.ndarray, gain: float, tm: float, tau: float, kind: str, fs: float = 0.0, damp: float = 0.0
) -> np.ndarray:
    """The model's frequency response at `f` (Hz), with the rate damping `damp` (1/s; module
    docstring)."""
    f = np.asarray(f, dtype=float)
    s = 2j * np.pi * f
    h = gain * np.exp(-s * tau) / (1.0 + s * tm)
    if damp > 0:
        h = h * s / (s + damp)
    return h * np.sinc(2.0 * f / fs) if kind == "angacc" else h


def predict(x: np.ndarray, fs: float, gain: float, tm: float, tau: float, kind: str, damp: float = 0.0) -> np.ndarray:
    """The model's output to the input samples `x` (uniform at `fs` Hz along the first axis):
    `response` applied by FFT to the record held at its first and last values for ten lags
    before and after it (a vehicle in steady hover before and after the log), so the result is
    the linear convolution up to the model's memory beyond that hold (e^-10). The rate damping's
    memory (1/d, up to seconds) is longer than any such hold: its high-pass 1 - d/(s + d) is
    applied after, as the exact recursion of the first-order lag d/(s + d) on the samples,
    started in the steady state of the first."""
    x = np.asarray(x, dtype=float)
    pad = int(np.ceil(10.0 * (tm + tau) * fs)) + 2
    n = len(x) + 2 * pad
    held = np.pad(x, [(pad, pad)] + [(0, 0)] * (x.ndim - 1), mode="edge")
    h = response(np.fft.rfftfreq(n, 1.0 / fs), gain, tm, tau, kind, fs)
    y = np.fft.irfft(h.reshape(-1, *[1] * (x.ndim - 1)) * np.fft.rfft(held, axis=0), n, axis=0)[pad : pad + len(x)]
    if damp <= 0:
        return y
    a = np.exp(-damp / fs)
    c = 0.5 * (1.0 - a)  # trapezoidal input (no half-sample shift); state (a + c) y₀ is the steady one
    slow, _ = sps.lfilter([c, c], [1.0, -a], y, axis=0, zi=(a + c) * y[:1])
    return y - slow


def curvature_input(cmd: np.ndarray, gains: np.ndarray, u0: float, fs: float, tm: float) -> np.ndarray:
    """q = Σ_i a_i (ũ_i - u₀)² / 2 of the commands `cmd` (samples × rotors) lagged by `tm`
    (module docstring), `gains` the rotors' a_i of one axis."""
    lagged = predict(cmd, fs, 1.0, tm, 0.0, "acc")
    return 0.5 * ((lagged - u0) ** 2) @ gains


def axis_lags(fit: Fit, axis: str) -> tuple[float, float, float, float]:
    """(gain, T_m, dead time, rate damping) of `fit` for `axis`."""
    return _unpack(fit.theta, fit.names, axis)


def jacobian(
    f: np.ndarray, gain: float, tm: float, tau: float, kind: str, fs: float = 0.0, damp: float = 0.0
) -> np.ndarray:
    """∂H/∂(gain, tm, tau, damp), shape (len(f), 4)."""
    s = 2j * np.pi * np.asarray(f, dtype=float)
    h = response(f, gain, tm, tau, kind, fs, damp)
    return np.column_stack([h / gain, -s * h / (1.0 + s * tm), -s * h, -h / (s + damp)])


def _unpack(theta: np.ndarray, names: list[str], axis: str) -> tuple[float, float, float, float]:
    tau = theta[names.index("tau")] if "tau" in names else 0.0
    damp = theta[names.index(f"d_{axis}")] if f"d_{axis}" in names else 0.0
    return float(theta[names.index(f"g_{axis}")]), float(theta[0]), float(tau), float(damp)


def curve_coefficient(theta: np.ndarray, names: list[str], axis: str) -> float:
    """The curvature input's gain on `axis`, g κ (0 without curvature)."""
    if "kappa" not in names:
        return 0.0
    return float(theta[names.index(f"g_{axis}")] * theta[names.index("kappa")])


def _model(theta: np.ndarray, names: list[str], d: AxisData) -> np.ndarray:
    """The model at `d`'s bins: the transfer function plus the curvature's term if fitted."""
    g, tm, tau, damp = _unpack(theta, names, d.axis)
    h = response(d.f, g, tm, tau, d.kind, d.fs, damp)
    return h + curve_coefficient(theta, names, d.axis) * d.b if "kappa" in names else h


def _design(theta: np.ndarray, names: list[str], d: AxisData) -> tuple[np.ndarray, np.ndarray]:
    """The model at `d`'s bins and its derivatives by every parameter, (len(f), len(names))."""
    g, tm, tau, damp = _unpack(theta, names, d.axis)
    jl = jacobian(d.f, g, tm, tau, d.kind, d.fs, damp)
    j = np.zeros((len(d.f), len(names)), dtype=complex)
    j[:, names.index(f"g_{d.axis}")] = jl[:, 0]
    j[:, 0] = jl[:, 1]
    if "tau" in names:
        j[:, 1] = jl[:, 2]
    if "kappa" in names:
        j[:, names.index(f"g_{d.axis}")] += theta[names.index("kappa")] * d.b
        j[:, names.index("kappa")] = g * d.b
    if f"d_{d.axis}" in names:
        j[:, names.index(f"d_{d.axis}")] = jl[:, 3]
    return _model(theta, names, d), j


def _residuals(theta: np.ndarray, names: list[str], data: list[AxisData]) -> np.ndarray:
    out = []
    for d in data:
        e = (d.h - _model(theta, names, d)) / np.sqrt(d.var)
        out += [e.real, e.imag]
    return np.concatenate(out)


def _gains(tm: float, damp: float, data: list[AxisData], axes: list[str]) -> np.ndarray:
    """The weighted least-squares gains for fixed lags (the model is linear in them)."""
    num, den = dict.fromkeys(axes, 0.0), dict.fromkeys(axes, 0.0)
    for d in data:
        m = response(d.f, 1.0, tm, 0.0, d.kind, d.fs, damp)
        num[d.axis] += float(np.sum(np.real(np.conj(m) * d.h) / d.var))
        den[d.axis] += float(np.sum(np.abs(m) ** 2 / d.var))
    return np.array([max(num[a] / den[a], 1e-300) for a in axes])


def _names(axes: list[str], dead: bool, curved: bool, damped: bool = False) -> list[str]:
    """The parameters' names: T_m, the dead time, the gains, the curvature and the axes' rate dampings."""
    terms = ["tm", *(["tau"] if dead else []), *(f"g_{a}" for a in axes), *(["kappa"] if curved else [])]
    return terms + [f"d_{a}" for a in axes if damped]


def _start(data: list[AxisData], axes: list[str], tm_bounds: tuple[float, float], names: list[str]) -> np.ndarray:
    """The best of a log-spaced grid of T_m (and of one rate damping for every axis, if fitted;
    gains solved for each, no dead time nor curvature), as the local search's start."""
    best = None
    damped = any(n.startswith("d_") for n in names)
    for tm in np.geomspace(*tm_bounds, 25)[1:-1]:
        for damp in DAMP_START if damped else (0.0,):
            th = np.concatenate(
                [
                    [tm],
                    [0.0] if "tau" in names else [],
                    _gains(tm, damp, data, axes),
                    [0.0] if "kappa" in names else [],
                    [damp] * len(axes) if damped else [],
                ]
            )
            cost = float(np.sum(_residuals(th, names, data) ** 2))
            if best is None or cost < best[0]:
                best = (cost, th)
    return best[1]


def fit(
    data: list[AxisData], tm_bounds: tuple[float, float], dead: bool, curved: bool = False, damped: bool = False
) -> Fit:
    """Fit T_m, the dead time (if `dead`), one gain per axis, (if `curved`: every data set has
    its `b`) the thrust curve's relative curvature and (if `damped`)
    a rate damping per axis to every data set."""
    axes = list(dict.fromkeys(d.axis for d in data))
    names = _names(axes, dead, curved, damped)
    x0 = _start(data, axes, tm_bounds, names)
    free = [np.inf] if curved else []
    nd = len(axes) if damped else 0
    lo = np.array([tm_bounds[0], *([0.0] if dead else []), *([0.0] * len(axes)), *np.negative(free), *([0.0] * nd)])
    hi = np.array([tm_bounds[1], *([TAU_MAX] if dead else []), *([np.inf] * len(axes)), *free, *([DAMP_MAX] * nd)])
    x0 = np.clip(x0, lo, hi)
    sol = optimize.least_squares(_residuals, x0, bounds=(lo, hi), args=(names, data), x_scale="jac", xtol=1e-12)
    theta = sol.x
    with np.errstate(all="ignore"):  # a model response a vanishing share of the measured one
        ratio = {
            ax: np.median(np.abs(np.concatenate([d.h / _model(theta, names, d) for d in data if d.axis == ax])))
            for ax in axes
        }
    if not all(r < COLLAPSED for r in ratio.values()):
        raise CollapsedGain([ax for ax, r in ratio.items() if not r < COLLAPSED])
    a = np.zeros((len(names), len(names)))
    b = np.zeros_like(a)
    chi2, n, mean, var = 0.0, 0, 0.0, 0.0
    for d in data:
        with np.errstate(all="ignore"):  # a diverged fit overflows here: judged below, not warned
            h, j = _design(theta, names, d)
            wj = j / d.var[:, None]
            a += np.real(np.conj(j).T @ wj)
            b += np.real(np.conj(wj).T @ d.cov @ wj)
        r = d.h - h
        chi2 += float(np.sum(np.abs(r) ** 2 / d.var))
        n += len(d.f)
        dc = d.cov / d.var[:, None]  # Σ |e|²/var of correlated complex-normal bins: mean tr(DC), variance tr((DC)²)
        mean, var = mean + float(np.real(np.trace(dc))), var + float(np.real(np.trace(dc @ dc)))
    if not np.all(np.isfinite(a)):  # a gain or the curvature ran off to where the response overflows
        raise ExcitationError(
            "freq: the transfer-function fit diverged on these flights (no finite gain fits their response); "
            "fly a chirp on the axis (ArduPilot SID_AXIS, Betaflight debug_mode CHIRP) or use --method delay"
        )
    ainv = np.linalg.pinv(a)
    dof = max(n - 0.5 * len(names), 1.0)
    chi2_red, limit = chi2 / dof, (mean + CHI2_SIGMAS * np.sqrt(var)) / dof
    cov = 0.5 * ainv @ b @ ainv * (chi2_red if chi2_red > limit else 1.0)
    on_bound = not tm_bounds[0] * (1 + 1e-3) < theta[0] < tm_bounds[1] * (1 - 1e-3)
    at_bound = ["tm"] if on_bound else []
    return Fit(names, theta, cov, chi2_red, at_bound, limit)


def _blocks(data: list[AxisData]) -> list[np.ndarray]:
    """Each data set's bins assigned to `CV_BLOCKS` blocks, as block indices per bin: chunks of
    `CHUNK_BINS` of the coarsest bin spacing, dealt round-robin (the same frequency edges for
    every data set). Every training set then spans the band, so a term whose effect lives at
    one end (the curvature's, at the low end) is judged by how it predicts, not by how a fit
    without that end extrapolates; the chunks are wide enough that a held-out bin's noise is
    nearly independent of the training bins' (the window correlates `frf.BIN_REACH` bins)."""
    width = CHUNK_BINS * max(float(np.min(np.diff(d.f))) if len(d.f) > 1 else 0.0 for d in data)
    return [(np.floor(d.f / max(width, 1e-12)).astype(int)) % CV_BLOCKS for d in data]


def _take(d: AxisData, keep: np.ndarray) -> AxisData:
    b = None if d.b is None else d.b[keep]
    return AxisData(d.axis, d.kind, d.f[keep], d.h[keep], d.cov[np.ix_(keep, keep)], d.fs, b)


def held_out_error(
    data: list[AxisData], tm_bounds: tuple[float, float], dead: bool, curved: bool = False, damped: bool = False
) -> float:
    """Σ over held-out frequency blocks of the weighted squared prediction error of the model
    fitted to the other blocks (with or without dead time, curvature, rate dampings)."""
    blocks = _blocks(data)
    total = 0.0
    for k in range(CV_BLOCKS):
        train = [_take(d, b != k) for d, b in zip(data, blocks, strict=True)]
        train = [d for d in train if len(d.f)]
        if {d.axis for d in train} != {d.axis for d in data}:
            continue
        try:
            fk = fit(train, tm_bounds, dead, curved, damped)
        except ExcitationError:  # this model diverges without block k: it predicts nothing
            return float("inf")
        for d, b in zip(data, blocks, strict=True):
            test = b == k
            if test.any():
                r = d.h[test] - _model(fk.theta, fk.names, _take(d, test))
                total += float(np.sum(np.abs(r) ** 2 / d.var[test]))
    return total


@dataclass(frozen=True)
class BandScatter:
    """The structure check (`band_scatter`): the band edges (Hz), the bands left out (`left`,
    indices) and the estimates without each (rows, names as the fit's), the jackknife
    covariance, each parameter's p-value and the share of the jackknife added to the fit's
    covariance (0: the bands agree)."""

    edges: np.ndarray
    left: np.ndarray
    theta: np.ndarray
    cov: np.ndarray
    p: np.ndarray
    share: float


def band_scatter(data: list[AxisData], tm_bounds: tuple[float, float], full: Fit) -> tuple[Fit, BandScatter | None]:
    """Model-structure doubt from the data: the fit repeated leaving out each of `JACK_BANDS`
    contiguous frequency bands (log-spaced over the bins fitted, the same edges for every axis).
    A model that is right predicts every band alike; one that misses physics (a term whose
    effect lives at some frequencies: a lag it does not model, a velocity feedback at the low
    end) moves T_m and the gains as a band leaves. Each shift θ_k - θ has, from noise alone, the
    variance C_k - C (the fit without band k against the fit with it: Hausman 1978, the full fit
    being the efficient one), so Σ_k (θ_k,i - θ_i)² / (C_k - C)_ii is about χ² with n degrees of
    freedom for T_m and each gain when the bands agree. Where one's p-value falls below
    `JACK_LEVEL` (shared among them, Bonferroni), the covariance gains the share of the bands'
    delete-one jackknife covariance J = (n-1)/n Σ (θ_k - θ̄)(θ_k - θ̄)ᵀ (Efron & Stein 1981;
    Shao & Tu 1995, ch. 2, for groups) that adds the worst such parameter's scatter beyond what
    the noise gives it, J_ii - (n-1)/n Σ_k (C_k - C)_ii, as delay's `structure.window_scatter`
    does for windows. Returns `full`, widened when the bands disagree, and the check's record
    (None when fewer than three bands can be left out)."""
    lo = min(float(d.f.min()) for d in data)
    hi = max(float(d.f.max()) for d in data)
    edges = np.geomspace(lo, hi * (1 + 1e-9), JACK_BANDS + 1)
    dead, curved = "tau" in full.names, "kappa" in full.names
    damped = any(n.startswith("d_") for n in full.names)
    rows, left = [], []
    for k in range(JACK_BANDS):
        keep = [_take(d, ~((d.f >= edges[k]) & (d.f < edges[k + 1]))) for d in data]
        keep = [d for d in keep if len(d.f)]
        if {d.axis for d in keep} != {d.axis for d in data}:
            continue
        try:
            fk = fit(keep, tm_bounds, dead, curved, damped)
        except ExcitationError:  # diverges without this band: it says nothing about the others
            continue
        if fk.names == full.names:
            rows.append((fk.theta, np.diag(fk.cov)))
            left.append(k)
    if len(rows) < 3:
        return full, None
    th, var = (np.array(a) for a in zip(*rows, strict=True))
    n, c = len(th), np.diag(full.cov)
    noise = np.maximum(var - c, 1e-3 * c)  # Var(θ_k - θ) of an efficient θ (Hausman 1978); a band holds ≥ 0.1 %
    z2 = np.sum((th - full.theta) ** 2 / noise, axis=0)
    tested = np.array([name == "tm" or name.startswith("g_") for name in full.names])
    p = np.where(tested, special.chdtrc(n, z2), 1.0)
    jack = (n - 1) / n * (th - th.mean(axis=0)).T @ (th - th.mean(axis=0))
    excess = np.diag(jack) - (n - 1) / n * np.sum(noise, axis=0)  # the scatter beyond the noise's own
    flagged = (p < JACK_LEVEL / tested.sum()) & (excess > 0)
    share = float(np.max(excess[flagged] / np.diag(jack)[flagged])) if flagged.any() else 0.0
    record = BandScatter(edges, np.array(left), th, jack, p, share)
    if share <= 0.0:
        return full, record
    return replace(full, cov=full.cov + share * jack), record


@dataclass(frozen=True)
class AxisScatter:
    """The axes' check (`axis_scatter`): the axes left out in turn, T_m without each, the
    test's p-value and the factor σ² was multiplied by (1: the axes agree)."""

    axes: list[str]
    tm: np.ndarray
    p: float
    factor: float


def axis_scatter(data: list[AxisData], tm_bounds: tuple[float, float], full: Fit) -> tuple[Fit, AxisScatter | None]:
    """The model shares T_m between every axis; each axis' flights see different physics the
    model leaves out (the thrust's ground effect and battery sag, the roll's saturation at the
    sweep's peaks). The fit is repeated leaving out each axis; T_m's shifts are tested as
    `band_scatter` tests the bands' (Hausman differences, χ² with n degrees of freedom, level
    `JACK_LEVEL`). Where the axes disagree, the whole covariance is scaled by the factor that
    adds to σ(T_m)² the axes' jackknife variance beyond the noise's own (a scale keeps the
    gains' correlation with T_m, so the inertia's σ follows). Returns `full`, so widened, and the
    check's record (None with fewer than two axes)."""
    axes = list(dict.fromkeys(d.axis for d in data))
    if len(axes) < 2:
        return full, None
    rows = []
    for ax in axes:
        try:
            fk = fit(
                [d for d in data if d.axis != ax],
                tm_bounds,
                "tau" in full.names,
                "kappa" in full.names,
                any(n.startswith("d_") for n in full.names),
            )
        except ExcitationError:
            return full, None
        rows.append((fk.theta[0], fk.cov[0, 0]))
    tm, var = (np.array(a) for a in zip(*rows, strict=True))
    n, c = len(tm), full.cov[0, 0]
    noise = np.maximum(var - c, 1e-3 * c)
    p = float(special.chdtrc(n, np.sum((tm - full.theta[0]) ** 2 / noise)))
    excess = (n - 1) / n * (np.sum((tm - tm.mean()) ** 2) - np.sum(noise))
    factor = 1.0 + excess / c if p < JACK_LEVEL and excess > 0 else 1.0
    return replace(full, cov=full.cov * factor), AxisScatter(axes, tm, p, factor)


def model_band(
    f: np.ndarray, kind: str, axis: str, result: Fit, fs: float = 0.0, curve: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fitted model at `f` (with the flight's curvature response `curve`, if fitted) and the
    σ of its magnitude (relative) and phase (rad) from the fit's covariance (delta method)."""
    zero = np.zeros(len(f), complex)
    b = zero if curve is None else curve
    h, j = _design(result.theta, result.names, AxisData(axis, kind, f, zero, np.eye(len(f)), fs, b))
    rel = j / h[:, None]  # d log H = d log|H| + i d phase
    mag = np.sqrt(np.einsum("ni,ij,nj->n", rel.real, result.cov, rel.real))
    phase = np.sqrt(np.einsum("ni,ij,nj->n", rel.imag, result.cov, rel.imag))
    return h, mag, phase
