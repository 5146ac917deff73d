"""`make bench`: run every benchmarks/bench_*.py, the calibration Monte Carlo
(calibration.py) and short reader fuzzing passes (fuzz.py, fuzz_atheris.py), write
benchmarks/results/<name>.json and benchmarks/results/README.md (a markdown table).
Benchmarks are not tests: they measure. `run.py NAME ...` runs only those (e.g. `run.py tls
calibration`).

Each module defines `run() -> list[dict]`, each dict a row with at least `name`, `value`,
`unit` and optionally `target` and `note`; a module whose own output already uses
<name>.json names its rows file in `ROWS_FILE`. Each module starts from the environment
run.py started with: what one writes to os.environ is undone after it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "results"


def main(argv: list[str]) -> int:
    OUT.mkdir(exist_ok=True)
    cache = tempfile.TemporaryDirectory(prefix="rotorid-bench-cache-")  # not the user's decoded-log cache
    os.environ.setdefault("ROTORID_CACHE_DIR", cache.name)
    only = set(argv)
    lines = ["| benchmark | measure | value | unit | target | note |", "|---|---|---|---|---|---|"]
    for path in [*sorted(HERE.glob("bench_*.py")), HERE / "calibration.py", HERE / "fuzz.py", HERE / "fuzz_atheris.py"]:
        stem = path.stem.removeprefix("bench_")
        if only and stem not in only:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = mod  # picklable by name for worker processes (calibration)
        spec.loader.exec_module(mod)
        t0 = time.perf_counter()
        env = dict(os.environ)
        try:
            rows = mod.run()
        finally:  # e.g. Dask's nanny writes MALLOC_TRIM_THRESHOLD_ and BLAS thread counts into it
            os.environ.clear()
            os.environ.update(env)
        meta = {"python": platform.python_version(), "machine": platform.machine(), "wall_s": time.perf_counter() - t0}
        (OUT / getattr(mod, "ROWS_FILE", f"{stem}.json")).write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
        for r in rows:
            v = r["value"]
            vs = f"{v:.4g}" if isinstance(v, float) else str(v)
            lines.append(
                f"| {stem} | {r['name']} | {vs} | {r.get('unit', '')} | {r.get('target', '')} | {r.get('note', '')} |"
            )
            print(f"{stem:>10}  {r['name']:<48} {vs:>12} {r.get('unit', ''):<8} {r.get('target', '')}", flush=True)
    (OUT / "README.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
