"""The plots and facts of `rotorid app`: one panel per role with the channels that show its
excitation, flying spans shaded, windows drawn as editable rectangles; long series are
min/max-downsampled on the server (plotly-resampler over tsdownsample), so a 1 h log at 1 kHz
sends about `N_SHOWN` points per trace to the browser, at any zoom.

What is drawn comes from the library: channels of the `Flight`, `excitation.collective` for the
collective command, `Vehicle.mixer` for the differential commands (the moment each rotor's
thrust makes about the body axes, so they follow any rotor layout), `excitation.measure`,
`gaps`, `propose_windows` and `judge` for the facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rotorid import excitation, runs
from rotorid.app.state import ROLES
from rotorid.flight import Flight
from rotorid.vehicle import Vehicle

N_SHOWN = 1500
AXIS_NAMES = ("roll", "pitch", "yaw")
TITLES = {
    "thrust": "thrust — collective command and vertical specific force",
    "roll_pitch": "roll / pitch — body rates and differential commands",
    "yaw": "yaw — yaw rate and yaw command",
}
FLYING = "rgba(46, 160, 67, 0.10)"
WINDOW = "rgba(255, 140, 0, 0.28)"
_AXIS = {"gridcolor": "#EBF0F8", "linecolor": "#EBF0F8", "zerolinecolor": "#EBF0F8", "zerolinewidth": 2, "ticks": ""}
#: plotly_white's look in a few keys, set when the figure is made: plotly otherwise
#: deep-copies its default template into every figure (a fifth of a panel's build time)
STYLE = {
    "layout": {
        "colorway": ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"],  # four well-apart hues
        "font": {"color": "#2a3f5f"},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "xaxis": _AXIS,
        "yaxis": _AXIS,
    }
}
VERDICT_CLASS = {"excited": "ok", "weak": "weak", "none": "bad", "n/a": "na"}


@dataclass(frozen=True)
class Trace:
    name: str
    unit: str
    y: np.ndarray
    secondary: bool


def _stack(flights: list[Flight], get: Any) -> np.ndarray | None:
    parts = [get(f) for f in flights]
    if any(p is None for p in parts):
        return None
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _motors(f: Flight) -> np.ndarray | None:
    return f.cmd if f.cmd is not None else f.rotor_speed


def traces(flights: list[Flight], vehicle: Vehicle | None, role: str) -> list[Trace]:
    """The series one role's panel shows (pieces of a split log are concatenated in time); the
    differential commands need the vehicle's rotor layout (none before a vehicle is chosen)."""
    out: list[Trace] = []
    gyro = _stack(flights, lambda f: f.gyro)
    motors = _stack(flights, _motors)
    unit = "command" if flights[0].cmd is not None else "rad/s"
    if role == "thrust":
        c = _stack(flights, lambda f: excitation.collective(f)[0])
        if c is not None:
            out.append(Trace("collective command", unit, c, False))
        acc = _stack(flights, lambda f: f.acc)
        if acc is not None:
            out.append(Trace("vertical specific force", "m/s²", acc[:, 2], True))
        return out
    axes = (0, 1) if role == "roll_pitch" else (2,)
    if gyro is not None:
        out += [Trace(f"{AXIS_NAMES[a]} rate", "rad/s", gyro[:, a], False) for a in axes]
    if vehicle is not None and motors is not None and motors.shape[1] == vehicle.n_rotors:
        if role == "yaw":
            weights = [vehicle.torque_dirs / vehicle.n_rotors]
        else:  # roll and pitch moment per unit thrust (m), scaled to a command difference
            moments = vehicle.mixer(k_tau=0.0)[3:5]
            weights = [moments[a] / np.abs(moments[a]).sum() for a in axes]
        for a, w in zip(axes, weights, strict=True):
            out.append(Trace(f"{AXIS_NAMES[a]} command", unit, motors @ w, True))
    return out


def window_shape(t0: float, t1: float) -> dict[str, Any]:
    """A window as an editable rectangle (drag its edges to adjust it)."""
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": t0,
        "x1": t1,
        "y0": 0,
        "y1": 1,
        "fillcolor": WINDOW,
        "line": {"color": "darkorange", "width": 1},
        "layer": "below",
        "editable": True,
    }


def shapes(flying: list[tuple[float, float]], windows: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """Flying spans (fixed, shaded green) first, then the role's windows (editable)."""
    fly = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": a,
            "x1": b,
            "y0": 0,
            "y1": 1,
            "fillcolor": FLYING,
            "line": {"width": 0},
            "layer": "below",
            "editable": False,
        }
        for a, b in flying
    ]
    return fly + [window_shape(a, b) for a, b in windows]


def figure(flights: list[Flight], vehicle: Vehicle | None, role: str, uirevision: str) -> Any:
    """A `FigureResampler` for one role: traces on two y axes, min/max downsampled."""
    import pandas as pd
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    from plotly_resampler import FigureResampler
    from plotly_resampler.aggregation import MinMaxAggregator

    fig = FigureResampler(
        make_subplots(specs=[[{"secondary_y": True}]], figure=go.Figure(layout={"template": STYLE})),
        default_n_shown_samples=N_SHOWN,
        default_downsampler=MinMaxAggregator(),
        resampled_trace_prefix_suffix=("", ""),
        show_mean_aggregation_size=False,
    )
    # one time index for every trace: plotly-resampler checks it is sorted once (pandas caches
    # that on the Index) instead of copying the time into a Series per trace
    t = pd.Index(_stack(flights, lambda f: f.t), copy=False)
    units: dict[bool, str] = {}
    for tr in traces(flights, vehicle, role):
        y = np.ascontiguousarray(tr.y)  # tsdownsample needs contiguous arrays (columns are strided)
        fig.add_trace(
            go.Scatter(name=tr.name, mode="lines", line={"width": 1}), hf_x=t, hf_y=y, secondary_y=tr.secondary
        )
        units.setdefault(tr.secondary, tr.unit)
    fig.update_layout(
        title={"text": TITLES[role], "font": {"size": 13}, "x": 0.01},
        height=250,
        margin={"l": 55, "r": 55, "t": 34, "b": 36},
        dragmode="select",
        selectdirection="h",
        uirevision=uirevision,
        legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom", "font": {"size": 10}},
    )
    fig.update_xaxes(title_text="time (s)", title_standoff=4)
    fig.update_yaxes(title_text=units.get(False, ""), secondary_y=False)
    fig.update_yaxes(title_text=units.get(True, ""), secondary_y=True, showgrid=False)
    return fig


def flying_spans(flights: list[Flight]) -> list[tuple[float, float]]:
    """The flying spans `excitation.measure` reports, without its filtering."""
    return [s for f in flights for s in excitation.spans(f.t, excitation.flying_mask(f)[0])]


def proposed(flights: list[Flight], vehicle: Vehicle | None = None) -> dict[str, list[tuple[float, float]]]:
    """The windows `rotorid info` and `identify` propose for this log: a role gets the log's
    windows only where the log excites it (`excitation.assign_roles`, thresholds scaled to the
    vehicle) — a thrust-pumping flight is not offered as a roll/pitch or yaw flight."""
    found = {"log": excitation.log_windows(flights, excitation.thresholds_for(vehicle))}
    roles = excitation.assign_roles(found)
    return {r: [(w.t0, w.t1) for _, ws in roles.get(r, []) for w in ws] for r in ROLES}


def facts(flights: list[Flight]) -> list[tuple[str, str, str]]:
    """What `rotorid info` says about the log, as (label, text, css class) rows."""
    first = flights[0]
    j = excitation.judge(flights, runs.min_rates())
    rows = [
        ("format", str(first.meta.get("format", "?")), ""),
        ("span", f"{first.t[0]:.2f} – {flights[-1].t[-1]:.2f} s, {sum(len(f.t) for f in flights)} samples", ""),
    ]
    rates = first.meta.get("rates", {})
    rows += [(f"  {ch}", f"{float(rates.get(ch, first.rate)):.0f} Hz", "") for ch in first.channels]
    holes = [g for f in flights for g in excitation.gaps(f)]
    rows.append(("gaps", ", ".join(f"{a:.2f} (+{1e3 * (b - a):.0f} ms)" for a, b in holes[:4]) or "none", ""))
    rows.append(("activity", j.activity, ""))
    rows += [
        (f"too slow for {r.method}", f"{r.channel} at {r.rate_hz:.0f} Hz < {r.min_hz:.0f} Hz: {r.fix}", "bad")
        for r in j.too_slow
    ]
    for seg in j.segments:
        prefix = f"piece {seg.index}: " if len(flights) > 1 else ""
        for axis, a in seg.excitation.axes.items():
            rows.append(
                (f"{prefix}excitation {axis}", f"{a.value:.3g} {a.unit} — {a.verdict}", VERDICT_CLASS[a.verdict])
            )
    return rows
