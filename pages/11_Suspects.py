"""Suspects: instances whose rollouts agree with each other and not with the ground truth; the
corrections saved so far, their what-if and their export.

Thin page: the rule is :func:`scoring.review.consensus.suspects`, the panels are in
:mod:`dashboard.correction_view`, storage in :mod:`dashboard.corrections`.
"""

from __future__ import annotations

import logging

import pandas as pd
import streamlit as st

from dashboard.state import bootstrap, open_in_inspector

ctx = bootstrap("Suspects")

from dashboard import correction_view, inspector_extras  # noqa: E402
from dashboard import corrections as dc  # noqa: E402
from dashboard.inspector_extras import plain  # noqa: E402
from dashboard.loaded_run import GROUND_TRUTH_COLUMNS  # noqa: E402
from scoring.review import consensus as cs  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.suspects")

SHOWN = ("instance_id", "kind", "confidence", "support", "voters", "agreement", "gt_similarity", "task_id",
         "annotation_type", "runs", "example_row")


@st.cache_data(max_entries=8, show_spinner="Looking for ground-truth errors…")
def _suspects(run_key: str, settings: cs.ConsensusSettings, kinds: tuple[str, ...], _run) -> pd.DataFrame:
    """The suspects of one loaded run under ``settings`` (cached for every session); the rows
    re-run get their response from disk."""
    return cs.suspects(_run.table_with(GROUND_TRUTH_COLUMNS), settings, kinds=kinds, with_text=_run.with_text)


def settings_panel() -> tuple[cs.ConsensusSettings, tuple[str, ...]]:
    defaults = cs.ConsensusSettings()
    with st.expander("Settings", expanded=False):
        cols = st.columns(4)
        min_support = cols[0].number_input("Agreeing rollouts, at least", 2, 1000, defaults.min_support,
                                           key="sus_min_support")
        min_agreement = cols[1].slider("Share of voting rollouts, at least", 0.0, 1.0, defaults.min_agreement, 0.05,
                                       key="sus_min_agreement")
        agree = cols[2].slider("Predictions agree at similarity", 0.0, 1.0, defaults.agree_similarity, 0.05,
                               key="sus_agree")
        item_max = cols[3].slider("An item below this similarity contradicts", 0.0, 1.0,
                                  defaults.item_similarity_max, 0.05, key="sus_item_max")
        cols = st.columns(3)
        grpo = cols[0].checkbox("One vote per GRPO group (run and step)", value=False, key="sus_grpo")
        frames = cols[1].checkbox("Drop a consensus in another coordinate frame", value=True, key="sus_frames")
        kinds = cols[2].multiselect("Kinds", list(cs.KINDS), default=list(cs.KINDS), key="sus_kinds")
    settings = cs.ConsensusSettings(
        min_support=int(min_support), min_agreement=float(min_agreement), agree_similarity=float(agree),
        item_similarity_max=float(item_max), split_by=("run", "step") if grpo else (), skip_frame_errors=frames,
    )
    return settings, tuple(kinds) or cs.KINDS


def main() -> None:
    st.title("Suspected ground-truth errors")
    st.caption("An instance is suspect when most of its rollouts agree with each other — the same canonical answer, "
               "or geometry that matches each other — and disagree with its ground truth. Ranked by confidence: "
               "how many agree, how closely, and how far from the ground truth.")
    settings, kinds = settings_panel()
    found = _suspects(ctx.run.key, settings, kinds, ctx.run)
    cols = st.columns(3)
    cols[0].metric("Suspects", f"{len(found):,}")
    cols[1].metric("Answer", f"{int((found['kind'] == 'answer').sum()):,}")
    cols[2].metric("Annotation", f"{int((found['kind'] == 'annotation').sum()):,}")
    if not len(found):
        st.info("No suspect: no instance has rollouts that agree with each other against its ground truth.")
    else:
        st.caption("Select a suspect to see its consensus drawn next to the ground truth.")
        event = st.dataframe(found[list(SHOWN)], key="sus_table", on_select="rerun", selection_mode="single-row",
                             hide_index=True, height=320)
        picked = event.selection.rows if event is not None else []
        if picked:
            suspect = found.iloc[picked[0]].to_dict()
            st.subheader(plain(f"{suspect['instance_id']} — {suspect['kind']}"))
            correction_view.render_suspect(ctx, suspect)
            if st.button("Open its example row in the inspector", key="sus_open"):
                open_in_inspector(suspect["example_row"])

    st.header("Corrections")
    store = inspector_extras.verdict_store(ctx)
    try:
        saved = dc.corrections_frame(store)
    except dc.CorrectionStoreError as exc:
        st.error(plain(exc.message))
        return
    if len(saved):
        st.dataframe(dc.corrections_summary(saved), hide_index=True, key="sus_saved")
    correction_view.render_what_if(ctx, saved)
    correction_view.render_exports(ctx, saved)


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    log.exception("the suspects page failed")
    st.error("Could not show the suspects.")
    st.text(f"{type(exc).__name__}: {exc}")
