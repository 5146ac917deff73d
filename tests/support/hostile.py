"""Builders of the hostile inputs of issue 38 (each finding's reproducer, rebuilt from its
description): small interchange logs, vehicle TOMLs, and the CLI runner that asserts the
one-line error contract."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from rotorid.cli import app

QUAD = [(0.1, -0.1), (-0.1, 0.1), (0.1, 0.1), (-0.1, -0.1)]
DIRS = [-1, -1, 1, 1]


def csv_flight(path: Path, n: int = 2000, rate: float = 500.0, rows: slice | np.ndarray | None = None) -> Path:
    """An interchange CSV of a flown, excited quad: t, acc, gyro, cmd_0..3 (`rows`: keep only those)."""
    t = np.arange(n) / rate
    rng = np.random.default_rng(0)
    gyro = 2.0 * np.sin(np.outer(t, 2 * np.pi * np.array([1.3, 1.7, 0.9])))
    acc = np.column_stack([0.1 * np.sin(t), 0.1 * np.cos(t), 9.81 + np.sin(3 * t)])
    cmd = 0.5 + 0.2 * np.sin(np.outer(t, [2.0, 2.5, 3.0, 3.5])) + 0.01 * rng.standard_normal((n, 4))
    cols = ["t", "acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"] + [f"cmd_{i}" for i in range(4)]
    data = np.column_stack([t, acc, gyro, cmd])
    if rows is not None:
        data = data[rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(path, data, delimiter=",", header=",".join(cols), comments="")
    return path


def vehicle_toml(path: Path, head: str = 'name = "q"\nmass = 1.0', rotors: str | None = None) -> Path:
    """A vehicle TOML: `head` (top-level keys) then four [[rotor]] tables (or `rotors`)."""
    if rotors is None:
        rotors = "".join(
            f"\n[[rotor]]\nposition = [{x}, {y}, 0.0]\ntorque_dir = {d}\n" for (x, y), d in zip(QUAD, DIRS, strict=True)
        )
    path.write_text(head + "\n" + rotors)
    return path


def run(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stderr); an escaped exception re-raises."""
    res = CliRunner().invoke(app, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def fails(args: list[str], *needles: str) -> str:
    """Run the CLI; assert exit 2 and exactly one line on stderr, 'error: ...' holding the needles."""
    code, _, err = run(args)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert code == 2 and len(errors) == 1, (args, code, err)
    for n in needles:
        assert n in errors[0], (n, errors[0])
    return errors[0]
