"""The IMU's scale in delay's σ (`DelaySettings.imu_scale`): an assumption no flight tests, whose
first-order effect the method predicts from its own structure (`delay.imu.scale_sensitivities`)."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.errors import RotoridError
from rotorid.methods import delay
from rotorid.methods.delay.imu import scale_sensitivities
from rotorid.result import verdict
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


def _identify(assumed: float, **effects: float) -> tuple:
    sc = scenarios.run("eschmann-crazyflie", seed=0, duration=10.0, **effects)
    f = sc.flights
    st = delay.DelaySettings(imu_scale=assumed)
    return sc, delay.identify([f["thrust"]], sc.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]], settings=st)


@pytest.fixture(scope="module")
def ideal() -> tuple:
    return _identify(0.0)


def test_a_scaled_imu_moves_the_parameters_as_predicted(ideal: tuple) -> None:
    """The same flight with the simulated IMU's gyro and accelerometer scaled per axis (within
    2 %): every parameter moves as the sensitivities say (within 15 % of the move and twice its
    own σ), the curve by the accelerometer's z scale (to 1 %), T_m not at all."""
    _, r0 = ideal
    sc1, r1 = _identify(0.0, imu_scale=0.02)
    drawn = sc1.truth.vehicle["mismatch"]
    s = np.array([drawn["acc_scale"][2], *drawn["gyro_scale"]])
    assert np.all(np.abs(s) > 0.002)  # every axis moved
    sens = scale_sensitivities({k: (e.value, e.std) for k, e in r0.params.items()}, Vehicle.from_dict(r0.vehicle))
    assert {"thrust_c2", "hover_cmd", "I_xx", "I_yy", "I_zz", "k_tau"} <= set(sens)
    for name, g in sens.items():
        pred, moved = float(g @ s), r1.params[name].value - r0.params[name].value
        assert abs(moved - pred) < 0.15 * abs(pred) + 2 * r0.params[name].std, (name, pred, moved)
    assert r1.params["thrust_c2"].value / r0.params["thrust_c2"].value - 1 == pytest.approx(s[0], rel=0.01)
    assert abs(r1.params["tm"].value - r0.params["tm"].value) < 0.1 * r0.params["tm"].std


def test_the_scale_enters_sigma_and_labels_what_rests_on_it(ideal: tuple) -> None:
    """At the default 1 % the roll/pitch inertias' σ, 0.03 % of their value on this clean flight, is
    mostly the assumption (√2 %: accelerometer and gyro): they are labelled assumed and say why;
    T_m's σ is untouched; 0 leaves every σ the flight's own."""
    sc, r0 = ideal
    f = sc.flights
    r = delay.identify([f["thrust"]], sc.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]])
    for name in ("I_xx", "I_yy"):
        e = r.params[name]
        assert e.value == r0.params[name].value
        assert e.std == pytest.approx(np.hypot(r0.params[name].std, np.sqrt(2) * 0.01 * e.value), rel=1e-9)
        assert e.assumed and "--imu-scale" in verdict(e, r.observability.get(name)).text
    assert r.params["tm"].std == r0.params["tm"].std and not r.params["tm"].assumed
    with pytest.raises(RotoridError, match="--imu-scale"):
        delay.DelaySettings(imu_scale=-0.01)
