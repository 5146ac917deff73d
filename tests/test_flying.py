"""Airborne from the motors and the IMU together (`excitation.flying_mask`): a throttle cut in
the air (flips, dives) is flying, a vehicle resting with its motors at idle is not; on the real
freestyle Betaflight logs (5-inch quads hovering at 20–30 % throttle) and the Crazyflie logs."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid import excitation, io
from rotorid.flight import Flight
from rotorid.frames import GRAVITY

RATE = 500.0


def _freestyle() -> Flight:
    """20 s: 2 s resting disarmed, take-off, hover at 0.22 with a 1.5 s throttle cut at 8 s
    (idle motors, free fall, a 10 rad/s flip), landing at 16 s and 4 s resting at idle."""
    t = np.arange(int(20 * RATE)) / RATE
    air = (t >= 2.0) & (t < 16.0)
    cut = (t >= 8.0) & (t < 9.5)
    rng = np.random.default_rng(0)
    c = np.where(air & ~cut, 0.22 + 0.05 * np.sin(2 * np.pi * 0.7 * t), 0.02)
    acc = np.zeros((len(t), 3))
    acc[:, 2] = np.where(cut, 0.5, GRAVITY)
    acc += rng.normal(0, np.where(air, 2.0, 0.3)[:, None], (len(t), 3))  # vibration
    gyro = rng.normal(0, 0.05, (len(t), 3))
    gyro[:, 0] += np.where(cut, 10.0 * np.sin(np.pi * (t - 8.0) / 1.5), 0.3 * np.sin(2 * np.pi * 0.5 * t) * air)
    return Flight(t=t, acc=acc, gyro=gyro, cmd=np.repeat(c[:, None], 4, axis=1), meta={"source": "synthetic"})


def test_a_throttle_cut_in_the_air_is_flying_and_idle_on_the_ground_is_not() -> None:
    e = excitation.measure(_freestyle())
    assert e.flying_from == "cmd+imu"
    ((t0, t1),) = e.flying
    assert t0 == pytest.approx(2.0, abs=0.01) and t1 == pytest.approx(16.0, abs=0.01)
    # without the IMU the cut is a landing: two flying spans
    f = _freestyle()
    bare = excitation.measure(Flight(t=f.t, cmd=f.cmd, meta=f.meta))
    assert bare.flying_from == "cmd" and len(bare.flying) == 2


def test_hover_level_not_range_decides_the_motors() -> None:
    """A hover at 22 % of a range whose maximum is 100 % (one punch-out) is flying: the motors'
    threshold is relative to the log's own hover level."""
    f = _freestyle()
    cmd = f.cmd.copy()
    cmd[(f.t >= 5.0) & (f.t < 5.2)] = 1.0
    low, src = excitation.motors_low(Flight(t=f.t, cmd=cmd, meta=f.meta))
    air = (f.t >= 2.0) & (f.t < 16.0) & ~((f.t >= 8.0) & (f.t < 9.5))
    assert src == "cmd" and not low[air].any() and low[~air].all()


@pytest.mark.parametrize(("name", "take_off"), [("btfl_002.bbl", 18.4), ("better_tune.BBL", 76.7)])
def test_freestyle_logs_fly_from_take_off_to_the_end(bf_flights, name, take_off) -> None:
    """Both logs rest disarmed at the start, then fly aggressive freestyle (throttle cuts,
    flips, free fall) to the end of the log: found airborne ≥ 95 % of that time (the motors
    alone found 32.3 s of 133 s and 60.2 s of 128 s)."""
    f = bf_flights[name]
    e = excitation.measure(f)
    airborne = float(f.t[-1]) - take_off
    assert e.flying[0][0] == pytest.approx(take_off, abs=0.3)
    assert e.flying[-1][1] == pytest.approx(float(f.t[-1]))
    assert e.flying_time >= 0.95 * airborne
    assert e.ground[0][0] == pytest.approx(float(f.t[0]))
    found = excitation.log_windows([f])
    for role in ("thrust", "roll_pitch", "yaw", "online"):
        assert found[role], role
        assert sum(w.t1 - w.t0 for w in found[role]) >= 0.5 * airborne, role


def test_crazyflie_spans_are_those_of_the_motors(cf_logs) -> None:
    """The Crazyflie's motors stop on the ground: the IMU changes none of its spans."""
    want = {"log10": [(31.441, 69.097)], "log16": [(31.352, 39.357), (44.000, 49.723)]}
    for name, spans in want.items():
        (f,) = io.read(cf_logs[name])
        got = excitation.measure(f).flying
        np.testing.assert_allclose(got, spans, atol=1e-3)


def test_windows_keep_away_from_a_saturated_sensor() -> None:
    """A crash or a flip too fast clips the gyro (the reader lists the span in
    meta["saturated"]): the proposed windows end `margin` s before it."""
    f = _freestyle()
    (w,) = excitation.propose_windows(f, "thrust", min_length=1.0)
    clipped = Flight(t=f.t, acc=f.acc, gyro=f.gyro, cmd=f.cmd, meta={**f.meta, "saturated": [(12.0, 12.1)]})
    got = excitation.propose_windows(clipped, "thrust", min_length=1.0)
    assert w.t1 > 13.0 and got and all(g.t1 <= 11.0 or g.t0 >= 13.1 for g in got)


def test_a_warning_is_printed_once(capsys) -> None:
    import warnings

    from rotorid.cli import _guarded

    def twice() -> None:
        for _ in range(3):
            warnings.warn("gyro saturated at 204.35 s", stacklevel=1)

    _guarded(twice)()
    assert capsys.readouterr().err.count("gyro saturated at 204.35 s") == 1
