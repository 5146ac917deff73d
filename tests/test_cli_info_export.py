"""`rotorid info` and `rotorid convert` through Typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.io import load, read

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    return lines[0]


def test_info_on_the_three_crazyflie_logs(cf_logs: dict[str, Path]) -> None:
    r = run("info", cf_logs["log10"], f"{cf_logs['log15']}@55:90", cf_logs["log16"])
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert out.count("crazyflie-v2") == 3
    assert "50496 samples at 1011.1 Hz" in out
    assert "31.44–69.10  (37.7 s, from cmd+imu)" in out  # log10 flies from 31.4 to 69.1 s
    assert "31.35–39.36, 44.00–49.72" in out  # log16: two flights
    # log15@55:90: the roll/pitch excitation window
    block = out[out.index("log15@55:90") : out.index(str(cf_logs["log16"]))]
    assert "55.000 – 90.000 s" in block
    # one excitation row: span, flying time, roll, pitch, yaw, thrust
    assert "1  55.00–90.00   35.0  42.8 excited  35 excited  1.44 weak  0.0902 excited" in block
    assert "activity  │ flew 35.0 s in 1 span" in block
    # the three logs are the three roles; the command runs as printed (the windows found)
    cmd = next(ln for ln in out.splitlines() if ln.startswith("rotorid identify --method delay"))
    assert cmd == (
        f"rotorid identify --method delay --vehicle vehicle.toml {cf_logs['log10']}@34.15:68.1 "
        f"--roll-pitch {cf_logs['log15']}@55:90 --yaw {cf_logs['log16']}@33.64:38.36,45.8:48.72 --out results/"
    )
    assert "make the vehicle file with `rotorid vehicle init`" in out
    assert "--method tls" not in out  # motor commands, no rotor speeds: tls and online are not offered


def test_info_thresholds_scale_with_the_vehicle_and_can_be_set(cf_logs: dict[str, Path]) -> None:
    log = f"{cf_logs['log10']}@35:65"
    r = run("info", log)
    assert "10.9 weak  12.8 weak  1.45 weak  0.282 excited" in r.stdout
    # a vehicle with 10x the Crazyflie's arm: rotational thresholds 10x lower
    r = run("info", log, "--vehicle", "x500-px4")  # arm 0.246 m: x 0.161
    assert "10.9 excited  12.8 excited  1.45 excited" in r.stdout
    assert "excitation thresholds for x500-px4: roll 3.22/0.805" in " ".join(r.stdout.split())
    r = run("info", log, "--threshold", "roll=5,2", "--threshold", "yaw=1,0.5")
    assert "10.9 excited  12.8 weak  1.45 excited" in r.stdout
    assert "must be 2 comma-separated numbers" in one_error_line(run("info", log, "--threshold", "roll=5"))
    assert "unknown excitation axis 'tilt'" in one_error_line(run("info", log, "--threshold", "tilt=5,1"))
    assert "need excited >= weak" in one_error_line(run("info", log, "--threshold", "roll=1,5"))


def test_info_on_a_ulog_names_topics_and_rates(px4_logs: dict[str, Path]) -> None:
    r = run("info", px4_logs["sample_px4_events"])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.stdout.replace("│", " ").split())
    assert (
        "10.0 Hz (actuator_motors) too slow for delay (≥ 100 Hz), tls (≥ 50 Hz), online (≥ 50 Hz), freq (≥ 100 Hz)"
        in flat
    )
    assert "SDLOG_PROFILE=25" in flat and "from landed" in flat
    assert "no identify command to suggest: every method needs faster logs (see fix)" in flat


def test_info_on_a_bench_log_says_never_armed_in_one_table(px4_logs: dict[str, Path]) -> None:
    """PX4's sample log: six segments (drop-outs) in one table, never armed, no command."""
    r = run("info", px4_logs["sample"])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.stdout.split())
    assert "never armed: the motors stay at 0 for the whole log" in flat
    assert r.stdout.count("excitation per segment") == 1 and r.stdout.count("format ") == 1
    rows = [ln.split()[:2] for ln in r.stdout.splitlines() if ln[:3].strip().isdigit() and "–" in ln]
    assert [int(i) for i, _ in rows] == [1, 2, 3, 4, 5, 6]
    assert "windows found: none" in r.stdout
    assert "no identify command to suggest: no log flew an excited part" in flat
    assert len(r.stdout.splitlines()) < 60  # was six near-identical tables, ~110 lines


def test_info_bad_input_is_one_line(tmp_path: Path, cf_logs: dict[str, Path]) -> None:
    assert "no such file" in one_error_line(run("info", tmp_path / "nope.bin"))
    line = one_error_line(run("info", f"{cf_logs['log16']}@100:120"))
    assert "window 100:120 s lies outside the log" in line


def test_export_csv_and_parquet_equal_the_window(tmp_path: Path, cf_logs: dict[str, Path]) -> None:
    (want,) = load(f"{cf_logs['log10']}@35:36")
    for suffix in (".csv", ".parquet"):
        out = tmp_path / f"w{suffix}"
        r = run("convert", cf_logs["log10"], "--to", out, "--window", "35:36")
        assert r.exit_code == 0, r.output
        assert f"wrote {out}" in r.stdout.replace("\n", "")
        (got,) = read(out)
        np.testing.assert_array_equal(got.t, want.t)
        for ch in ("acc", "gyro", "cmd"):
            np.testing.assert_array_equal(getattr(got, ch), getattr(want, ch))
    r = run("convert", f"{cf_logs['log10']}@35:36", "--to", tmp_path / "spec.csv")
    assert r.exit_code == 0
    assert (tmp_path / "spec.csv").read_text() == (tmp_path / "w.csv").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--to", "{tmp}/o.txt"], "choose a file ending in .csv, .parquet"),
        (["--to", "{tmp}/o.csv", "--window", "100:120"], "lies outside the log"),
        (["--to", "{tmp}/o.csv", "--window", "40:39"], "is empty"),
        (["--to", "{tmp}/o.csv", "--window", "abc"], "not of the form t0:t1"),
        (["--to", "{tmp}/o.csv", "--window", "35:36,40:41"], "gives 2 flights"),
    ],
)
def test_export_failures_leave_no_file(tmp_path: Path, cf_logs: dict[str, Path], args: list[str], message: str) -> None:
    r = run("convert", cf_logs["log16"], *(a.format(tmp=tmp_path) for a in args))
    assert message in one_error_line(r)
    assert list(tmp_path.iterdir()) == []


def test_export_window_given_twice(tmp_path: Path, cf_logs: dict[str, Path]) -> None:
    r = run("convert", f"{cf_logs['log16']}@35:36", "--to", tmp_path / "o.csv", "--window", "35:36")
    assert "either as" in one_error_line(r)
    assert not (tmp_path / "o.csv").exists()


def test_export_corrupt_log_needs_allow_corrupt(tmp_path: Path, cf_logs: dict[str, Path]) -> None:
    bad = tmp_path / "cut.bin"
    bad.write_bytes(cf_logs["log16"].read_bytes()[:200_000])
    out = tmp_path / "o.parquet"
    assert "CRC-32 mismatch" in one_error_line(run("convert", bad, "--to", out))
    assert not out.exists()
    r = run("convert", bad, "--to", out, "--allow-corrupt")
    assert r.exit_code == 0
    assert "warning:" in r.stderr and "CRC-32" in r.stderr
    (f,) = read(out)
    assert len(f.t) == (200_000 - 129) // 50  # header 129 bytes, 50-byte events: the whole ones
