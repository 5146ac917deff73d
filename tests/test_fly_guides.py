"""The "fly this" guides (docs/fly-*.md): each reader's advice for a too-slow log names its guide,
the guide exists and sets every parameter the advice names; `info` on a slow PX4 log prints both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.io import blackbox, dataflash, ulog

REPO = Path(__file__).resolve().parents[1]
HINTS = {
    "px4": ulog.RATE_HINT,
    "ardupilot": dataflash.RATE_HINT,
    "betaflight": blackbox.RATE_HINT,
    "inav": blackbox.INAV_RATE_HINT,
}


@pytest.mark.parametrize("who", sorted(HINTS))
def test_each_hint_names_a_guide_that_sets_its_parameters(who: str) -> None:
    hint = HINTS[who]
    (path,) = re.findall(r"docs/fly-[a-z0-9]+\.md", hint)
    guide = (REPO / path).read_text()
    assert who in path or who == "inav"
    # every parameter the advice names (PX4/ArduPilot UPPER_CASE, Betaflight/INAV lower_case settings)
    names = set(re.findall(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b", hint)) | set(re.findall(r"set ([a-z_]+) =", hint))
    assert names, hint
    missing = sorted(n for n in names if n not in guide)
    assert not missing, f"{path} does not mention {missing}"


def test_info_on_a_slow_px4_log_prints_the_parameter_and_the_guide(px4_logs) -> None:
    res = CliRunner().invoke(app, ["info", str(px4_logs["sample"])])
    assert res.exit_code == 0, res.output
    fix = res.stdout[res.stdout.index("│ fix") :]  # the fix row, wrapped in its table cell
    assert "SDLOG_PROFILE=25" in fix and "docs/fly-px4.md" in fix
