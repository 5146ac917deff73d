"""Each vehicle's drift against its own history, in a fleet's table of identified parameters
(`rotorid.batch.collect`): `assess` flags values, finds drifts and outliers and says them in
words.

Drift rule (`DriftRule`, applied by `assess` per vehicle, method and parameter, values in date
order, ties in manifest order). The *baseline* is the vehicle's own earlier values that were not
flagged. A value x_k with σ_k is compared once the baseline holds at least `min_history` values
x_i (σ_i), i in B, n = |B|:

    m   = mean(x_B)                               baseline mean
    s   = max(std(x_B, ddof=1), rms(σ_B))         per-flight scatter: the baseline's own spread, or
                                                  the σ its estimates claim, whichever is larger
    u   = sqrt(max(σ_k, s)² + s² / n)             uncertainty of x_k − m: the new value's scatter
                                                  (its own σ or the history's, the larger) plus
                                                  the standard error of the mean
    z_k = (x_k − m) / u                           flagged when |z_k| > `threshold` (3)

A flagged value does not join the baseline, so a step change stays flagged on every later
flight instead of being absorbed. A *drift* is the trailing run of flagged values of one sign
that reaches the vehicle's latest flight: "tm up 25 % since 2026-03-14: check
motors/propellers", the change being the mean of the run against m. A flagged value followed by
unflagged ones is an *outlier* (one odd flight, often a bad log), listed but not a drift. Taking
the larger of the observed spread and the claimed σ keeps the rule honest both when the σ are
optimistic (real flights vary more than one log's noise says: battery voltage, temperature) and
when a short history happens to be tight.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.errors import RotoridError

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class DriftRule:
    """Flag a value beyond `threshold` σ of its vehicle's own history once that history holds
    `min_history` values (see the module docstring for the formulas)."""

    threshold: float = 3.0
    min_history: int = 3

    def __post_init__(self) -> None:
        if not self.threshold > 0 or self.min_history < 2:
            raise RotoridError(f"drift rule {self}: threshold must be positive and min_history at least 2")


#: What to check when a parameter drifts, by parameter (base name, no motor/config suffix).
ADVICE: dict[str, str] = {
    "tm": "check motors/propellers",
    "tm_rise": "check motors/propellers",
    "tm_fall": "check motors/propellers",
    "thrust": "check propellers, motors and battery",
    "k_t": "check propellers, motors and battery",
    "hover_cmd": "check propellers, motors, battery and payload",
    "k_d": "check propellers (damage, pitch, wrong type)",
    "k_tau": "check propellers (damage, pitch, wrong type)",
    "mass": "check payload and battery",
    "I": "check payload and battery mounting",
    "ms": "check payload and battery mounting",
    "com": "check payload and battery mounting",
    "imu": "check the flight controller's mounting",
}


def advice(parameter: str) -> str:
    """What to check when `parameter` drifts (e.g. 'check motors/propellers' for tm)."""
    base = re.sub(r"(_m\d+)?(@[\w.-]+)?$", "", parameter)
    for key in (base, base.split("_")[0], re.sub(r"_c\d+$", "", base)):
        if key in ADVICE:
            return ADVICE[key]
    return "check the vehicle"


@dataclass(frozen=True)
class Finding:
    """A drift (the latest flights off the vehicle's history) or an outlier (one odd flight)."""

    kind: str  # "drift" or "outlier"
    vehicle: str
    method: str
    parameter: str
    since: str  # date label of the first flagged flight
    flights: int  # flagged flights in the run
    baseline: float  # mean of the history before
    value: float  # mean of the flagged values
    unit: str
    z: float  # largest |z| of the run, with its sign
    message: str  # in words: "tm up 25 % since 2026-03-14: check motors/propellers"


def _z_scores(x: np.ndarray, s: np.ndarray, rule: DriftRule) -> tuple[np.ndarray, ...]:
    """Baseline mean, scatter, σ of the difference (u), z and flag of each value of one (vehicle, method, parameter)
    history in date order: the recurrence of the module docstring (flagged values stay out of
    the baseline)."""
    n = len(x)
    mean, scatter, dev, z = (np.full(n, np.nan) for _ in range(4))
    flag = np.zeros(n, dtype=bool)
    base: list[int] = []
    for k in range(n):  # over flights (a handful per vehicle), not samples
        if len(base) >= rule.min_history and np.isfinite(x[k]):
            xb, sb = x[base], s[base]
            sig = np.sqrt(np.nanmean(sb**2)) if np.isfinite(sb).any() else 0.0
            sc = max(float(np.std(xb, ddof=1)), float(sig))
            u = math.hypot(max(s[k], sc) if np.isfinite(s[k]) else sc, sc / math.sqrt(len(base)))
            mean[k], scatter[k], dev[k] = xb.mean(), sc, u
            z[k] = (
                (x[k] - mean[k]) / u if u > 0 else (0.0 if x[k] == mean[k] else math.copysign(math.inf, x[k] - mean[k]))
            )
            flag[k] = abs(z[k]) > rule.threshold
        if not flag[k] and np.isfinite(x[k]):
            base.append(k)
    return mean, scatter, dev, z, flag


def assess(table: pd.DataFrame, rule: DriftRule | None = None) -> tuple[pd.DataFrame, list[Finding]]:
    """Apply the drift rule to every (vehicle, method, parameter) history of `collect`'s table:
    returns the table with `baseline` (m), `scatter` (s), `dev_std` (u), `z` and `flagged` columns (NaN/False where the
    history is too short) and the findings, drifts first."""
    from rotorid.report.html import pretty_unit, symbol

    rule = rule or DriftRule()
    t = table.sort_values(["vehicle", "method", "parameter", "date", "row"], kind="stable", ignore_index=True)
    cols = {k: np.full(len(t), np.nan) for k in ("baseline", "scatter", "dev_std", "z")}
    flagged = np.zeros(len(t), dtype=bool)
    findings: list[Finding] = []
    for (veh, method, par), idx in t.groupby(["vehicle", "method", "parameter"], sort=False).indices.items():
        x, s = t["value"].to_numpy()[idx], t["std"].to_numpy()[idx]
        m, sc, u, z, f = _z_scores(x, s, rule)
        for k, v in zip(cols, (m, sc, u, z), strict=True):
            cols[k][idx] = v
        flagged[idx] = f
        dates = t["date"].to_numpy()[idx]
        unit = str(t["unit"].iloc[idx[0]])
        for kind, run in _runs(f, z):
            first = run[0]
            mu = float(np.mean(x[run]))
            zmax = float(z[run][np.argmax(np.abs(z[run]))])
            label = _label(dates[first])
            change = _change_words(symbol(par), mu, m[first], sc[first], pretty_unit(unit))
            words = f"{change} since {label}" if kind == "drift" else f"{change} on {label} only (one odd flight)"
            findings.append(
                Finding(
                    kind, veh, method, par, label, len(run), float(m[first]), mu, unit, zmax, f"{words}: {advice(par)}"
                )
            )
    out = t.assign(**cols, flagged=flagged)
    findings.sort(key=lambda d: (d.kind != "drift", d.vehicle, d.method, d.parameter, d.since))
    return out, findings


def _runs(flag: np.ndarray, z: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Runs of consecutive flagged values of one sign: ('drift', indices) for the run that
    reaches the last value, ('outlier', indices) for each earlier one."""
    runs: list[list[int]] = []
    for k in np.flatnonzero(flag):
        if runs and runs[-1][-1] == k - 1 and np.sign(z[k]) == np.sign(z[runs[-1][-1]]):
            runs[-1].append(int(k))
        else:
            runs.append([int(k)])
    last = len(flag) - 1
    return [("drift" if r[-1] == last else "outlier", np.array(r)) for r in runs]


def _label(d: Any) -> str:
    import pandas as pd

    ts = pd.Timestamp(d)
    return ts.date().isoformat() if ts == ts.normalize() else ts.isoformat(timespec="minutes")


def _change_words(sym: str, value: float, baseline: float, scatter: float, unit: str) -> str:
    """'tm up 25 %' — in percent when the baseline is clearly non-zero, else in units."""
    direction = "up" if value > baseline else "down"
    if abs(baseline) > 3 * scatter and baseline != 0:
        return f"{sym} {direction} {abs(100 * (value - baseline) / baseline):.0f} %"
    return f"{sym} {direction} {abs(value - baseline):.3g} {unit}".rstrip()
