"""What a data source is and which files it names (no Streamlit, nothing scored here).

A :class:`DataSource` names rollout files on disk (the bundled sample, uploads
staged into a temporary folder, a local folder/glob, or a scored dataset folder)
plus images and the column mappings the user gave.

Where files may be read from follows :class:`~scoring.rollouts.access.DataAccess`:
a path source only inside ``ROLLOUTSCOPE_DATA_ROOTS`` when it is set, an upload
only its own files (:meth:`DataSource.access`). Uploads are staged per session in
a private folder (:class:`~dashboard.uploads.UploadFolder`), only once accepted, and removed when
the session ends or after a time-to-live.

Files are classified first (:func:`plan_files`): trace rollouts, rows for a
simple scorer (a plain gold answer), trace instance files (joined to response
files that lack ground truth) and files whose layout is not recognised (the app
offers a column mapping for those).

Kept apart from :mod:`dashboard.loading`, which scores, opens and caches a source: what a source
is, what may be read and how each file will be read are decided here from the files' first rows,
so the sidebar can describe a source, refuse a path or ask for a mapping before anything is scored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dashboard import uploads
from scoring.datasets import is_dataset
from scoring.launch import app_root, is_loopback
from scoring.rewards import SCORER_INFO
from scoring.rollouts import (
    AccessDenied,
    ColumnMapping,
    DataAccess,
    Layout,
    LayoutError,
    LimitExceeded,
    Source,
    SourceError,
    default_access,
    detect_layout,
    find_files,
    rollout_name,
)

#: The folder holding app.py, pages/ and sample_data/: a checkout's top level, or an installed
#: wheel's dashboard/app_bundle/ (``rolloutscope app``).
APP_ROOT = app_root(Path(__file__).resolve().parent)
REPO_ROOT = APP_ROOT  # the name older code imports
SAMPLE_DIR = APP_ROOT / "sample_data"


TRACE, SIMPLE, INSTANCES, UNRECOGNISED, UNREADABLE = "trace", "simple", "instances", "unrecognised", "unreadable"
DEFAULT_SIMPLE_SCORER = "numeric_close"
SIMPLE_SCORERS = tuple(SCORER_INFO)


class LoadError(Exception):
    """A data source cannot be loaded at all (one friendly sentence)."""


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class DataSource:
    """What to load: files on disk plus how to read them (hashable, plain data).

    ``kind``: ``sample``, ``upload``, ``path`` or ``dataset`` (a scored dataset folder, opened as
    it is). ``files``: rollout (and instance) files, or the dataset folder. ``names``: display name per file (uploads keep their
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
    origin: str = ""  # a path source: the folder, file or glob as typed (its files change as a run grows)

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


def path_entries(text: str | None) -> list[str]:
    """The paths a path text names: one per line (the command line's several PATHs), ``~`` expanded."""
    return [os.path.expanduser(line.strip()) for line in (text or "").splitlines() if line.strip()]


def _entry_files(pattern: str, access: DataAccess) -> list[Path] | None:
    """The rollout files one file, folder or glob names; None for a scored dataset folder."""
    path = Path(pattern)
    wildcard = any(ch in pattern for ch in "*?[")
    try:
        if wildcard:
            files = find_rollout_files(pattern, access)  # refuses a folder part outside the roots
        elif not access.allows(path):
            raise _outside(pattern, access)
        elif is_dataset(path):
            return None
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
    return files


def source_from_path(
    text: str, *, image_root: str | None = None, access: DataAccess | None = None
) -> DataSource:
    """A local file, folder (searched recursively) or glob pattern -- or several, one per line --
    inside the data roots. A scored dataset folder opens on its own.

    Whether a path outside the roots exists is never told: it gets the same refusal either way.
    """
    access = access or default_access()
    patterns = path_entries(text)
    if not patterns:
        raise LoadError("enter a file, a folder or a glob pattern such as /runs/exp1/**/*.jsonl")
    found: dict[str, Path] = {}
    for pattern in patterns:
        files = _entry_files(pattern, access)
        if files is None:
            if len(patterns) > 1:
                raise LoadError(f"{pattern}: a scored dataset opens on its own, not with other paths")
            return dataset_source(Path(pattern), pattern)
        for file in files:  # a file named twice (a folder and a glob in it) is read once
            found.setdefault(str(file.resolve()), file)
    files = list(found.values())
    root = None
    if image_root and image_root.strip():
        root_path = Path(os.path.expanduser(image_root.strip()))
        if not access.allows(root_path):
            raise _outside(image_root.strip(), access)
        if not root_path.exists():
            raise LoadError(f"image folder or zip not found: {image_root}")
        root = str(root_path.resolve())
    names = short_names(files)
    shown = patterns[0] if len(patterns) == 1 else f"{patterns[0]} and {len(patterns) - 1} more"
    label = shown if len(shown) <= 60 else "…" + shown[-59:]
    return DataSource(
        kind="path",
        label=label,
        files=tuple(str(p.resolve()) for p in files),
        names=tuple(names[str(p.resolve())] for p in files),
        image_root=root,
        origin="\n".join(patterns),
    )


def dataset_source(folder: str | os.PathLike, typed: str = "") -> DataSource:
    """A scored dataset folder (``rolloutscope score -o DIR/``): opened without rescoring."""
    text = typed or str(folder)
    label = text if len(text) <= 60 else "…" + text[-59:]
    return DataSource(kind="dataset", label=label, files=(str(Path(folder).resolve()),), origin=text)


def followed(source: DataSource) -> DataSource:
    """The source as its origin reads now (a glob or folder may match new files); a source
    without an origin (sample, upload, dataset) is returned as it is."""
    if source.kind != "path" or not source.origin:
        return source
    fresh = source_from_path(source.origin, image_root=source.image_root)
    return replace(fresh, mappings=source.mappings, simple_scorer=source.simple_scorer, runs=source.runs)


# --------------------------------------------------------------------------- the path box

#: Why the path box is off on a server others can reach.
PATH_BOX_OFF = (
    "Reading server folders is off: the app listens beyond this machine and no data roots are set. "
    "Upload files instead, or set ROLLOUTSCOPE_DATA_ROOTS to the folders the team may read."
)


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
            kind = SIMPLE  # each row is still scored by what it holds (scoring.runs)
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
