"""The frequency-domain method `freq`: chirp → frequency responses → the physical
model's transfer function (first-order motor lag, optional dead time, inertia through the rotor
geometry and the thrust curve's slope) with σ from the spectral estimates' covariance.

Stages, a strict chain (import-linter contract `freq-stages`): `settings` → `frf` (spectral
estimates) → `sweep` (which axis a flight sweeps, over which band) → `model` (transfer functions
and their weighted fit) → `pipeline` (flights and vehicle in, `Result` out). The names below
load on first use (PEP 562), so naming the settings class does not import numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rotorid.util import lazy_names

if TYPE_CHECKING:
    from rotorid.methods.freq.pipeline import identify
    from rotorid.methods.freq.settings import FreqSettings

_WHERE = {"FreqSettings": "settings", "identify": "pipeline"}
__all__ = ["FreqSettings", "identify"]

__getattr__, __dir__ = lazy_names(__name__, {n: f"{__name__}.{m}" for n, m in _WHERE.items()})
