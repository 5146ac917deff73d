"""The zero-phase filter a block at a time (`signal.filtfilt_blocks`) and the TLS rows built
with it equal the one-shot filter of the whole signal, wherever the blocks are cut."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rotorid.methods import tls
from rotorid.methods.tls import rows as tls_rows
from rotorid.methods.tls import solve as tls_solve
from rotorid.motion import airborne_pieces, motion
from rotorid.signal import butter_filtfilt, butter_sos, filtfilt_blocks
from rotorid.sim import scenarios


def _blocked(x: np.ndarray, sos: np.ndarray, block: int, keep: bool = False) -> np.ndarray:
    out = np.full_like(x, np.nan)
    seen = []
    for a, y in filtfilt_blocks(sos, lambda a, b: x[a:b], len(x), block, forward=out if keep else None):
        out[a : a + len(y)] = y
        seen.append(a)
    assert seen == sorted(seen, reverse=True)  # from the last block to the first
    return out


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 400),
    block=st.integers(1, 450),
    band=st.sampled_from([15.0, 40.0, (0.5, 20.0), (3.0, 60.0)]),
    order=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    keep=st.booleans(),
)
def test_blocks_equal_the_one_shot_filter(n, block, band, order, seed, keep):
    """Any length (shorter than the odd extension too), block size and filter, the forward
    pass re-run per block or kept in the output array (`keep`): the blocks reproduce
    sosfiltfilt's numbers, odd extension and initial states included."""
    x = np.random.default_rng(seed).standard_normal((n, 3)).cumsum(axis=0)
    sos = butter_sos(200.0, band, order)
    ref = butter_filtfilt(x, 200.0, band, order)
    np.testing.assert_allclose(_blocked(x, sos, block, keep), ref, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def six():
    return scenarios.run("six-config-a", seed=3, duration=8.0)


def _one_shot_rows(flight, vehicle, st_: tls.TlsSettings) -> np.ndarray:
    """The rows as the method built them before blocks: motion -> observation of the whole
    piece -> `butter_filtfilt` of the (N, 72) matrix -> every d-th sample (test reference)."""
    (p,) = airborne_pieces(flight)
    ms = st_.motion.at(p.rate)
    mo = motion(p, vehicle, ms)
    dk, d, dm = tls.observation(mo, vehicle)
    n = len(p.t)
    cols = butter_filtfilt(np.concatenate([dk.reshape(n, -1), d.reshape(n, -1), dm], 1), ms.fs, ms.parallel_cutoff)
    keep = np.flatnonzero((p.t >= p.t[0] + ms.trim) & (p.t <= p.t[-1] - ms.trim))
    sel = keep[np.round(p.t[keep] * ms.fs).astype(np.int64) % st_.decimation(ms) == 0]
    return cols[sel]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block=st.one_of(st.integers(1, 40), st.integers(41, 1700)), source=st.sampled_from(["imu", "mocap"]))
def test_idim_rows_do_not_depend_on_the_blocks(six, block, source):
    """Blocks of 1 row, of a prime number of rows, cutting just inside the trim or the
    decimation grid, or longer than the flight: the same rows as the one-shot filter."""
    st_ = tls.TlsSettings(source=source, tm=0.01, acc_bias=False, yaw_moment=False)  # the rows before any centring
    ref = _one_shot_rows(six.flights["train"], six.vehicle, st_)
    with mock.patch.object(tls_rows, "block_rows", lambda n: block):
        rows, _ = tls.idim_rows([six.flights["train"]], six.vehicle, st_)
    got = np.concatenate([rows.dk.reshape(len(rows.t), -1), rows.d.reshape(len(rows.t), -1), rows.dm], 1)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_idim_rows_memory_does_not_hold_the_full_rate_matrix(six):
    """Peak traced memory of the rows of a 60 s 1 kHz piece stays far below one copy of the
    full-rate (N, 72) matrix (N x 576 B), which the one-shot filter held several times."""
    f = six.flights["train"].resample(1000.0)
    reps = 8  # 64 s of flight at 1 kHz from the 8 s simulation, continuous in time
    t = f.t[0] + np.arange(reps * len(f.t)) * 1e-3
    tiled = {c: np.tile(getattr(f, c), (reps, 1)) for c in ("acc", "gyro", "cmd", "rotor_speed")}
    long = replace(f, t=t, quat=None, pos=None, **tiled)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        rows, _ = tls.idim_rows([long], six.vehicle, tls.TlsSettings())
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(rows.t) == pytest.approx(64_000 / 33, abs=20)  # one row per 33 ms (15 Hz cut-off)
    assert peak / len(t) < 300  # bytes per input row; the one-shot filter took ~2,900


def test_identify_runs_blas_on_one_thread(six, monkeypatch):
    """The TLS regressions run with BLAS on one thread (a second only spin-waits on these
    tall, skinny matrices) and the caller's setting is restored afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen, real = [], tls.essential

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(tls_solve, "essential", spy)
    with threadpool_limits(limits=2, user_api="blas"):  # as on a 2-core machine, whatever this one has
        tls.identify({"A": [six.flights["train"]]}, six.vehicle)
        assert blas_threads() == {2}
    assert seen and all(s == {1} for s in seen)


@pytest.mark.parametrize("lag", [0.0, 0.0037, -0.0121, 0.025])
@pytest.mark.parametrize("uniform", [True, False])
def test_rotor_side_by_blocks_equals_the_whole_piece(lag, uniform):
    """`_Rotor.rows` (rotor gains and the IMU lag's interpolation, a block of rows at a time, with
    the ground-effect factor read alike) gives exactly the numbers of scaling and interpolating the whole piece, at the piece's
    ends (clamped) and anywhere between, for lags either way and jittered time stamps."""
    rng = np.random.default_rng(11)
    n = 3000
    t = np.arange(n) / 200.0 if uniform else np.cumsum(rng.uniform(0.004, 0.006, n))
    u, vel, gain = rng.uniform(0.3, 0.9, (n, 4)), rng.standard_normal((n, 3)), np.array([1.01, 0.98, 1.0, 1.02])
    scaled, tq = u * np.sqrt(gain), t - lag
    whole_u = np.column_stack([np.interp(tq, t, c) for c in scaled.T]) if lag else scaled
    whole_v = np.column_stack([np.interp(tq, t, c) for c in vel.T]) if lag else vel
    ground = 1.0 + rng.uniform(0.0, 0.1, (n, 4))
    whole_g = np.column_stack([np.interp(tq, t, c) for c in ground.T]) if lag else ground
    rotor = tls_rows.Rotor(t, u, vel, None, gain, lag, ground=ground)
    for a, b in [(0, 1), (0, 7), (1, 2), (5, 400), (399, 1201), (2990, n), (n - 1, n), (0, n)]:
        got_u, got_v, got_g = rotor.rows(a, b)
        assert np.array_equal(got_u, whole_u[a:b]) and np.array_equal(got_v, whole_v[a:b]), (a, b)
        assert np.array_equal(got_g, whole_g[a:b]), (a, b)


@pytest.mark.parametrize("source", ["imu", "mocap"])
def test_body_rate_is_the_motions(six, source):
    """`motion.body_rate` (the rotor drag's body rate when the memo spares the motion) is the
    motion's omega, exactly."""
    from rotorid.motion import MotionSettings, body_rate

    (p,) = airborne_pieces(six.flights["train"])
    ms = MotionSettings(source=source, mocap_delay=0.004).at(p.rate)
    np.testing.assert_array_equal(body_rate(p, ms), motion(p, six.vehicle, ms).omega)


def test_identify_memory_per_row(six):
    """Peak traced memory of a whole identification (IMU-lag search, bias passes, noise moment,
    gain spread) on 64 s of 1 kHz flight stays under 300 B per input row (issue 14 goal 4; 612
    before the motion, the rotor side and the noise Jacobians were taken a block at a time)."""
    f = six.flights["train"].resample(1000.0)
    reps = 8
    t = f.t[0] + np.arange(reps * len(f.t)) * 1e-3
    tiled = {c: np.tile(getattr(f, c), (reps, 1)) for c in ("acc", "gyro", "cmd", "rotor_speed")}
    long = replace(f, t=t, quat=None, pos=None, vel=None, **tiled)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tls.identify({"A": [long]}, six.vehicle)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak / len(t) < 300, peak / len(t)


def test_memo_gives_the_numbers_of_a_fresh_build(six):
    """Rows built through one identification's memo (`idim_rows`: the motion columns, the
    specific force's per accelerometer bias, the rotor side's per lag and gains, evicted past
    `KEPT_BYTES`) equal rows built afresh, bit for bit, whatever the order of lags, gains and
    biases asked and however small the memo's bound."""
    flights, vehicle = [six.flights["train"]], six.vehicle
    b1, b2 = np.array([[0.05, -0.02, 0.3]]), np.array([[-0.01, 0.04, -0.2]])
    g1, g2 = np.array([1.02, 0.97, 1.0, 1.01]), np.array([0.0, 1.0, 0.0, 0.0])
    asks = [(0.0, None, None), (0.004, None, b1), (0.0, g1, b1), (-0.003, g2, None), (0.0, np.ones(4), b2)]
    for bound in (tls_rows.KEPT_BYTES, 1):
        memo: dict = {}
        with mock.patch.object(tls_rows, "KEPT_BYTES", bound):
            for lag, gain, bias in asks + asks[::-1]:
                st_ = tls.TlsSettings(imu_delay=lag)
                kept, _ = tls.idim_rows(flights, vehicle, st_, bias, gain, memo)
                fresh, _ = tls.idim_rows(flights, vehicle, st_, bias, gain)
                assert kept.drag is not None
                for name in ("dk", "d", "dm", "drag", "force_mean", "yaw_mean"):
                    assert np.array_equal(getattr(kept, name), getattr(fresh, name)), (bound, lag, name)


def test_k_t_rows_alone_give_the_k_t_column_of_a_whole_build(six):
    """`gains.gain_columns`' shortcut: rows with the k_t column alone (`idim_rows`' `kt_only`: no
    motion, no rotor drag, no other D_k column filtered) give `assemble`'s column 0, its row
    blocks and the force rows' removed k_t means of the whole build, bit for bit, for one rotor's
    gain, a lag and an accelerometer bias; every other column is zero."""
    flights, vehicle = [six.flights["train"]], six.vehicle
    bias, gain = np.array([[0.05, -0.02, 0.3]]), np.array([0.0, 1.03, 0.0, 0.0])
    for lag in (0.0, -0.004):
        st_ = tls.TlsSettings(imu_delay=lag)
        whole, _ = tls.idim_rows(flights, vehicle, st_, bias, gain, {})
        alone, _ = tls.idim_rows(flights, vehicle, st_, bias, gain, {}, kt_only=True)
        w, blocks, _ = tls_rows.assemble({"A": whole}, {"A": vehicle.mass})
        column, kt_blocks = tls_rows.kt_column({"A": alone})
        assert np.any(column != 0.0)
        assert np.array_equal(column, w[:, 0]) and np.array_equal(kt_blocks, blocks), lag
        assert np.array_equal(alone.force_mean[:, :, 0], whole.force_mean[:, :, 0]), lag
        assert not np.any(alone.dk[:, :, 1]) and not np.any(alone.d) and not np.any(alone.drag), lag
