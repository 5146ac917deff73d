"""Issue 38: untrusted inputs beyond the readers. Each test rebuilds a finding's reproducer
(tests/support/hostile.py) and asserts the fixed behaviour: one escaped line and exit 2, a
refusal naming what to change, or the right numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rotorid import excitation, runs
from rotorid.errors import shown
from rotorid.flight import Flight
from rotorid.signal import derivative
from support.hostile import csv_flight, fails, run

# -- 1. one escaping printer -----------------------------------------------------------------


def test_shown_escapes_markup_and_controls_and_caps_length() -> None:
    assert shown("a [/x] [[rotor]] [red]o") == "a \\[/x] [\\[rotor]] \\[red]o"
    assert shown("\x1b]0;pwned\x07\x9b2J") == "\\x1b]0;pwned\\x07\\x9b2J"
    assert shown("x" * 10_000, 50) == "x" * 50 + "…(10000 chars)"
    assert shown("ends\\") == "ends\\\\"


def test_markup_in_a_path_prints_as_written(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "a[" / "x]b.csv")
    code, out, err = run(["info", log])
    assert code == 0, err
    assert f"{tmp_path}/a[/x]b.csv" in out
    garbage = tmp_path / "g[" / "red]o.bin"
    garbage.parent.mkdir()
    garbage.write_bytes(b"\x00\x01not a log\xff" * 10)
    assert "g[/red]o.bin" in fails(["info", garbage])


def test_vehicle_init_escapes_name_and_out(tmp_path: Path) -> None:
    out = tmp_path / "v[" / "x].toml"
    out.parent.mkdir()
    name = "[red]o [[rotor]] \x1b]0;title\x07"
    code, text, err = run(
        ["vehicle", "init", "--layout", "quad-x", "--arm", "0.2", "--mass", "1", "--out", out, "--name", name]
    )
    assert code == 0, err
    assert "[red]o [[rotor]] \\x1b]0;title\\x07" in text and "v[/x].toml" in text and "\x1b" not in text


# -- 2. crashes: short pieces and windows -----------------------------------------------------


@pytest.mark.parametrize("n", [1, 2])
def test_pieces_of_one_or_two_samples_are_judged(n: int) -> None:
    t = np.arange(n) / 500.0
    f = Flight(t, gyro=np.ones((n, 3)), acc=np.ones((n, 3)), cmd=np.full((n, 4), 0.5), meta={"source": "x"})
    assert excitation.judge([f], runs.min_rates()).segments[0].flying_time == 0.0
    assert all(ws == [] for ws in excitation.log_windows([f]).values())


def test_derivative_of_two_and_one_rows() -> None:
    assert derivative(np.array([[1.0], [3.0]]), np.array([0.0, 0.5])).tolist() == [[4.0], [4.0]]
    assert derivative(np.array([[1.0]]), np.array([0.0])).tolist() == [[0.0]]


def test_two_sample_window_and_gap_piece(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "thrust.csv")
    code, out, err = run(["info", f"{log}@1:1.003"])
    assert code == 0 and "no identify command" in out, err
    holed = csv_flight(tmp_path / "holed.csv", rows=np.r_[0:1000, 1500:1502, 1800:2000])  # a gap leaves 2 rows
    code, out, err = run(["info", holed])
    assert code == 0 and "3 segments" in out, err


@pytest.mark.parametrize("size", [42_000, 60_000])
def test_ardupilot_log_cut_by_power_loss(data_dir: Path, tmp_path: Path, size: int) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes((data_dir / "ardupilot" / "backend_log_80k.bin").read_bytes()[:size])
    code, out, err = run(["info", cut, "--allow-corrupt"])
    assert code == 0 and "no identify command" in out, err
