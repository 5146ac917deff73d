"""Online method (Kwon et al.) on kwon-payload-mismatch (issue 11): the seeded regression of the
divergence found by the calibration benchmark, and its two causes.

Seed 19 (one of 4/30 that diverged): the 5 % rotor-gain spread times the scenario's k_tau of
1.43 m is a constant yaw moment of ~0.1 N m that eq. 10 has no column for. In the diagonal
x-y move the yaw row's gyroscopic regressors -p q and p q (J_xx, J_yy) are systematic, so the
RLS explained the constant moment as (J_yy - J_xx) p q, and the KF, predicting with that
inertia, fed the loop: J_xx ran to 55 kg m² (1100x). The gyro's 0.5 deg/s bias, above the
KF's σ, kept the correction law's x column active in hover (rows of α̂ noise without a moment)
and attenuated J by 20-40 % on every seed."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from rotorid.methods import online

SEED = 19
GYRO_BIAS = np.array([0.0087, -0.006, 0.004])  # scenarios._MISMATCH["gyro_bias"]
INERTIA = ("I_xx", "I_yy", "I_zz")
TRACK = 7e-4  # rad/s: the tracker's error stayed below 5e-4 on seeds 3 and 19, the flight's mean missed by 1e-3
IMU_DELAY = 0.004  # scenarios._MISMATCH["imu_delay"]


@functools.cache
def mismatch():
    from rotorid.sim import scenarios

    return scenarios.run("kwon-payload-mismatch", seed=SEED)


def _errors(settings: online.OnlineSettings) -> tuple[dict[str, float], dict[str, float]]:
    sc = mismatch()
    r = online.identify(sc.flights["trajectory"], sc.vehicle, settings)
    truth = sc.truth.params
    pct = {k: 100 * (r.params[k].value / truth[k] - 1) for k in INERTIA}
    z = {k: (r.params[k].value - truth[k]) / r.params[k].std for k in INERTIA}
    return pct, z


@pytest.mark.slow
def test_the_diverging_seed_stays_within_its_sigma() -> None:
    pct, z = _errors(online.OnlineSettings())
    for k in INERTIA:
        assert abs(pct[k]) < 8.0 and abs(z[k]) < 3.0, (k, pct[k], z[k])


def test_without_the_yaw_moment_column_the_inertia_diverges() -> None:
    """The streaming estimator (one run: the fixed-point passes re-run it from its own end,
    where the divergence is 17-23 %), on the paper's block means as found: the low-pass before
    them (`lowpass_hz`, the default since) damps the loop to I_xx +18 %, still wrong."""
    pct, _ = _errors(online.OnlineSettings(yaw_moment=0.0, fixed_point=False, lowpass_hz=0.0))
    assert max(abs(pct["I_xx"]), abs(pct["I_yy"])) > 1000.0, pct


def test_without_the_gyro_bias_the_inertia_is_attenuated() -> None:
    """As found, on the paper's block means (with the default low-pass I_xx is -4.3 %)."""
    pct, _ = _errors(online.OnlineSettings(gyro_bias=False, fixed_point=False, lowpass_hz=0.0))
    assert pct["I_xx"] < -15.0, pct


def test_gyro_bias_is_tracked_against_the_attitude() -> None:
    """The tracked bias follows the simulated one, constant plus its random walk (2e-4 rad/s/√s,
    ~1e-3 rad/s over 50 s): after the first second it stays within `TRACK` of the truth (the
    tracker's steady-state σ is √(K N) ≈ 1.5e-4 rad/s), where the flight's mean does not; the levels from the Allan
    variance are the scenario's (gyro_nd 0.006 deg/s/√Hz, gyro_rw), the gyro's 4 ms lag behind
    the attitude is found; no attitude, no estimate."""
    sc = mismatch()
    fl = sc.flights["trajectory"]
    gb = online.gyro_bias(fl)
    late = fl.t > fl.t[0] + 1.0
    st = sc.states["trajectory"]  # the bias the gyro carried: gyro - the true rate it sampled, over 1 s
    omega = np.column_stack([np.interp(fl.t - IMU_DELAY, st["t"], st["omega"][:, i]) for i in range(3)])
    k = 1000
    smooth = np.apply_along_axis(np.convolve, 0, fl.gyro - omega, np.ones(k) / k, "same")
    assert np.abs(gb.series - smooth)[late][k:-k].max() < TRACK
    assert np.abs(gb.series.mean(axis=0) - smooth)[late][k:-k].max() > TRACK  # the mean alone misses the walk
    assert gb.series[late].mean(axis=0) == pytest.approx(GYRO_BIAS, abs=1.5e-3)
    assert gb.white == pytest.approx(np.full(3, np.radians(0.006)), rel=0.15)
    assert gb.walk == pytest.approx(np.full(3, 2e-4), rel=0.35)
    assert gb.lag == pytest.approx(0.004, abs=1e-3)
    assert online.gyro_bias(fl.replace(quat=None)) is None
