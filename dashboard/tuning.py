"""Tuning options, re-weighting a whole run, and the before/after comparison (no Streamlit).

The options the app carries around are a plain dict (see :data:`OPTION_KEYS`).
Re-weighting is :func:`scoring.runs.reweighting.recompute` -- the scorer's own
arithmetic on the stored components -- never a copy of the reward formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dashboard.filters import (
    TASK_FAMILY,
    TableMemo,
    binned,
    dense_values,
    factorized,
    grouped_mean,
    present_mean,
)
from scoring.runs import recompute
from scoring.verifier import (
    DEFAULT_ANNOTATION_WEIGHT,
    DEFAULT_ANSWER_WEIGHT,
    DEFAULT_FORMAT_WEIGHT,
    FORMULA_ADDITIVE,
    FORMULA_GATED,
    MODE_ANSWER,
    MODE_ANSWER_AND_ANNOTATION,
    SOLVED_THRESHOLD,
    resolve_options,
)

#: ``mode=None`` keeps each row's own output mode (as scored); widgets use :data:`PER_ROW` for it.
PER_ROW = "per_row"
MODES: tuple[str, ...] = (PER_ROW, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION)
MODE_LABELS = {
    None: "each row's own mode (as scored)",
    PER_ROW: "each row's own mode (as scored)",
    MODE_ANSWER: "answer (every row)",
    MODE_ANSWER_AND_ANNOTATION: "answer_and_annotation (every row)",
}
FORMULAS = (FORMULA_GATED, FORMULA_ADDITIVE)
OPTION_KEYS = ("mode", "formula", "answer_weight", "annotation_weight", "format_weight", "solved_threshold")
DEFAULT_OPTIONS: dict[str, Any] = {
    "mode": None,
    "formula": FORMULA_GATED,
    "answer_weight": DEFAULT_ANSWER_WEIGHT,
    "annotation_weight": DEFAULT_ANNOTATION_WEIGHT,
    "format_weight": DEFAULT_FORMAT_WEIGHT,
    "solved_threshold": SOLVED_THRESHOLD,
}


def widget_value(option: str, value: Any) -> Any:
    """An option's value as its widget holds it (``mode=None`` -> :data:`PER_ROW`)."""
    return PER_ROW if option == "mode" and value is None else value


def scored_options(table: pd.DataFrame) -> dict[str, Any]:
    """The options a table was scored with (from ``table.attrs``), as an options dict."""
    stored = table.attrs.get("scoring_options", {}) if table is not None else {}
    options = dict(DEFAULT_OPTIONS)
    mapping = {
        "mode": "trace_reward_mode",
        "formula": "trace_annotation_reward_formula",
        "answer_weight": "answer_weight",
        "annotation_weight": "annotation_weight",
        "format_weight": "format_weight",
        "solved_threshold": "solved_threshold",
    }
    for key, name in mapping.items():
        if name in stored and (stored[name] is not None or key == "mode"):
            options[key] = stored[name]
    return normalised(options)


def normalised(options: Mapping[str, Any]) -> dict[str, Any]:
    """Only :data:`OPTION_KEYS`, numbers as floats, missing keys filled with defaults."""
    out = {key: options.get(key, DEFAULT_OPTIONS[key]) for key in OPTION_KEYS}
    for key in ("answer_weight", "annotation_weight", "format_weight", "solved_threshold"):
        out[key] = float(out[key])
    out["formula"] = out["formula"] or FORMULA_GATED
    if out["mode"] in (PER_ROW, ""):
        out["mode"] = None
    return out


def annotation_share(options: Mapping[str, Any]) -> float:
    """The annotation weight's share of answer + annotation (what the scorer normalises to)."""
    total = float(options["answer_weight"]) + float(options["annotation_weight"])
    return float(options["annotation_weight"]) / total if total > 0 else 0.0


def validate(options: Mapping[str, Any]) -> str:
    """'' when the options are valid, else the scorer's own message naming the option."""
    try:
        opts = normalised(options)
        resolve_options(
            trace_reward_mode=opts["mode"] or MODE_ANSWER_AND_ANNOTATION,
            trace_annotation_reward_formula=opts["formula"],
            answer_weight=opts["answer_weight"],
            annotation_weight=opts["annotation_weight"],
            format_weight=opts["format_weight"],
        )
        if not 0.0 <= opts["solved_threshold"] <= 1.0:
            raise ValueError(f"solved_threshold must be in [0, 1], got {opts['solved_threshold']!r}")
    except (TypeError, ValueError) as exc:
        return str(exc)
    return ""


def recompute_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of :func:`scoring.runs.reweighting.recompute` for an options dict."""
    opts = normalised(options)
    return {
        "trace_reward_mode": opts["mode"],
        "trace_annotation_reward_formula": opts["formula"],
        "answer_weight": opts["answer_weight"],
        "annotation_weight": opts["annotation_weight"],
        "format_weight": opts["format_weight"],
        "solved_threshold": opts["solved_threshold"],
    }


def scorer_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """The run-wide keyword arguments of ``score_trace_response`` for an options dict
    (``trace_reward_mode`` only when one mode is forced on every row)."""
    opts = normalised(options)
    kwargs: dict[str, Any] = {}
    if opts["mode"] is not None:
        kwargs["trace_reward_mode"] = opts["mode"]
    kwargs.update(
        trace_annotation_reward_formula=opts["formula"],
        answer_weight=opts["answer_weight"],
        annotation_weight=opts["annotation_weight"],
        format_weight=opts["format_weight"],
    )
    return kwargs


# --------------------------------------------------------------------------- scores under options

#: Columns of :func:`scores` (the values that change with the options).
SCORE_COLUMNS = ("score", "task_reward", "format", "solved")


def _key(options: Mapping[str, Any]) -> tuple:
    opts = normalised(options)
    return tuple(opts[k] for k in OPTION_KEYS)


def _same_weights(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _key(a)[:5] == _key(b)[:5]


#: Bytes of per-option score frames kept (a frame is ~25 bytes per row: a 10M-row run's are
#: 250 MB each, so two or three are kept there, eight for a million rows).
SCORES_MEMO_BYTES = 600e6


def _frame_bytes(frame: pd.DataFrame) -> int:
    return int(frame.memory_usage(index=False).sum())


_SCORES = TableMemo(size=8, max_bytes=SCORES_MEMO_BYTES, weigh=_frame_bytes)


def scores(table: pd.DataFrame, options: Mapping[str, Any]) -> pd.DataFrame:
    """``score`` (overall; the simple scorer's score on simple rows), ``task_reward``,
    ``format`` and ``solved`` of every row under ``options`` (same index as ``table``).

    The as-scored options read the stored columns; others re-weight with
    :func:`scoring.runs.reweighting.recompute`. Results are memoised per table and options.
    """
    return _SCORES.get(table, _key(options), lambda: _scores(table, options))


def _scores(table: pd.DataFrame, options: Mapping[str, Any]) -> pd.DataFrame:
    threshold = float(normalised(options)["solved_threshold"])
    if _same_weights(options, scored_options(table)):
        score = dense_values(table, "score")
        task = dense_values(table, "task_reward_effective")
        fmt = dense_values(table, "format")
    else:
        arrays = recompute(table, **recompute_kwargs(options), columns=("score", "task_reward_effective", "format"))
        score = arrays["score"]
        task = arrays["task_reward_effective"]
        fmt = arrays["format"] if "format" in arrays else dense_values(table, "format")
    return pd.DataFrame(  # copy=False: the arrays as they are, not stacked into one block (a copy)
        {"score": score, "task_reward": task, "format": fmt, "solved": score >= threshold},
        index=table.index,
        copy=False,
    )


# --------------------------------------------------------------------------- before / after


@dataclass(frozen=True)
class Comparison:
    """The whole run under two option sets."""

    before: pd.DataFrame  # :func:`scores` under the baseline
    after: pd.DataFrame  # :func:`scores` under the chosen options
    summary: pd.DataFrame  # metric, before, after, delta
    per_task: pd.DataFrame  # task_id, rows, mean/solve before and after, deltas
    flips: pd.Index  # row ids whose solved flag changes
    flip_positions: np.ndarray  # their positions in the table (no lookup of ids in a million-row index)

    @property
    def newly_solved(self) -> pd.Index:
        return self.flips[self._solved_after()]

    @property
    def newly_unsolved(self) -> pd.Index:
        return self.flips[~self._solved_after()]

    def _solved_after(self) -> np.ndarray:
        return self.after["solved"].to_numpy(dtype=bool)[self.flip_positions]


#: A comparison keeps its two score frames alive: bounded like :data:`_SCORES` (by its ``after``,
#: the ``before`` being the baseline all comparisons share).
_COMPARISONS = TableMemo(size=8, max_bytes=SCORES_MEMO_BYTES, weigh=lambda c: _frame_bytes(c.after))


def compare(table: pd.DataFrame, before: Mapping[str, Any], after: Mapping[str, Any]) -> Comparison:
    """Mean overall, solve rate, per-task deltas and the rows that flip solved <-> unsolved
    (memoised per table and option pair, like :func:`scores`)."""
    return _COMPARISONS.get(table, (_key(before), _key(after)), lambda: _compare(table, before, after))


_MEANS = TableMemo(size=8)


def _means(frame: pd.DataFrame) -> dict[str, float]:
    """The summary's means of a :func:`scores` frame, missing values left out (memoised per frame:
    the baseline's are computed once, not at every tuning change)."""

    def mean(column: str) -> float:
        values = frame[column]
        return present_mean(values.to_numpy(dtype=bool if values.dtype == bool else np.float64))

    return _MEANS.get(frame, "means", lambda: {
        "mean overall": mean("score"),
        "solve rate": mean("solved"),
        "mean task reward": mean("task_reward"),
        "mean format": mean("format"),
    })


def _compare(table: pd.DataFrame, before: Mapping[str, Any], after: Mapping[str, Any]) -> Comparison:
    b = scores(table, before)
    a = scores(table, after)
    mb, ma = _means(b), _means(a)
    summary = pd.DataFrame([(metric, mb[metric], ma[metric]) for metric in mb], columns=["metric", "before", "after"])
    summary["delta"] = summary["after"] - summary["before"]
    positions = np.flatnonzero(b["solved"].to_numpy() != a["solved"].to_numpy())
    per_task = per_task_delta(table, b, a)
    return Comparison(before=b, after=a, summary=summary, per_task=per_task, flips=table.index[positions],
                      flip_positions=positions)


def per_task_delta(table: pd.DataFrame, before: pd.DataFrame, after: pd.DataFrame, by: str = TASK_FAMILY) -> pd.DataFrame:
    """Per task family (or ``by``): rows, mean overall and solve rate before/after and their deltas
    (largest change first)."""
    codes, labels = factorized(table, by)
    rows, mean_before, solve_before = _group_means(table, before, by)
    _, mean_after, solve_after = _group_means(table, after, by)
    flips = before["solved"].to_numpy() != after["solved"].to_numpy()
    out = pd.DataFrame(
        {
            by: labels,
            "rows": rows,
            "mean_before": mean_before,
            "mean_after": mean_after,
            "solve_before": solve_before,
            "solve_after": solve_after,
            "flips": np.bincount(codes[flips], minlength=len(labels)).astype(np.int64),
        }
    )
    out["mean_delta"] = out["mean_after"] - out["mean_before"]
    out["solve_delta"] = out["solve_after"] - out["solve_before"]
    order = np.argsort(-np.nan_to_num(out["mean_delta"].abs().to_numpy()), kind="stable")
    return out.iloc[order].reset_index(drop=True)


_GROUP_MEANS = TableMemo(size=16)


def _group_means(table: pd.DataFrame, frame: pd.DataFrame, by: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, mean score and solve rate per group of ``by`` of a :func:`scores` frame (memoised
    per frame: a tuning change computes the new options' means, the baseline's are kept)."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        codes, labels = factorized(table, by)
        rows = _GROUP_MEANS.get(table, ("rows", by), lambda: np.bincount(codes, minlength=len(labels)))
        score = grouped_mean(codes, len(labels), frame["score"].to_numpy(dtype=np.float64), rows)
        return rows, score, grouped_mean(codes, len(labels), frame["solved"].to_numpy(dtype=bool), rows)

    return _GROUP_MEANS.get(frame, (id(table), by), compute)


_COUNTS = TableMemo(size=16)


def score_counts(frame: pd.DataFrame, bins: int = 20) -> pd.DataFrame:
    """Histogram counts of a :func:`scores` frame's ``score`` (memoised per frame)."""
    return _COUNTS.get(frame, bins, lambda: binned(frame["score"], None, bins=bins))


def flip_rows(table: pd.DataFrame, comparison: Comparison, limit: int = 500) -> pd.DataFrame:
    """The flipping rows (newly solved first), with before/after scores, at most ``limit``."""
    ids = comparison.flips
    if len(ids) == 0:
        return pd.DataFrame(
            columns=["direction", "run", "step", "task_id", "annotation_type", "score_before", "score_after"]
        )
    positions = comparison.flip_positions
    solved = comparison.after["solved"].to_numpy(dtype=bool)[positions]
    order = np.argsort(~solved, kind="stable")[:limit]
    chosen = positions[order]
    cols = [c for c in ("run", "step", "task_id", "annotation_type", "format_reason") if c in table.columns]
    out = pd.DataFrame({c: table[c].array.take(chosen) for c in cols}, index=ids[order])
    out.insert(0, "direction", np.where(solved[order], "unsolved → solved", "solved → unsolved"))
    out["score_before"] = comparison.before["score"].to_numpy()[chosen]
    out["score_after"] = comparison.after["score"].to_numpy()[chosen]
    return out


# --------------------------------------------------------------------------- snippets


def snippet_python(options: Mapping[str, Any]) -> str:
    """The chosen options as keyword arguments of ``score_trace_response``."""
    kwargs = scorer_kwargs(options)
    lines = ["score_trace_response("]
    lines.append("    response=..., answer_gt=..., annotation_gt=..., reward_contract=...,")
    if "trace_reward_mode" not in kwargs:
        lines.append("    # trace_reward_mode: keep each row's own trace_output_mode")
    for key, value in kwargs.items():
        lines.append(f"    {key}={_py(value)},")
    lines.append(")")
    lines.append(f"SOLVED_THRESHOLD = {_py(normalised(options)['solved_threshold'])}")
    return "\n".join(lines)


def snippet_yaml(options: Mapping[str, Any]) -> str:
    """The chosen options as a YAML block (for a trainer's reward config)."""
    kwargs = scorer_kwargs(options)
    lines = ["reward_kwargs:"]
    if "trace_reward_mode" not in kwargs:
        lines.append("  # trace_reward_mode: per row (each row's trace_output_mode)")
    for key, value in kwargs.items():
        lines.append(f"  {key}: {_yaml(value)}")
    lines.append(f"solved_threshold: {_yaml(normalised(options)['solved_threshold'])}")
    return "\n".join(lines)


def _py(value: Any) -> str:
    if isinstance(value, float):
        return repr(round(value, 6))
    return repr(value)


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(round(value, 6))
    return str(value)
