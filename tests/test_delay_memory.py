"""The T_m search's residual sum of squares (`ThrustProblem.sse`, QR a block of rows at a
time) equals the full least-squares fit's, without its (N, ...) temporaries."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from rotorid.flight import Flight
from rotorid.methods import delay
from rotorid.methods.delay.problem import lag_states
from rotorid.methods.regression import ols
from rotorid.methods.voltage import VoltageModel
from rotorid.signal import CHUNK, motor_lag
from rotorid.vehicle import Vehicle


def _flights(n: int, uniform: bool) -> list[Flight]:
    """A thrust flight (throttle steps through a 50 ms lag) and a shorter second one."""
    rng = np.random.default_rng(7)
    t = np.arange(n) * 1e-3 if uniform else np.cumsum(1e-3 * rng.uniform(0.8, 1.2, n))
    u = np.repeat(rng.uniform(0.35, 0.85, n // 250 + 1), 250)[:n, None] + 0.02 * rng.standard_normal((n, 4))
    w = motor_lag(u, t, 0.05)
    acc = np.zeros((n, 3))
    acc[:, 2] = (0.0225 - 0.0115 * w + 0.128 * w**2).sum(axis=1) / 0.027 + 0.3 * rng.standard_normal(n)
    m = n // 3
    return [
        Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u),
        Flight(t=t[:m] + t[-1] + 1.0, acc=acc[:m], gyro=np.zeros((m, 3)), cmd=u[:m]),
    ]


@pytest.mark.parametrize("uniform", [True, False])
@pytest.mark.parametrize("per_motor", [False, True])
def test_search_sse_equals_the_fit(uniform, per_motor):
    """Across blocks (2.4 flights' worth of CHUNK rows), flights, lumped and per-motor
    curves, symmetric and rising/falling constants."""
    prob = delay.ThrustProblem(_flights(2 * CHUNK + 11, uniform), Vehicle.preset("crazyflie"), (0, 1, 2), per_motor)
    for tm in [(0.0, 0.0), (0.01, 0.01), (0.05, 0.05), (0.3, 0.3), (0.03, 0.07)]:
        assert prob.sse(tm) == pytest.approx(prob.fit(tm)[0].sse, rel=1e-12)


def _with_voltage(flights: list[Flight]) -> list[Flight]:
    """`flights` with a stepping battery voltage (a sag every 0.1 s)."""
    return [f.replace(vbat=4.0 - 0.3 * (np.arange(len(f.t)) // 100 % 2)) for f in flights]


@pytest.mark.parametrize("uniform", [True, False])
@pytest.mark.parametrize("dead", [0.0, 0.0137, -0.004])
@pytest.mark.parametrize("volt", [False, True])
def test_state_blocks_are_the_states(uniform, dead, volt):
    """Block by block (restarted lag, commands delayed within each block) equals the whole
    flight's states, symmetric and rising/falling, across block edges and two flights, with
    and without the voltage curve's factor on the commands."""
    flights = _flights(2 * CHUNK + 11, uniform)
    model = VoltageModel(1.3, 0.0, 3.85, 3.7, 4.0) if volt else None
    flights = _with_voltage(flights) if volt else flights
    prob = delay.ThrustProblem(flights, Vehicle.preset("crazyflie"), (0, 1, 2), False, voltage=model)
    for tm in [(0.0, 0.0), (0.05, 0.05), (0.03, 0.07)]:
        blocks = [w for _, w in prob.state_blocks(tm, dead)]
        assert max(len(b) for b in blocks) <= CHUNK
        np.testing.assert_allclose(np.vstack(blocks), np.vstack(prob.states(tm, dead)), rtol=1e-12, atol=1e-15)
    with_dead = prob.sse((0.05, 0.05), dead)
    full = ols(prob.design_states(prob.states((0.05, 0.05), dead)), prob.b).sse
    assert with_dead == pytest.approx(full, rel=1e-12)


def test_voltage_scales_the_commands_before_the_lag():
    """The voltage curve's rotor state is lag(u (V/V_ref)^α): one step after the voltage steps
    the state has moved by (1 - e^(-dt/T_m)) of the new setpoint's change, not all of it."""
    (f,) = _with_voltage(_flights(1000, True)[:1])
    g = (f.vbat / 3.85) ** 1.3
    w = lag_states(f.cmd, f.t, (0.05, 0.05), g)
    np.testing.assert_allclose(w, motor_lag(f.cmd * g[:, None], f.t, 0.05), rtol=1e-15)
    k = 100  # the voltage drops at sample 100: the setpoint u[99] g[99] held over step 99 -> 100 is the old one
    step = (f.cmd[k] * g[k] - w[k]) * (1.0 - np.exp(-1e-3 / 0.05))
    np.testing.assert_allclose(w[k + 1] - w[k], step, rtol=1e-9)
    assert np.all(np.abs(w[k + 1] - w[k]) < 0.05 * np.abs(f.cmd[k] * (g[k] - g[k - 1])))


def test_search_sse_names_unexcited_columns_as_the_fit_does():
    fl = _flights(2000, True)
    fl = [f.replace(cmd=np.zeros_like(f.cmd)) for f in fl]
    prob = delay.ThrustProblem(fl, Vehicle.preset("crazyflie"), (0, 1, 2), False)
    with pytest.raises(delay.ExcitationError, match="not excited"):
        prob.sse((0.05, 0.05))


def _peaks(n: int) -> tuple[int, int]:
    """Peak traced memory (bytes) of one T_m evaluation and of one full fit on n + n/3 rows."""
    prob = delay.ThrustProblem(_flights(n, False), Vehicle.preset("crazyflie"), (0, 1, 2), False)
    prob.sse((0.05, 0.05))  # warm any caches
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        prob.sse((0.04, 0.04))
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        prob.fit((0.04, 0.04))
        fit_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, fit_peak


def test_search_sse_allocates_nothing_of_the_flights_length():
    """A symmetric evaluation builds the rotor states and [A | b] a block at a time: its peak
    is a few blocks (4 motors, 8-byte states, lag and QR temporaries), the same on 100k and
    400k rows. The full fit keeps the rotor states and the residual (4 + 1 values per sample)
    and builds A a block at a time too (`ols_blocks`): it grows by those 40 bytes per sample
    and not by the regressor (3 more columns, its lstsq copies: 2.5x that before)."""
    small, fit_small = _peaks(100_000)
    large, fit_large = _peaks(400_000)
    assert large < 200 * CHUNK
    assert large < 1.1 * small
    samples = (400_000 + 400_000 // 3) - (100_000 + 100_000 // 3)
    assert 0.9 * 40 * samples < fit_large - fit_small < 1.1 * 40 * samples
