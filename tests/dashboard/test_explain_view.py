"""The explanation view-model reads the one TraceEvaluation and shows text only as text."""

from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from dashboard import explain_view as ev_view  # noqa: E402
from scoring import explain_trace_response  # noqa: E402

CONTRACT = {"answer": {"id": "answer_exact_match_v0"}, "annotation": {"id": "bbox_set_soft_iou_v0"}}
ANSWER = {"type": "integer", "value": 3}
BOXES = {"type": "bbox_set", "value": [[10, 10, 50, 50], [100, 100, 150, 150]]}


def explain(response, *, answer_gt=ANSWER, annotation_gt=BOXES, contract=CONTRACT, **options):
    return explain_trace_response(
        response=response, answer_gt=answer_gt, annotation_gt=annotation_gt, reward_contract=contract, **options
    )


# --------------------------------------------------------------------------- the response


def test_response_is_split_around_the_final_object():
    text = 'Let me think.\n{"answer": 3, "annotation": [[10, 10, 50, 50]]}\n'
    evaluation = explain(text)
    view = ev_view.response_view(evaluation)
    start = text.index("{")
    assert [p.role for p in view.pieces] == ["before", "final_object", "after"]
    assert view.pieces[0].text == "Let me think.\n"
    assert view.pieces[1].text == text[start : text.rindex("}") + 1]
    assert (view.pieces[1].start, view.pieces[1].end) == view.final_span
    assert "".join(p.text for p in view.pieces) == text  # a partition: nothing lost, nothing added
    assert view.format_ok and view.break_context == ""
    assert view.summary.startswith(f"final object (bare_object) at chars {start}–")
    assert "scored from the final object" in view.summary


def test_text_after_the_object_shows_the_break_with_a_caret():
    text = '{"answer": 3, "annotation": [[10, 10, 50, 50]]}\nHope this helps!'
    evaluation = explain(text)
    view = ev_view.response_view(evaluation)
    assert view.format_reason == "text_after_object"
    assert view.final_span is None
    assert [p.role for p in view.pieces] == ["recovered", "after"]
    assert view.break_at == text.index("Hope")  # the caret is on the text after the object
    assert (view.break_line, view.break_column) == (2, 1)
    line, caret = view.break_context.split("\n")
    assert caret.index("^") == line.index("Hope")
    assert "earlier object" in view.summary


def test_not_valid_json_break_points_at_the_bad_character():
    text = "<answer>{'answer': 3}</answer>\nFinal: {answer: 3}"
    evaluation = explain(text, annotation_gt=None, contract={"answer": {"id": "answer_exact_match_v0"}},
                         trace_reward_mode="answer")
    view = ev_view.response_view(evaluation)
    assert view.format_reason == "not_valid_json"
    line, caret = view.break_context.split("\n")
    assert line[caret.index("^")] == "a"  # the unquoted key
    assert view.recovered_source == "tag" and not view.recovered_is_final


def test_empty_response():
    view = ev_view.response_view(explain(""))
    assert [p.role for p in view.pieces] == ["whole_response"]
    assert view.format_reason == "empty_response"


def test_markup_in_the_response_is_kept_verbatim_as_text():
    text = '<script>alert(1)</script> **bold** {"answer": 3, "annotation": [[10, 10, 50, 50]]}'
    view = ev_view.response_view(explain(text))
    assert view.pieces[0].text == "<script>alert(1)</script> **bold** "


# --------------------------------------------------------------------------- components


def _rows(evaluation):
    return {r.component: r for r in ev_view.component_rows(evaluation)}


def test_every_component_with_reasons_for_zeros():
    evaluation = explain('{"answer": 4, "annotation": [[10, 10, 50, 50]]} trailing')
    rows = _rows(evaluation)
    assert list(rows) == ["answer", "annotation", "format", "task reward", "overall", "zero_reward (flag)"]
    assert rows["answer"].value == 0.0 and rows["answer"].reason == "4 != 3"
    assert rows["annotation"].value == evaluation.annotation_reward > 0 and rows["annotation"].reason == ""
    assert rows["format"].reason.startswith("text_after_object: text after the last object")
    assert rows["task reward"].reason.startswith("gated: answer reward is 0")
    assert rows["overall"].reason == "format weight 0: overall = task reward, which is 0"
    assert rows["zero_reward (flag)"].value == 1.0


def test_annotation_zero_reason_is_the_scorers_parse_reason():
    evaluation = explain('{"answer": 3, "annotation": [[10, 10, 50, 50], [1, 1, 1, 9]]}')
    assert evaluation.annotation_reward == 0.0
    assert _rows(evaluation)["annotation"].reason == evaluation.annotation.reason == "annotation[1]: zero-area box"


def test_annotation_zero_reason_for_no_overlap():
    evaluation = explain('{"answer": 3, "annotation": [[300, 300, 350, 350]]}')
    assert evaluation.annotation_reward == 0.0
    assert _rows(evaluation)["annotation"].reason == "every paired box has IoU 0 (no overlap) across 1 pair(s)"


def test_additive_formula_task_zero_reason():
    evaluation = explain(
        '{"answer": 4, "annotation": [[300, 300, 350, 350]]}', trace_annotation_reward_formula="additive"
    )
    reason = _rows(evaluation)["task reward"].reason
    assert reason.startswith("additive:") and "answer reward 0" in reason and "annotation reward 0" in reason


def test_answer_mode_marks_the_annotation_unused():
    evaluation = explain('{"answer": 3}', trace_reward_mode="answer")
    rows = _rows(evaluation)
    assert rows["answer"].value == 1.0
    assert "not used: answer-only mode" in rows["annotation"].reason


def test_component_values_are_the_evaluations():
    evaluation = explain('{"answer": 3, "annotation": [[12, 12, 50, 50], [100, 100, 140, 150]]}', format_weight=0.2)
    rows = _rows(evaluation)
    assert rows["overall"].value == evaluation.overall
    assert rows["task reward"].value == evaluation.task_reward
    assert rows["annotation"].value == evaluation.annotation_reward
    assert all(r.reason == "" for r in rows.values())


# --------------------------------------------------------------------------- answer and annotation


def test_answer_view_compares_canonical_values():
    view = ev_view.answer_view(explain('{"answer": 4, "annotation": []}'))
    assert (view.predicted, view.ground_truth, view.correct) == ("4", "3", False)
    assert view.rows()[-1]["value"] == "no match: 4 != 3"
    assert "recovered object" in view.source


def test_answer_from_the_whole_response():
    view = ev_view.answer_view(explain("I think it is 3", annotation_gt=None))
    assert "whole response" in view.source


def test_pair_rows_follow_the_match_result():
    evaluation = explain('{"answer": 3, "annotation": [[12, 12, 50, 50], [100, 100, 140, 150], [0, 0, 5, 5]]}')
    rows = ev_view.pair_rows(evaluation)
    match = evaluation.annotation.match
    matched = [r for r in rows if r["status"] == "matched"]
    assert [(r["pred"], r["gt"], r["iou"]) for r in matched] == [(m.pred_index, m.gt_index, m.iou) for m in match.matches]
    assert [r["pred"] for r in rows if r["status"] == "unmatched prediction"] == [i for _, i in match.unmatched_pred]
    assert "key" not in rows[0] and "distance_px" not in rows[0]
    assert matched[0]["gt shape"] == "[10, 10, 50, 50]"


def test_pair_rows_for_maps_name_missing_and_extra_keys():
    evaluation = explain(
        '{"answer": 3, "annotation": {"cat": [1, 1, 20, 20], "hat": [30, 30, 40, 40]}}',
        annotation_gt={"type": "point_map", "value": {"cat": [10, 10], "dog": [50, 50]}},
        contract={"annotation": {"id": "point_map_soft_distance_v0"}},
    )
    # point_map with box-like values fails to parse: the reason is kept, no pairs
    assert ev_view.pair_rows(evaluation) == []
    evaluation = explain(
        '{"answer": 3, "annotation": {"cat": [12, 10], "hat": [30, 30]}}',
        annotation_gt={"type": "point_map", "value": {"cat": [10, 10], "dog": [50, 50]}},
        contract={"annotation": {"id": "point_map_soft_distance_v0"}},
    )
    statuses = {(r["status"], r["key"]) for r in ev_view.pair_rows(evaluation)}
    assert statuses == {("matched", "cat"), ("extra key", "hat"), ("missing key", "dog")}
    facts = {f[""]: f["value"] for f in ev_view.annotation_facts(evaluation)}
    assert facts["missing keys"] == "'dog'" and facts["extra keys"] == "'hat'"
    assert facts["half-life"].endswith("px (default)")


def test_flat_rows_are_as_flat_dict():
    evaluation = explain('{"answer": 3, "annotation": []}')
    assert {r["key"]: r["value"] for r in ev_view.flat_rows(evaluation)} == evaluation.as_flat_dict()


# --------------------------------------------------------------------------- plain-text marking


def test_mark_spans_puts_carets_under_each_span_line_by_line():
    text = "a 12\nb 345 and 6"
    marked = ev_view.mark_spans(text, [(2, 4), (7, 10, "~"), (15, 16)])
    assert marked == "a 12\n  ^^\nb 345 and 6\n  ~~~     ^"


def test_carets_align_under_wide_characters_and_tabs():
    assert ev_view.mark_spans("中文 12", [(3, 5)]) == "中文 12\n     ^^"
    assert ev_view.mark_spans("\tx", [(1, 2)]) == " x\n ^"


def test_caret_context_clips_long_lines():
    text = "x" * 500 + "Y" + "z" * 500
    line, caret = ev_view.caret_context(text, 500, context=10).split("\n")
    assert line == "…" + "x" * 10 + "Y" + "z" * 10 + "…"
    assert line[caret.index("^")] == "Y"


def test_clip_middle():
    assert ev_view.clip_middle("abc", 10) == "abc"
    clipped = ev_view.clip_middle("a" * 50 + "b" * 50, 20)
    assert clipped.startswith("a" * 10) and clipped.endswith("b" * 10) and "80 characters not shown" in clipped


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=200), st.data())
def test_response_view_never_raises_and_partitions_the_text(text, data):
    evaluation = explain(text)
    view = ev_view.response_view(evaluation)
    assert "".join(p.text for p in view.pieces) == text
    if view.break_at is not None and view.break_context:
        assert "^" in view.break_context
    ev_view.component_rows(evaluation)
    offset = data.draw(st.integers(0, len(text)))
    assert ev_view.caret_context(text, offset).count("\n") == 1


@pytest.mark.parametrize("payload", [json.dumps({"answer": 3, "annotation": [[10, 10, 50, 50]]})])
def test_options_line_names_mode_and_weights(payload):
    line = ev_view.options_line(explain(payload, answer_weight=3, annotation_weight=1))
    assert line == "mode answer_and_annotation, formula gated, weights answer 0.75 / annotation 0.25, format weight 0"
