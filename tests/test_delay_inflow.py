"""delay's rotor-inflow structure check (`structure.inflow_check`) on a vertical thrust flight
made here: four rotors following their commands through a first-order lag, thrust c2 u² that
falls by `loss` per m/s of climb (blade-element inflow), integrated sample by sample. A lag fit
absorbs the inflow as less T_m; the check finds the term and σ then covers the lag-only T_m's
error. Without inflow it does not fire."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.flight import Flight
from rotorid.methods.delay.collected import Collected
from rotorid.methods.delay.problem import ThrustProblem
from rotorid.methods.delay.search import search_tm
from rotorid.methods.delay.settings import DelaySettings
from rotorid.methods.delay.structure import climb_speed, inflow_check
from rotorid.vehicle import Vehicle

TM, C2, RATE = 0.05, 0.12, 500.0


def _flight(loss: float, seed: int = 0) -> tuple[Flight, Vehicle, np.ndarray]:
    """A 20 s flight at `RATE`: command steps about hover every 0.5 s plus a weak height and
    climb-speed feedback that keeps the vehicle near its start; the true climb speed with it."""
    veh = Vehicle.preset("crazyflie")
    rng = np.random.default_rng(seed)
    n, dt = int(20 * RATE), 1.0 / RATE
    hover = np.sqrt(veh.mass * 9.80665 / (4 * C2))
    steps = np.repeat(rng.uniform(-0.06, 0.06, n // 250 + 1), 250)[:n]
    keep = 1.0 - np.exp(-dt / TM)
    u, acc, v = np.zeros(n), np.zeros(n), np.zeros(n)
    w, z = hover, 0.0
    for k in range(n):  # the inflow couples the thrust to the climb speed it makes
        u[k] = hover + steps[k] - 0.02 * z - 0.03 * v[k]
        acc[k] = 4 * C2 * w * w * (1.0 - loss * v[k]) / veh.mass
        w += (u[k] - w) * keep
        if k + 1 < n:
            v[k + 1] = v[k] + (acc[k] - 9.80665) * dt
            z += v[k] * dt
    spec = np.column_stack([np.zeros(n), np.zeros(n), acc + 0.02 * rng.standard_normal(n)])
    f = Flight(t=np.arange(n) * dt, acc=spec, gyro=np.zeros((n, 3)), cmd=np.tile(u[:, None], (1, 4)))
    return f, veh.replace(thrust_exponents=(2,), thrust_coeffs=(C2,)), v


def _check(loss: float):
    f, veh, v = _flight(loss)
    st = DelaySettings(exponents=(2,))
    prob = ThrustProblem([f], veh, (2,), False)
    sym = search_tm(prob, st)
    out = Collected()
    return sym, inflow_check(prob, sym, st, out), out, f, v


def test_climb_speed_follows_the_true_one() -> None:
    f, _, v = _flight(0.2)
    est = climb_speed([f])
    assert np.corrcoef(est[500:-500], v[500:-500])[0, 1] > 0.95  # the high-pass drops its slowest part


def test_inflow_is_found_and_covered() -> None:
    sym, wide, out, _, _ = _check(0.2)
    assert (sym.tm - TM) / sym.std < -5  # the lag alone: T_m too small, σ far too small
    assert wide is not None and out.diag["inflow_p"] < 1e-6
    assert out.diag["inflow_tm"] == pytest.approx(TM, rel=0.1)
    assert abs(wide.tm - TM) < 2 * wide.std
    assert "(rotor inflow, 0.2" in out.notes[0] and "0.01953 s" in out.notes[0]


def test_no_inflow_no_term() -> None:
    """Without inflow the test does not support the term: no note, and its difference enters σ
    only at its evidence's weight (`evidence_weight`), which leaves σ nearly as it was."""
    sym, wide, out, _, _ = _check(0.0)
    assert out.diag["inflow_p"] > 0.01 and not out.diag["inflow_supported"] and not out.notes
    assert sym.tm == pytest.approx(TM, rel=0.02)
    assert wide.tm == sym.tm and sym.std <= wide.std < 1.1 * sym.std
