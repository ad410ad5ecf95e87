"""Writing a scored input's part files: what :func:`scoring.engines.score_to_dataset` (and the Ray
engine, in its tasks) write for each input of a scored dataset.

Each input's rows become a numbers part (every column but the unique text, the repeating text
dictionary-encoded, in large row groups: it is read whole) and a text part (in small row groups:
one row's text is read with its group), and its errors an errors part; each file is written under
a temporary name and renamed into place, so a crash never leaves half a file under a real name.
An input's parts are written a batch of rows at a time (:class:`InputParts`), so a file of any
size is written in bounded memory; :class:`PartWriter` is the sink that
:func:`scoring.runs.stream_inputs` hands the batches to, and writes them on a thread. The manifest, the plan of an update and the reading side live in :mod:`scoring.datasets`.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..rollouts import ERROR, RowError, errors_frame
from ..runs import CATEGORY_COLUMNS, COLUMNS, MISMATCH_COLUMN
from .hashing import text_hashes
from .table import RESIDENT_TEXT_COLUMNS, STORED_TEXT_COLUMNS

#: Rows per row group of a text part: reading one row's text reads (and decompresses) its
#: group, so small; the numbers part is read whole, so its groups are large (fewer, faster reads).
TEXT_ROW_GROUP_ROWS = 1024
NUMBER_ROW_GROUP_ROWS = 65_536


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` to a temporary name beside ``path``, flushed to disk, then renamed over it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(temporary)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def left_by_atomic_write(name: str, target: str) -> bool:
    """Whether a folder entry ``name`` is a temporary :func:`write_atomically` of ``target``
    leaves when its process is killed mid-write."""
    return name.startswith(f".{target}.") and name.endswith(".tmp")


def write_parquet(
    frame: pd.DataFrame | pa.Table, path: Path, row_group_rows: int = NUMBER_ROW_GROUP_ROWS, **options: Any
) -> None:
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    write_atomically(
        path, lambda target: pq.write_table(table, target, row_group_size=row_group_rows, **options)
    )


#: The type every categorical and dictionary-encoded text column is written with, whatever
#: batch it came in: a part file has one schema, and a batch's categories fit any index width.
DICTIONARY = pa.dictionary(pa.int32(), pa.large_string())
#: An input's errors are written to its errors part this many at a time.
ERRORS_BATCH = 16_384
_BASE_COLUMNS = frozenset(COLUMNS)


class DistinctCount:
    """How many distinct values a text column holds, seen a batch's dictionary at a time: the
    values' 64-bit hashes, kept sorted and unique in 256 buckets by their top byte (8 bytes per
    distinct value, never the text, and a merge touches one small bucket; two values sharing a
    hash -- odds of about 1 in 10^7 for ten million values -- count once). A column seen in one
    batch is counted exactly, by its dictionary's length. ``entries``: the batches' dictionary
    lengths summed, what opening the column decodes (a value repeated across batches but not
    within one is an entry of every batch it is in)."""

    BUCKETS = 256

    def __init__(self) -> None:
        self.first: pa.Array | None = None
        self.batches = 0
        self.entries = 0
        self.unique = [np.empty(0, dtype=np.uint64) for _ in range(self.BUCKETS)]
        self.pending: list[list[np.ndarray]] = [[] for _ in range(self.BUCKETS)]
        self.pending_count = [0] * self.BUCKETS

    def add(self, dictionary: pa.Array) -> None:
        """A batch's distinct values (a dictionary-encoded column's dictionary)."""
        self.batches += 1
        self.entries += len(dictionary)
        if self.batches == 1:
            self.first = dictionary
            return
        if self.first is not None:
            self._hash(self.first)
            self.first = None
        self._hash(dictionary)

    def _hash(self, values: pa.Array) -> None:
        if not len(values):
            return
        hashes = np.sort(text_hashes(values))
        bounds = np.searchsorted(hashes >> np.uint64(56), np.arange(self.BUCKETS + 1, dtype=np.uint64))
        for bucket in np.flatnonzero(np.diff(bounds)).tolist():
            self.pending[bucket].append(hashes[bounds[bucket] : bounds[bucket + 1]])
            self.pending_count[bucket] += int(bounds[bucket + 1] - bounds[bucket])
            if self.pending_count[bucket] > max(len(self.unique[bucket]), 4096):
                self._merge(bucket)

    def _merge(self, bucket: int) -> None:
        if self.pending[bucket]:
            self.unique[bucket] = np.unique(np.concatenate([self.unique[bucket], *self.pending[bucket]]))
            self.pending[bucket], self.pending_count[bucket] = [], 0

    def count(self) -> int:
        if self.batches <= 1:
            return 0 if self.first is None else len(self.first)
        for bucket in range(self.BUCKETS):
            self._merge(bucket)
        return sum(len(unique) for unique in self.unique)


class InputParts:
    """One scored input's part files, written a batch of rows at a time (:meth:`add_rows`,
    :meth:`add_errors`) under temporary names and put in place by :meth:`close`, which gives the
    manifest entry's fields: what :func:`write_input_parts` writes, in bounded memory.

    The numbers part takes every column but the unique text, the categories and the repeating
    text as Arrow dictionaries (:data:`DICTIONARY`), one row group per batch; the text part
    small row groups. A column that an input's rows lack throughout (a ``logged_*`` value or a
    newer scorer's diagnostic) is not written; one that a later batch brings first makes the
    batches so far a segment, and :meth:`close` joins the segments into one part."""

    def __init__(self, parts: Path, name: str):
        self.parts = parts
        self.name = name
        self.rows = 0
        self.errors = 0
        self.warnings = 0
        self.distinct: dict[str, DistinctCount] = {}
        self.segments: list[tuple[Path, pa.Schema]] = []
        self.numbers: pq.ParquetWriter | None = None
        self.text: pq.ParquetWriter | None = None
        self.errors_writer: pq.ParquetWriter | None = None
        self.text_path = self.errors_path = None
        self.temporaries: list[Path] = []

    def _temporary(self, final: str) -> Path:
        path = self.parts / f".{final}.{os.getpid()}.{len(self.temporaries)}.tmp"
        self.temporaries.append(path)
        return path

    def add_rows(self, frame: pd.DataFrame) -> None:
        """The input's next rows (a table with the batch table's columns)."""
        if not len(frame):
            return
        unused = [
            c for c in frame.columns if c == MISMATCH_COLUMN or (c not in _BASE_COLUMNS and frame[c].isna().all())
        ]
        text = [c for c in STORED_TEXT_COLUMNS if c in frame.columns]
        numbers = pa.Table.from_pandas(frame.drop(columns=[*text, *unused]), preserve_index=False)
        self._write_numbers(self._encoded(numbers))
        words = pa.Table.from_pandas(frame[text], preserve_index=False)
        if self.text is None:
            self.text_path = self._temporary(f"{self.name}.text.parquet")
            self.text = pq.ParquetWriter(self.text_path, words.schema, use_dictionary=False, write_statistics=False)
        self.text.write_table(words.cast(self.text.schema), row_group_size=TEXT_ROW_GROUP_ROWS)
        self.rows += len(frame)

    def _encoded(self, table: pa.Table) -> pa.Table:
        """Categories and repeating text as :data:`DICTIONARY` columns (the latter counted)."""
        for position, field in enumerate(table.schema):
            kind, values = field.type, table.column(position)
            if field.name in RESIDENT_TEXT_COLUMNS and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                values = pc.dictionary_encode(values).combine_chunks()
                self.distinct.setdefault(field.name, DistinctCount()).add(values.dictionary)
            elif pa.types.is_null(kind) and field.name in CATEGORY_COLUMNS:
                values = pa.nulls(len(values), DICTIONARY)
            elif not pa.types.is_dictionary(kind) or kind == DICTIONARY:
                continue
            table = table.set_column(position, pa.field(field.name, DICTIONARY), values.cast(DICTIONARY))
        return table

    def _write_numbers(self, table: pa.Table) -> None:
        if self.numbers is not None:
            schema = self.numbers.schema
            if not table.schema.equals(schema, check_metadata=False):
                fitted = _fitted(table, schema)
                if fitted is None:  # a column the batches so far lacked: they become a segment
                    self.numbers.close()
                    self.numbers = None
                else:
                    table = fitted
        if self.numbers is None:
            path = self._temporary(f"{self.name}.parquet")
            self.numbers = _numbers_writer(path, table.schema)
            self.segments.append((path, table.schema))
        table = table.replace_schema_metadata(self.numbers.schema.metadata)
        self.numbers.write_table(table, row_group_size=max(len(table), 1))

    def add_errors(self, errors: pd.DataFrame) -> None:
        """The input's next errors (an errors table, :func:`scoring.rollouts.errors_frame`)."""
        if not len(errors) and self.errors_writer is not None:
            return
        table = pa.Table.from_pandas(errors, preserve_index=False)
        if self.errors_writer is None:
            self.errors_path = self._temporary(f"{self.name}.errors.parquet")
            self.errors_writer = pq.ParquetWriter(self.errors_path, table.schema)
        self.errors_writer.write_table(table.cast(self.errors_writer.schema))
        severe = int((errors["severity"] == ERROR).sum())
        self.errors += severe
        self.warnings += len(errors) - severe

    def close(self) -> dict:
        """Put the parts in place (each flushed to disk first); the manifest entry's fields."""
        if self.errors_writer is None:
            self.add_errors(errors_frame([]))
        written = {"rows": self.rows, "errors": self.errors, "warnings": self.warnings, "part": None,
                   "text_part": None, "distinct": {}, "dictionary_entries": {},
                   "errors_part": f"{self.name}.errors.parquet"}  # fmt: skip
        writers = [self.numbers, self.text, self.errors_writer]
        self.numbers = self.text = self.errors_writer = None
        for writer in writers:
            if writer is not None:
                writer.close()
        if self.rows:
            numbers = self._joined_segments()
            _put_in_place(numbers, self.parts / f"{self.name}.parquet")
            _put_in_place(self.text_path, self.parts / f"{self.name}.text.parquet")
            written.update(part=f"{self.name}.parquet", text_part=f"{self.name}.text.parquet",
                           distinct={column: count.count() for column, count in self.distinct.items()},
                           dictionary_entries={column: count.entries for column, count in self.distinct.items()})  # fmt: skip
        _put_in_place(self.errors_path, self.parts / written["errors_part"])
        self.discard()  # what is left: the segments joined
        self.distinct = {}
        return written

    def _joined_segments(self) -> Path:
        """The numbers part: the one segment, or the segments joined under one schema (their
        columns in order of first appearance, each missing one null)."""
        if len(self.segments) == 1:
            return self.segments[0][0]
        names: dict[str, pa.DataType] = {}
        for _, schema in self.segments:
            for field in schema:
                names.setdefault(field.name, field.type)
        schema = pa.schema([pa.field(n, t) for n, t in names.items()], metadata=self.segments[0][1].metadata)
        joined = self._temporary(f"{self.name}.parquet")
        with _numbers_writer(joined, schema) as writer:
            for path, _ in self.segments:
                with pq.ParquetFile(path) as segment:
                    for group in range(segment.num_row_groups):
                        table = segment.read_row_group(group)
                        writer.write_table(_fitted(table, schema), row_group_size=max(table.num_rows, 1))
        return joined

    def discard(self) -> None:
        """Close what is open and remove the temporary files (what a failed write leaves)."""
        for writer in (self.numbers, self.text, self.errors_writer):
            if writer is not None:
                with contextlib.suppress(Exception):
                    writer.close()
        self.numbers = self.text = self.errors_writer = None
        for path in self.temporaries:
            path.unlink(missing_ok=True)


def _numbers_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    """A numbers part's writer: Parquet's own dictionary pages only for the columns that are
    dictionaries already (trying them on every float column costs twice the write, for a file a
    sixth smaller), LZ4 (faster than Snappy here, and smaller), no min/max statistics (nothing
    reads them: a dataset is opened column by column, never filtered by row group; a sixth of
    the write)."""
    dictionaries = [field.name for field in schema if pa.types.is_dictionary(field.type)]
    return pq.ParquetWriter(path, schema, use_dictionary=dictionaries or False, compression="lz4",
                            write_statistics=False)


def _fitted(table: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """``table`` with ``schema``'s columns in its order (null where the table has none), or None
    when the table has a column the schema lacks."""
    if any(schema.get_field_index(name) < 0 for name in table.column_names):
        return None
    columns = []
    for field in schema:
        position = table.schema.get_field_index(field.name)
        column = table.column(position) if position >= 0 else pa.nulls(table.num_rows, field.type)
        columns.append(column.cast(field.type) if column.type != field.type else column)
    return pa.Table.from_arrays(columns, schema=schema)


def _put_in_place(temporary: Path, path: Path) -> None:
    """A written temporary file, flushed to disk, renamed to ``path``."""
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_input_parts(parts: Path, name: str, frame: pd.DataFrame | None, errors: pd.DataFrame) -> dict:
    """One scored input's part files (``frame``: its rows, None when it gave none; ``errors``:
    its errors) named after ``name``; the manifest entry's fields that say what was written.
    ``logged_mismatch`` is not stored: it depends on the logged columns of the whole table and
    :func:`open_dataset` derives it (an input without logged values would store it as nulls whose
    type no other input's column shares)."""
    writer = InputParts(parts, name)
    try:
        if frame is not None:
            writer.add_rows(frame)
        writer.add_errors(errors)
        return writer.close()
    finally:
        writer.discard()


class Plan(Protocol):
    """What :class:`PartWriter` needs of an update's plan (:class:`scoring.datasets.UpdatePlan`)."""

    parts: Path
    run_errors_written: bool

    def part_name(self, position: int) -> str: ...

    def scored(self, position: int, written: dict) -> None: ...

    def write_run_errors(self, errors: pd.DataFrame) -> None: ...


class PartWriter:
    """Writes the inputs :func:`scoring.runs.stream_inputs` scores into an update's parts
    (:class:`InputParts`), a batch at a time, on a thread: pyarrow converts, encodes,
    compresses and writes largely without holding the GIL, so the caller goes on taking
    results from the worker processes meanwhile. At most :attr:`ahead` writes wait, so the
    batches held stay bounded however big an input is. Each input's fields reach the plan's
    ``scored`` once it is written; a write's error is raised by the next call or on leaving the
    ``with`` block, and no thread writes once the block is left (an unfinished input's temporary
    files are removed).

    It is the sink of one group of inputs at a time (:meth:`sink`): its keys are positions in
    the group."""

    ahead = 1

    def __init__(self, plan: Plan):
        self.plan = plan
        self.executor: ThreadPoolExecutor | None = None
        self.waiting: deque[Future] = deque()
        self.finished: deque[tuple[int, InputParts, Future]] = deque()
        self.open: dict[int, InputParts] = {}
        self.positions: Sequence[int] = ()
        self.errors_held: dict[int, list[RowError]] = {}
        self.run_errors: list[RowError] = []

    def __enter__(self) -> PartWriter:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rolloutscope-parts")
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None:
                self.collect()
        finally:  # on an error, the writes not begun are dropped and the running one awaited
            self.executor.shutdown(wait=True, cancel_futures=True)
            for parts in [*self.open.values(), *(parts for _, parts, _ in self.finished)]:
                parts.discard()
        return False

    def sink(self, positions: Sequence[int]) -> PartWriter:
        """This writer as the sink of a group of inputs: key ``k`` is input ``positions[k]``."""
        self.positions = list(positions)
        return self

    def _submit(self, work: Callable[..., Any], *args: Any) -> Future:
        while self.waiting and self.waiting[0].done():
            self.waiting.popleft().result()  # a failed write is raised here
        while len(self.waiting) >= self.ahead:
            self.waiting.popleft().result()
        future = self.executor.submit(work, *args)
        self.waiting.append(future)
        self._hand_finished()
        return future

    def _parts(self, position: int) -> InputParts:
        parts = self.open.get(position)
        if parts is None:
            parts = self.open[position] = InputParts(self.plan.parts, self.plan.part_name(position))
        return parts

    def rows(self, key: int, table: pd.DataFrame) -> None:
        self._submit(self._parts(self.positions[key]).add_rows, table)

    def errors(self, key: int | None, errors: list[RowError]) -> None:
        if key is None:
            self.run_errors.extend(errors)
            return
        position = self.positions[key]
        held = self.errors_held.setdefault(position, [])
        held.extend(errors)
        if len(held) >= ERRORS_BATCH:
            self._write_errors(position)

    def _write_errors(self, position: int) -> None:
        held = self.errors_held.pop(position, [])
        if held:
            self._submit(self._parts(position).add_errors, errors_frame(held))

    def done(self, key: int) -> None:
        position = self.positions[key]
        self._write_errors(position)
        parts = self._parts(position)
        future = self._submit(parts.close)
        del self.open[position]
        self.finished.append((position, parts, future))

    def _hand_finished(self) -> None:
        while self.finished and self.finished[0][2].done():
            position, _, future = self.finished.popleft()
            self.plan.scored(position, future.result())

    def end_group(self) -> None:
        """The group's run errors (the instance files', the same in every group), written once."""
        if not self.plan.run_errors_written:
            self.plan.write_run_errors(errors_frame(self.run_errors))
        self.run_errors = []

    def collect(self) -> None:
        """Wait for every write; hand each input's fields to the plan (in the order they were done)."""
        while self.waiting:
            self.waiting.popleft().result()
        self._hand_finished()


__all__ = [
    "DICTIONARY",
    "ERRORS_BATCH",
    "NUMBER_ROW_GROUP_ROWS",
    "TEXT_ROW_GROUP_ROWS",
    "DistinctCount",
    "InputParts",
    "PartWriter",
    "Plan",
    "write_input_parts",
]
