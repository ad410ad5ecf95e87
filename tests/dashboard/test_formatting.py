"""The format-failure view-model: ordering, where the format broke, exports."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import formatting, loading, sources, tuning
from scoring import explain_trace_response

CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"},
}


def explain(response: str, mode: str = "answer"):
    return explain_trace_response(
        response=response, answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": "bbox", "value": [0, 0, 10, 10]}, reward_contract=CONTRACT, trace_reward_mode=mode,
    )


@pytest.fixture(scope="module")
def run():
    return loading.load_cached(sources.sample_source())


@pytest.fixture(scope="module")
def scores(run):
    return tuning.scores(run.table, tuning.scored_options(run.table))


def test_reason_counts(run, scores):
    counts = formatting.reason_counts(run.table, scores)
    failing = formatting.failure_mask(run.table, scores)
    assert counts["rows"].sum() == failing.sum() > 0
    assert "ok" not in set(counts["reason"]) and "python_literal" not in set(counts["reason"])
    assert (counts["reward_positive"] <= counts["rows"]).all()
    assert counts["rows"].is_monotonic_decreasing
    assert (counts["meaning"] != "").all()


def test_failure_ids_put_reward_positive_rows_first(run, scores):
    ids = formatting.failure_ids(run.table, scores)
    assert len(ids) == formatting.failure_mask(run.table, scores).sum()
    positive = (scores.loc[ids, "task_reward"] > 0).to_numpy()
    first_negative = np.argmin(positive) if not positive.all() else len(positive)
    assert positive[:first_negative].all() and not positive[first_negative:].any()
    assert first_negative > 0


def test_failure_ids_filters(run, scores):
    ids = formatting.failure_ids(run.table, scores, reasons=["missing_keys"], tasks=["count_shapes"])
    assert len(ids) > 0
    assert set(run.table.loc[ids, "format_reason"]) == {"missing_keys"}
    assert set(run.table.loc[ids, "task_id"]) == {"count_shapes"}
    assert len(formatting.failure_ids(run.table, scores, reasons=["no_such_reason"])) == 0


def test_failure_table(run, scores):
    ids = formatting.failure_ids(run.table, scores)[:20]
    table = formatting.failure_table(run.table, scores, ids)
    assert table.index.equals(ids)
    assert table["reward_positive"].iloc[0]


def test_text_after_object_marks_the_first_character_after_the_object():
    # the caret sits on the first character of the text after the object, not on the blank before it
    view = formatting.break_view(explain('Thinking.\n{"answer": 3}\nHope that helps!'))
    assert view.reason == "text_after_object"
    assert view.break_at == len('Thinking.\n{"answer": 3}\n')
    assert (view.line, view.column) == (3, 1)
    lines = view.tail.splitlines()
    assert lines[2] == "Hope that helps!" and lines[3].startswith("^")
    assert view.recovered_text == '{"answer": 3}' and view.recovered_source == "earlier_object"
    assert "there is text after the last object" in formatting.describe_break(view)
    assert "line 3, column 1" in formatting.describe_break(view)
    assert "'Hope that helps!'" in formatting.describe_break(view)


def test_not_valid_json_marks_the_parse_error():
    response = 'Answer:\n{"answer": 3 "annotation": [0, 0, 10, 10]}'
    view = formatting.break_view(explain(response, mode="answer_and_annotation"))
    assert view.reason == "not_valid_json"
    assert response[view.break_at] == '"'
    marker_line = view.tail.splitlines()[2]
    assert marker_line.index("^") == view.column - 1


def test_missing_keys_are_listed():
    view = formatting.break_view(explain('{"answer": 3}', mode="answer_and_annotation"))
    assert view.reason == "missing_keys" and view.missing_keys == ("annotation",)
    assert "Missing key(s): annotation" in formatting.describe_break(view)


def test_empty_response_has_no_marker():
    view = formatting.break_view(explain(""))
    assert view.reason == "empty_response"
    assert "^" not in view.tail and view.recovered_text is None


def test_long_response_shows_a_window_around_an_early_break():
    response = '{"answer": 3} trailing ' + "x" * 5000
    view = formatting.break_view(explain(response), tail_chars=200)
    assert view.tail_start == 0
    assert "^ format broke here" in view.tail
    assert view.tail.endswith("…")


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab{}\n \"é"), max_size=400), data=st.data(), tail=st.integers(10, 300))
def test_marker_sits_under_the_break_character(text, data, tail):
    if not text:
        return
    at = data.draw(st.integers(0, len(text) - 1))
    out, start = formatting.annotated_tail(text, at, tail)
    lines = out.split("\n")
    marker_index = next(i for i, line in enumerate(lines) if line.lstrip(" ").startswith("^ format broke here"))
    column = lines[marker_index].index("^")
    above = lines[marker_index - 1]
    line_start = max(start, text.rfind("\n", 0, at) + 1)
    assert above[:column].endswith(text[line_start:at])  # everything left of the marker is the text before the break
    if text[at] == "\n":
        assert column == len(above)
    else:
        assert above[column] == text[at]


def test_line_col():
    assert formatting.line_col("ab\ncd", 0) == (1, 1)
    assert formatting.line_col("ab\ncd", 3) == (2, 1)
    assert formatting.line_col("ab\ncd", 4) == (2, 2)


def test_row_break_view_uses_the_stored_columns():
    row = pd.Series({"format_reason": "no_final_object", "format_detail": "none", "recovered_source": "nothing",
                     "recovered_text": None, "response": "just prose"})
    view = formatting.row_break_view(row)
    assert view.tail == "just prose" and view.recovered_text is None and view.meaning


def test_exports_round_trip(run, scores):
    ids = formatting.failure_ids(run.table, scores)[:25]
    frame = formatting.export_frame(run.with_text(ids), scores, ids)  # the text read from disk
    assert frame["row_id"].tolist() == list(ids)
    assert list(frame.columns) == [c for c in formatting.EXPORT_COLUMNS if c in frame.columns]
    back = pd.read_csv(io.BytesIO(formatting.to_csv_bytes(frame)))
    assert back["row_id"].tolist() == list(ids)
    assert back["response"].tolist() == frame["response"].tolist()
    records = [json.loads(line) for line in formatting.to_jsonl_bytes(frame).decode().splitlines()]
    assert [r["row_id"] for r in records] == list(ids)
    assert records[0]["response"] == frame["response"].iloc[0]
    assert all(r["step"] is None or isinstance(r["step"], int) for r in records)


def test_format_header_is_plain_text():
    row = pd.Series({"format_reason": "missing_keys", "run": "ckpt-A", "step": 100, "task_id": "**bold**"})
    header = formatting.format_header("f.jsonl:3", row, 0.5)
    assert header == "f.jsonl:3 · reason missing_keys · run ckpt-A · step 100 · task **bold** · task reward 0.500"


def test_failure_ids_count_the_reward_positive_rows(run, scores):
    ids, positive = formatting.failure_ids(run.table, scores, with_positive=True)
    assert ids.equals(formatting.failure_ids(run.table, scores))
    assert positive == int((scores.loc[ids, "task_reward"] > 0).sum())


def test_filter_choices_come_from_failing_rows(run, scores):
    choices = formatting.filter_choices(run.table, scores)
    failing = run.table[formatting.failure_mask(run.table, scores)]
    assert choices["task_id"] == sorted(failing["task_id"].dropna().unique())
    assert choices["run"] == sorted(failing["run"].dropna().unique())
