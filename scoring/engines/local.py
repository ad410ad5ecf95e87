"""Scoring into a dataset folder: :func:`score_to_dataset`, here or on Ray (``engine="ray"``).

Both engines drive :mod:`scoring.runs` into :mod:`scoring.datasets` and write the same dataset;
only new or changed inputs are scored.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..datasets import (
    DatasetUpdate,
    PartWriter,
    digest_or_none,
    file_digest,
    give_back_memory,
    input_groups,
    input_stat,
    instance_paths,
    options_record,
    plan_update,
    refuse_bundles,
    write_table,
    writing,
)
from ..rollouts import ColumnMapping, DataAccess, default_access, looks_like_zip
from ..runs import BatchOptions, Progress, RunInput, available_cpus, stream_inputs

#: How :func:`score_to_dataset` scores: in this process and its worker processes, or on Ray
#: (:mod:`scoring.engines.ray`, installed with the ``ray`` extra).
ENGINES = ("local", "ray")


def score_to_dataset(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    directory: str | os.PathLike,
    *,
    options: BatchOptions | None = None,
    mapping: ColumnMapping | None = None,
    runs: str | Mapping[str, str] = "one",
    run_label: str | None = None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    join: str = "auto",
    image_root: str | os.PathLike | None = None,
    uploads: Mapping[str, str] | None = None,
    workers: int | None = None,
    chunk_rows: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    access: DataAccess | None = None,
    engine: str = "local",
    keep_table: bool | str = True,
    **option_kwargs: Any,
) -> DatasetUpdate:
    """Score rollout files into the dataset folder ``directory`` (created if missing), scoring
    only what changed since it was last written with the same options and code.

    Arguments as for :func:`scoring.runs.score_files` (``uploads``: uploaded image name ->
    staged file; ``access``: where inputs may be read, the data roots by default). The dataset
    opened afterwards equals
    ``score_files`` on the same inputs (rows in input order, then line; errors per input).
    ``engine="ray"`` scores on a Ray cluster (:func:`scoring.engines.ray.score_to_dataset_on_ray`:
    inputs may also be ``s3://...`` URIs; ``workers`` is the CPU count of a Ray started here)
    and writes the same dataset. ``keep_table``: then write the table :func:`open_dataset` gives
    into the folder (:func:`write_table`), so its first open reads it instead of decoding the
    parts; :data:`KEEP_TABLE_AUTO`: only when this update scored at least half the rows (what a
    growing run wants: not rebuilt for each new step file).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    options = replace(options or BatchOptions(), **option_kwargs).validated()
    with writing(directory):  # one writer at a time per folder, across processes
        if engine == "ray":
            from .ray import score_to_dataset_on_ray

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
        instance_files = instance_paths(instances)
        access = access or default_access()
        for path in (*paths, *instance_files):
            access.check(path)  # before a byte is read for its digest: outside the data roots is refused
        refuse_bundles(displays, [looks_like_zip(p) for p in paths])
        plan = plan_update(
            displays,
            paths,
            directory,
            stat=lambda i: input_stat(paths[i]),
            digest=lambda i: file_digest(paths[i]),
            record=options_record(options, mapping, runs, run_label, instance_files, join, image_root, uploads),
            runs=runs,
            run_label=run_label,
            started=started,
            digest_new=False,  # a new input is read for its digest while it is scored, not before
        )
        reported = _WholeUpdate(progress, [paths[i] for i in plan.to_score], started)
        with (
            PartWriter(plan) as writer,  # each batch of rows is written on a thread while the next is scored
            ThreadPoolExecutor(min(2, available_cpus()), thread_name_prefix="rolloutscope-digest") as hashing,
        ):
            for group in input_groups(plan.to_score, paths):
                unread = [i for i in group if plan.entries[i]["digest"] is None]  # new: read as they are scored
                digests = {i: hashing.submit(digest_or_none, file_digest, paths[i]) for i in unread}
                reported.before = reported.last
                stream_inputs(
                    [RunInput(display=displays[i], path=paths[i]) for i in group],
                    [plan.labels[i] for i in group],
                    plan.force_run,
                    sink=writer.sink(group),
                    options=options,
                    mapping=mapping,
                    instances=[str(p) for p in instance_files] or None,
                    join=join,
                    image_root=image_root,
                    uploads=dict(uploads) if uploads else None,
                    workers=workers,
                    chunk_rows=chunk_rows,
                    progress=reported if progress is not None else None,
                    option_kwargs={},
                    access=access,
                )
                writer.end_group()
                for i, digest in digests.items():
                    plan.entries[i]["digest"] = digest.result()
        if plan.to_score:
            # what scoring left to the allocators, before the opened table is built; a look that found
            # nothing to score skips it (a full collection costs in proportion to the whole heap)
            give_back_memory()
        return _with_table(plan.finish(), keep_table)


class _WholeUpdate:
    """Each group's progress as the whole update's (:meth:`Progress.after`): its rows, bytes
    and files added to the groups' before it, out of every input to score."""

    def __init__(self, progress: Callable[[Progress], None] | None, paths: Sequence[Path], started: float):
        self.progress = progress
        self.bytes_total = sum(input_stat(path)[0] if path.is_file() else 0 for path in paths)
        self.files_total = len(paths)
        self.started = started
        self.last = self.before = Progress(0, 0, 0, self.bytes_total, "", 0, self.files_total)

    def __call__(self, group: Progress) -> None:
        self.last = group.after(self.before, self.bytes_total, self.files_total, time.perf_counter() - self.started)
        self.progress(self.last)


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
