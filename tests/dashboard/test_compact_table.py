"""Every result the app computes from a table equals on the compact table of an opened dataset.

``datasets.open_dataset`` holds the table in narrow dtypes (small integers, categories, 32-bit
Arrow strings, sparse and shared float columns). The app's plain functions must give what
they give on the in-memory table of ``score_files`` (text columns dropped, as an opened
dataset has none): the same values always, and the same dtypes where a user sees them
(a table shown with ``st.dataframe`` goes through Arrow, which refuses sparse columns).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dashboard import compare, figures, filters, formatting, groups, inspector, numbers, tuning
from scoring import datasets, engines
from scoring.review import consensus, frame_tables, frames
from scoring.runs import recompute, reweight, score_files
from scoring.verifier import FORMULA_ADDITIVE, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "datasets"))  # test_store's sample inputs

from rollout_fixtures import diverse_rows, write_jsonl  # noqa: E402
from test_store import SAMPLE, SAMPLE_FILES  # noqa: E402  (every kind of sample input)

INPUTS = [*SAMPLE_FILES, SAMPLE / "gt_audit" / "rollouts_gt_audit.jsonl"]  # wrong ground truths: suspects
TEXT = list(datasets.STORED_TEXT_COLUMNS)


def generated_rows() -> list[dict]:
    """The fixtures' rows of every annotation family, repeated as GRPO groups of a run of its
    own: shared instance ids and sample indexes, steps up to 40,000 (held in int32), some rows
    without a step or an instance id, a logged overall on some."""
    rows = []
    base = diverse_rows()
    for step in (0, 10, 40_000):
        for instance in range(6):
            for sample in range(4):
                item = dict(base[(instance * 4 + sample + step) % len(base)])
                item.update(id=f"gen/{step}/{instance}/{sample}", run="generated", sample_index=sample,
                            instance_id=f"inst-{instance}", step=step)
                if instance == 5:
                    del item["instance_id"]
                    del item["step"]
                if sample == 0:
                    item["overall"] = 0.5
                rows.append(item)
    return rows


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """(in-memory table without text, compact table, in-memory table with text)."""
    folder = tmp_path_factory.mktemp("compact")
    inputs = [*INPUTS, write_jsonl(folder / "generated.jsonl", generated_rows())]
    engines.score_to_dataset(inputs, folder / "ds", workers=1)
    full = score_files(inputs, workers=1).table
    compact = datasets.open_dataset(folder / "ds").table
    return full.drop(columns=TEXT), compact, full


@pytest.fixture(scope="module")
def memory(tables):
    return tables[0]


@pytest.fixture(scope="module")
def compact(tables):
    return tables[1]


OPTION_SETS = [
    None,  # as scored
    {"mode": MODE_ANSWER},
    {"mode": MODE_ANSWER_AND_ANNOTATION, "formula": FORMULA_ADDITIVE},
    {"answer_weight": 0.3, "annotation_weight": 0.7, "format_weight": 0.2},
    {"solved_threshold": 0.8},
]


def options_of(table: pd.DataFrame, change: dict | None) -> dict:
    return {**tuning.scored_options(table), **(change or {})}


def same(got, expected, *, check_dtype: bool = True) -> None:
    """``got`` equals ``expected``: frames and series value for value (dtypes too unless told),
    arrays exactly (NaN where NaN), containers item by item, figures as their JSON."""
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(
            got, expected, check_dtype=check_dtype, check_categorical=check_dtype, check_exact=True
        )
    elif isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(
            got, expected, check_dtype=check_dtype, check_categorical=check_dtype, check_exact=True
        )
    elif isinstance(expected, pd.Index):
        pd.testing.assert_index_equal(got, expected, exact=check_dtype)
    elif isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        assert type(got) is type(expected)
        for item in dataclasses.fields(expected):
            same(getattr(got, item.name), getattr(expected, item.name), check_dtype=check_dtype)
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        for key in expected:
            same(got[key], expected[key], check_dtype=check_dtype)
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            same(a, b, check_dtype=check_dtype)
    elif hasattr(expected, "to_plotly_json"):
        assert json.dumps(got.to_plotly_json(), sort_keys=True, default=str) == json.dumps(
            expected.to_plotly_json(), sort_keys=True, default=str
        )
    elif isinstance(expected, float) and np.isnan(expected):
        assert isinstance(got, float) and np.isnan(got)
    else:
        assert type(got) is type(expected) and got == expected, (got, expected)


def as_shown(got: pd.DataFrame, expected: pd.DataFrame) -> pd.DataFrame:
    """``got`` with the dtypes of ``expected`` where they differ only as a user cannot see: an
    integer column's width (Int32 for Int64), a categorical or Arrow string for ``str``, a
    sparse column (which the table boundary makes dense). Any other difference stays."""
    casts = {}
    for name in expected.columns.intersection(got.columns):
        have, want = got[name].dtype, expected[name].dtype
        if have == want:
            continue
        integers = pd.api.types.is_integer_dtype(have) and pd.api.types.is_integer_dtype(want)
        text = isinstance(have, (pd.CategoricalDtype, pd.ArrowDtype)) and isinstance(want, pd.StringDtype)
        sparse = isinstance(have, pd.SparseDtype) and have.subtype == want
        if integers or text or sparse:
            casts[name] = want
    return got.astype(casts) if casts else got


def same_shown(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """A frame the app shows equals: values exactly, dtypes but for :func:`as_shown`'s."""
    same(as_shown(got, expected), expected)
    shown(got)


def shown(frame: pd.DataFrame) -> None:
    """A frame the app shows (``state.show_table``: the number policy, then ``st.dataframe``,
    which sends it as Arrow): Arrow takes every column, as numbers where they were numbers."""
    table = pa.Table.from_pandas(numbers.numeric_columns(frame))
    for name in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[name].dtype) and frame[name].dtype != bool:
            field = table.schema.field(str(name))
            assert pa.types.is_integer(field.type) or pa.types.is_floating(field.type), (name, field)


# --------------------------------------------------------------------------- the tables


def test_the_compact_table_holds_the_same_values_in_fewer_bytes(memory, compact):
    assert list(compact.columns) == list(memory.columns)
    assert datasets.held_bytes(compact).sum() < 0.75 * memory.memory_usage(deep=True, index=False).sum()
    for name in ("source_line", "step", "sample_index"):
        assert compact[name].dtype.itemsize < 8
    pd.testing.assert_frame_equal(datasets.widened(compact), memory)


# --------------------------------------------------------------------------- re-weighting


@pytest.mark.parametrize("change", OPTION_SETS)
def test_reweighting(memory, compact, change):
    options = tuning.recompute_kwargs(options_of(memory, change))
    same(recompute(compact, **options), recompute(memory, **options))
    same(datasets.widened(reweight(compact, **options)), reweight(memory, **options))


@pytest.mark.parametrize("change", OPTION_SETS[1:])
def test_tuning(memory, compact, change):
    baseline, options = options_of(memory, None), options_of(memory, change)
    assert options_of(compact, change) == options
    same(tuning.scores(compact, options), tuning.scores(memory, options))
    got, expected = tuning.compare(compact, baseline, options), tuning.compare(memory, baseline, options)
    same(got, expected)
    same(tuning.score_counts(got.after), tuning.score_counts(expected.after))
    flips = tuning.flip_rows(compact, got)
    same_shown(flips, tuning.flip_rows(memory, expected))
    same(figures.delta_bars(got.per_task, key=filters.TASK_FAMILY),
         figures.delta_bars(expected.per_task, key=filters.TASK_FAMILY))


# --------------------------------------------------------------------------- overview and filters


@pytest.mark.parametrize("change", OPTION_SETS[:2])
def test_overview(memory, compact, change):
    options = options_of(memory, change)
    got_scores, scores = tuning.scores(compact, options), tuning.scores(memory, options)
    errors = pd.DataFrame(columns=["file", "line", "field", "reason", "severity"])
    same(filters.overview_metrics(compact, got_scores, errors), filters.overview_metrics(memory, scores, errors))
    for by in (filters.TASK_FAMILY, "annotation_type", "run", ["run", "step"]):
        summary = filters.group_summary(compact, got_scores, by)
        same_shown(summary, filters.group_summary(memory, scores, by))
    steps = filters.step_summary(compact, got_scores)
    same(steps, filters.step_summary(memory, scores))
    same(filters.step_long(steps), filters.step_long(filters.step_summary(memory, scores)))
    same(filters.logged_report(compact), filters.logged_report(memory))
    disagreements = filters.logged_disagreements(compact)
    assert len(disagreements)
    same_shown(disagreements, filters.logged_disagreements(memory))


@pytest.mark.parametrize("component", filters.COMPONENTS)
@pytest.mark.parametrize("facet", list(filters.FACETS.values()))
def test_distributions(memory, compact, component, facet):
    options = options_of(memory, None)
    got_scores, scores = tuning.scores(compact, options), tuning.scores(memory, options)
    values = filters.component_values(compact, got_scores, component)
    expected_values = filters.component_values(memory, scores, component)
    same(values, expected_values)
    keys = filters.facet_keys(compact, facet)
    expected_keys = filters.facet_keys(memory, facet)
    same(keys, expected_keys)
    counts = filters.binned(values, keys, bins=10)
    same(counts, filters.binned(expected_values, expected_keys, bins=10))
    same(figures.histogram(counts, title="t", threshold=0.5),
         figures.histogram(filters.binned(expected_values, expected_keys, bins=10), title="t", threshold=0.5))
    chosen = sorted({(str(k), int(b)) for k, b in counts[["facet", "bin"]].itertuples(index=False)})[:3] \
        if "facet" in counts.columns else [(str(filters.NONE_LABEL), int(b)) for b in counts["bin"][:3]]
    ids = filters.rows_in_bins(values, keys, chosen, bins=10)
    assert len(ids)
    same(ids, filters.rows_in_bins(expected_values, expected_keys, chosen, bins=10))
    rows = filters.row_list(compact, got_scores, ids)
    same_shown(rows, filters.row_list(memory, scores, ids))


def test_category_and_range_filters(memory, compact):
    choices = inspector.category_choices(compact)
    same(choices, inspector.category_choices(memory))
    numeric = ["score", "answer_reward", "annotation_reward", "step", "source_line", "image_width",
               "annotation_assigned_iou_mean"]
    bounds = inspector.numeric_bounds(compact, numeric)
    same(bounds, inspector.numeric_bounds(memory, numeric))
    specs = [inspector.InspectorFilter.of({c: values[: 1 + len(values) // 2]}) for c, values in choices.items()]
    specs += [inspector.InspectorFilter(ranges={c: (lo, (lo + hi) / 2)}) for c, (lo, hi) in bounds.items()]
    specs.append(inspector.InspectorFilter.of({"run": choices["run"][:1]}, ranges={"score": (0.25, 1.0)}))
    for spec in specs:
        same(inspector.filter_mask(compact, spec), inspector.filter_mask(memory, spec))
        same(inspector.apply_filter(compact, spec).index, inspector.apply_filter(memory, spec).index)
    for sort in inspector.SORTS:
        same(inspector.sort_rows(compact, sort).index, inspector.sort_rows(memory, sort).index)
    same(inspector.default_row(compact), inspector.default_row(memory))
    for column, values in choices.items():
        keyword = {"run": "runs", "task_id": "tasks", "annotation_type": "annotation_types",
                   "format_reason": "reasons"}.get(column)
        if keyword:
            chosen = {keyword: values[:2]}
            same(filters.filter_rows(compact, **chosen), filters.filter_rows(memory, **chosen))


# --------------------------------------------------------------------------- format failures


@pytest.mark.parametrize("change", OPTION_SETS[:2])
def test_format_failures(memory, compact, change):
    options = options_of(memory, change)
    got_scores, scores = tuning.scores(compact, options), tuning.scores(memory, options)
    same(formatting.failure_mask(compact, got_scores), formatting.failure_mask(memory, scores))
    counts = formatting.reason_counts(compact, got_scores)
    same(counts, formatting.reason_counts(memory, scores))
    same(figures.reason_bars(counts), figures.reason_bars(formatting.reason_counts(memory, scores)))
    choices = formatting.filter_choices(compact, got_scores)
    same(choices, formatting.filter_choices(memory, scores))
    for narrow in ({}, {"reasons": choices.get("reasons", [])[:1]}, {"tasks": choices.get("tasks", [])[:1]},
                   {"runs": choices.get("runs", [])[:1]}):
        got = formatting.failure_ids(compact, got_scores, with_positive=True, **narrow)
        same(got, formatting.failure_ids(memory, scores, with_positive=True, **narrow))


# --------------------------------------------------------------------------- groups


def test_groups(memory, compact):
    options = options_of(memory, None)
    got_scores, scores = tuning.scores(compact, options), tuning.scores(memory, options)
    got, expected = groups.detect_groups(compact), groups.detect_groups(memory)
    assert len(expected.groups) > 1
    same(got.codes, expected.codes)
    same(got.groups, expected.groups)
    assert got.describe() == expected.describe()
    stats = groups.group_stats(got, got_scores)
    same(stats, groups.group_stats(expected, scores))
    same(groups.signal_summary(stats), groups.signal_summary(groups.group_stats(expected, scores)))
    per_step = groups.per_run_step(stats)
    same(per_step, groups.per_run_step(groups.group_stats(expected, scores)))
    same(groups.steps_figure(per_step), groups.steps_figure(groups.per_run_step(groups.group_stats(expected, scores))))
    for group in range(min(len(expected.groups), 5)):
        rollouts = groups.group_rollouts(compact, got_scores, got, group)
        same_shown(rollouts, groups.group_rollouts(memory, scores, expected, group))
    for grid in (groups.weight_grid(options), groups.threshold_grid(options), groups.format_weight_grid(options)):
        shares = groups.zero_signal_share(compact, grid, grouping=got, base=options)
        same(shares, groups.zero_signal_share(memory, grid, grouping=expected, base=options))
    same(groups.sweep_figure(shares, x="format_weight", title="t"),
         groups.sweep_figure(groups.zero_signal_share(memory, grid, grouping=expected, base=options),
                             x="format_weight", title="t"))


# --------------------------------------------------------------------------- compare


@pytest.mark.parametrize("join", compare.JOINS)
def test_compare(memory, compact, join):
    options = options_of(memory, None)
    got_scores, scores = tuning.scores(compact, options), tuning.scores(memory, options)
    same(compare.run_labels(compact), compare.run_labels(memory))
    same(compare.runs_and_steps(compact), compare.runs_and_steps(memory))
    same(compare.default_sides(compact), compare.default_sides(memory))
    sides = [(compare.Side("ckpt-A", 100), compare.Side("ckpt-B", 100)),
             (compare.Side("ckpt-A"), compare.Side("ckpt-B")),
             (compare.Side("generated", 0), compare.Side("generated", 40_000))]
    for side_a, side_b in sides:
        same(compare.side_mask(compact, side_a), compare.side_mask(memory, side_a))
        compare.clear_caches()
        got = compare.compare_runs(compact, got_scores, side_a, side_b, join=join)
        compare.clear_caches()
        expected = compare.compare_runs(memory, scores, side_a, side_b, join=join)
        assert expected.report.units > 0 or join == compare.JOIN_PROMPT  # no prompts without the text
        same(got.report, expected.report)
        same(got.units, expected.units)
        same(got.ids_a, expected.ids_a)
        same(got.unit_a, expected.unit_a)
        same(got.unit_b, expected.unit_b)
        same(got.rows, expected.rows)
        deltas = compare.all_deltas(got)
        same(deltas, compare.all_deltas(expected))
        for component in compare.COMPONENT_LABELS:
            same(compare.changes(got, component), compare.changes(expected, component))
            same(compare.change_counts(got, component), compare.change_counts(expected, component))
            same(compare.unit_choices(got, component, limit=20), compare.unit_choices(expected, component, limit=20))
        unmatched = compare.unmatched_rows(compact, got.unmatched_a, 50)
        same_shown(unmatched, compare.unmatched_rows(memory, expected.unmatched_a, 50))


# --------------------------------------------------------------------------- frames and consensus


def with_text(compact: pd.DataFrame, full: pd.DataFrame) -> pd.DataFrame:
    """The compact table with the text columns beside it, as ``datasets.rows_with_text`` joins them."""
    return pd.concat([compact, full[TEXT]], axis=1)[list(full.columns)]


def test_frames(tables):
    memory, compact, full = tables
    assert frame_tables.rows_to_evaluate(compact) == frame_tables.rows_to_evaluate(memory)
    got = frame_tables.frame_table(with_text(compact, full))
    expected = frame_tables.frame_table(full)
    assert (expected["status"] == frames.STATUS_CHECKED).sum() > 0
    same(as_shown(got, expected), expected)
    for by in ("task_id", "run", ["run", "step"]):
        same_shown(frame_tables.frame_counts(got, by), frame_tables.frame_counts(expected, by))
    same_shown(frame_tables.flagged_rows(got), frame_tables.flagged_rows(expected))


def test_consensus(tables):
    memory, compact, full = tables
    same(consensus.instance_keys(compact), consensus.instance_keys(memory))
    expected = consensus.suspects(full)
    assert len(expected)
    same_shown(consensus.suspects(with_text(compact, full)), expected)
