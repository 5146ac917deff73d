"""The extension points the README's "Extending rotorid" describes: a log format and a method
added from a module of another package (through the `rotorid.plugins` entry point) appear in
`rotorid --help` and `rotorid info`, read and write through `rotorid convert`, and identify,
report and redraw through `rotorid identify` / `rotorid report` like the built-in ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid import io, registry
from rotorid.cli import app
from rotorid.flight import Flight
from rotorid.frames import GRAVITY

SRC = Path(__file__).resolve().parents[1] / "src"

PLUGIN = '''
"""A toy plugin: the `toy` text format (t and vertical specific force per line) and the `toy`
method (mass from hover: the vehicle's mass scaled by mean specific force / g)."""
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.io import register
from rotorid.options import option
from rotorid.registry import MethodSpec, register_method
from rotorid.report.style import figure
from rotorid.result import Estimate, Result


@register("toy", (".toy",))
def read(path: Path) -> list[Flight]:
    t, az = np.loadtxt(path, ndmin=2).T
    return [Flight(t=t, acc=np.column_stack([0 * az, 0 * az, az]), meta={"source": str(path), "format": "toy"})]


def write(flight: Flight, path: Path) -> Path:
    np.savetxt(path, np.column_stack([flight.t, flight.acc[:, 2]]))
    return Path(path)


@dataclass(frozen=True)
class ToySettings:
    gain: float = option(1.0, "Scale of the mass.")


def run(req):
    (f,) = req.flights(req.logs)
    s = req.settings(ToySettings)
    ratio = f.acc[:, 2] / GRAVITY
    m = req.vehicle.mass * s.gain * ratio.mean()
    std = req.vehicle.mass * ratio.std() / np.sqrt(len(ratio))
    return Result("toy", {"mass": Estimate(m, std, "kg")}, settings={"gain": s.gain},
                  diagnostics={"t": f.t, "ratio": ratio})


def figures(result):
    fig, ax = figure(5, 3)
    ax.plot(result.diagnostics["t"], result.diagnostics["ratio"])
    return {"toy_ratio": fig}


register_method(
    MethodSpec("toy", "a toy", "Nobody — A Toy Method (2026)", ToySettings, run, figures, (), channels=("acc",))
)
'''


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """A module `toy_rotorid_plugin` and its distribution's entry point on a fresh path."""
    d = tmp_path / "site"
    (d / "toy_rotorid_plugin-0.1.dist-info").mkdir(parents=True)
    (d / "toy_rotorid_plugin.py").write_text(textwrap.dedent(PLUGIN))
    info = d / "toy_rotorid_plugin-0.1.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-rotorid-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rotorid.plugins]\ntoy = toy_rotorid_plugin\n")
    return d


def _cli(plugin_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), str(SRC)]), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "rotorid", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_plugin_format_and_method_are_listed_by_help_and_info(plugin_dir: Path) -> None:
    r = _cli(plugin_dir, "--help")
    assert r.returncode == 0, r.stderr
    lines = [ln.split() for ln in r.stdout.splitlines()]
    assert ["toy", "a", "toy"] in lines and ["delay", "Eschmann", "et", "al."] in lines
    assert ["toy", ".toy;", "read/write"] in lines and ["crazyflie", ".bin", "no", "suffix;", "read"] in lines
    r = _cli(plugin_dir, "info")
    assert r.returncode == 0, r.stderr
    assert "Nobody — A Toy Method (2026)" in r.stdout
    rows = [[c.strip() for c in ln.split("│")[1:-1]] for ln in r.stdout.splitlines() if ln.startswith("│")]
    assert ["toy", "Nobody — A Toy Method (2026)"] in rows
    assert ["toy", ".toy", "yes"] in rows and ["crazyflie", ".bin (none)", "no"] in rows
    r = _cli(Path("/nonexistent"), "--help")  # without the plugin on the path: the built-ins only
    assert r.returncode == 0 and "toy" not in r.stdout


def test_plugin_entry_points_are_those_importlib_metadata_finds(plugin_dir: Path, tmp_path: Path) -> None:
    """`registry.plugin_entry_points` reads entry_points.txt itself (for start-up time): it
    finds what `importlib.metadata` finds, the first distribution of a name winning."""
    from importlib.metadata import distributions

    shadow = tmp_path / "shadow"  # the same distribution again, later on the path: ignored
    (shadow / "Toy_Rotorid_Plugin-0.2.dist-info").mkdir(parents=True)
    (shadow / "Toy_Rotorid_Plugin-0.2.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\nx = y:z\n\n[rotorid.plugins]\ntoy = shadowed_module\n"
    )
    other = tmp_path / "other"  # another distribution with two plugins, one with an attribute and extras
    (other / "more_plugins-1.0.dist-info").mkdir(parents=True)
    (other / "more_plugins-1.0.dist-info" / "entry_points.txt").write_text(
        "[rotorid.plugins]\na = more.a\nb = more.b:setup [fast]\n[other.group]\nc = more.c\n"
    )
    path = [str(plugin_dir), str(shadow), str(other), "/nonexistent"]
    firsts = {d._normalized_name: d for d in reversed(list(distributions(path=path)))}  # as entry_points() dedups
    eps = [e for d in firsts.values() for e in d.entry_points if e.group == registry.PLUGIN_GROUP]
    want = sorted(e.value.split("[")[0].strip() for e in eps)
    assert sorted(registry.plugin_entry_points(path)) == want == ["more.a", "more.b:setup", "toy_rotorid_plugin"]


def test_builtin_formats_are_declared_as_their_modules_register_them() -> None:
    """`io.BUILTIN` names each built-in format without importing its reader; importing the
    module registers the same name, suffixes, magic bytes and reader, and `writes` says
    whether the module writes."""
    import importlib

    for decl in io.BUILTIN:
        mod = importlib.import_module(decl.module)
        got = io.FORMATS[decl.name]
        assert (got.suffixes, got.magic, got.read) == (decl.suffixes, decl.magic, mod.read), decl.name
        assert decl.writes == hasattr(mod, "write") == got.writable, decl.name
        assert decl.reader() is got.reader() is mod.read


@pytest.fixture
def toy(plugin_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """The plugin imported in this process, its registrations undone afterwards."""
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    monkeypatch.setattr(io, "FORMATS", dict(io.formats()))
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.delitem(sys.modules, "toy_rotorid_plugin", raising=False)
    __import__("toy_rotorid_plugin")
    yield
    sys.modules.pop("toy_rotorid_plugin", None)


def test_plugin_method_identifies_reports_and_redraws(toy, tmp_path: Path) -> None:
    t = np.arange(0.0, 2.0, 0.01)
    az = GRAVITY * (1.1 + 0.05 * np.sin(7 * t))
    src = tmp_path / "hover.parquet"
    io.write(Flight(t=t, acc=np.column_stack([0 * t, 0 * t, az])), src)
    runner = CliRunner()
    r = runner.invoke(app, ["convert", str(src), "--to", str(tmp_path / "hover.toy")])  # written by the toy writer
    assert r.exit_code == 0, r.output
    assert np.allclose(np.loadtxt(tmp_path / "hover.toy")[:, 1], az)
    # `info` judges the log against each method's channels and suggests the toy's command
    r = runner.invoke(app, ["info", str(tmp_path / "hover.toy"), "--vehicle", "crazyflie"])
    assert r.exit_code == 0, r.output
    cmd = f"rotorid identify --method toy --vehicle crazyflie {tmp_path / 'hover.toy'} --out results/"
    assert cmd in r.stdout.splitlines() and "--method delay" not in r.stdout  # no gyro, no motor commands
    out = tmp_path / "run"
    r = runner.invoke(
        app, ["identify", "--method", "toy", "--vehicle", "crazyflie", str(tmp_path / "hover.toy"), "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    params = json.loads((out / "params.json").read_text())
    from rotorid.vehicle import Vehicle

    assert params["params"]["mass"]["value"] == pytest.approx(Vehicle.preset("crazyflie").mass * az.mean() / GRAVITY)
    assert params["inputs"][0]["path"] == str(tmp_path / "hover.toy")
    # the plugin's settings declare its option: `--gain` is on the command line and reaches the settings
    r = runner.invoke(
        app,
        [
            "identify",
            "--method",
            "toy",
            "--vehicle",
            "crazyflie",
            str(tmp_path / "hover.toy"),
            "--out",
            str(tmp_path / "run2"),
            "--gain",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    doubled = json.loads((tmp_path / "run2" / "params.json").read_text())["params"]["mass"]["value"]
    assert doubled == pytest.approx(2 * params["params"]["mass"]["value"])
    assert sorted(p.name for p in out.iterdir()) == ["diagnostics.npz", "params.json", "report.html", "toy_ratio.png"]
    assert "Nobody — A Toy Method (2026)" in (out / "report.html").read_text()
    # redraw from the saved files alone: the same figure from diagnostics.npz
    png = (out / "toy_ratio.png").read_bytes()
    (out / "toy_ratio.png").unlink()
    r = runner.invoke(app, ["report", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "toy_ratio.png").read_bytes() == png
    # options of other methods are refused in one line
    r = runner.invoke(
        app, ["identify", "--method", "toy", "--vehicle", "crazyflie", str(tmp_path / "hover.toy"), "--variant", "rls"]
    )
    assert (
        r.exit_code == 2
        and r.stderr.strip()
        == "error: --method toy does not take --variant (online); remove them or choose that method"
    )
