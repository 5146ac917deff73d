"""Latency of `rotorid app` on a 1 h log at 1 kHz (3.6 M samples; acc, gyro, 4 motor commands)
in real headless Chromium: the first open (read + panels, painted; then facts and proposed
windows, worked out in a thread and shown when ready), a paint of the three panels once the log
is read (target ≤ 2 s), and zoom updates (relayout → server-side min/max downsampling of the
three linked panels → redraw; target ≤ 300 ms), plus where the server spends the first open.
Skipped (no rows) without /usr/bin/chromium and /usr/bin/chromedriver."""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

RATE = 1000.0
HOURS = 1.0
ZOOMS = [(600.0, 660.0), (1200.0, 1500.0), (100.0, 3500.0), (2000.0, 2010.0), (3000.0, 3300.0), (10.0, 1800.0)]

WAIT_DRAWN = """
const [t0, done] = [performance.now(), arguments[arguments.length - 1]];
const gds = [...document.querySelectorAll('.js-plotly-plot')];
const plotted = new Set();
gds.forEach((g, i) => { if (!g._benchHooked) { g._benchHooked = true; g.on('plotly_afterplot', () => g._benchPlotted && g._benchPlotted()); }
                        g._benchPlotted = () => plotted.add(i); });
document.getElementById('open').click();
const timer = setInterval(() => {
  if (document.getElementById('status').innerText.startsWith('error')) { clearInterval(timer); done(-1); }
  const drawn = gds.every(g => g._fullData.length && g._fullData[0].x.length > 100 && g._fullLayout.xaxis.range[1] > 3000);
  if (plotted.size === 3 && drawn) {
    clearInterval(timer);
    gds.forEach(g => { g._benchPlotted = null; });
    requestAnimationFrame(() => requestAnimationFrame(() => done((performance.now() - t0) / 1000)));
  }
}, 5);
"""

WAIT_JUDGED = """
const [t0, done] = [performance.now(), arguments[arguments.length - 1]];
const timer = setInterval(() => {
  const status = document.getElementById('status').innerText;
  if (status.startsWith('error') || (status.startsWith('opened') && !status.includes('…'))) {
    clearInterval(timer);
    done(status.startsWith('error') ? -1 : (performance.now() - t0) / 1000);
  }
}, 20);
"""

WAIT_ZOOM = """
const [a, b, done] = arguments;
const gd = document.querySelector('#panel-thrust .js-plotly-plot');
const tol = 0.05 * (b - a) + 0.5;
const t0 = performance.now();
Plotly.relayout(gd, {'xaxis.range[0]': a, 'xaxis.range[1]': b});
const timer = setInterval(() => {
  const x = gd._fullData[0].x, n = x.length;
  if (Math.abs(x[0] - a) < tol && Math.abs(x[n - 1] - b) < tol && n > 100) {
    clearInterval(timer);
    requestAnimationFrame(() => requestAnimationFrame(() => done([(performance.now() - t0) / 1000, n])));
  }
}, 2);
"""


def synthetic_hour(seed: int = 0):
    """A 1 h flight: 10 s on the ground at each end, thrust and attitude excitation between."""
    from rotorid.flight import Flight
    from rotorid.signal import butter_filtfilt

    rng = np.random.default_rng(seed)
    n = int(HOURS * 3600 * RATE)
    t = np.arange(n) / RATE
    flying = (t > 10.0) & (t < t[-1] - 10.0)
    base = butter_filtfilt(rng.normal(0, 1, (n, 4)), RATE, 2.0)
    cmd = np.where(flying[:, None], 0.6 + 0.5 * base, 0.0).clip(0, 1)
    gyro = butter_filtfilt(rng.normal(0, 5, (n, 3)), RATE, 10.0) * flying[:, None]
    acc = np.column_stack([rng.normal(0, 0.3, n), rng.normal(0, 0.3, n), 9.81 + 3 * base[:, 0] * flying])
    return Flight(t, acc=acc, gyro=gyro, cmd=cmd, meta={"source": "synthetic-1h", "units": {"cmd": "normalized"}})


def _cpu() -> tuple[float, float]:
    """CPU seconds so far of this process (the app's server runs in it) and of its child
    processes (chromedriver, Chromium) from /proc: the work a paint or zoom costs, which
    does not depend on how busy the machine is (its wall time does)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    tick = os.sysconf("SC_CLK_TCK")
    parent, used = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parent[pid], used[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
    me, children = os.getpid(), 0.0
    for pid, t in used.items():
        p = parent.get(pid)
        while p and p != me:
            p = parent.get(p)
        children += t if p == me else 0.0
    return r.ru_utime + r.ru_stime, children


def _cpu_since(start: tuple[float, float], n: int) -> str:
    now = _cpu()
    return f"CPU per run: server {(now[0] - start[0]) / n:.3f} s, browser {(now[1] - start[1]) / n:.3f} s"


def _server_breakdown(path: Path) -> dict[str, tuple[float, float]]:
    """The first open's server work, step by step, in this process: (wall s, CPU s) each."""
    from rotorid.app import panels
    from rotorid.io import LogSpec, load
    from rotorid.vehicle import Vehicle

    v = Vehicle.preset("crazyflie")
    flights: list = []
    steps = {
        "read": lambda: flights.extend(load(LogSpec(path), vehicle=v)),
        "facts": lambda: panels.facts(flights),
        "proposed windows": lambda: panels.proposed(flights),
        "panels (3 figures)": lambda: [
            panels.figure(flights, v, role, "k").to_plotly_json() for role in ("thrust", "roll_pitch", "yaw")
        ],
    }
    out = {}  # the app paints after read and panels; facts and proposed windows follow in a thread
    for step, fn in steps.items():
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        out[step] = (time.perf_counter() - t0, time.process_time() - c0)
    return out


def _server_rows(folder: Path) -> list[dict]:
    """The first open's server steps on the 1 h log (no browser needed)."""
    from rotorid.io import write

    log = write(synthetic_hour(), folder / "hour.parquet")
    note = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    rows = []
    for step, (wall, cpu) in _server_breakdown(log).items():
        rows.append({"name": f"first open, server: {step} (wall)", "value": wall, "unit": "s", "note": note})
        rows.append({"name": f"first open, server: {step} (CPU)", "value": cpu, "unit": "s", "note": "this process"})
    return rows


def run() -> list[dict]:
    chromium, driver_bin = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="rotorid-bench-app-") as tmp:
        folder = Path(tmp) / "logs"
        folder.mkdir()
        rows += _server_rows(folder)
        if not (chromium.exists() and driver_bin.exists()):
            print("bench_app: headless Chromium not installed; browser rows skipped")
            return rows
        rows += _browser_rows(folder, tmp, chromium, driver_bin)
    return rows


def _browser_rows(folder: Path, tmp: str, chromium: Path, driver_bin: Path) -> list[dict]:
    """First open, paint and zoom in headless Chromium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from rotorid.app import Server

    rows: list[dict] = []
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(chromium)
    for f in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1400,1100"):
        opts.add_argument(f)
    opts.add_argument(f"--user-data-dir={Path(tmp) / 'profile'}")
    with Server(folder) as srv:
        d = webdriver.Chrome(service=Service(str(driver_bin)), options=opts)
        try:
            d.set_script_timeout(300)
            d.command_executor.client_config.timeout = 330  # a busy machine: let the script timeout decide
            d.get(srv.url)
            time.sleep(1.0)
            d.find_element("id", "log-path").send_keys("hour.parquet")
            first = d.execute_async_script(WAIT_DRAWN)
            rows.append({"name": "first open 1 h @ 1 kHz (read, panels, paint)", "value": first, "unit": "s"})
            judged = d.execute_async_script(WAIT_JUDGED)
            rows.append(
                {
                    "name": "first open: facts and proposed windows shown, after the paint",
                    "value": judged,
                    "unit": "s",
                    "note": "worked out in a thread while the panels are already on screen",
                }
            )
            cpu0 = _cpu()
            paints = [d.execute_async_script(WAIT_DRAWN) for _ in range(3)]
            paint_cpu = _cpu_since(cpu0, len(paints))
            rows.append(
                {
                    "name": "paint 3 panels, 1 h @ 1 kHz (median of 3)",
                    "value": statistics.median(paints),
                    "unit": "s",
                    "target": "<= 2",
                    "note": f"click to drawn, log already read, panels rebuilt; max {max(paints):.2f} s; " + paint_cpu,
                }
            )
            cpu0 = _cpu()
            zooms = [d.execute_async_script(WAIT_ZOOM, a, b) for a, b in ZOOMS]
            zoom_cpu = _cpu_since(cpu0, len(zooms))
            secs = [z[0] for z in zooms]
            rows.append(
                {
                    "name": f"zoom update (median of {len(ZOOMS)})",
                    "value": statistics.median(secs),
                    "unit": "s",
                    "target": "<= 0.3",
                    "note": f"relayout to redrawn with new data; max {max(secs):.3f} s; "
                    f"<= {max(z[1] for z in zooms)} points/trace; {zoom_cpu}",
                }
            )
        finally:
            d.quit()
    load = os.getloadavg()[0]
    rows.append({"name": "machine load (1 min average) after the browser runs", "value": load, "unit": ""})
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows.append({"name": "server peak RSS (this process)", "value": rss, "unit": "MB"})
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
