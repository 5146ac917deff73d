"""The streaming estimator (Kwon et al. Alg. 1–7): one sample at a time through the rotor model
(eq. 1–5), the KF on the angular rate (Alg. 1–2), the correction law (Alg. 3–4, 6) and the two
RLS (Alg. 5, 7); `OnlineEstimator.run` streams a whole flight and records the RLS rows that the
batch solve (`rotorid.methods.online.solve`) reuses."""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import mul
from typing import Any, NamedTuple

import numpy as np

from rotorid.errors import MissingChannelError, RotoridError, VehicleError
from rotorid.flight import Flight
from rotorid.methods.online import layout as ix
from rotorid.methods.online.settings import MIN_RATE_HZ, N1, OnlineSettings, check_hold
from rotorid.vehicle import Vehicle


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


class _View:
    """An attribute of `OnlineEstimator` held in its state array (`kernel`'s `st`): a list of
    floats (or one float, or a bool) read from and written to `st[start:stop]`."""

    def __init__(self, start: int, stop: int | None = None, kind: type = list) -> None:
        self.start, self.stop, self.kind = start, stop, kind

    def __get__(self, obj: OnlineEstimator, owner: type) -> Any:
        if self.kind is list:
            return obj._st[self.start : self.stop].tolist()
        return self.kind(obj._st[self.start])

    def __set__(self, obj: OnlineEstimator, value: Any) -> None:
        if self.kind is list:
            obj._st[self.start : self.stop] = value
        else:
            obj._st[self.start] = value


class OnlineEstimator:
    """Streaming estimator (Kwon et al. Alg. 1–7). `update(sample)` consumes one sample and
    returns the `OnlineState`; `run(flight)` streams a whole log through the same step and
    returns the trajectories (dict of arrays). `kf_model` holds the KF's process model fixed
    (`KfModel`; None: the running RLS estimate, Alg. 1). The step is compiled
    (`rotorid.methods.online.kernel`); its state lives in arrays, seen here as attributes."""

    w = _View(ix.ST_W, ix.ST_W + 3)  # the KF's rate ω̂ and its variance (Alg. 1-2)
    p = _View(ix.ST_P, ix.ST_P + 3)
    th1 = _View(ix.ST_TH1, ix.ST_TH1 + N1)  # RLS (Alg. 5): θ1 with the yaw moment, its 6x6 Σ row-major
    s1 = _View(ix.ST_S1, ix.ST_S1 + N1 * N1)
    th2 = _View(ix.ST_TH2, ix.ST_TH2 + 2)  # RLS2 (Alg. 7): θ2 = [m, m z] and [Σ00, Σ01, Σ11]
    s2 = _View(ix.ST_S2, ix.ST_S2 + 3)
    _chi1 = _View(ix.ST_CHI1, ix.ST_CHI1 + 2)  # sum of e²/s (normalized innovations), count
    _chi2 = _View(ix.ST_CHI2, ix.ST_CHI2 + 2)
    enabled = _View(ix.ST_EN, kind=bool)
    t_enabled = _View(ix.ST_TEN, kind=float)
    _az = _View(ix.ST_AZ, kind=float)  # the enable condition's low-passed vertical acceleration

    def __init__(
        self, vehicle: Vehicle, settings: OnlineSettings | None = None, kf_model: KfModel | None = None
    ) -> None:
        from rotorid.methods.online import kernel  # numba: loaded when an estimator is made

        self._kernel = kernel.push
        self.vehicle = vehicle
        self._kf_model = kf_model
        self.settings = s = settings or OnlineSettings()
        self._mix, kthr, exps = rotor_model(vehicle)
        self._poly = [list(zip(k, exps, strict=True)) for k in kthr]
        # one monomial k u^e per rotor (the usual u² law) is summed without the generic loop
        self._mono = [k[0] for k in kthr] if len(exps) == 1 else None
        self._exps = [exps[0]] * vehicle.n_rotors
        self._m = vehicle.n_rotors
        self._tm = (vehicle.tm_rise, vehicle.tm_fall if vehicle.tm_fall is not None else vehicle.tm_rise)
        imu = vehicle.imu_offset
        self._imu_xy = (float(imu[0]), float(imu[1]))
        self._com_z = float(vehicle.com[2]) if vehicle.com is not None else 0.0
        self._kf = s.variant == "kwon"
        self._lpf = s.variant == "rls-lpf"
        self._source: str | None = None
        self._t_raw: float | None = None  # time of the last sample
        self._hold = 0.0  # `OnlineSettings.motor_hold`, resolved with the motor source (`_motor_state`)
        self._meta_hold = 0.0  # the flight's `meta["motor_hold"]` (`run`); the streaming `update`: none
        self._lagged = False  # the commands run through the motor lag (`_motor_state`)
        self._lag: list[float] | None = None
        self._u_prev: list[float] | None = None
        c = np.zeros(ix.CFG_SIZE)
        c[ix.CFG_GND2 : ix.CFG_JMIN] = (s.gyro_nd * s.gyro_nd, s.c_sigma * s.gyro_nd, s.q_omega, s.n_sigma)
        c[ix.CFG_JMIN : ix.CFG_JMIN + 3] = s.j_min
        c[ix.CFG_M2 : ix.CFG_BZ] = (s.moment_nd * s.moment_nd, s.force_nd * s.force_nd, s.eiv)
        c[ix.CFG_BZ] = 1.0 if s.yaw_moment > 0 else 0.0  # regressor of the constant yaw moment (0: off)
        c[ix.CFG_COMZ], c[ix.CFG_IMU : ix.CFG_IMU + 2] = self._com_z, self._imu_xy
        c[ix.CFG_KF], c[ix.CFG_LPF] = self._kf, self._lpf
        c[ix.CFG_TAU_EN], c[ix.CFG_AZ_ALLOW], c[ix.CFG_LPF_TAU] = s.enable_tau, s.a_z_allow, s.lpf_tau
        c[ix.CFG_PER] = 0.0 if s.rate_hz is None else 1.0 / s.rate_hz
        if kf_model is not None:
            c[ix.CFG_MODEL], c[ix.CFG_MTH : ix.CFG_MTH + N1], c[ix.CFG_MSC] = 1.0, kf_model.theta1, kf_model.scale
            c[ix.CFG_MS : ix.CFG_MS + N1 * N1] = kf_model.cov
        c[ix.CFG_TWO] = 2.0
        # the mixer's zero rows (no in-plane force from coplanar rotors) are not multiplied out
        c[ix.CFG_NZ : ix.CFG_NZ + 6] = [any(row) for row in self._mix]
        self._cfg, self._mix_a = c, np.array(self._mix, dtype=float)
        st = np.zeros(ix.ST_SIZE)
        st[[ix.ST_T, ix.ST_TRAW, ix.ST_TEN]] = np.nan  # no step, no sample, not enabled yet
        st[ix.ST_W : ix.ST_W + 3], st[ix.ST_P : ix.ST_P + 3] = s.omega0, s.omega_var0
        st[ix.ST_TH1 : ix.ST_TH1 + N1] = (*s.j0, *s.com0, 0.0)
        var0 = (*s.theta1_var0, s.yaw_moment**2 if s.yaw_moment > 0 else 1.0)
        st[ix.ST_S1 : ix.ST_S1 + N1 * N1] = np.diag(var0).ravel()
        st[ix.ST_TH2 : ix.ST_TH2 + 2] = (s.mass0, s.mass0 * s.imu_z0)
        st[ix.ST_S2 : ix.ST_S2 + 3] = (s.theta2_var0[0], 0.0, s.theta2_var0[1])
        self._st, self._mot = st, np.zeros((5, self._m))
        self._f, self._q, self._out = np.zeros(self._m), np.zeros(4), np.zeros(ix.OUT_SIZE)
        self._no_trace, self._no_rows = np.zeros((0, ix.TRACE)), np.zeros((0, ix.ROW_SIZE))
        self._trace, self._rows_out = self._no_trace, self._no_rows  # what `run` records into
        kernel.fill_state(st, c, self._out)
        self._state: OnlineState | None = None  # cache of `state`, cleared by every sample
        self._rows: Any = None  # RLS rows per step (`kernel.ROW_*`), recorded by `run`

    @property
    def active(self) -> list[bool]:
        """Which MOI columns the correction law (Alg. 4) left active at the last step."""
        return [bool(a) for a in self._st[ix.ST_ACT : ix.ST_ACT + 3]]

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
            self._cfg[ix.CFG_HOLD] = self._hold
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

    def _push(
        self, t: float, g: Sequence[float], a: Sequence[float], q: Sequence[float] | None, f: list[float], i: int = 0
    ) -> None:
        """One sample into the compiled step (`kernel.push`): samples are averaged over blocks of
        1/rate_hz and each block is one estimator step, with the rotor thrusts' mean over the step.

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
        (f_n-1 + f_n) / 2 + (δ / Δ) (f_n-1 - f_n), f_n-1 when held. `run` records the sample's
        trajectory row `i` and the RLS rows."""
        self._f[:] = f
        if q is not None:
            self._q[:] = q
        self._state = None
        self._kernel(
            self._st, self._mot, self._cfg, self._mix_a, self._f, self._q, q is not None, t, *g, *a,
            self._out, self._trace, i, self._rows_out,
        )  # fmt: skip
        self._t_raw = t

    @property
    def state(self) -> OnlineState:
        """The current `OnlineState` (built once per sample)."""
        if self._state is None:
            o = self._out.tolist()  # `kernel.fill_state`'s fields
            self._state = tuple.__new__(  # OnlineState(...) without its Python-level __new__
                OnlineState,
                (o[0], o[1] != 0.0, (*o[2:5],), (*o[5:8],), (*o[8:11],), (*o[11:16],), (*o[16:21],), *o[21:25]),
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
        if self._rows is None or len(self._rows) == 0:
            return None
        r = np.asarray(self._rows, dtype=float)
        at = (
            ix.ROW_H1,
            ix.ROW_Y1,
            ix.ROW_R1,
            ix.ROW_H2,
            ix.ROW_Y2,
            ix.ROW_R2,
            ix.ROW_MOVED,
            ix.ROW_J,
            ix.ROW_KF,
            ix.ROW_T,
        )
        shapes = ((3, 6), (3,), (3,), (3, 2), (3,), (), (3, 3), (3,), (6,), ())
        return RlsRows(*(r[:, i : i + math.prod(sh)].reshape(-1, *sh).copy() for i, sh in zip(at, shapes, strict=True)))

    @staticmethod
    def _scale(chi: list) -> float:
        """A-posteriori variance factor: mean of the squared weighted residuals (1 until data)."""
        return chi[0] / chi[1] if chi[1] > 10 else 1.0

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
        self._trace, self._rows_out = np.empty((n, ix.TRACE)), np.empty((n, ix.ROW_SIZE))  # at most a step a sample
        self._st[ix.ST_NROWS] = 0.0  # the rows of this run
        try:
            for i, (t, g, a, c, rs, q) in enumerate(zip(*cols, strict=True)):
                self._push(t, g, a, q, self._thrusts(self._motor_state(t, c, rs)), i)
        finally:
            self._rows = self._rows_out[: int(self._st[ix.ST_NROWS])]
            tr, self._trace, self._rows_out = self._trace, self._no_trace, self._no_rows
        # the trace's columns (`kernel.TRACE`), each block copied as the per-sample lists it replaced
        at = {"omega": ix.ST_W, "p": ix.ST_P, "alpha": ix.ST_AL, "alpha_raw": ix.ST_ALR, "active": ix.ST_ACT}
        out = {key: tr[:, i : i + 3].copy() for key, i in at.items()}
        out["theta1"], out["s1diag"] = (
            tr[:, ix.TR_TH1 : ix.TR_TH1 + N1].copy(),
            tr[:, ix.TR_S1D : ix.TR_S1D + N1].copy(),
        )
        out["active"], out["enabled"] = out["active"] != 0.0, tr[:, ix.ST_EN] != 0.0
        th2 = tr[:, ix.TR_TH2 : ix.TRACE].copy()  # θ2, Σ_θ2 (3), the scales of Σ_θ1 and Σ_θ2
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
