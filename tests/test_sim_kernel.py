"""The simulator's compiled per-step kernel (`rotorid.sim.kernel`): one machine-code version of
it flies every kind of flight (each further version is another compile, 13-20 s CPU per process),
and numba loads with the first flight, not with the simulator's modules."""

from __future__ import annotations

import numpy as np

from rotorid.sim import kernel, scenarios
from rotorid.sim.dynamics import Body, hover_state, integrate
from rotorid.vehicle import crazyflie
from support.imports import heavy_after


def test_one_compiled_kernel_flies_every_kind_of_flight() -> None:
    """Motor lag or none, every body effect or none, the cascade controller or a Python one,
    quadratic or cubic thrust curves: the same types reach the kernel, so it compiles once."""
    scenarios.run("eschmann-crazyflie", seed=0, duration=0.5)  # motor lag, duty-cycle commands
    scenarios.run("kwon-payload", seed=0, duration=10.0, rotor_drag=0.3)  # instant motors, rotor drag
    effects = {"battery_sag": 0.06, "ground_effect": 0.5, "gust": 0.5, "saturation": 0.8, "drag_quad": 0.03}
    sc = scenarios.run("six-config-b", seed=0, duration=0.5, flights=("train",), **effects)
    assert np.ptp(sc.flights["train"].vbat) > 0  # the effects ran
    v = crazyflie().replace(
        thrust_coeffs=[0.01, 0.05, 0.02, 0.08], thrust_exponents=(0, 1, 2, 3), k_tau=0.0055, inertia=np.eye(3) * 1e-5
    )
    body = Body.from_vehicle(v)
    traj = integrate(body, hover_state((0, 0, 1)), [0.5] * 4, 1e-3, 20, lambda k, x: [0.5 + 1e-3 * k] * 4, 2)
    assert traj.cmd[-1, 0] == 0.5 + 1e-3 * 18  # the Python controller's commands, held over two steps
    entries = (kernel.run, kernel.control, kernel.rest)  # what flights call from Python (the rest inlined)
    assert {f.py_func.__name__: len(f.signatures) for f in entries} == {"run": 1, "control": 1, "rest": 1}


def test_numba_loads_with_the_first_flight_not_with_the_simulator() -> None:
    loaded = heavy_after(
        "import rotorid.sim.scenarios, rotorid.sim.simulator, rotorid.sim.effects, rotorid.sim.control"
    )
    assert "numba" not in loaded and "llvmlite" not in loaded, loaded
