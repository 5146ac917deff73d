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
