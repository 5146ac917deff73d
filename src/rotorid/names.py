"""Parsing canonical parameter names, in one place.

A name is a base from `rotorid.result.PARAMS` with an optional per-motor suffix `_mK`
(1-based, the log's motor order) and an optional mass-configuration suffix `@NAME` (a combined
TLS result): `thrust_c2_m3`, `I_xx@B`, `k_tau_m2@B`. `thrust_cJ` is the thrust-curve
coefficient of exponent J.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"^(?P<base>.+?)(?:_m(?P<motor>\d+))?(?:@(?P<config>[\w.-]+))?$")


@dataclass(frozen=True)
class ParamName:
    """The parts of a parameter name: `base`, `motor` (1-based or None), `config` (or None)."""

    base: str
    motor: int | None = None
    config: str | None = None

    @property
    def exponent(self) -> int | None:
        """J of a thrust-curve coefficient `thrust_cJ`, else None."""
        rest = self.base.removeprefix("thrust_c")
        return int(rest) if rest != self.base and rest.isdigit() else None

    def __str__(self) -> str:
        return (
            self.base
            + (f"_m{self.motor}" if self.motor is not None else "")
            + (f"@{self.config}" if self.config else "")
        )


def parse(name: str) -> ParamName:
    """`"thrust_c2_m3@B"` -> ParamName("thrust_c2", 3, "B")."""
    m = _NAME.match(name)
    if m is None:  # only the empty name
        return ParamName(name)
    motor = m.group("motor")
    return ParamName(m.group("base"), int(motor) if motor else None, m.group("config"))


def configs(names: list[str] | dict[str, object]) -> list[str]:
    """The mass configurations the names carry, in order of first appearance."""
    return list(dict.fromkeys(c for c in (parse(n).config for n in names) if c))
