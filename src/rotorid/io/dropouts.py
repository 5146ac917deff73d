"""Logging drop-outs shared by the readers of autopilot logs (DataFlash, blackbox): find the
intervals in which a fast channel stopped for more than a few of its sample periods, and split
the aligned flight there instead of letting interpolation bridge them."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from rotorid.flight import Flight, Series

#: a step longer than this many median sample periods of a channel is a drop-out
GAP_PERIODS = 5.0


def find(series: dict[str, Series]) -> list[tuple[float, float]]:
    """Merged (t_last_before, t_first_after) intervals where any channel skipped samples."""
    found = sorted(
        (float(s.t[i]), float(s.t[i + 1]))
        for s in series.values()
        if len(s.t) >= 2
        for i in np.flatnonzero(np.diff(s.t) > GAP_PERIODS / s.rate)
    )
    gaps: list[tuple[float, float]] = []
    for a, b in found:
        if gaps and a <= gaps[-1][1]:
            gaps[-1] = (gaps[-1][0], max(b, gaps[-1][1]))
        else:
            gaps.append((a, b))
    return gaps


def split(flight: Flight, gaps: list[tuple[float, float]], path: Path) -> list[Flight]:
    """The pieces of `flight` between `gaps` (recorded in meta["align"]["gaps"]), with a warning."""
    flight.meta.setdefault("align", {})["gaps"] = gaps
    if gaps:
        shown = ", ".join(f"{a:.2f}–{b:.2f} s" for a, b in gaps[:3])
        warnings.warn(
            f"{path}: {len(gaps)} logging drop-out(s) ({shown}{', …' if len(gaps) > 3 else ''}); "
            "the log is split there instead of interpolated",
            stacklevel=3,
        )
    return flight.without(gaps)
