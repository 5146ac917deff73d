"""Fleets: many identifications from one manifest, run on Dask, collected into one table of
every parameter (with σ) per vehicle and date, and each vehicle's drift against its own history.

```python
from rotorid import batch
jobs = batch.read_manifest("fleet.toml")            # or fleet.csv
outcomes = batch.run(jobs, workers=2)               # or scheduler="tcp://host:8786"
table = batch.collect(outcomes)                     # one row per (run, parameter)
table, findings = batch.assess(table)               # drift statistic per row, findings in words
```

`rotorid batch MANIFEST` does all of this and writes `params.parquet`, `runs.csv`, one
`params.json` per run and `fleet.html` (see `write`).

Every run calls `identify_logs`, which goes through `rotorid.runs.identify` like
`rotorid identify`, so a fleet row holds exactly the numbers a single run gives. A run that
fails (unreadable log, window outside the log, poor excitation, or an unexpected error) is
reported in its row and the batch goes on.

The drift rule `assess` applies is `rotorid.drift`'s (`DriftRule`).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import io
import math
import os
import re
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rotorid.drift import DriftRule, Finding, assess
from rotorid.errors import RotoridError, clip, quote, shown
from rotorid.manifest import Job, read_manifest, settings_for

#: How long `--scheduler` waits for the scheduler to answer.
CONNECT_TIMEOUT = "5s"

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from rotorid.result import Result
    from rotorid.vehicle import Vehicle


# ---------------------------------------------------------------------------------------------
# one identification (what `rotorid identify` assembles)
# ---------------------------------------------------------------------------------------------
def identify_logs(
    method: str,
    airframe: str | Vehicle,
    logs: Sequence[str],
    *,
    roll_pitch: Sequence[str] = (),
    yaw: Sequence[str] = (),
    configs: Mapping[str, Sequence[str]] | None = None,
    masses: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | None = None,
    options: Mapping[str, Any] | None = None,
    allow_corrupt: bool = False,
) -> Result:
    """One identification from log arguments through `rotorid.runs.identify`, as `rotorid
    identify` runs it, with the method's settings built from `options` (any settings field).
    `logs` are the thrust flights (delay), configuration A (tls) or the one flight (online);
    `configs` adds tls configurations by name."""
    from rotorid import runs
    from rotorid.vehicle import Vehicle

    veh = airframe if isinstance(airframe, Vehicle) else Vehicle.load(airframe)
    roles = {
        "roll_pitch": list(roll_pitch),
        "yaw": list(yaw),
        "config": dict(configs or {}),
        "mass": dict(masses or {}),
        "weight": dict(weights or {}),
    }
    given = {k: v for k, v in roles.items() if v}
    return runs.identify(
        method, list(logs), veh, given, allow_corrupt=allow_corrupt, settings=settings_for(method, options or {})
    )


# ---------------------------------------------------------------------------------------------
# running on Dask
# ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What one job gave: the result (None when it failed), the error in one line, the
    warnings it raised (e.g. a corrupt log decoded in part) and its wall time on the worker."""

    job: Job
    result: Result | None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = float("nan")

    @property
    def ok(self) -> bool:
        return self.result is not None


_local = threading.local()
_hook = threading.Lock()


@contextlib.contextmanager
def _warnings_into(sink: list[str]) -> Iterator[None]:
    """Collect the warnings this thread raises into `sink`. Unlike `warnings.catch_warnings`,
    safe when several jobs run in threads of one process (`processes=False`): a hook installed
    once per process sends each warning to its own thread's sink and passes the others on."""
    with _hook:
        if not getattr(warnings.showwarning, "rotorid_batch", False):
            shown = warnings.showwarning

            def show(
                message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
            ) -> None:
                target = getattr(_local, "sink", None)
                if target is None:
                    shown(message, category, filename, lineno, file, line)
                else:
                    target.append(str(message))

            show.rotorid_batch = True  # type: ignore[attr-defined]
            warnings.showwarning = show
    _local.sink = sink
    try:
        yield
    finally:
        _local.sink = None


def run_job(job: Job, allow_corrupt: bool = False) -> dict[str, Any]:
    """Run one job (on a worker). Never raises: a failure becomes the row's `error`. The
    result travels as its params.json content (plain data, small). Worker processes run BLAS
    on one thread (Dask's nanny sets OMP/MKL/OPENBLAS_NUM_THREADS=1): a fleet's parallelism is
    across jobs."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {"row": job.row, "result": None, "error": None, "warnings": []}
    with _warnings_into(out["warnings"]):
        try:
            res = identify_logs(
                job.method,
                job.airframe,
                job.logs,
                roll_pitch=job.roll_pitch,
                yaw=job.yaw,
                configs=job.configs,
                masses=job.masses,
                weights=job.weights,
                options=job.options,
                allow_corrupt=allow_corrupt,
            )
            out["result"] = res.to_dict()
        except RotoridError as e:
            out["error"] = str(e)
        except Exception as e:  # one bad log must not stop a fleet; say it is ours to fix
            out["error"] = f"unexpected {type(e).__name__}: {e} (a rotorid bug: please report it with this log)"
    out["seconds"] = time.perf_counter() - t0
    return out


def run(
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: bool = True,
    allow_corrupt: bool = False,
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run every job on Dask and return the outcomes in manifest order. `scheduler` connects to
    an existing cluster (its workers must have rotorid installed and see the log files at the
    same paths); otherwise a `distributed.LocalCluster` with `workers` single-threaded workers
    (default: one per core, at most one per job; `processes=False` keeps them in this process)
    runs for the batch. `progress(outcome)` is called as each job finishes."""
    from rotorid.result import Result

    if scheduler and workers:
        raise RotoridError("give either --workers (a cluster on this machine) or --scheduler (an existing one)")
    by_row = {j.row: j for j in jobs}
    batch_id = uuid.uuid4().hex[:8]
    outcomes: dict[int, Outcome] = {}
    with _client(scheduler, workers or min(os.cpu_count() or 1, max(len(jobs), 1)), processes) as client:
        from distributed import as_completed

        futures = [
            client.submit(run_job, j, allow_corrupt, key=f"rotorid-row{j.row}-{batch_id}", pure=False) for j in jobs
        ]
        rows = {f.key: j.row for f, j in zip(futures, jobs, strict=True)}
        for fut in as_completed(futures):
            row = rows[fut.key]
            try:
                d = fut.result()
            except Exception as e:  # the worker itself died (out of memory, killed)
                o = Outcome(by_row[row], None, f"worker lost while running this row ({type(e).__name__}: {e})")
            else:
                res = Result.from_dict(d["result"]) if d["result"] is not None else None
                o = Outcome(by_row[row], res, d["error"], d["warnings"], d["seconds"])
            outcomes[row] = o
            if progress is not None:
                progress(o)
    return [outcomes[j.row] for j in jobs]


class _client:
    """Context manager: a Dask client on `scheduler`, or on a LocalCluster made for the batch."""

    def __init__(self, scheduler: str | None, workers: int, processes: bool) -> None:
        self.scheduler, self.workers, self.processes = scheduler, workers, processes
        self.cluster: Any = None
        self.client: Any = None
        self._keys: Any = None
        self._config: Any = None

    def __enter__(self) -> Any:
        import logging

        from distributed import Client, LocalCluster

        if self.workers < 1:
            raise RotoridError(f"--workers {self.workers}: give at least one worker")
        if self.scheduler:
            try:
                self.client = Client(self.scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as e:
                raise RotoridError(
                    f"cannot reach the Dask scheduler at '{self.scheduler}' ({e}); check the address "
                    "(e.g. tcp://host:8786) or leave out --scheduler to run on this machine"
                ) from None
            return self.client
        import dask

        try:
            self._keys = tempfile.TemporaryDirectory(prefix="rotorid-dask-")  # 0700: this user's only
            security = _tls(Path(self._keys.name)) if self.processes else None
            # no dashboard and no HTTP routes: the scheduler's and workers' HTTP servers (which
            # distributed always starts) answer nothing, on a free port of 127.0.0.1
            self._config = dask.config.set(
                {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
            )
            network = (  # worker processes talk TLS on 127.0.0.1; threads in this process, in memory
                {
                    "host": "127.0.0.1",
                    "scheduler_kwargs": {"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                    "protocol": "tls://" if security else None,
                    "security": security,
                }
                if self.processes
                else {"scheduler_kwargs": {"dashboard": False}}
            )
            self.cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=self.processes,
                dashboard_address=None,
                silence_logs=logging.ERROR,
                **network,
            )
            self.client = Client(self.cluster, security=security)
        except BaseException:
            self.__exit__()
            raise
        return self.client

    def __exit__(self, *exc: object) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        if self._config is not None:
            self._config.__exit__(None, None, None)
        if self._keys is not None:
            self._keys.cleanup()  # the batch's TLS keys


def _tls(folder: Path) -> Any:
    """Mutual TLS for a local cluster: a CA made for this batch (key and certificate in the
    private `folder`) signs the one certificate the scheduler, workers and client present, so
    only processes that can read `folder` (this user's) can connect or submit work. Made with
    the `openssl` command; without it the cluster runs on plain TCP on 127.0.0.1, with a warning."""
    import shutil
    import subprocess

    from distributed.security import Security

    if shutil.which("openssl") is None:
        warnings.warn("no openssl command: the local Dask cluster runs without TLS (on 127.0.0.1)", stacklevel=2)
        return None
    ca, key, crt = folder / "ca.pem", folder / "key.pem", folder / "cert.pem"
    ca_key, req = folder / "ca-key.pem", folder / "req.pem"
    steps = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=rotorid-batch-ca", "-keyout", str(ca_key), "-out", str(ca)],
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=rotorid-batch", "-keyout", str(key), "-out", str(req)],
        ["x509", "-req", "-in", str(req), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-days", "2", "-out", str(crt)],
    ]  # fmt: skip
    for args in steps:
        done = subprocess.run(["openssl", *args], capture_output=True, check=False, timeout=60)
        if done.returncode != 0:
            raise RotoridError(f"cannot make the batch's TLS certificate (openssl: {clip(done.stderr, 120)})")
    files = {
        f"tls_{who}_{kind}": str(path)
        for who in ("client", "scheduler", "worker")
        for kind, path in (("cert", crt), ("key", key))
    }
    return Security(tls_ca_file=str(ca), require_encryption=True, **files)


# ---------------------------------------------------------------------------------------------
# the table (its drift rule: rotorid.drift)
# ---------------------------------------------------------------------------------------------
TABLE_COLUMNS = ("vehicle", "date", "method", "row", "parameter", "value", "std", "unit")


def collect(outcomes: Iterable[Outcome]) -> pd.DataFrame:
    """One row per (run, parameter) of the successful runs: vehicle, date, method, manifest
    row, parameter, value, std, unit, sorted by vehicle, method, parameter, date and row."""
    import pandas as pd

    recs = [
        (o.job.vehicle, o.job.date, o.job.method, o.job.row, name, e.value, e.std, e.unit)
        for o in outcomes
        if o.result is not None
        for name, e in o.result.params.items()
    ]
    df = pd.DataFrame.from_records(recs, columns=list(TABLE_COLUMNS))
    df["date"] = pd.to_datetime(df["date"])
    df["row"] = df["row"].astype("int64")
    df[["value", "std"]] = df[["value", "std"]].astype("float64")
    return df.sort_values(["vehicle", "method", "parameter", "date", "row"], kind="stable", ignore_index=True)


# ---------------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------------
def runs_table(outcomes: Sequence[Outcome]) -> pd.DataFrame:
    """One row per manifest row: vehicle, date, method, status, parameters, seconds, error, warnings."""
    import pandas as pd

    return pd.DataFrame(
        {
            "row": [o.job.row for o in outcomes],
            "vehicle": [o.job.vehicle for o in outcomes],
            "date": [o.job.label for o in outcomes],
            "method": [o.job.method for o in outcomes],
            "status": ["ok" if o.ok else "failed" for o in outcomes],
            "parameters": [len(o.result.params) if o.result else 0 for o in outcomes],
            "seconds": [round(o.seconds, 3) for o in outcomes],
            "error": [o.error or "" for o in outcomes],
            "warnings": [" | ".join(o.warnings) for o in outcomes],
            "logs": [" ".join([*o.job.logs, *o.job.roll_pitch, *o.job.yaw]) for o in outcomes],
        }
    )


def _run_file(job: Job) -> str:
    safe = re.sub(r"[^\w.-]+", "_", job.vehicle) or "vehicle"
    safe = f"_{safe}" if safe.startswith(".") else safe  # a vehicle named '..' stays inside runs/
    return f"runs/{safe}/{job.label.replace(':', '')}-{job.method}-row{job.row}.params.json"


def write(
    out: Path,
    outcomes: Sequence[Outcome],
    table: pd.DataFrame,
    findings: Sequence[Finding],
    title: str,
    rule: DriftRule | None = None,
) -> dict[str, Path]:
    """Write `params.parquet` (the assessed table), `runs.csv`, each run's params.json under
    `runs/` and `fleet.html`, each atomically. Returns the paths of the four kinds."""
    from rotorid.report.fleet import render
    from rotorid.util import atomic_write, atomic_write_text

    html = render(
        table, findings, runs_table(outcomes), title, (rule or DriftRule()).threshold
    )  # render first: a failure writes nothing
    buf = io.StringIO()
    runs_table(outcomes).to_csv(buf, index=False)
    for o in outcomes:
        if o.result is not None:
            o.result.save(out / _run_file(o.job))
    atomic_write(out / "params.parquet", lambda p: table.to_parquet(p, index=False))
    atomic_write_text(out / "runs.csv", buf.getvalue())
    atomic_write_text(out / "fleet.html", html)
    return {
        "params": out / "params.parquet",
        "runs": out / "runs.csv",
        "report": out / "fleet.html",
        "each": out / "runs",
    }


#: The hidden file that marks a folder as a `rotorid batch` output.
MARK = ".rotorid-batch"
#: The journal: one JSON line per finished row, written as it finishes (`--resume` reads it).
JOURNAL = "rows.jsonl"
#: What a batch folder may hold: the marker, the journal, the outputs, the runs.
OWN = (MARK, JOURNAL, "params.parquet", "runs.csv", "fleet.html", "runs")


def prepare_out(out: Path, resume: bool) -> dict[str, Outcome]:
    """Claim the folder `out` for this batch and return the rows already done (`resume`).

    A folder holding anything `rotorid batch` did not write is refused (never overwrite a
    user's own runs.csv or fleet.html); a previous batch's runs/ and journal are removed unless
    resuming (then its finished rows, whose job is unchanged, are kept)."""
    import shutil

    from rotorid.report import check_output

    check_output(out)  # a bad --out fails now, not after the batch
    if out.is_dir() and any(out.iterdir()):
        foreign = sorted(p.name for p in out.iterdir() if p.name not in OWN)
        if foreign or not (out / MARK).is_file():
            listed = ", ".join(quote(n) for n in foreign[:3]) or "no .rotorid-batch mark"
            raise RotoridError(
                f"{out}: holds files rotorid batch did not write ({listed}); choose a new or empty --out"
            )
    if not resume:
        shutil.rmtree(out / "runs", ignore_errors=True)
        (out / JOURNAL).unlink(missing_ok=True)
    return _journal(out / JOURNAL) if resume else {}


def _claim(out: Path) -> None:
    """Create `out` (when the first row finishes, not before) with the batch's mark."""
    if not (out / MARK).is_file():
        out.mkdir(parents=True, exist_ok=True)
        (out / MARK).write_text("rotorid batch output\n")


def _journal(path: Path) -> dict[str, Outcome]:
    """The finished rows a journal records, by `_job_key`; a line cut by an interrupt is skipped."""
    import json

    from rotorid.result import Result

    done: dict[str, Outcome] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            d = json.loads(line)
            j = d["job"]
            job = Job(**{**j, "date": dt.datetime.fromisoformat(j["date"])})
            res = Result.from_dict(d["result"]) if d["result"] is not None else None
            o = Outcome(job, res, d["error"], list(d["warnings"]), float(d["seconds"] or "nan"))
        except (ValueError, KeyError, TypeError, RotoridError):
            continue
        done[json.dumps(j, sort_keys=True)] = o
    return done


def _job_dict(job: Job) -> dict[str, Any]:
    """A job as the journal stores it (JSON types)."""
    import json

    d = {f.name: getattr(job, f.name) for f in dataclasses.fields(job)}
    return json.loads(json.dumps({**d, "date": job.date.isoformat()}, default=_plain))


def _job_key(job: Job) -> str:
    import json

    return json.dumps(_job_dict(job), sort_keys=True)


def _record(out: Path, o: Outcome) -> None:
    """Append a finished row to the journal and save its params.json, at once."""
    import json

    _claim(out)
    if o.result is not None:
        o.result.save(out / _run_file(o.job))
    line = {
        "job": _job_dict(o.job),
        "result": o.result.to_dict() if o.result is not None else None,
        "error": o.error,
        "warnings": o.warnings,
        "seconds": o.seconds if math.isfinite(o.seconds) else None,
    }
    with open(out / JOURNAL, "a", encoding="utf-8") as f:
        f.write(json.dumps(line, default=_plain) + "\n")


def _plain(x: Any) -> Any:
    """JSON for the journal's odd values (tuples are lists already; numpy numbers, paths)."""
    return x.item() if hasattr(x, "item") else str(x)


def run_manifest(
    manifest: Path,
    out: Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    processes: bool = True,
    allow_corrupt: bool = False,
    rule: DriftRule | None = None,
    console: Console | None = None,
    resume: bool = False,
) -> tuple[list[Outcome], list[Finding]]:
    """`rotorid batch`: read the manifest, run it on Dask with a progress bar on `console`
    (each row's result journalled and saved as it finishes; `resume` skips rows a previous,
    interrupted run of the same manifest finished; failed rows run again), assess drift, write the outputs into `out`
    and print the failed rows and findings."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or Console()
    every = read_manifest(manifest)
    out = Path(out)
    journal = prepare_out(out, resume)
    done = {j.row: journal[k] for j in every if (k := _job_key(j)) in journal and journal[k].ok}  # failed: again
    jobs = [j for j in every if j.row not in done]
    if done:
        console.print(f"resuming: {len(done)} of {len(every)} rows already done in {shown(out)}", highlight=False)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as bar:
        task = bar.add_task(f"identifying {len(jobs)} runs", total=len(jobs))
        failed = 0

        def tick(o: Outcome) -> None:
            nonlocal failed
            _record(out, o)
            failed += not o.ok
            text = f"identifying {len(jobs)} runs" + (f" ({failed} failed)" if failed else "")
            bar.update(task, advance=1, description=text)

        fresh = (
            run(
                jobs,
                workers=workers,
                scheduler=scheduler,
                processes=processes,
                allow_corrupt=allow_corrupt,
                progress=tick,
            )
            if jobs
            else []
        )
    by_row = {**done, **{o.job.row: o for o in fresh}}
    outcomes = [by_row[j.row] for j in every]
    table, findings = assess(collect(outcomes), rule)
    _claim(out)
    written = write(Path(out), outcomes, table, findings, f"rotorid fleet — {Path(manifest).name}", rule)
    for o in outcomes:
        if not o.ok:
            console.print(
                f"[red]row {o.job.row}[/] ({shown(o.job.vehicle)}, {shown(o.job.label)}) failed: {shown(o.error)}",
                highlight=False,
            )
    for d in findings:
        colour = "bold red" if d.kind == "drift" else "yellow"
        console.print(f"[{colour}]{d.kind}[/] {shown(d.vehicle)}: {shown(d.message)}", highlight=False)
    ok = sum(o.ok for o in outcomes)
    console.print(
        f"{ok} of {len(outcomes)} runs identified, {sum(d.kind == 'drift' for d in findings)} drift(s); "
        f"wrote [bold]{shown(written['report'])}[/], {written['params'].name}, {written['runs'].name} in {shown(out)}"
    )
    return outcomes, findings


# ---------------------------------------------------------------------------------------------
# a simulated fleet (tests, benchmark, trying it out)
# ---------------------------------------------------------------------------------------------
def simulate_fleet(
    out: Path,
    vehicles: Mapping[str, Mapping[str, Any]],
    dates: Sequence[str],
    drift: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    duration: float = 4.0,
    seed: int = 0,
) -> Path:
    """Simulate an `eschmann-crazyflie` fleet (three excitation flights per vehicle and date,
    `simulate --set` overrides per vehicle, and from `drift[(vehicle, date)]` on those overrides
    changed), write the flights as Parquet under `out` and a CSV manifest; returns its path."""
    from rotorid.io import write as write_flight
    from rotorid.sim import scenarios
    from rotorid.util import atomic_write_text

    out = Path(out)
    rows = []
    for v_i, (veh, overrides) in enumerate(vehicles.items()):
        current = dict(overrides)
        for d_i, date in enumerate(dates):
            current |= (drift or {}).get((veh, date), {})
            sc = scenarios.run("eschmann-crazyflie", seed=seed + 1000 * v_i + d_i, duration=duration, **current)
            files = {k: write_flight(f, out / veh / date / f"{k}.parquet") for k, f in sc.flights.items()}
            rel = {k: str(p.relative_to(out)) for k, p in files.items()}
            rows.append([veh, date, "delay", "crazyflie", rel["thrust"], rel["roll_pitch"], rel["yaw"]])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["vehicle", "date", "method", "airframe", "logs", "roll_pitch", "yaw"])
    w.writerows(rows)
    atomic_write_text(out / "manifest.csv", buf.getvalue())
    return out / "manifest.csv"
