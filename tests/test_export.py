"""Parameter exports: every target read back and checked against the rotorid model it came from
(same wrench for the same rotor state), and clear ExportErrors for what a target cannot take."""

from __future__ import annotations

import json
import math
import runpy
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from rotorid.errors import ExportError
from rotorid.export import FORMATS, export, export_params, quadratic_in_speed
from rotorid.result import Estimate, Result
from rotorid.vehicle import Rotor, Vehicle


@pytest.fixture(scope="module")
def iris() -> Vehicle:
    """A rad/s vehicle with CoM and IMU offsets and products of inertia (nothing trivial)."""
    j = np.array([[0.029, 0.0004, -0.0002], [0.0004, 0.031, 0.0001], [-0.0002, 0.0001, 0.055]])
    return Vehicle.preset("iris").replace(
        com=np.array([0.004, -0.003, 0.012]), imu_offset=np.array([0.02, 0.01, -0.03]), inertia=j
    )


@pytest.fixture(scope="module")
def cf() -> Vehicle:
    """A normalized-command vehicle with an affine-quadratic thrust curve (like the Crazyflie)."""
    return Vehicle.preset("crazyflie").replace(
        thrust_coeffs=np.array([0.01, 0.05, 0.15]),
        k_tau=0.0059,
        tm_rise=0.072,
        tm_fall=0.072,
        inertia=np.diag([1.6e-5, 1.7e-5, 2.9e-5]),
        com=np.array([0.001, 0.0, 0.0]),
    )


def _wrench_about_com(v: Vehicle, u: np.ndarray) -> np.ndarray:
    """rotorid's model: per-rotor thrust from the polynomial, mixed about the CoM (N, N m)."""
    return v.mixer(about=v.com) @ v.thrust(u[None, :])[0]


def test_toml_round_trips_every_field(iris: Vehicle, tmp_path: Path) -> None:
    path = tmp_path / "v.toml"
    path.write_text(export(iris, "toml"))
    back = Vehicle.from_toml(path)
    for name in ("mass", "k_tau", "tm_rise", "tm_fall", "cmd_max", "motor_input", "thrust_exponents", "name"):
        assert getattr(back, name) == getattr(iris, name), name
    for name in ("inertia", "com", "imu_offset", "thrust_coeffs", "positions", "axes", "torque_dirs"):
        np.testing.assert_array_equal(getattr(back, name), getattr(iris, name), err_msg=name)


def test_rotorpy_module_gives_the_same_wrench(iris: Vehicle, tmp_path: Path) -> None:
    path = tmp_path / "iris_params.py"
    path.write_text(export(iris, "rotorpy"))
    p = runpy.run_path(str(path))["quad_params"]
    assert p["mass"] == 1.5 and p["num_rotors"] == 4
    assert (p["Ixx"], p["Iyy"], p["Izz"], p["Ixy"], p["Ixz"], p["Iyz"]) == (
        0.029,
        0.031,
        0.055,
        0.0004,
        -0.0002,
        0.0001,
    )
    assert p["k_eta"] == pytest.approx(5.84e-6, rel=1e-12) and p["k_m"] == pytest.approx(0.06 * 5.84e-6, rel=1e-12)
    assert p["tau_m"] == pytest.approx(0.01875) and (p["rotor_speed_min"], p["rotor_speed_max"]) == (0.0, 1100.0)
    np.testing.assert_allclose(p["rI"], [0.016, 0.013, -0.042], atol=1e-15)
    # RotorPy's body wrench (rotors along z, positions about the CoM, yaw k_m ω² signed by rotor_directions)
    omega = np.array([700.0, 760.0, 820.0, 640.0])
    r = np.array(list(p["rotor_pos"].values()))
    thrust = p["k_eta"] * omega**2
    force = np.array([0.0, 0.0, thrust.sum()])
    moment = np.cross(r, np.outer(thrust, [0.0, 0.0, 1.0])).sum(axis=0)
    moment[2] += np.sum(p["rotor_directions"] * p["k_m"] * omega**2)
    np.testing.assert_allclose(np.concatenate([force, moment]), _wrench_about_com(iris, omega), rtol=1e-12, atol=1e-12)


def test_rltools_json_gives_the_same_wrench_and_hover(cf: Vehicle, tmp_path: Path) -> None:
    d = json.loads(export(cf, "rltools"))["dynamics"]
    assert d["action_limit"] == {"min": 0.0, "max": 1.0} and d["gravity"] == [0.0, 0.0, -9.80665]
    assert d["rotor_thrust_coefficients"] == [[0.01, 0.05, 0.15]] * 4
    assert d["rotor_time_constants_rising"] == d["rotor_time_constants_falling"] == [0.072] * 4
    np.testing.assert_allclose(np.array(d["J"]) @ np.array(d["J_inv"]), np.eye(3), atol=1e-12)
    u = np.array([0.3, 0.55, 0.7, 0.45])
    c = np.array(d["rotor_thrust_coefficients"])
    f = c[:, 0] + c[:, 1] * u + c[:, 2] * u**2
    pos, axes, tdir = (
        np.array(d[k]) for k in ("rotor_positions", "rotor_thrust_directions", "rotor_torque_directions")
    )
    force = (axes * f[:, None]).sum(axis=0)
    moment = (np.cross(pos, axes * f[:, None]) + tdir * (np.array(d["rotor_torque_constants"]) * f)[:, None]).sum(0)
    np.testing.assert_allclose(np.concatenate([force, moment]), _wrench_about_com(cf, u), rtol=1e-12, atol=1e-15)
    a = d["action_limit"]["min"] + d["hovering_throttle_relative"] * (
        d["action_limit"]["max"] - d["action_limit"]["min"]
    )
    assert 4 * (c[0, 0] + c[0, 1] * a + c[0, 2] * a**2) == pytest.approx(d["mass"] * 9.80665, rel=1e-9)


def test_gazebo_sdf_parses_back(iris: Vehicle) -> None:
    root = ET.fromstring(export(iris, "gazebo"))
    inertial = root.find("model/link/inertial")
    assert float(inertial.findtext("mass")) == 1.5
    assert [float(x) for x in inertial.findtext("pose").split()] == [0.004, -0.003, 0.012, 0.0, 0.0, 0.0]
    assert float(inertial.findtext("inertia/ixy")) == 0.0004 and float(inertial.findtext("inertia/izz")) == 0.055
    plugins = root.findall("model/plugin")
    assert [p.findtext("turningDirection") for p in plugins] == ["ccw", "ccw", "cw", "cw"]  # torque_dir -1,-1,+1,+1
    for i, p in enumerate(plugins):
        assert p.get("filename") == "libgazebo_motor_model.so" and p.findtext("motorNumber") == str(i)
        assert float(p.findtext("motorConstant")) == pytest.approx(5.84e-6, rel=1e-12)
        assert float(p.findtext("momentConstant")) == 0.06
        assert (float(p.findtext("timeConstantUp")), float(p.findtext("timeConstantDown"))) == (0.0125, 0.025)
        assert float(p.findtext("maxRotVelocity")) == 1100.0


def test_normalized_commands_need_a_rotor_speed(cf: Vehicle) -> None:
    for fmt in ("rotorpy", "gazebo"):
        with pytest.raises(ExportError, match=r"absolute rotor speed.*--max-rotor-speed RAD_S"):
            export(cf, fmt)
    with pytest.warns(UserWarning, match=r"not a pure square of rotor speed.*deviates up to \d+ %"):
        export(cf, "rotorpy", max_rotor_speed=2500.0)
    q = quadratic_in_speed(cf, 2500.0, "RotorPy")
    assert 0.1 < q["deviation"] < 1.0
    u_h = cf.hover_command()
    assert q["omega_hover"] == pytest.approx(2500.0 * u_h)
    assert q["k"] * q["omega_hover"] ** 2 == pytest.approx(0.01 + 0.05 * u_h + 0.15 * u_h**2, rel=1e-12)
    pure = cf.replace(thrust_coeffs=np.array([0.0, 0.0, 0.15]))
    assert quadratic_in_speed(pure, 2500.0, "RotorPy")["deviation"] < 1e-12
    assert quadratic_in_speed(pure, 2500.0, "RotorPy")["k"] == pytest.approx(0.15 / 2500.0**2, rel=1e-12)


def test_missing_quantities_are_named(cf: Vehicle) -> None:
    bare = Vehicle.preset("crazyflie")
    with pytest.raises(ExportError, match=r"inertia tensor.*thrust curve.*torque coefficient.*motor time constant"):
        export(bare, "rltools")
    with pytest.raises(ExportError, match="exponents"):
        export(cf.replace(thrust_exponents=(2, 3), thrust_coeffs=np.array([0.15, 0.01])), "rltools")
    tilted = cf.replace(rotors=(*cf.rotors[:3], Rotor(cf.rotors[3].position, 1, [math.sin(0.1), 0.0, math.cos(0.1)])))
    with pytest.raises(ExportError, match=r"rotor 4 .* axis"):
        export(tilted, "rotorpy", max_rotor_speed=2500.0)
    with pytest.raises(ExportError, match="unknown export format 'urdf'"):
        export(cf, "urdf")
    assert FORMATS == (
        "toml",
        "rotorpy",
        "rltools",
        "gazebo",
        "px4",
        "ardupilot",
        "ardupilot-sitl",
        "betaflight",
        "crazyflie",
    )


def _params_json(tmp_path: Path) -> Path:
    r = Result(
        "delay",
        {
            "tm": Estimate(0.072, 0.001, "s"),
            "thrust_c0": Estimate(0.01, 0.001, "N"),
            "thrust_c1": Estimate(0.05, 0.002, "N"),
            "thrust_c2": Estimate(0.15, 0.003, "N"),
            "k_tau": Estimate(0.0059, 0.0001, "m"),
            "I_xx": Estimate(1.6e-5, 1e-7, "kg m^2"),
            "I_yy": Estimate(1.7e-5, 1e-7, "kg m^2"),
            "I_zz": Estimate(2.9e-5, 1e-6, "kg m^2"),
        },
        vehicle=Vehicle.preset("crazyflie").to_dict(),
    )
    path = tmp_path / "params.json"
    r.save(path)
    return path


def test_export_params_from_a_result(tmp_path: Path) -> None:
    params = _params_json(tmp_path)
    out = export_params(params, "toml", tmp_path / "cf.toml")
    v = Vehicle.from_toml(out)
    np.testing.assert_array_equal(v.thrust_coeffs, [0.01, 0.05, 0.15])
    assert (v.k_tau, v.tm_rise, v.tm_fall, v.mass) == (0.0059, 0.072, 0.072, 0.027)
    np.testing.assert_array_equal(np.diag(v.inertia), [1.6e-5, 1.7e-5, 2.9e-5])
    d = json.loads(export_params(params, "rltools", tmp_path / "cf.json").read_text())["dynamics"]
    assert d["J"][0][0] == 1.6e-5 and d["mass"] == 0.027
    with pytest.raises(ExportError, match="--max-rotor-speed"):
        export_params(params, "gazebo", tmp_path / "cf.sdf")
    assert not (tmp_path / "cf.sdf").exists()
    with pytest.raises(ExportError, match="no configuration 'B'"):
        export_params(params, "toml", tmp_path / "b.toml", config="B")


def test_combined_result_exports_one_configuration(tmp_path: Path) -> None:
    six = Vehicle.preset("quad-plus", arm=0.225, mass=1.285).replace(motor_input="rad_s", cmd_max=1500.0)
    est = {"k_t": 3.63e-6, "k_tau": 0.014}
    for cfg, ixx, cx in (("A", 0.018, -0.0035), ("B", 0.020, 0.016)):
        est |= {f"I_xx@{cfg}": ixx, f"I_yy@{cfg}": 0.0186, f"I_zz@{cfg}": 0.029, f"com_x@{cfg}": cx}
    path = tmp_path / "params.json"
    r = Result(
        "tls", {k: Estimate(v) for k, v in est.items()}, vehicle=six.to_dict(), settings={"masses": {"B": 1.452}}
    )
    r.save(path)
    with pytest.warns(UserWarning, match="configurations A, B; exporting A"):
        a = Vehicle.from_toml(export_params(path, "toml", tmp_path / "a.toml"))
    b = Vehicle.from_toml(export_params(path, "toml", tmp_path / "b.toml", config="B"))
    assert (a.inertia[0, 0], a.com[0], a.mass) == (0.018, -0.0035, 1.285)
    assert (b.inertia[0, 0], b.com[0], b.mass) == (0.020, 0.016, 1.452)
    assert a.thrust_coeffs.tolist() == b.thrust_coeffs.tolist() == [3.63e-6]
