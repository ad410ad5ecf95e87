"""The December clarifications of the trace rules, each checked as a general rule (hypothesis).

One-line fenced blocks, bare items in set-map roles, stripped type and id strings, Ellipsis
and colliding mapping keys in answers: every annotation type, every wrapper, both modes.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scoring_fixtures import annotation_values, contract, shape_strategies

from scoring import explain_trace_response, score_trace_response
from scoring.verifier import ANNOTATION_TYPES, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION
from scoring.verifier import extraction as ex

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODES = st.sampled_from(["answer", "answer_only", "answer_and_annotation", "annotation"])

coordinate = st.one_of(st.integers(-20, 700), st.floats(-20, 700, allow_nan=False).map(lambda v: round(v, 3)))
SHAPE = shape_strategies(coordinate)
role = st.sampled_from(["left", "right", "target", "panel 2", "数据"])


def value_for(annotation_type: str):
    return annotation_values(annotation_type, SHAPE, role, max_items=4, max_keys=4)


#: Answer values of every shape the canonical form knows; no backticks (they would end a fence).
plain_text = st.text(alphabet="abcXYZ 12.,:-_'\"{}[]<>\\é数", max_size=12)
answer_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 50), st.floats(-5, 50, allow_nan=False), plain_text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(plain_text, inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def final_object_case(draw):
    """Score keyword arguments and a final object (as text) holding answer and/or annotation."""
    annotation_type = draw(st.sampled_from(ANNOTATION_TYPES))
    gt = draw(value_for(annotation_type))
    answer = draw(answer_value)
    truth = draw(st.one_of(st.just(answer), answer_value))
    final = {"answer": answer}
    if draw(st.booleans()):
        final["annotation"] = draw(value_for(annotation_type))
    if draw(st.integers(0, 5)) == 0:
        final["note"] = "extra key"
    if draw(st.integers(0, 5)) == 0:
        del final["answer"]
    spelling = draw(st.sampled_from(["compact", "spaced", "indented", "python"]))
    if spelling == "python":
        text = repr(final)  # a Python literal: json_ok through the compatibility parser
    else:
        text = json.dumps(final, ensure_ascii=False, **{
            "compact": {"separators": (",", ":")}, "spaced": {}, "indented": {"indent": 2},
        }[spelling])
    kwargs = {
        "answer_gt": {"type": "value", "value": truth},
        "annotation_gt": {"type": annotation_type, "value": gt},
        "reward_contract": contract(annotation_type),
        "trace_reward_mode": draw(MODES),
        "trace_annotation_reward_formula": draw(st.sampled_from(["gated", "additive"])),
        "format_weight": draw(st.sampled_from([0.0, 0.25, 1.0])),
        "image_size": draw(st.sampled_from([None, [640, 480], [4000, 3000]])),
    }
    return text, kwargs


#: Prose before the final block: earlier objects, earlier fences, tags, stray braces and quotes.
prose_piece = st.one_of(
    st.text(alphabet='abc xyz{}"\\:,.\n', max_size=40),
    st.sampled_from([
        'Draft: {"answer": 3}\n', "```python\nx = 1\n```\n", '```json {"answer": 9}```\n', "<answer>5</answer>\n",
        "{'answer': 'draft'}\n", "a stray ``` fence\n", "```\n", "", "Final answer below.\n",
    ]),
)
prose = st.lists(prose_piece, max_size=4).map("".join)
info_string = st.sampled_from(["", "json", "JSON", "python", "py3", "c++", "text.json"])
blank = st.text(alphabet=" \t", min_size=1, max_size=3)


def _comparable(kwargs: dict, response: str):
    evaluation = explain_trace_response(response=response, **kwargs)
    extraction = evaluation.extraction
    return (
        evaluation.as_flat_dict(),
        extraction.format_reason,
        extraction.recovered_source,
        None if extraction.recovered_text is None else extraction.recovered_text.strip(),
        # (without a mapping the whole response is the predicted answer, and the two texts differ)
        evaluation.answer.predicted_text if evaluation.answer.source == "mapping" else None,
        [c.source for c in ex.candidates(response)],
    )


#: How the fenced block sits in the response: last, inside an answer tag, or followed by text.
WRAPPERS = {
    "final": lambda block: block,
    "final, then blank lines": lambda block: block + " \n\n",
    "in an answer tag": lambda block: f"<answer>{block}</answer>",
    "in an answer tag, on its own lines": lambda block: f"<answer>\n{block}\n</answer>\n",
    "followed by text": lambda block: block + "\nHope this helps!",
    "followed by a draft": lambda block: block + '\nDraft: {"answer": "draft"}',
}


@SETTINGS
@given(final_object_case(), prose, info_string, blank, st.text(alphabet=" \t", max_size=2), st.sampled_from(list(WRAPPERS)))
def test_a_one_line_fence_scores_exactly_as_the_multi_line_fence(case, before, info, gap, pad, wrapper):
    """```json {...}``` is the block the multi-line form is, wherever it sits: every flat key, the
    format reason, the recovered candidate and the candidates' order are the same."""
    text, kwargs = case
    wrap = WRAPPERS[wrapper]
    multi_line = before + wrap(f"```{info}\n{text}\n```")
    one_line = before + wrap(f"```{info}{gap}{text}{pad}```")
    assert _comparable(kwargs, one_line) == _comparable(kwargs, multi_line)


@SETTINGS
@given(final_object_case(), info_string, blank)
def test_a_final_one_line_fence_is_the_final_object(case, info, gap):
    text, kwargs = case
    response = f"I worked it out.\n```{info}{gap}{text}```"
    extraction = explain_trace_response(response=response, **kwargs).extraction
    assert extraction.structure_ok
    assert extraction.final_object.kind == ex.FENCED_BLOCK
    assert extraction.final_object.text.strip() == text
    assert extraction.format_reason not in (ex.FORMAT_NOT_VALID_JSON, ex.FORMAT_NO_FINAL_OBJECT)


def test_one_line_fences_of_the_clarification():
    kwargs = {"answer_gt": {"type": "integer", "value": 1}, "annotation_gt": None, "reward_contract": None,
              "trace_reward_mode": "answer"}
    for response in ('```json {"answer": 1}```', '```{"answer": 1}```', 'So:\n```JSON\t{"answer": 1} ```\n'):
        result = score_trace_response(response=response, **kwargs)
        assert (result["format"], result["answer_reward"], result["json_found"]) == (1.0, 1.0, 1.0), response
    # an info string alone, or followed by blanks only, is no content: no final object
    for response in ("```json ```", "```python\t```"):
        assert ex.find_final_object(response) is None
    # a single word between the fences is content, as it always was
    assert ex.find_final_object("```json```").text == "json"


# --------------------------------------------------------------------------- bare items in set maps

SET_MAP_TYPES = ("bbox_set_map", "point_set_map")


@st.composite
def set_map_case(draw):
    annotation_type = draw(st.sampled_from(SET_MAP_TYPES))
    shape = SHAPE[annotation_type.split("_", 1)[0]]
    one_item_or_more = st.one_of(shape.map(lambda s: [s]), st.lists(shape, max_size=3))
    gt = draw(st.dictionaries(role, one_item_or_more, max_size=4))
    pred = draw(st.dictionaries(role, one_item_or_more, max_size=4))
    return annotation_type, gt, pred


def _bare(value: dict, draw_bare) -> dict:
    """Every one-item role written as the bare item, where ``draw_bare`` says so."""
    return {key: items[0] if len(items) == 1 and draw_bare() else items for key, items in value.items()}


@SETTINGS
@given(set_map_case(), MODES, st.randoms(use_true_random=False), st.sampled_from([None, [640, 480]]))
def test_a_bare_item_in_a_set_map_role_is_a_set_of_that_item(case, mode, rng, image_size):
    annotation_type, gt, pred = case

    def score(pred_value, gt_value):
        return score_trace_response(
            response=json.dumps({"answer": 7, "annotation": pred_value}),
            answer_gt={"type": "integer", "value": 7},
            annotation_gt={"type": annotation_type, "value": gt_value},
            reward_contract=contract(annotation_type),
            trace_reward_mode=mode,
            image_size=image_size,
        )

    lists = score(pred, gt)
    coin = lambda: rng.random() < 0.7  # noqa: E731
    assert score(_bare(pred, coin), gt) == lists
    assert score(pred, _bare(gt, coin)) == lists
    assert score(_bare(pred, coin), _bare(gt, coin)) == lists
    assert lists["annotation_parse_ok"] == 1.0


def test_a_bare_role_item_is_still_checked_like_any_item():
    kwargs = {"answer_gt": {"type": "integer", "value": 7}, "annotation_gt": {"type": "bbox_set_map", "value": {
        "panel": [[0, 0, 10, 10]]}}, "reward_contract": contract("bbox_set_map")}
    evaluation = explain_trace_response(response='{"answer": 7, "annotation": {"panel": [0, 0, 0, 10]}}', **kwargs)
    assert evaluation.annotation_reason == "annotation['panel']: zero-area box"
    # the other map types keep their shapes: a point map role is one point, never a list of them
    evaluation = explain_trace_response(
        response='{"answer": 7, "annotation": {"a": [[1, 2]]}}',
        answer_gt={"type": "integer", "value": 7}, annotation_gt={"type": "point_map", "value": {"a": [1, 2]}},
        reward_contract=contract("point_map"),
    )
    assert not evaluation.annotation.parse_ok


# --------------------------------------------------------------------------- stripped type and id strings

padding = st.text(alphabet=" \t\n\r\u3000\u00a0", max_size=3)


@st.composite
def padded_instance_case(draw):
    annotation_type = draw(st.sampled_from(ANNOTATION_TYPES))
    gt = draw(value_for(annotation_type))
    pred = draw(value_for(annotation_type))
    kwargs = {
        "response": json.dumps({"answer": draw(st.integers(0, 2)), "annotation": pred}),
        "answer_gt": {"type": "integer", "value": draw(st.integers(0, 2))},
        "annotation_gt": {"type": annotation_type, "value": gt},
        "reward_contract": contract(annotation_type),
        "trace_reward_mode": draw(MODES),
        "image_size": draw(st.sampled_from([None, [640, 480]])),
    }
    pads = [draw(padding) for _ in range(8)]
    return kwargs, pads


def _padded(kwargs: dict, pads: list[str]) -> dict:
    padded = json.loads(json.dumps(kwargs))
    padded["answer_gt"]["type"] = pads[0] + padded["answer_gt"]["type"] + pads[1]
    padded["annotation_gt"]["type"] = pads[2] + padded["annotation_gt"]["type"] + pads[3]
    annotation = padded["reward_contract"]["annotation"]
    annotation["type"] = pads[4] + annotation["type"] + pads[5]
    annotation["id"] = pads[6] + annotation["id"] + pads[7]
    return padded


@SETTINGS
@given(padded_instance_case())
def test_padded_type_and_id_strings_score_as_the_stripped_ones(case):
    kwargs, pads = case
    padded = explain_trace_response(**_padded(kwargs, pads))
    assert padded.as_flat_dict() == score_trace_response(**kwargs)
    assert padded.annotation_type == kwargs["annotation_gt"]["type"]  # the one-hot key's name, stripped


def test_type_and_id_strings_keep_their_case():
    kwargs = {"response": '{"answer": 7, "annotation": [0, 0, 10, 10]}', "answer_gt": {"type": "integer", "value": 7},
              "annotation_gt": {"type": " BBox ", "value": [0, 0, 10, 10]}, "reward_contract": contract("bbox")}
    result = score_trace_response(**kwargs)
    assert result["annotation_parse_ok"] == 0.0 and result["annotation_type_bbox"] == 0.0
    kwargs["annotation_gt"]["type"] = "bbox"
    kwargs["reward_contract"]["annotation"]["id"] = "BBOX_soft_iou_v0"
    assert score_trace_response(**kwargs)["annotation_parse_ok"] == 0.0
    kwargs["reward_contract"]["annotation"].update(id="\tbbox_soft_iou_v0\n", type=" Bbox")
    assert score_trace_response(**kwargs)["annotation_parse_ok"] == 0.0
    kwargs["reward_contract"]["annotation"]["type"] = " \t "  # blank: no declared contract type to check
    assert score_trace_response(**kwargs)["annotation_parse_ok"] == 1.0


# --------------------------------------------------------------------------- Ellipsis and colliding keys


def _answer_reward(response: str, truth) -> float:
    return score_trace_response(
        response=response, answer_gt={"type": "value", "value": truth}, annotation_gt=None, reward_contract=None,
        trace_reward_mode="answer",
    )["answer_reward"]


@given(st.sampled_from(["...", " ... ", "...\n"]), st.sampled_from(["{'answer': ...}", "{'answer': [1, ...]}",
                                                                      "{'answer': {'k': ...}}", "{'answer': {...: 2}}"]))
def test_a_python_literal_ellipsis_is_the_string_of_three_dots(truth_text, response):
    truth = {"{'answer': ...}": truth_text, "{'answer': [1, ...]}": [1, truth_text],
             "{'answer': {'k': ...}}": {"k": truth_text}, "{'answer': {...: 2}}": {truth_text: 2}}[response]
    assert _answer_reward(response, truth) == 1.0
    assert _answer_reward(response, "…") == 0.0  # one ellipsis character is another string


key_spelling = st.tuples(st.sampled_from(["a", "b", "Key"]), st.sampled_from(["lower", "upper", "same"]), padding)


@SETTINGS
@given(st.lists(st.tuples(key_spelling, st.integers(0, 3)), min_size=1, max_size=6), st.booleans())
def test_colliding_mapping_keys_keep_the_later_value(pairs, as_python):
    """Keys equal after canonicalization (case, white space): the later one in the response wins."""
    written = {}  # distinct spellings only: a spelling written twice is one key of the parsed mapping
    for (name, case, pad), value in pairs:
        key = {"lower": name.lower(), "upper": name.upper(), "same": name}[case]
        written.setdefault(pad + key + pad[::-1], value)
    written = list(written.items())
    body = ", ".join(f"{(repr if as_python else json.dumps)(k)}: {v}" for k, v in written)
    response = "{'answer': {" + body + "}}" if as_python else '{"answer": {' + body + "}}"
    later_wins = {}
    for key, value in written:
        later_wins[key.strip().lower()] = value
    assert _answer_reward(response, later_wins) == 1.0
    earlier_wins = {}
    for key, value in reversed(written):
        earlier_wins[key.strip().lower()] = value
    if earlier_wins != later_wins:
        assert _answer_reward(response, earlier_wins) == 0.0


def test_the_issue_example_of_colliding_keys():
    assert _answer_reward('{"answer": {"A": 1, "a": 2}}', {"a": 2}) == 1.0
    assert _answer_reward('{"answer": {"a": 2, "A": 1}}', {"a": 2}) == 0.0
    assert _answer_reward('{"answer": {"a": 2, "A": 1}}', {"a": 1}) == 1.0
    # A spelling written twice is one key of the parsed mapping, at its first place with its last
    # value (as JSON and Python read it); collisions are then resolved in the mapping's order.
    assert _answer_reward('{"answer": {"a": 0, "A": 5, "a": 1}}', {"a": 5}) == 1.0


@given(final_object_case())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_both_modes_see_the_same_one_line_final_object(case):
    """The one-line form is found whatever the mode; only the schema verdict depends on it."""
    text, kwargs = case
    response = f"```json {text}```"
    answer_mode = explain_trace_response(response=response, **dict(kwargs, trace_reward_mode=MODE_ANSWER))
    both_mode = explain_trace_response(response=response, **dict(kwargs, trace_reward_mode=MODE_ANSWER_AND_ANNOTATION))
    assert answer_mode.extraction.final_object == both_mode.extraction.final_object
    assert answer_mode.extraction.recovered_mapping == both_mode.extraction.recovered_mapping
