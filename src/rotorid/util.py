"""Small helpers shared by writers: atomic file output and file hashes."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from rotorid.errors import RotoridError


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
