"""Ground-truth simulator: RK4 rigid-body dynamics with rotors (`dynamics`), sensors
(`sensors`), the cascaded PD controller and mixer of Kwon et al. (`control`), trajectories and
excitation manoeuvres (`trajectory`), one flight end to end (`simulator.fly`) and the named,
seeded scenarios of the three papers with their ground truth (`scenarios`).

It produces the same `Flight` a log reader does, plus a `Truth` named like `Result.params`.
"""

from rotorid.sim import scenarios
from rotorid.sim.scenarios import NAMES, Scenario, run
from rotorid.sim.simulator import FlightSpec, References, fly

__all__ = ["NAMES", "FlightSpec", "References", "Scenario", "fly", "run", "scenarios"]
