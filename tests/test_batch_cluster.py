"""`rotorid batch --scheduler` on a real cluster: a `dask scheduler` and two `dask worker`
processes started apart, as on a lab's machines (not a LocalCluster in this process), run a
small simulated fleet, and every row equals the same job run on its own here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rotorid
from rotorid import batch
from rotorid.cli import app
from rotorid.manifest import read_manifest

DASK = Path(sys.executable).parent / "dask"


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as f:
        return subprocess.Popen([str(DASK), *args], env=env, stdout=f, stderr=subprocess.STDOUT)


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[str]:
    """The address of a scheduler with two single-threaded workers, each its own process that
    imports this tree's rotorid; all three stopped afterwards."""
    from distributed import Client

    if not DASK.exists():
        pytest.skip("no dask command beside this interpreter")
    src = str(Path(rotorid.__file__).parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])]))
    info = tmp_path / "scheduler.json"
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    procs = [_start(["scheduler", "--port", "0", "--scheduler-file", str(info), *common], env, tmp_path / "s.log")]
    try:
        deadline = time.monotonic() + 30
        while not info.exists() and time.monotonic() < deadline and procs[0].poll() is None:
            time.sleep(0.1)
        assert info.exists(), (tmp_path / "s.log").read_text()
        for i in range(2):
            args = ["worker", "--scheduler-file", str(info), "--nthreads", "1", "--no-nanny", *common]
            procs.append(_start(args, env, tmp_path / f"w{i}.log"))
        with Client(scheduler_file=str(info), timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            pids = set(client.run(os.getpid).values())
            assert len(pids - {os.getpid()}) == 2  # two processes, neither this one
            yield json.loads(info.read_text())["address"]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


def test_batch_on_separate_scheduler_and_worker_processes_equals_single_runs(scheduler: str, tmp_path: Path) -> None:
    manifest = batch.simulate_fleet(
        tmp_path / "fleet",
        {"cf-a": {"tm": 0.06}, "cf-b": {"tm": 0.07}},
        ["2026-01-10"],
        duration=3.0,
        seed=3,
    )
    rows = manifest.read_text().splitlines()  # one thrust curve for every row, as the fleet test does
    manifest.write_text("\n".join([rows[0] + ",options"] + [r + ',"exponents=0,1,2"' for r in rows[1:]]) + "\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["batch", str(manifest), "--scheduler", scheduler, "--out", str(out)])
    assert res.exit_code == 0, res.output
    jobs = read_manifest(manifest)
    assert len(jobs) == 2
    for job in jobs:
        alone = batch.run_job(job)  # the same job on its own, in this process
        assert alone["error"] is None, alone["error"]
        [path] = (out / "runs").rglob(f"*-row{job.row}.params.json")
        got = json.loads(path.read_text())
        assert set(got["params"]) == set(alone["result"]["params"]) and "tm" in got["params"]
        for k, e in alone["result"]["params"].items():
            assert (got["params"][k]["value"], got["params"][k]["std"]) == (e["value"], e["std"]), (job.row, k)
