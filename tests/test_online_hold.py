"""How long a logged motor sample holds (`OnlineSettings.motor_hold`): the flight's
`meta["motor_hold"]` where the simulator (or a reader) records it, else point samples (0), and
an explicit setting over both."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from rotorid.errors import RotoridError
from rotorid.methods import online
from rotorid.sim import scenarios

NAMES = ("I_xx", "I_yy")


@functools.cache
def _noise_free(rate: float, duration: float = 20.0) -> scenarios.Scenario:
    return scenarios.run("kwon-payload", seed=0, noise=False, imu_rate=rate, duration=duration)


def _alpha(fl, veh, hold: float | None) -> np.ndarray:
    """The KF's α̂ over the flight, every sample a step."""
    return online.OnlineEstimator(veh, online.OnlineSettings(rate_hz=None, motor_hold=hold)).run(fl)["alpha"]


@pytest.mark.slow
def test_the_hold_comes_from_the_flight_else_point_samples_and_a_setting_wins() -> None:
    """kwon-payload's 1 kHz log of its 500 Hz controller records 2 ms: by default the estimator
    reads the samples as held (as 2 ms given); without the key as point samples (as 0 given);
    a setting wins over the key."""
    sc = _noise_free(1000.0, 10.0)
    fl, veh = sc.flights["trajectory"], sc.vehicle
    assert fl.meta["motor_hold"] == pytest.approx(0.002)
    bare = fl.replace(meta={k: v for k, v in fl.meta.items() if k != "motor_hold"})
    held, point = _alpha(fl, veh, None), _alpha(bare, veh, None)
    assert np.array_equal(held, _alpha(bare, veh, 0.002))
    assert np.array_equal(point, _alpha(fl, veh, 0.0))
    assert np.max(np.abs(held - point)) > 1e-3 * np.max(np.abs(held))
    assert np.array_equal(_alpha(fl, veh, 0.0005), _alpha(bare, veh, 0.0005))
    est = online.OnlineEstimator(veh, online.OnlineSettings(rate_hz=None))
    est.update(online.Sample(0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 9.81), rotor_speed=(800.0,) * 4))
    assert est._hold == 0.0  # the streaming update has no flight: point samples


@pytest.mark.parametrize("rate", [250.0, 100.0])
def test_a_log_slower_than_the_controller_gives_the_true_inertia(rate: float) -> None:
    """Noise-free kwon-payload logged at 250 / 100 Hz (its 500 Hz controller's output in 2 / 5):
    the 2 ms the flight records put the moment where it acts, I_xx, I_yy within 0.06 % (-0.005,
    -0.05 %); each sample read as held to the next put it 1 / 4 ms early (-0.31, -1.29 %), read
    as point samples 1 ms late (+0.31, +0.26 %)."""
    sc = _noise_free(rate)
    r = online.identify(sc.flights["trajectory"], sc.vehicle)
    assert r.settings["motor_hold_used"] == pytest.approx(0.002)
    err = [100.0 * (r.params[k].value / sc.truth.params[k] - 1.0) for k in NAMES]
    assert np.max(np.abs(err)) < 0.06, err


def test_the_simulator_records_the_hold_only_where_it_is_true() -> None:
    """Motors that follow their commands at once hold each for the control period (2 ms at
    500 Hz, recorded at every log rate); with a motor lag the logged rotor speeds are point
    samples of a continuous state while the commands hold: no one value is true of both, so the
    key is left out (point samples)."""
    for rate in (1000.0, 250.0, 100.0):
        assert _noise_free(rate).flights["trajectory"].meta["motor_hold"] == pytest.approx(0.002)
    sc = scenarios.run("kwon-payload", seed=0, noise=False, tm=0.02, duration=10.0)
    assert "motor_hold" not in sc.flights["trajectory"].meta


@pytest.mark.parametrize("hold", [-0.001, math.nan, math.inf, "2 ms", True])
def test_an_invalid_hold_is_refused(hold) -> None:
    """A hold is a time >= 0 in s, given as a setting or in the flight's meta."""
    with pytest.raises(RotoridError, match="motor_hold"):
        online.OnlineSettings(motor_hold=hold)
    sc = _noise_free(1000.0, 10.0)
    fl = sc.flights["trajectory"]
    with pytest.raises(RotoridError, match=r"meta\['motor_hold'\]"):
        online.OnlineEstimator(sc.vehicle).run(fl.replace(meta={**fl.meta, "motor_hold": hold}))
    assert online.OnlineSettings(motor_hold=0).motor_hold == 0  # point samples are a hold
