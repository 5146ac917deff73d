"""Fuzz benchmark of the log readers (issue 16 part 4): a seeded mutation loop over every
fixture in shared/data and every reader (tests/fuzzing.py: seeds, mutations, a forked worker
per input stream with RLIMIT_AS and a time limit, an independent plausibility oracle).

    python benchmarks/fuzz.py [--inputs N] [--seconds S] [--reader NAME ...] [--seed K]

runs until N inputs per reader (default 1 000 000, the issue's target) or S seconds per
reader, and writes benchmarks/results/fuzz.json and fuzz.md: per reader the inputs, inputs/s,
and the counts of non-RotoridError exceptions, hangs, over-bound allocations and implausible
values accepted, with the distinct failures (first input's seed and mutation, to reproduce).
`make bench` (benchmarks/run.py) runs a short pass (FUZZ_SECONDS per reader, env
ROTORID_FUZZ_SECONDS) and reports the same counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

import fuzzing  # noqa: E402  (tests/fuzzing.py: the engine shared with the in-suite fuzz test)

DATA = Path(os.environ.get("ROTORID_DATA", REPO.parent / "shared" / "data"))
OUT = HERE / "results"
ROWS_FILE = "fuzz_rows.json"
FUZZ_SECONDS = float(os.environ.get("ROTORID_FUZZ_SECONDS", "60"))
BAD = (fuzzing.CRASH, fuzzing.HANG, fuzzing.ALLOC, fuzzing.IMPLAUSIBLE)


def fuzz_reader(
    name: str, seeds: list[fuzzing.Seed], inputs: int, seconds: float, seed: int, timeout: float
) -> dict[str, Any]:
    """Mutate `seeds` (one reader's) until `inputs` inputs or `seconds` s; counts by outcome."""
    rng = random.Random(f"{name}-{seed}")
    worker = fuzzing.Worker(timeout=timeout)
    counts: Counter[str] = Counter()
    distinct: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    n = 0
    try:
        while n < inputs and time.perf_counter() - t0 < seconds:
            s = rng.choice(seeds)
            ops = fuzzing.random_ops(rng)
            options = s.options
            if s.reader == "crazyflie" and rng.random() < 0.5:
                options = (("allow_corrupt", True),)
            kind, detail = worker.run(fuzzing.apply_ops(s.data, ops), s.suffix, options)
            counts[kind] += 1
            n += 1
            if kind in BAD:
                key = f"{kind}: {detail.split(': ')[0] if kind == fuzzing.CRASH else detail[:80]}"
                distinct.setdefault(key, {"seed": s.name, "ops": [op.__dict__ for op in ops], "options": options})
    finally:
        worker.close()
    wall = time.perf_counter() - t0
    return {
        "reader": name,
        "inputs": n,
        "seconds": wall,
        "inputs_per_s": n / wall if wall > 0 else 0.0,
        "accepted": counts[fuzzing.OK],
        "rotorid_errors": counts[fuzzing.ROTORID],
        "non_rotorid_exceptions": counts[fuzzing.CRASH],
        "hangs": counts[fuzzing.HANG],
        "over_bound_allocations": counts[fuzzing.ALLOC],
        "implausible_accepted": counts[fuzzing.IMPLAUSIBLE],
        "distinct_failures": distinct,
    }


def fuzz(
    inputs: int, seconds: float, readers: list[str] | None = None, seed: int = 0, timeout: float = 5.0
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        all_seeds = fuzzing.seeds(DATA, Path(scratch))
    by_reader: dict[str, list[fuzzing.Seed]] = {}
    for s in all_seeds:
        by_reader.setdefault(s.reader, []).append(s)
    results = []
    for name, group in by_reader.items():
        if readers and name not in readers:
            continue
        r = fuzz_reader(name, group, inputs, seconds, seed, timeout)
        print(
            f"{name:>10}: {r['inputs']} inputs, {r['inputs_per_s']:.0f}/s, crashes {r['non_rotorid_exceptions']}, "
            f"hangs {r['hangs']}, allocations {r['over_bound_allocations']}, implausible {r['implausible_accepted']}",
            flush=True,
        )
        results.append(r)
    return results


def write(results: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    OUT.mkdir(exist_ok=True)
    (OUT / "fuzz.json").write_text(json.dumps({"meta": meta, "readers": results}, indent=2, default=str))
    lines = [
        "| reader | inputs | inputs/s | non-RotoridError | hangs | over-bound alloc. | implausible accepted |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['reader']} | {r['inputs']} | {r['inputs_per_s']:.0f} | {r['non_rotorid_exceptions']} | "
            f"{r['hangs']} | {r['over_bound_allocations']} | {r['implausible_accepted']} |"
        )
    for r in results:
        for key, where in r["distinct_failures"].items():
            lines.append(f"\n- {r['reader']}: {key} (seed {where['seed']}, ops {where['ops']})")
    (OUT / "fuzz.md").write_text("\n".join(lines) + "\n")


def run() -> list[dict[str, Any]]:
    """`make bench`: a short pass per reader; rows for benchmarks/results/README.md."""
    t0 = time.perf_counter()
    results = fuzz(inputs=1_000_000, seconds=FUZZ_SECONDS)
    write(results, {"python": platform.python_version(), "wall_s": time.perf_counter() - t0, "mode": "bench"})
    rows = []
    for r in results:
        rows.append({"name": f"{r['reader']} inputs/s", "value": r["inputs_per_s"], "unit": "1/s"})
        bad = sum(r[k] for k in ("non_rotorid_exceptions", "hangs", "over_bound_allocations", "implausible_accepted"))
        rows.append(
            {
                "name": f"{r['reader']} failures",
                "value": bad,
                "unit": "inputs",
                "target": 0,
                "note": f"of {r['inputs']}",
            }
        )
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=1_000_000, help="inputs per reader")
    ap.add_argument("--seconds", type=float, default=float("inf"), help="time budget per reader")
    ap.add_argument("--reader", action="append", help="only these readers (repeatable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds an input may take (else a hang)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    results = fuzz(a.inputs, a.seconds, a.reader, a.seed, a.timeout)
    meta = {"python": platform.python_version(), "wall_s": time.perf_counter() - t0, "seed": a.seed, "mode": "cli"}
    write(results, meta)
    print(f"wrote {OUT / 'fuzz.json'} and {OUT / 'fuzz.md'}")
    bad = sum(
        r[k]
        for r in results
        for k in ("non_rotorid_exceptions", "hangs", "over_bound_allocations", "implausible_accepted")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
