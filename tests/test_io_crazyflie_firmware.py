"""Crazyflie logs under the firmware's own variable names (issue 35.1): `pwm.m*_pwm`, the RPM
deck's `rpm.m*` (with drop-outs), `pm.vbatMV`, `stateEstimate.*`, the external pose `locSrv.*`
in its own 100 Hz event type and `ctrl*` setpoints, written by our own writer
(tests/support/helpers_cf.py `firmware_log`) from simulated flights with known truth; `info`,
`identify` (delay, tls, online) and `convert` work on them."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.io import load, read
from rotorid.methods import delay, online, tls
from rotorid.sim import scenarios
from support.helpers_cf import firmware_log, log_bytes

K_OMEGA = 1e-8  # N/(rad/s)^2: the RPM deck's rotor speeds are √(thrust / K_OMEGA)


@pytest.fixture(scope="module")
def esch():
    return scenarios.run("eschmann-crazyflie", seed=0, duration=5.0)


@pytest.fixture(scope="module")
def logs(esch, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cf-firmware")
    out = {}
    for name in ("thrust", "roll_pitch", "yaw"):
        out[name] = folder / f"{name}.bin"
        out[name].write_bytes(
            firmware_log(esch.flights[name], esch.states[name], k_omega=K_OMEGA, dropouts=[1500, 1501])
        )
    out["pwm"] = folder / "pwm.bin"
    out["pwm"].write_bytes(firmware_log(esch.flights["yaw"], esch.states["yaw"], k_omega=K_OMEGA, pwm_only=True))
    out["long_dropout"] = folder / "long.bin"
    out["long_dropout"].write_bytes(
        firmware_log(esch.flights["yaw"], esch.states["yaw"], k_omega=K_OMEGA, dropouts=range(2000, 2600))
    )
    return out


def _rad_s(esch):
    """The true vehicle with its thrust curve in rotor speed: f = K_OMEGA ω² (what the RPM deck gives)."""
    return esch.true_vehicle.replace(
        motor_input="rad_s", cmd_min=0.0, cmd_max=4000.0, thrust_exponents=(2,), thrust_coeffs=np.array([K_OMEGA])
    )


def test_every_firmware_variable_is_read_in_si(esch, logs) -> None:
    with pytest.warns(UserWarning, match="2 RPM-deck samples read a rotor near 0"):
        (f,) = read(logs["roll_pitch"])
    st, sim = esch.states["roll_pitch"], esch.flights["roll_pitch"]
    assert f.channels == ["acc", "gyro", "cmd", "rotor_speed", "quat", "pos", "vel", "vbat"]
    assert f.meta["rates"]["pos"] == pytest.approx(100.0) and f.meta["rates"]["cmd"] == pytest.approx(1000.0)
    assert f.meta["topics"]["pos"] == "estPose: locSrv.x … locSrv.z"  # the external pose wins over the estimate
    assert f.meta["topics"]["vel"].startswith("fixedFrequency: stateEstimate.vx")
    assert f.meta["setpoints"] == ["ctrltarget.roll"] and f.meta["units"]["cmd"] == "normalized (PWM/65536)"
    # one 1 kHz grid from the first pose (1 µs after a fixed-frequency event), the pose interpolated
    i = np.round((f.t - st["t"][0]) * 1000.0).astype(int)
    np.testing.assert_allclose(f.gyro, sim.gyro[i], atol=1e-3)  # float32, 1 µs shift
    np.testing.assert_allclose(f.cmd, sim.cmd[i], atol=1 / 65536)
    w = np.sqrt(st["thrust"][i] / K_OMEGA)
    np.testing.assert_allclose(f.rotor_speed, w, atol=2 * np.pi / 60)  # 1 rev/min, the deck's resolution
    assert f.rotor_speed[np.searchsorted(i, 1500), 1] > 1000  # the drop-out is bridged, not 0
    np.testing.assert_allclose(f.vbat, np.linspace(4.1, 3.7, len(st["t"]))[i], atol=1e-3)  # mV -> V
    assert np.abs(np.sum(f.quat * st["quat"][i], axis=1)).min() > 1 - 1e-6  # scalar first, body -> world
    np.testing.assert_allclose(f.pos, st["pos"][i], atol=2e-3)


def test_pwm_only_and_long_dropouts(logs) -> None:
    (f,) = read(logs["pwm"])
    assert f.meta["units"]["cmd"] == "normalized (PWM sent/65536)" and f.meta["topics"]["cmd"].endswith("m4_pwm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pieces = read(logs["long_dropout"])
    assert len(pieces) == 2 and any("600 RPM-deck samples" in str(w.message) for w in caught)
    assert pieces[0].t[-1] < 2.0 < 2.6 < pieces[1].t[0]


def test_info_and_convert(logs, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["info", str(logs["pwm"])], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "cannot tell whether it flew" not in res.output
    for ch in ("rotor_speed", "vbat", "pos", "quat", "estPose: locSrv.x"):
        assert ch in res.output
    out = tmp_path / "pwm.parquet"
    res = CliRunner().invoke(app, ["convert", str(logs["pwm"]), "--to", str(out)])
    assert res.exit_code == 0, res.output
    (a,), (b,) = read(logs["pwm"]), read(out)
    assert b.channels == a.channels
    np.testing.assert_array_equal(b.vbat, a.vbat)
    np.testing.assert_array_equal(b.rotor_speed, a.rotor_speed)


def test_delay_identifies_from_firmware_names(esch, logs) -> None:
    fl = {k: load(str(logs[k]), vehicle=esch.vehicle) for k in ("thrust", "roll_pitch", "yaw")}
    r = delay.identify(fl["thrust"], esch.vehicle, fl["roll_pitch"], fl["yaw"])
    truth = esch.truth.params
    for name in ("tm", "thrust_c2", "I_xx", "I_yy"):
        assert r.params[name].value == pytest.approx(truth[name], rel=0.02), name


def test_tls_and_online_use_rotor_speeds_and_the_mocap_pose(esch, logs) -> None:
    v = _rad_s(esch)
    (f,) = load(str(logs["roll_pitch"]), vehicle=v)
    r = tls.identify({"A": [f]}, v, settings=tls.TlsSettings(source="mocap"))
    assert r.settings["source"] == "mocap"
    assert r.params["k_t"].value == pytest.approx(K_OMEGA, rel=1e-3)  # the rotor speeds were used
    assert r.params["I_yy"].value == pytest.approx(esch.truth.params["I_yy"], rel=0.05)
    o = online.identify(f, v)
    for name in ("I_xx", "I_yy", "I_zz"):
        assert o.params[name].value == pytest.approx(esch.truth.params[name], rel=0.05), name


def test_a_slow_battery_event_neither_splits_nor_refuses_the_log(tmp_path: Path) -> None:
    """pm.vbatMV in its own event type every 2 s (0.5 Hz): interpolated onto the 1 kHz grid, no
    gap between its samples, no rate refusal."""
    fast = (0, "fixedFrequency", [(f"gyro.{a}", "f") for a in "xyz"] + [(f"motor.m{i}", "H") for i in range(1, 5)])
    slow = (1, "pm", [("pm.vbatMV", "H")])
    events = [(0, 1_000_000 + 1000 * k, [0.0, 0.0, 0.0, 30000, 30000, 30000, 30000]) for k in range(6001)]
    events += [(1, 1_000_000 + 2_000_000 * k, [4200 - 100 * k]) for k in range(4)]
    p = tmp_path / "slow_pm.bin"
    p.write_bytes(log_bytes([fast, slow], sorted(events, key=lambda e: e[1])))
    (f,) = read(p)
    assert f.duration == pytest.approx(6.0) and f.meta["rates"]["vbat"] == pytest.approx(0.5)
    np.testing.assert_allclose(f.vbat[[0, 1000, 6000]], [4.2, 4.15, 3.9])
