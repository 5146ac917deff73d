"""Columns of the angular fits (eq. 77-79): torques through the identified lag and thrust curve,
angular accelerations, all low-pass filtered identically and trimmed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rotorid.errors import ExcitationError, VehicleError
from rotorid.flight import Flight
from rotorid.methods.delay.problem import lag_states
from rotorid.methods.delay.settings import MIN_RATE_HZ, DelaySettings
from rotorid.methods.voltage import VoltageModel, gain
from rotorid.signal import butter_filtfilt, derivative
from rotorid.vehicle import Vehicle


def _demean(x: np.ndarray, on: bool) -> np.ndarray:
    return x - x.mean(axis=0) if on else x


@dataclass(frozen=True)
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
    derivs: Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray] | None = None,
    voltage: VoltageModel | None = None,
) -> Angular:
    """Torques from the identified thrust curve and rotor geometry through the motor lag (eq. 77-79),
    angular accelerations from `gyro_dot` (else differentiated gyro, eq. 8), all filtered by the
    same zero-phase low-pass and trimmed at both ends. `derivs(cmd, t, gain)` -> (N, M, P)
    rotor-thrust derivatives w.r.t. the thrust parameters (`ThrustUncertainty.thrust_derivs`)
    gives `sens`, their torques through the same pipeline. With the `voltage` curve the commands
    carry each flight's (V / V_ref)^α before the lag."""
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
        vg = gain(f, voltage)
        thrust = vehicle.thrust(lag_states(f.cmd, f.t, tm, vg))
        tau = thrust @ mix.T
        drag = thrust @ drag_row
        has_dot = f.gyro_dot is not None
        wd = f.gyro_dot if has_dot else derivative(f.gyro, f.t)
        g = f.gyro
        prec = np.column_stack([g[:, 1] * g[:, 2], g[:, 2] * g[:, 0], g[:, 0] * g[:, 1]])
        raw = np.column_stack([wd, tau, drag, prec])
        if derivs is not None:
            dth = derivs(f.cmd, f.t, vg)  # (N, M, P)
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
