"""Where a benchmarked call spends its time: each named step's cumulative share under cProfile
(shared by the bench modules that name what limits a target)."""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable
from pathlib import Path


def shares(call: Callable[[], object], steps: dict[str, tuple[str, str]], whole: tuple[str, str]) -> dict[str, float]:
    """Percent of `whole`'s cumulative time (module stem, function name) spent in each step of
    `steps` (words -> (module stem, function)), from one run of `call` under cProfile (the
    profiler's overhead is spread over all). Steps may nest; a step never called shows 0."""
    prof = cProfile.Profile()
    prof.runcall(call)
    cum: dict[tuple[str, str], float] = {}
    for k, v in pstats.Stats(prof).stats.items():
        if "rotorid" in k[0]:
            key = (Path(k[0]).stem, k[2])
            cum[key] = cum.get(key, 0.0) + v[3]
    return {step: 100.0 * cum.get(key, 0.0) / cum[whole] for step, key in steps.items()}


def share_rows(
    call: Callable[[], object], steps: dict[str, tuple[str, str]], whole: tuple[str, str], label: str, note: str
) -> list[dict]:
    """`shares` as benchmark rows named "LABEL: STEP" (percent)."""
    return [
        {"name": f"{label}: {step}", "value": share, "unit": "%", "note": note}
        for step, share in shares(call, steps, whole).items()
    ]
