"""Logging drop-outs of the autopilot-log readers (DataFlash, blackbox): the aligned flight is
split where a channel stopped (`rotorid.flight.source_gaps`, the rule ULog follows) instead of
letting interpolation bridge the hole."""

from __future__ import annotations

import warnings
from pathlib import Path

from rotorid.flight import Flight, Series, source_gaps


def split(flight: Flight, series: dict[str, Series], path: Path) -> list[Flight]:
    """The pieces of `flight` between the drop-outs of `series` (recorded in
    meta["align"]["gaps"]), with a warning naming them."""
    gaps = source_gaps(series)
    flight.meta.setdefault("align", {})["gaps"] = gaps
    if gaps:
        shown = ", ".join(f"{a:.2f}–{b:.2f} s" for a, b in gaps[:3])
        warnings.warn(
            f"{path}: {len(gaps)} logging drop-out(s) ({shown}{', …' if len(gaps) > 3 else ''}); "
            "the log is split there instead of interpolated",
            stacklevel=4,
        )
    return flight.without(gaps)
