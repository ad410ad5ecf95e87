"""Scoring streamed: each input's rows handed on a bounded batch at a time, never one table.

:func:`stream_inputs` scores what :func:`scoring.runs.score_inputs` scores, with the same chunks
in the same order, but hands a sink each input's rows as tables of at most
:data:`STREAM_BATCH_ROWS` rows (fewer once their text reaches :data:`STREAM_BATCH_BYTES`), its
errors as they come and a word when the input is done. Memory then follows the batch, not the
input: a dataset engine writes each batch to disk before the next is built. Stacking an input's
batches gives its rows of ``score_inputs``' table (categories sorted per batch; a diagnostic or
logged column only where a batch has it; no ``logged_mismatch``, which the whole table decides).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from ..rollouts import ERROR, ColumnMapping, DataAccess, Layout, RowError
from .columns import ARROW_TEXT, BatchOptions, Progress
from .pipeline import InputTally, RunInput, assemble_table, prepare_run, scored_chunks, with_option_columns

#: Rows of one input handed to the sink at a time (a Parquet numbers part's row group).
STREAM_BATCH_ROWS = 65_536
#: ...or fewer, once the batch's text columns hold this many bytes (long responses).
STREAM_BATCH_BYTES = 32 << 20


class RowSink(Protocol):
    """Where :func:`stream_inputs` hands what it scored. ``key``: the input's position in the
    inputs given; None for errors about no input (the instance files'). Each input's rows and
    errors arrive in order; :meth:`done` comes once per input, after all of them."""

    def rows(self, key: int, table: pd.DataFrame) -> None: ...

    def errors(self, key: int | None, errors: list[RowError]) -> None: ...

    def done(self, key: int) -> None: ...


@dataclass
class StreamedRun:
    """What :func:`stream_inputs` reports besides the rows: as :class:`scoring.runs.ScoredRun`."""

    layouts: dict[str, Layout]
    options: BatchOptions
    workers: int
    join: str | None
    rows: int = 0
    errors: int = 0


def stream_inputs(
    inputs: list[RunInput],
    labels: list[str],
    force_run: bool,
    *,
    sink: RowSink,
    options: BatchOptions | None,
    mapping: ColumnMapping | None,
    instances,
    join: str,
    image_root,
    uploads,
    workers: int | None,
    chunk_rows: int | None,
    progress: Callable[[Progress], None] | None,
    option_kwargs: Mapping[str, Any],
    access: DataAccess | None = None,
    batch_rows: int | None = None,
    batch_bytes: int | None = None,
) -> StreamedRun:
    """Score ``inputs`` as :func:`scoring.runs.score_inputs` does (same arguments), handing
    ``sink`` each input's rows a batch at a time (``batch_rows``, ``batch_bytes``: the bounds,
    default :data:`STREAM_BATCH_ROWS` and :data:`STREAM_BATCH_BYTES`)."""
    batch_rows = STREAM_BATCH_ROWS if batch_rows is None else batch_rows
    batch_bytes = STREAM_BATCH_BYTES if batch_bytes is None else batch_bytes
    if batch_rows < 1 or batch_bytes < 1:
        raise ValueError(f"batch bounds must be >= 1, got {batch_rows} rows and {batch_bytes} bytes")
    run = prepare_run(
        inputs, labels, force_run, options=options, mapping=mapping, instances=instances, join=join,
        image_root=image_root, uploads=uploads, workers=workers, chunk_rows=chunk_rows,
        option_kwargs=option_kwargs, access=access,
    )  # fmt: skip
    keys = {item.display: key for key, item in enumerate(inputs)}
    streamed = StreamedRun(run.layouts, run.options, run.workers, run.join)

    def hand_errors(errors: list[RowError]) -> None:
        """``errors`` to the sink, a run of one input's at a time (their order kept)."""
        start = 0
        for end in range(1, len(errors) + 1):
            if end == len(errors) or errors[end].file != errors[start].file:
                sink.errors(keys.get(errors[start].file), errors[start:end])
                start = end
        streamed.errors += sum(1 for error in errors if error.severity == ERROR)

    hand_errors(run.errors)
    scored = {job.key for _, job in run.jobs}
    for key in range(len(inputs)):
        if key not in scored:  # not opened, or no record: its errors are all it has
            sink.done(key)

    pending: list[dict[str, Any]] = []
    pending_rows = pending_bytes = 0

    def flush(key: int) -> None:
        nonlocal pending, pending_rows, pending_bytes
        if pending:
            sink.rows(key, with_option_columns(assemble_table(pending), run.options))
            streamed.rows += pending_rows
        pending, pending_rows, pending_bytes = [], 0, 0

    tally: InputTally | None = None
    for job, result in scored_chunks(run, progress):
        if tally is None or tally.job is not job:
            tally = InputTally(job)
        if result is None:  # the input's last chunk came
            flush(job.key)
            error = tally.no_rows_error()
            if error is not None:
                hand_errors([error])
            sink.done(job.key)
            continue
        tally.add(result)
        if result["errors"]:
            hand_errors(result["errors"])
        if not result["n"]:
            continue
        columns = result["columns"]
        pending.append(columns)
        pending_rows += result["n"]
        pending_bytes += sum(columns[name].nbytes for name in ARROW_TEXT if name in columns)
        if pending_rows >= batch_rows or pending_bytes >= batch_bytes:
            flush(job.key)
    return streamed


__all__ = ["STREAM_BATCH_BYTES", "STREAM_BATCH_ROWS", "RowSink", "StreamedRun", "stream_inputs"]
