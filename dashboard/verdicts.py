"""Review verdicts: a reviewer's call on a row, kept in an embedded SQLite file (no Streamlit here).

A verdict says why a row scored what it did -- ``model_wrong``, ``gt_wrong``
(the ground truth is wrong), ``scorer_wrong`` or ``unclear`` -- with a free
note and the reviewer's name. :class:`VerdictStore` keeps every verdict ever
given (append-only; the latest per row wins) in one SQLite table:

- WAL journal, every write one ``BEGIN IMMEDIATE`` transaction,
  ``synchronous=FULL``: concurrent sessions and processes queue for the write
  lock instead of failing, and a committed verdict survives a crash of the app
  or of the machine.
- ``busy_timeout`` (default 5 s) holds for every statement, from the very first
  connection's journal-mode switch and schema creation on: SQLite's busy
  handler is installed when the connection opens and waits in short slices, and
  the store retries a locked statement until the whole timeout has passed (SQLite
  may also report "locked" early, e.g. to avoid a deadlock). The "locked" message
  says how long it really waited.
- No Python lock is held while SQLite waits: each call borrows a connection from
  a small per-process pool, so a write queued behind another process never makes
  other sessions' reads wait.
- Triggers refuse UPDATE and DELETE, so history cannot be rewritten by accident.
- A read-only, locked, unopenable or foreign file raises
  :class:`VerdictStoreError` with one human sentence; the verdict is *not*
  lost: it stays in memory (``store.pending``), is shown as "not saved", is
  retried before the next write and by :meth:`VerdictStore.flush`, and can be
  downloaded.

Rows are identified by the scored table's ``row_id`` (``<file>:<line>``, stable
for the same files). Each verdict also records the row's file, line, record
id, run and task, and a digest of its response, so an export can say when the
row has changed since it was judged.

Where the file lives (:func:`default_path`): one file per data source in the
user's state folder, ``$XDG_STATE_HOME/rolloutscope/verdicts/`` (default
``~/.local/state/rolloutscope/verdicts/``) -- never next to the data, never in
``/``. ``$ROLLOUTSCOPE_VERDICTS`` changes it: a file (every data source shares
it) or a folder (one file per data source inside it).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import math
import os
import re
import socket
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from dashboard.sqlite_file import Locked, SQLiteFile, is_busy

MODEL_WRONG, GT_WRONG, SCORER_WRONG, UNCLEAR = "model_wrong", "gt_wrong", "scorer_wrong", "unclear"
#: The fixed verdict vocabulary, in the order the form offers it.
VERDICTS: tuple[str, ...] = (MODEL_WRONG, GT_WRONG, SCORER_WRONG, UNCLEAR)
VERDICT_LABELS: dict[str, str] = {
    MODEL_WRONG: "model wrong",
    GT_WRONG: "ground truth wrong",
    SCORER_WRONG: "scorer wrong",
    UNCLEAR: "unclear",
}

ENV_VAR = "ROLLOUTSCOPE_VERDICTS"
STATE_FOLDER = "rolloutscope"
VERDICTS_FOLDER = "verdicts"
SUFFIX = ".sqlite"
SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT = 5.0
NOTE_LIMIT = 20_000
REVIEWER_LIMIT = 200

READ_ONLY, LOCKED, UNAVAILABLE, NOT_A_STORE = "read_only", "locked", "unavailable", "not_a_store"

#: Columns of :meth:`VerdictStore.verdicts` / :meth:`VerdictStore.latest`.
COLUMNS: tuple[str, ...] = (
    "row_key", "verdict", "note", "reviewer", "created_at", "saved", "id", "row_digest",
    "source_file", "source_line", "record_id", "run", "task_id", "writer",
)
#: Row columns stored with each verdict (for exports when the row is gone).
CONTEXT: tuple[str, ...] = ("source_file", "source_line", "record_id", "run", "task_id")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS verdicts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    row_key     TEXT    NOT NULL,
    verdict     TEXT    NOT NULL CHECK (verdict IN ({", ".join(repr(v) for v in VERDICTS)})),
    note        TEXT    NOT NULL DEFAULT '',
    reviewer    TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL,
    row_digest  TEXT,
    source_file TEXT,
    source_line INTEGER,
    record_id   TEXT,
    run         TEXT,
    task_id     TEXT,
    writer      TEXT
);
CREATE INDEX IF NOT EXISTS verdicts_by_row ON verdicts (row_key, created_at, id);
CREATE TRIGGER IF NOT EXISTS verdicts_no_update BEFORE UPDATE ON verdicts
    BEGIN SELECT RAISE(ABORT, 'verdicts are append-only'); END;
CREATE TRIGGER IF NOT EXISTS verdicts_no_delete BEFORE DELETE ON verdicts
    BEGIN SELECT RAISE(ABORT, 'verdicts are append-only'); END;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
"""
_INSERT = (
    "INSERT INTO verdicts (row_key, verdict, note, reviewer, created_at, row_digest, source_file, source_line, "
    "record_id, run, task_id, writer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT = (
    "SELECT id, row_key, verdict, note, reviewer, created_at, row_digest, source_file, source_line, record_id, "
    "run, task_id, writer FROM verdicts"
)


class VerdictStoreError(Exception):
    """The verdict file cannot be used; ``message`` is one sentence for the user.

    ``kind``: ``read_only``, ``locked``, ``unavailable`` or ``not_a_store``.
    ``verdict`` is the verdict that was being written, if any (kept in memory).
    """

    def __init__(self, message: str, *, kind: str, path: str | os.PathLike, verdict: Verdict | None = None):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.path = str(path)
        self.verdict = verdict


@dataclass(frozen=True)
class Verdict:
    """One verdict as given (``saved`` False while it only lives in memory)."""

    row_key: str
    verdict: str
    note: str = ""
    reviewer: str = ""
    created_at: str = ""
    row_digest: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    record_id: str | None = None
    run: str | None = None
    task_id: str | None = None
    writer: str | None = None
    saved: bool = False
    id: int | None = None

    @property
    def label(self) -> str:
        return VERDICT_LABELS.get(self.verdict, self.verdict)


@dataclass(frozen=True)
class StoreStatus:
    """Whether verdicts can be saved, and a sentence saying so."""

    path: str
    writable: bool
    exists: bool
    message: str


# --------------------------------------------------------------------------- small helpers


def now() -> str:
    """UTC time with microseconds, sortable as text (``2026-11-30T10:00:00.000000Z``)."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    try:
        return isinstance(value, float) and math.isnan(value)
    except TypeError:
        return False


def _text_or_none(value: Any) -> str | None:
    return None if _missing(value) else str(value)


def row_digest(row: Mapping[str, Any] | pd.Series | None) -> str | None:
    """A short fingerprint of what was judged (record id + response), to spot rows that changed."""
    if row is None:
        return None
    record = row.get("record_id")
    response = row.get("response")
    if _missing(record) and _missing(response):
        return None
    text = json.dumps([_text_or_none(record), _text_or_none(response)], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def row_digests(rows: pd.DataFrame) -> pd.Series:
    """:func:`row_digest` of every row of a table (index kept)."""
    records = rows["record_id"] if "record_id" in rows.columns else pd.Series(None, index=rows.index, dtype=object)
    responses = rows["response"] if "response" in rows.columns else pd.Series(None, index=rows.index, dtype=object)
    values = [
        row_digest({"record_id": r, "response": s})
        for r, s in zip(records.astype(object).tolist(), responses.astype(object).tolist(), strict=True)
    ]
    return pd.Series(values, index=rows.index, dtype=object)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's Rolloutscope state folder: ``$XDG_STATE_HOME/rolloutscope``, else
    ``~/.local/state/rolloutscope`` (a relative ``XDG_STATE_HOME`` is ignored, as the XDG spec says)."""
    env = os.environ if env is None else env
    base = (env.get("XDG_STATE_HOME") or "").strip()
    if not os.path.isabs(base):
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "state")
    return Path(base) / STATE_FOLDER


def source_name(source: Any = None) -> str:
    """The verdict file's name (without suffix) for a :class:`dashboard.sources.DataSource`.

    ``sample`` for the bundled sample, ``uploads`` for uploaded files (staged under a new
    temporary name each time, so all uploads share one file), ``default`` without a source;
    a local folder or glob: the files' common folder, as ``<its name>-<digest of its full path>``
    (readable, and distinct for folders of the same name).
    """
    kind = getattr(source, "kind", None)
    files = [Path(f) for f in getattr(source, "files", ()) or ()]
    if kind == "sample":
        return "sample"
    if kind == "upload":
        return "uploads"
    if not files:
        return "default"
    folders = sorted({str(f.resolve().parent) for f in files})
    common = os.path.commonpath(folders)
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(common).name).strip("._")[:40] or "root"
    return f"{label}-{hashlib.sha256(common.encode('utf-8')).hexdigest()[:12]}"


def default_path(source: Any = None, env: Mapping[str, str] | None = None) -> Path:
    """Where verdicts for ``source`` (a :class:`dashboard.sources.DataSource`) are kept.

    ``$ROLLOUTSCOPE_VERDICTS`` set to a file: that file, for every source; set to a folder
    (an existing one, or a path ending in ``/``): ``<folder>/<source name>.sqlite``.
    Unset: ``<state folder>/verdicts/<source name>.sqlite`` (:func:`state_dir`,
    :func:`source_name`) -- predictable, private to the user, never next to the data.
    """
    env = os.environ if env is None else env
    configured = (env.get(ENV_VAR) or "").strip()
    folder = state_dir(env) / VERDICTS_FOLDER
    if configured:
        path = Path(os.path.expanduser(configured)).absolute()
        if not (path.is_dir() or configured.endswith(("/", os.sep))):
            return path
        folder = path
    return folder / f"{source_name(source)}{SUFFIX}"


# --------------------------------------------------------------------------- the store


class VerdictStore:
    """Verdicts in one SQLite file (see the module docstring). Thread- and process-safe.

    Nothing touches the disk until the first write; reading a file that does not
    exist yet gives no verdicts.
    """

    def __init__(self, path: str | os.PathLike, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        self.path = Path(os.path.expanduser(str(path)))
        self.pending: list[Verdict] = []
        self._db = SQLiteFile(self.path, busy_timeout=busy_timeout, prepare=self._prepare)
        # guards ``pending`` and ``_writing`` only -- never held while SQLite waits
        self._lock = threading.Lock()
        self._writing: set[int] = set()  # ids of pending verdicts some thread is writing right now
        self._writer = f"{socket.gethostname()}:{os.getpid()}"

    def __repr__(self) -> str:
        return f"VerdictStore({str(self.path)!r})"

    @property
    def busy_timeout(self) -> float:
        """Seconds a statement may wait, in total, for another connection's lock."""
        return self._db.busy_timeout

    # -- errors ----------------------------------------------------------------
    def _error(self, exc: BaseException, verdict: Verdict | None = None) -> VerdictStoreError:
        """One sentence for the user; a lock says how long the store really waited."""
        text = str(exc)
        lower = text.lower()
        where = str(self.path)
        kept = " This verdict was NOT saved: it is kept in memory for this app session only." if verdict else ""
        fix = f" Set {ENV_VAR} to a writable file to keep verdicts elsewhere."
        if "readonly" in lower or "read-only" in lower or isinstance(exc, PermissionError):
            try:
                what = "is read-only" if self.path.exists() else "cannot be created: its folder is not writable"
            except OSError:
                what = "cannot be reached (permission denied)"
            return VerdictStoreError(f"The verdict file {where} {what}.{kept}{fix}", kind=READ_ONLY,
                                     path=where, verdict=verdict)
        if isinstance(exc, Locked) or is_busy(exc):
            waited = f"waited {exc.waited:.1f} s" if isinstance(exc, Locked) else "gave up"
            return VerdictStoreError(
                f"The verdict file {where} is locked by another program ({waited}; the limit is "
                f"{self.busy_timeout:g} s).{kept} Try again when it is released.", kind=LOCKED, path=where,
                verdict=verdict)
        if "not a database" in lower or "malformed" in lower or "newer" in lower:
            return VerdictStoreError(
                f"{where} is not a usable verdict file ({text}).{kept}{fix}", kind=NOT_A_STORE, path=where,
                verdict=verdict)
        if "unable to open" in lower and not self._dir_writable():
            return VerdictStoreError(f"The folder of the verdict file {where} is not writable.{kept}{fix}",
                                     kind=READ_ONLY, path=where, verdict=verdict)
        return VerdictStoreError(f"Cannot use the verdict file {where} ({text}).{kept}{fix}", kind=UNAVAILABLE,
                                 path=where, verdict=verdict)

    def _dir_writable(self) -> bool:
        """Can the file's folder be created / written (the nearest existing ancestor decides)?"""
        folder = self.path.parent
        try:
            while not folder.exists() and folder != folder.parent:
                folder = folder.parent
        except OSError:
            return False
        return os.access(folder, os.W_OK | os.X_OK)

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """WAL journal (when the file system allows it) and the schema (run once per process, before the
        first write, by :class:`dashboard.sqlite_file.SQLiteFile` inside its retry loop)."""
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            # Another process may switch it at the same moment; a file system without shared
            # memory keeps the rollback journal: still safe, just slower.
            connection.execute("PRAGMA journal_mode = WAL").fetchone()
        connection.execute("BEGIN IMMEDIATE")
        for statement in _statements(_SCHEMA):
            connection.execute(statement)
        version = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if version is not None and int(version[0]) > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"written by a newer Rolloutscope (schema {version[0]}, this one reads {SCHEMA_VERSION})"
            )
        connection.execute("COMMIT")

    def _query(self, sql: str, parameters: tuple = ()) -> tuple[list[str], list[tuple]] | None:
        return self._db.query(sql, parameters)

    def close(self) -> None:
        """Close the store's idle connections (new ones open on the next call)."""
        self._db.close()

    # -- writing -----------------------------------------------------------------
    def make_verdict(self, row_key: Any, verdict: str, note: str = "", reviewer: str = "", *,
                     row: Mapping[str, Any] | pd.Series | None = None, created_at: str | None = None) -> Verdict:
        """A validated :class:`Verdict` (ValueError for an unknown verdict or an empty row key)."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
        key = "" if _missing(row_key) else str(row_key)
        if not key:
            raise ValueError("a verdict needs the row's key")
        note = "" if _missing(note) else str(note)
        reviewer = "" if _missing(reviewer) else str(reviewer).strip()
        if len(note) > NOTE_LIMIT:
            raise ValueError(f"the note is {len(note):,} characters; at most {NOTE_LIMIT:,} are kept")
        if len(reviewer) > REVIEWER_LIMIT:
            raise ValueError(f"the reviewer name is longer than {REVIEWER_LIMIT} characters")
        context: dict[str, Any] = {}
        if row is not None:
            for name in CONTEXT:
                value = row.get(name)
                if name == "source_line":
                    context[name] = None if _missing(value) else int(value)
                else:
                    context[name] = _text_or_none(value)
        return Verdict(
            row_key=key, verdict=verdict, note=note, reviewer=reviewer, created_at=created_at or now(),
            row_digest=row_digest(row), writer=self._writer, **context,
        )

    def set_verdict(self, row_key: Any, verdict: str, note: str = "", reviewer: str = "", *,
                    row: Mapping[str, Any] | pd.Series | None = None, created_at: str | None = None) -> Verdict:
        """Append a verdict for ``row_key`` (``row``: the table row, for context); returns it, saved.

        Verdicts left in memory by earlier failures are written first, in the same
        transaction. On failure raises :class:`VerdictStoreError` and keeps the
        verdict in ``pending`` (nothing is lost while the app runs).
        """
        record = self.make_verdict(row_key, verdict, note, reviewer, row=row, created_at=created_at)
        earlier = self._claim_pending()
        try:
            ids = self._write([*earlier, record])
        except (sqlite3.Error, OSError) as exc:
            self._settle(earlier, saved=False, failed=record)
            raise self._error(exc, record) from None
        self._settle(earlier, saved=True)
        return replace(record, saved=True, id=ids[-1])

    def set_verdicts(self, rows: Iterable[tuple[Any, Mapping[str, Any] | pd.Series | None]], verdict: str,
                     note: str = "", reviewer: str = "") -> list[Verdict]:
        """The same verdict for several rows (``(row_key, row)`` pairs), written in one transaction:
        all saved, or none (then kept in memory as :meth:`set_verdict` keeps one)."""
        created = now()
        records = [self.make_verdict(key, verdict, note, reviewer, row=row, created_at=created) for key, row in rows]
        if not records:
            return []
        earlier = self._claim_pending()
        try:
            ids = self._write([*earlier, *records])
        except (sqlite3.Error, OSError) as exc:
            self._settle(earlier, saved=False)
            with self._lock:
                self.pending.extend(records)
            raise self._error(exc, records[-1]) from None
        self._settle(earlier, saved=True)
        return [replace(r, saved=True, id=i) for r, i in zip(records, ids[-len(records):], strict=True)]

    def flush(self) -> int:
        """Write the verdicts kept in memory; returns how many were saved (VerdictStoreError if none could be)."""
        earlier = self._claim_pending()
        if not earlier:
            return 0
        try:
            self._write(earlier)
        except (sqlite3.Error, OSError) as exc:
            self._settle(earlier, saved=False)
            raise self._error(exc) from None
        self._settle(earlier, saved=True)
        return len(earlier)

    def _claim_pending(self) -> list[Verdict]:
        """The kept-in-memory verdicts no other thread is writing now, marked as being written."""
        with self._lock:
            claimed = [v for v in self.pending if id(v) not in self._writing]
            self._writing.update(id(v) for v in claimed)
        return claimed

    def _settle(self, claimed: list[Verdict], *, saved: bool, failed: Verdict | None = None) -> None:
        """After a write: drop the claimed verdicts from memory if saved; keep ``failed`` in memory."""
        done = {id(v) for v in claimed}
        with self._lock:
            self._writing -= done
            if saved:
                self.pending[:] = [v for v in self.pending if id(v) not in done]
            if failed is not None:
                self.pending.append(failed)

    def _write(self, batch: list[Verdict]) -> list[int]:
        """Insert ``batch`` in one transaction; returns the new ids."""

        def insert(connection: sqlite3.Connection) -> list[int]:
            connection.execute("BEGIN IMMEDIATE")
            ids = []
            for v in batch:
                cursor = connection.execute(_INSERT, (
                    v.row_key, v.verdict, v.note, v.reviewer, v.created_at, v.row_digest, v.source_file,
                    v.source_line, v.record_id, v.run, v.task_id, v.writer,
                ))
                ids.append(int(cursor.lastrowid))
            connection.execute("COMMIT")
            return ids

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self._db.attempt(insert, write=True)

    # -- reading -----------------------------------------------------------------
    def verdicts(self, *, include_pending: bool = True) -> pd.DataFrame:
        """Every verdict ever given (oldest first), plus those kept in memory (``saved`` False)."""
        with self._lock:  # memory first: a verdict saved meanwhile shows twice at worst, never not at all
            pending = [asdict(v) for v in self.pending] if include_pending else []
        return _frame(pending, self._saved(_SELECT + " ORDER BY created_at, id"))

    def latest(self, *, include_pending: bool = True) -> pd.DataFrame:
        """The current verdict of every reviewed row (the latest given wins), with ``revisions``."""
        return latest_of(self.verdicts(include_pending=include_pending))

    def _saved(self, sql: str, parameters: tuple = ()) -> pd.DataFrame | None:
        """Saved verdicts as a frame (None when there is no file or table yet)."""
        try:
            tables = self._query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'verdicts'")
            if tables is None or not tables[1]:
                return None
            names, values = self._query(sql, parameters)
        except (sqlite3.Error, OSError) as exc:
            raise self._error(exc) from None
        frame = pd.DataFrame.from_records(values, columns=names)
        frame["saved"] = True
        return frame

    def latest_for(self, row_keys: Iterable[Any]) -> dict[str, str]:
        """``{row_key: its current verdict}`` for the given rows that have one (a page of tiles)."""
        keys = list(dict.fromkeys(str(k) for k in row_keys))
        if not keys:
            return {}
        frames = []
        for start in range(0, len(keys), 500):  # SQLite's limit on bound parameters
            chunk = keys[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            frames.append(self._saved(_SELECT + f" WHERE row_key IN ({marks}) ORDER BY created_at, id", tuple(chunk)))
        wanted = set(keys)
        with self._lock:
            pending = [asdict(v) for v in self.pending if v.row_key in wanted]
        saved = [f for f in frames if f is not None]
        latest = latest_of(_frame(pending, pd.concat(saved, ignore_index=True) if saved else None))
        return dict(zip(latest["row_key"].astype(str), latest["verdict"].astype(str), strict=True))

    def history(self, row_key: Any) -> pd.DataFrame:
        """Every verdict of one row, oldest first (kept-in-memory ones last)."""
        key = str(row_key)
        with self._lock:
            pending = [asdict(v) for v in self.pending if v.row_key == key]
        return _frame(pending, self._saved(_SELECT + " WHERE row_key = ? ORDER BY created_at, id", (key,)))

    def current(self, row_key: Any) -> Verdict | None:
        """The latest verdict of one row, or None."""
        rows = self.history(row_key)
        if not len(rows):
            return None
        last = rows.iloc[-1].to_dict()
        fields = {k: (None if _missing(v) else v) for k, v in last.items() if k in Verdict.__dataclass_fields__}
        fields["saved"] = bool(last.get("saved"))
        if fields.get("source_line") is not None:
            fields["source_line"] = int(fields["source_line"])
        if fields.get("id") is not None:
            fields["id"] = int(fields["id"])
        return Verdict(**fields)

    def status(self) -> StoreStatus:
        """Can verdicts be saved here? (Cheap: file permissions only, never waits on a lock.)"""
        where = str(self.path)
        try:
            exists = self.path.exists()
        except OSError as exc:
            return StoreStatus(where, False, False, f"The verdict file {where} cannot be reached ({exc.strerror}).")
        if exists:
            writable = os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK | os.X_OK)
        else:
            writable = self._dir_writable()
        if writable:
            message = f"Verdicts are saved to {where}."
        elif exists:
            message = f"The verdict file {where} is read-only: verdicts can be read but new ones are not saved."
        else:
            message = f"The folder for {where} is not writable: new verdicts are not saved."
        return StoreStatus(where, writable, exists, message)

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` ("ok" when healthy, or when there is no file yet)."""
        result = self._query("PRAGMA integrity_check")
        return "ok" if result is None else "; ".join(str(r[0]) for r in result[1])

    def export(self, rows: pd.DataFrame | None, fmt: str = "jsonl", *, verdicts: pd.DataFrame | None = None,
               history: bool = False, columns: Iterable[str] | None = None) -> bytes:
        """Verdicts joined with the scored rows, as JSONL or CSV bytes (UTF-8).

        ``verdicts`` defaults to :meth:`latest` (or every revision with ``history``).
        See :func:`join_rows` for the columns.
        """
        if verdicts is None:
            verdicts = self.verdicts() if history else self.latest()
        return export_bytes(join_rows(verdicts, rows, columns=columns), fmt)


def _statements(script: str) -> list[str]:
    """Split the schema into statements (triggers contain ';' inside BEGIN ... END)."""
    out: list[str] = []
    buffer: list[str] = []
    for line in script.strip().splitlines():
        buffer.append(line)
        text = "\n".join(buffer).strip()
        if text.endswith(";") and (not text.upper().startswith("CREATE TRIGGER") or text.upper().endswith("END;")):
            out.append(text)
            buffer = []
    return out


def _frame(rows: list[dict[str, Any]], saved: pd.DataFrame | None = None) -> pd.DataFrame:
    """The verdicts table: ``saved`` (read from the file) followed by ``rows`` (kept in memory)."""
    parts = [p for p in (saved, pd.DataFrame.from_records(rows, columns=list(COLUMNS)) if rows else None)
             if p is not None and len(p)]
    if parts:
        frame = pd.concat([p.reindex(columns=list(COLUMNS)) for p in parts], ignore_index=True)
    else:
        frame = pd.DataFrame({name: pd.Series(dtype=object) for name in COLUMNS})
    frame["saved"] = frame["saved"].astype(bool)
    frame["id"] = pd.array(frame["id"].astype(object).where(frame["id"].notna(), None), dtype="Int64")
    frame["source_line"] = pd.array(
        frame["source_line"].astype(object).where(frame["source_line"].notna(), None), dtype="Int64"
    )
    for name in ("row_key", "verdict", "note", "reviewer", "created_at", "row_digest", "source_file", "record_id",
                 "run", "task_id", "writer"):
        frame[name] = frame[name].astype(object)
    return frame


def frame_of(items: Iterable[Verdict] = ()) -> pd.DataFrame:
    """Verdict objects as a verdicts table (the columns of :meth:`VerdictStore.verdicts`)."""
    return _frame([asdict(v) for v in items])


def latest_of(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per ``row_key``: the verdict given last (by ``created_at``, then save order)."""
    if not len(verdicts):
        out = verdicts.copy()
        out["revisions"] = pd.Series(dtype="int64")
        return out
    ordered = verdicts.assign(_saved_order=verdicts["id"].astype("Float64").fillna(float("inf")))
    ordered = ordered.sort_values(["created_at", "_saved_order"], kind="stable")
    revisions = ordered.groupby("row_key", sort=False).size()
    last = ordered.groupby("row_key", sort=False).tail(1).drop(columns="_saved_order")
    last = last.assign(revisions=last["row_key"].map(revisions).astype("int64"))
    return last.sort_values("created_at", ascending=False, kind="stable").reset_index(drop=True)


def filter_verdicts(
    verdicts: pd.DataFrame,
    *,
    kinds: Iterable[str] | None = None,
    reviewers: Iterable[str] | None = None,
    runs: Iterable[str] | None = None,
    tasks: Iterable[str] | None = None,
    text: str = "",
    row_keys: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Narrow verdicts: empty selections mean no filter; ``text`` searches note, row key and reviewer."""
    mask = pd.Series(True, index=verdicts.index)
    for column, wanted in (("verdict", kinds), ("reviewer", reviewers), ("run", runs), ("task_id", tasks),
                           ("row_key", row_keys)):
        values = list(wanted) if wanted is not None else []
        if values:
            mask &= verdicts[column].astype(object).isin(values)
    needle = (text or "").strip().lower()
    if needle:
        hay = (
            verdicts["note"].astype(str) + "\n" + verdicts["row_key"].astype(str) + "\n"
            + verdicts["reviewer"].astype(str)
        ).str.lower()
        mask &= hay.str.contains(needle, regex=False)
    return verdicts[mask]


#: Row columns an export carries by default (those present in the table).
ROW_COLUMNS: tuple[str, ...] = (
    "run", "step", "task_id", "instance_id", "record_id", "source_file", "source_line", "annotation_type",
    "score", "answer_reward", "annotation_reward", "format", "format_reason", "annotation_reason", "response",
)


def verdict_rows(verdicts: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``table`` that verdicts were given on: all :func:`join_rows` needs of a big run
    (and what to add a run's on-disk response to before joining)."""
    keys = set(verdicts["row_key"].astype(str)) if len(verdicts) else set()
    return table[table.index.astype(str).isin(keys)]


def join_rows(verdicts: pd.DataFrame, rows: pd.DataFrame | None, *, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """Verdicts (one line each) with their rows' columns; rows are matched on the table index (``row_id``).

    Adds ``verdict_label``, ``row_found`` (the row is in ``rows``) and ``row_changed``
    (its record id or response differ from what was judged). Verdicts whose row is
    not in ``rows`` are kept, with the file/line/run/task they were given on.
    """
    out = verdicts.copy().reset_index(drop=True)
    out.insert(2, "verdict_label", out["verdict"].map(lambda v: VERDICT_LABELS.get(v, v)))
    if rows is None:
        out["row_found"] = False
        out["row_changed"] = pd.array([pd.NA] * len(out), dtype="boolean")
        return out.drop(columns=["writer"], errors="ignore")
    wanted = [c for c in (columns if columns is not None else ROW_COLUMNS) if c in rows.columns]
    keys = out["row_key"].astype(str)
    found = keys.isin(rows.index.astype(str))
    out["row_found"] = found.to_numpy()
    lookup = rows.index.astype(str)
    position = pd.Series(range(len(rows)), index=lookup)
    position = position[~position.index.duplicated()]
    at = keys.map(position)
    current = row_digests(rows)
    changed = []
    for i, pos in enumerate(at.tolist()):
        stored = out["row_digest"].iat[i]
        if _missing(pos) or _missing(stored):
            changed.append(pd.NA)
        else:
            changed.append(bool(current.iat[int(pos)] != stored))
    out["row_changed"] = pd.array(changed, dtype="boolean")
    for column in wanted:
        values = rows[column].astype(object).to_numpy()
        taken = [None if _missing(p) else values[int(p)] for p in at.tolist()]
        if column in out.columns:  # context stored with the verdict fills in for missing rows
            stored_values = out[column].astype(object).tolist()
            taken = [s if t is None or _missing(t) else t for t, s in zip(taken, stored_values, strict=True)]
            out[column] = taken
        else:
            out[column] = taken
    return out.drop(columns=["writer"], errors="ignore")


def export_bytes(frame: pd.DataFrame, fmt: str = "jsonl") -> bytes:
    """``frame`` as JSONL (one object per line, NaN as null) or CSV, UTF-8."""
    fmt = fmt.lower().strip(".")
    if fmt not in ("jsonl", "csv"):
        raise ValueError(f"export format must be 'jsonl' or 'csv', got {fmt!r}")
    if fmt == "csv":
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        return buffer.getvalue().encode("utf-8")
    lines = []
    for record in frame.astype(object).to_dict(orient="records"):
        clean = {k: (None if _missing(v) else _plain_value(v)) for k, v in record.items()}
        lines.append(json.dumps(clean, ensure_ascii=False, sort_keys=False))
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def _plain_value(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (ValueError, AttributeError):
            return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


# --------------------------------------------------------------------------- one store per file

_STORES: dict[str, VerdictStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(path: str | os.PathLike, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> VerdictStore:
    """The process-wide store for ``path`` (so verdicts kept in memory are shared by every session)."""
    key = str(Path(os.path.expanduser(str(path))).resolve())
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = VerdictStore(key, busy_timeout=busy_timeout)
        return store


def store_for_source(source: Any = None) -> VerdictStore:
    """:func:`store_for` the :func:`default_path` of a data source."""
    return store_for(default_path(source))


__all__ = [
    "ENV_VAR",
    "VERDICTS",
    "VERDICT_LABELS",
    "StoreStatus",
    "Verdict",
    "VerdictStore",
    "VerdictStoreError",
    "default_path",
    "export_bytes",
    "filter_verdicts",
    "frame_of",
    "join_rows",
    "latest_of",
    "row_digest",
    "store_for",
    "store_for_source",
]
