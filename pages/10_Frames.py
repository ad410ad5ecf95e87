"""Frames: which predictions look normalized, 0-1000, resized, swapped or outside the image, per task and run.

Thin page: the classification lives in :mod:`scoring.review.frames`, the one-row panel
in :mod:`dashboard.inspector_extras`. What-if scores are always labelled as a
diagnosis, never shown as the score. Data is shown with ``st.text`` /
``st.dataframe`` only.
"""

from __future__ import annotations

import logging
import os

import pandas as pd
import streamlit as st

from dashboard.state import bootstrap, metric_row, open_in_inspector, show_table

ctx = bootstrap("Frames")

from dashboard import filters, inspector_extras, numbers  # noqa: E402
from dashboard.inspector_extras import plain  # noqa: E402
from scoring.review import frame_tables  # noqa: E402
from scoring.review import frames as fr  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.frames")

#: Up to this many rows to re-run, the whole table is checked on the first visit
#: (about 5-10 s at the measured cost; $ROLLOUTSCOPE_FRAMES_EAGER_ROWS changes it).
EAGER_ROWS_ENV = "ROLLOUTSCOPE_FRAMES_EAGER_ROWS"


def eager_rows() -> int:
    try:
        return max(0, int(os.environ.get(EAGER_ROWS_ENV, "20000")))
    except ValueError:
        return 20_000


ALL = "(all)"
K_ALL = "fr_check_all"
LIST_LIMIT = 2000


@st.cache_resource(max_entries=4, show_spinner=False)
def _frames_cache(run_key: str, _run) -> frame_tables.IncrementalFrames:
    """One lazily filled frame table per loaded run (shared by every session); the rows it
    re-runs get their response from disk."""
    return frame_tables.IncrementalFrames(_run.table, with_text=_run.with_text)


def _progress_bar(total: int):
    bar = st.progress(0.0, text=f"Checking the coordinate frame of {total:,} rows…")

    def update(done: int, count: int) -> None:
        bar.progress(min(done / max(count, 1), 1.0), text=f"Checking coordinate frames: {done:,} of {count:,} rows")

    return bar, update


def _choice(column: str, label: str, table: pd.DataFrame, key: str) -> str:
    """A value of ``column`` (the first one by default, so a big run is not checked whole by accident)."""
    values = sorted(table[column].dropna().astype(str).unique()) if column in table.columns else []
    return st.selectbox(label, [ALL, *values], index=1 if values else 0, key=key)


def _scope(table: pd.DataFrame) -> pd.Index | None:
    """For big runs: the rows to check now (None = every row)."""
    columns = st.columns(3)
    with columns[0]:
        run = _choice("run", "Run", table, "fr_scope_run")
    with columns[1]:
        task = _choice("task_id", "Task", table, "fr_scope_task")
    mask = pd.Series(True, index=table.index)
    if run != ALL:
        mask &= table["run"].astype(str) == run
    if task != ALL:
        mask &= table["task_id"].astype(str) == task
    return table.index[mask.to_numpy()]


def load_frames(cache: frame_tables.IncrementalFrames) -> pd.DataFrame:
    table = ctx.table
    to_run = frame_tables.rows_to_evaluate(table)
    if to_run <= eager_rows() or cache.complete or st.session_state.get(K_ALL):
        missing = frame_tables.rows_to_evaluate(table.loc[cache.remaining()]) if not cache.complete else 0
        bar, update = _progress_bar(missing)
        frames = cache.frames_for(None, update if missing else None)
        bar.empty()
        return frames
    rate = cache.seconds_per_row
    left = frame_tables.rows_to_evaluate(table.loc[cache.remaining()])
    estimate = f"about {left * rate:,.0f} s" if rate else "about a millisecond per row"
    st.info(plain(
        f"This run has {to_run:,} rows whose frame needs re-running the scorer; {left:,} are not checked yet "
        f"({estimate}). Pick a run and task to check now (checked rows are remembered for every session), "
        "or check all of them."
    ))
    index = _scope(table)
    st.button("Check all rows", key="fr_check_all_button", on_click=lambda: st.session_state.update({K_ALL: True}))
    bar, update = _progress_bar(frame_tables.rows_to_evaluate(table.loc[index]))
    frames = cache.frames_for(index, update)
    bar.empty()
    st.caption(f"Counts below cover the {len(frames):,} rows of the chosen run and task (of {len(table):,}).")
    return frames


def summary(frames: pd.DataFrame) -> None:
    checked = frames[frames["status"] == fr.STATUS_CHECKED]
    counts = checked["frame"].value_counts()
    flagged = int(checked["frame"].isin(fr.FLAGGED_FRAMES).sum())
    unchecked = (fr.STATUS_NO_PREDICTION, fr.STATUS_NO_ANNOTATION, fr.STATUS_NOT_TRACE, fr.STATUS_ERROR)
    metric_row(
        {"label": "Rows checked", "value": f"{len(checked):,}"},
        {"label": "Flagged (not pixel)", "value": f"{flagged:,}"},
        {"label": "No image size", "value": f"{int((frames['status'] == fr.STATUS_NO_IMAGE_SIZE).sum()):,}",
         "help": fr.NO_IMAGE_SIZE_MESSAGE},
        {"label": "Not checked (no prediction or not a trace row)",
         "value": f"{int(frames['status'].isin(unchecked).sum()):,}"},
    )
    metric_row(*({"label": fr.FRAME_TITLES[frame], "value": f"{int(counts.get(frame, 0)):,}"}
                 for frame in fr.FLAGGED_FRAMES))


def counts_tabs(frames: pd.DataFrame) -> None:
    st.subheader("Frames per task and run")
    st.caption(
        "Rows per frame among the rows checked. outside_image_any counts rows with a shape outside the image "
        "whatever frame explains them; no_image_size rows are not guessed at. Tasks are task families "
        "(gsm8k-train-0001 … count as one task)."
    )
    if "task_id" in frames.columns:
        frames = frames.assign(**{filters.TASK_FAMILY: filters.task_families(frames["task_id"])})
    tabs = st.tabs(["Per task", "Per run", "Per run and task", "Per run and step"])
    task = filters.TASK_FAMILY
    groupings = ([task], ["run"], ["run", task], ["run", "step"])
    for tab, by in zip(tabs, groupings, strict=True):
        with tab:
            present = [c for c in by if c in frames.columns]
            if len(present) != len(by):
                st.text("Not available for these rows.")
                continue
            show_table(frame_tables.frame_counts(frames, by), hide_index=True, key=f"fr_counts_{'_'.join(by)}")


def flagged_list(frames: pd.DataFrame) -> pd.DataFrame:
    st.subheader("Flagged rows")
    chosen = st.multiselect(
        "Frames", list(fr.FLAGGED_FRAMES), default=list(fr.FLAGGED_FRAMES),
        format_func=lambda f: fr.FRAME_TITLES[f], key="fr_filter_frames",
    )
    flagged = frame_tables.flagged_rows(frames, chosen or fr.FLAGGED_FRAMES)
    if not len(flagged):
        st.info("No flagged rows: every checked prediction looks like pixel coordinates.")
        return flagged
    shown = flagged.head(LIST_LIMIT)
    view = shown[[c for c in ("run", "step", "task_id", "annotation_type", "frame", "confidence", "score",
                              "what_if_score", "detail") if c in shown.columns]]
    view = view.rename(columns={"score": "annotation score", "what_if_score": "what-if (diagnosis)"})
    show_table(view, key="fr_flagged_table", height=320)
    if len(flagged) > LIST_LIMIT:
        st.caption(f"Showing the {LIST_LIMIT:,} rows with the largest what-if gain of {len(flagged):,}.")
    return flagged


def no_size_list(frames: pd.DataFrame) -> None:
    missing = frames[frames["status"] == fr.STATUS_NO_IMAGE_SIZE]
    if not len(missing):
        return
    with st.expander(f"Rows without an image size ({len(missing):,}) — {fr.NO_IMAGE_SIZE_MESSAGE}"):
        show_table(missing[[c for c in ("run", "step", "task_id", "annotation_type", "message")
                              if c in missing.columns]].head(LIST_LIMIT), key="fr_no_size_table")


def one_row(flagged: pd.DataFrame) -> None:
    if not len(flagged):
        return
    st.subheader("Diagnose one row")
    ids = flagged.index.tolist()[:LIST_LIMIT]
    labels = {
        rid: f"{rid} · {flagged.at[rid, 'frame']} · score {numbers.number(flagged.at[rid, 'score'])}" for rid in ids
    }
    row_id = st.selectbox("Row", ids, format_func=lambda r: labels.get(r, str(r)), key="fr_row")
    if row_id is None:
        return
    inspector_extras.render_frame_diagnosis(ctx, row_id)
    if st.button("Open this row in the inspector", key="fr_open"):
        open_in_inspector(row_id)


def main() -> None:
    st.title("Coordinate frames")
    st.caption("Predictions whose coordinates are in the wrong frame. What-if scores are a diagnosis — not the score.")
    with st.expander("What is checked"):
        st.text("Each prediction is tested for coordinates normalized to [0, 1], on the 0-1000 grid, in a resized "
                "model frame, with x and y swapped, or outside the image. A what-if score re-scores the prediction "
                "mapped into pixels with the same matching code.")
    cache = _frames_cache(ctx.run.key, ctx.run)
    frames = load_frames(cache)
    if not len(frames):
        st.info("No rows to check.")
        return
    summary(frames)
    counts_tabs(frames)
    flagged = flagged_list(frames)
    no_size_list(frames)
    one_row(flagged)


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    log.exception("the frames page failed")
    st.error("Could not show the coordinate frames.")
    st.text(f"{type(exc).__name__}: {exc}")
