"""A chunk's result from a worker process to the scoring process, without copying it through a pipe.

A scored chunk is a few MB of column buffers (the responses' text above all). Handed back the way
a process pool hands results -- pickled with protocol 4 into a message, written through a 64 KB pipe,
read into a fresh buffer and unpickled into fresh arrays -- it costs both sides about as much CPU
as tabulating the rows did. :class:`ShippedResult` instead pickles the result with protocol 5 and
its buffers out of band: the buffers are written once into a file in a RAM-backed folder
(:func:`results_folder`, under ``/dev/shm``), and the message carries only the small rest and the
file's name. The scoring process maps the file and unpickles the columns straight onto the mapped
pages (copy-on-write: an array stays writable), then unlinks the file: its pages are freed with
the last array that uses them.

Where there is no such folder, or it is full (a container's ``/dev/shm`` is often 64 MB), or the
result is small, the result travels in the message as before, pickled with protocol 5 (its buffers
written in place, not through a copy). Either way the scoring process gets the same objects.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

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
_sequence = itertools.count()


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
    """``views`` written one after another into a new file in ``folder``, each at an aligned
    offset: the file's path and each buffer's ``(offset, length)``. None when it cannot be
    written (a full folder) or would leave less than :data:`SHARED_MEMORY_KEEP_FREE` of the
    filesystem free; nothing is left behind then."""
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
    try:
        space = os.statvfs(folder)
        if (space.f_bavail - space.f_blocks * SHARED_MEMORY_KEEP_FREE) * space.f_frsize < position:
            return None  # it would leave less than the share kept free
        path = os.path.join(folder, f"{os.getpid()}-{next(_sequence)}")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "wb", buffering=0) as handle:
            for start in range(0, len(pieces), _WRITEV_BUFFERS):
                _write_all(handle.fileno(), pieces[start : start + _WRITEV_BUFFERS])
    except OSError:  # the folder is full: the result goes in the message instead
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    return path, offsets


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
    """The result a worker shipped to ``path``: its buffers mapped from the file (copy-on-write),
    the file unlinked at once (its pages live as long as the arrays on them). A
    :class:`LostResult` when the file is gone or shorter than the buffers."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            needed = max((offset + length for offset, length in offsets), default=0)
            if size < needed:
                return LostResult(path, f"the file holds {size:,} bytes of the {needed:,} written")
            mapped = mmap.mmap(handle.fileno(), size, flags=mmap.MAP_PRIVATE) if size else None
    except OSError as exc:
        return LostResult(path, f"{type(exc).__name__}: {exc.strerror or exc}")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    whole = memoryview(mapped) if mapped is not None else memoryview(b"")
    return pickle.loads(rest, buffers=[whole[offset : offset + length] for offset, length in offsets])


__all__ = [
    "ABANDONED_AFTER_SECONDS",
    "FOLDER_PREFIX",
    "SHARED_MEMORY_KEEP_FREE",
    "SHARED_MEMORY_ROOT",
    "SHIPPED_MIN_BYTES",
    "LostResult",
    "ShippedResult",
    "receive",
    "remove_abandoned",
    "results_folder",
]
