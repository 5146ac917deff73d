"""Errors in variables in IDIM-TLS (`TlsSettings.eiv`): the noise floor read above the band is
the sensors' white noise, the propagated noise moment matches the noise the rows actually
carry, and the bias-compensated final fit removes the bias that noise gives TLS."""

from __future__ import annotations

import numpy as np
import pytest

from rotorid.methods import tls
from rotorid.motion import airborne_pieces
from test_tls_unit import _true_params, hexa_tilted, kinematic_flight

ACC, GYRO, POS, ANG = 0.05, 0.002, 3e-4, 1e-3


def test_noise_floor_reads_the_white_noise_level() -> None:
    v = hexa_tilted()
    p = airborne_pieces(kinematic_flight(v, seed=3, dur=60.0, noise=(ACC, GYRO, 0, 0)))[0]
    sd = np.sqrt(tls._noise_floor(np.column_stack([p.gyro, p.acc]), p.rate, 45.0))
    np.testing.assert_allclose(sd, [GYRO] * 3 + [ACC] * 3, rtol=0.05)
    assert np.all(tls._noise_floor(p.gyro[:, :1], p.rate, 0.46 * p.rate) == 0)  # no bin above 0.9 Nyquist


@pytest.mark.parametrize("source", ["imu", "mocap"])
def test_noise_moment_matches_the_noise_the_rows_carry(source: str) -> None:
    v = hexa_tilted()
    noise = (ACC, GYRO, 0, 0) if source == "imu" else (0, 0, POS, ANG)
    noisy, clean = (kinematic_flight(v, seed=3, dur=60.0, noise=nz) for nz in (noise, (0, 0, 0, 0)))
    st = tls.TlsSettings(source=source, acc_bias=False)
    m = {"A": v.mass}
    rows, resolved, wn, blocks, _ = tls._system({"A": [noisy]}, v, m, st, None)
    wc = tls._system({"A": [clean]}, v, m, st, None)[2]
    dw = wn - wc  # the same trajectory: the rows' noise itself
    moment = tls._noise_moment({"A": [noisy]}, v, m, st, rows, resolved)
    for b in range(6):
        emp = np.diag(dw[blocks == b].T @ dw[blocks == b]) / np.sum(blocks == b)
        big = emp > 1e-3 * emp.max()
        assert big.sum() >= 3
        np.testing.assert_allclose(np.diag(moment[b])[big], emp[big], rtol=0.2)
        assert np.all(np.diag(moment[b])[~big] <= 2e-3 * emp.max())


def test_bias_compensated_fit_removes_the_errors_in_variables_bias() -> None:
    v = hexa_tilted()
    truth = _true_params(v)
    f = kinematic_flight(v, seed=1, dur=60.0, noise=(ACC, 0.01, 0, 0))
    z = {}
    for eiv in (False, True):
        res = tls.identify({"A": [f]}, v, settings=tls.TlsSettings(motor_spread=0.0, eiv=eiv, essential=False))
        z[eiv] = {k: (e.value - truth[k]) / e.std for k, e in res.params.items() if k in truth}
    assert max(abs(x) for x in z[False].values()) > 20  # TLS: k_d, I_zz ~140σ off
    assert max(abs(x) for x in z[True].values()) < 3, z[True]
