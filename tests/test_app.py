"""`rotorid app` without a browser: the folder guard, uploads, sessions, the windows syntax, the
CLI line, what each panel plots and the server-side downsampling (the browser tests are in
test_app_browser.py)."""

from __future__ import annotations

import base64
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from rotorid.app import callbacks, opening, panels, run
from rotorid.app.state import AppError, LogEntry, Sessions, list_logs, resolve_in, safe_name
from rotorid.errors import RotoridError, WindowError
from rotorid.flight import Flight
from rotorid.result import Estimate, Result
from rotorid.vehicle import Vehicle, build_vehicle


@pytest.fixture
def sessions() -> Sessions:
    s = Sessions(limit=2)
    yield s
    s.cleanup()


def test_resolve_in_keeps_to_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.ulg").write_bytes(b"x")
    (tmp_path / "secret").write_bytes(b"x")
    (root / "link").symlink_to(tmp_path / "secret")
    assert resolve_in(root, "sub/a.ulg") == (root / "sub" / "a.ulg").resolve()
    assert resolve_in(root, str(root / "sub" / "a.ulg")) == (root / "sub" / "a.ulg").resolve()
    for bad in ("../secret", str(tmp_path / "secret"), "link", "sub/../../secret", "/etc/passwd"):
        with pytest.raises(AppError, match="outside the folder this app serves"):
            resolve_in(root, bad)
    with pytest.raises(AppError, match="no such file"):
        resolve_in(root, "sub/missing.ulg")


def test_list_logs_skips_hidden_and_deep_files(tmp_path: Path) -> None:
    for p in ("a.bin", ".hidden", "x/b.ulg", ".git/c", "x/y/z/w/deep.csv"):
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_bytes(b"")
    assert list_logs(tmp_path, depth=3) == ["a.bin", "x/b.ulg"]
    assert list_logs(tmp_path, depth=4) == ["a.bin", "x/b.ulg", "x/y/z/w/deep.csv"]


def test_safe_name() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\logs\\my log 1.BBL") == "my_log_1.BBL"
    assert safe_name("..") == "upload"


def test_sessions_are_separate_and_evicted_with_their_files(sessions: Sessions) -> None:
    a, b = sessions.new(), sessions.new()
    assert a != b and len(a) == 32
    sa = sessions.get(a)
    sa.windows["thrust"]["log"] = [(1.0, 2.0)]
    assert sessions.get(b).windows["thrust"] == {}
    folder = sa.folder_for("uploads")
    sessions.get(b)  # b is now the most recently used
    sessions.new()  # over the limit of 2: a goes, with its files
    assert not folder.exists()
    with pytest.raises(AppError, match="expired"):
        sessions.get(a)
    root = sessions.root
    sessions.cleanup()
    assert not root.exists()


def test_upload_is_stored_in_the_session_and_size_limited(sessions: Sessions) -> None:
    s = sessions.get(sessions.new())
    data = bytes(range(256)) * 8
    payload = "data:application/octet-stream;base64," + base64.b64encode(data).decode()
    path = callbacks.save_upload(s, payload, "../flight.ulg", max_bytes=4096)
    assert path == s.folder / "uploads" / "flight.ulg" and path.read_bytes() == data
    with pytest.raises(AppError, match="larger than the upload limit"):
        callbacks.save_upload(s, payload, "big.ulg", max_bytes=1024)
    with pytest.raises(AppError, match="damaged"):
        callbacks.save_upload(s, "data:;base64,@@@@", "x.ulg", max_bytes=4096)


def test_windows_text_uses_the_cli_syntax() -> None:
    assert callbacks.parse_windows("") == []
    assert callbacks.parse_windows(" 50:60, 35:40,39:45 ") == [(35.0, 45.0), (50.0, 60.0)]  # sorted, joined
    assert callbacks.format_windows([(35.0, 45.0), (50.0, 60.123)]) == "35.00:45.00, 50.00:60.12"
    with pytest.raises(WindowError, match="empty"):
        callbacks.parse_windows("40:30")
    with pytest.raises(RotoridError):
        callbacks.parse_windows("35-40")


def test_every_export_format_has_a_download_name() -> None:
    from rotorid.export import FORMATS

    assert tuple(run.EXPORTS) == FORMATS
    assert len(set(run.EXPORTS.values())) == len(FORMATS)  # one file each, none written over another


def test_command_line_repeats_the_windows(sessions: Sessions) -> None:
    s = sessions.get(sessions.new())
    assert "--vehicle '<choose one>'" in run.command_line(s)  # no vehicle is assumed
    s.vehicle = s.vehicle_label = "crazyflie"
    for key, label in (("a", "/d/log10"), ("b", "/d/log 15"), ("c", "/d/log16")):
        s.logs[key] = LogEntry(key, Path(label), label, [])
    s.windows["thrust"] = {"a": [(35.0, 65.0)], "b": []}
    s.windows["roll_pitch"] = {"b": [(55.0, 90.0)]}
    s.windows["yaw"] = {"c": [(45.0, 49.0), (32.0, 38.0)], "a": [(40.0, 41.5)]}
    line = run.command_line(s)
    assert shlex.split(line) == [
        "rotorid", "identify", "--method", "delay", "--vehicle", "crazyflie", "/d/log10@35:65",
        "--roll-pitch", "/d/log 15@55:90", "--yaw", "/d/log16@32:38,45:49", "--yaw", "/d/log10@40:41.5",
        "--out", "results",
    ]  # fmt: skip
    s.windows["thrust"] = {}
    with pytest.raises(RotoridError, match="set at least one thrust window"):
        run.start(s)
    s.vehicle = ""
    with pytest.raises(RotoridError, match="choose the vehicle first"):
        run.start(s)


def test_options_form_is_made_from_the_delay_settings(sessions: Sessions) -> None:
    """The form shows every declared delay option but the log roles; what differs from the
    defaults goes into the command line (and the run) typed as the command line types it."""
    from rotorid.app.layout import layout
    from rotorid.methods.delay import DelaySettings
    from rotorid.options import options_of

    assert list(run.form_options()) == list(options_of(DelaySettings))
    ids = re.findall(r"'type': 'option', 'name': '(\w+)'", repr(layout(sessions.root, "x", 1.0)))
    assert ids == list(options_of(DelaySettings))
    form = {"cutoff_hz": "15", "exponents": "auto", "tm_prior": "", "per_motor": True, "asymmetric_tm": False}
    assert run.given_options(form) == {"cutoff_hz": 15.0, "per_motor": True}
    with pytest.raises(RotoridError, match="--cutoff-hz 'fast' must be a number"):
        run.given_options({"cutoff_hz": "fast"})
    s = sessions.get(sessions.new())
    s.vehicle = s.vehicle_label = "crazyflie"
    s.logs["a"] = LogEntry("a", Path("/d/log10"), "/d/log10", [])
    s.windows["thrust"] = {"a": [(35.0, 65.0)]}
    s.options = run.given_options(form)
    assert shlex.split(run.command_line(s))[6:] == [
        "/d/log10@35:65",
        "--cutoff-hz",
        "15.0",
        "--per-motor",
        "--out",
        "results",
    ]


def _flight(n: int = 4000, rate: float = 1000.0) -> Flight:
    t = np.arange(n) / rate
    cmd = np.full((n, 4), 0.5)
    cmd[:, [2, 3]] += 0.1  # crazyflie m3, m4 are on the left (y > 0): a left-side-up roll command
    cmd[:, [1, 3]] += 0.02  # m2, m4 turn clockwise (torque_dir +1)
    acc = np.zeros((n, 3))
    acc[:, 2] = 9.8 + np.sin(t)
    return Flight(t, acc=acc, gyro=np.tile([0.1, -0.2, 0.3], (n, 1)), cmd=cmd, meta={"source": "synthetic"})


def test_panels_plot_each_roles_channels_for_the_vehicle_layout() -> None:
    f = _flight()
    v = Vehicle.preset("crazyflie")
    thrust = panels.traces([f], v, "thrust")
    assert [tr.name for tr in thrust] == ["collective command", "vertical specific force"]
    np.testing.assert_allclose(thrust[0].y, 0.5 + 0.1 / 2 + 0.02 / 2)
    np.testing.assert_allclose(thrust[1].y, f.acc[:, 2])
    rp = {tr.name: tr for tr in panels.traces([f], v, "roll_pitch")}
    assert set(rp) == {"roll rate", "pitch rate", "roll command", "pitch command"}
    np.testing.assert_allclose(rp["roll command"].y, 0.1 / 2)  # (left - right) / 2 on a symmetric quad
    np.testing.assert_allclose(rp["pitch command"].y, 0.0, atol=1e-15)  # the diagonal pairs do not pitch
    assert rp["pitch rate"].y[0] == -0.2 and not rp["pitch rate"].secondary and rp["pitch command"].secondary
    yaw = {tr.name: tr for tr in panels.traces([f], v, "yaw")}
    np.testing.assert_allclose(yaw["yaw command"].y, 0.02 / 2)  # (clockwise - counter-clockwise) / 2
    hexa = build_vehicle("hex-x", 0.25, 2.0)
    assert [tr.name for tr in panels.traces([f], hexa, "yaw")] == ["yaw rate"]  # rotor count differs


def test_long_series_are_min_max_downsampled_and_zoom_resamples() -> None:
    n = 200_000
    rng = np.random.default_rng(0)
    f = _flight(n)
    acc = f.acc.copy()
    acc[:, 2] += rng.normal(0, 0.1, n)
    acc[123_457, 2] = 40.0  # one spike must survive downsampling
    f = f.replace(acc=acc)
    fig = panels.figure([f], Vehicle.preset("crazyflie"), "thrust", "k")
    sent = fig.data  # what goes to the browser
    assert all(len(tr.x) <= panels.N_SHOWN for tr in sent)
    assert np.max(sent[1].y) == 40.0 and np.min(sent[1].y) == acc[:, 2].min()
    t0 = time.perf_counter()
    patch = fig.construct_update_data_patch({"xaxis.range[0]": 100.0, "xaxis.range[1]": 110.0})
    took = time.perf_counter() - t0
    ops = patch.to_plotly_json()["operations"]
    xs = [np.asarray(op["params"]["value"]) for op in ops if op["location"][-1] == "x"]
    assert xs and all(x.min() >= 100.0 - 0.01 and x.max() <= 110.0 + 0.01 for x in xs)
    assert all(len(x) <= panels.N_SHOWN for x in xs) and took < 1.0


def test_failed_run_is_one_line_and_marks_the_job_done(sessions: Sessions, cf_logs: dict[str, Path]) -> None:
    """log16 17-18 s is on the ground with the motors off: the run ends with the library's message."""
    s = sessions.get(sessions.new())
    s.vehicle = "crazyflie"
    s.logs["k"] = LogEntry("k", cf_logs["log16"], "log16", [])
    s.windows["thrust"]["k"] = [(17.0, 18.0)]
    job = run.start(s)
    deadline = time.monotonic() + 30
    while not job.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.done and job.result is None and job.fraction == 1.0
    assert "window 17:18 s is on the ground (flying spans: 31.4-39.4, 44.0-49.7)" in job.error and "\n" not in job.error
    assert job.steps == ["read 1 log window and identify (delay)"] and not (job.out / "params.json").exists()


def _job(params: dict[str, Estimate], observability: dict | None = None) -> run.Job:
    job = run.Job(1, Path("/nowhere/run1"), "rotorid identify", total=3, done=True)
    job.result = Result("delay", params, observability=observability or {})
    return job


def test_results_carry_the_clis_verdict_words_and_never_a_bare_nan(sessions: Sessions) -> None:
    """The results table's verdict column says what `Result.summary` says (well, poor, no σ,
    not identified), a missing σ shows as "—", and a run with a poor or unidentified
    parameter does not end in a green "done"."""
    from dash import html

    s = sessions.get(sessions.new())
    params = {
        "tm": Estimate(0.0700, 0.0020, "s"),
        "thrust_c2": Estimate(0.5, 0.4, "N"),
        "I_xx": Estimate(1.5e-5, float("nan"), "kg m^2"),
        "I_zz": Estimate(0.25, 0.01, "kg m^2"),
    }
    job = _job(params, {"I_zz": {"at_bound": "the upper bound 0.25"}})
    summary, _ = callbacks._results(s, job)
    table = next(c for c in summary if isinstance(c, html.Table))
    rows = {r.id: [td.children for td in r.children] for r in table.children[1].children}
    assert [rows[f"param-{k}"][5] for k in params] == ["well", "poor", "no σ", "not identified"]
    assert rows["param-I_xx"][2:4] == ["—", "—"] and "nan" not in repr(summary)
    line, cls = callbacks.run_status(job)
    assert cls == "status error" and "not all usable" in line
    assert "poor: thrust_c2" in line and "no σ: I_xx" in line and "not identified: I_zz" in line
    assert callbacks.run_status(_job({"tm": Estimate(0.07, 0.002, "s")})) == (
        "run 1 done: every parameter usable",
        "status ok",
    )
    assert callbacks.run_status(_job({"tm": Estimate(0.07, 0.02, "s")}))[1] == "status warn"  # loose


def test_form_shows_the_chosen_presets_values() -> None:
    cf = callbacks.preset_fields("crazyflie")
    assert cf == {
        "layout": "quad-x",
        "arm": pytest.approx(0.028 * 2**0.5),
        "mass": 0.027,
        "input": "normalized",
        "range": "0,1",
        "order": "sequential",  # motor 1 front-right, clockwise from above: rebuilt exactly
    }
    rebuilt = build_vehicle(cf["layout"], cf["arm"], cf["mass"], order=cf["order"])
    np.testing.assert_allclose(rebuilt.positions, Vehicle.preset("crazyflie").positions, atol=1e-7)  # arm to 1 µm
    x500 = callbacks.preset_fields("x500-gazebo")
    assert x500["order"] == "px4" and x500["input"] == "rad_s" and x500["range"] == "0,1000"
    assert x500["arm"] == pytest.approx(0.174 * 2**0.5) and x500["mass"] == 2.0
    assert callbacks.preset_fields("quad-plus")["layout"] == "quad-plus"


def test_every_window_of_every_opened_log_is_listed_and_a_users_windows_stay(sessions: Sessions) -> None:
    """Two opened logs: the table the page shows lists each log's windows per role (the plotted
    one marked) — exactly what the command line and the run take; proposals reach a role
    only while the user has not changed its windows."""
    from dash import html

    s = sessions.get(sessions.new())
    s.vehicle = s.vehicle_label = "crazyflie"
    for key in ("a", "b"):
        s.logs[key] = LogEntry(key, Path(f"/d/{key}.ulg"), f"/d/{key}.ulg", [], ready=True)
    s.current = "b"
    s.logs["a"].proposed = {"thrust": [(10.0, 20.0)], "roll_pitch": [(30.0, 40.0)], "yaw": []}
    opening.apply_proposed(s, s.logs["a"])
    s.windows["thrust"]["b"] = [(5.0, 8.0)]
    table = opening.windows_table(s)
    rows = [[td.children for td in tr.children] for tr in table[1].children]
    assert rows == [
        ["a.ulg", "thrust", "10.00:20.00"],
        ["b.ulg (plotted)", "thrust", "5.00:8.00"],
        ["a.ulg", "roll/pitch", "30.00:40.00"],
    ]
    assert shlex.split(run.command_line(s))[6:-2] == [
        "/d/a.ulg@10:20",
        "/d/b.ulg@5:8",
        "--roll-pitch",
        "/d/a.ulg@30:40",
    ]
    s.windows["thrust"]["a"] = [(12.0, 18.0)]  # the user's edit
    s.logs["a"].proposed = {"thrust": [(11.0, 19.0)], "roll_pitch": [(31.0, 41.0)], "yaw": []}  # another vehicle's
    opening.apply_proposed(s, s.logs["a"])
    assert s.windows["thrust"]["a"] == [(12.0, 18.0)] and s.windows["roll_pitch"]["a"] == [(31.0, 41.0)]
    s.windows = {r: {} for r in s.windows}
    assert isinstance(opening.windows_table(s)[0], html.Tr)  # "none yet"


def test_a_preset_of_another_flight_stack_is_refused_with_the_reason(sessions: Sessions) -> None:
    """The Crazyflie preset for a Betaflight log (the issue's silent default) is refused before
    a run, naming the log; a converted Crazyflie log, a simulated one and the generic presets pass."""
    from rotorid.vehicle import preset_mismatch

    why = preset_mismatch("crazyflie", "blackbox")
    assert why.startswith("the crazyflie preset is a 27 g vehicle with rotors 40 mm from the centre flown by a stack")
    assert "not this blackbox log; describe your vehicle" in why
    assert preset_mismatch("x500-px4", "crazyflie-v2") and preset_mismatch("iris-px4", "dataflash")
    for preset, fmt in (("crazyflie", "crazyflie-v2"), ("crazyflie", "rotorid-sim"), ("quad-x", "blackbox")):
        assert preset_mismatch(preset, fmt) is None, (preset, fmt)
    assert preset_mismatch("x500-gazebo", "ulog") is None and preset_mismatch("x500-px4", "ulog") is None

    s = sessions.get(sessions.new())
    s.vehicle = s.vehicle_label = "crazyflie"
    bbl = _flight().replace(meta={"source": "btfl_002.bbl", "format": "blackbox"})
    converted = _flight().replace(meta={"source": "x", "format": "parquet", "original_format": "crazyflie-v2"})
    s.logs["a"] = LogEntry("a", Path("/d/log10.parquet"), "/d/log10.parquet", [converted])
    s.logs["b"] = LogEntry("b", Path("/d/btfl_002.bbl"), "/d/btfl_002.bbl", [bbl])
    s.windows["thrust"] = {"a": [(0.5, 3.5)], "b": []}
    run.check_vehicle(s)  # the Betaflight log has no window: the run does not use it
    s.windows["roll_pitch"] = {"b": [(0.5, 3.5)]}
    with pytest.raises(RotoridError, match=r"^btfl_002.bbl: the crazyflie preset is a 27 g vehicle"):
        run.start(s)


def test_time_axis_changes_are_read_from_any_relayout() -> None:
    assert callbacks._x_range({"xaxis.range[0]": 1.0, "xaxis.range[1]": 2.0, "yaxis.range[0]": 0}) == {
        "xaxis.range[0]": 1.0,
        "xaxis.range[1]": 2.0,
    }
    assert callbacks._x_range({"xaxis.range": [3.0, 4.0]}) == {"xaxis.range[0]": 3.0, "xaxis.range[1]": 4.0}
    assert callbacks._x_range({"xaxis.autorange": True}) == {"xaxis.autorange": True, "xaxis.showspikes": False}
    assert callbacks._x_range({"shapes[1].x0": 5.0}) is None and callbacks._x_range({"dragmode": "zoom"}) is None


def _sigint_default() -> None:
    """Ctrl-C as a terminal delivers it: a suite started in the background by a non-interactive
    shell inherits SIGINT ignored (POSIX), and Python then keeps it ignored in the app."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_command_serves_everything_itself_on_localhost(tmp_path: Path) -> None:
    """`rotorid app` in a real process: a bad folder is one line and exit 2; otherwise it prints
    the 127.0.0.1 URL, the page loads every script from the server itself (no CDN), Ctrl-C
    stops it and its temporary files go; `rotorid --help` does not import Dash."""
    cli = [sys.executable, "-c", "from rotorid.cli import app; app()", "app"]
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    res = subprocess.run([*cli, str(tmp_path / "nope"), "--no-browser"], capture_output=True, text=True, env=env)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "nope: not a folder" in res.stderr
    code = "import sys, rotorid.cli; print(sorted({'dash', 'plotly', 'flask'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "[]\n"

    proc = subprocess.Popen(
        [*cli, str(tmp_path), "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_sigint_default,
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=[\w-]+", line)
        assert url, line
        with urllib.request.urlopen(url.group(0), timeout=30) as r:
            page = r.read().decode()
        scripts = re.findall(r'<script src="([^"]+)"', page)
        assert len(scripts) > 3 and all(s.startswith("/_dash-component-suites/") for s in scripts), scripts
        with urllib.request.urlopen(url.group(1) + scripts[0].lstrip("/"), timeout=30) as r:
            assert r.status == 200 and len(r.read()) > 1000
        made = [p.name for p in tmp_path.iterdir()]
        assert len(made) == 1 and made[0].startswith("rotorid-app-"), made  # its temporary folder
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out.strip() == "stopped"
    assert list(tmp_path.iterdir()) == []  # temporary files removed
