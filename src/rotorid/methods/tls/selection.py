"""TLS fits of W_t (eq. 13-20) and the essential-parameter selection (Sec. III-B)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.methods.regression import (
    Fit,
    bias_compensated,
    block_weighted_tls,
    compress,
    tls,
    weighting_collapsed,
)
from rotorid.methods.tls.settings import BODY_DRAG, TlsSettings


def weighted_fit(
    w: np.ndarray, blocks: np.ndarray, counts: np.ndarray, base: np.ndarray, settings: TlsSettings
) -> tuple[Fit, np.ndarray]:
    """(Weighted) TLS of a compressed W_t (`regression.compress`)."""
    if settings.weighted:
        return block_weighted_tls(w, blocks, base, max_iter=settings.max_weight_iter, what="IDIM-TLS", counts=counts)
    return tls(w * base[blocks][:, None], what="IDIM-TLS", rows=int(counts.sum())), base.copy()


#: The unknowns `essential` cancels by the paper's rule alone (`TlsSettings.cancel_z` aside): in one
#: configuration the yaw row fixes only I_zz / k_d (eq. 23), so their %σ comes from weak couplings
#: and the block weighting, not from the data's information on each (a k_d kept at a small %σ
#: can be far off, and move the estimated IMU lag with it).
YAW_PAIR = ("k_d", "I_zz")


class Selection(NamedTuple):
    """What `essential` chose: the fit of the kept columns, their indices, the block factors,
    the history of cancellations and which row blocks were fitted."""

    fit: Fit
    kept: list[int]
    scale: np.ndarray
    history: list[dict[str, Any]]
    active: np.ndarray


def essential(
    w: np.ndarray,
    blocks: np.ndarray,
    base: np.ndarray,
    names: list[str],
    settings: TlsSettings,
    w_ref: np.ndarray | None = None,
    extra: np.ndarray | None = None,
) -> Selection:
    """Essential parameters (Sec. III-B): starting from all unknowns, repeatedly cancel the
    one with the largest %sigma (eq. 22) and re-solve, until max/min %sigma < r_sigma or the
    candidate is significant (%σ < 100 / `TlsSettings.cancel_z`).
    k_t is never cancelled (it carries the scale of the TLS solution). Columns that are
    identically zero are cancelled first ("not excited"). A row block whose rotor and known
    columns are all cancelled (the yaw rows of a planar vehicle once k_d goes) is left out:
    its equation lost its input, and the block weighting would otherwise force the
    remaining rigid-body terms of that row to zero (e.g. I_xx = I_yy through the
    gyroscopic term). Works on the compressed W_t (`regression.compress`). Returns the
    final fit, the kept column indices, the block factors, the history of cancellations
    and which row blocks were fitted.

    `w_ref` (same rows and columns) is the paper's model when `w` carries nuisance terms (the
    accelerometer-bias centring, `idim_rows`): the denominator is then k_t's %σ in it (when
    smaller than the own min %σ). Six et al. set r_σ = 250 on the %σ of k_t, the best-determined parameter of their model
    ("this performance is required to set the ratio r_σ", Sec. IV-A); centring takes the hover
    balance away from k_t (its %σ grows ~6x), which would loosen r_σ by as much and keep
    parameters the paper cancels. The numerator (and the parameter cancelled) stays the
    nuisance-free %σ of `w`, which a bias cannot distort.

    `extra` (rows of `w`, k): columns of unknowns in every fit, never ranked nor cancelled (the
    rotors' gains, `gain_columns`); the fit returned has them after the kept ones. The body
    drag's unknowns (`BODY_DRAG`) are not ranked nor cancelled either: held-out segments decide
    them (`terms.fit_body_drag`), and after a first pass they estimate only a remainder near zero,
    whose %σ says nothing of the drag."""
    k = 0 if extra is None else extra.shape[1]
    wc, bc, counts = compress(w if extra is None else np.column_stack([w[:, :-1], extra, w[:, -1]]), blocks)
    more, last = list(range(len(names), len(names) + k)), len(names) + k
    wr, br, _ = (None, None, None) if w_ref is None else compress(w_ref, blocks)
    colnorm = np.linalg.norm(w[:, :-1], axis=0)
    kept = [j for j in range(len(names)) if colnorm[j] > 0]
    history = _not_excited(names, colnorm)
    if 0 not in kept:
        raise ExcitationError("the thrust column is zero: the rotor commands are all zero in every flight")
    nb = len(counts)
    while True:
        # a row block left without any rotor or known term (the yaw rows once k_d is cancelled)
        # no longer states an equation with an input: it is dropped from the fit
        driven = [j for j in (0, 1, last) if j in kept or j == last]
        active = np.bincount(bc, weights=np.any(wc[:, driven] != 0, axis=1), minlength=nb) > 0
        rows = active[bc]
        fit, scale = weighted_fit(wc[rows][:, [*kept, *more, last]], bc[rows], counts * active, base, settings)
        pct = np.where(np.isfinite(fit.rel_std_pct), fit.rel_std_pct, np.inf)[: len(kept)]
        ranked = np.array([names[j] not in BODY_DRAG for j in kept])
        pct = np.where(ranked, pct, np.nan)
        floor = np.nanmin(pct)
        if wr is not None:
            at = active[br]
            ref, _ = weighted_fit(wr[at][:, [*kept, w.shape[1] - 1]], br[at], counts * active, base, settings)
            # k_t's %σ in the paper's model, never above the own floor: a large accelerometer bias can
            # collapse that model's fit (a tiny %σ on the others, every parameter but k_t cancelled)
            floor = min(floor, float(ref.rel_std_pct[kept.index(0)]))
        ratio = float(np.nanmax(pct) / floor) if floor > 0 else float("inf")
        cand = np.where(ranked, pct, -np.inf)
        cand[kept.index(0)] = -np.inf
        i = int(np.argmax(cand))
        keep = cand[i] < 100.0 / settings.cancel_z and not names[kept[i]].startswith(YAW_PAIR)
        if keep:  # significant, unless the weighting collapsed (then no %σ of this fit means anything)
            keep = not weighting_collapsed(wc[rows][:, [*kept, *more, last]], bc[rows], counts * active, base, fit)
        if not settings.essential or ratio < settings.r_sigma or np.all(np.isneginf(cand)) or keep:  # -inf: k_t, drag
            return Selection(fit, kept, scale, history, active)
        history.append(
            {
                "name": names[kept[i]],
                "rel_std_pct": float(pct[i]),
                "ratio": ratio,
                "value": float(fit.x[i]),
                "why": "largest %σ",
            }
        )
        del kept[i]


def _not_excited(names: list[str], colnorm: np.ndarray) -> list[dict[str, Any]]:
    """`essential`'s history entries of the unknowns whose column is zero."""
    return [
        {"name": n, "rel_std_pct": float("inf"), "ratio": float("inf"), "value": 0.0, "why": "not excited"}
        for n, c in zip(names, colnorm, strict=True)
        if c == 0
    ]


def expanded(x: np.ndarray, kept: list[int], n: int) -> np.ndarray:
    """The n unknowns with the kept ones set to x and the cancelled ones to 0."""
    out = np.zeros(n)
    out[kept] = x
    return out


def fixed_fit(
    w: np.ndarray,
    blocks: np.ndarray,
    kept: list[int],
    active: np.ndarray,
    scale: np.ndarray,
    noise: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> Fit:
    """TLS fit (eq. 13-20) of the columns `kept` over the row blocks `active` with the block
    factors `scale` held fixed (no re-weighting); with `noise` (`noise_moment`) the
    bias-compensated least-squares fit of the same rows instead (`TlsSettings.eiv`); with `rows`
    (a mask), the fit of those rows of W_t alone (`compress`: they are not gathered whole)."""
    wc, bc, counts = compress(w, blocks, rows)
    sel = active[bc]
    cols = [*kept, w.shape[1] - 1]
    ws = wc[sel][:, cols] * scale[bc[sel]][:, None]
    rows = int((counts * active).sum())
    if noise is None:
        return tls(ws, rows=rows)
    total = np.einsum("b,bij->ij", counts * active * scale**2, noise[:, cols][:, :, cols])
    return bias_compensated(ws, total, what="IDIM-TLS", rows=rows)


def fit_set(
    w: np.ndarray, blocks: np.ndarray, kept: list[int], active: np.ndarray, base: np.ndarray, settings: TlsSettings
) -> tuple[Fit, np.ndarray]:
    """(Weighted) TLS of the columns `kept` over the row blocks `active` (an essential set
    already chosen, `essential`); returns the fit and the block factors."""
    wc, bc, counts = compress(w, blocks)
    sel = active[bc]
    return weighted_fit(wc[sel][:, [*kept, w.shape[1] - 1]], bc[sel], counts * active, base, settings)
