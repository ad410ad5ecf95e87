"""The gallery's view as link parameters, and the links between the Gallery and the Inspector (no Streamlit).

The Gallery's URL holds ``mode``, ``sort``, ``order``, ``page``, ``per_page`` and the Inspector's
filters. A tile links to ``/Inspector?row=<row id>&run=<its run>`` plus the same filters and
the gallery's view as ``from=gallery&gallery_sort=...``: opened in a new tab, that Inspector
walks the rows in the gallery's order with previous/next and links back to the gallery's page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import filter_panel, inspector, links
from ..filters import TableMemo
from . import ordering
from .tiles import GalleryView

GALLERY_PAGE = "pages/2_Gallery.py"
INSPECTOR_PAGE = "pages/1_Inspector.py"
LINK_PAGE = "gallery"
FROM = "from"
FROM_GALLERY = "gallery"
#: The Inspector's ``view`` of older links: its own page, or the gallery it used to hold (now this page).
INSPECTOR_VIEWS = ("Inspect one row", "Gallery of worst annotation rewards")
#: Pages a link may name before the gallery knows how many there are (then clamped).
ANY_PAGE = 10**9


def sort_choices(table: pd.DataFrame) -> list[str]:
    """Every sort a gallery (and so an Inspector opened from one) may name: the numeric columns
    and the computed values."""
    return ordering.sort_columns(table, (ordering.SUSPECT_CONFIDENCE, ordering.OBJECT_SIMILARITY))


def view_fields(sorts: Sequence[str], pages: int = ANY_PAGE, prefix: str = "") -> list[links.Field]:
    return links.gallery_view_fields(ordering.MODES, sorts, ordering.default_sort(sorts), ordering.ORDERS,
                                     ordering.PER_PAGE_CHOICES, ordering.DEFAULT_PER_PAGE, pages, prefix=prefix)


def gallery_fields(choices, bounds, sorts: Sequence[str]) -> list[links.Field]:
    """Every parameter of the Gallery's link."""
    return [*view_fields(sorts), *filter_panel.link_fields(choices, bounds)]


def inspector_fields(choices, bounds, sorts: Sequence[str]) -> list[links.Field]:
    """The Inspector's link, with the gallery it was opened from (``from``, ``gallery_*``)."""
    return [*links.inspector_fields(choices, filter_panel.sliders(bounds), list(inspector.SORTS), INSPECTOR_VIEWS),
            links.Field(FROM, links.ONE, "", ("", FROM_GALLERY), label="origin"),
            *view_fields(sorts, prefix=links.GALLERY_PREFIX)]


def view_of(values: Mapping[str, Any], prefix: str = "", **rest: Any) -> GalleryView:
    """The :class:`GalleryView` decoded link values describe (``rest``: tile size, layers)."""
    return GalleryView(mode=values[prefix + "mode"], sort=values[prefix + "sort"],
                       descending=values[prefix + "order"] == ordering.DESC, page=int(values[prefix + "page"]),
                       per_page=int(values[prefix + "per_page"]), **rest)


def values_of(view: GalleryView, prefix: str = "") -> dict[str, Any]:
    """A view as the values :func:`dashboard.links.encode` writes."""
    return {prefix + "mode": view.mode, prefix + "sort": view.sort,
            prefix + "order": ordering.DESC if view.descending else ordering.ASC,
            prefix + "page": view.page, prefix + "per_page": view.per_page}


def gallery_params(view: GalleryView, spec: inspector.InspectorFilter, choices, bounds,
                   sorts: Sequence[str]) -> links.Params:
    """The Gallery's URL for ``view`` over the rows ``spec`` keeps."""
    return links.encode({**values_of(view), **filter_panel.link_values(spec)}, gallery_fields(choices, bounds, sorts))


def inspector_params(row_id: Any, run: str | None, view: GalleryView, spec: inspector.InspectorFilter,
                     fields: Sequence[links.Field]) -> links.Params:
    """A tile's link: the Inspector on ``row_id``, the same filters, the gallery's order
    (``fields``: :func:`inspector_fields`, built once for a page of tiles)."""
    values = {"row": str(row_id), "run": run, FROM: FROM_GALLERY, **filter_panel.link_values(spec),
              **values_of(view, links.GALLERY_PREFIX)}
    return links.encode(values, fields)


def came_from_gallery(values: Mapping[str, Any]) -> bool:
    return values.get(FROM) == FROM_GALLERY


def row_order(table: pd.DataFrame, mask: np.ndarray | None, filter_key: str, view: GalleryView,
              computed: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """The filtered rows (positions) in the order the gallery shows them: by the sort, an image's
    rows together in the image mode. What the Inspector's previous/next walk."""
    order, values, key = ordering.sorted_for(table, mask, filter_key, view.sort, view.descending, computed)
    if view.mode == ordering.MODE_IMAGES:
        return ordering.image_groups(table, order, values, view.descending, key).rows
    return order


#: What the Inspector's table and default row read of the rows it walks in the gallery's order.
_INSPECTOR_COLUMNS = (*inspector.TABLE_COLUMNS, "scorer", "trace_reward_mode_answer_and_annotation",
                      "annotation_pred_size")
_ORDERED = TableMemo(size=2)


def ordered_rows(table: pd.DataFrame, mask: np.ndarray | None, filter_key: str, view: GalleryView,
                 computed: Mapping[str, np.ndarray] | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """``(the rows in the gallery's order, their positions)``: only the columns the Inspector's
    table and default row read (a million rows' other columns are never copied), remembered
    per table and view, so previous / next do not copy them again."""
    order = row_order(table, mask, filter_key, view, computed)
    key = (filter_key, view.mode, view.sort, view.descending, id((computed or {}).get(view.sort)))

    def take() -> pd.DataFrame:
        columns = [c for c in dict.fromkeys(_INSPECTOR_COLUMNS) if c in table.columns]
        return pd.DataFrame({c: table[c].array.take(order) for c in columns}, index=table.index[order])

    return _ORDERED.get(table, key, take), order


def page_holding(table: pd.DataFrame, order: np.ndarray, view: GalleryView, row_id: Any) -> int:
    """The gallery page showing ``row_id`` (its row's tile; its image's in the image mode; the
    page the view names when the row is not there or in the object mode)."""
    if view.mode == ordering.MODE_PATCHES:
        return view.page
    position = table.index.get_indexer([row_id])[0] if row_id is not None else -1
    if position < 0:
        return view.page
    where = np.flatnonzero(order == position)
    if not len(where):
        return view.page
    index = int(where[0])
    if view.mode == ordering.MODE_IMAGES:
        codes = ordering.image_codes(table)[order]
        index = int(np.count_nonzero(np.diff(codes[: index + 1]) != 0)) if index else 0
    return ordering.page_of(index, view.per_page)


__all__ = [
    "FROM",
    "FROM_GALLERY",
    "GALLERY_PAGE",
    "INSPECTOR_PAGE",
    "INSPECTOR_VIEWS",
    "LINK_PAGE",
    "came_from_gallery",
    "gallery_fields",
    "gallery_params",
    "inspector_fields",
    "inspector_params",
    "ordered_rows",
    "page_holding",
    "row_order",
    "sort_choices",
    "values_of",
    "view_fields",
    "view_of",
]
