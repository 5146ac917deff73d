"""report.html in real headless Chromium (selenium + chromedriver): the tables and every embedded
figure render, and the browser console stays clean. `make test` installs chromium and
chromium-driver; the test skips only where those binaries are absent."""

from __future__ import annotations

import base64
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from rotorid.report import png_bytes, write_index, write_run
from rotorid.report.html import IndexEntry
from rotorid.result import Estimate, Result, Truth

pytestmark = pytest.mark.browser


def _figures() -> dict[str, plt.Figure]:
    t = np.linspace(0, 1, 50)
    out = {}
    for name in ("tm_residual", "thrust_curve"):
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot(t, np.sin(6 * t) if name == "tm_residual" else t**2)
        ax.set_title(name)
        out[name] = fig
    return out


def _result() -> Result:
    return Result(
        "delay",
        {
            "tm": Estimate(0.0712, 0.0011, "s"),
            "thrust_c2": Estimate(0.153, 0.002, "N"),
            "k_tau": Estimate(0.0059, 0.01, "m"),
            "I_zz": Estimate(2.3e-5, 4e-5, "kg m^2"),
        },
        settings={"exponents": [0, 1, 2], "izz_ratio": 1.832},
        observability={
            "k_tau": {"identifiable": False, "reason": "yaw not excited", "advice": "fly a yaw manoeuvre"},
            "I_zz": {"identifiable": False, "reason": "yaw not excited", "advice": "fly a yaw manoeuvre"},
        },
        inputs=[{"path": "log10", "sha256": "0" * 64, "windows": [[35.0, 65.0]]}],
        notes=["hover throttle within 2 % of the measured one"],
    )


def _open(driver, path: Path) -> list[dict]:
    driver.get_log("browser")  # drop anything from an earlier page
    driver.get(path.resolve().as_uri())
    driver.execute_script("return document.readyState")
    return driver.get_log("browser")


def test_run_report_renders_in_chromium(browser, tmp_path: Path) -> None:
    result = _result()
    write_run(result, tmp_path / "run", _figures(), Truth({"tm": 0.07, "thrust_c2": 0.15}))
    logs = _open(browser, tmp_path / "run" / "report.html")

    assert browser.title == "rotorid — delay identification"
    rows = browser.execute_script("return document.querySelectorAll('table.params tbody tr').length")
    assert rows == len(result.params) == 4
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.params tbody tr:first-child td')).map(c => c.innerText)"
    )
    assert cells[0].startswith("tm") and cells[2] == "0.0712" and cells[3] == "0.0011" and cells[4] == "1.54"
    assert cells[7] == "+1.71"  # error % against the truth 0.07
    for table in ("settings", "inputs"):
        assert browser.execute_script(f"return document.querySelectorAll('table.{table} tbody tr').length") >= 1
    sizes = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
    )
    assert len(sizes) == 2
    assert all(ok and w > 100 and h > 100 for ok, w, h in sizes), sizes
    text = browser.execute_script("return document.body.innerText")
    assert "yaw not excited: k_tau and I_zz unidentifiable — fly a yaw manoeuvre" in text
    errors = [e for e in logs if e["level"] in ("SEVERE", "ERROR")]
    assert errors == [], errors


def test_demo_index_renders_in_chromium(browser, tmp_path: Path) -> None:
    result = _result()
    write_run(result, tmp_path / "delay", _figures())

    fig = _figures()["thrust_curve"]
    entry = IndexEntry(
        "delay",
        "eschmann-crazyflie",
        "delay/report.html",
        result,
        Truth({"tm": 0.07}),
        {"thrust_curve": base64.b64encode(png_bytes(fig)).decode()},
        seconds=1.5,
    )
    write_index(tmp_path, [entry], {"online": "rotorid.methods.online is not available"})
    logs = _open(browser, tmp_path / "report.html")
    sizes = browser.execute_script("return Array.from(document.images).map(i => i.naturalWidth)")
    assert len(sizes) == 1 and sizes[0] > 100
    href = browser.execute_script("return document.querySelector('table.overview a[href$=\"report.html\"]').href")
    assert href.endswith("/delay/report.html")
    text = browser.execute_script("return document.body.innerText")
    assert "not run: rotorid.methods.online is not available" in text
    assert [e for e in logs if e["level"] in ("SEVERE", "ERROR")] == []


def test_harness_sees_broken_images_and_console_errors(browser, tmp_path: Path) -> None:
    """The checks above can fail: a missing image and a script error are both visible."""
    page = tmp_path / "broken.html"
    page.write_text('<!doctype html><title>x</title><img src="missing.png"><script>undefined_fn()</script>')
    logs = _open(browser, page)
    assert browser.execute_script("return document.images[0].naturalWidth") == 0
    assert len([e for e in logs if e["level"] == "SEVERE"]) >= 2


def test_real_delay_run_renders_in_chromium(browser, tmp_path: Path) -> None:
    """A real identification (delay method on a short simulated flight) with its own figures."""
    from rotorid.methods import delay
    from rotorid.report import delay as delay_figures
    from rotorid.sim import scenarios

    sc = scenarios.run("eschmann-crazyflie", seed=3, duration=6.0)
    f = sc.flights
    result = delay.identify([f["thrust"]], sc.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]])
    figures = delay_figures.figures(result)
    written = write_run(result, tmp_path / "delay", figures, sc.truth)
    logs = _open(browser, written["report"])
    rows = browser.execute_script("return document.querySelectorAll('table.params tbody tr').length")
    assert rows == len(result.params) >= 8
    sizes = browser.execute_script("return Array.from(document.images).map(i => i.naturalWidth)")
    assert len(sizes) == len(figures) >= 3 and min(sizes) > 200
    err_cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.params tbody tr')).map(r => r.cells[7].innerText)"
    )
    assert sum(c != "" for c in err_cells) >= 8  # error % against the simulator's truth
    assert [e for e in logs if e["level"] in ("SEVERE", "ERROR")] == []
