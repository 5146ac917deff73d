"""Each vehicle's drift against its own history, in a fleet's table of identified parameters
(`rotorid.batch.collect`): `assess` flags values, finds drifts and outliers and says them in
words.

Drift rule (`DriftRule`, applied by `assess` per vehicle, method and parameter, values in date
order, ties in manifest order). The *baseline* is the vehicle's own earlier values that were not
flagged. A value x_k with σ_k is compared once the baseline holds at least `min_history` values
x_i (σ_i), i in B, n = |B|, by two tests; it is flagged when either says so:

    m   = mean(x_B)                               baseline mean
    s_h = std(x_B, ddof=1)                        between-flight scatter of the vehicle's history

  σ test (the estimates' own uncertainty, never tighter than the history's spread):
    s   = max(s_h, rms(σ_B))
    u   = sqrt(max(σ_k, s)² + s² / n)             σ of x_k − m
    z_σ = (x_k − m) / u                           flagged when |z_σ| > `threshold` (3)

  history test (the history's own scatter; only when it varies, s_h > `HISTORY_FLOOR` rms(σ_B)):
    t   = (x_k − m) / (s_h sqrt(1 + 1/n))         Student's t with n − 1 degrees of freedom
    z_h = the normal score of t's two-sided p     flagged when |z_h| > `threshold`, i.e. at the
                                                  same false-alarm rate, 0.27 % for 3

    z = z_σ or z_h, whichever is larger in size; the smallest change flagged is the smaller of
    threshold·u and t_crit(n − 1)·s_h sqrt(1 + 1/n) (`limit`).

Why two: a method's σ holds terms every flight of a vehicle shares (a thrust-curve choice, an
assumed accelerometer bias, a model-structure term), which do not move a comparison between
flights; the history's scatter measures what does (battery, temperature, the log's noise). Where
the history is tighter than σ, it reveals changes σ alone would hide (a T_m up 25 % that σ
flags only from ~90 %); Student's t pays for a short history (t_crit 19.2 with 3 values, 6.6
with 5, 4.1 with 10), so a history that is tight by chance does not cry wolf. The σ test keeps
catching changes where the history is short or loose.

A flagged value does not join the baseline, so a step change stays flagged on every later
flight instead of being absorbed. A *drift* is the trailing run of flagged values of one sign
that reaches the vehicle's latest flight: "tm up 25 % since 2026-03-14: check
motors/propellers", the change being the mean of the run against m. A flagged value followed by
unflagged ones is an *outlier* (one odd flight, often a bad log), listed but not a drift.
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


#: A history whose spread is below this share of its σ (identical or assumed values, rounding)
#: measures no scatter: only the σ test applies to it.
HISTORY_FLOOR = 1e-4


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
    """Baseline mean, σ test's scatter and u, history scatter, z, smallest change flagged and flag
    of each value of one (vehicle, method, parameter) history in date order: the recurrence of
    the module docstring (flagged values stay out of the baseline)."""
    from scipy import special

    n = len(x)
    mean, scatter, dev, hist, z, limit = (np.full(n, np.nan) for _ in range(6))
    flag = np.zeros(n, dtype=bool)
    base: list[int] = []
    p_false = 2.0 * special.ndtr(-rule.threshold)  # the threshold's two-sided false-alarm rate
    for k in range(n):  # over flights (a handful per vehicle), not samples
        if len(base) >= rule.min_history and np.isfinite(x[k]):
            xb, sb = x[base], s[base]
            nb = len(base)
            sig = np.sqrt(np.nanmean(sb**2)) if np.isfinite(sb).any() else 0.0
            sh = float(np.std(xb, ddof=1))
            sc = max(sh, float(sig))
            u = math.hypot(max(s[k], sc) if np.isfinite(s[k]) else sc, sc / math.sqrt(nb))
            mean[k], scatter[k], dev[k], hist[k] = xb.mean(), sc, u, sh
            d = x[k] - mean[k]
            z[k] = d / u if u > 0 else (0.0 if d == 0 else math.copysign(math.inf, d))
            limit[k] = rule.threshold * u
            if sh > HISTORY_FLOOR * sig:
                uh = sh * math.sqrt(1.0 + 1.0 / nb)
                p = 2.0 * float(special.stdtr(nb - 1, -abs(d) / uh))
                zh = math.copysign(-float(special.ndtri(p / 2.0)), d) if p > 0 else math.copysign(math.inf, d)
                z[k] = zh if abs(zh) > abs(z[k]) else z[k]
                limit[k] = min(limit[k], float(special.stdtrit(nb - 1, 1.0 - p_false / 2.0)) * uh)
            flag[k] = abs(z[k]) > rule.threshold
        if not flag[k] and np.isfinite(x[k]):
            base.append(k)
    return mean, scatter, dev, hist, z, limit, flag


def assess(table: pd.DataFrame, rule: DriftRule | None = None) -> tuple[pd.DataFrame, list[Finding]]:
    """Apply the drift rule to every (vehicle, method, parameter) history of `collect`'s table:
    returns the table with `baseline` (m), `scatter` (s), `dev_std` (u), `hist_std` (s_h), `z`,
    `limit` (the smallest change flagged) and `flagged` columns (NaN/False where the history is
    too short) and the findings, drifts first."""
    from rotorid.report.html import pretty_unit, symbol

    rule = rule or DriftRule()
    t = table.sort_values(["vehicle", "method", "parameter", "date", "row"], kind="stable", ignore_index=True)
    cols = {k: np.full(len(t), np.nan) for k in ("baseline", "scatter", "dev_std", "hist_std", "z", "limit")}
    flagged = np.zeros(len(t), dtype=bool)
    findings: list[Finding] = []
    for (veh, method, par), idx in t.groupby(["vehicle", "method", "parameter"], sort=False).indices.items():
        x, s = t["value"].to_numpy()[idx], t["std"].to_numpy()[idx]
        m, sc, u, sh, z, lim, f = _z_scores(x, s, rule)
        for k, v in zip(cols, (m, sc, u, sh, z, lim), strict=True):
            cols[k][idx] = v
        flagged[idx] = f
        dates = t["date"].to_numpy()[idx]
        unit = str(t["unit"].iloc[idx[0]])
        for kind, run in _runs(f, z):
            first = run[0]
            mu = float(np.mean(x[run]))
            zmax = float(z[run][np.argmax(np.abs(z[run]))])
            label = _label(dates[first])
            spread = min(sc[first], sh[first]) if sh[first] > 0 else sc[first]
            change = _change_words(symbol(par), mu, m[first], spread, pretty_unit(unit))
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
