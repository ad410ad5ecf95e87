"""Compare: join rules and their report, per-instance deltas with their intervals, improved/regressed lists."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import compare, loading, sources, tuning
from dashboard.compare import Side


def make_table(rows: list[dict]) -> pd.DataFrame:
    """A scored-table stand-in with the columns compare reads (trace rows unless ``scorer`` says otherwise)."""
    defaults = {
        "run": "A", "step": 1, "instance_id": None, "prompt": None, "image_ref": None, "task_id": "t",
        "annotation_type": "bbox", "scorer": "trace", "answer_reward": 1.0, "annotation_reward": 0.5,
        "trace_reward_mode_answer_and_annotation": 1.0, "score": 0.5, "format": 1.0, "sample_index": None,
    }
    frame = pd.DataFrame([{**defaults, **r} for r in rows])
    frame["step"] = frame["step"].astype("Int64")
    frame["sample_index"] = frame["sample_index"].astype("Int64")
    frame.index = pd.Index([f"f:{i + 1}" for i in range(len(frame))], name="row_id")
    return frame


def scores_of(table: pd.DataFrame, threshold: float = 0.999) -> pd.DataFrame:
    score = table["score"].to_numpy(dtype=np.float64)
    return pd.DataFrame(
        {"score": score, "task_reward": score, "format": table["format"].to_numpy(dtype=np.float64),
         "solved": score >= threshold},
        index=table.index,
    )


SIDE_A, SIDE_B = Side("A", 1), Side("B", 1)


def run(table: pd.DataFrame, a: Side = SIDE_A, b: Side = SIDE_B, **kwargs) -> compare.Joined:
    return compare.compare_runs(table, scores_of(table), a, b, **kwargs)


# --------------------------------------------------------------------------- sides


def test_runs_and_steps_and_default_sides():
    table = make_table([
        {"run": "B", "step": 3}, {"run": "A", "step": 1}, {"run": "A", "step": 3}, {"run": "B", "step": 5},
        {"run": None, "step": None},
    ])
    assert compare.runs_and_steps(table) == {"(none)": [], "A": [1, 3], "B": [3, 5]}
    one_run = make_table([{"run": "A", "step": 1}, {"run": "A", "step": 2}, {"run": "A", "step": 9}])
    assert compare.default_sides(one_run) == (Side("A", 1), Side("A", 9))
    assert compare.default_sides(make_table([{"run": "A", "step": 1}])) is None
    assert compare.default_sides(make_table([{"run": "A", "step": 1}, {"run": "B", "step": 2}])) == (
        Side("A", None), Side("B", None))
    runs = make_table([{"run": "x2", "step": 1}, {"run": "x10", "step": 1}, {"run": "x1", "step": 1}])
    assert list(compare.runs_and_steps(runs)) == ["x1", "x2", "x10"]  # natural order
    assert Side("A", None).label == "A · all steps" and Side("A", 3).label == "A · step 3"


def test_side_mask_selects_run_and_step():
    table = make_table([{"run": "A", "step": 1}, {"run": "A", "step": 2}, {"run": "B", "step": 1}, {"run": None}])
    assert compare.side_mask(table, Side("A", None)).tolist() == [True, True, False, False]
    assert compare.side_mask(table, Side("A", 2)).tolist() == [False, True, False, False]
    assert compare.side_mask(table, Side("(none)", None)).tolist() == [False, False, False, True]


# --------------------------------------------------------------------------- join rules


def test_instance_id_join_averages_samples_per_instance():
    rows = []
    for label, per_id in (("A", {"i1": [0.0, 1.0], "i2": [0.5]}), ("B", {"i1": [1.0, 1.0, 1.0], "i2": [0.25]})):
        for iid, values in per_id.items():
            for k, v in enumerate(values):
                rows.append({"run": label, "instance_id": iid, "score": v, "sample_index": k})
    rows.append({"run": "A", "instance_id": "only-a", "score": 1.0})
    joined = run(make_table(rows))
    report = joined.report
    assert report.used == ["instance_id"]
    assert (report.units, report.matched_rows_a, report.matched_rows_b, report.rows_a, report.rows_b) == (2, 3, 4, 4, 4)
    units = joined.units.set_index("key")
    assert units.loc["i1", ["rows_a", "rows_b"]].tolist() == [2, 3]
    assert units.loc["i1", "overall_a"] == pytest.approx(0.5) and units.loc["i1", "overall_b"] == pytest.approx(1.0)
    assert units.loc["i2", "overall_delta"] == pytest.approx(-0.25)
    assert joined.unmatched_a.tolist() == ["f:8"]  # only-a, the last row
    assert "1 row of A" in report.summary() and "Unmatched" in report.summary()
    ids_a, ids_b = joined.rows_of(int(units.index.get_loc("i1")))
    assert len(ids_a) == 2 and len(ids_b) == 3


def test_cascade_falls_back_to_prompt_and_image_for_rows_without_ids():
    table = make_table([
        {"run": "A", "instance_id": "i1", "prompt": "p1", "image_ref": "/x/a.png", "score": 0.2},
        {"run": "B", "instance_id": "i1", "prompt": "p1", "image_ref": "/x/a.png", "score": 0.4},
        # no ids: same prompt, same image file name in another folder -> one instance
        {"run": "A", "prompt": "p2", "image_ref": "/run-a/img/b.png", "score": 0.0},
        {"run": "B", "prompt": "p2", "image_ref": "C:\\run-b\\b.png", "score": 1.0},
        # same prompt, different image -> no match
        {"run": "A", "prompt": "p3", "image_ref": "/x/c.png"},
        {"run": "B", "prompt": "p3", "image_ref": "/x/d.png"},
        # no image on either side -> matched on the prompt alone, and counted
        {"run": "A", "prompt": "p4", "score": 1.0},
        {"run": "B", "prompt": "p4", "score": 0.0},
    ])
    joined = run(table)
    report = joined.report
    assert report.used == ["instance_id", "prompt_image"]
    assert report.matched == {"instance_id": (1, 1, 1), "prompt_image": (2, 2, 2)}
    assert report.no_image == (1, 1)
    assert "matched on the prompt alone" in report.summary()
    keys = joined.units["key"].tolist()
    assert keys[0] == "i1" and keys[1] == "p2 · b.png" and keys[2] == "p4 · (no image)"
    assert joined.units["join"].tolist() == ["instance_id", "prompt_image", "prompt_image"]
    assert sorted(joined.unmatched_a.tolist() + joined.unmatched_b.tolist()) == ["f:5", "f:6"]


def test_row_order_only_without_any_key_and_when_asked():
    table = make_table([{"run": "A", "score": 0.1}, {"run": "A", "score": 0.2}, {"run": "A", "score": 0.3},
                        {"run": "B", "score": 0.5}, {"run": "B", "score": 0.5}])
    joined = run(table)
    assert joined.report.used == ["row_order"]
    assert joined.units["key"].tolist() == ["row 1", "row 2"]
    assert joined.units["overall_delta"].tolist() == pytest.approx([0.4, 0.3])
    assert joined.unmatched_a.tolist() == ["f:3"]
    summary = joined.report.summary()
    assert "paired by their order" in summary and "differ in length (3 vs 2 rows)" in summary

    keyed = make_table([{"run": "A", "instance_id": "x"}, {"run": "B", "instance_id": "y"}])
    assert run(keyed).report.used == []  # keys exist but differ: never paired by position in auto mode
    forced = run(keyed, join=compare.JOIN_ORDER)
    assert forced.report.used == ["row_order"] and forced.report.units == 1


def test_no_common_rows_is_reported_and_nothing_is_lost():
    table = make_table([{"run": "A", "instance_id": "a1", "prompt": "pa"}, {"run": "A", "instance_id": "a2"},
                        {"run": "B", "instance_id": "b1", "prompt": "pb"}])
    joined = run(table)
    report = joined.report
    assert not report.ok
    assert report.summary().startswith("No common rows")
    assert "instance id, prompt + image" in report.summary() and "row-order join" in report.summary()
    assert joined.unmatched_a.tolist() == ["f:1", "f:2"] and joined.unmatched_b.tolist() == ["f:3"]
    assert compare.slice_deltas(joined).empty
    assert list(compare.slice_deltas(joined).columns) == compare.DELTA_COLUMNS
    improved, regressed = compare.changes(joined)
    assert improved.empty and regressed.empty
    assert compare.unmatched_rows(table, joined.unmatched_a)["instance_id"].tolist() == ["a1", "a2"]


def test_empty_side_and_requested_join_without_keys():
    table = make_table([{"run": "A", "instance_id": "a"}])
    joined = run(table, Side("A", 1), Side("B", 1))
    assert not joined.report.ok and joined.report.summary() == "No rows for B · step 1: pick a run and step that have rows."
    table = make_table([{"run": "A", "prompt": "p"}, {"run": "B", "prompt": "p"}])
    joined = run(table, join=compare.JOIN_ID)
    assert not joined.report.ok and "a side has no instance ids" in joined.report.summary()
    assert run(table, join=compare.JOIN_PROMPT).report.ok


def test_blank_and_numeric_ids():
    table = make_table([
        {"run": "A", "instance_id": "  ", "prompt": "p"}, {"run": "B", "instance_id": "  ", "prompt": "p"},
        {"run": "A", "instance_id": 5}, {"run": "B", "instance_id": "5"},
    ])
    joined = run(table)
    assert joined.report.matched == {"instance_id": (1, 1, 1), "prompt_image": (1, 1, 1)}  # blank ids are no key
    assert joined.units["key"].tolist()[0] == "5"
    floats = make_table([{"run": "A"}, {"run": "B"}])
    floats["instance_id"] = [7.0, 7.0]
    assert run(floats).units["key"].tolist() == ["7"]


def test_component_frame_masks_components_that_do_not_apply():
    table = make_table([
        {"scorer": "trace", "answer_reward": 1.0, "annotation_reward": 0.5},
        {"scorer": "trace", "answer_reward": 1.0, "annotation_reward": 0.0,
         "trace_reward_mode_answer_and_annotation": 0.0},
        {"scorer": "numeric_close", "answer_reward": np.nan, "annotation_reward": np.nan, "annotation_type": None},
    ])
    frame = compare.component_frame(table, scores_of(table))
    assert frame["answer"].isna().tolist() == [False, False, True]
    assert frame["annotation"].isna().tolist() == [False, True, True]
    assert frame["overall"].notna().all() and frame["format"].isna().tolist() == [False, False, True]


# --------------------------------------------------------------------------- intervals


def _two_task_table(n_per_task: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for task in ("count", "chart"):
        for i in range(n_per_task):
            for run_label, shift in (("A", 0.0), ("B", 0.2 if task == "count" else -0.1)):
                score = float(np.clip(rng.random() * 0.6 + shift, 0, 1))
                rows.append({"run": run_label, "instance_id": f"{task}-{i}", "task_id": task,
                             "annotation_type": "bbox" if i % 2 else "point", "score": score,
                             "answer_reward": float(score > 0.3), "format": float(i % 3 != 0)})
    return make_table(rows)


def test_slice_deltas_are_means_of_instance_deltas_with_deterministic_intervals():
    table = _two_task_table()
    joined = run(table)
    deltas = compare.slice_deltas(joined, "task_id")
    units = joined.units
    for task in ("count", "chart"):
        part = units[units["task_id"] == task]
        row = deltas[(deltas["slice"] == task) & (deltas["component"] == "overall")].iloc[0]
        assert row["delta"] == pytest.approx(part["overall_delta"].mean())
        assert row["mean_b"] - row["mean_a"] == pytest.approx(row["delta"])
        assert row["ci_low"] <= row["delta"] <= row["ci_high"]
        assert row["units"] == len(part) and row["method"] == "paired bootstrap (1,000)"
        solve = deltas[(deltas["slice"] == task) & (deltas["component"] == "solve_rate")].iloc[0]
        assert solve["rows_a"] == len(part) and solve["method"].startswith("Newcombe")
    again = compare.slice_deltas(run(table), "task_id")
    pd.testing.assert_frame_equal(deltas, again)
    # a slice's interval does not depend on which other slices exist
    alone = compare.slice_deltas(run(table[table["task_id"] == "count"]), "task_id")
    both = deltas[deltas["slice"] == "count"].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, both)
    assert set(compare.all_deltas(joined)) == {"all", "task_id", "annotation_type"}


def test_budget_and_slice_cap_switch_to_the_normal_approximation_and_pool():
    table = _two_task_table(20)
    joined = run(table)
    methods = compare.slice_deltas(joined, "task_id", budget=20 * 1000)["method"]
    assert set(methods) >= {"paired bootstrap (1,000)", "normal approximation"}
    pooled = compare.slice_deltas(joined, "annotation_type", max_slices=1)
    assert pooled["slice"].unique().tolist() == ["(other 2 slices)"]
    view = compare.component_view(compare.slice_deltas(joined, None), "overall")
    assert "rows_a" not in view.columns and view["slice"].tolist() == ["all"]
    assert "rows_a" in compare.component_view(compare.slice_deltas(joined, None), "solve_rate").columns


# --------------------------------------------------------------------------- who changed


def test_improved_and_regressed_are_sorted_by_size_then_key():
    rows = []
    for key, (a, b) in {"k1": (0.1, 0.9), "k2": (0.5, 0.6), "k3": (0.1, 0.9), "k4": (0.9, 0.2),
                        "k5": (0.5, 0.5), "k6": (0.6, 0.5)}.items():
        rows += [{"run": "A", "instance_id": key, "score": a}, {"run": "B", "instance_id": key, "score": b}]
    joined = run(make_table(rows))
    improved, regressed = compare.changes(joined, "overall")
    assert improved["key"].tolist() == ["k1", "k3", "k2"]
    assert regressed["key"].tolist() == ["k4", "k6"]
    assert improved["delta"].tolist() == pytest.approx([0.8, 0.8, 0.1])
    assert compare.change_counts(joined) == {"improved": 3, "regressed": 2, "unchanged": 1, "missing": 0}
    assert compare.unit_choices(joined)[:2] == [0, 2]  # |delta| 0.8 first, ties by key
    assert compare.unit_label(joined, 0) == "k1 · t · Δ overall +0.800"
    with pytest.raises(ValueError, match="unknown component"):
        compare.changes(joined, "nope")


@settings(max_examples=40, deadline=None)
@given(
    a=st.lists(st.tuples(st.sampled_from(["x", "y", "z", None]), st.sampled_from(["p", "q", None]),
                         st.floats(0, 1)), max_size=12),
    b=st.lists(st.tuples(st.sampled_from(["x", "y", "w", None]), st.sampled_from(["p", "r", None]),
                         st.floats(0, 1)), max_size=12),
)
def test_every_row_is_matched_or_listed_and_unit_means_are_group_means(a, b):
    rows = [{"run": "A", "instance_id": i, "prompt": p, "score": s} for i, p, s in a]
    rows += [{"run": "B", "instance_id": i, "prompt": p, "score": s} for i, p, s in b]
    if not rows:
        return
    table = make_table(rows)
    joined = run(table)
    report = joined.report
    assert report.matched_rows_a + len(joined.unmatched_a) == report.rows_a == len(a)
    assert report.matched_rows_b + len(joined.unmatched_b) == report.rows_b == len(b)
    units = joined.units
    assert units["rows_a"].sum() == report.matched_rows_a and units["rows_b"].sum() == report.matched_rows_b
    for unit in units.index:
        ids_a, ids_b = joined.rows_of(unit)
        assert units.loc[unit, "overall_a"] == pytest.approx(table.loc[ids_a, "score"].mean())
        assert units.loc[unit, "overall_b"] == pytest.approx(table.loc[ids_b, "score"].mean())


# --------------------------------------------------------------------------- the sample data


@pytest.fixture(scope="module")
def sample():
    table = loading.load_cached(sources.sample_source()).table
    return table, tuning.scores(table, tuning.scored_options(table))


def test_sample_checkpoints_join_on_instance_id(sample):
    table, scores = sample
    joined = compare.compare_runs(table, scores, Side("ckpt-A", 300), Side("ckpt-B", 300))
    report = joined.report
    assert (report.used, report.units, report.matched_rows_a, report.matched_rows_b) == (["instance_id"], 45, 180, 180)
    a = table[(table["run"] == "ckpt-A") & (table["step"] == 300)].groupby("instance_id")["score"].mean()
    b = table[(table["run"] == "ckpt-B") & (table["step"] == 300)].groupby("instance_id")["score"].mean()
    overall = compare.slice_deltas(joined).set_index("component").loc["overall"]
    assert overall["delta"] == pytest.approx((b - a).mean())
    assert overall["units"] == 45


def test_sample_all_steps_cascade_and_tuning_options_change_the_deltas(sample):
    table, scores = sample
    joined = compare.compare_runs(table, scores, Side("ckpt-A", None), Side("ckpt-B", None))
    # gsm8k rows have no instance id and no image: matched on the prompt alone
    assert joined.report.used == ["instance_id", "prompt_image"]
    assert joined.report.no_image == (50, 50)
    options = dict(tuning.scored_options(table), answer_weight=1.0, annotation_weight=0.0)
    reweighted = compare.compare_runs(table, tuning.scores(table, options), Side("ckpt-A", 300), Side("ckpt-B", 300))
    before = compare.compare_runs(table, scores, Side("ckpt-A", 300), Side("ckpt-B", 300))
    assert not math.isclose(reweighted.units["overall_delta"].mean(), before.units["overall_delta"].mean())
    assert reweighted.units["answer_delta"].tolist() == before.units["answer_delta"].tolist()


def test_delta_figure_escapes_labels(sample):
    table, scores = sample
    joined = compare.compare_runs(table, scores, Side("ckpt-A", 300), Side("ckpt-B", 300))
    view = compare.component_view(compare.slice_deltas(joined, "task_id"), "overall")
    view.loc[0, "slice"] = "<b>bold</b>"
    figure = compare.delta_figure(view, title="t")
    assert figure.data[0].y[0] == "&lt;b&gt;bold&lt;/b&gt;"
    assert len(figure.data[0].x) == len(view)
