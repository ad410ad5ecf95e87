"""The overlay drawn with Pillow: the static picture, the PNG download and the gallery thumbnails.

The picture is the image at its own size with the layer model drawn on it;
with ``legend=True`` a legend strip below it names every style on the picture,
so a PNG pasted into a chat explains itself.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from dashboard.overlay.model import (
    ALL_LAYERS,
    LAYER_GROUND_TRUTH,
    LAYER_HALF_LIFE,
    LAYER_MATCHES,
    LAYER_MISSED,
    LAYER_PREDICTION,
    LAYER_UNMATCHED,
    STYLES,
    LegendEntry,
    OverlayModel,
    PlacedTag,
    Ring,
    ShapeMark,
    Style,
    all_finite,
    clip_line,
    legend_entries,
    place_tags,
    scaled,
    shape_center,
)
from scoring.verifier import Box, Point, Segment

#: (on, off, on, off …) dash lengths in line widths (plus a constant), per dash style.
_DASHES: dict[str, tuple[tuple[float, float], ...]] = {
    "dash": ((3, 4), (2, 2)),
    "dot": ((1, 0), (1, 2)),
    "dashdot": ((3, 4), (1, 2), (1, 0), (1, 2)),
}


@functools.lru_cache(maxsize=16)
def load_font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
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
        self.font = load_font(font_size)
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
        pattern = [scale * width + extra for scale, extra in _DASHES[style.dash]]
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        draw_line, colour = self.draw.line, style.colour
        position, step = 0.0, 0
        while position < length:
            size = pattern[step % len(pattern)]
            if step % 2 == 0:
                end = min(position + size, length)
                draw_line(
                    (x0 + ux * position, y0 + uy * position, x0 + ux * end, y0 + uy * end), fill=colour, width=width
                )
            position += size
            step += 1

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
        if not (all_finite(x, y) and -r <= x <= self.w + r and -r <= y <= self.h + r):
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
            if all_finite(x, y) and -r <= x <= self.w + r and -r <= y <= self.h + r:
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
        if not all_finite(x, y, r) or r > 4 * max(self.w, self.h):
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

    def measure(self, text: str) -> tuple[float, float]:
        """The label box of ``text``: the text plus its padding."""
        left, top, right, bottom = text_box(self.font, text)
        return (right - left + 6, bottom - top + 4)

    def tag(self, placed: PlacedTag) -> None:
        """The label on its background, in the box :func:`place_tags` chose (beside the shape)."""
        px, py, _, _ = placed.rect
        text = placed.tag.text
        left, top, _, _ = text_box(self.font, text)
        tw, th = self.measure(text)
        colour = placed.tag.style.colour
        self.draw.rectangle((px, py, px + tw, py + th), fill=colour, outline=(255, 255, 255))
        self.draw.text((px + 3 - left, py + 2 - top), text, fill=_text_colour(colour), font=self.font)


@functools.lru_cache(maxsize=4096)
def text_box(font: Any, text: str) -> tuple[int, int, int, int]:
    """``font.getbbox(text)``, cached: labels repeat within a picture and across reruns."""
    return tuple(int(v) for v in font.getbbox(text))  # type: ignore[return-value]


def luminance(colour: tuple[int, int, int]) -> float:
    r, g, b = colour
    return 0.299 * r + 0.587 * g + 0.114 * b


def _text_colour(background: tuple[int, int, int]) -> tuple[int, int, int]:
    return (0, 0, 0) if luminance(background) > 140 else (255, 255, 255)


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
    display_width: int | None = None,
    legend: bool = False,
) -> Image.Image:
    """The overlay drawn onto a copy of ``image`` (or a blank canvas of the model's size).

    ``display_width``: the width the picture will be shown at; when it is
    smaller than the image, lines and labels are drawn thicker in proportion so
    they stay readable once shrunk. ``legend`` adds the legend strip below.
    """
    visible = frozenset(layers)
    if image is None:
        canvas = blank_canvas(model.width, model.height)
    else:
        canvas = image.convert("RGB") if image.mode != "RGB" else image.copy()
    w, h = canvas.size
    if (w, h) != (model.width, model.height):  # pixels shrunk for display: draw in their space
        model = scaled(model, w, h)
    shrink = max(1.0, w / display_width) if display_width else 1.0
    line_width = line_width or max(line_width_for(w, h), round(2 * shrink))
    font_size = font_size or max(font_size_for(w, h), round(12 * shrink))
    painter = _Painter(canvas, line_width, font_size)
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
    for placed in place_tags(model, visible, painter.measure, gap=line_width + 1, point_radius=painter.marker + 2):
        painter.tag(placed)
    if legend:
        canvas = with_legend(canvas, legend_entries(model, visible), font_size, line_width)
    return canvas


# --------------------------------------------------------------------------- legend strip

#: Length of the style sample drawn before each legend entry's text, in font sizes.
_SAMPLE_EMS = 3.6
_LEGEND_BACKGROUND = (255, 255, 255)


@dataclass(frozen=True, slots=True)
class LegendItem:
    """One legend entry at its place in the strip: the style sample starts at (x, y)."""

    entry: LegendEntry
    x: float
    y: float
    sample_width: float
    text_width: float


def legend_layout(
    entries: Sequence[LegendEntry], width: int, font_size: int
) -> tuple[list[LegendItem], int]:
    """Entries laid out left to right, wrapping to the strip's ``width``; also the strip's height."""
    font = load_font(font_size)
    pad = max(4, font_size // 2)
    row_height = font_size + 2 * pad
    sample = _SAMPLE_EMS * font_size
    items: list[LegendItem] = []
    x, y = float(pad), float(pad)
    for entry in entries:
        left, _, right, _ = text_box(font, entry.title)
        text_width = right - left
        needed = sample + pad + text_width
        if x > pad and x + needed > width - pad:
            x, y = float(pad), y + row_height
        items.append(LegendItem(entry, x, y, sample, text_width))
        x += needed + 3 * pad
    height = 0 if not items else int(y + row_height + pad)
    return items, height


def with_legend(picture: Image.Image, entries: Sequence[LegendEntry], font_size: int, line_width: int) -> Image.Image:
    """``picture`` with a white legend strip below it: a sample of each style and its name."""
    w, h = picture.size
    items, strip = legend_layout(entries, w, font_size)
    if not items:
        return picture
    out = Image.new("RGB", (w, h + strip), _LEGEND_BACKGROUND)
    out.paste(picture, (0, 0))
    painter = _Painter(out, line_width, font_size)
    draw = painter.draw
    draw.line((0, h, w, h), fill=(190, 194, 200), width=1)
    for item in items:
        style = item.entry.style
        top = h + item.y
        mid = top + font_size / 2 + 2
        x0, x1 = item.x, item.x + item.sample_width
        layer = item.entry.layer
        if layer in (LAYER_MATCHES, LAYER_HALF_LIFE):
            painter.line(x0, mid, x1, mid, style)
        else:  # the line style, then the point marker at its end
            r = painter.marker + 1
            painter.line(x0, mid, x1 - 2 * r - 2, mid, style)
            if layer == LAYER_UNMATCHED:
                painter.cross(Point(x1 - r, mid), style)
            else:
                painter.point(Point(x1 - r, mid), style)
        left, text_top, _, _ = text_box(painter.font, item.entry.title)
        draw.text((x1 + max(4, font_size // 2) - left, top + 2 - text_top), item.entry.title, fill=(28, 35, 51),
                  font=painter.font)
    return out


def png_bytes(image: Image.Image, compress_level: int = 1) -> bytes:
    """PNG bytes of ``image`` (for the download button)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


def render_png(
    model: OverlayModel, image: Image.Image | None = None, layers: Iterable[str] = ALL_LAYERS
) -> bytes:
    """The picture with its legend strip, as PNG bytes (the download)."""
    return png_bytes(render_pil(model, image, layers, legend=True))


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


