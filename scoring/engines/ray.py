"""Score rollout files into a scored dataset on Ray (``score_to_dataset(..., engine="ray")``,
``rolloutscope score INPUTS --engine ray -o DIR/``).

The folder written is :mod:`scoring.datasets`'s, part for part: :func:`score_to_dataset_on_ray`
plans the update as the local engine does (:func:`scoring.datasets.plan_update`: which inputs are
new or changed), Ray Data reads the files to score (as ``read_binary_files`` does, but a ``.gz``
file as stored; local paths or any filesystem pyarrow knows, ``s3://...``), a task scores each
file with the local engine's own functions (``scoring.runs.stream_inputs`` on one input, in one process,
its rows written batch by batch by a :class:`scoring.datasets.PartWriter`) into ``DIR/parts``, and
the driver writes the manifest.
So a later local ``score_to_dataset`` on the folder reuses what Ray wrote, and ``open_dataset``
gives the same table and errors whichever engine wrote it.

One task per file, not per chunk of a file: what a row becomes depends on its file -- the
layout is detected from the file's first records, a line number counts from the file's first
line, a file whose rows all fail gets one file-level error, a gzip stream or a JSON array has no
boundary to split at -- and a run is written as many step or rank files, so files give the
cluster enough tasks. A file is fetched whole (an object in Ray's object store, then a private
temporary copy on the worker) and scored by the same chunked path as locally, so rows, line
numbers and errors are the same by construction. A very large single file is one task: split it
into step files to spread it.

Faults: a task whose worker dies is retried by Ray (:data:`MAX_RETRIES`), as is one that hit an
``OSError`` (a shared folder or object store hiccup); a task writes its parts under names fixed
by the input's position, atomically, so a retry replaces what the failed attempt left. A row that
cannot be read or scored is a row error inside the task, as in the local engine, and never fails it.

Workers import this driver's ``scoring`` package (sent as a ``py_modules`` runtime environment,
with the ``ROLLOUTSCOPE_*`` settings); each checks that its code digest is the driver's, so a
cluster running other scoring code is an error, not a silently different dataset.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..datasets import (
    DatasetUpdate,
    PartWriter,
    UpdatePlan,
    bytes_digest,
    code_version,
    file_digest,
    instance_paths,
    options_record,
    plan_update,
    refuse_bundles,
    stream_digest,
)
from ..rollouts import ColumnMapping, default_access, looks_like_zip, rollout_name
from ..runs import BatchOptions, Progress, RunInput, stream_inputs

#: What to install for this engine.
RAY_EXTRA = "rolloutscope[ray]"
#: Attempts of a file's task after its worker died or it hit an OSError (bounded: a file that
#: always kills its worker, say by running it out of memory, ends the job instead of looping).
MAX_RETRIES = 4
#: Environment variables that set how the scorer reads files (data roots, limits): sent to workers.
SETTINGS_PREFIX = "ROLLOUTSCOPE_"
_URI_MARK = "://"


class RayUnavailable(ImportError):
    """Ray (with Ray Data) is not installed: the message says which extra to install."""


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401 - the part of Ray this engine needs
    except ImportError as exc:
        raise RayUnavailable(
            f"the Ray engine needs Ray Data, which is not installed ({exc}); "
            f"install it with: pip install '{RAY_EXTRA}'"
        ) from None
    return ray


def is_uri(path: str | os.PathLike) -> bool:
    """Whether an input names a file on a filesystem other than the local one (``s3://...``)."""
    return _URI_MARK in os.fspath(path)


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class _FileTask:
    """What a worker needs to score one input (small: sent with the job)."""

    position: int
    display: str
    name: str  # the file's name: the container is told by its extension
    base_dir: str  # where its rows' relative image paths are looked up
    run: str


def expand_uris(inputs: Sequence[str]) -> list[str]:
    """URIs of folders (``s3://bucket/run/``) as the rollout files under them, sorted; other
    inputs as given (the CLI expands local folders and globs itself)."""
    import pyarrow.fs as pafs

    files: list[str] = []
    for given in inputs:
        if not is_uri(given):
            files.append(given)
            continue
        filesystem, path = pafs.FileSystem.from_uri(given)
        if filesystem.get_file_info(path).type != pafs.FileType.Directory:
            files.append(given)
            continue
        scheme = given.split(_URI_MARK, 1)[0]
        selector = pafs.FileSelector(path.rstrip("/"), recursive=True)
        found = sorted(
            info.path for info in filesystem.get_file_info(selector)
            if info.type == pafs.FileType.File and rollout_name(info.path)
        )  # fmt: skip
        files.extend(f"{scheme}{_URI_MARK}{p}" for p in found)
    return files


def _uri_stat(uri: str) -> tuple[int, int]:
    import pyarrow.fs as pafs

    filesystem, path = pafs.FileSystem.from_uri(uri)
    info = filesystem.get_file_info(path)
    if info.type != pafs.FileType.File:
        raise FileNotFoundError(uri)
    return int(info.size), int(info.mtime_ns or 0)


def _uri_digest(uri: str) -> str:
    import pyarrow.fs as pafs

    filesystem, path = pafs.FileSystem.from_uri(uri)
    with filesystem.open_input_stream(path) as stream:
        return stream_digest(stream.readinto)


def _ray_path(given: str) -> str:
    """The path Ray Data reads an input by (and reports in its ``path`` column)."""
    if is_uri(given):
        import pyarrow.fs as pafs

        return pafs.FileSystem.from_uri(given)[1]
    return os.path.abspath(given)


# --------------------------------------------------------------------------- the driver


def score_to_dataset_on_ray(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    directory: str | os.PathLike,
    *,
    options: BatchOptions,
    mapping: ColumnMapping | None,
    runs: str | Mapping[str, str],
    run_label: str | None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None,
    join: str,
    image_root: str | os.PathLike | None,
    workers: int | None,
    chunk_rows: int | None,
    progress: Callable[[Progress], None] | None,
) -> DatasetUpdate:
    """:func:`scoring.engines.score_to_dataset` on Ray (``engine="ray"``, which validates
    ``options`` and gives the defaults): the same folder, the same manifest.

    Connects to ``RAY_ADDRESS`` when set (or to the Ray this process already joined), else starts
    a local Ray with ``workers`` CPUs (default: all). ``directory`` must be a folder the driver
    and every node can write (a shared mount on a cluster). ``paths`` may be URIs (``s3://...``)
    read through pyarrow's filesystems; local paths must be inside ``ROLLOUTSCOPE_DATA_ROOTS``
    when that is set. ``progress`` is called as each file finishes; Ray Data shows its own progress
    bars unless ``RAY_DATA_DISABLE_PROGRESS_BARS=1`` (or ``DataContext.enable_progress_bars``) says not to.
    """
    started = time.perf_counter()
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    displays = [given_path if is_uri(given_path) else str(Path(given_path)) for given_path in map(os.fspath, given)]
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    instance_files = instance_paths(instances)
    access = default_access()
    for path in (*[d for d in displays if not is_uri(d)], *instance_files):
        access.check(path)  # before a byte is read: outside the data roots is refused
    refuse_bundles(
        displays, [d.lower().endswith(".zip") if is_uri(d) else looks_like_zip(d) for d in displays]
    )
    if len({d.split(_URI_MARK, 1)[0] if is_uri(d) else "" for d in displays}) > 1:  # one Ray Data read
        raise ValueError("the inputs are on several filesystems; score each filesystem's files separately")
    ray = _import_ray()

    def stat(position: int) -> tuple[int, int]:
        display = displays[position]
        if is_uri(display):
            return _uri_stat(display)
        status = Path(display).stat()
        return status.st_size, status.st_mtime_ns

    def digest(position: int) -> str:
        display = displays[position]
        return _uri_digest(display) if is_uri(display) else file_digest(display)

    plan = plan_update(
        displays,
        [Path(d) for d in displays],
        directory,
        stat=stat,
        digest=digest,
        record=options_record(options, mapping, runs, run_label, instance_files, join, image_root),
        runs=runs,
        run_label=run_label,
        started=started,
        digest_new=False,
    )
    # what Ray cannot read (missing, a folder...) is scored here: the local engine names the problem
    readable = [i for i in plan.to_score if plan.entries[i]["size"] is not None and _is_file(displays[i])]
    unreadable = [i for i in plan.to_score if i not in set(readable)]
    settings = _Settings(
        options=options,
        mapping=mapping,
        instances=[str(p) for p in instance_files] or None,
        join=join,
        image_root=None if image_root is None else str(image_root),
        chunk_rows=chunk_rows,
        force_run=plan.force_run,
        parts=str(plan.parts.resolve()),
        generation=plan.generation,
        cwd=os.getcwd(),
        code_version=plan.version,
    )
    results: dict[int, dict] = {}
    for position in unreadable:
        results[position] = _score_file(settings, _task(plan, displays, position), None)
    if readable:
        if not ray.is_initialized():  # else: the caller's Ray, whose workers must run this code
            init_ray(workers)
        total = sum(plan.entries[i]["size"] or 0 for i in readable)
        done_bytes = 0
        for result in _score_on_ray(ray, plan, displays, readable, settings):
            if result["code_version"] != plan.version:  # the worker scored nothing
                raise RuntimeError(
                    "the Ray workers run other scoring code than this driver (it changed since this Ray "
                    "started, or a node has another version); restart Ray, or install the same rolloutscope "
                    "on every node"
                )
            results[result["position"]] = result
            done_bytes += plan.entries[result["position"]]["size"] or 0
            if progress is not None:
                scored = results.values()
                progress(
                    Progress(
                        sum(r["written"]["rows"] for r in scored), sum(r["written"]["errors"] for r in scored),
                        done_bytes, total, displays[result["position"]], len(results), len(plan.to_score),
                        seconds=time.perf_counter() - started,
                    )
                )  # fmt: skip
    for position in plan.to_score:
        plan.scored(position, results[position]["written"])
    if plan.to_score:  # the first input's run errors, as the local engine takes its first group's
        plan.write_run_errors(pickle.loads(results[plan.to_score[0]]["other_errors"]))
    return plan.finish()


def _is_file(display: str) -> bool:
    if is_uri(display):
        return True  # stat found it a file
    return Path(display).is_file()


def _task(plan: UpdatePlan, displays: Sequence[str], position: int) -> _FileTask:
    display = displays[position]
    if is_uri(display):
        base_dir = display.rsplit("/", 1)[0]
        name = display.rsplit("/", 1)[1]
    else:
        base_dir = str(Path(display).resolve().parent)
        name = Path(display).name
    return _FileTask(position, display, name, base_dir, plan.labels[position])


def init_ray(workers: int | None = None, **init_kwargs: Any) -> None:
    """Join the Ray of ``RAY_ADDRESS`` when set, else start a local Ray with ``workers`` CPUs
    (``init_kwargs``: more ``ray.init`` arguments; a ``runtime_env`` given is added to). Either way its workers import this driver's
    ``scoring`` package -- sent as ``py_modules``, ahead of whatever a node has installed -- and
    read files under the driver's ``ROLLOUTSCOPE_*`` settings (data roots, limits)."""
    ray = _import_ray()
    environment: dict[str, Any] = dict(init_kwargs.pop("runtime_env", None) or {})
    environment["py_modules"] = [str(Path(__file__).resolve().parents[1]), *environment.get("py_modules", [])]
    settings = {name: value for name, value in os.environ.items() if name.startswith(SETTINGS_PREFIX)}
    environment["env_vars"] = {**settings, **environment.get("env_vars", {})}
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], runtime_env=environment, **init_kwargs)
    else:
        # a new Ray of our own (address=None would join a cluster some other `ray start` left running)
        ray.init(address="local", num_cpus=workers, runtime_env=environment, **init_kwargs)


def _score_on_ray(ray, plan, displays, positions, settings):
    """Each file's result as its task finishes (any order)."""
    tasks = {_ray_path(displays[i]): _task(plan, displays, i) for i in positions}
    read_paths = [os.path.abspath(displays[i]) if not is_uri(displays[i]) else displays[i] for i in positions]
    dataset = ray.data.read_datasource(
        _whole_files(read_paths), override_num_blocks=len(read_paths)  # a file per read task
    )
    with warnings.catch_warnings():
        # Ray Data 2.60-2.63 name no parameter for retries but take them as remote arguments,
        # which they mark deprecated (hence the extra's upper bound)
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        dataset = dataset.map_batches(
            _score_batch,
            batch_size=1,
            batch_format="pyarrow",
            fn_kwargs={"settings": settings, "tasks": tasks},
            max_retries=MAX_RETRIES,  # bounded: Ray Data's default retries a dying task forever
            retry_exceptions=[OSError],
        )
    for block in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
        for position, written, other, version in zip(
            block.column("position").to_pylist(),
            block.column("written").to_pylist(),
            block.column("other_errors").to_pylist(),
            block.column("code_version").to_pylist(),
            strict=True,
        ):
            yield {"position": position, "written": json.loads(written), "other_errors": other,
                   "code_version": version}  # fmt: skip


def _whole_files(paths: list[str]):
    """Ray Data's datasource of the files' bytes as stored (``bytes``, ``path``): what
    ``read_binary_files`` reads, but a ``.gz`` file is not decompressed on the way -- the scorer
    reads it itself, within the decompressed-size limit, and its digest is of the stored bytes."""
    from ray.data.datasource import FileBasedDatasource

    class StoredBytes(FileBasedDatasource):
        def resolve_compression(self, path, open_args):
            return None

        def _read_stream(self, f, path):
            yield pa.table({"bytes": pa.array([f.readall()], pa.binary())})

        def _rows_per_file(self):
            return 1

    return StoredBytes(paths, include_paths=True)


# --------------------------------------------------------------------------- the workers


@dataclass(frozen=True)
class _Settings:
    """The run-wide inputs of every file's task (sent once with the job)."""

    options: BatchOptions
    mapping: ColumnMapping | None
    instances: list[str] | None
    join: str
    image_root: str | None
    chunk_rows: int | None
    force_run: bool
    parts: str
    generation: int
    cwd: str
    code_version: str


_CODE_VERSION: str | None = None


def _code_version() -> str:
    global _CODE_VERSION
    if _CODE_VERSION is None:
        _CODE_VERSION = code_version()
    return _CODE_VERSION


def _score_batch(block: pa.Table, *, settings: _Settings, tasks: Mapping[str, _FileTask]) -> pa.Table:
    """Ray Data's batch function: score the files of ``block`` (``bytes``, ``path``), write their parts."""
    positions, written, others, versions = [], [], [], []
    for raw, path in zip(block.column("bytes"), block.column("path").to_pylist(), strict=True):
        task = tasks[path]
        result = _score_file(settings, task, raw.as_py())
        positions.append(task.position)
        written.append(json.dumps(result["written"]))
        others.append(result["other_errors"])
        versions.append(result["code_version"])
    return pa.table(
        {
            "position": pa.array(positions, pa.int64()),
            "written": pa.array(written, pa.string()),
            "other_errors": pa.array(others, pa.binary()),
            "code_version": pa.array(versions, pa.string()),
        }
    )


@dataclass
class _TaskPlan:
    """The plan a task's :class:`scoring.datasets.PartWriter` writes one input's parts for: its
    fields and the errors about no input come back to the driver, which writes the manifest."""

    parts: Path
    name: str
    written: dict | None = None
    run_errors: Any = None
    run_errors_written: bool = False

    def part_name(self, position: int) -> str:
        return self.name

    def scored(self, position: int, written: dict) -> None:
        self.written = written

    def write_run_errors(self, errors) -> None:
        self.run_errors, self.run_errors_written = errors, True


def _score_file(settings: _Settings, task: _FileTask, data: bytes | None) -> dict:
    """Score one input -- ``data``, its bytes, copied to a private temporary file; None: the file
    as the driver sees it (what cannot be read then gives the local engine's error) -- and write
    its parts. Runs in the driver's folder when this node has it, so relative instance paths mean
    what they mean to the driver. A worker running other code than the driver's scores nothing
    and says so (its ``code_version``)."""
    if _code_version() != settings.code_version:
        return {"position": task.position, "written": {}, "other_errors": b"", "code_version": _code_version()}
    here = settings.cwd if os.path.isdir(settings.cwd) else os.getcwd()
    with tempfile.TemporaryDirectory(prefix="rolloutscope-ray-") as folder, contextlib.chdir(here):
        access = default_access()
        if data is None:
            path = Path(task.display)
        else:
            path = Path(folder) / task.name
            path.write_bytes(data)
            access = access.with_root(folder)
        item = RunInput(display=task.display, path=path, base_dir=task.base_dir)
        plan = _TaskPlan(Path(settings.parts), f"{settings.generation:06d}-{task.position:05d}")
        with PartWriter(plan) as writer:
            stream_inputs(
                [item],
                [task.run],
                settings.force_run,
                sink=writer.sink([task.position]),
                options=settings.options,
                mapping=settings.mapping,
                instances=settings.instances,
                join=settings.join,
                image_root=settings.image_root,
                uploads=None,
                workers=1,
                chunk_rows=settings.chunk_rows,
                progress=None,
                option_kwargs={},
                access=access,
            )
            writer.end_group()
    written = plan.written
    if data is not None:
        written["digest"] = bytes_digest(data)
    other = plan.run_errors
    return {
        "position": task.position,
        "written": written,
        "other_errors": pickle.dumps(other, protocol=pickle.HIGHEST_PROTOCOL),
        "code_version": _code_version(),
    }


__all__ = ["MAX_RETRIES", "RAY_EXTRA", "RayUnavailable", "expand_uris", "is_uri", "score_to_dataset_on_ray"]
