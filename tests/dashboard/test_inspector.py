"""Inspector helpers: filters, sorting, previous/next and the gallery's worst rows."""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from dashboard import inspector as insp  # noqa: E402


def make_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run": ["A", "A", "B", "B", "B"],
            "step": pd.array([100, 200, 100, 200, None], dtype="Int64"),
            "task_id": ["count", "locate", "count", None, "locate"],
            "scorer": ["trace", "trace", "trace", "trace", "last_number"],
            "annotation_type": ["bbox_set", "point", "bbox_set", "point", None],
            "score": [1.0, 0.2, 0.0, 0.7, 1.0],
            "overall": [1.0, 0.2, 0.0, 0.7, np.nan],
            "answer_reward": [1.0, 1.0, 0.0, 1.0, np.nan],
            "annotation_reward": [0.9, 0.05, 0.3, 0.05, np.nan],
            "format": [1.0, 0.0, 1.0, 1.0, np.nan],
            "format_reason": ["ok", "text_after_object", "ok", "ok", None],
            "response": ['{"answer": 3}', "The BOX is here {}", "nothing", "<b>bold</b>", "42"],
            "prompt": ["How many?", "Where?", "How many?", "Where?", "Sum"],
            "recovered_text": [None, "{}", None, None, None],
        },
        index=pd.Index(["f.jsonl:1", "f.jsonl:2", "g.jsonl:1", "g.jsonl:2", "gsm.jsonl:7"], name="row_id"),
    )


def ids(frame):
    return frame.index.tolist()


def test_no_filter_keeps_everything():
    table = make_table()
    spec = insp.InspectorFilter()
    assert not spec.active and spec.describe() == "no filter"
    assert ids(insp.apply_filter(table, spec)) == ids(table)


def test_category_filters_combine_with_and_and_match_missing_as_none():
    table = make_table()
    spec = insp.InspectorFilter.of({"run": ["B"], "annotation_type": ["point"]})
    assert ids(insp.apply_filter(table, spec)) == ["g.jsonl:2"]
    spec = insp.InspectorFilter.of({"task_id": ["(none)", "count"]})
    assert ids(insp.apply_filter(table, spec)) == ["f.jsonl:1", "g.jsonl:1", "g.jsonl:2"]
    spec = insp.InspectorFilter.of({"format_reason": ["text_after_object"]})
    assert ids(insp.apply_filter(table, spec)) == ["f.jsonl:2"]


def test_reward_and_step_ranges_are_inclusive_and_drop_missing_values():
    table = make_table()
    spec = insp.InspectorFilter(ranges={"annotation_reward": (0.0, 0.3)})
    assert ids(insp.apply_filter(table, spec)) == ["f.jsonl:2", "g.jsonl:1", "g.jsonl:2"]
    spec = insp.InspectorFilter(ranges={"step": (150, 250), "score": (0.5, 1.0)})
    assert ids(insp.apply_filter(table, spec)) == ["g.jsonl:2"]
    assert "0.5 ≤ score ≤ 1" in spec.describe()


def test_text_search_is_literal_case_insensitive_and_covers_ids_and_prompts():
    table = make_table()
    assert ids(insp.apply_filter(table, insp.InspectorFilter(text="box"))) == ["f.jsonl:2"]
    assert ids(insp.apply_filter(table, insp.InspectorFilter(text="<b>"))) == ["g.jsonl:2"]
    assert ids(insp.apply_filter(table, insp.InspectorFilter(text="gsm.jsonl"))) == ["gsm.jsonl:7"]
    assert ids(insp.apply_filter(table, insp.InspectorFilter(text="how MANY"))) == ["f.jsonl:1", "g.jsonl:1"]
    assert ids(insp.apply_filter(table, insp.InspectorFilter(text="(["))) == []  # not a regex: no error
    assert ids(insp.apply_filter(table, insp.InspectorFilter(text="   "))) == ids(table)


def test_category_choices_and_bounds():
    table = make_table()
    choices = insp.category_choices(table)
    assert choices["task_id"] == ["(none)", "count", "locate"]
    assert choices["run"] == ["A", "B"]
    bounds = insp.numeric_bounds(table, ("step", "score", "missing_column"))
    assert bounds == {"step": (100.0, 200.0), "score": (0.0, 1.0)}


def test_sorts_are_stable_with_missing_last():
    table = make_table()
    assert ids(insp.sort_rows(table, "annotation reward, worst first")) == [
        "f.jsonl:2", "g.jsonl:2", "g.jsonl:1", "f.jsonl:1", "gsm.jsonl:7",
    ]
    assert ids(insp.sort_rows(table, "score, best first"))[:2] == ["f.jsonl:1", "gsm.jsonl:7"]
    assert ids(insp.sort_rows(table, "file order")) == ids(table)
    assert ids(insp.sort_rows(table, "unknown sort")) == ids(table)


def test_previous_next_clamp_at_the_ends():
    order = ["a", "b", "c"]
    assert insp.neighbour(order, "b", 1) == "c"
    assert insp.neighbour(order, "b", -1) == "a"
    assert insp.neighbour(order, "c", 1) == "c"
    assert insp.neighbour(order, "a", -1) == "a"
    assert insp.neighbour(order, "zzz", 1) == "a"
    assert insp.neighbour(order, None, -1) == "c"
    assert insp.neighbour([], "a", 1) is None
    assert insp.position_of(order, "c") == 2 and insp.position_of(order, "q") is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(), min_size=1, max_size=20, unique=True), st.data())
def test_walking_next_visits_every_row_once_in_order(order, data):
    current = order[0]
    seen = [current]
    for _ in range(len(order) - 1):
        current = insp.neighbour(order, current, 1)
        seen.append(current)
    assert seen == order
    assert insp.neighbour(order, current, 1) == order[-1]


def test_table_view_and_current_scores():
    table = make_table()
    view = insp.table_view(table, limit=2)
    assert list(view.columns)[:3] == ["run", "step", "task_id"] and len(view) == 2
    scores = pd.DataFrame({"score": [0.5] * 5, "solved": [False] * 5}, index=table.index[::-1])
    rescored = insp.with_scores(table, scores)
    assert rescored["score"].tolist() == [0.5] * 5
    assert table["score"].tolist()[0] == 1.0  # the input is not modified


def test_derived_tables_are_memoised_per_table_and_scores():
    table = make_table()
    scores = pd.DataFrame({"score": [0.5] * 5, "solved": [False] * 5}, index=table.index)
    first = insp.with_scores(table, scores)
    assert insp.with_scores(table, scores) is first  # the same object on every rerun
    other = pd.DataFrame({"score": [0.25] * 5, "solved": [False] * 5}, index=table.index)
    assert insp.with_scores(table, other)["score"].tolist() == [0.25] * 5
    assert insp.category_choices(first) is insp.category_choices(first)
    assert insp.numeric_bounds(first, ["score"]) == {"score": (0.5, 0.5)}
    assert insp.numeric_bounds(insp.with_scores(table, other), ["score"]) == {"score": (0.25, 0.25)}


def test_row_caption_is_plain_text():
    table = make_table()
    assert insp.row_caption(table.loc["f.jsonl:1"], "f.jsonl:1") == "f.jsonl:1 · run A · step 100 · task count · type bbox_set"
    assert insp.row_caption(table.loc["gsm.jsonl:7"], "gsm.jsonl:7") == "gsm.jsonl:7 · run B · task locate"


@pytest.mark.parametrize("column", ["annotation_reward", "score"])
def test_filter_on_a_table_without_optional_columns(column):
    table = make_table()[["run", "score", "annotation_reward"]]
    spec = insp.InspectorFilter.of({"task_id": ["count"]}, ranges={column: (0.5, 1.0)}, text="A")
    # task_id is absent: that filter is skipped; the range and text apply
    assert ids(insp.apply_filter(table, spec)) == ["f.jsonl:1"]


def test_default_row_is_the_worst_annotated_row_with_a_prediction():
    table = pd.DataFrame({
        "scorer": ["numeric_close", "trace", "trace", "trace", "trace"],
        "annotation_type": [None, "bbox", "bbox", "point", "bbox"],
        "trace_reward_mode_answer_and_annotation": [np.nan, 1.0, 1.0, 1.0, 0.0],
        "annotation_pred_size": [np.nan, 1.0, 0.0, 2.0, 1.0],
        "annotation_reward": [np.nan, 0.4, 0.0, 0.2, 0.0],
    }, index=["gsm:1", "a:1", "a:2", "a:3", "a:4"])
    # a:2 has no prediction and a:4 is scored in answer mode: a:3 is the worst drawn annotation
    assert insp.default_row(table) == "a:3"
    assert insp.default_row(table.loc[["gsm:1", "a:2"]]) == "a:2"  # no prediction anywhere: the worst
    assert insp.default_row(table.loc[["gsm:1", "a:4"]].assign(annotation_type=None)) == "a:4"  # first trace row
    assert insp.default_row(table.loc[["gsm:1"]]) == "gsm:1"
    assert insp.default_row(table.iloc[:0]) is None


def test_row_caption_keeps_instance_and_task_apart():
    row = pd.Series({"run": "A", "task_id": "count_shapes", "instance_id": "count_shapes-003", "annotation_type": "bbox"})
    assert insp.row_caption(row, "f:1") == "f:1 · run A · task count_shapes · instance count_shapes-003 · type bbox"


@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "(x)", "ß", "10"])), min_size=1, max_size=30))
def test_category_choices_of_a_categorical_equal_those_of_its_values(values):
    plain = pd.DataFrame({column: pd.Series(values, dtype=object) for column in insp.CATEGORY_FILTERS})
    categorical = plain.astype("category")
    categorical["run"] = categorical["run"].cat.add_categories(["unused"])  # never offered
    assert insp.category_choices(categorical) == insp.category_choices(plain)


@given(st.lists(st.sampled_from(["a.jsonl:1", "a.jsonl:2", "b.jsonl:1", "b.jsonl:1#1"]), max_size=12),
       st.sampled_from(["a.jsonl:1", "b.jsonl:1", "c.jsonl:9"]), st.integers(-3, 3))
def test_positions_in_an_index_are_those_in_the_list(order, current, step):
    as_list = order.index(current) if current in order else None
    for given_order in (order, pd.Index(order, dtype="str"), pd.Index(order, dtype=object)):
        assert insp.position_of(given_order, current) == as_list
        expected = (None if not order else order[0] if as_list is None and step >= 0 else order[-1]
                    if as_list is None else order[min(max(as_list + step, 0), len(order) - 1)])
        assert insp.neighbour(given_order, current, step) == expected


def _default_row_by_subsets(table):
    """The rule as row subsets (how it reads): worst annotation reward among scored rows."""
    scored = table[table["trace_reward_mode_answer_and_annotation"].fillna(0.0).to_numpy() == 1.0]
    predicted = scored[scored["annotation_pred_size"].fillna(0.0).to_numpy() > 0]
    scored = predicted if len(predicted) else scored
    scored = scored[scored["annotation_type"].notna()]
    scored = scored[pd.to_numeric(scored["annotation_reward"], errors="coerce").notna()]
    if len(scored):  # the lowest annotation reward, the first in table order on ties
        return scored.sort_values("annotation_reward", kind="stable").index[0]
    trace = np.flatnonzero((table["scorer"].astype(object) == "trace").to_numpy())
    return table.index[trace[0]] if len(trace) else table.index[0]


@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, None]), st.sampled_from([0.0, 2.0, None]),
                          st.sampled_from([0.0, 0.25, 0.5, None]), st.sampled_from(["bbox", None]),
                          st.sampled_from(["trace", "exact_match"])), min_size=1, max_size=20))
def test_the_default_row_follows_the_rule_on_any_table(rows):
    table = pd.DataFrame(rows, columns=["trace_reward_mode_answer_and_annotation", "annotation_pred_size",
                                        "annotation_reward", "annotation_type", "scorer"],
                         index=[f"f:{i}" for i in range(len(rows))])
    for column in ("trace_reward_mode_answer_and_annotation", "annotation_pred_size", "annotation_reward"):
        table[column] = table[column].astype(float)
    assert insp.default_row(table) == _default_row_by_subsets(table)
