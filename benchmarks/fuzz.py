"""Fuzz benchmark of the log readers (issue 16 part 4): a seeded, resumable mutation campaign
over every reader (tests/support/fuzzing.py: seeds cut from every fixture in shared/data and written
by rotorid's writers, mutations, forked workers with RLIMIT_AS and a per-input time limit, an
independent plausibility oracle).

    python benchmarks/fuzz.py [--stage read|pipeline] [--inputs N] [--slice S] [--reader NAME ...] [--workers K]
    python benchmarks/fuzz.py --status
    python benchmarks/fuzz.py --replay READER:INDEX
    python benchmarks/fuzz.py --rejudge READER:INDEX

Input number i of a reader is a pure function of (reader, --seed, i): its own
`random.Random`, so a campaign resumes where it stopped and any input can be rebuilt
(`--replay` writes it and reads it once, in a worker). The counts accumulate in
benchmarks/results/fuzz_campaign.json (and .md) under the hash of the code under test
(`code_hash`: the reader modules, io/guard.py, flight.py, the modules the oracle calls, the
fuzz engine and the library versions); a changed hash archives the old counts and starts
again from input 0. Readers take turns of `--slice` seconds until each has N inputs (default
1 000 000, the issue's target); inputs that fail (a non-RotoridError exception, a hang, an
allocation over the bound, an implausible value accepted) are saved under
benchmarks/results/fuzz_failures/. Exit status 1 if any failed. A hang the wall-clock limit
called (less CPU than the limit: a stalled machine or a stopped campaign trips it too) counts
only if a second reading in a fresh worker hangs as well; `--rejudge` applies that rule to a hang
saved before it.

`--stage pipeline` runs the same mutants one step further, each through what `rotorid identify
--vehicle V` and `rotorid info` do with a log (tests/support/fuzzing.py `_pipeline`: the read with
the vehicle's hints, info's analysis and printed tables, identify's input checks and run of every
method on the decoded log, and every method on its own on the flights as read); its counts go to
benchmarks/results/fuzz_pipeline.json (.md), hashed over all of src/rotorid, with a per-input CPU
limit of 30 s by default. Its "accepted" column counts the inputs the reader decoded; the stages
each input got through are counted by stage.

`make bench` (benchmarks/run.py) runs a short turn per reader and stage (FUZZ_SECONDS, env
ROTORID_FUZZ_SECONDS) into the same campaigns when no campaign holds their lock, and reports the
campaigns' counts either way.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from support import fuzzing  # noqa: E402  (tests/support/fuzzing.py: the engine shared with the in-suite fuzz test)

DATA = Path(os.environ.get("ROTORID_DATA", REPO.parent / "shared" / "data"))
OUT = HERE / "results"
STATE = OUT / "fuzz_campaign.json"
LOCK = OUT / "fuzz_campaign.lock"
FAILURES = OUT / "fuzz_failures"
#: Stage -> (state file, lock, per-input CPU limit in s, inputs per reader `make bench` aims at).
STAGES = {
    "read": (STATE, LOCK, 5.0, 1_000_000),
    "pipeline": (OUT / "fuzz_pipeline.json", OUT / "fuzz_pipeline.lock", 30.0, 100_000),
}
FUZZ_SECONDS = float(os.environ.get("ROTORID_FUZZ_SECONDS", "60"))
BAD = (fuzzing.CRASH, fuzzing.HANG, fuzzing.ALLOC, fuzzing.IMPLAUSIBLE)
#: Outcome kind -> its name in the results.
COLUMNS = {
    fuzzing.OK: "accepted",
    fuzzing.ROTORID: "rotorid_errors",
    fuzzing.CRASH: "non_rotorid_exceptions",
    fuzzing.HANG: "hangs",
    fuzzing.ALLOC: "over_bound_allocations",
    fuzzing.IMPLAUSIBLE: "implausible_accepted",
}
#: Inputs per batch: the counts are saved after each (a stopped campaign loses at most one).
BATCH = 500
#: The CPU seconds of a hang's detail (tests/support/fuzzing.py `Worker.collect`). A hang with less CPU
#: than the time limit was called by the wall-clock limit: a stalled machine or a stopped
#: campaign (SIGSTOP) also trips it, so such a hang counts only if a second reading, in a fresh
#: worker, hangs too. A hang on CPU time is the reader's own and counts at once.
#: A crash's detail up to its place: "[stage: ]Type at file.py:N[ > lib.py:M]" (tests/support/fuzzing.py `_where`).
CRASH_AT = re.compile(r"^(.*? at [^ :]+:\d+(?: > [^ :]+:\d+)?)")
HANG_CPU = re.compile(r"no answer after ([0-9.eE+-]+|inf) s of CPU")
#: Code whose change makes earlier fuzz counts stale (besides src/rotorid/io/*.py).
CODE = ("flight.py", "frames.py", "errors.py", "signal.py", "excitation.py")
LIBRARIES = ("numpy", "scipy", "pandas", "pyarrow", "pyulog", "pymavlink", "orangebox")


def code_hash(stage: str = "read") -> tuple[str, dict[str, str]]:
    """SHA-256 (first 16 hex digits) of the code under test (the readers' for `read`, all of
    rotorid for `pipeline`) and the library versions."""
    src = REPO / "src" / "rotorid"
    ours = (
        sorted(src.rglob("*.py"))
        if stage == "pipeline"
        else [*sorted((src / "io").glob("*.py")), *(src / n for n in CODE)]
    )
    files = [*ours, REPO / "tests" / "support" / "fuzzing.py"]
    files.append(REPO / "tests" / "support" / "helpers_cf.py")
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(REPO).as_posix().encode() + b"\0" + f.read_bytes())
    versions = {"python": platform.python_version()}
    for lib in LIBRARIES:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = "absent"
    h.update(json.dumps(versions, sort_keys=True).encode())
    return h.hexdigest()[:16], versions


def commit() -> str:
    """The checked-out commit (with "+dirty" when the tree has uncommitted changes)."""
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "src", "tests"], capture_output=True)
    except OSError:
        return "unknown"
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def by_reader() -> dict[str, list[fuzzing.Seed]]:
    with tempfile.TemporaryDirectory() as scratch:
        all_seeds = fuzzing.seeds(DATA, Path(scratch))
    out: dict[str, list[fuzzing.Seed]] = {}
    for s in all_seeds:
        out.setdefault(s.reader, []).append(s)
    return out


def make_input(
    reader: str, seeds: list[fuzzing.Seed], seed: int, i: int, vehicles: dict[str, str] | None = None
) -> tuple[fuzzing.Seed, list, tuple]:
    """Input number `i` of `reader`: (seed, mutation ops, reader options), from its own RNG;
    with `vehicles` (seed name -> preset, the pipeline stage) the options name the vehicle."""
    rng = random.Random(f"{reader}-{seed}-{i}")
    s = rng.choice(seeds)
    ops = fuzzing.random_ops(rng)
    options = s.options
    if s.reader == "crazyflie" and rng.random() < 0.5:
        options = (("allow_corrupt", True),)
    if vehicles is not None:
        options = (*options, ("vehicle", vehicles[s.name]))
    return s, ops, options


def seed_vehicles(seeds: dict[str, list[fuzzing.Seed]]) -> dict[str, str]:
    """The preset each seed's mutants are read and identified with (`fuzzing.pipeline_vehicle`)."""
    with tempfile.TemporaryDirectory() as scratch:
        return {s.name: fuzzing.pipeline_vehicle(s, Path(scratch)) for ss in seeds.values() for s in ss}


# -- the campaign state ------------------------------------------------------------------------
def fresh_reader() -> dict[str, Any]:
    return {"inputs": 0, "seconds": 0.0, **dict.fromkeys(COLUMNS.values(), 0), "failures": {}}


def load_state(seed: int, stage: str = "read") -> dict[str, Any]:
    """The saved campaign of `stage` for this code and seed; a changed hash archives the old one."""
    digest, versions = code_hash(stage)
    path = STAGES[stage][0]
    if path.exists():
        state = json.loads(path.read_text())
        if state.get("hash") == digest and state.get("seed") == seed:
            state["commit"] = commit()
            return state
        path.rename(OUT / f"{path.stem}-{state.get('hash', 'old')}-seed{state.get('seed')}.json")
    return {"hash": digest, "commit": commit(), "seed": seed, "stage": stage, "libraries": versions, "readers": {}}


def save_state(state: dict[str, Any]) -> None:
    """Write the state and its table atomically (a reader of the files never sees half)."""
    OUT.mkdir(exist_ok=True)
    state["saved"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    saved = STAGES[state.get("stage", "read")][0]
    for path, text in ((saved, json.dumps(state, indent=1)), (saved.with_suffix(".md"), table(state))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


def table(state: dict[str, Any]) -> str:
    lines = [
        f"Fuzz campaign ({state.get('stage', 'read')}): code hash {state['hash']}, commit {state['commit']}, "
        f"seed {state['seed']}, saved {state.get('saved', '-')}",
        "",
        "| reader | inputs | inputs/s | accepted | RotoridError | non-RotoridError | hangs | over-bound alloc. "
        "| implausible accepted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in sorted(state["readers"].items()):
        rate = r["inputs"] / r["seconds"] if r["seconds"] else 0.0
        lines.append(
            f"| {name} | {r['inputs']:,} | {rate:.0f} | {r['accepted']:,} | {r['rotorid_errors']:,} | "
            f"{r['non_rotorid_exceptions']} | {r['hangs']} | {r['over_bound_allocations']} | {r['implausible_accepted']} |"
        )
    for name, r in sorted(state["readers"].items()):
        if r.get("stages"):
            got = ", ".join(f"{k} {v:,}" for k, v in sorted(r["stages"].items(), key=lambda kv: -kv[1]))
            lines.append(f"\n- {name}: inputs through each stage (returned a result): {got}")
    for name, r in sorted(state["readers"].items()):
        if r.get("wall_hangs_reread"):
            lines.append(f"\n- {name}: {r['wall_hangs_reread']} wall-clock hang(s) read again, counted by that reading")
    for c in state.get("rejudged", []):
        lines.append(
            f"\n- {c['reader']}: input {c['index']} recorded as {c['was']!r}, read again (`--rejudge`): {c['now']}"
        )
    for name, r in sorted(state["readers"].items()):
        for key, f in r["failures"].items():
            lines.append(f"\n- {name}: {key} (input {f['index']}, seed {f['seed']}; `--replay {name}:{f['index']}`)")
    return "\n".join(lines) + "\n"


def failures(state: dict[str, Any]) -> int:
    return sum(r[COLUMNS[k]] for r in state["readers"].values() for k in BAD)


@contextlib.contextmanager
def campaign_lock(wait: bool, stage: str = "read") -> Iterator[bool]:
    """Hold the campaign's lock (one process adds to the counts of a stage at a time); yields
    whether it was taken (`wait=False` does not wait for it)."""
    OUT.mkdir(exist_ok=True)
    with open(STAGES[stage][1], "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True


# -- fuzzing -------------------------------------------------------------------------------------
def turn(
    pool: fuzzing.Pool,
    state: dict[str, Any],
    name: str,
    seeds: list[fuzzing.Seed],
    target: int,
    seconds: float,
    vehicles: dict[str, str] | None = None,
) -> None:
    """Fuzz `name` from its saved count for `seconds` s or up to `target` inputs, saving the
    counts after each batch and every failing input under FAILURES."""
    r = state["readers"].setdefault(name, fresh_reader())
    t_end = time.perf_counter() + seconds
    while r["inputs"] < target and time.perf_counter() < t_end:
        t0 = time.perf_counter()
        first = r["inputs"]
        made = [make_input(name, seeds, state["seed"], i, vehicles) for i in range(first, min(first + BATCH, target))]
        outcomes = pool.map([(fuzzing.apply_ops(s.data, ops), s.suffix, opt) for s, ops, opt in made])
        for k, ((s, ops, opt), (kind, detail)) in enumerate(zip(made, outcomes, strict=True)):
            if wall_hang(kind, detail, pool.workers[0].timeout):
                w = pool.workers[0]
                kind, detail = read_once(fuzzing.apply_ops(s.data, ops), s.suffix, opt, w.timeout, w.stage)
                r["wall_hangs_reread"] = r.get("wall_hangs_reread", 0) + 1
            if pool.workers[0].stage == "pipeline" and kind == fuzzing.OK:  # the stages it went through
                for st in detail.split(","):
                    r.setdefault("stages", {})[st] = r.setdefault("stages", {}).get(st, 0) + 1
            r[COLUMNS[kind]] += 1
            if kind in BAD:
                key = kind if kind == fuzzing.HANG else f"{kind}: {where(kind, detail)}"
                FAILURES.mkdir(parents=True, exist_ok=True)
                (FAILURES / f"{state.get('stage', 'read')}-{name}-{first + k}{s.suffix}").write_bytes(
                    fuzzing.apply_ops(s.data, ops)
                )
                r["failures"].setdefault(key, {"index": first + k, "seed": s.name, "detail": detail, "options": opt})
        r["inputs"] += len(made)
        r["seconds"] += time.perf_counter() - t0
        save_state(state)


def campaign(
    target: int,
    slice_s: float,
    readers: list[str] | None,
    seed: int,
    workers: int,
    timeout: float,
    once: bool,
    stage: str = "read",
) -> dict[str, Any]:
    """Readers take turns of `slice_s` seconds until each has `target` inputs (`once`: one
    turn each) at `stage`. Returns the state."""
    seeds = by_reader()
    names = [n for n in seeds if not readers or n in readers]
    vehicles = seed_vehicles(seeds) if stage == "pipeline" else None
    state = load_state(seed, stage)
    pool = fuzzing.Pool(workers, timeout, stage)
    try:
        while True:
            left = [n for n in names if state["readers"].get(n, fresh_reader())["inputs"] < target]
            if not left:
                break
            for name in left:
                turn(pool, state, name, seeds[name], target, slice_s, vehicles)
                r = state["readers"][name]
                print(
                    f"{time.strftime('%H:%M:%S')} {stage} {name:>10}: {r['inputs']:,} inputs "
                    f"({r['inputs'] / max(r['seconds'], 1e-9):.0f}/s), failures "
                    f"{sum(r[COLUMNS[k]] for k in BAD)}",
                    flush=True,
                )
            if once:
                break
    finally:
        pool.close()
    return state


def where(kind: str, detail: str) -> str:
    """What tells failures apart: a crash's (stage and) exception type and place, else the detail's start."""
    m = CRASH_AT.match(detail) if kind == fuzzing.CRASH else None
    return m.group(1) if m else detail[:80]


def wall_hang(kind: str, detail: str, timeout: float) -> bool:
    """Whether an outcome is a hang the wall-clock limit called, with less CPU than `timeout`."""
    m = HANG_CPU.match(detail) if kind == fuzzing.HANG else None
    return m is not None and float(m.group(1)) < timeout


def read_once(data: bytes, suffix: str, options: tuple, timeout: float, stage: str = "read") -> tuple[str, str]:
    """The outcome of one reading of an input in a fresh worker."""
    w = fuzzing.Worker(timeout, stage)
    try:
        return w.run(data, suffix, options)
    finally:
        w.close()


def rejudge(spec: str, seed: int, timeout: float, stage: str = "read") -> int:
    """Read again input READER:INDEX that the saved campaign counts as a wall-clock hang (the
    rule of `HANG_CPU`, for counts saved before it ran in `turn`); a second reading that does not
    hang moves the input to its outcome's column, and the state lists the correction."""
    name, _, index = spec.partition(":")
    state = load_state(seed, stage)
    r = state["readers"].get(name, fresh_reader())
    f = r["failures"].get(fuzzing.HANG)
    if f is None or f["index"] != int(index) or not wall_hang(fuzzing.HANG, f["detail"], timeout):
        print(f"{spec} is not a wall-clock hang of this campaign (code hash {state['hash']})", file=sys.stderr)
        return 2
    s, ops, options = rebuild(name, seed, int(index), stage)
    kind, detail = read_once(fuzzing.apply_ops(s.data, ops), s.suffix, options, timeout, stage)
    print(f"{spec}: recorded {f['detail']!r}; read again: {kind} {detail}")
    if kind == fuzzing.HANG:
        return 1
    r["hangs"] -= 1
    r[COLUMNS[kind]] += 1
    del r["failures"][fuzzing.HANG]
    state.setdefault("rejudged", []).append({"reader": name, "index": int(index), "was": f["detail"], "now": kind})
    save_state(state)
    return 0


def rebuild(name: str, seed: int, index: int, stage: str) -> tuple[fuzzing.Seed, list, tuple]:
    """Input `index` of reader `name` in the campaign of `stage` (`make_input`)."""
    seeds = by_reader()
    return make_input(name, seeds[name], seed, index, seed_vehicles(seeds) if stage == "pipeline" else None)


def replay(spec: str, seed: int, timeout: float, stage: str = "read") -> int:
    """Rebuild input READER:INDEX, write it to the failures folder and run it in a worker."""
    name, _, index = spec.partition(":")
    s, ops, options = rebuild(name, seed, int(index), stage)
    data = fuzzing.apply_ops(s.data, ops)
    FAILURES.mkdir(parents=True, exist_ok=True)
    path = FAILURES / f"{stage}-{name}-{index}{s.suffix}"
    path.write_bytes(data)
    w = fuzzing.Worker(timeout, stage)
    try:
        kind, detail = w.run(data, s.suffix, options)
    finally:
        w.close()
    print(f"{path} (seed {s.name}, options {dict(options)}, ops {[op.__dict__ for op in ops]}): {kind} {detail}")
    return 1 if kind in BAD else 0


def run() -> list[dict[str, Any]]:
    """`make bench`: a turn of FUZZ_SECONDS per reader and stage (unless a campaign of that
    stage is running) and rows for benchmarks/results/README.md with the campaigns' counts."""
    rows = []
    for stage, (path, _, timeout, target) in STAGES.items():
        with campaign_lock(wait=False, stage=stage) as mine:
            if mine:
                state = campaign(target, FUZZ_SECONDS, None, 0, 2, timeout, once=True, stage=stage)
            else:
                state = json.loads(path.read_text())
        digest = code_hash(stage)[0]
        what = "" if stage == "read" else " through info+identify"
        for name, r in sorted(state["readers"].items()):
            rows.append(
                {"name": f"{name}{what} inputs/s", "value": r["inputs"] / max(r["seconds"], 1e-9), "unit": "1/s"}
            )
            rows.append({"name": f"{name}{what} inputs", "value": r["inputs"], "unit": "inputs", "target": target})
            if stage == "pipeline":
                rows.append({"name": f"{name}{what} decoded", "value": r["accepted"], "unit": "inputs"})
            bad = sum(r[COLUMNS[k]] for k in BAD)
            note = f"of {r['inputs']}, code hash {state['hash']}" + (
                "" if state["hash"] == digest else " (not this code)"
            )
            rows.append({"name": f"{name}{what} failures", "value": bad, "unit": "inputs", "target": 0, "note": note})
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", choices=tuple(STAGES), default="read", help="read only, or info+identify after it")
    ap.add_argument("--inputs", type=int, default=None, help="inputs per reader (default: the stage's target)")
    ap.add_argument("--slice", type=float, default=300.0, help="seconds per reader's turn")
    ap.add_argument("--once", action="store_true", help="one turn per reader, then stop")
    ap.add_argument("--reader", action="append", help="only these readers (repeatable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="reader processes at once")
    ap.add_argument("--timeout", type=float, default=None, help="CPU s an input may take (default: the stage's)")
    ap.add_argument("--status", action="store_true", help="print the saved campaign's table and stop")
    ap.add_argument("--replay", metavar="READER:INDEX", help="rebuild one input, save it and run it")
    ap.add_argument("--rejudge", metavar="READER:INDEX", help="run again a recorded wall-clock hang (see HANG_CPU)")
    a = ap.parse_args(argv)
    path, lock, timeout, target = STAGES[a.stage]
    timeout = a.timeout if a.timeout is not None else timeout
    if a.status:
        print(path.with_suffix(".md").read_text() if path.exists() else "no campaign yet")
        return 0
    if a.replay:
        return replay(a.replay, a.seed, timeout, a.stage)
    with campaign_lock(wait=False, stage=a.stage) as mine:
        if not mine:
            print(f"another campaign holds {lock}; see --status", file=sys.stderr)
            return 2
        if a.rejudge:
            return rejudge(a.rejudge, a.seed, timeout, a.stage)
        inputs = a.inputs if a.inputs is not None else target
        state = campaign(inputs, a.slice, a.reader, a.seed, a.workers, timeout, a.once, a.stage)
    print(f"wrote {path} and {path.with_suffix('.md')}")
    return 1 if failures(state) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
