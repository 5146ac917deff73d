"""`--mass KG` on identify replaces the vehicle file's mass for any method; tls's `--mass
NAME=KG` keeps meaning a configuration's mass."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotorid import runs
from rotorid.cli import app
from rotorid.errors import RotoridError
from rotorid.vehicle import Vehicle


def test_bare_mass_scales_the_thrust_curve_and_is_noted(cf_logs) -> None:
    log = [f"{cf_logs['log10']}@35:45"]
    cf = Vehicle.preset("crazyflie")
    base = runs.identify("delay", log, cf)
    heavy = runs.identify("delay", log, cf, {"mass": ["0.054"]})
    # b = m * acc (Eschmann eq. 5): the thrust curve scales with the mass, T_m does not
    assert heavy.value("thrust_c2") == pytest.approx(2 * base.value("thrust_c2"), rel=1e-9)
    assert heavy.value("tm") == pytest.approx(base.value("tm"), rel=1e-9)
    assert heavy.vehicle["mass"] == 0.054 and base.vehicle["mass"] == 0.027
    assert "mass 0.054 kg from --mass (the vehicle crazyflie says 0.027 kg)" in heavy.notes
    assert runs.identify("delay", log, cf, {"mass": "0.027"}).notes == base.notes  # same mass: nothing to say


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        (["0.03", "0.04"], "--mass given twice as a plain number"),
        (["heavy"], "--mass 'heavy' must be a number of kg"),
        (["-1"], "--mass -1 must be a positive number"),
    ],
)
def test_bad_bare_mass(given: list[str], needle: str) -> None:
    with pytest.raises(RotoridError, match=needle):
        runs.split_mass({"mass": given})


def test_split_keeps_tls_configuration_masses() -> None:
    assert runs.split_mass({"mass": ["1.3", "B=1.452"], "yaw": None}) == ({"mass": ["B=1.452"], "yaw": None}, 1.3)
    assert runs.split_mass({"mass": ["B=1.452"]}) == ({"mass": ["B=1.452"]}, None)
    assert runs.split_mass({"mass": {"B": 1.452}}) == ({"mass": {"B": 1.452}}, None)


def test_cli_takes_mass_with_delay_and_refuses_a_configuration_mass(cf_logs, tmp_path: Path) -> None:
    args = ["identify", "--method", "delay", "--vehicle", "crazyflie", f"{cf_logs['log10']}@35:45"]
    res = CliRunner().invoke(app, [*args, "--mass", "0.054", "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "mass 0.054 kg from --mass" in " ".join(res.stdout.split())
    res = CliRunner().invoke(app, [*args, "--mass", "B=0.05", "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "--method delay does not take --mass (tls)" in res.stderr
