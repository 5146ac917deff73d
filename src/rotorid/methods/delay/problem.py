"""The thrust regression of eq. 17-21 (`ThrustProblem`): rotor states through the motor lag
(eq. 45-48), its design matrix and least-squares fit."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from rotorid.errors import ExcitationError, VehicleError
from rotorid.flight import Flight
from rotorid.methods.delay.settings import MIN_RATE_HZ, DelaySettings
from rotorid.methods.regression import Fit, ols_blocks, reduce_rows
from rotorid.methods.voltage import VoltageModel, gain
from rotorid.signal import CHUNK, SensorLowpass, asymmetric_lag, motor_lag, motor_lag_asymmetric
from rotorid.vehicle import Vehicle


def lag_states(cmd: np.ndarray, t: np.ndarray, tm: tuple[float, float], gain: np.ndarray | None = None) -> np.ndarray:
    """Rotor states through the (symmetric or rising/falling) first-order lag (eq. 45-48) of the
    commands, times the voltage curve's `gain` (V / V_ref)^α per sample before the lag when
    given (`rotorid.methods.voltage`: the motor follows the duty cycle times the voltage)."""
    u = cmd if gain is None else cmd * gain[:, None]
    return motor_lag(u, t, tm[0]) if tm[0] == tm[1] else motor_lag_asymmetric(u, t, tm[0], tm[1])


def _delayed(cmd: np.ndarray, t: np.ndarray, dead: float) -> np.ndarray:
    """Commands delayed by `dead` s (linear interpolation, the first command held before)."""
    if dead == 0:
        return cmd
    return np.column_stack([np.interp(t - dead, t, c) for c in cmd.T])


def _delayed_rows(cmd: np.ndarray, t: np.ndarray, lo: int, hi: int, dead: float) -> np.ndarray:
    """Rows lo:hi of `_delayed(cmd, t, dead)`, interpolating within the few samples they reach
    (the same values: np.interp between the same two samples, the first command held before)."""
    if dead == 0:
        return cmd[lo:hi]
    tq = t[lo:hi] - dead
    j0 = max(int(np.searchsorted(t, tq[0], side="right")) - 1, 0)
    j1 = int(np.searchsorted(t, tq[-1], side="left")) + 1
    return np.column_stack([np.interp(tq, t[j0:j1], c) for c in cmd[j0:j1].T])


def chunks(states: list[np.ndarray]) -> Iterator[tuple[int, np.ndarray]]:
    """(flight index, `CHUNK` rows) of every flight's rotor states, in order."""
    return ((k, w[i : i + CHUNK]) for k, w in enumerate(states) for i in range(0, len(w), CHUNK))


@dataclass
class ThrustProblem:
    """Eq. 17-21 for a set of flights: b = m acc (active body rows), regressors from the lagged
    commands. `design_states` builds A for given rotor states; `fit(tm)` solves it with `ols`.
    Where a flight's firmware low-passed the accelerometer before logging it
    (`meta["acc_lowpass"]`), that flight's regressors pass through the same filter
    (`design_blocks`, `design`): the measured specific force lags the thrust by the filter, which
    T_m would otherwise absorb (Betaflight's default 10 Hz biquad: ~22 ms)."""

    flights: list[Flight]
    vehicle: Vehicle
    exponents: tuple[int, ...]
    per_motor: bool
    acc_bias_z: float = 0.0  # m/s², subtracted from the accelerometer's z axis
    voltage: VoltageModel | None = None  # commands times (V / V_ref)^α before the lag when given
    rows: np.ndarray = field(init=False)  # active body axes
    b: np.ndarray = field(init=False)
    shared_c0: bool = field(init=False)
    lowpass_rates: list[float] = field(init=False)  # each flight's rate where its acc was filtered, else 0
    # each flight's rising/falling branches of its last asymmetric lag, where the next one starts (`_lag`)
    branches: dict[int, np.ndarray] = field(init=False, default_factory=dict, repr=False, compare=False)
    # every `sse` evaluated, and the last `fit` (with its states), by (constants, dead time)
    _sse: dict[tuple[tuple[float, float], float], float] = field(
        init=False, default_factory=dict, repr=False, compare=False
    )
    _fit: tuple[object, tuple[Fit, list[np.ndarray]]] | None = field(
        init=False, default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        ax = self.vehicle.axes  # (M, 3)
        self.rows = np.flatnonzero(np.abs(ax).sum(axis=0) > 1e-9)
        bias = np.array([0.0, 0.0, self.acc_bias_z])[self.rows]
        self.lowpass_rates = [f.rate if f.meta.get("acc_lowpass") else 0.0 for f in self.flights]
        self.b = np.concatenate([self.vehicle.mass * (f.acc[:, self.rows] - bias).reshape(-1) for f in self.flights])
        # constant columns of several motors coincide when their axes are parallel (eq. 21):
        self.shared_c0 = (
            self.per_motor and 0 in self.exponents and np.linalg.matrix_rank(ax[:, self.rows].T) < self.vehicle.n_rotors
        )

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def names(self) -> list[str]:
        """Parameter names in column order."""
        if not self.per_motor:
            return [f"thrust_c{j}" for j in self.exponents]
        out = ["thrust_c0"] if self.shared_c0 else []
        for i in range(self.vehicle.n_rotors):
            out += [f"thrust_c{j}_m{i + 1}" for j in self.exponents if not (self.shared_c0 and j == 0)]
        return out

    def design_states(self, states: list[np.ndarray]) -> np.ndarray:
        """A (eq. 21) for given rotor states (one (N, M) array per flight)."""
        r = self.vehicle.axes[:, self.rows]  # (M, R)
        e = np.array(self.exponents)
        blocks = []
        for w in states:
            if not self.per_motor:  # column by column: no (N, M, E) stack on every T_m evaluation
                a = np.empty((len(w), r.shape[1], len(e)))
                for k, j in enumerate(self.exponents):
                    a[:, :, k] = r.sum(axis=0) if j == 0 else (w if j == 1 else w**j) @ r
                blocks.append(a.reshape(-1, len(e)))
                continue
            p = np.stack([np.ones_like(w) if j == 0 else w**j for j in self.exponents], axis=-1)  # (N, M, E)
            a = (p[:, :, None, :] * r[None, :, :, None]).transpose(0, 2, 1, 3)  # (N, R, M, E)
            if self.shared_c0:
                keep = e != 0
                c0 = np.broadcast_to(r.sum(axis=0), (len(w), self.n_rows))[..., None]
                a = np.concatenate([c0, a[..., keep].reshape(len(w), self.n_rows, -1)], axis=2)
            blocks.append(a.reshape(len(w) * self.n_rows, -1))
        return np.vstack(blocks)

    def lowpass(self, k: int) -> SensorLowpass:
        """Flight `k`'s accelerometer low-pass, fresh (a pass-through when none was logged)."""
        f = self.flights[k]
        return SensorLowpass(f.meta.get("acc_lowpass"), self.lowpass_rates[k])

    def lowpassed(self, lp: SensorLowpass, a: np.ndarray) -> np.ndarray:
        """Design rows `a` (samples × body rows interleaved) through `lp` along time."""
        return lp(a.reshape(-1, self.n_rows, a.shape[1])).reshape(a.shape)

    def design_blocks(self, blocks: Iterable[tuple[int, np.ndarray]]) -> Iterator[np.ndarray]:
        """A block by block from (flight index, rotor-state block) pairs in flight order, each
        flight's rows through its accelerometer low-pass (state carried across its blocks)."""
        lp, cur = None, -1
        for k, w in blocks:
            if k != cur:
                lp, cur = self.lowpass(k), k
            yield self.lowpassed(lp, self.design_states([w]))

    def design(self, states: list[np.ndarray]) -> np.ndarray:
        """A for every flight's whole rotor states, through the accelerometer low-passes."""
        return np.vstack(list(self.design_blocks(enumerate(states))))

    def _lag(self, k: int, cmd: np.ndarray, tm: tuple[float, float]) -> np.ndarray:
        """Flight `k`'s rotor states from its (delayed) commands `cmd`: `lag_states`, except that a
        rising/falling lag starts its fixed point from the branches of the flight's previous one
        (`asymmetric_lag`: the same states; a search's nearby constants mostly share every
        branch, so one pass instead of several)."""
        f = self.flights[k]
        g = gain(f, self.voltage)
        if tm[0] == tm[1]:
            return lag_states(cmd, f.t, tm, g)
        y, self.branches[k] = asymmetric_lag(cmd if g is None else cmd * g[:, None], f.t, *tm, self.branches.get(k))
        return y

    def states(self, tm: tuple[float, float], dead: float = 0.0) -> list[np.ndarray]:
        """Rotor states of every flight; `dead` (s) delays the commands first (`dead_time_check`)."""
        return [self._lag(k, _delayed(f.cmd, f.t, dead), tm) for k, f in enumerate(self.flights)]

    def state_blocks(self, tm: tuple[float, float], dead: float = 0.0) -> Iterator[tuple[int, np.ndarray]]:
        """`states(tm, dead)` `CHUNK` rows at a time, flight after flight, with the flight's
        index. The symmetric lag
        restarts each block from the previous block's last state (`motor_lag`'s y0: the same
        recursion, so the same numbers) on commands delayed block by block (`_delayed_rows`), so
        nothing of the flight's length is allocated; the asymmetric lag (a fixed point over the
        whole flight) is computed whole and then cut."""
        for k, f in enumerate(self.flights):
            if tm[0] != tm[1]:
                w = self._lag(k, _delayed(f.cmd, f.t, dead), tm)
                yield from ((k, w[i : i + CHUNK]) for i in range(0, len(w), CHUNK))
                continue
            g = gain(f, self.voltage)
            y = None
            for i in range(0, len(f.t), CHUNK):
                lo, hi = max(i - 1, 0), i + CHUNK
                u = _delayed_rows(f.cmd, f.t, lo, hi, dead)
                u = u if g is None else u * g[lo:hi, None]
                w = motor_lag(u, f.t[lo:hi], tm[0], y0=None if y is None else y[-1])
                y = w if y is None else w[1:]  # the next block's lag starts from its last state
                yield k, y

    def fit(self, tm: tuple[float, float], dead: float = 0.0) -> tuple[Fit, list[np.ndarray]]:
        """The thrust fit at `tm` (commands delayed by `dead` s first) and the rotor states;
        A is built `CHUNK` samples at a time, twice, never whole (`ols_blocks`). The last fit is
        kept and given again for the same constants (the same arrays: no caller writes into
        them): the search's autocorrelation time at the optimum and the uncertainty there ask
        for the same one."""
        key = ((float(tm[0]), float(tm[1])), float(dead))
        if self._fit is not None and self._fit[0] == key:
            return self._fit[1]
        self._fit = None  # never two fits' states held at once: the peak stays one fit's
        s = self.states(tm, dead)

        def blocks() -> Iterator[np.ndarray]:
            return self.design_blocks(chunks(s))

        self._fit = key, (ols_blocks(blocks, self.b, what="thrust curve (eq. 17-21)"), s)
        return self._fit[1]

    def sse(self, tm: tuple[float, float], dead: float = 0.0) -> float:
        """Residual sum of squares of `fit(tm)` (commands delayed by `dead` s first, for
        `dead_time_check`), for the T_m search that evaluates it tens of times: the rotor
        states and [A | b] are built and reduced `CHUNK` rows at a time (`reduce_rows`), so a
        symmetric evaluation allocates nothing of the flight's length (the fit's dozen (N, ...)
        temporaries, then the rotor states, were freshly mapped, page-faulted memory: a third
        of the CPU time on an hour at 1 kHz went to the kernel). Each value is kept: the checks'
        searches come back to constants the T_m search evaluated (a bound, the optimum)."""
        key = ((float(tm[0]), float(tm[1])), float(dead))
        if key not in self._sse:
            red = reduce_rows(self.design_blocks(self.state_blocks(tm, dead)), self.b)
            # ols names the columns that are not excited
            self._sse[key] = red.sse if red.excited.all() else self.fit(tm, dead)[0].sse
        return self._sse[key]

    def coeffs(self, x: np.ndarray) -> np.ndarray:
        """Thrust coefficients as the vehicle stores them: (E,) lumped or (M, E) per motor."""
        if not self.per_motor:
            return np.asarray(x, dtype=float)
        m, ne = self.vehicle.n_rotors, len(self.exponents)
        if not self.shared_c0:
            return np.asarray(x, dtype=float).reshape(m, ne)
        out = np.empty((m, ne))
        j0 = self.exponents.index(0)
        out[:, j0] = x[0]
        out[:, [k for k in range(ne) if k != j0]] = np.asarray(x[1:]).reshape(m, ne - 1)
        return out

    def mean_curve_map(self) -> np.ndarray:
        """L with (mean thrust curve over motors) = L x, for the hover command's covariance."""
        ne = len(self.exponents)
        if not self.per_motor:
            return np.eye(ne)
        eye = np.eye(len(self.names()))
        return np.array([self.coeffs(eye[k]).mean(axis=0) for k in range(eye.shape[0])]).T  # (E, P)


def prepare(flights: list[Flight], vehicle: Vehicle, what: str, *channels: str) -> list[Flight]:
    """The flights of one manoeuvre, each checked for its logging rate and its number of motor
    commands; a thrust manoeuvre must have a flight."""
    out = []
    for f in flights:
        f.require_rate(MIN_RATE_HZ, *channels)
        if f.cmd.shape[1] != vehicle.n_rotors:
            raise VehicleError(
                f"{f.source}: {f.cmd.shape[1]} motor commands but vehicle '{vehicle.name}' has "
                f"{vehicle.n_rotors} rotors; choose the matching vehicle"
            )
        out.append(f)
    if not out and what == "thrust":
        raise ExcitationError("no thrust flight given: the delay method needs a vertical (thrust) excitation flight")
    return out


def check_commands(flights: list[Flight], vehicle: Vehicle) -> None:
    """Raise `ExcitationError` when the thrust flights' motor commands never change: no T_m to find."""
    span = max(vehicle.cmd_max - vehicle.cmd_min, 1e-12)
    if all(np.ptp(f.cmd, axis=0).max() <= 1e-6 * span for f in flights):
        src = ", ".join(sorted({f.source for f in flights}))
        raise ExcitationError(
            f"{src}: not enough excitation for T_m: the motor commands are constant over the whole window "
            f"({flights[0].t[0]:.2f}–{flights[-1].t[-1]:.2f} s); fly the thrust manoeuvre (repeated climbs and "
            "descents with sharp throttle changes) and pass that window"
        )


@dataclass(frozen=True)
class DelayProblem:
    """One identification's inputs and the user's settings, never replaced: the thrust,
    roll/pitch and yaw flights (checked by `prepare`), the vehicle, and the thrust regression
    (eq. 17-21) they set, and the voltage model when the thrust curve takes the battery voltage
    (every flight's rotor states are then the lag of u (V/V_ref)^α). What the steps
    derive travels in their own records (`MotorLag`, `RollPitch`)."""

    thrust_flights: list[Flight]
    roll_pitch: list[Flight]
    yaw: list[Flight]
    vehicle: Vehicle
    settings: DelaySettings
    voltage: VoltageModel | None = None  # the rotor states are then lag(u (V/V_ref)^α)
    thrust: ThrustProblem = field(init=False)

    @classmethod
    def checked(
        cls,
        thrust_flights: list[Flight],
        roll_pitch: list[Flight],
        yaw: list[Flight],
        vehicle: Vehicle,
        settings: DelaySettings,
        voltage: VoltageModel | None = None,
    ) -> DelayProblem:
        """The problem of these flights once `prepare` and `check_commands` accept them."""
        thrust_flights = prepare(thrust_flights, vehicle, "thrust", "cmd", "acc")
        roll_pitch = prepare(roll_pitch, vehicle, "roll/pitch", "cmd", "gyro")
        yaw = prepare(yaw, vehicle, "yaw", "cmd", "gyro")
        check_commands(thrust_flights, vehicle)
        return cls(thrust_flights, roll_pitch, yaw, vehicle, settings, voltage)

    def __post_init__(self) -> None:
        st = self.settings
        thrust = ThrustProblem(
            self.thrust_flights, self.vehicle, st.exponents, st.per_motor, st.acc_bias_z[0], self.voltage
        )
        object.__setattr__(self, "thrust", thrust)
