"""scoring.datasets: the scored dataset on disk equals score_files, incrementally and atomically."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rollout_fixtures import patch_code_version

from scoring import datasets, engines
from scoring.cli import main
from scoring.datasets import compact as compact_dtypes
from scoring.datasets import parts as dataset_parts
from scoring.datasets import plan as dataset_plan
from scoring.datasets import text as dataset_text
from scoring.engines import local as local_engine
from scoring.runs import TRACE, explain_row, score_files

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
#: Sample inputs of every kind the trace and simple scorers read, broken rows included.
SAMPLE_FILES = [
    SAMPLE / "rollouts_ckpt-A.jsonl",
    SAMPLE / "rollouts_ckpt-B.jsonl",
    SAMPLE / "rollouts_with_errors.jsonl",
    SAMPLE / "rollouts_small.csv",
    SAMPLE / "gsm8k_rollouts.jsonl",
    SAMPLE / "lmms_eval" / "samples_trace_2026-11-30T10-00-00.jsonl",
    SAMPLE / "trl" / "completions_50.parquet",  # no ground truth without instances: a file error
]


def errors_by_input(errors: pd.DataFrame, inputs) -> pd.DataFrame:
    """score_files' errors in the dataset's order: errors about no input first, then each input's
    (stable: each input's errors keep their order)."""
    order = {str(p): i for i, p in enumerate(inputs)}
    rank = errors["file"].map(lambda f: order.get(f, -1))
    return errors.iloc[np.argsort(rank.to_numpy(), kind="stable")].reset_index(drop=True)


def assert_dataset_equals(directory: Path, inputs, **kwargs) -> None:
    """The dataset in ``directory`` equals score_files on ``inputs``: every column (text read
    per row), every value, the errors."""
    fresh = score_files(inputs, workers=1, **kwargs)
    opened = datasets.open_dataset(directory, compact=False)
    text = list(datasets.STORED_TEXT_COLUMNS)
    pd.testing.assert_frame_equal(opened.table, fresh.table.drop(columns=text))
    pd.testing.assert_frame_equal(datasets.row_text(opened, range(len(opened.table))), fresh.table[text])
    pd.testing.assert_frame_equal(opened.errors, errors_by_input(fresh.errors, inputs))
    assert opened.table.attrs == fresh.table.attrs
    compact = datasets.open_dataset(directory)
    kept = opened.table.drop(columns=[c for c in compact.on_disk if c in opened.table.columns])
    pd.testing.assert_frame_equal(datasets.widened(compact.table), kept)
    if len(opened.table):  # what the compact table leaves on disk reads back as it was
        left = list(compact.on_disk)
        pd.testing.assert_frame_equal(datasets.row_text(compact, range(len(compact.table))), fresh.table[left])


# --------------------------------------------------------------------------- round trip


def test_round_trip_equals_score_files_on_the_sample(tmp_path):
    update = engines.score_to_dataset(SAMPLE_FILES, tmp_path / "ds", workers=1)
    assert update.new == [str(p) for p in SAMPLE_FILES] and update.full_rescore is None
    assert_dataset_equals(tmp_path / "ds", SAMPLE_FILES)
    opened = datasets.open_dataset(tmp_path / "ds")
    assert not set(datasets.STORED_TEXT_COLUMNS) & set(opened.table.columns)
    assert update.rows == len(opened.table) and update.errors == int(
        (opened.errors["severity"] == "error").sum()
    )


def test_round_trip_with_instances_joined(tmp_path):
    inputs = [SAMPLE / "verl" / "100.jsonl", SAMPLE / "verl" / "200.jsonl"]
    instances = SAMPLE / "instances.jsonl"
    engines.score_to_dataset(inputs, tmp_path / "ds", instances=instances, image_root=SAMPLE, workers=1)
    assert_dataset_equals(tmp_path / "ds", inputs, instances=instances, image_root=SAMPLE)


def test_a_row_rebuilt_from_the_dataset_explains_as_the_in_memory_row(tmp_path):
    fresh = score_files(SAMPLE_FILES, workers=1)
    engines.score_to_dataset(SAMPLE_FILES, tmp_path / "ds", workers=1)
    opened = datasets.open_dataset(tmp_path / "ds")
    traced = np.flatnonzero(fresh.table["scorer"].to_numpy(dtype=object) == TRACE)
    rows = datasets.rows_with_text(opened, traced)
    assert list(rows.columns) == list(fresh.table.columns)
    for label in traced:
        assert explain_row(rows, label) == explain_row(fresh.table, label)


def test_inputs_without_a_usable_row_give_the_empty_table(tmp_path):
    inputs = [SAMPLE / "trl" / "completions_50.parquet"]  # no ground truth without its instances
    update = engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    assert update.rows == 0 and update.errors == 1
    assert_dataset_equals(tmp_path / "ds", inputs)


def test_row_text_reads_any_rows_in_any_order(tmp_path):
    fresh = score_files(SAMPLE_FILES, workers=1)
    engines.score_to_dataset(SAMPLE_FILES, tmp_path / "ds", workers=1)
    rows = [len(fresh.table) - 1, 0, 700, 700, 541]
    text = datasets.row_text(tmp_path / "ds", rows)  # a folder works as well as an opened dataset
    expected = fresh.table.loc[rows, list(datasets.STORED_TEXT_COLUMNS)]
    pd.testing.assert_frame_equal(text, expected)
    with pytest.raises(IndexError, match="out of range"):
        datasets.row_text(tmp_path / "ds", [len(fresh.table)])


def test_repeating_text_is_held_as_categories_and_the_rest_stays_on_disk(tmp_path):
    fresh = score_files(SAMPLE_FILES, workers=1).table
    engines.score_to_dataset(SAMPLE_FILES, tmp_path / "ds", workers=1)
    table = datasets.open_dataset(tmp_path / "ds").table
    for name in datasets.RESIDENT_TEXT_COLUMNS:
        assert isinstance(table[name].dtype, pd.CategoricalDtype), name
        assert table[name].astype(object).where(table[name].notna(), None).tolist() == (
            fresh[name].astype(object).where(fresh[name].notna(), None).tolist()
        ), name
    assert not set(datasets.STORED_TEXT_COLUMNS) & set(table.columns)


@pytest.mark.parametrize("needle", ["The ", "ANSWER", "```", "no such text anywhere", "{\"answer\": 3"])
def test_search_text_finds_what_a_search_of_the_in_memory_table_finds(tmp_path, monkeypatch, needle):
    monkeypatch.setattr(dataset_parts, "TEXT_ROW_GROUP_ROWS", 64)  # row groups cut inside files
    monkeypatch.setattr(dataset_text, "SEARCH_BATCH_ROWS", 96)  # and the batches searched, across groups
    fresh = score_files(SAMPLE_FILES, workers=1).table
    engines.score_to_dataset(SAMPLE_FILES, tmp_path / "ds", workers=1)
    opened = datasets.open_dataset(tmp_path / "ds")
    expected = np.zeros(len(fresh), dtype=bool)
    for name in datasets.STORED_TEXT_COLUMNS:
        expected |= fresh[name].str.contains(needle, case=False, regex=False).fillna(False).to_numpy(dtype=bool)
    found = datasets.search_text(opened, needle)
    np.testing.assert_array_equal(found, expected)
    assert found.any() == (needle != "no such text anywhere")
    np.testing.assert_array_equal(
        datasets.search_text(opened, needle, ["recovered_text"]),
        fresh["recovered_text"].str.contains(needle, case=False, regex=False).fillna(False).to_numpy(dtype=bool),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=40))
def test_row_text_of_any_rows_with_repeats_equals_the_in_memory_text(tmp_path_factory, picks):
    folder = tmp_path_factory.mktemp("rt")
    inputs = [SAMPLE / "rollouts_ckpt-A.jsonl", SAMPLE / "gsm8k_rollouts.jsonl"]
    fresh = _FRESH.setdefault("rt", score_files(inputs, workers=1).table)
    engines.score_to_dataset(inputs, folder / "ds", workers=1)
    opened = datasets.open_dataset(folder / "ds")
    rows = [p % len(fresh) for p in picks]
    got = datasets.row_text(opened, rows)
    expected = fresh.iloc[rows][list(datasets.STORED_TEXT_COLUMNS)]
    assert got.index.tolist() == rows
    assert got.to_numpy().tolist() == expected.to_numpy().tolist()
    whole = datasets.rows_with_text(opened, rows)
    assert list(whole.columns) == list(fresh.columns)
    assert whole["response"].tolist() == fresh["response"].iloc[rows].tolist()


_FRESH: dict[str, pd.DataFrame] = {}


def one_truth_per_row(folder: Path) -> list[Path]:
    """ckpt-A's box-set rows, each with its own ground truth and prompt (an eval set: nothing repeats)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLE / "rollouts_ckpt-A.jsonl").read_text(encoding="utf-8").splitlines()
    boxes = [r for r in map(json.loads, lines) if r.get("annotation_gt", {}).get("type") == "bbox_set"]
    records = []
    for i, record in enumerate(boxes):
        record["annotation_gt"]["value"][0][0] += 0.5 * (i + 1)  # a box of its own
        record["prompt"] = f"{record['prompt']} (item {i})"
        record["instance_id"] = f"item-{i}"
        records.append(json.dumps(record))
    path = folder / "eval.jsonl"
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    return [path]


def test_text_that_does_not_repeat_stays_on_disk_and_reads_back_equal(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset_plan, "RESIDENT_ALWAYS_MAX", 10)  # the rule of a big eval set, on 48 rows
    inputs = one_truth_per_row(tmp_path / "data")
    fresh = score_files(inputs, workers=1).table
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    opened = datasets.open_dataset(tmp_path / "ds")
    assert {"prompt", "scorer_kwargs"} <= set(opened.on_disk)  # one value per row: no categories
    assert "image_ref" not in opened.on_disk and "image_ref" in opened.table.columns  # a few images
    assert not set(opened.on_disk) & set(opened.table.columns)
    rows = [len(fresh) - 1, 3, 3, 20]
    text = datasets.row_text(opened, rows)
    assert text.to_numpy().tolist() == fresh.iloc[rows][list(opened.on_disk)].to_numpy().tolist()
    whole = datasets.read_columns(opened, ["scorer_kwargs", "response"])
    assert whole["scorer_kwargs"].astype(object).tolist() == fresh["scorer_kwargs"].astype(object).tolist()
    assert whole["response"].tolist() == fresh["response"].tolist()
    expected = fresh["prompt"].str.contains("ITEM 20", case=False, regex=False).to_numpy(dtype=bool)
    np.testing.assert_array_equal(datasets.search_text(opened, "ITEM 20", ["prompt"]), expected)
    traced = np.flatnonzero(fresh["scorer"].to_numpy(dtype=object) == TRACE)[:50]
    for position, row in zip(traced, datasets.rows_with_text(opened, traced).index, strict=True):
        assert explain_row(datasets.rows_with_text(opened, [position]), row) == explain_row(fresh, position)
    assert datasets.open_dataset(tmp_path / "ds", compact=False).on_disk == datasets.STORED_TEXT_COLUMNS


def test_text_that_repeats_is_held_and_the_rule_follows_the_manifest_counts(tmp_path):
    engines.score_to_dataset(SAMPLE_FILES, tmp_path / "ds", workers=1)
    manifest = datasets.read_manifest(tmp_path / "ds")
    rows = sum(e["rows"] for e in manifest["files"])
    for column in datasets.RESIDENT_TEXT_COLUMNS:
        stored = sum(e["dictionary_entries"].get(column, 0) for e in manifest["files"])
        assert stored >= sum(e["distinct"].get(column, 0) for e in manifest["files"])
        held = stored * datasets.RESIDENT_MIN_REPEATS <= rows or stored <= datasets.RESIDENT_ALWAYS_MAX
        assert (column not in datasets.text_on_disk(manifest)) == held, column
    assert datasets.open_dataset(tmp_path / "ds").on_disk == datasets.STORED_TEXT_COLUMNS  # the sample repeats
    few = {"files": [{"rows": 100, "distinct": {"prompt": 100}}]}  # unique, but a hundred: held
    assert datasets.text_on_disk(few) == datasets.STORED_TEXT_COLUMNS
    many = {"files": [{"rows": 40_000, "distinct": {"prompt": 12_000, "gold": 9_000}}] * 2}
    assert datasets.text_on_disk(many) == (*datasets.STORED_TEXT_COLUMNS, "prompt")  # 24,000 > 80,000 / 4


def test_row_groups_cut_inside_a_file(tmp_path, monkeypatch):
    """A row in the second row group of its part is found by its offset."""
    monkeypatch.setattr(dataset_parts, "TEXT_ROW_GROUP_ROWS", 100)
    inputs = [SAMPLE / "rollouts_ckpt-A.jsonl", SAMPLE / "rollouts_ckpt-B.jsonl"]
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    assert_dataset_equals(tmp_path / "ds", inputs)


# --------------------------------------------------------------------------- incremental


def split_sample(folder: Path, pieces: int = 3) -> list[Path]:
    """ckpt-A's lines as ``pieces`` files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (SAMPLE / "rollouts_ckpt-A.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    size = -(-len(lines) // pieces)
    paths = []
    for i in range(pieces):
        path = folder / f"step_{i}.jsonl"
        path.write_text("".join(lines[i * size : (i + 1) * size]), encoding="utf-8")
        paths.append(path)
    return paths


def part_names(directory: Path) -> dict[str, str]:
    return {e["path"]: e["part"] for e in datasets.read_manifest(directory)["files"]}


def test_adding_a_file_scores_only_that_file(tmp_path):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths[:2], ds, workers=1)
    before = part_names(ds)
    update = engines.score_to_dataset(paths, ds, workers=1)
    assert update.new == [str(paths[2])] and update.changed == [] and update.removed == []
    assert update.unchanged == [str(p) for p in paths[:2]] and update.full_rescore is None
    after = part_names(ds)
    assert all(after[name] == part for name, part in before.items())  # untouched parts
    assert update.rows_scored == datasets.read_manifest(ds)["files"][2]["rows"] > 0
    assert_dataset_equals(ds, paths)


def test_memory_goes_back_after_scoring_but_a_look_that_scores_nothing_costs_no_collection(tmp_path, monkeypatch):
    """The app looks at its files on every new session: an unchanged dataset must not pay a full
    garbage collection of the server's heap each time."""
    calls = []
    monkeypatch.setattr(local_engine, "give_back_memory", lambda *a, **k: calls.append(a))
    paths = split_sample(tmp_path / "data")
    engines.score_to_dataset(paths[:2], tmp_path / "ds", workers=1)
    assert len(calls) == 1
    unchanged = engines.score_to_dataset(paths[:2], tmp_path / "ds", workers=1)
    assert unchanged.rows_scored == 0 and len(calls) == 1
    engines.score_to_dataset(paths, tmp_path / "ds", workers=1)
    assert len(calls) == 2


def test_a_changed_file_of_the_same_size_is_rescored(tmp_path):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths, ds, workers=1)
    before = part_names(ds)
    target = paths[1]
    lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]  # same bytes, other order: same size, other digest
    status = target.stat()
    target.write_text("".join(lines), encoding="utf-8")
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    assert target.stat().st_size == status.st_size
    update = engines.score_to_dataset(paths, ds, workers=1)
    assert update.changed == [str(target)] and update.new == [] and update.removed == []
    assert update.unchanged == [str(paths[0]), str(paths[2])]
    after = part_names(ds)
    assert after[str(target)] != before[str(target)]
    assert after[str(paths[0])] == before[str(paths[0])]
    assert_dataset_equals(ds, paths)


def test_a_touched_file_with_the_same_content_is_not_rescored(tmp_path):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths, ds, workers=1)
    status = paths[0].stat()
    os.utime(paths[0], ns=(status.st_atime_ns, status.st_mtime_ns + 5_000_000_000))
    update = engines.score_to_dataset(paths, ds, workers=1)
    assert update.rescored == [] and update.rows_scored == 0
    entry = datasets.read_manifest(ds)["files"][0]
    assert entry["mtime_ns"] == paths[0].stat().st_mtime_ns  # the next check trusts it again


def test_a_check_that_finds_nothing_new_keeps_the_generation_and_writes_nothing(tmp_path):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths, ds, workers=1)
    manifest = ds / datasets.MANIFEST
    before = (datasets.read_manifest(ds)["generation"], manifest.stat().st_mtime_ns, manifest.read_bytes())
    update = engines.score_to_dataset(paths, ds, workers=1)
    assert update.rescored == [] and update.removed == [] and update.rows == len(datasets.open_dataset(ds).table)
    assert (datasets.read_manifest(ds)["generation"], manifest.stat().st_mtime_ns, manifest.read_bytes()) == before
    status = paths[0].stat()
    os.utime(paths[0], ns=(status.st_atime_ns, status.st_mtime_ns + 5_000_000_000))
    engines.score_to_dataset(paths, ds, workers=1)  # touched: same rows, same generation
    assert datasets.read_manifest(ds)["generation"] == before[0]
    (data / "more.jsonl").write_bytes(paths[0].read_bytes())
    engines.score_to_dataset([*paths, data / "more.jsonl"], ds, workers=1)
    assert datasets.read_manifest(ds)["generation"] == before[0] + 1


def test_removing_a_file_drops_its_part(tmp_path):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths, ds, workers=1)
    removed_part = part_names(ds)[str(paths[0])]
    update = engines.score_to_dataset(paths[1:], ds, workers=1)
    assert update.removed == [str(paths[0])] and update.rescored == [] and update.rows_scored == 0
    assert not (ds / datasets.PARTS / removed_part).exists()
    assert_dataset_equals(ds, paths[1:])


def test_a_logged_column_of_a_removed_file_leaves_with_it(tmp_path):
    """ckpt-A logs rewards, ckpt-B does not: without ckpt-A no logged_* column is left."""
    inputs = [SAMPLE / "rollouts_ckpt-A.jsonl", SAMPLE / "rollouts_ckpt-B.jsonl"]
    engines.score_to_dataset(inputs, tmp_path / "ds", workers=1)
    engines.score_to_dataset(inputs[1:], tmp_path / "ds", workers=1)
    assert_dataset_equals(tmp_path / "ds", inputs[1:])


def test_other_options_rescore_everything(tmp_path):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths, ds, workers=1)
    update = engines.score_to_dataset(paths, ds, workers=1, answer_weight=0.7, annotation_weight=0.3)
    assert update.full_rescore and "options" in update.full_rescore
    assert update.changed == [str(p) for p in paths] and update.unchanged == []
    assert_dataset_equals(ds, paths, answer_weight=0.7, annotation_weight=0.3)
    again = engines.score_to_dataset(paths, ds, workers=1, answer_weight=0.7, annotation_weight=0.3)
    assert again.full_rescore is None and again.rescored == []


def test_other_code_rescores_everything(tmp_path, monkeypatch):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths, ds, workers=1)
    patch_code_version(monkeypatch, "another version")
    update = engines.score_to_dataset(paths, ds, workers=1)
    assert update.full_rescore and "code" in update.full_rescore
    assert update.rows_scored == update.rows


def test_a_new_run_label_rescores_the_files_it_labels(tmp_path):
    """One file's run is labelled by its stem, two files' by their folder: relabelled rows
    are rescored, so the dataset still equals score_files."""
    rows = (SAMPLE / "gsm8k_rollouts.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    data = tmp_path / "data"
    data.mkdir()
    first, second = data / "a.jsonl", data / "b.jsonl"
    for path, part in ((first, rows[:50]), (second, rows[50:])):  # rows of their own run field
        path.write_text("".join(part).replace('"run": ', '"run_name": '), encoding="utf-8")
    kwargs = {"scorer": "exact_match", "workers": 1}
    engines.score_to_dataset([first], tmp_path / "ds", **kwargs)
    update = engines.score_to_dataset([first, second], tmp_path / "ds", **kwargs)
    assert update.changed == [str(first)] and update.new == [str(second)]
    assert_dataset_equals(tmp_path / "ds", [first, second], scorer="exact_match")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "change", "remove", "touch"]), st.integers(0, 3)),
        min_size=1,
        max_size=4,
    )
)
def test_any_sequence_of_updates_equals_a_fresh_scoring(tmp_path_factory, steps):
    folder = tmp_path_factory.mktemp("seq")
    pool = split_sample(folder / "pool", pieces=4)
    data, ds = folder / "data", folder / "ds"
    data.mkdir()
    shutil.copy(pool[0], data / pool[0].name)
    engines.score_to_dataset(sorted(data.iterdir()), ds, workers=1)
    for action, which in steps:
        present = sorted(data.iterdir())
        if action == "add":
            shutil.copy(pool[which], data / f"{len(present)}_{pool[which].name}")
        elif action == "remove" and len(present) > 1:
            present[which % len(present)].unlink()
        elif action == "change":
            target = present[which % len(present)]
            target.write_text(pool[which].read_text(encoding="utf-8")[: 2000 + 300 * which], encoding="utf-8")
        elif action == "touch":
            target = present[which % len(present)]
            status = target.stat()
            os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
        inputs = sorted(data.iterdir())
        update = engines.score_to_dataset(inputs, ds, workers=1)
        assert sorted(update.new + update.changed + update.unchanged) == sorted(map(str, inputs))
    assert_dataset_equals(ds, sorted(data.iterdir()))


# --------------------------------------------------------------------------- atomic writes


def test_an_interrupted_update_leaves_the_previous_dataset_whole(tmp_path, monkeypatch):
    data, ds = tmp_path / "data", tmp_path / "ds"
    paths = split_sample(data)
    engines.score_to_dataset(paths[:2], ds, workers=1)
    manifest = (ds / datasets.MANIFEST).read_bytes()
    written = []
    original = dataset_parts._put_in_place

    def crash_after_one(temporary, path):
        if written:
            raise KeyboardInterrupt
        original(temporary, path)
        written.append(path)

    monkeypatch.setattr(dataset_parts, "_put_in_place", crash_after_one)
    with pytest.raises(KeyboardInterrupt):
        engines.score_to_dataset(paths, ds, workers=1)
    monkeypatch.setattr(dataset_parts, "_put_in_place", original)
    assert (ds / datasets.MANIFEST).read_bytes() == manifest
    assert_dataset_equals(ds, paths[:2])  # the half-written part is not read
    update = engines.score_to_dataset(paths, ds, workers=1)
    assert update.new == [str(paths[2])]
    named = {
        n for e in datasets.read_manifest(ds)["files"] for n in (e["part"], e["text_part"], e["errors_part"])
    }
    named.add(datasets.read_manifest(ds)["run_errors"])
    assert {p.name for p in (ds / datasets.PARTS).iterdir()} == named  # the leftovers are gone
    assert_dataset_equals(ds, paths)


def test_a_failed_manifest_write_keeps_the_old_manifest_and_no_temporary(tmp_path):
    target = tmp_path / "manifest.json"
    target.write_text('{"old": true}', encoding="utf-8")

    def half_then_fail(path):
        path.write_text('{"new": ', encoding="utf-8")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        dataset_parts.write_atomically(target, half_then_fail)
    assert json.loads(target.read_text(encoding="utf-8")) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_folder_holding_something_else_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no scored dataset"):
        engines.score_to_dataset(SAMPLE_FILES[:1], tmp_path, workers=1)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_an_unreadable_manifest_means_a_full_rescore(tmp_path):
    engines.score_to_dataset(SAMPLE_FILES[:2], tmp_path / "ds", workers=1)
    (tmp_path / "ds" / datasets.MANIFEST).write_text("{ half", encoding="utf-8")
    update = engines.score_to_dataset(SAMPLE_FILES[:2], tmp_path / "ds", workers=1)
    assert update.full_rescore and "manifest" in update.full_rescore
    assert_dataset_equals(tmp_path / "ds", SAMPLE_FILES[:2])


# --------------------------------------------------------------------------- CLI


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def test_cli_score_into_a_dataset_twice_rescores_nothing_the_second_time(tmp_path):
    paths = split_sample(tmp_path / "data")
    out = f"{tmp_path / 'ds'}{os.sep}"
    code, _, err = run_cli("score", *paths, "-o", out, "--workers", "1")
    assert code == 0, err
    assert "3 new, 0 changed, 0 removed, 0 unchanged" in err
    code, _, err = run_cli("score", *paths, "-o", out, "--workers", "1")
    assert code == 0, err
    assert "0 new, 0 changed, 0 removed, 3 unchanged" in err and " 0 rows scored" in err
    assert_dataset_equals(tmp_path / "ds", paths)
    paths[0].unlink()
    code, _, err = run_cli("score", *paths[1:], "-o", tmp_path / "ds", "--workers", "1")  # an existing folder
    assert code == 0 and f"removed: {paths[0]}" in err


def test_cli_summary_of_a_dataset_equals_the_summary_of_the_table(tmp_path):
    inputs = SAMPLE_FILES[:3]
    assert run_cli("score", *inputs, "-o", tmp_path / "ds", "--to", "dataset", "--workers", "1")[0] == 0
    assert run_cli("score", *inputs, "-o", tmp_path / "table.parquet", "--workers", "1")[0] == 0
    code, from_dataset, err = run_cli("summary", tmp_path / "ds", "--format", "csv")
    assert code == 0, err
    assert from_dataset == run_cli("summary", tmp_path / "table.parquet", "--format", "csv")[1]


def test_cli_reports_file_errors_of_a_dataset(tmp_path):
    code, _, err = run_cli(
        "score", SAMPLE_FILES[0], SAMPLE / "trl" / "completions_50.parquet", "-o", f"{tmp_path}/ds/"
    )
    assert code == 1
    assert "error: " in err and "completions_50.parquet" in err
    code, _, err = run_cli("summary", tmp_path)
    assert code == 1 and "no manifest.json" in err


def test_inputs_outside_the_data_roots_are_refused_before_a_byte_is_read(tmp_path, monkeypatch):
    from scoring.rollouts.access import AccessDenied

    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    secret = outside / "rollouts.jsonl"
    secret.write_text('{"response": "x"}\n')
    monkeypatch.setenv("ROLLOUTSCOPE_DATA_ROOTS", str(allowed))
    for missing_or_not in (secret, outside / "missing.jsonl"):
        with pytest.raises(AccessDenied, match="outside the allowed data roots"):
            engines.score_to_dataset([missing_or_not], allowed / "dataset")
    assert not (allowed / "dataset").exists()


def test_a_zip_bundle_is_refused_with_what_to_do_instead(tmp_path):
    import zipfile

    bundle = tmp_path / "run.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("a.jsonl", '{"response": "x"}\n')
    with pytest.raises(ValueError, match="run.zip: a zip bundle cannot be scored into a dataset; unzip it"):
        engines.score_to_dataset([bundle], tmp_path / "dataset")
    assert not (tmp_path / "dataset").exists()


# --------------------------------------------------------------------------- compact dtypes

#: Floats the compact table must keep bit for bit: both zeros, infinities, the extremes, values
#: float32 cannot hold, subnormals; NaN (the one value compared as "missing where missing").
EDGE_FLOATS = [0.0, -0.0, 1.0, 0.5, 0.1, 1 / 3, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 2.0**-1074 * 3,
               16777217.0, 0.30000000000000004]
EDGE_INTS = [int(np.iinfo(w).min) for w in datasets.INTEGER_WIDTHS] + [int(np.iinfo(w).max) for w in datasets.INTEGER_WIDTHS]


def float_columns(rows: int):
    """A float column of ``rows`` values: mostly one value (so it may be held sparse) or any."""
    value = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(allow_nan=True, allow_infinity=True))
    common = st.tuples(value, st.lists(st.tuples(st.integers(0, rows - 1), value), max_size=rows // 3)).map(
        lambda spec: [spec[0]] * rows if not spec[1] else
        [dict(spec[1]).get(i, spec[0]) for i in range(rows)]
    )  # fmt: skip
    return st.one_of(common, st.lists(value, min_size=rows, max_size=rows))


@st.composite
def batch_like_tables(draw) -> pd.DataFrame:
    """A table with the batch table's dtypes: float results (some equal to another column, one
    differing from it only in a zero's sign), nullable integers, text ids, a category, a flag."""
    rows = draw(st.integers(1, 40))
    floats = {f"f{i}": draw(float_columns(rows)) for i in range(draw(st.integers(1, 4)))}
    twin = list(floats["f0"])
    floats["f0_twin"] = twin  # the same values: held as one array
    signs = [(-v if v == 0.0 else v) for v in twin]
    floats["f0_signs"] = signs  # equal by ==, not bit for bit: never shared
    integer = st.one_of(st.none(), st.sampled_from(EDGE_INTS), st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3))
    ints = {
        name: draw(st.lists(integer, min_size=rows, max_size=rows))
        for name in ("source_line", "step", "sample_index")
    }
    words = st.one_of(st.none(), st.sampled_from(["", "a", "é", "inst-1", " "]), st.text(max_size=6))
    frame = pd.DataFrame(
        {
            **{name: pd.array(values, dtype="Int64") for name, values in ints.items()},
            "row_id": pd.array(draw(st.lists(st.text(max_size=8), min_size=rows, max_size=rows)), dtype="str"),
            "instance_id": pd.array(draw(st.lists(words, min_size=rows, max_size=rows)), dtype="str"),
            "task_id": pd.Categorical(draw(st.lists(words, min_size=rows, max_size=rows))),
            "solved": np.array(draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), dtype=bool),
            **{name: np.array(values, dtype=np.float64) for name, values in floats.items()},
        }
    )
    frame.attrs["scoring_options"] = {"logged_atol": 1e-6}
    return frame


def assert_same_values(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Same columns, dtypes and values: floats bit for bit (-0.0 is not 0.0), NaN where NaN."""
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    for name in expected.columns:
        if expected[name].dtype == np.float64:
            want, have = expected[name].to_numpy(), got[name].to_numpy()
            assert np.array_equal(np.isnan(have), np.isnan(want)), name
            known = ~np.isnan(want)
            assert np.array_equal(have[known].view(np.uint64), want[known].view(np.uint64)), name


@settings(max_examples=150, deadline=None)
@given(batch_like_tables())
def test_compact_dtypes_hold_every_value(table):
    compact = datasets.compact_table(table)
    assert list(compact.columns) == list(table.columns) and compact.attrs == table.attrs
    assert_same_values(datasets.widened(compact), table)
    assert datasets.held_bytes(compact).sum() <= table.memory_usage(deep=True, index=False).sum()
    for name in ("source_line", "step", "sample_index"):
        present = table[name].dropna()
        if len(present):  # the narrowest width that holds the range
            narrower = [w for w in datasets.INTEGER_WIDTHS if np.dtype(w).itemsize < compact[name].dtype.itemsize]
            assert all(present.min() < np.iinfo(w).min or present.max() > np.iinfo(w).max for w in narrower)
        # numpy when no value is missing, else pandas' nullable integer
        assert isinstance(compact[name].dtype, np.dtype) == (not table[name].isna().any())
    shared = datasets.held_bytes(compact)
    assert shared["f0_twin"] == 0 or compact["f0"].memory_usage(index=False) == 0
    zeros_differ = any(np.signbit(a) != np.signbit(b) for a, b in zip(table["f0"], table["f0_signs"], strict=True))
    if zeros_differ:
        assert not np.shares_memory(np.asarray(compact["f0"].array), np.asarray(compact["f0_signs"].array))


@pytest.mark.parametrize("sparse", [True, False])
def test_columns_equal_but_for_nan_payloads_share_one_array(sparse):
    """A sparse column holds its NaNs as its fill, without their payloads: a column equal to it
    but for those is still its twin (dense ones too: a NaN is a NaN, whatever its bits)."""
    payload_nan = np.array([0x7FF8000000000001], dtype=np.uint64).view(np.float64)[0]
    values = [0.0, payload_nan, payload_nan] if sparse else [0.5, payload_nan, 1.5]
    table = pd.DataFrame({"f0": values, "f0_twin": values, "f0_canonical": [np.nan if np.isnan(v) else v for v in values]})
    compact = datasets.compact_table(table)
    assert isinstance(compact["f0"].dtype, pd.SparseDtype) == sparse
    held = datasets.held_bytes(compact)
    assert held["f0"] > 0 and held["f0_twin"] == 0 and held["f0_canonical"] == 0
    assert_same_values(datasets.widened(compact), table)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60).flatmap(float_columns))
@example([0.0] * 9 + [-0.0])  # equal by ==: the fill would take the zeros' signs
@example([-0.0] * 9 + [0.0, np.nan])
@example([np.nan] * 9 + [-0.0])
def test_a_sparse_column_is_the_one_pandas_builds_from_its_values(values):
    dense = np.array(values, dtype=np.float64)
    column = compact_dtypes._compact_numbers(dense, pd.RangeIndex(len(dense)))
    if not isinstance(column.dtype, pd.SparseDtype):
        assert column.dtype == np.float64 and np.shares_memory(column.to_numpy(), dense)
        return
    fill = column.dtype.fill_value
    expected = pd.arrays.SparseArray(dense, fill_value=fill, kind="integer")
    assert column.dtype == expected.dtype and column.array.kind == "integer"
    np.testing.assert_array_equal(column.array.sp_index.indices, expected.sp_index.indices)
    assert column.array.sp_index.indices.dtype == expected.sp_index.indices.dtype
    assert np.array_equal(column.array.sp_values.view(np.uint64), expected.sp_values.view(np.uint64))
    assert column.array.npoints <= datasets.SPARSE_MAX_SHARE * len(dense)
    # the fill stands for its rows bit for bit: no zero of the other sign hides behind it
    held = column.to_numpy()
    assert np.array_equal(np.isnan(held), np.isnan(dense))
    known = ~np.isnan(dense)
    assert np.array_equal(held[known].view(np.uint64), dense[known].view(np.uint64))
