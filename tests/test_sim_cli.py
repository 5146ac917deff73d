"""`rotorid simulate`: files written, read back equal to the in-memory scenario."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.io import read
from rotorid.result import Truth
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


def test_simulate_writes_flights_truth_and_vehicles(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    res = CliRunner().invoke(
        app, ["simulate", "eschmann-crazyflie", "--out", str(out), "--seed", "3", "--duration", "1.5"]
    )
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == [
        "roll_pitch.parquet",
        "thrust.parquet",
        "true_vehicle.toml",
        "truth.json",
        "vehicle.toml",
        "yaw.parquet",
    ]
    sc = scenarios.run("eschmann-crazyflie", seed=3, duration=1.5)
    for name, f in sc.flights.items():
        (back,) = read(out / f"{name}.parquet")
        assert back.channels == f.channels
        for ch in f.channels:
            np.testing.assert_array_equal(getattr(back, ch), getattr(f, ch))
    assert Truth.load(out / "truth.json").params == sc.truth.params
    assert Vehicle.from_toml(out / "vehicle.toml").thrust_coeffs is None
    true = Vehicle.from_toml(out / "true_vehicle.toml")
    np.testing.assert_array_equal(true.inertia, sc.true_vehicle.inertia)
    assert true.tm_rise == 0.07


def test_simulate_ulog_with_override(tmp_path: Path) -> None:
    out = tmp_path / "six"
    args = ["simulate", "six-config-b", "--out", str(out), "--duration", "1", "--format", "ulog", "--set", "tm=0.03"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    (f,) = read(out / "train.ulg")
    assert {"acc", "gyro", "pos", "quat", "rotor_speed"} <= set(f.channels)
    assert f.rate == pytest.approx(200.0, rel=1e-3)
    assert Truth.load(out / "truth.json").params["tm"] == 0.03


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--format", "mat"], "--format 'mat'"),
        (["--set", "tm"], "NAME=VALUE"),
        (["--set", "tm=fast"], "'fast'"),
        (["--set", "breeze=3"], "unknown override(s) breeze"),
    ],
)
def test_simulate_bad_options(tmp_path: Path, args: list[str], needle: str) -> None:
    res = CliRunner().invoke(app, ["simulate", "six-config-a", "--out", str(tmp_path / "o"), "--duration", "1", *args])
    assert res.exit_code == 2
    assert needle in res.stderr
    assert not (tmp_path / "o").exists()  # nothing written
