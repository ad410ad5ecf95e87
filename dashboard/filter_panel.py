"""The row filters as widgets: one panel, drawn by the Inspector and the Gallery alike.

Both pages narrow the run with the same widgets (task, annotation type, run, format reason, text
search, range sliders) and the same state, so a filter set on one holds on the other. Streamlit
forgets a widget's value when another page is shown, so each value is mirrored into a plain
session key (``rs_filter_*``) that survives the switch and is handed back to the widget on every
run (the pattern of :func:`dashboard.state.sync_widget`). The filtering itself is
:mod:`dashboard.inspector`'s; a link's filter parameters are :func:`dashboard.links.filter_fields`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from . import inspector, links, numbers
from .state import sync_widget

#: Range filters offered as sliders (those present with more than one value).
RANGE_COLUMNS = ("step", "score", "answer_reward", "annotation_reward", "format")
TEXT_LABEL = "Text search (response, task, prompt, recovered object, reasons, row id)"
TEXT_COLUMN = "text"
_WIDGET = "insp_f_{}"
_KEPT = "rs_filter_{}"


def widget_key(column: str) -> str:
    """The widget key of a filter (``text`` for the text search)."""
    return _WIDGET.format(column)


def _kept_key(column: str) -> str:
    return _KEPT.format(column)


def summaries(table: pd.DataFrame) -> tuple[dict[str, list[str]], dict[str, tuple[float, float]]]:
    """``(choices per category column, bounds per range column)`` of ``table`` (memoised per table)."""
    return inspector.category_choices(table), inspector.numeric_bounds(table, RANGE_COLUMNS)


def full_range(column: str, bounds: tuple[float, float]) -> tuple:
    """What a slider spans: the steps present, or 0..1 for a reward."""
    lo, hi = bounds
    return (int(lo), int(hi)) if column == "step" else (0.0, 1.0)


def sliders(bounds: Mapping[str, tuple[float, float]]) -> dict[str, tuple]:
    """The range filters drawn as sliders (a column with a single value gets a caption instead)."""
    return {c: full_range(c, b) for c, b in bounds.items() if b[0] != b[1]}


def link_fields(choices, bounds) -> list[links.Field]:
    """The filters' link parameters (``task``, ``type``, ``runs``, ``reason``, ``q``, ranges)."""
    return links.filter_fields(choices, sliders(bounds))


def remember(column: str, value: Any) -> None:
    """Set a filter's value (a link applied): the widget shows it on this run and the next pages."""
    st.session_state[_kept_key(column)] = value
    st.session_state[widget_key(column)] = value


def apply_link_values(values: Mapping[str, Any], choices, bounds) -> None:
    """The filter values a decoded link holds become the panel's."""
    for column, key in links.INSPECTOR_CATEGORY_KEYS.items():
        if column in choices:
            remember(column, list(values[key]))
    remember(TEXT_COLUMN, values["q"])
    for column, full in sliders(bounds).items():
        chosen = values[column] or full
        remember(column, tuple(type(full[0])(v) for v in chosen))


def link_values(spec: inspector.InspectorFilter) -> dict[str, Any]:
    """A filter as the values :func:`dashboard.links.encode` writes for :func:`link_fields`."""
    values: dict[str, Any] = {"q": spec.text}
    for column, key in links.INSPECTOR_CATEGORY_KEYS.items():
        values[key] = getattr(spec, inspector.CATEGORY_FIELD_NAMES[column])
    for column, (lo, hi) in spec.ranges.items():
        values[column] = (lo, hi)
    return values


def _keep(column: str):
    def callback() -> None:
        st.session_state[_kept_key(column)] = st.session_state.get(widget_key(column))

    return callback


def _sync(column: str, valid) -> None:
    """Hand the widget its kept value (when it still fits the data)."""
    kept = st.session_state.get(_kept_key(column))
    if kept is not None:
        sync_widget(widget_key(column), valid(kept))


def _range_ok(held: Any, full: tuple) -> bool:
    return isinstance(held, (tuple, list)) and len(held) == 2 and full[0] <= held[0] <= held[1] <= full[1]


def panel(table: pd.DataFrame, choices, bounds, *, expanded: bool = True) -> inspector.InspectorFilter:
    """The filter widgets in a "Filters" expander; returns the filter they describe."""
    with st.expander("Filters", expanded=expanded):
        columns = st.columns(4)
        chosen = {}
        for i, (column, label) in enumerate(inspector.CATEGORY_FILTERS.items()):
            if column in choices:
                options = choices[column]
                _sync(column, lambda kept, options=options: [v for v in kept if v in options])
                chosen[column] = columns[i].multiselect(label, options, key=widget_key(column),
                                                        on_change=_keep(column))
        _sync(TEXT_COLUMN, str)
        search = st.text_input(TEXT_LABEL, key=widget_key(TEXT_COLUMN), on_change=_keep(TEXT_COLUMN))
        ranges = {}
        drawn = sliders(bounds)
        columns = st.columns(max(len(bounds), 1))
        for i, (column, (lo, _hi)) in enumerate(bounds.items()):
            if column not in drawn:
                columns[i].caption(f"{column}: all {numbers.number(lo)}")
                continue
            full = drawn[column]
            key = widget_key(column)
            _sync(column, lambda kept, full=full: tuple(kept) if _range_ok(kept, full) else full)
            if not _range_ok(st.session_state.get(key), full):
                st.session_state[key] = full  # first visit, or the data changed under a remembered range
            if column == "step":
                value = columns[i].slider("step", full[0], full[1], key=key, on_change=_keep(column))
            else:
                value = columns[i].slider(column, 0.0, 1.0, step=0.01, key=key, on_change=_keep(column))
            if tuple(value) != full:
                ranges[column] = (float(value[0]), float(value[1]))
    return inspector.InspectorFilter.of(chosen, ranges=ranges, text=search or "")


def filter_key(spec: inspector.InspectorFilter) -> str:
    """A stable text naming a filter (for memo and widget keys)."""
    return repr((spec.tasks, spec.annotation_types, spec.runs, spec.reasons, sorted(spec.ranges.items()),
                 spec.text.strip()))


__all__: Sequence[str] = [
    "RANGE_COLUMNS",
    "apply_link_values",
    "filter_key",
    "link_fields",
    "link_values",
    "panel",
    "remember",
    "sliders",
    "summaries",
    "widget_key",
]
