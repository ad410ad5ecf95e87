"""The simple scorers: ``exact_match``, ``contains``, ``last_number``, ``numeric_close``.

A drop-in for ``agentdescent.rewards`` 0.7.0 (``scoring-behaviour.md``, "Simple
scorers"): people who trained with that library must get the same number here
for every input, or the dashboard reports drift that is not there. So the same
signatures, the same name table (``SCORERS``, ``scorer()``), the same
normalisation order and the same number grammar, detail for detail.

A reward is ``(task, output) -> float`` in [0, 1]. Each public scorer here is a
factory: call it (with options) to get the scorer, which reads the expected
answer from ``task.meta[gold_key]`` (``"gold"`` by default):

* the gold is read as ``str(meta[gold_key])``; a missing key raises ``KeyError``
  naming the task and the key; an output of ``None`` is the empty string;
* ``normalise`` strips white space, then ``. ! ? " '`` and spaces, from the
  ends, collapses white space and case-folds -- otherwise a trailing period
  scores 0 and looks like a reasoning failure;
* ``last_number`` reads the gold the same way as the output, so a GSM8K worked
  solution ending in ``#### 72`` matches ``The answer is 72.``; a gold whose last
  number is missing or not finite is a configuration error and raises
  ``ValueError`` rather than scoring 0 forever.

Where the reference reads a number wrongly (``-$18`` reads 18), its reading
stays the default and ``reading=READING_SIGNED`` offers the better one.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, SimpleNamespace
from typing import Any

from ..verifier import SOLVED_THRESHOLD  # a score at or above it counts as solved
from .number_reading import (
    CURRENCY_SYMBOLS,
    DEFAULT_READING,
    GOLD_CACHE_MAX_CHARS,
    GOLD_CACHE_SIZE,
    READING_AGENTDESCENT,
    READING_SIGNED,
    READINGS,
    SIGN_BREAKING_BRACKETS,
    TOKENS_BY_READING,
    UNICODE_MINUS,
    NumberRead,
    check_reading,
    gold_number,
    last_number_of,
    number_read,
    read_last_number,
    read_numbers,
)
from .text import as_text, quoted

__all__ = [
    "CURRENCY_SYMBOLS",
    "DEFAULT_GOLD_KEY",
    "DEFAULT_READING",
    "DEFAULT_TOLERANCE",
    "READINGS",
    "READING_AGENTDESCENT",
    "READING_SIGNED",
    "REWARD_RANGE_SLACK",
    "SCORERS",
    "SCORER_INFO",
    "SIGN_BREAKING_BRACKETS",
    "SOLVED_THRESHOLD",
    "STRIPPED_PUNCTUATION",
    "UNICODE_MINUS",
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
    "scorer",
    "scorer_names",
]

# --------------------------------------------------------------------------- constants

#: Where every scorer looks for the expected answer (the reflector looks there too).
DEFAULT_GOLD_KEY = "gold"
#: numeric_close's default relative tolerance: 1 %.
DEFAULT_TOLERANCE = 0.01
#: How far outside [0, 1] a result may stray (float noise) before it breaks the contract.
REWARD_RANGE_SLACK = 1e-6

#: Normalisation strips these (and the plain space) from both ends, after the white space.
STRIPPED_PUNCTUATION = ".!?\"'"
_END_STRIPPED = STRIPPED_PUNCTUATION + " "
_WHITE_SPACE_RUN = re.compile(r"\s+")

#: Integral floats below this magnitude are shown without ".0" in reasons.
_INTEGRAL_DISPLAY_LIMIT = 1e16


# --------------------------------------------------------------------------- errors


class RewardContractError(ValueError):
    """A scorer returned something that is not a number in [0, 1].

    Raised immediately because a scorer on the wrong scale (accuracy out of 100,
    say) makes every task look solved at the 0.999 threshold: nothing is learned
    and the reported reward looks large and healthy.
    """


# --------------------------------------------------------------------------- small helpers


def _fmt(value: float) -> str:
    """A number as a person would write it: 72, not 72.0; full precision otherwise."""
    if math.isfinite(value) and value.is_integer() and abs(value) < _INTEGRAL_DISPLAY_LIMIT:
        return str(int(value))
    return repr(value)


def _gold_text(task: Any, gold_key: str) -> str:
    """``str(task.meta[gold_key])``, or a ``KeyError`` naming the task and the key.

    A task without ``meta``, or with ``meta`` None, has an empty one.
    """
    try:
        return str(task.meta[gold_key])
    except (AttributeError, KeyError, TypeError):
        meta = getattr(task, "meta", None)
        if meta is not None and gold_key in meta:
            raise  # not a missing key: the mapping itself failed
    raise KeyError(f"task {quoted(_task_id(task))}: meta has no key {gold_key!r}")


def _task_id(task: Any) -> Any:
    return getattr(task, "id", None)


def _option_real(value: Any, option: str) -> float:
    """A numeric option as float: real numbers and numeric strings, never bools or None."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{option} must be a number, got {quoted(value)}")
    try:
        if isinstance(value, str):
            return float(value.strip())
        if isinstance(value, numbers.Real):
            return float(value)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"{option} must be a number, got {quoted(value)}") from exc
    raise ValueError(f"{option} must be a number, got {quoted(value)}")


def _check_tolerance(tolerance: Any) -> float:
    """Any real number: ``<= 0`` asks for equality, as in the reference (NaN then never passes)."""
    return _option_real(tolerance, "tolerance")


def _check_gold_key(gold_key: Any) -> str:
    if not isinstance(gold_key, str):
        raise ValueError(f"gold_key must be a str, got {quoted(gold_key)}")
    return gold_key


def _check_normalise(flag: Any) -> bool:
    if not isinstance(flag, bool):
        raise ValueError(f"normalise must be True or False, got {quoted(flag)}")
    return flag


def _named(reward: Callable[[Any, Any], float], name: str, doc: str) -> Callable[[Any, Any], float]:
    """Give a scorer closure a useful name, so logs and the UI say what it is."""
    reward.__name__ = name
    reward.__qualname__ = name
    reward.__doc__ = doc
    return reward


# --------------------------------------------------------------------------- normalisation


def normalise(text: str | None) -> str:
    """agentdescent's normalisation, in its order (``scoring-behaviour.md``).

    1. strip white space from both ends; 2. strip ``. ! ? " '`` and the plain
    space (no other white space) from both ends; 3. collapse each run of white
    space into one space; 4. case-fold. So ``"42.\\n!"`` becomes ``"42. "``: step 2
    stops at the newline, which step 3 turns into a space. Parentheses, ``;`` and
    other punctuation are kept: ``(A)`` is not ``A``. The order makes it not
    idempotent for such texts: a second pass would strip ``"42. "`` to ``"42"``.
    """
    text = as_text(text).strip().strip(_END_STRIPPED)
    if text[:1].isspace() or text[-1:].isspace():
        text = _WHITE_SPACE_RUN.sub(" ", text)
    else:  # the common case, and split/join is the same collapse when no end is white space
        text = " ".join(text.split())
    return text.casefold()


#: Golds repeat across calls (one per task), so their normalised form is cached too.
_normalised_gold = functools.lru_cache(maxsize=GOLD_CACHE_SIZE)(normalise)


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

    Spans are in the original texts, read the way ``reading`` names (one of
    ``READINGS``). With ``tolerance <= 0`` the numbers must be equal; otherwise
    the output scores 1 when ``difference <= allowed_difference``, where
    ``allowed_difference = tolerance * max(1, |want|)``. ``difference`` is
    ``|got - want|`` (``None`` without a finite output number).
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
    reading: str


# --------------------------------------------------------------------------- shared cores


def _text_core(gold: str, output: str, use_normalise: bool, whole: bool) -> tuple[float, str, str, int]:
    """``(score, gold_compared, output_compared, found_at)`` -- the one comparison both use.

    ``whole`` is exact_match (equality); otherwise contains (substring, and an
    empty gold scores 0 because it is "in" everything). ``found_at`` is -1 when
    there is no match.
    """
    if use_normalise:
        gold = _normalised_gold(gold) if len(gold) <= GOLD_CACHE_MAX_CHARS else normalise(gold)
        output = normalise(output)
    if whole:
        equal = gold == output
        return (1.0 if equal else 0.0), gold, output, (0 if equal else -1)
    found = output.find(gold) if gold else -1
    return (1.0 if found >= 0 else 0.0), gold, output, found


def _numeric_core(
    gold: str, output: str, tolerance: float, reading: str, task_id: Any
) -> tuple[float, tuple[float, int, int], tuple[float, int, int] | None, float, float | None]:
    """``(score, gold_read, output_read, allowed, difference)`` -- the one numeric comparison.

    The gold is read first so a broken gold raises whatever the output is. With
    ``tolerance <= 0`` the numbers must be equal, otherwise ``|got - want| <=
    tolerance * max(1, |want|)`` in plain float arithmetic.
    """
    want_read = gold_number(gold, task_id, reading)
    want = want_read[0]
    exact = tolerance <= 0.0
    allowed = 0.0 if exact else tolerance * max(1.0, abs(want))
    got_read = last_number_of(output, TOKENS_BY_READING[reading])
    if got_read is None or not math.isfinite(got_read[0]):
        return 0.0, want_read, got_read, allowed, None
    difference = abs(got_read[0] - want)
    passed = got_read[0] == want if exact else difference <= allowed
    return (1.0 if passed else 0.0), want_read, got_read, allowed, difference


def _explain_text(name: str, gold: Any, output: Any, use_normalise: bool) -> TextExplanation:
    gold, output = as_text(gold), as_text(output)
    whole = name == "exact_match"
    score, gold_c, output_c, found = _text_core(gold, output, use_normalise, whole)
    what = "normalised " if use_normalise else ""
    if whole:
        relation = "==" if score else "!="
        reason = f"{what}output {quoted(output_c)} {relation} {what}gold {quoted(gold_c)}"
        span = None
    elif not gold_c:
        reason = f"{what}gold is empty: contains scores 0 (an empty gold is in every output)"
        span = None
    elif found >= 0:
        span = (found, found + len(gold_c))
        reason = f"{what}gold {quoted(gold_c)} found at {span[0]}:{span[1]} of the {what}output"
        # An all-digit gold inside a longer number is the classic false positive.
        if gold_c.isdigit() and output_c != gold_c:
            reason += " (a number inside a longer text also counts; prefer last_number for numbers)"
    else:
        span = None
        reason = f"{what}gold {quoted(gold_c)} not in {what}output {quoted(output_c)}"
    return TextExplanation(name, score, gold, output, use_normalise, gold_c, output_c, span, reason)


def _explain_numeric(
    name: str, gold: Any, output: Any, tolerance: float, reading: str, task_id: Any
) -> NumericExplanation:
    gold, output = as_text(gold), as_text(output)
    score, want_read, got_read, allowed, difference = _numeric_core(gold, output, tolerance, reading, task_id)
    want = number_read(gold, want_read)
    got = None if got_read is None else number_read(output, got_read)
    if got is None:
        reason = "no number in output"
    elif difference is None:
        reason = f"last number in output {got.text} is not finite"
    elif tolerance <= 0.0:
        relation = "==" if score else "!="
        reason = f"last number in output {_fmt(got.value)} {relation} {_fmt(want.value)} from gold"
    else:
        relation = "<=" if score else ">"
        reason = (
            f"last number in output {_fmt(got.value)} differs from {_fmt(want.value)} from gold by "
            f"{_fmt(difference)} {relation} allowed {_fmt(allowed)} "
            f"(tolerance {_fmt(tolerance)} x max(1, |{_fmt(want.value)}|))"
        )
    if reading != DEFAULT_READING:
        reason += f" [reading {reading!r}]"
    return NumericExplanation(
        name, score, gold, output, want, got, tolerance, allowed, difference, reason, reading
    )


def explain_exact_match(gold: Any, output: Any, *, normalise: bool = True) -> TextExplanation:
    """Why ``exact_match(normalise=...)`` scores ``output`` against ``gold`` as it does."""
    return _explain_text("exact_match", gold, output, _check_normalise(normalise))


def explain_contains(gold: Any, output: Any, *, normalise: bool = True) -> TextExplanation:
    """Why ``contains(normalise=...)`` scores ``output`` against ``gold`` as it does."""
    return _explain_text("contains", gold, output, _check_normalise(normalise))


def explain_last_number(
    gold: Any,
    output: Any,
    *,
    tolerance: float = 0.0,
    reading: str = DEFAULT_READING,
    task_id: Any = None,
) -> NumericExplanation:
    """Why ``last_number(tolerance=..., reading=...)`` scores as it does; raises exactly when it would."""
    return _explain_numeric(
        "last_number", gold, output, _check_tolerance(tolerance), check_reading(reading), task_id
    )


def explain_numeric_close(
    gold: Any,
    output: Any,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    reading: str = DEFAULT_READING,
    task_id: Any = None,
) -> NumericExplanation:
    """Why ``numeric_close(tolerance=..., reading=...)`` scores as it does; raises exactly when it would."""
    return _explain_numeric(
        "numeric_close", gold, output, _check_tolerance(tolerance), check_reading(reading), task_id
    )


# --------------------------------------------------------------------------- the scorers


def exact_match(gold_key: str = DEFAULT_GOLD_KEY, *, normalise: bool = True) -> Callable[[Any, Any], float]:
    """1.0 when the output equals the gold (after normalisation by default). For labels, short answers."""
    key, use_normalise = _check_gold_key(gold_key), _check_normalise(normalise)

    def reward(task: Any, output: Any) -> float:
        return _text_core(_gold_text(task, key), as_text(output), use_normalise, True)[0]

    return _named(reward, "exact_match", exact_match.__doc__ or "")


def contains(gold_key: str = DEFAULT_GOLD_KEY, *, normalise: bool = True) -> Callable[[Any, Any], float]:
    """1.0 when the gold appears anywhere in the output. Easy to fool: "2" is inside "12".

    An empty (normalised) gold scores 0: it would otherwise be found in every output.
    """
    key, use_normalise = _check_gold_key(gold_key), _check_normalise(normalise)

    def reward(task: Any, output: Any) -> float:
        return _text_core(_gold_text(task, key), as_text(output), use_normalise, False)[0]

    return _named(reward, "contains", contains.__doc__ or "")


def _numeric_scorer(
    name: str, gold_key: Any, tolerance: Any, reading: Any, doc: str
) -> Callable[[Any, Any], float]:
    key, tol, how = _check_gold_key(gold_key), _check_tolerance(tolerance), check_reading(reading)

    def reward(task: Any, output: Any) -> float:
        return _numeric_core(_gold_text(task, key), as_text(output), tol, how, _task_id(task))[0]

    return _named(reward, name, doc)


def last_number(
    gold_key: str = DEFAULT_GOLD_KEY, *, tolerance: float = 0.0, reading: str = DEFAULT_READING
) -> Callable[[Any, Any], float]:
    """1.0 when the output's last number matches the gold's last number. For arithmetic word problems.

    The gold is read the same way, so "72", "#### 72" and a whole worked solution
    all work. With ``tolerance <= 0`` the numbers must be equal, otherwise
    ``|got - want| <= tolerance * max(1, |want|)``. A gold whose last number is
    missing or not finite raises ``ValueError``; such an output scores 0.
    ``reading`` is one of ``READINGS`` (default: agentdescent's).
    """
    return _numeric_scorer("last_number", gold_key, tolerance, reading, last_number.__doc__ or "")


def numeric_close(
    gold_key: str = DEFAULT_GOLD_KEY, *, tolerance: float = DEFAULT_TOLERANCE, reading: str = DEFAULT_READING
) -> Callable[[Any, Any], float]:
    """``last_number`` with a default relative tolerance of 1 %: for rounded or derived figures.

    ``|got - want| <= tolerance * max(1, |want|)``: near zero the tolerance is absolute.
    """
    return _numeric_scorer("numeric_close", gold_key, tolerance, reading, numeric_close.__doc__ or "")


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
            f"{who} returned {quoted(value)} for task {quoted(getattr(task, 'id', None))}: it {problem}; "
            "a reward must be a number in [0, 1] (normalise before returning)"
        )
    return min(1.0, max(0.0, number))


def checked(scorer: Callable[[Any, Any], Any], *, name: str | None = None) -> Callable[[Any, Any], float]:
    """Wrap any scorer so every result is checked against the contract (see ``coerce_reward``).

    The engine treats >= 0.999 as solved, so a scorer on the wrong scale would
    make every task look solved; this fails loudly on the first bad result.
    """
    if not callable(scorer):
        raise TypeError(f"checked() needs a callable scorer, got {quoted(scorer)}")
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
            f"solved_threshold must be a finite number in [0, 1], got {quoted(solved_threshold)}"
        )
    return float(score) >= threshold


# --------------------------------------------------------------------------- names


#: agentdescent's name table: name -> factory. A plain dict, as in that library, so a
#: config naming a scorer keeps working and a user may add a factory of their own.
SCORERS: dict[str, Callable[..., Callable[[Any, Any], float]]] = {
    "exact_match": exact_match,
    "contains": contains,
    "last_number": last_number,
    "numeric_close": numeric_close,
}


def scorer(name_or_callable: str | Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """agentdescent's resolver: a name in ``SCORERS`` gives its factory called with defaults,
    a callable ``(task, output)`` scorer is returned as it is; anything else is an error.
    """
    if isinstance(name_or_callable, str):
        try:
            factory = SCORERS[name_or_callable]
        except KeyError:
            raise ValueError(
                f"unknown scorer {quoted(name_or_callable)}; known names: {', '.join(SCORERS)} "
                "(or pass a callable (task, output) -> float)"
            ) from None
        return factory()
    if callable(name_or_callable):
        return name_or_callable
    raise TypeError(
        f"scorer() takes a scorer name ({', '.join(SCORERS)}) or a callable (task, output) -> float, "
        f"got {quoted(name_or_callable)} of type {type(name_or_callable).__name__}"
    )


# --------------------------------------------------------------------------- registry (for the UI)


@dataclass(frozen=True, slots=True)
class ScorerInfo:
    """One simple scorer as a UI lists it: factory, explanation and the options a UI offers."""

    name: str
    factory: Callable[..., Callable[[Any, Any], float]]
    explain: Callable[..., TextExplanation | NumericExplanation]
    options: tuple[str, ...]
    summary: str


#: The simple scorers with what the app, the batch scorer and the CLI need about each.
#: last_number's own tolerance is not offered here: numeric_close is that scorer.
SCORER_INFO: Mapping[str, ScorerInfo] = MappingProxyType(
    {
        "exact_match": ScorerInfo(
            "exact_match", exact_match, explain_exact_match, ("normalise",), "output equals gold"
        ),
        "contains": ScorerInfo(
            "contains", contains, explain_contains, ("normalise",), "gold appears anywhere in output"
        ),
        "last_number": ScorerInfo(
            "last_number",
            last_number,
            explain_last_number,
            ("reading",),
            "the last number in the output matches gold",
        ),
        "numeric_close": ScorerInfo(
            "numeric_close",
            numeric_close,
            explain_numeric_close,
            ("tolerance", "reading"),
            "last number within a relative tolerance",
        ),
    }
)


def scorer_names() -> tuple[str, ...]:
    """The simple scorers' names, in the order the docs list them."""
    return tuple(SCORER_INFO)


def _info(scorer_name: str) -> ScorerInfo:
    try:
        return SCORER_INFO[scorer_name]
    except (KeyError, TypeError):
        raise ValueError(
            f"scorer_name must be one of {list(SCORER_INFO)}, got {quoted(scorer_name)}"
        ) from None


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
