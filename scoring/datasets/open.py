"""Opening a scored dataset: the compact table in memory, the text left on disk.

:func:`open_dataset` reads the columns that filters, histograms, re-weighting, groups and
compare need -- numbers, flags, categories -- and leaves the text (prompt, response, scorer
inputs, recovered text...) on disk: from the table the dataset carries when it is the one of its
manifest and code (:func:`write_table`: read in a fraction of the decoding's time), else from the
parts. :func:`row_text` reads text for the rows being shown, one row group per row.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..rollouts import ERROR_COLUMNS, errors_frame
from ..runs import MISMATCH_COLUMN, mismatch_inputs, with_logged_mismatch
from . import snapshot as table_snapshot
from . import text as dataset_text
from .compact import Twin
from .plan import TABLE, code_version, log, read_manifest, text_on_disk
from .table import (
    PARTS,
    STORED_TEXT_COLUMNS,
    compact_column_groups,
    finished_order,
    part_paths,
    read_part,
    read_table,
    table_attrs,
)
from .text import ScoredDataset


def write_table(directory: str | os.PathLike) -> Path:
    """Keep in ``DIR/table`` the compact table :func:`open_dataset` gives for the dataset as it is
    now (its manifest, this code, the default text left on disk), as a snapshot
    (:mod:`scoring.datasets.snapshot`): opening it then reads those arrays instead of decoding,
    joining and compacting the parts -- a run is scored once and opened many times. Nothing is
    written when it is already there; an older one is removed. Its folder."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    on_disk = text_on_disk(manifest)
    folder = _stored_table_folder(directory, manifest, on_disk)
    if not (folder / table_snapshot.LAYOUT).is_file():
        if part_paths(directory, manifest):
            _write_streamed(directory, manifest, on_disk, folder)
        else:  # no input gave a row: the empty table
            table_snapshot.keep(read_table(directory, manifest, on_disk, compact=True), folder, kept=1)
    return folder


def _write_streamed(directory: Path, manifest: dict, on_disk: tuple[str, ...], folder: Path) -> None:
    """:func:`write_table`'s snapshot written a column group at a time as the parts are decoded
    (:func:`scoring.datasets.table.compact_column_groups`): the compact table is never held whole,
    so the memory it takes follows one group of columns, not the run's rows. A float column equal
    to an earlier one is compared with that one read back from the snapshot, and written as the
    same; the ``logged_mismatch`` and the columns' order come last, from the columns written. A
    table that cannot be kept is only a slower next open: logged, not raised."""
    try:
        with table_snapshot.SnapshotWriter(folder) as writer:

            def recall(name: str) -> np.ndarray:
                return writer.column(name).to_numpy(np.float64)

            for group in compact_column_groups(directory, manifest, on_disk, recall):
                _write_group(writer, group)
                del group  # before the next group is decoded
            names = list(writer.entries)
            compared = pd.DataFrame({name: writer.column(name) for name in mismatch_inputs(names)},
                                    index=pd.RangeIndex(writer.rows or 0), copy=False)  # fmt: skip
            atol = manifest["options"]["scoring"]["logged_atol"]
            writer.add(MISMATCH_COLUMN, with_logged_mismatch(compared, atol)[MISMATCH_COLUMN])
            del compared
            writer.finish([*finished_order(names), MISMATCH_COLUMN], table_attrs(manifest))
    except (OSError, table_snapshot.SnapshotError) as exc:
        log.warning("table not kept in %s: %s", folder, exc)
        return
    table_snapshot.prune(folder, kept=1)


def _write_group(writer: table_snapshot.SnapshotWriter, group: dict[str, pd.Series | Twin]) -> None:
    """One group's columns written (a function: its columns go with it, before the next group)."""
    for name, column in group.items():
        if isinstance(column, Twin):
            writer.add_same(name, column.name)
        else:
            writer.add(name, column)


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
    table is kept as it is held (:mod:`scoring.datasets.snapshot`), and loaded memory-mapped the
    next time the same dataset, code and ``on_disk`` are opened -- tens of milliseconds for a
    million rows, where reading the dataset's own table into fresh memory takes a few hundred
    and decoding seconds. A decoded table is kept before this returns (and held mapped, its
    decoded arrays freed); a table read from the dataset is kept on a background thread
    (:func:`scoring.datasets.snapshot.keep_later`).
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
        table = read_table(directory, manifest, on_disk, compact)
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


def open_errors(directory: str | os.PathLike, manifest: dict | None = None) -> pd.DataFrame:
    """The dataset's errors table: errors not about one input (instance files) first, then
    each input's, in input order."""
    parts = Path(directory) / PARTS
    manifest = manifest if manifest is not None else read_manifest(directory)
    names = [manifest["run_errors"], *(entry["errors_part"] for entry in manifest["files"])]
    frames = [read_part(parts / name).to_pandas() for name in names if name]
    frame = pd.concat(frames, ignore_index=True) if frames else errors_frame([])
    frame = frame[list(ERROR_COLUMNS)]
    frame["line"] = frame["line"].astype("Int64")
    return frame


def row_text(
    dataset: ScoredDataset | str | os.PathLike, rows: Sequence[int], columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """:func:`scoring.datasets.text.row_text`, of an opened dataset or a dataset folder (opened first)."""
    return dataset_text.row_text(dataset if isinstance(dataset, ScoredDataset) else open_dataset(dataset), rows, columns)
