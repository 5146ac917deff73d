"""Validation removes the accelerometer bias the identification removed: an estimate the result
records (`validate.ACC_BIAS_KEY`, tls) and delay's stated `acc_bias_z`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rotorid.methods import tls
from rotorid.result import Estimate, Result
from rotorid.sim import scenarios
from rotorid.validate import ACC_BIAS_KEY, acc_bias, validate

BIAS = (0.3, -0.2, 0.5)  # m/s², about 50 mg: a large but real MEMS offset


@pytest.fixture(scope="module")
def biased():
    """A tls identification on a flight with an accelerometer bias: tls records its estimate in
    the settings (`ACC_BIAS_KEY`, the mean over the airborne pieces), so params.json carries it."""
    sc = scenarios.run("six-config-a", seed=1, duration=12.0, acc_bias=BIAS)
    res = tls.identify({"A": [sc.flights["train"]]}, sc.vehicle)
    return sc, res


def test_tls_records_its_bias(biased):
    _, res = biased
    recorded = np.asarray(res.settings[ACC_BIAS_KEY]["A"])
    assert recorded == pytest.approx(BIAS, abs=0.05)  # the estimate, not a copy of the truth


def _offset(val) -> np.ndarray:
    """Mean measured minus predicted specific force (m/s²)."""
    return np.mean(val.measured[:, :3] - val.predicted[:, :3], axis=0)


def test_recorded_bias_is_removed_from_the_held_out_specific_force(biased) -> None:
    """tls estimates the bias (to 0.03 m/s² here); validating without removing it leaves the whole
    z bias as an offset between measured and predicted s_z (RMSE 0.48 m/s²), with it the offset
    is gone and s_z fits to its noise (RMSE 0.02 m/s²). The angular channels improve too (their
    prediction carries the first moments times the specific force), and params.json validates
    like the result in memory."""
    sc, res = biased
    bias, where = acc_bias(res)
    np.testing.assert_allclose(bias, BIAS, atol=0.03)
    assert where == "the tls estimate"
    val = validate(res, [sc.flights["test"]])
    blind = Result.from_dict(json.loads(res.to_json()))
    blind.settings.pop(ACC_BIAS_KEY)
    blind = validate(blind, [sc.flights["test"]])
    assert abs(_offset(val)[2]) < 0.01 and _offset(blind)[2] == pytest.approx(bias[2], abs=0.01)
    assert val.metrics["s_z"]["rmse"] < 0.1 * blind.metrics["s_z"]["rmse"]
    for ch in ("omega_dot_x", "omega_dot_y", "omega_dot_z"):
        assert val.metrics[ch]["rmse"] < blind.metrics[ch]["rmse"]
    assert any("accelerometer bias [+0.300, -0.201" in n for n in val.notes)
    assert not any("accelerometer bias" in n for n in blind.notes)
    again = validate(Result.from_dict(json.loads(res.to_json())), [sc.flights["test"]])
    assert again.to_dict()["metrics"] == val.to_dict()["metrics"]  # NaN (not modelled) as None
    # mocap validation measures no specific force with the accelerometer: nothing to remove
    mocap = validate(res, [sc.flights["test"]], source="mocap")
    assert not any("accelerometer" in n for n in mocap.notes)


def test_acc_bias_sources() -> None:
    """Per configuration for a combined tls result (the requested one, else the first); delay's
    stated z bias (its value, not its σ); nothing for a result that removed none."""
    two = Result("tls", {}, settings={"configs": ["A", "B"], ACC_BIAS_KEY: {"A": [0.1, 0, 0], "B": [0, 0.2, 0]}})
    np.testing.assert_array_equal(acc_bias(two)[0], [0.1, 0, 0])
    b, where = acc_bias(two, "B")
    np.testing.assert_array_equal(b, [0, 0.2, 0])
    assert where == "the tls estimate of configuration B"
    d = Result("delay", {"tm": Estimate(0.05)}, settings={"acc_bias_z": [0.4, 0.2]})
    np.testing.assert_array_equal(acc_bias(d)[0], [0, 0, 0.4])
    assert acc_bias(Result("delay", {}, settings={"acc_bias_z": [0.0, 0.2]}))[1] == ""
    assert acc_bias(Result("online", {}))[1] == ""
