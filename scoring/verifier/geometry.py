"""Typed parsing of boxes, points and segments, and their similarities.

Parsing follows the declared annotation type and never guesses it from the
value. Every failure names the offending item (``annotation[2]: zero-area
box``) because the dashboard shows it. Coordinates are pixels of the image as
given: nothing is rescaled or clipped.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .literals import Literal, is_mapping, parse_literal
from .records import new_record
from .spec import (
    BARE_ITEM_ROLE_TYPES,
    BARE_ITEM_TYPES,
    BBOXES_WRAPPER_KEY,
    BBOXES_WRAPPER_TYPES,
    COLLECTION_OF_TYPE,
    HALF_LIFE_DEFAULT_PX,
    HALF_LIFE_DIAGONAL_FRACTION,
    HALF_LIFE_MAX_PX,
    HALF_LIFE_MIN_PX,
    LN2,
    MAP,
    SEQUENCE,
    SET,
    SET_MAP,
    SHAPE_OF_TYPE,
    SINGLE,
)

BOX, POINT, SEGMENT = "bbox", "point", "segment"
#: Integers below this magnitude convert to float without any overflow check.
_EXACT_INT_LIMIT = 2**53
_BOX_LEN, _POINT_LEN, _SEGMENT_LEN = 4, 2, 2


class Box(NamedTuple):
    """An axis-aligned box with corners reordered to left/top/right/bottom."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def area(self) -> float:
        return (self.x1 - self.x0) * (self.y1 - self.y0)

    @property
    def center(self) -> tuple[float, float]:
        return ((self.x0 + self.x1) / 2.0, (self.y0 + self.y1) / 2.0)

    def as_list(self) -> list[float]:
        return [self.x0, self.y0, self.x1, self.y1]


class Point(NamedTuple):
    x: float
    y: float

    @property
    def center(self) -> tuple[float, float]:
        return (self.x, self.y)

    def as_list(self) -> list[float]:
        return [self.x, self.y]


class Segment(NamedTuple):
    """An undirected segment; endpoint order is kept only for drawing."""

    start: Point
    end: Point

    @property
    def center(self) -> tuple[float, float]:
        return ((self.start.x + self.end.x) / 2.0, (self.start.y + self.end.y) / 2.0)

    def as_list(self) -> list[list[float]]:
        return [self.start.as_list(), self.end.as_list()]


Shape = Box | Point | Segment


class AnnotationParseError(ValueError):
    """A value that does not fit its declared annotation type; the message names the item."""


class ParsedAnnotation(NamedTuple):
    """An annotation in pixel coordinates, as groups of shapes.

    Single, set and sequence types have one group with key ``None``; map types
    have one group per role key (single-item groups for ``*_map``).
    """

    annotation_type: str
    shape: str
    collection: str
    groups: tuple[tuple[str | None, tuple[Shape, ...]], ...]

    @property
    def keys(self) -> tuple[str | None, ...]:
        return tuple(key for key, _ in self.groups)

    def group(self, key: str | None) -> tuple[Shape, ...]:
        for group_key, shapes in self.groups:
            if group_key == key:
                return shapes
        return ()

    @property
    def size(self) -> int:
        """Items for single/set/sequence types; keys for map types."""
        if self.collection in (MAP, SET_MAP):
            return len(self.groups)
        return len(self.groups[0][1]) if self.groups else 0

    def shapes(self) -> list[tuple[str | None, int, Shape]]:
        return [(key, index, shape) for key, group in self.groups for index, shape in enumerate(group)]


# ---------------------------------------------------------------------------
# Parsing


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def coordinate(value: Any, where: str) -> float:
    """A finite int or float (booleans, strings, null and overflow fail)."""
    if type(value) is float:
        if value - value == 0.0:  # finite
            return value
    elif type(value) is int and -_EXACT_INT_LIMIT < value < _EXACT_INT_LIMIT:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnnotationParseError(f"{where}: coordinate {_short(value)} is not a number")
    try:
        number = float(value)
    except OverflowError:
        raise AnnotationParseError(f"{where}: coordinate is out of float range") from None
    if not math.isfinite(number):
        raise AnnotationParseError(f"{where}: coordinate {number!r} is not finite")
    return number


def _plain_number(value: Any) -> bool:
    """A float, or an int small enough to convert exactly: the common case, checked cheaply."""
    kind = type(value)
    return (kind is float and value - value == 0.0) or (kind is int and -_EXACT_INT_LIMIT < value < _EXACT_INT_LIMIT)


def parse_point(value: Any, where: str) -> Point:
    if type(value) is list and len(value) == _POINT_LEN:
        x, y = value
        kind_x, kind_y = type(x), type(y)
        if (
            ((kind_x is float and x - x == 0.0) or (kind_x is int and -_EXACT_INT_LIMIT < x < _EXACT_INT_LIMIT))
            and ((kind_y is float and y - y == 0.0) or (kind_y is int and -_EXACT_INT_LIMIT < y < _EXACT_INT_LIMIT))
        ):  # the common case, inline: the same test as _plain_number
            return new_record(Point, (float(x), float(y)))
    if not _is_list(value) or len(value) != _POINT_LEN:
        raise AnnotationParseError(f"{where}: a point is [x, y], got {_short(value)}")
    return Point(coordinate(value[0], where), coordinate(value[1], where))


def parse_box(value: Any, where: str) -> Box:
    if not _is_list(value) or len(value) != _BOX_LEN:
        raise AnnotationParseError(f"{where}: a box is [x0, y0, x1, y1], got {_short(value)}")
    x0, y0, x1, y1 = value
    # The common case (plain floats, or ints that convert exactly), tested inline: this is
    # _plain_number four times without four calls.
    limit = _EXACT_INT_LIMIT
    for v in value:
        kind = type(v)
        if not ((kind is float and v - v == 0.0) or (kind is int and -limit < v < limit)):
            x0, y0, x1, y1 = (coordinate(v, where) for v in value)
            break
    # Corners reordered to left/top/right/bottom (comparisons, not min/max: this is the hot path).
    left, right = (x0, x1) if x0 <= x1 else (x1, x0)
    top, bottom = (y0, y1) if y0 <= y1 else (y1, y0)
    if left == right or top == bottom:
        raise AnnotationParseError(f"{where}: zero-area box")
    return new_record(Box, (float(left), float(top), float(right), float(bottom)))


def parse_segment(value: Any, where: str) -> Segment:
    if not _is_list(value) or len(value) != _SEGMENT_LEN:
        raise AnnotationParseError(f"{where}: a segment is [[x0, y0], [x1, y1]], got {_short(value)}")
    return new_record(Segment, tuple(_parse_each(parse_point, value, where)))


def _parse_each(parse_shape, items, where: str) -> list:
    """Parse every item; only a failure pays for the item's location in the message."""
    try:
        return [parse_shape(item, where) for item in items]
    except AnnotationParseError:
        for index, item in enumerate(items):
            parse_shape(item, f"{where}[{index}]")  # raises again, naming the item
        raise


_PARSE_SHAPE = {BOX: parse_box, POINT: parse_point, SEGMENT: parse_segment}


def _looks_like_bare_item(value: Sequence) -> bool:
    return len(value) > 0 and not _is_list(value[0])


def _parse_items(value: Any, annotation_type: str, where: str, *, allow_bare: bool) -> tuple[Shape, ...]:
    shape = SHAPE_OF_TYPE[annotation_type]
    parse_shape = _PARSE_SHAPE[shape]
    if (
        annotation_type in BBOXES_WRAPPER_TYPES
        and is_mapping(value)
        and BBOXES_WRAPPER_KEY in value
    ):
        value = value[BBOXES_WRAPPER_KEY]
        where = f"{where}.{BBOXES_WRAPPER_KEY}"
    if not _is_list(value):
        raise AnnotationParseError(f"{where}: expected a list of {shape}s, got {_short(value)}")
    if allow_bare and _looks_like_bare_item(value):
        return (parse_shape(value, where),)
    return tuple(_parse_each(parse_shape, value, where))


def _parse_map(value: Any, where: str, annotation_type: str, parse_shape, single: bool):
    """The role-key groups of a map type: one shape per key when ``single`` (``*_map``), else a
    list per key (``*_set_map``)."""
    if not is_mapping(value):
        raise AnnotationParseError(f"{where}: expected an object of role keys, got {_short(value)}")
    allow_bare = annotation_type in BARE_ITEM_ROLE_TYPES
    groups: dict[str, tuple[Shape, ...]] = {}
    for raw_key, item in value.items():
        if not isinstance(raw_key, str):
            raise AnnotationParseError(f"{where}: role key {raw_key!r} is not a string")
        key = raw_key.strip()
        if not key:
            raise AnnotationParseError(f"{where}: empty role key")
        if key in groups:
            raise AnnotationParseError(f"{where}: role key {key!r} appears twice")
        at = f"{where}[{key!r}]"
        if single:
            groups[key] = (parse_shape(item, at),)
        else:
            groups[key] = _parse_items(item, annotation_type, at, allow_bare=allow_bare)
    return tuple(groups.items())


#: annotation type -> (shape, collection, shape parser): one lookup per parse.
_PARSE_PLAN = {t: (SHAPE_OF_TYPE[t], COLLECTION_OF_TYPE[t], _PARSE_SHAPE[SHAPE_OF_TYPE[t]]) for t in SHAPE_OF_TYPE}


def parse_annotation(value: Any, annotation_type: str, where: str = "annotation") -> ParsedAnnotation:
    """Parse ``value`` as ``annotation_type``; raises :class:`AnnotationParseError`."""
    plan = _PARSE_PLAN.get(annotation_type)
    if plan is None:
        raise AnnotationParseError(f"unknown annotation type {annotation_type!r}")
    if type(value) is str:
        parsed = parse_literal(value)
        if not isinstance(parsed, Literal):
            raise AnnotationParseError(f"{where}: text that is not a literal ({parsed.message})")
        value = parsed.value
    shape, collection, parse_shape = plan
    if collection == SINGLE:
        groups = ((None, (parse_shape(value, where),)),)
    elif collection in (SET, SEQUENCE):
        allow_bare = annotation_type in BARE_ITEM_TYPES
        groups = ((None, _parse_items(value, annotation_type, where, allow_bare=allow_bare)),)
    else:
        groups = _parse_map(value, where, annotation_type, parse_shape, collection == MAP)
    return new_record(ParsedAnnotation, (annotation_type, shape, collection, groups))


# ---------------------------------------------------------------------------
# Similarities


def box_iou(a: Box, b: Box) -> float:
    """Raw intersection over union, no acceptance threshold."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    inter_w = (ax1 if ax1 < bx1 else bx1) - (ax0 if ax0 > bx0 else bx0)
    inter_h = (ay1 if ay1 < by1 else by1) - (ay0 if ay0 > by0 else by0)
    if inter_w <= 0.0 or inter_h <= 0.0:
        return 0.0
    intersection = inter_w * inter_h
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - intersection
    if union <= 0.0:  # boxes so small that their areas underflow to zero
        a_over = ((ax1 - ax0) / inter_w) * ((ay1 - ay0) / inter_h)  # area / intersection, each >= 1
        b_over = ((bx1 - bx0) / inter_w) * ((by1 - by0) / inter_h)
        return 1.0 / (a_over + b_over - 1.0)
    iou = intersection / union
    if 0.0 <= iou <= 1.0:
        return iou
    return _rescaled_iou(a, b)  # overflow to inf (or nan): IoU is scale-free, so shrink and redo


def _rescaled_iou(a: Box, b: Box) -> float:
    scale = max(abs(v) for v in (*a, *b))
    return box_iou(Box(*(v / scale for v in a)), Box(*(v / scale for v in b)))


def point_distance(a: Point, b: Point) -> float:
    """Euclidean distance; products rather than ``**`` so huge coordinates give inf, not OverflowError."""
    dx = a.x - b.x
    dy = a.y - b.y
    return math.sqrt(dx * dx + dy * dy)


def segment_distance(a: Segment, b: Segment) -> float:
    """The larger endpoint distance, under whichever endpoint order matches better."""
    same = max(point_distance(a.start, b.start), point_distance(a.end, b.end))
    swapped = max(point_distance(a.start, b.end), point_distance(a.end, b.start))
    return min(same, swapped)


def soft_similarity(distance: float, half_life_px: float) -> float:
    """``exp(-ln 2 * (d / half_life)^2)``: 1 at d = 0, 1/2 at one half-life."""
    ratio = distance / half_life_px
    return math.exp(-LN2 * (ratio * ratio))


def half_life_for_size(image_size: tuple[float, float] | None) -> float:
    """``clamp(0.035 * diagonal, 20, 80)`` px, or 32 px without a size."""
    if image_size is None:
        return HALF_LIFE_DEFAULT_PX
    width, height = image_size
    diagonal = math.sqrt(width * width + height * height)
    return min(max(HALF_LIFE_DIAGONAL_FRACTION * diagonal, HALF_LIFE_MIN_PX), HALF_LIFE_MAX_PX)


# ---------------------------------------------------------------------------
# Image size metadata

_SIZE_KEYS = ("source_image_size", "image_size", "image_sizes", "canvas_size", "img_size")
_WIDTH_KEYS = ("width", "w", "image_width", "canvas_width")
_HEIGHT_KEYS = ("height", "h", "image_height", "canvas_height")
_MAX_SIZE_NESTING = 8


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def image_size_from(value: Any, _depth: int = 0) -> tuple[float, float] | None:
    """``[w, h]`` from any accepted spelling of image-size metadata, else None."""
    if type(value) is list and len(value) == 2:  # the common spelling, checked first
        width, height = value
        if _plain_number(width) and _plain_number(height) and width > 0 and height > 0:
            return (float(width), float(height))
    if value is None or _depth > _MAX_SIZE_NESTING:
        return None
    if isinstance(value, str):
        parsed = parse_literal(value)
        return image_size_from(parsed.value, _depth + 1) if isinstance(parsed, Literal) else None
    if _is_list(value):
        if len(value) == 2:
            width, height = _positive(value[0]), _positive(value[1])
            if width is not None and height is not None:
                return (width, height)
        for entry in value:
            if _is_list(entry) or isinstance(entry, (Mapping, str)):
                size = image_size_from(entry, _depth + 1)
                if size is not None:
                    return size
        return None
    if is_mapping(value):
        for key in _SIZE_KEYS:
            if key in value:
                size = image_size_from(value[key], _depth + 1)
                if size is not None:
                    return size
        width = next((_positive(value[k]) for k in _WIDTH_KEYS if k in value), None)
        height = next((_positive(value[k]) for k in _HEIGHT_KEYS if k in value), None)
        if width is not None and height is not None:
            return (width, height)
    return None


def resolve_image_size(*sources: Any) -> tuple[float, float] | None:
    """The first usable size among ``image_size, image_sizes, metadata, extra_info``."""
    for source in sources:
        size = image_size_from(source)
        if size is not None:
            return size
    return None


_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = 4
_SHORT.maxstring = _SHORT.maxother = 30


def _short(value: Any) -> str:
    """A bounded repr: safe on megabyte or deeply nested values."""
    return _SHORT.repr(value)
