"""A row's ground truth worked out once while it repeats (scoring.runs.truths): exact repeats
only, and every row scores what the verifier gives it alone."""

from __future__ import annotations

import copy
import enum
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import contract, row, scorer_kwargs

import scoring.runs.truths as truths
from scoring import explain_trace_response, score_trace_response
from scoring.runs import score_records
from scoring.runs.truths import TRUTH_DEPTH, TruthMemo, same_plain_json
from scoring.verifier import FLAT_KEYS, annotation_truth


class Text(str):
    pass


class Number(enum.IntEnum):
    TEN = 10


def typed(value, depth: int = TRUTH_DEPTH):
    """The oracle: a tree that two values share exactly when they are the same plain JSON, type
    for type (None when the value is not plain JSON within ``depth``; a NaN is never the same)."""
    kind = type(value)
    if value is None or kind in (str, int, bool):
        return (kind.__name__, value)
    if kind is float:
        return ("float", object()) if math.isnan(value) else ("float", value.hex())
    if depth <= 0:
        return None
    if kind is list:
        items = [typed(item, depth - 1) for item in value]
        return None if None in items else ("list", tuple(items))
    if kind is dict:
        if any(type(key) is not str for key in value):
            return None
        items = [(key, typed(item, depth - 1)) for key, item in value.items()]
        return None if any(item is None for _, item in items) else ("dict", tuple(items))
    return None


def the_same(a, b) -> bool:
    ta, tb = typed(a), typed(b)
    return ta is not None and tb is not None and ta == tb


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4), st.sampled_from([0, 0.0, -0.0, 1, 1.0, True, False, Text("a"), "a", Number.TEN, 10]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.sampled_from(["type", "value", "a", "b"]), inner, max_size=3),
        st.dictionaries(st.sampled_from([1, "value"]), inner, max_size=2),
    ),
    max_leaves=12,
)


def variant(value, choice: int):
    """A value that differs from ``value`` at most in type or order: what a repeat must not confuse."""
    kind = type(value)
    if kind is int and choice % 3 == 0:
        return float(value) if abs(value) < 2**53 else value
    if kind is float and choice % 3 == 1 and value == 0:
        return -value
    if kind is list and choice % 4 == 2:
        return tuple(value)
    if kind is dict and choice % 5 == 3 and len(value) > 1:
        return dict(reversed(list(value.items())))
    if kind is list:
        return [variant(item, choice // 2) for item in value]
    if kind is dict:
        return {key: variant(item, choice // 2) for key, item in value.items()}
    return copy.deepcopy(value)


@settings(max_examples=400, deadline=None)
@given(values, st.integers(0, 60), st.booleans())
def test_a_repeat_is_the_same_plain_json_type_for_type(value, choice, other_value):
    other = variant(value, choice) if not other_value else copy.deepcopy(value)
    assert same_plain_json(value, other) == the_same(value, other)
    assert same_plain_json(other, value) == the_same(other, value)


def test_what_counts_as_a_repeat():
    box = {"type": "bbox", "value": [0, 0, 10, 10]}
    assert same_plain_json(box, copy.deepcopy(box))
    assert not same_plain_json(box, {"type": "bbox", "value": [0, 0, 10, 10.0]})  # int and float
    assert not same_plain_json(box, {"type": "bbox", "value": [0, 0, 10, True]})  # bool and int
    assert not same_plain_json(box, {"type": "bbox", "value": (0, 0, 10, 10)})  # list and tuple
    assert not same_plain_json(box, {"value": [0, 0, 10, 10], "type": "bbox"})  # key order
    assert not same_plain_json(box, {"type": Text("bbox"), "value": [0, 0, 10, 10]})  # a str subclass
    assert not same_plain_json([0, 0, 10, Number.TEN], [0, 0, 10, Number.TEN])  # an int subclass
    assert not same_plain_json([0.0], [-0.0]) and same_plain_json([-0.0], [-0.0])
    assert not same_plain_json([math.nan], [math.nan])
    deep = nested = []
    for _ in range(TRUTH_DEPTH + 1):
        nested.append([])
        nested = nested[0]
    assert not same_plain_json(deep, copy.deepcopy(deep))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(4)), st.integers(0, 60)), min_size=1, max_size=12))
def test_the_memo_gives_each_row_the_truth_of_its_own_values(picks):
    pool = [
        ({"type": "bbox", "value": [0, 0, 10, 10]}, contract("bbox")),
        ({"type": "point", "value": [3, 4]}, contract("point")),
        ({"type": "bbox_map", "value": {"left": [0, 0, 5, 5], "right": [5, 5, 9, 9]}}, contract("bbox_map")),
        ({"type": "bbox", "value": [0, 0, math.nan, 10]}, contract("bbox")),
    ]
    memo = TruthMemo()
    previous = None
    for index, choice in picks:
        annotation_gt, reward_contract = (variant(part, choice) for part in pool[index])
        truth = memo.get(annotation_gt, reward_contract)
        assert repr(truth) == repr(annotation_truth(annotation_gt, reward_contract))  # repr: NaN shows as nan
        if previous is not None:
            repeated = the_same(annotation_gt, previous[0]) and the_same(reward_contract, previous[1])
            assert (truth is previous[2]) == repeated
        previous = (annotation_gt, reward_contract, truth)


def _responses():
    return [
        '{"answer": 7, "annotation": [0, 0, 10, 10]}',
        '{"answer": 7, "annotation": [0, 0, 5, 10]}',
        '{"answer": 6, "annotation": [1, 1, 9, 9]}',
        "no json here",
    ]


GROUND_TRUTHS = [
    [0, 0, 10, 10],
    [0, 0, 10, 10.0],  # the same box, a float coordinate
    [0, 0, 10, True],  # a boolean where a number goes
    (0, 0, 10, 10),  # a tuple
    [-0.0, 0, 10, 10],
    [0.0, 0, 10, 10],
    [0, 0, 10],  # not a box
    [0, 0, 10, 10],  # the first again, after others
]


def test_rows_that_repeat_or_nearly_repeat_a_truth_each_score_as_alone(monkeypatch):
    worked_out = []
    real = truths.annotation_truth

    def counted(annotation_gt, reward_contract):
        worked_out.append(annotation_gt)
        return real(annotation_gt, reward_contract)

    monkeypatch.setattr(truths, "annotation_truth", counted)
    records = []
    for value in GROUND_TRUTHS:
        for response in _responses():
            item = row(response)
            item["annotation_gt"] = {"type": "bbox", "value": copy.deepcopy(value)}  # a fresh object per row
            records.append(item)
    reordered = row(_responses()[0])
    reordered["annotation_gt"] = {"value": [0, 0, 10, 10], "type": "bbox"}
    other_contract = row(_responses()[0], annotation_type="bbox")
    other_contract["reward_contract"]["annotation"]["id"] = "not_a_resolver"
    records += [reordered, other_contract, row(_responses()[0], annotation_type="bbox")]

    run = score_records(records, workers=1)
    table = run.table
    assert len(table) == len(records) and not len(run.errors)
    for position, item in enumerate(records):
        kwargs = scorer_kwargs(item)
        alone = score_trace_response(**kwargs)
        for key in FLAT_KEYS:
            got, want = table[key].iat[position], alone[key]
            assert got == want or (math.isnan(got) and math.isnan(want)), (position, key)
        reason = table["annotation_reason"].iat[position]
        assert (reason if isinstance(reason, str) else "") == explain_trace_response(**kwargs).annotation.reason
    # worked out once for each run of rows that exactly repeat a ground truth (the oracle's
    # word): once for four rows of a plain one, every row for the tuple
    expected = 0
    previous = None
    for item in records:
        key = (item["annotation_gt"], item["reward_contract"])
        if previous is None or not (the_same(key[0], previous[0]) and the_same(key[1], previous[1])):
            expected += 1
        previous = key
    assert len(worked_out) == expected
    assert expected < len(records)  # the memo was used


@pytest.mark.parametrize("value", [[0, 0, 10, 10], (0, 0, 10, 10)])
def test_evaluate_resolved_with_a_truth_given_is_the_evaluation(value):
    from scoring.verifier import evaluate_resolved, resolve_options

    annotation_gt = {"type": "bbox", "value": value}
    options = resolve_options(trace_reward_mode="answer_and_annotation")
    for response in _responses():
        fresh = evaluate_resolved(response, {"type": "integer", "value": 7}, annotation_gt, contract("bbox"), options)
        given_truth = evaluate_resolved(
            response, {"type": "integer", "value": 7}, annotation_gt, contract("bbox"), options,
            truth=annotation_truth(annotation_gt, contract("bbox")),
        )  # fmt: skip
        assert given_truth == fresh
