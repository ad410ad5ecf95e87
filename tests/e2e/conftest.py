"""Fixtures for the browser test: a live ``streamlit run app.py`` on a free port and headless Chromium."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from live_server import free_port, serve

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def require_chromium() -> str:
    """The browser path; skips (locally) or fails (CI=true) when it is missing."""
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing: install Debian's chromium package to run the browser test"
        if in_ci():
            pytest.fail(f"{reason} (CI=true: the browser test may not be skipped in CI)")
        pytest.skip(reason)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if in_ci():
            pytest.fail("the playwright package is not installed (CI=true)")
        pytest.skip("the playwright package is not installed")
    return CHROMIUM


@pytest.fixture(scope="module")
def chromium_path() -> str:
    return require_chromium()


@pytest.fixture(scope="module")
def server(chromium_path, tmp_path_factory):
    """``streamlit run app.py --server.headless true`` on a free port; yields the base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("streamlit") / "server.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1", STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    env.pop("ROLLOUTSCOPE_DATA", None)
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
    ]
    with serve(command, port=port, cwd=REPO, env=env, log_path=log_path) as url:
        yield url


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


#: Set to 1 to refresh the README's screenshots in docs/screenshots/ from a test run;
#: otherwise a test run never writes into the repository.
UPDATE_SCREENSHOTS_ENV = "ROLLOUTSCOPE_UPDATE_SCREENSHOTS"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _publish_screenshot(shot: Path, name: str | None = None) -> None:
    if os.environ.get(UPDATE_SCREENSHOTS_ENV) == "1":
        DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_SCREENSHOTS / (name or shot.name))


@pytest.fixture
def publish_screenshot():
    """``publish(shot, name=None)``: copy to docs/screenshots/, only when UPDATE_SCREENSHOTS_ENV=1."""
    return _publish_screenshot


@pytest.fixture(scope="module")
def shots_dir():
    """Screenshots go to a fresh temporary folder (printed); see publish_screenshot for docs/."""
    path = Path(tempfile.mkdtemp(prefix="rolloutscope-shots-"))
    yield path
    print(f"screenshots in {path}")
    if os.environ.get("ROLLOUTSCOPE_KEEP_SHOTS") != "1":
        shutil.rmtree(path, ignore_errors=True)
