"""The IMU's scale in delay's σ: an assumption no flight tests (`DelaySettings.imu_scale`)."""

from __future__ import annotations

import math

import numpy as np

from rotorid.methods.delay.collected import Collected
from rotorid.vehicle import Vehicle

#: Share of a parameter's variance above which the IMU's assumed scale labels it assumed.
ASSUMED_SHARE = 0.5


def scale_sensitivities(est: dict[str, tuple[float, float]], ident: Vehicle) -> dict[str, np.ndarray]:
    """d(parameter)/d(s) for the scale errors s = (accelerometer, gyro x, y, z), to first order and
    exact for the model's structure: b = m acc is linear in the thrust coefficients (eq. 17-21),
    so they scale with the accelerometer; the roll/pitch torque is the thrust curve times the arms
    and the angular acceleration the gyro's derivative (eq. 80-82, every parameterization alike),
    so I_xx ∝ (1 + s_a) / (1 + s_gx); I_zz = C (I_xx + I_yy)/2 (eq. 93) follows them; the yaw
    flight fixes I_zz / K_tau ∝ thrust / yaw acceleration (eq. 95-96), so K_tau's accelerometer
    parts cancel. T_m, the voltage exponent and the relative hover drop do not scale. The hover
    command moves as the curve's thrust, scaled, meets m g (a central difference of
    `Vehicle.hover_command`). A misalignment leaves the z-row thrust and the diagonal inertias
    unchanged to first order, so only the scale enters."""
    out: dict[str, np.ndarray] = {}
    for name, (v, _) in est.items():
        if name.startswith("thrust_c"):
            out[name] = np.array([v, 0.0, 0.0, 0.0])
    h = 1e-4
    if "hover_cmd" in est:
        up, down = (ident.replace(thrust_coeffs=ident.thrust_coeffs * (1 + d)).hover_command() for d in (h, -h))
        out["hover_cmd"] = np.array([(up - down) / (2 * h), 0.0, 0.0, 0.0])
    if "I_xx" in est and "I_yy" in est:
        ixx, iyy = est["I_xx"][0], est["I_yy"][0]
        wx, wy = ixx / (ixx + iyy), iyy / (ixx + iyy)
        out["I_xx"] = ixx * np.array([1.0, -1.0, 0.0, 0.0])
        out["I_yy"] = iyy * np.array([1.0, 0.0, -1.0, 0.0])
        if "I_zz" in est:
            out["I_zz"] = est["I_zz"][0] * np.array([1.0, -wx, -wy, 0.0])
        if "k_tau" in est:
            out["k_tau"] = est["k_tau"][0] * np.array([0.0, -wx, -wy, 1.0])
    return out


def imu_scale_term(out: Collected, ident: Vehicle, scale: float) -> None:
    """Adds the IMU's assumed 1σ scale error `scale` (per axis, independent) to the σ of every
    parameter it moves (`scale_sensitivities`), in `out.est` and the observability's %σ; a
    parameter whose variance is then mostly this term is labelled assumed, with the others it
    rests on. Nothing when `scale` is 0 (a calibrated IMU)."""
    if scale <= 0:
        return
    for name, sens in scale_sensitivities(out.est, ident).items():
        value, std = out.est[name]
        extra = scale * float(np.linalg.norm(sens))
        total = math.hypot(std, extra)
        out.put(name, value, total)
        if name in out.obs and value:
            out.obs[name].rel_std_pct = 100 * total / abs(value)
        if total > 0 and extra**2 > ASSUMED_SHARE * total**2:
            words = (
                f"IMU assumed calibrated within ±{100 * scale:g} % scale per axis (1σ, --imu-scale), which no "
                f"flight tests; that assumption is {100 * extra**2 / total**2:.0f} % of its variance"
            )
            out.assumed[name] = "; ".join(filter(None, (out.assumed.get(name), words)))
