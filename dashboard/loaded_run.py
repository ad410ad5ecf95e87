"""An opened run as the pages see it: its table indexed by row id, its errors, and what a row
needs to be shown (its text read from disk, its explanation, its image).

:mod:`dashboard.loading` scores a source's files and opens their datasets; it hands the pages a
:class:`LoadedRun` built here from the opened tables (:func:`finish_table`: display names and
row ids; :func:`concat_tables`: the groups' tables one under the other). Nothing here scores or caches.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dashboard.row_lookup import row_positions
from dashboard.sources import UNRECOGNISED, DataSource, FilePlan
from scoring.datasets import DatasetUpdate, ScoredDataset, read_columns, row_text, search_text
from scoring.rollouts import (
    MISSING,
    ImageProblem,
    ImageResolver,
    Layout,
    Source,
    SourceError,
    get_path,
    open_image,
)
from scoring.runs import explain_row
from scoring.verifier import TraceEvaluation

#: Text a page groups or joins rows on (:meth:`LoadedRun.table_with` reads it when on disk):
#: compare and GRPO groups key rows by prompt and image; suspects and corrections by ground truth.
IDENTITY_COLUMNS = ("prompt", "image_ref")
GROUND_TRUTH_COLUMNS = ("scorer_kwargs", "prompt", "image_ref")

#: Images are decoded for display at most this many pixels on their long side: wider than
#: any column of the app, and a 36-megapixel photo then costs a few MB instead of 150.
DISPLAY_MAX_SIDE = 1600
#: Rows whose text is kept in memory once read (a page of tiles and the Inspector's row).
ROWS_KEPT = 128


@dataclass
class LoadedRun:
    """One scored data source: the table (index ``row_id``), errors and what explains a row."""

    key: str
    source: DataSource
    table: pd.DataFrame
    errors: pd.DataFrame
    plans: list[FilePlan]
    layouts: dict[str, Layout]
    paths: dict[str, str]  # display name -> path on disk
    resolver: ImageResolver
    seconds: float = 0.0
    datasets: list[ScoredDataset] = field(default_factory=list)  # in table order
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # first row of each
    updates: list[DatasetUpdate] = field(default_factory=list)  # what the last look at the files did
    _explained: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _searched: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _rows: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _widened: tuple | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_explained"] = OrderedDict()
        state["_searched"] = OrderedDict()
        state["_rows"] = OrderedDict()
        state["_widened"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"{self.source.label} ({len(self.table):,} rollouts)"

    @property
    def unrecognised(self) -> list[FilePlan]:
        return [p for p in self.plans if p.kind == UNRECOGNISED]

    @property
    def on_disk(self) -> tuple[str, ...]:
        """Text columns not held in :attr:`table` (read per row with :meth:`text`)."""
        if not self.datasets:
            return ()
        kept = dict.fromkeys(c for d in self.datasets for c in d.on_disk)
        return tuple(c for c in kept if c not in self.table.columns)

    def table_with(self, columns: Sequence[str]) -> pd.DataFrame:
        """:attr:`table` with the given text columns for every row, those left on disk read whole
        (a page that groups or joins on them: compare and groups on prompts, suspects on ground
        truth); the table itself when it holds them. The last such table is kept."""
        missing = tuple(c for c in columns if c in self.on_disk)
        if not missing:
            return self.table
        with self._lock:
            if self._widened is not None and self._widened[0] == missing:
                return self._widened[1]
        parts = [read_columns(dataset, missing) for dataset in self.datasets]
        read = concat_tables(parts) if len(parts) > 1 else parts[0]
        table = self.table.copy(deep=False)
        for name in missing:
            table[name] = read[name].array  # by position: the datasets' rows are the table's, in order
        with self._lock:
            self._widened = (missing, table)
        return table

    def text(self, row_ids: Sequence[Any], columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The on-disk text ``columns`` (default: all of :attr:`on_disk`) of the given rows,
        read from disk; indexed by ``row_ids``. Columns the table holds come from the table."""
        wanted = list(self.on_disk if columns is None else columns)
        ids = pd.Index(list(row_ids), dtype=self.table.index.dtype)
        held = [c for c in wanted if c in self.table.columns]
        frame = pd.DataFrame(index=ids)
        positions = row_positions(self.table.index, ids)
        for name in held:
            column = self.table[name]
            frame[name] = (
                column.iloc[positions].to_numpy()
                if (positions >= 0).all()
                else column.reindex(ids).to_numpy()
            )
        missing = [c for c in wanted if c not in held and c in self.on_disk]
        if missing:
            if (positions < 0).any():
                raise KeyError(f"no such row: {ids[positions < 0][0]}")
            owner = np.searchsorted(self.starts, positions, side="right") - 1
            values = {c: np.empty(len(ids), dtype=object) for c in missing}
            for k in np.unique(owner):
                chosen = np.flatnonzero(owner == k)
                read = row_text(self.datasets[k], positions[chosen] - self.starts[k], missing)
                for name in missing:
                    values[name][chosen] = read[name].to_numpy(dtype=object)
            for name in missing:
                frame[name] = pd.Series(values[name], index=ids, dtype="str")
        return frame[[c for c in wanted if c in frame.columns]]

    def rows_at(self, row_ids: Sequence[Any]) -> pd.DataFrame:
        """``table.loc[row_ids]`` (KeyError naming an id the run does not have), found by
        :func:`row_positions`: without hashing the whole index first."""
        positions = row_positions(self.table.index, row_ids)
        if (positions < 0).any():
            raise KeyError(f"no such row: {list(row_ids)[int(np.flatnonzero(positions < 0)[0])]!r}")
        return self.table.iloc[positions]

    def with_text(self, rows: pd.DataFrame | Sequence[Any]) -> pd.DataFrame:
        """Table rows (a frame of this run's rows, or row ids) with their on-disk text added: what
        a row's detail view, an export or a rescoring of a few rows needs."""
        frame = rows if isinstance(rows, pd.DataFrame) else self.rows_at(list(rows))
        missing = [c for c in self.on_disk if c not in frame.columns]
        if not missing:
            return frame
        text = self.text(frame.index, missing)
        out = frame.copy()
        for name in missing:
            out[name] = text[name].to_numpy()
        return out

    def search(self, needle: str, columns: Sequence[str] | None = None) -> pd.Series:
        """Rows (a boolean Series by row id) whose on-disk text ``columns`` contain ``needle``
        (case-insensitive, literal), streamed from disk; the last few searches are kept."""
        wanted = tuple(self.on_disk if columns is None else [c for c in columns if c in self.on_disk])
        if not needle or not wanted:
            return pd.Series(False, index=self.table.index)
        key = (needle, wanted)
        with self._lock:
            hit = self._searched.get(key)
        if hit is not None:
            return hit
        mask = np.concatenate([search_text(dataset, needle, wanted) for dataset in self.datasets])
        found = pd.Series(mask, index=self.table.index)
        with self._lock:
            self._searched[key] = found
            while len(self._searched) > 8:
                self._searched.popitem(last=False)
        return found

    def _row_frame(self, row_id: Any) -> tuple[pd.DataFrame, pd.Series]:
        """``(the one-row frame with its on-disk text, that row)``, the last few kept: a page asks
        for its row several times per rerun, and the explanation re-runs the verifier on it."""
        with self._lock:
            hit = self._rows.get(row_id)
            if hit is not None:
                self._rows.move_to_end(row_id)
                return hit
        frame = self.with_text([row_id])
        both = (frame, frame.iloc[0])
        with self._lock:
            self._rows[row_id] = both
            while len(self._rows) > ROWS_KEPT:
                self._rows.popitem(last=False)
        return both

    def prefetch(self, row_ids: Sequence[Any]) -> None:
        """Read the on-disk text of several rows in one pass and keep it for :meth:`row` and
        :meth:`explain` (a page of gallery tiles asks for dozens of rows at once: each row
        group is then read once, not once per row). At most :data:`ROWS_KEPT` are kept."""
        if not self.on_disk:
            return
        with self._lock:
            wanted = [r for r in dict.fromkeys(row_ids) if r not in self._rows][-ROWS_KEPT:]
        if not wanted:
            return
        frame = self.with_text(wanted)
        with self._lock:
            for position, row_id in enumerate(wanted):
                one = frame.iloc[position : position + 1]
                self._rows[row_id] = (one, one.iloc[0])
                self._rows.move_to_end(row_id)
            while len(self._rows) > ROWS_KEPT:
                self._rows.popitem(last=False)
        import pyarrow as pa

        pa.default_memory_pool().release_unused()  # the row groups read for these rows: not kept cached

    def row(self, row_id: Any) -> pd.Series:
        """One whole row, its on-disk text included."""
        if not self.on_disk:
            return self.rows_at([row_id]).iloc[0]
        return self._row_frame(row_id)[1]

    def explain(self, row_id: Any, **overrides: Any) -> TraceEvaluation:
        """Re-run the verifier on one row (cached). ValueError for simple-scorer rows."""
        key = (row_id, tuple(sorted(overrides.items())))
        with self._lock:
            hit = self._explained.get(key)
            if hit is not None:
                self._explained.move_to_end(key)
                return hit
        frame = self._row_frame(row_id)[0] if self.on_disk else self.rows_at([row_id])
        evaluation = explain_row(frame, row_id, **overrides)
        with self._lock:
            self._explained[key] = evaluation
            while len(self._explained) > 512:
                self._explained.popitem(last=False)
        return evaluation

    def record(self, row_id: Any) -> dict | None:
        """The raw input record behind a row (re-read from its file), or None."""
        row = self.rows_at([row_id]).iloc[0]
        path = self.paths.get(row["source_file"])
        line = row["source_line"]
        if path is None or pd.isna(line):
            return None
        try:
            for number, record in Source(path, access=self.source.access()).records():
                if number == int(line):
                    return record if isinstance(record, dict) else None
                if number > int(line):
                    break
        except SourceError:
            return None
        return None

    def load_image(self, row_id: Any, max_side: int = DISPLAY_MAX_SIDE):
        """``(PIL image or None, warning)``; the warning is '' when the image opened fine.

        The pixels are shrunk to at most ``max_side`` (default ``DISPLAY_MAX_SIDE``) on the long
        side while decoding;
        ``image.info["source_size"]`` keeps the file's size, the space overlays are drawn in
        (``dashboard.overlay.source_size``)."""
        row = self.row(row_id)  # the image reference may be text left on disk
        ref = row.get("image_ref")
        warning = row.get("image_warning")
        warning = "" if warning is None or pd.isna(warning) else str(warning)
        if ref is None or pd.isna(ref):
            return None, warning or "this row has no image"
        value = None
        if str(ref).startswith("inline:"):
            value = self._inline_value(row_id)
        try:
            image = open_image(str(ref), image_value=value, resolver=self.resolver, max_side=max_side)
        except ImageProblem as exc:
            return None, str(exc)
        except OSError as exc:
            return None, f"cannot open the image ({exc})"
        return image, warning

    def _inline_value(self, row_id: Any) -> Any:
        record = self.record(row_id)
        if record is None:
            return None
        layout = self.layouts.get(self.rows_at([row_id])["source_file"].iloc[0])
        where = layout.found.get("image") if layout is not None else None
        for path in [where] if where else ["image", "images"]:
            value = get_path(record, path)
            if value is not MISSING and value is not None:
                return value
        return None


def _row_ids(table: pd.DataFrame) -> pd.Index:
    """``<file>:<line>``, with ``#k`` for the k-th extra row read from the same line (built with
    Arrow from the file codes: a million ids in a tenth of a second)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    file_codes, file_names = pd.factorize(table["source_file"], use_na_sentinel=False)
    names = pa.array(np.asarray(file_names, dtype=object).astype(str), type=pa.string())
    files = pa.DictionaryArray.from_arrays(pa.array(file_codes.astype(np.int32)), names).cast(pa.string())
    lines = table["source_line"].array.to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.isnan(lines)
    whole = np.where(missing, 0, lines).astype(np.int64)
    line_text = pc.if_else(pa.array(missing), pa.scalar("?"), pc.cast(pa.array(whole), pa.string()))
    base = pc.binary_join_element_wise(files, line_text, ":")
    # a (file, line) pair twice: a line that gave several rows, whose extras are numbered
    key = file_codes.astype(np.int64) * (int(whole.max(initial=0)) + 2) + np.where(missing, -1, whole) + 1
    # rows in file order have increasing keys: unique without a hash table of every key
    if (len(key) < 2 or bool((np.diff(key) > 0).all())) or pd.Index(key).is_unique:
        ids = pd.Index(pd.arrays.ArrowStringArray(base), name="row_id").astype("str")
        del files, line_text, base
        pa.default_memory_pool().release_unused()  # the temporaries' buffers, freed but cached by the pool
        return ids
    text = np.asarray(base.to_pylist(), dtype=object)
    dup = pd.Series(key).groupby(key, sort=False).cumcount().to_numpy()
    text = np.where(dup > 0, text + "#" + dup.astype(str), text)
    return pd.Index(text, name="row_id", dtype="str")


def finish_table(
    tables: list[pd.DataFrame], names: Mapping[str, str], row_ids: pd.Index | None = None
) -> pd.DataFrame:
    """The tables one under the other, their files under the names shown, indexed by row id
    (``row_ids`` when given: the ids this table was given before, kept by the caller)."""
    frames = [t for t in tables if len(t.columns)]
    if not frames:
        table = pd.DataFrame(columns=["source_file", "source_line"])
    elif len(frames) == 1:
        table = frames[0]
    else:
        attrs = frames[0].attrs
        table = pd.concat(frames, ignore_index=True)
        table.attrs = dict(attrs)
    if "row_id" in table.columns:
        table = table.rename(columns={"row_id": "record_id"})
    if len(table):
        files = table["source_file"]
        renamed = None
        if isinstance(files.dtype, pd.CategoricalDtype):
            shown = [names.get(f, f) for f in files.cat.categories]
            if len(set(shown)) == len(shown):
                renamed = files.cat.rename_categories(shown)
        table["source_file"] = (
            renamed if renamed is not None else files.map(lambda f: names.get(f, f)).astype("str")
        )
    if row_ids is not None:
        table.index = row_ids
    else:
        table.index = _row_ids(table) if len(table) else pd.Index([], name="row_id", dtype="str")
    return table


def concat_tables(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The groups' tables one under the other; a categorical keeps the union of the categories
    and a column whose dtypes differ between groups is made dense first (as pandas would not)."""
    if len(tables) == 1:
        return tables[0]
    frames = [t for t in tables if len(t.columns)]
    if not frames:
        return tables[0] if tables else pd.DataFrame()
    attrs = dict(frames[0].attrs)
    columns = list(dict.fromkeys(c for t in frames for c in t.columns))
    frames = [t.copy(deep=False) for t in frames]
    for name in columns:
        dtypes = [t[name].dtype for t in frames if name in t.columns]
        if all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
            held = [t[name].cat.categories for t in frames if name in t.columns]
            values = list(dict.fromkeys(v for categories in held for v in categories))
            text = bool(values) and all(isinstance(v, str) for v in values)
            if text:
                values = sorted(values)  # as each table's own categories are
            # no category anywhere: the categories' dtype opening the run whole gives (the first table's)
            union = pd.Index(values, dtype="str" if text else object if values else held[0].dtype)
            for t in frames:
                if name in t.columns:
                    t[name] = t[name].cat.set_categories(union)
        elif any(isinstance(d, pd.SparseDtype) for d in dtypes) and len({str(d) for d in dtypes}) > 1:
            for t in frames:
                if name in t.columns and isinstance(t[name].dtype, pd.SparseDtype):
                    t[name] = t[name].sparse.to_dense()
        elif len({str(d) for d in dtypes}) > 1 and not all(pd.api.types.is_numeric_dtype(d) for d in dtypes):
            for t in frames:  # text held as a category in one table, as strings in another: strings
                if name in t.columns:
                    t[name] = t[name].astype("str")
    table = pd.concat(frames, ignore_index=True)
    table.attrs = attrs
    return table
