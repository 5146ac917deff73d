"""The pose's lag behind the IMU (`motion.pose_lag`) and the alignment TLS makes of the
rotor-drag velocity with it (`TlsSettings.mocap_delay` None, `--mocap-delay auto`)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rotorid.errors import ExcitationError, RotoridError
from rotorid.methods import tls
from rotorid.methods.tls import lags as tls_lags
from rotorid.motion import MotionSettings, airborne_pieces, pose_lag
from rotorid.options import seconds_or_auto
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle
from test_tls_unit import kinematic_flight


@pytest.mark.parametrize(
    ("overrides", "lag"),
    [
        ({"mocap_delay": 0.005}, 0.005),  # the paper's set-up
        ({"mocap_delay": 0.008, "imu_delay": 0.004}, 0.004),  # both late: the pose behind the IMU
        ({"mocap_delay": 0.0, "imu_delay": 0.003}, -0.003),  # the IMU later than the pose
    ],
)
def test_pose_lag_is_recovered_from_noisy_flights(overrides: dict, lag: float) -> None:
    """Sensor noise, thrust noise and pose noise (six-config-a's): within 0.2 ms of the truth,
    fractional sample shifts included (the log is at 200 Hz: 5 ms a sample)."""
    sc = scenarios.run("six-config-a", seed=3, duration=30.0, flights=("train",), **overrides)
    pieces = airborne_pieces(sc.flights["train"])
    found = [pose_lag(p, sc.vehicle, MotionSettings()) for p in pieces]
    assert found and all(d == pytest.approx(lag, abs=2e-4) for d in found)


def test_a_lag_beyond_the_search_is_not_reported_as_its_edge() -> None:
    """A pose 80 ms late (beyond ±MAX_POSE_LAG): the cost falls to the range's end, which is no
    measurement; None (tls then takes 0 and says the pose could not be timed)."""
    sc = scenarios.run("six-config-a", seed=3, duration=20.0, noise=False, flights=("train",), mocap_delay=0.08)
    (piece,) = airborne_pieces(sc.flights["train"])
    assert pose_lag(piece, sc.vehicle, MotionSettings()) is None


def test_pose_lag_reads_a_logged_velocity_when_there_is_one() -> None:
    """A velocity channel (an estimator's output) is what the rotor drag uses, so its lag is measured."""
    sc = scenarios.run("six-config-a", seed=3, duration=20.0, noise=False, flights=("train",), mocap_delay=0.007)
    fl = sc.flights["train"]
    vel = np.gradient(fl.pos, fl.t, axis=0)
    (piece,) = airborne_pieces(fl.replace(vel=vel, pos=None))
    assert pose_lag(piece, sc.vehicle, MotionSettings()) == pytest.approx(0.007, abs=2e-4)


def test_pose_lag_is_zero_on_an_exact_flight_and_none_without_a_pose() -> None:
    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285).replace(imu_offset=np.array([0.02, -0.01, 0.03]))
    fl = kinematic_flight(v, seed=1, dur=12.0)
    assert pose_lag(fl, v, MotionSettings()) == pytest.approx(0.0, abs=1e-5)
    assert pose_lag(fl.replace(pos=None), v, MotionSettings()) is None
    assert pose_lag(fl.replace(quat=None), v, MotionSettings()) is None
    assert pose_lag(fl.replace(acc=None), v, MotionSettings()) is None


def test_tls_aligns_the_rotor_drag_velocity_with_the_measured_pose_lag() -> None:
    """Rotor drag 0.3 1/s, ±5 % rotors, a 5 ms pose lag, noise-free: the drag's velocity read
    at the rotor instant gives ms_z biased by 4-5 %; measured and aligned (the default), the
    bias is gone, and the result says what it did."""
    sc = scenarios.run(
        "six-config-a", seed=1, duration=30.0, noise=False, rotor_drag=0.3, thrust_spread=0.05, flights=("train",)
    )
    truth = sc.truth.params["ms_z"]
    exact = {"imu_delay": 0.0, "motor_spread": 0.0, "eiv": False}
    ms_z = {}
    for delay in (None, 0.0):
        r = tls.identify({"A": [sc.flights["train"]]}, sc.vehicle, settings=tls.TlsSettings(mocap_delay=delay, **exact))
        ms_z[delay] = r.params["ms_z"].value / truth - 1.0
        said = [n for n in r.notes if n.startswith("the pose lags the IMU")]
        if delay is None:
            assert r.settings["mocap_delay"] == pytest.approx(0.005, abs=1e-4)
            assert len(said) == 1 and "5.0 ms" in said[0]
        else:
            assert r.settings["mocap_delay"] == 0.0 and not said
    assert abs(ms_z[None]) < 0.005 < 0.03 < abs(ms_z[0.0])


def test_the_mocap_source_adds_the_imus_own_lag_to_the_pose_lag() -> None:
    """Pose 8 ms and IMU 4 ms behind the rotor signals, the motion-capture source: the pose is
    timed against the IMU (4 ms) and the IMU against the rotor signals by the IMU-source model
    (`_imu_lag`), so the motion is read 8 ms late, as it was logged; an IMU lag given is used
    as it is."""
    sc = scenarios.run("six-config-a", seed=2, duration=30.0, flights=("train",), mocap_delay=0.008, imu_delay=0.004)
    fl = {"A": [sc.flights["train"]]}
    r = tls.identify(fl, sc.vehicle, settings=tls.TlsSettings(source="mocap"))
    assert r.settings["imu_delay"] == pytest.approx(0.004, abs=3e-4)
    assert r.settings["mocap_delay"] == pytest.approx(0.008, abs=4e-4)
    assert any(re.search(r"the rotor signals by 8\.\d ms with the IMU's own 4\.0 ms", n) for n in r.notes), r.notes
    given = tls.identify(fl, sc.vehicle, settings=tls.TlsSettings(source="mocap", imu_delay=0.0))
    assert given.settings["mocap_delay"] == pytest.approx(0.004, abs=3e-4)


def test_an_imu_lag_that_cannot_be_estimated_is_said_not_taken_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    """The motion-capture source times the pose against the IMU and needs the IMU's own lag
    behind the rotor signals; where the IMU-source model of the flights fails, that lag is 0
    and the pose's note says so, with the reason and what to give."""
    sc = scenarios.run("six-config-a", seed=2, duration=20.0, flights=("train",), mocap_delay=0.008, imu_delay=0.004)

    def fails(*args: object, **kwargs: object) -> float:
        raise ExcitationError("IMU model: too few rows")

    monkeypatch.setattr(tls_lags, "choose_imu_delay", fails)
    r = tls.identify({"A": [sc.flights["train"]]}, sc.vehicle, settings=tls.TlsSettings(source="mocap"))
    assert r.settings["imu_delay"] == 0.0
    (said,) = [n for n in r.notes if n.startswith("the pose lags the IMU")]
    assert "could not be estimated, taken as 0; give --imu-delay: IMU model: too few rows" in said, said


def test_mocap_delay_option() -> None:
    assert seconds_or_auto("auto", "--mocap-delay") is None and seconds_or_auto(" Auto ", "--mocap-delay") is None
    assert seconds_or_auto("0.005", "--mocap-delay") == 0.005 and seconds_or_auto(0.004, "--mocap-delay") == 0.004
    with pytest.raises(RotoridError, match="--mocap-delay must be 'auto' or seconds, got '5ms'"):
        seconds_or_auto("5ms", "--mocap-delay")
    assert tls.TlsSettings().mocap_delay is None
