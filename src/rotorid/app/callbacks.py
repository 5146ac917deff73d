"""What the page does (Dash callbacks, all on the server): open logs (`opening`: paint first,
facts and proposed windows when ready), set windows by dragging or typing, adjust them by
dragging their edges, zoom the three panels together (re-downsampled data), choose or describe
the vehicle, identify and poll its progress, serve the session's files. Every callback finds its
session by the page's id, so tabs never mix; input errors become one line on the page."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

from rotorid.app import opening, panels, run
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


#: Most upload bytes per session, in multiples of the upload limit.
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


def _facts_rows(entry: LogEntry) -> list[Any]:
    from dash import html

    return [html.Tr([html.Td(k), html.Td(v, className=c)]) for k, v, c in entry.facts]


def run_status(job: run.Job) -> tuple[str, str]:
    """The line (and its css class) that ends a run: "done" in green only when every parameter
    is usable for simulation as `result.overall` counts it (well determined, or assumed within
    the well-determined %σ); otherwise it names the parameters that are not, by verdict word."""
    from rotorid.result import usable, verdict

    r = job.result
    weak: dict[str, list[str]] = {}
    bad = False
    for name, e in r.params.items():
        v = verdict(e, r.observability.get(name))
        if not usable(e, r.observability.get(name)):
            weak.setdefault(v.word, []).append(name)
            bad |= v.cls == "bad"
    if not weak:
        return f"run {job.number} done: every parameter usable", "status ok"
    said = "; ".join(f"{word}: {', '.join(names)}" for word, names in weak.items())
    return f"run {job.number} done, not all usable — {said}", "status error" if bad else "status warn"


def _results(s: Session, job: run.Job) -> tuple[list[Any], list[Any]]:
    """The run's parameter table and downloads (beside the plots), and its report (below)."""
    from dash import html

    from rotorid.result import overall, shown, verdict

    r = job.result
    base = f"/files/{s.sid}/{job.out.name}"
    head = html.Tr([html.Th(h) for h in ("parameter", "value", "std", "%σ", "unit", "verdict")])
    rows = []
    for name, e in r.params.items():
        v = verdict(e, r.observability.get(name))
        value, std, pct = shown(e, r.observability.get(name))
        rows.append(
            html.Tr(
                [
                    html.Td(name),
                    html.Td(value, className="value", title=repr(e.value)),
                    html.Td(std),
                    html.Td(pct),
                    html.Td(e.unit),
                    html.Td(v.word, className=f"verdict {v.cls}", title=v.text),
                ],
                id=f"param-{name}",
            )
        )
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
        html.P(f"verdict: {overall(r)}", id="verdict", className="msg"),
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
    _register_ready(app, sessions)
    for role in ROLES:
        _register_role(app, sessions, role, Input, Output, Patch, State, no_update)
    _register_zoom(app, sessions)
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
    """Open a log (from the folder list, typed, uploaded, or one opened before, or again for a
    new vehicle): status and panels at once; facts and proposed windows when the thread working
    them out is done (`_register_ready`)."""
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
        Output("opened", "options"),
        Output("opened", "value"),
        Output("open-poll", "disabled"),
        Output("open-poll", "max_intervals"),
        Input("open", "n_clicks"),
        Input("log-path", "n_submit"),
        Input("upload", "contents"),
        Input("opened", "value"),
        Input("vehicle-set", "data"),
        State("log-path", "value"),
        State("upload", "filename"),
        *[State(f"windows-{r}", "value") for r in ROLES],
        State("open-poll", "n_intervals"),
        State("sid", "data"),
        prevent_initial_call=True,
        running=[(Output("open-progress", "style"), {"display": "inline-block"}, {"display": "none"})],
    )
    def open_log(
        _n: Any,
        _m: Any,
        contents: str | None,
        chosen: str | None,
        _v: Any,
        name: str | None,
        filename: str | None,
        *rest: Any,
    ) -> Any:
        *boxes, polled, sid = rest
        try:
            s = sessions.get(sid)
            if ctx.triggered_id == "upload":
                path = save_upload(s, contents or "", filename, max_bytes)
                key, label = f"upload:{path.name}", filename or path.name
            elif ctx.triggered_id in ("opened", "vehicle-set"):  # show another opened log, or re-read for the vehicle
                key = chosen if ctx.triggered_id == "opened" else s.current
                if key is None or key not in s.logs or (key == s.current and ctx.triggered_id == "opened"):
                    return (no_update,) * (3 + 2 * len(ROLES) + 4)
                path, label = s.logs[key].path, s.logs[key].label
            else:
                if not name:
                    raise AppError("choose a log from the list (or type its name in the folder) first")
                path = resolve_in(folder, name)
                key, label = f"folder:{path}", str(path)
            entry = opening.open_entry(s, key, path, label)
        except RotoridError as e:
            return f"error: {e}", "status error", *[no_update] * (1 + 2 * len(ROLES) + 4)
        if entry.ready:
            opening.apply_proposed(s, entry)
        msg, cls = opening.status(s, entry)
        figs = [entry.panels[r] for r in ROLES]
        texts = _box_texts(s, key, boxes)
        more = (polled or 0) + 1  # one poll at a time: each answer allows the next (`ready`)
        return msg, cls, _facts_rows(entry), *figs, *texts, opening.opened_options(s), key, entry.ready, more


def _box_texts(s: Session, key: str, boxes: list[str | None]) -> list[Any]:
    """The windows boxes' texts for log `key`, or no change where a box shows it already: each
    change re-runs that role's `set_windows`, which redraws its panel."""
    from dash import no_update

    texts = [format_windows(s.windows[r].get(key, [])) for r in ROLES]
    return [no_update if t == (b or "") else t for t, b in zip(texts, boxes, strict=True)]


def _register_ready(app: Any, sessions: Sessions) -> None:
    """Poll the thread working out the plotted log's facts and proposed windows; list every
    window the run takes whenever the command line changes."""
    from dash import Input, Output, State, no_update

    @app.callback(
        Output("status", "children", allow_duplicate=True),
        Output("status", "className", allow_duplicate=True),
        Output("facts", "children", allow_duplicate=True),
        *[Output(f"panel-{r}", "figure", allow_duplicate=True) for r in ROLES],
        *[Output(f"windows-{r}", "value", allow_duplicate=True) for r in ROLES],
        Output("open-poll", "disabled", allow_duplicate=True),
        Output("open-poll", "max_intervals", allow_duplicate=True),
        Input("open-poll", "n_intervals"),
        *[State(f"windows-{r}", "value") for r in ROLES],
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def ready(n: int, *rest: Any) -> Any:
        """The plotted log's facts and proposed windows, once worked out: flying spans and
        windows drawn on the panels, windows in their boxes, facts beside. One poll at a time
        (each answer raises the interval's `max_intervals` by one), so no late answer of an
        earlier poll writes the boxes over what the user typed since."""
        from dash import Patch

        *boxes, sid = rest
        try:
            s = sessions.get(sid)
            entry = s.log
        except RotoridError:
            return (no_update,) * (3 + 2 * len(ROLES)) + (True, no_update)
        if not entry.ready:
            return (no_update,) * (3 + 2 * len(ROLES)) + (False, n + 1)
        opening.apply_proposed(s, entry)
        figs = []
        for r in ROLES:
            fig = Patch()
            fig["layout"]["shapes"] = panels.shapes(entry.flying, s.windows[r].get(entry.key, []))
            figs.append(fig)
        return *opening.status(s, entry), _facts_rows(entry), *figs, *_box_texts(s, entry.key, boxes), True, no_update

    @app.callback(Output("run-windows", "children"), Input("cli", "children"), State("sid", "data"))
    def run_windows(_cli: Any, sid: str) -> Any:
        try:
            return opening.windows_table(sessions.get(sid))
        except RotoridError:
            return no_update


def preset_fields(name: str) -> dict[str, Any]:
    """The form's fields for preset `name`, so the form shows the vehicle the run uses: layout,
    arm (centre to rotor axis, m), mass, motor input, command range and the motor order that
    rebuilds its rotors (None when no tabulated order does; its TOML shows them)."""
    import warnings

    import numpy as np

    from rotorid.vehicle import MOTOR_ORDERS, Vehicle, build_vehicle

    v = Vehicle.preset(name)
    xy = v.positions[:, :2]
    arm = float(np.max(np.hypot(xy[:, 0], xy[:, 1])))
    angle = np.degrees(np.arctan2(xy[0, 1], xy[0, 0])) % 90.0
    kind = {4: "quad", 6: "hex", 8: "octo"}.get(v.n_rotors)
    layout = f"{kind}-{'plus' if min(angle, 90.0 - angle) < 1.0 else 'x'}" if kind else None
    order = None
    for o in MOTOR_ORDERS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                b = build_vehicle(layout or "", arm, v.mass, order=o)
        except RotoridError:
            continue
        if np.allclose(b.positions, v.positions, atol=1e-6) and (b.torque_dirs == v.torque_dirs).all():
            order = o
            break
    return {
        "layout": layout,
        "arm": round(arm, 6),
        "mass": v.mass,
        "input": v.motor_input,
        "range": f"{v.cmd_min:g},{v.cmd_max:g}",
        "order": order,
    }


FIELDS = ("layout", "arm", "mass", "input", "range", "order")


def _register_vehicle(app: Any, sessions: Sessions) -> None:
    """The vehicle form: none until the user chooses (a preset, or one described by its layout,
    arm and mass), shown as TOML and saved for the run; a change re-reads the plotted log."""
    from dash import Input, Output, State, no_update

    @app.callback(
        *[Output(f"veh-{f}", "value") for f in FIELDS],
        *[Output(f"veh-{f}", "disabled") for f in FIELDS],
        Input("veh-mode", "value"),
        Input("veh-preset", "value"),
    )
    def fields(mode: str, preset: str | None) -> Any:
        """In preset mode the fields show the preset's values (read-only); describing starts from them."""
        if mode != "preset":
            return (*(no_update,) * len(FIELDS), *(False,) * len(FIELDS))
        if not preset:
            return (*(no_update,) * len(FIELDS), *(True,) * len(FIELDS))
        return (*preset_fields(preset).values(), *(True,) * len(FIELDS))

    @app.callback(
        Output("veh-toml", "children"),
        Output("veh-msg", "children"),
        Output("veh-msg", "className"),
        Output("veh-download", "href"),
        Output("cli", "children"),
        Output("vehicle-set", "data"),
        Input("veh-mode", "value"),
        Input("veh-preset", "value"),
        *[Input(f"veh-{f}", "value") for f in FIELDS],
        State("sid", "data"),
    )
    def vehicle(
        mode: str, preset: str | None, layout: str, arm: Any, mass: Any, kind: str, rng: str, order: str, sid: str
    ) -> Any:
        import warnings

        from rotorid.vehicle import Vehicle, build_vehicle

        try:
            s = sessions.get(sid)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if mode == "preset":
                    if not preset:
                        msg = "no vehicle chosen: choose a preset, or describe yours; identify needs it"
                        return "", msg, "msg error", no_update, run.command_line(s), no_update
                    v, spec, label = Vehicle.preset(preset), preset, preset
                else:
                    if arm is None or mass is None or not layout or not order:
                        raise AppError("enter the layout, arm length (m), mass (kg) and motor order")
                    lo, hi = (float(x) for x in (rng or "").split(","))
                    v = build_vehicle(layout, float(arm), float(mass), kind, (lo, hi), order)
                    spec, label = str(s.folder_for(".") / "vehicle.toml"), "vehicle.toml"
            text = v.to_commented_toml()
        except ValueError:
            return no_update, "command range must be two numbers MIN,MAX", "msg error", no_update, no_update, no_update
        except RotoridError as e:
            return no_update, str(e), "msg error", no_update, no_update, no_update
        atomic_write_text(s.folder_for(".") / "vehicle.toml", text)
        changed = s.vehicle_key != spec + text
        with s.lock:
            s.vehicle, s.vehicle_label, s.vehicle_key = spec, label, spec + text
        note = f"{v.name}: {v.n_rotors} rotors, {v.mass:g} kg, {v.motor_input} motor input"
        note += "".join(f"; {w.message}" for w in caught)
        reread = s.vehicle_key if changed and s.current is not None else no_update
        return text, note, "msg error" if caught else "msg", f"/files/{sid}/vehicle.toml", run.command_line(s), reread


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
        return "1", text, True, *_results(sessions.get(sid), job), *run_status(job)


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
        State(box, "n_submit_timestamp"),
        State(box, "n_blur_timestamp"),
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def set_windows(text: str | None, submitted: float | None, blurred: float | None, sid: str) -> Any:
        typed = max(submitted or -1, blurred or -1)  # when the user last committed the box (-1: never)
        try:
            s = sessions.get(sid)
            entry = s.log
            wins = parse_windows(text)
        except RotoridError as e:
            return no_update, str(e), "msg error", no_update
        t0, t1 = float(entry.flights[0].t[0]), float(entry.flights[-1].t[-1])
        with s.lock:
            if typed < s.typed.get(
                (entry.key, role), -1
            ):  # set by the page before the user's last edit, arriving after it
                return no_update, no_update, no_update, no_update
            s.typed[(entry.key, role)] = typed
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
    """The callbacks that edit one role's windows box from its panel: box-select, clear."""
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


def _x_range(data: dict[str, Any]) -> dict[str, Any] | None:
    """The time-axis change in a panel's `relayoutData` (a zoom, a pan, a reset), or None."""
    if "xaxis.range[0]" in data and "xaxis.range[1]" in data:
        return {"xaxis.range[0]": data["xaxis.range[0]"], "xaxis.range[1]": data["xaxis.range[1]"]}
    if isinstance(data.get("xaxis.range"), list) and len(data["xaxis.range"]) == 2:
        return {"xaxis.range[0]": data["xaxis.range"][0], "xaxis.range[1]": data["xaxis.range"][1]}
    if data.get("xaxis.autorange"):  # a reset: plotly-resampler sends the whole log again only with showspikes
        return {"xaxis.autorange": True, "xaxis.showspikes": False}
    return None


def _register_zoom(app: Any, sessions: Sessions) -> None:
    """The panels' relayouts: a dragged window edge moves that window; a zoom, pan or reset of
    one panel's time axis moves all three (linked axes), each re-downsampled for the new range."""
    from dash import Input, Output, Patch, State, ctx, no_update

    @app.callback(
        *[Output(f"panel-{r}", "figure", allow_duplicate=True) for r in ROLES],
        *[Output(f"windows-{r}", "value", allow_duplicate=True) for r in ROLES],
        *[Input(f"panel-{r}", "relayoutData") for r in ROLES],
        State("sid", "data"),
        prevent_initial_call=True,
    )
    def relayout(*args: Any) -> Any:
        *datas, sid = args
        nothing = (no_update,) * (2 * len(ROLES))
        try:
            s = sessions.get(sid)
            entry = s.log
        except RotoridError:
            return nothing
        role = str(ctx.triggered_id).removeprefix("panel-")
        if role not in ROLES:
            return nothing
        data = datas[ROLES.index(role)] or {}
        edges = [
            (int(m.group(1)) - len(entry.flying), m.group(2), v) for k, v in data.items() if (m := SHAPE_EDGE.match(k))
        ]
        if edges:  # a window's edge was dragged: move it, keep the others
            wins = [list(w) for w in s.windows[role].get(entry.key, [])]
            for i, edge, v in edges:
                if 0 <= i < len(wins):
                    wins[i][0 if edge == "x0" else 1] = float(v)
            boxes = [_merged([(min(w), max(w)) for w in wins]) if r == role else no_update for r in ROLES]
            return (no_update,) * len(ROLES) + tuple(boxes)
        x = _x_range(data)
        if x is None or not entry.panels:
            return nothing
        figs = []
        for r in ROLES:
            patch = entry.panels[r].construct_update_data_patch(x)
            patch = Patch() if patch is no_update else patch
            if r != role:  # the panel the user zoomed shows its range already
                if "xaxis.autorange" in x:
                    patch["layout"]["xaxis"]["autorange"] = True
                else:
                    patch["layout"]["xaxis"]["range"] = [x["xaxis.range[0]"], x["xaxis.range[1]"]]
            figs.append(patch)
        return (*figs, *(no_update,) * len(ROLES))
