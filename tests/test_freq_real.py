"""The frequency-domain method on the real Crazyflie logs (Eschmann et al.), which hold no chirp:
the pilot's thrust and roll/pitch excitation in closed loop. It must agree with the delay
method on the same windows within 3 combined σ, and say why these flights do not suit it."""

import warnings

import numpy as np
import pytest

from rotorid.io import load
from rotorid.methods.freq import identify
from rotorid.vehicle import Vehicle

#: delay on log10@35:65, log15@55:90, log16@32:38,45:49 (tests/test_delay_real.py's windows),
#: value and σ as `rotorid identify --method delay` gives them at this commit
DELAY = {"tm": (0.07308, 0.01967), "I_xx": (1.2701e-5, 2.205e-6), "I_yy": (1.4145e-5, 2.484e-6)}


@pytest.fixture(scope="module")
def result(cf_logs):
    flights = load(f"{cf_logs['log10']}@35:65") + load(f"{cf_logs['log15']}@55:90")
    return identify(flights, Vehicle.preset("crazyflie"))


@pytest.mark.slow
def test_agrees_with_delay_within_three_combined_sigma(result):
    for name, (value, std) in DELAY.items():
        e = result.params[name]
        assert abs(e.value - value) < 3 * np.hypot(e.std, std), name
        assert 0 < e.std < 0.2 * e.value


def test_says_why_the_flights_do_not_suit_it(result):
    notes = "\n".join(result.notes)
    assert "no sweep" in notes and "closed loop" in notes
    assert result.settings["chi2_red"] > 3  # the real vehicle is not the model: σ widened by the data
    assert "σ widened" in notes


def test_a_fit_that_diverges_is_refused_in_one_line_not_a_traceback(bf_flights):
    """On the freestyle Betaflight logs (no chirp) a candidate model's gain could run off until
    its normal matrix overflowed: `LinAlgError: SVD did not converge`. A candidate that diverges
    predicts nothing (held-out error inf); an axis whose gain collapses to nothing is left out
    with a note (the release reported I_xx 8e25 from it), and with none left a RotoridError says
    so and what to fly."""
    from rotorid.vehicle import quad_x

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a collapsing gain's overflow is judged, not printed as warnings
        res = identify([bf_flights["btfl_002.bbl"]], quad_x(arm=0.1, mass=0.3))
    assert set(res.params) == {"tm"} and 0 < res.params["tm"].std < res.params["tm"].value
    assert "pitch: its response fits no non-zero gain (left out of the fit)" in res.notes  # 63 coherent bins
    assert not any(n.startswith(("roll: its", "yaw: its")) for n in res.notes)  # none coherent: never fitted
    res = identify([bf_flights["better_tune.BBL"]], quad_x(arm=0.1, mass=0.3))
    assert np.isfinite(res.params["tm"].std) and res.params["tm"].std > 0
    assert "I_xx" not in res.params
