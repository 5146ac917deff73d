"""ArduPilot System ID logs: SIDS/SIDD written as ArduCopter logs them, read back into the
flight's `meta["sid"]`, and `rotorid identify --method freq` on them end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid import runs
from rotorid.cli import app
from rotorid.io import dataflash, load, write
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


@pytest.fixture(scope="module")
def sid_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sid")
    out = {}
    for name, flight in (("chirp-thrust", "thrust"), ("chirp-pitch", "pitch")):
        sc = scenarios.run(name, seed=2)
        out[flight] = (write(sc.flights[flight], d / f"{flight}.bin"), sc)
    sc.vehicle.save(d / "vehicle.toml")  # a Crazyflie-sized quad on ArduPilot: its own file, not the preset
    out["vehicle"] = d / "vehicle.toml"
    return out


def test_sids_and_sidd_are_read_back(sid_logs):
    path, sc = sid_logs["pitch"]
    (f,) = load(str(path))
    sid, want = f.meta["sid"], sc.flights["pitch"].meta["sid"]
    assert sid["t_start"] == pytest.approx(want["t_start"], abs=1e-9)  # TimeUS - Time (float32 s)
    assert {k: v for k, v in sid.items() if k != "t_start"} == {k: v for k, v in want.items() if k != "t_start"}
    assert any(n.startswith("SIDS: System ID sweep of pitch (SID_AXIS 8)") for n in f.meta["notes"])
    assert not any("SIDD.Targ differs" in n for n in f.meta["notes"])
    log = dataflash._Log(path)
    with log:
        sidd = log.table("SIDD")
        assert len(sidd) in (24 * 500, 24 * 500 + 1)  # every sample of the 24 s record at 500 Hz
        assert np.max(np.abs(sidd["Targ"])) == pytest.approx(60.0, rel=1e-3)  # SID_MAGNITUDE, deg/s
        assert sidd["F"][-1] == pytest.approx(20.0, rel=1e-4)
        gy = np.degrees(-f.gyro[:, 1])  # FLU -> FRD pitch, deg/s
        i = np.searchsorted(f.t, sidd["TimeUS"][100] * 1e-6)
        assert sidd["Gy"][100] == pytest.approx(gy[i], rel=1e-5)


def test_a_targ_that_is_not_the_sids_chirp_is_said(sid_logs, tmp_path):
    """SIDS says SID_MAGNITUDE 30 where SIDD.Targ swings ±60: the reader says the two differ
    (a firmware whose chirp is not the one rebuilt) and keeps the SIDS settings."""
    path, sc = sid_logs["pitch"]
    data = bytearray(path.read_bytes())
    t_us = round(sc.flights["pitch"].meta["sid"]["t_start"] * 1e6)
    head = bytes([0xA3, 0x95, dataflash._MSGS["SIDS"][0]]) + t_us.to_bytes(8, "little")
    at = data.index(head) + len(head) + 1  # after TimeUS and Ax: Mag (float32)
    data[at : at + 4] = np.float32(30.0).tobytes()
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    (g,) = load(str(bad))
    assert g.meta["sid"]["magnitude"] == 30.0
    assert any("SIDD.Targ differs from the chirp rebuilt from SIDS by 100 %" in n for n in g.meta["notes"])


def test_identify_freq_on_dataflash_chirps(sid_logs, tmp_path):
    out = tmp_path / "run"
    logs = [str(sid_logs[k][0]) for k in ("thrust", "pitch")]
    vehicle = str(sid_logs["vehicle"])
    res = CliRunner().invoke(app, ["identify", "--method", "freq", "--vehicle", vehicle, *logs, "--out", str(out)])
    assert res.exit_code == 0, res.output
    params = json.loads((out / "params.json").read_text())
    truth = sid_logs["pitch"][1].truth.params
    assert params["method"] == "freq"
    for name, tol in (("tm", 0.02), ("I_yy", 0.03)):
        p = params["params"][name]
        assert p["value"] == pytest.approx(truth[name], rel=tol)
        assert p["std"] > 0 and abs(p["value"] - truth[name]) < 3 * p["std"]
    assert params["settings"]["min_coherence"] == 0.6
    for name in ("freq_bode_1_pitch", "freq_time_1_pitch"):  # Bode and the model against the log over time
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4 and 'id="fig-freq_time_0_thrust"' in html and "I_yy" in html


def test_freq_options_reach_the_settings_and_others_are_refused(sid_logs, tmp_path):
    logs = [str(sid_logs[k][0]) for k in ("thrust", "pitch")]
    opts = {"min_coherence": "0.8", "dead_time": "off", "band": "1,15"}
    s = runs.identify("freq", logs, Vehicle.load(sid_logs["vehicle"]), opts).settings
    assert (s["min_coherence"], s["dead_time"], s["band"], s["dead_time_fitted"]) == (0.8, "off", (1.0, 15.0), False)
    args = ["identify", "--method", "freq", "--vehicle", "crazyflie", *logs, "--out", str(tmp_path / "run")]
    bad = CliRunner().invoke(app, [*args, "--variant", "rls"])
    assert bad.exit_code == 2 and "online" in bad.output


def test_info_says_which_axis_was_swept_over_which_band(sid_logs):
    """`rotorid info` on a System ID log: the swept axis and band from SIDS, and how much of the
    band is coherent."""
    res = CliRunner().invoke(app, ["info", str(sid_logs["pitch"][0]), "--vehicle", "crazyflie"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    row = next(ln for ln in res.output.splitlines() if "sweeps" in ln)
    assert "pitch swept 0.5-20 Hz (ArduPilot SIDS)" in row
    share = float(row.split("Hz (ArduPilot SIDS), ")[1].split(" %")[0])
    assert 80 <= share <= 100
    assert "rotorid identify --method freq --vehicle crazyflie" in res.output  # a swept log: freq proposed
    assert "freq: no log sweeps an axis" not in res.output
