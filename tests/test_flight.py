"""Flight: construction checks, window, resample, split_at_gaps, require, require_rate and
align, against hand-computed values. (The exact CSV/Parquet round trip of random flights is
in test_io_table.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from rotorid.errors import MissingChannelError, RateError, RotoridError, WindowError
from rotorid.flight import Flight, Series, align


def lin_flight(n: int = 101, rate: float = 100.0) -> Flight:
    t = np.arange(n) / rate
    return Flight(
        t=t,
        acc=np.column_stack([t, 2 * t, -t]),
        cmd=np.column_stack([np.floor(10 * t) / 10] * 4),
        landed=t < 0.5,
        meta={"source": "lin.csv"},
    )


def test_construction_checks_name_the_problem() -> None:
    t = np.arange(5.0)
    acc = np.zeros((5, 3))
    acc[3, 1] = np.nan
    with pytest.raises(RotoridError, match=r"lin: channel 'acc' has NaN/inf at t=3.000000 s \(sample 3\)"):
        Flight(t=t, acc=acc, meta={"source": "lin"})
    with pytest.raises(RotoridError, match="channel 'gyro' has 4 samples but t has 5"):
        Flight(t=t, gyro=np.zeros((4, 3)))
    with pytest.raises(RotoridError, match="channel 'quat' needs 4 columns, got 3"):
        Flight(t=t, quat=np.zeros((5, 3)))
    with pytest.raises(RotoridError, match=r"duplicated time stamps at t=1\.000000 s"):
        Flight(t=[0.0, 1.0, 1.0, 2.0])
    with pytest.raises(RotoridError, match=r"non-monotonic time stamps at t=2\.000000 s"):
        Flight(t=[0.0, 1.0, 2.0, 1.5])
    f = Flight(t=t, cmd=np.ones(5))  # one motor as a 1-D array
    assert f.cmd.shape == (5, 1) and f.n_motors == 1


def test_introspection() -> None:
    f = lin_flight()
    assert f.channels == ["acc", "cmd", "landed"]
    assert f.n_motors == 4
    assert f.duration == pytest.approx(1.0)
    assert f.rate == pytest.approx(100.0)
    assert f.source == "lin.csv"


def test_window_is_inclusive_and_records_itself() -> None:
    w = lin_flight().window(0.2, 0.4)
    np.testing.assert_allclose(
        w.t,
        [
            0.2,
            0.21,
            0.22,
            0.23,
            0.24,
            0.25,
            0.26,
            0.27,
            0.28,
            0.29,
            0.3,
            0.31,
            0.32,
            0.33,
            0.34,
            0.35,
            0.36,
            0.37,
            0.38,
            0.39,
            0.4,
        ],
    )
    np.testing.assert_allclose(w.acc[:, 1], 2 * w.t)
    assert w.meta["windows"] == [(0.2, 0.4)]
    assert w.window(0.25, 0.3).meta["windows"] == [(0.2, 0.4), (0.25, 0.3)]


@pytest.mark.parametrize(
    ("t0", "t1", "message"),
    [
        (-1.0, 0.5, r"window -1:0.5 s lies outside the log \(0.000–1.000 s\); run `rotorid info`"),
        (0.5, 1.2, r"window 0.5:1.2 s lies outside the log"),
        (0.5, 0.5, r"window 0.5:0.5 is empty"),
        (0.501, 0.505, r"holds fewer than 2 samples"),
    ],
)
def test_window_errors(t0: float, t1: float, message: str) -> None:
    with pytest.raises(WindowError, match=message):
        lin_flight().window(t0, t1)


def test_window_tolerates_half_a_sample_at_the_ends() -> None:
    w = lin_flight().window(-0.004, 1.004)
    assert len(w.t) == 101


def test_resample_interpolates_by_kind() -> None:
    f = lin_flight()
    r = f.resample(250.0)
    assert r.rate == pytest.approx(250.0) and len(r.t) == 251
    np.testing.assert_allclose(r.acc, np.column_stack([r.t, 2 * r.t, -r.t]), atol=1e-12)  # linear: exact
    # commands and landed hold the previous sample
    np.testing.assert_allclose(r.cmd[:, 0], f.cmd[np.searchsorted(f.t, r.t + 1e-12, side="right") - 1, 0])
    np.testing.assert_array_equal(r.landed, r.t < 0.5 - 1e-12)
    assert r.meta["resampled_hz"] == 250.0
    held = f.replace(meta={**f.meta, "motor_hold": 0.002}).resample(250.0)
    assert "motor_hold" not in held.meta  # the new samples do not hold as the log's did


def test_resample_slerps_quaternions() -> None:
    t = np.array([0.0, 1.0])
    q = Rotation.from_euler("z", [[0.0], [1.2]]).as_quat(scalar_first=True)
    r = Flight(t=t, quat=q).resample(4.0)
    np.testing.assert_allclose(
        Rotation.from_quat(r.quat, scalar_first=True).as_euler("ZYX")[:, 0], [0, 0.3, 0.6, 0.9, 1.2], atol=1e-12
    )
    assert np.all(r.quat[:, 0] >= 0)


def test_split_at_gaps() -> None:
    t = np.concatenate([np.arange(10), 11.5 + np.arange(5), [20.0], 30 + np.arange(3)]) * 0.01
    pieces = Flight(t=t, gyro=np.zeros((len(t), 3))).split_at_gaps(0.02)
    assert [len(p.t) for p in pieces] == [10, 5, 3]  # the lone sample at 0.2 s is dropped
    assert pieces[1].t[0] == pytest.approx(0.115)


def test_require() -> None:
    f = lin_flight()
    assert f.require("acc", "cmd") is f
    with pytest.raises(MissingChannelError, match=r"lin.csv: missing channel\(s\) gyro, quat \(has acc, cmd, landed\)"):
        f.require("acc", "gyro", "quat")


def test_require_rate_uses_original_rates_and_the_readers_hint() -> None:
    f = lin_flight().replace(
        meta={
            "source": "x.ulg",
            "rates": {"cmd": 20.0},
            "topics": {"cmd": "actuator_outputs"},
            "rate_hint": "raise SDLOG_PROFILE",
        }
    )
    assert f.require_rate(90.0, "acc") is f  # no recorded rate: the flight's 100 Hz
    with pytest.raises(
        RateError,
        match=r"x.ulg: channel 'cmd' \(topic 'actuator_outputs'\) is logged at 20.0 Hz, below the 50 Hz this method needs; raise SDLOG_PROFILE",
    ):
        f.require_rate(50.0, "acc", "cmd")
    with pytest.raises(RateError, match="log it faster"):
        lin_flight().require_rate(200.0, "acc")
    with pytest.raises(MissingChannelError, match="missing channel"):
        f.require_rate(1.0, "gyro")


def test_align_common_span_rates_gaps_and_drops() -> None:
    t_fast = np.arange(0.0, 2.0, 0.01)  # 100 Hz
    t_slow = np.concatenate([np.arange(0.2, 1.0, 0.04), np.arange(1.5, 2.5, 0.04)])  # 25 Hz, a hole
    series = {
        "gyro": Series(t_fast, np.column_stack([t_fast, t_fast, t_fast])),
        "cmd": Series(t_slow, np.column_stack([t_slow] * 4)),
        "landed": Series(t_fast, t_fast > 1.0),
    }
    f, rep = align(series, meta={"source": "two clocks"})
    assert rep.rate == pytest.approx(100.0)
    assert (rep.start, rep.end) == (pytest.approx(0.2), pytest.approx(1.99))
    assert f.t[0] == pytest.approx(0.2) and f.t[-1] == pytest.approx(1.99, abs=0.01)
    np.testing.assert_allclose(f.gyro[:, 0], f.t, atol=1e-12)
    assert rep.gaps == [(pytest.approx(0.96), pytest.approx(1.5))]
    assert rep.dropped_fraction["gyro"] == pytest.approx(20 / 200)
    assert rep.dropped_fraction["cmd"] == pytest.approx(12 / 45)  # 2.02 ... 2.46 s
    assert f.landed.dtype == bool and f.landed[f.t > 1.005].all() and not f.landed[f.t < 0.995].any()
    assert f.meta["rates"]["cmd"] == pytest.approx(25.0)
    assert f.meta["align"]["gaps"] == rep.gaps


def test_align_rejects_disjoint_channels() -> None:
    a = Series(np.arange(0.0, 1.0, 0.1), np.zeros((10, 3)))
    b = Series(np.arange(2.0, 3.0, 0.1), np.zeros((10, 3)))
    with pytest.raises(RotoridError, match="do not overlap"):
        align({"acc": a, "gyro": b}, meta={"source": "x"})


def test_without_removes_intervals_and_splits_into_pieces():
    t = np.arange(0.0, 10.0, 0.1)
    f = Flight(t=t, gyro=np.column_stack([t, t, t]), meta={"source": "x"})
    pieces = f.without([(2.05, 3.05), (7.0, 7.15)])
    spans = [(round(p.t[0], 2), round(p.t[-1], 2)) for p in pieces]
    assert spans == [(0.0, 2.0), (3.1, 7.0), (7.2, 9.9)]
    assert sum(len(p.t) for p in pieces) == len(t) - 10 - 1
    assert f.without([]) == [f]
    np.testing.assert_array_equal(pieces[1].gyro[:, 0], pieces[1].t)


def _clock(t0: float, period_us: int, n: int) -> np.ndarray:
    """Stamps of an integer microsecond clock in float seconds, as readers convert them."""
    return (round(t0 * 1e6) + period_us * np.arange(n)) * 1e-6


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    t0=st.one_of(st.floats(0.0, 1e3), st.floats(1e3, 1e7)),
    period_us=st.sampled_from([125, 250, 500, 1000, 2500, 4000, 10000]),
    m=st.integers(2, 1500),
    every=st.sampled_from([1, 2, 4]),
    given_rate=st.booleans(),
)
def test_align_holds_each_command_at_its_own_stamp(
    t0: float, period_us: int, m: int, every: int, given_rate: bool
) -> None:
    """`m` commands on one clock with the gyro (every `every`-th stamp) are held from their
    own stamp on: a grid time a float step before a stamp must not take the previous command,
    and the grid keeps the last stamp, at any start time (boot clocks reach 1e7 s)."""
    n = (m - 1) * every + 1
    t = _clock(t0, period_us, n)
    series = {
        "gyro": Series(t, np.zeros((n, 3))),
        "cmd": Series(t[::every], np.arange(m, dtype=float)[:, None]),
    }
    f, rep = align(series, rate=1e6 / period_us if given_rate else None, meta={"source": "clock"})
    assert len(f.t) == n
    np.testing.assert_array_equal(f.cmd[:, 0], np.arange(n) // every)
    # the rate of a uniform clock is known to the float resolution of its span
    assert rep.rate == pytest.approx(1e6 / period_us, rel=8 * np.spacing(t[-1]) / (t[-1] - t[0]))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(t0=st.floats(0.0, 1e7), period_us=st.sampled_from([250, 1000, 4000]), n=st.integers(2, 2000))
def test_resample_at_its_own_rate_changes_nothing(t0: float, period_us: int, n: int) -> None:
    t = _clock(t0, period_us, n)
    f = Flight(t=t, gyro=np.zeros((n, 3)), cmd=np.arange(n, dtype=float)[:, None], meta={"source": "clock"})
    g = f.resample()
    assert len(g.t) == n
    np.testing.assert_array_equal(g.cmd, f.cmd)
    np.testing.assert_allclose(g.t, f.t, rtol=0, atol=8 * np.spacing(t[-1]))
