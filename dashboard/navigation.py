"""The sidebar's page list: "Overview" for ``app.py``, then every page in ``pages/`` by its number.

Streamlit's own list names the main page after its file ("app"). ``st.navigation`` could rename it,
but while a ``pages/`` folder exists Streamlit runs a deep link such as ``/Compare`` straight from
that folder until some session has run ``app.py`` -- and then shows its own list anyway. So the app
keeps Streamlit's page routing (every ``/<Page>`` URL works on a fresh server), hides Streamlit's list
(``client.showSidebarNavigation = false``) and draws this one with ``st.page_link`` on every page.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from .sources import APP_ROOT

ROOT = APP_ROOT  # pages/ beside app.py: a checkout's top level, or an installed wheel's app bundle
MAIN_PAGE = ("app.py", "Overview")


def page_label(path: str | Path) -> str:
    """A page's name as Streamlit derives its URL: ``pages/4_Format_failures.py`` -> "Format failures"."""
    stem = Path(path).stem
    return re.sub(r"^[0-9]+[_ -]*", "", stem).replace("_", " ").strip() or stem


def _order(path: Path) -> tuple[int, str]:
    number = re.match(r"^[0-9]+", path.stem)
    return (int(number.group()) if number else 1_000_000, path.stem)


@functools.lru_cache(maxsize=4)
def pages(root: Path = ROOT) -> tuple[tuple[str, str], ...]:
    """``(script path relative to the app, label)`` of every page, the Overview first (the folder is
    read once per process, not on every rerun of every page)."""
    found = sorted((p for p in (root / "pages").glob("*.py") if not p.name.startswith(("_", "."))), key=_order)
    return (MAIN_PAGE, *((f"pages/{p.name}", page_label(p)) for p in found))


def sidebar() -> None:
    """The page list at the top of the sidebar. Page links resolve against the script Streamlit was
    started with; when that is not ``app.py`` (a test running one page file) there is no list."""
    with st.sidebar.container(key="rs_pages"):
        try:
            for path, label in pages():
                st.page_link(path, label=label)
        except StreamlitPageNotFoundError:
            return
        st.divider()


__all__ = ["MAIN_PAGE", "page_label", "pages", "sidebar"]
