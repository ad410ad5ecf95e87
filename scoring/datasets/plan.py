"""The scored dataset's manifest and update plan: which inputs are new, changed or gone.

A dataset folder holds::

    DIR/manifest.json                    format, scoring options, code version, one entry per input
    DIR/parts/<gen>-<n>.parquet          the table rows of input n: every column but the text
    DIR/parts/<gen>-<n>.text.parquet     their text columns, in small row groups
    DIR/parts/<gen>-<n>.errors.parquet   its errors (file, line, field, reason, severity, unit)
    DIR/parts/<gen>-run.errors.parquet   errors not about one input (instance files)
    DIR/table/<digest>/                  the table open_dataset holds, ready (write_table)
    DIR/.writing.lock                    held by the one process updating the folder (lock.writing)

When the folder already holds a dataset scored with the same options and code, only the inputs
that are new or changed are scored (size and mtime unchanged: trusted; else the content digest
decides) and the parts of removed inputs are dropped. Parts are written under new names and the
manifest is replaced atomically, so a crash leaves the previous dataset whole; a crash during
the first write leaves only the dataset's own files, which the next write starts over from.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..rollouts import ColumnMapping, errors_frame
from ..runs import BatchOptions, available_cpus, run_labels
from .lock import LOCK_NAME
from .parts import left_by_atomic_write, write_atomically, write_parquet
from .table import PARTS, RESIDENT_TEXT_COLUMNS, STORED_TEXT_COLUMNS

FORMAT = "rolloutscope-scored-dataset"
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
#: The dataset folder's subfolder holding the table :func:`open_dataset` gives, ready to read
#: (:func:`write_table`).
TABLE = "table"
#: What a folder holds while its first write is under way (or after that write was interrupted):
#: the parts so far, the lock. Not foreign content: the next write starts over from it.
_WRITER_ENTRIES = frozenset({PARTS, TABLE, LOCK_NAME})

#: A repeating text column is held in memory only when its values repeat: on average at least
#: this many rows of an input share a value (GRPO: the rollouts of one prompt). Else (each row
#: its own ground truth) its categories would cost what the text does, and it stays on disk too.
RESIDENT_MIN_REPEATS = 4
#: ...unless it has at most this many distinct values in all: then it costs little either way,
#: and a small run keeps every column in its tables.
RESIDENT_ALWAYS_MAX = 10_000
#: Inputs scored per call of the batch engine (each opened and its first records read for its
#: layout before the call scores any): a run of many small step files is opened a group at a time.
GROUP_ROWS = 250_000
try:
    from blake3 import blake3 as _new_digest
except ImportError:  # a Ray node without it: SHA-256, named so, never taken for a BLAKE3 digest
    _new_digest = hashlib.sha256
#: How an input's content is digested (the manifest's ``digest``, ``<algorithm>:<hex>``): a file
#: whose size or mtime changed is reused only when its digest is the one recorded. BLAKE3 is a
#: cryptographic hash (a crafted file cannot pass for a scored one) at three times SHA-256's
#: speed: the scoring process hashes every byte of every new input while it scores it.
DIGEST_ALGORITHM = "blake3" if _new_digest is not hashlib.sha256 else "sha256"
_HASH_BLOCK = 1 << 20
log = logging.getLogger(__name__)


def _written_by_a_writer(name: str) -> bool:
    """Whether a folder entry is one a dataset write makes (its subfolders, lock, a manifest's
    temporary left by a killed write)."""
    return name in _WRITER_ENTRIES or left_by_atomic_write(name, MANIFEST)


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
    """The content digest (:data:`DIGEST_ALGORITHM`) of a file's bytes, read a block at a time
    into one buffer."""
    with open(path, "rb", buffering=0) as handle:
        return stream_digest(handle.readinto)


def stream_digest(read_into: Callable[[memoryview], int | None]) -> str:
    """The content digest of what ``read_into`` (a ``readinto`` method) gives until it gives 0."""
    digest = _new_digest()
    buffer = memoryview(bytearray(_HASH_BLOCK))
    while count := read_into(buffer):
        digest.update(buffer[:count])
    return f"{DIGEST_ALGORITHM}:{digest.hexdigest()}"


def bytes_digest(data: bytes) -> str:
    """The content digest of bytes held in memory (an uploaded file's)."""
    return f"{DIGEST_ALGORITHM}:{_new_digest(data).hexdigest()}"


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


def options_record(
    options: BatchOptions,
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
        "instances": [{"path": str(p), "digest": file_digest(p)} for p in instances],
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
    write_atomically(directory / MANIFEST, lambda target: target.write_text(text, encoding="utf-8"))


def input_stat(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


def instance_paths(instances: Sequence[str | os.PathLike] | str | os.PathLike | None) -> list[Path]:
    if not instances:
        return []
    if isinstance(instances, (str, os.PathLike)):
        return [Path(instances)]
    return [Path(p) for p in instances]


def refuse_bundles(displays: Sequence[str], zipped: Sequence[bool]) -> None:
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
    parts (:func:`scoring.datasets.parts.write_input_parts`) and hands their fields to :meth:`scored`; :meth:`finish`
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
        """Input ``position`` was scored: its parts (what :func:`scoring.datasets.parts.write_input_parts` gave)."""
        self.entries[position].update(written, force_run=self.force_run)
        self.report.rows_scored += written["rows"]

    def write_run_errors(self, errors: pd.DataFrame) -> None:
        """The errors not about one input (the instance files'), as this generation's run part."""
        self.run_errors_part = f"{self.generation:06d}-run.errors.parquet"
        write_parquet(errors, self.parts / self.run_errors_part)
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
    ``digest(i)`` = :func:`file_digest` of input i, OSError when unreadable) with the dataset already in
    ``directory`` scored with the same options (``record``) and code: which to reuse, which to score.
    ``digest_new=False``: an input with no entry to compare with is not read for its digest here
    (the engine that reads it gives its ``digest`` with its parts)."""
    if not displays:
        raise ValueError("no input files")
    if len(set(displays)) != len(displays):
        raise ValueError("an input file is given twice")
    labels, force_run = run_labels(label_paths, runs, run_label)
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
    elif directory.is_dir() and not all(_written_by_a_writer(entry.name) for entry in directory.iterdir()):
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
        content = digests.get(position)
        if reusable[position] and content is not None and content == old.get("digest"):
            entries.append({**old, "size": size, "mtime_ns": mtime_ns})
            report.unchanged.append(display)
            continue
        entries.append({"path": display, "size": size, "mtime_ns": mtime_ns, "digest": content, "run": label})
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


def digest_or_none(digest: Callable[[Any], str], source: Any) -> str | None:
    """``digest(source)``, None when it raises OSError (the file's scoring says why)."""
    try:
        return digest(source)
    except OSError:
        return None


def _digests(digest: Callable[[int], str], positions: Sequence[int]) -> dict[int, str | None]:
    """``digest(position)`` of each of ``positions`` (None when it raises OSError), several at a
    time: hashing and file reads release the GIL, so a run's gigabytes hash on every core."""
    one = functools.partial(digest_or_none, digest)
    threads = min(len(positions), available_cpus())
    if threads <= 1:
        return {position: one(position) for position in positions}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rolloutscope-digest") as executor:
        return dict(zip(positions, executor.map(one, positions), strict=True))


def input_groups(positions: list[int], paths: Sequence[Path]) -> list[list[int]]:
    """The inputs to score, in groups of about :data:`GROUP_ROWS` rows (by file size, as the
    batch engine estimates rows), each group one call of the batch engine."""
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


def text_on_disk(*manifests: dict) -> tuple[str, ...]:
    """The text columns opened datasets leave on disk: the unique ones, and each repeating one
    whose values, as stored, repeat fewer than :data:`RESIDENT_MIN_REPEATS` times per input on
    average and number more than :data:`RESIDENT_ALWAYS_MAX`.

    "As stored": each batch of an input is written with the dictionary of its own values, and
    opening decodes every batch's dictionary, so what counts is those dictionaries' entries
    summed (the manifest's ``dictionary_entries``; an older entry's ``distinct``). A run whose
    rows repeat a ground truth only epochs apart -- each batch's values all distinct -- would
    decode all its text to hold a fifth of it: that column stays on disk instead."""
    files = [entry for manifest in manifests for entry in manifest["files"]]
    rows = sum(entry["rows"] for entry in files)
    left = []
    for column in RESIDENT_TEXT_COLUMNS:
        stored = sum(_decoded_entries(entry, column) for entry in files)
        if stored * RESIDENT_MIN_REPEATS > rows and stored > RESIDENT_ALWAYS_MAX:
            left.append(column)
    return (*STORED_TEXT_COLUMNS, *left)


def _decoded_entries(entry: dict, column: str) -> int:
    """The dictionary entries opening decodes for ``column`` of one input's part."""
    counts = entry.get("dictionary_entries") or entry.get("distinct") or {}
    return counts.get(column, 0)
