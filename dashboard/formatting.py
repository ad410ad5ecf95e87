"""The format-failure view-model (no Streamlit).

Which rows failed the format check and why, in the order worth reading
(format failed but the task reward is still positive first), and for one row
the tail of its response with a marker at the exact character where the
format broke and the text the scorer recovered anyway -- all as plain text,
never HTML or Markdown.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard.filters import TableMemo, filter_rows, format_zero_reward_positive, take, trace_mask
from dashboard.row_lookup import row_positions
from scoring.verifier import TraceEvaluation

#: Plain-language meaning of every format reason (the scorer's reason codes).
REASON_TEXT = {
    "ok": "the response ends with one JSON object with exactly the required keys",
    "python_literal": "the final object is a Python literal, not JSON (accepted)",
    "empty_response": "the response is empty",
    "no_final_object": "the response does not end with a JSON object",
    "text_after_object": "there is text after the last object",
    "not_valid_json": "the final object is not valid JSON",
    "not_a_mapping": "the final value is not an object ({...})",
    "missing_keys": "the final object lacks a required key",
    "extra_keys": "the final object has keys beyond the required ones",
}
TAIL_CHARS = 800
EXPORT_COLUMNS = (
    "row_id", "run", "step", "task_id", "annotation_type", "source_file", "source_line", "format_reason",
    "format_detail", "recovered_source", "recovered_text", "score", "task_reward", "answer_reward",
    "annotation_reward", "response",
)


def failure_mask(table: pd.DataFrame, scores: pd.DataFrame) -> np.ndarray:
    """Trace rows whose format score is 0 under the current options."""
    return trace_mask(table) & (scores["format"].to_numpy(dtype=np.float64) == 0.0)


#: Results per ``scores`` frame (itself memoised per table and options): reruns reuse them.
_BY_SCORES = TableMemo(size=16)


def reason_counts(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per format reason: failing rows and how many of them still have a positive task reward."""
    return _BY_SCORES.get(scores, ("reasons", id(table)), lambda: _reason_counts(table, scores))


def _reason_counts(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    fail = failure_mask(table, scores)
    positive = format_zero_reward_positive(table, scores)
    reasons = table["format_reason"].astype("object").where(table["format_reason"].notna(), "(none)").to_numpy()
    frame = pd.DataFrame({"reason": reasons[fail], "positive": positive[fail].astype(np.int64)})
    grouped = frame.groupby("reason")
    out = pd.DataFrame({"rows": grouped.size(), "reward_positive": grouped["positive"].sum()})
    out = out.sort_values(["rows", "reward_positive"], ascending=False).reset_index()
    out["meaning"] = out["reason"].map(REASON_TEXT).fillna("")
    return out[["reason", "rows", "reward_positive", "meaning"]]


def failure_ids(
    table: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    tasks: Sequence[str] = (),
    reasons: Sequence[str] = (),
    runs: Sequence[str] = (),
    with_positive: bool = False,
):
    """Failing rows matching the filters: format-zero-but-reward-positive first (highest task
    reward first), then the rest by reason; file order within ties. With ``with_positive``,
    ``(ids, how many of them are reward-positive)``."""
    key = ("failures", id(table), tuple(tasks), tuple(reasons), tuple(runs))
    ids, positive = _BY_SCORES.get(scores, key, lambda: _failure_ids(table, scores, tasks, reasons, runs))
    return (ids, positive) if with_positive else ids


def _failure_ids(table, scores, tasks, reasons, runs) -> tuple[pd.Index, int]:
    mask = failure_mask(table, scores) & filter_rows(table, tasks=tasks, reasons=reasons, runs=runs)
    positions = np.flatnonzero(mask)
    positive = format_zero_reward_positive(table, scores)[positions]
    task = scores["task_reward"].to_numpy(dtype=np.float64)[positions]
    reason = table["format_reason"].array.to_numpy(dtype=object, na_value="")[positions].astype(str)
    order = np.lexsort((positions, reason, -np.nan_to_num(task), ~positive))
    return table.index[positions[order]], int(positive.sum())


def filter_choices(table: pd.DataFrame, scores: pd.DataFrame) -> dict[str, list[str]]:
    """The tasks and runs that have failing rows (for the page's filters)."""
    return _BY_SCORES.get(scores, ("choices", id(table)), lambda: _filter_choices(table, scores))


def _filter_choices(table: pd.DataFrame, scores: pd.DataFrame) -> dict[str, list[str]]:
    fail = failure_mask(table, scores)
    out = {}
    for column in ("task_id", "run"):
        values = table[column].array.to_numpy(dtype=object, na_value=None)[fail]
        out[column] = sorted({str(v) for v in values if v is not None})
    return out


def failure_table(table: pd.DataFrame, scores: pd.DataFrame, ids: pd.Index) -> pd.DataFrame:
    """The list shown on the page: one line per failing row."""
    cols = ["run", "step", "task_id", "format_reason", "format_detail", "recovered_source"]
    out = take(table, ids, [c for c in cols if c in table.columns])
    positive = format_zero_reward_positive(table, scores)[row_positions(table.index, ids)]
    out.insert(0, "reward_positive", positive)
    out.insert(1, "task_reward", take(scores, ids, ["task_reward"])["task_reward"].to_numpy())
    return out


# --------------------------------------------------------------------------- one row


@dataclass(frozen=True)
class BreakView:
    """Where one response's format broke, ready to show as plain text."""

    reason: str
    meaning: str
    detail: str
    break_at: int | None
    line: int | None  # 1-based line of the break
    column: int | None  # 1-based column of the break
    tail: str  # the end of the response, with a marker line under the break
    tail_start: int  # character offset where ``tail`` starts in the response
    recovered_source: str
    recovered_text: str | None
    recovered_span: tuple[int, int] | None
    missing_keys: tuple[str, ...]
    extra_keys: tuple[str, ...]
    response_chars: int


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    last = text.rfind("\n", 0, offset)
    return line, offset - last


def annotated_tail(text: str, break_at: int | None, tail_chars: int = TAIL_CHARS) -> tuple[str, int]:
    """The end of ``text`` (or a window around the break when it is further back), with a
    ``^`` marker line under the break. Returns (text, start offset)."""
    n = len(text)
    start = max(0, n - tail_chars)
    if break_at is not None and break_at < start:
        start = max(0, break_at - tail_chars // 2)
    end = n if break_at is None or break_at >= n - tail_chars // 2 else min(n, start + tail_chars)
    window = text[start:end]
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < n else ""
    if break_at is None:
        return prefix + window + suffix, start
    at = min(max(break_at, start), n) - start
    line_start = window.rfind("\n", 0, at) + 1
    line_end = window.find("\n", at)
    if line_end < 0:
        line_end = len(window)
    column = at - line_start + (len(prefix) if line_start == 0 else 0)
    marker = " " * column + "^ format broke here"
    body = prefix + window[:line_end] + "\n" + marker
    rest = window[line_end:]
    if rest:
        body += rest if rest.startswith("\n") else "\n" + rest
    return body + suffix, start


def break_view(evaluation: TraceEvaluation, tail_chars: int = TAIL_CHARS) -> BreakView:
    """The format-failure explanation of one re-run evaluation."""
    ex = evaluation.extraction
    text = ex.response or ""
    tail, start = annotated_tail(text, ex.format_break_at, tail_chars)
    line = column = None
    if ex.format_break_at is not None:
        line, column = line_col(text, ex.format_break_at)
    span = (ex.recovered_span.start, ex.recovered_span.end) if ex.recovered_span is not None else None
    return BreakView(
        reason=ex.format_reason,
        meaning=REASON_TEXT.get(ex.format_reason, ""),
        detail=ex.format_detail or "",
        break_at=ex.format_break_at,
        line=line,
        column=column,
        tail=tail,
        tail_start=start,
        recovered_source=ex.recovered_source,
        recovered_text=ex.recovered_text,
        recovered_span=span,
        missing_keys=tuple(ex.missing_keys),
        extra_keys=tuple(ex.extra_keys),
        response_chars=len(text),
    )


def row_break_view(row: pd.Series, tail_chars: int = TAIL_CHARS) -> BreakView:
    """A view from the stored table columns only (when the row cannot be re-run)."""
    response = row.get("response")
    text = "" if response is None or (isinstance(response, float) and math.isnan(response)) else str(response)
    tail, start = annotated_tail(text, None, tail_chars)
    recovered = row.get("recovered_text")
    return BreakView(
        reason=str(row.get("format_reason") or ""),
        meaning=REASON_TEXT.get(str(row.get("format_reason") or ""), ""),
        detail=_text(row.get("format_detail")),
        break_at=None, line=None, column=None, tail=tail, tail_start=start,
        recovered_source=_text(row.get("recovered_source")),
        recovered_text=None if _text(recovered) == "" else str(recovered),
        recovered_span=None, missing_keys=(), extra_keys=(), response_chars=len(text),
    )


def format_header(row_id, row: pd.Series, task_reward: float) -> str:
    """One plain line naming a failing row."""
    parts = [str(row_id), f"reason {_text(row.get('format_reason')) or '?'}"]
    for label, column in (("run", "run"), ("step", "step"), ("task", "task_id")):
        value = _text(row.get(column))
        if value:
            parts.append(f"{label} {value}")
    parts.append(f"task reward {task_reward:.3f}" if task_reward == task_reward else "task reward —")
    return " · ".join(parts)


def describe_break(view: BreakView) -> str:
    """Plain sentences: the reason, where it broke, which keys were missing or extra."""
    lines = [f"{view.reason}: {view.meaning}" if view.meaning else view.reason]
    if view.detail:
        lines.append(view.detail)
    if view.break_at is not None:
        lines.append(
            f"Broke at character {view.break_at:,} of {view.response_chars:,} (line {view.line}, column {view.column})."
        )
    if view.missing_keys:
        lines.append("Missing key(s): " + ", ".join(view.missing_keys))
    if view.extra_keys:
        lines.append("Extra key(s): " + ", ".join(view.extra_keys))
    return "\n".join(lines)


def _text(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


# --------------------------------------------------------------------------- export


def export_frame(table: pd.DataFrame, scores: pd.DataFrame, ids: pd.Index) -> pd.DataFrame:
    """The rows to download: identity, reason, what was recovered, scores, the response."""
    table_columns = [c for c in EXPORT_COLUMNS if c in table.columns and c not in ("score", "task_reward")]
    rows = take(table, ids, table_columns)
    picked = take(scores, ids, ["score", "task_reward"])
    out = pd.DataFrame({"row_id": np.asarray(ids, dtype=object)})
    for column in EXPORT_COLUMNS[1:]:
        source = picked if column in ("score", "task_reward") else rows
        if column in source.columns:
            out[column] = source[column].to_numpy()
    return out


def to_csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def to_jsonl_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.StringIO()
    for record in frame.to_dict(orient="records"):
        clean = {k: _json_value(v) for k, v in record.items()}
        buffer.write(json.dumps(clean, ensure_ascii=False))
        buffer.write("\n")
    return buffer.getvalue().encode("utf-8")


def _json_value(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value
