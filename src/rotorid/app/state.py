"""Per-session server state of `rotorid app`: the logs a browser tab opened, its windows per
role, its vehicle and its identification runs. Each tab gets its own random session id, so two
tabs never share logs, windows or results. Files (uploads, runs) live in one temporary folder
per app, removed when the server stops; a session evicted by `Sessions` takes its files along.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rotorid.errors import RotoridError

#: Windows of the delay method, in the CLI's order: the positional logs, --roll-pitch, --yaw.
ROLES = ("thrust", "roll_pitch", "yaw")


class AppError(RotoridError):
    """A request the app refuses (path outside FOLDER, upload too large, unknown session)."""


def resolve_in(folder: Path, name: str) -> Path:
    """`name` (relative to `folder`, or absolute) as a file inside `folder`; anything that
    resolves outside it (``..``, absolute paths elsewhere, symlinks out) is refused."""
    root = folder.resolve()
    p = (root / name).resolve()
    if not p.is_relative_to(root):
        raise AppError(f"{name}: outside the folder this app serves ({root}); copy the log into it or upload it")
    if not p.is_file():
        raise AppError(f"{name}: no such file in {root}")
    return p


def list_logs(folder: Path, limit: int = 500, depth: int = 3) -> list[str]:
    """Files under `folder` (relative paths, at most `depth` folders down, hidden ones
    skipped), sorted; the app offers these to open."""
    root = folder.resolve()
    out: list[str] = []
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and len(rel.parts) < depth)
        out += [str(rel / f) for f in sorted(files) if not f.startswith(".")]
        if len(out) >= limit:
            break
    return sorted(out)[:limit]


def safe_name(name: str) -> str:
    """A file name for an upload: its last component, with anything unusual replaced."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name.replace("\\", "/")).name).lstrip(".")
    return base or "upload"


@dataclass
class LogEntry:
    """One opened log: where it is, how the user calls it (its path, or the upload's name),
    its flights (pieces) and the per-role panels built for it; its flying spans, `info` facts
    and proposed windows once `ready` (worked out in a thread, `opening.work_out`; `error` when
    that failed), and the proposals last given to each role (`applied`)."""

    key: str
    path: Path
    label: str
    flights: list[Any]
    flying: list[tuple[float, float]] = field(default_factory=list)
    facts: list[tuple[str, str, str]] = field(default_factory=list)
    stamp: tuple[int, int] = (0, 0)  # the file's (mtime_ns, size) when read
    vehicle: str = ""  # the vehicle it was read with (readers scale motors by it)
    panels: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    error: str | None = None
    proposed: dict[str, list[tuple[float, float]]] | None = None
    applied: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    worker: threading.Thread | None = None

    @property
    def log_format(self) -> str:
        """The format the log was written in by its flight stack (a converted log's original one)."""
        return self.flights[0].log_format if self.flights else ""


@dataclass
class Session:
    """Everything one browser tab owns."""

    sid: str
    folder: Path
    logs: dict[str, LogEntry] = field(default_factory=dict)
    current: str | None = None
    windows: dict[str, dict[str, list[tuple[float, float]]]] = field(default_factory=lambda: {r: {} for r in ROLES})
    #: (log key, role) -> when the user last committed that windows box (browser ms), so a box value
    #: the page set earlier but whose request arrives later does not undo the user's edit
    typed: dict[tuple[str, str], float] = field(default_factory=dict)
    vehicle: str = ""  # a preset name or the path of the TOML the form wrote; "" until chosen
    vehicle_label: str = ""
    vehicle_key: str = ""  # the vehicle's spec and TOML text: a log read with another is read again
    options: dict[str, Any] = field(default_factory=dict)  # delay options set in the form, by name
    job: Any = None
    runs: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)
    client: str = ""  # the browser that opened it (`Sessions.new`)

    @property
    def running(self) -> bool:
        """Whether an identification of this session is in progress."""
        return self.job is not None and not self.job.done

    @property
    def log(self) -> LogEntry:
        if self.current is None:
            raise AppError("open a log first")
        return self.logs[self.current]

    def folder_for(self, what: str) -> Path:
        p = self.folder / what
        p.mkdir(parents=True, exist_ok=True)
        return p


class Sessions:
    """The sessions of one app (its browser tabs), least recently used first. A client (one
    browser) holds at most `per_client` of them: its next page drops its own least recently used
    idle one; beyond `limit` in all, the least recently used idle one of any client goes. A dropped
    session takes its files (uploads, runs) along; one whose identification is running is never
    dropped — a new page is refused instead, so no page loads (a reload loop, another client) can
    expire a running tab."""

    def __init__(self, root: Path | None = None, limit: int = 16, per_client: int = 8) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="rotorid-app-", dir=root))
        self.limit = limit
        self.per_client = per_client
        self._items: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def new(self, client: str = "") -> str:
        """A new session for a page of `client`, after dropping what the caps ask (see the class)."""
        sid = uuid.uuid4().hex
        with self._lock:
            mine = [s for s in self._items.values() if s.client == client]
            if len(mine) >= self.per_client:
                self._drop(mine, f"this browser's {len(mine)} pages are each running an identification")
            if len(self._items) >= self.limit:
                self._drop(list(self._items.values()), f"{len(self._items)} pages are each running an identification")
            self._items[sid] = Session(sid, self.root / sid, client=client)
        return sid

    def _drop(self, candidates: list[Session], busy: str) -> None:
        """Drop the least recently used idle session of `candidates` (oldest first) with its files;
        none idle: an `AppError` saying `busy`."""
        idle = next((s for s in candidates if not s.running), None)
        if idle is None:
            raise AppError(f"{busy}; wait for one to finish (or close its tab), then reload")
        del self._items[idle.sid]
        shutil.rmtree(idle.folder, ignore_errors=True)

    def get(self, sid: str | None) -> Session:
        with self._lock:
            s = self._items.get(sid or "")
            if s is None:
                raise AppError("this page's session has expired; reload the page")
            self._items.move_to_end(s.sid)
            return s

    def cleanup(self) -> None:
        """Remove every session and the temporary folder."""
        with self._lock:
            self._items.clear()
        shutil.rmtree(self.root, ignore_errors=True)
