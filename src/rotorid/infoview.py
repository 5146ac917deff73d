"""What `rotorid info` shows of a log, as Rich tables and lines the command prints: its
channels and rates, flying and ground spans, excitation per segment, the windows found per role,
and what the proposed command leaves out (with the "fly this" guide of the log's format)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rotorid.errors import shown


def _span_text(spans: list[tuple[float, float]], limit: int = 4) -> str:
    if not spans:
        return "none"
    text = ", ".join(f"{a:.2f}–{b:.2f}" for a, b in spans[:limit])
    return text + (f" (+{len(spans) - limit} more)" if len(spans) > limit else "")


_COLOUR = {"excited": "green", "weak": "yellow", "none": "red", "n/a": "dim"}


def log_tables(
    spec: str, flights: list[Any], judged: Any, found: dict[str, Any], sweeps: Sequence[tuple[Any, str]] = ()
) -> list[Any]:
    """What `rotorid info` prints of one log: a key/value table (format, span, channels with rate
    verdicts, gaps, activity, each flight's `sweeps` line), one row per segment, and the windows
    proposed per role."""
    from rich import box
    from rich.table import Table

    from rotorid import excitation

    first, last = flights[0], flights[-1]
    n = sum(len(f.t) for f in flights)
    tab = Table(title=shown(spec), show_header=False, title_justify="left")
    tab.add_column(style="bold")
    tab.add_column()
    tab.add_row("format", shown(first.meta.get("format", "?")))
    span = (
        f"{first.t[0]:.3f} – {last.t[-1]:.3f} s ({last.t[-1] - first.t[0]:.2f} s, {n} samples at {first.rate:.1f} Hz)"
    )
    tab.add_row("span", span + (f", {len(flights)} segments" if len(flights) > 1 else ""))
    rates, topics = first.meta.get("rates", {}), first.meta.get("topics", {})
    for ch in dict.fromkeys(c for f in flights for c in f.channels):
        v = getattr(next(f for f in flights if getattr(f, ch) is not None), ch)
        where = f"  ({shown(topics[ch])})" if ch in topics else ""
        slow = [r for r in judged.too_slow if r.channel == ch]
        rate = min(float(f.meta.get("rates", {}).get(ch, f.rate)) for f in flights if getattr(f, ch) is not None)
        verdict = (
            "  [red]too slow for " + ", ".join(f"{r.method} (≥ {r.min_hz:g} Hz)" for r in slow) + "[/]" if slow else ""
        )
        tab.add_row(
            f"  {shown(ch)}", f"{v.shape[1] if v.ndim == 2 else 1} col, {rates.get(ch, rate):.1f} Hz{where}{verdict}"
        )
    fixes = list(dict.fromkeys(r.fix for r in judged.too_slow))
    for fix in fixes:
        tab.add_row("[red]fix[/]", shown(fix))
    holes = [g for f in flights for g in excitation.gaps(f)]
    listed = ", ".join(f"{a:.2f} (+{1e3 * (b - a):.0f} ms)" for a, b in holes[:4])
    tab.add_row("gaps", f"{len(holes)}: {listed}" if holes else "none")
    ex = [row.excitation for row in judged.segments]
    fly = [s for e in ex for s in e.flying]
    src = "/".join(dict.fromkeys(e.flying_from for e in ex))
    tab.add_row("flying", f"{_span_text(fly)}  ({sum(e.flying_time for e in ex):.1f} s, from {src})")
    tab.add_row("on ground", _span_text([s for e in ex for s in e.ground]))
    tab.add_row("activity", shown(judged.activity))
    for f, line in sweeps:
        tab.add_row("sweeps", f"{f.t[0]:.2f}–{f.t[-1]:.2f} s: {shown(line)}")
    seg = Table(
        title="excitation per segment" if len(flights) > 1 else "excitation",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    for col in ("#", "span s", "fly s", *excitation.AXES):
        seg.add_column(col, justify="right" if col in ("#", "fly s") else "left", no_wrap=True)
    for row in judged.segments:
        cells = [
            f"{m.value:.3g} [{_COLOUR[m.verdict]}]{m.verdict}[/]" if m.verdict != "n/a" else "[dim]n/a[/]"
            for m in row.excitation.axes.values()
        ]
        seg.add_row(str(row.index), f"{row.t0:.2f}–{row.t1:.2f}", f"{row.flying_time:.1f}", *cells)
    win = Table(title="windows found (rotorid identify uses them when a log has none)", title_justify="left")
    for col in ("role", "windows", "measure", "found where ≥"):
        win.add_column(col)
    for role, ws in found.items():
        if ws:
            text = ", ".join(f"{w.t0:.2f}:{w.t1:.2f}" for w in ws)
            win.add_row(
                excitation.ROLE_WORDS[role],
                text,
                f"{max(w.measure for w in ws):.3g} {ws[0].unit}",
                f"{ws[0].threshold:.3g}",
            )
    return [tab, seg, win if win.row_count else "windows found: none (no flying part away from take-off and landing)"]


#: The "fly this" guide for each log format (docs/ in the repository).
_GUIDES = {"ulog": "docs/fly-px4.md", "dataflash": "docs/fly-ardupilot.md", "blackbox": "docs/fly-betaflight.md"}


def unserved(
    found: dict[str, dict[str, Any]],
    specs: dict[str, list[str]],
    formats: set[str],
    delay: bool = True,
    unswept: bool = False,
) -> list[str]:
    """What the command leaves out and why, one line per role: no window excites it enough (its
    best window's score, 1 = 'excited'), or, when a delay command is printed (`delay`), yaw
    without roll/pitch (delay's K_tau rests on I_xx, I_yy); freq where its channels are there but
    no log was swept (`unswept`); with the guide of the logs' format."""
    from rotorid.excitation import ROLE_AXES, ROLE_WORDS

    out = []
    for role in ROLE_AXES:
        scores = [w.score for ws in found.values() for w in ws[role]]
        if not specs.get(role):
            best = f" (best window {max(scores):.2f} of the excited threshold)" if scores else ""
            out.append(f"{ROLE_WORDS[role]}: no window excites it enough{best}")
        elif role == "yaw" and delay and not specs.get("roll_pitch"):
            out.append("yaw: left out of delay's command: K_tau rests on I_xx, I_yy, which need a roll/pitch window")
    if unswept:
        out.append(
            "freq: no log sweeps an axis (a chirp); on the pilot's input its closed-loop estimate is biased, "
            "so it is not proposed (--method freq runs it anyway)"
        )
    guides = [g for f, g in _GUIDES.items() if f in formats]
    if out:
        out[-1] += f"; the manoeuvres to fly: {', '.join(guides)}" if guides else ""
        out.insert(0, "not in the command:")
    return out


@dataclass
class LogInfo:
    """What `rotorid info` finds in one log argument: what it prints (`parts`), the windows found
    per role, the methods whose channels and rates it serves, and its formats."""

    parts: list[Any]
    found: dict[str, Any]
    usable: set[str]
    formats: set[str]
    swept: bool = False


def analyse(
    spec: str, flights: list[Any], vehicle: Any, limits: Mapping[str, Any], mins: Mapping[str, float]
) -> LogInfo:
    """`rotorid info`'s analysis of one log argument's flights (as read): rates against each
    method's minimum (`mins`), flying spans and excitation per segment, the windows per role and
    the tables it prints."""
    from rotorid import excitation
    from rotorid.registry import methods

    judged = excitation.judge(flights, dict(mins), thresholds=limits)
    found = excitation.log_windows(flights, limits)
    channels = {c for f in flights for c in f.channels}
    slow = {r.method for r in judged.too_slow}
    needs = {m.name: set(m.channels) for m in methods().values()}
    if vehicle is not None and vehicle.motor_input == "rad_s":  # its rotor speeds stand for the commands
        needs = {k: chs - {"cmd"} if "rotor_speed" in chs else chs for k, chs in needs.items()}
    usable = {m for m, chs in needs.items() if m not in slow and chs <= channels}
    formats = {str(f.meta.get("format", "")) for f in flights}
    from rotorid.methods.freq.sweep import describe

    sweeps = [(f, describe(f, vehicle)) for f in flights if len(f.t) > 256]
    parts = log_tables(spec, flights, judged, found, [(f, line) for f, (line, _) in sweeps])
    return LogInfo(parts, found, usable, formats, any(swept for _, (_, swept) in sweeps))


def closing(
    logs: Mapping[str, LogInfo], limits: Mapping[str, Any], vehicle: Any, vehicle_arg: str | None, words: Sequence[str]
) -> list[str]:
    """The lines `rotorid info` ends with (plain text, to be escaped when printed): the thresholds
    used, a ready-to-run identify command per method every log serves (reader flags `words`
    appended) or why there is none, and what the commands leave out."""
    from rotorid import runs
    from rotorid.registry import methods

    found = {s: i.found for s, i in logs.items()}
    specs = runs.role_specs(found)
    scale = f"for {vehicle.name}" if vehicle else "for a Crazyflie-sized vehicle; give --vehicle to scale them"
    out = [f"excitation thresholds {scale}: " + ", ".join(f"{a} {hi:.3g}/{lo:.3g}" for a, (hi, lo) in limits.items())]
    usable = [m for m in methods() if all(m in i.usable for i in logs.values())]
    swept = any(i.swept for i in logs.values())
    ready = [m for m in usable if m != "freq" or swept]
    commands = [c for m in ready if (c := runs.command(m, specs, vehicle_arg or "vehicle.toml", extra=words))]
    formats = {f for i in logs.values() for f in i.formats}
    left = unserved(found, specs, formats, delay="delay" in ready, unswept="freq" in usable and not swept)
    if not commands:
        excited = any(specs.values()) and not usable
        why = "every method needs faster logs (see fix)" if excited else "no log flew an excited part"
        return [*out, f"no identify command to suggest: {why}", *left]
    out.append("ready to run:" if vehicle else "ready to run (make the vehicle file with `rotorid vehicle init`):")
    return [*out, *commands, *left]
