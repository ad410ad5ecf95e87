"""A rollout or instance file rewritten with a ground-truth patch, in the container it came in.

:func:`scoring.review.corrections.patch_record` replaces the corrected ground truth inside one record
(top level or nested, as an object or a JSON string). This module applies it to whole files so a
reviewer gets back a file of the same kind and layout: JSONL (unchanged lines byte for byte), a
JSON array or an object holding the rows under a key, Parquet (the same schema where the new values
fit it) and CSV / TSV (unchanged rows byte for byte). Records are addressed as the readers number
them (:mod:`scoring.rollouts.sources`): JSONL and CSV by the physical line a record starts on,
Parquet and JSON arrays by 1-based position.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .corrections import patch_jsonl, patch_record

#: File name endings each rewriter handles (compressed files are not rewritten).
JSONL_SUFFIXES = (".jsonl", ".ndjson")
JSON_SUFFIXES = (".json",)
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv")

PatchLines = Sequence[Mapping[str, Any]]


def _patched(record: Any, lines: PatchLines, number: int, limit: set[int] | None) -> tuple[Any, bool]:
    """``record`` patched when it is a dict and ``number`` is wanted (without ``limit`` the record's
    own instance id must match the patch line's)."""
    if not isinstance(record, dict) or (limit is not None and number not in limit):
        return record, False
    patched, fields = patch_record(record, lines, match_instance=limit is None)
    return patched, bool(fields)


def patch_records(records: Sequence[Any], lines: PatchLines, only_rows: Iterable[int] | None = None
                  ) -> tuple[list[Any], list[int]]:
    """Records (1-based positions) with the patch applied, and the positions that changed."""
    limit = set(only_rows) if only_rows is not None else None
    out, changed = [], []
    for number, record in enumerate(records, start=1):
        record, did = _patched(record, lines, number, limit)
        out.append(record)
        if did:
            changed.append(number)
    return out, changed


def patch_json(text: str, lines: PatchLines, only_rows: Iterable[int] | None = None) -> tuple[str, list[int]]:
    """A JSON document of records -- a top-level array, or an object holding them under one key --
    with the patch applied (re-serialised with two-space indents)."""
    document = json.loads(text)
    if isinstance(document, list):
        records, changed = patch_records(document, lines, only_rows)
        return json.dumps(records, ensure_ascii=False, indent=2) + "\n", changed
    if isinstance(document, dict):
        for key, value in document.items():
            if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
                records, changed = patch_records(value, lines, only_rows)
                return json.dumps({**document, key: records}, ensure_ascii=False, indent=2) + "\n", changed
    raise ValueError("the JSON document holds no list of records")


def patch_parquet(data: bytes, lines: PatchLines, only_rows: Iterable[int] | None = None) -> tuple[bytes, list[int]]:
    """A Parquet file with the patch applied. Each column keeps its type when the corrected values
    fit it; otherwise its type is inferred anew, and a column whose values no longer share one type
    (a box list replaced by a list of points) is written as JSON text, which the readers decode."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    records, changed = patch_records(table.to_pylist(), lines, only_rows)
    if not changed:
        return data, []
    columns = [_column([record.get(f.name) for record in records], f.type) for f in table.schema]
    patched = pa.Table.from_arrays(columns, names=table.schema.names)
    buffer = io.BytesIO()
    pq.write_table(patched, buffer)
    return buffer.getvalue(), changed


def _column(values: list[Any], old_type: Any) -> Any:
    import pyarrow as pa

    for attempt in (lambda: pa.array(values, type=old_type), lambda: pa.array(values)):
        try:
            return attempt()
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            continue
    return pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                     for v in values], type=pa.string())


def patch_csv(text: str, lines: PatchLines, only_rows: Iterable[int] | None = None, *, delimiter: str = ","
              ) -> tuple[str, list[int]]:
    """A CSV (or TSV) file with the patch applied to the cells of the rows it changes (a ground
    truth in a cell is JSON text). Rows are numbered by the line they start on, as the reader does;
    every unchanged row keeps its bytes, a changed one is written with the csv module's quoting."""
    physical = text.splitlines(keepends=True)
    reader = csv.reader(physical, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return text, []
    names = [h.strip() for h in header]
    limit = set(only_rows) if only_rows is not None else None
    out = physical[: reader.line_num]
    changed: list[int] = []
    previous = reader.line_num
    for cells in reader:
        start, end = previous + 1, reader.line_num
        previous = end
        record = dict(zip(names, cells, strict=False)) if len(cells) == len(names) else None
        patched, did = _patched(record, lines, start, limit)
        if not did:
            out.extend(physical[start - 1 : end])
            continue
        row = io.StringIO()
        ending = "\r\n" if physical[end - 1].endswith("\r\n") else "\n"
        csv.writer(row, delimiter=delimiter, lineterminator=ending).writerow(
            [_cell(patched[name]) for name in names]
        )
        out.append(row.getvalue())
        changed.append(start)
    return "".join(out), changed


def _cell(value: Any) -> str:
    """A CSV cell: text as it is, anything else (a replaced ground truth) as compact JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text_rewriter(patch: Callable[..., tuple[str, list[int]]], **options: Any):
    def rewrite(data: bytes, lines: PatchLines, only_rows: Iterable[int] | None) -> tuple[bytes, list[int]]:
        text, changed = patch(data.decode("utf-8"), lines, only_rows, **options)
        return text.encode("utf-8"), changed

    return rewrite


def patch_file(name: str, data: bytes, lines: PatchLines, only_rows: Iterable[int] | None = None
               ) -> tuple[bytes, list[int]]:
    """``data`` (the file called ``name``) with the patch applied, in the same container, and the
    records that changed. Raises ``ValueError`` for a container this cannot rewrite (compressed
    files; apply the JSONL patch to them) and ``UnicodeDecodeError`` for text that is not UTF-8."""
    lower = name.lower()
    rewriters: list[tuple[tuple[str, ...], Callable[..., tuple[bytes, list[int]]]]] = [
        (JSONL_SUFFIXES, _text_rewriter(lambda text, lines, only: patch_jsonl(text, lines, only_lines=only))),
        (JSON_SUFFIXES, _text_rewriter(patch_json)),
        (PARQUET_SUFFIXES, patch_parquet),
        ((".tsv",), _text_rewriter(patch_csv, delimiter="\t")),
        (CSV_SUFFIXES, _text_rewriter(patch_csv)),
    ]
    for suffixes, rewrite in rewriters:
        if lower.endswith(suffixes):
            return rewrite(data, lines, only_rows)
    raise ValueError(f"{name}: only JSONL, JSON, Parquet and CSV files are rewritten; apply the JSONL patch to it")


__all__ = [
    "CSV_SUFFIXES",
    "JSONL_SUFFIXES",
    "JSON_SUFFIXES",
    "PARQUET_SUFFIXES",
    "patch_csv",
    "patch_file",
    "patch_json",
    "patch_parquet",
    "patch_records",
]
