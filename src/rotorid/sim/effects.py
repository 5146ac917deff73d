"""Body effects the paper models leave out, for realistic simulated flights
(what other simulators and real vehicles have). Each is off at its default (`PlantSpec()`), and the integrator then runs
exactly as without it. All but the battery act through one per-step hook (`rotorid.sim.kernel.effects_step`, compiled, on a `Plant`'s `kernel_data`): an
extra thrust per rotor and an extra body wrench, evaluated at the start of each RK4 step (1 ms)
and held over it, and recorded so the true accelerations (`rotorid.sim.dynamics.accelerations`)
match; the battery voltage scales the motors' setpoints before their lag (`Plant.command`,
`rotorid.sim.kernel.battery`).

- Ground effect (Cheeseman & Bennett, ARC R&M 3021, 1955): a rotor of radius R whose hub is a
  height z above the ground makes T_IGE / T_OGE = 1 / (1 - (R / 4z)^2); applied at a fixed
  rotor speed as multirotor simulators do (Sanchez-Cuevas et al., ICUAS 2017), with z held
  >= R/2 (the formula's range; at most +33 %).
- Battery sag: the open-circuit voltage falls with the charge drawn and the terminal voltage
  with the load through the internal resistance (the Thevenin battery of Tremblay & Dessaint,
  WEVA 2009): V = V0 (1 - drain q - sag L), L = (sum f / m g)^1.5 the current relative to
  hover (momentum-theory power ~ T^1.5, from the thrusts at the step's start), q = integral of
  L dt. A motor driven by a duty cycle u (normalized or PWM commands) sees u V, and its speed
  follows that through its mechanical lag (J dw/dt = K_t i - Q(w), i = (u V - K_e w) / R), so
  the voltage acts before the motor lag: the motor follows the setpoint u V / V_ref
  (`Plant.command`, the integrator's pre-lag hook) and the thrust is the nominal curve at the
  lagged state (the Crazyflie firmware's thrust = f(command x V_bat) compensation), V_ref
  the voltage at hover on a full battery (where the nominal curve holds). A speed-controlled
  rotor (rad/s commands) keeps its speed; for it the voltage only lowers the saturation limit.
- Motor saturation: a rotor cannot exceed `sat` x the nominal thrust at full command, scaled
  by (V / V_ref)^2 with the voltage.
- Body (fuselage) drag, quadratic: F_b = -c |v_a| v_a per body axis (1/2 rho C_d A, N s^2/m^2),
  v_a the body velocity relative to the air.
- Gusts: a Dryden-like wind (MIL-F-8785C's first-order form): each world axis a Gauss-Markov
  process of intensity sigma and correlation time tau (L / V) around a mean wind. It enters
  through every drag term: the linear body drag `drag`, the quadratic one and the rotor drag
  (`rotorid.sim.dynamics`) see the velocity relative to the air.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import signal as sps

from rotorid.frames import GRAVITY
from rotorid.sim.dynamics import Body
from rotorid.sim.sensors import Imu
from rotorid.vehicle import Vehicle


@dataclass(frozen=True)
class PlantSpec:
    """Body-effect settings (all off by default): `ground_radius` rotor radius R (m, 0 = no
    ground effect) over a ground `ground_clearance` radii below the rotor hubs at the flight's
    lowest height (a low pass over the ground, `Plant.build`; `rotorid.sim.simulator` finds it
    flying the flight once without the ground); battery `v0` (V, open circuit when
    full), `sag` (relative voltage drop at hover current) and `drain` (relative open-circuit drop
    per second at hover current), `cmd_scales_with_voltage` (duty-cycle motor commands);
    `saturation` (maximum rotor thrust / nominal thrust at full command, 0 = none); `drag_quad`
    (N s^2/m^2 per body axis); `wind` (mean, world, m/s), `gust` (sigma, m/s), `gust_tau` (s)."""

    ground_radius: float = 0.0
    ground_clearance: float = 2.0
    v0: float = 4.2
    sag: float = 0.0
    drain: float = 0.0
    cmd_scales_with_voltage: bool = True
    saturation: float = 0.0
    drag_quad: tuple[float, float, float] = (0.0, 0.0, 0.0)
    wind: tuple[float, float, float] = (0.0, 0.0, 0.0)
    gust: float = 0.0
    gust_tau: float = 2.0

    @property
    def battery(self) -> bool:
        return self.sag > 0 or self.drain > 0

    @property
    def active(self) -> bool:
        """Whether any effect is on (else the integrator needs no hook)."""
        airflow = any(self.drag_quad) or any(self.wind) or self.gust > 0
        return self.ground_radius > 0 or self.battery or self.saturation > 0 or airflow


def dryden_wind(spec: PlantSpec, n: int, dt: float, rng: np.random.Generator) -> np.ndarray:
    """World wind (n, 3), m/s: the mean plus a first-order Gauss-Markov gust per axis,
    stationary from the start (w_k+1 = a w_k + sigma sqrt(1 - a^2) e_k, a = exp(-dt / tau))."""
    wind = np.broadcast_to(np.asarray(spec.wind, dtype=float), (n, 3)).copy()
    if spec.gust > 0:
        a = math.exp(-dt / spec.gust_tau)
        e = rng.standard_normal((n, 3)) * spec.gust * math.sqrt(1.0 - a * a)
        e[0] = spec.gust * rng.standard_normal(3)  # the stationary state at t = 0
        wind += sps.lfilter([1.0], [1.0, -a], e, axis=0)
    return wind


@dataclass
class Plant:
    """The per-step hook of `rotorid.sim.dynamics.integrate` for a `PlantSpec` on a `Body`
    (`n_steps` steps of `dt`; `wind` (n_steps, 3) from `dryden_wind`). After the run, `df`
    (n_steps, M) holds the extra rotor thrusts, `extra` (n_steps, 6) the extra body wrench (the
    air's, about the CoM), `vbat` (n_steps,) the battery voltage of each step and `sat`
    (n_steps, M) each rotor's thrust after saturation over before (1 = not saturated)."""

    spec: PlantSpec
    body: Body
    dt: float
    wind: np.ndarray
    hubs: np.ndarray
    f_full: float
    ground_z: float
    df: np.ndarray = field(init=False)
    extra: np.ndarray = field(init=False)
    vbat: np.ndarray = field(init=False)
    sat: np.ndarray = field(init=False)
    kernel_data: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n, m = len(self.wind), self.body.n_rotors
        self.df, self.extra, self.sat = np.zeros((n, m)), np.zeros((n, 6)), np.ones((n, m))
        self.vbat = np.full(n, self.v_ref)
        s, b = self.spec, self.body
        rd3 = np.zeros((m, 6, 3)) if b.rotor_drag is None else np.ascontiguousarray(b.rotor_drag[:, :, :3])
        self.kernel_data = (
            np.ascontiguousarray(self.wind, dtype=float),
            np.ascontiguousarray(self.hubs, dtype=float),
            np.array(b.drag, dtype=float),
            rd3,
            b.rotor_drag is not None,
            np.array(s.drag_quad, dtype=float),
            any(s.drag_quad),
            self.df,
            self.extra,
            self.sat,
            self.vbat,
            np.array([0.0, 1.0]),  # the charge drawn (hover-load seconds) and the last step's load
            *map(float, (s.saturation, self.f_full, self.v_ref, s.ground_radius, self.ground_z, s.v0, s.drain, s.sag)),
            float(self.dt),
            b.mass * GRAVITY,
            s.cmd_scales_with_voltage,
            s.battery,
            2.0,  # the saturation limit goes as V^2
            np.ascontiguousarray(b.coeffs[:, ::-1], dtype=float),
            np.asfortranarray(b.B, dtype=float),  # the mixer's layout (`Vehicle.mixer`): BLAS rounds by it
        )

    @staticmethod
    def build(
        spec: PlantSpec,
        body: Body,
        hubs: np.ndarray,
        x0: tuple[float, ...],
        n_steps: int,
        dt: float,
        rng: np.random.Generator,
        lowest: float | None = None,
    ) -> Plant:
        """The hook for `body` whose rotor hubs are at `hubs` (M, 3, body, about the CoM),
        starting level at the 13-state `x0`. The ground sits `ground_clearance` radii below the
        hubs at the lowest height of the CoM, `lowest` (None: the start's; the simulator passes
        the lowest a first pass without the ground flew), so the clearance is the closest the
        flight comes to the ground: a ground below the start, or below the plan's lowest point,
        was flown into (hubs under the ground plane on up to 12 % of some randomized flights)."""
        wind = dryden_wind(spec, n_steps, dt, rng)
        low = x0[2] if lowest is None else min(x0[2], lowest)
        ground = low + float(np.mean(hubs[:, 2])) - spec.ground_clearance * spec.ground_radius
        return Plant(spec, body, dt, wind, hubs, float(body.thrust(np.array([body.cmd_max]))[0]), ground)

    @property
    def v_ref(self) -> float:
        """The voltage at hover on a full battery, where the nominal thrust curve holds."""
        return self.spec.v0 * (1.0 - self.spec.sag)

    def command(self, k: int, u: Sequence[float], cmd: Sequence[float]) -> list[float]:
        """The battery at step k (`rotorid.sim.kernel.battery`; load from the motor states `u` at
        its start), recorded in `vbat`: the setpoints the motors follow, the duty cycles `cmd`
        times V / V_ref (`cmd` itself for speed commands)."""
        from rotorid.sim import kernel

        out = np.empty(len(cmd))
        kernel.battery(int(k), np.asarray(u, dtype=float), np.asarray(cmd, dtype=float), self.kernel_data, out)
        return out.tolist()

    def rotor_thrust(self, k: int, x: Sequence[float], u: np.ndarray) -> np.ndarray:
        """True thrusts (M,) of motor states `u` at step k and 13-state `x`: saturation (at the
        step's voltage, recorded in `sat`), ground effect (`rotorid.sim.kernel.rotor_thrust`)."""
        from rotorid.sim import kernel

        x = np.asarray(x, dtype=float)
        f = self.body.thrust(np.asarray(u, dtype=float))
        kernel.rotor_thrust(int(k), x, f, kernel.rotation(x), self.kernel_data)
        return f

    def air_wrench(self, k: int, x: Sequence[float], f: np.ndarray) -> np.ndarray:
        """The wrench (6,) the air adds to the integrator's still-air drag terms at step k and
        13-state `x` for rotor thrusts `f`: the wind's part of the linear body drag and the rotor
        drag, and the quadratic body drag (`rotorid.sim.kernel.air_wrench`)."""
        from rotorid.sim import kernel

        x, out = np.asarray(x, dtype=float), np.zeros(6)
        kernel.air_wrench(int(k), x, np.asarray(f, dtype=float), kernel.rotation(x), self.kernel_data, out)
        return out


#: Scenario overrides of the effects above and of the IMU's (`rotorid.sim.sensors`), all off by
#: default: `rotor_inflow` (relative thrust lost per m/s of axial climb at hover, s/m),
#: `drag_quad` (quadratic body drag over mass, 1/m, each body axis), `ground_effect` (rotor
#: radius over arm length; 0 = none) with `ground_clearance` (rotor radii above the ground at
#: the flight's lowest height), `battery_sag` (relative voltage drop at hover current), `battery_drain` (relative
#: open-circuit drop per s at hover current), `battery_v0` (V when full; None = 4.2 V per cell,
#: 1 cell under 100 g, else 3), `saturation` (maximum rotor thrust over the nominal thrust at full
#: command), `imu_scale` / `imu_misalign` (bounds of the per-axis scale errors and misalignment
#: angles (rad), drawn uniformly per seed for gyro and accelerometer), `vibration` (m/s^2 per rotor
#: at hover) at `vibration_hz` (None = the hover rotor speed for rad/s commands, else 270 Hz, a
#: Crazyflie's ~16000 rpm), `aa_cutoff` (Hz), `gust` (sigma, m/s), `gust_tau` (s), `wind` (mean,
#: world, m/s; a number: along x).
BODY_EFFECTS: dict[str, Any] = {
    "rotor_inflow": 0.0,
    "drag_quad": 0.0,
    "ground_effect": 0.0,
    "ground_clearance": 2.0,
    "battery_sag": 0.0,
    "battery_drain": 0.0,
    "battery_v0": None,
    "saturation": 0.0,
    "imu_scale": 0.0,
    "imu_misalign": 0.0,
    "vibration": 0.0,
    "vibration_hz": None,
    "aa_cutoff": None,
    "gust": 0.0,
    "gust_tau": 2.0,
    "wind": (0.0, 0.0, 0.0),
}
#: One realistic magnitude per effect (the one-at-a-time calibration cases): effect -> overrides.
#: Inflow: blade-element theory at fixed speed gives dT/T ~ -0.8 v_c / v_hover, 0.15-0.2 per m/s
#: for 0.03-1.5 kg quadrotors; quadratic drag 1/2 rho C_d A / m with C_d ~ 1; R/arm ~ 0.5 (a
#: Crazyflie 23/46 mm, a 10" prop on a 225 mm arm); a 1S LiPo sags ~0.2 V at hover current;
#: MEMS scale errors ~1 %, board misalignment ~0.5 deg; vibration a few m/s^2 per rotor.
REALISTIC: dict[str, dict[str, Any]] = {
    "rotor_inflow": {"rotor_inflow": 0.15},
    "drag_quad": {"drag_quad": 0.03},
    "ground_effect": {"ground_effect": 0.5, "ground_clearance": 2.0},
    "battery": {"battery_sag": 0.06, "battery_drain": 5e-4},
    "saturation": {"saturation": 0.8},
    "imu_axes": {"imu_scale": 0.01, "imu_misalign": 0.01},
    "vibration": {"vibration": 3.0, "aa_cutoff": 100.0},
    "gust": {"gust": 0.5, "gust_tau": 2.0, "wind": (1.0, 0.0, 0.0)},
}


def apply_effects(
    o: dict[str, Any], vehicle: Vehicle, imu: Imu, rng: np.random.Generator
) -> tuple[dict[str, Any], Imu, dict[str, Any]]:
    """The `BODY_EFFECTS` overrides `o` of a scenario on the true `vehicle`: FlightSpec keywords
    (`rotor_inflow` as k_z, `plant`), the IMU with its axes and vibration (drawn from `rng` only
    when asked), and what truth.json records."""
    m = vehicle.n_rotors
    f_hover = vehicle.mass * GRAVITY / m
    spec: dict[str, Any] = {}
    rec: dict[str, Any] = {}
    if float(o["rotor_inflow"]) > 0:  # dT = -k_z sqrt(f) v_c = -s f_hover v_c at hover
        spec["rotor_inflow"] = float(o["rotor_inflow"]) * math.sqrt(f_hover)
        rec |= {"rotor_inflow_per_m_s": float(o["rotor_inflow"]), "k_rotor_inflow": spec["rotor_inflow"]}
    plant = _plant_settings(o, vehicle)
    if plant:
        spec["plant"] = PlantSpec(**plant)
        rec |= {k: list(v) if isinstance(v, tuple) else v for k, v in plant.items()}
        if spec["plant"].battery:
            rec["battery_v_ref"] = spec["plant"].v0 * (1.0 - spec["plant"].sag)
    changes: dict[str, Any] = {}
    for key, fields in (("imu_scale", ("gyro_scale", "acc_scale")), ("imu_misalign", ("misalign",))):
        if float(o[key]) > 0:
            changes |= {f: tuple((rng.uniform(-1.0, 1.0, 3) * float(o[key])).tolist()) for f in fields}
    if float(o["vibration"]) > 0:
        hz = o["vibration_hz"] or (vehicle.hover_command() / (2 * math.pi) if vehicle.motor_input == "rad_s" else 270.0)
        changes |= {"vibration": float(o["vibration"]), "vibration_hz": float(hz)}
    if o["aa_cutoff"] is not None:
        changes["aa_cutoff"] = float(o["aa_cutoff"])
    rec |= {k: list(v) if isinstance(v, tuple) else v for k, v in changes.items()}
    return spec, dataclasses.replace(imu, **changes), rec


def _plant_settings(o: dict[str, Any], vehicle: Vehicle) -> dict[str, Any]:
    """`PlantSpec` keywords from the overrides `o` (only the effects switched on)."""
    out: dict[str, Any] = {}
    if float(o["drag_quad"]) > 0:
        out["drag_quad"] = (float(o["drag_quad"]) * vehicle.mass,) * 3
    if float(o["ground_effect"]) > 0:
        arm = float(np.mean(np.linalg.norm(vehicle.positions[:, :2], axis=1)))
        out |= {"ground_radius": float(o["ground_effect"]) * arm, "ground_clearance": float(o["ground_clearance"])}
    if float(o["battery_sag"]) > 0 or float(o["battery_drain"]) > 0:
        cells = 1 if vehicle.mass < 0.1 else 3
        out |= {
            "v0": float(o["battery_v0"] or 4.2 * cells),
            "sag": float(o["battery_sag"]),
            "drain": float(o["battery_drain"]),
            "cmd_scales_with_voltage": vehicle.motor_input != "rad_s",
        }
    if float(o["saturation"]) > 0:
        out["saturation"] = float(o["saturation"])
    wind = np.broadcast_to(np.asarray(o["wind"], dtype=float), 3)  # a number: along world x
    if float(o["gust"]) > 0 or np.any(wind):
        out |= {"gust": float(o["gust"]), "gust_tau": float(o["gust_tau"]), "wind": tuple(wind.tolist())}
    return out


#: The randomized suite's distributions (`random_effects`): each line switched on with
#: probability 1/2, then its magnitudes drawn uniformly in the ranges (biases normal, sigma).
RANDOM: dict[str, dict[str, tuple[float, float]]] = {
    "rotor_drag": {"rotor_drag": (0.1, 0.4)},  # D/m at hover, 1/s (Faessler et al.: 0.26-0.28)
    "rotor_inflow": {"rotor_inflow": (0.05, 0.25)},
    "drag_quad": {"drag_quad": (0.01, 0.08)},
    "ground_effect": {"ground_effect": (0.4, 0.6), "ground_clearance": (1.0, 4.0)},
    "battery": {"battery_sag": (0.02, 0.10), "battery_drain": (1e-4, 1e-3)},
    "saturation": {"saturation": (0.7, 0.95)},
    "motor_spread": {"thrust_spread": (0.0, 0.05), "tm_spread": (0.0, 0.05)},
    "motor_asymmetry": {"tm_asymmetry": (0.0, 0.3)},  # rise tm (1 - a), fall tm (1 + a)
    "imu_bias": {"gyro_bias": (0.0, 0.005), "acc_bias": (0.0, 0.1), "gyro_rw": (0.0, 3e-4), "acc_rw": (0.0, 2e-3)},
    "imu_delay": {"imu_delay": (0.0, 0.005)},
    "imu_axes": {"imu_scale": (0.002, 0.02), "imu_misalign": (0.002, 0.02)},
    "vibration": {"vibration": (1.0, 6.0), "aa_cutoff": (40.0, 250.0)},
    "gust": {"gust": (0.2, 1.0), "gust_tau": (0.5, 5.0), "wind_speed": (0.0, 2.0)},
}


def random_effects(rng: np.random.Generator, tm: float | None) -> dict[str, Any]:
    """One randomized-suite draw (`RANDOM`): scenario overrides. `tm` is the scenario's motor
    constant when it accepts separate rise and fall constants, else None (no asymmetry)."""
    out: dict[str, Any] = {}
    for effect, ranges in RANDOM.items():
        # every number is drawn whether the effect is on or not: each keeps its stream position
        on = rng.uniform() < 0.5
        vals = {k: float(rng.uniform(lo, hi)) for k, (lo, hi) in ranges.items()}
        unit = rng.standard_normal(6)
        heading = rng.uniform(0.0, 2 * math.pi)
        if not on or (effect == "motor_asymmetry" and tm is None):
            continue
        if effect == "motor_asymmetry":
            vals = {"tm_rise": tm * (1 - vals["tm_asymmetry"]), "tm_fall": tm * (1 + vals["tm_asymmetry"])}
        elif effect == "imu_bias":  # sigma of a normal bias per axis
            vals["gyro_bias"] = tuple(map(float, vals["gyro_bias"] * unit[:3]))
            vals["acc_bias"] = tuple(map(float, vals["acc_bias"] * unit[3:]))
        elif effect == "gust":
            speed = vals.pop("wind_speed")
            vals["wind"] = (speed * math.cos(heading), speed * math.sin(heading), 0.0)
        out |= vals
    return out
