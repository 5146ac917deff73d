"""rotorid — identify a multirotor's physical parameters from its own flight logs.

The names below load on first use (PEP 562), so `import rotorid.cli` and `rotorid --help`
do not pay for numpy and scipy."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rotorid.errors import RotoridError
    from rotorid.flight import Flight
    from rotorid.result import Estimate, Result, Truth, compare
    from rotorid.vehicle import Rotor, Vehicle

_HOME = {
    "Estimate": "rotorid.result",
    "Flight": "rotorid.flight",
    "Result": "rotorid.result",
    "Rotor": "rotorid.vehicle",
    "RotoridError": "rotorid.errors",
    "Truth": "rotorid.result",
    "Vehicle": "rotorid.vehicle",
    "compare": "rotorid.result",
}
__all__ = ["Estimate", "Flight", "Result", "Rotor", "RotoridError", "Truth", "Vehicle", "compare"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'rotorid' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
