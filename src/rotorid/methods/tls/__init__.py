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

The stages, each a module importing only those before it (import-linter's `tls-stages`):
`settings` < `rows` < `selection` < `problem` < `noise` < `covariance` < `gains` < `solve` <
`lags` < `notes` < `pipeline`. Importing this package loads only `settings`; the other public
names load their stage on first use.
"""

from __future__ import annotations

from rotorid.methods.assumptions import MOTOR_SPREAD
from rotorid.methods.tls.settings import BODY_DRAG, CHI, CHI_K, K_IN, K_RD, MAX_IMU_DELAY, TlsSettings
from rotorid.util import lazy_names

#: Public names of the later stages, by module (loaded on first use, `__getattr__`).
_LAZY = {
    "identify": "pipeline",
    "idim_rows": "rows",
    "observation": "rows",
    "assemble": "rows",
    "Rows": "rows",
    "essential": "selection",
    "YAW_PAIR": "selection",
    "NoiseMoment": "noise",
    "cancellation_var": "covariance",
    "floor_var": "covariance",
}

__all__ = [
    "BODY_DRAG",
    "CHI",
    "CHI_K",
    "K_IN",
    "K_RD",
    "MAX_IMU_DELAY",
    "MIN_RATE_HZ",
    "MOTOR_SPREAD",
    "TlsSettings",
    *_LAZY,
]

__getattr__, __dir__ = lazy_names(
    __name__, {"MIN_RATE_HZ": "rotorid.motion", **{n: f"{__name__}.{m}" for n, m in _LAZY.items()}}
)
