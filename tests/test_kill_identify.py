"""Outputs stay whole (issue 16 part 6): `rotorid identify` killed by SIGINT or SIGKILL at
seeded random moments — half of them while it writes — leaves its --out folder holding either
the previous complete run or the new complete run, byte for byte; after SIGINT nothing else
is left behind."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid.cli import app

#: (signal, when): "write" kills 0–5 ms after the run writes its first file (where a writer
#: that is not atomic leaves a mix of two runs about one time in six), "any" at a uniformly
#: random moment of a typical run.
KILLS = [(signal.SIGKILL, "write"), (signal.SIGINT, "write")] * 2 + [(signal.SIGKILL, "any"), (signal.SIGINT, "any")]
CLI = [sys.executable, "-c", "from rotorid.cli import app; app()"]


def _contents(folder: Path) -> dict[str, bytes]:
    """The files a user sees in `folder` (temporary files start with '.')."""
    if not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.startswith(".")}


def _disk_state(parent: Path) -> list[tuple[str, int]]:
    """Every file under `parent` with its modification time (ns), to see a run start writing its
    output (folders are left out: the up-front check that --out is writable makes one)."""
    while True:  # a running identify renames and removes its temporary files while we look: look again
        try:
            return sorted((str(p.relative_to(parent)), p.stat().st_mtime_ns) for p in parent.rglob("*") if p.is_file())
        except FileNotFoundError:
            continue


def _kill_during(args: list[str], parent: Path, sig: int, when: str, rng: random.Random, typical: float) -> int:
    """Run the CLI, send `sig` at a random moment, return its exit code."""
    before = _disk_state(parent)
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if when == "write":
        # a file written or changed, not one removed: a run first clears what a killed run left
        while proc.poll() is None and not set(_disk_state(parent)) - set(before):
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.005))
    else:
        time.sleep(rng.uniform(0.0, typical))
    proc.send_signal(sig)
    return proc.wait(timeout=300)


@pytest.mark.slow
def test_identify_killed_leaves_previous_or_new_run(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    res = CliRunner().invoke(app, ["simulate", "six-config-a", "--out", str(sim), "--duration", "2"])
    assert res.exit_code == 0, res.output
    base = ["identify", str(sim / "train.parquet"), "--method", "tls", "--vehicle", str(sim / "vehicle.toml")]
    options = {"A": [], "B": ["--no-weighted"]}
    # the complete runs, each in a fresh folder; A as the killed runs start (a process of its
    # own), timed: how long a typical run takes
    t0 = time.perf_counter()
    subprocess.run([*CLI, *base, "--out", str(tmp_path / "A")], check=True, capture_output=True, timeout=300)
    typical = time.perf_counter() - t0
    res = CliRunner().invoke(app, [*base, *options["B"], "--out", str(tmp_path / "B")])
    assert res.exit_code == 0, res.output
    ref = {name: _contents(tmp_path / name) for name in options}
    assert ref["A"] != ref["B"] and {"params.json", "report.html"} <= set(ref["A"])
    work = tmp_path / "work"
    work.mkdir()
    out = work / "out"
    shutil.copytree(tmp_path / "A", out)  # the previous complete run

    rng = random.Random(16)
    held, seen = "A", []
    for k, (sig, when) in enumerate(KILLS):
        new = "B" if held == "A" else "A"  # each run would change the folder
        debris = {p.name for p in work.iterdir()} - {"out"}  # what earlier SIGKILLed runs left
        code = _kill_during([*base, *options[new], "--out", str(out)], work, sig, when, rng, typical)
        got = _contents(out)
        which = next((name for name, files in ref.items() if got == files), None)
        seen.append((sig.name, when, code, which))
        assert which in (held, new), f"kill {k} ({sig.name}, {when}, exit {code}): {sorted(got)} is neither run"
        if sig == signal.SIGINT:
            # SIGINT leaves nothing of its own; the debris of a SIGKILLed run may stay if the
            # interrupt came while it was being cleared (the next complete run clears it)
            left = {p.name for p in work.iterdir()} - {"out"}
            assert left <= debris, f"kill {k}: SIGINT left {sorted(left - debris)}"
            assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
        held = which
    assert sum(code != 0 for _, _, code, _ in seen) >= 2, seen  # runs were really interrupted
    subprocess.run([*CLI, *base, "--out", str(out)], check=True, capture_output=True, timeout=300)
    assert sorted(p.name for p in work.iterdir()) == ["out"]  # a complete run clears every killed run's debris
    assert _contents(out) == ref["A"]
