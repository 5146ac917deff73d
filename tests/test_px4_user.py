"""Issue 12's PX4 user, through the command line only: a bench log, a flight logged too slowly,
then a fast one whose windows `info` finds and `identify` uses without being told — the result
within the simulator tolerances of `test_delay_sim` (ULogs written by `rotorid simulate`)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.io import read
from rotorid.io.ulog import write as write_ulog
from rotorid.vehicle import Vehicle


def cli(*args: str):
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("px4-user")
    cli("simulate", "eschmann-crazyflie", "--out", out / "sim", "--format", "ulog", "--duration", "10")
    # the user describes the vehicle: a Crazyflie numbered clockwise from the front-right motor
    cli(
        "vehicle", "init", "--layout", "quad-x", "--arm", "0.0396", "--mass", "0.027",
        "--order", "sequential", "--out", out / "cf.toml",
    )  # fmt: skip
    return out


def test_bench_log_is_never_armed(px4_logs: dict[str, Path]) -> None:
    said = flat(cli("info", px4_logs["sample"]).stdout)
    assert "never armed: the motors stay at 0 for the whole log" in said
    assert "no identify command to suggest" in said


def test_the_users_vehicle_file_is_the_simulated_vehicle(sim: Path) -> None:
    mine, truth = Vehicle.load(sim / "cf.toml"), Vehicle.load(sim / "sim" / "vehicle.toml")
    np.testing.assert_allclose(mine.positions, truth.positions, atol=1e-4)
    np.testing.assert_array_equal(mine.torque_dirs, truth.torque_dirs)
    assert mine.motor_input == truth.motor_input == "normalized" and mine.mass == truth.mass


def test_default_logging_profile_is_too_slow_and_info_says_the_fix(sim: Path) -> None:
    (f,) = read(sim / "sim" / "thrust.ulg")
    slow = write_ulog(f, sim / "slow.ulg", rates={"actuator_motors": 20.0}, params={"SDLOG_PROFILE": 1})
    said = flat(cli("info", slow, "--vehicle", sim / "cf.toml").stdout)
    assert "cmd 4 col, 20.0 Hz (actuator_motors) too slow for delay (≥ 100 Hz), tls (≥ 50 Hz), online (≥ 50 Hz)" in said
    assert "SDLOG_PROFILE=25" in said
    assert "no identify command to suggest: every method needs faster logs (see fix)" in said


@pytest.mark.slow
def test_fast_logs_get_windows_and_identify_uses_them_without_being_told(sim: Path) -> None:
    logs = [sim / "sim" / f"{n}.ulg" for n in ("thrust", "roll_pitch", "yaw")]
    veh = sim / "cf.toml"
    out = cli("info", *logs, "--vehicle", veh).stdout
    assert "flew 10.0 s in 1 span" in out
    printed = next(ln for ln in out.splitlines() if ln.startswith("rotorid identify --method delay"))
    words = shlex.split(printed)
    assert words[words.index("--roll-pitch") + 1].startswith(f"{logs[1]}@")
    assert words[words.index("--yaw") + 1].startswith(f"{logs[2]}@")
    # the user runs identify without any window ...
    res = cli(
        "identify", "--method", "delay", "--vehicle", veh, logs[0],
        "--roll-pitch", logs[1], "--yaw", logs[2], "--out", sim / "res",
    )  # fmt: skip
    assert "thrust windows found in" in flat(res.stdout)
    params = json.loads((sim / "res" / "params.json").read_text())
    truth = json.loads((sim / "sim" / "truth.json").read_text())["params"]
    err = {
        k: 100 * (params["params"][k]["value"] - truth[k]) / truth[k]
        for k in ("tm", "hover_cmd", "I_xx", "I_yy", "I_zz", "k_tau")
    }
    assert abs(err["tm"]) < 3 and abs(err["hover_cmd"]) < 1, err  # test_delay_sim's tolerances
    assert max(abs(err[k]) for k in ("I_xx", "I_yy", "I_zz")) < 5 and abs(err["k_tau"]) < 10, err
    # ... and the windows it used are the ones info printed: the printed command gives the same numbers
    cli(*words[1:-1], sim / "res2")
    again = json.loads((sim / "res2" / "params.json").read_text())
    assert again["params"]["tm"]["value"] == pytest.approx(params["params"]["tm"]["value"], rel=1e-12)
    assert [i["windows"] for i in again["inputs"]] == [i["windows"] for i in params["inputs"]]
