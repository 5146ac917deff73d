"""The README tutorial, run as written: every `rotorid` command of its code blocks, in order,
from a folder beside `../shared/data`, each exiting 0; every line of an output block the
README shows after a command is found in what that command printed (same numbers). The
commands run in this process through the `app` that `python -m rotorid` runs (a process each
paid ~1 s of imports ten times; tests/test_registry.py runs `python -m rotorid` itself)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DATA, REPO
from rotorid.cli import app

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


@pytest.mark.slow
def test_readme_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (DATA / "crazyflie").is_dir():
        pytest.fail(f"real flight data not found at {DATA} (set ROTORID_DATA to ../shared/data)")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(DATA.resolve())
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    runner = CliRunner(env={"COLUMNS": "250"})
    for command, shown in tutorial():
        res = runner.invoke(app, shlex.split(command)[1:], prog_name="rotorid")
        assert res.exit_code == 0, (command, res.output, res.exception)
        printed = _normal(res.stdout)
        for line in shown:
            assert _normal(line) in printed, (command, line, res.stdout)
    assert (cwd / "results" / "report.html").is_file() and (cwd / "sim-validation" / "validation.json").is_file()
