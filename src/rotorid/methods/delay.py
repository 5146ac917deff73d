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
   noise levels a TLS (Deming) fit needs are not known: the high-band noise floor explains
   under 1 % of the scatter on real and simulated flights, the rest is rotor-model error and
   disturbance torque of unknown split. So σ includes the bracket the data do give, between
   the direct and reciprocal fits (Frisch bounds, `_eiv_bracket`; also for K_tau), and a
   bracket wider than ±50 % about its centre makes the value not identifiable. The
   gyroscopic terms ω x (J ω) of eq. 62 are kept (with I_zz from eq. 93, iterated); the paper's
   eq. 80 drops them, which biases I_xx by a few % when the flight also yaws.
4. **I_zz and K_tau**: I_zz = C (I_xx + I_yy)/2 (eq. 93-94), K_tau by least squares (eq. 95-96);
   when the yaw flight has precession, also the joint estimate of eq. 73-76.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special
from scipy.integrate import cumulative_trapezoid
from threadpoolctl import threadpool_limits

from rotorid.errors import ExcitationError, RotoridError, VehicleError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.identified import with_vehicle
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
from rotorid.methods.regression import (
    Fit,
    bracket_std,
    frisch_bounds,
    ols,
    ols_blocks,
    r2,
    r2_from_sse,
    reduce_rows,
    tls,
)
from rotorid.result import LOOSE_PCT, Result, build_result
from rotorid.signal import CHUNK, butter_filtfilt, derivative, motor_lag, motor_lag_asymmetric
from rotorid.vehicle import Vehicle

INERTIA_PARAMS = ("direct", "reciprocal", "tls")
#: Figures get at most this many points per scatter (diagnostics are subsampled evenly).
MAX_PLOT_POINTS = 2500
#: Lowest original logging rate of the motor commands and IMU: a 30-100 ms motor lag needs
#: several samples per time constant (PX4 logs actuator_motors at 10 Hz unless told otherwise).
MIN_RATE_HZ = 100.0
#: Thrust residual's integrated autocorrelation time above which the notes say the residuals
#: are structured: the lag model leaves white accelerometer noise (tau_int 1), so beyond 2 the
#: correlation has halved the effective samples, which noise alone does not do.
STRUCTURED_TAU = 2.0
#: Eschmann et al. Table II: C_xy->z = I_zz / ((I_xx + I_yy)/2) of the 12 quadrotors listed
#: (x500, Leshikar, Kaputa, Flightmare, Iris, px4vision, X-wing, five Crazyflie models); their
#: mean 1.832 is eq. 93.
TABLE_II_RATIOS = (1.818, 1.627, 2.896, 1.556, 1.896, 1.896, 1.792, 1.760, 1.346, 1.968, 1.876, 1.550)
#: σ of C for a vehicle not in the table: the predictive spread s sqrt(1 + 1/n) of the ratios.
IZZ_RATIO_SIGMA = round(statistics.stdev(TABLE_II_RATIOS) * math.sqrt(1 + 1 / len(TABLE_II_RATIOS)), 2)


@dataclass(frozen=True)
class DelaySettings:
    """Options of the delay method; every field is recorded in params.json.

    - `tm_prior`: None (uniform over `tm_bounds`, as in the paper) or (MEAN, SIGMA) in s of a
      log-normal prior on T_m.
    - `asymmetric_tm`: also estimate separate rising/falling constants.
    - `per_motor`: one thrust curve per motor (else one lumped curve, eq. 17 with shared K_j).
    - `exponents`: thrust-curve exponents j of K_j u^j.
    - `izz_ratio`: (C, SIGMA) of C_xy->z in eq. 93 (a bare C takes the default SIGMA): the
      assumption behind I_zz and K_tau, whose σ carry SIGMA. Default: eq. 93's 1.832 (the mean
      over `TABLE_II_RATIOS`) ± their predictive spread for a new vehicle, s sqrt(1 + 1/n)
      (s the sample standard deviation of the n = 12 ratios) = 0.40.
    - `acc_bias_z`: (VALUE, SIGMA) in m/s² of the accelerometer's z bias, subtracted from the
      measured specific force. Airborne flights cannot separate it from K_0 (both are constant
      in eq. 17-21; the hover check of Fig. 6 selects its samples by the biased |acc| too), so
      SIGMA enters the σ of K_0 and the hover command, which are marked assumed. Default
      0 ± `ACC_BIAS_Z_SIGMA`; give a calibrated bias (e.g. from a rest log) to tighten them.
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
    - `dead_time_check`, `dead_time_max`: test the lag model against lag + dead time (0 to
      `dead_time_max` s) and widen σ by their difference when the data support the dead time
      (`_dead_time_check`).
    - `asymmetry_check`: test the symmetric lag against separate rising/falling constants and
      widen σ by their difference when the data support them (`_asymmetry_check`).
    """

    tm_prior: tuple[float, float] | None = None
    asymmetric_tm: bool = False
    per_motor: bool = False
    exponents: tuple[int, ...] = (0, 1, 2)
    izz_ratio: tuple[float, float] = (1.832, IZZ_RATIO_SIGMA)
    acc_bias_z: tuple[float, float] = (0.0, ACC_BIAS_Z_SIGMA)
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
    dead_time_check: bool = True
    dead_time_max: float = 0.03
    asymmetry_check: bool = True

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
        c = self.izz_ratio if isinstance(self.izz_ratio, tuple | list) else (self.izz_ratio, IZZ_RATIO_SIGMA)
        try:
            object.__setattr__(self, "izz_ratio", tuple(float(v) for v in c))
        except (TypeError, ValueError):
            raise RotoridError(f"izz_ratio {self.izz_ratio} must be C or (C, SIGMA), numbers") from None
        if len(self.izz_ratio) != 2 or not self.izz_ratio[0] > 0 or not self.izz_ratio[1] >= 0:
            raise RotoridError(f"izz_ratio {self.izz_ratio} must be C > 0 or (C > 0, SIGMA >= 0)")
        b = self.acc_bias_z if isinstance(self.acc_bias_z, tuple | list) else (self.acc_bias_z, ACC_BIAS_Z_SIGMA)
        try:
            object.__setattr__(self, "acc_bias_z", tuple(float(v) for v in b))
        except (TypeError, ValueError):
            raise RotoridError(f"acc_bias_z {self.acc_bias_z} must be VALUE or (VALUE, SIGMA) in m/s²") from None
        if len(self.acc_bias_z) != 2 or not self.acc_bias_z[1] >= 0:
            raise RotoridError(f"acc_bias_z {self.acc_bias_z} must be (VALUE, SIGMA >= 0) in m/s²")
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


#: Sokal's window constant: autocovariances are summed up to the smallest lag M with
#: M >= c tau_int(M) (Sokal 1997, "Monte Carlo Methods in Statistical Mechanics", Sec. 3;
#: c = 5 as in emcee's `integrated_time`).
SOKAL_C = 5.0


def long_run_var(z: np.ndarray, lengths: Sequence[int] | None = None) -> tuple[float, float]:
    """Variance of the sum Σ_t z_t of a zero-mean, serially correlated series, and its
    integrated autocorrelation time.

    The autocovariances Γ_k = Σ_t z_t z_{t+k} are pooled over the segments `lengths` (one per
    flight: no products across a flight boundary) and summed over |k| <= M with Sokal's
    automatic window (`SOKAL_C`); variance = Γ_0 tau_int with tau_int = 1 + 2 Σ_{k<=M} Γ_k/Γ_0.
    Unlike a sum over the initial positive autocorrelations (Geyer), this keeps the negative
    lobes that low-pass filtered and differentiated noise has, which a truncation at the first
    zero crossing drops (overstating the variance). Applied to a fit's influence series
    (`_ols_influence`) this is the heteroscedasticity- and autocorrelation-consistent variance
    of Newey & West (1987) with a truncated kernel and a data-driven bandwidth. tau_int is
    floored at 1/c: below that, Sokal's criterion holds already at M = 1 and cannot resolve it.
    """
    z = np.asarray(z, dtype=float)
    lengths = [len(z)] if lengths is None else [int(n) for n in lengths]
    return _sokal_windows(z[:, None], lengths)[0]


#: Lags of the first autocovariance pass (`_sokal_windows`), and the block length of the blocked
#: correlation (`_autocov`): Sokal's window closes at M = c tau_int, a few hundred lags at most
#: for the residuals and influence series here, so the first pass usually decides.
FIRST_LAGS = 1024
ACOV_BLOCK = 1 << 16


def _sokal_windows(z: np.ndarray, lengths: Sequence[int]) -> list[tuple[float, float]]:
    """`_sokal` of each column of `z` (N, P), the autocovariances computed to `FIRST_LAGS` lags
    first and to 8 times more until every column's window closes (or all max(lengths) // 2
    lags are in): the window uses only the lags below it, so the result is that of all lags."""
    kmax = max(max(lengths) // 2, 1)
    nlags = min(FIRST_LAGS, kmax)
    while True:
        acov = _autocov(z, lengths, nlags)
        out = [_sokal(acov[:, i], complete=nlags == kmax) for i in range(z.shape[1])]
        closed = [o for o in out if o is not None]
        if len(closed) == len(out):
            return closed
        nlags = min(8 * nlags, kmax)


def _autocov(z: np.ndarray, lengths: Sequence[int], nlags: int) -> np.ndarray:
    """(nlags, P): the autocovariances Γ_k, k < nlags, of each column of `z` (N, P), pooled
    over the segments `lengths` (no product across a boundary). Blocked correlation: each block
    of `ACOV_BLOCK` (or nlags) samples against itself and the next nlags - 1 samples, by FFT
    zero-padded past their sum (no circular wrap), so the buffers are a few blocks whatever
    the flight's length (one transform of a whole hour at 1 kHz, 8 M points, allocated
    ~130 MB per column on every call: fresh memory the kernel mapped and zeroed)."""
    acov = np.zeros((nlags, z.shape[1]))
    size = max(nlags, ACOV_BLOCK)
    m = 1 << int(np.ceil(np.log2(size + nlags)))
    start = 0
    for n in lengths:
        seg = z[start : start + n]
        for s in range(0, n, size):
            spec = np.fft.rfft(seg[s : s + size + nlags - 1], m, axis=0)
            spec *= np.fft.rfft(seg[s : s + size], m, axis=0).conj()
            acov += np.fft.irfft(spec, m, axis=0)[:nlags]
        start += n
    return acov


def _sokal(acov: np.ndarray, complete: bool = True) -> tuple[float, float] | None:
    """(Γ_0 tau_int, tau_int) from the autocovariances Γ_k with Sokal's window (`long_run_var`);
    None when the window does not close within these lags and they are not `complete`."""
    kmax = len(acov)
    if not acov[0] > 0:
        return 0.0, 1.0
    tau = 1.0 + 2.0 * np.cumsum(acov[1:] / acov[0])
    lags = np.arange(1, kmax)
    ok = np.flatnonzero(lags >= SOKAL_C * tau)
    if not ok.size and not complete:
        return None
    t = float(tau[ok[0]]) if ok.size else float(tau[-1]) if tau.size else 1.0
    t = max(t, 1.0 / SOKAL_C)
    return float(acov[0]) * t, t


def integrated_autocorr_time(r: np.ndarray, lengths: Sequence[int] | None = None) -> float:
    """tau_int of a residual (de-meaned per segment; `long_run_var`): `n / tau_int` is the
    effective number of independent samples."""
    r = np.asarray(r, dtype=float)
    lengths = [len(r)] if lengths is None else list(lengths)
    idx = np.repeat(np.arange(len(lengths)), lengths)
    means = np.bincount(idx, weights=r) / np.maximum(np.bincount(idx), 1)
    return long_run_var(r - means[idx], lengths)[1]


def _ols_influence(j: np.ndarray, r: np.ndarray, rows: int = 1) -> np.ndarray:
    """Influence series of a least-squares fit: θ̂ - θ ≈ Σ_t z_t with z_t = (JᵀJ)⁻¹ Σ_rows J_t r_t,
    the `rows` consecutive rows of one time sample summed (they share a sample's noise);
    J the Jacobian of the prediction (the regressor for a linear fit), r the residual."""
    j = np.asarray(j, dtype=float)
    j = j[:, None] if j.ndim == 1 else j
    binv = np.linalg.pinv(j.T @ j)
    g = (j * np.asarray(r, dtype=float)[:, None]).reshape(-1, rows, j.shape[1]).sum(axis=1)
    return g @ binv


def _hac_cov(z: np.ndarray, lengths: Sequence[int], correlated: bool = True) -> np.ndarray:
    """Covariance of Σ_t z_t: each parameter's variance from `long_run_var`, correlations from
    the lag-0 (White) covariance ZᵀZ: D ZᵀZ D with D = diag(sqrt(tau_int)) (positive
    semi-definite by construction); D = 1 when not `correlated` (White's covariance)."""
    z = np.asarray(z, dtype=float)
    z = z[:, None] if z.ndim == 1 else z
    taus = [w[1] for w in _sokal_windows(z, [int(n) for n in lengths])] if correlated else np.ones(z.shape[1])
    d = np.sqrt(taus)
    return d[:, None] * (z.T @ z) * d[None, :]


def _lag(cmd: np.ndarray, t: np.ndarray, tm: tuple[float, float]) -> np.ndarray:
    """Rotor states through the (symmetric or rising/falling) first-order lag (eq. 45-48)."""
    return motor_lag(cmd, t, tm[0]) if tm[0] == tm[1] else motor_lag_asymmetric(cmd, t, tm[0], tm[1])


def _delayed(cmd: np.ndarray, t: np.ndarray, dead: float) -> np.ndarray:
    """Commands delayed by `dead` s (linear interpolation, the first command held before)."""
    if dead == 0:
        return cmd
    return np.column_stack([np.interp(t - dead, t, c) for c in cmd.T])


def _delayed_rows(cmd: np.ndarray, t: np.ndarray, lo: int, hi: int, dead: float) -> np.ndarray:
    """Rows lo:hi of `_delayed(cmd, t, dead)`, interpolating within the few samples they reach
    (the same values: np.interp between the same two samples, the first command held before)."""
    if dead == 0:
        return cmd[lo:hi]
    tq = t[lo:hi] - dead
    j0 = max(int(np.searchsorted(t, tq[0], side="right")) - 1, 0)
    j1 = int(np.searchsorted(t, tq[-1], side="left")) + 1
    return np.column_stack([np.interp(tq, t[j0:j1], c) for c in cmd[j0:j1].T])


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
    acc_bias_z: float = 0.0  # m/s², subtracted from the accelerometer's z axis
    rows: np.ndarray = field(init=False)  # active body axes
    b: np.ndarray = field(init=False)
    shared_c0: bool = field(init=False)

    def __post_init__(self) -> None:
        ax = self.vehicle.axes  # (M, 3)
        self.rows = np.flatnonzero(np.abs(ax).sum(axis=0) > 1e-9)
        bias = np.array([0.0, 0.0, self.acc_bias_z])[self.rows]
        self.b = np.concatenate([self.vehicle.mass * (f.acc[:, self.rows] - bias).reshape(-1) for f in self.flights])
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
            if not self.per_motor:  # column by column: no (N, M, E) stack on every T_m evaluation
                a = np.empty((len(w), r.shape[1], len(e)))
                for k, j in enumerate(self.exponents):
                    a[:, :, k] = r.sum(axis=0) if j == 0 else (w if j == 1 else w**j) @ r
                blocks.append(a.reshape(-1, len(e)))
                continue
            p = np.stack([np.ones_like(w) if j == 0 else w**j for j in self.exponents], axis=-1)  # (N, M, E)
            a = (p[:, :, None, :] * r[None, :, :, None]).transpose(0, 2, 1, 3)  # (N, R, M, E)
            if self.shared_c0:
                keep = e != 0
                c0 = np.broadcast_to(r.sum(axis=0), (len(w), self.n_rows))[..., None]
                a = np.concatenate([c0, a[..., keep].reshape(len(w), self.n_rows, -1)], axis=2)
            blocks.append(a.reshape(len(w) * self.n_rows, -1))
        return np.vstack(blocks)

    def states(self, tm: tuple[float, float], dead: float = 0.0) -> list[np.ndarray]:
        """Rotor states of every flight; `dead` (s) delays the commands first (`_dead_time_check`)."""
        return [_lag(_delayed(f.cmd, f.t, dead), f.t, tm) for f in self.flights]

    def state_blocks(self, tm: tuple[float, float], dead: float = 0.0) -> Iterator[np.ndarray]:
        """`states(tm, dead)` `CHUNK` rows at a time, flight after flight. The symmetric lag
        restarts each block from the previous block's last state (`motor_lag`'s y0: the same
        recursion, so the same numbers) on commands delayed block by block (`_delayed_rows`), so
        nothing of the flight's length is allocated; the asymmetric lag (a fixed point over the
        whole flight) is computed whole and then cut."""
        for f in self.flights:
            if tm[0] != tm[1]:
                w = _lag(_delayed(f.cmd, f.t, dead), f.t, tm)
                yield from (w[i : i + CHUNK] for i in range(0, len(w), CHUNK))
                continue
            y = None
            for i in range(0, len(f.t), CHUNK):
                lo, hi = max(i - 1, 0), i + CHUNK
                u = _delayed_rows(f.cmd, f.t, lo, hi, dead)
                w = motor_lag(u, f.t[lo:hi], tm[0], y0=None if y is None else y[-1])
                y = w if y is None else w[1:]
                yield y

    def fit(self, tm: tuple[float, float], dead: float = 0.0) -> tuple[Fit, list[np.ndarray]]:
        """The thrust fit at `tm` (commands delayed by `dead` s first) and the rotor states;
        A is built `CHUNK` samples at a time, twice, never whole (`ols_blocks`)."""
        s = self.states(tm, dead)

        def blocks() -> Iterator[np.ndarray]:
            return (self.design_states([w[i : i + CHUNK]]) for w in s for i in range(0, len(w), CHUNK))

        return ols_blocks(blocks, self.b, what="thrust curve (eq. 17-21)"), s

    def sse(self, tm: tuple[float, float], dead: float = 0.0) -> float:
        """Residual sum of squares of `fit(tm)` (commands delayed by `dead` s first, for
        `_dead_time_check`), for the T_m search that evaluates it tens of times: the rotor
        states and [A | b] are built and reduced `CHUNK` rows at a time (`reduce_rows`), so a
        symmetric evaluation allocates nothing of the flight's length (the fit's dozen (N, ...)
        temporaries, then the rotor states, were freshly mapped, page-faulted memory: a third
        of the CPU time on an hour at 1 kHz went to the kernel)."""
        red = reduce_rows((self.design_states([w]) for w in self.state_blocks(tm, dead)), self.b)
        if not red.excited.all():  # ols names the columns that are not excited
            return self.fit(tm, dead)[0].sse
        return red.sse

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
class ThrustUncertainty:
    """Joint uncertainty of the motor constant(s) and the thrust coefficients at the optimum.

    The coefficients follow T_m by linear least squares (a separable problem: variable
    projection, Golub & Pereyra 1973), so the asymptotic covariance is that of the nonlinear
    least-squares fit in all parameters together (Seber & Wild 1989, Sec. 2.1): Jacobian
    J = [∂(A x)/∂T_m, A] of the prediction, influence series z_t = (JᵀJ)⁻¹ J_t r_t, covariance
    by `_hac_cov` (each variance from the influence's long-run variance), and a log-normal
    prior's curvature added to the T_m precision. This replaces a finite-difference curvature
    of the profile likelihood, whose 5 % step measured the curve's higher derivatives too.
    The coefficients' σ are marginal: they include the uncertainty of T_m."""

    names: list[str]  # "tm" or "tm_rise", "tm_fall" (when estimated), then ThrustProblem.names()
    theta: np.ndarray
    cov: np.ndarray
    step: np.ndarray  # Gauss-Newton step of the likelihood, Σ_t z_t (0 at its optimum)
    fit: Fit
    states: list[np.ndarray]
    dirs: list[tuple[float, float]]  # (rise, fall) direction of each estimated motor constant
    prob: ThrustProblem
    pair: tuple[float, float]  # the (rise, fall) constants used
    bias_grad: np.ndarray  # ∂θ/∂(accelerometer z bias), for the σ it adds (`acc_bias_z`)
    lik_tm_cov: np.ndarray  # the likelihood's covariance of the motor constant(s) alone (no prior)

    def thrust_derivs(self, cmd: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(N, M, P): ∂(rotor thrust)/∂θ for other commands (another flight), θ in `names`
        order, at these constants and coefficients (for propagating their uncertainty)."""
        pair = self.pair
        v = self.prob.vehicle.replace(thrust_exponents=self.prob.exponents, thrust_coeffs=self.prob.coeffs(self.fit.x))
        cols = []
        for d in self.dirs:
            h = 1e-4 * float(np.mean(pair))
            up = tuple(float(a + h * b) for a, b in zip(pair, d, strict=True))
            dn = tuple(float(a - h * b) for a, b in zip(pair, d, strict=True))
            cols.append((v.thrust(_lag(cmd, t, up)) - v.thrust(_lag(cmd, t, dn))) / (2 * h))
        w = _lag(cmd, t, pair)
        eye = np.eye(len(self.fit.x))
        cols += [v.replace(thrust_coeffs=self.prob.coeffs(e)).thrust(w) for e in eye]
        return np.stack(cols, axis=-1)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    @property
    def coeff_cov(self) -> np.ndarray:
        """Covariance of the thrust coefficients alone (T_m marginalised)."""
        q = len(self.theta) - len(self.fit.x)
        return self.cov[q:, q:]


def _prior_terms(tm: float, prior: tuple[float, float] | None) -> tuple[float, float]:
    """Gradient and curvature of `_neg_log_prior` at `tm` (0, 0 for the uniform prior)."""
    if prior is None:
        return 0.0, 0.0
    mean, sd = prior
    s2 = math.log1p((sd / mean) ** 2)
    dl = math.log(tm) - (math.log(mean) - 0.5 * s2)
    return (1.0 + dl / s2) / tm, (1.0 / s2 - 1.0 - dl / s2) / tm**2


def _tm_columns(prob: ThrustProblem, tm: np.ndarray, dirs: Sequence[tuple[float, float]], x: np.ndarray) -> np.ndarray:
    """(rows, q): ∂(A x)/∂T_m along each direction by central differences of the exact lag (step
    1e-4 T_m), the shifted states made and reduced `CHUNK` samples at a time
    (`ThrustProblem.state_blocks`)."""
    h = 1e-4 * float(np.mean(tm))
    out = np.empty((len(prob.b), len(dirs)))
    for k, d in enumerate(dirs):
        up, dn = prob.state_blocks(tuple(tm + h * np.asarray(d))), prob.state_blocks(tuple(tm - h * np.asarray(d)))
        start = 0
        for wu, wd in zip(up, dn, strict=True):
            da = prob.design_states([wu]) - prob.design_states([wd])
            out[start : start + len(da), k] = da @ x / (2 * h)
            start += len(da)
    return out


def _jacobian_blocks(
    prob: ThrustProblem, states: list[np.ndarray], cols: np.ndarray
) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, J block) of J = [`cols` (the T_m columns), A], `CHUNK` samples at a time: the
    (rows, P) Jacobian is never held (`thrust_uncertainty`)."""
    start = 0
    for w in states:
        for i in range(0, len(w), CHUNK):
            a = prob.design_states([w[i : i + CHUNK]])
            yield start, np.column_stack([cols[start : start + len(a)], a])
            start += len(a)


def thrust_uncertainty(
    prob: ThrustProblem, tm_pair: tuple[float, float], dirs: Sequence[tuple[float, float]], st: DelaySettings
) -> ThrustUncertainty:
    """`ThrustUncertainty` at the motor constants `tm_pair`; `dirs` are the estimated directions
    in (rise, fall): [(1, 1)] for one symmetric T_m, [(1, 0), (0, 1)] for rising/falling
    constants, [] when T_m is not estimated (the coefficients' σ are then conditional on it).
    ∂(A x)/∂T_m by central differences of the exact lag (smooth in T_m; step 1e-4 T_m).

    The Jacobian J is built and reduced `CHUNK` samples at a time (`_jacobian_blocks`): a
    first pass accumulates JᵀJ and the R of a QR of [A | m e_z] (the accelerometer-bias
    gradient), a second writes the influence series into one preallocated (N, P) array, so
    an hour at 1 kHz no longer maps, faults in and frees a dozen (N, P) temporaries per call."""
    fit, states = prob.fit(tm_pair)
    tm = np.asarray(tm_pair, dtype=float)
    cols = _tm_columns(prob, tm, dirs, fit.x)
    q, p = len(dirs), len(dirs) + len(fit.x)
    jtj = np.zeros((p, p))
    # the accelerometer z bias's own uncertainty (`acc_bias_z`): ∂θ/∂β = -(least squares of m e_z)
    bias_r = np.zeros((0, p - q + 1))
    z_row = prob.vehicle.mass * (prob.rows == 2)
    for _, jb in _jacobian_blocks(prob, states, cols):
        jtj += jb.T @ jb
        ones = np.tile(z_row, len(jb) // prob.n_rows)
        bias_r = np.linalg.qr(np.vstack([bias_r, np.column_stack([jb[:, q:], ones])]), mode="r")
    binv = np.linalg.pinv(jtj)
    z = np.empty((len(fit.residual) // prob.n_rows, p))
    for start, jb in _jacobian_blocks(prob, states, cols):
        g = (jb * fit.residual[start : start + len(jb), None]).reshape(-1, prob.n_rows, p).sum(axis=1)
        np.matmul(g, binv, out=z[start // prob.n_rows : (start + len(jb)) // prob.n_rows])
    cov = _hac_cov(z, [len(f.t) for f in prob.flights], st.autocorr_correction)
    bias_grad = np.concatenate([np.zeros(q), -np.linalg.lstsq(bias_r[:-1, :-1], bias_r[:-1, -1], rcond=None)[0]])
    names = (["tm"] if q == 1 else ["tm_rise", "tm_fall"][:q]) + prob.names()
    theta = np.concatenate([[float(np.dot(tm, d)) / float(np.sum(d)) for d in dirs], fit.x])
    lik_tm = cov[:q, :q]
    if st.tm_prior is not None and q:
        prec = np.linalg.pinv(cov)
        for k in range(q):
            prec[k, k] += max(_prior_terms(float(theta[k]), st.tm_prior)[1], 0.0)
        cov = np.linalg.pinv(prec)
    cov = cov + st.acc_bias_z[1] ** 2 * np.outer(bias_grad, bias_grad)
    return ThrustUncertainty(
        names, theta, cov, z.sum(axis=0), fit, states, list(dirs), prob, tm_pair, bias_grad, lik_tm
    )


@dataclass
class TmSearch:
    """Outcome of the T_m search: optimum, std, the evaluated curve, edge flag, the joint
    uncertainty (None at the edge) and the residual's autocorrelation time at the optimum."""

    tm: float
    std: float
    grid: np.ndarray
    sse: np.ndarray
    nlp: np.ndarray
    at_edge: bool
    tau_int: float
    n: int
    evaluations: int
    unc: ThrustUncertainty | None = None


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


def _polish(
    prob: ThrustProblem,
    tm_pair: tuple[float, float],
    dirs: Sequence[tuple[float, float]],
    st: DelaySettings,
    nlp: Any,
) -> tuple[tuple[float, float], ThrustUncertainty]:
    """One Newton step of the negative log-posterior from the search's optimum (likelihood
    by its Gauss-Newton / sandwich approximation, prior exactly), kept if it lowers `nlp`
    (a function of the pair): the optimum then no longer depends on the search tolerance,
    which may exceed σ(T_m) on long flights. Returns the pair and its uncertainty."""
    unc = thrust_uncertainty(prob, tm_pair, dirs, st)
    q = len(dirs)
    h_lik = np.linalg.pinv(unc.lik_tm_cov)
    grad = np.array([_prior_terms(float(v), st.tm_prior)[0] for v in unc.theta[:q]])
    h_post = h_lik + np.diag([max(_prior_terms(float(v), st.tm_prior)[1], 0.0) for v in unc.theta[:q]])
    delta = np.linalg.solve(h_post, h_lik @ unc.step[:q] - grad)
    new = np.asarray(tm_pair, dtype=float) + sum(dk * np.asarray(d) for dk, d in zip(delta, dirs, strict=True))
    lo, hi = _support(st)
    if not np.all((new > lo) & (new < hi)) or not nlp(tuple(new)) < nlp(tm_pair):
        return tm_pair, unc
    pair = (float(new[0]), float(new[1]))
    return pair, thrust_uncertainty(prob, pair, dirs, st)


def search_tm(problem: ThrustProblem, settings: DelaySettings) -> TmSearch:
    """MAP estimate of T_m (eq. 55-61): coarse log-spaced bracket over the prior's support, then
    Brent (bounded) to `tm_xtol` and a Newton polish (`_polish`); std from the joint
    uncertainty (`thrust_uncertainty`).

    The likelihood's weight n_eff = n / tau_int uses the residual's autocorrelation time at
    the optimum: away from it the residual carries the lag-model error, a smooth signal with
    tau_int ~ 100 samples instead of ~1 (at 7 % from the optimum on a 1 kHz log), which made σ
    ten times too large. It matters for the search only with a prior (whose balance against
    the data it sets); the curve shown and the excitation test use it too."""
    lo, hi = _support(settings)
    evals: dict[float, float] = {}

    def sse(tm: float) -> float:
        if tm not in evals:
            evals[tm] = problem.sse((tm, tm))
        return evals[tm]

    grid = np.geomspace(lo, hi, settings.tm_grid)
    coarse = np.array([sse(float(g)) for g in grid])
    if not np.all(coarse > 0):  # an exact fit (an all-zero accelerometer) has no likelihood to weigh
        raise ExcitationError("delay: the thrust fit is exact (zero residual); the accelerometer holds no signal")
    n = len(problem.b)
    lengths = [len(f.t) for f in problem.flights]

    def tau_at(tm: float) -> float:
        if not settings.autocorr_correction:
            return 1.0
        return _tau_int(problem.fit((tm, tm))[0].residual, problem, lengths)

    def minimise(tau: float) -> float:
        n_eff = n / tau
        vals = np.array(
            [
                0.5 * n_eff * math.log(s) + float(_neg_log_prior(float(g), settings.tm_prior))
                for g, s in zip(grid, coarse, strict=True)
            ]
        )
        i = int(np.argmin(vals))
        a, b = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
        f = lambda tm: 0.5 * n_eff * math.log(sse(tm)) + float(_neg_log_prior(tm, settings.tm_prior))
        return float(
            optimize.minimize_scalar(f, bounds=(a, b), method="bounded", options={"xatol": settings.tm_xtol}).x
        )

    tm = minimise(tau_at(float(grid[np.argmin(coarse)])))
    tau = tau_at(tm)
    if settings.tm_prior is not None:  # the prior's balance against the data uses tau at the optimum
        tm = minimise(tau)
    n_eff = n / tau
    at_edge = (tm - lo) <= 2 * settings.tm_xtol or (hi - tm) <= 2 * settings.tm_xtol
    nlp = lambda pair: 0.5 * n_eff * math.log(problem.sse(pair)) + float(_neg_log_prior(pair[0], settings.tm_prior))
    if at_edge:
        unc, std = None, float("nan")
    else:
        pair, unc = _polish(problem, (tm, tm), [(1.0, 1.0)], settings, nlp)
        tm = pair[0]
        evals[tm] = unc.fit.sse
        std = float(unc.std[0])
    ts = np.array(sorted(evals))
    ss = np.array([evals[k] for k in ts])
    nl = 0.5 * n_eff * np.log(ss) + _neg_log_prior(ts, settings.tm_prior)
    return TmSearch(tm, std, ts, ss, nl, bool(at_edge), tau, n, len(evals), unc)


def _tau_int(residual: np.ndarray, problem: ThrustProblem, lengths: Sequence[int]) -> float:
    """Integrated autocorrelation time of the thrust residual (flights as segments), averaged
    over the body rows."""
    r = residual.reshape(-1, problem.n_rows)
    return float(np.mean([integrated_autocorr_time(r[:, k], lengths) for k in range(problem.n_rows)]))


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
    unc: ThrustUncertainty | None = None


def _rise_fall_fit(
    problem: ThrustProblem, sym: TmSearch, settings: DelaySettings, x0: np.ndarray
) -> tuple[float, float, Callable[[Any], float], list[int]]:
    """Rising and falling constants minimising the negative log posterior (the SSE at the
    residual's effective sample count plus the T_m prior) by a bounded quasi-Newton (L-BFGS-B)
    search from `x0`, never worse than the symmetric optimum; also that objective and its
    evaluation count (a one-element list), for a polish to go on with."""
    lo, hi = _support(settings)
    n_eff = sym.n / sym.tau_int
    count = [0]

    def nlp(x: Any) -> float:
        count[0] += 1
        tr, tf = float(x[0]), float(x[1])
        prior = float(_neg_log_prior(tr, settings.tm_prior) + _neg_log_prior(tf, settings.tm_prior))
        return 0.5 * n_eff * math.log(problem.sse((tr, tf))) + prior

    res = optimize.minimize(nlp, np.clip(x0, lo, hi), method="L-BFGS-B", bounds=[(lo, hi)] * 2)
    if res.fun > nlp(np.array([sym.tm, sym.tm])):
        res.x = np.array([sym.tm, sym.tm])
    return float(res.x[0]), float(res.x[1]), nlp, count


def search_tm_asymmetric(problem: ThrustProblem, sym: TmSearch, settings: DelaySettings) -> AsymSearch:
    """Rising and falling constants by a bounded quasi-Newton (L-BFGS-B) search from the symmetric
    optimum and a Newton polish, std from the joint uncertainty (`thrust_uncertainty`), and the
    F-test of the split against the symmetric model."""
    lo, hi = _support(settings)
    n_eff = sym.n / sym.tau_int
    x0 = np.array([sym.tm * 1.05, sym.tm * 0.95])  # just off the diagonal
    tr, tf, nlp, count = _rise_fall_fit(problem, sym, settings, x0)
    at_edge = any(min(v - lo, hi - v) <= 2 * settings.tm_xtol for v in (tr, tf))
    std: tuple[float, float] = (float("nan"), float("nan"))
    unc = None
    if not at_edge:
        (tr, tf), unc = _polish(problem, (tr, tf), [(1.0, 0.0), (0.0, 1.0)], settings, nlp)
        std = (float(unc.std[0]), float(unc.std[1]))
    sse_a = problem.sse((tr, tf))
    sse_s = problem.sse((sym.tm, sym.tm))
    p = len(problem.names()) + 2
    dof = max(n_eff - p, 1.0)
    f_stat = max(sse_s - sse_a, 0.0) / (sse_a / dof)
    return AsymSearch(tr, tf, std, sse_a, float(f_stat), float(special.fdtrc(1, dof, f_stat)), count[0], at_edge, unc)


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
    sens: np.ndarray | None = None  # (n, P, 4): ∂[tau_x, tau_y, tau_z, drag]/∂θ (thrust parameters), filtered


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
    flights: list[Flight],
    vehicle: Vehicle,
    tm: tuple[float, float],
    settings: DelaySettings,
    what: str,
    derivs: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> Angular:
    """Torques from the identified thrust curve and rotor geometry through the motor lag (eq. 77-79),
    angular accelerations from `gyro_dot` (else differentiated gyro, eq. 8), all filtered by the
    same zero-phase low-pass and trimmed at both ends. `derivs(cmd, t)` -> (N, M, P) rotor-thrust
    derivatives w.r.t. the thrust parameters (`ThrustUncertainty.thrust_derivs`) gives `sens`,
    their torques through the same pipeline."""
    mix = vehicle.mixer(k_tau=0.0, about=vehicle.com)[3:]  # (3, M) geometric moments
    drag_row = vehicle.torque_dirs * vehicle.axes[:, 2]
    if not flights:
        raise ExcitationError(f"no {what} flight given")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("acc", "tau", "drag", "prec", "fold", "sens")}
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
        if derivs is not None:
            dth = derivs(f.cmd, f.t)  # (N, M, P)
            dq = np.concatenate([np.einsum("nmp,km->nkp", dth, mix), np.einsum("nmp,m->np", dth, drag_row)[:, None]], 1)
            raw = np.column_stack([raw, dq.reshape(n, -1)])
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
        if derivs is not None:
            cols["sens"].append(filt[:, 10:].reshape(len(filt), 4, -1).transpose(0, 2, 1))
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
        sens=np.concatenate(cols["sens"]) if derivs is not None else None,
    )


def _inertia_fit(a: np.ndarray, tau: np.ndarray, how: str, noise: np.ndarray, what: str) -> tuple[float, np.ndarray]:
    """I from torque = I * angular acceleration by one parameterization, and its influence
    series z (Î - I ≈ Σ_t z_t; σ² = `long_run_var(z)`), from the estimating equation:
    direct z = a r / Σa² (r = τ - I a); reciprocal k = 1/I with z = -τ r / (k² Στ²)
    (r = a - k τ); TLS in the noise-scaled columns u = a/s_a, v = τ/s_τ, slope x = I s_a/s_τ
    minimising Σ (v - x u)² / (1 + x²), with ψ_t = u e (1 + x²) + x e² (e = v - x u) and
    z = ψ / Σ (u² (1 + x²) - e²) (M-estimator influence, Huber 1981, Sec. 3.2)."""
    if how == "direct":
        fit = ols(a, tau, what=f"{what} (direct)")
        return float(fit.x[0]), a * fit.residual / float(a @ a)
    if how == "reciprocal":
        fit = ols(tau, a, what=f"{what} (reciprocal)")
        k = float(fit.x[0])
        if k <= 0:
            raise ExcitationError(f"{what}: angular acceleration does not follow the torque (slope {k:.3g} <= 0)")
        return 1.0 / k, -tau * fit.residual / (float(tau @ tau) * k**2)
    sa, st = (math.sqrt(v) if v > 0 else 1.0 for v in noise)
    u, v = a / sa, tau / st
    fit = tls(np.column_stack([u, -v]), what=f"{what} (TLS)")
    x = float(fit.x[0])
    e = v - x * u
    psi = u * e * (1 + x * x) + x * e * e
    return x * st / sa, psi / float(np.sum(u * u * (1 + x * x) - e * e)) * st / sa


def _sd(z: np.ndarray, lengths: Sequence[int], st: DelaySettings) -> float:
    """σ of Σ_t z_t: `long_run_var` over the flights, or White's (lag 0 only) without
    `autocorr_correction`."""
    return math.sqrt(long_run_var(z, lengths)[0] if st.autocorr_correction else float(z @ z))


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
    """(I, influence series) for x and y by one parameterization. With `st.gyroscopic` the ω x (J ω) terms of
    eq. 62 are moved to the torque side with I_zz = C (I_xx + I_yy)/2 (eq. 93), iterated to a
    fixed point (the paper's eq. 80 drops them: small angular rates), or with a given `coupling`."""
    acc, tau, prec = ang.acc[rows, :2], ang.tau[rows, :2], ang.prec[rows, :2]
    fit = lambda t: [_inertia_fit(acc[:, k], t[:, k], how, ang.noise_var[:, k], what) for k in (0, 1)]
    if coupling is not None:
        return fit(tau - coupling * prec)
    vals = fit(tau)
    for _ in range(3 if st.gyroscopic else 0):
        ixx, iyy = vals[0][0], vals[1][0]
        vals = fit(tau - _coupling(ixx, iyy, st.izz_ratio[0] * 0.5 * (ixx + iyy)) * prec)
    return vals


def roll_pitch_inertia(ang: Angular, settings: DelaySettings) -> dict[str, Any]:
    """I_xx, I_yy by all three parameterizations (eq. 80-82, Sec. IV-B, TLS), the held-out
    selection, std. deviations (`_sd` of each fit's influence series, kept in "influence"
    for the σ of I_xx + I_yy)."""
    out: dict[str, Any] = {"fits": {}, "holdout_r2": {}, "influence": {}}
    lengths = [len(r["t"]) for r in ang.raw]
    cpl = {}
    for how in INERTIA_PARAMS:
        vals = _fit_axes(ang, slice(None), how, settings, "roll/pitch inertia")
        out["fits"][how] = [(v, _sd(z, lengths, settings)) for v, z in vals]
        out["influence"][how] = [z for _, z in vals]
        ixx, iyy = vals[0][0], vals[1][0]
        cpl[how] = _coupling(ixx, iyy, settings.izz_ratio[0] * 0.5 * (ixx + iyy)) * settings.gyroscopic
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


def _inertia_grad(ang: Angular, how: str, coupling: np.ndarray) -> np.ndarray:
    """(2, P): ∂I_k/∂θ of the x and y inertia w.r.t. the thrust parameters θ (motor constant(s),
    coefficients; `Angular.sens`), by central differences of `_inertia_fit` in the direction of
    each parameter's filtered torque (the gyroscopic coupling held)."""
    p = ang.sens.shape[1]
    g = np.zeros((2, p))
    for k in (0, 1):
        tau = ang.tau[:, k] - coupling[k] * ang.prec[:, k]
        for j in range(p):
            d = ang.sens[:, j, k]
            nd = float(np.linalg.norm(d))
            if nd == 0:
                continue
            eps = 1e-4 * float(np.linalg.norm(tau)) / nd
            up, dn = (_inertia_fit(ang.acc[:, k], tau + e * d, how, ang.noise_var[:, k], "σ")[0] for e in (eps, -eps))
            g[k, j] = (up - dn) / (2 * eps)
    return g


#: Widest errors-in-variables bracket, as its half-width over its centre, for which a value
#: counts as identified: `LOOSE_PCT`, the bound of a "loosely determined" verdict. Beyond it
#: (a squared correlation below 1/3) the data cannot place the value within ±50 % even at the
#: bracket's centre.
EIV_MAX_HALF_WIDTH = LOOSE_PCT / 100.0
EIV_ADVICE = "fly sharper doublets on that axis (larger command steps, less wind) so the torque dominates the scatter"


def _eiv_bracket(x: np.ndarray, y: np.ndarray, value: float, what: str) -> tuple[float, str, bool]:
    """Errors-in-variables term of a slope y = value x through the origin (inertia: torque on
    angular acceleration; K_tau: yaw torque side on the drag column): (σ, reason, identified).

    Both columns carry error: the angular acceleration the differentiated gyro's noise, the
    torque the rotor model's error (thrust curve, lag, motor spread) and every disturbance
    torque (wind, prop wash; the closed loop turns these into commands too). The high-band
    noise floor (`Angular.noise_var`) explains under 1 % of the scatter about the fit on every
    flight tried (simulator ~0.5 %, real Crazyflie and Betaflight logs 0.03-0.07 %), so the
    noise-variance ratio a Deming / TLS fit needs is unknown, and the slope is only bounded:
    between the direct and the reverse least-squares slopes (`frisch_bounds`), a factor 1/r²
    apart. σ is the bracket as a rectangular distribution about the reported value
    (`bracket_std`, GUM 4.3.7): 0 for a perfect correlation, (high - low)/√3 for a value at an
    end of it. Not identified when the bracket's half-width exceeds `EIV_MAX_HALF_WIDTH` of
    its centre."""
    lo, hi, rr = frisch_bounds(x, y)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo * hi <= 0:
        return (
            float("inf"),
            f"the {what} does not follow the angular acceleration (correlation {math.sqrt(rr):.2f})",
            False,
        )
    ok = abs(hi - lo) <= EIV_MAX_HALF_WIDTH * abs(hi + lo)
    reason = (
        f"errors in variables: the {what} and the angular acceleration correlate at r = {math.sqrt(rr):.2f}, "
        f"and the scatter is far above the sensors' noise floor, so the data bound the value only between the "
        f"direct ({lo:.4g}) and reverse ({hi:.4g}) fits (a factor {hi / lo:.2g}); σ includes that bracket"
    )
    if not ok:
        reason += f" — wider than ±{100 * EIV_MAX_HALF_WIDTH:.0f} % about its centre (r² < 1/3): not identifiable"
    return bracket_std(value, lo, hi), reason, ok


def _inertia_sigma(rp: dict[str, Any], c: np.ndarray, st: DelaySettings) -> float:
    """σ of c_x I_xx + c_y I_yy: the roll/pitch flights' own noise (`_sd` of the combined
    influence series) plus the thrust flight's, through ∂I/∂θ and θ's covariance (first order;
    independent flights), plus each axis's errors-in-variables bracket (`_eiv_bracket`; the
    axes' unknown error splits independent)."""
    zx, zy = rp["influence"][rp["chosen"]]
    g = c @ rp["grad"]
    eiv = float(c**2 @ rp["eiv_var"])
    return math.sqrt(
        _sd(c[0] * zx + c[1] * zy, rp["lengths"], st) ** 2 + max(float(g @ rp["theta_cov"] @ g), 0.0) + eiv
    )


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
    prob = ThrustProblem(thrust_flights, vehicle, st.exponents, st.per_motor, st.acc_bias_z[0])
    sym, tm_pair, unc = _motor_lag_step(prob, st, out)
    ident = _thrust_step(prob, sym, tm_pair, unc, st, out)
    out.settings = {**dataclasses.asdict(st), "tm_search_range": list(_support(st)), "tm_evaluations": sym.evaluations}
    rp = _roll_pitch_step(roll_pitch, ident, unc, st, out) if roll_pitch else None
    if rp is None:
        out.notes.append("No roll/pitch flight: I_xx, I_yy (and so I_zz, K_tau) were not identified.")
    else:
        _yaw_step(yaw, ident, unc, rp, st, out)
    result = build_result("delay", out.est, out.settings, out.diag, out.obs, out.notes)
    for name, why in out.assumed.items():
        result.params[name] = dataclasses.replace(result.params[name], assumption=why)
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
    assumed: dict[str, str] = field(default_factory=dict)  # name -> `Estimate.assumption`

    def put(self, name: str, value: float, std: float) -> None:
        self.est[name] = (float(value), float(std))


def _motor_lag_step(
    prob: ThrustProblem, st: DelaySettings, out: _Collected
) -> tuple[TmSearch, tuple[float, float], ThrustUncertainty]:
    """Step 1: T_m (or rising/falling constants) from the thrust flight; the joint uncertainty
    (with the thrust fit and motor states) at the chosen constants. Raises `ExcitationError` when the thrust does not
    follow the commands or fits equally well for every T_m."""
    sym = search_tm(prob, st)
    tm_pair = (sym.tm, sym.tm)
    src = ", ".join(sorted({f.source for f in prob.flights}))
    fit = sym.unc.fit if sym.unc is not None else prob.fit(tm_pair)[0]
    thrust_r2 = r2_from_sse(fit.sse, prob.b)
    lr = 0.5 * (sym.n / sym.tau_int) * math.log(float(np.max(sym.sse)) / float(np.min(sym.sse)))
    if not thrust_r2 >= st.min_thrust_r2 or lr < 0.5 * special.chdtri(1, 0.001):
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
        why = []
        if sym.unc is not None and st.dead_time_check and _dead_time_check(prob, sym, st, out):
            why.append(
                f"a {1e3 * out.diag['dead_time']:.1f} ms dead time with T_m {out.diag['dead_time_tm']:.4g} s fits "
                "better than the pure lag"
            )
        if sym.unc is not None and st.asymmetry_check and _asymmetry_check(prob, sym, st, out):
            why.append(
                f"separate rising/falling constants {out.diag['tm_rise']:.4g} s / {out.diag['tm_fall']:.4g} s fit "
                "better than one"
            )
        if why:
            tm_obs["rel_std_pct"] = 100 * sym.std / sym.tm
            tm_obs["reason"] = "σ includes the model-structure term: " + "; ".join(why)
        out.put("tm", sym.tm, sym.std)
        out.obs["tm"] = tm_obs
        return sym, tm_pair, sym.unc or thrust_uncertainty(prob, tm_pair, [], st)
    asym = _asymmetric_step(prob, sym, tm_obs, st, out)
    tm_pair = (asym.tm_rise, asym.tm_fall)
    return sym, tm_pair, asym.unc or thrust_uncertainty(prob, tm_pair, [], st)


def _dead_time_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: _Collected) -> bool:
    """Model-structure check of the lag model: a dead time d between the commands and the
    accelerometer (a logging or sensor time offset, which T_m absorbs otherwise; 0 <= d <=
    `dead_time_max`) fitted jointly with T_m. When the data support it (likelihood ratio at
    the residual's effective sample count, one-sided 1 % level, chi-bar² with half its mass at
    d = 0), the reported lag-only values stay (the paper's model, and the effective lag a
    controller sees) and the difference Δθ between the two models' T_m and thrust
    coefficients enters their covariance (Δθ Δθᵀ: the model-structure uncertainty, which
    the roll/pitch and yaw steps propagate like the rest); a note says so in words. Returns
    whether it did."""
    lo, hi = _support(st)
    n_eff = sym.n / sym.tau_int
    sse = lambda x: prob.sse((x[0], x[0]), x[1])  # blocked QR: no (N, P) design matrix per evaluation
    nlp = lambda x: 0.5 * n_eff * math.log(sse(x)) + float(_neg_log_prior(x[0], st.tm_prior))
    res = optimize.minimize(
        nlp,
        np.array([sym.tm, 0.25 * st.dead_time_max]),
        method="L-BFGS-B",
        bounds=[(lo, hi), (0.0, st.dead_time_max)],
    )
    tm_d, dead = float(res.x[0]), float(res.x[1])
    lr = max(0.5 * n_eff * math.log(sym.unc.fit.sse / sse(res.x)), 0.0)
    p = 0.5 * float(special.chdtrc(1, 2 * lr))
    out.diag.update(dead_time=dead, dead_time_tm=tm_d, dead_time_p=p)
    if not p < 0.01:
        return False
    x_d = prob.fit((tm_d, tm_d), dead)[0].x
    delta = np.concatenate([[sym.tm - tm_d], sym.unc.fit.x - x_d])
    sym.unc.cov = sym.unc.cov + np.outer(delta, delta)
    sym.std = float(sym.unc.std[0])
    out.notes.append(
        f"Residuals are structured: a dead time of {1e3 * dead:.1f} ms between the motor commands and the accelerometer "
        f"fits the thrust flight better (likelihood ratio {lr:.3g}, p = {p:.2g}); with it T_m would be {tm_d:.4g} s "
        f"instead of {sym.tm:.4g} s. T_m is reported as the effective command-to-acceleration lag (the paper's model) "
        "and σ of T_m, the thrust curve and what rests on them includes the difference between the two models."
    )
    return True


#: `_asymmetry_check`'s screen: the largest relative split of its two evaluations, and the
#: p-value above which the full two-constant fit is skipped.
ASYM_SCREEN_STEP = 0.1
ASYM_SCREEN_P = 0.2


def _asymmetry_check(prob: ThrustProblem, sym: TmSearch, st: DelaySettings, out: _Collected) -> bool:
    """Model-structure check of the symmetric lag: separate rising and falling constants (motors
    that spin up faster than they spin down, RLtools' and RotorS's motor models) fitted from the
    symmetric optimum. When the data support them (likelihood ratio at the residual's effective
    sample count, 1 % level, χ² with one degree of freedom), the reported symmetric values stay
    (the paper's model) and, as in `_dead_time_check`, the difference Δθ between the two models'
    T_m (the constants' mean) and thrust coefficients enters their covariance (Δθ Δθᵀ), which
    the roll/pitch and yaw steps propagate; a note says so. On simulated motors rising in 55 ms
    and falling in 85 ms the symmetric T_m was 6.7 % below their mean (7σ) and I_xx, I_yy
    3.6 % high (3σ). A screen of two evaluations decides first whether the full fit is worth
    it (`ASYM_SCREEN_P`; the screen's p-value is the diagnostic then). Returns whether it
    widened σ."""
    n_eff = sym.n / sym.tau_int
    # screen (two evaluations, each ~7 symmetric ones): the split alone, T_m held, through a
    # parabola in δ = (T_rise - T_fall) / (2 T_m) stepped a few of T_m's own σ (a wide step's
    # vertex reads the SSE's skew as a split when an hour of samples makes every SSE difference
    # count); the full fit can only fit better, so a screen far from significance ends the check
    s0, h = sym.unc.fit.sse, float(np.clip(3.0 * sym.std / sym.tm, 0.002, ASYM_SCREEN_STEP))
    sp, sm = prob.sse((sym.tm * (1 + h), sym.tm * (1 - h))), prob.sse((sym.tm * (1 - h), sym.tm * (1 + h)))
    curv = (sp - 2 * s0 + sm) / h**2
    d0 = float(np.clip(-(sp - sm) / (2 * h * curv), -0.5, 0.5)) if curv > 0 else (h if sp < sm else -h)
    best = min(sp, sm, s0 - (sp - sm) ** 2 / (8 * h**2 * curv) if curv > 0 else s0)
    screen = float(special.chdtrc(1, max(n_eff * math.log(s0 / max(best, 1e-300)), 0.0)))
    if screen > ASYM_SCREEN_P:
        out.diag.update(asym_p=screen, asym_supported=False)
        return False
    tr, tf, _, _ = _rise_fall_fit(prob, sym, st, sym.tm * np.array([1 + d0, 1 - d0]))  # from the screen's split
    fit = prob.fit((tr, tf))[0]
    lr = max(0.5 * n_eff * math.log(sym.unc.fit.sse / fit.sse), 0.0)
    p = float(special.chdtrc(1, 2 * lr))
    out.diag.update(tm_rise=tr, tm_fall=tf, asym_p=p, asym_supported=p < 0.01)
    if not p < 0.01:
        return False
    delta = np.concatenate([[sym.tm - 0.5 * (tr + tf)], sym.unc.fit.x - fit.x])
    sym.unc.cov = sym.unc.cov + np.outer(delta, delta)
    sym.std = float(sym.unc.std[0])
    out.notes.append(
        f"Residuals are structured: the motors rise in {tr:.4g} s and fall in {tf:.4g} s (likelihood ratio {lr:.3g}, "
        f"p = {p:.2g}) rather than following one lag of {sym.tm:.4g} s. T_m and the thrust curve are reported for the "
        "one lag (the paper's model), and σ of them and of what rests on them includes the difference between the two "
        "models; --asymmetric-tm fits the two constants instead."
    )
    return True


def _asymmetric_step(
    prob: ThrustProblem, sym: TmSearch, tm_obs: dict[str, Any], st: DelaySettings, out: _Collected
) -> AsymSearch:
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
    return asym


def _hover_grad(prob: ThrustProblem, x: np.ndarray, hover: float, exponents: tuple[int, ...]) -> np.ndarray:
    """Gradient of the hover command with respect to the thrust coefficients `x` (implicit
    function theorem on mean thrust(hover) = weight), for its first-order σ."""
    lmap = prob.mean_curve_map()
    e = np.array(exponents, dtype=float)
    kbar = lmap @ x
    dfdu = float(np.sum(kbar * np.where(e > 0, e * hover ** np.maximum(e - 1, 0), 0.0)))
    return -(hover**e) / dfdu @ lmap


def _thrust_step(
    prob: ThrustProblem,
    sym: TmSearch,
    tm_pair: tuple[float, float],
    unc: ThrustUncertainty,
    st: DelaySettings,
    out: _Collected,
) -> Vehicle:
    """Step 2: the thrust curve and the hover command with their σ (marginal over T_m,
    `thrust_uncertainty`); returns the vehicle with the identified curve and motor lag."""
    fit, states = unc.fit, unc.states
    ccov = unc.coeff_cov
    std = np.sqrt(np.clip(np.diag(ccov), 0.0, None))
    gb = unc.bias_grad[len(unc.dirs) :]
    beta, beta_sd = st.acc_bias_z
    bias_words = (
        f"the accelerometer z bias {beta:g} ± {beta_sd:g} m/s² (setting acc_bias_z): airborne flights cannot "
        "separate it from the constant thrust term K_0"
    )

    def rests_on_bias(g: float, sd: float) -> bool:  # the bias moves the value by > 0.1 of its other σ
        return abs(g) * max(beta_sd, abs(beta)) > 0.1 * math.sqrt(max(sd**2 - (g * beta_sd) ** 2, 0.0))

    for k, nm in enumerate(prob.names()):
        if rests_on_bias(gb[k], std[k]):
            for name in (
                [f"thrust_c0_m{i + 1}" for i in range(prob.vehicle.n_rotors)]
                if prob.shared_c0 and nm == "thrust_c0"
                else [nm]
            ):
                out.assumed[name] = bias_words
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
    grad = _hover_grad(prob, fit.x, hover, st.exponents)
    hover_std = float(math.sqrt(max(grad @ ccov @ grad, 0.0)))
    out.put("hover_cmd", hover, hover_std)
    if rests_on_bias(float(grad @ gb), hover_std):
        out.assumed["hover_cmd"] = bias_words
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
        f"residual autocorrelation at the optimum (integrated autocorrelation time {sym.tau_int:.1f} samples)."
    )
    if sym.tau_int > STRUCTURED_TAU:
        out.notes.append(
            f"Residuals are structured: the thrust residual at the optimum is correlated over {sym.tau_int:.0f} samples "
            "where the lag model leaves white sensor noise, so the model misses something (e.g. a time offset "
            "between the motor commands and the IMU, which T_m absorbs: T_m is then the effective command-to-"
            "acceleration lag; or motors that differ). σ includes the residual's correlation, not such a bias."
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
    roll_pitch: list[Flight], ident: Vehicle, unc: ThrustUncertainty, st: DelaySettings, out: _Collected
) -> dict[str, Any]:
    """Step 3: I_xx, I_yy by the chosen parameterization (eq. 80-82), σ with the thrust
    parameters' uncertainty propagated (`_inertia_sigma`); returns `roll_pitch_inertia`'s fits
    and choice, plus "grad" (∂I/∂θ) and "lengths" for the yaw step."""
    ang = angular_columns(roll_pitch, ident, unc.pair, st, "roll/pitch", unc.thrust_derivs)
    with _naming(roll_pitch, "fly roll and pitch doublets in that window"):
        rp = roll_pitch_inertia(ang, st)
    chosen, fits = rp["chosen"], rp["fits"]
    out.settings["inertia_param_chosen"] = chosen
    ixx, iyy = (fits[chosen][k][0] for k in (0, 1))
    cpl = _coupling(ixx, iyy, st.izz_ratio[0] * 0.5 * (ixx + iyy)) * st.gyroscopic
    rp["grad"] = _inertia_grad(ang, chosen, cpl)
    rp["lengths"] = [len(r["t"]) for r in ang.raw]
    rp["theta_cov"] = unc.cov
    eiv = [
        _eiv_bracket(ang.acc[:, k], ang.tau[:, k] - cpl[k] * ang.prec[:, k], fits[chosen][k][0], "torque")
        for k in (0, 1)
    ]
    rp["eiv_var"] = np.array([e[0] ** 2 for e in eiv])
    for k, nm in enumerate(("I_xx", "I_yy")):
        v = fits[chosen][k][0]
        s = _inertia_sigma(rp, np.eye(2)[k], st)
        out.put(nm, v, s)
        out.obs[nm] = {"identifiable": eiv[k][2], "rel_std_pct": 100 * s / v, "reason": eiv[k][1]}
        if not eiv[k][2]:
            out.obs[nm]["advice"] = EIV_ADVICE
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
    unc: ThrustUncertainty,
    rp: dict[str, Any],
    st: DelaySettings,
    out: _Collected,
) -> None:
    """Step 4: I_zz from the assumed ratio (eq. 93-94) and, with a yaw flight, K_tau by eq. 95-96
    scaled by it; their σ carry the ratio's own spread and both are marked assumed. The joint
    estimate (eq. 73-76) is reported as a check, not used: where the yaw flight precesses
    enough to ground I_zz, it is still a direct parameterization (torque regressed on angular
    acceleration), biased low by the noise in the angular acceleration (0.3-0.5 % = 5-8 σ on
    the simulator's `eschmann-crazyflie`, unbiased without sensor and thrust noise). The
    roll/pitch model is cross-validated on the yaw flight."""
    c, c_sd = st.izz_ratio
    ixx, iyy = out.est["I_xx"][0], out.est["I_yy"][0]
    izz = c * 0.5 * (ixx + iyy)
    izz_std = math.hypot(0.5 * (ixx + iyy) * c_sd, 0.5 * c * _inertia_sigma(rp, np.ones(2), st))
    ratio = f"the assumed yaw-inertia ratio C_xy->z = {c:g} ± {c_sd:.2g}"
    out.put("I_zz", izz, izz_std)
    out.assumed["I_zz"] = f"I_zz = C (I_xx + I_yy)/2 with {ratio} (Eschmann eq. 93-94)"
    missing = [k for k in ("I_xx", "I_yy") if not out.obs[k]["identifiable"]]
    out.obs["I_zz"] = {
        "identifiable": not missing,
        "rel_std_pct": 100 * izz_std / izz,
        "reason": f"from I_zz = {c:g} (I_xx + I_yy)/2 (eq. 93-94), not measured"
        + (f"; rests on {' and '.join(missing)}, which the flights do not identify" if missing else ""),
    }
    if not yaw:
        out.notes.append("No yaw flight: K_tau was not identified.")
        return
    ang_y = angular_columns(yaw, ident, unc.pair, st, "yaw", unc.thrust_derivs)
    with _naming(yaw, "fly yaw doublets in that window"):
        ktau, ktau_std, yfit = _k_tau(ang_y, (ixx, iyy), rp, st)
    out.put("k_tau", ktau, ktau_std)
    out.assumed["k_tau"] = f"the yaw flight measures I_zz / K_tau only (eq. 95-96); scaled by I_zz from {ratio}"
    _, eiv_words, eiv_ok = yfit["eiv"]
    out.obs["k_tau"] = {
        "identifiable": eiv_ok and not missing,
        "rel_std_pct": 100 * ktau_std / abs(ktau),
        "reason": f"scale set by the assumed I_zz ratio (eq. 93); {eiv_words}"
        + (f"; rests on {' and '.join(missing)}, which the flights do not identify" if missing else ""),
    }
    if not eiv_ok:
        out.obs["k_tau"]["advice"] = "fly sharper yaw doublets (larger yaw command steps)"
    sub = _subsample(len(ang_y.drag))
    out.diag.update(
        yaw_drag=ang_y.drag[sub], yaw_lhs=yfit["lhs"][sub], yaw_r2=yfit["r2"], k_tau=ktau, yaw_cond=yfit["cond"]
    )
    _joint_note(ang_y, rp, st, out)
    _cross_validate(ang_y, rp, st, out)


def _joint_note(ang_y: Angular, rp: dict[str, Any], st: DelaySettings, out: _Collected) -> None:
    """The joint estimate (eq. 73-76) as a diagnostic and a note."""
    joint = _joint(ang_y, st, rp["theta_cov"])
    out.diag["joint"] = joint
    c, c_sd = st.izz_ratio
    if joint["grounded"]:
        out.notes.append(
            f"Joint estimate (eq. 73-76, precession grounds I_zz): I_xx {joint['x'][0]:.4g}, I_yy "
            f"{joint['x'][1]:.4g}, I_zz {joint['x'][2]:.4g} kg m² (%σ {joint['rel_std_pct'][2]:.2g}), "
            f"K_tau {joint['x'][3]:.4g} m; condition number {joint['cond']:.3g}. A check on C = {c:g} ± {c_sd:.2g}, "
            "not used: this direct fit is biased low by noise in the angular acceleration."
        )
    else:
        out.notes.append(
            f"Joint estimate (eq. 73-76) not usable: the yaw flight has too little precession to ground "
            f"I_zz (%σ {joint['rel_std_pct'][2]:.3g}, condition number {joint['cond']:.3g}); "
            f"I_zz uses C = {c:g} ± {c_sd:.2g} instead (Sec. III-A1; σ from the spread of Table II)."
        )


def _cross_validate(ang_y: Angular, rp: dict[str, Any], st: DelaySettings, out: _Collected) -> None:
    """Cross-validation of every roll/pitch model on the yaw flight(s)."""
    xval = {}
    for h in INERTIA_PARAMS:
        ixx, iyy = (v for v, _ in rp["fits"][h])
        xval[h] = predict_scores(ang_y, (ixx, iyy, st.izz_ratio[0] * 0.5 * (ixx + iyy)), st)
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


def _k_tau(
    ang: Angular, inertia: tuple[float, float], rp: dict[str, Any], st: DelaySettings
) -> tuple[float, float, dict[str, Any]]:
    """K_tau by least squares (eq. 95-96): I_zz ω̇_z + (I_yy - I_xx) ω_x ω_y = K_tau Σ_i d_i f_i,
    I_zz = C (I_xx + I_yy)/2. σ to first order in everything it rests on, the three sources
    independent: the yaw flight's noise (influence series), the roll/pitch flights' (through
    I_xx, I_yy: ∂K/∂I_zz = Σ d ω̇_z / Σ d², ∂K/∂(I_yy - I_xx) = Σ d p_z / Σ d²; their
    errors-in-variables brackets included), the thrust parameters' (through the yaw torque d
    and through I_xx, I_yy), the ratio C's, and the yaw fit's own errors-in-variables bracket
    (`_eiv_bracket`: d carries the rotor model's error, ω̇_z the gyro's and disturbances')."""
    c, c_sd = st.izz_ratio
    ixx, iyy = inertia
    izz = c * 0.5 * (ixx + iyy)
    d, acc, prec = ang.drag, ang.acc[:, 2], ang.prec[:, 2]
    lhs = izz * acc + (iyy - ixx) * prec
    fit = ols(d, lhs, what="yaw torque coefficient (eq. 95-96)")
    k = float(fit.x[0])
    lengths = [len(r["t"]) for r in ang.raw]
    var_yaw = _sd(_ols_influence(d, fit.residual)[:, 0], lengths, st) ** 2
    a_izz, a_diff = float(d @ acc) / float(d @ d), float(d @ prec) / float(d @ d)
    cx, cy = a_izz * 0.5 * c - a_diff, a_izz * 0.5 * c + a_diff  # ∂K/∂I_xx, ∂K/∂I_yy
    g_drag = np.array([-k * float(d @ s) / float(d @ d) for s in ang.sens[:, :, 3].T])  # ∂K/∂θ via d (scale)
    g_drag += np.array([float(s @ fit.residual) / float(d @ d) for s in ang.sens[:, :, 3].T])
    g = g_drag + cx * rp["grad"][0] + cy * rp["grad"][1]
    zx, zy = rp["influence"][rp["chosen"]]
    eiv = _eiv_bracket(d, lhs, k, "yaw drag torque")
    var = (
        var_yaw
        + _sd(cx * zx + cy * zy, rp["lengths"], st) ** 2
        + max(float(g @ rp["theta_cov"] @ g), 0.0)
        + (a_izz * 0.5 * (ixx + iyy) * c_sd) ** 2
        + float(np.array([cx, cy]) ** 2 @ rp["eiv_var"])
        + eiv[0] ** 2
    )
    return k, math.sqrt(var), {"lhs": lhs, "r2": r2_from_sse(fit.sse, lhs), "cond": fit.cond, "eiv": eiv}


def _joint_system(ang: Angular, dtau: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 73-76 with a common K_tau, rows x, y, z of J ω̇ + ω x (J ω) - K_tau Σ d_i f_i e_z = R_pf f
    interleaved per sample (3n, 4) and the torque side (3n,); `dtau` (n, 4) is added to the
    torques and the yaw drag column (a perturbation of the thrust parameters)."""
    a, p = ang.acc, ang.prec
    tau, drag = (ang.tau, ang.drag) if dtau is None else (ang.tau + dtau[:, :3], ang.drag + dtau[:, 3])
    z = np.zeros(len(a))
    rows = [
        np.column_stack([a[:, 0], -p[:, 0], p[:, 0], z]),
        np.column_stack([p[:, 1], a[:, 1], -p[:, 1], z]),
        np.column_stack([-p[:, 2], p[:, 2], a[:, 2], -drag]),
    ]
    return np.stack(rows, axis=1).reshape(-1, 4), tau.reshape(-1)


def _joint(ang: Angular, st: DelaySettings, theta_cov: np.ndarray | None = None) -> dict[str, Any]:
    """The joint estimate of eq. 73-76 and its σ: the yaw flight's noise (influence series over
    the three rows of each sample, `_hac_cov`) plus, given θ's covariance, the thrust
    parameters' (∂x/∂θ by central differences through the torques, `Angular.sens`)."""
    big_a, b = _joint_system(ang)
    try:
        fit = ols(big_a, b, what="joint inertia / K_tau (eq. 73-76)")
    except ExcitationError as e:
        return {
            "grounded": False,
            "x": [float("nan")] * 4,
            "std": [float("nan")] * 4,
            "rel_std_pct": [float("inf")] * 4,
            "cond": float("inf"),
            "error": str(e),
        }
    lengths = [len(r["t"]) for r in ang.raw]
    cov = _hac_cov(_ols_influence(big_a, fit.residual, 3), lengths, st.autocorr_correction)
    if theta_cov is not None and ang.sens is not None:
        g = np.zeros((4, ang.sens.shape[1]))
        for j in range(ang.sens.shape[1]):
            d = ang.sens[:, j, :]
            nd = float(np.linalg.norm(d))
            if nd == 0:
                continue
            eps = 1e-4 * float(np.linalg.norm(ang.tau)) / nd
            up, dn = (np.linalg.lstsq(*_joint_system(ang, e * d), rcond=None)[0] for e in (eps, -eps))
            g[:, j] = (up - dn) / (2 * eps)
        cov = cov + g @ theta_cov @ g.T
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(fit.x != 0, 100.0 * std / np.abs(fit.x), np.inf).tolist()
    grounded = bool(fit.x[2] > 0 and rel[2] < st.joint_max_rel_std and fit.x[3] != 0)
    return {"grounded": grounded, "x": fit.x.tolist(), "std": std.tolist(), "rel_std_pct": rel, "cond": fit.cond}
