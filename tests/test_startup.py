"""Start-up stays light: importing the command line, and `rotorid --help` (which lists every
registered method and log format), load no heavy numerical or plotting library. Checked by
what a fresh interpreter has imported, never by timing (benchmarks/bench_startup.py times it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support.imports import SRC
from support.imports import heavy_after as _heavy_after


@pytest.mark.parametrize(
    "body",
    [
        "import rotorid.cli",
        "import rotorid\nrotorid.RotoridError",
        "from rotorid.cli import app\ntry:\n    app(['--help'], prog_name='rotorid')\nexcept SystemExit as e:\n"
        "    assert e.code == 0, e.code",
    ],
    ids=["import rotorid.cli", "rotorid.RotoridError", "rotorid --help"],
)
def test_start_up_imports_no_heavy_library(body: str) -> None:
    assert _heavy_after(body) == []


def test_heavy_library_is_seen_when_imported() -> None:
    """The probe itself can fail: a module that does pull in scipy is reported."""
    assert _heavy_after("import rotorid.signal") == ["scipy"]


def test_top_level_names_resolve_on_first_use() -> None:
    import rotorid
    from rotorid.vehicle import Vehicle

    assert rotorid.Vehicle is Vehicle
    assert set(rotorid.__all__) <= set(dir(rotorid))
    assert all(getattr(rotorid, n) is not None for n in rotorid.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = rotorid.nope


def test_help_imports_no_numpy_rich_or_package_metadata() -> None:
    """`rotorid --help` lists the methods and formats from their declarations (no reader, so
    no numpy), renders plain text (no Rich) and finds plugins without `importlib.metadata`."""
    probe = (
        "import sys\nfrom rotorid.cli import app\ntry:\n    app(['--help'], prog_name='rotorid')\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        "names = ('numpy', 'rich', 'importlib.metadata', 'typer.rich_utils', 'rotorid.io.crazyflie')\n"
        "print(','.join(n for n in names if n in sys.modules), file=sys.stderr)"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "Log formats" in r.stdout and r.stderr.strip().rpartition("\n")[2] == ""
