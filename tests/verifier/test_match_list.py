"""The explanation's match list: a pair assigned with similarity 0 is one missed ground truth
plus one extra prediction, never a match, and no score or diagnostic changes because of it."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scoring_fixtures import annotation_values, instance

from scoring import explain_trace_response
from scoring.verifier import ANNOTATION_TYPES, Box, box_iou

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Coordinates on a coarse grid far apart from each other: many pairs are assigned with IoU 0, or
# with a point similarity that underflows to exactly 0 under a small half-life.
coordinate = st.integers(0, 6).map(lambda v: v * 500)
box = st.tuples(coordinate, coordinate, st.integers(1, 600), st.integers(1, 600)).map(
    lambda t: [t[0], t[1], t[0] + t[2], t[1] + t[3]]
)
point = st.tuples(coordinate, coordinate).map(list)
segment = st.tuples(point, point).map(list)
role = st.sampled_from(["left", "right", "top"])
SHAPE = {"bbox": box, "point": point, "segment": segment}


def value_for(annotation_type: str):
    return annotation_values(annotation_type, SHAPE, role, max_items=4, max_keys=3)


@st.composite
def evaluation_case(draw):
    annotation_type = draw(st.sampled_from(ANNOTATION_TYPES))
    pred, gt = draw(value_for(annotation_type)), draw(value_for(annotation_type))
    kwargs = {
        "response": json.dumps({"answer": 7, "annotation": pred}),
        **instance(annotation_type, gt),
        "point_half_life_px": draw(st.sampled_from([1.0, 20.0, 400.0])),
    }
    return annotation_type, pred, gt, kwargs


def _items(annotation) -> list[tuple]:
    return sorted(((key, index) for key, index, _ in annotation.shapes()), key=repr)


@SETTINGS
@given(evaluation_case())
def test_zero_similarity_pairs_are_never_matches_and_their_items_are_unmatched(case):
    _, _, _, kwargs = case
    evaluation = explain_trace_response(**kwargs)
    annotation = evaluation.annotation
    match = annotation.match
    assert all(m.similarity > 0.0 for m in match.matches)
    assert all(m.similarity == 0.0 for m in match.zero_similarity_pairs)
    for pair in match.zero_similarity_pairs:
        assert (pair.key, pair.pred_index) in match.unmatched_pred
        assert (pair.key, pair.gt_index) in match.unmatched_gt
    # every item is listed exactly once: matched, or unmatched (missed / extra)
    predicted = [(m.key, m.pred_index) for m in match.matches] + list(match.unmatched_pred)
    ground_truth = [(m.key, m.gt_index) for m in match.matches] + list(match.unmatched_gt)
    assert sorted(predicted, key=repr) == _items(annotation.predicted)
    assert sorted(ground_truth, key=repr) == _items(annotation.ground_truth)


@SETTINGS
@given(evaluation_case())
def test_zero_similarity_pairs_still_count_as_assigned_and_scores_are_unchanged(case):
    annotation_type, pred, gt, kwargs = case
    evaluation = explain_trace_response(**kwargs)
    match = evaluation.annotation.match
    flat = evaluation.as_flat_dict()
    assigned = match.matches + match.zero_similarity_pairs
    assert flat["annotation_assigned_count"] == match.assigned_count == len(assigned)
    mean_key = "annotation_assigned_iou_mean" if annotation_type.startswith("bbox") else "annotation_assigned_similarity_mean"
    if not annotation_type.endswith("_set_map"):
        # the mean is over every assigned pair, the zero ones included
        expected_mean = math.fsum(m.similarity for m in assigned) / len(assigned) if assigned else 0.0
        assert math.isclose(flat[mean_key], expected_mean, rel_tol=1e-12, abs_tol=1e-300)
    if annotation_type.endswith(("_set", "_sequence")) or "_" not in annotation_type:
        sizes = (len(evaluation.annotation.predicted.shapes()), len(evaluation.annotation.ground_truth.shapes()))
        expected = 1.0 if sizes == (0, 0) else math.fsum(m.similarity for m in match.matches) / max(sizes)
        assert math.isclose(evaluation.annotation_reward, expected, rel_tol=1e-12, abs_tol=1e-300)


def test_the_playground_example_one_box_missed_one_extra():
    """Issue #20: two overlapping pairs are matches; the third prediction and the third ground
    truth were assigned to each other with IoU 0 and are an extra prediction plus a missed box."""
    pred = [[100, 100, 220, 210], [400, 380, 520, 500], [800, 80, 900, 160]]
    gt = [[104, 96, 224, 214], [410, 390, 515, 505], [620, 560, 700, 650]]
    evaluation = explain_trace_response(
        response=json.dumps({"answer": 3, "annotation": pred}), image_size=[1024, 768], **instance("bbox_set", gt, 3)
    )
    match = evaluation.annotation.match
    assert [(m.pred_index, m.gt_index) for m in match.matches] == [(0, 0), (1, 1)]
    assert match.unmatched_pred == ((None, 2),) and match.unmatched_gt == ((None, 2),)
    assert [(m.pred_index, m.gt_index, m.similarity) for m in match.zero_similarity_pairs] == [(2, 2, 0.0)]
    ious = [box_iou(Box(*pred[i]), Box(*gt[i])) for i in (0, 1)]
    assert min(ious) > 0.5 and box_iou(Box(*pred[2]), Box(*gt[2])) == 0.0
    assert evaluation.annotation_reward == (ious[0] + ious[1]) / 3
    flat = evaluation.as_flat_dict()
    assert flat["annotation_assigned_count"] == 3.0
    assert flat["annotation_assigned_iou_mean"] == (ious[0] + ious[1]) / 3


def test_a_single_shape_with_zero_similarity_is_missed_and_extra():
    evaluation = explain_trace_response(
        response='{"answer": 7, "annotation": [100, 100, 110, 110]}', **instance("bbox", [0, 0, 10, 10])
    )
    match = evaluation.annotation.match
    assert match.matches == () and match.unmatched_pred == match.unmatched_gt == ((None, 0),)
    flat = evaluation.as_flat_dict()
    assert (flat["annotation_assigned_count"], flat["annotation_assigned_iou_mean"], flat["annotation_reward"]) == (
        1.0, 0.0, 0.0,
    )
