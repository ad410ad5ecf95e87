"""``canonical_text`` writes every canonical value exactly as ``json.dumps`` of its plain form
does: the direct path for strings and numbers is a shortcut, never a second format."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from scoring.verifier import canonical, canonical_text
from scoring.verifier.answers import to_plain

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.frozensets(st.integers() | st.text(max_size=3), max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def through_json(canon) -> str:
    return json.dumps(to_plain(canon), ensure_ascii=False, sort_keys=True, default=repr)


@given(VALUES)
def test_canonical_text_is_json_dumps_of_the_plain_value(value):
    canon = canonical(value)
    assert canonical_text(canon) == through_json(canon)


def test_the_direct_path_on_values_json_escapes_or_rounds():
    cases = {
        '  A"b\\ ': '"a\\"b\\\\"',  # canonical strings are stripped and lower-cased, then escaped
        "é\u2028\x00\n": '"é\u2028\\u0000"',
        7.0: "7",  # an integral float is the integer
        0.1 + 0.2: "0.30000000000000004",
        -0.0: "0",
        10**30: "1000000000000000000000000000000",
    }
    for value, text in cases.items():
        assert canonical_text(canonical(value)) == text == through_json(canonical(value))
    assert canonical_text(None) == ""
    assert canonical_text(canonical(math.inf)) == through_json(canonical(math.inf))
