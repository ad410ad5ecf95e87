"""Playground view-models: the scorers' own explanations, made visible, errors made friendly."""

from __future__ import annotations

import json
import os
import sys

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from dashboard import playground as pg  # noqa: E402
from scoring.rewards import simple as rewards
from scoring.runs import (
    BatchOptions,
    score_records,  # noqa: E402
)

# --------------------------------------------------------------------------- simple scorers


def test_last_number_marks_every_number_and_the_compared_one():
    view = pg.run_simple("last_number", "#### 72", "48 + 24 = 72. The answer is 72.")
    assert view.ok and view.score == 1.0 and view.solved is True
    assert view.reason == "last number in output 72 == 72 from gold"
    (title, marked), (_, gold_marked) = view.blocks
    # "72." is a number of the grammar ("12." reads 12), so the marks cover the point.
    assert marked == "48 + 24 = 72. The answer is 72.\n~~   ~~   ~~~               ^^^"
    assert gold_marked == "#### 72\n     ^^"
    assert [n["text"] for n in view.output_numbers] == ["48", "24", "72.", "72."]
    assert [n["used"] for n in view.output_numbers] == ["", "", "", "← compared"]
    assert view.output_numbers[-1]["start"] == 28 and view.output_numbers[-1]["end"] == 31
    assert view.reading == pg.READING_LABELS[rewards.READING_AGENTDESCENT]


def test_the_view_shows_which_reading_ran_and_marks_numbers_that_way():
    default = pg.run_simple("last_number", "-18", "It fell by -$18.")
    signed = pg.run_simple("last_number", "-18", "It fell by -$18.", reading=rewards.READING_SIGNED)
    assert (default.score, signed.score) == (0.0, 1.0)
    assert default.explanation.reading == rewards.READING_AGENTDESCENT
    assert signed.explanation.reading == rewards.READING_SIGNED
    assert signed.reading == pg.READING_LABELS[rewards.READING_SIGNED] != default.reading
    assert [n["text"] for n in default.output_numbers] == ["18."]
    assert [n["text"] for n in signed.output_numbers] == ["-$18."]
    assert pg.run_simple("exact_match", "a", "a").reading == ""


def test_numeric_close_shows_the_tolerance_test():
    view = pg.run_simple("numeric_close", "100", "about 100.5", tolerance=0.01)
    explanation = rewards.explain_numeric_close("100", "about 100.5", tolerance=0.01)
    assert view.score == explanation.score == 1.0
    assert view.tolerance_test == "|100.5 − 100| = 0.5 ≤ 1 → pass   (allowed = 0.01 × max(1, |100|) = 1)"
    fail = pg.run_simple("numeric_close", "100", "about 102", tolerance=0.01)
    assert fail.score == 0.0 and fail.tolerance_test.startswith("|102 − 100| = 2 > 1 → fail")
    none = pg.run_simple("numeric_close", "100", "no idea")
    assert none.tolerance_test.startswith("no number in the output → 0")


def test_exact_match_shows_normalised_strings_and_the_first_difference():
    view = pg.run_simple("exact_match", "Paris", "  PARIS, France. ")
    assert view.score == 0.0
    blocks = dict(view.blocks)
    assert blocks["output (normalised)"] == "paris, france"
    assert blocks["gold (normalised)"] == "paris"
    assert blocks["first difference at character 5"] == "output: paris, france\n             ^\ngold:   paris\n             ^"
    shorter = pg.run_simple("exact_match", "abcd", "abxd")
    assert dict(shorter.blocks)["first difference at character 2"] == "output: abxd\n          ^\ngold:   abcd\n          ^"
    same = pg.run_simple("exact_match", "Paris", "paris.")
    assert same.score == 1.0 and "first difference" not in " ".join(t for t, _ in same.blocks)
    raw = pg.run_simple("exact_match", "Paris", "paris.", normalise=False)
    assert raw.score == 0.0 and dict(raw.blocks)["gold (compared as is)"] == "Paris"


def test_contains_marks_where_the_gold_was_found():
    view = pg.run_simple("contains", "72", "it is 1723")
    assert view.score == 1.0
    title, marked = view.blocks[0]
    assert "found" in title and marked == "it is 1723\n       ^^"
    assert "prefer last_number" in view.reason


def test_solved_uses_the_threshold():
    assert pg.run_simple("exact_match", "a", "a", solved_threshold=0.5).solved is True
    view = pg.run_simple("exact_match", "a", "b", solved_threshold=0.0)
    assert view.score == 0.0 and view.solved is True  # 0 >= 0


@pytest.mark.parametrize(
    ("scorer", "gold", "kwargs", "fragment"),
    [
        ("last_number", "no number here", {}, "holds no number"),
        ("numeric_close", "5", {"tolerance": "lots"}, "tolerance must be a number"),
        ("last_number", "5", {"reading": "rounded"}, "reading must be one of"),
        ("nope", "5", {}, "unknown scorer 'nope'"),
        ("exact_match", "5", {"solved_threshold": 2}, "solved_threshold must be a finite number in [0, 1]"),
    ],
)
def test_errors_are_friendly_messages(scorer, gold, kwargs, fragment):
    view = pg.run_simple(scorer, gold, "5", **kwargs)
    assert not view.ok and fragment in view.error and view.score is None


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(rewards.scorer_names()), st.text(max_size=40), st.text(max_size=80))
def test_simple_view_agrees_with_the_scorer_and_never_raises(scorer, gold, output):
    view = pg.run_simple(scorer, gold, output)
    if view.ok:
        assert view.score == rewards.score_rows(scorer, [gold], [output])[0]
    else:
        with pytest.raises(ValueError):
            rewards.score_rows(scorer, [gold], [output])


# --------------------------------------------------------------------------- batch


def test_parse_batch_jsonl_and_csv():
    frame, problem = pg.parse_batch_text('{"gold": "#### 3", "response": "3"}\n\n{"gold": "4", "response": "5"}')
    assert problem == "" and frame.to_dict("records") == [{"gold": "#### 3", "output": "3"}, {"gold": "4", "output": "5"}]
    frame, problem = pg.parse_batch_text("answer,completion\n7,the answer is 7\n8,\"eight, or 9\"")
    assert problem == "" and frame["output"].tolist() == ["the answer is 7", "eight, or 9"]
    frame, problem = pg.parse_batch_text("gold\toutput\n1\t1")
    assert problem == "" and frame.iloc[0].tolist() == ["1", "1"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "paste some rows first"),
        ('{"gold": 1', "line 1 is not valid JSON"),
        ('[{"gold": 1}', "not valid JSON"),
        ('{"gold": "1", "x": "2"}', "need a gold column"),
        ("[1, 2]", "every JSON row must be an object"),
    ],
)
def test_parse_batch_errors(text, fragment):
    frame, problem = pg.parse_batch_text(text)
    assert fragment in problem and len(frame) == 0


def test_batch_solve_rate_against_the_threshold_and_row_errors():
    rows = pd.DataFrame(
        {"gold": ["#### 72", "#### 10", "#### 5", "Paris"], "output": ["72", "$10.00", "15", "paris"]}
    )
    result = pg.run_batch(rows, "last_number")
    assert result.frame["score"].tolist()[:3] == [1.0, 1.0, 0.0]
    assert result.frame["error"].iloc[3].startswith("gold 'Paris' holds no number")
    assert (result.rows, result.scored, result.failed) == (4, 3, 1)
    assert result.solve_rate == pytest.approx(2 / 3)
    assert result.mean_score == pytest.approx(2 / 3)
    close = pg.run_batch(rows.iloc[:3], "numeric_close", tolerance=2.0, solved_threshold=0.999)
    assert close.solve_rate == 1.0  # |15 - 5| = 10 <= 2 * 5


def test_batch_scores_equal_score_rows():
    golds = ["#### 1,200", "#### 3", "seven"]
    outputs = ["Total: 1200", "3.0", "7"]
    result = pg.run_batch(pd.DataFrame({"gold": golds, "output": outputs}), "last_number")
    assert result.frame["score"].tolist()[:2] == rewards.score_rows("last_number", golds[:2], outputs[:2])
    assert pd.isna(result.frame["score"].iloc[2]) and result.frame["error"].iloc[2].startswith("gold 'seven'")


def test_batch_invalid_options_are_one_friendly_error():
    rows = pd.DataFrame({"gold": ["1"], "output": ["1"]})
    assert "solved_threshold" in pg.run_batch(rows, "exact_match", solved_threshold=3).error
    assert "tolerance" in pg.run_batch(rows, "numeric_close", tolerance="lots").error
    assert "reading" in pg.run_batch(rows, "last_number", reading="rounded").error
    signed = pg.run_batch(pd.DataFrame({"gold": ["-18"], "output": ["-$18"]}), "numeric_close", reading="signed")
    assert signed.frame["score"].tolist() == [1.0]


def test_simple_rows_from_a_scored_table():
    run = score_records(
        [{"id": "a", "gold": "#### 2", "output": "2"}, {"id": "b", "gold": "#### 3", "output": "4"}],
        options=BatchOptions(scorer="last_number"),
    )
    rows = pg.simple_rows(run.table)
    assert rows["gold"].tolist() == ["#### 2", "#### 3"]
    assert rows["output"].tolist() == ["2", "4"]
    result = pg.run_batch(rows, "last_number")
    assert result.frame["score"].tolist() == run.table["score"].tolist() == [1.0, 0.0]


# --------------------------------------------------------------------------- trace playground


def test_every_example_scores_without_error():
    for name, inputs in pg.EXAMPLES.items():
        evaluation, problem = pg.run_trace(inputs)
        assert problem == "" and evaluation is not None, name


def test_examples_show_what_their_names_say():
    bbox, _ = pg.run_trace(pg.EXAMPLES["bbox_set: one box missed, one extra"])
    assert bbox.annotation.match.pred_size == 3 and bbox.answer_reward == 1.0
    text_after, _ = pg.run_trace(pg.EXAMPLES["point_sequence: text after the object"])
    assert text_after.format_reason == "text_after_object"
    gated, _ = pg.run_trace(pg.EXAMPLES["segment_set: wrong answer gates the reward"])
    assert gated.answer_reward == 0.0 and gated.overall == 0.0 and gated.annotation_reward > 0
    tag, _ = pg.run_trace(pg.EXAMPLES["not valid JSON, recovered from an answer tag"])
    assert tag.format_reason == "not_valid_json" and tag.recovered_source == "tag"
    keys, _ = pg.run_trace(pg.EXAMPLES["bbox_map: an extra and a missing key"])
    assert keys.annotation.match.missing_keys == ("dog",) and keys.annotation.match.extra_keys == ("hat",)


def test_trace_inputs_become_scorer_kwargs():
    inputs = pg.TraceInputs(
        response='{"answer": 1}',
        answer_gt='{"type": "integer", "value": 1}',
        reward_contract='{"answer": {"id": "answer_exact_match_v0"}}',
        image_size="640x480",
        point_half_life_px="25",
        mode="answer",
        format_weight=0.25,
    )
    kwargs, problem = pg.trace_kwargs(inputs)
    assert problem == ""
    assert kwargs["image_size"] == [640.0, 480.0] and kwargs["point_half_life_px"] == 25.0
    assert kwargs["annotation_gt"] is None and kwargs["trace_reward_mode"] == "answer"
    evaluation, _ = pg.run_trace(inputs)
    assert evaluation.overall == 1.0 and evaluation.options.format_weight == 0.25


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"answer_gt": '{"type": '}, "answer_gt is not valid JSON"),
        ({"answer_gt": ""}, "answer_gt is empty"),
        ({"reward_contract": "[1,"}, "reward_contract is not valid JSON"),
        ({"image_size": "big"}, "is not a width and height"),
        ({"point_half_life_px": "wide"}, "point_half_life_px 'wide' is not a number"),
        ({"answer_weight": 0.0, "annotation_weight": 0.0}, "invalid option: answer_weight + annotation_weight"),
        ({"point_half_life_px": "-3"}, "invalid option: point_half_life_px"),
    ],
)
def test_trace_errors_are_friendly(changes, fragment):
    base = pg.EXAMPLES[pg.DEFAULT_EXAMPLE]
    evaluation, problem = pg.run_trace(pg.with_options(base, **changes))
    assert evaluation is None and fragment in problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1024,768", [1024.0, 768.0]), ("1024x768", [1024.0, 768.0]), ("[640, 480]", [640.0, 480.0]),
     ('{"width": 3, "height": 4}', [3.0, 4.0]), ("", None), ("800 × 600", [800.0, 600.0])],
)
def test_parse_size(text, expected):
    assert pg.parse_size(text) == (expected, "")


def test_prefill_from_a_scored_row_reproduces_its_scores():
    record = {
        "id": "r1",
        "response": 'ok {"answer": 2, "annotation": [[10, 10, 40, 40]]}',
        "answer_gt": {"type": "integer", "value": 2},
        "annotation_gt": {"type": "bbox_set", "value": [[12, 12, 40, 40]]},
        "reward_contract": {"answer": {"id": "answer_exact_match_v0"}, "annotation": {"id": "bbox_set_soft_iou_v0"}},
        "image_size": [320, 200],
    }
    table = score_records([record]).table
    row = table.iloc[0]
    inputs, problem = pg.inputs_from_row(row, "row-1")
    assert problem == "" and inputs.row_id == "row-1"
    assert json.loads(inputs.annotation_gt) == record["annotation_gt"]
    assert inputs.image_size == "320,200" and inputs.response == record["response"]
    evaluation, _ = pg.run_trace(inputs)
    assert evaluation.overall == pytest.approx(row["overall"])
    assert evaluation.annotation_reward == pytest.approx(row["annotation_reward"])


def test_prefill_from_a_simple_row_is_refused_politely():
    row = pd.Series({"scorer": "last_number", "response": "1"})
    inputs, problem = pg.inputs_from_row(row)
    assert inputs is None and "cannot be loaded into the trace playground" in problem
