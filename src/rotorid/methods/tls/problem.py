"""The identification problem (its inputs and settings, with what it derives from the flights kept
apart) and the named results the stages pass on: the system W_t, the rotors' gains, the solution."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.methods.regression import (
    Fit,
)
from rotorid.methods.tls.rows import Rows, assemble, idim_rows, posed
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


@dataclass(frozen=True)
class Derived:
    """What an identification finds out about its flights before the final solve, kept apart from
    the settings the user asked (None: as asked): the rotor drag left out where a flight has no
    attitude or no position or velocity, the rotor inflow held-out segments kept (left out until
    `terms.fit_terms` tries it), the pose's and the IMU's lags (s) where they were left to
    the data (`TlsSettings.mocap_delay`, `TlsSettings.imu_delay`), the accelerometer bias left
    out where the flights do not separate it from the thrust (`TlsSettings.acc_bias`), the battery
    voltage's exponent and reference kept (`TlsSettings.voltage_model`), the body drag's form held-out segments chose and the first pass's coefficients removed from the
    specific force (`TlsSettings.body_drag`, `TlsSettings.body_coef`), the ground level and
    coefficient held-out segments kept (`TlsSettings.ground_model`)."""

    rotor_drag: bool | None = None
    rotor_inflow: bool | None = None
    mocap_delay: float | None = None
    imu_delay: float | None = None
    acc_bias: bool | None = None
    voltage_model: tuple[float, float] | None = None
    body_drag: str | None = None
    body_coef: tuple[float, float, float] | None = None
    body_scale: float | None = None
    ground_model: tuple[float, float] | None = None


@dataclass(frozen=True)
class TlsProblem:
    """An IDIM-TLS identification: each configuration's flights, the vehicle, each configuration's
    measured mass, the row-block weights `base` (k_w of eq. 24, six blocks per configuration) and
    the settings the user asked, never replaced; what is found from the flights is in `derived`
    (`model` is the settings the stages fit with). `memo` keeps the motion columns every fit of
    the problem shares (`idim_rows`)."""

    configs: dict[str, list[Flight]]
    vehicle: Vehicle
    masses: dict[str, float]
    base: np.ndarray
    settings: TlsSettings
    derived: Derived = Derived()
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        configs: dict[str, list[Flight]],
        vehicle: Vehicle,
        masses: dict[str, float] | None = None,
        weights: dict[str, float] | None = None,
        settings: TlsSettings | None = None,
    ) -> TlsProblem:
        """The problem of `identify`'s arguments, the masses and weights checked (`checked_masses`)."""
        weights = dict(weights or {})
        masses = checked_masses(configs, vehicle, dict(masses or {}), weights)
        base = np.repeat([float(weights.get(c, 1.0)) for c in configs], 6)
        return cls(dict(configs), vehicle, {c: masses[c] for c in configs}, base, settings or TlsSettings())

    @property
    def weights(self) -> dict[str, float]:
        """Each configuration's row weight k_w (`base`)."""
        return {c: float(k) for c, k in zip(self.configs, self.base[::6], strict=True)}

    @property
    def posed(self) -> bool:
        """Whether every flight gives the airspeed the drags need (`rows.posed`)."""
        return all(posed(f) for fs in self.configs.values() for f in fs)

    @property
    def model(self) -> TlsSettings:
        """The settings the stages fit with: the user's, with what `derived` found filled in."""
        found = {k: v for k, v in asdict(self.derived).items() if v is not None}
        return replace(self.settings, **found) if found else self.settings

    def derive(self, **found: Any) -> TlsProblem:
        """The same problem (and memo) with more found (fields of `Derived`)."""
        return replace(self, derived=replace(self.derived, **found))

    def trial(self, memo: dict | None = None, **settings: Any) -> TlsProblem:
        """A problem of other settings, for a search inside the identification (the IMU lag's
        equal-rotor model, or its IMU-source model for the motion-capture source: then a fresh
        `memo`, the motion columns differing); the user's own problem keeps its settings."""
        return replace(self, settings=replace(self.settings, **settings), memo=self.memo if memo is None else memo)


class System(NamedTuple):
    """Rows of every configuration, their resolved settings and the assembled W_t (`assemble`):
    the matrix, each row's block and the column names."""

    rows: dict[str, Rows]
    resolved: dict[str, dict]
    w: np.ndarray
    blocks: np.ndarray
    names: list[str]


def build_system(
    problem: TlsProblem,
    bias: dict[str, np.ndarray] | None,
    gain: dict[str, np.ndarray] | None = None,
    move: tuple[np.ndarray, np.ndarray] | None = None,
) -> System:
    """Rows of every configuration of `problem` and the assembled W_t (`assemble`): the paper's
    model when `bias` is None, else the rows centred for the nuisance constants of the problem's
    model (accelerometer bias, yaw moment) with `bias` (per configuration, (pieces, 3); missing:
    none) removed from the specific force first; `gain` (per configuration, (n_rotors,); missing:
    1) scales each rotor's wrench; the body drag of the model's `body_coef` is removed from the
    specific force too (its mass's share in each configuration); the problem's memo keeps the
    motion columns (`idim_rows`); with `move`, the derivative of all this along a move of the IMU's
    data (`idim_rows`)."""
    rows, resolved = build_rows(problem, bias, gain, move=move)
    return System(rows, resolved, *assemble(rows, problem.masses))


def build_rows(
    problem: TlsProblem,
    bias: dict[str, np.ndarray] | None,
    gain: dict[str, np.ndarray] | None = None,
    kt_only: bool = False,
    move: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[dict[str, Rows], dict[str, dict]]:
    """The rows of every configuration of `build_system` and their resolved settings, without W_t;
    with `kt_only` the k_t column's alone, with `move` their derivative (`idim_rows`)."""
    rows, resolved = {}, {}
    settings = problem.model
    nuisance = bias is not None  # the paper's model (None) has neither nuisance
    st = replace(settings, acc_bias=settings.acc_bias and nuisance, yaw_moment=settings.yaw_moment and nuisance)
    coef = None if settings.body_coef is None else np.asarray(settings.body_coef, dtype=float)
    for c, flights in problem.configs.items():
        b, g = (bias or {}).get(c), (gain or {}).get(c)
        body = None if coef is None else coef / problem.masses[c]
        rows[c], resolved[c] = idim_rows(flights, problem.vehicle, st, b, g, problem.memo, body, kt_only, move)
    return rows, resolved


@dataclass(frozen=True)
class Gains:
    """The rotors' thrust coefficients k_t g_i per configuration (`estimate_rotor_gains`): values,
    covariance and each gain's σ relative to k_t (configurations in order, rotors within), the
    system built with the gains and the final fit of the parameters (their covariance marginal
    over the gains), the variance in it that the doubt about the noise floors added
    (`floor_var`), the accelerometer bias the rows were built with and the cancelled unknowns
    the fit should keep (`_restored`); `used`, the gains per configuration the system was built with."""

    value: np.ndarray
    cov: np.ndarray
    rel_std: np.ndarray
    system: System
    fit: Fit
    floor: np.ndarray
    bias: dict[str, np.ndarray]
    restore: tuple[str, ...] = ()
    used: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Solution:
    """What `solve` found: the final system, the fit with its covariance, the essential columns,
    block factors, cancellation history, fitted row blocks, the first pass's accelerometer bias, the covariance the
    rotors' gain spread adds (already in `fit.cov`), the rotors' gains where estimated
    (`TlsSettings.rotor_gains`) and, where they were tried but not separated, why; the noise moment
    of the final fit's rows (`noise_moment`, None without `TlsSettings.eiv`)."""

    system: System
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
    noise: np.ndarray | None = None

    @property
    def rows(self) -> dict[str, Rows]:
        """The system's rows (and alike `resolved`, `w`, `blocks`, `names`)."""
        return self.system.rows

    @property
    def resolved(self) -> dict[str, dict]:
        return self.system.resolved

    @property
    def w(self) -> np.ndarray:
        return self.system.w

    @property
    def blocks(self) -> np.ndarray:
        return self.system.blocks

    @property
    def names(self) -> list[str]:
        return self.system.names

    def without_system(self) -> Solution:
        """This solution with its system let go (its size sets the memory peak of the next one built)."""
        return replace(self, system=self.system._replace(rows={}, w=np.empty((0, 0))))
