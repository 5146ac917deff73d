"""Entry point of the delay method: the steps in order, gathered into a `Result`."""

from __future__ import annotations

import dataclasses

from threadpoolctl import threadpool_limits

from rotorid.flight import Flight
from rotorid.identified import with_vehicle
from rotorid.methods.delay.angular_steps import roll_pitch_step, yaw_step
from rotorid.methods.delay.collected import Collected
from rotorid.methods.delay.imu import imu_scale_term
from rotorid.methods.delay.problem import DelayProblem, check_commands, prepare
from rotorid.methods.delay.settings import DelaySettings, tm_support
from rotorid.methods.delay.structure import choose_curve
from rotorid.methods.delay.thrust_steps import motor_lag_step, thrust_step
from rotorid.result import Result, build_result
from rotorid.vehicle import Vehicle


def identify(
    thrust_flights: list[Flight],
    vehicle: Vehicle,
    roll_pitch: list[Flight] | tuple[Flight, ...] = (),
    yaw: list[Flight] | tuple[Flight, ...] = (),
    settings: DelaySettings | None = None,
) -> Result:
    """Identify T_m (or rising/falling constants), the thrust curve, the hover command, I_xx,
    I_yy (eq. 80-82), I_zz (eq. 93-94) and K_tau (eq. 95-96) from the three Eschmann manoeuvres.

    Raises `ExcitationError` when the thrust flight cannot determine T_m at all (constant
    commands, or thrust that does not follow the commands).

    Every regression here is tall and skinny (tens of thousands of rows, a few columns), where a
    multi-threaded BLAS only adds spin-waiting (3x the CPU time, 2.5x the wall time on a busy
    machine), so the computation runs with BLAS limited to one thread.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _identify(list(thrust_flights), vehicle, list(roll_pitch), list(yaw), settings or DelaySettings())


def _identify(
    thrust_flights: list[Flight], vehicle: Vehicle, roll_pitch: list[Flight], yaw: list[Flight], st: DelaySettings
) -> Result:
    out = Collected()
    chosen = st.exponents is None
    checked = prepare(thrust_flights, vehicle, "thrust", "cmd", "acc")
    check_commands(checked, vehicle)
    # the thrust curve's terms and the battery voltage in it from the data, on the checked thrust flights
    exponents, model, searched = choose_curve(checked, roll_pitch + yaw, vehicle, st, out)
    st = dataclasses.replace(st, exponents=exponents)
    problem = DelayProblem.checked(thrust_flights, roll_pitch, yaw, vehicle, st, model)
    lag = motor_lag_step(problem, out, searched)
    ident = thrust_step(problem, lag, out)
    out.settings = {
        **dataclasses.asdict(st),
        "tm_search_range": list(tm_support(st)),
        "tm_evaluations": lag.search.evaluations,
        "exponents_from_data": chosen,
        "voltage_model": None if model is None else dataclasses.asdict(model),
    }
    if not problem.roll_pitch:
        out.notes.append("No roll/pitch flight: I_xx, I_yy (and so I_zz, K_tau) were not identified.")
    else:
        rp = roll_pitch_step(problem, ident, lag.unc, out)
        yaw_step(problem, ident, lag.unc, rp, out)
    imu_scale_term(out, ident, st.imu_scale)
    result = build_result("delay", out.est, out.settings, out.diag, out.obs, out.notes)
    for name, why in out.assumed.items():
        result.params[name] = dataclasses.replace(result.params[name], assumption=why)
    return with_vehicle(result, vehicle)
