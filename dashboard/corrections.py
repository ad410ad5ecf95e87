"""Ground-truth corrections kept with the review verdicts (no Streamlit here).

A correction is saved as a *ground truth wrong* verdict on the row it was drawn on
(:meth:`dashboard.verdicts.VerdictStore.set_verdict`: who, when, the note) plus one line
in the table ``gt_corrections`` of the same SQLite file: the instance, the field
(``answer_gt`` / ``annotation_gt``), what was done, the ground truth before and after (JSON),
the verdict's id and the row's file, line, run and task. Like verdicts, corrections are
append-only (triggers refuse UPDATE and DELETE) and the latest wins
(:func:`scoring.review.corrections.corrected_truths` chains them).

The pure parts -- a dragged box to an edit, the edit to a new ground truth, the what-if and the
patch -- live in :mod:`scoring.review.corrections`; this module stores them and builds what the
pages show: the figures (over :mod:`dashboard.overlay`'s drawing) and the downloads.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard import overlay
from dashboard import verdicts as vd
from dashboard.plot_text import plotly_text
from scoring.review import corrections as cr
from scoring.review import ground_truth_of, patch_file, value_text
from scoring.verifier import AnnotationParseError, half_life_for_size, match_annotations, parse_annotation

TABLE = "gt_corrections"
#: Columns of :func:`corrections_frame`.
COLUMNS: tuple[str, ...] = (
    "id", "verdict_id", "row_key", "instance_id", "field", "action", "before", "after", "reviewer", "note",
    "created_at", "source_file", "source_line", "run", "task_id",
)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    verdict_id  INTEGER,
    row_key     TEXT    NOT NULL,
    instance_id TEXT    NOT NULL,
    field       TEXT    NOT NULL CHECK (field IN ('answer_gt', 'annotation_gt')),
    action      TEXT    NOT NULL,
    before      TEXT    NOT NULL,
    after       TEXT    NOT NULL,
    reviewer    TEXT    NOT NULL DEFAULT '',
    note        TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL,
    source_file TEXT,
    source_line INTEGER,
    run         TEXT,
    task_id     TEXT
);
CREATE INDEX IF NOT EXISTS {TABLE}_by_instance ON {TABLE} (instance_id, created_at, id);
CREATE TRIGGER IF NOT EXISTS {TABLE}_no_update BEFORE UPDATE ON {TABLE}
    BEGIN SELECT RAISE(ABORT, 'corrections are append-only'); END;
CREATE TRIGGER IF NOT EXISTS {TABLE}_no_delete BEFORE DELETE ON {TABLE}
    BEGIN SELECT RAISE(ABORT, 'corrections are append-only'); END;
"""
_INSERT = (
    f"INSERT INTO {TABLE} (verdict_id, row_key, instance_id, field, action, before, after, reviewer, note, "
    "created_at, source_file, source_line, run, task_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class CorrectionStoreError(Exception):
    """A correction could not be saved or read; ``message`` is one sentence for the user."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class SavedCorrection:
    """A correction as stored: its id and the id of the verdict saved with it."""

    correction: cr.Correction
    id: int
    verdict_id: int | None


# --------------------------------------------------------------------------- building a correction


def row_ground_truth(row: Mapping[str, Any] | pd.Series) -> tuple[Any, Any]:
    """``(answer_gt, annotation_gt)`` a table row was scored against."""
    return ground_truth_of(row.get("scorer_kwargs"))


def correction_for_row(row: Mapping[str, Any] | pd.Series, row_key: Any, edit: cr.Edit, *, reviewer: str = "",
                       note: str = "") -> cr.Correction:
    """The correction ``edit`` makes to the ground truth of ``row`` (its instance), not yet saved."""
    answer_gt, annotation_gt = row_ground_truth(row)
    name = cr.ANSWER_GT if edit.action == cr.ANSWER else cr.ANNOTATION_GT
    before = answer_gt if name == cr.ANSWER_GT else annotation_gt
    after = cr.apply_edit(annotation_gt, edit, answer_gt=answer_gt)
    instance = row.get("instance_id")
    if instance is None or (isinstance(instance, float) and instance != instance):
        raise cr.CorrectionError("this row has no instance id: a correction needs one to find the instance's rows")
    return cr.Correction(str(instance), name, before, after, edit.action, reviewer=reviewer.strip(),
                         note=note.strip(), row_key=str(row_key))


# --------------------------------------------------------------------------- the store


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    connection = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
    connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    connection.execute("PRAGMA synchronous = FULL")
    return connection


def save_correction(store: vd.VerdictStore, correction: cr.Correction, row: Mapping[str, Any] | pd.Series | None = None
                    ) -> SavedCorrection:
    """Save ``correction`` with a *ground truth wrong* verdict on its row, in the verdict file.

    The verdict is written first (its failures raise :class:`dashboard.verdicts.VerdictStoreError`
    and keep it in memory, as for any verdict); the correction then goes into the same file in
    one transaction. Raises :class:`CorrectionStoreError` when that fails.
    """
    note = f"ground truth corrected ({correction.field}: {correction.action})"
    if correction.note:
        note += f": {correction.note}"
    verdict = store.set_verdict(correction.row_key, vd.GT_WRONG, note, correction.reviewer, row=row)
    saved = replace(correction, created_at=verdict.created_at, reviewer=verdict.reviewer)
    context = {name: (None if row is None else row.get(name)) for name in ("source_file", "source_line", "run",
                                                                          "task_id")}
    line = context["source_line"]
    values = (
        verdict.id, saved.row_key, saved.instance_id, saved.field, saved.action,
        json.dumps(saved.before, ensure_ascii=False), json.dumps(saved.after, ensure_ascii=False), saved.reviewer,
        saved.note, saved.created_at, None if context["source_file"] is None else str(context["source_file"]),
        None if line is None or pd.isna(line) else int(line),
        None if context["run"] is None else str(context["run"]),
        None if context["task_id"] is None else str(context["task_id"]),
    )
    try:
        connection = _connect(store.path, store.busy_timeout)
    except (sqlite3.Error, OSError) as exc:
        raise CorrectionStoreError(f"The correction could not be saved to {store.path} ({exc}).") from None
    try:
        connection.executescript(_SCHEMA)  # idempotent; outside the transaction (executescript commits)
        connection.execute("BEGIN IMMEDIATE")
        try:
            cursor = connection.execute(_INSERT, values)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    except (sqlite3.Error, OSError) as exc:
        raise CorrectionStoreError(
            f"The verdict was saved but the correction could not be written to {store.path} ({exc}).") from None
    finally:
        with contextlib.suppress(sqlite3.Error):
            connection.close()
    return SavedCorrection(saved, int(cursor.lastrowid), verdict.id)


def corrections_frame(store: vd.VerdictStore, instance_id: str | None = None) -> pd.DataFrame:
    """Every saved correction, oldest first (``before`` / ``after`` as JSON text); none without a file."""
    empty = pd.DataFrame({name: pd.Series(dtype=object) for name in COLUMNS})
    if not store.path.exists():
        return empty
    try:
        connection = sqlite3.connect(store.path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise CorrectionStoreError(f"Cannot read corrections from {store.path} ({exc}).") from None
    try:
        present = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone()
        if present is None:
            return empty
        sql = f"SELECT {', '.join(COLUMNS)} FROM {TABLE}"
        parameters: tuple = ()
        if instance_id is not None:
            sql += " WHERE instance_id = ?"
            parameters = (str(instance_id),)
        rows = connection.execute(sql + " ORDER BY created_at, id", parameters).fetchall()
    except sqlite3.Error as exc:
        raise CorrectionStoreError(f"Cannot read corrections from {store.path} ({exc}).") from None
    finally:
        with contextlib.suppress(sqlite3.Error):
            connection.close()
    return pd.DataFrame.from_records(rows, columns=list(COLUMNS)) if rows else empty


# --------------------------------------------------------------------------- what the pages show


def parsed(annotation_gt: Any):
    """A ground-truth object parsed for drawing (None when it does not parse)."""
    if not isinstance(annotation_gt, Mapping):
        return None
    try:
        return parse_annotation(annotation_gt.get("value"), annotation_gt.get("type"), "ground truth")
    except (AnnotationParseError, KeyError, TypeError):
        return None


def comparison_model(candidate: Any, ground_truth: Any, image_size: tuple[int, int] | None,
                     fallback_size: tuple[float, float] | None = None) -> overlay.OverlayModel:
    """An overlay of ``candidate`` (a consensus or a corrected value, drawn as the prediction
    layer) against ``ground_truth`` (both ``{"type", "value"}``), paired by the scorer's matching."""
    truth, other = parsed(ground_truth), parsed(candidate)
    size = image_size or fallback_size
    half_life = half_life_for_size(size)
    match = match_annotations(other, truth, half_life) if truth is not None and other is not None else None
    return overlay.build_layers(other, truth, match, half_life_px=half_life, image_size=image_size,
                                fallback_size=fallback_size)


def item_label(key: str | None, index: int, item: Any) -> str:
    """How the form names one ground-truth item: ``[1] [40, 20, 101, 80]`` or ``red[0] ...``."""
    where = f"{key}[{index}]" if key is not None else f"[{index}]"
    return f"{where} {value_text(item)}"


def drawing_figure(
    model: overlay.OverlayModel, image: Any, annotation_gt: Any, *, column_width: int | None = None
) -> dict:
    """The overlay figure set up for drawing: box selection as the drag mode, each ground-truth
    item tagged with the name the form uses."""
    figure = overlay.plotly_figure(model, image, frozenset({overlay.LAYER_GROUND_TRUTH, overlay.LAYER_MISSED,
                                                           overlay.LAYER_PREDICTION, overlay.LAYER_UNMATCHED}),
                                   column_width=column_width)
    layout = figure["layout"]
    layout["dragmode"] = "select"
    layout["selectdirection"] = "any"
    layout["newselection"] = {"line": {"color": "#1f6feb", "width": 2, "dash": "solid"}}
    tags = list(layout.get("annotations", []))
    if isinstance(annotation_gt, Mapping):
        truth = parsed(annotation_gt)
        if truth is not None:
            for key, index, shape in truth.shapes():
                x0, y0, _, _ = overlay.shape_bounds(shape)
                where = f"{key}[{index}]" if key is not None else f"[{index}]"
                tags.append({"x": x0, "y": y0, "xref": "x", "yref": "y", "text": plotly_text(where),
                             "showarrow": False, "xanchor": "left", "yanchor": "bottom",
                             "font": {"size": 12, "color": "#ffffff"}, "bgcolor": "#00a152", "borderpad": 2})
    layout["annotations"] = tags
    # a transparent grid of points over the image: box selection needs a trace to select in
    step_x, step_y = max(model.width / 24.0, 1.0), max(model.height / 24.0, 1.0)
    xs = [step_x * (i + 0.5) for i in range(24)]
    ys = [step_y * (j + 0.5) for j in range(24)]
    figure["data"].append({
        "type": "scatter", "mode": "markers", "x": [x for _ in ys for x in xs], "y": [y for y in ys for _ in xs],
        "marker": {"size": 2, "opacity": 0.01, "color": "#000000"}, "hoverinfo": "skip", "showlegend": False,
        "name": "drawing grid",
    })
    return figure


def corrected_sources(table: pd.DataFrame, patch: list[dict[str, Any]], paths: Mapping[str, str],
                      instance_files: Iterable[str] = ()) -> dict[str, tuple[bytes, list[int]] | str]:
    """Per file holding a corrected ground truth: the corrected file (same container and layout,
    only that ground truth changed; see :mod:`scoring.review.corrected_files`) and its changed records, or
    why it cannot be made. Rollout files are patched at the rows scored against the corrected
    instances; ``instance_files`` (names in ``paths``: the files rows were joined to) are patched
    wherever a record's own instance id is a corrected one."""
    chains = {(line["instance_id"], line["field"], value_text(line["before"])): line for line in patch}
    rows = table.iloc[sorted(cr.rows_to_rescore(table, chains))]
    out: dict[str, tuple[bytes, list[int]] | str] = {}
    for source, group in rows.groupby(rows["source_file"].astype(str), sort=True):
        path = paths.get(source)
        if path is None:
            out[source] = "the file is not on disk here"
            continue
        lines = [int(v) for v in pd.to_numeric(group["source_line"], errors="coerce").dropna().tolist()]
        try:
            patched, changed = patch_file(str(path), Path(path).read_bytes(), patch, only_rows=lines)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            out[source] = f"cannot rewrite it ({exc})"
            continue
        out[source] = (patched, changed) if changed else "no record of it holds the corrected ground truth"
    for name in instance_files:
        path = paths.get(name)
        if path is None or name in out:
            continue
        try:
            patched, changed = patch_file(str(path), Path(path).read_bytes(), patch)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            out[name] = f"cannot rewrite it ({exc})"
            continue
        if changed:
            out[name] = (patched, changed)
    return out


def corrections_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """The saved corrections as a table to show (before/after as compact JSON)."""
    if not len(frame):
        return frame
    shown = frame[["created_at", "instance_id", "field", "action", "reviewer", "note", "row_key", "before", "after"]]
    return shown.assign(
        before=[value_text(json.loads(v).get("value")) if v else "" for v in shown["before"]],
        after=[value_text(json.loads(v).get("value")) if v else "" for v in shown["after"]],
    )


def suspect_truths(suspect: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A suspect's ground truth and consensus as ``{"type", "value"}`` objects (annotation suspects)."""
    kind = suspect.get("annotation_type")
    if suspect.get("kind") != "annotation" or not isinstance(kind, str):
        return None, None
    return ({"type": kind, "value": json.loads(suspect["ground_truth"])},
            {"type": kind, "value": json.loads(suspect["consensus"])})


__all__ = [
    "COLUMNS",
    "TABLE",
    "CorrectionStoreError",
    "SavedCorrection",
    "comparison_model",
    "corrected_sources",
    "correction_for_row",
    "corrections_frame",
    "corrections_summary",
    "drawing_figure",
    "item_label",
    "parsed",
    "row_ground_truth",
    "save_correction",
    "suspect_truths",
]
