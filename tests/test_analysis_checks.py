"""The analysis side of untrusted logs (issue 16 part 5): a log that cannot determine the
parameters gets a clear `RotoridError` naming the channel or window and what to do, or an
explicit "not identifiable" with the reason — never a confident number. One table of case ×
method, each through `rotorid.runs.identify` (the path of `rotorid identify`, batch and app),
built from simulated flights written as interchange CSV and then damaged:

- NaN / inf in a channel (a different channel per method),
- constant motor outputs (not logged or stuck),
- a hover-only flight,
- a given window that spans a 2 s gap of the log,
- a given window of 10 samples.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rotorid import runs
from rotorid.errors import ExcitationError, RotoridError, WindowError
from rotorid.flight import Flight
from rotorid.io import table
from rotorid.sim import scenarios
from rotorid.sim.control import Gains
from rotorid.sim.sensors import Imu
from rotorid.sim.simulator import FlightSpec, References, fly

#: method -> (scenario, its flight, duration s)
SCENARIO = {
    "delay": ("eschmann-crazyflie", "thrust", 8.0),
    "tls": ("six-config-a", "train", 8.0),
    "online": ("kwon-payload", "trajectory", 10.0),
}
#: method -> (CSV column, rotorid channel) that the NaN and the inf cases damage.
NAN_COLUMN = {"delay": ("cmd_2", "cmd"), "tls": ("rpm_1", "rotor_speed"), "online": ("gyro_y", "gyro")}
INF_COLUMN = {"delay": ("acc_z", "acc"), "tls": ("qx", "quat"), "online": ("acc_x", "acc")}
GAP = (3.0, 5.0)  # s of log removed


@functools.cache
def simulated(method: str) -> scenarios.Scenario:
    name, _, duration = SCENARIO[method]
    return scenarios.run(name, seed=1, duration=duration)


@functools.cache
def hover(method: str) -> Flight:
    """The scenario's vehicle holding a position for 6 s, airborne from the start, with 5 %
    per-rotor thrust noise (turbulence) and the scenario's logging."""
    sc = simulated(method)
    true, like = sc.true_vehicle, sc.flights[SCENARIO[method][1]]

    def hold(t: np.ndarray) -> References:
        z = np.zeros((len(t), 3))
        return References(np.tile((0.0, 0.0, 1.0), (len(t), 1)), z, z.copy(), np.zeros(len(t)), z.copy())

    spec = FlightSpec(
        duration=6.0,
        references=hold,
        gains=Gains.from_bandwidth(true.inertia, (10.0, 10.0, 5.0), 0.8, pos_wn=(0.6, 0.6, 1.0)),
        imu=Imu(rate=like.rate),
        log_rate=like.rate,
        log_rotor_speed=like.rotor_speed is not None,
        thrust_noise=0.05 * true.mass * 9.81 / true.n_rotors,
    )
    return fly(true, spec, np.random.default_rng(3), "hover")[0]


def _damage(path: Path, column: str, value: float) -> None:
    """Five samples in the middle of `column` of a written CSV set to `value`."""
    df = pd.read_csv(path)
    df.loc[len(df) // 2 : len(df) // 2 + 4, column] = value
    df.to_csv(path, index=False)


def log_argument(method: str, case: str, tmp: Path) -> tuple[str, dict[str, Any]]:
    """The damaged main log argument of `method` for `case` and the options (delay's
    roll/pitch and yaw flights, undamaged)."""
    sc = simulated(method)
    f = sc.flights[SCENARIO[method][1]]
    window = ""
    if case == "hover":
        f = hover(method)
    elif case == "constant-motors":
        f = replace(f, cmd=np.full_like(f.cmd, float(np.median(f.cmd))))
        if f.rotor_speed is not None:
            f = replace(f, rotor_speed=np.full_like(f.rotor_speed, float(np.median(f.rotor_speed))))
    elif case == "gap":
        keep = (f.t < GAP[0]) | (f.t >= GAP[1])
        f = replace(f, **{c: getattr(f, c)[keep] for c in ("t", *f.channels)})
        window = f"@0.5:{f.t[-1] - 0.5:g}"
    elif case == "ten-samples":
        k = len(f.t) // 2
        window = f"@{f.t[k]:g}:{f.t[k + 9]:g}"
    path = table.write(f, tmp / f"{method}-{case}.csv")
    if case in ("nan", "inf"):
        _damage(path, (NAN_COLUMN if case == "nan" else INF_COLUMN)[method][0], np.nan if case == "nan" else np.inf)
    options: dict[str, Any] = {}
    if method == "delay":
        options = {r: [str(table.write(sc.flights[r], tmp / f"{r}.csv"))] for r in ("roll_pitch", "yaw")}
    return f"{path}{window}", options


def _expect(method: str, case: str, spec: str) -> tuple[type[RotoridError], list[str]]:
    """The error class and the message fragments (what, where, what to do) for a case."""
    path = spec.partition("@")[0]
    if case in ("nan", "inf"):
        ch = (NAN_COLUMN if case == "nan" else INF_COLUMN)[method][1]
        return RotoridError, [path, f"channel '{ch}' has NaN/inf at t=", "cut it out with a window FILE@t0:t1"]
    if case == "constant-motors":
        return ExcitationError, [
            path,
            "channel 'cmd' is constant over every sample",
            "every motor at",
            "not logged or is stuck",
            f"check the motor channels with `rotorid info {path}`",
        ]
    if case == "gap":
        end = spec.rpartition(":")[2]
        return WindowError, [
            f"{spec} spans 1 gap(s) in the log ({GAP[0]:.2f}–{GAP[1]:.2f} s)",
            "no method may bridge them",
            f"give the parts as separate windows: {path}@0.50:{GAP[0]:.2f},{GAP[1]:.2f}:{float(end):.2f}",
        ]
    if case == "ten-samples":
        return WindowError, [
            spec,
            "holds 10 samples",
            "give a window of at least 2 s of flight",
            f"rotorid info {path}",
        ]
    # hover only
    if method == "delay":
        return ExcitationError, [path, "the thrust flight excites thrust only", "give the window where the thrust"]
    return ExcitationError, [path, "estimator never enabled", "give a log that includes the take-off"]


CASES = ("nan", "inf", "constant-motors", "hover", "gap", "ten-samples")


@pytest.mark.parametrize("method", sorted(SCENARIO))
@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_or_not_identifiable(method: str, case: str, tmp_path: Path) -> None:
    sc = simulated(method)
    spec, options = log_argument(method, case, tmp_path)
    if (method, case) == ("tls", "hover"):
        hover_only_tls(sc, spec)
        return
    kind, fragments = _expect(method, case, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's gap warning; the refusal is the check
        with pytest.raises(kind) as err:
            runs.identify(method, [spec], sc.vehicle, options)
    msg = str(err.value)
    assert type(err.value) is kind and "\n" not in msg
    for fragment in fragments:
        assert fragment in msg


def hover_only_tls(sc: scenarios.Scenario, spec: str) -> None:
    """IDIM-TLS on a hover: the thrust coefficient is identifiable (Σ k_t Ω² = m g with the
    known mass) and comes out right; the hover cannot separate an accelerometer bias from the
    thrust, so k_t says it assumes none, with that assumption's σ (b/g); every inertia, the
    torque coefficient and the CoM are explicitly not identifiable, each with the reason and
    what to fly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runs.identify("tls", [spec], sc.vehicle, {})
    assert set(result.params) == {"k_t"}
    k_t = result.params["k_t"]
    assert k_t.value == pytest.approx(sc.truth.params["k_t"], rel=0.02)
    assert "not separable from the thrust" in k_t.assumption
    # the bias prior's 0.2 m/s² over g, and the accelerometer's assumed 1 % scale (`IMU_SCALE`)
    assert k_t.std == pytest.approx(k_t.value * np.hypot(0.2 / 9.80665, 0.01), rel=0.05)
    obs = result.observability
    for name, why, advice in (
        ("I_xx", "the roll dynamics are weakly excited", "fly sharper roll manoeuvres"),
        ("I_yy", "the pitch dynamics are weakly excited", "fly sharper pitch manoeuvres"),
        ("I_zz", "k_d enters only the yaw-moment row", "fly a second configuration"),
        ("ms_x", "too small to change the dynamics measurably", "move a payload off-centre"),
    ):
        assert obs[name]["identifiable"] is False and why in obs[name]["reason"] and advice in obs[name]["advice"]


def test_a_window_beside_the_gap_is_used(tmp_path: Path) -> None:
    """The windows the gap message proposes are accepted (the refusal is of the bridge, not
    of the log): tls identifies from the two parts."""
    sc = simulated("tls")
    spec, _ = log_argument("tls", "gap", tmp_path)
    path = spec.partition("@")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runs.identify("tls", [f"{path}@0.5:{GAP[0]:.2f},{GAP[1]:.2f}:7.5"], sc.vehicle, {})
    assert result.params["k_t"].value == pytest.approx(sc.truth.params["k_t"], rel=0.02)
