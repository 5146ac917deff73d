"""What a TLS result reports besides its numbers: estimates by name, observability, diagnostics,
the settings used, and the notes in words."""

from __future__ import annotations

from typing import Any

import numpy as np

from rotorid.methods.regression import (
    Fit,
)
from rotorid.methods.tls.gains import RESTORE_Z, coefficient_names
from rotorid.methods.tls.noise import FLOOR_SHARE, NOISE_FROM
from rotorid.methods.tls.problem import Solution
from rotorid.methods.tls.rows import Rows
from rotorid.methods.tls.settings import BODY_DRAG, CHI, K_IN, K_RD, TlsSettings
from rotorid.methods.tls.voltage import VoltageChoice
from rotorid.methods.voltage import hover_drop
from rotorid.motion import (
    WRENCH,
    rel_error_norms,
)
from rotorid.result import Estimate, Observability


def floor_note(sol: Solution, kept: list[str], settings: TlsSettings, resolved: dict[str, dict]) -> list[str]:
    """In words, when the doubt about the noise floors (`floor_var`) makes up FLOOR_SHARE of a
    parameter's variance or more: how far the spectrum just below where the floors are read
    is from them (`floor_doubt`), per sensor, and which parameters' σ it widens most; alike
    for the doubt about the disturbance's level (`disturbance_moment`)."""
    if sol.floor is None or sol.doubt is None or not len(sol.floor):
        return []
    var = np.diag(sol.fit.cov)[: sol.floor.shape[1]]

    def who(term: np.ndarray) -> str:
        share = np.where(var > 0, term / np.where(var > 0, var, 1.0), 0.0)
        return ", ".join(f"{kept[i]} {share[i]:.0%}" for i in np.argsort(-share)[:3] if share[i] >= FLOOR_SHARE)

    notes = []
    sensors_who, dist_who = who(sol.floor[:6].sum(axis=0)), who(sol.floor[6:].sum(axis=0))
    if sensors_who:
        edge = NOISE_FROM * max(float(r["band"][1]) for r in resolved.values())
        sensors = ("gyro", "accelerometer") if settings.source == "imu" else ("attitude", "position")
        ratio = ", ".join(
            f"{name} {1 + sol.doubt[3 * k : 3 * k + 3].min():.3g}-{1 + sol.doubt[3 * k : 3 * k + 3].max():.3g}x"
            for k, name in enumerate(sensors)
        )
        notes.append(
            f"σ includes the doubt about the sensor noise floors the errors-in-variables compensation reads above "
            f"{edge:g} Hz: the spectrum just below is {ratio} of them (a sensor or logger low-pass, or vibration or "
            f"motion there; where vibration fills the spectrum above {edge:g} Hz, the floor is half its quietest level "
            f"above the band and this ratio is the band edge's), and with that level as the band's noise the estimates "
            f"move; share of the variance: "
            f"{sensors_who} (log the sensors before their low-pass, or give --band 0,F with {NOISE_FROM:g} F below it)"
        )
    if dist_who:
        one = len(sol.disturbance) == 1

        def rms(k: int) -> str:
            return "; ".join(
                ("" if one else f"{c}: ") + ", ".join(f"{v:.2g}" for v in lv[:, k]) for c, lv in sol.disturbance.items()
            )

        worst = float(sol.doubt[6:].max())
        within = f"{worst:.0%}" if worst < 10 else "more than 10x its value: it is not told from zero"
        notes.append(
            f"σ includes the doubt about the angular-acceleration errors the errors-in-variables compensation reads "
            f"from the moment rows' residuals beyond the sensor floors (RMS in the band about x, y, z, N m: a white "
            f"disturbance torque, thrust fluctuation, {rms(0)}; noise of the gyro's spectrum above its floor "
            f"{rms(1)}): the thrust noise's level is read to within {within} (its axes, the white shape alone and "
            f"the fit's error); share of the variance: {dist_who}"
        )
    return notes


def imu_note(
    est: dict[str, tuple[float, float]], part: dict[str, tuple[float, float]], settings: TlsSettings
) -> list[str]:
    """With the IMU as source, the assumption no flight tests, in words: its axes and scale are
    the body's within `TlsSettings.imu_scale` and `imu_misalign` (1σ), and the parameters whose
    variance that term (`part`: their σ from it alone, `solve.imu_part`) makes up most of. The
    rows are written in the IMU's axes (Six et al. eq. 4-7): a turn of them by θ about y moves
    I_xz by about (I_zz - I_xx) θ (I' = R I Rᵀ), a gyro or accelerometer scale error scales ω̇
    or s, so the inertias or k_t, and nothing in the flights tells them apart."""
    if settings.source != "imu":
        return []
    if not (settings.imu_scale > 0 or settings.imu_misalign > 0):
        return [
            "the IMU's axes and scale are taken as the body's exactly (--imu-scale 0 --imu-misalign 0: a calibrated "
            "IMU); σ leaves them out"
        ]
    share = ", ".join(f"{name} {f:.0%}" for f, name in sorted(_shares(est, part), reverse=True)[:4] if f >= FLOOR_SHARE)
    return [
        f"σ includes the IMU's scale and axes, assumed the body's within ±{100 * settings.imu_scale:g} % per axis and "
        f"±{settings.imu_misalign:g}° (1σ, --imu-scale, --imu-misalign): no flight tells them apart (the rows are "
        f"written in the IMU's axes; a 1° turn about y moves I_xz by (I_zz - I_xx) × 1°)"
        + (f"; share of the variance: {share}" if share else "")
        + " (calibrate the IMU and give --imu-scale 0 --imu-misalign 0 where that matters)"
    ]


def _shares(est: dict[str, tuple[float, float]], part: dict[str, tuple[float, float]]) -> list[tuple[float, str]]:
    """(share of the variance, name) of each reported parameter that an assumption's term
    (`part`: their σ from it alone) makes up."""
    return [(part[name][1] ** 2 / std**2, name) for name, (_, std) in est.items() if std > 0 and name in part]


def nuisance_notes(
    rows: dict[str, Rows], mean_bias: dict[str, np.ndarray], yaw: dict[str, np.ndarray], no_drag: bool
) -> list[str]:
    """Notes on the nuisance terms: the accelerometer bias (mean over pieces, `mean_bias`) and the
    constant yaw moment (`yaw_moments`) per configuration, and a rotor drag left out (`no_drag`)."""
    pieces = {c: np.unique(r.piece) for c, r in rows.items()}
    of = {c: f" of {c}" if len(rows) > 1 else "" for c in rows}
    notes = [
        f"accelerometer bias estimated per airborne piece{of[c]} "
        f"(mean over {len(pieces[c])}): [{', '.join(f'{v:+.3f}' for v in b)}] m/s²"
        for c, b in mean_bias.items()
    ]
    notes += [
        f"constant yaw moment estimated per airborne piece{of[c]} (mean over {len(pieces[c])}): "
        f"{np.mean(m[pieces[c]]):+.2e} N m"
        for c, m in yaw.items()
    ]
    if no_drag:
        notes.append("rotor drag not modelled: a flight logs no attitude or no position or velocity")
    return notes


def _advice(name: str, cfgs: list[str]) -> tuple[str, str]:
    """Plain-language reason and advice for a cancelled parameter."""
    base = name.partition("@")[0]
    if base in ("I_xy", "I_xz", "I_yz"):
        return (
            "products of inertia barely act near hover when the body axes are close to the principal axes (set to 0)",
            "nothing to do for near-hover control; aggressive coupled roll-pitch-yaw manoeuvres would be needed",
        )
    if base in ("k_d", "I_zz") and len(cfgs) == 1:
        return (
            "k_d enters only the yaw-moment row; with a symmetric mass distribution (ms_x≈ms_y≈0, I_xx≈I_yy) "
            "that row reduces to I_zz ω̇_z ≈ k_d Σ −sign(Ω_i) Ω_i² (eq. 23), which fixes only their ratio",
            "fly a second configuration with an off-centre payload (Six et al. configuration B) and identify "
            "both together: --config-b LOG --mass-b KG",
        )
    if base in ("k_d", "I_zz"):
        return ("the yaw moment is weakly excited", "fly more yaw manoeuvres (yaw rate steps) in every configuration")
    if base.startswith("ms_"):
        return (
            f"the centre-of-mass offset along {base[-1]} is too small to change the dynamics measurably (set to 0)",
            "move a payload off-centre along that axis if the offset matters",
        )
    if base == K_RD:
        return (
            "the rotor drag barely acts: the hubs' in-plane airspeeds stay small",
            "fly faster translations and yaw turns, or turn the rotor drag off (--no-rotor-drag)",
        )
    if base == K_IN:
        return (
            "the rotor inflow barely acts: the hubs' climb and descent speeds along the rotor axes stay small",
            "fly faster climbs and descents, or turn the rotor inflow off (--no-rotor-inflow)",
        )
    if base in BODY_DRAG:
        return (
            f"the body drag along {base[-1]} barely acts: the airspeed along that body axis stays small",
            "fly faster translations along that axis, or turn the body drag off (--body-drag off)",
        )
    if base in ("I_xx", "I_yy"):
        axis = "roll" if base == "I_xx" else "pitch"
        return (f"the {axis} dynamics are weakly excited", f"fly sharper {axis} manoeuvres")
    return ("poorly determined by the data", "fly a more exciting trajectory")


def _in_units(x: np.ndarray, cov: np.ndarray, names: list[str], settings: TlsSettings) -> tuple[np.ndarray, np.ndarray]:
    """The unknowns x and their covariance with the body drag's columns in their units
    (`TlsSettings.body_scale`) and the drag removed from the rows first (`TlsSettings.body_coef`)
    added: the whole body drag."""
    if BODY_DRAG[0] not in names:
        return x, cov
    at, scale = [names.index(n) for n in BODY_DRAG], np.ones(len(x))
    scale[at] = settings.body_scale or 1.0
    out = x * scale
    out[at] += settings.body_coef or 0.0
    return out, cov * np.outer(scale, scale)


def estimates(
    x: np.ndarray,
    cov: np.ndarray,
    names: list[str],
    kept_names: set[str],
    masses: dict[str, float],
    settings: TlsSettings | None = None,
) -> dict[str, tuple[float, float]]:
    """(value, σ) of every kept unknown, K_tau = k_d / k_t (first-order propagation) and the
    CoM ms / m of every configuration; with `settings`, the body drag's coefficients in their
    units (`_in_units`)."""
    if settings is not None:
        x, cov = _in_units(x, cov, names, settings)
    est: dict[str, tuple[float, float]] = {}

    def put(name: str, value: float, var: float) -> None:
        est[name] = (float(value), float(np.sqrt(max(var, 0.0))))

    for j, nm in enumerate(names[:2]):
        if nm in kept_names:
            put(nm, x[j], cov[j, j])
    for nm in (K_RD, K_IN, *BODY_DRAG):
        if nm in kept_names:
            j = names.index(nm)
            put(nm, x[j], cov[j, j])
    if {"k_t", "k_d"} <= kept_names:
        kt, kd = x[0], x[1]
        g = np.array([-kd / kt**2, 1.0 / kt])
        put("k_tau", kd / kt, g @ cov[:2, :2] @ g)
    cfgs = list(masses)
    single = len(cfgs) == 1
    for ci, c in enumerate(cfgs):
        sl = slice(2 + 9 * ci, 11 + 9 * ci)
        suf = "" if single else f"@{c}"
        for k, p in enumerate(CHI):
            if names[sl.start + k] in kept_names:
                put(p + suf, x[sl][k], cov[sl, sl][k, k])
        for k, axis in enumerate("xyz"):
            if f"ms_{axis}{suf}" in est:
                put(f"com_{axis}{suf}", x[sl][k] / masses[c], cov[sl, sl][k, k] / masses[c] ** 2)
    return est


def _within(rel_std_pct: float, z: float) -> str:
    """' (within z σ of zero)' when a cancelled parameter was not significant (`TlsSettings.cancel_z`),
    else '' (the yaw pair or a collapsed weighting, `essential`)."""
    return f" (within {z:g}σ of zero)" if rel_std_pct * z >= 100 else ""


def observability_of(
    names: list[str], fit: Fit, kept: list[int], history: list[dict[str, Any]], cfgs: list[str], st: TlsSettings
) -> dict[str, Observability]:
    """Per unknown: essential (with its final %σ) or cancelled, with why and what to fly."""
    pct_final = dict(zip([names[j] for j in kept], fit.rel_std_pct.tolist(), strict=True))
    dropped = {h["name"]: h for h in history}
    observability: dict[str, Observability] = {}
    for nm in names:
        if nm in pct_final:
            observability[nm] = Observability(True, essential=True, rel_std_pct=pct_final[nm])
            continue
        h = dropped[nm]
        reason, advice = _advice(nm, cfgs)
        why = (
            "its column is zero (not excited)"
            if h["why"] == "not excited"
            else f"cancelled with %σ = {h['rel_std_pct']:.3g}{_within(h['rel_std_pct'], st.cancel_z)} while "
            f"max/min %σ = {h['ratio']:.3g} ≥ r_σ = {st.r_sigma:g}"
        )
        observability[nm] = Observability(
            False,
            essential=False,
            rel_std_pct=h["rel_std_pct"],
            value_before_cancel=h["value"],
            reason=f"{reason}; {why}",
            advice=advice,
        )
    return observability


#: Why the motion-capture source without the errors-in-variables compensation (`TlsSettings.eiv`
#: False) does not report the yaw pair (Six et al. Table II, MOCAP column).
MOCAP_YAW = (
    "from motion capture the yaw angular acceleration is the yaw angle differentiated twice through the "
    "band-pass: its noise sits in the regressors (errors in variables) and, uncompensated (eiv off), biases "
    "k_d and I_zz together (about -17 % on the simulated Six flights) far beyond their statistical σ; Six "
    "et al. do not report them from MOCAP either (Table II)"
)


def mocap_yaw_pair(settings: TlsSettings) -> bool:
    """Whether the yaw pair (k_d, k_tau, I_zz) is reported: always from the IMU; from motion
    capture only with the errors-in-variables compensation (`TlsSettings.eiv`), which takes the
    twice-differentiated yaw angle's noise out of the fit, which otherwise biases the pair far
    beyond its σ."""
    return settings.source != "mocap" or settings.eiv


def withhold_yaw_pair(
    est: dict[str, tuple[float, float]], observability: dict[str, Observability], kept: list[str], cfgs: list[str]
) -> None:
    """Motion-capture source: k_d, k_tau and every I_zz stay in the fit (the yaw rows still
    carry the other parameters) but are not reported; observability says why (`MOCAP_YAW`)."""
    sufs = [""] if len(cfgs) == 1 else [f"@{c}" for c in cfgs]
    for nm in ("k_d", "k_tau", *(f"I_zz{s}" for s in sufs)):
        if nm not in est:
            continue
        value, _ = est.pop(nm)
        observability[nm] = Observability(
            False,
            essential=nm in kept,
            value_before_cancel=value,
            reason=MOCAP_YAW,
            advice="identify k_d, k_tau and I_zz from the IMU (--source imu), with configuration B for k_d",
        )


def disturbance_diagnostics(level: dict[str, np.ndarray]) -> dict[str, Any]:
    """RMS in the band per configuration and axis, N m (`disturbance_moment`): the rotors' thrust
    noise's torque, and the ω̇ sensor path's noise beyond the floors; nothing when not read."""
    if not level:
        return {}
    return {
        "disturbance_rms": {c: lv[:, 0] for c, lv in level.items()},
        "omega_dot_excess_rms": {c: lv[:, 1] for c, lv in level.items()},
    }


def diagnostics(
    w: np.ndarray, blocks: np.ndarray, x: np.ndarray, rows: dict[str, Rows], scale: np.ndarray
) -> dict[str, Any]:
    """Residual diagnostics per configuration and wrench component (unweighted): rotor and
    rigid-body wrench, relative error norms (Table III) and the block weights."""
    res = w @ np.append(x, 1.0)
    rotor = w[:, :2] @ x[:2]
    out: dict[str, Any] = {}
    for ci, c in enumerate(rows):
        n = len(rows[c].t)
        start = int(np.flatnonzero(blocks == 6 * ci)[0])
        sel = slice(start, start + 6 * n)
        rho = res[sel].reshape(6, n).T
        wk = -rotor[sel].reshape(6, n).T
        out[c] = {
            "t": rows[c].t,
            "rotor": wk,
            "rigid": wk + rho,
            "rel_error_norm_pct": rel_error_norms(rho, wk),
            "block_scale": scale[6 * ci : 6 * ci + 6],
        }
    return out


def recorded_settings(
    resolved: dict[str, dict],
    rows: dict[str, Rows],
    masses: dict[str, float],
    weights: dict[str, float],
    essential_params: list[str],
    active: np.ndarray,
) -> dict[str, Any]:
    """The settings a TLS result records: the resolved ones (per configuration where they
    differ), the configurations with their masses and weights, and what was fitted."""
    cfgs = list(resolved)
    first = next(iter(resolved.values()))
    return {
        **{k: v for k, v in first.items() if k not in ("fs",)},
        "fs": {c: r["fs"] for c, r in resolved.items()},
        "speed_channel": {c: r["speed_channel"] for c, r in resolved.items()},
        "configs": cfgs,
        "masses": {c: float(masses[c]) for c in cfgs},
        "weights": {c: float(weights.get(c, 1.0)) for c in cfgs},
        "essential_params": essential_params,
        "rows_fitted": {c: [WRENCH[j] for j in range(6) if active[6 * ci + j]] for ci, c in enumerate(cfgs)},
        "inertia_about": "origin",
        "rows": {c: 6 * len(rows[c].t) for c in cfgs},
    }


def assumed_of(
    est: dict[str, tuple[float, float]],
    gain: dict[str, tuple[float, float]],
    imu: dict[str, tuple[float, float]],
    settings: TlsSettings,
) -> dict[str, str]:
    """The parameters whose variance is mostly what tls assumes and no flight tests, the rotors'
    gain spread (`gain`) and the IMU's scale and axes (`imu`; their σ from each term alone, which
    are independent), with each of the two that makes up a tenth of it or more in words
    (`Estimate.assumption`)."""
    shares = {key: {n: f for f, n in _shares(est, part)} for key, part in (("gain", gain), ("imu", imu))}
    out = {}
    for name in est:
        g, i = shares["gain"].get(name, 0.0), shares["imu"].get(name, 0.0)
        if g + i <= 0.5:
            continue
        words = []
        if g >= 0.1:
            words.append(
                f"rotors assumed equal within ±{100 * settings.motor_spread:g} % (1σ, --motor-spread): a rotor's own "
                f"gain adds a wrench the flights cannot tell from this parameter (in hover, a CoM shift Σ ε_i r_i / "
                f"n); that assumption is {100 * g:.0f} % of its variance"
            )
        if i >= 0.1:
            words.append(
                f"IMU assumed calibrated within ±{100 * settings.imu_scale:g} % scale and ±{settings.imu_misalign:g}° "
                f"axes (1σ, --imu-scale, --imu-misalign), which no flight tests; that assumption is {100 * i:.0f} % of "
                "its variance"
            )
        out[name] = "; ".join(words)
    return out


def coefficients(sol: Solution, cov: np.ndarray) -> dict[str, tuple[float, float]]:
    """The rotors' coefficients of `sol` (`TlsSettings.rotor_gains`) by name (`coefficient_names`)
    with the σ of the covariance `cov` (of them, in order); empty without the gains."""
    if sol.gains is None:
        return {}
    cfgs, value = list(sol.rows), sol.gains.value
    names = coefficient_names(cfgs, len(value) // len(cfgs))
    return {n: (float(v), float(e)) for n, v, e in zip(names, value, np.sqrt(np.diag(cov)), strict=True)}


def gain_report(sol: Solution, est: dict[str, tuple[float, float]]) -> list[str]:
    """Adds the rotors' thrust coefficients of `sol` (`TlsSettings.rotor_gains`) to `est` as
    `k_t_mI` (`k_t_mI@C` per configuration when several), σ from every term k_t carries; returns
    the notes: the gains in % of the first configuration's mean rotor (k_t), or why they were not
    estimated, with the σ of that ratio, which a scale common to every rotor (k_t's) does not move."""
    gains, cfgs = sol.gains, list(sol.rows)
    if gains is None:
        return [sol.gains_unseparated] if sol.gains_unseparated else []
    n = len(gains.value) // len(cfgs)
    est |= coefficients(sol, gains.cov)
    kt = float(np.mean(gains.value[:n]))
    ratio = (np.eye(len(gains.value)) - np.outer(gains.value, np.arange(len(gains.value)) < n) / (n * kt)) / kt
    rel = np.sqrt(np.diag(ratio @ gains.cov @ ratio.T))  # of v_i / mean(v_1..n), first order
    notes = []
    for ci, c in enumerate(cfgs):
        at = slice(n * ci, n * (ci + 1))
        pct = ", ".join(
            f"{100 * (v / kt - 1):+.2f} ± {100 * r:.2f}" for v, r in zip(gains.value[at], rel[at], strict=True)
        )
        of = f" of {c}" if len(cfgs) > 1 else ""
        suf = f"@{c}" if len(cfgs) > 1 else ""
        notes.append(f"rotor gains estimated{of} (k_t_m1..{n}{suf}), % of k_t: [{pct}]")
    return notes


def restored_note(names: tuple[str, ...], settings: TlsSettings) -> list[str]:
    """In words, the cancelled unknowns `_restored` brought back."""
    if not names:
        return []
    return [
        f"{', '.join(names)} kept though within {settings.cancel_z:g}σ of zero: leaving them out moved another "
        f"parameter by more than {RESTORE_Z:g} of its σ in the bias-compensated fit (a bias the same in every flight)"
    ]


def pose_note(lag: float | None, settings: TlsSettings, imu_why: str = "") -> str:
    """How the pose's lag (`TlsSettings.mocap_delay` None) was found, in words; `imu_why`: why
    the IMU's own lag could not be estimated (`_imu_lag`), "" when it was."""
    use = "motion" if settings.source == "mocap" else "rotor-drag velocity"
    if lag is None:
        return (
            f"the pose could not be timed against the accelerometer (none logged, or every piece shorter than "
            f"the search): its lag is taken as 0 for the {use} (give --mocap-delay)"
        )
    own = f" with the IMU's own {1e3 * settings.imu_delay:.1f} ms"
    if imu_why:
        own = f" (the IMU's own lag behind them could not be estimated, taken as 0; give --imu-delay: {imu_why})"
    return (
        f"the pose lags the IMU by {1e3 * lag:.1f} ms (measured from the specific force), the rotor "
        f"signals by {1e3 * settings.mocap_delay:.1f} ms{own}: the {use} is aligned to them"
    )


def voltage_notes(
    est: dict[str, tuple[float, float]],
    observability: dict[str, Observability],
    volt: VoltageChoice | None,
    why: str,
    logged: bool,
) -> list[str]:
    """The battery voltage's notes; where its curve was kept, its exponent `thrust_v_exp` and the
    thrust lost at a command from the flights' highest voltage to the lowest, `thrust_v_drop`
    (k_t u² (V/V_ref)^2α: the same at every command), go into `est` and `observability`, the
    loss also into a note in words (as delay's)."""
    if volt is None:
        return [f"Battery voltage not in the rotor terms: {why}."] if why and logged else []
    if not volt.kept:
        return [volt.note]
    m = volt.model
    est["thrust_v_exp"] = (m.alpha, m.std)
    est["thrust_v_drop"] = drop, std = hover_drop(m, lambda u: u * u, 1.0)
    for k in ("thrust_v_exp", "thrust_v_drop"):
        observability[k] = Observability(True, rel_std_pct=Estimate(*est[k]).rel_std_pct)
    return [
        volt.note,
        f"k_t holds at V_ref = {m.v_ref:.3f} V (the flights' median); over the flights' {m.v_min:.3f}–{m.v_max:.3f} V "
        f"the thrust at any command falls by {drop:.2f} ± {std:.2g} % from the highest voltage to the lowest",
    ]
