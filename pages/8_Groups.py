"""GRPO groups: rollouts of one prompt side by side, and the groups that carry no learning signal.

Thin page: detection, statistics and the option sweep come from
:mod:`dashboard.groups` (the sweep re-weights with the scorer's own
``recompose``). Data text is only shown with ``st.text`` / ``st.dataframe``.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.state import bootstrap, metric_row, options_note, plain, row_table, show_table

ctx = bootstrap("Groups")

from dashboard import compare, groups, numbers  # noqa: E402
from dashboard.loaded_run import IDENTITY_COLUMNS  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.groups")

K_RUN, K_ONLY, K_GROUP = "grp_run", "grp_only_flagged", "grp_group"
K_CACHE = "_grp_cache"
K_SWEEP = "_grp_sweep"
K_STATS = "_grp_stats"
ALL_RUNS = "all runs"
TABLE_LIMIT = 2000
SIGNAL_ORDER = {groups.SIGNAL_ALL_ZERO: 0, groups.SIGNAL_ALL_ONE: 1, groups.SIGNAL_ALL_EQUAL: 2,
                groups.SIGNAL_MIXED: 3, groups.SIGNAL_SINGLE: 4, groups.SIGNAL_UNSCORED: 5}


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _remembered(store: str, choices: list | None, default) -> None:
    value = st.session_state.get(store, default)
    if choices is not None and value not in choices:
        value = default
    st.session_state[store] = value
    st.session_state[store + "_w"] = value


def _keep(store: str):
    def callback() -> None:
        st.session_state[store] = st.session_state.get(store + "_w")

    return callback


def _grouping(run: str):
    """(table subset, row positions in the table, grouping) for one run filter, remembered per data and filter."""
    key = (ctx.run.key, run)
    hit = st.session_state.get(K_CACHE)
    if hit is not None and hit[0] == key:
        return hit[1]
    table = ctx.run.table_with(IDENTITY_COLUMNS)  # groups key rows by prompt and image
    positions = np.arange(len(table)) if run == ALL_RUNS else np.flatnonzero(compare.run_labels(table) == run)
    if run != ALL_RUNS:
        table = table.iloc[positions]
    result = (table, positions, groups.detect_groups(table))
    st.session_state[K_CACHE] = (key, result)
    return result


def _stats(run: str, grouping, scores):
    """(per-group statistics, summary), remembered per data, run filter and current options."""
    key = (ctx.run.key, run, tuple(sorted(ctx.options.items())))
    hit = st.session_state.get(K_STATS)
    if hit is not None and hit[0] == key:
        return hit[1]
    stats = groups.group_stats(grouping, scores)
    result = (stats, groups.signal_summary(stats))
    st.session_state[K_STATS] = (key, result)
    return result


def _sweeps(run: str, table, grouping, options: dict):
    """The two option sweeps, remembered per data, run filter and current options."""
    key = (ctx.run.key, run, tuple(sorted(options.items())))
    hit = st.session_state.get(K_SWEEP)
    if hit is not None and hit[0] == key:
        return hit[1]
    thresholds = sorted({0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.999, float(options["solved_threshold"])})
    result = (
        groups.zero_signal_share(table, groups.weight_grid(options), grouping=grouping, base=options),
        groups.zero_signal_share(table, groups.threshold_grid(options, thresholds), grouping=grouping, base=options),
    )
    st.session_state[K_SWEEP] = (key, result)
    return result


def headline(summary: dict, threshold: float) -> None:
    metric_row(
        {"label": "Groups with ≥ 2 rollouts", "value": f"{summary['multi_groups']:,}",
         "help": f"{numbers.plural(summary['groups'], 'group')} in all; {summary['single_groups']:,} "
                 f"{'has' if summary['single_groups'] == 1 else 'have'} a single rollout"},
        {"label": "No signal (all rewards equal)", "value": numbers.percent(summary["zero_signal_share"]),
         "help": f"{numbers.plural(summary['zero_signal'], 'group')}: every rollout got the same reward, so every "
                 "GRPO advantage is 0"},
        {"label": "… all 0", "value": f"{summary['all_zero']:,}"},
        {"label": "… all 1", "value": f"{summary['all_one']:,}",
         "help": f"{numbers.plural(summary['all_equal'], 'more group')} share another constant reward"},
        {"label": f"All / none solved (≥ {threshold:g})", "value": numbers.percent(summary["uniform_solved_share"]),
         "help": f"{summary['all_solved']:,} all solved, {summary['none_solved']:,} none solved: no signal "
                 "for a binary solved reward"},
    )


def groups_table(stats):
    st.subheader("Groups")
    _remembered(K_ONLY, None, False)
    only = st.checkbox("Only groups with no signal (all rewards equal)", key=K_ONLY + "_w", on_change=_keep(K_ONLY))
    shown = stats[stats["zero_signal"]] if only else stats
    order = np.lexsort((
        shown["std"].fillna(np.inf).to_numpy(),
        shown["signal"].map(SIGNAL_ORDER).fillna(9).to_numpy(),
    ))
    shown = shown.iloc[order]
    if not len(shown):
        st.info("No group matches." if only else "No groups.")
        return None
    columns = ["run", "step", "key", "task_id", "annotation_type", "size", "mean", "std", "min", "max",
               "solved_fraction", "signal", "solved_signal", "repeated_samples", "how", "source_file"]
    view = shown.head(TABLE_LIMIT)[columns]
    st.text(f"{numbers.plural(len(shown), 'group')}, no-signal groups first" + (f" (showing {TABLE_LIMIT:,})" if len(shown) > TABLE_LIMIT else "")
            + ". std: sample standard deviation (ddof 1) of the reward, as GRPO normalises.")
    ids = view.index.tolist()

    def picked() -> None:
        state = st.session_state.get("grp_table")
        rows = state.selection.rows if state is not None else []
        if rows and rows[0] < len(ids):
            st.session_state[K_GROUP] = ids[rows[0]]

    show_table(view, key="grp_table", on_select=picked, selection_mode="single-row", height=320)
    return ids


def rollouts_section(table, scores, grouping, stats, ids) -> None:
    st.subheader("Rollouts of one group")
    _remembered(K_GROUP, ids, ids[0])

    def label(g) -> str:
        row = stats.loc[g]
        step = "" if pd.isna(row["step"]) else f" · step {row['step']}"
        return f"#{g} · {row['run']}{step} · {row['key']} · {row['signal']}"

    group = st.selectbox("Group", ids, key=K_GROUP + "_w", on_change=_keep(K_GROUP), format_func=label)
    row = stats.loc[group]
    st.text(f"{numbers.plural(int(row['size']), 'rollout')} · mean {numbers.number(row['mean'])} · "
            f"std {numbers.number(row['std'])} · solved {numbers.percent(row['solved_fraction'])} · {row['signal']}")
    row_table(groups.group_rollouts(table, scores, grouping, group), "grp_rollouts",
              caption="Select a rollout to open it in the inspector.")


def sweep_section(run: str, table, grouping) -> None:
    st.subheader("No-signal share under other weights and thresholds")
    st.text("Each point re-weights the whole run with the scorer's own formula (as the Tuning page does); "
            "everything else stays at the current options.")
    options = ctx.options
    try:
        by_weight, by_threshold = _sweeps(run, table, grouping, options)
    except ValueError as exc:
        st.error(plain(f"Cannot sweep these options: {exc}"))
        return
    total = float(options["answer_weight"]) + float(options["annotation_weight"])
    current_share = float(options["annotation_weight"]) / total if total > 0 else None
    by_weight = by_weight.assign(annotation_share=by_weight["annotation_weight"])
    left, right = st.columns(2)
    left.plotly_chart(groups.sweep_figure(by_weight, x="annotation_share", current=current_share,
                                          title="vs annotation weight (answer weight = 1 − it)"), key="grp_sweep_w")
    right.plotly_chart(groups.sweep_figure(by_threshold, x="solved_threshold", current=float(options["solved_threshold"]),
                                           title="vs solved_threshold"), key="grp_sweep_t")
    with st.expander("Sweep values"):
        show_table(by_weight.drop(columns="annotation_share"), hide_index=True, key="grp_sweep_w_table")
        show_table(by_threshold, hide_index=True, key="grp_sweep_t_table")


def main() -> None:
    st.title("GRPO groups")
    options_note(ctx)
    table = ctx.table
    runs = [ALL_RUNS, *compare.runs_and_steps(table)]
    _remembered(K_RUN, runs, ALL_RUNS)
    run = st.selectbox("Run", runs, key=K_RUN + "_w", on_change=_keep(K_RUN))
    table, positions, grouping = _grouping(run)
    if not grouping.rows:
        st.info("No rows to group.")
        return
    scores = ctx.scores().iloc[positions]
    stats, summary = _stats(run, grouping, scores)
    st.info(plain(grouping.describe()))
    if not summary["multi_groups"]:
        st.warning("No group has two or more scored rollouts, so there is no spread and no learning-signal "
                   "check to show. The groups are listed below.")
    headline(summary, float(ctx.options["solved_threshold"]))
    per_step = groups.per_run_step(stats)
    if len(per_step):
        st.subheader("By run and step")
        left, right = st.columns([3, 2])
        left.plotly_chart(groups.steps_figure(per_step), key="grp_steps")
        with right:
            show_table(per_step, hide_index=True, key="grp_steps_table")
    ids = groups_table(stats)
    if ids:
        rollouts_section(table, scores, grouping, stats, ids)
    if summary["multi_groups"]:
        sweep_section(run, table, grouping)


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    _friendly("show the groups", exc)
