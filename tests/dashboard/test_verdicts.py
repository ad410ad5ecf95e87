"""Review verdicts on disk: append-only history, latest wins, restarts, exports joined with rows, real
multi-process concurrency, and locked / read-only / foreign files that lose nothing.

Cost measurement (not a test): ``python tests/dashboard/test_verdicts.py``.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dashboard import verdicts as vd  # noqa: E402
from dashboard.verdicts import VerdictStore, VerdictStoreError  # noqa: E402

NOBODY = 65534


def rows_table() -> pd.DataFrame:
    index = pd.Index(["a.jsonl:1", "a.jsonl:2", "b.jsonl:7"], name="row_id")
    return pd.DataFrame(
        {
            "run": ["ckpt-A", "ckpt-A", "ckpt-B"],
            "step": [100, 200, 100],
            "task_id": ["count", "chart", "count"],
            "record_id": ["r1", "r2", "r3"],
            "source_file": ["a.jsonl", "a.jsonl", "b.jsonl"],
            "source_line": [1, 2, 7],
            "score": [0.0, 0.5, float("nan")],
            "response": ['{"answer": 1}', "so the answer is 7", 'naïve "quotes"\nand a newline'],
        },
        index=index,
    )


@pytest.fixture
def store(tmp_path) -> VerdictStore:
    return VerdictStore(tmp_path / "data" / ".rolloutscope" / "verdicts.sqlite", busy_timeout=2.0)


# --------------------------------------------------------------------------- basics


def test_nothing_on_disk_until_the_first_verdict(store):
    assert store.verdicts().empty and store.latest().empty
    assert not store.path.exists() and not store.path.parent.exists()
    assert store.status().writable and store.integrity_check() == "ok"


def test_set_history_latest_and_restart(store):
    rows = rows_table()
    first = store.set_verdict("a.jsonl:1", "gt_wrong", "box off by one", "alice", row=rows.loc["a.jsonl:1"])
    assert first.saved and first.id == 1 and first.record_id == "r1" and first.source_line == 1
    store.set_verdict("a.jsonl:1", "scorer_wrong", "no: the scorer ignores the key", "bob")
    store.set_verdict("b.jsonl:7", "unclear")
    every = store.verdicts()
    assert list(every["verdict"]) == ["gt_wrong", "scorer_wrong", "unclear"] and every["saved"].all()
    latest = store.latest().set_index("row_key")
    assert latest.at["a.jsonl:1", "verdict"] == "scorer_wrong" and latest.at["a.jsonl:1", "revisions"] == 2
    assert store.current("a.jsonl:1").reviewer == "bob"
    assert store.current("nope") is None
    store.close()
    again = VerdictStore(store.path)  # a restarted app
    assert again.verdicts()[["row_key", "verdict", "note"]].equals(every[["row_key", "verdict", "note"]])
    with sqlite3.connect(store.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("DELETE FROM verdicts")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("UPDATE verdicts SET verdict = 'unclear'")
        with pytest.raises(sqlite3.IntegrityError):
            connection.execute(
                "INSERT INTO verdicts (row_key, verdict, created_at) VALUES ('x', 'looks fine', '2026')"
            )


def test_invalid_input_is_refused_before_touching_the_file(store):
    with pytest.raises(ValueError, match="model_wrong, gt_wrong, scorer_wrong, unclear"):
        store.set_verdict("a.jsonl:1", "wrong-ish")
    with pytest.raises(ValueError, match="row's key"):
        store.set_verdict("", "unclear")
    with pytest.raises(ValueError, match="note"):
        store.set_verdict("a.jsonl:1", "unclear", "x" * (vd.NOTE_LIMIT + 1))
    assert not store.path.exists() and not store.pending


def test_latest_is_by_time_given_not_by_save_order(store, tmp_path):
    early = store.make_verdict("a.jsonl:1", "model_wrong", created_at="2026-01-01T00:00:00.000000Z")
    store.set_verdict("a.jsonl:1", "gt_wrong", created_at="2026-01-02T00:00:00.000000Z")
    store.pending.append(early)  # e.g. kept in memory during an outage, saved later
    assert store.flush() == 1
    assert store.current("a.jsonl:1").verdict == "gt_wrong"
    assert store.latest().iloc[0]["revisions"] == 2


def test_default_path_is_one_file_per_data_source_in_the_users_state_folder(tmp_path, monkeypatch):
    from dashboard.sources import DataSource

    monkeypatch.delenv(vd.ENV_VAR, raising=False)
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state), "HOME": str(tmp_path / "home")}
    verdicts = state / "rolloutscope" / "verdicts"
    folder = tmp_path / "runs"
    (folder / "exp1").mkdir(parents=True)
    files = (str(folder / "exp1" / "a.jsonl"), str(folder / "b.jsonl"))
    local = DataSource(kind="path", label="runs", files=files)
    path = vd.default_path(local, env)
    assert path.parent == verdicts and path.name.startswith("runs-") and path.suffix == ".sqlite"
    assert vd.default_path(DataSource(kind="path", label="x", files=files[::-1]), env) == path  # the folder decides
    one = DataSource(kind="path", label="a", files=files[:1])
    assert vd.default_path(one, env).name.startswith("exp1-")
    # a folder of the same name elsewhere is another data source
    other = tmp_path / "elsewhere" / "runs"
    other.mkdir(parents=True)
    assert vd.default_path(DataSource(kind="path", label="r", files=(str(other / "c.jsonl"),)), env) != path
    sample = DataSource(kind="sample", label="sample", files=(str(ROOT / "sample_data" / "x.jsonl"),))
    assert vd.default_path(sample, env) == verdicts / "sample.sqlite"
    upload = DataSource(kind="upload", label="u", files=("/tmp/rolloutscope-uploads/ab/x.jsonl",))
    assert vd.default_path(upload, env) == verdicts / "uploads.sqlite"
    assert vd.default_path(None, env) == verdicts / "default.sqlite"
    # the setting: a file for every source, or a folder holding one file per source
    assert vd.default_path(local, {**env, vd.ENV_VAR: str(tmp_path / "mine.sqlite")}) == tmp_path / "mine.sqlite"
    assert vd.default_path(local, {**env, vd.ENV_VAR: str(tmp_path)}) == tmp_path / path.name
    assert vd.default_path(sample, {**env, vd.ENV_VAR: str(tmp_path / "team") + "/"}) == tmp_path / "team" / "sample.sqlite"
    assert vd.store_for(tmp_path / "x.sqlite") is vd.store_for(str(tmp_path / "." / "x.sqlite"))


def test_unrelated_folders_never_put_the_file_at_the_root(tmp_path):
    from dashboard.sources import DataSource

    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    source = DataSource(kind="path", label="two", files=("/srv/a/run.jsonl", "/home/b/run.jsonl"))
    path = vd.default_path(source, env)
    assert path.parent == tmp_path / "state" / "rolloutscope" / "verdicts" and path.name.startswith("root-")
    assert not str(path).startswith("/.rolloutscope")


def test_state_folder_follows_xdg_and_ignores_a_relative_xdg_state_home(tmp_path):
    assert vd.state_dir({"XDG_STATE_HOME": str(tmp_path / "s"), "HOME": "/nowhere"}) == tmp_path / "s" / "rolloutscope"
    home = {"HOME": str(tmp_path / "home")}
    expected = tmp_path / "home" / ".local" / "state" / "rolloutscope"
    assert vd.state_dir(home) == expected
    assert vd.state_dir({**home, "XDG_STATE_HOME": "relative/state"}) == expected
    assert vd.state_dir({**home, "XDG_STATE_HOME": "  "}) == expected


def test_the_first_verdict_creates_a_private_folder(tmp_path):
    store = VerdictStore(tmp_path / "state" / "verdicts" / "sample.sqlite")
    store.set_verdict("a.jsonl:1", "unclear")
    assert (store.path.parent.stat().st_mode & 0o777) == 0o700


# --------------------------------------------------------------------------- export and filters


def test_export_joins_rows_and_flags_missing_and_changed_rows(store):
    rows = rows_table()
    store.set_verdict("a.jsonl:1", "model_wrong", "wrong count", "alice", row=rows.loc["a.jsonl:1"])
    store.set_verdict("b.jsonl:7", "gt_wrong", 'the "gold" box is off', "bob", row=rows.loc["b.jsonl:7"])
    store.set_verdict("gone.jsonl:3", "unclear", "file was removed", "carol",
                      row={"run": "old", "task_id": "t", "source_file": "gone.jsonl", "source_line": 3})
    changed = rows.copy()
    changed.loc["b.jsonl:7", "response"] = "a re-generated response"

    lines = store.export(changed, "jsonl").decode("utf-8").splitlines()
    records = {r["row_key"]: r for r in map(json.loads, lines)}
    assert set(records) == {"a.jsonl:1", "b.jsonl:7", "gone.jsonl:3"}
    a = records["a.jsonl:1"]
    assert a["verdict"] == "model_wrong" and a["verdict_label"] == "model wrong" and a["note"] == "wrong count"
    assert a["row_found"] is True and a["row_changed"] is False and a["score"] == 0.0 and a["step"] == 100
    assert a["response"] == '{"answer": 1}'
    b = records["b.jsonl:7"]
    assert b["row_changed"] is True and b["score"] is None  # NaN -> null
    gone = records["gone.jsonl:3"]
    assert gone["row_found"] is False and gone["run"] == "old" and gone["source_line"] == 3

    csv = pd.read_csv(io.BytesIO(store.export(changed, "csv")))
    assert len(csv) == 3 and set(csv["row_key"]) == set(records)
    assert csv.set_index("row_key").at["b.jsonl:7", "note"] == 'the "gold" box is off'
    with pytest.raises(ValueError):
        store.export(rows, "xlsx")

    store.set_verdict("a.jsonl:1", "unclear")
    assert len(store.export(rows, "jsonl", history=True).decode().splitlines()) == 4
    assert len(store.export(rows, "jsonl").decode().splitlines()) == 3


def test_filters(store):
    rows = rows_table()
    store.set_verdict("a.jsonl:1", "model_wrong", "Count is off", "alice", row=rows.loc["a.jsonl:1"])
    store.set_verdict("a.jsonl:2", "gt_wrong", "label typo", "bob", row=rows.loc["a.jsonl:2"])
    store.set_verdict("b.jsonl:7", "gt_wrong", "", "alice", row=rows.loc["b.jsonl:7"])
    joined = vd.join_rows(store.latest(), rows)
    assert set(vd.filter_verdicts(joined, kinds=["gt_wrong"])["row_key"]) == {"a.jsonl:2", "b.jsonl:7"}
    assert set(vd.filter_verdicts(joined, reviewers=["alice"])["row_key"]) == {"a.jsonl:1", "b.jsonl:7"}
    assert set(vd.filter_verdicts(joined, runs=["ckpt-B"])["row_key"]) == {"b.jsonl:7"}
    assert set(vd.filter_verdicts(joined, tasks=["chart"])["row_key"]) == {"a.jsonl:2"}
    assert set(vd.filter_verdicts(joined, text="COUNT")["row_key"]) == {"a.jsonl:1"}
    assert len(vd.filter_verdicts(joined, kinds=[], reviewers=None)) == 3


# --------------------------------------------------------------------------- concurrency


def _writer(path: str, worker: int, count: int, barrier, shared_store) -> None:
    store = shared_store if shared_store is not None else VerdictStore(path, busy_timeout=30.0)
    barrier.wait()
    for i in range(count):
        store.set_verdict(
            f"row:{i % 37}", vd.VERDICTS[(worker + i) % 4], f"worker {worker} verdict {i}", f"reviewer-{worker}"
        )


def test_many_processes_writing_at_once_lose_and_corrupt_nothing(tmp_path):
    path = str(tmp_path / "verdicts.sqlite")
    processes_n, per_process = 6, 150
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    barrier = context.Barrier(processes_n + 1)
    inherited = VerdictStore(path, busy_timeout=30.0)  # used across fork by one worker: must reopen, not share
    inherited.set_verdict("row:0", "unclear", "before the fork")
    workers = [
        context.Process(target=_writer, args=(path, w, per_process, barrier, inherited if w == 0 else None))
        for w in range(processes_n)
    ]
    for p in workers:
        p.start()
    threads = [threading.Thread(target=_writer, args=(path, 100 + t, 50, _NoBarrier(), None)) for t in range(3)]
    barrier.wait()
    for t in threads:
        t.start()
    inherited.set_verdict("row:1", "unclear", "parent while children write")
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    for t in threads:
        t.join(120)

    store = VerdictStore(path)
    every = store.verdicts()
    expected = 2 + processes_n * per_process + 3 * 50
    assert len(every) == expected and every["id"].is_unique
    notes = set(every["note"])
    for w in range(processes_n):
        for i in range(per_process):
            assert f"worker {w} verdict {i}" in notes
    assert store.integrity_check() == "ok"
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    latest = store.latest()
    assert latest["row_key"].is_unique and len(latest) == 37
    assert int(latest["revisions"].sum()) == expected


class _NoBarrier:
    def wait(self) -> None:
        return None


def _fresh_writer(path: str, worker: int, count: int, barrier, fresh_each_time: bool) -> None:
    """Writes with the default busy timeout; ``fresh_each_time``: a new store (new connections) per verdict."""
    store = VerdictStore(path)
    barrier.wait()
    for i in range(count):
        if fresh_each_time:
            store.close()
            store = VerdictStore(path)
        store.set_verdict(f"row:{i % 41}", vd.VERDICTS[(worker + i) % 4], f"w{worker}-{i}", f"reviewer-{worker}")
    store.close()


def test_writers_racing_on_a_brand_new_database_all_succeed(tmp_path):
    """4 processes x 350 verdicts, started together on a file that does not exist yet: the first
    connections race on the journal-mode switch and the schema, and every verdict is stored."""
    path = str(tmp_path / "new" / "verdicts.sqlite")
    processes_n, per_process = 4, 350
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    barrier = context.Barrier(processes_n)
    workers = [context.Process(target=_fresh_writer, args=(path, w, per_process, barrier, w % 2 == 1))
               for w in range(processes_n)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(300)
    assert [p.exitcode for p in workers] == [0] * processes_n
    every = VerdictStore(path).verdicts()
    assert len(every) == processes_n * per_process and every["id"].is_unique
    assert set(every["note"]) == {f"w{w}-{i}" for w in range(processes_n) for i in range(per_process)}
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _hold_write_lock(path: str, seconds: float, held, exclusive: bool) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN EXCLUSIVE" if exclusive else "BEGIN IMMEDIATE")
    held.set()
    time.sleep(seconds)
    connection.execute("ROLLBACK")
    connection.close()


def _locker(path: str, seconds: float, *, exclusive: bool = False):
    """Another process holding the file's write lock for ``seconds`` (started and holding on return)."""
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    held = context.Event()
    process = context.Process(target=_hold_write_lock, args=(path, seconds, held, exclusive))
    process.start()
    assert held.wait(30)
    return process


def test_a_read_does_not_wait_for_a_write_queued_behind_another_process(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    store = VerdictStore(path, busy_timeout=10.0)
    store.set_verdict("a.jsonl:1", "model_wrong", "before")
    locker = _locker(str(path), 2.0)
    outcome: dict = {}

    def write() -> None:
        started = time.monotonic()
        outcome["saved"] = store.set_verdict("a.jsonl:2", "gt_wrong", "queued")
        outcome["waited"] = time.monotonic() - started

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)
    started = time.monotonic()
    shown = store.verdicts()
    current = store.current("a.jsonl:1")
    read_time = time.monotonic() - started
    assert writer.is_alive(), "the write should still be waiting for the other process"
    assert read_time < 1.0 and list(shown["note"]) == ["before"] and current.note == "before"
    writer.join(30)
    locker.join(30)
    assert outcome["saved"].saved and outcome["waited"] > 1.0
    assert list(VerdictStore(path).verdicts()["note"]) == ["before", "queued"]


def test_the_busy_timeout_holds_from_the_very_first_connection(tmp_path):
    """The file exists (another program created it) and is locked when the store first opens it:
    the store's first statements (journal mode, schema) wait like any write and then succeed."""
    path = tmp_path / "verdicts.sqlite"
    sqlite3.connect(path).close()
    locker = _locker(str(path), 1.0, exclusive=True)
    store = VerdictStore(path, busy_timeout=8.0)
    started = time.monotonic()
    saved = store.set_verdict("a.jsonl:1", "unclear", "first")
    assert saved.saved and time.monotonic() - started > 0.5
    locker.join(30)
    assert list(store.verdicts()["note"]) == ["first"]


def test_the_locked_message_says_how_long_it_really_waited(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    VerdictStore(path).set_verdict("a.jsonl:1", "unclear")
    locker = _locker(str(path), 2.5)
    store = VerdictStore(path, busy_timeout=1.5)
    started = time.monotonic()
    with pytest.raises(VerdictStoreError) as caught:
        store.set_verdict("a.jsonl:2", "gt_wrong")
    elapsed = time.monotonic() - started
    locker.join(30)
    error = caught.value
    assert error.kind == vd.LOCKED
    waited = float(re.search(r"waited (\d+\.\d) s", error.message).group(1))
    assert waited + 0.05 >= 1.5 and abs(waited - elapsed) < 0.3, (waited, elapsed)
    assert "the limit is 1.5 s" in error.message and "NOT saved" in error.message


# --------------------------------------------------------------------------- bad files


def test_locked_file_keeps_the_verdict_in_memory_then_saves_it(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    store = VerdictStore(path, busy_timeout=0.2)
    store.set_verdict("a.jsonl:1", "model_wrong")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.perf_counter()
        with pytest.raises(VerdictStoreError) as caught:
            store.set_verdict("a.jsonl:2", "gt_wrong", "written while locked", "alice")
        assert time.perf_counter() - started < 5
        error = caught.value
        assert error.kind == vd.LOCKED and "locked" in error.message and "NOT saved" in error.message
        assert error.verdict.note == "written while locked"
        assert [v.row_key for v in store.pending] == ["a.jsonl:2"]
        shown = store.verdicts()  # still readable (WAL), the unsaved one marked
        assert list(shown["saved"]) == [True, False]
        with pytest.raises(VerdictStoreError):
            store.flush()
        assert len(store.pending) == 1
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    saved = store.set_verdict("a.jsonl:3", "unclear")  # the pending one goes first, same transaction
    assert saved.saved and not store.pending
    assert list(VerdictStore(path).verdicts()["row_key"]) == ["a.jsonl:1", "a.jsonl:2", "a.jsonl:3"]


def test_one_verdict_for_many_rows_is_one_transaction_and_the_latest_per_row_is_found(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    store = VerdictStore(path, busy_timeout=0.2)
    rows = rows_table()
    store.set_verdict("a.jsonl:1", "model_wrong")
    saved = store.set_verdicts(((key, rows.loc[key]) for key in rows.index), vd.GT_WRONG, "boxes shifted", "ann")
    assert [v.row_key for v in saved] == list(rows.index) and all(v.saved for v in saved)
    assert len({v.created_at for v in saved}) == 1 and saved[2].run == "ckpt-B" and saved[2].source_line == 7
    assert store.latest_for(["a.jsonl:1", "b.jsonl:7", "c.jsonl:9"]) == {"a.jsonl:1": vd.GT_WRONG,
                                                                        "b.jsonl:7": vd.GT_WRONG}
    assert store.set_verdicts([], vd.UNCLEAR) == []
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(VerdictStoreError):
            store.set_verdicts([("a.jsonl:2", None), ("b.jsonl:7", None)], vd.UNCLEAR)
        assert [v.row_key for v in store.pending] == ["a.jsonl:2", "b.jsonl:7"]  # none lost, none half-written
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.latest_for(["a.jsonl:2", "b.jsonl:7"]) == {"a.jsonl:2": vd.UNCLEAR, "b.jsonl:7": vd.UNCLEAR}
    assert store.flush() == 2
    assert len(VerdictStore(path).verdicts()) == 6


def _read_only_scenario(path: str) -> dict:
    store = VerdictStore(path, busy_timeout=0.2)
    out: dict = {"writable": store.status().writable, "status": store.status().message}
    try:
        store.set_verdict("a.jsonl:2", "gt_wrong", "cannot be saved")
        out["error"] = None
    except VerdictStoreError as exc:
        out["error"], out["message"] = exc.kind, exc.message
    out["pending"] = [v.note for v in store.pending]
    frame = store.verdicts()
    out["rows"] = frame[["row_key", "saved"]].values.tolist()
    return out


def _as_nobody(fn, *args) -> dict:
    """Run ``fn`` in a forked child that dropped root (root ignores file permissions)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            os.close(read)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            payload = json.dumps(fn(*args))
        except BaseException as exc:  # report, never raise in the child
            payload, code = json.dumps({"child_error": f"{type(exc).__name__}: {exc}"}), 1
        os.write(write, payload.encode())
        os.close(write)
        os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b"{}")


def _run_read_only(fn, *args) -> dict:
    if os.geteuid() != 0:
        return fn(*args)
    if not hasattr(os, "fork"):
        pytest.skip("needs fork to drop root privileges")
    VerdictStore(os.devnull).status()  # every code path imported before the fork
    return _as_nobody(fn, *args)


@pytest.fixture
def open_tmp():
    """A temporary folder other users can traverse (pytest's own tmp folders are private to root)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rs-verdicts-"))
    os.chmod(folder, 0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    shutil.rmtree(folder, ignore_errors=True)


def test_read_only_file_is_reported_readable_and_loses_nothing(open_tmp):
    folder = open_tmp / "ro"
    folder.mkdir()
    path = folder / "verdicts.sqlite"
    writer = VerdictStore(path)
    writer.set_verdict("a.jsonl:1", "model_wrong", "saved before")
    writer.close()
    vd.frame_of()  # warm pandas paths before a possible fork
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    try:
        result = _run_read_only(_read_only_scenario, str(path))
    finally:
        os.chmod(folder, 0o755)
        os.chmod(path, 0o644)
    assert "child_error" not in result, result
    assert result["writable"] is False and "read-only" in result["status"]
    assert result["error"] == vd.READ_ONLY and "read-only" in result["message"] and "NOT saved" in result["message"]
    assert result["pending"] == ["cannot be saved"]
    assert result["rows"] == [["a.jsonl:1", True], ["a.jsonl:2", False]]
    assert list(VerdictStore(path).verdicts()["note"]) == ["saved before"]


def _unwritable_folder_scenario(path: str) -> dict:
    store = VerdictStore(path)
    try:
        store.set_verdict("a.jsonl:1", "unclear")
    except VerdictStoreError as exc:
        return {"kind": exc.kind, "message": exc.message, "pending": len(store.pending),
                "writable": store.status().writable}
    return {"kind": None}


def test_unreachable_folder_is_a_clear_error(open_tmp):
    folder = open_tmp / "private"
    (folder / "inner").mkdir(parents=True)
    os.chmod(folder, 0o700 if os.geteuid() == 0 else 0o000)  # root's 0700 is closed to nobody
    try:
        result = _run_read_only(_unreachable_scenario, str(folder / "inner" / "verdicts.sqlite"))
    finally:
        os.chmod(folder, 0o755)
    assert result["writable"] is False, result
    assert result["read"] in (vd.READ_ONLY, vd.UNAVAILABLE) and result["write"] in (vd.READ_ONLY, vd.UNAVAILABLE)
    assert result["pending"] == 1


def _unreachable_scenario(path: str) -> dict:
    store = VerdictStore(path)
    out: dict = {"writable": store.status().writable}
    try:
        store.verdicts()
        out["read"] = None
    except VerdictStoreError as exc:
        out["read"] = exc.kind
    try:
        store.set_verdict("a.jsonl:1", "unclear")
        out["write"] = None
    except VerdictStoreError as exc:
        out["write"] = exc.kind
    out["pending"] = len(store.pending)
    out["status"] = store.status().message
    return out


def test_unwritable_folder(open_tmp):
    folder = open_tmp / "locked-down"
    folder.mkdir()
    os.chmod(folder, 0o555)
    try:
        result = _run_read_only(_unwritable_folder_scenario, str(folder / "sub" / "verdicts.sqlite"))
    finally:
        os.chmod(folder, 0o755)
    assert result["kind"] == vd.READ_ONLY and result["pending"] == 1 and result["writable"] is False
    assert vd.ENV_VAR in result["message"]


def test_a_file_that_is_not_a_verdict_store_is_left_alone(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    path.write_text("these are my notes, not a database\n" * 20)
    before = path.read_bytes()
    store = VerdictStore(path, busy_timeout=0.2)
    with pytest.raises(VerdictStoreError) as caught:
        store.set_verdict("a.jsonl:1", "unclear")
    assert caught.value.kind == vd.NOT_A_STORE and "not a usable verdict file" in caught.value.message
    with pytest.raises(VerdictStoreError):
        store.verdicts()
    assert path.read_bytes() == before and len(store.pending) == 1


def test_a_store_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    VerdictStore(path).set_verdict("a.jsonl:1", "unclear")
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(VerdictStoreError, match="newer Rolloutscope"):
        VerdictStore(path).set_verdict("a.jsonl:2", "unclear")


# --------------------------------------------------------------------------- cost measurement


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        store = VerdictStore(Path(folder) / "verdicts.sqlite")
        store.set_verdict("warm", "unclear")
        count = 1000
        start = time.perf_counter()
        for i in range(count):
            store.set_verdict(f"row:{i}", "model_wrong", "note", "me")
        write_ms = (time.perf_counter() - start) / count * 1e3
        for i in range(20_000):
            store.pending.append(store.make_verdict(f"row:{i % 5000}", "unclear"))
        store.flush()
        start = time.perf_counter()
        latest = store.latest()
        read_ms = (time.perf_counter() - start) * 1e3
        print("python tests/dashboard/test_verdicts.py")
        print(f"set_verdict {write_ms:.2f} ms each (synchronous=FULL, WAL); "
              f"latest() over {len(store.verdicts()):,} verdicts / {len(latest):,} rows {read_ms:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
