"""The overlay draws exactly the scorer's explanation, in distinct styles, and never raises."""

from __future__ import annotations

import io
import json
import math
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from dashboard import overlay  # noqa: E402
from dashboard.overlay import (  # noqa: E402
    LAYER_GROUND_TRUTH,
    LAYER_HALF_LIFE,
    LAYER_LABELS,
    LAYER_MATCHES,
    LAYER_MISSED,
    LAYER_PREDICTION,
    LAYER_UNMATCHED,
    STYLE_CONNECTOR,
    STYLE_GROUND_TRUTH,
    STYLE_MISSED,
    STYLE_PREDICTION,
    STYLE_RING,
    STYLE_UNMATCHED,
)
from scoring import explain_trace_response  # noqa: E402
from scoring.verifier import (  # noqa: E402  # noqa: E402
    RESOLVER_IDS,  # noqa: E402
    Box,
    Match,
    MatchResult,
    ParsedAnnotation,
    Point,
    Segment,
)

WHITE = (255, 255, 255)


def evaluate(kind, pred, gt, *, size=(200, 150), half_life=None, answer=1):
    return explain_trace_response(
        response="I looked carefully.\n" + json.dumps({"answer": answer, "annotation": pred}),
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": kind, "value": gt},
        reward_contract={"answer": {"id": "answer_exact_match_v0"}, "annotation": {"id": RESOLVER_IDS[kind]}},
        image_size=list(size) if size else None,
        point_half_life_px=half_life,
    )


def colours(picture):
    """Every RGB colour present in ``picture``."""
    return {c for _, c in picture.getcolors(maxcolors=1 << 24)}


def white(size=(200, 150)):
    return Image.new("RGB", size, WHITE)


def render(evaluation, layers, image=None, size=(200, 150)):
    image = white(size) if image is None else image
    model = overlay.build_overlay(evaluation, image.size)
    return model, overlay.render_pil(model, image, layers, line_width=2)


# --------------------------------------------------------------------------- styles at the pixel level


def test_ground_truth_box_edge_is_solid_and_prediction_edge_is_dashed():
    ev = evaluate("bbox", [60, 60, 180, 120], [20, 20, 80, 80])  # they overlap: a match, not missed + extra
    _, picture = render(ev, {LAYER_GROUND_TRUTH})
    top_edge = [picture.getpixel((x, 20)) for x in range(24, 77)]
    assert all(p == STYLE_GROUND_TRUTH.colour for p in top_edge)  # solid: no gap anywhere
    assert picture.getpixel((50, 50)) == WHITE  # outline only
    assert picture.getpixel((150, 60)) == WHITE  # the prediction layer is off

    _, picture = render(ev, {LAYER_PREDICTION})
    pred_edge = [picture.getpixel((x, 60)) for x in range(121, 179)]
    assert STYLE_PREDICTION.colour in pred_edge
    assert WHITE in pred_edge  # dashed: gaps between dashes
    assert set(pred_edge) <= {STYLE_PREDICTION.colour, WHITE}
    assert picture.getpixel((50, 20)) == WHITE  # the ground-truth layer is off


def test_match_connector_joins_centres_and_is_labelled_with_the_matches_iou():
    ev = evaluate("bbox", [30, 30, 90, 90], [20, 20, 80, 80])
    match = ev.annotation.match.matches[0]
    model, picture = render(ev, {LAYER_MATCHES})
    (connector,) = model.connectors
    assert connector.start == (60.0, 60.0) and connector.end == (50.0, 50.0)
    assert connector.label == f"IoU {match.iou:.2f}"
    assert model.tag_texts(LAYER_MATCHES) == [f"IoU {match.iou:.2f}"]
    assert match.iou == pytest.approx(2500 / 4700)
    assert connector.similarity == match.similarity


def test_point_connector_label_has_similarity_and_distance():
    ev = evaluate("point", [100, 80], [60, 50], half_life=40)
    (connector,) = overlay.build_overlay(ev).connectors
    match = ev.annotation.match.matches[0]
    assert match.distance == pytest.approx(50.0)
    assert connector.label == f"sim {match.similarity:.2f} · 50.0 px"
    assert match.similarity == pytest.approx(math.exp(-math.log(2) * (50 / 40) ** 2))


def test_connector_line_pixels_have_the_connector_colour():
    ev = evaluate("point", [180, 120], [20, 20], size=(200, 150))
    _, picture = render(ev, {LAYER_MATCHES})
    # A quarter of the way from prediction to ground truth (the label sits at the middle).
    x, y = 180 + (20 - 180) * 0.25, 120 + (20 - 120) * 0.25
    assert picture.getpixel((round(x), round(y))) == STYLE_CONNECTOR.colour


def test_unmatched_prediction_is_crossed_and_tagged():
    ev = evaluate("bbox_set", [[20, 20, 80, 80], [120, 40, 180, 100]], [[22, 22, 82, 82]])
    assert ev.annotation.match.unmatched_pred == ((None, 1),)
    model, picture = render(ev, {LAYER_UNMATCHED})
    crossed = [m for m in model.marks if m.layer == LAYER_UNMATCHED]
    assert [(m.index, m.crossed) for m in crossed] == [(1, True)]
    assert model.tag_texts(LAYER_UNMATCHED) == ["unmatched"]
    assert picture.getpixel((150, 70)) == STYLE_UNMATCHED.colour  # the diagonals cross at the centre
    assert picture.getpixel((50, 50)) == WHITE  # the matched prediction is on another layer


def test_missed_ground_truth_is_dotted_and_tagged_missed():
    ev = evaluate("bbox_set", [[20, 20, 80, 80]], [[22, 22, 82, 82], [120, 40, 180, 100]])
    assert ev.annotation.match.unmatched_gt == ((None, 1),)
    model, picture = render(ev, {LAYER_MISSED})
    assert model.tag_texts(LAYER_MISSED) == ["missed"]
    edge = [picture.getpixel((x, 40)) for x in range(124, 177)]
    assert STYLE_MISSED.colour in edge and WHITE in edge  # dotted
    assert picture.getpixel((50, 22)) == WHITE  # matched ground truth is not "missed"


def test_half_life_ring_has_the_evaluations_radius():
    ev = evaluate("point", [100, 75], [100, 75], half_life=30)
    model, picture = render(ev, {LAYER_HALF_LIFE})
    (ring,) = model.rings
    assert ring.radius == ev.annotation.half_life_px == 30
    assert picture.getpixel((130, 75)) == STYLE_RING.colour  # a dash starts at angle 0
    assert picture.getpixel((100, 75)) == WHITE


def test_segments_get_a_ring_at_each_ground_truth_end():
    ev = evaluate("segment", [[10, 10], [100, 100]], [[12, 10], [98, 104]], half_life=25)
    model = overlay.build_overlay(ev)
    assert [r.center for r in model.rings] == [(12.0, 10.0), (98.0, 104.0)]


def test_sequences_are_numbered_on_the_ground_truth_and_on_unpaired_predictions():
    """A matched prediction with its partner's number is not numbered twice (fewer labels over the image)."""
    ev = evaluate("point_sequence", [[10, 10], [50, 50], [90, 90]], [[12, 12], [52, 48]])
    model = overlay.build_overlay(ev)
    gt_labels = [t.text for t in model.tags if t.layer == LAYER_LABELS and t.style == STYLE_GROUND_TRUTH]
    pred_labels = [t.text for t in model.tags if t.layer == LAYER_LABELS and t.style == STYLE_PREDICTION]
    assert gt_labels == ["[0]", "[1]"]
    assert pred_labels == ["[2]"]
    assert model.tag_texts(LAYER_UNMATCHED) == ["unmatched"]


def test_map_keys_are_labelled_and_missing_and_extra_keys_are_named():
    ev = evaluate(
        "bbox_map",
        {"cat": [10, 10, 60, 60], "hat": [100, 10, 140, 40]},
        {"cat": [12, 12, 62, 62], "dog": [100, 80, 160, 140]},
    )
    model = overlay.build_overlay(ev)
    assert sorted(model.tag_texts(LAYER_LABELS)) == ["cat", "dog", "hat"]  # matched 'cat' is named once
    assert model.tag_texts(LAYER_MISSED) == ["missed key 'dog'"]
    assert model.tag_texts(LAYER_UNMATCHED) == ["extra key 'hat'"]
    (connector,) = model.connectors
    assert connector.key == "cat"


def test_overlay_follows_the_given_pairings_and_never_rematches(monkeypatch):
    """A pairing the scorer would never make is drawn as given: the overlay only reads MatchResult."""
    import scoring.verifier.matching

    def boom(*args, **kwargs):
        raise AssertionError("the overlay must not match anything itself")

    monkeypatch.setattr(scoring.verifier.matching, "match_annotations", boom)
    pred = ParsedAnnotation("bbox_set", "bbox", "set", ((None, (Box(0, 0, 10, 10), Box(100, 100, 110, 110))),))
    gt = ParsedAnnotation("bbox_set", "bbox", "set", ((None, (Box(0, 0, 10, 10), Box(100, 100, 110, 110))),))
    crossed_pairing = MatchResult(
        0.0, (Match(None, 0, 1, 0.0, iou=0.0), Match(None, 1, 0, 0.0, iou=0.0)), (), (), 2, 2, 0.0
    )
    model = overlay.build_layers(pred, gt, crossed_pairing, image_size=(120, 120))
    assert [(c.start, c.end) for c in model.connectors] == [((5.0, 5.0), (105.0, 105.0)), ((105.0, 105.0), (5.0, 5.0))]
    assert [c.label for c in model.connectors] == ["IoU 0.00", "IoU 0.00"]


def test_a_prediction_paired_with_another_role_number_keeps_its_own_label():
    pred = ParsedAnnotation("bbox_set_map", "bbox", "set_map", (("c", (Box(0, 0, 10, 10), Box(50, 50, 60, 60))),))
    gt = ParsedAnnotation("bbox_set_map", "bbox", "set_map", (("c", (Box(50, 50, 60, 60), Box(0, 0, 10, 10))),))
    crossed = MatchResult(1.0, (Match("c", 0, 1, 1.0, iou=1.0), Match("c", 1, 0, 1.0, iou=1.0)), (), (), 2, 2, 1.0)
    model = overlay.build_layers(pred, gt, crossed, image_size=(120, 120))
    pred_labels = [t.text for t in model.tags if t.layer == LAYER_LABELS and t.style == STYLE_PREDICTION]
    assert sorted(pred_labels) == ["c[0]", "c[1]"]  # pred c[0] is paired with gt c[1]: both names matter


def test_unparsed_prediction_marks_every_ground_truth_missed_and_keeps_the_reason():
    ev = explain_trace_response(
        response='{"answer": 1, "annotation": [[0, 0, 0, 10]]}',
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "bbox_set", "value": [[10, 10, 50, 50]]},
        reward_contract={"annotation": {"id": "bbox_set_soft_iou_v0"}},
    )
    assert "zero-area box" in ev.annotation.reason
    model = overlay.build_overlay(ev)
    assert [m.layer for m in model.marks] == [LAYER_MISSED]
    assert model.notes[0] == ev.annotation.reason


# --------------------------------------------------------------------------- canvas and export


def test_image_less_mode_uses_the_metadata_size_on_a_blank_canvas():
    ev = evaluate("bbox", [10, 10, 50, 50], [12, 12, 52, 52], size=(320, 240))
    model = overlay.build_overlay(ev)
    assert (model.width, model.height, model.size_source) == (320, 240, "metadata")
    picture = overlay.render_pil(model)
    assert picture.size == (320, 240)
    assert picture.getpixel((300, 200)) == (236, 238, 242)


def test_image_less_mode_without_any_size_uses_the_shapes_extent():
    ev = evaluate("bbox", [10, 10, 300, 200], [12, 12, 52, 52], size=None)
    model = overlay.build_overlay(ev)
    assert model.size_source == "shapes"
    assert model.width >= 300 and model.height >= 200


def test_shapes_outside_the_image_are_noted():
    ev = evaluate("bbox_set", [[-500, -500, -400, -400], [10, 10, 40, 40]], [[10, 10, 40, 40]])
    model = overlay.build_overlay(ev, (200, 150))
    assert any("outside the 200x150 canvas" in note for note in model.notes)


def test_png_export_round_trips_with_a_legend_strip_below_the_picture():
    ev = evaluate("point_set", [[10, 10], [50, 60]], [[12, 12]])
    model = overlay.build_overlay(ev, (200, 150))
    data = overlay.render_png(model, white())
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    decoded = Image.open(io.BytesIO(data)).convert("RGB")
    plain = overlay.render_pil(model, white())
    assert decoded.width == 200 and decoded.height > 150  # the legend strip is added below
    assert decoded.crop((0, 0, 200, 150)).tobytes() == plain.tobytes()  # the picture itself is unchanged
    strip = colours(decoded.crop((0, 151, 200, decoded.height)))
    entries = overlay.legend_entries(model)
    assert [e.layer for e in entries] == [LAYER_GROUND_TRUTH, LAYER_PREDICTION, LAYER_UNMATCHED, LAYER_MATCHES,
                                            LAYER_HALF_LIFE]
    for entry in entries:
        assert entry.style.colour in strip  # each style's sample is drawn in the strip


def test_render_does_not_modify_the_source_image():
    image = white()
    ev = evaluate("bbox", [10, 10, 50, 50], [12, 12, 52, 52])
    overlay.render_pil(overlay.build_overlay(ev, image.size), image)
    assert image.getpixel((12, 12)) == WHITE


def test_greyscale_and_rgba_images_render():
    ev = evaluate("bbox", [10, 10, 50, 50], [12, 12, 52, 52])
    for mode in ("L", "RGBA", "P"):
        picture = overlay.render_pil(overlay.build_overlay(ev, (200, 150)), Image.new(mode, (200, 150)))
        assert picture.mode == "RGB" and picture.size == (200, 150)


def test_thumbnail_is_small():
    ev = evaluate("bbox", [10, 10, 50, 50], [12, 12, 52, 52], size=(1024, 768))
    thumb = overlay.thumbnail(overlay.build_overlay(ev), None, 256)
    assert max(thumb.size) == 256


# --------------------------------------------------------------------------- plotly


def test_plotly_figure_layers_axes_and_image():
    import plotly.graph_objects as go

    ev = evaluate(
        "bbox_set_map",
        {"a": [[20, 20, 80, 80]], "b": [[120, 40, 180, 100]]},
        {"a": [[22, 22, 82, 82]], "c": [[10, 100, 40, 140]]},
    )
    model = overlay.build_overlay(ev, (200, 150))
    figure = overlay.plotly_figure(model, white())
    groups = {trace["legendgroup"] for trace in figure["data"]}
    assert groups == {LAYER_GROUND_TRUTH, LAYER_PREDICTION, LAYER_UNMATCHED, LAYER_MISSED, LAYER_MATCHES}
    styles = {t["legendgroup"]: t["line"] for t in figure["data"]}
    assert styles[LAYER_GROUND_TRUTH]["dash"] == "solid" and styles[LAYER_PREDICTION]["dash"] == "dash"
    assert styles[LAYER_MISSED]["dash"] == "dot"
    assert figure["layout"]["yaxis"]["range"] == [150, 0]  # image coordinates: y down
    assert figure["layout"]["yaxis"]["scaleanchor"] == "x"
    assert figure["layout"]["dragmode"] == "pan"
    assert figure["layout"]["images"][0]["source"].startswith("data:image/")
    assert {a["text"] for a in figure["layout"]["annotations"]} >= {"missed key 'c'", "extra key 'b'", "a"}
    go.Figure(figure)  # what st.plotly_chart validates

    hidden = overlay.plotly_figure(model, None, {LAYER_GROUND_TRUTH})
    assert {t["legendgroup"] for t in hidden["data"]} == {LAYER_GROUND_TRUTH}
    assert hidden["layout"]["images"] == [] and hidden["layout"]["shapes"][0]["type"] == "rect"
    assert hidden["layout"]["annotations"] == []


def test_plotly_labels_escape_markup_from_role_keys():
    ev = evaluate("bbox_map", {"<a href='x'>k</a>": [10, 10, 50, 50]}, {"cat": [10, 10, 50, 50]})
    figure = overlay.plotly_figure(overlay.build_overlay(ev, (200, 150)))
    texts = [a["text"] for a in figure["layout"]["annotations"]]
    assert any("&lt;a href='x'&gt;k&lt;/a&gt;" in t for t in texts)
    assert not any("<a" in t for t in texts)
    hovers = [h for trace in figure["data"] for h in trace.get("hovertext", []) if h]
    assert hovers and not any("<a" in h for h in hovers)


# --------------------------------------------------------------------------- roles apart without colour

ROLES = (LAYER_GROUND_TRUTH, LAYER_PREDICTION, LAYER_MISSED, LAYER_UNMATCHED)


def test_roles_use_the_okabe_ito_palette_and_differ_in_dash_and_marker():
    palette = set(overlay.OKABE_ITO.values())
    for style in overlay.STYLES.values():
        assert style.colour in palette
    dashes = {layer: overlay.STYLES[layer].dash for layer in ROLES}
    assert dashes == {LAYER_GROUND_TRUTH: "solid", LAYER_PREDICTION: "dash", LAYER_MISSED: "dot",
                      LAYER_UNMATCHED: "dashdot"}
    markers = {overlay.STYLES[layer].marker for layer in ROLES}
    assert len(markers) == len(ROLES)  # points differ by marker symbol, not only by colour
    assert len({overlay.STYLES[layer].colour for layer in ROLES}) == len(ROLES)


def _runs(pixels, colour):
    """Lengths of the runs of ``colour`` and of its gaps along a line of pixels."""
    runs, gaps, current, on = [], [], 0, None
    for p in pixels:
        is_on = p == colour
        if on is None or is_on == on:
            current += 1
        else:
            (runs if on else gaps).append(current)
            current = 1
        on = is_on
    (runs if on else gaps).append(current)
    return runs, gaps


def test_extra_prediction_edge_is_dash_dot_long_and_short_dashes():
    ev = evaluate("bbox_set", [[20, 20, 80, 80], [10, 40, 190, 140]], [[22, 22, 82, 82]])
    _, picture = render(ev, {LAYER_UNMATCHED})
    edge = [picture.getpixel((x, 140)) for x in range(12, 188)]
    runs, _ = _runs(edge, STYLE_UNMATCHED.colour)
    assert max(runs) >= 3 * min(runs)  # long dashes and short dots alternate
    ev = evaluate("bbox_set", [[120, 40, 180, 100]], [[10, 40, 190, 140], [122, 42, 182, 102]])
    _, picture = render(ev, {LAYER_MISSED})
    runs, _ = _runs([picture.getpixel((x, 140)) for x in range(12, 188)], STYLE_MISSED.colour)
    assert max(runs) <= 3  # dotted: only short marks


def test_plotly_traces_carry_each_roles_dash_and_marker():
    extra = evaluate("point_set", [[20, 20], [150, 100]], [[22, 22]], half_life=20)
    missed = evaluate("point_set", [[20, 20]], [[22, 22], [60, 120]], half_life=20)
    traces = [t for ev in (extra, missed) for t in overlay.plotly_figure(overlay.build_overlay(ev, (200, 150)))["data"]]
    symbols = {t["legendgroup"]: t["marker"]["symbol"] for t in traces if t["mode"] == "markers"}
    assert symbols == {LAYER_GROUND_TRUTH: "circle", LAYER_MISSED: "circle-open", LAYER_PREDICTION: "diamond",
                       LAYER_UNMATCHED: "x-thin-open"}
    colours_by_group = {t["legendgroup"]: t["marker"]["color"] for t in traces if t["mode"] == "markers"}
    assert colours_by_group == {layer: overlay.STYLES[layer].hex for layer in colours_by_group}
    figure = overlay.plotly_figure(overlay.build_overlay(_bbox_scene(), (640, 480)))
    dashes = {t["legendgroup"]: t["line"]["dash"] for t in figure["data"] if t["legendgroup"] in ROLES}
    assert dashes == {LAYER_GROUND_TRUTH: "solid", LAYER_PREDICTION: "dash", LAYER_MISSED: "dot",
                      LAYER_UNMATCHED: "dashdot"}


# --------------------------------------------------------------------------- figure layout


def _bbox_scene(size=(640, 480)):
    return evaluate(
        "bbox_set_map",
        {"cat": [[200, 150, 300, 250]], "hat": [[420, 300, 500, 380]]},
        {"cat": [[210, 160, 310, 260]], "dog": [[80, 320, 160, 400]]},
        size=size,
    )


def test_plotly_legend_sits_below_the_plot_and_the_mode_bar_upright_in_the_right_margin():
    model = overlay.build_overlay(_bbox_scene(), (640, 480))
    figure = overlay.plotly_figure(model, white((640, 480)), column_width=820)
    layout = figure["layout"]
    legend = layout["legend"]
    assert legend["orientation"] == "h" and legend["yanchor"] == "top" and legend["y"] <= 0  # outside, below
    assert layout["margin"]["b"] >= 24  # the legend's strip is the bottom margin
    assert layout["modebar"]["orientation"] == "v" and layout["margin"]["r"] >= 30  # never over the legend
    assert layout["xaxis"]["side"] == "top"  # tick labels above: nothing between the image and the legend
    go = pytest.importorskip("plotly.graph_objects")
    go.Figure(figure)


def test_plotly_figure_is_as_wide_as_the_column_allows_up_to_the_image_and_keeps_its_aspect():
    model = overlay.build_overlay(_bbox_scene(), (640, 480))
    size = overlay.figure_size(model, column_width=820)
    assert size.plot_width == 640  # the image's own size: room for it in the column
    assert size.plot_height == 480
    figure = overlay.plotly_figure(model, None, column_width=820)
    assert figure["layout"]["height"] == size.height == 480 + figure["layout"]["margin"]["t"] + size.legend_height
    narrow = overlay.figure_size(model, column_width=400)
    assert narrow.plot_width == 400 - 44 - 38 and narrow.plot_height == round(narrow.plot_width * 480 / 640)
    big = overlay.build_layers(None, None, None, image_size=(2000, 500))
    wide = overlay.figure_size(big, column_width=820)
    assert wide.plot_width == 820 - 44 - 38 and wide.plot_height == round(wide.plot_width / 4)


def _rect_hits_box(rect, box):
    x0, y0, x1, y1 = rect
    return x0 < box[2] and box[0] < x1 and y0 < box[3] and box[1] < y1


def test_plotly_labels_sit_outside_every_shape():
    ev = _bbox_scene()
    model = overlay.build_overlay(ev, (640, 480))
    figure = overlay.plotly_figure(model, None, column_width=820)
    annotations = figure["layout"]["annotations"]
    assert {a["text"] for a in annotations} >= {"IoU " + f"{ev.annotation.match.matches[0].iou:.2f}",
                                                "missed key 'dog'", "extra key 'hat'", "cat"}
    boxes = [tuple(m.shape) for m in model.marks]
    size = overlay.figure_size(model, column_width=820)
    placed = overlay.placed_labels(model, overlay.ALL_LAYERS, size.plot_width / model.width)
    assert len(placed) == len(annotations)
    for p, a in zip(placed, annotations, strict=True):
        assert (a["x"], a["y"]) == (p.rect[0], p.rect[1]) and a["xanchor"] == "left" and a["yanchor"] == "top"
        assert a["bgcolor"] == p.tag.style.hex  # on a background
        assert not any(_rect_hits_box(p.rect, box) for box in boxes), (p.tag.text, p.rect)
    for i, p in enumerate(placed):  # nor over each other
        assert not any(_rect_hits_box(p.rect, q.rect) for q in placed[i + 1:])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(40, 560), st.integers(40, 400), st.integers(8, 60), st.integers(8, 60)),
                min_size=1, max_size=4))
def test_labels_never_cover_their_own_shape_and_stay_on_the_canvas(boxes):
    shapes = tuple(Box(x, y, x + w, y + h) for x, y, w, h in boxes)
    gt = ParsedAnnotation("bbox_sequence", "bbox", "sequence", ((None, shapes),))
    model = overlay.build_layers(None, gt, None, image_size=(640, 480))
    placed = overlay.place_tags(model, overlay.ALL_LAYERS, lambda text: (8 * len(text) + 6, 16), gap=3)
    assert len(placed) == len(model.tags)
    for p in placed:
        x0, y0, x1, y1 = p.rect
        assert x0 >= 0 and y0 >= 0 and x1 <= 640 and y1 <= 480
        assert not _rect_hits_box(p.rect, p.tag.around)


def test_static_labels_avoid_the_geometry_in_pixels():
    ev = evaluate("bbox", [60, 60, 140, 120], [62, 62, 142, 122], size=(200, 150))
    _, picture = render(ev, {LAYER_MATCHES, LAYER_GROUND_TRUTH, LAYER_PREDICTION})
    label_colour = STYLE_CONNECTOR.colour
    # The IoU label is a filled box in the connector colour; none of it lies inside either box.
    inside = picture.crop((64, 64, 139, 119))
    counts = dict((c, n) for n, c in inside.getcolors(maxcolors=1 << 24))
    assert counts.get(label_colour, 0) < 20  # at most the short connector line itself


def test_display_width_draws_labels_larger_for_a_shrunk_picture():
    ev = evaluate("bbox_set", [[100, 100, 300, 300]], [[110, 110, 310, 310], [500, 300, 700, 500]], size=(1000, 750))
    model = overlay.build_overlay(ev, (1000, 750))

    def label_pixels(picture):
        return dict((c, n) for n, c in picture.getcolors(maxcolors=1 << 24)).get(STYLE_MISSED.colour, 0)

    full = overlay.render_pil(model, white((1000, 750)), {LAYER_MISSED})
    shrunk = overlay.render_pil(model, white((1000, 750)), {LAYER_MISSED}, display_width=250)
    assert label_pixels(shrunk) > 2 * label_pixels(full)


def test_legend_layout_wraps_inside_the_width_and_the_strip_grows_with_rows():
    model = overlay.build_overlay(_bbox_scene(), (640, 480))
    entries = overlay.legend_entries(model)
    assert [e.title for e in entries] == ["ground truth", "missed ground truth", "prediction", "extra prediction",
                                          "matched pair · IoU / similarity"]
    wide, wide_height = overlay.legend_layout(entries, 2000, 12)
    narrow, narrow_height = overlay.legend_layout(entries, 240, 12)
    assert len({item.y for item in wide}) == 1 and len({item.y for item in narrow}) > 1
    assert narrow_height > wide_height > 0
    for item in narrow:
        assert item.x + item.sample_width + item.text_width <= 240
    assert overlay.legend_entries(model, {LAYER_GROUND_TRUTH}) == entries[:1]
    assert overlay.legend_layout([], 300, 12) == ([], 0)


def test_legend_text_names_colour_and_line_style():
    text = overlay.legend_text()
    assert "ground truth: bluish green, solid" in text and "prediction: blue, dashed" in text
    assert "missed ground truth: reddish purple, dotted" in text and "extra prediction: vermillion, dash-dot" in text


# --------------------------------------------------------------------------- ground truth alone (Compare)


def test_ground_truth_overlay_draws_the_instances_ground_truth_only():
    annotation_gt = {"type": "bbox_map", "value": {"cat": [12, 12, 62, 62], "dog": [100, 80, 160, 140]}}
    ev = explain_trace_response(
        response=json.dumps({"answer": 1, "annotation": {"cat": [10, 10, 60, 60]}}),
        answer_gt={"type": "integer", "value": 1},
        annotation_gt=annotation_gt,
        reward_contract={"answer": {"id": "answer_exact_match_v0"}, "annotation": {"id": RESOLVER_IDS["bbox_map"]}},
        image_size=[200, 150],
    )
    model = overlay.ground_truth_overlay(ev, (200, 150))
    drawn = {(m.key, tuple(m.shape)) for m in model.marks}
    assert drawn == {(k, tuple(float(v) for v in box)) for k, box in annotation_gt["value"].items()}
    assert {m.layer for m in model.marks} == {LAYER_GROUND_TRUTH} and {m.side for m in model.marks} == {"gt"}
    assert sorted(model.tag_texts()) == ["cat", "dog"]  # keys, no "missed" tags
    assert not model.connectors
    picture = overlay.render_pil(model, white(), legend=True)
    assert picture.getpixel((30, 12)) == STYLE_GROUND_TRUTH.colour  # the top edge of 'cat', solid
    assert [e.layer for e in overlay.legend_entries(model)] == [LAYER_GROUND_TRUTH]


def test_ground_truth_overlay_without_a_ground_truth_says_so():
    ev = explain_trace_response(
        response='{"answer": 1, "annotation": [1, 2, 3, 4]}',
        answer_gt={"type": "integer", "value": 1},
        annotation_gt={"type": "bbox", "value": "not a box"},
        reward_contract={"annotation": {"id": RESOLVER_IDS["bbox"]}},
    )
    model = overlay.ground_truth_overlay(ev)
    assert model.marks == [] and model.notes and model.notes[0].startswith("no ground-truth annotation")


# --------------------------------------------------------------------------- never raises

_COORD = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False),
    st.sampled_from([-1.7e308, 1.7e308, -1e-300, 0.0, 5e-324]),
)


@st.composite
def _shape(draw, kind):
    if kind == "bbox":
        x0, y0, x1, y1 = (draw(_COORD) for _ in range(4))
        return Box(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
    if kind == "point":
        return Point(draw(_COORD), draw(_COORD))
    return Segment(Point(draw(_COORD), draw(_COORD)), Point(draw(_COORD), draw(_COORD)))


@st.composite
def _scene(draw):
    kind = draw(st.sampled_from(["bbox", "point", "segment"]))
    collection = draw(st.sampled_from(["single", "set", "sequence", "map", "set_map"]))
    keyed = collection in ("map", "set_map")

    def annotation():
        keys = draw(st.lists(st.text(min_size=1, max_size=12), min_size=0, max_size=3, unique=True)) if keyed else [None]
        groups = tuple(
            (key, tuple(draw(st.lists(_shape(kind), min_size=0 if collection != "single" else 1, max_size=4))))
            for key in keys
        )
        return ParsedAnnotation(f"{kind}_{collection}", kind, collection, groups)

    pred, gt = annotation(), annotation()
    pairs = []
    for key, group in gt.groups:
        pred_group = pred.group(key)
        for j in range(min(len(group), len(pred_group))):
            if draw(st.booleans()):
                pairs.append(Match(key, j, j, draw(st.floats(0, 1)), iou=0.5 if kind == "bbox" else None,
                                   distance=None if kind == "bbox" else draw(st.floats(0, 1e308))))
    match = draw(st.one_of(st.none(), st.just(MatchResult(0.5, tuple(pairs), (), (), 1, 1, 0.5))))
    size = draw(st.one_of(st.none(), st.tuples(st.integers(1, 900), st.integers(1, 700))))
    half_life = draw(st.one_of(st.none(), st.floats(0.1, 1e9), st.just(math.inf)))
    with_image = draw(st.booleans())
    return pred, gt, match, size, half_life, with_image


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_scene())
def test_overlay_never_raises_for_arbitrary_shapes(scene):
    pred, gt, match, size, half_life, with_image = scene
    image = Image.new("RGB", size, WHITE) if (with_image and size) else None
    model = overlay.build_layers(
        pred, gt, match, half_life_px=half_life, image_size=image.size if image else None, fallback_size=size
    )
    picture = overlay.render_pil(model, image)
    assert picture.size == (model.width, model.height)
    if image is not None:
        assert picture.size == image.size
    figure = overlay.plotly_figure(model, image)
    json.dumps(figure)  # finite, serialisable numbers (no NaN from clamping)
    for trace in figure["data"]:
        for value in trace.get("x", []) + trace.get("y", []):
            assert value is None or math.isfinite(value)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(*(st.integers(-5000, 5000) for _ in range(4))).filter(lambda b: b[0] != b[2] and b[1] != b[3]),
        min_size=0,
        max_size=6,
    ),
    st.lists(
        st.tuples(*(st.integers(-5000, 5000) for _ in range(4))).filter(lambda b: b[0] != b[2] and b[1] != b[3]),
        min_size=1,
        max_size=6,
    ),
)
def test_overlay_of_real_evaluations_never_raises(pred, gt):
    ev = evaluate("bbox_set", [list(b) for b in pred], [list(b) for b in gt], size=(300, 200))
    model = overlay.build_overlay(ev, (300, 200))
    assert len(model.connectors) == len(ev.annotation.match.matches)
    assert sum(1 for m in model.marks if m.layer == LAYER_UNMATCHED) == len(ev.annotation.match.unmatched_pred)
    assert sum(1 for m in model.marks if m.layer == LAYER_MISSED) == len(ev.annotation.match.unmatched_gt)
    overlay.render_pil(model, white((300, 200)))


def test_clip_line_keeps_the_visible_part():
    assert overlay.clip_line(-100, 50, 300, 50, (0, 0, 200, 100)) == (0, 50, 200, 50)
    assert overlay.clip_line(-100, -100, -50, -50, (0, 0, 200, 100)) is None
    assert overlay.clip_line(-1e6, 50, 1e6, 50, (0, 0, 200, 100)) == pytest.approx((0, 50, 200, 50))
    # At the float limits the visible part may collapse, but it stays inside and finite.
    clipped = overlay.clip_line(-1.7e308, 0, 1.7e308, 0, (0, 0, 200, 100))
    assert clipped is not None and all(0 <= v <= 200 for v in clipped)
    assert overlay.clip_line(math.nan, 0, 1, 1, (0, 0, 200, 100)) is None


# --------------------------------------------------------------------------- images shrunk for display


def test_scaled_model_moves_every_coordinate_and_keeps_the_rest():
    ev = evaluate("point_set", [[40, 30], [150, 100]], [[42, 28], [10, 140]], half_life=20)
    model = overlay.build_overlay(ev, (200, 150))
    half = overlay.scaled(model, 100, 75)
    assert (half.width, half.height) == (100, 75)
    assert [m.shape for m in half.marks] == [
        type(m.shape)(*(v / 2 for v in m.shape)) for m in model.marks
    ]
    assert [(c.start, c.end) for c in half.connectors] == [
        ((c.start[0] / 2, c.start[1] / 2), (c.end[0] / 2, c.end[1] / 2)) for c in model.connectors
    ]
    assert [r.radius for r in half.rings] == [r.radius / 2 for r in model.rings]
    assert half.half_life_px == model.half_life_px / 2
    assert [(m.layer, m.key, m.index, m.side) for m in half.marks] == [
        (m.layer, m.key, m.index, m.side) for m in model.marks
    ]
    assert [t.text for t in half.tags] == [t.text for t in model.tags]
    assert overlay.scaled(model, 200, 150) is model


def test_a_shrunk_image_is_drawn_where_the_full_one_would_be():
    """Pixels decoded smaller than the file (display) still get the boxes in the right place."""
    ev = evaluate("bbox", [60, 60, 180, 120], [20, 20, 80, 80], size=(400, 300))
    model = overlay.build_overlay(ev, (400, 300))
    small = white((200, 150))
    small.info["source_size"] = (400, 300)
    assert overlay.source_size(small) == (400, 300)
    assert overlay.source_size(None) is None
    picture = overlay.render_pil(model, small, {LAYER_GROUND_TRUTH}, line_width=2)
    assert picture.size == (200, 150)
    # the ground-truth box (20, 20)-(80, 80) in the file's space is (10, 10)-(40, 40) here
    assert picture.getpixel((25, 10)) == STYLE_GROUND_TRUTH.colour
    assert picture.getpixel((10, 25)) == STYLE_GROUND_TRUTH.colour
    assert picture.getpixel((25, 20)) == WHITE  # inside, and where the unscaled edge would be
    assert picture.getpixel((25, 25)) == WHITE
