"""Figures are drawn once, with the margins each figure sets itself (no tight bounding box in
`png_bytes`): so every figure of every method must keep its labels, ticks and legends inside
its own canvas. Checked on the delay run of the real logs and on short simulated runs of tls
(with its cross-validation) and online."""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from rotorid.io import load
from rotorid.methods import delay, online, tls
from rotorid.report import png_bytes
from rotorid.sim import scenarios
from rotorid.vehicle import Vehicle


def _overflow(fig: Figure) -> float:
    """How far (inches) the drawn artists reach outside the canvas; 0 when all fit."""
    box = fig.get_tightbbox(FigureCanvasAgg(fig).get_renderer())
    w, h = fig.get_size_inches()
    return float(max(0.0, -box.x0, -box.y0, box.x1 - w, box.y1 - h))


def _check(figs: dict[str, Figure]) -> None:
    assert figs
    for name, fig in figs.items():
        assert _overflow(fig) <= 0.02, f"{name}: drawn {_overflow(fig):.2f} in outside its canvas"  # 2 px
        png = Image.open(io.BytesIO(png_bytes(fig, dpi=50)))
        assert png.size == tuple(round(50 * s) for s in fig.get_size_inches()), name


def test_overflow_is_measured() -> None:
    """The check can fail: a y label pushed off the left edge is caught."""
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.set_ylabel("a long label")
    fig.subplots_adjust(left=0.02)
    assert _overflow(fig) > 0.1


def test_delay_figures_fit_their_canvas(cf_logs) -> None:
    fl = {k: load(f"{cf_logs[n]}@{w}") for k, n, w in (("t", "log10", "35:65"), ("rp", "log15", "55:90"))}
    fl["y"] = load(f"{cf_logs['log16']}@32:38,45:49")
    r = delay.identify(fl["t"], Vehicle.preset("crazyflie"), roll_pitch=fl["rp"], yaw=fl["y"])
    from rotorid.report.delay import figures

    figs = figures(r)
    _check(figs)
    labels = [x.get_text() for f in figs.values() for ax in f.axes for x in ax.get_xticklabels() + ax.get_yticklabels()]
    assert labels and not any("$" in s for s in labels)  # no mathtext: its parser costs a fresh process ~0.2 s


def test_tls_and_validation_figures_fit_their_canvas() -> None:
    from rotorid.report import tls as tls_report
    from rotorid.report import validate as val_report
    from rotorid.validate import validate

    sc = scenarios.run("six-config-a", seed=0, duration=10.0)
    r = tls.identify({"A": [sc.flights["train"]]}, sc.vehicle)
    _check(tls_report.figures(r))
    _check(val_report.figures(validate(r, [sc.flights["test"]])))


@pytest.mark.slow
def test_online_figures_fit_their_canvas() -> None:
    from rotorid.report import online as online_report

    sc = scenarios.run("kwon-payload", seed=0, duration=10.0)
    r = online.identify(sc.flights["trajectory"], sc.vehicle)
    assert np.isfinite(r.value("I_xx"))
    _check(online_report.figures(r))
