"""Errors in variables in IDIM-TLS (`TlsSettings.eiv`): the noise floor read above the band is
the sensors' white noise, the propagated noise moment matches the noise the rows actually
carry, and the bias-compensated final fit removes the bias that noise gives TLS."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rotorid.methods import tls
from rotorid.methods.tls import lags as tls_lags
from rotorid.methods.tls import noise as tls_noise
from rotorid.methods.tls import pipeline as tls_pipeline
from rotorid.methods.tls import problem as tls_problem
from rotorid.methods.tls import rows as tls_rows
from rotorid.methods.tls import solve as tls_solve
from rotorid.motion import airborne_pieces
from rotorid.sim import scenarios
from test_tls_unit import _true_params, hexa_tilted, kinematic_flight

ACC, GYRO, POS, ANG = 0.05, 0.002, 3e-4, 1e-3

#: The simulator's IMU is ideal (no scale error or misalignment), and with identical rotors the
#: σ is the flight's own: the tests of that σ assume neither.
IDEAL_IMU = {"imu_scale": 0.0, "imu_misalign": 0.0}
OWN_SIGMA = {"motor_spread": 0.0, **IDEAL_IMU}


def test_noise_floor_reads_the_white_noise_level() -> None:
    v = hexa_tilted()
    p = airborne_pieces(kinematic_flight(v, seed=3, dur=60.0, noise=(ACC, GYRO, 0, 0)))[0]
    sd = np.sqrt(tls_noise.noise_floor(np.column_stack([p.gyro, p.acc]), p.rate, 45.0))
    np.testing.assert_allclose(sd, [GYRO] * 3 + [ACC] * 3, rtol=0.05)
    assert np.all(tls_noise.noise_floor(p.gyro[:, :1], p.rate, 0.46 * p.rate) == 0)  # no bin above 0.9 Nyquist


@pytest.mark.parametrize(
    ("source", "noise"), [("imu", (ACC, GYRO, 0, 0)), ("mocap", (0, 0, POS, ANG)), ("mocap", (0, 0, 0, ANG))]
)
def test_noise_moment_matches_the_noise_the_rows_carry(source: str, noise: tuple) -> None:
    """Each column's noise variance, and the correlations between columns: a motion-capture
    angle's noise reaches ω̇ (twice differentiated) and s (the attitude s is rotated by) at once,
    and the two are correlated (-0.75 for a flat band; the force rows' known column m s and the
    ω̇ columns of ms share it), which a model of independent channels put at zero."""
    v = hexa_tilted()
    noisy, clean = (kinematic_flight(v, seed=3, dur=60.0, noise=nz) for nz in (noise, (0, 0, 0, 0)))
    st = tls.TlsSettings(source=source, acc_bias=False)
    m = {"A": v.mass}
    noisy_problem = tls_problem.TlsProblem.of({"A": [noisy]}, v, m, settings=st)
    rows, resolved, wn, blocks, _ = tls_problem.build_system(noisy_problem, None)
    wc = tls_problem.build_system(tls_problem.TlsProblem.of({"A": [clean]}, v, m, settings=st), None).w
    dw = wn - wc  # the same trajectory: the rows' noise itself
    moment = tls_noise.noise_moment(noisy_problem, rows, resolved).total
    strong = 0
    for b in range(6):
        emp = dw[blocks == b].T @ dw[blocks == b] / np.sum(blocks == b)
        big = np.diag(emp) > 1e-3 * np.diag(emp).max()
        assert big.sum() >= 2
        np.testing.assert_allclose(np.diag(moment[b])[big], np.diag(emp)[big], rtol=0.2)
        assert np.all(np.diag(moment[b])[~big] <= 2e-3 * np.diag(emp).max())
        # correlations wherever the model puts noise (not the rotor-drag column's: left out, tiny)
        on = np.diag(moment[b]) > 1e-8 * np.diag(emp).max()
        sd_e, sd_m = np.sqrt(np.diag(emp)[on]), np.sqrt(np.diag(moment[b])[on])
        corr_e = emp[np.ix_(on, on)] / np.outer(sd_e, sd_e)
        corr_m = moment[b][np.ix_(on, on)] / np.outer(sd_m, sd_m)
        np.testing.assert_allclose(corr_m, corr_e, atol=0.1)
        strong += int(np.sum(np.abs(corr_e[np.triu_indices(on.sum(), 1)]) > 0.5))
    if noise == (0, 0, 0, ANG):  # the angles' noise in ω̇ and in s, correlated
        assert strong >= 6


def test_bias_compensated_fit_removes_the_errors_in_variables_bias() -> None:
    v = hexa_tilted()
    truth = _true_params(v)
    f = kinematic_flight(v, seed=1, dur=60.0, noise=(ACC, 0.01, 0, 0))
    z = {}
    for eiv in (False, True):
        res = tls.identify({"A": [f]}, v, settings=tls.TlsSettings(**OWN_SIGMA, eiv=eiv, essential=False))
        z[eiv] = {k: (e.value - truth[k]) / e.std for k, e in res.params.items() if k in truth}
    assert max(abs(x) for x in z[False].values()) > 20  # TLS: k_d, I_zz ~140σ off
    assert max(abs(x) for x in z[True].values()) < 3, z[True]


def _low_passed(x: np.ndarray, fs: float, sd: float, seed: int = 8) -> np.ndarray:
    """`x` plus noise of std `sd` (per sample, before the filter) low-passed at 30 Hz, as a
    sensor's or logger's filter leaves it."""
    from scipy.signal import butter, lfilter

    b, a = butter(2, 30.0, fs=fs)
    return x + lfilter(b, a, np.random.default_rng(seed).standard_normal(x.shape), axis=0) * sd


def test_floor_doubt_is_the_sampling_error_of_a_white_floor_and_the_step_of_a_low_passed_one() -> None:
    rng = np.random.default_rng(0)
    white = rng.standard_normal((12000, 3))
    d = tls_noise.floor_doubt(white, 200.0, 45.0)
    assert np.all((d > 0.005) & (d < 0.05)), d  # the floor's standard error, 2-3 %
    low = tls_noise.floor_doubt(_low_passed(0.1 * white, 200.0, 1.0), 200.0, 45.0)
    assert np.all(low > 2.0), low  # the spectrum at 22.5-45 Hz is several times the floor above


def test_a_floor_under_swept_vibration_is_half_the_quietest_level_above_the_band() -> None:
    """A rotor line swept over 45-90 Hz (where the floor is read, a 200 Hz log) 3x and 30x the
    white noise: the band's median read it as 4x and 224x the floor (the compensation then
    exceeded the signal); now the floor is half the white level of 15-26 Hz, the quietest part
    above the band, with a doubt of at least 1/sqrt(3); white noise alone, or low-passed, reads as
    before."""
    fs, n = 200.0, 12000
    t = np.arange(n) / fs
    line = np.cos(2 * np.pi * np.cumsum(67.5 + 22.5 * np.sin(2 * np.pi * 0.3 * t)) / fs)
    white = np.random.default_rng(0).standard_normal((n, 3))
    np.testing.assert_allclose(tls_noise.noise_floor(white, fs, 45.0), 1.0, atol=0.06)
    for amp in (3.0, 30.0):
        floor = tls_noise.noise_floor(white + amp * line[:, None], fs, 45.0)
        np.testing.assert_allclose(floor, 0.5, atol=0.05)
        assert np.all(tls_noise.floor_doubt(white + amp * line[:, None], fs, 45.0) >= 1.0 / np.sqrt(3.0))
    # a spectrum falling into the floor's band (a logger's low-pass, the real logs') is read as before: the median
    low = _low_passed(0.1 * white, fs, 1.0)
    median = tls_noise._band_level(tls_noise._spectrum(low, fs), 45.0, 90.0)[0] * fs / 2
    np.testing.assert_array_equal(tls_noise.noise_floor(low, fs, 45.0), median)


def test_a_vibrating_imu_gives_an_answer_within_its_sigma() -> None:
    """Frame vibration (4 m/s² per rotor at the rotor speed, a 65 Hz anti-alias filter, the IMU
    logged at 200 Hz) aliased over the band the floors are read in: the compensation subtracted
    ~300x the gyro's noise and tls refused ('the noise moment exceeds the signal'; seven of 30
    randomized-suite seeds). Now every parameter is within 3σ, k_t's σ 0.1 %."""
    sc = scenarios.run("six-config-a", seed=0, duration=20.0, vibration=4.0, aa_cutoff=65.0, flights=("train",))
    res = tls.identify({"A": [sc.flights["train"]]}, sc.vehicle, settings=tls.TlsSettings(**IDEAL_IMU))
    truth = sc.truth.params
    z = {k: (e.value - truth[k]) / e.std for k, e in res.params.items() if k in truth}
    assert len(z) == 15 and max(map(abs, z.values())) < 3.0, z
    assert res.params["k_t"].std < 2e-3 * truth["k_t"]


def test_a_floor_below_the_bands_noise_widens_sigma_and_is_said() -> None:
    """Gyro noise low-passed at 30 Hz: the floor read above 45 Hz is below the noise in the band,
    the compensation under-corrects I_zz (toward zero, 8.6σ of the fit's own σ before this
    term), and σ now carries the doubt: I_zz within 3σ, its σ several times the white-noise
    flight's, and a note says why; the white-noise flight's σ and notes are as before."""
    v = hexa_tilted()
    truth = _true_params(v)
    f = kinematic_flight(v, seed=1, dur=60.0, noise=(ACC, GYRO, 0, 0))
    st = tls.TlsSettings(**OWN_SIGMA, essential=False)
    white = tls.identify({"A": [f]}, v, settings=st)
    assert not [n for n in white.notes if "noise floors" in n]
    low = tls.identify({"A": [f.replace(gyro=_low_passed(f.gyro, f.rate, 0.004))]}, v, settings=st)
    (said,) = [n for n in low.notes if "noise floors" in n]
    assert "reads above 45 Hz: the spectrum just below is gyro" in said, said
    assert "I_zz" in " ".join(n for n in low.notes if n.startswith("σ includes the doubt")), low.notes
    e = low.params["I_zz"]
    assert abs(e.value - truth["I_zz"]) < 3 * e.std
    assert e.std > 3 * white.params["I_zz"].std


@pytest.fixture(scope="module")
def ab() -> tuple[dict, object, dict]:
    """Configurations A and B of the simulated six-config scenarios, 30 s each."""
    a = scenarios.run("six-config-a", seed=1, duration=30.0, flights=("train",))
    b = scenarios.run("six-config-b", seed=1, duration=30.0, flights=("train",))
    configs = {"A": [a.flights["train"]], "B": [b.flights["train"]]}
    return configs, a.vehicle, {"A": a.vehicle.mass, "B": b.vehicle.mass}


@pytest.fixture(scope="module")
def ab_identified(ab) -> tuple[tls_lags.Separated, object]:
    """`ab` identified with the flights' own σ, and what `solve_separated` found on the way: the
    fit inside for the first test below, the result for the second (one identification for
    both; the first solved the same problem again, ~7 s)."""
    configs, vehicle, masses = ab
    found = []

    def spy(problem):
        found.append(tls_lags.solve_separated(problem))
        return found[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tls_pipeline, "solve_separated", spy)
        r = tls.identify(configs, vehicle, masses={"B": masses["B"]}, settings=tls.TlsSettings(**OWN_SIGMA))
    (separated,) = found
    return separated, r


def test_the_moment_rows_use_the_bias_the_compensated_fit_finds(ab, ab_identified) -> None:
    """The accelerometer bias s - b of the moment rows' -[s]x ms is the bias-compensated fit's:
    what the final fit leaves in the force rows' means is nil. With the first pass's b (the
    paper's TLS, k_t biased by the sensor noise) it was -3.3e-3 m/s² in z, which scaled the
    first moments by 1 + Δb_z / g (com_x, com_y of configuration B 1.2-1.4 σ̄ off in every
    simulated flight)."""
    masses, sol = ab[2], ab_identified[0].solution
    x = np.zeros(len(sol.names))
    x[sol.kept] = sol.fit.x
    left = tls_rows.acc_bias_estimate(sol.rows, x, masses)
    assert max(float(np.abs(v).max()) for v in left.values()) < 1e-4, left


def test_the_first_moments_sigma_carries_the_accelerometer_bias_as_estimated(ab, ab_identified) -> None:
    """The moment rows' s - b holds the bias b the force rows give at the estimate, so the
    covariance has b's path in them (`_bias_profiled`): an error of k_t moves b_z and s - b
    alike, and the hover balance k_t Δu r = ms g no longer ties the first moments to k_t.
    Held at b's value, corr(k_t, ms_x@B) was 0.94 and σ of com_x, com_y of B 3-5x their
    scatter over 30 simulated flights; with the bias known (the paper's model, no bias column)
    their σ is the same as now, and k_t's, which the bias does widen, stays several times wider."""
    (configs, vehicle, masses), r = ab, ab_identified[1]
    st = tls.TlsSettings(**OWN_SIGMA)
    known = tls.identify(configs, vehicle, masses={"B": masses["B"]}, settings=replace(st, acc_bias=False))
    names, cov = r.diagnostics["names"], np.asarray(r.diagnostics["cov"])
    sd = np.sqrt(np.diag(cov))
    kt = names.index("k_t")
    for k in ("ms_x@B", "ms_y@B", "ms_x@A", "ms_y@A"):
        j = names.index(k)
        assert abs(cov[kt, j]) / (sd[kt] * sd[j]) < 0.3, k
        assert r.params[k].std < 1.3 * known.params[k].std, k
    assert r.params["k_t"].std > 3 * known.params["k_t"].std


@pytest.mark.slow
def test_the_first_moments_sigma_counts_the_accelerometer_noise_the_bias_estimate_removes() -> None:
    """The moment rows use s - b, b the force rows' mean residual per piece: the accelerometer's
    noise there is centred over the piece and sums to nothing, so it moves no first moment.
    Counted as a score it made σ of com_x, com_y of configuration B 12x their scatter on these
    flights without thrust noise (RMS error/σ 0.08 over 8 seeds); with the bias estimate's own
    influence in the scores (`_bias_scores`) 0.7."""
    z = []
    for seed in range(1, 9):
        a, b = (
            scenarios.run(f"six-config-{c}", seed=seed, duration=20.0, thrust_noise=0.0, flights=("train",))
            for c in "ab"
        )
        fl = {"A": [a.flights["train"]], "B": [b.flights["train"]]}
        r = tls.identify(fl, a.vehicle, masses={"B": b.vehicle.mass}, settings=tls.TlsSettings(**OWN_SIGMA))
        z += [(r.params[f"{k}@B"].value - b.truth.params[k]) / r.params[f"{k}@B"].std for k in ("com_x", "com_y")]
    assert 0.35 < np.sqrt(np.mean(np.square(z))) < 2.0, z


def test_the_thrust_noise_is_read_from_the_residuals_and_its_errors_in_variables_compensated() -> None:
    """Thrust noise (0.05 N per rotor, white at the simulator's 1 kHz) drives ω̇ with a torque
    the rotor terms do not hold: an error in the ω̇ columns no sensor floor shows. Its RMS in
    the band, read from the moment rows' residuals (`noise.disturbance_moment`), is the simulator's within
    10 % about each axis; compensated, I_xx and I_yy are within 1σ, left out they are 2.4-2.7σ
    low (-0.26 %, -0.28 %)."""
    from rotorid.sim.dynamics import Body

    tn, sc = 0.05, scenarios.run("six-config-a", seed=2, duration=40.0, thrust_noise=0.05, flights=("train",))
    fl, st = {"A": [sc.flights["train"]]}, tls.TlsSettings(**OWN_SIGMA)
    r = tls.identify(fl, sc.vehicle, settings=st)
    ms = replace(st.motion.at(200.0), band=tuple(r.settings["band"]), parallel_cutoff=r.settings["parallel_cutoff"])
    gain = np.sum(tls_noise.chain_responses(ms)[:, 3] ** 2)  # white ω̇ of unit variance per 200 Hz sample
    b = Body.from_vehicle(sc.true_vehicle).B[3:]
    true = np.sqrt(tn**2 * 1e-3 * 200.0 * gain * np.diag(b @ b.T))  # 1 kHz white noise's density at 200 Hz
    assert r.diagnostics["disturbance_rms"]["A"] == pytest.approx(true, rel=0.1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tls_solve, "disturbance_moment", lambda *args: args[-1])
        left = tls.identify(fl, sc.vehicle, settings=st)
    for k in ("I_xx", "I_yy"):
        z = [(x.params[k].value - sc.truth.params[k]) / x.params[k].std for x in (r, left)]
        assert abs(z[0]) < 1.0 and z[1] < -2.0, (k, z)


def test_a_thrust_noise_read_near_zero_keeps_its_doubt_finite() -> None:
    """Without thrust noise the level read from the residuals may be ~1e-20 of the torque's
    scale: a doubt relative to it (1e14 on this flight) moved the compensated fit without bound
    in `floor_var` and σ of I_xx@A, I_yy@B and com_x@B was 1.2-1.35 %, 40-160x the others'. The
    doubt is absolute (`NoiseMoment.moves`), and σ stays at the flight's own."""
    a, b = (scenarios.run(f"six-config-{c}", seed=5, duration=30.0, thrust_noise=0.0, flights=("train",)) for c in "ab")
    r = tls.identify(
        {"A": [a.flights["train"]], "B": [b.flights["train"]]},
        a.vehicle,
        masses={"B": b.vehicle.mass},
        settings=tls.TlsSettings(**OWN_SIGMA),
    )
    truth = {**{f"{k}@A": v for k, v in a.truth.params.items()}, **{f"{k}@B": v for k, v in b.truth.params.items()}}
    for k in ("I_xx@A", "I_yy@B", "com_x@B"):
        e = r.params[k]
        assert e.std < 1e-3 * abs(truth[k]), (k, e.std / abs(truth[k]))  # 0.04, 0.04, 0.007 %
        assert abs(e.value - truth[k]) < 3 * e.std, k


@pytest.mark.slow
def test_the_thrust_noise_doubt_is_the_levels_sampling_error_not_twice_it(monkeypatch) -> None:
    """Without thrust noise (another simulator may have none) the level `noise.thrust_noise` reads
    scatters about zero, half the flights at the bound; its doubt should be that scatter's size
    (√2 times the RMS for a normal read clipped at zero), not the axes' and the shapes' own
    sampling noise counted again on top of it: 2.9x the RMS before (6 flights of 30 s), 1.8x now."""
    reads = []
    real = tls_noise.thrust_noise

    def spy(*args, **kw):
        out = real(*args, **kw)
        reads.append(out[:2])
        return out

    monkeypatch.setattr(tls_noise, "thrust_noise", spy)
    last = []  # each flight's last read (the final selection's)
    for seed in range(6):
        sc = scenarios.run("six-config-a", seed=seed, duration=30.0, thrust_noise=0.0, flights=("train",))
        tls.identify({"A": [sc.flights["train"]]}, sc.vehicle, settings=tls.TlsSettings(**OWN_SIGMA))
        last.append(reads[-1])
    level, doubt = np.array(last).T
    ratio = doubt.mean() / np.sqrt(np.mean(level**2))
    assert 1.0 < ratio < 2.3, ratio


def test_the_diagnostics_carry_the_parameters_covariance() -> None:
    """`diagnostics["cov"]` is the covariance of `diagnostics["chi"]` (it was the rotor-spread
    part only, all zeros with `motor_spread` 0)."""
    v = hexa_tilted()
    r = tls.identify({"A": [kinematic_flight(v, seed=1, dur=30.0, noise=(ACC, GYRO, 0, 0))]}, v)
    names, cov = r.diagnostics["names"], r.diagnostics["cov"]
    for k in ("k_t", "I_xx", "ms_z"):
        j = names.index(k)
        assert np.sqrt(cov[j, j]) == pytest.approx(r.params[k].std, rel=1e-9), k
