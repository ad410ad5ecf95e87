"""Containers: JSONL (optionally gzipped), JSON arrays, Parquet and CSV.

A :class:`Source` streams the records of one file as ``(line, payload)`` pairs
without loading the file: JSONL is read line by line (the payload is the raw
line, decoded later -- in a worker process when scoring in parallel), Parquet
in record batches, CSV row by row. Only a JSON *array* is read whole (the
format has no record boundaries); use JSONL for large files.

``line`` is 1-based: the physical line for JSONL and CSV, the row number for
Parquet and the item number for a JSON array (:attr:`Source.unit` says which).
A record that cannot be decoded becomes a :class:`~scoring.rollouts.errors.RowError`
in the stream; a file that cannot be opened at all raises :class:`SourceError`.

Every read is bounded by :class:`~scoring.rollouts.access.Limits`: a line longer
than ``line_bytes`` is skipped with an error naming it (never held whole), a
gzipped file stops at ``decompressed_bytes``, a JSON document is read once into
one buffer of at most ``json_bytes`` and its items decoded one at a time. A file
outside the data roots is refused before anything about it is looked at.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from .access import AccessDenied, DataAccess, default_access
from .errors import WARNING, RowError, RowProblem
from .json_window import RAW_DECODE, ItemTooLong, ReadFailed, TextWindow, skip_blank
from .json_window import short_text as _short
from .line_ranges import UTF8_BOM as _UTF8_BOM
from .line_ranges import LineRange, cut_line_ranges
from .oversize import approximate_bytes, arrow_row_bytes, field_at_limit

try:  # msgspec reads 1-2 KB lines several times faster than json, integers beyond 64 bits exactly
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - exercised only without msgspec
    _msgspec = None
    _fast_decode = None
    _decode_items = _decode_keyed = None
    _FAST_DECODE_ERRORS: tuple[type[BaseException], ...] = ()
else:
    _fast_decode = _msgspec.json.Decoder().decode
    #: A JSON array (or an object's members) as undecoded items that point into the one buffer.
    _decode_items = _msgspec.json.Decoder(list[_msgspec.Raw]).decode
    _decode_keyed = _msgspec.json.Decoder(dict[str, _msgspec.Raw]).decode
    #: What msgspec refuses and ``json`` may still read: NaN/Infinity literals, numbers beyond
    #: the float range, lone surrogates, nesting past msgspec's depth limit.
    _FAST_DECODE_ERRORS = (_msgspec.DecodeError, RecursionError)

CONTAINERS = ("jsonl", "json", "parquet", "csv")
_GZIP_MAGIC = b"\x1f\x8b"
#: Lines per batch when JSONL is streamed line by line (:meth:`Source.items`).
_JSONL_BATCH_LINES = 256
_PARQUET_MAGIC = b"PAR1"
#: Rows of a Parquet file read at a time: at most this many, and about this many bytes (by its
#: row groups' sizes), each measured in Arrow before any becomes a Python record.
_PARQUET_BATCH_ROWS = 4096
PARQUET_BATCH_BYTES = 16 << 20
#: Keys under which a top-level JSON object may hold the array of rows.
_ARRAY_KEYS = ("rows", "data", "samples", "records", "rollouts", "instances", "items")

Payload = Any  # bytes (undecoded JSONL line), dict (decoded record) or RowError


class SourceError(Exception):
    """A whole file cannot be read; ``error`` is the RowError to report."""

    def __init__(self, error: RowError):
        super().__init__(error.message())
        self.error = error


# --------------------------------------------------------------------------- JSON


def loads(data: bytes | str) -> Any:
    """Parse JSON text: msgspec when installed, ``json`` for what msgspec refuses."""
    if _fast_decode is None:  # pragma: no cover - exercised only without msgspec
        return json.loads(data)
    try:
        return _fast_decode(data)
    except _FAST_DECODE_ERRORS:
        return json.loads(data)  # reads it (NaN, 1e400, ...) or raises the error callers report


def decode_line(raw: bytes) -> dict:
    """Decode one JSONL line to a mapping or raise :class:`RowProblem`."""
    try:
        value = loads(raw)
    except UnicodeDecodeError as exc:
        raise RowProblem(None, f"line is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        text = raw.strip()
        if text.startswith(b"{") and not text.endswith(b"}"):
            raise RowProblem(
                None, f"line is not valid JSON: it is cut off part-way (no closing '}}'; {_short(exc)})"
            ) from None
        raise RowProblem(None, f"line is not valid JSON ({_short(exc)})") from None
    if not isinstance(value, dict):
        raise RowProblem(None, f"line holds a JSON {_json_type(value)}, expected an object")
    return value


def iter_decoded(lines: Iterable[bytes]) -> Iterator[dict | RowProblem]:
    """Decode JSONL lines one at a time: each item is the record, or the :class:`RowProblem`
    saying why the line is not one -- what :func:`decode_line` gives, with the common line (an
    object msgspec reads) taken without the extra calls. A caller that uses each record before
    asking for the next keeps only one decoded record alive."""
    if _fast_decode is None:  # pragma: no cover - exercised only without msgspec
        yield from map(_decoded_or_problem, lines)
        return
    for raw in lines:
        try:
            value = _fast_decode(raw)
        except _FAST_DECODE_ERRORS:
            value = None
        yield value if type(value) is dict else _decoded_or_problem(raw)


def _decoded_or_problem(raw: bytes) -> dict | RowProblem:
    try:
        return decode_line(raw)
    except RowProblem as problem:
        return problem


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


# --------------------------------------------------------------------------- detection


def _peek(path: Path, n: int = 4096) -> bytes:
    with open(path, "rb") as handle:
        head = handle.read(n)
    if head[:2] == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as handle:
                return handle.read(n)
        except (OSError, EOFError):
            return b""
    return head


def detect_container(path: str | os.PathLike) -> str:
    """``jsonl``, ``json``, ``parquet`` or ``csv``, from the name, else from the content."""
    path = Path(path)
    name = path.name.lower()
    for ext in (".gz", ".gzip"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    if name.endswith((".jsonl", ".ndjson", ".jsonlines")):
        return "jsonl"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".tsv")):
        return "csv"
    head = _peek(path)
    if head[:4] == _PARQUET_MAGIC:
        return "parquet"
    stripped = head.lstrip(_UTF8_BOM + b" \t\r\n")
    if stripped[:1] == b"[":
        return "json"
    if stripped[:1] == b"{":
        if name.endswith(".json"):
            # One object spanning the file, or one object per line?
            first, _, rest = stripped.partition(b"\n")
            try:
                loads(first)
            except ValueError:
                return "json"
            return "jsonl" if rest.strip()[:1] == b"{" else "json"
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    return "csv"


# --------------------------------------------------------------------------- sources


class Source:
    """One input file, streamed.

    ``display`` is the name used in messages (the path as given by default). ``access``
    says where files may be read and the limits on reading them (default: the environment's,
    :func:`~scoring.rollouts.access.default_access`). ``notes`` are file-level warnings
    (a JSON array in a ``.jsonl`` file) for the caller to report.
    """

    #: Bytes of a JSONL file taken by one read: large enough that reading costs next to nothing
    #: per line, small enough to keep memory bounded. A longer line is gathered across reads.
    jsonl_read_bytes = 1 << 20

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        container: str | None = None,
        display: str | None = None,
        access: DataAccess | None = None,
    ):
        self.path = Path(path)
        self.display = display or str(path)
        self.access = access or default_access()
        self.notes: list[RowError] = []
        try:
            self.access.check(self.path)
        except AccessDenied as exc:
            raise SourceError(RowError(self.display, None, None, self.access.refusal())) from exc
        if not self.path.exists():
            raise SourceError(RowError(self.display, None, None, "file not found"))
        if self.path.is_dir():
            raise SourceError(RowError(self.display, None, None, "is a directory, not a rollout file"))
        try:
            self.container = container or detect_container(self.path)
            head = b"" if self.container == "parquet" else _peek(self.path)
        except OSError as exc:
            raise SourceError(
                RowError(self.display, None, None, f"cannot read file: {exc.strerror or exc}")
            ) from None
        if self.container not in CONTAINERS:
            raise SourceError(
                RowError(
                    self.display,
                    None,
                    None,
                    f"unknown container '{self.container}' (expected {', '.join(CONTAINERS)})",
                )
            )
        try:
            self.size = self.path.stat().st_size
        except OSError:  # pragma: no cover
            self.size = 0
        content = (head[len(_UTF8_BOM) :] if head.startswith(_UTF8_BOM) else head).lstrip()
        if self.container != "parquet" and len(head) < 4096 and not content:
            raise SourceError(RowError(self.display, None, None, "empty file"))
        if self.container == "jsonl" and container is None and content[:1] == b"[":
            self.container = "json"
            self.notes.append(RowError(self.display, None, None, _ARRAY_IN_JSONL, WARNING, unit="item"))
        self.unit = {"jsonl": "line", "csv": "line", "parquet": "row", "json": "item"}[self.container]
        self._raw_handle = None
        self._parquet_done = 0
        self._parquet_rows = 0
        #: where the last :class:`LineRange` cut ends (None: the file is read, not cut)
        self._cut_to: int | None = None

    # -- progress -----------------------------------------------------------
    def position(self) -> int:
        """Bytes of the file consumed so far (approximate for Parquet)."""
        if self._cut_to is not None:
            return self._cut_to
        if self.container == "parquet":
            if not self._parquet_rows:
                return 0
            return int(self.size * self._parquet_done / self._parquet_rows)
        handle = self._raw_handle
        if handle is None or handle.closed:
            return self.size if self._raw_handle is not None else 0
        try:
            return handle.tell()
        except (OSError, ValueError):  # pragma: no cover
            return 0

    def error(self, line: int | None, field: str | None, reason: str, severity: str = "error") -> RowError:
        return RowError(self.display, line, field, reason, severity, self.unit)

    def _fail(self, reason: str) -> SourceError:
        return SourceError(RowError(self.display, None, None, reason, unit=self.unit))

    # -- reading ------------------------------------------------------------
    def _open_binary(self):
        try:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed by the readers
        except OSError as exc:
            raise self._fail(f"cannot open file: {exc.strerror or exc}") from None
        self._raw_handle = raw
        if raw.read(2) == _GZIP_MAGIC:
            raw.seek(0)
            return gzip.GzipFile(fileobj=raw, mode="rb")
        raw.seek(0)
        return raw

    def items(self) -> Iterator[tuple[int, Payload]]:
        """Yield ``(line, payload)``; payload is raw bytes for JSONL, else a dict or RowError."""
        if self.container == "jsonl":
            return (item for batch in self._jsonl_batches(_JSONL_BATCH_LINES) for item in batch)
        reader = {"json": self._json, "parquet": self._parquet, "csv": self._csv}
        return reader[self.container]()

    def item_batches(self, size: int, max_bytes: int | None = None) -> Iterator[list[tuple[int, Payload]]]:
        """:meth:`items` in consecutive lists of at most ``size``, cut sooner once their records
        hold ``max_bytes`` (so a chunk of long records stays bounded). A JSONL file is split into
        lines a block at a time, with no call per line (the batch scorer's input path)."""
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if self.container == "jsonl":
            return self._line_batches(size, keep_blank=False, max_bytes=max_bytes)
        if self.container == "parquet":
            return _sized_batches(self._parquet_rows_sized(), size, max_bytes)
        sized = ((line, payload, approximate_bytes(payload)) for line, payload in self.items())
        return _sized_batches(sized, size, max_bytes)

    def line_ranges(self, size: int, max_bytes: int) -> Iterator[LineRange] | None:
        """The lines :meth:`item_batches` would give, as :class:`LineRange` s a worker reads
        itself (same bounds); None unless the file is plain (not gzipped) JSONL."""
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        try:
            if self.container != "jsonl":
                return None
            with open(self.path, "rb") as handle:
                plain = handle.read(len(_GZIP_MAGIC)) != _GZIP_MAGIC
        except OSError as exc:
            raise self._fail(f"cannot open file: {exc.strerror or exc}") from None
        return self._cut(size, max_bytes) if plain else None

    def _cut(self, size: int, max_bytes: int) -> Iterator[LineRange]:
        limits = self.access.limits
        ranges = cut_line_ranges(
            self.path, display=self.display, unit=self.unit, size=size, max_bytes=max_bytes,
            line_bytes=limits.line_bytes, too_long=_line_too_long(limits),
        )  # fmt: skip
        self._cut_to = 0
        try:
            for cut in ranges:
                self._cut_to = cut.offset + cut.length
                yield cut
        except OSError as exc:
            raise self._fail(f"cannot open file: {exc.strerror or exc}") from None

    def records(self) -> Iterator[tuple[int, dict | RowError]]:
        """Yield ``(line, record)`` with every payload decoded (RowError when it cannot be)."""
        for line, payload in self.items():
            if isinstance(payload, bytes):
                try:
                    payload = decode_line(payload)
                except RowProblem as problem:
                    payload = self.error(line, problem.field, problem.reason)
            yield line, payload

    def sample(self, n: int = 32) -> list[dict]:
        """The first ``n`` decodable records (for layout detection)."""
        out: list[dict] = []
        for _, record in self.records():
            if isinstance(record, dict):
                out.append(record)
                if len(out) >= n:
                    break
        self._raw_handle = None
        self._parquet_done = 0
        return out

    def _jsonl_batches(self, size: int) -> Iterator[list[tuple[int, Payload]]]:
        """The file's non-blank lines as ``(line, raw bytes)``, in lists of at most ``size``."""
        return self._line_batches(size, keep_blank=False)

    def _line_batches(
        self, size: int, *, keep_blank: bool, max_bytes: int | None = None
    ) -> Iterator[list[tuple[int, Payload]]]:
        """The file's lines as ``(line, raw bytes)`` (blank ones only when ``keep_blank``), in
        lists of at most ``size`` (cut sooner once their lines hold ``max_bytes``).

        Reads :attr:`jsonl_read_bytes` at a time and splits each block into lines; a line
        that runs past a block is gathered from the pieces of the reads it spans (joined once,
        so a long line costs linear time). A line over the ``line_bytes`` limit is never held
        whole: its pieces are dropped as soon as they pass the limit and the line becomes a
        RowError naming it -- and, in JSONL, the field whose value it passes the limit in
        (:func:`~scoring.rollouts.oversize.field_at_limit`). ``read1`` returns what one read of
        the file -- or one step of the gzip decoder -- gives, so the lines before a corrupt or
        truncated part, or before the point where a gzipped file passes ``decompressed_bytes``,
        are all delivered before the error that names where it starts.
        """
        limits = self.access.limits
        max_line = limits.line_bytes
        max_bytes = max_bytes or sys.maxsize
        name_fields = self.container == "jsonl"

        def too_long(pieces: list[bytes]) -> _TooLong:
            """A line over the limit, its bytes dropped; the field it passes the limit in."""
            return _TooLong(field_at_limit(b"".join(pieces), max_line + 1) if name_fields else None)

        handle = self._open_binary()
        raw_handle = self._raw_handle
        compressed = handle is not raw_handle
        read = handle.read1
        block_size = self.jsonl_read_bytes
        line_no = 0
        expanded = 0
        pieces: list[bytes] = []  # the start of a line whose end is in a later block
        pending = 0  # bytes in ``pieces``
        skipping: _TooLong | None = None  # the current line passed the limit: its bytes are dropped
        batch: list[tuple[int, Payload]] = []
        batch_bytes = 0
        reason = _line_too_long(limits)
        try:
            at_end = False
            while not at_end:
                try:
                    block = read(block_size)
                except (OSError, EOFError, gzip.BadGzipFile) as exc:
                    reason = f"file is truncated or corrupt after this point ({_short(exc)})"
                    batch.append((line_no + 1, self.error(line_no + 1, None, reason)))
                    yield batch
                    return
                if block:
                    expanded += len(block)
                    if compressed and expanded > limits.decompressed_bytes:
                        reason = limits.over("decompressed_bytes", "the file's decompressed size")
                        batch.append(
                            (line_no + 1, self.error(line_no + 1, None, reason + "; reading stopped here"))
                        )
                        yield batch
                        return
                    lines: list[Any] = io.BytesIO(block).readlines()  # memchr for each newline
                    if pieces or skipping is not None:
                        first = lines[0]
                        if not first.endswith(b"\n"):  # no line ends in this block
                            if skipping is None:
                                pieces.append(first)
                                pending += len(first)
                                if pending > max_line:
                                    skipping = too_long(pieces)
                                    pieces, pending = [], 0
                            continue
                        if skipping is not None:
                            lines[0] = skipping
                        else:
                            pieces.append(first)
                            lines[0] = (
                                b"".join(pieces) if pending + len(first) <= max_line else too_long(pieces)
                            )
                        pieces, pending, skipping = [], 0, None
                    tail = lines[-1]
                    if type(tail) is bytes and not tail.endswith(b"\n"):  # ends in a later block
                        lines.pop()
                        if len(tail) > max_line:
                            skipping = too_long([tail])
                        else:
                            pieces, pending = [tail], len(tail)
                else:  # the end: what is left is the last line, with no newline after it
                    at_end = True
                    lines = [skipping] if skipping is not None else ([b"".join(pieces)] if pieces else [])
                if not lines:
                    continue
                first = lines[0]
                if line_no == 0 and type(first) is bytes and first.startswith(_UTF8_BOM) and len(first) <= max_line:
                    lines[0] = first[len(_UTF8_BOM) :]  # the limit counts it, whichever read the line ends in
                for raw in lines:
                    line_no += 1
                    if type(raw) is not bytes or len(raw) > max_line:
                        field = raw.field if type(raw) is _TooLong else too_long([raw]).field
                        batch.append((line_no, self.error(line_no, field, reason)))
                    elif not keep_blank and (not raw or raw.isspace()):
                        continue
                    else:
                        batch.append((line_no, raw))
                        batch_bytes += len(raw)
                    if len(batch) >= size or batch_bytes >= max_bytes:
                        yield batch
                        batch, batch_bytes = [], 0
            if batch:
                yield batch
        finally:
            handle.close()
            raw_handle.close()

    # -- JSON documents -----------------------------------------------------
    def _json(self) -> Iterator[tuple[int, Payload]]:
        """The rows of a JSON document, one at a time.

        A top-level array is streamed: the text is decoded a block at a time and each item
        parsed from a window that holds only the current item (an item longer than
        ``line_bytes`` is an error and stepped over), so memory follows the largest item,
        not the file. The rows of a top-level object (``{"rows": [...]}``) are found in its text
        read whole, at most ``json_bytes``.
        """
        window = TextWindow(self._open_binary(), self._raw_handle, self.access.limits)
        try:
            position = window.skip_blank(0)
            if window.text[position : position + 1] == "[":
                yield from self._json_stream(window, position + 1)
                return
            text = window.read_all()
            if text is None:
                raise self._fail(
                    self.access.limits.over("json_bytes", "the JSON document")
                    + "; write the rows as JSONL (one object per line) instead"
                )
            yield from self._json_stream(TextWindow.over(text), self._array_start(text) + 1)
        except ReadFailed as exc:
            raise self._fail(str(exc)) from None
        finally:
            window.close()

    def _json_stream(self, window: TextWindow, position: int) -> Iterator[tuple[int, Payload]]:
        """The array's items from ``position`` (just after its ``[``); whatever stops the reading
        part-way is an error at the item where it happens, after every item before it. An item
        over ``line_bytes`` is an error naming the field it passes the limit in, and is stepped
        over: the items after it are read."""
        limits = self.access.limits
        index = 0
        while True:
            index += 1
            try:
                position = window.skip_blank(position)
                if index == 1 and window.text[position : position + 1] == "]":
                    return
                item, position = window.decode_item(position)
                position = window.skip_blank(position)
            except ReadFailed as exc:
                yield index, self.error(index, None, str(exc))
                return
            except ItemTooLong:
                start = window.item_start
                field = field_at_limit(window.text, start + limits.line_bytes + 1, start)
                reason = limits.over("line_bytes", "the item's length") + "; the item is skipped"
                yield index, self.error(index, field, reason)
                try:
                    position = window.skip_blank(window.skip_item(start))
                except (ReadFailed, ValueError) as exc:
                    reason = f"file is not valid JSON from here on ({_short(exc)})"
                    yield index + 1, self.error(index + 1, None, reason)
                    return
            except ValueError as exc:
                yield index, self.error(index, None, f"file is not valid JSON from here on ({_short(exc)})")
                return
            else:
                if isinstance(item, dict):
                    yield index, item
                else:
                    yield (
                        index,
                        self.error(index, None, f"item is a JSON {_json_type(item)}, expected an object"),
                    )
            separator = window.text[position : position + 1]
            if separator == "]":
                return
            if separator != ",":
                shown = repr(separator) if separator else "the end of the file"
                reason = f"file is not valid JSON from here on (expected ',' or ']', found {shown})"
                yield index + 1, self.error(index + 1, None, reason)
                return
            position += 1

    def _array_start(self, text: str) -> int:
        """Where the array of rows of a top-level object starts: the value of one of
        :data:`_ARRAY_KEYS` (the object's other values are skipped one at a time)."""
        position = skip_blank(text, 0)
        first = text[position : position + 1]
        if first != "{":
            try:
                value, _ = RAW_DECODE(text, position)
            except ValueError as exc:
                raise self._fail(f"file is not valid JSON ({_short(exc)})") from None
            raise self._fail(f"top-level JSON value is a {_json_type(value)}, expected an array of rows")
        position = skip_blank(text, position + 1)
        while text[position : position + 1] == '"':
            try:
                key, position = RAW_DECODE(text, position)
                position = skip_blank(text, position)
                if text[position : position + 1] != ":":
                    raise ValueError(f"expected ':' at character {position}")
                position = skip_blank(text, position + 1)
                if key in _ARRAY_KEYS and text[position : position + 1] == "[":
                    return position
                _, position = RAW_DECODE(text, position)
            except ValueError as exc:
                raise self._fail(f"file is not valid JSON ({_short(exc)})") from None
            position = skip_blank(text, position)
            if text[position : position + 1] == ",":
                position = skip_blank(text, position + 1)
        raise self._fail(
            "top-level JSON value is an object, expected an array of rows "
            f"(or an object with one of: {', '.join(_ARRAY_KEYS)})"
        )

    def _parquet(self) -> Iterator[tuple[int, Payload]]:
        return ((row, payload) for row, payload, _ in self._parquet_rows_sized())

    def _parquet_rows_sized(self) -> Iterator[tuple[int, Payload, int]]:
        """``(row, record, its bytes)``, read a batch at a time: batches of about
        :data:`PARQUET_BATCH_BYTES` (by the row groups' sizes), each row measured in Arrow first
        (:func:`~scoring.rollouts.oversize.arrow_row_bytes`), so a row over ``line_bytes``
        becomes an error naming its largest column and never a Python record."""
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises several types for bad files
            raise self._fail(f"not a readable Parquet file ({_short(exc)})") from None
        metadata = parquet.metadata
        self._parquet_rows = metadata.num_rows or 0
        self._parquet_done = 0
        stored = sum(metadata.row_group(g).total_byte_size for g in range(metadata.num_row_groups))
        per_row = stored / self._parquet_rows if self._parquet_rows else 0.0
        batch_rows = int(max(1, min(_PARQUET_BATCH_ROWS, PARQUET_BATCH_BYTES // max(per_row, 1.0))))
        limit = self.access.limits.line_bytes
        row = 0
        try:
            for batch in parquet.iter_batches(batch_size=batch_rows):
                sizes, largest = arrow_row_bytes(batch)
                fits = sizes <= limit
                kept = batch if fits.all() else batch.filter(pa.array(fits))
                records = iter(kept.to_pylist())
                for size, fit, column in zip(sizes.tolist(), fits.tolist(), largest.tolist(), strict=True):
                    row += 1
                    if fit:
                        yield row, next(records), size
                    else:
                        what = f"the row's size ({size:,} bytes, most of them in this field)"
                        reason = self.access.limits.over("line_bytes", what) + "; the row is skipped"
                        yield row, self.error(row, batch.schema.names[column], reason), 0
                self._parquet_done = row
        except Exception as exc:
            yield (
                row + 1,
                self.error(row + 1, None, f"Parquet data cannot be read from here on ({_short(exc)})"),
                0,
            )
        finally:
            close = getattr(parquet, "close", None)
            if close is not None:
                close()

    def _csv_lines(self, problems: list[RowError]) -> Iterator[str]:
        """The file's lines as text for ``csv.reader``, each bounded by ``line_bytes``: a line over
        it reads as blank and its error waits in ``problems``; a read error ends the lines."""
        for batch in self._line_batches(_JSONL_BATCH_LINES, keep_blank=True):
            for _line, raw in batch:
                if type(raw) is RowError:
                    problems.append(raw)
                    if "skipped" not in raw.reason:  # the file cannot be read past this point
                        return
                    yield "\n"
                else:
                    yield raw.decode("utf-8")

    def _csv(self) -> Iterator[tuple[int, Payload]]:
        problems: list[RowError] = []
        name = self.path.name.lower()
        delimiter = "\t" if name.endswith((".tsv", ".tsv.gz")) else ","
        csv.field_size_limit(min(sys.maxsize, self.access.limits.line_bytes))
        reader = csv.reader(self._csv_lines(problems), delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise self._fail("file is empty (no header line)") from None
        except (UnicodeDecodeError, csv.Error) as exc:
            raise self._fail(f"cannot read the header line ({_short(exc)})") from None
        header = [h.strip() for h in header]
        if not any(header):
            raise self._fail("header line is empty")
        width = len(header)
        previous = reader.line_num
        while True:
            start = previous + 1
            try:
                cells = next(reader)
            except StopIteration:
                yield from ((p.line, p) for p in problems)
                return
            except UnicodeDecodeError as exc:
                yield (
                    start,
                    self.error(start, None, f"file is not valid UTF-8 from here on ({exc.reason})"),
                )
                return
            except csv.Error as exc:
                yield start, self.error(start, None, f"cannot read CSV from here on ({_short(exc)})")
                return
            previous = reader.line_num
            while problems:
                problem = problems.pop(0)
                yield problem.line, problem
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            if len(cells) != width:
                yield (
                    start,
                    self.error(start, None, f"row has {len(cells)} fields, the header has {width}"),
                )
                continue
            yield (
                start,
                {key: (value if value != "" else None) for key, value in zip(header, cells, strict=True)},
            )


class _TooLong:
    """Stands for a line over the ``line_bytes`` limit (its bytes were dropped): the field whose
    value passes the limit, when one could be named."""

    __slots__ = ("field",)

    def __init__(self, field: str | None):
        self.field = field


_ARRAY_IN_JSONL = (
    "the file holds one JSON array, not one object per line; its items are read as rows "
    "(name it .json, or write one object per line)"
)


def _line_too_long(limits) -> str:
    """The reason a line over ``line_bytes`` is reported with, however it was read."""
    return limits.over("line_bytes", "line length") + "; the line is skipped"


def _sized_batches(
    items: Iterable[tuple[int, Payload, int]], size: int, max_bytes: int | None
) -> Iterator[list[tuple[int, Payload]]]:
    """``(line, payload, bytes)`` items as consecutive lists of ``(line, payload)``: at most
    ``size`` of them, cut sooner once they hold ``max_bytes``."""
    max_bytes = max_bytes or sys.maxsize
    batch: list[tuple[int, Payload]] = []
    held = 0
    for line, payload, weight in items:
        batch.append((line, payload))
        held += weight
        if len(batch) >= size or held >= max_bytes:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def in_batches(items: Iterable[tuple[int, Payload]], size: int) -> Iterator[list[tuple[int, Payload]]]:
    """``items`` in consecutive lists of at most ``size``."""
    batch: list[tuple[int, Payload]] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def iter_records(
    path: str | os.PathLike, *, container: str | None = None
) -> Iterator[tuple[int, dict | RowError]]:
    """Stream ``(line, record)`` from one file; a bad record arrives as a RowError."""
    return Source(path, container=container).records()
