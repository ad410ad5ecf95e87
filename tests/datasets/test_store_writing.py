"""scoring.datasets's write path: inputs scored in groups, their parts written on threads while the
next group is scored, the inputs' digests read on threads (a new input's while it is scored) -- the
dataset always equals score_files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_store import SAMPLE_FILES, assert_dataset_equals, split_sample

from scoring import datasets, engines, runs
from scoring.datasets import parts as dataset_parts
from scoring.datasets import plan
from scoring.datasets import plan as dataset_plan
from scoring.engines import local as local_engine
from scoring.runs import pipeline


def inputs_of_every_size(folder: Path) -> list[Path]:
    """Inputs of every kind (sample files from 20 KB to 900 KB) and pieces of one run."""
    return [*SAMPLE_FILES, *split_sample(folder, pieces=3)]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(group_rows=st.integers(0, 700), threads=st.integers(1, 3))
def test_any_grouping_and_any_writer_threads_give_the_dataset_score_files_gives(
    tmp_path_factory, monkeypatch, group_rows, threads
):
    folder = tmp_path_factory.mktemp("groups")
    inputs = inputs_of_every_size(folder / "data")
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", group_rows)  # from one input per group to all in one
    monkeypatch.setattr(dataset_parts, "available_cpus", lambda: threads)
    groups = datasets.input_groups(list(range(len(inputs))), inputs)
    update = engines.score_to_dataset(inputs, folder / "ds", workers=1)
    assert [p for group in groups for p in group] == list(range(len(inputs)))
    assert update.new == [str(p) for p in inputs] and update.rows_scored == update.rows
    assert_dataset_equals(folder / "ds", inputs)


def test_parts_of_a_group_are_written_while_the_next_group_is_scored(tmp_path, monkeypatch):
    inputs = split_sample(tmp_path / "data", pieces=3)
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", 0)  # one input per group
    second_scored = threading.Event()
    write, score = dataset_parts.write_input_parts, pipeline.score_inputs
    events = []

    def slow_write(parts, name, frame, errors):
        if name.endswith("-00000"):  # the first input's parts wait until the next group is being scored
            assert second_scored.wait(timeout=60)
        events.append(("written", name[-1], threading.current_thread().name))
        return write(parts, name, frame, errors)

    def scoring(group_inputs, *args, **kwargs):
        events.append(("scoring", group_inputs[0].display[-7], threading.current_thread().name))
        if group_inputs[0].display.endswith("step_1.jsonl"):
            second_scored.set()
        return score(group_inputs, *args, **kwargs)

    monkeypatch.setattr(dataset_parts, "write_input_parts", slow_write)
    monkeypatch.setattr(local_engine, "score_inputs", scoring)
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    main = threading.current_thread().name
    assert [(what, which) for what, which, _ in events][:3] == [
        ("scoring", "0"),
        ("scoring", "1"),
        ("written", "0"),
    ]
    assert all(thread == main for what, _, thread in events if what == "scoring")
    assert all(thread.startswith("rolloutscope-parts") for what, _, thread in events if what == "written")
    assert_dataset_equals(tmp_path / "ds", inputs)


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_write_failing_on_a_thread_surfaces_and_leaves_the_previous_dataset_whole(
    tmp_path, monkeypatch, failure
):
    inputs = split_sample(tmp_path / "data", pieces=4)
    ds = tmp_path / "ds"
    engines.score_to_dataset(inputs[:2], ds, workers=1)
    manifest = (ds / datasets.MANIFEST).read_bytes()
    monkeypatch.setattr(dataset_plan, "GROUP_ROWS", 0)  # one input per group: the failure comes while others score
    write = dataset_parts._write_part
    started, ended, failed_on = [], [], []

    def failing(frame, parts, name):
        started.append(name)
        try:
            if name.endswith("-00002"):  # the first of the two new inputs
                failed_on.append(threading.current_thread().name)
                raise failure
            return write(frame, parts, name)
        finally:
            ended.append(name)

    monkeypatch.setattr(dataset_parts, "_write_part", failing)
    with pytest.raises(type(failure)):
        engines.score_to_dataset(inputs, ds, workers=1)
    assert failed_on and failed_on[0].startswith("rolloutscope-parts")  # it failed on a writer thread
    assert sorted(started) == sorted(ended)  # and no thread still writes once the call has returned
    assert (ds / datasets.MANIFEST).read_bytes() == manifest
    assert_dataset_equals(ds, inputs[:2])
    monkeypatch.setattr(dataset_parts, "_write_part", write)
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
    finished = [p for p, _ in seen if not p.file]  # each group's last report: all its rows
    assert len(finished) == len(inputs) and sum(p.rows for p in finished) == update.rows


# --------------------------------------------------------------------------- an input's rows


@pytest.fixture(scope="module")
def group_table() -> pd.DataFrame:
    """A group's table as the batch engine gives it: several inputs, logged columns only some have."""
    return runs.score_files(SAMPLE_FILES, workers=1).table


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_inputs_rows_are_its_rows_of_the_table_whether_or_not_they_lie_together(group_table, data):
    n = len(group_table)
    if data.draw(st.booleans(), label="together"):
        first = data.draw(st.integers(0, n - 1), label="first")
        rows = np.arange(first, data.draw(st.integers(first + 1, n), label="end"))
    else:
        rows = np.asarray(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1), label="rows")))
    got = dataset_parts.file_columns(group_table, rows)
    taken = group_table.iloc[rows].reset_index(drop=True)
    # the columns only other inputs brought (missing throughout these rows) are left out, no other
    left_out = [c for c in taken.columns if c not in got.columns]
    assert all(c not in runs.COLUMNS and taken[c].isna().all() for c in left_out)
    pd.testing.assert_frame_equal(got, taken.drop(columns=left_out))


def test_an_inputs_rows_that_lie_together_share_the_tables_arrays(group_table):
    numbers = group_table["score"].to_numpy()
    part = dataset_parts.file_columns(group_table, np.arange(10, 30))
    assert np.shares_memory(part["score"].to_numpy(), numbers)


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
    digest, score = datasets.file_digest, pipeline.score_inputs
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
    monkeypatch.setattr(local_engine, "score_inputs", scoring)
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    assert waited == {str(p): True for p in inputs}
    entries = datasets.read_manifest(tmp_path / "ds")["files"]
    assert [e["sha256"] for e in entries] == [digest(p) for p in inputs]
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
    assert [e["sha256"] for e in entries] == [digest(inputs[0]), None]
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
    assert plan.entries[2]["sha256"] == datasets.file_digest(inputs[2])
    assert plan.entries[1]["mtime_ns"] == inputs[1].stat().st_mtime_ns  # the touched input's new mtime
