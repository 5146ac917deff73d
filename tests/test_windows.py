"""Windows found for the user: proposals per role, ground-contact correction, vehicle-scaled
thresholds — on the real Crazyflie logs (Eschmann et al.'s windows) and simulated flights."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from rotorid import io
from rotorid.errors import WindowError
from rotorid.excitation import THRESHOLDS, correct_window, measure, propose_windows
from rotorid.methods import delay
from rotorid.vehicle import Vehicle

PAPER = {"log10": ("thrust", [(35, 65)]), "log15": ("roll_pitch", [(55, 90)]), "log16": ("yaw", [(32, 38), (45, 49)])}


@functools.cache
def flight(path: str):
    return io.read(path)[0]


@pytest.fixture(scope="module")
def cf(cf_logs):
    return {n: flight(str(p)) for n, p in cf_logs.items()}


@pytest.mark.parametrize("log", sorted(PAPER))
def test_proposals_land_on_the_paper_windows(cf, log) -> None:
    role, paper = PAPER[log]
    got = propose_windows(cf[log], role)
    assert len(got) == len(paper)
    for w, (a, b) in zip(got, paper, strict=True):
        assert abs(w.t0 - a) < 4.0 and abs(w.t1 - b) < 4.0, (w, a, b)
        assert w.measure > 1.5 * w.threshold
        # a margin from take-off and landing: no ground contact inside
        assert correct_window(cf[log], w.t0, w.t1) is None


def test_delay_on_the_proposed_windows_matches_the_paper_windows(cf) -> None:
    """T_m 0.0728 ± 0.0032 s on the proposed windows vs 0.0731 ± 0.0032 s on the paper's."""
    sel = {log: [cf[log].window(w.t0, w.t1) for w in propose_windows(cf[log], PAPER[log][0])] for log in PAPER}
    r = delay.identify(sel["log10"], Vehicle.preset("crazyflie"), roll_pitch=sel["log15"], yaw=sel["log16"])
    assert abs(r.value("tm") - 0.0731) < 0.0032
    # σ includes the delay method's model-structure term (a ~17 ms dead time fits these logs
    # better than the pure lag, with T_m ~0.056 s): 0.017 s; 0.0026 s without it
    assert r.params["tm"].std < 0.03


def test_ground_contact_is_cut_out_of_a_requested_window(cf) -> None:
    f = cf["log10"]  # flying 31.44-69.10 s
    t0, t1 = correct_window(f, 26.5, 50.0)
    assert t0 == pytest.approx(32.44, abs=0.01) and t1 == pytest.approx(50.0, abs=0.01)
    t0, t1 = correct_window(f, 60.0, 76.0, margin=2.0)
    assert t0 == pytest.approx(60.0, abs=0.01) and t1 == pytest.approx(67.10, abs=0.01)
    assert correct_window(f, 35.0, 65.0) is None
    with pytest.raises(WindowError, match=r"on the ground \(flying spans: 31.4-69.1\)"):
        correct_window(f, 26.5, 30.0)


def test_online_window_starts_before_take_off() -> None:
    from rotorid.sim import scenarios

    f = scenarios.run("kwon-payload", seed=0, duration=12.0).flights["trajectory"]
    (w,) = propose_windows(f, "online")
    fly = measure(f).flying
    assert w.t0 == pytest.approx(max(fly[0][0] - 1.0, f.t[0]), abs=2e-3) and w.t1 == pytest.approx(fly[0][1], abs=2e-3)


def test_thresholds_scale_with_the_vehicle() -> None:
    """A 1.3 kg hexa-sized pilot flight: the fixed Crazyflie-tuned thresholds call its
    roll/pitch 'weak' or 'none'; the flight's own scale finds the excited part."""
    from rotorid.sim import scenarios

    f = scenarios.run("six-config-a", seed=0, duration=20.0).flights["train"]
    fixed = measure(f)
    assert fixed.axes["roll"].value < THRESHOLDS["roll"][0]
    got = propose_windows(f, "roll_pitch")
    assert got and sum(w.t1 - w.t0 for w in got) > 5.0
    assert all(w.threshold < THRESHOLDS["roll"][0] / 2 for w in got)
    # settable: an absolute threshold above every moving RMS gives nothing
    assert propose_windows(f, "roll_pitch", threshold=1e6) == []
    with pytest.raises(ValueError, match="unknown role"):
        propose_windows(f, "pitch")
    np.testing.assert_array_less(0, [w.measure for w in got])


# -- identify without windows, ground contact and role checks (rotorid.runs) --------------------


def test_identify_without_windows_uses_the_proposals_and_says_so(cf_logs) -> None:
    from rotorid import runs

    logs = {n: str(p) for n, p in cf_logs.items()}
    r = runs.identify(
        "delay", [logs["log10"]], Vehicle.preset("crazyflie"), {"roll_pitch": [logs["log15"]], "yaw": [logs["log16"]]}
    )
    assert abs(r.value("tm") - 0.0731) < 0.0032  # the paper windows' 0.0731 ± 0.0032 s
    said = [n for n in r.notes if "windows found" in n]
    assert [n.split(" windows found")[0] for n in said] == ["thrust", "roll/pitch", "yaw"]
    # params.json records the windows used, as if they had been typed
    by_path = {Path(i["path"]).name: i["windows"] for i in r.inputs}
    for log, (_, paper) in PAPER.items():
        assert len(by_path[log]) == len(paper)
        for (a, b), (pa, pb) in zip(by_path[log], paper, strict=True):
            assert abs(a - pa) < 4.0 and abs(b - pb) < 4.0
        assert f"{cf_logs[log]}@" in next(n for n in said if str(cf_logs[log]) in n)


def test_ground_contact_in_a_given_window_names_the_corrected_window(cf_logs) -> None:
    from rotorid import runs

    with pytest.raises(WindowError, match=r"log10@26.5:50 includes ground contact .* use .*log10@32.44:50.00$"):
        runs.identify("delay", [f"{cf_logs['log10']}@26.5:50"], Vehicle.preset("crazyflie"))


def test_swapped_roll_pitch_and_yaw_flights_are_named(cf_logs) -> None:
    from rotorid import runs

    opts = {"roll_pitch": [f"{cf_logs['log16']}@32:38"], "yaw": [f"{cf_logs['log15']}@55:90"]}
    with pytest.warns(UserWarning) as got, pytest.raises(runs.RotoridError, match="look swapped"):
        runs.identify("delay", [f"{cf_logs['log10']}@35:65"], Vehicle.preset("crazyflie"), opts)
    said = [str(w.message) for w in got]
    assert any(
        "log16 (32.00–38.00 s): the roll/pitch flight excites pitch only 8.7 rad/s^2 (excited >= 20, weak >= 5" in s
        and "looks like a yaw flight" in s
        for s in said
    ), said
    assert any("the yaw flight excites yaw only 1.44" in s and "looks like a roll/pitch flight" in s for s in said)


def test_a_role_with_no_excitation_is_refused_naming_measure_and_threshold(cf) -> None:
    from rotorid.errors import ExcitationError
    from rotorid.excitation import check_role, thresholds_for

    f = cf["log10"].window(40.0, 44.0)
    limits = thresholds_for(overrides={"yaw": (50.0, 10.0)})
    with pytest.raises(
        ExcitationError, match=r"the yaw flight excites yaw only 1.\d+ rad/s\^2 \(excited >= 50, weak >= 10"
    ):
        check_role(f, "yaw", limits)
    assert check_role(f, "thrust", limits) is None


def test_thresholds_scale_with_the_arm() -> None:
    from rotorid.excitation import REF_ARM, thresholds_for
    from rotorid.vehicle import build_vehicle

    big = thresholds_for(build_vehicle("quad-plus", 10 * REF_ARM, 1.3))
    assert big["roll"] == pytest.approx((2.0, 0.5)) and big["yaw"] == pytest.approx((0.5, 0.1))
    assert big["thrust"] == THRESHOLDS["thrust"]
    assert thresholds_for(Vehicle.preset("crazyflie"))["roll"] == pytest.approx(THRESHOLDS["roll"], rel=1e-3)


def test_roles_go_to_the_log_that_excites_them_and_the_command_quotes_paths() -> None:
    from rotorid import runs
    from rotorid.excitation import Window, assign_roles

    def w(role: str, m: float) -> list[Window]:  # scored against the Crazyflie thresholds
        return [Window(role, 1.0, 5.0, m, "", 0.0, m / THRESHOLDS[role.split("_")[0]][0])]

    def log(thrust: float, rp: float, yaw: float) -> dict[str, list[Window]]:
        return {"thrust": w("thrust", thrust), "roll_pitch": w("roll_pitch", rp), "yaw": w("yaw", yaw), "online": []}

    # the Crazyflie flights (window measures of the real logs): one manoeuvre each
    found = {"a": log(0.28, 13.0, 2.7), "b": log(0.08, 22.1, 1.6), "c": log(0.37, 10.3, 24.2)}
    got = {r: [name for name, _ in v] for r, v in assign_roles(found).items()}
    assert got == {"thrust": ["a"], "roll_pitch": ["b"], "yaw": ["c"], "online": []}
    # one pilot flight that excites everything serves every role
    got = assign_roles({"p": log(0.2, 30.0, 8.0)})
    assert {r: [n for n, _ in v] for r, v in got.items() if v} == {"thrust": ["p"], "roll_pitch": ["p"], "yaw": ["p"]}
    roles = {"thrust": ["my logs/t.ulg@1:5"], "roll_pitch": ["r.ulg@2:9"], "yaw": [], "online": ["my logs/t.ulg@0:9"]}
    assert runs.command("delay", roles, "v.toml") == (
        "rotorid identify --method delay --vehicle v.toml 'my logs/t.ulg@1:5' --roll-pitch r.ulg@2:9 --out results/"
    )
    assert runs.command("tls", roles, "v.toml").endswith("--vehicle v.toml 'my logs/t.ulg' r.ulg --out results/")
    assert runs.command("online", roles, "v.toml", "o/").endswith("'my logs/t.ulg@0:9' --out o/")
