"""A data source scored into one table, opened and cached by file content (no Streamlit here).

:func:`load` scores the files a :class:`~dashboard.sources.DataSource` names, as
:func:`~dashboard.sources.plan_files` classified them, with :func:`scoring.batch.score_files`
and returns a :class:`LoadedRun`: the table indexed by a stable ``row_id`` (``<file>:<line>``),
the errors table, what was detected per file, and what is needed to explain a row or open its
image. Each folder's files are scored together so the run label defaults to the folder name, as
on the command line.

Every source is scored into Parquet datasets (:mod:`scoring.store`): one per group of files
read alike, kept under the cache folder (an upload's in its session folder), so a restart or a
new step file rescores only what changed. :func:`load_cached` keeps the last few opened runs in
memory, keyed by their datasets' generations; an opened run holds numbers and categories, and
reads a row's response and recovered text from disk when it is shown (:meth:`LoadedRun.text`).
A folder that already holds a dataset (``rolloutscope score -o DIR/``) opens as it is.

What a source is, where its files may be read from and how each file is classified live in
:mod:`dashboard.sources`, which this module imports (never the reverse): opening a run needs
pandas, the store and the cache, describing a source needs none of them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoring.batch import BatchOptions, Progress, explain_row
from scoring.rewards import SCORER_INFO
from scoring.rollouts import (
    ImageProblem,
    ImageResolver,
    Layout,
    RowError,
    Source,
    SourceError,
    errors_frame,
    open_image,
)
from scoring.rollouts.access import private_dir
from scoring.rollouts.fields import MISSING, get_path
from scoring.store import (
    DatasetUpdate,
    ScoredDataset,
    is_dataset,
    open_dataset,
    read_columns,
    read_manifest,
    row_text,
    score_to_dataset,
    search_text,
    text_on_disk,
)
from scoring.trace import TraceEvaluation

from .sources import (
    INSTANCES,
    REPO_ROOT,
    SIMPLE,
    TRACE,
    UNREADABLE,
    UNRECOGNISED,
    DataSource,
    FilePlan,
    LoadError,
    plan_files,
    short_names,
)

log = logging.getLogger("rolloutscope.dashboard")

SCORED = "scored"  # a file of an opened dataset: read when it was scored

#: Text a page groups or joins rows on (:meth:`LoadedRun.table_with` reads it when on disk):
#: compare and GRPO groups key rows by prompt and image; suspects and corrections by ground truth.
IDENTITY_COLUMNS = ("prompt", "image_ref")
GROUND_TRUTH_COLUMNS = ("scorer_kwargs", "prompt", "image_ref")

#: How many scored runs stay in memory (each can be large).
CACHE_ENTRIES = 3


#: Images are decoded for display at most this many pixels on their long side: wider than
#: any column of the app, and a 36-megapixel photo then costs a few MB instead of 150.
DISPLAY_MAX_SIDE = 1600


# --------------------------------------------------------------------------- code version

_CODE_VERSION: str | None = None


def code_version() -> str:
    """A hash of the scoring and loading code (this module and :mod:`dashboard.sources`, which
    classifies the files): a cached table is reused only by the code that made it."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        digest = hashlib.sha256()
        loaders = [Path(__file__), Path(__file__).with_name("sources.py")]
        for path in sorted([*(REPO_ROOT / "scoring").rglob("*.py"), *loaders]):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        _CODE_VERSION = digest.hexdigest()[:16]
    return _CODE_VERSION


# --------------------------------------------------------------------------- the loaded run


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
        read = _concat(parts) if len(parts) > 1 else parts[0]
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
        for name in held:
            frame[name] = self.table[name].reindex(ids).to_numpy()
        missing = [c for c in wanted if c not in held and c in self.on_disk]
        if missing:
            positions = self.table.index.get_indexer(ids)
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

    def with_text(self, rows: pd.DataFrame | Sequence[Any]) -> pd.DataFrame:
        """Table rows (a frame of this run's rows, or row ids) with their on-disk text added: what
        a row's detail view, an export or a rescoring of a few rows needs."""
        frame = rows if isinstance(rows, pd.DataFrame) else self.table.loc[list(rows)]
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
            while len(self._rows) > 64:
                self._rows.popitem(last=False)
        return both

    def row(self, row_id: Any) -> pd.Series:
        """One whole row, its on-disk text included."""
        if not self.on_disk:
            return self.table.loc[row_id]
        return self._row_frame(row_id)[1]

    def explain(self, row_id: Any, **overrides: Any) -> TraceEvaluation:
        """Re-run the verifier on one row (cached). ValueError for simple-scorer rows."""
        key = (row_id, tuple(sorted(overrides.items())))
        with self._lock:
            hit = self._explained.get(key)
            if hit is not None:
                self._explained.move_to_end(key)
                return hit
        frame = self._row_frame(row_id)[0] if self.on_disk else self.table
        evaluation = explain_row(frame, row_id, **overrides)
        with self._lock:
            self._explained[key] = evaluation
            while len(self._explained) > 512:
                self._explained.popitem(last=False)
        return evaluation

    def record(self, row_id: Any) -> dict | None:
        """The raw input record behind a row (re-read from its file), or None."""
        row = self.table.loc[row_id]
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

    def load_image(self, row_id: Any):
        """``(PIL image or None, warning)``; the warning is '' when the image opened fine.

        The pixels are shrunk to at most ``DISPLAY_MAX_SIDE`` on the long side while decoding;
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
            image = open_image(str(ref), image_value=value, resolver=self.resolver, max_side=DISPLAY_MAX_SIDE)
        except ImageProblem as exc:
            return None, str(exc)
        except OSError as exc:
            return None, f"cannot open the image ({exc})"
        return image, warning

    def _inline_value(self, row_id: Any) -> Any:
        record = self.record(row_id)
        if record is None:
            return None
        layout = self.layouts.get(self.table.loc[row_id, "source_file"])
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
    lines = table["source_line"].to_numpy(dtype=np.float64, na_value=np.nan)
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


def _finish_table(tables: list[pd.DataFrame], names: Mapping[str, str]) -> pd.DataFrame:
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
        table["source_file"] = renamed if renamed is not None else files.map(lambda f: names.get(f, f)).astype("str")
    table.index = _row_ids(table) if len(table) else pd.Index([], name="row_id", dtype="str")
    return table


ProgressFn = Callable[[float, str], None]


def _groups(plans: Sequence[FilePlan], source: DataSource) -> list[tuple[str, tuple[FilePlan, ...]]]:
    """Files scored together: same kind, mapping and (for the run label) folder."""
    groups: dict[tuple, list[FilePlan]] = {}
    for plan in plans:
        if plan.kind == INSTANCES:
            continue
        kind = SIMPLE if plan.kind == SIMPLE else TRACE
        folder = str(Path(plan.name).parent) if source.runs == "folder" else plan.name
        mapping = plan.mapping.to_json() if plan.mapping else ""
        groups.setdefault((kind, mapping, folder), []).append(plan)
    return [(kind, tuple(files)) for (kind, _, _), files in groups.items()]


def _group_identity(source: DataSource, kind: str, files: Sequence[FilePlan], instances: Sequence[str]) -> str:
    """What names a group's dataset folder: where the files come from and every option that
    decides their table -- not the file list, so a new step file updates the same folder."""
    if source.runs == "folder":
        where = str(Path(files[0].path).resolve().parent)
    else:
        where = str(Path(files[0].path).resolve())
    parts = [
        source.kind, source.origin or source.label, where, kind,
        files[0].mapping.to_json() if files[0].mapping else "", source.simple_scorer, source.runs,
        source.image_root or "", sorted(source.image_files), sorted(instances),
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:20]


def _grows(source: DataSource) -> bool:
    """A path source that may gain files: a folder or a glob (not a single file)."""
    origin = source.origin
    return source.kind == "path" and bool(origin) and (any(c in origin for c in "*?[") or Path(origin).is_dir())


_SCRATCH: Path | None = None
_FOLDER_LOCKS: dict[str, threading.Lock] = {}


def datasets_dir(source: DataSource) -> Path:
    """Where a source's scored datasets live: beside an upload in its session folder (removed
    with it), else under the cache folder, else (cache off) in a private folder of this process."""
    global _SCRATCH
    if source.kind == "upload" and source.upload_root:
        return Path(source.upload_root) / ".scored"
    folder = cache_dir()
    if folder is not None:
        private_dir(folder)
        for legacy in folder.glob("run-*"):  # tables cached by older versions (pickles among them): never read
            if legacy.is_dir():
                shutil.rmtree(legacy, ignore_errors=True)
            else:
                legacy.unlink(missing_ok=True)
        return folder / "datasets"
    if _SCRATCH is None:
        import tempfile

        _SCRATCH = Path(tempfile.mkdtemp(prefix="rolloutscope-datasets-"))
    return _SCRATCH


def _folder_lock(folder: Path) -> threading.Lock:
    with _CACHE_LOCK:
        return _FOLDER_LOCKS.setdefault(str(folder), threading.Lock())


@dataclass
class Prepared:
    """A source scored into its datasets (nothing opened yet): what :func:`open_prepared` opens."""

    source: DataSource
    plans: list[FilePlan]
    folders: list[Path]
    updates: list[DatasetUpdate]
    seconds: float

    @functools.cached_property
    def key(self) -> str:
        """Changes exactly when an opened table would: a dataset's generation, names, code."""
        parts = [code_version(), [(str(f), read_manifest(f)["generation"]) for f in self.folders],
                 [(p.path, p.name) for p in self.plans], self.source.label]
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:24]


def prepare(source: DataSource, progress: ProgressFn | None = None, *, workers: int | None = None) -> Prepared:
    """Score every file of ``source`` into its datasets, only what is new or changed since the
    last time (:func:`scoring.store.score_to_dataset`); a dataset source is taken as it is."""
    started = time.perf_counter()
    if source.kind == "dataset":
        folder = Path(source.files[0])
        try:
            read_manifest(folder)
        except (OSError, ValueError) as exc:
            raise LoadError(f"{source.label}: {exc}") from None
        return Prepared(source, [], [folder], [], time.perf_counter() - started)
    if source.simple_scorer not in SCORER_INFO:
        raise LoadError(f"unknown simple scorer {source.simple_scorer!r}; choose one of {', '.join(SCORER_INFO)}")
    if progress:
        progress(0.0, "reading the files")
    plans = plan_files(source)
    names = {str(Path(p.path).resolve()): p.name for p in plans}
    instances = [p.path for p in plans if p.kind == INSTANCES]
    image_uploads = {name: path for name, path in source.image_files}
    access = source.access()
    groups = _groups(plans, source)
    sizes = [sum(_size(p.path) for p in files) for _, files in groups]
    total = float(sum(sizes)) or 1.0
    done = 0.0
    base = datasets_dir(source)
    folders: list[Path] = []
    updates: list[DatasetUpdate] = []
    for (kind, files), size in zip(groups, sizes, strict=True):
        offset = done

        def report(p: Progress, offset: float = offset, size: float = size) -> None:
            if progress:
                what = f"scoring {names.get(str(Path(p.file).resolve()), p.file) if p.file else ''}".strip()
                progress(min(1.0, (offset + p.fraction * size) / total), f"{what} — {p.rows:,} rows")

        label = None
        if source.runs == "file" and len(files) == 1:
            label = Path(files[0].name).name.split(".")[0]
        elif _grows(source):  # a run's folder keeps its name as files arrive (one file would name it)
            label = Path(files[0].path).resolve().parent.name or None
        group_instances = instances if kind == TRACE else []
        folder = base / _group_identity(source, kind, files, group_instances)
        with _folder_lock(folder):
            # the table the first open reads ready: kept once for a run that grows (else every
            # new step file would rebuild it), at every change for the others
            keep_table = not (_grows(source) and is_dataset(folder))
            score = functools.partial(
                score_to_dataset,
                [f.path for f in files],
                folder,
                # trace rows always go to the verifier; the simple scorer scores the rows with a plain gold answer
                options=BatchOptions(scorer=source.simple_scorer),
                mapping=files[0].mapping,
                runs="one",
                run_label=label,
                instances=group_instances or None,
                image_root=source.image_root,
                uploads=image_uploads or None,
                workers=workers,
                progress=report,
                access=access,
                keep_table=keep_table,
            )
            try:
                update = score()
            except ValueError as exc:
                if not is_dataset(folder):
                    raise LoadError(str(exc)) from None
                shutil.rmtree(folder, ignore_errors=True)  # a folder left by other code: scored anew
                update = score()
        os.utime(folder)  # last used: the least recently used datasets are dropped first
        done += size
        folders.append(folder)
        updates.append(update)
    _drop_old_datasets(base, keep=set(folders))
    if progress:
        progress(1.0, f"scored {sum(u.rows for u in updates):,} rows")
    return Prepared(source, plans, folders, updates, time.perf_counter() - started)


#: Scored datasets kept in the cache folder (the least recently used are removed first).
DISK_DATASETS = 16


def _drop_old_datasets(base: Path, keep: set[Path]) -> None:
    try:
        folders = [p for p in base.iterdir() if p.is_dir() and p not in keep]
        folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in folders[max(0, DISK_DATASETS - len(keep)):]:
        if not _folder_lock(old).locked():
            shutil.rmtree(old, ignore_errors=True)


def open_prepared(prepared: Prepared) -> LoadedRun:
    """The datasets of a prepared source opened as one run (text left on disk)."""
    started = time.perf_counter()
    source, plans = prepared.source, prepared.plans
    try:
        on_disk = text_on_disk(*(read_manifest(folder) for folder in prepared.folders))  # decided once for the run
        snapshots = snapshots_dir(source)
        datasets = [open_dataset(folder, on_disk=on_disk, snapshots=snapshots) for folder in prepared.folders]
    except (OSError, ValueError, KeyError) as exc:
        raise LoadError(f"cannot open the scored dataset of {source.label}: {exc}") from None
    names = _display_names(prepared, datasets[0].manifest if datasets else {"files": []})
    if source.kind == "dataset":
        entries = datasets[0].manifest["files"]
        paths = {names[e["path"]]: e["path"] for e in entries}
        plans = [FilePlan(e["path"], names[e["path"]], SCORED) for e in entries]  # the Overview's file list
        layouts: dict[str, Layout] = {}
        options = datasets[0].manifest["options"]
        resolver = ImageResolver(image_root=options.get("image_root"), access=source.access())
    else:
        paths = {p.name: p.path for p in plans}
        layouts = {p.name: p.layout for p in plans if p.layout is not None}
        try:
            resolver = _resolver(source)
        except ValueError as exc:
            raise LoadError(str(exc)) from None
    table = _finish_table([_concat([d.table for d in datasets])], names)
    starts = np.cumsum([0, *(len(d.table) for d in datasets)])[:-1].astype(np.int64)
    error_frames = [d.errors for d in datasets if len(d.errors)]
    error_table = pd.concat(error_frames, ignore_index=True) if error_frames else errors_frame([])
    if len(error_table):
        error_table["file"] = error_table["file"].map(lambda f: names.get(f, f))
    plan_errors = [
        RowError(p.name, None, None, p.message or "cannot be read", unit="file")
        for p in plans
        if p.kind == UNREADABLE
    ] + [RowError(name, None, None, reason, unit="file") for name, reason in source.notes]
    # unreadable files were also given to the scorer, which reports them; add only the missing ones
    known = set(error_table["file"]) if len(error_table) else set()
    extra = [e for e in plan_errors if e.file not in known]
    if extra:
        error_table = pd.concat([error_table, errors_frame(extra)], ignore_index=True)
    return LoadedRun(
        key=prepared.key,
        source=source,
        table=table,
        errors=error_table,
        plans=plans,
        layouts=layouts,
        paths=paths,
        resolver=resolver,
        seconds=prepared.seconds + time.perf_counter() - started,
        datasets=datasets,
        starts=starts,
        updates=prepared.updates,
    )


def load(source: DataSource, progress: ProgressFn | None = None, *, workers: int | None = None) -> LoadedRun:
    """Score (what changed) and open every file of ``source`` (see the module docstring)."""
    return open_prepared(prepare(source, progress, workers=workers))


def _concat(tables: list[pd.DataFrame]) -> pd.DataFrame:
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
            values = list(dict.fromkeys(v for t in frames if name in t.columns for v in t[name].cat.categories))
            if all(isinstance(v, str) for v in values):
                values = sorted(values)  # as each table's own categories are
            union = pd.Index(values, dtype="str" if all(isinstance(v, str) for v in values) else object)
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


def _resolver(source: DataSource) -> ImageResolver:
    """The image resolver of a source (ValueError when its image folder may not be read)."""
    uploads = {name: path for name, path in source.image_files}
    return ImageResolver(image_root=source.image_root, uploads=uploads, access=source.access())


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


# --------------------------------------------------------------------------- cache

_CACHE: OrderedDict[str, LoadedRun] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_KEY_LOCKS: dict[str, threading.Lock] = {}

CACHE_DIR_ENV = "ROLLOUTSCOPE_CACHE_DIR"


def cache_dir() -> Path | None:
    """Where scored datasets are kept between server restarts ($ROLLOUTSCOPE_CACHE_DIR; 'off' disables)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "none") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rolloutscope"


def snapshots_dir(source: DataSource) -> Path | None:
    """Where opened tables are kept as snapshots (``store.open_dataset(snapshots=)``): under the
    cache folder, never for an upload (small, private to its session) nor with the cache off."""
    folder = cache_dir()
    if folder is None or source.kind == "upload":
        return None
    private_dir(folder)
    return folder / "opened"


def cached(key: str) -> LoadedRun | None:
    """The run for ``key`` from memory (no disk access)."""
    with _CACHE_LOCK:
        run = _CACHE.get(key)
        if run is not None:
            _CACHE.move_to_end(key)
        return run


def remember(run: LoadedRun) -> LoadedRun:
    with _CACHE_LOCK:
        _CACHE[run.key] = run
        _CACHE.move_to_end(run.key)
        while len(_CACHE) > CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    return run


def clear_cache() -> None:
    """Forget the runs held in memory (the datasets on disk stay)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def load_cached(
    source: DataSource, progress: ProgressFn | None = None, *, key: str | None = None, **kwargs: Any
) -> LoadedRun:
    """:func:`load`, opened once per dataset generation: the files are scored into their
    datasets (only what changed), then the run comes from memory when those datasets are the
    ones already open, else they are opened. Concurrent sessions asking for the same source
    wait for one scoring.

    ``key``: a run key handed out earlier: while that run is in memory it is returned without
    looking at the files (a page rerun); else the files are looked at again.
    """
    if key is not None:
        run = cached(key)
        if run is not None:
            return run
    return check(source, progress, **kwargs)[0]


def check(source: DataSource, progress: ProgressFn | None = None, **kwargs: Any) -> tuple[LoadedRun, list[DatasetUpdate]]:
    """Look at the source's files now: score what is new or changed, and give the run as it is
    now (from memory when its datasets did not change) with what this look did."""
    with _CACHE_LOCK:
        lock = _KEY_LOCKS.setdefault(_source_identity(source), threading.Lock())
    identity = _source_identity(source)
    with lock:
        prepared = prepare(source, progress, **kwargs)
        run = cached(prepared.key)
        if run is None:
            previous = _LATEST.get(identity)
            run = (previous is not None and _appended(previous, prepared)) or open_prepared(prepared)
            remember(run)
        superseded = _LATEST.get(identity)
        if superseded is not None and superseded.key != run.key:  # a grown run replaces the one it grew from
            with _CACHE_LOCK:
                _CACHE.pop(superseded.key, None)
        _LATEST[identity] = run
        return run, prepared.updates


#: The run last opened for each source: a grown run is opened by appending its new inputs to it.
_LATEST: dict[str, LoadedRun] = {}


def _appended(previous: LoadedRun, prepared: Prepared) -> LoadedRun | None:
    """``previous`` with the inputs its one dataset gained since (a step file a trainer wrote)
    read and appended -- what opening the whole run again gives, without reading what is open --
    or None when the run changed otherwise (an input changed or went, options, code, names, or
    which text stays on disk) and must be opened again."""
    if len(prepared.folders) != 1 or not previous.datasets:
        return None
    folder = prepared.folders[0]
    if any(d.directory != folder for d in previous.datasets):
        return None
    try:
        manifest = read_manifest(folder)
    except (OSError, ValueError):
        return None
    first = previous.datasets[0].manifest
    old_files = [entry for d in previous.datasets for entry in d.manifest["files"]]
    new_files = manifest["files"]
    same_kind = all(manifest.get(k) == first.get(k) for k in ("options", "code_version"))
    if not same_kind or len(new_files) <= len(old_files) or new_files[: len(old_files)] != old_files:
        return None
    on_disk = text_on_disk(manifest)
    if on_disk != previous.datasets[0].on_disk:
        return None
    names = _display_names(prepared, manifest)
    if any(previous.paths.get(names[e["path"]]) != e["path"] for e in old_files):
        return None  # an open input is shown under another name now (a new folder changed the common one)
    try:
        part = open_dataset(folder, on_disk=on_disk, inputs_from=len(old_files))
    except (OSError, ValueError, KeyError):
        return None
    added = _finish_table([part.table], names)
    table = _concat([previous.table, added])
    table.index = previous.table.index.append(added.index)
    errors = part.errors.copy()
    if len(errors):
        errors["file"] = errors["file"].map(lambda f: names.get(f, f))
    paths = dict(previous.paths)
    paths.update({names[e["path"]]: e["path"] for e in new_files})
    layouts = {**previous.layouts, **{p.name: p.layout for p in prepared.plans if p.layout is not None}}
    return LoadedRun(
        key=prepared.key,
        source=prepared.source,
        table=table,
        errors=pd.concat([previous.errors, errors], ignore_index=True),
        plans=prepared.plans or previous.plans,
        layouts=layouts,
        paths=paths,
        resolver=previous.resolver,
        seconds=prepared.seconds,
        datasets=[*previous.datasets, part],
        starts=np.append(previous.starts, len(previous.table)).astype(np.int64),
        updates=prepared.updates,
    )


def _display_names(prepared: Prepared, manifest: dict) -> dict[str, str]:
    """File path as the datasets name it (rows' ``source_file``, errors' ``file``) -> the name
    shown: a dataset folder's inputs by their short names, a scored source's files (instance
    files too) as classified."""
    if prepared.source.kind == "dataset":
        entries = manifest["files"]
        short = short_names([e["path"] for e in entries]) if entries else {}
        return {e["path"]: short.get(str(Path(e["path"]).resolve()), e["path"]) for e in entries}
    return {p.path: p.name for p in prepared.plans}


def _source_identity(source: DataSource) -> str:
    return json.dumps([source.kind, source.origin or source.label, source.upload_root or ""])
