"""Coordinate-frame diagnosis: is a prediction in pixels, or in some other frame?

A diagnostic layer *above* :mod:`scoring.verifier.trace` (it imports geometry, matching,
compose and trace; nothing in :mod:`scoring` imports it). It never changes a
score: the score is what the trace verifier said. It looks at the parsed
predicted geometry of one evaluation (``evaluation.annotation.predicted``, in
the pixels the model wrote) next to the image size and asks which frame the
model most likely used:

==================  ===========================================================
frame               looks like
==================  ===========================================================
``pixel``           pixels of the image as given (the contract's frame)
``normalized_0_1``  every coordinate in [0, 1] on an image larger than 16 px
``scaled_0_1000``   the 0-1000 grid (Qwen-VL style): coordinates beyond the
                    image but inside 0-1000, or rescaling from 0-1000 raises
                    the annotation score by at least ``GAIN_MIN``
``resized``         a model input frame: a common long side (448 ... 1280), a
                    square squash, Qwen2-VL ``smart_resize``, or one uniform
                    scale fitted to the ground truth
``swapped_xy``      x and y exchanged
``outside_image``   shapes beyond the image that no rescaling explains
==================  ===========================================================

Each hypothesis maps the prediction into pixels (``x * scale_x``, ``y *
scale_y``, after an optional x/y swap) and re-scores it against the same
ground truth with the *same* matching code
(:func:`scoring.verifier.matching.match_annotations`, the evaluation's half-life). That
``what_if_score`` is a diagnosis: what the annotation would have scored had the
model written pixels. It is never the score.

:func:`diagnose_frame` explains one evaluation (every hypothesis, for the
inspector); :mod:`scoring.review.frame_tables` classifies every row of a scored
table (the ``scoring.runs`` table) and counts frames per task, run or anything
else. Rows without an image size are not guessed at: they get
status ``no_image_size`` and :data:`NO_IMAGE_SIZE_MESSAGE`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..verifier import (
    Box,
    ParsedAnnotation,
    Point,
    Segment,
    Shape,
    TraceEvaluation,
    compose,
    image_size_from,
    match_annotations,
)

# --------------------------------------------------------------------------- vocabulary

FRAME_PIXEL = "pixel"
FRAME_NORMALIZED = "normalized_0_1"
FRAME_SCALED_1000 = "scaled_0_1000"
FRAME_RESIZED = "resized"
FRAME_SWAPPED = "swapped_xy"
FRAME_OUTSIDE = "outside_image"
#: Every frame a checked row can get, the expected one first.
FRAMES: tuple[str, ...] = (
    FRAME_PIXEL, FRAME_NORMALIZED, FRAME_SCALED_1000, FRAME_RESIZED, FRAME_SWAPPED, FRAME_OUTSIDE,
)
#: Frames that mean "look at this row".
FLAGGED_FRAMES: tuple[str, ...] = FRAMES[1:]
FRAME_TITLES: dict[str, str] = {
    FRAME_PIXEL: "pixel coordinates",
    FRAME_NORMALIZED: "normalized to [0, 1]",
    FRAME_SCALED_1000: "scaled to 0-1000",
    FRAME_RESIZED: "in a resized model frame",
    FRAME_SWAPPED: "x and y swapped",
    FRAME_OUTSIDE: "outside the image",
}

STATUS_CHECKED = "checked"
STATUS_NO_IMAGE_SIZE = "no_image_size"
STATUS_NO_PREDICTION = "no_prediction"
STATUS_NO_ANNOTATION = "no_annotation"
STATUS_NOT_TRACE = "not_trace"
STATUS_ERROR = "error"
STATUSES: tuple[str, ...] = (
    STATUS_CHECKED, STATUS_NO_IMAGE_SIZE, STATUS_NO_PREDICTION, STATUS_NO_ANNOTATION, STATUS_NOT_TRACE, STATUS_ERROR,
)
NO_IMAGE_SIZE_MESSAGE = "no image size: frame check needs the image"
STATUS_MESSAGES: dict[str, str] = {
    STATUS_NO_IMAGE_SIZE: NO_IMAGE_SIZE_MESSAGE,
    STATUS_NO_PREDICTION: "no parsed prediction: nothing to check",
    STATUS_NO_ANNOTATION: "no annotation asked for: nothing to check",
    STATUS_NOT_TRACE: "simple-scorer row: no geometry",
}
#: The label every what-if carries wherever it is shown.
WHAT_IF_LABEL = "diagnosis — not the score"

CONFIDENCE_HIGH, CONFIDENCE_MEDIUM, CONFIDENCE_LOW = "high", "medium", "low"

# --------------------------------------------------------------------------- thresholds

#: A hypothesis explains a row when its what-if beats the real score by this much ...
GAIN_MIN = 0.25
#: ... and reaches at least this.
WHAT_IF_MIN = 0.5
#: Slack around [0, 1] (models round; jitter pushes edge boxes a little past 1).
UNIT_TOLERANCE = 0.02
#: Below this long side a [0, 1] prediction may be real pixels.
UNIT_MIN_SIDE = 16.0
#: A coordinate this far past an edge (fraction of the side, at least EDGE_MIN_PX) is outside.
EDGE_FRACTION = 0.01
EDGE_MIN_PX = 2.0
#: Frames whose scale is within this of 1 on both axes are the pixel frame for our purposes.
NEAR_IDENTITY = 0.05
#: What-ifs within this of each other tie; the earlier (more common) hypothesis wins.
TIE = 0.02
#: A fitted uniform scale is only tried when it differs from 1 by at least this.
FITTED_MIN_CHANGE = 0.1
#: Common model input sizes.
LONG_SIDES: tuple[int, ...] = (448, 672, 896, 1008, 1024, 1280)
SQUARE_SIDES: tuple[int, ...] = (224, 336, 448, 512, 896, 1024)
#: Qwen2-VL / Qwen2.5-VL ``smart_resize``: patch factor, min pixels, and two common max pixels
#: (the function's default 1280*28*28, and the processor default 16384*28*28).
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 56 * 56
QWEN_MAX_PIXELS: tuple[int, ...] = (1280 * 28 * 28, 16384 * 28 * 28)
GRID_1000 = 1000.0


# --------------------------------------------------------------------------- results


class Hypothesis(NamedTuple):
    """One way the prediction could have been meant, mapped into pixels and re-scored.

    Pixels are ``(y, x)`` if ``swap`` else ``(x, y)``, then multiplied by
    ``(scale_x, scale_y)``. ``what_if_score`` is the annotation score of that
    pixel prediction (None when the hypothesis does not apply or was not
    needed); ``what_if_overall`` the overall reward it would give, with the
    row's answer and format unchanged. Both are a diagnosis, not the score.
    """

    name: str
    frame: str
    label: str
    scale_x: float
    scale_y: float
    swap: bool
    applies: bool
    structural: bool  # the coordinates themselves point at this frame
    note: str
    what_if_score: float | None = None
    what_if_overall: float | None = None
    gain: float | None = None
    predicted: ParsedAnnotation | None = None  # the prediction in pixels under this hypothesis


class FrameDiagnosis(NamedTuple):
    """Which frame the prediction most likely uses, why, and what each alternative would score."""

    status: str
    frame: str | None
    confidence: str
    message: str
    evidence: tuple[str, ...]
    pixel_score: float | None  # the real annotation score (as scored)
    overall: float | None  # the real overall reward (as scored)
    image_size: tuple[float, float] | None
    extent: tuple[float, float, float, float] | None  # x_min, y_min, x_max, y_max of the prediction
    shapes: int
    shapes_outside: int
    hypotheses: tuple[Hypothesis, ...] = ()
    best: Hypothesis | None = None

    @property
    def checked(self) -> bool:
        return self.status == STATUS_CHECKED

    @property
    def flagged(self) -> bool:
        return self.frame is not None and self.frame != FRAME_PIXEL

    @property
    def what_if_score(self) -> float | None:
        return self.best.what_if_score if self.best is not None else None

    def hypothesis_rows(self) -> list[dict[str, Any]]:
        """One plain dict per hypothesis (for a table); the first row is the real score."""
        rows = []
        if self.pixel_score is not None:
            rows.append({
                "hypothesis": "as written (pixels)",
                "frame": FRAME_PIXEL,
                "applies": True,
                "coordinates point here": None,
                "annotation score": self.pixel_score,
                "overall": self.overall,
                "gain": 0.0,
                "what it is": "the score",
                "note": "",
            })
        for h in self.hypotheses:
            rows.append({
                "hypothesis": h.label,
                "frame": h.frame,
                "applies": h.applies,
                "coordinates point here": h.structural,
                "annotation score": h.what_if_score,
                "overall": h.what_if_overall,
                "gain": h.gain,
                "what it is": WHAT_IF_LABEL if h.what_if_score is not None else "",
                "note": h.note,
            })
        return rows


# --------------------------------------------------------------------------- geometry helpers


def _points(shape: Shape) -> tuple[tuple[float, float], ...]:
    if isinstance(shape, Box):
        return ((shape.x0, shape.y0), (shape.x1, shape.y1))
    if isinstance(shape, Segment):
        return ((shape.start.x, shape.start.y), (shape.end.x, shape.end.y))
    return ((shape.x, shape.y),)


def _all_points(annotation: ParsedAnnotation) -> list[tuple[float, float]]:
    return [p for _, shapes in annotation.groups for shape in shapes for p in _points(shape)]


def _map_shape(shape: Shape, sx: float, sy: float, swap: bool) -> Shape:
    if isinstance(shape, Box):
        x0, y0, x1, y1 = shape
        if swap:
            x0, y0, x1, y1 = y0, x0, y1, x1
        a, b, c, d = x0 * sx, x1 * sx, y0 * sy, y1 * sy
        return Box(min(a, b), min(c, d), max(a, b), max(c, d))
    if isinstance(shape, Segment):
        return Segment(_map_shape(shape.start, sx, sy, swap), _map_shape(shape.end, sx, sy, swap))
    x, y = (shape.y, shape.x) if swap else (shape.x, shape.y)
    return Point(x * sx, y * sy)


def rescale(annotation: ParsedAnnotation, scale_x: float, scale_y: float, swap: bool = False) -> ParsedAnnotation:
    """``annotation`` with every coordinate mapped (swap first, then scale); same type and keys."""
    groups = tuple(
        (key, tuple(_map_shape(shape, scale_x, scale_y, swap) for shape in shapes))
        for key, shapes in annotation.groups
    )
    return annotation._replace(groups=groups)


def smart_resize(
    height: float, width: float, factor: int = QWEN_FACTOR, min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS[0],
) -> tuple[int, int]:
    """Qwen2-VL's ``smart_resize``: (height, width) rounded to the patch factor within a pixel budget."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return int(h_bar), int(w_bar)


def _num(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def _size_text(width: float, height: float) -> str:
    return f"{_num(width)}×{_num(height)}"


def _near_identity(sx: float, sy: float) -> bool:
    return abs(sx - 1.0) < NEAR_IDENTITY and abs(sy - 1.0) < NEAR_IDENTITY


class _Extent(NamedTuple):
    x_min: float
    y_min: float
    x_max: float
    y_max: float

    def within(self, width: float, height: float) -> bool:
        """Inside [0, width] x [0, height], up to the edge tolerance."""
        tx = max(EDGE_MIN_PX, EDGE_FRACTION * width)
        ty = max(EDGE_MIN_PX, EDGE_FRACTION * height)
        return self.x_min >= -tx and self.y_min >= -ty and self.x_max <= width + tx and self.y_max <= height + ty

    def within_frame(self, width: float, height: float) -> bool:
        """Inside a model frame of ``width`` x ``height`` with relative slack (models jitter too)."""
        tx = max(EDGE_MIN_PX, UNIT_TOLERANCE * width)
        ty = max(EDGE_MIN_PX, UNIT_TOLERANCE * height)
        return self.x_min >= -tx and self.y_min >= -ty and self.x_max <= width + tx and self.y_max <= height + ty

    def in_unit_square(self) -> bool:
        lo, hi = -UNIT_TOLERANCE, 1.0 + UNIT_TOLERANCE
        return self.x_min >= lo and self.y_min >= lo and self.x_max <= hi and self.y_max <= hi

    def text(self) -> str:
        return f"x {_num(self.x_min)}–{_num(self.x_max)}, y {_num(self.y_min)}–{_num(self.y_max)}"


def _extent(points: Sequence[tuple[float, float]]) -> _Extent:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return _Extent(min(xs), min(ys), max(xs), max(ys))


def _shapes_outside(annotation: ParsedAnnotation, width: float, height: float) -> tuple[int, int]:
    total = outside = 0
    for _, shapes in annotation.groups:
        for shape in shapes:
            total += 1
            if not _extent(_points(shape)).within(width, height):
                outside += 1
    return total, outside


# --------------------------------------------------------------------------- hypotheses


def _candidates(
    width: float, height: float, extent: _Extent, inside: bool, predicted: ParsedAnnotation,
    ground_truth: ParsedAnnotation,
) -> list[Hypothesis]:
    """Every hypothesis for this image size, not yet scored, in preference order (ties go to the first)."""
    out: list[Hypothesis] = []
    seen_frames: set[tuple[int, int]] = set()

    unit = extent.in_unit_square() and max(width, height) >= UNIT_MIN_SIDE
    out.append(Hypothesis(
        "normalized_0_1", FRAME_NORMALIZED, f"normalized [0, 1] → × {_num(width)}, × {_num(height)}",
        width, height, False, unit, unit,
        "every coordinate is in [0, 1]" if unit else "coordinates go beyond [0, 1]",
    ))

    sx, sy = width / GRID_1000, height / GRID_1000
    if _near_identity(sx, sy):
        out.append(Hypothesis("scaled_0_1000", FRAME_SCALED_1000, "0-1000 grid", sx, sy, False, False, False,
                              "the image is about 1000×1000: the 0-1000 grid is the pixel frame"))
    else:
        fits = extent.within_frame(GRID_1000, GRID_1000)
        out.append(Hypothesis(
            "scaled_0_1000", FRAME_SCALED_1000, f"0-1000 grid → × {width / GRID_1000:.3g}, × {height / GRID_1000:.3g}",
            sx, sy, False, fits, fits and not inside,
            ("beyond the image but inside the 0-1000 grid" if not inside else "inside the 0-1000 grid")
            if fits else "coordinates go beyond 1000",
        ))
    seen_frames.add((round(GRID_1000), round(GRID_1000)))

    def frame(name: str, label: str, frame_w: float, frame_h: float) -> None:
        key = (round(frame_w), round(frame_h))
        if key in seen_frames or frame_w <= 0 or frame_h <= 0:
            return
        seen_frames.add(key)
        fx, fy = width / frame_w, height / frame_h
        if _near_identity(fx, fy):
            return
        fits = extent.within_frame(frame_w, frame_h)
        out.append(Hypothesis(
            name, FRAME_RESIZED, f"{label} ({_size_text(frame_w, frame_h)})", fx, fy, False, fits,
            fits and not inside,
            ("beyond the image but inside this frame" if not inside else "inside this frame")
            if fits else f"coordinates go beyond {_size_text(frame_w, frame_h)}",
        ))

    long_side = max(width, height)
    for side in LONG_SIDES:
        k = side / long_side
        frame(f"resized_long_{side}", f"resized, long side {side}", round(width * k), round(height * k))
    for side in SQUARE_SIDES:
        frame(f"resized_square_{side}", f"squashed to {side}×{side}", side, side)
    for max_pixels in QWEN_MAX_PIXELS:
        h_bar, w_bar = smart_resize(height, width, max_pixels=max_pixels)
        frame(f"resized_qwen_{max_pixels}", f"Qwen2-VL smart_resize, max_pixels {max_pixels:,}", w_bar, h_bar)

    swapped_fits = extent.within(height, width)  # swapped x lives on the height axis
    out.append(Hypothesis(
        "swapped_xy", FRAME_SWAPPED, "x and y swapped", 1.0, 1.0, True, True, swapped_fits and not inside,
        "beyond the image, but inside it with x and y swapped" if swapped_fits and not inside else "",
    ))

    fitted = _fitted_scale(predicted, ground_truth)
    if fitted is not None and abs(fitted - 1.0) >= FITTED_MIN_CHANGE and abs(1.0 / fitted - 1.0) >= FITTED_MIN_CHANGE:
        out.append(Hypothesis(
            "resized_fitted", FRAME_RESIZED,
            f"one uniform scale fitted to the ground truth (model frame ≈ {_size_text(round(width * fitted), round(height * fitted))})",
            1.0 / fitted, 1.0 / fitted, False, True, False,
            f"prediction ≈ {fitted:.3g} × ground truth about the origin (fitted, weak evidence)",
        ))
    return out


def _fitted_scale(predicted: ParsedAnnotation, ground_truth: ParsedAnnotation) -> float | None:
    """The uniform factor s with prediction ≈ s × ground truth, from the centroids of all coordinates."""
    pred = _all_points(predicted)
    gt = _all_points(ground_truth)
    if not pred or not gt:
        return None
    px = sum(p[0] for p in pred) / len(pred)
    py = sum(p[1] for p in pred) / len(pred)
    gx = sum(p[0] for p in gt) / len(gt)
    gy = sum(p[1] for p in gt) / len(gt)
    norm = gx * gx + gy * gy
    if norm <= 0.0:
        return None
    s = (px * gx + py * gy) / norm
    return s if math.isfinite(s) and s > 0.0 else None


def _score(evaluated: Hypothesis, predicted: ParsedAnnotation, ground_truth: ParsedAnnotation, half_life: float,
           pixel_score: float, overall_of: Callable[[float], float] | None) -> Hypothesis:
    mapped = rescale(predicted, evaluated.scale_x, evaluated.scale_y, evaluated.swap)
    score = match_annotations(mapped, ground_truth, half_life).score
    overall = overall_of(score) if overall_of is not None else None
    return evaluated._replace(what_if_score=score, what_if_overall=overall, gain=score - pixel_score, predicted=mapped)


def _supported(h: Hypothesis) -> bool:
    return h.what_if_score is not None and h.gain >= GAIN_MIN and h.what_if_score >= WHAT_IF_MIN


def _pick(hypotheses: Sequence[Hypothesis]) -> Hypothesis:
    """Highest what-if; within TIE of it, the earliest (most common) hypothesis."""
    top = max(h.what_if_score for h in hypotheses)
    return next(h for h in hypotheses if h.what_if_score >= top - TIE)


# --------------------------------------------------------------------------- one row


def diagnose_geometry(
    predicted: ParsedAnnotation,
    ground_truth: ParsedAnnotation,
    half_life_px: float,
    image_size: Any,
    *,
    pixel_score: float | None = None,
    overall: float | None = None,
    overall_of: Callable[[float], float] | None = None,
    explain: bool = True,
) -> FrameDiagnosis:
    """The frame diagnosis of parsed geometry (see :func:`diagnose_frame`).

    ``pixel_score`` is the real annotation score (recomputed with the matching
    code when None). ``overall_of`` maps an annotation score to an overall
    reward (for ``what_if_overall``). With ``explain=False`` what-ifs that
    cannot change the verdict are skipped: the prediction is inside the image,
    not in [0, 1], and already scores above ``1 - GAIN_MIN``.
    """
    if pixel_score is None:
        pixel_score = match_annotations(predicted, ground_truth, half_life_px).score
    size = image_size_from(image_size) if image_size is not None else None
    points = _all_points(predicted)
    if size is None:
        return FrameDiagnosis(
            STATUS_NO_IMAGE_SIZE, None, "", NO_IMAGE_SIZE_MESSAGE, (), pixel_score, overall, None,
            _extent(points) if points else None, len(points), 0,
        )
    width, height = size
    if not points:  # an empty set or map: nothing can be in a wrong frame
        return FrameDiagnosis(
            STATUS_CHECKED, FRAME_PIXEL, CONFIDENCE_HIGH, "The prediction has no shapes: nothing to check.",
            (), pixel_score, overall, size, None, 0, 0,
        )
    extent = _extent(points)
    shapes, outside = _shapes_outside(predicted, width, height)
    inside = outside == 0
    unit = extent.in_unit_square() and max(width, height) >= UNIT_MIN_SIDE
    needed = explain or unit or not inside or pixel_score < 1.0 - GAIN_MIN
    if not needed:  # inside the image, not in [0, 1], scoring well: no what-if can change the verdict
        return FrameDiagnosis(
            STATUS_CHECKED, FRAME_PIXEL, CONFIDENCE_HIGH, _message(FRAME_PIXEL, None, pixel_score, shapes, 0, size, True),
            (f"prediction spans {extent.text()} on a {_size_text(width, height)} image",), pixel_score, overall, size,
            tuple(extent), shapes, 0,
        )
    hypotheses = [
        _score(h, predicted, ground_truth, half_life_px, pixel_score, overall_of) if h.applies else h
        for h in _candidates(width, height, extent, inside, predicted, ground_truth)
    ]
    scored = [h for h in hypotheses if h.what_if_score is not None]
    supported = [h for h in scored if _supported(h)]
    evidence: list[str] = [f"prediction spans {extent.text()} on a {_size_text(width, height)} image"]
    if not inside:
        evidence.append(f"{outside} of {shapes} shape(s) lie outside the image")

    best: Hypothesis | None = None
    if unit:
        best = hypotheses[0]
        frame = FRAME_NORMALIZED
        confidence = CONFIDENCE_HIGH if _supported(best) or pixel_score < WHAT_IF_MIN else CONFIDENCE_MEDIUM
        evidence.append(best.note)
    elif supported:
        best = _pick(supported)
        frame = best.frame
        confidence = (
            CONFIDENCE_HIGH if best.structural else CONFIDENCE_LOW if best.name == "resized_fitted" else CONFIDENCE_MEDIUM
        )
        if best.structural and best.note:
            evidence.append(best.note)
    elif not inside:
        grid = next((h for h in scored if h.name == "scaled_0_1000" and h.structural), None)
        if grid is not None and grid.what_if_score >= pixel_score:
            best, frame, confidence = grid, FRAME_SCALED_1000, CONFIDENCE_LOW
            evidence.append(f"{grid.note} (range only: rescaling does not match the ground truth better)")
        else:
            frame, confidence = FRAME_OUTSIDE, CONFIDENCE_HIGH
            evidence.append("no rescaling brings it onto the ground truth")
    else:
        frame, confidence = FRAME_PIXEL, CONFIDENCE_HIGH

    if best is not None and best.what_if_score is not None:
        evidence.append(
            f"{best.label}: the annotation would score {best.what_if_score:.3f} instead of {pixel_score:.3f}"
        )
    message = _message(frame, best, pixel_score, shapes, outside, size, inside and pixel_score >= 1.0 - GAIN_MIN)
    return FrameDiagnosis(
        STATUS_CHECKED, frame, confidence, message, tuple(evidence), pixel_score, overall, size,
        tuple(extent), shapes, outside, tuple(hypotheses), best,
    )


def _message(frame: str, best: Hypothesis | None, pixel_score: float, shapes: int, outside: int,
             size: tuple[float, float], plainly_fine: bool) -> str:
    if frame == FRAME_PIXEL:
        if plainly_fine:
            return f"Looks like pixel coordinates: the prediction is inside the image and scores {pixel_score:.3f}."
        return "Looks like pixel coordinates: no other frame matches the ground truth clearly better."
    if frame == FRAME_OUTSIDE:
        return (
            f"{outside} of {shapes} shape(s) reach outside the {_size_text(*size)} image; as written they score "
            f"{pixel_score:.3f} and no rescaling does clearly better."
        )
    title = FRAME_TITLES[frame]
    if best is None or best.what_if_score is None:
        return f"Looks {title}."
    return (
        f"Looks {title}. Had it been in pixel coordinates ({best.label}) the annotation would score "
        f"{best.what_if_score:.3f} (a diagnosis, not the score: the score is {pixel_score:.3f})."
    )


def _overall_function(evaluation: TraceEvaluation) -> Callable[[float], float]:
    options = evaluation.options
    answer = evaluation.answer_reward
    format_score = evaluation.format_score

    def overall_of(annotation_score: float) -> float:
        return float(compose(answer, annotation_score, format_score, options.mode, options)[1])

    return overall_of


def diagnose_frame(evaluation: TraceEvaluation, image_size: Any = None, *, explain: bool = True) -> FrameDiagnosis:
    """Classify the frame of ``evaluation``'s predicted geometry and re-score every hypothesis.

    ``image_size`` (``(width, height)`` or any spelling :func:`scoring.verifier.geometry.image_size_from`
    accepts) defaults to the size the evaluation was scored with. Without one the
    diagnosis says :data:`NO_IMAGE_SIZE_MESSAGE` instead of guessing. The real
    score is never changed: it is ``pixel_score`` / ``overall``.
    """
    annotation = evaluation.annotation
    if annotation.annotation_type is None:
        return _unchecked(STATUS_NO_ANNOTATION, STATUS_MESSAGES[STATUS_NO_ANNOTATION], evaluation)
    if not annotation.parse_ok or annotation.predicted is None or annotation.ground_truth is None:
        reason = annotation.reason or "the annotation was not scored"
        status = STATUS_NO_PREDICTION
        return _unchecked(status, f"no parsed prediction: {reason}", evaluation)
    size = image_size if image_size is not None else evaluation.image_size
    return diagnose_geometry(
        annotation.predicted,
        annotation.ground_truth,
        annotation.half_life_px,
        size,
        pixel_score=annotation.match.score if annotation.match is not None else None,
        overall=evaluation.overall,
        overall_of=_overall_function(evaluation),
        explain=explain,
    )


def _unchecked(status: str, message: str, evaluation: TraceEvaluation | None = None) -> FrameDiagnosis:
    overall = evaluation.overall if evaluation is not None else None
    size = evaluation.image_size if evaluation is not None else None
    return FrameDiagnosis(status, None, "", message, (), None, overall, size, None, 0, 0)


__all__ = [
    "FLAGGED_FRAMES",
    "FRAMES",
    "FRAME_TITLES",
    "NO_IMAGE_SIZE_MESSAGE",
    "STATUSES",
    "WHAT_IF_LABEL",
    "FrameDiagnosis",
    "Hypothesis",
    "diagnose_frame",
    "diagnose_geometry",
    "rescale",
    "smart_resize",
]
