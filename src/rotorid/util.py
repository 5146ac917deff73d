"""Small helpers shared by readers and writers: untrusted input files (regular, bounded),
atomic file output and file hashes."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from rotorid.errors import RotoridError

#: Largest text input (vehicle TOML, params.json, batch manifest) read whole, bytes.
TEXT_MAX = 16 << 20


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
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda p: p.write_text(text))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda p: p.write_bytes(data))


def sha256(path: Path) -> str:
    """SHA-256 hex digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
