"""`delay.thrust_uncertainty` reduces its Jacobian `CHUNK` samples at a time (issue 14: an hour
at 1 kHz spent a quarter of its CPU in the kernel on the (N, P) temporaries). Its results must
be those of the dense computation it replaced — J stacked whole, (JᵀJ)⁻¹ Σ_rows J_t r_t, the
long-run covariance and the least-squares bias gradient — to 1e-10 relative, or to the
rounding both carry, cond(JᵀJ) × machine ε, where J is that badly conditioned (per-motor curves
of nearly equal commands: cond ~1e8)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rotorid.methods import delay
from rotorid.methods.covariance import influence_cov, ols_influence
from rotorid.methods.delay.uncertainty import prior_terms
from rotorid.signal import CHUNK
from rotorid.vehicle import Vehicle
from test_delay_synthetic import FS, thrust_flight


def _dense(prob: delay.ThrustProblem, pair, dirs, st: delay.DelaySettings):
    """The whole-array computation (the implementation before the blocked one)."""
    fit, states = prob.fit(pair)
    tm = np.asarray(pair, dtype=float)
    h = 1e-4 * float(np.mean(tm))
    cols = [
        (
            prob.design_states(prob.states(tuple(tm + h * np.asarray(d))))
            - prob.design_states(prob.states(tuple(tm - h * np.asarray(d))))
        )
        @ fit.x
        / (2 * h)
        for d in dirs
    ]
    j = np.column_stack([*cols, prob.design_states(states)])
    z = ols_influence(j, fit.residual, prob.n_rows)
    cov = influence_cov(z, [len(f.t) for f in prob.flights], st.autocorr_correction)
    q = len(dirs)
    ones = np.concatenate([np.broadcast_to(prob.rows == 2, (len(f.t), prob.n_rows)).reshape(-1) for f in prob.flights])
    bias = np.concatenate([np.zeros(q), -np.linalg.lstsq(j[:, q:], prob.vehicle.mass * ones, rcond=None)[0]])
    if st.tm_prior is not None and q:
        prec = np.linalg.pinv(cov)
        for k, d in enumerate(dirs):
            prec[k, k] += max(prior_terms(float(np.dot(tm, d)) / float(np.sum(d)), st.tm_prior)[1], 0.0)
        cov = np.linalg.pinv(prec)
    # the blocked T_m columns restart the lag on every block (`ThrustProblem.state_blocks`): its
    # states round differently from the whole flight's, by `drift`, which the central difference
    # divides by its step 1e-4 T_m
    drift = max(
        (
            np.abs(np.vstack([w for _, w in prob.state_blocks(p)]) - np.vstack(prob.states(p))).max()
            / np.abs(np.vstack(prob.states(p))).max()
            for d in dirs
            for p in (tuple(tm + h * np.asarray(d)), tuple(tm - h * np.asarray(d)))
        ),
        default=0.0,
    )
    tol = max(1e-10, np.linalg.cond(j.T @ j) * np.finfo(float).eps, 10 * drift / 1e-4)
    return cov + st.acc_bias_z[1] ** 2 * np.outer(bias, bias), z.sum(axis=0), bias, tol


def _tilted(v: Vehicle) -> Vehicle:
    """Rotors tilted 10° outwards, so the x and y body rows carry thrust too (3 rows per sample)."""
    rotors = []
    for r in v.rotors:
        p = np.asarray(r.position, dtype=float)
        out = np.r_[p[:2] / np.linalg.norm(p[:2]), 0.0]
        axis = np.cos(np.radians(10)) * np.array([0.0, 0.0, 1.0]) + np.sin(np.radians(10)) * out
        rotors.append(dataclasses.replace(r, axis=axis))
    return v.replace(rotors=tuple(rotors))


@pytest.mark.parametrize(
    ("per_motor", "dirs", "pair", "prior", "tilted"),
    [
        (False, [(1.0, 1.0)], (0.05, 0.05), None, False),
        (True, [(1.0, 1.0)], (0.05, 0.05), (0.05, 0.02), False),
        (False, [(1.0, 0.0), (0.0, 1.0)], (0.045, 0.06), None, False),
        (False, [], (0.05, 0.05), None, False),
        (False, [(1.0, 1.0)], (0.05, 0.05), None, True),
    ],
)
def test_blocked_uncertainty_equals_the_dense_computation(per_motor, dirs, pair, prior, tilted):
    # two flights, the first longer than a block, so blocks and flight boundaries both matter
    flights = [thrust_flight(seed=3, duration=1.5 * CHUNK / FS), thrust_flight(seed=4, duration=5.0)]
    v = Vehicle.preset("crazyflie")
    v = _tilted(v) if tilted else v
    st = delay.DelaySettings(tm_prior=prior)
    prob = delay.ThrustProblem(flights, v, (0, 1, 2), per_motor=per_motor)
    assert prob.n_rows == (3 if tilted else 1)
    unc = delay.thrust_uncertainty(prob, pair, dirs, st)
    cov, step, bias, tol = _dense(prob, pair, dirs, st)
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    np.testing.assert_allclose(unc.cov / scale, cov / scale, rtol=0, atol=tol)
    np.testing.assert_allclose(unc.bias_grad, bias, rtol=tol, atol=tol * np.abs(bias).max())
    # the step is 0 at the coefficients' least-squares optimum: compared on the scale of σ
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(unc.step / sd, step / sd, rtol=0, atol=tol)
