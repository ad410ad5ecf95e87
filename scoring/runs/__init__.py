"""Rows in, one scored table out: columns, the chunk engine, the pipeline over worker processes, logged-vs-recomputed reports, rescoring one row, re-weighting without rescoring.

Modules: columns, memory, transfer, truths, reports, rescoring, chunks, pipeline, streaming, reweighting. May import: ``verifier``, ``rewards``, ``rollouts``.
The names below are the layer's public entry point: other layers and the app import only these.
"""

from .chunks import score_simple_row
from .columns import (
    ARROW_TEXT,
    CATEGORY_COLUMNS,
    CHUNK_CONSTANT_COLUMNS,
    CHUNKS_PER_WORKER,
    CODED_COLUMNS,
    COLUMNS,
    DEFAULT_CHUNK_ROWS,
    DIAGNOSTIC_KEYS,
    INT_COLUMNS,
    INTEGER_FIELDS,
    LOGGED_PREFIX,
    MAX_CHUNK_ROWS,
    MISMATCH_COLUMN,
    NUMBER_FIELDS,
    OPTION_COLUMNS,
    SPLIT_COLUMNS,
    TEXT_COLUMNS,
    TEXT_FIELDS,
    TRACE,
    BatchOptions,
    Progress,
)
from .memory import arrow_buffers_reused, keep_freed_memory
from .pipeline import (
    RunInput,
    assemble_table,
    automatic_chunk_rows,
    available_cpus,
    run_labels,
    score_files,
    score_records,
)
from .reports import (
    join_report,
    logged_components,
    logged_vs_recomputed,
    mismatch_inputs,
    with_logged_mismatch,
)
from .rescoring import explain_row, row_kwargs
from .reweighting import recompute, reweight
from .streaming import stream_inputs

__all__ = [
    "ARROW_TEXT",
    "BatchOptions",
    "CATEGORY_COLUMNS",
    "CHUNKS_PER_WORKER",
    "CHUNK_CONSTANT_COLUMNS",
    "CODED_COLUMNS",
    "COLUMNS",
    "DEFAULT_CHUNK_ROWS",
    "DIAGNOSTIC_KEYS",
    "INTEGER_FIELDS",
    "INT_COLUMNS",
    "LOGGED_PREFIX",
    "MAX_CHUNK_ROWS",
    "MISMATCH_COLUMN",
    "NUMBER_FIELDS",
    "OPTION_COLUMNS",
    "Progress",
    "RunInput",
    "SPLIT_COLUMNS",
    "TEXT_COLUMNS",
    "TEXT_FIELDS",
    "TRACE",
    "arrow_buffers_reused",
    "assemble_table",
    "automatic_chunk_rows",
    "available_cpus",
    "explain_row",
    "join_report",
    "keep_freed_memory",
    "logged_components",
    "logged_vs_recomputed",
    "mismatch_inputs",
    "recompute",
    "reweight",
    "row_kwargs",
    "run_labels",
    "score_files",
    "score_records",
    "score_simple_row",
    "stream_inputs",
    "with_logged_mismatch",
]
