"""rotorid — identify a multirotor's physical parameters from its own flight logs.

The names below load on first use (PEP 562), so `import rotorid.cli` and `rotorid --help`
do not pay for numpy and scipy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rotorid.util import lazy_names

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

__getattr__, __dir__ = lazy_names(__name__, _HOME)
