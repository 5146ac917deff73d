"""Settings of the frequency-domain method `freq`."""

from __future__ import annotations

from dataclasses import dataclass

from rotorid.errors import RotoridError
from rotorid.options import band_option, option, tm_bounds_option

#: The slowest IMU and command logging the method accepts (Hz): a 20 Hz sweep needs a few
#: samples per period.
MIN_RATE_HZ = 100.0
#: Dead-time choices: fit it only where it predicts held-out frequencies better ("auto").
DEAD_TIME = ("auto", "on", "off")


@dataclass(frozen=True)
class FreqSettings:
    """What the user may choose (defaults in parentheses).

    - `min_coherence` (0.6): bins whose input-output coherence γ² is lower are not fitted.
    - `band`: (lo, hi) Hz fitted; default the sweep's band (SIDS, or found in the command's
      spectrum), for a flight with no sweep 0.5-15 Hz.
    - `dead_time` ("auto"): "on", "off", or "auto" = kept only if it predicts held-out
      frequency blocks better than the model without it.
    - `tm_bounds` ((0.002, 0.5) s): search range of the motor time constant; an estimate on
      a bound is "not identified".
    - `cycles` (3): periods of the lowest fitted frequency per spectral segment.
    """

    min_coherence: float = option(0.6, "Fit only bins whose input-output coherence is at least this.")
    band: tuple[float, float] | None = band_option()
    dead_time: str = option("auto", "auto (kept if it predicts held-out frequencies better), on or off.")
    tm_bounds: tuple[float, float] = tm_bounds_option()
    cycles: float = option(3.0, "Periods of the lowest fitted frequency per spectral segment.")

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_coherence < 1.0:
            raise RotoridError(f"--min-coherence {self.min_coherence:g} must lie in [0, 1)")
        if self.band is not None and not 0.0 < self.band[0] < self.band[1]:
            raise RotoridError(
                f"--band {self.band[0]:g},{self.band[1]:g} must be two increasing positive frequencies (Hz)"
            )
        if self.dead_time not in DEAD_TIME:
            raise RotoridError(f"--dead-time '{self.dead_time}' must be one of {', '.join(DEAD_TIME)}")
        if not 0.0 < self.tm_bounds[0] < self.tm_bounds[1]:
            raise RotoridError(
                f"--tm-bounds {self.tm_bounds[0]:g},{self.tm_bounds[1]:g} must be two increasing positive times (s)"
            )
        if not self.cycles >= 1.0:
            raise RotoridError(f"--cycles {self.cycles:g} must be at least 1")
