"""Settings of the delay method and the constants they rest on (Eschmann et al. Table II, eq. 93)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from rotorid.errors import RotoridError
from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA, check_imu, imu_scale_option
from rotorid.options import internal, option, pair, tm_bounds_option, value_sigma, voltage_option, words

#: Largest accelerometer bias (m/s²) `acc_bias_z` may give: half of gravity is a broken sensor.
ACC_BIAS_MAX = 5.0

INERTIA_PARAMS = ("direct", "reciprocal", "tls")
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
    - `exponents`: thrust-curve exponents j of K_j u^j; None (or "auto", the default): chosen
      from the data by held-out prediction (`structure.choose_curve`).
    - `voltage`: "auto", "on" or "off": the battery voltage in the thrust curve, the lagged
      command times (V / V_ref)^α (`rotorid.methods.voltage`); "auto" lets held-out prediction
      choose it against the plain curve where every flight logs the voltage.
    - `izz_ratio`: (C, SIGMA) of C_xy->z in eq. 93 (a bare C takes the default SIGMA): the
      assumption behind I_zz and K_tau, whose σ carry SIGMA. Default: eq. 93's 1.832 (the mean
      over `TABLE_II_RATIOS`) ± their predictive spread for a new vehicle, s sqrt(1 + 1/n)
      (s the sample standard deviation of the n = 12 ratios) = 0.40.
    - `acc_bias_z`: (VALUE, SIGMA) in m/s² of the accelerometer's z bias, subtracted from the
      measured specific force. Airborne flights cannot separate it from K_0 (both are constant
      in eq. 17-21; the hover check of Fig. 6 selects its samples by the biased |acc| too), so
      SIGMA enters the σ of K_0 and the hover command, which are marked assumed. Default
      0 ± `ACC_BIAS_Z_SIGMA`; give a calibrated bias (e.g. from a rest log) to tighten them.
    - `imu_scale`: assumed 1σ scale error of the gyro and accelerometer per axis (fraction; 0: a
      calibrated IMU). No flight tells it apart: the thrust curve scales with the accelerometer,
      the inertias with it over the gyro (`imu.imu_scale_term`); it enters σ, and a parameter
      whose variance is mostly this term is labelled assumed. Default `IMU_SCALE`.
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
      (`dead_time_check`).
    - `asymmetry_check`: test the symmetric lag against separate rising/falling constants and
      widen σ by their difference when the data support them (`asymmetry_check`).
    - `inflow_check`: test the lag model against one with rotor inflow (thrust falling with the
      climb speed) and widen σ by their difference when the data support it (`inflow_check`).
    - `saturation_check`: test the thrust curve against one whose rotors add less thrust above a
      knee (saturation) and widen σ by their difference when the data support it (`saturation_check`).
    """

    tm_prior: tuple[float, float] | None = option(
        None, "Log-normal prior on T_m: MEAN,SIGMA (s).", kind=str, parse=pair
    )
    asymmetric_tm: bool = option(False, "Separate rising and falling T_m.")
    per_motor: bool = option(False, "One thrust curve per motor.")
    exponents: tuple[int, ...] | None = option(
        None,
        "Thrust-curve exponents, e.g. 0,1,2 or 2; auto: the simplest curve that predicts held-out thrust as well "
        "as the best.",
        parse=words,
        auto=True,
    )
    voltage: str = voltage_option()
    izz_ratio: tuple[float, float] = option(
        (1.832, IZZ_RATIO_SIGMA),
        "C_xy->z in I_zz = C (I_xx+I_yy)/2: C or C,SIGMA (SIGMA: the spread of Eschmann Table II); I_zz and "
        "K_tau carry SIGMA.",
        parse=value_sigma,
    )
    acc_bias_z: tuple[float, float] = option(
        (0.0, ACC_BIAS_Z_SIGMA),
        "Accelerometer z bias VALUE or VALUE,SIGMA in m/s²: subtracted; K_0 and the hover command carry SIGMA.",
        parse=lambda v, what: value_sigma(v, what, ACC_BIAS_MAX),
    )
    imu_scale: float = imu_scale_option()
    inertia_param: str = option("auto", "auto, direct, reciprocal or tls.")
    tm_bounds: tuple[float, float] = tm_bounds_option()
    tm_grid: int = internal(24)
    tm_xtol: float = internal(1e-4)
    cutoff_hz: float = option(20.0, "Zero-phase low-pass (Hz) for torque and angular acceleration.")
    filter_order: int = internal(4)
    trim_s: float = internal(0.1)
    torque_offset: bool = internal(True)
    hover_fraction: float = internal(0.05)
    pred_horizon: float = internal(0.05)
    joint_max_rel_std: float = internal(20.0)
    gyroscopic: bool = internal(True)
    autocorr_correction: bool = internal(True)
    min_thrust_r2: float = internal(0.2)
    dead_time_check: bool = internal(True)
    dead_time_max: float = internal(0.03)
    asymmetry_check: bool = internal(True)
    inflow_check: bool = internal(True)
    saturation_check: bool = internal(True)

    def __post_init__(self) -> None:
        if self.tm_prior is not None:
            object.__setattr__(self, "tm_prior", tuple(float(v) for v in self.tm_prior))
            if len(self.tm_prior) != 2 or not all(v > 0 for v in self.tm_prior):
                raise RotoridError(f"tm_prior {self.tm_prior} must be two positive numbers MEAN,SIGMA in seconds")
        if isinstance(self.exponents, str):  # "0,1,2" or "auto", as a manifest or the CLI gives it
            object.__setattr__(self, "exponents", tuple(self.exponents.split(",")))
        if self.exponents is not None and [str(e).strip() for e in self.exponents] == ["auto"]:
            object.__setattr__(self, "exponents", None)
        if self.exponents is not None:
            self._check_exponents()
        if self.voltage not in ("auto", "on", "off"):
            raise RotoridError(f"voltage '{self.voltage}' must be auto, on or off")
        check_imu(self.imu_scale, 0.0)
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

    def _check_exponents(self) -> None:
        try:
            object.__setattr__(self, "exponents", tuple(int(str(e).strip()) for e in self.exponents))
        except ValueError:
            raise RotoridError(f"exponents {self.exponents} must be integers, e.g. 0,1,2, or auto") from None
        if not self.exponents or len(set(self.exponents)) != len(self.exponents) or min(self.exponents) < 0:
            raise RotoridError(f"exponents {self.exponents} must be distinct non-negative integers, e.g. 0,1,2")


def tm_support(settings: DelaySettings) -> tuple[float, float]:
    """Search interval: `tm_bounds`, narrowed to the prior's central 99.98 % when a prior is given."""
    lo, hi = settings.tm_bounds
    if settings.tm_prior is None:
        return lo, hi
    mean, sd = settings.tm_prior
    s = math.sqrt(math.log1p((sd / mean) ** 2))
    mu = math.log(mean) - 0.5 * s * s
    z = 3.72  # two-sided 1e-4 tails
    return max(lo, math.exp(mu - z * s)), min(hi, math.exp(mu + z * s))
