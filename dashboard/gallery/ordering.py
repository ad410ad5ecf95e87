"""Which tiles a gallery page shows and in which order: sort values, sorting, images, paging.

No Streamlit, and no text: a run may hold millions of rows, so everything here works on
positions into the compact table and on float arrays of its numeric columns. Sorting is one
stable ``argsort`` over the filtered positions' values (missing values last in both directions,
ties in table order), remembered per table, filter and sort, so the next page or a page switch
does not sort again. Only the rows of the page shown are ever looked at further.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..filters import TableMemo, dense_values, factorize
from ..numbers import plural

MODE_ROWS, MODE_IMAGES, MODE_PATCHES = "rows", "images", "patches"
MODES: tuple[str, ...] = (MODE_ROWS, MODE_IMAGES, MODE_PATCHES)
MODE_TITLES = {MODE_ROWS: "row", MODE_IMAGES: "image", MODE_PATCHES: "object"}
ASC, DESC = "asc", "desc"
ORDERS: tuple[str, ...] = (ASC, DESC)
ORDER_TITLES = {ASC: "ascending (lowest first)", DESC: "descending (highest first)"}
PER_PAGE_CHOICES: tuple[int, ...] = (24, 48, 96)
DEFAULT_PER_PAGE = 48

#: Sort values that are not a column of the table (computed when asked for).
LOGGED_DIFFERENCE = "logged_difference"
SUSPECT_CONFIDENCE = "suspect_confidence"
OBJECT_SIMILARITY = "object_similarity"
#: The sort choices offered first, in this order (those present); every other numeric column follows.
PREFERRED_SORTS: tuple[str, ...] = (
    "annotation_reward", "score", "answer_reward", "format", "task_reward_effective", "overall",
    "annotation_assigned_iou_mean", "annotation_assigned_similarity_mean", OBJECT_SIMILARITY,
    SUSPECT_CONFIDENCE, LOGGED_DIFFERENCE, "step", "sample_index",
)
SORT_TITLES = {
    "annotation_reward": "annotation reward",
    "score": "score (as tuned)",
    "answer_reward": "answer reward",
    "format": "format",
    "task_reward_effective": "task reward",
    "overall": "overall (as scored)",
    "annotation_assigned_iou_mean": "IoU (matched boxes)",
    "annotation_assigned_similarity_mean": "similarity (matched points)",
    OBJECT_SIMILARITY: "each object's IoU / similarity",
    SUSPECT_CONFIDENCE: "GT suspect confidence",
    LOGGED_DIFFERENCE: "logged vs recomputed difference",
    "step": "step",
}
#: Numeric columns that only restate an option or a category (one-hot flags): not offered.
_NOT_SORTS_PREFIXES = ("trace_reward_mode_", "trace_answer_scoring_", "trace_annotation_reward_formula_",
                       "annotation_type_", "option_")
_NOT_SORTS = frozenset({"source_line", "solved", "trace_answer_weight", "trace_annotation_weight",
                        "format_weight"})
_LOGGED_PREFIX = "logged_"
_DEFAULT_SORTS = ("annotation_reward", "score")


def sort_title(column: str) -> str:
    """How the sort choice reads in the page (a link holds the column's name)."""
    return SORT_TITLES.get(column, column)


_MEMO = TableMemo(size=24)


def sort_columns(table: pd.DataFrame, extra: Sequence[str] = ()) -> list[str]:
    """The sort choices for ``table``: :data:`PREFERRED_SORTS` present (``extra`` names the
    computed ones on offer), then every other numeric column holding two distinct values."""
    numeric = _MEMO.get(table, "numeric sorts", lambda: _numeric_sorts(table))
    offered = set(numeric) | set(extra)
    if _logged_components(table):
        offered.add(LOGGED_DIFFERENCE)
    first = [c for c in PREFERRED_SORTS if c in offered]
    return first + [c for c in numeric if c not in first]


def _numeric_sorts(table: pd.DataFrame) -> tuple[str, ...]:
    found = []
    for name in table.columns:
        dtype = table[name].dtype
        if name in _NOT_SORTS or name.startswith(_NOT_SORTS_PREFIXES) or pd.api.types.is_bool_dtype(dtype):
            continue
        if isinstance(dtype, pd.SparseDtype):
            values = np.asarray(table[name].array.sp_values, dtype=np.float64)  # the values held, not a dense copy
        elif dtype == np.float64:
            values = table[name].to_numpy()
        elif pd.api.types.is_numeric_dtype(dtype):
            values = pd.to_numeric(table[name], errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            continue
        if len(values) and _varies(values):
            found.append(name)
    return tuple(found)


def _varies(values: np.ndarray) -> bool:
    """Two distinct values among the non-missing ones (no copy of a million values)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column
        lo, hi = np.nanmin(values), np.nanmax(values)
    return bool(lo < hi)


def default_sort(columns: Sequence[str]) -> str:
    """The sort a gallery opens with: the annotation reward (worst first), else the score."""
    return next((c for c in _DEFAULT_SORTS if c in columns), columns[0] if columns else "score")


def column_values(table: pd.DataFrame, column: str) -> np.ndarray:
    """A numeric column as float64, missing values NaN (memoised; do not modify)."""
    values = table[column]
    if values.dtype == np.float64 or isinstance(values.dtype, pd.SparseDtype):
        return dense_values(table, column)

    def convert() -> np.ndarray:
        array = pd.to_numeric(values, errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)
        array.setflags(write=False)
        return array

    return _MEMO.get(table, ("values", column), convert)


def _logged_components(table: pd.DataFrame) -> list[str]:
    return [c[len(_LOGGED_PREFIX):] for c in table.columns
            if c.startswith(_LOGGED_PREFIX) and c != "logged_mismatch" and c[len(_LOGGED_PREFIX):] in table.columns]


def logged_difference(table: pd.DataFrame) -> np.ndarray:
    """Per row, the largest ``|logged - recomputed|`` over the components the files logged
    (NaN where nothing was logged; memoised)."""

    def compute() -> np.ndarray:
        out = np.full(len(table), np.nan)
        for component in _logged_components(table):
            logged = column_values(table, _LOGGED_PREFIX + component)
            with np.errstate(invalid="ignore"):
                diff = np.abs(logged - column_values(table, component))
            out = np.fmax(out, diff)  # NaN only where both are
        out.setflags(write=False)
        return out

    return _MEMO.get(table, LOGGED_DIFFERENCE, compute)


def sort_values(table: pd.DataFrame, column: str, computed: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """The values rows are sorted by: a table column, or a computed one (``computed`` holds
    what the caller has, e.g. suspect confidence; the logged difference is computed here)."""
    if computed and column in computed:
        return computed[column]
    if column == LOGGED_DIFFERENCE:
        return logged_difference(table)
    if column in table.columns:
        return column_values(table, column)
    return np.full(len(table), np.nan)


def ordered(positions: np.ndarray, values: np.ndarray, descending: bool) -> np.ndarray:
    """``positions`` sorted by ``values[positions]``: stable (ties keep their order), NaN last."""
    picked = values[positions]
    keys = -picked if descending else picked  # NaN stays NaN, which argsort puts last
    return positions[np.argsort(keys, kind="stable")]


def sorted_positions(table: pd.DataFrame, mask: np.ndarray | None, key: str, values: np.ndarray,
                     descending: bool) -> np.ndarray:
    """The filtered rows (``mask``, None for all) by ``values``, remembered per table and ``key``
    (what names the filter and the sort)."""

    def compute() -> np.ndarray:
        positions = np.arange(len(table)) if mask is None else np.flatnonzero(mask)
        out = ordered(positions, values, descending)
        out.setflags(write=False)
        return out

    return _MEMO.get(table, ("sorted", key, descending), compute)


def sorted_for(table: pd.DataFrame, mask: np.ndarray | None, filter_key: str, sort: str, descending: bool,
               computed: Mapping[str, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """``(the filtered rows in sort order, the sort values, the key they are remembered by)``. The
    object sort orders rows by their annotation reward (objects are then sorted within the rows)."""
    column = "annotation_reward" if sort == OBJECT_SIMILARITY else sort
    values = sort_values(table, column, computed)
    key = f"{filter_key}|{sort}|{id((computed or {}).get(sort))}"
    return sorted_positions(table, mask, key, values, descending), values, key


# --------------------------------------------------------------------------- images


def image_codes(table: pd.DataFrame) -> np.ndarray:
    """A group code per row: rows showing the same image share one (rows without an image are
    grouped by their instance, else stand alone). Memoised per table."""

    def compute() -> np.ndarray:
        n = len(table)
        codes = np.full(n, -1, dtype=np.int64)
        if "image_ref" in table.columns:
            ref = table["image_ref"]
            if isinstance(ref.dtype, pd.CategoricalDtype):
                codes = ref.cat.codes.to_numpy().astype(np.int64)
            else:
                codes, _ = pd.factorize(ref, use_na_sentinel=True)
                codes = codes.astype(np.int64)
        missing = codes < 0
        base = int(codes.max(initial=-1)) + 1
        if missing.any() and "instance_id" in table.columns:
            instance = table["instance_id"].to_numpy(dtype=object)[missing]
            inst_codes, _ = factorize(pd.Series(instance))
            known = pd.isna(instance) == False  # noqa: E712 - elementwise
            filled = np.where(known, base + inst_codes, -1)
            codes[missing] = filled
            base += int(inst_codes.max(initial=-1)) + 1
        alone = np.flatnonzero(codes < 0)
        codes[alone] = base + np.arange(len(alone))
        codes.setflags(write=False)
        return codes

    return _MEMO.get(table, "image codes", compute)


@dataclass(frozen=True)
class ImageGroups:
    """The filtered rows grouped by image, groups in tile order.

    ``rows[starts[k]:starts[k + 1]]`` are the positions of group ``k`` (the k-th tile), in
    the rows' own sort order; ``values[k]`` is the group's sort value (the mean of its rows')."""

    rows: np.ndarray
    starts: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def members(self, k: int) -> np.ndarray:
        return self.rows[self.starts[k]:self.starts[k + 1]]


def image_groups(table: pd.DataFrame, row_order: np.ndarray, values: np.ndarray, descending: bool,
                 key: str) -> ImageGroups:
    """Group the sorted rows ``row_order`` by image; groups sorted by the mean of ``values`` over
    their rows (NaN last; ties by their best row's place). Remembered per table and ``key``."""
    return _MEMO.get(table, ("images", key, descending),
                     lambda: _image_groups(image_codes(table), row_order, values, descending))


def _image_groups(codes: np.ndarray, row_order: np.ndarray, values: np.ndarray, descending: bool) -> ImageGroups:
    if not len(row_order):
        empty = np.zeros(0, dtype=np.int64)
        return ImageGroups(empty, np.zeros(1, dtype=np.int64), np.zeros(0))
    group_of = codes[row_order]
    uniques, first_at, inverse = np.unique(group_of, return_index=True, return_inverse=True)
    picked = values[row_order]
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = ~np.isnan(picked)
        sums = np.bincount(inverse[ok], weights=picked[ok], minlength=len(uniques))
        counts = np.bincount(inverse[ok], minlength=len(uniques))
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    by_first = np.argsort(first_at, kind="stable")  # ties: the group whose best row comes first
    keys = -means[by_first] if descending else means[by_first]
    group_rank = np.empty(len(uniques), dtype=np.int64)
    tile_order = by_first[np.argsort(keys, kind="stable")]
    group_rank[tile_order] = np.arange(len(uniques))
    by_tile = np.argsort(group_rank[inverse], kind="stable")  # rows keep their sort order within a tile
    rows = row_order[by_tile]
    sizes = np.bincount(group_rank[inverse], minlength=len(uniques))
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    for array in (rows, starts):
        array.setflags(write=False)
    return ImageGroups(rows, starts, means[tile_order])


# --------------------------------------------------------------------------- paging


def page_count(count: int, per_page: int) -> int:
    """Pages needed for ``count`` tiles (at least one, empty as it may be)."""
    return max(1, math.ceil(count / max(per_page, 1)))


def page_bounds(page: int, per_page: int, count: int) -> tuple[int, int, int]:
    """``(page, start, stop)``: ``page`` (1-based) clamped to the pages there are, and the
    tiles it holds."""
    page = min(max(int(page), 1), page_count(count, per_page))
    start = (page - 1) * per_page
    return page, start, min(start + per_page, count)


def page_of(index: int, per_page: int) -> int:
    """The 1-based page holding tile ``index`` (0-based)."""
    return index // max(per_page, 1) + 1


def describe_page(page: int, per_page: int, count: int, noun: str) -> str:
    """``"Page 3 of 120 · tiles 97–144 of 5,731 rows"``."""
    page, start, stop = page_bounds(page, per_page, count)
    if not count:
        return f"No {noun}s"
    return f"Page {page:,} of {page_count(count, per_page):,} · {start + 1:,}–{stop:,} of {plural(count, noun)}"


__all__ = [
    "ASC",
    "DEFAULT_PER_PAGE",
    "DESC",
    "LOGGED_DIFFERENCE",
    "MODES",
    "MODE_IMAGES",
    "MODE_PATCHES",
    "MODE_ROWS",
    "MODE_TITLES",
    "OBJECT_SIMILARITY",
    "ORDERS",
    "ORDER_TITLES",
    "PER_PAGE_CHOICES",
    "SUSPECT_CONFIDENCE",
    "ImageGroups",
    "column_values",
    "default_sort",
    "describe_page",
    "image_codes",
    "image_groups",
    "logged_difference",
    "ordered",
    "page_bounds",
    "page_count",
    "page_of",
    "sort_columns",
    "sort_title",
    "sort_values",
    "sorted_for",
    "sorted_positions",
]
