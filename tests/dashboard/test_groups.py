"""GRPO groups: group keys, per-group statistics, no-signal flags, and the share under other options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scoring.runs.reweighting
from dashboard import groups, loading, sources, tuning
from scoring.verifier import recompose


def make_table(rows: list[dict]) -> pd.DataFrame:
    """Trace rows whose ``score`` is what the scorer composes from answer/annotation/format (default options)."""
    defaults = {
        "run": "r", "step": 1, "source_file": "f.jsonl", "instance_id": None, "sample_index": None,
        "prompt": None, "image_ref": None, "task_id": "t", "annotation_type": "bbox", "scorer": "trace",
        "answer_reward": 1.0, "annotation_reward": 1.0, "format": 1.0,
    }
    frame = pd.DataFrame([{**defaults, **r} for r in rows])
    frame["step"] = frame["step"].astype("Int64")
    frame["sample_index"] = frame["sample_index"].astype("Int64")
    frame["trace_reward_mode_answer"] = 0.0
    frame["format_ok_answer"] = frame["format"]
    frame["format_ok_answer_and_annotation"] = frame["format"]
    composed = recompose(frame["answer_reward"], frame["annotation_reward"], frame["format"],
                         trace_reward_mode="answer_and_annotation")
    frame["score"] = composed["overall"]
    frame["task_reward_effective"] = composed["task_reward"]
    frame.index = pd.Index([f"f:{i + 1}" for i in range(len(frame))], name="row_id")
    frame.attrs["scoring_options"] = {"trace_reward_mode": None, "trace_annotation_reward_formula": "gated",
                                      "answer_weight": 0.5, "annotation_weight": 0.5, "format_weight": 0.0,
                                      "solved_threshold": 0.999}
    return frame


def group_of(iid: str, answers_annotations: list[tuple[float, float]], **extra) -> list[dict]:
    return [{"instance_id": iid, "sample_index": k, "answer_reward": a, "annotation_reward": n, **extra}
            for k, (a, n) in enumerate(answers_annotations)]


def scores_of(table: pd.DataFrame) -> pd.DataFrame:
    return tuning.scores(table, tuning.scored_options(table))


# --------------------------------------------------------------------------- detection


def test_sample_index_groups_within_run_step_and_file():
    table = make_table(
        group_of("i1", [(1, 1), (0, 1)])
        + group_of("i1", [(1, 1), (1, 1)], step=2)  # another step: another group
        + group_of("i1", [(1, 0.5)], source_file="export.csv")  # another file: not pooled
        + group_of("i2", [(1, 1), (1, 1), (1, 1)], run="other")
    )
    grouping = groups.detect_groups(table)
    g = grouping.groups
    assert len(g) == 4
    assert g["size"].tolist() == [2, 2, 1, 3]
    assert g["how"].unique().tolist() == [groups.HOW_SAMPLE]
    assert g["key"].tolist() == ["i1", "i1", "i1", "i2"]
    assert g["step"].tolist() == [1, 2, 1, 1]
    assert grouping.rows_of(3).tolist() == ["f:6", "f:7", "f:8"]
    assert g["first_row"].tolist() == ["f:1", "f:3", "f:5", "f:6"]


def test_repeated_sample_index_is_counted():
    table = make_table(group_of("i1", [(1, 1), (1, 1)]) + [{"instance_id": "i1", "sample_index": 0}])
    grouping = groups.detect_groups(table)
    assert grouping.groups["size"].tolist() == [3]
    assert grouping.groups["repeated_samples"].tolist() == [1]
    assert "1 group repeats a sample index (1 extra rollout)" in grouping.describe()


def test_prompt_and_image_without_sample_index():
    table = make_table([
        {"prompt": "p1", "image_ref": "/a/x.png"}, {"prompt": "p1", "image_ref": "/b/x.png"},  # same file name
        {"prompt": "p1", "image_ref": "/a/y.png"},  # another image
        {"prompt": "p2"}, {"prompt": "p2"},  # no image: the prompt alone
        {"prompt": "  ", "instance_id": "i9"}, {"instance_id": "i9"},  # no prompt: the instance id
        {},  # nothing to group on
    ])
    grouping = groups.detect_groups(table)
    g = grouping.groups
    assert g["size"].tolist() == [2, 1, 2, 2]
    assert g["key"].tolist() == ["p1 · x.png", "p1 · y.png", "p2 · (no image)", "i9"]
    assert g["how"].unique().tolist() == [groups.HOW_PROMPT]
    assert (grouping.ungrouped, grouping.no_image) == (1, 2)
    assert int(g["size"].sum()) + grouping.ungrouped == len(table)  # nothing lost
    text = grouping.describe()
    assert "1 row has neither a prompt nor an instance id" in text
    assert "2 rows have no image: they were grouped on the prompt alone" in text


def test_single_rollouts_and_empty_tables_say_so():
    table = make_table([{"prompt": f"p{i}"} for i in range(3)])
    grouping = groups.detect_groups(table)
    assert "Every group has a single rollout" in grouping.describe()
    stats = groups.group_stats(grouping, scores_of(table))
    summary = groups.signal_summary(stats)
    assert summary["multi_groups"] == 0 and summary["single_groups"] == 3
    assert np.isnan(summary["zero_signal_share"])
    assert stats["signal"].unique().tolist() == [groups.SIGNAL_SINGLE]
    assert groups.per_run_step(stats).empty
    empty = groups.detect_groups(table.iloc[:0])
    assert empty.describe() == "No rows." and empty.groups.empty
    assert groups.signal_summary(groups.group_stats(empty, scores_of(table).iloc[:0]))["groups"] == 0
    nothing = groups.detect_groups(make_table([{}, {}]))
    assert nothing.groups.empty and nothing.ungrouped == 2


# --------------------------------------------------------------------------- statistics and flags


def flagged_table() -> pd.DataFrame:
    return make_table(
        group_of("all0", [(0, 1), (0, 0.5), (0, 0)])
        + group_of("all1", [(1, 1), (1, 1)])
        + group_of("half", [(1, 0), (1, 0)])  # gated: 0.5 each -> all equal
        + group_of("mixed", [(1, 1), (0, 1), (1, 0.5), (1, 0)])
        + group_of("single", [(1, 1)])
    )


def test_group_stats_match_a_plain_groupby_and_flag_no_signal():
    table = flagged_table()
    grouping = groups.detect_groups(table)
    scores = scores_of(table)
    stats = groups.group_stats(grouping, scores).set_index("key")
    assert stats["signal"].to_dict() == {"all0": "all 0", "all1": "all 1", "half": "all equal", "mixed": "mixed",
                                         "single": "single rollout"}
    assert stats["zero_signal"].to_dict() == {"all0": True, "all1": True, "half": True, "mixed": False, "single": False}
    assert stats.loc["all1", "solved_signal"] == groups.SOLVED_ALL
    assert stats.loc["all0", "solved_signal"] == groups.SOLVED_NONE
    reference = pd.DataFrame({"key": table["instance_id"], "score": scores["score"], "solved": scores["solved"]})
    expected = reference.groupby("key")["score"].agg(["mean", "std", "min", "max"])
    for column in ("mean", "std", "min", "max"):
        np.testing.assert_allclose(stats.loc[expected.index, column], expected[column])
    assert stats.loc["mixed", "solved_fraction"] == pytest.approx(0.25)
    summary = groups.signal_summary(stats.reset_index())
    assert summary["multi_groups"] == 4 and summary["zero_signal"] == 3
    assert summary["zero_signal_share"] == pytest.approx(0.75)
    assert (summary["all_zero"], summary["all_one"], summary["all_equal"]) == (1, 1, 1)
    assert summary["uniform_solved"] == 3  # all0 and half: none solved; all1: all solved
    per_step = groups.per_run_step(stats.reset_index())
    assert per_step[["run", "step", "groups"]].values.tolist() == [["r", 1, 4]]
    assert per_step["zero_signal_share"].tolist() == pytest.approx([0.75])


def test_unscored_rollouts_are_left_out():
    table = flagged_table()
    scores = scores_of(table).copy()
    scores.iloc[9, scores.columns.get_loc("score")] = np.nan  # one rollout of "mixed" could not be scored
    stats = groups.group_stats(groups.detect_groups(table), scores).set_index("key")
    assert stats.loc["mixed", "scored"] == 3 and stats.loc["mixed", "size"] == 4


def test_group_rollouts_lists_a_group_by_sample_index():
    table = flagged_table()
    grouping = groups.detect_groups(table)
    rows = groups.group_rollouts(table, scores_of(table), grouping, 3)
    assert rows["sample_index"].tolist() == [0, 1, 2, 3]
    assert rows["score"].tolist() == pytest.approx([1.0, 0.0, 0.75, 0.5])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([1, 2]),
                          st.sampled_from([0.0, 0.25, 1.0]), st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=25))
def test_stats_equal_pandas_groupby_on_random_groups(rows):
    table = make_table([{"instance_id": i, "step": s, "sample_index": k, "answer_reward": a, "annotation_reward": n}
                        for k, (i, s, a, n) in enumerate(rows)])
    scores = scores_of(table)
    stats = groups.group_stats(groups.detect_groups(table), scores)
    frame = pd.DataFrame({"i": table["instance_id"], "s": table["step"].astype(int), "v": scores["score"]})
    expected = frame.groupby(["s", "i"])["v"].agg(["size", "mean", "min", "max", "std"])
    got = stats.set_index([stats["step"].astype(int), "key"]).sort_index()
    np.testing.assert_array_equal(got["size"], expected["size"])
    for column in ("mean", "min", "max", "std"):
        np.testing.assert_allclose(got[column], expected[column], atol=1e-12)
    constant = (expected["max"] - expected["min"] <= 1e-9) & (expected["size"] >= 2)
    np.testing.assert_array_equal(got["zero_signal"], constant)


# --------------------------------------------------------------------------- share under other options


def test_zero_signal_share_follows_weights_and_threshold():
    # every group answers right; only the annotation varies inside "varies"
    table = make_table(group_of("same", [(1, 1), (1, 1)]) + group_of("varies", [(1, 0.2), (1, 0.9)])
                       + group_of("wrong", [(0, 0.3), (0, 0.8)]))
    base = tuning.scored_options(table)
    shares = groups.zero_signal_share(table, groups.weight_grid(base, [0.0, 0.5]) + groups.threshold_grid(base, [0.9]))
    assert list(shares.columns) == groups.SHARE_COLUMNS
    # annotation weight 0: the gated reward is the answer alone, so "varies" carries no signal either
    assert shares["zero_signal_share"].tolist() == pytest.approx([1.0, 2 / 3, 2 / 3])
    assert shares["all_one_share"].tolist() == pytest.approx([2 / 3, 1 / 3, 1 / 3])
    assert shares["all_zero_share"].tolist() == pytest.approx([1 / 3] * 3)
    # at 0.999 "varies" (0.6, 0.95) is none solved, so every group is uniform; at 0.9 it is mixed
    assert shares["uniform_solved_share"].tolist() == pytest.approx([1.0, 1.0, 2 / 3])
    assert shares["solved_threshold"].tolist() == [0.999, 0.999, 0.9]
    assert shares["groups"].tolist() == [3, 3, 3]


def test_zero_signal_share_reweights_through_recompose(monkeypatch):
    calls = []
    real = scoring.runs.reweighting.recompose

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(scoring.runs.reweighting, "recompose", spy)
    table = flagged_table()
    base = tuning.scored_options(table)
    grid = groups.weight_grid(base, [0.2, 0.4]) + groups.threshold_grid(base, [0.5, 0.9])
    groups.zero_signal_share(table, grid)
    weights = sorted({(c["answer_weight"], c["annotation_weight"]) for c in calls})
    assert weights == [(0.5, 0.5), (0.6, 0.4), (0.8, 0.2)]  # each distinct weight set re-weighted once


def test_zero_signal_share_at_the_current_options_equals_the_page_numbers():
    table = flagged_table()
    options = dict(tuning.scored_options(table), annotation_weight=0.25, answer_weight=0.75, solved_threshold=0.6)
    stats = groups.group_stats(groups.detect_groups(table), tuning.scores(table, options))
    summary = groups.signal_summary(stats)
    share = groups.zero_signal_share(table, [options]).iloc[0]
    for key in ("zero_signal_share", "all_zero_share", "all_one_share", "uniform_solved_share"):
        assert share[key] == pytest.approx(summary[key])


def test_zero_signal_share_accepts_partial_dicts_frames_and_rejects_bad_options():
    table = flagged_table()
    partial = groups.zero_signal_share(table, {"solved_threshold": 0.5})
    assert partial["answer_weight"].tolist() == [0.5] and partial["solved_threshold"].tolist() == [0.5]
    frame = pd.DataFrame([{"mode": None, "answer_weight": 1.0, "annotation_weight": 0.0}])
    assert groups.zero_signal_share(table, frame)["mode"].tolist() == [None]
    with pytest.raises(ValueError, match="format_weight"):
        groups.zero_signal_share(table, [{"format_weight": 2.0}])
    with pytest.raises(ValueError, match="solved_threshold"):
        groups.zero_signal_share(table, [{"solved_threshold": -1}])
    assert groups.format_weight_grid({"format_weight": 0.0}, [0.0, 0.25])[1]["format_weight"] == 0.25


# --------------------------------------------------------------------------- the sample data


@pytest.fixture(scope="module")
def sample():
    table = loading.load_cached(sources.sample_source()).table
    return table, tuning.scores(table, tuning.scored_options(table))


def test_sample_groups(sample):
    table, scores = sample
    grouping = groups.detect_groups(table)
    stats = groups.group_stats(grouping, scores)
    canonical = stats[stats["source_file"] == "rollouts_ckpt-A.jsonl"]
    assert len(canonical) == 135 and canonical["size"].tolist() == [4] * 135  # 45 prompts x 3 steps
    assert canonical["how"].unique().tolist() == [groups.HOW_SAMPLE]
    trl = stats[stats["source_file"].str.startswith("trl/")]
    assert len(trl) == 40 and trl["size"].unique().tolist() == [4]  # identical prompt + image, no sample index
    assert trl["how"].unique().tolist() == [groups.HOW_PROMPT]
    verl = stats[stats["source_file"].str.startswith("verl/")]
    assert verl["size"].unique().tolist() == [1] and verl["signal"].unique().tolist() == [groups.SIGNAL_SINGLE]
    assert grouping.no_image == 100  # the gsm8k rows
    assert int(stats["size"].sum()) + grouping.ungrouped == len(table)
    summary = groups.signal_summary(stats)
    assert summary["zero_signal"] == int(stats["zero_signal"].sum()) > 0
    figure = groups.steps_figure(groups.per_run_step(stats))
    assert {t.name for t in figure.data} >= {"ckpt-A: all rewards equal", "trl: all / none solved"}
