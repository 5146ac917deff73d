"""Every method refuses logs whose motor or IMU channels were recorded too slowly, naming the
channel, its topic, its rate and how to log faster (FORMATS.md: never a silently wrong result)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.errors import RateError
from rotorid.flight import Flight
from rotorid.io import read
from rotorid.methods import delay, online, tls
from rotorid.vehicle import Vehicle


@pytest.mark.parametrize(("method", "vehicle"), [("delay", "quad-x"), ("tls", "quad-x"), ("online", "x500")])
def test_identify_refuses_the_10_hz_px4_log(px4_logs, tmp_path, method, vehicle):
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        ["identify", "--method", method, "--vehicle", vehicle, str(px4_logs["sample_px4_events"]), "--out", str(out)],
    )
    assert res.exit_code == 2, res.output
    msg = " ".join(res.output.split())
    assert "actuator_motors" in msg or "vehicle_acceleration" in msg
    assert "Hz" in msg and "SDLOG_PROFILE" in msg
    assert not out.exists() or not any(out.iterdir())


def _slow_flight() -> Flight:
    """A 1 kHz grid whose motor commands were logged at 20 Hz (as `align` records it)."""
    t = np.arange(0, 5, 1e-3)
    n = len(t)
    return Flight(
        t=t,
        acc=np.tile([0, 0, 9.8], (n, 1)),
        gyro=np.zeros((n, 3)),
        cmd=np.full((n, 4), 0.6),
        meta={
            "source": "slow.csv",
            "rates": {"acc": 1000.0, "gyro": 1000.0, "cmd": 20.0},
            "rate_hint": "log it faster",
        },
    )


def test_each_method_checks_the_original_rate():
    f = _slow_flight()
    v = Vehicle.preset("crazyflie")
    with pytest.raises(RateError, match=r"'cmd' is logged at 20.0 Hz, below the 100 Hz"):
        delay.identify([f], v, settings=delay.DelaySettings())
    with pytest.raises(RateError, match=r"'cmd' is logged at 20.0 Hz, below the 50 Hz"):
        tls.identify({"A": [f]}, v, masses={}, weights={}, settings=tls.TlsSettings())
    kv = v.replace(thrust_coeffs=np.array([0.0, 0.0, 0.12]), k_tau=0.005)
    with pytest.raises(RateError, match=r"'cmd' is logged at 20.0 Hz, below the 50 Hz"):
        online.identify(f, kv, online.OnlineSettings())


def test_vehicle_hints_reach_only_readers_that_take_them(cf_logs, px4_logs):
    hints = {"motor_input": "pwm_us", "motors": 4}
    cf = read(cf_logs["log10"], hints=hints)[0]  # the Crazyflie reader takes neither: ignored
    assert cf.cmd.max() < 1.0
    with pytest.warns(UserWarning, match="drop-out"):
        raw = read(px4_logs["sample"], hints=hints)[0]  # PX4 keeps raw PWM µs for a pwm_us vehicle
    assert raw.cmd.shape[1] == 4 and raw.cmd.min() >= 800.0  # µs, not 0..1


def test_rad_s_vehicle_refuses_a_log_without_rotor_speeds(cf_logs, tmp_path):
    """A Crazyflie log holds normalized PWM commands: they cannot be a rad/s vehicle's rotor speeds."""
    res = CliRunner().invoke(
        app,
        ["identify", "--method", "tls", "--vehicle", "x500", f"{cf_logs['log10']}@35:65", "--out", str(tmp_path / "o")],
    )
    assert res.exit_code == 2
    msg = " ".join(res.output.split())
    assert "rotor speeds in rad/s" in msg and "normalized (PWM/65536)" in msg and "esc_status" in msg
    assert not (tmp_path / "o").exists()
