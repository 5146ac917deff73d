"""Frequency responses from averaged spectral estimates, with coherence and the covariance of
each estimate (Bendat & Piersol, *Random Data*, ch. 9; Welch 1967).

The record is cut into Hann-windowed segments, each a quarter of a segment after the last
(Welch); `X_k`, `Y_k`, `R_k` are the segments' DFTs of input, output and instrument. At that
step the squared Hann windows sum to a constant over time, so the first-order leakage of a
sweep (the window's slope times the system's memory, a term that follows where each frequency
passes within a segment) cancels in the sums below; at half overlap it does not, and the
estimate carries a bias that oscillates along the band. The estimate at each frequency is

    H = Σ_k conj(R_k) Y_k / Σ_k conj(R_k) X_k

the H1 estimate `S_xy / S_xx` when the instrument is the input itself (`r=None`), and the
closed-loop (joint input-output) estimate `S_ry / S_rx` when it is the injected excitation,
which noise fed back by the controller does not reach. The residual `E_k = Y_k - H X_k` gives
the noise spectrum `S_nn = Σ |E_k|² / ν`, `ν` the share of the noise the residual keeps (K - 1
for independent segments, less where they overlap: `_residual_share`). Each segment's own leakage `T_k` (cancelling
in the sum, not in `E_k`) is not noise: given a model's prediction `m` of the output, its
segments `M_k` carry the same `T_k`, and `E_k = Y_k - M_k - (H - H_m) X_k` (`H_m` the same
estimate of `m`) leaves the noise alone while `H - H_m` still absorbs what the model misses
(Pintelon & Schoukens, *System Identification*, 2nd ed., sec. 7.2: leakage as a transient
smooth in frequency). `H_m` minus the model's own response is the estimator's remaining bias
at the model. The covariance of the estimates follows
from the DFT of the window: white-ish noise seen through overlapping Hann segments is
correlated between neighbouring segments and neighbouring bins,

    Cov(H_j, H_i) = √(S_nn,j S_nn,i) Σ_kl conj(R_kj) R_li ρ_{l-k}(j, i) / (D_j conj(D_i)),
    ρ_m(j, i) = e^{-2πi j m s / L} Σ_n w[n + m s] w[n] e^{-2πi (j - i) n / L} / Σ_n w[n]²,

with `D = Σ_k conj(R_k) X_k`, `L` the segment length, `s = L / 4` its step. On the diagonal with
`R = X` this is the textbook `|H|² (1 - γ²) / (n_d γ²)` (Bendat & Piersol eq. 9.90).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from rotorid.errors import RotoridError

#: Neighbouring bins whose noise correlation is kept (the Hann window and its overlap products fall off as 1/d²).
BIN_REACH = 6
#: Segments per segment length (the step is a quarter segment: the squared Hann windows sum to a constant).
STEPS = 4


@dataclass(frozen=True)
class Frf:
    """One frequency response on the bins `f` (Hz): estimate `h`, its variance `var`
    (E|ĥ - H|²), the ordinary coherence of input and output, the instrument's and the
    input's auto-spectra (arbitrary common scale), the same estimate of a model's prediction
    (`h_model`, when one was given) and what the bins' covariance needs."""

    f: np.ndarray
    h: np.ndarray
    var: np.ndarray
    coherence: np.ndarray
    s_rr: np.ndarray
    s_xx: np.ndarray
    n_segments: int
    nperseg: int
    _r: np.ndarray
    _d: np.ndarray
    _s_nn: np.ndarray
    _rho: np.ndarray
    h_model: np.ndarray | None = None

    def covariance(self, idx: np.ndarray) -> np.ndarray:
        """Complex covariance E[e_j conj(e_i)] of the estimates at bins `idx` (indices into `f`);
        bins more than `BIN_REACH` apart are taken as uncorrelated."""
        idx = np.asarray(idx)
        jj, ii = np.nonzero(np.abs(idx[:, None] - idx[None, :]) <= BIN_REACH)
        out = np.zeros((len(idx), len(idx)), dtype=complex)
        out[jj, ii] = self._pairs(idx[jj], idx[ii])
        return out

    def _pairs(self, bj: np.ndarray, bi: np.ndarray) -> np.ndarray:
        """E[e_j conj(e_i)] for each pair of bins (bj[n], bi[n]) at most `BIN_REACH` apart."""
        acc = _overlap_sum(self._r, self._r, self._rho, self.nperseg, bj, bi)
        return acc * np.sqrt(self._s_nn[bj] * self._s_nn[bi]) / (self._d[bj] * np.conj(self._d[bi]))


def _overlap_sum(
    a: np.ndarray, b: np.ndarray, rho: np.ndarray, nperseg: int, bj: np.ndarray, bi: np.ndarray
) -> np.ndarray:
    """Σ_kl conj(a_k,j) b_l,i ρ_{l-k}(j, i) for each pair of bins (bj[n], bi[n]) at most
    `BIN_REACH` apart (`a`, `b`: segments × bins; ρ the window's overlap, module docstring)."""
    k, step = a.shape[0], nperseg // STEPS
    acc = np.zeros(len(bj), dtype=complex)
    for m in range(-(rho.shape[0] - 1), rho.shape[0]):
        if m >= 0:  # ρ_m(j, i) = e^{-2πi j m s / L} G_m(j - i)
            g = rho[m][bj - bi + BIN_REACH] * np.exp(-2j * np.pi * bj * m * step / nperseg)
            sa, sb = slice(0, k - m), slice(m, k)
        else:  # ρ_{-m}(j, i) = conj(ρ_m(i, j))
            g = np.conj(rho[-m][bi - bj + BIN_REACH]) * np.exp(-2j * np.pi * bi * m * step / nperseg)
            sa, sb = slice(-m, k), slice(0, k + m)
        acc += g * np.einsum("kn,kn->n", np.conj(a[sa][:, bj]), b[sb][:, bi])
    return acc


def segment_length(fs: float, n: int, f_lo: float, cycles: float = 4.0) -> int:
    """Samples per segment: `cycles` periods of the lowest frequency of interest, at most a
    quarter of the record (so at least 13 segments, four independent ones, average), at least 64."""
    want = round(cycles * fs / max(f_lo, 1e-3))
    return int(max(64, min(want, n // 4)))


def _residual_share(
    xs: np.ndarray, rs: np.ndarray, d: np.ndarray, rho: np.ndarray, nperseg: int, bins: np.ndarray
) -> np.ndarray:
    """E[Σ_k |E_k|²] / S_nn per bin for `E_k = V_k - ΔH X_k` (ΔH the estimate's noise part):
    K - 2 Re(Σ_kl conj(R_l) X_k ρ_{k-l} / D) + Σ_k |X_k|² Σ_kl conj(R_k) R_l ρ_{l-k} / |D|²,
    which is K - 1 for independent segments and `R = X`; overlapping segments share noise, so
    the fitted `H` takes more of it from the residual."""
    k = xs.shape[0]
    cross = _overlap_sum(rs, xs, rho, nperseg, bins, bins) / d
    var = np.real(_overlap_sum(rs, rs, rho, nperseg, bins, bins)) / np.abs(d) ** 2
    return np.maximum(k - 2.0 * np.real(cross) + np.sum(np.abs(xs) ** 2, axis=0) * var, 1.0)


def _hann(n: int) -> np.ndarray:
    """The periodic Hann window, as scipy.signal.get_window("hann")."""
    return np.hanning(n + 1)[:-1]


@lru_cache(maxsize=8)
def _window_overlap(n: int, step: int) -> np.ndarray:
    """ρ_m(d) without the bin phase: Σ_n w[n + m s] w[n] e^{-2πi d n / L} / Σ w², for m = 0, 1, ...
    while segments overlap and d = -BIN_REACH..BIN_REACH; shape (M, 2 BIN_REACH + 1), for the
    `n`-sample Hann window at `step` (kept: every estimate of a record shares it)."""
    win = _hann(n)
    d = np.arange(-BIN_REACH, BIN_REACH + 1)
    rows = []
    for m in range((n - 1) // step + 1):
        prod = win[m * step :] * win[: n - m * step]
        ph = np.exp(-2j * np.pi * np.outer(d, np.arange(n - m * step)) / n)
        rows.append(ph @ prod / np.sum(win**2))
    return np.array(rows)


def estimate(
    x: np.ndarray,
    y: np.ndarray,
    fs: float,
    nperseg: int,
    r: np.ndarray | None = None,
    model: np.ndarray | None = None,
) -> Frf:
    """The frequency response from `x` to `y` (1-D, same length, sampled at `fs` Hz) on the
    bins of `nperseg`-sample Hann segments a quarter segment apart, instrumented by `r`
    (default `x`: the H1 estimate); with `model` (a model's prediction of `y`), its estimate
    too and the noise without the segments' leakage (module docstring). Each segment's mean
    is removed (scipy.signal.csd's detrend). The segments end at the last sample (the samples
    left over are dropped at the start: a sweep rises to its highest frequencies at the end of
    its record)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    r = x if r is None else np.asarray(r, dtype=float)
    m = np.zeros_like(y) if model is None else np.asarray(model, dtype=float)  # no model: E_k = Y_k - H X_k
    if not (x.shape == y.shape == r.shape == m.shape) or x.ndim != 1:
        raise RotoridError(
            "frequency response: input, output, instrument and model need one equal length, "
            f"got {x.shape}, {y.shape}, {r.shape}, {m.shape}"
        )
    step = nperseg // STEPS
    if len(x) < nperseg + step:
        raise RotoridError(f"frequency response: {len(x)} samples are too few for two {nperseg}-sample segments")
    win = _hann(nperseg)
    first = (len(x) - nperseg) % step  # segments tile the record up to its last sample
    segs = sliding_window_view(np.stack([x, y, r, m])[:, first:], nperseg, axis=1)[:, ::step]
    spec = np.fft.rfft((segs - segs.mean(axis=-1, keepdims=True)) * win, axis=-1)
    xs, ys, rs, ms = spec
    k = xs.shape[0]
    d = np.sum(np.conj(rs) * xs, axis=0)
    d = np.where(np.abs(d) > 0, d, np.finfo(float).tiny)
    h = np.sum(np.conj(rs) * ys, axis=0) / d
    h_m = np.sum(np.conj(rs) * ms, axis=0) / d
    rho = _window_overlap(nperseg, step)
    bins = np.arange(len(h))
    s_nn = np.sum(np.abs(ys - ms - (h - h_m) * xs) ** 2, axis=0) / _residual_share(xs, rs, d, rho, nperseg, bins)
    s_xx, s_yy = np.mean(np.abs(xs) ** 2, axis=0), np.mean(np.abs(ys) ** 2, axis=0)
    s_xy = np.mean(np.conj(xs) * ys, axis=0)
    coh = np.abs(s_xy) ** 2 / np.maximum(s_xx * s_yy, np.finfo(float).tiny)
    f = np.fft.rfftfreq(nperseg, 1.0 / fs)
    s_rr = np.mean(np.abs(rs) ** 2, axis=0)
    out = Frf(f, h, np.zeros(len(f)), coh, s_rr, s_xx, k, nperseg, rs, d, s_nn, rho)
    var = np.real(out._pairs(bins, bins))
    return Frf(f, h, var, coh, s_rr, s_xx, k, nperseg, rs, d, s_nn, rho, None if model is None else h_m)
