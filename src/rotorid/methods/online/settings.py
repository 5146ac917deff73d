"""The online estimator's settings (`OnlineSettings`, Kwon et al. Table 6 in SI) and the names
every stage shares: the variants, θ1's parameters and the motor hold check."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rotorid.errors import RotoridError
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA, motor_spread_option
from rotorid.options import hz_or_auto, internal, option, zero_is_none

#: Lowest original logging rate of IMU and rotor channels (Kwon et al. ran the estimator at 100 Hz).
MIN_RATE_HZ = 50.0

VARIANTS = ("kwon", "rls", "rls-lpf")
THETA1 = ("I_xx", "I_yy", "I_zz", "com_x", "com_y")
#: θ1 as the RLS holds it: THETA1 and the constant yaw moment b_z (`OnlineSettings.yaw_moment`)
N1 = len(THETA1) + 1


@dataclass(frozen=True)
class OnlineSettings:
    """Estimator settings. Defaults are Kwon et al. Table 6 converted to SI; the noise levels the
    paper does not list (gyro_nd, moment_nd, force_nd, enable_tau) are chosen here, and three choices
    depart from a literal reading of Alg. 1–5 because the literal form locks the MOI at the
    errors-in-variables bias (`OnlineSettings.literal()` restores it for comparison; what was
    measured is in docs/validation.md, "Measured reasons behind the defaults"): `q_omega` > 0,
    `eiv` = True and the MOI variance in eq. 29 scaled by the RLS's a-posteriori residual
    variance (always on). Two more model what the paper's
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
      regressor (`final_theta2`, Fuller's known-covariance estimator; not for "rls-lpf"), and
      with the KF its final θ1 for the gyro noise in α̂ (`final_theta1_eiv`).
    - `fixed_point`: `identify` re-runs the estimator with the KF's process model held at the
      previous run's final θ1 until the MOI settle (`fixed_point`; paper: False, the KF
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
    - `lowpass_hz` (Hz): zero-phase low-pass (4th-order Butterworth) of the gyro, the
      accelerometer and the motor signals alike before the estimator (`noise.band_limited`; a
      filter on every side of eq. 10 and 19 keeps their relation). The estimator's block means are
      a poor anti-alias filter (a 130 Hz frame vibration passes 20 % of itself into 100 Hz steps, at
      30 Hz): the KF's α̂ then carries vibration no moment explains, which attenuates the MOI
      (errors in variables; kwon-payload with 3 m/s² per rotor behind a 100 Hz anti-alias: I_xx
      -98 % without, +0.5 % with). None: 0.3 × the estimator's rate (30 Hz at 100 Hz, PX4's gyro
      cut-off), far above the manoeuvres; 0: off (the paper, `literal()`). Variant "kwon" only: the
      baselines "rls" and "rls-lpf" stay the paper's.
    - `motor_spread`: assumed relative 1σ spread of the rotors' thrust gains about their mean
      (eq. 1–5 take one C_T for all rotors; default `MOTOR_SPREAD`). A rotor stronger by ε_i
      adds the moment ε_i f_i (r_i - c) x z, which in hover no flight separates from a CoM
      shift Δc = Σ ε_i r_i / n. Its effect enters σ of θ1 as σ_ε² J (I - 11ᵀ/n) Jᵀ,
      J_i = ∂θ1/∂ε_i of the final fit with each row's rotor thrust f_i(t) (the common mode is
      C_T's own error, the user's input): the hover part moves the CoM, the part that follows
      the manoeuvres scales the inertia (the batch form holds the KF's α̂ fixed). A parameter
      whose variance is mostly this term is labelled assumed. 0 turns it off.
    - `acc_bias_z_sigma` (m/s²): assumed σ of the accelerometer's z bias b (default
      `ACC_BIAS_Z_SIGMA`): m = F/a in eq. 19 moves by about -m b/g, which nothing in the flight
      separates from the mass; it enters σ of mass and imu_z likewise. 0 turns it off.
    - `yaw_moment` (N m): prior σ of a constant yaw moment b_z, a column of the yaw row of eq. 10
      (regressor 1) and a term of the KF's process model; 0 leaves it out (the paper). The
      rotors' gain spread times k_tau, a trim the yaw controller holds, is such a moment.
      Without the column the RLS explains it through the yaw row's gyroscopic regressors ±p q,
      which are systematic in a diagonal manoeuvre. In x and y a constant moment is the CoM's
      column already (F_z ≈ m g).
    - `gyro_bias`: `identify` subtracts the gyro's bias tracked against the logged attitude
      (`gyro_bias`: a causal series, so a bias that walks is followed; nothing without an
      attitude). A bias above the KF's σ keeps the
      correction law's column active in hover (Alg. 4), where the rows carry α̂ noise without a
      moment, which attenuates J.
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
      is set). Held samples read as point samples put the moment half a log sample late, which
      the KF turns into a gain error of α̂; point samples read as held put it early.
    - `a_z_allow` (m/s²): enable threshold on the LPF'd vertical acceleration (0.1);
      `enable_tau` (s): that LPF's time constant.
    """

    variant: str = option("kwon", "kwon (the paper's method), rls or rls-lpf.")
    j_min: tuple[float, float, float] = internal((1e-3, 1e-3, 1e-3))
    omega0: tuple[float, float, float] = internal((0.0, 0.0, 0.0))
    omega_var0: float = internal(0.010**2)
    c_sigma: float = internal(1.0)
    gyro_nd: float = internal(1e-3)
    q_omega: float = internal(1e-4)
    n_sigma: float = option(1.0, "Correction-law threshold |ω̂| >= n_sigma·σ.")
    eiv: bool = internal(True)
    j0: tuple[float, float, float] = internal((1e-3, 1e-3, 1e-3))
    com0: tuple[float, float] = internal((0.0, 0.0))
    theta1_var0: tuple[float, float, float, float, float] = internal((1.0, 1.0, 1.0, 0.01, 0.01))
    moment_nd: float = internal(1e-3)
    mass0: float = internal(0.1)
    imu_z0: float = internal(0.0)
    theta2_var0: tuple[float, float] = internal((0.25, 0.01))
    force_nd: float = internal(1e-2)
    lpf_tau: float = internal(-0.01 / math.log(1.0 - 0.2))
    a_z_allow: float = option(0.1, "Enable threshold on vertical acceleration (m/s²).")
    enable_tau: float = internal(0.05)
    rate_hz: float | None = option(
        100.0, "Estimator rate; faster logs are block-averaged (0: every sample).", parse=zero_is_none
    )
    lowpass_hz: float | None = option(
        None,
        "Zero-phase low-pass (Hz) of gyro, accelerometer and motors alike before the estimator "
        "(0: off); default 0.3 × the estimator's rate.",
        auto=True,
        parse=hz_or_auto,
    )
    motor_spread: float = motor_spread_option()
    acc_bias_z_sigma: float = internal(ACC_BIAS_Z_SIGMA)
    yaw_moment: float = internal(1.0)
    gyro_bias: bool = internal(True)
    fixed_point: bool = internal(True)
    motor_hold: float | None = option(
        None,
        "How long each logged motor sample holds after its stamp, s: the mixer's period (0: point samples). "
        "Default: what the log records, else 0.",
        kind=float,
    )

    @staticmethod
    def literal(**changes: Any) -> OnlineSettings:
        """Alg. 1–7 read literally: no process-noise floor, a constant RLS weight and no low-pass
        before the block means (still at the paper's 100 Hz)."""
        return OnlineSettings(
            **{
                "q_omega": 0.0,
                "eiv": False,
                "yaw_moment": 0.0,
                "gyro_bias": False,
                "fixed_point": False,
                "lowpass_hz": 0.0,
                **changes,
            }
        )

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise RotoridError(f"unknown online variant '{self.variant}'; choose {', '.join(VARIANTS)}")
        for name in ("omega_var0", "c_sigma", "gyro_nd", "moment_nd", "force_nd", "lpf_tau", "a_z_allow", "enable_tau"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise RotoridError(f"online setting {name} must be a positive number, got {v!r}")
        if self.lowpass_hz is not None and not (math.isfinite(self.lowpass_hz) and self.lowpass_hz >= 0):
            raise RotoridError(
                f"online setting lowpass_hz must be a frequency >= 0 in Hz or None, got {self.lowpass_hz!r}"
            )
        if self.motor_hold is not None:
            check_hold(self.motor_hold, "online setting motor_hold")
        if self.rate_hz is not None and not (math.isfinite(self.rate_hz) and self.rate_hz > 0):
            raise RotoridError(f"online setting rate_hz must be a positive rate in Hz or None, got {self.rate_hz!r}")
        if not (0.0 <= self.motor_spread < 1.0 and self.acc_bias_z_sigma >= 0.0 and self.yaw_moment >= 0.0):
            raise RotoridError(
                f"online settings motor_spread {self.motor_spread!r} must lie in [0, 1) and "
                f"acc_bias_z_sigma {self.acc_bias_z_sigma!r} and yaw_moment {self.yaw_moment!r} be >= 0"
            )
        if self.q_omega < 0 or min(self.j_min) <= 0 or min(self.theta1_var0) <= 0 or min(self.theta2_var0) <= 0:
            raise RotoridError("online settings q_omega >= 0, j_min > 0 and initial variances > 0 are required")


def check_hold(hold: Any, what: str) -> float:
    """`OnlineSettings.motor_hold` or `Flight.meta["motor_hold"]` as a float: a time >= 0 in s."""
    try:
        v = float(hold)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(hold, bool) or not (math.isfinite(v) and v >= 0.0):
        raise RotoridError(f"{what} must be a time >= 0 in s (0: point samples), got {hold!r}")
    return v
