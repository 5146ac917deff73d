"""The decoded-log cache: each log's flights as Parquet, keyed by the file's SHA-256, the reader's
version and the options it decoded with, so the second look at a log (`info` then `identify`, a
batch run again, the app) reads no log bytes beyond the hash.

The folder is `ROTORID_CACHE_DIR`, else `$XDG_CACHE_HOME/rotorid`, else `~/.cache/rotorid`. It
is bounded by `ROTORID_CACHE_MAX_MB` (default 2048): after each write the least recently used
entries (by modification time, touched on every hit) go until it fits. `ROTORID_NO_CACHE=1` (the
commands' `--no-cache`) turns it off. Entries are written atomically with page checksums; one
that cannot be read back whole (truncated, flipped bits, another key, malformed flights) is
ignored and rewritten, never trusted. The reader's warnings are kept with the flights and
said again on each read. A flight's `meta` is stored as tagged JSON (tuples and
numpy values kept as they were) and an entry whose meta would not round-trip exactly is not
written at all.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rotorid.util import atomic_write, sha256

if TYPE_CHECKING:
    from rotorid.flight import Flight

#: Bump when the entry layout changes (older entries are then misses, evicted in time).
LAYOUT = 1
_KEY = b"rotorid.cache"
#: The entries' own format (Parquet's magic bytes): a log already stored in it reads as fast as its
#: entry would (a 1 h, 1 kHz log: 1.07 s CPU read, 0.96 s from the entry), so it is not copied.
ENTRY_MAGIC = b"PAR1"
#: Warning classes a reader may raise, by name, to say them again from an entry.
_WARNINGS: dict[str, type[Warning]] = {w.__name__: w for w in (UserWarning, RuntimeWarning, DeprecationWarning)}


def enabled() -> bool:
    """Whether decoded logs are cached (not when `ROTORID_NO_CACHE` is set to anything but 0)."""
    return os.environ.get("ROTORID_NO_CACHE", "0") in ("", "0")


def folder() -> Path:
    """The cache folder (see the module docstring)."""
    if os.environ.get("ROTORID_CACHE_DIR"):
        return Path(os.environ["ROTORID_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rotorid"


def max_bytes() -> int:
    """The folder's size bound in bytes (`ROTORID_CACHE_MAX_MB`, default 2048 MB)."""
    try:
        return int(float(os.environ.get("ROTORID_CACHE_MAX_MB", "2048")) * 2**20)
    except ValueError:
        return 2048 * 2**20


@functools.cache
def reader_version(module: str) -> str | None:
    """A digest of the source of the reader's module and of everything decoding shares (the rest
    of `rotorid.io`, `flight`, `frames`): any change to how a log decodes is a new version. None
    when the module's source cannot be found (a reader defined on the fly): not cached then."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    try:
        origin = Path(importlib.util.find_spec(module).origin)
        files = [*sorted({*root.joinpath("io").glob("*.py"), root / "flight.py", root / "frames.py"}), origin]
        h = hashlib.sha256(f"{LAYOUT}:{module}".encode())
        for f in files:
            h.update(f.read_bytes())
    except (ImportError, AttributeError, ValueError, TypeError, OSError):
        return None
    return h.hexdigest()[:16]


def cached_read(path: Path, module: str, options: dict[str, Any], decode: Callable[[], list[Flight]]) -> list[Flight]:
    """The flights of `path` from the cache when an entry for its content, reader version and
    `options` is there and reads back whole, else `decode()`d and stored; a Parquet log
    (`ENTRY_MAGIC`) is decoded directly."""
    version = reader_version(module) if enabled() else None
    if version is None or _head(path) == ENTRY_MAGIC:
        return decode()
    key = json.dumps(
        {"sha256": sha256(path), "reader": module, "version": version, "options": _tagged(options)}, sort_keys=True
    )
    entry = folder() / f"{hashlib.sha256(key.encode()).hexdigest()}.parquet"
    hit = _load(entry, key)
    if hit is not None:
        flights, said = hit
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            flights = decode()
        said = [[type(w.message).__name__, str(w.message)] for w in caught]
        _store(entry, key, flights, said)
    for kind, text in said:  # what the reader warned, said again on every read of the log
        warnings.warn(text, _WARNINGS.get(kind, UserWarning), stacklevel=3)
    return flights


def _head(path: Path) -> bytes:
    """The first bytes of `path` (as many as `ENTRY_MAGIC`), b"" when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(ENTRY_MAGIC))
    except OSError:
        return b""


def _load(entry: Path, key: str) -> tuple[list[Flight], list[list[str]]] | None:
    """The entry's flights and the reader's warnings, or None when it is missing or not wholly sound."""
    import pyarrow.parquet as pq

    from rotorid.flight import Flight
    from rotorid.io.table import numpy_column

    if not entry.is_file():
        return None
    try:
        with pq.ParquetFile(entry, page_checksum_verification=True) as pf:  # not read_table: it imports pandas
            table = pf.read()
        head = json.loads(table.schema.metadata[_KEY])
        if head["key"] != key:
            return None
        cols = {name: numpy_column(table.column(name)) for name in table.column_names}
        flights = []
        for i, (n, channels, meta) in enumerate(zip(head["rows"], head["channels"], head["meta"], strict=True)):
            a = sum(head["rows"][:i])
            kw = {c: _channel(cols, c, k, a, a + n) for c, k in channels.items()}
            flights.append(Flight(t=cols["t"][a : a + n], meta=_untagged(meta), **kw))
        os.utime(entry)  # recently used
        return flights, [[str(k), str(m)] for k, m in head["warnings"]]
    except Exception:  # anything wrong with an entry makes it a miss: it is rewritten, never trusted
        return None


def _channel(cols: dict[str, Any], name: str, k: int, a: int, b: int) -> Any:
    import numpy as np

    v = np.column_stack([cols[f"{name}.{j}"][a:b] for j in range(k)])
    return v[:, 0].astype(bool) if name == "landed" else v


def _store(entry: Path, key: str, flights: list[Flight], said: list[list[str]]) -> None:
    """Write the entry atomically (skipped when a meta would not round-trip), then evict."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rotorid.flight import FLAT

    try:
        metas = [_tagged(f.meta) for f in flights]
        if not flights or not all(
            _same(_untagged(json.loads(json.dumps(m))), f.meta) for m, f in zip(metas, flights, strict=True)
        ):
            return
    except (TypeError, ValueError):  # a meta JSON cannot hold as it is: not cached
        return
    channels = [{c: int(np.shape(getattr(f, c))[1]) if c not in FLAT else 1 for c in f.channels} for f in flights]
    names = sorted({f"{c}.{j}" for ch in channels for c, k in ch.items() for j in range(k)})
    arrays = {"t": np.concatenate([f.t for f in flights])}
    for name in names:
        c, _, j = name.rpartition(".")
        arrays[name] = np.concatenate(
            [
                np.asarray(getattr(f, c), dtype=float).reshape(len(f.t), -1)[:, int(j)]
                if c in ch
                else np.zeros(len(f.t))
                for f, ch in zip(flights, channels, strict=True)
            ]
        )
    head = {"key": key, "rows": [len(f.t) for f in flights], "channels": channels, "meta": metas, "warnings": said}
    table = pa.table(arrays).replace_schema_metadata({_KEY: json.dumps(head).encode()})
    try:
        atomic_write(entry, lambda p: pq.write_table(table, p, write_page_checksum=True))
        evict(max_bytes())
    except Exception:  # a cache that cannot be written (read-only home, full disk) is no cache
        return


def evict(limit: int) -> None:
    """Remove the least recently used entries until the folder holds at most `limit` bytes."""
    entries = []
    for p in folder().glob("*.parquet"):
        try:
            st = p.stat()
        except OSError:
            continue
        entries.append((st.st_mtime_ns, st.st_size, p))
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        p.unlink(missing_ok=True)
        total -= size


def _tagged(x: Any) -> Any:
    """`x` as JSON whose decoding (`_untagged`) gives it back: tuples and numpy values tagged."""
    import numpy as np

    if isinstance(x, dict):
        return {"~d": [[_tagged(k), _tagged(v)] for k, v in x.items()]}
    if isinstance(x, tuple):
        return {"~t": [_tagged(v) for v in x]}
    if isinstance(x, list):
        return [_tagged(v) for v in x]
    if isinstance(x, np.ndarray):
        return {"~a": x.tolist(), "dtype": x.dtype.str}
    if isinstance(x, np.generic):
        return {"~s": x.item(), "dtype": x.dtype.str}
    if isinstance(x, float) and not np.isfinite(x):
        return {"~f": repr(x)}
    return x


def _same(a: Any, b: Any) -> bool:
    """Whether `a` and `b` are the same value of the same types, all the way down."""
    import numpy as np

    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray | np.generic):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float):
        return a == b or repr(a) == repr(b)
    return bool(a == b)


def _untagged(x: Any) -> Any:
    import numpy as np

    if isinstance(x, list):
        return [_untagged(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "~d" in x:
        return {_untagged(k): _untagged(v) for k, v in x["~d"]}
    if "~t" in x:
        return tuple(_untagged(v) for v in x["~t"])
    if "~a" in x:
        return np.array(x["~a"], dtype=np.dtype(x["dtype"]))
    if "~s" in x:
        return np.dtype(x["dtype"]).type(x["~s"])
    return float(x["~f"])
