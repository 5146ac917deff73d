"""One identification started from the app, through the library calls `rotorid identify
--method delay` makes (`rotorid.runs.identify`: read the windows' logs for the vehicle and
identify; `write_run`: params.json, figures and report.html, atomically), run in a thread that
reports its progress, then every export format. `command_line` is the CLI call that repeats it."""

from __future__ import annotations

import shlex
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rotorid.app.state import ROLES, Session
from rotorid.errors import RotoridError
from rotorid.options import option_flag

#: export format -> file name written beside params.json
EXPORTS = {
    "toml": "vehicle.toml",
    "rotorpy": "rotorpy_params.py",
    "rltools": "rltools_dynamics.json",
    "gazebo": "gazebo.sdf",
}
#: role -> the `rotorid identify` option that takes its logs (None: the positional logs)
OPTION_NAME = {"thrust": None, "roll_pitch": "roll_pitch", "yaw": "yaw"}


def specs(session: Session, labels: bool = False) -> dict[str, list[str]]:
    """Per role, one `FILE@t0:t1,...` argument per log with windows (the log's path, or the
    name the user knows it by when `labels`)."""
    out: dict[str, list[str]] = {}
    for role in ROLES:
        out[role] = []
        for key, wins in session.windows[role].items():
            if not wins:
                continue
            entry = session.logs[key]
            name = entry.label if labels else str(entry.path)
            out[role].append(f"{name}@{','.join(f'{a:g}:{b:g}' for a, b in sorted(wins))}")
    return out


def command_line(session: Session, out: str = "results") -> str:
    """The `rotorid identify` call that repeats what the app runs."""
    args = ["rotorid", "identify", "--method", "delay", "--vehicle", session.vehicle_label]
    for role, items in specs(session, labels=True).items():
        for s in items:
            args += [s] if OPTION_NAME[role] is None else [option_flag(OPTION_NAME[role]), s]
    return shlex.join([*args, "--out", out])


@dataclass
class Job:
    """A run in progress or finished: `steps` done so far out of `total`, then the result, the
    files written (name -> path) and any error, as one line."""

    number: int
    out: Path
    command: str
    total: int
    steps: list[str] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    result: Any = None
    files: dict[str, Path] = field(default_factory=dict)
    export_errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return 1.0 if self.done else len(self.steps) / self.total


def start(session: Session) -> Job:
    """Start identifying the session's windows in a thread; refuses without thrust windows."""
    todo = specs(session)
    if not todo["thrust"]:
        raise RotoridError("set at least one thrust window (drag on the thrust panel) before identifying")
    session.runs += 1
    job = Job(session.runs, session.folder_for(f"run{session.runs}"), command_line(session), total=3)
    threading.Thread(
        target=_run, args=(job, todo, session.vehicle), daemon=True, name=f"rotorid-run-{job.number}"
    ).start()
    return job


_ONE_AT_A_TIME = threading.Lock()  # runs share the CPU and the process-wide warnings filter


def _run(job: Job, todo: dict[str, list[str]], vehicle: str) -> None:
    with _ONE_AT_A_TIME, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _identify(job, todo, vehicle)
        except RotoridError as e:
            job.error = str(e)
        except Exception as e:  # a bug, not bad input: still one line in the page, never a dead app
            job.error = f"internal error ({type(e).__name__}: {e}); please report it"
        finally:
            job.warnings = [str(w.message) for w in caught]
            job.done = True


def _identify(job: Job, todo: dict[str, list[str]], vehicle_spec: str) -> None:
    """`rotorid identify --method delay` through the same library calls: `runs.identify`, then
    `write_run` with the method's figures, then every export of the written params.json."""
    from rotorid import runs
    from rotorid.export import export_params
    from rotorid.registry import method
    from rotorid.report import write_run
    from rotorid.vehicle import Vehicle

    veh = Vehicle.load(vehicle_spec)
    n = sum(len(v) for v in todo.values())
    job.steps.append(f"read {n} log window{'s' if n > 1 else ''} and identify (delay)")
    options = {OPTION_NAME[r]: todo[r] for r in ROLES if OPTION_NAME[r] and todo[r]}
    result = runs.identify("delay", todo["thrust"], veh, options)
    job.steps.append("write figures and report")
    job.files = dict(write_run(result, job.out, method("delay").load("figures")(result)))
    job.steps.append("export")
    for fmt, name in EXPORTS.items():
        try:
            job.files[fmt] = export_params(job.files["params"], fmt, job.out / name)
        except RotoridError as e:
            job.export_errors[fmt] = str(e)
    job.result = result
