"""End to end: identify a simulated flight -> export the vehicle TOML (`rotorid export`)
-> fly the identified vehicle in closed loop with the same references and noise as the true
one -> its specific force and angular acceleration match the original flight (R² >= 0.95);
and `rotorid.validate` replays the original held-out flight through the identified model.

R² of a vector quantity pools its axes: 1 - sum |e|² / sum |x - mean x|² (the lateral specific
force of a multirotor is tiny, so a per-axis R² there measures noise, not the model)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.sim import scenarios
from rotorid.sim.control import Gains
from rotorid.sim.sensors import DEG, Imu
from rotorid.sim.simulator import FlightSpec, References, fly
from rotorid.sim.trajectory import band_limited_noise
from rotorid.validate import validate
from rotorid.vehicle import Vehicle


@functools.cache
def simulated(name: str, duration: float) -> scenarios.Scenario:
    """Each scenario is simulated once per test session."""
    return scenarios.run(name, seed=4, duration=duration)


def r2(measured: np.ndarray, predicted: np.ndarray) -> float:
    """Pooled coefficient of determination of (N, k) series."""
    e = predicted - measured
    return 1.0 - float(np.sum(e**2)) / float(np.sum((measured - measured.mean(axis=0)) ** 2))


def closed_loop_spec(true: Vehicle, duration: float, rate: float, seed: int) -> FlightSpec:
    """A pilot-like excitation flight (roll, pitch, thrust, yaw) around a hover, logged at `rate`."""
    t = np.arange(round(duration * 500) + 1) / 500.0
    rng = np.random.default_rng(seed)
    off = np.column_stack(
        [
            band_limited_noise(t, 8 * DEG, 1.5, rng),
            band_limited_noise(t, 8 * DEG, 1.5, rng),
            band_limited_noise(t, 0.08, 2.0, rng),
        ]
    )
    yaw_rate = band_limited_noise(t, 30 * DEG, 1.0, rng)
    yaw = np.concatenate([[0.0], np.cumsum(0.5 * (yaw_rate[1:] + yaw_rate[:-1]) * np.diff(t))])

    def refs(tq: np.ndarray) -> References:
        n = len(tq)
        z = np.zeros((n, 3))
        return References(np.tile((0.0, 0.0, 1.5), (n, 1)), z, z.copy(), yaw[:n], off[:n])

    return FlightSpec(
        duration=duration,
        references=refs,
        gains=Gains.from_bandwidth(true.inertia, (10.0, 10.0, 5.0), 0.8, pos_wn=(0.6, 0.6, 1.0)),
        imu=Imu(rate=rate),
        log_rate=rate,
    )


def identify_and_export(sc: scenarios.Scenario, method: str, tmp: Path):
    """Identify with the method, save params.json, export the TOML through the CLI, load it."""
    from rotorid.methods import delay, tls

    f = sc.flights
    if method == "delay":
        result = delay.identify([f["thrust"]], sc.vehicle, roll_pitch=[f["roll_pitch"]], yaw=[f["yaw"]])
    else:
        result = tls.identify({"A": [f["train"]]}, sc.vehicle)
    result.save(tmp / "params.json")
    sc.vehicle.save(tmp / "known.toml")
    out = CliRunner().invoke(
        app,
        ["export", str(tmp / "params.json"), "--format", "toml", "--out", str(tmp / "id.toml"),
         "--vehicle", str(tmp / "known.toml")],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return result, Vehicle.from_toml(tmp / "id.toml")


@pytest.mark.parametrize(
    ("scenario", "method", "duration", "rate"),
    [("six-config-a", "tls", 15.0, 200.0), ("eschmann-crazyflie", "delay", 10.0, 1000.0)],
)
def test_identified_vehicle_flies_like_the_true_one(
    scenario: str, method: str, duration: float, rate: float, tmp_path: Path
) -> None:
    sc = simulated(scenario, duration)
    _, ident = identify_and_export(sc, method, tmp_path)
    # the TOML carries what was identified, not the user's prior knowledge
    assert ident.inertia is not None and ident.k_tau is not None and ident.thrust_coeffs is not None
    assert ident.k_tau == pytest.approx(sc.true_vehicle.k_tau, rel=0.05)

    spec = closed_loop_spec(sc.true_vehicle, 8.0, rate, seed=11)
    _, orig = fly(sc.true_vehicle, spec, np.random.default_rng(5), "original")
    _, sim = fly(ident, spec, np.random.default_rng(5), "identified")
    assert r2(orig["spec_force"], sim["spec_force"]) >= 0.95
    assert r2(orig["omega_dot"], sim["omega_dot"]) >= 0.95
    for j in range(3):  # each axis of the angular acceleration on its own, too
        assert r2(orig["omega_dot"][:, j : j + 1], sim["omega_dot"][:, j : j + 1]) >= 0.95
    # sanity: a clearly wrong model (inertia x 1.5) fails the same check on angular acceleration
    wrong = ident.replace(inertia=1.5 * ident.inertia)
    _, bad = fly(wrong, spec, np.random.default_rng(5), "wrong")
    assert r2(orig["omega_dot"], bad["omega_dot"]) < r2(orig["omega_dot"], sim["omega_dot"])


def test_validate_replays_the_original_flight_through_the_exported_vehicle(tmp_path: Path) -> None:
    sc = simulated("six-config-a", 15.0)
    result, ident = identify_and_export(sc, "tls", tmp_path)
    val = validate(result, [sc.flights["test"]], base=Vehicle.from_toml(tmp_path / "known.toml"))
    assert r2(val.measured[:, :3], val.predicted[:, :3]) >= 0.95  # specific force
    assert r2(val.measured[:, 3:], val.predicted[:, 3:]) >= 0.95  # angular acceleration
    for name in ("s_z", "omega_dot_x", "omega_dot_y", "omega_dot_z"):
        assert val.metrics[name]["r2"] >= 0.95, (name, val.metrics[name])
    assert val.vehicle["k_tau"] == pytest.approx(ident.k_tau, rel=1e-12)


def test_command_line_chain(tmp_path: Path) -> None:
    """The README's flow through the CLI: simulate -> identify -> export -> validate."""
    run = CliRunner()

    def ok(*args: str) -> None:
        res = run.invoke(app, list(args))
        assert res.exit_code == 0, (args, res.output, res.stderr)

    sim, res, val = tmp_path / "sim", tmp_path / "res", tmp_path / "val"
    ok("simulate", "six-config-a", "--duration", "8", "--seed", "6", "--out", str(sim))
    ok(
        "identify",
        "--method",
        "tls",
        "--vehicle",
        str(sim / "vehicle.toml"),
        str(sim / "train.parquet"),
        "--out",
        str(res),
    )
    ok("export", str(res / "params.json"), "--format", "toml", "--out", str(tmp_path / "id.toml"))
    ok("validate", str(res / "params.json"), str(sim / "test.parquet"), "--out", str(val))
    truth = json.loads((sim / "truth.json").read_text())["params"]
    ident = Vehicle.from_toml(tmp_path / "id.toml")
    assert ident.thrust_coeffs[0] == pytest.approx(truth["k_t"], rel=0.02)
    assert ident.k_tau == pytest.approx(truth["k_tau"], rel=0.05)
    metrics = json.loads((val / "validation.json").read_text())["metrics"]
    assert min(metrics[k]["r2"] for k in ("s_z", "omega_dot_x", "omega_dot_y", "omega_dot_z")) >= 0.95
    assert (res / "report.html").stat().st_size > 10_000 and list(val.glob("*.png"))
