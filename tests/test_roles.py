"""One role assignment (`runs.role_specs`): `rotorid info`'s ready-to-run command runs through
`identify` as printed, without a warning or a contradiction; `identify` with several
positional logs assigns the roles the same way; a role goes only to windows that excite it."""

from __future__ import annotations

import json
import shlex
import warnings
from pathlib import Path

from typer.testing import CliRunner

from rotorid import excitation, runs
from rotorid.cli import app
from rotorid.infoview import unserved as _unserved
from rotorid.vehicle import Vehicle, build_vehicle


def test_info_command_runs_and_positional_logs_get_the_same_roles(cf_logs: dict[str, Path], tmp_path: Path) -> None:
    logs = [str(cf_logs[n]) for n in ("log16", "log10", "log15")]  # any order
    res = CliRunner().invoke(app, ["info", *logs, "--vehicle", "crazyflie"], terminal_width=400)
    assert res.exit_code == 0, res.output
    cmd = next(ln for ln in res.stdout.splitlines() if ln.startswith("rotorid identify --method delay"))
    args = shlex.split(cmd)[1:]
    args[args.index("--out") + 1] = str(tmp_path / "out")
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    assert "warning" not in run.stderr and "swapped" not in run.output
    params = json.loads((tmp_path / "out" / "params.json").read_text())
    assert abs(params["params"]["tm"]["value"] - 0.0739) < 0.0005  # README tutorial (its windows): 0.0739 ± 0.020 s
    assert params["params"]["I_xx"]["value"] > 0
    # identify with the three logs given positionally: the roles and windows of the command
    req = runs.Request(logs, Vehicle.preset("crazyflie"))
    roles = runs.assigned_roles(req)
    words = runs.delay_logs(roles)
    assert cmd == runs.command("delay", roles, "crazyflie")
    assert words[0].startswith(logs[1]) and words[words.index("--roll-pitch") + 1].startswith(logs[2])
    assert words[words.index("--yaw") + 1].startswith(logs[0])
    assert req.notes[0].startswith("roles assigned to the 3 logs by their excitation")


def test_a_freestyle_log_serves_the_roles_it_excites(bf_flights) -> None:
    """better_tune.BBL excites everything: one log, every role, and each window passes
    `check_role` without a warning. btfl_002.bbl pitches too little (3.5 rad/s² RMS, excited
    from 4.95 for a 0.16 m arm): no roll/pitch window, so no yaw window either (K_tau rests on
    the roll/pitch inertia) — the command is the thrust flight alone."""
    q5 = build_vehicle("quad-x", 0.16, 0.75, "normalized", None, "betaflight", None, None)
    limits = excitation.thresholds_for(q5)
    got, said = {}, {}
    for name, f in bf_flights.items():
        found = excitation.log_windows([f], limits)
        got[name] = runs.delay_roles(runs.role_specs({name: found}))
        said[name] = _unserved({name: found}, runs.role_specs({name: found}), {"blackbox"})
        for role in ("thrust", "roll_pitch", "yaw"):
            for w in excitation.excited_windows(found[role]) if got[name][role] else ():
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    assert excitation.check_role(f.window(w.t0, w.t1), role, limits) is None
    assert all(got["better_tune.BBL"].values())
    assert got["btfl_002.bbl"]["thrust"] and not got["btfl_002.bbl"]["roll_pitch"] and not got["btfl_002.bbl"]["yaw"]
    # info says what the command leaves out, why, and where the manoeuvres are described
    assert said["better_tune.BBL"] == []
    assert said["btfl_002.bbl"][0] == "not in the command:"
    assert (
        said["btfl_002.bbl"][1] == "roll/pitch: no window excites it enough (best window 0.70 of the excited threshold)"
    )
    assert said["btfl_002.bbl"][2].startswith("yaw: left out") and said["btfl_002.bbl"][2].endswith(
        "docs/fly-betaflight.md"
    )


def test_info_proposes_freq_only_where_a_log_was_swept(bf_flights) -> None:
    """btfl_002.bbl is freestyle without a chirp: `info` proposed `--method freq`, which then
    refused it ("the transfer-function fit diverged"). freq on the pilot's closed-loop input is
    biased, so it is proposed only where a log sweeps an axis, and the left-out line says why."""
    from rotorid import infoview

    q5 = build_vehicle("quad-x", 0.16, 0.75, "normalized", None, "betaflight", None, None)
    limits = excitation.thresholds_for(q5)
    f = bf_flights["btfl_002.bbl"]
    got = {"btfl_002.bbl": infoview.analyse("btfl_002.bbl", [f], q5, limits, runs.min_rates())}
    assert not got["btfl_002.bbl"].swept and "freq" in got["btfl_002.bbl"].usable
    lines = infoview.closing(got, limits, q5, "q5.toml", [])
    assert any(ln.startswith("rotorid identify --method delay") for ln in lines)
    assert not any("--method freq" in ln and ln.startswith("rotorid") for ln in lines)
    assert any(ln.startswith("freq: no log sweeps an axis") for ln in lines)
