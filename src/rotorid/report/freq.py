"""Figures of the frequency-domain method: per swept axis, the measured Bode magnitude and
phase with ±2σ bands (from each bin's spectral variance), the coherence, and the identified
model's response with its own ±2σ band (the fit's covariance) overlaid; and over time, the
measured output against the identified model driven by the logged commands, with the residual.

Every figure reads only `result.diagnostics["freq_panels"]`, so `rotorid report RUN` redraws
a saved run without the logs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.report.style import MEASURED, MODEL, figure
from rotorid.report.validate import over_time, rms

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.result import Result

_UNITS = {"acc": "(m/s²) per unit command wrench", "angacc": "(rad/s²) per unit command wrench"}
_OUTPUTS = {"acc": ("specific force z", "m/s²"), "angacc": ("angular acceleration", "rad/s²")}


def bode(d: dict[str, Any]) -> Figure:
    """Magnitude (log-log), phase (deg) and coherence against frequency for one axis."""
    fig, (am, ap, ac) = figure(7.0, 7.2, 3, 1, sharex=True)
    fig.subplots_adjust(left=0.13, right=0.97, top=0.93, bottom=0.08, hspace=0.12)
    f, h = np.asarray(d["f"]), np.asarray(d["h"])
    std, used = np.asarray(d["std"]), np.asarray(d["used"], dtype=bool)
    mag = np.abs(h)
    rel = np.clip(2.0 * std / np.maximum(mag, 1e-300), 0.0, 0.95)  # ±2σ, relative
    phase = np.degrees(np.unwrap(np.angle(h)))
    dphi = np.degrees(np.arcsin(np.clip(2.0 * std / np.maximum(mag, 1e-300), 0.0, 1.0)))
    am.fill_between(f, mag * (1 - rel), mag * (1 + rel), color=MEASURED, alpha=0.2, lw=0, label="measured ±2σ")
    am.plot(f, mag, ".", color="0.6", ms=2.5, label="measured (γ² below the threshold)")
    am.plot(f[used], mag[used], ".", color=MEASURED, ms=3, label="measured, fitted")
    ap.fill_between(f, phase - dphi, phase + dphi, color=MEASURED, alpha=0.2, lw=0)
    ap.plot(f, phase, ".", color="0.6", ms=2.5)
    ap.plot(f[used], phase[used], ".", color=MEASURED, ms=3)
    if "model" in d:
        hm = np.asarray(d["model"])
        ms, ps = 2.0 * np.asarray(d["model_mag_std"]), 2.0 * np.asarray(d["model_phase_std"])
        pm = np.degrees(np.unwrap(np.angle(hm)))
        pm += 360.0 * np.round((np.median(phase[used] - pm[used]) if used.any() else 0.0) / 360.0)
        am.plot(f, np.abs(hm), color=MODEL, label="identified model")
        am.fill_between(
            f, np.abs(hm) * np.exp(-ms), np.abs(hm) * np.exp(ms), color=MODEL, alpha=0.25, lw=0, label="model ±2σ"
        )
        ap.plot(f, pm, color=MODEL)
        ap.fill_between(f, pm - np.degrees(ps), pm + np.degrees(ps), color=MODEL, alpha=0.25, lw=0)
    am.set_xscale("log")
    am.set_yscale("log")
    if used.any():  # out-of-band bins (no coherence) would set the scale: frame the fitted ones
        am.set_ylim(mag[used].min() / 3.0, mag[used].max() * 3.0)
        ap.set_ylim(phase[used].min() - 45.0, phase[used].max() + 45.0)
    am.set_ylabel("|H| " + _UNITS.get(str(d["kind"]), ""))
    am.legend(fontsize=7, loc="lower left")
    am.set_title(f"{d['axis']}: {d['sweep']}", fontsize=9)
    ap.set_ylabel("phase [deg]")
    ac.plot(f, np.asarray(d["coherence"]), color=MEASURED)
    ac.set_ylim(0, 1.05)
    ac.set_ylabel("coherence γ²")
    ac.set_xlabel("frequency [Hz]")
    return fig


def over_sweep(d: dict[str, Any]) -> Figure:
    """The measured output of one swept axis against the identified model driven by the logged
    commands, both about their means and low-passed above the band (as the method kept them),
    with the residual."""
    meas, model = np.asarray(d["time_meas"]), np.asarray(d["time_model"])
    name, unit = _OUTPUTS[str(d["kind"])]
    title = (
        f"{d['axis']}: model from the commands, residual RMS {rms(meas - model):.3g} {unit} of {rms(meas):.3g} "
        f"(about the means, low-passed above the band)"
    )
    return over_time([(title, meas, model, name, unit)], np.asarray(d["time_t"]))


def figures(result: Result) -> dict[str, Figure]:
    """`freq_bode_<i>_<axis>` per measured response (flight and axis), and `freq_time_<i>_<axis>`
    where the axis was fitted (a run saved before the method kept the series draws Bode only)."""
    panels = result.diagnostics.get("freq_panels") or {}
    out = {f"freq_bode_{k}": bode(d) for k, d in panels.items()}
    out.update({f"freq_time_{k}": over_sweep(d) for k, d in panels.items() if "time_t" in d})
    return out
