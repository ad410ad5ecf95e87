"""Data sources -> one scored table, cached by file content (no Streamlit here).

A :class:`DataSource` names rollout files on disk (the bundled sample, uploads
staged into a temporary folder, or a local folder/glob) plus images and the
column mappings the user gave. :func:`load` reads and scores them with
:func:`scoring.batch.score_files` and returns a :class:`LoadedRun`: the table
indexed by a stable ``row_id`` (``<file>:<line>``), the errors table, what was
detected per file, and what is needed to explain a row or open its image.

Where files may be read from follows :class:`~scoring.rollouts.access.DataAccess`:
a path source only inside ``ROLLOUTSCOPE_DATA_ROOTS`` when it is set, an upload
only its own files (:meth:`DataSource.access`). Uploads are staged per session in
a private folder (:class:`UploadFolder`), only once accepted, and removed when
the session ends or after a time-to-live.

Files are classified first (:func:`plan_files`): trace rollouts, rows for a
simple scorer (a plain gold answer), trace instance files (joined to response
files that lack ground truth) and files whose layout is not recognised (the app
offers a column mapping for those). Each folder's files are scored together so
the run label defaults to the folder name, as on the command line.

:func:`load_cached` keeps the last few runs in memory keyed by
:func:`content_key` -- a hash of the files' bytes and every loading option --
so switching pages or re-opening the same files never rescores; the disk cache
keeps them across restarts as Parquet tables and a JSON manifest in a folder
only the user can enter (no pickle: a cache file is data, never code).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoring.batch import BatchOptions, Progress, ScoredRun, explain_row, score_files
from scoring.rewards import SCORER_INFO
from scoring.rollouts import (
    ColumnMapping,
    ImageProblem,
    ImageResolver,
    Layout,
    LayoutError,
    RowError,
    Source,
    SourceError,
    detect_layout,
    errors_frame,
    open_image,
)
from scoring.rollouts.access import (
    AccessDenied,
    DataAccess,
    LimitExceeded,
    default_access,
    find_files,
    private_dir,
    rollout_name,
)
from scoring.rollouts.fields import MISSING, get_path
from scoring.trace import TraceEvaluation

from . import uploads

log = logging.getLogger("rolloutscope.dashboard")

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "sample_data"


TRACE, SIMPLE, INSTANCES, UNRECOGNISED, UNREADABLE = "trace", "simple", "instances", "unrecognised", "unreadable"
DEFAULT_SIMPLE_SCORER = "numeric_close"
SIMPLE_SCORERS = tuple(SCORER_INFO)

#: How many scored runs stay in memory (each can be large).
CACHE_ENTRIES = 3


#: Images are decoded for display at most this many pixels on their long side: wider than
#: any column of the app, and a 36-megapixel photo then costs a few MB instead of 150.
DISPLAY_MAX_SIDE = 1600

class LoadError(Exception):
    """A data source cannot be loaded at all (one friendly sentence)."""


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class DataSource:
    """What to load: files on disk plus how to read them (hashable, plain data).

    ``kind``: ``sample``, ``upload`` or ``path``. ``files``: rollout (and
    instance) files. ``names``: display name per file (uploads keep their
    original names). ``image_root``: a folder or zip of images. ``image_files``:
    ``(name, path)`` of uploaded images. ``mappings``: ``(shape_key,
    ColumnMapping JSON)`` pairs applied to files of that shape. ``simple_scorer``
    scores files that carry a plain gold answer instead of trace ground truth.
    ``upload_root``: the session folder an upload was staged in (its only readable place).
    ``notes``: ``(file, reason)`` of uploaded files or bundle members that were refused.
    """

    kind: str
    label: str
    files: tuple[str, ...]
    names: tuple[str, ...] = ()
    image_root: str | None = None
    image_files: tuple[tuple[str, str], ...] = ()
    mappings: tuple[tuple[str, str], ...] = ()
    simple_scorer: str = DEFAULT_SIMPLE_SCORER
    runs: str = "folder"  # "folder": one run per folder unless rows name theirs; "file": one run per file
    upload_root: str | None = None
    notes: tuple[tuple[str, str], ...] = ()  # (file, reason): uploads or bundle members refused

    def access(self) -> DataAccess:
        """Where this source's files, images and instances may be read from (and the limits)."""
        if self.kind == "upload" and self.upload_root:
            return DataAccess.upload(self.upload_root)
        access = default_access()
        return access.with_root(SAMPLE_DIR) if self.kind == "sample" else access

    def with_mapping(self, shape_key: str, mapping: ColumnMapping | None) -> DataSource:
        kept = tuple((k, m) for k, m in self.mappings if k != shape_key)
        if mapping:
            kept = (*kept, (shape_key, mapping.to_json()))
        return replace(self, mappings=tuple(sorted(kept)))

    def with_options(self, **changes: Any) -> DataSource:
        return replace(self, **changes)

    def display_names(self) -> dict[str, str]:
        """Absolute path -> the short name shown in tables."""
        if self.names and len(self.names) == len(self.files):
            return {str(Path(f).resolve()): n for f, n in zip(self.files, self.names, strict=True)}
        return short_names(self.files)

    def mapping_for(self, shape_key: str) -> ColumnMapping | None:
        for key, text in self.mappings:
            if key == shape_key:
                return ColumnMapping.from_json(text)
        return None


def short_names(files: Sequence[str | os.PathLike]) -> dict[str, str]:
    """Absolute path -> path relative to the files' common folder (posix separators)."""
    resolved = [Path(f).resolve() for f in files]
    if not resolved:
        return {}
    if len(resolved) == 1:
        return {str(resolved[0]): resolved[0].name}
    common = Path(os.path.commonpath([str(p.parent) for p in resolved]))
    return {str(p): p.relative_to(common).as_posix() for p in resolved}


def find_rollout_files(folder: str | os.PathLike, access: DataAccess | None = None) -> list[Path]:
    """Rollout files under ``folder`` (recursively, symlinked folders not followed), sorted;
    images and scripts skipped."""
    return find_files(folder, access or DataAccess(), keep=rollout_name)


def sample_source() -> DataSource:
    """The bundled sample data (``sample_data/``)."""
    files = find_rollout_files(SAMPLE_DIR) if SAMPLE_DIR.is_dir() else []
    if not files:
        raise LoadError(
            f"the sample data is missing: no rollout files in {SAMPLE_DIR} "
            "(generate it with: python sample_data/make_sample_data.py)"
        )
    names = short_names(files)
    return DataSource(
        kind="sample",
        label="sample data",
        files=tuple(str(p) for p in files),
        names=tuple(names[str(p.resolve())] for p in files),
    )


def _outside(text: str, access: DataAccess) -> LoadError:
    return LoadError(f"{text}: {access.refusal()} (allowed: {access.describe_roots()})")


def source_from_path(
    text: str, *, image_root: str | None = None, access: DataAccess | None = None
) -> DataSource:
    """A local file, folder (searched recursively) or glob pattern, inside the data roots.

    Whether a path outside the roots exists is never told: it gets the same refusal either way.
    """
    access = access or default_access()
    pattern = os.path.expanduser((text or "").strip())
    if not pattern:
        raise LoadError("enter a file, a folder or a glob pattern such as /runs/exp1/**/*.jsonl")
    path = Path(pattern)
    wildcard = any(ch in pattern for ch in "*?[")
    try:
        if wildcard:
            files = find_rollout_files(pattern, access)  # refuses a folder part outside the roots
        elif not access.allows(path):
            raise _outside(pattern, access)
        elif path.is_dir():
            files = find_rollout_files(path, access)
        elif path.is_file():
            files = [path]
        else:
            raise LoadError(f"not found: {pattern}")
    except AccessDenied:
        raise _outside(pattern, access) from None
    except LimitExceeded as exc:
        raise LoadError(str(exc)) from None
    if not files:
        if wildcard:
            raise LoadError(f"no rollout files match {pattern}")
        raise LoadError(f"no rollout files (.jsonl, .json, .parquet, .csv, .gz) in the folder {pattern}")
    root = None
    if image_root and image_root.strip():
        root_path = Path(os.path.expanduser(image_root.strip()))
        if not access.allows(root_path):
            raise _outside(image_root.strip(), access)
        if not root_path.exists():
            raise LoadError(f"image folder or zip not found: {image_root}")
        root = str(root_path.resolve())
    names = short_names(files)
    label = pattern if len(pattern) <= 60 else "…" + pattern[-59:]
    return DataSource(
        kind="path",
        label=label,
        files=tuple(str(p.resolve()) for p in files),
        names=tuple(names[str(p.resolve())] for p in files),
        image_root=root,
    )


# --------------------------------------------------------------------------- the path box

#: Why the path box is off on a server others can reach.
PATH_BOX_OFF = (
    "Reading server folders is off: the app listens beyond this machine and no data roots are set. "
    "Upload files instead, or set ROLLOUTSCOPE_DATA_ROOTS to the folders the team may read."
)


def is_loopback(address: str | None) -> bool:
    """True when a server bound to ``address`` is reachable only from this machine."""
    text = (address or "").strip().strip("[]")
    if not text:
        return False  # Streamlit listens on every interface when no address is set
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to a public interface


def path_box_policy(server_address: str | None, access: DataAccess | None = None) -> tuple[bool, str]:
    """``(path box on, what to tell the user)``: roots set -> on, inside them; listening only on
    loopback -> on, anywhere; else off (uploads only), saying why."""
    access = access or default_access()
    if access.restricted:
        return True, f"Folders you may read: {access.describe_roots()}"
    if is_loopback(server_address):
        return True, ""
    return False, PATH_BOX_OFF


# --------------------------------------------------------------------------- uploads


def stage_uploads(items: Iterable[tuple[str, bytes]], root: str | os.PathLike | None = None) -> DataSource:
    """Uploaded ``(name, bytes)`` checked, staged under ``root`` (a private session folder; see
    :func:`dashboard.uploads.stage`) and described as a source whose rows may refer only to the
    files uploaded with them (:meth:`DataSource.access`)."""
    try:
        staged = uploads.stage(items, root)
    except uploads.UploadRefused as exc:
        raise LoadError(str(exc)) from None
    label = staged.names[0] if len(staged.names) == 1 else f"{len(staged.names)} uploaded files"
    return DataSource(
        kind="upload",
        label=label,
        files=tuple(staged.files),
        names=tuple(staged.names),
        image_root=staged.archive,
        image_files=tuple(staged.images),
        upload_root=str(staged.root),
        notes=tuple(staged.notes),
    )


# --------------------------------------------------------------------------- content key

_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGEST_LOCK = threading.Lock()


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, memoised by (path, size, mtime) so it is read once per version."""
    p = Path(path)
    try:
        stat = p.stat()
    except OSError:
        return "missing:" + str(p)
    key = (str(p.resolve()), stat.st_size, stat.st_mtime_ns)
    with _DIGEST_LOCK:
        hit = _DIGESTS.get(key)
    if hit is not None:
        return hit
    digest = hashlib.sha256()
    with open(p, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    with _DIGEST_LOCK:
        if len(_DIGESTS) > 10_000:
            _DIGESTS.clear()
        _DIGESTS[key] = value
    return value


_CODE_VERSION: str | None = None


def code_version() -> str:
    """A hash of the scoring and loading code: a cached table is reused only by the code that made it."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        digest = hashlib.sha256()
        for path in sorted([*(REPO_ROOT / "scoring").rglob("*.py"), Path(__file__)]):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        _CODE_VERSION = digest.hexdigest()[:16]
    return _CODE_VERSION


def content_key(source: DataSource) -> str:
    """A key that changes exactly when the scored table would: file bytes, loading options, code.

    Locations count too (images resolve relative to their rollout file, and a run remembers
    where its files are); uploads are staged content-addressed, so the same bytes share a key.
    """
    parts: list[Any] = [
        code_version(),
        [(str(Path(f).resolve()), file_digest(f)) for f in source.files],
        list(source.names),
        [(n, str(Path(p).resolve()), file_digest(p)) for n, p in source.image_files],
        source.image_root and (source.image_root, file_digest(source.image_root) if Path(source.image_root).is_file() else ""),
        list(source.mappings),
        source.simple_scorer,
        source.runs,
    ]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


# --------------------------------------------------------------------------- classification


@dataclass(frozen=True)
class FilePlan:
    """How one file will be read: its kind, the mapping used, and why when it cannot be."""

    path: str
    name: str
    kind: str
    shape_key: str = ""
    columns: tuple[str, ...] = ()
    sample: tuple[dict, ...] = ()
    mapping: ColumnMapping | None = None
    message: str = ""
    layout: Layout | None = None


def plan_file(path: str, name: str, source: DataSource, *, joinable: bool = False) -> FilePlan:
    """Classify one file by reading its first rows (never raises).

    Trace ground truth in the rows -> trace; an instances file -> instances; a
    plain gold answer -> simple; else, when ``joinable`` (an instances file is
    among the inputs), rows joined to the instances -> trace; else unrecognised.
    """
    try:
        src = Source(path, display=name, access=source.access())
        sample = src.sample(32)
    except SourceError as exc:
        return FilePlan(path, name, UNREADABLE, message=exc.error.reason)
    if not sample:
        return FilePlan(path, name, UNREADABLE, message="no line could be read as a record")
    columns = tuple(dict.fromkeys(str(k) for r in sample for k in r))
    shape = ColumnMapping.shape_key(columns)
    mapping = source.mapping_for(shape)
    common = {"shape_key": shape, "columns": columns, "sample": tuple(sample[:5]), "mapping": mapping}
    attempts = [(TRACE, {}), (SIMPLE, {"simple": True})]
    if joinable:
        attempts.append((TRACE, {"joined": True}))
    first_error = ""
    for kind, flags in attempts:
        try:
            layout = detect_layout(sample, path=path, mapping=mapping, **flags)
        except (LayoutError, ValueError) as exc:  # ValueError: a stored mapping that no longer fits
            first_error = first_error or str(exc)
            if kind == TRACE and not flags and str(exc).startswith("this looks like an instances file"):
                return FilePlan(path, name, INSTANCES, message=str(exc), **common)
            continue
        if layout.plain_gold and not layout.has_trace_gt:
            kind = SIMPLE  # each row is still scored by what it holds (scoring.batch)
        return FilePlan(path, name, kind, layout=layout, **common)
    return FilePlan(path, name, UNRECOGNISED, message=_plain(first_error), **common)


def _plain(message: str) -> str:
    """Command-line hints (``--map``...) read as app hints."""
    return (
        message.replace("map one with --map response=COLUMN", "map the response column below")
        .replace("with --map gold=COLUMN", "in the column mapping")
        .replace("join an instances file with --instances", "add the instances file")
        .replace("choose a simple scorer with --scorer exact_match|contains|last_number|numeric_close",
                 "pick a simple scorer in the sidebar")
        .replace("choose a simple scorer with --scorer", "pick a simple scorer in the sidebar")
        .replace("--map ", "the column mapping ")
        .replace("--instances", "an instances file")
    )


def plan_files(source: DataSource) -> list[FilePlan]:
    """Classify every file of a source; instance files make the others joinable."""
    names = source.display_names()
    plans = [plan_file(f, names.get(str(Path(f).resolve()), Path(f).name), source) for f in source.files]
    if any(p.kind == INSTANCES for p in plans):
        plans = [plan_file(p.path, p.name, source, joinable=True) if p.kind == UNRECOGNISED else p for p in plans]
    return plans


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
    _explained: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_explained"] = OrderedDict()
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

    def row(self, row_id: Any) -> pd.Series:
        return self.table.loc[row_id]

    def explain(self, row_id: Any, **overrides: Any) -> TraceEvaluation:
        """Re-run the verifier on one row (cached). ValueError for simple-scorer rows."""
        key = (row_id, tuple(sorted(overrides.items())))
        with self._lock:
            hit = self._explained.get(key)
            if hit is not None:
                self._explained.move_to_end(key)
                return hit
        evaluation = explain_row(self.table, row_id, **overrides)
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
        row = self.table.loc[row_id]
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
    """``<file>:<line>``, with ``#k`` for the k-th extra row read from the same line."""
    base = table["source_file"].astype(str) + ":" + table["source_line"].astype("string").fillna("?").astype(str)
    dup = base.groupby(base, sort=False).cumcount().to_numpy()
    ids = base.to_numpy(dtype=object)
    if dup.any():
        ids = np.where(dup > 0, ids + "#" + dup.astype(str), ids)
    return pd.Index(ids, name="row_id", dtype="str")


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
        table["source_file"] = table["source_file"].map(lambda f: names.get(f, f)).astype("str")
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


def load(source: DataSource, progress: ProgressFn | None = None, *, workers: int | None = None) -> LoadedRun:
    """Read, classify and score every file of ``source`` (see the module docstring)."""
    started = time.perf_counter()
    if source.simple_scorer not in SCORER_INFO:
        raise LoadError(f"unknown simple scorer {source.simple_scorer!r}; choose one of {', '.join(SCORER_INFO)}")
    if progress:
        progress(0.0, "reading the files")
    plans = plan_files(source)
    names = {str(Path(p.path).resolve()): p.name for p in plans}
    paths = {p.name: p.path for p in plans}
    instances = [p.path for p in plans if p.kind == INSTANCES]
    uploads = {name: path for name, path in source.image_files}
    access = source.access()
    try:
        resolver = _resolver(source)
    except ValueError as exc:
        raise LoadError(str(exc)) from None
    groups = _groups(plans, source)
    sizes = [sum(_size(p.path) for p in files) for _, files in groups]
    total = float(sum(sizes)) or 1.0
    done = 0.0
    tables: list[pd.DataFrame] = []
    errors: list[pd.DataFrame] = []
    layouts: dict[str, Layout] = {}
    for (kind, files), size in zip(groups, sizes, strict=True):
        # trace rows always go to the verifier; the simple scorer scores the rows with a plain gold answer
        options = BatchOptions(scorer=source.simple_scorer)
        offset = done

        def report(p: Progress, offset: float = offset, size: float = size) -> None:
            if progress:
                what = f"scoring {names.get(str(Path(p.file).resolve()), p.file) if p.file else ''}".strip()
                progress(min(1.0, (offset + p.fraction * size) / total), f"{what} — {p.rows:,} rows")

        mapping = files[0].mapping
        label = None
        if source.runs == "file" and len(files) == 1:
            label = Path(files[0].name).name.split(".")[0]
        scored: ScoredRun = score_files(
            [f.path for f in files],
            options=options,
            mapping=mapping,
            runs="one",
            run_label=label,
            instances=(instances or None) if kind == TRACE else None,
            image_root=source.image_root,
            uploads=uploads or None,
            workers=workers,
            progress=report,
            access=access,
        )
        done += size
        tables.append(scored.table)
        errors.append(scored.errors)
        for display, layout in scored.layouts.items():
            layouts[names.get(str(Path(display).resolve()), display)] = layout
    plan_errors = [
        RowError(p.name, None, None, p.message or "cannot be read", unit="file")
        for p in plans
        if p.kind == UNREADABLE
    ] + [RowError(name, None, None, reason, unit="file") for name, reason in source.notes]
    table = _finish_table(tables, names)
    error_frames = [e for e in errors if len(e)]
    error_table = pd.concat(error_frames, ignore_index=True) if error_frames else errors_frame([])
    if len(error_table):
        error_table["file"] = error_table["file"].map(lambda f: names.get(str(Path(f).resolve()), f))
    # unreadable files were also given to score_files, which reports them; add only the missing ones
    known = set(error_table["file"]) if len(error_table) else set()
    extra = [e for e in plan_errors if e.file not in known]
    if extra:
        error_table = pd.concat([error_table, errors_frame(extra)], ignore_index=True)
    if progress:
        progress(1.0, f"scored {len(table):,} rows")
    return LoadedRun(
        key=content_key(source),
        source=source,
        table=table,
        errors=error_table,
        plans=plans,
        layouts=layouts,
        paths=paths,
        resolver=resolver,
        seconds=time.perf_counter() - started,
    )


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
#: Scored runs kept on disk (the oldest are removed first).
DISK_CACHE_ENTRIES = 8


def cache_dir() -> Path | None:
    """Where scored runs are kept between server restarts ($ROLLOUTSCOPE_CACHE_DIR; 'off' disables)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "none") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rolloutscope"


#: Version of the cache folder layout; a folder of another version is rescored.
_DISK_FORMAT = 1


def _disk_path(key: str) -> Path | None:
    folder = cache_dir()
    return folder / f"run-{key}" if folder is not None else None


def _plain_data(value: Any) -> Any:
    """JSON for the manifest: tuples, frozensets, bytes, mappings, layouts and plans tagged so
    :func:`_from_plain_data` rebuilds them exactly (data only: nothing in it can run code)."""
    if isinstance(value, ColumnMapping):
        return {"__mapping__": value.to_json()}
    if isinstance(value, (Layout, FilePlan)):
        kind = "__layout__" if isinstance(value, Layout) else "__plan__"
        return {kind: {f.name: _plain_data(getattr(value, f.name)) for f in fields(value)}}
    if isinstance(value, tuple):
        return {"__tuple__": [_plain_data(v) for v in value]}
    if isinstance(value, (frozenset, set)):
        return {"__frozenset__": sorted((_plain_data(v) for v in value), key=str)}
    if isinstance(value, (bytes, bytearray)):
        import base64

        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {"__dict__": [[_plain_data(k), _plain_data(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_plain_data(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)  # dates and the like in a sample row: shown, never computed with


def _from_plain_data(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_plain_data(v) for v in value]
    if not isinstance(value, dict):
        return value
    [(tag, inner)] = value.items()
    if tag == "__mapping__":
        return ColumnMapping.from_json(inner)
    if tag == "__layout__":
        return Layout(**{k: _from_plain_data(v) for k, v in inner.items()})
    if tag == "__plan__":
        return FilePlan(**{k: _from_plain_data(v) for k, v in inner.items()})
    if tag == "__tuple__":
        return tuple(_from_plain_data(v) for v in inner)
    if tag == "__frozenset__":
        return frozenset(_from_plain_data(v) for v in inner)
    if tag == "__bytes__":
        import base64

        return base64.b64decode(inner)
    if tag == "__dict__":
        return {_from_plain_data(k): _from_plain_data(v) for k, v in inner}
    raise ValueError(f"unknown tag {tag!r} in the cache manifest")


def _missing_marker(column: pd.Series) -> str:
    """How an object column writes a missing value (``none`` or ``nan``), to restore it as it was."""
    missing = column[column.isna()]
    return "none" if len(missing) and missing.iloc[0] is None else "nan"


def _read_disk(key: str) -> LoadedRun | None:
    """The run cached under ``key`` (Parquet tables + JSON manifest), or None to rescore."""
    path = _disk_path(key)
    if path is None or not (path / "manifest.json").is_file():
        return None
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("format") != _DISK_FORMAT or manifest.get("key") != key:
            return None
        table = pd.read_parquet(path / "table.parquet")
        for column, missing in manifest["object_columns"].items():  # Arrow reads text as pandas strings
            values = table[column].astype(object)
            table[column] = values.where(values.notna(), None if missing == "none" else np.nan)
        for column, categories_dtype in manifest["empty_categoricals"].items():  # Arrow keeps no type
            empty = pd.CategoricalDtype(pd.Index([], dtype=categories_dtype))
            table[column] = pd.Series(pd.Categorical([None] * len(table), dtype=empty), index=table.index)
        table.attrs = manifest["attrs"]
        errors = pd.read_parquet(path / "errors.parquet")
        source = DataSource(**_from_plain_data(manifest["source"]))
        run = LoadedRun(
            key=key,
            source=source,
            table=table,
            errors=errors,
            plans=_from_plain_data(manifest["plans"]),
            layouts=_from_plain_data(manifest["layouts"]),
            paths=manifest["paths"],
            resolver=_resolver(source),
            seconds=float(manifest["seconds"]),
        )
    except Exception:  # a stale or broken cache folder is simply rescored
        log.warning("ignoring unreadable cache folder %s", path, exc_info=True)
        return None
    os.utime(path)
    return run


def _write_disk(run: LoadedRun) -> None:
    path = _disk_path(run.key)
    if path is None:
        return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        private_dir(path.parent)
        tmp.mkdir(mode=0o700)
        run.table.to_parquet(tmp / "table.parquet")
        run.errors.to_parquet(tmp / "errors.parquet", index=False)
        manifest = {
            "format": _DISK_FORMAT,
            "key": run.key,
            "seconds": run.seconds,
            "source": _plain_data({f.name: getattr(run.source, f.name) for f in fields(run.source)}),
            "plans": _plain_data(run.plans),
            "layouts": _plain_data(run.layouts),
            "paths": run.paths,
            "object_columns": {c: _missing_marker(run.table[c]) for c in run.table.columns if run.table[c].dtype == object},
            "empty_categoricals": {
                c: str(t.categories.dtype)
                for c, t in run.table.dtypes.items()
                if isinstance(t, pd.CategoricalDtype) and not len(t.categories)
            },
            "attrs": run.table.attrs,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, default=str), encoding="utf-8")
        if path.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # another process wrote the same run first
        else:
            os.replace(tmp, path)
        for legacy in path.parent.glob("run-*.pkl"):  # pickled runs of older versions: never read
            legacy.unlink(missing_ok=True)
        kept = [p for p in path.parent.glob("run-*") if p.is_dir() and not p.name.endswith(".part")]
        for old in sorted(kept, key=lambda p: p.stat().st_mtime, reverse=True)[DISK_CACHE_ENTRIES:]:
            shutil.rmtree(old, ignore_errors=True)
    except (OSError, ValueError, TypeError, AccessDenied):
        shutil.rmtree(tmp, ignore_errors=True)
        log.warning("could not write the cache folder %s", path, exc_info=True)


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
    """Forget the runs held in memory (the disk cache stays)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def load_cached(
    source: DataSource, progress: ProgressFn | None = None, *, key: str | None = None, **kwargs: Any
) -> LoadedRun:
    """:func:`load`, once per content key: from memory, else from the disk cache, else scored
    (and written to both; an upload's run only to memory). Concurrent sessions asking for the same key wait for one scoring.

    ``key``: a content key computed earlier for this source; when no run is kept under it
    any more, the files' current key is used instead.
    """
    if key is not None:
        run = cached(key) or _read_disk(key)
        if run is not None:
            return remember(run)
    key = content_key(source)
    run = cached(key)
    if run is not None:
        return run
    with _CACHE_LOCK:
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        run = cached(key)
        if run is not None:
            return run
        run = _read_disk(key)
        if run is None:
            run = load(source, progress, **kwargs)
            if source.kind != "upload":  # an upload lives only as long as its session: no copy on disk
                _write_disk(run)
        return remember(run)
