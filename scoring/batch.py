"""Rows in, one scored table out: the batch path shared by the CLI and the app.

:func:`score_files` reads rollout files (any container and layout that
:mod:`scoring.rollouts` knows), scores every row -- in worker processes for large
inputs, with results identical to the single-process path -- and returns a
:class:`ScoredRun`: the table (one row per rollout), the errors table (file,
line, field, reason), and what was detected per file.

The table keeps, for every row, what the dashboard needs to explain it later:
the response, ``scorer_kwargs`` (compact JSON of the row-level scorer inputs)
and the run-wide options (in the flat columns and ``table.attrs``); see
:func:`row_kwargs` and :func:`explain_row`. Re-weighting without rescoring lives
in :mod:`scoring.reweight`.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import json
import math
import multiprocessing
import operator
import os
import sys
import tempfile
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .compose import ScoringOptions, resolve_options
from .contracts import type_name
from .extract import Extraction, schema_reason
from .rewards import DEFAULT_READING, SCORER_INFO
from .rollouts.access import DataAccess, default_access, private_dir, unpack_inputs
from .rollouts.errors import ERROR, WARNING, RowError, RowProblem, errors_frame, utf8_encodable, utf8_safe
from .rollouts.images import ImageResolver
from .rollouts.layouts import (
    TRACE_ROW,
    ColumnMapping,
    InstanceIndex,
    Layout,
    LayoutError,
    Row,
    RowReader,
    detect_layout,
)
from .rollouts.sources import Source, SourceError, decode_line, in_batches, iter_decoded
from .spec import MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION, SOLVED_THRESHOLD
from .trace import FLAT_KEYS, RESPONSE_KEYS, TraceEvaluation, evaluate, evaluate_resolved

try:
    import msgspec as _msgspec
except ImportError:  # pragma: no cover
    _msgspec = None

# --------------------------------------------------------------------------- columns

#: ``annotation_*`` diagnostics (present only when the annotation parsed; NaN otherwise).
DIAGNOSTIC_KEYS: tuple[str, ...] = (
    "annotation_pred_size",
    "annotation_gt_size",
    "annotation_pred_len",
    "annotation_gt_len",
    "annotation_assigned_count",
    "annotation_shared_key_count",
    "annotation_missing_key_count",
    "annotation_extra_key_count",
    "annotation_assigned_iou_mean",
    "annotation_assigned_similarity_mean",
    "annotation_point_half_life_px",
)
#: Identity and slicing columns.
IDENTITY_COLUMNS = (
    "run",
    "source_file",
    "source_line",
    "row_id",
    "instance_id",
    "task_id",
    "step",
    "sample_index",
    "filter",
    "metrics",
)
#: Text columns (str or missing).
TEXT_COLUMNS = (
    "run",
    "source_file",
    "row_id",
    "instance_id",
    "task_id",
    "filter",
    "metrics",
    "layout",
    "scorer",
    "trace_output_mode",
    "answer_type",
    "annotation_type",
    "format_reason",
    "format_detail",
    "format_reason_answer",
    "format_reason_answer_and_annotation",
    "recovered_source",
    "recovered_text",
    "annotation_reason",
    "image_ref",
    "image_warning",
    "joined",
    "gold",
    "prompt",
    "response",
    "scorer_kwargs",
)
INT_COLUMNS = ("source_line", "step", "sample_index")
#: Columns whose values a summary never pools: lm-eval writes one line per document and filter
#: (``strict-match``, ``flexible-extract``...), whose scores must not be averaged together.
SPLIT_COLUMNS = ("filter",)
#: The run-wide weights as given (before normalisation), so that a row can be re-run exactly.
OPTION_COLUMNS = ("option_answer_weight", "option_annotation_weight")
#: Text columns with few distinct values, stored as pandas categoricals.
CATEGORY_COLUMNS = frozenset(
    {
        "run",
        "source_file",
        "task_id",
        "filter",
        "metrics",
        "layout",
        "scorer",
        "trace_output_mode",
        "answer_type",
        "annotation_type",
        "format_reason",
        "format_reason_answer",
        "format_reason_answer_and_annotation",
        "recovered_source",
        "joined",
    }
)
EXTRA_FLOAT_COLUMNS = (
    "score",
    "image_width",
    "image_height",
    "format_ok_answer",
    "format_ok_answer_and_annotation",
)
#: Column order of the table (``logged_*`` columns follow when present).
COLUMNS: tuple[str, ...] = (
    *IDENTITY_COLUMNS,
    "layout",
    "scorer",
    "trace_output_mode",
    "answer_type",
    "annotation_type",
    "score",
    "solved",
    *FLAT_KEYS,
    *DIAGNOSTIC_KEYS,
    "format_reason",
    "format_detail",
    "format_ok_answer",
    "format_ok_answer_and_annotation",
    "format_reason_answer",
    "format_reason_answer_and_annotation",
    "recovered_source",
    "recovered_text",
    "annotation_reason",
    "image_ref",
    "image_width",
    "image_height",
    "image_warning",
    "joined",
    "gold",
    "prompt",
    "response",
    "scorer_kwargs",
    *OPTION_COLUMNS,
    "logged_mismatch",
)
_FLOAT_COLUMNS = (*FLAT_KEYS, *DIAGNOSTIC_KEYS, *EXTRA_FLOAT_COLUMNS)
LOGGED_PREFIX = "logged_"
#: Comma-separated components whose logged value differs from the recomputed one.
MISMATCH_COLUMN = "logged_mismatch"
#: recovered_text is clipped to this many characters in the table (explain_row gives it whole).
RECOVERED_TEXT_LIMIT = 4000
#: Inputs with at least this many (estimated) rows are scored in worker processes.
PARALLEL_MIN_ROWS = 20_000
#: Records a worker is handed at a time (``chunk_rows=None``): the input's estimated rows spread
#: over :data:`CHUNKS_PER_WORKER` chunks per worker, within these bounds. Each chunk costs the
#: parent a hand-off and a result to take in (4,000 rather than 500 take a quarter off its CPU time),
#: while a large run wants many chunks per worker for its last ones to end together.
DEFAULT_CHUNK_ROWS = 500
MAX_CHUNK_ROWS = 4000
CHUNKS_PER_WORKER = 8
#: A group of rows is scored before it is tabulated (see ``_Engine._score_chunk``), so its
#: evaluations wait together: a group holds at most this many records, and closes early once its
#: responses reach this many characters (an evaluation's size follows its response's).
_SCORED_GROUP_ROWS = 64
_SCORED_GROUP_CHARS = 1_000_000
#: Distinct (mode, half-life) pairs an engine keeps resolved options for (rows rarely bring more than a few).
_RESOLVED_OPTIONS_MAX = 1024
TRACE = "trace"
SIMPLE_SCORERS = tuple(SCORER_INFO)


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class BatchOptions:
    """Run-wide options. Per-row inputs (output mode, image size, half-life) come
    from each row; an option set here overrides the row.

    ``trace_reward_mode=None`` keeps each row's own ``trace_output_mode``
    (default ``answer_and_annotation`` when the row has an annotation contract,
    else ``answer``). ``scorer`` is ``"trace"`` or a simple scorer name
    (``exact_match``, ``contains``, ``last_number``, ``numeric_close``) with its
    options ``gold_key``, ``normalise``, ``tolerance`` and ``reading`` (how
    ``last_number`` / ``numeric_close`` read a number: ``scoring.rewards.READINGS``).
    """

    trace_reward_mode: str | None = None
    trace_annotation_reward_formula: str | None = "gated"
    trace_answer_scoring: str | None = "exact_json"
    answer_weight: float = 0.5
    annotation_weight: float = 0.5
    format_weight: float = 0.0
    point_half_life_px: float | None = None
    solved_threshold: float = SOLVED_THRESHOLD
    scorer: str = TRACE
    gold_key: str = "gold"
    normalise: bool = True
    tolerance: float = 0.01
    reading: str = DEFAULT_READING
    read_image_sizes: bool = True
    logged_atol: float = 1e-6

    def validated(self) -> BatchOptions:
        """Check every option (ValueError naming the option), as the scorer would."""
        resolve_options(
            trace_reward_mode=self.trace_reward_mode if self.trace_reward_mode is not None else "answer",
            trace_annotation_reward_formula=self.trace_annotation_reward_formula,
            trace_answer_scoring=self.trace_answer_scoring,
            answer_weight=self.answer_weight,
            annotation_weight=self.annotation_weight,
            format_weight=self.format_weight,
            point_half_life_px=self.point_half_life_px,
        )
        threshold = _finite(self.solved_threshold, "solved_threshold")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"solved_threshold must be in [0, 1], got {self.solved_threshold!r}")
        if self.scorer != TRACE and self.scorer not in SCORER_INFO:
            raise ValueError(f"scorer must be 'trace' or one of {', '.join(SCORER_INFO)}, got {self.scorer!r}")
        if self.scorer != TRACE:
            self.simple_factory()  # validates gold_key / normalise / tolerance / reading
        _finite(self.logged_atol, "logged_atol")
        return self

    def simple_factory(self):
        info = SCORER_INFO[self.scorer]
        kwargs: dict[str, Any] = {"gold_key": self.gold_key}
        if "normalise" in info.options:
            kwargs["normalise"] = self.normalise
        if "tolerance" in info.options:
            kwargs["tolerance"] = self.tolerance
        if "reading" in info.options:
            kwargs["reading"] = self.reading
        return info.factory(**kwargs)

    def scorer_options(self) -> dict[str, Any]:
        """The run-wide keyword arguments for ``score_trace_response``."""
        return {
            "answer_weight": self.answer_weight,
            "annotation_weight": self.annotation_weight,
            "trace_answer_scoring": self.trace_answer_scoring,
            "trace_annotation_reward_formula": self.trace_annotation_reward_formula,
            "format_weight": self.format_weight,
        }


#: Columns of :func:`join_report`.
JOIN_REPORT_COLUMNS = (
    "file", "rule", "rows", "by_id", "by_prompt", "by_order", "own_ground_truth", "ambiguous", "unmatched",
)  # fmt: skip
#: The start of the reasons :class:`InstanceIndex` gives rows it cannot join.
_AMBIGUOUS_REASON = "matches "
_UNMATCHED_REASONS = ("no instance ", "row ")


def join_report(table: pd.DataFrame, errors: pd.DataFrame, join: str) -> pd.DataFrame:
    """Per rollout file: the join asked for and the rules that matched (``rule``, e.g. ``auto: id,
    prompt``), rows joined by each (``+image``: narrowed by the row's own image), rows that kept
    their own ground truth, and rows left unjoined because their key matched instances that
    disagree (``ambiguous``) or none (``unmatched``) -- those are in the errors table."""
    files: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return files.setdefault(
            name, {column: 0 for column in JOIN_REPORT_COLUMNS} | {"file": name, "rule": join}
        )

    if len(table):
        counts = table.groupby(["source_file", "joined"], observed=True, dropna=False).size()
        for (name, how), count in counts.items():
            row = entry(str(name))
            row["rows"] += int(count)
            if isinstance(how, str):
                row["by_" + how.split("+")[0]] += int(count)
            else:
                row["own_ground_truth"] += int(count)
    if len(errors):
        joining = errors[(errors["field"].isin(["id", "prompt"]) | errors["field"].isna()) & errors["line"].notna()]
        for name, reason in zip(joining["file"], joining["reason"], strict=True):
            if reason.startswith(_AMBIGUOUS_REASON):
                entry(str(name))["ambiguous"] += 1
            elif reason.startswith(_UNMATCHED_REASONS) and "instance" in reason:
                entry(str(name))["unmatched"] += 1
    for row in files.values():
        used = [rule for rule in ("id", "prompt", "order") if row["by_" + rule]]
        row["rule"] = f"{join}: {', '.join(used) or 'nothing matched'}"
    return pd.DataFrame(list(files.values()), columns=list(JOIN_REPORT_COLUMNS))


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return number


@dataclass(frozen=True)
class Progress:
    """What a progress bar needs: rows scored so far, and how far through the input."""

    rows: int
    errors: int
    bytes_done: int
    bytes_total: int
    file: str
    files_done: int
    files_total: int

    @property
    def fraction(self) -> float:
        if self.bytes_total <= 0:
            return 0.0
        return min(1.0, self.bytes_done / self.bytes_total)


@dataclass
class ScoredRun:
    """The result of a batch: ``table`` (one row per rollout), ``errors`` (file, line,
    field, reason, severity, unit), and the layout detected for each file."""

    table: pd.DataFrame
    errors: pd.DataFrame
    layouts: dict[str, Layout] = field(default_factory=dict)
    options: BatchOptions = field(default_factory=BatchOptions)
    workers: int = 1
    #: the join asked for when instance files were given (``auto``, ``id``, ``prompt``, ``order``), else None
    join: str | None = None

    @property
    def error_count(self) -> int:
        return int((self.errors["severity"] == ERROR).sum()) if len(self.errors) else 0

    @property
    def warning_count(self) -> int:
        return int((self.errors["severity"] == WARNING).sum()) if len(self.errors) else 0

    def file_errors(self) -> pd.DataFrame:
        """Errors about whole files (no line): unreadable files, files with no usable row (file-level
        warnings, such as a JSON array in a .jsonl file, are not errors)."""
        return self.errors[self.errors["line"].isna() & (self.errors["severity"] == ERROR)]

    def logged_report(self, atol: float | None = None) -> pd.DataFrame:
        return logged_vs_recomputed(self.table, atol=self.options.logged_atol if atol is None else atol)

    def join_report(self) -> pd.DataFrame:
        """Per file, how its rows met the instances (:func:`join_report`); empty without instances."""
        if self.join is None:
            return pd.DataFrame(columns=list(JOIN_REPORT_COLUMNS))
        return join_report(self.table, self.errors, self.join)


# --------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class _FileJob:
    """What a worker needs to read one file's records (small; sent with every chunk)."""

    key: int
    display: str
    unit: str
    layout: Layout
    base_dir: str
    run: str | None
    force_run: bool


def _dumps(value: Any) -> str:
    """Compact JSON of a row's scorer arguments (NaN as null; bytes as base64)."""
    if _json_encode is not None:
        return _json_encode(value).decode("utf-8")
    return _json_text(value)  # pragma: no cover


def _json_text(value: Any) -> str:
    """The same compact JSON written by the standard library (ASCII escapes for anything else)."""
    return json.dumps(value, default=_json_default, separators=(",", ":"))


def _json_default(value: Any) -> Any:
    """What JSON cannot hold directly: numpy scalars as numbers, anything else as text."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


_json_encoder = _msgspec.json.Encoder(enc_hook=_json_default) if _msgspec is not None else None
_json_encode = _json_encoder.encode if _json_encoder is not None else None
#: One call per chunk for a JSON column (each value on its own line; JSON never holds a raw newline).
_json_encode_lines = getattr(_json_encoder, "encode_lines", None)


def _json_column(values: Sequence[Any]) -> pa.Array:
    """A chunk's values as compact JSON strings (what :func:`_dumps` gives each), one encoder call."""
    if _json_encode_lines is None:
        return _json_column_by_value(values)
    try:
        lines = _json_encode_lines(values)
    except _UNENCODABLE:  # a value msgspec refuses: each value on its own, with fallbacks
        return _json_column_by_value(values)
    if len(lines) > _INT32_MAX:  # past what one Arrow string array's offsets can address
        return _json_column_by_value(values)
    return _lines_to_strings(lines, len(values))


def _json_column_by_value(values: Sequence[Any]) -> pa.Array:
    return pa.array([_dumps_or_text(value) for value in values], type=pa.string())


def _lines_to_strings(lines: bytes, n: int) -> pa.Array:
    """``n`` newline-terminated UTF-8 lines as an Arrow string array, without a Python object per line."""
    ends = np.flatnonzero(np.frombuffer(lines, dtype=np.uint8) == _NEWLINE)
    data = lines.replace(b"\n", b"")
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[0] = 0
    offsets[1:] = ends - np.arange(n)  # each earlier line's newline is gone from ``data``
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


_NEWLINE = ord("\n")
_INT32_MAX = 2**31 - 1


#: What an encoder raises for a value it cannot write.
_UNENCODABLE = (TypeError, ValueError, OverflowError, RecursionError)


def _dumps_or_text(value: Any) -> str:
    """``_dumps(value)``; what msgspec refuses -- a lone surrogate, which json reads from a
    ``\\ud800`` escape -- goes through json instead (its ASCII escapes read back exactly)."""
    try:
        return _dumps(value)
    except _UNENCODABLE:
        return _json_dumps_or_text(value)


def _json_dumps_or_text(value: Any) -> str:
    """json's compact text of ``value``; what json refuses too (a key it cannot write) becomes
    the value's text, as a JSON string."""
    try:
        return _json_text(value)
    except _UNENCODABLE:
        return json.dumps(_text_of(value))


def _text_of(value: Any) -> str:
    try:
        return str(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to write out>"


#: The fields of a :class:`TraceEvaluation` and of its :class:`Extraction` that a table row
#: takes, each fetched by one C call: reading NamedTuple fields one by one costs a descriptor
#: lookup each, and this runs for every row.
_EVALUATION_PARTS = operator.itemgetter(
    *map(TraceEvaluation._fields.index, ("options", "extraction", "annotation"))
)
_OVERALL = TraceEvaluation._fields.index("overall")
_EXTRACTION_PARTS = operator.itemgetter(
    *map(
        Extraction._fields.index,
        ("final_parse", "json_ok", "schema_ok", "format_reason", "format_detail", "recovered_source"),
    )
)  # fmt: skip


def _format_under_modes(
    mode: str, final_parse: Any, json_ok: bool, schema_ok: bool, reason: str
) -> tuple[float, str, float, str]:
    """``(ok, reason)`` under answer mode, then under answer-and-annotation mode, for a response
    whose extraction gave these (``mode`` is the one it was scored in): the extractor's own rule."""
    if not json_ok:
        return 0.0, reason, 0.0, reason
    scored = 1.0 if schema_ok else 0.0
    if mode == MODE_ANSWER:
        ok, other_reason = schema_reason(final_parse, MODE_ANSWER_AND_ANNOTATION)
        return scored, reason, (1.0 if ok else 0.0), other_reason
    ok, other_reason = schema_reason(final_parse, MODE_ANSWER)
    return (1.0 if ok else 0.0), other_reason, scored, reason


#: How a chunk stores its columns while rows arrive (see :class:`_Chunk`): each kind of column
#: is one buffer, and a row writes its values of that kind in this order.
#: Low-cardinality text, coded per chunk (``_Codes``; pandas categoricals in the table).
_CODED_COLUMNS = (
    "run",
    "task_id",
    "joined",
    "trace_output_mode",
    "answer_type",
    "annotation_type",
    "format_reason",
    "format_reason_answer",
    "format_reason_answer_and_annotation",
    "recovered_source",
    # written apart from the others: the scorer's code directly, lm-eval's filter and metric names
    # only when a row has them (the row's ``coded`` tuple stops before these)
    "scorer",
    "filter",
    "metrics",
)
#: The scorer column's place among them, and its two codes (registered when a chunk starts): each
#: row is scored by what it holds, the trace verifier or the run's simple scorer.
_SCORER_COLUMN = _CODED_COLUMNS.index("scorer")
_FILTER_COLUMN, _METRICS_COLUMN = _CODED_COLUMNS.index("filter"), _CODED_COLUMNS.index("metrics")
_TRACE_CODE, _SIMPLE_CODE = 0, 1
#: Categorical columns with one value per chunk (a chunk is one file's). The scorer is not one of
#: them: each row is scored by what it holds (trace ground truth, or a plain gold answer).
_CHUNK_CONSTANT_COLUMNS = ("source_file", "layout")
#: Texts that travel and wait as Arrow buffers, not Python strings (half the memory).
_TEXT_FIELDS = (
    "row_id",
    "instance_id",
    "prompt",
    "response",
    "image_ref",
    "image_warning",
    "format_detail",
    "recovered_text",
    "annotation_reason",
    "gold",
)
#: Nullable integers (``INT_COLUMNS``; the first, the line, is never missing).
_INTEGER_FIELDS = INT_COLUMNS
#: Floats besides the flat result (``EXTRA_FLOAT_COLUMNS``).
_NUMBER_FIELDS = EXTRA_FLOAT_COLUMNS
#: Columns that stay Arrow string arrays from the chunk to the table (joined without a copy).
_ARROW_TEXT = frozenset((*_TEXT_FIELDS, "scorer_kwargs"))
#: Where each of :data:`DIAGNOSTIC_KEYS` sits in a chunk's diagnostics buffer.
_DIAGNOSTIC_POSITIONS = {key: position for position, key in enumerate(DIAGNOSTIC_KEYS)}


class _Codes:
    """A categorical column of one chunk: int32 codes (-1 = missing) into ``categories``."""

    __slots__ = ("codes", "categories")

    def __init__(self, codes: np.ndarray, categories: list[str]):
        self.codes = codes
        self.categories = categories

    def __len__(self) -> int:
        return len(self.codes)

    def __getstate__(self):
        return self.codes, self.categories

    def __setstate__(self, state):
        self.codes, self.categories = state


class _Chunk:
    """One chunk's table, written a row at a time straight into column buffers; :meth:`finish`
    turns the buffers into the chunk's columns.

    Each kind of column is one buffer -- codes of the categorical columns, the integers, the
    floats, the flat result's per-response values -- and a list per text column, so a row
    costs a store per value and no per-row tuple is transposed later. Compiled, ``_Chunk`` is
    an extension type whose buffers are typed (``batch.pxd``), and a store is a C assignment.
    """

    def __init__(self, display: str, unit: str, layout: str, scorer: str, threshold: float, capacity: int):
        self.display = display
        self.unit = unit
        self.layout = layout
        self.scorer = scorer
        self.threshold = threshold
        self.n = 0
        self.capacity = 0
        self.errors: list[RowError] = []
        self.logged: list[dict | None] = []
        self.kwargs: list[Any] = []
        self.texts: list[list[str | None]] = [[] for _ in _TEXT_FIELDS]
        self.category_codes: list[dict[str, int]] = [{} for _ in _CODED_COLUMNS]
        self.categories: list[list[str]] = [[] for _ in _CODED_COLUMNS]
        #: TraceEvaluation.flat_parts' template of each row (None: not traced), and the
        #: (row, key, value) of each diagnostic outside DIAGNOSTIC_KEYS (a newer scorer's)
        self.templates: list[dict[str, float] | None] = []
        self.extra_diagnostics: list[tuple[int, str, float]] = []
        self._reserve(max(capacity, 1))
        for value in (TRACE, scorer):  # _TRACE_CODE, _SIMPLE_CODE (the same when no simple scorer is chosen)
            self._code(_SCORER_COLUMN, value)

    def _reserve(self, capacity: int) -> None:
        """Buffers for ``capacity`` rows, the rows so far kept (a record may give several rows)."""
        n = self.n
        codes = np.full((len(_CODED_COLUMNS), capacity), -1, dtype=np.int32)
        integers = np.zeros((len(_INTEGER_FIELDS), capacity), dtype=np.int64)
        missing = np.zeros((len(_INTEGER_FIELDS), capacity), dtype=np.uint8)
        numbers = np.full((len(_NUMBER_FIELDS), capacity), math.nan)
        response_values = np.full((capacity, len(RESPONSE_KEYS)), math.nan)
        diagnostic_values = np.full((capacity, len(DIAGNOSTIC_KEYS)), math.nan)
        if n:
            codes[:, :n] = self.code_buffer[:, :n]
            integers[:, :n] = self.integer_buffer[:, :n]
            missing[:, :n] = self.missing_buffer[:, :n]
            numbers[:, :n] = self.number_buffer[:, :n]
            response_values[:n] = self.response_buffer[:n]
            diagnostic_values[:n] = self.diagnostic_buffer[:n]
        # the arrays, and (compiled) typed views of them that the row writers store through
        self.code_buffer, self.codes = codes, codes
        self.integer_buffer, self.integers = integers, integers
        self.missing_buffer, self.missing = missing, missing
        self.number_buffer, self.numbers = numbers, numbers
        self.response_buffer, self.response_values = response_values, response_values
        self.diagnostic_buffer, self.diagnostic_values = diagnostic_values, diagnostic_values
        self.capacity = capacity

    def add(self, row: Row, line: int, result: tuple) -> None:
        """Tabulate one scored row; ``result`` is what ``_Engine._score`` gave for it."""
        score, image, evaluation, kwargs = result
        image_ref = image_warning = None
        if image is not None:
            image_ref = image.ref
        if row.warnings or (image is not None and image.warning):
            image_warning = self._report_warnings(row, line, image)
        if self.n == self.capacity:
            self._reserve(2 * self.capacity)
        i = self.n
        row_id = row.row_id if row.row_id is not None else str(line)
        self.integers[0, i] = line
        if row.step is None:
            self.missing[1, i] = 1
        else:
            self.integers[1, i] = row.step
        if row.sample_index is None:
            self.missing[2, i] = 1
        else:
            self.integers[2, i] = row.sample_index
        self.logged.append(row.logged)
        if evaluation is None:  # a simple-scorer row: no trace verdicts
            nan = math.nan
            width = image.width if image is not None and image.width else nan
            height = image.height if image is not None and image.height else nan
            gold = None if row.gold is None else str(row.gold)
            self.codes[_SCORER_COLUMN, i] = _SIMPLE_CODE
            coded = (row.run, row.task_id, row.joined, None, None, None, None, None, None, None)
            texts = (
                row_id, row.instance_id, row.prompt, row.response, image_ref, image_warning,
                None, None, None, gold,
            )  # fmt: skip
            numbers = (score, width, height, nan, nan)
            kwargs = {"gold": row.gold, "meta": row.meta}
        else:
            options, extraction, annotation = _EVALUATION_PARTS(evaluation)
            parts = _EXTRACTION_PARTS(extraction)
            final_parse, json_ok, schema_ok, format_reason, format_detail, recovered_source = parts
            mode = options.mode
            ok_answer, reason_answer, ok_both, reason_both = _format_under_modes(
                mode, final_parse, json_ok, schema_ok, format_reason
            )
            recovered = extraction.recovered_text
            if recovered is not None and len(recovered) > RECOVERED_TEXT_LIMIT:
                recovered = recovered[:RECOVERED_TEXT_LIMIT]
            answer_type = row.answer_gt.get("type")
            size = kwargs["image_size"]
            if size:
                width, height = size
            else:
                width = height = math.nan
            self.codes[_SCORER_COLUMN, i] = _TRACE_CODE
            coded = (
                row.run, row.task_id, row.joined, mode, None if answer_type is None else str(type_name(answer_type)),
                annotation.annotation_type, format_reason, reason_answer, reason_both, recovered_source,
            )  # fmt: skip
            texts = (
                row_id, row.instance_id, row.prompt, row.response, image_ref, image_warning,
                format_detail or None, recovered, annotation.reason or None, None,
            )  # fmt: skip
            numbers = (score, width, height, ok_answer, ok_both)
        # each in the order of _CODED_COLUMNS, _TEXT_FIELDS and _NUMBER_FIELDS
        self._code_all(i, coded)
        if row.filter is not None:
            self.codes[_FILTER_COLUMN, i] = self._code(_FILTER_COLUMN, row.filter)
        if row.metrics is not None:
            self.codes[_METRICS_COLUMN, i] = self._code(_METRICS_COLUMN, row.metrics)
        self._append_texts(texts)
        self._store_numbers(i, numbers)
        self.kwargs.append(kwargs)
        self._store_flat(i, evaluation)
        self.n = i + 1

    def _store_flat(self, i: int, evaluation: TraceEvaluation | None) -> None:
        """Row ``i``'s flat result, from ``evaluation.flat_parts()`` (None: a row the trace scorer
        did not score, NaN throughout); rows are stored in order. :meth:`_flat_columns` spreads it."""
        if evaluation is None:
            self.templates.append(None)
            return
        template, values, keys, diagnostics = evaluation.flat_parts()
        self.templates.append(template)
        for j in range(len(values)):
            self.response_values[i, j] = values[j]
        positions = _DIAGNOSTIC_POSITIONS
        for j in range(len(keys)):
            position = positions.get(keys[j])
            if position is None:
                self.extra_diagnostics.append((i, keys[j], diagnostics[j]))
            else:
                self.diagnostic_values[i, position] = diagnostics[j]

    def _code_all(self, i: int, values: tuple) -> None:
        """Row ``i``'s values of the first :data:`_CODED_COLUMNS`, as codes (None: -1)."""
        for column in range(len(values)):
            value = values[column]
            if value is not None:
                self.codes[column, i] = self._code(column, value)

    def _code(self, column: int, value: str) -> int:
        """The chunk's code of ``value`` in ``column``: categories in order of first appearance
        (the table sorts them when it joins the chunks)."""
        codes = self.category_codes[column]
        code = codes.get(value)
        if code is None:
            categories = self.categories[column]
            code = codes[value] = len(categories)
            categories.append(value)
        return code

    def _append_texts(self, values: tuple) -> None:
        texts = self.texts
        for column in range(len(values)):
            texts[column].append(values[column])

    def _store_numbers(self, i: int, values: tuple) -> None:
        for column in range(len(values)):
            self.numbers[column, i] = values[column]

    def _flat_columns(self) -> dict[str, np.ndarray]:
        """The chunk's flat results as float columns: :data:`FLAT_KEYS`, then
        :data:`DIAGNOSTIC_KEYS` (NaN where a row has none), then any other diagnostics, sorted.

        What ``as_flat_dict`` does a row at a time, done a column at a time: the rows share a
        handful of templates (one per options and declared annotation type), so each distinct
        template becomes one row of values spread to its rows by index, and the per-response
        values overwrite their columns.
        """
        n, templates = self.n, self.templates
        fixed = np.full((n, len(FLAT_KEYS)), math.nan)
        traced = [position for position, template in enumerate(templates) if template is not None]
        if traced:
            present = templates if len(traced) == n else [templates[position] for position in traced]
            distinct = dict(zip(map(id, present), present, strict=True))
            code_of = {key: code for code, key in enumerate(distinct)}
            codes = np.fromiter(map(code_of.__getitem__, map(id, present)), dtype=np.intp, count=len(traced))
            by_template = np.array(
                [list(template.values()) for template in distinct.values()], dtype=np.float64
            )
            block = by_template[codes]
            values = self.response_buffer[:n]
            block[:, _RESPONSE_POSITIONS] = values if len(traced) == n else values[traced]
            if len(traced) == n:
                fixed = block
            else:
                fixed[traced] = block
        # one copy each; every column a contiguous row of it
        columns = dict(zip(FLAT_KEYS, np.ascontiguousarray(fixed.T), strict=True))
        columns.update(zip(DIAGNOSTIC_KEYS, np.ascontiguousarray(self.diagnostic_buffer[:n].T), strict=True))
        for name in sorted({key for _, key, _ in self.extra_diagnostics}):
            columns[name] = np.full(n, math.nan)
        for position, key, value in self.extra_diagnostics:
            columns[key][position] = value
        return columns

    def _report_warnings(self, row: Row, line: int, image) -> str | None:
        """Report the row's warnings; the image-related ones also become its ``image_warning``."""
        image_warnings = []
        for where, reason in row.warnings:
            self.errors.append(RowError(self.display, line, where, reason, WARNING, self.unit))
            if where and "image" in where:
                image_warnings.append(f"{where}: {reason}")
        if image is not None and image.warning:
            image_warnings.append(image.warning)
            self.errors.append(RowError(self.display, line, "image", image.warning, WARNING, self.unit))
        return "; ".join(image_warnings) or None

    def _warn_escaped(self, column: str, positions: Iterable[int]) -> None:
        """A warning for each row whose ``column`` text had to be escaped to be stored."""
        lines = self.integer_buffer[0]
        for position in positions:
            line = int(lines[position])
            self.errors.append(RowError(self.display, line, column, _SURROGATE_NOTE, WARNING, self.unit))

    def finish(self) -> dict[str, Any]:
        n = self.n
        nan = math.nan
        columns: dict[str, Any] = {}
        for name, value in zip(_CHUNK_CONSTANT_COLUMNS, (self.display, self.layout), strict=True):
            columns[name] = codes = _Codes(np.zeros(n, dtype=np.int32), [value] if n else [])
            self._warn_escaped(name, _escape_categories(codes))
        for column, name in enumerate(_CODED_COLUMNS):
            columns[name] = codes = _Codes(self.code_buffer[column, :n].copy(), self.categories[column])
            self._warn_escaped(name, _escape_categories(codes))
        _drop_unused(columns["scorer"])  # both scorers are registered when the chunk starts
        for name, values in zip(_TEXT_FIELDS, self.texts, strict=True):
            if values.count(None) == n:
                columns[name] = pa.nulls(n, type=pa.string())
            else:
                columns[name], escaped = _text_array(values)
                self._warn_escaped(name, escaped)
        columns["scorer_kwargs"] = _json_column(self.kwargs)
        for column, name in enumerate(_INTEGER_FIELDS):
            data = self.integer_buffer[column, :n].copy()
            columns[name] = (data, self.missing_buffer[column, :n].astype(bool))
        for column, name in enumerate(_NUMBER_FIELDS):
            columns[name] = self.number_buffer[column, :n].copy()
        columns.update(self._flat_columns())
        components = {c for logged in self.logged if logged for c in logged}
        for component in sorted(components):
            columns[LOGGED_PREFIX + component] = np.fromiter(
                ((logged.get(component, nan) if logged else nan) for logged in self.logged),
                dtype=np.float64,
                count=n,
            )
        columns["solved"] = columns["score"] >= self.threshold
        if self.errors:  # read errors came first, escaped texts last: back to line order (stable)
            self.errors.sort(key=_line_order)
        return {"columns": columns, "errors": self.errors, "n": n}


_SURROGATE_NOTE = (
    "holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which the table cannot store: "
    "kept with that character written as its escape"
)


def _text_array(values: Sequence[str | None]) -> tuple[pa.Array, list[int]]:
    """Texts as an Arrow string array, and the positions of the texts that had to be escaped:
    UTF-8 cannot hold a lone surrogate (json reads one from a ``\\ud800`` escape)."""
    try:
        return pa.array(values, type=pa.string()), []
    except UnicodeEncodeError:  # rare: find the texts and escape them
        escaped = [i for i, text in enumerate(values) if text is not None and not utf8_encodable(text)]
    fixed = list(values)
    for i in escaped:
        fixed[i] = utf8_safe(values[i])
    return pa.array(fixed, type=pa.string()), escaped


def _drop_unused(codes: _Codes) -> None:
    """Forget the categories no row of the chunk has (codes renumbered in the same order)."""
    used = np.unique(codes.codes[codes.codes >= 0])
    if len(used) == len(codes.categories):
        return
    remap = np.full(len(codes.categories) + 1, -1, dtype=np.int32)  # a code of -1 picks the last: -1
    remap[used] = np.arange(len(used), dtype=np.int32)
    codes.codes = remap[codes.codes]
    codes.categories = [codes.categories[code] for code in used]


def _escape_categories(codes: _Codes) -> list[int]:
    """Escape the categories UTF-8 cannot hold (see :func:`_text_array`); the rows that had one."""
    bad = [i for i, category in enumerate(codes.categories) if not utf8_encodable(category)]
    if not bad:
        return []
    for i in bad:
        codes.categories[i] = utf8_safe(codes.categories[i])
    return np.flatnonzero(np.isin(codes.codes, bad)).tolist()


#: Where each of :data:`RESPONSE_KEYS` sits among :data:`FLAT_KEYS`.
_RESPONSE_POSITIONS = np.array([FLAT_KEYS.index(key) for key in RESPONSE_KEYS], dtype=np.intp)


_collector_lock = threading.Lock()
_collector_pauses = 0
_collector_was_enabled = False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a chunk is scored.

    A chunk keeps its finished rows alive until it ends, so the collector,
    triggered by allocation counts, would traverse them again and again for nothing: they hold
    no cycles and go by reference counting. It runs again as before when the last chunk being
    scored (in any thread) ends; a cycle made meanwhile is collected then.
    """
    global _collector_pauses, _collector_was_enabled
    with _collector_lock:
        if _collector_pauses == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_pauses += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_pauses -= 1
            if _collector_pauses == 0 and _collector_was_enabled:
                gc.enable()


class _Engine:
    """Scores chunks of raw records; the same object runs in-process or in a worker."""

    def __init__(self, options: BatchOptions, resolver: ImageResolver, instances: InstanceIndex | None):
        self.options = options
        self.resolver = resolver
        self.instances = instances
        self.readers: dict[int, RowReader] = {}
        self.run_options = options.scorer_options()
        self.mode_override = options.trace_reward_mode
        self.half_life_override = options.point_half_life_px
        #: a simple scorer is chosen: it scores the rows that hold a plain gold answer
        self.simple = options.scorer != TRACE
        self.simple_reward = options.simple_factory() if self.simple else None
        #: read an image's size from its header when the row gives none (trace rows only)
        self.read_image_sizes = bool(options.read_image_sizes)
        self.threshold = float(options.solved_threshold)
        #: (mode, half-life) -> resolved scorer options (see :meth:`_options_for`)
        self.resolved: dict[tuple[Any, Any], ScoringOptions] = {}

    def _reader(self, job: _FileJob) -> RowReader:
        reader = self.readers.get(job.key)
        if reader is None:
            reader = RowReader(
                job.layout,
                base_dir=job.base_dir,
                run=job.run,
                simple=self.simple,
                gold_key=self.options.gold_key,
                instances=self.instances,
            )
            self.readers[job.key] = reader
        return reader

    def score_chunk(self, job: _FileJob, start: int, items: Sequence[tuple[int, Any]]) -> dict[str, Any]:
        with _collector_paused():
            return self._score_chunk(job, start, items)

    def _score_chunk(self, job: _FileJob, start: int, items: Sequence[tuple[int, Any]]) -> dict[str, Any]:
        """Read every record of the chunk into rows; then, a group of rows at a time, score
        the group and tabulate it. Each kind of work runs back to back over many rows instead
        of decoding, reading, scoring and tabulating in turn for each row, so its code and branch
        history stay warm (about 10% less CPU per row; README, "How a chunk ..."). A
        group's evaluations wait for its tabulation, so a group is bounded in rows and in
        response characters (:data:`_SCORED_GROUP_ROWS`, :data:`_SCORED_GROUP_CHARS`); the rows
        themselves live until the chunk's table is built anyway."""
        chunk = _Chunk(job.display, job.unit, job.layout.name, self.options.scorer, self.threshold, len(items))
        for group in self._read_chunk(job, start, items, chunk):
            for line, rows, results in self._score_group(job, group, chunk):
                for row, result in zip(rows, results, strict=True):
                    chunk.add(row, line, result)
        return chunk.finish()

    def _score_group(
        self, job: _FileJob, read_rows: Sequence[tuple[int, list[Row]]], chunk: _Chunk
    ) -> list[tuple[int, list[Row], tuple]]:
        """Each record's ``(line, rows, results)``; what cannot be scored goes to the chunk's errors."""
        scored = []
        for line, rows in read_rows:
            try:
                if len(rows) == 1:
                    results = (self._score(rows[0], job, line),)
                else:
                    results = tuple([self._score(row, job, line) for row in rows])
            except Exception as exc:  # a RowProblem, or a scorer bug that must not sink the run
                chunk.errors.append(_row_failure(job, line, exc, "scored"))
                continue
            scored.append((line, rows, results))
        return scored

    def _read_chunk(
        self, job: _FileJob, start: int, items: Sequence[tuple[int, Any]], chunk: _Chunk
    ) -> list[list[tuple[int, list[Row]]]]:
        """Each good record's ``(line, rows)``, in groups to score together (bounded as
        :data:`_SCORED_GROUP_ROWS` and :data:`_SCORED_GROUP_CHARS` say); what cannot be read
        goes to the chunk's errors."""
        read = self._reader(job).read
        force_run = job.force_run
        payloads = [payload for _, payload in items]
        if payloads and all(type(payload) is bytes for payload in payloads):
            payloads = iter_decoded(payloads)  # the JSONL case: each line decoded as its turn comes
        groups: list[list[tuple[int, list[Row]]]] = []
        group: list[tuple[int, list[Row]]] = []
        group_chars = 0
        ordinal = start - 1
        for (line, _), payload in zip(items, payloads, strict=True):
            ordinal += 1
            kind = type(payload)
            if kind is RowError:
                chunk.errors.append(payload)
                continue
            try:
                if kind is RowProblem:
                    raise payload
                rows = read(decode_line(payload) if kind is bytes else payload, ordinal)
            except Exception as exc:  # a RowProblem, or a reader bug that must not sink the run
                chunk.errors.append(_row_failure(job, line, exc, "read"))
                continue
            if force_run:
                for row in rows:
                    row.run = job.run
            group.append((line, rows))
            for row in rows:
                if row.response:
                    group_chars += len(row.response)
            if len(group) >= _SCORED_GROUP_ROWS or group_chars >= _SCORED_GROUP_CHARS:
                groups.append(group)
                group, group_chars = [], 0
        if group:
            groups.append(group)
        return groups

    # -- one row ------------------------------------------------------------
    def _score(self, row: Row, job: _FileJob, line: int) -> tuple:
        """``(score, image info, TraceEvaluation or None, row-level scorer kwargs or None)``."""
        image = None
        size = row.image_size
        traced = row.kind == TRACE_ROW
        if row.image is not None:
            need = size is None and self.read_image_sizes and traced
            image = self.resolver.resolve(row.image, base_dirs=row.image_bases, need_size=need)
        if not traced:
            task = SimpleNamespace(id=row.row_id if row.row_id is not None else line, meta=row.meta)
            try:
                score = float(self.simple_reward(task, row.response))
            except KeyError as exc:
                raise RowProblem(f"meta.{self.options.gold_key}", f"missing ({exc})") from None
            except ValueError as exc:
                raise RowProblem("gold", str(exc)) from None
            return score, image, None, None
        if size is None and image is not None and image.width:
            size = (image.width, image.height)
        mode = self.mode_override if self.mode_override is not None else (row.mode or MODE_ANSWER)
        half_life = self.half_life_override if self.half_life_override is not None else row.half_life
        answer_gt, annotation_gt, reward_contract = row.answer_gt, row.annotation_gt, row.reward_contract
        image_size = [size[0], size[1]] if size is not None else None
        row_kwargs = {
            "answer_gt": answer_gt,
            "annotation_gt": annotation_gt,
            "reward_contract": reward_contract,
            "image_size": image_size,
            "point_half_life_px": half_life,
            "trace_reward_mode": mode,
        }
        try:
            options = self._options_for(mode, half_life)
        except ValueError as exc:
            raise RowProblem(None, f"invalid scorer input ({exc})") from None
        evaluation = evaluate_resolved(
            row.response, answer_gt, annotation_gt, reward_contract, options, image_size
        )
        return evaluation[_OVERALL], image, evaluation, row_kwargs

    def _options_for(self, mode: Any, half_life: Any) -> ScoringOptions:
        """The run's scorer options for a row's mode and half-life: what ``evaluate`` would
        resolve from the same keywords, resolved once per distinct pair (ValueError if invalid)."""
        key = (mode, half_life)
        try:
            options = self.resolved.get(key)
        except TypeError:  # an unhashable value: not cached; resolve_options names what is wrong with it
            key = options = None
        if options is None:
            options = resolve_options(trace_reward_mode=mode, point_half_life_px=half_life, **self.run_options)
            if key is not None:
                if len(self.resolved) >= _RESOLVED_OPTIONS_MAX:
                    self.resolved.clear()
                self.resolved[key] = options
        return options


def _row_failure(job: _FileJob, line: int, exc: Exception, stage: str) -> RowError:
    """The error for a record that could not be read or scored: a RowProblem names its field;
    anything else is a bug in a reader or the scorer, reported on its line."""
    if isinstance(exc, RowProblem):
        return RowError(job.display, line, exc.field, exc.reason, exc.severity, job.unit)
    return RowError(job.display, line, None, f"could not be {stage} ({type(exc).__name__}: {exc})", ERROR, job.unit)


def _line_order(error: RowError) -> int:
    return -1 if error.line is None else error.line


# worker-process side
_WORKER_ENGINE: _Engine | None = None


def _init_worker(options: BatchOptions, resolver: ImageResolver, instances: InstanceIndex | None) -> None:
    global _WORKER_ENGINE
    _WORKER_ENGINE = _Engine(options, resolver, instances)


def _score_in_worker(job: _FileJob, start: int, items: list) -> dict[str, Any]:
    assert _WORKER_ENGINE is not None
    return _WORKER_ENGINE.score_chunk(job, start, items)


# --------------------------------------------------------------------------- orchestration


def automatic_chunk_rows(rows: int, workers: int) -> int:
    """Records per chunk for ``rows`` estimated rows on ``workers`` processes (see :data:`MAX_CHUNK_ROWS`)."""
    return min(MAX_CHUNK_ROWS, max(DEFAULT_CHUNK_ROWS, rows // (workers * CHUNKS_PER_WORKER)))


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["scoring.batch"])
        return context
    return multiprocessing.get_context("spawn")  # pragma: no cover - not POSIX


@dataclass
class _Input:
    """A file (or in-memory records) waiting to be scored."""

    display: str
    path: Path | None = None
    records: Sequence[Mapping] | None = None
    source: Source | None = None
    sample: list = field(default_factory=list)
    estimated_rows: int = 0
    size: int = 0
    consumed: int = 0
    #: where its rows' relative image paths are looked up (default: the file's folder; a copy of
    #: a file fetched from elsewhere names the original's)
    base_dir: str | None = None


def _position(item: _Input) -> int:
    """How far through the input: bytes of a file, records of an in-memory list."""
    return item.source.position() if item.source is not None else item.consumed


def _estimate_rows(source: Source, sample: list) -> int:
    if source.container == "parquet":
        try:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(source.path).metadata.num_rows)
        except Exception:
            return 0
    if not sample:
        return 0
    approx = sum(len(_dumps_or_text(record)) + 1 for record in sample[:16]) / min(len(sample), 16)
    factor = 4.0 if source.path.name.lower().endswith((".gz", ".gzip")) else 1.0
    return int(source.size * factor / max(approx, 1.0))


def _default_label(paths: Sequence[Path]) -> str:
    if len(paths) == 1:
        return Path(paths[0]).name.split(".")[0]
    parents = {p.resolve().parent.name for p in paths}
    return parents.pop() if len(parents) == 1 and "" not in parents else "run"


def _run_labels(paths: Sequence[Path], runs: str | Mapping, run_label: str | None) -> tuple[list[str], bool]:
    if isinstance(runs, Mapping):
        labels = [str(runs.get(str(p), runs.get(p.name, run_label or p.name.split(".")[0]))) for p in paths]
        return labels, True
    if runs == "separate":
        stems = [p.name.split(".")[0] for p in paths]
        counts = Counter(stems)
        labels = [
            (f"{p.resolve().parent.name}/{stem}" if counts[stem] > 1 else stem)
            for p, stem in zip(paths, stems, strict=True)
        ]
        return labels, True
    if runs != "one":
        raise ValueError(f"runs must be 'one', 'separate' or a mapping of file -> label, got {runs!r}")
    return [run_label or _default_label(paths)] * len(paths), run_label is not None


def score_files(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    options: BatchOptions | None = None,
    mapping: ColumnMapping | None = None,
    runs: str | Mapping[str, str] = "one",
    run_label: str | None = None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    join: str = "auto",
    image_root: str | os.PathLike | None = None,
    uploads: Mapping[str, bytes | str | os.PathLike] | None = None,
    workers: int | None = None,
    chunk_rows: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    access: DataAccess | None = None,
    **option_kwargs: Any,
) -> ScoredRun:
    """Score rollout files into one table.

    ``paths``: one file or several. ``runs="one"`` makes them one run (labelled
    ``run_label``, else the file stem or their folder's name); ``"separate"``
    makes one run per file (labelled by file stem); a mapping gives labels.
    ``mapping`` overrides the detected column roles. ``instances`` are trace
    instance files joined to rows that lack ground truth (``join``: auto, id,
    prompt, order). ``image_root`` is an image folder or zip, ``uploads`` maps
    uploaded file names to bytes or paths. ``workers``: None picks processes
    automatically for large inputs (>= ``PARALLEL_MIN_ROWS`` estimated rows), 1
    forces the single-process path. ``chunk_rows``: records handed to a worker at a
    time (None: :func:`automatic_chunk_rows`); the table is the same for any.
    ``option_kwargs`` are :class:`BatchOptions` fields (``answer_weight=0.7``...).
    Raises ValueError for invalid options; every problem with the input lands in
    ``errors``.

    A ``.zip`` among ``paths`` is a bundle: its rollout files are read (named
    ``archive!member``) with its images beside them, and the table's ``image_ref``
    points into the archive (``zip:<archive>!<member>``). ``access`` says where files
    may be read and the limits on reading them (default: the environment's,
    ``ROLLOUTSCOPE_DATA_ROOTS`` and ``ROLLOUTSCOPE_MAX_...``).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError("no input files")
    access = access or default_access()
    with contextlib.ExitStack() as stack:

        def workdir() -> str:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="rolloutscope-bundle-"))
            return str(private_dir(folder))

        unpacked = unpack_inputs(paths, access, workdir)
        for folder in unpacked.folders:
            access = access.with_root(folder)
        if image_root is None and len(unpacked.folders) == 1:
            image_root = unpacked.folders[0]  # paths relative to the zip's top
        given = [Path(p) for p in paths]
        labels, force = _run_labels(unpacked.files if runs != "one" else given, runs, run_label)
        if runs == "one":
            labels = labels[:1] * len(unpacked.files)
        inputs = [_Input(display=d, path=p) for p, d in zip(unpacked.files, unpacked.displays, strict=True)]
        run = _score_inputs(
            inputs,
            labels,
            force,
            options=options,
            mapping=mapping,
            instances=instances,
            join=join,
            image_root=image_root,
            uploads=uploads,
            workers=workers,
            chunk_rows=chunk_rows,
            progress=progress,
            option_kwargs=option_kwargs,
            access=access,
        )
        if unpacked.problems:
            problems = errors_frame(RowError(f, None, None, r, unit="file") for f, r in unpacked.problems)
            run.errors = pd.concat([problems, run.errors], ignore_index=True) if len(run.errors) else problems
        if unpacked.origins and "image_ref" in run.table:
            run.table["image_ref"] = _refs_into_archives(run.table["image_ref"], unpacked.origins)
    return run


def _refs_into_archives(refs: pd.Series, origins: Mapping[str, tuple[str, str]]) -> pd.Series:
    """Image refs to files unpacked from a bundle, as ``zip:<archive>!<member>`` (the unpacked
    copy is removed when scoring ends)."""
    moved = {path: f"zip:{archive}!{member}" for path, (archive, member) in origins.items()}
    if isinstance(refs.dtype, pd.CategoricalDtype):
        return refs.cat.rename_categories([moved.get(c, c) for c in refs.cat.categories])
    return refs.map(lambda ref: moved.get(ref, ref) if isinstance(ref, str) else ref).astype(refs.dtype)


def score_records(
    records: Iterable[Mapping],
    *,
    name: str = "<rows>",
    base_dir: str | os.PathLike | None = None,
    options: BatchOptions | None = None,
    mapping: ColumnMapping | None = None,
    run_label: str | None = None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    join: str = "auto",
    image_root: str | os.PathLike | None = None,
    uploads: Mapping[str, bytes | str | os.PathLike] | None = None,
    workers: int | None = 1,
    chunk_rows: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    access: DataAccess | None = None,
    **option_kwargs: Any,
) -> ScoredRun:
    """Score in-memory records (dicts) as if they were one file called ``name``."""
    records = list(records)
    item = _Input(display=name, records=records)
    item.path = Path(base_dir or ".") / "__records__"
    return _score_inputs(
        [item],
        [run_label or name],
        run_label is not None,
        options=options,
        mapping=mapping,
        instances=instances,
        join=join,
        image_root=image_root,
        uploads=uploads,
        workers=workers,
        chunk_rows=chunk_rows,
        progress=progress,
        option_kwargs=option_kwargs,
        access=access,
    )


def _score_inputs(
    inputs: list[_Input],
    labels: list[str],
    force_run: bool,
    *,
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
) -> ScoredRun:
    options = replace(options or BatchOptions(), **option_kwargs).validated()
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    access = access or default_access()
    resolver = ImageResolver(image_root=image_root, uploads=uploads, access=access)
    errors: list[RowError] = []
    index = None
    if instances:
        instance_paths = [instances] if isinstance(instances, (str, os.PathLike)) else list(instances)
        index = InstanceIndex(instance_paths, join=join, access=access)
        errors.extend(index.errors)
    simple = options.scorer != TRACE

    # open every input and detect its layout
    jobs: list[tuple[_Input, _FileJob]] = []
    layouts: dict[str, Layout] = {}
    for key, (item, label) in enumerate(zip(inputs, labels, strict=True)):
        try:
            if item.records is not None:
                sample = [r for r in item.records[:32] if isinstance(r, Mapping)]
                unit = "row"
                item.size = len(item.records)
            else:
                item.source = Source(item.path, display=item.display, access=access)
                errors.extend(item.source.notes)
                sample = item.source.sample(32)
                unit = item.source.unit
                item.size = item.source.size
            if not sample:
                _drain_errors(item, errors)
                errors.append(
                    RowError(
                        item.display,
                        None,
                        None,
                        "no usable row: no line could be read as a record",
                        unit=unit,
                    )
                )
                continue
            layout = detect_layout(
                sample,
                path=item.path if item.records is None else None,
                mapping=mapping,
                simple=simple,
                joined=index is not None,
            )
        except SourceError as exc:
            errors.append(exc.error)
            continue
        except LayoutError as exc:
            errors.append(
                RowError(item.display, None, None, str(exc), unit=item.source.unit if item.source else "row")
            )
            continue
        item.sample = sample
        item.estimated_rows = (
            len(item.records) if item.records is not None else _estimate_rows(item.source, sample)
        )
        layouts[item.display] = layout
        base_dir = item.base_dir or str(item.path.resolve().parent)
        jobs.append((item, _FileJob(key, item.display, unit, layout, base_dir, label, force_run)))

    total_rows = sum(item.estimated_rows for item, _ in jobs)
    if workers is None:
        workers = min(_available_cpus(), 8) if total_rows >= PARALLEL_MIN_ROWS else 1
    workers = max(1, int(workers))
    if chunk_rows is None:
        chunk_rows = automatic_chunk_rows(total_rows, workers)
    bytes_total = sum(item.size for item, _ in jobs) or total_rows

    def tasks() -> Iterator[tuple[_FileJob, int, list, _Input]]:
        for item, job in jobs:
            if item.records is not None:
                items = (
                    (
                        i,
                        r
                        if isinstance(r, Mapping)
                        else RowError(item.display, i, None, "row is not a mapping", unit="row"),
                    )
                    for i, r in enumerate(item.records, 1)
                )
                batches = in_batches(items, chunk_rows)
            else:
                batches = item.source.item_batches(chunk_rows)
            start = 0
            for batch in batches:
                item.consumed = start + len(batch)
                yield job, start, batch, item
                start += len(batch)

    collected: list[dict[str, Any]] = []
    rows_per_file: Counter = Counter()
    errors_per_file: dict[str, list[RowError]] = {}
    state = {"rows": 0, "errors": 0, "done_bytes": 0, "files_done": 0, "current": None}
    finished_bytes = 0

    def record(result: dict[str, Any], job: _FileJob, item: _Input, position: int) -> None:
        nonlocal finished_bytes
        collected.append(result["columns"])
        rows_per_file[job.display] += result["n"]
        for error in result["errors"]:
            errors.append(error)
            if error.severity == ERROR:
                errors_per_file.setdefault(job.display, []).append(error)
        state["rows"] += result["n"]
        state["errors"] += sum(1 for e in result["errors"] if e.severity == ERROR)
        if progress is not None:
            done = finished_bytes + position
            progress(
                Progress(
                    state["rows"],
                    state["errors"],
                    done,
                    bytes_total,
                    job.display,
                    state["files_done"],
                    len(jobs),
                )
            )

    if workers == 1:
        engine = _Engine(options, resolver, index)
        current = None
        for job, start, batch, item in tasks():
            if current is not None and current is not item:
                finished_bytes += current.size
                state["files_done"] += 1
            current = item
            result = engine.score_chunk(job, start, batch)
            record(result, job, item, _position(item))
    else:
        from concurrent.futures.process import BrokenProcessPool

        context = _mp_context()
        try:
            pool_cm = _pool(workers, context, options, resolver, index)
        except (
            BrokenProcessPool,
            OSError,
        ):  # no processes here: the single-process path gives the same table
            return _score_inputs(
                inputs,
                labels,
                force_run,
                options=options,
                mapping=mapping,
                instances=instances,
                join=join,
                image_root=image_root,
                uploads=uploads,
                workers=1,
                chunk_rows=chunk_rows,
                progress=progress,
                option_kwargs={},
                access=access,
            )
        with pool_cm as pool:
            pending: deque = deque()
            current = None
            for job, start, batch, item in tasks():
                if current is not None and current is not item:
                    finished_bytes += current.size
                    state["files_done"] += 1
                current = item
                position = _position(item)
                pending.append((pool.submit(_score_in_worker, job, start, batch), job, item, position))
                while len(pending) >= workers * 4:
                    future, pjob, pitem, ppos = pending.popleft()
                    record(future.result(), pjob, pitem, ppos)
            while pending:
                future, pjob, pitem, ppos = pending.popleft()
                record(future.result(), pjob, pitem, ppos)
    if progress is not None:
        progress(Progress(state["rows"], state["errors"], bytes_total, bytes_total, "", len(jobs), len(jobs)))

    for _item, job in jobs:
        if rows_per_file[job.display] == 0:
            bad = errors_per_file.get(job.display, [])
            if bad:
                common, count = Counter(
                    (e.field, e.reason if len(e.reason) < 120 else e.reason[:117] + "...") for e in bad
                ).most_common(1)[0]
                field_note = f"field '{common[0]}': " if common[0] else ""
                reason = f"no usable row: all {len(bad)} rows failed; most often ({count}x) {field_note}{common[1]}"
            else:
                reason = "no usable row: the file holds no records"
            errors.append(RowError(job.display, None, None, reason, unit=job.unit))

    table = _assemble(collected)
    trace_rows = table["scorer"].to_numpy(dtype=object) == TRACE
    for column, value in zip(OPTION_COLUMNS, (options.answer_weight, options.annotation_weight), strict=True):
        table[column] = np.where(trace_rows, float(value), math.nan)
    table = _with_logged_mismatch(table, options.logged_atol)
    table.attrs["scoring_options"] = asdict(options)
    return ScoredRun(
        table=table,
        errors=errors_frame(errors),
        layouts=layouts,
        options=options,
        workers=workers,
        join=join if index is not None else None,
    )


def _ready() -> int:
    return os.getpid()


@contextlib.contextmanager
def _main_not_reimported():
    """Worker processes would re-import the caller's ``__main__`` (a script, an app):
    hide it while they start. Everything they run lives in this package."""
    main = sys.modules.get("__main__")
    saved = {}
    if main is not None:
        for attribute in ("__file__", "__spec__"):
            if getattr(main, attribute, None) is not None:
                saved[attribute] = getattr(main, attribute)
        if "__file__" in saved:
            del main.__file__
        if "__spec__" in saved:
            main.__spec__ = None
    try:
        yield
    finally:
        for attribute, value in saved.items():
            setattr(main, attribute, value)


class _pool:
    """A started ProcessPoolExecutor (every worker up), shut down without waiting on errors."""

    def __init__(self, workers, context, options, resolver, index):
        from concurrent.futures import ProcessPoolExecutor

        self.executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(options, resolver, index),
        )
        try:
            with _main_not_reimported():
                futures = [self.executor.submit(_ready) for _ in range(workers)]
            for future in futures:
                future.result()
        except BaseException:
            self.executor.shutdown(wait=False, cancel_futures=True)
            raise

    def __enter__(self):
        return self.executor

    def __exit__(self, exc_type, exc, tb):
        self.executor.shutdown(wait=exc_type is None, cancel_futures=exc_type is not None)
        return False


def _drain_errors(item: _Input, errors: list[RowError]) -> None:
    if item.source is None:
        return
    try:
        for _, record in item.source.records():
            if isinstance(record, RowError):
                errors.append(record)
    except SourceError as exc:
        errors.append(exc.error)


def _categorical(parts: list[_Codes]) -> pd.Categorical:
    """One categorical from the chunks' codes; categories sorted, whatever the chunking."""
    categories = sorted({c for part in parts for c in part.categories})
    index = {c: i for i, c in enumerate(categories)}
    pieces = []
    for part in parts:
        remap = np.array([index[c] for c in part.categories] + [-1], dtype=np.int32)
        pieces.append(remap[part.codes])  # code -1 picks the trailing -1
    codes = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int32)
    return pd.Categorical.from_codes(codes, categories=categories, validate=False)


def _assemble(collected: list[dict[str, Any]]) -> pd.DataFrame:
    names: dict[str, None] = {}
    for columns in collected:
        for name in columns:
            names.setdefault(name, None)
    lengths = [len(columns["source_line"][0]) for columns in collected]
    total = sum(lengths)
    data: dict[str, Any] = {}
    for name in names:
        if name in _ARROW_TEXT:
            chunks = [columns[name] for columns in collected]
            data[name] = pd.array(pa.chunked_array(chunks, type=pa.string()), dtype="str")
        elif name in CATEGORY_COLUMNS:
            data[name] = _categorical([columns[name] for columns in collected])
        elif name in INT_COLUMNS:
            values = np.concatenate([columns[name][0] for columns in collected])
            mask = np.concatenate([columns[name][1] for columns in collected])
            data[name] = pd.arrays.IntegerArray(values, mask)
        elif name == "solved":
            data[name] = np.concatenate([c[name] for c in collected])
        else:
            parts = [
                columns[name] if name in columns else np.full(length, math.nan)
                for columns, length in zip(collected, lengths, strict=True)
            ]
            data[name] = np.concatenate(parts)
    for name in COLUMNS:
        if name not in data and name not in OPTION_COLUMNS and name != MISMATCH_COLUMN:
            if name in _ARROW_TEXT:
                data[name] = pd.array(pa.nulls(total, type=pa.string()), dtype="str")
            elif name in CATEGORY_COLUMNS:
                data[name] = pd.Categorical.from_codes(np.full(total, -1, dtype=np.int32), categories=[])
            elif name in INT_COLUMNS:
                data[name] = pd.arrays.IntegerArray(
                    np.zeros(total, dtype=np.int64), np.ones(total, dtype=bool)
                )
            elif name == "solved":
                data[name] = np.zeros(total, dtype=bool)
            else:
                data[name] = np.full(total, math.nan)
    ordered = [c for c in COLUMNS if c in data]
    logged = sorted(c for c in data if c.startswith(LOGGED_PREFIX) and c != MISMATCH_COLUMN)
    rest = [c for c in data if c not in ordered and c not in logged]
    return pd.DataFrame({name: data[name] for name in (*ordered, *rest, *logged)}, copy=False)


# --------------------------------------------------------------------------- logged values


def logged_components(table: pd.DataFrame) -> list[str]:
    """Components with a ``logged_<component>`` column."""
    return [
        c[len(LOGGED_PREFIX) :] for c in table.columns if c.startswith(LOGGED_PREFIX) and c != MISMATCH_COLUMN
    ]


def _recomputed(table: pd.DataFrame, component: str) -> np.ndarray:
    if component == "score":
        return table["score"].to_numpy(dtype=np.float64)
    if component in table.columns:
        return table[component].to_numpy(dtype=np.float64)
    return np.full(len(table), math.nan)


def _mismatch_masks(table: pd.DataFrame, atol: float) -> dict[str, np.ndarray]:
    masks = {}
    for component in logged_components(table):
        logged = table[LOGGED_PREFIX + component].to_numpy(dtype=np.float64)
        recomputed = _recomputed(table, component)
        if component == "overall":  # simple rows log their score as overall/reward
            recomputed = np.where(np.isnan(recomputed), table["score"].to_numpy(dtype=np.float64), recomputed)
        compared = ~np.isnan(logged) & ~np.isnan(recomputed)
        masks[component] = compared & ~(np.abs(logged - recomputed) <= atol)
    return masks


def _with_logged_mismatch(table: pd.DataFrame, atol: float) -> pd.DataFrame:
    """Set ``logged_mismatch``: the components (comma-separated) whose logged value differs."""
    masks = _mismatch_masks(table, atol)
    n = len(table)
    if not masks:
        table[MISMATCH_COLUMN] = pd.Series(pd.Categorical([None] * n if n else []), index=table.index)
        return table
    names = list(masks)
    codes = np.zeros(n, dtype=np.int64)
    for bit, name in enumerate(names):
        codes |= masks[name].astype(np.int64) << bit
    present = np.flatnonzero(np.bincount(codes, minlength=1))
    labels = {
        int(code): ",".join(names[b] for b in range(len(names)) if code >> b & 1) for code in present if code
    }
    categories = sorted(set(labels.values()))
    lookup = np.full(
        len(names) and (1 << len(names)), -1, dtype=np.int8 if len(categories) < 127 else np.int64
    )
    for code, label in labels.items():
        lookup[code] = categories.index(label)
    column = pd.Categorical.from_codes(lookup[codes], categories=categories, validate=False)
    table[MISMATCH_COLUMN] = pd.Series(column, index=table.index)
    return table


def logged_vs_recomputed(table: pd.DataFrame, atol: float = 1e-6) -> pd.DataFrame:
    """Per component: rows with a logged value, how many differ from the recomputed
    value (beyond ``atol``), the largest difference and the first differing row."""
    rows = []
    masks = _mismatch_masks(table, atol)
    for component, mask in masks.items():
        logged = table[LOGGED_PREFIX + component].to_numpy(dtype=np.float64)
        recomputed = _recomputed(table, component)
        if component == "overall":
            recomputed = np.where(np.isnan(recomputed), table["score"].to_numpy(dtype=np.float64), recomputed)
        compared = ~np.isnan(logged) & ~np.isnan(recomputed)
        diff = np.abs(logged - recomputed)
        differing = np.flatnonzero(mask)
        first = None
        if len(differing):
            i = differing[0]
            first = f"{table['source_file'].iat[i]}:{table['source_line'].iat[i]}"
        rows.append(
            {
                "component": component,
                "rows_logged": int(compared.sum()),
                "rows_differ": int(mask.sum()),
                "share_differ": float(mask.sum() / compared.sum()) if compared.sum() else math.nan,
                "max_abs_diff": float(np.nanmax(np.where(compared, diff, np.nan)))
                if compared.any()
                else math.nan,
                "mean_logged": float(np.nanmean(np.where(compared, logged, np.nan)))
                if compared.any()
                else math.nan,
                "mean_recomputed": float(np.nanmean(np.where(compared, recomputed, np.nan)))
                if compared.any()
                else math.nan,
                "first_differing_row": first,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "component",
            "rows_logged",
            "rows_differ",
            "share_differ",
            "max_abs_diff",
            "mean_logged",
            "mean_recomputed",
            "first_differing_row",
        ],
    )


# --------------------------------------------------------------------------- one row again


def row_kwargs(row: Mapping[str, Any] | pd.Series, **overrides: Any) -> dict[str, Any]:
    """The full ``score_trace_response`` keyword arguments that produced a table row
    (``overrides`` replace any of them, e.g. ``format_weight=0.1``)."""
    if row.get("scorer") != TRACE:
        raise ValueError(f"row was scored by {row.get('scorer')!r}, not the trace verifier")
    kwargs = json.loads(row["scorer_kwargs"])
    kwargs["response"] = None if _is_missing(row.get("response")) else row["response"]
    # the weights as given when the table has them (normalising twice may move the last bit)
    raw_answer, raw_annotation = row.get("option_answer_weight"), row.get("option_annotation_weight")
    if raw_answer is not None and not _is_missing(raw_answer) and not _is_missing(raw_annotation):
        kwargs["answer_weight"], kwargs["annotation_weight"] = float(raw_answer), float(raw_annotation)
    else:
        kwargs["answer_weight"] = float(row["trace_answer_weight"])
        kwargs["annotation_weight"] = float(row["trace_annotation_weight"])
    kwargs["format_weight"] = float(row["format_weight"])
    kwargs["trace_annotation_reward_formula"] = (
        "additive" if row["trace_annotation_reward_formula_additive"] == 1.0 else "gated"
    )
    kwargs.update(overrides)
    return kwargs


def explain_row(table: pd.DataFrame, index: Any, **overrides: Any) -> TraceEvaluation:
    """Re-run the verifier on one row of a scored table (``index`` is a label of ``table``)."""
    return evaluate(**row_kwargs(table.loc[index], **overrides))


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


__all__ = [
    "COLUMNS",
    "DIAGNOSTIC_KEYS",
    "FLAT_KEYS",
    "SPLIT_COLUMNS",
    "BatchOptions",
    "Progress",
    "ScoredRun",
    "explain_row",
    "join_report",
    "logged_components",
    "logged_vs_recomputed",
    "row_kwargs",
    "score_files",
    "score_records",
]
