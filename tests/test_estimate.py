"""An assumed parameter says so everywhere: in params.json (round trip) and in the report's verdict."""

from __future__ import annotations

import math

from rotorid.report.html import verdict
from rotorid.result import Estimate, Result

RATIO = "I_zz from the assumed yaw-inertia ratio C = 1.83 ± 0.40 (Eschmann Table II)"


def test_assumption_survives_params_json_round_trip() -> None:
    r = Result("delay", {"I_zz": Estimate(2.9e-5, 0.6e-5, "kg m^2", RATIO), "tm": Estimate(0.03, 1e-3, "s")})
    back = Result.from_dict(r.to_dict())
    assert back.params["I_zz"].assumption == RATIO and back.params["I_zz"].assumed
    assert back.params["tm"].assumption == "" and not back.params["tm"].assumed
    assert "assumption" not in r.to_dict()["params"]["tm"]


def test_assumed_is_never_well_determined() -> None:
    cls, text = verdict(Estimate(2.9e-5, 1e-9, "kg m^2", RATIO), {"identifiable": True, "rel_std_pct": 0.01})
    assert cls == "assumed" and "well determined" not in text and RATIO in text
    assert verdict(Estimate(1.0, 0.01), None)[0] == "ok"


def test_missing_sigma_is_not_a_green_verdict() -> None:
    cls, text = verdict(Estimate(1.0, math.nan), None)
    assert cls == "warn" and "no uncertainty" in text
