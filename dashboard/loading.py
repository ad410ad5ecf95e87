"""A data source scored into one table, opened and cached by file content (no Streamlit here).

:func:`load` scores the files a :class:`~dashboard.sources.DataSource` names, as
:func:`~dashboard.sources.plan_files` classified them, with :func:`scoring.runs.score_files`
and returns a :class:`LoadedRun`: the table indexed by a stable ``row_id`` (``<file>:<line>``),
the errors table, what was detected per file, and what is needed to explain a row or open its
image. Each folder's files are scored together so the run label defaults to the folder name, as
on the command line.

Every source is scored into Parquet datasets (:mod:`scoring.datasets`): one per group of files
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

import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import scoring
from dashboard.loaded_run import LoadedRun, concat_tables, finish_table
from dashboard.sources import (
    INSTANCES,
    SIMPLE,
    TRACE,
    UNREADABLE,
    DataSource,
    FilePlan,
    LoadError,
    path_entries,
    plan_files,
    short_names,
)
from scoring.datasets import (
    DatasetUpdate,
    clear_held,
    is_dataset,
    open_dataset,
    read_manifest,
    text_on_disk,
    writing,
    writing_if_free,
)
from scoring.datasets import snapshot as table_snapshot
from scoring.engines import KEEP_TABLE_AUTO, score_to_dataset
from scoring.rewards import SCORER_INFO
from scoring.rollouts import (
    ImageResolver,
    Layout,
    RowError,
    errors_frame,
    private_dir,
)
from scoring.runs import BatchOptions, Progress

log = logging.getLogger("rolloutscope.dashboard")

SCORED = "scored"  # a file of an opened dataset: read when it was scored

#: The scoring package's sources, hashed by :func:`code_version` (a checkout's or an installed wheel's).
SCORING_DIR = Path(scoring.__file__).resolve().parent

#: How many scored runs stay in memory (each can be large).
CACHE_ENTRIES = 3


# --------------------------------------------------------------------------- code version

_CODE_VERSION: str | None = None


def code_version() -> str:
    """A hash of the scoring and loading code (this module, :mod:`dashboard.sources`, which
    classifies the files, and :mod:`dashboard.loaded_run`, which builds the run's table): a cached
    table is reused only by the code that made it."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        digest = hashlib.sha256()
        loaders = [Path(__file__), *(Path(__file__).with_name(n) for n in ("sources.py", "loaded_run.py"))]
        for path in sorted([*SCORING_DIR.rglob("*.py"), *loaders]):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        _CODE_VERSION = digest.hexdigest()[:16]
    return _CODE_VERSION


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
    """A path source that may gain files: a folder or a glob among its paths (not only single files)."""
    return source.kind == "path" and any(
        any(c in entry for c in "*?[") or Path(entry).is_dir() for entry in path_entries(source.origin))


_SCRATCH: Path | None = None


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
    last time (:func:`scoring.engines.score_to_dataset`); a dataset source is taken as it is."""
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
                progress(min(1.0, (offset + p.fraction * size) / total), f"{what} — {p.describe()}")

        label = None
        if source.runs == "file" and len(files) == 1:
            label = Path(files[0].name).name.split(".")[0]
        elif _grows(source):  # a run's folder keeps its name as files arrive (one file would name it)
            label = Path(files[0].path).resolve().parent.name or None
        group_instances = instances if kind == TRACE else []
        folder = base / _group_identity(source, kind, files, group_instances)
        with writing(folder):  # one writer per folder, in this server and across processes
            # the table the first open reads, ready: for a run that grows, only when most of it
            # was scored (else every new step file would rebuild it); at every change for the others
            keep_table = KEEP_TABLE_AUTO if _grows(source) else True
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
                clear_held(folder)  # a folder left by other code: scored anew, still held
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
        with writing_if_free(old) as free:  # one being written (here or elsewhere) is in use, not old
            if free:
                with contextlib.suppress(OSError):
                    clear_held(old)
        with contextlib.suppress(OSError):
            old.rmdir()  # gone when emptied (and let go); kept when in use


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
    ids_folder = _row_ids_folder(snapshots, prepared)
    kept_ids = _kept_row_ids(ids_folder, sum(len(d.table) for d in datasets))
    table = finish_table([concat_tables([d.table for d in datasets])], names, kept_ids)
    if ids_folder is not None and kept_ids is None:
        table_snapshot.keep_later(pd.DataFrame({"row_id": table.index.array}), ids_folder)
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
    """Where opened tables are kept as snapshots (``scoring.datasets.open_dataset(snapshots=)``): under the
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
    added = finish_table([part.table], names)
    table = concat_tables([previous.table, added])
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


def _row_ids_folder(snapshots: Path | None, prepared: Prepared) -> Path | None:
    """Where the row ids of this opening are kept: building a million ``<file>:<line>`` ids
    takes a few hundred milliseconds, mapping them back one. They are what :attr:`Prepared.key`
    decides (the datasets' generations, the names shown, the code); one folder per source."""
    if snapshots is None:
        return None
    return table_snapshot.folder_for(snapshots, f"row ids {_source_identity(prepared.source)}", prepared.key)


def _kept_row_ids(folder: Path | None, rows: int) -> pd.Index | None:
    """The ``rows`` row ids kept in ``folder`` (mapped), or None when there are none; ones
    that are not that (a damaged folder) are removed, to be kept again."""
    frame = table_snapshot.cached(folder) if folder is not None else None
    if frame is None:
        return None
    if list(frame.columns) != ["row_id"] or len(frame) != rows or not pd.api.types.is_string_dtype(frame["row_id"]):
        log.warning("row ids in %s not used: not the %s ids of the run", folder, f"{rows:,}")
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return pd.Index(frame["row_id"].array, name="row_id").astype("str")


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
