"""Frequency-domain method (issue 37): time of the whole method on three simulated ArduPilot
chirp flights (thrust, roll, pitch), and its accuracy and σ calibration over seeds (run one
after another: the machine's cores are shared). `python benchmarks/bench_freq.py [SEEDS]`
prints the table alone."""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from rotorid.methods.freq import identify
from rotorid.sim import scenarios

SCENARIOS = ("chirp-thrust", "chirp-roll", "chirp-pitch")
#: Seeds of the calibration (the issue's 30; FREQ_SEEDS overrides).
SEEDS = int(os.environ.get("FREQ_SEEDS", "30"))
#: The issue's accuracy targets (relative error of the mean, %).
TARGETS = {"tm": 2.0, "I_xx": 3.0, "I_yy": 3.0}


def _seed(seed: int) -> tuple[dict, dict, float]:
    """(estimates name -> (value, σ), truth, identify wall s) of one seed."""
    flights, truth = [], {}
    for name in SCENARIOS:
        sc = scenarios.run(name, seed=seed)
        flights += list(sc.flights.values())
        truth = sc.truth.params
    t0 = time.perf_counter()
    res = identify(flights, sc.vehicle)
    wall = time.perf_counter() - t0
    return {k: (e.value, e.std) for k, e in res.params.items()}, truth, wall


def calibration(seeds: int) -> list[dict]:
    """Per parameter: the mean error, SD/σ̄ and ±2σ coverage over `seeds` seeds."""
    runs = [_seed(s) for s in range(seeds)]
    rows = [
        {
            "name": "identify on 3 chirp flights (wall, median)",
            "value": statistics.median(r[2] for r in runs),
            "unit": "s",
            "note": f"{seeds} seeds; load average {os.getloadavg()[0]:.1f}",
        }
    ]
    for name, target in TARGETS.items():
        have = [(r[0][name], r[1][name]) for r in runs if name in r[0]]
        est = np.array([v for (v, _), _ in have])
        std = np.array([s for (_, s), _ in have])
        tru = np.array([t for _, t in have])
        err = 100 * (est - tru) / tru
        sd_ratio = float(np.std(est - tru, ddof=1) / np.mean(std))
        cover = float(np.mean(np.abs(est - tru) <= 2 * std))
        note = f"{len(have)}/{seeds} seeds; SD/σ̄ {sd_ratio:.2f} (target 0.7-1.4); ±2σ {100 * cover:.0f} %"
        note += f"; σ̄ {100 * np.mean(std / tru):.2f} %, worst seed {np.max(np.abs(err)):.2f} %"
        rows.append(
            {
                "name": f"{name}: mean error",
                "value": float(np.mean(err)),
                "unit": "%",
                "target": f"|·| <= {target:g}",
                "note": note,
            }
        )
        rows.append({"name": f"{name}: SD/σ̄", "value": sd_ratio, "unit": "", "target": "0.7-1.4", "note": note})
    return rows


def run() -> list[dict]:
    return calibration(SEEDS)


if __name__ == "__main__":
    for row in calibration(int(sys.argv[1]) if len(sys.argv) > 1 else SEEDS):
        print(
            f"{row['name']:<44} {row['value']:>10.4g} {row.get('unit', ''):<3} {row.get('target', ''):<12} {row.get('note', '')}"
        )
