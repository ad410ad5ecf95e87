"""Dashboard tests run as the bundled config serves the app: on loopback, with no data roots."""

from __future__ import annotations

import pytest
from streamlit import config

from scoring.rollouts.access import ROOTS_ENV


@pytest.fixture(autouse=True)
def loopback_server(monkeypatch):
    """``server.address`` = 127.0.0.1 (the path box is on); a test may set another address."""
    monkeypatch.delenv(ROOTS_ENV, raising=False)
    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    yield
    config.set_option("server.address", before)
