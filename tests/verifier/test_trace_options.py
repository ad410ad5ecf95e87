"""Scorer options: every invalid one raises ValueError naming the option; valid spellings work."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scoring_fixtures import contract, instance

from scoring import score_trace_response
from scoring.verifier import recompose, resolve_options

RESPONSE = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
BASE = {"response": RESPONSE, **instance("bbox", [0, 0, 10, 10])}


def score(**options):
    return score_trace_response(**BASE, **options)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"answer_weight": -0.1}, "answer_weight"),
        ({"annotation_weight": -1, "answer_weight": 2}, "annotation_weight"),
        ({"answer_weight": math.nan}, "answer_weight"),
        ({"annotation_weight": math.inf}, "annotation_weight"),
        ({"answer_weight": None}, "answer_weight"),
        ({"annotation_weight": "heavy"}, "annotation_weight"),
        ({"answer_weight": [0.5]}, "answer_weight"),
        ({"answer_weight": True}, "answer_weight"),
        ({"answer_weight": 0, "annotation_weight": 0}, "answer_weight + annotation_weight"),
        ({"answer_weight": "0", "annotation_weight": "0.0"}, "answer_weight + annotation_weight"),
        ({"format_weight": 1.5}, "format_weight"),
        ({"format_weight": -0.01}, "format_weight"),
        ({"format_weight": math.nan}, "format_weight"),
        ({"format_weight": None}, "format_weight"),
        ({"format_weight": "half"}, "format_weight"),
        ({"point_half_life_px": 0}, "point_half_life_px"),
        ({"point_half_life_px": -3}, "point_half_life_px"),
        ({"point_half_life_px": math.nan}, "point_half_life_px"),
        ({"point_half_life_px": math.inf}, "point_half_life_px"),
        ({"point_half_life_px": "wide"}, "point_half_life_px"),
        ({"trace_reward_mode": "answers"}, "trace_reward_mode"),
        ({"trace_reward_mode": 3}, "trace_reward_mode"),
        ({"trace_annotation_reward_formula": "multiplicative"}, "trace_annotation_reward_formula"),
        ({"trace_annotation_reward_formula": 1}, "trace_annotation_reward_formula"),
        ({"trace_answer_scoring": "fuzzy"}, "trace_answer_scoring"),
        ({"trace_answer_scoring": "legacy_strict"}, "trace_answer_scoring"),
    ],
)
def test_invalid_option_raises_naming_it(options, named):
    with pytest.raises(ValueError, match=named.replace("+", r"\+")):
        score(**options)


@pytest.mark.parametrize("mode", ["answer", "answer_and_annotation"])
def test_option_checks_happen_whatever_the_mode(mode):
    with pytest.raises(ValueError, match="answer_weight"):
        score(trace_reward_mode=mode, answer_weight=0, annotation_weight=0)
    with pytest.raises(ValueError, match="point_half_life_px"):
        score(trace_reward_mode=mode, point_half_life_px=0)


def test_option_checks_happen_whatever_the_annotation_type():
    with pytest.raises(ValueError, match="format_weight"):
        score_trace_response(
            response="", answer_gt={"type": "integer", "value": 1}, annotation_gt=None,
            reward_contract=None, format_weight=2,
        )


@pytest.mark.parametrize(
    ("spelling", "mode_answer"),
    [
        ("answer", 1.0), ("answer_only", 1.0), (" ANSWER_ONLY ", 1.0), (None, 1.0), ("", 1.0), ("auto", 1.0),
        ("answer_and_annotation", 0.0), ("annotation", 0.0), ("Answer_And_Annotation", 0.0),
    ],
)
def test_mode_aliases(spelling, mode_answer):
    result = score(trace_reward_mode=spelling)
    assert result["trace_reward_mode_answer"] == result["trace_reward_mode_answer_only"] == mode_answer
    assert result["trace_reward_mode_answer_and_annotation"] == 1.0 - mode_answer


@pytest.mark.parametrize(
    ("spelling", "gated"),
    [("gated", 1.0), ("answer_gated", 1.0), ("gated_annotation", 1.0), (None, 1.0), ("", 1.0),
     ("additive", 0.0), ("separate", 0.0), ("LINEAR", 0.0)],
)
def test_formula_aliases(spelling, gated):
    result = score(trace_annotation_reward_formula=spelling)
    assert result["trace_annotation_reward_formula_gated"] == gated
    assert result["trace_annotation_reward_formula_additive"] == 1.0 - gated


@pytest.mark.parametrize("spelling", ["exact_json", "exact", None, "", " EXACT "])
def test_answer_scoring_aliases(spelling):
    assert score(trace_answer_scoring=spelling)["trace_answer_scoring_exact_json"] == 1.0


def test_numeric_strings_are_accepted_for_every_numeric_option():
    as_numbers = score(answer_weight=2, annotation_weight=1, format_weight=0.1, point_half_life_px=16)
    as_strings = score(answer_weight="2", annotation_weight=" 1 ", format_weight="0.1", point_half_life_px="16")
    assert as_strings == as_numbers
    assert as_numbers["trace_answer_weight"] == 2 / 3
    assert as_numbers["format_weight"] == 0.1


def test_bbox_iou_threshold_is_accepted_and_ignored():
    assert score(bbox_iou_threshold=0.5) == score() == score(bbox_iou_threshold="junk")


def test_weights_are_normalised_by_their_sum():
    options = resolve_options(answer_weight=3, annotation_weight=7)
    assert (options.answer_weight, options.annotation_weight) == (0.3, 0.7)


def test_recompose_validates_like_the_scorer():
    with pytest.raises(ValueError, match="format_weight"):
        recompose(np.ones(2), np.ones(2), np.ones(2), format_weight=-1)
    with pytest.raises(ValueError, match="trace_reward_mode"):
        recompose(np.ones(2), np.ones(2), np.ones(2), trace_reward_mode="both")


def test_option_cache_does_not_confuse_true_with_one():
    assert score(answer_weight=1)["trace_answer_weight"] == 0.6666666666666666
    with pytest.raises(ValueError, match="answer_weight"):
        score(answer_weight=True)


def test_normalised_weights_that_round_above_one_still_give_at_most_one():
    # 1.024.../5.346... + 4.322.../5.346... is 1.0000000000000002 in floating point.
    kwargs = dict(
        response='{"answer": 0, "annotation": []}',
        answer_gt={"type": "integer", "value": 0},
        annotation_gt={"type": "bbox_set", "value": []},
        reward_contract=contract("bbox_set"),
        answer_weight=1.0240046301133483,
        annotation_weight=4.322630229039863,
    )
    for formula in ("gated", "additive"):
        result = score_trace_response(trace_annotation_reward_formula=formula, **kwargs)
        assert result["task_reward_raw"] == result["overall"] == 1.0
