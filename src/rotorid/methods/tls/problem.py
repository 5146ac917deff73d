"""The identification problem (its inputs and settings, with what it derives from the flights kept
apart) and the named results the stages pass on: the system W_t, the rotors' gains, the solution."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.methods.regression import (
    Fit,
)
from rotorid.methods.tls.rows import Rows, assemble, idim_rows
from rotorid.methods.tls.settings import TlsSettings
from rotorid.vehicle import Vehicle


def checked_masses(
    configs: dict[str, list[Flight]], vehicle: Vehicle, masses: dict[str, float], weights: dict[str, float]
) -> dict[str, float]:
    """Each configuration's measured mass (config A defaults to `vehicle.mass`), checked with
    the row weights against the configurations flown."""
    if not configs or not any(configs.values()):
        raise RotoridError("no flights given to identify")
    cfgs = list(configs)
    masses = dict(masses)
    if "A" in configs:
        masses.setdefault("A", vehicle.mass)
    missing = [c for c in cfgs if c not in masses]
    if missing:
        raise RotoridError(f"no measured mass for configuration(s) {', '.join(missing)}; give --mass NAME=KG")
    for c, m in masses.items():
        if not m > 0:
            raise RotoridError(f"mass of configuration {c} must be positive kg, got {m}")
    unknown = set(weights) - set(cfgs)
    if unknown:
        raise RotoridError(
            f"--weight for unknown configuration(s) {', '.join(sorted(unknown))} (have {', '.join(cfgs)})"
        )
    for c in cfgs:
        if not configs[c]:
            raise RotoridError(f"configuration {c} has no flights")
    return masses


def build_system(
    configs: dict[str, list[Flight]],
    vehicle: Vehicle,
    masses: dict[str, float],
    settings: TlsSettings,
    bias: dict[str, np.ndarray] | None,
    gain: dict[str, np.ndarray] | None = None,
    memo: dict | None = None,
) -> tuple[dict[str, Rows], dict[str, dict], np.ndarray, np.ndarray, list[str]]:
    """Rows of every configuration and the assembled W_t (`assemble`): the paper's model when
    `bias` is None, else the rows centred for the nuisance constants of `settings` (accelerometer
    bias, yaw moment) with `bias` (per configuration, (pieces, 3); missing: none) removed from
    the specific force first; `gain` (per configuration, (n_rotors,); missing: 1) scales each
    rotor's wrench, `memo` keeps the motion columns (`idim_rows`)."""
    rows, resolved = {}, {}
    nuisance = bias is not None  # the paper's model (None) has neither nuisance
    st = replace(settings, acc_bias=settings.acc_bias and nuisance, yaw_moment=settings.yaw_moment and nuisance)
    for c in configs:
        rows[c], resolved[c] = idim_rows(configs[c], vehicle, st, (bias or {}).get(c), (gain or {}).get(c), memo)
    return rows, resolved, *assemble(rows, masses)


@dataclass(frozen=True)
class Gains:
    """The rotors' thrust coefficients k_t g_i per configuration (`estimate_rotor_gains`): values,
    covariance and each gain's σ relative to k_t (configurations in order, rotors within), the
    system built with the gains (rows, resolved settings, W_t, row blocks) and the final fit of
    the parameters (their covariance marginal over the gains), and the variance in it that the
    doubt about the noise floors added (`floor_var`)."""

    value: np.ndarray
    cov: np.ndarray
    rel_std: np.ndarray
    system: tuple[dict[str, Rows], dict[str, dict], np.ndarray, np.ndarray]
    fit: Fit
    floor: np.ndarray
    bias: dict[str, np.ndarray]
    restore: tuple[str, ...] = ()


@dataclass(frozen=True)
class Solution:
    """What `solve` found: the final system (rows, resolved settings, W_t, row blocks, column
    names), the fit with its covariance, the essential columns, block factors, cancellation
    history, fitted row blocks, the first pass's accelerometer bias, the covariance the
    rotors' gain spread adds (already in `fit.cov`), the rotors' gains where estimated
    (`TlsSettings.rotor_gains`) and, where they were tried but not separated, why."""

    rows: dict[str, Rows]
    resolved: dict[str, dict]
    w: np.ndarray
    blocks: np.ndarray
    names: list[str]
    fit: Fit
    kept: list[int]
    scale: np.ndarray
    history: list[dict[str, Any]]
    active: np.ndarray
    bias0: dict[str, np.ndarray]
    spread: np.ndarray
    gains: Gains | None = None
    gains_unseparated: str = ""
    floor: np.ndarray | None = None
    doubt: np.ndarray | None = None
    restored: tuple[str, ...] = ()
    disturbance: dict[str, np.ndarray] = field(default_factory=dict)
