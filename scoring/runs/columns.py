"""The scored table's columns and the batch options: what one scored row holds, and how a run is scored."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..rewards import DEFAULT_READING, SCORER_INFO
from ..rollouts import (
    Layout,
)
from ..verifier import (
    FLAT_KEYS,
    SOLVED_THRESHOLD,
    resolve_options,
)

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
#: ...and a chunk is cut sooner once its records hold this many bytes, so long records (up to a
#: line's limit each) make short chunks; the records out at the workers hold at most two chunks'
#: worth per worker.
MAX_CHUNK_BYTES = 16 << 20
#: Distinct (mode, half-life) pairs an engine keeps resolved options for (rows rarely bring more than a few).
RESOLVED_OPTIONS_MAX = 1024
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
    """What a progress bar needs: rows scored so far, how far through the input, the rows
    expected in all (``rows_total``: estimated from the inputs' sizes and first records; 0 when
    unknown) and the seconds since scoring began -- so a single big file shows its rows done,
    of how many, and the rate."""

    rows: int
    errors: int
    bytes_done: int
    bytes_total: int
    file: str
    files_done: int
    files_total: int
    rows_total: int = 0
    seconds: float = 0.0

    @property
    def fraction(self) -> float:
        if self.bytes_total <= 0:
            return 0.0
        return min(1.0, self.bytes_done / self.bytes_total)

    @property
    def rate(self) -> float:
        """Rows scored per second so far (0 before the first second's work is measured)."""
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def rows_expected(self) -> int:
        """The rows to expect in all: once rows are done, as many per byte still to read as per
        byte read (an estimate from a file's first records can be off either way); before, the
        estimate; at the end, the rows done."""
        if self.bytes_total > 0 and self.bytes_done >= self.bytes_total:
            return self.rows
        if self.bytes_done > 0 and self.rows:
            return max(self.rows, round(self.rows * self.bytes_total / self.bytes_done))
        return max(self.rows, self.rows_total)

    def describe(self) -> str:
        """One line for a person: ``840,000 of ~2,000,000 rows, 41,200 rows/s, 12 errors``."""
        expected = self.rows_expected
        of = f" of ~{expected:,}" if expected > self.rows else ""
        rate = f", {self.rate:,.0f} rows/s" if self.seconds >= 0.5 and self.rows else ""
        errors = f", {self.errors:,} error{'' if self.errors == 1 else 's'}"
        return f"{self.rows:,}{of} rows{rate}{errors}"

    def after(self, before: Progress, bytes_total: int, files_total: int, seconds: float) -> Progress:
        """This progress of one part of a job as the job's: added to what the parts ``before``
        it counted (rows, errors, bytes, files), out of the job's ``bytes_total`` and
        ``files_total``; the rows expected as many per byte as the parts so far hold."""
        known = before.bytes_done + self.bytes_total
        rows_total = round((before.rows + self.rows_total) * bytes_total / known) if known else 0
        return Progress(
            before.rows + self.rows, before.errors + self.errors, before.bytes_done + self.bytes_done,
            bytes_total, self.file, before.files_done + self.files_done, files_total, rows_total, seconds,
        )  # fmt: skip


# --------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class FileJob:
    """What a worker needs to read one file's records (small; sent with every chunk)."""

    key: int
    display: str
    unit: str
    layout: Layout
    base_dir: str
    run: str | None
    force_run: bool


#: How a chunk stores its columns while rows arrive (see :class:`_Chunk`): each kind of column
#: is one buffer, and a row writes its values of that kind in this order.
#: Low-cardinality text, coded per chunk (``Codes``; pandas categoricals in the table).
CODED_COLUMNS = (
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
SCORER_COLUMN = CODED_COLUMNS.index("scorer")
FILTER_COLUMN, METRICS_COLUMN = CODED_COLUMNS.index("filter"), CODED_COLUMNS.index("metrics")
TRACE_CODE, SIMPLE_CODE = 0, 1
#: Categorical columns with one value per chunk (a chunk is one file's). The scorer is not one of
#: them: each row is scored by what it holds (trace ground truth, or a plain gold answer).
CHUNK_CONSTANT_COLUMNS = ("source_file", "layout")
#: Texts that travel and wait as Arrow buffers, not Python strings (half the memory).
TEXT_FIELDS = (
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
INTEGER_FIELDS = INT_COLUMNS
#: Floats besides the flat result (``EXTRA_FLOAT_COLUMNS``).
NUMBER_FIELDS = EXTRA_FLOAT_COLUMNS
#: Columns that stay Arrow string arrays from the chunk to the table (joined without a copy).
ARROW_TEXT = frozenset((*TEXT_FIELDS, "scorer_kwargs"))
#: Where each of :data:`DIAGNOSTIC_KEYS` sits in a chunk's diagnostics buffer.
DIAGNOSTIC_POSITIONS = {key: position for position, key in enumerate(DIAGNOSTIC_KEYS)}
