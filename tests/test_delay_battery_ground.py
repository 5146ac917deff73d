"""delay's T_m on a randomized flight with battery sag next to the ground (issue 32): seed 9 of
`eschmann-crazyflie-random` (quadratic body drag, ground effect, battery sag, saturation, IMU
delay, gusts) missed its motor constant by 5.8σ (T_m 54 ± 2.7 ms for 70 ms). The cause was the
simulator's ground, placed under the plan's lowest point while the thrust manoeuvre's collective
doublets take the vehicle 20-60 cm lower: it flew through the ground plane with the rotors at
the ground effect's 4/3 cap, a thrust no logged quantity explains, so the battery's motor model
(the command times the logged voltage through the lag) fitted 20-80 % worse than the plain curve
and the sag's bias on T_m stayed in it. With the ground under the lowest point flown, the
voltage curve is chosen and T_m lands within 3σ without a wider σ."""

from __future__ import annotations

import pytest

from rotorid.methods import delay
from rotorid.sim import scenarios


def test_battery_sag_near_the_ground_keeps_tm_within_3_sigma(monkeypatch: pytest.MonkeyPatch) -> None:
    fly_all = scenarios._fly_all
    monkeypatch.setattr(  # the thrust flight only: T_m and the voltage curve come from it
        scenarios,
        "_fly_all",
        lambda name, seed, v, specs, **kw: fly_all(name, seed, v, {"thrust": specs["thrust"]}, **kw),
    )
    sc = scenarios.run("eschmann-crazyflie-random", seed=9, duration=25.0)
    assert {"ground_effect", "battery_sag"} <= set(sc.truth.vehicle["random"])
    res = delay.identify([sc.flights["thrust"]], sc.vehicle)
    tm, truth = res.params["tm"], sc.truth.params["tm"]
    assert res.settings["voltage_model"] is not None  # the sag is in the curve, before the lag
    assert abs(tm.value - truth) < 3.0 * tm.std  # was -4.5σ on this 25 s flight (54 ± 3.5 ms)
    assert tm.std < 0.003  # 4 % of T_m: below the σ of the miss, not widened to cover it
