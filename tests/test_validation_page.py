"""docs/validation.md, the page "How far to trust the numbers" that benchmarks/calibration.py
writes: the template's preamble and notes around the tables of the last full run."""

from __future__ import annotations

from conftest import REPO
from support.bench import load

cal = load("calibration")


def _around_tables(text: str) -> tuple[str, str]:
    """What a page holds before and after its calibration tables."""
    head, rest = text.split(cal.TABLES[0], 1)
    return head, rest.split(cal.TABLES[1], 1)[1]


def test_a_runs_tables_replace_the_templates_and_keep_its_text() -> None:
    runs = {
        "delay/eschmann-crazyflie": {
            s: {"params": {"tm": {"value": 0.07 + s * 1e-4, "std": 1e-4, "truth": 0.07}}} for s in (0, 1)
        }
    }
    tables = cal.markdown(cal.aggregate(runs), {"seeds": 1, "wall_s": 60.0, "workers": 2, "python": "3"})
    page = cal.validation_page(tables)
    template = cal.TEMPLATE.read_text()
    assert page.startswith(cal.GENERATED) and _around_tables(page) == _around_tables(cal.GENERATED + template)
    assert "\n## Calibration of the reported σ" in page and "\n### delay/eschmann-crazyflie\n" in page
    assert "| tm | 2 | +0.071 |" in page  # mean error +0.0714 % over the two seeds
    assert "| delay, eschmann-crazyflie (30) |" in template and "| delay, eschmann-crazyflie (30) |" not in page
    assert cal.validation_page() == cal.GENERATED + template


def test_only_a_full_run_rewrites_the_page() -> None:
    every = {c.name for c in cal.CASES}
    assert cal._full_run(every, cal.SEEDS)
    assert not cal._full_run(every, cal.SEEDS - 1)
    assert not cal._full_run(every - {"delay/eschmann-crazyflie"}, cal.SEEDS)


def test_the_committed_page_is_the_template_around_its_tables() -> None:
    """docs/validation.md is generated: edited by hand or left behind by a template change, it fails."""
    page = (REPO / "docs" / "validation.md").read_text()
    assert _around_tables(page) == _around_tables(cal.GENERATED + cal.TEMPLATE.read_text())


def test_the_readme_points_to_the_page() -> None:
    readme = (REPO / "README.md").read_text()
    start = readme.index("## How far to trust the numbers")
    section = readme[start : readme.index("\n## ", start)]
    assert "(docs/validation.md)" in section and "| --- |" not in section  # a summary, the tables are there
