"""The self-contained HTML reports: one per `identify` run (`render_html`) and the demo's index
(`render_index`). Figures are embedded as base64 PNG, styles are inline, and nothing refers to a
network resource, so a report opens offline and can be mailed as one file."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape

from rotorid.names import parse
from rotorid.result import PARAMS, compare, explained, overall, plain, technical
from rotorid.result import verdict as result_verdict

if TYPE_CHECKING:
    from rotorid.result import Estimate, Result, Truth

#: the report templates (report, index, validation, fleet pages)
TEMPLATES = Environment(
    loader=PackageLoader("rotorid.report", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def paper(method: str) -> str:
    """The paper a method implements (from the method registry; '' for an unknown method)."""
    from rotorid.registry import methods

    spec = methods().get(method)
    return spec.paper if spec else ""


def symbol(name: str) -> str:
    """A parameter's one name (the params.json name, see `rotorid.result.PARAMS`) with its
    motor and configuration in words: `k_tau_m2@B` -> `k_tau (motor 2, config B)`."""
    p = parse(name)
    extra = ([f"motor {p.motor}"] if p.motor is not None else []) + ([f"config {p.config}"] if p.config else [])
    return f"{p.base} ({', '.join(extra)})" if extra else p.base


def describe(name: str) -> str:
    """The description of a canonical parameter name from `rotorid.result.PARAMS` ('' if unknown)."""
    return PARAMS.get(parse(name).base, PARAMS.get(name, ("", "")))[1]


def pretty_unit(unit: str) -> str:
    """`kg m^2` -> `kg·m²`, `N/u^2` -> `N/u²` (display only; params.json keeps the plain form)."""
    sup = {"^2": "²", "^3": "³", "^-1": "⁻¹", "^-2": "⁻²"}
    for k, v in sup.items():
        unit = unit.replace(k, v)
    return unit.replace(" ", "·") if unit != "1" else "—"


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def fmt(x: Any, spec: str = ".6g") -> str:
    """A number for a table cell; '—' for missing/NaN."""
    return format(x, spec) if _finite(x) else "—"


def verdict(e: Estimate, obs: dict[str, Any] | None) -> tuple[str, str]:
    """(css class, plain-words verdict) for one parameter (`rotorid.result.verdict`)."""
    v = result_verdict(e, obs)
    return v.cls, v.text


def excitation_findings(result: Result) -> list[str]:
    """Plain-language findings about excitation: one line per (reason, advice) naming every
    parameter it affects, e.g. 'yaw not excited: k_tau and I_zz unidentifiable — fly a yaw
    manoeuvre'. Observability entries that are not parameters (e.g. an axis) are reported too."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, obs in result.observability.items():
        if not isinstance(obs, dict) or obs.get("identifiable", True):
            continue
        key = (plain(str(obs.get("reason") or "not excited")), str(obs.get("advice") or ""))
        known = name in result.params or parse(name).base in PARAMS
        groups.setdefault(key, []).append(symbol(name) if known else name)
    lines = []
    for (reason, advice), names in groups.items():
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
        line = f"{reason}: {who} unidentifiable"
        lines.append(f"{line} — {advice}" if advice else line)
    return lines


#: parameter base name -> the manoeuvre that measures it (`docs/fly-*.md`)
_MANOEUVRE = {
    "tm": "thrust",
    "tm_rise": "thrust",
    "tm_fall": "thrust",
    "thrust_c0": "thrust",
    "thrust_c1": "thrust",
    "thrust_c2": "thrust",
    "hover_cmd": "thrust",
    "thrust_v_exp": "thrust",
    "thrust_v_drop": "thrust",
    "I_xx": "roll/pitch",
    "I_yy": "roll/pitch",
    "I_zz": "yaw",
    "k_tau": "yaw",
}
_FLY = {
    "thrust": "hover, then pump the throttle up and down sharply at different rates and depths (30–60 s)",
    "roll/pitch": "sharp roll and pitch stick steps and doublets around a hover (30–60 s)",
    "yaw": "quick yaw doublets (20–30 s) beside a roll/pitch flight",
    "every axis": "a longer flight near hover that moves roll, pitch, yaw and the throttle (1–2 min)",
}


def next_steps(result: Result) -> tuple[list[str], list[str]]:
    """What to fly next (one line per manoeuvre, naming the parameters it would pin down that
    are not well determined here) and which exported values come from the flights, by the
    per-parameter verdicts (`rotorid.result.verdict`)."""
    by: dict[str, list[str]] = {"ok": [], "warn": [], "assumed": [], "bad": []}
    fly: dict[str, list[str]] = {}
    for name, e in result.params.items():
        cls = verdict(e, result.observability.get(name))[0]
        by[cls].append(symbol(name))
        if cls != "ok":
            fly.setdefault(_MANOEUVRE.get(parse(name).base, "every axis"), []).append(symbol(name))
    todo = [f"{m}: {_FLY[m]} — for {', '.join(names)}" for m, names in fly.items()]
    exports = [f"from the flights, well determined: {', '.join(by['ok']) or 'none'}"]
    if by["warn"]:
        exports.append(f"loosely determined (check a simulation against σ): {', '.join(by['warn'])}")
    if by["assumed"] or by["bad"]:
        exports.append(
            "from an assumption or barely constrained (the export writes them, check them before relying on a "
            f"simulation): {', '.join(by['assumed'] + by['bad'])}"
        )
    return todo, exports


def _setting(v: Any) -> str:
    if isinstance(v, dict | list | tuple):
        return json.dumps(v, default=str)
    if v is None:
        return "—"
    return str(v)


def _windows(ws: Any) -> str:
    if not ws:
        return "whole log"
    try:
        return ", ".join(f"{float(a):g}–{float(b):g} s" for a, b in ws)
    except (TypeError, ValueError):
        return str(ws)


def _caption(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip().capitalize()


def param_rows(result: Result, truth: Truth | None = None) -> list[dict[str, Any]]:
    """Table rows: name, symbol, description, value, σ, %σ, unit, truth, error %, verdict."""
    rows = []
    for name, e in result.params.items():
        tv = truth.params.get(name) if truth else None
        err = 100.0 * (e.value - tv) / abs(tv) if _finite(tv) and tv != 0 else None
        cls, text = verdict(e, result.observability.get(name))
        rows.append(
            {
                "name": name,
                "symbol": symbol(name),
                "desc": describe(name),
                "value": fmt(e.value),
                "std": fmt(e.std, ".2g"),
                "pct": fmt(e.rel_std_pct, ".2f"),
                "unit": pretty_unit(e.unit),
                "truth": fmt(tv) if tv is not None else "",
                "err": fmt(err, "+.2f") if err is not None else "",
                "err_cls": "" if err is None else ("ok" if abs(err) <= 5 else "warn" if abs(err) <= 20 else "bad"),
                "cls": cls,
                "verdict": text,
            }
        )
    return rows


def render_html(result: Result, images: dict[str, str], truth: Truth | None = None, title: str | None = None) -> str:
    """Render the report of one run; `images` maps figure name -> base64 PNG."""
    from rotorid import __version__

    rows = param_rows(result, truth)
    counts = {c: sum(r["cls"] == c for r in rows) for c in ("ok", "warn", "assumed", "bad")}
    return TEMPLATES.get_template("report.html.j2").render(
        title=title or f"rotorid — {result.method} identification",
        result=result,
        paper=paper(result.method),
        overall=overall(result),
        notes=[explained(n) for n in result.notes if not technical(n)],
        technical_notes=[n for n in result.notes if technical(n)],
        observability=[(k, _setting(o)) for k, o in result.observability.items()],
        rows=rows,
        counts=counts,
        findings=excitation_findings(result),
        next_steps=next_steps(result),
        unidentifiable=[
            k for k, o in result.observability.items() if isinstance(o, dict) and o.get("identifiable") is False
        ],
        settings=[(k, _setting(v)) for k, v in result.settings.items()],
        inputs=[
            {"path": i.get("path", ""), "sha256": i.get("sha256") or "—", "windows": _windows(i.get("windows"))}
            for i in result.inputs
        ],
        vehicle=result.vehicle,
        figures=[(_caption(k), k, v) for k, v in images.items()],
        truth=truth,
        version=__version__,
    )


@dataclass
class IndexEntry:
    """One method's section of the demo index: its run folder (relative link), scenario,
    result, truth, a few figures (base64 PNG) and how long it took."""

    method: str
    scenario: str
    link: str
    result: Result
    truth: Truth | None = None
    figures: dict[str, str] = field(default_factory=dict)
    seconds: float | None = None
    extra: list[tuple[str, str]] = field(default_factory=list)


def render_index(entries: list[IndexEntry], missing: dict[str, str], title: str = "rotorid demo") -> str:
    """The demo's index page: per method its parameter table against the truth, its main
    figures and a link to its full report; methods that could not run are listed with why."""
    from rotorid import __version__

    sections = []
    for e in entries:
        rows = param_rows(e.result, e.truth)
        errs = [abs(v) for v in (compare(e.result, e.truth).values() if e.truth else ()) if math.isfinite(v)]
        sections.append(
            {
                "method": e.method,
                "paper": paper(e.method),
                "scenario": e.scenario,
                "link": e.link,
                "rows": rows,
                "findings": excitation_findings(e.result),
                "notes": e.result.notes,
                "figures": [(_caption(k), k, v) for k, v in e.figures.items()],
                "seconds": fmt(e.seconds, ".1f") if e.seconds is not None else "",
                "extra": e.extra,
                "truth": e.truth is not None,
                "median_err": fmt(statistics.median(errs), ".2f") if errs else "",
            }
        )
    return TEMPLATES.get_template("index.html.j2").render(
        title=title, sections=sections, missing=missing, version=__version__
    )
