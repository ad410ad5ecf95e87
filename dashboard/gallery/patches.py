"""One tile per object: the evaluation patches of a row, and their order across rows.

A row's objects are what its overlay draws, read from the overlay model (so a patch never
disagrees with the Inspector): each matched pair is a **TP** with its IoU (boxes) or similarity
(points, segments), each missed ground-truth item an **FN**, each unmatched prediction an **FP**
(similarity 0). A patch is a crop around the object with a margin.

How many objects a row has is known only once the row is explained (map types count keys, not
items, in the table), so :class:`PatchIndex` counts them as it goes: rows are explained in the
gallery's row order until the page asked for is filled, and the counts are kept, so the next page
continues where the last stopped. Sorting every object of the run by its own IoU needs every row
explained first: :meth:`PatchIndex.by_similarity`, offered for a filter of at most
:data:`FULL_SORT_ROWS` rows.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..overlay import LAYER_MISSED, LAYER_UNMATCHED, OverlayModel, shape_bounds

TP, FN, FP = "TP", "FN", "FP"
KINDS: tuple[str, ...] = (TP, FN, FP)
KIND_TITLES = {TP: "TP (matched)", FN: "FN (missed)", FP: "FP (extra)"}
#: Rows a filter may hold for every object to be sorted by its own IoU / similarity.
FULL_SORT_ROWS = 5_000
#: Rows explained at most in one page run to reach the page asked for.
COUNT_BUDGET_ROWS = 2_000
OBJECT_SORT_NOTE = (f"To sort every object by its own IoU / similarity, narrow the filters to at most "
                    f"{FULL_SORT_ROWS:,} rows.")
#: Margin around an object, as a share of its size (at least :data:`MIN_MARGIN_PX` source pixels).
MARGIN = 0.6
MIN_MARGIN_PX = 12.0
#: A point's patch: this share of the image's shorter side around it (at least the half-life).
POINT_WINDOW = 0.08


@dataclass(frozen=True)
class PatchObject:
    """One object of a row's overlay: its kind, where it is and how well it matched."""

    kind: str
    key: str | None
    gt_index: int | None
    pred_index: int | None
    similarity: float
    label: str
    bounds: tuple[float, float, float, float]

    @property
    def name(self) -> str:
        """``"TP · IoU 0.82"``, ``"FN (missed) · 'left'[1]"``."""
        where = "" if self.key is None else f" · {self.key!r}"
        index = self.gt_index if self.gt_index is not None else self.pred_index
        return f"{KIND_TITLES[self.kind]}{where}[{index}]" + (f" · {self.label}" if self.label else "")


def _union(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> tuple[float, ...]:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def objects_of(model: OverlayModel, descending: bool = False) -> list[PatchObject]:
    """The objects of one overlay, lowest similarity first (highest with ``descending``); ties
    in the order TP, FN, FP, then by key and index."""
    by_item = {(m.side, m.key, m.index): m for m in model.marks}
    found: list[PatchObject] = []
    for c in model.connectors:
        gt, pred = by_item.get(("gt", c.key, c.gt_index)), by_item.get(("pred", c.key, c.pred_index))
        if gt is None or pred is None:
            continue
        bounds = _union(shape_bounds(gt.shape), shape_bounds(pred.shape))
        found.append(PatchObject(TP, c.key, c.gt_index, c.pred_index, float(c.similarity), c.label, bounds))
    for mark in model.marks:
        if mark.layer == LAYER_MISSED:
            found.append(PatchObject(FN, mark.key, mark.index, None, 0.0, "missed", shape_bounds(mark.shape)))
        elif mark.layer == LAYER_UNMATCHED:
            found.append(PatchObject(FP, mark.key, None, mark.index, 0.0, "extra", shape_bounds(mark.shape)))
    rank = {kind: i for i, kind in enumerate(KINDS)}

    def order(o: PatchObject) -> tuple:
        similarity = -o.similarity if descending else o.similarity
        return (similarity, rank[o.kind], str(o.key), o.gt_index if o.gt_index is not None else o.pred_index)

    return sorted(found, key=order)


def crop_region(obj: PatchObject, model: OverlayModel) -> tuple[float, float, float, float]:
    """The part of the canvas a patch shows: the object with a margin, kept on the canvas and
    never thinner than a few pixels (a point gets a window of :data:`POINT_WINDOW`)."""
    x0, y0, x1, y1 = obj.bounds
    finite = all(math.isfinite(v) for v in obj.bounds)
    if not finite:
        return (0.0, 0.0, float(model.width), float(model.height))
    short = min(model.width, model.height)
    floor = max(POINT_WINDOW * short, 2.0 * (model.half_life_px or 0.0), 4 * MIN_MARGIN_PX)
    width, height = max(x1 - x0, 0.0), max(y1 - y0, 0.0)
    pad_x = max(MARGIN * width, MIN_MARGIN_PX, (floor - width) / 2)
    pad_y = max(MARGIN * height, MIN_MARGIN_PX, (floor - height) / 2)
    cx0, cy0, cx1, cy1 = x0 - pad_x, y0 - pad_y, x1 + pad_x, y1 + pad_y
    # slide onto the canvas where it fits, else clip
    cx0, cx1 = _onto(cx0, cx1, model.width)
    cy0, cy1 = _onto(cy0, cy1, model.height)
    return (cx0, cy0, cx1, cy1)


def _onto(lo: float, hi: float, size: int) -> tuple[float, float]:
    span = hi - lo
    if span >= size:
        return (max(lo, 0.0), min(hi, float(size))) if lo < size and hi > 0 else (0.0, float(size))
    if lo < 0:
        return 0.0, span
    if hi > size:
        return size - span, float(size)
    return lo, hi


# --------------------------------------------------------------------------- the objects of many rows

CountRows = Callable[[np.ndarray], Sequence[Sequence[PatchObject]]]


class PatchIndex:
    """The objects of rows taken in a fixed order (``order``: row positions), counted as rows
    are explained (``count_rows(positions)`` gives each row's objects in their tile order).

    Thread-safe: one index may serve several sessions looking at the same view."""

    def __init__(self, order: np.ndarray, *, keep_rows: int = 2 * FULL_SORT_ROWS) -> None:
        self.order = order
        self.counts = np.full(len(order), -1, dtype=np.int64)
        self._objects: OrderedDict[int, tuple[PatchObject, ...]] = OrderedDict()
        self._keep = keep_rows
        self._lock = threading.Lock()
        self._flat: dict[bool, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def counted_rows(self) -> int:
        """How many rows, from the first, have been counted."""
        unknown = np.flatnonzero(self.counts < 0)
        return int(unknown[0]) if len(unknown) else len(self.order)

    @property
    def complete(self) -> bool:
        return self.counted_rows == len(self.order)

    def known_objects(self) -> int:
        """Objects in the rows counted so far."""
        return int(self.counts[: self.counted_rows].sum())

    def _count(self, upto: int, count_rows: CountRows, batch: int) -> None:
        """Count rows until ``upto`` rows from the first are known."""
        while True:
            start = self.counted_rows
            if start >= upto:
                return
            stop = min(upto, start + batch)
            found = count_rows(self.order[start:stop])
            with self._lock:
                for offset, objects in enumerate(found):
                    self.counts[start + offset] = len(objects)
                    self._objects[int(self.order[start + offset])] = tuple(objects)
                    self._objects.move_to_end(int(self.order[start + offset]))
                while len(self._objects) > self._keep:
                    self._objects.popitem(last=False)

    def objects(self, position: int, count_rows: CountRows) -> tuple[PatchObject, ...]:
        """The objects of one row (explained again when forgotten)."""
        with self._lock:
            held = self._objects.get(int(position))
        if held is None:
            held = tuple(count_rows(np.array([position]))[0])
        return held

    def window(self, start: int, stop: int, count_rows: CountRows, *, budget: int = COUNT_BUDGET_ROWS,
               batch: int = 32) -> tuple[list[tuple[int, PatchObject]], bool]:
        """The objects ``start`` .. ``stop`` (0-based, in tile order) as ``(row position, object)``,
        counting rows as needed but at most ``budget`` new rows; the flag says whether the window
        could be reached."""
        first_unknown = self.counted_rows
        limit = min(len(self.order), first_unknown + budget)
        while True:
            ends = np.cumsum(np.maximum(self.counts[: self.counted_rows], 0))
            if (len(ends) and ends[-1] >= stop) or self.counted_rows >= limit:
                break
            self._count(min(limit, self.counted_rows + batch), count_rows, batch)
        counted = self.counted_rows
        ends = np.cumsum(self.counts[:counted])
        total = int(ends[-1]) if counted else 0
        if start >= total and counted < len(self.order):
            return [], False
        out: list[tuple[int, PatchObject]] = []
        first_row = int(np.searchsorted(ends, start, side="right"))
        for i in range(first_row, counted):
            before = int(ends[i] - self.counts[i])
            if before >= stop:
                break
            position = int(self.order[i])
            objects = self.objects(position, count_rows)
            for k, obj in enumerate(objects):
                if start <= before + k < stop:
                    out.append((position, obj))
        return out, True

    def by_similarity(self, count_rows: CountRows, descending: bool,
                      progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every object of every row sorted by its own IoU / similarity (stable: ties keep the row
        order): ``(row positions, object index within the row)``. Counts every row first."""
        with self._lock:
            held = self._flat.get(descending)
        if held is not None:
            return held
        total = len(self.order)
        while not self.complete:
            self._count(min(total, self.counted_rows + 256), count_rows, 256)
            if progress is not None:
                progress(self.counted_rows, total)
        rows = np.repeat(self.order, self.counts)
        index = np.concatenate([np.arange(c) for c in self.counts]) if total else np.zeros(0, dtype=np.int64)
        similarity = np.array([self.objects(int(p), count_rows)[int(k)].similarity for p, k in zip(rows, index,
                                                                                                  strict=True)])
        order = np.argsort(-similarity if descending else similarity, kind="stable")
        flat = (rows[order], index[order].astype(np.int64))
        with self._lock:
            self._flat[descending] = flat
        return flat


__all__ = [
    "COUNT_BUDGET_ROWS",
    "FN",
    "FP",
    "FULL_SORT_ROWS",
    "KINDS",
    "KIND_TITLES",
    "OBJECT_SORT_NOTE",
    "TP",
    "CountRows",
    "PatchIndex",
    "PatchObject",
    "crop_region",
    "objects_of",
]
