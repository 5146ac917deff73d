"""One identification run from log arguments: `identify(method, logs, vehicle, options)`.

This is what `rotorid identify` (and any other front end: a batch manifest, the app) calls. It
holds no numerics: it reads the logs (`rotorid.io.load` with the vehicle's hints), turns option
values — given as text like on the command line, or typed — into the method's settings
dataclass, calls the method's `identify`, and records the inputs (path, SHA-256, windows).

Each method's `run(request)` is named in its `rotorid.registry.MethodSpec`; the built-in ones
are below. Options a method does not take are refused, naming the method that takes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rotorid.errors import RotoridError
from rotorid.options import option_flag, options_of

if TYPE_CHECKING:
    from rotorid.excitation import Window
    from rotorid.flight import Flight
    from rotorid.io import LogSpec
    from rotorid.result import Result
    from rotorid.vehicle import Vehicle


def split_kv(items: list[str], what: str) -> dict[str, str]:
    """Parse repeated NAME=VALUE options."""
    out = {}
    for it in items:
        name, sep, value = it.partition("=")
        if not sep or not name or not value:
            raise RotoridError(f"{what} '{it}' must look like NAME=VALUE")
        out[name] = value
    return out


def named(value: Mapping[str, Any] | list[str] | None, what: str) -> dict[str, Any]:
    """Per-configuration values (`--config`, `--mass`, `--weight`): repeated NAME=VALUE texts
    as the command line gives them, or a mapping as a manifest gives them."""
    return dict(value) if isinstance(value, Mapping) else split_kv(list(value or []), what)


@dataclass
class Request:
    """What a method's `run` gets: the main log arguments, the vehicle, the option values the
    caller gave (by `rotorid identify` option name) or a settings object built already
    (`preset`), and the log arguments read so far."""

    logs: list[str]
    vehicle: Vehicle
    options: dict[str, Any] = field(default_factory=dict)
    allow_corrupt: bool = False
    preset: Any = None
    reading: dict[str, Any] = field(default_factory=dict)
    used: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    decoded: dict[Path, list[Flight]] = field(default_factory=dict, repr=False)
    spans: dict[str, list[Span]] = field(default_factory=dict, repr=False)

    def whole(self, path: Path) -> list[Flight]:
        """Every flight of the log file `path`, decoded once per run however many roles and
        windows name it (`rotorid.io.cut` takes the windows from these)."""
        from rotorid.io import LogSpec, load

        if path not in self.decoded:
            flights = load(LogSpec(path), vehicle=self.vehicle, allow_corrupt=self.allow_corrupt, **self.reading)
            if self.vehicle.source.startswith("preset") and flights:
                from rotorid.errors import VehicleError
                from rotorid.vehicle import preset_mismatch

                if why := preset_mismatch(self.vehicle.name, flights[0].log_format):
                    raise VehicleError(f"{path}: {why}")
            self.decoded[path] = flights
        return self.decoded[path]

    def load(self, spec: LogSpec) -> list[Flight]:
        """One log argument for this vehicle, with the readers' options: its windows cut from
        the log decoded once (`whole`)."""
        from rotorid.io import cut

        return cut(self.whole(spec.path), spec)

    def flights(self, specs: list[str], role: str | None = None) -> list[Flight]:
        """Every flight (window) of the log arguments `specs`, read for this vehicle, its
        windows and motor channels checked (`check_windows`, `check_motors`). With a `role`
        (`rotorid.excitation.ROLES`) the windows are also found when not given (`role_windows`)."""
        from rotorid.io import cut, parse_spec

        if role is not None:
            return [f for s in specs for f in self.role_windows(s, role)]
        self.used += specs
        out = []
        for s in specs:
            ls = parse_spec(s)
            whole = self.whole(ls.path)
            if ls.windows:
                check_windows(ls, whole)
            out += self.once(s, ls.path, check_motors(ls, cut(whole, ls)))
        return out

    def once(self, arg: str, path: Path, flights: list[Flight], group: str = "") -> list[Flight]:
        """Refuse `flights` (of the log argument `arg`, from the file `path`) that overlap in time
        flights of another argument of the same `group` (the flights one fit takes together: a
        delay role, every tls configuration, freq's logs) from a file of the same content (the
        same file, a copy or a link: compared by SHA-256): samples given twice would count twice
        and shrink σ by √2. Returns `flights`."""
        from rotorid.errors import WindowError
        from rotorid.util import sha256

        digest = sha256(path)
        mine = [Span(digest, float(f.t[0]), float(f.t[-1]), arg, path) for f in flights]
        seen = self.spans.setdefault(group, [])
        for a in mine:
            for b in seen:
                if a.digest == b.digest and a.t0 < b.t1 and b.t0 < a.t1:
                    same = "is the same log as" if a.path.resolve() == b.path.resolve() else "has the same content as"
                    raise WindowError(
                        f"{a.arg} and {b.arg} give the same samples ({a.path} {same} {b.path}; both hold "
                        f"{max(a.t0, b.t0):.2f}–{min(a.t1, b.t1):.2f} s): data given twice counts twice and shrinks σ "
                        "by √2; give each stretch of a log once"
                    )
        seen += mine
        return flights

    def role_windows(self, spec: str, role: str) -> list[Flight]:
        """The flights of one log argument for `role`. Without windows: the windows
        `rotorid.excitation.propose_windows` finds (said in `notes`; none found is an
        `ExcitationError`). With windows: except for `online`, whose estimator wants the
        take-off, ground contact inside one is a `WindowError` naming the corrected window;
        then each is checked (`check_windows`). Motor channels are checked (`check_motors`)
        and each flight's excitation against its role (`check_role`: refuse or warn)."""
        import warnings

        from rotorid import excitation as ex
        from rotorid.errors import ExcitationError, WindowError
        from rotorid.io import LogSpec, cut, parse_spec

        ls = parse_spec(spec)
        whole = self.whole(ls.path)
        what = ex.ROLE_WORDS[role]
        if not ls.windows:
            found = [w for f in whole for w in ex.propose_windows(f, role)]
            if not found:
                raise ExcitationError(
                    f"{ls.path}: no {what} window found (no flying part away from take-off and landing excites "
                    f"it); run `rotorid info {ls.path}` and give the window as {ls.path}@t0:t1"
                )
            ls = LogSpec(ls.path, tuple((round(w.t0, 2), round(w.t1, 2)) for w in found))
            self.notes.append(f"{what} windows found in {ls.path} (none given): {ls}")
        else:
            for t0, t1 in ls.windows if role != "online" else ():
                for f in whole:
                    if f.t[0] <= t1 and f.t[-1] >= t0:
                        fixed = ex.correct_window(f, max(t0, float(f.t[0])), min(t1, float(f.t[-1])))
                        if fixed is not None:
                            raise WindowError(
                                f"{ls.path}@{t0:g}:{t1:g} includes ground contact (take-off or landing is not in "
                                f"the model); use {ls.path}@{fixed[0]:.2f}:{fixed[1]:.2f}"
                            )
            check_windows(ls, whole)
        self.used.append(str(ls))
        flights = self.once(spec, ls.path, check_motors(ls, cut(whole, ls)), role)
        if role != "online":
            limits = ex.thresholds_for(self.vehicle)
            for f in flights:
                weak = ex.check_role(f, role, limits)
                if weak:
                    warnings.warn(weak, stacklevel=2)
        return flights

    def settings(self, cls: type) -> Any:
        """`cls(**fields)` from the options named like its fields, each parsed as its field declares
        (`rotorid.options.Option.value`), or the `preset` settings when the caller built them."""
        if self.preset is not None:
            if not isinstance(self.preset, cls):
                raise RotoridError(f"settings {type(self.preset).__name__} given where {cls.__name__} is needed")
            return self.preset
        declared = options_of(cls)
        names = {f.name for f in fields(cls)}
        kw = {
            k: declared[k].value(v) if k in declared else v
            for k, v in self.options.items()
            if k in names and v is not None
        }
        return cls(**kw)


@dataclass(frozen=True)
class Span:
    """The time span of one flight (window) a log argument gave, and its file's SHA-256."""

    digest: str
    t0: float
    t1: float
    arg: str
    path: Path


#: The shortest window a method is given (s): the shortest flying part
#: `rotorid.excitation.propose_windows` proposes; shorter, no method's filters settle.
MIN_WINDOW_S = 2.0


def check_windows(ls: LogSpec, whole: list[Flight]) -> None:
    """Refuse a window of the log argument `ls` that spans a gap of the log (`whole`, split at
    its gaps by the reader: no method bridges one) or covers less than `MIN_WINDOW_S` s of it;
    the `WindowError` names the window and the windows to give instead."""
    import itertools

    import numpy as np

    from rotorid.errors import WindowError

    for t0, t1 in ls.windows:
        inside = [f for f in whole if f.t[0] <= t1 and f.t[-1] >= t0]
        parts = [(max(t0, float(f.t[0])), min(t1, float(f.t[-1]))) for f in inside]
        if len(inside) > 1:
            gaps = ", ".join(f"{a.t[-1]:.2f}–{b.t[0]:.2f} s" for a, b in itertools.pairwise(inside))
            raise WindowError(
                f"{ls.path}@{t0:g}:{t1:g} spans {len(inside) - 1} gap(s) in the log ({gaps}), where samples are "
                f"missing and no method may bridge them; give the parts as separate windows: "
                f"{ls.path}@{','.join(f'{a:.2f}:{b:.2f}' for a, b in parts)}"
            )
        if inside and parts[0][1] - parts[0][0] < MIN_WINDOW_S:
            n = int(np.count_nonzero((inside[0].t >= t0) & (inside[0].t <= t1)))
            raise WindowError(
                f"{ls.path}@{t0:g}:{t1:g} holds {n} samples ({parts[0][1] - parts[0][0]:.3g} s of log), too few to "
                f"identify anything; give a window of at least {MIN_WINDOW_S:g} s of flight (run `rotorid info "
                f"{ls.path}` for the flying parts)"
            )


def check_motors(ls: LogSpec, flights: list[Flight]) -> list[Flight]:
    """Refuse a log argument `ls` one of whose motor columns (`cmd`, `rotor_speed`) holds the same
    value in every sample of every flight (window) it gives (`motion.stuck_motors`): every
    parameter the methods identify rests on the motors' thrust or torque. Returns `flights`."""
    from rotorid.errors import ExcitationError
    from rotorid.motion import stuck_motors

    stuck = stuck_motors(flights)
    if stuck:
        raise ExcitationError(
            f"{ls}: {stuck}; check the motor channels with `rotorid info {ls.path}` and give a log (window) where "
            "the motors respond"
        )
    return flights


def split_mass(options: Mapping[str, Any]) -> tuple[dict[str, Any], float | None]:
    """Separate a bare `--mass KG` (the vehicle's measured mass, for any method: it overrides
    the vehicle file) from tls's per-configuration `--mass NAME=KG`; returns the options
    without it and the mass (None when not given). Two bare masses are refused."""
    given = options.get("mass")
    if given is None or isinstance(given, Mapping):
        return dict(options), None
    items = [given] if isinstance(given, str | int | float) else list(given)
    bare = [m for m in items if "=" not in str(m)]
    if not bare:
        return dict(options), None
    if len(bare) > 1:
        raise RotoridError(f"--mass given twice as a plain number ({', '.join(map(str, bare))}); give it once")
    try:
        kg = float(bare[0])
    except ValueError:
        raise RotoridError(f"--mass '{bare[0]}' must be a number of kg (or NAME=KG for a tls configuration)") from None
    if not kg > 0:
        raise RotoridError(f"--mass {bare[0]} must be a positive number of kg")
    rest = {k: v for k, v in options.items() if k != "mass"}
    named_masses = [m for m in items if "=" in str(m)]
    return (rest | {"mass": named_masses} if named_masses else rest), kg


def refuse_foreign(method: str, given: list[str]) -> None:
    """Refuse options `method` does not take, naming the method(s) that do."""
    from rotorid.registry import method as spec_of
    from rotorid.registry import methods

    own = set(spec_of(method).options)
    foreign = [g for g in given if g not in own]
    if not foreign:
        return
    owners = {g: [m.name for m in methods().values() if g in m.options] for g in foreign}
    what = ", ".join(f"{option_flag(g)} ({'/'.join(owners[g]) or 'no method'})" for g in foreign)
    raise RotoridError(f"--method {method} does not take {what}; remove them or choose that method")


def identify(
    method: str,
    logs: list[str],
    vehicle: Vehicle,
    options: dict[str, Any] | None = None,
    allow_corrupt: bool = False,
    settings: Any = None,
    reading: dict[str, Any] | None = None,
) -> Result:
    """Identify `vehicle`'s parameters with `method` from the log arguments `logs`
    (`FILE[@t0:t1,...]`); `options` by `rotorid identify` option name (e.g. {"yaw": [...],
    "tm_prior": "0.03,0.5"}), or the method's `settings` object with `options` naming only
    further logs and configurations; `reading`: the readers' options (e.g. {"imu_source": "batch"},
    `rotorid.io.read`). A bare `mass` (kg) replaces the vehicle's (`split_mass`).
    The result's `inputs` list every log read with its SHA-256."""
    from rotorid.registry import method as spec_of

    options, mass = split_mass({k: v for k, v in (options or {}).items() if v is not None})
    refuse_foreign(method, list(options))
    notes = []
    if mass is not None and mass != vehicle.mass:
        notes.append(f"mass {mass:g} kg from --mass (the vehicle {vehicle.name} says {vehicle.mass:g} kg)")
        vehicle = vehicle.replace(mass=mass)
    req = Request(list(logs), vehicle, options, allow_corrupt, settings, notes=notes, reading=dict(reading or {}))
    result = spec_of(method).load("run")(req)
    result.inputs = provenance(req.used)
    result.notes = [*req.notes, *result.notes]
    return result


def min_rates() -> dict[str, float]:
    """Each registered method's minimum log rate (its module's `MIN_RATE_HZ`, if it has one)."""
    import importlib

    from rotorid.registry import methods

    out = {}
    for m in methods().values():
        ref = m.settings if isinstance(m.settings, str) else m.settings.__module__
        rate = getattr(importlib.import_module(ref.partition(":")[0]), "MIN_RATE_HZ", None)
        if rate is not None:
            out[m.name] = float(rate)
    return out


def command(
    method: str, roles: Mapping[str, list[str]], vehicle: str, out: str = "results/", extra: Sequence[str] = ()
) -> str | None:
    """A ready-to-run `rotorid identify` command line (shell-quoted) from the log arguments
    each role uses (`roles`: thrust / roll_pitch / yaw / online -> ["FILE@t0:t1", ...], as
    `rotorid.excitation.assign_roles` finds them); the method's `MethodSpec.logs` picks its log
    arguments; `extra` words (e.g. the reader's flags) follow. None when it finds none (e.g. delay
    without a thrust window)."""
    import shlex

    from rotorid.registry import method as spec_of

    logs = spec_of(method).load("logs")(roles)
    if not logs:
        return None
    words = ["rotorid", "identify", "--method", method, "--vehicle", vehicle, *logs, *extra, "--out", out]
    return " ".join(shlex.quote(w) for w in words)


def role_specs(found: Mapping[str, Mapping[str, list[Window]]]) -> dict[str, list[str]]:
    """The log arguments each role uses (role -> ["FILE@t0:t1", ...]) from the windows found in
    each log argument (`found`: log argument -> `rotorid.excitation.log_windows`), assigned by
    `rotorid.excitation.assign_roles` (the app's proposals use it directly): the one role
    assignment of `rotorid info`'s command, `identify` with several logs and batch. A log given
    with windows keeps them (the user chose); else its excited windows, to 0.01 s."""
    from rotorid.excitation import assign_roles
    from rotorid.io import LogSpec, parse_spec

    def spec(log: str, ws: list[Window]) -> str:
        ls = parse_spec(log)
        return log if ls.windows else str(LogSpec(ls.path, tuple((round(w.t0, 2), round(w.t1, 2)) for w in ws)))

    return {
        r: [spec(log, ws) for log, ws in got] for r, got in assign_roles({k: dict(v) for k, v in found.items()}).items()
    }


def delay_roles(roles: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Eschmann et al.'s flights by role: the thrust ones; roll/pitch ones; yaw ones only beside
    roll/pitch ones (K_tau rests on I_zz, which rests on I_xx and I_yy)."""
    rp = list(roles.get("roll_pitch", []))
    return {"thrust": list(roles.get("thrust", [])), "roll_pitch": rp, "yaw": list(roles.get("yaw", [])) if rp else []}


def delay_logs(roles: Mapping[str, list[str]]) -> list[str]:
    """Eschmann et al.: the thrust windows, with `--roll-pitch` and `--yaw` ones (`delay_roles`;
    none without a thrust window)."""
    mine = delay_roles(roles)
    words = mine["thrust"]
    return words and words + [w for r in ("roll_pitch", "yaw") for spec in mine[r] for w in (option_flag(r), spec)]


def online_logs(roles: Mapping[str, list[str]]) -> list[str]:
    """Kwon et al.: one flight, from the take-off (the estimator starts on the ground)."""
    return roles.get("online", [])[:1]


def whole_logs(roles: Mapping[str, list[str]]) -> list[str]:
    """Every log once, whole (e.g. Six et al.'s TLS finds the airborne parts itself)."""
    from rotorid.io import parse_spec

    return list(dict.fromkeys(str(parse_spec(s).path) for specs in roles.values() for s in specs))


def provenance(specs: list[str]) -> list[dict[str, Any]]:
    """Path, SHA-256 and windows of each log argument."""
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


def run_delay(req: Request) -> Result:
    """Eschmann et al.: thrust flights (the main logs), `roll_pitch` and `yaw` flights."""
    from rotorid.methods import delay

    settings = req.settings(delay.DelaySettings)
    roles = {"thrust": req.logs, "roll_pitch": req.options.get("roll_pitch"), "yaw": req.options.get("yaw")}
    if len(req.logs) > 1 and not (roles["roll_pitch"] or roles["yaw"]):
        roles = assigned_roles(req)
    thrust = req.flights(list(roles["thrust"]), "thrust")
    roll_pitch = req.flights(list(roles["roll_pitch"] or []), "roll_pitch")
    yaw = req.flights(list(roles["yaw"] or []), "yaw")
    check_roles(roll_pitch, yaw)
    return delay.identify(thrust, req.vehicle, roll_pitch=roll_pitch, yaw=yaw, settings=settings)


def run_freq(req: Request) -> Result:
    """The frequency-domain method: every log's swept axes (ArduPilot SIDS, or found in the
    commands' spectra), fitted together."""
    from rotorid.methods import freq

    return freq.identify(req.flights(req.logs), req.vehicle, req.settings(freq.FreqSettings))


def assigned_roles(req: Request) -> dict[str, list[str]]:
    """Several logs given with no --roll-pitch or --yaw: each log's role by `role_specs` (as
    `rotorid info` assigns them), said in the notes; an `ExcitationError` when no log excites
    thrust."""
    from rotorid.errors import ExcitationError
    from rotorid.excitation import ROLE_WORDS, log_windows, thresholds_for
    from rotorid.io import parse_spec

    limits = thresholds_for(req.vehicle)
    roles = delay_roles(role_specs({s: log_windows(req.load(parse_spec(s)), limits) for s in req.logs}))
    if not roles["thrust"]:
        raise ExcitationError(
            f"none of {', '.join(req.logs)} excites thrust (vertical pumping); run `rotorid info` on them and give "
            "the thrust log first, the others with --roll-pitch and --yaw"
        )
    said = "; ".join(f"{ROLE_WORDS[r]} {', '.join(v)}" for r, v in roles.items() if v)
    req.notes.append(f"roles assigned to the {len(req.logs)} logs by their excitation (as `rotorid info`): {said}")
    return roles


def _yaw_share(flights: list[Flight]) -> tuple[float, float, float]:
    """(yaw / roll-pitch excitation, yaw, roll-pitch) of flights: the RMS angular accelerations
    `rotorid.excitation.measure` gives, roll-pitch the larger of roll and pitch, each the
    flights' median; a ratio free of the vehicle's size."""
    import numpy as np

    from rotorid.excitation import measure

    axes = [measure(f).axes for f in flights]
    yaw = float(np.median([a["yaw"].value for a in axes]))
    rp = float(np.median([max(a["roll"].value, a["pitch"].value) for a in axes]))
    return yaw / rp if rp > 0 else float("inf"), yaw, rp


def check_roles(roll_pitch: list[Flight], yaw: list[Flight]) -> None:
    """Refuse --roll-pitch and --yaw flights that look swapped (the roll/pitch flights excite
    yaw more than roll/pitch, the yaw flights less): the inertia of a swapped pair comes out
    several times too large. A single suspect role is warned about by `excitation.check_role`."""
    words = lambda r: f"yaw {r[1]:.3g} rad/s², roll/pitch {r[2]:.3g} rad/s²"
    rp = _yaw_share(roll_pitch) if roll_pitch else None
    yw = _yaw_share(yaw) if yaw else None
    if rp and yw and rp[0] > 1.0 > yw[0]:
        raise RotoridError(
            f"--roll-pitch and --yaw look swapped: the --roll-pitch flights excite mostly yaw ({words(rp)}) and the "
            f"--yaw flights mostly roll/pitch ({words(yw)}); give each log to the other option"
        )


def run_tls(req: Request) -> Result:
    """Six et al.: configuration A (the main logs) plus `config` NAME=LOG(s) ones (`config_b`
    for B), with measured `mass` and weights `weight` per configuration."""
    from rotorid.methods import tls

    opt = req.options
    extra = named(opt.get("config"), "--config")
    cfg = {"A": list(req.logs), **{k: [v] if isinstance(v, str) else list(v) for k, v in extra.items()}}
    if opt.get("config_b"):
        cfg["B"] = list(opt["config_b"])
    masses = {k: float(v) for k, v in named(opt.get("mass"), "--mass").items()}
    if opt.get("mass_b") is not None:
        masses["B"] = float(opt["mass_b"])
    weights = {k: float(v) for k, v in named(opt.get("weight"), "--weight").items()}
    settings = req.settings(tls.TlsSettings)
    flights = {k: req.flights(v) for k, v in cfg.items()}
    result = tls.identify(flights, req.vehicle, masses=masses, weights=weights, settings=settings)
    return on_commands(result, req.vehicle, settings.speed, settings.tm)


#: What a TLS fit on commands that are not rotor speeds rests on.
QUADRATIC_IN_COMMAND = "thrust taken as k_t u² of the {kind} command u, which is not a rotor speed"

#: What it rests on besides when the motors' lag was not given (`TlsSettings.tm`).
NO_MOTOR_LAG = (
    "the rotors taken to follow the command at once (no --tm: the motors' lag is not modelled; on six-config "
    "flights on duty-cycle commands with T_m = 10 ms it left k_d, k_tau and I_zz 14-78 % low; give --tm from "
    "--method delay)"
)


def on_commands(result: Result, vehicle: Vehicle, speed: str, tm: float | None = None) -> Result:
    """A TLS fit whose rotor terms were a non-rad/s vehicle's commands (no measured rotor
    speed): refused when the command was chosen automatically; with `--speed cmd` asked for,
    every estimate is marked as resting on thrust quadratic in the command (and, without the
    motors' lag `tm`, on rotors that follow the command at once), so never "well determined",
    and a warning says so."""
    import warnings
    from dataclasses import replace

    from rotorid.identified import motor_input

    if motor_input(result, vehicle) == "rad_s":
        return result
    if speed == "auto":
        raise RotoridError(
            f"--method tls models each rotor's thrust as k_t ω² of its rotor speed, but vehicle '{vehicle.name}' "
            f"takes {vehicle.motor_input} commands and the logs hold no rotor speeds: thrust is not quadratic in a "
            "command, which biases the inertia by tens of %; log ESC rpm with a rad_s vehicle, or use --method delay "
            "(it fits a thrust curve in the command), or give --speed cmd to run it anyway (results marked assumed)"
        )
    why = QUADRATIC_IN_COMMAND.format(kind=vehicle.motor_input)
    if tm is None:
        why += f"; {NO_MOTOR_LAG}"
    warnings.warn(
        f"--speed cmd on {vehicle.motor_input} commands: {why}; every estimate is marked assumed", stacklevel=2
    )
    result.params = {
        k: replace(e, assumption="; ".join(filter(None, (why, e.assumption)))) for k, e in result.params.items()
    }
    result.notes.append(f"All estimates rest on {why}.")
    return result


def run_online(req: Request) -> Result:
    """Kwon et al.: one flight (one log, one window) streamed through the estimator."""
    from rotorid.methods import online

    flights = req.flights(req.logs, "online")
    if len(flights) != 1:
        raise RotoridError(f"--method online takes one flight (one log, one window); got {len(flights)}")
    settings = req.settings(online.OnlineSettings)
    return online.identify(flights[0], req.vehicle, settings)
