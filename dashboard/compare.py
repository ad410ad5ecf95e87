"""Compare two runs (or two steps of one run) row by row: join, deltas with CIs, who changed.

No Streamlit here; ``pages/7_Compare.py`` only lays these out.

Sides
    A side is one run and one step (or every step of the run): :class:`Side`.

Join (:func:`compare_runs`)
    Rows of the two sides are matched in a cascade, and the report says which
    rule matched how much:

    1. **instance id** -- rows whose ``instance_id`` occurs on both sides;
    2. **prompt + image** -- of the rows still unmatched, those with the same
       prompt text and the same image *file name* (rows without an image match
       on the prompt alone, and the report counts them);
    3. **row order** -- the i-th row of A with the i-th row of B. Only used when
       a side has neither instance ids nor prompts at all (or when asked for):
       when keys exist but none is shared, the runs have *no common rows* and
       nothing is paired by position.

    The unit of comparison is the matched key (an *instance*): every row of a
    side with that key (its GRPO samples, several steps when "all steps" is
    picked) is averaged first, so each instance counts once. When the table holds
    several lm-eval filters (``strict-match``, ``flexible-extract``...), the filter is
    part of every key: a filter's rows are only ever compared with the same filter's,
    and the deltas get a per-filter slice.

Deltas (:func:`slice_deltas`)
    Per slice (everything, each task, each annotation type) and component, the
    mean of the per-instance differences B - A with a **paired bootstrap**
    percentile interval over instances (1,000 resamples, fixed seed, vectorised:
    one resample-weight matrix per slice times the value matrix; slices above
    :data:`BOOTSTRAP_MAX_UNITS` instances use the normal approximation the
    bootstrap converges to). Solve rates are proportions of matched rows: each
    side gets an exact **Clopper-Pearson** interval, the difference a
    **Newcombe** hybrid score interval built from **Wilson** intervals.
"""

from __future__ import annotations

import math
import re
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dashboard.filters import NONE_LABEL, annotation_mask, split_columns, trace_mask
from dashboard.intervals import (
    BOOTSTRAP_MAX_UNITS,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    bootstrap_means,
    clopper_pearson_interval,
    newcombe_difference,
)
from dashboard.numbers import plural
from dashboard.plot_text import plotly_text, plotly_texts

# --------------------------------------------------------------------------- constants

#: Components compared, column name -> label (means over instances, bootstrap CIs).
COMPONENTS: dict[str, str] = {
    "overall": "overall",
    "task_reward": "task reward",
    "answer": "answer",
    "annotation": "annotation",
    "format": "format",
}
#: The solve rate (a proportion of rows; Wilson / Newcombe / Clopper-Pearson intervals).
SOLVE = "solve_rate"
COMPONENT_LABELS: dict[str, str] = {**COMPONENTS, SOLVE: "solve rate"}

JOIN_AUTO = "auto"
JOIN_ID = "instance_id"
JOIN_PROMPT = "prompt_image"
JOIN_ORDER = "row_order"
JOINS = (JOIN_AUTO, JOIN_ID, JOIN_PROMPT, JOIN_ORDER)
JOIN_LABELS: dict[str, str] = {
    JOIN_AUTO: "automatic (instance id, then prompt + image, then row order)",
    JOIN_ID: "instance id",
    JOIN_PROMPT: "prompt + image",
    JOIN_ORDER: "row order",
}

ALL = "all"
SLICES: dict[str | None, str] = {None: ALL, "task_id": "task", "annotation_type": "annotation type"}
#: Slices added when the table holds several values of them (lm-eval filters: see ``filters.split_columns``).
SPLIT_SLICES: dict[str, str] = {"filter": "filter"}

#: Resampled values per slicing (resamples x instances, summed over bootstrapped slices):
#: beyond it the largest remaining slices use the normal approximation too.
BOOTSTRAP_BUDGET = 4_000_000
#: At most this many slices per slicing (largest first); the rest are pooled into one.
MAX_SLICES = 200
OTHER_SLICES = "(other {n} slices)"
#: A per-instance change smaller than this counts as unchanged.
CHANGE_EPS = 1e-9
ALL_STEPS_LABEL = "all steps"
KEY_CHARS = 90

DELTA_COLUMNS = [
    "slice", "component", "units", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "significant", "method",
    "rows_a", "solved_a", "rows_b", "solved_b", "a_ci_low", "a_ci_high", "b_ci_low", "b_ci_high",
]

# --------------------------------------------------------------------------- sides


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run label and a step (``None``: every step of the run)."""

    run: str
    step: int | None = None

    @property
    def label(self) -> str:
        return f"{self.run} · {ALL_STEPS_LABEL}" if self.step is None else f"{self.run} · step {self.step}"


def _run_codes(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(code of every row, label of every code): runs as text, missing as ``(none)``."""
    if "run" not in table.columns:
        return np.zeros(len(table), dtype=np.int64), np.array([NONE_LABEL], dtype=object)
    codes, uniques = pd.factorize(table["run"], use_na_sentinel=True)
    labels = np.array([str(u) for u in uniques] + [NONE_LABEL], dtype=object)
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes < 0, len(uniques), codes), labels


def run_labels(table: pd.DataFrame) -> np.ndarray:
    """The run of every row as text (missing runs as ``(none)``)."""
    codes, labels = _run_codes(table)
    return labels[codes]


def runs_and_steps(table: pd.DataFrame) -> dict[str, list[int]]:
    """Every run label with its steps (sorted; empty when its rows carry no step)."""
    if not len(table):
        return {}
    codes, labels = _run_codes(table)
    if "step" in table.columns:
        steps = table["step"].array.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        steps = np.full(len(table), np.nan)
    pairs = pd.DataFrame({"run": codes, "step": steps}).drop_duplicates()
    out: dict[str, list[int]] = {}
    for code in sorted(pd.unique(codes), key=lambda c: _natural(labels[c])):
        values = pairs.loc[pairs["run"] == code, "step"].dropna()
        out[str(labels[code])] = sorted(int(v) for v in values)
    return out


def default_sides(table: pd.DataFrame) -> tuple[Side, Side] | None:
    """Two runs at their latest common step (else all steps); with one run, its first and last step.

    None when there is nothing to compare (one run with at most one step)."""
    runs = runs_and_steps(table)
    names = list(runs)
    if len(names) >= 2:
        a, b = names[0], names[1]
        common = sorted(set(runs[a]) & set(runs[b]))
        step = common[-1] if common else None
        return Side(a, step), Side(b, step)
    if names and len(runs[names[0]]) >= 2:
        steps = runs[names[0]]
        return Side(names[0], steps[0]), Side(names[0], steps[-1])
    return None


def side_mask(table: pd.DataFrame, side: Side) -> np.ndarray:
    """Rows of ``side`` (its run, and its step unless every step is meant)."""
    codes, labels = _run_codes(table)
    mask = (labels == side.run)[codes]
    if side.step is not None:
        step = table["step"].array.to_numpy(dtype=np.float64, na_value=np.nan)
        mask &= step == float(side.step)
    return mask


# --------------------------------------------------------------------------- per-row components


def component_frame(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per row: the compared components (NaN where one does not apply) and ``solved`` (0/1).

    ``scores`` is :func:`dashboard.tuning.scores` (the current tuning options), so the
    comparison follows the Tuning page; answer and annotation rewards do not depend on it.
    """
    trace = trace_mask(table)
    ann = annotation_mask(table)
    return pd.DataFrame(
        {
            "overall": scores["score"].to_numpy(dtype=np.float64),
            "task_reward": np.where(trace, scores["task_reward"].to_numpy(dtype=np.float64), np.nan),
            "answer": np.where(trace, table["answer_reward"].to_numpy(dtype=np.float64), np.nan),
            "annotation": np.where(ann, table["annotation_reward"].to_numpy(dtype=np.float64), np.nan),
            "format": np.where(trace, scores["format"].to_numpy(dtype=np.float64), np.nan),
            "solved": scores["solved"].to_numpy(dtype=np.float64),
        },
        index=table.index,
    )


# --------------------------------------------------------------------------- join


@dataclass(frozen=True)
class JoinReport:
    """Which join matched what."""

    requested: str
    side_a: Side
    side_b: Side
    rows_a: int
    rows_b: int
    #: per join rule that was tried: rule -> (instances matched, rows of A, rows of B)
    matched: dict[str, tuple[int, int, int]]
    #: rows joined on the prompt alone because they have no image (A, B)
    no_image: tuple[int, int] = (0, 0)
    notes: tuple[str, ...] = ()

    @property
    def units(self) -> int:
        return sum(v[0] for v in self.matched.values())

    @property
    def matched_rows_a(self) -> int:
        return sum(v[1] for v in self.matched.values())

    @property
    def matched_rows_b(self) -> int:
        return sum(v[2] for v in self.matched.values())

    @property
    def used(self) -> list[str]:
        """The rules that matched at least one row, in cascade order."""
        return [rule for rule, v in self.matched.items() if v[0]]

    @property
    def ok(self) -> bool:
        return self.units > 0

    def summary(self) -> str:
        """One paragraph: which join, how many rows matched, what is left over."""
        a, b = self.side_a.label, self.side_b.label
        if not self.rows_a or not self.rows_b:
            empty = " and ".join(s.label for s, n in ((self.side_a, self.rows_a), (self.side_b, self.rows_b)) if not n)
            return f"No rows for {empty}: pick a run and step that have rows."
        if not self.ok:
            tried = ", ".join(JOIN_LABELS[r] for r in self.matched) or "nothing (no usable key)"
            text = (
                f"No common rows: {a} ({plural(self.rows_a, 'row')}) and {b} ({plural(self.rows_b, 'row')}) share no key "
                f"(tried: {tried}). If the two files list the same prompts in the same order, "
                "choose the row-order join."
            )
            return " ".join([text, *self.notes])
        parts = [f"{JOIN_LABELS[r]}: {plural(v[0], 'instance')}, {v[1]:,} + {v[2]:,} rows"
                 for r, v in self.matched.items() if v[0]]
        text = (
            f"Joined on {' then '.join(JOIN_LABELS[r] for r in self.used)}. "
            f"{plural(self.units, 'instance')} matched: {self.matched_rows_a:,} of {self.rows_a:,} rows of A, "
            f"{self.matched_rows_b:,} of {self.rows_b:,} rows of B ({'; '.join(parts)})."
        )
        if self.no_image[0] or self.no_image[1]:
            text += (
                f" {plural(self.no_image[0], 'row')} of A and {self.no_image[1]:,} of B have no image: "
                "they were matched on the prompt alone."
            )
        left_a, left_b = self.rows_a - self.matched_rows_a, self.rows_b - self.matched_rows_b
        if left_a or left_b:
            text += f" Unmatched (listed below, not compared): {plural(left_a, 'row')} of A, {left_b:,} of B."
        for note in self.notes:
            text += " " + note
        return text


@dataclass
class Joined:
    """Two sides joined: the report, one row per matched instance, and the row mapping."""

    report: JoinReport
    #: one row per matched instance: key, join, task_id, annotation_type, rows_a/rows_b,
    #: ``<component>_a`` / ``_b`` / ``_delta`` for every component, solved_a / solved_b (row counts)
    units: pd.DataFrame
    ids_a: pd.Index  # row ids of side A, in table order
    ids_b: pd.Index
    unit_a: np.ndarray  # instance number of every A row (-1: unmatched)
    unit_b: np.ndarray
    rows: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)  # per-row components per side

    def rows_of(self, unit: int) -> tuple[pd.Index, pd.Index]:
        """Row ids of one matched instance on side A and side B."""
        return self.ids_a[self.unit_a == unit], self.ids_b[self.unit_b == unit]

    @property
    def unmatched_a(self) -> pd.Index:
        return self.ids_a[self.unit_a < 0]

    @property
    def unmatched_b(self) -> pd.Index:
        return self.ids_b[self.unit_b < 0]


def _texts(uniques: Any) -> np.ndarray:
    """Distinct values as text (integral floats without ``.0``), an object array."""
    index = pd.Index(uniques)
    if index.dtype.kind == "f" and len(index) and bool(np.all(np.mod(index.to_numpy(), 1.0) == 0.0)):
        index = index.astype(np.int64)
    return index.astype("str").to_numpy(dtype=object)


#: (id, length, column, file_names) -> (weak reference to the table, codes, texts)
_CODES: OrderedDict[tuple, tuple[Any, np.ndarray, np.ndarray]] = OrderedDict()
_CODES_LOCK = threading.Lock()


def column_codes(table: pd.DataFrame, column: str, *, file_names: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(code of every row, text of every code) for a key column; -1 where missing or blank.

    ``file_names``: key on the last path component (image file name). Remembered per
    table, so comparing other sides of the same table does not hash the texts again.
    """
    key = (id(table), len(table), column, file_names)
    with _CODES_LOCK:
        hit = _CODES.get(key)
        if hit is not None and hit[0]() is table:  # the very same table, not a new one at a reused id
            _CODES.move_to_end(key)
            return hit[1], hit[2]
    if column not in table.columns:
        result = (np.full(len(table), -1, dtype=np.int64), np.zeros(0, dtype=object))
    else:
        codes, uniques = pd.factorize(table[column], use_na_sentinel=True)
        codes = np.asarray(codes, dtype=np.int64)
        texts = _texts(uniques)
        if file_names:
            texts = np.array([_SEP.split(t)[-1] for t in texts], dtype=object)
        # the same text twice (e.g. two paths to one file name) is one key; blank text is no key
        merged, vocab = pd.factorize(texts) if len(texts) else (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object))
        vocab = np.asarray(vocab, dtype=object)
        merged = np.asarray(merged, dtype=np.int64)
        blank = np.asarray(pd.Index(vocab, dtype="str").str.strip() == "", dtype=bool) if len(vocab) else np.zeros(0, bool)
        merged = np.where(blank[merged], -1, merged) if len(merged) else merged
        rows = np.where(codes >= 0, merged[np.maximum(codes, 0)], -1) if len(merged) else np.full(len(codes), -1)
        result = (rows.astype(np.int64), vocab)
    with _CODES_LOCK:
        _CODES[key] = (weakref.ref(table), *result)
        while len(_CODES) > 12:
            _CODES.popitem(last=False)
    return result


def _common(ca: np.ndarray, cb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows whose key (any int64 code, -1 missing) occurs on both sides.

    Returns (mask A, mask B, compact code A, compact code B, the original key of
    every shared compact code); compact codes number the shared keys 0..k-1 in
    order of first appearance on side A."""
    both = np.concatenate([ca, cb])
    valid = both >= 0
    compact = np.full(len(both), -1, dtype=np.int64)
    if valid.any():
        codes, originals = pd.factorize(both[valid])
        compact[valid] = codes
    else:
        originals = np.zeros(0, dtype=np.int64)
    k = len(originals)
    xa, xb = compact[: len(ca)], compact[len(ca):]
    in_a = np.zeros(k, dtype=bool)
    in_b = np.zeros(k, dtype=bool)
    in_a[xa[xa >= 0]] = True
    in_b[xb[xb >= 0]] = True
    shared = in_a & in_b
    rank = np.full(k, -1, dtype=np.int64)
    rank[shared] = np.arange(int(shared.sum()))
    ra = np.where(xa >= 0, rank[np.maximum(xa, 0)] if k else -1, -1)
    rb = np.where(xb >= 0, rank[np.maximum(xb, 0)] if k else -1, -1)
    return ra >= 0, rb >= 0, ra, rb, np.asarray(originals)[shared]


_SEP = re.compile(r"[\\/]")


def _prompt_labels(prompts: np.ndarray, images: np.ndarray, limit: int = KEY_CHARS) -> list[str]:
    """``"<prompt start, one line> · <image>"`` for many keys (slices only: cheap for long prompts)."""
    return [f"{_clip(p, limit)} · {i}" for p, i in zip(prompts, images, strict=True)]


def clear_caches() -> None:
    """Forget the remembered key codes (see :func:`column_codes`)."""
    with _CODES_LOCK:
        _CODES.clear()


def _clip(text: Any, limit: int = KEY_CHARS) -> str:
    """The start of ``text`` on one line, at most ``limit`` characters."""
    text = str(text)
    short = text[:limit].replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ").strip()
    return short if len(text) <= limit else short[: limit - 1] + "…"


def compare_runs(
    table: pd.DataFrame,
    scores: pd.DataFrame,
    side_a: Side,
    side_b: Side,
    *,
    join: str = JOIN_AUTO,
) -> Joined:
    """Join side A and side B of ``table`` (see the module docstring for the rules).

    ``scores`` is the frame of :func:`dashboard.tuning.scores` for ``table``. Never
    raises for data problems: an empty or unmatched comparison comes back with
    ``report.ok`` False and a :meth:`JoinReport.summary` saying why.
    """
    if join not in JOINS:
        raise ValueError(f"join must be one of {', '.join(JOINS)}, got {join!r}")
    pos_a = np.flatnonzero(side_mask(table, side_a))
    pos_b = np.flatnonzero(side_mask(table, side_b))
    values = component_frame(table, scores)
    values_a, values_b = values.iloc[pos_a], values.iloc[pos_b]
    n_a, n_b = len(pos_a), len(pos_b)
    unit_a = np.full(n_a, -1, dtype=np.int64)
    unit_b = np.full(n_b, -1, dtype=np.int64)
    keys: list[str] = []
    how: list[str] = []
    matched: dict[str, tuple[int, int, int]] = {}
    notes: list[str] = []
    no_image = (0, 0)

    def assign(ma, mb, ra, rb, rule: str, labels: list[str]) -> None:
        offset = len(keys)
        unit_a[ma] = ra[ma] + offset
        unit_b[mb] = rb[mb] + offset
        keys.extend(labels)
        how.extend([rule] * len(labels))
        matched[rule] = (len(labels), int(ma.sum()), int(mb.sum()))

    split = split_columns(table)
    if n_a and n_b:
        ids, id_texts = column_codes(table, "instance_id")
        prompts, prompt_texts = column_codes(table, "prompt")
        # the filter is part of every key (width 1 and no label when the table has one filter)
        filter_width, filter_names = 1, np.array([""], dtype=object)
        if split:
            filter_codes, filter_texts = column_codes(table, split[0])
            filter_width = len(filter_texts) + 1
            filter_names = np.array([f" · {t}" for t in (NONE_LABEL, *filter_texts)], dtype=object)
            ids = np.where(ids >= 0, ids * filter_width + filter_codes + 1, -1)
            prompts = np.where(prompts >= 0, prompts * filter_width + filter_codes + 1, -1)
        ia_, ib_ = ids[pos_a], ids[pos_b]
        pa, pb = prompts[pos_a], prompts[pos_b]
        has_id = bool((ia_ >= 0).any() and (ib_ >= 0).any())
        has_prompt = bool((pa >= 0).any() and (pb >= 0).any())
        if join in (JOIN_AUTO, JOIN_ID):
            if has_id:
                ma, mb, ra, rb, shared = _common(ia_, ib_)
                key, part = np.divmod(np.asarray(shared, dtype=np.int64), filter_width)
                assign(ma, mb, ra, rb, JOIN_ID, [f"{id_texts[k]}{filter_names[f]}" for k, f in zip(key, part, strict=True)])
            elif join == JOIN_ID:
                notes.append("Instance-id join asked for, but a side has no instance ids.")
        if join in (JOIN_AUTO, JOIN_PROMPT):
            if has_prompt:
                images, image_names = column_codes(table, "image_ref", file_names=True)
                ia, ib = images[pos_a], images[pos_b]
                width = len(image_names) + 1
                ca = np.where((pa >= 0) & (unit_a < 0), pa * width + (ia + 1), -1)
                cb = np.where((pb >= 0) & (unit_b < 0), pb * width + (ib + 1), -1)
                ma, mb, ra, rb, shared = _common(ca, cb)
                prompt, image = np.divmod(np.asarray(shared, dtype=np.int64), width)
                prompt, part = np.divmod(prompt, filter_width)
                names = np.append(np.array(["(no image)"], dtype=object), image_names)
                labels = _prompt_labels(prompt_texts[prompt], names[image])
                assign(ma, mb, ra, rb, JOIN_PROMPT, [f"{label}{filter_names[f]}" for label, f in zip(labels, part, strict=True)])
                no_image = (int((ma & (ia < 0)).sum()), int((mb & (ib < 0)).sum()))
            elif join == JOIN_PROMPT:
                notes.append("Prompt + image join asked for, but a side has no prompts.")
        no_keys = not has_id and not has_prompt
        if join == JOIN_ORDER or (join == JOIN_AUTO and no_keys):
            n = min(n_a, n_b)
            ra = np.concatenate([np.arange(n, dtype=np.int64), np.full(n_a - n, -1, dtype=np.int64)])
            rb = np.concatenate([np.arange(n, dtype=np.int64), np.full(n_b - n, -1, dtype=np.int64)])
            assign(ra >= 0, rb >= 0, ra, rb, JOIN_ORDER, [f"row {i + 1}" for i in range(n)])
            if join == JOIN_AUTO:
                notes.append("The sides share no kind of key (instance ids or prompts), so rows were paired by "
                             "their order.")
            if n_a != n_b:
                notes.append(f"The sides differ in length ({n_a:,} vs {n_b:,} rows): the extra rows are unmatched.")

    report = JoinReport(
        requested=join, side_a=side_a, side_b=side_b, rows_a=n_a, rows_b=n_b, matched=matched,
        no_image=no_image, notes=tuple(notes),
    )
    units = _unit_frame(table, pos_a, pos_b, values_a, values_b, unit_a, unit_b, keys, how, split)
    return Joined(
        report=report, units=units, ids_a=table.index[pos_a], ids_b=table.index[pos_b], unit_a=unit_a, unit_b=unit_b,
        rows={"a": values_a, "b": values_b},
    )


def _first_rows(unit: np.ndarray, count: int) -> np.ndarray:
    """Position of the first row of every unit (-1 when the unit has no row)."""
    first = np.full(count, -1, dtype=np.int64)
    where = np.flatnonzero(unit >= 0)[::-1]
    first[unit[where]] = where
    return first


def _labels_at(table: pd.DataFrame, column: str, positions: np.ndarray) -> np.ndarray:
    """``table[column]`` at ``positions`` as text (None where missing or position -1)."""
    out = np.full(len(positions), None, dtype=object)
    if column not in table.columns or not len(table):
        return out
    ok = positions >= 0
    picked = table[column].iloc[positions[ok]]
    codes, uniques = pd.factorize(picked, use_na_sentinel=True)
    texts = np.append(pd.Index(uniques).astype("str").to_numpy(dtype=object), np.array([None], dtype=object))
    out[ok] = texts[np.asarray(codes)]
    return out


def _unit_frame(table, pos_a, pos_b, values_a, values_b, unit_a, unit_b, keys, how, split=()) -> pd.DataFrame:
    count = len(keys)
    first_a, first_b = _first_rows(unit_a, count), _first_rows(unit_b, count)
    # positions in the whole table (-1 stays -1)
    first_a = np.where(first_a >= 0, pos_a[np.maximum(first_a, 0)], -1) if len(pos_a) else first_a
    first_b = np.where(first_b >= 0, pos_b[np.maximum(first_b, 0)], -1) if len(pos_b) else first_b
    out: dict[str, Any] = {"key": np.asarray(keys, dtype=object), "join": np.asarray(how, dtype=object)}
    for column in ("task_id", "annotation_type", *split):
        a = _labels_at(table, column, first_a)
        b = _labels_at(table, column, first_b)
        label = np.where(pd.isna(a), b, a)
        out[column] = np.where(pd.isna(label), NONE_LABEL, label).astype(object)
    out["row_a"] = table.index[first_a].to_numpy(dtype=object) if count else np.empty(0, dtype=object)
    out["row_b"] = table.index[first_b].to_numpy(dtype=object) if count else np.empty(0, dtype=object)
    ma, mb = unit_a >= 0, unit_b >= 0
    out["rows_a"] = np.bincount(unit_a[ma], minlength=count).astype(np.int64)
    out["rows_b"] = np.bincount(unit_b[mb], minlength=count).astype(np.int64)
    for name in (*COMPONENTS, "solved"):
        means = []
        for unit, values, matched in ((unit_a, values_a, ma), (unit_b, values_b, mb)):
            v = values[name].to_numpy(dtype=np.float64)
            ok = matched & ~np.isnan(v)
            total = np.bincount(unit[ok], weights=v[ok], minlength=count)
            n = np.bincount(unit[ok], minlength=count)
            if name == "solved":
                means.append(total)  # solved rows (a count)
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    means.append(np.where(n > 0, total / np.maximum(n, 1), np.nan))
        if name == "solved":
            out["solved_a"], out["solved_b"] = means[0].astype(np.int64), means[1].astype(np.int64)
        else:
            out[f"{name}_a"], out[f"{name}_b"] = means
            out[f"{name}_delta"] = means[1] - means[0]
    frame = pd.DataFrame(out)
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["solve_rate_a"] = frame["solved_a"] / frame["rows_a"].where(frame["rows_a"] > 0)
        frame["solve_rate_b"] = frame["solved_b"] / frame["rows_b"].where(frame["rows_b"] > 0)
    frame["solve_rate_delta"] = frame["solve_rate_b"] - frame["solve_rate_a"]
    frame.index.name = "unit"
    return frame


def _natural(value: Any) -> tuple:
    text = str(value)
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text) if t)


def _slice_seed(seed: int, by: str | None, label: str) -> list[int]:
    return [int(seed), zlib.crc32(f"{by}\x00{label}".encode())]


def slice_deltas(
    joined: Joined,
    by: str | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
    max_units: int = BOOTSTRAP_MAX_UNITS,
    budget: int = BOOTSTRAP_BUDGET,
    max_slices: int = MAX_SLICES,
) -> pd.DataFrame:
    """Per slice of the matched instances (``by``: None for everything, ``task_id`` or
    ``annotation_type``) and per component: instances, mean A, mean B, delta (B - A)
    and its interval; solve rate rows carry the row counts and each side's exact interval.

    One row per (slice, component) with at least one instance having the component
    (see :data:`DELTA_COLUMNS`). Largest slices first; beyond ``max_slices`` the
    smallest slices are pooled into one.
    """
    units = joined.units
    if not len(units):
        return pd.DataFrame(columns=DELTA_COLUMNS)
    labels = np.full(len(units), ALL, dtype=object) if by is None else units[by].astype(str).to_numpy(dtype=object)
    codes, uniques = pd.factorize(labels)
    sizes = np.bincount(codes, minlength=len(uniques))
    order = sorted(range(len(uniques)), key=lambda i: (-sizes[i], _natural(uniques[i])))
    names = [str(uniques[i]) for i in order]
    if len(order) > max_slices:
        kept, pooled = order[: max_slices - 1], order[max_slices - 1:]
        remap = np.empty(len(uniques), dtype=np.int64)
        remap[kept] = np.arange(len(kept))
        remap[pooled] = len(kept)
        codes = remap[codes]
        names = names[: max_slices - 1] + [OTHER_SLICES.format(n=len(pooled))]
    else:
        remap = np.empty(len(uniques), dtype=np.int64)
        remap[order] = np.arange(len(order))
        codes = remap[codes]
    deltas = units[[f"{c}_delta" for c in COMPONENTS]].to_numpy(dtype=np.float64)
    side_a = units[[f"{c}_a" for c in COMPONENTS]].to_numpy(dtype=np.float64)
    side_b = units[[f"{c}_b" for c in COMPONENTS]].to_numpy(dtype=np.float64)
    paired = ~np.isnan(deltas)
    solved = units[["solved_a", "rows_a", "solved_b", "rows_b"]].to_numpy(dtype=np.float64)
    sort = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[sort], np.arange(len(names) + 1))
    # bootstrap the smallest slices first while the budget lasts; the rest: normal approximation
    counts = np.diff(bounds)
    bootstrapped = np.zeros(len(names), dtype=bool)
    spent = 0
    for s in np.argsort(counts, kind="stable"):
        cost = int(counts[s]) * resamples
        if counts[s] <= max_units and spent + cost <= budget:
            bootstrapped[s] = True
            spent += cost
    records: list[dict[str, Any]] = []
    for s, name in enumerate(names):
        idx = sort[bounds[s]:bounds[s + 1]]
        mean, low, high, method = bootstrap_means(
            deltas[idx], resamples=resamples, seed=_slice_seed(seed, by, name),
            confidence=confidence, normal=not bootstrapped[s],
        )
        ok = paired[idx]
        for j, component in enumerate(COMPONENTS):
            n = int(ok[:, j].sum())
            if not n:
                continue
            records.append(
                {
                    "slice": name, "component": component, "units": n,
                    "mean_a": float(side_a[idx, j][ok[:, j]].mean()),
                    "mean_b": float(side_b[idx, j][ok[:, j]].mean()),
                    "delta": float(mean[j]), "ci_low": float(low[j]), "ci_high": float(high[j]), "method": method,
                }
            )
        k_a, n_a, k_b, n_b = solved[idx].sum(axis=0)
        delta, low_d, high_d = newcombe_difference(k_a, n_a, k_b, n_b, confidence)
        a_low, a_high = clopper_pearson_interval(k_a, n_a, confidence)
        b_low, b_high = clopper_pearson_interval(k_b, n_b, confidence)
        records.append(
            {
                "slice": name, "component": SOLVE, "units": len(idx),
                "mean_a": k_a / n_a if n_a else math.nan, "mean_b": k_b / n_b if n_b else math.nan,
                "delta": float(delta), "ci_low": float(low_d), "ci_high": float(high_d),
                "method": "Newcombe (Wilson) on rows; sides: Clopper-Pearson",
                "rows_a": int(n_a), "solved_a": int(k_a), "rows_b": int(n_b), "solved_b": int(k_b),
                "a_ci_low": float(a_low), "a_ci_high": float(a_high), "b_ci_low": float(b_low), "b_ci_high": float(b_high),
            }
        )
    out = pd.DataFrame.from_records(records, columns=DELTA_COLUMNS)
    out["significant"] = (out["ci_low"] > 0) | (out["ci_high"] < 0)
    for column in ("rows_a", "solved_a", "rows_b", "solved_b"):
        out[column] = out[column].astype("Int64")
    return out


def all_deltas(joined: Joined, **kwargs: Any) -> dict[str, pd.DataFrame]:
    """:func:`slice_deltas` for everything, per task, per annotation type and, when the units carry one,
    per lm-eval filter (keys: ``all``, column names)."""
    slicings = [*SLICES, *(c for c in SPLIT_SLICES if c in joined.units.columns)]
    return {ALL if by is None else by: slice_deltas(joined, by, **kwargs) for by in slicings}


def component_view(deltas: pd.DataFrame, component: str) -> pd.DataFrame:
    """The rows of one component, for display (slice first, no empty columns)."""
    frame = deltas[deltas["component"] == component].drop(columns="component")
    if component != SOLVE:
        frame = frame.drop(columns=["rows_a", "solved_a", "rows_b", "solved_b", "a_ci_low", "a_ci_high",
                                    "b_ci_low", "b_ci_high"])
    return frame.reset_index(drop=True)


# --------------------------------------------------------------------------- who changed

CHANGE_COLUMNS = ["key", "task_id", "annotation_type", "join", "rows_a", "rows_b", "a", "b", "delta",
                  "solve_rate_a", "solve_rate_b", "row_a", "row_b"]


def changes(joined: Joined, component: str = "overall", *, eps: float = CHANGE_EPS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(improved, regressed) instances by ``component`` (per-instance mean B - A): improved
    largest gain first, regressed largest loss first; ties by key. Index: the instance number."""
    if component not in COMPONENT_LABELS:
        raise ValueError(f"unknown component {component!r}; components are: {', '.join(COMPONENT_LABELS)}")
    units = joined.units
    frame = pd.DataFrame(
        {
            "key": units["key"],
            "task_id": units["task_id"],
            "annotation_type": units["annotation_type"],
            "join": units["join"].map(JOIN_LABELS),
            "rows_a": units["rows_a"],
            "rows_b": units["rows_b"],
            "a": units[f"{component}_a"],
            "b": units[f"{component}_b"],
            "delta": units[f"{component}_delta"],
            "solve_rate_a": units["solve_rate_a"],
            "solve_rate_b": units["solve_rate_b"],
            "row_a": units["row_a"],
            "row_b": units["row_b"],
        },
        index=units.index,
    )
    delta = frame["delta"].to_numpy(dtype=np.float64)
    keys = frame["key"].astype(str).to_numpy()
    up = np.flatnonzero(delta > eps)
    down = np.flatnonzero(delta < -eps)
    improved = frame.iloc[up[np.lexsort((keys[up], -delta[up]))]]
    regressed = frame.iloc[down[np.lexsort((keys[down], delta[down]))]]
    return improved, regressed


def change_counts(joined: Joined, component: str = "overall", *, eps: float = CHANGE_EPS) -> dict[str, int]:
    """How many instances improved, regressed, stayed the same or lack the component."""
    delta = joined.units[f"{component}_delta"].to_numpy(dtype=np.float64)
    known = ~np.isnan(delta)
    return {
        "improved": int((delta[known] > eps).sum()),
        "regressed": int((delta[known] < -eps).sum()),
        "unchanged": int((np.abs(delta[known]) <= eps).sum()),
        "missing": int((~known).sum()),
    }


UNMATCHED_COLUMNS = ("run", "step", "instance_id", "task_id", "annotation_type", "sample_index", "image_ref", "prompt")


def unmatched_rows(table: pd.DataFrame, ids: pd.Index, limit: int | None = None) -> pd.DataFrame:
    """The unmatched rows of one side (identity columns, prompt clipped), index row id."""
    cols = [c for c in UNMATCHED_COLUMNS if c in table.columns]
    frame = table.loc[ids if limit is None else ids[:limit], cols].copy()
    if "prompt" in frame.columns:
        frame["prompt"] = frame["prompt"].astype(object).map(lambda p: None if p is None or p is pd.NA or (isinstance(p, float) and math.isnan(p)) else _clip(p, 120))
    return frame


#: The side-by-side picker offers at most this many instances (largest change first).
PICKER_LIMIT = 1000


def unit_choices(joined: Joined, component: str = "overall", *, limit: int | None = None,
                 keep: int | None = None) -> list[int]:
    """Matched instances ordered for the side-by-side picker: biggest |change| first, then by key.

    ``limit`` keeps the first ones; ``keep`` (an instance number) is added when cut off."""
    units = joined.units
    delta = np.abs(units[f"{component}_delta"].to_numpy(dtype=np.float64))
    delta = np.where(np.isnan(delta), -1.0, delta)
    keys = units["key"].to_numpy(dtype=object)
    order = units.index.to_numpy()[np.lexsort((keys, -delta))]
    chosen = [int(i) for i in (order if limit is None else order[:limit])]
    if keep is not None and keep in units.index and keep not in chosen:
        chosen.append(int(keep))
    return chosen


def unit_labels(joined: Joined, units: Sequence[int], component: str = "overall") -> dict[int, str]:
    """Picker labels: ``key · task · Δ component`` for each instance number."""
    frame = joined.units.loc[list(units), ["key", "task_id", f"{component}_delta"]]
    name = COMPONENT_LABELS[component]
    return {
        int(u): f"{k} · {t} · Δ {name} {'n/a' if d != d else f'{d:+.3f}'}"
        for u, k, t, d in zip(frame.index, frame["key"], frame["task_id"], frame[f"{component}_delta"], strict=True)
    }


def unit_label(joined: Joined, unit: int, component: str = "overall") -> str:
    return unit_labels(joined, [unit], component)[int(unit)]


# --------------------------------------------------------------------------- figure


def delta_figure(view: pd.DataFrame, *, title: str, limit: int = 40):
    """Horizontal delta bars with their interval as error bars (a :func:`component_view` frame)."""
    import plotly.graph_objects as go

    part = view.head(limit)
    delta = part["delta"].to_numpy(dtype=np.float64)
    low = part["ci_low"].to_numpy(dtype=np.float64)
    high = part["ci_high"].to_numpy(dtype=np.float64)
    labels = plotly_texts(part["slice"])
    fig = go.Figure(
        go.Bar(
            x=delta,
            y=labels,
            orientation="h",
            marker_color=np.where(delta >= 0, "#2b8a3e", "#c92a2a").tolist(),
            error_x={"type": "data", "symmetric": False, "array": np.nan_to_num(high - delta).tolist(),
                     "arrayminus": np.nan_to_num(delta - low).tolist(), "color": "#343a40", "thickness": 1.2},
            customdata=np.column_stack([part["mean_a"], part["mean_b"], low, high, part["units"]]),
            hovertemplate="%{y}<br>Δ %{x:+.4f} [%{customdata[2]:+.4f}, %{customdata[3]:+.4f}]"
            "<br>A %{customdata[0]:.4f} → B %{customdata[1]:.4f}<br>%{customdata[4]} instances<extra></extra>",
        )
    )
    fig.add_vline(x=0.0, line_color="#868e96", line_width=1)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        title={"text": plotly_text(title), "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        height=max(220, 26 * len(part) + 90), margin={"l": 40, "r": 16, "t": 48, "b": 36}, showlegend=False,
    )
    return fig


__all__ = [
    "ALL",
    "COMPONENTS",
    "COMPONENT_LABELS",
    "JOINS",
    "JOIN_LABELS",
    "SOLVE",
    "JoinReport",
    "Joined",
    "Side",
    "all_deltas",
    "change_counts",
    "changes",
    "clear_caches",
    "column_codes",
    "compare_runs",
    "component_frame",
    "component_view",
    "default_sides",
    "delta_figure",
    "runs_and_steps",
    "side_mask",
    "slice_deltas",
    "unit_choices",
    "unit_label",
    "unit_labels",
    "unmatched_rows",
]
