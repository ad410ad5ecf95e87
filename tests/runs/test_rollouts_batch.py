"""Batch scoring: the table, the errors table, processes, logged-vs-recomputed."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, row, scorer_kwargs, stringified, write_jsonl, write_png

from scoring import explain_trace_response, runs, score_trace_response
from scoring.rollouts import ColumnMapping
from scoring.runs import (
    COLUMNS,
    DIAGNOSTIC_KEYS,
    BatchOptions,
    explain_row,
    logged_vs_recomputed,
    pipeline,
    row_kwargs,
    score_files,
    score_records,
)
from scoring.verifier import FLAT_KEYS

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def _assert_row_matches(table_row, expected: dict):
    for key in FLAT_KEYS:
        assert table_row[key] == expected[key], key
    for key in DIAGNOSTIC_KEYS:
        if key in expected:
            assert table_row[key] == expected[key], key
        else:
            assert math.isnan(table_row[key]), key


def test_table_equals_the_scorer_row_by_row(tmp_path):
    rows = diverse_rows()
    run = score_files(write_jsonl(tmp_path / "a.jsonl", rows), workers=1)
    table = run.table
    assert len(table) == len(rows) and len(run.errors) == 0
    assert list(table.columns[: len(COLUMNS) - 1]) == [c for c in COLUMNS if c != "logged_mismatch"]
    for i, item in enumerate(rows):
        kwargs = scorer_kwargs(item)
        _assert_row_matches(table.iloc[i], score_trace_response(**kwargs))
        evaluation = explain_trace_response(**kwargs)
        assert table["format_reason"].iat[i] == evaluation.format_reason
        assert table["recovered_source"].iat[i] == evaluation.recovered_source
        assert (
            table["recovered_text"].iat[i] if pd.notna(table["recovered_text"].iat[i]) else None
        ) == evaluation.recovered_text
        assert table["trace_output_mode"].iat[i] == evaluation.options.mode
        assert table["score"].iat[i] == evaluation.overall
        assert table["solved"].iat[i] == (evaluation.overall >= 0.999)
    assert table["row_id"].tolist() == [r["id"] for r in rows]
    assert table["source_line"].tolist() == list(range(1, len(rows) + 1))
    assert table["run"].unique().tolist() == ["a"]


def test_row_kwargs_and_explain_row_reproduce_the_row(tmp_path):
    table = score_files(write_jsonl(tmp_path / "a.jsonl", diverse_rows()), workers=1, format_weight=0.2).table
    for index in table.index:
        again = score_trace_response(**row_kwargs(table.loc[index]))
        _assert_row_matches(table.loc[index], again)
    evaluation = explain_row(table, 0)
    assert evaluation.options.format_weight == 0.2
    assert explain_row(table, 0, format_weight=0.0).options.format_weight == 0.0


def test_run_wide_options_override_the_rows(tmp_path):
    rows = diverse_rows()
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    options = {
        "trace_reward_mode": "answer",
        "trace_annotation_reward_formula": "additive",
        "answer_weight": 3,
        "annotation_weight": 1,
        "format_weight": 0.25,
        "point_half_life_px": 9,
    }
    table = score_files(path, workers=1, **options).table
    for i, item in enumerate(rows):
        _assert_row_matches(table.iloc[i], score_trace_response(**scorer_kwargs(item, **options)))
    assert set(table["trace_output_mode"]) == {"answer"}


def test_invalid_run_wide_options_raise(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", diverse_rows()[:1])
    for bad in (
        {"format_weight": 2},
        {"answer_weight": -1},
        {"trace_reward_mode": "both"},
        {"solved_threshold": 1.5},
        {"scorer": "bleu"},
        {"trace_annotation_reward_formula": "mean"},
    ):
        with pytest.raises(ValueError):
            score_files(path, **bad)


def test_image_size_comes_from_the_image_header(tmp_path):
    write_png(tmp_path / "wide.png", (4000, 3000))
    point = row(
        '{"answer": 1, "annotation": [100, 100]}',
        answer=1,
        annotation_type="point",
        annotation=[130, 100],
        image="wide.png",
    )
    table = score_files(write_jsonl(tmp_path / "p.jsonl", [point]), workers=1).table
    expected = score_trace_response(**scorer_kwargs(point, image_size=[4000, 3000]))
    _assert_row_matches(table.iloc[0], expected)
    assert expected["annotation_reward"] != score_trace_response(**scorer_kwargs(point))["annotation_reward"]
    assert (table["image_width"].iat[0], table["image_height"].iat[0]) == (4000.0, 3000.0)
    assert table["image_ref"].iat[0] == str((tmp_path / "wide.png").resolve())


def test_bad_input_lands_in_the_errors_table_and_good_rows_are_kept(tmp_path):
    good = diverse_rows()[:3]
    unknown = row('{"answer": 7, "annotation": [0, 0, 1, 1]}')
    unknown["annotation_gt"]["type"] = "polygon"
    wrong_type = row("x")
    wrong_type["answer_gt"] = 3
    no_response = row(None)
    del no_response["response"]
    missing_image = row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image="nope.png")
    lines = [json.dumps(r) for r in good] + [
        "{not json",
        json.dumps(wrong_type),
        json.dumps(unknown),
        json.dumps(no_response),
        json.dumps(missing_image),
        json.dumps(row("x", reward_contract=json.dumps(good[0]["reward_contract"]))),  # valid: a JSON string
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = score_files(path, workers=1)
    assert len(run.table) == 5  # 3 good + the row with a missing image + the JSON-string contract
    errors = run.errors
    found = {
        (int(e.line), e.field if isinstance(e.field, str) else None, e.severity) for e in errors.itertuples()
    }
    assert found == {
        (4, None, "error"),
        (5, "answer_gt", "error"),
        (6, "annotation_gt.type", "error"),
        (7, "response", "error"),
        (8, "image", "warning"),
    }
    assert (errors["file"] == str(path)).all()
    assert run.error_count == 4 and run.warning_count == 1
    image_row = run.table[run.table["source_line"] == 8].iloc[0]
    assert "image not found: 'nope.png'" in image_row["image_warning"]
    assert image_row["annotation_reward"] > 0  # still scored: boxes need no image size


def test_errors_come_in_line_order_and_reader_or_scorer_bugs_are_row_errors(tmp_path, monkeypatch):
    """A chunk is read whole before it is scored, yet its errors and warnings come in line
    order; a bug in a reader or in the scorer is an error on its line, not a lost run."""
    from scoring.rollouts import RowReader
    from scoring.runs import chunks as batch_module

    real_read, real_evaluate = RowReader.read, batch_module.evaluate_resolved

    def read(self, record, ordinal):
        if record.get("response") == "reader bug":
            raise RuntimeError("reader bug")
        return real_read(self, record, ordinal)

    def evaluate(response, *args, **kwargs):
        if response == "scorer bug":
            raise RuntimeError("scorer bug")
        return real_evaluate(response, *args, **kwargs)

    monkeypatch.setattr(RowReader, "read", read)
    monkeypatch.setattr(batch_module, "evaluate_resolved", evaluate)
    lines = [
        json.dumps(row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image="nope.png")),
        "{not json",
        json.dumps(row('{"answer": 7}')),
        json.dumps(row("reader bug")),
        json.dumps(row("scorer bug")),
        json.dumps(row('{"answer": 6}', image="gone.png")),
        "[]",
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for chunk_rows in (500, 2):
        run = score_files(path, workers=1, chunk_rows=chunk_rows)
        assert run.table["source_line"].tolist() == [1, 3, 6]
        assert run.errors["line"].tolist() == [1, 2, 4, 5, 6, 7]
        assert run.errors["severity"].tolist() == ["warning", "error", "error", "error", "warning", "error"]
        reasons = run.errors["reason"].tolist()
        assert reasons[2] == "could not be read (RuntimeError: reader bug)"
        assert reasons[3] == "could not be scored (RuntimeError: scorer bug)"


def test_a_chunk_is_scored_in_groups_bounded_in_rows_and_response_characters(tmp_path, monkeypatch):
    """A group's evaluations wait for its tabulation together, so a group closes at a number of
    records or once its responses reach a number of characters; the table does not change."""
    from scoring.runs import chunks as batch_module

    lengths = [100, 100, 100, 100, 1500, 100, 100, 100]
    records = [row('{"answer": 7}' + " " * (length - 13), id=f"r{i}") for i, length in enumerate(lengths)]
    path = write_jsonl(tmp_path / "rows.jsonl", records)
    whole = score_files(path, workers=1).table

    # scoring a row calls evaluate_resolved, tabulating it _format_under_modes: the order of
    # the calls shows the groups (all of a group scored, then all of it tabulated)
    events = []
    real_evaluate, real_verdicts = batch_module.evaluate_resolved, batch_module._format_under_modes

    def evaluate(*args, **kwargs):
        events.append("scored")
        return real_evaluate(*args, **kwargs)

    def verdicts(*args):
        events.append("tabulated")
        return real_verdicts(*args)

    monkeypatch.setattr(batch_module, "evaluate_resolved", evaluate)
    monkeypatch.setattr(batch_module, "_format_under_modes", verdicts)
    monkeypatch.setattr(batch_module, "SCORED_GROUP_ROWS", 3)
    monkeypatch.setattr(batch_module, "SCORED_GROUP_CHARS", 1000)
    grouped = score_files(path, workers=1).table
    runs = [(kind, len(list(run))) for kind, run in itertools.groupby(events)]
    assert runs == [("scored", 3), ("tabulated", 3), ("scored", 2), ("tabulated", 2), ("scored", 3), ("tabulated", 3)]
    pd.testing.assert_frame_equal(grouped, whole)


def test_unreadable_file_beside_good_files(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", diverse_rows()[:2])
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 nope")
    run = score_files([good, tmp_path / "missing.jsonl", broken], workers=1)
    assert len(run.table) == 2
    file_errors = run.file_errors()
    assert set(file_errors["file"]) == {str(tmp_path / "missing.jsonl"), str(broken)}
    assert "file not found" in " ".join(file_errors["reason"])


def test_a_file_with_no_usable_row_says_why_in_one_line(tmp_path):
    bad = row("x")
    bad["answer_gt"] = "oops"
    path = write_jsonl(tmp_path / "bad.jsonl", [bad, bad, dict(bad, response="y")])
    run = score_files(path, workers=1)
    assert len(run.table) == 0
    summary = run.file_errors()["reason"].tolist()
    assert len(summary) == 1
    assert summary[0].startswith("no usable row: all 3 rows failed; most often (3x) field 'answer_gt'")
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("nope\nstill nope\n", encoding="utf-8")
    run = score_files(garbage, workers=1)
    assert run.errors["line"].tolist()[:2] == [1, 2]
    assert "no usable row" in run.file_errors()["reason"].iat[0]


def test_processes_give_the_single_process_table(tmp_path):
    rows = diverse_rows() * 4
    for i, item in enumerate(rows):
        item = dict(item)
        rows[i] = item
        item["id"] = f"x{i}"
        item["score"] = 0.5
    path = write_jsonl(tmp_path / "a.jsonl", rows, extra_lines=["{broken"])
    single = score_files(path, workers=1, chunk_rows=5)
    seen = []
    multi = score_files(path, workers=2, chunk_rows=5, progress=seen.append)
    assert multi.workers == 2
    pd.testing.assert_frame_equal(single.table, multi.table)
    pd.testing.assert_frame_equal(single.errors, multi.errors)
    assert seen[-1].fraction == 1.0 and seen[-1].rows == len(rows)
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions)


def test_workers_reading_their_own_line_ranges_give_the_single_process_table(tmp_path, monkeypatch):
    """A plain JSONL file goes to the workers as line ranges they read themselves: a byte-order
    mark, blank lines, a line over the limit (named by its field), a broken line and a last line
    without its newline come out as reading the file in one process gives them."""
    from scoring.rollouts import Source
    from scoring.rollouts.access import DataAccess, Limits

    rows = [dict(r, id=f"x{i}") for i, r in enumerate(diverse_rows() * 3)]
    lines = [json.dumps(r) for r in rows]
    lines[4] = json.dumps(dict(rows[4], response="y" * 6000))  # over the 4,000-byte limit below
    lines[7:7] = ["", "   ", "{broken"]
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())
    access = DataAccess(limits=Limits(line_bytes=4000))
    cut = []
    real = Source.line_ranges
    monkeypatch.setattr(Source, "line_ranges", lambda self, *a: cut.append(1) or real(self, *a))
    single = score_files(path, workers=1, chunk_rows=4, access=access)
    multi = score_files(path, workers=2, chunk_rows=4, access=access)
    assert multi.workers == 2 and cut == [1]  # only the workers' run cut the file
    pd.testing.assert_frame_equal(single.table, multi.table)
    pd.testing.assert_frame_equal(single.errors, multi.errors)
    assert len(multi.table) == len(rows) - 1
    errors = multi.errors.set_index("line")
    assert errors.loc[5, "field"] == "response" and "line length" in errors.loc[5, "reason"]
    assert "not valid JSON" in errors.loc[10, "reason"]
    assert multi.table["source_line"].max() == len(lines)  # the last line, with no newline after it


def test_chunks_cut_by_their_bytes_and_few_out_at_a_time_give_the_same_table(tmp_path, monkeypatch):
    rows = [dict(r, id=f"x{i}") for i, r in enumerate(diverse_rows() * 6)]
    path = write_jsonl(tmp_path / "a.jsonl", rows, extra_lines=["{broken"])
    single = score_files(path, workers=1, chunk_rows=50)
    monkeypatch.setattr(pipeline, "MAX_CHUNK_BYTES", 3000)  # a few records per chunk, two chunks out per worker
    reports = []
    multi = score_files(path, workers=2, chunk_rows=50, progress=reports.append)
    assert multi.workers == 2 and len(reports) > len(rows) // 10  # many short chunks, not 50 records each
    pd.testing.assert_frame_equal(single.table, multi.table)
    pd.testing.assert_frame_equal(single.errors, multi.errors)


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(0, 10**8), workers=st.integers(1, 64))
def test_automatic_chunks_are_bounded_and_give_each_worker_many_of_a_large_input(rows, workers):
    size = runs.automatic_chunk_rows(rows, workers)
    assert runs.DEFAULT_CHUNK_ROWS <= size <= runs.MAX_CHUNK_ROWS
    if runs.DEFAULT_CHUNK_ROWS < size < runs.MAX_CHUNK_ROWS:  # neither bound holds it back
        assert -(-rows // size) >= workers * runs.CHUNKS_PER_WORKER
    if rows >= workers * runs.CHUNKS_PER_WORKER * runs.MAX_CHUNK_ROWS:
        assert size == runs.MAX_CHUNK_ROWS
    assert runs.automatic_chunk_rows(rows + 1000, workers) >= size  # a larger input: never smaller chunks


def test_without_chunk_rows_an_input_is_handed_out_in_automatic_chunks(tmp_path, monkeypatch):
    rows = [dict(r, id=f"r{i}") for i, r in enumerate(diverse_rows() * 3)]
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    asked = []

    def three(estimated, workers):
        asked.append((estimated, workers))
        return 3

    monkeypatch.setattr(pipeline, "automatic_chunk_rows", three)
    seen = []
    automatic = score_files(path, workers=1, progress=seen.append)
    assert [w for _, w in asked] == [1] and asked[0][0] > 0  # asked once, with the rows estimated
    assert len(seen) == -(-len(rows) // 3) + 1  # a report per chunk of 3 records, then the last
    pd.testing.assert_frame_equal(automatic.table, score_files(path, workers=1, chunk_rows=500).table)


def test_logged_values_are_kept_and_differences_reported(tmp_path):
    rows = diverse_rows()[:4]
    truth = [score_trace_response(**scorer_kwargs(r)) for r in rows]
    rows[0]["score"] = truth[0]["overall"]
    rows[1]["score"] = truth[1]["overall"] + 0.25  # drift
    rows[1]["acc"] = truth[1]["accuracy"]
    rows[2]["reward_extra_info"] = {
        "format": 1.0 - truth[2]["format"],
        "annotation_reward": truth[2]["annotation_reward"],
    }
    run = score_files(write_jsonl(tmp_path / "a.jsonl", rows), workers=1)
    table = run.table
    assert table["logged_overall"].iat[1] == pytest.approx(truth[1]["overall"] + 0.25)
    assert [None if pd.isna(v) else v for v in table["logged_mismatch"]][:3] == [None, "overall", "format"]
    report = run.logged_report().set_index("component")
    assert report.loc["overall", "rows_logged"] == 2 and report.loc["overall", "rows_differ"] == 1
    assert report.loc["overall", "first_differing_row"].endswith("a.jsonl:2")
    assert report.loc["accuracy", "rows_differ"] == 0
    assert report.loc["format", "rows_differ"] == 1
    assert logged_vs_recomputed(table, atol=1.0).set_index("component").loc["overall", "rows_differ"] == 0


def test_simple_scorer_rows(tmp_path):
    rows = [
        {"id": "a", "output": "so it is 72.", "gold": "#### 72", "reward": 1.0},
        {"id": "b", "output": "maybe 70", "gold": "#### 72", "reward": 1.0},
        {"id": "c", "output": "no number", "meta": {"gold": "5"}},
        {"id": "d", "output": "7", "gold": "no number here"},
    ]
    run = score_files(write_jsonl(tmp_path / "g.jsonl", rows), workers=1, scorer="last_number")
    table = run.table
    assert table["score"].tolist() == [1.0, 0.0, 0.0]
    assert table["solved"].tolist() == [True, False, False]
    assert table["scorer"].unique().tolist() == ["last_number"]
    assert np.isnan(table["overall"]).all()
    assert table["logged_score"].tolist()[:2] == [1.0, 1.0]
    assert table["logged_mismatch"].iat[1] == "score"
    (error,) = run.errors.itertuples()
    assert error.line == 4 and error.field == "gold"
    contains = score_files(
        write_jsonl(tmp_path / "h.jsonl", [{"output": "The Cat.", "answer": "cat"}]),
        workers=1,
        scorer="exact_match",
        normalise=False,
    )
    assert contains.table["score"].tolist() == [0.0]


def test_containers_give_the_same_table(tmp_path):
    rows = diverse_rows()
    reference = score_files(write_jsonl(tmp_path / "a.jsonl", rows), workers=1).table
    as_strings = pd.DataFrame(stringified(rows))
    as_strings.to_parquet(tmp_path / "a.parquet")
    as_strings.to_csv(tmp_path / "a.csv", index=False)
    (tmp_path / "a.json").write_text(json.dumps(rows), encoding="utf-8")
    write_jsonl(tmp_path / "a2.jsonl.gz", rows, gz=True)
    flat = [*FLAT_KEYS, "format_reason", "row_id", "task_id"]
    for name in ("a.parquet", "a.csv", "a.json", "a2.jsonl.gz"):
        table = score_files(tmp_path / name, workers=1).table
        pd.testing.assert_frame_equal(
            table[flat].reset_index(drop=True), reference[flat].reset_index(drop=True), check_dtype=False
        )


def test_runs_and_steps(tmp_path):
    a = write_jsonl(tmp_path / "ckpt_a.jsonl", diverse_rows()[:2])
    b = write_jsonl(tmp_path / "ckpt_b.jsonl", diverse_rows()[:3])
    one = score_files([a, b], workers=1).table
    assert set(one["run"]) == {tmp_path.name}
    separate = score_files([a, b], runs="separate", workers=1).table
    assert separate["run"].tolist() == ["ckpt_a"] * 2 + ["ckpt_b"] * 3
    labelled = score_files([a, b], runs={str(a): "early", str(b): "late"}, workers=1).table
    assert labelled["run"].tolist() == ["early"] * 2 + ["late"] * 3
    own = write_jsonl(tmp_path / "own.jsonl", [dict(diverse_rows()[0], run="mine")])
    assert score_files(own, workers=1).table["run"].tolist() == ["mine"]
    assert score_files(own, workers=1, run_label="forced").table["run"].tolist() == ["forced"]


def test_score_records_and_mapping(tmp_path):
    records = [
        {
            "text": r["response"],
            "truth": r["answer_gt"],
            "contract": r["reward_contract"],
            "annotation_gt": r.get("annotation_gt"),
        }
        for r in diverse_rows()[:3]
    ]
    mapping = ColumnMapping.of(response="text", answer_gt="truth", reward_contract="contract")
    run = score_records(records, mapping=mapping, name="upload")
    assert len(run.table) == 3 and run.table["source_file"].unique().tolist() == ["upload"]
    assert run.layouts["upload"].found["response"] == "text"


def test_instances_joined_to_responses(tmp_path):
    rows = diverse_rows()[:4]
    instances = [dict(r, id=f"inst{i}") for i, r in enumerate(rows)]
    for item in instances:
        item.pop("response")
    write_jsonl(tmp_path / "instances.jsonl", instances)
    responses = [
        {"instance_id": f"inst{i}", "response": r["response"], "sample_index": 0} for i, r in enumerate(rows)
    ]
    run = score_files(
        write_jsonl(tmp_path / "responses.jsonl", responses),
        instances=tmp_path / "instances.jsonl",
        workers=1,
    )
    assert len(run.errors) == 0
    for i, item in enumerate(rows):
        _assert_row_matches(run.table.iloc[i], score_trace_response(**scorer_kwargs(item)))
    assert set(run.table["joined"]) == {"id"}
    missing = score_files(
        write_jsonl(tmp_path / "r2.jsonl", [{"instance_id": "zzz", "response": "x"}]),
        instances=tmp_path / "instances.jsonl",
        workers=1,
    )
    assert "no instance matches" in missing.errors["reason"].iat[0]


def test_options_dataclass_round_trip():
    options = BatchOptions(format_weight=0.1).validated()
    assert options.scorer_options()["format_weight"] == 0.1


def test_simple_scorer_options_reach_the_factory():
    signed = BatchOptions(scorer="last_number", reading="signed").validated()
    rows = [{"id": "a", "gold": "-18", "output": "-$18"}, {"id": "b", "gold": "18", "output": "-$18"}]
    assert score_records(rows, options=signed).table["score"].tolist() == [1.0, 0.0]
    assert score_records(rows, options=BatchOptions(scorer="last_number")).table["score"].tolist() == [0.0, 1.0]
    # last_number keeps its own tolerance (0): the run-wide tolerance is numeric_close's
    close = [{"id": "c", "gold": "100", "output": "99.5"}]
    assert score_records(close, options=BatchOptions(scorer="last_number")).table["score"].tolist() == [0.0]
    assert score_records(close, options=BatchOptions(scorer="numeric_close")).table["score"].tolist() == [1.0]
    with pytest.raises(ValueError, match="reading"):
        BatchOptions(scorer="numeric_close", reading="rounded").validated()


def test_sample_rollouts_with_errors():
    expected = json.loads((SAMPLE / "rollouts_with_errors.expected.json").read_text())
    run = score_files(SAMPLE / "rollouts_with_errors.jsonl", workers=1)
    errors = run.errors
    by_line = {int(e.line): e for e in errors.itertuples()}
    for case in expected:
        if case["valid_input"]:
            assert case["line"] not in by_line
            assert case["line"] in set(run.table["source_line"])
        else:
            assert case["line"] in by_line, case
            if case["field"] and case["kind"] != "unknown_annotation_type":
                assert by_line[case["line"]].field == case["field"]
    assert {int(e.line) for e in errors.itertuples() if e.severity == "warning"} == {23, 27}


def test_progress_of_in_memory_records():
    seen = []
    run = score_records(diverse_rows() * 3, chunk_rows=4, progress=seen.append)
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert 0 < fractions[0] < 1
    assert seen[-1].rows == len(run.table)


def test_row_kwargs_are_exact_for_weights_that_do_not_normalise_exactly(tmp_path):
    options = {"answer_weight": 0.1, "annotation_weight": 0.3, "format_weight": 0.3}
    table = score_files(write_jsonl(tmp_path / "a.jsonl", diverse_rows()), workers=1, **options).table
    assert (
        0.1 / 0.4 + 0.3 / 0.4 != 1.0 or 0.1 / (0.1 + 0.3) + 0.3 / (0.1 + 0.3) != 1.0
    )  # the case this guards
    for index in table.index:
        _assert_row_matches(table.loc[index], score_trace_response(**row_kwargs(table.loc[index])))
    from scoring.runs import reweight

    again = reweight(table, answer_weight=0.7, annotation_weight=2.3)
    for index in again.index:
        _assert_row_matches(again.loc[index], score_trace_response(**row_kwargs(again.loc[index])))


def test_flat_results_list_the_fixed_keys_first_in_table_order():
    """Every flat result starts with FLAT_KEYS, in that order, whatever the annotation family
    or failure (the table's column order, and training logs that read the keys in order)."""
    records = diverse_rows() + [json.loads(line) for line in (SAMPLE / "rollouts_ckpt-A.jsonl").open()]
    seen_types = set()
    for record in records:
        kwargs = scorer_kwargs(record) if "response" in record else None
        if kwargs is None:
            continue
        flat = score_trace_response(**kwargs)
        assert list(flat)[: len(FLAT_KEYS)] == list(FLAT_KEYS)
        seen_types.add((record.get("annotation_gt") or {}).get("type"))
    assert len(seen_types) >= 8  # the check ran across the annotation families


@given(st.lists(st.floats(allow_nan=True, width=32), min_size=1, max_size=20), st.booleans())
def test_the_mismatch_of_the_columns_it_reads_is_the_mismatch_of_the_whole_table(values, with_format):
    """``mismatch_inputs`` names every column ``with_logged_mismatch`` reads: a table written a
    column at a time computes it from those alone, and gets the whole table's."""
    n = len(values)
    rng = np.random.default_rng(n)
    table = pd.DataFrame({
        "score": np.asarray(values, dtype=np.float64), "format": rng.random(n),
        "overall": np.where(rng.random(n) < 0.3, np.nan, rng.random(n)),  # a simple row's: its score is compared
        "accuracy": rng.random(n), "logged_overall": np.asarray(values, dtype=np.float64)[::-1].copy(),
        "logged_accuracy": rng.random(n), "logged_missing": rng.random(n),
    })  # fmt: skip
    if with_format:
        table["logged_format"] = table["format"].to_numpy() + 1e-9
    names = list(table.columns)
    assert set(runs.mismatch_inputs(names)) == set(names) - {"format"} | ({"format"} if with_format else set())
    whole = runs.with_logged_mismatch(table.copy(), 1e-6)[runs.MISMATCH_COLUMN]
    alone = runs.with_logged_mismatch(table[runs.mismatch_inputs(names)].copy(), 1e-6)[runs.MISMATCH_COLUMN]
    pd.testing.assert_series_equal(alone, whole)
