"""Excitation measures against analytic signals: RMS of a sine's derivative, flying spans
from commands and from `landed`, verdict thresholds, gaps."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid import excitation
from rotorid.flight import Flight

RATE = 500.0


def _flight(duration: float = 20.0, **kw: np.ndarray) -> Flight:
    t = np.arange(int(duration * RATE)) / RATE
    return Flight(t=t, meta={"source": "synthetic"}, **{k: v(t) if callable(v) else v for k, v in kw.items()})


def test_angular_acceleration_rms_of_sines() -> None:
    # roll: 2 rad/s at 3 Hz -> |d/dt| amplitude 2*2π*3 = 37.7 rad/s², RMS 26.66
    # pitch: 0.5 rad/s at 2 Hz -> RMS 4.44; yaw: 0.1 rad/s at 1 Hz -> RMS 0.444
    amp, freq = np.array([2.0, 0.5, 0.1]), np.array([3.0, 2.0, 1.0])
    f = _flight(gyro=lambda t: amp * np.sin(2 * np.pi * freq * t[:, None]), cmd=lambda t: np.full((len(t), 4), 0.5))
    e = excitation.measure(f)
    want = amp * 2 * np.pi * freq / np.sqrt(2)
    got = [e.axes[a].value for a in ("roll", "pitch", "yaw")]
    np.testing.assert_allclose(got, want, rtol=0.01)
    assert e.verdicts == {"roll": "excited", "pitch": "none", "yaw": "none", "thrust": "none"}
    assert e.axes["thrust"].value == pytest.approx(0.0, abs=1e-12)


def test_thrust_variation_and_flying_spans_from_commands() -> None:
    def cmd(t: np.ndarray) -> np.ndarray:
        c = np.where((t >= 4.0) & (t < 16.0), 0.5 + 0.1 * np.sign(np.sin(2 * np.pi * 0.5 * t)), 0.0)
        c = np.where((t >= 9.0) & (t < 9.2), 0.05, c)  # a 0.2 s dip in the air is not a landing
        return np.repeat(c[:, None], 4, axis=1)

    e = excitation.measure(_flight(cmd=cmd, gyro=np.zeros((10000, 3))))
    assert e.flying_from == "cmd"
    assert e.flying == [(pytest.approx(4.0), pytest.approx(15.998))]
    assert e.ground == [(0.0, pytest.approx(3.998)), (pytest.approx(16.0), pytest.approx(19.998))]
    assert e.flying_time == pytest.approx(11.998)
    # 5900 samples of a 0.5 ± 0.1 square wave and 100 at 0.05 (the dip):
    # mean 0.4925, std sqrt(0.255708 - 0.4925²) = 0.11467, std/mean = 0.2328
    assert e.axes["thrust"].value == pytest.approx(0.2328, abs=0.002)
    assert e.verdicts["thrust"] == "excited"
    assert e.verdicts["roll"] == "none"


def test_landed_decides_when_present() -> None:
    landed = lambda t: (t < 5.0) | (t > 15.0)
    f = _flight(landed=landed, cmd=lambda t: np.full((len(t), 4), 0.3), gyro=np.zeros((10000, 3)))
    e = excitation.measure(f)
    assert e.flying_from == "landed"
    assert e.flying == [(pytest.approx(5.0), pytest.approx(15.0))]
    assert e.axes["thrust"].value == pytest.approx(0.0, abs=1e-12)


def test_weak_and_missing_axes() -> None:
    e = excitation.measure(_flight(gyro=lambda t: np.column_stack([0.3 * np.sin(2 * np.pi * 5 * t)] * 3)))
    # 0.3*2π*5/√2 = 6.66 rad/s²: weak for roll/pitch, excited for yaw
    assert e.verdicts == {"roll": "weak", "pitch": "weak", "yaw": "excited", "thrust": "n/a"}
    assert e.flying_from == "none" and e.flying_time == pytest.approx(19.998)
    e = excitation.measure(_flight(cmd=lambda t: np.full((len(t), 4), 0.5)))
    assert e.verdicts["roll"] == "n/a" and np.isnan(e.axes["roll"].value)


def test_verdict_thresholds_are_inclusive() -> None:
    assert excitation.verdict("roll", 20.0) == "excited"
    assert excitation.verdict("roll", 19.99) == "weak"
    assert excitation.verdict("yaw", 1.0) == "weak"
    assert excitation.verdict("yaw", 0.99) == "none"
    assert excitation.verdict("thrust", float("nan")) == "n/a"
    assert excitation.verdict("roll", 3.0, {"roll": (2.0, 1.0)}) == "excited"


def test_gaps_merge_reader_gaps_and_time_holes() -> None:
    t = np.concatenate([np.arange(100), np.arange(110, 200)]) / 100.0
    f = Flight(t=t, meta={"source": "g", "align": {"gaps": [(0.5, 0.6), (0.95, 1.05)]}})
    assert excitation.gaps(f) == [(0.5, 0.6), (0.95, pytest.approx(1.1))]


def test_real_log_verdicts(cf_logs: dict) -> None:
    from rotorid.io import load

    (rp,) = load(f"{cf_logs['log15']}@55:90")
    e = excitation.measure(rp)
    assert e.verdicts["roll"] == e.verdicts["pitch"] == "excited"
    assert e.axes["roll"].value == pytest.approx(42.8, abs=0.5)
    (yaw,) = load(f"{cf_logs['log16']}@32:38")
    assert excitation.measure(yaw).axes["yaw"].value == pytest.approx(21.0, abs=0.5)
    assert excitation.measure(yaw).verdicts["roll"] == "weak"


def test_a_flight_is_filtered_once_for_all_its_measures(monkeypatch: pytest.MonkeyPatch) -> None:
    """`info` and the app judge a log (verdicts, activity) and propose its windows: the gyro
    of one flight object is low-passed once, whatever asks; a new flight object is filtered
    anew, and the kept result goes with its flight."""
    import gc

    calls = []
    real = excitation.butter_filtfilt
    monkeypatch.setattr(excitation, "butter_filtfilt", lambda *a, **k: calls.append(1) or real(*a, **k))

    def fresh() -> Flight:
        return _flight(
            gyro=lambda t: np.column_stack([np.sin(7 * t), np.cos(5 * t), np.sin(3 * t)]),
            cmd=lambda t: np.repeat((0.5 + 0.1 * np.sin(2 * t))[:, None], 4, axis=1),
        )

    f = fresh()
    judged = excitation.judge([f], {"delay": 100.0})
    found = excitation.log_windows([f])
    assert excitation.check_role(f, "thrust") is None  # measured again: no new filtering
    assert len(calls) == 1 and judged.segments[0].excitation == excitation.measure(f)
    assert found["roll_pitch"] and found["yaw"]
    with pytest.raises(ValueError, match="read-only"):
        excitation.angular_acceleration(f)[0, 0] = 1.0
    g = fresh()
    excitation.measure(g)
    assert len(calls) == 2
    n = len(excitation._ANGULAR)
    del f, g, judged
    gc.collect()
    assert len(excitation._ANGULAR) == n - 2


def test_moving_mean_is_the_centred_mean_of_the_samples_available() -> None:
    """Against its definition, sample by sample: interior windows of n samples, edges shorter,
    a window longer than the series, one column or several."""
    x = np.random.default_rng(3).normal(size=(50, 2))
    for n in (2, 3, 7, 50, 64):
        want = np.array([x[max(i - n // 2, 0) : min(i + n - n // 2, 50)].mean(axis=0) for i in range(50)])
        np.testing.assert_allclose(excitation._moving_mean(x, n), want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(excitation._moving_mean(x[:, 1], n), want[:, 1], rtol=1e-12, atol=1e-14)


def test_flying_mask_is_worked_out_once_per_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proposing windows for every role and measuring the flight ask the flying mask of the same
    flight five times: it is worked out once, read-only, and again only for other arguments."""
    calls = []
    real = excitation.resting
    monkeypatch.setattr(excitation, "resting", lambda f: calls.append(1) or real(f))
    f = _flight(
        gyro=lambda t: np.column_stack([np.sin(7 * t), np.cos(5 * t), np.sin(3 * t)]),
        cmd=lambda t: np.repeat((0.5 + 0.1 * np.sin(2 * t))[:, None], 4, axis=1),
        acc=lambda t: np.tile([0.0, 0.0, 9.81], (len(t), 1)),
    )
    excitation.log_windows([f])
    excitation.measure(f)
    assert len(calls) == 1
    with pytest.raises(ValueError, match="read-only"):
        excitation.flying_mask(f)[0][0] = False
    excitation.flying_mask(f, min_span=1.0)
    assert len(calls) == 2
