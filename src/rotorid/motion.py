"""Rigid-body motion and rotor terms measured from a flight, shared by the TLS method
(`rotorid.methods.tls`) and cross-validation (`rotorid.validate`) (Six et al. Sec. III-C).

`airborne_pieces` cuts a flight into airborne, uniformly sampled pieces; `motion` filters and
differentiates one piece into body rate, angular acceleration and specific force at the body
origin, with the rotor terms u; `MotionSettings` says how (source, filter band, motor lag);
`rel_error_norms` compares a modelled wrench with the rigid-body one (Table III).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY_ENU, bryant_rates, bryant_to_quat, quat_to_bryant, world_to_body
from rotorid.signal import (
    BLOCK,
    cached_sos,
    derivative_blocks,
    filtfilt_blocks,
    is_uniform,
    motor_lag,
    runs,
)
from rotorid.vehicle import Vehicle

#: Wrench components: force then moment about the body origin (the row blocks of W_t, Sec. III-B).
WRENCH = ("F_x", "F_y", "F_z", "M_x", "M_y", "M_z")
#: Minimum airborne piece kept (s); shorter pieces are dominated by filter edge effects.
MIN_PIECE = 2.0
#: Lowest original logging rate of the motion and rotor channels: the default filter band
#: reaches 15 Hz and needs a few samples per period (Six et al. flew at 200 Hz).
MIN_RATE_HZ = 50.0


@dataclass(frozen=True)
class MotionSettings:
    """How motion and rotor terms are measured. None means "chosen from the data";
    `at(fs)` fills every default for data sampled at `fs` Hz.

    - `source`: "imu" (accelerometer + gyro) or "mocap" (pos + quat twice differentiated).
    - `tm`: motor time constant (s); commands pass through `signal.motor_lag` first.
    - `band`: (low, high) Hz of the zero-phase Butterworth applied to the signals that are
      differentiated (gyro; mocap pose); low = 0 means low-pass. Default (0, min(15, fs/8))
      for the IMU and (0, min(8, fs/8)) for mocap (noise grows with f^2 through the double
      derivative).
    - `speed`: rotor terms from "cmd", "rotor_speed", or "auto" (measured rotor speed if the
      log has it and the vehicle's motor input is rad/s, else the commands).
    - `parallel_cutoff`: low-pass (Hz) applied to every derived signal before use; default the
      band's high corner. `trim`: seconds dropped at both ends of every piece after filtering
      (default 3/high, plus 2/low with a low cut). `order`: Butterworth order.
    - `mocap_delay`: seconds by which the motion-capture pose lags the commands; the pose is
      read at t + delay. `fs`: the sampling rate (set by `at`).
    - `voltage_model`: (α, V_ref): rotor terms from commands times (V / V_ref)^α, the battery
      voltage's effect on the rotor speed (`rotorid.methods.voltage`); None: the commands alone.
    """

    source: str = "imu"
    tm: float | None = None
    band: tuple[float, float] | None = None
    speed: str = "auto"
    parallel_cutoff: float | None = None
    trim: float | None = None
    order: int = 4
    mocap_delay: float = 0.0
    fs: float | None = None
    voltage_model: tuple[float, float] | None = None

    def at(self, fs: float) -> MotionSettings:
        """Concrete settings for data sampled at `fs` Hz (every default filled in, checked)."""
        if self.source not in ("imu", "mocap"):
            raise RotoridError(f"--source must be 'imu' or 'mocap', got '{self.source}'")
        if self.speed not in ("auto", "cmd", "rotor_speed"):
            raise RotoridError(f"speed source must be auto, cmd or rotor_speed, got '{self.speed}'")
        if self.tm is not None and not self.tm >= 0:
            raise RotoridError(f"--tm must be a non-negative time constant in seconds, got {self.tm}")
        default_high = 15.0 if self.source == "imu" else 8.0  # the pose is differentiated twice
        low, high = self.band if self.band is not None else (0.0, min(default_high, fs / 8.0))
        if not 0 <= low < high < fs / 2:
            raise RotoridError(
                f"--band {low:g},{high:g} Hz must satisfy 0 <= LOW < HIGH < {fs / 2:g} Hz (half the {fs:g} Hz rate)"
            )
        pc = self.parallel_cutoff or high
        if not 0 < pc < fs / 2:
            raise RotoridError(f"parallel cut-off {pc:g} Hz must lie inside (0, {fs / 2:g}) Hz")
        trim = self.trim if self.trim is not None else 3.0 / high + (2.0 / low if low > 0 else 0.0)
        return replace(self, band=(float(low), float(high)), parallel_cutoff=float(pc), trim=float(trim), fs=float(fs))

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (band as a list), for `Result.settings`."""
        d = asdict(self)
        if self.band is not None:
            d["band"] = list(self.band)
        return d


@dataclass(frozen=True)
class Motion:
    """Filtered full-rate signals of one airborne piece: time, body rate, angular acceleration,
    specific force at the body origin (a_d - R^-1 g), and rotor terms u (N, M)."""

    t: np.ndarray
    omega: np.ndarray
    omega_dot: np.ndarray
    s: np.ndarray
    u: np.ndarray


def _filt(x: np.ndarray, fs: float, low: float, high: float, order: int) -> np.ndarray:
    """`butter_filtfilt` (band-pass, or low-pass for low = 0) of the columns of x, computed a
    block at a time (`filtfilt_blocks`, the same numbers) into one new array, which holds the
    forward pass meanwhile: no whole-length temporaries besides it."""
    sos = cached_sos(fs, (low, high) if low > 0 else high, order)
    out = np.empty(np.shape(x))
    for a, y in filtfilt_blocks(sos, lambda a, b: x[a:b], len(x), BLOCK, forward=out):
        out[a : a + len(y)] = y
    return out


def _in_place_rate(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """`derivative(x, t)` written over x (a block at a time, `derivative_blocks`)."""
    return derivative_blocks(x, t, out=x)


def _band_rate(raw: np.ndarray, smooth: np.ndarray, t: np.ndarray, st: MotionSettings) -> np.ndarray:
    """The rate of a measured signal: the derivative of `raw` band-passed (`st.band` with a low
    cut), else of `smooth`, `raw` already low-passed at the band's high corner."""
    (low, high), fs, order = st.band, st.fs, st.order
    return _in_place_rate(_filt(raw, fs, low, high, order), t) if low > 0 else derivative_blocks(smooth, t)


def speed_source(flight: Flight, vehicle: Vehicle, speed: str) -> str:
    """Which channel supplies the rotor terms: "cmd" or "rotor_speed" (see `MotionSettings.speed`)."""
    if speed == "auto":
        return "rotor_speed" if flight.rotor_speed is not None and vehicle.motor_input == "rad_s" else "cmd"
    return speed


def rotor_terms(
    flight: Flight, vehicle: Vehicle, speed: str, tm: float | None, voltage: tuple[float, float] | None = None
) -> np.ndarray:
    """Rotor states u (N, M): measured rotor speeds, or the commands, times (V / V_ref)^α of the
    battery voltage with `voltage` = (α, V_ref) (`rotorid.methods.voltage`), through the motor
    lag (`signal.motor_lag`) when `tm` is given (the paper neglects the lag: tm None)."""
    src = speed_source(flight, vehicle, speed)
    flight.require_rate(MIN_RATE_HZ, src)
    u = getattr(flight, src)
    if u.shape[1] != vehicle.n_rotors:
        raise RotoridError(
            f"{flight.source}: channel '{src}' has {u.shape[1]} motors but vehicle '{vehicle.name}' "
            f"has {vehicle.n_rotors} rotors; check the vehicle description"
        )
    if src != "cmd":
        return u
    if voltage is not None:
        if flight.vbat is None:
            raise RotoridError(f"{flight.source}: the voltage-aware rotor terms need the battery voltage (vbat)")
        u = u * ((flight.vbat / voltage[1]) ** voltage[0])[:, None]
    return motor_lag(u, flight.t, tm) if tm else u


def _imu_motion(flight: Flight, vehicle: Vehicle, st: MotionSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """omega = low-passed gyro; omega_dot = central differences of the band-passed gyro; the
    specific force at the origin is the accelerometer's minus the lever-arm terms
    omega_dot x r + omega x (omega x r), r = `vehicle.imu_offset` (Sec. III-C1)."""
    flight.require_rate(MIN_RATE_HZ, "acc", "gyro")
    high, fs, order = st.band[1], st.fs, st.order
    omega = _filt(flight.gyro, fs, 0.0, high, order)
    omega_dot = _band_rate(flight.gyro, omega, flight.t, st)
    r, s = vehicle.imu_offset, _filt(flight.acc, fs, 0.0, high, order)
    for a in range(0, len(s), BLOCK):  # s -= the lever-arm terms, a block at a time
        om, od = omega[a : a + BLOCK], omega_dot[a : a + BLOCK]
        s[a : a + BLOCK] -= np.cross(od, r) + np.cross(om, np.cross(om, r))
    return omega, omega_dot, s


def _mocap_motion(flight: Flight, st: MotionSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bryant angles eta and position zeta band-passed and differentiated twice; omega,
    omega_dot by eq. (4)-(5), a_d by eq. (3); s = R^T (zeta_dd - g)."""
    flight.require_rate(MIN_RATE_HZ, "pos", "quat")
    (low, high), fs, order, t = st.band, st.fs, st.order, flight.t
    eta_raw, pos = quat_to_bryant(flight.quat), flight.pos
    if st.mocap_delay:
        ts = np.clip(t + st.mocap_delay, t[0], t[-1])
        eta_raw, pos = (np.column_stack([np.interp(ts, t, c) for c in x.T]) for x in (eta_raw, pos))
    if np.any(np.abs(eta_raw[:, 1]) > np.radians(80)):
        i = int(np.flatnonzero(np.abs(eta_raw[:, 1]) > np.radians(80))[0])
        raise RotoridError(
            f"{flight.source}: pitch reaches {np.degrees(eta_raw[i, 1]):.0f} deg at t={t[i]:.3f} s, "
            "where Bryant angles are singular (eq. 4); cut that part out with a window"
        )
    eta = _filt(eta_raw, fs, 0.0, high, order)
    eta_d = _band_rate(eta_raw, eta, t, st)
    omega, omega_dot = bryant_rates(eta, eta_d, derivative_blocks(eta_d, t))
    zeta_dd = _in_place_rate(_in_place_rate(_filt(pos, fs, low, high, order), t), t)
    return omega, omega_dot, world_to_body(bryant_to_quat(eta), zeta_dd - GRAVITY_ENU)


def body_rate(flight: Flight, settings: MotionSettings) -> np.ndarray:
    """The body rate omega of `motion` (N, 3) alone: for the IMU source the low-passed gyro, the
    other signals not computed; for motion capture the pose's (`_mocap_motion`). Kept per flight
    and what it depends on (`_kept`; read-only): the lag searches ask for it again and again,
    with a pose lag that moves and the gyro's rate unchanged."""
    st = settings if settings.fs is not None else settings.at(flight.rate)
    if st.source == "imu":
        key = ("rate", "imu", st.fs, st.band[1], st.order)
        return _kept(flight, key, lambda: _filt(flight.gyro, st.fs, 0.0, st.band[1], st.order))
    return _kept(flight, ("rate", st), lambda: _mocap_motion(flight, st)[0])


def body_velocity(flight: Flight, settings: MotionSettings) -> np.ndarray | None:
    """Velocity of the body origin in body axes (N, 3), m/s, low-passed at the band's upper edge:
    the logged velocity, else the logged position differentiated, rotated by the logged attitude
    and read `mocap_delay` later (the pose of `_mocap_motion` alike); None when
    the flight has no attitude or neither channel (the rotor-drag regressor of
    `rotorid.methods.tls` needs it). The velocity read at once is kept per flight and settings
    like `body_rate`, and only read later per call: the lag searches ask for many delays."""
    if flight.quat is None or (flight.vel is None and flight.pos is None):
        return None
    if settings.fs is None:
        settings = settings.at(flight.rate)
    now = replace(settings, mocap_delay=0.0)
    vel = _kept(flight, ("velocity", now), lambda: _body_velocity(flight, now))
    if not settings.mocap_delay:
        return vel
    t = flight.t  # velocity and attitude lag alike: the body-frame velocity is read later
    ts = np.clip(t + settings.mocap_delay, t[0], t[-1])
    return np.column_stack([np.interp(ts, t, c) for c in vel.T])


def _body_velocity(flight: Flight, settings: MotionSettings) -> np.ndarray:
    t, high, order = flight.t, settings.band[1], settings.order
    quat, x = flight.quat, flight.vel if flight.vel is not None else flight.pos
    x = _filt(x, settings.fs, 0.0, high, order)
    return world_to_body(quat, x if flight.vel is not None else _in_place_rate(x, t))  # scipy normalizes q


#: Largest lag of the pose behind the IMU that `pose_lag` searches (s): a motion-capture or
#: estimator pipeline adds a few to a few tens of milliseconds.
MAX_POSE_LAG = 0.05


def pose_lag(piece: Flight, vehicle: Vehicle, settings: MotionSettings) -> float | None:
    """Seconds the logged pose (velocity, else position, with the attitude) lags the IMU on one
    uniform airborne piece: the channel `body_velocity` reads. The shift δ minimising
    Σ_t |s_pose(t + δ) - s_imu(t)|² of the body-frame specific force, s_pose = R^T (ζ̈ - g) from
    the velocity differentiated (or the position twice) turned by the pose's own attitude
    (both lag alike), s_imu the accelerometer moved to the origin as in
    `_imu_motion`; both low-passed at the pose band's upper edge and centred (an accelerometer
    bias does not move δ). The cost is taken at whole-sample shifts over ±`MAX_POSE_LAG` and
    its minimum refined by the parabola through the best three: the signals are band-limited
    far below Nyquist, so the cost is smooth on the sample grid. (Interpolating the signal
    instead would not do: a linear interpolation averages the noise of neighbouring samples,
    so a fractional shift lowers the cost by itself and pulls the lag short; an FFT shift
    wraps the piece's ends around.) This is the time
    alignment of motion capture and IMU of visual-inertial calibration (e.g. Furgale et al.,
    IROS 2013). None when the piece lacks pose or IMU, is too short, or its cost has no minimum
    inside the range (too little motion to time it)."""
    if (piece.vel is None and piece.pos is None) or piece.quat is None or piece.acc is None or piece.gyro is None:
        return None
    st = replace(settings, source="mocap", band=None, parallel_cutoff=None, trim=None, mocap_delay=0.0, fs=None)
    st = st.at(piece.rate)
    high, fs, t = st.band[1], st.fs, piece.t
    _, _, s_imu = _imu_motion(piece, vehicle, replace(st, band=(0.0, high)))
    if piece.vel is not None:
        zeta_dd = _in_place_rate(_filt(piece.vel, fs, 0.0, high, st.order), t)
    else:
        zeta_dd = _in_place_rate(_in_place_rate(_filt(piece.pos, fs, 0.0, high, st.order), t), t)
    s_pose = world_to_body(piece.quat, zeta_dd - GRAVITY_ENU)
    reach = int(np.ceil(MAX_POSE_LAG * fs))
    at = np.flatnonzero((t >= t[0] + st.trim) & (t <= t[-1] - st.trim))[reach:-reach]
    if len(at) < 4 * reach:
        return None
    a, b = at[0], at[-1] + 1  # t increases: the rows kept are one run (slices, not copies)
    target = s_imu[a:b] - s_imu[a:b].mean(axis=0)
    cost = np.array(
        [
            np.sum((s_pose[a + k : b + k] - s_pose[a + k : b + k].mean(axis=0) - target) ** 2)
            for k in range(-reach, reach + 1)
        ]
    )
    j = int(np.argmin(cost))
    if j in (0, 2 * reach):  # no minimum inside the range: a flight without the motion to time it
        return None
    lo, mid, hi = cost[j - 1 : j + 2]
    curve = lo - 2.0 * mid + hi
    step = 0.5 * (lo - hi) / curve if curve > 0 else 0.0
    return float(np.clip((j - reach + step) / fs, -MAX_POSE_LAG, MAX_POSE_LAG))


def drag_regressor(
    u: np.ndarray, vel: np.ndarray, omega: np.ndarray, vehicle: Vehicle, axial: bool = False
) -> np.ndarray:
    """The rotor-drag wrench about the origin per unit k_rd, with the sign of W_t (N, 6): the
    drag is -k_rd G with G = [Σ_i u_i P_i v_i ; Σ_i p_i x u_i P_i v_i], v_i = vel + omega x p_i
    the airspeed of hub i (still air; the origin's velocity `vel` in body axes), P_i = I - a_i a_iᵀ
    its rotor plane. This is the linear rotor-drag model of blade flapping and induced drag
    (Martin & Salaün, ICRA 2010; Kai et al., IFAC 2017; Faessler et al., RA-L 2018, eq. 1), with
    the rotor speed Ω_i ∝ u_i (f = k_t u², eq. 8; the simulator's Ω_i = sqrt(f_i), so its k_rd is
    this one over sqrt(k_t)). The hub's velocity does not depend on the CoM, so G is known; its
    yaw row carries the drag's yaw damping -k_rd Σ u_i |p_i,xy|² ω_z of rotors in the xy plane.
    With `axial` the rotor inflow's instead (per unit k_in, `TlsSettings.rotor_inflow`): P_i = a_i a_iᵀ,
    the thrust a rotor loses climbing along its axis, -k_in u_i a_iᵀ v_i (blade-element and
    momentum theory at a fixed rotor speed; Bangura & Mahony, ACRA 2012)."""
    k = _drag_maps(*_geometry(vehicle), axial)
    x = np.concatenate([vel, omega], axis=1)
    return np.einsum("nij,nj->ni", (u @ k).reshape(-1, 6, 6), x)


def drag_reach(vehicle: Vehicle, axial: bool = False) -> np.ndarray:
    """(6,) bool: the rows of `drag_regressor` (of `axial`) that the rotors' geometry can make
    non-zero (the others are exactly zero); coplanar rotors with parallel axes reach three (the
    in-plane force and the moment about the axis; the axial force and the roll and pitch moments)."""
    k = _drag_maps(*_geometry(vehicle), axial)
    return np.any(k.reshape(-1, 6, 6) != 0.0, axis=(0, 2))


def _geometry(vehicle: Vehicle) -> tuple[bytes, bytes]:
    """The rotors' positions and axes as float64 bytes, `_drag_maps`' cache key."""
    return tuple(np.asarray(a, dtype=np.float64).tobytes() for a in (vehicle.positions, vehicle.axes))


@functools.lru_cache(maxsize=16)
def _drag_maps(positions: bytes, axes: bytes, axial: bool = False) -> np.ndarray:
    """Per rotor, G_i = u_i K_i [vel; omega] (`drag_regressor`) with K_i = [[P, -P [p]x],
    [[p]x P, -[p]x P [p]x]], flattened (M, 36), for rotors at `positions` with `axes` (float64
    bytes of (M, 3)), P = I - a aᵀ (P = a aᵀ with `axial`): built once per geometry, not per block
    of rows (its small-array calls cost more than the product over a block)."""
    p, a = np.frombuffer(positions).reshape(-1, 3), np.frombuffer(axes).reshape(-1, 3)
    z = np.zeros(len(p))
    px, py, pz = p.T
    cross = np.stack([np.stack([z, -pz, py], -1), np.stack([pz, z, -px], -1), np.stack([-py, px, z], -1)], -2)
    along = a[:, :, None] * a[:, None, :]
    proj = along if axial else np.eye(3) - along
    return np.block([[proj, -proj @ cross], [cross @ proj, -cross @ proj @ cross]]).reshape(len(p), 36)


def motion(flight: Flight, vehicle: Vehicle, settings: MotionSettings) -> Motion:
    """Filtered motion of one uniformly sampled piece (Sec. III-C), from the IMU or from
    motion capture (`settings.source`); `settings` concrete (`MotionSettings.at`)."""
    if settings.fs is None:
        settings = settings.at(flight.rate)
    u = rotor_terms(flight, vehicle, settings.speed, settings.tm, settings.voltage_model)
    if settings.source == "imu":
        omega, omega_dot, s = _imu_motion(flight, vehicle, settings)
    else:
        omega, omega_dot, s = _mocap_motion(flight, settings)
    return Motion(t=flight.t, omega=omega, omega_dot=omega_dot, s=s, u=u)


def stuck_motors(flights: Sequence[Flight]) -> str | None:
    """What is wrong when a motor column (`cmd`, `rotor_speed`) holds the same value in every
    sample of every flight: that motor's output was not logged or is stuck, and the rotor terms
    carry no information (None when every column moves). Shared by `rotorid.runs` and the
    methods called directly."""
    for ch in ("cmd", "rotor_speed"):
        cols = [getattr(f, ch) for f in flights if getattr(f, ch) is not None]
        if not cols:
            continue
        v = np.concatenate(cols)
        flat = np.flatnonzero(np.ptp(v, axis=0) <= 1e-9 * np.maximum(np.abs(v).max(axis=0), 1.0))
        if flat.size:
            span = ", ".join(f"{f.t[0]:.2f}–{f.t[-1]:.2f} s" for f in flights[:3])
            same = flat.size == v.shape[1] and np.all(v[0] == v[0, 0])
            which = (
                f"every motor at {v[0, 0]:.6g}" if same else ", ".join(f"motor {j + 1} at {v[0, j]:.6g}" for j in flat)
            )
            return (
                f"channel '{ch}' is constant over every sample ({span}): {which}; that motor output was not "
                "logged or is stuck, and every parameter rests on the motors' thrust and torque"
            )
    return None


#: What is kept of each live flight (`_kept`), by id, with a weak reference that tells it is
#: still that flight and drops the entry when the flight goes.
_KEPT: dict[int, tuple[weakref.ref, dict[Any, Any]]] = {}
#: Results `_kept` holds per flight (the most recently made stay).
KEPT_PER_FLIGHT = 8


def _kept(flight: Flight, key: Any, make: Any) -> Any:
    """`make()` for `flight` and `key`, made once while the flight lives: the IMU-lag search and
    the gain passes of tls ask the same pieces for the same signals tens of times. Arrays are
    handed out read-only (one object serves every caller). Nothing kept may hold the flight."""
    hit = _KEPT.get(id(flight))
    if hit is None or hit[0]() is not flight:
        k = id(flight)
        hit = _KEPT[k] = (weakref.ref(flight, lambda _, k=k: _KEPT.pop(k, None)), {})
    store = hit[1]
    if key in store:
        store[key] = store.pop(key)  # most recently used last
    else:
        value = make()
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        store[key] = value
        while len(store) > KEPT_PER_FLIGHT:
            store.pop(next(iter(store)))
    return store[key]


def airborne_pieces(flight: Flight) -> list[Flight]:
    """Airborne, uniformly sampled pieces of a flight at least `MIN_PIECE` long, cut (and
    resampled) once per flight object (`_kept`; the flight itself is kept as None, so that
    the cache never holds it)."""
    kept = _kept(flight, "pieces", lambda: [None if p is flight else p for p in _airborne_pieces(flight)])
    return [flight if p is None else p for p in kept]


def _airborne_pieces(flight: Flight) -> list[Flight]:
    f = flight
    if f.landed is not None and f.landed.any():
        starts, ends = runs(~f.landed)
        parts = [f.window(f.t[a], f.t[b - 1]) for a, b in zip(starts, ends, strict=True) if b - a >= 2]
    else:
        parts = [f]
    out = []
    for p in parts:
        p = p if is_uniform(p.t, 1e-3) else p.resample()
        if p.duration >= MIN_PIECE:
            out.append(p)
    return out


def rel_error_norms(rho: np.ndarray, wk: np.ndarray) -> dict[str, float]:
    """Relative error norms ||rho_j|| / ||W_k chi_k||_j per wrench component (Table III), in
    percent; NaN where the rotor model produces nothing in that component."""
    num = np.linalg.norm(rho, axis=0)
    den = np.linalg.norm(wk, axis=0)
    ok = den > 1e-9 * max(float(den.max()), 1e-300)
    return {c: float(100 * num[j] / den[j]) if ok[j] else float("nan") for j, c in enumerate(WRENCH)}
