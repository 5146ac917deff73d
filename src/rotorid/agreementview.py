"""What `rotorid compare` shows: the runs' estimates of each shared quantity side by side with
each pair's combined-σ z, then one line per disagreement naming the run to trust and why."""

from __future__ import annotations

import math
from typing import Any

from rotorid.errors import shown


def agreement_lines(rows: list[Any], notes: list[str], runs: list[str]) -> list[Any]:
    """Two Rich tables (each quantity with every run's value ± σ and verdict, columns in the
    order of `runs`; each pair's z) and the lines under them (caveats, disagreements, notes)."""
    from rich.table import Table

    from rotorid.agreement import Z_AGREE

    tab = Table(title="the same quantities by several runs", title_justify="left")
    tab.add_column("quantity", style="bold")
    for run in runs:
        tab.add_column(shown(run), justify="right")
    pairs = Table(title=f"pairs: z = difference over the combined σ (agree within ±{Z_AGREE:g})", title_justify="left")
    for col in ("quantity", "runs", "z", ""):
        pairs.add_column(col, justify="right" if col == "z" else "left")
    out: list[Any] = [tab, pairs]
    for r in rows:
        by = {e.run: e for e in r.entries}
        cells = [f"{by[run].value:.4g} ± {by[run].std:.2g} ({by[run].verdict})" if run in by else "" for run in runs]
        tab.add_row(f"{r.name} ({r.unit})", *cells)
        for p in r.pairs:
            word = "[green]agree[/]" if p.agree else f"[red]disagree[/]: trust {shown(p.trust or 'neither')}"
            pairs.add_row(r.name, f"{shown(p.a)} – {shown(p.b)}", _z(p.z), word)
        out += [f"[dim]{r.name}: {shown(c)}[/]" for c in r.caveats]
    bad = [(r, p) for r in rows for p in r.pairs if not p.agree]
    for r, p in bad:
        pick = f"trust {shown(p.trust)}" if p.trust else "trust neither"
        out.append(
            f"[bold red]disagree[/] {r.name}, {shown(p.a)} vs {shown(p.b)} (z {_z(p.z)}): {pick} — {shown(p.why)}"
        )
    n = sum(len(r.pairs) for r in rows)
    out.append(f"{n - len(bad)} of {n} pairs agree within ±{Z_AGREE:g} combined σ" if n else "no quantity in common")
    out += [f"note: {shown(t)}" for t in notes]
    return out


def _z(z: float) -> str:
    return f"{z:+.2f}" if math.isfinite(z) else "no σ"
