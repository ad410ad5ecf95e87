"""A gallery page: its tiles (numbers, badges, the row each opens) and their thumbnails (no Streamlit).

:func:`build_page` takes the opened run, the table as the pages show it (scores under the
current options), the filter and the view, and returns the page's :class:`Tile` s, each with its
encoded thumbnail. Only the page's rows are read: their thumbnails come from the disk cache
(:mod:`dashboard.gallery.cache`) when it has them; otherwise the rows' text is read in one pass,
each row is explained once and drawn (:mod:`dashboard.gallery.render`). A row that cannot be drawn
gets a placeholder saying why; one bad row never breaks the page.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import overlay
from ..filters import TableMemo, format_zero_reward_positive
from ..verdicts import VERDICT_LABELS
from . import ordering, render
from .cache import ThumbnailCache, key_of
from .patches import OBJECT_SORT_NOTE, PatchIndex, PatchObject, objects_of

log = logging.getLogger("rolloutscope.dashboard.gallery")

BADGE_FORMAT = "format 0, reward > 0"
BADGE_SUSPECT = "GT suspect"
#: Rows an image tile reads for its numbers beyond the drawn ones: all of them (numbers only).
NUMBER_COLUMNS = ("score", "annotation_reward", "format")


@dataclass(frozen=True)
class GalleryView:
    """What a gallery page shows: the mode, the sort, the page and the tiles' size."""

    mode: str = ordering.MODE_ROWS
    sort: str = "annotation_reward"
    descending: bool = False
    page: int = 1
    per_page: int = ordering.DEFAULT_PER_PAGE
    tile_size: str = render.DEFAULT_TILE_SIZE
    layers: frozenset[str] = overlay.ALL_LAYERS

    @property
    def side(self) -> int:
        return render.TILE_SIZES.get(self.tile_size, render.TILE_SIZES[render.DEFAULT_TILE_SIZE])


@dataclass(frozen=True)
class Tile:
    """One tile: its picture and what is written under it."""

    kind: str  # "row", "image" or "patch"
    row_id: Any  # the row its link opens
    run: str | None  # that row's run (its link names it)
    rows: Sequence[Any]  # the rows it stands for (an image: its rollouts, an index of row ids)
    title: str
    sort_value: float
    numbers: tuple[tuple[str, float], ...]
    badges: tuple[str, ...]
    picture: bytes
    note: str = ""


@dataclass
class GalleryPage:
    """A page of tiles, where it sits among them all, and notes for the user."""

    tiles: list[Tile]
    page: int
    count: int  # tiles in all (objects: those counted so far)
    complete: bool  # False while objects are still being counted
    noun: str
    order: np.ndarray  # the rows in the gallery's order (what the Inspector's previous/next walk)
    notes: list[str] = field(default_factory=list)
    cached: int = 0  # thumbnails found in the cache
    per_page: int = ordering.DEFAULT_PER_PAGE

    @property
    def pages(self) -> int:
        return ordering.page_count(self.count, self.per_page)


@dataclass
class PageInputs:
    """What :func:`build_page` needs besides the view."""

    run: Any  # dashboard.loaded_run.LoadedRun
    table: pd.DataFrame  # the run's table, score/solved under the current options
    scores: pd.DataFrame  # dashboard.tuning.scores of it
    mask: np.ndarray | None  # the filter (None: every row)
    filter_key: str
    cache: ThumbnailCache
    overrides: Mapping[str, Any] = field(default_factory=dict)  # explain() options when re-weighted
    computed: Mapping[str, np.ndarray] = field(default_factory=dict)  # e.g. suspect confidence
    verdicts: Callable[[Sequence[Any]], Mapping[str, str]] | None = None  # row ids -> verdict label


# --------------------------------------------------------------------------- fingerprints


def _stat(path: str | os.PathLike | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns)


class _Fingerprints:
    """What identifies a row's content and its image for the cache (file sizes and times, read once
    per page)."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self._files: dict[str, Any] = {}

    def row(self, row_id: Any, source_file: Any) -> list:
        name = str(source_file)
        if name not in self._files:
            self._files[name] = _stat(self.run.paths.get(name))
        return [str(row_id), name, self._files[name]]

    def image(self, ref: Any) -> list:
        if ref is None or (isinstance(ref, float) and math.isnan(ref)) or ref is pd.NA:
            return [None]
        ref = str(ref)
        if ref not in self._files:
            self._files[ref] = _stat(self._image_path(ref))
        return [ref, self._files[ref]]

    def _image_path(self, ref: str) -> str | None:
        if ref.startswith("zip:"):
            return ref[4:].rpartition("!")[0]
        if ref.startswith("upload:"):
            item = getattr(self.run.resolver, "uploads", {}).get(ref[7:])
            return None if isinstance(item, (bytes, bytearray, memoryview)) else item
        if ref.startswith(("inline:", "http://", "https://")):
            return None  # inline: the row's own file says when it changed; remote: never fetched
        return ref


# --------------------------------------------------------------------------- drawing one tile


def _options(view: GalleryView, inputs: PageInputs) -> list:
    return [view.side, sorted(view.layers), sorted((str(k), repr(v)) for k, v in inputs.overrides.items())]


class _Drawer:
    """Explains and draws the page's rows, sharing the explanations and decoded images."""

    def __init__(self, inputs: PageInputs, view: GalleryView) -> None:
        self.inputs = inputs
        self.view = view
        self._images: dict[Any, tuple[Any, str]] = {}
        self._models: dict[Any, tuple[overlay.OverlayModel | None, Any, str]] = {}

    def prefetch(self, row_ids: Iterable[Any]) -> None:
        wanted = [r for r in row_ids if r not in self._models]
        if wanted:
            self.inputs.run.prefetch(wanted)

    def image(self, row_id: Any, ref: Any, side: int) -> tuple[Any, str]:
        """``(image or None, warning)`` decoded at most ``side`` wide (shared by the rows showing it)."""
        key = (str(ref), side) if ref is not None and not pd.isna(ref) and not str(ref).startswith("inline:") \
            else (row_id, side)
        if key not in self._images:
            self._images[key] = self.inputs.run.load_image(row_id, max_side=side)
        return self._images[key]

    def model(self, row_id: Any, ref: Any, side: int) -> tuple[overlay.OverlayModel | None, Any, str]:
        """``(overlay model or None, image or None, why)`` of one row; ``why`` is the missing image's
        reason (with a model), or what went wrong (without one)."""
        if row_id in self._models:
            return self._models[row_id]
        try:
            evaluation = self.inputs.run.explain(row_id, **self.inputs.overrides)
        except ValueError as exc:  # a simple-scorer row: no geometry
            found = (None, None, f"nothing to draw: {exc}")
        except Exception as exc:  # one bad row must not break the page
            log.exception("explaining %s for the gallery failed", row_id)
            found = (None, None, f"could not explain the row: {type(exc).__name__}: {exc}")
        else:
            image, warning = self.image(row_id, ref, side)
            model = overlay.build_overlay(evaluation, overlay.source_size(image))
            if evaluation.annotation.ground_truth is None and evaluation.annotation.predicted is None:
                reason = evaluation.annotation.reason or "the row has no annotation"
                found = (None, image, f"nothing to draw: {reason}")
            else:
                found = (model, image, "" if image is not None else (warning or "no image"))
        self._models[row_id] = found
        return found


def _picture(draw: Callable[[], Any], why: str, side: int) -> tuple[bytes, str]:
    """``(JPEG bytes, note)``: the drawn picture (with a banner when its image is missing), or a
    placeholder saying why there is none."""
    try:
        picture = draw()
    except Exception as exc:  # never a traceback in a tile
        log.exception("drawing a gallery tile failed")
        return render.encode(render.placeholder(side, [f"could not draw: {type(exc).__name__}: {exc}"])), str(exc)
    if picture is None:
        return render.encode(render.placeholder(side, [why])), why
    if why:
        picture = render.with_banner(picture, f"no image: {why}")
        return render.encode(picture), f"image missing: {why}"
    return render.encode(picture), ""


# --------------------------------------------------------------------------- the page


def _value(values: np.ndarray, position: int) -> float:
    value = float(values[position])
    return value if math.isfinite(value) else math.nan


def _badges(position: int, verdict: str | None, formats: np.ndarray, suspect: np.ndarray | None) -> tuple[str, ...]:
    badges = []
    if formats[position]:
        badges.append(BADGE_FORMAT)
    if suspect is not None and math.isfinite(float(suspect[position])):
        badges.append(BADGE_SUSPECT)
    if verdict:
        badges.append(f"verdict: {VERDICT_LABELS.get(verdict, verdict)}")
    return tuple(badges)


#: The objects counted per row order, remembered while the table lives (next pages continue them).
_PATCH_INDEXES = TableMemo(size=8)


def build_page(inputs: PageInputs, view: GalleryView,
               progress: Callable[[int, int], None] | None = None) -> GalleryPage:
    """The tiles of ``view``'s page over the filtered rows of ``inputs``; ``progress(done, total)``
    hears about rows explained for a full object sort."""
    table = inputs.table
    order, values, sort_key = ordering.sorted_for(table, inputs.mask, inputs.filter_key, view.sort, view.descending,
                                                  inputs.computed)
    formats = format_zero_reward_positive(table, inputs.scores)
    suspect = inputs.computed.get(ordering.SUSPECT_CONFIDENCE)
    drawer = _Drawer(inputs, view)
    prints = _Fingerprints(inputs.run)
    if view.mode == ordering.MODE_IMAGES:
        return _image_page(inputs, view, order, values, sort_key, drawer, prints, formats, suspect)
    if view.mode == ordering.MODE_PATCHES:
        overrides = sorted((str(k), repr(v)) for k, v in inputs.overrides.items())
        index = _PATCH_INDEXES.get(table, (sort_key, view.descending, repr(overrides)), lambda: PatchIndex(order))
        return _patch_page(inputs, view, order, drawer, prints, formats, suspect, index, progress)
    return _row_page(inputs, view, order, values, drawer, prints, formats, suspect)


class _Columns:
    """The few columns a page reads, each fetched from the table once per page (a column's
    Series is not built per tile) and read by position: nothing else is copied."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.table = table
        self.ids = table.index
        self._arrays: dict[str, Any] = {}
        self.numbers = {c: ordering.column_values(table, c) for c in NUMBER_COLUMNS if c in table.columns}

    def get(self, column: str, position: int) -> Any:
        if column not in self._arrays:
            self._arrays[column] = self.table[column].array if column in self.table.columns else None
        array = self._arrays[column]
        return None if array is None else array[int(position)]

    def run(self, position: int) -> str | None:
        value = self.get("run", position)
        return None if value is None or pd.isna(value) else str(value)

    def row_numbers(self, position: int) -> tuple[tuple[str, float], ...]:
        return tuple((c, _value(values, position)) for c, values in self.numbers.items())

    def mean_numbers(self, positions: np.ndarray) -> tuple[tuple[str, float], ...]:
        out = []
        for column, values in self.numbers.items():
            picked = values[positions]
            if np.isfinite(picked).any():
                out.append((f"mean {column}", float(np.nanmean(picked))))
        return tuple(out)


def _verdicts_of(inputs: PageInputs, row_ids: Sequence[Any]) -> Mapping[str, str]:
    if inputs.verdicts is None or not row_ids:
        return {}
    try:
        return inputs.verdicts(row_ids)
    except Exception:  # a locked or broken verdict file costs the badges, not the page
        log.exception("reading the verdicts of a gallery page failed")
        return {}


def _row_page(inputs, view, order, values, drawer, prints, formats, suspect) -> GalleryPage:
    page, start, stop = ordering.page_bounds(view.page, view.per_page, len(order))
    positions = order[start:stop]
    columns = _Columns(inputs.table)
    ids = [columns.ids[p] for p in positions]
    verdicts = _verdicts_of(inputs, ids)
    options = _options(view, inputs)
    keys, found = [], {}
    for position, row_id in zip(positions, ids, strict=True):
        key = key_of("row", prints.row(row_id, columns.get("source_file", position)),
                     prints.image(columns.get("image_ref", position)), options)
        keys.append(key)
        found[key] = inputs.cache.get(key)
    drawer.prefetch([r for r, k in zip(ids, keys, strict=True) if found[k] is None])
    tiles = []
    for position, row_id, key in zip(positions, ids, keys, strict=True):
        picture, note = found[key], ""
        if picture is None:
            model, image, why = drawer.model(row_id, columns.get("image_ref", position), view.side)
            picture, note = _picture(
                (lambda m=model, i=image: render.row_picture(m, i, view.side, view.layers)) if model is not None
                else (lambda: None), why, view.side)
            inputs.cache.put(key, picture)
        tiles.append(Tile("row", row_id, columns.run(position), (row_id,), str(row_id), _value(values, position),
                          columns.row_numbers(position), _badges(position, verdicts.get(str(row_id)), formats, suspect),
                          picture, note))
    page_out = GalleryPage(tiles, page, len(order), True, "row", order, per_page=view.per_page)
    page_out.cached = sum(1 for k in keys if found[k] is not None)
    return page_out


def _image_page(inputs, view, order, values, sort_key, drawer, prints, formats, suspect) -> GalleryPage:
    groups = ordering.image_groups(inputs.table, order, values, view.descending, sort_key)
    page, start, stop = ordering.page_bounds(view.page, view.per_page, len(groups))
    options = _options(view, inputs)
    columns = _Columns(inputs.table)
    tiles, cached = [], 0
    for k in range(start, stop):
        members = groups.members(k)
        drawn = members[: render.IMAGE_ROLLOUTS]
        ids = [columns.ids[p] for p in drawn]
        ref = columns.get("image_ref", drawn[0])
        key = key_of("image", prints.image(ref),
                     [prints.row(r, columns.get("source_file", p)) for r, p in zip(ids, drawn, strict=True)], options)
        picture, note = inputs.cache.get(key), ""
        if picture is not None:
            cached += 1
        else:
            drawer.prefetch(ids)
            models, image, why = [], None, ""
            for row_id, position in zip(ids, drawn, strict=True):
                model, row_image, row_why = drawer.model(row_id, ref, view.side)
                if model is not None:
                    models.append((str(columns.get("scorer_kwargs", position)), model))
                    image, why = (row_image, row_why) if image is None else (image, why)
            reason = why or ("" if models else drawer.model(ids[0], ref, view.side)[2])
            picture, note = _picture(
                (lambda m=models, i=image: render.image_picture(m, i, view.side, view.layers)) if models
                else (lambda: None), reason, view.side)
            inputs.cache.put(key, picture)
        drawn_note = (f"predictions of {len(drawn)} of {len(members)} rollouts drawn"
                      if len(members) > len(drawn) else "")
        numbers = (("rollouts", float(len(members))), *columns.mean_numbers(members))
        badges = _group_badges(members, formats, suspect)
        title = os.path.basename(str(ref)) if ref is not None and not pd.isna(ref) else f"no image: {ids[0]}"
        tiles.append(Tile("image", ids[0], columns.run(drawn[0]), columns.ids[members], title,
                          float(groups.values[k]), numbers,
                          badges, picture, "; ".join(n for n in (note, drawn_note) if n)))
    page_out = GalleryPage(tiles, page, len(groups), True, "image", groups.rows, per_page=view.per_page)
    page_out.cached = cached
    return page_out


def _group_badges(members: np.ndarray, formats: np.ndarray, suspect: np.ndarray | None) -> tuple[str, ...]:
    """An image's badges: a count of its rows that carry each (verdicts are per row, not shown here)."""
    badges = []
    flagged = int(formats[members].sum())
    if flagged:
        badges.append(f"{BADGE_FORMAT} ×{flagged}")
    if suspect is not None:
        suspects = int(np.isfinite(suspect[members]).sum())
        if suspects:
            badges.append(f"{BADGE_SUSPECT} ×{suspects}")
    return tuple(badges)


def _count_rows(inputs: PageInputs, drawer: _Drawer, view: GalleryView) -> Callable[[np.ndarray], list]:
    table = inputs.table

    def count(positions: np.ndarray) -> list[list[PatchObject]]:
        ids = table.index[positions]
        drawer.prefetch(ids)
        refs = table["image_ref"].array.take(positions) if "image_ref" in table.columns else [None] * len(ids)
        out = []
        for row_id, ref in zip(ids, refs, strict=True):
            model = drawer.model(row_id, ref, view.side)[0]
            out.append(objects_of(model, view.descending) if model is not None else [])
        return out

    return count


def _patch_page(inputs, view, order, drawer, prints, formats, suspect, index, progress) -> GalleryPage:
    count_rows = _count_rows(inputs, drawer, view)
    notes: list[str] = []
    if view.sort == ordering.OBJECT_SIMILARITY:
        rows, within = index.by_similarity(count_rows, view.descending, progress)
        page, start, stop = ordering.page_bounds(view.page, view.per_page, len(rows))
        window = [(int(p), index.objects(int(p), count_rows)[int(k)]) for p, k in zip(rows[start:stop],
                                                                                       within[start:stop], strict=True)]
        total, complete = len(rows), True
    else:
        page = max(1, int(view.page))
        start = (page - 1) * view.per_page
        window, reached = index.window(start, start + view.per_page, count_rows)
        if not reached:
            known = index.known_objects()
            page = max(1, ordering.page_count(known, view.per_page))
            start = (page - 1) * view.per_page
            window, _ = index.window(start, start + view.per_page, count_rows)
            notes.append(f"Objects are counted as their rows are drawn: {known:,} counted in the first "
                         f"{index.counted_rows:,} rows so far; showing page {page:,}. " + OBJECT_SORT_NOTE)
        total, complete = index.known_objects(), index.complete
    options = _options(view, inputs)
    columns = _Columns(inputs.table)
    verdicts = _verdicts_of(inputs, list(dict.fromkeys(columns.ids[p] for p, _ in window)))
    tiles, cached = [], 0
    for position, obj in window:
        row_id = columns.ids[position]
        ref = columns.get("image_ref", position)
        key = key_of("patch", prints.row(row_id, columns.get("source_file", position)), prints.image(ref),
                     [obj.kind, obj.key, obj.gt_index, obj.pred_index], options)
        picture, note = inputs.cache.get(key), ""
        if picture is not None:
            cached += 1
        else:
            model, image, why = drawer.model(row_id, ref, view.side)
            full, _ = drawer.image(row_id, ref, max(view.side * 4, 1024)) if model is not None else (None, "")
            picture, note = _picture(
                (lambda m=model, i=full, o=obj: render.patch_picture(m, o, i, view.side, view.layers))
                if model is not None else (lambda: None), why, view.side)
            inputs.cache.put(key, picture)
        numbers = (("IoU" if obj.label.startswith("IoU") else "similarity", obj.similarity),
                   *((c, v) for c, v in columns.row_numbers(position) if c == "annotation_reward"))
        tiles.append(Tile("patch", row_id, columns.run(position), (row_id,), obj.name, obj.similarity,
                          numbers, _badges(position, verdicts.get(str(row_id)), formats, suspect), picture, note))
    out = GalleryPage(tiles, page, total, complete, "object", order, notes, per_page=view.per_page)
    out.cached = cached
    return out


__all__ = [
    "BADGE_FORMAT",
    "BADGE_SUSPECT",
    "GalleryPage",
    "GalleryView",
    "PageInputs",
    "Tile",
    "build_page",
]
