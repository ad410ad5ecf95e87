"""Gallery: sweep a whole run by eye -- overlay thumbnails, sorted by any metric, paged.

Thin page: ordering, thumbnails, their cache and the links live in :mod:`dashboard.gallery`, the
filters are the Inspector's (:mod:`dashboard.filter_panel`). Data under a tile is shown with
``st.caption`` of escaped text; links come from ``st.page_link`` and ``st.image(link=)``.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from dashboard.state import bootstrap, options_note, plain, sync_widget

ctx = bootstrap("Gallery")

from dashboard import auth, filter_panel, inspector, links, numbers, tuning, url_state  # noqa: E402
from dashboard import verdicts as vd  # noqa: E402
from dashboard.gallery import cache, ordering, render, suspects, tiles, view  # noqa: E402
from dashboard.gallery.patches import FULL_SORT_ROWS  # noqa: E402
from dashboard.inspector_extras import K_REVIEWER, K_REVIEWER_W, render_store_status, verdict_store  # noqa: E402

log = logging.getLogger("rolloutscope.dashboard.gallery")

K_MODE, K_SORT, K_ORDER, K_PAGE = "gal_mode", "gal_sort", "gal_order", "gal_page"
K_PER_PAGE, K_TILE, K_SUSPECTS = "gal_per_page", "gal_tile", "gal_suspects"
K_SELECTED, K_OUTCOME, K_NOTES, K_SHOWN = "gal_selected", "gal_outcome", "gal_link_notes", "gal_shown"
TILE_COLOURS = {tiles.BADGE_FORMAT: "orange", tiles.BADGE_SUSPECT: "violet"}
#: The overlay's styles in one short line (the Inspector's legend says it in full).
LEGEND = ("ground truth: green, solid · missed: purple, dotted · prediction: blue, dashed · "
          "extra: vermillion, dash-dot, crossed · matched pair: orange line")


def _friendly(what: str, exc: Exception) -> None:
    log.exception("%s failed", what)
    st.error(f"Could not {what}.")
    st.text(f"{type(exc).__name__}: {exc}")


def _keep(store: str, widget: str):
    def callback() -> None:
        st.session_state[store] = st.session_state.get(widget)
        if store != K_PAGE:
            st.session_state[K_PAGE] = 1  # another order or size: back to the first page

    return callback


def _go_to(page: int) -> None:
    st.session_state[K_PAGE] = max(1, int(page))


# --------------------------------------------------------------------------- the view and its link


def apply_link(table, choices, bounds, sorts) -> None:
    """A link opened: its view and filters become the page's."""
    params = url_state.incoming(view.LINK_PAGE)
    if params is None:
        return
    values, notes = links.decode(params, view.gallery_fields(choices, bounds, sorts))
    filter_panel.apply_link_values(values, choices, bounds)
    st.session_state[K_MODE] = values["mode"]
    st.session_state[K_SORT] = values["sort"]
    st.session_state[K_ORDER] = values["order"]
    st.session_state[K_PAGE] = int(values["page"])
    st.session_state[K_PER_PAGE] = int(values["per_page"])
    st.session_state[K_NOTES] = notes


def controls(sorts: list[str]) -> tiles.GalleryView:
    """Mode, sort, order, tiles per page and tile size; each kept in the session."""
    mode = st.session_state.get(K_MODE, ordering.MODE_ROWS)
    offered = [s for s in sorts if s != ordering.OBJECT_SIMILARITY or mode == ordering.MODE_PATCHES]
    defaults = {K_MODE: ordering.MODE_ROWS, K_SORT: ordering.default_sort(offered), K_ORDER: ordering.ASC,
                K_PER_PAGE: ordering.DEFAULT_PER_PAGE, K_TILE: render.DEFAULT_TILE_SIZE}
    for key, default in defaults.items():
        st.session_state.setdefault(key, default)
    if st.session_state[K_SORT] not in offered:
        st.session_state[K_SORT] = defaults[K_SORT]
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):  # wraps, never cuts a label
        sync_widget("gal_mode_w", st.session_state[K_MODE])
        st.segmented_control("One tile per", ordering.MODES, format_func=lambda m: ordering.MODE_TITLES[m],
                             key="gal_mode_w", on_change=_keep(K_MODE, "gal_mode_w"), required=True)
        sync_widget("gal_sort_w", st.session_state[K_SORT])
        st.selectbox("Sort by", offered, format_func=ordering.sort_title, key="gal_sort_w", width=250,
                     on_change=_keep(K_SORT, "gal_sort_w"), help="Any numeric column; the link names the column.")
        sync_widget("gal_order_w", st.session_state[K_ORDER])
        st.segmented_control("Order", ordering.ORDERS, format_func=lambda o: "↑" if o == ordering.ASC else "↓",
                             key="gal_order_w", on_change=_keep(K_ORDER, "gal_order_w"), required=True,
                             help="↑ lowest first (ascending), ↓ highest first (descending)")
        sync_widget("gal_per_page_w", st.session_state[K_PER_PAGE])
        st.selectbox("Per page", ordering.PER_PAGE_CHOICES, key="gal_per_page_w", width=90,
                     on_change=_keep(K_PER_PAGE, "gal_per_page_w"))
        sync_widget("gal_tile_w", st.session_state[K_TILE])
        st.select_slider("Tile size", list(render.TILE_SIZES), key="gal_tile_w", width=120,
                         on_change=_keep(K_TILE, "gal_tile_w"))
    return tiles.GalleryView(mode=st.session_state[K_MODE], sort=st.session_state[K_SORT],
                             descending=st.session_state[K_ORDER] == ordering.DESC,
                             page=int(st.session_state.get(K_PAGE, 1)), per_page=int(st.session_state[K_PER_PAGE]),
                             tile_size=st.session_state[K_TILE])


def computed_columns(table, gallery_view) -> dict:
    """The GT-suspect confidence when it is on (small runs, the toggle, or the sort asks for it)."""
    wanted = gallery_view.sort == ordering.SUSPECT_CONFIDENCE
    if len(table) > suspects.AUTO_ROWS:
        sync_widget("gal_suspects_w", bool(st.session_state.get(K_SUSPECTS, False)))
        st.toggle("Look for ground-truth suspects (badges; runs the Suspects page's rule over the run)",
                  key="gal_suspects_w", on_change=_keep(K_SUSPECTS, "gal_suspects_w"))
        wanted = wanted or bool(st.session_state.get(K_SUSPECTS))
    elif suspects.held(ctx.run) is None:
        wanted = True
    if not wanted and suspects.held(ctx.run) is None:
        return {}
    try:
        with st.spinner("Looking for ground-truth suspects…"):
            return {ordering.SUSPECT_CONFIDENCE: suspects.confidence_per_row(ctx.run)}
    except Exception as exc:  # the gallery without the badge, never without tiles
        _friendly("look for ground-truth suspects", exc)
        return {}


# --------------------------------------------------------------------------- selection and verdicts


def _tile_key(tile: tiles.Tile) -> str:
    text = f"{tile.kind}|{tile.row_id}|{tile.title}"
    return "gal_pick_" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def _toggle(key: str, rows: tuple) -> None:
    chosen = st.session_state.setdefault(K_SELECTED, {})
    if st.session_state.get(key):
        chosen.update(dict.fromkeys(rows))
    else:
        for row in rows:
            chosen.pop(row, None)


def _select_page(shown: list) -> None:
    chosen = st.session_state.setdefault(K_SELECTED, {})
    for rows in shown:
        chosen.update(dict.fromkeys(rows))


def _clear_selection() -> None:
    st.session_state[K_SELECTED] = {}


def _save(store: vd.VerdictStore, verdict: str | None) -> None:
    """Form callback: one verdict for every selected row (one transaction)."""
    chosen = list(st.session_state.get(K_SELECTED, {}))
    verdict = verdict or st.session_state.get("gal_verdict")
    typed = (st.session_state.get(K_REVIEWER_W) or "").strip()
    st.session_state[K_REVIEWER] = typed
    if not chosen:
        st.session_state[K_OUTCOME] = ("warning", "Select tiles first; nothing was saved.")
        return
    if verdict is None:
        st.session_state[K_OUTCOME] = ("warning", "Pick a verdict first; nothing was saved.")
        return
    try:
        rows = ctx.run.with_text([r for r in chosen if r in ctx.table.index])
        saved = store.set_verdicts(((r, rows.loc[r]) for r in rows.index), verdict,
                                   st.session_state.get("gal_note", ""), auth.verdict_reviewer(typed))
    except vd.VerdictStoreError as exc:
        st.session_state[K_OUTCOME] = ("warning", exc.message)
        return
    except (ValueError, PermissionError) as exc:
        st.session_state[K_OUTCOME] = ("error", str(exc))
        return
    except Exception as exc:  # never a traceback in the browser
        log.exception("saving gallery verdicts failed")
        st.session_state[K_OUTCOME] = ("error", f"Could not save the verdicts: {type(exc).__name__}: {exc}")
        return
    st.session_state[K_SELECTED] = {}
    st.session_state["gal_note"] = ""
    label = vd.VERDICT_LABELS.get(verdict, verdict)
    st.session_state[K_OUTCOME] = ("success", f"Saved “{label}” for {numbers.plural(len(saved), 'row')}.")


def review_panel(shown: list) -> None:
    """Select tiles, then record one verdict (or the GT-error tag) for all of them."""
    chosen = st.session_state.get(K_SELECTED, {})
    outcome = st.session_state.pop(K_OUTCOME, None)
    if outcome is not None:
        getattr(st, outcome[0])(plain(outcome[1]))
    with st.popover(f"Review selected ({numbers.plural(len(chosen), 'row')})", icon=":material/rate_review:"):
        with st.container(horizontal=True):
            st.button("Select every tile on this page", key="gal_select_page", on_click=_select_page, args=(shown,))
            st.button("Clear the selection", key="gal_clear", on_click=_clear_selection, disabled=not chosen)
        try:
            store = verdict_store(ctx)
        except Exception as exc:
            _friendly("open the verdict store", exc)
            return
        render_store_status(store, "gal_store")
        with st.form("gal_review", border=False):
            st.radio("Verdict", vd.VERDICTS, index=None, format_func=lambda v: vd.VERDICT_LABELS[v], horizontal=True,
                     key="gal_verdict")
            st.text_input("Note (optional)", key="gal_note", max_chars=vd.NOTE_LIMIT)
            signed_in = auth.signed_in_user()
            if signed_in:
                st.text(f"Reviewer: {signed_in} (signed in)")
            else:
                st.session_state.setdefault(K_REVIEWER_W, st.session_state.get(K_REVIEWER, ""))
                st.text_input("Reviewer", key=K_REVIEWER_W, max_chars=vd.REVIEWER_LIMIT)
            with st.container(horizontal=True):
                st.form_submit_button(f"Save the verdict for {numbers.plural(len(chosen), 'row')}", type="primary",
                                      on_click=_save, args=(store, None))
                st.form_submit_button("Tag them as ground-truth errors", on_click=_save, args=(store, vd.GT_WRONG))


# --------------------------------------------------------------------------- tiles


def _number_line(tile: tiles.Tile, sort: str) -> str:
    """The tile's numbers but the sort value (written first, in bold)."""
    return " · ".join(f"{name} {numbers.number(value)}" for name, value in tile.numbers
                      if name not in (sort, f"mean {sort}"))


def _open_link(params: links.Params) -> None:
    """The tile's link to its row in the Inspector (this tab; the picture opens a new one)."""
    try:
        st.page_link(view.INSPECTOR_PAGE, label="Inspect", icon=":material/search:", query_params=params)
    except StreamlitPageNotFoundError:  # a page run on its own (tests): the same address as a link
        st.markdown(f"[Inspect](Inspector{links.query_string(params)})")


def draw_tile(tile: tiles.Tile, gallery_view: tiles.GalleryView, spec, link_fields) -> None:
    params = view.inspector_params(tile.row_id, tile.run, gallery_view, spec, link_fields)
    with st.container(border=True, width=gallery_view.side + 26, gap="small"):
        st.image(tile.picture, width="stretch", output_format="JPEG", link="Inspector" + links.query_string(params))
        if tile.kind == "patch":
            head = tile.title
        else:
            name = "IoU / similarity" if gallery_view.sort == ordering.OBJECT_SIMILARITY else gallery_view.sort
            head = f"{'mean ' if tile.kind == 'image' else ''}{name} {numbers.number(tile.sort_value)}"
        line = _number_line(tile, gallery_view.sort)
        st.caption(f"**{plain(head)}**" + (f" · {plain(line)}" if line else ""))
        if tile.badges:
            with st.container(horizontal=True, gap="small"):
                for badge in tile.badges:
                    colour = next((c for k, c in TILE_COLOURS.items() if badge.startswith(k)), "blue")
                    st.badge(plain(badge), color=colour)
        if tile.note:
            st.caption(plain(tile.note))
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            key = _tile_key(tile)
            chosen = st.session_state.get(K_SELECTED, {})
            st.session_state[key] = all(r in chosen for r in tile.rows)
            st.checkbox("Select", key=key, on_change=_toggle, args=(key, tile.rows))
            _open_link(params)
        st.caption(plain(tile.row_id if tile.kind == "patch" else tile.title))


def pager(page: tiles.GalleryPage, where: str, shown: list | None = None) -> None:
    """Previous / next, where the page sits, the page box and (at the top) the review popover."""
    last = page.pages if page.complete else page.pages + 1
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button("← Previous", key=f"gal_prev_{where}", on_click=_go_to, args=(page.page - 1,),
                  disabled=page.page <= 1)
        st.button("Next →", key=f"gal_next_{where}", on_click=_go_to, args=(page.page + 1,),
                  disabled=page.page >= last)
        text = ordering.describe_page(page.page, page.per_page, page.count, page.noun)
        st.text(text + ("" if page.complete else " so far"))
        if shown is not None:
            sync_widget("gal_page_w", page.page)
            st.number_input("Page", min_value=1, max_value=max(last, 1), step=1, key="gal_page_w",
                            on_change=_keep(K_PAGE, "gal_page_w"), width=130, label_visibility="collapsed")
            review_panel(shown)


def main() -> None:
    scores = ctx.scores()
    table = inspector.with_scores(ctx.table, scores)
    choices, bounds = filter_panel.summaries(table)
    sorts = view.sort_choices(table)
    apply_link(table, choices, bounds, sorts)
    head, link_slot = st.columns([3, 1], vertical_alignment="bottom")
    head.title("Gallery")
    options_note(ctx)
    url_state.show_notes(st.session_state.pop(K_NOTES, []))
    spec = filter_panel.panel(table, choices, bounds, expanded=False)
    if spec.active:
        st.caption(plain(f"Filtered: {spec.describe()}"))
    filter_key = filter_panel.filter_key(spec)
    if st.session_state.get(K_SHOWN, filter_key) != filter_key:
        st.session_state[K_PAGE] = 1  # other rows: from their first page
    st.session_state[K_SHOWN] = filter_key
    gallery_view = controls(sorts)
    computed = computed_columns(table, gallery_view)
    if gallery_view.sort == ordering.SUSPECT_CONFIDENCE and not computed:
        st.info("The GT suspect confidence is not available; sorting by the annotation reward instead.")
        gallery_view = replace(gallery_view, sort=ordering.default_sort(sorts))
    mask = inspector.filter_mask(table, spec, ctx.run.search) if spec.active else None
    scored = {k: v for k, v in ctx.scored_options.items() if k != "solved_threshold"}
    overrides = {} if {k: v for k, v in ctx.options.items() if k != "solved_threshold"} == scored \
        else tuning.scorer_kwargs(ctx.options)
    store = verdict_store(ctx)
    inputs = tiles.PageInputs(run=ctx.run, table=table, scores=scores, mask=mask, filter_key=filter_key,
                              cache=cache.cache_for(ctx.run.source), overrides=overrides, computed=computed,
                              verdicts=store.latest_for)
    if gallery_view.mode == ordering.MODE_PATCHES and gallery_view.sort == ordering.OBJECT_SIMILARITY:
        rows = len(table) if mask is None else int(mask.sum())
        if rows > FULL_SORT_ROWS:
            st.info(f"Sorting every object by its own IoU needs every row drawn: narrow the filters to at most "
                    f"{FULL_SORT_ROWS:,} rows ({rows:,} now). Objects are shown by their row's annotation reward.")
            gallery_view = replace(gallery_view, sort="annotation_reward")
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        bar = bar or st.progress(0.0)
        bar.progress(done / max(total, 1), text=f"Finding the objects of {total:,} rows… {done:,}")

    page = tiles.build_page(inputs, gallery_view, progress)
    if bar is not None:
        bar.empty()
    st.session_state[K_PAGE] = page.page
    shown_view = replace(gallery_view, page=page.page)
    params = view.gallery_params(shown_view, spec, choices, bounds, sorts)
    url_state.publish(view.LINK_PAGE, params)
    url_state.link_box(params, where=link_slot)
    for note in page.notes:
        st.info(plain(note))
    if not page.tiles:
        st.info("No rows match these filters." if page.count == 0 else "This page is empty.")
        return
    pager(page, "top", [t.rows for t in page.tiles])
    st.caption(LEGEND)
    link_fields = view.inspector_fields(choices, bounds, sorts)
    with st.container(horizontal=True, gap="small"):
        for tile in page.tiles:
            draw_tile(tile, shown_view, spec, link_fields)
    pager(page, "bottom")
    st.caption(f"{page.cached} of {len(page.tiles)} thumbnails from the cache · {cache.max_bytes_from_env() / 1e6:,.0f} "
               f"MB at most are kept ({cache.ENV})")


try:
    main()
except Exception as exc:  # a friendly message, never a traceback
    _friendly("show the gallery", exc)
