"""Opening logs in `rotorid app`: paint first, judge after. A log is read (the decoded-log cache
makes a second look quick) and its three panels are built from min/max-downsampled series and
sent at once; its flying spans, `info` facts and proposed windows are worked out in a thread
(`work_out`) and shown when ready (`ready`), the page polling meanwhile. A page may open several
logs: each keeps its own windows, one is plotted at a time (`Session.current`), and the page
lists every log's windows the run uses (`windows_table`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rotorid.app import panels
from rotorid.app.state import ROLES, AppError, LogEntry, Session
from rotorid.vehicle import preset_mismatch

#: Most logs one page (session) keeps open: a session keeps every log it opened (its flights in
#: memory, its file).
SESSION_LOGS = 8


def session_vehicle(s: Session) -> Any:
    """The vehicle the page chose, or None while it has chosen none (never a silent default)."""
    from rotorid.vehicle import Vehicle

    return Vehicle.load(s.vehicle) if s.vehicle else None


def open_entry(s: Session, key: str, path: Path, label: str) -> LogEntry:
    """Read a log with the session's vehicle (as `identify` will), unless this session read the
    unchanged file with the same vehicle before, build its panels and make it the plotted log;
    its facts and proposed windows are worked out in a thread (`work_out`) when not known yet."""
    from rotorid.io import LogSpec, load

    if key not in s.logs and len(s.logs) >= SESSION_LOGS:
        raise AppError(f"this page holds {len(s.logs)} logs already; reload the page to start afresh")
    vehicle = session_vehicle(s)
    st = path.stat()
    entry = s.logs.get(key)
    if entry is None or entry.stamp != (st.st_mtime_ns, st.st_size) or entry.vehicle != s.vehicle_key:
        flights = load(LogSpec(path), vehicle=vehicle)
        old = entry
        entry = LogEntry(key, path, label, flights)
        entry.stamp, entry.vehicle = (st.st_mtime_ns, st.st_size), s.vehicle_key
        entry.applied = old.applied if old is not None else {}
    for role in ROLES:
        fig = panels.figure(entry.flights, vehicle, role, uirevision=key)
        fig.update_layout(shapes=panels.shapes(entry.flying, s.windows[role].get(key, [])))
        entry.panels[role] = fig
    with s.lock:
        s.logs[key] = entry
        s.current = key
    if not entry.ready and entry.worker is None:
        entry.worker = threading.Thread(
            target=work_out, args=(entry, vehicle), daemon=True, name=f"rotorid-facts-{Path(label).name}"
        )
        entry.worker.start()
    return entry


def work_out(entry: LogEntry, vehicle: Any) -> None:
    """The slow half of opening a log, off the request: flying spans, facts, proposed windows
    (`panels.flying_spans`, `panels.facts`, `panels.proposed`); a failure becomes the entry's
    one-line `error`."""
    from rotorid.errors import RotoridError

    try:
        entry.flying = panels.flying_spans(entry.flights)
        entry.facts = panels.facts(entry.flights)
        entry.proposed = panels.proposed(entry.flights, vehicle)
    except RotoridError as e:
        entry.error = str(e)
    except Exception as e:  # a bug, not bad input: one line on the page, never a dead app
        entry.error = f"internal error ({type(e).__name__}: {e}); please report it"
    finally:
        entry.ready = True


def apply_proposed(s: Session, entry: LogEntry) -> None:
    """Give each role of a ready log its proposed windows unless the user changed that role's
    windows from what was proposed before (none yet counts as unchanged): windows set while the
    log was being worked out, or before a new vehicle's proposals, stay."""
    with s.lock:
        for role, wins in (entry.proposed or {}).items():
            if s.windows[role].get(entry.key, []) == entry.applied.get(role, []):
                s.windows[role][entry.key] = wins
                entry.applied[role] = wins


def status(s: Session, entry: LogEntry) -> tuple[str, str]:
    """The page's status line for the plotted log, and its css class."""
    name = Path(entry.label).name
    if not entry.ready:
        return f"opened {name}: working out its facts and proposed windows…", "status busy"
    if entry.error:
        return f"error: {name}: {entry.error}", "status error"
    found = ", ".join(f"{r.replace('_', '/')} {len(s.windows[r].get(entry.key, []))}" for r in ROLES)
    pieces = f"{len(entry.flights)} pieces, " if len(entry.flights) > 1 else ""
    line = f"opened {name}: {pieces}proposed windows {found} — drag on a panel to add one"
    if not s.vehicle:
        return f"{line}; choose your vehicle below before identifying", "status warn"
    why = preset_mismatch(s.vehicle, entry.log_format)
    return (f"{line}; but {why}", "status error") if why else (line, "status ok")


def opened_options(s: Session) -> list[dict[str, str]]:
    """The page's opened logs, for the picker that chooses which one is plotted."""
    return [{"label": Path(e.label).name, "value": k} for k, e in s.logs.items()]


def windows_table(s: Session) -> list[Any]:
    """Every window the run will use, per log and role (`run.specs`'s source): the logs not
    plotted included, so nothing enters a run unseen."""
    from dash import html

    rows = [
        html.Tr(
            [
                html.Td(Path(s.logs[key].label).name + (" (plotted)" if key == s.current else "")),
                html.Td(role.replace("_", "/")),
                html.Td(", ".join(f"{a:.2f}:{b:.2f}" for a, b in sorted(wins))),
            ]
        )
        for role in ROLES
        for key, wins in s.windows[role].items()
        if wins and key in s.logs
    ]
    if not rows:
        return [html.Tr(html.Td("none yet: drag on a panel or type windows under it", className="msg"))]
    return [html.Thead(html.Tr([html.Th(h) for h in ("log", "role", "windows (s)")])), html.Tbody(rows)]
