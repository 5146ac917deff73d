"""The battery voltage in tls's rotor terms (`rotorid.methods.voltage`): commands times
(V / V_ref)^α, α found by the IDIM's likelihood (`likelihood.LagModel`) and kept only where the
model with it predicts held-out segments of the flights better (`heldout.prefers`), as the IMU
lag is (`lags.choose_imu_delay`)."""

from __future__ import annotations

from typing import NamedTuple

from rotorid.errors import RotoridError
from rotorid.methods import voltage
from rotorid.methods.tls.heldout import held_out_sse, prefers, segments
from rotorid.methods.tls.likelihood import lag_model
from rotorid.methods.tls.problem import TlsProblem
from rotorid.motion import speed_source


class VoltageChoice(NamedTuple):
    """The voltage curve fitted (`model`), whether it is kept, the held-out t statistic of it
    against the commands alone (`heldout.prefers`) and the note in words."""

    model: voltage.VoltageModel
    kept: bool
    t: float
    note: str


def _unusable(problem: TlsProblem) -> str | None:
    flights = [f for fs in problem.configs.values() for f in fs]
    why = voltage.unusable(flights, problem.vehicle)
    if why is None and any(speed_source(f, problem.vehicle, problem.model.speed) != "cmd" for f in flights):
        why = "the rotor terms are measured rotor speeds, whose thrust k_t ω² the voltage does not change"
    return why


def choose_voltage(problem: TlsProblem) -> tuple[TlsProblem, VoltageChoice | None, str]:
    """The problem with the voltage curve where `TlsSettings.voltage` and the flights allow it
    and it predicts held-out segments better than the commands alone ("on": kept regardless),
    the choice (None where not considered) and why not considered ("" otherwise). α is fitted
    at the problem's IMU lag (0 unless given: the lag is searched afterwards, with the voltage
    curve, `lags.solve_separated`) by the equal-rotor model's likelihood, twice: the plain first
    fit's accelerometer bias takes up the sag's mean thrust (b_z 1.5-1.7 m/s² on six-config-a
    with a battery sag, α 0.955 ± 0.012 for the true 1), so α is fitted again with the bias of
    a first fit at the first α, which the held-out comparison uses too. Its σ counts the rows
    as independent (a lower bound where they are correlated in time)."""
    st = problem.model
    if st.voltage == "off":
        return problem, None, ""
    why = _unusable(problem)
    if why is not None:
        if st.voltage == "on":
            raise RotoridError(f"tls: --voltage on, but {why}; use --voltage auto or off")
        return problem, None, why
    flights = [f for fs in problem.configs.values() for f in fs]
    v_ref, v_min, v_max = voltage.model_span(flights)
    model, tau = lag_model(problem, False), st.imu_delay or 0.0
    alpha, _ = voltage.fit_alpha(lambda a: model.cost(tau, voltage_model=(a, v_ref)))
    rich = model._replace(bias0=lag_model(problem.derive(voltage_model=(alpha, v_ref)), False).bias0)
    alpha, std = voltage.fit_alpha(lambda a: rich.cost(tau, voltage_model=(a, v_ref)))
    if why := voltage.at_bound(alpha):
        if st.voltage == "on":
            raise RotoridError(f"tls: --voltage on, but {why}; use --voltage auto or off")
        return problem, None, why
    w0, blocks, rows = model.system(tau)
    folds, args = segments(rows), (model.kept, model.active, model.scale)
    plain = held_out_sse(w0, blocks, folds, *args)
    del w0
    pref = prefers(plain, held_out_sse(rich.system(tau, voltage_model=(alpha, v_ref))[0], blocks, folds, *args))
    kept = pref.richer or st.voltage == "on"
    vm = voltage.VoltageModel(alpha, std, v_ref, v_min, v_max)
    note = (
        f"Battery voltage in the rotor terms (commands x (V/V_ref)^α, V_ref {v_ref:.3f} V, flights {v_min:.3f}–"
        f"{v_max:.3f} V): α = {alpha:.3g} ± {std:.2g}; "
        + (
            f"kept: it predicts held-out segments better than the commands alone (t = {pref.t:.1f})"
            if pref.richer
            else f"{'kept (--voltage on), though' if kept else 'not kept:'} it does not predict held-out segments "
            f"better than the commands alone (t = {pref.t:.1f})"
        )
        + ("; the other parameters' σ includes α's (their change at α + σ)" if kept else "")
    )
    return (
        (problem.derive(voltage_model=(alpha, v_ref)) if kept else problem),
        VoltageChoice(vm, kept, pref.t, note),
        "",
    )
