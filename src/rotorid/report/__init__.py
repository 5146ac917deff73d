"""Reports: matplotlib figures per method (`rotorid.report.<method>`, named in the method
registry) and of cross-validation (`rotorid.report.validate`), all drawn with the Figure API in
one style (`rotorid.report.style`); `write_run`, which writes params.json, the figures'
data (diagnostics.npz), the figures as PNG and a self-contained report.html for one run;
`redraw`, which draws a saved run's figures and report again from those files alone; and
`write_index`, the demo's page that gathers several runs."""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import io
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rotorid.errors import RotoridError, clip
from rotorid.util import atomic_write_text, locked

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.report.html import IndexEntry
    from rotorid.result import Result, Truth

#: What a run folder holds; a folder with anything else is not replaced by a new run.
RUN_FILES = ("params.json", "report.html", "diagnostics.npz", "validation.json")


#: zlib level of the PNGs: faster than Pillow's default 6 for slightly larger files.
PNG_COMPRESSION = 3


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes (rendered by the Agg backend, no pyplot state), drawn once:
    every figure sets its own margins (`subplots_adjust` or a constrained layout), so no
    tight bounding box is computed (that costs a second full layout of every text)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": PNG_COMPRESSION})
    return buf.getvalue()


def check_output(out: Path, run: bool = False) -> Path:
    """Make sure `out` is (or can become) a folder we may write in, without creating anything:
    a temporary folder is made and removed in the nearest existing ancestor. Call it before any
    long work, so a bad output folder fails at once with one clear line. With `run`, `out`
    is to be replaced by a run folder, so it must not hold anything but a previous run."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RotoridError(f"{out}: exists and is not a folder; choose another output folder with --out")
    if run and (out.name in ("", ".", "..") or out.resolve() in (Path.cwd(), *Path.cwd().parents)):
        raise RotoridError(
            f"{out}: is the current folder or holds it, and --out is replaced whole; give a folder name, e.g. results"
        )
    if run and out.is_dir():
        other = sorted(p.name for p in out.iterdir() if not _run_file(p))
        if other:
            raise RotoridError(
                f"{out}: holds files that are not a rotorid run ({', '.join(other[:3])}"
                f"{', …' if len(other) > 3 else ''}); choose a new or empty folder with --out"
            )
    anc = out.parent if run else out  # a run folder is built beside `out`, then swapped in
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise RotoridError(f"{out}: {anc} is not a folder; choose another output folder with --out")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".rotorid-probe-", dir=anc))
    except OSError as e:
        raise RotoridError(
            f"{out}: cannot write here ({e.strerror or e}); choose another output folder with --out"
        ) from None
    return out


def check_writable(out: Path) -> Path:
    """`check_output`, then create the folder."""
    out = check_output(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RotoridError(
            f"{out}: cannot write here ({e.strerror or e}); choose another output folder with --out"
        ) from None
    return out


def _run_file(p: Path) -> bool:
    return p.is_file() and (p.name in RUN_FILES or p.suffix == ".png") and not p.is_symlink()


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def write_folder(out: Path, files: dict[str, bytes]) -> dict[str, Path]:
    """Replace the folder `out` by one holding exactly `files` (name -> content), atomically:
    everything is written into a temporary folder beside `out`, which then takes its place (an
    atomic exchange where the system has one), so a reader — or a crash — sees either the
    previous run or the new one, never a mix or a half-written file."""
    out = check_output(Path(out), run=True)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RotoridError(
            f"{out}: cannot write here ({e.strerror or e}); choose another output folder with --out"
        ) from None
    with locked(out):  # another process writing `out` holds its temporary folders: never remove them
        check_output(out, run=True)  # what it wrote meanwhile is a run too
        _write_folder(out, files)
    return {name: out / name for name in files}


def _write_folder(out: Path, files: dict[str, bytes]) -> None:
    """`write_folder` under the output's lock."""
    # the name is chosen before the folder exists, so an interrupt at any moment leaves nothing behind
    tmp = out.parent / f".{out.name}.new-{uuid.uuid4().hex[:12]}"
    for stale in (*out.parent.glob(f".{out.name}.new-*"), *out.parent.glob(f".{out.name}.old-*")):
        shutil.rmtree(stale, ignore_errors=True)  # left by a run killed outright (SIGKILL, power loss)
    try:
        tmp.mkdir(mode=0o700)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        os.chmod(tmp, 0o777 & ~_umask())  # created 0700 while filled; give the folder the usual permissions
        for name in files:
            os.chmod(tmp / name, 0o666 & ~_umask())
        if not out.exists():
            os.rename(tmp, out)
        elif _exchange(tmp, out):
            shutil.rmtree(tmp)  # now the previous run
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / "run")
            os.rename(tmp, out)
            shutil.rmtree(old)
    except OSError as e:  # a full disk (ENOSPC), a file size limit (EFBIG, ulimit -f), ...
        shutil.rmtree(tmp, ignore_errors=True)
        raise RotoridError(
            f"{out}: could not write the run ({e.strerror or e}); the previous contents are kept"
        ) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _flatten(d: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, np.ndarray]]:
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flatten(v, f"{prefix}{k}/")
            continue
        a = np.asarray(v)
        if a.dtype != object:  # figures draw numbers, flags and labels only
            yield f"{prefix}{k}", a


def diagnostics_bytes(diagnostics: dict[str, Any]) -> bytes:
    """`Result.diagnostics` (nested dicts of arrays, numbers, flags, labels) as a compressed
    .npz, keys joined by '/'; read back with `load_diagnostics`."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **dict(_flatten(diagnostics)))
    return buf.getvalue()


#: Most bytes the arrays of a diagnostics.npz may declare in all (a 10⁶-sample run: ~0.2 GB).
DIAGNOSTICS_MAX = 2 << 30


def check_npz(path: Path, limit: int = DIAGNOSTICS_MAX) -> None:
    """Read each member's .npy header (not its data) and refuse, in one line, an archive that
    is not one, holds objects, or declares arrays larger than its members or `limit` in all
    (numpy allocates what a header declares before reading the data)."""
    import zipfile

    from rotorid.util import regular_file

    regular_file(path, "diagnostics.npz")
    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read(f)
                n = math.prod(int(d) for d in shape) * dtype.itemsize
                if dtype.hasobject or n > info.file_size:
                    raise ValueError(f"member {info.filename[:60]!r} declares {n} bytes in {info.file_size}")
                total += n
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise RotoridError(f"{path}: not a rotorid diagnostics.npz ({clip(e, 120)}); run identify again") from None
    if total > limit:
        raise RotoridError(f"{path}: declares {total} bytes of arrays (at most {limit}); run identify again")


def load_diagnostics(path: Path) -> dict[str, Any]:
    """The diagnostics saved by `write_run` (scalars as Python numbers/strings), checked first
    (`check_npz`)."""
    check_npz(path)
    out: dict[str, Any] = {}
    with np.load(path, allow_pickle=False) as z:
        for key in z.files:
            *parents, leaf = key.split("/")
            node = out
            for p in parents:
                node = node.setdefault(p, {})
            a = z[key]
            node[leaf] = a.item() if a.ndim == 0 else a
    return out


def write_run(
    result: Result,
    out: Path,
    figures: dict[str, Figure] | None = None,
    truth: Truth | None = None,
    title: str | None = None,
) -> dict[str, Path]:
    """Replace the folder `out` by this run: `params.json`, `diagnostics.npz` (what the figures
    draw, when the result has diagnostics), `<name>.png` per figure and `report.html`.

    The folder is checked first (without creating it); everything is rendered in memory and
    the folder swapped in by `write_folder`, so a failure leaves the previous run whole (and
    no folder if there was none). Returns the paths written (figure names, then 'params',
    'diagnostics' if written, and 'report')."""
    from rotorid.report.html import render_html

    out = check_output(Path(out), run=True)  # fail fast, before the (slow) figures
    pngs = {name: png_bytes(fig) for name, fig in (figures or {}).items()}
    images = {name: base64.b64encode(data).decode() for name, data in pngs.items()}
    files = {f"{name}.png": data for name, data in pngs.items()}
    files["params.json"] = (result.to_json() + "\n").encode()
    if result.diagnostics:
        files["diagnostics.npz"] = diagnostics_bytes(result.diagnostics)
    files["report.html"] = render_html(result, images, truth, title).encode()
    paths = write_folder(out, files)
    keys = {"params.json": "params", "diagnostics.npz": "diagnostics", "report.html": "report"}
    return {keys.get(name, name.removesuffix(".png")): p for name, p in paths.items()}


def redraw(run: Path, figures: Callable[[Result], dict[str, Figure]] | None = None) -> dict[str, Path]:
    """Draw a saved run's figures and report.html again from its params.json and
    diagnostics.npz alone (no logs): e.g. after a change to the figure code. `figures`
    defaults to the method's, from the registry."""
    from rotorid.registry import method
    from rotorid.result import Result

    run = Path(run)
    result = Result.load(run / "params.json")
    diag = run / "diagnostics.npz"
    if not diag.is_file():
        raise RotoridError(
            f"{run}: no diagnostics.npz beside params.json, so no figure data to draw from; run identify again"
        )
    result.diagnostics = load_diagnostics(diag)
    draw = figures or method(result.method).load("figures")
    return write_run(result, run, draw(result))


def write_index(
    out: Path, entries: list[IndexEntry], missing: dict[str, str] | None = None, title: str = "rotorid demo"
) -> Path:
    """Write `out/report.html`, the page gathering several runs (see `html.render_index`)."""
    from rotorid.report.html import render_index

    html = render_index(entries, missing or {}, title)
    check_writable(Path(out))
    path = Path(out) / "report.html"
    atomic_write_text(path, html)
    return path
