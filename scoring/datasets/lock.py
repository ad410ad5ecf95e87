"""One writer per dataset folder, across processes: two app servers, an app and the CLI, or
two CLI runs pointed at the same folder take turns instead of interleaving their parts.

The lock is an advisory ``flock`` on :data:`LOCK_NAME` inside the folder, released by the
kernel when its holder exits (a killed writer never leaves the folder locked). Its holder removes
the file before letting go, and a folder may be removed under a waiting writer: a lock counts
only while the file it is on is still the folder's lock file (checked by inode), else it is
taken again on the file there now.
Holding a folder again in the thread that holds it is a no-op. Where ``fcntl`` is missing
(Windows), a lock is only per process.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: The lock file inside a dataset folder: part of the folder's layout (never a sign of other content).
LOCK_NAME = ".writing.lock"

#: How often a writer that waits looks at the lock again (seconds).
POLL_SECONDS = 0.05

_HELD: dict[str, threading.Lock] = {}  # per process: flock does not exclude two threads of one process
_HELD_GUARD = threading.Lock()
_HELD_HERE = threading.local()  # the folders this thread holds: holding one again is a no-op


class DatasetBusy(RuntimeError):
    """Another writer holds the dataset folder and did not let go in time."""


def _thread_lock(directory: Path) -> threading.Lock:
    with _HELD_GUARD:
        return _HELD.setdefault(str(directory.resolve()), threading.Lock())


def _try_file_lock(directory: Path) -> int | None:
    """An open descriptor holding the folder's lock, or None when another process holds it."""
    path = directory / LOCK_NAME
    while True:
        directory.mkdir(parents=True, exist_ok=True)
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(handle)
                    return None
            try:
                still_there = os.stat(path).st_ino == os.fstat(handle).st_ino
            except FileNotFoundError:
                still_there = False
        except BaseException:
            os.close(handle)
            raise
        if still_there:
            return handle
        os.close(handle)  # its holder removed the file, or the folder: lock the file there now


@contextmanager
def writing(directory: str | os.PathLike, *, timeout: float | None = None) -> Iterator[Path]:
    """Hold ``directory`` (created if missing) as its one writer, waiting for another to finish:
    at most ``timeout`` seconds (None: as long as it takes), then :class:`DatasetBusy`."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} exists and is not a folder")
    held = _HELD_HERE.__dict__.setdefault("folders", set())
    key = str(directory.resolve())
    if key in held:  # the caller holds it already (the app holds it around the update it asks for)
        yield directory
        return
    made = not directory.exists()
    deadline = None if timeout is None else time.monotonic() + timeout
    in_process = _thread_lock(directory)
    if not in_process.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
        raise DatasetBusy(f"{directory} is being written by another thread; try again when it is done")
    try:
        while (handle := _try_file_lock(directory)) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise DatasetBusy(f"{directory} is being written by another process; try again when it is done")
            time.sleep(POLL_SECONDS)
        held.add(key)
        try:
            yield directory
        finally:
            held.discard(key)
            # the file goes before the lock (a waiter that then gets it sees it gone and
            # retries), so a folder a write refused or left empty is left as it was found
            (directory / LOCK_NAME).unlink(missing_ok=True)
            os.close(handle)
            if made:
                with suppress(OSError):
                    directory.rmdir()  # only when empty
    finally:
        in_process.release()


@contextmanager
def writing_if_free(directory: str | os.PathLike) -> Iterator[bool]:
    """Hold ``directory`` when no one else does (True), else give False at once: what removing an
    old dataset wants (one being written is in use, not old)."""
    with ExitStack() as stack:
        try:
            stack.enter_context(writing(directory, timeout=0))
            free = True
        except DatasetBusy:
            free = False
        yield free


def clear_held(directory: str | os.PathLike) -> None:
    """Remove what a folder held with :func:`writing` holds, all but its lock file: its holder
    starts it over (or empties it to remove) without letting another writer in meanwhile."""
    for entry in Path(directory).iterdir():
        if entry.name == LOCK_NAME:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
