"""Coordinate frames over a whole scored table: :func:`frame_table` classifies every row with
:func:`scoring.review.frames.diagnose_frame`, :class:`IncrementalFrames` does it a budget of
rows at a time for the app, :func:`frame_counts` counts frames per task, run or anything else and
:func:`flagged_rows` lists the rows worth a look. Rows without an image size are not guessed at.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..verifier import TraceEvaluation
from .frames import (
    FLAGGED_FRAMES,
    FRAMES,
    STATUS_CHECKED,
    STATUS_ERROR,
    STATUS_MESSAGES,
    STATUS_NO_ANNOTATION,
    STATUS_NO_IMAGE_SIZE,
    STATUS_NO_PREDICTION,
    STATUS_NOT_TRACE,
    FrameDiagnosis,
    diagnose_frame,
)

#: Columns of :func:`frame_table` (besides the copied identity columns).
FRAME_COLUMNS: tuple[str, ...] = (
    "status", "frame", "confidence", "hypothesis", "detail", "score", "what_if_score", "gain",
    "outside_image", "shapes", "shapes_outside", "x_max", "y_max", "image_width", "image_height", "message",
)
#: Identity columns copied from the scored table when present.
CONTEXT_COLUMNS: tuple[str, ...] = ("run", "step", "task_id", "annotation_type", "source_file", "source_line")
_KWARG_COLUMNS = (
    "scorer", "scorer_kwargs", "response", "trace_answer_weight", "trace_annotation_weight", "format_weight",
    "trace_annotation_reward_formula_additive",
)

EvaluateRow = Callable[[Mapping[str, Any]], TraceEvaluation]


def _default_evaluate_row() -> EvaluateRow:
    from ..runs import row_kwargs  # the batch table's own recipe for re-running a row
    from ..verifier import evaluate

    def evaluate_row(row: Mapping[str, Any]) -> TraceEvaluation:
        return evaluate(**row_kwargs(row))

    return evaluate_row


def _column(table: pd.DataFrame, name: str, default: Any = None) -> np.ndarray:
    if name in table.columns:
        return table[name].to_numpy(dtype=object)
    return np.full(len(table), default, dtype=object)


def _floats(table: pd.DataFrame, name: str) -> np.ndarray:
    if name in table.columns:
        return pd.to_numeric(table[name], errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.full(len(table), np.nan)


def frame_record(diagnosis: FrameDiagnosis) -> dict[str, Any]:
    """One :func:`frame_table` row from a diagnosis."""
    best = diagnosis.best
    extent = diagnosis.extent
    size = diagnosis.image_size
    return {
        "status": diagnosis.status,
        "frame": diagnosis.frame,
        "confidence": diagnosis.confidence or None,
        "hypothesis": best.name if best is not None else None,
        "detail": best.label if best is not None else None,
        "score": diagnosis.pixel_score,
        "what_if_score": best.what_if_score if best is not None else None,
        "gain": best.gain if best is not None else None,
        "outside_image": diagnosis.shapes_outside > 0,
        "shapes": diagnosis.shapes,
        "shapes_outside": diagnosis.shapes_outside,
        "x_max": extent[2] if extent else None,
        "y_max": extent[3] if extent else None,
        "image_width": size[0] if size else None,
        "image_height": size[1] if size else None,
        "message": diagnosis.message,
    }


def frame_table(
    table: pd.DataFrame,
    *,
    evaluate_row: EvaluateRow | None = None,
    progress: Callable[[int, int], None] | None = None,
    progress_every: int = 500,
) -> pd.DataFrame:
    """Classify the frame of every row of a scored table (index and order kept).

    Cheap column tests settle most rows without re-running anything: simple-scorer
    rows, rows whose annotation did not parse, and rows without an image size
    (``image_width``/``image_height``), which get :data:`NO_IMAGE_SIZE_MESSAGE`.
    Every other row is re-evaluated (``evaluate_row(row mapping)``, by default
    :func:`scoring.runs.row_kwargs` + :func:`scoring.verifier.trace.evaluate`) and
    diagnosed with ``explain=False``, which gives the same frame as
    :func:`diagnose_frame` but skips what-ifs on rows that are plainly fine.
    Cost: about 0.1-0.3 ms per re-evaluated row (README, "Coordinate frames").
    A row that cannot be re-evaluated gets status ``error`` and its reason.
    """
    n = len(table)
    records: list[dict[str, Any]] = [None] * n  # type: ignore[list-item]
    scorer = _column(table, "scorer")
    is_trace = np.array([s == "trace" for s in scorer], dtype=bool)
    has_type = table["annotation_type"].notna().to_numpy() if "annotation_type" in table.columns else np.zeros(n, bool)
    parse_ok = _floats(table, "annotation_parse_ok") == 1.0
    answer_mode = _floats(table, "trace_reward_mode_answer") == 1.0
    width, height = _floats(table, "image_width"), _floats(table, "image_height")
    has_size = np.isfinite(width) & np.isfinite(height) & (width > 0) & (height > 0)
    reasons = _column(table, "annotation_reason")

    status = np.full(n, STATUS_NOT_TRACE, dtype=object)
    status[is_trace & ~has_type] = STATUS_NO_ANNOTATION
    status[is_trace & has_type & ~parse_ok] = STATUS_NO_PREDICTION
    status[is_trace & has_type & ~parse_ok & answer_mode] = STATUS_NO_ANNOTATION
    status[is_trace & has_type & parse_ok & ~has_size] = STATUS_NO_IMAGE_SIZE
    todo = np.flatnonzero(is_trace & has_type & parse_ok & has_size)
    status[todo] = STATUS_CHECKED

    for i in np.flatnonzero(status != STATUS_CHECKED):
        message = STATUS_MESSAGES.get(status[i], "")
        if status[i] == STATUS_NO_PREDICTION and isinstance(reasons[i], str) and reasons[i]:
            message = f"no parsed prediction: {reasons[i]}"
        records[i] = {"status": status[i], "message": message}

    columns = {name: _column(table, name) for name in _KWARG_COLUMNS}
    evaluate_row = evaluate_row or _default_evaluate_row()
    total = len(todo)
    for done, i in enumerate(todo):
        row = {name: values[i] for name, values in columns.items()}
        try:
            evaluation = evaluate_row(row)
            diagnosis = diagnose_frame(evaluation, (float(width[i]), float(height[i])), explain=False)
            records[i] = frame_record(diagnosis)
        except Exception as exc:  # one bad row must not sink the table
            records[i] = {"status": STATUS_ERROR, "message": f"could not re-run this row ({type(exc).__name__}: {exc})"}
        if progress is not None and (done + 1) % progress_every == 0:
            progress(done + 1, total)
    if progress is not None:
        progress(total, total)

    frame = pd.DataFrame.from_records(records, columns=list(FRAME_COLUMNS), index=table.index)
    for name in ("score", "what_if_score", "gain", "x_max", "y_max", "image_width", "image_height"):
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(np.float64)
    frame["shapes"] = pd.to_numeric(frame["shapes"], errors="coerce").fillna(0).astype(np.int64)
    frame["shapes_outside"] = pd.to_numeric(frame["shapes_outside"], errors="coerce").fillna(0).astype(np.int64)
    frame["outside_image"] = np.array([bool(r.get("outside_image", False)) for r in records], dtype=bool)
    context = [c for c in CONTEXT_COLUMNS if c in table.columns]
    out = pd.concat([table[context].copy(), frame], axis=1)
    return out


def rows_to_evaluate(table: pd.DataFrame) -> int:
    """How many rows :func:`frame_table` would re-run (the rest are settled from columns)."""
    if not len(table) or "scorer" not in table.columns:
        return 0
    is_trace = (table["scorer"].astype("object") == "trace").to_numpy()
    parse_ok = _floats(table, "annotation_parse_ok") == 1.0
    width, height = _floats(table, "image_width"), _floats(table, "image_height")
    has_size = np.isfinite(width) & np.isfinite(height) & (width > 0) & (height > 0)
    has_type = table["annotation_type"].notna().to_numpy() if "annotation_type" in table.columns else False
    return int(np.count_nonzero(is_trace & parse_ok & has_size & has_type))


class IncrementalFrames:
    """:func:`frame_table` computed lazily, row by row, and remembered (thread-safe).

    For large tables: :meth:`frames_for` classifies only the rows asked for that
    are not known yet, so a page view pays for the rows it shows, once. ``with_text`` adds
    the columns a table holds elsewhere (an opened dataset's responses) to the rows re-run.
    ``seconds_per_row`` (measured) estimates what the rest would cost.
    """

    def __init__(
        self,
        table: pd.DataFrame,
        *,
        evaluate_row: EvaluateRow | None = None,
        with_text: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    ):
        self.table = table
        self._with_text = with_text  # adds text kept elsewhere (an opened dataset's responses) to rows
        self._evaluate_row = evaluate_row
        self._parts: list[pd.DataFrame] = []
        self._known: pd.DataFrame | None = None
        self._known_ids: set = set()
        self._lock = threading.Lock()
        self._evaluated = 0
        self._seconds = 0.0

    @property
    def known(self) -> pd.DataFrame:
        """Every row classified so far, in table order."""
        with self._lock:
            return self._known_frame()

    def _known_frame(self) -> pd.DataFrame:
        if self._known is None:
            if self._parts:
                joined = pd.concat(self._parts) if len(self._parts) > 1 else self._parts[0]
                order = self.table.index.get_indexer(joined.index)
                self._known = joined.iloc[np.argsort(order, kind="stable")]
            else:
                self._known = frame_table(self.table.iloc[:0])
        return self._known

    @property
    def complete(self) -> bool:
        with self._lock:
            return len(self._known_ids) >= len(self.table)

    @property
    def seconds_per_row(self) -> float | None:
        with self._lock:
            return self._seconds / self._evaluated if self._evaluated else None

    def remaining(self) -> pd.Index:
        with self._lock:
            return self.table.index[~self.table.index.isin(list(self._known_ids))]

    def frames_for(self, index: Iterable[Any] | None = None,
                   progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
        """The frame rows of ``index`` (default: the whole table), computing the missing ones."""
        wanted = self.table.index if index is None else pd.Index(list(index))
        with self._lock:
            missing = wanted[~wanted.isin(list(self._known_ids))]
            if len(missing):
                subset = self.table.loc[missing]
                if self._with_text is not None:
                    subset = self._with_text(subset)
                evaluated = rows_to_evaluate(subset)
                start = time.perf_counter()
                part = frame_table(subset, evaluate_row=self._evaluate_row, progress=progress)
                self._seconds += time.perf_counter() - start
                self._evaluated += evaluated
                self._parts.append(part)
                self._known_ids.update(part.index)
                self._known = None
            known = self._known_frame()
        return known.loc[known.index.isin(wanted)] if index is not None else known


def frame_counts(frames: pd.DataFrame, by: str | Sequence[str] = "task_id") -> pd.DataFrame:
    """Per group: rows, rows checked, rows per frame, flagged and their share, rows without image size.

    ``outside_image_any`` counts checked rows with a shape outside the image whatever
    frame explains it (a 0-1000 prediction usually is outside, too). Text keys that are
    missing show as ``(none)``; numeric keys (``step``) keep their order.
    """
    keys = [by] if isinstance(by, str) else list(by)
    status = frames["status"].astype(object)
    frame = frames["frame"].astype(object)
    checked = (status == STATUS_CHECKED).to_numpy()
    data: dict[str, Any] = {"rows": np.ones(len(frames), dtype=np.int64), "checked": checked}
    for name in FRAMES:
        data[name] = checked & (frame == name).to_numpy()
    data["flagged"] = checked & frame.isin(FLAGGED_FRAMES).to_numpy()
    data["outside_image_any"] = checked & frames["outside_image"].to_numpy(dtype=bool)
    data["no_image_size"] = (status == STATUS_NO_IMAGE_SIZE).to_numpy()
    indicators = pd.DataFrame(data, index=frames.index).astype(np.int64)
    for key in keys:
        column = frames[key]
        if pd.api.types.is_numeric_dtype(column) and not isinstance(column.dtype, pd.CategoricalDtype):
            indicators[key] = column.to_numpy()
        else:
            values = column.astype(object)
            indicators[key] = values.where(values.notna(), "(none)").astype(str).to_numpy()
    counts = indicators.groupby(keys, sort=True, dropna=False).sum()
    counts["flagged_share"] = np.where(
        counts["checked"] > 0, counts["flagged"] / counts["checked"].clip(lower=1), np.nan
    )
    return counts.reset_index()


def flagged_rows(frames: pd.DataFrame, frames_wanted: Iterable[str] | None = None) -> pd.DataFrame:
    """Checked rows whose frame is not pixel (or is one of ``frames_wanted``), worst score first."""
    wanted = set(frames_wanted) if frames_wanted else set(FLAGGED_FRAMES)
    mask = (frames["status"] == STATUS_CHECKED) & frames["frame"].isin(wanted)
    return frames[mask].sort_values(["gain", "score"], ascending=[False, True], na_position="last", kind="stable")


__all__ = [
    "CONTEXT_COLUMNS",
    "EvaluateRow",
    "FRAME_COLUMNS",
    "IncrementalFrames",
    "flagged_rows",
    "frame_counts",
    "frame_record",
    "frame_table",
    "rows_to_evaluate",
]
