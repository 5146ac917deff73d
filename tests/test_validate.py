"""Cross-validation (Six et al. Sec. IV-B4): the identified model from any method's Result,
replayed on a held-out simulated flight, and the `rotorid validate` command."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid.cli import app
from rotorid.errors import RotoridError, VehicleError
from rotorid.io import write
from rotorid.methods import tls
from rotorid.result import Estimate, Result
from rotorid.sim import scenarios
from rotorid.validate import overlaps, validate, vehicle_from_result
from rotorid.vehicle import Vehicle


@pytest.fixture(scope="module")
def six_a():
    return scenarios.run("six-config-a", seed=1, duration=12.0)


@pytest.fixture(scope="module")
def res_a(six_a):
    return tls.identify({"A": [six_a.flights["train"]]}, six_a.vehicle)


def _delay_like(truth: dict[str, float], inertia: np.ndarray) -> Result:
    """A Result shaped like the delay method's (thrust curve, T_m, K_tau, diagonal inertia about the CoM)."""
    p = {"thrust_c2": truth["k_t"], "tm": truth["tm"], "k_tau": truth["k_tau"]}
    p |= {n: inertia[i, i] for i, n in enumerate(("I_xx", "I_yy", "I_zz"))}
    return Result("delay", {k: Estimate(float(v)) for k, v in p.items()})


def test_vehicle_from_result_reads_every_convention() -> None:
    base = Vehicle.preset("quad-plus", arm=0.2, mass=1.0)
    d = _delay_like({"k_t": 2.0, "tm": 0.03, "k_tau": 0.01}, np.diag([0.01, 0.02, 0.03]))
    v = vehicle_from_result(d, base)
    assert v.thrust_exponents == (2,) and v.thrust_coeffs.tolist() == [2.0]
    assert v.tm_rise == v.tm_fall == 0.03 and v.k_tau == 0.01
    np.testing.assert_allclose(v.inertia, np.diag([0.01, 0.02, 0.03]))
    per_motor = Result("delay", {f"thrust_c{e}_m{m}": Estimate(e + 0.1 * m) for e in (1, 2) for m in range(1, 5)})
    v = vehicle_from_result(per_motor, base)
    assert v.thrust_exponents == (1, 2) and v.thrust_coeffs.shape == (4, 2) and v.thrust_coeffs[2, 1] == 2.3
    # a TLS result: inertia about the body origin, moved to the CoM (parallel-axis theorem)
    m, c = 2.0, np.array([0.1, 0.0, 0.0])
    tls_like = Result(
        "tls",
        {
            "k_t@A": Estimate(9.0),
            "k_t": Estimate(3.0),
            "k_d": Estimate(0.06),
            "I_xx@B": Estimate(0.05),
            "I_yy@B": Estimate(0.06 + m * 0.01),
            "I_zz@B": Estimate(0.07 + m * 0.01),
            "ms_x@B": Estimate(m * c[0]),
        },
        settings={"masses": {"A": 1.0, "B": m}, "inertia_about": "origin"},
    )
    v = vehicle_from_result(tls_like, base, config="B")
    assert v.mass == m and v.name == "quad-plus@B" and v.k_tau == pytest.approx(0.02)
    np.testing.assert_allclose(v.com, c)
    np.testing.assert_allclose(np.diag(v.inertia), [0.05, 0.06, 0.07])
    with pytest.raises(VehicleError, match="only some of I_xx"):
        vehicle_from_result(Result("online", {"I_xx": Estimate(0.1)}), base)


def test_tls_model_predicts_held_out_flight(six_a, res_a) -> None:
    """Identified on "train", replayed on "test": R² > 0.99 for the vertical specific force
    and the three angular accelerations; Table III error norms F_z < 1 %, M_x, M_y < 3 %,
    M_z < 10 %. The JSON round trip of the result validates identically."""
    val = validate(res_a, [six_a.flights["test"]])
    for ch in ("s_z", "omega_dot_x", "omega_dot_y", "omega_dot_z"):
        assert val.metrics[ch]["r2"] > 0.99, (ch, val.metrics[ch])
    n = val.rel_error_norm_pct
    assert n["F_z"] < 1.0 and n["M_x"] < 3.0 and n["M_y"] < 3.0 and n["M_z"] < 10.0
    assert np.isnan(n["F_x"]) and np.isnan(n["F_y"])  # planar rotors produce no lateral force
    again = validate(Result.from_dict(json.loads(res_a.to_json())), [six_a.flights["test"]])
    assert again.to_dict()["metrics"] == val.to_dict()["metrics"]  # NaN (not modelled) as None


def test_delay_like_result_validates(six_a) -> None:
    """A delay-method-shaped Result built from the truth predicts the held-out flight as well
    when the base vehicle knows the CoM; without it the 5 mm CoM offset shows up as a pitch
    misfit, which is what cross-validation is for."""
    tv = six_a.true_vehicle
    d = _delay_like(six_a.truth.params, tv.inertia)
    good = validate(d, [six_a.flights["test"]], six_a.vehicle.replace(com=tv.com))
    for ch in ("s_z", "omega_dot_x", "omega_dot_y", "omega_dot_z"):
        assert good.metrics[ch]["r2"] > 0.99, (ch, good.metrics[ch])
    blind = validate(d, [six_a.flights["test"]], six_a.vehicle)
    assert blind.metrics["omega_dot_y"]["r2"] < good.metrics["omega_dot_y"]["r2"] - 0.05
    assert blind.settings["method"] == "delay" and blind.vehicle["tm_rise"] == six_a.truth.params["tm"]


def test_yaw_not_predicted_without_torque_coefficient(six_a, res_a) -> None:
    r = Result.from_dict(json.loads(res_a.to_json()))
    for k in ("k_d", "k_tau"):
        r.params.pop(k)
    r.vehicle.pop("k_tau")
    val = validate(r, [six_a.flights["test"]])
    assert val.modeled["M_z"] is False and np.isnan(val.metrics["omega_dot_z"]["r2"])
    assert val.metrics["omega_dot_x"]["r2"] > 0.99 and any("yaw" in n for n in val.notes)
    with pytest.raises(RotoridError, match="no configuration 'B'"):
        validate(res_a, [six_a.flights["test"]], config="B")


@pytest.mark.slow
def test_cli_identify_then_validate(six_a, tmp_path) -> None:
    """`rotorid identify --method tls` on the training log, then `rotorid validate` on the
    held-out log: a Rich table, validation.json, the two figures and report.html, the folder
    replaced whole (a stale file of an earlier run is gone)."""
    train, test, veh = tmp_path / "train.parquet", tmp_path / "test.parquet", tmp_path / "six.toml"
    write(six_a.flights["train"], train)
    write(six_a.flights["test"], test)
    six_a.vehicle.save(veh)
    runner = CliRunner()
    res = runner.invoke(
        app, ["identify", "--method", "tls", "--vehicle", str(veh), str(train), "--out", str(tmp_path / "id")]
    )
    assert res.exit_code == 0, res.output
    (tmp_path / "val").mkdir()
    (tmp_path / "val" / "stale_figure.png").write_bytes(b"old")
    res = runner.invoke(
        app, ["validate", str(tmp_path / "id" / "params.json"), str(test), "--out", str(tmp_path / "val")]
    )
    assert res.exit_code == 0, res.output
    assert "omega_dot_x" in res.output and "F_z" in res.output
    out = json.loads((tmp_path / "val" / "validation.json").read_text())
    assert out["metrics"]["omega_dot_y"]["r2"] > 0.99 and out["rel_error_norm_pct"]["F_z"] < 1.0
    assert out["inputs"][0]["path"] == str(test) and len(out["inputs"][0]["sha256"]) == 64
    assert {p.name for p in (tmp_path / "val").iterdir()} == {
        "validation.json",
        "validation_wrench.png",
        "validation_motion.png",
        "report.html",
    }
    html = (tmp_path / "val" / "report.html").read_text()
    r2 = format(out["metrics"]["omega_dot_y"]["r2"], ".4f")
    assert f"<td>{r2}</td>" in html and html.count('src="data:image/png;base64,') == 2
    assert "http" not in re.sub(r"base64,[A-Za-z0-9+/=]+", "", html)  # base64 can spell it by chance
    res = runner.invoke(app, ["validate", str(tmp_path / "id" / "params.json"), str(test), "--config", "B"])
    assert res.exit_code == 2 and "no configuration 'B'" in res.output
    # the rotor model predicts no lateral force: s_x, s_y are not scored (no R² on what it cannot predict)
    assert out["metrics"]["s_x"]["r2"] is None and out["modeled"]["F_x"] is False
    assert "not modelled" in html and "warning" not in res.stderr
    # validating on the training log (renamed: it is recognised by its SHA-256) warns, and the report says so
    copy = tmp_path / "renamed.parquet"
    copy.write_bytes(train.read_bytes())
    for spec in (str(copy), f"{copy}@2:5"):
        res = runner.invoke(
            app, ["validate", str(tmp_path / "id" / "params.json"), spec, "--out", str(tmp_path / "v2")]
        )
        assert res.exit_code == 0, res.output
        warned = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
        assert len(warned) == 1 and f"{copy} overlaps the identification data ({train}: " in warned[0]
        assert "no cross-validation" in (tmp_path / "v2" / "report.html").read_text()
    res = runner.invoke(
        app, ["validate", str(tmp_path / "id" / "params.json"), str(test), "--out", str(tmp_path / "v2")]
    )
    assert "overlaps" not in res.stderr


def test_overlap_needs_the_same_file_and_a_shared_window() -> None:
    r = Result("tls", {}, inputs=[{"path": "a.ulg", "sha256": "1" * 64, "windows": [[10.0, 20.0], [30.0, 40.0]]}])
    held = lambda sha, windows: [{"path": "b.ulg", "sha256": sha, "windows": windows}]
    assert overlaps(r, held("2" * 64, [])) == []
    assert overlaps(r, held("1" * 64, [[20.0, 30.0]])) == []  # touching is not overlapping
    (msg,) = overlaps(r, held("1" * 64, [[15.0, 35.0]]))
    assert msg.startswith("b.ulg overlaps the identification data (a.ulg: 15–20 s, 30–35 s)")
    assert (
        "the whole log"
        in overlaps(Result("tls", {}, inputs=[{"path": "a", "sha256": "1" * 64}]), held("1" * 64, []))[0]
    )


def test_validation_plots_do_not_bridge_gaps() -> None:
    """Two held-out pieces 4 s apart: every plotted line breaks between them (a NaN point)."""
    from rotorid.report.validate import figures, gapped
    from rotorid.validate import MOTION, Validation

    t = np.concatenate([np.arange(0, 1, 0.01), np.arange(5, 6, 0.01)])
    y = np.sin(t)[:, None] * np.ones((1, 6))
    tt, yy = gapped(t, y)
    assert len(tt) == len(t) + 1 and np.isnan(tt[100]) and np.isnan(yy[100]).all() and tt[101] == 5.0
    metrics = {m: {"rmse": 0.1, "r2": 0.9, "unit": "m/s^2"} for m in MOTION}
    val = Validation(metrics, dict.fromkeys(("F_x", "F_y", "F_z", "M_x", "M_y", "M_z"), 1.0),
                     dict.fromkeys(("F_x", "F_y", "F_z", "M_x", "M_y", "M_z"), True), t, y, y, y, y)  # fmt: skip
    for fig in figures(val).values():
        lines = [ln for ax in fig.axes for ln in ax.get_lines()]
        assert lines and all(np.isnan(np.asarray(ln.get_xdata(), float)).sum() == 1 for ln in lines)
