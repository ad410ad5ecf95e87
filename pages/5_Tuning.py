"""Tuning: change mode, formula, weights and solved_threshold; the whole run is re-weighted at once."""

import streamlit as st

from dashboard import figures, filters, groups, links, numbers, tuning, url_state
from dashboard.loaded_run import IDENTITY_COLUMNS
from dashboard.state import bootstrap, options_note, row_table, set_options, show_table, sync_widget

WIDGETS = {  # option -> widget key
    "mode": "tune_mode",
    "formula": "tune_formula",
    "answer_weight": "tune_answer_weight",
    "annotation_weight": "tune_annotation_weight",
    "format_weight": "tune_format_weight",
    "solved_threshold": "tune_solved_threshold",
}

LINK_PAGE = "tuning"

ctx = bootstrap("Tuning")
table = ctx.table
scored = ctx.scored_options
fields = links.tuning_fields({o: tuning.widget_value(o, v) for o, v in scored.items()}, tuning.MODES, tuning.FORMULAS)


def _apply() -> None:
    chosen = {option: st.session_state[key] for option, key in WIDGETS.items()}
    problem = tuning.validate(chosen)
    st.session_state["tune_problem"] = problem
    if not problem:
        set_options(chosen)


def _reset() -> None:
    set_options(scored)
    st.session_state["tune_problem"] = ""


link_notes = []
incoming = url_state.incoming(LINK_PAGE)
if incoming is not None:  # a link: its options become the session's (for every page)
    linked, link_notes = links.decode(incoming, fields)
    problem = tuning.validate(linked)
    if problem:
        link_notes.append(f"The link's options cannot be used together ({problem}); keeping the current ones.")
    else:
        set_options(linked)
        ctx.options = tuning.normalised(linked)

# the widgets show the session's options (the callbacks above have already applied any change)
for option, key in WIDGETS.items():
    sync_widget(key, tuning.widget_value(option, ctx.options[option]))

head, link_slot = st.columns([3, 1], vertical_alignment="bottom")
head.title("Tuning")
url_state.show_notes(link_notes)
st.caption("Try other options on the whole run; every page follows them.")
with st.expander("How this works"):
    st.text("Re-weighting, not rescoring: the stored answer, annotation and format components are recombined with "
            "the scorer's own formula, so every number here equals scoring the run again with these options.")

with st.container(border=True):
    c1, c2, c3 = st.columns([2, 1, 1])
    c1.selectbox("Output mode", tuning.MODES, key=WIDGETS["mode"], format_func=tuning.MODE_LABELS.get, on_change=_apply)
    c2.radio("Annotation formula", tuning.FORMULAS, key=WIDGETS["formula"], horizontal=True, on_change=_apply)
    c3.button("Reset to scored options", on_click=_reset)
    c1, c2, c3, c4 = st.columns(4)
    c1.slider("answer_weight", 0.0, 1.0, step=0.05, key=WIDGETS["answer_weight"], on_change=_apply)
    c2.slider("annotation_weight", 0.0, 1.0, step=0.05, key=WIDGETS["annotation_weight"], on_change=_apply)
    c3.slider("format_weight", 0.0, 1.0, step=0.05, key=WIDGETS["format_weight"], on_change=_apply)
    c4.slider("solved_threshold", 0.0, 1.0, step=0.001, format="%.3f", key=WIDGETS["solved_threshold"],
              on_change=_apply)
    problem = st.session_state.get("tune_problem")
    if problem:
        st.error(problem)

options = ctx.options
baseline = dict(scored)
params = links.encode({o: tuning.widget_value(o, v) for o, v in options.items()}, fields)
url_state.publish(LINK_PAGE, params)
url_state.link_box(params, where=link_slot)
comparison = tuning.compare(table, baseline, options)
options_note(ctx)

summary = comparison.summary.set_index("metric")
c = st.columns(4)
for col, metric, fmt in zip(c, ("mean overall", "solve rate", "mean task reward", "mean format"),
                            (filters.num, filters.pct, filters.num, filters.num), strict=True):
    before, after, delta = summary.loc[metric, ["before", "after", "delta"]]
    shown = None if abs(delta) < 1e-12 else (numbers.points(delta) if metric == "solve rate" else numbers.signed(delta))
    col.metric(metric, fmt(after), delta=shown, help=f"as scored: {fmt(before)} · {numbers.exact(after)}")
st.caption(f"{numbers.plural(len(comparison.flips), 'row')} flip: {len(comparison.newly_solved):,} newly solved, "
           f"{len(comparison.newly_unsolved):,} newly unsolved.")

left, right = st.columns(2)
left.plotly_chart(
    figures.before_after_histogram(tuning.score_counts(comparison.before), tuning.score_counts(comparison.after),
                                   title="Overall before / after",
                                   threshold=options["solved_threshold"]),
    key="tune_hist",
)
changed = comparison.per_task[comparison.per_task["mean_delta"].abs() > 1e-12]
if len(changed):
    right.plotly_chart(figures.delta_bars(changed, key=filters.TASK_FAMILY), key="tune_deltas")
else:
    right.caption("No task's mean overall changes with these options.")

with st.expander("GRPO groups with no learning signal", expanded=False):
    st.caption("Groups of rollouts of one prompt whose rewards are all equal give GRPO no gradient. "
               "Computed on demand: re-weights the whole run once per point of each sweep.")
    if st.toggle("Show how the share changes with these options", key="tune_grpo"):
        try:
            keyed = ctx.run.table_with(IDENTITY_COLUMNS)  # groups key rows by prompt and image
            grouping = groups.detect_groups(keyed)
            current = groups.zero_signal_share(keyed, [baseline, options], grouping=grouping)
            before, after = current.iloc[0], current.iloc[1]
            c1, c2, c3 = st.columns(3)
            c1.metric("groups (2+ rollouts)", f"{int(after['groups']):,}")
            c2.metric("all rewards equal", filters.pct(after["zero_signal_share"]),
                      delta=numbers.points(after["zero_signal_share"] - before["zero_signal_share"]),
                      delta_color="inverse", help=f"as scored: {filters.pct(before['zero_signal_share'])}")
            c3.metric("all or none solved", filters.pct(after["uniform_solved_share"]),
                      delta=numbers.points(after["uniform_solved_share"] - before["uniform_solved_share"]),
                      delta_color="inverse", help=f"as scored: {filters.pct(before['uniform_solved_share'])}")
            left, right = st.columns(2)
            by_weight = groups.zero_signal_share(keyed, groups.weight_grid(options), grouping=grouping)
            left.plotly_chart(groups.sweep_figure(by_weight, x="annotation_weight", title="By annotation weight",
                                                  current=tuning.annotation_share(options)), key="tune_grpo_w")
            by_threshold = groups.zero_signal_share(keyed, groups.threshold_grid(options), grouping=grouping)
            right.plotly_chart(groups.sweep_figure(by_threshold, x="solved_threshold", title="By solved_threshold",
                                                   current=options["solved_threshold"]), key="tune_grpo_t")
        except ValueError as exc:
            st.warning(f"Cannot compute the group signal: {exc}")

tab_tasks, tab_flips, tab_snippet = st.tabs(["Per-task deltas", "Rows that flip", "Snippet"])
with tab_tasks:
    st.caption("Per task family: ids that differ only by a trailing question number (gsm8k-train-0001 …) count "
               "as one task.")
    show_table(comparison.per_task, hide_index=True)
with tab_flips:
    if len(comparison.flips):
        row_table(tuning.flip_rows(table, comparison), "tune_flips",
                  caption="Newly solved first. Select a row to open it in the inspector."
                  + (" Showing the first 500." if len(comparison.flips) > 500 else ""))
    else:
        st.caption("No row changes between solved and unsolved.")
with tab_snippet:
    st.caption("The chosen options, ready to paste (copy button on hover).")
    st.code(tuning.snippet_python(options), language="python")
    st.code(tuning.snippet_yaml(options), language="yaml")
