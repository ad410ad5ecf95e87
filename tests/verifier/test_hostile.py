"""Hostile responses: never an exception, zero rewards and flags, work linear in the length.

Linearity is checked by counting the extractor's scanning steps, not by timing.
"""

from __future__ import annotations

import pytest
from scoring_fixtures import instance

from scoring import score_trace_response
from scoring.verifier import extraction as ex
from scoring.verifier import literals

KWARGS = instance("bbox", [0, 0, 10, 10])
FINAL = '{"answer": 7, "annotation": [0, 0, 10, 10]}'


class CountingPattern:
    """Delegates to a compiled pattern and counts every step it is asked to take."""

    def __init__(self, pattern, counter):
        self.pattern, self.counter = pattern, counter

    def _count(self, result):
        self.counter[0] += 1
        return result

    def search(self, *args):
        return self._count(self.pattern.search(*args))

    def match(self, *args):
        return self._count(self.pattern.match(*args))

    def finditer(self, *args):
        for item in self.pattern.finditer(*args):
            self.counter[0] += 1
            yield item


@pytest.fixture
def steps(monkeypatch):
    counter = [0]
    patterns = [
        (ex, "_SCAN_EVENT"), (ex, "_STRING_REST"), (ex, "_MATCHER_EVENT"), (ex, "_INFO_STRING"), (literals, "_QUOTE"),
    ]
    for module, name in patterns:
        monkeypatch.setattr(module, name, CountingPattern(getattr(module, name), counter))
    return counter


HOSTILE = {
    "unmatched opening braces": lambda n: "{" * n,
    "spaced opening braces": lambda n: "{ " * n,
    "nested and closed": lambda n: "{" * n + "}" * n,
    "brace quote pairs": lambda n: '{"' * n,
    "escaped quotes and braces": lambda n: '\\"{' * n + "}",
    "merging trajectories": lambda n: '{"a": "{\\"", ' * n + '"answer": 7}',
    "closing braces": lambda n: "}" * n,
    "code fences": lambda n: "```" * n,
    "one-line fences with an info string": lambda n: "```json " * n,
    "one-line fenced objects": lambda n: '```json {"answer": 7}```' * n,
    "one-line fences holding braces": lambda n: "```py {```" * n + FINAL,
    "info words and blanks": lambda n: "```" + "json \t" * n + "```",
    "unclosed one-line fence": lambda n: '```json {"answer": ' * n,
    "answer tags": lambda n: "<answer>" * n,
    "quotes": lambda n: '"' * n + FINAL,
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_input_scores_without_raising_in_linear_steps(name, steps):
    make = HOSTILE[name]
    counts = []
    for size in (4000, 8000):
        steps[0] = 0
        result = score_trace_response(response=make(size), **KWARGS)
        assert 0.0 <= result["overall"] <= 1.0
        counts.append(steps[0])
    assert counts[1] <= 2.2 * counts[0] + 50, counts


@pytest.mark.parametrize(
    "response",
    [
        "{" * 100_000,
        '{"answer": 7, "annotation": ' + "[" * 1200 + "]" * 1200 + "}",
        '{"answer": ' + "9" * 5000 + ', "annotation": [0, 0, 10, 10]}',
        "{'answer': " + "(" * 3000 + ")" * 3000 + "}",
        "\x00" * 1000,
        "\ud800\udfff" * 100,
        "word " * 200_000,
        # one pass over the blanks: a backtracking info-string pattern took minutes here
        "```" + " \t" * 100_000 + "x```",
        "```json" + " " * 200_000 + '{"answer": 7}```',
    ],
    ids=["braces", "deep-annotation", "digits", "deep-python", "nul", "surrogates", "megabyte", "fence-blanks",
         "fence-info-blanks"],
)
def test_hostile_response_gives_zero_rewards_not_exceptions(response):
    result = score_trace_response(response=response, **KWARGS)
    assert result["annotation_reward"] == 0.0
    assert result["format"] == 0.0 or result["format_json_ok"] == 1.0


def test_nesting_of_1000_levels_is_a_parse_failure_and_999_is_not():
    assert isinstance(literals.parse_literal("[" * 1000 + "]" * 1000), literals.LiteralError)
    parsed = literals.parse_literal("[" * 999 + "]" * 999)
    assert isinstance(parsed, literals.Literal)


def test_nul_bytes_and_surrogates_around_a_valid_object():
    result = score_trace_response(response="\x00\ud800 " + FINAL, **KWARGS)
    assert result["overall"] == 1.0 and result["format"] == 1.0


def test_hostile_prose_never_hides_the_final_object():
    for prose in ("[" * 5000, "{" * 5000, '"' * 5001, "```" * 101, "<answer>" * 100):
        result = score_trace_response(response=prose + "\n" + FINAL, **KWARGS)
        assert result["overall"] == 1.0 and result["format"] == 1.0, prose[:10]


def test_python_literal_text_with_invalid_escapes_does_not_warn(recwarn):
    # ast warns about "\o"; model text is not our code, so nothing may leak into the user's log.
    result = score_trace_response(response="{'answer': 7, 'annotation': [0, 0, 10, 10], 'note': '\\o'}", **KWARGS)
    assert result["format"] == 0.0 and result["answer_reward"] == 1.0
    assert not [w for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]


class _Unprintable:
    def __str__(self):
        raise RuntimeError("no text")


def _deep_list(levels: int):
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "response", [_Unprintable(), _deep_list(100_000), b"\xff\xfe", 7], ids=["str-raises", "deep-list", "bytes", "int"]
)
def test_a_response_that_is_not_text_never_raises(response):
    result = score_trace_response(response=response, **KWARGS)
    assert 0.0 <= result["overall"] <= 1.0


@pytest.mark.parametrize("field", ["answer_gt", "annotation_gt", "reward_contract", "image_size", "metadata"])
def test_caller_values_nested_200000_deep_never_crash(field):
    # The compiled layers do not count towards Python's recursion limit, so any recursion
    # over a caller's value there would overflow the C stack: this must stay a clean result.
    deep = _deep_list(200_000)
    kwargs = dict(KWARGS)
    kwargs[field] = {"type": "bbox", "value": deep, "width": deep, "image_size": deep} if field != "image_size" else deep
    result = score_trace_response(response=FINAL, **kwargs)
    assert 0.0 <= result["overall"] <= 1.0
