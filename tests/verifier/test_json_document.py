"""``literals.json_document`` is ``json.loads`` for text: the same value, or the same error at the
same place, whatever the text (the scorer calls it on every final object and recovery candidate)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.verifier.literals import json_document

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
# JSON text, bent: surrounded by JSON's own white space and others, cut short, followed by more.
blanks = st.text(alphabet=" \t\n\r\u00a0\u2028\ufeff", max_size=3)
json_texts = st.builds(
    lambda before, value, after, cut, tail: (before + json.dumps(value) + after)[: cut if cut else None] + tail,
    blanks, json_values, blanks, st.integers(0, 40), st.sampled_from(["", " ", "x", "}", ",1", "\ufeff"]),
)
any_text = st.one_of(json_texts, st.text(alphabet='{}[]":,0123456789.eE+-tfnulrsa \t\n\\\ufeff', max_size=30))


def outcome(parse, text):
    try:
        return "value", parse(text)
    except json.JSONDecodeError as exc:
        return "error", exc.msg, exc.pos


@settings(max_examples=600, deadline=None)
@given(any_text)
def test_json_document_is_json_loads(text):
    assert repr(outcome(json_document, text)) == repr(outcome(json.loads, text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', ("value", {"a": 1})),
        (' \n{"a": [1, 2.5]}\t', ("value", {"a": [1, 2.5]})),
        ("", ("error", "Expecting value", 0)),
        ("  ", ("error", "Expecting value", 2)),
        ('{"a": 1} x', ("error", "Extra data", 9)),
        ('\ufeff{"a": 1}', ("error", "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)),
        ('{"a": }', ("error", "Expecting value", 6)),
        ("NaN", ("value", float("nan"))),
    ],
)
def test_json_document_examples(text, expected):
    assert repr(outcome(json_document, text)) == repr(expected)
