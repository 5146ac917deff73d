"""Joint uncertainty of the motor constant(s) and the thrust coefficients (variable projection,
sandwich / HAC covariance of the influence series)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from rotorid.methods.covariance import influence_cov
from rotorid.methods.delay.problem import ThrustProblem, chunks, lag_states
from rotorid.methods.delay.settings import DelaySettings
from rotorid.methods.regression import Fit


@dataclass(frozen=True)
class ThrustUncertainty:
    """Joint uncertainty of the motor constant(s) and the thrust coefficients at the optimum.

    The coefficients follow T_m by linear least squares (a separable problem: variable
    projection, Golub & Pereyra 1973), so the asymptotic covariance is that of the nonlinear
    least-squares fit in all parameters together (Seber & Wild 1989, Sec. 2.1): Jacobian
    J = [∂(A x)/∂T_m, A] of the prediction, influence series z_t = (JᵀJ)⁻¹ J_t r_t, covariance
    by `covariance.influence_cov` (each variance from the influence's long-run variance), and a log-normal
    prior's curvature added to the T_m precision. This replaces a finite-difference curvature
    of the profile likelihood, whose 5 % step measured the curve's higher derivatives too.
    The coefficients' σ are marginal: they include the uncertainty of T_m."""

    names: list[str]  # "tm" or "tm_rise", "tm_fall" (when estimated), then ThrustProblem.names()
    theta: np.ndarray
    cov: np.ndarray
    step: np.ndarray  # Gauss-Newton step of the likelihood, Σ_t z_t (0 at its optimum)
    fit: Fit
    states: list[np.ndarray]
    dirs: list[tuple[float, float]]  # (rise, fall) direction of each estimated motor constant
    prob: ThrustProblem
    pair: tuple[float, float]  # the (rise, fall) constants used
    bias_grad: np.ndarray  # ∂θ/∂(accelerometer z bias), for the σ it adds (`acc_bias_z`)
    lik_tm_cov: np.ndarray  # the likelihood's covariance of the motor constant(s) alone (no prior)

    def thrust_derivs(self, cmd: np.ndarray, t: np.ndarray, gain: np.ndarray | None = None) -> np.ndarray:
        """(N, M, P): ∂(rotor thrust)/∂θ for other commands (another flight; `gain` its voltage
        factor on the commands before the lag), θ in `names` order, at these constants and coefficients
        (for propagating their uncertainty)."""
        pair = self.pair
        v = self.prob.vehicle.replace(thrust_exponents=self.prob.exponents, thrust_coeffs=self.prob.coeffs(self.fit.x))
        cols = []
        for d in self.dirs:
            h = 1e-4 * float(np.mean(pair))
            up = tuple(float(a + h * b) for a, b in zip(pair, d, strict=True))
            dn = tuple(float(a - h * b) for a, b in zip(pair, d, strict=True))
            cols.append((v.thrust(lag_states(cmd, t, up, gain)) - v.thrust(lag_states(cmd, t, dn, gain))) / (2 * h))
        w = lag_states(cmd, t, pair, gain)
        eye = np.eye(len(self.fit.x))
        cols += [v.replace(thrust_coeffs=self.prob.coeffs(e)).thrust(w) for e in eye]
        return np.stack(cols, axis=-1)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    @property
    def coeff_cov(self) -> np.ndarray:
        """Covariance of the thrust coefficients alone (T_m marginalised)."""
        q = len(self.theta) - len(self.fit.x)
        return self.cov[q:, q:]


def prior_terms(tm: float, prior: tuple[float, float] | None) -> tuple[float, float]:
    """Gradient and curvature of `neg_log_prior` at `tm` (0, 0 for the uniform prior)."""
    if prior is None:
        return 0.0, 0.0
    mean, sd = prior
    s2 = math.log1p((sd / mean) ** 2)
    dl = math.log(tm) - (math.log(mean) - 0.5 * s2)
    return (1.0 + dl / s2) / tm, (1.0 / s2 - 1.0 - dl / s2) / tm**2


def _tm_columns(prob: ThrustProblem, tm: np.ndarray, dirs: Sequence[tuple[float, float]], x: np.ndarray) -> np.ndarray:
    """(rows, q): ∂(A x)/∂T_m along each direction by central differences of the exact lag (step
    1e-4 T_m), the shifted states made and reduced `CHUNK` samples at a time
    (`ThrustProblem.state_blocks`)."""
    h = 1e-4 * float(np.mean(tm))
    out = np.empty((len(prob.b), len(dirs)))
    for k, d in enumerate(dirs):
        up, dn = prob.state_blocks(tuple(tm + h * np.asarray(d))), prob.state_blocks(tuple(tm - h * np.asarray(d)))
        start, cur, lp = 0, -1, None
        for (j, wu), (_, wd) in zip(up, dn, strict=True):
            if j != cur:
                lp, cur = prob.lowpass(j), j
            da = prob.lowpassed(lp, prob.design_states([wu]) - prob.design_states([wd]))
            out[start : start + len(da), k] = da @ x / (2 * h)
            start += len(da)
    return out


def _jacobian_blocks(
    prob: ThrustProblem, states: list[np.ndarray], cols: np.ndarray
) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, J block) of J = [`cols` (the T_m columns), A], `CHUNK` samples at a time: the
    (rows, P) Jacobian is never held (`thrust_uncertainty`)."""
    start = 0
    for a in prob.design_blocks(chunks(states)):
        yield start, np.column_stack([cols[start : start + len(a)], a])
        start += len(a)


def thrust_uncertainty(
    prob: ThrustProblem, tm_pair: tuple[float, float], dirs: Sequence[tuple[float, float]], st: DelaySettings
) -> ThrustUncertainty:
    """`ThrustUncertainty` at the motor constants `tm_pair`; `dirs` are the estimated directions
    in (rise, fall): [(1, 1)] for one symmetric T_m, [(1, 0), (0, 1)] for rising/falling
    constants, [] when T_m is not estimated (the coefficients' σ are then conditional on it).
    ∂(A x)/∂T_m by central differences of the exact lag (smooth in T_m; step 1e-4 T_m).

    The Jacobian J is built and reduced `CHUNK` samples at a time (`_jacobian_blocks`): a
    first pass accumulates JᵀJ and the R of a QR of [A | m e_z] (the accelerometer-bias
    gradient), a second writes the influence series into one preallocated (N, P) array, so
    an hour at 1 kHz no longer maps, faults in and frees a dozen (N, P) temporaries per call."""
    fit, states = prob.fit(tm_pair)
    tm = np.asarray(tm_pair, dtype=float)
    cols = _tm_columns(prob, tm, dirs, fit.x)
    q, p = len(dirs), len(dirs) + len(fit.x)
    jtj = np.zeros((p, p))
    # the accelerometer z bias's own uncertainty (`acc_bias_z`): ∂θ/∂β = -(least squares of m e_z)
    bias_r = np.zeros((0, p - q + 1))
    z_row = prob.vehicle.mass * (prob.rows == 2)
    for _, jb in _jacobian_blocks(prob, states, cols):
        jtj += jb.T @ jb
        ones = np.tile(z_row, len(jb) // prob.n_rows)
        bias_r = np.linalg.qr(np.vstack([bias_r, np.column_stack([jb[:, q:], ones])]), mode="r")
    binv = np.linalg.pinv(jtj)
    z = np.empty((len(fit.residual) // prob.n_rows, p))
    for start, jb in _jacobian_blocks(prob, states, cols):
        g = (jb * fit.residual[start : start + len(jb), None]).reshape(-1, prob.n_rows, p).sum(axis=1)
        np.matmul(g, binv, out=z[start // prob.n_rows : (start + len(jb)) // prob.n_rows])
    cov = influence_cov(z, [len(f.t) for f in prob.flights], st.autocorr_correction)
    bias_grad = np.concatenate([np.zeros(q), -np.linalg.lstsq(bias_r[:-1, :-1], bias_r[:-1, -1], rcond=None)[0]])
    names = (["tm"] if q == 1 else ["tm_rise", "tm_fall"][:q]) + prob.names()
    theta = np.concatenate([[float(np.dot(tm, d)) / float(np.sum(d)) for d in dirs], fit.x])
    lik_tm = cov[:q, :q]
    if st.tm_prior is not None and q:
        prec = np.linalg.pinv(cov)
        for k in range(q):
            prec[k, k] += max(prior_terms(float(theta[k]), st.tm_prior)[1], 0.0)
        cov = np.linalg.pinv(prec)
    cov = cov + st.acc_bias_z[1] ** 2 * np.outer(bias_grad, bias_grad)
    return ThrustUncertainty(
        names, theta, cov, z.sum(axis=0), fit, states, list(dirs), prob, tm_pair, bias_grad, lik_tm
    )
