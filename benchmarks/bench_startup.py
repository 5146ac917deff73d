"""Start-up: wall and CPU time of a fresh `rotorid --help` process (it lists every registered
method and log format) and of `rotorid identify --help` (the largest command), of `import
rotorid.cli`, and of a bare interpreter for reference.
Medians of repeated runs; CPU time (user + sys of the child) is the steadier figure on a shared
machine, wall time is what the user waits.

The children run as an installed rotorid does: with its bytecode cache. An environment that sets
PYTHONDONTWRITEBYTECODE (this development machine does) would otherwise compile every rotorid
module from source in every run (~55 ms CPU more for `--help`, measured); one untimed run first
writes the cache."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 11
#: The children's environment: bytecode cached, as after `pip install`.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
EXE = Path(sys.executable).parent / "rotorid"
ROTORID = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "rotorid"]


def timed(cmd: list[str], runs: int = RUNS) -> tuple[float, float]:
    """(median wall s, median CPU s) of `cmd` run `runs` times in fresh processes."""
    walls, cpus = [], []
    subprocess.run(cmd, check=True, capture_output=True, env=ENV)  # writes the bytecode cache
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=ENV)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def run() -> list[dict]:
    note = f"median of {RUNS} fresh processes; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    rows = []
    for name, cmd, target in (
        ("rotorid --help", [*ROTORID, "--help"], "<= 0.15"),
        ("rotorid identify --help", [*ROTORID, "identify", "--help"], ""),
        ("python -c 'import rotorid.cli'", [sys.executable, "-c", "import rotorid.cli"], ""),
        ("python -c 'import typer'", [sys.executable, "-c", "import typer"], ""),
        ("python -c 'import numpy'", [sys.executable, "-c", "import numpy"], ""),
        ("python -c 'pass' (interpreter alone)", [sys.executable, "-c", "pass"], ""),
    ):
        wall, cpu = timed(cmd)
        rows.append({"name": f"{name}: wall", "value": wall, "unit": "s", "target": target, "note": note})
        rows.append({"name": f"{name}: CPU", "value": cpu, "unit": "s", "target": "", "note": "user + sys"})
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['name']:<50} {r['value']:.3f} {r['unit']}  {r['target']}  {r['note']}")
