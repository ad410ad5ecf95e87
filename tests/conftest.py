"""Suite-wide settings: hypothesis judges behaviour, not speed (speed is measured under bench/),
so no example fails for taking long on a loaded machine; the app's cache folder is the test
process's own; and every test ends with the table snapshots it asked for written, so none is
still being written into its folders when the next test runs. Also the one wheel the suite
builds (``installed_wheel``), shared by every test that needs it."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest
from hypothesis import settings

from scoring.datasets import snapshot as table_snapshot

settings.register_profile("rolloutscope", deadline=None)
settings.load_profile("rolloutscope")


@pytest.fixture(autouse=True, scope="session")
def _app_cache_of_this_session(tmp_path_factory):
    """The app's cache folder (scored datasets, snapshots, thumbnails) is this test process's own,
    never the user's ``~/.cache``: a test neither reads what an earlier run left there nor leaves
    anything behind. Tests that need another set ``ROLLOUTSCOPE_CACHE_DIR`` themselves."""
    from dashboard.loading import CACHE_DIR_ENV

    saved = os.environ.get(CACHE_DIR_ENV)
    os.environ[CACHE_DIR_ENV] = str(tmp_path_factory.mktemp("app-cache"))
    yield
    if saved is None:
        os.environ.pop(CACHE_DIR_ENV, None)
    else:
        os.environ[CACHE_DIR_ENV] = saved


@pytest.fixture(autouse=True)
def _snapshots_written():
    yield
    assert table_snapshot.wait_kept(timeout=120), "a table snapshot was still being written two minutes on"


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory):
    """This checkout's wheel, built once per session and installed into a fresh venv
    (:mod:`installed_wheel`). Skips without Cython or a C compiler, except with CI=true where it fails."""
    from installed_wheel import build_and_install, built_wheels_folder

    missing = [what for what, found in (("Cython (the test extra)", importlib.util.find_spec("Cython")),
                                        ("a C compiler", shutil.which("cc") or shutil.which("gcc"))) if not found]
    if missing:
        reason = f"building the wheel needs {' and '.join(missing)}"
        if os.environ.get("CI", "").strip().lower() == "true":
            pytest.fail(f"{reason} (CI=true: the wheel test may not be skipped)")
        pytest.skip(reason)
    installed = build_and_install(tmp_path_factory.mktemp("wheel"), built_wheels_folder())
    print(f"wheel built (or found built from the same sources) in {installed.build_seconds:.0f} s, "
          f"installed in {installed.install_seconds:.0f} s")
    return installed
