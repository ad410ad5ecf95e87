"""The page URL as the view's address (Streamlit side of :mod:`dashboard.links`).

A page calls :func:`incoming` before drawing its widgets: it returns the URL's parameters when
they came from outside -- a link pasted into the address bar or opened in a fresh browser -- and
None when the page wrote them itself on an earlier run (or the URL has none, as after a switch
from the sidebar, when the session's own state stays). After drawing, :func:`publish` writes the
current view back into the URL and offers it in a "Link to this view" box with a copy button.
"""

from __future__ import annotations

import streamlit as st

from dashboard import links
from dashboard.state import plain

_WRITTEN = "_link_written_{page}"


def current() -> links.Params:
    """The URL's parameters (Streamlit's own left out)."""
    return links.params_of({key: st.query_params.get_all(key) for key in st.query_params})


def incoming(page: str) -> links.Params | None:
    """The URL's parameters when they are a link to apply, else None."""
    params = current()
    if not params or params == st.session_state.get(_WRITTEN.format(page=page)):
        return None
    return params


def show_notes(notes: list[str]) -> None:
    """What a link asked for that could not be restored (the view fell back to defaults there)."""
    for note in notes:
        st.warning(plain(note))


def publish(page: str, params: links.Params) -> None:
    """Make the URL hold ``params`` and remember that this page wrote them."""
    st.session_state[_WRITTEN.format(page=page)] = params
    if current() != params:
        st.query_params.from_dict(params)


def link_box(params: links.Params, *, where=None) -> None:
    """A "Link to this view" popover: the full URL in a code box (whose button copies it)."""
    base = st.context.url or ""
    target = where if where is not None else st
    with target.popover("Link to this view", icon=":material/link:"):
        st.code(base + links.query_string(params), language=None, wrap_lines=True)
        st.caption("Copy it with the button at the box's right. Opened anywhere -- a fresh browser too -- "
                   "it reopens this page with the same row, filters and options.")
