"""Regression tests for what the fuzz campaign's pipeline stage found (benchmarks/fuzz.py
--stage pipeline: mutants read as `rotorid identify --vehicle V` does, then `rotorid info`'s
analysis, identify's checks and every method). Each rebuilds its mutant from a seed and the
campaign's mutation ops, runs the whole pipeline in-process and asserts that every stage ends in a
result or a `RotoridError`; a direct test of the fixed function follows where one is short."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from rotorid.methods.freq.sweep import DEFAULT_BAND, rising_peak
from support import fuzzing

Op = fuzzing.Op


@pytest.fixture(scope="module")
def seeds(data_dir: Path) -> dict[str, fuzzing.Seed]:
    with tempfile.TemporaryDirectory() as scratch:
        return {s.name: s for s in fuzzing.seeds(data_dir, Path(scratch))}


def through(tmp_path: Path, seed: fuzzing.Seed, ops: list[Op], **options: object) -> str:
    """The pipeline's outcome on the mutant; asserts no stage raised anything but a RotoridError."""
    path = tmp_path / f"in{seed.suffix}"
    path.write_bytes(fuzzing.apply_ops(seed.data, ops))
    kind, detail = fuzzing._pipeline(path, {"vehicle": "crazyflie", **options})
    assert kind in (fuzzing.OK, fuzzing.ROTORID), detail
    return detail


def test_the_excited_seed_reaches_the_methods_numerics(tmp_path: Path, seeds: dict) -> None:
    # the campaign's mutants of this seed reach info's tables and the methods' results, not only
    # their first refusals (tls runs too, and is refused after its fit: a normalized vehicle)
    done = set(through(tmp_path, seeds["table-excited"], []).split(","))
    assert {"read", "info", "info-print", "info-close", "identify-delay", "identify-freq", "online", "freq"} <= done


def test_delay_polish_with_no_curvature_keeps_the_search_optimum(tmp_path: Path, seeds: dict) -> None:
    # delay's Newton polish met a singular Hessian (LinAlgError) on a corrupt Crazyflie log
    ops = [
        Op("remove", 0.4377951119819563, 0.5196333109250948, 48038, True),
        Op("token", 0.47767156668104893, 0.36005637480305985, 1956, True),
    ]
    assert "info" in through(tmp_path, seeds["cf-multi-event"], ops, allow_corrupt=True)


def test_freq_sweep_search_on_a_few_samples(tmp_path: Path, seeds: dict) -> None:
    # a DataFlash log cut to 5 samples: the spectrogram got 0-sample slices (ValueError)
    ops = [
        Op("token", 0.6311379066557797, 0.8994488708639338, 14224, False),
        Op("remove", 0.771002819076708, 0.866699951354104, 57603, True),
        Op("truncate", 0.22341025340577514, 0.9776240845815956, 59420, False),
    ]
    assert "info" in through(tmp_path, seeds["dataflash-rotorid"], ops)
    for n in (0, 1, 5, 47):
        assert rising_peak(np.ones(n), 250.0) == (0.0, DEFAULT_BAND)


def test_delay_on_a_thrust_that_every_motor_lag_fits_exactly(tmp_path: Path, seeds: dict) -> None:
    # 18 samples of a constant accelerometer and commands: SSE 0 at some T_m (ZeroDivisionError)
    ops = [
        Op("truncate", 0.5141883516798029, 0.1950590356434736, 16557, False),
        Op("byte", 0.7438983996834084, 0.5779983094583029, 36188, False),
        Op("flip", 0.8835679152272691, 0.5957769477209224, 27071, False),
        Op("dup", 0.4026509498266271, 0.33395580290853943, 33663, False),
    ]
    assert "info" in through(tmp_path, seeds["cf-multi-event"], ops, allow_corrupt=True)


def test_delay_hover_check_with_the_motors_off_near_hover(tmp_path: Path, seeds: dict) -> None:
    # a corrupt Crazyflie log whose motor states near 1 g are all 0: the hover check's % (ZeroDivisionError)
    ops = [
        Op("noise", 0.7134650851874071, 0.044894231623446856, 54944, False),
        Op("flip", 0.8634398764083195, 0.7919176499087958, 63952, True),
        Op("flip", 0.7055055691160262, 0.10640681432882282, 47072, True),
        Op("noise", 0.376514755437097, 0.7773563985112653, 7793, False),
    ]
    assert "info" in through(tmp_path, seeds["cf-log16"], ops, allow_corrupt=True)
