"""IDIM-TLS on flights generated directly from rigid-body kinematics with known parameters
(no simulator): the observation matrix is exact for any rotor layout, IMU and mocap paths
agree, the block weighting converges to the inverse noise levels, and the
essential-parameter bookkeeping explains what it cancels."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest
from scipy.integrate import cumulative_trapezoid

from rotorid.errors import ExcitationError, MissingChannelError, RotoridError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY, body_to_world, bryant_rates, bryant_to_quat
from rotorid.methods import tls
from rotorid.methods.regression import block_weighted_tls
from rotorid.methods.tls import rows as tls_rows
from rotorid.motion import airborne_pieces
from rotorid.sim import scenarios
from rotorid.vehicle import Rotor, Vehicle

TRUE = {"k_t": 12.0, "k_d": 0.2, "ms": np.array([0.004, -0.002, -0.006]), "I": (0.017, 0.018, 0.029, 2e-4, -1e-4, 3e-4)}


def hexa_tilted(mass: float = 1.3) -> Vehicle:
    """A hexarotor whose rotors are tilted +-20 deg about their arms: full 6-DoF actuation,
    so every force row carries k_t (a layout the paper's eq. 9 does not cover)."""
    rotors = []
    for i in range(6):
        a = np.pi / 3 * i
        p = 0.3 * np.array([np.cos(a), np.sin(a), 0.0])
        tilt = np.radians(20.0) * (-1) ** i
        arm = p / np.linalg.norm(p)
        ax = np.cos(tilt) * np.array([0, 0, 1.0]) + np.sin(tilt) * np.cross(arm, [0, 0, 1.0])
        rotors.append(Rotor(position=p, axis=ax, torque_dir=(-1) ** i))
    return Vehicle(name="hexa-tilted", mass=mass, rotors=tuple(rotors), imu_offset=np.array([0.02, -0.01, 0.03]))


def kinematic_flight(
    v: Vehicle,
    seed: int = 0,
    dur: float = 30.0,
    fs: float = 200.0,
    noise: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0),
    up: int = 5,
    split: bool = False,
) -> Flight:
    """A flight whose pose follows random sines in Bryant angles; the rotor commands are the
    exact inverse dynamics (eq. 1-2, 9) for the parameters in TRUE. Noise std: accelerometer
    (m/s^2), gyro (rad/s), mocap position (m), mocap angles (rad). `split`: yaw only in the
    first half, roll and pitch only in the second (no yaw-pitch gyroscopic coupling)."""
    rng = np.random.default_rng(seed)
    tf = np.arange(int(dur * fs * up)) / (fs * up)
    n = 8
    f = rng.uniform(0.1, 1.2, (n, 3))
    a = np.array([0.12, 0.15, 0.15]) * rng.uniform(0.5, 1, (n, 3)) / n**0.5
    ph = rng.uniform(0, 2 * np.pi, (n, 3))
    arg = 2 * np.pi * f[None] * tf[:, None, None] + ph[None]
    w = 2 * np.pi * f
    eta = np.einsum("ki,tki->ti", a, np.sin(arg))
    eta_d = np.einsum("ki,tki->ti", a * w, np.cos(arg))
    eta_dd = -np.einsum("ki,tki->ti", a * w**2, np.sin(arg))
    if split:
        env = 0.5 * (1 - np.tanh(tf - dur / 2))[:, None] * [1.0, -1.0, -1.0] + [0.0, 1.0, 1.0]
        eta = eta * env
        eta_d = np.gradient(eta, tf, axis=0)
        eta_dd = np.gradient(eta_d, tf, axis=0)
    om, omd = bryant_rates(eta, eta_d, eta_dd)
    fz = rng.uniform(0.1, 1.0, 5)
    sz = np.sin(2 * np.pi * fz[None] * tf[:, None] + rng.uniform(0, 2 * np.pi, 5)) @ rng.uniform(0.2, 0.7, 5)
    m, ms = v.mass, TRUE["ms"]
    xx, yy, zz, xy, xz, yz = TRUE["I"]
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    extra = np.cross(omd, ms) + np.cross(om, np.cross(om, ms))
    mix = v.mixer(k_tau=TRUE["k_d"] / TRUE["k_t"])
    s = np.zeros((len(tf), 3))
    s[:, 2] = GRAVITY + sz
    if np.linalg.matrix_rank(mix) == 6:  # fully actuated: lateral specific force is free
        s[:, :2] = 0.3 * np.sin(2 * np.pi * np.outer(tf, [0.3, 0.45]))
    else:  # planar rotors: no lateral rotor force, eq. (1) fixes s_x, s_y
        s[:, :2] = -extra[:, :2] / m
    wrench = np.concatenate([m * s + extra, omd @ inertia.T + np.cross(om, om @ inertia.T) + np.cross(ms, s)], 1)
    thrust = np.linalg.lstsq(mix, wrench.T, rcond=None)[0].T
    assert thrust.min() > 0
    u = np.sqrt(thrust / TRUE["k_t"])
    q = bryant_to_quat(eta)
    vel = cumulative_trapezoid(body_to_world(q, s) + np.array([0, 0, -GRAVITY]), tf, axis=0, initial=0)
    pos = cumulative_trapezoid(vel, tf, axis=0, initial=0)
    r = v.imu_offset
    acc = s + np.cross(omd, r) + np.cross(om, np.cross(om, r))
    sl = slice(None, None, up)
    k = len(tf[sl])
    e = [x * rng.standard_normal((k, 3)) for x in noise]
    return Flight(
        t=tf[sl],
        acc=acc[sl] + e[0],
        gyro=om[sl] + e[1],
        cmd=u[sl],
        pos=pos[sl] + e[2],
        quat=bryant_to_quat(eta[sl] + e[3]),
        meta={"source": f"kinematic{seed}"},
    )


def _true_params(v: Vehicle) -> dict[str, float]:
    """TRUE in result names (inertia and first moments about the body origin, as TLS reports)."""
    ms, m = TRUE["ms"], v.mass
    out = {"k_t": TRUE["k_t"], "k_d": TRUE["k_d"], "k_tau": TRUE["k_d"] / TRUE["k_t"]}
    out |= {f"ms_{a}": ms[i] for i, a in enumerate("xyz")} | {f"com_{a}": ms[i] / m for i, a in enumerate("xyz")}
    return out | dict(zip(("I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz"), TRUE["I"], strict=True))


@pytest.mark.parametrize("layout", ["quad-plus", "quad-x", "hexa-tilted"])
@pytest.mark.parametrize("source", ["imu", "mocap"])
def test_idim_is_exact_for_any_layout(layout: str, source: str) -> None:
    """Noise-free data: the full 11-parameter TLS recovers every parameter (products of
    inertia included) for planar and tilted layouts, from the IMU or from the pose (the yaw pair
    k_d, k_tau, I_zz included: reported from the pose with the errors-in-variables compensation)."""
    v = hexa_tilted() if layout == "hexa-tilted" else Vehicle.preset(layout, arm=0.225, mass=1.285)
    v = v.replace(imu_offset=np.array([0.02, -0.01, 0.03]))
    fl = kinematic_flight(v, seed=1, dur=12.0)
    r = tls.identify({"A": [fl]}, v, settings=tls.TlsSettings(source=source, essential=False, band=(0, 8)))
    truth = _true_params(v)
    for k, tv in truth.items():
        rel = 2e-3 if source == "imu" else 5e-3  # mocap: twice-differentiated pose
        tol = rel * (
            abs(tv) if k in ("k_t", "k_d", "k_tau", "I_xx", "I_yy", "I_zz") else 0.05 * (1 + 3 * (source == "mocap"))
        )
        assert r.params[k].value == pytest.approx(tv, abs=tol), k


def test_imu_lever_arm_is_removed() -> None:
    """Ignoring a 5 cm IMU offset biases the inertia; accounting for it does not. (Equal rotors,
    the paper's model: with the rotors' gains free, `TlsSettings.rotor_gains`, they absorb part
    of the ignored offset, k_t -2.3 % with a σ of 2 %, and ms_z moves only 0.6 %.) The ignored
    offset's in-plane specific force is left unexplained by the force rows and held-out segments
    give it a height of its own (`checks.air_force`), which takes the lever arm it had on ms_z
    (1.1 % off; ~10 % at the origin): the force rows' error still shows it."""
    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285).replace(imu_offset=np.array([0.05, 0.0, 0.0]))
    fl = kinematic_flight(v, seed=2, dur=12.0)
    st = tls.TlsSettings(essential=False, band=(0, 8), rotor_gains=False)
    good = tls.identify({"A": [fl]}, v, settings=st)
    bad = tls.identify({"A": [fl]}, v.replace(imu_offset=np.zeros(3)), settings=st)
    tv = _true_params(v)["ms_x"]
    assert good.params["ms_x"].value == pytest.approx(tv, abs=1e-4)
    err = lambda r, k: abs(r.params[k].value / _true_params(v)[k] - 1)
    assert err(good, "ms_z") < 0.01
    assert any("acts at a height of its own" in n for n in bad.notes), bad.notes
    fz = lambda r: r.diagnostics["configs"]["A"]["rel_error_norm_pct"]["F_z"]
    assert fz(bad) > 100 * fz(good)


def test_weighting_converges_to_inverse_noise() -> None:
    """Two row blocks with iid errors of std 0.02 and 0.2 in every column: the fixed point
    weights them ~10:1 and the weighted TLS is closer to the truth than the unweighted."""
    rng = np.random.default_rng(3)
    n = 4000
    a = rng.standard_normal((2 * n, 2))
    x = np.array([2.0, -1.0])
    clean = np.column_stack([a, -(a @ x)])
    sd = np.repeat([0.02, 0.2], n)[:, None]
    w = clean + sd * rng.standard_normal(clean.shape)
    blocks = np.repeat([0, 1], n)
    fit, scale = block_weighted_tls(w, blocks)
    assert scale[0] / scale[1] == pytest.approx(10.0, rel=0.1)
    plain = block_weighted_tls(w, blocks, max_iter=0)[0]
    assert np.linalg.norm(fit.x - x) < 0.5 * np.linalg.norm(plain.x - x)


def test_combined_assembly_shares_only_chi_k() -> None:
    """Eq. (25): configuration blocks are zero outside their own chi, chi_k and the hub drags (rotor
    drag, rotor inflow) are shared, the known column is each configuration's mass times W_m, and
    k_w scales a configuration's rows."""
    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285)
    fl = kinematic_flight(v, seed=4, dur=6.0)
    rows, _ = tls.idim_rows([fl], v, tls.TlsSettings(band=(0, 8), rotor_inflow=True))
    w, blocks, names = tls.assemble({"A": rows, "B": rows}, {"A": 1.0, "B": 2.0})
    n = len(rows.t)
    assert (
        names[:4] == ["k_t", "k_d", "ms_x@A", "ms_y@A"]
        and names[-3:] == ["I_yz@B", "k_rd", "k_in"]
        and len(names) == 22
    )
    a_rows, b_rows = w[: 6 * n], w[6 * n :]
    assert not a_rows[:, 11:20].any() and not b_rows[:, 2:11].any()
    np.testing.assert_allclose(b_rows[:, [0, 1, 20, 21]], a_rows[:, [0, 1, 20, 21]])  # chi_k and the hub drags
    assert np.any(a_rows[:, 21])
    np.testing.assert_allclose(b_rows[:, -1], 2.0 * a_rows[:, -1])
    assert set(blocks[: 6 * n]) == set(range(6)) and set(blocks[6 * n :]) == set(range(6, 12))


def test_symmetric_vehicle_cancels_k_d_with_reason() -> None:
    """A symmetric vehicle (I_xx = I_yy, ms = 0): the yaw row only fixes I_zz / k_d (eq. 23),
    so k_d is cancelled with the paper's explanation and advice; the yaw rows then leave the
    fit, and I_zz rests on the gyroscopic terms of the roll/pitch rows (here the short overlap
    of yaw and roll/pitch motion), which still pin it within 3 %, while I_xx = I_yy stay exact."""
    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285)
    saved = dict(TRUE)
    try:
        TRUE.update(ms=np.zeros(3), I=(0.017, 0.017, 0.029, 0.0, 0.0, 0.0))
        fl = kinematic_flight(v, seed=5, dur=20.0, noise=(0.05, 0.003, 0, 0), split=True)
    finally:
        TRUE.update(saved)
    r = tls.identify(
        {"A": [fl]}, v, settings=tls.TlsSettings(band=(0, 5), motor_spread=0.0, imu_scale=0.0, imu_misalign=0.0)
    )  # equal rotors, ideal IMU
    o = r.observability["k_d"]
    assert o["identifiable"] is False and "eq. 23" in o["reason"] and "--config-b" in o["advice"]
    assert "k_d" not in r.params and "k_tau" not in r.params and r.settings["rows_fitted"]["A"][-1] == "M_y"
    assert r.observability["I_zz"]["source"].startswith("gyroscopic")
    assert r.params["I_zz"].value == pytest.approx(0.029, rel=0.03)
    assert r.params["I_xx"].value == pytest.approx(0.017, rel=0.005) and r.params["I_yy"].value == pytest.approx(
        0.017, rel=0.005
    )
    kt = r.params["k_t"]  # the bias nuisance leaves k_t only the thrust variation (`TlsSettings.acc_bias`)
    assert abs(kt.value - TRUE["k_t"]) < 3 * kt.std < 0.005 * TRUE["k_t"]
    assert any("configuration B" in n for n in r.notes) and any("yaw-moment rows" in n for n in r.notes)


def test_bad_input_is_explained() -> None:
    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285)
    fl = kinematic_flight(v, seed=6, dur=4.0)
    with pytest.raises(MissingChannelError, match="acc"):
        tls.identify({"A": [fl.replace(acc=None)]}, v)
    with pytest.raises(RotoridError, match="mass for configuration"):
        tls.identify({"A": [fl], "B": [fl]}, v)
    with pytest.raises(RotoridError, match="--band"):
        tls.identify({"A": [fl]}, v, settings=tls.TlsSettings(band=(5, 2)))
    with pytest.raises(RotoridError, match="--cancel-z must be positive"):
        tls.identify({"A": [fl]}, v, settings=tls.TlsSettings(cancel_z=0.0))
    with pytest.raises(RotoridError, match="airborne piece"):
        tls.identify({"A": [fl.window(0.0, 1.0)]}, v)
    with pytest.raises(RotoridError, match="has 6 rotors"):
        tls.identify({"A": [fl]}, hexa_tilted())


def test_landed_samples_are_left_out() -> None:
    """Samples flagged `landed` (ground contact forces the IDIM does not model) split the
    flight into airborne pieces; corrupting them changes nothing."""
    v = Vehicle.preset("quad-plus", arm=0.225, mass=1.285)
    fl = kinematic_flight(v, seed=7, dur=12.0)
    landed = (fl.t < 3.0) | (fl.t > 9.0)
    junk = fl.replace(acc=np.where(landed[:, None], 0.0, fl.acc), landed=landed)
    st = tls.TlsSettings(essential=False, band=(0, 8), imu_delay=0.0)
    ref = tls.identify({"A": [fl.window(3.0 + 0.5 / 200, 9.0 - 0.5 / 200)]}, v, settings=st)
    got = tls.identify({"A": [junk]}, v, settings=st)
    for k in ("k_t", "k_d", "I_xx", "I_yy", "I_zz"):  # the pieces' ends differ by a sample: filter edges
        assert got.params[k].value == pytest.approx(ref.params[k].value, rel=1e-4), k
    assert got.params["k_t"].value == pytest.approx(TRUE["k_t"], rel=1e-3)


def test_memo_reuses_the_motion_columns_exactly() -> None:
    """`idim_rows` with a memo: a change of the rotor side only (gains, IMU lag, the pose's lag of
    the drag velocity) gives exactly the rows of a fresh call; another accelerometer bias
    refilters only the columns the specific force enters."""
    sc = scenarios.run("six-config-a", seed=0, duration=10.0, rotor_drag=0.3, flights=("train",))
    fl, v = [sc.flights["train"]], sc.vehicle
    st = tls.TlsSettings(mocap_delay=0.005, imu_delay=0.002)
    memo: dict = {}
    tls.idim_rows(fl, v, st, memo=memo)
    n = len(airborne_pieces(fl[0]))
    kept = memo[tls_rows._KEPT]
    assert len(memo) == n + 1 and len(kept) == 2 * n  # per piece: the motion; the force's and the rotors' kept
    moved = replace(st, imu_delay=0.004, mocap_delay=0.007)
    for gain in (None, np.array([1.02, 0.99, 1.0, 0.97])):
        fresh = tls.idim_rows(fl, v, moved, gain=gain)[0]
        reused = tls.idim_rows(fl, v, moved, gain=gain, memo=memo)[0]
        assert fresh.drag is not None
        for f in fields(fresh):
            a, b = getattr(fresh, f.name), getattr(reused, f.name)
            assert (a is None) == (b is None), f.name
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=f.name)
    forces = sum(k[0] == "force" for k in kept)
    tls.idim_rows(fl, v, st, acc_bias=np.full((n, 3), 0.1), memo=memo)
    assert len(memo) == n + 1 and sum(k[0] == "force" for k in kept) == forces + n  # only the force's anew


def test_memo_keys_the_body_drag() -> None:
    """`idim_rows` with a memo, one thing of the body drag changed a call (form, IMU lag, pose lag,
    coefficients removed from the specific force, scale): exactly the rows of a fresh call, so
    the memo's keys name everything its columns depend on."""
    sc = scenarios.run("six-config-a", seed=0, duration=10.0, rotor_drag=0.3, flights=("train",))
    fl, v = [sc.flights["train"]], sc.vehicle
    body = np.array([0.02, -0.01, 0.03])
    calls = [
        ("linear", 0.002, 0.005, body, 2.5),
        ("quadratic", 0.002, 0.005, body, 2.5),
        ("quadratic", 0.004, 0.005, body, 2.5),
        ("quadratic", 0.004, 0.007, body, 2.5),
        ("quadratic", 0.004, 0.007, 2 * body, 2.5),
        ("quadratic", 0.004, 0.007, None, 2.5),
        ("quadratic", 0.004, 0.007, None, 1.0),
    ]
    memo: dict = {}
    for form, lag, pose, removed, scale in calls:
        st = tls.TlsSettings(mocap_delay=pose, imu_delay=lag, body_drag=form, body_scale=scale)
        fresh = tls.idim_rows(fl, v, st, body=removed)[0]
        reused = tls.idim_rows(fl, v, st, body=removed, memo=memo)[0]
        assert fresh.body is not None and fresh.drag is not None
        for f in fields(fresh):
            a, b = getattr(fresh, f.name), getattr(reused, f.name)
            assert (a is None) == (b is None), f.name
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=f"{f.name} after {form, lag, pose, scale}")


def test_no_jackknife_where_leaving_a_piece_out_empties_a_configuration(monkeypatch) -> None:
    """Two configurations of one airborne piece each (a calibration flight pair): leaving either
    out leaves its configuration's unknowns without a row (with the rotors' gains estimated the
    fold's fit crashed on it), so the flights' disagreement is not measured and σ stays; with two
    pieces in each it is."""
    from types import SimpleNamespace

    from rotorid.methods.tls import checks

    def rows(n_pieces: int) -> SimpleNamespace:
        return SimpleNamespace(piece=np.repeat(np.arange(n_pieces), 3), t=np.zeros(3 * n_pieces))

    called = []
    monkeypatch.setattr(checks, "jackknife", lambda *a: called.append(a) or (_ for _ in ()).throw(ExcitationError("x")))
    cov = np.eye(2)
    sol = SimpleNamespace(rows={"A": rows(1), "B": rows(1)}, gains=None, kept=[0, 1], w=None, noise=None)
    assert checks._disagreement(None, sol, cov, None) == (cov, None, []) and not called
    sol.rows = {"A": rows(2), "B": rows(2)}
    sol.blocks = sol.active = sol.scale = None
    assert checks._disagreement(None, sol, cov, None) == (cov, None, []) and called
