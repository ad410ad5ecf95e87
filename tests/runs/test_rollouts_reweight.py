"""Re-weighting without rescoring equals rescoring, row by row."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, row, scorer_kwargs, write_jsonl

from scoring import score_trace_response
from scoring.datasets import STORED_TEXT_COLUMNS, compact_table
from scoring.runs import DIAGNOSTIC_KEYS, recompute, reweight, score_files
from scoring.runs import reweighting as reweight_module
from scoring.verifier import FLAT_KEYS


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reweight")
    rows = diverse_rows() + [
        row('{"answer": 7, "annotation": [0, 0, 10, 10], "note": 1}'),  # extra key under both modes
        row('{"answer": 7, "annotation": [1, 1, 10, 10]}', mode="answer"),  # extra key only in answer mode
        row("{'answer': 7}", mode="answer"),  # python literal, answer mode
        row('["not", "a", "mapping"]'),
    ]
    rows[-1]["score"] = 0.0
    table = score_files(write_jsonl(folder / "rows.jsonl", rows), workers=1).table
    return rows, table


def _check_identity(rows, table, options):
    result = reweight(table, **options)
    scorer_options = {k: v for k, v in options.items() if k != "solved_threshold" and v is not None}
    threshold = options.get("solved_threshold", 0.999)
    for i, item in enumerate(rows):
        expected = score_trace_response(**scorer_kwargs(item, **scorer_options))
        got = result.iloc[i]
        for key in FLAT_KEYS:
            assert got[key] == expected[key], (i, key, options)
        for key in DIAGNOSTIC_KEYS:
            assert (got[key] == expected[key]) if key in expected else math.isnan(got[key])
        assert got["score"] == expected["overall"]
        assert bool(got["solved"]) == (expected["overall"] >= threshold)
    return result


OPTION_CASES = [
    {},
    {"answer_weight": 0.7, "annotation_weight": 0.3},
    {"trace_annotation_reward_formula": "additive", "format_weight": 0.1},
    {
        "trace_annotation_reward_formula": "separate",
        "answer_weight": 2,
        "annotation_weight": 1,
        "format_weight": 1.0,
    },
    {"trace_reward_mode": "answer", "format_weight": 0.3},
    {"trace_reward_mode": "answer_only"},
    {"trace_reward_mode": "answer_and_annotation", "trace_annotation_reward_formula": "linear"},
    {"trace_reward_mode": "annotation", "answer_weight": 0, "annotation_weight": 5, "format_weight": 0.5},
    {"answer_weight": "0.25", "annotation_weight": "0.75", "format_weight": "0.2", "solved_threshold": 0.5},
    {"trace_annotation_reward_formula": None, "solved_threshold": 0.0},
]


@pytest.mark.parametrize("options", OPTION_CASES, ids=[str(i) for i in range(len(OPTION_CASES))])
def test_reweight_equals_rescoring(scored, options):
    rows, table = scored
    _check_identity(rows, table, options)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    answer_weight=st.floats(0, 10, allow_nan=False),
    annotation_weight=st.floats(0, 10, allow_nan=False),
    formula=st.sampled_from(["gated", "additive", "answer_gated", "separate", None]),
    mode=st.sampled_from([None, "answer", "answer_only", "answer_and_annotation", "annotation", " Answer "]),
    format_weight=st.floats(0, 1, allow_nan=False),
    solved_threshold=st.floats(0, 1, allow_nan=False),
)
def test_reweight_equals_rescoring_property(
    scored, answer_weight, annotation_weight, formula, mode, format_weight, solved_threshold
):
    if answer_weight + annotation_weight <= 0:
        return
    rows, table = scored
    options = {
        "answer_weight": answer_weight,
        "annotation_weight": annotation_weight,
        "trace_annotation_reward_formula": formula,
        "format_weight": format_weight,
        "trace_reward_mode": mode,
        "solved_threshold": solved_threshold,
    }
    _check_identity(rows, table, options)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    option_case=st.sampled_from(OPTION_CASES),
    columns=st.sets(st.sampled_from(["score", "solved", "overall", "format", "format_schema_ok", "zero_reward",
                                     "task_reward_effective", "task_reward_raw", "trace_reward_mode_answer",
                                     "format_weight", "option_answer_weight", "not a column"]), max_size=5),
)
def test_only_the_columns_asked_for_each_equal_to_all_of_them(scored, option_case, columns):
    _, table = scored
    everything = recompute(table, **option_case)
    some = recompute(table, **option_case, columns=columns)
    assert set(some) == set(columns) & set(everything)
    for key, values in some.items():
        np.testing.assert_array_equal(values, everything[key])


def test_mode_override_moves_format_reason_and_mode(scored):
    rows, table = scored
    result = reweight(table, trace_reward_mode="answer")
    for i, item in enumerate(rows):
        from scoring import explain_trace_response

        evaluation = explain_trace_response(**scorer_kwargs(item, trace_reward_mode="answer"))
        assert result["format_reason"].iat[i] == evaluation.format_reason
        assert result["trace_output_mode"].iat[i] == "answer"


def test_input_table_is_not_modified(scored):
    _, table = scored
    before = table.copy()
    reweight(table, trace_reward_mode="answer", format_weight=0.5, answer_weight=9)
    pd.testing.assert_frame_equal(before, table)


def test_invalid_options_raise_like_the_scorer(scored):
    _, table = scored
    for bad in (
        {"format_weight": 1.5},
        {"answer_weight": -0.1},
        {"answer_weight": 0, "annotation_weight": 0},
        {"trace_reward_mode": "both"},
        {"trace_annotation_reward_formula": "mean"},
        {"solved_threshold": 2},
        {"answer_weight": None},
        {"format_weight": float("nan")},
    ):
        with pytest.raises(ValueError):
            recompute(table, **bad)
    with pytest.raises(ValueError, match="not a scored table"):
        recompute(pd.DataFrame({"x": [1]}))


def test_simple_rows_get_their_solved_flag(tmp_path, scored):
    _, trace_table = scored
    simple = score_files(
        write_jsonl(tmp_path / "g.jsonl", [{"output": "0.9", "gold": "x"}, {"output": "a", "gold": "a"}]),
        scorer="exact_match",
        workers=1,
    ).table
    mixed = pd.concat([trace_table, simple], ignore_index=True)
    result = reweight(mixed, format_weight=0.5, solved_threshold=0.5)
    simple_part = result.iloc[len(trace_table) :]
    assert simple_part["score"].tolist() == [0.0, 1.0]
    assert simple_part["solved"].tolist() == [False, True]
    assert np.isnan(simple_part["overall"]).all()
    trace_part = result.iloc[: len(trace_table)]
    assert (trace_part["format_weight"] == 0.5).all()


def test_logged_mismatch_follows_the_new_options(scored):
    rows, table = scored
    last = len(rows) - 1
    assert table["logged_overall"].iat[last] == 0.0
    blended = reweight(table, format_weight=1.0)
    expected = score_trace_response(**scorer_kwargs(rows[last], format_weight=1.0))["overall"]
    assert (blended["logged_mismatch"].iat[last] == "overall") == (expected != 0.0)


@pytest.fixture(scope="module")
def mixed_compact(scored, tmp_path_factory):
    """The trace rows and simple-scorer rows interleaved, as the batch table and as an opened
    dataset holds them (compact: the mostly-constant rewards and verdicts sparse)."""
    _, trace_table = scored
    simple = score_files(
        write_jsonl(tmp_path_factory.mktemp("simple") / "g.jsonl",
                    [{"output": "0.9", "gold": "x"}, {"output": "a", "gold": "a"}, {"output": "b", "gold": "a"}]),
        scorer="exact_match",
        workers=1,
    ).table
    batch = pd.concat([trace_table, simple, trace_table, simple, trace_table], ignore_index=True)
    batch = batch.drop(columns=[c for c in STORED_TEXT_COLUMNS if c in batch.columns])
    compact = compact_table(batch)
    assert any(isinstance(compact[c].dtype, pd.SparseDtype) for c in ("answer_reward", "format"))
    return batch, compact


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option_case=st.sampled_from(OPTION_CASES), block_rows=st.integers(1, 80))
def test_reweighting_block_by_block_a_compact_table_equals_the_whole_batch_table_at_once(
    mixed_compact, option_case, block_rows
):
    batch, compact = mixed_compact
    everything = recompute(batch, **option_case)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(reweight_module, "BLOCK_ROWS", block_rows)
        blocked = recompute(compact, **option_case)
    assert set(blocked) == set(everything)
    for key, values in blocked.items():
        np.testing.assert_array_equal(values, everything[key], err_msg=key)
        assert values.dtype == everything[key].dtype, key
