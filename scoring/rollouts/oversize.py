"""Records over the size one record may have (``line_bytes``): which field makes them so, and
how big records are before they become Python objects.

A JSONL line over the limit is skipped without ever being held whole; the text read up to the
limit is scanned for the field whose value it passes the limit in (:func:`field_at_limit`), so
the error names file, line and field. A Parquet batch's rows are measured in Arrow -- every text,
binary and nested value's bytes -- before any becomes a Python record (:func:`arrow_row_bytes`):
a row over the limit becomes an error naming its largest column, and the rows around it are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NEXT = {bytes: re.compile(rb'["{}\[\]:,]'), str: re.compile(r'["{}\[\]:,]')}
_STRING = {
    bytes: re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL),
    str: re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL),
}
#: Tokens scanned at most for a field name (a line of millions of tiny values is not worth more).
SCAN_TOKENS_MAX = 1_000_000


def field_at_limit(text: bytes | str, end: int | None = None, start: int = 0) -> str | None:
    """The field -- object keys from the top, dotted (arrays passed through) -- whose value
    the JSON text of one record (from ``start``) is inside at ``end`` (default: where ``text``
    ends); None when it is between fields there, is not an object's, or holds too many tokens
    to scan. Strings are stepped over whole, never searched, so a key quoted inside a response
    is not taken for one."""
    kind = type(text)
    end = len(text) if end is None else min(end, len(text))
    search, match = _NEXT[kind].search, _STRING[kind].match

    def find(text: bytes | str, position: int):
        return search(text, position, end)

    def string(text: bytes | str, position: int):
        return match(text, position, end)

    stack: list[list[Any]] = []  # per open container: [is an object, its current key]
    pending: Any = None  # the last string read in an object: its key if a colon follows
    position = start
    for _ in range(SCAN_TOKENS_MAX):
        found = find(text, position)
        if found is None:
            break
        at = found.start()
        mark = text[at : at + 1]
        if mark in (b'"', '"'):
            closed = string(text, at)
            if closed is None:  # the text ends inside this string
                break
            pending, position = closed.group(), closed.end()
            continue
        position = at + 1
        if mark in (b"{", "{", b"[", "["):
            stack.append([mark in (b"{", "{"), None])
        elif mark in (b"}", "}", b"]", "]"):
            if stack:
                stack.pop()
        elif mark in (b",", ","):
            if stack and stack[-1][0]:  # between an object's fields
                stack[-1][1] = None
        elif stack and stack[-1][0] and pending is not None:  # a colon: the string before it is a key
            stack[-1][1] = _key(pending)
        pending = None
    else:
        return None
    keys = [key for is_object, key in stack if is_object and key is not None]
    return ".".join(keys) or None


def _key(token: bytes | str) -> str:
    try:
        value = json.loads(token)
    except ValueError:
        value = token[1:-1].decode("utf-8", "replace") if isinstance(token, bytes) else token[1:-1]
    return str(value)


def arrow_row_bytes(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """Each row's bytes of text, binary and nested values (fixed-width values count 8), and the
    position of its largest column."""
    n = batch.num_rows
    if not batch.num_columns:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.intp)
    sizes = np.stack([_value_bytes(column) for column in batch.columns])
    return sizes.sum(axis=0), sizes.argmax(axis=0)


def _value_bytes(values: pa.Array) -> np.ndarray:
    """Bytes of each value of ``values`` (nulls: 0)."""
    kind = values.type
    n = len(values)
    if pa.types.is_dictionary(kind):
        sizes = _value_bytes(values.dictionary)
        if not len(sizes):
            return np.zeros(n, dtype=np.int64)
        taken = sizes[pc.fill_null(values.indices, 0).to_numpy(zero_copy_only=False)]
        return np.where(values.is_valid().to_numpy(zero_copy_only=False), taken, 0)
    if (
        pa.types.is_string(kind) or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
    ):  # fmt: skip
        return pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        inner = _value_bytes(values.flatten())
        parents = pc.list_parent_indices(values).to_numpy(zero_copy_only=False)
        return np.bincount(parents, weights=inner, minlength=n).astype(np.int64)[:n]
    if pa.types.is_struct(kind):
        total = np.zeros(n, dtype=np.int64)
        for index in range(kind.num_fields):
            total += _value_bytes(values.field(index))
        return total
    return np.full(n, 0 if pa.types.is_null(kind) else 8, dtype=np.int64)


def approximate_bytes(value: Any, depth: int = 3) -> int:
    """About how many bytes a decoded record holds: its texts' lengths, nested to ``depth``
    levels (other values count 8) -- what bounds a chunk of records read from CSV or JSON."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if depth and isinstance(value, Mapping):
        return sum(approximate_bytes(item, depth - 1) for item in value.values())
    if depth and isinstance(value, Sequence):
        return sum(approximate_bytes(item, depth - 1) for item in value)
    return 8


__all__ = ["SCAN_TOKENS_MAX", "approximate_bytes", "arrow_row_bytes", "field_at_limit"]
