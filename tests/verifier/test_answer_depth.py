"""Canonical answers are built, compared and written out to a fixed depth, compiled or not.

``answers`` runs compiled, where a recursion has no limit to stop it before the C stack ends:
it counts its own depth instead and refuses a value nested past ``CANONICAL_MAX_DEPTH`` levels
with RecursionError -- the same boundary whichever way it runs. Below it, the depth-counting
functions are exactly the plain recursive definitions (kept here as the oracle)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.verifier import canonical, canonical_equal, to_plain
from scoring.verifier.answers import (
    ANSWER_FROM_MAPPING,
    CANONICAL_MAX_DEPTH,
    ELLIPSIS_TEXT,
    NULL,
    score_answer,
)
from scoring.verifier.literals import recursion_headroom
from scoring.verifier.spec import MAX_NESTING_DEPTH

# --------------------------------------------------------------------------- the oracle


def oracle_canonical(value):
    if value is None:
        return NULL
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return ("never", repr(value))
        return ("num", int(value) if value.is_integer() else value)
    if isinstance(value, str):
        return ("str", value.strip().lower())
    if isinstance(value, (list, tuple)):
        return ("list", tuple(oracle_canonical(item) for item in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(oracle_canonical(item) for item in value))
    if isinstance(value, Mapping):
        items = {}
        for key, item in value.items():
            items[oracle_canonical(key)] = oracle_canonical(item)
        return ("map", frozenset(items.items()))
    if value is Ellipsis:
        return ("str", ELLIPSIS_TEXT)
    return ("never", type(value).__name__)


def comparable(canon):
    """A canonical value with its never-equal leaves written as their labels (so that two forms
    can be compared with ``==``): the oracle above writes them so directly."""
    tag, *rest = canon
    if tag == "never":
        return ("never", repr(rest[0]) if not isinstance(rest[0], str) else rest[0])
    if tag == "list":
        return ("list", tuple(comparable(item) for item in rest[0]))
    if tag == "set":
        return ("set", frozenset(comparable(item) for item in rest[0]))
    if tag == "map":
        return ("map", frozenset((comparable(k), comparable(v)) for k, v in rest[0]))
    return canon


LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([1.0, 2.5, -0.0, math.nan, math.inf])
    | st.sampled_from(["a", "A ", "b", " B", "..."])
    | st.just(Ellipsis)
)
HASHABLE = st.recursive(
    LEAVES, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=6
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(HASHABLE, max_size=3)
        | st.dictionaries(st.sampled_from(["k", "K", "v"]) | st.integers(0, 2), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(VALUES)
def test_canonical_is_the_recursive_definition(value):
    assert comparable(canonical(value)) == comparable(oracle_canonical(value))


def oracle_equal(left, right):
    if left[0] == "set" and right[0] == "list":
        left, right = right, left
    if left[0] == "list" and right[0] == "set":
        items = left[1]
        return len(set(items)) == len(items) and frozenset(items) == right[1]
    if left[0] != right[0]:
        return False
    if left[0] == "list":
        return len(left[1]) == len(right[1]) and all(
            oracle_equal(a, b) for a, b in zip(left[1], right[1], strict=True)
        )
    if left[0] == "map":
        left_map, right_map = dict(left[1]), dict(right[1])
        return left_map.keys() == right_map.keys() and all(
            oracle_equal(value, right_map[key]) for key, value in left_map.items()
        )
    return left == right


@given(VALUES, VALUES)
def test_canonical_equal_is_the_recursive_definition(left, right):
    # each value against the other, and against itself (equal unless it holds a never-equal leaf)
    for a, b in ((left, right), (left, left), (right, list(right) if isinstance(right, tuple) else right)):
        assert canonical_equal(canonical(a), canonical(b)) == oracle_equal(canonical(a), canonical(b))


@given(VALUES)
def test_to_plain_renders_every_level(value):
    plain = to_plain(canonical(value))
    # rendering again from the canonical form of the rendering gives the same text back
    assert repr(to_plain(canonical(value))) == repr(plain)


# --------------------------------------------------------------------------- the depth


def nested(kind: str, levels: int, leaf=7):
    value = leaf
    for _ in range(levels):
        if kind == "list":
            value = [value]
        elif kind == "tuple":
            value = (value, 1)
        elif kind == "map":
            value = {"k": value}
        else:
            value = frozenset([value])
    return value


def test_the_depth_allows_every_value_a_response_can_parse_to():
    assert CANONICAL_MAX_DEPTH >= MAX_NESTING_DEPTH  # parsers refuse MAX_NESTING_DEPTH levels


@pytest.mark.parametrize("kind", ["list", "tuple", "map", "set"])
def test_a_value_at_the_depth_is_canonical_and_one_level_deeper_is_refused(kind):
    # interpreted, Python's own recursion limit comes first: the room score_answer gives it
    with recursion_headroom():
        deepest = canonical(nested(kind, CANONICAL_MAX_DEPTH))
        assert canonical_equal(deepest, canonical(nested(kind, CANONICAL_MAX_DEPTH)))
        assert not canonical_equal(deepest, canonical(nested(kind, CANONICAL_MAX_DEPTH, leaf=8)))
        with pytest.raises(RecursionError, match=f"deeper than {CANONICAL_MAX_DEPTH} levels"):
            canonical(nested(kind, CANONICAL_MAX_DEPTH + 1))
        # maps and sets are written in the order of their items' repr, which has its own limit
        levels = CANONICAL_MAX_DEPTH if kind in ("list", "tuple") else 100
        plain = to_plain(canonical(nested(kind, levels)))
    for _ in range(levels):  # every level rendered
        plain = plain["set"][0] if kind == "set" else plain["k"] if kind == "map" else plain[0]
    assert plain == 7


def test_comparing_and_writing_out_stop_at_the_depth_too():
    # canonical forms made by hand (a caller's, not canonical's) are bounded the same way
    too_deep = ("num", 7)
    for _ in range(CANONICAL_MAX_DEPTH + 1):
        too_deep = ("list", (too_deep,))
    with recursion_headroom():
        with pytest.raises(RecursionError, match="deeper than"):
            canonical_equal(too_deep, too_deep)
        with pytest.raises(RecursionError, match="deeper than"):
            to_plain(too_deep)


def test_an_answer_at_the_depth_is_compared_and_a_deeper_one_is_a_clean_zero():
    truth = nested("list", MAX_NESTING_DEPTH - 1)
    right = score_answer(
        nested("list", MAX_NESTING_DEPTH - 1), ANSWER_FROM_MAPPING, {"type": "json", "value": truth}
    )
    assert (right.reward, right.reason) == (1.0, "")
    wrong = score_answer(nested("list", MAX_NESTING_DEPTH - 1, leaf=8), ANSWER_FROM_MAPPING, {"value": truth})
    assert wrong.reward == 0.0 and wrong.reason.startswith("[[[[") and "!=" in wrong.reason
    deep = nested("list", 200_000)
    refused = score_answer(7, ANSWER_FROM_MAPPING, {"type": "json", "value": deep})
    assert (refused.reward, refused.parse_ok, refused.reason) == (
        0.0,
        True,
        "answer nested too deeply to compare",
    )
