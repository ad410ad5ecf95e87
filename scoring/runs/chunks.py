"""The chunk engine: a chunk of records -> rows read, scored and tabulated into column buffers (compiled with Cython; ``chunks.pxd``)."""

from __future__ import annotations

import base64
import contextlib
import gc
import json
import math
import operator
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

from ..rollouts import (
    ERROR,
    TRACE_ROW,
    WARNING,
    ImageResolver,
    InstanceIndex,
    LineRange,
    RowError,
    RowProblem,
    RowReader,
    decode_line,
    iter_decoded,
    utf8_encodable,
    utf8_safe,
)
from ..rollouts.rows import Row  # as chunks.pxd cimports it: the compiled Row type
from ..verifier import (
    FLAT_KEYS,
    MODE_ANSWER,
    MODE_ANSWER_AND_ANNOTATION,
    RESPONSE_KEYS,
    Extraction,
    ScoringOptions,
    TraceEvaluation,
    evaluate_resolved,
    resolve_options,
    schema_reason,
    type_name,
)

try:
    import msgspec as _msgspec
except ImportError:  # pragma: no cover
    _msgspec = None
from .columns import (
    CHUNK_CONSTANT_COLUMNS,
    CODED_COLUMNS,
    DIAGNOSTIC_KEYS,
    DIAGNOSTIC_POSITIONS,
    FILTER_COLUMN,
    INTEGER_FIELDS,
    LOGGED_PREFIX,
    METRICS_COLUMN,
    NUMBER_FIELDS,
    RECOVERED_TEXT_LIMIT,
    RESOLVED_OPTIONS_MAX,
    SCORER_COLUMN,
    SIMPLE_CODE,
    TEXT_FIELDS,
    TRACE,
    TRACE_CODE,
    BatchOptions,
    FileJob,
)
from .memory import arrow_buffers_reused, keep_freed_memory
from .transfer import ShippedResult
from .truths import TruthMemo

#: A group of records is read, then scored, then tabulated (see ``Engine._score_chunk``), so its
#: rows and evaluations wait together: a group holds at most this many records, and closes early
#: once its responses reach this many characters (an evaluation's size follows its response's).
SCORED_GROUP_ROWS = 64
SCORED_GROUP_CHARS = 1_000_000


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


def _append_json_line(lines: bytearray, value: Any) -> None:
    """``value`` as :func:`dumps_or_text` writes it, and a newline, onto ``lines``. A chunk encodes
    each row's scorer arguments as it tabulates the row, while they are fresh in the cache, and
    does not hold them until it ends: about 2 us per row less than one encoder call per chunk."""
    if _json_encoder is None:
        text = dumps_or_text(value)
    else:
        end = len(lines)
        try:
            _json_encoder.encode_into(value, lines, -1)
        except _UNENCODABLE:  # msgspec refuses it (a lone surrogate): json's text, as dumps_or_text gives
            del lines[end:]
            text = _json_dumps_or_text(value)
        else:
            lines.append(_NEWLINE)
            return
    lines += text.encode("utf-8")
    lines.append(_NEWLINE)


def _json_lines_column(lines: bytearray, n: int) -> pa.Array:
    """``n`` JSON texts, a line each (JSON never holds a raw newline), as an Arrow string array;
    split by value past what one array's offsets can address."""
    if len(lines) - n > _INT32_MAX:  # (a newline is the only separator: JSON text may hold U+2028)
        return pa.array(lines.decode("utf-8").split("\n")[:-1], type=pa.string())
    return _lines_to_strings(lines, n)


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


def dumps_or_text(value: Any) -> str:
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


class Codes:
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
    an extension type whose buffers are typed (``chunks.pxd``), and a store is a C assignment.
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
        #: each row's scorer arguments as compact JSON, a line each (:func:`_append_json_line`)
        self.kwargs_json = bytearray()
        self.texts: list[list[str | None]] = [[] for _ in TEXT_FIELDS]
        self.category_codes: list[dict[str, int]] = [{} for _ in CODED_COLUMNS]
        self.categories: list[list[str]] = [[] for _ in CODED_COLUMNS]
        #: TraceEvaluation.flat_parts' template of each row (None: not traced), and the
        #: (row, key, value) of each diagnostic outside DIAGNOSTIC_KEYS (a newer scorer's)
        self.templates: list[dict[str, float] | None] = []
        self.extra_diagnostics: list[tuple[int, str, float]] = []
        self._reserve(max(capacity, 1))
        for value in (TRACE, scorer):  # TRACE_CODE, SIMPLE_CODE (the same when no simple scorer is chosen)
            self._code(SCORER_COLUMN, value)

    def _reserve(self, capacity: int) -> None:
        """Buffers for ``capacity`` rows, the rows so far kept (a record may give several rows)."""
        n = self.n
        codes = np.full((len(CODED_COLUMNS), capacity), -1, dtype=np.int32)
        integers = np.zeros((len(INTEGER_FIELDS), capacity), dtype=np.int64)
        missing = np.zeros((len(INTEGER_FIELDS), capacity), dtype=np.uint8)
        numbers = np.full((len(NUMBER_FIELDS), capacity), math.nan)
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
        """Tabulate one scored row; ``result`` is what ``Engine._score`` gave for it."""
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
            self.codes[SCORER_COLUMN, i] = SIMPLE_CODE
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
            self.codes[SCORER_COLUMN, i] = TRACE_CODE
            coded = (
                row.run, row.task_id, row.joined, mode, None if answer_type is None else str(type_name(answer_type)),
                annotation.annotation_type, format_reason, reason_answer, reason_both, recovered_source,
            )  # fmt: skip
            texts = (
                row_id, row.instance_id, row.prompt, row.response, image_ref, image_warning,
                format_detail or None, recovered, annotation.reason or None, None,
            )  # fmt: skip
            numbers = (score, width, height, ok_answer, ok_both)
        # each in the order of CODED_COLUMNS, TEXT_FIELDS and NUMBER_FIELDS
        self._code_all(i, coded)
        if row.filter is not None:
            self.codes[FILTER_COLUMN, i] = self._code(FILTER_COLUMN, row.filter)
        if row.metrics is not None:
            self.codes[METRICS_COLUMN, i] = self._code(METRICS_COLUMN, row.metrics)
        self._append_texts(texts)
        self._store_numbers(i, numbers)
        _append_json_line(self.kwargs_json, kwargs)
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
        positions = DIAGNOSTIC_POSITIONS
        for j in range(len(keys)):
            position = positions.get(keys[j])
            if position is None:
                self.extra_diagnostics.append((i, keys[j], diagnostics[j]))
            else:
                self.diagnostic_values[i, position] = diagnostics[j]

    def _code_all(self, i: int, values: tuple) -> None:
        """Row ``i``'s values of the first :data:`CODED_COLUMNS`, as codes (None: -1)."""
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
        for name, value in zip(CHUNK_CONSTANT_COLUMNS, (self.display, self.layout), strict=True):
            columns[name] = codes = Codes(np.zeros(n, dtype=np.int32), [value] if n else [])
            self._warn_escaped(name, _escape_categories(codes))
        for column, name in enumerate(CODED_COLUMNS):
            columns[name] = codes = Codes(self.code_buffer[column, :n].copy(), self.categories[column])
            self._warn_escaped(name, _escape_categories(codes))
        _drop_unused(columns["scorer"])  # both scorers are registered when the chunk starts
        for name, values in zip(TEXT_FIELDS, self.texts, strict=True):
            if not n or (values[0] is None and values.count(None) == n):  # a text is seldom None
                columns[name] = pa.nulls(n, type=pa.string())
            else:
                columns[name], escaped = _text_array(values)
                self._warn_escaped(name, escaped)
        columns["scorer_kwargs"] = _json_lines_column(self.kwargs_json, n)
        for column, name in enumerate(INTEGER_FIELDS):
            data = self.integer_buffer[column, :n].copy()
            columns[name] = (data, self.missing_buffer[column, :n].astype(bool))
        for column, name in enumerate(NUMBER_FIELDS):
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


def _drop_unused(codes: Codes) -> None:
    """Forget the categories no row of the chunk has (codes renumbered in the same order)."""
    used = np.unique(codes.codes[codes.codes >= 0])
    if len(used) == len(codes.categories):
        return
    remap = np.full(len(codes.categories) + 1, -1, dtype=np.int32)  # a code of -1 picks the last: -1
    remap[used] = np.arange(len(used), dtype=np.int32)
    codes.codes = remap[codes.codes]
    codes.categories = [codes.categories[code] for code in used]


def _escape_categories(codes: Codes) -> list[int]:
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


def score_simple_row(simple_reward: Callable[[Any, Any], float], row: Row, line: int, gold_key: str) -> float:
    """A simple-scorer row's score, as the batch scores it: the scorer's own errors become the
    row's (a missing gold answer names ``meta.<gold_key>``). The training adapters call it too."""
    task = SimpleNamespace(id=row.row_id if row.row_id is not None else line, meta=row.meta)
    try:
        return float(simple_reward(task, row.response))
    except KeyError as exc:
        raise RowProblem(f"meta.{gold_key}", f"missing ({exc})") from None
    except ValueError as exc:
        raise RowProblem("gold", str(exc)) from None


class Engine:
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
        #: the ground truth of the row before, its contract checked and geometry parsed: the samples of a prompt share it
        self.truths = TruthMemo()

    def _reader(self, job: FileJob) -> RowReader:
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

    def score_chunk(
        self, job: FileJob, start: int, items: Sequence[tuple[int, Any]] | LineRange
    ) -> dict[str, Any]:
        """The chunk's result: ``items`` are its ``(line, payload)`` pairs, or a
        :class:`~scoring.rollouts.LineRange` of a JSONL file's lines to read first."""
        with _collector_paused():
            return self._score_chunk(job, start, items)

    def _score_chunk(self, job: FileJob, start: int, items: Sequence[tuple[int, Any]]) -> dict[str, Any]:
        """A group of records at a time: decode and read the group into rows, score them, then
        tabulate them. Each kind of work runs back to back over a group instead of in turn for
        each row, so its code and branch history stay warm; and only a group's records, rows and
        evaluations are alive at once, so they are still in the cache when the next pass reaches
        them and when they are freed (reading the whole chunk first held 4,000 decoded records,
        several MB, and cost about 3 us more per row; docs/internals.md, "How a chunk ...").
        A group is bounded in rows and in response characters (:data:`SCORED_GROUP_ROWS`,
        :data:`SCORED_GROUP_CHARS`)."""
        chunk = _Chunk(
            job.display, job.unit, job.layout.name, self.options.scorer, self.threshold, len(items)
        )
        for group in self._read_chunk(job, start, items, chunk):
            for line, rows, results in self._score_group(job, group, chunk):
                for row, result in zip(rows, results, strict=True):
                    chunk.add(row, line, result)
        return chunk.finish()

    def _score_group(
        self, job: FileJob, read_rows: Sequence[tuple[int, list[Row]]], chunk: _Chunk
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
        self, job: FileJob, start: int, items: Sequence[tuple[int, Any]], chunk: _Chunk
    ) -> Iterator[list[tuple[int, list[Row]]]]:
        """Each good record's ``(line, rows)``, in groups to score together (bounded as
        :data:`SCORED_GROUP_ROWS` and :data:`SCORED_GROUP_CHARS` say), each group read when the
        one before has been scored and tabulated; what cannot be read goes to the chunk's errors."""
        if type(items) is LineRange:  # lines named by where they are: read them here
            items = items.items()
        read = self._reader(job).read
        force_run = job.force_run
        payloads = [payload for _, payload in items]
        if payloads and all(type(payload) is bytes for payload in payloads):
            payloads = iter_decoded(payloads)  # the JSONL case: each line decoded as its turn comes
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
            if len(group) >= SCORED_GROUP_ROWS or group_chars >= SCORED_GROUP_CHARS:
                yield group
                group, group_chars = [], 0
        if group:
            yield group

    # -- one row ------------------------------------------------------------
    def _score(self, row: Row, job: FileJob, line: int) -> tuple:
        """``(score, image info, TraceEvaluation or None, row-level scorer kwargs or None)``."""
        image = None
        size = row.image_size
        traced = row.kind == TRACE_ROW
        if row.image is not None:
            need = size is None and self.read_image_sizes and traced
            image = self.resolver.resolve(row.image, base_dirs=row.image_bases, need_size=need)
        if not traced:
            return score_simple_row(self.simple_reward, row, line, self.options.gold_key), image, None, None
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
            row.response, answer_gt, annotation_gt, reward_contract, options, image_size,
            truth=self.truths.get(annotation_gt, reward_contract),
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
            options = resolve_options(
                trace_reward_mode=mode, point_half_life_px=half_life, **self.run_options
            )
            if key is not None:
                if len(self.resolved) >= RESOLVED_OPTIONS_MAX:
                    self.resolved.clear()
                self.resolved[key] = options
        return options


def _row_failure(job: FileJob, line: int, exc: Exception, stage: str) -> RowError:
    """The error for a record that could not be read or scored: a RowProblem names its field;
    anything else is a bug in a reader or the scorer, reported on its line."""
    if isinstance(exc, RowProblem):
        return RowError(job.display, line, exc.field, exc.reason, exc.severity, job.unit)
    return RowError(
        job.display, line, None, f"could not be {stage} ({type(exc).__name__}: {exc})", ERROR, job.unit
    )


def _line_order(error: RowError) -> int:
    return -1 if error.line is None else error.line


# worker-process side
_WORKER_ENGINE: Engine | None = None
_WORKER_RESULTS: str | None = None


def init_worker(
    options: BatchOptions, resolver: ImageResolver, instances: InstanceIndex | None, results: str | None = None
) -> None:
    """A worker's set-up: its engine, its heaps kept (C's and Arrow's), and ``results``, the folder its results are
    shipped through (:func:`scoring.runs.transfer.results_folder`; None: in the message)."""
    global _WORKER_ENGINE, _WORKER_RESULTS
    keep_freed_memory()
    arrow_buffers_reused()
    _WORKER_ENGINE = Engine(options, resolver, instances)
    _WORKER_RESULTS = results


def score_in_worker(job: FileJob, start: int, items: list) -> ShippedResult:
    """The chunk's result (:meth:`Engine.score_chunk`), wrapped to be shipped back: the scoring
    process unpickles the result itself."""
    assert _WORKER_ENGINE is not None
    return ShippedResult(_WORKER_ENGINE.score_chunk(job, start, items), _WORKER_RESULTS)
