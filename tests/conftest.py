"""Shared fixtures. The real logs live in ../shared/data (next to the repository); tests that
need them are skipped with a clear reason where that folder is absent."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ROTORID_DATA", REPO.parent / "shared" / "data"))


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real flight data not found at {path} (set ROTORID_DATA to ../shared/data)")
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return _need(DATA)


@pytest.fixture(scope="session")
def cf_logs(data_dir: Path) -> dict[str, Path]:
    """The three real Crazyflie logs by name (log10, log15, log16)."""
    return {n: _need(data_dir / "crazyflie" / n) for n in ("log10", "log15", "log16")}


@pytest.fixture(scope="session")
def px4_logs(data_dir: Path) -> dict[str, Path]:
    return {n: _need(data_dir / "px4" / f"{n}.ulg") for n in ("sample", "sample_px4_events")}


@pytest.fixture
def unwritable(tmp_path: Path) -> Path:
    """An output folder nobody can create: sysfs when running as root, else inside a read-only folder."""
    if os.geteuid() == 0:
        if not Path("/sys/kernel").is_dir():
            pytest.skip("running as root without sysfs: no folder is unwritable")
        return Path("/sys/rotorid-test-out")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    return ro / "out"
