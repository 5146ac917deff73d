"""`rotorid identify` hygiene (issue 12 part 4): options of another method refused in one
line, `--help` grouped by method, window syntax and overhang, `--out` replaced whole,
`--version`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

import rotorid
from rotorid.cli import app
from rotorid.errors import WindowError
from rotorid.io import load, parse_spec, table
from rotorid.registry import methods
from rotorid.sim import scenarios
from test_cli_errors import fails


@pytest.fixture(scope="module")
def six(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A short simulated six-config-a flight as Parquet and its vehicle TOML."""
    d = tmp_path_factory.mktemp("six")
    sc = scenarios.run("six-config-a", seed=3, duration=8.0)
    sc.vehicle.save(d / "six.toml")
    return {"log": table.write(sc.flights["train"], d / "train.parquet"), "vehicle": d / "six.toml"}


def test_options_of_another_method_are_refused_in_one_line(six: dict[str, Path], tmp_path: Path) -> None:
    base = ["identify", "--method", "delay", "--vehicle", str(six["vehicle"]), str(six["log"])]
    out = ["--out", str(tmp_path / "o")]
    line = fails([*base, "--variant", "rls", "--source", "mocap", "--mass-b", "1.4", *out])
    assert line == (
        "error: --method delay does not take --mass-b (tls), --source (tls), --variant (online); "
        "remove them or choose that method"
    )
    fails(["identify", "--method", "online", "--vehicle", "crazyflie", "x.csv", "--yaw", "y.csv"], "--yaw (delay)")
    # an option given at its default value is still given, and still refused
    fails(["identify", "--method", "tls", "--vehicle", "crazyflie", "x.csv", "--izz-ratio", "1.832"], "--izz-ratio")
    assert not (tmp_path / "o").exists()


def test_help_groups_every_method_option_under_its_method() -> None:
    """Each option one method takes (from the registry) sits in that method's help panel, and
    every option in a method panel belongs to that method; an option several methods take
    sits with the general ones."""
    cmd = typer.main.get_command(app).commands["identify"]
    panels = {p.name: getattr(p, "rich_help_panel", None) for p in cmd.params if p.param_type_name == "option"}
    owners = Counter(o for m in methods().values() for o in m.options)
    # --mass KG is any method's (a tls configuration's NAME=KG too); --motor-spread is tls's and online's
    general = {"mass"} | {o for o, n in owners.items() if n > 1}
    assert "motor_spread" in general
    for m in methods().values():
        for opt in set(m.options) - general:
            assert panels[opt] == f"--method {m.name} ({m.title})", (m.name, opt)
    owned = {o for m in methods().values() for o in m.options}
    # the readers' options (any method's logs) sit in a panel of their own
    reading = {n for n, p in panels.items() if p == "Reading the log (the reader's options)"}
    assert reading == {"imu_source", "imu", "motor_poles", "pwm_range"}
    assert {n for n, p in panels.items() if p} - reading == owned - general and all(panels[g] is None for g in general)
    text = CliRunner().invoke(app, ["identify", "--help"], env={"COLUMNS": "200"}).output
    heads = [f"\n{panels['roll_pitch']}:\n", f"\n{panels['config']}:\n", f"\n{panels['variant']}:\n"]
    assert all(h in text for h in heads) and [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)
    assert text.index("--roll-pitch") > text.index(heads[0]) and text.index("--variant") > text.index(heads[2])


def test_window_syntax_is_named(six: dict[str, Path]) -> None:
    log = str(six["log"])
    with pytest.raises(WindowError, match=r"window '35-65' is not of the form t0:t1 \(seconds\): write e.g."):
        parse_spec(f"{log}@35-65")
    fails(["info", f"{log}@1-5"], "window '1-5' is not of the form t0:t1", f"e.g. {log}@35:65")
    with pytest.raises(WindowError, match="window '1:2:3' is not of the form t0:t1"):
        parse_spec(f"{log}@1:2:3")
    odd = six["log"].parent / "flight@home.csv"  # a file whose name holds an '@' is still a file
    odd.write_text("t\n")
    assert parse_spec(str(odd)).path == odd and parse_spec(str(odd)).windows == ()


def test_window_overhanging_by_one_sample_is_clipped(six: dict[str, Path]) -> None:
    f = load(str(six["log"]))[0]
    dt = 1.0 / f.rate
    end = float(f.t[-1])
    slack = max(dt, 0.005)
    clipped = load(f"{six['log']}@{end - 2:.6f}:{end + 0.99 * slack:.6f}")[0]
    assert clipped.t[-1] == end and clipped.t[0] == pytest.approx(end - 2, abs=dt)
    start = load(f"{six['log']}@{f.t[0] - 0.99 * slack:.6f}:{f.t[0] + 1:.6f}")[0]
    assert start.t[0] == f.t[0]
    with pytest.raises(WindowError, match="lies outside the log"):
        load(f"{six['log']}@{end - 2:.6f}:{end + 1.5 * slack:.6f}")


def test_out_is_replaced_whole(six: dict[str, Path], tmp_path: Path) -> None:
    """A second run into the same --out leaves no file of the first (e.g. a figure the new
    run does not draw) beside the new params.json."""
    out = tmp_path / "run"
    args = ["identify", "--method", "tls", "--vehicle", str(six["vehicle"]), str(six["log"]), "--out", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    first = {p.name for p in out.iterdir()}
    (out / "old_figure.png").write_bytes(b"\x89PNG stale")
    before = json.loads((out / "params.json").read_text())
    res = CliRunner().invoke(app, [*args[:-2], "--r-sigma", "100", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert {p.name for p in out.iterdir()} == first and "params.json" in first
    after = json.loads((out / "params.json").read_text())
    assert before["settings"]["r_sigma"] == 250.0 and after["settings"]["r_sigma"] == 100.0
    assert np.isfinite(after["params"]["k_t"]["value"])


def test_tls_model_options(six: dict[str, Path], tmp_path: Path) -> None:
    """--imu-delay SECONDS, --mocap-delay SECONDS, --no-yaw-moment, --no-rotor-drag and
    --no-rotor-gains reach the settings params.json records; by default both lags are measured
    (numbers recorded: the simulated pose lags 5 ms), the yaw moment is on and the rotors' gains
    are estimated (k_t_m1.. in params.json)."""
    base = ["identify", "--method", "tls", "--vehicle", str(six["vehicle"]), str(six["log"])]
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    st = json.loads((tmp_path / "a" / "params.json").read_text())["settings"]
    assert abs(st["imu_delay"]) <= 0.025 and st["yaw_moment"] and st["rotor_drag"] and st["rotor_gains"]
    assert "k_t_m1" in json.loads((tmp_path / "a" / "params.json").read_text())["params"]
    assert st["mocap_delay"] - st["imu_delay"] == pytest.approx(0.005, abs=3e-4)
    opts = ["--imu-delay", "0.002", "--mocap-delay", "0.003", "--no-yaw-moment", "--no-rotor-drag", "--no-rotor-gains"]
    opts += ["--out", str(tmp_path / "b")]
    res = CliRunner().invoke(app, [*base, *opts])
    assert res.exit_code == 0, res.output
    st = json.loads((tmp_path / "b" / "params.json").read_text())["settings"]
    assert st["imu_delay"] == 0.002 and st["mocap_delay"] == 0.003 and not st["yaw_moment"] and not st["rotor_drag"]
    assert not st["rotor_gains"]
    fails([*base, "--mocap-delay", "5ms", "--out", str(tmp_path / "c")], "--mocap-delay must be 'auto' or seconds")
    fails([*base, "--imu-delay", "4ms", "--out", str(tmp_path / "c")], "--imu-delay must be 'auto' or seconds")
    fails([*base, "--imu-delay", "0.1", "--out", str(tmp_path / "c")], "--imu-delay must be within")
    assert not (tmp_path / "c").exists()


def test_version() -> None:
    for args in (["--version"], ["--version", "identify"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0 and res.output == f"rotorid {rotorid.__version__}\n"
