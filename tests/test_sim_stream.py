"""A simulated flight streamed in pieces (`rotorid.sim.simulator.stream`, `rotorid simulate`)
is the in-memory flight to the bit, written piece by piece as it is flown, with progress that
advances while it flies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from rotorid.flight import Flight, join
from rotorid.io import read, write, write_pieces
from rotorid.sim import scenarios
from rotorid.sim.simulator import Streamed

#: (scenario, seconds, rows per piece, overrides): no lag and 1 kHz mocap; lag, 200 Hz with a
#: 5 ms mocap delay, an IMU delay, bias walks and the body effects that carry state (battery, gusts).
CASES = [
    ("kwon-payload", 10.0, 700, {}),
    (
        "six-config-a",
        2.0,
        97,
        {"imu_delay": 0.003, "gyro_rw": 2e-4, "acc_rw": 1e-3, "battery_sag": 0.06, "gust": 0.5, "rotor_drag": 0.3},
    ),
]


def _assert_same(a: Flight, b: Flight) -> None:
    assert a.channels == b.channels
    np.testing.assert_array_equal(a.t, b.t)
    for c in a.channels:
        np.testing.assert_array_equal(getattr(a, c), getattr(b, c), err_msg=c)


@pytest.mark.parametrize(("name", "seconds", "rows", "overrides"), CASES)
def test_pieces_are_the_in_memory_flight(name: str, seconds: float, rows: int, overrides: dict) -> None:
    whole = scenarios.run(name, seed=2, duration=seconds, **overrides)
    lazy = scenarios.run(name, seed=2, duration=seconds, lazy=True, **overrides)
    assert lazy.truth.params == whole.truth.params
    for fname, f in whole.flights.items():
        s = lazy.flights[fname]
        assert isinstance(s, Streamed) and s.meta == f.meta
        pieces = list(dataclasses.replace(s, rows=rows).pieces())
        assert len(pieces) >= 4 and all(p.meta == f.meta for p in pieces)
        _assert_same(join(pieces), f)
        _assert_same(join(dataclasses.replace(s, rows=rows).pieces()), f)  # each reading flies it anew, the same


def test_progress_advances_while_the_pieces_fly() -> None:
    seen: list[float] = []
    sc = scenarios.run("kwon-payload", seed=0, duration=12.0, lazy=True, progress=lambda f, x: seen.append(x))
    assert seen == []  # nothing flown yet
    at_piece = [seen[-1] if seen else 0.0 for _ in dataclasses.replace(sc.flights["trajectory"], rows=1500).pieces()]
    assert at_piece[0] < 0.2 and at_piece[-1] == 1.0
    assert np.all(np.diff(at_piece) > 0) and len(at_piece) == 8  # 12 000 steps, 1500 a piece
    assert np.all(np.diff(seen) > 0) and len(seen) == 12  # every simulated second


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_written_in_pieces_reads_back_as_written_whole(tmp_path: Path, suffix: str) -> None:
    s = scenarios.run("eschmann-crazyflie", seed=1, duration=3.0, lazy=True).flights["thrust"]
    s = dataclasses.replace(s, rows=700)
    whole, streamed = tmp_path / f"whole{suffix}", tmp_path / f"pieces{suffix}"
    write(join(s.pieces()), whole)
    write_pieces(s.pieces(), streamed)
    (a,), (b,) = read(whole), read(streamed)
    _assert_same(a, b)
    assert {**a.meta, "source": ""} == {**b.meta, "source": ""}


def test_a_flight_with_whole_flight_sensor_state_is_flown_in_memory() -> None:
    lazy = scenarios.run("eschmann-crazyflie", seed=0, duration=1.0, lazy=True, vibration=3.0, aa_cutoff=100.0)
    whole = scenarios.run("eschmann-crazyflie", seed=0, duration=1.0, vibration=3.0, aa_cutoff=100.0)
    for fname, f in lazy.flights.items():
        assert isinstance(f, Flight) and lazy.states[fname]  # the vibration's filter runs over the whole flight
        _assert_same(f, whole.flights[fname])
