"""Typed parsing, similarities, image size and matching."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.verifier import (
    AnnotationParseError,
    Box,
    Point,
    box_iou,
    half_life_for_size,
    match_annotations,
    parse_annotation,
    resolve_image_size,
    soft_similarity,
)


def test_iou_of_the_spec_example_is_one_third():
    assert box_iou(Box(5, 0, 15, 10), Box(0, 0, 10, 10)) == 0.3333333333333333


def test_iou_of_boxes_whose_areas_underflow_is_still_exact():
    """Widths and heights near 1e-208 and 1e-243 multiply to 0.0: the IoU is taken as a ratio of
    sides instead of dividing by a zero union (hypothesis found the ZeroDivisionError)."""
    tiny = Box(0, 0, 3.152054226615029e-208, 1.1778437541295806e-243)
    assert box_iou(tiny, tiny) == 1.0
    half = Box(0, 0, 3.152054226615029e-208 / 2, 1.1778437541295806e-243)
    assert box_iou(tiny, half) == 0.5


def test_disjoint_and_touching_boxes_have_zero_iou():
    assert box_iou(Box(0, 0, 1, 1), Box(2, 2, 3, 3)) == 0.0
    assert box_iou(Box(0, 0, 1, 1), Box(1, 0, 2, 1)) == 0.0


def test_soft_similarity_is_one_half_at_one_half_life():
    assert soft_similarity(0.0, 20.0) == 1.0
    assert soft_similarity(20.0, 20.0) == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize(
    ("size", "half_life"),
    [(None, 32.0), ((640, 480), 28.000000000000004), ((100, 100), 20.0), ((4000, 3000), 80.0),
     ((1920, 1080), 77.10175095288045)],
)
def test_half_life_rule(size, half_life):
    assert half_life_for_size(size) == half_life


@pytest.mark.parametrize(
    "sources",
    [
        ([640, 480], None, None, None),
        ("[640, 480]", None, None, None),
        ([[640, 480], [10, 10]], None, None, None),
        (["bad", [640, 480]], None, None, None),
        ({"width": 640, "height": 480}, None, None, None),
        ({"w": 640, "h": 480}, None, None, None),
        ({"image_width": 640, "canvas_height": 480}, None, None, None),
        (None, [[640, 480]], None, None),
        (None, None, {"image_size": [640, 480], "task": "x"}, None),
        (None, None, {"source_image_size": "[640, 480]"}, None),
        (None, None, None, {"canvas_size": {"width": 640, "height": 480}}),
        ([0, 480], [640, 480], None, None),
        ({"width": True, "height": 4}, None, {"img_size": [640, 480]}, None),
    ],
)
def test_image_size_spellings(sources):
    assert resolve_image_size(*sources) == (640.0, 480.0)


@pytest.mark.parametrize("value", [[-1, 5], [math.nan, 5], "nonsense", {"width": 3}, [True, 2], []])
def test_unusable_image_sizes(value):
    assert resolve_image_size(value, None, None, None) is None


@pytest.mark.parametrize(
    ("annotation_type", "value", "message"),
    [
        ("bbox", [0, 0, 0, 10], "annotation: zero-area box"),
        ("bbox", [0, 0, True, 10], "not a number"),
        ("bbox", [0, 0, "10", 10], "not a number"),
        ("bbox", [0, 0, None, 10], "not a number"),
        ("bbox", [0, 0, math.inf, 10], "not finite"),
        ("bbox", [0, 0, 10**400, 10], "out of float range"),
        ("bbox", [[0, 0, 10, 10]], "a box is"),
        ("bbox_set", [[0, 0, 10, 10], [0, 0, 10, 10], [5, 5, 5, 9]], "annotation[2]: zero-area box"),
        ("point", [1, 2, 3], "a point is"),
        ("segment_set", [[0, 0], [10, 10]], "annotation[0][0]: a point is"),
        ("bbox_map", {"a": [0, 0, 1, 1], " a ": [0, 0, 2, 2]}, "'a' appears twice"),
        ("bbox_map", {"  ": [0, 0, 1, 1]}, "empty role key"),
        ("point_map", [[1, 2]], "expected an object"),
        ("point_set_map", {"k": [[1, 2], 3]}, "annotation['k'][1]: a point is"),
        ("point_set_map", {"k": [1, "2"]}, "annotation['k']: coordinate '2' is not a number"),
        ("point_set", {"points": [[1, 2]]}, "expected a list"),
        ("bbox_set", "not json", "not a literal"),
    ],
)
def test_parse_failures_name_the_item(annotation_type, value, message):
    with pytest.raises(AnnotationParseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_annotation(value, annotation_type)


def test_lenient_shapes():
    assert parse_annotation([1, 2, 3, 4], "bbox_set").groups == ((None, (Box(1, 2, 3, 4),)),)
    assert parse_annotation([1, 2], "point_sequence").groups == ((None, (Point(1, 2),)),)
    assert parse_annotation({"bboxes": [[1, 2, 3, 4]]}, "bbox_sequence").size == 1
    assert parse_annotation("[[1, 2, 3, 4]]", "bbox_set").size == 1
    assert parse_annotation((3, 1, 1, 2), "bbox").groups[0][1][0] == Box(1, 1, 3, 2)
    assert parse_annotation({" k ": [1, 2]}, "point_map").keys == ("k",)
    assert parse_annotation([[[0, 0], [0, 0]]], "segment_set").size == 1  # zero-length segments are valid


def score(annotation_type, pred, gt, half_life=32.0):
    return match_annotations(
        parse_annotation(pred, annotation_type), parse_annotation(gt, annotation_type), half_life
    )


@pytest.mark.parametrize(
    ("annotation_type", "pred", "gt", "expected"),
    [
        ("bbox_set", [], [], 1.0),
        ("bbox_set", [], [[0, 0, 1, 1]], 0.0),
        ("point_sequence", [[0, 0]], [], 0.0),
        ("bbox_map", {}, {}, 1.0),
        ("point_set_map", {"k": []}, {"k": []}, 1.0),
        ("bbox_set", [[0, 0, 10, 10], [20, 20, 30, 30]], [[20, 20, 30, 30]], 0.5),
        ("bbox_sequence", [[20, 20, 30, 30], [0, 0, 10, 10]], [[0, 0, 10, 10], [20, 20, 30, 30]], 0.0),
        ("bbox_map", {"a": [0, 0, 10, 10], "b": [0, 0, 1, 1]}, {"a": [0, 0, 10, 10], "c": [0, 0, 1, 1]}, 1 / 3),
        ("segment", [[10, 10], [0, 0]], [[0, 0], [10, 10]], 1.0),
    ],
)
def test_aggregates(annotation_type, pred, gt, expected):
    assert score(annotation_type, pred, gt).score == pytest.approx(expected, abs=1e-15)


def test_map_result_names_missing_extra_and_shared_keys():
    result = score("point_map", {"b": [0, 0], "c": [5, 5]}, {"a": [0, 0], "b": [0, 0]})
    assert (result.shared_keys, result.missing_keys, result.extra_keys) == (("b",), ("a",), ("c",))
    assert result.unmatched_gt == (("a", 0),) and result.unmatched_pred == (("c", 0),)
    assert result.score == 1 / 3


boxes = st.lists(
    st.tuples(*[st.integers(0, 40)] * 2, *[st.integers(1, 20)] * 2).map(lambda t: [t[0], t[1], t[0] + t[2], t[1] + t[3]]),
    min_size=0,
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(boxes, boxes)
def test_box_set_matching_is_optimal(pred, gt):
    result = score("bbox_set", pred, gt)
    pred_boxes = [Box(*b) for b in pred]
    gt_boxes = [Box(*b) for b in gt]
    best = 0.0
    small, large = (pred_boxes, gt_boxes) if len(pred_boxes) <= len(gt_boxes) else (gt_boxes, pred_boxes)
    for chosen in itertools.permutations(range(len(large)), len(small)):
        best = max(best, sum(box_iou(a, large[j]) for a, j in zip(small, chosen, strict=True)))
    expected = 1.0 if not pred and not gt else best / max(len(pred), len(gt), 1)
    assert result.score == pytest.approx(expected, abs=1e-12)
    assert result.assigned_count == min(len(pred), len(gt))
    # pairs assigned with IoU 0 are explained as a missed ground truth plus an extra prediction
    assert all(m.similarity > 0.0 for m in result.matches)
    assert all(m.similarity == 0.0 for m in result.zero_similarity_pairs)
    assert len(result.matches) + len(result.unmatched_pred) == len(pred)
    assert len(result.matches) + len(result.unmatched_gt) == len(gt)


@pytest.mark.parametrize("value", [[10**400, 5], [5, 10**400], [math.inf, 3], [True, 4], [0, 3], [-640, 480]])
def test_image_size_fast_path_rejects_what_the_rule_rejects(value):
    assert resolve_image_size(value, None, None, None) is None
