"""The app in a real browser: Debian's headless Chromium driven by Playwright against ``streamlit run app.py``.

One journey on one live server (started by the ``server`` fixture on a free port):

1. the first screen on the sample data appears within :data:`FIRST_SCREEN_BUDGET_S` for a new visitor;
2. a rollout file is uploaded through the real ``<input type=file>``;
3. a format failure is opened in the inspector (select row -> switch page);
4. a tuning control is moved with the keyboard and the whole run is re-weighted;
5. a page is opened by its URL in a fresh session, and a histogram bar is selected to list its rows.

A second test opens every page at 1280×800 and 1440×900 (a screenshot of each at 1280×800) and fails
on a cut-off metric label, checkbox label or metric value, or on a number rendered with more than
:data:`MAX_DECIMALS` digits after the point; a third opens the Inspector's row link in a fresh
browser context and finds the row.

A fourth sweeps the Gallery at 1280×800 and follows a tile's link into the Inspector, in the same
tab and in a fresh browser.

Screenshots go to a temporary folder; four are copied to ``docs/screenshots/`` when
ROLLOUTSCOPE_UPDATE_SCREENSHOTS=1.
Skips when /usr/bin/chromium is missing, except with CI=true where it fails. The first-screen budget
is judged unless the machine is oversubscribed (load average above the CPU count), where the figures
are reported as a warning instead; ROLLOUTSCOPE_STRICT_TIMING=1 judges them always.
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

FIRST_SCREEN_BUDGET_S = 3.0
FIRST_SCREEN_VISITORS = 5
TIMEOUT_MS = 60_000
UPLOAD_ROWS = 80


def metric(page, label: str):
    return page.locator('[data-testid="stMetric"]').filter(has_text=label).first


def metric_value(page, label: str) -> str:
    return metric(page, label).locator('[data-testid="stMetricValue"]').inner_text().strip()


def settle(page) -> None:
    """Wait until the script run is over (Streamlit's status widget goes away)."""
    page.wait_for_timeout(250)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=TIMEOUT_MS)


def no_exceptions(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]').first.inner_text()


def nav(page, label: str) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text=re.compile(f"^{label}$")).first.click()


def shoot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


@pytest.fixture(scope="module")
def upload_file(tmp_path_factory) -> Path:
    lines = (REPO / "sample_data" / "rollouts_ckpt-A.jsonl").read_text().splitlines()[:UPLOAD_ROWS]
    for line in lines:
        json.loads(line)
    path = tmp_path_factory.mktemp("upload") / "my_run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def machine_busy() -> bool:
    """More runnable processes than CPUs: browser timings say little about the app then."""
    return os.getloadavg()[0] > (os.cpu_count() or 1)


def first_screen_seconds(browser, url: str) -> float:
    """A fresh visitor (new browser context): navigation start -> Overview metrics visible."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        started = time.perf_counter()
        page.goto(url + "/", wait_until="commit")
        metric(page, "Mean overall").wait_for(state="visible")
        return time.perf_counter() - started
    finally:
        context.close()


def open_overview(browser, url: str):
    """A fresh browser context on the Overview, once its metrics are drawn: ``(context, page)``."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url + "/")
    metric(page, "Mean overall").wait_for(state="visible")
    settle(page)
    no_exceptions(page)
    return context, page


def test_journey(server, browser, shots_dir, upload_file, publish_screenshot):
    from playwright.sync_api import expect  # imported here: conftest skips cleanly when playwright is missing

    # 1. first screen on the sample data. The very first visit also pays the server's imports (and
    # scoring the sample unless the disk cache has it) and Chromium's first compile of Streamlit's
    # bundle: it is reported, not judged. The budget applies to a new visitor of the running app:
    # the best of up to FIRST_SCREEN_VISITORS fresh browser contexts (timing on a shared machine is noisy).
    cold = first_screen_seconds(browser, server)
    visitors: list[float] = []
    while len(visitors) < FIRST_SCREEN_VISITORS and min(visitors, default=FIRST_SCREEN_BUDGET_S) >= FIRST_SCREEN_BUDGET_S:
        visitors.append(first_screen_seconds(browser, server))
    report = f"first screen: cold server {cold:.2f}s; new visitors {', '.join(f'{v:.2f}s' for v in visitors)}"
    print(report)
    if min(visitors) >= FIRST_SCREEN_BUDGET_S:
        if machine_busy() and os.environ.get("ROLLOUTSCOPE_STRICT_TIMING") != "1":
            warnings.warn(f"{report}: over the {FIRST_SCREEN_BUDGET_S:.0f}s budget, not judged because the machine "
                          f"is oversubscribed (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)", stacklevel=1)
        else:
            pytest.fail(f"{report}: over the {FIRST_SCREEN_BUDGET_S:.0f}s budget")

    context, page = open_overview(browser, server)
    assert metric_value(page, "Runs") == "6"  # ckpt-A, ckpt-B, gt-audit, lmms-eval, trl, verl
    overview = shoot(page, shots_dir, "overview")

    # 2. upload a rollout file through the real file input
    page.locator('[data-testid="stSidebar"] label').filter(has_text="Upload files").click()
    file_input = page.locator('[data-testid="stSidebar"] input[type="file"]')
    file_input.wait_for(state="attached")
    file_input.set_input_files(str(upload_file))
    page.get_by_text(f"my_run.jsonl ({UPLOAD_ROWS} rollouts)").first.wait_for(state="visible")
    settle(page)
    assert metric_value(page, "Rows") == str(UPLOAD_ROWS)
    no_exceptions(page)
    shoot(page, shots_dir, "uploaded")

    # 3. a format failure opened in the inspector
    nav(page, "Format failures")
    page.get_by_role("heading", name="Format failures").wait_for(state="visible")
    settle(page)
    no_exceptions(page)
    broke = page.locator('[data-testid="stCode"]').filter(has_text="^ format broke here").first
    broke.wait_for(state="visible")
    broke.evaluate("element => element.scrollIntoView({block: 'center'})")
    format_failures = shoot(page, shots_dir, "format_failures")
    header = page.locator('[data-testid="stText"]').filter(has_text=" · reason ").first.inner_text()
    row_id = header.split(" · ")[0]
    page.get_by_role("button", name="Open in inspector").first.click()
    page.wait_for_url(re.compile(r"/Inspector$"))
    settle(page)
    no_exceptions(page)
    page.get_by_text(row_id).first.wait_for(state="visible")
    shoot(page, shots_dir, "inspector")

    # 4. move a tuning control: the whole run is re-weighted
    nav(page, "Tuning")
    page.get_by_role("heading", name="Tuning").wait_for(state="visible")
    settle(page)
    before = metric_value(page, "mean overall")
    slider = page.get_by_role("slider", name="format_weight")
    assert slider.input_value() == "0"
    for step in ("0.05", "0.1", "0.15", "0.2"):  # one key at a time: a key pressed while the rerun of
        slider.press("ArrowRight")  # the last one redraws the slider may be lost
        expect(slider).to_have_value(step)
        settle(page)
    page.get_by_role("tab", name="Snippet").click()
    snippet = page.locator('[data-testid="stCode"]').filter(has_text="score_trace_response")  # not the link box
    snippet.filter(has_text="format_weight=0.2").first.wait_for(state="visible")
    settle(page)
    no_exceptions(page)
    assert slider.input_value() == "0.2"
    after = metric_value(page, "mean overall")
    assert after != before, "moving format_weight re-weights the run"
    assert metric(page, "mean overall").locator('[data-testid="stMetricDelta"]').count() == 1
    page.get_by_role("heading", name="Tuning").scroll_into_view_if_needed()
    tuning = shoot(page, shots_dir, "tuning")

    # the choice carries to the other pages of the same session
    nav(page, "Overview")
    settle(page)
    page.get_by_text("re-weighted with the Tuning options").first.wait_for(state="visible")
    context.close()

    # 5. a page opened by its URL in a fresh session
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server + "/Distributions")
    page.get_by_role("heading", name="Distributions").wait_for(state="visible")
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for(state="visible")
    settle(page)
    no_exceptions(page)
    page.get_by_text("sample data (").first.wait_for(state="visible")
    # selecting a bar lists its rows
    bar = page.locator('[data-testid="stPlotlyChart"] g.point path').first
    box = bar.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.up()
    heading = page.get_by_role("heading", name=re.compile(r"^[\d,]+ selected rows?$"))
    heading.wait_for(state="visible")
    assert int(heading.inner_text().split()[0].replace(",", "")) > 0
    page.locator('[data-testid="stDataFrame"]').first.wait_for(state="visible")
    settle(page)
    no_exceptions(page)
    shoot(page, shots_dir, "distributions_by_url")
    context.close()

    for shot in (overview, format_failures, tuning):
        publish_screenshot(shot)


# --------------------------------------------------------------------------- readable pages, links

#: Every page by its URL path (``/`` is the Overview) and the heading it shows.
PAGES = {
    "": "Overview", "Inspector": "Inspector", "Gallery": "Gallery", "Distributions": "Distributions", "Format_failures": "Format failures",
    "Tuning": "Tuning", "Playground": "Playground", "Compare": "Compare runs", "Groups": "GRPO groups",
    "Reviews": "Reviews", "Frames": "Coordinate frames",
}
VIEWPORTS = ({"width": 1280, "height": 800}, {"width": 1440, "height": 900})
MAX_DECIMALS = 12
LONG_NUMBER = re.compile(rf"\d\.\d{{{MAX_DECIMALS + 1},}}")
#: Elements whose text must never be cut off with an ellipsis.
UNCUT = ('[data-testid="stMetricLabel"]', '[data-testid="stMetricValue"]', '[data-testid="stCheckbox"] label',
         '[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]')
CUT_OFF = """selectors => {
    const cut = [];
    for (const selector of selectors) {
        for (const root of document.querySelectorAll(selector)) {
            for (const el of [root, ...root.querySelectorAll("*")]) {
                // text clipped by its box (the visually hidden checkbox input has no text)
                if ((el.innerText || "").trim() && el.scrollWidth > el.clientWidth + 1
                        && getComputedStyle(el).overflowX !== "visible") {
                    cut.push(`${selector}: ${root.innerText.trim()}`);
                    break;
                }
            }
        }
    }
    return cut;
}"""


def open_page(context, url: str, heading: str):
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.get_by_role("heading", name=heading).first.wait_for(state="visible")
    settle(page)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=TIMEOUT_MS)
    no_exceptions(page)
    return page


def test_every_page_is_readable_at_1280_and_1440(server, browser, shots_dir):
    """Each page is loaded once and judged at every width: the window is resized in place, as a
    user widening the browser would, so the layout reflows without a second script run."""
    problems = []
    first = VIEWPORTS[0]
    context = browser.new_context(viewport=first)
    try:
        for path, heading in PAGES.items():
            page = open_page(context, f"{server}/{path}", heading)
            for viewport in VIEWPORTS:
                if viewport is not first:
                    page.set_viewport_size(viewport)
                page.wait_for_timeout(500)  # charts and tables finish drawing (or reflowing)
                width = viewport["width"]
                if viewport is first:
                    shoot(page, shots_dir, f"{path or 'Overview'}_{width}")
                problems += [f"{width}px /{path}: cut off {cut}" for cut in page.evaluate(CUT_OFF, list(UNCUT))]
                text = page.locator("body").inner_text()
                problems += [f"{width}px /{path}: long number {m}" for m in LONG_NUMBER.findall(text)]
                no_exceptions(page)
            page.close()
    finally:
        context.close()
    assert not problems, "\n".join(problems)


def test_a_row_link_reopens_the_row_in_a_fresh_browser(server, browser):
    row_id = "rollouts_ckpt-B.jsonl:17"
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = open_page(context, f"{server}/Inspector?row={row_id}&run=ckpt-B", "Inspector")
        position = page.locator('[data-testid="stText"]').filter(has_text=" of ").filter(has_text=row_id).first
        position.wait_for(state="visible")
        assert f"row={row_id}" in page.url.replace("%3A", ":")
        # the page's own link, copied from its link box, opens the same view in another fresh browser
        page.get_by_role("button", name=re.compile("Link to this view")).click()
        link = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]').first.inner_text().strip()
        assert link.startswith(server + "/Inspector?") and "row=" in link
    finally:
        context.close()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = open_page(context, link, "Inspector")
        page.locator('[data-testid="stText"]').filter(has_text=" of ").filter(has_text=row_id).first.wait_for(
            state="visible")
        no_exceptions(page)
    finally:
        context.close()


# --------------------------------------------------------------------------- the gallery


def test_the_gallery_pages_through_tiles_and_a_tile_opens_its_row(server, browser, shots_dir, publish_screenshot):
    """The Gallery at 1280×800: a page of thumbnails (every picture loaded), the next page in the
    URL; a tile's link opens its row in the Inspector, here and in a fresh browser (a new tab)."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = open_page(context, f"{server}/Gallery?per_page=24&page=30", "Gallery")
        tiles = page.locator('[data-testid="stImageLink"] img')
        tiles.first.wait_for(state="visible")
        assert tiles.count() == 24
        page.wait_for_function("() => Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)",
                               timeout=TIMEOUT_MS)
        assert page.get_by_text("Page 30 of 80 · 697–720 of 1,907 rows").first.is_visible()
        assert not page.evaluate(CUT_OFF, list(UNCUT))
        shot = shoot(page, shots_dir, "gallery")
        publish_screenshot(shot)

        page.get_by_role("button", name="Next →").first.click()
        page.wait_for_url(re.compile(r"/Gallery\?.*page=31"))
        picture = page.locator('[data-testid="stImageLink"]').nth(3)
        expect(picture).to_have_attribute("href", re.compile(r"gallery_page=31"))  # the new page's tiles
        settle(page)
        no_exceptions(page)
        href = picture.get_attribute("href")
        assert picture.get_attribute("target") == "_blank" and href.startswith("Inspector?row=")
        row_id = parse_qs(urlsplit(href).query)["row"][0]
        link = page.locator('[data-testid="stMain"] [data-testid="stPageLink-NavLink"]').filter(
            has_text="Inspect").nth(3)
        assert link.get_attribute("href") == href  # the same address, opened in this tab
        link.click()
        page.wait_for_url(re.compile(r"/Inspector\?row="))
        page.get_by_role("heading", name="Inspector").wait_for(state="visible")
        settle(page)
        no_exceptions(page)
        page.locator('[data-testid="stText"]').filter(has_text=" of ").filter(has_text=row_id).first.wait_for(
            state="visible")
        back = page.locator('[data-testid="stPageLink-NavLink"]').filter(has_text="Back to the gallery, page 31")
        back.wait_for(state="visible")
        shoot(page, shots_dir, "inspector_from_gallery")
    finally:
        context.close()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:  # the picture's link in a new tab: a fresh session reopens the row with the gallery's order
        page = open_page(context, f"{server}/{href}", "Inspector")
        page.locator('[data-testid="stText"]').filter(has_text=" of ").filter(has_text=row_id).first.wait_for(
            state="visible")
        page.locator('[data-testid="stPageLink-NavLink"]').filter(has_text="Back to the gallery").wait_for(
            state="visible")
        no_exceptions(page)
    finally:
        context.close()
