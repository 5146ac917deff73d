"""Online inertia-parameter estimation (Kwon et al., 004_…): the observability-aware RLS with a
Kalman filter on the angular rate, and the paper's baselines plain RLS and RLS with a low-pass
filter, selectable by name (`OnlineSettings.variant`).

One sample at a time (`OnlineEstimator.update`), so it runs inside a live loop:

1. Rotor model (eq. 1–5, any layout): per-rotor thrust from the vehicle's thrust polynomial on
   the motor state (measured rotor speed, or the commands through the first-order motor lag
   `vehicle.tm_rise`/`tm_fall` with the discretisation of `signal.motor_lag`), collective force
   F and moment M about the body origin from `vehicle.mixer()` (drag torque with `k_tau`).
2. Kalman filter on the angular rate (Alg. 1–2): process model eq. 22 with the moment about the
   estimated CoM, u = M - com x F; additive variance eq. 29 from the RLS variance of the MOI with
   the lower bound J_min; measurement weight raised by r/c when the residual r exceeds c.
3. Correction law (Alg. 3–4, 6): the MOI column k of H1 is zeroed while |ω̂_k| < n_sigma σ_k
   (KF std); the lever-arm columns of H2 likewise. The moment still holds that column's term:
   its value at the current estimate, Ĵ_k h_k, moves to the output instead of being left in
   the residual (Alg. 4 drops it). Left there, it is a smooth systematic error that every
   CoM row carries (the CoM scores' lag-1 autocorrelation was 0.7; 0.1 with it moved).
4. RLS (Alg. 5, eq. 10) for θ1 = [J_xx, J_yy, J_zz, com_x, com_y] and RLS2 (Alg. 6–7, eq. 19–20)
   for θ2 = [m, m z_imu], both switched on the first time the low-pass-filtered vertical
   acceleration exceeds `a_z_allow` (take-off). The RLS also holds a constant yaw moment b_z
   (`OnlineSettings.yaw_moment`), a column eq. 10 does not have; the KF predicts with it.
5. `identify` removes the gyro's bias tracked against the logged attitude (`gyro_bias`, a
   causal series whose time constant comes from the gyro's Allan variance) before the
   estimator sees the flight (Kwon et al. assume an unbiased gyro).

Conventions: body FLU about the body origin (the rotors' geometric centre, the paper's CG). The
paper's COM offset r_COM→CG equals -com; we estimate `com` directly (the same unknown, rotorid's
sign), so the regressor columns of the CoM are those of `com x F` (the paper's eq. 10 writes them
with the opposite sign). `imu_z` is reported relative to the body origin as com_z + z_IMU(COM),
with com_z taken from `vehicle.com` (0 when unknown): the height of the body origin is arbitrary
(Sec. II-A), only the IMU's height relative to the CoM is observable.

Rate: the estimator steps at `rate_hz` (the paper's 100 Hz, Sec. IV-A); faster logs are averaged
in blocks first (the wrench per sample, then averaged), which keeps the differentiated rate's
noise at the level the paper's Table 6 settings were made for.

Where the paper leaves room or a literal reading fails (`OnlineSettings` lists them), the
defaults here were chosen on the kwon-payload scenario; `OnlineSettings.literal()` restores
the literal algorithms for comparison (benchmarks/bench_online.py).

Uncertainty: the streaming state (`OnlineState.theta1_std`, the trajectories) carries the RLS's
own covariance scaled by its a-posteriori residual variance, what a live loop can afford;
`identify` reports the HAC sandwich over the whole flight (`_final_std`), and leaves out a
parameter the flight never informed (the value would be the initial guess). Its mass and imu_z
are the errors-in-variables corrected solve of the RLS2 rows (`_final_theta2`), so they differ
from the streaming trajectory's last value by the attenuation the accelerometer noise causes
(≈ 25 ppm of the mass on kwon-payload).

Discretisation: Alg. 4 differentiates ω̂ between two steps; the KF predicts with, and H1 holds,
the wrench's exact mean over the step the two blocks' gyro means span (`OnlineEstimator._push`:
the samples of both blocks weighted by a triangle, each centred where its motor sample holds,
`OnlineSettings.motor_hold`); the rate in H1/H2 and the force and accelerometer of H2 are the
means of the two steps (the midpoint the forward difference belongs to).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import add, mul, sub
from typing import Any, NamedTuple

import numpy as np

from rotorid.errors import ExcitationError, MissingChannelError, RotoridError, VehicleError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.identified import with_vehicle
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA, MOTOR_SPREAD
from rotorid.methods.regression import leverage_diag, rls_hac_cov, sandwich
from rotorid.result import Estimate, Result, build_result, rel_error_pct, unit_of
from rotorid.vehicle import Vehicle

#: Lowest original logging rate of IMU and rotor channels (Kwon et al. ran the estimator at 100 Hz).
MIN_RATE_HZ = 50.0

VARIANTS = ("kwon", "rls", "rls-lpf")
THETA1 = ("I_xx", "I_yy", "I_zz", "com_x", "com_y")
#: θ1 as the RLS holds it: THETA1 and the constant yaw moment b_z (`OnlineSettings.yaw_moment`)
_N1 = len(THETA1) + 1
_NO_MOVE = ((0.0, 0.0, 0.0),) * 3  # no H1 entry moved to the output (every MOI column active)


@dataclass(frozen=True)
class OnlineSettings:
    """Estimator settings. Defaults are Kwon et al. Table 6 converted to SI; the noise levels the
    paper does not list (gyro_nd, moment_nd, force_nd, enable_tau) are chosen here, and three choices
    depart from a literal reading of Alg. 1–5 because the literal form locks the MOI at the
    errors-in-variables bias on the kwon-payload scenario (`OnlineSettings.literal()` restores
    it for comparison): `q_omega` > 0, `eiv` = True and the MOI variance in eq. 29 scaled by
    the RLS's a-posteriori residual variance (always on). Two more model what the paper's
    simulation leaves out and real vehicles have (`literal()` turns them off too): a constant
    yaw moment (`yaw_moment`) and the gyro bias (`gyro_bias`).

    - `variant`: "kwon" (observability-aware RLS with KF), "rls" (raw gyro, no correction law),
      "rls-lpf" (raw gyro, H1/H2/M/F through the first-order LPF of eq. 36–39).
    - `j_min` (kg m², Table 6: 1 g m²): lower bound of the MOI in eq. 28–29.
    - `omega0`, `omega_var0` (rad/s, (rad/s)²): KF initial rate and variance (0, 0.010²).
    - `gyro_nd` (rad/s/√Hz): the KF's measurement noise density; a step of dt seconds has
      R = gyro_nd²/dt (the variance of a white noise of that density averaged over dt), so the
      KF weighs the gyro the same per second at any step rate. 1e-3 gives the 0.010 rad/s
      per step of the 100 Hz design (about 10× Kwon Table 1's sensor density: the KF trusts
      its model more than the gyro, which keeps the differentiated noise out of α̂).
    - `c_sigma`: KF residual constraint of Alg. 2 in measurement σ per step (c = c_sigma
      gyro_nd/√dt); 1 gives Table 6's c = 0.010 rad/s at 100 Hz.
    - `q_omega` ((rad/s)² per s): process-noise floor of the KF added to eq. 29 (0 = paper);
      it keeps the KF gain from collapsing onto a still-wrong MOI model.
    - `n_sigma`: correction law threshold |ω̂_k| >= n_sigma σ_k (Alg. 4 and 6; paper 1).
    - `eiv`: RLS row k weighted by 1/(r_M + (Ĵ_k² + Σ_J,kk) var(α̂_k)), var(α̂_k) the
      variance the KF measurement update adds to α̂_k (errors-in-variables; paper: False); and
      `identify`'s final mass and imu_z corrected for the accelerometer noise in the RLS2
      regressor (`_final_theta2`, Fuller's known-covariance estimator; not for "rls-lpf"), and
      with the KF its final θ1 for the gyro noise in α̂ (`_final_theta1_eiv`).
    - `fixed_point`: `identify` re-runs the estimator with the KF's process model held at the
      previous run's final θ1 until the MOI settle (`_fixed_point`; paper: False, the KF
      predicts with the running estimate). Only with the KF (variant "kwon").
    - `j0`, `com0` (kg m², m): initial θ1 (1 g m², 0 mm); `theta1_var0` its variances
      ((1000 g m²)², (100 mm)²).
    - `moment_nd` (N m/√Hz): moment noise density of the RLS rows, r_M = moment_nd²/dt per
      step (1e-3: 0.01 N m per 100 Hz step).
    - `mass0` (kg), `imu_z0` (m, relative to the CoM): initial θ2 (100 g, 0 mm);
      `theta2_var0`: variances of m and m·z ((500 g)², (0.1 kg m)²).
    - `force_nd` (N/√Hz): force noise density of the RLS2 rows, force_nd²/dt per step (1e-2:
      0.1 N per 100 Hz step).
    - `lpf_tau` (s): time constant of the first-order LPF of eq. 36–39, used by "rls-lpf" only;
      the paper's α_RLS = 0.2 per sample at 100 Hz is τ = -0.01 s / ln(1 - 0.2) = 44.8 ms, and
      a step of dt uses α = 1 - exp(-dt/τ).
    - `rate_hz` (Hz): the estimator's rate (the paper's 100 Hz, Sec. IV-A); faster input is
      averaged in blocks on a fixed grid of 1/rate_hz (a 250 Hz log alternates blocks of 3 and 2
      samples, 100 steps per second) before the KF (None: every sample is a step).
    - `motor_spread`: assumed relative 1σ spread of the rotors' thrust gains about their mean
      (eq. 1–5 take one C_T for all rotors; default `MOTOR_SPREAD`). A rotor stronger by ε_i
      adds the moment ε_i f_i (r_i - c) x z, which in hover no flight separates from a CoM
      shift Δc = Σ ε_i r_i / n (4 µm scatter against 2 mm at 3 % on kwon-payload). Its effect
      enters σ of θ1 as σ_ε² J (I - 11ᵀ/n) Jᵀ, J_i = ∂θ1/∂ε_i of the final fit with each row's
      rotor thrust f_i(t) (the common mode is C_T's own error, the user's input): the hover part
      moves the CoM, the part that follows the manoeuvres scales the inertia (1.5–2 % at 3 % on
      kwon-payload, as re-running the estimator with one rotor 1 % stronger gives; the batch
      form holds the KF's α̂ fixed and gives 75–100 % of that). A parameter whose variance is
      mostly this term is labelled assumed. 0 turns it off.
    - `acc_bias_z_sigma` (m/s²): assumed σ of the accelerometer's z bias b (default
      `ACC_BIAS_Z_SIGMA`): m = F/a in eq. 19 moves by about -m b/g, which nothing in the flight
      separates from the mass; it enters σ of mass and imu_z likewise. 0 turns it off.
    - `yaw_moment` (N m): prior σ of a constant yaw moment b_z, a column of the yaw row of eq. 10
      (regressor 1) and a term of the KF's process model; 0 leaves it out (the paper). The
      rotors' gain spread times k_tau, a trim the yaw controller holds, is such a moment (0.1 N m
      on kwon-payload-mismatch, 5 % spread times k_tau 1.43 m). Without the column the RLS
      explains it through the yaw row's gyroscopic regressors ±p q, which are systematic in a
      diagonal manoeuvre: J_xx ran to 1100x on 4/30 seeds, and a 3 % spread moved I_zz by
      147 % (re-running the estimator with one rotor 1 % stronger; 0.02 % with the column). In x
      and y a constant moment is the CoM's column already (F_z ≈ m g).
    - `gyro_bias`: `identify` subtracts the gyro's bias tracked against the logged attitude
      (`gyro_bias`: a causal series, so a bias that walks is followed; nothing without an
      attitude). A bias above the KF's σ keeps the
      correction law's column active in hover (Alg. 4), where the rows carry α̂ noise without a
      moment: 0.5 deg/s attenuated J by 20–40 % on kwon-payload-mismatch.
    - `motor_hold` (s): how long each logged motor sample (command or rotor speed) holds after
      its time stamp, e.g. the autopilot's mixer period when the log records every mixer output
      (the ESC holds each command until the next). The wrench a sample reports is then centred
      half of min(motor_hold, log interval) after its stamp, which sets the moment the KF
      integrates and the RLS rows hold (`OnlineEstimator._push`). 0: point samples, the wrench
      linear between the stamps, as a measured rotor speed (ESC telemetry) of a continuous state or
      a log slower than the mixer gives. None (default): the flight's `meta["motor_hold"]` (s)
      where its reader or the simulator records it (`rotorid.sim.simulator._motor_hold`: the
      control period where the motors follow their commands at once), else 0; the streaming
      `update` has no flight, there None is 0. Commands through the motor lag
      (`vehicle.tm_rise`) give the motor state at the stamps, which is centred there (0 whatever
      is set). Held samples read as point samples put the moment half a log sample late (I_xx,
      I_yy +0.12 % on a noise-free kwon-payload flight, 1 kHz log of its 500 Hz controller,
      which the KF turns into a gain error of α̂); point samples read as held for 10 ms put it
      5 ms early (-1.3 % on a 100 Hz log).
    - `a_z_allow` (m/s²): enable threshold on the LPF'd vertical acceleration (0.1);
      `enable_tau` (s): that LPF's time constant.
    """

    variant: str = "kwon"
    j_min: tuple[float, float, float] = (1e-3, 1e-3, 1e-3)
    omega0: tuple[float, float, float] = (0.0, 0.0, 0.0)
    omega_var0: float = 0.010**2
    c_sigma: float = 1.0
    gyro_nd: float = 1e-3
    q_omega: float = 1e-4
    n_sigma: float = 1.0
    eiv: bool = True
    j0: tuple[float, float, float] = (1e-3, 1e-3, 1e-3)
    com0: tuple[float, float] = (0.0, 0.0)
    theta1_var0: tuple[float, float, float, float, float] = (1.0, 1.0, 1.0, 0.01, 0.01)
    moment_nd: float = 1e-3
    mass0: float = 0.1
    imu_z0: float = 0.0
    theta2_var0: tuple[float, float] = (0.25, 0.01)
    force_nd: float = 1e-2
    lpf_tau: float = -0.01 / math.log(1.0 - 0.2)
    a_z_allow: float = 0.1
    enable_tau: float = 0.05
    rate_hz: float | None = 100.0
    motor_spread: float = MOTOR_SPREAD
    acc_bias_z_sigma: float = ACC_BIAS_Z_SIGMA
    yaw_moment: float = 1.0
    gyro_bias: bool = True
    fixed_point: bool = True
    motor_hold: float | None = None

    @staticmethod
    def literal(**changes: Any) -> OnlineSettings:
        """Alg. 1–7 read literally: no process-noise floor and a constant RLS weight (still at
        the paper's 100 Hz)."""
        return OnlineSettings(
            **{"q_omega": 0.0, "eiv": False, "yaw_moment": 0.0, "gyro_bias": False, "fixed_point": False, **changes}
        )

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise RotoridError(f"unknown online variant '{self.variant}'; choose {', '.join(VARIANTS)}")
        for name in ("omega_var0", "c_sigma", "gyro_nd", "moment_nd", "force_nd", "lpf_tau", "a_z_allow", "enable_tau"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise RotoridError(f"online setting {name} must be a positive number, got {v!r}")
        if self.motor_hold is not None:
            _check_hold(self.motor_hold, "online setting motor_hold")
        if self.rate_hz is not None and not (math.isfinite(self.rate_hz) and self.rate_hz > 0):
            raise RotoridError(f"online setting rate_hz must be a positive rate in Hz or None, got {self.rate_hz!r}")
        if not (0.0 <= self.motor_spread < 1.0 and self.acc_bias_z_sigma >= 0.0 and self.yaw_moment >= 0.0):
            raise RotoridError(
                f"online settings motor_spread {self.motor_spread!r} must lie in [0, 1) and "
                f"acc_bias_z_sigma {self.acc_bias_z_sigma!r} and yaw_moment {self.yaw_moment!r} be >= 0"
            )
        if self.q_omega < 0 or min(self.j_min) <= 0 or min(self.theta1_var0) <= 0 or min(self.theta2_var0) <= 0:
            raise RotoridError("online settings q_omega >= 0, j_min > 0 and initial variances > 0 are required")


def _check_hold(hold: Any, what: str) -> float:
    """`OnlineSettings.motor_hold` or `Flight.meta["motor_hold"]` as a float: a time >= 0 in s."""
    try:
        v = float(hold)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(hold, bool) or not (math.isfinite(v) and v >= 0.0):
        raise RotoridError(f"{what} must be a time >= 0 in s (0: point samples), got {hold!r}")
    return v


class KfModel(NamedTuple):
    """The KF's process model held fixed (`identify`'s fixed-point passes, `OnlineSettings.fixed_point`):
    θ1 with the yaw moment (6), its RLS covariance (36, row-major) and that covariance's
    a-posteriori scale, which eq. 22 and eq. 29 use instead of the running RLS's."""

    theta1: tuple[float, ...]
    cov: tuple[float, ...]
    scale: float


class Sample(NamedTuple):
    """One IMU/motor sample: time (s), gyro (rad/s, body FLU), accelerometer specific force
    (m/s², body FLU), motor commands and/or measured rotor speeds (one per rotor), and
    optionally the attitude quaternion (w, x, y, z) body->world for the enable condition."""

    t: float
    gyro: Sequence[float]
    acc: Sequence[float]
    cmd: Sequence[float] | None = None
    rotor_speed: Sequence[float] | None = None
    quat: Sequence[float] | None = None


class OnlineState(NamedTuple):
    """The estimator after one `update` (`t` is the time of the last estimator step, i.e. of
    the last averaged block): filtered rate ω̂ and its KF std, angular acceleration
    α̂, whether the RLS is enabled, θ1 = [J_xx, J_yy, J_zz, com_x, com_y] and θ2-derived
    [mass, imu_z] with their standard deviations."""

    t: float
    enabled: bool
    omega: tuple[float, float, float]
    omega_std: tuple[float, float, float]
    alpha: tuple[float, float, float]
    theta1: tuple[float, ...]
    theta1_std: tuple[float, ...]
    mass: float
    mass_std: float
    imu_z: float
    imu_z_std: float


def _rotor_model(vehicle: Vehicle) -> tuple[list[list[float]], list[tuple[float, ...]], tuple[int, ...]]:
    """Mixer rows (6 x M, about the body origin, drag with k_tau) and per-rotor thrust
    coefficients, as Python lists for the per-sample step. Raises if the vehicle lacks them."""
    missing = [n for n in ("thrust_coeffs", "k_tau") if getattr(vehicle, n) is None]
    if missing:
        raise VehicleError(
            f"vehicle '{vehicle.name}' ({vehicle.source}) has no {' and no '.join(missing)}: the online "
            "estimator needs the rotor coefficients as known inputs; identify them first "
            "(rotorid identify --method delay or tls) and pass the exported vehicle TOML"
        )
    if vehicle.k_tau < 0 or not np.all(vehicle.thrust(np.full((1, vehicle.n_rotors), vehicle.cmd_max)) > 0):
        raise VehicleError(f"vehicle '{vehicle.name}': online needs k_tau >= 0 and positive thrust at full command")
    mix = vehicle.mixer().tolist()
    k = np.atleast_2d(vehicle.thrust_coeffs)
    k = np.broadcast_to(k, (vehicle.n_rotors, k.shape[-1]))
    return mix, [tuple(float(x) for x in row) for row in k], vehicle.thrust_exponents


class OnlineEstimator:
    """Streaming estimator (Kwon et al. Alg. 1–7). `update(sample)` consumes one sample and
    returns the `OnlineState`; `run(flight)` streams a whole log through the same step and
    returns the trajectories (dict of arrays). `kf_model` holds the KF's process model fixed
    (`KfModel`; None: the running RLS estimate, Alg. 1)."""

    def __init__(
        self, vehicle: Vehicle, settings: OnlineSettings | None = None, kf_model: KfModel | None = None
    ) -> None:
        self.vehicle = vehicle
        self._kf_model = kf_model
        self.settings = s = settings or OnlineSettings()
        self._mix, kthr, exps = _rotor_model(vehicle)
        self._poly = [list(zip(k, exps, strict=True)) for k in kthr]
        # one monomial k u^e per rotor (the usual u² law) is summed without the generic loop, and
        # the mixer's zero rows (no in-plane force from coplanar rotors) are not multiplied out
        self._mono = [k[0] for k in kthr] if len(exps) == 1 else None
        self._exps = [exps[0]] * vehicle.n_rotors
        self._mix_rows = [row if any(row) else None for row in self._mix]
        self._m = vehicle.n_rotors
        self._tm = (vehicle.tm_rise, vehicle.tm_fall if vehicle.tm_fall is not None else vehicle.tm_rise)
        imu = vehicle.imu_offset
        self._imu_xy = (float(imu[0]), float(imu[1]))
        self._com_z = float(vehicle.com[2]) if vehicle.com is not None else 0.0
        self._bz = 1.0 if s.yaw_moment > 0 else 0.0  # regressor of the constant yaw moment (0: off)
        self._kf = s.variant == "kwon"
        # the step's constants, bound once: gyro_nd², c_sigma gyro_nd, q_omega, n_sigma, j_min
        self._kfc = (s.gyro_nd * s.gyro_nd, s.c_sigma * s.gyro_nd, s.q_omega, s.n_sigma, *s.j_min)
        self._nd2 = (s.moment_nd * s.moment_nd, s.force_nd * s.force_nd, s.eiv)
        self._lpf = s.variant == "rls-lpf"
        self._source: str | None = None
        self._t: float | None = None  # time of the last estimator step (block)
        self._t_raw: float | None = None  # time of the last sample
        self._period = None if s.rate_hz is None else 1.0 / s.rate_hz
        self._t_emit: float | None = None  # end of the current block on the grid of _period
        self._blk: list | None = None  # [count, sum t, sums of gyro, acc, thrusts, thrust integral]
        self._hold = 0.0  # `OnlineSettings.motor_hold`, resolved with the motor source (`_motor_state`)
        self._meta_hold = 0.0  # the flight's `meta["motor_hold"]` (`run`); the streaming `update`: none
        self._lagged = False  # the commands run through the motor lag (`_motor_state`)
        self._fl: list[float] | None = None  # rotor thrusts of the last sample
        self._wl: tuple = ()  # their force and moment (every sample a step)
        self._cf: list[float] = [0.0] * self._m  # trapezoidal ∫ thrust dt up to the last sample
        self._cbar: tuple | None = None  # the last block's mean time, mean of that integral, mean thrusts
        # KF state (Alg. 1-2)
        self.w = list(s.omega0)
        self.p = [s.omega_var0] * 3
        # RLS (Alg. 5): θ1 and its 5x5 covariance (row-major lists)
        self.th1 = [*s.j0, *s.com0, 0.0]
        var0 = (*s.theta1_var0, s.yaw_moment**2 if s.yaw_moment > 0 else 1.0)
        self.s1 = [var0[i // _N1] if i % _N1 == i // _N1 else 0.0 for i in range(_N1 * _N1)]  # row-major 6x6
        # RLS2 (Alg. 7): θ2 = [m, m z]
        self.th2 = [s.mass0, s.mass0 * s.imu_z0]
        self.s2 = [s.theta2_var0[0], 0.0, s.theta2_var0[1]]  # [Σ00, Σ01, Σ11]
        self.enabled = False
        self.t_enabled = float("nan")
        self._az = 0.0
        self._lag: list[float] | None = None
        self._u_prev: list[float] | None = None
        self._prev: tuple | None = None  # (thrusts, acc, gyro) block means of the previous step
        self._alpha = (0.0, 0.0, 0.0)
        self._alpha_raw = (0.0, 0.0, 0.0)  # differentiated (block-averaged) gyro, for Fig. 6
        self.active = [False, False, False]
        self._chi1 = [0.0, 0]  # sum of e²/s (normalized innovations), count: a-posteriori scale of Σ_θ1
        self._chi2 = [0.0, 0]
        self._h1f: list[float] | None = None  # LPF state (rls-lpf): H1 (15), M (3), H2 (6), F (3)
        self._state: OnlineState | None = None  # cache of `state`, cleared by every step
        self._rows: list | None = None  # RLS rows (H1, y1, R1, H2, y2, R2, moved, Ĵ) per step, recorded by `run`
        self._moved: tuple = ()  # the H1 entries the correction law zeroed this step and the Ĵ they moved with
        self._gain = (0.0,) * 6  # the KF's gain and model acceleration per axis this step (0: no KF), for the rows

    # -- rotor model -----------------------------------------------------------------------
    def _motor_state(self, t: float, cmd: Sequence[float] | None, rs: Sequence[float] | None) -> list[float]:
        """Motor state per rotor: measured rotor speed when the vehicle's thrust curve is in
        rad/s and the log has it, else the commands through the first-order motor lag
        (y_k = a y_{k-1} + (1-a) u_{k-1}, a = exp(-dt/T_m), as `signal.motor_lag`)."""
        if self._source is None:
            if rs is not None and self.vehicle.motor_input == "rad_s":
                self._source = "rotor_speed"
            elif cmd is not None:
                self._source = "cmd"
            else:
                raise MissingChannelError(
                    f"t={t:.6f} s: sample has no motor commands (cmd) "
                    f"{'' if self.vehicle.motor_input != 'rad_s' else 'nor rotor speeds '}"
                    "— the online estimator needs the rotor inputs"
                )
            hold = self.settings.motor_hold
            self._lagged = self._source == "cmd" and self._tm[0] is not None
            self._hold = 0.0 if self._lagged else self._meta_hold if hold is None else hold
        u = rs if self._source == "rotor_speed" else cmd
        if u is None or len(u) != self._m:
            raise RotoridError(
                f"t={t:.6f} s: expected {self._m} values of {self._source} (vehicle '{self.vehicle.name}'), "
                f"got {'none' if u is None else len(u)}"
            )
        if self._source == "rotor_speed" or self._tm[0] is None:
            return u
        if self._lag is None:
            self._lag, self._u_prev = list(u), u
            return list(u)
        dt = t - self._t_raw
        ar, af = math.exp(-dt / self._tm[0]), math.exp(-dt / self._tm[1])
        y, up = self._lag, self._u_prev
        for i in range(self._m):
            a = ar if up[i] > y[i] else af
            y[i] = a * y[i] + (1.0 - a) * up[i]
        self._u_prev = u
        return list(y)

    def _motor_settings(self) -> dict[str, Any]:
        """What `_motor_state` resolved: the motor source, whether the lag model runs and the hold
        used (s, `OnlineSettings.motor_hold`)."""
        return {"motor_source": self._source, "motor_lag": self._lagged, "motor_hold_used": self._hold}

    def _thrusts(self, u: list[float]) -> list[float]:
        """Rotor thrusts f_i = sum_j K_ij u_i^e_j (eq. 1–5) of the motor states `u`."""
        if self._mono is not None:
            return list(map(mul, self._mono, map(pow, u, self._exps)))
        return [sum([k * ui**e for k, e in kp]) for ui, kp in zip(u, self._poly, strict=True)]

    def _wrench(self, f: list[float]) -> list[float]:
        """Collective force and moment about the body origin (any layout), flat: mixer @ thrusts."""
        return [0.0 if row is None else sum(map(mul, row, f)) for row in self._mix_rows]

    # -- public streaming API ----------------------------------------------------------------
    def update(self, sample: Sample) -> OnlineState:
        """Consume one sample (strictly increasing time, finite values) and return the state."""
        t = float(sample.t)
        q = None if sample.quat is None else list(map(float, sample.quat))
        try:
            (gx, gy, gz), (ax, ay, az) = sample.gyro, sample.acc
            if q is not None and len(q) != 4:
                raise ValueError
        except ValueError:
            raise RotoridError(f"t={t:.6f} s: gyro and acc need 3 components each (quat 4)") from None
        g, a = (float(gx), float(gy), float(gz)), (float(ax), float(ay), float(az))
        cmd = None if sample.cmd is None else list(map(float, sample.cmd))
        rs = None if sample.rotor_speed is None else list(map(float, sample.rotor_speed))
        check = t + sum(g) + sum(a)
        for v in (q, cmd, rs):
            if v is not None:
                check += sum(v)
        if not math.isfinite(check):
            raise RotoridError(
                f"sample at t={t} s contains NaN/inf (time, gyro, acc, motor or quat); drop or repair it"
            )
        if self._t_raw is not None and not t > self._t_raw:
            raise RotoridError(
                f"t={t:.6f} s: sample out of time order (previous t={self._t_raw:.6f} s); "
                "feed samples with strictly increasing time stamps"
            )
        self._push(t, g, a, q, self._thrusts(self._motor_state(t, cmd, rs)))
        return self._state or self.state

    def _push(self, t: float, g: list[float], a: list[float], q: list[float] | None, f: list[float]) -> None:
        """Average samples over blocks of 1/rate_hz and run one estimator step per block, with
        the rotor thrusts' mean over the step.

        The KF measures the block mean of the gyro, ω̄_n = Σ_i∈B_n ω(t_i) / N_n, and the rate
        of a rigid body is ω(t_i) = ω(t_0) + ∫ ω̇ dt (Kwon eq. 7 with the moment of eq. 5, which
        is linear in the thrusts). Hence ω̄_n - ω̄_n-1 = (C̄_n - C̄_n-1) / J (the gyroscopic term
        aside), C̄_n the block mean of C(t_i) = ∫_0^t_i f dt through the mixer, and the step's
        mean thrust is (C̄_n - C̄_n-1) / (t̄_n - t̄_n-1), t̄ the blocks' mean times: the samples
        of both blocks weighted by a triangle. A sample f_i is the thrust centred δ =
        min(motor_hold, log interval) / 2 after its stamp (`OnlineSettings.motor_hold`), linear
        between those centres, so C(t_i) = Σ_k<i (f_k + f_k+1) Δ_k / 2 - δ f_i (trapezoid up to
        the centre of f_i, less the δ after t_i): a wrench held for the whole interval (δ = Δ/2)
        gives C(t_i) = Σ_k<i f_k Δ_k, exactly. Every sample its own step (`rate_hz` None):
        (f_n-1 + f_n) / 2 + (δ / Δ) (f_n-1 - f_n), f_n-1 when held."""
        t0, fl = self._t_raw, self._fl
        self._t_raw, self._fl = t, f
        per = self._period
        if fl is None:  # the first sample: a block of its own, the estimator's initial state
            self._t_emit = None if per is None else t + per
            self._cbar = (t, self._cf, f)
            self._wl = self._wrench(f)
            self._step(t, g, a, q, self._wl, None)
            return
        d = t - t0
        if per is None:  # the wrench is linear in the thrusts: mix each sample once
            w = self._wrench(f)
            ws, self._wl = self._wl, w
            if self._hold < d:  # weights of the last sample and this one
                wl = 0.5 + 0.5 * self._hold / d
                wt = 1.0 - wl
                (x0, y0, z0, l0, m0, n0), (x1, y1, z1, l1, m1, n1) = ws, w
                ws = (
                    wl * x0 + wt * x1,
                    wl * y0 + wt * y1,
                    wl * z0 + wt * z1,
                    wl * l0 + wt * l1,
                    wl * m0 + wt * m1,
                    wl * n0 + wt * n1,
                )
            self._step(t, g, a, q, w, ws)
            return
        h = 0.5 * d
        self._cf = cf = [c + h * (x + y) for c, x, y in zip(self._cf, fl, f, strict=True)]
        b = self._blk
        if b is None:
            b = [0, 0.0, [0.0] * (6 + 2 * self._m)]
        b[0] += 1
        b[1] += t
        b[2] = list(map(add, b[2], (*g, *a, *f, *cf)))
        self._blk = b
        if t >= self._t_emit - 1e-6 * per:  # the sample reaches the block's end on the grid
            n, m = b[0], self._m
            mean = [x / n for x in b[2]]
            tb, fb, cb = b[1] / n, mean[6 : 6 + m], mean[6 + m :]
            (tp, cp, fp), self._cbar = self._cbar, (tb, [0.0] * m, fb)
            self._cf = list(map(sub, cf, cb))  # the integral from C̄ of this block on: no growing sum
            self._blk = None
            self._t_emit += per * (1 + math.floor((t - self._t_emit) / per + 1e-6))
            dt, delta = tb - tp, 0.5 * min(self._hold, d)
            fw = [(c1 - c0 - delta * (f1 - f0)) / dt for c0, c1, f0, f1 in zip(cp, cb, fp, fb, strict=True)]
            self._step(tb, mean[0:3], mean[3:6], q, self._wrench(fb), self._wrench(fw))

    @property
    def state(self) -> OnlineState:
        """The current `OnlineState` (built once per estimator step)."""
        if self._state is None:
            sqrt, (c1, n1), (c2, n2) = math.sqrt, self._chi1, self._chi2
            sc1 = c1 / n1 if n1 > 10 else 1.0
            S, (p0, p1, p2) = self.s1, self.p
            sd = (sqrt(abs(S[0]) * sc1), sqrt(abs(S[7]) * sc1), sqrt(abs(S[14]) * sc1))  # 6x6: stride 7
            sd += (sqrt(abs(S[21]) * sc1), sqrt(abs(S[28]) * sc1))
            sc2 = c2 / n2 if n2 > 10 else 1.0
            (m, mz), (s00, s01, s11) = self.th2, self.s2
            d0, d1 = -mz / (m * m), 1.0 / m  # imu_z = m z / m by the delta method
            var = (d0 * d0 * s00 + 2.0 * d0 * d1 * s01 + d1 * d1 * s11) * sc2
            self._state = tuple.__new__(  # OnlineState(...) without its Python-level __new__
                OnlineState,
                (
                    self._t if self._t is not None else float("nan"),
                    self.enabled,
                    tuple(self.w),
                    (sqrt(p0), sqrt(p1), sqrt(p2)),
                    self._alpha,
                    tuple(self.th1[:5]),
                    sd,
                    m,
                    sqrt(abs(s00) * sc2),
                    self._com_z + mz / m,
                    sqrt(max(var, 0.0)),
                ),
            )
        return self._state

    @staticmethod
    def _scale(chi: list) -> float:
        """A-posteriori variance factor: mean of the squared weighted residuals (1 until data)."""
        return chi[0] / chi[1] if chi[1] > 10 else 1.0

    # -- the step ---------------------------------------------------------------------------
    def _step(
        self,
        t: float,
        g: list[float],
        acc: list[float],
        q: list[float] | None,
        F: Sequence[float],
        ws: Sequence[float] | None,
    ) -> None:
        """One estimator step from block means (gyro, accelerometer, rotor wrench `F`: force
        first) and the wrench's mean over the step `ws` (force, moment; `_push`, None at the
        first): enable check, KF (Alg. 1-2, 4), regressors (Alg. 3, 6), RLS (Alg. 5, 7). The KF
        and the RLS rows take the step's wrench; the RLS2 rows the mean force of the two blocks,
        as the accelerometer."""
        self._state = None
        if self._t is None:  # first sample: initial state only
            self._t = t
            self._prev = (F, acc, g)
            if not self._kf:
                self.w = list(g)
            return
        dt = t - self._t
        self._t = t
        F0, a0, g0 = self._prev
        self._prev = (F, acc, g)
        if self._rows is not None:  # `run` records it (Fig. 6); a live loop has no use for it
            self._alpha_raw = ((g[0] - g0[0]) / dt, (g[1] - g0[1]) / dt, (g[2] - g0[2]) / dt)
        if not self.enabled:
            self._check_enable(t, dt, acc, q)
        w0 = self.w
        if self._kf:
            w1, act, va = self._kf_step(dt, ws, g)
        else:
            w1, act, va = g, [True, True, True], None
        self.w = w1
        al = ((w1[0] - w0[0]) / dt, (w1[1] - w0[1]) / dt, (w1[2] - w0[2]) / dt)
        self._alpha = al
        self.active = act
        if not self.enabled:
            return
        am = (0.5 * (a0[0] + acc[0]), 0.5 * (a0[1] + acc[1]), 0.5 * (a0[2] + acc[2]))
        om = (0.5 * (w0[0] + w1[0]), 0.5 * (w0[1] + w1[1]), 0.5 * (w0[2] + w1[2]))
        h1, y1, h2 = self._regressors(om, al, act, ws, am)
        y2 = [0.5 * (F0[0] + F[0]), 0.5 * (F0[1] + F[1]), 0.5 * (F0[2] + F[2])]
        if self._lpf:
            h1, y1, h2, y2 = self._lowpass(dt, h1, y1, h2, y2)
        m2, f2, eiv = self._nd2
        rv = m2 / dt  # moment variance of R_RLS per step
        if eiv and va is not None:
            th, S = self.th1, self.s1
            r1 = [
                rv + (th[0] * th[0] + S[0]) * va[0] if act[0] else rv,
                rv + (th[1] * th[1] + S[7]) * va[1] if act[1] else rv,
                rv + (th[2] * th[2] + S[14]) * va[2] if act[2] else rv,
            ]
        else:
            r1 = [rv, rv, rv]
        self._rls1(h1, y1, r1)
        r2 = f2 / dt
        self._rls2(h2, y2, r2)
        if self._rows is not None:
            self._rows.append((h1, y1, r1, h2, y2, r2, *self._moved, self._gain))

    def _check_enable(self, t: float, dt: float, acc: list[float], q: list[float] | None) -> None:
        """Enable condition: LPF'd gravity-rejected vertical acceleration (Sec. III, Fig. 3)."""
        if q is not None:
            w_, x_, y_, z_ = q
            az = 2 * (x_ * z_ - w_ * y_) * acc[0] + 2 * (y_ * z_ + w_ * x_) * acc[1]
            az += (1 - 2 * (x_ * x_ + y_ * y_)) * acc[2]
            az -= GRAVITY
        else:
            az = math.sqrt(acc[0] ** 2 + acc[1] ** 2 + acc[2] ** 2) - GRAVITY
        s = self.settings
        k = dt / (s.enable_tau + dt)
        self._az += k * (az - self._az)
        if abs(self._az) > s.a_z_allow:
            self.enabled = True
            self.t_enabled = t

    def _kf_step(self, dt: float, ws: Sequence[float], g: list[float]) -> tuple[list[float], list[bool], list[float]]:
        """Alg. 1-2 and 4: the KF of the body rate (process model eq. 22 with u = M - com x F
        about the estimated CoM, adaptive measurement weight) and the correction law. Returns
        the new rate, which MOI columns are active and the variance each measurement adds to α̂."""
        gnd2, cg, qo, ns, jx, jy, jz = self._kfc
        if self._kf_model is None:
            th, S, n1 = self.th1, self.s1, self._chi1[1]
            sc1 = self._chi1[0] / n1 if n1 > 10 else 1.0
        else:
            th, S, sc1 = self._kf_model
        cx, cy, cz = th[3], th[4], self._com_z
        Fx, Fy, Fz, Mx, My, Mz = ws
        ux, uy, uz = Mx - (cy * Fz - cz * Fy), My - (cz * Fx - cx * Fz), Mz - (cx * Fy - cy * Fx) - th[5]
        J0, J1, J2 = (th[0] if th[0] > jx else jx, th[1] if th[1] > jy else jy, th[2] if th[2] > jz else jz)
        (p_, q_, r_), (px, py, pz), (gx, gy, gz) = self.w, self.p, g
        R, c = dt / gnd2, cg / math.sqrt(dt)  # weight 1/R_meas; Alg. 2's c
        qdt, dt2, sqrt = qo * dt, dt * dt, math.sqrt
        sc1 *= dt2
        # eq. 22 (with the gyroscopic term ω x Jω) and eq. 29, per axis
        wx, wy, wz = (
            p_ + (ux - (J2 - J1) * q_ * r_) / J0 * dt,
            q_ + (uy - (J0 - J2) * p_ * r_) / J1 * dt,
            r_ + (uz - (J1 - J0) * p_ * q_) / J2 * dt,
        )
        bx = px + ux * ux * S[0] * sc1 / (J0 * J0 * J0 * J0) + qdt
        by = py + uy * uy * S[7] * sc1 / (J1 * J1 * J1 * J1) + qdt
        bz = pz + uz * uz * S[14] * sc1 / (J2 * J2 * J2 * J2) + qdt
        # Alg. 2: measurement update with the weight 1/R lowered by r/c when the residual r > c
        rx, ry, rz = abs(gx - wx), abs(gy - wy), abs(gz - wz)
        mx, my, mz = R * rx / c if rx > c else R, R * ry / c if ry > c else R, R * rz / c if rz > c else R
        kx, ky, kz = bx / (bx + 1.0 / mx), by / (by + 1.0 / my), bz / (bz + 1.0 / mz)
        if self._rows is not None:  # recorded by `run` only: the streaming step stays lean
            self._gain = (kx, ky, kz, (wx - p_) / dt, (wy - q_) / dt, (wz - r_) / dt)
        self.p = ((1.0 - kx) * bx, (1.0 - ky) * by, (1.0 - kz) * bz)
        w1 = (wx + kx * (gx - wx), wy + ky * (gy - wy), wz + kz * (gz - wz))
        va = (kx * kx / mx / dt2, ky * ky / my / dt2, kz * kz / mz / dt2)  # what the measurement adds to α̂
        # Alg. 4: the correction law on the previous-step rate and its std
        act = (abs(p_) >= ns * sqrt(px), abs(q_) >= ns * sqrt(py), abs(r_) >= ns * sqrt(pz))
        return w1, act, va

    def _regressors(
        self,
        om: tuple[float, ...],
        al: tuple[float, ...],
        act: list[bool],
        ws: Sequence[float],
        am: tuple[float, ...],
    ) -> tuple[list[list[float]], list[float], list[list[float]]]:
        """Alg. 3-4: H1 rows (3 x 6, θ1 with the yaw moment) of M - cz [-Fy, Fx, 0] = H1 θ1 (MOI columns of inactive
        axes zeroed, their term at the current estimate moved to the output); Alg. 6: H2 rows (3 x 2) of F = H2 [m, m z], IMU x, y relative to the CoM."""
        p_, q_, r_ = om
        a0, a1, a2 = al
        Fx, Fy, Fz, Mx, My, y2 = ws
        pq, pr, qr = p_ * q_, p_ * r_, q_ * r_
        cz, th = self._com_z, self.th1
        y0, y1 = Mx + cz * Fy, My - cz * Fx
        cols = [(a0, pr, -pq), (-qr, a1, pq), (qr, -pr, a2)]  # the MOI columns of H1
        moved = _NO_MOVE  # the zeroed entries, rows by MOI column
        if not (act[0] and act[1] and act[2]):
            moved = tuple(zip(*[_NO_MOVE[0] if a else c for c, a in zip(cols, act, strict=True)], strict=True))
            for k in range(3):
                if not act[k]:
                    (c0, c1, c2), tk = cols[k], th[k]
                    y0, y1, y2 = y0 - c0 * tk, y1 - c1 * tk, y2 - c2 * tk
                    cols[k] = _NO_MOVE[0]
        (h00, h10, h20), (h01, h11, h21), (h02, h12, h22) = cols
        h1 = [[h00, h01, h02, 0.0, Fz, 0.0], [h10, h11, h12, -Fz, 0.0, 0.0], [h20, h21, h22, Fy, -Fx, self._bz]]
        if self._rows is not None:
            self._moved = (moved, th[:3])
        x = self._imu_xy[0] - th[3]
        y = self._imu_xy[1] - th[4]
        if self._kf:  # a lever-arm column needs both other axes active (Alg. 6)
            c0, c1, c2 = act[1] and act[2], act[0] and act[2], act[0] and act[1]
        else:
            c0 = c1 = c2 = True
        x = x if c0 else 0.0
        y = y if c1 else 0.0
        # [ω]x² + [α]x, row by row, times the lever arm
        h2 = [
            [am[0] - x * -(q_ * q_ + r_ * r_) - y * (pq - a2), -(pr + a1) if c2 else 0.0],
            [am[1] - x * (pq + a2) - y * -(p_ * p_ + r_ * r_), -(qr - a0) if c2 else 0.0],
            [am[2] - x * (pr - a1) - y * (qr + a0), (p_ * p_ + q_ * q_) if c2 else 0.0],
        ]
        return h1, [y0, y1, y2], h2

    def _lowpass(
        self, dt: float, h1: list[list[float]], y1: list[float], h2: list[list[float]], y2: list[float]
    ) -> tuple[list[list[float]], list[float], list[list[float]], list[float]]:
        """The rls-lpf variant (eq. 36-39): first-order low-pass (time constant `lpf_tau`) of
        every regressor and output."""
        flat = [v for row in h1 for v in row] + y1 + [v for row in h2 for v in row] + y2
        if self._h1f is None:
            self._h1f = flat
        else:
            af = -math.expm1(-dt / self.settings.lpf_tau)
            self._h1f = [fo + af * (fn - fo) for fo, fn in zip(self._h1f, flat, strict=True)]
        f = self._h1f
        n = 3 * _N1
        h1f = [f[i : i + _N1] for i in range(0, n, _N1)]
        return h1f, f[n : n + 3], [f[n + 3 : n + 5], f[n + 5 : n + 7], f[n + 7 : n + 9]], f[n + 9 : n + 12]

    def _rls1(self, H: list[list[float]], y: list[float], rv: list[float]) -> None:
        """Alg. 5, processed row by row (exact for a diagonal R_RLS); `rv` the row variances. Σ is
        updated in its upper triangle and mirrored, so it stays exactly symmetric; the 21 entries
        live in locals for the three rows (issue 14: the step is per sample, in pure Python). The
        sixth parameter is the constant yaw moment (`OnlineSettings.yaw_moment`)."""
        S = self.s1
        s00, s01, s02, s03, s04, s05 = S[0:6]
        s11, s12, s13, s14, s15 = S[7:12]
        s22, s23, s24, s25 = S[14:18]
        s33, s34, s35 = S[21:24]
        s44, s45 = S[28:30]
        s55 = S[35]
        t0, t1, t2, t3, t4, t5 = self.th1
        chi = self._chi1
        c = chi[0]
        for (h0, h1, h2, h3, h4, h5), yi, rvi in zip(H, y, rv, strict=True):
            g0 = s00 * h0 + s01 * h1 + s02 * h2 + s03 * h3 + s04 * h4 + s05 * h5  # g = Σ h (Σ symmetric)
            g1 = s01 * h0 + s11 * h1 + s12 * h2 + s13 * h3 + s14 * h4 + s15 * h5
            g2 = s02 * h0 + s12 * h1 + s22 * h2 + s23 * h3 + s24 * h4 + s25 * h5
            g3 = s03 * h0 + s13 * h1 + s23 * h2 + s33 * h3 + s34 * h4 + s35 * h5
            g4 = s04 * h0 + s14 * h1 + s24 * h2 + s34 * h3 + s44 * h4 + s45 * h5
            g5 = s05 * h0 + s15 * h1 + s25 * h2 + s35 * h3 + s45 * h4 + s55 * h5
            den = h0 * g0 + h1 * g1 + h2 * g2 + h3 * g3 + h4 * g4 + h5 * g5 + rvi
            e = yi - (h0 * t0 + h1 * t1 + h2 * t2 + h3 * t3 + h4 * t4 + h5 * t5)
            f = e / den
            t0, t1, t2, t3, t4, t5 = t0 + g0 * f, t1 + g1 * f, t2 + g2 * f, t3 + g3 * f, t4 + g4 * f, t5 + g5 * f
            # Σ -= g gᵀ / den, the upper triangle
            k0, k1, k2, k3, k4 = g0 / den, g1 / den, g2 / den, g3 / den, g4 / den
            s00, s01, s02, s03 = s00 - k0 * g0, s01 - k0 * g1, s02 - k0 * g2, s03 - k0 * g3
            s04, s05 = s04 - k0 * g4, s05 - k0 * g5
            s11, s12, s13, s14, s15 = s11 - k1 * g1, s12 - k1 * g2, s13 - k1 * g3, s14 - k1 * g4, s15 - k1 * g5
            s22, s23, s24, s25 = s22 - k2 * g2, s23 - k2 * g3, s24 - k2 * g4, s25 - k2 * g5
            s33, s34, s35 = s33 - k3 * g3, s34 - k3 * g4, s35 - k3 * g5
            s44, s45, s55 = s44 - k4 * g4, s45 - k4 * g5, s55 - g5 / den * g5
            c += e * f
        self.th1 = [t0, t1, t2, t3, t4, t5]
        self.s1 = [s00, s01, s02, s03, s04, s05, s01, s11, s12, s13, s14, s15, s02, s12, s22, s23, s24, s25]
        self.s1 += [s03, s13, s23, s33, s34, s35, s04, s14, s24, s34, s44, s45, s05, s15, s25, s35, s45, s55]
        chi[0] = c
        chi[1] += len(H)

    def _rls2(self, H: list[list[float]], y: list[float], rv: float) -> None:
        """Alg. 7 (2 parameters), row by row; `rv` the row variance."""
        t0, t1 = self.th2
        s00, s01, s11 = self.s2
        chi = self._chi2
        c = chi[0]
        for (h0, h1), yi in zip(H, y, strict=True):
            g0 = s00 * h0 + s01 * h1
            g1 = s01 * h0 + s11 * h1
            den = h0 * g0 + h1 * g1 + rv
            e = yi - h0 * t0 - h1 * t1
            f, k0 = e / den, g0 / den
            t0 += g0 * f
            t1 += g1 * f
            s00 -= k0 * g0
            s01 -= k0 * g1
            s11 -= g1 / den * g1
            c += e * f
        self.th2 = [t0, t1]
        self.s2 = [s00, s01, s11]
        chi[0] = c
        chi[1] += len(H)

    # -- batch ---------------------------------------------------------------------------------
    def check(self, flight: Flight) -> None:
        """Refuse a flight without the channels, rates or motor columns the estimator needs."""
        flight.require("gyro", "acc")
        use_rs = flight.rotor_speed is not None and self.vehicle.motor_input == "rad_s"
        flight.require_rate(
            MIN_RATE_HZ, "gyro", "acc", *(["rotor_speed"] if use_rs else ["cmd"] if flight.cmd is not None else [])
        )
        if not use_rs and flight.cmd is None:
            raise MissingChannelError(
                f"{flight.source}: the online estimator needs motor commands (cmd)"
                + (" or rotor speeds (rotor_speed)" if self.vehicle.motor_input == "rad_s" else "")
            )
        if flight.n_motors != self._m:
            raise RotoridError(
                f"{flight.source}: {flight.n_motors} motor columns but vehicle '{self.vehicle.name}' has {self._m} rotors"
            )

    def run(self, flight: Flight) -> dict[str, np.ndarray]:
        """Stream a whole flight through `update`'s step; return the trajectories (N rows):
        t, omega, omega_std, alpha (KF), alpha_raw (differentiated gyro at the estimator rate), active (correction-law columns), enabled, theta1,
        theta1_std, yaw_moment, yaw_moment_std, mass, mass_std, imu_z, imu_z_std."""
        self.check(flight)
        hold = flight.meta.get("motor_hold")
        self._meta_hold = 0.0 if hold is None else _check_hold(hold, f"{flight.source}: meta['motor_hold']")
        n = len(flight.t)
        none = [None] * n
        cols = (
            flight.t.tolist(),
            flight.gyro.tolist(),
            flight.acc.tolist(),
            flight.cmd.tolist() if flight.cmd is not None else none,
            flight.rotor_speed.tolist() if flight.rotor_speed is not None else none,
            flight.quat.tolist() if flight.quat is not None else none,
        )
        self._rows = []
        keys = ("omega", "p", "alpha", "alpha_raw", "active", "enabled", "theta1", "s1diag")
        rec: dict[str, list] = {k: [] for k in keys}
        rec_th2: list = []
        for t, g, a, c, rs, q in zip(*cols, strict=True):
            self._push(t, g, a, q, self._thrusts(self._motor_state(t, c, rs)))
            rec["omega"].append(self.w)
            rec["p"].append(self.p)
            rec["alpha"].append(self._alpha)
            rec["alpha_raw"].append(self._alpha_raw)
            rec["active"].append(self.active)
            rec["enabled"].append(self.enabled)
            rec["theta1"].append(self.th1)
            rec["s1diag"].append(self.s1[:: _N1 + 1])
            rec_th2.append((*self.th2, *self.s2, self._scale(self._chi1), self._scale(self._chi2)))
        out = {k: np.array(v) for k, v in rec.items()}
        th2 = np.array(rec_th2)
        out["t"] = flight.t.copy()
        out["omega_std"] = np.sqrt(out.pop("p"))
        out["theta1_std"] = np.sqrt(np.clip(out.pop("s1diag"), 0.0, None) * th2[:, 5:6])
        out["yaw_moment"], out["theta1"] = out["theta1"][:, 5], out["theta1"][:, :5]
        out["yaw_moment_std"], out["theta1_std"] = out["theta1_std"][:, 5], out["theta1_std"][:, :5]
        out["mass"] = th2[:, 0]
        out["mass_std"] = np.sqrt(np.clip(th2[:, 2], 0.0, None) * th2[:, 6])
        z, zstd = _imu_z(*th2[:, :5].T, th2[:, 6])
        out["imu_z"] = self._com_z + z
        out["imu_z_std"] = zstd
        return out


def _imu_z(m, mz, s00, s01, s11, scale):
    """IMU height above the CoM z = (m z)/m from θ2 = [m, m z] and its delta-method std
    (arrays; `OnlineEstimator.state` has the per-sample form)."""
    z = mz / m
    d0, d1 = -mz / m**2, 1.0 / m
    var = (d0 * d0 * s00 + 2 * d0 * d1 * s01 + d1 * d1 * s11) * scale
    return z, np.sqrt(np.maximum(var, 0.0))


def _final_theta1(est: OnlineEstimator, h1: np.ndarray, y1: np.ndarray, r1: np.ndarray, bread: np.ndarray):
    """θ1 and the rows' outputs with every moved term (Alg. 4 as changed here: an inactive MOI
    column's term Ĵ_k h_k moves to the output) evaluated at the final MOI instead of the running
    Ĵ_k of its step. Early in a flight the running value is the initial guess (1 g m² against
    50 g m² here), so the rows before an axis activates carry (J_k - Ĵ_k) h_k, a systematic error
    the CoM columns (regressor ≈ the constant thrust) absorb: −1.9/−1.5 µm on kwon-payload, the
    same in every seed, and gone with j0 at the truth. The RLS solves its normal equations
    exactly, θ = bread (P0⁻¹ θ0 + Σ hᵀ y / r), so new outputs y + Δy give θ + bread Σ hᵀ Δy / r;
    three passes settle the fixed point (the MOI moves by < 1 % of its σ after the first)."""
    rows = est._rows
    hm = np.array([r[6] for r in rows], dtype=float)  # (T, 3 rows, 3 MOI columns)
    jt = np.array([r[7] for r in rows], dtype=float)  # (T, 3) running Ĵ they moved with
    th = np.array(est.th1)
    y = y1
    for _ in range(3):
        dy = np.einsum("tjk,tk->tj", hm, jt - th[:3])
        th = np.array(est.th1) + bread @ np.einsum("tjp,tj->p", h1, dy / r1)
        y = y1 + dy
    return th, y


def acc_noise_density(acc: np.ndarray, t: np.ndarray) -> np.ndarray:
    """White-noise density² N² ((m/s²)²/Hz, per body axis) of an accelerometer (or, in
    (rad/s)²/Hz, a gyro) from its raw samples: a white noise of per-sample variance σ² has var(Δ²a) = 6 σ², and σ² = N²/Δt. The
    median of (Δ²a)² over 0.4549 (the median of χ²₁) is robust to the manoeuvres' own second
    difference, which at the log rate is small against the noise (kwon-payload: 1 kHz, σ 0.13
    m/s²). Noise the IMU's anti-alias filter colours is underestimated (the correction then
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


def _kf_jacobian(kfrow: np.ndarray, dt: np.ndarray, jm: np.ndarray, h1: np.ndarray) -> np.ndarray:
    """∂α̂_k/∂J_k (T, 3) of each row with the KF's process model held at J = `jm` (`KfModel`):
    the model's acceleration a_t (`kfrow` (T, 6): gains, then a_t) changes by -a_t / J_k, which
    moves the KF's rate by s_t = (1 - k_t) (s_t-1 - a_t dt_t / J_k), and α̂ = Δω̂/dt by
    (s_t - s_t-1) / dt_t; 0 where the column is inactive. The gyroscopic products' dependence on ω̂
    is second order and left out."""
    g, a = kfrow[:, :3], kfrow[:, 3:6]
    sens, prev = np.empty_like(g), np.zeros(3)
    for t in range(len(g)):
        sens[t] = (1.0 - g[t]) * (prev - a[t] * dt[t] / jm)
        prev = sens[t]
    d = np.diff(np.vstack([np.zeros((1, 3)), sens]), axis=0) / dt[:, None]
    return np.where(np.stack([h1[:, k, k] != 0 for k in range(3)], -1), d, 0.0)


def _fuller(m_mat: np.ndarray, th: np.ndarray, s_uu: np.ndarray, n: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Fuller's known-error-covariance estimator (1987, *Measurement Error Models*, §2.2) of the
    least squares `th` with normal matrix `m_mat` whose columns carry noise of moment diag(`s_uu`)
    over `n` rows: θ̃ = (M - S_uu)⁻¹ M θ, with S_uu scaled by λ̂ - 1/(n-1) where the smallest root
    λ̂ of |C - λ S_uu| = 0 (C the noisy columns' Schur complement in M) is below 1 + 1/(n-1),
    which keeps M - S_uu positive definite. Returns the scale, (M - S_uu)⁻¹ and θ̃."""
    scale, a = 1.0, np.flatnonzero(s_uu > 0)
    if len(a):
        b = np.setdiff1d(np.arange(len(th)), a)
        c = m_mat[np.ix_(a, a)] - m_mat[np.ix_(a, b)] @ np.linalg.solve(m_mat[np.ix_(b, b)], m_mat[np.ix_(b, a)])
        d = 1.0 / np.sqrt(s_uu[a])
        lam = float(np.linalg.eigvalsh(d[:, None] * c * d[None, :])[0])
        scale = min(1.0, lam - 1.0 / (n - 1))
    b_mat = np.linalg.inv(m_mat - np.diag(scale * s_uu))
    return scale, b_mat, b_mat @ (m_mat @ th)


def _final_theta1_eiv(
    bread: np.ndarray,
    th: np.ndarray,
    h1: np.ndarray,
    y1: np.ndarray,
    r1: np.ndarray,
    vu: np.ndarray,
    dalpha: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ1 corrected for the gyro noise in α̂ (`alpha_row_noise`, variance `vu` (T, 3)), its σ
    and the corrected bread. The rows' α̂ is the MOI column of its own axis while that column is
    active (H1's diagonal), and its noise attenuates least squares as the accelerometer's does
    the mass (`_final_theta2`): E[Σ hᵀh/r] = Σ h̄ᵀh̄/r + S_uu, S_uu = diag(Σ_t vu_tk / r_tk) over
    the MOI. 0.48 % of I_xx, I_yy and 0.23 % of I_zz on kwon-payload, as the estimate's attenuation
    with the gyro's noise alone (-0.23 % of I_zz at the fixed point, +0.01 % corrected; 20 seeds).
    Fuller (1987) §2.2 as `_final_theta2`: θ̃ = (M - S_uu)⁻¹ M θ, M = `bread`⁻¹, S_uu scaled by
    λ̂ - 1/(n-1) when the smallest root λ̂ of |C - λ S_uu| = 0 (C the MOI block's Schur
    complement in M) is below 1 + 1/(n-1). σ: each parameter's long-run variance
    (`regression.sandwich`) of the estimating equations' influence B ψ_t, B = (M - S_uu)⁻¹,
    ψ_t = Σ_k h_tkᵀ e_tk / r_tk + (vu_t / r_t) ∘ θ̃ on the MOI, widened by each step's leverage (the
    diagonal of B times the step's share of B⁻¹) for what the fit takes from its own scores.

    At the fixed point of `_fixed_point` the regressor α̂ depends on the θ1 the KF holds
    (`dalpha` = ∂α̂_k/∂J_k, `_kf_jacobian`), which is the estimate itself: the estimating
    equations G(θ) = Σ h(θ)ᵀ (y - h(θ) θ) / r - S_uu θ have the total derivative
    -(M - S_uu + E - F), E[:, k] = Σ_t h_tkᵀ dalpha_tk θ_k / r_tk, F_kk = Σ_t dalpha_tk e_tk / r_tk,
    and the delta method gives θ's covariance B Ω Bᵀ with B = (M - S_uu + E - F)⁻¹ (the
    gradient, not the regressor, of a pseudo-linear regression sets its covariance; Ljung 1999,
    *System Identification*, Ch. 9). The returned bread is that B."""
    m_mat = np.linalg.inv(bread)
    w = np.zeros((len(h1), len(th)))
    for k in range(3):
        on = h1[:, k, k] != 0  # α̂_k in the row only while the column is active
        w[:, k] = np.where(on, vu[:, k] / r1[:, k], 0.0)
    s_uu = w.sum(axis=0)
    scale, b_mat, th_c = _fuller(m_mat, th, s_uu, h1.shape[0] * h1.shape[1])
    e = y1 - np.einsum("tkp,p->tk", h1, th_c)
    psi = np.einsum("tkp,tk->tp", h1, e / r1) + scale * w * th_c[None, :]
    if dalpha is not None:
        jac = np.zeros_like(m_mat)
        jac[:, :3] = np.einsum("tkp,tk->pk", h1, dalpha * th_c[None, :3] / r1)
        jac[:3, :3] -= np.diag(np.sum(dalpha * e / r1, axis=0))
        b_mat = np.linalg.inv(m_mat - np.diag(scale * s_uu) + jac)
    lev = leverage_diag(b_mat, h1, r1) - scale * w * np.diag(b_mat)[None, :]
    if dalpha is not None:  # the step's share of E - F, diagonal of B times it
        lev[:, :3] += (
            np.einsum("tpq,pq->tp", h1[:, :3], b_mat[:3]) * th_c[None, :3] - np.diag(b_mat)[None, :3] * e
        ) * (dalpha / r1)
    cov = sandwich(b_mat, psi, np.zeros(len(psi), dtype=int), None, 1.0, lev)
    return th_c, np.sqrt(np.clip(np.diag(cov), 0.0, None)), b_mat


def _final_theta2(bread2: np.ndarray, th2: np.ndarray, h2: np.ndarray, y2: np.ndarray, r2: np.ndarray, vu: np.ndarray):
    """θ2 = [m, m z] corrected for the noise in its regressor, and its covariance.

    The RLS2 rows F = H2 θ2 (Alg. 7, eq. 19–20) regress the noise-free rotor force on the
    measured specific force, whose noise u (variance `vu`, `acc_row_noise`) attenuates least
    squares: E[Σ hᵀh/r] = Σ h̄ᵀh̄/r + S_uu with S_uu = diag(Σ_t,k vu_tk / r_tk, 0), so m comes out
    (1 - S_uu/M) times too small (≈ 3 σ_u²/|a|² ≈ 25 ppm on kwon-payload, 0.4 of its σ). The
    known-error-covariance estimator (Fuller 1987, *Measurement Error Models*, §2.2) removes it:
    θ̃ = (M - S_uu)⁻¹ (P0⁻¹ θ0 + Σ hᵀ y / r), M = `bread2`⁻¹ (the prior and the rows' normal
    matrix), with Fuller's modification for a weakly determined M: with λ̂ the smallest root
    of |M - λ S_uu| = 0 (here the Schur complement of m z over S_uu's one entry), S_uu is
    scaled by λ̂ - 1/(n-1) when λ̂ < 1 + 1/(n-1), which keeps M - S_uu positive definite.
    Covariance: the sandwich B Ω B (`regression.sandwich`), B = (M - S_uu)⁻¹, Ω the long-run
    variance (equal-weighted cosines, widened by the fit's share) of the estimating equations per
    step ψ_t = Σ_k h_tkᵀ e_tk / r_tk + (Σ_k vu_tk / r_tk) θ̃_0 e₀ (e₀ the first unit vector),
    which sum to 0 at θ̃ (Fuller §2.2's covariance is this with independent rows)."""
    m_mat = np.linalg.inv(bread2)
    w = np.sum(vu / r2, axis=1)  # each step's share of S_uu's entry
    scale, b, th = _fuller(m_mat, th2, np.array([w.sum(), 0.0]), h2.shape[0] * h2.shape[1])
    e = y2 - np.einsum("tkp,p->tk", h2, th)
    psi = np.einsum("tkp,tk->tp", h2, e / r2)
    psi[:, 0] += scale * w * th[0]
    lev = leverage_diag(b, h2, r2)
    lev[:, 0] -= scale * w * b[0, 0]
    return th, sandwich(b, psi, np.zeros(len(psi), dtype=int), None, 1.0, lev), b


def _final_std(
    est: OnlineEstimator, acc_nd2: np.ndarray | None = None, gyro_nd2: np.ndarray | None = None
) -> tuple[dict[str, tuple[float, float, float]], dict[str, bool]]:
    """Final θ1 (`_final_theta1`) and σ of θ1, mass and imu_z, from the rows the RLS and RLS2
    processed with the estimators' own covariances as the bread. The RLS covariance alone assumes
    independent rows of the stated variance (Kwon et al. eq. 10 and Alg. 5 give the estimator,
    not its sampling distribution); here the rows share the KF-filtered rate and carry model
    error. θ1: the sandwich's long-run variance (`regression.rls_hac_cov`). The
    moment residual holds J (α - α̂), and α̂ = Δω̂/dt is a first difference of the KF's rate
    error, so its spectral density at frequency 0 vanishes; the CoM columns (regressor ≈ the
    constant thrust) pass it to their scores unchanged: lag-1 autocorrelation about -0.4 and
    1 + 2 Σ ρ_l ≈ 0 on kwon-payload. One Andrews bandwidth for all (≈ 20 steps, from the MOI
    scores) kept the Bartlett-weighted negative lags from cancelling, and the CoM σ came out
    2.5-3x the scatter; a Newey-West (1994) bandwidth per parameter cut I_zz's scores short (the
    KF's rate error decays over ~10 steps: SD/σ̄ 1.22 on 90 seeds). The equal-weighted cosine
    estimate (`regression.ewc_meat`, as tls) has neither bias, and the leverage widening gives
    back what the fit takes from scores in bursts (I_zz: 1.09, 94 % within ±2σ). RLS2 (mass,
    m z): the same sandwich. With `eiv` and the KF (variant "kwon"), θ1 is corrected for the
    gyro's noise (density² `gyro_nd2`) in α̂ (`_final_theta1_eiv`). Also which parameters the
    flight informed: the information sum h^2 / r of its column exceeds that of its initial
    variance."""
    s = est.settings
    rows = est._rows or []
    if not rows:
        st, nan = est.state, float("nan")
        values = [*st.theta1, st.mass, st.imu_z]
        return {k: (v, nan, 0.0) for k, v in zip([*THETA1, "mass", "imu_z"], values, strict=True)}, dict.fromkeys(
            [*THETA1, "mass", "imu_z"], False
        )
    h1, y1, r1, h2, y2, r2 = (np.array([r[i] for r in rows], dtype=float) for i in range(6))
    th2 = np.array(est.th2)
    bread1 = np.array(est.s1).reshape(_N1, _N1)
    th1, y1 = _final_theta1(est, h1, y1, r1, bread1)
    s00, s01, s11 = est.s2
    bread2 = np.array([[s00, s01], [s01, s11]])
    dt = s.force_nd**2 / r2  # each step's duration (the RLS2 row variance is force_nd²/dt)
    if s.variant == "kwon":
        kfrow = np.array([r[8] for r in rows], dtype=float)
        eiv = s.eiv and gyro_nd2 is not None
        vu1 = alpha_row_noise(gyro_nd2, kfrow[:, :3], dt) if eiv else np.zeros((len(rows), 3))
        m = est._kf_model
        da = None if m is None else _kf_jacobian(kfrow, dt, np.maximum(m.theta1[:3], s.j_min), h1)
        th1, std1, bread1 = _final_theta1_eiv(bread1, th1, h1, y1, r1, vu1, da)
    else:
        std1 = np.sqrt(np.clip(np.diag(rls_hac_cov(bread1, h1, y1 - h1 @ th1, r1)), 0.0, None))
    r2 = np.repeat(r2[:, None], y2.shape[1], axis=1)
    if s.eiv and acc_nd2 is not None and s.variant != "rls-lpf":  # rls-lpf's rows are low-passed: not white
        th2, cov2, bread2 = _final_theta2(bread2, th2, h2, y2, r2, acc_row_noise(acc_nd2, dt))
    else:
        cov2 = rls_hac_cov(bread2, h2, y2 - h2 @ th2, r2)
    info1 = np.einsum("tkp,tk->p", h1**2, 1.0 / r1)
    info2 = np.einsum("tkp,tk->p", h2**2, 1.0 / r2)
    informed = {name: bool(info1[i] * s.theta1_var0[i] > 1.0) for i, name in enumerate(THETA1)}
    informed["mass"] = bool(info2[0] * s.theta2_var0[0] > 1.0)
    informed["imu_z"] = bool(info2[1] * s.theta2_var0[1] > 1.0)
    thrust = _rotor_thrusts(est, rows, h1, y1, th1)
    var1, cov2b = _assumed(est, h1, r1, bread1, th1, thrust, h2, r2, bread2, th2)
    _, z_std = _imu_z(th2[0], th2[1], cov2[0, 0], cov2[0, 1], cov2[1, 1], 1.0)
    _, z_b = _imu_z(th2[0], th2[1], cov2b[0, 0], cov2b[0, 1], cov2b[1, 1], 1.0)
    out = {name: (th1[i], std1[i], var1[i]) for i, name in enumerate(THETA1)}
    if s.yaw_moment > 0:
        out["yaw_moment"] = (th1[5], std1[5], 0.0)  # a rotor spread is this moment: no spread term
    out["mass"] = (th2[0], float(np.sqrt(max(cov2[0, 0], 0.0))), float(cov2b[0, 0]))
    out["imu_z"] = (est._com_z + th2[1] / th2[0], float(z_std), float(z_b) ** 2)
    return out, informed


#: What an assumed parameter rests on (`Estimate.assumption`), by the settings it comes from.
_SPREAD_WHY = (
    "one thrust coefficient for all rotors, their spread assumed {:.0%} (1σ, motor_spread): in hover a "
    "rotor stronger by ε_i moves the apparent CoM by Σ ε_i r_i / n"
)
_BIAS_WHY = "accelerometer z bias 0 ± {:g} m/s² (acc_bias_z_sigma): m = F/a moves by -m b/g; give a calibrated bias"


def _rotor_thrusts(est: OnlineEstimator, rows: list, h1: np.ndarray, y1: np.ndarray, th1: np.ndarray) -> np.ndarray:
    """Per-rotor thrust of every RLS row (T, n), recovered from the row's force and moment (the
    H1 force columns, and the output before the moved terms and the com_z F term) through the
    mixer's pseudo-inverse: exact for a quadrotor (rank 4), the minimum-norm allocation of the
    same wrench for more rotors."""
    hm = np.array([r[6] for r in rows], dtype=float)
    fx, fy, fz = -h1[:, 2, 4], h1[:, 2, 3], h1[:, 0, 4]
    m = y1 + np.einsum("tjk,k->tj", hm, th1[:3]) - est._com_z * np.stack([fy, -fx, np.zeros_like(fx)], -1)
    return np.column_stack([fx, fy, fz, m]) @ np.linalg.pinv(np.array(est._mix)).T


def _assumed(est, h1, r1, bread1, th1, thrust, h2, r2, bread2, th2) -> tuple[np.ndarray, np.ndarray]:
    """Variances the settings' assumptions add: θ1 from the rotors' gain spread
    (`OnlineSettings.motor_spread`), and the (2, 2) covariance of θ2 = [m, m z] from the
    accelerometer z bias (`acc_bias_z_sigma`), each through the batch form of the RLS solution
    θ = bread (P0⁻¹ θ0 + Σ hᵀ y / r): a change Δ(y - h θ) moves θ by bread Σ hᵀ Δ / r. A rotor
    stronger by ε_i adds ε_i f_i(t) (r_i - c) x z with its thrust f_i(t) of each row (`thrust`):
    the hover part is a CoM shift, the part that follows the manoeuvres (the differential
    thrust that drives α) scales the inertia."""
    s, n = est.settings, est._m
    mix = np.array(est._mix)  # (6, n): force and moment about the body origin per unit thrust
    com = np.array([th1[3], th1[4], est._com_z])
    arm = mix[3:6] - np.cross(com, mix[0:3].T).T  # moment per unit thrust about the CoM
    jac = bread1 @ np.einsum("tkp,tk,ki,ti->pi", h1, 1.0 / r1, arm, thrust)  # (6, n) ∂θ1/∂ε_i
    centre = np.eye(n) - 1.0 / n
    var1 = s.motor_spread**2 * np.einsum("pi,ij,pj->p", jac, centre, jac)
    d2 = -th2[0] * np.einsum("tp,t->p", h2[:, 2, :], 1.0 / r2[:, 2])  # Δ(y - hθ) = -m b on the z row
    jb = bread2 @ d2
    return var1, s.acc_bias_z_sigma**2 * np.outer(jb, jb)


def _observability(
    params: dict[str, Estimate], frac: np.ndarray, informed: dict[str, bool]
) -> tuple[dict[str, dict], list[str]]:
    """Per-parameter observability (MOI columns by their active fraction and σ, imu_z by its σ)
    and the parameters the flight never updated, which are not reported."""
    observability = {}
    for k, name in enumerate(THETA1[:3]):
        ok = bool(frac[k] > 0.005) and params[name].rel_std_pct < 10.0
        observability[name] = {
            "identifiable": ok,
            "rel_std_pct": params[name].rel_std_pct,
            "active_fraction": float(frac[k]),
            "reason": "corrected while excited" if ok else f"body {'xyz'[k]} rate rarely above its KF σ",
            "advice": "" if ok else f"fly more rotation about body {'xyz'[k]}",
        }
    pz = params["imu_z"]
    if pz.rel_std_pct > 30.0:
        observability["imu_z"] = {
            "identifiable": False,
            "rel_std_pct": pz.rel_std_pct,
            "reason": "IMU height barely excited (needs simultaneous roll and pitch accelerations)",
            "advice": "fly faster roll and pitch motion",
        }
    never = [name for name in params if not informed[name]]
    for name in never:
        observability[name] = {
            "identifiable": False,
            "reason": "never updated: the flight gave it less information than the initial guess's own "
            "variance, so the value would be that guess"
            + (
                f" (its column was active on {100 * frac[THETA1.index(name)]:.1f} % of the steps)"
                if name in THETA1[:3]
                else ""
            ),
            "advice": "fly motion that excites it (rotation about that axis for a moment of inertia)",
        }
    return observability, never


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


def _rate_error(flight: Flight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    random walk). `d` holds the mean of two consecutive gyro samples (`_rate_error`): θ is then
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

    The rate error d = gyro - ω_q (`_rate_error`) measures the bias b(t) in white noise of
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
    in hover when |b| exceeds the KF's σ (0.5 deg/s against 0.2 deg/s), the rows then carry α̂
    noise without a moment (attenuating J by 20–40 % on kwon-payload-mismatch), and the
    products of biased rates in the gyroscopic columns turn constant moments into inertia."""
    if flight.quat is None or len(flight.t) < 3:
        return None
    from scipy.signal import lfilter

    d, dt, wq = _rate_error(flight)
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


#: `identify`'s fixed-point passes (`OnlineSettings.fixed_point`) stop once no moment of inertia
#: moves by more than this share of its σ, or after `FIXED_POINT_PASSES` runs of the estimator.
FIXED_POINT_TOL = 0.1
FIXED_POINT_PASSES = 5


def _fixed_point(
    flight: Flight, vehicle: Vehicle, settings: OnlineSettings, est: OnlineEstimator, nd2: tuple
) -> tuple[OnlineEstimator, dict[str, np.ndarray], tuple, int]:
    """Re-run the estimator with its KF's process model held at the previous run's final θ1
    (`KfModel`) until the MOI settle (`FIXED_POINT_TOL`); returns the last estimator, its
    trajectories, its `_final_std` and the number of runs.

    The KF's α̂ follows the gyro below its bandwidth and its model M/Ĵ above it, so each RLS row
    regresses M partly on M/Ĵ_t with the running Ĵ_t of its step: the estimate is pulled toward
    the running estimate, which starts at j0 (1 g m² against 50-60). On a noise-free kwon-payload
    flight that leaves I_xx, I_yy +0.66 % and I_zz -0.16 %; with j0 at the truth < 0.001 %, and
    the raw gyro (variant "rls") -0.001 %. Holding the KF at the final θ1 and
    iterating is the off-line form of such a pseudo-linear regression, whose regressors depend on
    the estimate (Ljung & Söderström 1983, *Theory and Practice of Recursive Identification*,
    pseudo-linear regressions): its fixed point does not depend on the initial guess (noise-free:
    +0.001, +0.001, -0.001 % from j0 = 1 g m² and from the truth alike), and the scatter of I_xx,
    I_yy, I_zz over 30 seeds falls from 0.47, 0.41, 0.87 % to 0.24, 0.28, 0.78 % (3 runs). σ then
    needs the regressor's dependence on the held θ1 (`_final_theta1_eiv`, `dalpha`)."""
    final = _final_std(est, *nd2)
    tr = None
    run = 1
    while run < FIXED_POINT_PASSES:
        run += 1
        th = [final[0][name][0] for name in THETA1] + [final[0].get("yaw_moment", (0.0,))[0]]
        model = KfModel(tuple(th), tuple(est.s1), est._scale(est._chi1))
        est = OnlineEstimator(vehicle, settings, model)
        tr = est.run(flight)
        new = _final_std(est, *nd2)
        step = [(abs(new[0][n][0] - final[0][n][0]), new[0][n][1]) for n in THETA1[:3] if new[1][n]]
        moved = [d / sd if sd > 0 else (0.0 if d == 0 else math.inf) for d, sd in step]
        final = new
        if not moved or max(moved) < FIXED_POINT_TOL:
            break
    return est, tr, final, run


def _stream(
    flight: Flight, vehicle: Vehicle, settings: OnlineSettings
) -> tuple[OnlineEstimator, dict[str, np.ndarray], np.ndarray | None, tuple, int]:
    """The estimator run over the flight (its gyro bias removed, `gyro_bias`): the estimator, its
    trajectories, the bias, its `_final_std` (with the accelerometer's and the gyro's noise
    densities) and the number of runs (`_fixed_point` when `OnlineSettings.fixed_point` and the
    KF). A stuck motor (`motion.stuck_motors`, the check `rotorid.runs` makes) or a flight that
    never enables the RLS is an `ExcitationError`."""
    from rotorid.motion import stuck_motors  # scipy.signal: kept out of the streaming estimator's import

    est = OnlineEstimator(vehicle, settings)
    est.check(flight)
    stuck = stuck_motors([flight])
    if stuck:
        raise ExcitationError(f"{flight.source}: {stuck}; give a flight where the motors respond")
    bias = gyro_bias(flight) if settings.gyro_bias else None
    nd2 = (acc_noise_density(flight.acc, flight.t), acc_noise_density(flight.gyro, flight.t))
    flight = flight if bias is None else flight.replace(gyro=flight.gyro - bias.series)
    tr = est.run(flight)
    if not est.enabled:
        raise ExcitationError(
            f"{flight.source}: estimator never enabled — the low-pass-filtered vertical acceleration never "
            f"exceeded a_z_allow={settings.a_z_allow} m/s² (t={flight.t[0]:.3f}–{flight.t[-1]:.3f} s); "
            "give a log that includes the take-off"
        )
    if settings.fixed_point and settings.variant == "kwon":
        est, tr2, final, runs = _fixed_point(flight, vehicle, settings, est, nd2)
        return est, tr if tr2 is None else tr2, bias, final, runs
    return est, tr, bias, _final_std(est, *nd2), 1


def identify(
    flight: Flight,
    vehicle: Vehicle,
    settings: OnlineSettings | None = None,
    truth: dict[str, float] | None = None,
) -> Result:
    """Run the online estimator over a flight and return its final estimates (Kwon et al.
    Tables 8–10: I_xx, I_yy, I_zz, com_x, com_y, mass, imu_z with std from the RLS covariances)
    and the trajectories in `result.diagnostics`. With `truth` (canonical name -> value, e.g.
    `scenario.truth.params`) the notes list each final value against it."""
    settings = settings or OnlineSettings()
    est, tr, bias, (final, informed), runs = _stream(flight, vehicle, settings)
    yaw = final.pop("yaw_moment", None)  # a nuisance term, not a vehicle parameter: said in the notes
    estimates = {name: (float(v), math.sqrt(sd * sd + va)) for name, (v, sd, va) in final.items()}
    params = {name: Estimate(v, sd) for name, (v, sd) in estimates.items()}
    en = tr["enabled"]
    kwon = settings.variant == "kwon"
    frac = tr["active"][en].mean(axis=0) if kwon else np.ones(3)
    observability, never = _observability(params, frac, informed)
    for name in never:
        del estimates[name]
    diagnostics: dict[str, Any] = dict(tr)
    if flight.gyro_dot is not None:
        diagnostics["alpha_true"] = flight.gyro_dot
    intervals = flight.meta.get("sim", {}).get("intervals") if isinstance(flight.meta.get("sim"), dict) else None
    if intervals:
        diagnostics["intervals"] = intervals
    notes = [
        f"variant {settings.variant}: estimator enabled at t={est.t_enabled:.3f} s ({100 * en.mean():.1f}% of the log)"
        + (f"; run {runs} times, the KF's model held at the previous run's θ1 (fixed point)" if runs > 1 else ""),
        "imu_z is the IMU height above the CoM plus com_z of the vehicle (0 if unknown)",
    ]
    if never:
        notes.append(f"not reported (never updated by the flight, see observability): {', '.join(never)}")
    if bias is not None:
        notes.append(
            "gyro bias tracked against the logged attitude (time constants "
            + ", ".join(f"{a} {v:.3g}" for a, v in zip("xyz", bias.tau, strict=True))
            + f" s from its Allan "
            f"variance, gyro lag {1e3 * bias.lag:+.2f} ms) and removed; mean "
            + ", ".join(f"{a} {math.degrees(b):+.3f}" for a, b in zip("xyz", bias.series.mean(axis=0), strict=True))
            + " deg/s"
        )
    if yaw is not None:
        notes.append(f"constant yaw moment (rotor spread times k_tau, yaw trim): {yaw[0]:+.4g} ± {yaw[1]:.2g} N m")
    notes.append(
        "σ is the HAC sandwich of the RLS over the whole flight (equal-weighted cosine long-run variance): "
        "the RLS rows share the Kalman-filtered rate and are correlated in time; it gives back what the fit "
        "takes from its own residuals where a parameter's information comes in bursts (its leverage)"
        + (
            "; mass and imu_z are corrected for the accelerometer noise in their regressor (errors in variables)"
            if settings.eiv and settings.variant != "rls-lpf"
            else ""
        )
    )
    if kwon:
        notes.append(
            "correction law: MOI columns active on "
            + ", ".join(f"{'xyz'[k]} {100 * frac[k]:.0f}%" for k in range(3))
            + " of the enabled samples"
        )
    if truth:
        diagnostics["truth"] = dict(truth)
        notes += [
            f"{name}: {v:.6g} / true {truth[name]:.6g} {unit_of(name)} ({rel_error_pct(v, truth[name]):+.2f} %)"
            for name, (v, _) in estimates.items()
            if name in truth and truth[name] != 0
        ]
    settings_out = {
        **dataclasses.asdict(settings),
        **est._motor_settings(),
        "log_rate_hz": flight.rate,
        "runs": runs,
    }
    result = build_result("online", estimates, settings_out, diagnostics, observability, notes)
    for name, (_, sd, va) in final.items():
        if name in result.params and va > sd * sd:  # the σ is mostly the assumption's
            why = _BIAS_WHY.format(settings.acc_bias_z_sigma) if name in ("mass", "imu_z") else _SPREAD_WHY
            result.params[name] = dataclasses.replace(result.params[name], assumption=why.format(settings.motor_spread))
    return with_vehicle(result, vehicle)
