"""The coverage-guided fuzz target (benchmarks/fuzz_atheris.py, issue 16 part 4): a short real
libFuzzer run counts every input it executed and grows its corpus; a failure stops the run
with the input saved and counted; the target judges inputs as the mutation campaign does."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rotorid.io import formats
from support import fuzzing
from support.bench import load

fa = load("fuzz_atheris")
_PATH = Path(fa.__file__)


def _drive(out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROTORID_ATHERIS_OUT": str(out)}
    return subprocess.run([sys.executable, str(_PATH), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
def test_a_short_run_counts_every_input_and_grows_the_corpus(tmp_path: Path) -> None:
    proc = _drive(tmp_path, "--reader", "crazyflie", "--runs", "400", "--seconds", "60")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads((tmp_path / "fuzz_atheris.json").read_text())["readers"]["crazyflie"]
    executed = fa.parse_log((tmp_path / "atheris" / "crazyflie" / "last.log").read_text())
    assert r["inputs"] == executed["executed"] == 400  # the target's own counts match libFuzzer's
    assert r["ok"] + r["rotorid"] == 400 and r["ok"] > 0 and r["rotorid"] > 0
    assert r["crash"] == r["hang"] == r["alloc"] == r["implausible"] == 0
    seeds = len(list((tmp_path / "atheris" / "crazyflie" / "corpus").glob("seed-*")))
    assert r["cov"] > 100 and r["corpus"] > seeds  # instrumented: new branches kept as new inputs
    again = _drive(tmp_path, "--reader", "crazyflie", "--runs", "100")  # continues on the grown corpus
    assert again.returncode == 0, again.stderr
    r2 = json.loads((tmp_path / "fuzz_atheris.json").read_text())["readers"]["crazyflie"]
    assert r2["inputs"] == 500 and r2["runs"] == 2 and "crazyflie" in (tmp_path / "fuzz_atheris.md").read_text()


def test_a_run_stopped_by_the_process_not_the_input_is_not_counted_as_a_failure(tmp_path: Path) -> None:
    """libFuzzer's RSS limit set below the process's own size stops the run between inputs (an
    empty artifact): read again in a fresh worker it is an ordinary input, listed apart."""
    proc = _drive(tmp_path, "--reader", "crazyflie", "--seconds", "4", "--rss-limit-mb", "50")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads((tmp_path / "fuzz_atheris.json").read_text())["readers"]["crazyflie"]
    (f,) = r["not_reproduced"]
    assert not r["failures"] and r["alloc"] == 0 and r["inputs"] == r["ok"] + r["rotorid"] > 0
    assert "in-process alloc: out-of-memory" in f["detail"] and f["counted_as"] in ("ok", "rotorid")
    assert (tmp_path / "fuzz_failures" / f["input"]).exists() and "not reproduced" in (
        tmp_path / "fuzz_atheris.md"
    ).read_text()


def test_a_finding_the_fresh_reading_confirms_is_a_failure(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(fa, "OUT", tmp_path)
    (tmp_path / "fuzz_failures").mkdir()
    art = tmp_path / "fuzz_failures" / "atheris-table-crash-0a1b"
    art.write_bytes(b"t,acc_x\n0,1\n")
    monkeypatch.setattr(
        fuzzing.Worker, "run", lambda self, data, suffix, options: (fuzzing.CRASH, "KeyError at x.py:1")
    )
    log = "Finding: crash: KeyError at x.py:1\n==1== ERROR: libFuzzer: deadly signal"
    f = fa.finding("table", log, set(), dict.fromkeys(fa.KINDS, 0) | {"crash": 1})
    assert f == {"kind": "crash", "detail": "KeyError at x.py:1", "input": art.name, "counted_as": "crash"}
    state = {"readers": {}}
    r = fa.add(
        state,
        "table",
        {"counts": dict.fromkeys(fa.KINDS, 0) | {"ok": 5, "crash": 1}, "libfuzzer": {}, "wall_s": 1.0, "finding": f},
    )
    assert r["crash"] == 1 and r["inputs"] == 6 and r["failures"] == [f]


def test_the_target_judges_as_the_campaign_and_raises_on_a_failure(tmp_path: Path, monkeypatch) -> None:
    counts = mmap.mmap(-1, 8 * len(fa.KINDS))
    sys.path.insert(0, str(Path(__file__).parent))
    one = fa.make_target("table", tmp_path, counts)
    one(b"t,acc_x\n0,1\n")  # a CSV without the channels a flight needs: a RotoridError, counted
    assert int.from_bytes(counts[8:16], "little") == 1
    monkeypatch.setattr(fuzzing, "_classify", lambda path, options: (fuzzing.IMPLAUSIBLE, "acc beyond 157"))
    with pytest.raises(fa.Finding, match="implausible: acc beyond"):
        one(b"PAR1")
    assert int.from_bytes(counts[40:48], "little") == 1
    for reader in formats():  # every reader has a file suffix for its raw inputs
        assert fa.suffix_for(reader, b"")[0] in ("", ".ulg", ".bin", ".BBL", ".csv")
