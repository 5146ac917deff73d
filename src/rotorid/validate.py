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

import dataclasses
import json
from collections.abc import Iterator
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
RATES = ("omega_x", "omega_y", "omega_z")

#: The verdict's thresholds (README "Validation"): a scored channel passes with R² >= PASS_R2
#: and its wrench component's model error (Six et al. Table III) <= PASS_ERROR_PCT; a replay
#: (`--replay`) passes where each body rate's R² over the horizons is >= PASS_R2.
PASS_R2 = 0.5
PASS_ERROR_PCT = 50.0
#: A channel whose measured standard deviation is below this fraction of the largest of its
#: kind (specific force, angular acceleration, body rate) is weakly excited: the held-out
#: flight barely moves it, so its R² says little; it is reported but does not fail the verdict.
WEAK_EXCITATION = 0.1
#: Replay horizons (s) a user may choose: long enough for the model's dynamics to act, short
#: enough that an unmodelled drift (wind, a slowly wrong bias) does not dominate.
HORIZON_RANGE = (0.2, 1.0)


@dataclass(frozen=True)
class Verdict:
    """Pass or fail of a validation: `passed`, the verdict line, the channels that failed (with
    the reason) and those too weakly excited to judge."""

    passed: bool
    line: str
    failed: list[str]
    weak: list[str]


@dataclass
class Replay:
    """Outcome of `replay`: the identified model integrated over short horizons from the log's
    body rates with the log's motor commands. `metrics` per body rate (`RATES`) and predicted
    motion channel (`MOTION`): RMSE, R², and for the rates `hold_rmse`, the RMSE of holding the
    re-initialised rate (the model must beat it to add anything). `t`, `measured`,
    `predicted` (N, 9: ω, s, ω̇) per sample of every horizon; `segment` its horizon's index."""

    horizon: float
    metrics: dict[str, dict[str, float]]
    t: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    segment: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "horizons": int(self.segment.max() + 1), "metrics": self.metrics}


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
    verdict: Verdict | None = None
    replay: Replay | None = None

    def to_dict(self) -> dict[str, Any]:
        from rotorid.result import _jsonable

        return _jsonable(
            {
                "rotorid_validation": 1,
                "verdict": None if self.verdict is None else dataclasses.asdict(self.verdict),
                "thresholds": {"r2_min": PASS_R2, "model_error_pct_max": PASS_ERROR_PCT, "weak": WEAK_EXCITATION},
                "replay": None if self.replay is None else self.replay.to_dict(),
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


def _filtered_pieces(
    flights: list[Flight],
    v: Vehicle,
    settings: MotionSettings,
    mixer: np.ndarray,
    bias: np.ndarray,
    hub: tuple[float, float] = (0.0, 0.0),
) -> Iterator[tuple[float, np.ndarray, np.ndarray]]:
    """Every airborne piece of `flights` through the identified vehicle: (sample rate, time,
    columns [rotor wrench (6), rigid-body wrench (6), s (3), ω̇ (3), ω (3)]), filtered alike and
    trimmed at both ends. `bias` (3,) is the accelerometer bias the identification removed,
    removed from the specific force here too (as tls's `idim_rows` does); the hub drags' coefficients
    `hub` (k_rd, k_in) add the rotor drag -k_rd `drag_regressor` and the rotor inflow -k_in (its
    axial column) to the rotor wrench (the flights then carry attitude and position)."""
    for piece in (p for f in flights for p in airborne_pieces(f)):
        cfg = settings.at(piece.rate)
        mo = motion(piece, v, cfg)
        mo = replace(mo, s=mo.s - bias)
        rotor = v.thrust(mo.u) @ mixer.T
        for k, axial in zip(hub, (False, True), strict=True):
            if k:
                rotor = rotor - k * drag_regressor(mo.u, body_velocity(piece, cfg), mo.omega, v, axial)
        rigid = wrenches(v, mo.omega, mo.omega_dot, mo.s)
        series = np.concatenate([rotor, rigid, mo.s, mo.omega_dot, mo.omega], axis=1)
        series = butter_filtfilt(series, cfg.fs, cfg.parallel_cutoff, order=cfg.order)
        keep = (piece.t >= piece.t[0] + cfg.trim) & (piece.t <= piece.t[-1] - cfg.trim)
        if keep.sum() >= 2:
            yield cfg.fs, piece.t[keep], series[keep]


def _replay(
    flights: list[Flight],
    v: Vehicle,
    settings: MotionSettings,
    mixer: np.ndarray,
    modeled: dict[str, bool],
    bias: np.ndarray,
    hub: tuple[float, float] = (0.0, 0.0),
) -> tuple[np.ndarray, ...]:
    """Replay every airborne piece of `flights` through the identified vehicle
    (`_filtered_pieces`): time, measured and predicted motion (s, ω̇), rigid-body and rotor
    wrenches. A wrench component the rotor model does not produce is driven by the measured one."""
    unmodeled = ~np.array([modeled[c] for c in WRENCH])
    ts, meas, pred, rig, rot = [], [], [], [], []
    for _, t, sl in _filtered_pieces(flights, v, settings, mixer, bias, hub):
        rotor, rigid, s, od, om = sl[:, :6], sl[:, 6:12], sl[:, 12:15], sl[:, 15:18], sl[:, 18:21]
        drive = np.where(unmodeled, rigid, rotor)
        ts.append(t)
        meas.append(np.concatenate([s, od], axis=1))
        pred.append(predict_motion(v, om, drive))
        rig.append(rigid)
        rot.append(rotor)
    if not ts:
        raise RotoridError("the held-out flights have no airborne piece long enough to validate on")
    return tuple(np.concatenate(a) for a in (ts, meas, pred, rig, rot))


def _hub_drags(result: Result, flights: list[Flight], notes: list[str]) -> tuple[float, float]:
    """The identified hub drags' coefficients to replay, the rotor drag's k_rd and the rotor inflow's
    k_in (0: none identified, or a held-out flight without the attitude and position or velocity
    they need, with a note)."""
    hub = tuple(result.params[n].value if n in result.params else 0.0 for n in ("k_rd", "k_in"))
    if any(hub) and not all(f.quat is not None and (f.pos is not None or f.vel is not None) for f in flights):
        notes.append(
            "rotor drag and inflow (k_rd, k_in) not replayed: the held-out flights log no attitude or no position "
            "or velocity"
        )
        return 0.0, 0.0
    return hub


def _weak(measured: np.ndarray, names: tuple[str, ...], groups: tuple[slice, ...]) -> set[str]:
    """Channels moving less than `WEAK_EXCITATION` x the most-moved channel of their group."""
    sd = measured.std(axis=0)
    out = set()
    for g in groups:
        top = float(sd[g].max()) if sd[g].size else 0.0
        out |= {names[g.start + j] for j, x in enumerate(sd[g]) if not x >= WEAK_EXCITATION * top}
    return out


def judge(
    metrics: dict[str, dict[str, float]],
    norms: dict[str, float],
    measured: np.ndarray,
    replay: Replay | None = None,
) -> Verdict:
    """Pass or fail: every scored channel that the held-out flights excite (`WEAK_EXCITATION`)
    has R² >= `PASS_R2` and its wrench component a model error <= `PASS_ERROR_PCT` (Six et al.
    Table III); with a replay, every excited body rate also has R² >= `PASS_R2`."""
    weak = _weak(measured, MOTION, (slice(0, 3), slice(3, 6)))
    failed, weak_scored = [], []
    for (name, m), w in zip(metrics.items(), WRENCH, strict=True):
        if not np.isfinite(m["r2"]):
            continue  # not modelled
        if name in weak:
            weak_scored.append(name)
            continue
        if not m["r2"] >= PASS_R2:
            failed.append(f"{name} R² {m['r2']:.2f} < {PASS_R2:g}")
        if not norms.get(w, 0.0) <= PASS_ERROR_PCT:
            failed.append(f"{w} model error {norms[w]:.0f} % > {PASS_ERROR_PCT:g} %")
    if replay is not None:
        rweak = _weak(replay.measured[:, :3], RATES, (slice(0, 3),))
        for name in RATES:
            r = replay.metrics[name]["r2"]
            if name in rweak:
                weak_scored.append(f"{name} (replay)")
            elif not r >= PASS_R2:
                failed.append(f"replayed {name} R² {r:.2f} < {PASS_R2:g}")
    rule = f"R² >= {PASS_R2:g} and model error <= {PASS_ERROR_PCT:g} % on every excited channel"
    line = f"FAIL ({rule}): {'; '.join(failed)}" if failed else f"PASS ({rule})"
    if weak_scored:
        line += f"; too weakly excited to judge: {', '.join(weak_scored)}"
    return Verdict(passed=not failed, line=line, failed=failed, weak=weak_scored)


def replay(
    flights: list[Flight],
    v: Vehicle,
    settings: MotionSettings,
    mixer: np.ndarray,
    modeled: dict[str, bool],
    bias: np.ndarray,
    horizon: float,
    hub: tuple[float, float] = (0.0, 0.0),
) -> Replay:
    """Drive the identified model with the log's motor commands over consecutive horizons of
    `horizon` s, each re-initialised with the log's (filtered) body rate: the body rate is
    integrated (explicit Euler at the log's rate) from eq. (1)-(2) solved for the angular
    acceleration (`predict_motion`) given the rotor wrench; predicted specific force and
    angular acceleration come with it. A wrench component the rotor model does not produce is
    driven by the measured one (as in `validate`). The integration steps through a horizon;
    every horizon of a piece advances at once (vectorized over horizons)."""
    lo, hi = HORIZON_RANGE
    if not lo <= horizon <= hi:
        raise RotoridError(f"--horizon {horizon:g} s: choose a replay horizon between {lo:g} and {hi:g} s")
    unmodeled = ~np.array([modeled[c] for c in WRENCH])
    ts, meas, pred, seg = [], [], [], []
    n_seg = 0
    for fs, t, sl in _filtered_pieces(flights, v, settings, mixer, bias, hub):
        rotor, rigid, s, od, om = sl[:, :6], sl[:, 6:12], sl[:, 12:15], sl[:, 15:18], sl[:, 18:21]
        n = round(horizon * fs)
        k = len(t) // n
        if k == 0:
            continue
        idx = np.arange(k * n).reshape(k, n)  # (horizons, steps)
        drive = np.where(unmodeled, rigid, rotor)
        dt = np.diff(t[idx], axis=1)
        w = np.empty((k, n, 3))
        acc = np.empty((k, n, 6))
        w[:, 0] = om[idx[:, 0]]
        for i in range(n):  # steps of one horizon (an ODE), every horizon at once
            acc[:, i] = predict_motion(v, w[:, i], drive[idx[:, i]])
            if i + 1 < n:
                w[:, i + 1] = w[:, i] + dt[:, i, None] * acc[:, i, 3:]
        ts.append(t[idx].ravel())
        meas.append(np.concatenate([om, s, od], axis=1)[idx].reshape(k * n, 9))
        pred.append(np.concatenate([w, acc], axis=2).reshape(k * n, 9))
        seg.append(n_seg + np.repeat(np.arange(k), n))
        n_seg += k
    if not ts:
        raise RotoridError(
            f"the held-out flights have no airborne piece as long as one {horizon:g} s replay horizon; "
            "choose a shorter --horizon or longer flights"
        )
    t_all, m_all, p_all, seg_all = (np.concatenate(a) for a in (ts, meas, pred, seg))
    hold = m_all[np.searchsorted(seg_all, seg_all, side="left"), :3]  # each horizon's first rate
    metrics: dict[str, dict[str, float]] = {}
    for j, name in enumerate(RATES):
        rmse, fit = _rmse_r2(m_all[:, j], p_all[:, j])
        hold_rmse = float(np.sqrt(np.mean((hold[:, j] - m_all[:, j]) ** 2)))
        metrics[name] = {"rmse": rmse, "r2": fit, "hold_rmse": hold_rmse, "unit": "rad/s"}
    for j, name in enumerate(MOTION):
        ok = modeled[WRENCH[j]]
        rmse, fit = _rmse_r2(m_all[:, 3 + j], p_all[:, 3 + j]) if ok else (float("nan"), float("nan"))
        metrics[name] = {"rmse": rmse, "r2": fit, "unit": "m/s^2" if name.startswith("s_") else "rad/s^2"}
    return Replay(horizon=float(horizon), metrics=metrics, t=t_all, measured=m_all, predicted=p_all, segment=seg_all)


def _motion_settings(result: Result, v: Vehicle, flights: list[Flight], source: str | None) -> MotionSettings:
    """How the held-out motion is measured: as the TLS identification did (its band, speed
    source, filter order, mocap delay), else from the commands through the identified lag;
    `source` defaults to the result's, else IMU when the flight has it."""
    if source is None:
        source = result.settings.get("source") if result.method == "tls" else None
        source = source or ("imu" if flights[0].acc is not None and flights[0].gyro is not None else "mocap")
    rs = result.settings if result.method == "tls" else {}
    return MotionSettings(
        source=source,
        tm=v.tm_rise,
        band=tuple(rs["band"]) if rs.get("band") else None,
        speed=rs.get("speed", "cmd"),  # replay the logged commands unless TLS was fed rotor speeds
        order=int(rs.get("order", 4)),
        mocap_delay=float(rs.get("mocap_delay", 0.0)),
        voltage_model=_voltage_model(result, flights),
    )


def _voltage_model(result: Result, flights: list[Flight]) -> tuple[float, float] | None:
    """(α, V_ref) of the result's voltage-aware thrust curve (`rotorid.methods.voltage`), None
    without one: the commands are replayed times (V / V_ref)^α at each held-out flight's logged
    voltage, where the curve holds (at V_ref alone it would hold only at the median voltage)."""
    vm = result.settings.get("voltage_model")
    if not vm:
        return None
    missing = [f.source for f in flights if f.vbat is None]
    if missing:
        raise RotoridError(
            f"{missing[0]}: no battery voltage (vbat) logged, but the result's thrust curve takes it "
            f"(α {vm['alpha']:.3g} at V_ref {vm['v_ref']:.3f} V); validate on flights that log it, "
            "or identify with --voltage off"
        )
    return float(vm["alpha"]), float(vm["v_ref"])


def validate(
    result: Result,
    flights: list[Flight],
    base: Vehicle | None = None,
    config: str | None = None,
    source: str | None = None,
    horizon: float | None = None,
) -> Validation:
    """Cross-validate `result` on held-out `flights` (Sec. IV-B4, Table III, Figs. 3-4).

    The rotor terms are the logged commands through the identified motor lag (times the logged
    battery voltage's factor where the thrust curve takes it, `_voltage_model`), or, for a TLS
    result, whatever channel its identification used (`MotionSettings.speed`).

    `base` defaults to `result.vehicle`; `config` picks `NAME@config` parameters of a
    combined TLS result; `source` ("imu"/"mocap") defaults to the result's, else IMU when
    the flight has it. With `horizon` (s) the model is also replayed over short horizons
    (`replay`). The verdict (`judge`) says pass or fail."""
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
    settings = _motion_settings(result, v, flights, source)
    source = settings.source
    mixer = v.mixer(k_tau=v.k_tau or 0.0)
    produced = np.abs(mixer).max(axis=1) > 1e-9 * np.abs(mixer).max()
    modeled = {c: bool(produced[j]) for j, c in enumerate(WRENCH)}
    notes = []
    hub = _hub_drags(result, flights, notes)
    if hub[0]:  # the rotor drag is the in-plane force of every rotor
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
    t, measured, predicted, rigid, rotor = _replay(flights, v, settings, mixer, modeled, bias, hub)
    metrics = {}
    for j, name in enumerate(MOTION):
        ok = modeled[WRENCH[j]]
        rmse, fit = _rmse_r2(measured[:, j], predicted[:, j]) if ok else (float("nan"), float("nan"))
        metrics[name] = {"rmse": rmse, "r2": fit, "unit": "m/s^2" if name.startswith("s_") else "rad/s^2"}
    norms = rel_error_norms(rigid - rotor, rotor)
    norms = {k: (val if modeled[k] else float("nan")) for k, val in norms.items()}
    rep = replay(flights, v, settings, mixer, modeled, bias, horizon, hub) if horizon is not None else None
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
        verdict=judge(metrics, norms, measured, rep),
        replay=rep,
    )
