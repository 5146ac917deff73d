"""The IDIM rows (Six et al. eq. 10-12): per-sample observation matrices, parallel filtering,
decimation, the nuisance centring, and the stacked W_t chi_t = rho (eq. 13)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.flight import Flight
from rotorid.frames import quat_to_rot
from rotorid.methods.tls.settings import BODY_DRAG, CHI, CHI_K, K_IN, K_RD, TlsSettings
from rotorid.motion import (
    MIN_PIECE,
    Motion,
    MotionSettings,
    airborne_pieces,
    body_rate,
    body_velocity,
    drag_reach,
    drag_regressor,
    motion,
    rotor_terms,
    speed_source,
)
from rotorid.signal import block_rows, cached_sos, filtfilt_blocks
from rotorid.vehicle import Vehicle


def skew(v: np.ndarray) -> np.ndarray:
    """[v]x for a stack of vectors, (N, 3, 3)."""
    z = np.zeros(len(v))
    x, y, w = v[:, 0], v[:, 1], v[:, 2]
    return np.stack([np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2)


def _inertia_map(v: np.ndarray) -> np.ndarray:
    """L(v) with I v = L(v) [I_xx, I_yy, I_zz, I_xy, I_xz, I_yz], (N, 3, 6)."""
    z = np.zeros(len(v))
    a, b, c = v[:, 0], v[:, 1], v[:, 2]
    return np.stack(
        [np.stack([a, z, z, b, c, z], -1), np.stack([z, b, z, a, z, c], -1), np.stack([z, z, c, z, a, b], -1)], -2
    )


def observation(mo: Motion, vehicle: Vehicle) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-sample IDIM matrices of eq. (10): D_k (N, 6, 2), D (N, 6, 9), D_m (N, 6).

    Force rows: m s + [omega_dot]x ms + [omega]x[omega]x ms = f; moment rows:
    L(omega_dot) I + [omega]x L(omega) I - [s]x ms = tau (eq. 1-2 about the origin, with
    s = a_d - R^-1 g). Rotor wrench for any layout: f = k_t sum u_i^2 a_i, tau = k_t sum
    u_i^2 r_i x a_i + k_d sum torque_dir_i u_i^2 a_i (eq. 8-9 generalised).
    """
    return _rotor_matrix(mo.u, vehicle), *motion_matrices(mo)


def _rotor_matrix(u: np.ndarray, vehicle: Vehicle, thrust: np.ndarray | None = None) -> np.ndarray:
    """D_k (N, 6, 2) of `observation`: the rotor wrench per unit k_t, k_d; `thrust` (N, M), when
    given, each rotor's thrust factor (ground effect, `ground_gain`), which the drag torque lacks."""
    u2 = u**2
    t2 = u2 if thrust is None else u2 * thrust
    geometry = (vehicle.axes, vehicle.positions, vehicle.torque_dirs)
    a, moment, torque = _rotor_maps(*(np.asarray(g, dtype=np.float64).tobytes() for g in geometry))
    dk = np.zeros((len(u), 6, 2))
    dk[:, :3, 0] = t2 @ a
    dk[:, 3:, 0] = t2 @ moment
    dk[:, 3:, 1] = u2 @ torque
    return dk


@functools.lru_cache(maxsize=16)
def _rotor_maps(axes: bytes, positions: bytes, dirs: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rotor (M, 3) each, the thrust axis a_i, its moment r_i x a_i and its drag torque
    torque_dir_i a_i (`_rotor_matrix`) of rotors with `axes`, at `positions`, turning `dirs`
    (float64 bytes): made once per geometry, not per block of rows (`motion._drag_maps` alike)."""
    a, r = np.frombuffer(axes).reshape(-1, 3), np.frombuffer(positions).reshape(-1, 3)
    return a.copy(), np.cross(r, a), np.frombuffer(dirs)[:, None] * a


def motion_matrices(mo: Motion) -> tuple[np.ndarray, np.ndarray]:
    """D (N, 6, 9) and D_m (N, 6) of `observation`: the rigid body's side."""
    n = len(mo.t)
    w = skew(mo.omega)
    d = np.zeros((n, 6, 9))
    d[:, :3, :3] = skew(mo.omega_dot) + w @ w
    d[:, 3:, :3] = -skew(mo.s)
    d[:, 3:, 3:] = _inertia_map(mo.omega_dot) + w @ _inertia_map(mo.omega)
    return d, np.concatenate([mo.s, np.zeros((n, 3))], axis=1)


def body_columns(vel: np.ndarray, form: str) -> np.ndarray:
    """The body drag's force per unit coefficient with the sign of W_t (N, 3), per body axis j:
    v_j ("linear") or |v| v_j ("quadratic") for the body-axis airspeed `vel` (still air); the
    drag is -d_j times it (`TlsSettings.body_drag`)."""
    return vel if form == "linear" else np.linalg.norm(vel, axis=1, keepdims=True) * vel


def hub_heights(flight: Flight, vehicle: Vehicle) -> np.ndarray:
    """Each rotor hub's world height (N, M), m: the logged position's z plus the hub's lever arm
    turned by the attitude (world ENU, z up)."""
    up = quat_to_rot(flight.quat).as_matrix()[:, 2, :]  # the world z row of body-to-world
    return flight.pos[:, 2:3] + up @ np.asarray(vehicle.positions, dtype=np.float64).T


def ground_gain(flight: Flight, vehicle: Vehicle, model: tuple[float, float]) -> np.ndarray:
    """Each rotor's thrust factor in ground effect (N, M), 1 / (1 - c / h²) at its hub's height h
    above the ground level z_g, `model` = (z_g, c): Cheeseman & Bennett's T_IGE / T_OGE =
    1 / (1 - (R / 4h)²) (ARC R&M 3021, 1955), c = R² / 16 (`TlsSettings.ground`); h is held at
    R / 2 or more, where the formula's factor is 4/3 (a hub at or under the ground level)."""
    level, c = model
    return 1.0 / (1.0 - c / np.maximum(hub_heights(flight, vehicle) - level, 2.0 * np.sqrt(c)) ** 2)


@dataclass(frozen=True)
class Rotor:
    """The rotor side of a piece's IDIM, read a block of rows at a time (`rows`) so that nothing
    of the whole piece is copied: the rotor terms u (N, M) scaled by the rotor gains (`idim_rows`'
    `gain`; None: 1) and, with the IMU's `lag` (s), read at the IMU's instant t - lag by linear
    interpolation, the drags' body velocity `vel` (N, 3; None without a drag) alike;
    `omega` the body rate the rotor drag's hub velocities need (the motion's, at the IMU's
    instant); `drags` the hub drags modelled (`Layout.drags`), `body` the body drag's form ("off",
    "linear", "quadratic"; `body_columns`) and `body_scale` its columns' factor
    (`TlsSettings.body_scale`); `ground` (N, M) each rotor's thrust factor in ground effect
    (`ground_gain`; None: 1), read at the rotor terms' instant alike."""

    t: np.ndarray
    u: np.ndarray
    vel: np.ndarray | None
    omega: np.ndarray | None
    gain: np.ndarray | None
    lag: float
    drags: tuple[str, ...] = (K_RD,)
    body: str = "off"
    body_scale: float = 1.0
    ground: np.ndarray | None = None

    def rows(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """u, vel and the ground factor of rows a..b-1: the numbers of scaling and interpolating the
        whole piece (the interpolation reads the samples around t[a:b] - lag, two more either side)."""
        lo, hi = a, b
        if self.lag:
            tq = self.t[a:b] - self.lag
            lo = max(int(np.searchsorted(self.t, tq[0])) - 2, 0)
            hi = min(int(np.searchsorted(self.t, tq[-1])) + 2, len(self.t))
        u = self.u[lo:hi] if self.gain is None else self.u[lo:hi] * np.sqrt(self.gain)
        vel = None if self.vel is None else self.vel[lo:hi]
        ground = None if self.ground is None else self.ground[lo:hi]
        if not self.lag:
            return u, vel, ground
        t, m = self.t[lo:hi], u.shape[1]
        more = [x for x in (vel, ground) if x is not None]
        every = np.column_stack([np.interp(tq, t, c) for c in np.hstack([u, *more]).T])
        at = m + (0 if vel is None else vel.shape[1])
        return every[:, :m], (None if vel is None else every[:, m:at]), (None if ground is None else every[:, at:])


def _motion_columns(mo: Motion, a: int, b: int) -> np.ndarray:
    """Samples a..b-1 of the motion's IDIM columns [D, D_m] (`observation`), (b - a, 60): columns
    12..71 of the rows (D_k before, the rotor drag after)."""
    d, dm = motion_matrices(Motion(mo.t[a:b], mo.omega[a:b], mo.omega_dot[a:b], mo.s[a:b], mo.u[a:b]))
    return np.concatenate([d.reshape(b - a, -1), dm], axis=1)


#: The columns of `_motion_columns` that the specific force s enters (-[s]x ms of the moment
#: rows, m s of D_m; `_force_columns`): an accelerometer bias moves only these. The others
#: (`_RATE_COLUMNS`) depend on the body rate alone.
_FORCE_COLUMNS = np.r_[27:30, 36:39, 45:48, 54:57]
_RATE_COLUMNS = np.setdiff1d(np.arange(60), _FORCE_COLUMNS)


def _force_columns(s: np.ndarray) -> np.ndarray:
    """The `_FORCE_COLUMNS` of `_motion_columns` from the specific force s (n, 3) alone."""
    return np.concatenate([-skew(s).reshape(len(s), 9), s], axis=1)


def _rotor_columns(rotor: Rotor, vehicle: Vehicle, a: int, b: int) -> np.ndarray:
    """Samples a..b-1 of the rotor side's IDIM columns [D_k, hub drags] (`observation`, with the
    six rows of each hub drag's column `motion.drag_regressor` `rotor` models, `Layout`), (b - a,
    12 + 6 per drag): columns 0..11 of the rows, then 72 on (the body drag's after them,
    `_body_drag_columns`)."""
    u, vel, ground = rotor.rows(a, b)
    cols = [_rotor_matrix(u, vehicle, ground).reshape(b - a, -1)]
    cols += [drag_regressor(u, vel, rotor.omega[a:b], vehicle, _AXIAL[d]) for d in rotor.drags]
    return np.concatenate(cols, axis=1)


def _body_drag_columns(rotor: Rotor, a: int, b: int) -> np.ndarray:
    """Samples a..b-1 of the body drag's three force-row columns (`body_columns` of `rotor.body`,
    times `rotor.body_scale`) at the velocity of `rotor` (its rotor terms not read: none, (N, 0)),
    built apart from the rotor side's (`_rotor_columns`), which do not depend on its form."""
    _, vel, _ = rotor.rows(a, b)
    return rotor.body_scale * body_columns(vel, rotor.body)


def _live_rotor_columns(vehicle: Vehicle, drags: tuple[str, ...]) -> np.ndarray:
    """Indices of the columns of `_rotor_columns` (with the hub drags' `drags`) that the rotor
    geometry can make non-zero: the others are exactly zero in every row (coplanar rotors with
    parallel axes leave 4 of D_k's 12 and 3 of each hub drag's 6), so they need no filtering."""
    m = len(vehicle.axes)
    live = [np.any(_rotor_matrix(np.eye(m), vehicle).reshape(m, 12) != 0.0, axis=0)]
    live += [drag_reach(vehicle, _AXIAL[d]) for d in drags]
    return np.flatnonzero(np.concatenate(live))


def _low_passed(
    ms: MotionSettings, sel: np.ndarray, n: int, columns: Any, width: int, keep_forward: bool = False
) -> np.ndarray:
    """Rows `sel` (sorted) of the full-rate (n, `width`) columns `columns(a, b)` (rows a..b-1)
    low-passed in parallel at `ms.parallel_cutoff` (Sec. III-A): `butter_filtfilt`, computed a
    block at a time (`signal.filtfilt_blocks`, the same numbers) so that matrix is never held;
    with `keep_forward` its forward pass is held instead of computed twice (`width` narrow)."""
    sos = cached_sos(ms.fs, ms.parallel_cutoff, ms.order)
    out = np.empty((len(sel), width))
    forward = np.empty((n, width)) if keep_forward else None
    for a, y in filtfilt_blocks(sos, columns, n, block_rows(n), forward):
        i, j = np.searchsorted(sel, [a, a + len(y)])
        out[i:j] = y[sel[i:j] - a]
    return out


def posed(flight: Flight) -> bool:
    """Whether the flight gives the velocity the rotor drag needs (`motion.body_velocity`)."""
    return flight.quat is not None and (flight.pos is not None or flight.vel is not None)


@dataclass(frozen=True)
class Rows:
    """The filtered, decimated IDIM of one configuration: time (n,), D_k (n,6,2), D (n,6,9),
    D_m (n,6), which piece each sample came from, (accelerometer-bias centring) the removed
    means of the force rows per piece, (pieces, 3, 12) as [D_k, D, D_m], the hub drags' columns
    (n, k, 6) of the unknowns `drags` (k of them, `Layout.drags`) with their removed force-row
    means (pieces, k, 3), and (yaw-moment centring) the removed means of the M_z row per piece,
    (pieces, 11 + k) as [D_k, D, drags]; the body drag's force-row columns (n, 3), column j of
    force row j (`body_columns`), with their removed means (pieces, 3)."""

    t: np.ndarray
    dk: np.ndarray
    d: np.ndarray
    dm: np.ndarray
    piece: np.ndarray
    force_mean: np.ndarray | None = None
    drag: np.ndarray | None = None
    drag_mean: np.ndarray | None = None
    yaw_mean: np.ndarray | None = None
    body: np.ndarray | None = None
    body_mean: np.ndarray | None = None
    drags: tuple[str, ...] = ()


#: Whether each hub drag's column is the axial one (`motion.drag_regressor`).
_AXIAL = {K_RD: False, K_IN: True}


@dataclass(frozen=True)
class Layout:
    """Where each part of a piece's columns sits (`_piece_columns`): D_k 0..11, D 12..65, D_m
    66..71, then six (the force rows, then the moment rows) per hub drag `drags` (the rotor drag
    k_rd, the rotor inflow k_in: `TlsSettings.rotor_drag`, `rotor_inflow`), then the body drag's
    three (`body`); the one place these offsets are computed."""

    drags: tuple[str, ...]
    body: bool

    @classmethod
    def of(cls, settings: TlsSettings) -> Layout:
        """The layout of the rows `settings` build."""
        drags = tuple(n for n, on in ((K_RD, settings.rotor_drag), (K_IN, settings.rotor_inflow)) if on)
        return cls(drags, settings.body_drag != "off")

    @property
    def body_at(self) -> int:
        """The body drag's first column (the width without it)."""
        return 72 + 6 * len(self.drags)

    @property
    def width(self) -> int:
        """The number of columns."""
        return self.body_at + 3 * self.body

    def drag_rows(self, rows: tuple[int, ...]) -> list[int]:
        """The columns of every hub drag's wrench rows `rows` (0..2 the force, 5 the yaw moment), drag by drag."""
        return [72 + 6 * j + r for j in range(len(self.drags)) for r in rows]


def idim_rows(
    flights: list[Flight],
    vehicle: Vehicle,
    settings: TlsSettings,
    acc_bias: np.ndarray | None = None,
    gain: np.ndarray | None = None,
    memo: dict | None = None,
    body: np.ndarray | None = None,
    kt_only: bool = False,
    move: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[Rows, dict[str, Any]]:
    """Filtered, decimated IDIM of a configuration's flights (Sec. III-A): every column of
    D_k, D, D_m is low-passed in parallel (same zero-phase filter), decimated and trimmed at
    the piece ends. Returns the rows and the resolved settings.

    With `settings.acc_bias` (IMU source) every column of the three force rows is centred on
    its mean over each piece: an accelerometer bias b adds the constant m b to the force rows
    (m s_meas = m s + m b), i.e. one exactly known constant column per piece and force axis.
    In TLS, exactly known columns are projected out before the SVD (mixed LS-TLS, Van Huffel &
    Vandewalle 1991, Sec. 3.6.3); the projection onto the complement of a constant is the
    centring. The means are kept (`Rows.force_mean`) to give b = mean residual / m back.
    `acc_bias` (pieces, 3), when given, is subtracted from the specific force first, so the
    moment rows' -[s]x ms use it too (`identify` does this with the first pass's b). `gain`
    (n_rotors,) scales each rotor's wrench (u_i² -> gain_i u_i²; `motor_spread`).

    With `settings.yaw_moment` the M_z row is centred per piece alike (a constant yaw moment);
    with `settings.rotor_drag` (`rotor_inflow`) the rotor drag's (inflow's) column, `Layout`, is built from the
    flights' velocity (`motion.body_velocity`), at the rotor terms' instant (left out when a
    flight logs no attitude or no position or velocity: `_as_flown`); with `settings.body_drag` "linear" or
    "quadratic" the body drag's columns alike (`body_columns`), `body` (3,), when given, the
    drag's specific force per unit column (d / m of a first pass) added to s first (s less the
    drag's specific force: `TlsSettings.body_drag`); with `settings.ground_model` the thrust of
    each rotor times its ground-effect factor (`ground_gain`).

    `memo`, a dict that lives for one identification, keeps each piece's filtered columns
    between calls (`_piece_columns`): the motion's, which the IMU-lag search and the rotor gains
    of `motor_spread` do not change (those the specific force enters apart, which an
    accelerometer bias and a body drag removed do), and the rotor side's of the latest lags and
    gains: the same numbers, a fraction of the cost.

    With `kt_only` the rows carry the k_t column D_k[:, :, 0] alone (the others zero, the motion's
    not read): the rotors' own k_t columns of `gains.gain_columns` and the ground effect's, the
    same numbers as a whole build's (each column is filtered on its own).

    With `move` (G, A), 3 x 3 each, the rows are instead the derivative of these along a move of
    the IMU's data, gyro ω -> ω + G ω and specific force s -> s + A s (`_moved_columns`; the
    assembled W_t is then dW_t, linear in the move: `solve.imu_part`)."""
    settings = _as_flown(settings, all(posed(f) for f in flights))
    pieces = [p for f in flights for p in airborne_pieces(f)]
    if not pieces:
        srcs = ", ".join(f.source for f in flights) or "no flight"
        raise ExcitationError(f"{srcs}: no airborne piece of at least {MIN_PIECE:g} s; give longer windows of flight")
    rates = [p.rate for p in pieces]
    cfg = settings.resolve(min(rates))
    ts, parts, idx = [], [], []
    ncol = Layout.of(settings).width
    centre = _centred_columns(settings)
    means = np.zeros((len(pieces), ncol))  # pieces left out keep zero means
    for k, (p, rate) in enumerate(zip(pieces, rates, strict=True)):
        own = settings.motion.at(rate)  # the slowest piece's band, cut-off and trim for all
        ms = replace(own, band=tuple(cfg["band"]), parallel_cutoff=cfg["parallel_cutoff"], trim=cfg["trim"])
        keep = np.flatnonzero((p.t >= p.t[0] + ms.trim) & (p.t <= p.t[-1] - ms.trim))
        # every d-th sample of the log's own time grid, so the rows do not depend on where a window starts
        sel = keep[np.round(p.t[keep] * own.fs).astype(np.int64) % settings.decimation(own) == 0]
        rotor_side, piece = _rotor_side(settings, gain, kt_only), (flights, k, acc_bias, body)
        if move is None:
            cols = _piece_columns(p, vehicle, ms, sel, rotor_side, memo, piece)
        else:
            cols = _moved_columns(p, vehicle, ms, sel, rotor_side, memo, piece, move)
        if cols is None:
            continue
        means[k, centre] = _centre(cols, centre)
        ts.append(p.t[sel])
        parts.append(cols)
        idx.append(np.full(len(sel), k))
    if not ts:
        raise ExcitationError("every airborne piece is shorter than the filter trim; give longer windows")
    cfg["speed_channel"] = speed_source(pieces[0], vehicle, settings.speed)
    return _stacked(np.concatenate(ts), np.concatenate(parts), np.concatenate(idx), means, settings), cfg


def _as_flown(settings: TlsSettings, flown: bool) -> TlsSettings:
    """`settings` with the terms that need the flights' velocity left out where they give none
    (`flown`, `posed`): the hub drags, and the body drag (`body_form`)."""
    return replace(
        settings,
        rotor_drag=settings.rotor_drag and flown,
        rotor_inflow=settings.rotor_inflow and flown,
        body_drag=body_form(settings, flown),
    )


def _centre(cols: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """The columns `centre` of a piece's `cols` centred on their means, in place (`idim_rows`):
    gathered once for the means and the centring. Returns the means."""
    part = cols[:, centre]
    mean = part.mean(axis=0)
    part -= mean
    cols[:, centre] = part
    return mean


#: What a piece's rotor side is built from (`_rotor_side`): the rotors' gains, the IMU's lag (s),
#: the hub drags modelled (`Layout.drags`), the body drag's form and its columns' factor, `kt_only`,
#: the ground model (z_g, c).
RotorSide = tuple[np.ndarray | None, float, tuple[str, ...], str, float, bool, tuple[float, float] | None]


def _rotor_side(settings: TlsSettings, gain: np.ndarray | None, kt_only: bool) -> RotorSide:
    """The `RotorSide` of `settings` with the gains `gain` (`idim_rows`): the IMU's lag is the IMU
    source's alone."""
    lag = (settings.imu_delay or 0.0) if settings.source == "imu" else 0.0
    return (
        gain,
        lag,
        Layout.of(settings).drags,
        settings.body_drag,
        settings.body_scale or 1.0,
        kt_only,
        settings.ground_model,
    )


def _stacked(t: np.ndarray, cols: np.ndarray, piece: np.ndarray, means: np.ndarray, settings: TlsSettings) -> Rows:
    """The rows of every piece (`_piece_columns`' layout, `Layout`: D_k, D, D_m, each hub drag's 6,
    the body drag's 3) and the means removed from them (`_removed_means`) as `Rows`."""
    force_mean, drag_mean, yaw_mean, body_mean = _removed_means(means, settings)
    lay = Layout.of(settings)
    b0 = lay.body_at
    return Rows(
        t,
        cols[:, :12].reshape(-1, 6, 2),
        cols[:, 12:66].reshape(-1, 6, 9),
        cols[:, 66:72],
        piece,
        force_mean,
        cols[:, 72:b0].reshape(len(t), -1, 6) if lay.drags else None,
        drag_mean,
        yaw_mean,
        cols[:, b0 : b0 + 3] if lay.body else None,
        body_mean,
        lay.drags,
    )


def body_form(settings: TlsSettings, flown: bool = True) -> str:
    """The body drag's form the rows carry (`TlsSettings.body_drag`): "off" where it is to be
    chosen ("auto", `terms.choose_body_drag`) or the flights give no velocity (`flown`)."""
    return settings.body_drag if flown and settings.body_drag in ("linear", "quadratic") else "off"


def _piece_columns(
    p: Flight,
    vehicle: Vehicle,
    ms: MotionSettings,
    sel: np.ndarray,
    rotor_side: RotorSide,
    memo: dict | None,
    piece: tuple[list[Flight], int, np.ndarray | None, np.ndarray | None],
) -> np.ndarray | None:
    """Rows `sel` of the airborne piece `p`'s IDIM columns (`observation`), every column
    low-passed on its own (`_low_passed`; None when `sel` keeps fewer than two rows): its motion
    less the accelerometer bias and the body drag's specific force of `piece` (flights, index,
    biases or None, the drag's specific force per unit `body_columns` or None; `idim_rows`), and
    the rotor side `rotor_side` (gains, the IMU's lag, whether the rotor drag is modelled, the
    body drag's form and scale; `Rotor`; whether its k_t column alone is asked, `idim_rows`; the
    ground model, `ground_gain`), of which only the live columns are filtered
    (`_live_rotor_columns`), and the body drag's (`_body_drag_columns`). `memo` keeps the parts
    apart (`idim_rows`): the motion columns, which depend on neither gains nor lag, keyed by what
    they depend on (the flights, alive for the whole identification, the motion settings with the
    pose's lag only where the motion is the pose's, the rows kept); those the specific force
    enters (`_FORCE_COLUMNS`) by the bias and the body drag removed too (with the pose's lag and
    the IMU's, which time it); the rotor columns, which depend on neither, by the gains, lag and
    ground model too, and the body drag's by its form, scale and lag (the body-drag candidates
    share the rotor columns), the latest few of each (`_kept_columns`)."""
    flights, k, biases, body = piece
    gain, lag, drags, form, scale, kt_only, ground = rotor_side
    bias = None if biases is None else biases[k]
    removed = body is not None and form != "off"
    pose_lag = ms.mocap_delay if ms.source == "mocap" else None
    what = (ms.source, ms.band, ms.parallel_cutoff, ms.trim, ms.order, ms.fs, pose_lag)
    key = (tuple(map(id, flights)), k, what, sel.tobytes())
    force_id = ("force", *key, None if bias is None else bias.tobytes())
    force_id += (form, body.tobytes(), lag, ms.mocap_delay) if removed else ()
    rate = None if memo is None else memo.get(key)
    held = memo is not None and force_id in memo.get(_KEPT, {})
    # checks the piece as every call did (a k_t column alone follows a whole build of the same rows)
    mo = motion(p, vehicle, ms) if not kt_only and (rate is None or not held) else None
    if len(sel) < 2:
        return None
    if rate is None and not kt_only:
        rate = _low_passed(ms, sel, len(p.t), lambda a, b: _motion_columns(mo, a, b)[:, _RATE_COLUMNS], 48)
        if memo is not None:
            memo[key] = rate

    def force() -> np.ndarray:
        _rows_force(mo, p, ms, bias, body if removed else None, form, lag)
        return _low_passed(ms, sel, len(p.t), lambda a, b: _force_columns(mo.s[a:b]), 12)

    side_drags = () if kt_only else drags  # the rotor side's own columns
    live = _live_rotor_columns(vehicle, side_drags)
    if kt_only:  # D_k[:, :, 0]: the even columns of its 12
        live = live[live % 2 == 0]
    gains = None if gain is None or np.all(gain == 1.0) else gain.tobytes()

    def rotor() -> np.ndarray:
        u = rotor_terms(p, vehicle, ms.speed, ms.tm, ms.voltage_model) if mo is None else mo.u
        vel = body_velocity(p, ms) if side_drags else None
        omega = None if not side_drags else (body_rate(p, ms) if mo is None else mo.omega)
        thrust = None if ground is None else ground_gain(p, vehicle, ground)
        side = Rotor(p.t, u, vel, omega, None if gains is None else gain, lag, side_drags, "off", scale, thrust)
        return _low_passed(
            ms, sel, len(p.t), lambda a, b: _rotor_columns(side, vehicle, a, b)[:, live], len(live), True
        )

    def body_drag() -> np.ndarray:
        side = Rotor(p.t, np.empty((len(p.t), 0)), body_velocity(p, ms), None, None, lag, (), form, scale)
        return _low_passed(ms, sel, len(p.t), lambda a, b: _body_drag_columns(side, a, b), 3, True)

    lay = Layout(drags, form != "off")
    out = np.zeros((len(sel), lay.width))
    if not kt_only:
        out[:, 12 + _RATE_COLUMNS] = rate
        out[:, 12 + _FORCE_COLUMNS] = _kept_columns(memo, force_id, force)
        if lay.body:
            body_id = ("body", *key, ms, lag, form, scale)
            out[:, lay.body_at :] = _kept_columns(memo, body_id, body_drag)
    # the rotor side's columns apart from the body drag's: the same whatever the body drag's form
    rotor_id = ("rotor", *key, ms, lag, side_drags, gains, kt_only, ground)
    out[:, np.where(live < 12, live, live + 60)] = _kept_columns(memo, rotor_id, rotor)
    return out


def _rows_force(
    mo: Motion, p: Flight, ms: MotionSettings, bias: np.ndarray | None, body: np.ndarray | None, form: str, lag: float
) -> None:
    """The specific force the rows use, in place in `mo.s`: less the accelerometer bias `bias`
    (3,) and the body drag's specific force -d g(v) / m (`body`, per unit `body_columns` of the
    form `form`; None: not removed), at the IMU's instant (`lag`)."""
    if bias is not None:
        mo.s[:] -= bias  # in place: the caller's own array
    if body is not None:
        vel = body_velocity(p, ms)
        at_imu = vel if not lag else np.column_stack([np.interp(p.t - lag, p.t, c) for c in vel.T])
        mo.s[:] += body * body_columns(at_imu, form)


def _imu_basis(omega: np.ndarray, omega_dot: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The signals every motion column (`_motion_columns`) is a fixed linear combination of,
    (n, 12): ω̇, the six products ω_i ω_j (i <= j), s (the columns are linear in ω̇ and s and
    quadratic in ω)."""
    i, j = np.triu_indices(3)
    return np.concatenate([omega_dot, omega[:, i] * omega[:, j], s], axis=1)


@functools.lru_cache(maxsize=32)
def _moved_map(g: bytes, a: bytes) -> np.ndarray:
    """(12, 60) B with dC = m B: the derivative of the motion columns C (`_motion_columns`) along
    ω -> ω + G ω, ω̇ -> ω̇ + G ω̇, s -> s + A s (G, A: float64 bytes of 3 x 3) as a linear map of
    the basis m (`_imu_basis`). C is quadratic in ω, so the central difference at a unit step is
    its exact derivative, and linear in m; B is solved from random samples (exact to rounding)."""
    gm, am = np.frombuffer(g).reshape(3, 3), np.frombuffer(a).reshape(3, 3)
    om, od, s = np.random.default_rng(0).standard_normal((3, 40, 3))
    t, u = np.zeros(40), np.zeros((40, 1))

    def cols(sign: float) -> np.ndarray:
        moved = Motion(t, om + sign * om @ gm.T, od + sign * od @ gm.T, s + sign * s @ am.T, u)
        return _motion_columns(moved, 0, 40)

    return np.linalg.lstsq(_imu_basis(om, od, s), (cols(1.0) - cols(-1.0)) / 2.0, rcond=None)[0]


def _moved_columns(
    p: Flight,
    vehicle: Vehicle,
    ms: MotionSettings,
    sel: np.ndarray,
    rotor_side: RotorSide,
    memo: dict | None,
    piece: tuple[list[Flight], int, np.ndarray | None, np.ndarray | None],
    move: tuple[np.ndarray, np.ndarray],
) -> np.ndarray | None:
    """The derivative of `_piece_columns` (same arguments, IMU source) along the IMU data's move
    `move` (G, A; `idim_rows`): the motion columns' as their basis (`_imu_basis`, low-passed
    once per piece and kept in `memo`) times `_moved_map`, the hub drags' from the body rate's
    move G ω (their regressors are linear in the rate), zero in the columns no IMU datum enters
    (the rotors', the body drag's). The move acts on the specific force the rows use, s less the
    lever arm, bias and body drag removed, whose own small share (the move times those) it leaves out."""
    flights, k, biases, body = piece
    gain, lag, drags, form, scale = rotor_side[:5]  # no IMU datum enters the thrust's ground factor
    if len(sel) < 2:
        return None
    key = ("imu basis", tuple(map(id, flights)), k, ms, sel.tobytes())
    held = None if memo is None else memo.get(key)
    if held is None:
        mo = motion(p, vehicle, ms)
        _rows_force(mo, p, ms, None if biases is None else biases[k], body if form != "off" else None, form, lag)
        basis = _low_passed(ms, sel, len(p.t), lambda a, b: _imu_basis(mo.omega[a:b], mo.omega_dot[a:b], mo.s[a:b]), 12)
        held = (basis, mo.omega, mo.u)
        if memo is not None:
            memo[key] = held
    basis, omega, u = held
    g, a = (np.ascontiguousarray(m, dtype=np.float64) for m in move)
    out = np.zeros((len(sel), Layout(drags, form != "off").width))
    out[:, 12:72] = basis @ _moved_map(g.tobytes(), a.tobytes())
    if drags and np.any(g):
        live = _live_rotor_columns(vehicle, drags)
        live = live[live >= 12]
        side = Rotor(p.t, u, np.zeros_like(omega), omega @ g.T, gain, lag, drags, "off", scale)
        out[:, live + 60] = _low_passed(
            ms, sel, len(p.t), lambda a, b: _rotor_columns(side, vehicle, a, b)[:, live], len(live)
        )
    return out


#: Bytes of the columns that change between calls (the specific force's with the accelerometer
#: bias, the rotor side's with the lag and gains) an identification's memo keeps, the latest used
#: (`_kept_columns`): the IMU-lag search visits each lag once or twice, the solves after it build
#: the chosen lag's rows with equal rotors tens of times and each rotor's own gain a few times.
#: Bounded, so that a long flight's memo stays a fixed size (a 1200 s, 200 Hz piece's rotor
#: columns are ~2 MB a lag). 16 MB: the lag search's ~22 candidates on three 51 s, 500 Hz pieces
#: (~8.6 MB) overflowed 8 MB, and the zero lag's columns were built again after it (27 builds).
KEPT_BYTES = 16 << 20
_KEPT = "columns kept"


def _kept_columns(memo: dict | None, ident: tuple, make: Any) -> np.ndarray:
    """`make()`, a piece's low-passed columns under `ident` (what they depend on), kept in `memo`
    with the latest others up to `KEPT_BYTES` (made afresh without a memo)."""
    if memo is None:
        return make()
    store = memo.setdefault(_KEPT, {})
    cols = store.pop(ident, None)
    store[ident] = cols = make() if cols is None else cols  # the most recently used last
    while sum(c.nbytes for c in store.values()) > KEPT_BYTES and len(store) > 1:
        store.pop(next(iter(store)))
    return cols


def _centred_columns(settings: TlsSettings) -> np.ndarray:
    """Columns of the rows centred per piece for a nuisance constant (`idim_rows`): [D_k, D,
    D_m, hub drags, body drag] of the three force rows (accelerometer bias), of the M_z row (yaw moment)."""
    lay = Layout.of(settings)
    body = list(range(lay.body_at, lay.width))
    force = [*range(6), *range(12, 39), *range(66, 69), *lay.drag_rows((0, 1, 2)), *body]
    yaw = [10, 11, *range(57, 66), 71, *lay.drag_rows((5,))]
    return np.array(force * settings.centred + yaw * settings.yaw_moment, dtype=np.int64)


def _removed_means(
    means: np.ndarray, settings: TlsSettings
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """The per-piece means `idim_rows` removed (pieces, columns of `_piece_columns`) as `Rows` keeps
    them: force rows [D_k, D, D_m] (pieces, 3, 12), their hub drags' columns (pieces, k, 3), the
    M_z row [D_k, D, drags] (pieces, 11 + k), the body drag's columns (pieces, 3); None for what
    was not centred."""
    force_mean = drag_mean = yaw_mean = body_mean = None
    lay = Layout.of(settings)
    if settings.centred:
        m = means
        force_mean = np.concatenate([m[:, :6].reshape(-1, 3, 2), m[:, 12:39].reshape(-1, 3, 9), m[:, 66:69, None]], 2)
        drag_mean = m[:, lay.drag_rows((0, 1, 2))].reshape(len(m), -1, 3) if lay.drags else None
        body_mean = m[:, lay.body_at : lay.width] if lay.body else None
    if settings.yaw_moment:
        yaw_mean = np.column_stack([means[:, 10:12], means[:, 57:66], means[:, lay.drag_rows((5,))]])
    return force_mean, drag_mean, yaw_mean, body_mean


def _names(configs: list[str], drags: tuple[str, ...] = (), body: bool = False) -> list[str]:
    single = len(configs) == 1
    rigid = (p if single else f"{p}@{c}" for c in configs for p in CHI)
    return [*CHI_K, *rigid, *drags, *(BODY_DRAG if body else ())]


def _shared(rows: dict[str, Rows]) -> tuple[tuple[str, ...], bool, int]:
    """The unknowns every configuration's rows share after the rigid-body ones (`assemble`): the hub
    drags', whether the body drag's, and the column after the hub drags (the body drag's first)."""
    drags = next(iter(rows.values())).drags if all(r.drag is not None for r in rows.values()) else ()
    return drags, all(r.body is not None for r in rows.values()), 2 + 9 * len(rows) + len(drags)


def assemble(rows: dict[str, Rows], masses: dict[str, float]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """W_t of eq. (13) / eq. (25): columns [-W_k | W^A 0 .. | 0 W^B .. | W_rd | W_b | m W_m], rows
    grouped by (configuration, wrench component); W_rd, the hub drags (rotor drag, rotor inflow)
    shared by every configuration (`motion.drag_regressor`), and W_b, the body drag's three
    force-row columns (`body_columns`), only when the rows carry them (`_shared`). Returns W_t,
    the row-block index (6 c + j) and the column names (without the known last column)."""
    cfgs = list(rows)
    drags, body, nd = _shared(rows)
    nc = nd + 3 * body
    mats, blocks = [], []
    for ci, c in enumerate(cfgs):
        r = rows[c]
        n = len(r.t)
        w = np.zeros((6, n, nc + 1))
        w[:, :, :2] = -np.moveaxis(r.dk, 1, 0)
        w[:, :, 2 + 9 * ci : 11 + 9 * ci] = np.moveaxis(r.d, 1, 0)
        if drags:
            w[:, :, nd - len(drags) : nd] = np.moveaxis(r.drag, 2, 0)
        if body:
            w[:3, :, nd : nd + 3] = np.eye(3)[:, None, :] * r.body.T[:, :, None]
        w[:, :, -1] = masses[c] * r.dm.T
        mats.append(w.reshape(6 * n, nc + 1))
        blocks.append(np.repeat(6 * ci + np.arange(6), n))
    return mats[0] if len(mats) == 1 else np.concatenate(mats), np.concatenate(blocks), _names(cfgs, drags, body)


def kt_column(rows: dict[str, Rows]) -> tuple[np.ndarray, np.ndarray]:
    """Column 0 of `assemble`'s W_t, -D_k[:, :, 0] (the k_t column), and its row-block index, without
    the rest of W_t (`gains.gain_columns` keeps only this of each rotor's rows)."""
    cols = [-np.moveaxis(r.dk[:, :, 0], 1, 0).reshape(-1) for r in rows.values()]
    blocks = [np.repeat(6 * ci + np.arange(6), len(r.t)) for ci, r in enumerate(rows.values())]
    return np.concatenate(cols), np.concatenate(blocks)


def force_means(
    rows: dict[str, Rows], masses: dict[str, float], ncols: int, removed: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """The means `idim_rows` removed from the force rows over each piece, as columns of W_t
    (`assemble`, `ncols` with the known one; the rotors' gain columns, whose means `removed`
    gives (`gain_columns`), just before it): (pieces, 3, ncols) per centred configuration."""
    drags, body, nd = _shared(rows)
    nc = nd + 3 * body
    out = {}
    for ci, (c, r) in enumerate(rows.items()):
        if r.force_mean is None:
            continue
        fm = r.force_mean
        m = np.zeros((len(fm), 3, ncols))
        m[..., :2] = -fm[..., :2]
        m[..., 2 + 9 * ci : 11 + 9 * ci] = fm[..., 2:11]
        if drags and r.drag_mean is not None:
            m[..., nd - len(drags) : nd] = np.moveaxis(r.drag_mean, 1, 2)
        if body and r.body_mean is not None:
            m[..., nd : nd + 3] = np.eye(3) * r.body_mean[:, :, None]
        if removed:
            m[..., nc:-1] = removed[c]
        m[..., -1] = masses[c] * fm[..., 11]
        out[c] = m
    return out


def acc_bias_estimate(
    rows: dict[str, Rows], x: np.ndarray, masses: dict[str, float], removed: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Accelerometer bias per configuration and piece (pieces, 3), m/s²: the force rows' mean
    residual over each piece divided by the mass (`idim_rows`), at the solution x (every
    unknown of W_t; with the rotors' gains, theirs last, `removed` their columns' means)."""
    means = force_means(rows, masses, len(x) + 1, removed)
    return {c: m @ np.append(x, 1.0) / masses[c] for c, m in means.items()}


def yaw_moments(rows: dict[str, Rows], x: np.ndarray) -> dict[str, np.ndarray]:
    """Constant yaw moment per configuration and piece (pieces,), N m, that the rotor model
    leaves (`TlsSettings.yaw_moment`): the M_z row's mean residual over each piece at the
    solution x, with the sign of a moment acting on the vehicle (rigid-body minus rotor)."""
    drags, _, nd = _shared(rows)
    out = {}
    for ci, (c, r) in enumerate(rows.items()):
        if r.yaw_mean is not None:
            out[c] = r.yaw_mean @ np.concatenate([-x[:2], x[2 + 9 * ci : 11 + 9 * ci], x[nd - len(drags) : nd]])
    return out
