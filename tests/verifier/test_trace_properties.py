"""Invariants of the trace verifier, checked on generated inputs (hypothesis)."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scoring_fixtures import annotation_values, instance, shape_strategies

from scoring import explain_trace_response, recompose, score_trace_response
from scoring.verifier import ANNOTATION_TYPES

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

coordinate = st.one_of(st.integers(-50, 700), st.floats(-50, 700, allow_nan=False))
SHAPE = shape_strategies(coordinate)
box, point, segment = SHAPE["bbox"], SHAPE["point"], SHAPE["segment"]
role = st.sampled_from(["left", "right", "target", "output", "数据"])


def value_for(annotation_type: str):
    return annotation_values(annotation_type, SHAPE, role, max_items=5, max_keys=4)


@st.composite
def scored_case(draw):
    annotation_type = draw(st.sampled_from(ANNOTATION_TYPES))
    gt = draw(value_for(annotation_type))
    pred = draw(value_for(annotation_type))
    answer = draw(st.integers(0, 3))
    response = json.dumps({"answer": draw(st.integers(0, 3)), "annotation": pred})
    options = {
        "trace_reward_mode": draw(st.sampled_from(["answer", "answer_and_annotation"])),
        "trace_annotation_reward_formula": draw(st.sampled_from(["gated", "additive"])),
        "answer_weight": draw(st.floats(0, 5)),
        "annotation_weight": draw(st.floats(0.01, 5)),
        "format_weight": draw(st.floats(0, 1)),
        "image_size": draw(st.sampled_from([None, [640, 480], [100, 100], [4000, 3000]])),
    }
    return annotation_type, gt, pred, {"response": response, **instance(annotation_type, gt, answer), **options}


REWARD_KEYS = ("overall", "format", "answer_reward", "annotation_reward", "task_reward_raw")


@SETTINGS
@given(scored_case())
def test_every_component_is_finite_and_in_unit_interval(case):
    _, _, _, kwargs = case
    result = score_trace_response(**kwargs)
    unit_interval = [k for k in result if not k.startswith("annotation_")] + [
        "annotation_reward", "annotation_parse_ok", *(k for k in result if k.endswith("_mean"))
    ]
    for key, value in result.items():
        assert math.isfinite(value), key
    for key in unit_interval:
        assert 0.0 <= result[key] <= 1.0, (key, result[key])
    assert result["annotation_parse_ok"] == 1.0  # generated values are all well-formed


def _permute(value, annotation_type):
    if annotation_type.endswith("_set"):
        return list(reversed(value))
    if annotation_type.endswith("_set_map"):
        return {key: list(reversed(items)) for key, items in reversed(list(value.items()))}
    if annotation_type.endswith("_map"):
        return dict(reversed(list(value.items())))
    return value


@SETTINGS
@given(scored_case())
def test_set_and_map_scores_are_invariant_under_permutation(case):
    annotation_type, gt, pred, kwargs = case
    assume(annotation_type.endswith(("_set", "_map")))
    base = score_trace_response(**kwargs)
    answer = json.loads(kwargs["response"])["answer"]
    permuted_response = json.dumps({"answer": answer, "annotation": _permute(pred, annotation_type)})
    permuted_pred = score_trace_response(**dict(kwargs, response=permuted_response))
    permuted_gt = dict(kwargs, annotation_gt={"type": annotation_type, "value": _permute(gt, annotation_type)})
    for variant in (permuted_pred, score_trace_response(**permuted_gt)):
        if annotation_type.endswith("_set"):
            # Sets are solved and summed in coordinate order: bit-identical whatever the order.
            assert variant["annotation_reward"] == base["annotation_reward"]
            assert variant["overall"] == base["overall"]
        else:
            # Map scores are summed in ground-truth key order (as the spec's examples are): a
            # permuted ground truth may move the sum by an ulp.
            assert math.isclose(variant["annotation_reward"], base["annotation_reward"], abs_tol=1e-12)
            assert math.isclose(variant["overall"], base["overall"], abs_tol=1e-12)


def test_tied_point_assignments_do_not_depend_on_the_listing_order():
    # Both pairings of these points have total distance 2, but not the same summed similarity
    # (1 + 1 against 0 + 2); hypothesis found the score depended on the order. It must not.
    gt = [[0, 0], [1, 0]]
    results = {
        json.dumps(pred): score_trace_response(**_case("point_set", pred, gt, point_half_life_px=1.0))
        for pred in ([[1, 0], [2, 0]], [[2, 0], [1, 0]])
    }
    first, second = results.values()
    assert first["annotation_reward"] == second["annotation_reward"]


def _case(annotation_type, pred, gt, **options):
    response = json.dumps({"answer": 7, "annotation": pred})
    return {"response": response, **instance(annotation_type, gt), **options}


distinct_far_boxes = st.lists(st.integers(0, 30), min_size=2, max_size=5, unique=True).map(
    lambda xs: [[100 * x, 0, 100 * x + 50, 50] for x in xs]
)


@SETTINGS
@given(distinct_far_boxes)
def test_sequence_scores_are_sensitive_to_order(boxes):
    in_order = score_trace_response(**_case("bbox_sequence", boxes, boxes))
    reversed_order = score_trace_response(**_case("bbox_sequence", list(reversed(boxes)), boxes))
    as_set = score_trace_response(**_case("bbox_set", list(reversed(boxes)), boxes))
    assert in_order["annotation_reward"] == 1.0
    assert reversed_order["annotation_reward"] < 1.0
    assert as_set["annotation_reward"] == 1.0


@SETTINGS
@given(segment, segment, st.sampled_from([None, [640, 480]]))
def test_reversing_a_segment_changes_nothing(pred, gt, image_size):
    forward = score_trace_response(**_case("segment", pred, gt, image_size=image_size))
    backward = score_trace_response(**_case("segment", list(reversed(pred)), gt, image_size=image_size))
    assert forward == backward


@SETTINGS
@given(box, box)
def test_reordering_box_corners_changes_nothing(pred, gt):
    x0, y0, x1, y1 = pred
    assert score_trace_response(**_case("bbox", [x1, y1, x0, y0], gt)) == score_trace_response(
        **_case("bbox", pred, gt)
    )
    assert score_trace_response(**_case("bbox", [x0, y1, x1, y0], gt)) == score_trace_response(
        **_case("bbox", pred, gt)
    )


prose = st.text(
    alphabet=st.characters(blacklist_characters="\\", blacklist_categories=("Cs",)), max_size=300
)


@SETTINGS
@given(scored_case(), prose)
def test_prose_before_the_final_object_never_changes_any_score(case, before):
    _, _, _, kwargs = case
    base = score_trace_response(**kwargs)
    with_prose = score_trace_response(**dict(kwargs, response=before + "\n" + kwargs["response"]))
    assert with_prose == base


trailing_text = st.text(
    alphabet=st.characters(blacklist_characters="{}`\\<>", blacklist_categories=("Cs",)), min_size=1, max_size=80
).filter(lambda t: t.strip())


@SETTINGS
@given(scored_case(), trailing_text)
def test_text_after_the_object_zeroes_format_and_keeps_the_answer(case, after):
    _, _, _, kwargs = case
    base = score_trace_response(**kwargs)
    followed = explain_trace_response(**dict(kwargs, response=kwargs["response"] + "\n" + after))
    flat = followed.as_flat_dict()
    assert flat["format"] == 0.0
    assert flat["answer_reward"] == base["answer_reward"]
    assert flat["annotation_reward"] == base["annotation_reward"]
    assert followed.format_reason == "text_after_object"


@SETTINGS
@given(scored_case())
def test_recomposition_identities(case):
    _, _, _, kwargs = case
    result = score_trace_response(**kwargs)
    answer, annotation, fmt = result["answer_reward"], result["annotation_reward"], result["format"]
    # Re-weighting the stored components equals rescoring with the same options.
    recomposed = recompose(
        [answer], [annotation], [fmt],
        trace_reward_mode=kwargs["trace_reward_mode"],
        trace_annotation_reward_formula=kwargs["trace_annotation_reward_formula"],
        answer_weight=kwargs["answer_weight"],
        annotation_weight=kwargs["annotation_weight"],
        format_weight=kwargs["format_weight"],
    )
    assert recomposed["task_reward"][0] == result["task_reward_raw"]
    assert recomposed["overall"][0] == result["overall"]
    assert recomposed["zero_reward"][0] == result["zero_reward"]
    # Named identities of the composition.
    only_format = score_trace_response(**dict(kwargs, format_weight=1.0))
    assert only_format["overall"] == only_format["format"]
    no_format = score_trace_response(**dict(kwargs, format_weight=0.0))
    assert no_format["overall"] == no_format["task_reward_raw"]
    answer_only = score_trace_response(**dict(kwargs, trace_reward_mode="answer"))
    assert answer_only["task_reward_raw"] == answer_only["answer_reward"]
    annotation_only = score_trace_response(
        **dict(kwargs, trace_reward_mode="answer_and_annotation", trace_annotation_reward_formula="additive",
               answer_weight=0, annotation_weight=1)
    )
    assert annotation_only["task_reward_raw"] == annotation_only["annotation_reward"]
    gated = score_trace_response(
        **dict(kwargs, trace_reward_mode="answer_and_annotation", trace_annotation_reward_formula="gated")
    )
    if gated["answer_reward"] == 0.0:
        assert gated["task_reward_raw"] == 0.0 and gated["zero_reward"] == 1.0


hostile_text = st.one_of(
    st.text(max_size=400),
    st.binary(max_size=400).map(lambda b: b.decode("latin-1")),
    st.text(alphabet='{}[]"\\`<>/answer:,0123456789. \n\x00\ud800', max_size=400),
)


@settings(max_examples=400, deadline=None)
@given(hostile_text, st.sampled_from(ANNOTATION_TYPES), st.sampled_from(["answer", "answer_and_annotation"]))
def test_arbitrary_text_never_raises(text, annotation_type, mode):
    gt = {"bbox": [0, 0, 10, 10], "point": [1, 1], "segment": [[0, 0], [1, 1]]}[annotation_type.split("_")[0]]
    if annotation_type.endswith(("_set", "_sequence")):
        gt = [gt]
    elif annotation_type.endswith("_set_map"):
        gt = {"k": [gt]}
    elif annotation_type.endswith("_map"):
        gt = {"k": gt}
    result = score_trace_response(response=text, trace_reward_mode=mode, **instance(annotation_type, gt))
    assert all(math.isfinite(v) for v in result.values())
    assert 0.0 <= result["overall"] <= 1.0


huge = st.floats(allow_nan=False, allow_infinity=False, min_value=-1.7e308, max_value=1.7e308)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ANNOTATION_TYPES), st.lists(huge, min_size=16, max_size=16))
def test_coordinates_near_the_float_limits_stay_finite(annotation_type, numbers):
    def build(offset):
        box = [numbers[offset], numbers[offset + 1], numbers[offset] + 1e300 + 1, numbers[offset + 1] - 1e300 - 1]
        box = [min(max(v, -1.7e308), 1.7e308) for v in box]
        if box[0] == box[2] or box[1] == box[3]:
            box = [0, 0, 1, 1]
        point = [numbers[offset + 2], numbers[offset + 3]]
        return {"bbox": box, "point": point, "segment": [point, [numbers[offset + 4], numbers[offset + 5]]]}
    shape = annotation_type.split("_")[0]
    pred, gt = build(0)[shape], build(8)[shape]
    if annotation_type.endswith(("_set", "_sequence")):
        pred, gt = [pred, gt], [gt, pred, gt]
    elif annotation_type.endswith("_set_map"):
        pred, gt = {"k": [pred, gt]}, {"k": [gt]}
    elif annotation_type.endswith("_map"):
        pred, gt = {"k": pred}, {"k": gt}
    result = score_trace_response(**_case(annotation_type, pred, gt))
    assert all(math.isfinite(v) for v in result.values())
    assert 0.0 <= result["annotation_reward"] <= 1.0


@SETTINGS
@given(scored_case())
def test_flat_parts_are_the_flat_result_in_four_pieces(case):
    """``flat_parts`` (what tables read) and ``as_flat_dict`` (the training-log view) are one
    result: the template holds FLAT_KEYS in order, the response values and the diagnostics
    overwrite and extend it, and assembling never modifies the shared template."""
    from scoring.verifier import DIAGNOSTIC_LAYOUTS, FLAT_KEYS, RESPONSE_KEYS

    _, _, _, kwargs = case
    evaluation = explain_trace_response(**kwargs)
    template, values, diagnostic_keys, diagnostics = evaluation.flat_parts()
    before = dict(template)
    flat = evaluation.as_flat_dict()
    assert template == before and template is not flat
    assert tuple(template) == FLAT_KEYS and set(RESPONSE_KEYS) <= set(FLAT_KEYS)
    assert len(values) == len(RESPONSE_KEYS) and len(diagnostics) == len(diagnostic_keys)
    assert diagnostic_keys in ((), *DIAGNOSTIC_LAYOUTS.values())
    assert bool(diagnostic_keys) == (flat["annotation_parse_ok"] == 1.0)
    assert list(flat) == [*FLAT_KEYS, *diagnostic_keys]
    assembled = {**template, **dict(zip(RESPONSE_KEYS, values, strict=True))}
    assert flat == {**assembled, **dict(zip(diagnostic_keys, diagnostics, strict=True))}
    assert flat == score_trace_response(**kwargs)
    # the template's values are those the options and the declared type fix, whatever the response
    other = explain_trace_response(**dict(kwargs, response="no json at all"))
    assert other.flat_parts()[0] is template
