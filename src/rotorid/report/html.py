"""The self-contained report.html (figures embedded as base64 PNG; no external resources)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, select_autoescape

if TYPE_CHECKING:
    from rotorid.result import Result, Truth

_env = Environment(loader=PackageLoader("rotorid.report", "templates"), autoescape=select_autoescape(["html"]))


def render_html(result: Result, images: dict[str, str], truth: Truth | None = None) -> str:
    """Render the report for one result; `images` maps figure name -> base64 PNG."""
    rows = []
    for name, e in result.params.items():
        tv = truth.params.get(name) if truth else None
        err = 100.0 * (e.value - tv) / abs(tv) if tv not in (None, 0) else None
        obs = result.observability.get(name, {})
        rows.append({"name": name, "e": e, "truth": tv, "err": err, "obs": obs})
    return _env.get_template("report.html.j2").render(result=result, rows=rows, images=images, truth=truth)
