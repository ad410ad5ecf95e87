"""The overlay as an interactive plotly figure (zoom and pan), built from the same layer model.

Sized for the column it is shown in: :func:`figure_size` makes the plot area as
wide as the column allows (up to the image's own width) and exactly as tall as
the image's aspect ratio needs, with the legend in a strip below the plot (no
blank space) and the mode bar upright in the right margin, clear of the legend.
Labels are placed by :func:`~dashboard.overlay.model.place_tags` for the scale
the figure is shown at, on a coloured background beside their shape. Every text
from data (role keys) goes through :func:`dashboard.plot_text.plotly_text`.
"""

from __future__ import annotations

import base64
import functools
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from dashboard.overlay.model import (
    ALL_LAYERS,
    LAYER_GROUND_TRUTH,
    LAYER_HALF_LIFE,
    LAYER_MATCHES,
    LAYER_MISSED,
    LAYER_PREDICTION,
    LAYER_UNMATCHED,
    LEGEND_TITLES,
    STYLES,
    OverlayModel,
    PlacedTag,
    ShapeMark,
    label_key,
    legend_entries,
    place_tags,
    shape_center,
)
from dashboard.overlay.pil import load_font, luminance, text_box
from dashboard.plot_text import plotly_text
from scoring.verifier import Box, Point, Segment

#: The width the figure is drawn for when the page does not say (the Inspector's column at 1280-1440 px).
DEFAULT_COLUMN_WIDTH = 620
#: Below this the picture is enlarged (small images stay readable), up to the column.
MIN_PLOT_WIDTH = 360
#: Label font size in screen pixels.
LABEL_FONT_PX = 12
LEGEND_FONT_PX = 12
#: Margins (screen pixels): axis ticks on the top and left, the mode bar upright on the right.
MARGIN = {"l": 44, "r": 38, "t": 28}
_LEGEND_ROW_PX = 24
#: Coordinates are clamped to this many canvas sizes around the image in the figure.
_PLOTLY_REACH = 50
_PLOTLY_DASH = {"solid": "solid", "dash": "dash", "dot": "dot", "dashdot": "dashdot"}
_SYMBOLS = {"x": "x-thin-open", "circle-open": "circle-open", "diamond": "diamond", "circle": "circle"}


@dataclass(frozen=True, slots=True)
class FigureSize:
    """Screen pixels: the plot area (the image), the legend strip below it, the whole figure."""

    plot_width: int
    plot_height: int
    legend_height: int

    @property
    def height(self) -> int:
        return self.plot_height + MARGIN["t"] + self.legend_height


def _legend_rows(titles: list[str], width: int) -> int:
    """How many rows plotly's horizontal legend needs for ``titles`` in ``width`` screen pixels."""
    font = load_font(LEGEND_FONT_PX)
    rows, used = 1, 0.0
    for title in titles:
        left, _, right, _ = text_box(font, title)
        item = 40 + (right - left) * 1.1 + 10  # sample + text + spacing
        if used and used + item > width:
            rows, used = rows + 1, 0.0
        used += item
    return rows


def figure_size(model: OverlayModel, layers: Iterable[str] = ALL_LAYERS, column_width: int | None = None) -> FigureSize:
    """The figure's size for a column ``column_width`` screen pixels wide."""
    column = column_width or DEFAULT_COLUMN_WIDTH
    room = max(column - MARGIN["l"] - MARGIN["r"], 120)
    plot_width = min(room, max(model.width, MIN_PLOT_WIDTH))
    plot_height = max(round(plot_width * model.height / max(model.width, 1)), 60)
    titles = [entry.title for entry in legend_entries(model, layers)]
    legend = 12 + _LEGEND_ROW_PX * _legend_rows(titles, column) if titles else 12  # the x ticks sit on top
    return FigureSize(int(plot_width), int(plot_height), int(legend))


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


def _flat_coords(shape: Box | Point | Segment) -> list[float]:
    if isinstance(shape, Segment):
        return [shape.start.x, shape.start.y, shape.end.x, shape.end.y]
    return list(shape)


def _hover(mark: ShapeMark) -> str:
    who = "prediction" if mark.side == "pred" else "ground truth"
    where = f" '{label_key(mark.key)}'" if mark.key is not None else ""
    coords = ", ".join(f"{v:.1f}" for v in _flat_coords(mark.shape))
    return plotly_text(f"{LEGEND_TITLES[mark.layer]}: {who}{where}[{mark.index}] ({coords})")


def _shape_traces(model: OverlayModel, layer: str) -> list[dict[str, Any]]:
    """One layer's outlines (a lines trace) and points (a markers trace), one legend entry."""
    style = STYLES[layer]
    marks = [m for m in model.marks if m.layer == layer]
    if not marks:
        return []
    w, h = model.width, model.height
    name = LEGEND_TITLES[layer]
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
    symbol = _SYMBOLS[style.marker]
    open_marker = style.marker in ("x", "circle-open")
    marker = {
        "symbol": symbol,
        "size": 14 if open_marker else 11,
        "color": style.hex,
        "line": {"color": style.hex if open_marker else "#ffffff", "width": 3 if open_marker else 1.5},
    }
    traces = []
    if lines_x:
        traces.append({
            "type": "scatter",
            "mode": "lines+markers" if model.shape_kind == "segment" else "lines",
            "x": lines_x,
            "y": lines_y,
            "name": name,
            "legendgroup": layer,
            "line": {"color": style.hex, "width": 2.5 * style.width_scale, "dash": _PLOTLY_DASH[style.dash]},
            "marker": {**marker, "size": 9},
            "hovertext": hover_lines,
            "hoverinfo": "text",
            "connectgaps": False,
        })
    if point_x:
        traces.append({
            "type": "scatter",
            "mode": "markers",
            "x": point_x,
            "y": point_y,
            "name": name,
            "legendgroup": layer,
            "showlegend": not lines_x,
            "marker": marker,
            "hovertext": point_text,
            "hoverinfo": "text",
        })
    return traces


def _ring_trace(model: OverlayModel) -> dict[str, Any]:
    w, h = model.width, model.height
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
    suffix = f" ({model.half_life_px:.1f} px)" if model.half_life_px else ""
    return {
        "type": "scatter",
        "mode": "lines",
        "x": xs,
        "y": ys,
        "name": LEGEND_TITLES[LAYER_HALF_LIFE] + suffix,
        "legendgroup": LAYER_HALF_LIFE,
        "line": {"color": style.hex, "width": 1.5, "dash": "dot"},
        "hoverinfo": "skip",
    }


def _connector_trace(model: OverlayModel) -> dict[str, Any]:
    w, h = model.width, model.height
    xs: list[float | None] = []
    ys: list[float | None] = []
    texts: list[str | None] = []
    for connector in model.connectors:
        xs.extend([_clamp_for_plotly(connector.start[0], w), _clamp_for_plotly(connector.end[0], w), None])
        ys.extend([_clamp_for_plotly(connector.start[1], h), _clamp_for_plotly(connector.end[1], h), None])
        where = f" '{label_key(connector.key)}'" if connector.key is not None else ""
        text = plotly_text(f"pred{where}[{connector.pred_index}] ↔ gt{where}[{connector.gt_index}]: {connector.label}")
        texts.extend([text, text, None])
    style = STYLES[LAYER_MATCHES]
    return {
        "type": "scatter",
        "mode": "lines",
        "x": xs,
        "y": ys,
        "name": LEGEND_TITLES[LAYER_MATCHES],
        "legendgroup": LAYER_MATCHES,
        "line": {"color": style.hex, "width": 2},
        "hovertext": texts,
        "hoverinfo": "text",
    }


@functools.lru_cache(maxsize=4096)
def _label_size_px(text: str) -> tuple[float, float]:
    """A label's box in screen pixels (plotly's font is close to Pillow's default at the same size)."""
    left, _, right, _ = text_box(load_font(LABEL_FONT_PX), text)
    return ((right - left) * 1.1 + 8, LABEL_FONT_PX * 1.3 + 6)


def placed_labels(model: OverlayModel, layers: Iterable[str], scale: float) -> list[PlacedTag]:
    """Where the labels go in image pixels, for a figure showing ``scale`` screen pixels per image pixel."""

    def measure(text: str) -> tuple[float, float]:
        width, height = _label_size_px(text)
        return (width / scale, height / scale)

    return place_tags(model, layers, measure, gap=4 / scale, point_radius=8 / scale)


def _annotations(model: OverlayModel, visible: frozenset[str], scale: float) -> list[dict[str, Any]]:
    """The tags as plotly annotations, each in the box :func:`placed_labels` chose at this scale."""
    annotations = []
    for placed in placed_labels(model, visible, scale):
        x0, y0, _, _ = placed.rect
        colour = placed.tag.style.colour
        annotations.append({
            "x": x0,
            "y": y0,
            "xref": "x",
            "yref": "y",
            "text": plotly_text(placed.tag.text),
            "showarrow": False,
            "xanchor": "left",
            "yanchor": "top",
            "font": {"size": LABEL_FONT_PX, "color": "#000000" if luminance(colour) > 140 else "#ffffff"},
            "bgcolor": placed.tag.style.hex,
            "bordercolor": "#ffffff",
            "borderwidth": 1,
            "borderpad": 2,
        })
    return annotations


def plotly_figure(
    model: OverlayModel,
    image: Image.Image | None = None,
    layers: Iterable[str] = ALL_LAYERS,
    *,
    column_width: int | None = None,
    image_uri: str | None = None,
) -> dict[str, Any]:
    """A plotly figure (as a dict: ``st.plotly_chart`` and ``go.Figure`` take it) with zoom and pan.

    ``column_width``: the width of the column it is shown in (screen pixels);
    show it with ``width="stretch"``. Each layer is one legend group, so clicking
    the legend toggles it too. ``image_uri`` (see :func:`image_data_uri`) avoids
    re-encoding the image on every rerun.
    """
    visible = frozenset(layers)
    w, h = model.width, model.height
    size = figure_size(model, visible, column_width)
    traces: list[dict[str, Any]] = []
    if LAYER_HALF_LIFE in visible and model.rings:
        traces.append(_ring_trace(model))
    for layer in (LAYER_GROUND_TRUTH, LAYER_MISSED, LAYER_PREDICTION, LAYER_UNMATCHED):
        if layer in visible:
            traces.extend(_shape_traces(model, layer))
    if LAYER_MATCHES in visible and model.connectors:
        traces.append(_connector_trace(model))

    images, shapes = [], []
    if image is not None or image_uri is not None:
        images.append({
            "source": image_uri if image_uri is not None else image_data_uri(image),
            "xref": "x", "yref": "y", "x": 0, "y": 0, "sizex": w, "sizey": h,
            "sizing": "stretch", "layer": "below",
        })
    else:
        shapes.append({
            "type": "rect", "x0": 0, "y0": 0, "x1": w, "y1": h,
            "fillcolor": "#eceef2", "line": {"color": "#bec2c8", "width": 1}, "layer": "below",
        })
    axis = {"showgrid": False, "gridcolor": "rgba(0,0,0,0)", "zeroline": False, "constrain": "domain",
            "tickfont": {"size": 10}}
    layout = {
        # A wider column than planned leaves room on the right, a narrower one below: never above or between.
        "xaxis": {**axis, "range": [0, w], "side": "top", "constraintoward": "left"},
        "yaxis": {**axis, "range": [h, 0], "scaleanchor": "x", "scaleratio": 1, "constraintoward": "top"},
        "images": images,
        "shapes": shapes,
        "annotations": _annotations(model, visible, size.plot_width / max(w, 1)),
        "dragmode": "pan",
        "height": size.height,
        "margin": {**MARGIN, "b": size.legend_height, "pad": 0},
        # Below the plot, in the bottom margin: outside the image, never under the mode bar.
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "top",
                   "font": {"size": LEGEND_FONT_PX}},
        # Upright in the right margin, away from the legend below.
        "modebar": {"orientation": "v"},
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "showlegend": True,
    }
    return {"data": traces, "layout": layout}


#: ``config`` for ``st.plotly_chart``: wheel zoom, pan by default, PNG from the mode bar.
PLOTLY_CONFIG: dict[str, Any] = {"scrollZoom": True, "displaylogo": False}
