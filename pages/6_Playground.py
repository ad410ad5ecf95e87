"""Playground: try the simple scorers and the trace scorer on your own text.

Thin page over :mod:`dashboard.playground` (view-models) and
:mod:`dashboard.overlay`. Every text is shown with ``st.code`` / ``st.text`` /
``st.dataframe``; positions are marked with plain-text caret lines.
"""

from __future__ import annotations

import functools
import logging

import streamlit as st

from dashboard.state import bootstrap, selected_row, show_table

ctx = bootstrap("Playground")

from dashboard import explain_view, overlay, playground  # noqa: E402
from scoring.rewards import DEFAULT_READING, DEFAULT_TOLERANCE, READINGS, SCORER_INFO, scorer_names  # noqa: E402
from scoring.verifier import FORMULA_ADDITIVE, FORMULA_GATED, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.playground")

SRC_TABLE, SRC_PASTE = "Simple-scorer rows of the loaded data", "Paste rows (JSON lines or CSV)"
TRACE_FIELDS = ("response", "answer_gt", "annotation_gt", "reward_contract", "image_size", "point_half_life_px")
TRACE_OPTIONS = ("mode", "formula", "answer_weight", "annotation_weight", "format_weight")
ROW_PREFIX = "Selected row: "


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _scorer_controls(prefix: str, default: str) -> tuple[str, bool, float, str]:
    names = list(scorer_names())
    c1, c2 = st.columns([2, 1])
    scorer = c1.selectbox(
        "Scorer", names, index=names.index(default) if default in names else 0, key=f"{prefix}_scorer",
        format_func=lambda n: f"{n} — {SCORER_INFO[n].summary}",
    )
    normalise, tolerance, reading = True, DEFAULT_TOLERANCE, DEFAULT_READING
    if "normalise" in SCORER_INFO[scorer].options:
        normalise = c2.checkbox("normalise", value=True, key=f"{prefix}_normalise",
                                help="case-fold, collapse white space, strip . ! ? \" ' at the ends")
    if "tolerance" in SCORER_INFO[scorer].options:
        tolerance = c2.number_input("tolerance (relative)", min_value=0.0, value=DEFAULT_TOLERANCE, step=0.001,
                                    format="%.4f", key=f"{prefix}_tolerance")
    if "reading" in SCORER_INFO[scorer].options:
        reading = c2.selectbox("number reading", READINGS, key=f"{prefix}_reading",
                               format_func=playground.READING_LABELS.__getitem__,
                               help="how a number is read; the default matches agentdescent.rewards 0.7.0")
    return scorer, normalise, float(tolerance), reading


# --------------------------------------------------------------------------- simple scorers


def simple_playground() -> None:
    defaults = playground.PlaygroundDefaults()
    scorer, normalise, tolerance, reading = _scorer_controls("pg", defaults.scorer)
    c1, c2 = st.columns(2)
    output = c1.text_area("Output (the model's text)", value=defaults.output, height=140, key="pg_output")
    gold = c2.text_area("Gold", value=defaults.gold, height=140, key="pg_gold")
    threshold = float(ctx.options["solved_threshold"])
    view = playground.run_simple(
        scorer, gold, output, normalise=normalise, tolerance=tolerance, reading=reading, solved_threshold=threshold
    )
    if view.error:
        st.error("This gold/output pair cannot be scored:")
        st.text(view.error)
        return
    m1, m2 = st.columns(2)
    m1.metric("Score", f"{view.score:g}")
    m2.metric(f"Solved (score ≥ {threshold:g})", "yes" if view.solved else "no")
    st.caption("Why")
    st.code(view.reason, language=None, wrap_lines=True)
    if view.reading:
        st.caption(f"Number reading: {view.reading}")
    if view.tolerance_test:
        st.caption("Tolerance test")
        st.code(view.tolerance_test, language=None)
    for title, block in view.blocks:
        st.caption(title)
        st.code(block, language=None)
    if view.output_numbers or view.gold_numbers:
        n1, n2 = st.columns(2)
        n1.caption("Numbers read in the output")
        with n1:
            show_table(list(view.output_numbers), hide_index=True, key="pg_out_numbers")
        n2.caption("Numbers read in the gold")
        with n2:
            show_table(list(view.gold_numbers), hide_index=True, key="pg_gold_numbers")


# --------------------------------------------------------------------------- batch


def batch_playground() -> None:
    loaded = playground.simple_row_ids(ctx.table)
    sources = ([f"{SRC_TABLE} ({len(loaded):,})"] if len(loaded) else []) + [SRC_PASTE]
    source = st.radio("Rows", sources, horizontal=True, key="pg_batch_source")
    default_scorer = "last_number"
    if source.startswith(SRC_TABLE):
        rows = playground.simple_rows(ctx.table, ctx.run.with_text, limit=playground.TABLE_ROWS_MAX)
        if len(loaded) > len(rows):
            st.caption(f"Scoring the first {len(rows):,} of them.")
        used = ctx.table.loc[rows.index, "scorer"].astype(str).unique().tolist()
        if len(used) == 1:
            default_scorer = used[0]
    else:
        text = st.text_area("Rows: JSON lines with gold and output, or CSV with a header", value=playground.batch_example(),
                            height=160, key="pg_batch_text")
        rows, problem = playground.parse_batch_text(text)
        if problem:
            st.error("These rows cannot be read:")
            st.text(problem)
            return
    scorer, normalise, tolerance, reading = _scorer_controls("pg_batch", default_scorer)
    threshold = st.number_input("solved_threshold", min_value=0.0, max_value=1.0,
                                value=float(ctx.options["solved_threshold"]), step=0.001, format="%.3f",
                                key="pg_batch_threshold")
    result = playground.run_batch(rows, scorer, normalise=normalise, tolerance=tolerance, reading=reading,
                                  solved_threshold=threshold)
    if result.error:
        st.error("The batch cannot be scored:")
        st.text(result.error)
        return
    c = st.columns(4)
    c[0].metric("Rows", f"{result.rows:,}")
    c[1].metric(f"Solve rate (≥ {threshold:g})", "—" if result.solve_rate is None else f"{100 * result.solve_rate:.1f}%")
    c[2].metric("Mean score", "—" if result.mean_score is None else f"{result.mean_score:.3f}")
    c[3].metric("Rows that could not be scored", f"{result.failed:,}")
    show_table(result.frame, key="pg_batch_table")


# --------------------------------------------------------------------------- trace scorer


def _fill(inputs: playground.TraceInputs) -> None:
    """Put ``inputs`` into the trace playground's widgets (before they are drawn)."""
    for name in TRACE_FIELDS + TRACE_OPTIONS:
        st.session_state[f"pg_t_{name}"] = getattr(inputs, name)
    st.session_state["pg_t_row_id"] = inputs.row_id


def _prefill_choices() -> list[str]:
    choices = []
    row_id = selected_row()
    if row_id is not None and row_id in ctx.table.index and str(ctx.table.loc[row_id, "scorer"]) == "trace":
        choices.append(f"{ROW_PREFIX}{row_id}")
    return choices + list(playground.EXAMPLES)


def _load_choice() -> None:
    choice = st.session_state.get("pg_t_choice")
    if choice is None:
        return
    if choice.startswith(ROW_PREFIX):
        row_id = choice[len(ROW_PREFIX):]
        inputs, problem = playground.inputs_from_row(ctx.row(row_id), row_id)
        st.session_state["pg_t_problem"] = problem
        if inputs is not None:
            _fill(inputs)
        return
    st.session_state["pg_t_problem"] = ""
    _fill(playground.EXAMPLES[choice])


def trace_playground() -> None:
    choices = _prefill_choices()
    row_id = selected_row()
    arrived = row_id is not None and st.session_state.get("pg_t_seen_row") != row_id and choices[0].startswith(ROW_PREFIX)
    if arrived or "pg_t_response" not in st.session_state or st.session_state.get("pg_t_choice") not in choices:
        st.session_state["pg_t_choice"] = choices[0]
        _load_choice()
    st.session_state["pg_t_seen_row"] = row_id
    c1, c2 = st.columns([3, 1])
    c1.selectbox("Pre-fill from", choices, key="pg_t_choice", on_change=_load_choice)
    c2.button("Reload", key="pg_t_reload", on_click=_load_choice, help="put the chosen row or example back")
    if st.session_state.get("pg_t_problem"):
        st.text(st.session_state["pg_t_problem"])

    st.text_area("Response", height=180, key="pg_t_response")
    c1, c2, c3 = st.columns(3)
    c1.text_area("answer_gt (JSON)", height=100, key="pg_t_answer_gt")
    c2.text_area("annotation_gt (JSON, empty for none)", height=100, key="pg_t_annotation_gt")
    c3.text_area("reward_contract (JSON)", height=100, key="pg_t_reward_contract")
    o = st.columns(7)
    o[0].selectbox("mode", (MODE_ANSWER_AND_ANNOTATION, MODE_ANSWER), key="pg_t_mode")
    o[1].selectbox("formula", (FORMULA_GATED, FORMULA_ADDITIVE), key="pg_t_formula")
    o[2].number_input("answer_weight", min_value=0.0, step=0.05, key="pg_t_answer_weight")
    o[3].number_input("annotation_weight", min_value=0.0, step=0.05, key="pg_t_annotation_weight")
    o[4].number_input("format_weight", min_value=0.0, max_value=1.0, step=0.05, key="pg_t_format_weight")
    o[5].text_input("image size (W,H)", key="pg_t_image_size")
    o[6].text_input("half-life px (empty: auto)", key="pg_t_point_half_life_px")

    inputs = playground.TraceInputs(
        **{name: st.session_state[f"pg_t_{name}"] for name in TRACE_FIELDS + TRACE_OPTIONS},
        row_id=st.session_state.get("pg_t_row_id"),
    )
    evaluation, problem = playground.run_trace(inputs)
    if evaluation is None:
        st.error("These inputs cannot be scored:")
        st.text(problem)
        return

    left, right = st.columns([3, 2])
    with right:
        st.subheader("Result")
        st.text(explain_view.options_line(evaluation))
        show_table(explain_view.component_table(evaluation), hide_index=True, key="pg_t_components",
               column_config={"why (for a zero)": None})  # the reasons follow in full, one line each
        for row in explain_view.component_rows(evaluation):
            if row.reason:
                st.text(f"{row.component}: {row.reason}")
        show_table(explain_view.answer_view(evaluation).rows(), hide_index=True, key="pg_t_answer")
        response = explain_view.response_view(evaluation)
        st.text(response.summary)
        if response.break_context:
            st.caption(f"Format broke at character {response.break_at}:")
            st.code(response.break_context, language=None)
        for piece in response.pieces:
            st.caption(piece.title)
            st.code(explain_view.clip_middle(piece.text) or " ", language=None, wrap_lines=True)
        pairs = explain_view.pair_rows(evaluation)
        if pairs:
            show_table(pairs, hide_index=True, key="pg_t_pairs")
        with st.expander("Flat result (as logged for training)"):
            show_table(explain_view.flat_rows(evaluation), hide_index=True, key="pg_t_flat")
    with left:
        st.subheader("Overlay")
        image = None
        if inputs.row_id is not None and inputs.row_id in ctx.table.index:
            image, warning = ctx.load_image(inputs.row_id)
            if warning:
                st.text(f"Image: {warning}")
        columns = st.columns(4)
        layers = frozenset(
            layer
            for i, layer in enumerate(overlay.LAYERS)
            if columns[i % 4].checkbox(overlay.LAYER_TITLES[layer], value=True, key=f"pg_t_layer_{layer}")
        )
        model = overlay.build_overlay(evaluation, overlay.source_size(image))
        st.plotly_chart(overlay.plotly_figure(model, image, layers, column_width=480), config=overlay.PLOTLY_CONFIG,
                        key="pg_t_plot", width="stretch")
        st.download_button("Download overlay (PNG)", functools.partial(overlay.render_png, model, image, layers), file_name="playground_overlay.png",
                           mime="image/png", key="pg_t_png")
        for note in model.notes:
            st.text(f"Note: {note}")


def main() -> None:
    st.title("Playground")
    simple, batch, trace = st.tabs(["Simple scorers", "Batch (simple scorers)", "Trace scorer"])
    for tab, body, what in (
        (simple, simple_playground, "run the simple scorer"),
        (batch, batch_playground, "run the batch"),
        (trace, trace_playground, "run the trace scorer"),
    ):
        with tab:
            try:
                body()
            except Exception as exc:  # a friendly message, never a traceback
                _friendly(what, exc)


main()
