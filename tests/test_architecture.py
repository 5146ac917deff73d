"""The architecture as a checked contract: the import-linter contracts of pyproject.toml hold
(layers, methods that never import io/report/cli, readers that never estimate, no cycles), they
do catch a forbidden import, and no module of the package uses pyplot's global state."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
CONTRACTS = {
    c["id"]: c["name"]
    for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess:
    assert LINT, "lint-imports not installed: pip install -e '.[dev]'"
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [LINT, "--config", str(config), "--no-cache"], capture_output=True, text=True, env=env, cwd=src, timeout=120
    )


def test_import_contracts_hold() -> None:
    r = _lint(SRC, ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in r.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("methods/regression.py", "from rotorid.io import load", ["methods-pure"]),
        ("io/table.py", "from rotorid.report import html", ["layers", "readers-decode-only"]),
        ("result.py", "import rotorid.validate", ["layers", "acyclic"]),
        ("report/style.py", "from rotorid.report import delay", ["acyclic"]),
    ],
)
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, line: str, broken: list[str]) -> None:
    shutil.copytree(SRC / "rotorid", tmp_path / "rotorid", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "rotorid" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    r = _lint(tmp_path, ROOT / "pyproject.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    got = sorted(ln.removesuffix(" BROKEN") for ln in r.stdout.splitlines() if ln.endswith(" BROKEN"))
    assert got == sorted(CONTRACTS[b] for b in broken), r.stdout


def test_no_pyplot_in_the_package() -> None:
    """Figures use the Figure API (rotorid.report.style.figure): pyplot's global state is not
    thread-safe and leaks figures in worker processes."""
    users = []
    for path in sorted((SRC / "rotorid").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            if any(n == "matplotlib.pyplot" or n.startswith("matplotlib.pyplot.") for n in names):
                users.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert users == []
