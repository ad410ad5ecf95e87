"""scoring.datasets's write path: inputs scored in groups, their parts written on threads while the
next group is scored, the inputs' digests read on threads (a new input's while it is scored) -- the
dataset always equals score_files."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store import SAMPLE, SAMPLE_FILES, assert_dataset_equals, split_sample

from scoring import datasets, engines
from scoring.datasets import parts as dataset_parts
from scoring.datasets import plan
from scoring.datasets import plan as dataset_plan
from scoring.engines import local as local_engine
from scoring.runs import pipeline, streaming


def inputs_of_every_size(folder: Path) -> list[Path]:
    """Inputs of every kind (sample files from 20 KB to 900 KB) and pieces of one run."""
    return [*SAMPLE_FILES, *split_sample(folder, pieces=3)]


def bounded_batches(monkeypatch, rows: int, text_bytes: int = 1 << 40) -> None:
    """Stream every input in batches of at most ``rows`` rows (or ``text_bytes`` of text)."""
    monkeypatch.setattr(streaming, "STREAM_BATCH_ROWS", rows)
    monkeypatch.setattr(streaming, "STREAM_BATCH_BYTES", text_bytes)


def row_groups(directory: Path) -> list[int]:
    """Row groups of each numbers part of a dataset (one per batch written)."""
    return [
        pq.ParquetFile(directory / datasets.PARTS / entry["part"]).num_row_groups
        for entry in datasets.read_manifest(directory)["files"]
        if entry["part"]
    ]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    group_rows=st.integers(0, 700),
    batch_rows=st.integers(1, 700),
    text_bytes=st.sampled_from([1, 5_000, 1 << 40]),
    chunk_rows=st.sampled_from([None, 1, 7, 64]),
    ahead=st.integers(1, 3),
)
def test_any_grouping_and_any_batch_bound_give_the_dataset_score_files_gives(
    tmp_path_factory, monkeypatch, group_rows, batch_rows, text_bytes, chunk_rows, ahead
):
    folder = tmp_path_factory.mktemp("groups")
    inputs = inputs_of_every_size(folder / "data")
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", group_rows)  # from one input per group to all in one
    monkeypatch.setattr(dataset_parts.PartWriter, "ahead", ahead)
    bounded_batches(monkeypatch, batch_rows, text_bytes)
    groups = datasets.input_groups(list(range(len(inputs))), inputs)
    update = engines.score_to_dataset(inputs, folder / "ds", workers=1, chunk_rows=chunk_rows)
    assert [p for group in groups for p in group] == list(range(len(inputs)))
    assert update.new == [str(p) for p in inputs] and update.rows_scored == update.rows
    assert_dataset_equals(folder / "ds", inputs)


def test_a_big_input_streamed_in_tiny_batches_equals_it_written_whole(tmp_path, monkeypatch):
    inputs = SAMPLE_FILES
    whole = engines.score_to_dataset(inputs, tmp_path / "whole", workers=1)
    assert all(groups == 1 for groups in row_groups(tmp_path / "whole"))  # each input in one batch
    bounded_batches(monkeypatch, 5)
    streamed = engines.score_to_dataset(inputs, tmp_path / "streamed", workers=1, chunk_rows=3)
    assert max(row_groups(tmp_path / "streamed")) > 20  # written batch by batch
    assert (streamed.rows, streamed.errors, streamed.warnings) == (whole.rows, whole.errors, whole.warnings)
    entries = [datasets.read_manifest(tmp_path / name)["files"] for name in ("whole", "streamed")]
    for kept, batched in zip(*entries, strict=True):  # the same counts, the distinct values' too
        assert {k: kept[k] for k in ("rows", "errors", "warnings", "distinct")} == {
            k: batched[k] for k in ("rows", "errors", "warnings", "distinct")
        }
    for compact in (False, True):
        a = datasets.open_dataset(tmp_path / "whole", compact=compact)
        b = datasets.open_dataset(tmp_path / "streamed", compact=compact)
        pd.testing.assert_frame_equal(a.table, b.table)
        pd.testing.assert_frame_equal(a.errors, b.errors)
        pd.testing.assert_frame_equal(
            datasets.row_text(a, range(len(a.table))), datasets.row_text(b, range(len(b.table)))
        )
    assert_dataset_equals(tmp_path / "streamed", inputs)


def test_a_column_that_only_later_rows_bring_joins_the_batches_before_it(tmp_path, monkeypatch):
    """Logged rewards that start part-way through a file: the batches before them had no such
    column, so the part is written in segments and joined, each missing value null."""
    lines = (SAMPLE / "rollouts_ckpt-A.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    for number, record in enumerate(records):
        if number < 30:  # the layout still finds them: its sample reaches line 32
            for logged in ("acc", "format", "score"):
                record.pop(logged)
        else:
            record["reward_extra_info"] = {"answer_reward": number / 1000}
    path = tmp_path / "late.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    bounded_batches(monkeypatch, 10)
    joined, segments = dataset_parts.InputParts._joined_segments, []

    def counted(parts):
        segments.append(len(parts.segments))
        return joined(parts)

    monkeypatch.setattr(dataset_parts.InputParts, "_joined_segments", counted)
    engines.score_to_dataset([path], tmp_path / "ds", workers=1, chunk_rows=10)
    assert segments == [2]  # the batches before line 31, and those from it
    opened = datasets.open_dataset(tmp_path / "ds", compact=False)
    late = ["logged_accuracy", "logged_answer_reward", "logged_format", "logged_overall"]
    assert [c for c in opened.table.columns if c.startswith("logged_") and c != "logged_mismatch"] == late
    assert opened.table[late].iloc[:30].isna().all().all() and opened.table[late].iloc[30:].notna().all().all()
    assert_dataset_equals(tmp_path / "ds", [path])
    assert not [p for p in (tmp_path / "ds" / datasets.PARTS).iterdir() if p.name.startswith(".")]


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(st.text(max_size=6), max_size=40), max_size=6))
def test_distinct_values_counted_batch_by_batch_are_the_inputs_distinct_values(batches):
    count = datasets.DistinctCount()
    for batch in batches:
        count.add(pa.array(list(dict.fromkeys(batch)), pa.large_string()))  # a batch's dictionary
    assert count.count() == len({value for batch in batches for value in batch})
    assert count.entries == sum(len(set(batch)) for batch in batches)  # what opening decodes


def test_an_inputs_batches_are_written_on_a_thread_while_the_next_are_scored(tmp_path, monkeypatch):
    (path,) = split_sample(tmp_path / "data", pieces=1)
    bounded_batches(monkeypatch, 20)
    next_scored = threading.Event()
    write = dataset_parts.InputParts.add_rows
    events = []

    def scored(progress):  # a report after each chunk of 20 rows, from the thread that scores
        events.append(("scored", progress.rows, threading.current_thread().name))
        if progress.rows >= 40:  # the next batch (at most one waits to be written)
            next_scored.set()

    def slow_write(parts, frame):
        if not next_scored.is_set():
            assert next_scored.wait(timeout=60)  # the first batch is written once later ones are scored
        events.append(("written", len(frame), threading.current_thread().name))
        return write(parts, frame)

    monkeypatch.setattr(dataset_parts.InputParts, "add_rows", slow_write)
    engines.score_to_dataset([path], tmp_path / "ds", workers=1, chunk_rows=20, progress=scored)
    main = threading.current_thread().name
    kinds = [what for what, _, _ in events]
    assert kinds[:2] == ["scored"] * 2 and kinds.index("written") >= 2
    assert all(thread == main for what, _, thread in events if what == "scored")
    assert all(thread.startswith("rolloutscope-parts") for what, _, thread in events if what == "written")
    assert_dataset_equals(tmp_path / "ds", [path])


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_write_failing_on_a_thread_surfaces_and_leaves_the_previous_dataset_whole(
    tmp_path, monkeypatch, failure
):
    inputs = split_sample(tmp_path / "data", pieces=4)
    ds = tmp_path / "ds"
    engines.score_to_dataset(inputs[:2], ds, workers=1)
    manifest = (ds / datasets.MANIFEST).read_bytes()
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", 0)  # one input per group: the failure comes while others score
    bounded_batches(monkeypatch, 10)
    write = dataset_parts.InputParts.add_rows
    started, ended, failed_on = [], [], []

    def failing(parts, frame):
        started.append(parts.name)
        try:
            if parts.name.endswith("-00002"):  # the first of the two new inputs
                failed_on.append(threading.current_thread().name)
                raise failure
            return write(parts, frame)
        finally:
            ended.append(parts.name)

    monkeypatch.setattr(dataset_parts.InputParts, "add_rows", failing)
    with pytest.raises(type(failure)):
        engines.score_to_dataset(inputs, ds, workers=1)
    assert failed_on and failed_on[0].startswith("rolloutscope-parts")  # it failed on a writer thread
    assert sorted(started) == sorted(ended)  # and no thread still writes once the call has returned
    assert (ds / datasets.MANIFEST).read_bytes() == manifest
    assert not [p for p in (ds / datasets.PARTS).iterdir() if p.name.startswith(".")]  # no temporary left
    assert_dataset_equals(ds, inputs[:2])
    monkeypatch.setattr(dataset_parts.InputParts, "add_rows", write)
    update = engines.score_to_dataset(inputs, ds, workers=1)
    assert update.unchanged == [str(p) for p in inputs[:2]] and update.new == [str(p) for p in inputs[2:]]
    named = {
        n for e in datasets.read_manifest(ds)["files"] for n in (e["part"], e["text_part"], e["errors_part"])
    }
    named.add(datasets.read_manifest(ds)["run_errors"])
    assert {p.name for p in (ds / datasets.PARTS).iterdir()} == named  # what the failed call wrote is gone
    assert_dataset_equals(ds, inputs)


def test_progress_is_reported_from_the_caller_thread_through_every_group(tmp_path, monkeypatch):
    inputs = split_sample(tmp_path / "data", pieces=3)
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", 0)  # one input per group
    seen = []
    update = engines.score_to_dataset(
        inputs, tmp_path / "ds", workers=1, progress=lambda p: seen.append((p, threading.current_thread()))
    )
    assert {thread for _, thread in seen} == {threading.current_thread()}
    assert [p.file for p, _ in seen if p.file] == sorted((p.file for p, _ in seen if p.file), key=str)
    assert {p.file for p, _ in seen if p.file} == {str(p) for p in inputs}
    finished = [p for p, _ in seen if not p.file]  # each group's last report: the groups' rows so far
    sizes = [p.stat().st_size for p in inputs]
    assert len(finished) == len(inputs) and finished[-1].rows == update.rows
    assert [p.bytes_done for p in finished] == [sum(sizes[: i + 1]) for i in range(len(inputs))]
    assert all(p.bytes_total == sum(sizes) and p.files_total == len(inputs) for p, _ in seen)
    assert [p.files_done for p in finished] == [1, 2, 3] and finished[-1].rows_expected == update.rows
    rows = [p.rows for p, _ in seen]
    assert rows == sorted(rows)  # counted through every group, never from zero again


# --------------------------------------------------------------------------- digests


@settings(max_examples=30, deadline=None)
@given(
    positions=st.lists(st.integers(0, 50), unique=True, max_size=12),
    unreadable=st.sets(st.integers(0, 50)),
    threads=st.integers(1, 4),
)
def test_digests_on_threads_are_each_inputs_own_and_none_when_unreadable(positions, unreadable, threads):
    calls = []

    def digest(position: int) -> str:
        calls.append(position)
        if position in unreadable:
            raise OSError(f"cannot read {position}")
        return f"sha-{position}"

    original = pipeline.available_cpus
    pipeline.available_cpus = lambda: threads
    try:
        got = plan._digests(digest, positions)
    finally:
        pipeline.available_cpus = original
    assert got == {p: None if p in unreadable else f"sha-{p}" for p in positions}
    assert sorted(calls) == sorted(positions)  # each read once


def test_a_new_inputs_digest_is_read_while_its_group_is_scored_not_before(tmp_path, monkeypatch):
    inputs = split_sample(tmp_path / "data", pieces=3)
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", 0)  # one input per group
    scoring_began = {str(p): threading.Event() for p in inputs}
    digest, score = datasets.file_digest, streaming.stream_inputs
    waited = {}

    def digest_once_scored(path):
        # a digest read before its input's group is scored (the plan's) would wait in vain
        waited[str(path)] = scoring_began[str(path)].wait(timeout=30)
        return digest(path)

    def scoring(group_inputs, *args, **kwargs):
        for item in group_inputs:
            scoring_began[item.display].set()
        return score(group_inputs, *args, **kwargs)

    monkeypatch.setattr(local_engine, "file_digest", digest_once_scored)
    monkeypatch.setattr(local_engine, "stream_inputs", scoring)
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    assert waited == {str(p): True for p in inputs}
    entries = datasets.read_manifest(tmp_path / "ds")["files"]
    assert [e["digest"] for e in entries] == [digest(p) for p in inputs]
    assert_dataset_equals(tmp_path / "ds", inputs)
    monkeypatch.setattr(local_engine, "file_digest", digest)
    again = engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)  # every digest recorded: unchanged
    assert again.unchanged == [str(p) for p in inputs] and again.rows_scored == 0


def test_a_new_input_that_cannot_be_read_is_recorded_without_a_digest(tmp_path, monkeypatch):
    inputs = split_sample(tmp_path / "data", pieces=2)
    unreadable = str(inputs[1])
    digest = datasets.file_digest

    def failing(path):
        if str(path) == unreadable:
            raise PermissionError(13, "Permission denied")
        return digest(path)

    monkeypatch.setattr(local_engine, "file_digest", failing)
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    entries = datasets.read_manifest(tmp_path / "ds")["files"]
    assert [e["digest"] for e in entries] == [digest(inputs[0]), None]
    monkeypatch.setattr(local_engine, "file_digest", digest)
    status = inputs[1].stat()
    os.utime(inputs[1], ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    again = engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)  # no digest to compare: scored again
    assert again.unchanged == [str(inputs[0])] and again.changed == [unreadable]


def test_only_inputs_whose_size_or_mtime_changed_are_read_for_their_digest(tmp_path):
    inputs = split_sample(tmp_path / "data", pieces=4)
    ds = tmp_path / "ds"
    engines.score_to_dataset(inputs, ds, workers=1)
    status = inputs[1].stat()
    os.utime(inputs[1], ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))  # touched
    inputs[2].write_text(inputs[2].read_text(encoding="utf-8")[:-200], encoding="utf-8")  # changed
    read = []

    def digest(position: int) -> str:
        read.append(position)
        return datasets.file_digest(inputs[position])

    manifest = datasets.read_manifest(ds)
    plan = datasets.plan_update(
        [str(p) for p in inputs],
        inputs,
        ds,
        stat=lambda i: datasets.input_stat(inputs[i]),
        digest=digest,
        record=manifest["options"],
        runs="one",
        run_label=None,
        started=0.0,
    )
    assert sorted(read) == [1, 2]
    assert plan.to_score == [2] and plan.report.changed == [str(inputs[2])]
    assert plan.report.unchanged == [str(inputs[0]), str(inputs[1]), str(inputs[3])]
    assert plan.entries[2]["digest"] == datasets.file_digest(inputs[2])
    assert plan.entries[1]["mtime_ns"] == inputs[1].stat().st_mtime_ns  # the touched input's new mtime


def test_text_repeated_only_epochs_apart_is_left_on_disk_not_decoded_whole(tmp_path, monkeypatch):
    """An input that repeats its instances epoch after epoch, written in batches of an epoch: each
    batch's dictionary holds every value again, and opening would decode them all to hold a fifth
    of them, so the column stays on disk; written as one batch, the same rows' values repeat
    within it and are held. Either way the values read are the rows'."""
    monkeypatch.setattr(dataset_plan, "RESIDENT_ALWAYS_MAX", 0)  # the rule alone decides, at any size
    contract = {"reward_contract_version": "v0", "answer": {"id": "answer_exact_match_v0", "type": "integer"},
                "annotation": {"id": "bbox_soft_iou_v0", "type": "bbox"}}  # fmt: skip
    epoch_rows = 40
    epoch = [
        {"id": f"r{i}", "response": f'{{"answer": {i % 3}, "annotation": [1, 2, 30, 40]}}',
         "answer_gt": {"type": "integer", "value": i}, "annotation_gt": {"type": "bbox", "value": [i, 2, 50, 60]},
         "reward_contract": contract, "trace_output_mode": "answer"}
        for i in range(epoch_rows)
    ]  # fmt: skip
    run = tmp_path / "epochs.jsonl"
    run.write_text("".join(json.dumps(record) + "\n" for record in epoch) * 5, encoding="utf-8")
    whole = tmp_path / "whole"
    engines.score_to_dataset([run], whole, workers=1)
    bounded_batches(monkeypatch, epoch_rows)
    batched = tmp_path / "batched"
    engines.score_to_dataset([run], batched, workers=1, chunk_rows=epoch_rows)  # a batch per epoch
    (one,), (many,) = (datasets.read_manifest(d)["files"] for d in (whole, batched))
    kwargs_distinct = one["distinct"]["scorer_kwargs"]
    assert many["distinct"]["scorer_kwargs"] == kwargs_distinct
    assert one["dictionary_entries"]["scorer_kwargs"] == kwargs_distinct  # one batch: each value once
    assert many["dictionary_entries"]["scorer_kwargs"] == 5 * kwargs_distinct  # each epoch's batch again
    assert kwargs_distinct * datasets.RESIDENT_MIN_REPEATS <= one["rows"] < 5 * kwargs_distinct * datasets.RESIDENT_MIN_REPEATS
    held, left = datasets.open_dataset(whole), datasets.open_dataset(batched)
    assert "scorer_kwargs" not in held.on_disk and "scorer_kwargs" in left.on_disk
    assert "scorer_kwargs" in held.table.columns and "scorer_kwargs" not in left.table.columns
    assert (
        datasets.read_columns(left, ["scorer_kwargs"])["scorer_kwargs"].astype(object).tolist()
        == held.table["scorer_kwargs"].astype(object).tolist()
    )
    older = {"files": [{k: v for k, v in many.items() if k != "dictionary_entries"}]}  # before the count
    assert "scorer_kwargs" not in datasets.text_on_disk(older)  # its distinct count decides, as it did
