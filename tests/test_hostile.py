"""Issue 38: untrusted inputs beyond the readers. Each test rebuilds a finding's reproducer
(tests/support/hostile.py) and asserts the fixed behaviour: one escaped line and exit 2, a
refusal naming what to change, or the right numbers."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rotorid import excitation, runs
from rotorid.errors import VehicleError, shown
from rotorid.flight import Flight
from rotorid.signal import derivative
from rotorid.vehicle import Vehicle, VehicleWarning
from support.hostile import csv_flight, fails, run, vehicle_toml

# -- 1. one escaping printer -----------------------------------------------------------------


def test_shown_escapes_markup_and_controls_and_caps_length() -> None:
    assert shown("a [/x] [[rotor]] [red]o") == "a \\[/x] [\\[rotor]] \\[red]o"
    assert shown("\x1b]0;pwned\x07\x9b2J") == "\\x1b]0;pwned\\x07\\x9b2J"
    assert shown("x" * 10_000, 50) == "x" * 50 + "…(10000 chars)"
    assert shown("ends\\") == "ends\\\\"


def test_markup_in_a_path_prints_as_written(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "a[" / "x]b.csv")
    code, out, err = run(["info", log])
    assert code == 0, err
    assert f"{tmp_path}/a[/x]b.csv" in out
    garbage = tmp_path / "g[" / "red]o.bin"
    garbage.parent.mkdir()
    garbage.write_bytes(b"\x00\x01not a log\xff" * 10)
    assert "g[/red]o.bin" in fails(["info", garbage])


def test_vehicle_init_escapes_name_and_out(tmp_path: Path) -> None:
    out = tmp_path / "v[" / "x].toml"
    out.parent.mkdir()
    name = "[red]o [[rotor]] \x1b]0;title\x07"
    code, text, err = run(
        ["vehicle", "init", "--layout", "quad-x", "--arm", "0.2", "--mass", "1", "--out", out, "--name", name]
    )
    assert code == 0, err
    assert "[red]o [[rotor]] \\x1b]0;title\\x07" in text and "v[/x].toml" in text and "\x1b" not in text


# -- 2. crashes: short pieces and windows -----------------------------------------------------


@pytest.mark.parametrize("n", [1, 2])
def test_pieces_of_one_or_two_samples_are_judged(n: int) -> None:
    t = np.arange(n) / 500.0
    f = Flight(t, gyro=np.ones((n, 3)), acc=np.ones((n, 3)), cmd=np.full((n, 4), 0.5), meta={"source": "x"})
    assert excitation.judge([f], runs.min_rates()).segments[0].flying_time == 0.0
    assert all(ws == [] for ws in excitation.log_windows([f]).values())


def test_derivative_of_two_and_one_rows() -> None:
    assert derivative(np.array([[1.0], [3.0]]), np.array([0.0, 0.5])).tolist() == [[4.0], [4.0]]
    assert derivative(np.array([[1.0]]), np.array([0.0])).tolist() == [[0.0]]


def test_two_sample_window_and_gap_piece(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "thrust.csv")
    code, out, err = run(["info", f"{log}@1:1.003"])
    assert code == 0 and "no identify command" in out, err
    holed = csv_flight(tmp_path / "holed.csv", rows=np.r_[0:1000, 1500:1502, 1800:2000])  # a gap leaves 2 rows
    code, out, err = run(["info", holed])
    assert code == 0 and "3 segments" in out, err


@pytest.mark.parametrize("size", [42_000, 60_000])
def test_ardupilot_log_cut_by_power_loss(data_dir: Path, tmp_path: Path, size: int) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes((data_dir / "ardupilot" / "backend_log_80k.bin").read_bytes()[:size])
    code, out, err = run(["info", cut, "--allow-corrupt"])
    assert code == 0 and "no identify command" in out, err


# -- 2./3. vehicle files: crashes, silent nonsense, schema ----------------------------------------

ROTORS_AT = "\n[[rotor]]\nposition = [{p}, {p}, 0.0]\ntorque_dir = 1\n[[rotor]]\nposition = [-0.1, 0.1, 0.0]\ntorque_dir = -1\n[[rotor]]\nposition = [-0.1, -0.1, 0.0]\ntorque_dir = 1\n"


@pytest.mark.parametrize(
    ("head", "rotors", "needle"),
    [
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="inf"), "rotor 0 position must be finite"),
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="1e300"), "rotor 0 position must be finite and within ±50"),
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="nan"), "rotor 0 position must be finite"),
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="0.0").replace("0.1", "0.0"), "within 1 mm of the body z axis"),
        ('name = "q"\nmass = 1.0\ncmd_max = "x"', None, "cmd_max must be a number, got"),
        ('name = "q"\nmass = 1.0\ncom = [nan, 0.0, 0.0]', None, "com must be finite"),
        ("name = 5\nmass = 1.0", None, "name must be a string"),
        ('name = "q"\nmass = true', None, "mass must be a number, got 'True'"),
        ('name = "q"\nmass = 1e200', None, "mass must be a positive number of kg, got 1e+200"),
        (
            'name = "q"\nmass = 1.0',
            ROTORS_AT.format(p="0.1").replace("torque_dir = 1\n", "torque_dir = 1.5\n", 1),
            "rotor 0 torque_dir must be +1 or -1",
        ),
        (
            'name = "q"\nmass = 1.0',
            ROTORS_AT.format(p="0.1").replace("torque_dir = 1\n", "torque_dir = true\n", 1),
            "rotor 0 torque_dir must be a number",
        ),
        ('name = "q"\nmass = 1.0\nthrust_exponents = [true]', None, "thrust_exponents must be a list of integers"),
        ('name = "q"\nmass = 1.0\nrotor = 5', "", "rotor must be [[rotor]] tables"),
        (f'name = "{"n" * 100_000}"\nmass = 1.0', None, "name must be a string of 1 to 100 characters"),
    ],
)
def test_vehicle_schema_refuses_with_one_line(tmp_path: Path, head: str, rotors: str | None, needle: str) -> None:
    toml = vehicle_toml(tmp_path / "v.toml", head, rotors)
    with pytest.raises(VehicleError) as e:
        Vehicle.from_toml(toml)
    assert needle in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 400


def test_vehicle_file_that_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_bytes(b'name = "q\xff"\n')
    (tmp_path / "deep.toml").write_text("a=" + "[" * 100_000)
    (tmp_path / "dir.toml").mkdir()
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for name, needle in [
        ("bad", "not UTF-8"),
        ("deep", "nested too deeply"),
        ("dir", "is a folder"),
        ("fifo", "not a regular file"),
    ]:
        with pytest.raises(VehicleError, match=needle):
            Vehicle.from_toml(tmp_path / f"{name}.toml")


def test_implausible_mass_for_the_frame_warns(tmp_path: Path) -> None:
    cf = Vehicle.preset("crazyflie")
    with pytest.warns(VehicleWarning, match="1.5 kg on rotors 40 mm"):
        cf.replace(mass=1.5)
    with pytest.warns(VehicleWarning, match="1000 kg on rotors 40 mm"):
        cf.replace(mass=1000.0)
    log = csv_flight(tmp_path / "f.csv")
    toml = tmp_path / "cf.toml"
    toml.write_text(cf.to_toml().replace("mass = 0.027", "mass = 1.5"))
    code, _, err = run(["info", log, "--vehicle", toml])
    assert code == 0 and err.count("warning:") == 1 and "implausible" in err


def test_identify_refuses_an_absurd_mass_before_estimating(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "f.csv")
    fails(
        ["identify", log, "--method", "delay", "--vehicle", "crazyflie", "--mass", "1e200", "--out", tmp_path / "o"],
        "mass must be a positive number of kg, got 1e+200",
    )
