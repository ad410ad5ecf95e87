"""Finding a few rows of a run's table by id without hashing its whole index (no Streamlit).

A run's table is indexed by its row ids, Arrow strings. pandas answers ``row_id in index``,
``.loc[row_id]`` or ``get_indexer`` by hashing every id of the index into a lookup engine the
first time one of them is asked (1-1.5 s for two million ids, per index object), where one scan
of the ids for a few wanted ones takes about 15 ms. A page shows one row, or a page of tiles:
these functions scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.arrays import ArrowExtensionArray, ArrowStringArray


def row_positions(index: pd.Index, ids: Sequence[Any]) -> np.ndarray:
    """Each of ``ids``' position in ``index`` (the first, should one repeat; -1: not there).

    An index of Arrow strings (a run's row ids) is scanned for them: pandas' own lookup hashes
    the whole index into its engine the first time (1-1.5 s for two million ids) where one scan
    takes about 15 ms, and a page looks up a few rows. Any other index is scanned against the
    few ids hashed."""
    ids = list(ids)
    if not ids or not len(index):
        return np.full(len(ids), -1, dtype=np.intp)
    distinct = list(dict.fromkeys(ids))
    which = None
    if isinstance(index.array, ArrowExtensionArray | ArrowStringArray):
        values = pa.array(index.array)
        try:
            wanted = pa.array(distinct, type=values.type)
        except (pa.ArrowException, TypeError, ValueError):  # an id the index's type cannot hold
            wanted = None
        if wanted is not None:
            which = np.asarray(
                pc.index_in(values, value_set=wanted).fill_null(-1).to_numpy(zero_copy_only=False)
            )
    if which is None:  # the few ids hashed, the index scanned against them
        which = pd.Index(distinct, dtype=object).get_indexer(index.astype(object))
    rows = np.flatnonzero(which >= 0)
    found, first = np.unique(which[rows], return_index=True)
    at = np.full(len(distinct), -1, dtype=np.intp)
    at[found] = rows[first]
    place = dict(zip(distinct, at.tolist(), strict=True))
    return np.array([place[i] for i in ids], dtype=np.intp)


def has_row(index: pd.Index, row_id: Any) -> bool:
    """``row_id in index``, by :func:`row_positions` (an unhashable id is in no index)."""
    try:
        return bool(row_positions(index, [row_id])[0] >= 0)
    except TypeError:
        return False


__all__ = ["has_row", "row_positions"]
