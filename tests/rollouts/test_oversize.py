"""One huge record: a per-row error naming file, line and field, in bounded memory, every other row read."""

from __future__ import annotations

import json
import re
import tracemalloc

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, write_jsonl

from scoring import datasets, engines
from scoring.rollouts import DataAccess, Source, json_window
from scoring.rollouts.access import Limits
from scoring.rollouts.oversize import approximate_bytes, arrow_row_bytes, field_at_limit
from scoring.runs import score_files

MIB = 1 << 20
#: Keys that a scanner reading JSON text must not be fooled by.
KEYS = st.text(alphabet='ab"\\{}[]:, ', min_size=1, max_size=6)
#: Text inside values: quotes, escapes, brackets and colons that look like structure.
TRICKY = st.text(alphabet='xy"\\{}[]:,é\n', max_size=12)


@st.composite
def record_with_a_long_value(draw):
    """``(record, path, marker)``: a nested record whose value at ``path`` (object keys, arrays
    passed through) is a long string starting with ``marker``, among other fields."""
    depth = draw(st.integers(1, 4))
    keys = [draw(KEYS) for _ in range(depth)]
    marker = "\u2603LONG"
    value: object = marker + "z" * draw(st.integers(1, 300)) + draw(TRICKY)
    for key in reversed(keys):
        before = draw(st.dictionaries(KEYS, st.one_of(TRICKY, st.integers(), st.lists(TRICKY, max_size=2)), max_size=2))
        after = draw(st.dictionaries(KEYS, TRICKY, max_size=2))
        inner = {k: v for k, v in before.items() if k != key}
        inner[key] = [draw(TRICKY), value] if draw(st.booleans()) else value  # an array passed through
        inner.update({k: v for k, v in after.items() if k not in inner})
        value = inner
    return value, ".".join(keys), marker


@settings(max_examples=300, deadline=None)
@given(case=record_with_a_long_value(), cut=st.floats(0.0, 1.0), as_bytes=st.booleans())
def test_the_field_a_line_passes_the_limit_in_is_named_from_the_text_before_it(case, cut, as_bytes):
    record, path, marker = case
    text = json.dumps(record, ensure_ascii=False)
    start = text.index(marker)
    end = start + len(json.dumps(_leaf(record, path), ensure_ascii=False)) - 2  # the long string's characters
    at = start + int(cut * (end - start))  # anywhere inside the long value
    if as_bytes:
        data = text.encode("utf-8")
        at = len(text[:at].encode("utf-8"))
        assert field_at_limit(data, at) == path
    else:
        assert field_at_limit(text, at) == path


def _leaf(record, path):
    """The long string at ``path`` (the last item of an array passed through)."""
    value = record
    for key in path.split(".") if path else []:
        value = value[key]
        if isinstance(value, list):
            value = value[-1]
    return value


def test_a_field_is_not_named_between_fields_or_outside_an_object():
    assert field_at_limit(b'{"a": "x", "b": 12') == "b"
    assert field_at_limit(b'{"a": "x", ') is None and field_at_limit(b'{"a": "x", "b') is None
    assert field_at_limit(b'[1, 2, "xxx') is None and field_at_limit(b"") is None
    assert field_at_limit(b'{"a": {"b": 1}, "c": "x') == "c"
    assert field_at_limit('{"a": [{"t": 1}, {"t": "x, y: {z', 100) == "a.t"
    assert field_at_limit(b'{"a": "' + b"[" * 20 + b'x", "b": [' + b"1," * 2_000_000) is None  # too many to scan


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(
        st.one_of(
            st.dictionaries(KEYS, st.one_of(TRICKY, st.integers(), st.lists(TRICKY, max_size=3)), max_size=3),
            st.builds(lambda key, n, tail: {key: "w" * n + tail}, KEYS, st.integers(60, 400), TRICKY),
        ),
        max_size=12,
    ),
    block=st.integers(1, 64),
    limit=st.integers(40, 120),
)
def test_json_array_items_over_the_limit_are_stepped_over_and_the_others_read_whole(
    tmp_path_factory, items, block, limit
):
    """Whatever the block size, each item within the limit is what json.loads gives, each one
    over it is an error at its number, and the items after it are read."""
    path = tmp_path_factory.mktemp("arr") / "a.json"
    texts = [json.dumps(item, ensure_ascii=False) for item in items]
    path.write_text("[" + ",\n ".join(texts) + "]", encoding="utf-8")
    original = json_window.TextWindow.block_bytes
    json_window.TextWindow.block_bytes = block
    try:
        got = list(Source(path, access=DataAccess(limits=Limits(line_bytes=limit))).items())
    finally:
        json_window.TextWindow.block_bytes = original
    assert [i for i, _ in got] == list(range(1, len(items) + 1))
    for (_, payload), item, text in zip(got, items, texts, strict=True):
        if isinstance(payload, dict):
            assert payload == item
        else:  # an item longer than the limit (the window may hold a little more before it gives up)
            assert len(text) > limit and payload.reason.endswith("the item is skipped")


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.none(), st.text(max_size=20)),
            st.one_of(st.none(), st.lists(st.fixed_dictionaries({"role": st.text(max_size=5),
                                                                  "content": st.text(max_size=30)}), max_size=3)),
            st.one_of(st.none(), st.floats(allow_nan=False)),
        ),
        min_size=1, max_size=30,
    ),
    offset=st.integers(0, 5),
)
def test_a_batchs_rows_are_measured_as_their_texts_lengths(rows, offset):
    """Each row's bytes: its texts' UTF-8 lengths, nested too, and 8 per number (sliced batches too)."""
    table = pa.table({
        "response": pa.array([r[0] for r in rows], pa.string()),
        "messages": pa.array([r[1] for r in rows]),
        "reward": pa.array([r[2] for r in rows], pa.float64()),
    }).to_batches()[0].slice(min(offset, len(rows) - 1))  # fmt: skip
    sizes, largest = arrow_row_bytes(table)
    expected = []
    for response, messages, _ in rows[min(offset, len(rows) - 1) :]:
        text = len(response.encode()) if response is not None else 0
        nested = sum(len(m["role"].encode()) + len(m["content"].encode()) for m in messages or [])
        expected.append((text, nested, 8))
    assert sizes.tolist() == [sum(parts) for parts in expected]
    assert [max(parts) for parts in expected] == [parts[i] for parts, i in zip(expected, largest.tolist(), strict=True)]


def test_a_parquet_row_over_the_limit_is_an_error_naming_its_largest_column(tmp_path):
    rows = [dict(r, id=f"r{i}") for i, r in enumerate(diverse_rows()[:3])]
    rows[1]["response"] = "x" * (2 * MIB)
    frame = pd.DataFrame([{k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in r.items()} for r in rows])
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    got = list(Source(path, access=DataAccess(limits=Limits(line_bytes=MIB))).items())
    assert [n for n, _ in got] == [1, 2, 3]
    assert [p["id"] for _, p in got if isinstance(p, dict)] == ["r0", "r2"]
    error = got[1][1]
    assert (error.line, error.field, error.unit) == (2, "response", "row")
    size = int(re.match(r"the row's size \(([\d,]+) bytes, most of them in this field\)", error.reason)[1].replace(",", ""))
    assert 2 * MIB < size < 2 * MIB + 10_000
    assert error.reason.endswith("is over the limit of 1 MiB (set ROLLOUTSCOPE_MAX_LINE_BYTES to change it); the row is skipped")


def test_records_are_chunked_by_their_bytes_as_well_as_their_count(tmp_path):
    lines = [{"i": i, "response": "y" * (100 * (i % 7))} for i in range(300)]
    path = write_jsonl(tmp_path / "a.jsonl", lines)
    for container_path in (path, _as_parquet(lines, tmp_path / "a.parquet")):
        batches = list(Source(container_path).item_batches(50, max_bytes=4000))
        items = [item for batch in batches for item in batch]
        assert [n for n, _ in items] == list(range(1, 301))  # every record, in order
        for batch in batches:
            weights = [len(p) if isinstance(p, bytes) else approximate_bytes(p) for _, p in batch]
            assert len(batch) <= 50 and sum(weights[:-1]) < 4000  # cut once it holds 4,000 bytes
            assert batch is batches[-1] or len(batch) == 50 or sum(weights) >= 4000  # and not before


def _as_parquet(rows, path):
    pd.DataFrame(rows).to_parquet(path)
    return path


@pytest.mark.parametrize("container", ["jsonl", "json", "parquet"])
def test_one_huge_row_is_one_error_and_every_other_row_is_scored(tmp_path, container):
    rows = [dict(r, id=f"r{i}") for i, r in enumerate(diverse_rows() * 2)]
    huge = dict(rows[5], response="q" * (16 * MIB))
    given = [*rows[:5], huge, *rows[5:]]
    path = tmp_path / f"run.{container}"
    if container == "jsonl":
        write_jsonl(path, given)
    elif container == "json":
        path.write_text(json.dumps(given), encoding="utf-8")
    else:
        flat = [{k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in r.items()} for r in given]
        pd.DataFrame(flat).to_parquet(path)
    access = DataAccess(limits=Limits(line_bytes=MIB))
    tracemalloc.start()
    update = engines.score_to_dataset([path], tmp_path / "ds", workers=1, access=access)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 12 * MIB  # the 16 MiB row was never held as a record (Python objects)
    opened = datasets.open_dataset(tmp_path / "ds", compact=False)
    [error] = opened.errors[opened.errors["severity"] == "error"].itertuples()
    assert (error.file, error.line, error.field) == (str(path), 6, "response")
    assert "ROLLOUTSCOPE_MAX_LINE_BYTES" in error.reason and "skipped" in error.reason
    assert update.rows == len(rows) and opened.table["row_id"].tolist() == [r["id"] for r in rows]
    alone = score_files(write_jsonl(tmp_path / "good.jsonl", rows), workers=1)  # the same rows without it
    compared = ["row_id", "overall", "format", "accuracy", "annotation_reward", "trace_output_mode"]
    pd.testing.assert_frame_equal(opened.table[compared], alone.table[compared])
