"""Two panels for the inspector (and the Frames / Reviews pages): the frame diagnosis and the verdict form.

The inspector page calls, for the row it shows::

    from dashboard.inspector_extras import render_frame_diagnosis, render_verdict_form
    render_frame_diagnosis(ctx, row_id)   # coordinate-frame diagnosis with what-if scores
    render_verdict_form(ctx, row_id)      # mark the row: model / ground truth / scorer wrong, unclear

Logic lives in :mod:`scoring.review.frames` and :mod:`dashboard.verdicts`; this module
only draws. Data (responses, notes, file names, messages) is shown with
``st.text`` / ``st.dataframe`` or Markdown-escaped, never as HTML. Both
functions catch their own failures and show a friendly message instead of a
traceback.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import auth, numbers, overlay
from dashboard import verdicts as vd
from dashboard.row_lookup import has_row
from dashboard.state import metric_row, show_table
from scoring.review import frames as fr

log = logging.getLogger("rolloutscope.dashboard.extras")

K_REVIEWER = "rs_reviewer"
K_REVIEWER_W = "rv_reviewer_w"
K_OUTCOME = "rv_outcome"
REVIEWER_ENV = "ROLLOUTSCOPE_REVIEWER"
FRAME_CAPTION = (
    "What the prediction's coordinates look like. A what-if score re-scores the prediction mapped into "
    "pixels with the same matching code: it is a diagnosis — not the score."
)


_MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~$:")


def plain(text: Any) -> str:
    """Escape Markdown so data (paths, notes, messages quoting rows) shows as typed in st.info/warning/error."""
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in str(text))


def _seed(widget_key: str, value: Any) -> None:
    """Give a widget its remembered value the first time it is drawn in this session."""
    if widget_key not in st.session_state:
        st.session_state[widget_key] = value


def _key(row_id: Any) -> str:
    return hashlib.sha1(str(row_id).encode("utf-8")).hexdigest()[:10]


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def row_image_size(row: pd.Series) -> tuple[float, float] | None:
    """The image size the row was scored with (``image_width`` x ``image_height``), or None."""
    width, height = _finite(row.get("image_width")), _finite(row.get("image_height"))
    return (width, height) if width is not None and height is not None else None


def _score_text(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


# --------------------------------------------------------------------------- frame diagnosis


def frame_diagnosis(ctx: Any, row_id: Any) -> fr.FrameDiagnosis:
    """The frame diagnosis of one table row (re-runs the verifier through ``ctx.explain``, cached)."""
    row = ctx.row(row_id)
    if str(row.get("scorer")) != "trace":
        return fr.FrameDiagnosis(fr.STATUS_NOT_TRACE, None, "", fr.STATUS_MESSAGES[fr.STATUS_NOT_TRACE], (),
                                 None, None, None, None, 0, 0)
    evaluation = ctx.explain(row_id)
    size = row_image_size(row)
    if size is None and evaluation.image_size is None:
        return fr.diagnose_frame(evaluation, None)
    return fr.diagnose_frame(evaluation, size)


def render_frame_diagnosis(ctx: Any, row_id: Any) -> fr.FrameDiagnosis | None:
    """The coordinate-frame panel for one row: verdict, evidence and every what-if (labelled as a diagnosis)."""
    st.subheader("Coordinate frame (diagnosis)")
    st.caption(FRAME_CAPTION)
    try:
        diagnosis = frame_diagnosis(ctx, row_id)
    except Exception as exc:
        _friendly("check this row's coordinate frame", exc)
        return None
    try:
        _draw_diagnosis(ctx, row_id, diagnosis)
    except Exception as exc:
        _friendly("show the frame diagnosis", exc)
    return diagnosis


def _draw_diagnosis(ctx: Any, row_id: Any, diagnosis: fr.FrameDiagnosis) -> None:
    if not diagnosis.checked:
        st.info(plain(diagnosis.message))
        if diagnosis.status == fr.STATUS_NO_IMAGE_SIZE:
            st.text("Give the rows an image_size (or images the loader can open) to check their frame.")
        return
    metric_row(
        {"label": "Frame", "value": fr.FRAME_TITLES.get(diagnosis.frame, str(diagnosis.frame))},
        {"label": "Annotation score (the score)", "value": _score_text(diagnosis.pixel_score),
         "help": numbers.exact(diagnosis.pixel_score)},
        {"label": "What-if in pixels (diagnosis, not the score)",
         "value": _score_text(diagnosis.what_if_score) if diagnosis.flagged else "—"},
        {"label": "Confidence", "value": diagnosis.confidence or "—"},
    )
    st.text(diagnosis.message)
    if diagnosis.evidence:
        st.text("\n".join(f"• {line}" for line in diagnosis.evidence))
    _image_size_check(ctx, row_id, diagnosis)
    rows = diagnosis.hypothesis_rows()
    if len(rows) > 1 and st.toggle(
        "Every hypothesis (what-if scores are a diagnosis, not the score)", value=diagnosis.flagged,
        key=f"fr_hypotheses_{_key(row_id)}",
    ):  # a toggle, not an expander: the inspector may place this panel inside one
        show_table(pd.DataFrame(rows), hide_index=True)


def _image_size_check(ctx: Any, row_id: Any, diagnosis: fr.FrameDiagnosis) -> None:
    """Say so when the image file's size differs from the size the row declares (a resize upstream)."""
    if diagnosis.image_size is None:
        return
    try:
        image, _warning = ctx.load_image(row_id)
    except Exception:  # the overlay panel reports image problems; this check is a bonus
        log.debug("image size check skipped for %s", row_id, exc_info=True)
        return
    if image is None:
        return
    width, height = diagnosis.image_size
    file_width, file_height = overlay.source_size(image)
    if (round(width), round(height)) != (file_width, file_height):
        st.warning(plain(
            f"The image file is {file_width}×{file_height} but the row declares {width:g}×{height:g}: "
            "the model may have seen a different size than the one the scorer assumes."
        ))


# --------------------------------------------------------------------------- verdicts


def verdict_store(ctx: Any) -> vd.VerdictStore:
    """The process-wide verdict store for the loaded data (see :func:`dashboard.verdicts.default_path`).

    Uses ``ctx.source`` (the session's data choice) when the context has one, else the
    loaded run's source -- which, the loader caching runs by content, is the first folder
    these exact files were loaded from.
    """
    return vd.store_for_source(getattr(ctx, "source", None) or ctx.run.source)


def render_store_status(store: vd.VerdictStore, key: str) -> None:
    """Where verdicts go, a warning when they cannot be saved, and the unsaved ones (retry, download)."""
    status = store.status()
    if status.writable:
        st.caption(plain(status.message))
    else:
        st.warning(plain(status.message + f" Set {vd.ENV_VAR} to a writable file to save verdicts."))
    pending = list(store.pending)
    if not pending:
        return
    st.warning(plain(
        f"{numbers.plural(len(pending), 'verdict')} {numbers.verb(len(pending), 'is', 'are')} NOT saved: "
        f"{numbers.verb(len(pending), 'it is', 'they are')} kept in memory until this app stops. "
        "Retry saving, or download them."
    ))
    columns = st.columns(2)
    if columns[0].button("Retry saving", key=f"{key}_retry"):
        try:
            saved = store.flush()
            st.success(f"Saved {numbers.plural(saved, 'verdict')}.")
        except vd.VerdictStoreError as exc:
            st.error(plain(exc.message))
    frame = vd.latest_of(vd.frame_of(pending))
    columns[1].download_button(
        "Download unsaved verdicts (JSONL)",
        vd.export_bytes(vd.join_rows(frame, None), "jsonl"),
        file_name="unsaved_verdicts.jsonl",
        mime="application/jsonl",
        key=f"{key}_pending_download",
    )


def _save(store: vd.VerdictStore, row_id: Any, row: pd.Series | None, key: str) -> None:
    """Form callback: save the verdict chosen in the form; remember the outcome to show it."""
    choice = st.session_state.get(f"rv_verdict_{key}")
    note = st.session_state.get(f"rv_note_{key}", "")
    typed = (st.session_state.get(K_REVIEWER_W) or "").strip()
    st.session_state[K_REVIEWER] = typed
    if choice is None:
        st.session_state[K_OUTCOME] = (key, "warning", "Pick a verdict first; nothing was saved.")
        return
    try:
        reviewer = auth.verdict_reviewer(typed)  # the signed-in user when login is on
        saved = store.set_verdict(row_id, choice, note, reviewer, row=row)
    except vd.VerdictStoreError as exc:
        st.session_state[K_OUTCOME] = (key, "warning", exc.message)
        return
    except (ValueError, PermissionError) as exc:
        st.session_state[K_OUTCOME] = (key, "error", str(exc))
        return
    except Exception as exc:  # never a traceback in the browser
        log.exception("saving a verdict failed")
        st.session_state[K_OUTCOME] = (key, "error", f"Could not save the verdict: {type(exc).__name__}: {exc}")
        return
    st.session_state[f"rv_note_{key}"] = ""
    st.session_state[K_OUTCOME] = (key, "success", f"Saved: {saved.label} (by {saved.reviewer or 'anonymous'}).")


def render_verdict_form(ctx: Any, row_id: Any) -> None:
    """The review panel for one row: its current verdict, history and a form to add one."""
    st.subheader("Review verdict")
    try:
        store = verdict_store(ctx)
        row = ctx.row(row_id) if has_row(ctx.table.index, row_id) else None
        _verdict_panel(store, row_id, row)
    except Exception as exc:
        _friendly("show the review form", exc)


def _verdict_panel(store: vd.VerdictStore, row_id: Any, row: pd.Series | None) -> None:
    key = _key(row_id)
    render_store_status(store, f"rv_{key}")
    try:
        history = store.history(row_id)
    except vd.VerdictStoreError as exc:
        st.error(plain(exc.message))
        history = vd.frame_of(v for v in list(store.pending) if v.row_key == str(row_id))
    current = history.iloc[-1] if len(history) else None
    if current is not None:
        saved = "" if bool(current["saved"]) else " — NOT saved (kept in memory)"
        st.text(
            f"Current verdict: {vd.VERDICT_LABELS.get(current['verdict'], current['verdict'])}"
            f" — by {current['reviewer'] or 'anonymous'} at {current['created_at']}{saved}"
        )
        if current["note"]:
            st.text(f"Note: {current['note']}")
        if len(history) > 1:
            with st.expander(f"History ({len(history)} verdicts, latest last)"):
                show_table(
                    history[["created_at", "verdict", "reviewer", "note", "saved"]], hide_index=True
                )
    else:
        st.text("No verdict yet.")

    _seed(K_REVIEWER_W, st.session_state.get(K_REVIEWER, os.environ.get(REVIEWER_ENV, "")))
    options = list(vd.VERDICTS)
    index = options.index(current["verdict"]) if current is not None and current["verdict"] in options else None
    with st.form(f"rv_form_{key}", border=True):
        st.radio("Verdict", options, index=index, format_func=lambda v: vd.VERDICT_LABELS[v], horizontal=True,
                 key=f"rv_verdict_{key}")
        st.text_area("Note", key=f"rv_note_{key}", max_chars=vd.NOTE_LIMIT, height=80,
                     placeholder="What is wrong, in a sentence (optional)")
        signed_in = auth.signed_in_user()
        if signed_in:
            st.text(f"Reviewer: {signed_in} (signed in)")
        else:
            st.text_input("Reviewer", key=K_REVIEWER_W, max_chars=vd.REVIEWER_LIMIT)
        st.form_submit_button("Save verdict", type="primary", on_click=_save, args=(store, row_id, row, key))
    outcome = st.session_state.get(K_OUTCOME)
    if outcome and outcome[0] == key:
        _, level, message = outcome
        getattr(st, level)(plain(message))
