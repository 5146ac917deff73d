"""Verdicts a pilot reads (issue 12 part 5): one verdict per parameter in the terminal and the
report, an overall verdict at the top of both built from them, negative R² in words, paper
references in a collapsed Details section, units exact for the vehicle's motor input."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rotorid.identified import with_vehicle
from rotorid.report.html import render_html
from rotorid.result import Estimate, Result, explained, overall, shown, technical, unit_of, verdict
from rotorid.vehicle import Vehicle

RATIO = "I_zz from the assumed yaw-inertia ratio C = 1.83 ± 0.40"
YAW = {"identifiable": True, "advice": "fly a yaw manoeuvre"}
XV = "Cross-validation on the yaw flight: the roll/pitch model predicts angular acceleration with R² -0.11 (x)"
EQ = "Joint estimate (eq. 73-76) not usable: condition number 2.4"


def _result() -> Result:
    return Result(
        "delay",
        {
            "tm": Estimate(0.073, 0.003, "s"),
            "thrust_c0": Estimate(0.022, 0.002, "N"),
            "thrust_c1": Estimate(-0.011, 0.008, "N"),
            "thrust_c2": Estimate(0.128, 0.008, "N"),
            "I_xx": Estimate(1.27e-5, 6e-7, "kg m^2"),
            "I_zz": Estimate(2.46e-5, 6e-6, "kg m^2", RATIO),
            "k_tau": Estimate(0.0052, 0.0013, "m", "scale from the assumed I_zz ratio"),
        },
        observability={
            "I_xx": {"identifiable": True, "rel_std_pct": 4.7, "reason": "fits differ by 18 % (eq. 91)"},
            "I_zz": YAW,
            "k_tau": YAW,
        },
        notes=["Chosen: reciprocal (best held-out prediction).", XV, EQ],
    )


def test_units_follow_the_motor_input() -> None:
    assert [unit_of(n, "rad_s") for n in ("thrust_c2", "thrust_c1_m3", "thrust_c0", "k_t", "k_d", "hover_cmd")] == [
        "N/(rad/s)^2",
        "N/(rad/s)",
        "N",
        "N/(rad/s)^2",
        "N m/(rad/s)^2",
        "rad/s",
    ]
    assert [unit_of(n) for n in ("thrust_c2@B", "k_t", "hover_cmd", "I_xx", "tm")] == ["N", "N", "1", "kg m^2", "s"]
    assert unit_of("thrust_c2", "pwm_us") == "N/us^2" and unit_of("hover_cmd", "pwm_us") == "us"
    # every method's result gets them from the vehicle it was identified for
    rad = Vehicle.preset("quad-x").replace(motor_input="rad_s", cmd_min=0.0, cmd_max=2000.0)
    r = Result("delay", {"thrust_c2": Estimate(3e-6, 1e-8, "N"), "hover_cmd": Estimate(900.0, 1.0, "1")})
    with_vehicle(r, rad)
    assert (r.params["thrust_c2"].unit, r.params["hover_cmd"].unit) == ("N/(rad/s)^2", "rad/s")
    assert Result.from_dict(r.to_dict()).params["thrust_c2"].unit == "N/(rad/s)^2"
    # a TLS fit on measured rotor speeds is per rad/s whatever the vehicle's commands are
    t = Result("tls", {"k_t": Estimate(3e-6, 1e-8, "N")}, settings={"speed_channel": {"A": "rotor_speed"}})
    assert with_vehicle(t, Vehicle.preset("quad-x")).params["k_t"].unit == "N/(rad/s)^2"


def test_per_parameter_verdicts() -> None:
    r = _result()
    words = {k: verdict(e, r.observability.get(k)).word for k, e in r.params.items()}
    assert words == {
        "tm": "well",
        "thrust_c0": "well",
        "thrust_c1": "poor",
        "thrust_c2": "well",
        "I_xx": "well",
        "I_zz": "assumed",
        "k_tau": "assumed",
    }
    v = verdict(r.params["I_xx"], r.observability["I_xx"])
    assert v.text == "well determined (%σ 4.7): fits differ by 18 %"  # the paper reference goes to Details
    assert verdict(Estimate(1.0, 0.3), None).text == "loosely determined (%σ 30)"
    assert verdict(Estimate(1.0, 0.01), {"identifiable": False, "reason": "yaw not excited (eq. 9)"}).word == (
        "not identifiable"
    )


def test_overall_verdict_from_the_parameter_verdicts() -> None:
    assert overall(_result()) == (
        "usable for simulation: tm, thrust_c0, thrust_c2, I_xx; "
        "assumed: I_zz, k_tau (fly a yaw manoeuvre to measure them); not determined: thrust_c1"
    )
    per_motor = Result("delay", {f"thrust_c2_m{m}": Estimate(0.1, 0.001) for m in range(1, 5)})
    assert overall(per_motor) == "usable for simulation: thrust_c2 (motors 1–4)"
    per_motor.params.pop("thrust_c2_m2")
    assert overall(per_motor) == "usable for simulation: thrust_c2 (motors 1, 3, 4)"
    assert overall(Result("delay", {"tm": Estimate(0.07, 0.07)})) == ("usable for simulation: none; not determined: tm")
    # an assumed parameter whose σ (the assumption's spread included) is small is usable, and says so
    spread = "rotor thrust gains equal within 3 %"
    tls = Result(
        "tls", {"k_t": Estimate(1.0, 0.002, assumption=spread), "com_x": Estimate(0.004, 0.003, assumption=spread)}
    )
    assert overall(tls) == ("usable for simulation: k_t (k_t on a stated assumption, its spread in σ); assumed: com_x")


def test_terminal_summary_has_the_verdicts_and_hides_paper_notes() -> None:
    text = _result().summary()
    lines = text.splitlines()
    assert lines[1] == f"verdict: {overall(_result())}"
    row = next(ln for ln in lines if ln.startswith("I_zz"))
    assert row.split()[-1] == "assumed" and next(ln for ln in lines if ln.startswith("thrust_c1")).endswith("poor")
    assert "R² below 0: the prediction is worse than a constant at the measured mean" in text
    assert EQ not in text and "(1 technical note in report.html, Details)" in text


def test_report_has_overall_verdict_and_collapsed_details() -> None:
    html = render_html(_result(), {})
    head, _, rest = html.partition('<h2 id="parameters">')
    assert f"<strong>Verdict:</strong> {overall(_result())}." in head
    main, _, details = rest.partition('<details id="details">')
    assert EQ not in main and EQ in details and "R² below 0" in main
    assert "eq. 91" in details and "eq. 91" not in main  # the raw observability entry
    assert '<h3 id="settings">Settings used</h3>' in details


@pytest.mark.parametrize(
    ("note", "tech"),
    [(EQ, True), ("Hover check (Fig. 6): median 0.63", True), ("r_σ = 250", True), ("Chosen: reciprocal.", False)],
)
def test_technical_notes(note: str, tech: bool) -> None:
    assert technical(note) is tech
    assert explained(note) == note


@pytest.mark.parametrize("std", [0.0, float("nan"), float("inf"), -1e-3, 7.44e-21])
def test_no_sigma_that_says_nothing_is_well_determined(std: float) -> None:
    """A σ of 0, NaN, inf, negative or below float64's resolution (delay once printed
    tm 0.069481 ± 7.44e-21 s "well") is never "well determined"."""
    v = verdict(Estimate(0.069481, std, "s"), {"identifiable": True})
    assert (v.cls, v.word) == ("warn", "no σ")
    res = Result("delay", {"tm": Estimate(0.069481, std, "s")})
    assert overall(res) == "usable for simulation: none; without a usable σ: tm"


def test_sigma_just_above_resolution_is_judged_by_its_size() -> None:
    assert verdict(Estimate(0.07, 0.07 * 1e-6, "s"), None).word == "well"


def test_model_dependent_and_at_bound_verdicts() -> None:
    """A value reached only through a secondary model term is "model-dependent" however small its
    σ; an estimate at a search bound is "not identified" with the bound named."""
    e = Estimate(1.2e-5, 1e-8, "kg m^2")
    v = verdict(e, {"identifiable": True, "model_dependent": "through the rotor-drag yaw moment only"})
    assert (v.cls, v.word) == ("warn", "model-dependent")
    assert "rotor-drag yaw moment" in v.text
    a = verdict(replace(e, assumption="IMU assumed calibrated"), {"model_dependent": "through the yaw moment only"})
    assert (a.word, "yaw moment only" in a.text, "IMU assumed calibrated" in a.text) == ("model-dependent", True, True)
    b = verdict(Estimate(0.002, 1e-4, "s"), {"identifiable": True, "at_bound": "the lower bound 0.002 s"})
    assert (b.cls, b.word) == ("bad", "not identified")
    assert "lower bound 0.002 s" in b.text
    res = Result("tls", {"I_zz": e, "tm": Estimate(0.07, 0.001, "s")}, observability={
        "I_zz": {"model_dependent": "through the rotor-drag yaw moment only"}})  # fmt: skip
    assert overall(res) == "usable for simulation: tm; model-dependent (rest on a secondary model term): I_zz"


def test_a_table_shows_no_number_for_an_estimate_at_a_search_bound() -> None:
    """A T_m the search stopped on at its bound is not a measurement: the table (terminal, app)
    shows "—" for its value, σ and %σ, params.json keeps the number; a σ that is not finite is
    "—" too, never "nan"."""
    at = {"identifiable": False, "at_bound": "the lower bound 0.002 s of the T_m search", "reason": "filtered"}
    assert shown(Estimate(0.00204584, 0.0039, "s"), at) == ("—", "—", "—")
    assert shown(Estimate(0.0325, float("nan"), "s"), None) == ("0.0325", "—", "—")
    assert shown(Estimate(0.0325, 0.0074, "s"), {"identifiable": True}) == ("0.0325", "0.0074", "22.77")
    res = Result("delay", {"tm": Estimate(0.00204584, 0.0039, "s")}, observability={"tm": at})
    row = next(ln for ln in res.summary().splitlines() if ln.startswith("tm "))
    assert "0.00204584" not in row and row.split()[1:4] == ["—", "—", "—"] and "not identifiable" in row
    assert res.to_dict()["params"]["tm"]["value"] == 0.00204584
