"""The architecture as a checked contract: the import-linter contracts of pyproject.toml hold
(layers, methods that never import io/report/cli, readers that never estimate, no cycles), they
do catch a forbidden import, and no module of the package uses pyplot's global state."""

from __future__ import annotations

import ast
import os
import re
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
        ("methods/online/settings.py", "from rotorid.methods.online import noise", ["online-stages"]),
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


MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 800


def _function_lengths(source: str, module: str) -> dict[str, tuple[int, int]]:
    """Qualified name -> (lines from `def` to its last line, lines of its body) of every function,
    method and nested function in `source`."""
    out: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    whole = child.end_lineno - child.lineno + 1
                    out[name] = (whole, child.end_lineno - child.body[0].lineno + 1)
                visit(child, name)

    visit(ast.parse(source), module)
    return out


def _package_function_lengths() -> dict[str, tuple[int, int]]:
    lengths: dict[str, tuple[int, int]] = {}
    for path in sorted((SRC / "rotorid").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        lengths |= _function_lengths(path.read_text(encoding="utf-8"), module)
    return lengths


def test_function_length_is_measured_from_def_to_last_line() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(81))
    src = f"class C:\n    def m(self):\n        pass\n\n\ndef f(\n    a,\n):\n{body}"
    assert _function_lengths(src, "mod") == {"mod.C.m": (2, 1), "mod.f": (84, 81)}


def test_no_function_over_80_lines() -> None:
    """Short functions, split along their own sections; no exception."""
    lengths = _package_function_lengths()
    too_long = {name: whole for name, (whole, _body) in lengths.items() if whole > MAX_FUNCTION_LINES}
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines (split them along their sections): {too_long}"


def test_no_module_over_800_lines() -> None:
    """A module holds one stage or concern: past 800 lines it holds several (split it)."""
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in (SRC / "rotorid").rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_the_source_names_nothing_outside_the_repository() -> None:
    """Docstrings, comments and messages point at what a user has (the README, docs/, the papers
    by title), never at the development folders beside the repository or the issue tracker."""
    pattern = re.compile(r"DESIGN\.md|FORMATS\.md|shared/|\bissue \d")
    found = [
        f"{p.relative_to(SRC)}:{i}"
        for p in sorted((SRC / "rotorid").rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
