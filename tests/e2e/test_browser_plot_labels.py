"""Real-browser checks of what plotly draws: data labels stay text, and the overlay's legend stays clear.

A rollout file whose task and run are named like HTML links is uploaded through the
real file input; the Distributions page, faceted by task, must show the name
literally (no ``<a>`` element inside the plotly chart). The Inspector's overlay must
keep its legend below the image and out from under the mode bar. Reuses the
fixtures of ``tests/e2e/conftest.py`` (skipped without Debian's Chromium unless CI=true).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

TIMEOUT_MS = 90_000
ROWS = 24
TASK = '<a href="http://example.invalid">x</a>'
RUN = "<b>run</b>"


def settle(page) -> None:
    page.wait_for_timeout(300)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=TIMEOUT_MS)


def no_exceptions(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory) -> Path:
    rows = []
    for i, line in enumerate((REPO / "sample_data" / "rollouts_ckpt-A.jsonl").read_text().splitlines()[:ROWS]):
        row = json.loads(line)
        row["task_id"], row["run"] = (TASK if i % 2 else "plain_task"), RUN  # two facets: titled panels
        rows.append(json.dumps(row))
    path = tmp_path_factory.mktemp("hostile") / "hostile_names.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def upload(page, path: Path) -> None:
    page.locator('[data-testid="stSidebar"] label').filter(has_text="Upload files").click()
    file_input = page.locator('[data-testid="stSidebar"] input[type="file"]')
    file_input.wait_for(state="attached")
    file_input.set_input_files(str(path))
    page.get_by_text(f"{path.name} ({ROWS} rollouts)").first.wait_for(state="visible", timeout=TIMEOUT_MS)
    settle(page)


def nav(page, label: str) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text=re.compile(f"^{label}$")).first.click()
    settle(page)


def box(locator) -> dict:
    value = locator.bounding_box()
    assert value is not None
    return value


def overlaps(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and \
        a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def test_hostile_names_render_as_text_and_the_overlay_legend_stays_clear(server, browser, shots_dir, hostile_file):
    context = browser.new_context(viewport={"width": 1440, "height": 1400})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server + "/")
        page.locator('[data-testid="stSidebar"]').wait_for(state="visible")
        settle(page)
        upload(page, hostile_file)

        nav(page, "Distributions")
        page.get_by_role("combobox", name="Facet by").click()
        page.get_by_role("option", name="task", exact=True).click()
        settle(page)
        chart = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
        chart.wait_for(state="visible")
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots_dir / "hostile_distributions.png"))
        no_exceptions(page)
        # plotly turns <a href> in a label into an <a> element in its SVG: there must be none
        assert chart.locator("svg a").count() == 0
        assert page.locator('a[href*="example.invalid"]').count() == 0
        texts = chart.locator("svg text").evaluate_all("nodes => nodes.map(n => n.textContent)")
        assert any(TASK in t for t in texts), texts  # the name itself, as literal text
        assert not any(t.strip() == "x" for t in texts)  # not the link's text alone

        nav(page, "Inspector")
        page.get_by_role("heading", name="Overlay").wait_for(state="visible")
        plot = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first
        plot.wait_for(state="visible")
        plot.hover()  # the mode bar shows on hover
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots_dir / "hostile_inspector.png"))
        no_exceptions(page)
        assert plot.locator("svg a").count() == 0
        legend = box(plot.locator("g.legend"))
        image_area = box(plot.locator("g.cartesianlayer .bg, rect.nsewdrag").first)
        modebar = box(plot.locator(".modebar"))
        assert legend["y"] >= image_area["y"] + image_area["height"] - 1  # outside the plot, below it
        assert not overlaps(legend, modebar)
        assert not overlaps(legend, image_area)
        chart_box = box(plot)
        assert chart_box["y"] + chart_box["height"] - (legend["y"] + legend["height"]) < 40  # no blank under it
    finally:
        context.close()
