"""I/O speed: Crazyflie decode, `rotorid info` on the three real logs, the interchange, ULog
and DataFlash writers/readers on a 60 s, 1 kHz flight, and read time per MB of the autopilot
formats (ULog, DataFlash, the real Betaflight blackbox), all decoding afresh (the decoded-log
cache off); and the cache's second look (issue 36): `rotorid info` on the 1.9 MB Betaflight log in
a fresh process, first with an empty cache, then again (`python benchmarks/bench_io.py cache`
runs that case alone). Medians of several runs (wall clock)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
CF = [DATA / "crazyflie" / n for n in ("log10", "log15", "log16")]
BBL = DATA / "betaflight" / "example_smooth_tune.BBL"
#: The issue's slow `info`: orangebox decodes it at ~2 s/MB.
BTFL = DATA / "betaflight" / "btfl_002.bbl"


def _median(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _flight_60s() -> object:
    from rotorid import frames
    from rotorid.flight import Flight

    rng = np.random.default_rng(0)
    n = 60_000
    t = np.arange(n) / 1000.0
    return Flight(
        t=t,
        acc=rng.normal(size=(n, 3)),
        gyro=rng.normal(size=(n, 3)),
        cmd=rng.uniform(0, 1, (n, 4)),
        rotor_speed=rng.uniform(0, 2500, (n, 4)),
        quat=frames.bryant_to_quat(np.column_stack([0.1 * t, 0.2 * np.sin(t), 0.1 * np.cos(t)])),
        pos=rng.normal(size=(n, 3)),
        vel=rng.normal(size=(n, 3)),
        meta={"source": "bench"},
    )


def cache_rows() -> list[dict]:
    """`rotorid info` on `BTFL` in fresh processes: the first look decodes and fills an empty
    cache, the second reads its entry (CPU from each process's own rusage)."""
    if not BTFL.exists():
        return []
    exe = Path(sys.executable).parent / "rotorid"
    cpu = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "ROTORID_NO_CACHE"} | {"ROTORID_CACHE_DIR": tmp}
        for _ in range(2):
            proc = subprocess.Popen(
                [exe, "info", str(BTFL)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
            )
            _, status, usage = os.wait4(proc.pid, 0)
            assert status == 0, f"rotorid info {BTFL} failed"
            cpu.append(usage.ru_utime + usage.ru_stime)
    note = f"{BTFL.stat().st_size / 1e6:.2f} MB Betaflight log; CPU of the process, imports included"
    return [
        {"name": "info btfl_002.bbl, first look (decode)", "value": cpu[0], "unit": "s", "target": "", "note": note},
        {"name": "info btfl_002.bbl, second look (cache)", "value": cpu[1], "unit": "s", "target": "", "note": ""},
    ]


def run() -> list[dict]:
    before = os.environ.get("ROTORID_NO_CACHE")
    os.environ["ROTORID_NO_CACHE"] = "1"  # the decoders themselves, every time
    try:
        rows = _decode_rows()
    finally:
        os.environ.pop("ROTORID_NO_CACHE")
        if before is not None:
            os.environ["ROTORID_NO_CACHE"] = before
    return rows + cache_rows()


def _decode_rows() -> list[dict]:
    from typer.testing import CliRunner

    from rotorid.cli import app
    from rotorid.io import crazyflie, dataflash, read, table, ulog

    rows: list[dict] = []
    if all(p.exists() for p in CF):
        read(CF[1])  # warm the registry and imports
        rows.append(
            {
                "name": "decode log15 (crazyflie.decode)",
                "value": _median(lambda: crazyflie.decode(CF[1]), 9),
                "unit": "s",
                "target": "<= 0.05",
                "note": "62 774 events, 3.1 MB; median of 9",
            }
        )
        rows.append(
            {
                "name": "read log15 (decode + Flight)",
                "value": _median(lambda: read(CF[1]), 9),
                "unit": "s",
                "target": "<= 0.05",
                "note": "median of 9",
            }
        )
        runner = CliRunner()
        args = ["info", *map(str, CF)]
        assert runner.invoke(app, args).exit_code == 0
        rows.append(
            {
                "name": "info log10 log15 log16 (in process)",
                "value": _median(lambda: runner.invoke(app, args), 5),
                "unit": "s",
                "target": "<= 1",
                "note": "decode, excitation, Rich tables; median of 5",
            }
        )
        exe = Path(sys.executable).parent / "rotorid"
        rows.append(
            {
                "name": "info log10 log15 log16 (fresh process)",
                "value": _median(lambda: subprocess.run([exe, *args], capture_output=True, check=True), 3),
                "unit": "s",
                "target": "",
                "note": "includes Python start-up and importing numpy/scipy/typer/rich; median of 3",
            }
        )
    flight = _flight_60s()
    with tempfile.TemporaryDirectory() as tmp:
        formats = ((".parquet", table, 5), (".csv", table, 1), (".ulg", ulog, 3), (".bin", dataflash, 3))
        for suffix, mod, runs in formats:
            p = Path(tmp) / f"f{suffix}"
            rows.append(
                {
                    "name": f"write 60 s 1 kHz flight {suffix}",
                    "value": _median(lambda p=p, mod=mod: mod.write(flight, p), runs),
                    "unit": "s",
                    "target": "",
                    "note": f"{p.stat().st_size / 1e6:.1f} MB, 26 columns; median of {runs}",
                }
            )
            via = {".ulg": " (via pyulog, then align)", ".bin": " (pymavlink index, numpy decode, align)"}
            seconds = _median(lambda p=p: read(p), runs)
            rows.append(
                {
                    "name": f"read 60 s 1 kHz flight {suffix}",
                    "value": seconds,
                    "unit": "s",
                    "target": "",
                    "note": f"median of {runs}" + via.get(suffix, ""),
                }
            )
            if suffix in via:
                rows.append(_per_mb(f"read {suffix} per MB (60 s 1 kHz, written by rotorid)", seconds, p, runs))
    if BBL.exists():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seconds = _median(lambda: read(BBL), 1)
        rows.append(_per_mb("read .BBL per MB (real Betaflight, 38.8 s at 2 kHz)", seconds, BBL, 1, " via orangebox"))
    return rows


def _per_mb(name: str, seconds: float, path: Path, runs: int, how: str = "") -> dict:
    mb = path.stat().st_size / 1e6
    return {
        "name": name,
        "value": seconds / mb,
        "unit": "s/MB",
        "target": "",
        "note": f"{mb:.2f} MB{how}; median of {runs}",
    }


if __name__ == "__main__":
    for r in cache_rows() if sys.argv[1:] == ["cache"] else run():
        print(f"{r['name']:<45} {r['value']:.4f} {r['unit']}  {r['target']}  {r['note']}")
