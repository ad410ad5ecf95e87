"""The spec's worked examples, to the last digit."""

from __future__ import annotations

import math

import pytest
from scoring_fixtures import load_cases

from scoring import explain_trace_response, score_trace_response
from scoring.verifier import ANNOTATION_TYPES

TRACE_CASES = load_cases("trace_cases.jsonl")
ALWAYS_PRESENT = {
    "overall", "format", "accuracy", "answer_reward", "annotation_reward", "task_reward_raw",
    "task_reward_effective", "task_reward_gated", "format_weight", "trace_reward_mode_answer",
    "trace_reward_mode_answer_only", "trace_reward_mode_answer_and_annotation",
    "trace_answer_scoring_exact_json", "trace_answer_scoring_legacy_strict",
    "trace_annotation_reward_formula_gated", "trace_annotation_reward_formula_additive",
    "trace_answer_weight", "trace_annotation_weight", "format_structure_ok", "format_json_ok",
    "format_schema_ok", "answer_parse_ok", "annotation_parse_ok", "json_found", "zero_reward",
    "trace_reward",
} | {f"annotation_type_{t}" for t in ANNOTATION_TYPES}

CONTRACT_BBOX = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
}


def test_always_present_keys_are_the_38_of_the_spec():
    assert len(ALWAYS_PRESENT) == 38


def test_answer_scoring_example_of_the_verifier_page():
    result = score_trace_response(
        response='{"answer":7}',
        answer_gt={"type": "integer", "value": 7},
        annotation_gt={"type": "bbox", "value": [10, 20, 30, 40]},
        reward_contract=CONTRACT_BBOX,
        trace_reward_mode="answer",
    )
    assert {k: result[k] for k in ("overall", "answer_reward", "format", "format_schema_ok")} == {
        "overall": 1.0, "answer_reward": 1.0, "format": 1.0, "format_schema_ok": 1.0,
    }


def test_answer_and_annotation_example_of_the_verifier_page():
    result = score_trace_response(
        response='{"answer":2,"annotation":[5,0,15,10]}',
        answer_gt={"type": "integer", "value": 2},
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]},
        reward_contract=CONTRACT_BBOX,
        trace_reward_mode="answer_and_annotation",
    )
    assert {k: result[k] for k in ("overall", "answer_reward", "annotation_reward", "annotation_parse_ok")} == {
        "overall": 0.6666666666666666,
        "answer_reward": 1.0,
        "annotation_reward": 0.3333333333333333,
        "annotation_parse_ok": 1.0,
    }


@pytest.mark.parametrize("case", TRACE_CASES, ids=[c["id"] for c in TRACE_CASES])
def test_worked_example(case):
    if "raises" in case:
        with pytest.raises(ValueError):
            score_trace_response(**case["kwargs"])
        return
    result = score_trace_response(**case["kwargs"])
    expected = case["expected"]
    assert result.keys() >= ALWAYS_PRESENT
    for key, want in expected.items():
        assert math.isclose(result[key], want, rel_tol=0, abs_tol=1e-9), (key, result[key], want)
        assert result[key] == want, f"{key}: {result[key]!r} is not bit-identical to {want!r}"
    extra = set(result) - set(expected)
    assert not extra, f"keys beyond the expected ones: {sorted(extra)}"
    assert all(isinstance(value, float) for value in result.values())


@pytest.mark.parametrize("case", [c for c in TRACE_CASES if "raises" not in c], ids=lambda c: c["id"])
def test_flat_dict_is_a_view_of_the_explanation(case):
    evaluation = explain_trace_response(**case["kwargs"])
    flat = evaluation.as_flat_dict()
    assert flat == score_trace_response(**case["kwargs"])
    assert flat["overall"] == evaluation.overall
    assert flat["answer_reward"] == evaluation.answer.reward
    assert flat["annotation_reward"] == evaluation.annotation.reward
    assert flat["format"] == evaluation.format_score == float(evaluation.extraction.schema_ok)
    assert flat["json_found"] == float(evaluation.extraction.recovered_mapping is not None)
