"""`rotorid demo` orchestration: per-method folders and tables that agree with params.json and
the truth, the index linking them, methods not yet installed listed (never faked), a failing
method reported after the others are written."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from rotorid import demo
from rotorid.errors import RotoridError
from rotorid.result import Result, Truth, compare

SHORT = {**demo.DURATIONS, "eschmann-crazyflie": 8.0}


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=160, force_terminal=False, color_system=None), buf


@pytest.fixture(scope="module")
def delay_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    out = tmp_path_factory.mktemp("demo")
    console, buf = _console()
    done = demo.run(out, seed=1, console=console, methods=("delay",), durations=SHORT, workers=1)
    return out, done, buf.getvalue()


def test_delay_job_writes_its_folder_and_matching_table(delay_run: tuple[Path, dict, str]) -> None:
    out, done, text = delay_run
    files = sorted(p.name for p in (out / "delay").iterdir())
    assert "params.json" in files and "report.html" in files and any(f.endswith(".png") for f in files)
    result = Result.load(out / "delay" / "params.json")
    truth = Truth(**{k: v for k, v in done["delay"]["truth"].items()})
    errors = compare(result, truth)
    # the printed table shows every parameter with estimate ± σ, truth and error % as in params.json
    for name, e in result.params.items():
        row = next(ln for ln in text.splitlines() if re.match(rf"\W*{re.escape(name)}\s", ln))
        assert f"{e.value:.5g} ± {e.std:.2g}" in row
        if name in errors:
            assert f"{errors[name]:+.2f}" in row and f"{truth.params[name]:.5g}" in row
    # even on 8 s flights the motor time constant and inertia come out within a few percent
    assert abs(errors["tm"]) < 3.0 and abs(errors["I_xx"]) < 5.0 and abs(errors["k_tau"]) < 5.0


def test_index_links_each_run_and_embeds_its_tables(delay_run: tuple[Path, dict, str]) -> None:
    out, _, text = delay_run
    html = (out / "report.html").read_text()
    assert 'href="delay/report.html"' in html and "eschmann-crazyflie" in html
    assert html.count('src="data:image/png;base64,') == 2  # the first two figures of the run
    assert "wrote" in text and str(out / "report.html") in text
    assert re.search(r"delay\s.*done in \d+\.\d s", text)  # the Rich progress line of the job
    params = json.loads((out / "delay" / "params.json").read_text())["params"]
    assert all(f"<code>{name}</code>" in html for name in params)


def _boom(seed: int, progress, durations):  # a runner's signature
    raise RotoridError("simulated failure")


def test_failing_method_is_reported_after_writing_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(demo.RUNNERS, "tls", _boom)
    console, _ = _console()
    with pytest.raises(RotoridError, match=r"tls failed \(RotoridError: simulated failure\)"):
        demo.run(tmp_path, console=console, methods=("tls",), workers=1)
    assert "failed — RotoridError: simulated failure" in (tmp_path / "report.html").read_text()
    with pytest.raises(RotoridError, match="unknown demo method"):
        demo.run(tmp_path, console=console, methods=("magic",))
