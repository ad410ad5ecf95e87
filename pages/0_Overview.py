"""Overview: the run at a glance -- headline numbers, per-task and per-step summaries, files and problems."""

import streamlit as st

from dashboard import figures, filters
from dashboard.state import bootstrap, number_columns, options_note, row_table

GROUPS = {"task": "task_id", "annotation type": "annotation_type", "run": "run"}

ctx = bootstrap("Overview")
table, errors = ctx.table, ctx.errors
scores = ctx.scores()
metrics = filters.overview_metrics(table, scores, errors)
threshold = ctx.options["solved_threshold"]

st.title("Overview")
options_note(ctx)

c = st.columns(4)
c[0].metric("Rows", f"{metrics['rows']:,}")
c[1].metric("Runs", metrics["runs"])
c[2].metric("Steps", metrics["steps"])
c[3].metric("Errors", f"{metrics['errors']:,}", help=f"{metrics['warnings']:,} warning(s) besides")
c = st.columns(4)
c[0].metric("Mean overall", filters.num(metrics["mean_overall"]))
c[1].metric("Mean answer", filters.num(metrics["mean_answer"]))
c[2].metric("Mean annotation", filters.num(metrics["mean_annotation"]), help="rows scored with an annotation")
c[3].metric("Mean format", filters.num(metrics["mean_format"]))
c = st.columns(4)
c[0].metric(f"Solve rate (≥ {threshold:g})", filters.pct(metrics["solve_rate"]))
c[1].metric(
    "Format 0 but reward > 0",
    f"{metrics['format_zero_reward_positive']:,}",
    help="rows whose format check failed while the task reward stayed positive (see Format failures)",
)

if len(errors):
    with st.expander(f"Problems reading the files ({metrics['errors']:,} errors, {metrics['warnings']:,} warnings)"):
        st.dataframe(errors, hide_index=True)

st.subheader("By task, annotation type and run")
group_by = st.segmented_control("Group by", list(GROUPS), default="task", key="overview_group", required=True)
st.dataframe(filters.group_summary(table, scores, GROUPS[group_by or "task"]), hide_index=True,
             column_config=number_columns(filters.SUMMARY_FORMATS))

steps = filters.step_summary(table, scores)
if len(steps):
    st.subheader("Reward by training step")
    st.vega_lite_chart(filters.step_long(steps), figures.step_chart_spec(tuple(filters.STEP_METRICS.values())),
                       width="content")

report = filters.logged_report(table)
if len(report):
    st.subheader("Logged vs recomputed rewards")
    differ = int(report["rows_differ"].sum())
    st.caption(f"The files carry rewards the trainer logged for {len(report)} component(s) on up to "
               f"{int(report['rows_logged'].max()):,} row(s); {differ:,} logged value(s) differ from the recomputed ones.")
    with st.expander("Per component"):
        st.dataframe(report, hide_index=True)
    disagreements = filters.logged_disagreements(table)
    if len(disagreements):
        with st.expander(f"Rows that disagree ({len(disagreements):,})"):
            row_table(disagreements, "overview_logged_rows", caption="Select a row to open it in the inspector.")

with st.expander("Files read"):
    st.dataframe(filters.files_table(ctx.run.plans, table), hide_index=True)
