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
    assert "31.44–69.10  (37.7 s, from cmd)" in out  # log10 flies from 31.4 to 69.1 s
    assert "31.35–39.36, 44.00–49.72" in out  # log16: two flights
    # log15@55:90: the roll/pitch excitation window
    block = out[out.index("log15@55:90") : out.index(str(cf_logs["log16"]))]
    assert "55.000 – 90.000 s" in block
    assert "excitation roll   │ 42.8 rad/s^2  excited" in block
    assert "excitation yaw    │ 1.44 rad/s^2  weak" in block


def test_info_on_a_ulog_names_topics_and_rates(px4_logs: dict[str, Path]) -> None:
    r = run("info", px4_logs["sample_px4_events"])
    assert r.exit_code == 0, r.output
    assert "10.0 Hz  (actuator_motors)" in r.stdout
    assert "from landed" in r.stdout


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
