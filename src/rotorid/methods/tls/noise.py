"""The sensor noise in the regressors (errors in variables, `TlsSettings.eiv`): the noise floors,
their moment in W_t's columns, and the disturbance torque read from the moment rows' residuals."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from rotorid.errors import ExcitationError
from rotorid.flight import Flight
from rotorid.frames import quat_to_bryant
from rotorid.methods.regression import block_parts
from rotorid.methods.tls.problem import Solution, TlsProblem
from rotorid.methods.tls.rows import Rows, assemble, motion_matrices
from rotorid.methods.tls.selection import expanded, fixed_fit
from rotorid.methods.tls.settings import TlsSettings
from rotorid.motion import (
    Motion,
    MotionSettings,
    airborne_pieces,
    motion,
)
from rotorid.signal import BLOCK, butter_filtfilt, derivative
from rotorid.vehicle import Vehicle

#: The noise floor of a measured signal is read from this multiple of the band's high corner up
#: to 0.9 x Nyquist: above the rigid-body band (a multirotor's controlled motion stays within a
#: few Hz, the identification uses nothing above the band) and below a logger's anti-alias edge.
NOISE_FROM = 3.0


def _spectrum(x: np.ndarray, fs: float) -> tuple[np.ndarray, np.ndarray]:
    """Welch power spectral density of each column of `x` (N, C): segments median-averaged (rotor
    vibration lines and transients do not count as noise), linear detrend."""
    from scipy.signal import welch

    return welch(x, fs=fs, nperseg=int(min(256, len(x))), axis=0, average="median", detrend="linear")


def noise_floor(
    x: np.ndarray, fs: float, f_lo: float, spectrum: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Variance per sample of the white noise in each column of `x` (N, C): the median over
    [f_lo, 0.9 fs/2] of its Welch power spectral density (segments median-averaged, so rotor
    vibration lines and transients do not count as noise), times fs/2 (white noise of variance
    σ² per sample has the one-sided density 2σ²/fs); where that band is not flat (frame
    vibration swept over it by the rotors' speeds, aliased by a slow logger), half the level of
    the quietest part above the band (`_quiet_level`). Zero where that band holds no bin. A
    logger that low-passes its signals below f_lo leaves a lower floor: the compensation is
    then partial, never excessive. `spectrum`: `x`'s (`_spectrum`), when already taken."""
    level = _quiet_level(spectrum or _spectrum(x, fs), f_lo, 0.45 * fs)
    return np.zeros(x.shape[1]) if level is None else level[0] * fs / 2.0


#: `_quiet_level` cuts the spectrum above the identification band into parts of a quarter of the
#: floor's band's width (`SUB_BANDS`) and takes the floor's median as white unless it lies above
#: the quietest part below the floor's band by more than `FLAT_RATIO` (white noise: the parts agree
#: within ~20 %, their medians' sampling error, and a floor off by less is `floor_doubt`'s;
#: vibration swept over the floor's band by the rotors' speeds puts it 10-1000x above).
SUB_BANDS = 4
FLAT_RATIO = 2.0


def _quiet_level(
    spectrum: tuple[np.ndarray, np.ndarray], lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The white-noise level of each column read in [lo, hi] Hz, its relative standard error
    and whether that band's median is the white floor: the spectrum does not rise into it from
    the identification band's edge (lo / NOISE_FROM; white noise is flat, the motion's spectrum
    and a logger's low-pass fall with frequency, so a rise by more than `FLAT_RATIO` over the
    quietest part below lo is something else: vibration). Where it is white, the median and its
    error (`_band_level`). Where it is not, the white noise lies somewhere under the quietest part
    above the band, U: the level is taken uniform between zero and U, its mean U / 2 with the
    relative standard error 1 / sqrt(3) (`floor_doubt`). None where no bin lies in [lo, hi]."""
    whole = _band_level(spectrum, lo, hi)
    if whole is None:
        return None
    width = (hi - lo) / SUB_BANDS
    starts = np.arange(lo / NOISE_FROM, hi - 0.5 * width, width)
    parts = [(a < lo, _band_level(spectrum, a, min(a + width, lo) if a < lo else a + width)) for a in starts]
    below = [p[0] for below, p in parts if below and p is not None]
    if not below:
        return (*whole, np.ones_like(whole[0], dtype=bool))
    flat = FLAT_RATIO * np.min(below, axis=0) >= whole[0]
    quiet = np.min([p[0] for _, p in parts if p is not None], axis=0)
    return np.where(flat, whole[0], 0.5 * quiet), np.where(flat, whole[1], 1.0 / np.sqrt(3.0)), flat


def _band_level(spectrum: tuple[np.ndarray, np.ndarray], lo: float, hi: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Median over [lo, hi] Hz of each column's power spectral density (`_spectrum`) and the
    relative standard error of that median (1.2533 x the bins' robust spread 1.4826 MAD /
    sqrt(K), K the independent bins: the Hann window's equivalent noise bandwidth is 1.5
    bins); None where no bin lies there."""
    f, pxx = spectrum
    band = (f >= lo) & (f <= hi)
    if not band.any():
        return None
    med = np.median(pxx[band], axis=0)
    spread = 1.2533 * 1.4826 * np.median(np.abs(pxx[band] - med), axis=0) / np.sqrt(band.sum() / 1.5)
    return med, spread / np.where(med > 0, med, 1.0)


def floor_doubt(
    x: np.ndarray, fs: float, f_lo: float, spectrum: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Relative change δ of each column's white-noise floor (`noise_floor`, read above f_lo) if
    the noise in the band were at the level the spectrum has just below f_lo, from f_lo / 2 to
    f_lo (1.5 to NOISE_FROM times the band's edge), or, where the two levels agree within three
    times their combined standard error (`_band_level`), the floor's standard error. The
    compensation extrapolates the floor into the band as white: a sensor's or logger's
    low-pass at a few tens of Hz puts the floor in its stop band, and vibration or motion
    there moves it the other way. Where the floor's band is not flat (`_quiet_level`: the floor
    is half a bound), the level compared is the band edge's, from lo / NOISE_FROM to 1.5 times
    that, and δ is at least the bound's 1 / sqrt(3). 0 where there is no floor.
    `spectrum` as in `noise_floor`."""
    spectrum = spectrum or _spectrum(x, fs)
    far = _quiet_level(spectrum, f_lo, 0.45 * fs)
    near = _band_level(spectrum, 0.5 * f_lo, f_lo)
    edge = _band_level(spectrum, f_lo / NOISE_FROM, 1.5 * f_lo / NOISE_FROM)
    if far is None or near is None:
        return np.zeros(x.shape[1])
    (floor, se, flat_far), (level, se_near) = far, near
    d = level / np.where(floor > 0, floor, 1.0) - 1.0
    flat = np.abs(d) <= 3.0 * np.hypot(se, se_near)  # the two levels agree within their sampling error
    d = np.where(flat, se, d)
    if edge is not None:
        d = np.where(flat_far, d, np.maximum(edge[0] / np.where(floor > 0, floor, 1.0) - 1.0, se))
    return np.where(floor > 0, d, 0.0)


#: `floor_note` speaks when the doubt about the noise floors (`floor_var`) is this share of a
#: parameter's variance or more.
FLOOR_SHARE = 0.25


def _piece_floor(p: Flight, ms: MotionSettings) -> tuple[np.ndarray, np.ndarray]:
    """The white-noise variance per sample of the six measured signals of one airborne piece
    (`noise_floor`) and its relative doubt (`floor_doubt`): gyro and accelerometer, or Bryant
    angles and position (taken isotropic). One sensor at a time (Welch's segments are a few
    times the signal's size; the numbers of both at once up to the rounding of the segments'
    detrend, ~1e-14 relative)."""
    f_lo = NOISE_FROM * ms.band[1]
    signals = (p.gyro, p.acc) if ms.source == "imu" else (np.unwrap(quat_to_bryant(p.quat), axis=0), p.pos)
    spectra = [_spectrum(x, p.rate) for x in signals]  # one each, read for the floor and its doubt
    floor = np.concatenate([noise_floor(x, p.rate, f_lo, sp) for x, sp in zip(signals, spectra, strict=True)])
    doubt = np.concatenate([floor_doubt(x, p.rate, f_lo, sp) for x, sp in zip(signals, spectra, strict=True)])
    if ms.source != "imu":
        floor[3:], doubt[3:] = floor[3:].mean(), doubt[3:].mean()
    return floor, doubt


def chain_responses(ms: MotionSettings) -> np.ndarray:
    """Impulse responses (n, 5) of the paths white noise of a measured signal takes to the rows
    of W_t, through `motion`'s filters and derivatives and the parallel low-pass of
    `rows._low_passed` (the same zero-phase filters, so the noise of a rate and of its derivative
    is uncorrelated at one instant): IMU gyro -> ω, gyro -> ω̇, accelerometer -> s; motion
    capture angles -> η̇ and η̈ (ω ≈ η̇, ω̇ ≈ η̈ near hover, eq. 4-5), position -> ζ̈ (eq. 3);
    then white angular acceleration of the body itself -> ω̇ (a disturbance torque,
    `disturbance_moment`: what a derivative takes from a rate its integral gave, so the band alone);
    last, motion capture's angles -> the attitude s = Rᵀ(ζ̈ - g) is rotated by (low-passed,
    `_mocap_motion`; the IMU measures s in body axes: unused there)."""
    (low, high), fs, order = ms.band, ms.fs, ms.order
    n = max(4096, int(16 * fs / low) if low > 0 else 0)  # the band-pass's ring-down fits
    x = np.zeros(n)
    x[n // 2] = 1.0
    t = np.arange(n) / fs
    band = butter_filtfilt(x, fs, (low, high) if low > 0 else high, order=order)
    lowp = butter_filtfilt(x, fs, high, order=order)
    if ms.source == "imu":
        paths = (lowp, derivative(band, t), lowp, band, lowp)
    else:
        rate = derivative(band, t)
        paths = (rate, derivative(rate, t), derivative(band, t, order=2), band, lowp)
    return butter_filtfilt(np.column_stack(paths), fs, ms.parallel_cutoff, order=order)


def _noise_channels(ms: MotionSettings) -> tuple[np.ndarray, np.ndarray]:
    """Independent unit noises that white noise of unit variance per sample in each measured
    signal (gyro or Bryant angle x, y, z, then accelerometer or position x, y, z) puts into
    (ω, ω̇, s) at the rows (`noise_moment`): the signal of each channel (C,) and its
    coefficients (C, 4) on axis a of ω, of ω̇, of s, and of s x e_a, the rotation of s by a
    small angle about a (s' = Exp(-δη) s ≈ s + s x δη, as ω ≈ η̇ near hover).

    Each path's variance is Σ h² of its impulse response (`chain_responses`). The IMU's paths
    are independent: a rate and its derivative are uncorrelated at one instant under zero-phase
    filters, and the accelerometer is another sensor. A motion-capture angle reaches ω, ω̇ and
    the rotation of s at once, and an angle's low-pass and its second derivative are
    correlated (Σ h h'' = -Σ h'², -0.75 for a flat band): the paths' covariance C = Hᵀ H is
    split into three independent mixtures by its square root (C = L Lᵀ). The rotation matters:
    the force rows' known column, m s, and the ω̇ columns of ms_z share that noise."""
    h = chain_responses(ms)
    if ms.source == "imu":
        gain = np.sqrt(np.sum(h[:, :3] ** 2, axis=0))
        coef = np.zeros((9, 4))
        coef[:3, 0], coef[3:6, 1], coef[6:, 2] = gain[0], gain[1], gain[2]
        return _channel_signals(ms.source), coef
    paths = h[:, [0, 1, 4]]
    val, vec = np.linalg.eigh(paths.T @ paths)
    root = vec * np.sqrt(np.clip(val, 0.0, None))  # C = root rootᵀ; column j is mixture j's coefficients
    coef = np.zeros((12, 4))
    for a in range(3):
        coef[3 * a : 3 * a + 3, [0, 1, 3]] = root.T
    coef[9:, 2] = np.sqrt(np.sum(h[:, 2] ** 2))
    return _channel_signals(ms.source), coef


def _channel_signals(source: str) -> np.ndarray:
    """The measured signal of each noise channel of `_noise_channels` (its axis: signal % 3)."""
    return np.r_[0, 1, 2, 0, 1, 2, 3, 4, 5] if source == "imu" else np.r_[0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 4, 5]


def _noise_jacobian(mo: Motion, e: np.ndarray, lever_arm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """∂(D_k, D, D_m)/∂z at the samples of `mo` along the noise direction `e` (n, 9) of
    z = (ω, ω̇, s) (`observation`); ω and ω̇ noise also reaches s through the IMU's lever-arm
    removal (`lever_arm` r; zero for motion capture). The rows are at most quadratic in z, so
    the central difference with a unit step is exact."""
    om, od, s, u, t = mo.omega, mo.omega_dot, mo.s, mo.u, mo.t

    def lever(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.cross(b, lever_arm) + np.cross(a, np.cross(a, lever_arm))

    base = lever(om, od)
    plus, minus = (
        motion_matrices(
            Motion(
                t,
                om + h * e[:, :3],
                od + h * e[:, 3:6],
                s + h * e[:, 6:] + base - lever(om + h * e[:, :3], od + h * e[:, 3:6]),
                u,
            )
        )
        for h in (1.0, -1.0)
    )
    dk = np.zeros((len(t), 6, 2))  # D_k reads the rotor terms alone: no noise of z reaches it
    return dk, *((p - m) / 2.0 for p, m in zip(plus, minus, strict=True))


def _noise_at_rows(
    p: Flight, vehicle: Vehicle, ms: MotionSettings, idx: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, Motion]:
    """The coefficients (C, 4) of each noise channel (`_noise_channels`) at the rows of one
    airborne piece (`noise_moment`), scaled by the noise `floor` of its signal (`_piece_floor`),
    and the piece's motion at its rows `idx` (the full-rate motion is freed on return)."""
    signal, coef = _noise_channels(ms)
    mo = motion(p, vehicle, ms)
    return coef * np.sqrt(floor[signal])[:, None], Motion(
        mo.t[idx], mo.omega[idx], mo.omega_dot[idx], mo.s[idx], mo.u[idx]
    )


def _noise_direction(mo: Motion, axis: int, coef: np.ndarray) -> np.ndarray:
    """Direction (n, 9) in (ω, ω̇, s) at the samples of `mo` of a noise channel on `axis` with
    the coefficients `coef` (`_noise_channels`)."""
    unit = np.eye(3)[axis]
    e = np.zeros((len(mo.t), 9))
    e[:, :3], e[:, 3:6], e[:, 6:] = coef[0] * unit, coef[1] * unit, coef[2] * unit
    if coef[3]:
        e[:, 6:] += coef[3] * np.cross(mo.s, unit)
    return e


def pad_noise(a: np.ndarray, nw: int, ne: int) -> np.ndarray:
    """A noise moment `a` (..., nw + 1, nw + 1) of W_t with `ne` columns of no noise put between
    its `nw` unknowns' columns and the known one (columns built from the rotor terms alone: the
    rotors' gains, the ground effect)."""
    rows, cols = np.ix_([*range(nw), nw + ne], [*range(nw), nw + ne])
    out = np.zeros((*a.shape[:-2], nw + ne + 1, nw + ne + 1))
    out[..., rows, cols] = a
    return out


@dataclass(frozen=True)
class NoiseMoment:
    """The noise moment of `noise_moment`: `total` (B, n_t, n_t), the sum of `parts` (P, B, n_t,
    n_t), the share of each measured signal (gyro or Bryant angle x, y, z, then accelerometer or
    position x, y, z) and, with `disturbance_moment`, of the rotors' thrust noise in each
    configuration, and `doubt` (P,), each part's relative doubt (`floor_doubt`, the airborne
    pieces' mean weighted by their rows; `disturbance_moment`); `moves` (P, B, n_t, n_t), how far each
    part may be off (`floor_var`): its doubt times the part, or, where the level read may be
    near zero (the thrust noise), its absolute doubt in the part's shape; `disturbance`, per
    configuration the RMS in the band about x, y, z (3, 2), N m, of that noise's torque and of
    the ω̇ sensor path's noise beyond the floors."""

    total: np.ndarray
    parts: np.ndarray
    doubt: np.ndarray
    disturbance: dict[str, np.ndarray] = field(default_factory=dict)
    moves: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.moves is None:
            object.__setattr__(self, "moves", self.doubt[:, None, None, None] * self.parts)

    def padded(self, nw: int, ne: int) -> NoiseMoment:
        """The moment of W_t with `ne` columns of no noise (the rotors' gains, `gain_columns`)
        put between its `nw` unknowns' columns and the known one (`pad_noise`)."""

        def pad(a: np.ndarray) -> np.ndarray:
            return pad_noise(a, nw, ne)

        return NoiseMoment(pad(self.total), pad(self.parts), self.doubt, self.disturbance, pad(self.moves))

    def sensors(self) -> NoiseMoment:
        """The sensors' parts alone (the first six: without `disturbance_moment`'s)."""
        return NoiseMoment(self.parts[:6].sum(axis=0), self.parts[:6], self.doubt[:6], moves=self.moves[:6])


def noise_moment(problem: TlsProblem, rows: dict[str, Rows], resolved: dict[str, dict]) -> NoiseMoment:
    """Second moment E[dw dwᵀ] of the sensor noise in one row of each row block of W_t (B, n_t,
    n_t: the mean over the block's rows, in `assemble`'s columns), for the bias-compensated
    final fit (`TlsSettings.eiv`). Per airborne piece, the white-noise floor of each measured
    signal (`noise_floor`: gyro and accelerometer, or Bryant angles and position, the latter
    taken isotropic) times its paths' gains (`_noise_channels`) is the variance of the noise in
    ω, ω̇, s at the rows; the rows' Jacobians (`_noise_jacobian`, at the decimated samples: the
    parallel low-pass passes the band's slow motion unchanged) carry it into the columns. The
    channels are independent (different sensors and axes; a motion-capture angle's correlated
    paths split into independent mixtures, `_noise_channels`), so the moment is the sum of their
    outer products, taken one channel at a time (the Jacobians of one channel are held, not
    all), and kept per measured signal with
    the doubt of its floor (`NoiseMoment`). The problem's memo (`idim_rows`) keeps each piece's
    noise floor for the next call."""
    configs, vehicle, masses, settings, memo = (
        problem.configs,
        problem.vehicle,
        problem.masses,
        problem.model,
        problem.memo,
    )
    arm = vehicle.imu_offset if settings.source == "imu" else np.zeros(3)
    at_rows: dict[str, list[tuple[np.ndarray, np.ndarray, Motion]]] = {}
    doubt, n_rows = np.zeros(6), 0
    for c, flights in configs.items():
        pieces = [p for f in flights for p in airborne_pieces(f)]
        r, cfg = rows[c], resolved[c]
        at_rows[c] = []
        for k in np.unique(r.piece):
            p = pieces[k]
            own = settings.motion.at(p.rate)
            ms = replace(own, band=tuple(cfg["band"]), parallel_cutoff=cfg["parallel_cutoff"], trim=cfg["trim"])
            at = np.flatnonzero(r.piece == k)
            key = ("noise floor", tuple(map(id, flights)), int(k), ms.source, ms.band[1])
            floor = (memo or {}).get(key)
            floor = _piece_floor(p, ms) if floor is None else floor
            if memo is not None:
                memo[key] = floor
            doubt, n_rows = doubt + floor[1] * len(at), n_rows + len(at)
            at_rows[c].append((at, *_noise_at_rows(p, vehicle, ms, np.searchsorted(p.t, r.t[at]), floor[0])))
    nb = 6 * len(configs)
    out = None
    signal = _channel_signals(settings.source)
    for ch, sig in enumerate(signal):  # each channel from one signal, on its axis sig % 3
        part = {}
        for c, r in rows.items():
            jac = (np.zeros_like(r.dk), np.zeros_like(r.d), np.zeros_like(r.dm))
            for at, coef, mo in at_rows[c]:
                for i in range(0, len(at), BLOCK):  # a block of rows at a time: small temporaries
                    j = slice(i, i + BLOCK)
                    seg = Motion(mo.t[j], mo.omega[j], mo.omega_dot[j], mo.s[j], mo.u[j])
                    e = _noise_direction(seg, sig % 3, coef[ch])
                    for full, dj in zip(jac, _noise_jacobian(seg, e, arm), strict=True):
                        full[at[j]] = dj
            # the rotor-drag column carries no sensor noise of these channels here (its airspeed comes
            # from the pose, its ω x r_i term is small): zero
            drag = None if r.drag is None else np.zeros_like(r.drag)
            body = None if r.body is None else np.zeros_like(r.body)  # alike: the pose's airspeed
            part[c] = replace(
                r, dk=jac[0], d=jac[1], dm=jac[2], drag=drag, force_mean=None, drag_mean=None, yaw_mean=None, body=body
            )
        dw, blocks, _ = assemble(part, masses)
        out = np.zeros((6, nb, dw.shape[1], dw.shape[1])) if out is None else out
        for b, sel in enumerate(block_parts(dw, blocks, nb)):
            out[sig, b] += sel.T @ sel
    parts = out / np.maximum(np.bincount(blocks, minlength=nb), 1)[:, None, None]
    return NoiseMoment(parts.sum(axis=0), parts, doubt / max(n_rows, 1))


#: The disturbance's level is read where its shape at the rows is at least this share of its
#: peak (the band's flat part; `disturbance_moment`), from Welch segments of this many rows at most.
DIST_FLAT = 0.5


DIST_SEGMENT = 256


def _decimated_shape(h: np.ndarray, d: int, f: np.ndarray, fs: float) -> np.ndarray:
    """One-sided power spectral density at `f` of white noise through the impulse response `h`
    and kept every `d`-th sample (rate `fs`), per unit of its variance: the autocorrelation of
    `h` at the kept lags, Fourier-transformed (decimation folds the spectrum; the lags fold it
    exactly)."""
    r = np.correlate(h, h, "full")[len(h) - 1 :: d]
    m = np.arange(1, len(r))
    return 2.0 * (r[0] + 2.0 * (r[1:] @ np.cos(2.0 * np.pi * np.outer(m, f) / fs))) / (fs * r[0])


def _excess_levels(p: np.ndarray, base: np.ndarray, shapes: np.ndarray, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """Levels c ≥ 0 of components of known `shapes` (K, bins) over a known `base` in the Welch
    density `p` (ν degrees of freedom per bin), and their covariance: the fit of log p = log(base
    + shapesᵀ c) + log(χ²_ν / ν), each bin's log-ratio standardised by the log-χ²'s mean and
    standard deviation (ψ(ν/2) - log(ν/2), ψ'(ν/2)^½) under a Cauchy loss, so bins another
    component fills (model error at the manoeuvres' frequencies) do not count."""
    from scipy.optimize import least_squares
    from scipy.special import digamma, polygamma

    centre, spread, unit = digamma(nu / 2) - np.log(nu / 2), np.sqrt(polygamma(1, nu / 2)), float(np.mean(p))

    def res(c: np.ndarray) -> np.ndarray:
        return (np.log(p) - np.log(base + unit * (shapes.T @ c)) - centre) / spread

    fit = least_squares(res, np.full(len(shapes), 0.1), bounds=(0.0, np.inf), loss="cauchy", f_scale=2.0)
    return unit * fit.x, unit**2 * np.linalg.pinv(fit.jac.T @ fit.jac)


def _omega_dot_rows(rows: dict[str, Rows], vehicle: Vehicle, masses: dict[str, float], arm: np.ndarray) -> np.ndarray:
    """∂(row of W_t)/∂ω̇_a for each axis a and row block (3, B, n_t): constant, as the rows are
    linear in ω̇ (`observation`, the IMU's lever-arm removal included)."""
    one = Motion(np.zeros(1), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, vehicle.n_rotors)))
    out = []
    for a in range(3):
        dk, d, dm = _noise_jacobian(one, np.eye(9)[3 + a][None], arm)
        part = {
            c: Rows(
                np.zeros(1),
                dk,
                d,
                dm,
                np.zeros(1, dtype=np.int64),
                drag=None if r.drag is None else np.zeros((1, *r.drag.shape[1:])),
                body=None if r.body is None else np.zeros((1, 3)),
                drags=r.drags,
            )
            for c, r in rows.items()
        }
        out.append(assemble(part, masses)[0])
    return np.stack(out)


def _residual_spectrum(
    res: np.ndarray, piece: np.ndarray, pieces: list[Flight], settings: TlsSettings, cfg: dict, shapes: dict
) -> tuple[np.ndarray, ...] | None:
    """Welch density of one row block's residual `res` over each airborne piece (`piece`: its
    rows'), pooled over the bins where the disturbance's shape is flat (`DIST_FLAT`), with the
    shapes there (`_decimated_shape`: sensor noise through ω̇, through s, the disturbance) and
    the bins' degrees of freedom; None when no piece has enough rows."""
    from scipy.signal import welch

    out, segments = [], 0.0
    for k in np.unique(piece):
        seg, p = res[piece == k], pieces[k]
        own = settings.motion.at(p.rate)
        ms = replace(own, band=tuple(cfg["band"]), parallel_cutoff=cfg["parallel_cutoff"], trim=cfg["trim"])
        d = settings.decimation(own)
        nper = min(DIST_SEGMENT, len(seg))
        if nper < 32:
            continue
        f, psd = welch(seg, fs=p.rate / d, nperseg=nper, detrend="linear")
        key = (p.rate, d, ms.band, ms.parallel_cutoff, nper)
        if key not in shapes:
            h = chain_responses(ms)
            shapes[key] = np.stack([_decimated_shape(h[:, i], d, f, p.rate / d) for i in (1, 2, 3)])
        sh = shapes[key]
        flat = (f > 0) & (sh[2] >= DIST_FLAT * sh[2].max())
        out.append((psd[flat], sh[0][flat], sh[1][flat], sh[2][flat]))
        segments += len(seg) / (nper / 2) - 1  # Hann, half overlap
    if not out:
        return None
    return (*(np.concatenate(z) for z in zip(*out, strict=True)), 1.9 * segments / len(out))


#: The rotor thrust noise is read about the axes where a rotor's thrust makes at least this
#: share of the largest torque (roll and pitch; `disturbance_moment`).
DIST_AXES = 0.25


def _thrust_torques(vehicle: Vehicle, kappa: float) -> np.ndarray:
    """Σ_i b_i b_iᵀ (3, 3), b_i = r_i x a_i + κ dir_i a_i the torque about the origin of a unit
    change of rotor i's thrust (`observation`), κ = k_d / k_t."""
    b = np.cross(vehicle.positions, vehicle.axes) + kappa * vehicle.torque_dirs[:, None] * vehicle.axes
    return b.T @ b


def thrust_noise(
    flights: list[Flight],
    settings: TlsSettings,
    sol: Solution,
    nm: NoiseMoment,
    chi: np.ndarray,
    c: str,
    g: np.ndarray,
) -> tuple[float, float, np.ndarray] | None:
    """The rotors' thrust-noise variance σ_w² in the band of configuration `c` (`disturbance_moment`),
    its doubt (absolute, N²: the level may be near zero, where a relative doubt means nothing),
    and the RMS of the ω̇ sensor path's excess per axis (N m, 0 where not read), from the
    residuals W [chi] of `sol`'s moment rows; None where no axis was read.

    The doubt is the pooled level's standard error and, beyond it, what sampling does not
    explain (`_excess`) of two differences: between the axes' levels (one σ_w² makes them
    equal), and between the level read with the white torque's shape alone and with the gyro
    path's too (the smaller model is the larger one's special case, so their difference's
    sampling variance is the difference of their variances: Hausman 1978); only their excess
    over sampling counts, as their own sampling noise would double the doubt."""
    ci = list(sol.rows).index(c)
    axes = np.flatnonzero(np.diag(g) >= DIST_AXES * np.diag(g).max())
    gyro, acc = nm.parts[:3].sum(axis=0), nm.parts[3:6].sum(axis=0)
    pieces = [p for f in flights for p in airborne_pieces(f)]
    lv, v, shapes = np.full((3, 2), np.nan), np.zeros(3), {}
    shape = np.zeros((3, 2))  # per axis: the white-shape-alone reading's difference, its sampling variance
    for j in axes:
        b = 6 * ci + 3 + j
        if not sol.active[b]:
            continue
        spec = _residual_spectrum(
            sol.w[sol.blocks == b] @ chi, sol.rows[c].piece, pieces, settings, sol.resolved[c], shapes
        )
        if spec is None:
            continue
        psd, s_g, s_a, s_d, nu = spec
        base = (chi @ gyro[b] @ chi) * s_g + (chi @ acc[b] @ chi) * s_a
        lv[j], cov = _excess_levels(psd, base, np.stack([s_d, s_g]), nu)
        alone, cov1 = _excess_levels(psd, base, s_d[None], nu)
        v[j], shape[j] = cov[0, 0], (alone[0] - lv[j, 0], max(cov[0, 0] - cov1[0, 0], 0.0))
    read = np.isfinite(lv[:, 0])
    if not read.any():
        return None
    gr = np.diag(g)[read]
    per, var_per = lv[read, 0] / gr, v[read] / gr**2  # each axis's σ_w² and its sampling variance
    var = lv[read, 0].sum() / gr.sum()
    hi, lo = int(np.argmax(per)), int(np.argmin(per))
    axes_apart = _excess((per[hi] - per[lo]) / 2.0, (var_per[hi] + var_per[lo]) / 4.0)
    shape_apart = _excess(shape[read, 0].sum() / gr.sum(), shape[read, 1].sum() / gr.sum() ** 2)
    doubt = float(np.sqrt(v[read].sum() / gr.sum() ** 2 + axes_apart**2 + shape_apart**2))
    return var, doubt, np.sqrt(np.nan_to_num(lv[:, 1]))


def _excess(diff: float, sampling: float) -> float:
    """The part of a difference `diff` between two readings of one quantity that its sampling
    variance `sampling` does not explain: sqrt(max(diff² - sampling, 0))."""
    return float(np.sqrt(max(diff**2 - sampling, 0.0)))


def disturbance_moment(problem: TlsProblem, sol: Solution, nm: NoiseMoment) -> NoiseMoment:
    """`nm` with the moment of the angular acceleration the rotors' thrust noise gives the body.

    Thrust fluctuation (turbulence, blade passage; Kwon eq. 51's thrust noise) drives ω̇ with a
    torque d the rotor terms do not hold: ω̇ = ω̇_model + I⁻¹ d, so the ω̇ columns carry I⁻¹ d as
    errors in variables (d is the moment rows' equation error) that no floor shows (in the
    gyro, 1/f² under the sensor's own white noise); uncompensated, it scales k_t, I_xx, I_yy
    toward zero.

    Read from the moment rows' residuals of the selection's system (`sol`) fitted with the
    sensors' moment `nm` (equal rotors: the gains' part is low-frequency): per axis j, the
    Welch density of the M_j row's residual over the band's flat part is the sensor noise's
    (`nm`, spread as its paths through ω̇ and s spread it, `chain_responses`) plus a white
    torque's shape times c_j and the ω̇ sensor path's (gyro noise above a floor read in a stop
    band, `floor_doubt`) times another level (`_excess_levels`, robust to model error at the
    manoeuvres' frequencies). Rotor i's thrust noise, independent and alike in every rotor (variance σ_w² in the
    band), makes Cov(d) = σ_w² G (`_thrust_torques`): σ_w² = Σ c_j / Σ G_jj over the roll and
    pitch axes (`DIST_AXES`), which fixes the yaw's too, where model error fills the residual
    (yaw damping, the rotors' spread).
    With A[j, a] = ∂(M_j residual)/∂ω̇_a (= I), Cov(ω̇ error) = A⁻¹ σ_w² G A⁻ᵀ. Its doubt: the
    axes' disagreement, how far the white shape alone reads them, and the fits' standard error.

    IMU source only (`nm` as it is otherwise): the twice-differentiated pose's noise is the ω̇
    columns' error there, far above the thrust noise's, and the pose's residuals carry its
    timing error, broadband as a disturbance."""
    configs, vehicle, masses, settings = problem.configs, problem.vehicle, problem.masses, problem.model
    if settings.source != "imu":
        return nm
    try:  # the residuals of the selection's fit compensated for the sensors' noise alone (equal rotors)
        x = fixed_fit(sol.w, sol.blocks, sol.kept, sol.active, sol.scale, nm.total).x
    except ExcitationError:
        return nm
    chi = np.append(expanded(x, sol.kept, len(sol.names)), 1.0)
    if chi[0] == 0:
        return nm
    jac = _omega_dot_rows(sol.rows, vehicle, masses, vehicle.imu_offset)
    g = _thrust_torques(vehicle, chi[1] / chi[0])
    parts, moves, doubt, level = [], [], [], {}
    for ci, c in enumerate(configs):
        read = thrust_noise(configs[c], settings, sol, nm, chi, c, g)
        a = np.array([[jac[k, 6 * ci + 3 + j] @ chi for k in range(3)] for j in range(3)])
        if read is None or not abs(np.linalg.det(a)) > 1e-12 * np.abs(a).max() ** 3:
            continue  # nothing read, or no inertia to carry it into ω̇
        var, dj, lv = read
        a_inv = np.linalg.inv(a)
        unit = _config_moment(jac, a_inv @ g @ a_inv.T, ci, nm.total)  # per unit σ_w²
        parts.append(var * unit)
        moves.append(dj * unit)  # absolute: a level read near zero keeps a finite doubt
        doubt.append(dj / var if var > 0 else np.inf)
        level[c] = np.column_stack([np.sqrt(var * np.diag(g)), lv])
    if not parts:
        return nm
    extra = np.stack(parts)
    for _ in range(9):  # twice the moment must leave the compensated fit positive: later systems differ a little
        try:
            fixed_fit(sol.w, sol.blocks, sol.kept, sol.active, sol.scale, nm.total + 2.0 * extra.sum(axis=0))
            break
        except ExcitationError:
            extra /= 2.0
            level = {c: lv * [np.sqrt(0.5), 1.0] for c, lv in level.items()}
    else:
        return nm
    parts_all, moves_all = np.concatenate([nm.parts, extra]), np.concatenate([nm.moves, np.stack(moves)])
    return NoiseMoment(parts_all.sum(axis=0), parts_all, np.concatenate([nm.doubt, doubt]), level, moves_all)


def _config_moment(jac: np.ndarray, cov: np.ndarray, ci: int, like: np.ndarray) -> np.ndarray:
    """The moment in the row blocks of configuration `ci` (zero in the others; shaped as `like`)
    of an ω̇ error of covariance `cov` (3, 3), through ∂(row)/∂ω̇ `jac` (`_omega_dot_rows`)."""
    out = np.zeros_like(like)
    for b in range(6 * ci, 6 * ci + 6):
        out[b] = jac[:, b].T @ cov @ jac[:, b]
    return out
