"""The page of `rotorid app` (Dash components only; no JavaScript of our own): open a log, three
role panels with the log's facts beside them, the vehicle, identify, results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rotorid.app.panels import TITLES
from rotorid.app.run import form_options
from rotorid.app.state import ROLES, list_logs
from rotorid.vehicle import LAYOUTS, MOTOR_INPUTS, MOTOR_ORDERS, PRESETS

CSS = """
body { font-family: system-ui, sans-serif; margin: 0 1.2em 2em; color: #222; font-size: 14px; }
h1 { font-size: 1.3em; margin: .6em 0 .2em; } h2 { font-size: 1.05em; margin: 1em 0 .4em; }
.row { display: flex; gap: 1em; align-items: flex-start; flex-wrap: wrap; }
.grow { flex: 1 1 640px; min-width: 0; } .side { flex: 0 0 330px; }
.status { margin: .4em 0; min-height: 1.3em; } .status.error, .msg.error { color: #b00020; }
.status.ok { color: #1a7f37; } .status.busy { color: #555; } .status.warn { color: #9a6700; } .msg { font-size: .9em; color: #555; }
table.facts td { padding: 1px 6px; vertical-align: top; font-size: .9em; }
td.ok { color: #1a7f37; } td.weak { color: #9a6700; } td.bad { color: #b00020; } td.na { color: #888; }
table.params td, table.params th { padding: 2px 8px; text-align: right; }
td.verdict { text-align: left; } td.verdict.ok { color: #1a7f37; } td.verdict.warn { color: #9a6700; }
td.verdict.bad { color: #b00020; } td.verdict.assumed { color: #555; }
.winrow { display: flex; gap: .5em; align-items: center; margin: 0 0 .6em 55px; }
.winrow input { width: 24em; } pre { background: #f6f8fa; padding: .5em; overflow-x: auto; font-size: .85em; }
.upload { border: 1px dashed #999; padding: .35em .8em; cursor: pointer; border-radius: 4px; }
iframe { width: 100%; height: 900px; border: 1px solid #ddd; }
"""


def index_string() -> str:
    """Dash's page template with our style sheet inlined (nothing fetched from elsewhere)."""
    return (
        "<!DOCTYPE html><html><head>{%metas%}<title>{%title%}</title>{%favicon%}{%css%}"
        f"<style>{CSS}</style></head><body>{{%app_entry%}}<footer>{{%config%}}{{%scripts%}}{{%renderer%}}"
        "</footer></body></html>"
    )


def _panel(role: str) -> Any:
    from dash import dcc, html

    config = {"scrollZoom": True, "displaylogo": False}  # windows are editable shapes: click, then drag
    return html.Div(
        [
            dcc.Graph(id=f"panel-{role}", config=config, figure={"layout": {"title": TITLES[role], "height": 250}}),
            html.Div(
                [
                    html.Label(f"{role.replace('_', '/')} windows (s):", htmlFor=f"windows-{role}"),
                    dcc.Input(id=f"windows-{role}", type="text", debounce=True, placeholder="t0:t1, t2:t3"),
                    html.Button("clear", id=f"clear-{role}"),
                    html.Span(id=f"winmsg-{role}", className="msg"),
                ],
                className="winrow",
            ),
        ]
    )


def _dropdown(id_: str, options: list[str], width: str, value: str | None = None, **kw: Any) -> Any:
    """A dropdown that sits inline in a form row."""
    from dash import dcc

    style = {"width": width, "display": "inline-block", "verticalAlign": "middle"}
    return dcc.Dropdown(id=id_, options=options, value=value, clearable=False, style=style, **kw)


def _vehicle_form() -> Any:
    """No vehicle until the user chooses: a preset (its values shown, read-only) or one
    described by layout, arm, mass, motor input, command range and motor order."""
    from dash import dcc, html

    def field(label: str, component: Any) -> Any:
        return html.Label([label, " ", component], style={"marginRight": "1em"})

    def number(id_: str) -> Any:
        return dcc.Input(id=id_, type="number", min=0, step="any", debounce=True, style={"width": "6em"})

    return html.Div(
        [
            dcc.RadioItems(
                id="veh-mode",
                options=[{"label": " preset", "value": "preset"}, {"label": " describe it", "value": "form"}],
                value="preset",
                inline=True,
            ),
            field("preset", _dropdown("veh-preset", list(PRESETS), "14em", placeholder="choose your vehicle")),
            html.Div(
                [
                    field("layout", _dropdown("veh-layout", list(LAYOUTS), "9em")),
                    field("arm (m)", number("veh-arm")),
                    field("mass (kg)", number("veh-mass")),
                    field("motor input", _dropdown("veh-input", list(MOTOR_INPUTS), "9em", "normalized")),
                    field(
                        "command range",
                        dcc.Input(id="veh-range", type="text", value="0,1", debounce=True, style={"width": "7em"}),
                    ),
                    field("motor order", _dropdown("veh-order", list(MOTOR_ORDERS), "9em")),
                ],
                style={"margin": ".4em 0"},
            ),
            html.Div(id="veh-msg", className="msg"),
            html.Details(
                [
                    html.Summary(["vehicle TOML ", html.A("download", id="veh-download", download="vehicle.toml")]),
                    html.Pre(id="veh-toml"),
                ]
            ),
        ]
    )


def _options_form() -> Any:
    """The delay options, one field each, made from their declarations (`run.form_options`): a
    switch for a yes/no option, else a text box whose placeholder is the default (empty: the
    default), the help text on hover."""
    from dash import dcc, html

    fields = []
    for name, opt in form_options().items():
        key = {"type": "option", "name": name}
        if isinstance(opt.default, bool):
            box = dcc.Checklist(
                id=key, options=[{"label": f" {opt.spelling}", "value": "on"}], value=["on"] if opt.default else []
            )
            fields.append(html.Div(box, title=opt.help))
            continue
        hint = "default" if opt.cli_default is None else str(opt.cli_default)
        box = dcc.Input(id=key, type="text", value="", placeholder=hint, debounce=True, style={"width": "8em"})
        fields.append(html.Div(html.Label([opt.spelling, " ", box]), title=opt.help))
    return html.Details([html.Summary("options"), *fields, html.Div(id="option-msg", className="msg")])


def layout(folder: Path, sid: str, max_upload_mb: float) -> Any:
    """The page for a new session `sid` (Dash calls the layout function once per page load)."""
    from dash import dcc, html

    files = list_logs(folder)
    return html.Div(
        [
            dcc.Store(id="sid", data=sid),
            dcc.Store(id="vehicle-set"),
            dcc.Interval(id="poll", interval=300, disabled=True),
            dcc.Interval(id="open-poll", interval=250, disabled=True, max_intervals=0),
            html.H1("rotorid — pick windows, identify"),
            html.Div(
                [
                    dcc.Dropdown(
                        id="log-list", options=files, placeholder=f"logs in {folder}", style={"width": "22em"}
                    ),
                    dcc.Input(
                        id="log-path",
                        type="text",
                        placeholder="file in that folder",
                        debounce=False,
                        style={"width": "18em"},
                    ),
                    html.Button("open", id="open"),
                    html.Progress(id="open-progress", title="reading the log", style={"display": "none"}),
                    dcc.Upload(
                        html.Span(f"or drop / choose a log to upload (≤ {max_upload_mb:g} MB)"),
                        id="upload",
                        className="upload",
                        max_size=int(max_upload_mb * 2**20),
                    ),
                    dcc.Dropdown(
                        id="opened",
                        options=[],
                        placeholder="opened logs: choose the one plotted",
                        clearable=False,
                        style={"width": "18em"},
                    ),
                ],
                className="row",
                style={"alignItems": "center"},
            ),
            html.Div(id="status", className="status"),
            html.Details([html.Summary("vehicle (choose it first)"), _vehicle_form()], open=True),
            html.Div(
                [
                    html.Div([_panel(r) for r in ROLES], className="grow"),
                    html.Div(
                        [
                            html.H2("log facts"),
                            html.Table(id="facts", className="facts"),
                            html.H2("windows the run uses"),
                            html.Table(id="run-windows", className="facts"),
                            html.H2("identify (delay, Eschmann et al.)"),
                            _options_form(),
                            html.Button("identify", id="identify"),
                            " ",
                            html.Progress(id="progress", value="0", max="1", style={"width": "12em"}),
                            html.Div(id="progress-text", className="msg"),
                            html.Div(id="run-status", className="status"),
                            html.Div(id="results"),
                        ],
                        className="side",
                    ),
                ],
                className="row",
            ),
            html.Div(["same as: ", html.Code(id="cli")], style={"margin": ".5em 0"}),
            html.Div(id="report"),
        ]
    )
