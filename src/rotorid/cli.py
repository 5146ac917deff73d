"""The `rotorid` command line (Typer + Rich). No numerics here: commands parse arguments,
load flights through `rotorid.io`, call a method or the simulator, and hand the result to
`rotorid.report`. Every `RotoridError` becomes one red line and exit status 2.

No `from __future__ import annotations` here: Typer reads every command's signature to build
the command line, and string annotations would be evaluated again on each start."""

import functools
import inspect
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from rotorid.errors import RotoridError, shown, shown_lines

if TYPE_CHECKING:
    from rich.console import Console


def _sections(formatter: Any, sections: dict[str, list[tuple[str, str]]]) -> None:
    """Write each non-empty section of help rows (name, text)."""
    for title, rows in sections.items():
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


class _Command(TyperCommand):
    """A command whose help lists its arguments, its general options, then one section per
    help panel (`rich_help_panel`: the options of one method), as plain text: rendering help
    through Rich costs more start-up time than the whole `--help` may take."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                panel = getattr(param, "rich_help_panel", None) or "Options"
                sections.setdefault("Arguments" if param.param_type_name == "argument" else panel, []).append(record)
        _sections(formatter, sections)


class _Group(TyperGroup):
    """A command group whose help lists each command's first help paragraph whole."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with the first paragraph of its help, whole (wrapped, not cut)."""
        shown = [(n, c) for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) and not c.hidden]
        rows = [(n, " ".join((c.help or "").split("\n\n")[0].split())) for n, c in shown]
        _sections(formatter, {"Commands": rows})


class _TopGroup(_Group):
    """`rotorid --help` also lists the registered methods and log formats (plugins included)."""

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        _sections(formatter, registries())


_PLAIN = {"rich_markup_mode": None, "context_settings": {"max_content_width": 100}}
app = typer.Typer(
    name="rotorid",
    help="Identify a multirotor's physical parameters from its own flight logs.",
    cls=_TopGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    **_PLAIN,  # type: ignore[arg-type]
)


@functools.cache
def console() -> "Console":
    """The standard output console (Rich is imported on first use, not for `--help`)."""
    from rich.console import Console

    return Console()


@functools.cache
def err() -> "Console":
    """The standard error console."""
    from rich.console import Console

    return Console(stderr=True)


F = TypeVar("F", bound=Callable[..., Any])


def command(
    name: str | None = None, hidden: bool = False, renamed_from: str | None = None, on: typer.Typer | None = None
) -> Callable[[F], F]:
    """Register a command (on `app`, or the sub-command group `on`) whose input errors print one
    line and exit 2 (no traceback); with `renamed_from`, also register that old name as a
    hidden alias that says the new one."""

    def deco(fn: F) -> F:
        (on or app).command(name, hidden=hidden, cls=_Command)(_guarded(fn))
        if renamed_from:
            new = name or fn.__name__.replace("_", "-")
            app.command(renamed_from, hidden=True, cls=_Command)(
                _guarded(fn, note=f"`rotorid {renamed_from}` is now `rotorid {new}`")
            )
        return fn

    return deco


def _guarded(fn: F, note: str | None = None) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if note:
            err().print(f"[yellow]note:[/] {shown(note)}", highlight=False, soft_wrap=True)
        if kwargs.get("no_cache"):  # for this process and the workers it starts (`NoCache`)
            os.environ["ROTORID_NO_CACHE"] = "1"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return fn(*args, **kwargs)
            except RotoridError as e:
                err().print(f"[bold red]error:[/] {shown(e)}", highlight=False, soft_wrap=True)
                raise typer.Exit(2) from None
            finally:  # once each: a log read for several roles warns for each reading
                for text in dict.fromkeys(str(w.message) for w in caught):
                    err().print(f"[yellow]warning:[/] {shown(text)}", highlight=False, soft_wrap=True)

    return wrapper  # type: ignore[return-value]


def registries() -> dict[str, list[tuple[str, str]]]:
    """The registered methods (with their papers) and log formats (suffixes, read/write), as
    rows of two help sections."""
    from rotorid.io import formats
    from rotorid.registry import methods

    return {
        "Methods (rotorid identify --method NAME)": [(m.name, m.title) for m in methods().values()],
        "Log formats (read by content or suffix)": [
            (f.name, f"{' '.join(s or 'no suffix' for s in f.suffixes)}; {'read/write' if f.writable else 'read'}")
            for f in formats().values()
        ],
    }


def _version(value: bool) -> None:
    if value:
        from rotorid import __version__

        console().print(f"rotorid {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", help="Print rotorid's version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Identify a multirotor's physical parameters from its own flight logs."""


AllowCorrupt = Annotated[bool, typer.Option(help="Decode the intact part of corrupt logs (with a warning).")]
#: Every command that reads logs takes it; `_guarded` turns the decoded-log cache off for the run.
NoCache = Annotated[
    bool, typer.Option(help="Decode every log afresh: neither read nor write the decoded-log cache (rotorid.io.cache).")
]
Logs = Annotated[list[str], typer.Argument(help="Log files, each optionally with windows: FILE@t0:t1[,t2:t3] (s).")]
_READING = "Reading the log (the reader's options)"
ImuSource = Annotated[
    str | None,
    typer.Option(
        help="ArduPilot: 'imu' (IMU messages) or 'batch' (the batch sampler's sensor-rate ISBH/ISBD samples).",
        rich_help_panel=_READING,
    ),
]
ImuIndex = Annotated[
    int | None,
    typer.Option("--imu", help="ArduPilot: the IMU instance N (default: the first).", rich_help_panel=_READING),
]
MotorPoles = Annotated[
    int | None,
    typer.Option(help="Betaflight: the motors' magnet count, for eRPM -> rotor speed.", rich_help_panel=_READING),
]
PwmRange = Annotated[
    str | None,
    typer.Option(
        help="PX4, ArduPilot: PWM range MIN,MAX (µs) when the log's parameters lack it.", rich_help_panel=_READING
    ),
]


def _reading(imu_source: str | None, imu: int | None, motor_poles: int | None, pwm_range: str | None) -> dict[str, Any]:
    """The reader options given (`rotorid.io.read`): a reader that does not take one refuses it."""
    from rotorid.options import floats

    given = {"imu_source": imu_source, "imu": imu, "motor_poles": motor_poles}
    given["pwm_range"] = floats(pwm_range, 2, "--pwm-range")
    return {k: v for k, v in given.items() if v is not None}


def _reading_words(reading: dict[str, Any]) -> list[str]:
    """The flags that give `reading` (`_reading`'s output) back, for a printed command."""
    text = {k: ",".join(f"{x:g}" for x in v) if isinstance(v, tuple) else str(v) for k, v in reading.items()}
    return [w for k, v in text.items() for w in (f"--{k.replace('_', '-')}", v)]


def _given(ctx: typer.Context, names: tuple[str, ...]) -> dict[str, Any]:
    """The options the user typed (not left at their defaults), by name."""
    typed = ("COMMANDLINE", "ENVIRONMENT")  # by name: Typer may vendor its own click
    return {n: ctx.params[n] for n in names if getattr(ctx.get_parameter_source(n), "name", None) in typed}


def method_parameters() -> list[inspect.Parameter]:
    """The `rotorid identify` options of every registered method (plugins included), from their
    declarations (`MethodSpec.option_table`), each once: a method's own under its help panel,
    one several methods take (`Option.shared`) with the general options."""
    from rotorid.registry import methods

    owner: dict[str, Any] = {}
    for m in methods().values():
        for name, opt in m.option_table().items():
            owner.setdefault(name, (opt, m))
    out = []
    for name, (opt, m) in owner.items():
        panel = None if opt.shared else f"--method {m.name} ({m.title})"
        info = typer.Option(*filter(None, [opt.flag]), help=opt.help, rich_help_panel=panel)
        kind = inspect.Parameter.KEYWORD_ONLY
        out.append(inspect.Parameter(name, kind, default=opt.cli_default, annotation=Annotated[opt.cli_type, info]))
    return out


class _WithMethodOptions:
    """A command function whose signature, as Typer reads it, ends with every method's options
    (`method_parameters`), which it takes as keywords: made each time the command line is built
    (a plugin registered since adds its options), not on import (it loads the plugins)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fn)

    @property
    def __signature__(self) -> inspect.Signature:
        own = inspect.signature(self.__wrapped__)  # type: ignore[attr-defined]
        fixed = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        return own.replace(parameters=fixed + method_parameters())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)  # type: ignore[attr-defined]


@command()
@_WithMethodOptions
def identify(
    ctx: typer.Context,
    logs: Logs,
    method: Annotated[str, typer.Option(help="Method: see the panels below and `rotorid info`.")],
    vehicle: Annotated[
        str, typer.Option(help="Preset name (crazyflie, iris, x500, quad-x, quad-plus) or vehicle .toml.")
    ],
    out: Annotated[
        Path, typer.Option(help="Output folder for params.json, report.html and figures (replaced whole).")
    ] = Path("results"),
    allow_corrupt: AllowCorrupt = False,
    no_cache: NoCache = False,
    imu_source: ImuSource = None,
    imu: ImuIndex = None,
    motor_poles: MotorPoles = None,
    pwm_range: PwmRange = None,
    **options: Any,
) -> None:
    """Identify parameters from flight logs and write params.json, report.html and figures."""
    from rotorid import runs
    from rotorid.registry import method as spec_of
    from rotorid.report import check_output, write_run
    from rotorid.vehicle import Vehicle

    spec = spec_of(method)
    given = _given(ctx, tuple(options))
    runs.refuse_foreign(method, list(runs.split_mass(given)[0]))  # before any reading or writing
    check_output(out, run=True)  # a bad --out fails now, not after the identification
    veh = Vehicle.load(vehicle)
    reading = _reading(imu_source, imu, motor_poles, pwm_range)
    with console().status(f"identifying ({method})…"):
        result = runs.identify(method, logs, veh, given, allow_corrupt=allow_corrupt, reading=reading)
    written = write_run(result, out, spec.load("figures")(result))
    console().print(shown_lines(result.summary()), soft_wrap=True)  # a table row is one line, however narrow
    console().print(f"wrote [bold]{shown(written['report'])}[/] and {len(written) - 1} more files in {shown(out)}")


@command(renamed_from="export-params")
def export(
    params: Annotated[str, typer.Argument(help="params.json written by `rotorid identify`.")],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="toml (rotorid vehicle), rotorpy (quad_params .py), rltools (dynamics JSON), gazebo (SDF motor models), "
            "or the firmware's own parameters: px4 (.params), ardupilot (.parm), ardupilot-sitl (frame JSON), "
            "betaflight (CLI set), crazyflie (persistent-parameter YAML).",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="File to write.")] = None,
    vehicle: Annotated[
        str | None,
        typer.Option(help="Base vehicle (preset or .toml) the run used; default: the one stored in params.json."),
    ] = None,
    max_rotor_speed: Annotated[
        float | None,
        typer.Option(help="Rotor speed at full command (rad/s), for rotorpy/gazebo when commands are normalized."),
    ] = None,
    config: Annotated[
        str | None, typer.Option(help="Mass configuration of a combined tls result (e.g. B); default: the first.")
    ] = None,
    allow_poor: Annotated[
        bool,
        typer.Option(
            "--allow-poor",
            help="Write parameters the run calls poorly determined or not identifiable (the file says so).",
        ),
    ] = False,
    to: Annotated[Path | None, typer.Option(hidden=True)] = None,
    window: Annotated[str | None, typer.Option(hidden=True)] = None,
    allow_corrupt: Annotated[bool, typer.Option(hidden=True)] = False,
) -> None:
    """Export identified parameters for rotorid's simulator, RotorPy, RLtools, Gazebo, or the firmware (PX4, ArduPilot, Betaflight, Crazyflie)."""
    from rotorid.export import export_params as run

    if to is not None:  # the old `rotorid export LOG --to FILE`, now `convert`
        err().print("[yellow]note:[/] `rotorid export LOG --to FILE` is now `rotorid convert`", highlight=False)
        return convert(params, to, window, allow_corrupt)
    if fmt is None or out is None:
        raise RotoridError("rotorid export needs --format FORMAT and --out FILE (see `rotorid export --help`)")
    written = run(
        Path(params), fmt, out, vehicle=vehicle, max_rotor_speed=max_rotor_speed, config=config, allow_poor=allow_poor
    )
    console().print(f"wrote [bold]{shown(written)}[/] ({shown(fmt)})")


@command()
def demo(
    out: Annotated[Path, typer.Option(help="Output folder for report.html and one folder per method.")] = Path(
        "demo-out"
    ),
    seed: Annotated[int, typer.Option(help="Random seed of the simulated flights.")] = 0,
) -> None:
    """Simulate the built-in scenarios, identify them with every method, write OUT/report.html."""
    from rotorid.demo import run

    run(out, seed=seed, console=console())


def _override_value(text: str) -> Any:
    """A --set value: true/false, a number, or comma-separated numbers."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise RotoridError(f"--set value '{text}' must be true, false, a number or comma-separated numbers") from None
    return vals[0] if len(vals) == 1 else tuple(vals)


@command()
def simulate(
    scenario: Annotated[
        str,
        typer.Argument(
            help="eschmann-crazyflie, kwon-payload, six-config-a, six-config-b (each also -mismatch), or an ArduPilot "
            "System ID chirp: chirp-roll, chirp-pitch, chirp-yaw, chirp-thrust."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Output folder: one log per flight, truth.json, vehicle TOMLs.")],
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same flights).")] = 0,
    duration: Annotated[float | None, typer.Option(help="Seconds per flight (default: the paper's).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="parquet, csv, ulog or dataflash.")] = "parquet",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Scenario override NAME=VALUE, e.g. tm=0.03 (repeatable).")
    ] = None,
) -> None:
    """Simulate a named paper scenario with ground truth.

    Writes each flight, truth.json, vehicle.toml (what a user knows) and true_vehicle.toml, each atomically. A
    flight is simulated while its Parquet or CSV file is written, a piece at a time, not held whole in memory."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from rotorid.io import write, write_pieces
    from rotorid.runs import split_kv
    from rotorid.sim import scenarios
    from rotorid.sim.simulator import Streamed

    suffix = {"parquet": ".parquet", "csv": ".csv", "ulog": ".ulg", "dataflash": ".bin"}.get(fmt)
    if suffix is None:
        raise RotoridError(f"--format '{fmt}' must be parquet, csv, ulog or dataflash")
    overrides = {k: _override_value(v) for k, v in split_kv(set_ or [], "--set").items()}
    scenarios.options(scenario, duration=duration, **overrides)  # check before writing anything
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RotoridError(f"{out}: cannot write here ({e.strerror}); choose another output folder") from None
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(), console=err()) as bar:
        tasks: dict[str, Any] = {}

        def progress(flight: str, fraction: float) -> None:
            if flight not in tasks:
                tasks[flight] = bar.add_task(f"{scenario}/{flight}", total=1.0)
            bar.update(tasks[flight], completed=fraction)

        # lazy: a flight that can be is simulated while its file is written, a piece at a time
        sc = scenarios.run(scenario, seed=seed, progress=progress, duration=duration, lazy=True, **overrides)
        writing = bar.add_task(f"writing {len(sc.flights)} {fmt} file(s)", total=len(sc.flights))
        written = []
        for name, f in sc.flights.items():
            path = out / f"{name}{suffix}"
            written.append(write_pieces(f.pieces(), path) if isinstance(f, Streamed) else write(f, path))
            bar.advance(writing)
    sc.vehicle.save(out / "vehicle.toml")
    sc.true_vehicle.save(out / "true_vehicle.toml")
    sc.truth.save(out / "truth.json")
    console().print(
        f"wrote {shown(', '.join(p.name for p in written))}, vehicle.toml, true_vehicle.toml, truth.json in {shown(out)}"
    )


@command()
def validate(
    params: Annotated[Path, typer.Argument(help="params.json written by `rotorid identify` (any method).")],
    logs: Logs,
    vehicle: Annotated[
        str | None, typer.Option(help="Base vehicle (preset or .toml); default: the one stored in params.json.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Output folder for validation.json and figures.")] = Path("validation"),
    config: Annotated[
        str | None, typer.Option(help="Mass configuration of a combined tls result to validate (e.g. B).")
    ] = None,
    source: Annotated[
        str | None, typer.Option(help="Motion data from 'imu' or 'mocap' (default: the result's, else imu).")
    ] = None,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay",
            help="Also drive the model with the logged motor commands over short horizons, re-initialised from the log, and score the body rates.",
        ),
    ] = False,
    horizon: Annotated[float, typer.Option(help="Replay horizon (s), 0.2 to 1.")] = 0.5,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit with status 1 when the verdict is FAIL (for scripts).")
    ] = False,
    allow_corrupt: AllowCorrupt = False,
    no_cache: NoCache = False,
) -> None:
    """Cross-validate identified parameters on held-out flights (Six et al. Sec. IV-B4, Table III).

    Prints a PASS/FAIL verdict (thresholds in the README, "Validation"); writes validation.json,
    the figures and report.html into OUT (replaced whole)."""
    from rich.table import Table

    from rotorid.io import load
    from rotorid.report import check_output
    from rotorid.report.validate import replay_rows, rows, write_validation
    from rotorid.result import Result
    from rotorid.runs import provenance
    from rotorid.validate import overlaps
    from rotorid.validate import validate as run
    from rotorid.vehicle import Vehicle

    check_output(out, run=True)
    result = Result.load(params)
    base = Vehicle.load(vehicle) if vehicle else None
    flights = [f for s in logs for f in load(s, vehicle=base, allow_corrupt=allow_corrupt)]
    held_out = provenance(logs)
    overlap = overlaps(result, held_out)
    for text in overlap:
        warnings.warn(text, stacklevel=1)
    with console().status("validating…"):
        val = run(result, flights, base, config=config, source=source, horizon=horizon if replay else None)
    table = Table(title=f"cross-validation of {shown(params)} ({shown(result.method)})")
    for col in ("channel", "RMSE", "R²", "wrench", "model error %"):
        table.add_column(col, justify="right")
    for r in rows(val):
        table.add_row(*(shown(r[k]) for k in ("channel", "rmse", "r2", "wrench", "norm")))
    console().print(table)
    if val.replay is not None:
        rt = Table(title=f"replay over {val.replay.horizon:g} s horizons, re-initialised from the log")
        for col in ("channel", "RMSE", "R²", "holding the rate"):
            rt.add_column(col, justify="right")
        for r in replay_rows(val):
            rt.add_row(r["channel"], r["rmse"], r["r2"], r["hold"])
        console().print(rt)
    for n in val.notes:
        console().print(f"note: {shown(n)}")
    style = "bold green" if val.verdict.passed else "bold red"
    console().print(f"[{style}]verdict:[/] {shown(val.verdict.line)}", highlight=False, soft_wrap=True)
    val.notes[:0] = overlap  # the report says it too
    written = write_validation(val, result, out, str(params), held_out)
    console().print(f"wrote [bold]{shown(written['report.html'])}[/], validation.json and figures in {shown(out)}")
    if exit_code and not val.verdict.passed:
        raise typer.Exit(1)


def _registries() -> None:
    """The method and format registries as two tables."""
    from rich.table import Table

    from rotorid.io import formats
    from rotorid.registry import methods

    tab = Table(title="methods (rotorid identify --method NAME)", title_justify="left")
    for col in ("method", "paper"):
        tab.add_column(col)
    for m in methods().values():
        tab.add_row(m.name, m.paper)
    console().print(tab)
    tab = Table(title="log formats (read by content or suffix; write by suffix)", title_justify="left")
    for col in ("format", "suffixes", "writes"):
        tab.add_column(col)
    for f in formats().values():
        tab.add_row(f.name, " ".join(x or "(none)" for x in f.suffixes), "yes" if f.writable else "no")
    console().print(tab)


@command()
def info(
    logs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Log files, each optionally with windows: FILE@t0:t1[,t2:t3] (s); none: what rotorid reads."
        ),
    ] = None,
    vehicle: Annotated[
        str | None,
        typer.Option(
            help="Preset or vehicle .toml: scales the excitation thresholds to its size, goes into the command."
        ),
    ] = None,
    threshold: Annotated[
        list[str] | None,
        typer.Option(help="Excitation threshold AXIS=EXCITED,WEAK (roll, pitch, yaw in rad/s², thrust std/mean)."),
    ] = None,
    allow_corrupt: AllowCorrupt = False,
    imu_source: ImuSource = None,
    imu: ImuIndex = None,
    motor_poles: MotorPoles = None,
    pwm_range: PwmRange = None,
    no_cache: NoCache = False,
) -> None:
    """Judge each log: rates against each method's minimum, armed and flown, excitation per segment, the windows found per role and a ready-to-run identify command.

    Rates are checked against every method that reads the channel, with the fix (e.g. PX4's SDLOG_PROFILE).

    Excitation thresholds scale with --vehicle (its arm length) and can be set with --threshold.

    Without logs: the methods and log formats rotorid knows (plugins included)."""
    from rotorid import excitation, infoview, runs
    from rotorid.io import load
    from rotorid.options import floats
    from rotorid.vehicle import Vehicle

    if not logs:
        return _registries()
    veh = Vehicle.load(vehicle) if vehicle else None
    limits = excitation.thresholds_for(
        veh,
        {k: floats(v, 2, f"--threshold {k}") for k, v in runs.split_kv(threshold or [], "--threshold").items()},
    )
    reading = _reading(imu_source, imu, motor_poles, pwm_range)
    mins = runs.min_rates()
    judged = {}
    for spec in logs:
        judged[spec] = infoview.analyse(
            spec, load(spec, vehicle=veh, allow_corrupt=allow_corrupt, **reading), veh, limits, mins
        )
        for part in judged[spec].parts:
            console().print(part)
    for line in infoview.closing(judged, limits, veh, vehicle, _reading_words(reading)):
        console().print(shown(line), highlight=False, soft_wrap=True)


vehicle_app = typer.Typer(
    help="Describe your vehicle: `rotorid vehicle init` writes a commented TOML to start from.",
    cls=_Group,
    **_PLAIN,  # type: ignore[arg-type]
)
app.add_typer(vehicle_app, name="vehicle")


@command("init", on=vehicle_app)
def vehicle_init(
    layout: Annotated[
        str, typer.Option(help="quad-x, quad-plus, hex-x, hex-plus, octo-x, octo-plus or y6 (custom: edit the TOML).")
    ],
    arm: Annotated[float, typer.Option(help="Arm length (m): body centre to each rotor axis.")],
    mass: Annotated[float, typer.Option(help="Mass (kg) as flown, battery included.")],
    out: Annotated[Path, typer.Option(help="TOML file to write.")] = Path("vehicle.toml"),
    motor_input: Annotated[
        str, typer.Option(help="What the log's motor channel holds: normalized (0..1, PX4), rad_s or pwm_us.")
    ] = "normalized",
    cmd_range: Annotated[
        str | None, typer.Option(help="Motor command range MIN,MAX in the motor_input unit (e.g. 1000,2000).")
    ] = None,
    order: Annotated[
        str, typer.Option(help="Motor numbering: px4, ardupilot, betaflight or sequential (clockwise from the front).")
    ] = "px4",
    motor1_spin: Annotated[
        str | None, typer.Option(help="Spin of motor 1 seen from above, ccw or cw (default: the order's).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name shown in reports (default: the layout).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing --out file.")] = False,
) -> None:
    """Write a commented vehicle TOML (units, frame, motor-order diagram) for --vehicle."""
    from rotorid.options import floats
    from rotorid.util import atomic_write_text
    from rotorid.vehicle import build_vehicle, diagram

    spins = {"ccw": -1, "cw": 1, None: None}
    if motor1_spin not in spins:
        raise RotoridError(f"--motor1-spin '{motor1_spin}' must be ccw or cw")
    rng = floats(cmd_range, 2, "--cmd-range")
    v = build_vehicle(layout, arm, mass, motor_input, rng, order, spins[motor1_spin], name)  # type: ignore[arg-type]
    if out.is_dir() or (out.exists() and not out.is_file()):
        raise RotoridError(
            f"--out {out} is a folder or special file; give the TOML file to write, e.g. {out}/vehicle.toml"
        )
    if out.exists() and not force:
        raise RotoridError(f"{out} exists; give --force to overwrite it or choose another --out")
    atomic_write_text(out, v.to_commented_toml())
    console().print(
        f"wrote [bold]{shown(out)}[/]: {shown(v.name)}, {v.n_rotors} rotors, {shown(order)} motor order, {v.mass:g} kg"
    )
    console().print("\n".join(ln.removeprefix("#") for ln in diagram(v)), highlight=False)
    console().print(
        f"check the motor numbers and spins, then: rotorid identify --vehicle {shown(out)} ...", highlight=False
    )


@command()
def convert(
    log: Annotated[str, typer.Argument(help="Log file, optionally with one window: FILE@t0:t1 (s).")],
    to: Annotated[
        Path, typer.Option(help="Output file; its suffix picks the format: .csv or .parquet (interchange), .ulg, …")
    ],
    window: Annotated[str | None, typer.Option(help="Time window t0:t1 in seconds of the log's clock.")] = None,
    allow_corrupt: AllowCorrupt = False,
    imu_source: ImuSource = None,
    imu: ImuIndex = None,
    motor_poles: MotorPoles = None,
    pwm_range: PwmRange = None,
    no_cache: NoCache = False,
) -> None:
    """Convert any readable log (or one window of it) to CSV, Parquet or another writable format, atomically."""
    from rotorid.io import load, parse_spec, writable, write

    if to.suffix.lower() not in writable():
        raise RotoridError(f"--to {to}: choose a file ending in {', '.join(writable())}")
    spec = parse_spec(log)
    if window is not None:
        if spec.windows:
            raise RotoridError(f"give the window either as {log} or as --window, not both")
        spec = parse_spec(f"{log}@{window}")
        if not spec.windows:
            raise RotoridError(f"--window '{window}' is not of the form t0:t1 (seconds)")
    flights = load(spec, allow_corrupt=allow_corrupt, **_reading(imu_source, imu, motor_poles, pwm_range))
    if len(flights) != 1:
        raise RotoridError(
            f"{spec} gives {len(flights)} flights (windows or pieces); convert one at a time with --window t0:t1"
        )
    write(flights[0], to)
    f = flights[0]
    console().print(f"wrote [bold]{shown(to)}[/] ({len(f.t)} rows, {f.duration:.2f} s, {', '.join(f.channels)})")


@command()
def report(
    run: Annotated[Path, typer.Argument(help="Folder written by `rotorid identify` (params.json, diagnostics.npz).")],
) -> None:
    """Draw a saved run's figures and report.html again from its files alone (no logs needed)."""
    from rotorid.report import redraw

    written = redraw(run)
    console().print(f"wrote [bold]{shown(written['report'])}[/] and {len(written) - 1} more files in {shown(run)}")


@command()
def compare(
    runs: Annotated[list[Path], typer.Argument(help="Two or more run folders (or their params.json) of one vehicle.")],
    out: Annotated[Path | None, typer.Option(help="Also write the comparison as JSON to this file.")] = None,
) -> None:
    """Set several runs' estimates of the same quantities side by side (delay, tls, online, freq):
    each pair's z over the combined σ, and beyond 3 combined σ which run to trust and why."""
    from rotorid.agreement import as_json, compare_runs, context, load_runs
    from rotorid.agreementview import agreement_lines

    results = load_runs(runs)
    rows, notes = compare_runs(results), context(results)
    for line in agreement_lines(rows, notes, list(results)):
        console().print(line, highlight=False)
    if out is not None:
        from rotorid.util import atomic_write_text

        atomic_write_text(out, as_json(rows, notes))
        console().print(f"wrote [bold]{shown(out)}[/]")


@command()
def batch(
    manifest: Annotated[
        Path, typer.Argument(help="CSV or TOML table of runs: vehicle, date, method, airframe, logs (see README).")
    ],
    out: Annotated[Path, typer.Option(help="Output folder: params.parquet, runs.csv, fleet.html, runs/.")] = Path(
        "fleet"
    ),
    workers: Annotated[int | None, typer.Option(help="Local Dask worker processes (default: one per core).")] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="Address of an existing Dask scheduler, e.g. tcp://host:8786.")
    ] = None,
    allow_corrupt: AllowCorrupt = False,
    no_cache: NoCache = False,
    resume: Annotated[
        bool, typer.Option(help="Keep the rows an interrupted batch into --out finished; run the rest.")
    ] = False,
) -> None:
    """Identify a fleet on Dask: one run per manifest row, a Parquet table of every parameter
    per vehicle and date, and fleet.html with each vehicle's parameters over time and drifts."""
    from rotorid.batch import run_manifest

    run_manifest(
        manifest,
        out,
        workers=workers,
        scheduler=scheduler,
        allow_corrupt=allow_corrupt,
        console=console(),
        resume=resume,
    )


@command("app")
def app_(
    folder: Annotated[Path, typer.Argument(help="Folder whose logs the page may open (nothing outside it).")] = Path(
        "."
    ),
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8050,
    browser: Annotated[bool, typer.Option(help="Open the page in the default browser.")] = True,
    max_upload_mb: Annotated[float, typer.Option(help="Largest log the page accepts as an upload (MB).")] = 200.0,
    no_cache: NoCache = False,
) -> None:
    """Open a local web page: pick windows on the plots, describe the vehicle, identify, download."""
    from rotorid.app import serve

    serve(folder, port=port, open_browser=browser, max_upload_mb=max_upload_mb)
