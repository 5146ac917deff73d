"""What a fresh interpreter has imported after some code: start-up stays light, and the
compiled kernels load only when a flight is flown or an estimator is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("matplotlib", "scipy", "pandas", "pyarrow", "pydantic", "jinja2", "pyulog", "numba", "llvmlite")

PROBE = """
import sys
{body}
heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))
print(','.join(heavy), file=sys.stderr)
"""


def heavy_after(body: str) -> list[str]:
    """The `HEAVY` packages a fresh interpreter (this tree's source first) has imported after `body`."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    r = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body, heavy=HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return [m for m in r.stderr.rstrip("\n").rpartition("\n")[2].split(",") if m]
