"""Ground truth and prediction drawn over the image: one layer model, two renderers.

:func:`build_overlay` reads *only* the scorer's own explanation (a
:class:`scoring.trace.TraceEvaluation`: the parsed shapes, the pairings of its
``MatchResult`` and its half-life), never re-matching anything, and turns it into
a flat list of drawing primitives, each on one named layer:

==================  ==========================================================
layer               what it draws
==================  ==========================================================
``ground_truth``    matched ground truth: green, solid
``prediction``      matched predictions: orange, dashed
``matches``         a blue line joining each matched pair, labelled with its
                    IoU (boxes) or similarity and distance (points, segments)
``unmatched``       predictions paired with nothing: red, dashed, crossed out,
                    tagged "unmatched" / "extra key"
``missed``          ground truth paired with nothing: magenta, dotted, tagged
                    "missed"
``half_life``       a ring of one half-life around ground-truth points and
                    segment ends (a prediction on the ring scores 0.5)
``labels``          sequence positions ``[i]`` and map role keys
==================  ==========================================================

:func:`render_pil` draws the model with Pillow (PNG export, thumbnails);
:func:`plotly_figure` builds an interactive figure (zoom and pan) from the same
model. Both take the set of visible layers. Coordinates are pixels of the image
as given; shapes far outside it (or at absurd coordinates) are clipped, never an
error. Without an image, a blank canvas of the image size stands in.
"""

from __future__ import annotations

import base64
import functools
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from scoring.geometry import Box, Point, Segment

# --------------------------------------------------------------------------- layers

LAYER_GROUND_TRUTH = "ground_truth"
LAYER_PREDICTION = "prediction"
LAYER_MATCHES = "matches"
LAYER_UNMATCHED = "unmatched"
LAYER_MISSED = "missed"
LAYER_HALF_LIFE = "half_life"
LAYER_LABELS = "labels"

#: Every layer, in drawing order (later layers on top).
LAYERS: tuple[str, ...] = (
    LAYER_HALF_LIFE,
    LAYER_GROUND_TRUTH,
    LAYER_MISSED,
    LAYER_PREDICTION,
    LAYER_UNMATCHED,
    LAYER_MATCHES,
    LAYER_LABELS,
)
#: What the UI calls each layer.
LAYER_TITLES: dict[str, str] = {
    LAYER_GROUND_TRUTH: "Ground truth (matched)",
    LAYER_PREDICTION: "Prediction (matched)",
    LAYER_MATCHES: "Match lines + IoU / similarity",
    LAYER_UNMATCHED: "Unmatched predictions",
    LAYER_MISSED: "Missed ground truth",
    LAYER_HALF_LIFE: "Half-life rings",
    LAYER_LABELS: "Sequence numbers / map keys",
}
ALL_LAYERS = frozenset(LAYERS)

# --------------------------------------------------------------------------- styles


@dataclass(frozen=True, slots=True)
class Style:
    """How one kind of mark looks: RGB colour, dash pattern and marker."""

    colour: tuple[int, int, int]
    dash: str  # "solid", "dash" or "dot"
    marker: str  # point marker: "circle", "diamond", "x", "circle-open"
    width_scale: float = 1.0

    @property
    def hex(self) -> str:
        r, g, b = self.colour
        return f"#{r:02x}{g:02x}{b:02x}"


STYLE_GROUND_TRUTH = Style((0, 200, 83), "solid", "circle")
STYLE_PREDICTION = Style((255, 140, 0), "dash", "diamond")
STYLE_UNMATCHED = Style((230, 25, 25), "dash", "x")
STYLE_MISSED = Style((220, 0, 220), "dot", "circle-open")
STYLE_CONNECTOR = Style((30, 120, 255), "solid", "circle", 0.67)
STYLE_RING = Style((0, 200, 83), "dot", "circle", 0.5)

STYLES: dict[str, Style] = {
    LAYER_GROUND_TRUTH: STYLE_GROUND_TRUTH,
    LAYER_PREDICTION: STYLE_PREDICTION,
    LAYER_UNMATCHED: STYLE_UNMATCHED,
    LAYER_MISSED: STYLE_MISSED,
    LAYER_MATCHES: STYLE_CONNECTOR,
    LAYER_HALF_LIFE: STYLE_RING,
}

#: Canvas used when there is neither an image nor any size to go by.
DEFAULT_CANVAS = (640, 480)
_MIN_CANVAS, _MAX_CANVAS = 32, 8192
#: Role keys longer than this are cut in labels.
_LABEL_CHARS = 32

# Tag placements around a shape's bounding box.
TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT, CENTER = "tl", "tr", "bl", "br", "c"

# --------------------------------------------------------------------------- primitives


@dataclass(frozen=True, slots=True)
class ShapeMark:
    """One parsed shape to outline, in the style of its layer (``crossed`` adds a red X)."""

    layer: str
    shape: Box | Point | Segment
    key: str | None
    index: int
    side: str  # "pred" or "gt"
    crossed: bool = False


@dataclass(frozen=True, slots=True)
class Connector:
    """The line joining one matched pair, from the prediction to the ground truth."""

    layer: str
    start: tuple[float, float]
    end: tuple[float, float]
    label: str
    key: str | None
    pred_index: int
    gt_index: int
    similarity: float


@dataclass(frozen=True, slots=True)
class Ring:
    """A circle of one half-life around a ground-truth point."""

    layer: str
    center: tuple[float, float]
    radius: float


@dataclass(frozen=True, slots=True)
class Tag:
    """A short text placed at a corner of a rectangle ``(x0, y0, x1, y1)``."""

    layer: str
    text: str
    around: tuple[float, float, float, float]
    placement: str
    style: Style


@dataclass
class OverlayModel:
    """Everything drawable for one explanation, plus notes about what could not be drawn."""

    width: int
    height: int
    size_source: str  # "image", "metadata", "shapes" or "default"
    shape_kind: str | None = None  # bbox / point / segment
    collection: str | None = None
    half_life_px: float | None = None
    marks: list[ShapeMark] = field(default_factory=list)
    connectors: list[Connector] = field(default_factory=list)
    rings: list[Ring] = field(default_factory=list)
    tags: list[Tag] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def count(self, layer: str) -> int:
        """How many primitives sit on ``layer``."""
        return sum(1 for group in (self.marks, self.connectors, self.rings, self.tags) for p in group if p.layer == layer)

    def tag_texts(self, layer: str | None = None) -> list[str]:
        return [t.text for t in self.tags if layer is None or t.layer == layer]


# --------------------------------------------------------------------------- geometry helpers


def _half(a: float, b: float) -> float:
    """Midpoint that cannot overflow at the float limits."""
    return a / 2.0 + b / 2.0


def shape_center(shape: Box | Point | Segment) -> tuple[float, float]:
    if isinstance(shape, Box):
        return (_half(shape.x0, shape.x1), _half(shape.y0, shape.y1))
    if isinstance(shape, Segment):
        return (_half(shape.start.x, shape.end.x), _half(shape.start.y, shape.end.y))
    return (shape.x, shape.y)


def shape_bounds(shape: Box | Point | Segment) -> tuple[float, float, float, float]:
    if isinstance(shape, Box):
        return (shape.x0, shape.y0, shape.x1, shape.y1)
    if isinstance(shape, Segment):
        xs, ys = (shape.start.x, shape.end.x), (shape.start.y, shape.end.y)
        return (min(xs), min(ys), max(xs), max(ys))
    return (shape.x, shape.y, shape.x, shape.y)


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def clip_line(
    x0: float, y0: float, x1: float, y1: float, rect: tuple[float, float, float, float]
) -> tuple[float, float, float, float] | None:
    """Liang-Barsky: the part of a segment inside ``rect``, or None (never raises)."""
    if not _finite(x0, y0, x1, y1):
        return None
    dx, dy = x1 - x0, y1 - y0
    if not _finite(dx, dy):
        # Scale down so the arithmetic stays finite; the direction is kept.
        x0, y0, x1, y1 = x0 / 4.0, y0 / 4.0, x1 / 4.0, y1 / 4.0
        rect = (rect[0] / 4.0, rect[1] / 4.0, rect[2] / 4.0, rect[3] / 4.0)
        clipped = clip_line(x0, y0, x1, y1, rect)
        return None if clipped is None else tuple(4.0 * v for v in clipped)  # type: ignore[return-value]
    lo, hi = 0.0, 1.0
    left, top, right, bottom = rect
    for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        if p == 0.0:
            if q < 0.0:
                return None
            continue
        t = q / p
        if p < 0.0:
            if t > hi:
                return None
            lo = max(lo, t)
        else:
            if t < lo:
                return None
            hi = min(hi, t)
    if lo > hi:
        return None
    return (x0 + lo * dx, y0 + lo * dy, x0 + hi * dx, y0 + hi * dy)


# --------------------------------------------------------------------------- the model


def _label_key(key: str | None) -> str:
    if key is None:
        return ""
    text = " ".join(str(key).split())
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def connector_label(match: Any, shape_kind: str | None) -> str:
    """``IoU 0.82`` for boxes, ``sim 0.71 · 12.3 px`` for points and segments."""
    if match.iou is not None or shape_kind == "bbox":
        value = match.iou if match.iou is not None else match.similarity
        return f"IoU {value:.2f}"
    text = f"sim {match.similarity:.2f}"
    if match.distance is not None:
        text += f" · {match.distance:.1f} px"
    return text


def _canvas_from_shapes(shapes: Iterable[Box | Point | Segment]) -> tuple[int, int] | None:
    right = bottom = None
    for shape in shapes:
        _, _, x1, y1 = shape_bounds(shape)
        if _finite(x1, y1) and 0 < x1 < _MAX_CANVAS and 0 < y1 < _MAX_CANVAS:
            right = x1 if right is None else max(right, x1)
            bottom = y1 if bottom is None else max(bottom, y1)
    if right is None or bottom is None:
        return None
    return (int(math.ceil(right * 1.1)) + 8, int(math.ceil(bottom * 1.1)) + 8)


def _clamp_size(size: tuple[float, float]) -> tuple[int, int]:
    w, h = size
    return (
        int(min(max(round(w), _MIN_CANVAS), _MAX_CANVAS)),
        int(min(max(round(h), _MIN_CANVAS), _MAX_CANVAS)),
    )


def _resolve_canvas(image_size, fallback_size, shapes) -> tuple[tuple[int, int], str]:
    if image_size is not None:
        return (max(1, int(image_size[0])), max(1, int(image_size[1]))), "image"
    if fallback_size is not None:
        w, h = fallback_size
        if _finite(w, h) and w > 0 and h > 0:
            return _clamp_size((w, h)), "metadata"
    from_shapes = _canvas_from_shapes(shapes)
    if from_shapes is not None:
        return _clamp_size(from_shapes), "shapes"
    return DEFAULT_CANVAS, "default"


def build_layers(
    predicted: Any,
    ground_truth: Any,
    match: Any,
    *,
    half_life_px: float | None = None,
    image_size: tuple[float, float] | None = None,
    fallback_size: tuple[float, float] | None = None,
    reason: str = "",
) -> OverlayModel:
    """The layer model from parsed annotations and their ``MatchResult`` (any may be None).

    ``image_size`` is the real image's (canvas = image); ``fallback_size`` is the
    metadata size used for a blank canvas when there is no image.
    """
    pred_shapes = predicted.shapes() if predicted is not None else []
    gt_shapes = ground_truth.shapes() if ground_truth is not None else []
    (width, height), source = _resolve_canvas(
        image_size, fallback_size, [s for _, _, s in pred_shapes] + [s for _, _, s in gt_shapes]
    )
    reference = ground_truth if ground_truth is not None else predicted
    model = OverlayModel(
        width,
        height,
        source,
        shape_kind=getattr(reference, "shape", None),
        collection=getattr(reference, "collection", None),
        half_life_px=half_life_px,
    )
    if reason:
        model.notes.append(reason)
    collection = model.collection
    numbered = collection == "sequence"
    keyed = collection in ("map", "set_map")

    matched_pred = {(m.key, m.pred_index) for m in match.matches} if match is not None else set()
    matched_gt = {(m.key, m.gt_index) for m in match.matches} if match is not None else set()
    missing_keys = set(match.missing_keys) if match is not None else set()
    extra_keys = set(match.extra_keys) if match is not None else set()
    group_sizes_gt = {k: len(g) for k, g in ground_truth.groups} if ground_truth is not None else {}
    group_sizes_pred = {k: len(g) for k, g in predicted.groups} if predicted is not None else {}

    def role_label(key: str | None, index: int, sizes: dict) -> str:
        if numbered:
            return f"[{index}]"
        if keyed:
            text = _label_key(key)
            return f"{text}[{index}]" if sizes.get(key, 1) > 1 else text
        return ""

    # Ground truth: matched, or missed (everything is missed when nothing was matched).
    for key, index, shape in gt_shapes:
        bounds = shape_bounds(shape)
        if (key, index) in matched_gt:
            model.marks.append(ShapeMark(LAYER_GROUND_TRUTH, shape, key, index, "gt"))
        else:
            model.marks.append(ShapeMark(LAYER_MISSED, shape, key, index, "gt"))
            text = "missed" if key is None else f"missed '{_label_key(key)}'"
            if key in missing_keys:
                text = f"missed key '{_label_key(key)}'"
            model.tags.append(Tag(LAYER_MISSED, text, bounds, BOTTOM_LEFT, STYLE_MISSED))
        label = role_label(key, index, group_sizes_gt)
        if label:
            model.tags.append(Tag(LAYER_LABELS, label, bounds, TOP_LEFT, STYLE_GROUND_TRUTH))
        if half_life_px is not None and math.isfinite(half_life_px) and half_life_px > 0:
            if isinstance(shape, Point):
                model.rings.append(Ring(LAYER_HALF_LIFE, (shape.x, shape.y), half_life_px))
            elif isinstance(shape, Segment):
                model.rings.append(Ring(LAYER_HALF_LIFE, (shape.start.x, shape.start.y), half_life_px))
                model.rings.append(Ring(LAYER_HALF_LIFE, (shape.end.x, shape.end.y), half_life_px))

    for key, index, shape in pred_shapes:
        bounds = shape_bounds(shape)
        if (key, index) in matched_pred:
            model.marks.append(ShapeMark(LAYER_PREDICTION, shape, key, index, "pred"))
        else:
            model.marks.append(ShapeMark(LAYER_UNMATCHED, shape, key, index, "pred", crossed=True))
            text = f"extra key '{_label_key(key)}'" if key in extra_keys else "unmatched"
            model.tags.append(Tag(LAYER_UNMATCHED, text, bounds, TOP_RIGHT, STYLE_UNMATCHED))
        label = role_label(key, index, group_sizes_pred)
        if label:
            model.tags.append(Tag(LAYER_LABELS, label, bounds, BOTTOM_RIGHT, STYLE_PREDICTION))

    if match is not None and predicted is not None and ground_truth is not None:
        for m in match.matches:
            pred_group = predicted.group(m.key)
            gt_group = ground_truth.group(m.key)
            if m.pred_index >= len(pred_group) or m.gt_index >= len(gt_group):
                continue
            start = shape_center(pred_group[m.pred_index])
            end = shape_center(gt_group[m.gt_index])
            label = connector_label(m, model.shape_kind)
            model.connectors.append(
                Connector(LAYER_MATCHES, start, end, label, m.key, m.pred_index, m.gt_index, m.similarity)
            )
            mid = (_half(start[0], end[0]), _half(start[1], end[1]))
            model.tags.append(Tag(LAYER_MATCHES, label, (*mid, *mid), CENTER, STYLE_CONNECTOR))

    outside = [
        f"{'prediction' if mark.side == 'pred' else 'ground truth'} {_describe(mark)}"
        for mark in model.marks
        if not _visible(shape_bounds(mark.shape), model.width, model.height)
    ]
    if outside:
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        model.notes.append(f"outside the {model.width}x{model.height} canvas: {shown}")
    return model


def _describe(mark: ShapeMark) -> str:
    where = f"'{_label_key(mark.key)}'" if mark.key is not None else ""
    return f"{where}[{mark.index}]"


def _visible(bounds: tuple[float, float, float, float], width: int, height: int) -> bool:
    x0, y0, x1, y1 = bounds
    return _finite(x0, y0, x1, y1) and x1 >= 0 and y1 >= 0 and x0 <= width and y0 <= height


def build_overlay(evaluation: Any, image_size: tuple[int, int] | None = None) -> OverlayModel:
    """The layer model of one :class:`~scoring.trace.TraceEvaluation` (its own pairings, nothing recomputed).

    ``image_size`` is the size of the image the overlay is drawn on (None: blank
    canvas of the evaluation's metadata size, else of the shapes' extent).
    """
    annotation = evaluation.annotation
    return build_layers(
        annotation.predicted,
        annotation.ground_truth,
        annotation.match,
        half_life_px=annotation.half_life_px,
        image_size=image_size,
        fallback_size=evaluation.image_size,
        reason=annotation.reason,
    )


# --------------------------------------------------------------------------- Pillow renderer


@functools.lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's bundled default font (no files, no downloads)."""
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, ValueError, OSError, ImportError):  # pragma: no cover - Pillow without FreeType
        return ImageFont.load_default()


def line_width_for(width: int, height: int) -> int:
    return max(2, round(min(width, height) / 300))


def font_size_for(width: int, height: int) -> int:
    return int(min(max(round(min(width, height) / 42), 11), 28))


class _Painter:
    """Draws primitives onto one image, clipped to a margin around it."""

    def __init__(self, image: Image.Image, line_width: int, font_size: int) -> None:
        self.image = image
        self.draw = ImageDraw.Draw(image)
        self.w, self.h = image.size
        self.lw = line_width
        margin = 4 * line_width + 8
        self.rect = (-margin, -margin, self.w + margin, self.h + margin)
        self.font = _font(font_size)
        self.marker = 2 * line_width + 3

    # -- lines ------------------------------------------------------------

    def line(self, x0, y0, x1, y1, style: Style, width: int | None = None) -> None:
        clipped = clip_line(x0, y0, x1, y1, self.rect)
        if clipped is None:
            return
        width = width or max(1, round(self.lw * style.width_scale))
        if style.dash == "solid":
            self.draw.line(clipped, fill=style.colour, width=width)
        else:
            self._dashed(clipped, style, width)

    def _dashed(self, clipped, style: Style, width: int) -> None:
        x0, y0, x1, y1 = clipped
        length = math.hypot(x1 - x0, y1 - y0)
        if length == 0.0:
            return
        on, off = (3 * width + 4, 2 * width + 2) if style.dash == "dash" else (width, width + 2)
        period = on + off
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        draw_line, colour = self.draw.line, style.colour
        position = 0.0
        while position < length:
            end = min(position + on, length)
            draw_line(
                (x0 + ux * position, y0 + uy * position, x0 + ux * end, y0 + uy * end), fill=colour, width=width
            )
            position += period

    def polyline(self, points: Sequence[tuple[float, float]], style: Style) -> None:
        for (ax, ay), (bx, by) in zip(points, points[1:], strict=False):
            self.line(ax, ay, bx, by, style)

    # -- shapes -----------------------------------------------------------

    def box(self, box: Box, style: Style) -> None:
        x0, y0, x1, y1 = box
        self.polyline([(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)], style)

    def point(self, point: Point, style: Style) -> None:
        x, y = point
        r = self.marker
        if not (_finite(x, y) and -r <= x <= self.w + r and -r <= y <= self.h + r):
            return
        fill, outline = style.colour, (0, 0, 0)
        if style.marker == "diamond":
            self.draw.polygon([(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)], fill=fill, outline=outline)
        elif style.marker == "circle-open":
            self.draw.ellipse((x - r - 1, y - r - 1, x + r + 1, y + r + 1), outline=fill, width=max(2, self.lw))
        elif style.marker == "x":
            pass  # the cross is drawn by cross()
        else:
            self.draw.ellipse((x - r, y - r, x + r, y + r), fill=fill, outline=outline)

    def segment(self, segment: Segment, style: Style) -> None:
        self.line(segment.start.x, segment.start.y, segment.end.x, segment.end.y, style)
        for end in (segment.start, segment.end):
            x, y = end
            r = max(2, self.marker - 2)
            if _finite(x, y) and -r <= x <= self.w + r and -r <= y <= self.h + r:
                self.draw.rectangle((x - r, y - r, x + r, y + r), outline=style.colour, width=max(1, self.lw - 1))

    def cross(self, shape: Box | Point | Segment, style: Style) -> None:
        """A red X: across a box, at a point, at a segment's middle."""
        solid = Style(style.colour, "solid", style.marker)
        if isinstance(shape, Box):
            self.line(shape.x0, shape.y0, shape.x1, shape.y1, solid)
            self.line(shape.x0, shape.y1, shape.x1, shape.y0, solid)
            return
        x, y = shape_center(shape)
        r = self.marker + 2
        self.line(x - r, y - r, x + r, y + r, solid, width=self.lw + 1)
        self.line(x - r, y + r, x + r, y - r, solid, width=self.lw + 1)

    def outline(self, mark: ShapeMark, style: Style) -> None:
        shape = mark.shape
        if isinstance(shape, Box):
            self.box(shape, style)
        elif isinstance(shape, Segment):
            self.segment(shape, style)
        else:
            self.point(shape, style)
        if mark.crossed:
            self.cross(shape, style)

    def ring(self, ring: Ring, style: Style) -> None:
        (x, y), r = ring.center, ring.radius
        if not _finite(x, y, r) or r > 4 * max(self.w, self.h):
            return
        if x + r < 0 or y + r < 0 or x - r > self.w or y - r > self.h:
            return
        # A dotted ring: short chords around the circle (draw.arc is ~50x slower per dash).
        width = max(1, round(self.lw * style.width_scale))
        steps = 2 * max(8, min(90, int(2 * math.pi * r / 12)))
        angles = [2 * math.pi * i / steps for i in range(steps + 1)]
        points = [(x + r * math.cos(a), y + r * math.sin(a)) for a in angles]
        draw_line, colour = self.draw.line, style.colour
        for i in range(0, steps, 2):
            draw_line((points[i], points[i + 1]), fill=colour, width=width)

    # -- text -------------------------------------------------------------

    def tag(self, tag: Tag) -> None:
        x0, y0, x1, y1 = tag.around
        if not _visible((x0, y0, x1, y1), self.w, self.h):
            return
        left, top, right, bottom = _text_box(self.font, tag.text)
        tw, th = right - left + 6, bottom - top + 4
        gap = self.lw + 1
        if tag.placement == TOP_LEFT:
            px, py = x0, y0 - th - gap
        elif tag.placement == TOP_RIGHT:
            px, py = x1 - tw, y0 - th - gap
        elif tag.placement == BOTTOM_LEFT:
            px, py = x0, y1 + gap
        elif tag.placement == BOTTOM_RIGHT:
            px, py = x1 - tw, y1 + gap
        else:
            px, py = _half(x0, x1) - tw / 2, _half(y0, y1) - th / 2
        px = min(max(px, 0), max(self.w - tw, 0))
        py = min(max(py, 0), max(self.h - th, 0))
        colour = tag.style.colour
        self.draw.rectangle((px, py, px + tw, py + th), fill=colour)
        text_colour = (0, 0, 0) if _luminance(colour) > 140 else (255, 255, 255)
        self.draw.text((px + 3 - left, py + 2 - top), tag.text, fill=text_colour, font=self.font)


@functools.lru_cache(maxsize=4096)
def _text_box(font: Any, text: str) -> tuple[int, int, int, int]:
    """``font.getbbox(text)``, cached: labels repeat within a picture and across reruns."""
    return tuple(int(v) for v in font.getbbox(text))  # type: ignore[return-value]


def _luminance(colour: tuple[int, int, int]) -> float:
    r, g, b = colour
    return 0.299 * r + 0.587 * g + 0.114 * b


def blank_canvas(width: int, height: int) -> Image.Image:
    """The stand-in for a missing image: light grey with a faint border."""
    image = Image.new("RGB", (width, height), (236, 238, 242))
    ImageDraw.Draw(image).rectangle((0, 0, width - 1, height - 1), outline=(190, 194, 200))
    return image


def render_pil(
    model: OverlayModel,
    image: Image.Image | None = None,
    layers: Iterable[str] = ALL_LAYERS,
    *,
    line_width: int | None = None,
    font_size: int | None = None,
) -> Image.Image:
    """The overlay drawn onto a copy of ``image`` (or a blank canvas of the model's size)."""
    visible = frozenset(layers)
    if image is None:
        canvas = blank_canvas(model.width, model.height)
    else:
        canvas = image.convert("RGB") if image.mode != "RGB" else image.copy()
    w, h = canvas.size
    painter = _Painter(canvas, line_width or line_width_for(w, h), font_size or font_size_for(w, h))
    if LAYER_HALF_LIFE in visible:
        for ring in model.rings:
            painter.ring(ring, STYLES[LAYER_HALF_LIFE])
    for layer in (LAYER_GROUND_TRUTH, LAYER_MISSED, LAYER_PREDICTION, LAYER_UNMATCHED):
        if layer in visible:
            style = STYLES[layer]
            for mark in model.marks:
                if mark.layer == layer:
                    painter.outline(mark, style)
    if LAYER_MATCHES in visible:
        for connector in model.connectors:
            painter.line(*connector.start, *connector.end, STYLES[LAYER_MATCHES])
    for tag in model.tags:
        if tag.layer in visible:
            painter.tag(tag)
    return canvas


def png_bytes(image: Image.Image, compress_level: int = 1) -> bytes:
    """PNG bytes of ``image`` (for the download button)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


def render_png(
    model: OverlayModel, image: Image.Image | None = None, layers: Iterable[str] = ALL_LAYERS
) -> bytes:
    return png_bytes(render_pil(model, image, layers))


def thumbnail(
    model: OverlayModel, image: Image.Image | None = None, max_side: int = 320, layers: Iterable[str] = ALL_LAYERS
) -> Image.Image:
    """A small overlaid picture for the gallery (drawn at full size, then shrunk).

    Lines and labels are drawn thicker in proportion, so they stay visible after shrinking.
    """
    w, h = image.size if image is not None else (model.width, model.height)
    shrink = max(w, h) / max_side
    line_width = max(line_width_for(w, h), round(2.5 * shrink))
    font_size = max(font_size_for(w, h), round(11 * shrink))
    picture = render_pil(model, image, layers, line_width=line_width, font_size=font_size)
    picture.thumbnail((max_side, max_side))
    return picture


# --------------------------------------------------------------------------- plotly figure


def plotly_safe(text: str) -> str:
    """Text for plotly labels: plotly reads ``<b>``, ``<a href>`` etc., so escape markup."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def image_data_uri(image: Image.Image) -> str:
    """A data URI of ``image`` for a plotly layout image (JPEG for opaque photos: fast, small)."""
    buffer = io.BytesIO()
    if image.mode in ("RGBA", "LA", "P"):
        image.save(buffer, format="PNG", compress_level=1)
        mime = "image/png"
    else:
        image.convert("RGB").save(buffer, format="JPEG", quality=90)
        mime = "image/jpeg"
    return f"data:{mime};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


_PLOTLY_DASH = {"solid": "solid", "dash": "dash", "dot": "dot"}
#: Coordinates are clamped to this many canvas sizes around the image in the figure.
_PLOTLY_REACH = 50


def _clamp_for_plotly(value: float, size: int) -> float:
    reach = _PLOTLY_REACH * max(size, 1)
    if not math.isfinite(value):
        return reach if value > 0 else -reach
    return min(max(value, -reach), reach)


def _path_of(shape: Box | Point | Segment, w: int, h: int) -> list[tuple[float, float]]:
    def c(x: float, y: float) -> tuple[float, float]:
        return (_clamp_for_plotly(x, w), _clamp_for_plotly(y, h))

    if isinstance(shape, Box):
        x0, y0, x1, y1 = shape
        return [c(x0, y0), c(x1, y0), c(x1, y1), c(x0, y1), c(x0, y0)]
    if isinstance(shape, Segment):
        return [c(shape.start.x, shape.start.y), c(shape.end.x, shape.end.y)]
    return [c(shape.x, shape.y)]


def _hover(mark: ShapeMark) -> str:
    who = "prediction" if mark.side == "pred" else "ground truth"
    where = f" '{_label_key(mark.key)}'" if mark.key is not None else ""
    coords = ", ".join(f"{v:.1f}" for v in _flat_coords(mark.shape))
    return plotly_safe(f"{LAYER_TITLES[mark.layer]}: {who}{where}[{mark.index}] ({coords})")


def _flat_coords(shape: Box | Point | Segment) -> list[float]:
    if isinstance(shape, Segment):
        return [shape.start.x, shape.start.y, shape.end.x, shape.end.y]
    return list(shape)


_ANCHORS = {
    TOP_LEFT: ("left", "bottom"),
    TOP_RIGHT: ("right", "bottom"),
    BOTTOM_LEFT: ("left", "top"),
    BOTTOM_RIGHT: ("right", "top"),
    CENTER: ("center", "middle"),
}


def plotly_figure(
    model: OverlayModel,
    image: Image.Image | None = None,
    layers: Iterable[str] = ALL_LAYERS,
    *,
    height: int = 640,
    image_uri: str | None = None,
) -> dict[str, Any]:
    """A plotly figure (as a dict: ``st.plotly_chart`` and ``go.Figure`` take it) with zoom and pan.

    Built from the same model as :func:`render_pil`. Each layer is one legend
    group, so clicking the legend toggles it too. ``image_uri`` (see
    :func:`image_data_uri`) avoids re-encoding the image on every rerun.
    """
    visible = frozenset(layers)
    w, h = model.width, model.height
    traces: list[dict[str, Any]] = []
    width_px = 2.5

    def add_shapes(layer: str) -> None:
        style = STYLES[layer]
        marks = [m for m in model.marks if m.layer == layer]
        if not marks:
            return
        name = LAYER_TITLES[layer]
        lines_x: list[float | None] = []
        lines_y: list[float | None] = []
        hover_lines: list[str | None] = []
        point_x, point_y, point_text = [], [], []
        for mark in marks:
            path = _path_of(mark.shape, w, h)
            text = _hover(mark)
            if len(path) == 1:
                point_x.append(path[0][0])
                point_y.append(path[0][1])
                point_text.append(text)
                continue
            lines_x.extend([p[0] for p in path] + [None])
            lines_y.extend([p[1] for p in path] + [None])
            hover_lines.extend([text] * len(path) + [None])
            if mark.crossed and isinstance(mark.shape, Box):
                lines_x.extend([path[0][0], path[2][0], None, path[3][0], path[1][0], None])
                lines_y.extend([path[0][1], path[2][1], None, path[3][1], path[1][1], None])
                hover_lines.extend([text, text, None, text, text, None])
            elif mark.crossed:
                cx, cy = shape_center(mark.shape)
                point_x.append(_clamp_for_plotly(cx, w))
                point_y.append(_clamp_for_plotly(cy, h))
                point_text.append(text)
        if lines_x:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers" if model.shape_kind == "segment" else "lines",
                    "x": lines_x,
                    "y": lines_y,
                    "name": name,
                    "legendgroup": layer,
                    "line": {"color": style.hex, "width": width_px, "dash": _PLOTLY_DASH[style.dash]},
                    "marker": {"symbol": "square-open", "size": 7, "color": style.hex},
                    "hovertext": hover_lines,
                    "hoverinfo": "text",
                    "connectgaps": False,
                }
            )
        if point_x:
            symbol = {"x": "x-thin-open", "circle-open": "circle-open"}.get(style.marker, style.marker)
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": point_x,
                    "y": point_y,
                    "name": name,
                    "legendgroup": layer,
                    "showlegend": not lines_x,
                    "marker": {
                        "symbol": symbol,
                        "size": 14 if style.marker in ("x", "circle-open") else 11,
                        "color": style.hex,
                        "line": {"color": style.hex if style.marker in ("x", "circle-open") else "#000000",
                                 "width": 3 if style.marker in ("x", "circle-open") else 1},
                    },
                    "hovertext": point_text,
                    "hoverinfo": "text",
                }
            )

    if LAYER_HALF_LIFE in visible and model.rings:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for ring in model.rings:
            (cx, cy), r = ring.center, ring.radius
            for i in range(49):
                angle = 2 * math.pi * i / 48
                xs.append(_clamp_for_plotly(cx + r * math.cos(angle), w))
                ys.append(_clamp_for_plotly(cy + r * math.sin(angle), h))
            xs.append(None)
            ys.append(None)
        style = STYLES[LAYER_HALF_LIFE]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": xs,
                "y": ys,
                "name": LAYER_TITLES[LAYER_HALF_LIFE] + (f" ({model.half_life_px:.1f} px)" if model.half_life_px else ""),
                "legendgroup": LAYER_HALF_LIFE,
                "line": {"color": style.hex, "width": 1.5, "dash": "dot"},
                "hoverinfo": "skip",
            }
        )
    for layer in (LAYER_GROUND_TRUTH, LAYER_MISSED, LAYER_PREDICTION, LAYER_UNMATCHED):
        if layer in visible:
            add_shapes(layer)
    if LAYER_MATCHES in visible and model.connectors:
        xs, ys, texts = [], [], []
        for connector in model.connectors:
            xs.extend([_clamp_for_plotly(connector.start[0], w), _clamp_for_plotly(connector.end[0], w), None])
            ys.extend([_clamp_for_plotly(connector.start[1], h), _clamp_for_plotly(connector.end[1], h), None])
            where = f" '{_label_key(connector.key)}'" if connector.key is not None else ""
            text = plotly_safe(f"pred{where}[{connector.pred_index}] ↔ gt{where}[{connector.gt_index}]: {connector.label}")
            texts.extend([text, text, None])
        style = STYLES[LAYER_MATCHES]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": xs,
                "y": ys,
                "name": LAYER_TITLES[LAYER_MATCHES],
                "legendgroup": LAYER_MATCHES,
                "line": {"color": style.hex, "width": 2},
                "hovertext": texts,
                "hoverinfo": "text",
            }
        )

    annotations = []
    for tag in model.tags:
        if tag.layer not in visible:
            continue
        x0, y0, x1, y1 = tag.around
        xanchor, yanchor = _ANCHORS[tag.placement]
        x = {"left": x0, "right": x1, "center": _half(x0, x1)}[xanchor]
        y = {"bottom": y0, "top": y1, "middle": _half(y0, y1)}[yanchor]
        if not _visible((x, y, x, y), w, h):
            continue
        annotations.append(
            {
                "x": x,
                "y": y,
                "xref": "x",
                "yref": "y",
                "text": plotly_safe(tag.text),
                "showarrow": False,
                "xanchor": xanchor,
                "yanchor": yanchor,
                "font": {"size": 12, "color": "#000000" if _luminance(tag.style.colour) > 140 else "#ffffff"},
                "bgcolor": tag.style.hex,
                "borderpad": 2,
            }
        )

    images = []
    shapes = []
    if image is not None or image_uri is not None:
        images.append(
            {
                "source": image_uri if image_uri is not None else image_data_uri(image),
                "xref": "x",
                "yref": "y",
                "x": 0,
                "y": 0,
                "sizex": w,
                "sizey": h,
                "sizing": "stretch",
                "layer": "below",
            }
        )
    else:
        shapes.append(
            {
                "type": "rect",
                "x0": 0,
                "y0": 0,
                "x1": w,
                "y1": h,
                "fillcolor": "#eceef2",
                "line": {"color": "#bec2c8", "width": 1},
                "layer": "below",
            }
        )
    layout = {
        "xaxis": {"range": [0, w], "showgrid": False, "zeroline": False, "constrain": "domain"},
        "yaxis": {
            "range": [h, 0],
            "showgrid": False,
            "zeroline": False,
            "scaleanchor": "x",
            "scaleratio": 1,
            "constrain": "domain",
        },
        "images": images,
        "shapes": shapes,
        "annotations": annotations,
        "dragmode": "pan",
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
    }
    return {"data": traces, "layout": layout}


#: ``config`` for ``st.plotly_chart``: wheel zoom, pan by default, PNG from the mode bar.
PLOTLY_CONFIG: dict[str, Any] = {"scrollZoom": True, "displaylogo": False}


__all__ = [
    "ALL_LAYERS",
    "LAYERS",
    "LAYER_TITLES",
    "PLOTLY_CONFIG",
    "STYLES",
    "Connector",
    "OverlayModel",
    "Ring",
    "ShapeMark",
    "Style",
    "Tag",
    "build_layers",
    "build_overlay",
    "clip_line",
    "connector_label",
    "image_data_uri",
    "plotly_figure",
    "plotly_safe",
    "png_bytes",
    "render_pil",
    "render_png",
    "thumbnail",
]
