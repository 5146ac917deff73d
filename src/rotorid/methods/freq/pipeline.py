"""`identify`: chirp flights and a vehicle in, the `freq` method's `Result` out.

Per flight, the axes it sweeps (`sweep.find`); per axis, the frequency response from the
command wrench to the output (`frf.estimate`, instrumented by the injected chirp where the
log has it), the bins inside the band with coherence ≥ `min_coherence`; one joint fit of
T_m, the optional dead time, a gain per axis and the optional rate dampings (`model.fit`).
The spectral estimate of a sweep carries a leakage bias that the model's own prediction shows
(`frf`): the responses are estimated again with the first fit's prediction (`model.predict`),
each bin corrected by the estimator's bias at that model and its noise taken without the
segments' leakage, with the thrust curve's curvature term's response beside them (`model.curvature_input`); the dead time,
the curvature and the rate dampings are chosen on those by held-out frequency blocks and
fitted, and the responses estimated and fitted once more at the model chosen (the bias changes
with the parameters only at second order). The fit is repeated leaving out each frequency band
(`model.band_scatter`) and each axis (`model.axis_scatter`): where they disagree beyond the
noise, σ grows to cover their scatter and a note names the band or axis. Then the physics:

    k = m g_thrust                     (thrust slope per rotor at the mean command, N per unit command)
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
from rotorid.signal import SensorLowpass, butter_filtfilt, is_uniform
from rotorid.util import MAX_PLOT_POINTS, subsample
from rotorid.vehicle import Vehicle

#: Fewest bins an axis' response needs to enter the fit.
MIN_BINS = 5
#: Bins shown around the fitted band in the report (factor beyond each edge).
SHOW = 1.5


def _sensed(f: Flight, axis: str, z: np.ndarray) -> np.ndarray:
    """`z`, an input of `axis`'s model, through the low-pass the firmware ran on the accelerometer
    before logging it (`meta["acc_lowpass"]`, `signal.SensorLowpass`) where the axis' output is
    the specific force: the model and the filter are linear and time-invariant, so the logged
    output is the model's response to the filtered input, and the response estimated from it is
    the model's alone (Betaflight's 10 Hz biquad has ~22 ms of phase lag at low frequency, which
    the lag model would otherwise take for motor lag)."""
    spec = f.meta.get("acc_lowpass") if axis == "thrust" else None
    return SensorLowpass(spec, f.rate)(z) if spec else z


def _prediction(
    f: Flight, vehicle: Vehicle, axis: str, fit: model.Fit, u0: float, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The `fit`'s model output to the record's command wrench `x` of `axis` (`model.predict`,
    with the thrust curve's curvature term about the command `u0`; both inputs as sensed,
    `_sensed`), and the curvature's own response to its input (`model.curvature_input`)."""
    kind = "acc" if axis == "thrust" else "angacc"
    g, tm, tau, damp = model.axis_lags(fit, axis)
    q = _sensed(f, axis, model.curvature_input(f.cmd, sweep.axis_gains(vehicle)[axis], u0, f.rate, tm))
    bent = model.predict(q, f.rate, 1.0, 0.0, tau, kind, damp)
    c = model.curve_coefficient(fit.theta, fit.names, axis)
    return model.predict(x, f.rate, g, tm, tau, kind, damp) + c * bent, bent


def _over_time(
    f: Flight, vehicle: Vehicle, sw: sweep.Sweep, fit: model.Fit, u0: float, band: tuple[float, float]
) -> dict[str, np.ndarray]:
    """The measured output of the swept axis against the `fit`'s model driven by the logged
    commands (`_prediction`) over the record, for the report: both about their means (the fit
    sees the response, not the trim) and low-passed at `SHOW` x the `band`'s top edge (it sees no
    bin above), at most 4 x `MAX_PLOT_POINTS` samples (`util.subsample`: a chirp needs more points
    than a scatter to be drawn without aliasing)."""
    x, y = _sensed(f, sw.axis, sweep.axis_input(f, vehicle, sw.axis)), sweep.axis_output(f, sw.axis)
    pred, _ = _prediction(f, vehicle, sw.axis, fit, u0, x)
    both = np.column_stack([y, pred])
    both = butter_filtfilt(both - both.mean(axis=0), f.rate, min(SHOW * band[1], 0.45 * f.rate))
    sub = subsample(len(y), 4 * MAX_PLOT_POINTS)
    return {"time_t": f.t[sub], "time_meas": both[sub, 0], "time_model": both[sub, 1]}


def _response(
    f: Flight, vehicle: Vehicle, sw: sweep.Sweep, s: FreqSettings, first: model.Fit | None, u0: float
) -> tuple[model.AxisData | None, dict]:
    """One axis of one flight: the bins kept for the fit (None if fewer than `MIN_BINS`) and
    what the report draws; corrected by the estimator's bias at the `first` fit's model when
    that fit holds the axis, with the curvature's response about the command `u0`."""
    band = s.band or sw.band
    x, y = _sensed(f, sw.axis, sweep.axis_input(f, vehicle, sw.axis)), sweep.axis_output(f, sw.axis)
    fs = f.rate
    kind = "acc" if sw.axis == "thrust" else "angacc"
    nper = frf.segment_length(fs, len(x), band[0], s.cycles)
    b = None
    if first is None or f"g_{sw.axis}" not in first.names:
        e = frf.estimate(x, y, fs, nper, sw.reference)
    else:  # the first fit's prediction: its estimate's bias corrected, its curvature's response
        g, tm, tau, damp = model.axis_lags(first, sw.axis)
        c = model.curve_coefficient(first.theta, first.names, sw.axis)
        pred, bent = _prediction(f, vehicle, sw.axis, first, u0, x)
        b = frf.estimate(x, bent, fs, nper, sw.reference).h
        e = frf.estimate(x, y, fs, nper, sw.reference, pred)
        e = dataclasses.replace(e, h=e.h - (e.h_model - c * b - model.response(e.f, g, tm, tau, kind, fs, damp)))
    inside = (e.f >= band[0]) & (e.f <= band[1])
    use = inside & (e.coherence >= s.min_coherence) & (e.var > 0) & np.isfinite(e.var)
    show = (e.f >= band[0] / SHOW) & (e.f <= band[1] * SHOW) & (e.f > 0)
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
        "curve": np.zeros(int(show.sum()), complex) if b is None else b[show],
    }
    if use.sum() < MIN_BINS:
        return None, diag
    idx = np.flatnonzero(use)
    return model.AxisData(sw.axis, kind, e.f[idx], e.h[idx], e.covariance(idx), fs, None if b is None else b[idx]), diag


def _mean_command(axes: list[tuple[Flight, Flight, sweep.Sweep]]) -> float:
    """The command the curvature term is taken about: one slope for every flight, their mean command."""
    return float(np.mean([np.mean(g.cmd) for _, g, _ in axes]))


def _responses(
    axes: list[tuple[Flight, Flight, sweep.Sweep]], vehicle: Vehicle, s: FreqSettings, first: model.Fit | None
) -> tuple[list[model.AxisData], list[dict], list[str]]:
    """Every (flight, its uniform copy, axis)'s bins for the fit, report panels and notes;
    refused when no axis has `MIN_BINS` coherent bins."""
    data, panels, notes = [], [], []
    u0 = _mean_command(axes)
    for f, g, sw in axes:
        d, panel = _response(g, vehicle, sw, s, first, u0)
        panels.append(panel)
        notes.append(f"{f.source}: {sw.describe()}; {int(panel['used'].sum())} bins with γ² ≥ {s.min_coherence:g}")
        if d is not None:
            data.append(d)
    if not data:
        raise RotoridError(
            f"freq: no axis of {len({id(f) for f, _, _ in axes})} flight(s) has {MIN_BINS} coherent bins "
            f"(γ² ≥ {s.min_coherence:g}); fly a chirp (ArduPilot SID_AXIS 7-9, 13) or lower --min-coherence"
        )
    return data, panels, notes


#: The model's optional terms, as the notes name them.
_TERMS = {
    "dead": "dead time",
    "curved": "thrust-curve curvature (gain moving with the collective)",
    "damped": "rate damping (each axis' response falling with its rate)",
}


def _choose(data: list[model.AxisData], s: FreqSettings) -> tuple[bool, bool, bool, list[str]]:
    """Whether to fit a dead time (unless --dead-time says), the thrust curve's curvature (once
    the data carry its response) and the axes' rate dampings, and why: forward selection on
    held-out frequency blocks, each round keeping the term whose addition lowers the held-out
    error most, until none lowers it (a term judged without one it interacts with, as the dead
    time without the damping that leads the same phase, would be judged wrong)."""
    kept = {"dead": s.dead_time == "on", "curved": False, "damped": False}
    left = [
        "damped",
        *(["dead"] if s.dead_time == "auto" else []),
        *(["curved"] if all(d.b is not None for d in data) else []),
    ]
    notes = [] if s.dead_time == "auto" else [f"dead time {s.dead_time} (--dead-time)"]

    def error(terms: dict[str, bool]) -> float:
        return model.held_out_error(data, s.tm_bounds, terms["dead"], terms["curved"], terms["damped"])

    best, trial = error(kept), {}
    while left:
        trial = {t: error({**kept, t: True}) for t in left}
        t = min(trial, key=trial.__getitem__)
        if not trial[t] < best:
            break
        notes.append(
            f"{_TERMS[t]} kept: held-out frequency blocks' weighted error {trial[t]:.4g} with it, {best:.4g} without"
        )
        kept[t], best = True, trial[t]
        left.remove(t)
    notes += [f"{_TERMS[t]} not kept: held-out error {trial[t]:.4g} with it, {best:.4g} without" for t in left]
    return kept["dead"], kept["curved"], kept["damped"], notes


def _fit(
    data: list[model.AxisData], s: FreqSettings, dead: bool, curved: bool, damped: bool
) -> tuple[model.Fit, list[model.AxisData]]:
    """`model.fit` of the terms chosen, leaving out the axes whose gain collapses to nothing
    (`model.CollapsedGain`), and the data fitted; refused when no axis is left."""
    while True:
        try:
            return model.fit(data, s.tm_bounds, dead, curved, damped), data
        except model.CollapsedGain as e:
            data = [d for d in data if d.axis not in e.axes]
            if not data:
                raise


def _disagreement(scatter: model.BandScatter, fit: model.Fit) -> str:
    """The note of a structure check that widened σ (`model.band_scatter`): T_m leaving each
    band out, and the band whose absence moves it furthest."""
    tm = scatter.theta[:, 0]
    i = int(np.argmax(np.abs(tm - tm.mean())))
    k, e = scatter.left[i], scatter.edges
    return (
        f"the frequency bands disagree beyond σ (the model misses physics at some frequencies): leaving each of "
        f"{len(tm)} bands out gives T_m {', '.join(f'{1e3 * v:.1f}' for v in tm)} ms; without "
        f"{e[k]:.2g}-{e[k + 1]:.2g} Hz T_m would be {1e3 * tm[i]:.1f} ms. σ grows to cover the bands' scatter "
        f"(σ(T_m) {1e3 * np.sqrt(fit.cov[0, 0]):.2g} ms)"
    )


def _axes_disagree(by_axis: model.AxisScatter) -> str:
    """The note of an axes' check that widened σ (`model.axis_scatter`)."""
    k = int(np.argmax(np.abs(by_axis.tm - by_axis.tm.mean())))
    return (
        "the axes disagree on T_m beyond σ (each sees physics the model leaves out): leaving each out gives "
        + ", ".join(f"{1e3 * v:.1f} ms without {a}" for a, v in zip(by_axis.axes, by_axis.tm, strict=True))
        + f" (p = {by_axis.p:.2g}); leaving out {by_axis.axes[k]} moves it most. σ grows by {np.sqrt(by_axis.factor):.2f}"
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
    damps = [(n[2:], i) for i, n in enumerate(fit.names) if n.startswith("d_")]
    if damps:
        notes.append(
            "rate damping (the rotors' thrust falling with their climb rate: inflow, drag; Z_w, L_p, M_q, N_r) "
            + ", ".join(f"{a} {fit.theta[i]:.3g} ± {np.sqrt(max(fit.cov[i, i], 0.0)):.2g} 1/s" for a, i in damps)
            + ": a high-pass s/(s + d) on each response, the gains its high-frequency asymptote"
        )
    if "kappa" in fit.names:
        i = fit.names.index("kappa")
        notes.append(
            f"thrust curve's relative curvature f''/f' {fit.theta[i]:.3g} ± {np.sqrt(max(fit.cov[i, i], 0.0)):.2g} "
            "per unit command (its slope moves with the collective; the gains are the slopes at the flights' mean command)"
        )
    return est, obs


def identify(flights: list[Flight], vehicle: Vehicle, settings: FreqSettings | None = None) -> Result:
    """The `freq` method on chirp (or any excited) flights of `vehicle`."""
    s = settings or FreqSettings()
    if not flights:
        raise RotoridError("freq: no flights given; give chirp logs (ArduPilot System ID, or any swept axis)")
    axes = []
    for f in flights:
        f.require_rate(MIN_RATE_HZ, "acc", "gyro", "cmd")
        if f.cmd.shape[1] != vehicle.n_rotors:
            raise RotoridError(
                f"{f.source}: {f.cmd.shape[1]} motor columns, the vehicle '{vehicle.name}' has {vehicle.n_rotors} rotors"
            )
        g = f if is_uniform(f.t) else f.resample()
        axes += [(f, g, sw) for sw in sweep.find(g, vehicle)]
    data, _, _ = _responses(axes, vehicle, s, None)
    dead, _, damped, _ = _choose(data, s)
    fit, data = _fit(data, s, dead, False, damped)
    data, _, _ = _responses(axes, vehicle, s, fit)  # corrected at the first fit, with the curvature's response
    dead, curved, damped, why = _choose(data, s)
    fit, data = _fit(data, s, dead, curved, damped)
    data, panels, notes = _responses(axes, vehicle, s, fit)  # corrected at the model chosen
    fitted = {d.axis for d in data}
    fit, data = _fit(data, s, dead, curved, damped)
    notes += why
    notes += [
        f"{a}: its response fits no non-zero gain (left out of the fit)"
        for a in sorted(fitted - {d.axis for d in data})
    ]
    if fit.widened:
        notes.append(
            f"residuals exceed their spectral variance (reduced χ² {fit.chi2_red:.2f}, beyond the {fit.chi2_limit:.2f} "
            f"the bins' noise reaches): σ widened by {np.sqrt(fit.chi2_red):.2f}"
        )
    fit, scatter = model.band_scatter(data, s.tm_bounds, fit)
    if scatter is not None and scatter.share > 0:
        notes.append(_disagreement(scatter, fit))
    fit, by_axis = model.axis_scatter(data, s.tm_bounds, fit)
    if by_axis is not None and by_axis.factor > 1:
        notes.append(_axes_disagree(by_axis))
    est, obs = _estimates(fit, vehicle, notes)
    u0 = _mean_command(axes)
    for p, (_, g, sw) in zip(panels, axes, strict=True):
        if p["axis"] in {d.axis for d in data}:
            p["model"], p["model_mag_std"], p["model_phase_std"] = model.model_band(
                p["f"], p["kind"], p["axis"], fit, p["fs"], p["curve"]
            )
            p.update(_over_time(g, vehicle, sw, fit, u0, s.band or sw.band))
    settings = {
        **dataclasses.asdict(s),
        "dead_time_fitted": dead,
        "curvature_fitted": curved,
        "rate_damping_fitted": any(n.startswith("d_") for n in fit.names),
        "chi2_red": fit.chi2_red,
        "chi2_limit": fit.chi2_limit,
    }
    diag = {"freq_panels": {f"{i}_{p['axis']}": p for i, p in enumerate(panels)}}
    diag["freq_fit"] = {"names": np.array(fit.names), "theta": fit.theta, "cov": fit.cov}
    if scatter is not None:
        diag["freq_fit"] |= {"band_edges": scatter.edges, "band_theta": scatter.theta, "band_p": scatter.p}
    result = build_result("freq", est, settings, diag, obs, notes)
    return with_vehicle(result, vehicle)
