"""`Vehicle` and `Rotor`: what is known (or identified) about a multirotor.

Geometry is in the body frame FLU about the body origin (the geometric centre, where the
rotor positions are measured from). A rotor's thrust is a polynomial in its motor state,
`f_i = sum_j K_j u_i^j`, its drag torque `torque_dir * k_tau * f_i` about its
axis. Mass is always known (a scale); the rest may be filled in by identification.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from rotorid.errors import RotoridError, VehicleError, clip, quote
from rotorid.frames import GRAVITY

MOTOR_INPUTS = ("normalized", "rad_s", "pwm_us")
#: Largest vehicle TOML read (bytes): a 64-rotor file with comments is ~10 kB.
TOML_MAX = 1 << 20
#: Longest vehicle name (characters): it is printed in every report and line.
NAME_MAX = 100
#: Masses a multirotor can have (kg): a 1 g micro to a 10 t heavy lifter.
MASS_RANGE = (1e-3, 1e4)
#: Farthest a rotor, the CoM or the IMU may sit from the body origin (m).
SIZE_MAX = 50.0
#: Nearest the farthest rotor axis may be to the body z axis (m): no frame is smaller.
ARM_MIN = 1e-3
#: Plausible mass per squared arm length, kg/m² (Crazyflie 17, Iris 24, X500 33, a 25 kg
#: crop sprayer with 1 m arms 25): outside, a vehicle is warned about, not refused.
DENSITY_RANGE = (0.5, 300.0)
#: Key -> kind of a vehicle TOML's top-level value: "str", "num" (a real number, never a
#: boolean or string), "int" (list of integers) or "nums" (a number or nested list of them).
SCHEMA = {
    "name": "str",
    "mass": "num",
    "motor_input": "str",
    "imu_offset": "nums",
    "thrust_exponents": "int",
    "thrust_coeffs": "nums",
    "k_tau": "num",
    "tm_rise": "num",
    "tm_fall": "num",
    "cmd_min": "num",
    "cmd_max": "num",
    "pwm_min": "num",
    "pwm_max": "num",
    "inertia": "nums",
    "com": "nums",
}
ROTOR_SCHEMA = {"position": "nums", "axis": "nums", "torque_dir": "num"}


class VehicleWarning(UserWarning):
    """A vehicle that is valid but physically doubtful (e.g. a mass its frame cannot carry)."""


def _is_num(v: object) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_)


def _check_kind(where: str, key: str, v: object, kind: str) -> None:
    """One-line `VehicleError` unless `v` has `kind` (`SCHEMA`); lists nest at most 2 deep."""
    if kind == "str":
        ok = isinstance(v, str)
    elif kind == "num":
        ok = _is_num(v)
    elif kind == "int":
        ok = isinstance(v, list | tuple) and all(isinstance(e, int) and not isinstance(e, bool) for e in v)
    else:
        rows = v if isinstance(v, list | tuple) else [v]
        ok = all(_is_num(e) or (isinstance(e, list | tuple) and all(_is_num(x) for x in e)) for e in rows)
    if not ok:
        want = {"str": "a string", "num": "a number", "int": "a list of integers", "nums": "numbers"}[kind]
        raise VehicleError(f"{where}: {key} must be {want}, got {quote(repr(v))}")


def _finite(where: str, key: str, v: object, limit: float = np.inf) -> None:
    a = np.asarray(v, dtype=float)
    if not np.all(np.isfinite(a)) or np.any(np.abs(a) > limit):
        bound = "finite" if limit == np.inf else f"finite and within ±{limit:g}"
        raise VehicleError(f"{where}: {key} must be {bound}, got {quote(np.round(a, 6).tolist())}")


@dataclass(frozen=True)
class Rotor:
    """One rotor: position (m, body FLU), unit thrust axis, and the sign of the body-z torque
    its drag produces (a propeller spinning counter-clockwise seen from above: -1)."""

    position: np.ndarray
    torque_dir: int
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", np.asarray(self.position, dtype=float).reshape(3))
        object.__setattr__(self, "axis", np.asarray(self.axis, dtype=float).reshape(3))


@dataclass(frozen=True)
class Vehicle:
    """A multirotor description. Optional fields are None until known or identified.

    `thrust_coeffs` is `(E,)` for one lumped curve or `(M, E)` per motor, over
    `thrust_exponents`, in N per (motor input)^j. `inertia` is the 3x3 tensor about the
    CoM in body axes; `com` the CoM relative to the body origin; `imu_offset` the IMU
    position relative to the body origin. `tm_rise`/`tm_fall` are the first-order motor time
    constants (equal for a symmetric motor).
    """

    name: str
    mass: float
    rotors: tuple[Rotor, ...]
    motor_input: str = "normalized"
    imu_offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    thrust_exponents: tuple[int, ...] = (2,)
    thrust_coeffs: np.ndarray | None = None
    k_tau: float | None = None
    tm_rise: float | None = None
    tm_fall: float | None = None
    cmd_min: float = 0.0
    cmd_max: float = 1.0
    pwm_min: float | None = None
    pwm_max: float | None = None
    inertia: np.ndarray | None = None
    com: np.ndarray | None = None
    source: str = "preset"

    def __post_init__(self) -> None:
        """Check the description against the schema: types, finite ranges, geometry (`SCHEMA`,
        `MASS_RANGE`, `SIZE_MAX`, `ARM_MIN`); a mass its frame size makes doubtful warns."""
        where = f"vehicle {quote(self.name)} ({clip(self.source, 200)})"
        if not isinstance(self.name, str) or not 0 < len(self.name) <= NAME_MAX:
            raise VehicleError(f"{where}: name must be a string of 1 to {NAME_MAX} characters")
        lo, hi = MASS_RANGE
        if not (_is_num(self.mass) and lo <= self.mass <= hi):
            got = repr(self.mass) if _is_num(self.mass) else quote(repr(self.mass))
            raise VehicleError(
                f"{where}: mass must be a positive number of kg, got {got} (multirotors: {lo:g}..{hi:g} kg)"
            )
        self._check_rotors(where)
        self._check_numbers(where)
        if self.motor_input not in MOTOR_INPUTS:
            raise VehicleError(
                f"{where}: motor_input must be one of {', '.join(MOTOR_INPUTS)}, got {self.motor_input!r}"
            )
        object.__setattr__(self, "imu_offset", np.asarray(self.imu_offset, dtype=float).reshape(3))
        object.__setattr__(self, "thrust_exponents", tuple(int(e) for e in self.thrust_exponents))
        if self.thrust_coeffs is not None:
            k = np.asarray(self.thrust_coeffs, dtype=float)
            if (
                k.shape[-1] != len(self.thrust_exponents)
                or k.ndim > 2
                or (k.ndim == 2 and k.shape[0] != len(self.rotors))
            ):
                raise VehicleError(
                    f"{where}: thrust_coeffs shape {k.shape} does not match {len(self.thrust_exponents)} "
                    f"exponents (and {len(self.rotors)} motors if given per motor)"
                )
            object.__setattr__(self, "thrust_coeffs", k)
        if self.inertia is not None:
            j = np.asarray(self.inertia, dtype=float)
            if j.shape == (3,):
                j = np.diag(j)
            if j.shape != (3, 3) or not np.allclose(j, j.T) or np.any(np.linalg.eigvalsh(j) <= 0):
                raise VehicleError(f"{where}: inertia must be a symmetric positive-definite 3x3 tensor")
            object.__setattr__(self, "inertia", j)
        if self.com is not None:
            object.__setattr__(self, "com", np.asarray(self.com, dtype=float).reshape(3))

    def _check_rotors(self, where: str) -> None:
        """Rotors: at least 3, finite positions within `SIZE_MAX`, unit axes, torque_dir ±1, a
        frame wider than `ARM_MIN`; a mass implausible for the frame size warns."""
        if len(self.rotors) < 3:
            raise VehicleError(f"{where}: needs at least 3 rotors, got {len(self.rotors)}")
        for i, r in enumerate(self.rotors):
            _finite(where, f"rotor {i} position", r.position, SIZE_MAX)
            _finite(where, f"rotor {i} axis", r.axis)
            n = float(np.linalg.norm(r.axis))
            if abs(n - 1.0) > 1e-6:
                raise VehicleError(
                    f"{where}: rotor {i} thrust axis {r.axis.tolist()} is not a unit vector (norm {n:.6f})"
                )
            if not _is_num(r.torque_dir) or r.torque_dir not in (-1, 1):
                raise VehicleError(f"{where}: rotor {i} torque_dir must be +1 or -1, got {quote(repr(r.torque_dir))}")
            object.__setattr__(r, "torque_dir", int(r.torque_dir))
        arm = float(np.max(np.hypot(self.positions[:, 0], self.positions[:, 1])))
        if arm < ARM_MIN:
            raise VehicleError(
                f"{where}: the rotors sit within {ARM_MIN * 1e3:g} mm of the body z axis; give positions in m"
            )
        density = self.mass / arm**2
        if not DENSITY_RANGE[0] <= density <= DENSITY_RANGE[1]:
            warnings.warn(
                f"{where}: {self.mass:g} kg on rotors {arm * 1e3:.0f} mm from the centre is implausible "
                f"(mass/arm² {density:.3g} kg/m², multirotors span {DENSITY_RANGE[0]:g}-{DENSITY_RANGE[1]:g}); "
                "check mass (kg) and rotor positions (m)",
                VehicleWarning,
                stacklevel=4,
            )

    def _check_numbers(self, where: str) -> None:
        """Scalars are finite numbers (time constants positive, cmd_max above cmd_min);
        vectors and tensors finite, offsets within `SIZE_MAX`."""
        for name in ("cmd_min", "cmd_max", "k_tau", "pwm_min", "pwm_max", "tm_rise", "tm_fall"):
            v = getattr(self, name)
            if v is not None:
                _check_kind(where, name, v, "num")
                _finite(where, name, v)
        if not self.cmd_max > self.cmd_min:
            raise VehicleError(f"{where}: cmd_max ({self.cmd_max:g}) must exceed cmd_min ({self.cmd_min:g})")
        for name in ("tm_rise", "tm_fall"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise VehicleError(f"{where}: {name} must be positive seconds, got {v!r}")
        for name in ("imu_offset", "com"):
            if getattr(self, name) is not None:
                _finite(where, name, getattr(self, name), SIZE_MAX)
        for name in ("thrust_coeffs", "inertia"):
            if getattr(self, name) is not None:
                _finite(where, name, getattr(self, name))

    # -- geometry and rotor model -------------------------------------------------------
    @property
    def n_rotors(self) -> int:
        return len(self.rotors)

    @property
    def positions(self) -> np.ndarray:
        """Rotor positions, (M, 3)."""
        return np.array([r.position for r in self.rotors])

    @property
    def axes(self) -> np.ndarray:
        """Rotor thrust axes, (M, 3)."""
        return np.array([r.axis for r in self.rotors])

    @property
    def torque_dirs(self) -> np.ndarray:
        """Rotor torque directions, (M,)."""
        return np.array([r.torque_dir for r in self.rotors], dtype=float)

    def mixer(self, k_tau: float | None = None, about: np.ndarray | None = None) -> np.ndarray:
        """6 x M wrench per unit rotor thrust: force rows then moment rows about `about`
        (default the body origin). The drag moment uses `k_tau` (default the vehicle's, or 0)."""
        k = (self.k_tau or 0.0) if k_tau is None else k_tau
        r = self.positions - (np.zeros(3) if about is None else np.asarray(about))
        a = self.axes
        moment = np.cross(r, a) + k * self.torque_dirs[:, None] * a
        return np.vstack([a.T, moment.T])

    def thrust(self, u: np.ndarray) -> np.ndarray:
        """Per-rotor thrust (N) for motor states `u` (N, M), from the thrust polynomial."""
        if self.thrust_coeffs is None:
            raise VehicleError(f"vehicle '{self.name}': no thrust curve; identify one or give thrust_coeffs")
        u = np.asarray(u, dtype=float)
        powers = u[..., None] ** np.array(self.thrust_exponents)
        k = self.thrust_coeffs if self.thrust_coeffs.ndim == 2 else self.thrust_coeffs[None, :]
        return np.einsum(
            "nme,me->nm",
            powers.reshape(-1, self.n_rotors, len(self.thrust_exponents)),
            np.broadcast_to(k, (self.n_rotors, k.shape[-1])),
        ).reshape(u.shape)

    def hover_command(self) -> float:
        """Command at which the (lumped mean) thrust curve carries the weight with all rotors
        equal, along the mean thrust axis: the lowest command in `[cmd_min, cmd_max]` where the
        curve rises through the weight share. A curve that carries the weight nowhere, or
        everywhere (no rising crossing: not a valid curve over the command range), is a
        `VehicleError` saying what to check."""
        axial = float(np.mean(self.axes[:, 2]))
        need = self.mass * GRAVITY / (self.n_rotors * axial)
        where = f"vehicle '{self.name}' ({self.source})"
        if self.thrust_coeffs is None:
            raise VehicleError(f"{where}: no thrust curve to compute the hover command")
        unset_range = self.motor_input != "normalized" and (self.cmd_min, self.cmd_max) == (0.0, 1.0)
        hint = (
            f"; its motor input is {self.motor_input} but it declares no command range "
            f"(cmd_min/cmd_max are 0..1): set them in the vehicle TOML (e.g. 1000 and 2000 for pwm_us, "
            f"0 and the maximum rotor speed for rad_s)"
            if unset_range
            else ""
        )
        k = np.mean(np.atleast_2d(self.thrust_coeffs), axis=0)  # the lumped curve, or the motors' mean
        e = np.array(self.thrust_exponents)
        poly = np.zeros(int(e.max()) + 1)
        np.add.at(poly, e, k)
        poly[0] -= need
        f = np.polynomial.Polynomial(poly)
        lo, hi = float(self.cmd_min), float(self.cmd_max)
        if f(hi) < 0:
            raise VehicleError(f"{where}: cannot hover, thrust at full command ({hi:g}) is below the weight{hint}")
        roots = f.roots()
        real = np.sort(roots[np.abs(roots.imag) <= 1e-9 * max(1.0, abs(hi))].real)
        rising = real[(real >= lo) & (real <= hi) & (f.deriv()(real) > 0)]
        if rising.size == 0:
            raise VehicleError(
                f"{where}: the thrust curve (coefficients {np.round(k, 6).tolist()} over exponents "
                f"{list(self.thrust_exponents)}) already carries the weight at the lowest command ({lo:g}) and "
                f"never rises through it, so it has no hover command{hint}. The curve is not valid over the "
                "command range: identify it from a thrust flight that spans commands below and above hover "
                "(e.g. the thrust window, not a roll/pitch one), or use fewer exponents (e.g. 2 only)"
            )
        return float(rising[0])

    def replace(self, **changes: Any) -> Vehicle:
        return dataclasses.replace(self, **changes)

    # -- presets -------------------------------------------------------------------------
    @staticmethod
    def preset(name: str, **kw: Any) -> Vehicle:
        """A built-in vehicle (see `PRESETS`; `iris`/`x500` are old names of the `-gazebo` ones)."""
        try:
            make = PRESETS[PRESET_ALIASES.get(name, name)]
        except KeyError:
            raise VehicleError(
                f"unknown vehicle preset '{name}'; choose one of {', '.join(PRESETS)} or a .toml file"
            ) from None
        return make(**kw)

    @staticmethod
    def load(spec: str | Path) -> Vehicle:
        """A preset name or a TOML file path."""
        p = Path(spec)
        if str(spec) in PRESETS or str(spec) in PRESET_ALIASES:
            return Vehicle.preset(str(spec))
        if p.suffix == ".toml" or p.exists():
            return Vehicle.from_toml(p)
        raise VehicleError(f"vehicle '{spec}' is neither a preset ({', '.join(PRESETS)}) nor an existing .toml file")

    # -- TOML ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "mass": float(self.mass),
            "motor_input": self.motor_input,
            "imu_offset": self.imu_offset.tolist(),
            "cmd_min": self.cmd_min,
            "cmd_max": self.cmd_max,
            "thrust_exponents": list(self.thrust_exponents),
        }
        for k in ("k_tau", "tm_rise", "tm_fall", "pwm_min", "pwm_max"):
            if getattr(self, k) is not None:
                d[k] = float(getattr(self, k))
        for k in ("thrust_coeffs", "inertia", "com"):
            if getattr(self, k) is not None:
                d[k] = np.asarray(getattr(self, k)).tolist()
        d["rotor"] = [
            {"position": r.position.tolist(), "axis": r.axis.tolist(), "torque_dir": r.torque_dir} for r in self.rotors
        ]
        return d

    def to_toml(self) -> str:
        """The vehicle as TOML text (round-trips through `from_toml`)."""
        return tomli_w.dumps(self.to_dict())

    def to_commented_toml(self) -> str:
        """The vehicle as TOML with every key explained (units, frame, motor-order diagram);
        `from_toml` reads it back to the same vehicle."""
        return commented_toml(self)

    def save(self, path: str | Path) -> None:
        """Write TOML atomically (temporary file, then rename)."""
        from rotorid.util import atomic_write_text

        atomic_write_text(Path(path), self.to_toml())

    @staticmethod
    def from_dict(d: dict[str, Any], source: str = "dict") -> Vehicle:
        """A vehicle from a TOML-like dict, its keys and types checked against `SCHEMA`."""
        where = clip(source, 200)
        try:
            missing = [k for k in ("name", "mass", "rotor") if k not in d]
            if missing:
                raise KeyError(missing[0])
            if not isinstance(d["rotor"], list) or not all(isinstance(r, dict) for r in d["rotor"]):
                raise VehicleError(f"{where}: rotor must be [[rotor]] tables (position, torque_dir, axis)")
            for i, r in enumerate(d["rotor"]):
                extra = set(r) - set(ROTOR_SCHEMA)
                if extra:
                    raise VehicleError(
                        f"{where}: rotor {i}: unknown key(s) {clip(', '.join(sorted(extra)))}; allowed: axis, position, torque_dir"
                    )
                for k, v in r.items():
                    _check_kind(where, f"rotor {i} {k}", v, ROTOR_SCHEMA[k])
            for k in set(d) & set(SCHEMA):
                _check_kind(where, k, d[k], SCHEMA[k])
            rotors = tuple(
                Rotor(position=r["position"], axis=r.get("axis", [0, 0, 1]), torque_dir=r["torque_dir"])
                for r in d["rotor"]
            )
            known = {f.name for f in dataclasses.fields(Vehicle)} - {"rotors", "source"}
            unknown = set(d) - known - {"rotor"}
            if unknown:
                raise VehicleError(
                    f"{where}: unknown key(s) {clip(', '.join(sorted(unknown)))}; allowed: {', '.join(sorted(known | {'rotor'}))}"
                )
            kw = {k: v for k, v in d.items() if k in known}
            if "thrust_exponents" in kw:
                kw["thrust_exponents"] = tuple(kw["thrust_exponents"])
            return Vehicle(rotors=rotors, source=source, **kw)
        except KeyError as e:
            raise VehicleError(
                f"{where}: missing key {quote(e.args[0])} (a vehicle needs name, mass and [[rotor]] tables with position and torque_dir)"
            ) from None
        except (TypeError, ValueError) as e:
            raise VehicleError(f"{where}: {quote(e, 200)}") from None

    @staticmethod
    def from_toml(path: str | Path) -> Vehicle:
        """A vehicle TOML file (a regular UTF-8 file of at most `TOML_MAX` bytes)."""
        from rotorid.util import read_text

        p = Path(path)
        if not p.exists():
            raise VehicleError(f"{p}: vehicle file not found")
        try:
            d = tomllib.loads(read_text(p, "vehicle TOML", TOML_MAX))
        except RotoridError as e:
            raise VehicleError(str(e)) from None
        except tomllib.TOMLDecodeError as e:
            raise VehicleError(f"{p}: not valid TOML: {quote(e, 200)}") from None
        except RecursionError:
            raise VehicleError(f"{p}: not a vehicle TOML (nested too deeply)") from None
        return Vehicle.from_dict(d, source=str(p))


def _quad(name: str, mass: float, xy: list[tuple[float, float]], dirs: list[int], **kw: Any) -> Vehicle:
    rotors = tuple(Rotor(position=[x, y, 0.0], torque_dir=s) for (x, y), s in zip(xy, dirs, strict=True))
    return Vehicle(name=name, mass=mass, rotors=rotors, **kw)


def crazyflie() -> Vehicle:
    """Crazyflie 2.1 as in Eschmann et al. (Eschmann et al., the paper's logs): 27 g, rotors at +-28 mm,
    PWM/65536 normalized commands."""
    a = 0.028
    return _quad("crazyflie", 0.027, [(a, -a), (-a, -a), (-a, a), (a, a)], [-1, 1, -1, 1], thrust_exponents=(0, 1, 2))


def quad_x(arm: float = 0.25, mass: float = 1.0, name: str = "quad-x") -> Vehicle:
    """Generic X quadrotor in PX4 motor order (front-right, rear-left, front-left, rear-right;
    the first two spin counter-clockwise)."""
    a = arm / math.sqrt(2.0)
    return _quad(name, mass, [(a, -a), (-a, a), (a, a), (-a, -a)], [-1, -1, 1, 1])


def quad_plus(arm: float = 0.25, mass: float = 1.0, name: str = "quad-plus") -> Vehicle:
    """Generic '+' quadrotor: front (+x), left (+y), back (-x), right (-y); front/back spin
    counter-clockwise."""
    return _quad(name, mass, [(arm, 0.0), (0.0, arm), (-arm, 0.0), (0.0, -arm)], [-1, 1, -1, 1])


def iris_gazebo() -> Vehicle:
    """3DR Iris as in PX4's Gazebo Classic model (1.5 kg): motor input = simulated rotor speeds
    in rad/s (what Gazebo's motor model takes), not what a real PX4 logs (see `iris_px4`)."""
    v = _quad("iris-gazebo", 1.5, [(0.13, -0.22), (-0.13, 0.20), (0.13, 0.22), (-0.13, -0.20)], [-1, -1, 1, 1])
    return v.replace(
        motor_input="rad_s",
        cmd_max=1100.0,
        thrust_coeffs=np.array([5.84e-06]),
        k_tau=0.06,
        tm_rise=0.0125,
        tm_fall=0.025,
        inertia=np.diag([0.029125, 0.029125, 0.055225]),
    )


def x500_gazebo() -> Vehicle:
    """Holybro X500 as in PX4's Gazebo model (2.0 kg, arms 0.174 m along x and y): motor input =
    simulated rotor speeds in rad/s, not what a real PX4 logs (see `x500_px4`)."""
    a = 0.174
    v = _quad("x500-gazebo", 2.0, [(a, -a), (-a, a), (a, a), (-a, -a)], [-1, -1, 1, 1])
    return v.replace(
        motor_input="rad_s",
        cmd_max=1000.0,
        thrust_coeffs=np.array([8.54858e-06]),
        k_tau=0.016,
        tm_rise=0.0125,
        tm_fall=0.025,
        inertia=np.diag([0.0216667, 0.0216667, 0.04]),
    )


def _px4_from_gazebo(v: Vehicle, name: str, doc_of: str) -> Vehicle:
    """The Gazebo model's geometry, mass and inertia with the motor input a real PX4 logs:
    `actuator_motors` holds normalized thrust setpoints 0..1 per motor (PX4 motor order); the
    thrust curve and motor lag are left to be identified."""
    return v.replace(
        name=name,
        motor_input="normalized",
        cmd_min=0.0,
        cmd_max=1.0,
        thrust_exponents=(2,),
        thrust_coeffs=None,
        k_tau=None,
        tm_rise=None,
        tm_fall=None,
        source=f"preset ({doc_of} geometry, PX4 normalized actuator_motors)",
    )


def x500_px4() -> Vehicle:
    """Holybro X500 flown by PX4: 2.0 kg, arms 0.174 m along x and y, PX4 quad-x motor order,
    normalized motor commands (`actuator_motors`, 0..1) as PX4 logs them."""
    return _px4_from_gazebo(x500_gazebo(), "x500-px4", "x500 Gazebo")


def iris_px4() -> Vehicle:
    """3DR Iris flown by PX4: 1.5 kg, PX4 quad-x motor order, normalized motor commands
    (`actuator_motors`, 0..1) as PX4 logs them."""
    return _px4_from_gazebo(iris_gazebo(), "iris-px4", "Iris Gazebo")


PRESETS = {
    "crazyflie": crazyflie,
    "x500-px4": x500_px4,
    "iris-px4": iris_px4,
    "x500-gazebo": x500_gazebo,
    "iris-gazebo": iris_gazebo,
    "quad-x": quad_x,
    "quad-plus": quad_plus,
}
PRESET_ALIASES = {"iris": "iris-gazebo", "x500": "x500-gazebo"}  # the presets' earlier names
#: Presets of one real vehicle flown by one flight stack -> the log format that stack writes
#: (`Flight.meta["format"]`, a prefix): the Crazyflie preset is a 27 g Crazyflie 2.1, the PX4
#: ones an X500 or Iris flown by PX4. The Gazebo and generic presets describe no real log.
PRESET_LOGS = {"crazyflie": "crazyflie", "x500-px4": "ulog", "iris-px4": "ulog"}
#: Log formats a real flight stack writes (a simulated or converted log may come from anything).
REAL_LOGS = ("crazyflie", "ulog", "blackbox", "dataflash")


def preset_mismatch(preset: str, log_format: str) -> str | None:
    """Why preset `preset` cannot be the vehicle of a log in `log_format` (the format its reader
    found, or the original format of a converted log), or None when it may be: a preset of one
    real vehicle (`PRESET_LOGS`) given a real log of another flight stack (a Crazyflie preset for
    a Betaflight log): its geometry and mass would scale every identified inertia and thrust."""
    name = PRESET_ALIASES.get(preset, preset)
    own = PRESET_LOGS.get(name)
    real = next((f for f in REAL_LOGS if log_format.startswith(f)), None)
    if own is None or real is None or real == own:
        return None
    v = Vehicle.preset(name)
    arm = float(np.max(np.hypot(v.positions[:, 0], v.positions[:, 1])))
    return (
        f"the {name} preset is a {v.mass * 1e3:.0f} g vehicle with rotors {arm * 1e3:.0f} mm from the centre flown "
        f"by a stack that writes {own} logs, not this {log_format} log; describe your vehicle (layout, arm, mass) "
        "or give its TOML"
    )


# -- `vehicle init`: layouts and motor-numbering conventions ------------------------------------

# Per layout: (angle of each rotor in degrees, counter-clockwise from forward seen from above,
# torque_dir) in motor order. torque_dir -1 = propeller spinning counter-clockwise seen from above.
_TABLES: dict[str, dict[str, list[tuple[float, int]]]] = {
    # PX4 and ArduPilot share these airframe motor orders.
    "px4": {
        "quad-x": [(-45, -1), (135, -1), (45, 1), (-135, 1)],
        "quad-plus": [(-90, -1), (90, -1), (0, 1), (180, 1)],
        "hex-x": [(-90, 1), (90, -1), (30, 1), (-150, -1), (-30, -1), (150, 1)],
    },
    # Betaflight quad-x: 1 rear-right, 2 front-right, 3 rear-left, 4 front-left (default props).
    "betaflight": {"quad-x": [(-135, 1), (-45, -1), (135, -1), (45, 1)]},
}
_TABLES["ardupilot"] = _TABLES["px4"]
LAYOUTS = ("quad-x", "quad-plus", "hex-x", "hex-plus", "octo-x", "octo-plus", "y6")
MOTOR_ORDERS = ("px4", "ardupilot", "betaflight", "sequential")


def _sequential(layout: str, motor1_dir: int) -> list[tuple[float, int]]:
    """Motors numbered clockwise seen from above, starting at the front-right rotor (X layouts,
    Y6) or the front rotor (+ layouts); directions alternate starting with `motor1_dir`. Y6:
    arms front-right, rear, front-left, each upper then lower rotor (opposite spin)."""
    if layout == "y6":
        return [(a, d) for a in (-60, 180, 60) for d in (motor1_dir, -motor1_dir)]
    n = {"quad": 4, "hex": 6, "octo": 8}[layout.split("-")[0]]
    start = -180.0 / n if layout.endswith("-x") else 0.0
    return [(start - 360.0 * i / n, motor1_dir * (-1) ** i) for i in range(n)]


def build_vehicle(
    layout: str,
    arm: float,
    mass: float,
    motor_input: str = "normalized",
    cmd_range: tuple[float, float] | None = None,
    order: str = "px4",
    motor1_dir: int | None = None,
    name: str | None = None,
    coax_gap: float | None = None,
) -> Vehicle:
    """A vehicle from its layout (`LAYOUTS`), arm length (m, centre to rotor axis), mass (kg),
    motor input kind and command range, and motor numbering `order` (`MOTOR_ORDERS`; default
    PX4's, which ArduPilot shares). `motor1_dir` (-1 counter-clockwise, +1 clockwise seen from
    above) mirrors every spin direction when it differs from the order's (reversed props);
    `sequential` numbers clockwise from the front(-right) rotor and alternates from `motor1_dir`
    (default -1). Y6 coaxial rotors sit `coax_gap` apart in z (default 0.2 arm)."""
    where = f"vehicle init ({layout})"
    if layout not in LAYOUTS:
        raise VehicleError(f"{where}: unknown layout; choose one of {', '.join(LAYOUTS)} (or write a custom TOML)")
    if order not in MOTOR_ORDERS:
        raise VehicleError(f"{where}: unknown motor order {order!r}; choose one of {', '.join(MOTOR_ORDERS)}")
    if not (ARM_MIN <= arm <= SIZE_MAX):
        raise VehicleError(f"{where}: arm length must be positive metres ({ARM_MIN:g}..{SIZE_MAX:g}), got {arm!r}")
    if motor1_dir not in (None, -1, 1):
        raise VehicleError(f"{where}: motor 1 direction must be -1 (counter-clockwise) or +1 (clockwise)")
    if order == "sequential":
        table = _sequential(layout, motor1_dir or -1)
    elif layout in _TABLES[order]:
        table = _TABLES[order][layout]
        if motor1_dir is not None and motor1_dir != table[0][1]:
            table = [(a, -d) for a, d in table]
    else:
        raise VehicleError(
            f"{where}: no {order} motor order tabulated for this layout; use order 'sequential' "
            "(clockwise from the front) and check it against your autopilot's airframe reference"
        )
    gap = 0.2 * arm if coax_gap is None else coax_gap
    z = [0.0] * len(table) if layout != "y6" else [gap / 2 if i % 2 == 0 else -gap / 2 for i in range(len(table))]
    rotors = tuple(
        Rotor(
            position=np.round([arm * math.cos(math.radians(a)), arm * math.sin(math.radians(a)), zi], 12) + 0.0,
            torque_dir=d,
        )
        for (a, d), zi in zip(table, z, strict=True)
    )
    lo, hi = cmd_range if cmd_range is not None else (0.0, 1.0)
    if not hi > lo:
        raise VehicleError(f"{where}: command range must have max > min, got {lo!r}..{hi!r}")
    if motor_input != "normalized" and cmd_range is None:
        raise VehicleError(
            f"{where}: a {motor_input} vehicle needs its command range (e.g. 1000..2000 for pwm_us, "
            "0..max rotor speed for rad_s)"
        )
    return Vehicle(
        name=name or layout,
        mass=mass,
        rotors=rotors,
        motor_input=motor_input,
        cmd_min=float(lo),
        cmd_max=float(hi),
        source=f"vehicle init: {layout}, {order} motor order",
    )


_INPUT_UNIT = {"normalized": "1 (0..1)", "rad_s": "rad/s", "pwm_us": "us (PWM pulse width)"}
_KEY_DOC = {
    "name": "name shown in reports",
    "mass": "kg, weighed with battery and everything flown",
    "motor_input": "what the motor channel holds: normalized (0..1), rad_s (rotor speed), pwm_us",
    "cmd_min": "lowest motor command, in the motor_input unit",
    "cmd_max": "highest motor command, in the motor_input unit",
    "pwm_min": "us: PWM at command 0 (only to convert pwm_us logs to normalized)",
    "pwm_max": "us: PWM at full command (only to convert pwm_us logs to normalized)",
    "thrust_exponents": "exponents j of the thrust curve f_i = sum_j K_j u_i^j (u = motor command)",
    "thrust_coeffs": "K_j in N / u^j, one per exponent (or one list per motor); identified by delay/tls",
    "k_tau": "m: drag torque per thrust K_tau = k_d / k_t (identified by delay/tls)",
    "tm_rise": "s: first-order motor time constant, speeding up (identified by delay)",
    "tm_fall": "s: first-order motor time constant, slowing down",
    "inertia": "kg m^2: 3x3 tensor about the CoM, body axes (identified by delay/tls/online)",
    "com": "m: centre of mass relative to the body origin, body FLU",
    "imu_offset": "m: IMU position relative to the body origin, body FLU",
}


def diagram(v: Vehicle) -> list[str]:
    """Top view (x forward = up, y left = left) with each rotor's number and spin, as TOML
    comment lines."""
    w, h = 41, 13
    xy = v.positions[:, :2]
    ext = float(np.max(np.abs(xy))) or 1.0
    cells: dict[tuple[int, int], list[str]] = {}
    for i, ((x, y), d) in enumerate(zip(xy, v.torque_dirs, strict=True)):
        rc = (h // 2 - round(x / ext * (h // 2 - 1)), w // 2 - round(y / ext * (w // 2 - 5)))
        cells.setdefault(rc, []).append(f"{i + 1}{'ccw' if d < 0 else 'cw'}")
    grid = [[" "] * w for _ in range(h)]
    grid[0][w // 2] = "^"
    grid[h // 2][w // 2] = "+"
    for (r, c), labels in cells.items():
        text = "/".join(labels)
        c0 = max(0, min(w - len(text), c - len(text) // 2))
        grid[r][c0 : c0 + len(text)] = list(text)
    return [("#   " + "".join(row)).rstrip() for row in grid]


def _toml_value(x: Any) -> str:
    """One TOML value on one line (floats by repr, so they read back bit for bit)."""
    if isinstance(x, list):
        return "[" + ", ".join(_toml_value(e) for e in x) + "]"
    return tomli_w.dumps({"v": x})[4:].strip()


def commented_toml(v: Vehicle) -> str:
    """`Vehicle.to_commented_toml`: TOML whose comments give units, frame and a motor-order
    diagram; keys not yet known are listed commented out."""
    d = v.to_dict()
    unit = _INPUT_UNIT[v.motor_input]
    lines = [
        f"# rotorid vehicle {v.name!r} ({v.source})",
        "# Units SI; body frame FLU: x forward, y left, z up, origin at the geometric centre.",
        f"# Motor commands in {unit}. Rotor i below is motor output i of the log (1-based).",
        "# torque_dir: sign of the body-z torque the rotor's drag makes; a propeller spinning",
        "# counter-clockwise seen from above gives -1 (ccw), clockwise +1 (cw).",
        "#",
        "# Top view (front up, left left):",
        *diagram(v),
        "",
    ]
    for key, doc in _KEY_DOC.items():
        if key == "thrust_coeffs":
            doc = doc.replace("N / u^j", f"N / ({unit.split(' ')[0]})^j")
        lines.append(f"# {key}: {doc}")
        if key in d:
            lines.append(f"{key} = {_toml_value(d[key])}")
        else:
            lines.append(f"# {key} = ...   (not known yet)")
    lines += ["", "# one [[rotor]] per motor, in motor-output order:", "#   position m (body FLU), axis unit thrust"]
    lines.append("#   direction (default [0, 0, 1]), torque_dir -1 ccw / +1 cw")
    for i, r in enumerate(d["rotor"]):
        spin = "ccw" if r["torque_dir"] < 0 else "cw"
        lines += ["", f"# motor {i + 1} ({spin})", "[[rotor]]"] + [f"{k} = {_toml_value(x)}" for k, x in r.items()]
    return "\n".join(lines) + "\n"
