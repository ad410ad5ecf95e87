"""Canonical answer values and their comparison (``answer_exact_match_v0``).

One rule for every answer type: exact match after canonical normalisation.
Canonical values are tagged tuples so that Python's own equality cannot blur
types: ``True`` is not ``1`` here, ``7.0`` is ``7``, NaN equals nothing. A
Python-literal ``...`` is the string ``"..."``; mapping keys that collide once
canonical keep the later value. No result depends on the hash seed: sets are
compared as sets, and a canonical mapping never holds two equal keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from .literals import Literal, is_mapping, parse_literal, recursion_headroom
from .records import new_record
from .spec import MAX_NESTING_DEPTH

NULL = ("null",)
_BOOL, _NUM, _STR, _LIST, _SET, _MAP, _NEVER = "bool", "num", "str", "list", "set", "map", "never"

# Where the predicted answer came from.
ANSWER_FROM_MAPPING = "mapping"
ANSWER_FROM_WHOLE_RESPONSE = "whole_response"


class _Never:
    """A canonical value that equals nothing, itself included (NaN, infinities, exotic literals)."""

    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        self.label = label

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return self.label


def canonical_string(text: str) -> str:
    """Strings compare stripped and lower-cased (``str.lower``, no Unicode normalisation)."""
    return text.strip().lower()


def canonical(value: Any) -> tuple:
    """The canonical, hashable form of a JSON (or Python literal) value.

    RecursionError for a value nested deeper than :data:`CANONICAL_MAX_DEPTH` levels."""
    return _canonical(value, 0)


def _canonical(value: Any, depth: int) -> tuple:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return (_BOOL, value)
    if isinstance(value, int):
        return (_NUM, value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return (_NEVER, _Never(repr(value)))
        return (_NUM, int(value) if value.is_integer() else value)
    if isinstance(value, str):
        return (_STR, canonical_string(value))
    if isinstance(value, (list, tuple)):
        depth = _deeper(depth)
        return (_LIST, tuple([_canonical(item, depth) for item in value]))
    if isinstance(value, (set, frozenset)):
        depth = _deeper(depth)
        return (_SET, frozenset([_canonical(item, depth) for item in value]))
    if isinstance(value, Mapping):
        return (_MAP, frozenset(_canonical_items(value, _deeper(depth)).items()))
    if value is Ellipsis:  # the compatibility parser reads a bare ``...`` as Ellipsis
        return (_STR, ELLIPSIS_TEXT)
    return (_NEVER, _Never(type(value).__name__))


#: The deepest nesting of containers a canonical form is built for, compared or written out:
#: any value a response parses to is shallower (the parsers refuse ``MAX_NESTING_DEPTH`` levels,
#: spec), and a deeper one handed in by a caller is refused with RecursionError at this same
#: depth whether the layer runs compiled or not -- compiled code has no recursion limit to stop
#: it before the C stack ends, and interpreted code may need ``recursion_headroom`` to get there.
CANONICAL_MAX_DEPTH = MAX_NESTING_DEPTH


def _deeper(depth: int) -> int:
    """``depth + 1``, or RecursionError past :data:`CANONICAL_MAX_DEPTH`."""
    if depth >= CANONICAL_MAX_DEPTH:
        raise RecursionError(f"a value nested deeper than {CANONICAL_MAX_DEPTH} levels")
    return depth + 1


#: The canonical form of a Python-literal ``...`` (scoring-behaviour.md, December clarifications).
ELLIPSIS_TEXT = "..."


def _canonical_items(mapping: Mapping, depth: int) -> dict:
    """Canonical key -> canonical value, in the mapping's order; when two keys become equal
    after canonicalization (``"A"`` and ``"a"``), the later one wins. Keys are therefore
    unique, so nothing downstream depends on the order a set of pairs iterates in."""
    items = {}
    for key, value in mapping.items():
        items[_canonical(key, depth)] = _canonical(value, depth)
    return items


def canonical_equal(left: tuple, right: tuple) -> bool:
    """Equality of canonical values; a set equals a list holding the same distinct items."""
    return _equal(left, right, 0)


def _equal(left: tuple, right: tuple, depth: int) -> bool:
    if left[0] == _SET and right[0] == _LIST:
        left, right = right, left
    if left[0] == _LIST and right[0] == _SET:
        items = left[1]
        return len(set(items)) == len(items) and frozenset(items) == right[1]
    if left[0] != right[0]:
        return False
    if left[0] == _LIST:
        if len(left[1]) != len(right[1]):
            return False
        depth = _deeper(depth)
        # a loop, not all(...): compiled, a generator would be built for every list compared
        for a, b in zip(left[1], right[1], strict=True):  # noqa: SIM110
            if not _equal(a, b, depth):
                return False
        return True
    if left[0] == _MAP:
        left_map, right_map = dict(left[1]), dict(right[1])
        if left_map.keys() != right_map.keys():
            return False
        depth = _deeper(depth)
        for key, value in left_map.items():  # noqa: SIM110 (as above)
            if not _equal(value, right_map[key], depth):
                return False
        return True
    return left == right


def to_plain(canon: tuple) -> Any:
    """A JSON-friendly rendering of a canonical value, for display."""
    return _plain(canon, 0)


def _plain(canon: tuple, depth: int) -> Any:
    tag = canon[0]
    if tag == "null":
        return None
    if tag in (_BOOL, _NUM, _STR):
        return canon[1]
    if tag == _LIST:
        depth = _deeper(depth)
        return [_plain(item, depth) for item in canon[1]]
    if tag == _SET:
        depth = _deeper(depth)
        return {"set": sorted([_plain(item, depth) for item in canon[1]], key=repr)}
    if tag == _MAP:
        depth = _deeper(depth)
        return {
            json.dumps(_plain(k, depth), ensure_ascii=False) if k[0] != _STR else k[1]: _plain(v, depth)
            for k, v in sorted(canon[1], key=repr)
        }
    return repr(canon[1])


def canonical_text(canon: tuple | None) -> str:
    """Compact JSON text of a canonical value ('' when there is none).

    A string or a plain number -- most answers -- is written directly, as ``json.dumps`` writes
    it (the same C string encoder, ``int``/``float`` repr): every wrong answer's reason needs two
    of these, and an encoder set up per call cost more than the comparison itself."""
    if canon is None:
        return ""
    tag = canon[0]
    if tag == _STR:
        return _json_string(canon[1])
    if tag == _NUM:
        kind = type(canon[1])
        if kind is int:
            return int.__repr__(canon[1])
        if kind is float:  # finite: a non-finite number is canonically _NEVER
            return float.__repr__(canon[1])
    return _PLAIN_ENCODER.encode(to_plain(canon))


#: What ``json.dumps(text, ensure_ascii=False)`` writes for a string.
_json_string = json.encoder.encode_basestring
#: ``json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)``, its encoder made once
#: (``json.dumps`` builds one per call when given options).
_PLAIN_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=repr)


class AnswerResult(NamedTuple):
    """How the predicted answer was read and compared with the ground truth."""

    reward: float
    parse_ok: bool  # answer_gt is a mapping with a value
    source: str  # ANSWER_FROM_MAPPING or ANSWER_FROM_WHOLE_RESPONSE
    predicted: Any  # the raw predicted value (a string for the whole response)
    predicted_canonical: tuple | None
    ground_truth_canonical: tuple | None
    reason: str

    @property
    def correct(self) -> bool:
        return self.reward == 1.0

    @property
    def predicted_text(self) -> str:
        return canonical_text(self.predicted_canonical)

    @property
    def ground_truth_text(self) -> str:
        return canonical_text(self.ground_truth_canonical)


def score_answer(predicted: Any, source: str, answer_gt: Any) -> AnswerResult:
    """Compare a predicted answer value with ``answer_gt`` (``{"type", "value"}``)."""
    if not is_mapping(answer_gt) or "value" not in answer_gt:
        return AnswerResult(0.0, False, source, predicted, None, None, "answer_gt has no value")
    truth = answer_gt["value"]
    kind = type(truth)
    if kind is type(predicted) and (kind is int or kind is str):
        # Fast path for the common scalar cases; the same rule as the general path.
        return _compared(predicted, source, canonical(predicted), canonical(truth))
    try:
        return _compare_general(predicted, source, truth)
    except RecursionError:  # deeply nested values: retry once with room to recurse
        try:
            with recursion_headroom():
                return _compare_general(predicted, source, truth)
        except RecursionError:
            return AnswerResult(0.0, True, source, predicted, None, None, "answer nested too deeply to compare")


def _compare_general(predicted: Any, source: str, truth: Any) -> AnswerResult:
    truth_canon = canonical(truth)
    if isinstance(predicted, str) and not isinstance(truth, str):
        parsed = parse_literal(predicted)
        if not isinstance(parsed, Literal):
            return AnswerResult(
                0.0, True, source, predicted, canonical(predicted), truth_canon,
                f"predicted text is not a {type(truth).__name__} value ({parsed.message})",
            )
        predicted = parsed.value
    return _compared(predicted, source, canonical(predicted), truth_canon)


def _compared(predicted: Any, source: str, predicted_canon: tuple, truth_canon: tuple) -> AnswerResult:
    if canonical_equal(predicted_canon, truth_canon):
        return new_record(AnswerResult, (1.0, True, source, predicted, predicted_canon, truth_canon, ""))
    reason = f"{_clip(canonical_text(predicted_canon))} != {_clip(canonical_text(truth_canon))}"
    return new_record(AnswerResult, (0.0, True, source, predicted, predicted_canon, truth_canon, reason))


_CLIP_CHARS = 60


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP_CHARS else text[: _CLIP_CHARS - 1] + "…"
