"""The validation verdict (issue 34.4) and the replay over short horizons (issue 35.4): a
correct model passes and replays the body rates closely, a wrong inertia fails and replays
them worse; `rotorid validate --replay --exit-code` says so to scripts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.errors import RotoridError
from rotorid.io import write
from rotorid.result import Result
from rotorid.sim import scenarios
from rotorid.validate import MOTION, PASS_R2, judge, validate


@pytest.fixture(scope="module")
def six():
    return scenarios.run("six-config-a", seed=1, duration=12.0)


def _result(v) -> Result:
    """A result that identifies nothing beyond its vehicle: the model validated is `v`."""
    return Result("tls", {}, vehicle=v.to_dict())


def _wrong(v):
    """`v` with its roll and pitch inertia doubled (S I S keeps the tensor symmetric)."""
    s = np.diag(np.sqrt([2.0, 2.0, 1.0]))
    return v.replace(inertia=s @ v.inertia @ s)


def test_replay_scores_a_correct_model_well_and_a_wrong_inertia_worse(six) -> None:
    flight = six.flights["test"]
    good = validate(_result(six.true_vehicle), [flight], horizon=0.5)
    bad = validate(_result(_wrong(six.true_vehicle)), [flight], horizon=0.5)
    for ax in "xyz":
        assert good.replay.metrics[f"omega_{ax}"]["r2"] > 0.99
        # the model beats holding the re-initialised rate by far
        assert good.replay.metrics[f"omega_{ax}"]["rmse"] < 0.1 * good.replay.metrics[f"omega_{ax}"]["hold_rmse"]
    for ax in "xy":  # doubled roll and pitch inertia: half the angular acceleration
        assert bad.replay.metrics[f"omega_{ax}"]["r2"] < 0.6
        assert bad.replay.metrics[f"omega_{ax}"]["rmse"] > 10 * good.replay.metrics[f"omega_{ax}"]["rmse"]
    assert bad.replay.metrics["omega_z"]["r2"] > 0.99  # yaw inertia is right
    assert good.verdict.passed and good.verdict.line.startswith("PASS")
    assert not bad.verdict.passed and "replayed omega_y" in bad.verdict.line
    assert good.replay.t.shape == good.replay.segment.shape == (good.replay.predicted.shape[0],)
    n = round(0.5 * flight.rate)
    assert np.all(np.bincount(good.replay.segment) == n)  # whole horizons of 0.5 s
    # each horizon starts from the log's rate
    first = np.flatnonzero(np.diff(np.concatenate([[-1], good.replay.segment])))
    np.testing.assert_array_equal(good.replay.predicted[first, :3], good.replay.measured[first, :3])


def test_replay_horizon_is_bounded(six) -> None:
    with pytest.raises(RotoridError, match=r"between 0\.2 and 1 s"):
        validate(_result(six.true_vehicle), [six.flights["test"]], horizon=5.0)


def test_verdict_ignores_a_weakly_excited_channel() -> None:
    rng = np.random.default_rng(0)
    measured = rng.normal(size=(500, 6)) * np.array([0.01, 1.0, 1.0, 1.0, 1.0, 0.05])
    metrics = {n: {"r2": 0.9, "rmse": 0.1, "unit": ""} for n in MOTION}
    metrics["s_x"]["r2"] = -3.0  # barely moved: says little
    metrics["omega_dot_z"]["r2"] = -1.0
    norms = dict.fromkeys(("F_x", "F_y", "F_z", "M_x", "M_y", "M_z"), 10.0)
    v = judge(metrics, norms, measured)
    assert v.passed and v.weak == ["s_x", "omega_dot_z"] and "too weakly excited" in v.line
    metrics["s_y"]["r2"] = PASS_R2 - 0.01
    v = judge(metrics, norms | {"M_x": 60.0}, measured)
    assert not v.passed and v.failed == [f"s_y R² {PASS_R2 - 0.01:.2f} < {PASS_R2:g}", "M_x model error 60 % > 50 %"]


def test_cli_verdict_exit_code_and_readable_windows(six, tmp_path: Path) -> None:
    log = write(six.flights["test"], tmp_path / "test.parquet")
    for name, v in (("good", six.true_vehicle), ("bad", _wrong(six.true_vehicle))):
        _result(v).save(tmp_path / f"{name}.json")
    spec = f"{log}@1:11"
    args = ["validate", "--replay", "--horizon", "0.4", "--exit-code"]
    res = CliRunner().invoke(app, [*args, str(tmp_path / "good.json"), spec, "--out", str(tmp_path / "g")])
    assert res.exit_code == 0, res.output
    assert "verdict: PASS" in res.output and "replay over 0.4 s horizons" in res.output
    html = (tmp_path / "g" / "report.html").read_text()
    assert "1–11 s" in html and "[(" not in html and "validation_replay.png" in html
    doc = json.loads((tmp_path / "g" / "validation.json").read_text())
    assert doc["verdict"]["passed"] is True and doc["replay"]["horizon"] == 0.4
    res = CliRunner().invoke(app, [*args, str(tmp_path / "bad.json"), spec, "--out", str(tmp_path / "b")])
    assert res.exit_code == 1 and "verdict: FAIL" in res.output
    # without --exit-code a failed verdict still exits 0 (it is a finding, not an error)
    res = CliRunner().invoke(app, ["validate", str(tmp_path / "bad.json"), spec, "--out", str(tmp_path / "b2")])
    assert res.exit_code == 0 and "verdict: FAIL" in res.output
