"""Inspector: filter the scored rows, pick one, and see exactly why it scored what it did.

Thin page: filtering lives in :mod:`dashboard.inspector`, the overlay in
:mod:`dashboard.overlay`, the explanation view-model in
:mod:`dashboard.explain_view`. Response text is only ever shown with
``st.code`` / ``st.text`` / ``st.dataframe`` (never as Markdown or HTML).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re

import streamlit as st

from dashboard.state import bootstrap, options_note, select_row, selected_row, show_table

ctx = bootstrap("Inspector")

from dashboard import explain_view, inspector, links, numbers, overlay, playground, tuning, url_state  # noqa: E402
from dashboard.correction_view import render_correction_panel  # noqa: E402
from dashboard.inspector_extras import render_frame_diagnosis, render_verdict_form  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.inspector")

VIEW_INSPECT, VIEW_GALLERY = "Inspect one row", "Gallery of worst annotation rewards"
K_VIEW = "insp_view"
K_ORDER = "insp_order"
K_DISPLAY = "insp_display_ids"
K_POS = "insp_pos"
DISPLAY_LIMIT = 5000
PLAYGROUND_PAGE = "pages/6_Playground.py"
LINK_PAGE = "inspector"


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _explain(row_id):
    """The row's explanation under the current tuning options (one scorer call, cached)."""
    same = {k: v for k, v in ctx.options.items() if k != "solved_threshold"} == {
        k: v for k, v in ctx.scored_options.items() if k != "solved_threshold"
    }
    return ctx.explain(row_id) if same else ctx.explain(row_id, **tuning.scorer_kwargs(ctx.options))


def _go(row_id) -> None:
    if row_id is not None:
        select_row(row_id)


def _step(delta: int) -> None:
    _go(inspector.neighbour(st.session_state.get(K_ORDER, []), selected_row(), delta))


def _jump() -> None:
    order = st.session_state.get(K_ORDER, [])
    position = st.session_state.get(K_POS)
    if len(order) and position is not None:
        _go(order[min(max(int(position), 1), len(order)) - 1])


def _picked(table_key: str) -> None:
    state = st.session_state.get(table_key)
    rows = state.selection.rows if state is not None else []
    ids = st.session_state.get(K_DISPLAY, [])
    if rows and rows[0] < len(ids):
        _go(ids[rows[0]])


def _open_from_gallery(row_id) -> None:
    _go(row_id)
    st.session_state[K_VIEW] = VIEW_INSPECT


def _layer_toggles() -> frozenset[str]:
    st.caption("Layers")
    chosen = set()
    with st.container(horizontal=True, gap="medium"):  # each label at its full width, wrapping as needed
        for layer in overlay.LAYERS:
            if st.checkbox(overlay.LAYER_TITLES[layer], value=True, key=f"insp_layer_{layer}", width="content"):
                chosen.add(layer)
    return frozenset(chosen)


# --------------------------------------------------------------------------- filters and links

RANGE_COLUMNS = ("step", "score", "answer_reward", "annotation_reward", "format")
K_LINK_NOTES = "insp_link_notes"


def _full_range(column: str, lo: float, hi: float) -> tuple:
    return (int(lo), int(hi)) if column == "step" else (0.0, 1.0)


def _sliders(bounds) -> dict:
    """The range filters drawn as sliders (a column with a single value gets a caption instead)."""
    return {c: _full_range(c, lo, hi) for c, (lo, hi) in bounds.items() if lo != hi}


def link_fields(choices, bounds):
    return links.inspector_fields(choices, _sliders(bounds), list(inspector.SORTS), (VIEW_INSPECT, VIEW_GALLERY))


def apply_link(table, choices, bounds) -> None:
    """A link opened (fresh browser, pasted URL): its row, filters, order and view become the page's."""
    params = url_state.incoming(LINK_PAGE)
    if params is None:
        return
    values, notes = links.decode(params, link_fields(choices, bounds))
    for column, key in links.INSPECTOR_CATEGORY_KEYS.items():
        if column in choices:
            st.session_state[f"insp_f_{column}"] = list(values[key])
    st.session_state["insp_f_text"] = values["q"]
    for column, full in _sliders(bounds).items():
        chosen = values[column] or full
        st.session_state[f"insp_f_{column}"] = tuple(type(full[0])(v) for v in chosen)
    st.session_state["insp_sort"] = values["sort"]
    st.session_state[K_VIEW] = values["view"]
    row, note = links.resolve_row(table, values["row"], values["run"])
    if note:
        notes.append(note)
    select_row(row)  # None: the default row of the filtered table
    st.session_state[K_LINK_NOTES] = notes


def current_link(current, spec, sort, view, choices, bounds) -> links.Params:
    values = {"row": current, "run": links.row_run(ctx.table, current) if current is not None else None,
              "q": spec.text, "sort": sort, "view": view}
    for column, key in links.INSPECTOR_CATEGORY_KEYS.items():
        values[key] = getattr(spec, inspector.CATEGORY_FIELD_NAMES[column])
    for column, (lo, hi) in spec.ranges.items():
        values[column] = (lo, hi)
    return links.encode(values, link_fields(choices, bounds))


def filters_panel(table, choices, bounds):
    """The filter widgets; returns the filtered, sorted table and the filter."""
    with st.expander("Filters", expanded=True):
        columns = st.columns(4)
        chosen = {}
        for i, (column, label) in enumerate(inspector.CATEGORY_FILTERS.items()):
            if column in choices:
                chosen[column] = columns[i].multiselect(label, choices[column], key=f"insp_f_{column}")
        search = st.text_input(
            "Text search (response, task, prompt, recovered object, reasons, row id)", key="insp_f_text"
        )
        ranges = {}
        sliders = _sliders(bounds)
        columns = st.columns(max(len(bounds), 1))
        for i, (column, (lo, _hi)) in enumerate(bounds.items()):
            if column not in sliders:
                columns[i].caption(f"{column}: all {numbers.number(lo)}")
                continue
            full = sliders[column]
            key = f"insp_f_{column}"
            held = st.session_state.get(key)
            if not (isinstance(held, (tuple, list)) and len(held) == 2 and full[0] <= held[0] <= held[1] <= full[1]):
                st.session_state[key] = full  # first visit, or the data changed under a remembered range
            if column == "step":
                value = columns[i].slider("step", full[0], full[1], key=key)
            else:
                value = columns[i].slider(column, 0.0, 1.0, step=0.01, key=key)
            if tuple(value) != full:
                ranges[column] = (float(value[0]), float(value[1]))
        sort = st.selectbox("Order", list(inspector.SORTS), key="insp_sort")
    spec = inspector.InspectorFilter.of(chosen, ranges=ranges, text=search or "")
    return inspector.sort_rows(inspector.apply_filter(table, spec, ctx.run.search), sort), (spec, sort)


# --------------------------------------------------------------------------- gallery


def gallery(filtered) -> None:
    c1, c2 = st.columns([1, 3])
    n = c1.number_input("Rows", min_value=1, max_value=60, value=inspector.GALLERY_DEFAULT, key="insp_gallery_n")
    c2.caption("The filtered rows with the lowest annotation reward, overlaid (Open inspects one).")
    layers = _layer_toggles()
    worst = inspector.worst_rows(filtered, int(n))
    if not len(worst):
        st.info("No filtered row has an annotation reward.")
        return
    grid = st.columns(4)
    for i, row_id in enumerate(worst.index):
        with grid[i % 4]:
            try:
                evaluation = _explain(row_id)
                image, _ = ctx.load_image(row_id)
                model = overlay.build_overlay(evaluation, overlay.source_size(image))
                st.image(overlay.thumbnail(model, image, 360, layers))
                st.text(f"{row_id}\nannotation {evaluation.annotation_reward:.3f} · {evaluation.annotation_type}")
            except Exception as exc:  # one bad row must not break the gallery
                log.exception("gallery row %s failed", row_id)
                st.text(f"{row_id}\ncould not draw: {type(exc).__name__}: {exc}")
            st.button("Open", key=f"insp_gallery_open_{i}", on_click=_open_from_gallery, args=(row_id,))


# --------------------------------------------------------------------------- table and navigation


def table_and_navigation(filtered, filter_key):
    """The selectable table, previous/next and the position box; returns the current row id."""
    order = filtered.index
    current = selected_row()
    position = inspector.position_of(order, current) if current is not None else None
    if position is None:
        if current is not None:
            st.caption("The previously selected row is not in the filtered table; showing the worst annotation "
                       "reward among the filtered rows.")
        current = inspector.default_row(filtered)
        select_row(current)
        position = inspector.position_of(order, current)

    shown = inspector.table_view(filtered, DISPLAY_LIMIT)
    st.session_state[K_DISPLAY] = shown.index.tolist()
    table_key = "insp_table_" + hashlib.sha1(repr(filter_key).encode()).hexdigest()[:10]
    show_table(
        shown,
        column_config={"annotation_reason": st.column_config.TextColumn(width="large")},
        key=table_key,
        on_select=functools.partial(_picked, table_key),
        selection_mode="single-row",
        height=260,
    )
    if len(filtered) > DISPLAY_LIMIT:
        st.caption(f"Showing the first {DISPLAY_LIMIT:,} of {len(filtered):,} rows; previous/next walk them all.")

    st.session_state[K_POS] = position + 1
    nav = st.columns([1, 2, 1, 4])
    nav[0].button("← Previous", key="insp_prev", on_click=_step, args=(-1,), disabled=position == 0)
    nav[1].number_input(f"Row (1–{len(order)})", min_value=1, max_value=len(order), step=1, key=K_POS, on_change=_jump)
    nav[2].button("Next →", key="insp_next", on_click=_step, args=(1,), disabled=position == len(order) - 1)
    nav[3].text(f"{position + 1} of {len(order)}\n{inspector.row_caption(ctx.row(current), current)}")
    return current


# --------------------------------------------------------------------------- one row


def simple_row(row) -> None:
    st.subheader("Simple-scorer row")
    simple = playground.run_simple(
        str(row.get("scorer")), row.get("gold"), row.get("response"), solved_threshold=ctx.options["solved_threshold"]
    )
    if simple.error:
        st.error("The scorer could not score this row.")
        st.text(simple.error)
        return
    st.metric("score", f"{simple.score:g}")
    st.text(simple.reason)
    for title, block in simple.blocks:
        st.caption(title)
        st.code(block, language=None)
    if simple.tolerance_test:
        st.code(simple.tolerance_test, language=None)


def overlay_panel(current, evaluation) -> None:
    st.subheader("Overlay")
    image, warning = ctx.load_image(current)
    if warning:
        st.text(f"Image: {warning}" + ("" if image is not None else " — drawing on a blank canvas of the image size"))
    layers = _layer_toggles()
    try:
        model = overlay.build_overlay(evaluation, overlay.source_size(image))
        mode = st.radio(
            "Overlay view", ("Interactive (zoom and pan)", "Static picture"), horizontal=True, key="insp_overlay_mode"
        )
        if mode.startswith("Interactive"):
            figure = overlay.plotly_figure(model, image, layers, column_width=OVERLAY_WIDTH)
            st.plotly_chart(figure, config=overlay.PLOTLY_CONFIG, key="insp_plot", width="stretch")
        else:
            st.image(overlay.render_pil(model, image, layers, display_width=OVERLAY_WIDTH, legend=True))
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", str(current)).strip("_")[:80] or "row"
        st.download_button(
            "Download overlay (PNG)",
            functools.partial(overlay.render_png, model, image, layers),  # drawn and encoded on click
            file_name=f"overlay_{safe}.png",
            mime="image/png",
            key="insp_png",
        )
        st.caption(LEGEND)
        for note in model.notes:
            st.text(f"Note: {note}")
    except Exception as exc:
        _friendly("draw the overlay", exc)


def pairings_panel(evaluation) -> None:
    st.subheader("Pairings")
    pairs = explain_view.pair_rows(evaluation)
    if pairs:
        show_table(pairs, hide_index=True, key="insp_pairs")
    else:
        st.text("No pairings (the annotation was not scored).")
    show_table(explain_view.annotation_facts(evaluation), hide_index=True, key="insp_ann_facts")


def explanation_panel(evaluation) -> None:
    st.subheader("Rewards")
    st.text(explain_view.options_line(evaluation))
    show_table(explain_view.component_table(evaluation), hide_index=True, key="insp_components",
               column_config={"why (for a zero)": None})  # the reasons follow in full, one line each
    for row in explain_view.component_rows(evaluation):
        if row.reason:
            st.text(f"{row.component}: {row.reason}")
    st.subheader("Answer")
    show_table(explain_view.answer_view(evaluation).rows(), hide_index=True, key="insp_answer")
    st.subheader("Response")
    response = explain_view.response_view(evaluation)
    st.text(response.summary)
    if response.break_context:
        st.caption(
            f"Format broke at character {response.break_at} "
            f"(line {response.break_line}, column {response.break_column}):"
        )
        st.code(response.break_context, language=None)
        st.text(response.format_detail)
    for piece in response.pieces:
        st.caption(piece.title)
        st.code(explain_view.clip_middle(piece.text) or " ", language=None, wrap_lines=True)
    with st.expander("Flat result (as logged for training)"):
        show_table(explain_view.flat_rows(evaluation), hide_index=True, key="insp_flat")
    if st.button("Open in the trace playground", key="insp_to_playground"):
        try:
            st.switch_page(PLAYGROUND_PAGE)
        except st.errors.StreamlitAPIException:  # the page may be missing in a trimmed build
            st.info("The playground page is not available.")


LEGEND = overlay.legend_text() + " · [i]: sequence position (0-based, as in reasons)"
#: The overlay spans the page (screen pixels it is drawn for: the content width at 1280 px).
OVERLAY_WIDTH = 820


def main() -> None:
    table = inspector.with_scores(ctx.table, ctx.scores())
    choices = inspector.category_choices(table)
    bounds = inspector.numeric_bounds(table, RANGE_COLUMNS)
    apply_link(table, choices, bounds)
    head, link_slot = st.columns([3, 1], vertical_alignment="bottom")
    head.title("Inspector")
    options_note(ctx)
    url_state.show_notes(st.session_state.pop(K_LINK_NOTES, []))
    filtered, filter_key = filters_panel(table, choices, bounds)
    st.session_state[K_ORDER] = filtered.index  # an index, not a list: a run may have a million rows
    view = st.radio("View", (VIEW_INSPECT, VIEW_GALLERY), horizontal=True, key=K_VIEW, label_visibility="collapsed")
    current = table_and_navigation(filtered, filter_key) if len(filtered) and view == VIEW_INSPECT else selected_row()
    params = current_link(current, *filter_key, view, choices, bounds)
    url_state.publish(LINK_PAGE, params)
    url_state.link_box(params, where=link_slot)
    if not len(filtered):
        st.info("No rows match these filters.")
        return
    if view == VIEW_GALLERY:
        gallery(filtered)
        return
    row = ctx.row(current)
    if str(row.get("scorer")) != "trace":
        simple_row(row)
        return
    try:
        evaluation = _explain(current)
    except Exception as exc:
        _friendly("explain this row", exc)
        return
    overlay_panel(current, evaluation)
    left, right = st.columns([3, 2])
    with left:
        pairings_panel(evaluation)
        render_frame_diagnosis(ctx, current)
        render_correction_panel(ctx, current, evaluation)
    with right:
        render_verdict_form(ctx, current)
        explanation_panel(evaluation)


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    _friendly("show this row", exc)
