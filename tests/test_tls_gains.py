"""tls estimates each rotor's own thrust coefficient (`TlsSettings.rotor_gains`): recovered on a
simulated flight with ±5 % gains, honest on identical rotors, and the assumed spread where a
flight does not separate them (issue 11)."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.methods import tls
from rotorid.methods.tls import gains as tls_gains
from rotorid.methods.tls import problem as tls_problem
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle

#: The simulated IMU's axes and scale are the body's: these tests judge the rotors' gains alone.
IDEAL_IMU = {"imu_scale": 0.0, "imu_misalign": 0.0}


@pytest.fixture(scope="module")
def spread() -> scenarios.Scenario:
    """six-config-a-mismatch, 40 s: its rotors' gains 1 + U(-5 %, 5 %) (seed 2: -2.3, -3.4, +1.2,
    +4.5 % about their mean), with rotor drag, IMU biases and lag."""
    return scenarios.run("six-config-a-mismatch", seed=2, duration=40.0, flights=("train",))


@pytest.fixture(scope="module")
def equal() -> scenarios.Scenario:
    return scenarios.run("six-config-a", seed=2, duration=40.0, flights=("train",))


def _z(result, truth: dict[str, float], names: list[str]) -> dict[str, float]:
    return {k: (result.params[k].value - truth[k]) / result.params[k].std for k in names}


def test_unequal_rotors_gains_are_recovered_and_the_parameters_no_longer_assumed(spread) -> None:
    """Each k_t_mI within 0.3 % and 3σ of the simulator's (σ 0.05-0.3 %); k_t is their mean; no
    parameter rests on the assumed spread, and the rigid-body ones lie within 3σ; the identified
    vehicle carries them as its per-rotor thrust curve."""
    sc = spread
    r = tls.identify({"A": [sc.flights["train"]]}, sc.vehicle, settings=tls.TlsSettings(**IDEAL_IMU))
    tr = sc.truth.params
    rotors = [f"k_t_m{i}" for i in range(1, 5)]
    for k in rotors:
        e = r.params[k]
        assert e.value == pytest.approx(tr[k], rel=3e-3), k
        assert 5e-4 < e.std / e.value < 3e-3, k
    assert max(map(abs, _z(r, tr, rotors).values())) < 3.0
    assert np.mean([r.params[k].value for k in rotors]) == pytest.approx(r.params["k_t"].value, rel=1e-3)
    assert r.settings["rotor_gains"] is True
    assert any(n.startswith("rotor gains estimated") for n in r.notes)
    assert not any(e.assumed for e in r.params.values())
    rigid = ["k_t", "I_xx", "I_yy", "com_x", "com_y", "com_z"]
    assert max(map(abs, _z(r, tr, rigid).values())) < 3.0
    v = Vehicle.from_dict(r.vehicle)  # the identified vehicle flies the rotors' own coefficients
    assert v.thrust_exponents == (2,) and v.thrust_coeffs.ravel() == pytest.approx([r.params[k].value for k in rotors])


@pytest.mark.slow
def test_identical_rotors_give_gains_of_one_and_sigma_far_below_the_assumed_spreads(equal) -> None:
    """Identical rotors: every k_t_mI within 3σ of k_t (σ < 0.2 %), and the parameters the
    assumed spread dominated (com_x, com_y, I_xx, I_yy, k_t: σ 3-40x the flight's own) keep a
    σ between the flight's own (rotors declared equal, motor_spread 0) and half the
    assumed spread's, within 3σ of the truth (the benchmark has the 20-seed figures)."""
    sc = equal
    fl = {"A": [sc.flights["train"]]}
    r = tls.identify(fl, sc.vehicle, settings=tls.TlsSettings(**IDEAL_IMU))
    assumed = tls.identify(fl, sc.vehicle, settings=tls.TlsSettings(rotor_gains=False, **IDEAL_IMU))
    r0 = tls.identify(fl, sc.vehicle, settings=tls.TlsSettings(motor_spread=0.0, **IDEAL_IMU))
    tr = sc.truth.params
    for i in range(1, 5):
        e = r.params[f"k_t_m{i}"]
        assert abs(e.value - tr["k_t"]) < 3 * e.std and e.std / e.value < 2e-3, i
    assert "k_t_m1" not in r0.params and r0.settings["rotor_gains"] is False
    for k in ("com_x", "com_y", "I_xx", "I_yy", "k_t"):
        assert not r.params[k].assumed and assumed.params[k].assumed, k
        # 0.98: each fit's covariance carries the accelerometer bias's path at its own first moments
        assert 0.98 * r0.params[k].std < r.params[k].std < assumed.params[k].std / 2, k
        assert abs(r.params[k].value - tr[k]) < 3 * r.params[k].std, k


def test_gains_not_known_better_than_the_assumed_spread_fall_back_to_it(spread) -> None:
    """A spread assumed smaller than the flight can tell the gains (0.05 %): the gains are not
    reported, the spread is assumed as before (com labelled assumed), and a note says why."""
    sc = spread
    r = tls.identify(
        {"A": [sc.flights["train"]]}, sc.vehicle, settings=tls.TlsSettings(motor_spread=0.0005, **IDEAL_IMU)
    )
    assert "k_t_m1" not in r.params and r.settings["rotor_gains"] is False
    assert any("not separated by these flights" in n and "0.05 %" in n for n in r.notes)
    off = tls.identify(
        {"A": [sc.flights["train"]]},
        sc.vehicle,
        settings=tls.TlsSettings(motor_spread=0.0005, rotor_gains=False, **IDEAL_IMU),
    )
    for k, e in off.params.items():
        assert r.params[k].value == e.value and r.params[k].std == e.std, k


def test_gain_map_gives_each_rotors_coefficient() -> None:
    """`gains.gain_map`: [k_t, δ] -> k_t g_i (1 + η_i), the first configuration's last rotor taking
    -Σ δ (its mean kept), another configuration's every rotor free."""
    g = {"A": np.array([1.0, 0.9, 1.1]), "B": np.array([1.0, 1.2, 0.8])}
    m = tls_gains.gain_map(g)
    theta = np.array([2.0, 0.1, -0.2, 0.3, 0.0, -0.1])
    out = m @ theta
    assert out[:3] == pytest.approx([1.0 * 2.1, 0.9 * 1.8, 1.1 * 2.1])
    assert out[3:] == pytest.approx([1.0 * 2.3, 1.2 * 2.0, 0.8 * 1.9])


def test_gains_far_from_their_mean_or_too_uncertain_are_not_taken_as_measured() -> None:
    """`gains.unseparated_reason`: measured when every σ is below the assumed spread and every gain within
    `GAIN_PLAUSIBLE` spreads of the mean; else, or with a degenerate fit, the reason in words."""
    fit = None  # not read

    def gains(rel: list[float], sd: float) -> tls_problem.Gains:
        v = 2.0 * (1.0 + np.array(rel))
        return tls_problem.Gains(
            v,
            np.eye(4) * (2.0 * sd) ** 2,
            np.full(4, sd),
            tls_problem.System({}, {}, np.zeros(0), np.zeros(0), []),
            fit,
            np.zeros(0),
            {},
        )

    assert tls_gains.unseparated_reason(gains([0.04, -0.04, 0.02, -0.02], 0.002), 4, 0.03) == ""
    assert "σ up to 3.5 %" in tls_gains.unseparated_reason(gains([0.04, -0.04, 0.02, -0.02], 0.035), 4, 0.03)
    assert "a gain 100 % off their mean" in tls_gains.unseparated_reason(
        gains([-0.998, 1.0, -0.998, 0.996], 5e-4), 4, 0.03
    )
    assert "their fit is degenerate" in tls_gains.unseparated_reason(None, 4, 0.03)


def test_a_move_of_k_t_moves_every_rotors_coefficient_by_its_gain_times_it() -> None:
    """`pipeline._with_terms` on a fit of (k_t, I_xx) and one configuration's four rotors (gains
    1.02, 0.98, 1.01, 0.99; three gain unknowns): a term that moves k_t alone (variance s²)
    adds g gᵀ s² to the coefficients, one on a gain's unknown η_1 k_t adds it to rotor 1 with the
    opposite to rotor 4 (the first configuration keeps its mean), the checks' covariance of the
    coefficients is kept, and where the accelerometer bias is not separated a z offset's
    (ACC_BIAS_Z_SIGMA / g)² v vᵀ comes on top; the kept unknowns get the IMU's kept block."""
    from rotorid.frames import GRAVITY
    from rotorid.methods.assumptions import ACC_BIAS_Z_SIGMA
    from rotorid.methods.regression import Fit
    from rotorid.methods.tls.checks import Checked
    from rotorid.methods.tls.pipeline import _with_terms

    kt, g = 2e-6, np.array([1.02, 0.98, 1.01, 0.99])
    system = tls_problem.System({}, {}, np.zeros((0, 3)), np.zeros(0, dtype=int), ["k_t", "I_xx"])
    fit = Fit(np.array([kt, 0.02]), np.diag([1e-18, 1e-8]), np.zeros(0), 1.0, 1.0)
    gains = tls_problem.Gains(kt * g, np.eye(4) * 1e-20, np.zeros(4), system, fit, np.zeros(0), {}, (), {"A": g})
    sol = tls_problem.Solution(system, fit, [0, 1], np.ones(6), [], np.ones(6, bool), {}, np.zeros((2, 2)), gains)
    check = Checked(np.diag([2e-18, 1e-8]), {}, [], np.eye(4) * 3e-20)
    imu = np.zeros((5, 5))
    imu[0, 0], imu[2, 2], imu[1, 1] = 4e-18, 1e-18, 5e-9  # k_t, η_1 k_t, I_xx
    out, kept, coef = _with_terms(sol, check, imu, unseparated=False)
    e14 = np.array([1.0, 0.0, 0.0, -1.0])
    expected = 4e-18 * np.outer(g, g) + 1e-18 * np.outer(g * e14, g * e14)
    np.testing.assert_allclose(coef, expected, rtol=1e-12)
    np.testing.assert_allclose(out.gains.cov, np.eye(4) * 3e-20 + expected, rtol=1e-12)
    np.testing.assert_allclose(out.fit.cov, np.diag([6e-18, 1.5e-8]), rtol=1e-12)
    np.testing.assert_allclose(kept, imu[:2, :2])
    widened, *_ = _with_terms(sol, check, imu, unseparated=True)
    offset = (ACC_BIAS_Z_SIGMA / GRAVITY) ** 2 * np.outer(kt * g, kt * g)
    np.testing.assert_allclose(widened.gains.cov, out.gains.cov + offset, rtol=1e-12)
