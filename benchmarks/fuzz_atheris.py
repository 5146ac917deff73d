"""Coverage-guided fuzzing of the log readers with atheris (libFuzzer), issue 16 part 4: the
longer companion of the seeded mutation campaign (fuzz.py). Where that one mutates the seeds
blindly, libFuzzer keeps every input that reaches new branches of the readers (rotorid.io and
the parsers it calls: pyulog, pymavlink, orangebox, all instrumented) and mutates those, so the
corpus grows into the formats' deeper structure from run to run.

    python benchmarks/fuzz_atheris.py [--seconds S] [--runs N] [--reader NAME ...]
    python benchmarks/fuzz_atheris.py --status

Per reader, one libFuzzer process runs for `--seconds` (or `--runs` inputs) over its corpus,
benchmarks/results/atheris/<reader>/corpus (started from `fuzzing.seeds`, the campaign's seeds,
and kept, so each run continues where the last left). Each input goes through the campaign's
judge (`fuzzing._classify`: `rotorid.io.read` and `rotorid info`'s summary, a RuntimeWarning is
a crash, the independent plausibility oracle `fuzzing.implausible`) under the same address-space
cap (the process's size + `fuzzing.MEM_SLACK` + `guard.alloc_bound(len(input))`). libFuzzer's
`-timeout` calls a hang and its `-rss_limit_mb` backs the cap. A finding stops the run with the
input saved as benchmarks/results/fuzz_failures/atheris-<reader>-<kind>-<sha1>; a hang is read
again in a fresh `fuzzing.Worker` (the campaign's rule: only a second hang counts).

The counts accumulate in benchmarks/results/fuzz_atheris.json (and .md) under the campaign's
code hash (fuzz.py `code_hash`); a changed hash starts them again. The input bytes carry no file
name, so a table input whose bytes begin with Parquet's magic is read as .parquet, else as .csv,
and a Crazyflie input of odd length is read with `allow_corrupt`.

`make bench` (benchmarks/run.py) runs a turn of ATHERIS_SECONDS per reader (env
ROTORID_ATHERIS_SECONDS, default 60) and reports the totals.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = Path(os.environ.get("ROTORID_ATHERIS_OUT", HERE / "results"))
ATHERIS_SECONDS = float(os.environ.get("ROTORID_ATHERIS_SECONDS", "60"))
#: libFuzzer's time limit per input (s, the campaign's) and RSS backstop (MB) over the address-space cap.
TIMEOUT = 5
RSS_LIMIT_MB = 4096
#: Packages whose code is instrumented for coverage: the readers and the parsers they call.
INSTRUMENTED = ["rotorid", "pyulog", "pymavlink", "orangebox"]
#: Outcome kinds in the order of the shared counter file (one uint64 each).
KINDS = ("ok", "rotorid", "crash", "hang", "alloc", "implausible")
BAD = ("crash", "hang", "alloc", "implausible")
#: libFuzzer's artifact prefixes -> outcome kind (a raised finding is a "crash" artifact).
ARTIFACTS = {"crash": None, "timeout": "hang", "oom": "alloc"}
STAT = re.compile(r"^stat::(\w+):\s*(\d+)", re.M)
PROGRESS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", re.M)


class Finding(Exception):
    """An input the readers mishandled (raised inside the target so libFuzzer saves it)."""


# -- the target (its own process: atheris is imported before anything it instruments) ----------
def suffix_for(reader: str, data: bytes) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """The file suffix and reader options of a raw input of `reader` (see the module's doc)."""
    if reader == "table":
        return (".parquet" if data[:4] == b"PAR1" else ".csv"), ()
    if reader == "crazyflie":
        return "", ((("allow_corrupt", True),) if len(data) % 2 else ())
    return {"ulog": ".ulg", "dataflash": ".bin", "blackbox": ".BBL"}[reader], ()


def make_target(reader: str, scratch: Path, counts: mmap.mmap) -> Any:
    """The function libFuzzer calls per input: judge it as the campaign does, count its kind
    in `counts` (shared memory, so the counts survive libFuzzer's exit) and raise `Finding` on a
    failure."""
    import resource

    from support import fuzzing

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)

    def one(data: bytes) -> None:
        suffix, options = suffix_for(reader, data)
        path = scratch / f"input{suffix}"
        path.write_bytes(data)
        # from the process's size now: libFuzzer's own tables grow by ~500 MB over 10^5 inputs
        cap = fuzzing._vm_bytes() + fuzzing.MEM_SLACK + fuzzing._alloc_bound(len(data))
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
        try:
            kind, detail = fuzzing._classify(path, dict(options))
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        i = KINDS.index(kind)
        counts[8 * i : 8 * i + 8] = (int.from_bytes(counts[8 * i : 8 * i + 8], "little") + 1).to_bytes(8, "little")
        if kind in BAD:
            raise Finding(f"{kind}: {detail}")

    return one


def target_main(reader: str, counts_path: Path, libfuzzer_args: list[str]) -> None:
    """Run libFuzzer on `reader` with the instrumented readers (does not return)."""
    import atheris

    sys.path.insert(0, str(REPO / "tests"))
    with atheris.instrument_imports(include=INSTRUMENTED):
        from support import fuzzing

        fuzzing._preload()
    # one folder per reader, reused run after run (libFuzzer exits without cleaning up)
    scratch = Path(fuzzing.SCRATCH or counts_path.parent) / f"rotorid-atheris-{reader}"
    scratch.mkdir(exist_ok=True)
    with open(counts_path, "r+b") as fh:
        counts = mmap.mmap(fh.fileno(), 8 * len(KINDS))
    atheris.Setup([sys.argv[0], *libfuzzer_args], make_target(reader, scratch, counts))
    atheris.Fuzz()


# -- the driver ----------------------------------------------------------------------------------
def _fuzz_module() -> Any:
    """benchmarks/fuzz.py (the campaign: seeds by reader, code hash)."""
    import importlib.util

    if "fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location("fuzz", HERE / "fuzz.py")
        sys.modules["fuzz"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["fuzz"])
    return sys.modules["fuzz"]


def corpus_dir(reader: str, seeds: list[Any]) -> Path:
    """The reader's corpus folder, started from its seeds the first time."""
    path = OUT / "atheris" / reader / "corpus"
    if not path.is_dir() or not any(path.iterdir()):
        path.mkdir(parents=True, exist_ok=True)
        for s in seeds:
            (path / f"seed-{s.name}").write_bytes(s.data)
    return path


def parse_log(text: str) -> dict[str, int]:
    """libFuzzer's figures in its output: inputs executed, peak RSS, coverage (edges and
    features) and corpus size at the last progress line."""
    stats = {k: int(v) for k, v in STAT.findall(text)}
    out = {"executed": stats.get("number_of_executed_units", 0), "peak_rss_mb": stats.get("peak_rss_mb", 0)}
    progress = PROGRESS.findall(text)
    if progress:
        n, cov, ft, corp = map(int, progress[-1])
        out |= {"cov": cov, "ft": ft, "corpus": corp}
        out["executed"] = max(out["executed"], n)
    return out


def finding(reader: str, log: str, before: set[Path], counts: dict[str, int]) -> dict[str, str] | None:
    """The input a stopped run saved, read again in a fresh `fuzzing.Worker` (the campaign's
    isolated judge); None if the run saved none. In-process, an input can fail for the
    process's history (libFuzzer's own growth, its RSS limit firing between inputs: an empty
    artifact), so the input counts as its second reading (`counted_as`): a failure only if that
    fails too, else "not reproduced", listed with what the run saw."""
    new = sorted(set((OUT / "fuzz_failures").glob(f"atheris-{reader}-*")) - before)
    if not new:
        return None
    art = new[-1]
    prefix = art.name.removeprefix(f"atheris-{reader}-").split("-")[0]
    m = re.search(r"Finding: (\w+): (.*)", log)
    err = re.search(r"ERROR: libFuzzer: (.*)", log)
    first = ARTIFACTS.get(prefix) or next((k for k in BAD if counts[k]), "crash")
    seen = (m.group(2) if m else err.group(1) if err else prefix)[:200]
    from support import fuzzing

    suffix, options = suffix_for(reader, art.read_bytes())
    w = fuzzing.Worker(TIMEOUT)
    try:
        kind, detail = w.run(art.read_bytes(), suffix, options)
    finally:
        w.close()
    if kind in BAD:
        return {"kind": kind, "detail": detail, "input": art.name, "counted_as": kind}
    what = f"in-process {first}: {seen}; read again in a fresh worker: {kind}"
    return {"kind": "not reproduced", "detail": what, "input": art.name, "counted_as": kind}


def run_reader(
    reader: str, seeds: list[Any], seconds: float, runs: int | None, rss_limit_mb: int = RSS_LIMIT_MB
) -> dict[str, Any]:
    """One libFuzzer run of `reader`: its counts, libFuzzer's figures and the input it stopped on."""
    corpus = corpus_dir(reader, seeds)
    failures = OUT / "fuzz_failures"
    failures.mkdir(parents=True, exist_ok=True)
    counts_path = OUT / "atheris" / reader / "counts.bin"
    counts_path.write_bytes(bytes(8 * len(KINDS)))
    max_len = 2 * max(len(s.data) for s in seeds)
    args = [
        f"-timeout={TIMEOUT}",
        f"-rss_limit_mb={rss_limit_mb}",
        f"-max_len={max_len}",
        f"-max_total_time={max(1, round(seconds))}",
        f"-artifact_prefix={failures}/atheris-{reader}-",
        "-print_final_stats=1",
        *([f"-runs={runs}"] if runs else []),
        str(corpus),
    ]
    before = set(failures.glob(f"atheris-{reader}-*"))
    cmd = [sys.executable, __file__, "--target", reader, "--counts", str(counts_path), "--", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", cwd=REPO)
    wall = time.perf_counter() - t0
    (OUT / "atheris" / reader / "last.log").write_text(proc.stderr)
    raw = counts_path.read_bytes()
    counts = {k: int.from_bytes(raw[8 * i : 8 * i + 8], "little") for i, k in enumerate(KINDS)}
    found = finding(reader, proc.stderr, before, counts) if proc.returncode else None
    if proc.returncode and found is None:
        tail = proc.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"atheris on {reader} stopped ({proc.returncode}) without a finding: {tail}")
    return {"counts": counts, "libfuzzer": parse_log(proc.stderr), "wall_s": wall, "finding": found}


def fresh() -> dict[str, Any]:
    return {"inputs": 0, "seconds": 0.0, "runs": 0, **dict.fromkeys(KINDS, 0), "failures": [], "not_reproduced": []}


def add(state: dict[str, Any], reader: str, run: dict[str, Any]) -> dict[str, Any]:
    """Add one run's counts to the reader's totals: the input a run stopped on counts as a
    failure only if its second reading (`finding`) fails too, else it is listed apart."""
    r = state["readers"].setdefault(reader, fresh())
    counts = {k: run["counts"][k] for k in KINDS if k not in BAD}  # the stopping input: by its second reading
    counts |= dict.fromkeys(BAD, 0)
    f = run["finding"]
    if f:
        counts[f["counted_as"]] += 1
        r["failures" if f["counted_as"] in BAD else "not_reproduced"].append(f)
    for k, v in counts.items():
        r[k] += v
    r["inputs"] += sum(counts.values())
    r["seconds"] += run["wall_s"]
    r["runs"] += 1
    r |= {k: v for k, v in run["libfuzzer"].items() if k in ("cov", "ft", "corpus", "peak_rss_mb")}
    return r


def load_state() -> dict[str, Any]:
    digest, versions = _fuzz_module().code_hash()
    path = OUT / "fuzz_atheris.json"
    if path.exists():
        state = json.loads(path.read_text())
        if state.get("hash") == digest:
            return state
    return {"hash": digest, "libraries": versions, "readers": {}}


def table(state: dict[str, Any]) -> str:
    lines = [
        f"Coverage-guided fuzzing (atheris/libFuzzer): code hash {state['hash']}, saved {state.get('saved', '-')}",
        "",
        "| reader | inputs | inputs/s | runs | accepted | RotoridError | non-RotoridError | hangs | over-bound alloc. "
        "| implausible accepted | coverage (edges) | features | corpus |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in sorted(state["readers"].items()):
        lines.append(
            f"| {name} | {r['inputs']:,} | {r['inputs'] / max(r['seconds'], 1e-9):.0f} | {r['runs']} | {r['ok']:,} | "
            f"{r['rotorid']:,} | {r['crash']} | {r['hang']} | {r['alloc']} | {r['implausible']} | "
            f"{r.get('cov', 0)} | {r.get('ft', 0)} | {r.get('corpus', 0)} |"
        )
    for name, r in sorted(state["readers"].items()):
        for f in r["failures"] + r.get("not_reproduced", []):
            lines.append(f"\n- {name}: {f['kind']}: {f['detail']} (fuzz_failures/{f['input']})")
    return "\n".join(lines) + "\n"


def save_state(state: dict[str, Any]) -> None:
    state["saved"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    for path, text in (
        (OUT / "fuzz_atheris.json", json.dumps(state, indent=1)),
        (OUT / "fuzz_atheris.md", table(state)),
    ):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


def campaign(
    seconds: float, runs: int | None, readers: list[str] | None, rss_limit_mb: int = RSS_LIMIT_MB
) -> dict[str, Any]:
    """One libFuzzer run per reader, added to the saved totals."""
    seeds = _fuzz_module().by_reader()
    state = load_state()
    for name in [n for n in sorted(seeds) if not readers or n in readers]:
        r = add(state, name, run_reader(name, seeds[name], seconds, runs, rss_limit_mb))
        save_state(state)
        bad = sum(r[k] for k in BAD)
        print(
            f"{time.strftime('%H:%M:%S')} {name:>10}: {r['inputs']:,} inputs, coverage {r.get('cov')}, failures {bad}"
        )
    return state


def run() -> list[dict[str, Any]]:
    """`make bench`: a turn of ATHERIS_SECONDS per reader; rows with the totals."""
    state = campaign(ATHERIS_SECONDS, None, None)
    rows = []
    for name, r in sorted(state["readers"].items()):
        rows.append({"name": f"{name} inputs", "value": r["inputs"], "unit": "inputs"})
        rows.append({"name": f"{name} inputs/s", "value": r["inputs"] / max(r["seconds"], 1e-9), "unit": "1/s"})
        rows.append({"name": f"{name} coverage", "value": r.get("cov", 0), "unit": "edges"})
        note = f"of {r['inputs']}, code hash {state['hash']}"
        rows.append(
            {"name": f"{name} failures", "value": sum(r[k] for k in BAD), "unit": "inputs", "target": 0, "note": note}
        )
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--target"]:  # the libFuzzer process
        target_main(argv[1], Path(argv[3]), argv[argv.index("--") + 1 :])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=ATHERIS_SECONDS, help="per reader")
    ap.add_argument("--runs", type=int, default=None, help="inputs per reader (stops earlier than --seconds)")
    ap.add_argument("--reader", action="append", help="only these readers")
    ap.add_argument("--rss-limit-mb", type=int, default=RSS_LIMIT_MB, help="libFuzzer's RSS backstop")
    ap.add_argument("--status", action="store_true", help="print the saved totals")
    a = ap.parse_args(argv)
    if a.status:
        print(table(load_state()), end="")
        return 0
    state = campaign(a.seconds, a.runs, a.reader, a.rss_limit_mb)
    return 1 if any(r["failures"] for r in state["readers"].values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
