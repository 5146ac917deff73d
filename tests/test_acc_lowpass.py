"""The firmware's accelerometer low-pass (Betaflight's `acc_lpf_hz`, a 10 Hz biquad by default)
is read from the blackbox header and modelled in delay's thrust fit: otherwise T_m absorbs its
~22 ms delay. On the real freestyle logs, with it modelled, the motor lag is too fast for the
filtered accelerometer and delay refuses T_m with that reason."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import signal as sps

from rotorid.flight import Flight
from rotorid.io.blackbox import _acc_lowpass
from rotorid.methods import delay
from rotorid.methods.delay.collected import Collected
from rotorid.methods.delay.problem import ThrustProblem
from rotorid.methods.delay.search import search_tm
from rotorid.methods.delay.thrust_steps import _behind_acc_filter
from rotorid.result import Observability
from rotorid.signal import CHUNK, motor_lag
from rotorid.vehicle import quad_x

BIQUAD_10 = {"kind": "biquad", "hz": 10.0}


@pytest.mark.parametrize(
    ("rev", "lpf", "want"),
    [
        ("Betaflight 3.1.5 (4646f9d) OMNIBUSF4", "1000", BIQUAD_10),
        ("Betaflight 4.2.8 (101738d8e) STM32F7X2", "2500", {"kind": "biquad", "hz": 25.0}),
        ("Betaflight 4.5.0 (abc) STM32F7X2", "1000", None),  # a PT2 there: not guessed
        ("Betaflight 4.2.8 (101738d8e) STM32F7X2", "0", None),  # unfiltered
        ("INAV 6.0.0 (abc) MATEKF405", "1000", None),
        ("Betaflight 4.2.8 (101738d8e) STM32F7X2", "nan", None),  # corrupt headers: no filter modelled
        ("Betaflight 4.2.8 (101738d8e) STM32F7X2", ["1000", "2"], None),
        ("Betaflight x.y (101738d8e) STM32F7X2", "1000", None),
    ],
)
def test_header_names_the_filter(rev, lpf, want) -> None:
    assert _acc_lowpass({"Firmware revision": rev, "acc_lpf_hz": lpf}) == want


def _filtered_flight(n: int, tm: float, seed: int, lowpass: dict | None) -> Flight:
    """Throttle steps through a `tm` lag, the specific force through a 10 Hz biquad (scipy's
    own design, as the firmware filters it) and white noise; `lowpass` is what meta says."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) * 1e-3
    u = np.repeat(rng.uniform(0.3, 0.7, n // 150 + 1), 150)[:n, None] + 0.01 * rng.standard_normal((n, 4))
    w = motor_lag(u, t, tm)
    thrust = (0.9 * w**2).sum(axis=1) / 0.1
    b, a = sps.butter(2, 10.0, fs=1000.0)
    acc = np.zeros((n, 3))
    acc[:, 2] = sps.lfilter(b, a, thrust, zi=sps.lfilter_zi(b, a) * thrust[0])[0] + 0.5 * rng.standard_normal(n)
    return Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"acc_lowpass": lowpass} if lowpass else {})


def test_modelled_filter_leaves_the_motor_lag() -> None:
    """T_m 15 ms behind a 10 Hz biquad: found within 2σ with the filter modelled; without it
    T_m takes the filter's ~20 ms too (the bias the real logs showed)."""
    veh = quad_x(arm=0.055, mass=0.1)
    st = delay.DelaySettings(exponents=(2,))
    found = {}
    for lp in (BIQUAD_10, None):
        prob = ThrustProblem([_filtered_flight(20_000, 0.015, 3, lp)], veh, (2,), False)
        found[lp is None] = search_tm(prob, st)
    ok, blind = found[False], found[True]
    assert abs(ok.tm - 0.015) < 2 * ok.std and ok.std < 0.001
    assert blind.tm - 0.015 > 0.012


@pytest.mark.parametrize(
    ("tm", "std", "at_edge", "refused"),
    [
        (0.008, 0.005, False, True),  # poor, below the 22.5 ms delay: refused for the filter
        (0.040, 0.030, False, False),  # poor, above it: the ordinary "poor"
        (0.010, 0.003, False, False),  # loose (30 %σ): kept
        (0.500, 0.100, True, False),  # at the upper bound: not the filter's doing
    ],
)
def test_refusal_only_below_the_filter_delay(tm, std, at_edge, refused) -> None:
    prob = ThrustProblem([_filtered_flight(2000, 0.015, 3, BIQUAD_10)], quad_x(arm=0.055, mass=0.1), (2,), False)
    sym = dataclasses.replace(search_tm(prob, delay.DelaySettings(exponents=(2,))), tm=tm, std=std, at_edge=at_edge)
    before = Observability(True, rel_std_pct=100 * std / tm)
    out = Collected()
    after = _behind_acc_filter(prob, sym, before, out)
    assert (after is not before) is refused and after.identifiable is not refused
    assert out.notes == [
        "The firmware low-passed the accelerometer at 10 Hz before logging it (a biquad, header acc_lpf_hz): "
        "the thrust model passes through the same filter, whose ~23 ms delay is not motor lag."
    ]


def test_blocked_filter_equals_the_whole() -> None:
    """Across CHUNK edges and two flights (the filter restarts per flight), the search's SSE
    and the fit equal the least-squares fit on the whole filtered regressor."""
    fl = [_filtered_flight(CHUNK + 500, 0.02, 5, BIQUAD_10), _filtered_flight(3000, 0.02, 6, BIQUAD_10)]
    fl[1] = fl[1].replace(t=fl[1].t + fl[0].t[-1] + 1.0)
    prob = ThrustProblem(fl, quad_x(arm=0.055, mass=0.1), (1, 2), False)
    tm = (0.02, 0.02)
    a = prob.design(prob.states(tm))
    x, *_ = np.linalg.lstsq(a, prob.b, rcond=None)
    sse = float(np.sum((prob.b - a @ x) ** 2))
    assert prob.sse(tm) == pytest.approx(sse, rel=1e-10)
    assert prob.fit(tm)[0].sse == pytest.approx(sse, rel=1e-10)
    assert not np.allclose(a, prob.design_states(prob.states(tm)))  # the filter acted


@pytest.mark.parametrize(
    ("name", "arm", "mass", "windows"),
    [
        ("better_tune.BBL", 0.055, 0.1, [(77.74, 160.63), (166.30, 203.35)]),
        ("btfl_002.bbl", 0.16, 0.75, [(19.41, 151.27)]),
    ],
)
@pytest.mark.slow
def test_freestyle_logs_refuse_tm_behind_the_filter(bf_flights, name, arm, mass, windows) -> None:
    """The thrust windows `info` finds on each log (CS110 / 5-inch vehicles as stated): the
    header's 10 Hz filter is modelled, and T_m, then below what the filtered accelerometer
    resolves (at the 2 ms bound, or %σ > 50), is refused with that reason and what to log
    instead; never a value with σ NaN. Before the filter was modelled: 12.0 ± 7.0 ms (58 %σ,
    "poor") and 32.5 ± 7.4 ms, the filter's ~22 ms taken for motor lag."""
    f = bf_flights[name]
    assert f.meta["acc_lowpass"] == BIQUAD_10
    res = delay.identify([f.window(*w) for w in windows], quad_x(arm=arm, mass=mass))
    tm = res.params["tm"]
    obs = res.observability["tm"]
    assert np.isfinite(tm.std) and tm.std > 0
    assert tm.value < 0.010 and (tm.std / tm.value > 0.5)
    assert obs["identifiable"] is False
    assert "low-passed at 10 Hz" in obs["reason"] and "acc_lpf_hz = 0" in obs["advice"]
    assert ("at_bound" in obs) == (tm.value < 0.0021)  # at the 2 ms bound: no value shown (test_verdicts)
    assert any("low-passed the accelerometer at 10 Hz" in n for n in res.notes)
