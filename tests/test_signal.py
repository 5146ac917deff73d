"""Unit tests of the shared signal tools against direct recursions and analytic results."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.signal import (
    CHUNK,
    _row_max,
    asymmetric_lag,
    butter_filtfilt,
    derivative,
    derivative_blocks,
    motor_lag,
    motor_lag_asymmetric,
)


def _lag_reference(u, t, tm_rise, tm_fall):
    """The first-order lag as the obvious per-sample loop (test reference only)."""
    y = np.empty_like(u)
    y[0] = u[0]
    for k in range(1, len(t)):
        dt = t[k] - t[k - 1]
        a = np.where(u[k - 1] > y[k - 1], np.exp(-dt / tm_rise), np.exp(-dt / tm_fall))
        y[k] = a * y[k - 1] + (1 - a) * u[k - 1]
    return y


@pytest.mark.parametrize("uniform", [True, False])
def test_motor_lag_matches_recursion(uniform):
    rng = np.random.default_rng(1)
    n = 5000
    t = np.arange(n) * 1e-3 if uniform else np.cumsum(rng.uniform(2e-4, 2e-3, n))
    u = rng.random((n, 4))
    y = motor_lag(u, t, 0.04)
    np.testing.assert_allclose(y, _lag_reference(u, t, 0.04, 0.04), atol=1e-11)


def test_motor_lag_long_log_stays_finite():
    """The chunked closed form must not overflow for t/T_m in the tens of thousands."""
    rng = np.random.default_rng(2)
    t = np.cumsum(rng.uniform(5e-4, 1.5e-3, 200_000))
    u = rng.random((len(t), 2))
    y = motor_lag(u, t, 0.01)
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y[-2000:], _lag_reference(u[-3000:], t[-3000:], 0.01, 0.01)[-2000:], atol=1e-9)


@pytest.mark.parametrize("uniform", [True, False])
def test_motor_lag_blocks_join_exactly(uniform):
    """Longer than two blocks, with a slow lag (blocks end at `CHUNK` rows, not at S = 500)."""
    rng = np.random.default_rng(4)
    n = 2 * CHUNK + 7
    t = np.arange(n) * 1e-3 if uniform else np.cumsum(rng.uniform(5e-4, 1.5e-3, n))
    u = rng.random((n, 3))
    np.testing.assert_allclose(motor_lag(u, t, 0.5), _lag_reference(u, t, 0.5, 0.5), atol=1e-11)


@pytest.mark.parametrize("uniform", [True, False])
def test_motor_lag_memory_is_its_output_plus_blocks(uniform):
    """Peak memory of one lag: the (N, M) output, the step array and a few blocks — not
    several (N, M) temporaries (which a long flight pays on every T_m evaluation)."""
    import tracemalloc

    rng = np.random.default_rng(5)
    n = 400_000
    t = np.arange(n) * 1e-3 if uniform else np.cumsum(rng.uniform(5e-4, 1.5e-3, n))
    u = rng.random((n, 4))
    tracemalloc.start()
    try:
        motor_lag(u, t, 0.4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < u.nbytes + 2 * t.nbytes + 10 * CHUNK * u.shape[1] * 8, peak / n


def test_motor_lag_step_response_is_exponential():
    t = np.arange(0, 1, 1e-3)
    u = np.where(t > 0.1, 1.0, 0.0)
    y = motor_lag(u, t, 0.07)
    k = np.searchsorted(t, 0.1 + 0.07) + 1
    assert y[k] == pytest.approx(1 - np.exp(-1), abs=2e-3)


def test_asymmetric_lag_matches_recursion():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(5e-4, 1.5e-3, 4000))
    u = rng.random((len(t), 4))
    np.testing.assert_allclose(motor_lag_asymmetric(u, t, 0.02, 0.09), _lag_reference(u, t, 0.02, 0.09), atol=1e-11)


def test_asymmetric_lag_warm_start_is_bit_identical(monkeypatch):
    """Started from another pair's branches, or from random ones, the fixed point is the same
    to the last bit (it is unique), in fewer passes from nearby constants."""
    import rotorid.signal as sig

    rng = np.random.default_rng(5)
    t = np.cumsum(rng.uniform(5e-4, 1.5e-3, 4000))
    u = rng.random((len(t), 4))
    cold, branches = asymmetric_lag(u, t, 0.02, 0.09)
    assert np.array_equal(cold, motor_lag_asymmetric(u, t, 0.02, 0.09))
    _, near = asymmetric_lag(u, t, 0.021, 0.088)
    for start in (near, rng.random(branches.shape) < 0.5, ~branches):
        warm, again = asymmetric_lag(u, t, 0.02, 0.09, start)
        assert np.array_equal(warm, cold) and np.array_equal(again, branches)
    calls = []
    lag = sig._lag_varying
    monkeypatch.setattr(sig, "_lag_varying", lambda *a: calls.append(1) or lag(*a))
    passes = []
    for start in (None, near):  # a pass is one time-varying lag
        calls.clear()
        asymmetric_lag(u, t, 0.02, 0.09, start)
        passes.append(len(calls))
    assert passes[1] < passes[0], passes


def test_row_max_is_numpys_row_max():
    """The time-varying lag's block length comes from `_row_max`: bit for bit numpy's, NaN and inf included."""
    a = np.random.default_rng(4).standard_normal((500, 4))
    a[3, 2], a[7, 0], a[9, 3] = np.nan, np.inf, -np.inf
    assert np.array_equal(_row_max(a), a.max(axis=1), equal_nan=True)
    assert np.array_equal(_row_max(a[:, :1]), a[:, 0], equal_nan=True)


def test_filtfilt_zero_phase_and_derivative():
    fs = 500.0
    t = np.arange(0, 4, 1 / fs)
    x = np.column_stack([np.sin(2 * np.pi * 2 * t), np.cos(2 * np.pi * 2 * t)])
    noisy = x + 0.05 * np.random.default_rng(4).standard_normal(x.shape)
    y = butter_filtfilt(noisy, fs, 20.0)
    inner = slice(200, -200)
    rms_in, rms_out = np.std(noisy - x), np.sqrt(np.mean((y[inner] - x[inner]) ** 2))
    assert rms_out < 0.3 * rms_in  # noise removed, signal kept (no phase lag: a lag would leave a big error)
    d = derivative(x, t)
    np.testing.assert_allclose(d[inner, 0], 4 * np.pi * np.cos(2 * np.pi * 2 * t[inner]), rtol=1e-3, atol=1e-3)


def test_derivative_is_fourth_order_on_a_uniform_grid():
    """A derivative is compared with signals that are not differentiated, so its gain error is
    a parameter bias: on a 3 Hz sine at 200 Hz the three-point difference's gain is 1 - 1.5e-3
    (twice that through a second derivative); the five-point one's is within 1e-5 of 1, and
    its error falls 16x when the step halves (fourth order). A jittered grid keeps the
    second-order non-uniform formula."""
    errs = []
    for fs in (200.0, 400.0):
        t = 3.0 + np.arange(int(4 * fs)) / fs  # rounded steps: still a uniform grid
        x = np.sin(2 * np.pi * 3.0 * t)
        inner = slice(10, -10)
        exact = 2 * np.pi * 3.0 * np.cos(2 * np.pi * 3.0 * t)
        errs.append(np.max(np.abs(derivative(x, t) - exact)[inner]) / (2 * np.pi * 3.0))
        three = np.max(np.abs(np.gradient(x, t) - exact)[inner]) / (2 * np.pi * 3.0)
        assert three > 100 * errs[-1]
    assert errs[0] < 1e-5 and errs[0] / errs[1] == pytest.approx(16.0, rel=0.05)
    t = np.cumsum(np.random.default_rng(3).uniform(0.004, 0.006, 400))
    x = np.sin(2 * np.pi * 3.0 * t)
    assert np.array_equal(derivative(x, t), np.gradient(x, t, edge_order=2))


@pytest.mark.parametrize("grid", ["exact", "rounded", "jittered"])
@pytest.mark.parametrize("n", [3, 4, 700, 1025])
def test_derivative_blocks_equal_the_one_shot_derivative(grid, n):
    """Any block size (a last block of one row, blocks longer than x), into a new array or in
    place: the same numbers as `derivative`, on an exactly uniform grid, a rounded one
    (np.arange * 1e-3: steps differ in the last bit; both the five-point formula) and a
    jittered one (the non-uniform three-point formula)."""
    rng = np.random.default_rng(n)
    t = {
        "exact": 0.5 * np.arange(n),
        "rounded": 7.0 + np.arange(n) * 1e-3,
        "jittered": np.cumsum(rng.uniform(0.5, 1.5, n)),
    }[grid]
    x = rng.standard_normal((n, 3)).cumsum(axis=0)
    ref = derivative(x, t)
    for block in (256, 341, 699, 1024, 5000):
        assert np.array_equal(derivative_blocks(x, t, block=block), ref)
        y = x.copy()
        assert derivative_blocks(y, t, out=y, block=block) is y
        assert np.array_equal(y, ref)


def test_runs_of_boolean_mask():
    from rotorid.signal import runs

    starts, ends = runs(np.array([True, True, False, True, False, False, True]))
    assert starts.tolist() == [0, 3, 6]
    assert ends.tolist() == [2, 4, 7]
    s, e = runs(np.zeros(4, bool))
    assert s.size == 0 and e.size == 0
