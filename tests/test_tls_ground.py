"""Ground effect in tls (`TlsSettings.ground`, `methods.tls.ground`): kept where held-out segments
prefer it, and then k_t and the rotor radius it stands for right; absent, the model stands as it was."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from rotorid.errors import RotoridError
from rotorid.methods import tls
from rotorid.result import Result
from rotorid.sim import scenarios

#: The simulator's ground lies this many rotor radii below the hubs at the lowest point the flight
#: reaches (Cheeseman-Bennett +6.7 % there, +1.6 % at 2 R).
CLEARANCE = 1.0


def _z(result: Result, truth: dict[str, float], name: str) -> float:
    e = result.params[name]
    return (e.value - truth[name]) / e.std


def _identify(flight, vehicle, ground: str) -> Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tls.identify({"A": [flight]}, vehicle, settings=tls.TlsSettings(source="mocap", ground=ground))


def test_ground_effect_kept_on_held_out_segments_puts_kt_back_within_3_sigma():
    sc = scenarios.run("six-config-a", seed=2, flights=("train",), ground_effect=0.5, ground_clearance=CLEARANCE)
    flight, truth = sc.flights["train"], sc.truth.params
    off, auto = _identify(flight, sc.vehicle, "off"), _identify(flight, sc.vehicle, "auto")
    assert _z(off, truth, "k_t") > 5.0  # the thrust's rise near the ground taken up by k_t (+5.7σ)
    note = next(n for n in auto.notes if n.startswith("ground effect modelled"))
    assert "predicts held-out segments" in note
    assert abs(_z(auto, truth, "k_t")) < 3.0
    # (z_g, c) estimated too, not held where found: k_t, tied to the factor by the hover balance, ×1.63
    assert float(re.search(r"k_t σ ×([0-9.]+)", note).group(1)) > 1.3
    assert abs(_z(auto, truth, "I_xx")) < abs(_z(off, truth, "I_xx"))
    radius = float(re.search(r"rotor radius of ([0-9.]+) m", note).group(1))
    assert radius == pytest.approx(0.5 * 0.225, rel=0.1)  # the simulator's R: 0.5 arm
    level, c = auto.settings["ground_model"]
    assert c == pytest.approx(radius**2 / 16, rel=0.05)
    # the simulator's ground: CLEARANCE radii below the hubs (6.5 mm above the CoM) at the lowest CoM of a
    # first pass flown without it; the ground effect only lifts the flight, so the logged lowest hub is
    # that far above it or a little more (here 1.5 R)
    depth = (flight.pos[:, 2].min() + 0.0065 - level) / (0.5 * 0.225)
    assert CLEARANCE <= depth <= 2 * CLEARANCE


def test_no_ground_effect_leaves_the_model_as_it_was():
    sc = scenarios.run("six-config-a", seed=2, duration=30.0, flights=("train",))
    flight = sc.flights["train"]
    off, auto = _identify(flight, sc.vehicle, "off"), _identify(flight, sc.vehicle, "auto")
    assert auto.settings["ground_model"] is None
    assert any(n.startswith("no ground effect modelled") for n in auto.notes)
    assert not any("doubt about the ground effect" in n for n in auto.notes)
    for name, e in off.params.items():
        assert np.array_equal([e.value, e.std], [auto.params[name].value, auto.params[name].std]), name


def test_ground_setting_is_checked():
    with pytest.raises(RotoridError, match="--ground must be auto, on or off"):
        tls.TlsSettings(ground="yes").resolve(200.0)


def test_a_ground_effect_the_flights_do_not_determine_is_not_kept():
    """six-config-a seed 19 flies with no ground effect, yet held-out segments prefer one (t = 5.0)
    whose c, with its level estimated too, is 0.0σ from zero: not kept. Kept, on the two-configuration
    case it had put k_t -3.6σ off, or, with (z_g, c) in σ (the level 2.4 ± 220 m down), σ(k_t) ×26."""
    sc = scenarios.run("six-config-a", seed=19, flights=("train",))
    res = _identify(sc.flights["train"], sc.vehicle, "auto")
    assert res.settings["ground_model"] is None
    note = next(n for n in res.notes if n.startswith("no ground effect modelled"))
    assert "held-out segments prefer it" in note and "within 2σ of zero" in note
    assert abs(_z(res, sc.truth.params, "k_t")) < 3.0
