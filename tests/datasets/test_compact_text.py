"""scoring.datasets.compact._compact_text: an id column in the fewer bytes of its two forms
(a categorical with sorted categories, or 32-bit Arrow strings), every value kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from scoring.datasets.compact import _compact_text

#: Ids that sort differently by code point, byte, case and length (Python sorts by code point).
IDS = ["", "a", "B", "b", "ab", "é", "É", "ß", "z", "日本", "😀", "\U0001f600x", "ｚ", "a b", "10", "9", "9a" * 20]


def _forms(values: list[str | None]) -> tuple[pd.Series, pd.Series, int]:
    """The column's plain and categorical forms, built the obvious way, and the bytes the rule
    weighs for the categorical: its codes and its distinct values (in order of appearance)."""
    column = pd.Series(values, dtype="str")
    plain = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(column.array).cast(pa.string())))
    present = sorted({v for v in values if v is not None})
    categorical = pd.Series(pd.Categorical(column, categories=pd.Index(present, dtype="str")))
    distinct = pd.Index(list(dict.fromkeys(v for v in values if v is not None)), dtype="str")
    return plain, categorical, categorical.cat.codes.dtype.itemsize * len(values) + distinct.memory_usage(deep=True)


@given(st.lists(st.one_of(st.none(), st.sampled_from(IDS), st.text(max_size=12)), max_size=60),
       st.integers(0, 40))  # fmt: skip
def test_an_id_column_takes_the_fewer_bytes_of_its_two_forms_and_keeps_every_value(values, repeats):
    values = values + values[:1] * repeats  # some columns repeat one id many times: categories win
    column = pd.Series(values, dtype="str")
    compact = _compact_text(column)
    plain, categorical, weighed = _forms(values)
    smaller = weighed < plain.memory_usage(deep=True, index=False)
    assert isinstance(compact.dtype, pd.CategoricalDtype) == smaller
    if smaller:
        assert compact.cat.categories.tolist() == sorted({v for v in values if v is not None})
        assert compact.cat.categories.dtype == "str"
        np.testing.assert_array_equal(compact.cat.codes.to_numpy(), categorical.cat.codes.to_numpy())
        assert compact.cat.codes.dtype == categorical.cat.codes.dtype
    else:
        assert compact.dtype == pd.ArrowDtype(pa.string())
    assert compact.astype(object).where(compact.notna(), None).tolist() == values


def test_unique_ids_stay_strings_and_repeated_ones_become_categories():
    unique = pd.Series([f"row-{i:07d}" for i in range(5000)], dtype="str")
    assert _compact_text(unique).dtype == pd.ArrowDtype(pa.string())
    repeated = pd.Series([f"instance-{i % 50:03d}" for i in range(5000)], dtype="str")
    compact = _compact_text(repeated)
    assert isinstance(compact.dtype, pd.CategoricalDtype) and len(compact.cat.categories) == 50
    assert compact.cat.codes.dtype == np.int8
