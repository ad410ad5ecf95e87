"""Rolloutscope (``streamlit run app.py``): the Overview page -- the run at a glance: headline numbers,
per-task and per-step summaries, files and problems. The other pages live in ``pages/``; the sidebar's
page list is drawn by ``dashboard.navigation`` (so this page is called "Overview", not "app")."""

import streamlit as st

from dashboard import figures, filters, numbers
from dashboard.state import bootstrap, options_note, row_table, show_table

GROUPS = {"task": filters.TASK_FAMILY, "annotation type": "annotation_type", "run": "run"}

ctx = bootstrap("Overview")
table, errors = ctx.table, ctx.errors
scores = ctx.scores()
metrics = filters.overview_metrics(table, scores, errors)
threshold = ctx.options["solved_threshold"]

st.title("Overview")
options_note(ctx)

c = st.columns(4)
c[0].metric("Rows", numbers.number(metrics["rows"]))
c[1].metric("Runs", numbers.number(metrics["runs"]))
c[2].metric("Steps", numbers.number(metrics["steps"]))
c[3].metric("Errors", numbers.number(metrics["errors"]),
            help=f"{numbers.plural(metrics['warnings'], 'warning')} besides; see Problems reading the files below")
c = st.columns(4)
for column, label, key, note in (
    (c[0], "Mean overall", "mean_overall", ""),
    (c[1], "Mean answer", "mean_answer", "trace rows · "),
    (c[2], "Mean annotation", "mean_annotation", "rows scored with an annotation · "),
    (c[3], "Mean format", "mean_format", "trace rows · "),
):
    column.metric(label, numbers.number(metrics[key]), help=note + numbers.exact(metrics[key]))
c = st.columns(4)
c[0].metric(f"Solve rate (≥ {threshold:g})", numbers.percent(metrics["solve_rate"]),
            help=f"share of rows whose overall is at least {threshold:g} · {numbers.exact(metrics['solve_rate'])}")
c[1].metric(
    "Format 0, reward > 0",
    numbers.number(metrics["format_zero_reward_positive"]),
    help="rows whose format check failed while the task reward stayed positive (see Format failures)",
)

if len(errors):
    problems = numbers.counted([(metrics["errors"], "error"), (metrics["warnings"], "warning")])
    with st.expander(f"Problems reading the files ({problems})"):
        show_table(errors, hide_index=True)

st.subheader("By task, annotation type and run")
group_by = st.segmented_control("Group by", list(GROUPS), default="task", key="overview_group", required=True)
if (group_by or "task") == "task":
    st.caption("Tasks are task families: ids that differ only by a trailing question number (gsm8k-train-0001 …) "
               "count as one task; task_ids says how many ids a family holds.")
show_table(filters.group_summary(table, scores, GROUPS[group_by or "task"]), hide_index=True)

steps = filters.step_summary(table, scores)
if len(steps):
    st.subheader("Reward by training step")
    st.vega_lite_chart(filters.step_long(steps), figures.step_chart_spec(tuple(filters.STEP_METRICS.values())),
                       width="content")

report = filters.logged_report(table)
if len(report):
    st.subheader("Logged vs recomputed rewards")
    differ = int(report["rows_differ"].sum())
    st.caption(f"The files carry rewards the trainer logged for {numbers.plural(len(report), 'component')} on up to "
               f"{numbers.plural(int(report['rows_logged'].max()), 'row')}; "
               f"{numbers.plural(differ, 'logged value')} {'differs' if differ == 1 else 'differ'} from the recomputed ones.")
    with st.expander("Per component"):
        show_table(report, hide_index=True)
    disagreements = filters.logged_disagreements(table)
    if len(disagreements):
        with st.expander(f"Rows that disagree ({len(disagreements):,})"):
            row_table(disagreements, "overview_logged_rows", caption="Select a row to open it in the inspector.")

with st.expander("Files read"):
    show_table(filters.files_table(ctx.run.plans, table, errors), hide_index=True)
