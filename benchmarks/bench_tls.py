"""IDIM-TLS (Six et al.): wall and CPU time of the whole pipeline (filtering, observation
matrix, decimation, weighted TLS, essential parameters) on a 90 s 200 Hz simulated flight of
configuration A and on A + B combined, plus the accuracy of those runs against the
simulator's truth and the cross-validation R² on the held-out flight; and a case shaped like
real logs (issue 36): three 51 s flights at 500 Hz with attitude, position and rotor speeds,
rotor drag on, the IMU's and the pose's lags searched, a few samples dropped as a real logger
does (so the airborne pieces are resampled), identified as `rotorid identify --method tls`
does with its defaults. Simulation time is not counted (`python benchmarks/bench_tls.py real`
runs that case alone)."""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import profiling
from rotorid.methods import tls
from rotorid.result import Truth, compare
from rotorid.sim import scenarios
from rotorid.validate import validate

DURATION = 90.0
REPEATS = 3


def _timed(fn):
    runs = []
    for _ in range(REPEATS):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), out


def real_shaped_flights() -> tuple[list, object]:
    """Three kwon-payload flights (seeds 0-2) of 51 s logged at 500 Hz with rotor drag (0.3 1/s
    at hover), each with three single samples dropped (a real logger's gaps: non-uniform stamps)."""
    flights = []
    for seed in range(3):
        sc = scenarios.run("kwon-payload", seed=seed, duration=51.0, imu_rate=500.0, rotor_drag=0.3)
        f = sc.flights["trajectory"]
        keep = np.ones(len(f.t), dtype=bool)
        keep[[5000, 12001, 20002]] = False
        flights.append(f.replace(t=f.t[keep], **{c: getattr(f, c)[keep] for c in f.channels}))
    return flights, sc.vehicle


#: The stages of tls's identify whose shares of the real-log-shaped case `real_rows` reports
#: (module stem, function): what limits its CPU target.
STAGES = {
    "IMU lag search": ("lags", "choose_imu_delay"),
    "optional terms' held-out choice": ("terms", "fit_terms"),
    "body drag's candidates (within the optional terms)": ("terms", "_fit_body_drag"),
    "rotor gains": ("gains", "estimate_rotor_gains"),
    "noise moments": ("noise", "noise_moment"),
    "zero-phase filtering (all stages)": ("signal", "filtfilt_blocks"),
}


def real_rows() -> list[dict]:
    """CPU of the real-log-shaped case (issue 36 target: <= 5 s CPU), and its stages' shares."""
    flights, vehicle = real_shaped_flights()
    settings = tls.TlsSettings()  # the CLI's defaults: rotor drag on, the IMU's and the pose's lags searched
    call = lambda: tls.identify({"A": flights}, vehicle, settings=settings)
    wall, cpu, _ = _timed(call)
    note = f"3 x 51 s at 500 Hz, attitude + rotor drag, lags searched; load avg {os.getloadavg()[0]:.1f}"
    shares = profiling.share_rows(
        call,
        STAGES,
        ("pipeline", "identify"),
        "real-log-shaped share",
        "cumulative time under cProfile over identify's; stages nest (filtering is inside the others)",
    )
    return [
        {"name": "real-log-shaped, 3 x 51 s @ 500 Hz: CPU", "value": cpu, "unit": "s", "target": "<= 5", "note": note},
        {"name": "real-log-shaped, 3 x 51 s @ 500 Hz: wall", "value": wall, "unit": "s", "target": "", "note": ""},
        *shares,
    ]


def run() -> list[dict]:
    a = scenarios.run("six-config-a", seed=0, duration=DURATION)
    b = scenarios.run("six-config-b", seed=0, duration=DURATION)
    load = f"load avg {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {REPEATS}"
    wa, ca, ra = _timed(lambda: tls.identify({"A": [a.flights["train"]]}, a.vehicle))
    cfg = {"A": [a.flights["train"]], "B": [b.flights["train"]]}
    wab, cab, rab = _timed(lambda: tls.identify(cfg, a.vehicle, masses={"B": b.vehicle.mass}))
    wm, _, rm = _timed(
        lambda: tls.identify(
            cfg, a.vehicle, masses={"B": b.vehicle.mass}, settings=tls.TlsSettings(source="mocap", mocap_delay=0.005)
        )
    )
    wv, _, val = _timed(lambda: validate(rab, [b.flights["test"]], config="B"))
    tr = {f"{k}@{c}": v for c, sc in (("A", a), ("B", b)) for k, v in sc.truth.params.items()}
    truth = Truth(tr | {k: a.truth.params[k] for k in ("k_t", "k_d", "k_tau")})
    ea, eab, em = compare(ra, a.truth), compare(rab, truth), compare(rm, truth)
    rows = [
        {"name": "config A, 90 s @ 200 Hz: wall", "value": wa, "unit": "s", "target": "< 2", "note": load},
        {"name": "config A, 90 s @ 200 Hz: CPU", "value": ca, "unit": "s", "target": "", "note": ""},
        {"name": "A + B combined, 2 x 90 s: wall", "value": wab, "unit": "s", "target": "< 4", "note": load},
        {"name": "A + B combined, 2 x 90 s: CPU", "value": cab, "unit": "s", "target": "", "note": ""},
        {
            "name": "A + B combined, mocap: wall",
            "value": wm,
            "unit": "s",
            "target": "",
            "note": "5 ms pose delay compensated",
        },
        {"name": "validate 90 s held-out flight: wall", "value": wv, "unit": "s", "target": "", "note": "config B"},
        {"name": "A alone: k_t error", "value": ea["k_t"], "unit": "%", "target": "|e| < 1", "note": "IMU"},
        {
            "name": "A alone: I_xx / I_yy worst error",
            "value": max(abs(ea["I_xx"]), abs(ea["I_yy"])),
            "unit": "%",
            "target": "< 5",
            "note": "",
        },
        {"name": "A + B: k_d error", "value": eab["k_d"], "unit": "%", "target": "|e| < 5", "note": "IMU"},
        {
            "name": "A + B: worst I_zz error",
            "value": max(abs(eab["I_zz@A"]), abs(eab["I_zz@B"])),
            "unit": "%",
            "target": "< 5",
            "note": "",
        },
        {
            "name": "A + B mocap: worst I_xx/I_yy error",
            "value": max(abs(em[k]) for k in ("I_xx@A", "I_yy@A", "I_xx@B", "I_yy@B")),
            "unit": "%",
            "target": "",
            "note": "",
        },
        {
            "name": "A + B mocap: k_d error",
            "value": em.get("k_d", float("nan")),
            "unit": "%",
            "target": "",
            "note": "errors-in-variables in yaw",
        },
        {
            "name": "held-out R² omega_dot_y (config B)",
            "value": val.metrics["omega_dot_y"]["r2"],
            "unit": "",
            "target": "> 0.99",
            "note": "",
        },
        {
            "name": "held-out ||rho||/||W_k chi_k|| M_z (config B)",
            "value": val.rel_error_norm_pct["M_z"],
            "unit": "%",
            "target": "",
            "note": "Table III",
        },
    ]
    return rows + real_rows()


if __name__ == "__main__":
    for r in real_rows() if sys.argv[1:] == ["real"] else run():
        print(f"{r['name']:<58} {r['value']:>10.3g} {r['unit']:<12} {r['note']}")
