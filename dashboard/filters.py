"""Summaries and row selections over the scored table (pandas/numpy only, no Streamlit).

Functions take the scored ``table`` and, where the options matter, the
``scores`` frame of :func:`dashboard.tuning.scores` (score / task_reward /
format / solved under the current options, same index as the table).
"""

from __future__ import annotations

import json
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dashboard import numbers
from dashboard.row_lookup import row_positions
from scoring.rollouts import errors_frame
from scoring.runs import SPLIT_COLUMNS, TRACE, join_report, logged_components, logged_vs_recomputed

NONE_LABEL = "(none)"
OTHER_LABEL = "(other)"

#: Histogram components: label -> where the values come from.
COMPONENTS = ("overall", "answer", "annotation", "format", "task reward")
#: Facets offered on the histograms: label -> column.
FACETS = {
    "none": None, "annotation type": "annotation_type", "task": "task", "run": "run", "step": "step",
    "filter": "filter",
}  # fmt: skip


def split_columns(table: pd.DataFrame) -> list[str]:
    """The ``scoring.runs.SPLIT_COLUMNS`` (lm-eval's ``filter``) that hold more than one value in ``table``."""
    return [c for c in SPLIT_COLUMNS if c in table.columns and table[c].nunique(dropna=True) > 1]


class TableMemo:
    """Results computed from a table, remembered per (table, key) while that table lives (small LRU).

    The loaded table is never modified, so anything derived from it (for given options) can be
    reused across reruns and page switches. ``max_bytes`` (with ``weigh``, the bytes a value
    holds) bounds what is kept besides the count: a ten-million-row run's per-option frames are
    hundreds of MB each, and the most recent one is always kept.
    """

    def __init__(self, size: int = 8, *, max_bytes: float | None = None, weigh: Callable[[Any], int] | None = None):
        self._entries: OrderedDict[tuple, tuple[weakref.ref, Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size
        self._max_bytes = max_bytes
        self._weigh = weigh

    def get(self, table: pd.DataFrame, key: Any, compute: Callable[[], Any]) -> Any:
        full = (id(table), key)
        with self._lock:
            hit = self._entries.get(full)
            if hit is not None and hit[0]() is table:
                self._entries.move_to_end(full)
                return hit[1]
        value = compute()
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self._entries[full] = (weakref.ref(table), value, weight)
            self._entries.move_to_end(full)
            held = sum(entry[2] for entry in self._entries.values())
            while len(self._entries) > 1 and (
                len(self._entries) > self._size or (self._max_bytes is not None and held > self._max_bytes)
            ):
                held -= self._entries.popitem(last=False)[1][2]
        return value


_LOGGED = TableMemo(size=4)


_MASKS = TableMemo(size=16)


_DENSE = TableMemo(size=8)


def dense_values(table: pd.DataFrame, column: str) -> np.ndarray:
    """A float column as a float64 array (memoised; do not modify it): a sparse column of an
    opened dataset is made dense once, not on every re-weighting (10M rows: 80 MB, 0.2 s)."""
    values = table[column]
    if values.dtype == np.float64:
        return values.to_numpy()  # the column's own array: nothing to keep
    return _DENSE.get(table, column, lambda: _frozen(values.to_numpy(dtype=np.float64)))


def trace_mask(table: pd.DataFrame) -> np.ndarray:
    """Rows scored by the trace verifier (memoised; do not modify the array)."""
    return _MASKS.get(table, "trace", lambda: _frozen((table["scorer"] == TRACE).array.to_numpy(dtype=bool, na_value=False)))


def annotation_mask(table: pd.DataFrame) -> np.ndarray:
    """Trace rows scored with an annotation (answer_and_annotation mode and a declared type; memoised)."""

    def compute() -> np.ndarray:
        mode = table["trace_reward_mode_answer_and_annotation"].to_numpy(dtype=np.float64) == 1.0
        return _frozen(trace_mask(table) & mode & table["annotation_type"].notna().to_numpy())

    return _MASKS.get(table, "annotation", compute)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # shared between reruns: in-place changes would leak
    return array


# --------------------------------------------------------------------------- task families

#: The grouping key "task": a row's task family (see :func:`task_families`), beside its full ``task_id``.
TASK_FAMILY = "task"
#: A per-question id: a stem, one separator, then an index (``gsm8k-train-0001``, ``mmlu/17``).
_INDEXED_ID = re.compile(r"^(?P<stem>.*[^-_./:#\s])[-_./:#]\d+$")
#: Ids are folded into their stem only when at least this many distinct ids share it: one
#: ``chart-2`` next to ``chart-1`` stays itself, 25 ``gsm8k-train-00xx`` become ``gsm8k-train``.
FAMILY_MIN_IDS = 3


def task_families(task_ids: pd.Series | np.ndarray) -> np.ndarray:
    """The task family of every id: per-question ids (a shared stem plus a numeric index, at least
    :data:`FAMILY_MIN_IDS` distinct ones per stem) become their stem; other ids stay as they are;
    missing ids stay missing (None)."""
    codes, families = _family_codes(task_ids)
    return np.append(families, None)[codes]  # code -1 (missing) picks the trailing None


def _family_codes(task_ids: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(a family code per row, -1 where the id is missing; the families' names)``: worked out
    once per distinct id -- a categorical's own codes, without hashing a million ids again."""
    if isinstance(getattr(task_ids, "dtype", None), pd.CategoricalDtype):
        categorical = pd.Categorical(task_ids)
        codes = np.asarray(categorical.codes, dtype=np.int64)
        used = np.bincount(codes[codes >= 0], minlength=len(categorical.categories)) > 0
        remap = np.full(len(used) + 1, -1, dtype=np.int64)  # the last entry: code -1 stays -1
        remap[np.flatnonzero(used)] = np.arange(int(used.sum()))
        codes, uniques = remap[codes], np.asarray(categorical.categories)[used]
    else:
        codes, uniques = pd.factorize(pd.Series(task_ids, dtype=object), use_na_sentinel=True)
    names = pd.Series([str(u) for u in uniques], dtype=object)
    stems = names.str.extract(_INDEXED_ID)["stem"]  # NaN where the id has no index
    sharing = stems.map(stems.value_counts()).fillna(0).to_numpy()
    family = np.where(sharing >= FAMILY_MIN_IDS, stems.to_numpy(dtype=object), names.to_numpy())
    family_codes, families = pd.factorize(family)
    return np.append(family_codes, -1)[codes], np.asarray(families, dtype=object)


def group_values(table: pd.DataFrame, key: str) -> pd.Series | np.ndarray | pd.Categorical:
    """The values a summary groups ``table`` by: a column, or :data:`TASK_FAMILY` (memoised; a
    categorical, so grouping by it reuses its codes)."""
    if key == TASK_FAMILY and key not in table.columns:
        return _MASKS.get(table, "task_family", lambda: _family_categorical(table["task_id"]))
    return table[key]


def _family_categorical(task_ids: pd.Series) -> pd.Categorical:
    codes, families = _family_codes(task_ids)
    return pd.Categorical.from_codes(codes, categories=pd.Index(families, dtype=object), validate=False)


def format_zero_reward_positive(table: pd.DataFrame, scores: pd.DataFrame) -> np.ndarray:
    """Trace rows whose format check failed but whose task reward is still positive."""
    fmt = scores["format"].to_numpy(dtype=np.float64)
    task = scores["task_reward"].to_numpy(dtype=np.float64)
    return trace_mask(table) & (fmt == 0.0) & (task > 0.0)


def present_mean(values: np.ndarray) -> float:
    """Mean of the values that are not NaN (NaN when none is); flags (bool) count the true ones
    (the same mean as of their 0.0/1.0 floats, without making those)."""
    if values.dtype == bool:
        return np.count_nonzero(values) / len(values) if len(values) else math.nan
    missing = np.isnan(values)
    if missing.any():  # else the mean of them all, without a copy of ten million values
        values = values[~missing]
    return float(values.mean()) if len(values) else math.nan


def component_values(table: pd.DataFrame, scores: pd.DataFrame, component: str) -> pd.Series:
    """Values of one histogram component per row (NaN where it does not apply)."""
    if component == "overall":
        values = scores["score"].to_numpy(dtype=np.float64)
    elif component == "answer":
        values = np.where(trace_mask(table), table["answer_reward"].to_numpy(dtype=np.float64), np.nan)
    elif component == "annotation":
        values = np.where(annotation_mask(table), table["annotation_reward"].to_numpy(dtype=np.float64), np.nan)
    elif component == "format":
        values = np.where(trace_mask(table), scores["format"].to_numpy(dtype=np.float64), np.nan)
    elif component == "task reward":
        values = np.where(trace_mask(table), scores["task_reward"].to_numpy(dtype=np.float64), np.nan)
    else:
        raise ValueError(f"unknown component {component!r}; components are: {', '.join(COMPONENTS)}")
    return pd.Series(values, index=table.index, name=component)


#: Summaries per ``scores`` frame (itself memoised per table and options): reruns and page switches reuse them.
_SUMMARIES = TableMemo(size=32)


def overview_metrics(table: pd.DataFrame, scores: pd.DataFrame, errors: pd.DataFrame) -> dict[str, Any]:
    """The headline numbers of the Overview page (memoised)."""
    return dict(_SUMMARIES.get(scores, ("overview", id(table), id(errors)),
                               lambda: _overview_metrics(table, scores, errors)))


def _overview_metrics(table: pd.DataFrame, scores: pd.DataFrame, errors: pd.DataFrame) -> dict[str, Any]:
    trace = trace_mask(table)
    steps = table["step"].dropna().unique() if "step" in table else []
    error_count = int((errors["severity"] == "error").sum()) if len(errors) else 0
    return {
        "rows": len(table),
        "runs": int(table["run"].nunique(dropna=True)),
        "steps": len(steps),
        "mean_overall": present_mean(scores["score"].to_numpy(dtype=np.float64)),
        "mean_answer": present_mean(table["answer_reward"].to_numpy(dtype=np.float64)[trace]),
        "mean_annotation": present_mean(table["annotation_reward"].to_numpy(dtype=np.float64)[annotation_mask(table)]),
        "mean_format": present_mean(scores["format"].to_numpy(dtype=np.float64)[trace]),
        "solve_rate": float(scores["solved"].mean()) if len(table) else math.nan,
        "format_zero_reward_positive": int(format_zero_reward_positive(table, scores).sum()),
        "errors": error_count,
        "warnings": int(len(errors) - error_count),
    }


def grouped_mean(codes: np.ndarray, groups: int, values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Mean of ``values`` per group code, NaN values left out (NaN for a group without any).
    ``rows``: the rows per group (``np.bincount(codes)``), when the caller has them: used as the
    counts when no value is NaN, so a ten-million-row run is counted once, not per column.
    Flags (bool) are counted where true: the same means as of their 0.0/1.0 floats."""
    if values.dtype == bool:
        sums = np.bincount(codes[values], minlength=groups)
    else:
        missing = np.isnan(values)
        if missing.any():
            ok = ~missing
            codes, values, rows = codes[ok], values[ok], None
        sums = np.bincount(codes, weights=values, minlength=groups)
    counts = rows if rows is not None else np.bincount(codes, minlength=groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def factorize(column: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, labels)``: a code per row into naturally sorted labels; missing values are
    :data:`NONE_LABEL` (numbers stay numbers when none is missing)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    uniques = np.asarray(uniques, dtype=object)
    missing = codes < 0
    if missing.any():
        uniques = np.array([str(u) for u in uniques] + [NONE_LABEL], dtype=object)
        codes = np.where(missing, len(uniques) - 1, codes)
    elif not (len(uniques) and isinstance(uniques[0], (int, float, np.integer, np.floating))):
        uniques = np.array([str(u) for u in uniques], dtype=object)
    order = sorted(range(len(uniques)), key=lambda i: _natural(uniques[i]))
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[order] = np.arange(len(uniques))
    return rank[codes] if len(codes) else codes.astype(np.int64), uniques[order]


def factorized(table: pd.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize` of :func:`group_values` (memoised per table; do not modify the arrays)."""
    return _MASKS.get(table, ("factorized", key), lambda: _frozen_pair(factorize(group_values(table, key))))


def _frozen_pair(pair: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return _frozen(pair[0]), _frozen(pair[1])


def group_summary(
    table: pd.DataFrame, scores: pd.DataFrame, by: str | Sequence[str], mask: np.ndarray | None = None
) -> pd.DataFrame:
    """Per group (rows in ``mask`` only, when given): rows, mean overall / answer / annotation /
    format, solve rate, format-zero-reward-positive. Largest groups first, then by key (memoised
    without a mask; a copy is returned). Groups are split by :func:`split_columns` too (lm-eval
    filters are never pooled)."""
    keys = [by] if isinstance(by, str) else list(by)
    by = [*(c for c in split_columns(table) if c not in keys), *keys]
    if mask is None:
        key = ("groups", id(table), by if isinstance(by, str) else tuple(by))
        return _SUMMARIES.get(scores, key, lambda: _group_summary(table, scores, by, None)).copy()
    return _group_summary(table, scores, by, mask)


def _group_summary(
    table: pd.DataFrame, scores: pd.DataFrame, by: str | Sequence[str], mask: np.ndarray | None
) -> pd.DataFrame:
    keys = [by] if isinstance(by, str) else list(by)
    if mask is not None and np.asarray(mask, dtype=bool).all():
        mask = None
    if mask is None:  # every row: the memoised codes, and no copy of each column through a mask
        select = slice(None)
        parts = [factorized(table, k) for k in keys]
    else:
        select = np.asarray(mask, dtype=bool)
        parts = [factorize(group_values(table, k)[select]) for k in keys]
    if mask is None and len(parts) == 1:  # one key over every row: its codes are the groups already
        codes, combined = parts[0][0], np.arange(len(parts[0][1]))
    else:
        codes = np.zeros(len(table) if mask is None else int(select.sum()), dtype=np.int64)
        for part_codes, labels in parts:
            codes = codes * len(labels) + part_codes
        codes, combined = pd.factorize(codes, sort=True)
        combined = np.asarray(combined)
    groups = len(combined)
    trace = trace_mask(table)[select]
    ann = annotation_mask(table)[select]
    columns: dict[str, Any] = {}
    for i, (key, (_, labels)) in enumerate(zip(keys, parts, strict=True)):
        divisor = math.prod(len(later) for _, later in parts[i + 1 :])  # mixed-radix decoding
        columns[key] = labels[(combined // divisor) % len(labels)]
    columns["rows"] = np.bincount(codes, minlength=groups)

    def values(frame: pd.DataFrame, column: str, where: np.ndarray | None = None) -> np.ndarray:
        out = frame[column].to_numpy(dtype=np.float64)[select]
        return out if where is None else np.where(where, out, np.nan)

    rows = columns["rows"]
    columns["overall"] = grouped_mean(codes, groups, values(scores, "score"), rows)
    columns["answer"] = grouped_mean(codes, groups, values(table, "answer_reward", trace), rows)
    columns["annotation"] = grouped_mean(codes, groups, values(table, "annotation_reward", ann), rows)
    columns["format"] = grouped_mean(codes, groups, values(scores, "format", trace), rows)
    columns["solve_rate"] = grouped_mean(codes, groups, scores["solved"].to_numpy(dtype=bool)[select], rows)
    fzrp = format_zero_reward_positive(table, scores)[select]
    columns["format_zero_reward_positive"] = np.bincount(codes, weights=fzrp, minlength=groups).astype(np.int64)
    if TASK_FAMILY in keys and TASK_FAMILY not in table.columns:  # how many full ids each family holds
        ids = pd.DataFrame({"group": codes, "id": pd.factorize(table["task_id"][select])[0]}).drop_duplicates()
        columns["task_ids"] = np.bincount(ids["group"].to_numpy(), minlength=groups)
    out = pd.DataFrame(columns)
    order = np.argsort(-out["rows"].to_numpy(), kind="stable")  # largest groups first, then by key
    return out.iloc[order].reset_index(drop=True)


def step_summary(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Reward by training step per run (rows with a step only); empty when no row has a step (memoised)."""
    return _SUMMARIES.get(scores, ("steps", id(table)), lambda: _step_summary(table, scores)).copy()


def _step_summary(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    has_step = table["step"].notna().to_numpy()
    if not has_step.any():
        return pd.DataFrame(columns=["run", "step", "rows", "overall", "answer", "annotation", "format", "solve_rate"])
    out = group_summary(table, scores, ["run", "step"], mask=has_step)
    out["step"] = out["step"].astype(np.int64)
    split = [c for c in split_columns(table) if c in out.columns]
    for column in split:  # one line per run and filter: filters are never pooled
        out["run"] = out["run"].astype(str) + " · " + out[column].astype(str)
    out = out.drop(columns=split)
    return out.sort_values(["run", "step"], kind="stable").reset_index(drop=True)


STEP_METRICS = {"overall": "mean overall", "solve_rate": "solve rate", "format": "mean format"}


def step_long(steps: pd.DataFrame) -> pd.DataFrame:
    """:func:`step_summary` in long form (run, step, metric, value) for a faceted line chart."""
    present = [m for m in STEP_METRICS if m in steps.columns]
    long = steps.melt(id_vars=["run", "step"], value_vars=present, var_name="metric", value_name="value")
    long["metric"] = long["metric"].map(STEP_METRICS)
    return long.dropna(subset=["value"]).reset_index(drop=True)


def logged_report(table: pd.DataFrame) -> pd.DataFrame:
    """Logged-vs-recomputed per component (empty when the files carry no logged rewards; memoised)."""
    return _LOGGED.get(table, "report", lambda: _logged_report(table))


def _logged_report(table: pd.DataFrame) -> pd.DataFrame:
    if not logged_components(table):
        return pd.DataFrame()
    atol = table.attrs.get("scoring_options", {}).get("logged_atol", 1e-6)
    return logged_vs_recomputed(table, atol=atol)


def logged_disagreements(table: pd.DataFrame, limit: int = 500) -> pd.DataFrame:
    """Rows whose logged reward differs from the recomputed one (with both values; memoised)."""
    return _LOGGED.get(table, ("disagreements", limit), lambda: _logged_disagreements(table, limit))


def _logged_disagreements(table: pd.DataFrame, limit: int) -> pd.DataFrame:
    if "logged_mismatch" not in table.columns:
        return pd.DataFrame()
    mask = table["logged_mismatch"].notna().to_numpy()
    if not mask.any():
        return pd.DataFrame()
    components = logged_components(table)
    cols = ["run", "step", "task_id", "source_file", "source_line", "logged_mismatch"]
    needed = [c for c in cols if c in table.columns] + [f"logged_{c}" for c in components]
    needed += [c if c in table.columns else "score" for c in components]
    # the columns first, then the rows: a ten-million-row table's other columns are never taken
    sub = table[list(dict.fromkeys(needed))].iloc[np.flatnonzero(mask)[:limit]]
    out = sub[[c for c in cols if c in sub.columns]].copy()
    for component in components:
        recomputed = component if component in sub.columns else "score"
        out[f"logged {component}"] = sub[f"logged_{component}"]
        out[f"recomputed {component}"] = sub[recomputed]
    return out


# --------------------------------------------------------------------------- histograms


def bin_edges(bins: int = 20) -> np.ndarray:
    """Edges over [0, 1]; the last bin is closed so 1.0 lands in it."""
    return np.linspace(0.0, 1.0, bins + 1)


def bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each value (-1 for NaN or out of [edges[0], edges[-1]])."""
    values = np.asarray(values, dtype=np.float64)
    idx = np.searchsorted(edges, values, side="right") - 1
    idx = np.where(values == edges[-1], len(edges) - 2, idx)
    bad = np.isnan(values) | (values < edges[0]) | (values > edges[-1])
    return np.where(bad, -1, idx)


def facet_keys(table: pd.DataFrame, facet: str | None) -> np.ndarray | None:
    """The facet label of every row as text (None without a facet: one facet, ``all``)."""
    if facet is None:
        return None
    codes, labels = factorized(table, facet)
    return np.array([str(label) for label in labels], dtype=object)[codes]


ALL_LABEL = "all"


def _facet_codes(keys: np.ndarray | None, max_facets: int, n: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Codes into naturally sorted facet labels, the smallest beyond ``max_facets`` folded into
    ``(other)``; ``keys=None`` is one facet, ``all``, over ``n`` rows."""
    if keys is None:
        return np.zeros(n, dtype=np.int64), np.array([ALL_LABEL], dtype=object)
    codes, labels = factorize(np.asarray(keys, dtype=object))
    labels = np.array([str(label) for label in labels], dtype=object)
    if len(labels) <= max_facets:
        return codes, labels
    counts = np.bincount(codes, minlength=len(labels))
    keep = np.zeros(len(labels), dtype=bool)
    keep[np.argsort(-counts, kind="stable")[: max_facets - 1]] = True
    kept = np.flatnonzero(keep)
    remap = np.full(len(labels), len(kept), dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    return remap[codes], np.append(labels[kept], OTHER_LABEL)


def binned(values: pd.Series, keys: np.ndarray | None = None, bins: int = 20, max_facets: int = 24) -> pd.DataFrame:
    """Counts per (facet, bin): facet, bin, lo, hi, count (zero bins included; facets with no
    value left out). Facets beyond ``max_facets`` (the smallest) are folded into ``(other)``."""
    edges = bin_edges(bins)
    codes, labels = _facet_codes(keys, max_facets, len(values))
    if keys is None:  # one facet: numpy's histogram over the same edges (arithmetic, not a search per value)
        counts = np.histogram(values.to_numpy(dtype=np.float64), bins=bins, range=(0.0, 1.0))[0].reshape(1, bins)
    else:
        idx = bin_index(values.to_numpy(dtype=np.float64), edges)
        valid = idx >= 0
        counts = np.bincount(codes[valid] * bins + idx[valid], minlength=len(labels) * bins)
        counts = counts.reshape(len(labels), bins)
    present = np.flatnonzero(counts.sum(axis=1) > 0)
    out = pd.DataFrame(
        {
            "facet": np.repeat(labels[present], bins),
            "bin": np.tile(np.arange(bins), len(present)),
            "count": counts[present].ravel(),
        }
    )
    out["lo"] = edges[out["bin"].to_numpy()]
    out["hi"] = edges[out["bin"].to_numpy() + 1]
    return out[["facet", "bin", "lo", "hi", "count"]]


def fold_facets(keys: np.ndarray, max_facets: int) -> np.ndarray:
    """Facet labels with the smallest beyond ``max_facets`` replaced by ``(other)``."""
    codes, labels = _facet_codes(keys, max_facets)
    return labels[codes]


def _natural(value: Any) -> tuple:
    text = str(value)
    if text in (NONE_LABEL, OTHER_LABEL):
        return (2, 0.0, text)
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def rows_in_bins(
    values: pd.Series,
    keys: np.ndarray | None,
    selected: Iterable[tuple[str, int]],
    bins: int = 20,
    max_facets: int = 24,
) -> pd.Index:
    """Row ids whose (facet, bin) is among ``selected``."""
    chosen = {(str(f), int(b)) for f, b in selected}
    if not chosen:
        return values.index[:0]
    idx = bin_index(values.to_numpy(dtype=np.float64), bin_edges(bins))
    codes, labels = _facet_codes(keys, max_facets, len(values))
    position = {label: i for i, label in enumerate(labels)}
    wanted = np.zeros((len(labels), bins), dtype=bool)
    for facet, b in chosen:
        if facet in position and 0 <= b < bins:
            wanted[position[facet], b] = True
    valid = idx >= 0
    mask = np.zeros(len(values), dtype=bool)
    mask[valid] = wanted[codes[valid], idx[valid]]
    return values.index[mask]


def selection_from_event(points: Iterable[dict]) -> list[tuple[str, int]]:
    """(facet, bin) pairs from a plotly selection event's points (bars carry ``customdata``)."""
    out = []
    for point in points or []:
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and len(data) >= 2:
            try:
                out.append((str(data[0]), int(data[1])))
            except (TypeError, ValueError):
                continue
    return sorted(set(out))


# --------------------------------------------------------------------------- row lists

LIST_COLUMNS = ("run", "step", "task_id", "annotation_type", "format_reason", "answer_reward", "annotation_reward")


def take(frame: pd.DataFrame, ids: pd.Index, columns: Sequence[str]) -> pd.DataFrame:
    """``frame.loc[ids, columns]`` built column by column: only those columns are copied."""
    ids = pd.Index(ids)
    positions = row_positions(frame.index, ids)
    if (positions < 0).any():
        raise KeyError(f"row(s) not in the table: {list(ids[positions < 0][:5])}")
    return pd.DataFrame({c: frame[c].array.take(positions) for c in columns}, index=ids)


def row_list(table: pd.DataFrame, scores: pd.DataFrame, ids: pd.Index, limit: int = 1000) -> pd.DataFrame:
    """A compact table of rows (for lists that open a row in the inspector)."""
    ids = ids[:limit]
    out = take(table, ids, [c for c in LIST_COLUMNS if c in table.columns])
    picked = take(scores, ids, ["score", "solved"])
    out.insert(0, "score", picked["score"].to_numpy())
    out.insert(1, "solved", picked["solved"].to_numpy())
    return out


def filter_rows(
    table: pd.DataFrame,
    *,
    runs: Sequence[str] = (),
    tasks: Sequence[str] = (),
    annotation_types: Sequence[str] = (),
    reasons: Sequence[str] = (),
    text: str = "",
) -> np.ndarray:
    """Boolean mask: rows matching every given filter (empty filter = all); ``text`` searches the response."""
    mask = np.ones(len(table), dtype=bool)
    for column, chosen in (("run", runs), ("task_id", tasks), ("annotation_type", annotation_types),
                           ("format_reason", reasons)):
        if chosen:
            labels = facet_keys(table, column)
            mask &= np.isin(labels, [str(c) for c in chosen])
    if text:
        found = table["response"].str.contains(text, case=False, regex=False, na=False)
        mask &= found.array.to_numpy(dtype=bool, na_value=False)
    return mask


# --------------------------------------------------------------------------- display


#: Metric tiles and captions use the app's number policy (:mod:`dashboard.numbers`).
num = numbers.number
pct = numbers.percent


#: Beside a deliberately broken file ``x.jsonl``, ``x.expected.json`` lists its problems by line.
EXPECTED_SUFFIX = ".expected.json"


def deliberate_problems(errors: pd.DataFrame, folder: str | Path) -> np.ndarray:
    """Which reading problems are deliberate: the file's ``<stem>.expected.json`` in ``folder``
    (as the sample data ships) lists a problem on that line. All False when none is listed."""
    deliberate = np.zeros(len(errors), dtype=bool)
    if not len(errors) or "file" not in errors.columns:
        return deliberate
    for name in errors["file"].dropna().astype(str).unique():
        listed = Path(folder) / (str(Path(name).with_suffix("")) + EXPECTED_SUFFIX)
        try:
            lines = {int(p["line"]) for p in json.loads(listed.read_text(encoding="utf-8")) if "line" in p}
        except (OSError, ValueError, TypeError, KeyError):  # no list (or an unreadable one): not deliberate
            continue
        in_file = (errors["file"].astype(str) == name).to_numpy()
        on_listed_line = pd.to_numeric(errors["line"], errors="coerce").isin(lines).to_numpy()
        deliberate |= in_file & on_listed_line
    return deliberate


def files_table(
    plans: Sequence[Any], table: pd.DataFrame, errors: pd.DataFrame | None = None, join: str = "auto"
) -> pd.DataFrame:
    """One line per input file: how it was read, how many rows it gave, and how its rows met the
    instance files (the ``join`` asked for -- the app scores with ``score_files``' default -- the
    rules that matched, and rows left unjoined: ambiguous or unmatched)."""
    counts = table["source_file"].value_counts() if len(table) else pd.Series(dtype=int)
    joins = _join_texts(table, errors_frame([]) if errors is None else errors, join)
    rows = []
    for plan in plans:
        layout = getattr(plan, "layout", None)
        rows.append(
            {
                "file": plan.name,
                "read as": plan.kind,
                "layout": layout.name if layout is not None else "",
                "rows": int(counts.get(plan.name, 0)),
                "joined to instances": joins.get(plan.name, ""),
                "note": plan.message if plan.kind not in ("trace", "simple", "scored") else "",
            }
        )
    return pd.DataFrame(rows, columns=["file", "read as", "layout", "rows", "joined to instances", "note"])


def _join_texts(table: pd.DataFrame, errors: pd.DataFrame, join: str) -> dict[str, str]:
    """Per file whose rows were joined: ``auto: id, prompt`` plus the rows it could not join."""
    if "joined" not in table.columns or not table["joined"].notna().any():
        return {}
    report = join_report(table, errors, join)
    texts = {}
    for row in report.itertuples(index=False):
        if not (row.by_id or row.by_prompt or row.by_order or row.ambiguous or row.unmatched):
            continue
        problems = [f"{numbers.plural(n, 'row')} {what}" for n, what in ((row.ambiguous, "ambiguous"),
                                                                            (row.unmatched, "unmatched")) if n]
        texts[str(row.file)] = "; ".join([row.rule, *problems])
    return texts
