"""Tuning: options, re-weighting through the scorer's own code path, before/after, snippets."""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest

from dashboard import filters, loading, sources, tuning
from scoring import score_trace_response
from scoring.runs import row_kwargs


@pytest.fixture(scope="module")
def table():
    return loading.load_cached(sources.sample_source()).table


def test_scored_options_read_the_table_attrs(table):
    options = tuning.scored_options(table)
    assert options == {
        "mode": None, "formula": "gated", "answer_weight": 0.5, "annotation_weight": 0.5,
        "format_weight": 0.0, "solved_threshold": 0.999,
    }


def test_normalised_fills_defaults_and_maps_the_per_row_widget_value():
    assert tuning.normalised({"mode": tuning.PER_ROW, "answer_weight": 1}) == dict(
        tuning.DEFAULT_OPTIONS, answer_weight=1.0
    )
    assert tuning.widget_value("mode", None) == tuning.PER_ROW
    assert tuning.widget_value("format_weight", 0.2) == 0.2


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"answer_weight": 0.0, "annotation_weight": 0.0}, "answer_weight + annotation_weight"),
        ({"format_weight": 1.5}, "format_weight"),
        ({"formula": "median"}, "trace_annotation_reward_formula"),
        ({"mode": "both"}, "trace_reward_mode"),
        ({"solved_threshold": 2.0}, "solved_threshold"),
    ],
)
def test_validate_names_the_bad_option(change, needle):
    assert needle in tuning.validate(dict(tuning.DEFAULT_OPTIONS, **change))


def test_validate_accepts_defaults():
    assert tuning.validate(tuning.DEFAULT_OPTIONS) == ""


def test_scores_as_scored_are_the_stored_columns(table):
    scores = tuning.scores(table, tuning.scored_options(table))
    assert list(scores.columns) == list(tuning.SCORE_COLUMNS)
    assert scores.index.equals(table.index)
    np.testing.assert_array_equal(scores["score"].to_numpy(), table["score"].to_numpy())
    np.testing.assert_array_equal(scores["solved"].to_numpy(), table["solved"].to_numpy())


def test_scores_are_memoised_per_table_and_options(table):
    options = dict(tuning.scored_options(table), answer_weight=0.7)
    assert tuning.scores(table, options) is tuning.scores(table, dict(options))


@pytest.mark.parametrize(
    "options",
    [
        {"answer_weight": 0.8, "annotation_weight": 0.2},
        {"formula": "additive", "format_weight": 0.25},
        {"mode": "answer", "format_weight": 0.1},
        {"mode": "answer_and_annotation", "formula": "additive", "answer_weight": 0.3},
    ],
)
def test_reweighted_rows_equal_scoring_again_with_the_options(table, options):
    run = loading.load_cached(sources.sample_source())  # the table's rows with their text read from disk
    options = dict(tuning.DEFAULT_OPTIONS, **options)
    scores = tuning.scores(table, options)
    trace = table[table["scorer"] == "trace"]
    rng = np.random.default_rng(7)
    for row_id in rng.choice(trace.index.to_numpy(), size=40, replace=False):
        kwargs = row_kwargs(run.row(row_id), **tuning.scorer_kwargs(options))
        flat = score_trace_response(**kwargs)
        assert scores.at[row_id, "score"] == pytest.approx(flat["overall"], abs=1e-12)
        assert scores.at[row_id, "task_reward"] == pytest.approx(flat["task_reward_effective"], abs=1e-12)
        assert scores.at[row_id, "format"] == flat["format"]


def test_simple_rows_keep_their_score_and_follow_the_threshold(table):
    simple = table["scorer"] != "trace"
    assert simple.any()
    options = dict(tuning.DEFAULT_OPTIONS, format_weight=0.5, solved_threshold=0.5)
    scores = tuning.scores(table, options)
    np.testing.assert_array_equal(scores.loc[simple, "score"].to_numpy(), table.loc[simple, "score"].to_numpy())
    np.testing.assert_array_equal(scores.loc[simple, "solved"].to_numpy(), table.loc[simple, "score"].to_numpy() >= 0.5)


def test_compare_same_options_changes_nothing(table):
    scored = tuning.scored_options(table)
    comparison = tuning.compare(table, scored, scored)
    assert len(comparison.flips) == 0
    assert (comparison.summary["delta"].abs() < 1e-12).all()
    assert comparison.per_task["flips"].sum() == 0


def test_compare_lower_threshold_only_solves_more(table):
    scored = tuning.scored_options(table)
    after = dict(scored, solved_threshold=0.5)
    comparison = tuning.compare(table, scored, after)
    assert len(comparison.flips) > 0
    assert len(comparison.newly_unsolved) == 0
    assert len(comparison.newly_solved) == len(comparison.flips)
    summary = comparison.summary.set_index("metric")
    assert summary.at["solve rate", "delta"] == pytest.approx(len(comparison.flips) / len(table))
    assert summary.at["mean overall", "delta"] == 0.0
    assert comparison.per_task["flips"].sum() == len(comparison.flips)


def test_per_task_deltas_match_group_means(table):
    scored = tuning.scored_options(table)
    after = dict(scored, format_weight=0.3)
    comparison = tuning.compare(table, scored, after)
    per_task = comparison.per_task.set_index("task")  # task families: per-question ids are grouped
    assert per_task["rows"].sum() == len(table)
    families = filters.task_families(table["task_id"])
    assert sorted(per_task.index) == sorted({str(f) if f is not None else filters.NONE_LABEL for f in families})
    task = "count_shapes"
    mask = (table["task_id"] == task).to_numpy(dtype=bool, na_value=False)
    expected = comparison.after["score"][mask].mean() - comparison.before["score"][mask].mean()
    assert per_task.at[task, "mean_delta"] == pytest.approx(expected)
    ordered = per_task["mean_delta"].abs().to_numpy()
    assert (np.diff(ordered) <= 1e-15).all()  # largest change first


def test_flip_rows_lists_newly_solved_first(table):
    scored = tuning.scored_options(table)
    after = dict(scored, format_weight=0.4, solved_threshold=0.8)
    comparison = tuning.compare(table, scored, after)
    rows = tuning.flip_rows(table, comparison, limit=10_000)
    assert len(rows) == len(comparison.flips)
    assert len(tuning.flip_rows(table, comparison, limit=5)) == 5
    directions = rows["direction"].tolist()
    assert directions == sorted(directions, key=lambda d: d != "unsolved → solved")
    solved_after = rows["score_after"] >= 0.8
    assert (solved_after == (rows["direction"] == "unsolved → solved")).all()


def test_flips_are_found_by_position_and_equal_a_lookup_by_row_id(table):
    scored = tuning.scored_options(table)
    comparison = tuning.compare(table, scored, dict(scored, format_weight=0.4, solved_threshold=0.8))
    assert len(comparison.flips) > 1
    assert comparison.flips.equals(table.index[comparison.flip_positions])
    solved_after = comparison.after.loc[comparison.flips, "solved"].to_numpy(dtype=bool)  # by label
    assert comparison.newly_solved.equals(comparison.flips[solved_after])
    assert comparison.newly_unsolved.equals(comparison.flips[~solved_after])
    rows = tuning.flip_rows(table, comparison, limit=10_000)
    assert rows["score_before"].tolist() == comparison.before.loc[rows.index, "score"].tolist()
    assert rows["task_id"].tolist() == table.loc[rows.index, "task_id"].tolist()


def test_score_frames_kept_are_bounded_by_bytes_the_latest_always_kept(table):
    computed = []
    memo = filters.TableMemo(size=8, max_bytes=2 * 1000, weigh=lambda value: value)
    for key in range(4):
        memo.get(table, key, lambda k=key: computed.append(k) or 900)  # 900 bytes each: two fit
    assert memo.get(table, 3, lambda: computed.append("again") or 900) == 900 and computed == [0, 1, 2, 3]
    memo.get(table, 1, lambda: computed.append("1 again") or 900)  # evicted: computed again
    assert computed[-1] == "1 again"
    memo.get(table, "big", lambda: 10_000)  # over the bound alone: still kept, the others dropped
    assert memo.get(table, "big", lambda: computed.append("big again") or 10_000) == 10_000
    assert computed[-1] != "big again"


def test_snippets_carry_the_options():
    options = dict(tuning.DEFAULT_OPTIONS, mode="answer", formula="additive", answer_weight=0.7, format_weight=0.1,
                   solved_threshold=0.9)
    python = tuning.snippet_python(options)
    call = ast.parse(python.split("\nSOLVED_THRESHOLD")[0].replace("...", "None")).body[0].value
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert kwargs["trace_reward_mode"] == "answer"
    assert kwargs["trace_annotation_reward_formula"] == "additive"
    assert kwargs["answer_weight"] == 0.7 and kwargs["format_weight"] == 0.1
    assert "SOLVED_THRESHOLD = 0.9" in python
    yaml = tuning.snippet_yaml(options)
    lines = dict(line.strip().split(": ", 1) for line in yaml.splitlines() if ": " in line and not line.strip().startswith("#"))
    assert lines["trace_reward_mode"] == "answer"
    assert float(lines["answer_weight"]) == 0.7
    assert float(lines["solved_threshold"]) == 0.9


def test_snippet_for_per_row_mode_leaves_the_mode_out():
    python = tuning.snippet_python(tuning.DEFAULT_OPTIONS)
    assert "trace_reward_mode=" not in python
    assert "each row's own" in python
    assert "trace_reward_mode:" not in tuning.snippet_yaml(tuning.DEFAULT_OPTIONS).replace("# trace_reward_mode:", "")


def test_scorer_kwargs_score_a_response():
    kwargs = tuning.scorer_kwargs(dict(tuning.DEFAULT_OPTIONS, answer_weight=0.2))
    flat = score_trace_response(
        response='{"answer": 3}', answer_gt={"type": "integer", "value": 3}, annotation_gt=None,
        reward_contract={"answer": {"id": "answer_exact_match_v0", "type": "integer"}}, trace_reward_mode="answer",
        **{k: v for k, v in kwargs.items() if k != "trace_reward_mode"},
    )
    assert flat["overall"] == 1.0 and math.isclose(flat["trace_answer_weight"], 0.2 / 0.7)


def test_score_counts_are_memoised_histograms(table):
    scores = tuning.scores(table, tuning.scored_options(table))
    counts = tuning.score_counts(scores)
    assert counts["count"].sum() == scores["score"].notna().sum()
    assert tuning.score_counts(scores) is counts


def test_annotation_share_is_the_normalised_annotation_weight():
    from dashboard.tuning import annotation_share

    assert annotation_share({"answer_weight": 3, "annotation_weight": 1}) == 0.25
    assert annotation_share({"answer_weight": 0.5, "annotation_weight": 0.5}) == 0.5
    assert annotation_share({"answer_weight": 0, "annotation_weight": 0}) == 0.0
