"""`rotorid identify --method delay` end to end on the real Crazyflie logs."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rotorid.cli import app

PNGS = (
    "tm_search",
    "thrust_fit",
    "delay_model",
    "hover",
    "thrust_curve",
    "roll_pitch",
    "roll_pitch_time",
    "yaw",
    "yaw_time",
)


def _args(*args: str) -> list[str]:
    return ["identify", *args]


def test_identify_delay_writes_params_report_and_figures(cf_logs, tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        _args(
            "--method",
            "delay",
            "--vehicle",
            "crazyflie",
            f"{cf_logs['log10']}@35:65",
            "--roll-pitch",
            f"{cf_logs['log15']}@55:90",
            "--yaw",
            f"{cf_logs['log16']}@32:38,45:49",
            "--out",
            str(out),
        ),
    )
    assert res.exit_code == 0, res.output
    params = json.loads((out / "params.json").read_text())
    assert params["method"] == "delay"
    assert 0.068 <= params["params"]["tm"]["value"] <= 0.077
    assert params["params"]["tm"]["unit"] == "s"
    assert params["settings"]["inertia_param_chosen"] in ("direct", "reciprocal", "tls")
    assert params["settings"]["cutoff_hz"] == 20.0
    # the curve's terms chosen from the flight (held-out prediction), recorded in the settings too
    assert params["vehicle"]["thrust_exponents"] == params["settings"]["exponents"] == [0, 2]
    assert params["settings"]["exponents_from_data"] is True
    assert [i["windows"] for i in params["inputs"]] == [[[35.0, 65.0]], [[55.0, 90.0]], [[32.0, 38.0], [45.0, 49.0]]]
    for name in PNGS:
        data = (out / f"{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "k_tau" in html


def test_identify_delay_constant_commands_exit_2(cf_logs, tmp_path):
    """log16 starts on the ground with the motors off: the window is refused as on the ground
    (naming the flying spans) before the method runs -> one clear line, exit 2."""
    res = CliRunner().invoke(
        app,
        _args("--method", "delay", "--vehicle", "crazyflie", f"{cf_logs['log16']}@17:18", "--out", str(tmp_path)),
    )
    assert res.exit_code == 2
    assert "window 17:18 s is on the ground (flying spans: 31.4-39.4, 44.0-49.7)" in res.output
    assert not (tmp_path / "params.json").exists()


def test_identify_delay_options_reach_the_settings(cf_logs, tmp_path):
    res = CliRunner().invoke(
        app,
        _args(
            "--method",
            "delay",
            "--vehicle",
            "crazyflie",
            f"{cf_logs['log10']}@35:65",
            "--exponents",
            "2",
            "--tm-bounds",
            "0.01,0.2",
            "--out",
            str(tmp_path),
        ),
    )
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "params.json").read_text())
    assert s["settings"]["exponents"] == [2] and s["settings"]["tm_bounds"] == [0.01, 0.2]
    assert set(s["params"]) == {"tm", "thrust_c2", "hover_cmd"}
    bad = CliRunner().invoke(
        app, _args("--method", "delay", "--vehicle", "crazyflie", f"{cf_logs['log10']}@35:65", "--exponents", "a,2")
    )
    assert bad.exit_code == 2 and "must be integers" in bad.output
