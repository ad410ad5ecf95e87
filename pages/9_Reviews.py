"""Reviews: every verdict reviewers gave, filtered, joined with the scored rows, downloadable.

Thin page: storage and joins live in :mod:`dashboard.verdicts`. Notes and
responses are shown with ``st.dataframe`` / ``st.text`` only (never HTML).
"""

from __future__ import annotations

import logging

import pandas as pd
import streamlit as st

from dashboard.state import bootstrap, open_in_inspector, show_table

ctx = bootstrap("Reviews")

from dashboard import auth, inspector_extras, numbers  # noqa: E402
from dashboard import verdicts as vd  # noqa: E402
from dashboard.inspector_extras import plain  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.reviews")

#: Columns of the on-screen table (the download carries more).
SHOWN = (
    "verdict_label", "note", "reviewer", "created_at", "revisions", "saved", "row_found", "row_changed",
    "run", "step", "task_id", "annotation_type", "score", "annotation_reward", "format_reason",
)


def _options(frame: pd.DataFrame, column: str) -> list[str]:
    if column not in frame.columns:
        return []
    return sorted(frame[column].dropna().astype(str).unique())


def filters(latest: pd.DataFrame) -> dict:
    with st.expander("Filters", expanded=True):
        columns = st.columns(4)
        kinds = columns[0].multiselect("Verdict", list(vd.VERDICTS), format_func=lambda v: vd.VERDICT_LABELS[v],
                                       key="rv_f_verdict")
        reviewers = columns[1].multiselect("Reviewer", _options(latest, "reviewer"), key="rv_f_reviewer")
        runs = columns[2].multiselect("Run", _options(latest, "run"), key="rv_f_run")
        tasks = columns[3].multiselect("Task", _options(latest, "task_id"), key="rv_f_task")
        columns = st.columns([2, 1, 1])
        text = columns[0].text_input("Search notes, row ids and reviewers", key="rv_f_text")
        history = columns[1].toggle("Every revision", key="rv_f_history",
                                    help="Show and export every verdict given, not only the latest per row.")
        loaded_only = columns[2].toggle("Only rows in the loaded data", key="rv_f_loaded")
    return {"kinds": kinds, "reviewers": reviewers, "runs": runs, "tasks": tasks, "text": text,
            "history": history, "loaded_only": loaded_only}


def metrics(latest: pd.DataFrame) -> None:
    columns = st.columns(len(vd.VERDICTS) + 1)
    columns[0].metric("Reviewed rows", f"{len(latest):,}")
    counts = latest["verdict"].value_counts()
    for column, verdict in zip(columns[1:], vd.VERDICTS, strict=True):
        column.metric(vd.VERDICT_LABELS[verdict], f"{int(counts.get(verdict, 0)):,}")


def main() -> None:
    st.title("Reviews")
    me = auth.signed_in_user()
    if me:
        st.caption(plain(f"Signed in as {me}: the verdicts you give are signed with this name."))
    store = inspector_extras.verdict_store(ctx)
    inspector_extras.render_store_status(store, "rv_page")
    try:
        every = store.verdicts()
    except vd.VerdictStoreError as exc:
        st.error(plain(exc.message))
        return
    latest = vd.latest_of(every)
    if not len(latest):
        st.info("No verdicts yet. Open a row in the inspector and use its review form to give one.")
        return
    # context for filtering comes from the rows when they are loaded, else from what the verdict stored
    table = ctx.run.with_text(vd.verdict_rows(every, ctx.table))  # the judged rows, with their response
    chosen = filters(vd.join_rows(latest, table, columns=("run", "task_id")))
    base = every if chosen["history"] else latest
    joined = vd.join_rows(base, table)
    filtered = vd.filter_verdicts(
        joined, kinds=chosen["kinds"], reviewers=chosen["reviewers"], runs=chosen["runs"], tasks=chosen["tasks"],
        text=chosen["text"],
    )
    if chosen["loaded_only"]:
        filtered = filtered[filtered["row_found"]]
    metrics(vd.filter_verdicts(vd.join_rows(latest, table), kinds=chosen["kinds"], reviewers=chosen["reviewers"],
                               runs=chosen["runs"], tasks=chosen["tasks"], text=chosen["text"]))
    missing = int((~joined["row_found"]).sum())
    if missing:
        st.caption(f"{numbers.plural(missing, 'verdict')} {numbers.verb(missing, 'is', 'are')} about rows that are not in the loaded data (shown with the file, "
                   "run and task they were given on).")
    changed = int(joined["row_changed"].fillna(False).sum())
    if changed:
        st.warning(f"{numbers.plural(changed, 'verdict')} {numbers.verb(changed, 'was', 'were')} given on a row whose response has changed since.")
    if not len(filtered):
        st.info("No verdicts match these filters.")
        return
    shown = filtered.set_index("row_key")
    shown.index.name = "row_id"
    view = shown[[c for c in SHOWN if c in shown.columns]].rename(columns={"verdict_label": "verdict"})
    st.caption(f"{numbers.plural(len(filtered), 'verdict')} — select one to open its row in the inspector.")
    event = show_table(view, key="rv_table", on_select="rerun", selection_mode="single-row", height=360)
    picked = event.selection.rows if event is not None else []
    if picked:
        row_id = view.index[picked[0]]
        if row_id in table.index:
            open_in_inspector(row_id)
        else:
            st.info(plain(f"{row_id} is not in the loaded data, so it cannot be opened in the inspector."))
    stamp = "history" if chosen["history"] else "latest"
    columns = st.columns(2)
    columns[0].download_button(
        "Download JSONL", vd.export_bytes(filtered, "jsonl"), file_name=f"verdicts_{stamp}.jsonl",
        mime="application/jsonl", key="rv_download_jsonl",
    )
    columns[1].download_button(
        "Download CSV", vd.export_bytes(filtered, "csv"), file_name=f"verdicts_{stamp}.csv", mime="text/csv",
        key="rv_download_csv",
    )
    st.caption("Downloads hold the filtered verdicts with their rows' run, step, task, scores, reasons and response.")


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    log.exception("the reviews page failed")
    st.error("Could not show the reviews.")
    st.text(f"{type(exc).__name__}: {exc}")
