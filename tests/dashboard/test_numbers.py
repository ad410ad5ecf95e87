"""The app's one number policy: significant digits, no float expansions, percentages, plurals."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard import numbers

FINITE = st.floats(allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1e-16, "1e-16"),  # Overview's max_abs_diff: not 0.0000000000000001
        (3.2e-30, "3.2e-30"),  # a tiny annotation score: not a wall of zeros
        (0.082, "0.082"),
        (0.73512345, "0.7351"),
        (2 / 3, "0.6667"),
        (1.0, "1"),
        (0.5, "0.5"),
        (-0.25, "-0.25"),
        (1547.0, "1,547"),
        (7, "7"),
        (12345.678, "12,345.7"),
        (0.000001234, "0.000001234"),
        (1.234e-7, "1.234e-7"),
        (math.nan, "—"),
        (None, "—"),
    ],
)
def test_number_examples(value, shown):
    assert numbers.number(value) == shown


@given(FINITE)
def test_number_never_expands_a_float(value):
    text = numbers.number(value)
    fraction = re.search(r"\.(\d+)", text)
    assert fraction is None or len(fraction.group(1)) <= 12


@given(st.floats(min_value=1e-300, max_value=1e4, allow_nan=False).filter(lambda v: not float(v).is_integer()))
def test_number_keeps_four_significant_digits(value):
    shown = float(numbers.number(value).replace(",", ""))
    assert shown == pytest.approx(value, rel=5e-4)
    assert shown == float(f"{value:.{numbers.SIGNIFICANT}g}")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.131, "13.1%"), (0.082, "8.2%"), (0.5, "50%"), (1.0, "100%"), (0.0, "0%"), (0.0825, "8.25%"), (math.nan, "—")],
)
def test_percent(value, shown):
    assert numbers.percent(value) == shown


def test_signed_and_points():
    assert numbers.signed(0.0125) == "+0.0125" and numbers.signed(-1e-17) == "-1e-17" and numbers.signed(0.0) == "0"
    assert numbers.points(0.0125) == "+1.25 pts" and numbers.points(-0.1) == "-10 pts"


@pytest.mark.parametrize(
    ("count", "noun", "shown"),
    [(1, "error", "1 error"), (6, "error", "6 errors"), (1, "warning", "1 warning"), (0, "row", "0 rows"),
     (2, "match", "2 matches"), (3, "query", "3 queries"), (2, "day", "2 days"), (1234, "row", "1,234 rows")],
)
def test_plural(count, noun, shown):
    assert numbers.plural(count, noun) == shown


def test_counted_joins_the_non_zero_counts():
    assert numbers.counted([(6, "error"), (1, "warning")]) == "6 errors, 1 warning"
    assert numbers.counted([(0, "error"), (2, "warning")]) == "2 warnings"
    assert numbers.counted([(0, "error")]) == "none"


def test_table_formats_follow_the_policy():
    frame = pd.DataFrame({
        "score": [0.5, 1e-30, np.nan],
        "step": [100.0, 200.0, np.nan],  # whole numbers stored as floats
        "rows": [1, 2, 3],
        "solve_rate": [0.1, 0.2, 0.3],
        "zero_signal_share": [0.0, 0.5, 1.0],
        "solve_before": [0.1, 0.25, 0.5],  # Tuning's per-task solve rates
        "pixels": [12345.5, 2.25, 3.0],
        "task": ["a", "b", "c"],
        "solved": [True, False, True],
    })
    assert numbers.table_formats(frame) == {
        "score": numbers.FRACTION_FORMAT, "step": numbers.WHOLE_FORMAT, "rows": numbers.WHOLE_FORMAT,
        "solve_rate": numbers.PERCENT_FORMAT, "zero_signal_share": numbers.PERCENT_FORMAT,
        "solve_before": numbers.PERCENT_FORMAT,
        "pixels": numbers.LARGE_FORMAT,
    }


def test_object_columns_of_numbers_become_numbers():
    frame = pd.DataFrame({"value": pd.Series([0.5, None, 1e-20], dtype=object), "text": ["a", "b", None]})
    out = numbers.numeric_columns(frame)
    assert out["value"].dtype == np.float64 and not pd.api.types.is_numeric_dtype(out["text"])
    assert numbers.table_formats(out) == {"value": numbers.FRACTION_FORMAT}
    assert numbers.numeric_columns(out) is out  # nothing to change: no copy


def test_sparse_columns_are_made_dense_for_tables():
    values = np.array([0.0, 0.0, 0.5, np.nan, 0.0])
    frame = pd.DataFrame({"reward": pd.arrays.SparseArray(values, fill_value=0.0), "n": [1, 2, 3, 4, 5]})
    out = numbers.numeric_columns(frame)
    assert out["reward"].dtype == np.float64
    np.testing.assert_array_equal(out["reward"].to_numpy(), values)
    assert isinstance(frame["reward"].dtype, pd.SparseDtype)  # the caller's frame is left as it was
