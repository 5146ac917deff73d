"""What the steps of the identification gather for the `Result`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rotorid.result import Observability


@dataclass
class Collected:
    """What the steps of `pipeline.identify` gather for the `Result`: (value, σ) per parameter,
    observability, notes, diagnostics and settings."""

    est: dict[str, tuple[float, float]] = field(default_factory=dict)
    obs: dict[str, Observability] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    diag: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    assumed: dict[str, str] = field(default_factory=dict)  # name -> `Estimate.assumption`

    def put(self, name: str, value: float, std: float) -> None:
        self.est[name] = (float(value), float(std))
