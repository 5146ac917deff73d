"""Cross-method agreement (`rotorid compare`) on the real Crazyflie flights (Eschmann et al.):
each method's estimates as `rotorid identify` gives them at this commit on log10@35:65,
log15@55:90 and log16@32:38,45:49 (delay; tls with --speed cmd on log10 and log15; freq on log10
and log15; online on log15 with the vehicle exported from the delay run), set side by side."""

import json
import math
from pathlib import Path

import pytest
from tests.support.hostile import run

from rotorid.agreement import compare_runs, context, method_doubts, trust
from rotorid.result import Estimate, Result

CMD = "thrust taken as k_t u² of the normalized command u, which is not a rotor speed"
#: (value, σ) of each run, and what its result says beside them
RUNS = {
    "delay": Result(
        "delay",
        {
            "tm": Estimate(0.07385242, 0.0233653, "s"),
            "thrust_c0": Estimate(0.0198468, 0.00317353, "N"),
            "thrust_c2": Estimate(0.1172904, 0.00499837, "N"),
            "I_xx": Estimate(1.24235e-05, 2.41697e-06, "kg m^2"),
            "I_yy": Estimate(1.384066e-05, 2.6436e-06, "kg m^2"),
            "I_zz": Estimate(2.405797e-05, 6.78743e-06, "kg m^2", "from I_zz = 1.832 (I_xx + I_yy)/2"),
        },
        notes=["Residuals are structured: a dead time of 17.6 ms ..."],
        vehicle={"name": "crazyflie", "mass": 0.027},
    ),
    "tls": Result(
        "tls",
        {
            "k_t": Estimate(0.1464694, 0.0063593, "N", CMD),
            "I_xx": Estimate(7.37251e-06, 1.02513e-06, "kg m^2", CMD),
            "I_yy": Estimate(8.57093e-06, 1.99190e-06, "kg m^2", CMD),
            "com_x": Estimate(-8.14432e-04, 4.75831e-04, "m", CMD),
            "com_y": Estimate(-4.38997e-04, 4.00681e-04, "m", CMD),
            "com_z": Estimate(2.30486e-03, 4.19938e-04, "m", CMD),
        },
        settings={"speed_channel": {"A": "cmd"}, "inertia_about": "origin"},
        vehicle={"name": "crazyflie", "mass": 0.027},
    ),
    "online": Result(
        "online",
        {
            "I_xx": Estimate(1.11964e-05, 1.29459e-07, "kg m^2"),
            "I_yy": Estimate(1.18548e-05, 1.73755e-07, "kg m^2"),
            "I_zz": Estimate(1.85483e-05, 4.10582e-06, "kg m^2"),
            "com_x": Estimate(-4.88965e-04, 4.23244e-04, "m", "one thrust coefficient for all rotors"),
        },
        settings={"motor_source": "cmd", "motor_lag": True},
        observability={"I_zz": {"identifiable": False, "reason": "body z rate rarely above its KF σ"}},
        vehicle={"name": "crazyflie", "mass": 0.0275},
    ),
    "freq": Result(
        "freq",
        {
            "tm": Estimate(0.05671859, 0.00196910, "s"),
            "I_xx": Estimate(8.74342e-06, 5.37863e-07, "kg m^2"),
            "I_yy": Estimate(9.42485e-06, 5.87178e-07, "kg m^2"),
        },
        settings={"dead_time_fitted": True, "chi2_red": 10.096},
        notes=["log10: roll: no sweep (fitted over 0.5-15 Hz of the pilot's input, H1 in closed loop)"],
        vehicle={"name": "crazyflie", "mass": 0.027},
    ),
}


@pytest.fixture(scope="module")
def rows():
    return {r.name: r for r in compare_runs(RUNS)}


def _z(rows, name, a, b):
    return next(p for p in rows[name].pairs if (p.a, p.b) == (a, b))


def test_pins_the_crazyflie_z_values(rows):
    assert list(rows) == ["tm", "I_xx", "I_yy", "I_zz", "com_x"]  # k_t: delay's curve is not u² alone
    pins = {  # as `rotorid compare` gives them on the four runs' params.json
        ("tm", "delay", "freq"): 0.7307,
        ("I_xx", "delay", "tls"): 1.9805,  # tls moved to the CoM first
        ("I_xx", "delay", "online"): 0.5070,
        ("I_xx", "delay", "freq"): 1.4862,
        ("I_xx", "tls", "online"): -3.8446,
        ("I_xx", "tls", "freq"): -1.3126,
        ("I_xx", "online", "freq"): 4.4340,
        ("I_yy", "delay", "tls"): 1.6408,
        ("I_yy", "delay", "online"): 0.7496,
        ("I_yy", "delay", "freq"): 1.6306,
        ("I_yy", "tls", "online"): -1.7231,
        ("I_yy", "tls", "freq"): -0.4889,
        ("I_yy", "online", "freq"): 3.9682,
        ("I_zz", "delay", "online"): 0.6946,
        ("com_x", "tls", "online"): -0.5111,
    }
    for (name, a, b), z in pins.items():
        assert _z(rows, name, a, b).z == pytest.approx(z, abs=2e-4), (name, a, b)
    disagree = [(n, p.a, p.b, p.trust) for n, r in rows.items() for p in r.pairs if not p.agree]
    assert disagree == [
        ("I_xx", "tls", "online", "online"),  # tls's inertia rests on commands taken as rotor speeds
        ("I_xx", "online", "freq", "online"),  # freq: no sweep, closed loop, reduced χ² 10
        ("I_yy", "online", "freq", "online"),
    ]


def test_says_why_and_where_definitions_differ(rows):
    assert "online measures it (well); tls is assumed" in _z(rows, "I_xx", "tls", "online").why
    why = _z(rows, "I_xx", "online", "freq").why
    assert "no chirp sweep" in why and "reduced χ² 10.1" in why and "σ excludes their doubt" in why
    assert rows["tm"].caveats == (
        "freq's T_m leaves out the dead time it fits (its notes give it); the others' T_m includes any",
    )
    shift = 0.027 * (4.38997e-04**2 + 2.30486e-03**2)
    tls_xx = next(e for e in rows["I_xx"].entries if e.run == "tls")
    assert tls_xx.value == pytest.approx(7.37251e-06 - shift, rel=1e-12) and tls_xx.verdict == "assumed"
    assert rows["I_zz"].entries[1].verdict == "not identifiable"


def test_trust_neither_when_both_stand_equally():
    a = next(e for e in compare_runs(RUNS)[1].entries if e.run == "online")
    b = a.__class__("twin", "online", 2 * a.value, a.std, "well", a.doubts)
    who, why = trust(a, b)
    assert who is None and why.startswith("neither stands better")


def test_context_and_doubts():
    assert method_doubts(RUNS["tls"]) == [
        "thrust as k_t u² of the command, not of a measured rotor speed (no motor lag)"
    ]
    other = Result("delay", {}, vehicle={"name": "x500"}, inputs=[{"sha256": "b"}])
    mine = Result("freq", {}, vehicle={"name": "crazyflie"}, inputs=[{"sha256": "a"}])
    notes = context({"a": mine, "b": other})
    assert len(notes) == 2 and "different vehicles (crazyflie, x500)" in notes[0] and "share no log" in notes[1]
    assert context(RUNS) == []


def test_compare_command(tmp_path: Path):
    for name, r in RUNS.items():
        (tmp_path / name).mkdir()
        r.save(tmp_path / name / "params.json")
    out = tmp_path / "agree.json"
    code, text, err = run(["compare", *(str(tmp_path / n) for n in RUNS), "--out", str(out)])
    assert code == 0, err
    assert "disagree I_xx, tls vs online (z -3.84): trust online" in " ".join(text.split())
    assert "12 of 15 pairs agree within ±3 combined σ" in text
    doc = json.loads(out.read_text())
    assert doc["z_agree"] == 3 and [r["name"] for r in doc["rows"]][:2] == ["tm", "I_xx"]
    assert math.isclose(doc["rows"][0]["pairs"][0]["z"], 0.7307, abs_tol=2e-4)
    code, _, err = run(["compare", str(tmp_path / "delay")])
    assert code == 2 and "needs two or more runs" in err
