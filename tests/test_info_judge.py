"""The `info` judgement (library side): rates against each method with the reader's fix,
never armed / never flew in words, one row per segment of a split log."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rotorid import io
from rotorid.excitation import activity, judge
from rotorid.flight import Flight
from rotorid.methods import delay, online, tls

MIN = {"delay": delay.MIN_RATE_HZ, "tls": tls.MIN_RATE_HZ, "online": online.MIN_RATE_HZ}


def test_px4_sample_slow_motor_topic_gets_the_sdlog_fix_and_never_armed(px4_logs) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fs = io.read(px4_logs["sample"])
    j = judge(fs, MIN)
    slow = {(r.channel, r.method) for r in j.too_slow}
    assert slow == {("cmd", "delay"), ("cmd", "tls"), ("cmd", "online")}
    r = next(r for r in j.too_slow if r.method == "delay")
    assert r.topic == "actuator_outputs" and r.rate_hz == pytest.approx(20.9, abs=0.1) and r.min_hz == 100.0
    assert "SDLOG_PROFILE=25" in r.fix
    assert all(v.ok and v.fix == "" for v in j.rates if v.channel in ("acc", "gyro"))
    assert j.activity.startswith("never armed")
    assert len(j.segments) == len(fs) == 6 and [s.index for s in j.segments] == list(range(1, 7))
    assert all(s.flying_time == 0.0 and s.t1 > s.t0 for s in j.segments)


def test_crazyflie_log_is_fast_and_flew(cf_logs) -> None:
    j = judge(io.read(cf_logs["log10"]), MIN)
    assert j.rates and not j.too_slow
    assert j.activity == "flew 37.7 s in 1 span"
    (row,) = j.segments
    assert row.verdicts["thrust"] == "excited" and row.rate_hz == pytest.approx(1011.1, abs=0.1)


def test_no_motor_channel_and_disarmed_pwm() -> None:
    t = np.arange(2000) / 500.0
    f = Flight(t=t, cmd=np.full((len(t), 4), 900.0), gyro=np.zeros((len(t), 3)), meta={"source": "bench"})
    assert activity([f]) == "never armed: the motors stay at 900 for the whole log (a bench or ground log?)"
    assert activity([f.replace(cmd=None)]).startswith("cannot tell whether it flew")
