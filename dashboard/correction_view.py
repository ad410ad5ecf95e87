"""Streamlit panels for ground-truth corrections and suspects (the logic is in
:mod:`scoring.review.corrections`, :mod:`scoring.review.consensus` and :mod:`dashboard.corrections`).

- :func:`render_correction_panel` (Inspector): drag a box on the image to replace a
  ground-truth item or add a missing one, remove a spurious item, or set the answer; preview
  the corrected ground truth against the old one and save it with a verdict.
- :func:`render_suspect` (Suspects page): one suspect's consensus drawn next to its ground
  truth, and a button to adopt the consensus as the correction.
- :func:`render_what_if` and :func:`render_exports` (Suspects page): how the saved corrections
  move rewards, solve rate and groups; the JSONL patch and the corrected files.

Data is shown with ``st.text`` / ``st.code`` / ``st.dataframe``; messages quoting data are
Markdown-escaped; failures show a sentence, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import corrections as dc
from dashboard import overlay
from dashboard import verdicts as vd
from dashboard.inspector_extras import K_REVIEWER, REVIEWER_ENV, plain, verdict_store
from dashboard.loaded_run import GROUND_TRUTH_COLUMNS
from dashboard.numbers import plural
from dashboard.row_lookup import has_row
from dashboard.sources import INSTANCES
from scoring.review import corrections as cr
from scoring.review import value_text
from scoring.verifier import COLLECTION_OF_TYPE, MAP, SET_MAP, SHAPE_OF_TYPE

log = logging.getLogger("rolloutscope.dashboard.corrections")

K_OUTCOME = "gtc_outcome"
K_REVIEWER_W = "gtc_reviewer_w"
DRAW_HELP = (
    "Drag a box over the image (the chart starts in box-select mode; double-click clears it). "
    "Boxes replace or add a box, point types take the box's centre, segments its diagonal."
)


def _key(value: Any) -> str:
    return hashlib.sha1(str(value).encode("utf-8")).hexdigest()[:10]


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _reviewer() -> str:
    if K_REVIEWER_W not in st.session_state:
        st.session_state[K_REVIEWER_W] = st.session_state.get(K_REVIEWER, os.environ.get(REVIEWER_ENV, ""))
    return st.text_input("Reviewer", key=K_REVIEWER_W, max_chars=vd.REVIEWER_LIMIT)


def _save(store: vd.VerdictStore, correction: cr.Correction, row: pd.Series | None, key: str) -> None:
    """Button callback: store the correction with its verdict; remember the outcome to show it."""
    st.session_state[K_REVIEWER] = correction.reviewer
    try:
        saved = dc.save_correction(store, correction, row)
    except vd.VerdictStoreError as exc:
        st.session_state[K_OUTCOME] = (key, "warning", exc.message + " The correction was NOT saved.")
        return
    except dc.CorrectionStoreError as exc:
        st.session_state[K_OUTCOME] = (key, "warning", exc.message)
        return
    except Exception as exc:  # never a traceback in the browser
        log.exception("saving a correction failed")
        st.session_state[K_OUTCOME] = (key, "error", f"Could not save the correction: {type(exc).__name__}: {exc}")
        return
    st.session_state[K_OUTCOME] = (
        key, "success",
        f"Saved correction {saved.id} of {saved.correction.instance_id} ({saved.correction.field}, "
        f"{saved.correction.action}) with a 'ground truth wrong' verdict, by {saved.correction.reviewer or 'anonymous'}.",
    )


def _outcome(key: str) -> None:
    outcome = st.session_state.get(K_OUTCOME)
    if outcome and outcome[0] == key:
        getattr(st, outcome[1])(plain(outcome[2]))


def _preview(correction: cr.Correction, image: Any, size: tuple[int, int] | None, fallback: Any, key: str) -> None:
    st.caption("Before → after (green: the ground truth now; orange: as corrected)")
    cols = st.columns(2)
    cols[0].code(value_text(correction.before.get("value")), language=None, wrap_lines=True)
    cols[1].code(value_text(correction.after.get("value")), language=None, wrap_lines=True)
    if correction.field == cr.ANNOTATION_GT:
        model = dc.comparison_model(correction.after, correction.before, size, fallback)
        st.image(overlay.render_pil(model, image, frozenset({overlay.LAYER_GROUND_TRUTH, overlay.LAYER_MISSED,
                                                            overlay.LAYER_PREDICTION, overlay.LAYER_UNMATCHED,
                                                            overlay.LAYER_MATCHES})))


K_OPEN = "gtc_open"
OPEN_LABEL = "Correct the ground truth (draw on the image)"


def render_correction_panel(ctx: Any, row_id: Any, evaluation: Any) -> None:
    """The Inspector's correction panel for one row, behind a toggle (remembered for the session).

    A toggle rather than an expander: the rerun a box selection triggers must not fold the panel.
    """
    if not st.toggle(OPEN_LABEL, key=K_OPEN):
        return
    with st.container(border=True):
        try:
            _correction_panel(ctx, row_id, evaluation)
        except Exception as exc:
            _friendly("show the correction panel", exc)


def _correction_panel(ctx: Any, row_id: Any, evaluation: Any) -> None:
    row = ctx.row(row_id)
    answer_gt, annotation_gt = dc.row_ground_truth(row)
    key = _key(row_id)
    kind = annotation_gt.get("type") if isinstance(annotation_gt, dict) else None
    actions = [cr.REPLACE, cr.ADD, cr.REMOVE, cr.ANSWER] if kind in COLLECTION_OF_TYPE else [cr.ANSWER]
    action = st.radio("Correction", actions, format_func=lambda a: cr.ACTIONS[a], key=f"gtc_action_{key}")
    image, _ = ctx.load_image(row_id)
    size = overlay.source_size(image)
    items = cr.ground_truth_items(annotation_gt) if kind in COLLECTION_OF_TYPE else []
    collection = COLLECTION_OF_TYPE.get(kind)
    target: tuple[str | None, int] = (None, 0)
    if action in (cr.REPLACE, cr.REMOVE) and items:
        choice = st.selectbox("Ground-truth item", list(range(len(items))), format_func=lambda i: dc.item_label(*items[i]),
                              key=f"gtc_item_{key}")
        target = items[choice][0], items[choice][1]
    elif action == cr.ADD and collection in (MAP, SET_MAP):
        target = (st.text_input("Key of the added item", key=f"gtc_add_key_{key}").strip() or None, 0)
    elif action == cr.ADD:
        target = (None, len(items))

    edit: cr.Edit | None = None
    problem = ""
    if action == cr.ANSWER:
        current = answer_gt.get("value") if isinstance(answer_gt, dict) else None
        text = st.text_input("New answer (JSON: 7, \"circle\", [1, 2], {\"a\": 1})",
                             value=json.dumps(current, ensure_ascii=False), key=f"gtc_answer_{key}")
        try:
            edit = cr.Edit(cr.ANSWER, value=json.loads(text))
        except ValueError as exc:
            problem = f"The answer is not JSON ({exc})."
    elif action == cr.REMOVE:
        edit = cr.Edit(cr.REMOVE, key=target[0], index=target[1])
    else:
        direction = cr.SEGMENT_DOWN
        if SHAPE_OF_TYPE.get(kind) == "segment":
            direction = st.radio("Segment", (cr.SEGMENT_DOWN, cr.SEGMENT_UP), horizontal=True, key=f"gtc_dir_{key}",
                                 format_func=lambda d: "top-left → bottom-right" if d == cr.SEGMENT_DOWN
                                 else "bottom-left → top-right")
        st.caption(DRAW_HELP)
        model = overlay.build_overlay(evaluation, size)
        figure = dc.drawing_figure(model, image, annotation_gt)
        event = st.plotly_chart(figure, key=f"gtc_plot_{key}", on_select="rerun", selection_mode=("box",),
                                config=overlay.PLOTLY_CONFIG)
        selection = getattr(event, "selection", None) if event is not None else None
        try:
            edit = cr.edit_from_selection(selection, action, kind, key=target[0], index=target[1],
                                          image_size=size or evaluation.image_size, segment_direction=direction)
        except cr.CorrectionError as exc:
            problem = str(exc)

    note = st.text_input("Note", key=f"gtc_note_{key}", max_chars=vd.NOTE_LIMIT,
                         placeholder="Why the ground truth is wrong (optional)")
    reviewer = _reviewer()
    correction = None
    if edit is not None:
        try:
            correction = dc.correction_for_row(row, row_id, edit, reviewer=reviewer, note=note)
        except cr.CorrectionError as exc:
            problem = str(exc)
    if correction is not None:
        _preview(correction, image, size, evaluation.image_size, key)
    elif problem:
        st.info(plain(problem))
    store = verdict_store(ctx)
    st.button("Save correction", type="primary", key=f"gtc_save_{key}", disabled=correction is None,
              on_click=_save, args=(store, correction, row, key))
    _outcome(key)
    _history(store, row.get("instance_id"))


def _history(store: vd.VerdictStore, instance_id: Any) -> None:
    if instance_id is None:
        return
    try:
        saved = dc.corrections_frame(store, str(instance_id))
    except dc.CorrectionStoreError as exc:
        st.warning(plain(exc.message))
        return
    if len(saved):
        st.caption(plain(f"Corrections of {instance_id} (latest last)"))
        st.dataframe(dc.corrections_summary(saved), hide_index=True)


# --------------------------------------------------------------------------- suspects page


def render_suspect(ctx: Any, suspect: dict[str, Any]) -> None:
    """One suspect: the consensus drawn next to the ground truth, its numbers, and a button to adopt it."""
    row_id = suspect["example_row"]
    key = _key(f"{suspect['group']}|{suspect['kind']}")
    st.text(suspect["detail"])
    cols = st.columns(2)
    cols[0].caption("Ground truth")
    cols[0].code(suspect["ground_truth"], language=None, wrap_lines=True)
    cols[1].caption(f"Consensus of {suspect['support']} of {suspect['voters']} rollouts")
    cols[1].code(suspect["consensus"], language=None, wrap_lines=True)
    if has_row(ctx.table.index, row_id):
        truth, consensus = dc.suspect_truths(suspect)
        if truth is not None:
            image, warning = ctx.load_image(row_id)
            if warning:
                st.text(f"Image: {warning}")
            row = ctx.row(row_id)
            fallback = (row.get("image_width"), row.get("image_height"))
            fallback = fallback if all(isinstance(v, float) and v == v for v in fallback) else None
            model = dc.comparison_model(consensus, truth, overlay.source_size(image), fallback)
            figure = overlay.plotly_figure(model, image, overlay.ALL_LAYERS)
            st.plotly_chart(figure, config=overlay.PLOTLY_CONFIG, key=f"sus_plot_{key}")
            st.caption("Green: the ground truth · orange: the rollouts' consensus (drawn as the prediction layer) · "
                       "blue lines: their pairing")
        note = st.text_input("Note", key=f"sus_note_{key}", placeholder="optional")
        reviewer = _reviewer()
        try:
            row = ctx.row(row_id)
            value = json.loads(suspect["consensus"])
            edit = cr.Edit(cr.ANSWER, value=value) if suspect["kind"] == "answer" else cr.Edit(cr.ADOPT, value=value)
            correction = dc.correction_for_row(row, row_id, edit, reviewer=reviewer, note=note or "adopted the consensus")
        except (cr.CorrectionError, ValueError) as exc:
            st.info(plain(f"The consensus cannot be adopted as it is: {exc}"))
            correction = None
        st.button("Adopt the consensus as the corrected ground truth", key=f"sus_adopt_{key}",
                  disabled=correction is None, on_click=_save, args=(verdict_store(ctx), correction, ctx.row(row_id), key))
        _outcome(key)


def render_what_if(ctx: Any, saved: pd.DataFrame) -> None:
    """How the saved corrections move rewards, solve rate and groups (only their rows re-run)."""
    if not len(saved):
        st.info("No correction saved yet: correct a ground truth in the Inspector, or adopt a consensus above.")
        return
    table = ctx.run.table_with(GROUND_TRUTH_COLUMNS)  # corrected instances are found by their ground truth
    rescored = cr.rescore(table, saved, ctx.options.get("solved_threshold"), with_text=ctx.run.with_text)
    if not len(rescored):
        st.info("No loaded row carries the corrected ground truth (the corrections were made on other data).")
        return
    summary = cr.what_if_summary(ctx.table, rescored, solved_threshold=ctx.options.get("solved_threshold"))
    whole = summary["table"]
    cols = st.columns(4)
    cols[0].metric("Rows re-run", f"{whole['rescored_rows']:,}")
    rows = summary["rows"]
    cols[1].metric("Their mean reward (what-if)", f"{rows['overall']['after']:.3f}",
                   f"{rows['overall']['after'] - rows['overall']['before']:+.3f}")
    cols[2].metric("Mean reward, all rows (what-if)", f"{whole['overall_after']:.4f}",
                   f"{whole['overall_after'] - whole['overall_before']:+.4f}")
    cols[3].metric("Solve rate, all rows (what-if)", f"{whole['solve_rate_after']:.2%}",
                   f"{(whole['solve_rate_after'] - whole['solve_rate_before']) * 100:+.2f} pts")
    st.caption("A what-if: the rows of corrected instances re-scored against the corrected ground truth; "
               "the loaded scores are unchanged.")
    groups = summary["groups"]
    if len(groups):
        st.caption("Groups (run, step, instance) touched: mean and spread of the reward, before and after")
        st.dataframe(groups, hide_index=True, key="sus_whatif_groups")
    with st.expander(f"The {len(rescored):,} re-run rows"):
        st.dataframe(rescored, key="sus_whatif_rows")


def render_exports(ctx: Any, saved: pd.DataFrame) -> None:
    """Downloads: the JSONL patch, and each source file with the corrections applied (same layout)."""
    if not len(saved):
        return
    lines = cr.patch_lines(saved)
    st.download_button("Download the corrections (JSONL patch)", cr.patch_bytes(lines),
                       file_name="ground_truth_patch.jsonl", mime="application/jsonl", key="sus_patch")
    instance_files = [plan.name for plan in ctx.run.plans if plan.kind == INSTANCES]
    files = dc.corrected_sources(ctx.run.table_with(GROUND_TRUTH_COLUMNS), lines, ctx.run.paths, instance_files)
    for n, (source, result) in enumerate(files.items()):
        if isinstance(result, str):
            st.text(f"{source}: {result}")
            continue
        data, changed = result
        name = os.path.basename(source)
        stem, dot, ext = name.partition(".")
        st.download_button(plain(f"Download {source} corrected ({plural(len(changed), 'record')} changed)"), data,
                           file_name=f"{stem}.corrected{dot}{ext}", mime="application/octet-stream",
                           key=f"sus_file_{n}")


__all__ = ["render_correction_panel", "render_exports", "render_suspect", "render_what_if"]
