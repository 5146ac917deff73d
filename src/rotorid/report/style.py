"""The one look of rotorid's figures: `figure(...)` makes a matplotlib `Figure` (the
object-oriented API — no pyplot state, safe in threads and worker processes) and its axes
under `STYLE`, so every method's and validation's figures share fonts, grid and colours."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter, StrMethodFormatter

#: rcParams every figure is drawn with (read when the figure and its axes are made).
STYLE: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    # a fixed title height: the automatic one lays out every tick label of the axes again to
    # dodge top-side labels, which no rotorid figure has (an eighth of a figure's drawing time)
    "axes.titley": 1.0,
    "axes.labelsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.framealpha": 0.8,
    "lines.linewidth": 1.0,
    "axes.prop_cycle": mpl.cycler(color=["tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple"]),
}

#: Major ticks per linear axis, at most (matplotlib's default picks up to ~10 from the axis
#: length): each tick is a label laid out and rasterised on every draw, the largest part of
#: an axes' fixed drawing cost; five steps of 1, 2, 2.5 or 5 read as well.
TICK_BINS = 5

#: Colours with a meaning, the same in every figure.
MEASURED, MODEL, TRUTH = "tab:blue", "tab:red", "k"


def figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **subplots: Any) -> tuple[Figure, Any]:
    """A `Figure` of `width` x `height` inches with `nrows` x `ncols` axes (`subplots` go to
    `Figure.subplots`, e.g. sharex, squeeze), drawn in `STYLE`. Margins are set by the caller
    (`fig.subplots_adjust`) or `layout="constrained"` passed here as `layout`."""
    layout = subplots.pop("layout", None)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout=layout)
        axes = fig.subplots(nrows, ncols, **subplots)
    for ax in fig.axes:  # a log scale set later brings its own locator
        ax.xaxis.set_major_locator(MaxNLocator(TICK_BINS, steps=[1, 2, 2.5, 5, 10]))
        ax.yaxis.set_major_locator(MaxNLocator(TICK_BINS, steps=[1, 2, 2.5, 5, 10]))
    return fig, axes


def log_axis(ax: Any, which: str = "x") -> None:
    """Put the axes' `which` ("x" or "y") axis on a log scale labelled in plain numbers (0.01,
    0.1, 1), minor ticks at 2 and 5 of each decade, unlabelled. Matplotlib's default labels,
    10⁻², are mathtext, whose parser costs a fresh process ~0.2 s CPU to build."""
    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_major_formatter(StrMethodFormatter("{x:g}"))
    axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    axis.set_minor_formatter(NullFormatter())
