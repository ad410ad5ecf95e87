"""A real browser uploads a rollout row whose image points at a file on the server, outside the upload.

The row is kept and scored; the page says the reference was refused, and no pixel of the server's
image reaches the browser (the image is pure cyan, a colour neither the app nor its overlays use,
and the screenshots are searched for it). Skips like the other browser tests when Chromium is missing.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from scoring.rollouts.access import OUTSIDE_UPLOAD

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 60_000
CYAN = (0, 255, 255)

pytestmark = pytest.mark.browser


def settle(page) -> None:
    page.wait_for_timeout(250)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden", timeout=TIMEOUT_MS)


def cyan_pixels(png: bytes) -> int:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    return sum(count for count, (r, g, b) in image.getcolors(maxcolors=1 << 24)
               if r < 40 and g > 215 and b > 215)


@pytest.fixture(scope="module")
def hostile_upload(tmp_path_factory) -> tuple[Path, Path]:
    """``(rollout file to upload, the server's secret image it points at)``."""
    folder = tmp_path_factory.mktemp("server-files")
    secret = folder / "secret.png"
    Image.new("RGB", (800, 600), CYAN).save(secret)
    record = json.loads((REPO / "sample_data" / "rollouts_ckpt-A.jsonl").read_text().splitlines()[0])
    record["image"] = str(secret)
    upload = tmp_path_factory.mktemp("upload") / "hostile.jsonl"
    upload.write_text(json.dumps(record) + "\n")
    return upload, secret


def test_an_uploaded_row_cannot_show_a_server_image(server, browser, hostile_upload):
    upload, secret = hostile_upload
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server + "/")
    settle(page)
    page.locator('[data-testid="stSidebar"] label').filter(has_text="Upload files").click()
    file_input = page.locator('[data-testid="stSidebar"] input[type="file"]')
    file_input.wait_for(state="attached")
    file_input.set_input_files(str(upload))
    page.get_by_text("hostile.jsonl (1 rollouts)").first.wait_for(state="visible")
    settle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert cyan_pixels(page.screenshot(full_page=True)) == 0

    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]').filter(has_text="Inspector").first.click()
    page.get_by_role("heading", name="Inspector").wait_for(state="visible")
    settle(page)
    refusal = page.get_by_text(OUTSIDE_UPLOAD).first
    refusal.wait_for(state="visible")
    assert str(secret) in refusal.inner_text()  # the reference as written, and nothing about the file
    assert page.locator('[data-testid="stException"]').count() == 0
    shot = page.screenshot(full_page=True)
    assert cyan_pixels(shot) == 0, "pixels of the server's image reached the browser"
    context.close()
