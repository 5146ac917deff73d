"""How much a flight excites each axis: the measures `rotorid info`, the simulator tests and
the reports use to say which manoeuvre is missing.

For one `Flight`:

- **on ground / flying spans** — from `landed` when the log has it, else from the collective
  command c(t) = mean over motors of `cmd` (or `rotor_speed`): flying while
  c > lo + `threshold`·(hi − lo), with hi = max c and lo = 0 (lo = 1st percentile for PWM µs
  commands, which idle well above 0). Spans shorter than `min_span` s are merged into their
  neighbours so a brief dip in the air is not a landing.
- **roll, pitch, yaw** — RMS over the flying samples of the body angular acceleration,
  the time derivative of the gyro after a zero-phase Butterworth low-pass at `cutoff` Hz
  (`rotorid.signal`), in rad/s².
- **thrust** — relative RMS variation of the collective command over the flying samples,
  std(c)/mean(c) (dimensionless).

Verdicts use `THRESHOLDS`: a measure ≥ the first number is "excited", ≥ the second "weak",
below "none"; "n/a" when the channel is missing. The defaults suit small and mid-size
multirotors. On the Crazyflie logs of Eschmann et al. (windows of the paper) they give:
roll/pitch window log15@55:90 — roll 43, pitch 35 rad/s² (excited); yaw windows
log16@32:38 and @45:49 — yaw 21–22 rad/s² (excited), roll/pitch 9–12 (weak); thrust window
log10@35:65 — thrust 0.28 (excited), yaw 1.4 rad/s² (weak). Pass your own thresholds for a
much larger vehicle, whose angular accelerations are smaller.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rotorid.flight import Flight
from rotorid.signal import butter_filtfilt, derivative, runs

AXES = ("roll", "pitch", "yaw", "thrust")
#: axis -> (excited at or above, weak at or above); rad/s² for rotations, std/mean for thrust.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "roll": (20.0, 5.0),
    "pitch": (20.0, 5.0),
    "yaw": (5.0, 1.0),
    "thrust": (0.05, 0.01),
}
UNITS = {"roll": "rad/s^2", "pitch": "rad/s^2", "yaw": "rad/s^2", "thrust": "std/mean"}


@dataclass(frozen=True)
class AxisMeasure:
    """One axis: its measure (NaN when the channel is missing), unit and verdict."""

    value: float
    unit: str
    verdict: str


@dataclass(frozen=True)
class Excitation:
    """Excitation of one flight (see the module docstring for the definitions)."""

    duration: float
    flying: list[tuple[float, float]]
    ground: list[tuple[float, float]]
    flying_time: float
    flying_from: str  # "landed", "cmd", "rotor_speed" or "none" (then the whole flight counts)
    axes: dict[str, AxisMeasure]

    @property
    def verdicts(self) -> dict[str, str]:
        return {a: m.verdict for a, m in self.axes.items()}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict(axis: str, value: float, thresholds: dict[str, tuple[float, float]] = THRESHOLDS) -> str:
    """'excited', 'weak' or 'none' for a measure on `axis`; 'n/a' for NaN."""
    if not np.isfinite(value):
        return "n/a"
    hi, lo = thresholds[axis]
    return "excited" if value >= hi else "weak" if value >= lo else "none"


def collective(flight: Flight) -> tuple[np.ndarray | None, str]:
    """Mean motor command per sample (else mean rotor speed) and which channel it came from."""
    for ch in ("cmd", "rotor_speed"):
        v = getattr(flight, ch)
        if v is not None:
            return v.mean(axis=1), ch
    return None, "none"


def _merge_short(t: np.ndarray, mask: np.ndarray, min_span: float) -> np.ndarray:
    """Fill ground runs shorter than `min_span` between flying ones, then drop flying runs
    shorter than `min_span` (one loop over runs, not samples)."""
    mask = mask.copy()
    starts, ends = runs(~mask)
    for a, b in zip(starts, ends, strict=True):
        if a > 0 and b < len(t) and t[b - 1] - t[a] < min_span:
            mask[a:b] = True
    starts, ends = runs(mask)
    for a, b in zip(starts, ends, strict=True):
        if t[b - 1] - t[a] < min_span:
            mask[a:b] = False
    return mask


def flying_mask(flight: Flight, threshold: float = 0.3, min_span: float = 0.5) -> tuple[np.ndarray, str]:
    """Per-sample True while flying, and what decided it ('landed', 'cmd', 'rotor_speed' or
    'none' — then every sample counts as flying)."""
    if flight.landed is not None:
        return _merge_short(flight.t, ~flight.landed, min_span), "landed"
    c, src = collective(flight)
    if c is None:
        return np.ones(len(flight.t), dtype=bool), "none"
    pwm = src == "cmd" and flight.meta.get("units", {}).get("cmd") == "pwm_us"
    lo = float(np.percentile(c, 1)) if pwm else min(0.0, float(c.min()))
    hi = float(c.max())
    if not hi > lo:
        return np.zeros(len(c), dtype=bool), src
    return _merge_short(flight.t, c > lo + threshold * (hi - lo), min_span), src


def spans(t: np.ndarray, mask: np.ndarray) -> list[tuple[float, float]]:
    """(start, end) times of the runs of True in `mask`."""
    a, b = runs(mask)
    return [(float(t[i]), float(t[j - 1])) for i, j in zip(a, b, strict=True)]


def angular_acceleration(flight: Flight, cutoff: float = 20.0) -> np.ndarray:
    """Body angular acceleration (rad/s², (N, 3)): the derivative of the gyro after a
    zero-phase Butterworth low-pass at `cutoff` Hz (capped at 0.4× the sample rate)."""
    flight.require("gyro")
    fc = min(cutoff, 0.4 * flight.rate)
    return derivative(butter_filtfilt(flight.gyro, flight.rate, fc), flight.t)


def measure(
    flight: Flight,
    cutoff: float = 20.0,
    threshold: float = 0.3,
    min_span: float = 0.5,
    thresholds: dict[str, tuple[float, float]] = THRESHOLDS,
) -> Excitation:
    """Duration, flying/ground spans and per-axis excitation with verdicts (module docstring)."""
    fly, src = flying_mask(flight, threshold, min_span)
    use = fly if fly.sum() >= 2 else np.ones_like(fly)
    values = dict.fromkeys(AXES, float("nan"))
    if flight.gyro is not None and len(flight.t) >= 16:
        wd = angular_acceleration(flight, cutoff)[use]
        values.update(zip(AXES[:3], np.sqrt(np.mean(wd**2, axis=0)).tolist(), strict=True))
    c, _ = collective(flight)
    if c is not None and np.mean(c[use]) > 0:
        values["thrust"] = float(np.std(c[use]) / np.mean(c[use]))
    dt = np.diff(flight.t)
    flying_time = float(np.sum(dt[fly[:-1] & fly[1:]]))
    return Excitation(
        duration=flight.duration,
        flying=spans(flight.t, fly),
        ground=spans(flight.t, ~fly),
        flying_time=flying_time,
        flying_from=src,
        axes={a: AxisMeasure(values[a], UNITS[a], verdict(a, values[a], thresholds)) for a in AXES},
    )


def gaps(flight: Flight, factor: float = 5.0) -> list[tuple[float, float]]:
    """Holes in the recording: the reader's aligned-channel gaps (`meta["align"]["gaps"]`)
    plus time steps longer than `factor` median steps, merged and sorted."""
    found = [tuple(g) for g in flight.meta.get("align", {}).get("gaps", [])]
    d = np.diff(flight.t)
    found += [(float(flight.t[i]), float(flight.t[i + 1])) for i in np.flatnonzero(d > factor * np.median(d))]
    merged: list[tuple[float, float]] = []
    for a, b in sorted(found):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
