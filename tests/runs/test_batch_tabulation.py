"""How a chunk's rows become columns: flat results, JSON and text columns, the paused collector."""

from __future__ import annotations

import gc
import json
import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, scorer_kwargs, write_jsonl

from scoring import explain_trace_response, runs, score_trace_response
from scoring.runs import chunks, explain_row, score_files
from scoring.runs.chunks import _dumps
from scoring.verifier import FLAT_KEYS, RESPONSE_KEYS

# Real evaluations, one per family and failure the fixtures cover (their diagnostics differ),
# under two sets of options (so that rows of one chunk hold several templates).
REAL_EVALUATIONS = [
    explain_trace_response(**scorer_kwargs(record), **options)
    for record in diverse_rows()
    for options in ({}, {"format_weight": 0.25, "trace_annotation_reward_formula": "additive", "answer_weight": 3})
]
assert len({evaluation.flat_parts()[2] for evaluation in REAL_EVALUATIONS}) >= 4  # several diagnostic layouts


class _FutureDiagnostic:
    """An evaluation whose flat result carries a diagnostic the table does not list."""

    def __init__(self, evaluation, value: float):
        self.evaluation, self.value = evaluation, value

    def flat_parts(self):
        template, values, keys, diagnostics = self.evaluation.flat_parts()
        return template, values, (*keys, "annotation_future_metric"), (*diagnostics, self.value)

    def as_flat_dict(self):
        return {**self.evaluation.as_flat_dict(), "annotation_future_metric": self.value}


evaluations = st.one_of(
    st.sampled_from(REAL_EVALUATIONS),
    st.none(),  # a row the trace scorer did not score
    st.builds(_FutureDiagnostic, st.sampled_from(REAL_EVALUATIONS), st.floats(allow_nan=False)),
)


def _flat_columns(rows):
    """A chunk's flat columns after storing each row's flat result (None: untraced)."""
    chunk = chunks._Chunk("rows.jsonl", "line", "canonical", "trace", 1.0, max(len(rows), 1))
    for i, row in enumerate(rows):
        chunk._store_flat(i, row)
    chunk.n = len(rows)
    return chunk._flat_columns()


@settings(max_examples=150, deadline=None)
@given(st.lists(evaluations, max_size=40))
def test_flat_columns_equal_a_lookup_per_row(rows):
    """Templates spread by index, per-response values and diagnostic blocks give what a
    lookup in each row's ``as_flat_dict`` gives (NaN for what a row lacks or an untraced row)."""
    columns = _flat_columns(rows)
    flats = [{} if row is None else row.as_flat_dict() for row in rows]
    expected_names = [*FLAT_KEYS, *runs.DIAGNOSTIC_KEYS]
    if any("annotation_future_metric" in flat for flat in flats):
        expected_names.append("annotation_future_metric")
    assert list(columns) == expected_names
    for name, column in columns.items():
        assert column.dtype == np.float64 and column.shape == (len(rows),)
        expected = np.array([flat.get(name, math.nan) for flat in flats], dtype=np.float64)
        np.testing.assert_array_equal(column, expected, err_msg=name)


def test_every_diagnostic_layout_is_listed():
    """The table lists each diagnostic the scorer can give (unlisted ones would sort last)."""
    from scoring.verifier import DIAGNOSTIC_LAYOUTS

    assert {key for keys in DIAGNOSTIC_LAYOUTS.values() for key in keys} == set(runs.DIAGNOSTIC_KEYS)


JSON_VALUES = [
    {"answer_gt": {"type": "integer", "value": 3}, "image_size": [640, 480], "point_half_life_px": None},
    {"gold": "12", "meta": {"nested": [1, 2.5, None, True], "text": 'quote " and \\ and \n newline'}},
    {"nan": math.nan, "inf": math.inf, "big": 10**30, "bytes": b"\x00\xff", "tuple": (1, 2)},
    {"numpy": np.float32(0.5), "set": {3}, "unicode": "é ✓ 🙂"},
    {},
    None,
    "plain text",
]


def _json_lines(values) -> list[str]:
    """The chunk's scorer-argument column for ``values``: each appended as a row is tabulated."""
    lines = bytearray()
    for value in values:
        chunks._append_json_line(lines, value)
    column = chunks._json_lines_column(lines, len(values))
    assert len(column) == len(values)
    return column.to_pylist()


@pytest.mark.parametrize("without_msgspec", [False, True])
def test_json_lines_equal_dumps_value_by_value(monkeypatch, without_msgspec):
    if without_msgspec:
        monkeypatch.setattr(chunks, "_json_encoder", None)
    column = _json_lines(JSON_VALUES)
    assert column == [chunks.dumps_or_text(value) for value in JSON_VALUES]
    assert column[:2] == [_dumps(value) for value in JSON_VALUES[:2]]
    assert json.loads(column[0]) == JSON_VALUES[0]
    assert json.loads(column[1])["meta"]["text"] == 'quote " and \\ and \n newline'
    assert json.loads(column[2])["nan"] is None and json.loads(column[2])["big"] == 10**30


def test_json_lines_past_one_arrays_offsets_are_split_at_newlines_alone(monkeypatch):
    """Past what int32 offsets address, the lines are split value by value -- at newlines only:
    JSON text holds U+2028, U+0085 and form feeds raw, which other line splitters cut at."""
    monkeypatch.setattr(chunks, "_INT32_MAX", 0)
    values = [{"text": "one\u2028two\x85three"}, "\u2029", {"ok": 1}, None]
    column = _json_lines(values)
    assert column == [chunks.dumps_or_text(value) for value in values]
    assert json.loads(column[0]) == values[0]


def test_json_lines_take_what_msgspec_refuses_value_by_value():
    values = [{"ok": 1}, {"gt": "a\ud800"}, {(1, 2): "tuple key and a\ud800"}, {"ok": 2}, {"gt": "b\udfff"}]
    column = _json_lines(values)
    assert column[0] == '{"ok":1}' and column[3] == '{"ok":2}'
    assert json.loads(column[1]) == {"gt": "a\ud800"}  # json's ASCII escape reads back exactly
    assert json.loads(column[2]) == str(values[2])  # json refuses the key: kept as its text
    assert json.loads(column[4]) == {"gt": "b\udfff"}  # nothing of the refused encoding is left behind


@settings(max_examples=100, deadline=None)
@given(st.lists(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
), max_size=12))
def test_json_lines_read_back_as_their_values(values):
    """Whatever the values -- text with newlines, quotes, lone surrogates, NaN --, each row's line
    reads back as its own value (NaN and infinities as null), in order, none merged or split."""
    column = _json_lines(values)
    assert column == [chunks.dumps_or_text(value) for value in values]
    for text, value in zip(column, values, strict=True):
        assert json.loads(text) == _non_finite_as_null(value)


def _non_finite_as_null(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_non_finite_as_null(item) for item in value]
    if isinstance(value, dict):
        return {key: _non_finite_as_null(item) for key, item in value.items()}
    return value


def test_lone_surrogates_are_kept_escaped_and_reported(tmp_path):
    """json reads an unpaired ``\\ud800`` escape (msgspec refuses it); UTF-8 and Arrow cannot
    hold it. The row is scored, stored with the escape written out, and a warning names the
    line and field; the ground truth's own escape survives in scorer_kwargs."""
    good = diverse_rows()[0]
    path = write_jsonl(tmp_path / "surrogates.jsonl", [good] * 3)
    lines = path.read_text().splitlines()
    lines[0] = lines[0].replace('"response": "', '"response": "\\ud800 ', 1)
    lines[1] = lines[1].replace('"task_id": "', '"task_id": "\\udfff', 1)
    lines.append(json.dumps({**good, "answer_gt": {"type": "string", "value": "x\ud800"}}))
    lines.append("{not json")
    path.write_text("\n".join(lines) + "\n")
    assert '"task_id"' in lines[1] and "\\ud800" in lines[0]

    run = score_files(path, workers=1)
    table = run.table
    assert table["source_line"].tolist() == [1, 2, 3, 4]
    assert run.errors["line"].tolist() == [1, 2, 5]  # warnings of tabulation, then the unread line
    assert table["response"][0].startswith("\\ud800 ")
    assert table["task_id"][1].startswith("\\udfff")
    warnings = run.errors[run.errors["severity"] == "warning"]
    assert sorted(zip(warnings["line"], warnings["field"], strict=True)) == [(1, "response"), (2, "task_id")]
    assert all("lone surrogate" in reason for reason in warnings["reason"])
    assert json.loads(table["scorer_kwargs"][3])["answer_gt"]["value"] == "x\ud800"
    assert explain_row(table, table.index[3]).overall == table["score"][3]
    assert table["score"][2] == score_trace_response(**scorer_kwargs(good))["overall"]


def test_collector_is_paused_during_a_chunk_and_restored_after(tmp_path, monkeypatch):
    seen = []
    real_evaluate = chunks.evaluate_resolved

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_evaluate(*args, **kwargs)

    path = write_jsonl(tmp_path / "rows.jsonl", diverse_rows()[:4])
    assert gc.isenabled()
    monkeypatch.setattr(chunks, "evaluate_resolved", spy)
    try:
        score_files(path, workers=1, chunk_rows=2)
        assert seen and not any(seen)
        assert gc.isenabled()
        gc.disable()  # a caller that keeps the collector off keeps it off
        score_files(path, workers=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collector_pauses_nest_across_threads_and_exceptions():
    assert gc.isenabled()
    inside = threading.Event()
    release = threading.Event()

    def other_chunk():
        with chunks._collector_paused():
            inside.set()
            release.wait(5)

    worker = threading.Thread(target=other_chunk)
    worker.start()
    inside.wait(5)
    with pytest.raises(RuntimeError), chunks._collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a chunk fails")
    assert not gc.isenabled()  # the other thread's chunk is still being scored
    release.set()
    worker.join(5)
    assert gc.isenabled()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(diverse_rows()),
            st.sampled_from([None, "answer", "answer_and_annotation", "answer_only"]),
            st.sampled_from([None, 4.0, 16.0, 250.5]),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([{}, {"format_weight": 0.2, "trace_annotation_reward_formula": "additive"}]),
)
def test_rows_of_mixed_modes_and_half_lives_score_as_alone(tmp_path_factory, rows, options):
    """The engine resolves the run's options once per (mode, half-life) pair: rows of one chunk
    with different pairs each score exactly what ``score_trace_response`` gives them alone."""
    records = []
    for record, mode, half_life in rows:
        record = {**record, "trace_output_mode": mode, "point_half_life_px": half_life}
        records.append({key: value for key, value in record.items() if value is not None})
    path = write_jsonl(tmp_path_factory.mktemp("mixed") / "mixed.jsonl", records)
    run = score_files(path, workers=1, **options)
    assert run.errors.empty and len(run.table) == len(records)
    for record, (_, scored) in zip(records, run.table.iterrows(), strict=True):
        expected = score_trace_response(**scorer_kwargs(record, **options))
        for key in ("overall", "format", "answer_reward", "annotation_reward", "task_reward_raw", "format_weight"):
            assert scored[key] == expected[key], key
        assert scored["annotation_point_half_life_px"] == expected.get("annotation_point_half_life_px", math.nan) or (
            math.isnan(scored["annotation_point_half_life_px"]) and "annotation_point_half_life_px" not in expected
        )


def test_records_with_many_samples_grow_the_chunk_past_its_records(tmp_path):
    """A chunk sizes its buffers by records; lm-eval records give a row per sample, so the
    buffers grow as rows arrive, and every row keeps its own values."""
    item = diverse_rows()[0]
    samples = [item["response"], "no json here", '{"answer": 1}', item["response"] + " ", ""]
    doc = {k: v for k, v in item.items() if k != "response"}
    records = [
        {
            "doc_id": i,
            "doc": doc,
            "target": json.dumps(item["answer_gt"]["value"]),
            "arguments": [["prompt", {}]],
            "resps": [samples],
            "filtered_resps": samples,
        }
        for i in range(3)
    ]
    path = write_jsonl(tmp_path / "samples_trace_2026-01-01T00-00-00.jsonl", records)
    run = score_files(path, workers=1, chunk_rows=2)  # chunks of 2 records = 10 rows
    table = run.table
    assert run.errors.empty
    assert table["layout"].unique().tolist() == ["lm_eval"]
    assert table["sample_index"].tolist() == [0, 1, 2, 3, 4] * 3
    assert table["source_line"].tolist() == [1] * 5 + [2] * 5 + [3] * 5
    assert table["response"].tolist() == samples * 3
    expected = [score_trace_response(**{**scorer_kwargs(item), "response": text}) for text in samples] * 3
    for name in RESPONSE_KEYS:
        assert table[name].tolist() == [flat[name] for flat in expected], name
    assert table["format_reason"].tolist() == [
        explain_trace_response(**{**scorer_kwargs(item), "response": text}).format_reason for text in samples
    ] * 3


def test_the_chunk_buffers_hold_every_column_once():
    """Each table column a row writes lives in exactly one of the chunk's buffers."""
    categorical = {*runs.CODED_COLUMNS, *runs.CHUNK_CONSTANT_COLUMNS}
    assert categorical == runs.CATEGORY_COLUMNS
    assert {*runs.TEXT_FIELDS, "scorer_kwargs"} == set(runs.TEXT_COLUMNS) - runs.CATEGORY_COLUMNS
    assert set(runs.TEXT_COLUMNS) - runs.CATEGORY_COLUMNS == runs.ARROW_TEXT
    written = [
        *runs.CODED_COLUMNS, *runs.CHUNK_CONSTANT_COLUMNS, *runs.TEXT_FIELDS, "scorer_kwargs",
        *runs.INTEGER_FIELDS, *runs.NUMBER_FIELDS,
    ]  # fmt: skip
    assert len(written) == len(set(written))
    assert runs.INTEGER_FIELDS[0] == "source_line"  # the one never missing, read by _warn_escaped
    flat = [*FLAT_KEYS, *runs.DIAGNOSTIC_KEYS, "solved"]
    assert set(written) | set(flat) == set(runs.COLUMNS) - {*runs.OPTION_COLUMNS, runs.MISMATCH_COLUMN}


def test_text_columns_reach_the_table_as_the_chunks_arrow_arrays(tmp_path):
    """The table joins the chunks' Arrow string arrays without copying them (one piece per
    chunk), the JSON column included: a copy through Python strings costs time and memory."""
    path = write_jsonl(tmp_path / "rows.jsonl", diverse_rows()[:6])
    table = score_files(path, workers=1, chunk_rows=2).table
    for name in sorted(runs.ARROW_TEXT):
        pieces = table[name].array.__arrow_array__()
        assert pieces.num_chunks == 3, name
        assert table[name].dtype == "str", name


def test_a_chunk_reads_each_group_only_once_the_group_before_is_scored(tmp_path, monkeypatch):
    """Decoding, reading, scoring and tabulating go a group of records at a time: when a row is
    scored, no record past its group has been decoded, so only one group's records, rows and
    evaluations are alive at once (a chunk read whole first held thousands, out of the cache)."""
    group_rows = 4
    decoded: list[int] = []
    decoded_when_scored: list[int] = []
    real_decoded, real_evaluate = chunks.iter_decoded, chunks.evaluate_resolved

    def counting_decoded(lines):
        for record in real_decoded(lines):
            decoded.append(1)
            yield record

    def spy_evaluate(*args, **kwargs):
        decoded_when_scored.append(len(decoded))
        return real_evaluate(*args, **kwargs)

    records = [diverse_rows()[i % 6] for i in range(18)]
    path = write_jsonl(tmp_path / "rows.jsonl", records)
    expected = score_files(path, workers=1).table
    monkeypatch.setattr(chunks, "SCORED_GROUP_ROWS", group_rows)
    monkeypatch.setattr(chunks, "iter_decoded", counting_decoded)
    monkeypatch.setattr(chunks, "evaluate_resolved", spy_evaluate)
    run = score_files(path, workers=1, chunk_rows=len(records))
    assert len(decoded) == len(records)
    assert decoded_when_scored == [min(len(records), (k // group_rows + 1) * group_rows) for k in range(len(records))]
    assert run.errors.empty
    assert run.table.equals(expected)
