"""One writer per dataset folder across processes (scoring.datasets.lock), and a first write
that was cut short is started over, never mistaken for a folder of someone else's files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from lock_holder import Holder, free_for_another_process
from test_store import SAMPLE_FILES, assert_dataset_equals

from scoring import datasets, engines
from scoring.datasets import parts as dataset_parts


def test_a_folder_another_process_writes_is_busy_and_a_writer_waits_for_it(tmp_path):
    ds = tmp_path / "ds"
    holder = Holder(ds, tmp_path / "signals")
    try:
        with (
            pytest.raises(datasets.DatasetBusy, match=f"{ds} is being written by another process"),
            datasets.writing(ds, timeout=0.2),
        ):
            pass
        with datasets.writing_if_free(ds) as free:
            assert free is False
        outcome: dict = {}
        writer = threading.Thread(target=lambda: outcome.update(update=engines.score_to_dataset(SAMPLE_FILES[:2], ds, workers=1)))
        writer.start()
        writer.join(timeout=1.5)
        assert writer.is_alive(), "the writer went ahead while another process held the folder"
        assert not datasets.is_dataset(ds)
    finally:
        holder.release()
    writer.join(timeout=300)
    assert not writer.is_alive()
    assert outcome["update"].new == [str(p) for p in SAMPLE_FILES[:2]]
    assert_dataset_equals(ds, SAMPLE_FILES[:2])


def test_a_writer_holds_the_folder_against_other_processes_and_lets_go_after(tmp_path):
    ds = tmp_path / "ds"
    with datasets.writing(ds) as folder:
        assert folder == ds and (ds / datasets.LOCK_NAME).is_file()
        assert free_for_another_process(ds) is False
    assert free_for_another_process(ds) is True


def test_two_threads_of_one_process_take_turns(tmp_path):
    ds = tmp_path / "ds"
    outcome: list = []
    with datasets.writing(ds):
        thread = threading.Thread(target=lambda: outcome.append(_try_in_thread(ds)))
        thread.start()
        thread.join()
    assert isinstance(outcome[0], datasets.DatasetBusy) and "another thread" in str(outcome[0])
    thread = threading.Thread(target=lambda: outcome.append(_try_in_thread(ds)))
    thread.start()
    thread.join()
    assert outcome[1] is None


def _try_in_thread(ds: Path) -> BaseException | None:
    try:
        with datasets.writing(ds, timeout=0.1):
            return None
    except datasets.DatasetBusy as exc:
        return exc


def test_a_killed_writer_leaves_the_folder_free(tmp_path):
    ds = tmp_path / "ds"
    holder = Holder(ds, tmp_path / "signals")
    holder.kill()
    with datasets.writing(ds, timeout=10):
        assert free_for_another_process(ds) is False


def test_a_folder_removed_while_a_writer_waited_is_locked_anew_not_through_the_removed_file(tmp_path):
    ds = tmp_path / "ds"
    holder = Holder(ds, tmp_path / "signals", remove=True)
    entered = threading.Event()
    leave = threading.Event()

    def wait_then_hold() -> None:
        with datasets.writing(ds, timeout=60):
            entered.set()
            leave.wait(60)

    waiter = threading.Thread(target=wait_then_hold)
    waiter.start()
    time.sleep(0.3)  # the waiter has opened the lock file the holder will remove
    holder.release()
    assert entered.wait(60)
    try:
        assert ds.is_dir() and (ds / datasets.LOCK_NAME).is_file()
        assert free_for_another_process(ds) is False  # the lock is on the file there now
    finally:
        leave.set()
        waiter.join(timeout=60)


def test_a_first_write_cut_short_is_started_over(tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    original = dataset_parts._put_in_place
    calls = []

    def interrupt_second(source, target):
        calls.append(target)
        if len(calls) == 2:
            raise KeyboardInterrupt
        original(source, target)

    monkeypatch.setattr(dataset_parts, "_put_in_place", interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        engines.score_to_dataset(SAMPLE_FILES[:2], ds, workers=1)
    monkeypatch.setattr(dataset_parts, "_put_in_place", original)
    assert not datasets.is_dataset(ds) and any((ds / datasets.PARTS).iterdir())
    (ds / f".{datasets.MANIFEST}.12345.tmp").write_text('{"half": ', encoding="utf-8")  # a killed manifest write
    update = engines.score_to_dataset(SAMPLE_FILES[:2], ds, workers=1)
    assert update.new == [str(p) for p in SAMPLE_FILES[:2]]
    assert_dataset_equals(ds, SAMPLE_FILES[:2])
    named = {n for e in datasets.read_manifest(ds)["files"] for n in (e["part"], e["text_part"], e["errors_part"])}
    named.add(datasets.read_manifest(ds)["run_errors"])
    assert {p.name for p in (ds / datasets.PARTS).iterdir()} == named  # the cut-short write's parts are gone


@pytest.mark.parametrize("foreign", ["notes.txt", ".hidden", "parts.bak", ".manifest.json.txt"])
def test_a_file_of_someone_else_beside_a_writers_files_is_still_refused(tmp_path, foreign):
    ds = tmp_path / "ds"
    (ds / datasets.PARTS).mkdir(parents=True)
    (ds / foreign).write_text("mine", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no scored dataset"):
        engines.score_to_dataset(SAMPLE_FILES[:1], ds, workers=1)
    assert (ds / foreign).read_text(encoding="utf-8") == "mine"


def test_the_lock_file_is_private(tmp_path):
    ds = tmp_path / "ds"
    with datasets.writing(ds):
        assert os.stat(ds / datasets.LOCK_NAME).st_mode & 0o077 == 0


def test_holding_a_held_folder_again_in_its_thread_is_a_no_op_and_keeps_it_held(tmp_path):
    ds = tmp_path / "ds"
    with datasets.writing(ds):
        update = engines.score_to_dataset(SAMPLE_FILES[:1], ds, workers=1)  # takes the folder itself
        assert update.new == [str(SAMPLE_FILES[0])]
        assert free_for_another_process(ds) is False  # the inner writer let go of nothing
        assert (ds / datasets.LOCK_NAME).is_file()
        outcome: list = []
        thread = threading.Thread(target=lambda: outcome.append(_try_in_thread(ds)))
        thread.start()
        thread.join()
        assert isinstance(outcome[0], datasets.DatasetBusy)  # another thread is still kept out
    assert free_for_another_process(ds) is True
    assert_dataset_equals(ds, SAMPLE_FILES[:1])


def test_clearing_a_held_folder_keeps_its_lock_and_keeps_others_out(tmp_path):
    ds = tmp_path / "ds"
    engines.score_to_dataset(SAMPLE_FILES[:1], ds, workers=1)
    (ds / "notes.txt").write_text("someone's", encoding="utf-8")
    (ds / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "kept.txt").write_text("not in the folder", encoding="utf-8")
    with datasets.writing(ds):
        datasets.clear_held(ds)
        assert [p.name for p in ds.iterdir()] == [datasets.LOCK_NAME]
        assert free_for_another_process(ds) is False
        update = engines.score_to_dataset(SAMPLE_FILES[:1], ds, workers=1)  # started over, still held
        assert update.new == [str(SAMPLE_FILES[0])]
    assert (tmp_path / "elsewhere" / "kept.txt").is_file()  # a link is removed, never followed
    assert_dataset_equals(ds, SAMPLE_FILES[:1])
