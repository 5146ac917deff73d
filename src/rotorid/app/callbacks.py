"""What the page does (Dash callbacks, all on the server): open a log, set windows by dragging
or typing, adjust them by dragging their edges, zoom (re-downsampled data), describe the
vehicle, identify and poll its progress, serve the session's files. Every callback finds its
session by the page's id, so tabs never mix; input errors become one line on the page."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

from rotorid.app import panels, run
from rotorid.app.state import ROLES, AppError, LogEntry, Session, Sessions, resolve_in, safe_name
from rotorid.errors import RotoridError
from rotorid.util import atomic_write_bytes, atomic_write_text

SHAPE_EDGE = re.compile(r"shapes\[(\d+)\]\.(x0|x1)$")


def parse_windows(text: str | None) -> list[tuple[float, float]]:
    """`t0:t1, t2:t3` (the CLI's window syntax) as sorted windows; overlapping ones are joined."""
    from rotorid.io import parse_spec

    text = (text or "").replace(" ", "")
    if not text:
        return []
    spec = parse_spec(f"log@{text}", join=True)
    if not spec.windows:
        raise AppError(f"'{text}' is not of the form t0:t1, t2:t3 (seconds)")
    return list(spec.windows)


def format_windows(windows: list[tuple[float, float]]) -> str:
    return ", ".join(f"{a:.2f}:{b:.2f}" for a, b in windows)


def _merged(windows: list[tuple[float, float]]) -> Any:
    """The windows box text for `windows` (rounded, sorted, joined), or no change when a
    window is empty at the box's 0.01 s resolution."""
    from dash import no_update

    try:
        return format_windows(parse_windows(format_windows(windows)))
    except RotoridError:
        return no_update


#: Most logs one page (session) keeps open, and most upload bytes per session in multiples of
#: the upload limit: a session keeps every log it opened (its flights in memory, its file).
SESSION_LOGS = 8
SESSION_UPLOADS = 4


def save_upload(s: Session, contents: str, filename: str | None, max_bytes: int) -> Path:
    """Decode a dcc.Upload payload into the session's upload folder, refusing oversize files
    and uploads beyond the session's share (`SESSION_UPLOADS` x the limit)."""
    _, _, data = (contents or "").partition(",")
    if len(data) * 3 // 4 > max_bytes + 3:
        raise AppError(f"{filename}: larger than the upload limit ({max_bytes / 2**20:g} MB); put it in the folder")
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise AppError(f"{filename}: the upload arrived damaged; try again") from None
    path = s.folder_for("uploads") / safe_name(filename or "upload")
    held = sum(p.stat().st_size for p in path.parent.iterdir() if p.is_file() and p != path)  # same name: replaced
    if held + len(raw) > SESSION_UPLOADS * max_bytes:
        raise AppError(
            f"{filename}: this page already holds {held / 2**20:.0f} MB of uploads; reload the page to start afresh"
        )
    atomic_write_bytes(path, raw)
    return path


def open_entry(s: Session, key: str, path: Path, label: str) -> LogEntry:
    """Read a log with the session's vehicle (as `identify` will) and work out its facts —
    unless this session read the unchanged file before — then build its panels; the first
    time, preload the proposed windows."""
    from rotorid.io import LogSpec, load
    from rotorid.vehicle import Vehicle

    if key not in s.logs and len(s.logs) >= SESSION_LOGS:
        raise AppError(f"this page holds {len(s.logs)} logs already; reload the page to start afresh")
    vehicle = Vehicle.load(s.vehicle)
    st = path.stat()
    entry = s.logs.get(key)
    if entry is None or entry.stamp != (st.st_mtime_ns, st.st_size) or entry.vehicle != s.vehicle:
        flights = load(LogSpec(path), vehicle=vehicle)
        entry = LogEntry(key, path, label, flights, panels.flying_spans(flights), panels.facts(flights))
        entry.stamp, entry.vehicle = (st.st_mtime_ns, st.st_size), s.vehicle
    flights = entry.flights
    if key not in s.windows["thrust"]:
        for role, wins in panels.proposed(flights, vehicle).items():
            s.windows[role][key] = wins
    for role in ROLES:
        fig = panels.figure(flights, vehicle, role, uirevision=key)
        fig.update_layout(shapes=panels.shapes(entry.flying, s.windows[role][key]))
        entry.panels[role] = fig
    with s.lock:
        s.logs[key] = entry
        s.current = key
    return entry


def _facts_rows(entry: LogEntry) -> list[Any]:
    from dash import html

    return [html.Tr([html.Td(k), html.Td(v, className=c)]) for k, v, c in entry.facts]


def _results(s: Session, job: run.Job) -> tuple[list[Any], list[Any]]:
    """The run's parameter table and downloads (beside the plots), and its report (below)."""
    from dash import html

    r = job.result
    base = f"/files/{s.sid}/{job.out.name}"
    head = html.Tr([html.Th(h) for h in ("parameter", "value", "std", "%σ", "unit")])
    rows = [
        html.Tr(
            [
                html.Td(name),
                html.Td(f"{e.value:.6g}", className="value", title=repr(e.value)),
                html.Td(f"{e.std:.3g}"),
                html.Td(f"{e.rel_std_pct:.2f}"),
                html.Td(e.unit),
            ],
            id=f"param-{name}",
        )
        for name, e in r.params.items()
    ]
    links = [
        html.Li(html.A(p.name, href=f"{base}/{p.name}", download=p.name))
        for key, p in job.files.items()
        if key in ("params", "report", *run.EXPORTS)
    ]
    if job.export_errors:
        why = html.Ul([html.Li(f"{fmt}: {msg}") for fmt, msg in job.export_errors.items()])
        links.append(
            html.Li(html.Details([html.Summary(f"not exported: {', '.join(job.export_errors)}"), why]), className="msg")
        )
    summary = [
        html.Table([html.Thead(head), html.Tbody(rows)], className="params", id="params"),
        html.Ul([html.Li(w, className="msg") for w in job.warnings]),
        html.H2("downloads"),
        html.Ul(links, id="downloads"),
    ]
    return summary, [html.H2(f"report of run {job.number}"), html.Iframe(src=f"{base}/report.html", id="report-frame")]


def register(app: Any, sessions: Sessions, folder: Path, max_bytes: int) -> None:
    """Attach every callback and the /files route to the Dash `app`."""
    from dash import Input, Output, Patch, State, no_update

    _register_downloads(app, sessions)
    _register_open(app, sessions, folder, max_bytes)
    for role in ROLES:
        _register_role(app, sessions, role, Input, Output, Patch, State, no_update)
    _register_vehicle(app, sessions)
    _register_options(app, sessions)
    _register_identify(app, sessions)


def _register_downloads(app: Any, sessions: Sessions) -> None:
    """The /files route: a session's own files (vehicle.toml, run outputs) for download."""
    import flask

    @app.server.route("/files/<sid>/<path:name>")
    def files(sid: str, name: str) -> Any:
        try:
            s = sessions.get(sid)
        except AppError:
            flask.abort(404)
        return flask.send_from_directory(s.folder, name)


def _register_open(app: Any, sessions: Sessions, folder: Path, max_bytes: int) -> None:
    """Open a log (from the folder list, typed, or uploaded): status, facts, panels, proposed windows."""
    from dash import Input, Output, State, ctx, no_update

    @app.callback(Output("log-path", "value"), Input("log-list", "value"), prevent_initial_call=True)
    def pick(value: str | None) -> Any:
        return value or no_update

    @app.callback(
        Output("status", "children"),
        Output("status", "className"),
        Output("facts", "children"),
        *[Output(f"panel-{r}", "figure") for r in ROLES],
        *[Output(f"windows-{r}", "value", allow_duplicate=True) for r in ROLES],
        Input("open", "n_clicks"),
        Input("log-path", "n_submit"),
        Input("upload", "contents"),
        State("log-path", "value"),
        State("upload", "filename"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def open_log(_n: Any, _m: Any, contents: str | None, name: str | None, filename: str | None, sid: str) -> Any:
        try:
            s = sessions.get(sid)
            if ctx.triggered_id == "upload":
                path = save_upload(s, contents or "", filename, max_bytes)
                key, label = f"upload:{path.name}", filename or path.name
            else:
                if not name:
                    raise AppError("choose a log from the list (or type its name in the folder) first")
                path = resolve_in(folder, name)
                key, label = f"folder:{path}", str(path)
            entry = open_entry(s, key, path, label)
        except RotoridError as e:
            return f"error: {e}", "status error", *[no_update] * (1 + 2 * len(ROLES))
        found = ", ".join(f"{r.replace('_', '/')} {len(s.windows[r][key])}" for r in ROLES)
        pieces = f"{len(entry.flights)} pieces, " if len(entry.flights) > 1 else ""
        msg = f"opened {Path(label).name}: {pieces}proposed windows {found} — drag on a panel to add one"
        texts = [format_windows(s.windows[r][key]) for r in ROLES]
        return msg, "status ok", _facts_rows(entry), *[entry.panels[r] for r in ROLES], *texts


def _register_vehicle(app: Any, sessions: Sessions) -> None:
    """The vehicle form: a preset or a built vehicle, shown as TOML and saved for the run."""
    from dash import Input, Output, State, no_update

    @app.callback(
        Output("veh-toml", "children"),
        Output("veh-msg", "children"),
        Output("veh-msg", "className"),
        Output("veh-download", "href"),
        Output("cli", "children"),
        Input("veh-mode", "value"),
        Input("veh-preset", "value"),
        Input("veh-layout", "value"),
        Input("veh-arm", "value"),
        Input("veh-mass", "value"),
        Input("veh-input", "value"),
        Input("veh-range", "value"),
        Input("veh-order", "value"),
        State("sid", "data"),
    )
    def vehicle(
        mode: str, preset: str, layout: str, arm: Any, mass: Any, kind: str, rng: str, order: str, sid: str
    ) -> Any:
        from rotorid.vehicle import Vehicle, build_vehicle

        try:
            s = sessions.get(sid)
            if mode == "preset":
                v, spec, label = Vehicle.preset(preset), preset, preset
            else:
                if arm is None or mass is None:
                    raise AppError("enter the arm length (m) and the mass (kg)")
                lo, hi = (float(x) for x in (rng or "").split(","))
                v = build_vehicle(layout, float(arm), float(mass), kind, (lo, hi), order)
                spec, label = str(s.folder_for(".") / "vehicle.toml"), "vehicle.toml"
            text = v.to_commented_toml()
        except ValueError:
            return no_update, "command range must be two numbers MIN,MAX", "msg error", no_update, no_update
        except RotoridError as e:
            return no_update, str(e), "msg error", no_update, no_update
        atomic_write_text(s.folder_for(".") / "vehicle.toml", text)
        with s.lock:
            s.vehicle, s.vehicle_label = spec, label
        note = f"{v.name}: {v.n_rotors} rotors, {v.mass:g} kg, {v.motor_input} motor input"
        return text, note, "msg", f"/files/{sid}/vehicle.toml", run.command_line(s)


def _register_options(app: Any, sessions: Sessions) -> None:
    """The options form: the values that differ from the defaults become the session's options
    (checked when the run builds the settings) and go into the command line."""
    from dash import ALL, Input, Output, State, no_update

    @app.callback(
        Output("cli", "children", allow_duplicate=True),
        Output("option-msg", "children"),
        Input({"type": "option", "name": ALL}, "value"),
        State({"type": "option", "name": ALL}, "id"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def set_options(values: list[Any], ids: list[dict[str, str]], sid: str) -> Any:
        form = {i["name"]: ("on" in v if isinstance(v, list) else v) for i, v in zip(ids, values, strict=True)}
        try:
            s = sessions.get(sid)
            given = run.given_options(form)
        except RotoridError as e:
            return no_update, f"error: {e}"
        with s.lock:
            s.options = given
        return run.command_line(s), f"{len(given)} changed" if given else ""


def _register_identify(app: Any, sessions: Sessions) -> None:
    """Start an identification run and poll its progress until the results and report show."""
    from dash import Input, Output, State, no_update

    @app.callback(
        Output("poll", "disabled"),
        Output("run-status", "children"),
        Output("run-status", "className"),
        Input("identify", "n_clicks"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def identify(_n: Any, sid: str) -> Any:
        try:
            s = sessions.get(sid)
            if s.job is not None and not s.job.done:
                raise AppError("a run is in progress; wait for it to finish")
            s.job = run.start(s)
        except RotoridError as e:
            return True, f"error: {e}", "status error"
        return False, f"run {s.job.number} started", "status"

    @app.callback(
        Output("progress", "value"),
        Output("progress-text", "children"),
        Output("poll", "disabled", allow_duplicate=True),
        Output("results", "children"),
        Output("report", "children"),
        Output("run-status", "children", allow_duplicate=True),
        Output("run-status", "className", allow_duplicate=True),
        Input("poll", "n_intervals"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def poll(_n: Any, sid: str) -> Any:
        try:
            job = sessions.get(sid).job
        except AppError as e:
            return no_update, no_update, True, no_update, no_update, f"error: {e}", "status error"
        text = " → ".join(job.steps) or "starting"
        if not job.done:
            return str(job.fraction), text, False, no_update, no_update, no_update, no_update
        if job.error:
            return "0", text, True, [], [], f"error: {job.error}", "status error"
        return "1", text, True, *_results(sessions.get(sid), job), f"run {job.number} done", "status ok"


def _register_role(
    app: Any, sessions: Sessions, role: str, Input: Any, Output: Any, Patch: Any, State: Any, no_update: Any
) -> None:
    """The callbacks of one role's panel and its windows box."""
    panel, box = f"panel-{role}", f"windows-{role}"

    @app.callback(
        Output(panel, "figure", allow_duplicate=True),
        Output(f"winmsg-{role}", "children"),
        Output(f"winmsg-{role}", "className"),
        Output("cli", "children", allow_duplicate=True),
        Input(box, "value"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def set_windows(text: str | None, sid: str) -> Any:
        try:
            s = sessions.get(sid)
            entry = s.log
            wins = parse_windows(text)
        except RotoridError as e:
            return no_update, str(e), "msg error", no_update
        t0, t1 = float(entry.flights[0].t[0]), float(entry.flights[-1].t[-1])
        with s.lock:
            s.windows[role][entry.key] = wins
        fig = Patch()
        fig["layout"]["shapes"] = panels.shapes(entry.flying, wins)
        fig["layout"]["selections"] = []
        outside = [w for w in wins if w[0] < t0 or w[1] > t1]
        msg = (
            f"outside the log ({t0:.2f}–{t1:.2f} s): {format_windows(outside)}" if outside else f"{len(wins)} window(s)"
        )
        return fig, msg, "msg error" if outside else "msg", run.command_line(s)

    _register_selection(app, sessions, role, Input, Output, State, no_update)


def _register_selection(
    app: Any, sessions: Sessions, role: str, Input: Any, Output: Any, State: Any, no_update: Any
) -> None:
    """The callbacks that edit one role's windows box from its panel: box-select, clear, drag an edge."""
    panel, box = f"panel-{role}", f"windows-{role}"

    @app.callback(
        Output(box, "value", allow_duplicate=True),
        Input(panel, "selectedData"),
        State(box, "value"),
        prevent_initial_call=True,
    )
    def select(sel: dict | None, text: str | None) -> Any:
        rng = (sel or {}).get("range") or {}
        xs = rng.get("x")
        if not xs:
            return no_update
        try:
            wins = parse_windows(text)
        except RotoridError:
            wins = []
        return _merged([*wins, (min(xs), max(xs))])

    @app.callback(
        Output(box, "value", allow_duplicate=True), Input(f"clear-{role}", "n_clicks"), prevent_initial_call=True
    )
    def clear(_n: Any) -> str:
        return ""

    @app.callback(
        Output(panel, "figure", allow_duplicate=True),
        Output(box, "value", allow_duplicate=True),
        Input(panel, "relayoutData"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def relayout(data: dict | None, sid: str) -> Any:
        try:
            s = sessions.get(sid)
            entry = s.log
        except RotoridError:
            return no_update, no_update
        data = data or {}
        edges = [
            (int(m.group(1)) - len(entry.flying), m.group(2), v) for k, v in data.items() if (m := SHAPE_EDGE.match(k))
        ]
        if edges:  # a window's edge was dragged: move it, keep the others
            wins = [list(w) for w in s.windows[role][entry.key]]
            for i, edge, v in edges:
                if 0 <= i < len(wins):
                    wins[i][0 if edge == "x0" else 1] = float(v)
            return no_update, _merged([(min(w), max(w)) for w in wins])
        return entry.panels[role].construct_update_data_patch(data), no_update
