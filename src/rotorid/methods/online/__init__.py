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
defaults here were chosen on simulated flights (docs/validation.md, "Measured reasons behind
the defaults"); `OnlineSettings.literal()` restores the literal algorithms for comparison
(benchmarks/bench_online.py).

Uncertainty: the streaming state (`OnlineState.theta1_std`, the trajectories) carries the RLS's
own covariance scaled by its a-posteriori residual variance, what a live loop can afford;
`identify` reports the HAC sandwich over the whole flight (`solve.final_std`), and leaves out a
parameter the flight never informed (the value would be the initial guess). Its mass and imu_z
are the errors-in-variables corrected solve of the RLS2 rows (`solve.final_theta2`), so they differ
from the streaming trajectory's last value by the attenuation the accelerometer noise causes.

Discretisation: Alg. 4 differentiates ω̂ between two steps; the KF predicts with, and H1 holds,
the wrench's exact mean over the step the two blocks' gyro means span (`OnlineEstimator._push`:
the samples of both blocks weighted by a triangle, each centred where its motor sample holds,
`OnlineSettings.motor_hold`); the rate in H1/H2 and the force and accelerometer of H2 are the
means of the two steps (the midpoint the forward difference belongs to).

The stages, each a module of this package, import only those below them (import-linter contract
`online-stages`): `settings`, `layout` < `kernel` < `estimator` < `noise`, `bias` < `solve` < `passes` <
`pipeline` (`identify`). `kernel` is the estimator's per-sample step compiled by numba (bit-identical to
the pure-Python step it replaced); numba loads when an estimator is made.
The public names below load their stage on first use (PEP 562), so the registry's
`rotorid.methods.online:OnlineSettings` does not import numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rotorid.util import lazy_names

if TYPE_CHECKING:
    from rotorid.methods.online.bias import GyroBias, allan_levels, gyro_bias
    from rotorid.methods.online.estimator import KfModel, OnlineEstimator, OnlineState, Sample
    from rotorid.methods.online.noise import acc_noise_density, acc_row_noise, alpha_row_noise
    from rotorid.methods.online.passes import FIXED_POINT_PASSES, FIXED_POINT_TOL
    from rotorid.methods.online.pipeline import identify
    from rotorid.methods.online.settings import MIN_RATE_HZ, THETA1, VARIANTS, OnlineSettings

_HOME = {
    "FIXED_POINT_PASSES": "passes",
    "FIXED_POINT_TOL": "passes",
    "GyroBias": "bias",
    "KfModel": "estimator",
    "MIN_RATE_HZ": "settings",
    "OnlineEstimator": "estimator",
    "OnlineSettings": "settings",
    "OnlineState": "estimator",
    "Sample": "estimator",
    "THETA1": "settings",
    "VARIANTS": "settings",
    "acc_noise_density": "noise",
    "acc_row_noise": "noise",
    "allan_levels": "bias",
    "alpha_row_noise": "noise",
    "gyro_bias": "bias",
    "identify": "pipeline",
}
__all__ = [
    "FIXED_POINT_PASSES",
    "FIXED_POINT_TOL",
    "MIN_RATE_HZ",
    "THETA1",
    "VARIANTS",
    "GyroBias",
    "KfModel",
    "OnlineEstimator",
    "OnlineSettings",
    "OnlineState",
    "Sample",
    "acc_noise_density",
    "acc_row_noise",
    "allan_levels",
    "alpha_row_noise",
    "gyro_bias",
    "identify",
]

__getattr__, __dir__ = lazy_names(__name__, {n: f"{__name__}.{m}" for n, m in _HOME.items()})
