"""Containers: JSONL (gzipped too), JSON arrays, Parquet, CSV -- and every way they break."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, stringified, write_jsonl

from scoring.rollouts.errors import RowError, RowProblem
from scoring.rollouts.sources import (
    Source,
    SourceError,
    decode_line,
    detect_container,
    iter_decoded,
    iter_records,
)


def _records(path):
    return list(iter_records(path))


def test_jsonl_streams_lines_with_physical_line_numbers(tmp_path):
    rows = diverse_rows()[:3]
    path = tmp_path / "a.jsonl"
    path.write_text(
        json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n   \n" + json.dumps(rows[2]), encoding="utf-8"
    )
    got = _records(path)
    assert [line for line, _ in got] == [1, 3, 5]
    assert [r["id"] for _, r in got] == ["r0", "exact", "r2"]
    source = Source(path)
    assert source.unit == "line"
    assert all(isinstance(payload, bytes) for _, payload in source.items())  # decoded later, in the worker


def test_gzipped_jsonl_is_detected_by_content(tmp_path):
    rows = diverse_rows()[:4]
    path = write_jsonl(tmp_path / "a.jsonl.gz", rows, gz=True)
    assert detect_container(path) == "jsonl"
    assert [r["id"] for _, r in _records(path)] == ["r0", "exact", "r2", "r3"]
    odd = tmp_path / "renamed.data"
    odd.write_bytes(path.read_bytes())
    assert detect_container(odd) == "jsonl"


def test_json_array_and_wrapped_array(tmp_path):
    rows = diverse_rows()[:3]
    plain = tmp_path / "a.json"
    plain.write_text(json.dumps(rows), encoding="utf-8")
    assert detect_container(plain) == "json"
    assert [line for line, _ in _records(plain)] == [1, 2, 3]
    wrapped = tmp_path / "b.json"
    wrapped.write_text(json.dumps({"rows": rows}), encoding="utf-8")
    assert len(_records(wrapped)) == 3
    as_lines = tmp_path / "c.json"  # JSONL content under a .json name
    write_jsonl(as_lines, rows)
    assert detect_container(as_lines) == "jsonl"


def test_parquet_and_csv_rows(tmp_path):
    rows = stringified(diverse_rows()[:5])
    frame = pd.DataFrame(rows)
    frame.to_parquet(tmp_path / "a.parquet")
    frame.to_csv(tmp_path / "a.csv", index=False)
    parquet = _records(tmp_path / "a.parquet")
    csv_rows = _records(tmp_path / "a.csv")
    assert [line for line, _ in parquet] == [1, 2, 3, 4, 5]
    # the header is line 1; row 4 has a response spanning two lines
    assert [line for line, _ in csv_rows] == [2, 3, 4, 5, 7]
    assert csv_rows[0][1]["answer_gt"] == rows[0]["answer_gt"]  # still a JSON string here
    assert Source(tmp_path / "a.parquet").unit == "row"


def test_csv_multiline_cells_keep_the_starting_line(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text('id,response\na,"line one\nline two"\nb,x\n', encoding="utf-8")
    got = _records(path)
    assert [(line, r["id"]) for line, r in got] == [(2, "a"), (4, "b")]
    assert got[0][1]["response"] == "line one\nline two"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{bad json", "not valid JSON"),
        (b'{"response": "cut off', "cut off part-way"),
        (b"[1, 2]", "holds a JSON array, expected an object"),
        (b'"just a string"', "holds a JSON string"),
        (b'{"a": "\xff\xfe"}', "not valid UTF-8"),
        (b"<<<<<<< HEAD", "not valid JSON"),
    ],
)
def test_bad_jsonl_lines_name_file_and_line(tmp_path, content, reason):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"ok": 1}\n' + content + b'\n{"ok": 2}\n')
    got = _records(path)
    assert [type(r).__name__ for _, r in got] == ["dict", "RowError", "dict"]
    error = got[1][1]
    assert error.line == 2 and error.file == str(path)
    assert reason in error.reason
    assert error.message().startswith(f"{path}, line 2: ")


def test_decode_line_accepts_nan_literals():
    assert decode_line(b'{"score": NaN}')["score"] != decode_line(b'{"score": NaN}')["score"]


def test_truncated_gzip_keeps_the_lines_before(tmp_path):
    data = gzip.compress(b"".join(json.dumps({"i": i}).encode() + b"\n" for i in range(2000)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    got = _records(path)
    good = [r for _, r in got if isinstance(r, dict)]
    errors = [r for _, r in got if isinstance(r, RowError)]
    assert len(good) > 100
    assert len(errors) == 1 and "truncated or corrupt" in errors[0].reason


def test_csv_rows_with_the_wrong_number_of_fields(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("id,response\na,b\nc,d,e\nf,g\n", encoding="utf-8")
    got = _records(path)
    error = got[1][1]
    assert isinstance(error, RowError) and error.line == 3
    assert "3 fields, the header has 2" in error.reason
    assert [r["id"] for _, r in got if isinstance(r, dict)] == ["a", "f"]


def test_json_array_items_that_are_not_objects(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([{"a": 1}, 5, {"b": 2}]), encoding="utf-8")
    got = _records(path)
    assert isinstance(got[1][1], RowError)
    assert got[1][1].message() == f"{path}, item 2: item is a JSON number, expected an object"


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("a.json", b'{"not": "rows"}', "top-level JSON value is an object"),
        ("c.json", b"42", "top-level JSON value is a number"),
        ("d.parquet", b"PAR1 this is not parquet", "not a readable Parquet file"),
        ("e.csv", b"", "empty file"),
    ],
)
def test_unreadable_files_raise_one_clear_error(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(SourceError) as info:
        list(Source(path).items())
    assert info.value.error.file == str(path)
    assert info.value.error.line is None
    assert reason in info.value.error.reason


def test_a_json_array_cut_off_keeps_the_items_before_and_names_where_it_breaks(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b'[{"a": 1}, {"b": 2}, {"c"')
    got = _records(path)
    assert [r for _, r in got[:2]] == [{"a": 1}, {"b": 2}]
    [(line, error)] = got[2:]
    assert line == 3 and isinstance(error, RowError) and "not valid JSON from here on" in error.reason
    assert error.message().startswith(f"{path}, item 3: ")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(SourceError, match="file not found"):
        Source(tmp_path / "nope.jsonl")
    with pytest.raises(SourceError, match="is a directory"):
        Source(tmp_path)


def test_position_reaches_the_file_size(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", diverse_rows())
    source = Source(path)
    for _ in source.items():
        pass
    assert source.position() == source.size


def test_loads_keeps_integers_beyond_64_bits_exact():
    from scoring.rollouts.sources import loads

    big = 12345678901234567890123
    assert loads(b'{"value": 12345678901234567890123}')["value"] == big
    assert loads('{"value": 12345678901234567890123}')["value"] == big
    assert type(loads(b'{"value": 12345678901234567890123}')["value"]) is int
    assert loads(b'{"value": NaN}')["value"] != loads(b'{"value": NaN}')["value"]  # json's NaN literal


# --------------------------------------------------------------------------- batch decoding

_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
#: Lines json reads but a fast decoder may refuse, and lines nothing reads.
_ODD_LINES = [
    b'{"value": NaN}',
    b'{"value": -Infinity}',
    b'{"value": 1e400}',
    b'{"value": "\\ud800"}',
    b"[1, 2]",
    b'"text"',
    b"{",
    b'{"a": 1} trailing',
    b"\xff\xfe{}",
    b"[" * 5000 + b"]" * 5000,
    b'{"deep": ' + b"[" * 1500 + b"]" * 1500 + b"}",
    b"   ",
]


def _outcome(decoded):
    if isinstance(decoded, RowProblem):
        return ("problem", decoded.field, decoded.reason)
    return ("record", json.dumps(decoded, sort_keys=True, allow_nan=True))


def _one_by_one(lines):
    outcomes = []
    for raw in lines:
        try:
            outcomes.append(_outcome(decode_line(raw)))
        except RowProblem as problem:
            outcomes.append(_outcome(problem))
    return outcomes


@given(
    st.lists(
        st.one_of(
            st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=5).map(
                lambda value: json.dumps(value).encode()
            ),
            st.sampled_from(_ODD_LINES),
        ),
        max_size=12,
    )
)
@settings(max_examples=300, deadline=None)
def test_iter_decoded_gives_what_decode_line_gives(lines):
    assert [_outcome(d) for d in iter_decoded(lines)] == _one_by_one(lines)


@given(st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=6))
@settings(max_examples=300, deadline=None)
def test_decoding_is_exact_as_json(value):
    """Floats to the last bit and integers of any size read exactly as ``json`` reads them."""
    line = json.dumps(value).encode()
    (decoded,) = iter_decoded([line])
    assert repr(decoded) == repr(json.loads(line))


def test_iter_decoded_without_the_fast_decoder(monkeypatch):
    import scoring.rollouts.sources as sources

    lines = [json.dumps(r).encode() for r in diverse_rows()] + _ODD_LINES
    expected = [_outcome(d) for d in iter_decoded(lines)]
    monkeypatch.setattr(sources, "_fast_decode", None)
    assert [_outcome(d) for d in sources.iter_decoded(lines)] == expected
    assert sources.loads(b'{"value": 12345678901234567890123}')["value"] == 12345678901234567890123


def _expected_jsonl_items(data: bytes) -> list[tuple[int, bytes]]:
    """What reading ``data`` line by line gives: physical line numbers, each line with its
    newline, blank lines skipped, a byte-order mark dropped from the first line."""
    pieces = data.split(b"\n")
    lines = [piece + b"\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]
    return [(number, line) for number, line in enumerate(lines, 1) if not line.isspace() and line]


_LINE_BYTES = st.sampled_from([b"{", b"}", b'"', b"a", b" ", b"\t", b"\r", b"\xc3\xa9", b"\xef\xbb\xbf"])


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.lists(_LINE_BYTES, max_size=40).map(b"".join), max_size=25),
    final_newline=st.booleans(),
    bom=st.booleans(),
    read_bytes=st.integers(1, 48),
    size=st.integers(1, 6),
    gz=st.booleans(),
)
def test_jsonl_batches_split_lines_exactly_whatever_the_block_size(
    tmp_path_factory, lines, final_newline, bom, read_bytes, size, gz
):
    """Lines split across reads (a line longer than several blocks, a CRLF or a multi-byte
    character cut in two) come out whole, numbered and batched as line-by-line reading gives."""
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("jsonl") / "a.jsonl"
    path.write_bytes(gzip.compress(data) if gz else data)
    if not _expected_jsonl_items(data):  # nothing but blank lines
        with pytest.raises(SourceError, match="empty file"):
            Source(path, container="jsonl")
        return
    source = Source(path, container="jsonl")
    source.jsonl_read_bytes = read_bytes
    batches = list(source.item_batches(size))
    assert [item for batch in batches for item in batch] == _expected_jsonl_items(data)
    assert all(len(batch) == size for batch in batches[:-1])
    assert all(0 < len(batch) <= size for batch in batches)


def test_a_line_longer_than_many_reads_is_joined_once_and_whole(tmp_path):
    long_line = json.dumps({"response": "x" * 100_000}).encode()
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"a": 1}\n' + long_line + b"\n" + b'{"b": 2}')
    source = Source(path)
    source.jsonl_read_bytes = 1000  # the long line spans about a hundred reads
    assert [(line, payload) for batch in source.item_batches(500) for line, payload in batch] == [
        (1, b'{"a": 1}\n'),
        (2, long_line + b"\n"),
        (3, b'{"b": 2}'),
    ]


def test_truncated_gzip_in_batches_delivers_every_line_before_the_error(tmp_path):
    """Reading a block at a time loses no good line before a corrupt part: the lines and the
    error's line number are what line-by-line reading gives."""
    data = gzip.compress(b"".join(json.dumps({"i": i}).encode() + b"\n" for i in range(5000)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    items = [item for batch in Source(path).item_batches(64) for item in batch]
    with gzip.open(path, "rb") as handle:
        readable = []
        try:
            for line in handle:
                readable.append(line)
        except EOFError:
            pass
    complete = [line for line in readable if line.endswith(b"\n")]
    good = [(line, payload) for line, payload in items if isinstance(payload, bytes)]
    assert good == list(enumerate(complete, 1))
    assert isinstance(items[-1][1], RowError) and items[-1][0] == len(complete) + 1
    assert "truncated or corrupt" in items[-1][1].reason


def test_item_batches_of_other_containers_are_their_items_in_order(tmp_path):
    rows = diverse_rows()[:7]
    path = tmp_path / "a.csv"
    pd.DataFrame(stringified(rows)).to_csv(path, index=False)
    batches = list(Source(path).item_batches(3))
    assert [len(batch) for batch in batches] == [3, 3, 1]
    assert [item for batch in batches for item in batch] == list(Source(path).items())
    with pytest.raises(ValueError, match="size must be >= 1"):
        Source(path).item_batches(0)
