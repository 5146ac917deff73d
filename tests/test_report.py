"""report.html content (no browser): numbers, units, verdicts in plain words, provenance, and
that it is self-contained; write_run leaves nothing behind when the output folder is unusable."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from rotorid.errors import RotoridError
from rotorid.report import write_run
from rotorid.report.html import excitation_findings, pretty_unit, render_html, symbol, verdict
from rotorid.result import Estimate, Result, Truth


def _result() -> Result:
    return Result(
        "tls",
        {
            "k_t": Estimate(8.5e-6, 4.2e-8, "N/u^2"),
            "I_xx": Estimate(0.021, 0.0042, "kg m^2"),
            "I_zz": Estimate(0.04, 0.03, "kg m^2"),
            "k_tau": Estimate(0.016, float("nan"), "m"),
            "ms_x@B": Estimate(0.01, 0.001, "kg m"),
        },
        settings={"band": [0.1, 20.0], "r_sigma": 250.0, "source": "imu", "tm": None},
        observability={
            "I_zz": {"identifiable": False, "reason": "yaw not excited", "advice": "fly a yaw manoeuvre"},
            "k_tau": {"identifiable": False, "reason": "yaw not excited", "advice": "fly a yaw manoeuvre"},
            "z": {"identifiable": False, "reason": "vertical axis barely excited", "advice": "climb and descend"},
        },
        inputs=[{"path": "flights/a.ulg", "sha256": "f" * 64, "windows": [[10.0, 40.5], [50.0, 60.0]]}],
        notes=["config B weighted with k_w = 1"],
    )


def test_symbols_units_and_verdicts() -> None:
    assert symbol("k_tau") == "k_tau"
    assert symbol("thrust_c2_m3") == "thrust_c2 (motor 3)"
    assert symbol("ms_x@B") == "ms_x (config B)"
    assert pretty_unit("kg m^2") == "kg·m²" and pretty_unit("N/u^2") == "N/u²" and pretty_unit("1") == "—"
    assert verdict(Estimate(1.0, 0.05), None) == ("ok", "well determined (%σ 5)")
    assert verdict(Estimate(1.0, 0.2), None) == ("warn", "loosely determined (%σ 20)")
    assert verdict(Estimate(1.0, 0.9), None) == ("bad", "poorly determined (%σ 90)")
    cls, text = verdict(Estimate(1.0, 0.01), {"identifiable": False, "reason": "r", "advice": "a"})
    assert (cls, text) == ("bad", "r — a")


def test_findings_group_parameters_by_reason() -> None:
    assert excitation_findings(_result()) == [
        "yaw not excited: I_zz and k_tau unidentifiable — fly a yaw manoeuvre",
        "vertical axis barely excited: z unidentifiable — climb and descend",
    ]


def test_report_has_tables_provenance_and_no_external_resources() -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    from rotorid.report import png_bytes

    png = base64.b64encode(png_bytes(fig)).decode()
    html = render_html(_result(), {"wrench_fit": png}, Truth({"k_t": 8.54858e-6, "I_xx": 0.0216667}))
    # every parameter once in the table, with value, σ, %σ, unit and error vs truth
    assert html.count('<tr><td class="l name">') == 5
    assert "8.5e-06" in html and "4.2e-08" in html and "0.49" in html and "N/u²" in html
    assert "-0.57" in html  # (8.5e-6 - 8.54858e-6) / 8.54858e-6 = -0.568 %
    assert "-3.08" in html  # I_xx: (0.021 - 0.0216667) / 0.0216667
    assert "yaw not excited: I_zz and k_tau unidentifiable — fly a yaw manoeuvre" in html
    assert "f" * 64 in html and "10–40.5 s, 50–60 s" in html
    assert '<code>r_sigma</code></td><td class="l">250.0' in html and "[0.1, 20.0]" in html
    assert "config B weighted with k_w = 1" in html
    assert f'src="data:image/png;base64,{png}"' in html
    # self-contained: no URL other than data: URIs and in-page anchors
    refs = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert refs and all(r.startswith(("data:", "#")) for r in refs)
    assert "http" not in html and "@import" not in html and "url(" not in html


def test_write_run_round_trips_params(tmp_path: Path) -> None:
    r = _result()
    written = write_run(r, tmp_path / "out", {})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["params.json", "report.html"]
    back = Result.load(written["params"])
    assert back.params["k_t"] == r.params["k_t"] and back.settings == r.settings
    assert json.loads(written["params"].read_text())["inputs"][0]["windows"] == [[10.0, 40.5], [50.0, 60.0]]
    assert oct(written["report"].stat().st_mode & 0o777) != oct(0o600)


def test_unwritable_folder_fails_before_writing(unwritable: Path) -> None:
    with pytest.raises(RotoridError, match=r"cannot write here .*choose another output folder"):
        write_run(_result(), unwritable, {})
    assert not unwritable.exists()


def test_output_path_that_is_a_file_fails_cleanly(tmp_path: Path) -> None:
    f = tmp_path / "taken"
    f.write_text("x")
    with pytest.raises(RotoridError, match="not a folder"):
        write_run(_result(), f, {})
    assert f.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_poorly_determined_parameters_are_called_out() -> None:
    r = _result()
    r.params["ms_x@B"] = Estimate(0.01, 0.009, "kg m")  # %σ 90
    html = render_html(r, {})
    assert "ms_x (config B) poorly determined (%σ 90.00)" in html
    assert "I_zz poorly determined" not in html  # already reported as unidentifiable
    assert "3 poorly determined or unidentifiable" in html


def test_next_steps_say_what_to_fly_and_which_exports_come_from_the_flights() -> None:
    from rotorid.report.html import next_steps

    r = Result(
        "delay",
        {
            "tm": Estimate(0.028, 0.005, "s"),  # %σ 18: loose
            "thrust_c2": Estimate(9.6, 0.3, "N"),  # %σ 3: well
            "I_xx": Estimate(1e-3, 8e-4, "kg m^2"),  # %σ 80: poor
            "k_tau": Estimate(0.01, 0.002, "m", assumption="I_zz from the assumed ratio"),
        },
    )
    todo, exports = next_steps(r)
    assert [t.split(":")[0] for t in todo] == ["thrust", "roll/pitch", "yaw"]
    assert todo[1].endswith(f"— for {symbol('I_xx')}")
    assert exports[0] == f"from the flights, well determined: {symbol('thrust_c2')}"
    assert exports[1].endswith(symbol("tm")) and exports[2].endswith(f"{symbol('k_tau')}, {symbol('I_xx')}")
    html = render_html(r, {})
    assert 'id="next-steps"' in html and "docs/fly-betaflight.md" in html
