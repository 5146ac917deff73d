"""`Estimate`, `Result` and `Truth`: what every method returns and every simulator knows.

Parameter names are shared by all methods and the simulator (see `PARAMS`), so
`compare(result, truth)` gives relative errors in one call and `params.json` reads the same
whatever produced it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rotorid.errors import RotoridError

#: Canonical parameter names -> (unit, description). Per-motor parameters carry a motor
#: suffix `_m1`.. (1-based, the log's motor order), e.g. `thrust_c2_m3`, `tm_m2`.
PARAMS: dict[str, tuple[str, str]] = {
    "mass": ("kg", "mass"),
    "tm": ("s", "motor time constant"),
    "tm_rise": ("s", "motor time constant, rising"),
    "tm_fall": ("s", "motor time constant, falling"),
    "thrust_c0": ("N", "thrust curve coefficient of u^0 (per rotor)"),
    "thrust_c1": ("N", "thrust curve coefficient of u^1 (per rotor)"),
    "thrust_c2": ("N", "thrust curve coefficient of u^2 (per rotor)"),
    "thrust_c3": ("N", "thrust curve coefficient of u^3 (per rotor)"),
    "k_t": ("N/u^2", "thrust coefficient f = k_t u^2"),
    "k_d": ("N m/u^2", "drag-torque coefficient tau = k_d u^2"),
    "k_tau": ("m", "torque-to-thrust ratio K_tau = k_d / k_t"),
    "hover_cmd": ("1", "hover command"),
    "I_xx": ("kg m^2", "moment of inertia about x"),
    "I_yy": ("kg m^2", "moment of inertia about y"),
    "I_zz": ("kg m^2", "moment of inertia about z"),
    "I_xy": ("kg m^2", "product of inertia xy"),
    "I_xz": ("kg m^2", "product of inertia xz"),
    "I_yz": ("kg m^2", "product of inertia yz"),
    "ms_x": ("kg m", "first moment of mass x"),
    "ms_y": ("kg m", "first moment of mass y"),
    "ms_z": ("kg m", "first moment of mass z"),
    "com_x": ("m", "centre of mass x"),
    "com_y": ("m", "centre of mass y"),
    "com_z": ("m", "centre of mass z"),
    "imu_x": ("m", "IMU position x"),
    "imu_y": ("m", "IMU position y"),
    "imu_z": ("m", "IMU position z"),
}

_SUFFIX = re.compile(r"^(?P<base>.+?)(?:_m\d+)?(?:@(?P<cfg>[\w.-]+))?$")
_THRUST_COEFF = re.compile(r"^thrust_c\d+$")


def unit_of(name: str) -> str:
    """Unit of a canonical parameter name (with optional `_mK` motor or `@config` suffix);
    a thrust-curve coefficient `thrust_cJ` of any power J is in N."""
    m = _SUFFIX.match(name)
    base = m.group("base") if m else name
    if _THRUST_COEFF.match(base):
        return "N"
    return PARAMS.get(base, PARAMS.get(name, ("", "")))[0]


@dataclass(frozen=True)
class Estimate:
    """A parameter estimate with its standard deviation (NaN when unknown) and unit.

    `assumption` names, in words, what the value rests on besides the flights (e.g. "I_zz from
    the assumed yaw-inertia ratio C_xy->z = 1.83 ± 0.4, Eschmann Table II"); "" when the flights
    measure it. Its σ must carry the assumption's own uncertainty, and an assumed parameter is
    never reported as "well determined" (DESIGN.md, "Uncertainty").
    """

    value: float
    std: float = float("nan")
    unit: str = ""
    assumption: str = ""

    @property
    def assumed(self) -> bool:
        """True when the value rests on an assumption, not on the flights alone."""
        return bool(self.assumption)

    @property
    def rel_std_pct(self) -> float:
        """%sigma = 100 sigma / |value| (Six et al. eq. 22)."""
        return 100.0 * self.std / abs(self.value) if self.value != 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        d = {"value": _num(self.value), "std": _num(self.std), "unit": self.unit}
        if self.assumption:
            d["assumption"] = self.assumption
        return d


def _num(x: Any) -> Any:
    """JSON-safe number: NaN/inf become None."""
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    return x


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return _num(float(x))
    if isinstance(x, Path):
        return str(x)
    return x


@dataclass
class Result:
    """What a method returns.

    - `params`: canonical name -> `Estimate`.
    - `settings`: every option the method used (defaults included), for reproduction.
    - `diagnostics`: arrays and curves the report plots (not written to params.json unless
      small); `observability`: per-parameter verdicts {name: {"identifiable": bool,
      "rel_std_pct": .., "reason": "..", "advice": ".."}}.
    - `inputs`: [{"path", "sha256", "windows"}]; `notes`: plain-language remarks.
    - `vehicle`: the identified vehicle (`Vehicle.to_dict()`): the vehicle the method was
      given with every quantity the result identified replaced
      (`rotorid.identified.vehicle_from_result(result, input_vehicle)`), the same for every
      method; None when it could not be built (a note says why). Mapping the result onto it
      again gives it back, so validation and export may start from it.
    """

    method: str
    params: dict[str, Estimate]
    settings: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    observability: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    vehicle: dict[str, Any] | None = None

    def value(self, name: str) -> float:
        try:
            return self.params[name].value
        except KeyError:
            raise RotoridError(
                f"result of method '{self.method}' has no parameter '{name}' (has {', '.join(self.params)})"
            ) from None

    def summary(self, truth: Truth | None = None) -> str:
        """A statsmodels-like text table: name, value, std, %sigma, unit (and truth, error)."""
        head = f"{'parameter':<16}{'value':>14}{'std':>12}{'%σ':>8}  {'unit':<9}"
        if truth is not None:
            head += f"{'truth':>14}{'error %':>9}"
        errors = compare(self, truth) if truth is not None else {}
        lines = [f"rotorid {self.method} — {len(self.params)} parameters", "=" * len(head), head, "-" * len(head)]
        for k, e in self.params.items():
            row = f"{k:<16}{e.value:>14.6g}{e.std:>12.3g}{e.rel_std_pct:>8.2f}  {e.unit:<9}"
            if k in errors:
                row += f"{truth.params[k]:>14.6g}{errors[k]:>9.2f}"
            lines.append(row)
        lines.append("=" * len(head))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The params.json content (diagnostics excluded: they are for figures)."""
        return _jsonable(
            {
                "rotorid_result": 1,
                "method": self.method,
                "params": {k: e.to_dict() for k, e in self.params.items()},
                "observability": self.observability,
                "settings": self.settings,
                "inputs": self.inputs,
                "notes": self.notes,
                "vehicle": self.vehicle,
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    def save(self, path: str | Path) -> None:
        from rotorid.util import atomic_write_text

        atomic_write_text(Path(path), self.to_json() + "\n")

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Result:
        def f(x: Any) -> float:
            return float("nan") if x is None else float(x)

        return Result(
            method=d["method"],
            params={
                k: Estimate(f(v["value"]), f(v.get("std")), v.get("unit", ""), v.get("assumption", ""))
                for k, v in d["params"].items()
            },
            settings=d.get("settings", {}),
            observability=d.get("observability", {}),
            inputs=d.get("inputs", []),
            notes=d.get("notes", []),
            vehicle=d.get("vehicle"),
        )

    @staticmethod
    def load(path: str | Path) -> Result:
        p = Path(path)
        try:
            d = json.loads(p.read_text())
        except FileNotFoundError:
            raise RotoridError(f"{p}: no such result file") from None
        except IsADirectoryError:
            raise RotoridError(f"{p}: is a folder; give the params.json inside it") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RotoridError(f"{p}: not a rotorid params.json ({e})") from None
        if not isinstance(d, dict) or "params" not in d or "method" not in d:
            raise RotoridError(f"{p}: not a rotorid params.json (no 'method'/'params')")
        return Result.from_dict(d)


@dataclass
class Truth:
    """Ground truth of a simulated flight: canonical name -> value, plus the true vehicle."""

    params: dict[str, float]
    vehicle: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({"params": self.params, "vehicle": self.vehicle})

    def save(self, path: str | Path) -> None:
        from rotorid.util import atomic_write_text

        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=2) + "\n")

    @staticmethod
    def load(path: str | Path) -> Truth:
        d = json.loads(Path(path).read_text())
        return Truth(params={k: float(v) for k, v in d["params"].items()}, vehicle=d.get("vehicle"))


def compare(result: Result, truth: Truth) -> dict[str, float]:
    """Relative error in percent, 100 (estimate - truth) / |truth|, for every parameter both
    know (NaN where the truth is zero)."""
    return {k: rel_error_pct(e.value, truth.params[k]) for k, e in result.params.items() if k in truth.params}


def rel_error_pct(value: float, truth: float) -> float:
    """100 (value - truth) / |truth| (NaN where the truth is zero)."""
    return 100.0 * (value - truth) / abs(truth) if truth != 0 else float("nan")


def build_result(
    method: str,
    estimates: Mapping[str, tuple[float, float]],
    settings: dict[str, Any],
    diagnostics: dict[str, Any] | None = None,
    observability: dict[str, dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> Result:
    """The `Result` of a method: one `Estimate` per canonical name from (value, σ), its unit
    from `unit_of`, in the order given. The method then sets `Result.vehicle`
    (`rotorid.identified.with_vehicle`)."""
    params = {name: Estimate(float(v), float(s), unit_of(name)) for name, (v, s) in estimates.items()}
    return Result(
        method=method,
        params=params,
        settings=settings,
        diagnostics=diagnostics if diagnostics is not None else {},
        observability=observability if observability is not None else {},
        notes=notes if notes is not None else [],
    )
