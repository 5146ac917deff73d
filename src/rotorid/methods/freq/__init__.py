"""The frequency-domain method `freq`: chirp → frequency responses → the physical
model's transfer function (first-order motor lag, optional dead time, inertia through the rotor
geometry and the thrust curve's slope) with σ from the spectral estimates' covariance.

Stages, a strict chain (import-linter contract `freq-stages`): `settings` → `frf` (spectral
estimates) → `sweep` (which axis a flight sweeps, over which band) → `model` (transfer functions
and their weighted fit) → `identify` (flights and vehicle in, `Result` out).
"""

from rotorid.methods.freq.identify import identify
from rotorid.methods.freq.settings import FreqSettings

__all__ = ["FreqSettings", "identify"]
