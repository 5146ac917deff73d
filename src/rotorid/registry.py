"""The method registry: what the command line, the demo and the reports know about each
identification method, in one place.

A `MethodSpec` names, as `"module:attribute"` paths imported only when used (so start-up stays
fast and this module depends on nothing above it):

- `settings`: the method's frozen settings dataclass;
- `run`: `run(request) -> Result`, which turns a `rotorid.runs.Request` (log specifications,
  vehicle, option values) into the method's own call (see `rotorid.runs`);
- `figures`: `figures(result, **options) -> {name: Figure}` (in `rotorid.report`);
- `inputs`: the `rotorid identify` options the method takes besides its settings (log roles,
  mass configurations), as `rotorid.options.Option` records; `options` names these and the
  settings' declared fields (`rotorid.options.option`): all other options are refused when
  given with it; `paper`: the citation shown in reports and `rotorid info`;
- `channels`: the `Flight` channels the method reads: `rotorid info` judges their rates
  against the method's minimum (`MIN_RATE_HZ` of the settings' module, if any) and suggests
  the method only for logs that have them all;
- `logs`: `logs(roles) -> [word, ...]`, the log arguments of the ready-to-run `rotorid
  identify` command `rotorid info` suggests, from the log arguments each excitation role uses
  (`rotorid.excitation.assign_roles`); by default every log once, whole.

Plugins (a new method or log format in another package) register from a module named in the
`rotorid.plugins` entry-point group; `load_plugins()` imports those modules once. Log formats
register with `rotorid.io.register`, methods with `register_method` below.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rotorid.errors import RotoridError
from rotorid.options import Option, options_of

#: Entry-point group whose modules register extra methods and formats when imported.
PLUGIN_GROUP = "rotorid.plugins"


@dataclass(frozen=True)
class MethodSpec:
    """One identification method (see the module docstring for each field)."""

    name: str
    title: str
    paper: str
    settings: str | type
    run: str | Callable[..., Any]
    figures: str | Callable[..., Any]
    inputs: tuple[Option, ...] = ()
    channels: tuple[str, ...] = ("acc", "gyro", "cmd")
    logs: str | Callable[..., list[str]] = "rotorid.runs:whole_logs"

    def load(self, field: str) -> Any:
        """The object a field names (`"module:attribute"` imported now) or the field itself."""
        return resolve(getattr(self, field))

    def option_table(self) -> dict[str, Option]:
        """Every `rotorid identify` option the method takes, by name: its `inputs`, then the
        declared fields of its settings (which the settings module's import must keep light)."""
        return {o.name: o for o in self.inputs} | options_of(self.load("settings"))

    @property
    def options(self) -> tuple[str, ...]:
        """The names of the `rotorid identify` options the method takes (`option_table`)."""
        return tuple(self.option_table())


def resolve(ref: Any) -> Any:
    """`"package.module:attribute"` -> the attribute (imported now); anything else unchanged."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


METHODS: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add (or replace) a method; returns `spec`."""
    METHODS[spec.name] = spec
    return spec


_DELAY_INPUTS = (
    Option("Roll/pitch excitation log(s).", many=True, name="roll_pitch"),
    Option("Yaw excitation log(s).", many=True, name="yaw"),
)
_TLS_INPUTS = (
    Option("Extra mass configuration NAME=LOG[@windows].", many=True, name="config"),
    Option(
        "Measured mass KG (any method; overrides the vehicle file), or NAME=KG of a tls configuration.",
        many=True,
        shared=True,
        name="mass",
    ),
    Option("Weight k_w of a configuration NAME=K_W.", many=True, name="weight"),
    Option("Shorthand for --config B=LOG.", many=True, name="config_b"),
    Option("Shorthand for --mass B=KG.", kind=float, name="mass_b"),
)

register_method(
    MethodSpec(
        "delay",
        "Eschmann et al.",
        "Eschmann, Albani, Loianno — Data-Driven System Identification of Quadrotors Subject to Motor Delays",
        "rotorid.methods.delay:DelaySettings",
        "rotorid.runs:run_delay",
        "rotorid.report.delay:figures",
        _DELAY_INPUTS,
        logs="rotorid.runs:delay_logs",
    )
)
register_method(
    MethodSpec(
        "tls",
        "Six et al.",
        "Six, Briot, Erskine, Chriette — Identification of the Propeller Coefficients and Dynamic Parameters "
        "of a Hovering Quadrotor from Flight Data (IEEE RA-L 2020)",
        "rotorid.methods.tls:TlsSettings",
        "rotorid.runs:run_tls",
        "rotorid.report.tls:figures",
        _TLS_INPUTS,
        channels=("acc", "gyro", "cmd", "rotor_speed"),  # IMU, its default source; --source mocap adds pos, quat
    )
)
register_method(
    MethodSpec(
        "online",
        "Kwon et al.",
        "Kwon, Lee, Yang — Real-Time Observability-Aware Inertia Parameter Estimation for Quadrotors "
        "(IEEE Access 2023)",
        "rotorid.methods.online:OnlineSettings",
        "rotorid.runs:run_online",
        "rotorid.report.online:figures",
        channels=("acc", "gyro", "cmd", "rotor_speed"),
        logs="rotorid.runs:online_logs",
    )
)
register_method(
    MethodSpec(
        "freq",
        "frequency domain",
        "Chirp frequency responses fitted with the motor-lag model of Eschmann, Albani, Loianno — Data-Driven "
        "System Identification of Quadrotors Subject to Motor Delays",
        "rotorid.methods.freq.settings:FreqSettings",
        "rotorid.runs:run_freq",
        "rotorid.report.freq:figures",
    )
)

_plugins_loaded = False


def plugin_entry_points(path: list[str] | None = None) -> list[str]:
    """The values (`"module"` or `"module:attribute"`) of the `rotorid.plugins` entry points
    of the distributions on `path` (default `sys.path`): each `*.dist-info` or `*.egg-info`
    folder's entry_points.txt, the first distribution of each name winning, as
    `importlib.metadata.entry_points(group=...)` finds them — read directly, because importing
    `importlib.metadata` (and the email package under it) costs a third of `rotorid --help`."""
    import os
    import re
    import sys

    seen: set[str] = set()
    found: list[str] = []
    for entry in sys.path if path is None else path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip archive or a folder that went away
            continue
        for name in names:
            stem, _, kind = name.rpartition(".")
            dist = re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower()
            if kind not in ("dist-info", "egg-info") or dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            found += _group_values(text, PLUGIN_GROUP)
    return found


def _group_values(text: str, group: str) -> list[str]:
    """The values of the `name = value` lines of section `[group]` of an entry_points.txt."""
    out, inside = [], False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line and not line.startswith(("#", ";")):
            out.append(line.partition("=")[2].split("[")[0].strip())
    return out


def load_plugins() -> None:
    """Import every module of the `rotorid.plugins` entry-point group (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ref in plugin_entry_points():
        resolve(ref)


def methods() -> dict[str, MethodSpec]:
    """Every registered method, plugins included, by name."""
    load_plugins()
    return METHODS


def method(name: str) -> MethodSpec:
    """The method `name`, or a `RotoridError` naming the ones there are."""
    known = methods()
    if name not in known:
        raise RotoridError(f"unknown method '{name}'; choose {', '.join(known)}")
    return known[name]
