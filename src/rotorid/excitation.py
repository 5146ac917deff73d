"""How much a flight excites each axis: the measures `rotorid info`, the simulator tests and
the reports use to say which manoeuvre is missing.

For one `Flight`:

- **on ground / flying spans** — from `landed` when the log has it, else from the motors and
  the IMU together (`flying_mask`): the collective command c(t) = mean over motors of `cmd`
  (or `rotor_speed`) near the log's own idle, below 30 % of the way to its hover level
  (`motors_low`), is on the ground only where the IMU also rests (|f_s| ≈ g, rates ≈ 0,
  `resting`); a throttle cut in the air (flips, dives) stays flying. Spans shorter than
  `min_span` s are merged into their neighbours so a brief dip in the air is not a landing.
- **roll, pitch, yaw** — RMS over the flying samples of the body angular acceleration,
  the time derivative of the gyro after a zero-phase Butterworth low-pass at `cutoff` Hz
  (`rotorid.signal`), in rad/s².
- **thrust** — relative RMS variation of the collective command over the flying samples,
  std(c)/mean(c) (dimensionless).

Verdicts use `THRESHOLDS`: a measure ≥ the first number is "excited", ≥ the second "weak",
below "none"; "n/a" when the channel is missing. The defaults suit small and mid-size
multirotors (what they give on the paper's Crazyflie windows is in docs/validation.md). Pass
your own thresholds for a much larger vehicle, whose angular accelerations are smaller.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.errors import ExcitationError, RotoridError, WindowError
from rotorid.flight import RATE_TOLERANCE, Flight
from rotorid.signal import butter_filtfilt, derivative, runs

if TYPE_CHECKING:
    from rotorid.vehicle import Vehicle

AXES = ("roll", "pitch", "yaw", "thrust")
#: axis -> (excited at or above, weak at or above); rad/s² for rotations, std/mean for thrust.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "roll": (20.0, 5.0),
    "pitch": (20.0, 5.0),
    "yaw": (5.0, 1.0),
    "thrust": (0.05, 0.01),
}
UNITS = {"roll": "rad/s^2", "pitch": "rad/s^2", "yaw": "rad/s^2", "thrust": "std/mean"}
#: The arm (centre to rotor axis, m) `THRESHOLDS` are tuned for: the Crazyflie 2.1's.
REF_ARM = 0.0396


def thresholds_for(
    vehicle: Vehicle | None = None, overrides: dict[str, tuple[float, float]] | None = None
) -> dict[str, tuple[float, float]]:
    """`THRESHOLDS` for `vehicle`: the angular accelerations a multirotor reaches scale like
    thrust·arm / inertia ∝ 1/arm for similar proportions (inertia ∝ mass·arm²), so the
    rotational thresholds are multiplied by `REF_ARM` / (the vehicle's mean arm); thrust
    (std/mean, dimensionless) is unchanged. `overrides` (axis -> (excited, weak)) win."""
    out = dict(THRESHOLDS)
    if vehicle is not None:
        k = REF_ARM / float(np.mean(np.linalg.norm(vehicle.positions[:, :2], axis=1)))
        out |= {a: (hi * k, lo * k) for a, (hi, lo) in THRESHOLDS.items() if a != "thrust"}
    for axis, (hi, lo) in (overrides or {}).items():
        if axis not in THRESHOLDS:
            raise RotoridError(f"unknown excitation axis '{axis}'; choose {', '.join(AXES)}")
        if not hi >= lo >= 0:
            raise RotoridError(f"excitation threshold {axis}={hi:g},{lo:g}: need excited >= weak >= 0")
        out[axis] = (float(hi), float(lo))
    return out


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
    flying_from: str  # "landed", "cmd+imu", "cmd", "rotor_speed+imu", "rotor_speed" or "none" (all flying)
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


def motors_low(flight: Flight, threshold: float = 0.3) -> tuple[np.ndarray | None, str]:
    """Per-sample True while the collective command c(t) is near the log's own idle: below
    lo + `threshold`·(hover − lo), lo the idle level (0, or the 1st percentile for PWM µs
    commands, which idle well above 0) and hover the median of c where it is above
    lo + 0.1·(max − lo). Relative to the hover level, not the range: a 5-inch racer hovers
    at 20–30 % of its range, a Crazyflie near 60 %. None when the log has no motor channel."""
    c, src = collective(flight)
    if c is None:
        return None, src
    pwm = src == "cmd" and flight.meta.get("units", {}).get("cmd") == "pwm_us"
    lo = float(np.percentile(c, 1)) if pwm else min(0.0, float(c.min()))
    hi = float(c.max())
    if not hi > lo:
        return np.ones(len(c), dtype=bool), src
    hover = float(np.median(c[c > lo + 0.1 * (hi - lo)]))
    return c <= lo + threshold * (hover - lo), src


def resting(flight: Flight, span: float = 0.5, tol: float = 0.1, max_rate: float = 0.2) -> np.ndarray | None:
    """Per-sample True where the IMU says the vehicle sits still on the ground: over a moving
    `span` s the mean specific force has a norm within `tol`·g of g and the mean body rate a
    norm below `max_rate` rad/s. Vibration averages out of the means; free fall, dives and
    flips (|f_s| far from g) and turns (rates) do not. None without accelerometer or gyro."""
    from rotorid.frames import GRAVITY

    if flight.acc is None or flight.gyro is None or len(flight.t) < 2:
        return None
    n = max(2, round(span * flight.rate))
    f = np.linalg.norm(_moving_mean(flight.acc, n), axis=1)
    w = np.linalg.norm(_moving_mean(flight.gyro, n), axis=1)
    return (np.abs(f - GRAVITY) <= tol * GRAVITY) & (w <= max_rate)


def flying_mask(
    flight: Flight, threshold: float = 0.3, min_span: float = 0.5, min_rest: float = 1.0
) -> tuple[np.ndarray, str]:
    """Per-sample True while flying (read-only), and what decided it ('landed', 'cmd+imu',
    'cmd', 'rotor_speed+imu', 'rotor_speed' or 'none' — then every sample counts as flying).
    Worked out once per flight object and arguments (`_cached`): `info`, the app and `identify`
    ask it of the same flight for every role and measure.

    A logged `landed` state decides alone. Otherwise the motors and the IMU together: a run
    of samples with the motors near idle (`motors_low`) is on the ground when the IMU rests
    (`resting`) for at least `min_rest` s of it (or half of it, when shorter), so the
    take-off and landing transients belong to the ground run around them; a run where the
    IMU never rests is a throttle cut in the air (flips, dives, free fall). Without an IMU,
    every motors-low run is on the ground. Then `_merge_short` with `min_span`."""
    return _cached(
        _FLYING, flight, (threshold, min_span, min_rest), lambda: _flying(flight, threshold, min_span, min_rest)
    )


def _flying(flight: Flight, threshold: float, min_span: float, min_rest: float) -> tuple[np.ndarray, str]:
    if flight.landed is not None:
        return _merge_short(flight.t, ~flight.landed, min_span), "landed"
    low, src = motors_low(flight, threshold)
    if low is None:
        return np.ones(len(flight.t), dtype=bool), "none"
    rest = resting(flight)
    ground = low.copy()
    if rest is not None:
        src += "+imu"
        dt = np.gradient(flight.t)
        quiet = np.concatenate([[0.0], np.cumsum(np.where(rest, dt, 0.0))])
        for a, b in zip(*runs(low), strict=True):  # one loop over runs, not samples
            if quiet[b] - quiet[a] < min(min_rest, 0.5 * (flight.t[b - 1] - flight.t[a])):
                ground[a:b] = False
    return _merge_short(flight.t, ~ground, min_span), src


def spans(t: np.ndarray, mask: np.ndarray) -> list[tuple[float, float]]:
    """(start, end) times of the runs of True in `mask`."""
    a, b = runs(mask)
    return [(float(t[i]), float(t[j - 1])) for i, j in zip(a, b, strict=True)]


#: Per flight object (dropped when the flight is; `_cached`): (id, cutoff) -> its angular
#: acceleration; (id, threshold, min_span, min_rest) -> its flying mask.
_ANGULAR: dict[tuple[Any, ...], np.ndarray] = {}
_FLYING: dict[tuple[Any, ...], tuple[np.ndarray, str]] = {}
_CACHE_LOCK = threading.Lock()


def _cached(store: dict[tuple[Any, ...], Any], flight: Flight, key: tuple[Any, ...], compute: Any) -> Any:
    """`compute()` once per flight object and `key`, its arrays made read-only, kept in `store`
    while the flight lives (a finalizer drops it with the flight, so an id is never reused)."""
    full = (id(flight), *key)
    with _CACHE_LOCK:
        hit = store.get(full)
    if hit is not None:
        return hit
    value = compute()
    for a in value if isinstance(value, tuple) else (value,):
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
    with _CACHE_LOCK:
        store[full] = value
    weakref.finalize(flight, store.pop, full, None)
    return value


def angular_acceleration(flight: Flight, cutoff: float = 20.0) -> np.ndarray:
    """Body angular acceleration (rad/s², (N, 3), read-only): the derivative of the gyro after a
    zero-phase Butterworth low-pass at `cutoff` Hz (capped at 0.4× the sample rate).

    Computed once per flight object and cutoff (`_cached`), and kept while the flight lives:
    `info`, the app and `identify` measure the same flight for several purposes (verdicts,
    activity, role windows, role checks), and the filter is most of their cost on a long log."""
    flight.require("gyro")

    def compute() -> np.ndarray:
        fc = min(cutoff, 0.4 * flight.rate)
        return derivative(butter_filtfilt(flight.gyro, flight.rate, fc), flight.t)

    return _cached(_ANGULAR, flight, (float(cutoff),), compute)


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


# -- windows found for the user ------------------------------------------------------------------
ROLES = ("thrust", "roll_pitch", "yaw", "online")


@dataclass(frozen=True)
class Window:
    """A proposed window of one flight for one role, with its measured excitation (the role's
    measure over the window, in `unit`) and the threshold it was held against."""

    role: str
    t0: float
    t1: float
    measure: float
    unit: str
    threshold: float
    #: the role's excitation over the window against its 'excited' threshold, as `check_role`
    #: judges it (the smallest of the role's axes, measure / excited; ≥ 1: excited), set by
    #: `log_windows`; NaN for `online` or when not judged.
    score: float = float("nan")


def _moving_mean(x: np.ndarray, n: int) -> np.ndarray:
    """Centred moving average over `n` samples along the first axis (edges use the samples
    available), from one cumulative sum: the interior by two slices, the few edge samples apart,
    so an hour at 1 kHz costs a few passes over memory."""
    m, lo, hi = len(x), n // 2, n - n // 2  # sample i averages [i - lo, i + hi) within [0, m)
    c = np.zeros((m + 1, *x.shape[1:]))
    np.cumsum(x, axis=0, out=c[1:])
    out = np.empty(c[1:].shape)
    if m + 1 > n:  # the interior: whole windows of n samples
        out[lo : m + 1 - hi] = (c[n:] - c[: m + 1 - n]) / n
    edge = np.r_[0 : min(lo, m), max(m + 1 - hi, min(lo, m)) : m]
    a, b = np.maximum(edge - lo, 0), np.minimum(edge + hi, m)
    out[edge] = (c[b] - c[a]) / (b - a).reshape(-1, *[1] * (x.ndim - 1))
    return out


def role_signal(flight: Flight, role: str, span: float = 2.0, cutoff: float = 20.0) -> tuple[np.ndarray, str]:
    """Per-sample excitation of `role` over a moving `span` s: thrust — moving std/mean of the
    collective command; roll_pitch — moving RMS of the smaller of the roll and pitch angular
    accelerations (both must move); yaw — moving RMS of the yaw angular acceleration (rad/s²)."""
    n = max(2, round(span * flight.rate))
    if role == "thrust":
        c, _ = collective(flight)
        if c is None:
            flight.require("cmd")
        m = _moving_mean(c, n)
        return np.sqrt(np.maximum(_moving_mean(c**2, n) - m**2, 0.0)) / np.where(m > 0, m, np.inf), UNITS["thrust"]
    wd2 = _moving_mean(angular_acceleration(flight, cutoff) ** 2, n)
    return (np.sqrt(np.minimum(wd2[:, 0], wd2[:, 1])) if role == "roll_pitch" else np.sqrt(wd2[:, 2])), UNITS["yaw"]


def propose_windows(
    flight: Flight,
    role: str,
    margin: float = 1.0,
    min_length: float = 2.0,
    factor: float = 0.5,
    threshold: float | None = None,
    span: float = 2.0,
    max_gap: float = 5.0,
) -> list[Window]:
    """Windows for `role` (`ROLES`): inside the flying spans, `margin` s away from take-off
    and landing (ground contact is not in the models; a log that starts or ends in the air
    needs no margin there), where the role's moving excitation
    (`role_signal`) is at least `threshold` — by default `factor` times its median over this
    flight's flying samples, so the threshold scales with the vehicle (a large vehicle's
    angular accelerations are smaller), and `margin` s away from a saturated sensor
    (`meta["saturated"]`, e.g. a crash). Excited runs less than `max_gap` s apart are joined;
    windows shorter than `min_length` s are dropped; in time order. `online` gets the first
    flight from `margin` s before take-off (its estimator switches on at take-off)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    if len(flight.t) < 3:  # a piece of 1-2 samples (a log cut by power loss) holds no window
        return []
    fly, _ = flying_mask(flight)
    t = flight.t
    if role == "online":
        a, b = runs(fly)
        if not len(a):
            return []
        t0 = float(t[max(int(a[0]) - round(margin * flight.rate), 0)])
        return [Window(role, t0, float(t[b[0] - 1]), float(t[b[0] - 1] - t[a[0]]), "s flying", min_length)]
    sig, unit = role_signal(flight, role, span)
    inner = fly.copy()
    for a, b in zip(*runs(fly), strict=True):  # a margin where the span meets the ground, not the log's ends
        lo = t[a] + (margin if a > 0 else 0.0)
        hi = t[b - 1] - (margin if b < len(t) else 0.0)
        inner[a:b] &= (t[a:b] >= lo) & (t[a:b] <= hi)
    for a, b in flight.meta.get("saturated", []):  # a clipped sensor (a crash, a flip too fast) is not in the models
        inner &= (t < a - margin) | (t > b + margin)
    if not inner.any():
        return []
    thr = factor * float(np.median(sig[inner])) if threshold is None else threshold
    excited = inner & (sig >= thr)
    gap_a, gap_b = runs(inner & ~excited)
    for a, b in zip(gap_a, gap_b, strict=True):  # join excited runs across short dips
        if a > 0 and b < len(t) and excited[a - 1] and excited[b] and t[b] - t[a - 1] < max_gap:
            excited[a:b] = True
    out = []
    for a, b in zip(*runs(excited), strict=True):
        if t[b - 1] - t[a] >= min_length:
            out.append(Window(role, float(t[a]), float(t[b - 1]), float(np.sqrt(np.mean(sig[a:b] ** 2))), unit, thr))
    return out


def correct_window(flight: Flight, t0: float, t1: float, margin: float = 1.0) -> tuple[float, float] | None:
    """The longest flying part of [t0, t1] kept `margin` s away from ground contact, or None
    when [t0, t1] has no ground contact (nothing to correct). Raises `WindowError` when no
    flying part of at least 2·margin remains."""
    fly, _ = flying_mask(flight)
    t = flight.t
    sel = (t >= t0) & (t <= t1)
    if fly[sel].all():
        return None
    best = None
    for a, b in zip(*runs(fly & sel), strict=True):
        lo = t[a] + (margin if a > 0 and not fly[a - 1] else 0.0)
        hi = t[b - 1] - (margin if b < len(t) and not fly[b] else 0.0)
        if hi - lo > 0 and (best is None or hi - lo > best[1] - best[0]):
            best = (float(lo), float(hi))
    if best is None:
        raise WindowError(
            f"{flight.meta.get('source', 'flight')}: window {t0:g}:{t1:g} s is on the ground (flying spans: "
            f"{', '.join(f'{a:.1f}-{b:.1f}' for a, b in spans(t, fly)) or 'none'}); choose a window inside one"
        )
    return best


#: The excitation each role's flight must have: role -> the axes whose smallest verdict counts.
ROLE_AXES = {"thrust": ("thrust",), "roll_pitch": ("roll", "pitch"), "yaw": ("yaw",)}
ROLE_WORDS = {"thrust": "thrust", "roll_pitch": "roll/pitch", "yaw": "yaw", "online": "online"}


def check_role(flight: Flight, role: str, thresholds: dict[str, tuple[float, float]] = THRESHOLDS) -> str | None:
    """Whether `flight` has the excitation its `role` needs (`ROLE_AXES`, the flight's own
    `measure`): an `ExcitationError` when it is 'none', naming what was measured and the
    threshold; a warning text when only 'weak' (saying which other role it looks like, e.g.
    swapped roll/pitch and yaw flights); None when excited or not checkable (channel missing)."""
    e = measure(flight, thresholds=thresholds)
    axis = min(ROLE_AXES[role], key=lambda a: e.axes[a].value / thresholds[a][0])
    m = e.axes[axis]
    if m.verdict in ("excited", "n/a"):
        return None
    hi, lo = thresholds[axis]
    said = (
        f"{flight.source} ({flight.t[0]:.2f}–{flight.t[-1]:.2f} s): the {ROLE_WORDS[role]} flight excites {axis} only {m.value:.3g} {m.unit} "
        f"(excited >= {hi:.3g}, weak >= {lo:.3g} for this vehicle)"
    )
    other = [  # thrust last: every manoeuvre moves the collective
        r
        for r in ("roll_pitch", "yaw", "thrust")
        if r != role and all(e.axes[a].verdict == "excited" for a in ROLE_AXES[r])
    ]
    looks = f"; it looks like a {ROLE_WORDS[other[0]]} flight — are the flights swapped?" if other else ""
    if m.verdict == "none":
        raise ExcitationError(f"{said}{looks}; give the window where the {ROLE_WORDS[role]} manoeuvre is flown")
    return f"{said}{looks}"


def window_score(
    flight: Flight, window: Window, thresholds: dict[str, tuple[float, float]] = THRESHOLDS, cutoff: float = 20.0
) -> float:
    """`Window.score`: the smallest over the role's axes (`ROLE_AXES`) of the axis' `measure`
    over the window's samples divided by its 'excited' threshold, from the flight's own angular
    acceleration (no new filtering) and collective command."""
    if window.role not in ROLE_AXES:
        return float("nan")
    sel = slice(np.searchsorted(flight.t, window.t0, "left"), np.searchsorted(flight.t, window.t1, "right"))
    values = {}
    if flight.gyro is not None:
        rms = np.sqrt(np.mean(angular_acceleration(flight, cutoff)[sel] ** 2, axis=0))
        values = dict(zip(AXES[:3], rms.tolist(), strict=True))
    c, _ = collective(flight)
    if c is not None and np.mean(c[sel]) > 0:
        values["thrust"] = float(np.std(c[sel]) / np.mean(c[sel]))
    return min(values.get(a, float("nan")) / thresholds[a][0] for a in ROLE_AXES[window.role])


def log_windows(
    flights: list[Flight], thresholds: dict[str, tuple[float, float]] = THRESHOLDS
) -> dict[str, list[Window]]:
    """`propose_windows` for every role over the pieces of one log (online: the first flight),
    each with its `score` against `thresholds`; none for a role whose channel a piece lacks
    (thrust: motor commands or rotor speeds; roll/pitch and yaw: gyro)."""
    has = {"thrust": lambda f: collective(f)[0] is not None, "online": lambda f: True}
    found = {
        role: [
            replace(w, score=window_score(f, w, thresholds))
            for f in flights
            if has.get(role, lambda f: f.gyro is not None)(f)
            for w in propose_windows(f, role)
        ]
        for role in ROLES
    }
    found["online"] = found["online"][:1]
    return found


def excited_windows(windows: list[Window]) -> list[Window]:
    """The windows whose role is excited over them (`Window.score` ≥ 1): what `check_role`
    passes without a warning."""
    return [w for w in windows if w.score >= 1.0]


def assign_roles(found: dict[str, dict[str, list[Window]]]) -> dict[str, list[tuple[str, list[Window]]]]:
    """Which log (`found`: log -> `log_windows`) serves which role, with its windows: only the
    windows where the role is excited (`excited_windows`, the criterion `check_role` applies
    when `rotorid identify` reads them), so the assignment is never contradicted. With several
    logs each goes to the one of roll/pitch and yaw it excites most (the best `score`; the
    Eschmann flights: one manoeuvre per flight), a single log to every role it excites.
    Thrust: the excited logs that serve neither, else every excited log. Online: the first log
    with a flight."""
    rot = ("roll_pitch", "yaw")
    out: dict[str, list[tuple[str, list[Window]]]] = {r: [] for r in ROLES}
    for log, ws in found.items():
        score = {r: max((w.score for w in excited_windows(ws[r])), default=0.0) for r in rot}
        if len(found) == 1:
            mine = [r for r in rot if score[r] >= 1.0]
        else:
            best = max(rot, key=lambda r: score[r])
            mine = [best] if score[best] >= 1.0 else []
        for r in mine:
            out[r].append((log, excited_windows(ws[r])))
        if ws["online"] and not out["online"]:
            out["online"].append((log, ws["online"]))
    busy = {log for r in rot for log, _ in out[r]}
    pumped = [(log, ok) for log, ws in found.items() if (ok := excited_windows(ws["thrust"]))]
    out["thrust"] = [p for p in pumped if p[0] not in busy] or pumped
    return out


# -- what `rotorid info` judges ------------------------------------------------------------------
@dataclass(frozen=True)
class RateVerdict:
    """One channel against one method's minimum rate; `fix` is the reader's advice (e.g. PX4's
    SDLOG_PROFILE) when too slow, else empty."""

    channel: str
    topic: str
    rate_hz: float
    method: str
    min_hz: float
    ok: bool
    fix: str


@dataclass(frozen=True)
class SegmentRow:
    """One piece of a log split at drop-outs: one row of a compact table."""

    index: int
    t0: float
    t1: float
    rate_hz: float
    flying_time: float
    verdicts: dict[str, str]
    excitation: Excitation


@dataclass(frozen=True)
class InfoJudgement:
    """Rates against every method, whether the vehicle ever armed and flew (in words), and one
    row per segment."""

    rates: list[RateVerdict]
    activity: str
    segments: list[SegmentRow]

    @property
    def too_slow(self) -> list[RateVerdict]:
        return [r for r in self.rates if not r.ok]


def activity(flights: list[Flight], measures: list[Excitation] | None = None) -> str:
    """'never armed', 'armed but never flew' or how long it flew, in words, over all segments
    (`measures`: the flights' `measure`, when the caller has them)."""
    cs = [c for c, _ in map(collective, flights) if c is not None]
    if not cs and all(f.landed is None for f in flights):
        return "cannot tell whether it flew: no motor commands, rotor speeds or landed state in the log"
    if cs and all(f.landed is None for f in flights):
        c = np.concatenate(cs)
        if float(np.ptp(c)) <= 1e-6 * max(1.0, float(np.max(np.abs(c)))):
            return f"never armed: the motors stay at {float(c[0]):g} for the whole log (a bench or ground log?)"
    ex = measures if measures is not None else [measure(f) for f in flights]
    total = sum(e.flying_time for e in ex)
    n = sum(len(e.flying) for e in ex)
    if n == 0:
        return "armed but never flew: the motors never rose to take-off (no flying span)"
    return f"flew {total:.1f} s in {n} span{'s' if n > 1 else ''}"


def judge(
    flights: list[Flight],
    min_rates: dict[str, float],
    channels: dict[str, tuple[str, ...]] | None = None,
    thresholds: dict[str, tuple[float, float]] = THRESHOLDS,
) -> InfoJudgement:
    """What `rotorid info` says about a log (its segments `flights`): each motion channel's
    original rate (slowest segment) against the minimum (`min_rates`, method -> `MIN_RATE_HZ`)
    of each method that reads it (`channels`, method -> channel names; default: each registered
    method's `MethodSpec.channels`), with the reader's fix when too slow; `activity`; and one
    `SegmentRow` per segment (excitation verdicts by `thresholds`)."""
    if channels is None:
        from rotorid.registry import methods

        channels = {m.name: m.channels for m in methods().values()}
    rates: list[RateVerdict] = []
    first = flights[0]
    for method, lo in min_rates.items():
        for ch in channels.get(method, ()):
            have = [f for f in flights if getattr(f, ch) is not None]
            if not have:
                continue
            r = min(float(f.meta.get("rates", {}).get(ch, f.rate)) for f in have)
            topic = str(first.meta.get("topics", {}).get(ch, ""))
            ok = r >= lo * (1.0 - RATE_TOLERANCE)  # as `Flight.require_rate`
            fix = "" if ok else str(first.meta.get("rate_hint", "log it faster"))
            rates.append(RateVerdict(ch, topic, r, method, float(lo), ok, fix))
    ex = [measure(f, thresholds=thresholds) for f in flights]
    rows = [
        SegmentRow(i + 1, float(f.t[0]), float(f.t[-1]), f.rate, e.flying_time, e.verdicts, e)
        for i, (f, e) in enumerate(zip(flights, ex, strict=True))
    ]
    return InfoJudgement(rates, activity(flights, ex), rows)
