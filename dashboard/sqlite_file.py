"""One SQLite file shared by many threads and processes, with a busy timeout that really holds.

:class:`SQLiteFile` lends connections from a small per-process pool and runs
each unit of work in a retry loop:

- SQLite's busy handler is installed when a connection opens (``timeout=``),
  before its first statement -- so the one-time setup (journal-mode switch,
  schema) waits like any other statement. It waits in short slices
  (:data:`BUSY_SLICE`); between slices the loop pauses briefly and tries again
  until ``busy_timeout`` has passed in total. SQLite can also answer "locked"
  at once (to avoid a deadlock, or while another connection switches the
  journal mode); the loop waits those out too. Short, jittered pauses let a
  long waiter poll as often as a newcomer instead of starving behind it.
- When the time is up it raises :class:`Locked` carrying the time really waited.
- The pool's lock is held only to take or return a connection, never while
  SQLite waits: one thread's write queued behind another process does not make
  other threads' reads wait.
- A connection never crosses a fork: a child process opens its own.

No Streamlit here; :mod:`dashboard.verdicts` is the user.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

#: SQLite's own busy handler waits at most this long per attempt.
BUSY_SLICE = 0.05
#: Longest pause between two attempts.
RETRY_PAUSE = 0.02
#: Idle connections kept per file and process.
POOL_SIZE = 4

_T = TypeVar("_T")


class Locked(sqlite3.OperationalError):
    """The file stayed locked for the whole busy timeout; ``waited``: seconds really waited."""

    def __init__(self, message: str, waited: float):
        super().__init__(message)
        self.waited = waited


def is_busy(exc: BaseException) -> bool:
    """SQLite's "database is locked" / "busy" (worth waiting for, unlike other errors)."""
    lower = str(exc).lower()
    return "locked" in lower or "busy" in lower


class SQLiteFile:
    """Pooled connections to ``path`` and a retry loop bounded by ``busy_timeout`` (see the module docstring).

    ``prepare(connection)`` runs once per process before the first write (e.g. the
    schema), inside the same retry loop.
    """

    def __init__(self, path: Path, *, busy_timeout: float, prepare: Callable[[sqlite3.Connection], None]):
        self.path = path
        self.busy_timeout = float(busy_timeout)
        self._prepare = prepare
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._ready = False

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            str(self.path), timeout=min(BUSY_SLICE, self.busy_timeout), isolation_level=None,
            check_same_thread=False,
        )
        try:
            connection.execute("PRAGMA synchronous = FULL")
        except BaseException:
            connection.close()
            raise
        return connection

    def _borrow(self) -> sqlite3.Connection:
        with self._lock:
            if self._pid != os.getpid():  # inherited through a fork: leave them alone
                self._idle, self._pid, self._ready = [], os.getpid(), False
            if self._idle:
                return self._idle.pop()
        return self._open()

    def _give_back(self, connection: sqlite3.Connection) -> None:
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < POOL_SIZE and not connection.in_transaction:
                self._idle.append(connection)
                return
        with contextlib.suppress(sqlite3.Error):
            connection.close()

    def close(self) -> None:
        """Close the idle connections (new ones open on the next call)."""
        with self._lock:
            idle, self._idle = self._idle, []
            mine = self._pid == os.getpid()
        for connection in idle if mine else ():
            with contextlib.suppress(sqlite3.Error):
                connection.close()

    def attempt(self, work: Callable[[sqlite3.Connection], _T], *, write: bool) -> _T:
        """``work(connection)``, retried while the file is locked, for at most ``busy_timeout`` in total.

        A failed attempt's transaction is rolled back before the next one, so ``work``
        should be one whole transaction. Other errors are raised at once.
        """
        started = time.monotonic()
        pause = 0.001
        while True:
            connection: sqlite3.Connection | None = None
            try:
                connection = self._borrow()  # opening may wait too (its first PRAGMA reads the schema)
                if write and not self._ready:
                    self._prepare(connection)
                    self._ready = True
                result = work(connection)
            except BaseException as exc:
                retry = isinstance(exc, sqlite3.OperationalError) and is_busy(exc)
                if connection is not None:
                    if retry and _rolled_back(connection):
                        self._give_back(connection)
                    else:
                        with contextlib.suppress(sqlite3.Error):
                            connection.close()
                if not retry:
                    raise
                waited = time.monotonic() - started
                if waited >= self.busy_timeout:
                    raise Locked(str(exc), waited) from exc
                time.sleep(min(pause * random.uniform(0.5, 1.5), self.busy_timeout - waited))
                pause = min(pause * 2, RETRY_PAUSE)
                continue
            self._give_back(connection)
            return result

    def query(self, sql: str, parameters: tuple = ()) -> tuple[list[str], list[tuple]] | None:
        """Column names and rows of a read query; None when there is no file yet.

        Falls back to an immutable read-only open when the file or its folder is
        read-only (WAL readers need a writable ``-shm``).
        """

        def read(connection: sqlite3.Connection) -> tuple[list[str], list[tuple]]:
            cursor = connection.execute(sql, parameters)
            return [d[0] for d in cursor.description], cursor.fetchall()

        if not self.path.exists():
            return None
        try:
            return self.attempt(read, write=False)
        except Locked:
            raise
        except sqlite3.DatabaseError as exc:
            lower = str(exc).lower()
            if not ("readonly" in lower or "read-only" in lower or "unable to open" in lower):
                raise
        connection = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True,
                                     isolation_level=None)
        try:
            return read(connection)
        finally:
            connection.close()


def _rolled_back(connection: sqlite3.Connection) -> bool:
    """End a failed transaction; False when the connection is not fit to reuse."""
    try:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        return not connection.in_transaction
    except sqlite3.Error:
        return False
