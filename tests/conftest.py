"""Suite-wide settings: hypothesis judges behaviour, not speed (speed is measured under bench/),
so no example fails for taking long on a loaded machine."""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("rolloutscope", deadline=None)
settings.load_profile("rolloutscope")
