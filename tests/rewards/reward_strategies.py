"""What the scoring.rewards tests share: a task with a gold answer, the four factories, and the
hypothesis strategies for hostile text and number-like text."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import strategies as st

from scoring.rewards import contains, exact_match, last_number, numeric_close

FACTORIES = {
    "exact_match": exact_match,
    "contains": contains,
    "last_number": last_number,
    "numeric_close": numeric_close,
}


def task(gold, *, task_id="t", key="gold"):
    """A task as agentdescent hands one to a scorer: an id and ``meta[key]`` holding the gold answer."""
    return SimpleNamespace(id=task_id, meta={key: gold})


ANY_CHAR_TEXT = st.text(st.characters())
SPECIAL = st.sampled_from(
    [
        "\x00",
        "\ud800",
        "\udfff",
        "1" * 400,
        "1e999",
        "-1e999",
        "9" * 5000,
        "1,234",
        ".5",
        "$",
        "-",
        "\u2212",
        "e",
        ",",
        " ",
        "\n",
        "£",
        "€",
    ]
)
TEXTS = st.lists(st.one_of(ANY_CHAR_TEXT, SPECIAL, st.integers(0xD800, 0xDFFF).map(chr)), max_size=8).map(
    "".join
)
NUMBERISH = st.text(st.sampled_from("0123456789,.eE+-\u2212$£€ x()%_"), max_size=40)
GOLDS = st.one_of(TEXTS, st.integers().map(str), st.floats().map(repr), NUMBERISH)
