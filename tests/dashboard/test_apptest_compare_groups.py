"""Streamlit AppTest of the Compare and Groups pages on the bundled sample data.

Assertions are on rendered values (messages, metrics, tables, code blocks),
checked against :mod:`dashboard.compare` / :mod:`dashboard.groups` run
independently in the test on the same scored table.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import compare, groups, loading, numbers, sources, tuning
from dashboard.compare import Side
from dashboard.state import K_OPTIONS, plain
from scoring import explain_trace_response

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COMPARE = os.path.join(ROOT, "pages", "7_Compare.py")
GROUPS = os.path.join(ROOT, "pages", "8_Groups.py")
TIMEOUT = 90



def run_page(path: str) -> AppTest:
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def frame_keyed(at: AppTest, key: str) -> pd.DataFrame:
    """A selectable dataframe by its key (AppTest keeps keys of selectable tables only)."""
    for element in at.dataframe:
        if element.key == key:
            return element.value
    raise AssertionError(f"no dataframe {key!r}; have {[e.key for e in at.dataframe]}")


def frames_with(at: AppTest, *columns: str) -> list[pd.DataFrame]:
    """The rendered dataframes having all ``columns``, in page order."""
    return [e.value for e in at.dataframe if set(columns) <= set(e.value.columns)]


@pytest.fixture(scope="module")
def sample():
    table = loading.load_cached(sources.sample_source()).table
    return table, tuning.scores(table, tuning.scored_options(table))


def ci_text(row: pd.Series) -> str:
    return f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"


# --------------------------------------------------------------------------- compare


@pytest.fixture(scope="module")
def compare_page():
    return run_page(COMPARE)


def test_compare_defaults_to_the_two_checkpoints_at_their_last_common_step(compare_page, sample):
    at = compare_page
    table, scores = sample
    assert [(s.key, s.value) for s in at.selectbox][:5] == [
        ("cmp_a_run_w", "ckpt-A"), ("cmp_a_step_w", 300), ("cmp_b_run_w", "ckpt-B"), ("cmp_b_step_w", 300),
        ("cmp_join_w", "auto"),
    ]
    joined = compare.compare_runs(table, scores, Side("ckpt-A", 300), Side("ckpt-B", 300))
    assert [s.value for s in at.success] == [plain(joined.report.summary())]
    assert "45 instances matched: 180 of 180 rows of A, 180 of 180 rows of B" in joined.report.summary()

    deltas = compare.all_deltas(joined)
    overall = deltas["all"].set_index("component")
    shown = metrics(at)
    assert shown["Δ overall (B − A)"] == f"{overall.loc['overall', 'delta']:+.3f}"
    assert shown["Δ solve rate (B − A)"] == f"{overall.loc['solve_rate', 'delta']:+.3f}"
    assert (f"95% intervals: Δ overall {ci_text(overall.loc['overall'])} · "
            f"Δ solve rate {ci_text(overall.loc['solve_rate'])}") in texts(at)
    counts = compare.change_counts(joined)
    assert shown["Improved instances"] == str(counts["improved"])
    assert shown["Regressed instances"] == str(counts["regressed"])

    per_task, per_type = frames_with(at, "slice", "delta")
    expected = compare.component_view(deltas["task_id"], "overall")
    assert per_task["slice"].tolist() == expected["slice"].tolist()
    assert per_task["delta"].tolist() == pytest.approx(expected["delta"].tolist())
    assert per_task["ci_low"].tolist() == pytest.approx(expected["ci_low"].tolist())
    assert per_type["slice"].tolist() == compare.component_view(deltas["annotation_type"], "overall")["slice"].tolist()
    (all_components,) = frames_with(at, "component", "delta")
    assert all_components["component"].tolist() == list(compare.COMPONENT_LABELS)


def test_compare_lists_improved_and_regressed_by_size(compare_page, sample):
    at = compare_page
    table, scores = sample
    joined = compare.compare_runs(table, scores, Side("ckpt-A", 300), Side("ckpt-B", 300))
    improved, regressed = compare.changes(joined, "overall")
    shown = frame_keyed(at, "cmp_improved")
    assert shown["key"].tolist() == improved["key"].tolist()
    assert shown["delta"].is_monotonic_decreasing
    assert frame_keyed(at, "cmp_regressed")["key"].tolist() == regressed["key"].tolist()
    assert f"Improved: {numbers.plural(len(improved), 'instance')}, largest change first" in texts(at)


def response_of(row_id):
    """A row's response: the opened run holds it on disk, read for the row."""
    return loading.load_cached(sources.sample_source()).row(row_id)["response"]

def test_compare_side_by_side_shows_both_predictions_and_the_ground_truth(compare_page, sample):
    at = compare_page
    table, scores = sample
    joined = compare.compare_runs(table, scores, Side("ckpt-A", 300), Side("ckpt-B", 300))
    unit = compare.unit_choices(joined)[0]
    assert at.selectbox(key="cmp_unit_w").value == unit
    rows_a, rows_b = joined.rows_of(unit)
    row_a, row_b = rows_a[0], rows_b[0]
    shown = texts(at)
    assert f"A: ckpt-A · step 300\n{row_a}\noverall {scores.loc[row_a, 'score']:.3f} · solved " \
           f"{'yes' if scores.loc[row_a, 'solved'] else 'no'}" in shown
    assert any(t.startswith(f"B: ckpt-B · step 300\n{row_b}\n") for t in shown)
    codes = [c.value for c in at.code]
    assert response_of(row_a) in codes and response_of(row_b) in codes
    # The ground truth is drawn (its own picture beside the answer), not printed as JSON.
    truth = json.loads(table.loc[row_a, "scorer_kwargs"])
    assert json.dumps(truth["annotation_gt"], ensure_ascii=False) not in codes
    evaluation = explain_trace_response(response=response_of(row_a), **truth)
    shapes = len(evaluation.annotation.ground_truth.shapes())
    assert (f"answer_gt: {evaluation.answer.ground_truth_text}\n"
            f"annotation_gt: {truth['annotation_gt']['type']}, {shapes} shape(s)") in shown
    assert len(at.get("image")) == 3  # the ground truth, A's and B's overlays

    # another instance and another rollout of it
    other = compare.unit_choices(joined)[1]
    at.selectbox(key="cmp_unit_w").select(other)
    rerun(at)
    rows_a, _ = joined.rows_of(other)
    at.selectbox(key=f"cmp_row_A_{other}").select(rows_a[2])
    rerun(at)
    assert any(t.startswith(f"A: ckpt-A · step 300\n{rows_a[2]}\n") for t in texts(at))


def test_compare_side_by_side_of_rows_whose_image_is_missing_or_broken(sample):
    at = run_page(COMPARE)
    table, scores = sample
    at.selectbox(key="cmp_a_step_w").select(100)
    at.selectbox(key="cmp_b_step_w").select(100)
    rerun(at)
    joined = compare.compare_runs(table, scores, Side("ckpt-A", 100), Side("ckpt-B", 100))
    unit = int(joined.units.index[joined.units["key"] == "count_shapes-005"][0])
    at.selectbox(key="cmp_unit_w").select(unit)
    rerun(at)
    for row_id, needle in (("rollouts_with_errors.jsonl:23", "Image: image not found"),
                           ("rollouts_with_errors.jsonl:27", "Image: cannot decode image")):
        at.selectbox(key=f"cmp_row_A_{unit}").select(row_id)
        rerun(at)
        shown = [t for t in texts(at) if t.startswith("Image: ")]
        assert len(shown) == 1 and shown[0].startswith(needle) and shown[0].endswith("(drawn on a blank canvas)")
        assert len(at.get("image")) == 3  # the ground truth and the overlays are still drawn, on a blank canvas
        assert response_of(row_id) in [c.value for c in at.code]


def test_compare_steps_of_one_run_and_a_forced_join(sample):
    at = run_page(COMPARE)
    table, scores = sample
    at.selectbox(key="cmp_a_run_w").select("verl")
    at.selectbox(key="cmp_b_run_w").select("verl")
    rerun(at)
    assert at.selectbox(key="cmp_a_step_w").value == 200  # a run's default step: its last
    at.selectbox(key="cmp_a_step_w").select(100)
    at.selectbox(key="cmp_join_w").select("row_order")
    rerun(at)
    joined = compare.compare_runs(table, scores, Side("verl", 100), Side("verl", 200), join="row_order")
    assert [s.value for s in at.success] == [plain(joined.report.summary())]
    assert joined.report.used == ["row_order"] and joined.report.units == 45

    # the same run and step on both sides
    at.selectbox(key="cmp_b_step_w").select(100)
    rerun(at)
    assert [w.value for w in at.warning] == ["A and B are the same run and step: pick two different runs or steps."]


def test_compare_without_common_rows_says_so_and_lists_every_row(sample):
    at = run_page(COMPARE)
    table, scores = sample
    at.selectbox(key="cmp_a_run_w").select("verl")
    rerun(at)
    at.selectbox(key="cmp_a_step_w").select(100)
    at.selectbox(key="cmp_b_step_w").select(100)
    at.selectbox(key="cmp_join_w").select("prompt_image")  # verl prompts are chat-templated: none is shared
    rerun(at)
    joined = compare.compare_runs(table, scores, Side("verl", 100), Side("ckpt-B", 100), join="prompt_image")
    assert not joined.report.ok
    assert [w.value for w in at.warning] == [plain(joined.report.summary())]
    assert not at.success and not at.metric
    unmatched_a, unmatched_b = frames_with(at, "run", "instance_id", "prompt")
    assert unmatched_a.index.tolist() == joined.unmatched_a.tolist() and len(unmatched_a) == 45
    assert unmatched_b.index.tolist() == joined.unmatched_b.tolist() and len(unmatched_b) == joined.report.rows_b == 205


def test_compare_follows_the_tuning_options(sample):
    table, _ = sample
    at = run_page(COMPARE)
    options = dict(tuning.scored_options(table), answer_weight=1.0, annotation_weight=0.0)
    at.session_state[K_OPTIONS] = options
    rerun(at)
    joined = compare.compare_runs(table, tuning.scores(table, options), Side("ckpt-A", 300), Side("ckpt-B", 300))
    overall = compare.all_deltas(joined)["all"].set_index("component")
    assert metrics(at)["Δ overall (B − A)"] == f"{overall.loc['overall', 'delta']:+.3f}"
    assert f"95% intervals: Δ overall {ci_text(overall.loc['overall'])}" in "\n".join(texts(at))
    assert any("re-weighted with the Tuning options" in c.value for c in at.caption)  # the page header line


# --------------------------------------------------------------------------- groups


@pytest.fixture(scope="module")
def groups_page():
    return run_page(GROUPS)


def test_groups_summary_and_table(groups_page, sample):
    at = groups_page
    table, scores = sample
    grouping = groups.detect_groups(table)
    stats = groups.group_stats(grouping, scores)
    summary = groups.signal_summary(stats)
    assert [i.value for i in at.info] == [plain(grouping.describe())]
    shown = metrics(at)
    assert shown["Groups with ≥ 2 rollouts"] == f"{summary['multi_groups']:,}"
    assert shown["No signal (all rewards equal)"] == numbers.percent(summary["zero_signal_share"])
    assert shown["… all 0"] == str(summary["all_zero"]) and shown["… all 1"] == str(summary["all_one"])
    assert shown["All / none solved (≥ 0.999)"] == numbers.percent(summary["uniform_solved_share"])
    listed = frame_keyed(at, "grp_table")
    assert len(listed) == len(stats)
    flagged = int(stats["zero_signal"].sum())
    assert listed["signal"].head(flagged).isin(["all 0", "all 1", "all equal"]).all()  # no-signal groups first
    (per_step,) = frames_with(at, "mean_size", "zero_signal_share")
    expected = groups.per_run_step(stats)
    assert per_step["zero_signal_share"].tolist() == pytest.approx(expected["zero_signal_share"].tolist())


def test_groups_rollouts_and_sweep(groups_page, sample):
    at = groups_page
    table, scores = sample
    grouping = groups.detect_groups(table)
    group = at.selectbox(key="grp_group_w").value
    rollouts = frame_keyed(at, "grp_rollouts")
    assert rollouts.index.tolist() == grouping.rows_of(group).tolist()
    options = tuning.scored_options(table)
    sweep, by_threshold = frames_with(at, "answer_weight", "zero_signal_share")
    expected = groups.zero_signal_share(table, groups.weight_grid(options))
    assert sweep["zero_signal_share"].tolist() == pytest.approx(expected["zero_signal_share"].tolist())
    assert sweep["annotation_weight"].tolist() == pytest.approx([i / 10 for i in range(11)])
    assert 0.999 in by_threshold["solved_threshold"].tolist()


def test_groups_only_flagged_and_a_run_with_single_rollouts(sample):
    at = run_page(GROUPS)
    table, scores = sample
    at.selectbox(key="grp_run_w").select("ckpt-A")
    at.checkbox(key="grp_only_flagged_w").check()
    rerun(at)
    subset = table[table["run"] == "ckpt-A"]
    stats = groups.group_stats(groups.detect_groups(subset), scores.loc[subset.index])
    listed = frame_keyed(at, "grp_table")
    assert len(listed) == int(stats["zero_signal"].sum()) > 0
    assert set(listed["signal"]) <= {"all 0", "all 1", "all equal"}

    at.selectbox(key="grp_run_w").select("verl")
    rerun(at)
    assert any("Every group has a single rollout" in i.value for i in at.info)
    assert [w.value for w in at.warning] == [
        "No group has two or more scored rollouts, so there is no spread and no learning-signal check to show. "
        "The groups are listed below."
    ]
    assert metrics(at)["Groups with ≥ 2 rollouts"] == "0"
    assert not at.get("plotly_chart")  # no sweep without groups


def test_groups_follow_the_tuning_options(sample):
    table, _ = sample
    at = run_page(GROUPS)
    options = dict(tuning.scored_options(table), answer_weight=1.0, annotation_weight=0.0, solved_threshold=0.5)
    at.session_state[K_OPTIONS] = options
    rerun(at)
    summary = groups.signal_summary(groups.group_stats(groups.detect_groups(table), tuning.scores(table, options)))
    assert metrics(at)["No signal (all rewards equal)"] == numbers.percent(summary["zero_signal_share"])
    assert "All / none solved (≥ 0.5)" in metrics(at)
