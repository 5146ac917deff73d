"""The delay method as a package of stages (issue 33) gives the numbers of the single module it
replaced: seed 0 of the paper scenario with rising/falling motors and an IMU delay (so both
model-structure checks widen σ, `structure`), on 5 s flights, pinned to 1e-12 relative. The
pinned values were computed by the single module; a change to them is a change of behaviour,
not of layout."""

from __future__ import annotations

import pytest

from rotorid.methods import delay
from rotorid.sim import scenarios

#: name -> (value, σ) from `rotorid/methods/delay.py` before the split (commit 71ab243), then with the
#: log's time resolution in T_m (issue 32: +Δt/4 = 0.25 ms, `structure.sample_hold_term`)
PINNED = {
    "tm": (0.0724321167280651, 0.011403369923584698),
    "thrust_c2": (0.149528912017897, 0.02282084939321321),
    "hover_cmd": (0.6221620358185332, 0.01123270307118649),
    "I_xx": (1.6253890250556354e-05, 5.99386083436093e-07),
    "I_yy": (1.626286350427864e-05, 8.006972688721663e-07),
    "I_zz": (2.9785346439428855e-05, 6.623332856763968e-06),
    "k_tau": (0.005946771130682355, 0.0013339641810051158),
}


@pytest.fixture(scope="module")
def result():
    sc = scenarios.run("eschmann-crazyflie", seed=0, duration=5.0, tm_rise=0.055, tm_fall=0.085, imu_delay=0.004)
    f = sc.flights
    return delay.identify([f["thrust"]], sc.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]])


def test_stages_give_the_single_modules_numbers(result):
    got = {k: (result.params[k].value, result.params[k].std) for k in PINNED}
    assert got == {k: pytest.approx(v, rel=1e-12, abs=0) for k, v in PINNED.items()}
    assert result.diagnostics["dead_time_p"] == pytest.approx(0.0028251757504785197, rel=1e-12)
    assert result.settings["inertia_param_chosen"] in delay.INERTIA_PARAMS
    assert result.notes[0].startswith("Thrust curve terms from the data") and result.settings["exponents"] == (0, 1, 2)
    assert [n[:34] for n in result.notes[1:3]] == [
        "Residuals are structured: a dead t",
        "Residuals are structured: the moto",
    ]
