"""scoring.datasets.snapshot: a compact table saved and mapped back is the same table, bit for bit,
its shared arrays still shared; open_dataset keeps one per dataset and uses it only while the
dataset, the code and the text left on disk are the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from rollout_fixtures import patch_code_version
from test_store import SAMPLE_FILES, assert_same_values, batch_like_tables, split_sample

from scoring import datasets, engines
from scoring.datasets import open as dataset_open
from scoring.datasets import snapshot
from scoring.datasets import table as dataset_table


def assert_same_table(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Same values bit for bit, same dtypes (categories' included), the same bytes held."""
    assert list(got.columns) == list(expected.columns) and got.attrs == expected.attrs
    assert list(got.dtypes) == list(expected.dtypes)
    for name in expected.columns:
        if isinstance(expected[name].dtype, pd.CategoricalDtype):
            assert got[name].cat.categories.dtype == expected[name].cat.categories.dtype, name
    assert_same_values(datasets.widened(got), datasets.widened(expected))
    held, want = datasets.held_bytes(got), datasets.held_bytes(expected)
    numbers = [isinstance(d, pd.SparseDtype) or d == np.float64 for d in expected.dtypes]
    other = [not n for n in numbers]
    assert held[numbers].tolist() == want[numbers].tolist()  # shared arrays still shared
    assert (held[other] <= want[other]).all()  # text: Arrow buffers without the slack of a build


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch_like_tables())
def test_any_compact_table_comes_back_the_same(tmp_path_factory, table):
    compact = datasets.compact_table(table)
    folder = tmp_path_factory.mktemp("snap") / "t"
    snapshot.save(compact, folder, meta={"what": [1, "x"]})
    loaded, meta = snapshot.load(folder)
    assert meta == {"what": [1, "x"]}
    assert_same_table(loaded, compact)
    read, _ = snapshot.load(folder, mapped=False)  # read and checked as a user's files: the same table
    assert_same_table(read, compact)


def test_an_empty_table_comes_back_empty(tmp_path):
    empty = datasets.open_dataset(_dataset(tmp_path, SAMPLE_FILES[-1:])).table  # no row has a ground truth
    assert len(empty) == 0 and len(empty.columns)
    snapshot.save(empty, tmp_path / "s")
    assert_same_table(snapshot.load(tmp_path / "s")[0], empty)


def test_the_arrays_are_mapped_read_only_not_copied(tmp_path):
    table = datasets.compact_table(pd.DataFrame({"score": np.linspace(0, 1, 1000), "solved": np.ones(1000, bool)}))
    snapshot.save(table, tmp_path / "s")
    loaded, _ = snapshot.load(tmp_path / "s")
    values = loaded["score"].to_numpy()
    assert not values.flags.writeable and not values.flags.owndata


def test_a_table_it_cannot_hold_is_refused_and_nothing_is_left(tmp_path):
    with pytest.raises(snapshot.SnapshotError, match="column odd: dtype object"):
        snapshot.save(pd.DataFrame({"odd": pd.Series([{"a": 1}, None], dtype=object)}), tmp_path / "s")
    with pytest.raises(snapshot.SnapshotError, match="indexed 0..n-1"):
        snapshot.save(pd.DataFrame({"x": [1.0, 2.0]}, index=[5, 6]), tmp_path / "s")
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_or_foreign_snapshot_is_refused(tmp_path):
    table = datasets.compact_table(pd.DataFrame({"score": np.linspace(0, 1, 100), "n": np.arange(100)}))
    snapshot.save(table, tmp_path / "s")
    layout = json.loads((tmp_path / "s" / snapshot.LAYOUT).read_text())

    def refused(changed: dict, match: str) -> None:
        (tmp_path / "s" / snapshot.LAYOUT).write_text(json.dumps(changed))
        with pytest.raises(snapshot.SnapshotError, match=match):
            snapshot.load(tmp_path / "s")

    refused({**layout, "version": 99}, "not a version 1 snapshot")
    refused({**layout, "rows": 101}, "100 values for 101 rows")
    outside = {**layout, "columns": [{**layout["columns"][0], "file": "../../etc/passwd"}]}
    refused(outside, "outside its folder")
    refused({**layout, "columns": [{**layout["columns"][0], "kind": "pickle"}]}, "unknown kind 'pickle'")
    (tmp_path / "s" / snapshot.LAYOUT).write_text(json.dumps(layout))
    first = tmp_path / "s" / layout["columns"][0]["file"]
    first.write_bytes(first.read_bytes()[:40])  # truncated
    with pytest.raises(snapshot.SnapshotError, match=first.name):
        snapshot.load(tmp_path / "s")
    assert snapshot.cached(tmp_path / "s") is None and not (tmp_path / "s").exists()  # removed, not reused


def _dataset(tmp_path: Path, inputs) -> Path:
    """A dataset without the table it may carry (test_stored_table.py): opened by decoding."""
    directory = tmp_path / "dataset"
    engines.score_to_dataset(inputs, directory, keep_table=False)
    return directory


def test_open_dataset_keeps_a_snapshot_and_opens_from_it_the_same_table(tmp_path, monkeypatch):
    directory = _dataset(tmp_path, SAMPLE_FILES)
    plain = datasets.open_dataset(directory)
    first = datasets.open_dataset(directory, snapshots=tmp_path / "snaps")
    assert_same_table(first.table, plain.table)
    assert len(list((tmp_path / "snaps").iterdir())) == 1

    def no_parquet(*args, **kwargs):
        raise AssertionError("the parts were read although a snapshot was kept")

    monkeypatch.setattr(dataset_table, "read_table", no_parquet)
    again = datasets.open_dataset(directory, snapshots=tmp_path / "snaps")
    assert_same_table(again.table, plain.table)
    pd.testing.assert_frame_equal(again.errors, plain.errors)
    assert again.manifest == plain.manifest and np.array_equal(again.starts, plain.starts)
    # a row's text and explanation read from disk are the same through the snapshot's table
    rows = [0, len(plain.table) // 2, len(plain.table) - 1]
    pd.testing.assert_frame_equal(datasets.rows_with_text(again, rows), datasets.rows_with_text(plain, rows))


def test_a_changed_dataset_other_text_on_disk_or_other_code_is_not_opened_from_an_old_snapshot(tmp_path, monkeypatch):
    pieces = split_sample(tmp_path / "in")
    directory = _dataset(tmp_path, pieces[:2])
    snaps = tmp_path / "snaps"
    datasets.open_dataset(directory, snapshots=snaps)
    engines.score_to_dataset(pieces, directory, keep_table=False)  # a file added
    grown = datasets.open_dataset(directory, snapshots=snaps)
    assert_same_table(grown.table, datasets.open_dataset(directory).table)
    assert len(list(snaps.iterdir())) == 1  # the dataset's older snapshot is gone

    every_text = (*datasets.STORED_TEXT_COLUMNS, *datasets.RESIDENT_TEXT_COLUMNS)
    assert_same_table(datasets.open_dataset(directory, on_disk=every_text, snapshots=snaps).table,
                      datasets.open_dataset(directory, on_disk=every_text).table)
    patch_code_version(monkeypatch, "other code")
    reads = []
    read_table = dataset_open.read_table
    monkeypatch.setattr(dataset_open, "read_table", lambda *a, **k: reads.append(1) or read_table(*a, **k))
    datasets.open_dataset(directory, snapshots=snaps)
    assert reads == [1]


def test_a_growing_run_opened_from_an_input_on_is_never_snapshotted(tmp_path):
    pieces = split_sample(tmp_path / "in")
    directory = _dataset(tmp_path, pieces)
    part = datasets.open_dataset(directory, inputs_from=1, snapshots=tmp_path / "snaps")
    assert_same_table(part.table, datasets.open_dataset(directory, inputs_from=1).table)
    assert not (tmp_path / "snaps").exists()


def test_only_the_most_recently_used_snapshots_are_kept(tmp_path):
    table = datasets.compact_table(pd.DataFrame({"score": np.linspace(0, 1, 10)}))
    folders = [snapshot.folder_for(tmp_path, f"place {i}", {"n": i}) for i in range(4)]
    for folder in folders[:3]:
        snapshot.keep(table, folder, kept=3)
    assert snapshot.cached(folders[0]) is not None  # used again: now the most recent
    snapshot.keep(table, folders[3], kept=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in (folders[0], folders[2], folders[3]))


def test_a_snapshot_that_cannot_be_written_leaves_the_open_as_it_was(tmp_path):
    directory = _dataset(tmp_path, SAMPLE_FILES[:2])
    blocked = tmp_path / "not a folder"
    blocked.write_text("")
    opened = datasets.open_dataset(directory, snapshots=blocked)
    assert_same_table(opened.table, datasets.open_dataset(directory).table)
    shutil.rmtree(directory)
