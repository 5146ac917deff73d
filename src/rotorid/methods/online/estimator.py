"""The streaming estimator (Kwon et al. Alg. 1–7): one sample at a time through the rotor model
(eq. 1–5), the KF on the angular rate (Alg. 1–2), the correction law (Alg. 3–4, 6) and the two
RLS (Alg. 5, 7); `OnlineEstimator.run` streams a whole flight and records the RLS rows that the
batch solve (`rotorid.methods.online.solve`) reuses."""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import add, mul, sub
from typing import Any, NamedTuple

import numpy as np

from rotorid.errors import MissingChannelError, RotoridError, VehicleError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.methods.online.settings import MIN_RATE_HZ, N1, OnlineSettings, check_hold
from rotorid.vehicle import Vehicle

_NO_MOVE = ((0.0, 0.0, 0.0),) * 3  # no H1 entry moved to the output (every MOI column active)


class KfModel(NamedTuple):
    """The KF's process model held fixed (`identify`'s fixed-point passes, `OnlineSettings.fixed_point`):
    θ1 with the yaw moment (6), its RLS covariance (36, row-major) and that covariance's
    a-posteriori scale, which eq. 22 and eq. 29 use instead of the running RLS's."""

    theta1: tuple[float, ...]
    cov: tuple[float, ...]
    scale: float


class RlsRows(NamedTuple):
    """The rows the RLS (Alg. 5) and RLS2 (Alg. 7) processed, one per enabled step (T of them),
    as `OnlineEstimator.run` recorded them: H1 (T, 3, 6), its output and row variances (T, 3);
    H2 (T, 3, 2), its output (T, 3) and row variance (T,); the H1 entries the correction law moved
    to the output (T, 3 rows, 3 MOI columns) with the running Ĵ they moved with (T, 3); and the
    KF's gain and model acceleration per axis (T, 6; 0 without the KF); and the time each row
    belongs to (T,), the midpoint of its step (where its first difference α̂ is centred)."""

    h1: np.ndarray
    y1: np.ndarray
    r1: np.ndarray
    h2: np.ndarray
    y2: np.ndarray
    r2: np.ndarray
    moved: np.ndarray
    jhat: np.ndarray
    kf: np.ndarray
    t: np.ndarray


class Sample(NamedTuple):
    """One IMU/motor sample: time (s), gyro (rad/s, body FLU), accelerometer specific force
    (m/s², body FLU), motor commands and/or measured rotor speeds (one per rotor), and
    optionally the attitude quaternion (w, x, y, z) body->world for the enable condition."""

    t: float
    gyro: Sequence[float]
    acc: Sequence[float]
    cmd: Sequence[float] | None = None
    rotor_speed: Sequence[float] | None = None
    quat: Sequence[float] | None = None


class OnlineState(NamedTuple):
    """The estimator after one `update` (`t` is the time of the last estimator step, i.e. of
    the last averaged block): filtered rate ω̂ and its KF std, angular acceleration
    α̂, whether the RLS is enabled, θ1 = [J_xx, J_yy, J_zz, com_x, com_y] and θ2-derived
    [mass, imu_z] with their standard deviations."""

    t: float
    enabled: bool
    omega: tuple[float, float, float]
    omega_std: tuple[float, float, float]
    alpha: tuple[float, float, float]
    theta1: tuple[float, ...]
    theta1_std: tuple[float, ...]
    mass: float
    mass_std: float
    imu_z: float
    imu_z_std: float


def rotor_model(vehicle: Vehicle) -> tuple[list[list[float]], list[tuple[float, ...]], tuple[int, ...]]:
    """Mixer rows (6 x M, about the body origin, drag with k_tau) and per-rotor thrust
    coefficients, as Python lists for the per-sample step. Raises if the vehicle lacks them."""
    missing = [n for n in ("thrust_coeffs", "k_tau") if getattr(vehicle, n) is None]
    if missing:
        raise VehicleError(
            f"vehicle '{vehicle.name}' ({vehicle.source}) has no {' and no '.join(missing)}: the online "
            "estimator needs the rotor coefficients as known inputs; identify them first "
            "(rotorid identify --method delay or tls) and pass the exported vehicle TOML"
        )
    if vehicle.k_tau < 0 or not np.all(vehicle.thrust(np.full((1, vehicle.n_rotors), vehicle.cmd_max)) > 0):
        raise VehicleError(f"vehicle '{vehicle.name}': online needs k_tau >= 0 and positive thrust at full command")
    mix = vehicle.mixer().tolist()
    k = np.atleast_2d(vehicle.thrust_coeffs)
    k = np.broadcast_to(k, (vehicle.n_rotors, k.shape[-1]))
    return mix, [tuple(float(x) for x in row) for row in k], vehicle.thrust_exponents


class OnlineEstimator:
    """Streaming estimator (Kwon et al. Alg. 1–7). `update(sample)` consumes one sample and
    returns the `OnlineState`; `run(flight)` streams a whole log through the same step and
    returns the trajectories (dict of arrays). `kf_model` holds the KF's process model fixed
    (`KfModel`; None: the running RLS estimate, Alg. 1)."""

    def __init__(
        self, vehicle: Vehicle, settings: OnlineSettings | None = None, kf_model: KfModel | None = None
    ) -> None:
        self.vehicle = vehicle
        self._kf_model = kf_model
        self.settings = s = settings or OnlineSettings()
        self._mix, kthr, exps = rotor_model(vehicle)
        self._poly = [list(zip(k, exps, strict=True)) for k in kthr]
        # one monomial k u^e per rotor (the usual u² law) is summed without the generic loop, and
        # the mixer's zero rows (no in-plane force from coplanar rotors) are not multiplied out
        self._mono = [k[0] for k in kthr] if len(exps) == 1 else None
        self._exps = [exps[0]] * vehicle.n_rotors
        self._mix_rows = [row if any(row) else None for row in self._mix]
        self._m = vehicle.n_rotors
        self._tm = (vehicle.tm_rise, vehicle.tm_fall if vehicle.tm_fall is not None else vehicle.tm_rise)
        imu = vehicle.imu_offset
        self._imu_xy = (float(imu[0]), float(imu[1]))
        self._com_z = float(vehicle.com[2]) if vehicle.com is not None else 0.0
        self._bz = 1.0 if s.yaw_moment > 0 else 0.0  # regressor of the constant yaw moment (0: off)
        self._kf = s.variant == "kwon"
        # the step's constants, bound once: gyro_nd², c_sigma gyro_nd, q_omega, n_sigma, j_min
        self._kfc = (s.gyro_nd * s.gyro_nd, s.c_sigma * s.gyro_nd, s.q_omega, s.n_sigma, *s.j_min)
        self._nd2 = (s.moment_nd * s.moment_nd, s.force_nd * s.force_nd, s.eiv)
        self._lpf = s.variant == "rls-lpf"
        self._source: str | None = None
        self._t: float | None = None  # time of the last estimator step (block)
        self._t_raw: float | None = None  # time of the last sample
        self._period = None if s.rate_hz is None else 1.0 / s.rate_hz
        self._t_emit: float | None = None  # end of the current block on the grid of _period
        self._blk: list | None = None  # [count, sum t, sums of gyro, acc, thrusts, thrust integral]
        self._hold = 0.0  # `OnlineSettings.motor_hold`, resolved with the motor source (`_motor_state`)
        self._meta_hold = 0.0  # the flight's `meta["motor_hold"]` (`run`); the streaming `update`: none
        self._lagged = False  # the commands run through the motor lag (`_motor_state`)
        self._fl: list[float] | None = None  # rotor thrusts of the last sample
        self._wl: tuple = ()  # their force and moment (every sample a step)
        self._cf: list[float] = [0.0] * self._m  # trapezoidal ∫ thrust dt up to the last sample
        self._cbar: tuple | None = None  # the last block's mean time, mean of that integral, mean thrusts
        # KF state (Alg. 1-2)
        self.w = list(s.omega0)
        self.p = [s.omega_var0] * 3
        # RLS (Alg. 5): θ1 and its 5x5 covariance (row-major lists)
        self.th1 = [*s.j0, *s.com0, 0.0]
        var0 = (*s.theta1_var0, s.yaw_moment**2 if s.yaw_moment > 0 else 1.0)
        self.s1 = [var0[i // N1] if i % N1 == i // N1 else 0.0 for i in range(N1 * N1)]  # row-major 6x6
        # RLS2 (Alg. 7): θ2 = [m, m z]
        self.th2 = [s.mass0, s.mass0 * s.imu_z0]
        self.s2 = [s.theta2_var0[0], 0.0, s.theta2_var0[1]]  # [Σ00, Σ01, Σ11]
        self.enabled = False
        self.t_enabled = float("nan")
        self._az = 0.0
        self._lag: list[float] | None = None
        self._u_prev: list[float] | None = None
        self._prev: tuple | None = None  # (thrusts, acc, gyro) block means of the previous step
        self._alpha = (0.0, 0.0, 0.0)
        self._alpha_raw = (0.0, 0.0, 0.0)  # differentiated (block-averaged) gyro, for Fig. 6
        self.active = [False, False, False]
        self._chi1 = [0.0, 0]  # sum of e²/s (normalized innovations), count: a-posteriori scale of Σ_θ1
        self._chi2 = [0.0, 0]
        self._h1f: list[float] | None = None  # LPF state (rls-lpf): H1 (15), M (3), H2 (6), F (3)
        self._state: OnlineState | None = None  # cache of `state`, cleared by every step
        self._rows: list | None = None  # RLS rows (`RlsRows`) per step, recorded by `run`
        self._moved: tuple = ()  # the H1 entries the correction law zeroed this step and the Ĵ they moved with
        self._gain = (0.0,) * 6  # the KF's gain and model acceleration per axis this step (0: no KF), for the rows

    # -- rotor model -----------------------------------------------------------------------
    def _motor_state(self, t: float, cmd: Sequence[float] | None, rs: Sequence[float] | None) -> list[float]:
        """Motor state per rotor: measured rotor speed when the vehicle's thrust curve is in
        rad/s and the log has it, else the commands through the first-order motor lag
        (y_k = a y_{k-1} + (1-a) u_{k-1}, a = exp(-dt/T_m), as `signal.motor_lag`)."""
        if self._source is None:
            if rs is not None and self.vehicle.motor_input == "rad_s":
                self._source = "rotor_speed"
            elif cmd is not None:
                self._source = "cmd"
            else:
                raise MissingChannelError(
                    f"t={t:.6f} s: sample has no motor commands (cmd) "
                    f"{'' if self.vehicle.motor_input != 'rad_s' else 'nor rotor speeds '}"
                    "— the online estimator needs the rotor inputs"
                )
            hold = self.settings.motor_hold
            self._lagged = self._source == "cmd" and self._tm[0] is not None
            self._hold = 0.0 if self._lagged else self._meta_hold if hold is None else hold
        u = rs if self._source == "rotor_speed" else cmd
        if u is None or len(u) != self._m:
            raise RotoridError(
                f"t={t:.6f} s: expected {self._m} values of {self._source} (vehicle '{self.vehicle.name}'), "
                f"got {'none' if u is None else len(u)}"
            )
        if self._source == "rotor_speed" or self._tm[0] is None:
            return u
        if self._lag is None:
            self._lag, self._u_prev = list(u), u
            return list(u)
        dt = t - self._t_raw
        ar, af = math.exp(-dt / self._tm[0]), math.exp(-dt / self._tm[1])
        y, up = self._lag, self._u_prev
        for i in range(self._m):
            a = ar if up[i] > y[i] else af
            y[i] = a * y[i] + (1.0 - a) * up[i]
        self._u_prev = u
        return list(y)

    def motor_settings(self) -> dict[str, Any]:
        """What `_motor_state` resolved: the motor source, whether the lag model runs and the hold
        used (s, `OnlineSettings.motor_hold`)."""
        return {"motor_source": self._source, "motor_lag": self._lagged, "motor_hold_used": self._hold}

    def _thrusts(self, u: list[float]) -> list[float]:
        """Rotor thrusts f_i = sum_j K_ij u_i^e_j (eq. 1–5) of the motor states `u`."""
        if self._mono is not None:
            return list(map(mul, self._mono, map(pow, u, self._exps)))
        return [sum([k * ui**e for k, e in kp]) for ui, kp in zip(u, self._poly, strict=True)]

    def _wrench(self, f: list[float]) -> list[float]:
        """Collective force and moment about the body origin (any layout), flat: mixer @ thrusts."""
        return [0.0 if row is None else sum(map(mul, row, f)) for row in self._mix_rows]

    # -- public streaming API ----------------------------------------------------------------
    def update(self, sample: Sample) -> OnlineState:
        """Consume one sample (strictly increasing time, finite values) and return the state."""
        t = float(sample.t)
        q = None if sample.quat is None else list(map(float, sample.quat))
        try:
            (gx, gy, gz), (ax, ay, az) = sample.gyro, sample.acc
            if q is not None and len(q) != 4:
                raise ValueError
        except ValueError:
            raise RotoridError(f"t={t:.6f} s: gyro and acc need 3 components each (quat 4)") from None
        g, a = (float(gx), float(gy), float(gz)), (float(ax), float(ay), float(az))
        cmd = None if sample.cmd is None else list(map(float, sample.cmd))
        rs = None if sample.rotor_speed is None else list(map(float, sample.rotor_speed))
        check = t + sum(g) + sum(a)
        for v in (q, cmd, rs):
            if v is not None:
                check += sum(v)
        if not math.isfinite(check):
            raise RotoridError(
                f"sample at t={t} s contains NaN/inf (time, gyro, acc, motor or quat); drop or repair it"
            )
        if self._t_raw is not None and not t > self._t_raw:
            raise RotoridError(
                f"t={t:.6f} s: sample out of time order (previous t={self._t_raw:.6f} s); "
                "feed samples with strictly increasing time stamps"
            )
        self._push(t, g, a, q, self._thrusts(self._motor_state(t, cmd, rs)))
        return self._state or self.state

    def _push(self, t: float, g: list[float], a: list[float], q: list[float] | None, f: list[float]) -> None:
        """Average samples over blocks of 1/rate_hz and run one estimator step per block, with
        the rotor thrusts' mean over the step.

        The KF measures the block mean of the gyro, ω̄_n = Σ_i∈B_n ω(t_i) / N_n, and the rate
        of a rigid body is ω(t_i) = ω(t_0) + ∫ ω̇ dt (Kwon eq. 7 with the moment of eq. 5, which
        is linear in the thrusts). Hence ω̄_n - ω̄_n-1 = (C̄_n - C̄_n-1) / J (the gyroscopic term
        aside), C̄_n the block mean of C(t_i) = ∫_0^t_i f dt through the mixer, and the step's
        mean thrust is (C̄_n - C̄_n-1) / (t̄_n - t̄_n-1), t̄ the blocks' mean times: the samples
        of both blocks weighted by a triangle. A sample f_i is the thrust centred δ =
        min(motor_hold, log interval) / 2 after its stamp (`OnlineSettings.motor_hold`), linear
        between those centres, so C(t_i) = Σ_k<i (f_k + f_k+1) Δ_k / 2 - δ f_i (trapezoid up to
        the centre of f_i, less the δ after t_i): a wrench held for the whole interval (δ = Δ/2)
        gives C(t_i) = Σ_k<i f_k Δ_k, exactly. Every sample its own step (`rate_hz` None):
        (f_n-1 + f_n) / 2 + (δ / Δ) (f_n-1 - f_n), f_n-1 when held."""
        t0, fl = self._t_raw, self._fl
        self._t_raw, self._fl = t, f
        per = self._period
        if fl is None:  # the first sample: a block of its own, the estimator's initial state
            self._t_emit = None if per is None else t + per
            self._cbar = (t, self._cf, f)
            self._wl = self._wrench(f)
            self._step(t, g, a, q, self._wl, None)
            return
        d = t - t0
        if per is None:  # the wrench is linear in the thrusts: mix each sample once
            w = self._wrench(f)
            ws, self._wl = self._wl, w
            if self._hold < d:  # weights of the last sample and this one
                wl = 0.5 + 0.5 * self._hold / d
                wt = 1.0 - wl
                (x0, y0, z0, l0, m0, n0), (x1, y1, z1, l1, m1, n1) = ws, w
                ws = (
                    wl * x0 + wt * x1,
                    wl * y0 + wt * y1,
                    wl * z0 + wt * z1,
                    wl * l0 + wt * l1,
                    wl * m0 + wt * m1,
                    wl * n0 + wt * n1,
                )
            self._step(t, g, a, q, w, ws)
            return
        h = 0.5 * d
        self._cf = cf = [c + h * (x + y) for c, x, y in zip(self._cf, fl, f, strict=True)]
        b = self._blk
        if b is None:
            b = [0, 0.0, [0.0] * (6 + 2 * self._m)]
        b[0] += 1
        b[1] += t
        b[2] = list(map(add, b[2], (*g, *a, *f, *cf)))
        self._blk = b
        if t >= self._t_emit - 1e-6 * per:  # the sample reaches the block's end on the grid
            n, m = b[0], self._m
            mean = [x / n for x in b[2]]
            tb, fb, cb = b[1] / n, mean[6 : 6 + m], mean[6 + m :]
            (tp, cp, fp), self._cbar = self._cbar, (tb, [0.0] * m, fb)
            self._cf = list(map(sub, cf, cb))  # the integral from C̄ of this block on: no growing sum
            self._blk = None
            self._t_emit += per * (1 + math.floor((t - self._t_emit) / per + 1e-6))
            dt, delta = tb - tp, 0.5 * min(self._hold, d)
            fw = [(c1 - c0 - delta * (f1 - f0)) / dt for c0, c1, f0, f1 in zip(cp, cb, fp, fb, strict=True)]
            self._step(tb, mean[0:3], mean[3:6], q, self._wrench(fb), self._wrench(fw))

    @property
    def state(self) -> OnlineState:
        """The current `OnlineState` (built once per estimator step)."""
        if self._state is None:
            sqrt, (c1, n1), (c2, n2) = math.sqrt, self._chi1, self._chi2
            sc1 = c1 / n1 if n1 > 10 else 1.0
            S, (p0, p1, p2) = self.s1, self.p
            sd = (sqrt(abs(S[0]) * sc1), sqrt(abs(S[7]) * sc1), sqrt(abs(S[14]) * sc1))  # 6x6: stride 7
            sd += (sqrt(abs(S[21]) * sc1), sqrt(abs(S[28]) * sc1))
            sc2 = c2 / n2 if n2 > 10 else 1.0
            (m, mz), (s00, s01, s11) = self.th2, self.s2
            d0, d1 = -mz / (m * m), 1.0 / m  # imu_z = m z / m by the delta method
            var = (d0 * d0 * s00 + 2.0 * d0 * d1 * s01 + d1 * d1 * s11) * sc2
            self._state = tuple.__new__(  # OnlineState(...) without its Python-level __new__
                OnlineState,
                (
                    self._t if self._t is not None else float("nan"),
                    self.enabled,
                    tuple(self.w),
                    (sqrt(p0), sqrt(p1), sqrt(p2)),
                    self._alpha,
                    tuple(self.th1[:5]),
                    sd,
                    m,
                    sqrt(abs(s00) * sc2),
                    self._com_z + mz / m,
                    sqrt(max(var, 0.0)),
                ),
            )
        return self._state

    @property
    def theta1_scale(self) -> float:
        """The a-posteriori variance factor of the RLS's Σ_θ1 (`_scale`)."""
        return self._scale(self._chi1)

    @property
    def com_z(self) -> float:
        """The CoM's height above the body origin the estimator takes from the vehicle (0 when unknown)."""
        return self._com_z

    @property
    def kf_model(self) -> KfModel | None:
        """The KF's process model held fixed (`KfModel`), None: the running RLS estimate."""
        return self._kf_model

    @property
    def mixer(self) -> np.ndarray:
        """The mixer (6, n): force and moment about the body origin per unit rotor thrust."""
        return np.array(self._mix)

    def recorded_rows(self) -> RlsRows | None:
        """The rows `run` recorded, as arrays (`RlsRows`); None when there are none (not run, or
        the RLS never enabled)."""
        if not self._rows:
            return None
        return RlsRows(*(np.array([r[i] for r in self._rows], dtype=float) for i in range(len(RlsRows._fields))))

    @staticmethod
    def _scale(chi: list) -> float:
        """A-posteriori variance factor: mean of the squared weighted residuals (1 until data)."""
        return chi[0] / chi[1] if chi[1] > 10 else 1.0

    # -- the step ---------------------------------------------------------------------------
    def _step(
        self,
        t: float,
        g: list[float],
        acc: list[float],
        q: list[float] | None,
        F: Sequence[float],
        ws: Sequence[float] | None,
    ) -> None:
        """One estimator step from block means (gyro, accelerometer, rotor wrench `F`: force
        first) and the wrench's mean over the step `ws` (force, moment; `_push`, None at the
        first): enable check, KF (Alg. 1-2, 4), regressors (Alg. 3, 6), RLS (Alg. 5, 7). The KF
        and the RLS rows take the step's wrench; the RLS2 rows the mean force of the two blocks,
        as the accelerometer."""
        self._state = None
        if self._t is None:  # first sample: initial state only
            self._t = t
            self._prev = (F, acc, g)
            if not self._kf:
                self.w = list(g)
            return
        dt = t - self._t
        self._t = t
        F0, a0, g0 = self._prev
        self._prev = (F, acc, g)
        if self._rows is not None:  # `run` records it (Fig. 6); a live loop has no use for it
            self._alpha_raw = ((g[0] - g0[0]) / dt, (g[1] - g0[1]) / dt, (g[2] - g0[2]) / dt)
        if not self.enabled:
            self._check_enable(t, dt, acc, q)
        w0 = self.w
        if self._kf:
            w1, act, va = self._kf_step(dt, ws, g)
        else:
            w1, act, va = g, [True, True, True], None
        self.w = w1
        al = ((w1[0] - w0[0]) / dt, (w1[1] - w0[1]) / dt, (w1[2] - w0[2]) / dt)
        self._alpha = al
        self.active = act
        if not self.enabled:
            return
        am = (0.5 * (a0[0] + acc[0]), 0.5 * (a0[1] + acc[1]), 0.5 * (a0[2] + acc[2]))
        om = (0.5 * (w0[0] + w1[0]), 0.5 * (w0[1] + w1[1]), 0.5 * (w0[2] + w1[2]))
        h1, y1, h2 = self._regressors(om, al, act, ws, am)
        y2 = [0.5 * (F0[0] + F[0]), 0.5 * (F0[1] + F[1]), 0.5 * (F0[2] + F[2])]
        if self._lpf:
            h1, y1, h2, y2 = self._lowpass(dt, h1, y1, h2, y2)
        m2, f2, eiv = self._nd2
        rv = m2 / dt  # moment variance of R_RLS per step
        if eiv and va is not None:
            th, S = self.th1, self.s1
            r1 = [
                rv + (th[0] * th[0] + S[0]) * va[0] if act[0] else rv,
                rv + (th[1] * th[1] + S[7]) * va[1] if act[1] else rv,
                rv + (th[2] * th[2] + S[14]) * va[2] if act[2] else rv,
            ]
        else:
            r1 = [rv, rv, rv]
        self._rls1(h1, y1, r1)
        r2 = f2 / dt
        self._rls2(h2, y2, r2)
        if self._rows is not None:
            self._rows.append((h1, y1, r1, h2, y2, r2, *self._moved, self._gain, t - 0.5 * dt))

    def _check_enable(self, t: float, dt: float, acc: list[float], q: list[float] | None) -> None:
        """Enable condition: LPF'd gravity-rejected vertical acceleration (Sec. III, Fig. 3)."""
        if q is not None:
            w_, x_, y_, z_ = q
            az = 2 * (x_ * z_ - w_ * y_) * acc[0] + 2 * (y_ * z_ + w_ * x_) * acc[1]
            az += (1 - 2 * (x_ * x_ + y_ * y_)) * acc[2]
            az -= GRAVITY
        else:
            az = math.sqrt(acc[0] ** 2 + acc[1] ** 2 + acc[2] ** 2) - GRAVITY
        s = self.settings
        k = dt / (s.enable_tau + dt)
        self._az += k * (az - self._az)
        if abs(self._az) > s.a_z_allow:
            self.enabled = True
            self.t_enabled = t

    def _kf_step(self, dt: float, ws: Sequence[float], g: list[float]) -> tuple[list[float], list[bool], list[float]]:
        """Alg. 1-2 and 4: the KF of the body rate (process model eq. 22 with u = M - com x F
        about the estimated CoM, adaptive measurement weight) and the correction law. Returns
        the new rate, which MOI columns are active and the variance each measurement adds to α̂."""
        gnd2, cg, qo, ns, jx, jy, jz = self._kfc
        if self._kf_model is None:
            th, S, n1 = self.th1, self.s1, self._chi1[1]
            sc1 = self._chi1[0] / n1 if n1 > 10 else 1.0
        else:
            th, S, sc1 = self._kf_model
        cx, cy, cz = th[3], th[4], self._com_z
        Fx, Fy, Fz, Mx, My, Mz = ws
        ux, uy, uz = Mx - (cy * Fz - cz * Fy), My - (cz * Fx - cx * Fz), Mz - (cx * Fy - cy * Fx) - th[5]
        J0, J1, J2 = (th[0] if th[0] > jx else jx, th[1] if th[1] > jy else jy, th[2] if th[2] > jz else jz)
        (p_, q_, r_), (px, py, pz), (gx, gy, gz) = self.w, self.p, g
        R, c = dt / gnd2, cg / math.sqrt(dt)  # weight 1/R_meas; Alg. 2's c
        qdt, dt2, sqrt = qo * dt, dt * dt, math.sqrt
        sc1 *= dt2
        # eq. 22 (with the gyroscopic term ω x Jω) and eq. 29, per axis
        wx, wy, wz = (
            p_ + (ux - (J2 - J1) * q_ * r_) / J0 * dt,
            q_ + (uy - (J0 - J2) * p_ * r_) / J1 * dt,
            r_ + (uz - (J1 - J0) * p_ * q_) / J2 * dt,
        )
        bx = px + ux * ux * S[0] * sc1 / (J0 * J0 * J0 * J0) + qdt
        by = py + uy * uy * S[7] * sc1 / (J1 * J1 * J1 * J1) + qdt
        bz = pz + uz * uz * S[14] * sc1 / (J2 * J2 * J2 * J2) + qdt
        # Alg. 2: measurement update with the weight 1/R lowered by r/c when the residual r > c
        rx, ry, rz = abs(gx - wx), abs(gy - wy), abs(gz - wz)
        mx, my, mz = R * rx / c if rx > c else R, R * ry / c if ry > c else R, R * rz / c if rz > c else R
        kx, ky, kz = bx / (bx + 1.0 / mx), by / (by + 1.0 / my), bz / (bz + 1.0 / mz)
        if self._rows is not None:  # recorded by `run` only: the streaming step stays lean
            self._gain = (kx, ky, kz, (wx - p_) / dt, (wy - q_) / dt, (wz - r_) / dt)
        self.p = ((1.0 - kx) * bx, (1.0 - ky) * by, (1.0 - kz) * bz)
        w1 = (wx + kx * (gx - wx), wy + ky * (gy - wy), wz + kz * (gz - wz))
        va = (kx * kx / mx / dt2, ky * ky / my / dt2, kz * kz / mz / dt2)  # what the measurement adds to α̂
        # Alg. 4: the correction law on the previous-step rate and its std
        act = (abs(p_) >= ns * sqrt(px), abs(q_) >= ns * sqrt(py), abs(r_) >= ns * sqrt(pz))
        return w1, act, va

    def _regressors(
        self,
        om: tuple[float, ...],
        al: tuple[float, ...],
        act: list[bool],
        ws: Sequence[float],
        am: tuple[float, ...],
    ) -> tuple[list[list[float]], list[float], list[list[float]]]:
        """Alg. 3-4: H1 rows (3 x 6, θ1 with the yaw moment) of M - cz [-Fy, Fx, 0] = H1 θ1 (MOI columns of inactive
        axes zeroed, their term at the current estimate moved to the output); Alg. 6: H2 rows (3 x 2) of F = H2 [m, m z], IMU x, y relative to the CoM."""
        p_, q_, r_ = om
        a0, a1, a2 = al
        Fx, Fy, Fz, Mx, My, y2 = ws
        pq, pr, qr = p_ * q_, p_ * r_, q_ * r_
        cz, th = self._com_z, self.th1
        y0, y1 = Mx + cz * Fy, My - cz * Fx
        cols = [(a0, pr, -pq), (-qr, a1, pq), (qr, -pr, a2)]  # the MOI columns of H1
        moved = _NO_MOVE  # the zeroed entries, rows by MOI column
        if not (act[0] and act[1] and act[2]):
            moved = tuple(zip(*[_NO_MOVE[0] if a else c for c, a in zip(cols, act, strict=True)], strict=True))
            for k in range(3):
                if not act[k]:
                    (c0, c1, c2), tk = cols[k], th[k]
                    y0, y1, y2 = y0 - c0 * tk, y1 - c1 * tk, y2 - c2 * tk
                    cols[k] = _NO_MOVE[0]
        (h00, h10, h20), (h01, h11, h21), (h02, h12, h22) = cols
        h1 = [[h00, h01, h02, 0.0, Fz, 0.0], [h10, h11, h12, -Fz, 0.0, 0.0], [h20, h21, h22, Fy, -Fx, self._bz]]
        if self._rows is not None:
            self._moved = (moved, th[:3])
        x = self._imu_xy[0] - th[3]
        y = self._imu_xy[1] - th[4]
        if self._kf:  # a lever-arm column needs both other axes active (Alg. 6)
            c0, c1, c2 = act[1] and act[2], act[0] and act[2], act[0] and act[1]
        else:
            c0 = c1 = c2 = True
        x = x if c0 else 0.0
        y = y if c1 else 0.0
        # [ω]x² + [α]x, row by row, times the lever arm
        h2 = [
            [am[0] - x * -(q_ * q_ + r_ * r_) - y * (pq - a2), -(pr + a1) if c2 else 0.0],
            [am[1] - x * (pq + a2) - y * -(p_ * p_ + r_ * r_), -(qr - a0) if c2 else 0.0],
            [am[2] - x * (pr - a1) - y * (qr + a0), (p_ * p_ + q_ * q_) if c2 else 0.0],
        ]
        return h1, [y0, y1, y2], h2

    def _lowpass(
        self, dt: float, h1: list[list[float]], y1: list[float], h2: list[list[float]], y2: list[float]
    ) -> tuple[list[list[float]], list[float], list[list[float]], list[float]]:
        """The rls-lpf variant (eq. 36-39): first-order low-pass (time constant `lpf_tau`) of
        every regressor and output."""
        flat = [v for row in h1 for v in row] + y1 + [v for row in h2 for v in row] + y2
        if self._h1f is None:
            self._h1f = flat
        else:
            af = -math.expm1(-dt / self.settings.lpf_tau)
            self._h1f = [fo + af * (fn - fo) for fo, fn in zip(self._h1f, flat, strict=True)]
        f = self._h1f
        n = 3 * N1
        h1f = [f[i : i + N1] for i in range(0, n, N1)]
        return h1f, f[n : n + 3], [f[n + 3 : n + 5], f[n + 5 : n + 7], f[n + 7 : n + 9]], f[n + 9 : n + 12]

    def _rls1(self, H: list[list[float]], y: list[float], rv: list[float]) -> None:
        """Alg. 5, processed row by row (exact for a diagonal R_RLS); `rv` the row variances. Σ is
        updated in its upper triangle and mirrored, so it stays exactly symmetric; the 21 entries
        live in locals for the three rows (the step is per sample, in pure Python). The
        sixth parameter is the constant yaw moment (`OnlineSettings.yaw_moment`)."""
        S = self.s1
        s00, s01, s02, s03, s04, s05 = S[0:6]
        s11, s12, s13, s14, s15 = S[7:12]
        s22, s23, s24, s25 = S[14:18]
        s33, s34, s35 = S[21:24]
        s44, s45 = S[28:30]
        s55 = S[35]
        t0, t1, t2, t3, t4, t5 = self.th1
        chi = self._chi1
        c = chi[0]
        for (h0, h1, h2, h3, h4, h5), yi, rvi in zip(H, y, rv, strict=True):
            g0 = s00 * h0 + s01 * h1 + s02 * h2 + s03 * h3 + s04 * h4 + s05 * h5  # g = Σ h (Σ symmetric)
            g1 = s01 * h0 + s11 * h1 + s12 * h2 + s13 * h3 + s14 * h4 + s15 * h5
            g2 = s02 * h0 + s12 * h1 + s22 * h2 + s23 * h3 + s24 * h4 + s25 * h5
            g3 = s03 * h0 + s13 * h1 + s23 * h2 + s33 * h3 + s34 * h4 + s35 * h5
            g4 = s04 * h0 + s14 * h1 + s24 * h2 + s34 * h3 + s44 * h4 + s45 * h5
            g5 = s05 * h0 + s15 * h1 + s25 * h2 + s35 * h3 + s45 * h4 + s55 * h5
            den = h0 * g0 + h1 * g1 + h2 * g2 + h3 * g3 + h4 * g4 + h5 * g5 + rvi
            e = yi - (h0 * t0 + h1 * t1 + h2 * t2 + h3 * t3 + h4 * t4 + h5 * t5)
            f = e / den
            t0, t1, t2, t3, t4, t5 = t0 + g0 * f, t1 + g1 * f, t2 + g2 * f, t3 + g3 * f, t4 + g4 * f, t5 + g5 * f
            # Σ -= g gᵀ / den, the upper triangle
            k0, k1, k2, k3, k4 = g0 / den, g1 / den, g2 / den, g3 / den, g4 / den
            s00, s01, s02, s03 = s00 - k0 * g0, s01 - k0 * g1, s02 - k0 * g2, s03 - k0 * g3
            s04, s05 = s04 - k0 * g4, s05 - k0 * g5
            s11, s12, s13, s14, s15 = s11 - k1 * g1, s12 - k1 * g2, s13 - k1 * g3, s14 - k1 * g4, s15 - k1 * g5
            s22, s23, s24, s25 = s22 - k2 * g2, s23 - k2 * g3, s24 - k2 * g4, s25 - k2 * g5
            s33, s34, s35 = s33 - k3 * g3, s34 - k3 * g4, s35 - k3 * g5
            s44, s45, s55 = s44 - k4 * g4, s45 - k4 * g5, s55 - g5 / den * g5
            c += e * f
        self.th1 = [t0, t1, t2, t3, t4, t5]
        self.s1 = [s00, s01, s02, s03, s04, s05, s01, s11, s12, s13, s14, s15, s02, s12, s22, s23, s24, s25]
        self.s1 += [s03, s13, s23, s33, s34, s35, s04, s14, s24, s34, s44, s45, s05, s15, s25, s35, s45, s55]
        chi[0] = c
        chi[1] += len(H)

    def _rls2(self, H: list[list[float]], y: list[float], rv: float) -> None:
        """Alg. 7 (2 parameters), row by row; `rv` the row variance."""
        t0, t1 = self.th2
        s00, s01, s11 = self.s2
        chi = self._chi2
        c = chi[0]
        for (h0, h1), yi in zip(H, y, strict=True):
            g0 = s00 * h0 + s01 * h1
            g1 = s01 * h0 + s11 * h1
            den = h0 * g0 + h1 * g1 + rv
            e = yi - h0 * t0 - h1 * t1
            f, k0 = e / den, g0 / den
            t0 += g0 * f
            t1 += g1 * f
            s00 -= k0 * g0
            s01 -= k0 * g1
            s11 -= g1 / den * g1
            c += e * f
        self.th2 = [t0, t1]
        self.s2 = [s00, s01, s11]
        chi[0] = c
        chi[1] += len(H)

    # -- batch ---------------------------------------------------------------------------------
    def check(self, flight: Flight) -> None:
        """Refuse a flight without the channels, rates or motor columns the estimator needs."""
        flight.require("gyro", "acc")
        use_rs = flight.rotor_speed is not None and self.vehicle.motor_input == "rad_s"
        flight.require_rate(
            MIN_RATE_HZ, "gyro", "acc", *(["rotor_speed"] if use_rs else ["cmd"] if flight.cmd is not None else [])
        )
        if not use_rs and flight.cmd is None:
            raise MissingChannelError(
                f"{flight.source}: the online estimator needs motor commands (cmd)"
                + (" or rotor speeds (rotor_speed)" if self.vehicle.motor_input == "rad_s" else "")
            )
        if flight.n_motors != self._m:
            raise RotoridError(
                f"{flight.source}: {flight.n_motors} motor columns but vehicle '{self.vehicle.name}' has {self._m} rotors"
            )

    def run(self, flight: Flight) -> dict[str, np.ndarray]:
        """Stream a whole flight through `update`'s step; return the trajectories (N rows):
        t, omega, omega_std, alpha (KF), alpha_raw (differentiated gyro at the estimator rate), active (correction-law columns), enabled, theta1,
        theta1_std, yaw_moment, yaw_moment_std, mass, mass_std, imu_z, imu_z_std."""
        self.check(flight)
        hold = flight.meta.get("motor_hold")
        self._meta_hold = 0.0 if hold is None else check_hold(hold, f"{flight.source}: meta['motor_hold']")
        n = len(flight.t)
        none = [None] * n
        cols = (
            flight.t.tolist(),
            flight.gyro.tolist(),
            flight.acc.tolist(),
            flight.cmd.tolist() if flight.cmd is not None else none,
            flight.rotor_speed.tolist() if flight.rotor_speed is not None else none,
            flight.quat.tolist() if flight.quat is not None else none,
        )
        self._rows = []
        keys = ("omega", "p", "alpha", "alpha_raw", "active", "enabled", "theta1", "s1diag")
        rec: dict[str, list] = {k: [] for k in keys}
        rec_th2: list = []
        for t, g, a, c, rs, q in zip(*cols, strict=True):
            self._push(t, g, a, q, self._thrusts(self._motor_state(t, c, rs)))
            rec["omega"].append(self.w)
            rec["p"].append(self.p)
            rec["alpha"].append(self._alpha)
            rec["alpha_raw"].append(self._alpha_raw)
            rec["active"].append(self.active)
            rec["enabled"].append(self.enabled)
            rec["theta1"].append(self.th1)
            rec["s1diag"].append(self.s1[:: N1 + 1])
            rec_th2.append((*self.th2, *self.s2, self._scale(self._chi1), self._scale(self._chi2)))
        out = {k: np.array(v) for k, v in rec.items()}
        th2 = np.array(rec_th2)
        out["t"] = flight.t.copy()
        out["omega_std"] = np.sqrt(out.pop("p"))
        out["theta1_std"] = np.sqrt(np.clip(out.pop("s1diag"), 0.0, None) * th2[:, 5:6])
        out["yaw_moment"], out["theta1"] = out["theta1"][:, 5], out["theta1"][:, :5]
        out["yaw_moment_std"], out["theta1_std"] = out["theta1_std"][:, 5], out["theta1_std"][:, :5]
        out["mass"] = th2[:, 0]
        out["mass_std"] = np.sqrt(np.clip(th2[:, 2], 0.0, None) * th2[:, 6])
        z, zstd = imu_height(*th2[:, :5].T, th2[:, 6])
        out["imu_z"] = self._com_z + z
        out["imu_z_std"] = zstd
        return out


def imu_height(m, mz, s00, s01, s11, scale):
    """IMU height above the CoM z = (m z)/m from θ2 = [m, m z] and its delta-method std
    (arrays; `OnlineEstimator.state` has the per-sample form)."""
    z = mz / m
    d0, d1 = -mz / m**2, 1.0 / m
    var = (d0 * d0 * s00 + 2 * d0 * d1 * s01 + d1 * d1 * s11) * scale
    return z, np.sqrt(np.maximum(var, 0.0))
