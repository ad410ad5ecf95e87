"""The scored run on disk: a Parquet dataset with a manifest of its inputs.

A run of millions of rollouts does not fit in memory as one table with its text, and
rescoring it whenever a step file appears wastes minutes. :func:`score_to_dataset` writes
what :func:`scoring.batch.score_files` gives as a folder::

    DIR/manifest.json                    format, scoring options, code version, one entry per input
    DIR/parts/<gen>-<n>.parquet          the table rows of input n: every column but the text
    DIR/parts/<gen>-<n>.text.parquet     their text columns, in small row groups
    DIR/parts/<gen>-<n>.errors.parquet   its errors (file, line, field, reason, severity, unit)
    DIR/parts/<gen>-run.errors.parquet   errors not about one input (instance files)
    DIR/table/<digest>/                  the table open_dataset holds, ready (write_table)

and, when the folder already holds a dataset scored with the same options and code, scores
only the inputs that are new or changed (size and mtime unchanged: trusted; else the content
digest decides) and drops the parts of removed inputs. Parts are written under new names and
the manifest is replaced atomically, so a crash leaves the previous dataset whole.

:func:`open_dataset` reads the columns that filters, histograms, re-weighting, groups and
compare need -- numbers, flags, categories; decoded by :mod:`scoring.dataset_table` -- and
leaves the text (prompt, response, scorer inputs, recovered text...) on disk -- from the table
the dataset carries when it is the one of its manifest and code (:func:`write_table`: read in
a fraction of the decoding's time), else from the parts; :func:`row_text`
reads it for the rows being shown, one row group per row. :func:`rows_with_text` joins both,
so ``batch.explain_row`` works on a row of an opened dataset as on the in-memory table.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import batch, dataset_table, dataset_text, table_snapshot
from .compact_dtypes import (
    INTEGER_WIDTHS,
    SPARSE_MAX_SHARE,
    compact_table,
    held_bytes,
    widened,
)
from .dataset_parts import (
    PartWriter,
    _write_atomically,
    _write_parquet,
)
from .dataset_table import PARTS, RESIDENT_TEXT_COLUMNS, STORED_TEXT_COLUMNS
from .dataset_text import ScoredDataset, read_columns, rows_with_text, search_text
from .rollouts.access import DataAccess, default_access, looks_like_zip
from .rollouts.errors import ERROR_COLUMNS, errors_frame
from .rollouts.layouts import ColumnMapping

FORMAT = "rolloutscope-scored-dataset"
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
#: The dataset folder's subfolder holding the table :func:`open_dataset` gives, ready to read
#: (:func:`write_table`).
TABLE = "table"
#: A repeating text column is held in memory only when its values repeat: on average at least
#: this many rows of an input share a value (GRPO: the rollouts of one prompt). Else (each row
#: its own ground truth) its categories would cost what the text does, and it stays on disk too.
RESIDENT_MIN_REPEATS = 4
#: ...unless it has at most this many distinct values in all: then it costs little either way,
#: and a small run keeps every column in its tables.
RESIDENT_ALWAYS_MAX = 10_000
#: Inputs scored per call of the batch engine, so memory stays bounded by a group's table.
GROUP_ROWS = 250_000
_HASH_BLOCK = 1 << 20
log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- versions and digests


def code_version() -> str:
    """A digest of the scoring package's source: a dataset scored by other code is rescored."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pxd")]):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- what a call reports


@dataclass
class DatasetUpdate:
    """What :func:`score_to_dataset` did: the inputs per fate, and why it rescored everything
    (``full_rescore``: None when the existing dataset was reused)."""

    directory: Path
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    full_rescore: str | None = None
    rows: int = 0
    rows_scored: int = 0
    errors: int = 0
    warnings: int = 0
    seconds: float = 0.0

    @property
    def rescored(self) -> list[str]:
        return [*self.new, *self.changed]

    def describe(self) -> str:
        """One line for a person: what was rescored and why."""
        head = f"{self.full_rescore}; " if self.full_rescore else ""
        return (
            f"{head}{len(self.new)} new, {len(self.changed)} changed, {len(self.removed)} removed, "
            f"{len(self.unchanged)} unchanged file(s); {self.rows_scored:,} rows scored, "
            f"{self.rows:,} rows in {self.directory}"
        )


# --------------------------------------------------------------------------- writing


def _options_record(
    options: batch.BatchOptions,
    mapping: ColumnMapping | None,
    runs: str | Mapping[str, str],
    run_label: str | None,
    instances: Sequence[Path],
    join: str,
    image_root: str | os.PathLike | None,
    uploads: Mapping[str, str] | None = None,
) -> dict:
    """Everything besides the input files that decides the table: a change rescored everything."""
    record = {
        "scoring": asdict(options),
        "mapping": mapping.to_dict() if mapping is not None else None,
        "runs": dict(runs) if isinstance(runs, Mapping) else runs,
        "run_label": run_label,
        "instances": [{"path": str(p), "sha256": file_digest(p)} for p in instances],
        "join": join,
        "image_root": None if image_root is None else str(image_root),
    }
    if uploads:  # uploaded images, by name: where an upload's image references resolve
        record["uploads"] = sorted([str(name), str(path)] for name, path in uploads.items())
    return record


def read_manifest(directory: str | os.PathLike) -> dict:
    """The manifest of a dataset folder (FileNotFoundError / ValueError when there is none)."""
    path = Path(directory) / MANIFEST
    with open(path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a rolloutscope scored dataset manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: dataset format version {manifest.get('format_version')!r}, expected {FORMAT_VERSION}"
        )
    return manifest


def is_dataset(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a dataset manifest."""
    return (Path(path) / MANIFEST).is_file()


def _write_manifest(directory: Path, manifest: dict) -> None:
    text = json.dumps(manifest, indent=1, ensure_ascii=False)
    _write_atomically(directory / MANIFEST, lambda target: target.write_text(text, encoding="utf-8"))


def _stat(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


#: How :func:`score_to_dataset` scores: in this process and its worker processes, or on Ray
#: (:mod:`scoring.ray_engine`, installed with the ``ray`` extra).
ENGINES = ("local", "ray")


def score_to_dataset(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    directory: str | os.PathLike,
    *,
    options: batch.BatchOptions | None = None,
    mapping: ColumnMapping | None = None,
    runs: str | Mapping[str, str] = "one",
    run_label: str | None = None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    join: str = "auto",
    image_root: str | os.PathLike | None = None,
    uploads: Mapping[str, str] | None = None,
    workers: int | None = None,
    chunk_rows: int | None = None,
    progress: Callable[[batch.Progress], None] | None = None,
    access: DataAccess | None = None,
    engine: str = "local",
    keep_table: bool | str = True,
    **option_kwargs: Any,
) -> DatasetUpdate:
    """Score rollout files into the dataset folder ``directory`` (created if missing), scoring
    only what changed since it was last written with the same options and code.

    Arguments as for :func:`scoring.batch.score_files` (``uploads``: uploaded image name ->
    staged file; ``access``: where inputs may be read, the data roots by default). The dataset
    opened afterwards equals
    ``score_files`` on the same inputs (rows in input order, then line; errors per input).
    ``engine="ray"`` scores on a Ray cluster (:func:`scoring.ray_engine.score_to_dataset_on_ray`:
    inputs may also be ``s3://...`` URIs; ``workers`` is the CPU count of a Ray started here)
    and writes the same dataset. ``keep_table``: then write the table :func:`open_dataset` gives
    into the folder (:func:`write_table`), so its first open reads it instead of decoding the
    parts; :data:`KEEP_TABLE_AUTO`: only when this update scored at least half the rows (what a
    growing run wants: not rebuilt for each new step file).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    options = replace(options or batch.BatchOptions(), **option_kwargs).validated()
    if engine == "ray":
        from .ray_engine import score_to_dataset_on_ray

        update = score_to_dataset_on_ray(
            paths, directory, options=options, mapping=mapping, runs=runs, run_label=run_label,
            instances=instances, join=join, image_root=image_root, workers=workers,
            chunk_rows=chunk_rows, progress=progress,
        )  # fmt: skip
        return _with_table(update, keep_table)
    started = time.perf_counter()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    displays = [str(p) for p in paths]
    instance_paths = _instance_paths(instances)
    access = access or default_access()
    for path in (*paths, *instance_paths):
        access.check(path)  # before a byte is read for its digest: outside the data roots is refused
    _refuse_bundles(displays, [looks_like_zip(p) for p in paths])
    plan = plan_update(
        displays,
        paths,
        directory,
        stat=lambda i: _stat(paths[i]),
        digest=lambda i: file_digest(paths[i]),
        record=_options_record(options, mapping, runs, run_label, instance_paths, join, image_root, uploads),
        runs=runs,
        run_label=run_label,
        started=started,
        digest_new=False,  # a new input is read for its digest while it is scored, not before
    )
    with (
        PartWriter(plan) as writer,  # a group's parts are written while the next one is scored
        ThreadPoolExecutor(min(2, batch._available_cpus()), thread_name_prefix="rolloutscope-digest") as hashing,
    ):
        for group in _groups(plan.to_score, paths):
            unread = [i for i in group if plan.entries[i]["sha256"] is None]  # new: read as they are scored
            digests = {i: hashing.submit(_digest_or_none, file_digest, paths[i]) for i in unread}
            run = batch._score_inputs(
                [batch._Input(display=displays[i], path=paths[i]) for i in group],
                [plan.labels[i] for i in group],
                plan.force_run,
                options=options,
                mapping=mapping,
                instances=[str(p) for p in instance_paths] or None,
                join=join,
                image_root=image_root,
                uploads=dict(uploads) if uploads else None,
                workers=workers,
                chunk_rows=chunk_rows,
                progress=progress,
                option_kwargs={},
                access=access,
            )
            writer.write_group(group, displays, run.table, run.errors)
            for i, digest in digests.items():
                plan.entries[i]["sha256"] = digest.result()
    return _with_table(plan.finish(), keep_table)


#: ``score_to_dataset(keep_table=KEEP_TABLE_AUTO)``: keep the opened table when the update scored
#: at least half the dataset's rows (a first scoring, a full rescore), not for a few new files --
#: building it costs a decoding of every row, worth it when the update itself cost that order.
KEEP_TABLE_AUTO = "auto"


def _with_table(update: DatasetUpdate, keep_table: bool | str) -> DatasetUpdate:
    """``update``, the opened table kept when ``keep_table`` says so (its time counted in)."""
    if keep_table == KEEP_TABLE_AUTO:
        keep_table = update.rows_scored * 2 >= update.rows and update.rows_scored > 0
    if keep_table:
        started = time.perf_counter()
        write_table(update.directory)
        update.seconds += time.perf_counter() - started
    return update


def write_table(directory: str | os.PathLike) -> Path:
    """Keep in ``DIR/table`` the compact table :func:`open_dataset` gives for the dataset as it is
    now (its manifest, this code, the default text left on disk), as a snapshot
    (:mod:`scoring.table_snapshot`): opening it then reads those arrays instead of decoding,
    joining and compacting the parts -- a run is scored once and opened many times. Nothing is
    written when it is already there; an older one is removed. Its folder."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    on_disk = text_on_disk(manifest)
    folder = _stored_table_folder(directory, manifest, on_disk)
    if not (folder / table_snapshot.LAYOUT).is_file():
        table = dataset_table.read_table(directory, manifest, on_disk, compact=True)
        table_snapshot.keep(table, folder, kept=1)
    return folder


def _instance_paths(instances: Sequence[str | os.PathLike] | str | os.PathLike | None) -> list[Path]:
    if not instances:
        return []
    if isinstance(instances, (str, os.PathLike)):
        return [Path(instances)]
    return [Path(p) for p in instances]


def _refuse_bundles(displays: Sequence[str], zipped: Sequence[bool]) -> None:
    """A part holds one input file's rows; a bundle's are named after its members."""
    bundles = [display for display, is_zip in zip(displays, zipped, strict=True) if is_zip]
    if bundles:
        raise ValueError(
            f"{', '.join(bundles)}: a zip bundle cannot be scored into a dataset; unzip it into a folder "
            "and score the folder (score_files and 'rolloutscope score -o FILE' read bundles)"
        )


@dataclass
class UpdatePlan:
    """What an update of a dataset folder does (:func:`plan_update`): every input's manifest
    entry (an unchanged one as it was; one to score with its path, size, mtime, digest and run),
    the inputs to score (``to_score``), and where their parts go. An engine writes each input's
    parts (:func:`scoring.dataset_parts.write_input_parts`) and hands their fields to :meth:`scored`; :meth:`finish`
    writes the manifest."""

    directory: Path
    parts: Path
    labels: list[str]
    force_run: bool
    record: dict
    version: str
    generation: int
    entries: list[dict]
    to_score: list[int]
    report: DatasetUpdate
    run_errors_part: str | None
    started: float
    run_errors_written: bool = False
    previous_files: list[dict] | None = None  # the manifest's entries when nothing is to be scored or dropped

    def part_name(self, position: int) -> str:
        """The stem of input ``position``'s part files in this generation."""
        return f"{self.generation:06d}-{position:05d}"

    def scored(self, position: int, written: dict) -> None:
        """Input ``position`` was scored: its parts (what :func:`scoring.dataset_parts.write_input_parts` gave)."""
        self.entries[position].update(written, force_run=self.force_run)
        self.report.rows_scored += written["rows"]

    def write_run_errors(self, errors: pd.DataFrame) -> None:
        """The errors not about one input (the instance files'), as this generation's run part."""
        self.run_errors_part = f"{self.generation:06d}-run.errors.parquet"
        _write_parquet(errors, self.parts / self.run_errors_part)
        self.run_errors_written = True

    def finish(self) -> DatasetUpdate:
        """Write the manifest (atomically), drop the parts it no longer names; the report. A look
        that found nothing new writes nothing: the manifest on disk says it all."""
        report = self.report
        if self.previous_files is not None and self.entries == self.previous_files:
            return self._counted(report)
        if self.run_errors_part is None:  # nothing scored and no previous dataset
            self.write_run_errors(errors_frame([]))
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "code_version": self.version,
            "generation": self.generation,
            "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "options": self.record,
            "run_errors": self.run_errors_part,
            "files": self.entries,
        }
        _write_manifest(self.directory, manifest)
        _drop_unreferenced(self.parts, manifest)
        return self._counted(report)

    def _counted(self, report: DatasetUpdate) -> DatasetUpdate:
        report.rows = sum(entry["rows"] for entry in self.entries)
        report.errors = sum(entry["errors"] for entry in self.entries)
        report.warnings = sum(entry["warnings"] for entry in self.entries)
        report.seconds = time.perf_counter() - self.started
        return report


def plan_update(
    displays: Sequence[str],
    label_paths: Sequence[Path],
    directory: str | os.PathLike,
    *,
    stat: Callable[[int], tuple[int, int]],
    digest: Callable[[int], str],
    record: dict,
    runs: str | Mapping[str, str],
    run_label: str | None,
    started: float,
    digest_new: bool = True,
) -> UpdatePlan:
    """Compare the inputs (``displays``, as given; ``stat(i)`` = (size, mtime_ns) and
    ``digest(i)`` = sha256 of input i, OSError when unreadable) with the dataset already in
    ``directory`` scored with the same options (``record``) and code: which to reuse, which to score.
    ``digest_new=False``: an input with no entry to compare with is not read for its digest here
    (the engine that reads it gives ``sha256`` with its parts)."""
    if not displays:
        raise ValueError("no input files")
    if len(set(displays)) != len(displays):
        raise ValueError("an input file is given twice")
    labels, force_run = batch._run_labels(label_paths, runs, run_label)
    version = code_version()
    directory = Path(directory)
    report = DatasetUpdate(directory=directory)

    previous: dict | None = None
    earlier: dict | None = None  # the manifest found, even when its parts cannot be reused
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} exists and is not a folder")
    if is_dataset(directory):
        try:
            previous = earlier = read_manifest(directory)
        except (OSError, ValueError) as exc:
            report.full_rescore = f"full rescore: the manifest could not be read ({exc})"
    elif directory.is_dir() and any(directory.iterdir()):
        raise ValueError(f"{directory} is a folder that holds no scored dataset; give an empty or new folder")
    if previous is not None:
        if previous.get("options") != record:
            report.full_rescore = "full rescore: the scoring options differ from the dataset's"
            previous = None
        elif previous.get("code_version") != version:
            report.full_rescore = "full rescore: the scoring code changed since the dataset was written"
            previous = None
    old_entries = {entry["path"]: entry for entry in previous["files"]} if previous else {}
    known = {entry["path"] for entry in earlier["files"]} if earlier else set()

    # what each input is: unchanged (reuse its part) or to be scored
    olds = [old_entries.get(display) for display in displays]
    stats = [_stat_or_none(stat, position) for position in range(len(displays))]
    reusable = [
        old is not None and old.get("run") == label and old.get("force_run") == force_run
        for old, label in zip(olds, labels, strict=True)
    ]
    trusted = [  # size and mtime as recorded: not read
        can and size is not None and (old["size"], old["mtime_ns"]) == (size, mtime_ns)
        for old, can, (size, mtime_ns) in zip(olds, reusable, stats, strict=True)
    ]
    wanted = [
        position
        for position, (size, _) in enumerate(stats)
        if size is not None and not trusted[position] and (reusable[position] or digest_new)
    ]
    digests = _digests(digest, wanted)
    entries: list[dict] = []
    to_score: list[int] = []
    for position, (display, label, old) in enumerate(zip(displays, labels, olds, strict=True)):
        size, mtime_ns = stats[position]
        if trusted[position]:
            entries.append(old)
            report.unchanged.append(display)
            continue
        sha256 = digests.get(position)
        if reusable[position] and sha256 is not None and sha256 == old["sha256"]:
            entries.append({**old, "size": size, "mtime_ns": mtime_ns})
            report.unchanged.append(display)
            continue
        entries.append({"path": display, "size": size, "mtime_ns": mtime_ns, "sha256": sha256, "run": label})
        to_score.append(position)
        (report.changed if display in known else report.new).append(display)
    report.removed = [d for d in known if d not in set(displays)]

    parts = directory / PARTS
    parts.mkdir(parents=True, exist_ok=True)
    # a new generation only when the rows change: a look that finds nothing keeps the dataset as it was
    same_rows = previous is not None and not to_score and not report.removed
    return UpdatePlan(
        directory=directory,
        parts=parts,
        labels=labels,
        force_run=force_run,
        record=record,
        version=version,
        generation=(previous or {}).get("generation", 0) + (0 if same_rows else 1),
        entries=entries,
        to_score=to_score,
        report=report,
        run_errors_part=(previous or {}).get("run_errors"),
        started=started,
        previous_files=previous["files"] if same_rows else None,
    )


def _stat_or_none(stat: Callable[[int], tuple[int, int]], position: int) -> tuple[int | None, int | None]:
    try:
        return stat(position)
    except OSError:
        return None, None


def _digest_or_none(digest: Callable[[Any], str], source: Any) -> str | None:
    """``digest(source)``, None when it raises OSError (the file's scoring says why)."""
    try:
        return digest(source)
    except OSError:
        return None


def _digests(digest: Callable[[int], str], positions: Sequence[int]) -> dict[int, str | None]:
    """``digest(position)`` of each of ``positions`` (None when it raises OSError), several at a
    time: hashlib and file reads release the GIL, so a run's gigabytes hash on every core."""
    one = functools.partial(_digest_or_none, digest)
    threads = min(len(positions), batch._available_cpus())
    if threads <= 1:
        return {position: one(position) for position in positions}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rolloutscope-digest") as executor:
        return dict(zip(positions, executor.map(one, positions), strict=True))


def _groups(positions: list[int], paths: Sequence[Path]) -> list[list[int]]:
    """The inputs to score, in groups of about :data:`GROUP_ROWS` rows (by file size, as the
    batch engine estimates rows), so one group's table is in memory at a time."""
    groups: list[list[int]] = []
    current: list[int] = []
    budget = 0.0
    for position in positions:
        try:
            size = paths[position].stat().st_size
        except OSError:
            size = 0
        current.append(position)
        budget += size
        if budget >= GROUP_ROWS * 2048:  # about 2 KB per row
            groups.append(current)
            current, budget = [], 0.0
    if current:
        groups.append(current)
    return groups


def _drop_unreferenced(parts: Path, manifest: dict) -> None:
    """Delete part files the manifest does not name: replaced or removed inputs, and what an
    interrupted run left."""
    keep = {manifest["run_errors"]}
    for entry in manifest["files"]:
        keep.update(name for name in (entry["part"], entry["text_part"], entry["errors_part"]) if name)
    for path in parts.iterdir():
        if path.name not in keep:
            path.unlink(missing_ok=True)


# --------------------------------------------------------------------------- reading


def open_dataset(
    directory: str | os.PathLike,
    *,
    compact: bool = True,
    on_disk: Sequence[str] | None = None,
    inputs_from: int = 0,
    snapshots: str | os.PathLike | None = None,
) -> ScoredDataset:
    """The dataset's table without its text columns (:data:`STORED_TEXT_COLUMNS`), its errors
    and its manifest. ``compact=False`` keeps the batch table's dtypes; ``compact`` (the
    default) holds the same values in fewer bytes, by rule:

    - float columns: a column equal bit for bit to an earlier one shares its array (the three
      task rewards, ``overall`` and ``score`` often are one); a column whose values other than
      its most common one are at most :data:`SPARSE_MAX_SHARE` of the rows is sparse (that
      value as fill; not when a zero of the other sign would take the fill's); the others stay
      float64 (most rewards and IoUs are not float32-exact, and a float32 column would give
      float32 means and sums);
    - integer columns (line, step, sample index): the narrowest of :data:`INTEGER_WIDTHS`
      holding their range, numpy when no value is missing, else pandas' nullable type;
    - text columns outside the category columns (row and instance ids): a categorical when
      that takes fewer bytes (ids that repeat, or are missing), else Arrow strings with 32-bit
      offsets;
    - categories and the ``solved`` flag as in the batch table (1 byte per row).

    Every value stays what it was: :func:`widened` gives the batch table back exactly.
    ``on_disk``: the text columns to leave on disk (default: :func:`text_on_disk`; datasets
    opened together decide once, over all their inputs). ``inputs_from``: open only the inputs
    from that position on (the ones a growing run gained since it was opened): the dataset's
    manifest, table and errors are then theirs alone, without the errors about no input.

    A whole dataset's table comes from the one the dataset carries (:func:`write_table`) when
    that is the table of its manifest, this code and ``on_disk``: read and checked, a fraction
    of decoding the parts' time and without its transient peak. Else the parts are decoded.

    ``snapshots``: a folder of this process's own (never one a user names) where an opened
    table is kept as it is held (:mod:`scoring.table_snapshot`), and loaded memory-mapped the
    next time the same dataset, code and ``on_disk`` are opened -- tens of milliseconds for a
    million rows, where reading the dataset's own table into fresh memory takes a few hundred
    and decoding seconds. A decoded table is kept before this returns (and held mapped, its
    decoded arrays freed); a table read from the dataset is kept on a background thread
    (:func:`scoring.table_snapshot.keep_later`).
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    if on_disk is None:
        on_disk = text_on_disk(manifest) if compact else STORED_TEXT_COLUMNS
    on_disk = tuple(on_disk)
    if inputs_from:
        manifest = {**manifest, "files": manifest["files"][inputs_from:], "run_errors": None}
    starts = np.cumsum([0, *(entry["rows"] for entry in manifest["files"])])[:-1].astype(np.int64)
    whole = compact and not inputs_from
    snapshot = _snapshot_folder(snapshots, directory, manifest, on_disk) if whole else None
    table = table_snapshot.cached(snapshot) if snapshot is not None else None
    if table is None and whole:
        table = _stored_table(directory, manifest, on_disk)
        if table is not None and snapshot is not None:
            table_snapshot.keep_later(table, snapshot)  # read into fresh memory, checked: mapped next time
    if table is None:
        table = dataset_table.read_table(directory, manifest, on_disk, compact)
        if snapshot is not None:
            table_snapshot.keep(table, snapshot)
            mapped = table_snapshot.cached(snapshot)  # held as mapped pages: the decoded arrays are freed
            table = mapped if mapped is not None else table
    errors = open_errors(directory, manifest)
    return ScoredDataset(directory, table, errors, manifest, starts, on_disk)


def _table_identity(manifest: dict, on_disk: Sequence[str]) -> list:
    """All that decides an opened table: the manifest, the code, the text left on disk."""
    return [manifest, code_version(), list(on_disk)]


def _snapshot_folder(root: str | os.PathLike | None, directory: Path, manifest: dict, on_disk: tuple) -> Path | None:
    """Where the snapshot of this opening lives: by the dataset's folder, then by its identity."""
    if root is None:
        return None
    return table_snapshot.folder_for(root, str(directory.resolve()), _table_identity(manifest, on_disk))


def _stored_table_folder(directory: Path, manifest: dict, on_disk: Sequence[str]) -> Path:
    # named by identity alone: the dataset's folder may be moved or mounted elsewhere
    return table_snapshot.folder_for(directory / TABLE, TABLE, _table_identity(manifest, on_disk))


def _stored_table(directory: Path, manifest: dict, on_disk: tuple[str, ...]) -> pd.DataFrame | None:
    """The table the dataset carries (:func:`write_table`) when it is this opening's, read (not
    mapped: the folder is a user's) and checked as untrusted input; else None. A damaged one is
    logged and left as it is (the folder is not the app's to change)."""
    folder = _stored_table_folder(directory, manifest, on_disk)
    if not (folder / table_snapshot.LAYOUT).is_file():
        return None
    try:
        table, _ = table_snapshot.load(folder, mapped=False)
        rows = sum(entry["rows"] for entry in manifest["files"])
        if len(table) != rows:
            raise table_snapshot.SnapshotError(f"{len(table):,} rows, the manifest names {rows:,}")
    except table_snapshot.SnapshotError as exc:
        log.warning("%s: the stored table is not used, the parts are read (%s)", directory, exc)
        return None
    table.attrs = {"scoring_options": manifest["options"]["scoring"]}  # the manifest's, not the file's
    return table


def text_on_disk(*manifests: dict) -> tuple[str, ...]:
    """The text columns opened datasets leave on disk: the unique ones, and each repeating one
    whose values repeat fewer than :data:`RESIDENT_MIN_REPEATS` times per input on average and
    number more than :data:`RESIDENT_ALWAYS_MAX`."""
    files = [entry for manifest in manifests for entry in manifest["files"]]
    rows = sum(entry["rows"] for entry in files)
    held = []
    for column in RESIDENT_TEXT_COLUMNS:
        distinct = sum(entry.get("distinct", {}).get(column, 0) for entry in files)
        if distinct * RESIDENT_MIN_REPEATS > rows and distinct > RESIDENT_ALWAYS_MAX:
            held.append(column)
    return (*STORED_TEXT_COLUMNS, *held)


def open_errors(directory: str | os.PathLike, manifest: dict | None = None) -> pd.DataFrame:
    """The dataset's errors table: errors not about one input (instance files) first, then
    each input's, in input order."""
    parts = Path(directory) / PARTS
    manifest = manifest if manifest is not None else read_manifest(directory)
    names = [manifest["run_errors"], *(entry["errors_part"] for entry in manifest["files"])]
    frames = [dataset_table.read_part(parts / name).to_pandas() for name in names if name]
    frame = pd.concat(frames, ignore_index=True) if frames else errors_frame([])
    frame = frame[list(ERROR_COLUMNS)]
    frame["line"] = frame["line"].astype("Int64")
    return frame


def row_text(
    dataset: ScoredDataset | str | os.PathLike, rows: Sequence[int], columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """:func:`scoring.dataset_text.row_text`, of an opened dataset or a dataset folder (opened first)."""
    return dataset_text.row_text(dataset if isinstance(dataset, ScoredDataset) else open_dataset(dataset), rows, columns)


__all__ = [
    "FORMAT_VERSION",
    "INTEGER_WIDTHS",
    "SPARSE_MAX_SHARE",
    "RESIDENT_TEXT_COLUMNS",
    "STORED_TEXT_COLUMNS",
    "DatasetUpdate",
    "ScoredDataset",
    "code_version",
    "compact_table",
    "held_bytes",
    "is_dataset",
    "open_errors",
    "open_dataset",
    "read_manifest",
    "row_text",
    "rows_with_text",
    "read_columns",
    "search_text",
    "text_on_disk",
    "score_to_dataset",
    "widened",
]
