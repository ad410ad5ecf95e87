"""An opened table saved as it is held in memory, and loaded back memory-mapped (or read).

Opening a scored dataset reads and decodes its Parquet parts, joins them, rebuilds the
categories and compacts the columns (:mod:`scoring.datasets.compact`): seconds for a million
rows, and a transient peak of several times the table's size. A run is opened again and again
(every server restart, every colleague's session), so :func:`save` keeps the finished table as
its arrays -- one uncompressed Arrow IPC file per array, with a JSON layout saying how each
column is rebuilt -- and :func:`load` maps those files and wraps them without copying: the
table is there in milliseconds, its pages come from the OS page cache as they are touched, and
N server processes share them.

Nothing here runs code from the files (no pickle): a layout names only the column kinds below,
and a snapshot that does not match them is refused (:class:`SnapshotError`), never guessed at.

A snapshot in a folder a user names (the table a scored dataset carries,
:func:`scoring.datasets.write_table`) is loaded with ``mapped=False``: its files are read, not
mapped -- a mapped file truncated by someone else would kill the process that touches it -- and
every array is checked as untrusted input (Arrow's full validation, category codes within their
categories, sparse positions in range and ascending, only the types a compact table holds).

Column kinds, as :func:`scoring.datasets.compact.compact_table` makes them:

- ``numpy``: a float, integer or bool numpy column;
- ``same``: a column holding the very array of an earlier one (equal float columns share one);
- ``sparse``: a sparse float column (its fill value, the positions and values of the others);
- ``masked``: pandas' nullable integer (values and missing mask);
- ``categorical``: codes and categories (text);
- ``arrow``: an Arrow-backed column (ids as Arrow strings).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

LAYOUT = "layout.json"
VERSION = 1
#: Snapshots kept in a snapshots folder (:func:`keep`): the least recently used go first, and a
#: place's older snapshots (its dataset changed since) as soon as a new one is kept. The app
#: keeps two per run (its table and its row ids).
KEPT = 16
log = logging.getLogger(__name__)
#: Arrow types of categories a snapshot holds (text; what compact tables have).
_CATEGORY_TYPES = (pa.string(), pa.large_string())


class SnapshotError(ValueError):
    """A table that cannot be saved as a snapshot, or a snapshot folder that does not hold one."""


def _write_arrays(path: Path, arrays: Mapping[str, Any]) -> None:
    table = pa.table(dict(arrays))
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _numpy_array(values: np.ndarray, name: str) -> pa.Array:
    if values.dtype.kind not in "fiub":
        raise SnapshotError(f"column {name}: dtype {values.dtype} is not held in a snapshot")
    return pa.array(np.ascontiguousarray(values))


def _buffer(values: np.ndarray, kind: str) -> tuple[str, int, int] | None:
    """What identifies the memory of an array (its kind, address and size): two columns of one
    buffer are saved once (:func:`scoring.datasets.compact.compact_table` shares equal ones)."""
    return (kind, values.__array_interface__["data"][0], values.nbytes) if values.size else None


def _column_layout(name: str, column: pd.Series, folder: Path, number: int, owners: dict[Any, str]) -> dict:
    """Write one column's arrays to ``folder`` and return how :func:`load` rebuilds it."""
    array = column.array
    file = f"{number:04d}.arrow"
    entry: dict[str, Any] = {"name": name, "file": file}
    if isinstance(array, pd.arrays.SparseArray):
        owner = _buffer(array.sp_values, f"sparse {array.fill_value!r} {len(array)}")
        if owner in owners:
            return {"name": name, "kind": "same", "as": owners[owner]}
        if owner is not None:
            owners[owner] = name
        if array.sp_values.dtype != np.float64:
            raise SnapshotError(f"column {name}: sparse {array.sp_values.dtype} is not held in a snapshot")
        indices = np.asarray(array.sp_index.to_int_index().indices, dtype=np.int32)
        _write_arrays(folder / file, {"indices": indices, "values": array.sp_values})
        return {**entry, "kind": "sparse", "length": len(array), "fill": float(array.fill_value).hex()}
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        values = pa.array(categories.to_numpy(dtype=object), type=pa.string())
        _write_arrays(folder / file, {"codes": _numpy_array(np.asarray(column.cat.codes), name)})
        categories_file = f"{number:04d}.categories.arrow"
        _write_arrays(folder / categories_file, {"categories": values})
        return {**entry, "kind": "categorical", "categories": categories_file, "ordered": bool(column.cat.ordered),
                "categories_dtype": str(categories.dtype)}
    if isinstance(array, pd.arrays.IntegerArray):
        data, mask = array._data, array._mask  # the documented parts of IntegerArray(values, mask)
        _write_arrays(folder / file, {"values": _numpy_array(data, name), "mask": pa.array(mask)})
        return {**entry, "kind": "masked"}
    if isinstance(array, pd.arrays.ArrowExtensionArray):
        _write_arrays(folder / file, {"values": array._pa_array.combine_chunks()})
        return {**entry, "kind": "arrow"}
    if isinstance(column.dtype, np.dtype):
        values = column.to_numpy()
        owner = _buffer(values, str(values.dtype))
        if owner in owners:
            return {"name": name, "kind": "same", "as": owners[owner]}
        if owner is not None:
            owners[owner] = name
        _write_arrays(folder / file, {"values": _numpy_array(values, name)})
        return {**entry, "kind": "numpy"}
    raise SnapshotError(f"column {name}: dtype {column.dtype} is not held in a snapshot")


def save(table: pd.DataFrame, folder: str | os.PathLike, *, meta: Mapping[str, Any] | None = None) -> Path:
    """Save ``table`` (a compact table with a RangeIndex) as a snapshot folder, atomically: the
    folder appears whole or not at all, and an existing one is kept (another process saved the
    same table first). ``meta``: JSON data kept with it (:func:`load` gives it back)."""
    if not isinstance(table.index, pd.RangeIndex) or table.index.start != 0 or table.index.step != 1:
        raise SnapshotError("a snapshot holds a table indexed 0..n-1")
    if not table.columns.is_unique:
        raise SnapshotError("a snapshot holds a table with unique column names")
    with SnapshotWriter(folder, len(table)) as writer:
        owners: dict[Any, str] = {}  # every column is alive: one buffer under two names is written once
        for name in table.columns:
            writer.add(str(name), table[name], owners)
        return writer.finish([str(name) for name in table.columns], table.attrs, meta)


class SnapshotWriter:
    """A snapshot written a column at a time (:meth:`add`, :meth:`add_same`), for a table that is
    never held whole (:func:`scoring.datasets.write_table`), and put in place by :meth:`finish` as
    :func:`save` puts one: atomically, an existing one kept. Until then its files live in a
    staging folder beside ``folder``, removed when the ``with`` block is left."""

    def __init__(self, folder: str | os.PathLike, rows: int | None = None):
        self.folder = Path(folder)
        #: every column's length (None: the first column written sets it)
        self.rows = rows
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        self.staging = self.folder.with_name(f".{self.folder.name}.{os.getpid()}.{uuid.uuid4().hex}")
        self.staging.mkdir()
        self.entries: dict[str, dict] = {}

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        shutil.rmtree(self.staging, ignore_errors=True)  # gone already once the snapshot is in place
        return False

    def add(self, name: str, column: pd.Series, owners: dict[Any, str] | None = None) -> None:
        """Write ``column`` as ``name``. ``owners``: the buffers written so far that are still
        alive, by :func:`_buffer` (a column on one of them is written as the same as its owner);
        None when none is (a buffer freed since may be another's now)."""
        if name in self.entries:
            raise SnapshotError(f"column {name} is written twice")
        if self.rows is None:
            self.rows = len(column)
        if len(column) != self.rows:
            raise SnapshotError(f"column {name}: {len(column)} values for {self.rows} rows")
        number = len(self.entries)
        self.entries[name] = _column_layout(name, column, self.staging, number, {} if owners is None else owners)

    def add_same(self, name: str, earlier: str) -> None:
        """``name`` is the column ``earlier``, already written, under another name."""
        if name in self.entries or earlier not in self.entries:
            raise SnapshotError(f"column {name} cannot be the same as {earlier!r}")
        self.entries[name] = {"name": name, "kind": "same", "as": earlier}

    def column(self, name: str) -> pd.Series:
        """A column written so far, read back (mapped: its pages are the written file's)."""
        return _rebuilt(self._holder(name), self.staging, self.rows, {}, mapped=True)

    def _holder(self, name: str) -> dict:
        """The entry holding ``name``'s values (itself, or the column it is the same as)."""
        entry = self.entries[name]
        while entry.get("kind") == "same":
            entry = self.entries[entry["as"]]
        return entry

    def finish(self, order: Sequence[str], attrs: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> Path:
        """Put the snapshot in place with its columns in ``order`` (each column written, once):
        of columns sharing one array, the first in ``order`` holds it. The snapshot's folder."""
        if sorted(order) != sorted(self.entries):
            raise SnapshotError("a snapshot's order names each of its columns once")
        holders: dict[str, str] = {}  # the column whose entry holds the values -> the first of its names
        columns = []
        for name in order:
            holder = self._holder(name)
            if holder["name"] in holders:
                columns.append({"name": name, "kind": "same", "as": holders[holder["name"]]})
            else:
                holders[holder["name"]] = name
                columns.append({**holder, "name": name})
        layout = {"version": VERSION, "rows": self.rows or 0, "columns": columns, "attrs": dict(attrs),
                  "meta": dict(meta or {})}  # fmt: skip
        (self.staging / LAYOUT).write_text(json.dumps(layout))
        try:
            os.rename(self.staging, self.folder)
        except OSError:
            if not (self.folder / LAYOUT).is_file():
                raise
        return self.folder


def _arrays(folder: Path, file: Any, mapped: bool) -> pa.Table:
    """The arrays of one file of the snapshot: mapped read-only, or read and fully validated."""
    if not isinstance(file, str) or "/" in file or file.startswith("."):
        raise SnapshotError(f"{folder}: a layout names a file outside its folder: {file!r}")
    try:
        with (pa.memory_map if mapped else pa.OSFile)(str(folder / file), "r") as source:
            table = pa.ipc.open_file(source).read_all()
        if not mapped:
            table.validate(full=True)
    except (OSError, pa.ArrowException) as exc:
        raise SnapshotError(f"{folder / file}: {exc}") from None
    return table


def _numpy(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    kind = column.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
        raise SnapshotError(f"array {name} is {kind}, not numbers")
    if column.num_chunks == 0:  # an empty array is saved as no chunk
        return np.empty(0, dtype=kind.to_pandas_dtype())
    if column.num_chunks != 1 or column.null_count:
        raise SnapshotError(f"array {name} is not one chunk without missing values")
    return column.chunk(0).to_numpy(zero_copy_only=kind != pa.bool_())


def _sparse_positions(indices: np.ndarray, values: np.ndarray, length: int) -> np.ndarray:
    """``indices`` checked as pandas assumes them (ascending, unique, within the length)."""
    if (
        indices.dtype.kind != "i" or len(indices) != len(values) or length < 0
        or (len(indices) and (indices[0] < 0 or indices[-1] >= length or np.any(np.diff(indices) <= 0)))
    ):  # fmt: skip
        raise SnapshotError("sparse positions out of order or out of range")
    return indices


#: How a categorical's text categories are held (what :func:`save` writes; :func:`load` takes no
#: other). No categories at all are pandas' empty float index.
_CATEGORY_DTYPES = ("object", "str", "string")
_NO_CATEGORIES_DTYPE = "float64"


def _rebuilt(entry: Mapping[str, Any], folder: Path, rows: int, built: Mapping[str, pd.Series], mapped: bool) -> pd.Series:
    kind = entry.get("kind")
    if kind == "same":
        if entry.get("as") not in built:
            raise SnapshotError(f"column {entry.get('name')} shares an unknown column {entry.get('as')!r}")
        return built[entry["as"]]
    arrays = _arrays(folder, entry.get("file"), mapped)
    if kind == "numpy":
        values = _numpy(arrays, "values")
    elif kind == "sparse":
        fill = float.fromhex(entry["fill"])
        length, numbers = int(entry["length"]), _numpy(arrays, "values")
        indices = _sparse_positions(_numpy(arrays, "indices"), numbers, length)
        values = pd.arrays.SparseArray.from_indices(numbers, indices, length, fill_value=fill, dtype=np.float64)
    elif kind == "masked":
        data, mask = _numpy(arrays, "values"), _numpy(arrays, "mask")
        if data.dtype.kind != "i" or mask.dtype != bool or data.shape != mask.shape:
            raise SnapshotError(f"column {entry.get('name')}: not integers with a missing mask")
        values = pd.arrays.IntegerArray(data, mask)
    elif kind == "arrow":
        text = arrays.column("values")
        if text.type not in _CATEGORY_TYPES:
            raise SnapshotError(f"column {entry.get('name')}: {text.type} is not text")
        values = pd.arrays.ArrowExtensionArray(text)
    elif kind == "categorical":
        categories = _arrays(folder, entry.get("categories"), mapped).column("categories")
        if categories.type not in _CATEGORY_TYPES or categories.null_count:
            raise SnapshotError(f"column {entry.get('name')}: categories are not text")
        held = entry.get("categories_dtype")
        if held not in _CATEGORY_DTYPES and not (held == _NO_CATEGORIES_DTYPE and len(categories) == 0):
            raise SnapshotError(f"column {entry.get('name')}: categories held as {entry.get('categories_dtype')!r}")
        index = pd.Index(pd.array(categories.combine_chunks(), dtype=entry["categories_dtype"]))
        dtype = pd.CategoricalDtype(index, ordered=bool(entry.get("ordered")))
        # codes read from a file are checked against the categories (mapped ones are the app's own)
        values = pd.Categorical.from_codes(_numpy(arrays, "codes"), dtype=dtype, validate=not mapped)
    else:
        raise SnapshotError(f"column {entry.get('name')}: unknown kind {kind!r}")
    if len(values) != rows:
        raise SnapshotError(f"column {entry.get('name')}: {len(values)} values for {rows} rows")
    return pd.Series(values, index=pd.RangeIndex(rows), copy=False)


def load(folder: str | os.PathLike, *, mapped: bool = True) -> tuple[pd.DataFrame, dict]:
    """The table a snapshot folder holds, its arrays memory-mapped (read-only), and its ``meta``.
    ``mapped=False``: the files are read into memory and checked as untrusted input (a folder a
    user names). Raises :class:`SnapshotError` for a folder that is not a whole, valid snapshot
    of this version."""
    folder = Path(folder)
    try:
        layout = json.loads((folder / LAYOUT).read_text())
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"{folder}: no snapshot layout ({exc})") from None
    if not isinstance(layout, dict) or layout.get("version") != VERSION:
        raise SnapshotError(f"{folder}: not a version {VERSION} snapshot")
    built: dict[str, pd.Series] = {}
    try:
        rows = int(layout["rows"])
        for entry in layout["columns"]:
            if not isinstance(entry.get("name"), str):
                raise SnapshotError(f"{folder}: a column without a name")
            built[entry["name"]] = _rebuilt(entry, folder, rows, built, mapped)
        attrs, meta = dict(layout.get("attrs") or {}), dict(layout.get("meta") or {})
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise SnapshotError(f"{folder}: damaged layout ({type(exc).__name__}: {exc})") from None
    table = pd.DataFrame(built, copy=False) if built else pd.DataFrame(index=pd.RangeIndex(rows))
    table.attrs = attrs
    return table, meta


# --------------------------------------------------------------------------- a folder of snapshots


def folder_for(root: str | os.PathLike, place: str, identity: Any) -> Path:
    """The snapshot folder under ``root`` for what ``identity`` (JSON data) decides, kept for
    ``place`` (a dataset's folder): one folder per place and identity, named by their digests."""
    where = hashlib.sha256(place.encode()).hexdigest()[:16]
    what = json.dumps([identity, VERSION], sort_keys=True, default=str)
    return Path(root) / f"{where}-{hashlib.sha256(what.encode()).hexdigest()[:24]}"


def cached(folder: str | os.PathLike) -> pd.DataFrame | None:
    """The table kept in ``folder``, or None when there is none; a damaged one is removed."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    try:
        table, _ = load(folder)
    except SnapshotError as exc:
        log.warning("table snapshot not used (%s)", exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    with contextlib.suppress(OSError):
        os.utime(folder)  # recently used: kept longest
    return table


def keep(table: pd.DataFrame, folder: str | os.PathLike, *, kept: int = KEPT) -> None:
    """Save ``table`` in ``folder`` (see :func:`folder_for`); remove the same place's other
    snapshots and the least recently used beyond ``kept``. A table that cannot be kept is only
    a slower next open: logged, not raised."""
    folder = Path(folder)
    try:
        save(table, folder)
    except (OSError, SnapshotError) as exc:
        log.warning("table snapshot not saved in %s: %s", folder, exc)
        return
    prune(folder, kept)


def prune(folder: str | os.PathLike, kept: int = KEPT) -> None:
    """Beside the snapshot ``folder``, remove its place's other snapshots and the least recently
    used beyond ``kept`` (itself counted)."""
    folder = Path(folder)
    place = folder.name.split("-")[0]
    try:
        others = [p for p in folder.parent.iterdir() if p.is_dir() and p != folder and not p.name.startswith(".")]
        others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    stale = [p for p in others if p.name.split("-")[0] == place]
    rest = [p for p in others if p not in stale]
    for old in [*stale, *rest[max(0, kept - 1):]]:
        shutil.rmtree(old, ignore_errors=True)


#: :func:`keep_later`'s one writer thread: snapshots are written one at a time, never in the
#: way of the open that asked for them. Its thread is joined when the interpreter exits, so a
#: snapshot being written is finished (a staging folder is never left behind by it).
_WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rolloutscope-snapshot")
_PENDING: set[Future] = set()
_PENDING_LOCK = threading.Lock()


def keep_later(table: pd.DataFrame, folder: str | os.PathLike, *, kept: int = KEPT) -> Future:
    """:func:`keep`, on a background thread, unless ``folder`` holds a snapshot by then (another
    session asked first). The table is taken as it is now: a shallow copy, so columns the
    caller replaces or an index it sets afterwards are not seen (copy-on-write keeps the
    values). What opened a table from elsewhere (read, not mapped) asks for this so that the
    next open maps it, without making this one wait for the write."""
    frozen = table.copy(deep=False)
    frozen.attrs = json.loads(json.dumps(table.attrs, default=str))
    future = _WRITER.submit(_keep_unless_kept, frozen, Path(folder), kept)
    with _PENDING_LOCK:
        _PENDING.add(future)
    future.add_done_callback(_forget)
    return future


def _keep_unless_kept(table: pd.DataFrame, folder: Path, kept: int) -> None:
    if not (folder / LAYOUT).is_file():
        keep(table, folder, kept=kept)


def _forget(future: Future) -> None:
    with _PENDING_LOCK:
        _PENDING.discard(future)
    if not future.cancelled() and future.exception() is not None:
        log.warning("table snapshot not saved: %s", future.exception())


def wait_kept(timeout: float | None = None) -> bool:
    """Wait until the snapshots :func:`keep_later` was asked for are written (or given up on):
    True when none is pending any more."""
    with _PENDING_LOCK:
        pending = set(_PENDING)
    return not wait_futures(pending, timeout=timeout).not_done


__all__ = ["KEPT", "LAYOUT", "VERSION", "SnapshotError", "SnapshotWriter", "cached", "folder_for", "keep",
           "keep_later", "load", "prune", "save", "wait_kept"]
