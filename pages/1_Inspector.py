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
from dataclasses import replace

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from dashboard.state import bootstrap, options_note, plain, select_row, selected_row, show_table

ctx = bootstrap("Inspector")

from dashboard import explain_view, filter_panel, inspector, links, overlay, playground, tuning, url_state  # noqa: E402
from dashboard.correction_view import render_correction_panel  # noqa: E402
from dashboard.gallery import ordering as gallery_ordering  # noqa: E402
from dashboard.gallery import suspects as gallery_suspects  # noqa: E402
from dashboard.gallery import view as gallery_link  # noqa: E402
from dashboard.gallery.tiles import GalleryView  # noqa: E402
from dashboard.inspector_extras import render_frame_diagnosis, render_verdict_form  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.inspector")

#: ``view`` of older links: the second opened the gallery now on its own page.
VIEW_GALLERY = gallery_link.INSPECTOR_VIEWS[1]
K_GALLERY = "insp_gallery_view"  # the gallery this Inspector was opened from (its order is walked)
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


def _own_order() -> None:
    st.session_state.pop(K_GALLERY, None)


def _layer_toggles() -> frozenset[str]:
    st.caption("Layers")
    chosen = set()
    with st.container(horizontal=True, gap="medium"):  # each label at its full width, wrapping as needed
        for layer in overlay.LAYERS:
            if st.checkbox(overlay.LAYER_TITLES[layer], value=True, key=f"insp_layer_{layer}", width="content"):
                chosen.add(layer)
    return frozenset(chosen)


# --------------------------------------------------------------------------- filters and links

K_LINK_NOTES = "insp_link_notes"
K_OLD_GALLERY = "insp_old_gallery_link"


def link_fields(choices, bounds, sorts):
    return gallery_link.inspector_fields(choices, bounds, sorts)


def apply_link(table, choices, bounds, sorts) -> None:
    """A link opened (fresh browser, pasted URL, a gallery tile): its row, filters, order -- the
    gallery's when it came from one -- become the page's."""
    params = url_state.incoming(LINK_PAGE)
    if params is None:
        return
    values, notes = links.decode(params, link_fields(choices, bounds, sorts))
    filter_panel.apply_link_values(values, choices, bounds)
    st.session_state["insp_sort"] = values["sort"]
    if gallery_link.came_from_gallery(values):
        st.session_state[K_GALLERY] = gallery_link.view_of(values, links.GALLERY_PREFIX)
    else:
        st.session_state.pop(K_GALLERY, None)
    st.session_state[K_OLD_GALLERY] = values["view"] == VIEW_GALLERY
    row, note = links.resolve_row(table, values["row"], values["run"])
    if note:
        notes.append(note)
    select_row(row)  # None: the default row of the filtered table
    st.session_state[K_LINK_NOTES] = notes


def current_link(current, spec, sort, choices, bounds, sorts) -> links.Params:
    values = {"row": current, "run": links.row_run(ctx.table, current) if current is not None else None,
              "sort": sort, **filter_panel.link_values(spec)}
    gallery = st.session_state.get(K_GALLERY)
    if gallery is not None:
        values.update({gallery_link.FROM: gallery_link.FROM_GALLERY,
                       **gallery_link.values_of(gallery, links.GALLERY_PREFIX)})
    return links.encode(values, link_fields(choices, bounds, sorts))


def filters_panel(table, choices, bounds):
    """The filter widgets (shared with the Gallery) and the order; returns the filtered, sorted
    table -- in the gallery's order when the page was opened from a gallery tile -- and the filter."""
    spec = filter_panel.panel(table, choices, bounds)
    gallery = st.session_state.get(K_GALLERY)
    if gallery is None:
        sort = st.selectbox("Order", list(inspector.SORTS), key="insp_sort", width=320)
        return inspector.sort_rows(inspector.apply_filter(table, spec, ctx.run.search), sort), (spec, sort), None
    sort = st.session_state.get("insp_sort", next(iter(inspector.SORTS)))
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(plain(f"Order: the gallery's -- {gallery_ordering.sort_title(gallery.sort)}, "
                         f"{'highest' if gallery.descending else 'lowest'} first, one tile per "
                         f"{gallery_ordering.MODE_TITLES[gallery.mode]}."))
        st.button("Use the Inspector's own order", key="insp_own_order", on_click=_own_order)
    mask = inspector.filter_mask(table, spec, ctx.run.search) if spec.active else None
    computed = {}
    if gallery.sort == gallery_ordering.SUSPECT_CONFIDENCE:
        computed = {gallery.sort: gallery_suspects.confidence_per_row(ctx.run)}
    rows, order = gallery_link.ordered_rows(table, mask, filter_panel.filter_key(spec), gallery, computed)
    return rows, (spec, sort), (gallery, order)


def back_to_gallery(table, current, gallery_order, spec, choices, bounds, sorts) -> None:
    """The link back to the gallery's page holding this row."""
    gallery, order = gallery_order
    page = gallery_link.page_holding(table, order, gallery, current)
    shown = replace(gallery, page=page)
    params = gallery_link.gallery_params(shown, spec, choices, bounds, sorts)
    try:
        st.page_link(gallery_link.GALLERY_PAGE, label=f"Back to the gallery, page {page:,}",
                     icon=":material/grid_view:", query_params=params)
    except StreamlitPageNotFoundError:  # a page run on its own (tests)
        st.markdown(f"[Back to the gallery, page {page:,}](Gallery{links.query_string(params)})")


def old_gallery_link(spec, choices, bounds, sorts) -> None:
    """An older link to the Inspector's gallery view: the gallery is a page of its own now."""
    shown = GalleryView(sort="annotation_reward")
    params = gallery_link.gallery_params(shown, spec, choices, bounds, sorts)
    st.info("The gallery of the worst annotation rewards is now the Gallery page: every row, any sort, paged.")
    try:
        st.page_link(gallery_link.GALLERY_PAGE, label="Open the Gallery", icon=":material/grid_view:",
                     query_params=params)
    except StreamlitPageNotFoundError:
        st.markdown(f"[Open the Gallery](Gallery{links.query_string(params)})")


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
    choices, bounds = filter_panel.summaries(table)
    sorts = gallery_link.sort_choices(table)
    apply_link(table, choices, bounds, sorts)
    head, link_slot = st.columns([3, 1], vertical_alignment="bottom")
    head.title("Inspector")
    options_note(ctx)
    url_state.show_notes(st.session_state.pop(K_LINK_NOTES, []))
    filtered, filter_key, gallery_order = filters_panel(table, choices, bounds)
    if st.session_state.pop(K_OLD_GALLERY, False):
        old_gallery_link(filter_key[0], choices, bounds, sorts)
    st.session_state[K_ORDER] = filtered.index  # an index, not a list: a run may have a million rows
    current = table_and_navigation(filtered, filter_key) if len(filtered) else selected_row()
    params = current_link(current, *filter_key, choices, bounds, sorts)
    url_state.publish(LINK_PAGE, params)
    url_state.link_box(params, where=link_slot)
    if not len(filtered):
        st.info("No rows match these filters.")
        return
    if gallery_order is not None:
        back_to_gallery(table, current, gallery_order, filter_key[0], choices, bounds, sorts)
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
