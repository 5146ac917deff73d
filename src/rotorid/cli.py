"""The `rotorid` command line (Typer + Rich). No numerics here: commands parse arguments,
load flights through `rotorid.io`, call a method or the simulator, and hand the result to
`rotorid.report`. Every `RotoridError` becomes one red line and exit status 2."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from rotorid.errors import RotoridError

app = typer.Typer(
    name="rotorid",
    help="Identify a multirotor's physical parameters from its own flight logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def command(fn: F) -> F:
    """Register a command whose input errors print one line and exit 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return fn(*args, **kwargs)
            except RotoridError as e:
                err.print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
                raise typer.Exit(2) from None
            finally:
                for w in caught:
                    err.print(f"[yellow]warning:[/] {w.message}", highlight=False, soft_wrap=True)

    app.command()(wrapper)
    return fn


def split_kv(items: list[str], what: str) -> dict[str, str]:
    """Parse repeated NAME=VALUE options."""
    out = {}
    for it in items:
        name, sep, value = it.partition("=")
        if not sep or not name or not value:
            raise RotoridError(f"{what} '{it}' must look like NAME=VALUE")
        out[name] = value
    return out


Logs = Annotated[list[str], typer.Argument(help="Log files, each optionally with windows: FILE@t0:t1[,t2:t3] (s).")]


def _inputs(specs: list[str]) -> list[dict[str, Any]]:
    """Provenance of the log arguments: path, SHA-256 and windows."""
    from rotorid.io import parse_spec
    from rotorid.util import sha256

    out = []
    for s in specs:
        ls = parse_spec(s)
        out.append(
            {
                "path": str(ls.path),
                "sha256": sha256(ls.path) if ls.path.is_file() else None,
                "windows": list(ls.windows),
            }
        )
    return out


def _load_all(specs: list[str], allow_corrupt: bool, vehicle: Any = None) -> list:
    """Every flight (window) of the log arguments; the vehicle's motor input kind and rotor
    count reach the readers that need them (PX4 PWM scaling), and flights whose motor channels
    cannot mean what the vehicle declares are refused."""
    from rotorid.io import check_motor_units, load

    if vehicle is None:
        return [f for s in specs for f in load(s, allow_corrupt=allow_corrupt)]
    hints: dict[str, Any] = {"motors": vehicle.n_rotors}
    if vehicle.motor_input != "rad_s":  # a log's commands are never rotor speeds: those come from ESC rpm
        hints["motor_input"] = vehicle.motor_input
    return [
        check_motor_units(f, vehicle.motor_input)
        for s in specs
        for f in load(s, allow_corrupt=allow_corrupt, hints=hints)
    ]


def _floats(text: str | None, n: int, what: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise RotoridError(f"{what} '{text}' must be {n} comma-separated numbers") from None
    if len(vals) != n:
        raise RotoridError(f"{what} '{text}' must be {n} comma-separated numbers")
    return vals


@command
def identify(
    logs: Logs,
    method: Annotated[str, typer.Option(help="delay (Eschmann et al.), tls (Six et al.) or online (Kwon et al.).")],
    vehicle: Annotated[
        str, typer.Option(help="Preset name (crazyflie, iris, x500, quad-x, quad-plus) or vehicle .toml.")
    ],
    out: Annotated[Path, typer.Option(help="Output folder for params.json, report.html and figures.")] = Path(
        "results"
    ),
    allow_corrupt: Annotated[
        bool, typer.Option(help="Decode the intact part of corrupt logs (with a warning).")
    ] = False,
    # -- delay ---------------------------------------------------------------------------
    roll_pitch: Annotated[list[str] | None, typer.Option(help="[delay] Roll/pitch excitation log(s).")] = None,
    yaw: Annotated[list[str] | None, typer.Option(help="[delay] Yaw excitation log(s).")] = None,
    tm_prior: Annotated[str | None, typer.Option(help="[delay] Log-normal prior on T_m: MEAN,SIGMA (s).")] = None,
    asymmetric_tm: Annotated[bool, typer.Option(help="[delay] Separate rising and falling T_m.")] = False,
    per_motor: Annotated[bool, typer.Option(help="[delay] One thrust curve per motor.")] = False,
    exponents: Annotated[str, typer.Option(help="[delay] Thrust-curve exponents, e.g. 0,1,2 or 2.")] = "0,1,2",
    izz_ratio: Annotated[float, typer.Option(help="[delay] C_xy->z in I_zz = C (I_xx+I_yy)/2.")] = 1.832,
    inertia_param: Annotated[str, typer.Option(help="[delay] auto, direct, reciprocal or tls.")] = "auto",
    cutoff_hz: Annotated[
        float, typer.Option(help="[delay] Zero-phase low-pass (Hz) for torque and angular acceleration.")
    ] = 20.0,
    tm_bounds: Annotated[str, typer.Option(help="[delay] T_m search range LO,HI (s).")] = "0.002,0.5",
    # -- tls -----------------------------------------------------------------------------
    config: Annotated[list[str] | None, typer.Option(help="[tls] Extra mass configuration NAME=LOG[@windows].")] = None,
    mass: Annotated[list[str] | None, typer.Option(help="[tls] Measured mass of a configuration NAME=KG.")] = None,
    weight: Annotated[list[str] | None, typer.Option(help="[tls] Weight k_w of a configuration NAME=K_W.")] = None,
    config_b: Annotated[list[str] | None, typer.Option(help="[tls] Shorthand for --config B=LOG.")] = None,
    mass_b: Annotated[float | None, typer.Option(help="[tls] Shorthand for --mass B=KG.")] = None,
    source: Annotated[str, typer.Option(help="[tls] Motion data from 'imu' or 'mocap'.")] = "imu",
    tm: Annotated[float | None, typer.Option(help="[tls] Motor time constant (s) for delay-aware regressors.")] = None,
    r_sigma: Annotated[float, typer.Option(help="[tls] Essential-parameter threshold max/min %σ.")] = 250.0,
    band: Annotated[
        str | None, typer.Option(help="[tls] Band-pass LOW,HIGH in Hz (default chosen from the rate).")
    ] = None,
    weighted: Annotated[bool, typer.Option(help="[tls] Weight each wrench row block by its residual σ.")] = True,
    speed: Annotated[
        str, typer.Option(help="[tls] Rotor terms from auto, cmd (the paper) or rotor_speed (measured).")
    ] = "auto",
    mocap_delay: Annotated[float, typer.Option(help="[tls] Seconds the mocap pose lags the commands.")] = 0.0,
    # -- online --------------------------------------------------------------------------
    variant: Annotated[str, typer.Option(help="[online] kwon (the paper's method), rls or rls-lpf.")] = "kwon",
    rate_hz: Annotated[
        float, typer.Option(help="[online] Estimator rate; faster logs are block-averaged (0: every sample).")
    ] = 100.0,
    n_sigma: Annotated[float, typer.Option(help="[online] Correction-law threshold |ω̂| >= n_sigma·σ.")] = 1.0,
    a_z_allow: Annotated[float, typer.Option(help="[online] Enable threshold on vertical acceleration (m/s²).")] = 0.1,
) -> None:
    """Identify parameters from flight logs and write params.json, report.html and figures."""
    from rotorid.report import check_output, write_run
    from rotorid.vehicle import Vehicle

    check_output(out)  # a bad --out fails now, not after the identification
    veh = Vehicle.load(vehicle)
    if method == "delay":
        from rotorid.methods import delay
        from rotorid.report import delay as figs

        settings = delay.DelaySettings(
            tm_prior=_floats(tm_prior, 2, "--tm-prior"),
            asymmetric_tm=asymmetric_tm,
            per_motor=per_motor,
            exponents=tuple(exponents.split(",")),
            izz_ratio=izz_ratio,
            inertia_param=inertia_param,
            cutoff_hz=cutoff_hz,
            tm_bounds=_floats(tm_bounds, 2, "--tm-bounds"),
        )
        with console.status("identifying (delay)…"):
            result = delay.identify(
                _load_all(logs, allow_corrupt, veh),
                veh,
                roll_pitch=_load_all(roll_pitch or [], allow_corrupt, veh),
                yaw=_load_all(yaw or [], allow_corrupt, veh),
                settings=settings,
            )
        specs = [*logs, *(roll_pitch or []), *(yaw or [])]
    elif method == "tls":
        from rotorid.methods import tls
        from rotorid.report import tls as figs

        cfg = {"A": logs, **{k: [v] for k, v in split_kv(config or [], "--config").items()}}
        if config_b:
            cfg["B"] = config_b
        masses = {k: float(v) for k, v in split_kv(mass or [], "--mass").items()}
        if mass_b is not None:
            masses["B"] = mass_b
        weights = {k: float(v) for k, v in split_kv(weight or [], "--weight").items()}
        settings = tls.TlsSettings(
            source=source,
            tm=tm,
            r_sigma=r_sigma,
            band=_floats(band, 2, "--band"),
            weighted=weighted,
            speed=speed,
            mocap_delay=mocap_delay,
        )
        with console.status("identifying (tls)…"):
            result = tls.identify(
                {k: _load_all(v, allow_corrupt, veh) for k, v in cfg.items()},
                veh,
                masses=masses,
                weights=weights,
                settings=settings,
            )
        specs = [s for v in cfg.values() for s in v]
    elif method == "online":
        from rotorid.methods import online
        from rotorid.report import online as figs

        flights = _load_all(logs, allow_corrupt, veh)
        if len(flights) != 1:
            raise RotoridError(f"--method online takes one flight (one log, one window); got {len(flights)}")
        settings = online.OnlineSettings(variant=variant, rate_hz=rate_hz or None, n_sigma=n_sigma, a_z_allow=a_z_allow)
        with console.status(f"identifying (online, {variant})…"):
            result = online.identify(flights[0], veh, settings)
        specs = list(logs)
    else:
        raise RotoridError(f"unknown method '{method}'; choose delay, tls or online")
    result.inputs = _inputs(specs)
    written = write_run(result, out, figs.figures(result))
    console.print(result.summary())
    console.print(f"wrote [bold]{written['report']}[/] and {len(written) - 1} more files in {out}")


@command
def export_params(
    params: Annotated[Path, typer.Argument(help="params.json written by `rotorid identify`.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="toml (rotorid vehicle), rotorpy (quad_params .py), rltools (dynamics JSON) or gazebo (SDF motor models).",
        ),
    ],
    out: Annotated[Path, typer.Option(help="File to write.")],
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
) -> None:
    """Export identified parameters for rotorid's simulator, RotorPy, RLtools or Gazebo."""
    from rotorid.export import export_params as run

    written = run(params, fmt, out, vehicle=vehicle, max_rotor_speed=max_rotor_speed, config=config)
    console.print(f"wrote [bold]{written}[/] ({fmt})")


@command
def demo(
    out: Annotated[Path, typer.Option(help="Output folder for report.html and one folder per method.")] = Path(
        "demo-out"
    ),
    seed: Annotated[int, typer.Option(help="Random seed of the simulated flights.")] = 0,
) -> None:
    """Simulate the built-in scenarios, identify them with every method, write OUT/report.html."""
    from rotorid.demo import run

    run(out, seed=seed, console=console)


def _override_value(text: str) -> Any:
    """A --set value: true/false, a number, or comma-separated numbers."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise RotoridError(f"--set value '{text}' must be true, false, a number or comma-separated numbers") from None
    return vals[0] if len(vals) == 1 else tuple(vals)


@command
def simulate(
    scenario: Annotated[str, typer.Argument(help="eschmann-crazyflie, kwon-payload, six-config-a or six-config-b.")],
    out: Annotated[Path, typer.Option(help="Output folder: one log per flight, truth.json, vehicle TOMLs.")],
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same flights).")] = 0,
    duration: Annotated[float | None, typer.Option(help="Seconds per flight (default: the paper's).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="parquet, csv, ulog or dataflash.")] = "parquet",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Scenario override NAME=VALUE, e.g. tm=0.03 (repeatable).")
    ] = None,
) -> None:
    """Simulate a named paper scenario with ground truth: writes each flight, truth.json,
    vehicle.toml (what a user knows) and true_vehicle.toml, each atomically."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from rotorid.io import write
    from rotorid.sim import scenarios

    suffix = {"parquet": ".parquet", "csv": ".csv", "ulog": ".ulg", "dataflash": ".bin"}.get(fmt)
    if suffix is None:
        raise RotoridError(f"--format '{fmt}' must be parquet, csv, ulog or dataflash")
    overrides = {k: _override_value(v) for k, v in split_kv(set_ or [], "--set").items()}
    scenarios.options(scenario, duration=duration, **overrides)  # check before writing anything
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RotoridError(f"{out}: cannot write here ({e.strerror}); choose another output folder") from None
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(), console=err) as bar:
        tasks: dict[str, Any] = {}

        def progress(flight: str, fraction: float) -> None:
            if flight not in tasks:
                tasks[flight] = bar.add_task(f"{scenario}/{flight}", total=1.0)
            bar.update(tasks[flight], completed=fraction)

        sc = scenarios.run(scenario, seed=seed, progress=progress, duration=duration, **overrides)
    written = [write(f, out / f"{name}{suffix}") for name, f in sc.flights.items()]
    sc.vehicle.save(out / "vehicle.toml")
    sc.true_vehicle.save(out / "true_vehicle.toml")
    sc.truth.save(out / "truth.json")
    console.print(f"wrote {', '.join(p.name for p in written)}, vehicle.toml, true_vehicle.toml, truth.json in {out}")


@command
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
    allow_corrupt: Annotated[
        bool, typer.Option(help="Decode the intact part of corrupt logs (with a warning).")
    ] = False,
) -> None:
    """Cross-validate identified parameters on held-out flights (Six et al. Sec. IV-B4, Table III)."""
    from rich.table import Table

    from rotorid.report import png_bytes
    from rotorid.result import Result
    from rotorid.util import atomic_write_bytes
    from rotorid.validate import figures
    from rotorid.validate import validate as run
    from rotorid.vehicle import Vehicle

    result = Result.load(params)
    base = Vehicle.load(vehicle) if vehicle else None
    with console.status("validating…"):
        val = run(result, _load_all(logs, allow_corrupt, base), base, config=config, source=source)
    table = Table(title=f"cross-validation of {params} ({result.method})")
    for col in ("channel", "RMSE", "R²", "wrench", "‖ρ‖/‖W_k χ_k‖ %"):
        table.add_column(col, justify="right")
    for (name, m), (w, norm) in zip(val.metrics.items(), val.rel_error_norm_pct.items(), strict=True):
        fmt = lambda x, spec: "—" if x != x else format(x, spec)  # NaN: not modelled / no rotor force
        table.add_row(name, f"{fmt(m['rmse'], '.4g')} {m['unit']}", fmt(m["r2"], ".4f"), w, fmt(norm, ".2f"))
    console.print(table)
    for n in val.notes:
        console.print(f"note: {n}")
    for name, fig in figures(val).items():
        atomic_write_bytes(out / f"{name}.png", png_bytes(fig))
    val.save(out / "validation.json")
    console.print(f"wrote [bold]{out / 'validation.json'}[/] and figures in {out}")


def _span_text(spans: list[tuple[float, float]], limit: int = 4) -> str:
    if not spans:
        return "none"
    text = ", ".join(f"{a:.2f}–{b:.2f}" for a, b in spans[:limit])
    return text + (f" (+{len(spans) - limit} more)" if len(spans) > limit else "")


@command
def info(
    logs: Logs,
    allow_corrupt: Annotated[
        bool, typer.Option(help="Decode the intact part of corrupt logs (with a warning).")
    ] = False,
) -> None:
    """Show each log's format, span, channels with rates, gaps, flying spans and excitation per axis."""
    from rich.table import Table

    from rotorid import excitation
    from rotorid.io import load

    colour = {"excited": "green", "weak": "yellow", "none": "red", "n/a": "dim"}
    for spec in logs:
        flights = load(spec, allow_corrupt=allow_corrupt)
        for k, f in enumerate(flights):
            e = excitation.measure(f)
            title = spec + (f"  [piece {k + 1} of {len(flights)}]" if len(flights) > 1 else "")
            tab = Table(title=title, show_header=False, title_justify="left")
            tab.add_column(style="bold")
            tab.add_column()
            tab.add_row("format", str(f.meta.get("format", "?")))
            span = f"{f.t[0]:.3f} – {f.t[-1]:.3f} s ({e.duration:.2f} s, {len(f.t)} samples at {f.rate:.1f} Hz)"
            tab.add_row("span", span)
            rates, topics = f.meta.get("rates", {}), f.meta.get("topics", {})
            for ch in f.channels:
                cols = getattr(f, ch).shape[1] if getattr(f, ch).ndim == 2 else 1
                where = f"  ({topics[ch]})" if ch in topics else ""
                tab.add_row(f"  {ch}", f"{cols} col, {rates.get(ch, f.rate):.1f} Hz{where}")
            holes = excitation.gaps(f)
            listed = ", ".join(f"{a:.2f} (+{1e3 * (b - a):.0f} ms)" for a, b in holes[:4])
            tab.add_row("gaps", f"{len(holes)}: {listed}" if holes else "none")
            tab.add_row("flying", f"{_span_text(e.flying)}  ({e.flying_time:.1f} s, from {e.flying_from})")
            tab.add_row("on ground", _span_text(e.ground))
            for axis, m in e.axes.items():
                c = colour[m.verdict]
                tab.add_row(f"excitation {axis}", f"{m.value:.3g} {m.unit}  [{c}]{m.verdict}[/]")
            console.print(tab)


@command
def export(
    log: Annotated[str, typer.Argument(help="Log file, optionally with one window: FILE@t0:t1 (s).")],
    to: Annotated[Path, typer.Option(help="Output file: .csv or .parquet (the interchange format).")],
    window: Annotated[str | None, typer.Option(help="Time window t0:t1 in seconds of the log's clock.")] = None,
    allow_corrupt: Annotated[
        bool, typer.Option(help="Decode the intact part of corrupt logs (with a warning).")
    ] = False,
) -> None:
    """Convert any readable log (or one window of it) to CSV or Parquet, atomically."""
    from rotorid.io import load, parse_spec, table

    if to.suffix.lower() not in (".csv", ".parquet"):
        raise RotoridError(f"--to {to}: choose a .csv or .parquet file")
    spec = parse_spec(log)
    if window is not None:
        if spec.windows:
            raise RotoridError(f"give the window either as {log} or as --window, not both")
        spec = parse_spec(f"{log}@{window}")
        if not spec.windows:
            raise RotoridError(f"--window '{window}' is not of the form t0:t1 (seconds)")
    flights = load(spec, allow_corrupt=allow_corrupt)
    if len(flights) != 1:
        raise RotoridError(
            f"{spec} gives {len(flights)} flights (windows or pieces); export one at a time with --window t0:t1"
        )
    table.write(flights[0], to)
    f = flights[0]
    console.print(f"wrote [bold]{to}[/] ({len(f.t)} rows, {f.duration:.2f} s, {', '.join(f.channels)})")


@command
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
    allow_corrupt: Annotated[
        bool, typer.Option(help="Decode the intact part of corrupt logs (with a warning).")
    ] = False,
) -> None:
    """Identify a fleet on Dask: one run per manifest row, a Parquet table of every parameter
    per vehicle and date, and fleet.html with each vehicle's parameters over time and drifts."""
    from rotorid.batch import run_manifest

    run_manifest(manifest, out, workers=workers, scheduler=scheduler, allow_corrupt=allow_corrupt, console=console)
