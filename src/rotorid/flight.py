"""`Flight`: time-aligned channels of one flight in rotorid's conventions.

Body frame FLU, world ENU, SI units, quaternions scalar-first body->world, time in float64
seconds (README "Conventions"). Readers produce per-topic `Series` at their own rates; `align` puts
them on one time grid and reports what it cut.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rotorid.errors import MissingChannelError, RateError, RotoridError, WindowError
from rotorid.frames import slerp

#: A step longer than this (s) in a log's time stamps is a gap: readers split flights there
#: (rotorid.io.guard.split_gaps) rather than bridge it.
MAX_GAP = 0.5
#: Channels put on a common grid by interpolation (`align`) are also split where a channel
#: misses this many of its own sample periods (a topic dropped out while others went on).
GAP_PERIODS = 5.0
#: A uniform grid may hold at most this many samples per sample it is built from (+ GRID_SLACK):
#: decided before allocating, so corrupt time stamps cannot ask for a huge grid.
GRID_FACTOR = 4
GRID_SLACK = 1000
#: `Flight.resample` may upsample at most this much (its grid bound grows with the factor).
UPSAMPLE_MAX = 100.0
#: `meta` keys on how long the log's motor samples hold: not true of resampled samples.
HOLD_KEYS = ("motor_hold", "cmd_hold")
#: How many float spacings (np.spacing of the largest time) a grid time and a stamp of the
#: same instant may differ by. Error budget, each term at most one spacing: the reader's
#: conversion of an integer clock to seconds (the constant and the product round), the grid's
#: start (itself a stamp), the rate from the span (both ends), k/rate and start + k/rate:
#: under 6 spacings; 8 leaves margin. At 1e7 s (a boot clock after four months) that is 15 ns.
STAMP_ULPS = 8
#: `Flight.require_rate` accepts a channel logged this much (relative) below the floor: a log
#: configured for 100 Hz reads as 99.x Hz from its jittered stamps (median interval, clock
#: drift), and a floor is a requirement on the configuration, not on the third digit.
RATE_TOLERANCE = 0.02

#: Channel name -> (columns or None for "M motors", unit, interpolation kind).
CHANNELS: dict[str, tuple[int | None, str, str]] = {
    "acc": (3, "m/s^2", "linear"),
    "gyro": (3, "rad/s", "linear"),
    "gyro_dot": (3, "rad/s^2", "linear"),
    "cmd": (None, "motor input", "hold"),
    "rotor_speed": (None, "rad/s", "linear"),
    "quat": (4, "1", "slerp"),
    "pos": (3, "m", "linear"),
    "vel": (3, "m/s", "linear"),
    "landed": (1, "bool", "hold"),
    "vbat": (1, "V", "linear"),
}
#: Channels held as one column, shape (N,), rather than (N, 1).
FLAT = ("landed", "vbat")


@dataclass(frozen=True)
class Series:
    """One channel as a reader found it: its own time stamps and values."""

    t: np.ndarray
    values: np.ndarray

    @property
    def rate(self) -> float:
        """Sample rate in Hz (0 for fewer than two samples): samples over the span when the
        steps are equal to float resolution (one clock; the median step of large stamps is off
        by a spacing, and a grid at that rate drifts a step off the stamps over a flight),
        else the median rate."""
        if len(self.t) < 2:
            return 0.0
        d = np.diff(self.t)
        with np.errstate(over="ignore", divide="ignore"):  # steps of a few ulp: inf, which the guard refuses
            if float(np.ptp(d)) <= 2.0 * stamp_tolerance(self.t):
                return float((len(self.t) - 1) / (self.t[-1] - self.t[0]))
            return float(1.0 / np.median(d))


@dataclass(frozen=True)
class AlignReport:
    """What `align` did: the common span, gaps found and the fraction of samples dropped."""

    start: float
    end: float
    rate: float
    gaps: list[tuple[float, float]]
    dropped_fraction: dict[str, float]


#: Rounding of the times `rotorid info` prints (two decimals): a window typed from them may
#: overhang the log by this much.
PRINTED_TIME_STEP = 0.005


def stamp_tolerance(*times: np.ndarray) -> float:
    """How far apart (s) two float times of the same instant may lie: STAMP_ULPS spacings of
    the largest magnitude among `times` (their ends: they increase)."""
    scale = max(max(abs(float(t[0])), abs(float(t[-1]))) for t in times if len(t))
    return STAMP_ULPS * float(np.spacing(scale))


def window_slack(rate: float) -> float:
    """How far (s) a window may overhang a log sampled at `rate` Hz and still be clipped to it
    rather than refused: one sample, or the rounding of the times `rotorid info` prints."""
    return max(1.0 / max(rate, 1.0), PRINTED_TIME_STEP)


def _check_times(t: np.ndarray, what: str) -> None:
    if t.ndim != 1 or len(t) == 0:
        raise RotoridError(f"{what}: no samples")
    if not np.all(np.isfinite(t)):
        i = int(np.flatnonzero(~np.isfinite(t))[0])
        raise RotoridError(f"{what}: time stamp {i} is not finite")
    d = np.diff(t)
    if np.any(d <= 0):
        i = int(np.flatnonzero(d <= 0)[0])
        kind = "duplicated" if d[i] == 0 else "non-monotonic"
        raise RotoridError(
            f"{what}: {kind} time stamps at t={t[i]:.6f} s (sample {i + 1}); "
            "time must increase strictly — check the logger's clock or split the log there"
        )


@dataclass(frozen=True)
class Flight:
    """Time-aligned channels of one flight. All channels share `t` (float64 seconds).

    Channels absent from the log are None; `landed` and `vbat` (battery voltage, V) are (N,),
    the others (N, columns). `meta` holds the source file, original rates,
    units, windows and notes; it is carried through every operation. `meta["motor_hold"]` (s),
    where the reader or simulator knows it: how long each motor sample (cmd, rotor_speed) holds
    after its stamp (0: point samples; `rotorid.methods.online.OnlineSettings.motor_hold`);
    `meta["cmd_hold"]` (s) the same of the commands alone (they hold while a lagging rotor's
    speed does not; `rotorid.methods.delay.structure.sample_hold_term`).
    `meta["acc_lowpass"]`, where the firmware filtered the accelerometer before logging it:
    {"kind": "biquad", "hz": cut-off}; a model of the specific force passes through it too.
    """

    t: np.ndarray
    acc: np.ndarray | None = None
    gyro: np.ndarray | None = None
    gyro_dot: np.ndarray | None = None
    cmd: np.ndarray | None = None
    rotor_speed: np.ndarray | None = None
    quat: np.ndarray | None = None
    pos: np.ndarray | None = None
    vel: np.ndarray | None = None
    landed: np.ndarray | None = None
    vbat: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=np.float64)
        object.__setattr__(self, "t", t)
        source = self.meta.get("source", "flight")
        _check_times(t, str(source))
        for name in CHANNELS:
            v = getattr(self, name)
            if v is None:
                continue
            v = np.asarray(v, dtype=bool if name == "landed" else np.float64)
            if name in FLAT and v.ndim == 2 and v.shape[1] == 1:
                v = v[:, 0]
            if name not in FLAT and v.ndim == 1:
                v = v[:, None]
            if v.shape[0] != len(t):
                raise RotoridError(f"{source}: channel '{name}' has {v.shape[0]} samples but t has {len(t)}")
            if name in FLAT and v.ndim != 1:
                raise RotoridError(f"{source}: channel '{name}' needs one column, got {v.shape[1:]}")
            ncol = CHANNELS[name][0]
            if ncol is not None and name not in FLAT and v.shape[1] != ncol:
                raise RotoridError(f"{source}: channel '{name}' needs {ncol} columns, got {v.shape[1]}")
            if name != "landed":
                bad = ~np.isfinite(v.reshape(len(t), -1))
                if bad.any():
                    i = int(np.flatnonzero(bad.any(axis=1))[0])
                    raise RotoridError(
                        f"{source}: channel '{name}' has NaN/inf at t={t[i]:.6f} s "
                        f"(sample {i}); cut it out with a window FILE@t0:t1"
                    )
            object.__setattr__(self, name, v)

    # -- introspection -------------------------------------------------------------------
    @property
    def channels(self) -> list[str]:
        """Names of the channels present."""
        return [c for c in CHANNELS if getattr(self, c) is not None]

    @property
    def n_motors(self) -> int:
        """Number of motor columns (from `cmd`, else `rotor_speed`; 0 if neither)."""
        for c in ("cmd", "rotor_speed"):
            v = getattr(self, c)
            if v is not None:
                return int(v.shape[1])
        return 0

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0])

    @property
    def rate(self) -> float:
        """Median sample rate in Hz."""
        return Series(self.t, self.t).rate

    @property
    def source(self) -> str:
        return str(self.meta.get("source", "flight"))

    @property
    def log_format(self) -> str:
        """The format its flight stack wrote the log in (a converted log's original one)."""
        return str(self.meta.get("original_format", self.meta.get("format", "")))

    def require(self, *channels: str) -> Flight:
        """Return self if every named channel is present, else raise naming the missing ones."""
        missing = [c for c in channels if getattr(self, c, None) is None]
        if missing:
            raise MissingChannelError(
                f"{self.source}: missing channel(s) {', '.join(missing)} "
                f"(has {', '.join(self.channels) or 'none'}); log them or choose another method"
            )
        return self

    def require_rate(self, min_hz: float, *channels: str) -> Flight:
        """Return self if every named channel is present and was logged at >= `min_hz` (its
        original rate, `meta["rates"]`, else the flight's rate) within `RATE_TOLERANCE`; else
        raise `RateError` naming the channel, its source topic (`meta["topics"]`), its rate and
        the reader's advice (`meta["rate_hint"]`)."""
        self.require(*channels)
        rates, topics = self.meta.get("rates", {}), self.meta.get("topics", {})
        for c in channels:
            r = float(rates.get(c, self.rate))
            if r < min_hz * (1.0 - RATE_TOLERANCE):
                topic = f" (topic '{topics[c]}')" if c in topics else ""
                hint = self.meta.get("rate_hint", "log it faster")
                raise RateError(
                    f"{self.source}: channel '{c}'{topic} is logged at {r:.1f} Hz, below the {min_hz:g} Hz "
                    f"this method needs; {hint}"
                )
        return self

    def replace(self, **changes: Any) -> Flight:
        """A copy with some channels (or meta) replaced."""
        return dataclasses.replace(self, **changes)

    # -- slicing -------------------------------------------------------------------------
    def _take(self, idx: np.ndarray | slice, **meta: Any) -> Flight:
        kw = {c: getattr(self, c)[idx] for c in self.channels}
        return Flight(t=self.t[idx], meta={**self.meta, **meta}, **kw)

    def window(self, t0: float, t1: float) -> Flight:
        """Samples with t0 <= t <= t1. A window that overhangs the log by at most
        `window_slack` is clipped to it; one that leaves it further is a `WindowError`."""
        if not t1 > t0:
            raise WindowError(f"{self.source}: window {t0}:{t1} is empty (end must follow start)")
        slack = window_slack(self.rate)
        if t0 < self.t[0] - slack or t1 > self.t[-1] + slack:
            raise WindowError(
                f"{self.source}: window {t0:g}:{t1:g} s lies outside the log "
                f"({self.t[0]:.3f}–{self.t[-1]:.3f} s); run `rotorid info` to see its span"
            )
        i0, i1 = np.searchsorted(self.t, t0, "left"), np.searchsorted(self.t, t1, "right")
        if i1 - i0 < 2:
            raise WindowError(f"{self.source}: window {t0:g}:{t1:g} s holds fewer than 2 samples")
        windows = [*self.meta.get("windows", []), (float(t0), float(t1))]
        return self._take(slice(i0, i1), windows=windows)

    def split_at_gaps(self, max_gap: float) -> list[Flight]:
        """Pieces between time steps longer than `max_gap` seconds (pieces < 2 samples dropped)."""
        cut = np.flatnonzero(np.diff(self.t) > max_gap) + 1
        bounds = np.concatenate([[0], cut, [len(self.t)]])
        return [self._take(slice(a, b)) for a, b in itertools.pairwise(bounds) if b - a >= 2]

    def without(self, intervals: list[tuple[float, float]]) -> list[Flight]:
        """The continuous pieces left after removing the samples strictly inside each
        (t0, t1) interval, e.g. logging drop-outs that alignment would otherwise bridge by
        interpolation (a filter run across them would smear invented data into the fit)."""
        iv = np.asarray(intervals, dtype=float).reshape(-1, 2)
        # +1 where an interval's inside begins, -1 after it ends: a running sum > 0 is inside
        marks = np.zeros(len(self.t) + 1, dtype=np.int64)
        np.add.at(marks, np.searchsorted(self.t, iv[:, 0], side="right"), 1)
        np.add.at(marks, np.searchsorted(self.t, iv[:, 1], side="left"), -1)
        inside = np.cumsum(marks[:-1]) > 0
        if not inside.any():
            return [self]
        edges = np.flatnonzero(np.diff(np.concatenate([[0], (~inside).astype(np.int8), [0]])))
        return [self._take(slice(a, b)) for a, b in zip(edges[::2], edges[1::2], strict=True) if b - a >= 2]

    def resample(self, rate: float | None = None) -> Flight:
        """This flight on a uniform grid at `rate` Hz (default: its median rate).

        Signals are interpolated linearly, commands and `landed` hold the previous value,
        quaternions are interpolated by slerp. `meta["motor_hold"]` and `meta["cmd_hold"]` are
        dropped: the new motor samples do not hold as the log's did.
        """
        rate = rate or self.rate
        bound = len(self.t) * min(max(1.0, rate / self.rate), UPSAMPLE_MAX)
        n = grid_size(self.duration, rate, bound, self.source, tol=stamp_tolerance(self.t))
        t = self.t[0] + np.arange(n) / rate
        series = {c: Series(self.t, getattr(self, c)) for c in self.channels}
        kw = {c: _interp(s, t, CHANNELS[c][2]) for c, s in series.items()}
        meta = {k: v for k, v in self.meta.items() if k not in HOLD_KEYS}  # the new samples' hold is not the log's
        return Flight(t=t, meta={**meta, "resampled_hz": rate}, **kw)


def _interp(s: Series, t: np.ndarray, kind: str) -> np.ndarray:
    """Values of `s` at times `t` (inside its span) by the given interpolation kind."""
    v = s.values
    if kind == "hold":  # a grid time a few float steps before a stamp is at that stamp
        idx = np.searchsorted(s.t, t + stamp_tolerance(t), side="right") - 1  # at the grid's magnitude
        return v[np.clip(idx, 0, len(s.t) - 1)]
    if kind == "slerp":
        return slerp(s.t, v, np.clip(t, s.t[0], s.t[-1]))
    v2 = v if v.ndim == 2 else v[:, None]
    out = np.empty((len(t), v2.shape[1]))
    for j in range(v2.shape[1]):  # columns, not samples
        out[:, j] = np.interp(t, s.t, v2[:, j])
    return out


def align(
    series: dict[str, Series],
    rate: float | None = None,
    meta: dict[str, Any] | None = None,
    max_gap: float | None = None,
) -> tuple[Flight, AlignReport]:
    """Put per-topic series on one uniform grid over their common span.

    `rate` defaults to the fastest channel's rate. Gaps longer than `max_gap` (default
    5 sample periods of the slowest channel) in any channel are reported; the caller may
    split the flight there. Returns the flight and a report of the cut.
    """
    t, meta, report = align_grid(series, rate, meta, max_gap)
    return Flight(t=t, meta=meta, **on_grid(series, t)), report


def align_grid(
    series: dict[str, Series],
    rate: float | None = None,
    meta: dict[str, Any] | None = None,
    max_gap: float | None = None,
) -> tuple[np.ndarray, dict[str, Any], AlignReport]:
    """`align`'s grid, meta and report, from the series' time stamps alone (their values are
    not read: a flight produced in pieces puts each piece on the grid with `on_grid`)."""
    meta = dict(meta or {})
    if not series:
        raise RotoridError(f"{meta.get('source', 'log')}: no channels to align")
    for name, s in series.items():
        _check_times(s.t, f"{meta.get('source', 'log')}: channel {name}")
    start = max(float(s.t[0]) for s in series.values())
    end = min(float(s.t[-1]) for s in series.values())
    if not end > start:
        raise RotoridError(f"{meta.get('source', 'log')}: the channels do not overlap in time")
    rate = rate or max(s.rate for s in series.values())
    n_logged = max(len(s.t) for s in series.values())
    tol = stamp_tolerance(np.array([start, end]))  # the grid's own stamps: a channel's far end is not on it
    n = grid_size(end - start, rate, n_logged, str(meta.get("source", "log")), tol=tol)
    t = start + np.arange(n) / rate
    gaps: list[tuple[float, float]] = []
    dropped: dict[str, float] = {}
    for name, s in series.items():
        limit = max_gap if max_gap is not None else GAP_PERIODS / max(s.rate, 1e-9)
        d = np.diff(s.t)
        gaps += [(float(s.t[i]), float(s.t[i + 1])) for i in np.flatnonzero(d > limit)]
        dropped[name] = float(np.mean((s.t < start) | (s.t > end)))
    meta.setdefault("rates", {name: s.rate for name, s in series.items()})
    report = AlignReport(start, end, float(rate), sorted(set(gaps)), dropped)
    meta["align"] = dataclasses.asdict(report)
    return t, meta, report


def on_grid(series: dict[str, Series], t: np.ndarray) -> dict[str, np.ndarray]:
    """The channels of `series` at the grid times `t` (inside their spans), as `Flight` takes them."""
    kw = {name: _interp(s, t, CHANNELS[name][2]) for name, s in series.items()}
    if "landed" in kw:
        kw["landed"] = kw["landed"].reshape(-1).astype(bool)
    return kw


def join(pieces: Iterable[Flight]) -> Flight:
    """One flight of consecutive `pieces` (each with the flight's channels and meta, in time
    order): their rows end to end, the first piece's meta."""
    pieces = list(pieces)
    if not pieces:
        raise RotoridError("no pieces of a flight to join")
    kw = {c: np.concatenate([getattr(p, c) for p in pieces]) for c in pieces[0].channels}
    return Flight(t=np.concatenate([p.t for p in pieces]), meta=pieces[0].meta, **kw)


def grid_size(span: float, rate: float, n_logged: float, source: str, tol: float = 0.0) -> int:
    """Samples of a uniform grid over `span` s at `rate` Hz, refused before allocation when
    it exceeds GRID_FACTOR × the `n_logged` samples it is built from (+ GRID_SLACK): corrupt
    time stamps (a jump of hours, an absurd rate) would otherwise ask for a huge grid. A span
    short of a whole number of steps by at most `tol` s (its float error, `stamp_tolerance`)
    still ends on its last stamp."""
    n = span * rate
    if not (np.isfinite(n) and rate > 0 and 0 <= n <= GRID_FACTOR * n_logged + GRID_SLACK):
        raise RotoridError(
            f"{source}: a {rate:.4g} Hz grid over {span:.4g} s would hold {n:.3g} samples for "
            f"{int(n_logged)} logged; the time stamps jump (corrupt or several recordings) — split the log there"
        )
    if not tol * rate < 1.0:  # the stamps' own float error spans a whole step: they cannot time the samples
        raise RotoridError(
            f"{source}: time stamps of that size are only resolved to {tol:.3g} s, more than a {rate:.4g} Hz "
            "sample period (corrupt time stamps); check the log's time channel"
        )
    return int(np.floor(n + tol * rate)) + 1


def voltage_series(
    t: np.ndarray, v: np.ndarray, what: str, notes: list[str], others: dict[str, Series]
) -> Series | None:
    """The battery voltage (V) a reader found at times `t`: samples without a reading (0 V or
    less, NaN: a monitor not connected yet) and repeated time stamps dropped, with a note, and
    the rest held over the span of the `others` channels by its first and last values: a slow
    battery monitor (1-10 Hz) starting late must not crop the flight `align` puts on the
    channels' common span. None when fewer than two samples are left."""
    order = np.argsort(t, kind="stable")
    t, v = t[order], np.asarray(v, dtype=float)[order]
    ok = (v > 0) & np.isfinite(t) & np.concatenate([[True], np.diff(t) > 0])
    if not ok.all():
        notes.append(f"{what}: dropped {int((~ok).sum())} samples without a reading (0 V)")
    t, v = t[ok], v[ok]
    if len(t) < 2:
        return None
    if others:
        start, end = max(float(s.t[0]) for s in others.values()), min(float(s.t[-1]) for s in others.values())
        if start < t[0]:
            t, v = np.concatenate([[start], t]), np.concatenate([v[:1], v])
        if end > t[-1]:
            t, v = np.append(t, end), np.append(v, v[-1])
    return Series(t, v)


def source_gaps(series: dict[str, Series], periods: float = GAP_PERIODS) -> list[tuple[float, float]]:
    """Drop-outs of per-topic series before `align` bridges them: steps longer than
    min(`periods` sample periods, MAX_GAP) in any channel, overlapping ones merged, sorted.
    Pass the result to `Flight.without` to split the aligned flight there."""
    a_parts, b_parts = [], []
    for s in series.values():
        i = np.flatnonzero(np.diff(s.t) > min(periods / max(s.rate, 1e-9), MAX_GAP))
        a_parts.append(s.t[i])
        b_parts.append(s.t[i + 1])
    a, b = np.concatenate([[], *a_parts]), np.concatenate([[], *b_parts])
    if not a.size:
        return []
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    reach = np.maximum.accumulate(b)  # merge: a new gap starts past every earlier gap's end
    new = np.concatenate([[True], a[1:] > reach[:-1]])
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:], [a.size]]) - 1
    return [(float(x), float(y)) for x, y in zip(a[starts], reach[ends], strict=True)]
