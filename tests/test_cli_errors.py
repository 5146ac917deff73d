"""Every CLI error path prints exactly one clear line on stderr and exits 2, and leaves nothing
half-written: broken files, wrong windows, missing channels, unwritable output folders, for
identify, info, convert, export, validate and simulate."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid import runs
from rotorid.cli import app
from rotorid.io import table
from rotorid.result import Estimate, Result
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A short simulated six-config-a flight as Parquet (IMU + mocap + commands), the same
    without accelerometer, a garbage file, an empty file, a vehicle TOML and a params.json."""
    d = tmp_path_factory.mktemp("cli")
    sc = scenarios.run("six-config-a", seed=2, duration=6.0)
    f = sc.flights["train"]
    out = {
        "log": table.write(f, d / "flight.parquet"),
        "noacc": table.write(f.replace(acc=None, pos=None, quat=None), d / "noacc.csv"),
        "garbage": d / "garbage.bin",
        "empty": d / "empty.csv",
        "vehicle": d / "six.toml",
        "params": d / "params.json",
        "badjson": d / "bad.json",
    }
    out["garbage"].write_bytes(b"\x00\x01not a log at all\xff" * 10)
    out["empty"].write_bytes(b"")
    sc.vehicle.save(out["vehicle"])
    Result(
        "tls",
        {"k_t": Estimate(3.6e-6, 1e-9, "N/u^2"), "k_tau": Estimate(0.014, 1e-4, "m")},
        vehicle=sc.vehicle.to_dict(),
    ).save(out["params"])
    out["badjson"].write_text("{not json")
    return out


def fails(args: list[str], *needles: str) -> str:
    """Run the CLI; assert exit 2, one line on stderr starting 'error:', containing the needles."""
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (args, res.exit_code, res.output, res.exception)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    for n in needles:
        assert n in errors[0], (n, errors[0])
    return errors[0]


def test_identify_errors(files: dict[str, Path], tmp_path: Path, unwritable: Path) -> None:
    v = str(files["vehicle"])
    base = ["identify", "--method", "tls", "--vehicle", v]
    fails([*base, str(tmp_path / "nope.ulg"), "--out", str(tmp_path / "o")], "nope.ulg", "no such file")
    fails([*base, str(files["garbage"]), "--out", str(tmp_path / "o")], "garbage.bin")
    fails([*base, str(files["empty"]), "--out", str(tmp_path / "o")], "empty.csv", "empty")
    fails([*base, f"{files['log']}@20:30", "--out", str(tmp_path / "o")], "window 20:30", "outside the log")
    fails([*base, f"{files['log']}@3:1", "--out", str(tmp_path / "o")], "3:1", "empty")
    fails([*base, str(files["noacc"]), "--out", str(tmp_path / "o")], "noacc.csv", "acc")
    fails(["identify", "--method", "magic", "--vehicle", v, str(files["log"])], "unknown method 'magic'")
    fails(["identify", "--method", "tls", "--vehicle", "nosuch", str(files["log"])], "nosuch", "preset")
    assert not (tmp_path / "o").exists()
    # a correct run into an unwritable folder: one line, nothing created
    fails([*base, str(files["log"]), "--out", str(unwritable)], str(unwritable), "cannot write")
    assert not unwritable.exists()
    taken = tmp_path / "taken"
    taken.write_text("keep")
    fails([*base, str(files["log"]), "--out", str(taken)], "taken")
    assert taken.read_text() == "keep" and sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_info_and_export_errors(files: dict[str, Path], tmp_path: Path, unwritable: Path) -> None:
    fails(["info", str(tmp_path / "nope.csv")], "nope.csv", "no such file")
    fails(["info", str(files["garbage"])], "garbage.bin")
    fails(["info", f"{files['log']}@50:60"], "50:60", "outside the log")
    fails(["info", f"{files['log']}@a:b"], "a:b")
    fails(["convert", str(files["garbage"]), "--to", str(tmp_path / "x.csv")], "garbage.bin")
    fails(["convert", str(files["log"]), "--to", str(tmp_path / "x.txt")], "x.txt", ".csv, .parquet")
    fails(["convert", str(files["log"]), "--window", "50:60", "--to", str(tmp_path / "x.csv")], "outside the log")
    fails(["convert", str(files["log"]), "--to", str(unwritable / "x.csv")], "cannot write")
    assert list(tmp_path.iterdir()) == [] and not unwritable.exists()


def test_export_params_errors(files: dict[str, Path], tmp_path: Path, unwritable: Path) -> None:
    p = str(files["params"])
    out = str(tmp_path / "v.sdf")
    fails(["export", str(tmp_path / "nope.json"), "--format", "toml", "--out", out], "nope.json", "no such")
    fails(["export", str(files["badjson"]), "--format", "toml", "--out", out], "bad.json", "not a rotorid")
    fails(["export", str(files["log"]), "--format", "toml", "--out", out], "flight.parquet")
    fails(["export", p, "--format", "urdf", "--out", out], "unknown export format 'urdf'")
    # the result identified no inertia: every target but TOML needs it
    fails(["export", p, "--format", "rltools", "--out", out], "inertia tensor")
    fails(["export", p, "--format", "toml", "--out", out, "--vehicle", "nosuch"], "nosuch")
    fails(["export", p, "--format", "toml", "--out", out, "--config", "B"], "no configuration 'B'")
    fails(["export", p, "--format", "toml", "--out", str(tmp_path)], "is a folder")
    fails(["export", p, "--format", "toml", "--out", str(unwritable / "v.toml")], "cannot write")
    assert list(tmp_path.iterdir()) == [] and not unwritable.exists()
    ok = CliRunner().invoke(app, ["export", p, "--format", "toml", "--out", str(tmp_path / "v.toml")])
    assert ok.exit_code == 0 and Vehicle.from_toml(tmp_path / "v.toml").thrust_coeffs.tolist() == [3.6e-6]
    cf = tmp_path / "cf.json"
    Result("delay", {"thrust_c2": Estimate(0.13), "k_tau": Estimate(0.0055), "tm": Estimate(0.07),
                     "I_xx": Estimate(1.6e-5), "I_yy": Estimate(1.6e-5), "I_zz": Estimate(2.9e-5)},
           vehicle=Vehicle.preset("crazyflie").to_dict()).save(cf)  # fmt: skip
    fails(["export", str(cf), "--format", "gazebo", "--out", out], "--max-rotor-speed")
    fails(["export", str(cf), "--format", "rotorpy", "--out", out, "--max-rotor-speed", "-5"], "positive")
    assert not Path(out).exists()


def test_validate_errors(files: dict[str, Path], tmp_path: Path) -> None:
    p, o = str(files["params"]), str(tmp_path / "val")
    fails(["validate", str(tmp_path / "nope.json"), str(files["log"]), "--out", o], "nope.json")
    fails(["validate", p, str(files["garbage"]), "--out", o], "garbage.bin")
    fails(["validate", p, f"{files['log']}@40:50", "--out", o], "outside the log")
    fails(["validate", p, str(files["log"]), "--config", "B", "--out", o], "configuration 'B'")
    assert not Path(o).exists()


def test_simulate_errors(tmp_path: Path, unwritable: Path) -> None:
    fails(["simulate", "no-such-scenario", "--out", str(tmp_path / "sim")], "no-such-scenario")
    fails(["simulate", "kwon-payload", "--out", str(unwritable)], "cannot write")
    fails(["simulate", "kwon-payload", "--set", "bogus=1", "--out", str(tmp_path / "sim")], "bogus")
    fails(["simulate", "kwon-payload", "--format", "xls", "--out", str(tmp_path / "sim")], "xls")
    assert list(tmp_path.iterdir()) == [] and not unwritable.exists()


def test_real_process_prints_one_line_and_exits_2(files: dict[str, Path]) -> None:
    """The same in a real process (no test runner between the CLI and the terminal)."""
    res = subprocess.run(
        [sys.executable, "-c", "from rotorid.cli import app; app()", "info", str(files["garbage"])],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "60"},
        timeout=60,
    )
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error:") and "garbage.bin" in res.stderr
    assert res.stdout == ""


def test_readme_command_table_matches_help() -> None:
    """README's command table holds exactly the CLI's commands, each with its --help line."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = dict(re.findall(r"^\| `rotorid ([\w-]+)` \| (.+?) \|$", readme, flags=re.M))
    helps = {}
    for c in app.registered_commands:
        if c.hidden:  # old spellings kept as aliases
            continue
        name = c.name or c.callback.__name__.replace("_", "-")
        doc = (c.help or c.callback.__doc__ or "").strip().split("\n\n")[0]  # first paragraph, as --help shows it
        helps[name] = " ".join(doc.split())
    assert rows == helps
    assert readme.startswith("# rotorid\n\n```\nmake demo    # ")  # the two newcomer commands come first


def test_identify_refuses_a_preset_of_another_flight_stack(tmp_path: Path) -> None:
    """The Crazyflie preset given for a Betaflight log (a converted one here, its original format
    kept): refused in one line before any fit, as the app does (`vehicle.preset_mismatch`), for
    the CLI, batch and the app alike (`runs.Request.whole`); a vehicle file of that size passes."""
    sc = scenarios.run("eschmann-crazyflie", seed=0, duration=5.0)
    f = sc.flights["thrust"]
    log = table.write(f.replace(meta={**f.meta, "format": "blackbox"}), tmp_path / "bf.parquet")
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app, ["identify", "--method", "delay", "--vehicle", "crazyflie", str(log), "--out", str(out)]
    )
    assert res.exit_code == 2 and not out.exists()
    assert "bf.parquet: the crazyflie preset is a 27 g vehicle" in res.output and "not this blackbox log" in res.output
    own = Vehicle.preset("crazyflie").replace(source=str(tmp_path / "cf.toml"))
    assert runs.identify("delay", [str(log)], own).params["tm"].std > 0
