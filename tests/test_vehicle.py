"""Vehicle: presets, mixer, thrust curve, TOML round trip and every validation message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rotorid.errors import VehicleError
from rotorid.vehicle import PRESETS, Rotor, Vehicle


def test_crazyflie_preset_matches_the_paper() -> None:
    v = Vehicle.preset("crazyflie")
    assert v.mass == 0.027 and v.n_rotors == 4 and v.motor_input == "normalized"
    np.testing.assert_allclose(v.positions[:, :2], [[0.028, -0.028], [-0.028, -0.028], [-0.028, 0.028], [0.028, 0.028]])
    np.testing.assert_array_equal(v.torque_dirs, [-1, 1, -1, 1])
    np.testing.assert_array_equal(v.axes, np.tile([0, 0, 1.0], (4, 1)))


def test_mixer_of_the_crazyflie() -> None:
    v = Vehicle.preset("crazyflie")
    b = v.mixer(k_tau=0.006)
    a = 0.028
    np.testing.assert_allclose(b[2], 1.0)  # every rotor pushes +z
    np.testing.assert_allclose(b[:2], 0.0)
    np.testing.assert_allclose(b[3], [-a, -a, a, a])  # roll moment = y f
    np.testing.assert_allclose(b[4], [-a, a, a, -a])  # pitch moment = -x f
    np.testing.assert_allclose(b[5], 0.006 * np.array([-1, 1, -1, 1]))
    # about a CoM shifted by +x the pitch arms change by x
    np.testing.assert_allclose(v.mixer(about=np.array([0.01, 0, 0]))[4], [-a + 0.01, a + 0.01, a + 0.01, -a + 0.01])


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_valid_and_round_trips(name: str, tmp_path: Path) -> None:
    v = Vehicle.preset(name)
    p = tmp_path / f"{name}.toml"
    v.save(p)
    w = Vehicle.from_toml(p)
    assert w.source == str(p)
    assert v.to_dict() == w.to_dict()
    assert Vehicle.load(name).to_dict() == v.to_dict()


def test_toml_round_trip_with_every_field(tmp_path: Path) -> None:
    v = Vehicle.preset("iris").replace(
        com=np.array([0.01, -0.002, 0.03]),
        imu_offset=np.array([0.0, 0.0, 0.05]),
        pwm_min=1000.0,
        pwm_max=2000.0,
        thrust_exponents=(1, 2),
        thrust_coeffs=np.array([[1e-7, 5e-6]] * 4),
    )
    v.save(tmp_path / "iris.toml")
    w = Vehicle.load(tmp_path / "iris.toml")
    for k in (
        "mass",
        "motor_input",
        "k_tau",
        "tm_rise",
        "tm_fall",
        "pwm_min",
        "pwm_max",
        "thrust_exponents",
        "cmd_max",
    ):
        assert getattr(w, k) == getattr(v, k), k
    for k in ("inertia", "com", "imu_offset", "thrust_coeffs", "positions", "axes", "torque_dirs"):
        np.testing.assert_array_equal(getattr(w, k), getattr(v, k), err_msg=k)


def test_thrust_polynomial_and_hover() -> None:
    v = Vehicle.preset("crazyflie").replace(thrust_coeffs=np.array([0.0, 0.0, 0.15]))
    u = np.array([[0.5, 0.6, 0.7, 0.8]])
    np.testing.assert_allclose(v.thrust(u), 0.15 * u**2)
    # 4 * 0.15 u^2 = 0.027 g  ->  u = sqrt(0.027 g / 0.6)
    assert v.hover_command() == pytest.approx(np.sqrt(0.027 * 9.80665 / 0.6), rel=1e-9)
    per_motor = v.replace(thrust_exponents=(2,), thrust_coeffs=np.array([[0.1], [0.2], [0.3], [0.4]]))
    np.testing.assert_allclose(per_motor.thrust(u), np.array([[0.1, 0.2, 0.3, 0.4]]) * u**2)
    with pytest.raises(VehicleError, match="cannot hover"):
        v.replace(thrust_coeffs=np.array([0.0, 0.0, 0.01])).hover_command()
    with pytest.raises(VehicleError, match="no thrust curve"):
        Vehicle.preset("quad-x").thrust(u)


def _rotors(n: int) -> tuple[Rotor, ...]:
    ang = 2 * np.pi * np.arange(n) / n
    return tuple(Rotor(position=[np.cos(a), np.sin(a), 0], torque_dir=(-1) ** k) for k, a in enumerate(ang))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"mass": 0.0}, "mass must be a positive number of kg, got 0.0"),
        ({"mass": -1.2}, "mass must be a positive number of kg, got -1.2"),
        ({"mass": float("nan")}, "mass must be a positive number of kg, got nan"),
        ({"rotors": _rotors(2)}, "needs at least 3 rotors, got 2"),
        (
            {"rotors": (*_rotors(3), Rotor(position=[0, 0, 0], torque_dir=1, axis=[0, 0, 2.0]))},
            r"rotor 3 thrust axis \[0.0, 0.0, 2.0\] is not a unit vector \(norm 2.000000\)",
        ),
        ({"rotors": (*_rotors(3), Rotor(position=[0, 0, 0], torque_dir=0))}, "rotor 3 torque_dir must be"),
        ({"motor_input": "rpm"}, "motor_input must be one of normalized, rad_s, pwm_us, got 'rpm'"),
        ({"inertia": np.diag([1.0, -1.0, 1.0])}, "inertia must be a symmetric positive-definite"),
        ({"thrust_coeffs": np.ones(3)}, r"thrust_coeffs shape \(3,\) does not match 1 exponents"),
        ({"tm_rise": -0.01}, "tm_rise must be positive seconds"),
    ],
)
def test_validation_messages(kw: dict, message: str) -> None:
    args = {"name": "test", "mass": 1.0, "rotors": _rotors(4), **kw}
    with pytest.raises(VehicleError, match=message):
        Vehicle(**args)


def test_toml_errors(tmp_path: Path) -> None:
    base = Vehicle.preset("quad-x").to_toml()
    p = tmp_path / "v.toml"
    p.write_text("colour = 'red'\n" + base)
    with pytest.raises(VehicleError, match=r"unknown key\(s\) colour; allowed: .*mass"):
        Vehicle.from_toml(p)
    p.write_text(base + "\nspin = 'cw'\n")  # lands in the last [[rotor]] table
    with pytest.raises(VehicleError, match=r"rotor 3: unknown key\(s\) spin; allowed: axis, position, torque_dir"):
        Vehicle.from_toml(p)
    p.write_text(base.replace("mass = 1.0", ""))
    with pytest.raises(VehicleError, match="missing key 'mass'"):
        Vehicle.from_toml(p)
    p.write_text("mass = [")
    with pytest.raises(VehicleError, match="not valid TOML"):
        Vehicle.from_toml(p)
    with pytest.raises(VehicleError, match="vehicle file not found"):
        Vehicle.from_toml(tmp_path / "none.toml")
    with pytest.raises(VehicleError, match="unknown vehicle preset 'hexa'; choose one of crazyflie"):
        Vehicle.preset("hexa")
    with pytest.raises(VehicleError, match="neither a preset"):
        Vehicle.load("hexa")


def test_hover_command_on_a_curve_that_dips_takes_the_rising_crossing() -> None:
    # rad/s curve with exponents 0, 1, 2 fitted over 600-900 rad/s: positive constant, negative
    # slope; it carries the weight share at 0 rad/s, dips below, and rises through it again.
    v = Vehicle.preset("x500").replace(thrust_exponents=(0, 1, 2), thrust_coeffs=np.array([6.0, -0.03, 4.2e-5]))
    need = 2.0 * 9.80665 / 4
    u = v.hover_command()
    assert 6.0 - 0.03 * u + 4.2e-5 * u**2 == pytest.approx(need, rel=1e-9)
    assert 0.03 / (2 * 4.2e-5) < u < v.cmd_max  # the rising root, not the falling one near 0


def test_hover_command_on_a_curve_that_carries_the_weight_everywhere_is_a_clear_error() -> None:
    # e.g. delay on a roll/pitch window (log15@55:65): a constant term above the weight share
    v = Vehicle.preset("crazyflie").replace(thrust_coeffs=np.array([0.09, -0.05, 0.06]))
    with pytest.raises(VehicleError, match=r"carries the weight at the lowest command \(0\).*thrust flight"):
        v.hover_command()


def test_hover_command_names_a_missing_command_range() -> None:
    # pwm_us vehicle with the default 0..1 range, curve fitted over 1000-2000 us
    pwm = Vehicle.preset("quad-x").replace(motor_input="pwm_us", thrust_exponents=(0, 1, 2))
    with pytest.raises(VehicleError, match=r"pwm_us but it declares no command range.*cmd_min/cmd_max"):
        pwm.replace(thrust_coeffs=np.array([3.0, -4e-3, 2e-6])).hover_command()
    with pytest.raises(VehicleError, match=r"cannot hover.*declares no command range"):
        pwm.replace(thrust_coeffs=np.array([-3.0, 0.0, 2e-6])).hover_command()
    assert pwm.replace(cmd_min=1000.0, cmd_max=2000.0, thrust_coeffs=np.array([-3.0, 0.0, 2e-6])).hover_command() == (
        pytest.approx(np.sqrt((9.80665 / 4 + 3.0) / 2e-6), rel=1e-9)
    )
