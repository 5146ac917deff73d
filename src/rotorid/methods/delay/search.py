"""MAP search of the motor constant T_m (eq. 55-61), and of separate rising/falling constants."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

from rotorid.errors import ExcitationError
from rotorid.methods.covariance import integrated_autocorr_time
from rotorid.methods.delay.problem import ThrustProblem
from rotorid.methods.delay.settings import DelaySettings, tm_support
from rotorid.methods.delay.uncertainty import ThrustUncertainty, prior_terms, thrust_uncertainty


@dataclass(frozen=True)
class TmSearch:
    """Outcome of the T_m search: optimum, std, the evaluated curve, edge flag, the joint
    uncertainty (None at the edge) and the residual's autocorrelation time at the optimum."""

    tm: float
    std: float
    grid: np.ndarray
    sse: np.ndarray
    nlp: np.ndarray
    at_edge: bool
    tau_int: float
    n: int
    evaluations: int
    unc: ThrustUncertainty | None = None


def neg_log_prior(tm: np.ndarray | float, prior: tuple[float, float] | None) -> np.ndarray | float:
    """-log p(T_m) for a log-normal prior with given mean and std (s); 0 for the uniform prior."""
    if prior is None:
        return 0.0 * np.asarray(tm)
    mean, sd = prior
    s2 = math.log1p((sd / mean) ** 2)
    mu = math.log(mean) - 0.5 * s2
    lt = np.log(tm)
    return lt + (lt - mu) ** 2 / (2.0 * s2)


def _polish(
    prob: ThrustProblem,
    tm_pair: tuple[float, float],
    dirs: Sequence[tuple[float, float]],
    st: DelaySettings,
    nlp: Any,
) -> tuple[tuple[float, float], ThrustUncertainty]:
    """One Newton step of the negative log-posterior from the search's optimum (likelihood
    by its Gauss-Newton / sandwich approximation, prior exactly), kept if it lowers `nlp`
    (a function of the pair): the optimum then no longer depends on the search tolerance,
    which may exceed σ(T_m) on long flights. Returns the pair and its uncertainty."""
    unc = thrust_uncertainty(prob, tm_pair, dirs, st)
    q = len(dirs)
    h_lik = np.linalg.pinv(unc.lik_tm_cov)
    grad = np.array([prior_terms(float(v), st.tm_prior)[0] for v in unc.theta[:q]])
    h_post = h_lik + np.diag([max(prior_terms(float(v), st.tm_prior)[1], 0.0) for v in unc.theta[:q]])
    try:
        delta = np.linalg.solve(h_post, h_lik @ unc.step[:q] - grad)
    except np.linalg.LinAlgError:  # no curvature along a direction: no Newton step, the search's optimum stands
        return tm_pair, unc
    new = np.asarray(tm_pair, dtype=float) + sum(dk * np.asarray(d) for dk, d in zip(delta, dirs, strict=True))
    lo, hi = tm_support(st)
    if not np.all((new > lo) & (new < hi)) or not nlp(tuple(new)) < nlp(tm_pair):
        return tm_pair, unc
    pair = (float(new[0]), float(new[1]))
    return pair, thrust_uncertainty(prob, pair, dirs, st)


def search_tm(problem: ThrustProblem, settings: DelaySettings) -> TmSearch:
    """MAP estimate of T_m (eq. 55-61): coarse log-spaced bracket over the prior's support, then
    Brent (bounded) to `tm_xtol` and a Newton polish (`_polish`); std from the joint
    uncertainty (`thrust_uncertainty`).

    The likelihood's weight n_eff = n / tau_int uses the residual's autocorrelation time at
    the optimum: away from it the residual carries the lag-model error, a smooth signal with
    tau_int far above its value at the optimum, which made σ too large. It matters for the search only with a prior (whose balance against
    the data it sets); the curve shown and the excitation test use it too."""
    lo, hi = tm_support(settings)
    evals: dict[float, float] = {}

    def sse(tm: float) -> float:
        if tm not in evals:
            evals[tm] = problem.sse((tm, tm))
        return evals[tm]

    grid = np.geomspace(lo, hi, settings.tm_grid)
    coarse = np.array([sse(float(g)) for g in grid])
    if not np.all(coarse > 0):  # an exact fit (an all-zero accelerometer) has no likelihood to weigh
        raise ExcitationError("delay: the thrust fit is exact (zero residual); the accelerometer holds no signal")
    n = len(problem.b)
    lengths = [len(f.t) for f in problem.flights]

    def tau_at(tm: float) -> float:
        if not settings.autocorr_correction:
            return 1.0
        return residual_tau(problem.fit((tm, tm))[0].residual, problem, lengths)

    def minimise(tau: float) -> float:
        n_eff = n / tau
        vals = np.array(
            [
                0.5 * n_eff * math.log(s) + float(neg_log_prior(float(g), settings.tm_prior))
                for g, s in zip(grid, coarse, strict=True)
            ]
        )
        i = int(np.argmin(vals))
        a, b = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
        f = lambda tm: 0.5 * n_eff * math.log(sse(tm)) + float(neg_log_prior(tm, settings.tm_prior))
        return float(
            optimize.minimize_scalar(f, bounds=(a, b), method="bounded", options={"xatol": settings.tm_xtol}).x
        )

    tm = minimise(tau_at(float(grid[np.argmin(coarse)])))
    tau = tau_at(tm)
    if settings.tm_prior is not None:  # the prior's balance against the data uses tau at the optimum
        tm = minimise(tau)
    n_eff = n / tau
    at_edge = (tm - lo) <= 2 * settings.tm_xtol or (hi - tm) <= 2 * settings.tm_xtol
    nlp = lambda pair: 0.5 * n_eff * math.log(problem.sse(pair)) + float(neg_log_prior(pair[0], settings.tm_prior))
    if at_edge:
        unc, std = None, float("nan")
    else:
        pair, unc = _polish(problem, (tm, tm), [(1.0, 1.0)], settings, nlp)
        tm = pair[0]
        evals[tm] = unc.fit.sse
        std = float(unc.std[0])
    ts = np.array(sorted(evals))
    ss = np.array([evals[k] for k in ts])
    nl = 0.5 * n_eff * np.log(ss) + neg_log_prior(ts, settings.tm_prior)
    return TmSearch(tm, std, ts, ss, nl, bool(at_edge), tau, n, len(evals), unc)


def residual_tau(residual: np.ndarray, problem: ThrustProblem, lengths: Sequence[int]) -> float:
    """Integrated autocorrelation time of the thrust residual (flights as segments), averaged
    over the body rows."""
    r = residual.reshape(-1, problem.n_rows)
    return float(np.mean([integrated_autocorr_time(r[:, k], lengths) for k in range(problem.n_rows)]))


@dataclass(frozen=True)
class AsymSearch:
    tm_rise: float
    tm_fall: float
    std: tuple[float, float]
    sse: float
    f_stat: float
    p_value: float
    evaluations: int
    at_edge: bool
    unc: ThrustUncertainty | None = None


def rise_fall_fit(
    problem: ThrustProblem, sym: TmSearch, settings: DelaySettings, x0: np.ndarray
) -> tuple[float, float, Callable[[Any], float], list[int]]:
    """Rising and falling constants minimising the negative log posterior (the SSE at the
    residual's effective sample count plus the T_m prior) by a bounded quasi-Newton (L-BFGS-B)
    search from `x0`, never worse than the symmetric optimum; also that objective and its
    evaluation count (a one-element list), for a polish to go on with."""
    lo, hi = tm_support(settings)
    n_eff = sym.n / sym.tau_int
    count = [0]

    def nlp(x: Any) -> float:
        count[0] += 1
        tr, tf = float(x[0]), float(x[1])
        prior = float(neg_log_prior(tr, settings.tm_prior) + neg_log_prior(tf, settings.tm_prior))
        return 0.5 * n_eff * math.log(problem.sse((tr, tf))) + prior

    res = optimize.minimize(nlp, np.clip(x0, lo, hi), method="L-BFGS-B", bounds=[(lo, hi)] * 2)
    if res.fun > nlp(np.array([sym.tm, sym.tm])):
        res.x = np.array([sym.tm, sym.tm])
    return float(res.x[0]), float(res.x[1]), nlp, count


def search_tm_asymmetric(problem: ThrustProblem, sym: TmSearch, settings: DelaySettings) -> AsymSearch:
    """Rising and falling constants by a bounded quasi-Newton (L-BFGS-B) search from the symmetric
    optimum and a Newton polish, std from the joint uncertainty (`thrust_uncertainty`), and the
    F-test of the split against the symmetric model."""
    lo, hi = tm_support(settings)
    n_eff = sym.n / sym.tau_int
    x0 = np.array([sym.tm * 1.05, sym.tm * 0.95])  # just off the diagonal
    tr, tf, nlp, count = rise_fall_fit(problem, sym, settings, x0)
    at_edge = any(min(v - lo, hi - v) <= 2 * settings.tm_xtol for v in (tr, tf))
    std: tuple[float, float] = (float("nan"), float("nan"))
    unc = None
    if not at_edge:
        (tr, tf), unc = _polish(problem, (tr, tf), [(1.0, 0.0), (0.0, 1.0)], settings, nlp)
        std = (float(unc.std[0]), float(unc.std[1]))
    sse_a = problem.sse((tr, tf))
    sse_s = problem.sse((sym.tm, sym.tm))
    p = len(problem.names()) + 2
    dof = max(n_eff - p, 1.0)
    f_stat = max(sse_s - sse_a, 0.0) / (sse_a / dof)
    return AsymSearch(tr, tf, std, sse_a, float(f_stat), float(special.fdtrc(1, dof, f_stat)), count[0], at_edge, unc)
