"""Decoding a scored dataset's Parquet parts into the table :func:`scoring.datasets.open_dataset` holds.

The store (:mod:`scoring.datasets`) writes the parts, keeps the manifest and answers queries
(a row's text, a search, a snapshot); this module only turns the numbers parts into one table
with the batch table's columns and dtypes -- the repeating text and the category columns built
as categoricals straight from the parts' Arrow dictionaries, then compacted -- and names the
columns the parts hold, which both sides need. It imports nothing of the store.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..runs import (
    CATEGORY_COLUMNS,
    COLUMNS,
    INT_COLUMNS,
    LOGGED_PREFIX,
    MISMATCH_COLUMN,
    OPTION_COLUMNS,
    assemble_table,
    with_logged_mismatch,
)
from .compact import TableCompactor, Twin, category_codes_dtype, compact_table

#: The dataset folder's subfolder holding the part files.
PARTS = "parts"
#: Text columns whose values repeat across rows (one prompt, ground truth, image per instance;
#: a few reasons): stored dictionary-encoded in the numbers part and held by
#: :func:`scoring.datasets.open_dataset` as categoricals, a copy per distinct value -- what groups,
#: compare, suspects and filters need.
RESIDENT_TEXT_COLUMNS = (
    "prompt",
    "scorer_kwargs",
    "gold",
    "format_detail",
    "annotation_reason",
    "image_warning",
    "image_ref",
)
#: Text unique to each row, left on disk by :func:`scoring.datasets.open_dataset` and read when a
#: row is shown (:func:`scoring.datasets.row_text`) or searched (:func:`scoring.datasets.search_text`).
STORED_TEXT_COLUMNS = ("response", "recovered_text")


def _category(values: pd.Series) -> pd.Series:
    """A categorical whose categories are the values present, sorted (as the batch table's)."""
    column = values if isinstance(values.dtype, pd.CategoricalDtype) else values.astype("category")
    present = sorted(column.cat.remove_unused_categories().cat.categories.tolist())
    return column.cat.set_categories(present)


def _arrow_category(values: pa.ChunkedArray, sort: bool) -> pd.Categorical | None:
    """What pandas makes of a dictionary-encoded Arrow text column, with the categories no row
    uses removed (``sort``: the rest sorted, as :func:`_category` gives them; an all-null column
    is then a categorical without categories), or None for another kind of column.

    The same categorical as converting the column and dropping the unused categories, at the
    cost of the chunks' small dictionaries: the codes are remapped once, never sorted."""
    kind = values.type
    if pa.types.is_null(kind) and sort:
        return pd.Categorical.from_codes(np.full(len(values), -1, dtype=np.int8), dtype=pd.CategoricalDtype([]))
    if not (pa.types.is_dictionary(kind) and pa.types.is_signed_integer(kind.index_type) and _is_text(kind)):
        return None
    entries = sum(len(chunk.dictionary) for chunk in values.chunks)
    if entries > np.iinfo(kind.index_type.to_pandas_dtype()).max:  # the union would overflow the indices
        values = values.cast(pa.dictionary(pa.int32(), kind.value_type))
    unified = values.unify_dictionaries()
    dictionary = unified.chunk(0).dictionary if unified.num_chunks else pa.array([], kind.value_type)
    if dictionary.null_count:
        return None
    # -1: missing, as pandas' codes
    chunks = [(pc.fill_null(c.indices, -1) if c.null_count else c.indices).to_numpy() for c in unified.chunks]
    codes = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int8)
    seen = np.zeros(len(dictionary) + 1, dtype=bool)
    seen[codes] = True  # code -1 marks the last entry
    used = np.flatnonzero(seen[:-1])
    if sort:  # the values used, sorted as Python sorts them (what _category gives)
        words = dictionary.take(pa.array(used)).to_pylist()
        order = sorted(range(len(words)), key=words.__getitem__)
        dtype = pd.CategoricalDtype([words[i] for i in order], ordered=False)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
    else:  # the categories as converting the whole column gives them, the used ones in order
        empty = pa.DictionaryArray.from_arrays(pa.array([], kind.index_type), dictionary)
        dtype = pd.CategoricalDtype(pa.table({"c": empty}).to_pandas()["c"].cat.categories.take(used), ordered=False)
        rank = np.arange(len(used))
    if len(used) == len(dictionary) and np.array_equal(rank, used):  # no code changes; pandas' width
        return pd.Categorical.from_codes(codes.astype(category_codes_dtype(len(used)), copy=False), dtype=dtype,
                                         validate=False)
    # the last entry: code -1 (missing); the width pandas gives the codes, so none is copied again
    lookup = np.full(len(dictionary) + 1, -1, dtype=category_codes_dtype(len(used)))
    lookup[used] = rank
    return pd.Categorical.from_codes(lookup[codes], dtype=dtype, validate=False)


def give_back_memory(collect: bool = True) -> None:
    """Hand the memory the allocators keep after a big piece of work back to the system: Python's
    cyclic garbage collected (``collect``; a full collection costs in proportion to the whole heap,
    so it is for once after scoring, not for every column group), Arrow's pool released and, on
    glibc, the free pages of the C heap (``malloc_trim``) -- else a process that scored a file,
    then builds its opened table, holds the high-water mark of both."""
    if collect:
        gc.collect()
    pa.default_memory_pool().release_unused()
    if _malloc_trim is not None:
        _malloc_trim(0)


def _find_malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim this way
        return None


_malloc_trim = _find_malloc_trim() if sys.platform.startswith("linux") else None

#: Columns of the parts decoded, compacted and freed at a time when the compact table is read:
#: memory follows a few columns of the dataset, never its whole width ...
COLUMN_GROUP = 6
#: ... and no more of them than hold this many bytes as 8-byte values: at ten million rows, two
#: (a column's decoding and compaction take a few times its bytes at once; two columns read
#: together decode on two threads).
COLUMN_GROUP_BYTES = 192 << 20
#: From this many rows a column group's freed buffers are handed back before the next is read.
GIVE_BACK_MIN_ROWS = 250_000


class PartFooter(NamedTuple):
    """A part's footer and Arrow schema, parsed once for many reads of its columns: a big part's
    footer takes tens of milliseconds to parse, and its Arrow schema is rebuilt at each ask."""

    path: Path
    metadata: pq.FileMetaData
    schema: pa.Schema

    @classmethod
    def read(cls, path: Path) -> PartFooter:
        metadata = pq.read_metadata(path)
        return cls(path, metadata, metadata.schema.to_arrow_schema())


def read_part(
    path: Path, exclude: Sequence[str] = (), columns: Sequence[str] | None = None, footer: PartFooter | None = None
) -> pa.Table:
    """A part file's columns but ``exclude`` (only those of ``columns`` it has, when given), with
    the file's own reader (the dataset layer of ``pq.read_table`` doubles the time of a small part);
    ``footer``: its footer, read before."""
    with pq.ParquetFile(path, metadata=footer.metadata if footer else None) as handle:
        names = (footer.schema if footer else handle.schema_arrow).names
        if columns is not None:
            present = set(names)
            names = [n for n in columns if n in present]
        return handle.read(columns=[n for n in names if n not in exclude])


def read_table(directory: Path, manifest: dict, on_disk: tuple[str, ...], compact: bool) -> pd.DataFrame:
    """The table of :func:`scoring.datasets.open_dataset`, read and decoded from the parts. The
    compact table is read :data:`COLUMN_GROUP` columns at a time (:func:`compact_column_groups`),
    so no wide intermediate is ever held."""
    paths = part_paths(directory, manifest)
    if compact and paths:
        columns: dict[str, pd.Series] = {}
        for group in compact_column_groups(directory, manifest, on_disk):
            columns.update(group)
        table = finished_table(pd.DataFrame(columns, copy=False), manifest)
    else:
        table = _assemble([read_part(path, exclude=on_disk) for path in paths], manifest, compact)
        table = compact_table(table) if compact else table  # no part: the empty table
    table.attrs = table_attrs(manifest)
    pa.default_memory_pool().release_unused()  # the Parquet reads' buffers, freed but cached
    return table


def part_paths(directory: Path, manifest: dict) -> list[Path]:
    """The dataset's numbers parts, in input order."""
    return [directory / PARTS / entry["part"] for entry in manifest["files"] if entry["part"]]


def table_attrs(manifest: dict) -> dict:
    """What an opened table carries besides its columns: the options it was scored with."""
    return {"scoring_options": manifest["options"]["scoring"]}


def compact_column_groups(
    directory: Path, manifest: dict, on_disk: tuple[str, ...], recall: Callable[[str], np.ndarray] | None = None
) -> Iterator[dict[str, pd.Series | Twin]]:
    """The compact table's columns (those of the parts but ``on_disk``, in the parts' order, before
    :func:`finished_table`), a group at a time: each group read, decoded and compacted
    (:class:`TableCompactor`, given ``recall``) when the caller asks for it, and its freed buffers
    handed back before the next. Numbers go at most :data:`COLUMN_GROUP` and
    :data:`COLUMN_GROUP_BYTES` at a time; a text column goes alone, and a repeating one is built a
    row group at a time (:func:`streamed_category`). A caller that lets each group go before
    asking for the next holds one group, whose size does not grow with the rows beyond a column's."""
    footers = [PartFooter.read(path) for path in part_paths(directory, manifest)]  # parsed once, not per group
    names: dict[str, pa.DataType] = {}  # every part's columns, in order of first appearance (as joined)
    for footer in footers:
        for field in footer.schema:
            if field.name not in on_disk:
                names.setdefault(field.name, field.type)
    rows = sum(footer.metadata.num_rows for footer in footers)
    compactor = TableCompactor(rows, recall)
    for group in _column_groups(names, rows):
        resident = len(group) == 1 and group[0] in RESIDENT_TEXT_COLUMNS
        built = streamed_category(footers, group[0]) if resident else None
        if built is not None:
            frame = pd.DataFrame({group[0]: built}, index=pd.RangeIndex(rows), copy=False)
        else:
            tables = [read_part(footer.path, columns=group, footer=footer) for footer in footers]
            frame = _assemble(tables, manifest, True, finish=False)
        del built
        columns = compactor.add(frame)
        del frame
        if rows >= GIVE_BACK_MIN_ROWS:
            give_back_memory(collect=False)
        yield columns
        del columns


def _column_groups(types: dict[str, pa.DataType], rows: int) -> Iterator[list[str]]:
    """The columns in order, as groups to read together: each text column alone but the category
    columns (a few distinct values: their dictionaries are small), the others up to
    :data:`COLUMN_GROUP` at a time and :data:`COLUMN_GROUP_BYTES` of 8-byte values."""
    most = max(1, min(COLUMN_GROUP, COLUMN_GROUP_BYTES // max(8 * rows, 1)))
    numbers: list[str] = []
    for name, kind in types.items():
        if _is_text(kind) and name not in CATEGORY_COLUMNS:
            if numbers:
                yield numbers
                numbers = []
            yield [name]
            continue
        numbers.append(name)
        if len(numbers) >= most:
            yield numbers
            numbers = []
    if numbers:
        yield numbers


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def streamed_category(footers: Sequence[PartFooter], name: str) -> pd.Categorical | None:
    """:func:`_arrow_category` (``sort=False``: a repeating text column's) of the column ``name``
    of the parts joined (``footers``, in order), built a row group at a time: the distinct values are held once and each row's code, never every row group's
    dictionary at once (a run's prompts, met again each epoch, are in the dictionary of every
    row group that meets them: the whole column's dictionaries are several times its distinct
    text). A part without the column gives missing values, as joining the parts does. None when a
    part holds it as anything but dictionary-encoded text, or a dictionary holds a null: for
    :func:`_arrow_category` on the whole column to decide."""
    position: dict[str, int] = {}  # each distinct value -> its code, in order of first appearance
    fresh: list[pa.Array] = []  # the distinct values in code order, as slices of the dictionaries
    codes = np.empty(sum(footer.metadata.num_rows for footer in footers), dtype=np.int32)
    filled = 0
    for footer in footers:
        if name not in footer.schema.names:
            codes[filled : filled + footer.metadata.num_rows] = -1
            filled += footer.metadata.num_rows
            continue
        kind = footer.schema.field(name).type
        if not (pa.types.is_dictionary(kind) and _is_text(kind)):
            return None
        with pq.ParquetFile(footer.path, metadata=footer.metadata) as handle:  # one open at a time: a run may have thousands
            for group in range(handle.num_row_groups):
                for chunk in handle.read_row_group(group, columns=[name]).column(0).chunks:
                    dictionary = chunk.dictionary
                    if dictionary.null_count:
                        return None
                    known = len(position)
                    lookup = np.empty(len(dictionary) + 1, dtype=np.int32)
                    lookup[:-1] = [position.setdefault(word, len(position)) for word in dictionary.to_pylist()]
                    lookup[-1] = -1  # code -1 (missing) picks it
                    if len(position) > known:  # a dictionary's entries are distinct: each new code once, in order
                        fresh.append(dictionary.take(np.flatnonzero(lookup[:-1] >= known)).cast(pa.large_string()))
                    indices = chunk.indices
                    raw = (pc.fill_null(indices, -1) if indices.null_count else indices).to_numpy()
                    codes[filled : filled + len(raw)] = lookup[raw]
                    filled += len(raw)
    del position
    values = pa.chunked_array(fresh, pa.large_string())
    del fresh
    seen = np.zeros(len(values) + 1, dtype=bool)
    seen[codes] = True  # code -1 marks the last entry
    used = np.flatnonzero(seen[:-1])
    distinct = len(values)
    present = values.take(used).combine_chunks() if len(used) < distinct else values.combine_chunks()
    del values
    if distinct:  # in order of first appearance, as converting the joined column gives them (no copy made)
        dtype = pd.CategoricalDtype(pd.Index(pd.array(present, dtype="str")), ordered=False)
    else:  # no value at all: what pandas makes of an empty dictionary (its categories are objects)
        empty = pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.large_string()))
        dtype = pd.CategoricalDtype(pa.table({"c": empty}).to_pandas()["c"].cat.categories, ordered=False)
    del present
    lookup = np.full(len(seen), -1, dtype=category_codes_dtype(len(used)))
    lookup[used] = np.arange(len(used))
    return pd.Categorical.from_codes(lookup[codes], dtype=dtype, validate=False)


def _assemble(
    tables: list[pa.Table], manifest: dict, resident_categories: bool = False, finish: bool = True
) -> pd.DataFrame:
    """The parts' columns as one table with the batch table's dtypes; the repeating text
    (:data:`RESIDENT_TEXT_COLUMNS`) as categoricals of the values present
    (``resident_categories``), else as text; ``finish``: in the batch table's column order, with
    its ``logged_mismatch`` (:func:`finished_table`)."""
    built: dict[str, pd.Categorical] = {}
    if tables:
        joined = pa.concat_tables(tables, promote_options="default")
        tables.clear()
        for name in joined.column_names:
            sort = name in CATEGORY_COLUMNS
            if sort or (resident_categories and name in RESIDENT_TEXT_COLUMNS):
                column = _arrow_category(joined[name], sort)
                if column is not None:
                    built[name] = column
        names = joined.column_names
        index = pd.RangeIndex(joined.num_rows)
        joined = joined.drop_columns(list(built))
        # a block per column (no 2-D block that one kept column would keep whole), and each
        # Arrow column freed once converted
        converted = joined.to_pandas(split_blocks=True, self_destruct=True)
        del joined
        frame = pd.DataFrame(
            {name: pd.Series(built[name], index=index) if name in built else converted[name] for name in names},
            index=index, copy=False,
        )  # fmt: skip
        del converted
        frame.attrs = {}  # each part's copy of the options: set once by open_dataset
    else:  # no input gave a row: the empty table score_files gives
        frame = assemble_table([]).drop(columns=list(STORED_TEXT_COLUMNS))
        for name in OPTION_COLUMNS:
            frame[name] = np.empty(0)
    for name in frame.columns:
        if name in built:
            continue
        if name in CATEGORY_COLUMNS:
            frame[name] = _category(frame[name])
        elif name in INT_COLUMNS:
            frame[name] = frame[name].astype("Int64")
        elif name in RESIDENT_TEXT_COLUMNS and isinstance(frame[name].dtype, pd.CategoricalDtype):
            column = frame[name]
            frame[name] = column.cat.remove_unused_categories() if resident_categories else column.astype("str")
    return finished_table(frame, manifest) if finish else frame


def finished_table(frame: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    """The parts' columns in the batch table's order, with its ``logged_mismatch``."""
    frame = frame[finished_order(frame.columns)]
    # the logged components are the whole run's: named as score_files names them
    return with_logged_mismatch(frame, manifest["options"]["scoring"]["logged_atol"])


def finished_order(names: Iterable[str]) -> list[str]:
    """The parts' column ``names`` in the batch table's order: as score_files orders them, its
    columns, other diagnostics (in order of first appearance, as the parts are joined), logged
    values, then the run-wide weights and the mismatch it adds last."""
    names = list(names)
    last = [*OPTION_COLUMNS, MISMATCH_COLUMN]
    base = [c for c in COLUMNS if c in names and c not in last]
    extra = [c for c in names if c not in COLUMNS]
    logged = sorted(c for c in extra if c.startswith(LOGGED_PREFIX))
    rest = [c for c in extra if c not in logged]
    return [*base, *rest, *logged, *[c for c in last if c in names]]


__all__ = [
    "COLUMN_GROUP",
    "PARTS",
    "PartFooter",
    "RESIDENT_TEXT_COLUMNS",
    "STORED_TEXT_COLUMNS",
    "compact_column_groups",
    "finished_order",
    "finished_table",
    "give_back_memory",
    "part_paths",
    "read_part",
    "read_table",
    "streamed_category",
    "table_attrs",
]
