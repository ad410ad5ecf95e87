"""The text of an opened scored dataset, read from its parts when it is asked for.

:func:`scoring.datasets.open_dataset` holds the numbers, flags and categories of every row and
leaves the text unique to each row (responses, recovered text) -- and, for runs whose prompts
and ground truths do not repeat, those too -- in the dataset's Parquet parts. This module reads
it back: a few rows' text (:func:`row_text`: only the row groups holding them), a search over all
of it streamed part by part (:func:`search_text`), whole columns for a page that groups on them
(:func:`read_columns`), and whole rows as the batch table holds them (:func:`rows_with_text`,
what :func:`scoring.runs.explain_row` needs). It imports nothing of the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..runs import COLUMNS
from .table import PARTS, RESIDENT_TEXT_COLUMNS, STORED_TEXT_COLUMNS

#: Rows per batch a search streams through (text is never held whole).
SEARCH_BATCH_ROWS = 16_384


@dataclass
class ScoredDataset:
    """An opened dataset: ``table`` (no text columns), ``errors``, the ``manifest``, and where
    each input's rows start in ``table`` (``starts``, aligned with ``manifest['files']``)."""

    directory: Path
    table: pd.DataFrame
    errors: pd.DataFrame
    manifest: dict
    starts: np.ndarray
    on_disk: tuple[str, ...] = STORED_TEXT_COLUMNS  # text columns left on disk (read by row_text)

    def row_text(self, rows: Sequence[int]) -> pd.DataFrame:
        return row_text(self, rows)


def _positions(dataset: ScoredDataset, rows: Sequence[int]) -> np.ndarray:
    positions = np.asarray(rows, dtype=np.int64).reshape(-1)
    total = len(dataset.table)
    if len(positions) and (positions.min() < 0 or positions.max() >= total):
        raise IndexError(f"row out of range: the dataset has {total} rows")
    return positions


def _by_part(columns: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``(manifest key of a part file, the text columns it holds)`` for ``columns``: the unique
    text is in an input's text part, the repeating text (dictionary-encoded) in its numbers part."""
    split = [("text_part", [c for c in columns if c in STORED_TEXT_COLUMNS]),
             ("part", [c for c in columns if c not in STORED_TEXT_COLUMNS])]
    return [(key, wanted) for key, wanted in split if wanted]


def _read_rows(path: Path, offsets: np.ndarray, columns: list[str]) -> dict[str, np.ndarray]:
    """``columns`` at row ``offsets`` of one Parquet file, reading only the row groups holding them."""
    with pq.ParquetFile(path) as handle:
        sizes = [handle.metadata.row_group(k).num_rows for k in range(handle.num_row_groups)]
        ends = np.cumsum(sizes)
        groups_of = np.searchsorted(ends, offsets, side="right")
        groups = np.unique(groups_of)
        present = [c for c in columns if c in handle.schema_arrow.names]
        piece = handle.read_row_groups(groups.tolist(), columns=present)
    # where each wanted row sits in the groups read: the rows of the groups before it, then its offset
    read_before = np.cumsum([0, *(sizes[g] for g in groups)])[:-1]
    group_starts = ends[groups] - np.asarray([sizes[g] for g in groups])
    rank = np.searchsorted(groups, groups_of)
    taken = piece.take(pa.array(read_before[rank] + offsets - group_starts[rank]))
    out = {}
    for column in present:
        values = taken[column]
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        out[column] = values.to_numpy(zero_copy_only=False)
    return out


def row_text(dataset: ScoredDataset, rows: Sequence[int], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Text ``columns`` (default: those the opened table leaves on disk) of the given rows
    (positions in the opened table, any order, repeats allowed), read from disk: only the row
    groups holding them. Indexed by ``rows``."""
    columns = list(dataset.on_disk if columns is None else columns)
    unknown = [c for c in columns if c not in (*STORED_TEXT_COLUMNS, *RESIDENT_TEXT_COLUMNS)]
    if unknown:
        raise KeyError(f"not a text column of a dataset: {', '.join(unknown)}")
    positions = _positions(dataset, rows)
    inputs = np.searchsorted(dataset.starts, positions, side="right") - 1
    values = {c: np.full(len(positions), None, dtype=object) for c in columns}
    files = dataset.manifest["files"]
    for key, wanted in _by_part(columns):
        for position in np.unique(inputs):
            chosen = np.flatnonzero(inputs == position)
            name = files[position][key]
            if not name:
                continue
            read = _read_rows(dataset.directory / PARTS / name, positions[chosen] - dataset.starts[position], wanted)
            for column, found in read.items():
                values[column][chosen] = found
    frame = pd.DataFrame(values, index=pd.Index(positions), columns=columns)
    return frame.astype("str")


def _matches(values: pa.Array, needle: str) -> np.ndarray:
    """Case-insensitive literal ``needle`` in a text array (a dictionary's values searched once)."""
    if pa.types.is_dictionary(values.type):
        found = pc.match_substring(values.dictionary, needle, ignore_case=True).fill_null(False)
        hits = pc.take(found, values.indices)
    else:
        hits = pc.match_substring(values, needle, ignore_case=True)
    return hits.fill_null(False).to_numpy(zero_copy_only=False)


def search_text(dataset: ScoredDataset, needle: str, columns: Sequence[str] | None = None) -> np.ndarray:
    """Rows (a mask over the opened table) whose on-disk text ``columns`` (default: all the
    opened table leaves on disk) contain ``needle`` (case-insensitive, literal): the text is
    streamed part by part, never held whole."""
    columns = list(dataset.on_disk if columns is None else columns)
    mask = np.zeros(len(dataset.table), dtype=bool)
    if not needle:
        return mask
    for position, entry in enumerate(dataset.manifest["files"]):
        if not entry["rows"]:
            continue
        start = int(dataset.starts[position])
        for key, wanted in _by_part(columns):
            if not entry[key]:
                continue
            with pq.ParquetFile(dataset.directory / PARTS / entry[key]) as handle:
                present = [c for c in wanted if c in handle.schema_arrow.names]
                if not present:
                    continue
                offset = start
                for batch_ in handle.iter_batches(batch_size=SEARCH_BATCH_ROWS, columns=present):
                    hits = np.zeros(batch_.num_rows, dtype=bool)
                    for column in present:
                        hits |= _matches(batch_.column(column), needle)
                    mask[offset : offset + batch_.num_rows] |= hits
                    offset += batch_.num_rows
    return mask


def read_columns(dataset: ScoredDataset, columns: Sequence[str]) -> pd.DataFrame:
    """Whole text columns the opened table leaves on disk, for every row (index as the table's):
    for a page that groups or joins on them. Repeating text comes back categorical."""
    frames = []
    for entry in dataset.manifest["files"]:
        if not entry["rows"]:
            continue
        pieces = {}
        for key, wanted in _by_part(columns):
            if entry[key]:
                path = dataset.directory / PARTS / entry[key]
                present = [c for c in wanted if c in pq.read_schema(path).names]
                if present:
                    table = pq.read_table(path, columns=present)
                    pieces.update({c: table[c] for c in present})
        frames.append(pa.table({c: pieces[c] if c in pieces else pa.nulls(entry["rows"], pa.string())
                                for c in columns}))
    if not frames:
        return pd.DataFrame({c: pd.Series([], dtype="str") for c in columns}, index=dataset.table.index)
    joined = pa.concat_tables(frames, promote_options="permissive")
    frame = joined.to_pandas(split_blocks=True, self_destruct=True)
    frame.index = dataset.table.index
    return frame


def rows_with_text(dataset: ScoredDataset, rows: Sequence[int]) -> pd.DataFrame:
    """Whole table rows (the opened columns plus their text), as the batch table holds them:
    what :func:`scoring.runs.explain_row` and a row's detail view need."""
    positions = _positions(dataset, rows)
    compact = dataset.table.iloc[positions]
    text = row_text(dataset, positions)
    joined = compact.copy()
    for name in text.columns:
        joined[name] = text[name].to_numpy()
    # each text column where the batch table has it: after the column it follows in COLUMNS
    position = {name: float(i) for i, name in enumerate(compact.columns)}
    previous = -1.0
    for name in COLUMNS:
        if name in position:
            previous = position[name]
        elif name in text.columns:
            previous = position[name] = previous + 1e-3
    return joined[sorted(joined.columns, key=position.__getitem__)]


__all__ = ["SEARCH_BATCH_ROWS", "ScoredDataset", "read_columns", "row_text", "rows_with_text", "search_text"]
