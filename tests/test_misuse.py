"""The misuse cases of issue 12, each with the message it gets: swapped --roll-pitch/--yaw
flights, tls on normalized commands, a pwm_us vehicle without a command range, rad/s commands
with the default exponents, a window ending on the log's last sample, bad window syntax.
None ends in a traceback; refusals are one line and exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.io import load, table
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle
from test_cli_errors import fails


def _identify(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["identify", *args])
    assert ("Traceback" not in res.output and res.exception is None) or isinstance(res.exception, SystemExit)
    return res.exit_code, res.stdout, res.stderr


def test_swapped_roll_pitch_and_yaw_flights_are_refused(cf_logs, tmp_path: Path) -> None:
    line = fails(
        [
            "identify",
            *("--method", "delay", "--vehicle", "crazyflie", f"{cf_logs['log10']}@35:65"),
            *("--roll-pitch", f"{cf_logs['log16']}@32:38,45:49", "--yaw", f"{cf_logs['log15']}@55:90"),
            *("--out", str(tmp_path / "o")),
        ],
        "--roll-pitch and --yaw look swapped",
        "give each log to the other option",
    )
    assert "(yaw 21.4 rad/s², roll/pitch 11.9 rad/s²)" in line and "(yaw 1.44 rad/s², roll/pitch 42.8 rad/s²)" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_tls_on_normalized_commands_is_refused_unless_asked(cf_logs, tmp_path: Path) -> None:
    args = ["identify", "--method", "tls", "--vehicle", "crazyflie", f"{cf_logs['log10']}@35:65"]
    fails(
        [*args, "--out", str(tmp_path / "o")],
        "--method tls models each rotor's thrust as k_t ω² of its rotor speed",
        "normalized commands and the logs hold no rotor speeds",
        "--method delay",
    )
    assert not (tmp_path / "o").exists()
    code, out, err = _identify(*args[1:], "--speed", "cmd", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "warning: --speed cmd on normalized commands: thrust taken as k_t u² of the normalized command" in err
    params = json.loads((tmp_path / "o" / "params.json").read_text())["params"]
    assert all("not a rotor speed" in p["assumption"] for p in params.values())
    assert all("the motors' lag is not modelled" in p["assumption"] for p in params.values())
    assert "well" not in [ln.split()[-1] for ln in out.splitlines() if ln.startswith(("k_t", "I_xx"))]
    # with the motors' lag given, the rotor states lag the commands: only the quadratic law is assumed
    code, _, err = _identify(*args[1:], "--speed", "cmd", "--tm", "0.07", "--out", str(tmp_path / "t"))
    assert code == 0, err
    params = json.loads((tmp_path / "t" / "params.json").read_text())["params"]
    assert all("not a rotor speed" in p["assumption"] for p in params.values())
    assert not any("lag is not modelled" in p["assumption"] for p in params.values())


def test_pwm_vehicle_without_command_range(cf_logs, tmp_path: Path) -> None:
    """Commands in µs (1000–2000) on a pwm_us vehicle that keeps the default 0..1 range."""
    f = load(f"{cf_logs['log10']}@35:65")[0]
    log = table.write(f.replace(cmd=1000.0 + 1000.0 * f.cmd, meta={}), tmp_path / "pwm.csv")
    veh = tmp_path / "pwm.toml"
    Vehicle.preset("crazyflie").replace(motor_input="pwm_us").save(veh)
    fails(
        ["identify", "--method", "delay", "--vehicle", str(veh), str(log), "--out", str(tmp_path / "o")],
        "pwm_us but it declares no command range",
        "cmd_min/cmd_max",
    )
    assert not (tmp_path / "o").exists()


def test_rad_s_commands_with_the_default_exponents(tmp_path: Path) -> None:
    """A rad/s vehicle (rotor speeds 100–1500) through the default thrust curve 0,1,2: a result,
    with the hover command in rad/s and the coefficients per (rad/s)^J."""
    sc = scenarios.run("six-config-a", seed=4, duration=8.0)
    log = table.write(sc.flights["train"], tmp_path / "train.parquet")
    sc.vehicle.save(tmp_path / "six.toml")
    code, out, err = _identify(
        "--method", "delay", "--vehicle", str(tmp_path / "six.toml"), str(log), "--out", str(tmp_path / "o")
    )
    assert code == 0, err
    params = json.loads((tmp_path / "o" / "params.json").read_text())["params"]
    assert params["hover_cmd"]["unit"] == "rad/s" and params["thrust_c2"]["unit"] == "N/(rad/s)^2"
    hover = sc.true_vehicle.hover_command()
    assert params["hover_cmd"]["value"] == pytest.approx(hover, rel=0.02)
    assert "rad/s" in next(ln for ln in out.splitlines() if ln.startswith("hover_cmd"))


def test_window_syntax_and_the_last_sample(cf_logs, tmp_path: Path) -> None:
    log10 = str(cf_logs["log10"])
    fails(
        ["identify", "--method", "delay", "--vehicle", "crazyflie", f"{log10}@35-65", "--out", str(tmp_path / "o")],
        f"{log10}@35-65: window '35-65' is not of the form t0:t1 (seconds): write e.g. {log10}@35:65,",
    )
    end = float(load(log10)[0].t[-1])
    (f,) = load(f"{log10}@70:{end + 0.002:.4f}")  # 2 ms past the end: clipped, not refused
    assert f.t[-1] == end
    fails(["info", f"{log10}@70:{end + 0.02:.3f}"], "lies outside the log")


def test_delay_on_the_roll_pitch_log_alone(cf_logs, tmp_path: Path) -> None:
    """The issue's `identify --method delay --vehicle crazyflie log15@55:65` ended in brentq's
    ValueError; now it identifies T_m and the thrust curve and says what was not identified."""
    code, out, err = _identify(
        "--method", "delay", "--vehicle", "crazyflie", f"{cf_logs['log15']}@55:65", "--out", str(tmp_path / "o")
    )
    assert code == 0, err
    params = json.loads((tmp_path / "o" / "params.json").read_text())["params"]
    assert 0.05 < params["tm"]["value"] < 0.1 and 0.5 < params["hover_cmd"]["value"] < 0.8
    assert "No roll/pitch flight: I_xx, I_yy (and so I_zz, K_tau) were not identified." in " ".join(out.split())
