"""In-suite mutation fuzzing of every reader (issue 16 part 4): hypothesis draws mutation
sequences (tests/support/fuzzing.py) of small valid inputs cut from every fixture in shared/data and
from synthetic logs; each mutant is read by `rotorid.io.read` in a forked worker with a time
limit and an address-space cap. The only acceptable outcomes are a Flight list within the
physical limits or a `RotoridError`. Derandomized (fixed seeds); budget ≈ 10 s of one core.
The long run is benchmarks/fuzz.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rotorid.flight import Flight
from rotorid.io import FORMATS, Format, formats
from support import fuzzing

#: Examples per reader (ULog and DataFlash parse slowest: ~30 inputs/s on a loaded core).
BUDGET = {"crazyflie": 200, "ulog": 60, "table": 100, "dataflash": 60, "blackbox": 60}

ops_strategy = st.lists(
    st.builds(
        fuzzing.Op,
        kind=st.sampled_from(fuzzing.KINDS),
        a=st.floats(0.0, 1.0),
        b=st.floats(0.0, 1.0),
        v=st.integers(0, 0xFFFF),
        head=st.booleans(),
    ),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def seeds(data_dir: Path) -> dict[str, list[fuzzing.Seed]]:
    with tempfile.TemporaryDirectory() as scratch:
        out: dict[str, list[fuzzing.Seed]] = {}
        for s in fuzzing.seeds(data_dir, Path(scratch)):
            out.setdefault(s.reader, []).append(s)
    return out


def test_seeds_cover_every_fixture(
    seeds: dict[str, list[fuzzing.Seed]], data_dir: Path, worker: fuzzing.Worker
) -> None:
    """Every fixture folder in shared/data gives seeds to its reader, every reader has seeds,
    and every unmutated seed reads cleanly (the fuzz starts from valid inputs) but the cut of
    the DataFlash fixture that holds its definitions and parameters only."""
    folders = {p.name for p in data_dir.iterdir() if p.is_dir()}
    assert folders <= set(fuzzing.FOLDERS.values()) and set(seeds) == set(BUDGET) == set(formats())
    assert all(len(group) >= 2 for group in seeds.values())
    for s in (s for group in seeds.values() for s in group):
        kind, detail = worker.run(s.data, s.suffix, s.options)
        if s.name == "dataflash-backend_log_80k":
            assert kind == fuzzing.ROTORID and "no IMU, RCOU, ESC or ATT" in detail
        else:
            assert (kind, detail) == (fuzzing.OK, ""), s.name


@pytest.mark.parametrize("reader", sorted(BUDGET))
def test_mutants_end_in_flights_or_rotorid_error(
    reader: str, seeds: dict[str, list[fuzzing.Seed]], worker: fuzzing.Worker
) -> None:
    group = seeds.get(reader)
    if not group:
        pytest.fail(
            f"no seed for the {reader} reader: add a fixture to shared/data or a written seed to tests/support/fuzzing.py"
        )

    @settings(
        max_examples=BUDGET[reader],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(seed=st.sampled_from(group), ops=ops_strategy, corrupt_ok=st.booleans())
    def check(seed: fuzzing.Seed, ops: list[fuzzing.Op], corrupt_ok: bool) -> None:
        options = (("allow_corrupt", True),) if corrupt_ok and reader == "crazyflie" else seed.options
        kind, detail = worker.run(fuzzing.apply_ops(seed.data, ops), seed.suffix, options)
        assert kind in (fuzzing.OK, fuzzing.ROTORID), f"{seed.name} {ops}: {kind}: {detail}"

    check()


# -- the harness detects what it hunts -----------------------------------------------------------
def _fake_reader(path: Path) -> list[Flight]:
    """Misbehaves as the first bytes say (registered only in the test's own worker)."""
    tag = path.read_bytes()[:4]
    if tag == b"HANG":
        while True:
            pass
    if tag == b"BOOM":
        raise KeyError("control[0]")
    if tag == b"FAT!":
        return [Flight(t=np.zeros(1 << 34), meta={"source": "fat"})]  # 128 GiB
    t = np.arange(10) / 100.0
    acc = np.zeros((10, 3)) + (2000.0 if tag == b"NONS" else 0.0)
    return [Flight(t=t, acc=acc, meta={"source": "fake"})]


@pytest.mark.parametrize(
    ("tag", "kind"),
    [
        (b"HANG", fuzzing.HANG),
        (b"BOOM", fuzzing.CRASH),
        (b"FAT!", fuzzing.ALLOC),
        (b"NONS", fuzzing.IMPLAUSIBLE),
        (b"GOOD", fuzzing.OK),
    ],
)
def test_harness_classifies_each_failure(tag: bytes, kind: str) -> None:
    """A fake reader that hangs, crashes, over-allocates or returns 2000 m/s² is reported as
    such (the fuzz test could fail), and the worker survives a hang."""
    FORMATS["fake"] = Format("fake", (".fake",), tag, _fake_reader)
    try:
        w = fuzzing.Worker(timeout=1.0)  # forked now: the child has the fake reader
    finally:
        del FORMATS["fake"]
    try:
        got, detail = w.run(tag + bytes(60), ".fake")
        assert got == kind, detail
        if kind == fuzzing.CRASH:
            assert detail.startswith("KeyError at __init__.py:") and "> test_fuzz_readers.py:" in detail
        if kind == fuzzing.HANG:  # the worker was replaced and answers again
            assert w.run(b"junk", ".nothing")[0] == fuzzing.ROTORID
    finally:
        w.close()
