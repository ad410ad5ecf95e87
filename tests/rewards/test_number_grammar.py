"""The number grammar of scoring.rewards (agentdescent's, kept as a drop-in) and the signed reading."""

from __future__ import annotations

import string

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from reward_strategies import NUMBERISH, TEXTS, task

from scoring.rewards import (
    READING_AGENTDESCENT,
    READING_SIGNED,
    READINGS,
    explain_last_number,
    explain_numeric_close,
    last_number,
    numeric_close,
    read_last_number,
    read_numbers,
    score_rows,
)
from scoring.rewards import simple as rewards

# --------------------------------------------------------------------------- drop-in: the number grammar

UNICODE_DIGIT_ZEROS = sorted({ord(c) - int(c) for c in map(chr, range(0x110000)) if c.isdecimal()})


def in_digits(text, zero):
    """``text`` with its ASCII digits written in the script whose zero is ``chr(zero)``."""
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in text)


@given(n=st.integers(-(10**30), 10**30), zero=st.sampled_from(UNICODE_DIGIT_ZEROS))
@example(n=42, zero=0xFF10)
def test_any_script_and_thousands_groups_read_the_same_value(n, zero):
    for rendered in (f"{n}", f"{n:,}", f"{n:,}.", f"{abs(n):,}.25"):
        text = in_digits(rendered, zero)
        want = float(rendered.replace(",", ""))
        assert read_last_number(f"The total is {text}").value == want
        assert read_last_number(f"#### {text}\n").value == want


DIGITS_AND_POINTS = st.text(st.sampled_from("0123456789.,-+eE $x()\u0665"), max_size=30)


@given(text=st.one_of(DIGITS_AND_POINTS, NUMBERISH))
@example(text="v1.2.3")
@example(text="1,234,5678")
@example(text="12.34.56")
def test_a_number_never_starts_after_a_digit_or_digit_point_and_never_ends_before_a_digit(text):
    for reading in READINGS:
        for read in read_numbers(text, reading=reading):
            before, after = text[: read.start], text[read.end :]
            assert not before[-1:].isdecimal()
            assert not (before[-1:] == "." and before[-2:-1].isdecimal())
            assert not after[:1].isdecimal()
            if read.text.lstrip("+-\u2212$£€¥").startswith("."):
                assert before[-1:] != "." and not read.text[0].isdecimal()


@given(
    before=st.characters(codec="utf-8") | st.sampled_from("aZ9)]}(-+$. \u0665\u00e9"),
    sign=st.sampled_from("-+"),
    n=st.integers(1, 10**6),
)
def test_a_sign_counts_unless_an_ascii_letter_digit_or_closing_bracket_precedes_it(before, sign, n):
    text = f"{before}{sign}{n}"
    breaks = before in string.ascii_letters or before.isdecimal() or before in ")]}"
    value = read_last_number(text).value
    if breaks or sign == "+":
        assert value == n
    else:
        assert value == -n
    # The Unicode minus is never a sign, and a currency symbol ends any sign.
    assert read_last_number(f"{before}\u2212{n}").value == n
    assert read_last_number(f"{before}-${n}").value == n


@given(
    head=st.one_of(TEXTS, NUMBERISH),
    n=st.integers(-(10**9), 10**9),
    separator=st.sampled_from([" ", "\n", " = ", ": ", " is "]),
)
def test_the_last_match_is_taken(head, n, separator):
    read = read_last_number(f"{head}{separator}{n}")
    assert read.value == n and read.text == str(n)
    # A non-finite last number means no number: no fallback to an earlier one.
    t = task(str(n))
    assert last_number()(t, f"{head}{separator}{n}") == 1.0
    assert last_number()(t, f"{n}{separator}1e999") == 0.0
    with pytest.raises(ValueError, match="not finite"):
        last_number()(task(f"{n}{separator}1e999"), str(n))


# --------------------------------------------------------------------------- the signed reading


@pytest.mark.parametrize(
    ("text", "default", "signed", "signed_text"),
    [
        ("-$18", 18.0, -18.0, "-$18"),
        ("It fell -€3.50.", 3.5, -3.5, "-€3.50"),
        ("+£5", 5.0, 5.0, "+£5"),
        ("x = \u22125", 5.0, -5.0, "\u22125"),
        ("pages 2-$5", 5.0, 5.0, "5"),  # a digit before the sign still breaks it
        ("a\u22125", 5.0, 5.0, "5"),
        ("$-18", -18.0, -18.0, "-18"),
        ("v1.2.3", 1.2, 1.2, "1.2"),
    ],
)
def test_the_signed_reading(text, default, signed, signed_text):
    assert read_last_number(text).value == default
    assert read_last_number(text, reading=READING_AGENTDESCENT).value == default
    read = read_last_number(text, reading=READING_SIGNED)
    assert (read.value, read.text) == (signed, signed_text)


@given(text=st.one_of(TEXTS, NUMBERISH))
def test_the_signed_reading_differs_only_in_sign_and_span(text):
    default = read_numbers(text)
    signed = read_numbers(text, reading=READING_SIGNED)
    if "\u2212" not in text:  # the Unicode minus may move where a later number starts
        assert [abs(r.value) for r in signed] == [abs(r.value) for r in default]
        assert [r.end for r in signed] == [r.end for r in default]


def test_scorers_and_explanations_take_the_reading():
    t = task("-18")
    assert last_number()(t, "-$18") == 0.0
    assert last_number(reading=READING_SIGNED)(t, "-$18") == 1.0
    assert numeric_close(reading=READING_SIGNED)(task("-100"), "-$99.5") == 1.0
    assert last_number(reading=READING_SIGNED)(task("-$18"), "-18") == 1.0  # the gold is read the same way
    e = explain_numeric_close("-18", "-$18", reading=READING_SIGNED)
    assert (e.score, e.reading, e.output_number.text) == (1.0, READING_SIGNED, "-$18")
    assert (
        e.reason == "last number in output -18 differs from -18 from gold by 0 <= allowed 0.18 "
        "(tolerance 0.01 x max(1, |-18|)) [reading 'signed']"
    )
    assert explain_last_number("-18", "-$18").reading == READING_AGENTDESCENT
    assert score_rows("last_number", ["-18"], ["-$18"], reading=READING_SIGNED) == [1.0]
    assert rewards.explain("numeric_close", "-18", "-$18", reading=READING_SIGNED).reading == READING_SIGNED
