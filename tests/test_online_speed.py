"""The online estimator's lean per-sample step (issue 14 goal 5) computes what Kwon et al.'s
algorithms say, written plainly: `Reference` below is a straightforward matrix form of the step
(numpy vectors, `P h`, `P - g gᵀ / d`, no unrolling), and every output of the estimator (the
whole state history of `run`, the RLS rows it records, the final estimates with σ of `identify`,
and `update`'s states) must equal it to 1e-9 relative on seeded flights of every variant, at 1 kHz
per sample and in 100 Hz blocks, from rotor speeds and through the motor lag from commands.

The reference is deliberately slow and literal; a speed-up that changes a result beyond rounding
fails here. Its conventions are the module's (see `rotorid.methods.online`): midpoint means of
two samples, the correction law's moved term, the errors-in-variables row weight, blocks on the
grid of 1/rate_hz.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from rotorid.frames import GRAVITY
from rotorid.methods import online
from rotorid.methods.online import passes

RTOL = 1e-9


class Reference(online.OnlineEstimator):
    """Alg. 1–7 in plain matrix form (same settings, same conventions), replacing `run`."""

    def run(self, flight):
        """The reference of `OnlineEstimator.run`: the same trajectories, rows and final state."""
        s, veh = self.settings, self.vehicle
        use_rs = flight.rotor_speed is not None and veh.motor_input == "rad_s"
        self._source = "rotor_speed" if use_rs else "cmd"
        u_all = flight.rotor_speed if use_rs else flight.cmd
        mix = veh.mixer()
        k = np.broadcast_to(np.atleast_2d(veh.thrust_coeffs), (veh.n_rotors, len(veh.thrust_exponents)))
        ex = np.array(veh.thrust_exponents, dtype=float)
        per = None if s.rate_hz is None else 1.0 / s.rate_hz
        self.bz = 1.0 if s.yaw_moment > 0 else 0.0  # the constant yaw moment's regressor (0: left out)
        self.P1 = np.diag(np.array([*s.theta1_var0, s.yaw_moment**2 if s.yaw_moment > 0 else 1.0], dtype=float))
        self.t1 = np.array([*s.j0, *s.com0, 0.0], dtype=float)
        self.P2 = np.diag(np.array(s.theta2_var0, dtype=float))
        self.t2 = np.array([s.mass0, s.mass0 * s.imu_z0])
        self.W, self.Pw = np.array(s.omega0, dtype=float), np.full(3, s.omega_var0)
        self.ch1, self.ch2 = [0.0, 0], [0.0, 0]
        self.prev = self.tp = self.lpf = None
        self.act, self.al, self.alr = np.zeros(3, bool), np.zeros(3), np.zeros(3)
        self._rows, rec = [], []
        lagged = self._source == "cmd" and veh.tm_rise is not None
        given = s.motor_hold if s.motor_hold is not None else flight.meta.get("motor_hold", 0.0)
        hold = 0.0 if lagged else given  # how long a motor sample holds after its stamp
        last, this = [], []  # (t, thrusts) of the samples of the last block and of this one
        lag = uprev = t_raw = t_emit = blk = None
        for i, t in enumerate(flight.t):
            u = u_all[i].astype(float)
            if self._source == "cmd" and veh.tm_rise is not None:  # first-order lag, rise/fall
                if lag is None:
                    lag, uprev = u.copy(), u
                else:
                    tau = np.where(uprev > lag, veh.tm_rise, veh.tm_fall or veh.tm_rise)
                    a = np.exp(-(t - t_raw) / tau)
                    lag = a * lag + (1.0 - a) * uprev
                    uprev = u
                u = lag.copy()
            f = (k * u[:, None] ** ex).sum(axis=1)
            q = None if flight.quat is None else flight.quat[i]
            if i:
                delta = 0.5 * min(hold, t - t_raw)  # the sample's thrust is centred δ after its stamp
            t_raw = t
            this.append((t, f))
            x = np.concatenate([flight.gyro[i], flight.acc[i], f])
            close = per is None or t_emit is None
            if close:
                t_emit = None if per is None else t + per
                m, tb = x, t
            else:
                blk = [0, 0.0, np.zeros(x.shape)] if blk is None else blk
                blk[0], blk[1], blk[2] = blk[0] + 1, blk[1] + t, blk[2] + x
                if t >= t_emit - 1e-6 * per:
                    close, m, tb = True, blk[2] / blk[0], blk[1] / blk[0]
                    t_emit += per * (1 + math.floor((t - t_emit) / per + 1e-6))
                    blk = None
            if close:
                fb, fw = m[6:], None
                if last:  # the step's mean thrust: the blocks' means of C - δ f, C = ∫ f dt (trapezoid)
                    ts, fs = (np.array(v) for v in zip(*(last + this), strict=True))
                    c = np.vstack(
                        [np.zeros(len(f)), np.cumsum(0.5 * np.diff(ts)[:, None] * (fs[1:] + fs[:-1]), axis=0)]
                    )
                    c -= delta * fs
                    fw = (c[len(last) :].mean(axis=0) - c[: len(last)].mean(axis=0)) / (tb - ts[: len(last)].mean())
                last, this = this, []
                self.step(tb, m[:6], fb, None if fw is None else mix @ fw, mix[:3] @ fb, q)
            rec.append(self.record())
        return self.trajectories(flight, rec)

    def record(self):
        sc1, sc2 = _scale(self.ch1), _scale(self.ch2)
        m, mz = self.t2
        d = np.array([-mz / m**2, 1.0 / m])
        return {
            "omega": self.W.copy(),
            "omega_std": np.sqrt(self.Pw),
            "alpha": self.al.copy(),
            "alpha_raw": self.alr.copy(),
            "active": self.act.copy(),
            "enabled": self.enabled,
            "theta1": self.t1[:5].copy(),
            "theta1_std": np.sqrt(np.clip(np.diag(self.P1)[:5], 0.0, None) * sc1),
            "mass": m,
            "mass_std": math.sqrt(max(self.P2[0, 0], 0.0) * sc2),
            "imu_z": self._com_z + mz / m,
            "imu_z_std": math.sqrt(max(d @ self.P2 @ d * sc2, 0.0)),
        }

    def trajectories(self, flight, rec):
        self.th1, self.s1 = self.t1.tolist(), self.P1.ravel().tolist()
        self.th2, self.s2 = self.t2.tolist(), [self.P2[0, 0], self.P2[0, 1], self.P2[1, 1]]
        self._chi1, self._chi2 = self.ch1, self.ch2  # the a-posteriori scales (the fixed point's `KfModel`)
        out = {key: np.array([r[key] for r in rec]) for key in rec[0]}
        out["t"] = flight.t.copy()
        return out

    def step(self, t, x, f, w6, F, q):
        """One step from the block means x = (gyro, acc), the thrusts f and their force F, and
        the step's mean wrench w6 (None at the first)."""
        g, acc = x[0:3], x[3:6]
        if self.tp is None:
            self.tp, self.prev = t, (x, F)
            if not self._kf:
                self.W = g.copy()
            return
        dt, (x0, F0) = t - self.tp, self.prev
        self.tp, self.prev = t, (x, F)
        self.alr = (g - x0[0:3]) / dt
        Fm, Mm, am = w6[:3], w6[3:], 0.5 * (x0[3:6] + acc)
        self.F2 = 0.5 * (F0 + F)  # the RLS2 rows' force: the mean of the two blocks, as the accelerometer
        if not self.enabled:
            self.enable(t, dt, acc, q)
        w0 = self.W
        w1, act, va = self.kf(dt, Fm, Mm, g) if self._kf else (g.copy(), np.ones(3, bool), None)
        self.W, self.act, self.al = w1, act, (w1 - w0) / dt
        if self.enabled:
            self.rls(t, dt, 0.5 * (w0 + w1), act, va, Fm, Mm, am)

    def enable(self, t, dt, acc, q):
        if q is None:
            az = np.linalg.norm(acc) - GRAVITY
        else:
            w, x, y, z = q
            az = np.array([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]) @ acc - GRAVITY
        self._az += dt / (self.settings.enable_tau + dt) * (az - self._az)
        if abs(self._az) > self.settings.a_z_allow:
            self.enabled, self.t_enabled = True, t

    def kf(self, dt, Fm, Mm, g):
        """Alg. 1–2 (eq. 22, 29) and the correction law's test (Alg. 4)."""
        s, m = self.settings, self._kf_model  # the KF's model: the running RLS or held (`KfModel`)
        t1, P1, sc = (
            (self.t1, self.P1, _scale(self.ch1)) if m is None else (np.array(m[0]), np.reshape(m[1], (6, 6)), m[2])
        )
        com = np.array([t1[3], t1[4], self._com_z])
        u = Mm - _cross(com, Fm) - np.array([0.0, 0.0, t1[5]])
        J = np.maximum(t1[:3], s.j_min)
        w = self.W
        wb = w + (u - _cross(w, J * w)) / J * dt
        pb = self.Pw + u**2 * np.diag(P1)[:3] * dt**2 * sc / J**4 + s.q_omega * dt
        R, c = dt / s.gyro_nd**2, s.c_sigma * s.gyro_nd / math.sqrt(dt)
        r = np.abs(g - wb)
        rm = np.where(r > c, R * r / c, R)
        kk = pb / (pb + 1.0 / rm)
        act = np.abs(w) >= s.n_sigma * np.sqrt(self.Pw)
        self.Pw = (1.0 - kk) * pb
        self.gain = (*kk, *((wb - w) / dt))  # gain and model acceleration, recorded with the rows
        return wb + kk * (g - wb), act, kk**2 / rm / dt**2

    def rls(self, t, dt, om, act, va, Fm, Mm, am):
        """Alg. 3–7: regressors, correction law with the moved term, RLS and RLS2 row by row."""
        s, (p, q, r), al, cz = self.settings, om, self.al, self._com_z
        H1 = np.array(
            [
                [al[0], -q * r, q * r, 0.0, Fm[2], 0.0],
                [p * r, al[1], -p * r, -Fm[2], 0.0, 0.0],
                [-p * q, p * q, al[2], Fm[1], -Fm[0], self.bz],
            ]
        )
        y1 = Mm + cz * np.array([Fm[1], -Fm[0], 0.0])
        off = ~act
        moved = np.where(off, H1[:, :3], 0.0)
        y1 = y1 - moved @ self.t1[:3]
        H1[:, :3][:, off] = 0.0
        A = np.outer([p, q, r], [p, q, r]) - (p * p + q * q + r * r) * np.eye(3)
        A += np.array([[0, -al[2], al[1]], [al[2], 0, -al[0]], [-al[1], al[0], 0]])  # [ω]x² + [α]x
        lever = np.array([self._imu_xy[0] - self.t1[3], self._imu_xy[1] - self.t1[4]])
        on = np.array([act[1] and act[2], act[0] and act[2], act[0] and act[1]]) if self._kf else np.ones(3, bool)
        H2 = np.column_stack([am - A[:, :2] @ (lever * on[:2]), -A[:, 2] * on[2]])
        y2 = self.F2.copy()
        if self._lpf:
            flat = np.concatenate([H1.ravel(), y1, H2.ravel(), y2])
            if self.lpf is not None:
                flat = self.lpf - math.expm1(-dt / s.lpf_tau) * (flat - self.lpf)
            self.lpf = flat
            H1, y1, H2, y2 = flat[:18].reshape(3, 6), flat[18:21], flat[21:27].reshape(3, 2), flat[27:30]
        rv = s.moment_nd**2 / dt
        r1 = rv + (self.t1[:3] ** 2 + np.diag(self.P1)[:3]) * va if s.eiv and va is not None else np.full(3, rv)
        r1 = np.where(act, r1, rv)
        th_moi = self.t1[:3].tolist()
        for h, y, rr in zip(H1, y1, r1, strict=True):
            self.t1, self.P1 = _rls_row(self.t1, self.P1, h, y, rr, self.ch1)
        r2 = s.force_nd**2 / dt
        for h, y in zip(H2, y2, strict=True):
            self.t2, self.P2 = _rls_row(self.t2, self.P2, h, y, r2, self.ch2)
        gain = self.gain if self._kf else (0.0,) * 6
        self._rows.append(  # flat, in `RlsRows`'s order; the step's middle last: the time the report plots the row at
            np.concatenate([H1.ravel(), y1, r1, H2.ravel(), y2, [r2], moved.ravel(), th_moi, gain, [t - 0.5 * dt]])
        )


def _cross(a, b):
    """a × b of two 3-vectors, written out (np.cross costs ~10 µs a call: a quarter of the reference's time)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _rls_row(th, P, h, y, r, chi):
    """Alg. 5 / 7 for one row of a diagonal R: gain P h / d, d = hᵀ P h + r."""
    g = P @ h
    d = h @ g + r
    e = y - h @ th
    chi[0] += e * e / d
    chi[1] += 1
    return th + g * e / d, P - np.outer(g, g) / d


def _scale(chi):
    return chi[0] / chi[1] if chi[1] > 10 else 1.0


@functools.cache
def _scenario(imu_rate: float):
    from rotorid.sim import scenarios

    sc = scenarios.run("kwon-payload", seed=4, imu_rate=imu_rate, duration=10.0)
    return sc.flights["trajectory"].window(0.0, 6.0), sc.vehicle  # take-off at 1.5 s, then all three axes


def _lag_case():
    """The same flight driven by commands through an asymmetric motor lag (the rotor speeds
    given as commands of a vehicle whose thrust curve is a polynomial in them)."""
    fl, veh = _scenario(1000.0)
    k2 = float(np.ravel(veh.thrust_coeffs)[0])
    lagged = veh.replace(
        tm_rise=0.03,
        tm_fall=0.06,
        motor_input="normalized",
        thrust_exponents=(0, 1, 2),
        thrust_coeffs=np.array([0.01, 1e-5, k2]),
    )
    return fl.replace(cmd=fl.rotor_speed, rotor_speed=None), lagged


def _close(name, a, b) -> None:
    """Equal to RTOL relative, per column, on the column's own scale."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, name
    scale = np.max(np.abs(b), axis=0) if b.ndim else abs(b)
    err = np.max(np.abs(a - b), axis=0) if b.ndim else abs(a - b)
    assert np.all(err <= RTOL * scale), (name, err, scale)


CASES = {
    "kwon 1 kHz per sample": ("kwon", None, 1000.0),
    "kwon 100 Hz blocks": ("kwon", 100.0, 1000.0),
    "kwon literal, 250 Hz log in blocks": ("literal", 100.0, 250.0),
    "rls per sample": ("rls", None, 1000.0),
    "rls-lpf 100 Hz blocks": ("rls-lpf", 100.0, 1000.0),
    "kwon motor lag from commands": ("kwon", None, "lag"),
    "kwon 250 Hz log, 2 ms motor hold": ("kwon", 100.0, 250.0, 0.002),
    "kwon per sample, 0.5 ms motor hold": ("kwon", None, 1000.0, 0.0005),
    "kwon per sample, point samples": ("kwon", None, 1000.0, 0.0),
    "kwon 250 Hz log, point samples": ("kwon", 100.0, 250.0, 0.0),
}


def _identify(cls, fl, veh, settings, monkeypatch):
    """`online.identify` with the estimator class `cls`; returns the result and the estimator.
    The fixed point stops after its second run: every later run is the second's code again (the
    KF held at the previous run's θ1) and costs the slow reference as much; when it stops is
    tests/test_online_fixed_point.py's."""
    made = []

    class Kept(cls):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(passes, "OnlineEstimator", Kept)  # the stage that runs the estimator
    monkeypatch.setattr(passes, "FIXED_POINT_PASSES", 2)
    return online.identify(fl, veh, settings), made[-1]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.slow
def test_step_equals_the_plain_reference(case: str, monkeypatch) -> None:
    variant, rate, log, *hold = CASES[case]
    fl, veh = _lag_case() if log == "lag" else _scenario(log)
    settings = (
        online.OnlineSettings.literal(rate_hz=rate)
        if variant == "literal"
        else online.OnlineSettings(variant, rate_hz=rate, motor_hold=hold[0] if hold else None)
    )
    res, est = _identify(online.OnlineEstimator, fl, veh, settings, monkeypatch)
    ref, ref_est = _identify(Reference, fl, veh, settings, monkeypatch)
    tr, tr_ref = res.diagnostics, ref.diagnostics
    assert tr_ref["enabled"].any() and not tr_ref["enabled"].all()
    if variant in ("kwon", "literal"):
        assert 0.05 < tr_ref["active"][tr_ref["enabled"]].mean() < 0.95  # the correction law acts both ways
    for key in ("t", "omega", "omega_std", "alpha", "alpha_raw", "active", "enabled"):
        _close(key, tr[key], tr_ref[key])
    for key in ("theta1", "theta1_std", "mass", "mass_std", "imu_z", "imu_z_std"):
        _close(key, tr[key], tr_ref[key])
    rows, ref_rows = est.recorded_rows(), ref_est.recorded_rows()
    assert len(rows.t) == len(ref_rows.t) > 100
    for name, value in rows._asdict().items():
        _close(name, value, getattr(ref_rows, name))
    assert res.params.keys() == ref.params.keys()
    for name, p in ref.params.items():
        _close(name, res.params[name].value, p.value)
        _close(name + " σ", res.params[name].std, p.std)


def test_update_states_equal_the_reference_history() -> None:
    """`update` one sample at a time (the live-loop path) gives the reference's history; it has
    no flight to take `meta["motor_hold"]` from, so it reads point samples (0)."""
    fl, veh = _scenario(1000.0)
    ref = Reference(veh, online.OnlineSettings(rate_hz=None, motor_hold=0.0)).run(fl)
    est = online.OnlineEstimator(veh, online.OnlineSettings(rate_hz=None))
    states = [
        est.update(online.Sample(t, g, a, c, rs))
        for t, g, a, c, rs in zip(fl.t, fl.gyro, fl.acc, fl.cmd, fl.rotor_speed, strict=True)
    ]
    for field in online.OnlineState._fields:
        _close(field, [getattr(st, field) for st in states], ref[field])
