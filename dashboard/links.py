"""Links that reopen a view (no Streamlit): a page's state as URL query parameters, and back.

A linkable page describes its state with a few :class:`Field` s. :func:`encode` writes the
fields that differ from their default (so a plain page URL stays plain); :func:`decode` reads a
link, checks every parameter against what the loaded data offers and, for a value that is
unknown, malformed or out of range, falls back to the default with a note -- never an exception.

Parameters are ``{name: [values]}`` (a name may repeat: ``?task=a&task=b``), the shape of
``st.query_params.get_all``. The page-specific field lists live here too, so what a link of each
page may hold is read in one place:

* Inspector: ``row`` (a row id) and ``run`` (its run, for data where row ids repeat), the
  filters ``task``, ``type``, ``runs``, ``reason``, ``q`` (text), ranges such as
  ``score=0..0.5`` and ``step=100..200``, ``sort`` and ``view``;
* Distributions: ``component``, ``facet``, ``bins``;
* Format failures: ``reason``, ``task``, ``run`` and ``page``;
* Gallery: ``mode``, ``sort`` (a column name), ``order``, ``page``, ``per_page`` and the
  Inspector's filters; an Inspector link opened from the gallery also holds the gallery's view
  as ``gallery_mode``, ``gallery_sort``, ...;
* Tuning: ``mode``, ``formula``, ``answer_weight``, ``annotation_weight``, ``format_weight``,
  ``solved_threshold``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pandas as pd
from pandas.api.types import is_hashable

from dashboard.row_lookup import row_positions

Params = dict[str, list[str]]

ONE, MANY, NUMBER, INTEGER, RANGE, TEXT = "one", "many", "number", "integer", "range", "text"
#: One of the choices, written and read exactly as it is (a column name).
NAME = "name"
#: Streamlit's own parameters: never part of a view.
RESERVED = frozenset({"embed", "embed_options"})
#: Separator of a range's two ends (``0.2..0.8``).
RANGE_SEPARATOR = ".."
#: Longest text a link may carry (a search string, a row id).
TEXT_LIMIT = 500
#: How many values of a many-valued parameter a note quotes.
QUOTED = 3


def slug(label: Any) -> str:
    """``'annotation reward, worst first'`` -> ``'annotation-reward-worst-first'``."""
    return re.sub(r"[^a-z0-9]+", "-", str(label).lower()).strip("-")


@dataclass(frozen=True)
class Field:
    """One parameter of a page's link.

    ``kind`` is :data:`ONE` (one of ``choices``, written as its slug), :data:`NAME` (one of
    ``choices``, written as it is), :data:`MANY` (any of
    ``choices``, written as is, repeated), :data:`NUMBER` / :data:`INTEGER` (within
    ``low``..``high``), :data:`RANGE` (``lo..hi`` within ``low``..``high``) or :data:`TEXT`.
    """

    key: str
    kind: str
    default: Any = None
    choices: Sequence[Any] = ()
    low: float = -math.inf
    high: float = math.inf
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.key


def params_of(query: Mapping[str, Any]) -> Params:
    """``{name: [values]}`` from a mapping whose values are strings or lists (reserved names dropped)."""
    out: Params = {}
    for key, value in query.items():
        if key in RESERVED:
            continue
        values = [value] if isinstance(value, str) else [str(v) for v in value]
        if values:
            out[str(key)] = values
    return out


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _show(value: Any) -> str:
    if value is None or value == () or value == []:
        return "none"
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, float) for v in value):
        return f"{value[0]:g}{RANGE_SEPARATOR}{value[1]:g}"
    return repr(value) if isinstance(value, str) else str(value)


def _quoted(values: Sequence[str]) -> str:
    shown = ", ".join(repr(v) for v in values[:QUOTED])
    return shown + (f" and {len(values) - QUOTED} more" if len(values) > QUOTED else "")


def _parse(field: Field, raw: list[str]) -> tuple[Any, str]:
    """``(value, problem)``; ``problem`` is '' when the value is usable (a MANY value keeps the
    known values and names the others)."""
    if field.kind == MANY:
        allowed = {str(c): c for c in field.choices}
        known = [allowed[v] for v in dict.fromkeys(raw) if v in allowed]
        unknown = [v for v in dict.fromkeys(raw) if v not in allowed]
        problem = f"{_quoted(unknown)} not in the loaded data" if unknown else ""
        return tuple(known), problem
    text = raw[-1]
    if len(text) > TEXT_LIMIT:
        return field.default, f"is longer than {TEXT_LIMIT} characters"
    if field.kind == TEXT:
        return text, ""
    if field.kind == NAME:
        if text in {str(c) for c in field.choices}:
            return text, ""
        return field.default, f"{text!r} is not one of the {len(field.choices)} choices here"
    if field.kind == ONE:
        by_slug = {slug(c): c for c in field.choices}
        by_text = {str(c): c for c in field.choices}
        if text in by_text:
            return by_text[text], ""
        if slug(text) in by_slug:
            return by_slug[slug(text)], ""
        choices = ", ".join(slug(c) for c in field.choices)
        return field.default, f"{text!r} is not one of: {choices}"
    try:
        if field.kind == NUMBER:
            value: Any = _number(text)
            ends = (value,)
        elif field.kind == INTEGER:
            value = int(text)
            ends = (value,)
        elif field.kind == RANGE:
            lo_text, sep, hi_text = text.partition(RANGE_SEPARATOR)
            if not sep:
                raise ValueError(text)
            value = (_number(lo_text), _number(hi_text))
            ends = value
            if value[0] > value[1]:
                return field.default, f"{text!r} starts above its end"
        else:
            raise ValueError(f"unknown field kind {field.kind!r}")
    except ValueError:
        expected = {NUMBER: "a number", INTEGER: "a whole number", RANGE: f"a range like 0{RANGE_SEPARATOR}1"}
        return field.default, f"{text!r} is not {expected.get(field.kind, 'valid')}"
    if any(end < field.low or end > field.high for end in ends):
        return field.default, f"{text!r} is outside {field.low:g}{RANGE_SEPARATOR}{field.high:g}"
    return value, ""


def decode(params: Mapping[str, Sequence[str]], fields: Sequence[Field]) -> tuple[dict[str, Any], list[str]]:
    """Every field's value from a link (its default when absent or invalid) and the notes to show."""
    values: dict[str, Any] = {}
    notes: list[str] = []
    for field in fields:
        raw = [str(v) for v in params.get(field.key, ())]
        if not raw:
            values[field.key] = field.default
            continue
        value, problem = _parse(field, raw)
        values[field.key] = value
        if problem:
            fallback = "ignored" if field.kind == MANY else f"using {_show(field.default)}"
            notes.append(f"The link's {field.name}: {problem}; {fallback}.")
    unknown = sorted(set(params) - {f.key for f in fields} - RESERVED)
    if unknown:
        names = ", ".join(unknown)
        notes.append(f"The link's parameter {names} is not used on this page; ignored." if len(unknown) == 1
                     else f"The link's parameters {names} are not used on this page; ignored.")
    return values, notes


def _written(field: Field, value: Any) -> list[str]:
    if field.kind == MANY:
        return [str(v) for v in value]
    if field.kind == ONE:
        return [slug(value)]
    if field.kind == RANGE:
        return [f"{value[0]:.10g}{RANGE_SEPARATOR}{value[1]:.10g}"]
    if field.kind == NUMBER:
        return [f"{float(value):.10g}"]
    return [str(value)]


def encode(values: Mapping[str, Any], fields: Sequence[Field]) -> Params:
    """The parameters of the fields whose value differs from the default (empty ones left out)."""
    out: Params = {}
    for field in fields:
        value = values.get(field.key, field.default)
        if value is None or value == field.default or (field.kind in (MANY, TEXT) and not value):
            continue
        out[field.key] = _written(field, value)
    return out


def query_string(params: Params) -> str:
    """``?a=1&b=x&b=y`` ('' without parameters)."""
    return "?" + urlencode(params, doseq=True) if params else ""


# --------------------------------------------------------------------------- rows


def resolve_row(table: pd.DataFrame, row: str | None, run: str | None = None) -> tuple[Any | None, str]:
    """The row a link names: ``(row_id, '')``, or ``(None, note)`` when it is not in the loaded
    data. ``run`` picks among rows that share the id (and is checked when the id is unique)."""
    if not row:
        return None, ""
    matches = table.index == row
    if not matches.any():
        return None, f"The link's row {row!r} is not in the loaded data; showing the default row."
    if run and "run" in table.columns:
        runs = table["run"].astype(object).where(table["run"].notna(), None).to_numpy()[matches]
        if run not in {str(r) for r in runs}:
            return None, f"The link's row {row!r} is not in run {run!r} of the loaded data; showing the default row."
    return row, ""


def row_run(table: pd.DataFrame, row_id: Any) -> str | None:
    """The run of a row, for its link (None when the table has no run for it)."""
    if "run" not in table.columns:
        return None
    position = row_positions(table.index, [row_id])[0] if is_hashable(row_id) else -1
    if position < 0:
        return None
    value = table["run"].iloc[position]
    return None if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else str(value)


# --------------------------------------------------------------------------- the pages' fields


def filter_fields(choices: Mapping[str, Sequence[str]], bounds: Mapping[str, tuple[float, float]]) -> list[Field]:
    """The row filters of the Inspector and the Gallery: ``choices`` per category column,
    ``bounds`` per range column, and the text search."""
    fields = [Field(key, MANY, (), tuple(choices[column]), label=f"{key} filter")
              for column, key in INSPECTOR_CATEGORY_KEYS.items() if column in choices]
    fields.append(Field("q", TEXT, "", label="text search"))
    for column, (lo, hi) in bounds.items():
        fields.append(Field(column, RANGE, None, low=lo, high=hi, label=f"{column} range"))
    return fields


def inspector_fields(
    choices: Mapping[str, Sequence[str]],
    bounds: Mapping[str, tuple[float, float]],
    sorts: Sequence[str],
    views: Sequence[str],
) -> list[Field]:
    """The Inspector's link: its row, its filters (``choices`` per category column, ``bounds``
    per range column), its order and its view."""
    fields = [Field("row", TEXT, label="row"), Field("run", TEXT, label="row's run")]
    fields += filter_fields(choices, bounds)
    fields.append(Field("sort", ONE, sorts[0], tuple(sorts), label="order"))
    fields.append(Field("view", ONE, views[0], tuple(views), label="view"))
    return fields


def gallery_view_fields(modes: Sequence[str], sorts: Sequence[str], default_sort: str, orders: Sequence[str],
                        per_page: Sequence[int], default_per_page: int, pages: int, *, prefix: str = "") -> list[Field]:
    """The Gallery's own view: ``mode``, ``sort`` (a column name, written as it is), ``order``,
    ``page`` (1-based, at most ``pages``) and ``per_page``. ``prefix`` names them in another
    page's link (the Inspector opened from a tile keeps the gallery's order as ``gallery_*``)."""
    return [
        Field(prefix + "mode", ONE, modes[0], tuple(modes), label=f"{prefix}mode"),
        Field(prefix + "sort", NAME, default_sort, tuple(sorts), label=f"{prefix}sort"),
        Field(prefix + "order", ONE, orders[0], tuple(orders), label=f"{prefix}order"),
        Field(prefix + "page", INTEGER, 1, low=1, high=max(pages, 1), label=f"{prefix}page"),
        Field(prefix + "per_page", ONE, default_per_page, tuple(per_page), label=f"{prefix}per_page"),
    ]


def gallery_fields(choices: Mapping[str, Sequence[str]], bounds: Mapping[str, tuple[float, float]],
                   modes: Sequence[str], sorts: Sequence[str], default_sort: str, orders: Sequence[str],
                   per_page: Sequence[int], default_per_page: int, pages: int) -> list[Field]:
    """The Gallery's link: its view (:func:`gallery_view_fields`) and the Inspector's filters."""
    return [*gallery_view_fields(modes, sorts, default_sort, orders, per_page, default_per_page, pages),
            *filter_fields(choices, bounds)]


#: The Inspector's link names the gallery it was opened from with these prefixed parameters.
GALLERY_PREFIX = "gallery_"


#: The Inspector's category filter columns and their link parameters.
INSPECTOR_CATEGORY_KEYS = {"task_id": "task", "annotation_type": "type", "run": "runs", "format_reason": "reason"}


def distributions_fields(components: Sequence[str], facets: Sequence[str], bins: tuple[int, int, int]) -> list[Field]:
    """Distributions: ``bins`` is (lowest, highest, default)."""
    return [
        Field("component", ONE, components[0], tuple(components)),
        Field("facet", ONE, facets[0], tuple(facets)),
        Field("bins", INTEGER, bins[2], low=bins[0], high=bins[1]),
    ]


def failures_fields(reasons: Sequence[str], tasks: Sequence[str], runs: Sequence[str], pages: int) -> list[Field]:
    """Format failures: the three filters and the page of the list."""
    return [
        Field("reason", MANY, (), tuple(reasons), label="reason filter"),
        Field("task", MANY, (), tuple(tasks), label="task filter"),
        Field("run", MANY, (), tuple(runs), label="run filter"),
        Field("page", INTEGER, 1, low=1, high=max(pages, 1)),
    ]


def tuning_fields(scored: Mapping[str, Any], modes: Sequence[str], formulas: Sequence[str]) -> list[Field]:
    """Tuning: every option, defaulting to how the run was scored (``mode`` as its widget value)."""
    return [
        Field("mode", ONE, scored["mode"], tuple(modes)),
        Field("formula", ONE, scored["formula"], tuple(formulas)),
        Field("answer_weight", NUMBER, scored["answer_weight"], low=0.0, high=1.0),
        Field("annotation_weight", NUMBER, scored["annotation_weight"], low=0.0, high=1.0),
        Field("format_weight", NUMBER, scored["format_weight"], low=0.0, high=1.0),
        Field("solved_threshold", NUMBER, scored["solved_threshold"], low=0.0, high=1.0),
    ]
