"""`identify`: chirp flights and a vehicle in, the `freq` method's `Result` out.

Per flight, the axes it sweeps (`sweep.find`); per axis, the frequency response from the
command wrench to the output (`frf.estimate`, instrumented by the injected chirp where the
log has it), the bins inside the band with coherence ≥ `min_coherence`; one joint fit of
T_m, the optional dead time and a gain per axis (`model.fit`); then the physics:

    k = m g_thrust                     (thrust slope per rotor at hover, N per unit command)
    I_xx = k / g_roll,  I_yy = k / g_pitch,  I_zz = k K_τ / g_yaw  (K_τ from the vehicle)

(Eschmann et al. eq. 89-93 in the frequency domain), σ by the delta method on the fit's
covariance. Inertia needs a thrust sweep for `k`; without one only T_m is identified.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.identified import with_vehicle
from rotorid.methods.freq import frf, model, sweep
from rotorid.methods.freq.settings import MIN_RATE_HZ, FreqSettings
from rotorid.result import Observability, Result, build_result
from rotorid.signal import is_uniform
from rotorid.vehicle import Vehicle

#: Fewest bins an axis' response needs to enter the fit.
MIN_BINS = 5
#: Bins shown around the fitted band in the report (factor beyond each edge).
SHOW = 1.5


def _response(f: Flight, vehicle: Vehicle, sw: sweep.Sweep, s: FreqSettings) -> tuple[model.AxisData | None, dict]:
    """One axis of one flight: the bins kept for the fit (None if fewer than `MIN_BINS`) and
    what the report draws."""
    band = s.band or sw.band
    x, y = sweep.axis_input(f, vehicle, sw.axis), sweep.axis_output(f, sw.axis)
    fs = f.rate
    e = frf.estimate(x, y, fs, frf.segment_length(fs, len(x), band[0], s.cycles), sw.reference)
    inside = (e.f >= band[0]) & (e.f <= band[1])
    use = inside & (e.coherence >= s.min_coherence) & (e.var > 0) & np.isfinite(e.var)
    show = (e.f >= band[0] / SHOW) & (e.f <= band[1] * SHOW) & (e.f > 0)
    kind = "acc" if sw.axis == "thrust" else "angacc"
    diag = {
        "axis": sw.axis,
        "kind": kind,
        "fs": fs,
        "source": f.source,
        "sweep": sw.describe(),
        "band": band,
        "f": e.f[show],
        "h": e.h[show],
        "std": np.sqrt(e.var[show]),
        "coherence": e.coherence[show],
        "used": use[show],
        "coherent_share": float(np.mean(e.coherence[inside] >= s.min_coherence)) if inside.any() else 0.0,
    }
    if use.sum() < MIN_BINS:
        return None, diag
    idx = np.flatnonzero(use)
    return model.AxisData(sw.axis, kind, e.f[idx], e.h[idx], e.covariance(idx), fs), diag


def _dead_time(data: list[model.AxisData], s: FreqSettings) -> tuple[bool, str]:
    """Whether to fit a dead time, and why."""
    if s.dead_time != "auto":
        return s.dead_time == "on", f"dead time {s.dead_time} (--dead-time)"
    without = model.held_out_error(data, s.tm_bounds, False)
    with_tau = model.held_out_error(data, s.tm_bounds, True)
    keep = with_tau < without
    word = "kept" if keep else "not kept"
    return keep, (
        f"dead time {word}: held-out frequency blocks' weighted error {with_tau:.4g} with it, {without:.4g} without"
    )


def _physics(fit: model.Fit, vehicle: Vehicle, notes: list[str]) -> dict[str, tuple[float, np.ndarray]]:
    """(name -> (value, gradient over fit.theta)) of the physical parameters."""
    n = len(fit.names)
    out: dict[str, tuple[float, np.ndarray]] = {}
    grad = np.zeros(n)
    grad[0] = 1.0
    out["tm"] = (fit.get("tm"), grad)
    if "tau" in fit.names:
        g = np.zeros(n)
        g[1] = 1.0
        out["dead_time"] = (fit.get("tau"), g)
    if "g_thrust" not in fit.names:
        notes.append("no thrust response: inertia needs the thrust slope at hover; fly a thrust chirp (SID_AXIS 13)")
        return out
    m, it = vehicle.mass, fit.names.index("g_thrust")
    gz = fit.get("g_thrust")
    for axis, name, factor in (("roll", "I_xx", 1.0), ("pitch", "I_yy", 1.0), ("yaw", "I_zz", vehicle.k_tau)):
        key = f"g_{axis}"
        if key not in fit.names:
            continue
        if axis == "yaw" and not vehicle.k_tau:
            notes.append("yaw response fitted for T_m only: I_zz needs the vehicle's k_tau")
            continue
        ia, ga = fit.names.index(key), fit.get(key)
        value = m * gz * factor / ga
        g = np.zeros(n)
        g[it], g[ia] = m * factor / ga, -value / ga
        out[name] = (value, g)
    return out


def _estimates(fit: model.Fit, vehicle: Vehicle, notes: list[str]) -> tuple[dict, dict]:
    """(name -> (value, σ)) with σ guarded, and the observability verdicts."""
    est, obs = {}, {}
    phys = _physics(fit, vehicle, notes)
    for name, (value, g) in phys.items():
        if name == "dead_time":
            continue
        std = float(np.sqrt(max(g @ fit.cov @ g, 0.0)))
        floor = 8 * np.spacing(abs(value))  # the arithmetic's resolution
        at = {}
        if name == "tm" and fit.at_bound:
            notes.append(f"T_m stopped on a bound of --tm-bounds ({value:.4g} s): not identified")
            at = {
                "at_bound": f"a bound of --tm-bounds ({value:.4g} s)",
                "advice": "widen --tm-bounds or fly a wider sweep",
            }
        if not (np.isfinite(value) and np.isfinite(std) and value > 0):
            notes.append(f"{name}: no finite estimate with σ; not reported")
            continue
        est[name] = (value, max(std, floor))
        obs[name] = Observability(True, rel_std_pct=100.0 * est[name][1] / value, **at)
    if "dead_time" in phys:
        v, g = phys["dead_time"]
        notes.append(f"dead time {1e3 * v:.2f} ± {1e3 * np.sqrt(max(g @ fit.cov @ g, 0.0)):.2f} ms (commands to IMU)")
    return est, obs


def identify(flights: list[Flight], vehicle: Vehicle, settings: FreqSettings | None = None) -> Result:
    """The `freq` method on chirp (or any excited) flights of `vehicle`."""
    s = settings or FreqSettings()
    if not flights:
        raise RotoridError("freq: no flights given; give chirp logs (ArduPilot System ID, or any swept axis)")
    data, panels, notes = [], [], []
    for f in flights:
        f.require_rate(MIN_RATE_HZ, "acc", "gyro", "cmd")
        if f.cmd.shape[1] != vehicle.n_rotors:
            raise RotoridError(
                f"{f.source}: {f.cmd.shape[1]} motor columns, the vehicle '{vehicle.name}' has {vehicle.n_rotors} rotors"
            )
        g = f if is_uniform(f.t) else f.resample()
        for sw in sweep.find(g, vehicle):
            d, panel = _response(g, vehicle, sw, s)
            panels.append(panel)
            notes.append(f"{f.source}: {sw.describe()}; {int(panel['used'].sum())} bins with γ² ≥ {s.min_coherence:g}")
            if d is not None:
                data.append(d)
    if not data:
        raise RotoridError(
            f"freq: no axis of {len(flights)} flight(s) has {MIN_BINS} coherent bins (γ² ≥ {s.min_coherence:g}); "
            "fly a chirp (ArduPilot SID_AXIS 7-9, 13) or lower --min-coherence"
        )
    dead, why = _dead_time(data, s)
    notes.append(why)
    fit = model.fit(data, s.tm_bounds, dead)
    if fit.chi2_red > 1.0:
        notes.append(
            f"residuals exceed their spectral variance (reduced χ² {fit.chi2_red:.2f}): σ widened by {np.sqrt(fit.chi2_red):.2f}"
        )
    est, obs = _estimates(fit, vehicle, notes)
    for p in panels:
        if p["axis"] in {d.axis for d in data}:
            p["model"], p["model_mag_std"], p["model_phase_std"] = model.model_band(
                p["f"], p["kind"], p["axis"], fit, p["fs"]
            )
    settings = {**dataclasses.asdict(s), "dead_time_fitted": dead, "chi2_red": fit.chi2_red}
    diag = {"freq_panels": {f"{i}_{p['axis']}": p for i, p in enumerate(panels)}}
    diag["freq_fit"] = {"names": np.array(fit.names), "theta": fit.theta, "cov": fit.cov}
    result = build_result("freq", est, settings, diag, obs, notes)
    return with_vehicle(result, vehicle)
