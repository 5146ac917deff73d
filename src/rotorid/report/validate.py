"""The cross-validation report (Six et al. Sec. IV-B4, Table III, Figs. 3-4): figures of a
`rotorid.validate.Validation` and `write_validation`, which writes validation.json, the
figures as PNG and a self-contained report.html, replacing the output folder atomically."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.motion import WRENCH
from rotorid.report.style import MEASURED, MODEL, figure
from rotorid.util import windows_text
from rotorid.validate import MOTION, PASS_ERROR_PCT, PASS_R2, RATES, WEAK_EXCITATION

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.result import Result
    from rotorid.validate import Validation


def gapped(t: np.ndarray, y: np.ndarray, factor: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """`t`, `y` with a NaN row inserted wherever a step exceeds `factor` x the median step, so
    a line is not drawn across a gap between flights or pieces."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.size < 3:
        return t, y
    dt = np.diff(t)
    cut = np.flatnonzero(dt > factor * np.median(dt)) + 1
    return np.insert(t, cut, np.nan), np.insert(y, cut, np.nan, axis=0)


def over_time(rows: list[tuple[str, np.ndarray, np.ndarray, str, str]], t: np.ndarray) -> Figure:
    """Measured (blue) and modelled (red) signal per row over time, each with its residual
    (measured − model) in a thin panel below; no line across a gap between flights. `rows`:
    (title, measured, model, y label, unit)."""
    n = len(rows)
    fig, axes = figure(10.4, 2.9 * n + 0.4, 2 * n, 1, sharex=True, squeeze=False, height_ratios=[2.2, 1] * n)
    tt, _ = gapped(t, t)
    for k, (title, meas, model, ylabel, unit) in enumerate(rows):
        top, bot = axes[2 * k, 0], axes[2 * k + 1, 0]
        _, m = gapped(t, meas)
        _, p = gapped(t, model)
        res = m - p
        top.plot(tt, m, lw=0.6, color=MEASURED, label="measured")
        top.plot(tt, p, lw=0.9, color=MODEL, label="model")
        top.set_ylabel(f"{ylabel} [{unit}]")
        top.set_title(title, fontsize=9)
        top.legend(loc="upper right", fontsize=8)
        bot.plot(tt, res, lw=0.5, color="0.35")
        bot.axhline(0.0, color="k", lw=0.6)
        bot.set_ylabel(f"residual [{unit}]", fontsize=8)
        for ax in (top, bot):
            ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("t [s]")
    h = fig.get_figheight()
    fig.subplots_adjust(left=0.09, right=0.98, top=1 - 0.3 / h, bottom=0.45 / h, hspace=0.35)
    return fig


def rms(x: np.ndarray) -> float:
    """Root mean square of `x` (the residual's size in the figures' titles)."""
    return float(np.sqrt(np.mean(np.square(x))))


def wrench_figure(
    t: np.ndarray, rigid: np.ndarray, rotor: np.ndarray, norms: dict[str, float], title: str = ""
) -> Figure:
    """Figs. 3-4 of Six et al.: rigid-body (blue) vs rotor-model (red) wrench per component
    (those with a finite relative error norm), the modelling error on a second axis."""
    comps = [j for j, c in enumerate(WRENCH) if np.isfinite(norms.get(c, float("nan")))]
    n = max(len(comps), 1)
    fig, axes = figure(9, 2.1 * n, n, 1, sharex=True, squeeze=False)
    tt, rig = gapped(t, rigid)
    _, rot = gapped(t, rotor)
    for ax, j in zip(axes[:, 0], comps, strict=False):
        ax.plot(tt, rig[:, j], lw=0.9, color=MEASURED, label="rigid body")
        ax.plot(tt, rot[:, j], lw=0.9, color=MODEL, label="rotor model")
        ax.set_ylabel(f"{WRENCH[j]} [{'N' if j < 3 else 'N m'}]")
        ax2 = ax.twinx()
        ax2.plot(tt, rig[:, j] - rot[:, j], lw=0.5, color="0.55")
        ax2.set_ylabel("error", color="0.4")
        ax2.grid(False)
        ax.set_title(f"{title}{WRENCH[j]}: model error {norms[WRENCH[j]]:.1f} % of the rotor wrench", fontsize=9)
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("t [s]")
    fig.subplots_adjust(
        left=0.1, right=0.9, top=1 - 0.35 / fig.get_figheight(), bottom=0.5 / fig.get_figheight(), hspace=0.45
    )
    return fig


def motion_figure(val: Validation) -> Figure:
    """Predicted vs measured specific force and angular acceleration per axis; a component
    the model does not predict is marked so instead of scored."""
    fig, axs = figure(10, 6.5, 3, 2, sharex=True)
    t, meas = gapped(val.t, val.measured)
    _, pred = gapped(val.t, val.predicted)
    for j, name in enumerate(MOTION):
        ax = axs[j % 3, j // 3]
        ax.plot(t, meas[:, j], lw=0.9, color=MEASURED, label="measured")
        m = val.metrics[name]
        if math.isfinite(m["r2"]):
            ax.plot(t, pred[:, j], lw=0.9, color=MODEL, label="predicted")
            ax.set_title(f"{name}: R² = {m['r2']:.3f}, RMSE = {m['rmse']:.3g} {m['unit']}", fontsize=9)
        else:
            ax.set_title(f"{name}: not modelled", fontsize=9)
    axs[0, 0].legend(loc="upper right", fontsize=8)
    for ax in axs[-1]:
        ax.set_xlabel("t [s]")
    fig.subplots_adjust(left=0.08, right=0.98, top=0.94, bottom=0.08, hspace=0.4, wspace=0.2)
    return fig


def replay_figure(val: Validation) -> Figure:
    """The replay (`rotorid.validate.replay`): measured body rates and each horizon's
    prediction from its re-initialisation (one line per horizon), per axis."""
    rep = val.replay
    fig, axs = figure(10, 6.5, 3, 1, sharex=True, squeeze=False)
    cut = np.flatnonzero(np.diff(rep.segment)) + 1  # a break between horizons
    t = np.insert(rep.t, cut, np.nan)
    meas = np.insert(rep.measured, cut, np.nan, axis=0)
    pred = np.insert(rep.predicted, cut, np.nan, axis=0)
    for j, name in enumerate(RATES):
        ax = axs[j, 0]
        ax.plot(t, meas[:, j], lw=0.9, color=MEASURED, label="measured")
        ax.plot(t, pred[:, j], lw=0.9, color=MODEL, label=f"replayed ({rep.horizon:g} s horizons)")
        m = rep.metrics[name]
        ax.set_ylabel(f"{name} [rad/s]")
        ax.set_title(
            f"{name}: R² = {m['r2']:.3f}, RMSE = {m['rmse']:.3g} rad/s (holding the rate: {m['hold_rmse']:.3g})",
            fontsize=9,
        )
    axs[0, 0].legend(loc="upper right", fontsize=8)
    axs[-1, 0].set_xlabel("t [s]")
    fig.subplots_adjust(left=0.09, right=0.98, top=0.94, bottom=0.08, hspace=0.45)
    return fig


def figures(val: Validation) -> dict[str, Figure]:
    """`validation_wrench` (`wrench_figure`), `validation_motion` (`motion_figure`) and, with
    a replay, `validation_replay` (`replay_figure`)."""
    out = {
        "validation_wrench": wrench_figure(val.t, val.rigid, val.rotor, val.rel_error_norm_pct),
        "validation_motion": motion_figure(val),
    }
    if val.replay is not None:
        out["validation_replay"] = replay_figure(val)
    return out


def replay_rows(val: Validation) -> list[dict[str, str]]:
    """Table rows of the replay: channel, RMSE with unit, R², and for a body rate the RMSE of
    holding the re-initialised rate."""
    if val.replay is None:
        return []
    fmt = lambda x, spec: format(x, spec) if isinstance(x, int | float) and math.isfinite(x) else "—"
    return [
        {
            "channel": name,
            "rmse": f"{fmt(m['rmse'], '.4g')} {m['unit']}" if math.isfinite(m["rmse"]) else "not modelled",
            "r2": fmt(m["r2"], ".4f") if math.isfinite(m["r2"]) else "not modelled",
            "hold": f"{fmt(m['hold_rmse'], '.4g')} {m['unit']}" if "hold_rmse" in m else "",
        }
        for name, m in val.replay.metrics.items()
    ]


def rows(val: Validation) -> list[dict[str, str]]:
    """Table rows pairing each predicted motion channel with its wrench component:
    channel, RMSE with unit, R², wrench, relative error norm % (a component the model does
    not predict says "not modelled" instead of a score)."""
    fmt = lambda x, spec: format(x, spec) if isinstance(x, int | float) and math.isfinite(x) else "—"
    out = []
    for (name, m), (w, norm) in zip(val.metrics.items(), val.rel_error_norm_pct.items(), strict=True):
        if not val.modeled.get(w, True):
            out.append({"channel": name, "rmse": "not modelled", "r2": "not modelled", "wrench": w, "norm": "—"})
            continue
        out.append(
            {
                "channel": name,
                "rmse": f"{fmt(m['rmse'], '.4g')} {m['unit']}",
                "r2": fmt(m["r2"], ".4f"),
                "wrench": w,
                "norm": fmt(norm, ".2f"),
            }
        )
    return out


def render(val: Validation, result: Result, params: str, logs: list[dict[str, Any]], images: dict[str, str]) -> str:
    """The validation report.html (self-contained, like the identification report)."""
    from rotorid import __version__
    from rotorid.report.html import TEMPLATES

    return TEMPLATES.get_template("validation.html.j2").render(
        title=f"rotorid — cross-validation of {params} ({result.method})",
        method=result.method,
        params=params,
        rows=rows(val),
        verdict=val.verdict,
        thresholds={"r2": PASS_R2, "error": PASS_ERROR_PCT, "weak": WEAK_EXCITATION},
        replay=val.replay,
        replay_rows=replay_rows(val),
        notes=val.notes,
        logs=[{**i, "windows_text": windows_text(i.get("windows"))} for i in logs],
        figures=list(images.items()),
        version=__version__,
    )


def write_validation(
    val: Validation, result: Result, out: Path, params: str, logs: list[dict[str, Any]]
) -> dict[str, Path]:
    """Replace the folder `out` by validation.json, the figures as PNG and report.html
    (`params`: the params.json validated, `logs`: the held-out inputs as path/sha256/windows)."""
    from rotorid.report import png_bytes, write_folder

    pngs = {f"{name}.png": png_bytes(fig) for name, fig in figures(val).items()}
    images = {name.removesuffix(".png"): base64.b64encode(data).decode() for name, data in pngs.items()}
    doc = {**val.to_dict(), "params": params, "inputs": logs}
    files = {
        **pngs,
        "validation.json": (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode(),
        "report.html": render(val, result, params, logs, images).encode(),
    }
    return write_folder(out, files)
