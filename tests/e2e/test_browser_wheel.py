"""The installed tool in a real browser: ``rolloutscope app`` from the session's wheel (``installed_wheel``,
tests/installed_wheel.py), started from an empty folder, against Debian's headless Chromium.

``rolloutscope app PATH`` opens the Overview of PATH; ``rolloutscope app`` opens the bundled sample. Both
use the bundled Streamlit settings (the sidebar's own page list, not Streamlit's) and the bundled pages
find each other. Skips when Chromium is missing, except with CI=true where it fails.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from live_server import free_port, serve
from test_browser import metric_value, nav, no_exceptions, open_overview, settle

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.browser, pytest.mark.wheel]


def test_the_installed_app_opens_path_and_the_sample_from_an_empty_folder(installed_wheel, browser, tmp_path):
    run = tmp_path / "runs" / "exp1"
    shutil.copytree(REPO / "sample_data" / "verl", run)  # two step files of 45 rows
    empty, home = tmp_path / "empty", tmp_path / "home"
    empty.mkdir()
    home.mkdir()
    env = installed_wheel.env(HOME=str(home))
    options = ["--server.headless", "true", "--server.fileWatcherType", "none"]

    port = free_port()
    command = [str(installed_wheel.rolloutscope), "app", "../runs/exp1", "--port", str(port), *options]
    with serve(command, port=port, cwd=empty, env=env, log_path=tmp_path / "path.log") as url:
        context, page = open_overview(browser, url)
        assert (metric_value(page, "Rows"), metric_value(page, "Runs"), metric_value(page, "Steps")) == ("90", "1", "2")
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.locator('[data-testid="stSidebarNav"]').count() == 0  # the bundled config hides Streamlit's list
        links = sidebar.locator('[data-testid="stPageLink-NavLink"]')
        assert links.first.inner_text().strip() == "Overview"
        assert links.count() == 1 + len(list((REPO / "pages").glob("*.py")))
        nav(page, "Format failures")  # a bundled page, found from the bundled Overview
        page.get_by_role("heading", name="Format failures").wait_for(state="visible")
        settle(page)
        no_exceptions(page)
        context.close()

    port = free_port()
    command = [str(installed_wheel.rolloutscope), "app", "--port", str(port), *options]
    with serve(command, port=port, cwd=empty, env=env, log_path=tmp_path / "sample.log") as url:
        context, page = open_overview(browser, url)
        assert metric_value(page, "Runs") == "6"  # ckpt-A, ckpt-B, gt-audit, lmms-eval, trl, verl
        page.get_by_text("sample data (").first.wait_for(state="visible")
        context.close()
