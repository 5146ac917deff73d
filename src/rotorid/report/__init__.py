"""Reports: matplotlib figures per method (`rotorid.report.<method>`), `write_run`, which writes
params.json, the figures as PNG and a self-contained report.html for one run, and
`write_index`, the demo's page that gathers several runs."""

from __future__ import annotations

import base64
import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

from rotorid.errors import RotoridError
from rotorid.util import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.report.html import IndexEntry
    from rotorid.result import Result, Truth


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes; the figure is closed afterwards (figures are rendered once)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def check_output(out: Path) -> Path:
    """Make sure `out` is (or can become) a folder we may write in, without creating anything:
    a temporary folder is made and removed in the nearest existing ancestor. Call it before any
    long work, so a bad output folder fails at once with one clear line."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RotoridError(f"{out}: exists and is not a folder; choose another output folder with --out")
    anc = out
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


def write_run(
    result: Result,
    out: Path,
    figures: dict[str, Figure] | None = None,
    truth: Truth | None = None,
    title: str | None = None,
) -> dict[str, Path]:
    """Write `params.json`, `<name>.png` per figure and `report.html` into `out`.

    The folder is checked first (without creating it); everything is then rendered in memory
    and each file written to a temporary name and renamed into place, so a failure leaves no
    half-written file (and no folder if it did not exist before). Returns the paths written
    (figure names, then 'params' and 'report').
    """
    from rotorid.report.html import render_html

    out = check_output(Path(out))  # fail fast, before the (slow) figures
    pngs = {name: png_bytes(fig) for name, fig in (figures or {}).items()}
    images = {name: base64.b64encode(data).decode() for name, data in pngs.items()}
    html = render_html(result, images, truth, title)
    params = result.to_json() + "\n"
    check_writable(out)
    written: dict[str, Path] = {}
    for name, data in pngs.items():
        atomic_write_bytes(out / f"{name}.png", data)
        written[name] = out / f"{name}.png"
    atomic_write_text(out / "params.json", params)
    written["params"] = out / "params.json"
    atomic_write_text(out / "report.html", html)
    written["report"] = out / "report.html"
    return written


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
