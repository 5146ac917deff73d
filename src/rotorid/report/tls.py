"""Figures of an IDIM-TLS result (Six et al.): the fit of the rotor model to the rigid-body
wrench per configuration (Figs. 3-4 on the identification data) and the %σ of every
candidate parameter with the essential-parameter verdict (Tables I-II)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rotorid.report.style import figure
from rotorid.report.validate import wrench_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.result import Result


def sigma_figure(result: Result) -> Figure:
    """%σ (eq. 22, log scale) of every candidate parameter: kept (essential) in blue, cancelled
    in grey with the %σ it had when cancelled; the dashed line is r_σ × the smallest %σ."""
    obs = {k: o for k, o in result.observability.items() if "essential" in o and o.get("rel_std_pct") is not None}
    names = list(obs)
    pct = np.array([o["rel_std_pct"] for o in obs.values()], dtype=float)
    kept = np.array([bool(o["identifiable"]) for o in obs.values()])
    shown = np.where(np.isfinite(pct) & (pct > 0), pct, np.nan)
    fig, ax = figure(max(6, 0.45 * len(names) + 2), 3.6)
    ax.bar(np.flatnonzero(kept), shown[kept], color="tab:blue", label="essential")
    ax.bar(np.flatnonzero(~kept), shown[~kept], color="0.7", label="cancelled")
    for i in np.flatnonzero(~np.isfinite(pct)):
        ax.annotate("not excited", (i, 1), rotation=90, ha="center", va="bottom", fontsize=7)
    r = result.settings.get("r_sigma")
    if r and kept.any():
        ax.axhline(r * np.nanmin(shown[kept]), ls="--", color="k", lw=0.8, label=f"r_σ × min %σ (r_σ = {r:g})")
    z = result.settings.get("cancel_z")
    if z and np.isfinite(z):
        ax.axhline(100.0 / z, ls=":", color="tab:red", lw=0.8, label=f"significant below: 100 / {z:g} %σ")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("%σ")
    ax.set_title("essential parameters (Six et al. Sec. III-B)", fontsize=10)
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.28)
    return fig


def figures(result: Result) -> dict[str, Figure]:
    """`tls_sigma` always; `tls_wrench_<config>` when the result carries its
    diagnostics (from the method, or from a saved run's diagnostics.npz)."""
    out = {"tls_sigma": sigma_figure(result)}
    for c, d in (result.diagnostics.get("configs") or {}).items():
        title = f"config {c}: " if len(result.diagnostics["configs"]) > 1 else ""
        out[f"tls_wrench_{c}"] = wrench_figure(d["t"], d["rigid"], d["rotor"], d["rel_error_norm_pct"], title)
    return out
