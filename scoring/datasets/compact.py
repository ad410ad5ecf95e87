"""The opened dataset's table in fewer bytes, every value kept (:func:`compact_table`), and
back (:func:`widened`).

A million-row run is held by the app for as long as it is open: its float columns that repeat one
value become sparse, equal float columns share one array, integers take the narrowest width that
holds them and ids become categories or 32-bit Arrow strings -- and :func:`widened` gives the batch
table's dtypes back, bit for bit (``-0.0`` and NaN included).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..runs import CATEGORY_COLUMNS, INT_COLUMNS, MISMATCH_COLUMN

#: A float column whose values other than its most common one are at most this share of the
#: rows is held sparse (the common value as fill): 12 bytes per other value instead of 8 per row.
SPARSE_MAX_SHARE = 0.4
#: Rows sampled to find a column's most common value (see :func:`_compact_numbers`).
_SAMPLE_ROWS = 4096


#: The one bit pattern :func:`_bits` gives every NaN.
_NAN_BITS = np.array([np.nan]).view(np.uint64)[0]


def _bits(values: np.ndarray) -> np.ndarray:
    """A float64 array's bit patterns: equal bits are the same value, -0.0 included. Every NaN
    has one pattern: a sparse column holds its NaNs as its fill, without their payloads, and a
    column equal to it but for those is still its twin."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    bits = values.view(np.uint64)
    missing = np.isnan(values)
    if missing.any():
        bits = bits.copy()
        bits[missing] = _NAN_BITS
    return bits


def _compact_numbers(values: np.ndarray, index: pd.Index) -> pd.Series:
    """A float64 column as a sparse one (same values, fill = its most common value) when few
    rows differ from that value; else as it is."""
    n = len(values)
    if n == 0:
        return pd.Series(values, index=index, copy=False)
    # the candidate: the most common value of a random sample (fixed seed; evenly spaced rows
    # would follow a period in the data): a value held by most rows is that, but for vanishing
    # odds, and the rows holding another are then found exactly (once: they are the sparse values)
    sample = values[np.random.default_rng(0).integers(0, n, min(n, _SAMPLE_ROWS))]
    sampled_nan = np.isnan(sample)
    if sampled_nan.sum() * 2 >= len(sample):
        common = np.nan
        other = ~np.isnan(values)
    else:
        distinct, counts = np.unique(sample[~sampled_nan], return_counts=True)
        common = float(distinct[counts.argmax()])
        other = values != common
        if common == 0.0 and np.count_nonzero(other) != np.count_nonzero(_bits(values) != _bits(np.array([common]))[0]):
            # 0.0 and -0.0 both: a sparse array would give every one of them the fill's sign
            return pd.Series(values, index=index, copy=False)
    rows = np.flatnonzero(other)
    if len(rows) > SPARSE_MAX_SHARE * n:
        return pd.Series(values, index=index, copy=False)
    sparse = pd.arrays.SparseArray.from_indices(values[rows], rows, n, fill_value=common, dtype=np.float64)
    return pd.Series(sparse, index=index)


class Twin(NamedTuple):
    """A float column equal bit for bit to the earlier column ``name`` (:class:`TableCompactor`
    with ``recall``): it is that column under another name."""

    name: str


class TableCompactor:
    """:func:`compact_table` a few columns at a time (:meth:`add`), for a table read a group of
    columns at a time: a float column equal bit for bit to one of an earlier call still holds
    that column's very array.

    ``recall``: for a table written a group at a time and never held whole
    (:func:`scoring.datasets.write_table`): an earlier column is not kept once the next group
    comes (its caller has written it by then) but asked of ``recall(name)`` when a later one
    might equal it, and a column that does is given as a :class:`Twin`."""

    def __init__(self, rows: int, recall: Callable[[str], np.ndarray] | None = None):
        n = rows
        self.probe = np.random.default_rng(1).integers(0, n, min(n, _SAMPLE_ROWS)) if n else np.zeros(0, np.intp)
        #: a sample's bits -> the float columns holding them: (name, compact column; None once
        #: written, with ``recall``)
        self.held: dict[bytes, list[list]] = {}
        self.recall = recall
        self.fresh: list[list] = []

    def add(self, table: pd.DataFrame) -> dict[str, pd.Series | Twin]:
        """``table``'s columns, each in its compact dtype (or a :class:`Twin`, with ``recall``)."""
        for entry in self.fresh:  # the last group's columns: written by now
            entry[1] = None
        self.fresh = []
        numbers = self._shared_numbers(table)
        columns: dict[str, pd.Series | Twin] = {}
        for name, column in table.items():
            if name in numbers:
                columns[name] = numbers[name]
            elif name in INT_COLUMNS:
                columns[name] = _compact_integers(column)
            elif isinstance(column.dtype, pd.StringDtype):
                columns[name] = _compact_text(column)
            else:
                columns[name] = column
        return columns

    def _shared_numbers(self, table: pd.DataFrame) -> dict[str, pd.Series | Twin]:
        """Every float64 column compacted (:func:`_compact_numbers`); columns equal bit for bit to
        an earlier one hold that column's very array (one buffer, whatever the count of names)."""
        out: dict[str, pd.Series | Twin] = {}
        for name, dtype in table.dtypes.items():
            if dtype != np.float64:
                continue
            values = table[name].to_numpy(dtype=np.float64)
            bits = _bits(values)
            same = self.held.setdefault(bits[self.probe].tobytes(), [])  # a sample's bits: a cheap first sieve
            # compared with each candidate's compact column (a sparse one made dense for the while):
            # the dense arrays of the columns already read are not kept for it
            twin = next((entry for entry in same if np.array_equal(_bits(self._values(entry)), bits)), None)
            if twin is None:
                entry = [name, _compact_numbers(values, table.index)]
                same.append(entry)
                if self.recall is not None:
                    self.fresh.append(entry)
                out[name] = entry[1]
            else:
                out[name] = twin[1] if self.recall is None else Twin(twin[0])
        return out

    def _values(self, entry: list) -> np.ndarray:
        name, column = entry
        return column.to_numpy(np.float64) if column is not None else self.recall(name)


#: Signed widths an integer column is held in, narrowest first (unsigned would wrap under a
#: subtraction that goes below zero).
INTEGER_WIDTHS = (np.int8, np.int16, np.int32, np.int64)


def category_codes_dtype(count: int) -> np.dtype:
    """The width pandas gives the codes of a categorical of ``count`` categories
    (``coerce_indexer_dtype``): the narrowest of :data:`INTEGER_WIDTHS` whose maximum exceeds it."""
    return np.dtype(next(w for w in INTEGER_WIDTHS if count < np.iinfo(w).max))


def _compact_integers(column: pd.Series) -> pd.Series:
    """An integer column in the narrowest of :data:`INTEGER_WIDTHS` holding its range: a numpy
    integer when no value is missing, else pandas' nullable integer of that width."""
    missing = column.isna().to_numpy()
    values = column.to_numpy(dtype=np.int64, na_value=0)
    present = values[~missing]
    low, high = (int(present.min()), int(present.max())) if len(present) else (0, 0)
    width = next(w for w in INTEGER_WIDTHS if np.iinfo(w).min <= low and high <= np.iinfo(w).max)
    narrow = values.astype(width)
    if missing.any():
        return pd.Series(pd.arrays.IntegerArray(narrow, missing), index=column.index)
    return pd.Series(narrow, index=column.index, copy=False)


def _compact_text(column: pd.Series) -> pd.Series:
    """A text column as a categorical (categories sorted) when its codes and distinct values
    take fewer bytes than its values one per row, else as Arrow strings with 32-bit offsets
    (the batch table's strings have 64-bit ones). Built without a Python string per value, and
    the plain strings only made when they may be the smaller: an id column of ten million rows
    takes about what its result does beside it."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    categories = pd.Index(uniques, dtype="str")
    del uniques
    held = category_codes_dtype(len(categories)).itemsize * len(column) + categories.memory_usage(deep=True)
    if held >= _least_plain_bytes(column):  # the plain strings may take fewer: made and weighed
        del codes, categories
        plain = pd.Series(
            pd.arrays.ArrowExtensionArray(pa.array(column.array).cast(pa.string())), index=column.index
        )
        if held >= plain.memory_usage(deep=True, index=False):
            return plain
        del plain
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        categories = pd.Index(uniques, dtype="str")
    # sorted as Python sorts them (what _category gives): UTF-8's byte order is code point order
    order = pc.array_sort_indices(pa.array(categories.array)).to_numpy()
    rank = np.empty(len(order) + 1, dtype=category_codes_dtype(len(order)))
    rank[order] = np.arange(len(order))
    rank[-1] = -1  # code -1 (missing) picks it
    return pd.Series(
        pd.Categorical.from_codes(rank[codes], categories=categories[order], validate=False), index=column.index
    )


def _least_plain_bytes(column: pd.Series) -> int:
    """The fewest bytes ``column`` takes as Arrow strings with 32-bit offsets: an offset per row
    and the values' own bytes."""
    lengths = pc.binary_length(pa.array(column.array))
    return 4 * len(column) + int(pc.sum(lengths).as_py() or 0)


def compact_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a batch table without its text columns) in the dtypes of
    :func:`open_dataset`'s compact table: the same values in fewer bytes; :func:`widened`
    gives the batch table's dtypes back."""
    out = pd.DataFrame(TableCompactor(len(table)).add(table), copy=False)
    out.attrs = dict(table.attrs)
    return out


def widened(table: pd.DataFrame) -> pd.DataFrame:
    """A compact table (:func:`compact_table`) in the batch table's dtypes again, every value as it
    was: Int64 integers, float64 numbers, ``str`` text outside the category columns."""
    columns: dict[str, Any] = {}
    for name, column in table.items():
        dtype = column.dtype
        if isinstance(dtype, pd.SparseDtype) or (dtype.kind == "f" and dtype != np.float64):
            column = pd.Series(column.to_numpy(dtype=np.float64), index=column.index)
        elif name in INT_COLUMNS and dtype != "Int64":
            column = column.astype("Int64")
        elif name not in CATEGORY_COLUMNS and name != MISMATCH_COLUMN and isinstance(
            dtype, (pd.CategoricalDtype, pd.ArrowDtype)
        ):
            column = pd.Series(pd.array(column.to_numpy(dtype=object, na_value=None), dtype="str"),
                               index=column.index)  # fmt: skip
        columns[name] = column
    out = pd.DataFrame(columns, copy=False)
    out.attrs = dict(table.attrs)
    return out


def held_bytes(table: pd.DataFrame) -> pd.Series:
    """Bytes each column holds (``memory_usage(deep=True)``), a float array shared with an
    earlier column (see :func:`compact_table`) counted once, at that column: what the table
    costs in memory, where ``memory_usage`` counts a shared array once per name."""
    usage = table.memory_usage(deep=True, index=False)
    seen: set[int] = set()
    for position, column in enumerate(table[name] for name in table.columns):
        array = column.array
        if isinstance(array, pd.arrays.SparseArray):
            values = array.sp_values
        elif column.dtype == np.float64:
            values = column.to_numpy()
        else:
            continue
        address = values.__array_interface__["data"][0] if values.size else None
        if address is not None and address in seen:
            usage.iloc[position] = 0
        elif address is not None:
            seen.add(address)
    return usage


__all__ = ["INTEGER_WIDTHS", "SPARSE_MAX_SHARE", "TableCompactor", "Twin", "compact_table", "held_bytes", "widened"]
