"""Memory and time against flight length: peak traced memory (tracemalloc: numpy's buffers
included) per input row, wall time and its kernel (sys) share for the delay method on
synthetic 1 kHz thrust flights of 10 s, 600 s and 3600 s (time stamps jittered ±20 % like a
real logger, throttle steps through a 50 ms lag, noisy acceleration), each in a fresh process;
and, measured only, the same for tls on the six-config-a flight (simulated, 200 Hz).

`run.py memory` runs it all (the 3600 s delay run takes minutes); `bench_memory.py 10 600`
runs the delay sizes given."""

from __future__ import annotations

import json
import os
import subprocess
import sys

DELAY_SECONDS = (10, 600, 3600)
TLS_SECONDS = (90, 360)

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
method, seconds = sys.argv[1], float(sys.argv[2])
if method == "delay":
    from rotorid.flight import Flight
    from rotorid.methods import delay
    from rotorid.signal import motor_lag
    from rotorid.vehicle import Vehicle
    rng = np.random.default_rng(0)
    n = int(seconds * 1000)
    t = np.concatenate([[0.0], np.cumsum(1e-3 * rng.uniform(0.8, 1.2, n - 1))])
    u = np.repeat(rng.uniform(0.35, 0.85, n // 250 + 1), 250)[:n, None] + 0.02 * rng.standard_normal((n, 4))
    w = motor_lag(u, t, 0.05)
    acc = np.zeros((n, 3))
    acc[:, 2] = (0.0225 - 0.0115 * w + 0.128 * w**2).sum(axis=1) / 0.027 + 0.3 * rng.standard_normal(n)
    del w
    args = ([Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"source": "synthetic"})], Vehicle.preset("crazyflie"))
    fn = delay.identify
else:
    from rotorid.methods import tls
    from rotorid.sim import scenarios
    sc = scenarios.run("six-config-a", seed=0, duration=seconds)
    n = len(sc.flights["train"].t)
    args = ({"A": [sc.flights["train"]]}, sc.vehicle)
    fn = tls.identify
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
fn(*args)
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
peak = tracemalloc.get_traced_memory()[1] - base
print(json.dumps({"rows": n, "peak": peak, "wall": wall, "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime}))
"""


def measure(method: str, seconds: float) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, method, str(seconds)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rows(method: str, seconds: float, m: dict, target: str) -> list[dict]:
    cpu = m["user"] + m["sys"]
    note = f"{m['rows']:,} rows; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    return [
        {
            "name": f"{method} {seconds:g} s: peak per row",
            "value": m["peak"] / m["rows"],
            "unit": "B",
            "target": target,
            "note": note,
        },
        {
            "name": f"{method} {seconds:g} s: wall",
            "value": m["wall"],
            "unit": "s",
            "target": "",
            "note": f"{1e6 * m['wall'] / m['rows']:.2f} µs/row",
        },
        {
            "name": f"{method} {seconds:g} s: kernel share of CPU",
            "value": 100.0 * m["sys"] / cpu,
            "unit": "%",
            "target": "<= 10" if method == "delay" else "",
            "note": f"user {m['user']:.2f} s, sys {m['sys']:.2f} s",
        },
    ]


def run(delay_seconds: tuple[float, ...] = DELAY_SECONDS, tls_seconds: tuple[float, ...] = TLS_SECONDS) -> list[dict]:
    rows: list[dict] = []
    for s in delay_seconds:
        rows += _rows("delay", s, measure("delay", s), "<= 300")
    for s in tls_seconds:
        rows += _rows("tls", s, measure("tls", s), "")
    return rows


if __name__ == "__main__":
    for r in run(tuple(float(a) for a in sys.argv[1:]) or DELAY_SECONDS, ()):
        print(f"{r['name']:<40} {r['value']:>10.3g} {r['unit']:<3} {r['target']:<7} {r['note']}")
