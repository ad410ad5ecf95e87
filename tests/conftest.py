"""Suite-wide settings: hypothesis judges behaviour, not speed (speed is measured under bench/),
so no example fails for taking long on a loaded machine; and every test ends with the table
snapshots it asked for written, so none is still being written into its folders when the next
test runs."""

from __future__ import annotations

import pytest
from hypothesis import settings

from scoring.datasets import snapshot as table_snapshot

settings.register_profile("rolloutscope", deadline=None)
settings.load_profile("rolloutscope")


@pytest.fixture(autouse=True)
def _snapshots_written():
    yield
    assert table_snapshot.wait_kept(timeout=120), "a table snapshot was still being written two minutes on"
