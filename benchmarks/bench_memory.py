"""Memory and time against flight length (issue 14 goal 4) for the delay and tls methods on
1 kHz flights of 10 s, 60 s, 600 s and 3600 s, each run in a fresh, niced process.

Peak memory per input row is measured with tracemalloc: it traces every numpy buffer the
method allocates, from a baseline taken after the flight is built, so it is the method's own
cost, deterministic and independent of the interpreter, the libraries' code and the input
arrays. The process's RSS high-water mark is reported beside it: it counts all of those too
(and BLAS workspace, which tracemalloc does not see), so it is the figure a user sees ("3600 s
through tls <= 1.5 GB"). It is the child's own VmHWM from /proc/self/status: ru_maxrss would
not do, as Linux carries the parent's high-water mark into a child's across fork and exec.
Without /proc (macOS) ru_maxrss is the fallback, and the row's note says so. Wall, user and sys
(kernel) time are per process; sys time on a loaded machine varies by half between runs of the
same code, so the minor page faults (pages freshly mapped and zeroed, what that kernel time is
spent on) are counted too.

The child's environment holds only `ENV_KEEP` (PATH, HOME, PYTHONPATH): BLAS and OpenMP use
their default thread counts, as a user's run does, and nothing an earlier benchmark in the same
`run.py` left behind reaches it. A glibc malloc tunable such as the MALLOC_TRIM_THRESHOLD_ that
Dask's nanny sets turns off the adaptive mmap threshold, so every numpy buffer of 128 KiB or
more is mapped afresh: delay at 60 s then took 390 000 minor faults and 53 % of its CPU time in
the kernel, against 14 000 and 4 %.

- delay: synthetic thrust flight, time stamps jittered ±20 % like a real logger, throttle
  steps through a 50 ms lag, noisy acceleration.
- tls: the six-config-a simulation (60 s, 200 Hz IMU and rotor speeds), resampled to 1 kHz
  and repeated end to end to the length asked (simulating an hour would take twenty minutes;
  the joins are as rough as real manoeuvres for the filters).

`cli_rows` measures tls as a user's process sees it (issue 36): the peak RSS of `rotorid
identify --method tls` on simulated 1200 s and 300 s flights at 200 Hz (240 s and 60 s at 1 kHz),
per added row.

`run.py memory` runs it all (the 3600 s runs take minutes each); `bench_memory.py METHOD
SECONDS...` runs those sizes, e.g. `bench_memory.py tls 10 60`; `bench_memory.py cli [RATE_HZ]` the
command's RSS alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SECONDS = (10, 60, 600, 3600)
#: The only variables the child inherits (see the module docstring).
ENV_KEEP = ("PATH", "HOME", "PYTHONPATH")

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
method, seconds = sys.argv[1], float(sys.argv[2])
n = int(seconds * 1000)
if method == "delay":
    from rotorid.flight import Flight
    from rotorid.methods import delay
    from rotorid.signal import motor_lag
    from rotorid.vehicle import Vehicle
    rng = np.random.default_rng(0)
    t = np.concatenate([[0.0], np.cumsum(1e-3 * rng.uniform(0.8, 1.2, n - 1))])
    u = np.repeat(rng.uniform(0.35, 0.85, n // 250 + 1), 250)[:n, None] + 0.02 * rng.standard_normal((n, 4))
    w = motor_lag(u, t, 0.05)
    acc = np.zeros((n, 3))
    acc[:, 2] = (0.0225 - 0.0115 * w + 0.128 * w**2).sum(axis=1) / 0.027 + 0.3 * rng.standard_normal(n)
    del w
    args = ([Flight(t=t, acc=acc, gyro=np.zeros((n, 3)), cmd=u, meta={"source": "synthetic"})], Vehicle.preset("crazyflie"))
    fn = delay.identify
else:
    from rotorid.flight import Flight
    from rotorid.methods import tls
    from rotorid.sim import scenarios
    sc = scenarios.run("six-config-a", seed=0, duration=min(seconds, 60.0))
    f = sc.flights["train"].resample(1000.0)
    idx = np.arange(n) % len(f.t)
    kw = {c: getattr(f, c)[idx] for c in ("acc", "gyro", "cmd", "rotor_speed")}
    del f
    args = ({"A": [Flight(t=np.arange(n) * 1e-3, meta={"source": "six-config-a tiled"}, **kw)]}, sc.vehicle)
    del kw, sc.flights
    fn = tls.identify
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
fn(*args)
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
peak = tracemalloc.get_traced_memory()[1] - base
out = {"rows": n, "peak": peak, "wall": wall, "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
       "faults": r1.ru_minflt - r0.ru_minflt}
try:
    with open("/proc/self/status") as status:
        hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    out |= {"maxrss": 1024 * hwm, "rss_source": "VmHWM"}
except OSError:
    out |= {"maxrss": r1.ru_maxrss * (1 if sys.platform == "darwin" else 1024), "rss_source": "ru_maxrss"}
print(json.dumps(out))
"""


def measure(method: str, seconds: float) -> dict:
    """One run in a fresh process at nice 10 with a clean environment (tracemalloc slows
    numpy-heavy code by a few %)."""
    cmd = ["nice", "-n", "10", sys.executable, "-c", CHILD, method, str(seconds)]
    env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1]) | {"load": os.getloadavg()[0]}


def _rows(method: str, seconds: float, m: dict) -> list[dict]:
    cpu = m["user"] + m["sys"]
    note = f"{m['rows']:,} rows; load average {m['load']:.1f} on {os.cpu_count()} cores"
    return [
        {
            "name": f"{method} {seconds:g} s: peak per row",
            "value": m["peak"] / m["rows"],
            "unit": "B",
            "target": "<= 300",
            "note": f"{note}; tracemalloc",
        },
        {
            "name": f"{method} {seconds:g} s: process RSS high-water",
            "value": m["maxrss"] / 1e6,
            "unit": "MB",
            "target": "<= 1500" if (method, seconds) == ("tls", 3600) else "",
            "note": "input, interpreter and libraries included"
            + ("" if m["rss_source"] == "VmHWM" else "; ru_maxrss (no /proc): may include the parent's peak"),
        },
        {
            "name": f"{method} {seconds:g} s: wall",
            "value": m["wall"],
            "unit": "s",
            "target": "",
            "note": f"{1e6 * m['wall'] / m['rows']:.2f} µs/row wall, {1e6 * cpu / m['rows']:.2f} µs/row CPU",
        },
        {
            "name": f"{method} {seconds:g} s: kernel share of CPU",
            "value": 100.0 * m["sys"] / cpu,
            "unit": "%",
            "target": "<= 10",
            "note": f"user {m['user']:.2f} s, sys {m['sys']:.2f} s",
        },
        {
            "name": f"{method} {seconds:g} s: page faults per row",
            "value": m["faults"] / m["rows"],
            "unit": "",
            "target": "",
            "note": f"{m['faults']:,} minor faults (fresh memory the kernel maps and zeroes): "
            "the kernel time's cause, steady where sys time varies with the load",
        },
    ]


#: Flight lengths (s) of `rotorid simulate six-config-a` whose `identify --method tls` processes
#: `cli_rows` compares (issue 36: 1,737 B per added row before).
CLI_SECONDS = (300, 1200)

#: `rotorid ARGS...` in a child that writes its own RSS high-water mark (VmHWM, kB) to stderr at
#: exit: the figure a user's process reaches, reading and report included.
CLI_CHILD = r"""
import atexit, sys
def _hwm():
    with open("/proc/self/status") as f:
        sys.stderr.write("\nVmHWM_kB " + next(x.split()[1] for x in f if x.startswith("VmHWM:")) + "\n")
atexit.register(_hwm)
from rotorid.cli import app
app(prog_name="rotorid", args=sys.argv[1:])
"""


#: Resample the log ARGV[1] (one flight) to ARGV[2] Hz in place (`cli_rows` at another rate).
RESAMPLE = "import sys; from rotorid import io; (f,) = io.read(sys.argv[1]); io.write(f.resample(float(sys.argv[2])), sys.argv[1])"


def _cli(args: list[str], env: dict[str, str]) -> int:
    """Peak RSS (bytes) of the rotorid command `args` in a fresh process (`CLI_CHILD`)."""
    out = subprocess.run(
        ["nice", "-n", "10", sys.executable, "-c", CLI_CHILD, *args], capture_output=True, text=True, env=env
    )
    if out.returncode or "VmHWM_kB" not in out.stderr:
        raise RuntimeError(f"rotorid {' '.join(args)} failed: {out.stderr[-2000:]}")
    return 1024 * int(out.stderr.rsplit("VmHWM_kB", 1)[1].split()[0])


def cli_rows(rate: float = 200.0) -> list[dict]:
    """tls memory as the process sees it (issue 36): the peak RSS of `rotorid identify --method
    tls` on `rotorid simulate six-config-a` flights (200 Hz, resampled to `rate` Hz), of
    `CLI_SECONDS` at 200 Hz (the same rows at any rate: shorter flights at 1 kHz), the longer minus the shorter
    per added row of the training flight, each log decoded afresh (an empty decoded-log cache).
    Linux only (VmHWM); the simulations are not timed."""
    import pyarrow.parquet as pq

    hz = f"{rate:g} Hz"
    with tempfile.TemporaryDirectory(prefix="rotorid-bench-rss-") as tmp:
        env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ} | {"ROTORID_CACHE_DIR": f"{tmp}/cache"}
        peak, rows, secs = {}, {}, [s * 200.0 / rate for s in CLI_SECONDS]
        for s in secs:
            d = Path(tmp) / f"a{s:g}"
            sim = [sys.executable, "-m", "rotorid", "simulate", "six-config-a", "--duration", f"{s:g}", "--out", str(d)]
            subprocess.run(sim, check=True, capture_output=True, env=env)
            if rate != 200.0:  # the scenario logs at 200 Hz: resampled, as `measure` does
                log = str(d / "train.parquet")
                subprocess.run([sys.executable, "-c", RESAMPLE, log, f"{rate:g}"], check=True, env=env)
            rows[s] = pq.ParquetFile(d / "train.parquet").metadata.num_rows
            args = ["identify", "--method", "tls", "--vehicle", str(d / "vehicle.toml"), str(d / "train.parquet")]
            peak[s] = _cli([*args, "--out", str(d / "run")], env)
    lo, hi = secs
    note = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; VmHWM of each process"
    out = [
        {
            "name": f"tls CLI, six-config-a {s:g} s @ {hz}: peak RSS",
            "value": peak[s] / 1e6,
            "unit": "MB",
            "target": "",
            "note": f"{rows[s]:,} rows at {hz}; rotorid identify --method tls, report written",
        }
        for s in secs
    ]
    marginal = (peak[hi] - peak[lo]) / (rows[hi] - rows[lo])
    name = f"tls CLI @ {hz}: peak RSS per added row ({hi:g} s - {lo:g} s)"
    return [*out, {"name": name, "value": marginal, "unit": "B", "target": "<= 300", "note": note}]


def run(sizes: dict[str, tuple[float, ...]] | None = None) -> list[dict]:
    rows = [*cli_rows(200.0), *cli_rows(1000.0)] if sizes is None else []
    sizes = sizes or {"delay": SECONDS, "tls": SECONDS}
    return rows + [r for method, secs in sizes.items() for s in secs for r in _rows(method, s, measure(method, s))]


if __name__ == "__main__":
    if sys.argv[1:2] == ["cli"]:  # `cli [RATE_HZ]`, 200 by default
        for r in cli_rows(float(sys.argv[2]) if sys.argv[2:] else 200.0):
            print(f"{r['name']:<52} {r['value']:>10.4g} {r['unit']:<3} {r['target']:<7} {r['note']}", flush=True)
        sys.exit(0)
    method, *secs = sys.argv[1:] or ["delay"]
    for r in run({method: tuple(float(a) for a in secs) or SECONDS}):
        print(f"{r['name']:<40} {r['value']:>10.4g} {r['unit']:<3} {r['target']:<7} {r['note']}", flush=True)
