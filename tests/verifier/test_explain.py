"""The explanation API: why a score is what it is, from the same single evaluation."""

from __future__ import annotations

import pytest
from scoring_fixtures import instance

from scoring import explain_trace_response
from scoring.verifier import SOURCE_FENCED_BLOCK, SOURCE_FINAL_OBJECT, SOURCE_TAG, Box, Point


def test_final_object_span_and_recovered_text():
    response = 'Reasoning here.\n\n{"answer": 7, "annotation": [0, 0, 10, 10]}'
    evaluation = explain_trace_response(response=response, **instance("bbox", [0, 0, 10, 10]))
    final = evaluation.extraction.final_object
    assert response[final.span.start : final.span.end] == '{"answer": 7, "annotation": [0, 0, 10, 10]}'
    assert evaluation.recovered_source == SOURCE_FINAL_OBJECT
    assert evaluation.recovered_text == '{"answer": 7, "annotation": [0, 0, 10, 10]}'
    assert evaluation.format_reason == "ok"
    assert evaluation.annotation_reason == ""


def test_box_set_pairings_unmatched_and_similarities():
    gt = [[0, 0, 10, 10], [100, 100, 110, 110], [200, 200, 210, 210]]
    pred = [[200, 200, 210, 210], [5, 0, 15, 10], [500, 500, 510, 510], [600, 600, 610, 610]]
    response = '{"answer": 7, "annotation": ' + str(pred) + "}"
    evaluation = explain_trace_response(response=response, **instance("bbox_set", gt))
    match = evaluation.annotation.match
    pairs = {(m.pred_index, m.gt_index): m.iou for m in match.matches}
    assert pairs == {(0, 2): 1.0, (1, 0): 0.3333333333333333}
    # Every ground truth was assigned, one of them with IoU 0: that pair is explained as a
    # missed ground truth plus an extra prediction, and still counts as assigned.
    (zero,) = match.zero_similarity_pairs
    assert zero.similarity == 0.0 and match.assigned_count == 3
    assert match.unmatched_gt == ((None, zero.gt_index),) == ((None, 1),)
    assert match.unmatched_pred == ((None, 2), (None, 3)) and zero.pred_index in (2, 3)
    assert evaluation.as_flat_dict()["annotation_assigned_count"] == 3.0
    assert evaluation.annotation_reward == pytest.approx((1.0 + 1 / 3) / 4)
    assert evaluation.annotation.predicted.groups[0][1][1] == Box(5, 0, 15, 10)


def test_point_map_keys_distances_and_half_life_source():
    response = '{"answer": 7, "annotation": {"left": [10, 0], "extra": [5, 5]}}'
    evaluation = explain_trace_response(
        response=response, image_size=[640, 480], **instance("point_map", {"left": [0, 0], "right": [9, 9]})
    )
    annotation = evaluation.annotation
    assert annotation.half_life_source == "image_size"
    assert annotation.half_life_px == 28.000000000000004
    (match,) = annotation.match.matches
    assert (match.key, match.distance) == ("left", 10.0)
    assert annotation.match.missing_keys == ("right",)
    assert annotation.match.extra_keys == ("extra",)
    assert annotation.ground_truth.group("right") == (Point(9, 9),)


def test_parse_failure_reason_names_the_item():
    response = '{"answer": 7, "annotation": [[0, 0, 10, 10], [1, 1, 2, 2], [3, 3, 3, 9]]}'
    evaluation = explain_trace_response(response=response, **instance("bbox_set", [[0, 0, 10, 10]]))
    assert evaluation.annotation_reason == "annotation[2]: zero-area box"
    assert not evaluation.annotation.parse_ok
    assert evaluation.annotation.ground_truth is not None  # still drawable


@pytest.mark.parametrize(
    ("annotation_gt", "contract_patch", "reason"),
    [
        ({"type": "polygon", "value": []}, None, "unknown annotation type 'polygon'"),
        ([1, 2], None, "annotation_gt is a list, not a mapping"),
        ({"type": "bbox", "value": [0, 0, 1, 1]}, {"id": "bbox_map_soft_iou_v0", "type": "bbox"}, "is not 'bbox_soft_iou_v0'"),
        ({"type": "bbox", "value": [0, 0, 1, 1]}, {"id": "bbox_soft_iou_v0", "type": "point"}, "differs from"),
        ({"type": "bbox", "value": [0, 0, 0, 1]}, None, "ground truth: zero-area box"),
    ],
)
def test_malformed_ground_truth_or_contract_gives_zero_and_a_reason(annotation_gt, contract_patch, reason):
    kwargs = instance("bbox", [0, 0, 1, 1])
    kwargs["annotation_gt"] = annotation_gt
    if contract_patch is not None:
        kwargs["reward_contract"]["annotation"] = contract_patch
    evaluation = explain_trace_response(response='{"answer": 7, "annotation": [0, 0, 1, 1]}', **kwargs)
    assert evaluation.annotation_reward == 0.0
    assert not evaluation.annotation.parse_ok
    assert reason in evaluation.annotation_reason
    assert evaluation.answer_reward == 1.0


@pytest.mark.parametrize("contract", [None, "v0", [], {"annotation": "bbox"}])
def test_contract_that_is_not_a_mapping_is_a_reason_not_a_crash(contract):
    kwargs = instance("bbox", [0, 0, 1, 1])
    kwargs["reward_contract"] = contract
    evaluation = explain_trace_response(response='{"answer": 7, "annotation": [0, 0, 1, 1]}', **kwargs)
    assert evaluation.annotation_reward == 0.0 and evaluation.annotation_reason


def test_answer_canonical_forms_and_reason():
    evaluation = explain_trace_response(
        response='{"answer": {"NORTH": 14.0, "Blue": " twelve "}, "annotation": [0, 0, 1, 1]}',
        answer_gt={"type": "mapping", "value": {"north": 14, "blue": "Twelve"}},
        annotation_gt={"type": "bbox", "value": [0, 0, 1, 1]},
        reward_contract=instance("bbox", None)["reward_contract"],
    )
    assert evaluation.answer.correct
    assert evaluation.answer.predicted_text == evaluation.answer.ground_truth_text == '{"blue": "twelve", "north": 14}'
    wrong = explain_trace_response(response="[4, 7]", **instance("bbox", [0, 0, 1, 1]) | {
        "answer_gt": {"type": "index_list", "value": [7, 4]}})
    assert wrong.answer.source == "whole_response"
    assert wrong.answer.reason == "[4, 7] != [7, 4]"


def test_python_literal_is_flagged_but_earns_format():
    evaluation = explain_trace_response(
        response="{'answer': 7, 'annotation': (0, 0, 1, 1)}", **instance("bbox", [0, 0, 1, 1])
    )
    assert evaluation.format_score == 1.0
    assert evaluation.format_reason == "python_literal"
    assert evaluation.extraction.final_parse.parser == "python"


@pytest.mark.parametrize(
    ("response", "source"),
    [
        ("<answer>{\"answer\": 7}</answer>", SOURCE_TAG),
        ('```json\n{"answer": 7}\n```\nThanks!', SOURCE_FENCED_BLOCK),
    ],
)
def test_recovery_sources(response, source):
    evaluation = explain_trace_response(response=response, trace_reward_mode="answer", **instance("bbox", [0, 0, 1, 1]))
    assert evaluation.recovered_source == source
    assert evaluation.format_score == 0.0 and evaluation.answer_reward == 1.0


def test_evaluation_is_immutable():
    evaluation = explain_trace_response(response="7", **instance("bbox", [0, 0, 1, 1]))
    with pytest.raises(AttributeError):
        evaluation.overall = 1.0
