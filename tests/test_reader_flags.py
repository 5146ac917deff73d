"""The readers' options as command-line flags (--imu-source, --imu, --motor-poles, --pwm-range)
on info, identify and convert; `info`'s advice names the flag; a reader that does not take a
flag refuses it in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid import runs
from rotorid.cli import _reading, _reading_words, app


@pytest.fixture(scope="module")
def ardupilot(data_dir: Path) -> Path:
    p = data_dir / "ardupilot" / "backend_log_80k.bin"
    if not p.exists():
        pytest.fail(f"ArduPilot fixture not found: {p}")
    return p


def _info(*args: str) -> str:
    res = CliRunner().invoke(app, ["info", *args], terminal_width=200)
    assert res.exit_code == 0, res.output
    return res.output


def test_imu_source_and_instance_reach_the_dataflash_reader(ardupilot: Path) -> None:
    default = _info(str(ardupilot))
    assert "(IMU)" in default and "--imu-source batch" in default  # the fix names the flag
    assert "imu_source=" not in default.replace("imu_source='batch' in Python", "")
    batch = _info(str(ardupilot), "--imu-source", "batch")
    assert "2000.3 Hz  (ISBD)" in batch


def test_convert_takes_the_imu_instance(ardupilot: Path, tmp_path: Path) -> None:
    import pandas as pd

    rows = {}
    for n in ("0", "1"):
        res = CliRunner().invoke(app, ["convert", str(ardupilot), "--to", str(tmp_path / f"{n}.csv"), "--imu", n])
        assert res.exit_code == 0, res.output
        rows[n] = pd.read_csv(tmp_path / f"{n}.csv", comment="#")
    acc = [c for c in rows["0"].columns if c.startswith("acc")]
    assert (rows["0"][acc].mean() - rows["1"][acc].mean()).abs().max() > 0.1  # another sensor


def test_a_reader_refuses_a_flag_it_does_not_take(cf_logs) -> None:
    for flag, value in (("--imu-source", "batch"), ("--motor-poles", "14"), ("--imu", "1")):
        res = CliRunner().invoke(app, ["info", str(cf_logs["log16"]), flag, value])
        assert res.exit_code == 2
        name = flag.removeprefix("--").replace("-", "_")
        assert f"the crazyflie reader does not take {name}" in res.output


def test_the_ready_to_run_command_carries_the_flags() -> None:
    reading = _reading("batch", 1, 14, "1100,1900")
    assert reading == {"imu_source": "batch", "imu": 1, "motor_poles": 14, "pwm_range": (1100.0, 1900.0)}
    cmd = runs.command("online", {"online": ["a.bin"]}, "v.toml", extra=_reading_words(reading))
    assert cmd == (
        "rotorid identify --method online --vehicle v.toml a.bin --imu-source batch --imu 1 --motor-poles 14 "
        "--pwm-range 1100,1900 --out results/"
    )
    assert _reading(None, None, None, None) == {}
