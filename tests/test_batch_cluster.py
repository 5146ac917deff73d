"""`rotorid batch --scheduler` on a real cluster: a `dask scheduler` and two `dask worker`
processes started apart, as on a lab's machines (not a LocalCluster in this process), run a
small simulated fleet, and every row equals the same job run on its own here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid import batch
from rotorid.cli import app
from rotorid.manifest import read_manifest
from support.cluster import DASK, dask_processes


@pytest.mark.skipif(not DASK.exists(), reason="no dask command beside this interpreter")
@pytest.mark.slow
def test_batch_on_separate_scheduler_and_worker_processes_equals_single_runs(tmp_path: Path) -> None:
    vehicles = {"cf-a": {"tm": 0.06}, "cf-b": {"tm": 0.07}}
    manifest = batch.simulate_fleet(tmp_path / "fleet", vehicles, ["2026-01-10"], duration=3.0, seed=3)
    rows = manifest.read_text().splitlines()  # one thrust curve for every row, as the fleet test does
    manifest.write_text("\n".join([rows[0] + ",options"] + [r + ',"exponents=0,1,2"' for r in rows[1:]]) + "\n")
    out = tmp_path / "out"
    with dask_processes(2, tmp_path) as scheduler:
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
