"""scoring.rewards reads numbers in linear time: hostile inputs scan each character a bounded
number of times, and the token pattern has no nested unbounded repeat."""

from __future__ import annotations

import math
import re
import signal
from contextlib import contextmanager

import pytest
from reward_strategies import task

from scoring.rewards import READINGS, contains, exact_match, last_number, number_reading, read_last_number

HOSTILE_CHARS = 200_000


@contextmanager
def hang_guard(seconds=10):
    """Turn a catastrophic backtrack into a failure instead of a hung run (POSIX only)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def _fail(signum, frame):
        raise AssertionError(f"did not finish within {seconds} s: not linear")

    previous = signal.signal(signal.SIGALRM, _fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


HOSTILE = {
    "comma_ones": ("1," * (HOSTILE_CHARS // 2), 1.0),
    "digits": ("1" * HOSTILE_CHARS, math.inf),
    "bad_groups": ("1,23" * (HOSTILE_CHARS // 4), 23.0),
    "good_groups_then_digit": ("1" + ",234" * (HOSTILE_CHARS // 4) + "5", 2345.0),
    "dots": (".5" * (HOSTILE_CHARS // 2), 0.5),  # one number: each later "5" follows "5."
    "exponents": ("1e" * (HOSTILE_CHARS // 2) + "1", 1.0),
    "signs": ("-" * HOSTILE_CHARS + "5", -5.0),
    "currency": ("$-" * (HOSTILE_CHARS // 2) + "5", -5.0),
    "spaces_before_sign": ("3" + " " * HOSTILE_CHARS + "-5", -5.0),
    "ellipses": ("." * HOSTILE_CHARS + "5", 5.0),
    "versions": ("1." * (HOSTILE_CHARS // 2) + "1", 1.1),
    "unicode_groups": ("\uff11" + ",\uff12\uff13\uff14" * (HOSTILE_CHARS // 4) + "5", 2345.0),
    "mixed": ("1,2.3e-4,5$6" * (HOSTILE_CHARS // 12), 6.0),
}


class CountingPattern:
    """Wraps a compiled pattern and counts the characters handed to it."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.chars = 0
        self.calls = 0

    def search(self, text, pos=0, endpos=None):
        self.calls += 1
        self.chars += len(text)
        return self.pattern.search(text, pos) if endpos is None else self.pattern.search(text, pos, endpos)

    def finditer(self, text, pos=0, endpos=None):
        self.calls += 1
        end = len(text) if endpos is None else endpos
        self.chars += end - pos
        return self.pattern.finditer(text, pos, end)


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_scan_each_character_a_bounded_number_of_times(name, reading, monkeypatch):
    text, want = HOSTILE[name]
    assert len(text) >= HOSTILE_CHARS // 2
    run = CountingPattern(number_reading._LAST_RUN_REVERSED)
    token = CountingPattern(number_reading.TOKENS_BY_READING[reading])
    monkeypatch.setattr(number_reading, "_LAST_RUN_REVERSED", run)
    monkeypatch.setitem(number_reading.TOKENS_BY_READING, reading, token)  # the scorers read the same table
    with hang_guard():
        read = read_last_number(text, reading=reading)
        assert read is not None and read.value == want
        # Each of the scan's two passes sees each character at most once.
        assert run.calls == 1 and token.calls == 1
        assert run.chars + token.chars <= 2 * len(text)
        score = last_number()(task("7"), text)
        assert score == 0.0
        for factory in (exact_match, contains):
            assert factory()(task("zzz"), text) == 0.0


def test_hostile_gold_is_linear_too():
    with hang_guard():
        assert last_number()(task("1," * (HOSTILE_CHARS // 2)), "1") == 1.0
        with pytest.raises(ValueError, match="not finite"):
            last_number()(task("9" * HOSTILE_CHARS), "1")


@pytest.mark.parametrize("reading", READINGS)
def test_token_pattern_has_no_nested_unbounded_quantifier(reading):
    # The usual catastrophic shape is (x+)+ or (x*)*: a repeated group that itself
    # holds an unbounded repeat of overlapping text. The thousands group repeats a
    # fixed-width ",ddd", which cannot overlap itself.
    source = number_reading.TOKENS_BY_READING[reading].pattern
    assert re.search(r"\([^()]*[+*]\)[+*]", source) is None
