"""Compare: two runs (or two steps of one run) joined instance by instance.

Thin page: the join, the deltas with their intervals and the improved/regressed
lists come from :mod:`dashboard.compare`; the side-by-side overlays from
:mod:`dashboard.overlay`. Response text is only shown with ``st.code`` /
``st.text`` / ``st.dataframe``, never as Markdown or HTML.
"""

from __future__ import annotations

import json
import logging

import pandas as pd
import streamlit as st

from dashboard.state import bootstrap, options_note, plain, show_table

ctx = bootstrap("Compare")

from dashboard import compare, explain_view, numbers, overlay, tuning  # noqa: E402
from dashboard.loaded_run import IDENTITY_COLUMNS  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.compare")

# plain keys (survive page switches) and widget keys (_w)
K_A_RUN, K_A_STEP, K_B_RUN, K_B_STEP = "cmp_a_run", "cmp_a_step", "cmp_b_run", "cmp_b_step"
K_JOIN, K_COMPONENT, K_UNIT = "cmp_join", "cmp_component", "cmp_unit"
K_CACHE = "_cmp_cache"
LIST_LIMIT = 500
#: Screen pixels each of the two side-by-side pictures is drawn for (labels scaled to stay readable).
SIDE_WIDTH = 400


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _remembered(store: str, choices: list, default) -> None:
    """Give the widget ``store + '_w'`` its remembered value (or ``default`` when that is no longer a choice)."""
    value = st.session_state.get(store, default)
    if value not in choices:
        value = default
    st.session_state[store] = value
    st.session_state[store + "_w"] = value


def _keep(store: str):
    def callback() -> None:
        st.session_state[store] = st.session_state.get(store + "_w")

    return callback


ALL_STEPS = compare.ALL_STEPS_LABEL  # the widget's value for "every step" (None is "no choice" to a selectbox)


def _step_label(step) -> str:
    return ALL_STEPS if step == ALL_STEPS else f"step {step}"


def side_picker(column, name: str, runs: dict, default: compare.Side, run_key: str, step_key: str) -> compare.Side:
    with column:
        names = list(runs)
        _remembered(run_key, names, default.run)
        run = st.selectbox(f"Run {name}", names, key=run_key + "_w", on_change=_keep(run_key))
        steps = [ALL_STEPS, *runs[run]]
        if run == default.run:
            step_default = ALL_STEPS if default.step is None else default.step
        else:
            step_default = runs[run][-1] if runs[run] else ALL_STEPS
        _remembered(step_key, steps, step_default)
        step = st.selectbox(f"Step {name}", steps, key=step_key + "_w", format_func=_step_label, on_change=_keep(step_key))
    return compare.Side(run, None if step == ALL_STEPS else int(step))


def _explain(row_id):
    """The row's explanation under the current tuning options (cached by the loader)."""
    same = {k: v for k, v in ctx.options.items() if k != "solved_threshold"} == {
        k: v for k, v in ctx.scored_options.items() if k != "solved_threshold"
    }
    return ctx.explain(row_id) if same else ctx.explain(row_id, **tuning.scorer_kwargs(ctx.options))


def _joined(side_a: compare.Side, side_b: compare.Side, join: str):
    """compare_runs + all_deltas, remembered for the same data, sides, join and options."""
    key = (ctx.run.key, side_a, side_b, join, tuple(sorted(ctx.options.items(), key=lambda kv: kv[0])))
    hit = st.session_state.get(K_CACHE)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    joined = compare.compare_runs(ctx.run.table_with(IDENTITY_COLUMNS), ctx.scores(), side_a, side_b, join=join)
    deltas = compare.all_deltas(joined)
    if hit is not None and hit[0][:4] != key[:4]:
        st.session_state.pop(K_UNIT, None)  # instance numbers belong to one join
    st.session_state[K_CACHE] = (key, joined, deltas)
    return joined, deltas


def _interval(row) -> str:
    if row is None or pd.isna(row["ci_low"]) or pd.isna(row["ci_high"]):
        return "n/a"
    return f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"


def headline(deltas, counts) -> None:
    overall = deltas[compare.ALL]
    by_component = {r["component"]: r for r in overall.to_dict("records")}
    o = by_component.get("overall")
    s = by_component.get(compare.SOLVE)
    c = st.columns(4)
    c[0].metric("Δ overall (B − A)", "n/a" if o is None else f"{o['delta']:+.3f}",
                help="mean of the per-instance differences; 95% paired bootstrap interval below")
    c[1].metric("Δ solve rate (B − A)", "n/a" if s is None else f"{s['delta']:+.3f}",
                help="difference of the solved shares of matched rows; 95% Newcombe (Wilson) interval below")
    c[2].metric("Improved instances", f"{counts['improved']:,}")
    c[3].metric("Regressed instances", f"{counts['regressed']:,}", help=f"{counts['unchanged']:,} unchanged")
    st.text(f"95% intervals: Δ overall {_interval(o)} · Δ solve rate {_interval(s)}")


def slices_section(deltas) -> None:
    st.subheader("Deltas per slice")
    components = list(compare.COMPONENT_LABELS)
    _remembered(K_COMPONENT, components, "overall")
    component = st.selectbox("Component", components, key=K_COMPONENT + "_w", format_func=compare.COMPONENT_LABELS.get,
                             on_change=_keep(K_COMPONENT))
    st.text(
        "Δ = B − A, 95% intervals: components by a paired bootstrap over matched instances "
        f"({compare.BOOTSTRAP_RESAMPLES:,} resamples, seed {compare.BOOTSTRAP_SEED}); solve rate by Newcombe's "
        "score interval on matched rows (each side: exact Clopper-Pearson). significant = the interval excludes 0."
    )
    slicings = [("task_id", "task"), ("annotation_type", "annotation type")]
    slicings += [(by, label) for by, label in compare.SPLIT_SLICES.items() if by in deltas]  # lm-eval filters
    tab_all, *tabs = st.tabs(["All components", *(f"Per {label}" for _, label in slicings)])
    with tab_all:
        show_table(deltas[compare.ALL].drop(columns="slice"), hide_index=True, key="cmp_all_table")
    for tab, (by, label) in zip(tabs, slicings, strict=True):
        with tab:
            view = compare.component_view(deltas[by], component)
            if not len(view):
                st.info(f"No matched instance has a {compare.COMPONENT_LABELS[component]} value.")
                continue
            show_table(view, hide_index=True, key=f"cmp_{by}_table")
            st.plotly_chart(
                compare.delta_figure(view, title=f"Δ {compare.COMPONENT_LABELS[component]} per {label} (B − A)"),
                key=f"cmp_{by}_chart",
            )
    return component


def _pick_unit(table_key: str, ids: list) -> None:
    state = st.session_state.get(table_key)
    rows = state.selection.rows if state is not None else []
    if rows and rows[0] < len(ids):
        st.session_state[K_UNIT] = ids[rows[0]]


def changes_section(joined, component: str) -> None:
    improved, regressed = compare.changes(joined, component)
    label = compare.COMPONENT_LABELS[component]
    st.subheader(f"Instances that changed ({label})")
    left, right = st.columns(2)
    for column, title, frame, key in ((left, "Improved", improved, "cmp_improved"),
                                      (right, "Regressed", regressed, "cmp_regressed")):
        with column:
            st.text(f"{title}: {numbers.plural(len(frame), 'instance')}, largest change first"
                    + (f" (showing {LIST_LIMIT})" if len(frame) > LIST_LIMIT else ""))
            if not len(frame):
                continue
            shown = frame.head(LIST_LIMIT)
            ids = shown.index.tolist()
            show_table(
                shown.drop(columns=["row_a", "row_b"]), hide_index=True, key=key, on_select=lambda k=key, i=ids: _pick_unit(k, i),
                selection_mode="single-row", height=300,
            )
            st.download_button(f"Download all {title.lower()} (CSV)",
                               lambda f=frame: f.to_csv(index=False).encode("utf-8"),  # written on click
                               file_name=f"{key[4:]}_{component}.csv", mime="text/csv", key=key + "_csv")
    st.caption("Select an instance to open it side by side below.")


def unmatched_section(joined) -> None:
    a, b = joined.unmatched_a, joined.unmatched_b
    if not len(a) and not len(b):
        return
    with st.expander(f"Unmatched rows: {len(a):,} of A, {len(b):,} of B (not in the deltas)", expanded=not joined.report.ok):
        for name, ids in (("A", a), ("B", b)):
            if len(ids):
                st.text(f"{name}: {numbers.plural(len(ids), 'row')} without a partner" + (f" (showing {LIST_LIMIT})" if len(ids) > LIST_LIMIT else ""))
                show_table(compare.unmatched_rows(ctx.run.table_with(IDENTITY_COLUMNS), ids, LIST_LIMIT), key=f"cmp_unmatched_{name}")
                st.download_button(f"Download unmatched rows of {name} (CSV)",
                                   lambda i=ids: compare.unmatched_rows(ctx.run.table_with(IDENTITY_COLUMNS), i).to_csv().encode("utf-8"),
                                   file_name=f"unmatched_{name}.csv", mime="text/csv", key=f"cmp_unmatched_{name}_csv")


def _row_choice_label(row_id) -> str:
    row = ctx.row(row_id)
    sample = row.get("sample_index")
    sample = "" if sample is None or pd.isna(sample) else f"sample {sample} · "
    return f"{sample}{row_id} · overall {float(ctx.scores().loc[row_id, 'score']):.3f}"


def _ground_truth(row) -> tuple[str, str]:
    """(answer, annotation) ground truth of a trace row as JSON text."""
    try:
        kwargs = json.loads(row.get("scorer_kwargs"))
    except (TypeError, ValueError):  # no stored scorer inputs for this row
        return "", ""
    if not isinstance(kwargs, dict):
        return "", ""
    answer = kwargs.get("answer_gt")
    annotation = kwargs.get("annotation_gt")
    return (json.dumps(answer, ensure_ascii=False, indent=1) if answer is not None else "",
            json.dumps(annotation, ensure_ascii=False) if annotation is not None else "")


def side_panel(name: str, side: compare.Side, row_id) -> None:
    row = ctx.row(row_id)
    scores = ctx.scores().loc[row_id]
    st.text(f"{name}: {side.label}\n{row_id}\noverall {scores['score']:.3f} · solved {'yes' if scores['solved'] else 'no'}")
    response = row.get("response")
    response = "" if not isinstance(response, str) else response
    if str(row.get("scorer")) != "trace":
        st.caption("Prediction")
        st.code(explain_view.clip_middle(response) or " ", language=None, wrap_lines=True)
        return
    try:
        evaluation = _explain(row_id)
    except Exception as exc:
        _friendly(f"explain row {row_id}", exc)
        return
    image, warning = ctx.load_image(row_id)
    if warning:
        st.text(f"Image: {warning}" + ("" if image is not None else " (drawn on a blank canvas)"))
    try:
        model = overlay.build_overlay(evaluation, overlay.source_size(image))
        st.image(overlay.render_pil(model, image, display_width=SIDE_WIDTH, legend=True))
    except Exception as exc:
        _friendly("draw the overlay", exc)
    show_table(explain_view.component_table(evaluation), hide_index=True, key=f"cmp_components_{name}",
               column_config={"why (for a zero)": None})  # the reasons follow in full, one line each
    for component in explain_view.component_rows(evaluation):
        if component.reason:
            st.text(f"{component.component}: {component.reason}")
    answer = explain_view.answer_view(evaluation)
    st.text(f"answer: {answer.predicted} ({'match' if answer.correct else 'no match'})")
    st.caption("Prediction (response)")
    st.code(explain_view.clip_middle(response) or " ", language=None, wrap_lines=True)


def side_by_side(joined, component: str) -> None:
    st.subheader("Side by side")
    choices = compare.unit_choices(joined, component, limit=compare.PICKER_LIMIT, keep=st.session_state.get(K_UNIT))
    if not choices:
        return
    labels = compare.unit_labels(joined, choices, component)
    _remembered(K_UNIT, choices, choices[0])
    unit = st.selectbox("Instance", choices, key=K_UNIT + "_w", on_change=_keep(K_UNIT), format_func=labels.get)
    if len(joined.units) > compare.PICKER_LIMIT:
        st.caption(f"The {compare.PICKER_LIMIT:,} largest changes are offered here; select any instance in the "
                   "lists above to open it.")
    rows_a, rows_b = joined.rows_of(unit)
    left, right = st.columns(2)
    picks = {}
    for column, name, rows in ((left, "A", rows_a), (right, "B", rows_b)):
        with column:
            options = rows.tolist()
            picks[name] = st.selectbox(f"Rollout of {name}", options, key=f"cmp_row_{name}_{unit}",
                                       format_func=_row_choice_label)
    ground_truth_panel(picks["A"], picks["B"])
    left, right = st.columns(2)
    with left:
        side_panel("A", joined.report.side_a, picks["A"])
    with right:
        side_panel("B", joined.report.side_b, picks["B"])


def ground_truth_panel(row_id_a, row_id_b) -> None:
    """The instance's ground truth, drawn on its image (A's row; a warning when B's differs)."""
    row_a, row_b = ctx.row(row_id_a), ctx.row(row_id_b)
    picture, words = st.columns(2)
    if str(row_a.get("scorer")) != "trace":
        gold = row_a.get("gold")
        picture.caption("Ground truth (gold)")
        picture.code(str(gold) if isinstance(gold, str) else "(none)", language=None, wrap_lines=True)
        return
    try:
        evaluation = _explain(row_id_a)
        image, _ = ctx.load_image(row_id_a)
        model = overlay.ground_truth_overlay(evaluation, overlay.source_size(image))
        with picture:
            st.caption("Ground truth (the instance's)")
            st.image(overlay.render_pil(model, image, display_width=SIDE_WIDTH, legend=True))
        with words:
            answer = explain_view.answer_view(evaluation)
            st.text(f"answer_gt: {answer.ground_truth}\nannotation_gt: {evaluation.annotation_type or '(none)'}, "
                    f"{len(model.marks)} shape(s)")
            for note in model.notes:
                st.text(f"Note: {note}")
            if str(row_b.get("scorer")) == "trace" and _ground_truth(row_b) != _ground_truth(row_a):
                st.warning("A's and B's rows carry different ground truth; shown: A's.")
            st.caption("Overlays below: " + overlay.legend_text())
    except Exception as exc:
        _friendly("draw the ground truth", exc)


def main() -> None:
    table = ctx.table
    st.title("Compare runs")
    options_note(ctx)
    runs = compare.runs_and_steps(table)
    defaults = compare.default_sides(table)
    if defaults is None:
        st.info("Nothing to compare: the data has one run with at most one step. Load two runs (or a run "
                "with several steps) to compare them.")
        return
    c = st.columns([2, 2, 2])
    side_a = side_picker(c[0], "A", runs, defaults[0], K_A_RUN, K_A_STEP)
    side_b = side_picker(c[1], "B", runs, defaults[1], K_B_RUN, K_B_STEP)
    with c[2]:
        _remembered(K_JOIN, list(compare.JOINS), compare.JOIN_AUTO)
        join = st.selectbox("Join rows on", compare.JOINS, key=K_JOIN + "_w", format_func=compare.JOIN_LABELS.get,
                            on_change=_keep(K_JOIN))
    if side_a == side_b:
        st.warning("A and B are the same run and step: pick two different runs or steps.")
        return
    joined, deltas = _joined(side_a, side_b, join)
    report = joined.report
    if not report.ok:
        st.warning(plain(report.summary()))
        unmatched_section(joined)
        return
    st.success(plain(report.summary()))
    headline(deltas, compare.change_counts(joined, "overall"))
    component = slices_section(deltas)
    changes_section(joined, component)
    unmatched_section(joined)
    side_by_side(joined, component)


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    _friendly("compare these runs", exc)
