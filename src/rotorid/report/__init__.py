"""Reports: matplotlib figures per method (`rotorid.report.<method>`), and `write_run`, which
writes params.json, the figures as PNG and a self-contained report.html for one run."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

from rotorid.util import atomic_write, atomic_write_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from rotorid.result import Result, Truth


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def write_run(
    result: Result, out: Path, figures: dict[str, Figure] | None = None, truth: Truth | None = None
) -> dict[str, Path]:
    """Write `params.json`, `<name>.png` per figure and `report.html` into `out`.

    Each file is written to a temporary name and renamed into place, so an interrupted run
    leaves no half-written file. Returns the paths written.
    """
    from rotorid.report.html import render_html

    out = Path(out)
    written: dict[str, Path] = {}
    images: dict[str, str] = {}
    for name, fig in (figures or {}).items():
        data = png_bytes(fig)
        atomic_write(out / f"{name}.png", lambda p, d=data: p.write_bytes(d))
        images[name] = base64.b64encode(data).decode()
        written[name] = out / f"{name}.png"
    result.save(out / "params.json")
    written["params"] = out / "params.json"
    atomic_write_text(out / "report.html", render_html(result, images, truth))
    written["report"] = out / "report.html"
    return written
