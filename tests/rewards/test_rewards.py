"""Tests for scoring.rewards: the spec's vectors, the hook's checks, properties and the contract."""

from __future__ import annotations

import builtins
import math
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reward_strategies import FACTORIES, GOLDS, NUMBERISH, TEXTS, task
from scoring_fixtures import load_cases

from scoring.rewards import (
    READING_AGENTDESCENT,
    READINGS,
    SCORER_INFO,
    SCORERS,
    SOLVED_THRESHOLD,
    NumberRead,
    RewardContractError,
    checked,
    coerce_reward,
    contains,
    exact_match,
    explain_contains,
    explain_exact_match,
    explain_last_number,
    explain_numeric_close,
    is_solved,
    last_number,
    normalise,
    numeric_close,
    read_last_number,
    read_numbers,
    score_rows,
    scorer,
    scorer_names,
)
from scoring.rewards import simple as rewards


def _load_cases():
    return [pytest.param(record, id=record["id"]) for record in load_cases("reward_cases.jsonl")]


# --------------------------------------------------------------------------- the spec's vectors


def test_reward_cases_file_holds_every_worked_example():
    ids = [record["id"] for record in load_cases("reward_cases.jsonl")]
    assert ids == [f"reward-{i:02d}" for i in range(1, 59)]


@pytest.mark.parametrize("record", _load_cases())
def test_reward_case(record):
    scorer = getattr(rewards, record["scorer"])(**record["factory_kwargs"])
    the_task = SimpleNamespace(id=record["id"], meta=record["meta"])
    if "raises" in record:
        expected = getattr(builtins, record["raises"])
        with pytest.raises(expected) as info:
            scorer(the_task, record["output"])
        assert record["id"] in str(info.value), "the error must name the task"
    else:
        got = scorer(the_task, record["output"])
        assert type(got) is float
        assert got == pytest.approx(record["expected"], abs=1e-9, rel=0)


# --------------------------------------------------------------------------- the hook's checks


def test_hook_last_number_gsm8k_gold():
    assert last_number()(task("Natalia sold... #### 72"), "So the answer is 72.") == 1.0


def test_hook_last_number_thousands():
    assert last_number()(task("1,234"), "It costs $1,234.") == 1.0


def test_hook_exact_match_trailing_period():
    assert exact_match()(task("Paris"), "paris.") == 1.0


def test_hook_contains_is_easy_to_fool():
    assert contains()(task("2"), "12") == 1.0


def test_hook_numeric_close_one_percent():
    assert numeric_close(tolerance=0.01)(task("100"), "about 100.5") == 1.0


def test_hook_gold_without_number_raises_value_error():
    with pytest.raises(ValueError, match=r"task 't'.*no number"):
        last_number()(task("no number here"), "42")


# --------------------------------------------------------------------------- normalise


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Yes.", "yes"),
        ('  "Paris!"  ', "paris"),
        ("'A' ?", "a"),
        ("4  \t\n 2", "4 2"),
        ("(A)", "(a)"),
        ("42;", "42;"),
        ("...", ""),
        ("", ""),
        (None, ""),
        ("Straße", "strasse"),
        ("a . b", "a . b"),
        ("\u00a0x\u3000", "x"),
        ("x .\u2003", "x"),
        ("42.\n!", "42. "),  # the punctuation strip stops at the newline, which becomes a space
        ("42.\n", "42"),
        ("!\t42", " 42"),
        ('"42 ".', "42"),
        ("'\u00a0x'", " x"),
    ],
)
def test_normalise_examples(text, want):
    assert normalise(text) == want


def reference_normalise(text):
    """The spec's four steps, written out character by character."""
    chars = list("" if text is None else text)

    def strip_ends(keep_stripping):
        while chars and keep_stripping(chars[0]):
            chars.pop(0)
        while chars and keep_stripping(chars[-1]):
            chars.pop()

    strip_ends(str.isspace)  # 1. white space from both ends
    strip_ends(lambda c: c in ".!?\"' ")  # 2. . ! ? " ' and the plain space
    collapsed = []  # 3. each run of white space becomes one space
    previous_was_space = False
    for c in chars:
        if not c.isspace():
            collapsed.append(c)
        elif not previous_was_space:
            collapsed.append(" ")
        previous_was_space = c.isspace()
    return "".join(collapsed).casefold()  # 4. case-fold


# --------------------------------------------------------------------------- the number reader


@pytest.mark.parametrize(
    ("text", "value", "span_text"),
    [
        ("72", 72.0, "72"),
        ("#### 72", 72.0, "72"),
        ("The answer is 72.", 72.0, "72."),  # "12." is a number
        ("1,234", 1234.0, "1,234"),
        ("1,234,567", 1234567.0, "1,234,567"),
        ("12,34", 34.0, "34"),
        ("1,2345", 2345.0, "2345"),
        ("1,2,3", 3.0, "3"),
        ("1234,567", 567.0, "567"),
        ("1,234.5", 1234.5, "1,234.5"),
        (".5", 0.5, ".5"),
        ("1.2.3", 1.2, "1.2"),  # never starts right after a digit and a point
        ("v1.2.3", 1.2, "1.2"),
        ("..5", 5.0, "5"),  # a leading point after a point does not start a number
        ("x.5", 0.5, ".5"),
        ("Total...42", 42.0, "42"),
        ("1..5", 5.0, "5"),
        ("1e-3", 0.001, "1e-3"),
        ("1.e-3", 0.001, "1.e-3"),
        ("1e-05", 1e-05, "1e-05"),
        ("2.5E+4", 25000.0, "2.5E+4"),
        ("5e", 5.0, "5"),
        ("5e-", 5.0, "5"),
        ("$18", 18.0, "18"),  # currency symbols are not part of a number
        ("£1,000", 1000.0, "1,000"),
        ("€3.50", 3.5, "3.50"),
        ("-$5", 5.0, "5"),  # the reference's reading (see READING_SIGNED)
        ("$-5", -5.0, "-5"),
        ("pages 3-4", 4.0, "4"),
        ("pages 2--4587", -4587.0, "-4587"),
        ("3 - 4", 4.0, "4"),  # a sign must sit right before the digits
        ("3 -4", -4.0, "-4"),  # only the character right before the sign counts
        ("(-5)", -5.0, "-5"),
        ("-5", -5.0, "-5"),
        ("x = -5", -5.0, "-5"),
        ("the answer is -5", -5.0, "-5"),
        ("x = \u22125", 5.0, "5"),  # the Unicode minus is never a sign (by default)
        ("COVID-19", 19.0, "19"),
        ("(2)-1", 1.0, "1"),
        ("[2]-1", 1.0, "1"),
        ("{2}-1", 1.0, "1"),
        ("\u00e9-5", -5.0, "-5"),  # only ASCII letters break a sign
        ("_-5", -5.0, "-5"),
        ("%-5", -5.0, "-5"),
        ("+7", 7.0, "+7"),
        ("-.5", -0.5, "-.5"),
        ("50%", 50.0, "50"),
        ("1e5-3", 3.0, "3"),
        ("3*-4", -4.0, "-4"),
        ("\uff14\uff12", 42.0, "\uff14\uff12"),  # full-width digits
        ("\u0661\u066c\u0662", 2.0, "\u0662"),  # Arabic-Indic digits; U+066C is not a comma
        ("\u0664\u0662.\u0665", 42.5, "\u0664\u0662.\u0665"),
        ("1e999 then 1e9999", math.inf, "1e9999"),
    ],
)
def test_read_last_number_examples(text, value, span_text):
    read = read_last_number(text)
    assert read is not None
    assert read.value == value
    assert read.text == span_text
    assert text[read.start : read.end] == span_text


def test_read_last_number_none_without_digits():
    assert read_last_number("seventy-two") is None
    assert read_last_number("") is None
    assert read_last_number(None) is None
    assert read_last_number("$.e-,") is None


def test_read_numbers_lists_every_number_in_order():
    text = "Natalia sold 48/2 = <<48/2=24>>24 clips, $1,234.50 total; pages 3-4. #### 72"
    assert [(n.value, n.text) for n in read_numbers(text)] == [
        (48.0, "48"),
        (2.0, "2"),
        (48.0, "48"),
        (2.0, "2"),
        (24.0, "24"),
        (24.0, "24"),
        (1234.5, "1,234.50"),
        (3.0, "3"),
        (4.0, "4."),
        (72.0, "72"),
    ]


def test_huge_numbers_become_infinite_without_raising():
    digits = "1" * 400
    assert read_last_number(digits) == NumberRead(math.inf, 0, 400, digits)
    assert read_last_number("-" + digits).value == -math.inf
    assert read_last_number("1e999").value == math.inf
    assert read_last_number("1e-999").value == 0.0
    assert last_number()(task("5"), digits) == 0.0
    assert numeric_close(tolerance=0.5)(task("5"), "x " + "9" * 5000) == 0.0


def test_non_finite_gold_raises_value_error_naming_the_task():
    for gold in ("1e999", "1" * 400):
        with pytest.raises(ValueError, match=r"task 'g7'.*not finite"):
            last_number()(task(gold, task_id="g7"), "5")
        with pytest.raises(ValueError, match=r"task 'g7'.*not finite"):
            numeric_close()(task(gold, task_id="g7"), "5")


# --------------------------------------------------------------------------- scorers: details


def test_missing_gold_key_raises_key_error_naming_task_and_key():
    with pytest.raises(KeyError, match=r"task 'q-9'.*'answer'"):
        exact_match(gold_key="answer")(task("72", task_id="q-9"), "72")
    with pytest.raises(KeyError, match=r"task 'q-9'.*'gold'"):
        last_number()(SimpleNamespace(id="q-9", meta=None), "72")


def test_gold_is_read_as_str_and_output_none_is_empty():
    assert exact_match()(task(72), "72") == 1.0
    assert last_number()(task(72.0), "72") == 1.0
    assert exact_match()(task(None), "none") == 1.0
    assert contains()(task("x"), None) == 0.0
    assert last_number()(task("72"), None) == 0.0
    assert exact_match()(task(""), None) == 1.0
    assert last_number()(task("72"), 72) == 1.0


def test_normalise_false_compares_raw_text():
    assert exact_match(normalise=False)(task("Paris"), "Paris") == 1.0
    assert exact_match(normalise=False)(task("Paris"), "paris") == 0.0
    assert contains(normalise=False)(task("Paris"), "in Paris.") == 1.0
    assert contains(normalise=False)(task("paris"), "in Paris.") == 0.0
    assert contains(normalise=False)(task(""), "anything") == 0.0


def test_numeric_close_tolerance_is_relative_and_inclusive():
    assert numeric_close(tolerance=0.1)(task("1000"), "1,100") == 1.0
    assert numeric_close(tolerance=0.1)(task("1000"), "1,100.0001") == 0.0
    assert numeric_close(tolerance=0)(task("7"), "7.0") == 1.0
    assert numeric_close(tolerance="0.5")(task("1"), "1.5") == 1.0


def test_scorers_have_names():
    assert [FACTORIES[name]().__name__ for name in FACTORIES] == list(FACTORIES)


@pytest.mark.parametrize(
    ("factory", "kwargs", "option"),
    [
        (numeric_close, {"tolerance": True}, "tolerance"),
        (last_number, {"tolerance": "close"}, "tolerance"),
        (last_number, {"reading": "rounded"}, "reading"),
        (numeric_close, {"reading": None}, "reading"),
        (numeric_close, {"reading": ["signed"]}, "reading"),
        (numeric_close, {"tolerance": None}, "tolerance"),
        (numeric_close, {"tolerance": "lots"}, "tolerance"),
        (numeric_close, {"tolerance": [0.1]}, "tolerance"),
        (numeric_close, {"gold_key": 3}, "gold_key"),
        (last_number, {"gold_key": None}, "gold_key"),
        (exact_match, {"gold_key": b"gold"}, "gold_key"),
        (exact_match, {"normalise": "yes"}, "normalise"),
        (contains, {"normalise": 1}, "normalise"),
        (contains, {"gold_key": ("gold",)}, "gold_key"),
    ],
)
def test_invalid_factory_options_raise_value_error_naming_option_and_value(factory, kwargs, option):
    with pytest.raises(ValueError) as info:
        factory(**kwargs)
    message = str(info.value)
    assert option in message
    assert repr(kwargs[option]) in message


def test_explain_functions_validate_options_like_the_factories():
    with pytest.raises(ValueError, match="tolerance"):
        explain_numeric_close("1", "1", tolerance="lots")
    with pytest.raises(ValueError, match="reading"):
        explain_last_number("1", "1", reading="rounded")
    with pytest.raises(ValueError, match="normalise"):
        explain_exact_match("1", "1", normalise="no")


# --------------------------------------------------------------------------- explanations


def test_explain_exact_match_fields():
    e = explain_exact_match("Paris", "  paris. ")
    assert (e.scorer, e.score, e.gold, e.output, e.normalise) == (
        "exact_match",
        1.0,
        "Paris",
        "  paris. ",
        True,
    )
    assert (e.gold_compared, e.output_compared, e.match_span) == ("paris", "paris", None)
    assert e.reason == "normalised output 'paris' == normalised gold 'paris'"
    raw = explain_exact_match("Paris", "paris", normalise=False)
    assert (raw.score, raw.gold_compared, raw.output_compared) == (0.0, "Paris", "paris")
    assert raw.reason == "output 'paris' != gold 'Paris'"


def test_explain_contains_reports_span_in_normalised_output():
    e = explain_contains("Paris", "The capital is PARIS, France.")
    assert e.score == 1.0
    assert e.output_compared == "the capital is paris, france"
    assert e.match_span == (15, 20)
    assert e.output_compared[15:20] == "paris"
    missing = explain_contains("Rome", "Paris")
    assert (missing.score, missing.match_span) == (0.0, None)
    assert missing.reason == "normalised gold 'rome' not in normalised output 'paris'"
    empty = explain_contains("...", "anything")
    assert (empty.score, empty.gold_compared, empty.match_span) == (0.0, "", None)
    assert "empty" in empty.reason


def test_explain_last_number_spans_are_in_the_original_text():
    e = explain_last_number("#### 1,234", "It costs $1,234.")
    assert e.score == 1.0
    assert e.gold_number == NumberRead(1234.0, 5, 10, "1,234")
    assert e.output_number == NumberRead(1234.0, 10, 16, "1,234.")
    assert e.reading == READING_AGENTDESCENT
    assert (e.tolerance, e.allowed_difference, e.difference) == (0.0, 0.0, 0.0)
    assert e.reason == "last number in output 1234 == 1234 from gold"
    wrong = explain_last_number("#### 72", "72 #### 73")
    assert wrong.score == 0.0
    assert wrong.reason == "last number in output 73 != 72 from gold"
    assert wrong.output_number == NumberRead(73.0, 8, 10, "73")


def test_explain_numeric_close_reports_tolerance_and_differences():
    e = explain_numeric_close("100", "about 98.99", tolerance=0.01)
    assert e.score == 0.0
    assert e.tolerance == 0.01
    assert e.allowed_difference == 1.0
    assert e.difference == abs(98.99 - 100.0)
    assert e.output_number == NumberRead(98.99, 6, 11, "98.99")
    assert e.reason == (
        "last number in output 98.99 differs from 100 from gold by 1.0100000000000051 > allowed 1 "
        "(tolerance 0.01 x max(1, |100|))"
    )
    close = explain_numeric_close("0.5", "0.51")
    assert (
        close.score == 0.0 and close.difference == 0.010000000000000009 and close.allowed_difference == 0.01
    )


def test_explain_numeric_without_output_number_or_non_finite():
    none = explain_numeric_close("5", "no idea")
    assert (none.score, none.output_number, none.difference, none.reason) == (
        0.0,
        None,
        None,
        "no number in output",
    )
    inf = explain_last_number("5", "1e999")
    assert (inf.score, inf.difference) == (0.0, None)
    assert inf.output_number == NumberRead(math.inf, 0, 5, "1e999")
    assert inf.reason == "last number in output 1e999 is not finite"


def test_explain_raises_exactly_like_the_scorer():
    with pytest.raises(ValueError, match="no number"):
        explain_last_number("Paris", "72")
    with pytest.raises(ValueError, match=r"task 'k'.*not finite"):
        explain_numeric_close("1e400", "72", task_id="k")


def test_explanations_are_frozen():
    e = explain_last_number("1", "1")
    with pytest.raises(AttributeError):
        e.score = 0.0  # type: ignore[misc]


def test_registry_and_score_rows():
    assert scorer_names() == ("exact_match", "contains", "last_number", "numeric_close")
    for name in scorer_names():
        info = rewards.SCORER_INFO[name]
        assert info.factory is FACTORIES[name]
        assert info.explain is getattr(rewards, f"explain_{name}")
    assert rewards.explain("contains", "2", "12").match_span == (1, 2)
    assert score_rows("last_number", ["#### 72", "1,234"], ["so 72.", "1234.5"]) == [1.0, 0.0]
    assert score_rows("numeric_close", ["100"], ["99"], tolerance=0.01) == [1.0]
    assert score_rows("exact_match", [], []) == []
    with pytest.raises(ValueError, match="length"):
        score_rows("contains", ["a"], [])
    with pytest.raises(ValueError, match="scorer_name"):
        score_rows("rouge", ["a"], ["a"])
    with pytest.raises(ValueError, match=r"task 1.*no number"):
        score_rows("last_number", ["1", "none"], ["1", "1"])


# --------------------------------------------------------------------------- the contract


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (0.0, 0.0),
        (1.0, 1.0),
        (0.25, 0.25),
        (1, 1.0),
        (0, 0.0),
        (True, 1.0),
        (False, 0.0),
        ("0.5", 0.5),
        (" 1 ", 1.0),
        (1.0 + 1e-7, 1.0),
        (-1e-7, 0.0),
        (Fraction(1, 4), 0.25),
        (Decimal("0.75"), 0.75),
    ],
)
def test_contract_accepts_numbers_in_range(value, want):
    reward = checked(lambda t, o: value)
    got = reward(task("g"), "o")
    assert type(got) is float
    assert got == want


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (1.5, "outside"),
        (-0.1, "outside"),
        (100, "outside"),
        (1.0 + 2e-6, "outside"),
        (math.inf, "outside"),
        ("2", "outside"),
        (math.nan, "NaN"),
        ("nan", "NaN"),
        (None, "not a number"),
        ("0.5 points", "not a number"),
        ([0.5], "not a number"),
        (b"0.5", "not a number"),
        (0.5j, "not a number"),
        (object(), "not a number"),
    ],
)
def test_contract_rejects_and_names_task_and_value(value, problem):
    reward = checked(lambda t, o: value, name="my_scorer")
    with pytest.raises(RewardContractError) as info:
        reward(task("g", task_id="task-42"), "o")
    message = str(info.value)
    assert "'task-42'" in message
    assert "my_scorer" in message
    assert problem in message
    assert repr(value)[:20] in message


def test_contract_error_is_a_value_error_and_survives_huge_ints():
    assert issubclass(RewardContractError, ValueError)
    with pytest.raises(RewardContractError, match="outside"):
        coerce_reward(10**5000, task=task("g"))


def test_checked_passes_arguments_and_keeps_the_name():
    seen = []

    def my_reward(t, o):
        seen.append((t.id, o))
        return 1

    wrapped = checked(my_reward)
    assert wrapped.__name__ == "my_reward"
    assert wrapped(task("g", task_id="a"), "out") == 1.0
    assert seen == [("a", "out")]
    assert checked(last_number())(task("72"), "72") == 1.0
    with pytest.raises(TypeError):
        checked("not callable")  # type: ignore[arg-type]


def test_is_solved():
    assert SOLVED_THRESHOLD == 0.999
    assert is_solved(1.0) is True
    assert is_solved(0.999) is True
    assert is_solved(0.9989) is False
    assert is_solved(0.85, solved_threshold=0.8) is True
    assert is_solved(0.0, solved_threshold=0.0) is True
    assert is_solved(math.nan) is False
    for bad in (1.5, -0.1, math.nan, math.inf, True, None, "high"):
        with pytest.raises(ValueError, match="solved_threshold"):
            is_solved(0.5, solved_threshold=bad)


# --------------------------------------------------------------------------- properties


def _outcome(call):
    """The result, or the exception class when the call raised."""
    try:
        return call()
    except Exception as exc:  # compared by class below
        return type(exc)


@given(
    gold=st.one_of(st.integers(-(10**6), 10**6).map(str), st.just("#### 72"), st.just("Paris")), output=TEXTS
)
@example(gold="72", output="\x00\ud800" + "1" * 400)
def test_scores_are_zero_or_one_and_never_raise_on_any_output(gold, output):
    for name, factory in FACTORIES.items():
        if name in ("last_number", "numeric_close") and gold == "Paris":
            continue
        score = factory()(task(gold), output)
        assert type(score) is float
        assert score in (0.0, 1.0)


@given(x=TEXTS)
def test_exact_match_of_a_text_with_itself_is_one(x):
    assert exact_match()(task(x), x) == 1.0
    assert exact_match(normalise=False)(task(x), x) == 1.0


WHITE_SPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
NORMALISABLE = st.text(st.sampled_from(WHITE_SPACE + ".!?\"'aZß(;") | st.characters(), max_size=30)


@given(x=st.one_of(TEXTS, NORMALISABLE))
@example(x="42.\n!")
@example(x="'\t\u2003x .\n")
def test_normalise_follows_the_four_steps_in_order(x):
    once = normalise(x)
    assert once == reference_normalise(x)
    assert not any(c.isspace() and c != " " for c in once) and "  " not in once
    # Only a space left at an end (from white space that step 2 stopped at) goes on a
    # second pass; without one, normalising again changes nothing.
    if not once.startswith(" ") and not once.endswith(" "):
        assert normalise(once) == once


@given(n=st.integers(-(10**300), 10**300))
@example(n=0)
@example(n=-1234567)
def test_last_number_reads_integers_plain_and_with_thousands(n):
    assert read_last_number(f"{n}").value == float(n)
    assert read_last_number(f"{n:,}").value == float(n)
    assert read_last_number(f"The answer is {n:,}.").value == float(n)
    assert last_number()(task(str(n)), f"So it is {n:,} in total.") == 1.0


@given(x=st.floats(allow_nan=False, allow_infinity=False))
def test_last_number_reads_float_reprs(x):
    assert read_last_number(repr(x)).value == x
    assert read_last_number(f"x = {x!r}").value == x


@given(text=st.one_of(NUMBERISH, TEXTS))
@example(text="1,234,5678")
@example(text="3 -4")
@example(text="e-5")
def test_fast_last_number_equals_the_full_left_to_right_scan(text):
    everything = read_numbers(text)
    assert read_last_number(text) == (everything[-1] if everything else None)
    for read in everything:
        assert text[read.start : read.end] == read.text


@given(gold=GOLDS, output=st.one_of(TEXTS, NUMBERISH))
def test_numeric_close_with_zero_tolerance_is_last_number(gold, output):
    t = task(gold)
    assert _outcome(lambda: numeric_close(tolerance=0)(t, output)) == _outcome(
        lambda: last_number()(t, output)
    )


@given(
    gold=GOLDS,
    output=st.one_of(TEXTS, NUMBERISH),
    normalise_on=st.booleans(),
    tolerance=st.sampled_from([0.0, 0.01, 0.1, 1.0]),
)
@settings(max_examples=200)
def test_explanations_score_exactly_like_the_scorers(gold, output, normalise_on, tolerance):
    t = task(gold)
    pairs = [
        (
            exact_match(normalise=normalise_on),
            lambda: explain_exact_match(gold, output, normalise=normalise_on),
        ),
        (contains(normalise=normalise_on), lambda: explain_contains(gold, output, normalise=normalise_on)),
        (last_number(), lambda: explain_last_number(gold, output)),
        (
            numeric_close(tolerance=tolerance),
            lambda: explain_numeric_close(gold, output, tolerance=tolerance),
        ),
    ]
    for reward, explain in pairs:
        want = _outcome(lambda reward=reward: reward(t, output))
        got = _outcome(explain)
        if isinstance(want, float):
            assert not isinstance(got, type), f"{reward.__name__} scored {want} but explain raised {got}"
            assert got.score == want
            assert isinstance(got.reason, str) and got.reason
        else:
            assert got is want


@pytest.mark.parametrize("reading", READINGS)
@given(text=st.one_of(NUMBERISH, TEXTS))
@example(text="v1.2.3")
@example(text="-$1,234.5e-3")
def test_fast_last_number_equals_the_full_scan_in_both_readings(reading, text):
    everything = read_numbers(text, reading=reading)
    assert read_last_number(text, reading=reading) == (everything[-1] if everything else None)


# --------------------------------------------------------------------------- drop-in: signatures


def test_signatures_are_agentdescents():
    import inspect

    def shape(function):
        return [
            (p.name, p.kind.name, p.default)
            for p in inspect.signature(function).parameters.values()
            if p.name != "reading"
        ]

    keyword = "KEYWORD_ONLY"
    assert shape(exact_match) == [("gold_key", "POSITIONAL_OR_KEYWORD", "gold"), ("normalise", keyword, True)]
    assert shape(contains) == [("gold_key", "POSITIONAL_OR_KEYWORD", "gold"), ("normalise", keyword, True)]
    assert shape(last_number) == [("gold_key", "POSITIONAL_OR_KEYWORD", "gold"), ("tolerance", keyword, 0.0)]
    assert shape(numeric_close) == [
        ("gold_key", "POSITIONAL_OR_KEYWORD", "gold"),
        ("tolerance", keyword, 0.01),
    ]
    the_task = SimpleNamespace(id="p", meta={"answer": "72"})
    for factory in FACTORIES.values():
        assert factory("answer")(the_task, "72") == 1.0


def test_a_task_without_meta_has_an_empty_one():
    for factory in FACTORIES.values():
        with pytest.raises(KeyError, match=r"task 'bare'.*'gold'"):
            factory()(SimpleNamespace(id="bare"), "72")


@given(
    want=st.floats(-1e6, 1e6, allow_nan=False),
    got=st.floats(-1e6, 1e6, allow_nan=False),
    tolerance=st.one_of(st.floats(-1, 1, allow_nan=False), st.sampled_from([0.0, -0.0, math.inf, math.nan])),
)
@example(want=100.0, got=101.0, tolerance=0.01)
@example(want=7.0, got=7.0, tolerance=-0.5)
def test_last_number_is_numeric_close_and_the_tolerance_rule_holds(want, got, tolerance):
    t, output = task(f"#### {want!r}"), f"so {got!r}"
    expected = got == want if tolerance <= 0 else abs(got - want) <= tolerance * max(1, abs(want))
    assert last_number(tolerance=tolerance)(t, output) == float(expected)
    assert numeric_close(tolerance=tolerance)(t, output) == float(expected)
    assert explain_last_number(t.meta["gold"], output, tolerance=tolerance).score == float(expected)
    assert numeric_close()(t, output) == last_number(tolerance=0.01)(t, output)


# --------------------------------------------------------------------------- SCORERS and scorer()


def test_scorers_name_table_is_agentdescents():
    assert SCORERS == FACTORIES
    assert list(SCORER_INFO) == list(SCORERS)
    for name, factory in SCORERS.items():
        assert SCORER_INFO[name].factory is factory


def test_scorer_resolves_names_and_callables():
    for name in SCORERS:
        resolved = scorer(name)
        assert resolved.__name__ == name
        assert resolved(task("#### 72"), "72") == FACTORIES[name]()(task("#### 72"), "72")
    assert scorer("numeric_close")(task("100"), "99") == 1.0  # called with its defaults

    def mine(t, output):
        return 0.5

    assert scorer(mine) is mine
    ready = last_number(tolerance=0.1)
    assert scorer(ready) is ready


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("rouge", ValueError),
        ("Exact_Match", ValueError),
        (None, TypeError),
        (3, TypeError),
        (["exact_match"], TypeError),
    ],
)
def test_scorer_rejects_anything_else_clearly(value, error):
    with pytest.raises(error) as info:
        scorer(value)
    message = str(info.value)
    assert repr(value) in message and "exact_match" in message


def test_a_factory_added_to_scorers_resolves_by_name(monkeypatch):
    monkeypatch.setitem(SCORERS, "always_half", lambda: lambda t, o: 0.5)
    assert scorer("always_half")(task("x"), "y") == 0.5
