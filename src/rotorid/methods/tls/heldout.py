"""Checks of the fitted model on data it was not fitted on: held-out prediction of
contiguous segments (an optional term is kept only when it predicts them better), leave-one-out
estimates over airborne pieces (their scatter against σ), and what the model's secondary terms
and the physics of a rigid body say about the estimates (model-dependent parameters, a
physically consistent inertia tensor)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.tls.rows import Rows
from rotorid.methods.tls.selection import fixed_fit

#: Contiguous segments each airborne piece is cut into for the held-out prediction (`segments`):
#: fold k holds the k-th segment of every piece, so every fold spans every flight.
FOLDS = 8

#: One-sided level of the held-out test (`prefers`): an optional term is kept when it predicts
#: the held-out folds better at this level; `STRONG` where it is beyond its plausible range.
LEVEL = 0.05
STRONG = 0.001

#: A parameter moving by more than this many σ when a secondary term's column is left out of
#: the same rows rests on that term (`secondary_shift`).
SECONDARY_Z = 2.0

#: Level of the χ² test of the leave-one-out scatter against σ (`jackknife_widen`).
JACKKNIFE_LEVEL = 0.05


def _fit(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None,
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """`fixed_fit`'s estimate (of the rows `rows`, a mask; None: all); on a subset of rows whose
    noise-compensated normal matrix is not invertible (a short piece left), the uncompensated fit's."""
    try:
        return fixed_fit(w, blocks, kept, active, scale, noise, rows).x
    except ExcitationError:
        if noise is None:
            raise
        return fixed_fit(w, blocks, kept, active, scale, rows=rows).x


def row_labels(rows: dict[str, Rows], per_sample: dict[str, np.ndarray]) -> np.ndarray:
    """A label per row of W_t (`assemble`'s layout: per configuration, six blocks of its samples)
    from a label per sample of each configuration."""
    return np.concatenate([np.tile(per_sample[c], 6) for c in rows])


def segments(rows: dict[str, Rows], k: int = FOLDS) -> np.ndarray:
    """Fold of each row of W_t: the k-th of `k` contiguous segments of its airborne piece."""
    lab = {}
    for c, r in rows.items():
        pos = np.zeros(len(r.t), dtype=int)
        for p in np.unique(r.piece):
            at = np.flatnonzero(r.piece == p)
            pos[at] = np.arange(len(at)) * k // len(at)
        lab[c] = pos
    return row_labels(rows, lab)


def pieces(rows: dict[str, Rows]) -> np.ndarray:
    """Airborne piece of each row of W_t, numbered over all configurations."""
    lab, start = {}, 0
    for c, r in rows.items():
        lab[c] = start + r.piece
        start += int(r.piece.max()) + 1
    return row_labels(rows, lab)


def held_out_sse(
    w: np.ndarray,
    blocks: np.ndarray,
    folds: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None = None,
) -> np.ndarray:
    """Per fold, the block-scaled squared error of predicting its fitted rows (`active`) from the
    fit (`fixed_fit`) of the columns `kept` on the other folds."""
    cols = [*kept, w.shape[1] - 1]
    out = np.zeros(int(folds.max()) + 1)
    for g in range(len(out)):
        test = folds == g
        x = _fit(w, blocks, kept, active, scale, noise, ~test)
        sel = test & active[blocks]
        out[g] = np.sum(((w[sel][:, cols] @ np.append(x, 1.0)) * scale[blocks[sel]]) ** 2)
    return out


class Preference(NamedTuple):
    """The held-out comparison of a richer model with a simpler one (`prefers`): the paired t
    statistic of the simpler model's excess squared error over the folds, and whether it passes."""

    t: float
    richer: bool


def prefers(simple: np.ndarray, rich: np.ndarray, level: float = LEVEL) -> Preference:
    """Whether the richer model predicts the held-out folds better than the simpler one by more
    than the folds' scatter: one-sided paired t test of the per-fold error differences."""
    from scipy.stats import t as student

    d = simple - rich
    sd = float(np.std(d, ddof=1))
    t = float(np.mean(d) / (sd / np.sqrt(len(d)))) if sd > 0 else float(np.sign(np.mean(d)) * np.inf)
    return Preference(t, bool(t > student.ppf(1 - level, len(d) - 1)))


class TermChoice(NamedTuple):
    """How an optional term was chosen (`terms.fit_terms`, `ground.choose_ground`): the term in words, what was kept ("off" where the simpler model
    stands), the held-out t statistic of the richer model against the simpler, the note in words,
    and, where the test tells neither apart and the richer model's extra unknowns are not within
    2σ of zero, the other model's estimates by unknown name (their difference enters σ,
    `checks.checked`; None otherwise); `held_out` False where the alternative comes from another
    check than the held-out test (its note then says why it enters σ); `widen`, by unknown name,
    the factor its variance grows by where the kept term's own unknowns are held in the final fit
    (`ground.choose_ground`; None: none)."""

    term: str
    kept: str
    t: float
    note: str
    alternative: dict[str, float] | None
    held_out: bool = True
    widen: dict[str, float] | None = None


def secondary_shift(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    drop: int,
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None,
    std: np.ndarray,
) -> np.ndarray:
    """Per kept column, how many σ (`std`) its estimate moves when the column `drop` (a secondary
    term, e.g. the rotor drag) is left out of the same rows; 0 for `drop` itself."""
    full = _fit(w, blocks, kept, active, scale, noise)
    rest = [j for j in kept if j != drop]
    reduced = dict(zip(rest, _fit(w, blocks, rest, active, scale, noise), strict=True))
    moved = np.array([reduced.get(j, f) - f for j, f in zip(kept, full, strict=True)])
    return np.abs(moved) / np.where(std > 0, std, np.inf)


class Jackknife(NamedTuple):
    """Leave-one-piece-out estimates (`jackknife`): each piece's estimate without it (pieces, kept)
    and the jackknife variance of each kept parameter."""

    loo: np.ndarray
    var: np.ndarray


def jackknife(
    w: np.ndarray,
    blocks: np.ndarray,
    groups: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None = None,
) -> Jackknife:
    """Leave-one-group-out fits (`fixed_fit`, the final essential set and block factors) and the
    jackknife variance (G - 1) / G Σ (x_(-g) - x̄)² (Efron & Tibshirani 1993, eq. 11.5)."""
    ids = np.unique(groups)
    return jackknife_of(np.array([_fit(w, blocks, kept, active, scale, noise, groups != g) for g in ids]))


def jackknife_of(loo: np.ndarray) -> Jackknife:
    """The jackknife of leave-one-group-out estimates `loo` (groups, parameters): their variance
    (G - 1) / G Σ (x_(-g) - x̄)² (Efron & Tibshirani 1993, eq. 11.5)."""
    g = len(loo)
    return Jackknife(loo, (g - 1) / g * np.sum((loo - loo.mean(axis=0)) ** 2, axis=0))


def jackknife_widen(var: np.ndarray, jack: Jackknife, level: float = JACKKNIFE_LEVEL) -> np.ndarray:
    """Per parameter, the factor (≥ 1) its σ² grows by where the leave-one-out scatter exceeds what
    σ allows: (G - 1) v_jack / σ² against χ²_{G-1} at `level`; the factor is then v_jack / σ²."""
    from scipy.stats import chi2

    g = len(jack.loo)
    ratio = jack.var / np.where(var > 0, var, np.inf)
    return np.where((g - 1) * ratio > chi2.ppf(1 - level, g - 1), np.maximum(ratio, 1.0), 1.0)


def consistent_inertia(tensor: np.ndarray, floor: float = 1e-9) -> np.ndarray:
    """The inertia tensor nearest `tensor` (Frobenius) that a rigid body can have: positive principal
    moments satisfying the triangle inequalities λ_i ≤ λ_j + λ_k. The set is spectral and convex,
    so the nearest tensor keeps the eigenvectors and projects the principal moments (a small QP)."""
    from scipy.optimize import minimize

    lam, vec = np.linalg.eigh((tensor + tensor.T) / 2)
    eps = floor * max(float(np.abs(lam).max()), 1e-300)
    cons = [{"type": "ineq", "fun": lambda v, i=i: v[(i + 1) % 3] + v[(i + 2) % 3] - v[i]} for i in range(3)]
    cons.append({"type": "ineq", "fun": lambda v: v - eps})
    start = np.full(3, max(float(lam.mean()), eps))
    found = minimize(lambda v: np.sum((v - lam) ** 2), start, constraints=cons, method="SLSQP", tol=1e-16 * eps**2)
    return (vec * found.x) @ vec.T


def is_consistent(tensor: np.ndarray) -> bool:
    """Whether `tensor` is positive definite with principal moments satisfying the triangle inequalities."""
    lam = np.linalg.eigvalsh((tensor + tensor.T) / 2)
    return bool(lam.min() > 0 and lam[2] <= (lam[0] + lam[1]) * (1 + 1e-9))
