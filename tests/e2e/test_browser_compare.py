"""Browser test of the Compare (and Groups) page: a live ``streamlit run app.py`` driven by headless Chromium.

Reuses the fixtures of ``tests/e2e/conftest.py`` (free port, health wait,
Debian's /usr/bin/chromium through playwright, never a downloaded browser;
skipped when Chromium is missing unless CI=true). Screenshots go to a temporary
folder (and to ``docs/screenshots/compare.png`` / ``groups.png`` when
ROLLOUTSCOPE_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

LOAD_TIMEOUT_MS = 90_000


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label`` (a combobox with that accessible name)."""
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()


def settle(page) -> None:
    """Wait until the script run is over (Streamlit's status widget goes away)."""
    page.wait_for_timeout(250)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=LOAD_TIMEOUT_MS)


def no_errors(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in page.inner_text("body")


def test_compare_page_picks_runs_and_shows_deltas(server, browser, shots_dir, publish_screenshot):
    page = browser.new_page(viewport={"width": 1500, "height": 2600})
    try:
        page.goto(f"{server}/Compare", wait_until="domcontentloaded")
        page.get_by_text("Joined on instance id", exact=False).first.wait_for(timeout=LOAD_TIMEOUT_MS)
        assert "45 instances matched: 180 of 180 rows of A, 180 of 180 rows of B" in page.inner_text("body")
        page.get_by_text("Δ overall (B − A)").first.wait_for()
        page.get_by_text("A: ckpt-A · step 300", exact=False).first.wait_for()
        no_errors(page)

        # pick another step for A: ckpt-A step 200 against ckpt-B step 300
        choose(page, "Step A", "step 200")
        page.get_by_text("A: ckpt-A · step 200", exact=False).first.wait_for(timeout=LOAD_TIMEOUT_MS)
        page.get_by_text("B: ckpt-B · step 300", exact=False).first.wait_for(timeout=LOAD_TIMEOUT_MS)
        body = page.inner_text("body")
        assert "Joined on instance id" in body and "Improved instances" in body
        assert "Unmatched rows" in body  # ckpt-A's gsm8k rows at step 200 have no partner at ckpt-B step 300
        assert "Ground truth" in body and "answer_gt" in body and "annotation_gt" in body
        assert page.locator('[data-testid="stImage"] img').count() >= 3  # the ground truth, A's and B's overlays
        settle(page)
        no_errors(page)
        page.wait_for_timeout(500)  # let the charts finish drawing
        shot = shots_dir / "compare.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        publish_screenshot(shot, "compare.png")

        # a join with no common rows: a clear message, the rows listed
        choose(page, "Run A", "verl")
        page.get_by_text("A: verl", exact=False).first.wait_for(timeout=LOAD_TIMEOUT_MS)
        choose(page, "Join rows on", "prompt + image")
        page.get_by_text("No common rows", exact=False).first.wait_for(timeout=LOAD_TIMEOUT_MS)
        assert "Unmatched rows" in page.inner_text("body")
        no_errors(page)
    finally:
        page.close()


def test_groups_page_shows_the_no_signal_share(server, browser, shots_dir, publish_screenshot):
    page = browser.new_page(viewport={"width": 1500, "height": 2400})
    try:
        page.goto(f"{server}/Groups", wait_until="domcontentloaded")
        page.get_by_text("No signal (all rewards equal)").first.wait_for(timeout=LOAD_TIMEOUT_MS)
        body = page.inner_text("body")
        assert "GRPO groups" in body and "by sample index" in body
        page.get_by_text("No-signal share under other weights and thresholds").first.wait_for()
        settle(page)
        no_errors(page)
        page.wait_for_timeout(500)
        shot = shots_dir / "groups.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        publish_screenshot(shot, "groups.png")
    finally:
        page.close()
