"""The plant flown in chunks (`rotorid.sim.dynamics.Plant.run`) gives the samples of one run
over the whole flight: the state, motor lag, held commands, pre-lag setpoints, thrust noise and
rotor drag carry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rotorid.sim import dynamics, effects
from rotorid.sim.dynamics import Body, Plant, hover_state, integrate
from rotorid.vehicle import Vehicle


def _controller(body: Body):
    """Commands that follow the state (altitude rate, body rates) and the step count."""

    def control(k: int, s: tuple[float, ...]) -> list[float]:
        return [0.62 + 0.05 * math.sin(0.004 * k + i) - 0.02 * s[5] - 0.01 * s[10 + i % 3] for i in range(4)]

    return control


@pytest.mark.parametrize("lag", [True, False])
def test_chunks_equal_one_run(lag: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    v = Vehicle.load("crazyflie")
    v = v.replace(k_tau=0.0055, inertia=np.diag([1.4e-5, 1.4e-5, 2.2e-5]), thrust_coeffs=[0.0227, -0.0119, 0.1283])
    v = v.replace(tm_rise=0.07 if lag else None)
    v = v.replace(tm_fall=0.09 if lag else None)
    body = Body.from_vehicle(v, drag=(0.01, 0.02, 0.0), rotor_drag=0.002)
    n, every = 3000, 2
    noise = 0.002 * np.random.default_rng(4).standard_normal((n, 4))
    x0, u0 = hover_state((0.0, 0.0, 1.0), 0.3), [0.6] * 4

    def battery() -> effects.Plant:  # pre-lag setpoints that follow the load and the charge drawn
        spec = effects.PlantSpec(sag=0.05, drain=0.02)
        return effects.Plant.build(spec, body, v.positions - body.com, x0, n, 1e-3, np.random.default_rng(0))

    whole = integrate(body, x0, u0, 1e-3, n, _controller(body), every, noise, effects=battery())
    monkeypatch.setattr(dynamics, "_ROWS", 97)  # the noise wrench in odd blocks too
    plant, chunks, a, fx = Plant(body, 1e-3, x0, u0), [], 0, battery()
    for size in (1, 776, 1201, 3, n - 1981):
        chunks.append(plant.run(size, _controller(body), every, noise[a : a + size], effects=fx))
        a += size
    got = plant.close(*chunks)
    for name in ("x", "u", "cmd", "noise"):
        assert np.array_equal(getattr(got, name), getattr(whole, name)), name
    assert len(got.x) == n + 1 and np.ptp(got.x[:, 2]) > 1e-3  # it flew: the chunks carried a moving state
