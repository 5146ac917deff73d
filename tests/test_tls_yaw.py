"""IDIM-TLS under the yaw pair's model mismatch (issue 11): the rotor-drag column recovers k_rd
from a simulated flight with rotor drag, the yaw-moment nuisance absorbs a constant yaw moment,
the block weighting makes the fit independent of a row block's scale, and --imu-delay parses."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.errors import RotoridError
from rotorid.methods import tls
from rotorid.methods.regression import block_weighted_tls, compress
from rotorid.methods.tls import problem as tls_problem
from rotorid.options import options_of
from rotorid.registry import method
from rotorid.sim import scenarios
from rotorid.validate import validate
from test_tls_unit import TRUE, _true_params, hexa_tilted, kinematic_flight

EXACT = {"imu_delay": 0.0, "motor_spread": 0.0, "essential": False}


def _rel(r: object, name: str, truth: float) -> float:
    return abs(r.params[name].value / truth - 1)


def test_rotor_drag_recovers_k_rd() -> None:
    """Noise-free A + B flights with the simulator's rotor drag (0.3 1/s at hover): k_rd is the
    simulator's coefficient times sqrt(k_t) (`motion.drag_regressor`) to 0.2 %, and k_d, I_zz
    are exact to 0.2 %, and validation replays the drag (the held-out lateral specific force is
    predicted); without the column the drag's yaw damping and lateral force bias k_d."""
    a = scenarios.run("six-config-a", seed=0, duration=20.0, rotor_drag=0.3, noise=False, flights=("train", "test"))
    b = scenarios.run("six-config-b", seed=0, duration=20.0, rotor_drag=0.3, noise=False, flights=("train",))
    k_rd = a.truth.vehicle["mismatch"]["k_rotor_drag"] * np.sqrt(a.truth.params["k_t"])
    cfg = {"A": [a.flights["train"]], "B": [b.flights["train"]]}
    masses = {"B": b.vehicle.mass}
    r = tls.identify(cfg, a.vehicle, masses=masses, settings=tls.TlsSettings(**EXACT))
    assert _rel(r, "k_rd", k_rd) < 2e-3
    assert r.params["k_rd"].unit == "N s/m/(rad/s)"
    for name in ("k_d", "I_zz@A"):
        truth = a.truth.params[name.partition("@")[0]]
        assert _rel(r, name, truth) < 2e-3
    val = validate(r, [a.flights["test"]], config="A")  # the drag replayed: lateral force predicted
    assert val.modeled["F_x"] and val.modeled["F_y"] and min(val.metrics[c]["r2"] for c in ("s_x", "s_y")) > 0.95
    off = tls.identify(cfg, a.vehicle, masses=masses, settings=tls.TlsSettings(**EXACT, rotor_drag=False))
    assert "k_rd" not in off.params
    assert _rel(off, "k_d", a.truth.params["k_d"]) > 5 * _rel(r, "k_d", a.truth.params["k_d"])


def test_rotor_drag_needs_a_pose() -> None:
    """Without attitude or position the rotor drag is left out, with a note."""
    v = hexa_tilted()
    fl = kinematic_flight(v, seed=2, dur=12.0)
    fl = type(fl)(t=fl.t, acc=fl.acc, gyro=fl.gyro, cmd=fl.cmd, meta=fl.meta)
    r = tls.identify({"A": [fl]}, v, settings=tls.TlsSettings(**EXACT, yaw_moment=False))
    assert "k_rd" not in r.params
    assert any("rotor drag not modelled" in n for n in r.notes)


@pytest.mark.parametrize("moment", [0.0, 0.02])
def test_yaw_moment_absorbs_a_constant(moment: float) -> None:
    """A fully actuated hexarotor whose rotors leave a constant yaw moment M0 to the airframe
    (rigid-body yaw = rotor yaw + M0, as unequal rotors do at hover): with the nuisance every
    parameter is exact and the note reports M0; without it k_d and I_zz absorb it."""
    v = hexa_tilted()
    fl = kinematic_flight(v, seed=3, dur=12.0)
    mix = v.mixer(k_tau=TRUE["k_d"] / TRUE["k_t"])
    less = np.linalg.solve(mix, np.array([0, 0, 0, 0, 0, moment]))  # per-rotor thrust of the rotors' shortfall
    cmd = np.sqrt((TRUE["k_t"] * fl.cmd**2 - less) / TRUE["k_t"])
    fl = type(fl)(t=fl.t, acc=fl.acc, gyro=fl.gyro, cmd=cmd, pos=fl.pos, quat=fl.quat, meta=fl.meta)
    truth = _true_params(v)
    st = tls.TlsSettings(**EXACT, rotor_drag=False, band=(0, 8))
    r = tls.identify({"A": [fl]}, v, settings=st)
    for name in ("k_t", "k_d", "I_zz", "I_xx", "I_yy"):
        assert _rel(r, name, truth[name]) < 5e-3, name
    note = next(n for n in r.notes if n.startswith("constant yaw moment"))
    assert float(note.rsplit(": ", 1)[1].split()[0]) == pytest.approx(moment, abs=2e-4)
    off = tls.identify(
        {"A": [fl]}, v, settings=tls.TlsSettings(**EXACT, rotor_drag=False, band=(0, 8), yaw_moment=False)
    )
    if moment:
        assert _rel(off, "k_d", truth["k_d"]) > 0.02
    else:
        assert _rel(off, "k_d", truth["k_d"]) < 5e-3


def test_block_weighting_ignores_a_row_scale() -> None:
    """Scaling the moment rows by 1 / arm (to give force and moment rows one scale) leaves the
    block-weighted TLS solution unchanged: each block is divided by its own residual σ (Sec.
    III-B), which scales alike, so no such row scaling is needed."""
    v = hexa_tilted()
    fl = kinematic_flight(v, seed=4, dur=12.0, noise=(0.05, 0.005, 0.0, 0.0))
    st = tls.TlsSettings(**EXACT, rotor_drag=False, band=(0, 8))
    system = tls_problem.build_system(tls_problem.TlsProblem.of({"A": [fl]}, v, settings=st), {})
    w, blocks = system.w, system.blocks
    scaled = w * np.where(blocks % 6 >= 3, 1 / 0.3, 1.0)[:, None]
    fits = []
    for m in (w, scaled):
        wc, bc, counts = compress(m, blocks)
        fits.append(block_weighted_tls(wc, bc, np.ones(6), counts=counts)[0].x)
    np.testing.assert_allclose(fits[1], fits[0], rtol=1e-6)


def test_imu_delay_option() -> None:
    """--imu-delay: 'auto' is estimated (None), seconds pass, anything else is refused."""
    assert {"imu_delay", "yaw_moment", "rotor_drag"} <= set(method("tls").options)
    imu_delay = options_of(tls.TlsSettings)["imu_delay"].value
    assert imu_delay("auto") is None and imu_delay("AUTO") is None
    assert imu_delay("0.004") == 0.004 and imu_delay(0.002) == 0.002
    with pytest.raises(RotoridError, match="--imu-delay must be 'auto' or seconds"):
        imu_delay("4ms")
    assert tls.TlsSettings().imu_delay is None
