"""Issue 38: untrusted inputs beyond the readers. Each test rebuilds a finding's reproducer
(tests/support/hostile.py) and asserts the fixed behaviour: one escaped line and exit 2, a
refusal naming what to change, or the right numbers."""

from __future__ import annotations

import base64
import errno
import io
import json
import operator
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from rotorid import batch, excitation, runs
from rotorid.errors import RotoridError, VehicleError, shown
from rotorid.flight import Flight
from rotorid.io import parse_spec, table, ulog
from rotorid.io import read as io_read
from rotorid.io import write as io_write
from rotorid.manifest import ManifestError, read_manifest
from rotorid.methods.online.estimator import rotor_model
from rotorid.report import write_folder
from rotorid.result import Estimate, Result
from rotorid.signal import derivative
from rotorid.util import locked
from rotorid.vehicle import Vehicle, VehicleWarning
from support.hostile import csv_flight, fails, run, vehicle_toml

# -- 1. one escaping printer -----------------------------------------------------------------


def test_shown_escapes_markup_and_controls_and_caps_length() -> None:
    assert shown("a [/x] [[rotor]] [red]o") == "a \\[/x] [\\[rotor]] \\[red]o"
    assert shown("\x1b]0;pwned\x07\x9b2J") == "\\x1b]0;pwned\\x07\\x9b2J"
    assert shown("x" * 10_000, 50) == "x" * 50 + "…(10000 chars)"
    assert shown("ends\\") == "ends\\\\"


def test_markup_in_a_path_prints_as_written(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "a[" / "x]b.csv")
    code, out, err = run(["info", log])
    assert code == 0, err
    assert f"{tmp_path}/a[/x]b.csv" in out
    garbage = tmp_path / "g[" / "red]o.bin"
    garbage.parent.mkdir()
    garbage.write_bytes(b"\x00\x01not a log\xff" * 10)
    assert "g[/red]o.bin" in fails(["info", garbage])


def test_vehicle_init_escapes_name_and_out(tmp_path: Path) -> None:
    out = tmp_path / "v[" / "x].toml"
    out.parent.mkdir()
    name = "[red]o [[rotor]] \x1b]0;title\x07"
    code, text, err = run(
        ["vehicle", "init", "--layout", "quad-x", "--arm", "0.2", "--mass", "1", "--out", out, "--name", name]
    )
    assert code == 0, err
    flat = text.replace("\n", "")  # Rich wraps a long path at the terminal's width
    assert "[red]o [[rotor]] \\x1b]0;title\\x07" in flat and "v[/x].toml" in flat and "\x1b" not in text


# -- 2. crashes: short pieces and windows -----------------------------------------------------


@pytest.mark.parametrize("n", [1, 2])
def test_pieces_of_one_or_two_samples_are_judged(n: int) -> None:
    t = np.arange(n) / 500.0
    f = Flight(t, gyro=np.ones((n, 3)), acc=np.ones((n, 3)), cmd=np.full((n, 4), 0.5), meta={"source": "x"})
    assert excitation.judge([f], runs.min_rates()).segments[0].flying_time == 0.0
    assert all(ws == [] for ws in excitation.log_windows([f]).values())


def test_derivative_of_two_and_one_rows() -> None:
    assert derivative(np.array([[1.0], [3.0]]), np.array([0.0, 0.5])).tolist() == [[4.0], [4.0]]
    assert derivative(np.array([[1.0]]), np.array([0.0])).tolist() == [[0.0]]


def test_two_sample_window_and_gap_piece(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "thrust.csv")
    code, out, err = run(["info", f"{log}@1:1.003"])
    assert code == 0 and "no identify command" in out, err
    holed = csv_flight(tmp_path / "holed.csv", rows=np.r_[0:1000, 1500:1502, 1800:2000])  # a gap leaves 2 rows
    code, out, err = run(["info", holed])
    assert code == 0 and "3 segments" in out, err


@pytest.mark.parametrize("size", [42_000, 60_000])
def test_ardupilot_log_cut_by_power_loss(data_dir: Path, tmp_path: Path, size: int) -> None:
    cut = tmp_path / "cut.bin"
    cut.write_bytes((data_dir / "ardupilot" / "backend_log_80k.bin").read_bytes()[:size])
    code, out, err = run(["info", cut, "--allow-corrupt"])
    assert code == 0 and "no identify command" in out, err


# -- 2./3. vehicle files: crashes, silent nonsense, schema ----------------------------------------

ROTORS_AT = "\n[[rotor]]\nposition = [{p}, {p}, 0.0]\ntorque_dir = 1\n[[rotor]]\nposition = [-0.1, 0.1, 0.0]\ntorque_dir = -1\n[[rotor]]\nposition = [-0.1, -0.1, 0.0]\ntorque_dir = 1\n"


@pytest.mark.parametrize(
    ("head", "rotors", "needle"),
    [
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="inf"), "rotor 0 position must be finite"),
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="1e300"), "rotor 0 position must be finite and within ±50"),
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="nan"), "rotor 0 position must be finite"),
        ('name = "q"\nmass = 1.0', ROTORS_AT.format(p="0.0").replace("0.1", "0.0"), "within 1 mm of the body z axis"),
        ('name = "q"\nmass = 1.0\ncmd_max = "x"', None, "cmd_max must be a number, got"),
        ('name = "q"\nmass = 1.0\ncom = [nan, 0.0, 0.0]', None, "com must be finite"),
        ("name = 5\nmass = 1.0", None, "name must be a string"),
        ('name = "q"\nmass = true', None, "mass must be a number, got 'True'"),
        ('name = "q"\nmass = 1e200', None, "mass must be a positive number of kg, got 1e+200"),
        (
            'name = "q"\nmass = 1.0',
            ROTORS_AT.format(p="0.1").replace("torque_dir = 1\n", "torque_dir = 1.5\n", 1),
            "rotor 0 torque_dir must be +1 or -1",
        ),
        (
            'name = "q"\nmass = 1.0',
            ROTORS_AT.format(p="0.1").replace("torque_dir = 1\n", "torque_dir = true\n", 1),
            "rotor 0 torque_dir must be a number",
        ),
        ('name = "q"\nmass = 1.0\nthrust_exponents = [true]', None, "thrust_exponents must be a list of integers"),
        ('name = "q"\nmass = 1.0\nrotor = 5', "", "rotor must be [[rotor]] tables"),
        (f'name = "{"n" * 100_000}"\nmass = 1.0', None, "name must be a string of 1 to 100 characters"),
    ],
)
def test_vehicle_schema_refuses_with_one_line(tmp_path: Path, head: str, rotors: str | None, needle: str) -> None:
    toml = vehicle_toml(tmp_path / "v.toml", head, rotors)
    with pytest.raises(VehicleError) as e:
        Vehicle.from_toml(toml)
    assert needle in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 400


def test_vehicle_file_that_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_bytes(b'name = "q\xff"\n')
    (tmp_path / "deep.toml").write_text("a=" + "[" * 100_000)
    (tmp_path / "dir.toml").mkdir()
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for name, needle in [
        ("bad", "not UTF-8"),
        ("deep", "nested too deeply"),
        ("dir", "is a folder"),
        ("fifo", "not a regular file"),
    ]:
        with pytest.raises(VehicleError, match=needle):
            Vehicle.from_toml(tmp_path / f"{name}.toml")


def test_implausible_mass_for_the_frame_warns(tmp_path: Path) -> None:
    cf = Vehicle.preset("crazyflie")
    with pytest.warns(VehicleWarning, match="1.5 kg on rotors 40 mm"):
        cf.replace(mass=1.5)
    with pytest.warns(VehicleWarning, match="1000 kg on rotors 40 mm"):
        cf.replace(mass=1000.0)
    log = csv_flight(tmp_path / "f.csv")
    toml = tmp_path / "cf.toml"
    toml.write_text(cf.to_toml().replace("mass = 0.027", "mass = 1.5"))
    code, _, err = run(["info", log, "--vehicle", toml])
    assert code == 0 and err.count("warning:") == 1 and "implausible" in err


def test_identify_refuses_an_absurd_mass_before_estimating(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "f.csv")
    fails(
        ["identify", log, "--method", "delay", "--vehicle", "crazyflie", "--mass", "1e200", "--out", tmp_path / "o"],
        "mass must be a positive number of kg, got 1e+200",
    )


# -- 2. crashes: options, special files, outputs ---------------------------------------------------


def test_delay_on_an_all_zero_accelerometer_and_absurd_bias(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "f.csv")
    data = np.loadtxt(log, delimiter=",", skiprows=1)
    data[:, 1:4] = 0.0
    zero = tmp_path / "acc0.csv"
    np.savetxt(zero, data, delimiter=",", header=log.read_text().splitlines()[0], comments="")
    base = ["identify", "--method", "delay", "--vehicle", "crazyflie", "--out", tmp_path / "o"]
    fails([*base, zero], "zero residual", "accelerometer")
    fails([*base, log, "--acc-bias-z", "nan"], "--acc-bias-z 'nan' must be finite")
    fails([*base, log, "--acc-bias-z", "1e308"], "within ±5")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/proc/self/mem", "folder"])
def test_special_files_are_refused_unread(tmp_path: Path, special: str) -> None:
    path = Path(special) if special.startswith("/") else tmp_path / special
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    fails(["info", path], str(path), "give a log file saved on disk" if special != "folder" else "is a folder")


def _fsize_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_file_size_limit_is_one_line_and_keeps_the_old_file(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "f.csv")
    target = tmp_path / "out.csv"
    target.write_text("old")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    res = subprocess.run(
        [sys.executable, "-m", "rotorid", "convert", str(log), "--to", str(target)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_fsize_limit,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "File too large" in res.stderr, res.stderr
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.csv", "out.csv"]


def test_full_disk_while_writing_a_run_keeps_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    write_folder(out, {"params.json": b"old"})

    def full(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(RotoridError, match=r"could not write the run \(No space left on device\); the previous"):
        write_folder(out, {"params.json": b"new"})
    monkeypatch.undo()
    assert (out / "params.json").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_out_dot_is_refused_before_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = csv_flight(tmp_path / "f.csv")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for out in (".", "..", str(tmp_path)):
        fails(["identify", log, "--method", "delay", "--vehicle", "crazyflie", "--out", out], "is the current folder")
    assert list(here.iterdir()) == []


def test_two_writers_of_one_out_take_turns(tmp_path: Path) -> None:
    out = tmp_path / "run"
    seen: list[bool] = []
    held = threading.Event()

    def slow_writer() -> None:
        with locked(out):
            tmp = tmp_path / ".run.new-slowwriter00"
            tmp.mkdir()
            held.set()
            time.sleep(0.5)  # the other writer waits: it must not remove this as stale
            seen.append(tmp.is_dir())
            (tmp / "params.json").write_bytes(b"first")
            tmp.rename(out)

    t = threading.Thread(target=slow_writer)
    t.start()
    held.wait()
    write_folder(out, {"params.json": b"second"})
    t.join()
    assert seen == [True] and (out / "params.json").read_bytes() == b"second"


def test_params_json_schema(tmp_path: Path) -> None:
    p = tmp_path / "params.json"
    cases = {
        '{"method": "tls", "params": ' + "[" * 10_000 + "]" * 10_000 + "}": "nested too deeply",
        '{"method": "tls", "params": {"a": ' * 40 + "1" + "}" * 80: "nested deeper than 32",
        '{"method": "tls", "params": {"k_t": {"value": "x", "std": 1}}}': "parameter 'k_t' needs a numeric 'value'",
        '{"method": 5, "params": {}}': "'method' must be text",
        '{"method": "tls", "params": {}, "notes": [1]}': "'notes' must be texts",
    }
    for text, needle in cases.items():
        p.write_text(text)
        fails(["export", p, "--format", "toml", "--out", tmp_path / "v.toml"], needle)
    assert not (tmp_path / "v.toml").exists()


def test_diagnostics_declaring_a_huge_array_is_refused_unallocated(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    Result("tls", {"k_t": Estimate(3.6e-6, 1e-9, "N/u^2")}).save(run_dir / "params.json")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (800_000_000,)})
    with zipfile.ZipFile(run_dir / "diagnostics.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("fit/residual.npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + b"\0" * 64)
    fails(["report", run_dir], "declares 6400000000 bytes")


def test_vehicle_init_and_simulate_bounds(tmp_path: Path) -> None:
    base = ["vehicle", "init", "--layout", "quad-x", "--mass", "1"]
    fails([*base, "--arm", "1e300", "--out", tmp_path / "v.toml"], "arm length must be positive metres (0.001..50)")
    fails([*base, "--arm", "0.2", "--out", tmp_path, "--force"], "is a folder")
    fails(["simulate", "eschmann-crazyflie", "--out", tmp_path / "sim", "--duration", "1e7"], "would not fit in memory")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_app_options_are_checked_before_serving() -> None:
    fails(["app", "--no-browser", "--max-upload-mb", "nan"], "--max-upload-mb nan")
    fails(["app", "--no-browser", "--max-upload-mb", "inf"], "--max-upload-mb inf")
    fails(["app", "--no-browser", "--port", "-1"], "--port -1 must lie in 0..65535")


def _parquet_with_meta(path: Path, meta: bytes, rate: float = 50.0) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 400
    t = np.arange(n) / rate
    cols = {"t": t, **{f"gyro_{a}": np.sin(t + i) for i, a in enumerate("xyz")}}
    pq.write_table(pa.table(cols).replace_schema_metadata({b"rotorid.meta": meta}), path)
    return path


def test_parquet_meta_deep_or_lying(tmp_path: Path) -> None:
    deep = _parquet_with_meta(tmp_path / "deep.parquet", b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
    assert table.read(deep)[0].meta["format"] == "parquet"
    lying = _parquet_with_meta(tmp_path / "lie.parquet", json.dumps({"rates": {"gyro": 1000.0}}).encode())
    with pytest.warns(UserWarning, match=r"claims rates \('gyro' 1000 Hz\) above the rows' own 50.0 Hz"):
        f = table.read(lying)[0]
    assert f.meta["rates"]["gyro"] == pytest.approx(50.0)


def test_batch_manifest_types_and_dotdot_vehicle(tmp_path: Path) -> None:
    m = tmp_path / "m.toml"
    head = '[[run]]\nvehicle = "v"\ndate = "2026-01-01"\nmethod = "delay"\nairframe = "crazyflie"\n'
    m.write_text(head + "logs = 5\n")
    with pytest.raises(ManifestError, match="run 1: 'logs' must be texts, got '5'"):
        read_manifest(m)
    m.write_text(head + 'logs = "a.csv"\noptions = "x"\n')
    with pytest.raises(ManifestError, match="'options' must be table"):
        read_manifest(m)
    m.write_text(head.replace('"v"', '".."') + 'logs = "a.csv"\n')
    job = read_manifest(m)[0]
    assert batch._run_file(job).startswith("runs/_../")


# -- 6. the app: Host/Origin checks and a per-launch token (plain HTTP) -------------------------


def _get(srv: object, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    import http.client

    port = int(srv.base.rsplit(":", 1)[1].strip("/"))  # type: ignore[attr-defined]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    out = (r.status, r.getheader("Set-Cookie") or "")
    r.read()
    c.close()
    return out


def test_app_refuses_foreign_host_origin_and_missing_token(tmp_path: Path) -> None:
    from rotorid.app import Server

    with Server(tmp_path, 0) as srv:
        token = f"/?token={srv.token}"
        assert srv.url == srv.base + token[1:] and len(srv.token) >= 32
        assert _get(srv, "/")[0] == 403  # no token
        assert _get(srv, "/?token=guess")[0] == 403
        assert _get(srv, token, {"Host": f"evil.example:{srv.base.rsplit(':', 1)[1].strip('/')}"})[0] == 403
        assert _get(srv, token, {"Origin": "http://evil.example"})[0] == 403
        status, cookie = _get(srv, token)
        assert status == 200 and "rotorid_token=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert _get(srv, "/", {"Cookie": f"rotorid_token={srv.token}"})[0] == 200
        assert _get(srv, "/files/x/vehicle.toml")[0] == 403  # downloads need the token too
        root = srv.sessions.root
    assert not root.exists()


def test_app_start_up_error_and_sigterm_remove_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rotorid.app import Server
    from rotorid.app.state import AppError

    cli = [sys.executable, "-c", "from rotorid.cli import app; app()", "app", str(tmp_path), "--no-browser"]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*cli, "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "?token=" in line and len(list(tmp.iterdir())) == 1, line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        assert list(tmp.iterdir()) == []
    finally:
        proc.kill()
    # a port in use: an AppError (one line from the CLI), nothing left behind
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(AppError, match="choose another --port"):
            Server(tmp_path, taken.getsockname()[1])
    assert list(tmp.iterdir()) == []


# -- 3./4. silent nonsense and hangs ---------------------------------------------------------------


def test_online_refuses_negative_k_tau_or_thrust(tmp_path: Path) -> None:
    x500 = Vehicle.preset("x500-gazebo")
    for bad, needle in (
        (x500.replace(k_tau=-0.016), "k_tau >= 0"),
        (x500.replace(thrust_coeffs=-x500.thrust_coeffs), "positive thrust"),
    ):
        with pytest.raises(VehicleError, match=needle):
            rotor_model(bad)
    bad_file = tmp_path / "neg.toml"
    bad_file.write_text(x500.replace(k_tau=-0.016).to_toml())
    log = csv_flight(tmp_path / "f.csv")
    fails(["identify", log, "--method", "online", "--vehicle", bad_file, "--out", tmp_path / "o"], "k_tau >= 0")


def test_an_all_true_command_column_is_not_read_as_one(tmp_path: Path) -> None:
    import pandas as pd

    log = csv_flight(tmp_path / "f.csv")
    df = pd.read_csv(log)
    df["cmd_0"] = True
    df.to_parquet(tmp_path / "b.parquet")
    fails(["info", tmp_path / "b.parquet"], "column 'cmd_0' holds true/false values")


def test_the_same_window_twice_is_refused(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "f.csv")
    fails(["info", f"{log}@1:3,1:3"], "windows 1:3 and 1:3 overlap", "e.g. 1:3")
    fails(["info", f"{log}@2:3.5,1:2.5"], "windows 1:2.5 and 2:3.5 overlap", "e.g. 1:3.5")
    assert parse_spec(f"{log}@2:3.5,1:2.5", join=True).windows == ((1.0, 3.5),)
    code, _, err = run(["info", f"{log}@1:2,2.5:3"])
    assert code == 0, err


def test_blackbox_header_with_200000_field_names_is_refused_at_once(data_dir: Path, tmp_path: Path) -> None:
    data = (data_dir / "betaflight" / "btfl_002.bbl").read_bytes()
    start = data.index(b"H Field I name:")
    end = data.index(b"\n", start)
    names = b",".join(b"f%d" % i for i in range(200_000))
    bad = tmp_path / "wide.bbl"
    bad.write_bytes(data[:start] + b"H Field I name:" + names + data[end:])
    t0 = time.perf_counter()
    fails(["info", bad], "lists 200000 fields (a log has at most 1024)")
    assert time.perf_counter() - t0 < 10


def test_batch_local_cluster_speaks_tls_and_binds_no_dashboard() -> None:
    with batch._client(None, 1, True) as client:
        assert client.scheduler.address.startswith("tls://127.0.0.1:")
        assert client.submit(operator.add, 1, 2).result() == 3
        scheduler = client.cluster.scheduler
        bound = [sock.getsockname() for sock in scheduler.http_server._sockets.values()]
        assert all(host == "127.0.0.1" and port != 8787 for host, port in bound), bound  # no dashboard port
        assert scheduler.http_application.wildcard_router.rules == []  # its HTTP server answers nothing


# -- 5. batch outputs: journal, resume, ownership --------------------------------------------------


def _manifest(tmp_path: Path, vehicles: tuple[str, ...] = ("v1", "v2")) -> Path:
    m = tmp_path / "m.csv"
    rows = "".join(f"{v},2026-01-0{i + 1},delay,crazyflie,missing{i}.csv\n" for i, v in enumerate(vehicles))
    m.write_text("vehicle,date,method,airframe,logs\n" + rows)
    return m


def test_batch_journals_each_row_and_resumes(tmp_path: Path) -> None:
    from rich.console import Console

    quiet = Console(file=io.StringIO())
    m, out = _manifest(tmp_path), tmp_path / "fleet"
    outcomes, _ = batch.run_manifest(m, out, workers=1, processes=False, console=quiet)
    assert [o.ok for o in outcomes] == [False, False]
    lines = (out / "rows.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["error"] for x in lines)
    # row 1 finished in an interrupted run: resume keeps it, runs row 2 (failed rows run again)
    job = read_manifest(m)[0]
    done = batch.Outcome(job, Result("delay", {"tm": Estimate(0.07, 0.001, "s")}), seconds=1.0)
    (out / "rows.jsonl").write_text("")
    batch._record(out, done)
    with open(out / "rows.jsonl", "a") as f:
        f.write('{"job": {"row": 2, "cut by an interrupt')
    outcomes, _ = batch.run_manifest(m, out, workers=1, processes=False, console=quiet, resume=True)
    assert outcomes[0].ok and outcomes[0].result.params["tm"].value == 0.07 and not outcomes[1].ok
    assert (out / "runs" / "v1" / "2026-01-01-delay-row1.params.json").is_file()
    # without --resume the earlier batch's runs/ goes
    batch.run_manifest(m, out, workers=1, processes=False, console=quiet)
    assert not (out / "runs").exists()


def test_batch_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "runs.csv").write_text("my own table")
    fails(["batch", _manifest(tmp_path), "--out", out], "holds files rotorid batch did not write")
    assert (out / "runs.csv").read_text() == "my own table"


def test_a_clock_restart_inside_a_log_is_refused(tmp_path: Path) -> None:
    f = table.read(csv_flight(tmp_path / "f.csv"))[0]
    one = io_write(f, tmp_path / "one.bin").read_bytes()
    twice = tmp_path / "reboot.bin"
    twice.write_bytes(one + one)  # a DataFlash log whose clock restarts (a reboot mid-file)
    fails(["info", twice], "the time stamps restart at sample 2000 (3.998 s, then 0.000 s)", "split it there")
    with pytest.raises(RotoridError, match="restart at sample 3"):  # ULog shares the check
        ulog._clean(np.array([5.0, 6.0, 7.0, 0.5]), np.zeros((4, 1)), [], "sensor_combined -> gyro", "x.ulg")
    notes: list[str] = []
    s = ulog._clean(np.array([1.0, 1.002, 1.001, 1.003]), np.arange(4.0)[:, None], notes, "gyro")
    assert s.t.tolist() == [1.0, 1.001, 1.002, 1.003] and notes  # a logger's reordering is still sorted


def test_app_session_caps_uploads_and_open_logs(tmp_path: Path) -> None:
    from rotorid.app import callbacks, opening
    from rotorid.app.state import AppError, Sessions

    sessions = Sessions(tmp_path)
    s = sessions.get(sessions.new())
    payload = "data:application/octet-stream;base64," + base64.b64encode(b"\x01" * 2048).decode()
    for i in range(callbacks.SESSION_UPLOADS):
        callbacks.save_upload(s, payload, f"log{i}.ulg", max_bytes=2048)
    callbacks.save_upload(s, payload, "log0.ulg", max_bytes=2048)  # the same name again replaces it
    with pytest.raises(AppError, match="already holds 0 MB of uploads; reload the page"):
        callbacks.save_upload(s, payload, "one-more.ulg", max_bytes=2048)
    s.logs.update({f"folder:{i}": None for i in range(opening.SESSION_LOGS)})  # type: ignore[misc]
    with pytest.raises(AppError, match="holds 8 logs already"):
        opening.open_entry(s, "folder:new", tmp_path / "new.ulg", "new.ulg")
    sessions.cleanup()


@pytest.mark.parametrize(
    ("line", "corrupt", "needle"),
    [
        (b"H motorOutput:158,2047", b"H motorOutput:158,170", "motor output range 158..170 is implausible"),
        (b"H gyro_scale:0x3f800000", b"H gyro_scale:0x3a03126f", "gyro_scale 0.0005 deg/s per count is implausible"),
    ],
)
def test_corrupt_blackbox_header_values_warn(
    data_dir: Path, tmp_path: Path, line: bytes, corrupt: bytes, needle: str
) -> None:
    data = (data_dir / "betaflight" / "btfl_002.bbl").read_bytes()[:150_000]  # a few seconds are enough
    bad = tmp_path / "bad.bbl"
    bad.write_bytes(data.replace(line, corrupt, 1))
    with pytest.warns(UserWarning, match=re.escape(needle)):
        flights = io_read(bad)
    assert flights


def test_the_same_log_given_twice_is_refused(tmp_path: Path) -> None:
    log = csv_flight(tmp_path / "f.csv", n=3000)
    copy = tmp_path / "copy.csv"
    copy.write_bytes(log.read_bytes())
    link = tmp_path / "link.csv"
    link.symlink_to(log)
    quad = vehicle_toml(tmp_path / "q.toml")
    # the same file under two arguments, a copy, a link, overlapping windows across arguments
    for a, b, same in (
        (log, log, "is the same log as"),
        (log, tmp_path / "." / "f.csv", "is the same log as"),
        (log, copy, "has the same content as"),
        (log, link, "is the same log as"),
        (f"{log}@0:2.5", f"{copy}@1.5:4", "has the same content as"),
    ):
        fails(["identify", "--method", "freq", "--vehicle", quad, a, b], "give the same samples", same, "σ")
    req = runs.Request([], Vehicle.load(str(quad)))
    assert len(req.flights([f"{log}@0:2.5", f"{copy}@3:5.5"])) == 2  # disjoint stretches of one log are fine
    # tls: one log as two configurations; delay: one role twice (another role may reuse it)
    fails(["identify", "--method", "tls", "--vehicle", quad, log, "--config", f"B={copy}"], "give the same samples")
    req = runs.Request([], Vehicle.load(str(quad)))
    req.role_windows(f"{log}@0.5:2.5", "roll_pitch")
    req.role_windows(f"{log}@0.5:2.5", "yaw")
    with pytest.raises(RotoridError, match="give the same samples"):
        req.role_windows(f"{copy}@2:4.5", "yaw")


PEAK = """
import resource, sys
import pyarrow.parquet, pandas, rotorid.io.table
from rotorid.errors import RotoridError
from rotorid.io import read
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    read(sys.argv[1])
    said = "read"
except RotoridError as e:
    said = str(e)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
print(said)
"""


def test_parquet_of_8m_rows_in_a_small_file_is_refused_before_allocating(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "rows.parquet"
    chunk = pa.table({"t": pa.array(np.zeros(1_000_000))})
    with pq.ParquetWriter(path, chunk.schema, compression="zstd") as w:
        for _ in range(8):  # 8 M rows of one constant column: a few KB to 1.5 MB however written
            w.write_table(chunk)
    assert path.stat().st_size < 1_500_000
    out = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, check=True)
    grown_kb, said = out.stdout.splitlines()
    assert "its 8000000 rows asks for more memory than" in said
    assert int(grown_kb) < 32 * 1024  # before: 260 MB above the imports (1.75 GB with more columns)


class _Job:
    done = False


def test_page_loads_never_expire_a_running_tab(tmp_path: Path) -> None:
    from rotorid.app.state import AppError, Sessions

    sessions = Sessions(tmp_path)  # the defaults: 16 in all, 8 per browser
    tab = sessions.get(sessions.new())
    tab.job = _Job()
    for _ in range(16):
        sessions.new()
    assert sessions.get(tab.sid) is tab  # before: 16 page loads expired the running tab
    tab = sessions.get(sessions.new("mine"))
    tab.job = _Job()  # an identification in progress
    folder = tab.folder_for("run1")
    others = [sessions.new("other") for _ in range(16)] + [sessions.new(f"c{i}") for i in range(16)]
    assert sessions.get(tab.sid) is tab and folder.exists()
    assert sum(s.client == "other" for s in sessions._items.values()) <= 8  # a reload loop drops its own
    with pytest.raises(AppError, match="expired"):
        sessions.get(others[0])
    busy = Sessions(tmp_path, limit=3, per_client=2)
    for client in ("a", "a", "b"):
        busy.get(busy.new(client)).job = _Job()
    with pytest.raises(AppError, match="this browser's 2 pages are each running an identification; wait"):
        busy.new("a")
    with pytest.raises(AppError, match="3 pages are each running an identification; wait"):
        busy.new("c")
    first = next(iter(busy._items.values()))
    first.job.done = True  # its run ended: its page may go now
    busy.new("c")
    assert first.sid not in busy._items and len(busy._items) == 3
    sessions.cleanup()
    busy.cleanup()


def test_app_tells_browsers_apart_by_a_cookie(tmp_path: Path) -> None:
    from rotorid.app import Server

    with Server(tmp_path, 0) as srv:
        token = f"rotorid_token={srv.token}"
        status, cookie = _get(srv, "/_dash-layout", {"Cookie": token})
        assert status == 200 and "rotorid_client=" in cookie and "HttpOnly" in cookie
        client = cookie.split("rotorid_client=")[1].split(";")[0]
        for _ in range(3):  # the same browser again: no new cookie, its pages under its id
            assert _get(srv, "/_dash-layout", {"Cookie": f"{token}; rotorid_client={client}"}) == (200, "")
        clients = [s.client for s in srv.sessions._items.values()]
        assert set(clients) <= {"", client} and clients.count(client) >= 4  # "": the server's warm-up page
