"""A chunk's result shipped from a worker through a RAM-backed file (scoring.runs.transfer)."""

from __future__ import annotations

import errno
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollout_fixtures import diverse_rows, write_jsonl

from scoring.rollouts import RowError
from scoring.runs import score_files, transfer
from scoring.runs.chunks import Codes

#: The share of /dev/shm the workers keep free (the tests below set their own).
KEEP_FREE = transfer.SHARED_MEMORY_KEEP_FREE


@pytest.fixture(autouse=True)
def _any_free_space_will_do(monkeypatch):
    """The tests' folders are on whatever disk holds the temporary folder, however full: the
    share of it kept free is tested on its own."""
    monkeypatch.setattr(transfer, "SHARED_MEMORY_KEEP_FREE", 0.0)


def _shipped(value, folder) -> object:
    """``value`` through ``ShippedResult`` as the process pool pickles results (its default protocol)."""
    return pickle.loads(pickle.dumps(transfer.ShippedResult(value, folder), protocol=4))


def _counting(received: list):
    """``transfer.receive`` that also notes each file it receives (named as the real one, so a
    message that names it -- pickled here or in a worker -- calls it)."""
    real = transfer.receive

    def receive(*args):
        received.append(args[0])
        return real(*args)

    receive.__module__, receive.__qualname__ = transfer.__name__, "receive"
    return receive


def _result(rows: int) -> dict:
    """A result shaped like a chunk's: numpy columns, Arrow text, codes, errors."""
    rng = np.random.default_rng(rows)
    texts = ["x" * int(n) for n in rng.integers(0, 300, rows)]
    return {
        "columns": {
            "score": rng.random(rows),
            "source_line": (np.arange(rows, dtype=np.int64), np.zeros(rows, dtype=bool)),
            "response": pa.array(texts, type=pa.string()),
            "empty": pa.nulls(rows, type=pa.string()),
            "scorer": Codes(np.zeros(rows, dtype=np.int32), ["trace"]),
        },
        "errors": [RowError("a.jsonl", 3, "response", "a reason")],
        "n": rows,
    }


def _assert_same(got: dict, expected: dict) -> None:
    assert got["n"] == expected["n"] and got["errors"] == expected["errors"]
    a, b = got["columns"], expected["columns"]
    assert list(a) == list(b)
    np.testing.assert_array_equal(a["score"], b["score"])
    np.testing.assert_array_equal(a["source_line"][0], b["source_line"][0])
    assert a["response"].equals(b["response"]) and a["empty"].equals(b["empty"])
    assert a["scorer"].categories == b["scorer"].categories
    np.testing.assert_array_equal(a["scorer"].codes, b["scorer"].codes)


def _files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_a_large_result_goes_through_a_file_handed_back_once_received(tmp_path, monkeypatch):
    received = []
    monkeypatch.setattr(transfer, "receive", _counting(received))
    value = _result(3000)
    got = _shipped(value, str(tmp_path))
    _assert_same(got, value)
    assert len(received) == 1 and Path(received[0]).parent == tmp_path
    assert _files(tmp_path) == [Path(received[0]).name + transfer.FREE_SUFFIX]  # read, and handed back
    score = got["columns"]["score"]
    assert score.flags.writeable and score.ctypes.data % 8 == 0
    score[0] = -1.0  # the receiver's own memory, not the file's
    assert score[0] == -1.0
    for buffer in got["columns"]["response"].buffers():
        assert buffer is None or buffer.address % transfer.BUFFER_ALIGNMENT == 0


def test_a_process_writes_its_next_results_over_the_files_handed_back(tmp_path, monkeypatch):
    """The next result takes a file back (its pages already there); one not yet received is
    never written over; a result smaller than what the file holds arrives alone, a larger one
    grows the file."""
    monkeypatch.setattr(transfer, "SHIPPED_MIN_BYTES", 0)
    first = transfer.ShippedResult(_result(3000), str(tmp_path)).__reduce__()
    second = transfer.ShippedResult(_result(2000), str(tmp_path)).__reduce__()
    assert first[0] is second[0] is transfer.receive
    assert first[1][0] != second[1][0]  # the first not yet received: a second file
    inode = os.stat(first[1][0]).st_ino
    _assert_same(first[0](*first[1]), _result(3000))
    smaller = transfer.ShippedResult(_result(500), str(tmp_path)).__reduce__()
    assert smaller[1][0] == first[1][0] and os.stat(smaller[1][0]).st_ino == inode  # the same file again
    assert os.stat(smaller[1][0]).st_size > max(o + n for o, n in smaller[1][2])  # the old result's bytes beyond
    _assert_same(smaller[0](*smaller[1]), _result(500))
    larger = transfer.ShippedResult(_result(9000), str(tmp_path)).__reduce__()
    assert larger[1][0] == first[1][0]
    _assert_same(larger[0](*larger[1]), _result(9000))
    _assert_same(second[0](*second[1]), _result(2000))
    assert _files(tmp_path) == sorted(Path(r[1][0]).name + transfer.FREE_SUFFIX for r in (first, second))


def _numbers(seed: int, size: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"columns": {"a": rng.random(size), "b": pa.array(rng.random(size).astype(str).tolist())}, "n": size}


@settings(max_examples=30, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(1, 4000), st.lists(st.integers(0, 7), max_size=3)), min_size=1, max_size=14))
def test_a_result_still_held_is_never_written_over_by_the_next(tmp_path_factory, steps):
    """Results arrive one after another while earlier ones are kept or let go in any order:
    every result kept reads what was sent, whatever block it was read into and reused."""
    folder = str(tmp_path_factory.mktemp("results"))
    held: dict[int, tuple[dict, dict]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transfer, "SHIPPED_MIN_BYTES", 0)
        patch.setattr(transfer, "SHARED_MEMORY_KEEP_FREE", 0.0)
        for seed, (size, dropped) in enumerate(steps):
            for position in dropped:
                if held:
                    del held[sorted(held)[position % len(held)]]
            sent = _numbers(seed, size)
            held[seed] = (sent, _shipped(sent, folder))
            for expected, got in held.values():
                np.testing.assert_array_equal(got["columns"]["a"], expected["columns"]["a"])
                assert got["columns"]["b"].equals(expected["columns"]["b"])


def test_a_block_nothing_uses_any_more_takes_the_next_result(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "SHIPPED_MIN_BYTES", 0)
    first = _shipped(_numbers(1, 3000), str(tmp_path))
    address = first["columns"]["a"].ctypes.data
    second = _shipped(_numbers(2, 3000), str(tmp_path))
    assert second["columns"]["a"].ctypes.data != address  # the first still holds its block
    del first
    third = _shipped(_numbers(3, 3000), str(tmp_path))
    assert third["columns"]["a"].ctypes.data == address  # its block again, once let go
    np.testing.assert_array_equal(third["columns"]["a"], _numbers(3, 3000)["columns"]["a"])
    with transfer.results_folder(str(tmp_path)):
        pass
    assert transfer._landing.blocks == []  # a pool's end lets them go


def test_a_file_far_larger_than_its_next_result_is_cut_down(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "REUSED_FILE_SLACK_BYTES", 0)
    large = transfer.ShippedResult(_result(20000), str(tmp_path)).__reduce__()
    large[0](*large[1])
    small = transfer.ShippedResult(_result(3000), str(tmp_path)).__reduce__()
    assert small[1][0] == large[1][0]
    end = max(o + n for o, n in small[1][2])
    assert os.stat(small[1][0]).st_size == end + -end % transfer.BUFFER_ALIGNMENT  # its result, padded
    _assert_same(small[0](*small[1]), _result(3000))


@settings(max_examples=40, deadline=None)
@given(
    columns=st.lists(
        st.one_of(
            st.lists(st.floats(allow_nan=False), max_size=50).map(np.array),
            st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50).map(lambda v: np.array(v, dtype=np.int64)),
            st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=50).map(
                lambda v: pa.array(v, type=pa.string())
            ),
        ),
        max_size=8,
    ),
    through_file=st.booleans(),
)
def test_any_result_arrives_as_it_was_sent(tmp_path_factory, columns, through_file):
    """Whatever the buffers (none, empty, odd lengths that need padding), by file or by message."""
    folder = tmp_path_factory.mktemp("results") if through_file else None
    value = {"columns": dict(enumerate(columns)), "n": len(columns)}
    received: list = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transfer, "SHIPPED_MIN_BYTES", 0)
        patch.setattr(transfer, "SHARED_MEMORY_KEEP_FREE", 0.0)
        patch.setattr(transfer, "receive", _counting(received))
        got = _shipped(value, None if folder is None else str(folder))
    assert len(received) == (1 if folder is not None else 0)
    assert got["n"] == value["n"] and list(got["columns"]) == list(value["columns"])
    for key, sent in value["columns"].items():
        arrived = got["columns"][key]
        if isinstance(sent, np.ndarray):
            np.testing.assert_array_equal(arrived, sent)
            assert arrived.dtype == sent.dtype
        else:
            assert arrived.equals(sent)
    assert folder is None or all(name.endswith(transfer.FREE_SUFFIX) for name in _files(folder))


def test_a_small_result_or_no_folder_goes_in_the_message(tmp_path):
    for value, folder in ((_result(5), str(tmp_path)), (_result(3000), None), (_result(3000), str(tmp_path / "gone"))):
        reduced = transfer.ShippedResult(value, folder).__reduce__()
        assert reduced[0] is not transfer.receive
        _assert_same(_shipped(value, folder), value)
    assert list(tmp_path.iterdir()) == []


def test_a_full_folder_sends_the_result_in_the_message_and_leaves_nothing(tmp_path, monkeypatch):
    def full(descriptor, pieces):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(transfer.os, "writev", full)
    value = _result(3000)
    assert transfer.ShippedResult(value, str(tmp_path)).__reduce__()[0] is not transfer.receive
    _assert_same(_shipped(value, str(tmp_path)), value)
    assert list(tmp_path.iterdir()) == []


def test_a_result_that_would_take_the_last_of_shared_memory_goes_in_the_message(tmp_path, monkeypatch):
    """Only while half the filesystem stays free after it: /dev/shm is the machine's."""
    monkeypatch.setattr(transfer, "SHARED_MEMORY_KEEP_FREE", KEEP_FREE)
    assert KEEP_FREE == 0.5
    value = _result(3000)
    size = sum(pickle.PickleBuffer(b).raw().nbytes for b in value["columns"]["response"].buffers() if b is not None)
    real = os.statvfs(tmp_path)

    def space(free_blocks: int):
        fields = list(real)
        fields[0] = fields[1] = 1  # f_bsize, f_frsize: blocks of one byte
        fields[2], fields[3], fields[4] = 1_000_000_000, free_blocks, free_blocks  # f_blocks, f_bfree, f_bavail
        return os.statvfs_result(fields)

    monkeypatch.setattr(transfer.os, "statvfs", lambda path: space(500_000_000 + size // 2))
    assert transfer.ShippedResult(value, str(tmp_path)).__reduce__()[0] is not transfer.receive
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(transfer.os, "statvfs", lambda path: space(500_000_000 + 2 * size + 4096))
    reduced = transfer.ShippedResult(value, str(tmp_path)).__reduce__()
    assert reduced[0] is transfer.receive
    _assert_same(reduced[0](*reduced[1]), value)


def test_a_file_handed_back_grows_only_while_the_share_stays_free(tmp_path, monkeypatch):
    """Only what a taken-back file must grow by counts against the share kept free; a result that
    would take too much goes in the message, and the file stays free for the next."""
    monkeypatch.setattr(transfer, "SHIPPED_MIN_BYTES", 0)
    first = transfer.ShippedResult(_result(3000), str(tmp_path)).__reduce__()
    first[0](*first[1])
    held = os.stat(first[1][0] + transfer.FREE_SUFFIX).st_size
    real = os.statvfs(tmp_path)
    monkeypatch.setattr(transfer, "SHARED_MEMORY_KEEP_FREE", KEEP_FREE)

    def space(free_bytes: int):
        fields = list(real)
        fields[0] = fields[1] = 1  # blocks of one byte
        fields[2], fields[3], fields[4] = 1_000_000_000, 500_000_000 + free_bytes, 500_000_000 + free_bytes
        return os.statvfs_result(fields)

    monkeypatch.setattr(transfer.os, "statvfs", lambda path: space(0))  # not a byte to spare
    same_size = transfer.ShippedResult(_result(3000), str(tmp_path)).__reduce__()
    assert same_size[0] is transfer.receive and same_size[1][0] == first[1][0]  # no growth: written over
    _assert_same(same_size[0](*same_size[1]), _result(3000))
    larger = transfer.ShippedResult(_result(9000), str(tmp_path)).__reduce__()
    assert larger[0] is not transfer.receive  # it would grow the file: in the message
    _assert_same(larger[0](*larger[1]), _result(9000))
    assert _files(tmp_path) == [Path(first[1][0]).name + transfer.FREE_SUFFIX]  # free for the next
    monkeypatch.setattr(transfer.os, "statvfs", lambda path: space(4 * held))
    grown = transfer.ShippedResult(_result(9000), str(tmp_path)).__reduce__()
    assert grown[0] is transfer.receive and grown[1][0] == first[1][0]


def test_a_file_gone_or_cut_short_gives_a_lost_result(tmp_path):
    """/dev/shm emptied under a run (systemd's RemoveIPC at logout, an operator): never a crash."""
    value = _result(3000)
    receive, (path, rest, offsets) = transfer.ShippedResult(value, str(tmp_path)).__reduce__()
    assert receive is transfer.receive
    with open(path, "r+b") as handle:
        handle.truncate(offsets[-1][0])  # the last buffer cut off
    lost = transfer.receive(path, rest, offsets)
    assert isinstance(lost, transfer.LostResult) and "bytes of the" in lost.reason
    assert not Path(path).exists() and Path(path + transfer.FREE_SUFFIX).exists()  # handed back
    _, (path, rest, offsets) = transfer.ShippedResult(value, str(tmp_path)).__reduce__()
    os.unlink(path)
    lost = transfer.receive(path, rest, offsets)
    assert isinstance(lost, transfer.LostResult) and "FileNotFoundError" in lost.reason


def test_short_writes_are_written_on(tmp_path, monkeypatch):
    real = os.writev

    def short(descriptor, pieces):  # at most 1,000 bytes a call, as a write may stop short
        taken, left = [], 1000
        for piece in pieces:
            if left <= 0:
                break
            taken.append(memoryview(piece)[:left])
            left -= len(taken[-1])
        return real(descriptor, taken)

    monkeypatch.setattr(transfer.os, "writev", short)
    value = _result(3000)
    _assert_same(_shipped(value, str(tmp_path)), value)


def test_the_results_folder_is_private_and_removed_with_what_is_left(tmp_path):
    with transfer.results_folder(str(tmp_path)) as folder:
        assert Path(folder).parent == tmp_path and os.stat(folder).st_mode & 0o777 == 0o700
        (Path(folder) / "left-behind").write_bytes(b"x")
    assert list(tmp_path.iterdir()) == []
    with transfer.results_folder(str(tmp_path / "no-such-folder")) as folder:
        assert folder is None


def test_folders_left_by_ended_runs_are_removed_and_every_other_kept(tmp_path):
    """Removed: this namespace's, a pid that is gone, unchanged for long enough. Kept: a live
    pid, a recent one, another PID namespace's (a container sharing /dev/shm), anything else."""
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(ended.stdout)
    namespace = str(os.stat("/proc/self/ns/pid").st_ino) if Path("/proc/self/ns/pid").exists() else "0"
    prefix = transfer.FOLDER_PREFIX
    old = time.time() - transfer.ABANDONED_AFTER_SECONDS - 60
    folders = {}
    for name, pid, space, age in (
        ("abandoned", dead_pid, namespace, old),
        ("recent", dead_pid, namespace, time.time()),
        ("live", os.getpid(), namespace, old),
        ("other namespace", dead_pid, namespace + "1", old),
    ):
        folder = tmp_path / f"{prefix}{space}-{pid}-x{len(folders)}"
        folder.mkdir()
        (folder / "1-0").write_bytes(b"x" * 100)
        os.utime(folder, (age, age))
        folders[name] = folder
    for odd in (f"{prefix}not-a-pid", "someone-else"):
        (tmp_path / odd).mkdir()
        os.utime(tmp_path / odd, (old, old))
    removed = transfer.remove_abandoned(str(tmp_path))
    assert removed == [str(folders["abandoned"])]
    assert not folders["abandoned"].exists()
    assert all(folders[name].exists() for name in ("recent", "live", "other namespace"))
    assert (tmp_path / f"{prefix}not-a-pid").exists() and (tmp_path / "someone-else").exists()
    with transfer.results_folder(str(tmp_path)) as folder:
        assert Path(folder).name.startswith(f"{prefix}{namespace}-{os.getpid()}-")
    assert not Path(folder).exists()


def test_workers_ship_large_chunks_through_the_folder_and_give_the_single_process_table(tmp_path, monkeypatch):
    """Chunks large enough to go through files (their texts over SHIPPED_MIN_BYTES): the table
    and errors equal the single process's, and the pool's folder is gone afterwards."""
    rows = [dict(r, id=f"x{i}", response="word " * 800 + r["response"]) for i, r in enumerate(diverse_rows() * 12)]
    path = write_jsonl(tmp_path / "a.jsonl", rows, extra_lines=["{broken"])
    root = Path(transfer.SHARED_MEMORY_ROOT)
    if not (root.is_dir() and os.access(root, os.W_OK)):
        pytest.skip(f"no writable {root}: results travel in the message")
    space = os.statvfs(root)
    if space.f_bavail * space.f_frsize < space.f_blocks * space.f_frsize * KEEP_FREE + (64 << 20):
        pytest.skip(f"{root} is over half full: the workers keep their results out of it")
    ours = f"{transfer.FOLDER_PREFIX}*-{os.getpid()}-*"  # this process's pools only: others may run beside it
    before = set(root.glob(ours))
    chunk_rows = len(rows) // 2
    assert chunk_rows * 4000 > transfer.SHIPPED_MIN_BYTES
    single = score_files(path, workers=1, chunk_rows=chunk_rows)
    received = []
    monkeypatch.setattr(transfer, "receive", _counting(received))  # results are unpickled in this process
    multi = score_files(path, workers=2, chunk_rows=chunk_rows)
    assert multi.workers == 2 and len(received) == 2  # both chunks came through files
    pd.testing.assert_frame_equal(single.table, multi.table)
    pd.testing.assert_frame_equal(single.errors, multi.errors)
    assert set(root.glob(ours)) == before


def test_a_result_lost_on_its_way_is_scored_again_here(tmp_path, monkeypatch, caplog):
    """Every other file removed before it is read: those chunks are scored in this process, and
    the table and errors are still the single process's."""
    rows = [dict(r, id=f"x{i}", response="word " * 1600 + r["response"]) for i, r in enumerate(diverse_rows() * 12)]
    path = write_jsonl(tmp_path / "a.jsonl", rows, extra_lines=["{broken"])
    root = Path(transfer.SHARED_MEMORY_ROOT)
    if not (root.is_dir() and os.access(root, os.W_OK)):
        pytest.skip(f"no writable {root}: results travel in the message")
    chunk_rows = len(rows) // 4
    assert chunk_rows * 8000 > transfer.SHIPPED_MIN_BYTES
    single = score_files(path, workers=1, chunk_rows=chunk_rows)
    real, received = transfer.receive, []

    def receive(path, rest, offsets):
        received.append(path)
        if len(received) % 2:
            os.unlink(path)
        return real(path, rest, offsets)

    receive.__module__, receive.__qualname__ = transfer.__name__, "receive"
    monkeypatch.setattr(transfer, "receive", receive)
    with caplog.at_level("WARNING", logger="scoring.runs.pipeline"):
        multi = score_files(path, workers=2, chunk_rows=chunk_rows)
    assert multi.workers == 2 and len(received) >= 4
    lost = [record for record in caplog.records if "was lost" in record.getMessage()]
    assert len(lost) == (len(received) + 1) // 2
    pd.testing.assert_frame_equal(single.table, multi.table)
    pd.testing.assert_frame_equal(single.errors, multi.errors)
