"""The frequency-response estimator of the `freq` method on known LTI systems (seeded)."""

import numpy as np
import pytest
import scipy.signal as sps

from rotorid.errors import RotoridError
from rotorid.methods.freq import frf, model
from rotorid.signal import sid_chirp

FS = 500.0
B, A = sps.butter(2, 30.0, fs=FS)


def _open_loop(seed: int, n: int = 20000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    return x, sps.lfilter(B, A, x) + 0.3 * rng.standard_normal(n)


def test_h1_is_scipy_csd_over_welch():
    x, y = _open_loop(0, n=512 + 77 * 128)  # whole segments from the first sample, as scipy places them
    e = frf.estimate(x, y, FS, 512)
    _, pxy = sps.csd(x, y, FS, nperseg=512, noverlap=384)
    _, pxx = sps.welch(x, FS, nperseg=512, noverlap=384)
    _, coh = sps.coherence(x, y, FS, nperseg=512, noverlap=384)
    assert np.max(np.abs(pxy / pxx - e.h) / np.abs(e.h)) < 1e-12
    assert np.max(np.abs(coh - e.coherence)) < 1e-12


def test_variance_and_bin_covariance_match_the_scatter():
    """Over 60 seeds the squared error of each bin averages its predicted variance, and the
    sum over ten neighbouring bins (correlated through the window) its predicted covariance."""
    z2, sums, pred = [], [], []
    for seed in range(60):
        x, y = _open_loop(seed)
        e = frf.estimate(x, y, FS, 512)
        _, h = sps.freqz(B, A, worN=e.f, fs=FS)
        sel = (e.f > 1.0) & (e.f < 100.0)
        z2.append(np.abs(e.h[sel] - h[sel]) ** 2 / e.var[sel])
        idx = np.flatnonzero(sel)[:10]
        sums.append(np.sum(e.h[idx] - h[idx]))
        pred.append(np.real(e.covariance(idx).sum()))
    assert np.mean(z2) == pytest.approx(1.0, abs=0.08)
    assert np.mean(np.abs(sums) ** 2) / np.mean(pred) == pytest.approx(1.0, abs=0.3)
    # neighbouring Hann bins are strongly correlated: the sum's variance is far from the diagonal's sum
    cov = frf.estimate(*_open_loop(0), FS, 512).covariance(idx)
    assert abs(np.real(cov.sum()) / np.real(np.trace(cov)) - 1.0) > 0.3


def _closed_loop(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A first-order plant G under the loop u = r - 2 y with white output noise n: y = G u + n."""
    rng = np.random.default_rng(seed)
    n = 40000
    r, noise = rng.standard_normal(n), rng.standard_normal(n)
    b, a = sps.butter(1, 20.0, fs=FS)
    den = np.polyadd(a, 2.0 * np.pad(b, (len(a) - len(b), 0)))  # y = (G r + n) / (1 + 2 G)
    y = sps.lfilter(b, den, r) + sps.lfilter(a, den, noise)
    return r - 2.0 * y, y, r, b, a


def test_the_instrument_removes_the_feedback_bias():
    """Output noise fed back biases H1 (from u) toward -1/K; the estimate instrumented by the
    injected r is unbiased, its variance within the ratio estimator's second-order error
    (about +13 % on 30 seeds; 5 here)."""
    z2 = []
    for seed in range(5):
        u, y, r, b, a = _closed_loop(seed)
        iv = frf.estimate(u, y, FS, 1024, r=r)
        _, g = sps.freqz(b, a, worN=iv.f, fs=FS)
        sel = (iv.f > 1) & (iv.f < 50)
        z2.append(np.mean(np.abs(iv.h[sel] - g[sel]) ** 2 / iv.var[sel]))
    assert np.mean(z2) == pytest.approx(1.0, abs=0.3)
    h1 = frf.estimate(u, y, FS, 1024)
    assert np.mean(np.abs(h1.h[sel] - g[sel]) ** 2 / h1.var[sel]) > 20.0  # biased far beyond its own σ


def test_too_short_a_record_is_refused():
    with pytest.raises(RotoridError, match="too few"):
        frf.estimate(np.ones(100), np.ones(100), FS, 512)


def test_segment_length_follows_the_lowest_frequency():
    assert frf.segment_length(500.0, 100_000, 0.5) == 4000
    assert frf.segment_length(500.0, 10_000, 0.5) == 2500


def _chirp_through_a_lag() -> tuple[np.ndarray, np.ndarray, int]:
    """ArduPilot's chirp (0.5-20 Hz over 24 s at 500 Hz) through a 70 ms first-order lag, noise-free."""
    t = np.arange(int(28 * FS)) / FS
    x, _ = sid_chirp(t - 1.5, 1.0, 0.5, 20.0, 2.0, 4.0, 24.0, 1.0)
    return x, model.predict(x, FS, 1.0, 0.07, 0.0, "acc"), frf.segment_length(FS, len(x), 0.5, 3.0)


def test_quarter_steps_cancel_most_of_a_sweeps_leakage():
    """Noise-free, the estimate's error is the window's leakage alone: at quarter-segment steps
    it stays under 0.6 % from 1 Hz up (2.2 % at half steps, where the squared windows do not
    sum to a constant)."""
    x, y, nper = _chirp_through_a_lag()
    e = frf.estimate(x, y, FS, nper)
    sel = (e.f >= 1.0) & (e.f <= 19.0)
    assert np.max(np.abs(e.h[sel] / model.response(e.f[sel], 1.0, 0.07, 0.0, "acc") - 1.0)) < 0.006


def test_a_models_prediction_takes_the_leakage_out_of_the_noise():
    """With white output noise, the variance from residuals that still hold each segment's
    leakage overstates the scatter at the sweep's low end (z² about 0.3); given the model's
    prediction, the leakage-corrected estimate scatters as its variance says (30 seeds: 1.01,
    one seed's mean scatters by 0.29, so ten seeds' by 0.09)."""
    x, y0, nper = _chirp_through_a_lag()
    z_plain, z_model = [], []
    for seed in range(10):
        y = y0 + 0.01 * np.random.default_rng(seed).standard_normal(len(x))
        plain, with_model = frf.estimate(x, y, FS, nper), frf.estimate(x, y, FS, nper, model=y0)
        h = model.response(plain.f, 1.0, 0.07, 0.0, "acc")
        low = (plain.f >= 0.5) & (plain.f <= 3.0)
        corrected = with_model.h - (with_model.h_model - h)
        z_plain.append(np.abs(plain.h[low] - h[low]) ** 2 / plain.var[low])
        z_model.append(np.abs(corrected[low] - h[low]) ** 2 / with_model.var[low])
    assert np.mean(z_plain) < 0.5
    assert np.mean(z_model) == pytest.approx(1.0, abs=0.25)
