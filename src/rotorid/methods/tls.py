"""IDIM-TLS: offline identification of the propeller coefficients and the rigid-body
parameters of a multirotor from flight data (Six et al., 002_..., Sections II-IV).

Per sample the Newton-Euler equations about the body origin (eq. 1-2) with the rotor wrench
(eq. 8-9, any rotor layout from the `Vehicle`) give six rows of the IDIM (eq. 10-11)

    m D_m + D chi = D_k chi_k,   chi_k = [k_t, k_d],
    chi = [ms_x, ms_y, ms_z, I_xx, I_yy, I_zz, I_xy, I_xz, I_yz]   (inertia at the origin),

sampled, parallel-filtered, decimated and stacked into W_t chi_t = rho (eq. 12-13), solved
by TLS with the mass known (eq. 13-17, `regression.tls`), with standard deviations (eq.
18-22), essential-parameter selection, per-wrench-row weighting, and the combined
identification of several mass configurations sharing chi_k (eq. 24-25). The final fit is
compensated for the sensor noise in the regressors (errors in variables, `TlsSettings.eiv`).

Motion comes from the IMU (specific force + gyro, Sec. III-C1; the IMU lever arm is
removed) or from motion capture (position and Bryant angles differentiated twice, eq. 3-5).
Rotor terms are the commands u (f = k_t u^2, the paper), optionally passed through the
first-order motor lag with a given T_m, or measured rotor speeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from rotorid.errors import ExcitationError, RotoridError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY, quat_to_bryant
from rotorid.identified import with_vehicle
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA, MOTOR_SPREAD
from rotorid.methods.regression import (
    Fit,
    bc_hac_cov,
    bias_compensated,
    block_weighted_tls,
    compress,
    one_blas_thread,
    tls,
    tls_hac_cov,
    weighting_collapsed,
)
from rotorid.motion import (
    MIN_PIECE,
    WRENCH,
    Motion,
    MotionSettings,
    airborne_pieces,
    body_rate,
    body_velocity,
    drag_regressor,
    motion,
    pose_lag,
    rel_error_norms,
    rotor_terms,
    speed_source,
)
from rotorid.motion import MIN_RATE_HZ as MIN_RATE_HZ  # the methods' rate floors are read by `excitation`
from rotorid.result import ACC_BIAS_KEY, Estimate, Result, build_result
from rotorid.signal import BLOCK, block_rows, butter_filtfilt, cached_sos, derivative, filtfilt_blocks
from rotorid.vehicle import Vehicle

#: Largest IMU lag behind the rotor signals (s) `TlsSettings.imu_delay` takes or searches: several
#: times the group delay of a flight controller's gyro low-pass (√2 / (2π f_c) = 7.5 ms for a
#: second-order Butterworth at PX4's default IMU_GYRO_CUTOFF of 30 Hz).
MAX_IMU_DELAY = 0.025
#: Rigid-body unknowns chi of eq. (10), in the paper's order.
CHI = ("ms_x", "ms_y", "ms_z", "I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")
#: Propeller unknowns chi_k.
CHI_K = ("k_t", "k_d")
#: The rotor-drag unknown (`TlsSettings.rotor_drag`, `motion.drag_regressor`): the last column of W_t.
K_RD = "k_rd"


@dataclass(frozen=True)
class TlsSettings:
    """Options of the IDIM-TLS method. None means "chosen from the data" (the resolved value
    is recorded in `Result.settings`).

    - `source`, `tm`, `band`, `speed`, `parallel_cutoff`, `trim`, `order`, `mocap_delay`: how
      motion and rotor terms are measured and filtered (`rotorid.motion.MotionSettings`);
      `parallel_cutoff` is the low-pass applied to every column of W_t before decimation.
    - `r_sigma`: essential parameters are kept when max/min %sigma < r_sigma (Sec. III-B).
    - `cancel_z`: a parameter is cancelled only while its estimate is within `cancel_z` σ of
      zero (%σ > 100 / cancel_z; eq. 20's σ, as the ranking): Six et al. cancel parameters that
      "have no significant contribution in the dynamic model", but r_σ = 250 against k_t's %σ
      (0.02-0.05 %) also cancelled ms_z and I_xz at 20-30σ on the simulated motion-capture
      flights, and setting a parameter that is not zero to zero biases the others by its
      omitted-variable bias (Greene, Econometric Analysis, Sec. 4.3.2), the same in every
      flight: I_xx, I_yy -0.4 %, com_z -1.8 %, k_t -0.05 %, each about its σ (which
      `cancellation_var` widened to cover it). The default 2 is a t test at the 5 % level, the
      significance the essential-parameter literature asks of a parameter's contribution
      (Pham & Gautier 1991: the residual's increase on cancelling it); on the simulated
      flights 5 kept fewer (com_y@A then carries a +3.7 % cancellation bias in the
      motion-capture fit). Two exceptions keep the paper's rule: the yaw pair (`YAW_PAIR`) and a
      fit whose block weighting has collapsed (`regression.weighting_collapsed`; k_d and I_zz
      -96 % at 1 %σ on a simulated configuration-A flight). A parameter cancelled this way comes
      back when leaving it out moves another beyond its σ in the bias-compensated final fit
      (`_restored`: on the motion-capture flights the products I_yz@A, I_xy@A, I_xy@B moved the
      rotors' gains and com_x@A by -0.4 %, -1.7σ̄, though each sat within 1.5σ of zero). inf
      is the paper's rule alone.
    - `weighted`: scale each wrench-row block by the inverse of its residual std.
    - `decimate`: default floor(fs / (2 parallel_cutoff)) (`TlsSettings.decimation`).
    - `essential`: run the essential-parameter selection (else keep all 2 + 9 C unknowns).
    - `acc_bias`: IMU source: estimate a constant accelerometer bias per airborne piece
      (`idim_rows`; on by default). In the paper's model (False) it is absorbed by k_t (a z
      bias b_z biases k_t by b_z / g: +0.24 %, 20σ, on six-config-a) and, through the
      essential-parameter selection, the first moments (a y bias made ms_z look inessential,
      and its cancellation moved I_xx, I_yy by -0.3 %, 4σ). With it, the estimate does not
      depend on a constant bias at all; k_t keeps only what the thrust variation tells (its %σ
      grows ~6x). The essential set is chosen with r_σ's denominator from the paper's model
      (`essential`), which keeps the parameter sets of Six et al. Tables I-II. The gyro bias
      (which Six et al. remove with an EKF) needs no state here: 0.5 deg/s, the mismatch
      scenarios' value, moves every parameter of six-config-a by at most 0.26σ (paired
      simulation, same noise streams), as it enters only the small gyroscopic terms.
    - `covariance`: "hac" (default) reports the sandwich of the final fit robust to rows
      correlated in time (`regression.tls_hac_cov`, `regression.bc_hac_cov`), its meat the
      equal-weighted cosine estimate of the scores' long-run variance (`regression.ewc_meat`).
      The twice-differentiated pose's noise dominates the motion-capture scores of k_t, the
      first moments and I_xx, I_yy (variance 20-160x their long-run variance, lag-1
      autocorrelation -0.55), and a lag window leaks it into its estimate at frequency 0: one
      rule-of-thumb Newey-West bandwidth for all made their σ 2-4x the scatter over seeds,
      each parameter's own Newey-West (1994) bandwidth still 1.2-1.7x (k_t 0.67, com_x@B 0.56
      SD/σ̄ on the A + B twin); "eq20" the paper's eq. 18-20 (independent rows). The
      essential-parameter selection always ranks by eq. 20's %σ, the scale the paper's
      r_σ = 250 was set on.
    - `motor_spread`: assumed relative 1σ spread of the rotors' gains about their mean (one
      k_t, k_d for all rotors is the paper's model, eq. 8-9), used where the gains are not
      estimated (`rotor_gains`). A rotor stronger by ε_i adds the wrench ε_i k_t u_i² [a_i;
      r_i x a_i]: in hover its moment equals a CoM shift Δc = Σ ε_i r_i / n (horizontal), and
      in manoeuvres it scales the roll/pitch input (I_xx, I_yy). Its effect enters σ as
      σ_ε² J (I - 11ᵀ/n) Jᵀ, J_i = ∂χ/∂ε_i of the final fit (the common mode is k_t itself);
      a parameter whose variance is mostly this term is labelled assumed. 0 declares the
      rotors equal (nothing assumed, no gain estimated). Default `MOTOR_SPREAD` (measured on
      a real Crazyflie).
    - `rotor_gains`: estimate each rotor's own thrust coefficient k_t g_i (on by default;
      `_rotor_gains`). The hover moment of the gains equals a CoM shift, but the force rows
      see every rotor's thrust through the accelerometer (m s_z = k_t Σ g_i u_i²) and attitude
      manoeuvres drive the u_i² apart, so a flight that rolls and pitches separates them; the
      moment rows then separate the CoM. Per configuration (a battery or propeller change
      between flights changes them): the first one's gains average 1 (k_t is its mean rotor),
      the others' are free. On six-config-a-mismatch (±5 % gains, 20 seeds, A and A + B) each
      k_t_mI comes out within 0.15 % on average (σ̄ 0.07-0.15 %, ±2σ 95-100 %), and I_xx, I_yy,
      com, k_t scatter 0.8-1.1 σ̄ (the assumed spread's σ made k_t and com_z 0.3-0.5, labelled
      assumed). With identical rotors (six-config-a, 30 seeds, IMU, A) every parameter, gains
      included, scatters 0.74-1.18 σ̄ (±2σ 87-100 %; 0.02-0.2 with the spread assumed); from
      motion capture the gains of rotors 1 and 3 of A came out -0.018/+0.021 % (±1σ̄) and com_x@A
      -0.62 % (-1.8σ̄) while the products that move them were cancelled; restored (`_restored`),
      -0.001/+0.004 % and -0.08 % (-0.27σ̄, 100 % within 2σ). Where a
      rotor's gain is not known to better than `motor_spread` (σ ≥ it, or a degenerate fit: a
      flight without enough roll and pitch), the spread is assumed as before and a note says so.
    - `imu_delay`: s the IMU signals lag the rotor signals (the IMU source's motion; the mocap
      source's pose lag, `mocap_delay`, adds it when measured); None estimates it from the
      flights (`_estimate_imu_delay`). Eq. 10 pairs
      the rotor wrench with the motion at the same instant: a lag of the gyro/accelerometer
      pipeline (on-board filters, logging) behind the rotor channel biases every parameter
      (a 4 ms lag: k_t -0.6 %, k_d and I_zz -11 %, I_xx -0.8 % on six A + B). Default None
      (estimated; costs a few more fits); 0 is the paper's model.
    - `mocap_delay`: s the logged pose lags the rotor signals (the pose is read at t + delay):
      the motion of the mocap source, the velocity of the rotor-drag column. None (default)
      measures it where the flights log an accelerometer: the pose's lag behind the IMU
      (`motion.pose_lag`: the body-frame specific force of the differentiated pose against the
      accelerometer) plus the IMU's own lag (`imu_delay`; for the mocap source found by the
      IMU-source model of the same flights, `_imu_lag`, where `imu_delay` is None); 0 where it
      cannot be timed (`identify` measures it; `idim_rows` called alone reads None as 0).
      Unaligned, the drag's velocity lags the rotor wrench it is paired with: with rotor drag
      0.3 1/s, a 5 ms pose lag moved ms_z by -4.3 % on a noise-free six-config-a flight (-0.04 %
      aligned), -1.6σ̄ on average on the mismatch flights.
    - `yaw_moment`: estimate a constant yaw moment per airborne piece (on by default): one
      nuisance column per piece in the M_z rows, projected out by centring those rows as the
      accelerometer bias centres the force rows (`idim_rows`). Unequal rotors (`motor_spread`)
      make Σ ±k_d(1 + ε_i) u_i² non-zero at hover, a constant the paper's model (eq. 9) hands
      to k_d and I_zz. With it, k_d and I_zz rest only on the yaw moment's variation.
    - `rotor_drag`: model the rotor drag (on by default, when every flight logs its attitude
      and a position or velocity): each rotor feels the in-plane force -k_rd u_i P_i v_i
      against its hub's airspeed v_i (still air), with its moment about the origin
      (`motion.drag_regressor`); k_rd is one more unknown of W_t.
    - `eiv`: errors in variables. The sensor noise of the gyro (differentiated into ω̇) and of the
      accelerometer sits in the regressors, which biases TLS and least squares alike (toward
      zero for I_zz/k_d, ms_z, k_t on six-config-a: -0.4 %, +2.6 %, -0.06 %, 1.5-2.5σ). With it
      (default) the final fit is bias-compensated least squares (`regression.bias_compensated`)
      with the noise moment each row's columns carry, measured from the flight's own noise
      floor above the rigid-body band (`_noise_moment`); the essential set is still chosen by
      the paper's TLS. σ carries the doubt about those floors (`floor_var`): their sampling
      error (~2.7 % on a 75 s flight at 200 Hz), or, where a sensor's or logger's low-pass (or
      vibration) makes the spectrum just below where they are read differ from them, that
      level (`_floor_doubt`; every real log in ../shared/data does, by 4.6x to 60,000x; the
      simulated flights do not), and a note names it when it is a quarter of a parameter's
      variance. A disturbance torque (thrust fluctuation) is an error in ω̇ no floor shows: its
      level is read from the moment rows' residuals (`_disturbance`) and compensated alike,
      its doubt in σ. False: the paper's TLS throughout.
    """

    source: str = "imu"
    tm: float | None = None
    r_sigma: float = 250.0
    cancel_z: float = 2.0
    band: tuple[float, float] | None = None
    weighted: bool = True
    speed: str = "auto"
    parallel_cutoff: float | None = None
    decimate: int | None = None
    trim: float | None = None
    order: int = 4
    essential: bool = True
    mocap_delay: float | None = None
    max_weight_iter: int = 20
    covariance: str = "hac"
    acc_bias: bool = True
    motor_spread: float = MOTOR_SPREAD
    rotor_gains: bool = True
    imu_delay: float | None = None
    yaw_moment: bool = True
    rotor_drag: bool = True
    eiv: bool = True

    @property
    def centred(self) -> bool:
        """Whether the force rows are centred for an accelerometer bias (IMU source only)."""
        return self.acc_bias and self.source == "imu"

    @property
    def nuisance(self) -> bool:
        """Whether any row is centred for a nuisance constant (accelerometer bias, yaw moment)."""
        return self.centred or self.yaw_moment

    @property
    def motion(self) -> MotionSettings:
        """The motion-measurement part of the settings (defaults not yet filled)."""
        return MotionSettings(
            source=self.source,
            tm=self.tm,
            band=self.band,
            speed=self.speed,
            parallel_cutoff=self.parallel_cutoff,
            trim=self.trim,
            order=self.order,
            mocap_delay=self.mocap_delay,
        )

    def decimation(self, ms: MotionSettings) -> int:
        """Decimation factor for concrete motion settings: `decimate`, or floor(fs / (2 f_c))
        with f_c = `parallel_cutoff`.

        Every column of W_t is low-passed at f_c first, so the rows carry at most 2 f_c
        independent samples per second (Shannon): the autocorrelation of noise band-limited
        to f_c is sinc(2 f_c tau), zero first at tau = 1/(2 f_c). Keeping one row per 1/(2 f_c)
        leaves rows as nearly uncorrelated as the filter allows, which eq. 18 assumes; denser
        rows add no information but make eq. 20's sigma too small (at 200 Hz and 15 Hz the old
        fs/(5 f_c) = 2 kept rows whose residual autocorrelation time was 4-7 rows). Whatever
        correlation remains (model error, slow drifts) is left to the HAC covariance
        (`regression.tls_hac_cov`)."""
        return self.decimate or max(1, int(ms.fs / (2.0 * ms.parallel_cutoff)))

    def resolve(self, fs: float) -> dict[str, Any]:
        """Concrete settings for data sampled at `fs` Hz (every default filled in)."""
        if not self.r_sigma > 1:
            raise RotoridError(f"--r-sigma must exceed 1, got {self.r_sigma}")
        if not self.cancel_z > 0:
            raise RotoridError(f"--cancel-z must be positive, got {self.cancel_z}")
        if not 0 <= self.motor_spread < 1:
            raise RotoridError(f"--motor-spread must be a fraction in [0, 1), got {self.motor_spread}")
        if self.covariance not in ("hac", "eq20"):
            raise RotoridError(f"TLS covariance must be 'hac' or 'eq20', got '{self.covariance}'")
        if self.imu_delay is not None and not abs(self.imu_delay) <= MAX_IMU_DELAY:
            raise RotoridError(f"--imu-delay must be within ±{MAX_IMU_DELAY:g} s, got {self.imu_delay}")
        ms = self.motion.at(fs)
        return asdict(self) | ms.to_dict() | {"decimate": int(self.decimation(ms))}


def _skew(v: np.ndarray) -> np.ndarray:
    """[v]x for a stack of vectors, (N, 3, 3)."""
    z = np.zeros(len(v))
    x, y, w = v[:, 0], v[:, 1], v[:, 2]
    return np.stack([np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2)


def _inertia_map(v: np.ndarray) -> np.ndarray:
    """L(v) with I v = L(v) [I_xx, I_yy, I_zz, I_xy, I_xz, I_yz], (N, 3, 6)."""
    z = np.zeros(len(v))
    a, b, c = v[:, 0], v[:, 1], v[:, 2]
    return np.stack(
        [np.stack([a, z, z, b, c, z], -1), np.stack([z, b, z, a, z, c], -1), np.stack([z, z, c, z, a, b], -1)], -2
    )


def observation(mo: Motion, vehicle: Vehicle) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-sample IDIM matrices of eq. (10): D_k (N, 6, 2), D (N, 6, 9), D_m (N, 6).

    Force rows: m s + [omega_dot]x ms + [omega]x[omega]x ms = f; moment rows:
    L(omega_dot) I + [omega]x L(omega) I - [s]x ms = tau (eq. 1-2 about the origin, with
    s = a_d - R^-1 g). Rotor wrench for any layout: f = k_t sum u_i^2 a_i, tau = k_t sum
    u_i^2 r_i x a_i + k_d sum torque_dir_i u_i^2 a_i (eq. 8-9 generalised).
    """
    return _rotor_matrix(mo.u, vehicle), *_motion_matrices(mo)


def _rotor_matrix(u: np.ndarray, vehicle: Vehicle) -> np.ndarray:
    """D_k (N, 6, 2) of `observation`: the rotor wrench per unit k_t, k_d."""
    u2 = u**2
    a, r, sd = vehicle.axes, vehicle.positions, vehicle.torque_dirs
    dk = np.zeros((len(u), 6, 2))
    dk[:, :3, 0] = u2 @ a
    dk[:, 3:, 0] = u2 @ np.cross(r, a)
    dk[:, 3:, 1] = u2 @ (sd[:, None] * a)
    return dk


def _motion_matrices(mo: Motion) -> tuple[np.ndarray, np.ndarray]:
    """D (N, 6, 9) and D_m (N, 6) of `observation`: the rigid body's side."""
    n = len(mo.t)
    w = _skew(mo.omega)
    d = np.zeros((n, 6, 9))
    d[:, :3, :3] = _skew(mo.omega_dot) + w @ w
    d[:, 3:, :3] = -_skew(mo.s)
    d[:, 3:, 3:] = _inertia_map(mo.omega_dot) + w @ _inertia_map(mo.omega)
    return d, np.concatenate([mo.s, np.zeros((n, 3))], axis=1)


#: Columns of `_columns` that depend only on the motion (D, D_m): the rotor terms and the
#: rotor drag (D_k and the drag column) are the rest.
MOTION_COLUMNS = slice(12, 72)


@dataclass(frozen=True)
class _Rotor:
    """The rotor side of a piece's IDIM, read a block of rows at a time (`rows`) so that nothing
    of the whole piece is copied: the rotor terms u (N, M) scaled by the rotor gains (`idim_rows`'
    `gain`; None: 1) and, with the IMU's `lag` (s), read at the IMU's instant t - lag by linear
    interpolation, the rotor drag's body velocity `vel` (N, 3; None without the drag) alike;
    `omega` the body rate the drag's hub velocities need (the motion's, at the IMU's instant)."""

    t: np.ndarray
    u: np.ndarray
    vel: np.ndarray | None
    omega: np.ndarray | None
    gain: np.ndarray | None
    lag: float

    def rows(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray | None]:
        """u and vel of rows a..b-1: the numbers of scaling and interpolating the whole piece (the
        interpolation reads the samples around t[a:b] - lag, two more either side)."""
        lo, hi = a, b
        if self.lag:
            tq = self.t[a:b] - self.lag
            lo = max(int(np.searchsorted(self.t, tq[0])) - 2, 0)
            hi = min(int(np.searchsorted(self.t, tq[-1])) + 2, len(self.t))
        u = self.u[lo:hi] if self.gain is None else self.u[lo:hi] * np.sqrt(self.gain)
        vel = None if self.vel is None else self.vel[lo:hi]
        if not self.lag:
            return u, vel
        t, m = self.t[lo:hi], u.shape[1]
        both = np.column_stack([np.interp(tq, t, c) for c in (u.T if vel is None else np.hstack([u, vel]).T)])
        return both[:, :m], (None if vel is None else both[:, m:])


def _columns(mo: Motion | None, vehicle: Vehicle, a: int, b: int, rotor: _Rotor, part: str = "all") -> np.ndarray:
    """Samples a..b-1 of the IDIM as (b - a, 72) columns [D_k, D, D_m] (`observation`) of the
    motion `mo` and the rotor terms of `rotor`, with the six rows of the rotor-drag column
    (`motion.drag_regressor`) appended when `rotor` has a velocity; `part` "motion" gives only
    [D, D_m] (`MOTION_COLUMNS`), "rotor" only [D_k, drag] (`mo` unused: may be None)."""
    if part == "motion":
        d, dm = _motion_matrices(Motion(mo.t[a:b], mo.omega[a:b], mo.omega_dot[a:b], mo.s[a:b], mo.u[a:b]))
        return np.concatenate([d.reshape(b - a, -1), dm], axis=1)
    u, vel = rotor.rows(a, b)
    cols = [_rotor_matrix(u, vehicle).reshape(b - a, -1)]
    if part == "all":
        d, dm = _motion_matrices(Motion(mo.t[a:b], mo.omega[a:b], mo.omega_dot[a:b], mo.s[a:b], u))
        cols += [d.reshape(b - a, -1), dm]
    if vel is not None:
        cols.append(drag_regressor(u, vel, rotor.omega[a:b], vehicle))
    return np.concatenate(cols, axis=1)


def _filtered_rows(
    mo: Motion | None,
    vehicle: Vehicle,
    ms: MotionSettings,
    sel: np.ndarray,
    rotor: _Rotor,
    motion_part: np.ndarray | None = None,
) -> np.ndarray:
    """Rows `sel` (sorted) of the IDIM columns low-passed in parallel at `ms.parallel_cutoff`
    (Sec. III-A): `butter_filtfilt` of the full-rate (N, 72 or 78) matrix, computed a block at a
    time (`signal.filtfilt_blocks`, the same numbers) so that matrix is never held. Each column
    is filtered on its own, so `motion_part`, the `MOTION_COLUMNS` of an earlier call on the same
    motion, is reused as it is and only the rotor columns are computed."""
    n = len(rotor.t)
    sos = cached_sos(ms.fs, ms.parallel_cutoff, ms.order)
    out = np.empty((len(sel), 72 if rotor.vel is None else 78))
    part, dest = (
        ("all", np.arange(out.shape[1])) if motion_part is None else ("rotor", _ROTOR_DEST[: out.shape[1] - 60])
    )
    if motion_part is not None:
        out[:, MOTION_COLUMNS] = motion_part
    for a, y in filtfilt_blocks(sos, lambda a, b: _columns(mo, vehicle, a, b, rotor, part), n, block_rows(n)):
        i, j = np.searchsorted(sel, [a, a + len(y)])
        out[i:j, dest] = y[sel[i:j] - a]
    return out


#: Where the columns of `_columns(part="rotor")` go among all of them (D_k, then the drag).
_ROTOR_DEST = np.r_[0:12, 72:78]


def _posed(flight: Flight) -> bool:
    """Whether the flight gives the velocity the rotor drag needs (`motion.body_velocity`)."""
    return flight.quat is not None and (flight.pos is not None or flight.vel is not None)


@dataclass(frozen=True)
class Rows:
    """The filtered, decimated IDIM of one configuration: time (n,), D_k (n,6,2), D (n,6,9),
    D_m (n,6), which piece each sample came from, (accelerometer-bias centring) the removed
    means of the force rows per piece, (pieces, 3, 12) as [D_k, D, D_m], the rotor-drag column
    (n, 6) with its removed force-row means (pieces, 3), and (yaw-moment centring) the removed
    means of the M_z row per piece, (pieces, 12) as [D_k, D, drag (0 without it)]."""

    t: np.ndarray
    dk: np.ndarray
    d: np.ndarray
    dm: np.ndarray
    piece: np.ndarray
    force_mean: np.ndarray | None = None
    drag: np.ndarray | None = None
    drag_mean: np.ndarray | None = None
    yaw_mean: np.ndarray | None = None


def idim_rows(
    flights: list[Flight],
    vehicle: Vehicle,
    settings: TlsSettings,
    acc_bias: np.ndarray | None = None,
    gain: np.ndarray | None = None,
    memo: dict | None = None,
) -> tuple[Rows, dict[str, Any]]:
    """Filtered, decimated IDIM of a configuration's flights (Sec. III-A): every column of
    D_k, D, D_m is low-passed in parallel (same zero-phase filter), decimated and trimmed at
    the piece ends. Returns the rows and the resolved settings.

    With `settings.acc_bias` (IMU source) every column of the three force rows is centred on
    its mean over each piece: an accelerometer bias b adds the constant m b to the force rows
    (m s_meas = m s + m b), i.e. one exactly known constant column per piece and force axis.
    In TLS, exactly known columns are projected out before the SVD (mixed LS-TLS, Van Huffel &
    Vandewalle 1991, Sec. 3.6.3); the projection onto the complement of a constant is the
    centring. The means are kept (`Rows.force_mean`) to give b = mean residual / m back.
    `acc_bias` (pieces, 3), when given, is subtracted from the specific force first, so the
    moment rows' -[s]x ms use it too (`identify` does this with the first pass's b). `gain`
    (n_rotors,) scales each rotor's wrench (u_i² -> gain_i u_i²; `motor_spread`).

    With `settings.yaw_moment` the M_z row is centred per piece alike (a constant yaw moment);
    with `settings.rotor_drag` the rotor-drag column (`motion.drag_regressor`) is built from the
    flights' velocity (`motion.body_velocity`), at the rotor terms' instant (left out when a
    flight logs no attitude or no position or velocity).

    `memo`, a dict that lives for one identification, keeps each piece's filtered motion columns
    (`MOTION_COLUMNS`) between calls that change only the rotor side (the IMU-lag search, the
    rotor gains of `motor_spread`): the same numbers, a fraction of the cost."""
    settings = replace(settings, rotor_drag=settings.rotor_drag and all(_posed(f) for f in flights))
    pieces = [p for f in flights for p in airborne_pieces(f)]
    if not pieces:
        srcs = ", ".join(f.source for f in flights) or "no flight"
        raise ExcitationError(f"{srcs}: no airborne piece of at least {MIN_PIECE:g} s; give longer windows of flight")
    cfg = settings.resolve(min(p.rate for p in pieces))
    ts, dks, ds, dms, drags, idx = [], [], [], [], [], []
    ncol = 78 if settings.rotor_drag else 72
    centre = _centred_columns(settings)
    means = np.zeros((len(pieces), ncol))  # pieces left out keep zero means
    for k, p in enumerate(pieces):
        own = settings.motion.at(p.rate)  # the slowest piece's band, cut-off and trim for all
        ms = replace(own, band=tuple(cfg["band"]), parallel_cutoff=cfg["parallel_cutoff"], trim=cfg["trim"])
        keep = np.flatnonzero((p.t >= p.t[0] + ms.trim) & (p.t <= p.t[-1] - ms.trim))
        # every d-th sample of the log's own time grid, so the rows do not depend on where a window starts
        sel = keep[np.round(p.t[keep] * own.fs).astype(np.int64) % settings.decimation(own) == 0]
        lag = (settings.imu_delay or 0.0) if settings.source == "imu" else 0.0
        cols = _piece_columns(p, vehicle, ms, sel, (gain, lag, settings.rotor_drag), memo, (flights, k, acc_bias))
        if cols is None:
            continue
        means[k, centre] = cols[:, centre].mean(axis=0)
        cols[:, centre] -= means[k, centre]
        ts.append(p.t[sel])
        dks.append(cols[:, :12].reshape(-1, 6, 2))
        ds.append(cols[:, 12:66].reshape(-1, 6, 9))
        dms.append(cols[:, 66:72])
        drags.append(cols[:, 72:])
        idx.append(np.full(len(sel), k))
    if not ts:
        raise ExcitationError("every airborne piece is shorter than the filter trim; give longer windows")
    cfg["speed_channel"] = speed_source(pieces[0], vehicle, settings.speed)
    force_mean, drag_mean, yaw_mean = _removed_means(means, settings)
    return Rows(
        np.concatenate(ts),
        np.concatenate(dks),
        np.concatenate(ds),
        np.concatenate(dms),
        np.concatenate(idx),
        force_mean,
        np.concatenate(drags) if settings.rotor_drag else None,
        drag_mean,
        yaw_mean,
    ), cfg


def _piece_columns(
    p: Flight,
    vehicle: Vehicle,
    ms: MotionSettings,
    sel: np.ndarray,
    rotor_side: tuple[np.ndarray | None, float, bool],
    memo: dict | None,
    piece: tuple[list[Flight], int, np.ndarray | None],
) -> np.ndarray | None:
    """`_filtered_rows` of the airborne piece `p` (None when `sel` keeps fewer than two rows):
    its motion less the accelerometer bias of `piece` (flights, index, biases or None), and the
    rotor side `rotor_side` (gains, the IMU's lag, whether the rotor drag is modelled; `_Rotor`).
    `memo` keeps the motion columns, which depend on neither (`idim_rows`); when it holds them,
    the motion is not computed again (the rotor drag's body rate alone). The key is what those
    columns depend on: the flights (alive for the whole identification), the motion settings
    (the pose's lag only where the motion is the pose's), the rows kept and the bias."""
    flights, k, biases = piece
    bias = None if biases is None else biases[k]
    lag = ms.mocap_delay if ms.source == "mocap" else None
    what = (ms.source, ms.band, ms.parallel_cutoff, ms.trim, ms.order, ms.fs, lag)
    key = (tuple(map(id, flights)), k, what, sel.tobytes(), None if bias is None else bias.tobytes())
    cached = None if memo is None else memo.get(key)
    mo = motion(p, vehicle, ms) if cached is None else None  # checks the piece as every call did
    gain, lag, drag = rotor_side
    vel = body_velocity(p, ms) if drag else None
    if len(sel) < 2:
        return None
    if mo is not None and bias is not None:
        mo.s[:] -= bias  # in place: this call's own array
    u = rotor_terms(p, vehicle, ms.speed, ms.tm) if mo is None else mo.u
    omega = None if vel is None else (body_rate(p, ms) if mo is None else mo.omega)
    cols = _filtered_rows(mo, vehicle, ms, sel, _Rotor(p.t, u, vel, omega, gain, lag), cached)
    if memo is not None and cached is None:
        memo[key] = cols[:, MOTION_COLUMNS].copy()
    return cols


def _centred_columns(settings: TlsSettings) -> np.ndarray:
    """Columns of `_columns` centred per piece for a nuisance constant (`idim_rows`): [D_k, D,
    D_m, drag] of the three force rows (accelerometer bias), of the M_z row (yaw moment)."""
    force = [*range(6), *range(12, 39), *range(66, 69), *([72, 73, 74] if settings.rotor_drag else [])]
    yaw = [10, 11, *range(57, 66), 71, *([77] if settings.rotor_drag else [])]
    return np.array(force * settings.centred + yaw * settings.yaw_moment, dtype=np.int64)


def _removed_means(
    means: np.ndarray, settings: TlsSettings
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """The per-piece means `idim_rows` removed (pieces, 72 or 78 columns) as `Rows` keeps them:
    force rows [D_k, D, D_m] (pieces, 3, 12), their drag column (pieces, 3), the M_z row
    [D_k, D, drag] (pieces, 12); None for what was not centred."""
    force_mean = drag_mean = yaw_mean = None
    if settings.centred:
        m = means
        force_mean = np.concatenate([m[:, :6].reshape(-1, 3, 2), m[:, 12:39].reshape(-1, 3, 9), m[:, 66:69, None]], 2)
        drag_mean = m[:, 72:75] if settings.rotor_drag else None
    if settings.yaw_moment:
        drag = means[:, 77:78] if settings.rotor_drag else np.zeros((len(means), 1))
        yaw_mean = np.column_stack([means[:, 10:12], means[:, 57:66], drag])
    return force_mean, drag_mean, yaw_mean


def _names(configs: list[str], drag: bool = False) -> list[str]:
    single = len(configs) == 1
    return [*CHI_K, *(p if single else f"{p}@{c}" for c in configs for p in CHI), *([K_RD] if drag else [])]


def assemble(rows: dict[str, Rows], masses: dict[str, float]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """W_t of eq. (13) / eq. (25): columns [-W_k | W^A 0 .. | 0 W^B .. | W_rd | m W_m], rows
    grouped by (configuration, wrench component); W_rd, the rotor drag shared by every
    configuration (`motion.drag_regressor`), only when the rows carry it. Returns W_t, the row-block
    index (6 c + j) and the column names (without the known last column)."""
    cfgs = list(rows)
    drag = all(r.drag is not None for r in rows.values())
    nc = 2 + 9 * len(cfgs) + drag
    mats, blocks = [], []
    for ci, c in enumerate(cfgs):
        r = rows[c]
        n = len(r.t)
        w = np.zeros((6, n, nc + 1))
        w[:, :, :2] = -np.moveaxis(r.dk, 1, 0)
        w[:, :, 2 + 9 * ci : 11 + 9 * ci] = np.moveaxis(r.d, 1, 0)
        if drag:
            w[:, :, nc - 1] = r.drag.T
        w[:, :, -1] = masses[c] * r.dm.T
        mats.append(w.reshape(6 * n, nc + 1))
        blocks.append(np.repeat(6 * ci + np.arange(6), n))
    return mats[0] if len(mats) == 1 else np.concatenate(mats), np.concatenate(blocks), _names(cfgs, drag)


def _fit(
    w: np.ndarray, blocks: np.ndarray, counts: np.ndarray, base: np.ndarray, settings: TlsSettings
) -> tuple[Fit, np.ndarray]:
    """(Weighted) TLS of a compressed W_t (`regression.compress`)."""
    if settings.weighted:
        return block_weighted_tls(w, blocks, base, max_iter=settings.max_weight_iter, what="IDIM-TLS", counts=counts)
    return tls(w * base[blocks][:, None], what="IDIM-TLS", rows=int(counts.sum())), base.copy()


#: The unknowns `essential` cancels by the paper's rule alone (`TlsSettings.cancel_z` aside): in one
#: configuration the yaw row fixes only I_zz / k_d (eq. 23), so their %σ comes from weak couplings
#: and the block weighting, not from the data's information on each (kept at 2 %σ, k_d came out
#: -96 % on a simulated configuration-A flight, and a symmetric vehicle's garbage k_d moved the
#: estimated IMU lag to 25 ms).
YAW_PAIR = ("k_d", "I_zz")


def essential(
    w: np.ndarray,
    blocks: np.ndarray,
    base: np.ndarray,
    names: list[str],
    settings: TlsSettings,
    w_ref: np.ndarray | None = None,
    extra: np.ndarray | None = None,
) -> tuple[Fit, list[int], np.ndarray, list[dict[str, Any]], np.ndarray]:
    """Essential parameters (Sec. III-B): starting from all unknowns, repeatedly cancel the
    one with the largest %sigma (eq. 22) and re-solve, until max/min %sigma < r_sigma or the
    candidate is significant (%σ < 100 / `TlsSettings.cancel_z`).
    k_t is never cancelled (it carries the scale of the TLS solution). Columns that are
    identically zero are cancelled first ("not excited"). A row block whose rotor and known
    columns are all cancelled (the yaw rows of a planar vehicle once k_d goes) is left out:
    its equation lost its input, and the block weighting would otherwise force the
    remaining rigid-body terms of that row to zero (e.g. I_xx = I_yy through the
    gyroscopic term). Works on the compressed W_t (`regression.compress`). Returns the
    final fit, the kept column indices, the block factors, the history of cancellations
    and which row blocks were fitted.

    `w_ref` (same rows and columns) is the paper's model when `w` carries nuisance terms (the
    accelerometer-bias centring, `idim_rows`): the denominator is then k_t's %σ in it (when
    smaller than the own min %σ). Six et al. set r_σ = 250 on the %σ of k_t, the best-determined parameter of their model
    ("this performance is required to set the ratio r_σ", Sec. IV-A); centring takes the hover
    balance away from k_t (its %σ grows ~6x), which would loosen r_σ by as much and keep
    parameters the paper cancels. The numerator (and the parameter cancelled) stays the
    nuisance-free %σ of `w`, which a bias cannot distort.

    `extra` (rows of `w`, k): columns of unknowns in every fit, never ranked nor cancelled (the
    rotors' gains, `_gain_columns`); the fit returned has them after the kept ones."""
    k = 0 if extra is None else extra.shape[1]
    wc, bc, counts = compress(w if extra is None else np.column_stack([w[:, :-1], extra, w[:, -1]]), blocks)
    more, last = list(range(len(names), len(names) + k)), len(names) + k
    wr, br, _ = (None, None, None) if w_ref is None else compress(w_ref, blocks)
    colnorm = np.linalg.norm(w[:, :-1], axis=0)
    kept = [j for j in range(len(names)) if colnorm[j] > 0]
    history = _not_excited(names, colnorm)
    if 0 not in kept:
        raise ExcitationError("the thrust column is zero: the rotor commands are all zero in every flight")
    nb = len(counts)
    while True:
        # a row block left without any rotor or known term (the yaw rows once k_d is cancelled)
        # no longer states an equation with an input: it is dropped from the fit
        driven = [j for j in (0, 1, last) if j in kept or j == last]
        active = np.bincount(bc, weights=np.any(wc[:, driven] != 0, axis=1), minlength=nb) > 0
        rows = active[bc]
        fit, scale = _fit(wc[rows][:, [*kept, *more, last]], bc[rows], counts * active, base, settings)
        pct = np.where(np.isfinite(fit.rel_std_pct), fit.rel_std_pct, np.inf)[: len(kept)]
        floor = pct.min()
        if wr is not None:
            at = active[br]
            ref, _ = _fit(wr[at][:, [*kept, w.shape[1] - 1]], br[at], counts * active, base, settings)
            # k_t's %σ in the paper's model, never above the own floor: a large accelerometer bias can
            # collapse that model's fit (on the mismatch scenarios k_d came out 700 with %σ 1e-13 on
            # others, and every parameter but k_t was cancelled)
            floor = min(floor, float(ref.rel_std_pct[kept.index(0)]))
        ratio = float(pct.max() / floor) if floor > 0 else float("inf")
        cand = pct.copy()
        cand[kept.index(0)] = -np.inf
        i = int(np.argmax(cand))
        keep = cand[i] < 100.0 / settings.cancel_z and not names[kept[i]].startswith(YAW_PAIR)
        if keep:  # significant, unless the weighting collapsed (then no %σ of this fit means anything)
            keep = not weighting_collapsed(wc[rows][:, [*kept, *more, last]], bc[rows], counts * active, base, fit)
        if not settings.essential or ratio < settings.r_sigma or len(kept) == 1 or keep:
            return fit, kept, scale, history, active
        history.append(
            {
                "name": names[kept[i]],
                "rel_std_pct": float(pct[i]),
                "ratio": ratio,
                "value": float(fit.x[i]),
                "why": "largest %σ",
            }
        )
        del kept[i]


def _not_excited(names: list[str], colnorm: np.ndarray) -> list[dict[str, Any]]:
    """`essential`'s history entries of the unknowns whose column is zero."""
    return [
        {"name": n, "rel_std_pct": float("inf"), "ratio": float("inf"), "value": 0.0, "why": "not excited"}
        for n, c in zip(names, colnorm, strict=True)
        if c == 0
    ]


def _full(x: np.ndarray, kept: list[int], n: int) -> np.ndarray:
    """The n unknowns with the kept ones set to x and the cancelled ones to 0."""
    out = np.zeros(n)
    out[kept] = x
    return out


def _force_means(
    rows: dict[str, Rows], masses: dict[str, float], ncols: int, removed: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """The means `idim_rows` removed from the force rows over each piece, as columns of W_t
    (`assemble`, `ncols` with the known one; the rotors' gain columns, whose means `removed`
    gives (`_gain_columns`), just before it): (pieces, 3, ncols) per centred configuration."""
    drag = all(r.drag is not None for r in rows.values())
    nc = 2 + 9 * len(rows) + drag
    out = {}
    for ci, (c, r) in enumerate(rows.items()):
        if r.force_mean is None:
            continue
        fm = r.force_mean
        m = np.zeros((len(fm), 3, ncols))
        m[..., :2] = -fm[..., :2]
        m[..., 2 + 9 * ci : 11 + 9 * ci] = fm[..., 2:11]
        if drag and r.drag_mean is not None:
            m[..., nc - 1] = r.drag_mean
        if removed:
            m[..., nc:-1] = removed[c]
        m[..., -1] = masses[c] * fm[..., 11]
        out[c] = m
    return out


def _acc_bias(
    rows: dict[str, Rows], x: np.ndarray, masses: dict[str, float], removed: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Accelerometer bias per configuration and piece (pieces, 3), m/s²: the force rows' mean
    residual over each piece divided by the mass (`idim_rows`), at the solution x (every
    unknown of W_t; with the rotors' gains, theirs last, `removed` their columns' means)."""
    means = _force_means(rows, masses, len(x) + 1, removed)
    return {c: m @ np.append(x, 1.0) / masses[c] for c, m in means.items()}


def _yaw_moments(rows: dict[str, Rows], x: np.ndarray) -> dict[str, np.ndarray]:
    """Constant yaw moment per configuration and piece (pieces,), N m, that the rotor model
    leaves (`TlsSettings.yaw_moment`): the M_z row's mean residual over each piece at the
    solution x, with the sign of a moment acting on the vehicle (rigid-body minus rotor)."""
    out = {}
    for ci, (c, r) in enumerate(rows.items()):
        if r.yaw_mean is not None:
            k_rd = x[2 + 9 * len(rows)] if r.drag is not None else 0.0
            out[c] = r.yaw_mean @ np.concatenate([-x[:2], x[2 + 9 * ci : 11 + 9 * ci], [k_rd]])
    return out


#: An accelerometer bias beyond this (m/s²), five times a MEMS zero-g offset's 1σ
#: (`ACC_BIAS_Z_SIGMA`), is no sensor offset: the flight does not separate the bias from the
#: thrust (a hover holds the force rows constant, so centring them leaves k_t nothing to fit).
ACC_BIAS_PLAUSIBLE = 5 * ACC_BIAS_Z_SIGMA


def _bias_of(sol: _Solution, masses: dict[str, float]) -> dict[str, np.ndarray]:
    """The accelerometer bias per configuration and piece (pieces, 3) of a centred solution: the
    first pass's b plus what the final fit leaves in the force rows' means."""
    x = np.zeros(len(sol.names))
    x[sol.kept] = sol.fit.x
    return {c: b + sol.bias0[c] for c, b in _acc_bias(sol.rows, x, masses).items()}


#: The noise floor of a measured signal is read from this multiple of the band's high corner up
#: to 0.9 x Nyquist: above the rigid-body band (a multirotor's controlled motion stays within a
#: few Hz, the identification uses nothing above the band) and below a logger's anti-alias edge.
NOISE_FROM = 3.0


def _spectrum(x: np.ndarray, fs: float) -> tuple[np.ndarray, np.ndarray]:
    """Welch power spectral density of each column of `x` (N, C): segments median-averaged (rotor
    vibration lines and transients do not count as noise), linear detrend."""
    from scipy.signal import welch

    return welch(x, fs=fs, nperseg=int(min(256, len(x))), axis=0, average="median", detrend="linear")


def _noise_floor(
    x: np.ndarray, fs: float, f_lo: float, spectrum: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Variance per sample of the white noise in each column of `x` (N, C): the median over
    [f_lo, 0.9 fs/2] of its Welch power spectral density (segments median-averaged, so rotor
    vibration lines and transients do not count as noise), times fs/2 (white noise of variance
    σ² per sample has the one-sided density 2σ²/fs). Zero where that band holds no bin. A
    logger that low-passes its signals below f_lo leaves a lower floor: the compensation is
    then partial, never excessive. `spectrum`: `x`'s (`_spectrum`), when already taken."""
    level = _band_level(spectrum or _spectrum(x, fs), f_lo, 0.45 * fs)
    return np.zeros(x.shape[1]) if level is None else level[0] * fs / 2.0


def _band_level(spectrum: tuple[np.ndarray, np.ndarray], lo: float, hi: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Median over [lo, hi] Hz of each column's power spectral density (`_spectrum`) and the
    relative standard error of that median (1.2533 x the bins' robust spread 1.4826 MAD /
    sqrt(K), K the independent bins: the Hann window's equivalent noise bandwidth is 1.5
    bins); None where no bin lies there."""
    f, pxx = spectrum
    band = (f >= lo) & (f <= hi)
    if not band.any():
        return None
    med = np.median(pxx[band], axis=0)
    spread = 1.2533 * 1.4826 * np.median(np.abs(pxx[band] - med), axis=0) / np.sqrt(band.sum() / 1.5)
    return med, spread / np.where(med > 0, med, 1.0)


def _floor_doubt(
    x: np.ndarray, fs: float, f_lo: float, spectrum: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Relative change δ of each column's white-noise floor (`_noise_floor`, read above f_lo) if
    the noise in the band were at the level the spectrum has just below f_lo, from f_lo / 2 to
    f_lo (1.5 to NOISE_FROM times the band's edge), or, where the two levels agree within three
    times their combined standard error (`_band_level`), the floor's standard error. The
    compensation extrapolates the floor into the band as white: a sensor's or logger's
    low-pass at a few tens of Hz puts the floor in its
    stop band (on the real logs of ../shared/data the gyro's spectrum just below f_lo is
    4.6-5.5x its floor on the PX4 sample, 370-4100x on Crazyflie log10 and log16, where the
    level just below matches the BMI088's datasheet noise; 0.97-1.10x on the simulated
    flights), and vibration or motion there moves it the other way. 0 where there is no floor.
    `spectrum` as in `_noise_floor`."""
    spectrum = spectrum or _spectrum(x, fs)
    far, near = _band_level(spectrum, f_lo, 0.45 * fs), _band_level(spectrum, 0.5 * f_lo, f_lo)
    if far is None or near is None:
        return np.zeros(x.shape[1])
    (floor, se), (level, se_near) = far, near
    d = level / np.where(floor > 0, floor, 1.0) - 1.0
    flat = np.abs(d) <= 3.0 * np.hypot(se, se_near)  # the two levels agree within their sampling error
    return np.where(floor > 0, np.where(flat, se, d), 0.0)


#: `_floor_note` speaks when the doubt about the noise floors (`floor_var`) is this share of a
#: parameter's variance or more.
FLOOR_SHARE = 0.25


def _floor_note(sol: _Solution, kept: list[str], settings: TlsSettings, resolved: dict[str, dict]) -> list[str]:
    """In words, when the doubt about the noise floors (`floor_var`) makes up FLOOR_SHARE of a
    parameter's variance or more: how far the spectrum just below where the floors are read
    is from them (`_floor_doubt`), per sensor, and which parameters' σ it widens most; alike
    for the doubt about the disturbance's level (`_disturbance`)."""
    if sol.floor is None or sol.doubt is None or not len(sol.floor):
        return []
    var = np.diag(sol.fit.cov)[: sol.floor.shape[1]]

    def who(term: np.ndarray) -> str:
        share = np.where(var > 0, term / np.where(var > 0, var, 1.0), 0.0)
        return ", ".join(f"{kept[i]} {share[i]:.0%}" for i in np.argsort(-share)[:3] if share[i] >= FLOOR_SHARE)

    notes = []
    sensors_who, dist_who = who(sol.floor[:6].sum(axis=0)), who(sol.floor[6:].sum(axis=0))
    if sensors_who:
        edge = NOISE_FROM * max(float(r["band"][1]) for r in resolved.values())
        sensors = ("gyro", "accelerometer") if settings.source == "imu" else ("attitude", "position")
        ratio = ", ".join(
            f"{name} {1 + sol.doubt[3 * k : 3 * k + 3].min():.3g}-{1 + sol.doubt[3 * k : 3 * k + 3].max():.3g}x"
            for k, name in enumerate(sensors)
        )
        notes.append(
            f"σ includes the doubt about the sensor noise floors the errors-in-variables compensation reads above "
            f"{edge:g} Hz: the spectrum just below is {ratio} of them (a sensor or logger low-pass, or vibration or "
            f"motion there), and with that level as the band's noise the estimates move; share of the variance: "
            f"{sensors_who} (log the sensors before their low-pass, or give --band 0,F with {NOISE_FROM:g} F below it)"
        )
    if dist_who:
        one = len(sol.disturbance) == 1

        def rms(k: int) -> str:
            return "; ".join(
                ("" if one else f"{c}: ") + ", ".join(f"{v:.2g}" for v in lv[:, k]) for c, lv in sol.disturbance.items()
            )

        worst = float(sol.doubt[6:].max())
        within = f"{worst:.0%}" if worst < 10 else "more than 10x its value: it is not told from zero"
        notes.append(
            f"σ includes the doubt about the angular-acceleration errors the errors-in-variables compensation reads "
            f"from the moment rows' residuals beyond the sensor floors (RMS in the band about x, y, z, N m: a white "
            f"disturbance torque, thrust fluctuation, {rms(0)}; noise of the gyro's spectrum above its floor "
            f"{rms(1)}): the thrust noise's level is read to within {within} (its axes, the white shape alone and "
            f"the fit's error); share of the variance: {dist_who}"
        )
    return notes


def _piece_floor(p: Flight, ms: MotionSettings) -> tuple[np.ndarray, np.ndarray]:
    """The white-noise variance per sample of the six measured signals of one airborne piece
    (`_noise_floor`) and its relative doubt (`_floor_doubt`): gyro and accelerometer, or Bryant
    angles and position (taken isotropic). One sensor at a time (Welch's segments are a few
    times the signal's size; the numbers of both at once up to the rounding of the segments'
    detrend, ~1e-14 relative)."""
    f_lo = NOISE_FROM * ms.band[1]
    signals = (p.gyro, p.acc) if ms.source == "imu" else (np.unwrap(quat_to_bryant(p.quat), axis=0), p.pos)
    spectra = [_spectrum(x, p.rate) for x in signals]  # one each, read for the floor and its doubt
    floor = np.concatenate([_noise_floor(x, p.rate, f_lo, sp) for x, sp in zip(signals, spectra, strict=True)])
    doubt = np.concatenate([_floor_doubt(x, p.rate, f_lo, sp) for x, sp in zip(signals, spectra, strict=True)])
    if ms.source != "imu":
        floor[3:], doubt[3:] = floor[3:].mean(), doubt[3:].mean()
    return floor, doubt


def _chain_responses(ms: MotionSettings) -> np.ndarray:
    """Impulse responses (n, 5) of the paths white noise of a measured signal takes to the rows
    of W_t, through `motion`'s filters and derivatives and the parallel low-pass of
    `_filtered_rows` (the same zero-phase filters, so the noise of a rate and of its derivative
    is uncorrelated at one instant): IMU gyro -> ω, gyro -> ω̇, accelerometer -> s; motion
    capture angles -> η̇ and η̈ (ω ≈ η̇, ω̇ ≈ η̈ near hover, eq. 4-5), position -> ζ̈ (eq. 3);
    then white angular acceleration of the body itself -> ω̇ (a disturbance torque,
    `_disturbance`: what a derivative takes from a rate its integral gave, so the band alone);
    last, motion capture's angles -> the attitude s = Rᵀ(ζ̈ - g) is rotated by (low-passed,
    `_mocap_motion`; the IMU measures s in body axes: unused there)."""
    (low, high), fs, order = ms.band, ms.fs, ms.order
    n = max(4096, int(16 * fs / low) if low > 0 else 0)  # the band-pass's ring-down fits
    x = np.zeros(n)
    x[n // 2] = 1.0
    t = np.arange(n) / fs
    band = butter_filtfilt(x, fs, (low, high) if low > 0 else high, order=order)
    lowp = butter_filtfilt(x, fs, high, order=order)
    if ms.source == "imu":
        paths = (lowp, derivative(band, t), lowp, band, lowp)
    else:
        rate = derivative(band, t)
        paths = (rate, derivative(rate, t), derivative(band, t, order=2), band, lowp)
    return butter_filtfilt(np.column_stack(paths), fs, ms.parallel_cutoff, order=order)


def _noise_channels(ms: MotionSettings) -> tuple[np.ndarray, np.ndarray]:
    """Independent unit noises that white noise of unit variance per sample in each measured
    signal (gyro or Bryant angle x, y, z, then accelerometer or position x, y, z) puts into
    (ω, ω̇, s) at the rows (`_noise_moment`): the signal of each channel (C,) and its
    coefficients (C, 4) on axis a of ω, of ω̇, of s, and of s x e_a, the rotation of s by a
    small angle about a (s' = Exp(-δη) s ≈ s + s x δη, as ω ≈ η̇ near hover).

    Each path's variance is Σ h² of its impulse response (`_chain_responses`). The IMU's paths
    are independent: a rate and its derivative are uncorrelated at one instant under zero-phase
    filters, and the accelerometer is another sensor. A motion-capture angle reaches ω, ω̇ and
    the rotation of s at once, and an angle's low-pass and its second derivative are
    correlated (Σ h h'' = -Σ h'², -0.75 for a flat band): the paths' covariance C = Hᵀ H is
    split into three independent mixtures by its square root (C = L Lᵀ). Leaving the rotation
    out biased com_z of the simulated motion-capture flights by -0.9σ (-2 %: the force rows'
    known column, m s, and the ω̇ columns of ms_z shared that noise at correlation 0.71)."""
    h = _chain_responses(ms)
    if ms.source == "imu":
        gain = np.sqrt(np.sum(h[:, :3] ** 2, axis=0))
        coef = np.zeros((9, 4))
        coef[:3, 0], coef[3:6, 1], coef[6:, 2] = gain[0], gain[1], gain[2]
        return _channel_signals(ms.source), coef
    paths = h[:, [0, 1, 4]]
    val, vec = np.linalg.eigh(paths.T @ paths)
    root = vec * np.sqrt(np.clip(val, 0.0, None))  # C = root rootᵀ; column j is mixture j's coefficients
    coef = np.zeros((12, 4))
    for a in range(3):
        coef[3 * a : 3 * a + 3, [0, 1, 3]] = root.T
    coef[9:, 2] = np.sqrt(np.sum(h[:, 2] ** 2))
    return _channel_signals(ms.source), coef


def _channel_signals(source: str) -> np.ndarray:
    """The measured signal of each noise channel of `_noise_channels` (its axis: signal % 3)."""
    return np.r_[0, 1, 2, 0, 1, 2, 3, 4, 5] if source == "imu" else np.r_[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 4, 5]


def _noise_jacobian(
    mo: Motion, e: np.ndarray, vehicle: Vehicle, lever_arm: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """∂(D_k, D, D_m)/∂z at the samples of `mo` along the noise direction `e` (n, 9) of
    z = (ω, ω̇, s) (`observation`); ω and ω̇ noise also reaches s through the IMU's lever-arm
    removal (`lever_arm` r; zero for motion capture). The rows are at most quadratic in z, so
    the central difference with a unit step is exact."""
    om, od, s, u, t = mo.omega, mo.omega_dot, mo.s, mo.u, mo.t

    def lever(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.cross(b, lever_arm) + np.cross(a, np.cross(a, lever_arm))

    base = lever(om, od)
    plus, minus = (
        observation(
            Motion(
                t,
                om + h * e[:, :3],
                od + h * e[:, 3:6],
                s + h * e[:, 6:] + base - lever(om + h * e[:, :3], od + h * e[:, 3:6]),
                u,
            ),
            vehicle,
        )
        for h in (1.0, -1.0)
    )
    return tuple((p - m) / 2.0 for p, m in zip(plus, minus, strict=True))


def _noise_at_rows(
    p: Flight, vehicle: Vehicle, ms: MotionSettings, idx: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, Motion]:
    """The coefficients (C, 4) of each noise channel (`_noise_channels`) at the rows of one
    airborne piece (`_noise_moment`), scaled by the noise `floor` of its signal (`_piece_floor`),
    and the piece's motion at its rows `idx` (the full-rate motion is freed on return)."""
    signal, coef = _noise_channels(ms)
    mo = motion(p, vehicle, ms)
    return coef * np.sqrt(floor[signal])[:, None], Motion(
        mo.t[idx], mo.omega[idx], mo.omega_dot[idx], mo.s[idx], mo.u[idx]
    )


def _noise_direction(mo: Motion, axis: int, coef: np.ndarray) -> np.ndarray:
    """Direction (n, 9) in (ω, ω̇, s) at the samples of `mo` of a noise channel on `axis` with
    the coefficients `coef` (`_noise_channels`)."""
    unit = np.eye(3)[axis]
    e = np.zeros((len(mo.t), 9))
    e[:, :3], e[:, 3:6], e[:, 6:] = coef[0] * unit, coef[1] * unit, coef[2] * unit
    if coef[3]:
        e[:, 6:] += coef[3] * np.cross(mo.s, unit)
    return e


@dataclass(frozen=True)
class NoiseMoment:
    """The noise moment of `_noise_moment`: `total` (B, n_t, n_t), the sum of `parts` (P, B, n_t,
    n_t), the share of each measured signal (gyro or Bryant angle x, y, z, then accelerometer or
    position x, y, z) and, with `_disturbance`, of the rotors' thrust noise in each
    configuration, and `doubt` (P,), each part's relative doubt (`_floor_doubt`, the airborne
    pieces' mean weighted by their rows; `_disturbance`); `moves` (P, B, n_t, n_t), how far each
    part may be off (`floor_var`): its doubt times the part, or, where the level read may be
    near zero (the thrust noise), its absolute doubt in the part's shape; `disturbance`, per
    configuration the RMS in the band about x, y, z (3, 2), N m, of that noise's torque and of
    the ω̇ sensor path's noise beyond the floors."""

    total: np.ndarray
    parts: np.ndarray
    doubt: np.ndarray
    disturbance: dict[str, np.ndarray] = field(default_factory=dict)
    moves: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.moves is None:
            object.__setattr__(self, "moves", self.doubt[:, None, None, None] * self.parts)

    def padded(self, nw: int, ne: int) -> NoiseMoment:
        """The moment of W_t with `ne` columns of no noise (the rotors' gains, `_gain_columns`)
        put between its `nw` unknowns' columns and the known one."""
        rows, cols = np.ix_([*range(nw), nw + ne], [*range(nw), nw + ne])

        def pad(a: np.ndarray) -> np.ndarray:
            out = np.zeros((*a.shape[:-2], nw + ne + 1, nw + ne + 1))
            out[..., rows, cols] = a
            return out

        return NoiseMoment(pad(self.total), pad(self.parts), self.doubt, self.disturbance, pad(self.moves))

    def sensors(self) -> NoiseMoment:
        """The sensors' parts alone (the first six: without `_disturbance`'s)."""
        return NoiseMoment(self.parts[:6].sum(axis=0), self.parts[:6], self.doubt[:6], moves=self.moves[:6])


def _noise_moment(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    rows: dict[str, Rows],
    resolved: dict[str, dict],
    memo: dict | None = None,
) -> NoiseMoment:
    """Second moment E[dw dwᵀ] of the sensor noise in one row of each row block of W_t (B, n_t,
    n_t: the mean over the block's rows, in `assemble`'s columns), for the bias-compensated
    final fit (`TlsSettings.eiv`). Per airborne piece, the white-noise floor of each measured
    signal (`_noise_floor`: gyro and accelerometer, or Bryant angles and position, the latter
    taken isotropic) times its paths' gains (`_noise_channels`) is the variance of the noise in
    ω, ω̇, s at the rows; the rows' Jacobians (`_noise_jacobian`, at the decimated samples: the
    parallel low-pass passes the band's slow motion unchanged) carry it into the columns. The
    channels are independent (different sensors and axes; a motion-capture angle's correlated
    paths split into independent mixtures, `_noise_channels`), so the moment is the sum of their
    outer products, taken one channel at a time (the Jacobians of one channel are held, not
    all), and kept per measured signal with
    the doubt of its floor (`NoiseMoment`). `memo` (`idim_rows`) keeps each piece's noise floor
    for the next call."""
    arm = vehicle.imu_offset if settings.source == "imu" else np.zeros(3)
    at_rows: dict[str, list[tuple[np.ndarray, np.ndarray, Motion]]] = {}
    doubt, n_rows = np.zeros(6), 0
    for c, flights in configs.items():
        pieces = [p for f in flights for p in airborne_pieces(f)]
        r, cfg = rows[c], resolved[c]
        at_rows[c] = []
        for k in np.unique(r.piece):
            p = pieces[k]
            own = settings.motion.at(p.rate)
            ms = replace(own, band=tuple(cfg["band"]), parallel_cutoff=cfg["parallel_cutoff"], trim=cfg["trim"])
            at = np.flatnonzero(r.piece == k)
            key = ("noise floor", tuple(map(id, flights)), int(k), ms.source, ms.band[1])
            floor = (memo or {}).get(key)
            floor = _piece_floor(p, ms) if floor is None else floor
            if memo is not None:
                memo[key] = floor
            doubt, n_rows = doubt + floor[1] * len(at), n_rows + len(at)
            at_rows[c].append((at, *_noise_at_rows(p, vehicle, ms, np.searchsorted(p.t, r.t[at]), floor[0])))
    nb = 6 * len(configs)
    out = None
    signal = _channel_signals(settings.source)
    for ch, sig in enumerate(signal):  # each channel from one signal, on its axis sig % 3
        part = {}
        for c, r in rows.items():
            jac = (np.zeros_like(r.dk), np.zeros_like(r.d), np.zeros_like(r.dm))
            for at, coef, mo in at_rows[c]:
                for i in range(0, len(at), BLOCK):  # a block of rows at a time: small temporaries
                    j = slice(i, i + BLOCK)
                    seg = Motion(mo.t[j], mo.omega[j], mo.omega_dot[j], mo.s[j], mo.u[j])
                    e = _noise_direction(seg, sig % 3, coef[ch])
                    for full, dj in zip(jac, _noise_jacobian(seg, e, vehicle, arm), strict=True):
                        full[at[j]] = dj
            # the rotor-drag column carries no sensor noise of these channels here (its airspeed comes
            # from the pose, its ω x r_i term is small): zero
            drag = None if r.drag is None else np.zeros_like(r.drag)
            part[c] = replace(
                r, dk=jac[0], d=jac[1], dm=jac[2], drag=drag, force_mean=None, drag_mean=None, yaw_mean=None
            )
        dw, blocks, _ = assemble(part, masses)
        out = np.zeros((6, nb, dw.shape[1], dw.shape[1])) if out is None else out
        for b in range(nb):
            sel = dw[blocks == b]
            out[sig, b] += sel.T @ sel
    parts = out / np.maximum(np.bincount(blocks, minlength=nb), 1)[:, None, None]
    return NoiseMoment(parts.sum(axis=0), parts, doubt / max(n_rows, 1))


#: The disturbance's level is read where its shape at the rows is at least this share of its
#: peak (the band's flat part; `_disturbance`), from Welch segments of this many rows at most.
DIST_FLAT = 0.5
DIST_SEGMENT = 256


def _decimated_shape(h: np.ndarray, d: int, f: np.ndarray, fs: float) -> np.ndarray:
    """One-sided power spectral density at `f` of white noise through the impulse response `h`
    and kept every `d`-th sample (rate `fs`), per unit of its variance: the autocorrelation of
    `h` at the kept lags, Fourier-transformed (decimation folds the spectrum; the lags fold it
    exactly)."""
    r = np.correlate(h, h, "full")[len(h) - 1 :: d]
    m = np.arange(1, len(r))
    return 2.0 * (r[0] + 2.0 * (r[1:] @ np.cos(2.0 * np.pi * np.outer(m, f) / fs))) / (fs * r[0])


def _excess_levels(p: np.ndarray, base: np.ndarray, shapes: np.ndarray, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """Levels c ≥ 0 of components of known `shapes` (K, bins) over a known `base` in the Welch
    density `p` (ν degrees of freedom per bin), and their covariance: the fit of log p = log(base
    + shapesᵀ c) + log(χ²_ν / ν), each bin's log-ratio standardised by the log-χ²'s mean and
    standard deviation (ψ(ν/2) - log(ν/2), ψ'(ν/2)^½) under a Cauchy loss, so bins another
    component fills (model error at the manoeuvres' frequencies, 10-1000x the noise on the
    simulated mismatch flights) do not count."""
    from scipy.optimize import least_squares
    from scipy.special import digamma, polygamma

    centre, spread, unit = digamma(nu / 2) - np.log(nu / 2), np.sqrt(polygamma(1, nu / 2)), float(np.mean(p))

    def res(c: np.ndarray) -> np.ndarray:
        return (np.log(p) - np.log(base + unit * (shapes.T @ c)) - centre) / spread

    fit = least_squares(res, np.full(len(shapes), 0.1), bounds=(0.0, np.inf), loss="cauchy", f_scale=2.0)
    return unit * fit.x, unit**2 * np.linalg.pinv(fit.jac.T @ fit.jac)


def _omega_dot_rows(rows: dict[str, Rows], vehicle: Vehicle, masses: dict[str, float], arm: np.ndarray) -> np.ndarray:
    """∂(row of W_t)/∂ω̇_a for each axis a and row block (3, B, n_t): constant, as the rows are
    linear in ω̇ (`observation`, the IMU's lever-arm removal included)."""
    one = Motion(np.zeros(1), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, vehicle.n_rotors)))
    out = []
    for a in range(3):
        dk, d, dm = _noise_jacobian(one, np.eye(9)[3 + a][None], vehicle, arm)
        part = {
            c: Rows(
                np.zeros(1), dk, d, dm, np.zeros(1, dtype=np.int64), drag=None if r.drag is None else np.zeros((1, 6))
            )
            for c, r in rows.items()
        }
        out.append(assemble(part, masses)[0])
    return np.stack(out)


def _residual_spectrum(
    res: np.ndarray, piece: np.ndarray, pieces: list[Flight], settings: TlsSettings, cfg: dict, shapes: dict
) -> tuple[np.ndarray, ...] | None:
    """Welch density of one row block's residual `res` over each airborne piece (`piece`: its
    rows'), pooled over the bins where the disturbance's shape is flat (`DIST_FLAT`), with the
    shapes there (`_decimated_shape`: sensor noise through ω̇, through s, the disturbance) and
    the bins' degrees of freedom; None when no piece has enough rows."""
    from scipy.signal import welch

    out, segments = [], 0.0
    for k in np.unique(piece):
        seg, p = res[piece == k], pieces[k]
        own = settings.motion.at(p.rate)
        ms = replace(own, band=tuple(cfg["band"]), parallel_cutoff=cfg["parallel_cutoff"], trim=cfg["trim"])
        d = settings.decimation(own)
        nper = min(DIST_SEGMENT, len(seg))
        if nper < 32:
            continue
        f, psd = welch(seg, fs=p.rate / d, nperseg=nper, detrend="linear")
        key = (p.rate, d, ms.band, ms.parallel_cutoff, nper)
        if key not in shapes:
            h = _chain_responses(ms)
            shapes[key] = np.stack([_decimated_shape(h[:, i], d, f, p.rate / d) for i in (1, 2, 3)])
        sh = shapes[key]
        flat = (f > 0) & (sh[2] >= DIST_FLAT * sh[2].max())
        out.append((psd[flat], sh[0][flat], sh[1][flat], sh[2][flat]))
        segments += len(seg) / (nper / 2) - 1  # Hann, half overlap
    if not out:
        return None
    return (*(np.concatenate(z) for z in zip(*out, strict=True)), 1.9 * segments / len(out))


#: The rotor thrust noise is read about the axes where a rotor's thrust makes at least this
#: share of the largest torque (roll and pitch; `_disturbance`).
DIST_AXES = 0.25


def _thrust_torques(vehicle: Vehicle, kappa: float) -> np.ndarray:
    """Σ_i b_i b_iᵀ (3, 3), b_i = r_i x a_i + κ dir_i a_i the torque about the origin of a unit
    change of rotor i's thrust (`observation`), κ = k_d / k_t."""
    b = np.cross(vehicle.positions, vehicle.axes) + kappa * vehicle.torque_dirs[:, None] * vehicle.axes
    return b.T @ b


def _thrust_noise(
    flights: list[Flight],
    settings: TlsSettings,
    sol: _Solution,
    nm: NoiseMoment,
    chi: np.ndarray,
    c: str,
    g: np.ndarray,
) -> tuple[float, float, np.ndarray] | None:
    """The rotors' thrust-noise variance σ_w² in the band of configuration `c` (`_disturbance`),
    its doubt (absolute, N²: the level may be near zero, where a relative doubt means nothing),
    and the RMS of the ω̇ sensor path's excess per axis (N m, 0 where not read), from the
    residuals W [chi] of `sol`'s moment rows; None where no axis was read.

    The doubt is the pooled level's standard error and, beyond it, what sampling does not
    explain (`_excess`) of two differences: between the axes' levels (one σ_w² makes them
    equal), and between the level read with the white torque's shape alone and with the gyro
    path's too (the smaller model is the larger one's special case, so their difference's
    sampling variance is the difference of their variances: Hausman 1978). Counted whole, the
    two differences' own sampling noise doubled the doubt (1.5-2x the level's scatter over 12
    seeds of the A + B flights, 4x without thrust noise)."""
    ci = list(sol.rows).index(c)
    axes = np.flatnonzero(np.diag(g) >= DIST_AXES * np.diag(g).max())
    gyro, acc = nm.parts[:3].sum(axis=0), nm.parts[3:6].sum(axis=0)
    pieces = [p for f in flights for p in airborne_pieces(f)]
    lv, v, shapes = np.full((3, 2), np.nan), np.zeros(3), {}
    shape = np.zeros((3, 2))  # per axis: the white-shape-alone reading's difference, its sampling variance
    for j in axes:
        b = 6 * ci + 3 + j
        if not sol.active[b]:
            continue
        spec = _residual_spectrum(
            sol.w[sol.blocks == b] @ chi, sol.rows[c].piece, pieces, settings, sol.resolved[c], shapes
        )
        if spec is None:
            continue
        psd, s_g, s_a, s_d, nu = spec
        base = (chi @ gyro[b] @ chi) * s_g + (chi @ acc[b] @ chi) * s_a
        lv[j], cov = _excess_levels(psd, base, np.stack([s_d, s_g]), nu)
        alone, cov1 = _excess_levels(psd, base, s_d[None], nu)
        v[j], shape[j] = cov[0, 0], (alone[0] - lv[j, 0], max(cov[0, 0] - cov1[0, 0], 0.0))
    read = np.isfinite(lv[:, 0])
    if not read.any():
        return None
    gr = np.diag(g)[read]
    per, var_per = lv[read, 0] / gr, v[read] / gr**2  # each axis's σ_w² and its sampling variance
    var = lv[read, 0].sum() / gr.sum()
    hi, lo = int(np.argmax(per)), int(np.argmin(per))
    axes_apart = _excess((per[hi] - per[lo]) / 2.0, (var_per[hi] + var_per[lo]) / 4.0)
    shape_apart = _excess(shape[read, 0].sum() / gr.sum(), shape[read, 1].sum() / gr.sum() ** 2)
    doubt = float(np.sqrt(v[read].sum() / gr.sum() ** 2 + axes_apart**2 + shape_apart**2))
    return var, doubt, np.sqrt(np.nan_to_num(lv[:, 1]))


def _excess(diff: float, sampling: float) -> float:
    """The part of a difference `diff` between two readings of one quantity that its sampling
    variance `sampling` does not explain: sqrt(max(diff² - sampling, 0))."""
    return float(np.sqrt(max(diff**2 - sampling, 0.0)))


def _disturbance(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    sol: _Solution,
    nm: NoiseMoment,
) -> NoiseMoment:
    """`nm` with the moment of the angular acceleration the rotors' thrust noise gives the body.

    Thrust fluctuation (turbulence, blade passage; Kwon eq. 51's thrust noise) drives ω̇ with a
    torque d the rotor terms do not hold: ω̇ = ω̇_model + I⁻¹ d, so the ω̇ columns carry I⁻¹ d as
    errors in variables (d is the moment rows' equation error) that no floor shows (in the
    gyro, 1/f² under the sensor's own white noise). Uncompensated, it scaled k_t, I_xx, I_yy by
    -0.02 to -0.03 % on the simulated six-config flights (0.8σ̄; k_t 77 % within 2σ on the A + B
    twin), gone with its true moment.

    Read from the moment rows' residuals of the selection's system (`sol`) fitted with the
    sensors' moment `nm` (equal rotors: the gains' part is low-frequency): per axis j, the
    Welch density of the M_j row's residual over the band's flat part is the sensor noise's
    (`nm`, spread as its paths through ω̇ and s spread it, `_chain_responses`) plus a white
    torque's shape times c_j and the ω̇ sensor path's (gyro noise above a floor read in a stop
    band, `_floor_doubt`) times another level (`_excess_levels`, robust to model error at the
    manoeuvres' frequencies: on the mismatch flights the residual was 18-240x the sensor
    noise). Rotor i's thrust noise, independent and alike in every rotor (variance σ_w² in the
    band), makes Cov(d) = σ_w² G (`_thrust_torques`): σ_w² = Σ c_j / Σ G_jj over the roll and
    pitch axes (`DIST_AXES`), which fixes the yaw's too, where model error fills the residual
    (yaw damping, the rotors' spread: read alone, 5x the simulator's on the mismatch flights).
    With A[j, a] = ∂(M_j residual)/∂ω̇_a (= I), Cov(ω̇ error) = A⁻¹ σ_w² G A⁻ᵀ. Its doubt: the
    axes' disagreement, how far the white shape alone reads them, and the fits' standard error.

    IMU source only (`nm` as it is otherwise): the twice-differentiated pose's noise is the ω̇ columns'
    error there (its moment 50x the thrust noise's on the six-config flights, 2 %, inside its
    floor's own sampling doubt), and the pose's residuals carry its timing error, broadband as
    a disturbance (read from them on the mismatch flights: 2-3x the simulator's about x, y,
    which biased I_zz, k_d +3.7 %, 3.5σ̄)."""
    if settings.source != "imu":
        return nm
    try:  # the residuals of the selection's fit compensated for the sensors' noise alone (equal rotors)
        x = _fixed_fit(sol.w, sol.blocks, sol.kept, sol.active, sol.scale, nm.total).x
    except ExcitationError:
        return nm
    chi = np.append(_full(x, sol.kept, len(sol.names)), 1.0)
    if chi[0] == 0:
        return nm
    jac = _omega_dot_rows(sol.rows, vehicle, masses, vehicle.imu_offset)
    g = _thrust_torques(vehicle, chi[1] / chi[0])
    parts, moves, doubt, level = [], [], [], {}
    for ci, c in enumerate(configs):
        read = _thrust_noise(configs[c], settings, sol, nm, chi, c, g)
        a = np.array([[jac[k, 6 * ci + 3 + j] @ chi for k in range(3)] for j in range(3)])
        if read is None or not abs(np.linalg.det(a)) > 1e-12 * np.abs(a).max() ** 3:
            continue  # nothing read, or no inertia to carry it into ω̇
        var, dj, lv = read
        a_inv = np.linalg.inv(a)
        unit = _config_moment(jac, a_inv @ g @ a_inv.T, ci, nm.total)  # per unit σ_w²
        parts.append(var * unit)
        moves.append(dj * unit)  # absolute: a level read near zero keeps a finite doubt
        doubt.append(dj / var if var > 0 else np.inf)
        level[c] = np.column_stack([np.sqrt(var * np.diag(g)), lv])
    if not parts:
        return nm
    extra = np.stack(parts)
    for _ in range(9):  # twice the moment must leave the compensated fit positive: later systems differ a little
        try:
            _fixed_fit(sol.w, sol.blocks, sol.kept, sol.active, sol.scale, nm.total + 2.0 * extra.sum(axis=0))
            break
        except ExcitationError:
            extra /= 2.0
            level = {c: lv * [np.sqrt(0.5), 1.0] for c, lv in level.items()}
    else:
        return nm
    parts_all, moves_all = np.concatenate([nm.parts, extra]), np.concatenate([nm.moves, np.stack(moves)])
    return NoiseMoment(parts_all.sum(axis=0), parts_all, np.concatenate([nm.doubt, doubt]), level, moves_all)


def _config_moment(jac: np.ndarray, cov: np.ndarray, ci: int, like: np.ndarray) -> np.ndarray:
    """The moment in the row blocks of configuration `ci` (zero in the others; shaped as `like`)
    of an ω̇ error of covariance `cov` (3, 3), through ∂(row)/∂ω̇ `jac` (`_omega_dot_rows`)."""
    out = np.zeros_like(like)
    for b in range(6 * ci, 6 * ci + 6):
        out[b] = jac[:, b].T @ cov @ jac[:, b]
    return out


def _bias_profiled(
    wk: np.ndarray,
    keep: np.ndarray,
    rows: dict[str, Rows],
    cols: list[int],
    x: np.ndarray,
    scale: np.ndarray,
    means: dict[str, np.ndarray],
    masses: dict[str, float],
) -> None:
    """Adds to the moment rows of `wk` (in place: W_t's rows `keep`, columns `cols` and the known
    one, block-scaled; x the estimate of `cols`) the accelerometer bias's path into them, so that
    a covariance of `wk` is the one of the parameters with the bias estimated too.

    The moment rows hold -[s - b]x ms = -[s]x ms - [ms]x b, b = b0 + M_k chi / m the force rows'
    mean residual over piece k (`_acc_bias`, `means` = M_k per configuration, `_force_means`): b
    is a function of the parameters, so the rows' Jacobian is W + ∂r/∂b ∂b/∂chi, the moment rows
    gaining -[ms]x M_k / m (the joint least squares of chi and b, whose chi block is the fit on W
    with b's columns projected out; Frisch-Waugh-Lovell). Held at b0, the covariance tied the
    first moments to k_t through the hover balance k_t Δu r = ms g (correlation 0.94 on the
    simulated A + B flights, σ of com_x, com_y of B 3-5x their scatter), although an error of
    k_t moves b_z, hence s - b, alike and leaves ms as it is. The M_z row, when centred for a
    yaw moment, loses the per-piece constant again, so it gains nothing."""
    first = np.cumsum(keep) - 1  # each kept row's place in wk; a block's rows are kept together
    idx, start = [*cols, next(iter(means.values())).shape[-1] - 1], 0
    for ci, (c, r) in enumerate(rows.items()):
        n = len(r.t)
        if c in means:
            corr = -np.einsum("ab,pbk->pak", _skew(_ms_of(x, cols, ci)[None])[0], means[c][..., idx]) / masses[c]
            cuts = np.flatnonzero(np.diff(r.piece)) + 1  # the pieces' rows are consecutive
            for j in _bias_moment_rows(r):
                if keep[start + j * n]:
                    at = first[start + j * n]
                    for a, b in zip(np.r_[0, cuts], np.r_[cuts, n], strict=True):  # in place, a piece at a time
                        wk[at + a : at + b] += corr[r.piece[a], j - 3] * scale[6 * ci + j]
        start += 6 * n


def _bias_moment_rows(r: Rows) -> tuple[int, ...]:
    """The moment rows (3, 4, 5: M_x, M_y, M_z) the accelerometer bias reaches through -[ms]x b:
    an M_z row centred for a yaw moment loses b's per-piece constant."""
    return (3, 4) if r.yaw_mean is not None else (3, 4, 5)


def _ms_of(x: np.ndarray, cols: list[int], ci: int) -> np.ndarray:
    """The first moments ms of configuration `ci` in the estimate x of the columns `cols` (0 where
    not estimated)."""
    return np.array([x[cols.index(j)] if j in cols else 0.0 for j in range(2 + 9 * ci, 5 + 9 * ci)])


def _bias_scores(
    w: np.ndarray,
    keep: np.ndarray,
    wk: np.ndarray,
    rows: dict[str, Rows],
    cols: list[int],
    x: np.ndarray,
    scale: np.ndarray,
    masses: dict[str, float],
) -> np.ndarray:
    """Per-step scores (T, len(cols)) the accelerometer bias's estimate adds to those of the
    moment rows of `wk` (W_t's rows `keep`, columns `cols` and the known one, block-scaled and
    `_bias_profiled`; x the estimate of `cols`): b = b0 + the force rows' mean residual over the
    piece / m (`_acc_bias`), so step t moves it by ψ_t = r_t / (m T_k), r_t the centred force
    rows' residual, and the moment rows' estimating equation by G_k ψ_t, G_k = Σ_k J̃ᵀ ∂ρ/∂b,
    ∂ρ/∂b = -[ms]x (a first-step estimate's influence; Murphy & Topel 1985, Newey 1994).

    Without it the accelerometer's noise in -[s - b]x ms, centred by b over each piece, counted
    in the long-run variance at every frequency but zero, where it sums to nothing: on the
    simulated A + B flights σ of com_x@B was 1.6x the scatter (without thrust noise 11x)."""
    extra = np.zeros((sum(len(r.t) for r in rows.values()), len(cols)))
    first, start, step = np.cumsum(keep) - 1, 0, 0
    chi = np.zeros(w.shape[1])
    chi[[*cols, w.shape[1] - 1]] = np.append(x, 1.0)
    for ci, (c, r) in enumerate(rows.items()):
        n = len(r.t)
        if r.force_mean is not None:
            d_rho = -_skew(_ms_of(x, cols, ci)[None])[0]  # ∂(moment rows' residual)/∂b
            cuts = np.r_[0, np.flatnonzero(np.diff(r.piece)) + 1]  # the pieces' rows are consecutive
            g = np.zeros((len(cuts), len(cols), 3))
            for j in _bias_moment_rows(r):
                if keep[start + j * n]:
                    at = first[start + j * n]  # the block's rows, consecutive in wk
                    sums = np.add.reduceat(wk[at : at + n, :-1], cuts, axis=0)
                    g += sums[:, :, None] * (scale[6 * ci + j] * d_rho[j - 3])[None, None]
            force = np.column_stack([w[start + a * n : start + (a + 1) * n] @ chi for a in range(3)])
            for k, (a, b) in enumerate(zip(cuts, np.r_[cuts[1:], n], strict=True)):
                extra[step + a : step + b] = force[a:b] @ g[k].T / (masses[c] * (b - a))
        start, step = start + 6 * n, step + n
    return extra


def _covariance(
    w: np.ndarray,
    blocks: np.ndarray,
    rows: dict[str, Rows],
    cols: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    x: np.ndarray,
    noise: np.ndarray | None,
    settings: TlsSettings,
    profile: tuple[dict[str, float], dict[str, np.ndarray] | None] | None = None,
) -> np.ndarray:
    """Covariance of the final (weighted) fit x of the columns `cols` over the fitted row blocks
    (`active`): with `settings.covariance` "hac", robust to rows correlated in time
    (`regression.tls_hac_cov`; with `noise`, the bias-compensated fit's `regression.bc_hac_cov`):
    the six wrench rows of one instant share its time step, and lags never cross pieces or
    configurations; "eq20", eq. 18-20 (`regression.bias_compensated`'s with `noise`). With
    `profile` (masses, the gain columns' force means or None; `_gain_columns`) and centred force
    rows, the accelerometer bias's path into the moment rows is in it (`_bias_profiled`)."""
    keep = active[blocks]
    idx = [*cols, w.shape[1] - 1]
    wk = w[np.ix_(keep, idx)]  # one copy: only the fitted rows' fitted columns
    wk *= scale[blocks[keep]][:, None]
    means = {} if profile is None else _force_means(rows, profile[0], w.shape[1], profile[1])
    extra = None
    if means:
        _bias_profiled(wk, keep, rows, cols, x, scale, means, profile[0])
        extra = _bias_scores(w, keep, wk, rows, cols, x, scale, profile[0])
    per_row = None if noise is None else noise[:, idx][:, :, idx] * scale[:, None, None] ** 2
    if settings.covariance == "eq20":
        if per_row is None:
            return tls(wk).cov
        return bias_compensated(
            wk, np.einsum("b,bij->ij", np.bincount(blocks[keep], minlength=len(scale)), per_row)
        ).cov
    sizes = [len(r.t) for r in rows.values()]
    start = np.cumsum([0, *sizes[:-1]])
    instant = np.concatenate([s0 + np.tile(np.arange(n), 6) for s0, n in zip(start, sizes, strict=True)])
    pieces = [r.piece for r in rows.values()]
    offsets = np.cumsum([0, *(int(p.max()) + 1 for p in pieces[:-1])])
    segment = np.concatenate([p + o for p, o in zip(pieces, offsets, strict=True)])
    if per_row is None:
        return tls_hac_cov(wk, x, instant[keep], segment, extra=extra)
    return bc_hac_cov(wk, x, per_row, blocks[keep], instant[keep], segment, extra=extra)


def _nuisance_notes(
    rows: dict[str, Rows], mean_bias: dict[str, np.ndarray], yaw: dict[str, np.ndarray], no_drag: bool
) -> list[str]:
    """Notes on the nuisance terms: the accelerometer bias (mean over pieces, `mean_bias`) and the
    constant yaw moment (`_yaw_moments`) per configuration, and a rotor drag left out (`no_drag`)."""
    pieces = {c: np.unique(r.piece) for c, r in rows.items()}
    of = {c: f" of {c}" if len(rows) > 1 else "" for c in rows}
    notes = [
        f"accelerometer bias estimated per airborne piece{of[c]} "
        f"(mean over {len(pieces[c])}): [{', '.join(f'{v:+.3f}' for v in b)}] m/s²"
        for c, b in mean_bias.items()
    ]
    notes += [
        f"constant yaw moment estimated per airborne piece{of[c]} (mean over {len(pieces[c])}): "
        f"{np.mean(m[pieces[c]]):+.2e} N m"
        for c, m in yaw.items()
    ]
    if no_drag:
        notes.append("rotor drag not modelled: a flight logs no attitude or no position or velocity")
    return notes


def _advice(name: str, cfgs: list[str]) -> tuple[str, str]:
    """Plain-language reason and advice for a cancelled parameter."""
    base = name.partition("@")[0]
    if base in ("I_xy", "I_xz", "I_yz"):
        return (
            "products of inertia barely act near hover when the body axes are close to the principal axes (set to 0)",
            "nothing to do for near-hover control; aggressive coupled roll-pitch-yaw manoeuvres would be needed",
        )
    if base in ("k_d", "I_zz") and len(cfgs) == 1:
        return (
            "k_d enters only the yaw-moment row; with a symmetric mass distribution (ms_x≈ms_y≈0, I_xx≈I_yy) "
            "that row reduces to I_zz ω̇_z ≈ k_d Σ −sign(Ω_i) Ω_i² (eq. 23), which fixes only their ratio",
            "fly a second configuration with an off-centre payload (Six et al. configuration B) and identify "
            "both together: --config-b LOG --mass-b KG",
        )
    if base in ("k_d", "I_zz"):
        return ("the yaw moment is weakly excited", "fly more yaw manoeuvres (yaw rate steps) in every configuration")
    if base.startswith("ms_"):
        return (
            f"the centre-of-mass offset along {base[-1]} is too small to change the dynamics measurably (set to 0)",
            "move a payload off-centre along that axis if the offset matters",
        )
    if base == K_RD:
        return (
            "the rotor drag barely acts: the hubs' in-plane airspeeds stay small",
            "fly faster translations and yaw turns, or turn the rotor drag off (--no-rotor-drag)",
        )
    if base in ("I_xx", "I_yy"):
        axis = "roll" if base == "I_xx" else "pitch"
        return (f"the {axis} dynamics are weakly excited", f"fly sharper {axis} manoeuvres")
    return ("poorly determined by the data", "fly a more exciting trajectory")


def _checked_masses(
    configs: dict[str, list[Flight]], vehicle: Vehicle, masses: dict[str, float], weights: dict[str, float]
) -> dict[str, float]:
    """Each configuration's measured mass (config A defaults to `vehicle.mass`), checked with
    the row weights against the configurations flown."""
    if not configs or not any(configs.values()):
        raise RotoridError("no flights given to identify")
    cfgs = list(configs)
    masses = dict(masses)
    if "A" in configs:
        masses.setdefault("A", vehicle.mass)
    missing = [c for c in cfgs if c not in masses]
    if missing:
        raise RotoridError(f"no measured mass for configuration(s) {', '.join(missing)}; give --mass NAME=KG")
    for c, m in masses.items():
        if not m > 0:
            raise RotoridError(f"mass of configuration {c} must be positive kg, got {m}")
    unknown = set(weights) - set(cfgs)
    if unknown:
        raise RotoridError(
            f"--weight for unknown configuration(s) {', '.join(sorted(unknown))} (have {', '.join(cfgs)})"
        )
    for c in cfgs:
        if not configs[c]:
            raise RotoridError(f"configuration {c} has no flights")
    return masses


def _estimates(
    x: np.ndarray, cov: np.ndarray, names: list[str], kept_names: set[str], masses: dict[str, float]
) -> dict[str, tuple[float, float]]:
    """(value, σ) of every kept unknown, K_tau = k_d / k_t (first-order propagation) and the
    CoM ms / m of every configuration."""
    est: dict[str, tuple[float, float]] = {}

    def put(name: str, value: float, var: float) -> None:
        est[name] = (float(value), float(np.sqrt(max(var, 0.0))))

    for j, nm in enumerate(names[:2]):
        if nm in kept_names:
            put(nm, x[j], cov[j, j])
    if K_RD in kept_names:
        j = names.index(K_RD)
        put(K_RD, x[j], cov[j, j])
    if {"k_t", "k_d"} <= kept_names:
        kt, kd = x[0], x[1]
        g = np.array([-kd / kt**2, 1.0 / kt])
        put("k_tau", kd / kt, g @ cov[:2, :2] @ g)
    cfgs = list(masses)
    single = len(cfgs) == 1
    for ci, c in enumerate(cfgs):
        sl = slice(2 + 9 * ci, 11 + 9 * ci)
        suf = "" if single else f"@{c}"
        for k, p in enumerate(CHI):
            if names[sl.start + k] in kept_names:
                put(p + suf, x[sl][k], cov[sl, sl][k, k])
        for k, axis in enumerate("xyz"):
            if f"ms_{axis}{suf}" in est:
                put(f"com_{axis}{suf}", x[sl][k] / masses[c], cov[sl, sl][k, k] / masses[c] ** 2)
    return est


def _within(rel_std_pct: float, z: float) -> str:
    """' (within z σ of zero)' when a cancelled parameter was not significant (`TlsSettings.cancel_z`),
    else '' (the yaw pair or a collapsed weighting, `essential`)."""
    return f" (within {z:g}σ of zero)" if rel_std_pct * z >= 100 else ""


def _observability(
    names: list[str], fit: Fit, kept: list[int], history: list[dict[str, Any]], cfgs: list[str], st: TlsSettings
) -> dict[str, dict[str, Any]]:
    """Per unknown: essential (with its final %σ) or cancelled, with why and what to fly."""
    pct_final = dict(zip([names[j] for j in kept], fit.rel_std_pct.tolist(), strict=True))
    dropped = {h["name"]: h for h in history}
    observability: dict[str, dict[str, Any]] = {}
    for nm in names:
        if nm in pct_final:
            observability[nm] = {"identifiable": True, "essential": True, "rel_std_pct": pct_final[nm]}
            continue
        h = dropped[nm]
        reason, advice = _advice(nm, cfgs)
        why = (
            "its column is zero (not excited)"
            if h["why"] == "not excited"
            else f"cancelled with %σ = {h['rel_std_pct']:.3g}{_within(h['rel_std_pct'], st.cancel_z)} while "
            f"max/min %σ = {h['ratio']:.3g} ≥ r_σ = {st.r_sigma:g}"
        )
        observability[nm] = {
            "identifiable": False,
            "essential": False,
            "rel_std_pct": h["rel_std_pct"],
            "value_before_cancel": h["value"],
            "reason": f"{reason}; {why}",
            "advice": advice,
        }
    return observability


#: Why the motion-capture source without the errors-in-variables compensation (`TlsSettings.eiv`
#: False) does not report the yaw pair (Six et al. Table II, MOCAP column).
MOCAP_YAW = (
    "from motion capture the yaw angular acceleration is the yaw angle differentiated twice through the "
    "band-pass: its noise sits in the regressors (errors in variables) and, uncompensated (eiv off), biases "
    "k_d and I_zz together (about -17 % on the simulated Six flights) far beyond their statistical σ; Six "
    "et al. do not report them from MOCAP either (Table II)"
)


def _mocap_yaw_pair(settings: TlsSettings) -> bool:
    """Whether the yaw pair (k_d, k_tau, I_zz) is reported: always from the IMU; from motion
    capture only with the errors-in-variables compensation (`TlsSettings.eiv`), which takes the
    twice-differentiated yaw angle's noise out of the fit (on the simulated Six A + B flights
    the pair's bias fell from -17 % to -1.7 %, within its σ: ±2σ coverage 100 %, 10 seeds)."""
    return settings.source != "mocap" or settings.eiv


def _withhold_yaw_pair(
    est: dict[str, tuple[float, float]], observability: dict[str, dict[str, Any]], kept: list[str], cfgs: list[str]
) -> None:
    """Motion-capture source: k_d, k_tau and every I_zz stay in the fit (the yaw rows still
    carry the other parameters) but are not reported; observability says why (`MOCAP_YAW`)."""
    sufs = [""] if len(cfgs) == 1 else [f"@{c}" for c in cfgs]
    for nm in ("k_d", "k_tau", *(f"I_zz{s}" for s in sufs)):
        if nm not in est:
            continue
        value, _ = est.pop(nm)
        observability[nm] = {
            "identifiable": False,
            "essential": nm in kept,
            "value_before_cancel": value,
            "reason": MOCAP_YAW,
            "advice": "identify k_d, k_tau and I_zz from the IMU (--source imu), with configuration B for k_d",
        }


def _disturbance_diagnostics(level: dict[str, np.ndarray]) -> dict[str, Any]:
    """RMS in the band per configuration and axis, N m (`_disturbance`): the rotors' thrust
    noise's torque, and the ω̇ sensor path's noise beyond the floors; nothing when not read."""
    if not level:
        return {}
    return {
        "disturbance_rms": {c: lv[:, 0] for c, lv in level.items()},
        "omega_dot_excess_rms": {c: lv[:, 1] for c, lv in level.items()},
    }


def _diagnostics(
    w: np.ndarray, blocks: np.ndarray, x: np.ndarray, rows: dict[str, Rows], scale: np.ndarray
) -> dict[str, Any]:
    """Residual diagnostics per configuration and wrench component (unweighted): rotor and
    rigid-body wrench, relative error norms (Table III) and the block weights."""
    res = w @ np.append(x, 1.0)
    rotor = w[:, :2] @ x[:2]
    out: dict[str, Any] = {}
    for ci, c in enumerate(rows):
        n = len(rows[c].t)
        start = int(np.flatnonzero(blocks == 6 * ci)[0])
        sel = slice(start, start + 6 * n)
        rho = res[sel].reshape(6, n).T
        wk = -rotor[sel].reshape(6, n).T
        out[c] = {
            "t": rows[c].t,
            "rotor": wk,
            "rigid": wk + rho,
            "rel_error_norm_pct": rel_error_norms(rho, wk),
            "block_scale": scale[6 * ci : 6 * ci + 6],
        }
    return out


def _settings_out(
    resolved: dict[str, dict],
    rows: dict[str, Rows],
    masses: dict[str, float],
    weights: dict[str, float],
    essential_params: list[str],
    active: np.ndarray,
) -> dict[str, Any]:
    """The settings a TLS result records: the resolved ones (per configuration where they
    differ), the configurations with their masses and weights, and what was fitted."""
    cfgs = list(resolved)
    first = next(iter(resolved.values()))
    return {
        **{k: v for k, v in first.items() if k not in ("fs",)},
        "fs": {c: r["fs"] for c, r in resolved.items()},
        "speed_channel": {c: r["speed_channel"] for c, r in resolved.items()},
        "configs": cfgs,
        "masses": {c: float(masses[c]) for c in cfgs},
        "weights": {c: float(weights.get(c, 1.0)) for c in cfgs},
        "essential_params": essential_params,
        "rows_fitted": {c: [WRENCH[j] for j in range(6) if active[6 * ci + j]] for ci, c in enumerate(cfgs)},
        "inertia_about": "origin",
        "rows": {c: 6 * len(rows[c].t) for c in cfgs},
    }


def _system(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    bias: dict[str, np.ndarray] | None,
    gain: dict[str, np.ndarray] | None = None,
    memo: dict | None = None,
) -> tuple[dict[str, Rows], dict[str, dict], np.ndarray, np.ndarray, list[str]]:
    """Rows of every configuration and the assembled W_t (`assemble`): the paper's model when
    `bias` is None, else the rows centred for the nuisance constants of `settings` (accelerometer
    bias, yaw moment) with `bias` (per configuration, (pieces, 3); missing: none) removed from
    the specific force first; `gain` (per configuration, (n_rotors,); missing: 1) scales each
    rotor's wrench, `memo` keeps the motion columns (`idim_rows`)."""
    rows, resolved = {}, {}
    nuisance = bias is not None  # the paper's model (None) has neither nuisance
    st = replace(settings, acc_bias=settings.acc_bias and nuisance, yaw_moment=settings.yaw_moment and nuisance)
    for c in configs:
        rows[c], resolved[c] = idim_rows(configs[c], vehicle, st, (bias or {}).get(c), (gain or {}).get(c), memo)
    return rows, resolved, *assemble(rows, masses)


def _fixed_fit(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None = None,
) -> Fit:
    """TLS fit (eq. 13-20) of the columns `kept` over the row blocks `active` with the block
    factors `scale` held fixed (no re-weighting); with `noise` (`_noise_moment`) the
    bias-compensated least-squares fit of the same rows instead (`TlsSettings.eiv`)."""
    wc, bc, counts = compress(w, blocks)
    sel = active[bc]
    cols = [*kept, w.shape[1] - 1]
    ws = wc[sel][:, cols] * scale[bc[sel]][:, None]
    rows = int((counts * active).sum())
    if noise is None:
        return tls(ws, rows=rows)
    total = np.einsum("b,bij->ij", counts * active * scale**2, noise[:, cols][:, :, cols])
    return bias_compensated(ws, total, what="IDIM-TLS", rows=rows)


def cancellation_var(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None = None,
    combos: np.ndarray | None = None,
) -> np.ndarray:
    """Variance the essential-parameter step's cancellations add to each kept parameter (same
    order as `kept`; with `combos`, to each linear combination of them, a row each): the
    squared bias of setting the cancelled parameters θ_c to zero.

    Leaving out columns A_c moves the kept estimates by P θ_c, P = (A_kᵀA_k)⁻¹A_kᵀA_c (the
    omitted-variable bias; Greene, Econometric Analysis, 7th ed., Sec. 4.3.2). By Frisch-Waugh-
    Lovell the estimate P θ̂_c is d = x_reduced - x_full[kept] on the same rows and block factors
    (exact for least squares; these TLS fits agree with least squares to < 0.01 %). d² over-
    estimates the squared bias by the variance P Σ_c Pᵀ the full model adds, var_full - var_reduced
    (eq. 20 of both fits), so the term is max(d² - (var_full - var_reduced), 0): zero when the
    cancellation is harmless, the bias when a cancelled parameter is in fact not zero (e.g. ms_z
    of configuration A in a combined fit: m c_z² is 0.3 % of I_xx, 12 σ). Zero when nothing was
    cancelled or the full model is degenerate on these rows. `noise`: both fits bias-compensated
    (`_fixed_fit`); where the full model's compensated normal matrix is not positive (its noise
    moment exceeds the signal in the cancelled columns' directions), the uncompensated fits
    instead: returning zero there hid a 2 % bias of rotor gains (`TlsSettings.rotor_gains`) that
    cancelling the products of inertia caused on a simulated flight."""
    keep = active[blocks]
    excited = sorted({j for j in range(w.shape[1] - 1) if np.any(w[keep, j] != 0)} | set(kept))
    c = np.eye(len(kept)) if combos is None else combos
    if len(excited) == len(kept):
        return np.zeros(len(c))
    try:
        full = _fixed_fit(w, blocks, excited, active, scale, noise)
        red = _fixed_fit(w, blocks, kept, active, scale, noise)
    except ExcitationError:
        if noise is None:
            return np.zeros(len(c))
        return cancellation_var(w, blocks, kept, active, scale, combos=combos)
    at = [excited.index(j) for j in kept]
    d = c @ (red.x - full.x[at])
    return np.maximum(d**2 - np.einsum("ij,jk,ik->i", c, full.cov[np.ix_(at, at)] - red.cov, c), 0.0)


def floor_var(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: NoiseMoment,
    x: np.ndarray,
    combos: np.ndarray | None = None,
) -> np.ndarray:
    """Variance the doubt about the noise floors (and the disturbance, `_disturbance`) adds to the
    bias-compensated estimate x of the columns `kept` (`_fixed_fit` with `noise.total`; with
    `combos`, to each linear combination of them, a column each), per part of the moment (P, n):
    (x_s - x)², x_s the fit with part s moved by its doubt (`NoiseMoment.moves`: scaled by
    1 + δ_s); the parts' doubts are independent, so their sum is the term.

    The compensation subtracts a moment read from a floor above the band; where the noise is a
    large part of a column's power (the twice-differentiated pose in ω̇: a 5 % change of the
    angles' floor moved I_xx, I_yy 1σ and k_d, I_zz 1.35σ on a simulated motion-capture
    flight), or the floor is not the band's noise, that reading's error is a term σ must
    carry. Where the move makes the compensated normal matrix indefinite (the moment would exceed
    the signal), it is halved until it does not (at most 8 times)."""
    c = np.eye(len(kept)) if combos is None else combos
    out = np.zeros((len(noise.parts), len(c)))
    for i, move in enumerate(noise.moves):
        for _ in range(9):
            if not np.any(move):
                break
            try:
                moved = _fixed_fit(w, blocks, kept, active, scale, noise.total + move).x
            except ExcitationError:
                move = move / 2.0
                continue
            out[i] = (c @ (moved - x)) ** 2
            break
    return out


def _fit_set(
    w: np.ndarray, blocks: np.ndarray, kept: list[int], active: np.ndarray, base: np.ndarray, settings: TlsSettings
) -> tuple[Fit, np.ndarray]:
    """(Weighted) TLS of the columns `kept` over the row blocks `active` (an essential set
    already chosen, `essential`); returns the fit and the block factors."""
    wc, bc, counts = compress(w, blocks)
    sel = active[bc]
    return _fit(wc[sel][:, [*kept, w.shape[1] - 1]], bc[sel], counts * active, base, settings)


def _widened(cov: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """`cov` with `extra` added to its diagonal, every correlation kept (each row and column
    scaled by sqrt(1 + extra_i / var_i))."""
    var = np.diag(cov)
    f = np.sqrt(np.where(var > 0, 1.0 + extra / np.where(var > 0, var, 1.0), 1.0))
    return cov * np.outer(f, f)


def _spread_cov(solve: Callable[[np.ndarray], np.ndarray], n_rotors: int, spread: float) -> np.ndarray:
    """Covariance the rotors' gain spread adds to the fitted parameters (`TlsSettings.motor_spread`):
    σ_ε² J (I - 11ᵀ/n) Jᵀ with J_i = ∂x/∂ε_i by a forward difference of `solve(gain)` (the
    final fit's columns, rows and block factors, re-solved for rotor i's wrench scaled by
    1 + h; the system is linear in the gains and the TLS solution smooth in the system)."""
    h = 0.01
    x0 = solve(np.ones(n_rotors))
    jac = np.column_stack([(solve(1.0 + h * np.eye(n_rotors)[i]) - x0) / h for i in range(n_rotors)])
    proj = np.eye(n_rotors) - 1.0 / n_rotors
    return spread**2 * jac @ proj @ jac.T


def _spread_assumed(
    est: dict[str, tuple[float, float]], part: dict[str, tuple[float, float]], spread: float
) -> dict[str, str]:
    """The parameters whose variance is mostly the rotors' gain spread (`part`: their σ from
    that term alone), with the assumption in words (`Estimate.assumption`)."""
    return {
        name: (
            f"rotors assumed equal within ±{100 * spread:g} % (1σ, --motor-spread): a rotor's own gain adds a "
            f"wrench the flights cannot tell from this parameter (in hover, a CoM shift Σ ε_i r_i / n); "
            f"that assumption is {100 * part[name][1] ** 2 / std**2:.0f} % of its variance"
        )
        for name, (_, std) in est.items()
        if std > 0 and part[name][1] ** 2 > 0.5 * std**2
    }


#: Most passes of the rotor-gain estimate (`_rotor_gains`), each on rows rebuilt with the gains of
#: the last; it stops once no gain moves by more than `GAIN_TOL` (on the simulated six-config-a
#: flights with ±5 % gains the third pass moved them by < 3e-4, about 0.1σ).
GAIN_PASSES = 5
GAIN_TOL = 1e-5
#: ... and once no accelerometer bias it re-estimates (`_rebiased`) moves by more than this, m/s²
#: (1e-5 g: a first moment's scale by as much, 0.05σ of com on the simulated A + B flights; the
#: third pass moved b by 8e-5 there, 1e-5 would take five).
BIAS_TOL = 1e-4


def _gain_columns(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    bias: dict[str, np.ndarray] | None,
    gains: dict[str, np.ndarray],
    memo: dict | None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Columns of W_t for the rotors' gains at `gains` (`TlsSettings.rotor_gains`): rotor i's
    part of the k_t column, -g_i D_k,i (`assemble`), one column per rotor and configuration
    (zero in the other configurations' rows), the unknown of rotor i being k_t η_i (its gain
    becomes g_i (1 + η_i)). The first configuration's gains keep their mean (k_t is its mean
    rotor): its columns are rotor i's minus the last rotor's (η_n = -Σ η_i). With centred force
    rows (`idim_rows`), also what each column removed from them per configuration (pieces, 3,
    columns), for the accelerometer bias (`_rotor_gains`); else an empty dict."""
    n = vehicle.n_rotors
    own = np.eye(n)
    kt, means = [], []
    for i in range(n):  # one rotor's system at a time: only its k_t column is kept
        rows, _, w, blocks, _ = _system(
            configs, vehicle, masses, settings, bias, {c: g * own[i] for c, g in gains.items()}, memo
        )
        kt.append(w[:, 0].copy())
        means.append({c: -r.force_mean[:, :, 0] for c, r in rows.items() if r.force_mean is not None})
        del w, rows
    cfg = blocks // 6
    one = np.column_stack(kt)
    first = (one[:, :-1] - one[:, -1:]) * (cfg == 0)[:, None]
    columns = np.column_stack([first, *(one * (cfg == ci)[:, None] for ci in range(1, len(configs)))])
    removed = {}
    for ci, c in enumerate(configs):
        if c in means[0]:
            per = np.stack([m[c] for m in means], axis=-1)  # (pieces, 3, rotors)
            before, after = (0, n * (len(configs) - 1)) if ci == 0 else (n * ci - 1, n * (len(configs) - 1 - ci))
            own_cols = per[..., :-1] - per[..., -1:] if ci == 0 else per
            pad = [np.zeros((*per.shape[:2], k)) for k in (before, after)]
            removed[c] = np.concatenate([pad[0], own_cols, pad[1]], axis=-1)
    return columns, removed


def _gain_map(gains: dict[str, np.ndarray]) -> np.ndarray:
    """Rotor thrust coefficients k_t g_i (1 + η_i) per configuration (rows, first configuration
    first) as a linear map of [k_t, the gain unknowns of `_gain_columns`] (at η = 0)."""
    g = list(gains.values())
    n = len(g[0])
    first = np.vstack([np.eye(n - 1), -np.ones(n - 1)])
    m = np.zeros((n * len(g), 1 + (n - 1) + n * (len(g) - 1)))
    m[:, 0] = np.concatenate(g)
    m[:n, 1:n] = g[0][:, None] * first
    for ci in range(1, len(g)):
        m[n * ci : n * (ci + 1), n + n * (ci - 1) : n + n * ci] = np.diag(g[ci])
    return m


def _final_fit(
    w: np.ndarray,
    blocks: np.ndarray,
    rows: dict[str, Rows],
    masses: dict[str, float],
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    nm: NoiseMoment | None,
    settings: TlsSettings,
    fit: Fit | None = None,
    sol: _Solution | None = None,
) -> tuple[Fit, np.ndarray, tuple[str, ...]]:
    """The final fit of the columns `kept` with its covariance: bias-compensated with the noise
    moment `nm` (`TlsSettings.eiv`), else `fit` (or TLS with the block factors `scale` held),
    the HAC covariance when asked (with centred force rows, the accelerometer bias's path into
    the moment rows in it either way, `_bias_profiled`), widened by what the essential step's
    cancellations and the doubt about the noise floors (`floor_var`, returned too: zeros without
    `nm`) add, and the cancelled unknowns of `sol` it should keep (`_restored`; none without `sol`)."""
    noise = None if nm is None else nm.total
    if noise is not None or fit is None:
        fit = _fixed_fit(w, blocks, kept, active, scale, noise)
    if settings.covariance == "hac" or settings.centred:
        fit = replace(
            fit, cov=_covariance(w, blocks, rows, kept, active, scale, fit.x, noise, settings, (masses, None))
        )
    floor = np.zeros((0, len(kept))) if nm is None else floor_var(w, blocks, kept, active, scale, nm, fit.x)
    back = () if sol is None else _restored(sol.names, sol.history, w, blocks, kept, fit, active, scale, noise)
    extra = cancellation_var(w, blocks, kept, active, scale, noise) + floor.sum(axis=0)
    return replace(fit, cov=_widened(fit.cov, extra)), floor, back


@dataclass(frozen=True)
class _Gains:
    """The rotors' thrust coefficients k_t g_i per configuration (`_rotor_gains`): values,
    covariance and each gain's σ relative to k_t (configurations in order, rotors within), the
    system built with the gains (rows, resolved settings, W_t, row blocks) and the final fit of
    the parameters (their covariance marginal over the gains), and the variance in it that the
    doubt about the noise floors added (`floor_var`)."""

    value: np.ndarray
    cov: np.ndarray
    rel_std: np.ndarray
    system: tuple[dict[str, Rows], dict[str, dict], np.ndarray, np.ndarray]
    fit: Fit
    floor: np.ndarray
    bias: dict[str, np.ndarray]
    restore: tuple[str, ...] = ()


def _rotor_gains(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    sol: _Solution,
    noise: NoiseMoment | None,
    memo: dict | None,
) -> _Gains:
    """Each rotor's own gain (`TlsSettings.rotor_gains`) with the essential set, row blocks and
    block factors of `sol`: the gain columns (`_gain_columns`) join W_t, whose rows are rebuilt
    with the gains found, and the accelerometer bias the compensated fit finds (`_rebiased`),
    until they settle (`GAIN_PASSES`); the last pass's fit, η ≈ 0, gives
    their covariance with every parameter (the errors-in-variables noise of `noise` is zero
    in these rotor-only columns), widened as `_final_fit` does, the rotors' coefficients by
    the cancellations' bias of each (a combination of the unknowns, `cancellation_var`)."""
    gains = {c: np.ones(vehicle.n_rotors) for c in configs}
    bias = sol.bias0 if settings.nuisance else None
    rows = w = wa = None
    for npass in range(1, GAIN_PASSES + 1):
        rows = w = wa = None  # the last pass's system is let go before the next is built
        rows, resolved, w, blocks, _ = _system(configs, vehicle, masses, settings, bias, gains, memo)
        extra, removed = _gain_columns(configs, vehicle, masses, settings, bias, gains, memo)
        ne, nw = extra.shape[1], w.shape[1] - 1
        wa = np.column_stack([w[:, :-1], extra, w[:, -1]])
        cols = [*sol.kept, *range(nw, nw + ne)]
        padded = None if noise is None else noise.padded(nw, ne)
        na = None if padded is None else padded.total
        fit = _fixed_fit(wa, blocks, cols, sol.active, sol.scale, na)
        k = len(sol.kept)
        kt, eta = fit.x[0], fit.x[k:] / fit.x[0]
        m = _gain_map(gains)
        new = (m @ np.concatenate([[kt], kt * eta])) / kt
        if not np.all(np.isfinite(new) & (new > 0)):
            raise ExcitationError("the rotors' gains are not separated by these flights")
        gains = dict(zip(configs, (new / np.mean(new[: vehicle.n_rotors])).reshape(len(configs), -1), strict=True))
        left = {}
        if noise is not None and settings.centred:  # the compensated fit's bias for the next pass (`_rebiased`)
            left = _acc_bias(rows, np.concatenate([_full(fit.x[:k], sol.kept, nw), fit.x[k:]]), masses, removed)
        settled = np.max(np.abs(eta)) < GAIN_TOL and all(np.abs(b).max() < BIAS_TOL for b in left.values())
        if settled or npass == GAIN_PASSES:
            break  # the bias stays the one these rows were built with (`_bias_of` adds what they leave)
        bias = {c: bias[c] + left.get(c, 0.0) for c in bias} if bias is not None else None
    if settings.covariance == "hac" or settings.centred:
        profile = (masses, removed)
        fit = replace(fit, cov=_covariance(wa, blocks, rows, cols, sol.active, sol.scale, fit.x, na, settings, profile))
    back = _restored(sol.names, sol.history, wa, blocks, cols, fit, sol.active, sol.scale, na)
    mm = np.zeros((len(m), len(cols)))  # the rotors' coefficients from every unknown of the fit
    mm[:, [0, *range(k, len(cols))]] = m
    combos = np.vstack([np.eye(len(cols)), mm])
    floor = np.zeros((0, len(combos)))
    if padded is not None:
        floor = floor_var(wa, blocks, cols, sol.active, sol.scale, padded, fit.x, combos)
    extra = cancellation_var(wa, blocks, cols, sol.active, sol.scale, na, combos) + floor.sum(axis=0)
    cov = _widened(mm @ fit.cov @ mm.T, extra[len(cols) :])  # a sum's bias is not its terms' widened
    value = m @ np.concatenate([[kt], fit.x[k:]])
    kf = replace(fit, x=fit.x[:k], cov=_widened(fit.cov, extra[: len(cols)])[:k, :k])
    return _Gains(
        value, cov, np.sqrt(np.diag(cov)) / kt, (rows, resolved, w, blocks), kf, floor[:, :k], bias or {}, back
    )


#: A rotor's gain further than this many assumed spreads (`TlsSettings.motor_spread`) from the
#: first configuration's mean is no rotor's own: the flights did not separate the gains (a
#: hover-only flight, whose accelerometer bias also was not separable, gave -99.8 and +102 %
#: at a σ of 0.05 %), as `ACC_BIAS_PLAUSIBLE` judges a bias.
GAIN_PLAUSIBLE = 5.0


def _unseparated(gains: _Gains | None, n_rotors: int, spread: float) -> str:
    """Why the rotors' gains `gains` (None: their fit was degenerate) do not count as measured,
    in words; "" when they do: every gain's σ below the assumed `spread` and every gain within
    `GAIN_PLAUSIBLE` spreads of the first configuration's mean."""
    if gains is None:
        known = "their fit is degenerate"
    else:
        worst = float(gains.rel_std.max())
        far = float(np.max(np.abs(gains.value / np.mean(gains.value[:n_rotors]) - 1.0)))
        if worst < spread and far <= GAIN_PLAUSIBLE * spread:
            return ""
        known = f"σ up to {100 * worst:.2g} %" if worst >= spread else f"a gain {100 * far:.3g} % off their mean"
    return (
        f"the rotors' gains are not separated by these flights ({known}; the assumed spread is {100 * spread:g} %): "
        "their spread is assumed instead; fly roll and pitch manoeuvres"
    )


def _gain_report(sol: _Solution, est: dict[str, tuple[float, float]]) -> list[str]:
    """Adds the rotors' thrust coefficients of `sol` (`TlsSettings.rotor_gains`) to `est` as
    `k_t_mI` (`k_t_mI@C` per configuration when several); returns the notes: the gains in % of
    the first configuration's mean rotor (k_t), or why they were not estimated."""
    gains, cfgs = sol.gains, list(sol.rows)
    if gains is None:
        return [sol.gains_unseparated] if sol.gains_unseparated else []
    n = len(gains.value) // len(cfgs)
    kt = float(np.mean(gains.value[:n]))
    sd = np.sqrt(np.diag(gains.cov))
    notes = []
    for ci, c in enumerate(cfgs):
        suf = "" if len(cfgs) == 1 else f"@{c}"
        at = slice(n * ci, n * (ci + 1))
        est |= {
            f"k_t_m{i + 1}{suf}": (float(v), float(e))
            for i, (v, e) in enumerate(zip(gains.value[at], sd[at], strict=True))
        }
        pct = ", ".join(
            f"{100 * (v / kt - 1):+.2f} ± {100 * r:.2f}"
            for v, r in zip(gains.value[at], gains.rel_std[at], strict=True)
        )
        notes.append(f"rotor gains estimated{' of ' + c if suf else ''} (k_t_m1..{n}{suf}), % of k_t: [{pct}]")
    return notes


@dataclass(frozen=True)
class _Solution:
    """What `_solve` found: the final system (rows, resolved settings, W_t, row blocks, column
    names), the fit with its covariance, the essential columns, block factors, cancellation
    history, fitted row blocks, the first pass's accelerometer bias, the covariance the
    rotors' gain spread adds (already in `fit.cov`), the rotors' gains where estimated
    (`TlsSettings.rotor_gains`) and, where they were tried but not separated, why."""

    rows: dict[str, Rows]
    resolved: dict[str, dict]
    w: np.ndarray
    blocks: np.ndarray
    names: list[str]
    fit: Fit
    kept: list[int]
    scale: np.ndarray
    history: list[dict[str, Any]]
    active: np.ndarray
    bias0: dict[str, np.ndarray]
    spread: np.ndarray
    gains: _Gains | None = None
    gains_unseparated: str = ""
    floor: np.ndarray | None = None
    doubt: np.ndarray | None = None
    restored: tuple[str, ...] = ()
    disturbance: dict[str, np.ndarray] = field(default_factory=dict)


def _selected(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    base: np.ndarray,
    settings: TlsSettings,
    memo: dict | None = None,
    gain: dict[str, np.ndarray] | None = None,
) -> _Solution:
    """Rows and essential parameters (the paper's procedure, Sec. III-B), with the accelerometer
    bias (`TlsSettings.acc_bias`) estimated and removed; with `gain` (`idim_rows`) the rotors'
    wrench scaled by it and their gain columns (`_gain_columns`) in every fit of the selection.
    The fit and covariance are not yet the final ones (`_solve`)."""
    rows, resolved, w, blocks, names = _system(configs, vehicle, masses, settings, None, gain, memo)
    w_ref = None
    if settings.nuisance:  # the paper's model sets r_σ's scale (`essential`)
        w_ref = w
        del rows  # each system is let go before the next is built (their size sets the peak)
        rows, resolved, w, blocks, names = _system(configs, vehicle, masses, settings, {}, gain, memo)
    extra = None
    if gain is not None:
        extra = _gain_columns(configs, vehicle, masses, settings, {} if settings.nuisance else None, gain, memo)[0]
    fit, kept, scale, history, active = essential(w, blocks, base, names, settings, w_ref, extra)
    del w_ref, extra
    bias0: dict[str, np.ndarray] = {}
    if settings.centred:  # b also enters the moment rows (-[s]x ms): once more with s - b throughout
        bias0 = _acc_bias(rows, _full(fit.x[: len(kept)], kept, len(names)), masses)
        del rows, w
        rows, resolved, w, blocks, names = _system(configs, vehicle, masses, settings, bias0, gain, memo)
        fit, scale = _fit_set(w, blocks, kept, active, base, settings)
    return _Solution(rows, resolved, w, blocks, names, fit, kept, scale, history, active, bias0, np.zeros(0))


def _rebiased(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    sol: _Solution,
    noise: np.ndarray,
    memo: dict | None,
) -> _Solution:
    """`sol` with the accelerometer bias re-estimated from the bias-compensated fit and its system
    rebuilt with it. The first pass's b (`_selected`) comes from the paper's TLS, which the
    sensor noise biases (k_t -0.06 % on six-config-a), so b_z is off by about that share of g;
    the final fit corrects k_t, but the moment rows keep s - b in -[s]x ms, where b_z's error
    scales the first moments by 1 + Δb_z / g (+0.04-0.05 % in every simulated flight, 1.3-1.5σ̄ of
    com_x, com_y in configuration B: the same bias with or without the compensation)."""
    fit = _fixed_fit(sol.w, sol.blocks, sol.kept, sol.active, sol.scale, noise)
    x = _full(fit.x, sol.kept, len(sol.names))
    bias = {c: b + sol.bias0[c] for c, b in _acc_bias(sol.rows, x, masses).items()}
    sol = replace(sol, rows={}, w=np.empty((0, 0)))  # the old system is let go before the new is built
    rows, resolved, w, blocks, _ = _system(configs, vehicle, masses, settings, bias, None, memo)
    return replace(sol, rows=rows, resolved=resolved, w=w, blocks=blocks, bias0=bias)


#: A cancelled unknown comes back (`_restored`) when leaving the cancelled ones out moves a kept
#: one by more than this many of its reported σ.
RESTORE_Z = 1.0


def _restored(
    names: list[str],
    history: list[dict[str, Any]],
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    fit: Fit,
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None,
) -> tuple[str, ...]:
    """Names of the unknowns `essential` cancelled as not significant (not the yaw pair, not the
    unexcited) that the bias-compensated final fit should keep: their joint omitted-variable
    bias d = x_kept - x_all[kept] (`cancellation_var`) moves some kept unknown j by more than
    RESTORE_Z of its σ in `fit` (the reported, HAC σ of the fit without them, before the
    cancellations widen it). The paper's TLS, on which `essential` ranks, does not see it: on
    the simulated motion-capture A + B flights, I_yz@A, I_xy@A, I_xy@B (t 0.8-1.5 each)
    shifted the gains of rotors 1 and 3 of A by 0.6σ and com_x@A by -0.4 % (-0.53 % against
    -0.13 % kept, seed 0), the same in every flight. The fewest of them, by their t in the fit
    with all, that leave no such move come back. `kept` may hold more columns of `w` than
    `names` (the rotors' gains, `_rotor_gains`), which are never candidates."""
    gone = {h["name"] for h in history if h["why"] == "largest %σ" and not h["name"].startswith(YAW_PAIR)}
    cand = [j for j, n in enumerate(names) if n in gone and np.any(w[active[blocks], j] != 0)]
    if noise is None or not cand:
        return ()
    cols = sorted([*kept, *cand])
    try:
        full = _fixed_fit(w, blocks, cols, active, scale, noise)
    except ExcitationError:
        return ()
    at, var = [cols.index(j) for j in kept], RESTORE_Z**2 * np.diag(fit.cov)
    if not np.any((fit.x - full.x[at]) ** 2 > var):
        return ()
    t = {j: abs(full.x[cols.index(j)]) / np.sqrt(full.cov[cols.index(j), cols.index(j)]) for j in cand}
    order = sorted(cand, key=lambda j: -t[j])
    for m in range(1, len(order)):  # the fewest, most significant first, that leave no such move
        sub = sorted([*kept, *order[:m]])
        part = _fixed_fit(w, blocks, sub, active, scale, noise)
        if np.all((part.x[[sub.index(j) for j in kept]] - full.x[at]) ** 2 <= var):
            return tuple(names[j] for j in order[:m])
    return tuple(names[j] for j in order)


def _restored_note(names: tuple[str, ...], settings: TlsSettings) -> list[str]:
    """In words, the cancelled unknowns `_restored` brought back."""
    if not names:
        return []
    return [
        f"{', '.join(names)} kept though within {settings.cancel_z:g}σ of zero: leaving them out moved another "
        f"parameter by more than {RESTORE_Z:g} of its σ in the bias-compensated fit (a bias the same in every flight)"
    ]


def _kept_too(sol: _Solution, names: tuple[str, ...]) -> _Solution:
    """`sol` with the cancelled unknowns `names` kept (`_restored`), out of the history."""
    if not names:
        return sol
    kept = sorted([*sol.kept, *(sol.names.index(n) for n in names)])
    return replace(sol, kept=kept, history=[h for h in sol.history if h["name"] not in names])


def _solve(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    base: np.ndarray,
    settings: TlsSettings,
    memo: dict | None = None,
) -> _Solution:
    """`_solve_once`, and once more with the cancelled unknowns `_restored` says the final fit
    should keep (`_Solution.restored` names them; not with `cancel_z` inf, the paper's rule)."""
    sol, back, nm = _solve_once(configs, vehicle, masses, base, settings, memo)
    if not back or not np.isfinite(settings.cancel_z):
        return sol
    return replace(_solve_once(configs, vehicle, masses, base, settings, memo, back, nm)[0], restored=back)


def _solve_once(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    base: np.ndarray,
    settings: TlsSettings,
    memo: dict | None = None,
    restore: tuple[str, ...] = (),
    nm: NoiseMoment | None = None,
) -> tuple[_Solution, tuple[str, ...], NoiseMoment | None]:
    """Rows, essential parameters (`_selected`, with the cancelled `restore` kept), the final fit
    and its covariance, the cancelled unknowns to restore (`_restored`) and the noise moment
    (`_noise_moment`; `nm`, that of an earlier pass over the same rows, is used as it is when
    `restore` is given): the paper's procedure, with the accelerometer-bias nuisance (`TlsSettings.acc_bias`), the HAC covariance
    and the rotors' own gains (`TlsSettings.rotor_gains`) or, where the flights do not separate
    them, their assumed spread (`TlsSettings.motor_spread`) when asked; `memo` as in
    `idim_rows`. With the gains, the essential set is chosen with their columns in every fit
    (`essential`'s `extra`): the paper's model with equal rotors hands the gains' hover moment to
    the first moments and can cancel one that is not zero (ms_x of six-config-a-mismatch seed
    4: -0.27 g m for -4.5 g m), which would leave the gains unseparated."""
    want = settings.rotor_gains and settings.motor_spread > 0
    ones = {c: np.ones(vehicle.n_rotors) for c in configs} if want else None
    sol = _kept_too(_selected(configs, vehicle, masses, base, settings, memo, ones), restore)
    if settings.eiv and not (restore and nm is not None):
        nm = _noise_moment(configs, vehicle, masses, settings, sol.rows, sol.resolved, memo)
        nm = _disturbance(configs, vehicle, masses, settings, sol, nm)
    noise = None if nm is None else nm.total
    if noise is not None and settings.centred and not want:  # with the gains, their passes do it
        sol = _rebiased(configs, vehicle, masses, settings, sol, noise, memo)
    why = ""
    if want:
        sol = replace(sol, rows={}, w=np.empty((0, 0)))  # the gains' passes rebuild the system (memory)
        try:
            gains = _rotor_gains(configs, vehicle, masses, settings, sol, nm, memo)
        except ExcitationError:  # the gains' fit is degenerate: nothing separates them
            gains = None
        why = _unseparated(gains, vehicle.n_rotors, settings.motor_spread)
        if gains is not None and not why:
            rows, resolved, w, blocks = gains.system
            spread = np.zeros_like(gains.fit.cov)
            doubt = nm.doubt if nm is not None else None
            bias = gains.bias if settings.nuisance else sol.bias0
            sol = replace(sol, rows=rows, resolved=resolved, w=w, blocks=blocks, fit=gains.fit, spread=spread)
            dist = {} if nm is None else nm.disturbance
            sol = replace(sol, gains=gains, floor=gains.floor, doubt=doubt, bias0=bias, disturbance=dist)
            return sol, gains.restore, nm
        sol = _kept_too(_selected(configs, vehicle, masses, base, settings, memo), restore)  # equal rotors
        if nm is not None:  # read from this selection's residuals, as without the gains
            nm = _disturbance(configs, vehicle, masses, settings, sol, nm.sensors())
            noise = nm.total
        if noise is not None and settings.centred:
            sol = _rebiased(configs, vehicle, masses, settings, sol, noise, memo)
    kept, scale, active = sol.kept, sol.scale, sol.active
    fit, floor, back = _final_fit(sol.w, sol.blocks, sol.rows, masses, kept, active, scale, nm, settings, sol.fit, sol)
    spread = np.zeros_like(fit.cov)
    if settings.motor_spread > 0:

        def solve_gain(gain: np.ndarray) -> np.ndarray:
            bias = sol.bias0 if settings.nuisance else None
            wg, bg = _system(configs, vehicle, masses, settings, bias, dict.fromkeys(configs, gain), memo)[2:4]
            return _fixed_fit(wg, bg, kept, active, scale, noise).x

        spread = _spread_cov(solve_gain, vehicle.n_rotors, settings.motor_spread)
        fit = replace(fit, cov=fit.cov + spread)
    doubt, dist = (None, {}) if nm is None else (nm.doubt, nm.disturbance)
    sol = replace(sol, fit=fit, spread=spread, gains_unseparated=why, floor=floor, doubt=doubt, disturbance=dist)
    return sol, back, nm


def _solve_separated(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    base: np.ndarray,
    settings: TlsSettings,
) -> tuple[_Solution, TlsSettings, str, float | None, str]:
    """`_solve`; when the accelerometer bias it estimates is beyond any sensor offset
    (`ACC_BIAS_PLAUSIBLE`), the flights do not separate it from the thrust: solved again with
    the paper's model, and the reason in words for k_t's assumption ("" when separated). An
    `imu_delay` of None is estimated first (`_imu_lag`; why it could not be, returned last, ""
    when it was), a `mocap_delay` of None measured (`_pose_lag`, returned: None when given or not
    measurable); the rotor drag is left out when a flight has no attitude or no position or
    velocity."""
    if settings.rotor_drag and not all(_posed(f) for fs in configs.values() for f in fs):
        settings = replace(settings, rotor_drag=False)
    memo: dict = {}  # the motion columns, shared by every fit of this identification (`idim_rows`)
    lag = _pose_lag(configs, vehicle, settings) if settings.mocap_delay is None else None
    if settings.mocap_delay is None:
        settings = replace(settings, mocap_delay=lag or 0.0)  # behind the IMU; + its own lag below
    imu_why = ""
    if settings.imu_delay is None:
        imu_lag, imu_why = _imu_lag(configs, vehicle, masses, base, settings, lag, memo)
        settings = replace(settings, imu_delay=imu_lag)
    if lag is not None:  # the pose timed against the IMU, the IMU against the rotor signals
        settings = replace(settings, mocap_delay=lag + settings.imu_delay)
    sol = _solve(configs, vehicle, masses, base, settings, memo)
    if not settings.centred:
        return sol, settings, "", lag, imu_why
    worst = max(float(np.abs(b).max()) for b in _bias_of(sol, masses).values())
    if worst <= ACC_BIAS_PLAUSIBLE:
        return sol, settings, "", lag, imu_why
    settings = replace(settings, acc_bias=False)
    why = (
        f"the accelerometer bias is not separable from the thrust in these flights (it came out "
        f"{worst:.2g} m/s², no sensor offset): solved without it, k_t assumes zero bias "
        f"± {ACC_BIAS_Z_SIGMA:g} m/s² (1σ); fly thrust changes to measure it"
    )
    return _solve(configs, vehicle, masses, base, settings, memo), settings, why, lag, imu_why


def _imu_lag(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    base: np.ndarray,
    settings: TlsSettings,
    lag: float | None,
    memo: dict,
) -> tuple[float, str]:
    """The IMU's lag behind the rotor signals (`_estimate_imu_delay`) and, when it could not be
    found, why ("" otherwise). The motion-capture source needs it only when its pose was timed
    against the IMU (`lag`, `_pose_lag`): the pose then lags the rotor signals by `lag` plus
    this, found by the IMU-source model of the same flights (on the mismatch flights, IMU 4 ms
    and pose 8 ms late, `lag` alone is 4 ms and left com_z -4.8σ̄); 0 otherwise, or where the
    flights do not carry that model (the reason then goes into the pose's note, `_pose_note`)."""
    if settings.source == "imu":
        return _estimate_imu_delay(configs, vehicle, masses, base, settings, lag is not None, memo), ""
    if lag is None:
        return 0.0, ""
    try:  # its own memo: the motion columns of the other source
        return _estimate_imu_delay(configs, vehicle, masses, base, replace(settings, source="imu"), True, {}), ""
    except RotoridError as e:
        return 0.0, str(e)


def _pose_note(lag: float | None, settings: TlsSettings, imu_why: str = "") -> str:
    """How the pose's lag (`TlsSettings.mocap_delay` None) was found, in words; `imu_why`: why
    the IMU's own lag could not be estimated (`_imu_lag`), "" when it was."""
    use = "motion" if settings.source == "mocap" else "rotor-drag velocity"
    if lag is None:
        return (
            f"the pose could not be timed against the accelerometer (none logged, or every piece shorter than "
            f"the search): its lag is taken as 0 for the {use} (give --mocap-delay)"
        )
    own = f" with the IMU's own {1e3 * settings.imu_delay:.1f} ms"
    if imu_why:
        own = f" (the IMU's own lag behind them could not be estimated, taken as 0; give --imu-delay: {imu_why})"
    return (
        f"the pose lags the IMU by {1e3 * lag:.1f} ms (measured from the specific force), the rotor "
        f"signals by {1e3 * settings.mocap_delay:.1f} ms{own}: the {use} is aligned to them"
    )


def _pose_lag(configs: dict[str, list[Flight]], vehicle: Vehicle, settings: TlsSettings) -> float | None:
    """The logged pose's lag behind the IMU (`motion.pose_lag`), the mean over every airborne
    piece weighted by its length; None where no piece logs both (or the pose is not used)."""
    if settings.source == "imu" and not settings.rotor_drag:
        return None
    lags, spans = [], []
    for p in (p for fs in configs.values() for f in fs for p in airborne_pieces(f)):
        d = pose_lag(p, vehicle, settings.motion)
        if d is not None:
            lags.append(d)
            spans.append(p.t[-1] - p.t[0])
    return float(np.average(lags, weights=spans)) if lags else None


def _estimate_imu_delay(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    base: np.ndarray,
    settings: TlsSettings,
    pose_measured: bool = False,
    memo: dict | None = None,
) -> float:
    """The IMU's lag behind the rotor signals (`TlsSettings.imu_delay`) that maximises the
    Gaussian likelihood of the IDIM with a variance per row block (the model of the block
    weighting, Sec. III-B): τ minimising Σ_j n_j log rms_j(τ) over ±`MAX_IMU_DELAY`, with the
    essential set, active blocks and accelerometer bias of a first fit at τ = 0. The cost is not
    unimodal over that range (on a noise-free flight its well at the true lag is ~1 ms wide, and
    Brent over the whole range settled at -6 ms for a true 0): a 5 ms grid picks the well, Brent
    refines within one grid step either side of the best point. With `pose_measured`,
    `settings.mocap_delay` is the pose's lag behind the IMU (`_pose_lag`): it moves with τ.
    `memo` as in `idim_rows`: only the rotor columns change with τ."""
    from scipy.optimize import minimize_scalar

    st = replace(settings, imu_delay=0.0, motor_spread=0.0)
    sol = _solve(configs, vehicle, masses, base, st, memo)
    act, kept, bias0 = sol.active, sol.kept, sol.bias0
    del sol  # its system, the size of the one each cost builds

    def cost(tau: float) -> float:  # a measured pose lag (behind the IMU) moves with the IMU's
        lagged = replace(st, imu_delay=tau, mocap_delay=st.mocap_delay + (tau if pose_measured else 0.0))
        w, blocks = _system(configs, vehicle, masses, lagged, bias0 if st.nuisance else None, None, memo)[2:4]
        wc, bc, counts = compress(w, blocks)
        sel = act[bc]
        fit, _ = _fit(wc[sel][:, [*kept, w.shape[1] - 1]], bc[sel], counts * act, base, st)
        res = w[:, [*kept, w.shape[1] - 1]] @ np.append(fit.x, 1.0)
        ss = np.bincount(blocks, weights=res**2, minlength=len(counts))
        n = counts[act]
        return float(np.sum(n * np.log(ss[act] / n)) / 2)

    grid = np.linspace(-MAX_IMU_DELAY, MAX_IMU_DELAY, 11)
    best = grid[int(np.argmin([cost(tau) for tau in grid]))]
    h = grid[1] - grid[0]
    bounds = (max(best - h, -MAX_IMU_DELAY), min(best + h, MAX_IMU_DELAY))
    found = minimize_scalar(cost, bounds=bounds, method="bounded", options={"xatol": 1e-4})
    return float(found.x)


@one_blas_thread
def identify(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float] | None = None,
    weights: dict[str, float] | None = None,
    settings: TlsSettings | None = None,
) -> Result:
    """IDIM-TLS identification (Six et al.) of one or several mass configurations sharing
    the propeller coefficients (eq. 24-25). `configs` maps a configuration name ("A", "B",
    ...) to its flights; `masses` gives each configuration's measured mass (config A
    defaults to `vehicle.mass`), `weights` its row weight k_w (default 1)."""
    settings = settings or TlsSettings()
    weights = dict(weights or {})
    masses = _checked_masses(configs, vehicle, dict(masses or {}), weights)
    cfgs = list(configs)
    masses = {c: masses[c] for c in cfgs}
    base = np.repeat([float(weights.get(c, 1.0)) for c in cfgs], 6)

    asked = settings
    sol, settings, unseparated, pose_lagged, imu_why = _solve_separated(configs, vehicle, masses, base, settings)
    rows, resolved, w, blocks, names = sol.rows, sol.resolved, sol.w, sol.blocks, sol.names
    fit, kept, scale, history, active, spread = (sol.fit, sol.kept, sol.scale, sol.history, sol.active, sol.spread)
    nfull = len(names)
    x = np.zeros(nfull)
    cov = np.zeros((nfull, nfull))
    x[kept] = fit.x
    cov[np.ix_(kept, kept)] = fit.cov
    kept_names = {names[j] for j in kept}
    est = _estimates(x, cov, names, kept_names, masses)
    if unseparated and "k_t" in est:  # a z bias b moves k_t by b/g of itself (hover: k_t sum u^2 = m (g + b))
        kt, std = est["k_t"]
        est["k_t"] = (kt, float(np.hypot(std, kt * ACC_BIAS_Z_SIGMA / GRAVITY)))
    spread_cov = np.zeros_like(cov)  # `cov` stays the parameters' own, for the diagnostics
    spread_cov[np.ix_(kept, kept)] = spread
    assumed = _spread_assumed(est, _estimates(x, spread_cov, names, kept_names, masses), settings.motor_spread)
    observability = _observability(names, fit, kept, history, cfgs, settings)
    if unseparated and "k_t" in est:
        observability["k_t"]["rel_std_pct"] = Estimate(*est["k_t"]).rel_std_pct
    if "k_tau" in est:
        value, std = est["k_tau"]
        observability["k_tau"] = {
            "identifiable": True,
            "essential": False,
            "rel_std_pct": Estimate(value, std).rel_std_pct,
        }
    if not _mocap_yaw_pair(settings):
        _withhold_yaw_pair(est, observability, [names[j] for j in kept], cfgs)
    acc_bias = _bias_of(sol, masses)
    diag: dict[str, Any] = {"configs": _diagnostics(w, blocks, x, rows, scale), "history": history}
    diag |= {"names": names, "chi": x, "cov": cov, "cond": fit.cond, "sigma_w": float(np.sqrt(fit.sigma2))}
    diag |= ({"acc_bias": acc_bias} if acc_bias else {}) | _disturbance_diagnostics(sol.disturbance)
    notes = ["I_* and ms_* are about the body origin O_d (Six et al. eq. 1-2); com_* = ms/m", *_gain_report(sol, est)]
    if unseparated:
        notes.append(unseparated)
        assumed["k_t"] = "; ".join(filter(None, (assumed.get("k_t"), unseparated)))
    mean_bias = {c: np.mean(b[np.unique(rows[c].piece)], axis=0) for c, b in acc_bias.items()}
    notes += _nuisance_notes(rows, mean_bias, _yaw_moments(rows, x), asked.rotor_drag and not settings.rotor_drag)
    notes += _floor_note(sol, [names[j] for j in kept], settings, resolved) + _restored_note(sol.restored, settings)
    if asked.mocap_delay is None and (settings.source == "mocap" or settings.rotor_drag):
        notes.append(_pose_note(pose_lagged, settings, imu_why))
    single = len(cfgs) == 1
    if not _mocap_yaw_pair(settings) and "k_d" in kept_names:
        notes.append("k_d, k_tau and I_zz are not reported from motion capture: " + MOCAP_YAW)
    if "k_d" not in kept_names and single:
        notes.append("k_d is not identifiable from one symmetric configuration (eq. 23): fly configuration B")
    for ci, c in enumerate(cfgs):
        if not active[6 * ci + 5]:
            suf = "" if single else f"@{c}"
            notes.append(f"yaw-moment rows{' of ' + c if suf else ''} left out once k_d was cancelled (no input left)")
            if f"I_zz{suf}" in kept_names:
                observability[f"I_zz{suf}"]["source"] = "gyroscopic terms of the roll/pitch rows only"
    settings_out = _settings_out(resolved, rows, masses, weights, [names[j] for j in kept], active)
    settings_out["rotor_gains"] = sol.gains is not None  # estimated, or not separated (notes)
    if mean_bias:  # validation removes it from the held-out specific force alike
        settings_out[ACC_BIAS_KEY] = {c: b.tolist() for c, b in mean_bias.items()}
    result = build_result("tls", est, settings_out, diag, observability, notes)
    for name, why in assumed.items():
        if name in result.params:
            result.params[name] = replace(result.params[name], assumption=why)
    return with_vehicle(result, vehicle, config=None if single else cfgs[0])
