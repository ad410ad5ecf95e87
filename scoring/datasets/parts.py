"""Writing a scored input's part files: what :func:`scoring.engines.score_to_dataset` (and the Ray
engine, in its tasks) write for each input of a scored dataset.

Each input's rows become a numbers part (every column but the unique text, the repeating text
dictionary-encoded, in large row groups: it is read whole) and a text part (in small row groups:
one row's text is read with its group), and its errors an errors part; each file is written under
a temporary name and renamed into place, so a crash never leaves half a file under a real name.
:class:`PartWriter` writes a group's inputs on threads while the caller scores the next group.
The manifest, the plan of an update and the reading side live in :mod:`scoring.datasets`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..rollouts import ERROR
from ..runs import COLUMNS, MISMATCH_COLUMN, available_cpus
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


def write_parquet(
    frame: pd.DataFrame | pa.Table, path: Path, row_group_rows: int = NUMBER_ROW_GROUP_ROWS, **options: Any
) -> None:
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    write_atomically(
        path, lambda target: pq.write_table(table, target, row_group_size=row_group_rows, **options)
    )


def _write_part(frame: pd.DataFrame, parts: Path, name: str) -> tuple[str, str, dict[str, int]]:
    """One input's rows as its numbers part (repeating text dictionary-encoded) and its text
    part; their file names and the count of distinct values of each repeating text column."""
    text = [c for c in STORED_TEXT_COLUMNS if c in frame.columns]
    numbers, words = f"{name}.parquet", f"{name}.text.parquet"
    table = pa.Table.from_pandas(frame.drop(columns=text), preserve_index=False)
    distinct: dict[str, int] = {}
    for column in RESIDENT_TEXT_COLUMNS:
        position = table.schema.get_field_index(column)
        kind = table.schema.field(position).type if position >= 0 else None
        if kind is not None and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            encoded = pc.dictionary_encode(table[column]).combine_chunks()
            distinct[column] = len(encoded.dictionary)
            table = table.set_column(position, column, encoded)
    write_parquet(table, parts / numbers)
    write_parquet(frame[text], parts / words, TEXT_ROW_GROUP_ROWS, use_dictionary=False)
    return numbers, words, distinct


def file_columns(table: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """One input's rows of a group's table, without the columns only other inputs of the group
    brought (``logged_*`` and extra diagnostics that are missing throughout these rows). The
    batch engine gives each input's rows together: they are then a slice of the table's arrays,
    not a copy (taking rows from the text's many Arrow chunks costs seconds per group)."""
    first, last = (int(rows[0]), int(rows[-1])) if len(rows) else (0, -1)
    together = last - first + 1 == len(rows)
    part = (table.iloc[first : last + 1] if together else table.iloc[rows]).reset_index(drop=True)
    base = set(COLUMNS)
    foreign = [c for c in part.columns if c not in base and part[c].isna().all()]
    return part.drop(columns=foreign)


def write_input_parts(parts: Path, name: str, frame: pd.DataFrame | None, errors: pd.DataFrame) -> dict:
    """One scored input's part files (``frame``: its rows, None when it gave none; ``errors``:
    its errors) named after ``name``; the manifest entry's fields that say what was written.
    ``logged_mismatch`` is not stored: it depends on the logged columns of the whole table and
    :func:`open_dataset` derives it (an input without logged values would store it as nulls whose
    type no other input's column shares)."""
    part = text_part = None
    distinct: dict[str, int] = {}
    if frame is not None and len(frame):
        part, text_part, distinct = _write_part(
            frame.drop(columns=[MISMATCH_COLUMN], errors="ignore"), parts, name
        )
    write_parquet(errors, parts / f"{name}.errors.parquet")
    return {
        "rows": 0 if frame is None else int(len(frame)),
        "errors": int((errors["severity"] == ERROR).sum()),
        "warnings": int((errors["severity"] != ERROR).sum()),
        "part": part,
        "text_part": text_part,
        "distinct": distinct,
        "errors_part": f"{name}.errors.parquet",
    }


class Plan(Protocol):
    """What :class:`PartWriter` needs of an update's plan (:class:`scoring.datasets.UpdatePlan`)."""

    parts: Path
    run_errors_written: bool

    def part_name(self, position: int) -> str: ...

    def scored(self, position: int, written: dict) -> None: ...

    def write_run_errors(self, errors: pd.DataFrame) -> None: ...


class PartWriter:
    """Writes each scored input's parts (:func:`write_input_parts`) on threads while the caller
    scores the next group: pyarrow encodes, compresses and writes without holding the GIL, so
    the worker processes do not sit idle while the parent writes, and the last group's inputs
    are written side by side. Each input's fields reach the plan's ``scored`` in input
    order once written; a write's error is raised by the next :meth:`write_group` or on leaving
    the ``with`` block, and no thread writes once the block is left. At most two groups' tables
    are held: the one being written and the one being scored."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.pending: list[tuple[int, Future]] = []
        self.executor: ThreadPoolExecutor | None = None

    def __enter__(self) -> PartWriter:
        self.executor = ThreadPoolExecutor(
            max_workers=available_cpus(), thread_name_prefix="rolloutscope-parts"
        )
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None:
                self.collect()
        finally:  # on an error, the writes not begun are dropped and the running ones awaited
            self.executor.shutdown(wait=True, cancel_futures=True)
        return False

    def write_group(
        self, group: Sequence[int], displays: Sequence[str], table: pd.DataFrame, errors: pd.DataFrame
    ) -> None:
        """Start writing the parts of the inputs at ``group`` (positions in ``displays``) from a
        group's ``table`` and ``errors``, once the previous group's are written."""
        self.collect()
        by_file = pd.Categorical(table["source_file"])  # the table's own categorical: compared by code
        file_codes = by_file.categories.get_indexer([displays[i] for i in group])
        error_files = errors["file"].to_numpy(dtype=object)
        mine = np.zeros(len(errors), dtype=bool)
        for i, code in zip(group, file_codes, strict=True):
            own = error_files == displays[i]
            mine |= own
            rows = np.flatnonzero(by_file.codes == code) if code >= 0 else np.empty(0, dtype=np.intp)
            frame = file_columns(table, rows) if len(rows) else None
            own_errors = errors[own].reset_index(drop=True)
            future = self.executor.submit(
                write_input_parts, self.plan.parts, self.plan.part_name(i), frame, own_errors
            )
            self.pending.append((i, future))
        if not self.plan.run_errors_written:  # the same in every group: the instance files' errors
            self.plan.write_run_errors(errors[~mine].reset_index(drop=True))

    def collect(self) -> None:
        """Wait for the parts being written; hand each input's fields to the plan (in input order)."""
        pending, self.pending = self.pending, []
        for position, future in pending:
            self.plan.scored(position, future.result())


__all__ = ["NUMBER_ROW_GROUP_ROWS", "TEXT_ROW_GROUP_ROWS", "PartWriter", "Plan", "write_input_parts"]
