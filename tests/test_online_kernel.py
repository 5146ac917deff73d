"""The online estimator's compiled step (`rotorid.methods.online.kernel`): one machine-code
version of it serves every variant, rate and input (each further version is another compile of
~10 s CPU), and numba loads with the first estimator, not with the online modules."""

from __future__ import annotations

import numpy as np

from rotorid.methods import online
from rotorid.methods.online import kernel
from rotorid.sim import scenarios
from support.imports import heavy_after


def test_one_compiled_step_serves_every_variant_rate_and_input() -> None:
    sc = scenarios.run("kwon-payload", seed=1, duration=10.0)
    fl, veh = sc.flights["trajectory"].window(0.0, 3.0), sc.vehicle  # take-off at ~1.5 s
    runs = {
        "kwon 100 Hz": online.OnlineSettings(),
        "kwon per sample": online.OnlineSettings(rate_hz=None),
        "rls": online.OnlineSettings("rls", rate_hz=None),
        "rls-lpf": online.OnlineSettings("rls-lpf"),
    }
    steps = {}
    for name, settings in runs.items():
        est = online.OnlineEstimator(veh, settings)
        est.run(fl)
        steps[name] = len(est.recorded_rows().t)
    assert steps == {"kwon 100 Hz": 177, "kwon per sample": 1769, "rls": 1769, "rls-lpf": 177}  # enabled at 1.23 s
    held = online.OnlineEstimator(veh, online.OnlineSettings(), online.KfModel(tuple(est.th1), tuple(est.s1), 1.0))
    held.run(fl.replace(quat=None))  # the KF's model held, the enable check without the attitude
    live = online.OnlineEstimator(veh, online.OnlineSettings(rate_hz=None))
    for i in range(5):  # the streaming path, with the attitude
        st = live.update(online.Sample(0.001 * i, (0, 0, 0), (0, 0, 9.81), rotor_speed=[800.0] * 4, quat=(1, 0, 0, 0)))
    assert st.t == 0.004 and not st.enabled and np.isfinite(st.theta1_std).all()
    assert len(kernel.push.signatures) == 1


def test_numba_loads_with_the_first_estimator_not_with_the_online_modules() -> None:
    loaded = heavy_after("import rotorid.methods.online.pipeline, rotorid.methods.online.estimator")
    assert "numba" not in loaded and "llvmlite" not in loaded, loaded
