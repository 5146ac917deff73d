"""The README tutorial, run as written: every `rotorid` command of its code blocks, in order,
from a folder beside `../shared/data`, each exiting 0; every line of an output block the
README shows after a command is found in what that command printed (same numbers)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, REPO

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def _normal(text: str) -> str:
    """Box-drawing borders dropped and white space collapsed (a table reads the same at any width)."""
    return " ".join(re.sub(r"[│┃]", " ", text).split())


def tutorial() -> list[tuple[str, list[str]]]:
    """(command, the README's output lines for it) for every command of the tutorial."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## A 5-minute tutorial") : readme.index("## Commands")]
    steps: list[tuple[str, list[str]]] = []
    for block in FENCE.findall(section):
        lines = block.replace("\\\n", " ").splitlines()
        if lines and lines[0].startswith("rotorid "):
            steps += [(ln, []) for ln in lines if ln.strip()]
        elif steps:
            steps[-1][1].extend(ln for ln in lines if ln.strip() not in ("", "…"))  # … elides lines
    return steps


def test_the_tutorial_has_commands_and_outputs() -> None:
    steps = tutorial()
    commands = [c.split()[1] for c, _ in steps]
    assert commands[:2] == ["info", "identify"] and "validate" in commands and "simulate" in commands
    assert sum(bool(out) for _, out in steps) >= 3


def test_readme_tutorial_runs_as_written(tmp_path: Path) -> None:
    if not (DATA / "crazyflie").is_dir():
        pytest.fail(f"real flight data not found at {DATA} (set ROTORID_DATA to ../shared/data)")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(DATA.resolve())
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(REPO / "src")}
    for command, shown in tutorial():
        args = shlex.split(command)
        res = subprocess.run(
            [sys.executable, "-m", "rotorid", *args[1:]],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, (command, res.stderr)
        printed = _normal(res.stdout)
        for line in shown:
            assert _normal(line) in printed, (command, line, res.stdout)
    assert (cwd / "results" / "report.html").is_file() and (cwd / "sim-validation" / "validation.json").is_file()
