"""Betaflight's chirp in a blackbox log (debug_mode CHIRP): the test encoder round-trips a plain
flight through the reader, and a simulated roll chirp logged in Betaflight's debug[0] encoding
becomes `meta["sid"]`, which `info` and `identify --method freq` use.

The simulator flies ArduPilot's chirp (`chirp-roll`; fades set to zero here): two cycles at
f0, then the exponential sweep that Betaflight's chirp.c also flies. debug[0] carries that
sweep's phase as Betaflight logs it (5000 x the phase wrapped to [0, 2π), 0 while the mode is
off), with the header's chirp_* settings for the same sweep. The excitation differs from
Betaflight's in shape only (sine instead of Betaflight's cosine scaled below 1 Hz, no lead-lag),
which the freq method's instrument is insensitive to; the reader's part is exact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid import frames
from rotorid.cli import app
from rotorid.flight import Flight
from rotorid.io import blackbox, load
from rotorid.signal import exp_sweep_phase
from rotorid.sim import scenarios
from support.blackbox_writer import ACC_1G, MOTOR_RANGE, write_flight

#: The blackbox writer starts the log's clock here (s).
T0 = 1.0


def _chirp_log(
    path: Path, flight, sid: dict, end_deci_hz: int | None = None, stretch: float = 1.0
) -> tuple[Path, float, float]:
    """`flight` with debug_mode CHIRP (2025.12's number) and debug[0] the phase of its sweep,
    logged on a clock `stretch` times the firmware's; returns the path, the sweep's start and
    its duration on the log's clock."""
    t_start, span = sid["t_start"] + sid["t_const"], sid["t_record"] - sid["t_const"]
    phase, _ = exp_sweep_phase(flight.t - t_start, sid["f_start"], sid["f_stop"], span)
    on = (flight.t >= t_start) & (flight.t < t_start + span)
    debug = np.zeros((len(flight.t), 8), dtype=np.int64)
    debug[:, 0] = np.where(on, np.rint(5000 * np.mod(phase, 2 * np.pi)), 0)
    headers = {
        "debug_mode": "97",
        "chirp_frequency_start_deci_hz": str(round(10 * sid["f_start"])),
        "chirp_frequency_end_deci_hz": str(end_deci_hz or round(10 * sid["f_stop"])),
        "chirp_time_seconds": str(round(span)),
        "chirp_amplitude_roll": "60",
        "chirp_amplitude_pitch": "60",
        "chirp_amplitude_yaw": "30",
    }
    logged = flight.replace(t=flight.t[0] + (flight.t - flight.t[0]) * stretch)
    return write_flight(path, logged, headers, debug), (t_start - flight.t[0]) * stretch + T0, span * stretch


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bfchirp")
    sc = scenarios.run("chirp-roll", seed=1, sid_t_fade_in=0.0, sid_t_fade_out=0.0, sid_t_rec=14.0)
    flight = sc.flights["roll"]
    chirp, t_start, span = _chirp_log(d / "chirp.bbl", flight, flight.meta["sid"])
    plain = write_flight(d / "plain.bbl", flight.window(0.0, 4.0))
    sc.vehicle.save(d / "vehicle.toml")  # a Crazyflie-sized quad on Betaflight: its own file, not the preset
    return {"sc": sc, "plain": plain, "chirp": chirp, "t_start": t_start, "span": span, "dir": d}


def test_the_encoder_round_trips_a_plain_flight(logs):
    want = logs["sc"].flights["roll"].window(0.0, 4.0)
    (f,) = load(str(logs["plain"]))
    assert "sid" not in f.meta and f.meta["header"]["debug_mode"] == 0
    np.testing.assert_allclose(f.t, want.t - want.t[0] + T0, atol=1e-6)
    assert np.max(np.abs(np.degrees(f.gyro - want.gyro))) <= 0.5 + 1e-9  # gyroADC: whole deg/s
    assert np.max(np.abs(f.acc - want.acc)) <= 0.5 / ACC_1G * frames.GRAVITY + 1e-12
    assert np.max(np.abs(f.cmd - want.cmd)) <= 0.5 / (MOTOR_RANGE[1] - MOTOR_RANGE[0]) + 1e-12


def test_the_chirp_debug_field_becomes_meta_sid(logs):
    (f,) = load(str(logs["chirp"]))
    sid = f.meta["sid"]
    assert sid["firmware"] == "betaflight" and sid["axis"] is None
    assert (sid["f_start"], sid["f_stop"], sid["t_sweep"]) == (0.5, 20.0, 10.0)
    assert sid["t_start"] == pytest.approx(logs["t_start"], abs=1e-4)  # from the logged phase
    assert sid["clock"] == pytest.approx(1.0, abs=1e-6)
    assert sid["t_stop"] == pytest.approx(logs["t_start"] + logs["span"], abs=2.5e-3)  # the last frame, 2 ms apart
    assert (sid["amplitude_roll"], sid["amplitude_yaw"]) == (60.0, 30.0)
    assert any("the swept axis is not logged" in n for n in f.meta["notes"])
    assert not any("differs from the sweep rebuilt" in n for n in f.meta["notes"])


def _sweep_start(logs):
    """The simulated flight from 1 s before its sweep to 4 s into it."""
    flight = logs["sc"].flights["roll"]
    t0 = flight.meta["sid"]["t_start"] + flight.meta["sid"]["t_const"]
    return flight.window(t0 - 1.0, t0 + 4.0)


def test_the_firmware_clock_is_fitted(logs):
    """The log's µs run 1 % slower than the firmware's loop count (its gyro clock): the start,
    the end and the clock ratio still come out, so the rebuilt excitation stays in phase."""
    want = _sweep_start(logs)
    path, t_start, _ = _chirp_log(logs["dir"] / "slow.bbl", want, want.meta["sid"], stretch=1.01)
    (f,) = load(str(path))
    sid = f.meta["sid"]
    assert sid["clock"] == pytest.approx(1 / 1.01, rel=1e-5)
    assert sid["t_start"] == pytest.approx(t_start, abs=1e-3)
    assert sid["t_stop"] == pytest.approx(f.t[-1], abs=1e-9)  # the log ends inside the sweep


def test_a_phase_that_is_not_the_headers_sweep_is_refused(logs):
    """The header says 30 Hz where the sweep flew to 20: the logged phase drifts from the rebuilt
    one, so the reader says so and leaves the sweep to the command spectrum. (Over the first few
    seconds of a sweep a wrong end frequency passes for a loop clock a few % off, with the
    rebuilt phase still matching the logged one: the whole sweep tells them apart.)"""
    want = logs["sc"].flights["roll"]
    path, _, _ = _chirp_log(logs["dir"] / "other.bbl", want, want.meta["sid"], end_deci_hz=300)
    (f,) = load(str(path))
    assert "sid" not in f.meta
    assert any("differs from the sweep rebuilt from the header" in n for n in f.meta["notes"])


@pytest.mark.parametrize(
    ("revision", "mode", "chirp"),
    [
        ("Betaflight 2025.12.1 (abc) STM32F405", 97, True),
        ("Betaflight 2025.12.1 (abc) STM32F405", 96, False),  # WING_SETPOINT... AUTOPILOT_POSITION is 96 there
        ("Betaflight 2026.6.0 (abc) STM32H743", 96, True),
        ("Betaflight 4.5.1 (abc) STM32F405", 97, False),  # no chirp before 2025.12
        ("INAV 8.0.0 (abc) MATEKF405", 97, False),
        ("Betaflight 4.5.1 (abc) STM32F405", "CHIRP", True),  # a header converted to names
    ],
)
def test_chirp_debug_mode_by_firmware(revision, mode, chirp):
    assert blackbox._is_chirp_mode({"Firmware revision": revision, "debug_mode": mode}) is chirp


def test_info_names_the_swept_axis_and_band(logs):
    res = CliRunner().invoke(app, ["info", str(logs["chirp"]), "--vehicle", "crazyflie"], terminal_width=250)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.replace("│", " ").split())  # the table wraps the row's cell
    m = re.search(
        r" s: roll swept 0.5-20 Hz \(Betaflight chirp; axis not logged, from the command spectrum, rank "
        r"([\d.]+)\), (\d+) % of it coherent",
        text,
    )
    assert m and float(m.group(1)) >= 0.8 and int(m.group(2)) >= 90, text


def test_identify_freq_on_a_betaflight_chirp(logs, tmp_path):
    out = tmp_path / "run"
    vehicle = str(logs["dir"] / "vehicle.toml")
    args = ["identify", "--method", "freq", "--vehicle", vehicle, str(logs["chirp"]), "--out", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    params = json.loads((out / "params.json").read_text())
    tm, truth = params["params"]["tm"], logs["sc"].truth.params["tm"]
    assert tm["value"] == pytest.approx(truth, rel=0.02)
    assert abs(tm["value"] - truth) < 3 * tm["std"]
    assert any("roll swept 0.5-20 Hz (Betaflight chirp" in n for n in params["notes"])


@pytest.mark.parametrize(
    ("phase", "why"),
    [
        (np.full(1500, 5), "holds no sweep"),  # a constant phase: no clock
        (np.r_[np.zeros(1498, int), 7, 9], "holds no sweep"),  # two frames: no band
        (np.random.default_rng(1).integers(1, 31416, 1500), "holds no sweep"),  # noise
        (-np.arange(1, 1501), "holds no sweep"),  # a negative phase: chirp.c never logs one
    ],
)
def test_a_debug_field_that_holds_no_sweep_is_refused(tmp_path, phase, why):
    rng = np.random.default_rng(0)
    n = len(phase)
    flight = Flight(
        t=np.arange(n) / 500.0,
        gyro=rng.normal(0.0, 0.1, (n, 3)),
        acc=rng.normal([0.0, 0.0, frames.GRAVITY], 0.1, (n, 3)),
        cmd=np.clip(rng.normal(0.5, 0.01, (n, 4)), 0.0, 1.0),
    )
    debug = np.zeros((n, 8), dtype=np.int64)
    debug[:, 0] = phase
    headers = {"debug_mode": "97", "chirp_frequency_start_deci_hz": "2", "chirp_frequency_end_deci_hz": "6000"}
    (f,) = load(str(write_flight(tmp_path / "x.bbl", flight, headers | {"chirp_time_seconds": "20"}, debug)))
    assert "sid" not in f.meta
    assert any(why in n for n in f.meta["notes"]), f.meta["notes"]
