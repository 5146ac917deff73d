"""Motor-delay identification (Eschmann, Albani, Loianno: "Data-Driven System Identification of
Quadrotors Subject to Motor Delays", shared/papers/001_...).

Pipeline (Sec. III, IV-A):

1. **T_m by MAP** (eq. 45-61). For a candidate time constant the rotor states are the setpoints
   through the exact discrete first-order lag (eq. 45-48, `rotorid.signal.motor_lag`); the
   thrust curve then follows by linear least squares (eq. 17-21). The measured quantity is
   ``b = m * acc``: the accelerometer measures the specific force R^T(a - g), which by eq. 5 and
   13-17 is exactly the rotor force over the mass, so no attitude and no gravity are needed.
   Only the body rows in which some rotor axis has a component are used (the z row for a flat
   multirotor; the x, y rows would only add a T_m-independent constant to the residual).
   The negative log-posterior is the Gaussian likelihood with the noise variance profiled out,
   ``(n_eff / 2) log SSE(T_m)``, plus the negative log prior (uniform by default, as in the paper;
   log-normal on request). It is minimised continuously: a log-spaced coarse bracket over the
   prior's support, then Brent's method to `tm_xtol`. The std. deviation of T_m comes from the
   curvature of the negative log-likelihood at the optimum. ``n_eff`` is the number of residual
   samples corrected for their autocorrelation (integrated autocorrelation time), so standard
   deviations and tests do not pretend 1 kHz samples are independent.
   Optionally separate rising / falling constants (`asymmetric_tm`, RLtools' motor model) by a
   bounded 2-D search from the symmetric optimum, with an F-test of the split.
2. **Thrust curve** lumped or per motor over chosen exponents, with std. deviations, and the
   hover check of Fig. 6 (motor states near zero world acceleration vs. predicted hover command).
3. **Roll/pitch inertia** (eq. 80-82) from torque (thrust curve, rotor geometry, identified lag)
   against angular acceleration, both low-pass filtered identically (zero phase). Three
   parameterizations: direct (regress torque on angular acceleration; biased low by noise in
   the angular acceleration), reciprocal (Sec. IV-B: regress angular acceleration on torque;
   biased high by noise in the torque) and TLS with columns scaled by their estimated noise.
   `inertia_param="auto"` picks the one that best predicts held-out angular-rate changes. The
   gyroscopic terms ω x (J ω) of eq. 62 are kept (with I_zz from eq. 93, iterated); the paper's
   eq. 80 drops them, which biases I_xx by a few % when the flight also yaws.
4. **I_zz and K_tau**: I_zz = C (I_xx + I_yy)/2 (eq. 93-94), K_tau by least squares (eq. 95-96);
   when the yaw flight has precession, also the joint estimate of eq. 73-76.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, stats
from scipy.integrate import cumulative_trapezoid
from threadpoolctl import threadpool_limits

from rotorid.errors import ExcitationError, RotoridError, VehicleError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.identified import with_vehicle
from rotorid.methods.regression import Fit, ols, r2, r2_from_sse, tls
from rotorid.result import Result, build_result
from rotorid.signal import butter_filtfilt, derivative, motor_lag, motor_lag_asymmetric
from rotorid.vehicle import Vehicle

INERTIA_PARAMS = ("direct", "reciprocal", "tls")
#: Figures get at most this many points per scatter (diagnostics are subsampled evenly).
MAX_PLOT_POINTS = 2500
#: Lowest original logging rate of the motor commands and IMU: a 30-100 ms motor lag needs
#: several samples per time constant (PX4 logs actuator_motors at 10 Hz unless told otherwise).
MIN_RATE_HZ = 100.0


@dataclass(frozen=True)
class DelaySettings:
    """Options of the delay method; every field is recorded in params.json.

    - `tm_prior`: None (uniform over `tm_bounds`, as in the paper) or (MEAN, SIGMA) in s of a
      log-normal prior on T_m.
    - `asymmetric_tm`: also estimate separate rising/falling constants.
    - `per_motor`: one thrust curve per motor (else one lumped curve, eq. 17 with shared K_j).
    - `exponents`: thrust-curve exponents j of K_j u^j.
    - `izz_ratio`: C_xy->z of eq. 93.
    - `inertia_param`: "auto", "direct", "reciprocal" or "tls".
    - `tm_bounds`, `tm_grid`, `tm_xtol`: search range (s), coarse log-spaced points, Brent tolerance.
    - `cutoff_hz`, `filter_order`: zero-phase Butterworth low-pass applied identically to torque
      and angular acceleration.
    - `trim_s`: seconds cut at both ends of each roll/pitch/yaw flight after filtering.
    - `torque_offset`: estimate a constant torque offset per flight (CoM offset, motor
      mismatch) instead of forcing the fit through the origin.
    - `hover_fraction`: fraction of samples closest to zero world acceleration (Fig. 6).
    - `pred_horizon`: horizon (s) of the held-out angular-rate prediction that selects the
      inertia parameterization.
    - `joint_max_rel_std`: %σ of I_zz below which the joint eq. 73-76 estimate counts as grounded.
    - `gyroscopic`: keep the ω x (J ω) terms of eq. 62 in the roll/pitch fit (I_zz from eq. 93);
      the paper's eq. 80 drops them.
    - `autocorr_correction`: scale std. deviations by the residual autocorrelation.
    - `min_thrust_r2`: below this R² of the thrust fit the flight did not excite the thrust.
    """

    tm_prior: tuple[float, float] | None = None
    asymmetric_tm: bool = False
    per_motor: bool = False
    exponents: tuple[int, ...] = (0, 1, 2)
    izz_ratio: float = 1.832
    inertia_param: str = "auto"
    tm_bounds: tuple[float, float] = (0.002, 0.5)
    tm_grid: int = 24
    tm_xtol: float = 1e-4
    cutoff_hz: float = 20.0
    filter_order: int = 4
    trim_s: float = 0.1
    torque_offset: bool = True
    hover_fraction: float = 0.05
    pred_horizon: float = 0.05
    joint_max_rel_std: float = 20.0
    gyroscopic: bool = True
    autocorr_correction: bool = True
    min_thrust_r2: float = 0.2

    def __post_init__(self) -> None:
        if self.tm_prior is not None:
            object.__setattr__(self, "tm_prior", tuple(float(v) for v in self.tm_prior))
            if len(self.tm_prior) != 2 or not all(v > 0 for v in self.tm_prior):
                raise RotoridError(f"tm_prior {self.tm_prior} must be two positive numbers MEAN,SIGMA in seconds")
        try:
            object.__setattr__(self, "exponents", tuple(int(str(e).strip()) for e in self.exponents))
        except ValueError:
            raise RotoridError(f"exponents {self.exponents} must be integers, e.g. 0,1,2") from None
        if not self.exponents or len(set(self.exponents)) != len(self.exponents) or min(self.exponents) < 0:
            raise RotoridError(f"exponents {self.exponents} must be distinct non-negative integers, e.g. 0,1,2")
        if self.inertia_param not in ("auto", *INERTIA_PARAMS):
            raise RotoridError(f"inertia_param '{self.inertia_param}' must be auto, direct, reciprocal or tls")
        lo, hi = (float(v) for v in self.tm_bounds)
        object.__setattr__(self, "tm_bounds", (lo, hi))
        if not 0 < lo < hi:
            raise RotoridError(f"tm_bounds {self.tm_bounds} must satisfy 0 < lower < upper (s)")
        if not self.izz_ratio > 0:
            raise RotoridError(f"izz_ratio {self.izz_ratio} must be positive")
        if self.tm_grid < 5:
            raise RotoridError(f"tm_grid {self.tm_grid} must be at least 5 points")
        if not self.cutoff_hz > 0:
            raise RotoridError(f"cutoff_hz {self.cutoff_hz} must be a positive frequency in Hz")
        if not 0 < self.hover_fraction <= 1:
            raise RotoridError(f"hover_fraction {self.hover_fraction} must lie in (0, 1]")


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _subsample(n: int, k: int = MAX_PLOT_POINTS) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, k)).astype(int))


def integrated_autocorr_time(r: np.ndarray) -> float:
    """tau_int = 1 + 2 sum rho_k over the initial positive autocorrelations of `r` (>= 1).

    `n / tau_int` is the effective number of independent samples of a correlated residual.
    """
    r = np.asarray(r, dtype=float) - np.mean(r)
    n = len(r)
    if n < 8 or not np.any(r):
        return 1.0
    m = 1 << int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(r, m)
    acf = np.fft.irfft(f * np.conj(f), m)[: n // 2]
    acf /= acf[0]
    neg = np.flatnonzero(acf[1:] <= 0)
    k = int(neg[0]) + 1 if neg.size else len(acf)
    return float(max(1.0, 1.0 + 2.0 * np.sum(acf[1:k])))


def _lag(cmd: np.ndarray, t: np.ndarray, tm: tuple[float, float]) -> np.ndarray:
    """Rotor states through the (symmetric or rising/falling) first-order lag (eq. 45-48)."""
    return motor_lag(cmd, t, tm[0]) if tm[0] == tm[1] else motor_lag_asymmetric(cmd, t, tm[0], tm[1])


def _demean(x: np.ndarray, on: bool) -> np.ndarray:
    return x - x.mean(axis=0) if on else x


# ---------------------------------------------------------------------------------------------
# 1. thrust regression and T_m
# ---------------------------------------------------------------------------------------------
@dataclass
class ThrustProblem:
    """Eq. 17-21 for a set of flights: b = m acc (active body rows), regressors from the lagged
    commands. `design_states` builds A for given rotor states; `fit(tm)` solves it with `ols`."""

    flights: list[Flight]
    vehicle: Vehicle
    exponents: tuple[int, ...]
    per_motor: bool
    rows: np.ndarray = field(init=False)  # active body axes
    b: np.ndarray = field(init=False)
    shared_c0: bool = field(init=False)

    def __post_init__(self) -> None:
        ax = self.vehicle.axes  # (M, 3)
        self.rows = np.flatnonzero(np.abs(ax).sum(axis=0) > 1e-9)
        self.b = np.concatenate([self.vehicle.mass * f.acc[:, self.rows].reshape(-1) for f in self.flights])
        # constant columns of several motors coincide when their axes are parallel (eq. 21):
        self.shared_c0 = (
            self.per_motor and 0 in self.exponents and np.linalg.matrix_rank(ax[:, self.rows].T) < self.vehicle.n_rotors
        )

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def names(self) -> list[str]:
        """Parameter names in column order."""
        if not self.per_motor:
            return [f"thrust_c{j}" for j in self.exponents]
        out = ["thrust_c0"] if self.shared_c0 else []
        for i in range(self.vehicle.n_rotors):
            out += [f"thrust_c{j}_m{i + 1}" for j in self.exponents if not (self.shared_c0 and j == 0)]
        return out

    def design_states(self, states: list[np.ndarray]) -> np.ndarray:
        """A (eq. 21) for given rotor states (one (N, M) array per flight)."""
        r = self.vehicle.axes[:, self.rows]  # (M, R)
        e = np.array(self.exponents)
        blocks = []
        for w in states:
            p = np.stack([np.ones_like(w) if j == 0 else w**j for j in self.exponents], axis=-1)  # (N, M, E)
            if not self.per_motor:
                blocks.append(np.einsum("nme,mr->nre", p, r, optimize=True).reshape(-1, len(e)))
                continue
            a = (p[:, :, None, :] * r[None, :, :, None]).transpose(0, 2, 1, 3)  # (N, R, M, E)
            if self.shared_c0:
                keep = e != 0
                c0 = np.broadcast_to(r.sum(axis=0), (len(w), self.n_rows))[..., None]
                a = np.concatenate([c0, a[..., keep].reshape(len(w), self.n_rows, -1)], axis=2)
            blocks.append(a.reshape(len(w) * self.n_rows, -1))
        return np.vstack(blocks)

    def states(self, tm: tuple[float, float]) -> list[np.ndarray]:
        return [_lag(f.cmd, f.t, tm) for f in self.flights]

    def fit(self, tm: tuple[float, float]) -> tuple[Fit, list[np.ndarray]]:
        s = self.states(tm)
        return ols(self.design_states(s), self.b, what="thrust curve (eq. 17-21)"), s

    def sse(self, tm: tuple[float, float]) -> float:
        return self.fit(tm)[0].sse

    def coeffs(self, x: np.ndarray) -> np.ndarray:
        """Thrust coefficients as the vehicle stores them: (E,) lumped or (M, E) per motor."""
        if not self.per_motor:
            return np.asarray(x, dtype=float)
        m, ne = self.vehicle.n_rotors, len(self.exponents)
        if not self.shared_c0:
            return np.asarray(x, dtype=float).reshape(m, ne)
        out = np.empty((m, ne))
        j0 = self.exponents.index(0)
        out[:, j0] = x[0]
        out[:, [k for k in range(ne) if k != j0]] = np.asarray(x[1:]).reshape(m, ne - 1)
        return out

    def mean_curve_map(self) -> np.ndarray:
        """L with (mean thrust curve over motors) = L x, for the hover command's covariance."""
        ne = len(self.exponents)
        if not self.per_motor:
            return np.eye(ne)
        eye = np.eye(len(self.names()))
        return np.array([self.coeffs(eye[k]).mean(axis=0) for k in range(eye.shape[0])]).T  # (E, P)


@dataclass
class TmSearch:
    """Outcome of the T_m search: optimum, curvature std, the evaluated curve, edge flag."""

    tm: float
    std: float
    grid: np.ndarray
    sse: np.ndarray
    nlp: np.ndarray
    at_edge: bool
    tau_int: float
    n: int
    evaluations: int


def _neg_log_prior(tm: np.ndarray | float, prior: tuple[float, float] | None) -> np.ndarray | float:
    """-log p(T_m) for a log-normal prior with given mean and std (s); 0 for the uniform prior."""
    if prior is None:
        return 0.0 * np.asarray(tm)
    mean, sd = prior
    s2 = math.log1p((sd / mean) ** 2)
    mu = math.log(mean) - 0.5 * s2
    lt = np.log(tm)
    return lt + (lt - mu) ** 2 / (2.0 * s2)


def _support(settings: DelaySettings) -> tuple[float, float]:
    """Search interval: `tm_bounds`, narrowed to the prior's central 99.98 % when a prior is given."""
    lo, hi = settings.tm_bounds
    if settings.tm_prior is None:
        return lo, hi
    mean, sd = settings.tm_prior
    s = math.sqrt(math.log1p((sd / mean) ** 2))
    mu = math.log(mean) - 0.5 * s * s
    z = 3.72  # two-sided 1e-4 tails
    return max(lo, math.exp(mu - z * s)), min(hi, math.exp(mu + z * s))


def _check_commands(flights: list[Flight], vehicle: Vehicle) -> None:
    span = max(vehicle.cmd_max - vehicle.cmd_min, 1e-12)
    if all(np.ptp(f.cmd, axis=0).max() <= 1e-6 * span for f in flights):
        src = ", ".join(sorted({f.source for f in flights}))
        raise ExcitationError(
            f"{src}: not enough excitation for T_m: the motor commands are constant over the whole window "
            f"({flights[0].t[0]:.2f}–{flights[-1].t[-1]:.2f} s); fly the thrust manoeuvre (repeated climbs and "
            "descents with sharp throttle changes) and pass that window"
        )


def search_tm(problem: ThrustProblem, settings: DelaySettings) -> TmSearch:
    """MAP estimate of T_m (eq. 55-61): coarse log-spaced bracket over the prior's support, then
    Brent (bounded) to `tm_xtol`; std from the curvature of the negative log-likelihood."""
    lo, hi = _support(settings)
    evals: dict[float, float] = {}

    def sse(tm: float) -> float:
        if tm not in evals:
            evals[tm] = problem.sse((tm, tm))
        return evals[tm]

    grid = np.geomspace(lo, hi, settings.tm_grid)
    coarse = np.array([sse(float(g)) for g in grid])
    fit0, _ = problem.fit((float(grid[np.argmin(coarse)]),) * 2)
    tau = _tau_int(fit0.residual, problem) if settings.autocorr_correction else 1.0
    n = len(problem.b)
    n_eff = n / tau

    def nlp(tm: float) -> float:
        return 0.5 * n_eff * math.log(sse(tm)) + float(_neg_log_prior(tm, settings.tm_prior))

    vals = np.array([nlp(float(g)) for g in grid])
    i = int(np.argmin(vals))
    a, b = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
    res = optimize.minimize_scalar(nlp, bounds=(a, b), method="bounded", options={"xatol": settings.tm_xtol})
    tm = float(res.x)
    at_edge = (tm - lo) <= 2 * settings.tm_xtol or (hi - tm) <= 2 * settings.tm_xtol
    std = float("nan")
    if not at_edge:
        h = min(0.05 * tm, 0.5 * (tm - lo), 0.5 * (hi - tm))
        curv = (nlp(tm + h) - 2 * nlp(tm) + nlp(tm - h)) / h**2
        std = 1.0 / math.sqrt(curv) if curv > 0 else float("nan")
    ts = np.array(sorted(evals))
    ss = np.array([evals[k] for k in ts])
    nl = 0.5 * n_eff * np.log(ss) + _neg_log_prior(ts, settings.tm_prior)
    return TmSearch(tm, std, ts, ss, nl, bool(at_edge), tau, n, len(evals))


def _tau_int(residual: np.ndarray, problem: ThrustProblem) -> float:
    """Length-weighted integrated autocorrelation time of the residual, per flight and body row."""
    r = residual.reshape(-1, problem.n_rows)
    out, start = 0.0, 0
    for f in problem.flights:
        seg = r[start : start + len(f.t)]
        out += len(f.t) * np.mean([integrated_autocorr_time(seg[:, k]) for k in range(problem.n_rows)])
        start += len(f.t)
    return out / start


@dataclass
class AsymSearch:
    tm_rise: float
    tm_fall: float
    std: tuple[float, float]
    sse: float
    f_stat: float
    p_value: float
    evaluations: int
    at_edge: bool


def search_tm_asymmetric(problem: ThrustProblem, sym: TmSearch, settings: DelaySettings) -> AsymSearch:
    """Rising and falling constants by a bounded quasi-Newton (L-BFGS-B) search from the symmetric optimum,
    std from the 2-D curvature, and the F-test of the split against the symmetric model."""
    lo, hi = _support(settings)
    n_eff = sym.n / sym.tau_int
    count = [0]

    def nlp(x: np.ndarray) -> float:
        count[0] += 1
        tr, tf = float(x[0]), float(x[1])
        prior = float(_neg_log_prior(tr, settings.tm_prior) + _neg_log_prior(tf, settings.tm_prior))
        return 0.5 * n_eff * math.log(problem.sse((tr, tf))) + prior

    x0 = np.clip(np.array([sym.tm * 1.05, sym.tm * 0.95]), lo, hi)  # just off the diagonal
    res = optimize.minimize(nlp, x0, method="L-BFGS-B", bounds=[(lo, hi)] * 2)
    if res.fun > nlp(np.array([sym.tm, sym.tm])):
        res.x = np.array([sym.tm, sym.tm])
    tr, tf = (float(v) for v in res.x)
    at_edge = any(min(v - lo, hi - v) <= 2 * settings.tm_xtol for v in (tr, tf))
    std: tuple[float, float] = (float("nan"), float("nan"))
    if not at_edge:
        h = np.array(
            [min(0.05 * tr, 0.5 * (tr - lo), 0.5 * (hi - tr)), min(0.05 * tf, 0.5 * (tf - lo), 0.5 * (hi - tf))]
        )
        x = np.array([tr, tf])
        f0 = nlp(x)
        hess = np.empty((2, 2))
        for i in range(2):
            e = np.zeros(2)
            e[i] = h[i]
            hess[i, i] = (nlp(x + e) - 2 * f0 + nlp(x - e)) / h[i] ** 2
        e0, e1 = np.array([h[0], 0]), np.array([0, h[1]])
        hess[0, 1] = hess[1, 0] = (nlp(x + e0 + e1) - nlp(x + e0 - e1) - nlp(x - e0 + e1) + nlp(x - e0 - e1)) / (
            4 * h[0] * h[1]
        )
        if np.all(np.linalg.eigvalsh(hess) > 0):
            cov = np.linalg.inv(hess)
            std = (float(math.sqrt(cov[0, 0])), float(math.sqrt(cov[1, 1])))
    sse_a = problem.sse((tr, tf))
    sse_s = problem.sse((sym.tm, sym.tm))
    p = len(problem.names()) + 2
    dof = max(n_eff - p, 1.0)
    f_stat = max(sse_s - sse_a, 0.0) / (sse_a / dof)
    return AsymSearch(tr, tf, std, sse_a, float(f_stat), float(stats.f.sf(f_stat, 1, dof)), count[0], at_edge)


# ---------------------------------------------------------------------------------------------
# 3./4. angular stage: torques, filtered columns
# ---------------------------------------------------------------------------------------------
@dataclass
class Angular:
    """Filtered, trimmed and (optionally) de-meaned columns of a set of flights for the angular
    fits, plus the raw quantities for the held-out angular-rate prediction."""

    acc: np.ndarray  # (n, 3) angular acceleration, filtered
    tau: np.ndarray  # (n, 3) geometric torque (R_pf f), filtered
    drag: np.ndarray  # (n,) sum_i torque_dir_i a_iz f_i (yaw torque per unit K_tau), filtered
    prec: np.ndarray  # (n, 3) products (w_y w_z, w_z w_x, w_x w_y), filtered
    fold: np.ndarray  # (n,) 0 in the first half of each flight, 1 in the second
    noise_var: np.ndarray  # (2, 2): filtered noise variance of [acc, tau] for x and y (TLS scaling)
    raw: list[dict[str, np.ndarray]]  # per flight: t, gyro, tau, prec (raw) for Δω prediction
    tau_int: float = 1.0  # residual autocorrelation time (std. deviation scale), set by the caller


def _noise_var_filtered(
    raw: np.ndarray, filt: np.ndarray, t: np.ndarray, st: DelaySettings, differentiated: bool
) -> np.ndarray:
    """Noise variance left in a low-passed column, extrapolated from its content above the
    cut-off: white noise passed through the same pipeline (derivative when `differentiated`,
    then the filter) gives the ratio of in-band to out-of-band noise variance."""
    fs = 1.0 / float(np.median(np.diff(t)))
    z = np.random.default_rng(0).standard_normal((min(len(t), 8192), 1))
    if differentiated:
        z = derivative(z, t[: len(z)])
    zf = butter_filtfilt(z, fs, st.cutoff_hz, order=st.filter_order)
    inner = slice(len(z) // 10, len(z) - len(z) // 10)  # away from the filter's end transients
    ratio = float(np.var(zf[inner]) / max(np.var((z - zf)[inner]), 1e-300))
    return np.var(raw - filt, axis=0) * ratio


def angular_columns(
    flights: list[Flight], vehicle: Vehicle, tm: tuple[float, float], settings: DelaySettings, what: str
) -> Angular:
    """Torques from the identified thrust curve and rotor geometry through the motor lag (eq. 77-79),
    angular accelerations from `gyro_dot` (else differentiated gyro, eq. 8), all filtered by the
    same zero-phase low-pass and trimmed at both ends."""
    mix = vehicle.mixer(k_tau=0.0, about=vehicle.com)[3:]  # (3, M) geometric moments
    drag_row = vehicle.torque_dirs * vehicle.axes[:, 2]
    if not flights:
        raise ExcitationError(f"no {what} flight given")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("acc", "tau", "drag", "prec", "fold")}
    nv, raws, weights = [], [], []
    for f in flights:
        f.require_rate(MIN_RATE_HZ, "cmd", "gyro")
        if f.cmd.shape[1] != vehicle.n_rotors:
            raise VehicleError(
                f"{f.source}: {f.cmd.shape[1]} motor commands but vehicle '{vehicle.name}' has {vehicle.n_rotors} rotors"
            )
        fs = f.rate
        n = len(f.t)
        trim = round(settings.trim_s * fs)
        if n - 2 * trim < max(50, int(0.5 * fs)):
            raise ExcitationError(
                f"{f.source}: the {what} window {f.t[0]:.2f}–{f.t[-1]:.2f} s is too short "
                f"({n} samples); give at least {2 * settings.trim_s + 0.5:g} s"
            )
        thrust = vehicle.thrust(_lag(f.cmd, f.t, tm))
        tau = thrust @ mix.T
        drag = thrust @ drag_row
        has_dot = f.gyro_dot is not None
        wd = f.gyro_dot if has_dot else derivative(f.gyro, f.t)
        g = f.gyro
        prec = np.column_stack([g[:, 1] * g[:, 2], g[:, 2] * g[:, 0], g[:, 0] * g[:, 1]])
        raw = np.column_stack([wd, tau, drag, prec])
        filt = butter_filtfilt(raw, fs, settings.cutoff_hz, order=settings.filter_order)
        sl = slice(trim, n - trim)
        v_acc = _noise_var_filtered(wd[sl, :2], filt[sl, :2], f.t, settings, differentiated=not has_dot)
        v_tau = _noise_var_filtered(tau[sl, :2], filt[sl, 3:5], f.t, settings, differentiated=False)
        filt = filt[sl]
        filt = _demean(filt, settings.torque_offset)
        cols["acc"].append(filt[:, 0:3])
        cols["tau"].append(filt[:, 3:6])
        cols["drag"].append(filt[:, 6])
        cols["prec"].append(filt[:, 7:10])
        m = len(filt)
        cols["fold"].append((np.arange(m) >= m // 2).astype(int))
        nv.append(np.array([v_acc, v_tau]))
        raws.append({"t": f.t[sl], "gyro": g[sl], "tau": tau[sl], "prec": prec[sl]})
        weights.append(m)
    w = np.array(weights, dtype=float)
    return Angular(
        acc=np.vstack(cols["acc"]),
        tau=np.vstack(cols["tau"]),
        drag=np.concatenate(cols["drag"]),
        prec=np.vstack(cols["prec"]),
        fold=np.concatenate(cols["fold"]),
        noise_var=np.average(np.array(nv), axis=0, weights=w),
        raw=raws,
    )


def _inertia_fit(a: np.ndarray, tau: np.ndarray, how: str, noise: np.ndarray, what: str) -> tuple[float, float]:
    """I and its std from torque = I * angular acceleration by one parameterization."""
    if how == "direct":
        fit = ols(a, tau, what=f"{what} (direct)")
        return float(fit.x[0]), float(fit.std[0])
    if how == "reciprocal":
        fit = ols(tau, a, what=f"{what} (reciprocal)")
        k = float(fit.x[0])
        if k <= 0:
            raise ExcitationError(f"{what}: angular acceleration does not follow the torque (slope {k:.3g} <= 0)")
        return 1.0 / k, float(fit.std[0]) / k**2
    sa, st = (math.sqrt(v) if v > 0 else 1.0 for v in noise)
    fit = tls(np.column_stack([a / sa, -tau / st]), what=f"{what} (TLS)")
    return float(fit.x[0]) * st / sa, float(fit.std[0]) * st / sa


def _dw_prediction(raw: dict[str, np.ndarray], idx: np.ndarray, horizon: float, col: int, coupling: float):
    """Measured and torque-integrated angular-rate changes over `horizon` within the samples `idx`
    of one flight: Δω_k = ω(t_k + H) - ω(t_k) vs ∫ (τ - c ω_j ω_k) dt (de-meaned over `idx`, c the
    gyroscopic coupling). Gyro noise enters only the target, so the criterion does not favour
    attenuated (biased) inertias."""
    t = raw["t"][idx]
    x = raw["tau"][idx, col] - coupling * raw["prec"][idx, col]
    x = x - x.mean()
    c = cumulative_trapezoid(x, t, initial=0.0)
    j = np.searchsorted(t, t + horizon)
    ok = j < len(t)
    k = np.flatnonzero(ok)
    return raw["gyro"][idx][j[ok], col] - raw["gyro"][idx][k, col], c[j[ok]] - c[k]


def _coupling(ixx: float, iyy: float, izz: float) -> np.ndarray:
    """Gyroscopic coefficients of eq. 62 in the x and y rows: τ_x = I_xx ω̇_x + (I_zz - I_yy) ω_y ω_z,
    τ_y = I_yy ω̇_y + (I_xx - I_zz) ω_z ω_x."""
    return np.array([izz - iyy, ixx - izz])


def _fit_axes(
    ang: Angular, rows: np.ndarray | slice, how: str, st: DelaySettings, what: str, coupling: np.ndarray | None = None
) -> list[tuple[float, float]]:
    """(I, std) for x and y by one parameterization. With `st.gyroscopic` the ω x (J ω) terms of
    eq. 62 are moved to the torque side with I_zz = C (I_xx + I_yy)/2 (eq. 93), iterated to a
    fixed point (the paper's eq. 80 drops them: small angular rates), or with a given `coupling`."""
    acc, tau, prec = ang.acc[rows, :2], ang.tau[rows, :2], ang.prec[rows, :2]
    fit = lambda t: [_inertia_fit(acc[:, k], t[:, k], how, ang.noise_var[:, k], what) for k in (0, 1)]
    if coupling is not None:
        return fit(tau - coupling * prec)
    vals = fit(tau)
    for _ in range(3 if st.gyroscopic else 0):
        ixx, iyy = vals[0][0], vals[1][0]
        vals = fit(tau - _coupling(ixx, iyy, st.izz_ratio * 0.5 * (ixx + iyy)) * prec)
    return vals


def roll_pitch_inertia(ang: Angular, settings: DelaySettings) -> dict[str, Any]:
    """I_xx, I_yy by all three parameterizations (eq. 80-82, Sec. IV-B, TLS), the held-out
    selection and std. deviations (autocorrelation-corrected)."""
    out: dict[str, Any] = {"fits": {}, "holdout_r2": {}}
    scale = math.sqrt(ang.tau_int)
    cpl = {}
    for how in INERTIA_PARAMS:
        vals = _fit_axes(ang, slice(None), how, settings, "roll/pitch inertia")
        out["fits"][how] = [(v, s * scale) for v, s in vals]
        ixx, iyy = vals[0][0], vals[1][0]
        cpl[how] = _coupling(ixx, iyy, settings.izz_ratio * 0.5 * (ixx + iyy)) * settings.gyroscopic
    # held-out: fit on one half of every flight (gyroscopic coupling from the full fit), predict
    # the angular-rate change on the other half
    for how in INERTIA_PARAMS:
        scores = []
        for k in (0, 1):
            vals = _fit_axes(ang, ang.fold == k, how, settings, "held-out roll/pitch inertia", cpl[how])
            for ax in (0, 1):
                ys, ps = [], []
                for raw in ang.raw:
                    m = len(raw["t"])
                    idx = np.arange(m // 2, m) if k == 0 else np.arange(0, m // 2)
                    y, p = _dw_prediction(raw, idx, settings.pred_horizon, ax, cpl[how][ax])
                    ys.append(y)
                    ps.append(p / vals[ax][0])
                scores.append(r2(np.concatenate(ys), np.concatenate(ps)))
        out["holdout_r2"][how] = float(np.mean(scores))
    chosen = settings.inertia_param
    if chosen == "auto":
        chosen = max(INERTIA_PARAMS, key=lambda h: out["holdout_r2"][h])
    out["chosen"] = chosen
    return out


def predict_scores(ang: Angular, inertia: tuple[float, float, float], st: DelaySettings) -> dict[str, list[float]]:
    """How a roll/pitch model predicts other flights: R² and relative error norm of the filtered
    angular acceleration ((τ - gyroscopic) / I), and R² of the angular-rate change over the
    prediction horizon."""
    r2a, rel, r2w = [], [], []
    cpl = _coupling(*inertia) * st.gyroscopic
    for ax in (0, 1):
        y, p = ang.acc[:, ax], (ang.tau[:, ax] - cpl[ax] * ang.prec[:, ax]) / inertia[ax]
        r2a.append(r2(y, p))
        rel.append(float(np.linalg.norm(y - p) / np.linalg.norm(y)))
        ys, ps = [], []
        for raw in ang.raw:
            yy, pp = _dw_prediction(raw, np.arange(len(raw["t"])), st.pred_horizon, ax, cpl[ax])
            ys.append(yy)
            ps.append(pp / inertia[ax])
        r2w.append(r2(np.concatenate(ys), np.concatenate(ps)))
    return {"r2_acc": r2a, "rel_err_acc": rel, "r2_dw": r2w}


# ---------------------------------------------------------------------------------------------
# main entry
# ---------------------------------------------------------------------------------------------
def _prepare(flights: list[Flight], vehicle: Vehicle, what: str, *channels: str) -> list[Flight]:
    out = []
    for f in flights:
        f.require_rate(MIN_RATE_HZ, *channels)
        if f.cmd.shape[1] != vehicle.n_rotors:
            raise VehicleError(
                f"{f.source}: {f.cmd.shape[1]} motor commands but vehicle '{vehicle.name}' has "
                f"{vehicle.n_rotors} rotors; choose the matching vehicle"
            )
        out.append(f)
    if not out and what == "thrust":
        raise ExcitationError("no thrust flight given: the delay method needs a vertical (thrust) excitation flight")
    return out


def identify(
    thrust_flights: list[Flight],
    vehicle: Vehicle,
    roll_pitch: list[Flight] | tuple[Flight, ...] = (),
    yaw: list[Flight] | tuple[Flight, ...] = (),
    settings: DelaySettings | None = None,
) -> Result:
    """Identify T_m (or rising/falling constants), the thrust curve, the hover command, I_xx,
    I_yy (eq. 80-82), I_zz (eq. 93-94) and K_tau (eq. 95-96) from the three Eschmann manoeuvres.

    Raises `ExcitationError` when the thrust flight cannot determine T_m at all (constant
    commands, or thrust that does not follow the commands).

    Every regression here is tall and skinny (tens of thousands of rows, a few columns), where a
    multi-threaded BLAS only adds spin-waiting (3x the CPU time, 2.5x the wall time on a busy
    machine), so the computation runs with BLAS limited to one thread.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _identify(list(thrust_flights), vehicle, list(roll_pitch), list(yaw), settings or DelaySettings())


def _identify(
    thrust_flights: list[Flight], vehicle: Vehicle, roll_pitch: list[Flight], yaw: list[Flight], st: DelaySettings
) -> Result:
    thrust_flights = _prepare(thrust_flights, vehicle, "thrust", "cmd", "acc")
    roll_pitch = _prepare(roll_pitch, vehicle, "roll/pitch", "cmd", "gyro")
    yaw = _prepare(yaw, vehicle, "yaw", "cmd", "gyro")
    _check_commands(thrust_flights, vehicle)
    out = _Collected()
    prob = ThrustProblem(thrust_flights, vehicle, st.exponents, st.per_motor)
    sym, tm_pair, fit, states = _motor_lag_step(prob, st, out)
    ident = _thrust_step(prob, sym, tm_pair, fit, states, st, out)
    out.settings = {**dataclasses.asdict(st), "tm_search_range": list(_support(st)), "tm_evaluations": sym.evaluations}
    rp = _roll_pitch_step(roll_pitch, ident, tm_pair, st, out) if roll_pitch else None
    if rp is None:
        out.notes.append("No roll/pitch flight: I_xx, I_yy (and so I_zz, K_tau) were not identified.")
    else:
        _yaw_step(yaw, ident, tm_pair, rp, st, out)
    result = build_result("delay", out.est, out.settings, out.diag, out.obs, out.notes)
    return with_vehicle(result, vehicle)


@dataclass
class _Collected:
    """What the steps of `_identify` gather for the `Result`: (value, σ) per parameter,
    observability, notes, diagnostics and settings."""

    est: dict[str, tuple[float, float]] = field(default_factory=dict)
    obs: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    diag: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def put(self, name: str, value: float, std: float) -> None:
        self.est[name] = (float(value), float(std))


def _motor_lag_step(
    prob: ThrustProblem, st: DelaySettings, out: _Collected
) -> tuple[TmSearch, tuple[float, float], Fit, list[np.ndarray]]:
    """Step 1: T_m (or rising/falling constants) from the thrust flight; the thrust fit and
    motor states at the chosen constants. Raises `ExcitationError` when the thrust does not
    follow the commands or fits equally well for every T_m."""
    sym = search_tm(prob, st)
    tm_pair = (sym.tm, sym.tm)
    src = ", ".join(sorted({f.source for f in prob.flights}))
    fit, states = prob.fit(tm_pair)
    thrust_r2 = r2_from_sse(fit.sse, prob.b)
    lr = 0.5 * (sym.n / sym.tau_int) * math.log(float(np.max(sym.sse)) / float(np.min(sym.sse)))
    if not thrust_r2 >= st.min_thrust_r2 or lr < 0.5 * stats.chi2.ppf(0.999, 1):
        raise ExcitationError(
            f"{src}: not enough excitation for T_m: the measured thrust (mass x accelerometer z) "
            f"{'does not follow the motor commands' if not thrust_r2 >= st.min_thrust_r2 else 'fits equally well for every T_m'} "
            f"(R² {thrust_r2:.2f}, log-likelihood range {lr:.2g}); fly the thrust manoeuvre (repeated climbs and "
            "descents with sharp throttle changes)"
        )
    tm_obs = {"identifiable": True, "rel_std_pct": 100.0 * sym.std / sym.tm if sym.std == sym.std else float("nan")}
    if sym.at_edge:
        lo, hi = _support(st)
        tm_obs = {
            "identifiable": False,
            "reason": f"T_m optimum {sym.tm:.4g} s lies at the edge of the search range [{lo:.4g}, {hi:.4g}] s",
            "advice": "widen tm_bounds if the motor can be that fast/slow, or fly sharper throttle steps",
        }
        out.notes.append(f"T_m: the optimum {sym.tm:.4g} s is at the edge of the search range [{lo:.4g}, {hi:.4g}] s.")
    out.diag.update(
        tm_grid=sym.grid,
        tm_sse=sym.sse,
        tm_rmse=np.sqrt(sym.sse / sym.n),
        tm_nlp=sym.nlp,
        tm_opt=sym.tm,
        tm_std=sym.std,
        tm_at_edge=sym.at_edge,
        thrust_r2=thrust_r2,
        tau_int=sym.tau_int,
    )
    if not st.asymmetric_tm:
        out.put("tm", sym.tm, sym.std)
        out.obs["tm"] = tm_obs
        return sym, tm_pair, fit, states
    tm_pair = _asymmetric_step(prob, sym, tm_obs, st, out)
    fit, states = prob.fit(tm_pair)
    return sym, tm_pair, fit, states


def _asymmetric_step(
    prob: ThrustProblem, sym: TmSearch, tm_obs: dict[str, Any], st: DelaySettings, out: _Collected
) -> tuple[float, float]:
    """Step 1b: separate rising/falling constants and whether the data support the split."""
    asym = search_tm_asymmetric(prob, sym, st)
    supported = asym.p_value < 0.01
    drop = 100.0 * (1.0 - asym.sse / float(np.min(sym.sse)))
    out.put("tm_rise", asym.tm_rise, asym.std[0])
    out.put("tm_fall", asym.tm_fall, asym.std[1])
    for k, v, s in (("tm_rise", asym.tm_rise, asym.std[0]), ("tm_fall", asym.tm_fall, asym.std[1])):
        out.obs[k] = (
            {"identifiable": True, "rel_std_pct": 100 * s / v if s == s else float("nan")}
            if not asym.at_edge
            else {**tm_obs, "identifiable": False, "reason": "rising/falling optimum at the edge of the range"}
        )
    out.notes.append(
        f"Separate rising/falling constants T_rise = {asym.tm_rise:.4g} s, T_fall = {asym.tm_fall:.4g} s "
        f"(symmetric T_m = {sym.tm:.4g} s) lower the residual by {drop:.2f} % (F = {asym.f_stat:.3g}, "
        f"p = {asym.p_value:.2g} with {sym.n / sym.tau_int:.0f} effective samples): the data "
        f"{'support' if supported else 'do not support'} the split."
    )
    out.diag.update(
        tm_rise=asym.tm_rise, tm_fall=asym.tm_fall, asym_f=asym.f_stat, asym_p=asym.p_value, asym_supported=supported
    )
    return asym.tm_rise, asym.tm_fall


def _thrust_step(
    prob: ThrustProblem,
    sym: TmSearch,
    tm_pair: tuple[float, float],
    fit: Fit,
    states: list[np.ndarray],
    st: DelaySettings,
    out: _Collected,
) -> Vehicle:
    """Step 2: the thrust curve (σ scaled by the residual autocorrelation) and the hover
    command with its σ; returns the vehicle with the identified curve and motor lag."""
    scale = math.sqrt(sym.tau_int)
    std = fit.std * scale
    for k, nm in enumerate(prob.names()):
        if nm == "thrust_c0" and prob.shared_c0:
            for i in range(prob.vehicle.n_rotors):
                out.put(f"thrust_c0_m{i + 1}", fit.x[k], std[k])
            out.notes.append(
                "Per-motor curves: the constant term K_0 cannot be split among rotors with parallel axes "
                "(identical regressor columns in eq. 21); it is shared."
            )
        else:
            out.put(nm, fit.x[k], std[k])
        out.obs[nm if not (nm == "thrust_c0" and prob.shared_c0) else "thrust_c0_m1"] = {
            "identifiable": True,
            "rel_std_pct": float(100 * std[k] / abs(fit.x[k])) if fit.x[k] else float("inf"),
        }
    ident = prob.vehicle.replace(
        thrust_exponents=st.exponents, thrust_coeffs=prob.coeffs(fit.x), tm_rise=tm_pair[0], tm_fall=tm_pair[1]
    )
    hover = ident.hover_command()
    lmap = prob.mean_curve_map()
    e = np.array(st.exponents, dtype=float)
    kbar = lmap @ fit.x
    dfdu = float(np.sum(kbar * np.where(e > 0, e * hover ** np.maximum(e - 1, 0), 0.0)))
    grad = -(hover**e) / dfdu @ lmap
    hover_std = float(math.sqrt(max(grad @ fit.cov @ grad, 0.0)) * scale)
    out.put("hover_cmd", hover, hover_std)
    out.obs["hover_cmd"] = {"identifiable": True, "rel_std_pct": 100 * hover_std / hover}

    meas = prob.b
    nodelay_fit, _ = prob.fit((0.0, 0.0))
    sub = _subsample(len(meas))
    out.diag.update(
        thrust_meas=meas[sub],
        thrust_pred=(fit.x @ prob.design_states(states).T)[sub],
        thrust_pred_nodelay=(meas - nodelay_fit.residual)[sub],
        thrust_t=np.concatenate([f.t for f in prob.flights])[sub] if prob.n_rows == 1 else sub.astype(float),
        thrust_nodelay_r2=r2_from_sse(nodelay_fit.sse, meas),
        thrust_cond=fit.cond,
    )
    _hover_check(prob, states, hover, st, out)
    out.notes.append(
        "Measured quantity: b = m · acc (the accelerometer's specific force, rotor force / mass, eq. 5 and 17); "
        f"body row(s) {', '.join('xyz'[r] for r in prob.rows)} used. Standard deviations account for the "
        f"residual autocorrelation (integrated autocorrelation time {sym.tau_int:.1f} samples)."
    )
    return ident


def _hover_check(
    prob: ThrustProblem, states: list[np.ndarray], hover: float, st: DelaySettings, out: _Collected
) -> None:
    """Hover check (Fig. 6): motor states where |specific force| ~ g (zero world acceleration)
    against the hover command the thrust curve predicts."""
    acc = np.vstack([f.acc for f in prob.flights])
    ws = np.vstack(states).mean(axis=1)
    cmds = np.vstack([f.cmd for f in prob.flights]).mean(axis=1)
    dev = np.abs(np.linalg.norm(acc, axis=1) - GRAVITY)
    near = dev <= np.quantile(dev, st.hover_fraction)
    out.diag.update(hover_states=ws[near], hover_cmds=cmds[near], hover_pred=hover)
    med = float(np.median(ws[near]))
    out.notes.append(
        f"Hover check (Fig. 6): the motor states of the {100 * st.hover_fraction:g} % of samples nearest zero "
        f"world acceleration have median {med:.4f}; the thrust curve predicts hover at {hover:.4f} "
        f"({100 * (hover - med) / med:+.2f} %)."
    )
    out.diag["hover_median"] = med


def _roll_pitch_step(
    roll_pitch: list[Flight], ident: Vehicle, tm_pair: tuple[float, float], st: DelaySettings, out: _Collected
) -> dict[str, Any]:
    """Step 3: I_xx, I_yy by the chosen parameterization (eq. 80-82); returns
    `roll_pitch_inertia`'s fits and choice."""
    ang = angular_columns(roll_pitch, ident, tm_pair, st, "roll/pitch")
    ang.tau_int = _residual_tau(ang) if st.autocorr_correction else 1.0
    with _naming(roll_pitch, "fly roll and pitch doublets in that window"):
        rp = roll_pitch_inertia(ang, st)
    chosen, fits = rp["chosen"], rp["fits"]
    out.settings["inertia_param_chosen"] = chosen
    spread = max(abs(fits["direct"][k][0] - fits["reciprocal"][k][0]) / fits[chosen][k][0] for k in (0, 1))
    for k, nm in enumerate(("I_xx", "I_yy")):
        v, s = fits[chosen][k]
        out.put(nm, v, s)
        out.obs[nm] = {
            "identifiable": True,
            "rel_std_pct": 100 * s / v,
            "reason": f"direct and reciprocal fits differ by {100 * spread:.0f} % (errors in variables)"
            if spread > 0.1
            else "",
        }
    out.notes.append(
        "Roll/pitch inertia by parameterization (I_xx, I_yy; held-out R² of the angular-rate change over "
        f"{1e3 * st.pred_horizon:g} ms): "
        + "; ".join(
            f"{h}: {fits[h][0][0]:.4g}, {fits[h][1][0]:.4g} kg m² (R² {rp['holdout_r2'][h]:.3f})"
            for h in INERTIA_PARAMS
        )
        + f". Chosen: {chosen}"
        + (" (best held-out prediction)." if st.inertia_param == "auto" else " (requested).")
    )
    sub = _subsample(len(ang.acc))
    out.diag.update(
        rp_acc=ang.acc[sub, :2],
        rp_tau=ang.tau[sub, :2],
        rp_fits={h: [v for v, _ in fits[h]] for h in INERTIA_PARAMS},
        rp_holdout_r2=rp["holdout_r2"],
        rp_chosen=chosen,
    )
    return rp


def _yaw_step(
    yaw: list[Flight],
    ident: Vehicle,
    tm_pair: tuple[float, float],
    rp: dict[str, Any],
    st: DelaySettings,
    out: _Collected,
) -> None:
    """Step 4: I_zz from the assumed ratio (eq. 93-94); with a yaw flight K_tau (eq. 95-96),
    the joint estimate (eq. 73-76) and the roll/pitch model cross-validated on it."""
    ixx, sxx = out.est["I_xx"]
    iyy, syy = out.est["I_yy"]
    izz = st.izz_ratio * 0.5 * (ixx + iyy)
    izz_std = st.izz_ratio * 0.5 * math.hypot(sxx, syy)
    out.put("I_zz", izz, izz_std)
    out.obs["I_zz"] = {
        "identifiable": True,
        "rel_std_pct": 100 * izz_std / izz,
        "reason": f"from I_zz = {st.izz_ratio:g} (I_xx + I_yy)/2 (eq. 93-94), not measured",
    }
    if not yaw:
        out.notes.append("No yaw flight: K_tau was not identified.")
        return
    ident = ident.replace(inertia=np.diag([ixx, iyy, izz]))
    ang_y = angular_columns(yaw, ident, tm_pair, st, "yaw")
    with _naming(yaw, "fly yaw doublets in that window"):
        ktau, ktau_std, yfit = _k_tau(ang_y, (ixx, iyy), izz, izz_std, st)
    out.put("k_tau", ktau, ktau_std)
    out.obs["k_tau"] = {
        "identifiable": True,
        "rel_std_pct": 100 * ktau_std / abs(ktau),
        "reason": "scale set by the assumed I_zz ratio (eq. 93)",
    }
    sub = _subsample(len(ang_y.drag))
    out.diag.update(
        yaw_drag=ang_y.drag[sub], yaw_lhs=yfit["lhs"][sub], yaw_r2=yfit["r2"], k_tau=ktau, yaw_cond=yfit["cond"]
    )
    _joint_note(ang_y, st, out)
    _cross_validate(ang_y, rp, st, out)


def _joint_note(ang_y: Angular, st: DelaySettings, out: _Collected) -> None:
    """The joint estimate (eq. 73-76) as a diagnostic and a note (used or not)."""
    joint = _joint(ang_y, st)
    out.diag["joint"] = joint
    if joint["grounded"]:
        out.notes.append(
            f"Joint estimate (eq. 73-76, precession grounds I_zz): I_xx {joint['x'][0]:.4g}, I_yy "
            f"{joint['x'][1]:.4g}, I_zz {joint['x'][2]:.4g} kg m² (%σ {joint['rel_std_pct'][2]:.2g}), "
            f"K_tau {joint['x'][3]:.4g} m; condition number {joint['cond']:.3g}."
        )
    else:
        out.notes.append(
            f"Joint estimate (eq. 73-76) not usable: the yaw flight has too little precession to ground "
            f"I_zz (%σ {joint['rel_std_pct'][2]:.3g}, condition number {joint['cond']:.3g}); "
            f"I_zz uses C = {st.izz_ratio:g} instead (Sec. III-A1)."
        )


def _cross_validate(ang_y: Angular, rp: dict[str, Any], st: DelaySettings, out: _Collected) -> None:
    """Cross-validation of every roll/pitch model on the yaw flight(s)."""
    xval = {}
    for h in INERTIA_PARAMS:
        ixx, iyy = (v for v, _ in rp["fits"][h])
        xval[h] = predict_scores(ang_y, (ixx, iyy, st.izz_ratio * 0.5 * (ixx + iyy)), st)
    out.diag["xval"] = xval
    chosen = rp["chosen"]
    c = xval[chosen]
    out.notes.append(
        f"Cross-validation on the yaw flight(s): the roll/pitch model ({chosen}) predicts angular "
        f"acceleration with R² {c['r2_acc'][0]:.2f} (x), {c['r2_acc'][1]:.2f} (y), relative error "
        f"{c['rel_err_acc'][0]:.2f}, {c['rel_err_acc'][1]:.2f}; angular-rate change R² "
        f"{c['r2_dw'][0]:.2f}, {c['r2_dw'][1]:.2f}."
    )


@contextmanager
def _naming(flights: list[Flight], advice: str) -> Iterator[None]:
    """Re-raise an `ExcitationError` of a fit with the flights' sources, windows and advice."""
    try:
        yield
    except ExcitationError as e:
        where = "; ".join(f"{f.source} {f.t[0]:.2f}–{f.t[-1]:.2f} s" for f in flights)
        raise ExcitationError(f"{where}: {e}; {advice}") from None


def _residual_tau(ang: Angular) -> float:
    """Integrated autocorrelation time of the direct roll/pitch residuals (std. deviation scale)."""
    out = []
    for k in (0, 1):
        a, t = ang.acc[:, k], ang.tau[:, k]
        slope = float(a @ t / (a @ a)) if a @ a > 0 else 0.0
        out.append(integrated_autocorr_time(t - slope * a))
    return float(np.mean(out))


def _k_tau(
    ang: Angular, inertia: tuple[float, float], izz: float, izz_std: float, st: DelaySettings
) -> tuple[float, float, dict[str, Any]]:
    """K_tau by least squares (eq. 95-96): I_zz ω̇_z + (I_yy - I_xx) ω_x ω_y = K_tau Σ_i d_i f_i."""
    lhs = izz * ang.acc[:, 2] + (inertia[1] - inertia[0]) * ang.prec[:, 2]
    fit = ols(ang.drag, lhs, what="yaw torque coefficient (eq. 95-96)")
    k = float(fit.x[0])
    tau = integrated_autocorr_time(fit.residual) if st.autocorr_correction else 1.0
    std = abs(k) * math.hypot(float(fit.std[0]) * math.sqrt(tau) / abs(k), izz_std / izz)
    return k, std, {"lhs": lhs, "r2": r2_from_sse(fit.sse, lhs), "cond": fit.cond}


def _joint(ang: Angular, st: DelaySettings) -> dict[str, Any]:
    """Eq. 73-76 with a common K_tau: rows x, y, z of J ω̇ + ω x (J ω) - K_tau Σ d_i f_i e_z = R_pf f."""
    a, p = ang.acc, ang.prec
    n = len(a)
    z = np.zeros(n)
    rows = [
        np.column_stack([a[:, 0], -p[:, 0], p[:, 0], z]),
        np.column_stack([p[:, 1], a[:, 1], -p[:, 1], z]),
        np.column_stack([-p[:, 2], p[:, 2], a[:, 2], -ang.drag]),
    ]
    big_a = np.vstack(rows)
    b = np.concatenate([ang.tau[:, 0], ang.tau[:, 1], ang.tau[:, 2]])
    try:
        fit = ols(big_a, b, what="joint inertia / K_tau (eq. 73-76)")
    except ExcitationError as e:
        return {
            "grounded": False,
            "x": [float("nan")] * 4,
            "rel_std_pct": [float("inf")] * 4,
            "cond": float("inf"),
            "error": str(e),
        }
    tau = integrated_autocorr_time(fit.residual[:n]) if st.autocorr_correction else 1.0
    rel = (fit.rel_std_pct * math.sqrt(tau)).tolist()
    grounded = bool(fit.x[2] > 0 and rel[2] < st.joint_max_rel_std and fit.x[3] != 0)
    return {"grounded": grounded, "x": fit.x.tolist(), "rel_std_pct": rel, "cond": fit.cond}
