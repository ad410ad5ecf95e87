# cython: boundscheck=False, wraparound=False
"""64-bit hashes of an Arrow text array's values, read straight from its buffers.

:class:`scoring.datasets.parts.DistinctCount` counts a text column's distinct values by their
hashes. Hashing through Python -- each value made a ``str`` object, then hashed by pandas --
cost about 0.8 µs per row of an input whose rows each have their own ground truth (the
``scorer_kwargs`` of every row distinct, 400 bytes each); compiled (``COMPILED_LAYERS``), this
module hashes each value where it lies in the array's data buffer, MurmurHash64A-style, a
tenth of that. From source it keeps the pandas path: a byte loop in Python would be far slower.
Hashes are never stored, only counted, so the two need not agree with each other.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

#: MurmurHash64A's multiplier and shift, and the seed of every hash here
_MULTIPLIER = 0xC6A4A7935BD1E995
_SHIFT = 47
_SEED = 0x9E3779B97F4A7C15
#: Python's ints are unbounded: every product is cut to 64 bits, as the compiled C arithmetic is
_MASK = 0xFFFFFFFFFFFFFFFF


def _mixed(word):
    word = (word * _MULTIPLIER) & _MASK
    word ^= word >> _SHIFT
    return (word * _MULTIPLIER) & _MASK


def _hash_spans(offsets, data, out):
    """``out[i]``: the hash of ``data[offsets[i]:offsets[i + 1]]`` (typed in ``hashing.pxd``)."""
    for i in range(out.shape[0]):
        start = offsets[i]
        end = offsets[i + 1]
        h = (_SEED ^ (((end - start) * _MULTIPLIER) & _MASK)) & _MASK
        k = start
        while k + 8 <= end:
            word = data[k + 7]
            word = (word << 8) | data[k + 6]
            word = (word << 8) | data[k + 5]
            word = (word << 8) | data[k + 4]
            word = (word << 8) | data[k + 3]
            word = (word << 8) | data[k + 2]
            word = (word << 8) | data[k + 1]
            word = (word << 8) | data[k]
            h = ((h ^ _mixed(word & _MASK)) * _MULTIPLIER) & _MASK
            k += 8
        if k < end:
            word = 0
            j = end
            while j > k:
                j -= 1
                word = (word << 8) | data[j]
            h = ((h ^ word) * _MULTIPLIER) & _MASK
        h ^= h >> _SHIFT
        h = (h * _MULTIPLIER) & _MASK
        h ^= h >> _SHIFT
        out[i] = h


#: Whether :func:`_hash_spans` runs compiled here (a compiled function is not a Python function).
HASHED_IN_PLACE = type(_hash_spans).__name__ != "function"


def hashes_through_python(values: pa.Array) -> np.ndarray:
    """Each value made a Python string and hashed by pandas: the way from source (and the
    baseline ``bench/bench_distinct.py`` measures the compiled loop against)."""
    return pd.util.hash_array(values.to_numpy(zero_copy_only=False), categorize=False)


def text_hashes(values: pa.Array) -> np.ndarray:
    """A 64-bit hash of each value of a string or large_string array without nulls (a
    dictionary's values): equal texts hash equal, wherever they sit in which array."""
    if not HASHED_IN_PLACE or not len(values):
        return hashes_through_python(values)
    _, offsets_buffer, data_buffer = values.buffers()
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[values.offset : values.offset + len(values) + 1]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(1, dtype=np.uint8)
    )
    offsets = offsets.astype(np.int64)
    if offsets[0] < 0 or offsets[len(offsets) - 1] > len(data) or (np.diff(offsets) < 0).any():
        # the compiled loop reads without bounds checks: only spans inside the data buffer
        raise ValueError("a text array whose offsets run outside its data")
    out = np.empty(len(values), dtype=np.uint64)
    _hash_spans(offsets, data, out)
    return out


__all__ = ["HASHED_IN_PLACE", "hashes_through_python", "text_hashes"]
