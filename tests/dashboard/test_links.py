"""Links that reopen a view: encoding, decoding and validating URL parameters."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard import links
from dashboard.links import MANY, NUMBER, ONE, RANGE, TEXT, Field

SORTS = ("file order", "annotation reward, worst first", "score, best first")
FIELDS = [
    Field("row", TEXT),
    Field("task", MANY, (), ("count_shapes", "chart_value", "gsm8k-train-0001")),
    Field("sort", ONE, SORTS[0], SORTS),
    Field("score", RANGE, None, low=0.0, high=1.0),
    Field("step", RANGE, None, low=100, high=300),
    Field("bins", links.INTEGER, 20, low=5, high=50),
    Field("weight", NUMBER, 0.5, low=0.0, high=1.0),
]
DEFAULTS = {f.key: f.default for f in FIELDS}


def test_no_parameters_is_every_default():
    assert links.decode({}, FIELDS) == (DEFAULTS, [])


def test_valid_parameters_are_read():
    values, notes = links.decode({
        "row": ["a.jsonl:3"], "task": ["chart_value", "count_shapes"], "sort": ["annotation-reward-worst-first"],
        "score": ["0..0.5"], "step": ["100..200"], "bins": ["10"], "weight": ["0.25"],
    }, FIELDS)
    assert notes == []
    assert values == {"row": "a.jsonl:3", "task": ("chart_value", "count_shapes"),
                      "sort": "annotation reward, worst first", "score": (0.0, 0.5), "step": (100.0, 200.0),
                      "bins": 10, "weight": 0.25}


def test_a_choice_is_read_by_its_label_too():
    values, notes = links.decode({"sort": ["score, best first"]}, FIELDS)
    assert values["sort"] == "score, best first" and not notes


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("sort", "sideways", "'sideways' is not one of: file-order, annotation-reward-worst-first, score-best-first"),
        ("score", "0.8..0.2", "'0.8..0.2' starts above its end"),
        ("score", "0..2", "'0..2' is outside 0..1"),
        ("score", "half", "'half' is not a range like 0..1"),
        ("score", "nan..1", "'nan..1' is not a range like 0..1"),
        ("step", "0..200", "'0..200' is outside 100..300"),
        ("bins", "ten", "'ten' is not a whole number"),
        ("bins", "500", "'500' is outside 5..50"),
        ("bins", "2.5", "'2.5' is not a whole number"),
        ("weight", "inf", "'inf' is not a number"),
        ("weight", "-0.1", "'-0.1' is outside 0..1"),
        ("row", "x" * 501, "is longer than 500 characters"),
    ],
)
def test_a_bad_value_falls_back_to_the_default_with_a_note(key, value, said):
    values, notes = links.decode({key: [value]}, FIELDS)
    assert values == DEFAULTS
    assert len(notes) == 1 and said in notes[0] and notes[0].startswith(f"The link's {key}: ")


def test_unknown_values_of_a_many_valued_parameter_are_dropped_and_named():
    values, notes = links.decode({"task": ["chart_value", "nope", "also-nope"]}, FIELDS)
    assert values["task"] == ("chart_value",)
    assert notes == ["The link's task: 'nope', 'also-nope' not in the loaded data; ignored."]


def test_parameters_the_page_does_not_use_are_named():
    values, notes = links.decode({"zoom": ["3"], "embed": ["true"]}, FIELDS)
    assert values == DEFAULTS
    assert notes == ["The link's parameter zoom is not used on this page; ignored."]


def test_encode_leaves_defaults_out():
    assert links.encode(DEFAULTS, FIELDS) == {}
    assert links.encode(dict(DEFAULTS, task=(), row=""), FIELDS) == {}
    assert links.encode(dict(DEFAULTS, sort="score, best first", score=(0.0, 0.5), weight=0.35), FIELDS) == {
        "sort": ["score-best-first"], "score": ["0..0.5"], "weight": ["0.35"]}


VALUES = st.fixed_dictionaries({
    "row": st.text(min_size=0, max_size=40),
    "task": st.lists(st.sampled_from(FIELDS[1].choices), unique=True).map(tuple),
    "sort": st.sampled_from(SORTS),
    "score": st.one_of(st.none(), st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: tuple(sorted(t)))),
    "step": st.one_of(st.none(), st.tuples(st.integers(100, 300), st.integers(100, 300))
                      .map(lambda t: tuple(float(v) for v in sorted(t)))),
    "bins": st.integers(5, 50),
    "weight": st.floats(0, 1),
})


@given(VALUES)
def test_a_link_reopens_what_it_encodes(values):
    decoded, notes = links.decode(links.encode(values, FIELDS), FIELDS)
    assert notes == []
    expected = dict(values, row=values["row"] or None)
    for key in ("score", "weight"):  # written with 10 significant digits
        if isinstance(values[key], tuple):
            assert decoded[key] == pytest.approx(values[key], rel=1e-9, abs=1e-300)
        elif values[key] is not None:
            assert math.isclose(decoded[key], values[key], rel_tol=1e-9, abs_tol=1e-300)
        expected[key] = decoded[key]
    assert decoded == expected


@given(st.dictionaries(st.sampled_from(["row", "task", "sort", "score", "step", "bins", "weight", "other"]),
                       st.lists(st.text(max_size=30), min_size=1, max_size=3)))
def test_decode_never_raises(params):
    values, notes = links.decode(params, FIELDS)
    assert set(values) == set(DEFAULTS)
    assert all(isinstance(note, str) for note in notes)


def test_query_string_repeats_many_valued_parameters():
    assert links.query_string({}) == ""
    assert links.query_string({"row": ["a/b.jsonl:3"], "task": ["x", "y"]}) == "?row=a%2Fb.jsonl%3A3&task=x&task=y"


def test_params_of_drops_streamlit_parameters():
    assert links.params_of({"embed": "true", "row": "r", "task": ["a", "b"]}) == {"row": ["r"], "task": ["a", "b"]}


def test_resolve_row():
    table = pd.DataFrame({"run": ["A", "B", None]}, index=pd.Index(["f:1", "f:2", "g:1"], name="row_id"))
    assert links.resolve_row(table, "f:2") == ("f:2", "")
    assert links.resolve_row(table, "f:2", "B") == ("f:2", "")
    assert links.resolve_row(table, None) == (None, "")
    row, note = links.resolve_row(table, "f:9")
    assert row is None and "'f:9' is not in the loaded data" in note
    row, note = links.resolve_row(table, "f:2", "A")
    assert row is None and "not in run 'A'" in note
    assert links.row_run(table, "f:1") == "A" and links.row_run(table, "g:1") is None


def test_resolve_row_where_ids_repeat_across_runs():
    table = pd.DataFrame({"run": ["A", "B"]}, index=pd.Index(["f:1", "f:1"], name="row_id"))
    assert links.resolve_row(table, "f:1", "B") == ("f:1", "")
    assert links.resolve_row(table, "f:1", "C")[0] is None


def test_slug():
    assert links.slug("annotation reward, worst first") == "annotation-reward-worst-first"
    assert links.slug("task reward") == "task-reward" and links.slug(None) == "none"
