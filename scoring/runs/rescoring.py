"""One table row back to its scorer's arguments: explain or rescore a row exactly as the batch scored it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..verifier import (
    TraceEvaluation,
    evaluate,
)

try:
    import msgspec as _msgspec
except ImportError:  # pragma: no cover
    _msgspec = None
from .columns import TRACE

# --------------------------------------------------------------------------- one row again


def row_kwargs(row: Mapping[str, Any] | pd.Series, **overrides: Any) -> dict[str, Any]:
    """The full ``score_trace_response`` keyword arguments that produced a table row
    (``overrides`` replace any of them, e.g. ``format_weight=0.1``)."""
    if row.get("scorer") != TRACE:
        raise ValueError(f"row was scored by {row.get('scorer')!r}, not the trace verifier")
    kwargs = json.loads(row["scorer_kwargs"])
    kwargs["response"] = None if _is_missing(row.get("response")) else row["response"]
    # the weights as given when the table has them (normalising twice may move the last bit)
    raw_answer, raw_annotation = row.get("option_answer_weight"), row.get("option_annotation_weight")
    if raw_answer is not None and not _is_missing(raw_answer) and not _is_missing(raw_annotation):
        kwargs["answer_weight"], kwargs["annotation_weight"] = float(raw_answer), float(raw_annotation)
    else:
        kwargs["answer_weight"] = float(row["trace_answer_weight"])
        kwargs["annotation_weight"] = float(row["trace_annotation_weight"])
    kwargs["format_weight"] = float(row["format_weight"])
    kwargs["trace_annotation_reward_formula"] = (
        "additive" if row["trace_annotation_reward_formula_additive"] == 1.0 else "gated"
    )
    kwargs.update(overrides)
    return kwargs


def explain_row(table: pd.DataFrame, index: Any, **overrides: Any) -> TraceEvaluation:
    """Re-run the verifier on one row of a scored table (``index`` is a label of ``table``)."""
    return evaluate(**row_kwargs(table.loc[index], **overrides))


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA
