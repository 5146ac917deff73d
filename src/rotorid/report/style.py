"""The one look of rotorid's figures: `figure(...)` makes a matplotlib `Figure` (the
object-oriented API — no pyplot state, safe in threads and worker processes) and its axes
under `STYLE`, so every method's and validation's figures share fonts, grid and colours."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure

#: rcParams every figure is drawn with (read when the figure and its axes are made).
STYLE: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.framealpha": 0.8,
    "lines.linewidth": 1.0,
    "axes.prop_cycle": mpl.cycler(color=["tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple"]),
}

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
    return fig, axes
