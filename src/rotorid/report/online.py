"""Figures of the online method (Kwon et al. Fig. 6–10) from `result.diagnostics`.

- `convergence_moi`, `convergence_com`, `convergence_mass_imu` (Figs. 7–10): every parameter
  against time with its ±σ band, the truth when known, the enable time and the flight's
  intervals; other runs (e.g. the baselines) can be overlaid with `others`.
- `angular_acceleration` (Fig. 6): the differentiated raw gyro, the KF's α̂ and the truth when
  the flight has it.
- `correction_law` (Alg. 4): |ω̂_k| against its KF σ_k and where the MOI columns were active.
- `moment_time`, `force_time`: the regression rows at the final estimate over time per body
  axis, measured (J α̂ + ω x J ω; m times the specific force at the CoM) against the rotors'
  model, each with its residual (from the method's ≤ 2500 rows, `solve.fit_series`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.report.style import figure
from rotorid.report.validate import over_time, rms

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.result import Result, Truth

_PARAMS = {  # name -> (diagnostic key, column or None, label, display scale, display unit)
    "I_xx": ("theta1", 0, "J_xx", 1e3, "g m²"),
    "I_yy": ("theta1", 1, "J_yy", 1e3, "g m²"),
    "I_zz": ("theta1", 2, "J_zz", 1e3, "g m²"),
    "com_x": ("theta1", 3, "com_x", 1e3, "mm"),
    "com_y": ("theta1", 4, "com_y", 1e3, "mm"),
    "mass": ("mass", None, "mass", 1e3, "g"),
    "imu_z": ("imu_z", None, "imu_z", 1e3, "mm"),
}
_VARIANT_COLORS = {"kwon": "tab:green", "rls": "tab:blue", "rls-lpf": "tab:red"}
_MAX_POINTS = 4000


def _stride(n: int) -> int:
    return max(1, n // _MAX_POINTS)


def _series(d: dict[str, Any], name: str) -> tuple[np.ndarray, np.ndarray]:
    key, col, *_ = _PARAMS[name]
    v, s = np.asarray(d[key]), np.asarray(d[key + "_std"])
    return (v, s) if col is None else (v[:, col], s[:, col])


def _truth_dict(result: Result, truth: Truth | dict[str, float] | None) -> dict[str, float]:
    if truth is None:
        truth = result.diagnostics.get("truth")
    if truth is None:
        return {}
    return dict(truth.params if hasattr(truth, "params") else truth)


def _decorate(ax: Any, d: dict[str, Any]) -> None:
    for i, (_, (a, b)) in enumerate(sorted(d.get("intervals", {}).items())):
        ax.axvspan(a, b, color="0.9" if i % 2 else "0.97", zorder=0)
    en = np.asarray(d["enabled"])
    if en.any():
        ax.axvline(float(np.asarray(d["t"])[np.argmax(en)]), color="0.4", ls=":", lw=1)
    ax.grid(alpha=0.3)


def _convergence(
    result: Result, names: tuple[str, ...], truth: dict[str, float], others: dict[str, Result], title: str
) -> Figure:
    d = result.diagnostics
    fig, axes = figure(5.0 * len(names), 3.8, 1, len(names), layout="constrained", squeeze=False)
    axes = axes[0]
    runs = {result.settings.get("variant", "online"): result, **others}
    for ax, name in zip(axes, names, strict=True):
        _, _, label, scale, unit = _PARAMS[name]
        _decorate(ax, d)
        for variant, r in runs.items():
            rd = r.diagnostics
            t = np.asarray(rd["t"])
            k = _stride(len(t))
            v, s = _series(rd, name)
            c = _VARIANT_COLORS.get(variant, "tab:purple")
            en = np.asarray(rd["enabled"])
            vv = np.where(en, v, np.nan)[::k] * scale
            ss = np.where(en, s, np.nan)[::k] * scale
            ax.plot(t[::k], vv, color=c, lw=1.2, label=variant)
            ax.fill_between(t[::k], vv - ss, vv + ss, color=c, alpha=0.2, lw=0)
        if name in truth:
            ax.axhline(truth[name] * scale, color="k", ls="--", lw=1, label="truth")
            tv = truth[name] * scale
            finals = [_series(r.diagnostics, name) for r in runs.values()]
            span = max(
                0.02 * abs(tv),
                *(1.3 * abs(v[-1] * scale - tv) for v, _ in finals),
                *(3.0 * sd[-1] * scale for _, sd in finals),
            )
            ax.set_ylim(tv - span, tv + span)
        else:  # no truth: frame the estimates, not the huge initial ±σ band
            lo, hi = np.nanpercentile(
                np.concatenate([_series(r.diagnostics, name)[0] for r in runs.values()]) * scale, [1, 99]
            )
            pad = max(0.15 * (hi - lo), 0.05 * max(abs(lo), abs(hi)), 1e-12)
            ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{label} [{unit}]")
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig


def angular_acceleration(result: Result) -> Figure:
    """Fig. 6: the gyro differentiated at the estimator's rate, the KF's α̂ and the truth per
    axis when known (RMSE in the legend). The y range follows α̂ and the truth; the raw
    derivative is clipped."""
    d = result.diagnostics
    t = np.asarray(d["t"])
    k = _stride(len(t))
    en = np.asarray(d["enabled"])
    fig, axes = figure(15, 3.8, 1, 3, layout="constrained")
    truth = d.get("alpha_true")
    series = {"differentiated gyro": np.asarray(d["alpha_raw"]), f"α̂ ({result.settings.get('variant')})": d["alpha"]}
    colors = ("tab:blue", "tab:red")
    for j, ax in enumerate(axes):
        _decorate(ax, d)
        for (lab, a), c in zip(series.items(), colors, strict=True):
            a = np.asarray(a)[:, j]
            if truth is not None:
                lab += f" (RMSE {np.sqrt(np.mean((a[en] - np.asarray(truth)[en, j]) ** 2)):.3g})"
            ax.plot(t[::k], a[::k], color=c, lw=0.6, label=lab)
        ref = np.asarray(d["alpha"])[en, j]
        if truth is not None:
            ax.plot(t[::k], np.asarray(truth)[::k, j], color="gold", lw=1.2, label="truth")
            ref = np.concatenate([ref, np.asarray(truth)[en, j]])
        if ref.size:
            lim = 1.5 * float(np.percentile(np.abs(ref), 99.5)) + 1e-6
            ax.set_ylim(-lim, lim)
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{'pqr'[j]}̇ [rad/s²]")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("angular acceleration (Kwon Fig. 6)")
    return fig


def correction_law(result: Result) -> Figure:
    """Alg. 4: |ω̂_k| against n_sigma·σ_k; shaded where the MOI column k was active."""
    d = result.diagnostics
    t = np.asarray(d["t"])
    k = _stride(len(t))
    n_sigma = float(result.settings.get("n_sigma", 1.0))
    fig, axes = figure(15, 3.6, 1, 3, layout="constrained")
    for j, ax in enumerate(axes):
        _decorate(ax, d)
        w, s = np.abs(np.asarray(d["omega"])[:, j]), np.asarray(d["omega_std"])[:, j]
        ax.semilogy(t[::k], w[::k] + 1e-9, lw=0.6, color="tab:blue", label=f"|ω̂_{'xyz'[j]}|")
        ax.semilogy(t[::k], n_sigma * s[::k], lw=1.0, color="tab:red", label=f"{n_sigma:g}σ (KF)")
        act = np.asarray(d["active"])[:, j] & np.asarray(d["enabled"])
        ax.fill_between(t[::k], 0, 1, where=act[::k], transform=ax.get_xaxis_transform(), color="tab:green", alpha=0.15)
        ax.set_xlabel("t [s]")
        ax.set_ylabel("rad/s")
        ax.set_title(f"J_{'xyz'[j] * 2} column active {100 * act[np.asarray(d['enabled'])].mean():.0f}%", fontsize=9)
        ax.legend(fontsize=8)
    return fig


def _rows_over_time(d: dict[str, Any], key: str, quantity: str, symbol: str, unit: str) -> Figure:
    meas, model = np.asarray(d[f"{key}_meas"]), np.asarray(d[f"{key}_model"])
    rows = []
    for j, axis in enumerate("xyz"):
        spread = float(np.std(meas[:, j]))
        title = f"{quantity} {axis}: residual RMS {rms(meas[:, j] - model[:, j]):.3g} {unit}, measured std {spread:.3g} {unit}"
        rows.append((title, meas[:, j], model[:, j], f"{symbol}_{axis}", unit))
    return over_time(rows, np.asarray(d["fit_t"]))


def moment_time(result: Result) -> Figure:
    """Eq. 10's rows at the final θ1 over time per body axis: the gyro's J α̂ + ω x J ω (final
    MOI) against the rotors' moment about the final CoM less the constant yaw moment, with the
    residual."""
    return _rows_over_time(result.diagnostics, "moment", "moment (J α̂ + ω×Jω against the rotors')", "τ", "N m")


def force_time(result: Result) -> Figure:
    """Eq. 19–20's rows at the final mass and IMU height over time per body axis: the mass times
    the specific force moved to the CoM against the rotors' force, with the residual."""
    return _rows_over_time(result.diagnostics, "force", "force (m·specific force against the rotors')", "F", "N")


def figures(
    result: Result, truth: Truth | dict[str, float] | None = None, others: dict[str, Result] | None = None
) -> dict[str, Figure]:
    """All figures of an online run. `truth` (a `Truth` or name -> value; default
    `result.diagnostics["truth"]`) draws the true values; `others` overlays further runs by
    label (e.g. the baselines {"rls": r1, "rls-lpf": r2}) on the convergence plots."""
    tr = _truth_dict(result, truth)
    others = others or {}
    figs = {
        "convergence_moi": _convergence(result, ("I_xx", "I_yy", "I_zz"), tr, others, "MOI (Kwon Fig. 7)"),
        "convergence_com": _convergence(result, ("com_x", "com_y"), tr, others, "CoM offset (Kwon Fig. 8)"),
        "convergence_mass_imu": _convergence(
            result, ("mass", "imu_z"), tr, others, "mass and IMU height (Kwon Figs. 9–10)"
        ),
        "angular_acceleration": angular_acceleration(result),
    }
    if result.settings.get("variant") == "kwon":
        figs["correction_law"] = correction_law(result)
    if "fit_t" in result.diagnostics:  # a run saved before the rows were kept draws the others
        figs["moment_time"] = moment_time(result)
        figs["force_time"] = force_time(result)
    return figs
