"""The overlay's layer model: what to draw, on which layer, in which style, and where labels go.

:func:`build_overlay` reads *only* the scorer's own explanation (a
:class:`scoring.verifier.trace.TraceEvaluation`: the parsed shapes, the pairings of its
``MatchResult`` and its half-life), never re-matching anything, and turns it into
a flat list of drawing primitives, each on one named layer (see
:mod:`dashboard.overlay` for the table of layers and styles). The renderers
(:mod:`dashboard.overlay.pil`, :mod:`dashboard.overlay.figure`) only draw it;
:func:`place_tags` puts each label next to its shape, never on the geometry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from scoring.verifier import Box, Point, Segment

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
    """How one kind of mark looks: RGB colour, dash pattern and point marker.

    Roles differ in dash and marker as well as colour, so they stay apart for
    readers who cannot tell the colours apart (and in greyscale prints).
    """

    colour: tuple[int, int, int]
    dash: str  # "solid", "dash", "dot" or "dashdot"
    marker: str  # point marker: "circle", "diamond", "x", "circle-open"
    width_scale: float = 1.0

    @property
    def hex(self) -> str:
        r, g, b = self.colour
        return f"#{r:02x}{g:02x}{b:02x}"


#: The Okabe-Ito palette (colour-blind safe): the colours the roles take.
OKABE_ITO: dict[str, tuple[int, int, int]] = {
    "orange": (230, 159, 0),
    "sky_blue": (86, 180, 233),
    "bluish_green": (0, 158, 115),
    "yellow": (240, 228, 66),
    "blue": (0, 114, 178),
    "vermillion": (213, 94, 0),
    "reddish_purple": (204, 121, 167),
    "black": (0, 0, 0),
}

# Ground truth is drawn wider than the prediction on top of it, so a prediction lying on its
# ground truth still shows both: a solid band with the dashes inside.
STYLE_GROUND_TRUTH = Style(OKABE_ITO["bluish_green"], "solid", "circle", 1.75)
STYLE_PREDICTION = Style(OKABE_ITO["blue"], "dash", "diamond")
STYLE_UNMATCHED = Style(OKABE_ITO["vermillion"], "dashdot", "x")
STYLE_MISSED = Style(OKABE_ITO["reddish_purple"], "dot", "circle-open")
STYLE_CONNECTOR = Style(OKABE_ITO["orange"], "solid", "circle", 0.67)
STYLE_RING = Style(OKABE_ITO["bluish_green"], "dot", "circle", 0.5)

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

# Where a tag would rather sit around its shape's bounding box (the first place tried).
TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT, RIGHT, LEFT = "tl", "tr", "bl", "br", "r", "l"
TOP, BOTTOM, RIGHT_LOW, LEFT_LOW = "t", "b", "rl", "ll"
#: Every place a tag may take, in the order tried after its preferred one.
PLACEMENTS: tuple[str, ...] = (TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT, RIGHT, LEFT, TOP, BOTTOM, RIGHT_LOW,
                               LEFT_LOW)

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
    """A short text beside a rectangle ``(x0, y0, x1, y1)``; ``placement`` is the side tried first."""

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


def all_finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def clip_line(
    x0: float, y0: float, x1: float, y1: float, rect: tuple[float, float, float, float]
) -> tuple[float, float, float, float] | None:
    """Liang-Barsky: the part of a segment inside ``rect``, or None (never raises)."""
    if not all_finite(x0, y0, x1, y1):
        return None
    dx, dy = x1 - x0, y1 - y0
    if not all_finite(dx, dy):
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


def label_key(key: str | None) -> str:
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
        if all_finite(x1, y1) and 0 < x1 < _MAX_CANVAS and 0 < y1 < _MAX_CANVAS:
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
        if all_finite(w, h) and w > 0 and h > 0:
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
    gt_of_pred = {(m.key, m.pred_index): (m.key, m.gt_index) for m in match.matches} if match is not None else {}
    missing_keys = set(match.missing_keys) if match is not None else set()
    extra_keys = set(match.extra_keys) if match is not None else set()
    group_sizes_gt = {k: len(g) for k, g in ground_truth.groups} if ground_truth is not None else {}
    group_sizes_pred = {k: len(g) for k, g in predicted.groups} if predicted is not None else {}

    def role_label(key: str | None, index: int, sizes: dict) -> str:
        if numbered:
            return f"[{index}]"
        if keyed:
            text = label_key(key)
            return f"{text}[{index}]" if sizes.get(key, 1) > 1 else text
        return ""

    # Ground truth: matched, or missed (everything is missed when nothing was matched).
    for key, index, shape in gt_shapes:
        bounds = shape_bounds(shape)
        if (key, index) in matched_gt:
            model.marks.append(ShapeMark(LAYER_GROUND_TRUTH, shape, key, index, "gt"))
        else:
            model.marks.append(ShapeMark(LAYER_MISSED, shape, key, index, "gt"))
            text = "missed" if key is None else f"missed '{label_key(key)}'"
            if key in missing_keys:
                text = f"missed key '{label_key(key)}'"
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
            text = f"extra key '{label_key(key)}'" if key in extra_keys else "unmatched"
            model.tags.append(Tag(LAYER_UNMATCHED, text, bounds, TOP_RIGHT, STYLE_UNMATCHED))
        label = role_label(key, index, group_sizes_pred)
        partner = gt_of_pred.get((key, index))
        # A prediction matched to ground truth of the same role name is named once, on the ground truth.
        if label and (partner is None or role_label(*partner, group_sizes_gt) != label):
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
            # The IoU sits beside the pair's ground truth (never on the geometry).
            model.tags.append(Tag(LAYER_MATCHES, label, shape_bounds(gt_group[m.gt_index]), RIGHT, STYLE_CONNECTOR))

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
    where = f"'{label_key(mark.key)}'" if mark.key is not None else ""
    return f"{where}[{mark.index}]"


def _visible(bounds: tuple[float, float, float, float], width: int, height: int) -> bool:
    x0, y0, x1, y1 = bounds
    return all_finite(x0, y0, x1, y1) and x1 >= 0 and y1 >= 0 and x0 <= width and y0 <= height


def build_overlay(evaluation: Any, image_size: tuple[int, int] | None = None) -> OverlayModel:
    """The layer model of one :class:`~scoring.verifier.trace.TraceEvaluation` (its own pairings, nothing recomputed).

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




def ground_truth_overlay(evaluation: Any, image_size: tuple[int, int] | None = None) -> OverlayModel:
    """Only the ground truth of an explanation, drawn as ground truth (nothing is "missed"):
    what an instance asks for, independent of any one prediction."""
    annotation = evaluation.annotation
    ground_truth = annotation.ground_truth
    model = build_layers(None, ground_truth, None, image_size=image_size, fallback_size=evaluation.image_size)
    model.marks = [ShapeMark(LAYER_GROUND_TRUTH, m.shape, m.key, m.index, m.side) for m in model.marks]
    model.tags = [t for t in model.tags if t.layer == LAYER_LABELS]
    if ground_truth is None:
        model.notes.append("no ground-truth annotation to draw" + (f": {annotation.reason}" if annotation.reason else ""))
    return model


def source_size(image: Any) -> tuple[int, int] | None:
    """The size of the image *file* (the scorer's coordinate space), or None without an image.

    An image opened for display may be shrunk (``open_image(max_side=...)``); it then
    keeps its file's size in ``info["source_size"]``. Overlays are built in that
    space, so boxes land where the scorer put them whatever size the pixels are.
    """
    if image is None:
        return None
    width, height = image.info.get("source_size") or image.size
    return int(width), int(height)


def scaled(model: OverlayModel, width: int, height: int) -> OverlayModel:
    """``model`` redrawn for a canvas of ``width`` x ``height`` (a shrunk copy of its image).

    Every coordinate is scaled; texts, layers and pairings stay. Ring radii scale with the
    mean of the two factors (a shrink keeps the aspect ratio to within a pixel).
    """
    return cropped(model, (0.0, 0.0, float(model.width), float(model.height)), width, height)


def cropped(model: OverlayModel, region: tuple[float, float, float, float], width: int, height: int) -> OverlayModel:
    """``model`` redrawn for a canvas of ``width`` x ``height`` showing only ``region``
    (``x0, y0, x1, y1`` in the model's pixels): a zoomed patch around one object."""
    x0, y0, x1, y1 = region
    sx, sy = width / max(x1 - x0, 1e-9), height / max(y1 - y0, 1e-9)
    if (sx, sy, x0, y0) == (1.0, 1.0, 0.0, 0.0) and (width, height) == (model.width, model.height):
        return model
    mean = (sx + sy) / 2.0

    def x(value: float) -> float:
        return (value - x0) * sx

    def y(value: float) -> float:
        return (value - y0) * sy

    return replace(
        model,
        width=width,
        height=height,
        half_life_px=None if model.half_life_px is None else model.half_life_px * mean,
        marks=[replace(m, shape=_moved_shape(m.shape, x, y)) for m in model.marks],
        connectors=[replace(c, start=(x(c.start[0]), y(c.start[1])), end=(x(c.end[0]), y(c.end[1])))
                    for c in model.connectors],
        rings=[replace(r, center=(x(r.center[0]), y(r.center[1])), radius=r.radius * mean) for r in model.rings],
        tags=[replace(t, around=(x(t.around[0]), y(t.around[1]), x(t.around[2]), y(t.around[3]))) for t in model.tags],
        notes=list(model.notes),
    )


def _moved_shape(shape: Box | Point | Segment, x: Callable[[float], float],
                 y: Callable[[float], float]) -> Box | Point | Segment:
    if isinstance(shape, Box):
        return Box(x(shape.x0), y(shape.y0), x(shape.x1), y(shape.y1))
    if isinstance(shape, Segment):
        return Segment(_moved_shape(shape.start, x, y), _moved_shape(shape.end, x, y))
    return Point(x(shape.x), y(shape.y))


# --------------------------------------------------------------------------- legend


@dataclass(frozen=True, slots=True)
class LegendEntry:
    layer: str
    title: str
    style: Style


#: What the legend calls each layer, in legend order (the style is in the sample drawn beside it).
LEGEND_TITLES: dict[str, str] = {
    LAYER_GROUND_TRUTH: "ground truth",
    LAYER_MISSED: "missed ground truth",
    LAYER_PREDICTION: "prediction",
    LAYER_UNMATCHED: "extra prediction",
    LAYER_MATCHES: "matched pair · IoU / similarity",
    LAYER_HALF_LIFE: "one half-life",
}


def legend_entries(model: OverlayModel, layers: Iterable[str] = ALL_LAYERS) -> list[LegendEntry]:
    """The legend of what is on the picture: one entry per visible layer that holds something."""
    visible = frozenset(layers)
    return [
        LegendEntry(layer, title, STYLES[layer])
        for layer, title in LEGEND_TITLES.items()
        if layer in visible and model.count(layer)
    ]


def legend_text(layers: Iterable[str] = tuple(LEGEND_TITLES)) -> str:
    """The styles in words (for a caption): "ground truth: green, solid · …"."""
    names = {v: k.replace("_", " ") for k, v in OKABE_ITO.items()}
    dashes = {"solid": "solid", "dash": "dashed", "dot": "dotted", "dashdot": "dash-dot"}
    words = []
    for layer in layers:
        if layer in LEGEND_TITLES:
            style = STYLES[layer]
            extra = " with an X" if layer == LAYER_UNMATCHED else ""
            words.append(f"{LEGEND_TITLES[layer]}: {names[style.colour]}, {dashes[style.dash]}{extra}")
    return " · ".join(words)


# --------------------------------------------------------------------------- label placement

Rect = tuple[float, float, float, float]

#: Points sampled along each line when testing whether a label would cover it.
_LINE_SAMPLES = 24
#: Cost of a place: off the canvas, over a shape, over another label.
_COST_OFF_CANVAS, _COST_GEOMETRY, _COST_LABEL = 1000.0, 10.0, 5.0


@dataclass(frozen=True, slots=True)
class PlacedTag:
    """A tag and the rectangle its label box takes, in canvas pixels."""

    tag: Tag
    rect: Rect


def _candidates(around: Rect, size: tuple[float, float], gap: float, preferred: str) -> np.ndarray:
    """The label box at every place around ``around``, the preferred place first: a (k, 4) array."""
    x0, y0, x1, y1 = around
    tw, th = size
    corner = {
        TOP_LEFT: (x0, y0 - gap - th),
        TOP_RIGHT: (x1 - tw, y0 - gap - th),
        BOTTOM_LEFT: (x0, y1 + gap),
        BOTTOM_RIGHT: (x1 - tw, y1 + gap),
        RIGHT: (x1 + gap, y0),
        LEFT: (x0 - gap - tw, y0),
        TOP: (_half(x0, x1) - tw / 2, y0 - gap - th),
        BOTTOM: (_half(x0, x1) - tw / 2, y1 + gap),
        RIGHT_LOW: (x1 + gap, y1 - th),
        LEFT_LOW: (x0 - gap - tw, y1 - th),
    }
    order = [preferred] + [p for p in PLACEMENTS if p != preferred]
    corners = np.array([corner[p] for p in order if p in corner], dtype=float)
    return np.column_stack([corners, corners[:, 0] + tw, corners[:, 1] + th])


def _covering(rects: np.ndarray, candidates: np.ndarray, *, strict: bool = False) -> np.ndarray:
    """(k, n): which of ``rects`` (n, 4) each candidate (k, 4) overlaps (``strict``: more than an edge)."""
    c = candidates[:, None, :]
    below, above = (np.less, np.greater) if strict else (np.less_equal, np.greater_equal)
    return below(rects[None, :, 0], c[..., 2]) & above(rects[None, :, 2], c[..., 0]) & \
        below(rects[None, :, 1], c[..., 3]) & above(rects[None, :, 3], c[..., 1])


class _Obstacles:
    """The drawn geometry as arrays: filled rectangles (boxes, point markers) and sampled lines."""

    def __init__(self, model: OverlayModel, visible: frozenset[str], point_radius: float) -> None:
        rects: list[Rect] = []
        lines: list[tuple[float, float, float, float]] = []
        for mark in model.marks:
            if mark.layer not in visible:
                continue
            shape = mark.shape
            if isinstance(shape, Box):
                rects.append(tuple(shape))
            elif isinstance(shape, Segment):
                lines.append((shape.start.x, shape.start.y, shape.end.x, shape.end.y))
            else:
                r = point_radius
                rects.append((shape.x - r, shape.y - r, shape.x + r, shape.y + r))
        if LAYER_MATCHES in visible:
            lines.extend((*c.start, *c.end) for c in model.connectors)
        with np.errstate(all="ignore"):
            self.rects = _finite_rows(np.array(rects, dtype=float).reshape(-1, 4))
            segments = _finite_rows(np.array(lines, dtype=float).reshape(-1, 4))
            t = np.linspace(0.0, 1.0, _LINE_SAMPLES)
            self.line_x = segments[:, :1] + (segments[:, 2:3] - segments[:, :1]) * t
            self.line_y = segments[:, 1:2] + (segments[:, 3:4] - segments[:, 1:2]) * t
            self.line_bounds = np.column_stack([self.line_x.min(axis=1), self.line_y.min(axis=1),
                                                self.line_x.max(axis=1), self.line_y.max(axis=1)])

    def hits(self, candidates: np.ndarray) -> np.ndarray:
        """How many shapes or lines each candidate rectangle (k, 4) covers."""
        boxes = _covering(self.rects, candidates).sum(axis=1)
        region = np.array([[candidates[:, 0].min(), candidates[:, 1].min(),
                            candidates[:, 2].max(), candidates[:, 3].max()]])
        near = _covering(self.line_bounds, region)[0]  # only lines passing near the tag are sampled
        if not near.any():
            return boxes
        lx, ly = self.line_x[near][None], self.line_y[near][None]
        c = candidates[:, None, None, :]
        inside = (lx >= c[..., 0]) & (lx <= c[..., 2]) & (ly >= c[..., 1]) & (ly <= c[..., 3])
        return boxes + inside.any(axis=2).sum(axis=1)


def _finite_rows(array: np.ndarray) -> np.ndarray:
    return array[np.isfinite(array).all(axis=1)]


def place_tags(
    model: OverlayModel,
    layers: Iterable[str],
    measure: Callable[[str], tuple[float, float]],
    *,
    gap: float = 3.0,
    point_radius: float = 6.0,
) -> list[PlacedTag]:
    """Where each visible tag's label box goes: beside its shape, never over the geometry if it can.

    ``measure(text)`` is the label box's (width, height) in canvas pixels (it
    depends on the renderer's font and scale). Each tag tries its preferred side
    of its shape first, then the others; the first place inside the canvas that
    covers no shape, line or earlier label wins, else the least-covering one
    (moved inside the canvas). Tags whose shape lies off the canvas are skipped.
    """
    visible = frozenset(layers)
    obstacles = _Obstacles(model, visible, point_radius)
    placed: list[PlacedTag] = []
    placed_rects = np.empty((len(model.tags), 4))
    for tag in model.tags:
        if tag.layer not in visible or not _visible(tag.around, model.width, model.height):
            continue
        x0, y0, x1, y1 = tag.around
        if x1 - x0 < 2 * point_radius and y1 - y0 < 2 * point_radius:  # a point: clear its marker
            cx, cy = _half(x0, x1), _half(y0, y1)
            x0, y0, x1, y1 = cx - point_radius, cy - point_radius, cx + point_radius, cy + point_radius
        with np.errstate(all="ignore"):
            candidates = _candidates((x0, y0, x1, y1), measure(tag.text), gap, tag.placement)
            off = ~((candidates[:, 0] >= 0) & (candidates[:, 1] >= 0) & (candidates[:, 2] <= model.width)
                    & (candidates[:, 3] <= model.height))
            labels = _covering(placed_rects[: len(placed)], candidates, strict=True)  # edge to edge is fine
            cost = _COST_OFF_CANVAS * off + _COST_GEOMETRY * obstacles.hits(candidates) \
                + _COST_LABEL * labels.sum(axis=1)
        best = tuple(float(v) for v in candidates[int(np.argmin(cost))])  # the first of the cheapest
        rect = _inside(best, model.width, model.height)  # type: ignore[arg-type]
        placed_rects[len(placed)] = rect
        placed.append(PlacedTag(tag, rect))
    return placed


def _inside(rect: Rect, width: int, height: int) -> Rect:
    x0, y0, x1, y1 = rect
    dx = min(max(x0, 0.0), max(width - (x1 - x0), 0.0)) - x0
    dy = min(max(y0, 0.0), max(height - (y1 - y0), 0.0)) - y0
    return (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
