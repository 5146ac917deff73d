"""The IDIM's likelihood with a variance per row block (the model of the block weighting, Sec.
III-B) of an equal-rotor first fit: what the searches of the IMU lag (`lags`) and of the battery
voltage's exponent (`voltage`) judge their candidates with."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from rotorid.methods.regression import compress
from rotorid.methods.tls.problem import TlsProblem, build_system
from rotorid.methods.tls.selection import weighted_fit
from rotorid.methods.tls.solve import solve


class LagModel(NamedTuple):
    """The equal-rotor model the IMU lag and the voltage exponent are searched with (`lag_model`)."""

    trial: TlsProblem
    kept: list[int]
    active: np.ndarray
    scale: np.ndarray
    bias0: dict[str, np.ndarray]
    pose_measured: bool

    def system(self, tau: float, **found: Any) -> tuple[np.ndarray, np.ndarray, dict]:
        """W_t, its blocks and rows at the IMU lag `tau` (a measured pose lag moves with it) and
        what else is `found` (fields of `Derived`, e.g. the voltage model)."""
        st = self.trial.model
        shift = st.mocap_delay + (tau if self.pose_measured else 0.0)
        lagged = self.trial.derive(imu_delay=tau, mocap_delay=shift, **found)
        system = build_system(lagged, self.bias0 if st.nuisance else None)
        return system.w, system.blocks, system.rows

    def cost(self, tau: float, **found: Any) -> float:
        """Negative log-likelihood of the IDIM at `tau` (and `found`) with a variance per row block."""
        w, blocks, _ = self.system(tau, **found)
        wc, bc, counts = compress(w, blocks)
        act, kept = self.active, self.kept
        sel = act[bc]
        fit, _ = weighted_fit(
            wc[sel][:, [*kept, w.shape[1] - 1]], bc[sel], counts * act, self.trial.base, self.trial.model
        )
        res = w[:, [*kept, w.shape[1] - 1]] @ np.append(fit.x, 1.0)
        ss = np.bincount(blocks, weights=res**2, minlength=len(counts))
        n = counts[act]
        return float(np.sum(n * np.log(ss[act] / n)) / 2)


def lag_model(problem: TlsProblem, pose_measured: bool) -> LagModel:
    """The essential set, active blocks, block factors and accelerometer bias of a first fit at
    τ = 0 with equal rotors and no body drag (chosen later, `terms.fit_terms`), which every lag
    and voltage exponent is judged with."""
    trial = problem.trial(motor_spread=0.0, body_drag="off").derive(imu_delay=0.0)
    sol = solve(trial)
    return LagModel(trial, sol.kept, sol.active, sol.scale, sol.bias0, pose_measured)
