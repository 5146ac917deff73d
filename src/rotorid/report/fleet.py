"""The fleet page of `rotorid batch`: each vehicle's parameters over time (value ± 2σ per flight,
its history's baseline and the band beyond which a value is flagged), the drifts and outliers in
words, and the runs that failed. One self-contained HTML file (figures as base64 PNG, inline
style, no network resource). Figures use the matplotlib Figure API (no pyplot state)."""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rotorid import __version__
from rotorid.report.html import TEMPLATES, describe, fmt, pretty_unit, symbol
from rotorid.result import PARAMS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

COLS = 3  # panels per figure row
_RANK = {name: i for i, name in enumerate(PARAMS)}


def vehicle_figure(rows: pd.DataFrame) -> Figure:
    """One panel per (method, parameter) of one vehicle: each flight's value with ±2σ bars
    (flagged flights in red) and, behind each flight with enough history, the mean of that
    history (dark tick) and the range baseline ± the smallest change flagged (`limit`, grey)."""
    import numpy as np
    from matplotlib.dates import date2num
    from matplotlib.figure import Figure

    groups = sorted(rows.groupby(["method", "parameter"], sort=False), key=lambda g: (g[0][0], _order(g[0][1])))
    several = rows["method"].nunique() > 1
    nrow = math.ceil(len(groups) / COLS)
    fig = Figure(figsize=(4.0 * COLS, 2.4 * nrow + 0.4))
    fig.subplots_adjust(
        left=0.07, right=0.98, bottom=0.6 / (2.4 * nrow + 0.4), top=1 - 0.35 / (2.4 * nrow), hspace=0.45, wspace=0.3
    )
    axes = fig.subplots(nrow, COLS, squeeze=False, sharex=True).ravel()
    # fixed date ticks (at most 6 of the flight dates): date locators cost seconds per figure
    days = np.unique(rows["date"].to_numpy())
    ticks = days[np.unique(np.linspace(0, len(days) - 1, min(len(days), 6)).round().astype(int))]
    axes[0].set_xticks(date2num(ticks), [f"{d:%Y-%m-%d}" for d in ticks.astype("datetime64[s]").tolist()])
    for ax, ((method, par), g) in zip(axes, groups, strict=False):
        t = date2num(g["date"].to_numpy())
        x, s, flag = g["value"].to_numpy(), g["std"].to_numpy(), g["flagged"].to_numpy()
        m, lim = g["baseline"].to_numpy(), g["limit"].to_numpy()
        has = np.isfinite(m)
        ax.vlines(t[has], (m - lim)[has], (m + lim)[has], color="0.86", lw=9)
        ax.plot(t[has], m[has], "_", color="0.35", ms=12, mew=1.5)
        for sel, colour in ((~flag, "#1f5fa8"), (flag, "#b3261e")):
            if sel.any():
                ax.errorbar(t[sel], x[sel], yerr=2 * s[sel], fmt="o", ms=4, color=colour, capsize=2, lw=1)
        unit = pretty_unit(str(g["unit"].iloc[0]))
        ax.set_title(f"{symbol(par)}{f' ({method})' if several else ''}" + (f" [{unit}]" if unit != "—" else ""))
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(groups) :]:
        ax.set_visible(False)
    return fig


def _order(name: str) -> tuple[int, str]:
    """Parameters in the order of `rotorid.result.PARAMS` (tm, thrust curve, ..., inertia), then by name."""
    base = re.sub(r"(_m\d+)?(@[\w.-]+)?$", "", name)
    return (_RANK.get(base, len(_RANK)), name)


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode()


def smallest_change(limit: float, baseline: float) -> str:
    """The smallest change of a parameter the drift rule flags at its latest run (`limit` of
    `rotorid.drift.assess`: the smaller of the σ test's and the history test's), with its share
    of the baseline; '—' while the history is too short."""
    d = limit
    if not math.isfinite(d):
        return "—"
    share = f" ({100 * d / abs(baseline):.3g} %)" if math.isfinite(baseline) and baseline != 0 else ""
    return f"±{d:.3g}{share}"


def render(table: pd.DataFrame, findings: Sequence[Any], runs: pd.DataFrame, title: str, threshold: float = 3.0) -> str:
    """The fleet page. `table` is `rotorid.drift.assess`'s table, `findings` its findings
    (objects with kind, vehicle, parameter, message), `runs` `rotorid.batch.runs_table`."""
    vehicles = []
    for veh, rows in table.groupby("vehicle", sort=True):
        latest = rows.sort_values(["date", "row"]).groupby(["method", "parameter"], sort=False).tail(1)
        latest = latest.iloc[
            sorted(range(len(latest)), key=lambda i: (latest["method"].iloc[i], _order(latest["parameter"].iloc[i])))
        ]
        vehicles.append(
            {
                "name": veh,
                "flights": int(rows["row"].nunique()),
                "span": f"{rows['date'].min():%Y-%m-%d} – {rows['date'].max():%Y-%m-%d}",
                "findings": [f for f in findings if f.vehicle == veh],
                "figure": _png(vehicle_figure(rows)),
                "latest": [
                    {
                        "name": symbol(r.parameter),
                        "desc": describe(r.parameter),
                        "method": r.method,
                        "value": fmt(r.value),
                        "std": fmt(r.std, ".3g"),
                        "unit": pretty_unit(r.unit),
                        "baseline": fmt(r.baseline),
                        "z": fmt(r.z, "+.1f"),
                        "smallest": smallest_change(r.limit, r.baseline),
                        "by": "history" if r.limit < threshold * r.dev_std else "σ",
                        "flagged": bool(r.flagged),
                    }
                    for r in latest.itertuples()
                ],
            }
        )
    failed = runs[runs["status"] != "ok"].to_dict("records")
    return TEMPLATES.get_template("fleet.html.j2").render(
        title=title,
        version=__version__,
        vehicles=vehicles,
        findings=list(findings),
        drifts=sum(f.kind == "drift" for f in findings),
        failed=failed,
        n_runs=len(runs),
        threshold=threshold,
    )
