"""Motor-delay identification (Eschmann, Albani, Loianno: "Data-Driven System Identification of
Quadrotors Subject to Motor Delays").

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
   σ also holds the log's time resolution (`structure.sample_hold_term`: a command that moves
   within a sample interval lags the held sample by up to Δt/2, which T_m absorbs; not where
   the log records that its commands hold, `meta["cmd_hold"]`) and, with
   several thrust windows, their leave-one-out scatter when it exceeds σ (`window_scatter`);
   a T_m at a search bound is "not identified" (`at_bound`) with a one-sided profile σ.
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
   the direct and reciprocal fits (Frisch bounds, `inertia.eiv_bracket`; also for K_tau), and a
   bracket wider than ±50 % about its centre makes the value not identifiable. The
   gyroscopic terms ω x (J ω) of eq. 62 are kept (with I_zz from eq. 93, iterated); the paper's
   eq. 80 drops them, which biases I_xx by a few % when the flight also yaws.
4. **I_zz and K_tau**: I_zz = C (I_xx + I_yy)/2 (eq. 93-94), K_tau by least squares (eq. 95-96);
   when the yaw flight has precession, also the joint estimate of eq. 73-76.

Stages, each a module importing only the ones before it (import-linter contract `delay-stages`):
`settings` < `problem` < `uncertainty` < `search` < `angular` < `inertia` < `yaw`
< `collected` < `structure` < `thrust_steps` < `angular_steps` < `pipeline`. The names below load
on first use (PEP 562), so naming the settings class does not import the whole method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rotorid.util import lazy_names

if TYPE_CHECKING:
    from rotorid.errors import ExcitationError
    from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
    from rotorid.methods.covariance import (
        ACOV_BLOCK,
        FIRST_LAGS,
        SOKAL_C,
        autocov,
        influence_cov,
        integrated_autocorr_time,
        long_run_var,
        ols_influence,
    )
    from rotorid.methods.delay.angular import Angular, angular_columns
    from rotorid.methods.delay.inertia import EIV_ADVICE, EIV_MAX_HALF_WIDTH, predict_scores, roll_pitch_inertia
    from rotorid.methods.delay.pipeline import identify
    from rotorid.methods.delay.problem import ThrustProblem
    from rotorid.methods.delay.search import AsymSearch, TmSearch, search_tm, search_tm_asymmetric
    from rotorid.methods.delay.settings import (
        INERTIA_PARAMS,
        IZZ_RATIO_SIGMA,
        MIN_RATE_HZ,
        STRUCTURED_TAU,
        TABLE_II_RATIOS,
        DelaySettings,
    )
    from rotorid.methods.delay.structure import ASYM_SCREEN_P, ASYM_SCREEN_STEP
    from rotorid.methods.delay.uncertainty import ThrustUncertainty, prior_terms, thrust_uncertainty
    from rotorid.result import Result

_PKG = "rotorid.methods.delay"
_HOME = {
    **dict.fromkeys(("Angular", "angular_columns"), f"{_PKG}.angular"),
    **dict.fromkeys(
        (
            "ACOV_BLOCK",
            "FIRST_LAGS",
            "SOKAL_C",
            "autocov",
            "influence_cov",
            "integrated_autocorr_time",
            "long_run_var",
            "ols_influence",
        ),
        "rotorid.methods.covariance",
    ),
    **dict.fromkeys(("EIV_ADVICE", "EIV_MAX_HALF_WIDTH", "predict_scores", "roll_pitch_inertia"), f"{_PKG}.inertia"),
    "identify": f"{_PKG}.pipeline",
    "ThrustProblem": f"{_PKG}.problem",
    **dict.fromkeys(("AsymSearch", "TmSearch", "search_tm", "search_tm_asymmetric"), f"{_PKG}.search"),
    **dict.fromkeys(
        (
            "INERTIA_PARAMS",
            "IZZ_RATIO_SIGMA",
            "MIN_RATE_HZ",
            "STRUCTURED_TAU",
            "TABLE_II_RATIOS",
            "DelaySettings",
        ),
        f"{_PKG}.settings",
    ),
    **dict.fromkeys(("ASYM_SCREEN_P", "ASYM_SCREEN_STEP"), f"{_PKG}.structure"),
    **dict.fromkeys(("ThrustUncertainty", "prior_terms", "thrust_uncertainty"), f"{_PKG}.uncertainty"),
    # names the single module re-exported, which callers use
    "ACC_BIAS_Z_SIGMA": "rotorid.methods.assumptions",
    "ExcitationError": "rotorid.errors",
    "MAX_PLOT_POINTS": "rotorid.util",
    "Result": "rotorid.result",
}
__all__ = [
    "ACC_BIAS_Z_SIGMA",
    "ACOV_BLOCK",
    "ASYM_SCREEN_P",
    "ASYM_SCREEN_STEP",
    "EIV_ADVICE",
    "EIV_MAX_HALF_WIDTH",
    "FIRST_LAGS",
    "INERTIA_PARAMS",
    "IZZ_RATIO_SIGMA",
    "MAX_PLOT_POINTS",
    "MIN_RATE_HZ",
    "SOKAL_C",
    "STRUCTURED_TAU",
    "TABLE_II_RATIOS",
    "Angular",
    "AsymSearch",
    "DelaySettings",
    "ExcitationError",
    "Result",
    "ThrustProblem",
    "ThrustUncertainty",
    "TmSearch",
    "angular_columns",
    "autocov",
    "identify",
    "influence_cov",
    "integrated_autocorr_time",
    "long_run_var",
    "ols_influence",
    "predict_scores",
    "prior_terms",
    "roll_pitch_inertia",
    "search_tm",
    "search_tm_asymmetric",
    "thrust_uncertainty",
]

__getattr__, __dir__ = lazy_names(__name__, _HOME)
