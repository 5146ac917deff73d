"""`rotorid batch`: manifests, the Dask run, the parameter table, the drift rule and the fleet
page. The fleet test simulates 4 Crazyflies x 5 dates (`simulate --set` overrides per vehicle)
with one injected drift (T_m of cf-03 up 25 % from the 4th date) and one corrupt log, and
asserts that the batch finds that drift and nothing else."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rotorid import batch
from rotorid.cli import app
from rotorid.manifest import ManifestError, read_manifest, settings_for

DATES = ["2026-01-10", "2026-02-07", "2026-03-07", "2026-04-04", "2026-05-02"]
VEHICLES = {
    "cf-01": {"tm": 0.060},
    "cf-02": {"tm": 0.070, "k_tau": 0.0050},
    "cf-03": {"tm": 0.075, "k_tau": 0.0060},
    "cf-04": {"tm": 0.065},
}
DRIFT = {("cf-03", "2026-04-04"): {"tm": 0.075 * 1.25}}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The simulated fleet's manifest, plus a 21st row whose log is a truncated Parquet file."""
    root = tmp_path_factory.mktemp("fleet")
    manifest = batch.simulate_fleet(root, VEHICLES, DATES, DRIFT, duration=3.0, seed=7)
    # one thrust curve for the whole history: coefficients compare across flights only on the same
    # terms (left to the data, 3 s flights choose differently from flight to flight)
    rows = manifest.read_text().splitlines()
    manifest.write_text("\n".join([rows[0] + ",options"] + [r + ',"exponents=0,1,2"' for r in rows[1:]]) + "\n")
    good = (root / "cf-02" / DATES[0] / "thrust.parquet").read_bytes()
    (root / "cf-02" / "cut.parquet").write_bytes(good[: len(good) // 2])
    with open(manifest, "a") as f:
        f.write('cf-02,2026-06-01,delay,crazyflie,cf-02/cut.parquet,,,"exponents=0,1,2"\n')
    return manifest


@pytest.fixture(scope="module")
def cluster():
    """An existing two-worker Dask cluster in this process (what --scheduler connects to)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, protocol="tcp") as c:
        yield c


@pytest.fixture(scope="module")
def fleet_out(fleet: Path, cluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("fleet-out") / "out"
    res = CliRunner().invoke(app, ["batch", str(fleet), "--scheduler", cluster.scheduler_address, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out, res.output


@pytest.mark.slow
def test_fleet_finds_the_injected_drift_and_nothing_else(fleet_out: tuple[Path, str]) -> None:
    out, text = fleet_out
    table = pd.read_parquet(out / "params.parquet")
    # every parameter with σ per vehicle and date: 20 runs x 9 delay parameters
    assert len(table) == 20 * 9
    assert set(table["vehicle"]) == set(VEHICLES)
    assert sorted(table["date"].dt.strftime("%Y-%m-%d").unique()) == DATES
    assert (table["std"] > 0).all() and np.isfinite(table["value"]).all()
    day = table["date"].dt.strftime("%Y-%m-%d")
    tm = table.assign(day=day)[table["parameter"] == "tm"].set_index(["vehicle", "day"])["value"]
    for veh, over in VEHICLES.items():
        for d in DATES:
            drifted = veh == "cf-03" and d >= "2026-04-04"
            assert tm[(veh, d)] == pytest.approx(over["tm"] * (1.25 if drifted else 1.0), rel=0.03)
    # the drift rule flags exactly the two drifted flights of cf-03's T_m ...
    flagged = table[table["flagged"]]
    assert sorted(zip(flagged["vehicle"], flagged["parameter"], day[table["flagged"]], strict=True)) == [
        ("cf-03", "tm", "2026-04-04"),
        ("cf-03", "tm", "2026-05-02"),
    ]
    assert (flagged["z"] > 10).all()
    # ... with every other comparison well inside: the rule does not live on the edge
    others = table[~table["flagged"] & table["z"].notna()]
    assert len(others) == 4 * 2 * 9 - 2  # dates 4 and 5 of every vehicle (3 earlier ones needed), minus the flagged
    assert others["z"].abs().max() < 3.0
    # ... and says so in words, in the console and on the page
    msg = "tm up 25 % since 2026-04-04: check motors/propellers"
    assert msg in " ".join(text.split())
    html = (out / "fleet.html").read_text()
    assert msg in html
    assert html.count('class="drift"') == 2  # the fleet list and cf-03's section
    assert "outlier" not in " ".join(text.split())


def test_failing_log_is_reported_in_its_row(fleet_out: tuple[Path, str], fleet: Path) -> None:
    out, text = fleet_out
    runs = pd.read_csv(out / "runs.csv", keep_default_na=False)
    assert list(runs["status"]).count("ok") == 20
    bad = runs[runs["status"] == "failed"]
    assert list(bad["row"]) == [21]
    assert str(fleet.parent / "cf-02" / "cut.parquet") in bad["error"].iloc[0]
    assert "row 21 (cf-02, 2026-06-01) failed" in " ".join(text.split())
    assert "cut.parquet" in (out / "fleet.html").read_text()
    # every successful run keeps its params.json (provenance: input files and hashes)
    files = sorted((out / "runs").rglob("*.params.json"))
    assert len(files) == 20
    d = json.loads(files[0].read_text())
    assert d["method"] == "delay" and len(d["inputs"]) == 3 and all(len(i["sha256"]) == 64 for i in d["inputs"])


def test_same_numbers_as_identify_on_the_real_logs(cf_logs: dict[str, Path], tmp_path: Path) -> None:
    """A batch row gives exactly what `rotorid identify` gives for the same logs and options,
    here on a LocalCluster made for the batch (one in-process worker)."""
    specs = {
        "logs": f"{cf_logs['log10']}@35:65",
        "roll_pitch": f"{cf_logs['log15']}@55:90",
        "yaw": f"{cf_logs['log16']}@32:38,45:49",
    }
    manifest = tmp_path / "m.toml"
    manifest.write_text(
        "[defaults]\nmethod = 'delay'\nairframe = 'crazyflie'\noptions = { cutoff_hz = 15 }\n"
        f"[[run]]\nvehicle = 'cf-real'\ndate = 2025-06-01\nlogs = ['{specs['logs']}']\n"
        f"roll_pitch = '{specs['roll_pitch']}'\nyaw = ['{specs['yaw']}']\n"
    )
    [o] = batch.run(read_manifest(manifest), workers=1, processes=False)
    assert o.ok, o.error
    cli = CliRunner().invoke(
        app,
        [
            "identify", "--method", "delay", "--vehicle", "crazyflie", specs["logs"],
            "--roll-pitch", specs["roll_pitch"], "--yaw", specs["yaw"], "--cutoff-hz", "15", "--out", str(tmp_path / "one"),
        ],
    )  # fmt: skip
    assert cli.exit_code == 0, cli.output
    ref = json.loads((tmp_path / "one" / "params.json").read_text())
    assert set(o.result.params) == set(ref["params"]) and "I_xx" in ref["params"]
    for k, e in o.result.params.items():
        assert e.value == ref["params"][k]["value"] and e.std == ref["params"][k]["std"], k
    assert o.result.settings == ref["settings"]
    assert [i["sha256"] for i in o.result.inputs] == [i["sha256"] for i in ref["inputs"]]


# -- the drift rule -------------------------------------------------------------------------
def _table(values: list[float], stds: list[float] | float, parameter: str = "tm", unit: str = "s") -> pd.DataFrame:
    n = len(values)
    stds = stds if isinstance(stds, list) else [stds] * n
    return pd.DataFrame(
        {
            "vehicle": "v",
            "date": pd.date_range("2026-01-01", periods=n, freq="7D"),
            "method": "delay",
            "row": np.arange(1, n + 1),
            "parameter": parameter,
            "value": values,
            "std": stds,
            "unit": unit,
        }
    )


def test_drift_rule_formula_by_hand() -> None:
    t, _ = batch.assess(_table([1.0, 1.2, 1.1, 1.6], [0.05, 0.05, 0.05, 0.1]))
    # m = 1.1, spread 0.1 > rms σ 0.05 -> s = 0.1; u = sqrt(max(0.1, 0.1)² + 0.1²/3)
    assert t["baseline"].iloc[3] == pytest.approx(1.1)
    assert t["scatter"].iloc[3] == pytest.approx(0.1)
    assert t["z"].iloc[3] == pytest.approx(0.5 / math.sqrt(0.01 + 0.01 / 3))
    assert t["flagged"].tolist() == [False, False, False, True]
    assert t["z"].iloc[:3].isna().all()  # too little history


def test_step_is_a_drift_with_its_onset_and_stays_flagged() -> None:
    t, found = batch.assess(_table([0.070, 0.0705, 0.0698, 0.0702, 0.0875, 0.0880, 0.0878], 0.0005))
    assert t["flagged"].tolist() == [False] * 4 + [True] * 3  # the new values never join the history
    [d] = found
    assert (d.kind, d.since, d.flights) == ("drift", "2026-01-29", 3)
    assert d.message == "tm up 25 % since 2026-01-29: check motors/propellers"
    assert d.baseline == pytest.approx(0.070125)


def test_one_odd_flight_is_an_outlier_not_a_drift() -> None:
    t, found = batch.assess(_table([1.00, 1.01, 0.99, 1.30, 1.00, 1.01], 0.01, "I_xx", "kg m^2"))
    assert t["flagged"].tolist() == [False, False, False, True, False, False]
    # the outlier stayed out of the history: the next baseline is the mean of the first three
    assert t["baseline"].iloc[4] == pytest.approx(1.0)
    [d] = found
    assert d.kind == "outlier" and d.since == "2026-01-22"
    assert d.message == "I_xx up 30 % on 2026-01-22 only (one odd flight): check payload and battery mounting"


def test_optimistic_sigma_is_replaced_by_the_history_spread() -> None:
    """σ 100 times smaller than the flight-to-flight spread: a value within 3 spreads is normal."""
    t, found = batch.assess(_table([1.00, 1.05, 0.95, 1.02, 0.97, 1.08], 0.0005))
    assert not t["flagged"].any() and not found
    assert t["z"].abs().max() < 2


def test_near_zero_parameter_is_described_in_units() -> None:
    _, [d] = batch.assess(_table([0.001, -0.001, 0.0005, 0.0, 0.02, 0.021], 0.001, "com_x", "m"))
    assert d.message == "com_x up 0.0204 m since 2026-01-29: check payload and battery mounting"


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.floats(-10, 10), min_size=2, max_size=12),
    stds=st.lists(st.floats(0.01, 2), min_size=12, max_size=12),
    scale=st.floats(0.001, 1000),
    shift=st.floats(-100, 100),
)
def test_drift_rule_is_unit_free(values: list[float], stds: list[float], scale: float, shift: float) -> None:
    """Changing units or origin (x -> a x + b, σ -> a σ) changes no z and no flag."""
    s = stds[: len(values)]
    a, _ = batch.assess(_table(values, s))
    b, _ = batch.assess(_table([scale * v + shift for v in values], [scale * x for x in s]))
    assert a["flagged"].tolist() == b["flagged"].tolist()
    np.testing.assert_allclose(a["z"], b["z"], rtol=1e-6, atol=1e-6)


# -- manifests ------------------------------------------------------------------------------
def test_csv_and_toml_manifests_give_the_same_jobs(tmp_path: Path) -> None:
    csv_text = (
        "vehicle,date,method,airframe,logs,roll_pitch,yaw,options\n"
        'a,2026-03-14,delay,crazyflie,f/t.ulg@1:9;f/u.ulg,f/rp.ulg,,"tm_bounds=0.01,0.2; exponents=2; asymmetric_tm=true"\n'
        "b,2026-03-14T09:30:00+01:00,online,x500,g.csv,,,rate_hz=none\n"
    )
    toml_text = """
[defaults]
airframe = "crazyflie"
[[run]]
vehicle = "a"
date = 2026-03-14
method = "delay"
logs = ["f/t.ulg@1:9", "f/u.ulg"]
roll_pitch = "f/rp.ulg"
options = { tm_bounds = [0.01, 0.2], exponents = [2], asymmetric_tm = true }
[[run]]
vehicle = "b"
date = 2026-03-14T09:30:00+01:00
method = "online"
airframe = "x500"
logs = ["g.csv"]
options = { rate_hz = 100.0 }
"""
    (tmp_path / "m.csv").write_text(csv_text)
    (tmp_path / "m.toml").write_text(toml_text)
    a, b = read_manifest(tmp_path / "m.csv"), read_manifest(tmp_path / "m.toml")
    assert a[0] == b[0]
    assert a[0].logs == (f"{tmp_path}/f/t.ulg@1:9", f"{tmp_path}/f/u.ulg")
    assert settings_for("delay", a[0].options).tm_bounds == (0.01, 0.2)
    assert settings_for("delay", a[0].options).exponents == (2,)
    assert a[1].date == b[1].date and a[1].label == "2026-03-14T08:30"  # UTC
    assert settings_for("online", a[1].options).rate_hz is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("vehicle,date,method,airframe\nv,2026-01-01,delay,crazyflie\n", "missing column logs"),
        ("vehicle,date,method,airframe,logs,colour\nv,2026-01-01,delay,crazyflie,l,red\n", "unknown column 'colour'"),
        ("vehicle,date,method,airframe,logs\nv,14.03.2026,delay,crazyflie,l\n", "date '14.03.2026' is not an ISO date"),
        ("vehicle,date,method,airframe,logs\nv,2026-01-01,magic,crazyflie,l\n", "unknown method 'magic'"),
        ("vehicle,date,method,airframe,logs\nv,2026-01-01,delay,blimp,l\n", "airframe 'blimp' is neither a preset"),
        ("vehicle,date,method,airframe,logs,yaw\nv,2026-01-01,tls,x500,l,y\n", "'yaw' is for --method delay, not tls"),
        ("vehicle,date,method,airframe,logs,options\nv,2026-01-01,delay,crazyflie,l,tm_max=3\n", "unknown delay option(s) tm_max"),
        ('vehicle,date,method,airframe,logs,options\nv,2026-01-01,delay,crazyflie,l,"tm_bounds=0.5,0.1"\n', "run 1: tm_bounds"),
        ("vehicle,date,method,airframe,logs,options\nv,2026-01-01,delay,crazyflie,l,cutoff_hz\n", "'cutoff_hz' must look like NAME=VALUE"),
        ("vehicle,date,method,airframe,logs\n", "lists no runs"),
    ],
)  # fmt: skip
def test_bad_manifest_fails_before_running_in_one_line(tmp_path: Path, text: str, says: str) -> None:
    p = tmp_path / "m.csv"
    p.write_text(text)
    res = CliRunner().invoke(app, ["batch", str(p), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2
    line = " ".join(res.output.split())
    assert line.startswith("error:") and says in line, line
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_unreachable_scheduler_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "CONNECT_TIMEOUT", "1s")
    m = tmp_path / "m.csv"
    m.write_text("vehicle,date,method,airframe,logs\nv,2026-01-01,delay,crazyflie,t.parquet\n")
    res = CliRunner().invoke(app, ["batch", str(m), "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'" in " ".join(res.output.split())
    assert not (tmp_path / "o").exists()


def test_workers_and_scheduler_together_are_refused(tmp_path: Path) -> None:
    m = tmp_path / "m.csv"
    m.write_text("vehicle,date,method,airframe,logs\nv,2026-01-01,delay,crazyflie,t.parquet\n")
    res = CliRunner().invoke(app, ["batch", str(m), "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"])
    assert res.exit_code == 2
    assert "give either --workers" in " ".join(res.output.split())


def test_warnings_go_to_their_own_job_when_jobs_share_a_process() -> None:
    """Jobs in threads of one process (processes=False) each collect only their own warnings,
    not each other's nor the caller's."""
    import threading
    import warnings

    sinks: dict[int, list[str]] = {i: [] for i in range(4)}
    inside, done = threading.Barrier(5), threading.Barrier(5)

    def job(i: int) -> None:
        with batch._warnings_into(sinks[i]):
            inside.wait()  # all four inside at once, and the caller warns meanwhile
            for k in range(3):
                warnings.warn(f"job {i} warning {k}", UserWarning, stacklevel=1)
            done.wait()

    threads = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        for t in threads:
            t.start()
        inside.wait()
        warnings.warn("the caller's own warning", UserWarning, stacklevel=1)
        done.wait()
        for t in threads:
            t.join()
    assert sinks == {i: [f"job {i} warning {k}" for k in range(3)] for i in range(4)}


def test_manifest_problems_name_their_run(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("name = 'x'\nmass = -1\n")
    cases = {
        "v,2026-01-01,delay,bad.toml,l": "run 1: .*bad.toml: missing key 'rotor'",
        "v,2026-01-01,delay,crazyflie,l@65:35": "run 1: l@65:35: window '65:35' is empty",
    }
    for row, says in cases.items():
        p = tmp_path / "m.csv"
        p.write_text(f"vehicle,date,method,airframe,logs\n{row}\n")
        with pytest.raises(ManifestError, match=says):
            read_manifest(p)


def test_fleet_page_states_the_smallest_change_each_parameter_can_reveal() -> None:
    """At the latest run the rule flags |x − m| > 3u: u = sqrt(0.1² + 0.1²/3) = 0.1155 on the
    hand-checked history (m 1.1), so a change below ±0.346 (31.5 %) cannot be told apart."""
    from rotorid.report import fleet

    t, found = batch.assess(_table([1.0, 1.2, 1.1, 1.6], [0.05, 0.05, 0.05, 0.1]))
    # the history test's limit here is t_crit(2) s_h sqrt(4/3) = 19.2 x 0.1155 = 2.22: σ's is smaller
    assert t["limit"].iloc[3] == pytest.approx(3 * 0.11547, rel=1e-4)
    assert fleet.smallest_change(t["limit"].iloc[3], t["baseline"].iloc[3]) == "±0.346 (31.5 %)"
    assert fleet.smallest_change(t["limit"].iloc[0], t["baseline"].iloc[0]) == "—"  # history too short
    html = fleet.render(t, found, pd.DataFrame({"status": ["ok"] * 4}), "fleet")
    assert "<th>smallest change flagged</th>" in html and '<td>±0.346 (31.5 %)</td><td class="l">σ</td>' in html


def test_history_tighter_than_sigma_catches_a_25_percent_tm() -> None:
    """T_m 60 ms ± 18 ms per flight (σ like the real logs', mostly terms every flight shares),
    four earlier runs within ±1 ms: σ alone flags only beyond 3u = 3 sqrt(18² + 18²/4) = 60.4 ms
    (+100 %); the history test (t with 3 dof beyond 9.22, s_h 0.854 ms) flags from 8.8 ms
    (+14.6 %), so +25 % is a drift and +4 % is not."""
    from rotorid.report import fleet

    hist = [0.060, 0.061, 0.059, 0.0605]
    t, found = batch.assess(_table([*hist, 0.075], 0.018))
    last = t.iloc[4]
    assert last["dev_std"] * 3 == pytest.approx(0.06037, rel=1e-3)
    assert last["hist_std"] == pytest.approx(0.000854, rel=1e-3)
    assert last["limit"] == pytest.approx(9.2189 * 0.000854 * 1.25**0.5, rel=1e-3)
    assert abs(last["z"]) > 3 and last["flagged"]
    assert [f.message for f in found] == ["tm up 25 % since 2026-01-29: check motors/propellers"]
    assert fleet.smallest_change(last["limit"], last["baseline"]) == "±0.0088 (14.6 %)"
    quiet, none = batch.assess(_table([*hist, 0.0625], 0.018))
    assert not quiet["flagged"].any() and none == []


def test_fleet_drift_from_history_when_sigma_is_inflated(fleet_out: tuple[Path, str]) -> None:
    """The simulated fleet with every σ inflated to 30 % of its value (the real logs' %σ): σ
    alone flags nothing (+25 % is 0.8σ), the vehicles' own histories still find cf-03's T_m
    drift, and nothing else."""
    out, _ = fleet_out
    table = pd.read_parquet(out / "params.parquet")[
        ["vehicle", "date", "method", "row", "parameter", "value", "std", "unit"]
    ]
    wide = table.assign(std=0.3 * table["value"].abs())
    t, found = batch.assess(wide)
    flagged = t[t["flagged"]]
    assert sorted(
        zip(flagged["vehicle"], flagged["parameter"], flagged["date"].dt.strftime("%Y-%m-%d"), strict=True)
    ) == [
        ("cf-03", "tm", "2026-04-04"),
        ("cf-03", "tm", "2026-05-02"),
    ]
    assert ((flagged["value"] - flagged["baseline"]).abs() < 3 * flagged["dev_std"]).all()  # σ alone: no flag
    assert [f.message for f in found] == ["tm up 25 % since 2026-04-04: check motors/propellers"]
