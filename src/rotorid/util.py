"""Small helpers shared by readers and writers: untrusted input files (regular, bounded),
atomic file output and file hashes."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rotorid.errors import RotoridError, clip

#: Largest text input (vehicle TOML, params.json, batch manifest) read whole, bytes.
TEXT_MAX = 16 << 20


#: Figures get at most this many points per series (methods subsample their diagnostics evenly).
MAX_PLOT_POINTS = 2500


def subsample(n: int, k: int = MAX_PLOT_POINTS) -> Any:
    """Indices (a numpy array) of at most `k` of `n` samples, evenly spread: what a method keeps
    of a series for its figures, so diagnostics.npz stays bounded whatever the flight's length."""
    import numpy as np  # not at start-up: the command line imports this module

    return np.unique(np.linspace(0, n - 1, min(n, k)).astype(int))


def regular_file(path: Path | str, what: str = "file") -> int:
    """The size of `path` if it is a regular, non-empty file, found by `stat` without opening
    it (a FIFO would block, `/dev/zero` never ends, `/proc/self/mem` fails on read); else a
    one-line `RotoridError` naming the path and what it is instead."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise RotoridError(f"{p}: no such file") from None
    except OSError as e:
        raise RotoridError(f"{p}: cannot read this {what} ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise RotoridError(f"{p}: is a folder, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise RotoridError(f"{p}: is not a regular file (a pipe, device or socket); give a {what} saved on disk")
    if st.st_size == 0:
        raise RotoridError(f"{p}: the file is empty (or a special file of unknown size); give a {what} saved on disk")
    return st.st_size


def read_text(path: Path | str, what: str, limit: int = TEXT_MAX) -> str:
    """A small UTF-8 text input (`regular_file`, at most `limit` bytes), as one-line errors."""
    p = Path(path)
    size = regular_file(p, what)
    if size > limit:
        raise RotoridError(f"{p}: {size} bytes is too large for a {what} (at most {limit}); check the file")
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise RotoridError(f"{p}: cannot read this {what} ({e.strerror})") from None
    if len(data) > limit:
        raise RotoridError(f"{p}: grew beyond {limit} bytes while read; check the file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RotoridError(f"{p}: not UTF-8 text (byte {e.start}); save the {what} as UTF-8") from None


def nesting(obj: object, limit: int) -> int:
    """How deeply lists and dicts nest in `obj` (a scalar: 0), counted without recursion and
    only up to `limit + 1` (a crafted JSON document may nest thousands deep)."""
    depth, level = 0, [obj]
    while depth <= limit:
        boxes = [x for x in level if isinstance(x, list | dict)]
        if not boxes:
            break
        depth += 1
        level = [c for x in boxes for c in (x.values() if isinstance(x, dict) else x)]
    return depth


def load_json(path: Path | str, what: str, limit: int = TEXT_MAX, depth: int = 32) -> object:
    """A JSON input (`read_text`): malformed, or nested deeper than `depth`, is a one-line error."""
    import json

    p = Path(path)
    try:
        doc = json.loads(read_text(p, what, limit))
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else clip(e, 120)
        raise RotoridError(f"{p}: not a {what} ({why})") from None
    if nesting(doc, depth) > depth:
        raise RotoridError(f"{p}: not a {what} (nested deeper than {depth})")
    return doc


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp)` on a temporary file beside `path`, then rename it into place.

    Nothing half-written is ever left at `path`: on any failure the temporary file is removed.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise RotoridError(f"{path}: cannot write here ({e.strerror}); choose another output folder") from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    except OSError as e:  # a full disk (ENOSPC), a file size limit (EFBIG, ulimit -f), ...
        Path(tmp).unlink(missing_ok=True)
        raise RotoridError(f"{path}: could not write ({e.strerror or e}); nothing was changed there") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: How long (s) a writer waits for another process writing the same output before giving up.
LOCK_WAIT = 60.0


@contextlib.contextmanager
def locked(out: Path, wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold the lock of output `out` (an `flock` on the hidden file `.NAME.lock` beside it,
    removed again on release) while writing it: two processes writing one output take turns,
    so neither removes what the other is writing. A lock dies with its process, however it
    ends; a lock file left by a killed one is taken over and removed."""
    lock = out.parent / f".{out.name}.lock"
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as e:
            raise RotoridError(f"{out}: cannot write here ({e.strerror}); choose another output folder") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise RotoridError(
                            f"{out}: another rotorid process is writing it (still after {wait:g} s); "
                            "wait for it or choose another output"
                        ) from None
                    time.sleep(0.05)
            with contextlib.suppress(FileNotFoundError):
                if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                    break  # still the lock file (not one its last holder removed on release)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)  # before releasing: a waiter then sees its file was removed, and retries
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda p: p.write_text(text))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda p: p.write_bytes(data))


def sha256(path: Path) -> str:
    """SHA-256 hex digest of a file, read once per process while it keeps its size, time
    and inode (the decoded-log cache's key and a run's provenance are the same hash)."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


_DIGESTS: dict[tuple[str, int, int, int], str] = {}


def windows_text(windows: Sequence[Sequence[float]] | None) -> str:
    """Time windows as people write them: `183.37–191.02 s, 200–210 s` ("whole log" for none)."""
    if not windows:
        return "whole log"
    return ", ".join(f"{float(a):g}–{float(b):g} s" for a, b in windows)


def lazy_names(package: str, home: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """PEP 562 `__getattr__` and `__dir__` for `package`, whose public names load on first use
    (so naming a settings class, or `import rotorid`, imports no numpy): `home` maps each name
    to the module that defines it; a name once loaded is kept in the package."""
    module = sys.modules[package]

    def getattr_(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home[name]), name)
        setattr(module, name, value)
        return value

    def dir_() -> list[str]:
        return sorted([*vars(module), *home])

    return getattr_, dir_
