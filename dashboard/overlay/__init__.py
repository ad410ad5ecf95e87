"""Ground truth and prediction drawn over the image: one layer model, two renderers.

:func:`build_overlay` reads *only* the scorer's own explanation and turns it into
drawing primitives, each on one named layer, each role with its own colour (the
colour-blind-safe Okabe-Ito palette) *and* its own line style and point marker,
so the roles stay apart without colour:

==================  ==================================================================
layer               what it draws
==================  ==================================================================
``ground_truth``    matched ground truth: bluish green, solid; points: filled circles
``prediction``      matched predictions: blue, dashed; points: diamonds
``matches``         an orange line joining each matched pair; its IoU (boxes) or
                    similarity and distance (points, segments) labelled beside the pair
``unmatched``       predictions paired with nothing ("extra"): vermillion, dash-dot,
                    crossed out (X), tagged "unmatched" / "extra key"
``missed``          ground truth paired with nothing: reddish purple, dotted; points:
                    open circles; tagged "missed"
``half_life``       a dotted ring of one half-life around ground-truth points and
                    segment ends (a prediction on the ring scores 0.5)
``labels``          sequence positions ``[i]`` and map role keys
==================  ==================================================================

Labels sit beside their shape on a coloured background, never over the
geometry when there is room (:func:`place_tags`). :func:`render_pil` draws the
model with Pillow (static picture, PNG download with a legend strip, gallery
thumbnails); :func:`plotly_figure` builds the interactive figure (zoom and pan)
sized for its column, legend below the plot. Both take the set of visible
layers. Coordinates are pixels of the image as given; shapes far outside it (or
at absurd coordinates) are clipped, never an error. Without an image, a blank
canvas of the image size stands in. :func:`ground_truth_overlay` draws only what
an instance asks for (Compare).
"""

from dashboard.overlay.figure import (
    PLOTLY_CONFIG,
    FigureSize,
    figure_size,
    image_data_uri,
    placed_labels,
    plotly_figure,
)
from dashboard.overlay.model import (
    ALL_LAYERS,
    LAYER_GROUND_TRUTH,
    LAYER_HALF_LIFE,
    LAYER_LABELS,
    LAYER_MATCHES,
    LAYER_MISSED,
    LAYER_PREDICTION,
    LAYER_TITLES,
    LAYER_UNMATCHED,
    LAYERS,
    LEGEND_TITLES,
    OKABE_ITO,
    STYLE_CONNECTOR,
    STYLE_GROUND_TRUTH,
    STYLE_MISSED,
    STYLE_PREDICTION,
    STYLE_RING,
    STYLE_UNMATCHED,
    STYLES,
    Connector,
    LegendEntry,
    OverlayModel,
    PlacedTag,
    Ring,
    ShapeMark,
    Style,
    Tag,
    build_layers,
    build_overlay,
    clip_line,
    connector_label,
    cropped,
    ground_truth_overlay,
    legend_entries,
    legend_text,
    place_tags,
    scaled,
    shape_bounds,
    source_size,
)
from dashboard.overlay.pil import (
    LegendItem,
    legend_layout,
    png_bytes,
    render_pil,
    render_png,
    thumbnail,
    with_legend,
)

__all__ = [
    "ALL_LAYERS",
    "LAYERS",
    "LAYER_GROUND_TRUTH",
    "LAYER_HALF_LIFE",
    "LAYER_LABELS",
    "LAYER_MATCHES",
    "LAYER_MISSED",
    "LAYER_PREDICTION",
    "LAYER_TITLES",
    "LAYER_UNMATCHED",
    "LEGEND_TITLES",
    "OKABE_ITO",
    "PLOTLY_CONFIG",
    "STYLES",
    "STYLE_CONNECTOR",
    "STYLE_GROUND_TRUTH",
    "STYLE_MISSED",
    "STYLE_PREDICTION",
    "STYLE_RING",
    "STYLE_UNMATCHED",
    "Connector",
    "FigureSize",
    "LegendEntry",
    "LegendItem",
    "OverlayModel",
    "PlacedTag",
    "Ring",
    "ShapeMark",
    "Style",
    "Tag",
    "build_layers",
    "build_overlay",
    "clip_line",
    "connector_label",
    "cropped",
    "figure_size",
    "ground_truth_overlay",
    "image_data_uri",
    "legend_entries",
    "legend_layout",
    "legend_text",
    "place_tags",
    "placed_labels",
    "plotly_figure",
    "png_bytes",
    "render_pil",
    "render_png",
    "scaled",
    "shape_bounds",
    "source_size",
    "thumbnail",
    "with_legend",
]
