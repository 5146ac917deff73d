"""The calibration benchmark's machinery (benchmarks/calibration.py, issue 11): its statistics
on synthetic estimates with a known σ, its flags, its tables, and one small real run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from support.bench import load

cal = load("calibration")


def _draws(n: int, sigma: float, true_sigma: float, bias: float = 0.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = np.full(n, 2.0)
    return truth + bias + true_sigma * rng.standard_normal(n), np.full(n, sigma), truth


def test_honest_sigma_gives_unit_ratio_and_gaussian_coverage():
    s = cal.summarize(*_draws(4000, 0.1, 0.1))
    assert s["n"] == 4000 and s["n_no_sigma"] == 0 and s["n_sigma_le_0"] == 0
    assert s["sd_over_sigma"] == pytest.approx(1.0, abs=0.03)
    assert abs(s["bias_over_sigma"]) < 0.05
    assert s["cover2"] == pytest.approx(0.9545, abs=0.01)
    assert s["cover3"] == pytest.approx(0.9973, abs=0.003)
    assert s["sigma_rel_pct"] == pytest.approx(5.0)


def test_honest_ranges_hold_for_95_percent_of_honest_runs():
    """The sampling ranges calibration.md states for n seeds: 8000 honest 30-seed runs fall inside
    the SD/σ̄ range 95 % of the time and reach the coverage floors at least 97.5 % of the time."""
    r = cal.honest_ranges(30)
    e = np.random.default_rng(3).standard_normal((8000, 30))
    sd = e.std(axis=1, ddof=1)
    assert np.mean((sd >= r["sd_lo"]) & (sd <= r["sd_hi"])) == pytest.approx(0.95, abs=0.01)
    assert 0.7 < r["sd_lo"] < 0.8 and 1.2 < r["sd_hi"] < 1.3
    assert np.mean(np.mean(np.abs(e) <= 2, axis=1) >= r["cover2_lo"]) >= 0.97
    assert np.mean(np.mean(np.abs(e) <= 3, axis=1) >= r["cover3_lo"]) >= 0.97


def test_wrong_sigma_and_bias_are_measured():
    big = cal.summarize(*_draws(4000, 0.2, 0.1))  # σ twice too large
    assert big["sd_over_sigma"] == pytest.approx(0.5, abs=0.02) and big["cover2"] > 0.999
    small = cal.summarize(*_draws(4000, 0.05, 0.1))  # σ twice too small: ±2σ covers ±1 true SD
    assert small["sd_over_sigma"] == pytest.approx(2.0, abs=0.06)
    assert small["cover2"] == pytest.approx(0.6827, abs=0.02)
    biased = cal.summarize(*_draws(4000, 0.1, 0.1, bias=0.3))
    assert biased["bias_over_sigma"] == pytest.approx(3.0, abs=0.05)
    assert biased["mean_rel_err_pct"] == pytest.approx(15.0, abs=0.3)
    assert cal.flags(small, mismatch=False, seeds=4000) == ["σ too small", "2σ coverage < 90 %"]
    assert cal.flags(big, mismatch=False, seeds=4000) == ["σ too large"]
    assert "biased" in cal.flags(biased, mismatch=True, seeds=4000)
    assert cal.flags(cal.summarize(*_draws(4000, 0.1, 0.1)), mismatch=False, seeds=4000) == []


def test_zero_and_missing_sigma_are_flagged_not_averaged():
    v, s, t = _draws(10, 0.1, 0.1)
    s[:3] = 0.0
    s[3] = np.nan
    out = cal.summarize(v, s, t)
    assert out["n_sigma_le_0"] == 3 and out["n_no_sigma"] == 1
    assert out["sigma_mean"] == pytest.approx(0.1)  # only the 6 usable σ
    f = cal.flags(out, mismatch=False, seeds=12)
    assert f[:3] == ["reported in 10/12 runs", "σ ≤ 0 in 3/10", "no σ in 1/10"]
    none = cal.summarize(v, np.zeros(10), t)
    assert math.isnan(none["sd_over_sigma"]) and math.isnan(none["cover2"])


def test_aggregate_and_markdown_show_every_case_failure_and_untruthed_parameter():
    runs = {
        "delay/eschmann-crazyflie": {
            0: {
                "params": {
                    "tm": {"value": 0.0707, "std": 0.001, "truth": 0.07},
                    "x": {"value": 1, "std": 1, "truth": None},
                }
            },
            1: {"params": {"tm": {"value": 0.0707, "std": 0.0, "truth": 0.07}}},
            2: {"error": "ExcitationError: flat"},
        }
    }
    summary = cal.aggregate(runs)
    d = summary["delay/eschmann-crazyflie"]
    assert d["no_truth"] == ["x"] and d["failed"] == {"2": "ExcitationError: flat"}
    assert d["params"]["tm"]["n"] == 2 and d["params"]["tm"]["n_sigma_le_0"] == 1
    md = cal.markdown(summary, {"seeds": 3, "wall_s": 60.0, "workers": 2, "python": "3"})
    assert "## delay/eschmann-crazyflie" in md and "Failed identifications: 1" in md
    row = next(line for line in md.splitlines() if line.startswith("| tm |"))
    assert "σ ≤ 0 in 1/2" in row and "| +1.000 |" in row  # mean error +1 %, over both seeds
    assert "not scored): x" in md


def test_cases_cover_every_method_with_a_mismatch_and_a_truth_assumption_twin():
    names = [c.name for c in cal.CASES]
    assert len(names) == len(set(names)) == 20
    paper = [c for c in cal.CASES if not c.mismatch and not c.truth_assumptions]
    assert len(paper) == 5
    for c in paper:
        assert c.name + "-mismatch" in names and c.name + "-random" in names and c.name + cal.TRUTH in names
    twins = [c for c in cal.CASES if c.truth_assumptions]
    assert len(twins) == 5 and not any(c.mismatch for c in twins)
    assert {c.method for c in cal.CASES} == {"delay", "tls", "online"}
    assert not cal.CASES[0].mismatch and cal.CASES[-1].mismatch


def test_truth_assumptions_are_the_simulators_truth_with_zero_sigma():
    """The `@truth-assumptions` settings: identical rotors, and delay's C_xy->z and z bias at the
    scenario's values with σ 0 (the settings each method accepts)."""
    from types import SimpleNamespace

    from rotorid.methods.delay import DelaySettings
    from rotorid.methods.online import OnlineSettings
    from rotorid.methods.tls import TlsSettings

    Sc = SimpleNamespace(settings={"izz_ratio": 1.832})
    d = cal.truth_settings("delay", "eschmann", Sc)
    assert d == {"izz_ratio": (1.832, 0.0), "acc_bias_z": (0.05, 0.0), "imu_scale": 0.0}
    assert DelaySettings(**d).izz_ratio == (1.832, 0.0)
    t = TlsSettings(**cal.truth_settings("tls", "six", Sc))
    assert t.motor_spread == 0.0 and t.imu_scale == 0.0 and t.imu_misalign == 0.0  # the paper scenarios' ideal IMU
    o = OnlineSettings(**cal.truth_settings("online", "kwon", Sc))
    assert o.motor_spread == 0.0 and o.acc_bias_z_sigma == 0.0


def test_ablation_cases_take_one_effect_at_its_mismatch_value():
    names = {c.name for c in cal.ABLATION_CASES}
    assert "delay/eschmann-crazyflie+izz_ratio" in names and "online/kwon-payload+izz_ratio" not in names
    assert {n for n in names if n.endswith("+mocap_delay")} == {"tls-mocap-AB/six-config-a+b+mocap_delay"}
    assert all(c.mismatch for c in cal.ABLATION_CASES)
    assert cal._ablation_overrides("six", "mocap_delay") == {"mocap_delay": 0.008}
    assert cal._ablation_overrides("eschmann", "izz_ratio") == {"izz_ratio": 2.02}
    assert set(cal._ablation_overrides("kwon", "imu_bias")) == {"gyro_bias", "acc_bias", "gyro_rw", "acc_rw"}
    # the simulator's other effects alone, at their realistic magnitude, on every family
    assert cal._ablation_overrides("six", "battery") == {"battery_sag": 0.06, "battery_drain": 5e-4}
    assert {"online/kwon-payload+gust", "delay/eschmann-crazyflie+ground_effect"} <= names


def test_a_real_delay_run_reports_finite_positive_sigma_near_the_truth():
    """Two short seeds of delay on eschmann-crazyflie through the benchmark's own runner: every σ
    finite and positive, the measured parameters within 3σ of the truth with σ as small as the
    honest ones (the coarse-grid tau_int made σ(T_m) ten times too large), and the values that
    rest on an assumption (C_xy->z; the accelerometer z bias, inseparable from K_0; the IMU's
    scale) marked. The σ sizes are read on the truth twin (the flights' own σ, no assumption)."""
    case, twin = "delay/eschmann-crazyflie", "delay/eschmann-crazyflie" + cal.TRUTH
    groups = {s: cal._run_group("eschmann", s, {case, twin}, duration=10.0) for s in (0, 1)}
    runs = {case: {s: g[case] for s, g in groups.items()}}
    for s, r in runs[case].items():
        p, own = r["params"], groups[s][twin]["params"]
        assert {"tm", "thrust_c2", "I_xx", "I_yy", "hover_cmd"} <= set(p)
        for k, e in p.items():
            assert np.isfinite(e["std"]) and e["std"] > 0, k
        # the curve's coefficients compare with the truth's only when the data chose its terms (0, 1, 2)
        curve = ("thrust_c1", "thrust_c2") if "thrust_c1" in p else ()
        for k in ("tm", *curve, "I_xx", "I_yy"):
            assert abs(p[k]["value"] - p[k]["truth"]) <= 3 * p[k]["std"], k
            assert not own[k]["assumed"], k
        assert not p["tm"]["assumed"] and p["I_xx"]["assumed"]  # 1.4 % of the IMU's assumed scale: most of its σ
        # 0.06 % from seed 0's 10 s flights (the commands hold over each 1 kHz log interval, no
        # time-resolution term); seed 1 chooses K_0 + K_2 u², and the full curve's T_m in σ makes it
        # 0.38 %, 0.77 % with the rise/fall and inflow checks its 10 s flight happens to half-support
        # (p 0.026, 0.040) at their evidence's weight (0.48, 0.40): still far below the coarse-grid
        # tau_int's ten times too much
        assert own["tm"]["std"] / own["tm"]["truth"] < 0.01
        assert own["I_xx"]["std"] / own["I_xx"]["truth"] < 0.005  # 0.03 %; 0.36 % on seed 1's chosen curve
        assert all(p[k]["assumed"] for k in ("I_zz", "k_tau", "thrust_c0", "hover_cmd"))
        assert p["I_zz"]["std"] / p["I_zz"]["truth"] > 0.2  # C = 1.832 ± 0.40
    s = cal.aggregate(runs)[case]["params"]
    assert s["tm"]["n"] == 2 and s["tm"]["cover3"] == 1.0
    assert s["I_zz"]["assumed"] and not s["tm"]["assumed"]


def test_an_assumed_parameter_is_flagged_as_assumed_not_as_too_large_a_sigma():
    wide = cal.summarize(*_draws(400, 0.5, 0.1))  # σ five times the scatter
    assert cal.flags(wide, mismatch=False, seeds=400) == ["σ too large"]
    assert cal.flags(wide | {"assumed": True}, mismatch=False, seeds=400) == ["assumed (σ = the assumption's spread)"]


def _z(params: dict, skip: tuple[str, ...] = ()) -> dict[str, float]:
    """(estimate - truth) / σ of every scored parameter not in `skip` (σ finite and positive)."""
    for k, e in params.items():
        assert np.isfinite(e["std"]) and e["std"] > 0, k
    return {
        k: (e["value"] - e["truth"]) / e["std"] for k, e in params.items() if e["truth"] is not None and k not in skip
    }


def test_a_real_tls_run_reports_honest_sigma(monkeypatch):
    """One 20 s seed of the three TLS cases through the benchmark's runner (the benchmark has
    the 30-seed figures), default settings: the accelerometer bias is estimated, so k_t is no
    longer shifted by b_z/g, and every parameter lies within 3σ of the truth, σ finite and
    positive. The rotors' own gains are estimated (`TlsSettings.rotor_gains`), so the horizontal
    CoM no longer rests on their assumed spread (a σ of several mm, labelled assumed): its σ is
    below 1 mm and nothing is labelled assumed (the simulated IMU declared ideal, as it is: its
    assumed calibration is tests/test_tls_imu.py's). Motion capture: the
    yaw pair is reported (errors in variables compensated, `TlsSettings.eiv`), within 3σ too."""
    cases = {"tls-imu-A/six-config-a", "tls-imu-AB/six-config-a+b", "tls-mocap-AB/six-config-a+b"}
    monkeypatch.setattr(cal, "TLS_OPTIONS", {"imu_scale": 0.0, "imu_misalign": 0.0})
    r = cal._run_group("six", 0, cases, duration=20.0)
    for case in cases:
        p = r[case]["params"]
        assert max(map(abs, _z(p).values())) < 3.0, case
        com = [k for k in p if k.startswith(("com_x", "com_y"))]
        assert com and not any(p[k]["assumed"] for k in com) and all(p[k]["std"] < 1e-3 for k in com), case
        assert any(k.startswith("k_t_m") for k in p), case
    assert abs(_z(r["tls-imu-A/six-config-a"]["params"])["k_t"]) < 2.0
    mo = r["tls-mocap-AB/six-config-a+b"]["params"]
    assert {"k_d", "k_tau", "I_zz@A", "I_zz@B"} <= set(mo)


def test_a_real_online_run_reports_honest_sigma():
    """One 20 s seed of online/kwon-payload: every reported parameter within 4σ of the truth,
    σ finite and positive (the HAC sandwich of the RLS)."""
    r = cal._run_group("kwon", 0, {"online/kwon-payload"}, duration=20.0)["online/kwon-payload"]
    z = _z(r["params"])
    assert {"I_xx", "I_yy", "I_zz", "com_x", "com_y", "mass"} <= set(z)
    assert max(map(abs, z.values())) < 4.0


def test_a_case_outside_the_bars_runs_on_more_seeds_and_is_judged_on_all(tmp_path, monkeypatch):
    """Stages (`calibrate`'s `extend`): a case with a cell outside the bars after the first seeds
    runs on more, judged on every seed, so a chance miss (one seed at 3σ among three) clears while
    a σ three times too small stays flagged and runs on the next stage too; a case inside the bars
    keeps its seeds, and one that clears stops."""

    def fake(group: str, seed: int, wanted: set[str], duration: float | None = None) -> dict:
        sign = 1.0 if seed % 2 else -1.0
        out = {}
        for case in wanted:
            e = 3.0 if seed == 0 and case.startswith("delay/eschmann-crazyflie") else sign  # in units of σ
            p = {"tm": {"value": 1.0 + 0.01 * e, "std": 0.01, "truth": 1.0, "assumed": False}}
            if case == "delay/eschmann-crazyflie":
                p["k"] = {"value": 2.0 + 0.03 * sign, "std": 0.01, "truth": 2.0, "assumed": False}
            out[case] = {"params": p, "wall_s": 0.0}
        return out

    monkeypatch.setattr(cal, "_run_group", fake)
    monkeypatch.setattr(cal, "OUT", tmp_path)
    # a whole case name selects that case alone, a part of one every case containing it
    doc = cal.calibrate(3, ["delay/eschmann-crazyflie", "crazyflie@"], workers=1, tag="t", extend=(30, 20))
    twin = f"delay/eschmann-crazyflie{cal.TRUTH}"
    assert doc["meta"]["stages"] == [
        {"seeds": 30, "first_seed": 3, "cases": ["delay/eschmann-crazyflie", twin]},
        {"seeds": 20, "first_seed": 33, "cases": ["delay/eschmann-crazyflie"]},
    ]
    s = doc["summary"]
    assert set(s) == {"delay/eschmann-crazyflie", twin}
    assert len(s["delay/eschmann-crazyflie"]["seeds"]) == 53 and len(s[twin]["seeds"]) == 33
    d = s["delay/eschmann-crazyflie"]["params"]
    assert cal.outside_bar(d["tm"], False, 53) == [] and d["tm"]["cover2"] == pytest.approx(52 / 53)
    assert cal.outside_bar(d["k"], False, 53) == ["σ too small", "2σ coverage < 90 %"]
    assert cal.outside_bar(s[twin]["params"]["tm"], False, 33) == []
    md = (tmp_path / "calibration-t.md").read_text()
    assert "judged on all 33" in md and "judged on all 53" in md and "seeds 53" in md


def test_the_bars_are_issue_11s_per_kind_of_scenario():
    """On a model-mismatch scenario only ±3σ coverage (and a missing σ) breaks the bar; a σ
    twice too large or a bias is information there, and an assumed σ is never too large."""
    big = cal.summarize(*_draws(4000, 0.2, 0.1, bias=0.25))
    assert cal.outside_bar(big, mismatch=True, seeds=4000) == []
    assert cal.outside_bar(big, mismatch=False, seeds=4000) == ["σ too large"]
    assert cal.outside_bar(big | {"assumed": True}, mismatch=False, seeds=4000) == []
    small = cal.summarize(*_draws(4000, 0.03, 0.1))
    assert cal.outside_bar(small, mismatch=True, seeds=4000) == ["3σ coverage < 90 %"]
    assert cal.outside_bar(small, mismatch=False, seeds=4500) == ["σ too small", "2σ coverage < 90 %"]


def test_the_randomized_suite_needs_95_percent_within_3_sigma():
    """Issue 32: the randomized cases are judged like the mismatch ones, at ±3σ coverage ≥ 95 %."""
    random = [c for c in cal.CASES if c.group.endswith("-random")]
    assert len(random) == 5 and all(c.mismatch and c.cover3_bar == 0.95 for c in random)
    assert all(c.cover3_bar == 0.9 for c in cal.CASES if c.group.endswith("-mismatch"))
    s = {"n": 100, "n_sigma_le_0": 0, "n_no_sigma": 0, "cover2": 0.8, "cover3": 0.93}
    assert cal.outside_bar(s, True, 100, random[0].cover3_bar) == ["3σ coverage < 95 %"]
    assert cal.outside_bar(s, True, 100) == []


def test_delays_curve_is_judged_at_the_voltage_it_holds_at():
    """With a battery the simulator's nominal curve holds at battery_v_ref, delay's at its V_ref
    (the voltage model's, else the thrust flight's median voltage): K_j scales by (V_m/V_sim)^j,
    the hover command by V_sim/V_m; without a battery the truth is unchanged."""
    from types import SimpleNamespace

    truth = {"thrust_c0": 0.02, "thrust_c1": -0.01, "thrust_c2_m3": 0.12, "hover_cmd": 0.6, "tm": 0.07}
    flight = SimpleNamespace(vbat=np.array([3.7, 3.8, 3.9]))
    sc = SimpleNamespace(
        truth=SimpleNamespace(vehicle={"mismatch": {"battery_v_ref": 4.0}}), flights={"thrust": flight}
    )
    modelled = cal._at_voltage(sc, SimpleNamespace(settings={"voltage_model": {"v_ref": 3.6}}), truth)
    assert modelled == pytest.approx(
        {"thrust_c0": 0.02, "thrust_c1": -0.009, "thrust_c2_m3": 0.12 * 0.81, "hover_cmd": 0.6 / 0.9, "tm": 0.07}
    )
    plain = cal._at_voltage(sc, SimpleNamespace(settings={"voltage_model": None}), truth)
    assert plain["thrust_c2_m3"] == pytest.approx(0.12 * 0.95**2) and plain["tm"] == 0.07
    sc.truth.vehicle = {}
    assert cal._at_voltage(sc, SimpleNamespace(settings={}), truth) == truth
