"""The table a scored dataset carries (``DIR/table``, scoring.datasets.write_table): written as the
dataset is scored, opened instead of decoding the parts only while it is the table of the
dataset's manifest, code and text choice, and read as untrusted input -- never mapped, every
array checked, a damaged one refused and left where it is."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rollout_fixtures import patch_code_version
from test_store import SAMPLE_FILES, batch_like_tables, split_sample
from test_table_snapshot import assert_same_table

from scoring import datasets, engines
from scoring.cli import main
from scoring.datasets import open as dataset_open
from scoring.datasets import snapshot
from scoring.datasets import table as dataset_table
from scoring.datasets.parts import DICTIONARY

ROOT = Path(__file__).resolve().parents[2]


def decoded(directory: Path, **kwargs) -> pd.DataFrame:
    """The table open_dataset gives by decoding the parts (what the kept table must equal)."""
    return dataset_table.read_table(directory, datasets.read_manifest(directory),
                                    kwargs.get("on_disk") or datasets.text_on_disk(datasets.read_manifest(directory)), True)


def stored_folder(directory: Path) -> Path:
    [folder] = (directory / datasets.TABLE).iterdir()
    return folder


@pytest.fixture(scope="module")
def sample_dataset(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("stored") / "dataset"
    engines.score_to_dataset(SAMPLE_FILES, directory)
    return directory


def test_scoring_keeps_the_table_and_opening_reads_it_without_decoding(sample_dataset, tmp_path, monkeypatch):
    expected = decoded(sample_dataset)
    engines.score_to_dataset(SAMPLE_FILES, tmp_path / "plain", keep_table=False)
    plain = datasets.open_dataset(tmp_path / "plain")  # decoded
    assert_same_table(plain.table, expected)
    with monkeypatch.context() as patched:
        patched.setattr(dataset_table, "read_table", lambda *a, **k: pytest.fail("decoded"))
        opened = datasets.open_dataset(sample_dataset, snapshots=tmp_path / "snaps")
    assert_same_table(opened.table, expected)
    assert opened.table.attrs == {"scoring_options": opened.manifest["options"]["scoring"]}
    rows = [0, len(expected) // 2, len(expected) - 1]
    pd.testing.assert_frame_equal(datasets.rows_with_text(opened, rows), datasets.rows_with_text(plain, rows))
    assert _mapped_from(opened.table["score"]) is None  # the dataset's folder is a user's: read, never mapped

    # kept in this process's own snapshots folder on a background thread: the next open maps it
    assert snapshot.wait_kept(timeout=60)
    assert len(list((tmp_path / "snaps").iterdir())) == 1
    with monkeypatch.context() as patched:
        patched.setattr(dataset_table, "read_table", lambda *a, **k: pytest.fail("decoded"))
        patched.setattr(dataset_open, "_stored_table", lambda *a, **k: pytest.fail("the dataset's table read again"))
        again = datasets.open_dataset(sample_dataset, snapshots=tmp_path / "snaps")
    assert_same_table(again.table, expected)
    assert again.table.attrs == opened.table.attrs
    assert _mapped_from(again.table["score"]).startswith(str(tmp_path / "snaps"))
    pd.testing.assert_frame_equal(datasets.rows_with_text(again, rows), datasets.rows_with_text(plain, rows))


def _mapped_from(column: pd.Series) -> str | None:
    """The file a column's values are memory-mapped from (per /proc/self/maps), or None when
    they are in this process's own memory."""
    address = column.to_numpy().__array_interface__["data"][0]
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        if low <= address < high:
            return fields[5] if len(fields) == 6 and fields[5].startswith("/") else None
    return None


def test_the_snapshot_kept_later_holds_the_table_as_opened_whatever_the_caller_does_next(sample_dataset, tmp_path):
    expected = decoded(sample_dataset)
    opened = datasets.open_dataset(sample_dataset, snapshots=tmp_path / "snaps")
    table = opened.table
    table["score"] = -1.0  # what a caller does with its table right away, while the snapshot is written
    table["run"] = table["run"].cat.rename_categories(lambda name: f"renamed {name}")
    table.index = pd.Index([f"row {i}" for i in range(len(table))])
    table.attrs["scoring_options"] = {"changed": True}
    assert snapshot.wait_kept(timeout=60)
    again = datasets.open_dataset(sample_dataset, snapshots=tmp_path / "snaps")
    assert_same_table(again.table, expected)
    assert again.table.attrs == {"scoring_options": again.manifest["options"]["scoring"]}


def test_an_unchanged_recheck_keeps_the_table_as_it_is(sample_dataset):
    folder = stored_folder(sample_dataset)
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    update = engines.score_to_dataset(SAMPLE_FILES, sample_dataset)
    assert update.rows_scored == 0 and datasets.write_table(sample_dataset) == folder
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before


def test_a_table_of_another_manifest_code_or_text_choice_is_never_used(tmp_path, monkeypatch):
    pieces = split_sample(tmp_path / "in")
    directory = tmp_path / "dataset"
    engines.score_to_dataset(pieces[:2], directory)
    old = stored_folder(directory)
    engines.score_to_dataset(pieces, directory, keep_table=False)  # grown, its table not rebuilt
    assert stored_folder(directory) == old
    assert_same_table(datasets.open_dataset(directory).table, decoded(directory))  # the old one is not read
    engines.score_to_dataset(pieces, directory)  # kept again: the stale one goes
    assert stored_folder(directory) != old
    every_text = (*datasets.STORED_TEXT_COLUMNS, *datasets.RESIDENT_TEXT_COLUMNS)
    expected = decoded(directory, on_disk=every_text)
    reads = []
    read_table = dataset_open.read_table
    monkeypatch.setattr(dataset_open, "read_table", lambda *a, **k: reads.append(1) or read_table(*a, **k))
    datasets.open_dataset(directory)
    assert reads == []
    assert_same_table(datasets.open_dataset(directory, on_disk=every_text).table, expected)
    assert reads == [1]
    patch_code_version(monkeypatch, "other code")
    datasets.open_dataset(directory)
    assert reads == [1, 1]


def test_auto_keeps_the_table_only_when_the_update_scored_at_least_half_the_rows(tmp_path, monkeypatch):
    pieces = split_sample(tmp_path / "in", pieces=4)
    directory = tmp_path / "dataset"
    first = engines.score_to_dataset(pieces[:3], directory, keep_table=engines.KEEP_TABLE_AUTO)
    kept = stored_folder(directory)  # a first scoring: every row
    grown = engines.score_to_dataset(pieces, directory, keep_table=engines.KEEP_TABLE_AUTO)
    assert 0 < grown.rows_scored * 2 < grown.rows and stored_folder(directory) == kept  # a step file: left stale
    assert_same_table(datasets.open_dataset(directory).table, decoded(directory))  # and not read
    patch_code_version(monkeypatch, "other code")  # everything rescored: kept anew
    again = engines.score_to_dataset(pieces, directory, keep_table=engines.KEEP_TABLE_AUTO)
    assert again.rows_scored == again.rows > first.rows and stored_folder(directory) != kept
    monkeypatch.setattr(dataset_table, "read_table", lambda *a, **k: pytest.fail("decoded"))
    assert len(datasets.open_dataset(directory).table) == again.rows


def test_the_command_line_and_an_empty_dataset_keep_their_table(tmp_path, monkeypatch):
    out, empty = tmp_path / "out", tmp_path / "empty"
    assert main(["score", str(SAMPLE_FILES[0]), "-o", f"{out}/"]) == 0
    engines.score_to_dataset([SAMPLE_FILES[-1]], empty)  # no row has a ground truth
    monkeypatch.setattr(dataset_table, "read_table", lambda *a, **k: pytest.fail("decoded"))
    assert len(datasets.open_dataset(out).table) > 0
    assert len(datasets.open_dataset(empty).table) == 0
    assert main(["score", str(SAMPLE_FILES[0]), "-o", f"{tmp_path / 'bare'}/", "--no-table", "-q"]) == 0
    assert datasets.is_dataset(tmp_path / "bare") and not (tmp_path / "bare" / datasets.TABLE).exists()


@pytest.mark.parametrize("group", [1, 2, 6, 1000])
def test_the_kept_table_is_written_a_column_group_at_a_time_never_held_whole(sample_dataset, tmp_path, monkeypatch, group):
    """Whatever the size of a column group, the table written group by group (each group's float
    columns compared with earlier ones read back from the snapshot, never kept) is the decoded
    table: values, dtypes, shared arrays, order, ``logged_mismatch`` and attributes."""
    monkeypatch.setattr(dataset_table, "COLUMN_GROUP", group)
    directory = tmp_path / "dataset"
    engines.score_to_dataset(SAMPLE_FILES, directory, keep_table=False)
    compactors = []
    original = dataset_table.TableCompactor

    def watched(*args, **kwargs):
        compactors.append(original(*args, **kwargs))
        return compactors[-1]

    monkeypatch.setattr(dataset_table, "TableCompactor", watched)
    datasets.write_table(directory)
    [compactor] = compactors
    assert compactor.recall is not None
    kept = [entry[0] for same in compactor.held.values() for entry in same if entry[1] is not None]
    assert len(kept) <= group  # of the float columns, only the last group's are still held
    layout = _layout(stored_folder(directory))
    names = [entry["name"] for entry in layout["columns"]]
    assert all(entry["as"] in names[: names.index(entry["name"])] for entry in layout["columns"]
               if entry["kind"] == "same")  # fmt: skip
    assert sum(entry["kind"] == "same" for entry in layout["columns"]) >= 2  # the sample's equal rewards shared
    monkeypatch.setattr(dataset_table, "TableCompactor", original)
    expected = decoded(directory)
    monkeypatch.setattr(dataset_table, "read_table", lambda *a, **k: pytest.fail("decoded"))
    opened = datasets.open_dataset(directory)
    assert_same_table(opened.table, expected)
    assert opened.table.attrs == expected.attrs
    assert opened.table["logged_mismatch"].notna().any()  # the sample logs rewards that differ


def test_columns_sharing_an_array_are_laid_out_so_each_follows_the_one_it_shares(tmp_path):
    """A snapshot written a column at a time, then put in another order: of columns sharing one
    array, whichever comes first holds it."""
    values = np.array([0.5, -0.0, np.nan])
    with snapshot.SnapshotWriter(tmp_path / "snap", 3) as writer:
        writer.add("score", pd.Series(values))
        writer.add_same("overall", "score")
        writer.add("flag", pd.Series(np.array([True, False, True])))
        folder = writer.finish(["flag", "overall", "score"], {"scoring_options": {}})
    table, _ = snapshot.load(folder)
    assert list(table.columns) == ["flag", "overall", "score"]
    assert [entry["kind"] for entry in _layout(folder)["columns"]] == ["numpy", "numpy", "same"]
    assert table["overall"] is table["score"] or np.shares_memory(table["overall"].to_numpy(), table["score"].to_numpy())
    np.testing.assert_array_equal(table["score"].to_numpy().view(np.uint64), values.view(np.uint64))
    with pytest.raises(snapshot.SnapshotError), snapshot.SnapshotWriter(tmp_path / "other", 3) as writer:
        writer.add("score", pd.Series(values))
        writer.finish(["score", "missing"], {})
    assert not (tmp_path / "other").exists() and not list(tmp_path.glob(".other*"))  # nothing left behind


# --------------------------------------------------------------------------- a user's files, untrusted


def _layout(folder: Path) -> dict:
    return json.loads((folder / snapshot.LAYOUT).read_text())


def _entry(folder: Path, kind: str) -> dict:
    return next(e for e in _layout(folder)["columns"] if e["kind"] == kind)


def _rewrite_layout(folder: Path, change) -> None:
    layout = _layout(folder)
    change(layout)
    (folder / snapshot.LAYOUT).write_text(json.dumps(layout))


def _codes_out_of_range(folder: Path) -> None:
    entry = _entry(folder, "categorical")
    codes = snapshot._arrays(folder, entry["file"], True).column("codes").to_numpy()
    snapshot._write_arrays(folder / entry["file"], {"codes": np.full_like(codes, np.iinfo(codes.dtype).max)})


def _sparse_positions_out_of_range(folder: Path) -> None:
    entry = _entry(folder, "sparse")
    arrays = snapshot._arrays(folder, entry["file"], True)
    indices = arrays.column("indices").to_numpy() + entry["length"]
    snapshot._write_arrays(folder / entry["file"], {"indices": indices, "values": arrays.column("values")})


def _numbers_as_text(folder: Path) -> None:
    entry = _entry(folder, "numpy")
    snapshot._write_arrays(folder / entry["file"], {"values": pa.array(["1"] * _layout(folder)["rows"])})


def _truncated(folder: Path) -> None:
    path = folder / _entry(folder, "numpy")["file"]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGES = {
    "codes beyond the categories": _codes_out_of_range,
    "sparse positions beyond the rows": _sparse_positions_out_of_range,
    "text where numbers belong": _numbers_as_text,
    "a truncated file": _truncated,
    "a file outside its folder": lambda f: _rewrite_layout(
        f, lambda layout: layout["columns"][0].update(file="../../manifest.json", kind="numpy")),
    "another row count": lambda f: _rewrite_layout(f, lambda layout: layout.update(rows=layout["rows"] + 1)),
    "an unknown kind": lambda f: _rewrite_layout(f, lambda layout: layout["columns"][0].update(kind="pickle")),
    "a layout that is not an object": lambda f: (f / snapshot.LAYOUT).write_text("[1, 2]"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_table_is_refused_logged_left_as_it_is_and_the_parts_are_read(damage, tmp_path, caplog):
    directory = tmp_path / "dataset"
    engines.score_to_dataset(SAMPLE_FILES[:2], directory)
    folder = stored_folder(directory)
    DAMAGES[damage](folder)
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    with caplog.at_level(logging.WARNING, logger="scoring.datasets"):
        opened = datasets.open_dataset(directory)
    assert_same_table(opened.table, decoded(directory))
    assert "the stored table is not used" in caplog.text
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files  # not the app's to change


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=batch_like_tables(), data=st.data())
def test_bytes_changed_anywhere_give_a_refusal_or_a_whole_table_never_a_crash(tmp_path_factory, table, data):
    folder = tmp_path_factory.mktemp("fuzz") / "t"
    snapshot.save(datasets.compact_table(table), folder)
    files = sorted(p for p in folder.iterdir() if p.suffix == ".arrow")
    path = data.draw(st.sampled_from(files))
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw[: data.draw(st.integers(0, len(raw)))]))
    try:
        loaded, _ = snapshot.load(folder, mapped=False)
    except snapshot.SnapshotError:
        return
    # whatever was read is a whole table: every value can be taken and converted
    datasets.widened(loaded).to_dict("list")
    assert len(loaded) == len(table)


def test_the_table_is_read_not_mapped_a_file_truncated_afterwards_is_harmless(sample_dataset, tmp_path):
    """Mapped pages of a file truncated by someone else kill the process that touches them."""
    script = (
        "import sys, numpy as np\n"
        "from pathlib import Path\n"
        "from scoring import datasets\n"
        "opened = datasets.open_dataset(sys.argv[1])\n"
        "for path in (Path(sys.argv[1]) / datasets.TABLE).rglob('*.arrow'):\n"
        "    path.write_bytes(b'')\n"
        "print(sum(float(np.nansum(np.asarray(opened.table[c], dtype=float)))\n"
        "          for c in opened.table.columns if opened.table[c].dtype.kind in 'fiub'))\n"
    )
    directory = tmp_path / "dataset"
    engines.score_to_dataset(SAMPLE_FILES[:2], directory)
    done = subprocess.run([sys.executable, "-c", script, str(directory)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) != 0.0


def test_text_columns_are_read_alone_and_numbers_within_the_group_bytes(monkeypatch):
    types = {
        "score": pa.float64(), "row_id": pa.large_string(), "overall": pa.float64(), "step": pa.int64(),
        "run": DICTIONARY, "prompt": DICTIONARY, "format": pa.float64(),
    }  # fmt: skip
    # a category column's dictionaries are small: it goes with the numbers
    assert list(dataset_table._column_groups(types, rows=10)) == [
        ["score"], ["row_id"], ["overall", "step", "run"], ["prompt"], ["format"]
    ]
    monkeypatch.setattr(dataset_table, "COLUMN_GROUP_BYTES", 2 * 8 * 10)  # two 8-byte columns of 10 rows
    assert list(dataset_table._column_groups(types, rows=10)) == [
        ["score"], ["row_id"], ["overall", "step"], ["run"], ["prompt"], ["format"]
    ]
    assert [len(g) for g in dataset_table._column_groups(types, rows=10**9)] == [1] * 7  # never none


def test_the_table_read_a_column_at_a_time_is_the_table_read_in_groups(sample_dataset, monkeypatch):
    expected = decoded(sample_dataset)
    monkeypatch.setattr(dataset_table, "COLUMN_GROUP_BYTES", 1)
    assert_same_table(decoded(sample_dataset), expected)
