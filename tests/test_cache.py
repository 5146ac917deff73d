"""Decode once: the decoded-log cache (`rotorid.io.cache`) and one decode per file per run."""

from __future__ import annotations

import dataclasses
import functools
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rotorid import io
from rotorid.cli import app
from rotorid.io import cache
from rotorid.sim import scenarios

runner = CliRunner()


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache on, in a folder of the test's own."""
    monkeypatch.delenv("ROTORID_NO_CACHE", raising=False)
    monkeypatch.setenv("ROTORID_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short simulated flight with normalized commands (the units a CSV's reader assumes), as
    CSV (a Parquet log is not cached: `test_a_parquet_log_is_its_own_entry`)."""
    sc = scenarios.run("eschmann-crazyflie", seed=1, duration=10.0)
    return io.write(sc.flights["roll_pitch"], tmp_path_factory.mktemp("log") / "flight.csv")


def _failing_after_first(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Path]:
    """Patch format `name`'s reader to record its calls and fail on the second."""
    fmt = io.formats()[name]
    real = fmt.reader()
    calls: list[Path] = []

    @functools.wraps(real)  # the same module: the same reader version
    def reader(path: Path, **kw):
        calls.append(path)
        if len(calls) > 1:
            raise AssertionError(f"{path} decoded a second time")
        return real(path, **kw)

    monkeypatch.setitem(io.FORMATS, name, dataclasses.replace(fmt, read=reader))
    return calls


def test_second_info_reads_no_log_bytes_beyond_the_hash(cached: Path, log: Path, monkeypatch) -> None:
    calls = _failing_after_first(monkeypatch, "table")
    first = runner.invoke(app, ["info", str(log)])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["info", str(log)])
    assert second.exit_code == 0, second.output
    assert calls == [log]  # decoded once; the second look read the entry
    assert second.stdout == first.stdout
    assert len(list(cached.glob("*.parquet"))) == 1


def test_no_cache_decodes_again(cached: Path, log: Path, monkeypatch) -> None:
    calls = _failing_after_first(monkeypatch, "table")
    assert runner.invoke(app, ["info", str(log)]).exit_code == 0
    second = runner.invoke(app, ["info", str(log), "--no-cache"])
    assert second.exit_code != 0 and "decoded a second time" in repr(second.exception)
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("crazyflie/log10", {}),
        ("px4/sample.ulg", {"hints": {"motors": 4, "motor_input": "normalized"}}),
        ("betaflight/LOG00037.BFL", {}),
        ("ardupilot/backend_log_80k.bin", {"allow_corrupt": True}),
    ],
)
def test_entry_gives_back_every_readers_flights(cached: Path, data_dir: Path, name: str, options: dict) -> None:
    """Each reader's flights read back from the cache: the same samples, channels and meta
    (rates, units, notes, types included) and the same warnings."""
    path = data_dir / name
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        fresh = io.read(path, **options)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        again = io.read(path, **options)
    assert len(list(cached.glob("*.parquet"))) == 1
    assert [str(w.message) for w in w2] == [str(w.message) for w in w1]
    assert len(again) == len(fresh)
    for a, b in zip(again, fresh, strict=True):
        assert a.channels == b.channels
        for c in ["t", *b.channels]:
            x, y = getattr(a, c), getattr(b, c)
            assert x.dtype == y.dtype and np.array_equal(x, y), c
        assert cache._same(a.meta, b.meta)


def test_options_are_part_of_the_key(cached: Path, log: Path) -> None:
    io.read(log)
    io.read(log, hints={"motor_input": "normalized"})
    assert len(list(cached.glob("*.parquet"))) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_corrupt_entry_is_ignored_and_rewritten(cached: Path, log: Path, monkeypatch, damage: str) -> None:
    fresh = io.read(log)
    (entry,) = cached.glob("*.parquet")
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 3] ^= 0xFF  # inside a data page: its checksum no longer holds
    else:
        data = bytearray(b"PAR1" + bytes(100) + b"PAR1")
    entry.write_bytes(bytes(data))
    calls: list[int] = []
    real = cache._store
    monkeypatch.setattr(cache, "_store", lambda *a: calls.append(1) or real(*a))
    again = io.read(log)
    assert calls == [1]  # decoded and written anew
    assert np.array_equal(again[0].acc, fresh[0].acc) and np.array_equal(again[0].cmd, fresh[0].cmd)
    assert cache._load(entry, next(iter(_keys(entry)))) is not None  # the rewritten entry is sound


def _keys(entry: Path):
    import json

    import pyarrow.parquet as pq

    yield json.loads(pq.read_schema(entry).metadata[b"rotorid.cache"])["key"]


def test_least_recently_used_entries_go_first(cached: Path, tmp_path: Path, log: Path, monkeypatch) -> None:
    import os

    f = io.read(log)[0]  # an entry of its own
    for i in range(3):  # three logs with different content
        p = tmp_path / f"f{i}.csv"
        io.read(io.write(f.replace(acc=f.acc + i + 1), p))
    entries = sorted(cached.glob("*.parquet"))
    assert len(entries) == 4
    for k, e in enumerate(entries):  # distinct use times, in order, then the first used last
        os.utime(e, ns=(10**18 + k, 10**18 + k))
    os.utime(entries[0], ns=(2 * 10**18, 2 * 10**18))
    cache.evict(entries[0].stat().st_size + entries[3].stat().st_size)
    assert set(cached.glob("*.parquet")) == {entries[0], entries[3]}


def test_folder_follows_xdg_and_the_override(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ROTORID_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.folder() == tmp_path / "xdg" / "rotorid"
    monkeypatch.setenv("ROTORID_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.folder() == tmp_path / "mine"


def test_identify_decodes_each_file_once(log: Path, monkeypatch, tmp_path: Path) -> None:
    """Without the cache, a log named with windows in several roles is decoded once per run."""
    from rotorid.runs import Request
    from rotorid.vehicle import Vehicle

    calls = _failing_after_first(monkeypatch, "table")
    req = Request([f"{log}@0.5:4.5"], Vehicle.load("quad-x"))
    a = req.flights([f"{log}@0.5:4.5"])
    b = req.flights([f"{log}@5:7", f"{log}@7.5:9.5"])  # stretches that overlap no other
    assert calls == [log]
    assert a[0].t[0] >= 0.5 and b[0].t[-1] <= 7 + 1e-9 and b[1].t[0] >= 7.5 - 1e-9 and len(b) == 2


def test_a_reader_without_source_is_not_cached(cached: Path, log: Path, monkeypatch) -> None:
    """A reader made on the fly (its module's source not found) decodes every time, uncached."""
    fmt = io.formats()["table"]
    real = fmt.reader()

    def reader(path: Path, **kw):
        return real(path, **kw)

    reader.__module__ = "made_on_the_fly"
    monkeypatch.setitem(io.FORMATS, "table", dataclasses.replace(fmt, read=reader))
    assert len(io.read(log)[0].t) == len(io.read(log)[0].t) > 0
    assert not list(cached.glob("*.parquet"))


def test_a_parquet_log_is_its_own_entry(cached: Path, log: Path, tmp_path: Path, monkeypatch) -> None:
    """An entry is Parquet: a Parquet log would be copied for no gain (1.07 s CPU to read a 1 h,
    1 kHz log, 0.96 s from its entry, and the copy cost the app's first open ~2 s), so it is
    decoded each time and nothing is written."""
    pq = io.write(io.read(log)[0], tmp_path / "flight.parquet")
    before = set(cached.glob("*.parquet"))
    assert len(before) == 1  # the CSV's entry
    calls = _failing_after_first(monkeypatch, "table")
    io.read(pq)
    assert calls == [pq] and set(cached.glob("*.parquet")) == before
