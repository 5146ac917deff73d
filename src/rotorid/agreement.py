"""Cross-method agreement: several runs (delay, tls, online, freq) of one vehicle set side by side.

Each quantity two or more runs estimate (`COMPARED`) gets every run's value and σ, and each pair
the combined-σ z = (x_a - x_b) / √(σ_a² + σ_b²). Within |z| ≤ `Z_AGREE` the runs agree; beyond it
they disagree, and `trust` says which to believe and why: the run whose estimate the flights
measure (its verdict, `rotorid.result.verdict`: not assumed, model-dependent, without σ or not
identified) and whose method's assumptions the flights meet (`method_doubts`: what each method's
own result says it could not check), or neither when both stand equally.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rotorid.errors import RotoridError
from rotorid.result import Estimate, Result, verdict

#: |z| up to which two estimates of the same quantity agree (combined σ).
Z_AGREE = 3.0

#: The quantities compared: one physical meaning whichever method reports them.
COMPARED = (
    "tm",
    "tm_rise",
    "tm_fall",
    "mass",
    "I_xx",
    "I_yy",
    "I_zz",
    "I_xy",
    "I_xz",
    "I_yz",
    "com_x",
    "com_y",
    "com_z",
    "k_t",
    "k_tau",
    "hover_cmd",
)

#: Verdict words by how far a run's own result lets its estimate be trusted (0 best).
_TIER = {"well": 0, "loose": 0, "poor": 1, "model-dependent": 2, "assumed": 2, "no σ": 2}


@dataclass(frozen=True)
class Entry:
    """One run's estimate of a quantity: the run's label, method, value, σ, verdict word, and the
    doubts (its verdict's reason where not well determined, its method's `method_doubts`)."""

    run: str
    method: str
    value: float
    std: float
    verdict: str
    doubts: tuple[str, ...] = ()

    @property
    def tier(self) -> int:
        """0 measured, 1 poorly, 2 assumed / model-dependent / without σ, 3 not identified."""
        return _TIER.get(self.verdict, 3)


@dataclass(frozen=True)
class Pair:
    """Two entries' combined-σ z (NaN without a usable σ), whether they agree, and for a
    disagreement the run to trust (None: neither) with the reason."""

    a: str
    b: str
    z: float
    agree: bool
    trust: str | None = None
    why: str = ""


@dataclass(frozen=True)
class Row:
    """One quantity: its unit, every run's `Entry`, each pair's `Pair` and caveats on whether the
    runs' definitions match."""

    name: str
    unit: str
    entries: tuple[Entry, ...]
    pairs: tuple[Pair, ...]
    caveats: tuple[str, ...] = field(default=())


def method_doubts(result: Result) -> list[str]:
    """What a run's result says its method could not check on these flights (the method's
    assumptions the flights may not meet), from its settings and notes:

    - freq without a chirp sweep fits the closed-loop response to the pilot's input, which
      feedback noise biases; a reduced χ² above 3 says its model misfits the spectra;
    - online takes the rotor thrust (the vehicle's thrust curve, and with commands its motor lag)
      as known: its σ excludes their doubt;
    - tls on commands takes the normalized command as a rotor speed, without the motor lag;
    - delay's lag model leaves structured residuals (a dead time or rise/fall constants fit
      better), the model choice's spread in σ."""
    s, notes = result.settings, result.notes
    out: list[str] = []
    if result.method == "freq":
        if any("no sweep" in n for n in notes):
            out.append("no chirp sweep: the closed-loop response to the pilot's input, which feedback noise biases")
        chi2 = s.get("chi2_red")
        if isinstance(chi2, int | float) and chi2 > 3:
            out.append(f"its model misfits the spectra (reduced χ² {chi2:.3g}, σ widened)")
    elif result.method == "online":
        src = "the commands through the vehicle's thrust curve and motor lag" if s.get("motor_lag") else "the rotors"
        if s.get("motor_source") == "cmd":
            out.append(f"rotor thrust from {src}, taken as known: σ excludes their doubt")
        else:
            out.append("rotor thrust from the vehicle's thrust coefficients, taken as known: σ excludes their doubt")
    elif result.method == "tls":
        if "cmd" in (s.get("speed_channel") or {}).values():
            out.append("thrust as k_t u² of the command, not of a measured rotor speed (no motor lag)")
    elif result.method == "delay" and any(n.startswith("Residuals are structured") for n in notes):
        out.append("the lag model leaves structured residuals (dead time or rise/fall asymmetry; in σ)")
    return out


def _quantities(result: Result) -> dict[str, tuple[Estimate, str]]:
    """The result's compared quantities: name -> (estimate, caveat). delay's `thrust_c2` is
    `k_t` where the thrust curve is u² alone; tls's inertia about the body origin is moved to
    the CoM (parallel axes, with its own CoM and the vehicle's mass)."""
    p = dict(result.params)
    if "thrust_c2" in p and not any(k.startswith("thrust_c") and k != "thrust_c2" for k in p):
        p["k_t"] = p["thrust_c2"]
    out = {k: (p[k], "") for k in COMPARED if k in p}
    mass = (result.vehicle or {}).get("mass")
    com = [p[f"com_{a}"].value if f"com_{a}" in p else 0.0 for a in "xyz"]
    if result.settings.get("inertia_about") == "origin" and isinstance(mass, int | float) and any(com):
        for i, axis in enumerate("xyz"):
            name = f"I_{axis}{axis}"
            if name in out:
                shift = float(mass) * sum(c * c for j, c in enumerate(com) if j != i)
                e = out[name][0]
                out[name] = (
                    Estimate(e.value - shift, e.std, e.unit, e.assumption),
                    f"{result.method}'s {name} moved from the body origin to its CoM (−{shift:.3g})",
                )
    return out


def _z(a: Entry, b: Entry) -> float:
    var = a.std * a.std + b.std * b.std
    ok = all(math.isfinite(x) for x in (a.value, b.value, var)) and var > 0
    return (a.value - b.value) / math.sqrt(var) if ok else math.nan


def trust(a: Entry, b: Entry) -> tuple[str | None, str]:
    """Which of two disagreeing entries to trust (its run label; None: neither) and why: the
    better verdict tier, then fewer method doubts."""
    for key, what in ((lambda e: e.tier, "verdict"), (lambda e: len(e.doubts), "doubts")):
        if key(a) != key(b):
            good, bad = (a, b) if key(a) < key(b) else (b, a)
            if what == "verdict":
                why = f"{good.run} measures it ({good.verdict}); {bad.run} is {bad.verdict}"
            else:
                why = (
                    f"{bad.run} rests on more that these flights do not check ({'; '.join(bad.doubts)}) than "
                    f"{good.run} ({'; '.join(good.doubts) or 'nothing stated'})"
                )
            return good.run, why
    doubts = "; ".join(f"{e.run}: {'; '.join(e.doubts) or 'none stated'}" for e in (a, b))
    return None, f"neither stands better (same verdict and as many doubts: {doubts}); σ understates their error"


def _definitions(name: str, results: list[Result]) -> list[str]:
    """Where the runs' definitions of `name` differ: freq's T_m leaves out the dead time it fits,
    other methods' T_m is the command-to-acceleration lag with any dead time in it."""
    if name == "tm" and any(r.method == "freq" and r.settings.get("dead_time_fitted") for r in results):
        return ["freq's T_m leaves out the dead time it fits (its notes give it); the others' T_m includes any"]
    return []


def context(results: Mapping[str, Result]) -> list[str]:
    """What makes the runs less comparable: different vehicles, or no log in common."""
    out = []
    names = {str((r.vehicle or {}).get("name")) for r in results.values() if r.vehicle}
    if len(names) > 1:
        out.append(f"the runs identify different vehicles ({', '.join(sorted(names))}): a disagreement may be real")
    logs = [{i.get("sha256") for i in r.inputs if i.get("sha256")} for r in results.values()]
    if all(logs) and not set.intersection(*logs):
        out.append("the runs share no log: a disagreement may be the vehicle changing between flights")
    return out


def compare_runs(results: Mapping[str, Result]) -> list[Row]:
    """Rows of every `COMPARED` quantity that two or more of `results` (run label -> Result)
    estimate, in `COMPARED` order, with each pair's z and, beyond `Z_AGREE`, the run to trust."""
    have = {run: _quantities(r) for run, r in results.items()}
    rows = []
    for name in COMPARED:
        runs = [run for run in results if name in have[run]]
        if len(runs) < 2:
            continue
        entries, caveats = [], []
        for run in runs:
            r = results[run]
            e, caveat = have[run][name]
            v = verdict(e, r.observability.get(name))
            doubts = ([v.text] if v.cls != "ok" else []) + method_doubts(r)
            entries.append(Entry(run, r.method, e.value, e.std, v.word, tuple(doubts)))
            caveats += [caveat] if caveat else []
        unit = have[runs[0]][name][0].unit
        caveats += _definitions(name, [results[run] for run in runs])
        rows.append(Row(name, unit, tuple(entries), tuple(_pairs(entries)), tuple(caveats)))
    return rows


def _pairs(entries: list[Entry]) -> list[Pair]:
    """Each pair of entries: z, agreement, and for a disagreement `trust`."""
    out = []
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            z = _z(a, b)
            if math.isfinite(z) and abs(z) <= Z_AGREE:
                out.append(Pair(a.run, b.run, z, True))
                continue
            who, why = trust(a, b)
            if not math.isfinite(z):
                who, why = None, f"no usable σ on one side, so no z: {why}"
            out.append(Pair(a.run, b.run, z, False, who, why))
    return out


def as_json(rows: list[Row], notes: list[str]) -> str:
    """The comparison as JSON text (`rotorid compare --out`): z of a pair without σ is null."""
    from rotorid.result import _jsonable

    doc = {"rotorid_agreement": 1, "z_agree": Z_AGREE, "notes": notes, "rows": [asdict(r) for r in rows]}
    return json.dumps(_jsonable(doc), indent=2, allow_nan=False) + "\n"


def load_runs(paths: list[Path]) -> dict[str, Result]:
    """The runs to compare, by label (the run folder's name, or its path where names repeat):
    each a run folder or its params.json. Fewer than two is an error."""
    files = [Path(p) / "params.json" if Path(p).is_dir() else Path(p) for p in paths]
    if len(files) < 2:
        raise RotoridError("rotorid compare needs two or more runs (folders written by rotorid identify)")
    names = [f.parent.name or str(f.parent) for f in files]
    labels = [n if names.count(n) == 1 else str(f.parent) for n, f in zip(names, files, strict=True)]
    if len(set(labels)) < len(labels):
        raise RotoridError(f"the same run is given twice ({', '.join(labels)}); give each run once")
    return {label: Result.load(f) for label, f in zip(labels, files, strict=True)}
