"""A chunk's result from a worker process to the scoring process, without copying it through a pipe.

A scored chunk is a few MB of column buffers (the responses' text above all). Handed back the way
a process pool hands results -- pickled with protocol 4 into a message, written through a 64 KB pipe,
read into a fresh buffer and unpickled into fresh arrays -- it costs both sides about as much CPU
as tabulating the rows did. :class:`ShippedResult` instead pickles the result with protocol 5 and
its buffers out of band: the buffers are written once into a file in a RAM-backed folder
(:func:`results_folder`, under ``/dev/shm``), and the message carries only the small rest and the
file's name. The scoring process reads the file into memory of its own in one call and unpickles
the columns onto it; then it hands the file back (renamed ``<name>.free``) and the worker writes its
next result over it. A file's pages are taken, zeroed and freed once per run instead of once per
chunk, which cost both sides more than the copy (``docs/benchmarks.md``).

Where there is no such folder, or it is full (a container's ``/dev/shm`` is often 64 MB), or the
result is small, the result travels in the message as before, pickled with protocol 5 (its buffers
written in place, not through a copy). Either way the scoring process gets the same objects.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

#: The RAM-backed folder the results folder is made in (Linux; elsewhere results use the message).
SHARED_MEMORY_ROOT = "/dev/shm"
#: Results whose buffers hold fewer bytes than this travel in the message: a file is not worth it.
SHIPPED_MIN_BYTES = 256 << 10
#: Each buffer starts at a multiple of this in the file (Arrow's alignment; numpy needs 8).
BUFFER_ALIGNMENT = 64
#: A result goes through a file only while this share of the folder's filesystem stays free
#: after it: ``/dev/shm`` is shared with everything on the machine (a training job's data loaders
#: pass their batches through it), so scoring never takes the last of it.
SHARED_MEMORY_KEEP_FREE = 0.5
#: Buffers written per ``os.writev`` call (the system's limit is 1,024).
_WRITEV_BUFFERS = 512
_PADDING = bytes(BUFFER_ALIGNMENT)
#: What a result file is renamed to end with once its result is received: the worker that wrote
#: it may write its next result over it.
FREE_SUFFIX = ".free"
#: A reused file more than twice the size its new result needs, and this much more, is cut down
#: to it: one huge chunk does not hold its share of ``/dev/shm`` until the run ends.
REUSED_FILE_SLACK_BYTES = 4 << 20
_sequence = itertools.count()
#: The result files this process made in each results folder (their names), which it takes
#: back for its next results once they are handed back (:func:`_claim`).
_made: dict[str, list[str]] = {}


#: A results folder's name: this prefix, the process's PID namespace, its pid, then a random part
#: (``rolloutscope-results-4026531836-1234-x1y2z3``).
FOLDER_PREFIX = "rolloutscope-results-"
#: A folder is abandoned once its process is gone and nothing in it changed for this long. The
#: age guards against a pid that only looks gone: /dev/shm may be shared by containers (Docker's
#: ``--ipc=host``), and one that says the same PID namespace by mistake must not take a live run's
#: folder (a live pool writes and removes files every few seconds, which touches the folder).
ABANDONED_AFTER_SECONDS = 600.0


def _pid_namespace() -> str:
    """This process's PID namespace (the inode of ``/proc/self/ns/pid``), or ``0`` where unknown:
    a pid means a process only within its namespace."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


@contextlib.contextmanager
def results_folder(root: str = SHARED_MEMORY_ROOT) -> Iterator[str | None]:
    """A private folder under ``root`` for one pool's results (None when none can be made), and
    everything left in it removed at the end: what a worker wrote for a result nobody took. The
    folders that this user's killed runs left go first (:func:`remove_abandoned`): files in
    ``/dev/shm`` hold memory until they are removed."""
    remove_abandoned(root)
    try:
        folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{_pid_namespace()}-{os.getpid()}-", dir=root)
    except OSError:  # no such folder, or not writable
        yield None
        return
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _landing.clear()


def remove_abandoned(root: str, now: float | None = None) -> list[str]:
    """Remove the results folders under ``root`` that a run of this user, in this PID namespace,
    made and left: its process is gone and the folder unchanged for
    :data:`ABANDONED_AFTER_SECONDS` (a folder whose pid was reused by a live process waits for a
    later look). The paths removed."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    now = time.time() if now is None else now
    namespace = _pid_namespace()
    removed = []
    for entry in entries:
        if not entry.name.startswith(FOLDER_PREFIX):
            continue
        entry_namespace, _, rest = entry.name[len(FOLDER_PREFIX) :].partition("-")
        try:
            pid = int(rest.partition("-")[0])
            info = entry.stat(follow_symlinks=False)
        except (ValueError, OSError):
            continue
        if (
            entry_namespace == namespace
            and entry.is_dir(follow_symlinks=False)
            and info.st_uid == os.getuid()
            and now - info.st_mtime > ABANDONED_AFTER_SECONDS
            and not _process_alive(pid)
        ):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, another user's (or not ours to signal)
        return True
    return True


class ShippedResult:
    """A worker's result, pickled so that its buffers go through a file in ``folder`` (see the
    module); unpickling gives the result itself, not this wrapper."""

    __slots__ = ("folder", "value")

    def __init__(self, value: Any, folder: str | None):
        self.value = value
        self.folder = folder

    def __reduce__(self):
        if self.folder is None:
            return pickle.loads, (pickle.dumps(self.value, protocol=5),)
        buffers: list[pickle.PickleBuffer] = []
        rest = pickle.dumps(self.value, protocol=5, buffer_callback=buffers.append)
        views = [buffer.raw() for buffer in buffers]
        if sum(view.nbytes for view in views) >= SHIPPED_MIN_BYTES:
            shipped = _write_buffers(self.folder, views)
            if shipped is not None:
                path, offsets = shipped
                return receive, (path, rest, offsets)
        # in the message after all: the buffers beside the rest, not a second pickling of the value
        return _loads_beside, (rest, [view.tobytes() for view in views])


def _loads_beside(rest: bytes, buffers: list[bytes]) -> Any:
    return pickle.loads(rest, buffers=buffers)


def _write_buffers(folder: str, views: list[memoryview]) -> tuple[str, list[tuple[int, int]]] | None:
    """``views`` written one after another into a file in ``folder`` (one of this process's
    handed back, else a new one), each at an aligned offset: the file's path and each buffer's
    ``(offset, length)``. None when it cannot be written (a full folder) or would leave less
    than :data:`SHARED_MEMORY_KEEP_FREE` of the filesystem free; no file is left taken then."""
    pieces: list[memoryview | bytes] = []
    offsets: list[tuple[int, int]] = []
    position = 0
    for view in views:
        offsets.append((position, view.nbytes))
        pieces.append(view)
        position += view.nbytes
        padding = -position % BUFFER_ALIGNMENT
        if padding:
            pieces.append(_PADDING[:padding])
            position += padding
    made = _made.setdefault(folder, [])
    path = _claim(folder, made)
    try:
        held = 0 if path is None else os.stat(path).st_size
        space = os.statvfs(folder)
        if (space.f_bavail - space.f_blocks * SHARED_MEMORY_KEEP_FREE) * space.f_frsize < position - held:
            if path is not None:
                _hand_back(path)
            return None  # it would leave less than the share kept free
        if path is None:
            name = f"{os.getpid()}-{next(_sequence)}"
            path = os.path.join(folder, name)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            made.append(name)
        else:
            descriptor = os.open(path, os.O_WRONLY)
    except OSError:
        if path is not None:
            _forget(path, made)
        return None
    try:
        with os.fdopen(descriptor, "wb", buffering=0) as handle:
            for start in range(0, len(pieces), _WRITEV_BUFFERS):
                _write_all(handle.fileno(), pieces[start : start + _WRITEV_BUFFERS])
            if held > 2 * position + REUSED_FILE_SLACK_BYTES:
                handle.truncate(position)
    except OSError:  # the folder is full: the result goes in the message instead
        _forget(path, made)
        return None
    return path, offsets


def _claim(folder: str, made: list[str]) -> str | None:
    """The path of a file this process made in ``folder`` that was handed back, now taken
    again (renamed to its own name), or None when none is."""
    for name in made:
        path = os.path.join(folder, name)
        try:
            os.rename(path + FREE_SUFFIX, path)
        except OSError:
            continue
        return path
    return None


def _hand_back(path: str) -> None:
    """Let the process that wrote ``path`` write its next result over it."""
    with contextlib.suppress(OSError):
        os.rename(path, path + FREE_SUFFIX)


def _forget(path: str, made: list[str]) -> None:
    """Remove a result file that could not be written, and never take it again."""
    with contextlib.suppress(OSError):
        os.unlink(path)
    with contextlib.suppress(ValueError):
        made.remove(os.path.basename(path))


def _write_all(descriptor: int, pieces: list[memoryview | bytes]) -> None:
    """``os.writev`` until every byte of ``pieces`` is written (a write may stop short)."""
    remaining = [memoryview(piece).cast("B") for piece in pieces if len(piece)]
    while remaining:
        written = os.writev(descriptor, remaining)
        if written <= 0:
            raise OSError("no progress writing a result")
        while remaining and written >= remaining[0].nbytes:
            written -= remaining[0].nbytes
            remaining.pop(0)
        if written:
            remaining[0] = remaining[0][written:]


class LostResult:
    """What :func:`receive` gives when the file a worker shipped a result to is gone or cut short
    (something removed the user's files in ``/dev/shm``: systemd's ``RemoveIPC`` at logout, an
    operator): the caller scores that chunk again itself, which gives the same result."""

    __slots__ = ("path", "reason")

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason

    def __repr__(self) -> str:
        return f"LostResult({self.path!r}, {self.reason!r})"


def receive(path: str, rest: bytes, offsets: list[tuple[int, int]]) -> Any:
    """The result a worker shipped to ``path``: its buffers read from the file into memory of
    this process's own, the file then handed back to the worker for its next result. A
    :class:`LostResult` when the file is gone or shorter than the buffers."""
    needed = max((offset + length for offset, length in offsets), default=0)
    try:
        with open(path, "rb", buffering=0) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < needed:
                return LostResult(path, f"the file holds {size:,} bytes of the {needed:,} written")
            landing = _landing.take(needed)
            whole = memoryview(landing)
            read = 0
            while read < needed:
                count = handle.readinto(whole[read:])
                if not count:
                    return LostResult(path, f"the file holds {read:,} bytes of the {needed:,} written")
                read += count
    except OSError as exc:
        return LostResult(path, f"{type(exc).__name__}: {exc.strerror or exc}")
    finally:
        _hand_back(path)
    return pickle.loads(rest, buffers=[whole[offset : offset + length] for offset, length in offsets])


class _LandingBlocks:
    """The blocks of memory this process reads shipped results into, each used again once no
    array is left on it: a fresh block's pages would fault in and be zeroed for every result
    (in the kernel: about half the cost of the copy). At most :attr:`kept` are kept, and only
    while a pool runs (:func:`results_folder` lets them go)."""

    kept = 6
    #: A block's references when nothing uses it: the list, the loop's name, getrefcount's argument.
    _UNUSED = 3
    _ROUND = 1 << 20

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []
        self.lock = threading.Lock()

    def take(self, size: int) -> np.ndarray:
        """``size`` writable bytes starting at a multiple of :data:`BUFFER_ALIGNMENT`, on a kept
        block nothing uses, else on a new one (kept while fewer than :attr:`kept` are)."""
        needed = size + BUFFER_ALIGNMENT
        with self.lock:
            for block in self.blocks:
                if len(block) >= needed and sys.getrefcount(block) <= self._UNUSED:
                    return _aligned(block, size)
            block = np.empty(-(-needed // self._ROUND) * self._ROUND, dtype=np.uint8)
            if len(self.blocks) < self.kept:
                self.blocks.append(block)
            return _aligned(block, size)

    def clear(self) -> None:
        with self.lock:
            self.blocks = []


def _aligned(block: np.ndarray, size: int) -> np.ndarray:
    start = -block.ctypes.data % BUFFER_ALIGNMENT
    return block[start : start + size]


_landing = _LandingBlocks()


__all__ = [
    "ABANDONED_AFTER_SECONDS",
    "FOLDER_PREFIX",
    "FREE_SUFFIX",
    "REUSED_FILE_SLACK_BYTES",
    "SHARED_MEMORY_KEEP_FREE",
    "SHARED_MEMORY_ROOT",
    "SHIPPED_MIN_BYTES",
    "LostResult",
    "ShippedResult",
    "receive",
    "remove_abandoned",
    "results_folder",
]
