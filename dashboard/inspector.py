"""Inspector helpers (no Streamlit): filtering, sorting, previous/next and the gallery.

The Inspector's table is the scored table (index ``row_id``) narrowed by an
:class:`InspectorFilter`; previous/next walk the filtered, sorted order; the
gallery picks the rows with the worst annotation reward.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dashboard.filters import NONE_LABEL, TableMemo, filter_rows
from dashboard.row_lookup import row_positions

#: Reward columns offered as range filters (those present in the table).
REWARD_COLUMNS: tuple[str, ...] = (
    "score",
    "overall",
    "answer_reward",
    "annotation_reward",
    "format",
    "task_reward_effective",
)
#: Columns a text search looks in (those present), besides the row id.
SEARCH_COLUMNS: tuple[str, ...] = (
    "task_id",
    "instance_id",
    "response",
    "prompt",
    "gold",
    "recovered_text",
    "format_detail",
    "annotation_reason",
    "run",
)
#: Multi-select filters: column -> UI label (values matched by :func:`dashboard.filters.filter_rows`).
CATEGORY_FILTERS: dict[str, str] = {
    "task_id": "Task",
    "annotation_type": "Annotation type",
    "run": "Run",
    "format_reason": "Format reason",
}
#: InspectorFilter field name of each category column.
CATEGORY_FIELD_NAMES = {"task_id": "tasks", "annotation_type": "annotation_types", "run": "runs", "format_reason": "reasons"}
#: Columns shown in the Inspector table (those present), in order.
TABLE_COLUMNS: tuple[str, ...] = (
    "run",
    "step",
    "task_id",
    "annotation_type",
    "score",
    "answer_reward",
    "annotation_reward",
    "format",
    "format_reason",
    "recovered_source",
    "annotation_reason",
)
#: Sort choices: label -> (column, ascending).
SORTS: dict[str, tuple[str | None, bool]] = {
    "file order": (None, True),
    "annotation reward, worst first": ("annotation_reward", True),
    "score, worst first": ("score", True),
    "score, best first": ("score", False),
    "answer reward, worst first": ("answer_reward", True),
    "step": ("step", True),
}
MISSING_LABEL = NONE_LABEL


@dataclass(frozen=True)
class InspectorFilter:
    """What narrows the table. Empty selections and absent ranges mean "no filter"."""

    tasks: tuple[str, ...] = ()
    annotation_types: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # column -> inclusive range
    text: str = ""

    @classmethod
    def of(cls, categories: Mapping[str, Sequence[Any]] | None = None, **kwargs: Any) -> InspectorFilter:
        """From ``{column: chosen values}`` (columns of :data:`CATEGORY_FILTERS`) plus other fields."""
        fields = {CATEGORY_FIELD_NAMES[c]: tuple(str(v) for v in values) for c, values in (categories or {}).items()}
        return cls(**fields, **kwargs)

    @property
    def active(self) -> bool:
        return bool(self.tasks or self.annotation_types or self.runs or self.reasons or self.ranges or self.text.strip())

    def describe(self) -> str:
        parts = [
            f"{label.lower()} in {len(getattr(self, CATEGORY_FIELD_NAMES[c]))} value(s)"
            for c, label in CATEGORY_FILTERS.items()
            if getattr(self, CATEGORY_FIELD_NAMES[c])
        ]
        parts += [f"{lo:g} ≤ {c} ≤ {hi:g}" for c, (lo, hi) in self.ranges.items()]
        if self.text.strip():
            parts.append(f"text contains {self.text.strip()!r}")
        return "; ".join(parts) if parts else "no filter"


def _category_values(series: pd.Series) -> pd.Series:
    """Values as strings, missing ones as ``(none)`` (what the multiselects show)."""
    values = series.astype("object")
    return values.where(values.notna(), MISSING_LABEL).astype(str)


#: Per-table summaries the Inspector asks for on every rerun (remembered while the table lives).
_SUMMARIES = TableMemo(size=8)


def category_choices(table: pd.DataFrame) -> dict[str, list[str]]:
    """Sorted distinct values of every category filter column present (column -> values;
    memoised per table)."""
    return _SUMMARIES.get(table, "choices", lambda: _category_choices(table))


def _category_choices(table: pd.DataFrame) -> dict[str, list[str]]:
    choices = {}
    for column in CATEGORY_FILTERS:
        if column in table.columns:
            values = table[column]
            if isinstance(values.dtype, pd.CategoricalDtype):  # its categories, not a pass over every row
                present = values.cat.remove_unused_categories().cat.categories.astype(str).tolist()
                labels = set(present) | ({MISSING_LABEL} if values.isna().any() else set())
            else:
                labels = set(_category_values(values).unique().tolist())
            choices[column] = sorted(labels)
    return choices


def numeric_bounds(table: pd.DataFrame, columns: Iterable[str]) -> dict[str, tuple[float, float]]:
    """``(min, max)`` of each present numeric column with at least one finite value (memoised
    per table)."""
    columns = tuple(columns)
    return _SUMMARIES.get(table, ("bounds", columns), lambda: _numeric_bounds(table, columns))


def _numeric_bounds(table: pd.DataFrame, columns: Iterable[str]) -> dict[str, tuple[float, float]]:
    bounds = {}
    for column in columns:
        if column not in table.columns:
            continue
        values = pd.to_numeric(table[column], errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = values[np.isfinite(values)]
        if finite.size:
            bounds[column] = (float(finite.min()), float(finite.max()))
    return bounds


def _category_mask(table: pd.DataFrame, spec: InspectorFilter) -> np.ndarray:
    chosen = {c: getattr(spec, f) for c, f in CATEGORY_FIELD_NAMES.items()}
    if all(c in table.columns for c in CATEGORY_FILTERS):
        # The shared helper (same "(none)" labels as the other pages).
        return filter_rows(
            table, runs=spec.runs, tasks=spec.tasks, annotation_types=spec.annotation_types, reasons=spec.reasons
        )
    mask = np.ones(len(table), dtype=bool)
    for column, allowed in chosen.items():
        if allowed and column in table.columns:
            mask &= _category_values(table[column]).isin(set(allowed)).to_numpy()
    return mask


#: ``search(needle, columns)``: rows (a boolean Series by row id) whose text kept outside the
#: table (an opened dataset's responses) contains ``needle`` -- :meth:`LoadedRun.search`.
TextSearch = Callable[[str, Sequence[str]], pd.Series]


def _contains(column: pd.Series, needle: str) -> np.ndarray:
    """Case-insensitive literal ``needle`` in a text column; a categorical's categories are
    searched once each, not its rows."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = pd.Series(column.cat.categories.astype(str))
        found = categories.str.contains(needle, case=False, regex=False).array.to_numpy(dtype=bool, na_value=False)
        codes = column.cat.codes.to_numpy()
        return np.where(codes >= 0, found[np.maximum(codes, 0)] if len(found) else False, False)
    hits = column.astype("string").str.contains(needle, case=False, regex=False)
    return hits.array.to_numpy(dtype=bool, na_value=False)


def text_mask(table: pd.DataFrame, needle: str, search: TextSearch | None = None) -> np.ndarray:
    """Rows whose id or any :data:`SEARCH_COLUMNS` text contains ``needle`` (case-insensitive,
    literal); ``search`` looks in the columns the table does not hold."""
    needle = needle.strip()
    if not needle:
        return np.ones(len(table), dtype=bool)
    ids = pd.Series(table.index.astype(str), index=table.index)
    hits = ids.str.contains(needle, case=False, regex=False).array.to_numpy(dtype=bool, na_value=False).copy()
    for column in SEARCH_COLUMNS:
        if column in table.columns:
            hits |= _contains(table[column], needle)
    absent = [c for c in SEARCH_COLUMNS if c not in table.columns]
    if search is not None and absent:
        found = search(needle, absent)
        hits |= found.reindex(table.index, fill_value=False).to_numpy(dtype=bool)
    return hits


def filter_mask(table: pd.DataFrame, spec: InspectorFilter, search: TextSearch | None = None) -> np.ndarray:
    """Boolean mask of the rows ``spec`` keeps (a range drops rows where the column is missing)."""
    mask = np.array(_category_mask(table, spec), dtype=bool)  # an own, writable copy
    for column, (lo, hi) in spec.ranges.items():
        if column not in table.columns:
            continue
        values = pd.to_numeric(table[column], errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            mask &= (values >= lo) & (values <= hi)
    return mask & text_mask(table, spec.text, search)


def apply_filter(table: pd.DataFrame, spec: InspectorFilter, search: TextSearch | None = None) -> pd.DataFrame:
    """The rows ``spec`` keeps; the table itself when it keeps them all (its index, and the hash
    table behind lookups in it, are then built once, not on every rerun)."""
    mask = filter_mask(table, spec, search)
    return table if mask.all() else table[mask]


def sort_rows(table: pd.DataFrame, sort: str) -> pd.DataFrame:
    """``table`` in the order of the sort choice ``sort`` (stable; missing values last)."""
    column, ascending = SORTS.get(sort, (None, True))
    if column is None or column not in table.columns:
        return table
    return table.sort_values(column, ascending=ascending, kind="stable", na_position="last")


def neighbour(order: Sequence[Any], current: Any, step: int) -> Any | None:
    """The row ``step`` places from ``current`` in ``order`` (clamped at the ends).

    A ``current`` not in ``order`` gives the first row (``step`` > 0) or the last
    (``step`` < 0); an empty order gives None.
    """
    if len(order) == 0:
        return None
    position = position_of(order, current)
    if position is None:
        return order[0] if step >= 0 else order[-1]
    return order[min(max(position + step, 0), len(order) - 1)]


def position_of(order: Sequence[Any], current: Any) -> int | None:
    """0-based position of ``current`` in ``order`` (the first, should it repeat) or None; found
    by :func:`dashboard.row_lookup.row_positions` (a scan: a run's order has millions of ids)."""
    if not isinstance(order, pd.Index):
        order = pd.Index(list(order), dtype=object)
    try:
        position = int(row_positions(order, [current])[0])
    except TypeError:  # an unhashable value is in no order
        return None
    return position if position >= 0 else None


def default_row(table: pd.DataFrame) -> Any | None:
    """The row the Inspector opens on when none is chosen: the worst annotation reward among
    rows scored with an annotation (answer_and_annotation mode, a predicted annotation where any
    row has one; the first in table order on ties), else the first
    trace row, else the first row; None for an empty table."""
    if not len(table):
        return None
    # on column arrays, not row subsets: a run has a million rows and a hundred columns
    def values(column: str, missing: float) -> np.ndarray:
        return table[column].array.to_numpy(dtype=np.float64, na_value=missing)

    scored = np.ones(len(table), dtype=bool)
    if "trace_reward_mode_answer_and_annotation" in table.columns:
        scored &= values("trace_reward_mode_answer_and_annotation", 0.0) == 1.0
    if "annotation_pred_size" in table.columns:  # rows with a predicted annotation draw the most
        predicted = scored & (values("annotation_pred_size", 0.0) > 0)
        scored = predicted if predicted.any() else scored
    if "annotation_reward" in table.columns:  # an annotation type and a reward
        reward = pd.to_numeric(table["annotation_reward"], errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)
        scored &= ~np.isnan(reward)
        if "annotation_type" in table.columns:
            scored &= table["annotation_type"].notna().to_numpy()
        if scored.any():
            candidates = np.flatnonzero(scored)
            return table.index[candidates[np.argmin(reward[candidates])]]  # argmin: the first of ties
    if "scorer" in table.columns:
        trace = np.flatnonzero((table["scorer"].astype(object) == "trace").to_numpy())
        if len(trace):
            return table.index[trace[0]]
    return table.index[0]


def table_view(table: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """The columns the Inspector table shows (those present), first ``limit`` rows (the rows
    taken after the columns: a million-row table's other columns are never copied)."""
    columns = [c for c in TABLE_COLUMNS if c in table.columns]
    view = table[columns]
    return view if limit is None else view.head(limit)


def with_scores(table: pd.DataFrame, scores: pd.DataFrame | None) -> pd.DataFrame:
    """``table`` with ``score`` / ``solved`` replaced by the current options' values (same index).
    The same object while ``table`` and ``scores`` live (memoised per scores table): what is
    derived from it (choices, bounds) is then memoised across reruns too."""
    if scores is None or not len(scores):
        return table
    held = _SUMMARIES.get(scores, ("with scores", id(table)), lambda: (weakref.ref(table), _with_scores(table, scores)))
    if held[0]() is table:
        return held[1]
    return _with_scores(table, scores)  # another table that reused a dead one's id: never a stale join


def _with_scores(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    out = table.copy(deep=False)  # the columns are shared, not copied: only two are replaced
    aligned = scores.index is table.index or scores.index.equals(table.index)
    for column in ("score", "solved"):
        if column in scores.columns:
            out[column] = scores[column].to_numpy() if aligned else scores[column].reindex(table.index).to_numpy()
    return out


def row_caption(row: Mapping[str, Any] | pd.Series, row_id: Any) -> str:
    """A one-line plain-text description of a row (for ``st.text``)."""
    parts = [str(row_id)]
    for column, label in (("run", "run"), ("step", "step"), ("task_id", "task"), ("instance_id", "instance"),
                          ("annotation_type", "type")):
        value = row.get(column) if hasattr(row, "get") else None
        if value is not None and not (isinstance(value, float) and math.isnan(value)) and value is not pd.NA:
            parts.append(f"{label} {value}")
    return " · ".join(parts)


__all__ = [
    "CATEGORY_FILTERS",
        "REWARD_COLUMNS",
    "SEARCH_COLUMNS",
    "text_mask",
    "SORTS",
    "TABLE_COLUMNS",
    "InspectorFilter",
    "apply_filter",
    "category_choices",
    "default_row",
    "filter_mask",
    "neighbour",
    "numeric_bounds",
    "position_of",
    "row_caption",
    "sort_rows",
    "table_view",
    "with_scores",
]
