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
from rotorid.options import Option, option_flag

#: export format -> file name written beside params.json
EXPORTS = {
    "toml": "vehicle.toml",
    "rotorpy": "rotorpy_params.py",
    "rltools": "rltools_dynamics.json",
    "gazebo": "gazebo.sdf",
    "px4": "px4.params",
    "ardupilot": "ardupilot.parm",
    "ardupilot-sitl": "ardupilot_sitl_frame.json",
    "betaflight": "betaflight_cli.txt",
    "crazyflie": "crazyflie_power_distribution.yaml",
}
#: role -> the `rotorid identify` option that takes its logs (None: the positional logs)
OPTION_NAME = {"thrust": None, "roll_pitch": "roll_pitch", "yaw": "yaw"}


def form_options() -> dict[str, Option]:
    """The delay options the page's form shows: every declared one but the log roles (the
    panels set those), in declaration order (`MethodSpec.option_table`)."""
    from rotorid.registry import method

    return {k: o for k, o in method("delay").option_table().items() if not o.many}


def given_options(values: dict[str, Any]) -> dict[str, Any]:
    """The form's values (text, or True/False for a switch) that differ from their defaults, by
    name, each as the command line types it (a number for a number option); an empty text is
    the default."""
    table = form_options()
    typed = {k: _typed(table[k], v) for k, v in values.items() if v not in ("", None)}
    return {k: v for k, v in typed.items() if v != table[k].cli_default}


def _typed(opt: Option, value: Any) -> Any:
    """A form value as the command line's type for `opt` (`Option.cli_type`) takes it."""
    kind = opt.cli_type
    if isinstance(value, bool) or kind in (str, str | None):
        return value
    try:
        return (int if kind is int else float)(value)
    except ValueError:
        raise RotoridError(f"{opt.spelling} '{value}' must be a number") from None


def option_words(options: dict[str, Any]) -> list[str]:
    """`options` as `rotorid identify` arguments: `--flag VALUE`, `--flag` / `--no-flag` for a switch."""
    table = form_options()
    words: list[str] = []
    for k, v in options.items():
        flag = table[k].spelling
        words += ([flag] if v else ["--no-" + flag.removeprefix("--")]) if isinstance(v, bool) else [flag, str(v)]
    return words


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
    args = ["rotorid", "identify", "--method", "delay", "--vehicle", session.vehicle_label or "<choose one>"]
    for role, items in specs(session, labels=True).items():
        for s in items:
            args += [s] if OPTION_NAME[role] is None else [option_flag(OPTION_NAME[role]), s]
    return shlex.join([*args, *option_words(session.options), "--out", out])


def check_vehicle(session: Session) -> None:
    """Refuse a preset that cannot be the vehicle of a log the run uses (`preset_mismatch`), naming the log."""
    from rotorid.vehicle import preset_mismatch

    used = {key for role in ROLES for key, wins in session.windows[role].items() if wins}
    for key in sorted(used):
        entry = session.logs[key]
        why = preset_mismatch(session.vehicle, entry.log_format)
        if why:
            raise RotoridError(f"{Path(entry.label).name}: {why}")


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
    """Start identifying the session's windows in a thread; refuses without a chosen vehicle
    (no preset is assumed for a log) or without thrust windows."""
    if not session.vehicle:
        raise RotoridError("choose the vehicle first (under 'vehicle': a preset, or describe yours)")
    check_vehicle(session)
    todo = specs(session)
    if not todo["thrust"]:
        raise RotoridError("set at least one thrust window (drag on the thrust panel) before identifying")
    session.runs += 1
    job = Job(session.runs, session.folder_for(f"run{session.runs}"), command_line(session), total=3)
    threading.Thread(
        target=_run,
        args=(job, todo, session.vehicle, dict(session.options)),
        daemon=True,
        name=f"rotorid-run-{job.number}",
    ).start()
    return job


_ONE_AT_A_TIME = threading.Lock()  # runs share the CPU and the process-wide warnings filter


def _run(job: Job, todo: dict[str, list[str]], vehicle: str, given: dict[str, Any]) -> None:
    with _ONE_AT_A_TIME, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _identify(job, todo, vehicle, given)
        except RotoridError as e:
            job.error = str(e)
        except Exception as e:  # a bug, not bad input: still one line in the page, never a dead app
            job.error = f"internal error ({type(e).__name__}: {e}); please report it"
        finally:
            job.warnings = [str(w.message) for w in caught]
            job.done = True


def _identify(job: Job, todo: dict[str, list[str]], vehicle_spec: str, given: dict[str, Any]) -> None:
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
    options = given | {OPTION_NAME[r]: todo[r] for r in ROLES if OPTION_NAME[r] and todo[r]}
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
