"""rotorid — identify a multirotor's physical parameters from its own flight logs."""

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.result import Estimate, Result, Truth, compare
from rotorid.vehicle import Rotor, Vehicle

__all__ = ["Estimate", "Flight", "Result", "Rotor", "RotoridError", "Truth", "Vehicle", "compare"]
__version__ = "0.1.0"
