"""Fleet batches (`rotorid batch`): throughput of delay identifications against the number of
Dask worker processes (1, 2) on a simulated fleet (each run: three 6 s flights at 1 kHz —
thrust, roll/pitch, yaw — of an `eschmann-crazyflie` vehicle, read from Parquet), the
LocalCluster start-up, and the time to assess drift and write the table and the fleet page.
Throughput is measured twice per cluster: cold (the first batch, each worker's imports
included, as in a real `rotorid batch`) and warm (a second batch on the same workers: the
steady state of a large fleet). The same against a `dask scheduler` and 1 or 2 `dask worker`
processes started apart (`rotorid batch --scheduler`, as on a lab's machines)."""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rotorid import batch, manifest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support/cluster.py

VEHICLES = {"cf-a": {"tm": 0.06}, "cf-b": {"tm": 0.07}, "cf-c": {"tm": 0.08}}
DATES = ["2026-01-05", "2026-02-02", "2026-03-02", "2026-03-30"]
WORKERS = (1, 2)
REPEATS = 3


def _measure(jobs: list[manifest.Job], n: int) -> tuple[float, float, float, float]:
    """With `n` workers: (LocalCluster start-up s, runs per s of a first batch — each worker's
    imports included —, runs per s of a second batch on the same warm workers, median identify
    s on a worker in the second batch)."""
    from distributed import LocalCluster

    t0 = time.perf_counter()
    with LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        t1 = time.perf_counter()
        rates = []
        for _ in range(2):
            t = time.perf_counter()
            outcomes = batch.run(jobs, scheduler=cluster.scheduler_address)
            rates.append(len(jobs) / (time.perf_counter() - t))
            assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    return t1 - t0, rates[0], rates[1], statistics.median(o.seconds for o in outcomes)


def _separate(jobs: list[manifest.Job], n: int) -> tuple[float, float]:
    """Runs per s of a first and a second batch (`batch.run(scheduler=...)`, as `rotorid batch
    --scheduler`) on a `dask scheduler` and `n` `dask worker` processes started apart
    (tests/support/cluster.py), as on a lab's machines."""
    from support.cluster import dask_processes

    rates = []
    with tempfile.TemporaryDirectory(prefix="rotorid-bench-dask-") as tmp, dask_processes(n, Path(tmp)) as address:
        for _ in range(2):
            t = time.perf_counter()
            outcomes = batch.run(jobs, scheduler=address)
            rates.append(len(jobs) / (time.perf_counter() - t))
            assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
    return rates[0], rates[1]


def _spin(n: int = 5_000_000) -> float:
    t = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - t


def _free_cores() -> float:
    """How many cores this process can use in parallel right now: 2 x (time of one busy loop) /
    (time of two at once in separate processes); 2.0 on an idle 2-core machine."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2) as pool:
        one = min(pool.submit(_spin).result() for _ in range(2))
        two = max(pool.map(_spin, [5_000_000] * 2))
    return 2 * one / two


def run() -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="rotorid-bench-batch-"))
    try:
        jobs = manifest.read_manifest(batch.simulate_fleet(root, VEHICLES, DATES, duration=6.0))
        load = os.getloadavg()[0]
        free = [_free_cores()]
        got: dict[int, list[tuple[float, ...]]] = {n: [] for n in WORKERS}
        for _ in range(REPEATS):  # alternate, so a burst of load on the shared machine hits both
            for n in WORKERS:
                got[n].append(_measure(jobs, n))
            free.append(_free_cores())
        note = f"{len(jobs)} runs, median of {REPEATS}; load average {load:.1f} on {os.cpu_count()} cores"
        med = {n: [statistics.median(r[i] for r in got[n]) for i in range(4)] for n in WORKERS}
        rows: list[dict] = []
        for n in WORKERS:
            rows += [
                {"name": f"LocalCluster start-up, {n} worker(s)", "value": med[n][0], "unit": "s", "note": note},
                {"name": f"throughput, {n} worker(s), cold", "value": 60 * med[n][1], "unit": "runs/min", "note": note},
                {"name": f"throughput, {n} worker(s), warm", "value": 60 * med[n][2], "unit": "runs/min", "note": note},
                {"name": f"identify per run on a worker, {n} worker(s)", "value": med[n][3], "unit": "s", "note": note},
            ]
        for i, what in ((1, "cold"), (2, "warm")):
            rows.append(
                {
                    "name": f"speed-up {WORKERS[-1]} vs {WORKERS[0]} worker(s), {what}",
                    "value": med[WORKERS[-1]][i] / med[WORKERS[0]][i],
                    "unit": "x",
                    "note": f"{os.cpu_count()} cores shared with whatever else runs (load average {load:.1f})",
                }
            )
        rows.append(
            {
                "name": "cores free for this benchmark (two busy loops vs one)",
                "value": statistics.median(free),
                "unit": "cores",
                "note": f"the most a speed-up could be on this machine now; range {min(free):.2f}-{max(free):.2f}",
            }
        )
        for n in WORKERS:
            cold, warm = _separate(jobs, n)
            note = f"{len(jobs)} runs; dask scheduler + {n} dask worker process(es) started apart; load average {os.getloadavg()[0]:.1f}"
            rows += [
                {
                    "name": f"separate processes, {n} worker(s), cold",
                    "value": 60 * cold,
                    "unit": "runs/min",
                    "note": note,
                },
                {
                    "name": f"separate processes, {n} worker(s), warm",
                    "value": 60 * warm,
                    "unit": "runs/min",
                    "note": note,
                },
            ]
        outcomes = batch.run(jobs, workers=1, processes=False)
        t0 = time.perf_counter()
        table, findings = batch.assess(batch.collect(outcomes))
        batch.write(root / "out", outcomes, table, findings, "bench")
        rows.append(
            {
                "name": f"assess drift + write table and fleet page ({len(VEHICLES)} vehicles)",
                "value": time.perf_counter() - t0,
                "unit": "s",
                "note": f"{len(findings)} finding(s) (none injected)",
            }
        )
        return rows
    finally:
        shutil.rmtree(root, ignore_errors=True)
