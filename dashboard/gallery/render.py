"""Gallery thumbnails: the overlay drawn small with Pillow, for a row, an image or one object.

The image is decoded already shrunk to the tile (``LoadedRun.load_image(max_side=)``: JPEG
draft mode) and the overlay is drawn at the tile's own size with thin lines, rather than drawn
on the full image and shrunk: a tile costs a few milliseconds and its lines stay crisp. The
colours and line styles are the overlay's (:mod:`dashboard.overlay`). Text drawn into a picture
(a placeholder's reason) is pixels, never markup.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import replace

from PIL import Image, ImageDraw

from ..overlay import (
    ALL_LAYERS,
    LAYER_GROUND_TRUTH,
    LAYER_HALF_LIFE,
    LAYER_LABELS,
    LAYER_MATCHES,
    LAYER_MISSED,
    STYLE_MISSED,
    OverlayModel,
    ShapeMark,
    Tag,
    cropped,
    render_pil,
    scaled,
    shape_bounds,
)
from ..overlay.pil import blank_canvas, load_font
from .patches import PatchObject, crop_region

#: Tile sizes offered: name -> the thumbnail's longer side in pixels.
TILE_SIZES: dict[str, int] = {"small": 160, "medium": 230, "large": 360}
DEFAULT_TILE_SIZE = "medium"
JPEG_QUALITY = 88
#: An image tile draws the predictions of at most this many rollouts (the first in the gallery's order).
IMAGE_ROLLOUTS = 16
_PLACEHOLDER_BACKGROUND = (236, 238, 242)
_TEXT = (28, 35, 51)


def font_size(side: int) -> int:
    return max(10, round(side / 24))


def fit(width: float, height: float, side: int) -> tuple[int, int]:
    """``width`` x ``height`` scaled to a longer side of ``side`` (smaller and larger alike)."""
    width, height = max(float(width), 1.0), max(float(height), 1.0)
    scale = side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _base(model: OverlayModel, image: Image.Image | None, side: int) -> Image.Image:
    """The picture to draw on: the image at the tile's size, or a blank canvas of its shape."""
    size = fit(model.width, model.height, side)
    if image is None:
        return blank_canvas(*size)
    picture = image.convert("RGB") if image.mode != "RGB" else image
    return picture.resize(size, Image.Resampling.LANCZOS) if picture.size != size else picture.copy()


#: Tiles at least this wide carry the overlay's labels (IoU, "missed", keys); smaller ones only its
#: colours and line styles, which name the roles as well and stay readable.
LABELLED_SIDE = 300


def row_picture(model: OverlayModel, image: Image.Image | None, side: int,
                layers: Iterable[str] = ALL_LAYERS) -> Image.Image:
    """One row's overlay at the tile's size (its labels only on large tiles)."""
    base = _base(model, image, side)
    if side < LABELLED_SIDE:
        model = replace(model, tags=[])
    return render_pil(model, base, layers, line_width=2, font_size=font_size(side))


def image_picture(models: Sequence[tuple[object, OverlayModel]], image: Image.Image | None, side: int,
                  layers: Iterable[str] = ALL_LAYERS) -> Image.Image:
    """The rollouts of one image together: each distinct ground truth once (``models`` pairs a
    ground-truth key with a rollout's overlay), every rollout's prediction over it. A
    ground-truth item most rollouts missed is drawn as missed and tagged ``missed k/n``."""
    if not models:
        return placeholder(side, ["nothing to draw"])
    first = models[0][1]
    base = _base(first, image, side)
    width, height = base.size
    by_truth: dict[object, list[OverlayModel]] = {}
    for truth, model in models:
        by_truth.setdefault(truth, []).append(scaled(model, width, height))
    marks: list[ShapeMark] = []
    tags: list[Tag] = []
    for group in by_truth.values():
        missed: dict[tuple, int] = {}
        for model in group:
            for mark in model.marks:
                if mark.side == "gt" and mark.layer == LAYER_MISSED:
                    missed[(mark.key, mark.index)] = missed.get((mark.key, mark.index), 0) + 1
        n = len(group)
        for mark in group[0].marks:
            if mark.side != "gt":
                continue
            k = missed.get((mark.key, mark.index), 0)
            layer = LAYER_MISSED if 2 * k > n else LAYER_GROUND_TRUTH
            marks.append(replace(mark, layer=layer))
            if layer == LAYER_MISSED:  # only what most rollouts missed is named: a tile stays readable
                tags.append(Tag(LAYER_MISSED, f"missed {k}/{n}", shape_bounds(mark.shape), "bl", STYLE_MISSED))
        for model in group:
            marks.extend(replace(m, crossed=False) for m in model.marks if m.side == "pred")
    combined = replace(scaled(first, width, height), marks=marks, tags=tags, connectors=[], rings=[])
    visible = frozenset(layers) - {LAYER_MATCHES, LAYER_HALF_LIFE, LAYER_LABELS}
    line = 2 if len(models) <= 4 else 1
    return render_pil(combined, base, visible, line_width=line, font_size=font_size(side))


def patch_picture(model: OverlayModel, obj: PatchObject, image: Image.Image | None, side: int,
                  layers: Iterable[str] = ALL_LAYERS) -> Image.Image:
    """A crop around one object (with its neighbours' geometry for context), enlarged to the tile."""
    region = crop_region(obj, model)
    x0, y0, x1, y1 = region
    size = fit(x1 - x0, y1 - y0, side)
    if image is None:
        base = blank_canvas(*size)
    else:
        sx, sy = image.width / max(model.width, 1), image.height / max(model.height, 1)
        box = (x0 * sx, y0 * sy, max(x1 * sx, x0 * sx + 1), max(y1 * sy, y0 * sy + 1))
        picture = image.convert("RGB") if image.mode != "RGB" else image
        base = picture.resize(size, Image.Resampling.BICUBIC, box=box)
    zoomed = cropped(model, region, *size)
    zoomed = replace(zoomed, tags=[])  # the object's IoU is written under the tile
    visible = frozenset(layers) - {LAYER_LABELS}
    return render_pil(zoomed, base, visible, line_width=3, font_size=font_size(side))


def placeholder(side: int, lines: Sequence[str], shape: tuple[int, int] = (4, 3)) -> Image.Image:
    """A grey tile saying why there is no picture (its text wrapped to the tile)."""
    size = fit(*shape, side)
    picture = Image.new("RGB", size, _PLACEHOLDER_BACKGROUND)
    draw = ImageDraw.Draw(picture)
    draw.rectangle((0, 0, size[0] - 1, size[1] - 1), outline=(190, 194, 200))
    font = load_font(font_size(side))
    chars = max(8, int(size[0] / (0.6 * font_size(side))) - 2)
    wrapped = [piece for line in lines for piece in (textwrap.wrap(str(line), chars) or [""])]
    height = font_size(side) + 4
    top = max(4, (size[1] - height * len(wrapped)) // 2)
    for i, line in enumerate(wrapped[: max(1, (size[1] - 8) // height)]):
        draw.text((8, top + i * height), line, fill=_TEXT, font=font)
    return picture


def with_banner(picture: Image.Image, text: str) -> Image.Image:
    """``picture`` with ``text`` on a dark strip along its bottom edge (cut to one line)."""
    out = picture.copy()
    draw = ImageDraw.Draw(out)
    size = font_size(out.width)
    font = load_font(size)
    chars = max(8, int(out.width / (0.55 * size)) - 2)
    line = text if len(text) <= chars else text[: chars - 1] + "…"
    draw.rectangle((0, out.height - size - 8, out.width, out.height), fill=(40, 40, 48))
    draw.text((5, out.height - size - 5), line, fill=(255, 255, 255), font=font)
    return out


def encode(picture: Image.Image) -> bytes:
    """JPEG bytes (no chroma subsampling: thin coloured lines stay sharp)."""
    buffer = io.BytesIO()
    picture.convert("RGB").save(buffer, format="JPEG", quality=JPEG_QUALITY, subsampling=0, optimize=False)
    return buffer.getvalue()


__all__ = [
    "DEFAULT_TILE_SIZE",
    "IMAGE_ROLLOUTS",
    "LABELLED_SIDE",
    "TILE_SIZES",
    "encode",
    "fit",
    "image_picture",
    "patch_picture",
    "placeholder",
    "row_picture",
    "with_banner",
]

