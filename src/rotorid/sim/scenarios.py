"""Named, seeded simulation scenarios reproducing each paper's set-up, with ground truth.

```python
from rotorid.sim import scenarios
sc = scenarios.run("eschmann-crazyflie", seed=0, duration=20.0)
sc.flights["thrust"], sc.truth.params["tm"], sc.vehicle, sc.true_vehicle
```

- `eschmann-crazyflie` — Eschmann et al. Sec. IV-A: a Crazyflie 2.1 (27 g, normalized motor
  commands, T_m = 0.07 s, thrust curve K = [0.0227, -0.0119, 0.1283] N, hovering at u = 0.630
  like the real logs' median 0.64), three manually flown excitation flights "thrust",
  "roll_pitch", "yaw" logged at 1 kHz with a BMI088-like IMU. Inertia about the CoM (= body
  origin, IMU there too). The pilot holds the position loosely (cascade of Kwon eq. 40-48
  with slow position gains) and adds: "thrust" — random thrust doublets (±50 %) then a
  0.3-6 Hz chirp (±45 %) on the collective; "roll_pitch" — random ±25 deg roll and pitch
  doublets; "yaw" — random ±4 rad/s yaw-rate doublets; plus small band-limited noise on the
  other axes. On these flights `rotorid.excitation` reads about thrust 0.23, roll/pitch
  27-33 rad/s^2, yaw 14 rad/s^2 (35 s, seed 0), like the real logs.
- `kwon-payload` — Kwon et al. Sec. IV, Tables 3-6: 500 g X quadrotor with a payload, J =
  diag(50, 50, 60) g m^2 about the CoM, CoM at (8, -21, 0) mm from the geometric centre
  (the offsets of H_1 in eq. 10 are the CoM relative to the centre; eq. 41 compensates
  c x T), IMU at (-18, 21, -11) mm from the CoM (Table 4), C_T/C_M = 0.7 as the text states
  (so K_tau = C_M/C_T = 1/0.7 m), thrust noise 0.0022 N (eq. 51), gyro/accelerometer noise
  densities and resolutions of Tables 1-2 at 1 kHz, no motor lag (rotor speeds follow the
  controller, as in the paper), cascaded PD of Table 5 and jerk-limited trajectories:
  Interval 1 climbs 1 m (no attitude excitation), Interval 2 moves 1 m along x and y
  (excites roll and pitch: J_xx, J_yy), Interval 3 yaws 45 deg (excites J_zz). One flight
  "trajectory"; the interval start times are in `flight.meta["sim"]["intervals"]`. The flight
  starts hovering at z = 0 (the paper's "position trajectory for hovering" before the 1 m
  target; there is no ground model, and for the IMU sitting on the ground reads the same).
  Logged like an autopilot: gyro, accelerometer, commands and rotor speeds, plus the attitude
  `quat` and position `pos` of the body origin (eq. 44-46 read the attitude quaternion
  "acquired by IMU or a camera"; logged noise-free, as the paper's controller uses it;
  `attitude=False` drops them). IMU at 1 kHz (`imu_rate`): Table 1's 0.006 deg/s/sqrt(Hz)
  differentiated at 1 kHz gives 4.7 rad/s^2 RMS, the order of Table 7's "about 7" for the IMU,
  whereas at 100 Hz (the rate of the paper's static Pixhawk test, eq. 49-50) it would be
  0.15 rad/s^2: Table 7's RMSE is differentiated sensor noise, not a more aggressive flight.
  The estimator still steps at the paper's 100 Hz (`rotorid.methods.online`). Thrust noise
  (eq. 51) is drawn per 1 ms integration step (the paper adds it to each controller output
  of eq. 47; the per-sample sigma is the same). The IMU height relative to the CoM is weakly
  excited by these gentle moves (rms angular acceleration about 0.05 rad/s^2): its
  Cramér-Rao sigma from the accelerometer noise is about 8 mm of the 11 mm (see
  `benchmarks/bench_online.py`).
- `six-config-a` / `six-config-b` — Six et al. Sec. IV: a 1.285 kg '+' quadrotor (arm 0.225 m,
  an assumption: the paper gives none), k_t = 3.63e-6 N/(rad/s)^2, k_d = 5.11e-8 N m/(rad/s)^2
  and the inertia of Table II; configuration B adds 0.125 kg on the +x arm and 0.042 kg on
  the -y arm (point masses at the arm tips, 28 mm below the arms; total 1.452 kg as
  measured in the paper). Pilot-like flights "train" and "test" at 200 Hz with IMU (at the
  body origin O_d) and motion capture (5 ms delay), motor input rad/s, motor lag `tm`
  (`motor_input="normalized"`: duty cycles u = ω / 1500 rad/s that a battery sag scales, no
  rotor speeds logged, k_t and k_d per command², i.e. times 1500²). The
  pilot: band-limited noise (from 0.05 Hz up to 1.5 Hz) on roll (8 deg RMS) and pitch
  (5 deg), on the collective thrust (15 %, to 2.5 Hz) and the yaw rate (25 deg/s, to 1 Hz),
  faded in/out over 2 s, over a loose position hold
  that keeps the vehicle inside a 6 x 4 x 4 m arena.
  The truth `I_*` and `ms_*` are about the body origin O_d (Six eq. 1-2), not the CoM.

Model mismatch — effects the methods do not model, for the calibration benchmark
(`benchmarks/calibration.py`). Every scenario accepts them as overrides, off by default:
`rotor_drag` (the linear rotor-drag model, Martin & Salaün 2010, Kai et al. 2017, Faessler
et al. 2018: horizontal force -k Omega_i v_perp per rotor at its hub, hence also a moment; given
as the horizontal drag-to-mass ratio D/m at hover, 1/s — Faessler et al. measured 0.26-0.28
1/s on their quadrotor), `thrust_spread` and `tm_spread` (per-motor factors 1 + U(-s, s) on the
thrust curve and the motor time constant, drawn per seed; the truth is the mean over motors,
what a lumped model should find, per motor as `thrust_cJ_mI` / `k_t_mI` / `tm_mI`),
`gyro_bias`/`acc_bias` (constant, body; None = the scenario's own), `gyro_rw`/`acc_rw` (bias
random walk densities), `imu_delay` (s the IMU lags the commands and the motion capture), and
for `eschmann-crazyflie` `izz_ratio` (the true I_zz / ((I_xx + I_yy) / 2); 1.832 is the ratio
the delay method assumes). The `*-mismatch` variants (`MISMATCH`) switch them all on: the
same pilot, noise streams and nominal vehicle as their base scenario for the same seed, plus
rotor drag 0.3 1/s, ±5 % motor spread, gyro bias 0.5 deg/s and accelerometer bias ~0.1 m/s^2
per axis with random walks, a 4 ms IMU time offset, for `eschmann-crazyflie-mismatch` C_xy->z
= 2.02 and motors rising in 55 ms and falling in 85 ms (their mean is the paper scenario's
70 ms; the real log10 fits 66 / 99 ms), and for the Six variants an 8 ms motion-capture delay
(the paper's set-up: 5 ms).
`truth.vehicle["mismatch"]` records every effect's true value.

Physics other simulators and real vehicles have (`rotorid.sim.effects.BODY_EFFECTS`, off by
default, documented there with their sources): rotor inflow, quadratic body drag, ground effect,
battery sag (logged as `vbat`; the nominal thrust curve holds at `battery_v_ref`), motor
saturation, IMU scale errors and misalignment, frame vibration with an anti-alias low-pass,
Dryden-like gusts; `effects.REALISTIC` gives one realistic magnitude of each. The randomized
suite `<paper scenario>-random` (`RANDOM_SUITE`) flies the paper scenario with a mixture drawn per
seed (`effects.RANDOM`: each effect, old and new, on with probability 1/2 at a uniform
magnitude; configuration B draws what A does, the same vehicle), recorded in
`truth.vehicle["random"]`; explicit overrides win over the draw.

Every scenario accepts `duration` (s per flight), `dt` (internal step), `noise` (False turns
off all sensor and thrust noise and biases), `control_rate` (Hz), `drag` (linear body drag,
N s/m per body axis, default 0), the mismatch effects above and the scenario-specific
overrides listed in `OVERRIDES` (e.g. `tm`, `tm_rise`/`tm_fall`, `mocap_delay`, `gyro_dot`; for the
Six scenarios `flights`, a subset of ("train", "test") to fly: each flight keeps its own streams). `Scenario.states` holds the
true states at the log instants (angular acceleration, CoM acceleration, rotor states and
thrusts, body force and moment) for checking methods against more than the parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from rotorid.errors import RotoridError
from rotorid.flight import Flight
from rotorid.frames import GRAVITY
from rotorid.result import Truth
from rotorid.signal import sid_chirp
from rotorid.sim.control import Gains
from rotorid.sim.effects import BODY_EFFECTS, apply_effects, random_effects
from rotorid.sim.sensors import DEG, Imu, Mocap
from rotorid.sim.simulator import FlightSpec, References, Streamed, fly, stream
from rotorid.sim.trajectory import band_limited_noise, chirp, doublets, evaluate, move
from rotorid.vehicle import Vehicle, crazyflie, quad_plus, quad_x

PAPER = ("eschmann-crazyflie", "kwon-payload", "six-config-a", "six-config-b")
#: Model-mismatch effects (see the module docstring), off by default in every scenario.
_EFFECTS: dict[str, Any] = {
    "rotor_drag": 0.0,
    "thrust_spread": 0.0,
    "tm_spread": 0.0,
    "gyro_bias": None,
    "acc_bias": None,
    "gyro_rw": 0.0,
    "acc_rw": 0.0,
    "imu_delay": 0.0,
    **BODY_EFFECTS,
}
_MISMATCH = {
    "rotor_drag": 0.3,  # 1/s, D/m at hover (Faessler et al. 2018: 0.26-0.28)
    "thrust_spread": 0.05,
    "tm_spread": 0.05,
    "gyro_bias": (0.0087, -0.006, 0.004),  # rad/s (0.5 deg/s on x)
    "acc_bias": (0.10, -0.08, 0.12),  # m/s^2 (~10 mg)
    "gyro_rw": 2e-4,  # rad/s/sqrt(s)
    "acc_rw": 1e-3,  # m/s^2/sqrt(s)
    "imu_delay": 0.004,  # s
}
#: The model-mismatch variants: name -> (base scenario, default overrides).
MISMATCH: dict[str, tuple[str, dict[str, Any]]] = {
    "eschmann-crazyflie-mismatch": (
        "eschmann-crazyflie",
        {**_MISMATCH, "izz_ratio": 2.02, "tm_rise": 0.055, "tm_fall": 0.085},
    ),
    "kwon-payload-mismatch": ("kwon-payload", dict(_MISMATCH)),
    "six-config-a-mismatch": ("six-config-a", {**_MISMATCH, "mocap_delay": 0.008}),
    "six-config-b-mismatch": ("six-config-b", {**_MISMATCH, "mocap_delay": 0.008}),
}
#: Chirp flights as ArduPilot's System ID mode flies them: name -> (SID_AXIS, axis).
CHIRP: dict[str, tuple[int, str]] = {
    "chirp-roll": (7, "roll"),
    "chirp-pitch": (8, "pitch"),
    "chirp-yaw": (9, "yaw"),
    "chirp-thrust": (13, "thrust"),
}
#: The randomized suite: name -> base scenario; each seed draws a mixture of effects
#: (`rotorid.sim.effects.random_effects`), recorded in truth.vehicle["random"].
RANDOM_SUITE = {f"{base}-random": base for base in PAPER}
NAMES = PAPER + tuple(MISMATCH) + tuple(RANDOM_SUITE) + tuple(CHIRP)

#: progress(flight, fraction done)
_Progress = Callable[[str, float], None] | None
#: Most integration steps per simulated flight (~1 GB of channels; an hour at 1 kHz).
MAX_STEPS = 4e6
_COMMON = {"duration": None, "dt": 1e-3, "noise": True, "control_rate": 500.0, "drag": (0.0, 0.0, 0.0), **_EFFECTS}
#: gyro_dot = log PX4's filtered angular acceleration (IMU_DGYRO_CUTOFF 30 Hz) as `gyro_dot`.
_SIX = {"tm": 0.01, "mocap_delay": 0.005, "thrust_noise": 0.01, "gyro_dot": False, "flights": None}
#: Overrides each scenario accepts (besides those in every scenario: duration, dt, noise, control_rate,
#: drag = linear body drag coefficients (N s/m, body x, y, z), off by default).
OVERRIDES: dict[str, dict[str, Any]] = {
    "eschmann-crazyflie": {"tm": 0.07, "tm_rise": None, "tm_fall": None, "k_tau": 0.0055, "izz_ratio": 1.832},
    "kwon-payload": {"tm": None, "imu_rate": 1000.0, "attitude": True},
    "six-config-a": {**_SIX, "imu_offset": (0.0, 0.0, 0.0), "motor_input": "rad_s"},
    "six-config-b": {**_SIX, "imu_offset": (0.0, 0.0, 0.0), "motor_input": "rad_s"},
}
OVERRIDES |= {name: {**OVERRIDES[base], **extra} for name, (base, extra) in MISMATCH.items()}
#: SID_MAGNITUDE per axis: deg/s added to the rate target (SID_AXIS 7-9), or the collective
#: thrust's relative change (13, mixer throttle).
_SID_MAGNITUDE = {"roll": 60.0, "pitch": 60.0, "yaw": 30.0, "thrust": 0.15}
for _name, (_, _axis) in CHIRP.items():
    OVERRIDES[_name] = {
        "tm": 0.07,
        "k_tau": 0.0055,
        "sid_magnitude": _SID_MAGNITUDE[_axis],
        "sid_f_start": 0.5,
        "sid_f_stop": 20.0,
        "sid_t_fade_in": 2.0,
        "sid_t_rec": 24.0,
        "sid_t_fade_out": 1.0,
        "log_rate": 500.0,
    }
OVERRIDES |= {name: OVERRIDES[base] for name, base in RANDOM_SUITE.items()}


@dataclass
class Scenario:
    """Simulated flights with their ground truth. `vehicle` holds only what a user knows before
    identifying; `true_vehicle` everything. `states[flight]` are the true states at the log
    instants (`rotorid.sim.simulator.fly`; none for a `Streamed` flight of a `lazy` run)."""

    name: str
    seed: int
    flights: dict[str, Flight | Streamed]
    truth: Truth
    vehicle: Vehicle
    true_vehicle: Vehicle
    states: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


def options(name: str, **overrides: Any) -> dict[str, Any]:
    """The scenario's settings with `overrides` applied (None values keep the default).
    Unknown names or overrides raise a `RotoridError` listing the allowed ones."""
    if name not in NAMES:
        raise RotoridError(f"unknown scenario '{name}'; choose one of {', '.join(NAMES)}")
    allowed = {**_COMMON, **OVERRIDES[name]}
    bad = sorted(set(overrides) - set(allowed))
    if bad:
        raise RotoridError(
            f"scenario '{name}': unknown override(s) {', '.join(bad)}; allowed: {', '.join(sorted(allowed))}"
        )
    opts = {**allowed, **{k: v for k, v in overrides.items() if v is not None}}
    for key in ("duration", "dt", "control_rate"):
        if opts[key] is not None and not float(opts[key]) > 0:
            raise RotoridError(f"scenario '{name}': {key} must be positive, got {opts[key]}")
    if opts["duration"] is not None and not float(opts["duration"]) / float(opts["dt"]) <= MAX_STEPS:
        raise RotoridError(
            f"scenario '{name}': duration {opts['duration']:g} s at dt {opts['dt']:g} s is more than {MAX_STEPS:g} "
            "steps per flight (it would not fit in memory); give a shorter --duration"
        )
    return opts


def run(name: str, seed: int = 0, progress: _Progress = None, lazy: bool = False, **overrides: Any) -> Scenario:
    """Simulate the named scenario with the given seed, `progress(flight, fraction)` during integration;
    `lazy`: `simulator.Streamed` flights where they allow it. Unknown overrides raise a `RotoridError`."""
    opts = options(name, **overrides)
    if int(seed) < 0:
        raise RotoridError(f"scenario '{name}': the seed must be a non-negative integer, got {seed}")
    if name in CHIRP:
        return _chirp(name, int(seed), opts, partial(_fly_all, progress=progress, lazy=lazy))
    drawn = {}
    if name in RANDOM_SUITE:  # the vehicle's own draw: configuration B is A's vehicle with a payload
        family = "six-config-a" if _base(name).startswith("six") else _base(name)
        drawn = random_effects(
            _rng(family, int(seed), "random/effects"),
            OVERRIDES[name].get("tm") if "tm_rise" in OVERRIDES[name] else None,
        )
        opts = options(name, **{**drawn, **{k: v for k, v in overrides.items() if v is not None}})
    sc = _BUILDERS[_base(name)](name, int(seed), opts, partial(_fly_all, progress=progress, lazy=lazy))
    if drawn:
        sc.truth.vehicle["random"] = drawn
    return sc


def _base(name: str) -> str:
    """The paper scenario a variant flies."""
    return RANDOM_SUITE.get(name) or MISMATCH.get(name, (name,))[0]


def _rng(name: str, seed: int, flight: str) -> np.random.Generator:
    """An independent, reproducible stream per (scenario, seed, flight); a mismatch variant
    draws the same streams as its base scenario."""
    key = [seed, (PAPER + tuple(CHIRP)).index(_base(name)), *flight.encode()]
    return np.random.default_rng(key)


@dataclass(frozen=True)
class _Effects:
    """The model-mismatch effects of one run: FlightSpec keywords, the IMU with its biases,
    walks and offset, and what truth.json records."""

    spec: dict[str, Any]
    imu: Imu
    record: dict[str, Any]

    def scaled_mean(self, key: str) -> float:
        """Mean over motors of a per-motor factor (1 without spread)."""
        s = self.spec.get(key)
        return 1.0 if s is None else float(np.mean(s))


def _effects(name: str, seed: int, o: dict[str, Any], vehicle: Vehicle, imu: Imu) -> _Effects:
    """Apply the mismatch overrides: draw the motor spreads (own stream of the scenario `name`),
    convert the rotor drag D/m at hover of `vehicle` to k_rd (D = k_rd sum_i sqrt(f_hover),
    vertical rotor axes)."""
    rng = _rng(name, seed, "mismatch/motors")
    m = vehicle.n_rotors
    spec: dict[str, Any] = {}
    rec: dict[str, Any] = {}
    for key, what in (("thrust_spread", "thrust_scale"), ("tm_spread", "tm_scale")):
        if float(o[key]) > 0 and (what == "thrust_scale" or vehicle.tm_rise is not None):
            spec[what] = tuple((1.0 + float(o[key]) * rng.uniform(-1.0, 1.0, m)).tolist())
            rec[what] = list(spec[what])
    if float(o["rotor_drag"]) > 0:
        f_hover = vehicle.mass * GRAVITY / m
        spec["rotor_drag"] = float(o["rotor_drag"]) * vehicle.mass / (m * math.sqrt(f_hover))
        rec |= {"rotor_drag_per_mass_at_hover": float(o["rotor_drag"]), "k_rotor_drag": spec["rotor_drag"]}
    changes = {k: tuple(map(float, o[k])) for k in ("gyro_bias", "acc_bias") if o[k] is not None}
    changes |= {k: float(o[k]) for k in ("gyro_rw", "acc_rw") if float(o[k]) > 0}
    if float(o["imu_delay"]):
        changes["delay"] = float(o["imu_delay"])
    imu = dataclasses.replace(imu, **changes)
    body_spec, imu, body_rec = apply_effects(o, vehicle, imu, _rng(name, seed, "mismatch/imu"))
    spec, rec = spec | body_spec, rec | body_rec
    if not o["noise"]:
        imu = imu.noiseless()
        changes = {k: v for k, v in changes.items() if k == "delay"}
        rec = {k: v for k, v in rec.items() if k not in ("vibration", "vibration_hz")}
    rec |= {"imu_delay" if k == "delay" else k: v for k, v in changes.items()}
    return _Effects(spec, imu, rec)


def _truth_vehicle(true: Vehicle, fx: _Effects, **extra: Any) -> dict[str, Any]:
    """truth.json's vehicle: the true vehicle, plus the mismatch effects when there are any."""
    return {**true.to_dict(), **extra, **({"mismatch": fx.record} if fx.record else {})}


def _fly_all(
    name: str, seed: int, vehicle: Vehicle, specs: dict[str, FlightSpec], progress: _Progress, lazy: bool
) -> tuple[dict[str, Flight | Streamed], dict[str, dict[str, np.ndarray]]]:
    """Each flight of `specs` (`fly`, or `stream` when `lazy`); a streamed flight has no states."""
    flights, states = {}, {}
    for fname, spec in specs.items():
        n = spec.duration / spec.dt
        cb = (lambda k, f=fname, n=n: progress(f, k / n)) if progress else None
        args = (vehicle, spec, _rng(name, seed, fname), f"sim:{name}/{fname}", cb)
        out = stream(*args) if lazy else fly(*args)
        flights[fname], states[fname] = (out, {}) if isinstance(out, Streamed) else out
    return flights, states


def _tm(opts: dict[str, Any]) -> tuple[float | None, float | None]:
    rise = opts.get("tm_rise") or opts["tm"]
    fall = opts.get("tm_fall") or opts["tm"]
    return rise, fall


def _tm_truth(rise: float | None, fall: float | None) -> dict[str, float]:
    if rise is None:
        return {}
    if math.isclose(rise, fall):
        return {"tm": rise}
    return {"tm": 0.5 * (rise + fall), "tm_rise": rise, "tm_fall": fall}


def _hold_refs(
    position: tuple[float, float, float], offsets: np.ndarray | None = None, yaw: np.ndarray | None = None
) -> Callable[[np.ndarray], References]:
    """References: hold a position; yaw and excitation offsets given on the control grid."""

    def fn(t: np.ndarray) -> References:
        n = len(t)
        z = np.zeros((n, 3))
        off = z.copy() if offsets is None else offsets[:n]
        return References(np.tile(position, (n, 1)), z, z.copy(), np.zeros(n) if yaw is None else yaw[:n], off)

    return fn


def _ctrl_grid(duration: float, dt: float, control_rate: float) -> np.ndarray:
    every = round(1.0 / (control_rate * dt))
    return np.arange(round(duration / dt) // every + 1) * (every * dt)


# -- eschmann-crazyflie ----------------------------------------------------------------------
_CF_CURVE = (0.0227, -0.0119, 0.1283)


def _crazyflie_true(o: dict[str, Any], source: str) -> Vehicle:
    """The Crazyflie 2.1 of Eschmann et al. with its true thrust curve, lags and inertia
    (I_zz = izz_ratio (I_xx + I_yy) / 2, Eschmann eq. 93: C_xy->z = 1.832 by default)."""
    rise, fall = _tm(o)
    ixx, iyy = 1.57e-5, 1.62e-5
    return crazyflie().replace(
        thrust_coeffs=np.array(_CF_CURVE),
        k_tau=float(o["k_tau"]),
        tm_rise=rise,
        tm_fall=fall,
        inertia=np.diag([ixx, iyy, float(o.get("izz_ratio", 1.832)) * 0.5 * (ixx + iyy)]),
        com=np.zeros(3),
        source=source,
    )


def _crazyflie_imu(rate: float) -> Imu:
    """A BMI088-like IMU, as on the Crazyflie 2.1."""
    return Imu(
        rate=rate,
        gyro_nd=0.014 * DEG,
        acc_nd=160e-6 * GRAVITY,
        gyro_bias=(0.002, -0.003, 0.001),
        acc_bias=(0.03, -0.02, 0.05),
        gyro_res=2000.0 / 32768 * DEG,
        acc_res=24 * GRAVITY / 32768,
    )


def _crazyflie_truth(true: Vehicle) -> dict[str, float]:
    """truth.json's parameters of a simulated Crazyflie (lumped, before any motor spread)."""
    return {
        "mass": true.mass,
        **_tm_truth(true.tm_rise, true.tm_fall),
        **{f"thrust_c{j}": float(c) for j, c in enumerate(_CF_CURVE)},
        "I_xx": float(true.inertia[0, 0]),
        "I_yy": float(true.inertia[1, 1]),
        "I_zz": float(true.inertia[2, 2]),
        "k_tau": true.k_tau,
        "hover_cmd": true.hover_command(),
    }


def _crazyflie_gains(true: Vehicle) -> Gains:
    """The pilot's loose position hold around a 12 rad/s attitude loop (10 rad/s in yaw)."""
    return Gains.from_bandwidth(true.inertia, (12.0, 12.0, 10.0), 0.8, pos_wn=(0.8, 0.8, 1.2))


def _eschmann(name: str, seed: int, o: dict[str, Any], fly_all: Callable[..., Any]) -> Scenario:
    rise, fall = _tm(o)
    base = crazyflie()
    true = _crazyflie_true(o, "sim:eschmann-crazyflie")
    fx = _effects(name, seed, o, true, _crazyflie_imu(1000.0))
    imu = fx.imu
    dur = float(o["duration"] or 35.0)
    dt, cr = float(o["dt"]), float(o["control_rate"])
    gains = _crazyflie_gains(true)
    t = _ctrl_grid(dur, dt, cr)
    a = min(1.0, 0.1 * dur)
    b = dur - a
    specs = {}
    for fname in ("thrust", "roll_pitch", "yaw"):
        rng = _rng(name, seed, fname + "/excitation")
        off = np.zeros((len(t), 3))
        yaw = None
        if fname == "thrust":
            mid = 0.5 * (a + b)
            off[:, 2] = doublets(t, a, mid, 0.5, (0.15, 0.6), rng, rise=0.03) + chirp(t, mid, b, 0.3, 6.0, 0.45)
            off[:, 0] = band_limited_noise(t, 3 * DEG, 2.0, rng)
            off[:, 1] = band_limited_noise(t, 3 * DEG, 2.0, rng)
        elif fname == "roll_pitch":
            off[:, 0] = doublets(t, a, b, 25 * DEG, (0.15, 0.6), rng, rise=0.03)
            off[:, 1] = doublets(t, a, b, 25 * DEG, (0.15, 0.6), rng, rise=0.03)
            off[:, 2] = band_limited_noise(t, 0.05, 1.0, rng)
        else:
            rate = doublets(t, a, b, 4.0, (0.2, 0.8), rng, rise=0.05)
            yaw = np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) * np.diff(t))])
            off[:, 0] = band_limited_noise(t, 2 * DEG, 2.0, rng)
            off[:, 1] = band_limited_noise(t, 2 * DEG, 2.0, rng)
            off[:, 2] = band_limited_noise(t, 0.05, 1.0, rng)
        specs[fname] = FlightSpec(
            duration=dur,
            references=_hold_refs((0.0, 0.0, 1.0), off, yaw),
            gains=gains,
            imu=imu,
            log_rate=1000.0,
            dt=dt,
            control_rate=cr,
            drag=tuple(o["drag"]),
            **fx.spec,
            meta={"scenario": name, "flight": fname, "seed": seed},
        )
    flights, states = fly_all(name, seed, true, specs)
    true, truth = _spread_truth(true, _crazyflie_truth(true), fx, np.array(_CF_CURVE), rise, fall)
    user = base.replace(source="sim:eschmann-crazyflie (user knowledge)")
    return Scenario(name, seed, flights, Truth(truth, _truth_vehicle(true, fx)), user, true, states, o)


def _spread_truth(
    true: Vehicle,
    truth: dict[str, float],
    fx: _Effects,
    curve: np.ndarray,
    rise: float | None,
    fall: float | None,
    names: tuple[str, ...] = ("thrust_c0", "thrust_c1", "thrust_c2"),
) -> tuple[Vehicle, dict[str, float]]:
    """With motor spread, the lumped truth is the mean over motors (the thrust polynomial and
    the time constants scale linearly); each motor's own value is added with a `_mI` suffix."""
    if not fx.spec.get("thrust_scale") and not fx.spec.get("tm_scale"):
        return true, truth
    ks, ts = fx.scaled_mean("thrust_scale"), fx.scaled_mean("tm_scale")
    truth = dict(truth)
    if fx.spec.get("thrust_scale"):
        for i, si in enumerate(fx.spec["thrust_scale"], start=1):
            truth |= {f"{n}_m{i}": float(c * si) for n, c in zip(names, curve, strict=True)}
        truth |= {n: float(c * ks) for n, c in zip(names, curve, strict=True)}
        if "k_d" in truth:
            truth["k_d"] = truth["k_tau"] * truth["k_t"]
    if fx.spec.get("tm_scale") and rise is not None:
        truth |= _tm_truth(rise * ts, fall * ts)
        truth |= {f"tm_m{i}": float(0.5 * (rise + fall) * si) for i, si in enumerate(fx.spec["tm_scale"], start=1)}
    true = true.replace(
        thrust_coeffs=np.asarray(true.thrust_coeffs) * ks,
        tm_rise=None if rise is None else rise * ts,
        tm_fall=None if fall is None else fall * ts,
    )
    if "hover_cmd" in truth:
        truth["hover_cmd"] = true.hover_command()
    return true, truth


# -- kwon-payload --------------------------------------------------------------------------
def _kwon_references(dur: float) -> Callable[[np.ndarray], References]:
    """Kwon et al. Table 5 moves: climb 1 m at 0.1 dur, 1 m in x and y at 0.3 dur, a 45° yaw at 0.6 dur."""
    t1, t2, t3 = 0.1 * dur, 0.3 * dur, 0.6 * dur
    lim = {"v_max": 0.2, "a_max": 0.2, "j_max": 0.5}  # Table 5
    mz, mx, my = [move(1.0, start=t1, **lim)], [move(1.0, start=t2, **lim)], [move(1.0, start=t2, **lim)]
    myaw = [move(math.radians(45.0), math.radians(20.0), math.radians(15.0), start=t3)]

    def refs(t: np.ndarray) -> References:
        px, vx, ax = evaluate(mx, t)
        py, vy, ay = evaluate(my, t)
        pz, vz, az = evaluate(mz, t)
        psi, _, _ = evaluate(myaw, t)
        return References(
            np.column_stack([px, py, pz]),
            np.column_stack([vx, vy, vz]),
            np.column_stack([ax, ay, az]),
            psi,
            np.zeros((len(t), 3)),
        )

    return refs


def _kwon(name: str, seed: int, o: dict[str, Any], fly_all: Callable[..., Any]) -> Scenario:
    rise, fall = _tm(o)
    com = np.array([0.008, -0.021, 0.0])  # Table 3 (CoM relative to the geometric centre)
    imu_rel_com = np.array([-0.018, 0.021, -0.011])  # Table 4
    c_t = 1.9e-6
    geom = quad_x(arm=0.2, mass=0.5, name="kwon-payload")
    known = geom.replace(
        motor_input="rad_s",
        thrust_exponents=(2,),
        thrust_coeffs=np.array([c_t]),
        k_tau=1.0 / 0.7,  # C_M / C_T with C_T / C_M = 0.7 (Sec. IV-B)
        cmd_min=0.0,
        cmd_max=1300.0,
    )
    true = known.replace(
        inertia=np.diag([0.050, 0.050, 0.060]),  # Table 3: 50, 50, 60 g m^2
        com=com,
        imu_offset=com + imu_rel_com,
        tm_rise=rise,
        tm_fall=fall,
        source="sim:kwon-payload",
    )
    noise = bool(o["noise"])
    rate = float(o["imu_rate"])
    imu = Imu(
        rate=rate,
        gyro_nd=0.006 * DEG,  # Table 1
        acc_nd=0.004,  # Table 2
        gyro_res=0.001 * DEG,
        acc_res=0.001,
    )
    fx = _effects(name, seed, o, true, imu)
    imu = fx.imu
    dur = float(o["duration"] or 50.0)
    if dur < 10.0:
        raise RotoridError(f"kwon-payload: duration {dur:g} s is too short for the three intervals (>= 10 s)")
    t2, t3 = 0.3 * dur, 0.6 * dur
    spec = FlightSpec(
        duration=dur,
        references=_kwon_references(dur),
        gains=Gains.kwon(),
        imu=imu,
        log_rate=rate,
        mocap=Mocap(rate) if o["attitude"] else None,  # the autopilot's attitude estimate (eq. 44-46)
        dt=float(o["dt"]),
        control_rate=float(o["control_rate"]),
        drag=tuple(o["drag"]),
        **fx.spec,
        thrust_noise=0.0022 if noise else 0.0,
        log_rotor_speed=True,
        meta={
            "scenario": name,
            "flight": "trajectory",
            "seed": seed,
            "intervals": {"1": [0.0, t2], "2": [t2, t3], "3": [t3, dur]},
        },
    )
    flights, states = fly_all(name, seed, true, {"trajectory": spec})
    truth = {"mass": true.mass, "I_xx": 0.050, "I_yy": 0.050, "I_zz": 0.060}
    truth |= {f"com_{a}": float(v) for a, v in zip("xyz", com, strict=True)}
    truth |= {f"imu_{a}": float(v) for a, v in zip("xyz", true.imu_offset, strict=True)}
    truth |= _tm_truth(rise, fall)
    # the user knows C_T (Sec. IV-B); with motor spread the truth records its true mean and spread
    true, truth = _spread_truth(true, truth, fx, np.array([c_t]), rise, fall, names=("k_t",))
    tv = _truth_vehicle(
        true,
        fx,
        reference_points="I_* about the CoM; com_* and imu_* relative to the body origin (geometric centre); "
        f"IMU relative to the CoM (Kwon Table 4) = {imu_rel_com.tolist()} m",
    )
    user = known.replace(source="sim:kwon-payload (user knowledge)")
    return Scenario(name, seed, flights, Truth(truth, tv), user, true, states, o)


# -- six-config-a / six-config-b -------------------------------------------------------------
SIX_ARM = 0.225
SIX_MASS_A = 1.285
SIX_K_T, SIX_K_D = 3.63e-6, 5.11e-8  # Six et al. Table II (IMU, combined)
#: The rotor speed (rad/s) at full command (the rad/s commands' cmd_max; a duty cycle's 1).
SIX_W_MAX = 1500.0
#: Configuration A about O_d: first moments (Table II/I) and inertia (Table II; small products assumed).
SIX_MS_A = np.array([-4.54e-3, -1.95e-3, -8.31e-3])
SIX_I_A = np.array([[1.82e-2, 2.0e-5, -1.2e-4], [2.0e-5, 1.86e-2, 4.0e-5], [-1.2e-4, 4.0e-5, 2.88e-2]])
#: Configuration B payloads: (mass kg, position m about O_d).
SIX_PAYLOAD_B = ((0.125, (SIX_ARM, 0.0, -0.028)), (0.042, (0.0, -SIX_ARM, -0.028)))


def six_mass_properties(config: str) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, first moment ms about O_d, inertia tensor about O_d) of configuration A or B,
    B = A + point masses (parallel-axis theorem: I_O += m (|p|^2 E - p p^T))."""
    m, ms, i_o = SIX_MASS_A, SIX_MS_A.copy(), SIX_I_A.copy()
    if config == "B":
        for mp, p in SIX_PAYLOAD_B:
            p = np.asarray(p)
            m += mp
            ms += mp * p
            i_o += mp * (p @ p * np.eye(3) - np.outer(p, p))
    return m, ms, i_o


def _six_pilot(t: np.ndarray, rng: np.random.Generator) -> Callable[[np.ndarray], References]:
    """A pilot's references around a 1.5 m hover: roll and thrust most active, pitch and yaw
    less (Six Sec. IV-A)."""
    off = np.column_stack(
        [
            band_limited_noise(t, 8 * DEG, 1.5, rng),
            band_limited_noise(t, 5 * DEG, 1.5, rng),
            band_limited_noise(t, 0.15, 2.5, rng),
        ]
    )
    rate = band_limited_noise(t, 25 * DEG, 1.0, rng)
    yaw = np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) * np.diff(t))])
    return _hold_refs((0.0, 0.0, 1.5), off, yaw)


def _six_known(name: str, geom: Vehicle, o: dict[str, Any]) -> tuple[Vehicle, float]:
    """The vehicle a user of the Six scenario knows (`geom` with its motor input and command
    range) and the factor from k_t per (rad/s)² to k_t per command²: 1 for rad/s commands,
    `SIX_W_MAX`² for duty cycles (ω = u `SIX_W_MAX`)."""
    if o["motor_input"] not in ("rad_s", "normalized"):
        raise RotoridError(f"scenario '{name}': motor_input must be rad_s or normalized, got {o['motor_input']!r}")
    duty = o["motor_input"] == "normalized"
    known = geom.replace(
        motor_input=o["motor_input"],
        thrust_exponents=(2,),
        cmd_min=100.0 / SIX_W_MAX if duty else 100.0,
        cmd_max=1.0 if duty else SIX_W_MAX,
    )
    return known, SIX_W_MAX**2 if duty else 1.0


def _six(name: str, seed: int, o: dict[str, Any], fly_all: Callable[..., Any]) -> Scenario:
    config = "A" if _base(name).endswith("-a") else "B"
    rise, fall = _tm(o)
    m, ms, i_o = six_mass_properties(config)
    com = ms / m
    i_com = i_o - m * (com @ com * np.eye(3) - np.outer(com, com))
    k_tau = SIX_K_D / SIX_K_T
    known, unit = _six_known(name, quad_plus(arm=SIX_ARM, mass=m, name=f"six-config-{config.lower()}"), o)
    true = known.replace(
        thrust_coeffs=np.array([SIX_K_T * unit]),
        k_tau=k_tau,
        tm_rise=rise,
        tm_fall=fall,
        inertia=i_com,
        com=com,
        imu_offset=np.asarray(o["imu_offset"], dtype=float),
        source=f"sim:{name}",
    )
    noise = bool(o["noise"])
    imu = Imu(
        rate=200.0,
        gyro_nd=0.005 * DEG,  # MPU6000-class (Pixhawk 2.4)
        acc_nd=400e-6 * GRAVITY,
        gyro_bias=(0.001, -0.0015, 0.0008),
        acc_bias=(0.02, -0.015, 0.03),
        gyro_dot_cutoff=30.0 if o["gyro_dot"] else None,
    )
    # the same propellers in both configurations: spread and k_rd are those of configuration A
    fx = _effects("six-config-a", seed, o, true.replace(mass=SIX_MASS_A), imu)
    imu = fx.imu
    mocap = Mocap(rate=200.0, pos_noise=3e-4, att_noise=0.05 * DEG, delay=float(o["mocap_delay"]))
    if not noise:
        mocap = mocap.noiseless()
    dur = float(o["duration"] or 75.0)
    dt, cr = float(o["dt"]), float(o["control_rate"])
    gains = Gains.from_bandwidth(i_com, (10.0, 10.0, 5.0), 0.8, pos_wn=(1.0, 1.0, 1.2))
    t = _ctrl_grid(dur, dt, cr)
    specs = {}
    for fname in o["flights"] or ("train", "test"):  # a subset flies the same flights (own streams)
        specs[fname] = FlightSpec(
            duration=dur,
            references=_six_pilot(t, _rng(name, seed, fname + "/pilot")),
            gains=gains,
            imu=imu,
            mocap=mocap,
            log_rate=200.0,
            dt=dt,
            control_rate=cr,
            drag=tuple(o["drag"]),
            **fx.spec,
            thrust_noise=float(o["thrust_noise"]) if noise else 0.0,
            log_rotor_speed=unit == 1.0,  # a duty-cycle ESC reports no speed
            meta={"scenario": name, "flight": fname, "seed": seed, "config": config},
        )
    flights, states = fly_all(name, seed, true, specs)
    names = ("I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")
    idx = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
    truth = {"mass": m, "k_t": SIX_K_T * unit, "k_d": SIX_K_D * unit, "k_tau": k_tau}
    truth |= {f"ms_{a}": float(v) for a, v in zip("xyz", ms, strict=True)}
    truth |= {n: float(i_o[i, j]) for n, (i, j) in zip(names, idx, strict=True)}
    truth |= {f"com_{a}": float(v) for a, v in zip("xyz", com, strict=True)}
    truth |= _tm_truth(rise, fall)
    true, truth = _spread_truth(true, truth, fx, np.array([SIX_K_T * unit]), rise, fall, names=("k_t",))
    if fx.record:
        fx.record["mocap_delay"] = float(o["mocap_delay"])
    tv = _truth_vehicle(
        true,
        fx,
        reference_points="I_* and ms_* about the body origin O_d (Six eq. 1-2); "
        "the vehicle's inertia field is about the CoM",
    )
    user = known.replace(source=f"sim:{name} (user knowledge)")
    return Scenario(name, seed, flights, Truth(truth, tv), user, true, states, o)


_BUILDERS = {"eschmann-crazyflie": _eschmann, "kwon-payload": _kwon, "six-config-a": _six, "six-config-b": _six}


# -- chirp-roll, chirp-pitch, chirp-yaw, chirp-thrust ------------------------------------------
def _chirp(name: str, seed: int, o: dict[str, Any], fly_all: Callable[..., Any]) -> Scenario:
    """The eschmann-crazyflie vehicle, IMU and controller hovering 1-2 s (drawn per seed), then
    flying ArduPilot's System ID chirp (`rotorid.signal.sid_chirp`, two cycles at the start
    frequency first) on one axis, then 1-4 s of hover; logged at `log_rate` (default 500 Hz on a 2 ms step, a fast
    ArduPilot log's rate), with the SIDS settings and the sweep's start in `meta["sid"]`."""
    sid_axis, axis = CHIRP[name]
    rate = float(o["log_rate"])
    o = {
        **o,
        "dt": o["dt"] if o["dt"] != _COMMON["dt"] else 1.0 / rate,
        "control_rate": min(float(o["control_rate"]), rate),
    }
    true = _crazyflie_true(o, f"sim:{name}")
    sid = {
        "axis": sid_axis,
        "magnitude": float(o["sid_magnitude"]),
        "f_start": float(o["sid_f_start"]),
        "f_stop": float(o["sid_f_stop"]),
        "t_fade_in": float(o["sid_t_fade_in"]),
        "t_const": 2.0 / float(o["sid_f_start"]),  # ArduCopter: two cycles at the start frequency
        "t_record": float(o["sid_t_rec"]),
        "t_fade_out": float(o["sid_t_fade_out"]),
    }
    rng = _rng(name, seed, axis + "/excitation")
    # the pilot switches to System ID mode after 1-2 s of hover and back 1-4 s after the sweep
    # (not at fixed instants: where the sweep falls among a spectral estimate's segments, which
    # end at the log's end, is part of the estimate's error)
    sid["t_start"] = round(1.0 + float(rng.uniform(0.0, 1.0)), 3)
    dur = float(o["duration"] or round(sid["t_start"] + sid["t_record"] + 1.0 + float(rng.uniform(0.0, 3.0)), 3))
    dt, cr = float(o["dt"]), float(o["control_rate"])
    t = _ctrl_grid(dur, dt, cr)
    wave, _ = sid_chirp(
        t - sid["t_start"],
        *(sid[k] for k in ("magnitude", "f_start", "f_stop", "t_fade_in", "t_const", "t_record", "t_fade_out")),
    )
    off = np.zeros((len(t), 6))
    col = {"roll": 3, "pitch": 4, "yaw": 5, "thrust": 2}[axis]
    off[:, col] = wave if axis == "thrust" else wave * DEG
    for k in (0, 1):  # the pilot's small corrections on roll and pitch, as in eschmann-crazyflie
        off[:, k] += band_limited_noise(t, 1 * DEG, 1.0, rng)
    fx = _effects(name, seed, o, true, _crazyflie_imu(rate))
    spec = FlightSpec(
        duration=dur,
        references=_hold_refs((0.0, 0.0, 1.0), off),
        gains=_crazyflie_gains(true),
        imu=fx.imu,
        log_rate=rate,
        dt=dt,
        control_rate=cr,
        drag=tuple(o["drag"]),
        **fx.spec,
        meta={"scenario": name, "flight": axis, "seed": seed},
    )
    flights, states = fly_all(name, seed, true, {axis: spec})
    flights[axis] = flights[axis].replace(meta={**flights[axis].meta, "sid": sid})
    true, truth = _spread_truth(true, _crazyflie_truth(true), fx, np.array(_CF_CURVE), *_tm(o))
    user = crazyflie().replace(source=f"sim:{name} (user knowledge)")
    return Scenario(name, seed, flights, Truth(truth, _truth_vehicle(true, fx)), user, true, states, o)
