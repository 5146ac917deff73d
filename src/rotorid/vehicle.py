"""`Vehicle` and `Rotor`: what is known (or identified) about a multirotor.

Geometry is in the body frame FLU about the body origin (the geometric centre, where the
rotor positions are measured from). A rotor's thrust is a polynomial in its motor state,
`f_i = sum_j K_j u_i^j` (DESIGN.md), its drag torque `torque_dir * k_tau * f_i` about its
axis. Mass is always known (a scale); the rest may be filled in by identification.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from rotorid.errors import VehicleError

MOTOR_INPUTS = ("normalized", "rad_s", "pwm_us")


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
        where = f"vehicle '{self.name}' ({self.source})"
        if not (isinstance(self.mass, int | float) and math.isfinite(self.mass) and self.mass > 0):
            raise VehicleError(f"{where}: mass must be a positive number of kg, got {self.mass!r}")
        if len(self.rotors) < 3:
            raise VehicleError(f"{where}: needs at least 3 rotors, got {len(self.rotors)}")
        for i, r in enumerate(self.rotors):
            n = float(np.linalg.norm(r.axis))
            if abs(n - 1.0) > 1e-6:
                raise VehicleError(
                    f"{where}: rotor {i} thrust axis {r.axis.tolist()} is not a unit vector (norm {n:.6f})"
                )
            if r.torque_dir not in (-1, 1):
                raise VehicleError(f"{where}: rotor {i} torque_dir must be +1 or -1, got {r.torque_dir!r}")
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
        for name in ("tm_rise", "tm_fall"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise VehicleError(f"{where}: {name} must be positive seconds, got {v!r}")

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
        g = 9.80665
        axial = float(np.mean(self.axes[:, 2]))
        need = self.mass * g / (self.n_rotors * axial)
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
        """A built-in vehicle: crazyflie, iris, x500, quad-x(arm, mass), quad-plus(arm, mass)."""
        try:
            make = PRESETS[name]
        except KeyError:
            raise VehicleError(
                f"unknown vehicle preset '{name}'; choose one of {', '.join(PRESETS)} or a .toml file"
            ) from None
        return make(**kw)

    @staticmethod
    def load(spec: str | Path) -> Vehicle:
        """A preset name or a TOML file path."""
        p = Path(spec)
        if str(spec) in PRESETS:
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

    def save(self, path: str | Path) -> None:
        """Write TOML atomically (temporary file, then rename)."""
        from rotorid.util import atomic_write_text

        atomic_write_text(Path(path), self.to_toml())

    @staticmethod
    def from_dict(d: dict[str, Any], source: str = "dict") -> Vehicle:
        where = f"{source}"
        try:
            missing = [k for k in ("name", "mass", "rotor") if k not in d]
            if missing:
                raise KeyError(missing[0])
            for i, r in enumerate(d["rotor"]):
                extra = set(r) - {"position", "axis", "torque_dir"}
                if extra:
                    raise VehicleError(
                        f"{where}: rotor {i}: unknown key(s) {', '.join(sorted(extra))}; allowed: axis, position, torque_dir"
                    )
            rotors = tuple(
                Rotor(position=r["position"], axis=r.get("axis", [0, 0, 1]), torque_dir=int(r["torque_dir"]))
                for r in d["rotor"]
            )
            known = {f.name for f in dataclasses.fields(Vehicle)} - {"rotors", "source"}
            unknown = set(d) - known - {"rotor"}
            if unknown:
                raise VehicleError(
                    f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(known | {'rotor'}))}"
                )
            kw = {k: v for k, v in d.items() if k in known}
            if "thrust_exponents" in kw:
                kw["thrust_exponents"] = tuple(kw["thrust_exponents"])
            return Vehicle(rotors=rotors, source=source, **kw)
        except KeyError as e:
            raise VehicleError(
                f"{where}: missing key {e.args[0]!r} (a vehicle needs name, mass and [[rotor]] tables with position and torque_dir)"
            ) from None
        except (TypeError, ValueError) as e:
            raise VehicleError(f"{where}: {e}") from None

    @staticmethod
    def from_toml(path: str | Path) -> Vehicle:
        p = Path(path)
        try:
            d = tomllib.loads(p.read_text())
        except FileNotFoundError:
            raise VehicleError(f"{p}: vehicle file not found") from None
        except tomllib.TOMLDecodeError as e:
            raise VehicleError(f"{p}: not valid TOML: {e}") from None
        return Vehicle.from_dict(d, source=str(p))


def _quad(name: str, mass: float, xy: list[tuple[float, float]], dirs: list[int], **kw: Any) -> Vehicle:
    rotors = tuple(Rotor(position=[x, y, 0.0], torque_dir=s) for (x, y), s in zip(xy, dirs, strict=True))
    return Vehicle(name=name, mass=mass, rotors=rotors, **kw)


def crazyflie() -> Vehicle:
    """Crazyflie 2.1 as in Eschmann et al. (shared/data/README.md): 27 g, rotors at +-28 mm,
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


def iris() -> Vehicle:
    """3DR Iris as in PX4's Gazebo model (1.5 kg; rotor speeds in rad/s)."""
    v = _quad("iris", 1.5, [(0.13, -0.22), (-0.13, 0.20), (0.13, 0.22), (-0.13, -0.20)], [-1, -1, 1, 1])
    return v.replace(
        motor_input="rad_s",
        cmd_max=1100.0,
        thrust_coeffs=np.array([5.84e-06]),
        k_tau=0.06,
        tm_rise=0.0125,
        tm_fall=0.025,
        inertia=np.diag([0.029125, 0.029125, 0.055225]),
    )


def x500() -> Vehicle:
    """Holybro X500 as in PX4's Gazebo model (2.0 kg, arms 0.174 m along x and y; rad/s)."""
    a = 0.174
    v = _quad("x500", 2.0, [(a, -a), (-a, a), (a, a), (-a, -a)], [-1, -1, 1, 1])
    return v.replace(
        motor_input="rad_s",
        cmd_max=1000.0,
        thrust_coeffs=np.array([8.54858e-06]),
        k_tau=0.016,
        tm_rise=0.0125,
        tm_fall=0.025,
        inertia=np.diag([0.0216667, 0.0216667, 0.04]),
    )


PRESETS = {"crazyflie": crazyflie, "iris": iris, "x500": x500, "quad-x": quad_x, "quad-plus": quad_plus}
