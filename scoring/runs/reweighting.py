"""Re-weighting a scored table without rescoring.

The stored components (``answer_reward``, ``annotation_reward`` and the format
verdict under each output mode) are enough to recompute the task reward,
``overall``, ``zero_reward`` and solved/unsolved for any mode, formula, weights,
``format_weight`` and ``solved_threshold``. The arithmetic is
:func:`scoring.verifier.composition.recompose` -- the very code the scorer runs -- so a
re-weighted row equals calling ``score_trace_response`` with the new options.

Simple-scorer rows keep their score; only their solved flag follows the new
threshold.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd

from ..verifier import (
    FORMULA_ADDITIVE,
    FORMULA_GATED,
    MODE_ANSWER,
    MODE_ANSWER_AND_ANNOTATION,
    SOLVED_THRESHOLD,
    recompose,
    resolve_mode,
    resolve_options,
)
from .columns import LOGGED_PREFIX, MISMATCH_COLUMN
from .reports import with_logged_mismatch

_REQUIRED = ("answer_reward", "annotation_reward", "format", "trace_reward_mode_answer", "score")


def _number(value: Any) -> float:
    """A weight as the scorer reads it (numeric strings too); already validated."""
    return float(value.strip()) if isinstance(value, str) else float(value)


def _check_threshold(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"solved_threshold must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"solved_threshold must be a number, got {value!r}") from None
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ValueError(f"solved_threshold must be in [0, 1], got {value!r}")
    return number


#: Rows re-weighted at a time. The arithmetic makes a few temporaries per block: a quarter of a
#: million rows keeps each one 2 MB, reused from block to block, where whole columns would
#: make a fresh 80 MB array per operation on a run of ten million rows (every page of it
#: faulted in anew, at a cost that swings with the host's memory).
BLOCK_ROWS = 1 << 18


class _Blocks:
    """A float column's values, block by block, as float64 arrays: a numpy column's slices
    (views), a sparse column's blocks filled from its stored values (what densifying the whole
    column gives, a block at a time), any other column converted once."""

    def __init__(self, column: pd.Series) -> None:
        array = column.array
        self.dense: np.ndarray | None = None
        if isinstance(array, pd.arrays.SparseArray) and array.sp_values.dtype == np.float64:
            self.positions = np.asarray(array.sp_index.indices)
            self.values = array.sp_values
            self.fill = np.float64(array.fill_value)
        else:
            self.dense = column.to_numpy(dtype=np.float64)

    def block(self, start: int, stop: int) -> np.ndarray:
        if self.dense is not None:
            return self.dense[start:stop]
        # keys of the positions' own dtype: others would have numpy convert every position first
        low, high = self.positions.searchsorted(np.array((start, stop), dtype=self.positions.dtype))
        out = np.full(stop - start, self.fill, dtype=np.float64)
        out[self.positions[low:high] - start] = self.values[low:high]
        return out


def _fill(
    trace: np.ndarray, all_trace: bool, value: Any, other: np.ndarray | float = np.nan, cache=None
) -> np.ndarray:
    """``value`` on trace rows, ``other`` elsewhere (equal constant columns share one array)."""
    scalar = np.isscalar(value)
    if scalar and cache is not None and (value, all_trace) in cache:
        return cache[(value, all_trace)]
    if all_trace:
        result = np.full(len(trace), value, dtype=np.float64) if scalar else value
    else:
        result = np.where(trace, value, other)
    if scalar and cache is not None:
        cache[(value, all_trace)] = result
    return result


def recompute(
    table: pd.DataFrame,
    *,
    trace_reward_mode: str | None = None,
    trace_annotation_reward_formula: str | None = FORMULA_GATED,
    answer_weight: Any = 0.5,
    annotation_weight: Any = 0.5,
    format_weight: Any = 0.0,
    solved_threshold: Any = SOLVED_THRESHOLD,
    columns: Collection[str] | None = None,
) -> dict[str, np.ndarray]:
    """The columns that change under new options, as arrays (vectorised).

    ``trace_reward_mode=None`` keeps each row's own output mode; a mode given
    here applies to every trace row (and switches the format verdict to that
    mode's schema). Raises ValueError for invalid options, like the scorer.
    ``columns``: only these outputs (each equal to the one computed with all of them):
    a run of ten million rows need not fill a dozen constant columns to plot its scores.
    """

    def wanted(*keys: str) -> bool:
        return columns is None or any(key in columns for key in keys)

    missing = [c for c in _REQUIRED if c not in table.columns]
    if missing:
        raise ValueError(f"not a scored table: missing column(s) {', '.join(missing)}")
    options = resolve_options(
        trace_reward_mode=trace_reward_mode if trace_reward_mode is not None else MODE_ANSWER_AND_ANNOTATION,
        trace_annotation_reward_formula=trace_annotation_reward_formula,
        answer_weight=answer_weight,
        annotation_weight=annotation_weight,
        format_weight=format_weight,
    )
    threshold = _check_threshold(solved_threshold)
    override = None if trace_reward_mode is None else resolve_mode(trace_reward_mode)
    weights = {
        "trace_annotation_reward_formula": options.formula,
        "answer_weight": answer_weight,
        "annotation_weight": annotation_weight,
        "format_weight": format_weight,
    }
    outputs = ("overall", *(("zero_reward",) if wanted("zero_reward") else ()))
    rows = len(table)
    answer_column, annotation_column = _Blocks(table["answer_reward"]), _Blocks(table["annotation_reward"])
    if override is None:
        format_column, mode_column = _Blocks(table["format"]), _Blocks(table["trace_reward_mode_answer"])
    else:
        verdict = "format_ok_answer" if override == MODE_ANSWER else "format_ok_answer_and_annotation"
        format_column, mode_column = _Blocks(table[verdict]), None
    trace = np.empty(rows, dtype=bool)  # simple-scorer rows have no answer reward
    result = {key: np.empty(rows) for key in ("task_reward", *outputs)}
    for start in range(0, rows, BLOCK_ROWS):
        stop = min(rows, start + BLOCK_ROWS)
        answer = answer_column.block(start, stop)
        np.logical_not(np.isnan(answer), out=trace[start:stop])
        composed = recompose(
            answer,
            annotation_column.block(start, stop),
            format_column.block(start, stop),
            # each row in the output mode it was scored in, unless a mode is given for all
            answer_only=None if mode_column is None else mode_column.block(start, stop) == 1.0,
            trace_reward_mode=override,
            outputs=outputs,
            **weights,
        )
        for key, values in composed.items():
            result[key][start:stop] = values
    all_trace = bool(trace.all())
    out: dict[str, np.ndarray] = {}
    cache: dict = {}
    if override is not None:
        is_answer = 1.0 if override == MODE_ANSWER else 0.0
        if wanted("format", "format_schema_ok"):
            fmt = table[verdict].to_numpy(dtype=np.float64)
            out["format"] = _fill(trace, all_trace, fmt, table["format"].to_numpy(dtype=np.float64))
            out["format_schema_ok"] = out["format"]
        for key, value in (
            ("trace_reward_mode_answer", is_answer),
            ("trace_reward_mode_answer_only", is_answer),
            ("trace_reward_mode_answer_and_annotation", 1.0 - is_answer),
        ):
            if wanted(key):
                out[key] = _fill(trace, all_trace, value, cache=cache)
    task_keys = ("task_reward_raw", "task_reward_effective", "task_reward_gated")
    if wanted(*task_keys):
        task = _fill(trace, all_trace, result["task_reward"])
        for key in task_keys:
            out[key] = task
    overall = _fill(trace, all_trace, result["overall"])
    out["overall"] = overall
    if wanted("zero_reward"):
        out["zero_reward"] = _fill(trace, all_trace, result["zero_reward"])
    constants = {
        "format_weight": options.format_weight,
        "trace_answer_weight": options.answer_weight,
        "trace_annotation_weight": options.annotation_weight,
        "trace_annotation_reward_formula_gated": 1.0 if options.formula == FORMULA_GATED else 0.0,
        "trace_annotation_reward_formula_additive": 1.0 if options.formula == FORMULA_ADDITIVE else 0.0,
    }
    for key, value in constants.items():
        if wanted(key):
            out[key] = _fill(trace, all_trace, value, cache=cache)
    if "option_answer_weight" in table.columns and wanted("option_answer_weight", "option_annotation_weight"):
        out["option_answer_weight"] = _fill(trace, all_trace, _number(answer_weight), cache=cache)
        out["option_annotation_weight"] = _fill(trace, all_trace, _number(annotation_weight), cache=cache)
    score = overall if all_trace else np.where(trace, overall, table["score"].to_numpy(dtype=np.float64))
    out["score"] = score
    out["solved"] = score >= threshold
    return out if columns is None else {key: values for key, values in out.items() if key in columns}


def _categorical_where(mask: np.ndarray, new: pd.Series, old: pd.Series) -> pd.Categorical:
    new_cat = pd.Categorical(new) if not isinstance(new.dtype, pd.CategoricalDtype) else new.array
    old_cat = pd.Categorical(old) if not isinstance(old.dtype, pd.CategoricalDtype) else old.array
    categories = list(dict.fromkeys([*old_cat.categories, *new_cat.categories]))
    new_codes = new_cat.set_categories(categories).codes
    old_codes = old_cat.set_categories(categories).codes
    return pd.Categorical.from_codes(np.where(mask, new_codes, old_codes), categories=categories)


def reweight(table: pd.DataFrame, **options: Any) -> pd.DataFrame:
    """A new table with the re-weighted columns replaced (see :func:`recompute` for
    the options). The input table is not modified. When the mode is overridden,
    ``format_reason`` and ``trace_output_mode`` follow the new mode too, and
    ``logged_mismatch`` is recomputed against any logged values."""
    columns = recompute(table, **options)
    out = table.copy(deep=False)
    index = out.index
    for key, values in columns.items():
        out[key] = pd.Series(values, index=index, copy=False)
    mode = options.get("trace_reward_mode")
    if mode is not None:
        canonical = resolve_mode(mode)
        trace = ~np.isnan(table["answer_reward"].to_numpy(dtype=np.float64))
        reason_column = (
            "format_reason_answer" if canonical == MODE_ANSWER else "format_reason_answer_and_annotation"
        )
        if reason_column in table.columns:
            out["format_reason"] = pd.Series(
                _categorical_where(trace, table[reason_column], table["format_reason"]),
                index=index,
                copy=False,
            )
        modes = pd.Series(
            pd.Categorical.from_codes(np.zeros(len(table), dtype=np.int8), [canonical]), index=index
        )
        out["trace_output_mode"] = pd.Series(
            _categorical_where(trace, modes, table["trace_output_mode"]), index=index, copy=False
        )
    if any(c.startswith(LOGGED_PREFIX) and c != MISMATCH_COLUMN for c in out.columns):
        atol = table.attrs.get("scoring_options", {}).get("logged_atol", 1e-6)
        out = with_logged_mismatch(out, atol)
    attrs = dict(table.attrs)
    scoring_options = dict(attrs.get("scoring_options", {}))
    scoring_options.update(options)
    attrs["scoring_options"] = scoring_options
    out.attrs = attrs
    return out


__all__ = ["recompute", "reweight"]
