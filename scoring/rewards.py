"""The simple scorers: ``exact_match``, ``contains``, ``last_number``, ``numeric_close``.

A reward is ``(task, output) -> float`` in [0, 1]. Each public scorer here is a
factory: call it (with options) to get the scorer, which reads the expected
answer from ``task.meta[gold_key]`` (``"gold"`` by default).

Everyone writes these four and gets the same details wrong, so the details are
pinned down here (``simple-rewards.txt`` and ``scoring-behaviour.md``):

* the gold is read as ``str(meta[gold_key])``; a missing key raises ``KeyError``
  naming the task and the key; an output of ``None`` is the empty string;
* ``normalise`` case-folds, collapses white space and strips surrounding white
  space and ``. ! ? " '`` -- otherwise a trailing period scores 0 and looks like
  a reasoning failure;
* ``last_number`` reads the gold the same way as the output, so a GSM8K worked
  solution ending in ``#### 72`` matches ``The answer is 72.``; a gold with no
  number (or a non-finite one) is a configuration error and raises
  ``ValueError`` rather than scoring 0 forever.

Every ``explain_*`` function runs the very same core as its scorer (the scorer
is the explanation's ``score`` without the bookkeeping), so a playground UI can
show *why* a score is what it is without ever disagreeing with the scorer.

Nothing here imports a UI or a third-party package; all text handling is linear
in the length of the text (no regex in this module can backtrack
catastrophically), because rewards run on the hot path of every evaluation.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, SimpleNamespace
from typing import Any

__all__ = [
    "CURRENCY_SYMBOLS",
    "DEFAULT_GOLD_KEY",
    "DEFAULT_TOLERANCE",
    "MINUS_SIGNS",
    "REWARD_RANGE_SLACK",
    "SCORERS",
    "SOLVED_THRESHOLD",
    "STRIPPED_PUNCTUATION",
    "NumberRead",
    "NumericExplanation",
    "RewardContractError",
    "ScorerInfo",
    "TextExplanation",
    "checked",
    "coerce_reward",
    "contains",
    "exact_match",
    "explain",
    "explain_contains",
    "explain_exact_match",
    "explain_last_number",
    "explain_numeric_close",
    "is_solved",
    "last_number",
    "normalise",
    "numeric_close",
    "read_last_number",
    "read_numbers",
    "score_rows",
    "scorer_names",
]

# --------------------------------------------------------------------------- constants

#: Where every scorer looks for the expected answer (the reflector looks there too).
DEFAULT_GOLD_KEY = "gold"
#: numeric_close's default relative tolerance: 1 %.
DEFAULT_TOLERANCE = 0.01
#: A score at or above this counts as solved (the engine's default).
SOLVED_THRESHOLD = 0.999
#: How far outside [0, 1] a result may stray (float noise) before it breaks the contract.
REWARD_RANGE_SLACK = 1e-6

#: Besides white space, normalisation strips these from both ends of the text.
STRIPPED_PUNCTUATION = ".!?\"'"
#: Skipped in front of a number: "$18" reads 18.
CURRENCY_SYMBOLS = "$£€"
#: Characters read as a minus sign (ASCII hyphen-minus and U+2212 MINUS SIGN).
MINUS_SIGNS = "-\u2212"
#: A sign right after one of these (or after a digit across spaces) is a binary
#: operator, not a sign: "pages 3-4" reads 4, "(2)-1" reads 1.
_OPERAND_ENDS = ")]}%_"

#: Golds repeat across calls (one per task), so their last number is cached ...
_GOLD_CACHE_SIZE = 4096
#: ... unless the gold is so long that keeping it alive would cost real memory.
_GOLD_CACHE_MAX_CHARS = 4096
#: Texts quoted in reasons and error messages are cut to this many characters.
_QUOTE_LIMIT = 60
#: Integral floats below this magnitude are shown without ".0" in reasons.
_INTEGRAL_DISPLAY_LIMIT = 1e16

_DIGITS = "0123456789"
_WORD_STRIP = " " + STRIPPED_PUNCTUATION

# One number token. ASCII digits only. No nested quantifier can retry the same
# characters more than a bounded number of times, so matching is linear:
#   sign / currency   "-5", "-$5", "$-5", "$5"
#   thousands         a lead group of 1-3 digits and groups of exactly three
#                     ("1,234,567"; "12,34" is two numbers, 12 and 34)
#   decimal part      "3.25"; a leading point ".5" only when no digit precedes it
#   exponent          "1e-3", "2.5E+4"
_SIGN_CLASS = "[" + re.escape("+" + MINUS_SIGNS) + "]"
_CURRENCY_CLASS = "[" + re.escape(CURRENCY_SYMBOLS) + "]"
_TOKEN = re.compile(
    rf"""
    (?:
        (?P<sign>{_SIGN_CLASS}){_CURRENCY_CLASS}?
      | {_CURRENCY_CLASS}(?P<csign>{_SIGN_CLASS})?
    )?
    (?P<num>
        (?:
            (?: [0-9]{{1,3}}(?:,[0-9]{{3}})+(?![0-9]) | [0-9]+ )
            (?:\.[0-9]+)?
          | (?<![0-9])\.[0-9]+
        )
        (?:[eE][-+]?[0-9]+)?
    )
    """,
    re.VERBOSE,
)
# The run of characters that can belong to number tokens ending at the last
# digit, matched on the *reversed* text: only this window needs tokenising to find
# the last number, because a character outside the set can never sit inside a
# token, so tokenising from there gives the same tokens as tokenising from 0.
_LAST_RUN_REVERSED = re.compile(
    "[0-9][" + re.escape("0123456789,.eE+" + MINUS_SIGNS + CURRENCY_SYMBOLS) + "]*"
)


# --------------------------------------------------------------------------- errors


class RewardContractError(ValueError):
    """A scorer returned something that is not a number in [0, 1].

    Raised immediately because a scorer on the wrong scale (accuracy out of 100,
    say) makes every task look solved at the 0.999 threshold: nothing is learned
    and the reported reward looks large and healthy.
    """


# --------------------------------------------------------------------------- small helpers


def _quote(value: Any, limit: int = _QUOTE_LIMIT) -> str:
    """``repr`` cut to ``limit`` characters, and never raising (huge ints, odd objects)."""
    try:
        text = repr(value)
    except Exception:  # a message must never fail
        if isinstance(value, int):
            return f"<int of {value.bit_length()} bits>"
        return f"<unprintable {type(value).__name__}>"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _fmt(value: float) -> str:
    """A number as a person would write it: 72, not 72.0; full precision otherwise."""
    if math.isfinite(value) and value.is_integer() and abs(value) < _INTEGRAL_DISPLAY_LIMIT:
        return str(int(value))
    return repr(value)


def _for_task(task_id: Any) -> str:
    return "" if task_id is None else f"task {_quote(task_id)}: "


def _as_text(output: Any) -> str:
    """The output as text: ``None`` is empty, a non-str is ``str()``-ed."""
    if output is None:
        return ""
    return output if isinstance(output, str) else str(output)


def _gold_text(task: Any, gold_key: str) -> str:
    """``str(task.meta[gold_key])``, or a ``KeyError`` naming the task and the key."""
    meta = task.meta
    missing = f"task {_quote(getattr(task, 'id', None))}: meta has no key {gold_key!r}"
    if meta is None:
        raise KeyError(missing)
    try:
        return str(meta[gold_key])
    except KeyError:
        raise KeyError(missing) from None


def _option_real(value: Any, option: str) -> float:
    """A numeric option as float: real numbers and numeric strings, never bools or None."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{option} must be a number, got {_quote(value)}")
    try:
        if isinstance(value, str):
            return float(value.strip())
        if isinstance(value, numbers.Real):
            return float(value)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"{option} must be a number, got {_quote(value)}") from exc
    raise ValueError(f"{option} must be a number, got {_quote(value)}")


def _check_tolerance(tolerance: Any) -> float:
    value = _option_real(tolerance, "tolerance")
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"tolerance must be a finite number >= 0, got {_quote(tolerance)}")
    return value


def _check_gold_key(gold_key: Any) -> str:
    if not isinstance(gold_key, str):
        raise ValueError(f"gold_key must be a str, got {_quote(gold_key)}")
    return gold_key


def _check_normalise(flag: Any) -> bool:
    if not isinstance(flag, bool):
        raise ValueError(f"normalise must be True or False, got {_quote(flag)}")
    return flag


def _named(reward: Callable[[Any, Any], float], name: str, doc: str) -> Callable[[Any, Any], float]:
    """Give a scorer closure a useful name, so logs and the UI say what it is."""
    reward.__name__ = name
    reward.__qualname__ = name
    reward.__doc__ = doc
    return reward


# --------------------------------------------------------------------------- normalisation


def normalise(text: str | None) -> str:
    """Case-fold, collapse white space runs to one space, strip white space and ``.!?"'`` at the ends.

    Without this a model that ends its answer with a period scores zero, which
    looks like a reasoning failure and is not one. Parentheses, ``;`` and other
    punctuation are kept: ``(A)`` is not ``A``. Idempotent.
    """
    # casefold never produces white space or stripped punctuation, and after the
    # split/join the only white space left is single spaces, so one strip that
    # includes " " removes every mix of white space and punctuation at the ends.
    return " ".join(_as_text(text).casefold().split()).strip(_WORD_STRIP)


# --------------------------------------------------------------------------- number reading


@dataclass(frozen=True, slots=True)
class NumberRead:
    """A number found in a text: its value and where it is (``text[start:end]`` is ``text``)."""

    value: float
    start: int
    end: int
    text: str


def _is_binary_sign(text: str, index: int) -> bool:
    """Whether the sign at ``text[index]`` is a binary operator rather than a sign.

    It is when it directly follows a word character or a closing bracket / percent
    ("3-4", "COVID-19", "(2)-1"), or follows a digit or closing bracket across
    white space ("3 - 4"); "x = -5" and "is -5" keep their sign.
    """
    if index == 0:
        return False
    before = text[index - 1]
    if before.isalnum() or before in _OPERAND_ENDS:
        return True
    if not before.isspace():
        return False
    index -= 2
    while index >= 0 and text[index].isspace():
        index -= 1
    return index >= 0 and (text[index] in _DIGITS or text[index] in _OPERAND_ENDS)


def _token_number(text: str, match: re.Match[str]) -> tuple[float, int, int]:
    """``(value, start, end)`` of a token match; a too-large value becomes ±inf (never raises)."""
    num = match.group("num")
    # float() of a digit string has no digit limit (unlike int()) and overflows to inf.
    value = float(num.replace(",", "")) if "," in num else float(num)
    start = match.start()
    sign = match.group("sign")
    if sign is not None:
        if _is_binary_sign(text, start):
            sign = None
            start += 1
    else:
        sign = match.group("csign")
    if sign is not None and sign in MINUS_SIGNS:
        value = -value
    return value, start, match.end()


def _last_number(text: str) -> tuple[float, int, int] | None:
    """The last number in ``text`` as ``(value, start, end)``, or ``None``.

    Finds the last digit from the end, then tokenises only the run of number
    characters around it: O(length of that run) beyond two C-speed scans, and the
    same answer as tokenising the whole text (``read_numbers(text)[-1]``).
    """
    run = _LAST_RUN_REVERSED.search(text[::-1])
    if run is None:
        return None
    size = len(text)
    # The window ends at the last digit and every digit starts or sits in a
    # token, so the last token exists and holds that digit.
    (last,) = deque(_TOKEN.finditer(text, size - run.end(), size - run.start()), maxlen=1)
    return _token_number(text, last)


@functools.lru_cache(maxsize=_GOLD_CACHE_SIZE)
def _cached_last_number(text: str) -> tuple[float, int, int] | None:
    return _last_number(text)


def _gold_number(gold: str, task_id: Any) -> tuple[float, int, int]:
    """The gold's last number; no number or a non-finite one is a configuration error."""
    read = _cached_last_number(gold) if len(gold) <= _GOLD_CACHE_MAX_CHARS else _last_number(gold)
    if read is None:
        raise ValueError(
            f"{_for_task(task_id)}gold {_quote(gold)} holds no number, so the last number can "
            "never match: a configuration error (wrong gold_key or a non-numeric answer column?)"
        )
    if not math.isfinite(read[0]):
        raise ValueError(
            f"{_for_task(task_id)}the last number in gold, {_quote(gold[read[1] : read[2]])}, "
            f"is not finite ({read[0]!r})"
        )
    return read


def _public(text: str, read: tuple[float, int, int]) -> NumberRead:
    value, start, end = read
    return NumberRead(value, start, end, text[start:end])


def read_last_number(text: str | None) -> NumberRead | None:
    """The last number in ``text`` exactly as ``last_number`` reads it, or ``None``.

    Understands thousands groups of exactly three digits, a leading decimal
    point, exponents, a leading ``$ £ €`` and a sign that is not a binary minus;
    never reads inside another number. A value too large for a float is ``±inf``.
    """
    text = _as_text(text)
    read = _last_number(text)
    return None if read is None else _public(text, read)


def read_numbers(text: str | None) -> list[NumberRead]:
    """Every number in ``text``, left to right (for highlighting; the scorers need only the last)."""
    text = _as_text(text)
    return [_public(text, _token_number(text, match)) for match in _TOKEN.finditer(text)]


# --------------------------------------------------------------------------- explanations


@dataclass(frozen=True, slots=True)
class TextExplanation:
    """Why ``exact_match`` / ``contains`` gave its score.

    ``gold_compared`` / ``output_compared`` are the strings actually compared
    (normalised unless ``normalise`` is False); for ``contains``, ``match_span``
    is where the gold was found in ``output_compared`` (``None`` otherwise).
    """

    scorer: str
    score: float
    gold: str
    output: str
    normalise: bool
    gold_compared: str
    output_compared: str
    match_span: tuple[int, int] | None
    reason: str


@dataclass(frozen=True, slots=True)
class NumericExplanation:
    """Why ``last_number`` / ``numeric_close`` gave its score.

    Spans are in the original texts. ``last_number`` is the ``tolerance`` 0 case.
    ``difference`` is ``|got - want|`` (``None`` without a finite output number)
    and the output scores 1 when ``difference <= allowed_difference``, where
    ``allowed_difference = tolerance * max(1, |want|)``.
    """

    scorer: str
    score: float
    gold: str
    output: str
    gold_number: NumberRead
    output_number: NumberRead | None
    tolerance: float
    allowed_difference: float
    difference: float | None
    reason: str


# --------------------------------------------------------------------------- shared cores


def _text_core(gold: str, output: str, use_normalise: bool, whole: bool) -> tuple[float, str, str, int]:
    """``(score, gold_compared, output_compared, found_at)`` -- the one comparison both use.

    ``whole`` is exact_match (equality); otherwise contains (substring, and an
    empty gold scores 0 because it is "in" everything). ``found_at`` is -1 when
    there is no match.
    """
    if use_normalise:
        gold, output = normalise(gold), normalise(output)
    if whole:
        equal = gold == output
        return (1.0 if equal else 0.0), gold, output, (0 if equal else -1)
    found = output.find(gold) if gold else -1
    return (1.0 if found >= 0 else 0.0), gold, output, found


def _numeric_core(
    gold: str, output: str, tolerance: float, task_id: Any
) -> tuple[float, tuple[float, int, int], tuple[float, int, int] | None, float, float | None]:
    """``(score, gold_read, output_read, allowed, difference)`` -- the one numeric comparison.

    The gold is read first so a broken gold raises whatever the output is. The
    test is ``|got - want| <= tolerance * max(1, |want|)`` in plain float
    arithmetic; tolerance 0 is last_number's exact equality.
    """
    want_read = _gold_number(gold, task_id)
    want = want_read[0]
    allowed = tolerance * max(1.0, abs(want))
    got_read = _last_number(output)
    if got_read is None or not math.isfinite(got_read[0]):
        return 0.0, want_read, got_read, allowed, None
    difference = abs(got_read[0] - want)
    return (1.0 if difference <= allowed else 0.0), want_read, got_read, allowed, difference


def _explain_text(name: str, gold: Any, output: Any, use_normalise: bool) -> TextExplanation:
    gold, output = _as_text(gold), _as_text(output)
    whole = name == "exact_match"
    score, gold_c, output_c, found = _text_core(gold, output, use_normalise, whole)
    what = "normalised " if use_normalise else ""
    if whole:
        relation = "==" if score else "!="
        reason = f"{what}output {_quote(output_c)} {relation} {what}gold {_quote(gold_c)}"
        span = None
    elif not gold_c:
        reason = f"{what}gold is empty: contains scores 0 (an empty gold is in every output)"
        span = None
    elif found >= 0:
        span = (found, found + len(gold_c))
        reason = f"{what}gold {_quote(gold_c)} found at {span[0]}:{span[1]} of the {what}output"
        # An all-digit gold inside a longer number is the classic false positive.
        if gold_c.isdigit() and output_c != gold_c:
            reason += " (a number inside a longer text also counts; prefer last_number for numbers)"
    else:
        span = None
        reason = f"{what}gold {_quote(gold_c)} not in {what}output {_quote(output_c)}"
    return TextExplanation(name, score, gold, output, use_normalise, gold_c, output_c, span, reason)


def _explain_numeric(name: str, gold: Any, output: Any, tolerance: float, task_id: Any) -> NumericExplanation:
    gold, output = _as_text(gold), _as_text(output)
    score, want_read, got_read, allowed, difference = _numeric_core(gold, output, tolerance, task_id)
    want = _public(gold, want_read)
    got = None if got_read is None else _public(output, got_read)
    if got is None:
        reason = "no number in output"
    elif difference is None:
        reason = f"last number in output {got.text} is not finite"
    elif tolerance == 0.0:
        relation = "==" if score else "!="
        reason = f"last number in output {_fmt(got.value)} {relation} {_fmt(want.value)} from gold"
    else:
        relation = "<=" if score else ">"
        reason = (
            f"last number in output {_fmt(got.value)} differs from {_fmt(want.value)} from gold by "
            f"{_fmt(difference)} {relation} allowed {_fmt(allowed)} "
            f"(tolerance {_fmt(tolerance)} x max(1, |{_fmt(want.value)}|))"
        )
    return NumericExplanation(name, score, gold, output, want, got, tolerance, allowed, difference, reason)


def explain_exact_match(gold: Any, output: Any, *, normalise: bool = True) -> TextExplanation:
    """Why ``exact_match(normalise=...)`` scores ``output`` against ``gold`` as it does."""
    return _explain_text("exact_match", gold, output, _check_normalise(normalise))


def explain_contains(gold: Any, output: Any, *, normalise: bool = True) -> TextExplanation:
    """Why ``contains(normalise=...)`` scores ``output`` against ``gold`` as it does."""
    return _explain_text("contains", gold, output, _check_normalise(normalise))


def explain_last_number(gold: Any, output: Any, *, task_id: Any = None) -> NumericExplanation:
    """Why ``last_number()`` scores as it does; raises ``ValueError`` exactly when it would."""
    return _explain_numeric("last_number", gold, output, 0.0, task_id)


def explain_numeric_close(
    gold: Any, output: Any, *, tolerance: float = DEFAULT_TOLERANCE, task_id: Any = None
) -> NumericExplanation:
    """Why ``numeric_close(tolerance=...)`` scores as it does; raises ``ValueError`` exactly when it would."""
    return _explain_numeric("numeric_close", gold, output, _check_tolerance(tolerance), task_id)


# --------------------------------------------------------------------------- the scorers


def exact_match(*, gold_key: str = DEFAULT_GOLD_KEY, normalise: bool = True) -> Callable[[Any, Any], float]:
    """1.0 when the output equals the gold (after normalisation by default). For labels, short answers."""
    key, use_normalise = _check_gold_key(gold_key), _check_normalise(normalise)

    def reward(task: Any, output: Any) -> float:
        return _text_core(_gold_text(task, key), _as_text(output), use_normalise, True)[0]

    return _named(reward, "exact_match", exact_match.__doc__ or "")


def contains(*, gold_key: str = DEFAULT_GOLD_KEY, normalise: bool = True) -> Callable[[Any, Any], float]:
    """1.0 when the gold appears anywhere in the output. Easy to fool: "2" is inside "12".

    An empty gold scores 0: it would otherwise be found in every output.
    """
    key, use_normalise = _check_gold_key(gold_key), _check_normalise(normalise)

    def reward(task: Any, output: Any) -> float:
        return _text_core(_gold_text(task, key), _as_text(output), use_normalise, False)[0]

    return _named(reward, "contains", contains.__doc__ or "")


def last_number(*, gold_key: str = DEFAULT_GOLD_KEY) -> Callable[[Any, Any], float]:
    """1.0 when the output's last number equals the gold's last number. For arithmetic word problems.

    The gold is read the same way, so "72", "#### 72" and a whole worked solution
    all work. A gold with no (finite) number raises ``ValueError``; a non-finite
    last number in the output scores 0.
    """
    key = _check_gold_key(gold_key)

    def reward(task: Any, output: Any) -> float:
        return _numeric_core(_gold_text(task, key), _as_text(output), 0.0, task.id)[0]

    return _named(reward, "last_number", last_number.__doc__ or "")


def numeric_close(
    *, tolerance: float = DEFAULT_TOLERANCE, gold_key: str = DEFAULT_GOLD_KEY
) -> Callable[[Any, Any], float]:
    """``last_number`` within a relative tolerance: ``|got - want| <= tolerance * max(1, |want|)``.

    For rounded or derived figures; near zero the tolerance is absolute.
    """
    tol, key = _check_tolerance(tolerance), _check_gold_key(gold_key)

    def reward(task: Any, output: Any) -> float:
        return _numeric_core(_gold_text(task, key), _as_text(output), tol, task.id)[0]

    return _named(reward, "numeric_close", numeric_close.__doc__ or "")


# --------------------------------------------------------------------------- the contract


def coerce_reward(value: Any, *, task: Any = None, name: str | None = None) -> float:
    """A scorer's result as a float in [0, 1], or ``RewardContractError`` naming the task and value.

    ``True``/``False`` and numeric strings such as ``"0.5"`` are read as numbers;
    up to ``REWARD_RANGE_SLACK`` outside [0, 1] is float noise and is clipped.
    NaN, anything further out, and non-numbers break the contract.
    """
    number: float | None = None
    try:
        if isinstance(value, str):
            number = float(value.strip())
        elif not isinstance(value, (bytes, bytearray, complex)) and not (
            isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real)
        ):
            number = float(value)
    except (TypeError, ValueError):
        number = None
    except OverflowError:  # an int beyond float range
        number = math.inf
    if (
        number is None
        or math.isnan(number)
        or not (-REWARD_RANGE_SLACK <= number <= 1.0 + REWARD_RANGE_SLACK)
    ):
        who = f"reward {name!r}" if name else "reward"
        problem = (
            "is not a number" if number is None else "is NaN" if math.isnan(number) else "is outside [0, 1]"
        )
        raise RewardContractError(
            f"{who} returned {_quote(value)} for task {_quote(getattr(task, 'id', None))}: it {problem}; "
            "a reward must be a number in [0, 1] (normalise before returning)"
        )
    return min(1.0, max(0.0, number))


def checked(scorer: Callable[[Any, Any], Any], *, name: str | None = None) -> Callable[[Any, Any], float]:
    """Wrap any scorer so every result is checked against the contract (see ``coerce_reward``).

    The engine treats >= 0.999 as solved, so a scorer on the wrong scale would
    make every task look solved; this fails loudly on the first bad result.
    """
    if not callable(scorer):
        raise TypeError(f"checked() needs a callable scorer, got {_quote(scorer)}")
    label = name if name is not None else getattr(scorer, "__name__", None) or type(scorer).__name__

    @functools.wraps(scorer)
    def reward(task: Any, output: Any) -> float:
        return coerce_reward(scorer(task, output), task=task, name=label)

    return reward


def is_solved(score: float, solved_threshold: float = SOLVED_THRESHOLD) -> bool:
    """Whether ``score >= solved_threshold``. Graded scorers (ROUGE, judges) need a lower threshold.

    The threshold must be a finite number in [0, 1]; a NaN score is never solved.
    """
    threshold = _option_real(solved_threshold, "solved_threshold")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(
            f"solved_threshold must be a finite number in [0, 1], got {_quote(solved_threshold)}"
        )
    return float(score) >= threshold


# --------------------------------------------------------------------------- registry (for the UI)


@dataclass(frozen=True, slots=True)
class ScorerInfo:
    """One simple scorer as a UI lists it: factory, explanation and its options."""

    name: str
    factory: Callable[..., Callable[[Any, Any], float]]
    explain: Callable[..., TextExplanation | NumericExplanation]
    options: tuple[str, ...]
    summary: str


SCORERS: Mapping[str, ScorerInfo] = MappingProxyType(
    {
        "exact_match": ScorerInfo(
            "exact_match", exact_match, explain_exact_match, ("normalise",), "output equals gold"
        ),
        "contains": ScorerInfo(
            "contains", contains, explain_contains, ("normalise",), "gold appears anywhere in output"
        ),
        "last_number": ScorerInfo(
            "last_number", last_number, explain_last_number, (), "the last number in the output matches gold"
        ),
        "numeric_close": ScorerInfo(
            "numeric_close",
            numeric_close,
            explain_numeric_close,
            ("tolerance",),
            "last number within a relative tolerance",
        ),
    }
)


def scorer_names() -> tuple[str, ...]:
    """The simple scorers' names, in the order the docs list them."""
    return tuple(SCORERS)


def _info(scorer_name: str) -> ScorerInfo:
    try:
        return SCORERS[scorer_name]
    except (KeyError, TypeError):
        raise ValueError(f"scorer_name must be one of {list(SCORERS)}, got {_quote(scorer_name)}") from None


def explain(scorer_name: str, gold: Any, output: Any, **options: Any) -> TextExplanation | NumericExplanation:
    """``explain_<scorer_name>(gold, output, **options)``."""
    return _info(scorer_name).explain(gold, output, **options)


def score_rows(
    scorer_name: str,
    golds: Sequence[Any] | Iterable[Any],
    outputs: Sequence[Any] | Iterable[Any],
    **options: Any,
) -> list[float]:
    """Score row i's output against row i's gold with the named scorer (task ids are row indices).

    ``options`` go to the factory (``gold_key`` is not one: the gold is given).
    """
    golds, outputs = list(golds), list(outputs)
    if len(golds) != len(outputs):
        raise ValueError(f"golds and outputs differ in length: {len(golds)} != {len(outputs)}")
    if "gold_key" in options:
        raise ValueError("score_rows takes the golds directly; gold_key is not an option here")
    reward = _info(scorer_name).factory(**options)
    return [
        reward(SimpleNamespace(id=row, meta={DEFAULT_GOLD_KEY: gold}), output)
        for row, (gold, output) in enumerate(zip(golds, outputs, strict=True))
    ]
