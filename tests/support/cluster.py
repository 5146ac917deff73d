"""A Dask cluster of separate processes, as on a lab's machines: a `dask scheduler` and single-
threaded `dask worker` processes started by the `dask` command beside this interpreter, each
importing this tree's rotorid (shared by the batch test and benchmarks/bench_batch.py)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import rotorid

DASK = Path(sys.executable).parent / "dask"


@contextlib.contextmanager
def dask_processes(workers: int, folder: Path) -> Iterator[str]:
    """The address of a scheduler on 127.0.0.1 with `workers` worker processes connected (no
    nanny, no dashboard; their output in `folder`); all stopped on exit."""
    from distributed import Client

    src = str(Path(rotorid.__file__).parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    info, common = folder / "scheduler.json", ["--no-dashboard", "--host", "127.0.0.1"]

    def start(args: list[str], log: str) -> subprocess.Popen:
        with open(folder / log, "w") as f:
            return subprocess.Popen([str(DASK), *args], env=env, stdout=f, stderr=subprocess.STDOUT)

    procs = [start(["scheduler", "--port", "0", "--scheduler-file", str(info), *common], "scheduler.log")]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline and procs[0].poll() is None:
            time.sleep(0.1)
        if not info.exists():
            raise RuntimeError(f"the dask scheduler did not start: {(folder / 'scheduler.log').read_text()[-2000:]}")
        args = ["worker", "--scheduler-file", str(info), "--nthreads", "1", "--no-nanny", *common]
        procs += [start(args, f"worker{i}.log") for i in range(workers)]
        with Client(scheduler_file=str(info), timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
            pids = set(client.run(os.getpid).values())
            if len(pids - {os.getpid()}) != workers:
                raise RuntimeError(f"expected {workers} worker processes apart from this one, found pids {pids}")
        yield json.loads(info.read_text())["address"]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
