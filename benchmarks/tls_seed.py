"""One calibration case and seed as `calibration.py` runs it, z = (value - truth) / σ per
parameter, optionally with scenario overrides (e.g. an effect of the randomized draw switched
off: `--set drag_quad=0 --set 'wind=[0,0,0]'`) to find which effect a miss comes from.

Run: `python benchmarks/tls_seed.py tls-imu-A/six-config-a-random 5,24 [--set NAME=JSON ...] [--cache DIR]`."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import calibration


def run(cases: list[str], seed: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """The cases' results for `seed` (calibration's `_run_group`, one simulation for the cases of a
    group) with `overrides` on every flight."""
    group = {c.name: c.group for c in calibration.CASES + calibration.ABLATION_CASES}
    groups = {group[c.removesuffix(calibration.TRUTH)] for c in cases}
    simulate = calibration._simulate
    calibration._simulate = partial(_with, simulate, overrides)
    try:
        return {k: v for g in sorted(groups) for k, v in calibration._run_group(g, seed, set(cases)).items()}
    finally:
        calibration._simulate = simulate


def _with(simulate: Any, overrides: dict[str, Any], name: str, seed: int, duration: float | None, **ov: Any) -> Any:
    return simulate(name, seed, duration, **{**ov, **overrides})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", help="comma-separated calibration cases")
    ap.add_argument("seeds", help="comma-separated seeds")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=JSON", help="a scenario override")
    ap.add_argument("--tls", action="append", default=[], metavar="NAME=JSON", help="a TlsSettings field")
    ap.add_argument("--all", action="store_true", help="every parameter, not only |z| > 2")
    ap.add_argument("--cache", type=Path, help="folder of simulated flights to re-use (calibration's --cache)")
    a = ap.parse_args()
    calibration.CACHE = a.cache
    ov = {k: json.loads(v) for k, _, v in (s.partition("=") for s in a.set)}
    calibration.TLS_OPTIONS.update(calibration._option(t, "tls") for t in a.tls)
    for seed in map(int, a.seeds.split(",")):
        t0 = time.perf_counter()
        for case, out in run(a.case.split(","), seed, ov).items():
            print(f"{case} seed {seed} ({time.perf_counter() - t0:.0f} s) {_zs(out, a.all)}", flush=True)


def _zs(out: dict[str, Any], every: bool) -> str:
    """z = (value - truth) / σ of the parameters (every one, or those beyond 2) of one result."""
    if "error" in out:
        return out["error"]
    z = {
        k: (p["value"] - p["truth"]) / p["std"]
        for k, p in out["params"].items()
        if p["truth"] is not None and p["std"] and math.isfinite(p["std"])
    }
    shown = sorted(((k, v) for k, v in z.items() if every or abs(v) > 2), key=lambda kv: -abs(kv[1]))
    return f"max|z| {max(map(abs, z.values()), default=float('nan')):.1f}: " + " ".join(
        f"{k} {v:+.1f}" for k, v in shown
    )


if __name__ == "__main__":
    main()
