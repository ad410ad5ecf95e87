"""Summaries and row selections over the scored table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import filters, loading, sources, tuning


@pytest.fixture(scope="module")
def run():
    return loading.load_cached(sources.sample_source())


@pytest.fixture(scope="module")
def scores(run):
    return tuning.scores(run.table, tuning.scored_options(run.table))


def small_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Four rows: two trace rows in answer_and_annotation mode, one in answer mode, one simple row."""
    table = pd.DataFrame(
        {
            "scorer": ["trace", "trace", "trace", "numeric_close"],
            "run": ["A", "A", "B", "B"],
            "step": pd.array([1, 2, 1, None], dtype="Int64"),
            "task_id": ["t1", "t1", "t2", None],
            "annotation_type": ["bbox", "point", "bbox", None],
            "trace_reward_mode_answer_and_annotation": [1.0, 1.0, 0.0, math.nan],
            "answer_reward": [1.0, 0.0, 1.0, math.nan],
            "annotation_reward": [0.5, 0.0, 0.9, math.nan],
            "format_reason": ["ok", "no_final_object", "text_after_object", None],
            "response": ["{\"answer\": 1}", "one", "{\"answer\": 2} bye", "42"],
        },
        index=pd.Index(["r1", "r2", "r3", "r4"], name="row_id"),
    )
    scores = pd.DataFrame(
        {
            "score": [0.75, 0.0, 1.0, 1.0],
            "task_reward": [0.75, 0.0, 1.0, math.nan],
            "format": [1.0, 0.0, 0.0, math.nan],
            "solved": [False, False, True, True],
        },
        index=table.index,
    )
    return table, scores


def test_overview_metrics_on_a_small_table():
    table, scores = small_table()
    errors = pd.DataFrame({"severity": ["error", "warning", "error"]})
    m = filters.overview_metrics(table, scores, errors)
    assert m["rows"] == 4 and m["runs"] == 2 and m["steps"] == 2
    assert m["mean_overall"] == pytest.approx(2.75 / 4)
    assert m["mean_answer"] == pytest.approx(2 / 3)  # trace rows only
    assert m["mean_annotation"] == pytest.approx(0.25)  # rows scored with an annotation only
    assert m["mean_format"] == pytest.approx(1 / 3)
    assert m["solve_rate"] == 0.5
    assert m["format_zero_reward_positive"] == 1  # r3: format 0, task reward 1
    assert m["errors"] == 2 and m["warnings"] == 1


def test_component_values_apply_only_where_they_mean_something():
    table, scores = small_table()
    ann = filters.component_values(table, scores, "annotation")
    assert ann.tolist()[:2] == [0.5, 0.0] and np.isnan(ann.iloc[2]) and np.isnan(ann.iloc[3])
    assert filters.component_values(table, scores, "overall").tolist() == [0.75, 0.0, 1.0, 1.0]
    assert np.isnan(filters.component_values(table, scores, "answer").iloc[3])
    with pytest.raises(ValueError, match="unknown component"):
        filters.component_values(table, scores, "bogus")


def test_group_summary_labels_missing_keys():
    table, scores = small_table()
    out = filters.group_summary(table, scores, "task_id").set_index("task_id")
    assert out.loc["t1", "rows"] == 2 and out.loc["t1", "overall"] == pytest.approx(0.375)
    assert out.loc[filters.NONE_LABEL, "rows"] == 1
    assert out.loc["t2", "format_zero_reward_positive"] == 1
    assert out["rows"].sum() == len(table)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_group_summary_over_every_row_a_mask_of_all_or_some_equals_a_pandas_groupby(run, scores, data):
    rows = data.draw(st.lists(st.integers(0, len(run.table) - 1), min_size=1, max_size=300, unique=True))
    table = run.table.iloc[sorted(rows)]
    part = scores.loc[table.index]
    by = data.draw(st.sampled_from(["run", "task_id", "annotation_type", ["run", "step"], ["run", "annotation_type"]]))
    keys = [by] if isinstance(by, str) else by
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(table), max_size=len(table))))
    whole = filters.group_summary(table, part, by)
    pd.testing.assert_frame_equal(filters.group_summary(table, part, by, mask=np.ones(len(table), bool)), whole)
    for chosen, summary in ((np.ones(len(table), bool), whole), (mask, filters.group_summary(table, part, by, mask))):
        if not chosen.any():
            continue
        frame = pd.DataFrame({k: table[k].astype(object).where(table[k].notna(), filters.NONE_LABEL).astype(str)
                              for k in keys})[chosen].assign(score=part["score"].to_numpy()[chosen])
        expected = frame.groupby(keys).agg(rows=("score", "size"), overall=("score", "mean"))
        got = summary.assign(**{k: summary[k].astype(str) for k in keys}).set_index(keys)
        assert got["rows"].sum() == chosen.sum()
        joined = expected.merge(got, left_index=True, right_index=True, how="outer", suffixes=("", "_got"))
        assert (joined["rows"] == joined["rows_got"]).all()
        np.testing.assert_allclose(joined["overall_got"], joined["overall"], rtol=1e-12, equal_nan=True)


def test_step_summary_skips_rows_without_step():
    table, scores = small_table()
    steps = filters.step_summary(table, scores)
    assert list(zip(steps["run"], steps["step"], strict=True)) == [("A", 1), ("A", 2), ("B", 1)]
    empty = filters.step_summary(table.assign(step=pd.array([None] * 4, dtype="Int64")), scores)
    assert len(empty) == 0


def test_sample_overview_and_groups(run, scores):
    m = filters.overview_metrics(run.table, scores, run.errors)
    assert m["rows"] == len(run.table) > 1000
    assert m["runs"] >= 2 and m["steps"] >= 3
    assert m["errors"] >= 5  # the bad rows of rollouts_with_errors.jsonl
    assert 0 < m["format_zero_reward_positive"] < m["rows"]
    by_type = filters.group_summary(run.table, scores, "annotation_type")
    assert by_type["rows"].sum() == len(run.table)
    assert {"bbox", "point", "segment_set"} <= set(by_type["annotation_type"])


def test_step_long():
    table, scores = small_table()
    long = filters.step_long(filters.step_summary(table, scores))
    assert list(long.columns) == ["run", "step", "metric", "value"]
    assert set(long["metric"]) == set(filters.STEP_METRICS.values())
    overall = long[long["metric"] == "mean overall"].set_index(["run", "step"])["value"]
    assert overall.to_dict() == {("A", 1): 0.75, ("A", 2): 0.0, ("B", 1): 1.0}
    assert len(long) == 3 * 3  # three (run, step) groups, three metrics; r4 has no step
    assert not long["value"].isna().any()


def test_logged_report_and_disagreements(run):
    report = filters.logged_report(run.table)
    assert set(report["component"]) >= {"overall", "format"}
    disagreements = filters.logged_disagreements(run.table)
    assert len(disagreements) == int(run.table["logged_mismatch"].notna().sum()) > 0
    assert "logged overall" in disagreements.columns and "recomputed overall" in disagreements.columns


def test_logged_report_empty_without_logged_columns():
    table, _ = small_table()
    assert filters.logged_report(table).empty
    assert filters.logged_disagreements(table).empty


def test_bin_index_edges():
    edges = filters.bin_edges(4)
    values = np.array([0.0, 0.24, 0.25, 0.999, 1.0, math.nan, -0.1, 1.1])
    assert filters.bin_index(values, edges).tolist() == [0, 0, 1, 3, 3, -1, -1, -1]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.floats(0.0, 1.0), st.just(math.nan)), min_size=1, max_size=60),
    facets=st.lists(st.sampled_from(["a", "b", "c"]), min_size=60, max_size=60),
    bins=st.integers(1, 25),
)
def test_binned_counts_every_value_once_and_selection_finds_them(values, facets, bins):
    series = pd.Series(values, index=pd.Index([f"r{i}" for i in range(len(values))], name="row_id"))
    keys = np.array(facets[: len(values)], dtype=object)
    counts = filters.binned(series, keys, bins=bins)
    assert counts["count"].sum() == series.notna().sum()
    for facet in counts["facet"].unique():
        assert (counts["facet"] == facet).sum() == bins  # zero bins included
    everything = [(f, b) for f, b in zip(counts["facet"], counts["bin"], strict=True)]
    assert set(filters.rows_in_bins(series, keys, everything, bins=bins)) == set(series.dropna().index)
    for facet, b, count in counts[["facet", "bin", "count"]].itertuples(index=False):
        assert len(filters.rows_in_bins(series, keys, [(facet, b)], bins=bins)) == count


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(st.one_of(st.floats(-0.5, 1.5), st.just(math.nan), st.sampled_from([k / 20 for k in range(21)]),
                              st.sampled_from([np.nextafter(k / 20, 2.0) for k in range(21)])), max_size=80),
    bins=st.integers(1, 25),
)
def test_one_facet_counts_each_value_in_the_bin_of_bin_index(values, bins):
    series = pd.Series(values, dtype=np.float64)
    counts = filters.binned(series, None, bins=bins)
    idx = filters.bin_index(series.to_numpy(), filters.bin_edges(bins))
    expected = np.bincount(idx[idx >= 0], minlength=bins)
    if (idx >= 0).any():
        assert counts["facet"].tolist() == [filters.ALL_LABEL] * bins
        assert counts["count"].tolist() == expected.tolist()
    else:
        assert len(counts) == 0


def test_fold_facets_keeps_the_largest():
    keys = np.array(["a"] * 5 + ["b"] * 3 + ["c", "d"], dtype=object)
    folded = filters.fold_facets(keys, 3)
    assert sorted(set(folded)) == ["(other)", "a", "b"]
    assert (folded == "(other)").sum() == 2


def test_selection_from_event_reads_customdata():
    points = [
        {"customdata": ["ckpt-A", 3], "x": 0.1},
        {"customdata": ["ckpt-A", 3]},
        {"customdata": ["ckpt-B", "4"]},
        {"x": 0.5},
        {"customdata": ["bad", "x"]},
    ]
    assert filters.selection_from_event(points) == [("ckpt-A", 3), ("ckpt-B", 4)]
    assert filters.selection_from_event(None) == []


def test_facet_keys(run):
    keys = filters.facet_keys(run.table, "step")
    assert len(keys) == len(run.table)
    assert filters.NONE_LABEL in set(keys)  # lm-eval rows carry no step
    assert filters.facet_keys(run.table, None) is None


def test_filter_rows():
    table, _ = small_table()
    assert filters.filter_rows(table).all()
    assert filters.filter_rows(table, runs=["A"]).tolist() == [True, True, False, False]
    assert filters.filter_rows(table, tasks=[filters.NONE_LABEL]).tolist() == [False, False, False, True]
    assert filters.filter_rows(table, reasons=["ok", "text_after_object"], runs=["B"]).tolist() == [
        False, False, True, False]
    assert filters.filter_rows(table, text="BYE").tolist() == [False, False, True, False]


def test_row_list(run, scores):
    ids = run.table.index[:5]
    rows = filters.row_list(run.table, scores, ids)
    assert rows.index.equals(ids)
    assert rows.columns[:2].tolist() == ["score", "solved"]
    assert len(filters.row_list(run.table, scores, run.table.index, limit=7)) == 7


def test_files_table(run):
    files = filters.files_table(run.plans, run.table).set_index("file")
    assert files.loc["gsm8k_rollouts.jsonl", "read as"] == "simple"
    assert files.loc["instances.jsonl", "read as"] == "instances"
    assert files.loc["rollouts_ckpt-A.jsonl", "rows"] == (run.table["source_file"] == "rollouts_ckpt-A.jsonl").sum()
    # the join rule per file, as `rolloutscope score` prints it (scoring.runs.join_report)
    for name, rows in run.table.groupby(run.table["source_file"].astype(str)):
        used = {how.split("+")[0] for how in rows["joined"].dropna().astype(str)}
        rule = ", ".join(r for r in ("id", "prompt", "order") if r in used)
        assert files.loc[name, "joined to instances"] == (f"auto: {rule}" if used else ""), name
    assert files.loc["verl/100.jsonl", "joined to instances"] == "auto: prompt"  # verl prompts match instances
    assert files.loc["gsm8k_rollouts.jsonl", "joined to instances"] == ""  # plain gold answers: nothing joined
    assert files.loc["instances.jsonl", "joined to instances"] == ""


def test_files_table_names_rows_it_could_not_join(run):
    file = "verl/100.jsonl"
    errors = pd.DataFrame({"file": [file, file], "line": [3, 4], "field": ["prompt", "prompt"],
                           "reason": ["matches 2 instances that disagree on annotation_gt: ...",
                                      "no instance matches this row's prompt"],
                           "severity": ["error", "error"], "unit": ["line", "line"]})
    files = filters.files_table(run.plans, run.table, errors).set_index("file")
    assert files.loc[file, "joined to instances"].endswith("; 1 row ambiguous; 1 row unmatched")


def test_display_helpers_follow_the_number_policy():
    # the app's one number policy (dashboard.numbers): 4 significant digits, shares as percentages
    assert filters.num(math.nan) == "—" and filters.num(0.12345) == "0.1235"
    assert filters.pct(0.5) == "50%" and filters.pct(0.131) == "13.1%" and filters.pct(math.nan) == "—"


def test_task_families_group_per_question_ids():
    ids = np.array([f"gsm8k-train-{i:04d}" for i in range(25)] + ["chart_value", "count_shapes", None,
                    "pair-1", "pair-2", "mmlu/3", "mmlu/4", "mmlu/5"], dtype=object)
    families = filters.task_families(ids)
    assert set(families[:25]) == {"gsm8k-train"}
    assert families[25:27].tolist() == ["chart_value", "count_shapes"]
    assert families[27] is None
    assert families[28:30].tolist() == ["pair-1", "pair-2"]  # two ids sharing a stem are not a family
    assert families[30:].tolist() == ["mmlu"] * 3


@given(st.lists(st.text(alphabet="ab-_0123", min_size=1, max_size=8), min_size=1, max_size=40))
def test_task_families_only_ever_strip_a_trailing_index(ids):
    families = filters.task_families(np.array(ids, dtype=object))
    for task_id, family in zip(ids, families, strict=True):
        assert task_id == family or (task_id.startswith(family) and task_id[len(family)] in "-_"
                                     and task_id[len(family) + 1:].isdigit())
    for family in set(families) - set(ids):  # a real family holds >= FAMILY_MIN_IDS distinct ids
        assert len({i for i, f in zip(ids, families, strict=True) if f == family}) >= filters.FAMILY_MIN_IDS


INDEXED_IDS = st.builds("{}{}{}".format, st.sampled_from(["ab", "q"]), st.sampled_from("-_"), st.integers(0, 6))
TASK_IDS = st.one_of(INDEXED_IDS, st.text(alphabet="ab-_0123", min_size=1, max_size=8))


@given(st.lists(st.one_of(st.none(), TASK_IDS), min_size=1, max_size=40), st.lists(TASK_IDS, max_size=6))
def test_task_families_of_a_categorical_are_those_of_its_values(ids, unused):
    """A categorical's families come from its codes: the same as its values', and categories no
    row uses (a filtered table keeps them) never count toward a family."""
    as_objects = filters.task_families(np.array(ids, dtype=object))
    present = sorted({i for i in ids if i is not None})
    categorical = pd.Series(pd.Categorical(ids, categories=[*present, *sorted(set(unused) - set(present))]))
    assert filters.task_families(categorical).tolist() == as_objects.tolist()
    grouped = filters.group_values(pd.DataFrame({"task_id": categorical}), filters.TASK_FAMILY)
    assert [None if pd.isna(v) else v for v in np.asarray(grouped, dtype=object)] == as_objects.tolist()


def test_group_summary_by_task_groups_families_and_counts_their_ids(run, scores):
    table = run.table
    summary = filters.group_summary(table, scores, filters.TASK_FAMILY).set_index("task")
    assert summary["rows"].sum() == len(table)
    families = filters.task_families(table["task_id"])
    for family in summary.index:
        mask = np.array([str(f) == family for f in families])
        assert summary.at[family, "rows"] == mask.sum()
        assert summary.at[family, "task_ids"] == table["task_id"][mask].nunique()


def test_deliberate_problems_are_the_ones_the_expected_list_names(tmp_path):
    (tmp_path / "broken.jsonl").write_text("")
    (tmp_path / "broken.expected.json").write_text('[{"line": 3, "kind": "malformed_json"}, {"line": 7}]')
    errors = pd.DataFrame({"file": ["broken.jsonl", "broken.jsonl", "other.jsonl", "broken.jsonl"],
                           "line": [3, 5, 3, 7], "severity": ["error"] * 4})
    assert filters.deliberate_problems(errors, tmp_path).tolist() == [True, False, False, True]
    (tmp_path / "broken.expected.json").write_text("not json")
    assert not filters.deliberate_problems(errors, tmp_path).any()
    assert filters.deliberate_problems(errors.iloc[:0], tmp_path).tolist() == []


def test_the_samples_reading_problems_are_all_deliberate(run):
    assert len(run.errors) and filters.deliberate_problems(run.errors, sources.SAMPLE_DIR).all()


@settings(max_examples=200, deadline=None)
@given(
    flags=st.lists(st.booleans(), max_size=60),
    groups=st.integers(1, 5),
    data=st.data(),
)
def test_means_of_flags_are_counted_and_equal_the_means_of_their_floats(flags, groups, data):
    """Flags (a solved column) are counted where true, not made into floats first: the means
    stay those of 0.0/1.0 floats bit for bit, per group and over all."""
    values = np.array(flags, dtype=bool)
    codes = np.array(data.draw(st.lists(st.integers(0, groups - 1), min_size=len(flags), max_size=len(flags))),
                     dtype=np.int64)
    rows = np.bincount(codes, minlength=groups)
    as_floats = values.astype(np.float64)
    for counted in (rows, None):
        np.testing.assert_array_equal(filters.grouped_mean(codes, groups, values, counted),
                                      filters.grouped_mean(codes, groups, as_floats, counted))
    got, expected = filters.present_mean(values), filters.present_mean(as_floats)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    if len(flags):
        assert got == float(np.mean(as_floats))
