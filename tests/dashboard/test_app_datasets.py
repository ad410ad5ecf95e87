"""Follow mode and scored datasets under AppTest: a file written while the app runs appears on
every page without losing the user's place; a dataset folder opens without rescoring."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import filters, loaded_run, loading, sources, state, tuning, uploads
from scoring import datasets, engines
from scoring.datasets import open as dataset_open
from scoring.datasets import plan as dataset_plan
from scoring.datasets import snapshot as table_snapshot
from scoring.datasets import table as dataset_table

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
INSPECTOR = str(REPO / "pages" / "1_Inspector.py")
GALLERY = str(REPO / "pages" / "2_Gallery.py")
TIMEOUT = 90
SOURCE_LINES = (sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl").read_text().splitlines()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv(uploads.UPLOAD_DIR_ENV, str(tmp_path / "uploads"))
    monkeypatch.setenv(loading.CACHE_DIR_ENV, str(tmp_path / "cache"))
    loading.clear_cache()


def write_lines(path: Path, first: int, n: int) -> None:
    path.write_text("".join(line + "\n" for line in SOURCE_LINES[first : first + n]), encoding="utf-8")


def rollouts_shown(at: AppTest) -> int:
    """The row count the sidebar shows for the loaded run."""
    [label] = [t.value for t in at.sidebar.text if t.value.endswith("rollouts)")]
    return int(label.rsplit("(", 1)[1].split()[0].replace(",", ""))


def no_error(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def app_on_a_run(tmp_path: Path, monkeypatch, page: str, first_file: str, rows: int) -> tuple[Path, AppTest]:
    """A run folder holding ``rows`` lines in ``first_file``, opened by ``page`` as ROLLOUTSCOPE_DATA."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_lines(run_dir / first_file, 0, rows)
    monkeypatch.setenv(state.DATA_ENV, str(run_dir))
    return run_dir, no_error(AppTest.from_file(page, default_timeout=TIMEOUT).run())


def test_follow_scores_a_file_written_while_the_app_runs_and_keeps_the_users_place(tmp_path, monkeypatch):
    run_dir, at = app_on_a_run(tmp_path, monkeypatch, INSPECTOR, "step-001.jsonl", 4)
    assert rollouts_shown(at) == 4
    first = loading.load_cached(sources.source_from_path(str(run_dir))).table.index[1]
    at.session_state[state.K_SELECTED] = first
    tuned = dict(tuning.scored_options(loading.load_cached(sources.source_from_path(str(run_dir))).table),
                 answer_weight=0.6, annotation_weight=0.4)
    at.session_state[state.K_OPTIONS] = tuned
    at.session_state[state.K_FOLLOW_SECONDS] = 1
    at.toggle(key="rs_follow_w").set_value(True)
    no_error(at.run())
    assert rollouts_shown(at) == 4

    write_lines(run_dir / "step-002.jsonl", 4, 6)  # the trainer writes a new step file
    time.sleep(1.2)
    no_error(at.run())
    assert rollouts_shown(at) == 10
    assert at.session_state[state.K_SELECTED] == first  # the user's place is kept
    assert at.session_state[state.K_OPTIONS] == tuned  # the tuning too
    notes = [c.value for c in at.sidebar.caption if c.value.startswith("Checked at")]
    assert notes and "6 new rows scored" in notes[0]
    cached = list((tmp_path / "cache" / "datasets").iterdir())
    assert len(cached) == 1  # the same dataset grew: only the new file was scored
    manifest = datasets.read_manifest(cached[0])
    assert [Path(e["path"]).name for e in manifest["files"]] == ["step-001.jsonl", "step-002.jsonl"]

    time.sleep(1.2)
    no_error(at.run())  # nothing new: the same run, a note that says so
    assert rollouts_shown(at) == 10
    assert any("nothing new" in c.value for c in at.sidebar.caption)


def test_the_gallery_of_a_followed_run_grows_with_it(tmp_path, monkeypatch):
    run_dir, at = app_on_a_run(tmp_path, monkeypatch, GALLERY, "step-001.jsonl", 4)
    at.session_state[state.K_FOLLOW_SECONDS] = 1
    at.toggle(key="rs_follow_w").set_value(True)
    no_error(at.run())
    pages = [t.value for t in at.text if t.value.startswith("Page ")]
    assert pages and pages[0].endswith("of 4 rows")

    write_lines(run_dir / "step-002.jsonl", 4, 6)  # the trainer writes a new step file
    time.sleep(1.2)
    no_error(at.run())
    pages = [t.value for t in at.text if t.value.startswith("Page ")]
    assert pages and pages[0].endswith("of 10 rows")
    assert len([m for m in at.markdown if m.value.startswith("[Inspect](Inspector?")]) == 10


def test_follow_off_keeps_the_run_as_loaded(tmp_path, monkeypatch):
    run_dir, at = app_on_a_run(tmp_path, monkeypatch, APP, "a.jsonl", 3)
    write_lines(run_dir / "b.jsonl", 3, 3)
    no_error(at.run())
    assert rollouts_shown(at) == 3  # read again only on Load or with follow on


def test_a_dataset_folder_opens_as_it_is_and_shows_a_rows_text_from_disk(tmp_path, monkeypatch):
    inputs = [sources.SAMPLE_DIR / "rollouts_ckpt-A.jsonl", sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl"]
    update = engines.score_to_dataset(inputs, tmp_path / "scored", workers=1)
    monkeypatch.setenv(state.DATA_ENV, str(tmp_path / "scored"))
    at = no_error(AppTest.from_file(INSPECTOR, default_timeout=TIMEOUT).run())
    assert rollouts_shown(at) == update.rows
    assert not (tmp_path / "cache" / "datasets").exists()  # opened where it is: nothing scored again
    opened = datasets.open_dataset(tmp_path / "scored")
    row = datasets.rows_with_text(opened, [0]).iloc[0]
    row_id = f"rollouts_ckpt-A.jsonl:{int(row['source_line'])}"
    at.session_state[state.K_SELECTED] = row_id
    no_error(at.run())
    opening = row["response"][:60]  # the response is shown in pieces (prose, the final object...)
    assert any(c.value.startswith(opening) for c in at.code)


def test_follow_on_a_dataset_folder_reopens_it_when_another_process_adds_a_file(tmp_path, monkeypatch):
    inputs = [sources.SAMPLE_DIR / "rollouts_ckpt-A.jsonl"]
    first = engines.score_to_dataset(inputs, tmp_path / "scored", workers=1)
    monkeypatch.setenv(state.DATA_ENV, str(tmp_path / "scored"))
    at = no_error(AppTest.from_file(APP, default_timeout=TIMEOUT).run())
    assert rollouts_shown(at) == first.rows
    at.session_state[state.K_FOLLOW_SECONDS] = 1
    at.toggle(key="rs_follow_w").set_value(True)
    no_error(at.run())
    more = engines.score_to_dataset([*inputs, sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl"], tmp_path / "scored", workers=1)
    time.sleep(1.2)
    no_error(at.run())
    assert rollouts_shown(at) == more.rows > first.rows


def test_an_opened_dataset_lists_its_files_with_their_rows(tmp_path):
    inputs = [sources.SAMPLE_DIR / "rollouts_ckpt-A.jsonl", sources.SAMPLE_DIR / "rollouts_with_errors.jsonl"]
    engines.score_to_dataset(inputs, tmp_path / "scored", workers=1)
    run = loading.load(sources.source_from_path(str(tmp_path / "scored")))
    assert run.source.kind == "dataset" and run.updates == []
    files = filters.files_table(run.plans, run.table, run.errors)
    assert files["file"].tolist() == ["rollouts_ckpt-A.jsonl", "rollouts_with_errors.jsonl"]
    assert files["rows"].tolist() == run.table["source_file"].value_counts().reindex(files["file"]).tolist()
    assert set(run.errors["file"]) == {"rollouts_with_errors.jsonl"}  # errors named as the rows are


def test_rows_read_from_disk_equal_the_in_memory_scoring(tmp_path):
    """The app's run of a folder: every row's text, explanation and search hit equal score_files'."""
    from scoring.runs import explain_row, score_files

    inputs = [sources.SAMPLE_DIR / "rollouts_ckpt-A.jsonl", sources.SAMPLE_DIR / "gsm8k_rollouts.jsonl"]
    folder = tmp_path / "run"
    folder.mkdir()
    for path in inputs:
        (folder / path.name).write_bytes(path.read_bytes())
    run = loading.load(sources.source_from_path(str(folder)))
    fresh = score_files(sorted(folder.iterdir()), workers=1, run_label="run", scorer=sources.DEFAULT_SIMPLE_SCORER).table
    assert len(run.table) == len(fresh)
    whole = run.with_text(run.table)
    for name in datasets.STORED_TEXT_COLUMNS:
        assert whole[name].tolist() == fresh[name].tolist()
    for position in range(0, len(fresh), 37):
        row_id = run.table.index[position]
        assert run.row(row_id)["response"] == fresh["response"].iloc[position]
        if str(fresh["scorer"].iloc[position]) == "trace":
            assert run.explain(row_id) == explain_row(fresh, fresh.index[position])
    hits = run.search("answer")
    expected = fresh["response"].str.contains("answer", case=False, regex=False).fillna(False)
    expected |= fresh["recovered_text"].str.contains("answer", case=False, regex=False).fillna(False)
    assert hits.tolist() == expected.tolist() and hits.any()


def test_text_left_on_disk_is_read_whole_for_the_pages_that_key_on_it(tmp_path, monkeypatch):
    """An eval set (one ground truth and prompt per row): the run holds neither, and compare,
    groups and suspects get them read from disk, equal to the in-memory table."""
    import sys

    from scoring.runs import score_files

    sys.path.insert(0, str(REPO / "tests" / "datasets"))
    from test_store import one_truth_per_row

    monkeypatch.setattr(dataset_plan, "RESIDENT_ALWAYS_MAX", 10)  # the rule of a big eval set, on 48 rows
    inputs = one_truth_per_row(tmp_path / "eval")
    run = loading.load(sources.source_from_path(str(tmp_path / "eval")))
    fresh = score_files(inputs, workers=1, run_label="eval").table
    assert {"prompt", "scorer_kwargs"} <= set(run.on_disk) and "prompt" not in run.table.columns
    keyed = run.table_with(loaded_run.GROUND_TRUTH_COLUMNS)
    assert run.table_with(loaded_run.GROUND_TRUTH_COLUMNS) is keyed  # read once
    for name in loaded_run.GROUND_TRUTH_COLUMNS:
        assert keyed[name].astype(object).tolist() == fresh[name].astype(object).tolist(), name
    assert keyed.index.equals(run.table.index)
    assert run.row(run.table.index[5])["scorer_kwargs"] == fresh["scorer_kwargs"].iloc[5]
    found = run.search("(item 12)", ["prompt"])
    assert found.tolist() == fresh["prompt"].str.contains("(item 12)", regex=False).tolist()


def test_a_grown_run_is_opened_by_appending_its_new_files_and_equals_opening_it_whole(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    write_lines(folder / "step-001.jsonl", 0, 120)
    (folder / "step-002.jsonl").write_text(
        (sources.SAMPLE_DIR / "rollouts_with_errors.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    source = sources.source_from_path(str(folder))
    first = loading.load_cached(source)
    write_lines(folder / "step-003.jsonl", 120, 200)  # the trainer writes on
    grown, updates = loading.check(sources.followed(source))
    assert [u.rows_scored for u in updates] == [200] and len(grown.datasets) == 2  # appended, not reopened
    assert loading.cached(first.key) is None  # the run it grew from is not kept beside it
    write_lines(folder / "step-004.jsonl", 320, 50)
    grown, _ = loading.check(sources.followed(source))
    assert len(grown.datasets) == 3

    loading.clear_cache()
    loading._LATEST.clear()
    whole = loading.load(sources.followed(source))
    assert len(whole.datasets) == 1
    assert grown.table.index.equals(whole.table.index)
    pd.testing.assert_frame_equal(datasets.widened(grown.table), datasets.widened(whole.table))
    pd.testing.assert_frame_equal(grown.errors, whole.errors)
    assert grown.on_disk == whole.on_disk
    rows = [grown.table.index[i] for i in (0, 130, 119, len(grown.table) - 1)]
    pd.testing.assert_frame_equal(grown.text(rows), whole.text(rows))
    assert grown.explain(rows[1]) == whole.explain(rows[1])
    assert grown.search("answer").equals(whole.search("answer"))
    assert grown.paths == whole.paths and sorted(grown.layouts) == sorted(whole.layouts)


def test_a_changed_file_opens_the_run_whole_again(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    write_lines(folder / "a.jsonl", 0, 30)
    source = sources.source_from_path(str(folder))
    loading.load_cached(source)
    write_lines(folder / "a.jsonl", 0, 40)  # grown in place: not an appended input
    run, updates = loading.check(sources.followed(source))
    assert [u.changed for u in updates] == [[str(folder / "a.jsonl")]]
    assert len(run.datasets) == 1 and len(run.table) == 40


def _restarted(monkeypatch) -> None:
    """A new server process: nothing in memory, and decoding a dataset's parts fails the test."""
    loading.clear_cache()
    loading._LATEST.clear()

    def no_parquet(*args, **kwargs):
        raise AssertionError("the dataset's parts were decoded although its table was kept")

    monkeypatch.setattr(dataset_table, "read_table", no_parquet)


def _assert_same_run(again: loading.LoadedRun, first: loading.LoadedRun) -> None:
    assert again.table.index.equals(first.table.index)
    pd.testing.assert_frame_equal(again.table, first.table, check_exact=True)
    rows = list(first.table.index[[0, len(first.table) // 2, len(first.table) - 1]])
    pd.testing.assert_frame_equal(again.text(rows), first.text(rows))
    assert again.explain(rows[1]) == first.explain(rows[1])


def test_a_new_run_is_opened_from_the_table_its_dataset_keeps_before_and_after_a_restart(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    write_lines(folder / "step-001.jsonl", 0, 150)
    source = sources.source_from_path(str(folder))
    [dataset] = loading.prepare(source).folders
    assert len(list((dataset / datasets.TABLE).iterdir())) == 1  # written once, as the run was scored
    decoded = datasets.open_dataset(dataset, compact=True)
    read_table = dataset_table.read_table
    monkeypatch.setattr(dataset_table, "read_table", lambda *a, **k: pytest.fail("decoded") or read_table(*a, **k))
    first = loading.load_cached(source)
    pd.testing.assert_frame_equal(first.datasets[0].table, decoded.table, check_exact=True)
    # kept in the app's cache on a background thread: the table as read, the row ids as built
    assert table_snapshot.wait_kept(timeout=60)
    assert len(list((tmp_path / "cache" / "opened").iterdir())) == 2
    _restarted(monkeypatch)
    monkeypatch.setattr(dataset_open, "_stored_table", lambda *a, **k: pytest.fail("the dataset's table read again"))
    monkeypatch.setattr(loaded_run, "_row_ids", lambda *a, **k: pytest.fail("the row ids built again"))
    _assert_same_run(loading.load_cached(source), first)


def test_kept_row_ids_that_are_not_the_runs_are_built_again_and_kept_anew(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    write_lines(folder / "step-001.jsonl", 0, 150)
    source = sources.source_from_path(str(folder))
    first = loading.load_cached(source)
    assert table_snapshot.wait_kept(timeout=60)
    [ids_folder] = [p for p in (tmp_path / "cache" / "opened").iterdir()
                    if table_snapshot.load(p)[0].columns.tolist() == ["row_id"]]
    loading.clear_cache()
    loading._LATEST.clear()
    damaged = pd.DataFrame({"row_id": pd.array([f"x:{i}" for i in range(149)], dtype="string[pyarrow]")})
    shutil.rmtree(ids_folder)
    table_snapshot.save(damaged, ids_folder)  # one row short: another run's ids, never this one's
    built = []
    row_ids = loaded_run._row_ids
    monkeypatch.setattr(loaded_run, "_row_ids", lambda table: built.append(len(table)) or row_ids(table))
    again = loading.load_cached(source)
    assert built == [150]
    _assert_same_run(again, first)
    assert table_snapshot.wait_kept(timeout=60)
    assert table_snapshot.cached(ids_folder)["row_id"].tolist() == first.table.index.tolist()


def test_a_grown_run_opened_again_after_a_restart_comes_from_its_snapshot_and_equals_the_first(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    write_lines(folder / "step-001.jsonl", 0, 150)
    source = sources.source_from_path(str(folder))
    loading.load_cached(source)
    [dataset] = loading.prepare(source).folders
    kept = sorted((dataset / datasets.TABLE).iterdir())
    write_lines(folder / "step-002.jsonl", 150, 40)  # the run grows: its kept table is not rebuilt
    grown = sources.followed(source)
    assert len(loading.load_cached(grown).table) == 190
    assert sorted((dataset / datasets.TABLE).iterdir()) == kept

    loading.clear_cache()  # a new server process: the grown dataset is decoded once, then kept
    loading._LATEST.clear()
    first = loading.load_cached(grown)
    assert len(first.table) == 190 and table_snapshot.wait_kept(timeout=60)
    assert len(list((tmp_path / "cache" / "opened").iterdir())) == 2  # its table and row ids; older ones gone
    _restarted(monkeypatch)
    _assert_same_run(loading.load_cached(grown), first)


def test_an_upload_keeps_no_snapshot_in_the_shared_cache(tmp_path):
    source = sources.stage_uploads([("mine.jsonl", "".join(f"{line}\n" for line in SOURCE_LINES[:20]).encode())])
    assert len(loading.load(source).table) == 20
    assert not (tmp_path / "cache" / "opened").exists()
