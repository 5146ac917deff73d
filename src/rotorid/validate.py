"""Cross-validation on held-out flights (Six et al. Sec. IV-B4), for results of any method.

`identified.vehicle_from_result` turns a `Result` (delay, tls or online) plus a base `Vehicle` into the
identified model. `validate` replays a held-out flight's logged motor commands through the
rotor model (with the motor lag if identified) and compares

- the rotor-model wrench W_k chi_k with the rigid-body wrench from the measured motion
  (relative error norms ||rho|| / ||W_k chi_k|| per wrench component, Table III, Figs. 3-4);
- the specific force and angular acceleration the model predicts (Newton-Euler eq. 1-2
  solved for them, given the measured body rates) with the measured ones: RMSE and R².

Motion is measured and filtered exactly as the TLS method does (`rotorid.motion.motion`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.identified import parallel_axis, vehicle_from_result
from rotorid.methods.regression import r2
from rotorid.motion import (
    WRENCH,
    MotionSettings,
    airborne_pieces,
    body_velocity,
    drag_regressor,
    motion,
    rel_error_norms,
)
from rotorid.result import ACC_BIAS_KEY, Result
from rotorid.signal import butter_filtfilt
from rotorid.util import atomic_write_text
from rotorid.vehicle import Vehicle

MOTION = ("s_x", "s_y", "s_z", "omega_dot_x", "omega_dot_y", "omega_dot_z")


@dataclass
class Validation:
    """Outcome of `validate`: per-channel RMSE and R² of the predicted specific force and
    angular acceleration, relative error norms per wrench component (Table III, %), and the
    time series behind them (drawn by `rotorid.report.validate`)."""

    metrics: dict[str, dict[str, float]]
    rel_error_norm_pct: dict[str, float]
    modeled: dict[str, bool]
    t: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    rigid: np.ndarray
    rotor: np.ndarray
    vehicle: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from rotorid.result import _jsonable

        return _jsonable(
            {
                "rotorid_validation": 1,
                "metrics": self.metrics,
                "rel_error_norm_pct": self.rel_error_norm_pct,
                "modeled": self.modeled,
                "samples": len(self.t),
                "settings": self.settings,
                "vehicle": self.vehicle,
                "notes": self.notes,
            }
        )

    def save(self, path: str | Path) -> None:
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")


def _inertia_origin(v: Vehicle) -> tuple[np.ndarray, np.ndarray]:
    """(ms, I at the body origin) from the vehicle's CoM and inertia about the CoM."""
    c = v.com if v.com is not None else np.zeros(3)
    if v.inertia is None:
        raise RotoridError(f"vehicle '{v.name}' has no inertia; the result must identify it or --vehicle give it")
    return v.mass * c, parallel_axis(v.inertia, v.mass, c)


def wrenches(v: Vehicle, omega: np.ndarray, omega_dot: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Rigid-body wrench about the origin from measured motion (left side of eq. 1-2), (N, 6)."""
    ms, io = _inertia_origin(v)
    f = v.mass * s + np.cross(omega_dot, ms) + np.cross(omega, np.cross(omega, ms))
    tau = omega_dot @ io.T + np.cross(omega, omega @ io.T) + np.cross(ms, s)
    return np.concatenate([f, tau], axis=1)


def predict_motion(v: Vehicle, omega: np.ndarray, wrench: np.ndarray) -> np.ndarray:
    """Specific force at the origin and angular acceleration the model gives for the
    wrench and body rates: eq. (1)-(2) solved per sample for [s, omega_dot], (N, 6)."""
    ms, io = _inertia_origin(v)
    sk = np.array([[0, -ms[2], ms[1]], [ms[2], 0, -ms[0]], [-ms[1], ms[0], 0]])
    a = np.block([[v.mass * np.eye(3), -sk], [sk, io]])
    rhs = wrench - np.concatenate([np.cross(omega, np.cross(omega, ms)), np.cross(omega, omega @ io.T)], axis=1)
    return np.linalg.solve(a, rhs.T).T


def overlaps(result: Result, held_out: list[dict[str, Any]]) -> list[str]:
    """Held-out inputs (path, sha256, windows, as `rotorid.runs.provenance` gives them) whose
    file — recognised by its SHA-256, whatever its name — was used for the identification in an
    overlapping time window (no windows: the whole log): one plain sentence each."""
    whole = [(-np.inf, np.inf)]
    out = []
    for h in held_out:
        for i in result.inputs:
            if not h.get("sha256") or h["sha256"] != i.get("sha256"):
                continue
            shared = [
                (max(a, c), min(b, d))
                for a, b in (h.get("windows") or whole)
                for c, d in (i.get("windows") or whole)
                if min(b, d) > max(a, c)
            ]
            if shared:
                span = ", ".join("the whole log" if np.isinf(a) else f"{a:g}–{b:g} s" for a, b in shared)
                out.append(
                    f"{h['path']} overlaps the identification data ({i['path']}: {span}); a validation on the "
                    "training data is no cross-validation — validate on another flight or another window"
                )
    return out


def _rmse_r2(meas: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    return float(np.sqrt(np.mean((pred - meas) ** 2))), r2(meas, pred)


#: The settings key where a result records the accelerometer bias it estimated and removed,
#: {configuration: [b_x, b_y, b_z]} in m/s² (tls: the mean over each configuration's pieces
#: of its per-piece estimate). In the settings, not the diagnostics, so that params.json
#: validates exactly like the result in memory.
def acc_bias(result: Result, config: str | None = None) -> tuple[np.ndarray, str]:
    """The accelerometer bias (3,) in m/s² the identification removed from the specific force,
    and where it comes from (empty when none): an estimate recorded under `ACC_BIAS_KEY` (of
    configuration `config`, else the first) or delay's stated `acc_bias_z` (its value; the σ is
    no offset). The same sensor flies the held-out flight, so its specific force is corrected
    alike before the comparison."""
    rs = result.settings
    if result.method == "delay":
        bz = float((rs.get("acc_bias_z") or (0.0, 0.0))[0])
        return np.array([0.0, 0.0, bz]), "the stated acc_bias_z" if bz else ""
    per_config = {c: np.asarray(b, dtype=float) for c, b in (rs.get(ACC_BIAS_KEY) or {}).items()}
    if not per_config:
        return np.zeros(3), ""
    c = config if config in per_config else (rs.get("configs") or list(per_config))[0]
    return per_config[c], f"the {result.method} estimate{f' of configuration {c}' if len(per_config) > 1 else ''}"


def _removed_bias(result: Result, config: str | None, source: str, notes: list[str]) -> np.ndarray:
    """`acc_bias` for an IMU validation (motion capture measures no specific force with the
    accelerometer: zeros), with a note when there is one to remove."""
    bias, where = acc_bias(result, config) if source == "imu" else (np.zeros(3), "")
    if where:
        notes.append(
            f"accelerometer bias [{', '.join(f'{b:+.3f}' for b in bias)}] m/s² ({where}) removed from the "
            "measured specific force, as in the identification"
        )
    return bias


def _replay(
    flights: list[Flight],
    v: Vehicle,
    settings: MotionSettings,
    mixer: np.ndarray,
    modeled: dict[str, bool],
    bias: np.ndarray,
    k_rd: float = 0.0,
) -> tuple[np.ndarray, ...]:
    """Replay every airborne piece of `flights` through the identified vehicle: time, measured
    and predicted motion (s, ω̇), rigid-body and rotor wrenches, filtered and trimmed alike.
    A wrench component the rotor model does not produce is driven by the measured one. `bias`
    (3,) is the accelerometer bias the identification removed, removed from the specific force
    here too (as tls's `idim_rows` does); a rotor-drag coefficient `k_rd` adds the rotor drag
    -k_rd `drag_regressor` to the rotor wrench (the flights then carry attitude and position)."""
    unmodeled = ~np.array([modeled[c] for c in WRENCH])
    ts, meas, pred, rig, rot = [], [], [], [], []
    for piece in (p for f in flights for p in airborne_pieces(f)):
        cfg = settings.at(piece.rate)
        mo = motion(piece, v, cfg)
        mo = replace(mo, s=mo.s - bias)
        rotor = v.thrust(mo.u) @ mixer.T
        if k_rd:
            rotor = rotor - k_rd * drag_regressor(mo.u, body_velocity(piece, cfg), mo.omega, v)
        rigid = wrenches(v, mo.omega, mo.omega_dot, mo.s)
        series = np.concatenate([rotor, rigid, mo.s, mo.omega_dot, mo.omega], axis=1)
        series = butter_filtfilt(series, cfg.fs, cfg.parallel_cutoff, order=cfg.order)
        keep = (piece.t >= piece.t[0] + cfg.trim) & (piece.t <= piece.t[-1] - cfg.trim)
        sl = series[keep]
        rotor, rigid, s, od, om = sl[:, :6], sl[:, 6:12], sl[:, 12:15], sl[:, 15:18], sl[:, 18:21]
        drive = np.where(unmodeled, rigid, rotor)
        ts.append(piece.t[keep])
        meas.append(np.concatenate([s, od], axis=1))
        pred.append(predict_motion(v, om, drive))
        rig.append(rigid)
        rot.append(rotor)
    if not ts:
        raise RotoridError("the held-out flights have no airborne piece long enough to validate on")
    return tuple(np.concatenate(a) for a in (ts, meas, pred, rig, rot))


def _rotor_drag(result: Result, flights: list[Flight], notes: list[str]) -> float:
    """The identified rotor-drag coefficient k_rd to replay (0: none identified, or a held-out
    flight without the attitude and position or velocity it needs, with a note)."""
    k_rd = result.params["k_rd"].value if "k_rd" in result.params else 0.0
    if k_rd and not all(f.quat is not None and (f.pos is not None or f.vel is not None) for f in flights):
        notes.append("rotor drag (k_rd) not replayed: the held-out flights log no attitude or no position or velocity")
        return 0.0
    return k_rd


def validate(
    result: Result,
    flights: list[Flight],
    base: Vehicle | None = None,
    config: str | None = None,
    source: str | None = None,
) -> Validation:
    """Cross-validate `result` on held-out `flights` (Sec. IV-B4, Table III, Figs. 3-4).

    The rotor terms are the logged commands through the identified motor lag, or, for a TLS
    result, whatever channel its identification used (`MotionSettings.speed`).

    `base` defaults to `result.vehicle`; `config` picks `NAME@config` parameters of a
    combined TLS result; `source` ("imu"/"mocap") defaults to the result's, else IMU when
    the flight has it."""
    if base is None:
        if result.vehicle is None:
            raise RotoridError("the result carries no vehicle; give the base vehicle with --vehicle")
        base = Vehicle.from_dict(result.vehicle, source="params.json")
    if config is not None and not any(k.endswith(f"@{config}") for k in result.params):
        have = sorted({k.partition("@")[2] for k in result.params if "@" in k})
        raise RotoridError(f"the result has no configuration '{config}' (has {', '.join(have) or 'none'})")
    v = vehicle_from_result(result, base, config)
    if v.thrust_coeffs is None:
        raise RotoridError(f"the result ({result.method}) identifies no thrust curve and the vehicle gives none")
    if not flights:
        raise RotoridError("no held-out flight given to validate on")
    if source is None:
        source = result.settings.get("source") if result.method == "tls" else None
        source = source or ("imu" if flights[0].acc is not None and flights[0].gyro is not None else "mocap")
    rs = result.settings if result.method == "tls" else {}
    settings = MotionSettings(
        source=source,
        tm=v.tm_rise,
        band=tuple(rs["band"]) if rs.get("band") else None,
        speed=rs.get("speed", "cmd"),  # replay the logged commands unless TLS was fed rotor speeds
        order=int(rs.get("order", 4)),
        mocap_delay=float(rs.get("mocap_delay", 0.0)),
    )
    mixer = v.mixer(k_tau=v.k_tau or 0.0)
    produced = np.abs(mixer).max(axis=1) > 1e-9 * np.abs(mixer).max()
    modeled = {c: bool(produced[j]) for j, c in enumerate(WRENCH)}
    notes = []
    k_rd = _rotor_drag(result, flights, notes)
    if k_rd:  # the rotor drag is the in-plane force of every rotor
        modeled |= {"F_x": True, "F_y": True}
    lateral = [f"s_{c[-1]}" for c in ("F_x", "F_y") if not modeled[c]]
    if lateral:
        notes.append(
            f"the rotor model produces no force along body {' and '.join(c[-1] for c in lateral)} (every rotor "
            f"thrusts along body z; drag is not modelled): {', '.join(lateral)} are not modelled, so not scored"
        )
    if v.k_tau is None:
        modeled["M_z"] = False
        notes.append("no torque coefficient (k_tau/k_d) identified: the yaw moment is not predicted")
    if v.tm_rise is not None and v.tm_fall is not None and not np.isclose(v.tm_rise, v.tm_fall):
        notes.append("asymmetric motor lag replayed with the mean time constant")
        settings = replace(settings, tm=0.5 * (v.tm_rise + v.tm_fall))
    bias = _removed_bias(result, config, source, notes)
    t, measured, predicted, rigid, rotor = _replay(flights, v, settings, mixer, modeled, bias, k_rd)
    metrics = {}
    for j, name in enumerate(MOTION):
        ok = modeled[WRENCH[j]]
        rmse, fit = _rmse_r2(measured[:, j], predicted[:, j]) if ok else (float("nan"), float("nan"))
        metrics[name] = {"rmse": rmse, "r2": fit, "unit": "m/s^2" if name.startswith("s_") else "rad/s^2"}
    norms = rel_error_norms(rigid - rotor, rotor)
    norms = {k: (val if modeled[k] else float("nan")) for k, val in norms.items()}
    return Validation(
        metrics=metrics,
        rel_error_norm_pct=norms,
        modeled=modeled,
        t=t,
        measured=measured,
        predicted=predicted,
        rigid=rigid,
        rotor=rotor,
        vehicle=v.to_dict(),
        settings={**settings.at(flights[0].rate).to_dict(), "config": config, "method": result.method},
        notes=notes,
    )
