"""How the simple scorers read numbers: agentdescent's grammar, detail for detail, and the signed
reading (``scoring-behaviour.md``, "Simple scorers"). Linear in the length of the text: no
pattern here can backtrack catastrophically, and the last number is found by tokenising only the
run of number characters around the last digit."""

from __future__ import annotations

import functools
import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .text import as_text, for_task, quoted

#: How last_number reads a number. The default is agentdescent.rewards 0.7.0's
#: reading, detail for detail, so recomputed rewards equal the logged ones ...
READING_AGENTDESCENT = "agentdescent"
#: ... and this one is the same grammar, except that a sign in front of a currency
#: symbol signs the number ("-$18" is -18, not 18) and so does the Unicode minus
#: sign ("x = −5" is -5, not 5), under the same rule for what may precede a sign.
READING_SIGNED = "signed"
READINGS = (READING_AGENTDESCENT, READING_SIGNED)
DEFAULT_READING = READING_AGENTDESCENT

#: U+2212 MINUS SIGN: never a sign in the default reading, a minus in READING_SIGNED.
UNICODE_MINUS = "\u2212"
#: READING_SIGNED lets one of these stand between a sign and the digits. Neither
#: reading makes a currency symbol part of a number otherwise: "$18" reads 18.
CURRENCY_SYMBOLS = "$£€¥"
#: A "-" or "+" right after an ASCII letter, a digit or one of these is not a sign:
#: "pages 3-4" reads 4, "COVID-19" reads 19, "(2)-1" reads 1.
SIGN_BREAKING_BRACKETS = ")]}"
_NEGATIVE_SIGNS = frozenset("-" + UNICODE_MINUS)

#: Golds repeat across calls (one per task), so their last number is cached ...
GOLD_CACHE_SIZE = 4096
#: ... unless the gold is so long that keeping it alive would cost real memory.
GOLD_CACHE_MAX_CHARS = 4096


def _token_pattern(signs: str, currency: str) -> re.Pattern[str]:
    """One number token of the grammar in ``scoring-behaviour.md`` (``\\d`` is any Unicode digit).

    ``signs`` may be a number's sign; ``currency`` may stand between the sign and
    the digits. Linear: every repeat is of a fixed-width or digit-only piece that
    a greedy match ends at a non-digit, so a start position is tried in O(length
    of its match) and a failed start costs O(1); no nested unbounded quantifier.
    """
    between = f"[{re.escape(currency)}]?" if currency else ""
    return re.compile(
        rf"""
        (?<!\d)(?<!\d\.)                # never starts right after a digit, or a digit and a point
        (?:(?<![A-Za-z\d{re.escape(SIGN_BREAKING_BRACKETS)}])(?P<sign>[{re.escape(signs)}]){between})?
        (?P<num>
            (?: (?:\d{{1,3}}(?:,\d{{3}})+ | \d+) (?:\.\d*)?    # 12  12.  12.5  1,234  1,234.5
              | (?<![.\d]) \.\d+                             # .5, not after a point or a digit
            )
            (?:[eE][-+]?\d+)?                                # 1e-05  1.e-3
        )
        (?!\d)                          # never ends right before a digit
        """,
        re.VERBOSE,
    )


TOKENS_BY_READING: dict[str, re.Pattern[str]] = {
    READING_AGENTDESCENT: _token_pattern("-+", ""),
    READING_SIGNED: _token_pattern("-+" + UNICODE_MINUS, CURRENCY_SYMBOLS),
}
# The run of characters that can belong to number tokens (of either reading)
# ending at the last digit, matched on the *reversed* text: only this window
# needs tokenising to find the last number (see last_number_of).
_LAST_RUN_REVERSED = re.compile(r"\d[\d" + re.escape(",.eE+-" + UNICODE_MINUS + CURRENCY_SYMBOLS) + "]*")


@dataclass(frozen=True, slots=True)
class NumberRead:
    """A number found in a text: its value and where it is (``text[start:end]`` is ``text``)."""

    value: float
    start: int
    end: int
    text: str


def check_reading(reading: Any) -> str:
    if not isinstance(reading, str) or reading not in TOKENS_BY_READING:
        raise ValueError(f"reading must be one of {list(READINGS)}, got {quoted(reading)}")
    return reading


def _token_number(match: re.Match[str]) -> tuple[float, int, int]:
    """``(value, start, end)`` of a token match; a too-large value becomes ±inf (never raises)."""
    num = match.group("num")
    # float() reads every Unicode decimal digit, has no digit limit (unlike int())
    # and overflows to inf.
    value = float(num.replace(",", "")) if "," in num else float(num)
    if match.group("sign") in _NEGATIVE_SIGNS:
        value = -value
    return value, match.start(), match.end()


def last_number_of(text: str, token: re.Pattern[str]) -> tuple[float, int, int] | None:
    """The last number in ``text`` as ``(value, start, end)``, or ``None``.

    Finds the last digit from the end, then tokenises only the run of number
    characters around it: O(length of that run) beyond two C-speed scans, and the
    same answer as tokenising the whole text (``read_numbers(text)[-1]``). The
    run starts after a character no token holds, so no token of the full scan
    crosses its start; the lookbehinds still see the text before it.
    """
    run = _LAST_RUN_REVERSED.search(text[::-1])
    if run is None:
        return None
    size = len(text)
    end = size - run.start()
    if end < size and text[end] == ".":  # "12." is a number: its point follows the last digit
        end += 1
    # The run's first digit always starts a token (nothing before it in the run
    # is a digit), so the window holds at least one token.
    (last,) = deque(token.finditer(text, size - run.end(), end), maxlen=1)
    return _token_number(last)


def _gold_reader(token: re.Pattern[str]) -> Callable[[str], tuple[float, int, int] | None]:
    @functools.lru_cache(maxsize=GOLD_CACHE_SIZE)
    def cached_last_number(text: str) -> tuple[float, int, int] | None:
        return last_number_of(text, token)

    return cached_last_number


#: Each reading's last number of a gold, cached (see GOLD_CACHE_MAX_CHARS).
_GOLD_READERS = {reading: _gold_reader(token) for reading, token in TOKENS_BY_READING.items()}


def gold_number(gold: str, task_id: Any, reading: str) -> tuple[float, int, int]:
    """The gold's last number; none, or a non-finite last one, is a configuration error."""
    if len(gold) <= GOLD_CACHE_MAX_CHARS:
        read = _GOLD_READERS[reading](gold)
    else:
        read = last_number_of(gold, TOKENS_BY_READING[reading])
    if read is None:
        raise ValueError(
            f"{for_task(task_id)}gold {quoted(gold)} holds no number, so the last number can "
            "never match: a configuration error (wrong gold_key or a non-numeric answer column?)"
        )
    if not math.isfinite(read[0]):
        raise ValueError(
            f"{for_task(task_id)}the last number in gold, {quoted(gold[read[1] : read[2]])}, "
            f"is not finite ({read[0]!r}), so the gold has no number (there is no fallback to an "
            "earlier one)"
        )
    return read


def number_read(text: str, read: tuple[float, int, int]) -> NumberRead:
    value, start, end = read
    return NumberRead(value, start, end, text[start:end])


def read_last_number(text: str | None, *, reading: str = DEFAULT_READING) -> NumberRead | None:
    """The last number in ``text`` exactly as ``last_number(reading=...)`` reads it, or ``None``.

    A value too large for a float is ``±inf``: the scorers then treat the text
    as holding no number (they never fall back to an earlier one).
    """
    text = as_text(text)
    read = last_number_of(text, TOKENS_BY_READING[check_reading(reading)])
    return None if read is None else number_read(text, read)


def read_numbers(text: str | None, *, reading: str = DEFAULT_READING) -> list[NumberRead]:
    """Every number in ``text``, left to right (for highlighting; the scorers need only the last)."""
    text = as_text(text)
    token = TOKENS_BY_READING[check_reading(reading)]
    return [number_read(text, _token_number(match)) for match in token.finditer(text)]


__all__ = [
    "CURRENCY_SYMBOLS",
    "DEFAULT_READING",
    "GOLD_CACHE_MAX_CHARS",
    "GOLD_CACHE_SIZE",
    "READINGS",
    "READING_AGENTDESCENT",
    "READING_SIGNED",
    "SIGN_BREAKING_BRACKETS",
    "TOKENS_BY_READING",
    "UNICODE_MINUS",
    "NumberRead",
    "check_reading",
    "gold_number",
    "last_number_of",
    "number_read",
    "read_last_number",
    "read_numbers",
]
