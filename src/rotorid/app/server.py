"""Build and serve the Dash app of `rotorid app` on 127.0.0.1 (Werkzeug's threaded server; Dash
serves its JavaScript from the installed package, so nothing is fetched from the internet)."""

from __future__ import annotations

import re
import secrets
import signal
import threading
import uuid
import webbrowser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rotorid.app.state import AppError, Sessions
from rotorid.errors import shown

HOST = "127.0.0.1"
#: Host names the app answers to (a foreign one is a DNS-rebinding page).
LOOPBACK = ("127.0.0.1", "localhost")
#: Cookie that keeps the launch token after the first page load.
COOKIE = "rotorid_token"
#: Cookie that tells one browser's pages from another's (`Sessions` caps sessions per client).
CLIENT = "rotorid_client"
#: Largest upload `--max-upload-mb` may allow (MB): a long ULog is a few hundred.
MAX_UPLOAD_MB = 4096.0


def guard(server: Any, token: str) -> None:
    """Refuse, on the Flask `server`, every request whose Host (or Origin, when sent) is not
    this machine's loopback name — a web page that DNS-rebinds its own name to 127.0.0.1 sends
    its name — and every request without the launch's secret `token`: given once in the URL
    (`?token=`), it is kept in a same-site, HTTP-only cookie. Dash's own scripts (public
    package files) need no token."""
    import flask

    @server.before_request
    def check() -> Any:
        host = (flask.request.host or "").rpartition(":")[0] or flask.request.host
        origin = flask.request.headers.get("Origin")
        if host not in LOOPBACK or (origin is not None and urlsplit(origin).hostname not in LOOPBACK):
            return flask.Response("rotorid app: unknown Host or Origin", status=403)
        if flask.request.path.startswith("/_dash-component-suites/") and flask.request.method == "GET":
            return None
        given = flask.request.args.get("token") or flask.request.cookies.get(COOKIE) or ""
        if not secrets.compare_digest(given.encode(), token.encode()):
            return flask.Response("rotorid app: open the URL (with its token) that `rotorid app` printed", status=403)
        return None

    @server.after_request
    def remember(response: Any) -> Any:
        if flask.request.args.get("token") == token:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return response


def create_app(folder: str | Path, max_upload_mb: float = 200.0, token: str | None = None) -> tuple[Any, Sessions]:
    """The Dash app serving logs from `folder` (and uploads up to `max_upload_mb`), and its
    sessions (call `Sessions.cleanup` when done); with `token`, only requests that carry it
    (and name this machine as Host) are answered (`guard`)."""
    if not 0 < max_upload_mb <= MAX_UPLOAD_MB:  # also refuses nan
        raise AppError(f"--max-upload-mb {max_upload_mb!r} must be a number of MB in (0, {MAX_UPLOAD_MB:g}]")
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise AppError(f"{root}: not a folder; give the folder that holds your logs")
    import dash

    from rotorid.app import callbacks, layout

    sessions = Sessions()
    app = dash.Dash(
        "rotorid.app",
        title="rotorid",
        update_title=None,
        serve_locally=True,
        index_string=layout.index_string(),
        include_assets_files=False,
    )
    max_bytes = int(max_upload_mb * 2**20)
    app.server.config["MAX_CONTENT_LENGTH"] = max_bytes * 4 // 3 + 2**20  # base64 in a JSON request
    app.layout = lambda: _page(layout, root, sessions, max_upload_mb)
    _clients(app.server)
    callbacks.register(app, sessions, root, max_bytes)
    if token is not None:
        guard(app.server, token)
    return app, sessions


def _page(layout: Any, root: Path, sessions: Sessions, max_upload_mb: float) -> Any:
    """The page of a new session for the browser asking (`client_id`), or the one line why there is none."""
    from dash import html

    try:
        return layout.layout(root, sessions.new(client_id()), max_upload_mb)
    except AppError as e:
        return html.Div(shown(e), className="msg")


def client_id() -> str:
    """The browser a request comes from: its `CLIENT` cookie, else a new id that the response sets
    (`_clients`); outside a request, "" (one client)."""
    import flask

    if not flask.has_request_context():
        return ""
    given = flask.request.cookies.get(CLIENT, "")
    if re.fullmatch(r"[0-9a-f]{32}", given):
        return given
    if "client" not in flask.g:
        flask.g.client = uuid.uuid4().hex
    return flask.g.client


def _clients(server: Any) -> None:
    """Set the `CLIENT` cookie on the response that gave a browser its id."""
    import flask

    @server.after_request
    def remember(response: Any) -> Any:
        if "client" in flask.g:
            response.set_cookie(CLIENT, flask.g.client, httponly=True, samesite="Strict")
        return response


class Server:
    """The app on a Werkzeug server in a background thread (`port=0`: a free port); a context
    manager that stops the server and removes the temporary files on exit."""

    def __init__(self, folder: str | Path, port: int = 0, max_upload_mb: float = 200.0) -> None:
        import logging

        from werkzeug.serving import make_server

        if not 0 <= port <= 65535:
            raise AppError(f"--port {port} must lie in 0..65535 (0: a free port)")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
        self.token = secrets.token_urlsafe(24)  # per launch, as Jupyter's
        self.app, self.sessions = create_app(folder, max_upload_mb, self.token)
        started = False
        try:
            _warm_up()
            self._server = make_server(HOST, port, self.app.server, threaded=True)
            started = True
        except OSError as e:
            raise AppError(f"cannot listen on {HOST}:{port} ({e.strerror}); choose another --port") from None
        except SystemExit:  # werkzeug reports a port in use itself, then exits
            raise AppError(f"cannot listen on {HOST}:{port} (in use); choose another --port") from None
        finally:
            if not started:
                self.sessions.cleanup()  # a start-up error leaves no temporary folder
        self.base = f"http://{HOST}:{self._server.server_port}/"
        self.url = f"{self.base}?token={self.token}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="rotorid-app")

    def __enter__(self) -> Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
        self.sessions.cleanup()


def _warm_up() -> None:
    """Import what the first requests need now, so the first log opens as fast as the next."""
    import plotly_resampler  # noqa: F401

    import rotorid.methods.delay.pipeline
    import rotorid.report.delay  # noqa: F401
    from rotorid import runs

    runs.min_rates()


def serve(folder: str | Path, port: int = 8050, open_browser: bool = True, max_upload_mb: float = 200.0) -> None:
    """Serve until Ctrl-C or SIGTERM: print the URL (with the launch token), open the browser,
    clean up on the way out."""
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM cleans up as Ctrl-C does
    try:  # the interrupt may come at any point after the URL is out, and the server is closed first
        with Server(folder, port, max_upload_mb) as srv:
            print(f"rotorid app: {srv.url}  (logs from {Path(folder).resolve()}; Ctrl-C stops)", flush=True)
            if open_browser:
                webbrowser.open(srv.url)
            threading.Event().wait()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
