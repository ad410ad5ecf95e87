"""A plain JSONL file cut into line ranges gives, range by range read in a worker, exactly the
items the file's own reading gives (tests/rollouts/test_rollouts_sources.py says what those are)."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.rollouts import LineRange, line_ranges
from scoring.rollouts.access import DataAccess, Limits
from scoring.rollouts.errors import RowError
from scoring.rollouts.sources import Source, SourceError

_LINE_BYTES = st.sampled_from([b"{", b"}", b'"', b"a", b":", b",", b" ", b"\t", b"\r", b"\xc3\xa9", b"\xef\xbb\xbf"])


def _items_read(source: Source, size: int, max_bytes: int) -> list:
    return [item for batch in source.item_batches(size, max_bytes) for item in batch]


def _items_cut(source: Source, size: int, max_bytes: int) -> tuple[list, list[LineRange]]:
    ranges = list(source.line_ranges(size, max_bytes))
    return [item for cut in ranges for item in cut.items()], ranges


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.lists(_LINE_BYTES, max_size=40).map(b"".join), min_size=1, max_size=25),
    final_newline=st.booleans(),
    bom=st.booleans(),
    size=st.integers(1, 6),
    max_bytes=st.integers(1, 120),
    line_bytes=st.integers(4, 60),
)
def test_ranges_give_the_items_reading_gives_whatever_the_bounds(
    tmp_path_factory, lines, final_newline, bom, size, max_bytes, line_bytes
):
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("jsonl") / "a.jsonl"
    path.write_bytes(data)
    access = DataAccess(limits=Limits(line_bytes=line_bytes))
    try:
        source = Source(path, container="jsonl", access=access)
    except SourceError as exc:  # nothing but blank lines: refused before anything is read, either way
        assert exc.error.reason == "empty file"
        return
    got, ranges = _items_cut(source, size, max_bytes)
    assert _errors_as_text(got) == _errors_as_text(_items_read(Source(path, container="jsonl", access=access), size, max_bytes))
    # consecutive, whole lines, within the bounds (a line longer than max_bytes alone)
    assert ranges[0].offset == 0 and ranges[0].first_line == 1
    for before, after in zip(ranges, ranges[1:], strict=False):
        assert after.offset == before.offset + before.length
        assert after.first_line == before.first_line + before.lines
    assert ranges[-1].offset + ranges[-1].length == len(data)
    for cut in ranges:
        assert 1 <= cut.lines <= size
        assert cut.length <= max_bytes or cut.lines == 1
        assert data[cut.offset + cut.length - 1 : cut.offset + cut.length] == b"\n" or cut is ranges[-1]
    assert source.position() == len(data)


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 90), min_size=1, max_size=40),
    final_newline=st.booleans(),
    size=st.integers(1, 8),
    max_bytes=st.integers(1, 400),
)
def test_a_read_sized_by_the_lines_before_cuts_where_a_whole_window_cuts(
    tmp_path_factory, lengths, final_newline, size, max_bytes
):
    """Each read asks for about what the last range's lines took: lines that grow longer than
    guessed make it read on, and the ranges are the ones reading ``max_bytes`` every time gives."""
    data = b"\n".join(b"x" * length for length in lengths) + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("jsonl") / "a.jsonl"
    path.write_bytes(data)
    options = {"display": "a.jsonl", "unit": "a.jsonl", "size": size, "max_bytes": max_bytes,
               "line_bytes": 1000, "too_long": "too long"}  # fmt: skip

    def cuts(slack: int) -> list[tuple[int, int, int, int]]:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(line_ranges, "READ_AHEAD_SLACK", slack)
            return [(c.offset, c.length, c.first_line, c.lines) for c in line_ranges.cut_line_ranges(path, **options)]

    whole_windows = cuts(max_bytes)  # every read asks for the whole window
    assert cuts(0) == whole_windows
    assert cuts(1) == whole_windows


def test_the_next_read_asks_for_what_the_lines_before_took_and_an_eighth_more(monkeypatch):
    monkeypatch.setattr(line_ranges, "READ_AHEAD_SLACK", 100)
    assert line_ranges._next_read(8000, 4, 4, 1 << 20) == 8000 + 1000 + 100
    assert line_ranges._next_read(8000, 2, 4, 1 << 20) == 16000 + 2000 + 100  # a short range: per line
    assert line_ranges._next_read(8000, 4, 4, 5000) == 5000  # never past the limit


def _errors_as_text(items: list) -> list:
    return [(line, (p.line, p.field, p.reason) if isinstance(p, RowError) else p) for line, p in items]


def test_a_line_over_the_limit_is_named_by_its_field_and_never_read_whole(tmp_path, monkeypatch):
    limit = 1000
    long_line = json.dumps({"id": 1, "response": "x" * 50_000}).encode()
    path = tmp_path / "run.jsonl"
    path.write_bytes(b'{"a": 1}\n' + long_line + b'\n{"b": 2}\n')
    source = Source(path, access=DataAccess(limits=Limits(line_bytes=limit)))
    ranges = list(source.line_ranges(100, 4096))
    assert [(cut.first_line, cut.lines) for cut in ranges] == [(1, 1), (2, 1), (3, 1)]
    reads = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, offset: reads.append(n) or real_pread(fd, n, offset))
    (line, error), = ranges[1].items()
    assert line == 2 and isinstance(error, RowError)
    assert error.field == "response" and "line length" in error.reason and error.line == 2
    assert max(reads) <= limit + 4
    assert ranges[2].items() == [(3, b'{"b": 2}\n')]


def test_a_range_of_a_file_replaced_or_shortened_since_is_an_error_not_other_lines(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(b'{"i": %d}\n' % i for i in range(100)))
    first, second = list(Source(path).line_ranges(50, 1 << 20))
    path.write_bytes(b'{"i": 0}\n')  # shortened in place
    (line, error), = second.items()
    assert line == 51 and "shortened" in error.reason
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"".join(b'{"j": %d}\n' % i for i in range(100)))
    os.replace(replacement, path)
    (line, error), = first.items()
    assert line == 1 and "replaced" in error.reason and error.file == first.display


def test_gzipped_and_other_containers_are_read_not_cut(tmp_path):
    gz = tmp_path / "run.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"a": 1}\n'))
    assert Source(gz).line_ranges(10, 100) is None
    csv = tmp_path / "run.csv"
    csv.write_text("a,b\n1,2\n")
    assert Source(csv).line_ranges(10, 100) is None
    with pytest.raises(ValueError, match="size"):
        Source(gz).line_ranges(0, 100)
