"""Which axis a flight sweeps, over which band, and the signals each axis' response is
estimated from.

An axis' input is its "command wrench": the motor commands through the rotor geometry,
`w = Σ_i a_i u_i` with `a_i` the rotor's force-z (thrust), moment-x (roll), moment-y (pitch)
or drag-torque direction (yaw) per unit thrust. With every rotor's thrust slope `k = df/du`
at hover, the body sees `k w` through the motor lag. Its output is the specific force along
z (thrust, m/s²) or the angular acceleration, the gyro's central difference (roll, pitch,
yaw; rad/s²).

A flight's sweep comes from ArduPilot's SIDS settings when the log has them (`meta["sid"]`:
the axis, band and the injected signal, rebuilt with `rotorid.signal.sid_chirp`), or from
Betaflight's chirp (`meta["sid"]` with firmware "betaflight": band, start and the injected
signal, rebuilt with `rotorid.signal.betaflight_chirp`; the axis is not logged, so it is the
roll, pitch or yaw command wrench whose peak frequency rises most steadily), else from
the command wrench's spectrogram: a sweep is a spectral peak whose frequency rises steadily
with time (Spearman rank correlation of log-frequency and time over the excited slices).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal as sps
from scipy import stats

from rotorid.flight import Flight
from rotorid.methods.freq import frf
from rotorid.signal import SID_AXES, betaflight_chirp, exp_sweep_phase, sid_chirp
from rotorid.vehicle import Vehicle

AXES = ("thrust", "roll", "pitch", "yaw")
#: A peak frequency rising with this rank correlation (or more) over time is a sweep.
MIN_RANK = 0.8
#: A spectrogram slice holds a tone where its peak is this many times its median power.
PROMINENCE = 30.0
#: Band fitted where a flight holds no sweep (Hz).
DEFAULT_BAND = (0.5, 15.0)
_SID_KEYS = ("magnitude", "f_start", "f_stop", "t_fade_in", "t_const", "t_record", "t_fade_out")


@dataclass(frozen=True)
class Sweep:
    """An axis of one flight: `swept` when a sweep was found (`source` "SIDS", "betaflight" or
    "spectrum"), its band (Hz), `rank` (the rising peak's rank correlation, 1 for SIDS) and `reference`
    (the injected signal on the flight's samples, or None)."""

    axis: str
    swept: bool
    band: tuple[float, float]
    rank: float
    source: str
    reference: np.ndarray | None = None

    def describe(self) -> str:
        """One line for `rotorid info` and the notes."""
        if not self.swept:
            return (
                f"{self.axis}: no sweep (fitted over {self.band[0]:g}-{self.band[1]:g} Hz of the pilot's input, "
                "H1 in closed loop: feedback noise biases it)"
            )
        how = {"SIDS": "ArduPilot SIDS", "betaflight": "Betaflight chirp; axis not logged, from the command spectrum"}
        how = how.get(self.source, "command spectrum") + ("" if self.source == "SIDS" else f", rank {self.rank:.2f}")
        return f"{self.axis} swept {self.band[0]:.2g}-{self.band[1]:.3g} Hz ({how})"


def axis_gains(vehicle: Vehicle) -> dict[str, np.ndarray]:
    """Per axis, each rotor's contribution to the command wrench (per unit thrust)."""
    b = vehicle.mixer(k_tau=0.0)
    return {"thrust": b[2], "roll": b[3], "pitch": b[4], "yaw": vehicle.torque_dirs * vehicle.axes[:, 2]}


def axis_input(flight: Flight, vehicle: Vehicle, axis: str) -> np.ndarray:
    """The command wrench of `axis` (commands through the geometry), one value per sample."""
    return flight.cmd @ axis_gains(vehicle)[axis]


def axis_output(flight: Flight, axis: str) -> np.ndarray:
    """Specific force along body z (thrust, m/s²) or the angular acceleration about the axis
    (rad/s²: the gyro's central difference; one-sided at the ends)."""
    return flight.acc[:, 2] if axis == "thrust" else np.gradient(flight.gyro[:, AXES.index(axis) - 1], flight.t)


def from_sid(flight: Flight) -> Sweep | None:
    """The sweep ArduPilot's System ID mode flew (`meta["sid"]`, from SIDS), or None."""
    sid = flight.meta.get("sid")
    if not sid or sid.get("firmware") == "betaflight" or int(sid.get("axis", 0)) not in SID_AXES:
        return None
    ref, _ = sid_chirp(flight.t - float(sid["t_start"]), *(float(sid[k]) for k in _SID_KEYS))
    band = (float(sid["f_start"]), float(sid["f_stop"]))
    return Sweep(SID_AXES[int(sid["axis"])], True, band, 1.0, "SIDS", ref)


def betaflight_band(flight: Flight) -> tuple[float, float] | None:
    """The band Betaflight's chirp swept in this flight (`meta["sid"]` from the blackbox
    reader: to the frequency reached when the mode was switched off), or None."""
    sid = flight.meta.get("sid")
    if not sid or sid.get("firmware") != "betaflight":
        return None
    f0, f1, span = (float(sid[k]) for k in ("f_start", "f_stop", "t_sweep"))
    _, reached = exp_sweep_phase(float(sid["clock"]) * (float(sid["t_stop"]) - float(sid["t_start"])), f0, f1, span)
    return f0, float(min(reached, f1))


def from_betaflight(flight: Flight, vehicle: Vehicle) -> Sweep | None:
    """Betaflight's chirp (`meta["sid"]`, firmware "betaflight") on the roll, pitch or yaw
    axis whose command wrench's peak frequency rises most steadily (the firmware does not log
    the axis), with the excitation rebuilt as the instrument; None without such a chirp."""
    band = betaflight_band(flight)
    if band is None:
        return None
    sid = flight.meta["sid"]
    tau = float(sid["clock"]) * (flight.t - float(sid["t_start"]))  # the firmware's time since the mode began
    ref, _ = betaflight_chirp(tau, band[0], float(sid["f_stop"]), float(sid["t_sweep"]))
    ref = np.where(flight.t <= float(sid["t_stop"]), ref, 0.0)
    ranks = {axis: rising_peak(axis_input(flight, vehicle, axis), flight.rate)[0] for axis in AXES[1:]}
    axis = max(ranks, key=ranks.__getitem__)
    return Sweep(axis, True, band, ranks[axis], "betaflight", ref)


def rising_peak(x: np.ndarray, fs: float) -> tuple[float, tuple[float, float]]:
    """(rank correlation of the spectrogram's peak log-frequency with time, its 5-95 %
    band in Hz) over the slices whose peak stands `PROMINENCE` times above their median."""
    nper = int(min(len(x) // 6, max(64, round(4.0 * fs))))  # 4 s slices (at least 64 samples)
    if nper < 8:  # too few samples for slices with a spectrum: nothing to rank
        return 0.0, DEFAULT_BAND
    f, _, s = sps.spectrogram(x - np.mean(x), fs, nperseg=nper, noverlap=nper // 2)
    keep = f >= fs / nper  # above the slices' constant
    if keep.sum() < 3 or s.shape[1] < 4:
        return 0.0, DEFAULT_BAND
    s = s[keep]
    active = s.max(axis=0) >= PROMINENCE * np.median(s, axis=0)  # a tone stands out of its slice
    peak = f[keep][np.argmax(s, axis=0)][active]
    if len(peak) < 4 or np.ptp(peak) == 0:
        return 0.0, DEFAULT_BAND
    rank = float(stats.spearmanr(np.flatnonzero(active), np.log(peak)).statistic)
    return rank, (float(np.percentile(peak, 5)), float(np.percentile(peak, 95)))


def find(flight: Flight, vehicle: Vehicle) -> list[Sweep]:
    """The axes of one flight to estimate: its SIDS sweep; else every axis whose command
    wrench sweeps (`MIN_RANK`); else every axis, unswept, over `DEFAULT_BAND`."""
    sid = from_sid(flight) or from_betaflight(flight, vehicle)
    if sid is not None:
        return [sid]
    fs = flight.rate
    found = []
    for axis in AXES:
        rank, band = rising_peak(axis_input(flight, vehicle, axis), fs)
        if rank >= MIN_RANK and band[1] > 2.0 * band[0]:
            found.append(Sweep(axis, True, band, rank, "spectrum"))
    return found or [Sweep(a, False, DEFAULT_BAND, 0.0, "none") for a in AXES]


def coherent_share(flight: Flight, vehicle: Vehicle, sw: Sweep, min_coherence: float = 0.6) -> float:
    """How well `sw` was flown: the share of its band's bins whose command-to-output coherence
    reaches `min_coherence` (spectral segments of three periods of the band's lowest frequency)."""
    x, y = axis_input(flight, vehicle, sw.axis), axis_output(flight, sw.axis)
    n = frf.segment_length(flight.rate, len(x), sw.band[0], 3.0)
    if len(x) < n + n // 2:
        return 0.0
    e = frf.estimate(x, y, flight.rate, n)
    inside = (e.f >= sw.band[0]) & (e.f <= sw.band[1])
    return float(np.mean(e.coherence[inside] >= min_coherence)) if inside.any() else 0.0


def describe(flight: Flight, vehicle: Vehicle | None) -> tuple[str, bool]:
    """`rotorid info`'s line on a flight's sweeps (axis, band and coherent share, or why none) and
    whether it found one (without a vehicle: ArduPilot's SIDS or Betaflight's chirp header)."""
    if vehicle is None:
        sid, bf = from_sid(flight), betaflight_band(flight)
        if bf is not None:
            return (
                f"Betaflight chirp {bf[0]:.2g}-{bf[1]:.3g} Hz; axis not logged (give --vehicle to find it in the commands' spectra)",
                True,
            )
        return (
            (sid.describe(), True) if sid else ("none in SIDS (give --vehicle to look in the commands' spectra)", False)
        )
    if flight.cmd is None or flight.gyro is None or flight.acc is None or flight.cmd.shape[1] != vehicle.n_rotors:
        return "not judged (needs acc, gyro and one cmd column per rotor of the vehicle)", False
    found = [sw for sw in find(flight, vehicle) if sw.swept]
    if not found:
        return "none (no axis' command wrench sweeps: the freq method fits the pilot's input, 0.5-15 Hz)", False
    return "; ".join(
        f"{sw.describe()}, {100 * coherent_share(flight, vehicle, sw):.0f} % of it coherent" for sw in found
    ), True
