"""How the app shows numbers and counts: one policy for every table, metric and caption (no Streamlit).

* A fraction (a reward, a mean, an IoU …) shows :data:`SIGNIFICANT` significant digits, without
  trailing zeros: ``0.082``, ``0.7351``, ``1``; a tiny one switches to exponent notation
  (``1e-16``, ``3.2e-30``) instead of a wall of zeros.
* A column whose values are all whole numbers (steps, lines, counts) shows them whole.
* A rate or share (solve rate, no-signal share …) shows as a percentage everywhere: ``13.1%``.
* The exact value stays available: metric tooltips, the Inspector's flat result and every download
  carry the unrounded numbers.

Tables get the same look from the browser: :func:`column_format` returns the printf format
Streamlit's ``NumberColumn`` hands to sprintf-js, whose ``%.4g`` is
``String(Number(x.toPrecision(4)))`` -- the rule :func:`number` follows in Python.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

#: Significant digits of every shown fraction.
SIGNIFICANT = 4
#: Below this magnitude (and from :data:`_EXPONENT_HIGH` up) a number is written with an exponent,
#: as JavaScript's ``String(number)`` does.
_EXPONENT_LOW, _EXPONENT_HIGH = 1e-6, 1e21
#: What an undefined number (NaN, None) shows.
MISSING = "—"
#: Table formats (Streamlit ``NumberColumn(format=...)``).
FRACTION_FORMAT = f"%.{SIGNIFICANT}g"
WHOLE_FORMAT = "%d"
PERCENT_FORMAT = "percent"
#: Magnitude from which a non-whole column keeps one decimal instead of significant digits
#: (rounding 123456.7 to 123500 would change what the number says).
LARGE = 10 ** SIGNIFICANT
LARGE_FORMAT = "%.1f"
#: Column names that hold a share in [0, 1], shown as a percentage.
PERCENT_NAME = re.compile(r"(^|[ _])(rate|share|fraction|pct|solve)($|[ _])", re.IGNORECASE)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, Real) and math.isnan(float(value)))


def significant(value: float, digits: int = SIGNIFICANT) -> str:
    """``value`` rounded to ``digits`` significant digits, written as JavaScript writes numbers
    (no trailing zeros; an exponent only for tiny or huge magnitudes)."""
    rounded = float(f"{value:.{digits}g}")
    if rounded == 0:
        return "0"
    if not math.isfinite(rounded):
        return str(rounded)
    if _EXPONENT_LOW <= abs(rounded) < _EXPONENT_HIGH:
        return np.format_float_positional(rounded, trim="-")
    mantissa, exponent = f"{rounded:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent):+d}".replace("e+", "e+" if abs(rounded) >= 1 else "e")


def number(value: Any, digits: int = SIGNIFICANT) -> str:
    """A number for a metric tile or a sentence: whole numbers whole (``1,547``), fractions with
    ``digits`` significant digits; :data:`MISSING` when undefined."""
    if _missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return f"{int(value):,}"
    value = float(value)
    if value.is_integer() and abs(value) < _EXPONENT_HIGH:
        return f"{int(value):,}"
    if LARGE <= abs(value) < _EXPONENT_HIGH:
        return f"{value:,.1f}"
    return significant(value, digits)


def percent(value: Any) -> str:
    """A share in [0, 1] as a percentage with at most two decimals (``13.1%``, ``8.25%``),
    as Streamlit's ``percent`` column format shows it."""
    if _missing(value):
        return MISSING
    text = f"{100 * float(value):.2f}".rstrip("0").rstrip(".")
    return f"{'0' if text in ('-0', '') else text}%"


def signed(value: Any, digits: int = SIGNIFICANT) -> str:
    """A difference with its sign (``+0.0125``, ``-3e-7``, ``0``)."""
    if _missing(value):
        return MISSING
    text = number(value, digits)
    return text if text.startswith("-") or text == "0" else "+" + text


def points(value: Any) -> str:
    """A difference of two shares in percentage points (``+1.25 pts``)."""
    if _missing(value):
        return MISSING
    text = f"{100 * float(value):+.2f}".rstrip("0").rstrip(".")
    return f"{text} pts"


def exact(value: Any) -> str:
    """The unrounded value, for a tooltip."""
    return MISSING if _missing(value) else f"exact value: {float(value)!r}"


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 error``, ``6 errors``, ``1,234 rows``; ``plural_form`` for irregular nouns."""
    many = plural_form if plural_form is not None else _plural_of(noun)
    return f"{count:,} {noun if count == 1 else many}"


def verb(count: int, one: str, many: str) -> str:
    """The verb agreeing with ``count``: ``verb(1, "has", "have")`` -> ``has``."""
    return one if count == 1 else many


def _plural_of(noun: str) -> str:
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + "s"


def counted(parts: Iterable[tuple[int, str]]) -> str:
    """``6 errors, 1 warning``: the non-zero counts, joined."""
    shown = [plural(n, noun) for n, noun in parts if n]
    return ", ".join(shown) if shown else "none"


# --------------------------------------------------------------------------- tables


def is_percent_column(name: Any) -> bool:
    return bool(PERCENT_NAME.search(str(name)))


def column_format(name: Any, values: pd.Series) -> str | None:
    """The ``NumberColumn`` format of one column under the policy (None: not a number column)."""
    if values.dtype == bool or not pd.api.types.is_numeric_dtype(values.dtype):
        return None
    if is_percent_column(name):
        return PERCENT_FORMAT
    if pd.api.types.is_integer_dtype(values.dtype):
        return WHOLE_FORMAT
    array = values.array.to_numpy(dtype=np.float64, na_value=np.nan)
    finite = array[np.isfinite(array)]
    if finite.size and np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 2**53):
        return WHOLE_FORMAT
    if finite.size and np.abs(finite).max() >= LARGE:
        return LARGE_FORMAT
    return FRACTION_FORMAT


def numeric_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with object columns that hold only numbers (and gaps) turned into float columns,
    so they get a number format too, and sparse columns (an opened dataset holds nearly constant
    ones so) made dense, which Arrow, behind ``st.dataframe``, requires (a copy only when
    something changes)."""
    changed = {}
    for name in frame.columns:
        column = frame[name]
        if isinstance(column.dtype, pd.SparseDtype):
            changed[name] = column.sparse.to_dense()
            continue
        if column.dtype != object:
            continue
        kind = pd.api.types.infer_dtype(column, skipna=True)
        if kind in ("floating", "mixed-integer-float", "integer", "decimal"):
            changed[name] = pd.to_numeric(column, errors="coerce")
    return frame.assign(**changed) if changed else frame


def table_formats(frame: pd.DataFrame) -> dict[Any, str]:
    """Column -> ``NumberColumn`` format for every number column of ``frame`` (after
    :func:`numeric_columns`)."""
    formats = {}
    for name in frame.columns:
        fmt = column_format(name, frame[name])
        if fmt is not None:
            formats[name] = fmt
    return formats
