"""`vehicle init` library side: layouts, motor orders, the commented TOML, the PX4 presets."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rotorid.errors import VehicleError
from rotorid.vehicle import LAYOUTS, PRESETS, Vehicle, build_vehicle, quad_x

TABULATED = [
    ("px4", "quad-x"),
    ("px4", "quad-plus"),
    ("px4", "hex-x"),
    ("ardupilot", "hex-x"),
    ("betaflight", "quad-x"),
]
ORDERS = TABULATED + [("sequential", layout) for layout in LAYOUTS]


@pytest.mark.parametrize(("order", "layout"), ORDERS)
def test_every_layout_is_balanced_and_at_arm_length(order: str, layout: str) -> None:
    v = build_vehicle(layout, arm=0.3, mass=1.5, order=order)
    n = {"quad": 4, "hex": 6, "octo": 8, "y6": 6}[layout.split("-")[0]]
    assert v.n_rotors == n
    np.testing.assert_allclose(np.linalg.norm(v.positions[:, :2], axis=1), 0.3, rtol=1e-12)
    np.testing.assert_allclose(v.positions.sum(axis=0), 0.0, atol=1e-12)  # centred: hover needs no tilt
    assert v.torque_dirs.sum() == 0  # as many cw as ccw: no yaw at equal thrust
    # equal thrusts give no roll/pitch/yaw moment
    np.testing.assert_allclose(v.mixer(k_tau=0.02)[3:] @ np.ones(n), 0.0, atol=1e-12)
    if layout == "y6":  # coaxial pairs: same xy, 0.2 arm apart, opposite spin
        np.testing.assert_allclose(v.positions[0::2, :2], v.positions[1::2, :2])
        np.testing.assert_allclose(v.positions[0::2, 2] - v.positions[1::2, 2], 0.06)
        np.testing.assert_array_equal(v.torque_dirs[0::2], -v.torque_dirs[1::2])


def test_px4_quad_x_is_the_quad_x_preset_and_betaflight_the_same_frame_renumbered() -> None:
    px4 = build_vehicle("quad-x", arm=0.25, mass=1.0)
    np.testing.assert_allclose(px4.positions, quad_x().positions, atol=1e-12)
    np.testing.assert_array_equal(px4.torque_dirs, quad_x().torque_dirs)
    bf = build_vehicle("quad-x", arm=0.25, mass=1.0, order="betaflight")
    # Betaflight 1 rear-right, 2 front-right, 3 rear-left, 4 front-left = PX4 4, 1, 2, 3
    np.testing.assert_allclose(bf.positions, px4.positions[[3, 0, 1, 2]], atol=1e-12)
    np.testing.assert_array_equal(bf.torque_dirs, px4.torque_dirs[[3, 0, 1, 2]])
    # PX4 hex-x motor 1 is on the right arm and spins clockwise
    hexa = build_vehicle("hex-x", arm=0.3, mass=2.0)
    np.testing.assert_allclose(hexa.positions[0], [0, -0.3, 0], atol=1e-12)
    assert hexa.torque_dirs[0] == 1


def test_motor1_direction_mirrors_every_spin() -> None:
    px4 = build_vehicle("quad-x", arm=0.25, mass=1.0)
    rev = build_vehicle("quad-x", arm=0.25, mass=1.0, motor1_dir=1)
    np.testing.assert_array_equal(rev.torque_dirs, -px4.torque_dirs)
    assert build_vehicle("octo-x", 0.4, 3.0, order="sequential", motor1_dir=1).torque_dirs[0] == 1


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"layout": "tri"}, "unknown layout"),
        ({"order": "inav"}, "unknown motor order"),
        ({"layout": "octo-x"}, "no px4 motor order tabulated.*sequential"),
        ({"arm": -0.1}, "arm length must be positive"),
        ({"motor_input": "pwm_us"}, "needs its command range"),
        ({"motor_input": "pwm_us", "cmd_range": (2000.0, 1000.0)}, "max > min"),
        ({"motor1_dir": 2}, "must be -1"),
        ({"mass": 0.0}, "mass must be a positive"),
    ],
)
def test_bad_init_arguments_say_what_is_wrong(kw: dict, match: str) -> None:
    args = {"layout": "quad-x", "arm": 0.25, "mass": 1.0} | kw
    with pytest.raises(VehicleError, match=match):
        build_vehicle(**args)


@settings(max_examples=60, deadline=None)
@given(
    spec=st.sampled_from(ORDERS),
    arm=st.floats(0.02, 2.0, allow_nan=False),
    mass=st.floats(0.01, 50.0, allow_nan=False),
    motor=st.sampled_from([("normalized", None), ("pwm_us", (1000.0, 2000.0)), ("rad_s", (0.0, 1234.5))]),
    motor1_dir=st.sampled_from([None, -1, 1]),
    name=st.text(min_size=1, max_size=12),
)
def test_commented_toml_reads_back_identically(spec, arm, mass, motor, motor1_dir, name) -> None:
    order, layout = spec
    v = build_vehicle(layout, arm, mass, motor[0], motor[1], order=order, motor1_dir=motor1_dir, name=name)
    text = v.to_commented_toml()
    assert Vehicle.from_dict(tomllib.loads(text)).to_dict() == v.to_dict()
    w = v.replace(
        thrust_exponents=(0, 2), thrust_coeffs=np.array([0.01, 3e-3]), k_tau=0.016, inertia=[1e-2, 1e-2, 2e-2]
    )
    assert Vehicle.from_dict(tomllib.loads(w.to_commented_toml())).to_dict() == w.to_dict()


def test_commented_toml_explains_every_key_and_draws_the_motor_order(tmp_path: Path) -> None:
    v = build_vehicle("hex-x", 0.3, 1.8, "pwm_us", (1000.0, 2000.0))
    text = v.to_commented_toml()
    p = tmp_path / "hex.toml"
    p.write_text(text)
    assert Vehicle.from_toml(p).to_dict() == v.to_dict()
    for key in ("name", "mass", "motor_input", "cmd_min", "cmd_max", "thrust_exponents", "thrust_coeffs", "k_tau"):
        assert f"# {key}:" in text
    assert "# thrust_coeffs = ...   (not known yet)" in text and "N / (us)^j" in text
    assert "FLU: x forward, y left, z up" in text
    diagram = [ln for ln in text.splitlines() if "cw" in ln and ln.startswith("#   ") and "torque_dir" not in ln]
    # top view: motors 3 and 5 (front) above 2 and 1 (sides) above 6 and 4 (rear); left is left
    row = {m: next(i for i, ln in enumerate(diagram) if f"{m}c" in ln) for m in range(1, 7)}
    assert row[3] == row[5] < row[1] == row[2] < row[4] == row[6]
    assert diagram[row[1]].index("2ccw") < diagram[row[1]].index("1cw")


def test_px4_presets_take_normalized_commands_and_gazebo_ones_rad_s() -> None:
    for name, mass in (("x500-px4", 2.0), ("iris-px4", 1.5)):
        v = Vehicle.preset(name)
        assert v.motor_input == "normalized" and (v.cmd_min, v.cmd_max) == (0.0, 1.0) and v.mass == mass
        assert v.thrust_coeffs is None and v.tm_rise is None  # to be identified
        gz = Vehicle.preset(name.replace("-px4", "-gazebo"))
        assert gz.motor_input == "rad_s" and gz.cmd_max > 100
        np.testing.assert_array_equal(v.positions, gz.positions)
        np.testing.assert_array_equal(v.inertia, gz.inertia)
    assert {"x500-px4", "iris-px4", "x500-gazebo", "iris-gazebo"} <= set(PRESETS)
    assert Vehicle.preset("x500").name == "x500-gazebo" and Vehicle.load("iris").name == "iris-gazebo"


def test_vehicle_init_command_writes_the_commented_toml_and_refuses_to_overwrite(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rotorid.cli import app

    out = tmp_path / "hex.toml"
    args = ["vehicle", "init", "--layout", "hex-x", "--arm", "0.3", "--mass", "2.1", "--out", str(out)]
    pwm = ["--motor-input", "pwm_us", "--cmd-range", "1000,2000", "--motor1-spin", "ccw", "--name", "my-hex"]
    res = CliRunner().invoke(app, args + pwm)
    assert res.exit_code == 0, res.output
    want = build_vehicle("hex-x", 0.3, 2.1, "pwm_us", (1000.0, 2000.0), motor1_dir=-1, name="my-hex")
    assert out.read_text() == want.to_commented_toml()
    assert Vehicle.load(out).to_dict() == want.to_dict()
    assert "wrote" in res.stdout and "6 rotors" in res.stdout and "1ccw" in res.stdout  # the diagram too
    res = CliRunner().invoke(app, [*args, "--mass", "9"])
    assert res.exit_code == 2 and "exists; give --force" in res.stderr
    assert Vehicle.load(out).mass == 2.1  # untouched
    res = CliRunner().invoke(app, [*args, "--mass", "2.4", "--force"])
    assert res.exit_code == 0 and Vehicle.load(out).mass == 2.4 and Vehicle.load(out).motor_input == "normalized"
    for bad, needle in (
        (["--motor1-spin", "left"], "--motor1-spin 'left' must be ccw or cw"),
        (["--motor-input", "rad_s"], "needs its command range"),
        (["--cmd-range", "1000"], "--cmd-range '1000' must be 2 comma-separated numbers"),
        (["--layout", "tri"], "unknown layout"),
    ):
        res = CliRunner().invoke(app, [*args[:-2], "--out", str(tmp_path / "new.toml"), *bad])
        assert res.exit_code == 2 and needle in res.stderr, res.output
        assert not (tmp_path / "new.toml").exists()


def test_readme_documents_every_vehicle_key() -> None:
    import dataclasses
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("## Your vehicle")
    section = readme[start : readme.index("\n## ", start)]  # up to the next section
    documented = {
        k for row in re.findall(r"^\| (`.+?`) \|", section, flags=re.M) for k in re.findall(r"`\[*(\w+)\]*`", row)
    }
    keys = {f.name for f in dataclasses.fields(Vehicle)} - {"rotors", "source"}
    assert documented == keys | {"rotor", "position", "axis", "torque_dir"}
    assert "rotorid vehicle init --layout" in section
