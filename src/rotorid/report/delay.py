"""Figures of the delay method (Eschmann et al. Fig. 2, 3, 5, 6, 7, 8) from `result.diagnostics`,
plus the model against the measurement over time per axis with its residual (thrust, roll and
pitch moments, yaw moment) and the thrust curve against the command with its ±2σ band.

Every figure reads only `result.diagnostics` (arrays already subsampled by the method), which
`rotorid.report.write_run` saves as diagnostics.npz, so `rotorid report RUN` redraws a saved run
without the logs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.report.style import MODEL, figure, log_axis
from rotorid.report.validate import over_time, rms

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.result import Result

_COLORS = {"direct": "tab:blue", "reciprocal": "tab:orange", "tls": "tab:green"}


def _fig(ncols: int = 1, width: float = 5.2) -> tuple[Figure, Any]:
    w = width * ncols
    fig, axes = figure(w, 3.8, 1, ncols)
    # fixed margins (inches: room for tick labels like -0.0015 and the y label), so drawing
    # needs no layout engine or tight bounding box
    fig.subplots_adjust(left=0.95 / w, right=1 - 0.15 / w, bottom=0.14, top=0.9, wspace=0.32)
    return fig, axes


def tm_search(d: dict[str, Any]) -> Figure:
    """Fig. 2: RMSE of the thrust fit against T_m over the whole search and near the optimum."""
    fig, (a, b) = _fig(2)
    grid, rmse, tm = np.asarray(d["tm_grid"]), np.asarray(d["tm_rmse"]), float(d["tm_opt"])
    for ax in (a, b):
        ax.plot(grid, rmse, ".-", color="tab:blue", lw=1, ms=4, label="evaluated")
        ax.axvline(tm, color="tab:red", lw=1, label=f"optimum {1e3 * tm:.1f} ms")
        ax.set_xlabel("tm [s]")
        ax.set_ylabel("thrust RMSE [N]")
        ax.grid(alpha=0.3)
    log_axis(a)
    a.set_title("search range (coarse bracket + Brent)")
    std = float(d.get("tm_std", np.nan))
    near = (grid > tm * 0.8) & (grid < tm * 1.25)
    if near.sum() >= 3:
        b.set_xlim(grid[near].min(), grid[near].max())
        b.set_ylim(rmse[near].min() - 0.05 * np.ptp(rmse[near]), rmse[near].max() + 0.05 * np.ptp(rmse[near]))
    if np.isfinite(std):
        b.axvspan(tm - std, tm + std, color="tab:red", alpha=0.15, label="±1σ")
    for key, ls in (("tm_rise", "--"), ("tm_fall", ":")):
        if key in d:
            b.axvline(float(d[key]), color="k", ls=ls, lw=1, label=f"{key} {1e3 * float(d[key]):.1f} ms")
    b.set_title("near the optimum" + (" (at the edge of the range!)" if d.get("tm_at_edge") else ""))
    b.legend(fontsize=8)
    return fig


def thrust_fit(d: dict[str, Any]) -> Figure:
    """Fig. 3: predicted vs measured collective thrust over time, with the residual (the
    predicted-against-measured scatter is `delay_model`'s right panel, drawn once)."""
    t, meas, pred = (np.asarray(d[k]) for k in ("thrust_t", "thrust_meas", "thrust_pred"))
    title = f"thrust curve + motor delay: R² = {float(d['thrust_r2']):.3f}, residual RMS {rms(meas - pred):.3g} N"
    return over_time([(title, meas, pred, "collective thrust m·acc_z", "N")], t)


def thrust_curve(d: dict[str, Any]) -> Figure:
    """Collective thrust against the (equal) motor command from the identified curve, with its
    ±2σ band (the coefficients' covariance, marginal over T_m), over the measured thrust against
    the motors' mean modelled state where the log gives one row per sample."""
    fig, ax = _fig(1, width=6.4)
    e, coef, cov = np.asarray(d["curve_exponents"]), np.asarray(d["curve_coef"]), np.asarray(d["curve_cov"])
    m = float(d["curve_rotors"])
    lo, hi = (float(v) for v in np.asarray(d["curve_range"]))
    if "thrust_state" in d:
        ax.plot(
            np.asarray(d["thrust_state"]),
            np.asarray(d["thrust_meas"]),
            ".",
            ms=1.5,
            color="0.65",
            alpha=0.5,
            label="measured m·acc_z (mean motor state)",
        )
    u = np.linspace(lo, hi, 200)
    phi = u[:, None] ** e[None, :]
    thrust = m * phi @ coef
    sd = m * np.sqrt(np.clip(np.einsum("ij,jk,ik->i", phi, cov, phi), 0.0, None))
    ax.fill_between(u, thrust - 2 * sd, thrust + 2 * sd, color=MODEL, alpha=0.2, lw=0, label="±2σ")
    ax.plot(u, thrust, color=MODEL, lw=1.5, label="identified curve")
    if "hover_pred" in d:
        ax.axvline(float(d["hover_pred"]), color="k", ls="--", lw=1, label=f"hover {float(d['hover_pred']):.3f}")
    ax.set_xlabel("motor command (all motors equal)")
    ax.set_ylabel("collective thrust [N]")
    ax.set_title("thrust against command", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def roll_pitch_time(d: dict[str, Any]) -> Figure:
    """Roll and pitch moments over time: measured I·ω̇ (the gyro's angular acceleration times
    the identified inertia) against the rotors' modelled torque, residual below each."""
    t, acc, tau = np.asarray(d["rp_t"]), np.asarray(d["rp_acc"]), np.asarray(d["rp_tau"])
    inertia = d["rp_fits"][d["rp_chosen"]]
    rows = []
    for k, (axis, name) in enumerate((("x", "I_xx"), ("y", "I_yy"))):
        meas = float(inertia[k]) * acc[:, k]
        title = (
            f"{'roll' if k == 0 else 'pitch'} moment ({name} ω̇_{axis}): residual RMS {rms(meas - tau[:, k]):.3g} N m"
        )
        rows.append((title, meas, tau[:, k], f"τ_{axis}", "N m"))
    return over_time(rows, t)


def yaw_time(d: dict[str, Any]) -> Figure:
    """Yaw moment over time: measured I_zz ω̇_z (+ precession) against K_tau Σ d_i f_i."""
    t, lhs, model = np.asarray(d["yaw_t"]), np.asarray(d["yaw_lhs"]), float(d["k_tau"]) * np.asarray(d["yaw_drag"])
    title = f"yaw moment: R² {float(d['yaw_r2']):.2f}, residual RMS {rms(lhs - model):.3g} N m"
    return over_time([(title, lhs, model, "τ_z", "N m")], t)


def delay_model(d: dict[str, Any]) -> Figure:
    """Fig. 5: the thrust fit without (setpoints directly) and with the motor-delay model."""
    fig, axes = _fig(2)
    meas = np.asarray(d["thrust_meas"])
    for ax, key, title, r2 in (
        (axes[0], "thrust_pred_nodelay", "without delay model (tm = 0)", d["thrust_nodelay_r2"]),
        (axes[1], "thrust_pred", f"with delay model (tm = {1e3 * float(d['tm_opt']):.1f} ms)", d["thrust_r2"]),
    ):
        p = np.asarray(d[key])
        ax.plot(p, meas, ".", ms=1.5, alpha=0.4)
        lim = [min(meas.min(), p.min()), max(meas.max(), p.max())]
        ax.plot(lim, lim, "k--", lw=1)
        ax.set_title(f"{title}: R² {float(r2):.3f}", fontsize=10)
        ax.set_xlabel("thrust curve of the motor states [N]")
        ax.set_ylabel("measured thrust [N]")
        ax.grid(alpha=0.3)
    return fig


def hover(d: dict[str, Any]) -> Figure:
    """Fig. 6: motor states (and commands) near zero world acceleration vs. the predicted hover command."""
    fig, ax = _fig(1)
    s, c = np.asarray(d["hover_states"]), np.asarray(d["hover_cmds"])
    lo, hi = np.quantile(np.concatenate([s, c]), [0.01, 0.99])
    bins = np.linspace(min(lo, s.min()), max(hi, s.max()), 40)
    # one filled outline per histogram (not one rectangle artist per bin): the same picture, drawn faster
    ax.hist(c, bins=bins, alpha=0.4, color="0.5", label="commands", histtype="stepfilled")
    ax.hist(s, bins=bins, alpha=0.6, color="tab:blue", label="motor states (delay model)", histtype="stepfilled")
    ax.axvline(float(d["hover_pred"]), color="tab:red", lw=1.5, label=f"predicted hover {float(d['hover_pred']):.3f}")
    ax.axvline(float(d["hover_median"]), color="k", ls="--", lw=1, label=f"median {float(d['hover_median']):.3f}")
    ax.set_xlabel("mean normalized motor command")
    ax.set_ylabel("samples")
    ax.set_title("samples nearest zero world acceleration")
    ax.legend(fontsize=8)
    return fig


def roll_pitch(d: dict[str, Any]) -> Figure:
    """Fig. 7: roll/pitch torque vs angular acceleration with the slope of each parameterization."""
    fig, axes = _fig(2)
    acc, tau = np.asarray(d["rp_acc"]), np.asarray(d["rp_tau"])
    fits, chosen = d["rp_fits"], d["rp_chosen"]
    for k, (ax, name) in enumerate(zip(axes, ("x (roll)", "y (pitch)"), strict=True)):
        ax.plot(acc[:, k], tau[:, k], ".", ms=1.5, color="0.6", alpha=0.5)
        x = np.array([acc[:, k].min(), acc[:, k].max()])
        for how, vals in fits.items():
            lw = 2.2 if how == chosen else 1.0
            ax.plot(x, vals[k] * x, color=_COLORS.get(how, "k"), lw=lw, label=f"{how}: {vals[k]:.3g} kg m²")
        ax.set_xlabel(f"angular acceleration {name} [rad/s²]")
        ax.set_ylabel("torque [N m]")
        ax.set_title(f"{name}; chosen: {chosen}", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    return fig


def yaw(d: dict[str, Any]) -> Figure:
    """Fig. 8: I_zz ω̇_z (+ precession) against the drag-torque regressor Σ d_i f_i, slope K_tau."""
    fig, ax = _fig(1)
    x, y, k = np.asarray(d["yaw_drag"]), np.asarray(d["yaw_lhs"]), float(d["k_tau"])
    ax.plot(x, y, ".", ms=1.5, color="0.6", alpha=0.5)
    xs = np.array([x.min(), x.max()])
    ax.plot(xs, k * xs, color="tab:red", lw=2, label=f"k_tau = {k:.4g} m (R² {float(d['yaw_r2']):.2f})")
    ax.set_xlabel("Σ d_i f_i [N]")
    ax.set_ylabel("I_zz ω̇_z [N m]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def figures(result: Result) -> dict[str, Figure]:
    """All figures the result has data for: tm_search, thrust_fit, delay_model, hover,
    thrust_curve, roll_pitch, roll_pitch_time, yaw, yaw_time (a saved run from before a figure's
    diagnostics existed draws the others)."""
    d = result.diagnostics
    out = {"tm_search": tm_search(d), "thrust_fit": thrust_fit(d), "delay_model": delay_model(d), "hover": hover(d)}
    if "curve_coef" in d:
        out["thrust_curve"] = thrust_curve(d)
    if "rp_acc" in d:
        out["roll_pitch"] = roll_pitch(d)
        if "rp_t" in d:
            out["roll_pitch_time"] = roll_pitch_time(d)
    if "yaw_drag" in d:
        out["yaw"] = yaw(d)
        if "yaw_t" in d:
            out["yaw_time"] = yaw_time(d)
    return out
