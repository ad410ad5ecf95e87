"""Files in, one scored table out: inputs read in chunks, scored in worker processes, assembled in order."""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..rollouts import (
    ERROR,
    WARNING,
    ColumnMapping,
    DataAccess,
    ImageResolver,
    InstanceIndex,
    Layout,
    LayoutError,
    LineRange,
    RowError,
    Source,
    SourceError,
    default_access,
    detect_layout,
    errors_frame,
    in_batches,
    private_dir,
    unpack_inputs,
)
from ..verifier import SOLVER_MODULE

try:
    import msgspec as _msgspec
except ImportError:  # pragma: no cover
    _msgspec = None
from .chunks import Codes, Engine, dumps_or_text, init_worker, score_in_worker
from .columns import (
    ARROW_TEXT,
    CATEGORY_COLUMNS,
    CHUNKS_PER_WORKER,
    COLUMNS,
    DEFAULT_CHUNK_ROWS,
    INT_COLUMNS,
    LOGGED_PREFIX,
    MAX_CHUNK_BYTES,
    MAX_CHUNK_ROWS,
    MISMATCH_COLUMN,
    OPTION_COLUMNS,
    PARALLEL_MIN_ROWS,
    TRACE,
    BatchOptions,
    FileJob,
    Progress,
)
from .reports import JOIN_REPORT_COLUMNS, join_report, logged_vs_recomputed, with_logged_mismatch
from .transfer import LostResult, results_folder

log = logging.getLogger(__name__)


@dataclass
class ScoredRun:
    """The result of a batch: ``table`` (one row per rollout), ``errors`` (file, line,
    field, reason, severity, unit), and the layout detected for each file."""

    table: pd.DataFrame
    errors: pd.DataFrame
    layouts: dict[str, Layout] = field(default_factory=dict)
    options: BatchOptions = field(default_factory=BatchOptions)
    workers: int = 1
    #: the join asked for when instance files were given (``auto``, ``id``, ``prompt``, ``order``), else None
    join: str | None = None

    @property
    def error_count(self) -> int:
        return int((self.errors["severity"] == ERROR).sum()) if len(self.errors) else 0

    @property
    def warning_count(self) -> int:
        return int((self.errors["severity"] == WARNING).sum()) if len(self.errors) else 0

    def file_errors(self) -> pd.DataFrame:
        """Errors about whole files (no line): unreadable files, files with no usable row (file-level
        warnings, such as a JSON array in a .jsonl file, are not errors)."""
        return self.errors[self.errors["line"].isna() & (self.errors["severity"] == ERROR)]

    def logged_report(self, atol: float | None = None) -> pd.DataFrame:
        return logged_vs_recomputed(self.table, atol=self.options.logged_atol if atol is None else atol)

    def join_report(self) -> pd.DataFrame:
        """Per file, how its rows met the instances (:func:`join_report`); empty without instances."""
        if self.join is None:
            return pd.DataFrame(columns=list(JOIN_REPORT_COLUMNS))
        return join_report(self.table, self.errors, self.join)


# --------------------------------------------------------------------------- orchestration


def automatic_chunk_rows(rows: int, workers: int) -> int:
    """Records per chunk for ``rows`` estimated rows on ``workers`` processes (see :data:`MAX_CHUNK_ROWS`)."""
    return min(MAX_CHUNK_ROWS, max(DEFAULT_CHUNK_ROWS, rows // (workers * CHUNKS_PER_WORKER)))


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        # the workers fork from a server that imported these once, the verifier's solver with them
        context.set_forkserver_preload(["scoring.runs", SOLVER_MODULE])
        return context
    return multiprocessing.get_context("spawn")  # pragma: no cover - not POSIX


@dataclass
class RunInput:
    """A file (or in-memory records) waiting to be scored."""

    display: str
    path: Path | None = None
    records: Sequence[Mapping] | None = None
    source: Source | None = None
    sample: list = field(default_factory=list)
    estimated_rows: int = 0
    size: int = 0
    consumed: int = 0
    #: where its rows' relative image paths are looked up (default: the file's folder; a copy of
    #: a file fetched from elsewhere names the original's)
    base_dir: str | None = None


def _position(item: RunInput) -> int:
    """How far through the input: bytes of a file, records of an in-memory list."""
    return item.source.position() if item.source is not None else item.consumed


def _estimate_rows(source: Source, sample: list) -> int:
    if source.container == "parquet":
        try:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(source.path).metadata.num_rows)
        except Exception:
            return 0
    if not sample:
        return 0
    approx = sum(len(dumps_or_text(record)) + 1 for record in sample[:16]) / min(len(sample), 16)
    factor = 4.0 if source.path.name.lower().endswith((".gz", ".gzip")) else 1.0
    return int(source.size * factor / max(approx, 1.0))


def _default_label(paths: Sequence[Path]) -> str:
    if len(paths) == 1:
        return Path(paths[0]).name.split(".")[0]
    parents = {p.resolve().parent.name for p in paths}
    return parents.pop() if len(parents) == 1 and "" not in parents else "run"


def run_labels(paths: Sequence[Path], runs: str | Mapping, run_label: str | None) -> tuple[list[str], bool]:
    if isinstance(runs, Mapping):
        labels = [str(runs.get(str(p), runs.get(p.name, run_label or p.name.split(".")[0]))) for p in paths]
        return labels, True
    if runs == "separate":
        stems = [p.name.split(".")[0] for p in paths]
        counts = Counter(stems)
        labels = [
            (f"{p.resolve().parent.name}/{stem}" if counts[stem] > 1 else stem)
            for p, stem in zip(paths, stems, strict=True)
        ]
        return labels, True
    if runs != "one":
        raise ValueError(f"runs must be 'one', 'separate' or a mapping of file -> label, got {runs!r}")
    return [run_label or _default_label(paths)] * len(paths), run_label is not None


def score_files(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    options: BatchOptions | None = None,
    mapping: ColumnMapping | None = None,
    runs: str | Mapping[str, str] = "one",
    run_label: str | None = None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    join: str = "auto",
    image_root: str | os.PathLike | None = None,
    uploads: Mapping[str, bytes | str | os.PathLike] | None = None,
    workers: int | None = None,
    chunk_rows: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    access: DataAccess | None = None,
    **option_kwargs: Any,
) -> ScoredRun:
    """Score rollout files into one table.

    ``paths``: one file or several. ``runs="one"`` makes them one run (labelled
    ``run_label``, else the file stem or their folder's name); ``"separate"``
    makes one run per file (labelled by file stem); a mapping gives labels.
    ``mapping`` overrides the detected column roles. ``instances`` are trace
    instance files joined to rows that lack ground truth (``join``: auto, id,
    prompt, order). ``image_root`` is an image folder or zip, ``uploads`` maps
    uploaded file names to bytes or paths. ``workers``: None picks processes
    automatically for large inputs (>= ``PARALLEL_MIN_ROWS`` estimated rows), 1
    forces the single-process path. ``chunk_rows``: records handed to a worker at a
    time (None: :func:`automatic_chunk_rows`); the table is the same for any.
    ``option_kwargs`` are :class:`BatchOptions` fields (``answer_weight=0.7``...).
    Raises ValueError for invalid options; every problem with the input lands in
    ``errors``.

    A ``.zip`` among ``paths`` is a bundle: its rollout files are read (named
    ``archive!member``) with its images beside them, and the table's ``image_ref``
    points into the archive (``zip:<archive>!<member>``). ``access`` says where files
    may be read and the limits on reading them (default: the environment's,
    ``ROLLOUTSCOPE_DATA_ROOTS`` and ``ROLLOUTSCOPE_MAX_...``).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError("no input files")
    access = access or default_access()
    with contextlib.ExitStack() as stack:

        def workdir() -> str:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="rolloutscope-bundle-"))
            return str(private_dir(folder))

        unpacked = unpack_inputs(paths, access, workdir)
        for folder in unpacked.folders:
            access = access.with_root(folder)
        if image_root is None and len(unpacked.folders) == 1:
            image_root = unpacked.folders[0]  # paths relative to the zip's top
        given = [Path(p) for p in paths]
        labels, force = run_labels(unpacked.files if runs != "one" else given, runs, run_label)
        if runs == "one":
            labels = labels[:1] * len(unpacked.files)
        inputs = [RunInput(display=d, path=p) for p, d in zip(unpacked.files, unpacked.displays, strict=True)]
        run = score_inputs(
            inputs,
            labels,
            force,
            options=options,
            mapping=mapping,
            instances=instances,
            join=join,
            image_root=image_root,
            uploads=uploads,
            workers=workers,
            chunk_rows=chunk_rows,
            progress=progress,
            option_kwargs=option_kwargs,
            access=access,
        )
        if unpacked.problems:
            problems = errors_frame(RowError(f, None, None, r, unit="file") for f, r in unpacked.problems)
            run.errors = pd.concat([problems, run.errors], ignore_index=True) if len(run.errors) else problems
        if unpacked.origins and "image_ref" in run.table:
            run.table["image_ref"] = _refs_into_archives(run.table["image_ref"], unpacked.origins)
    return run


def _refs_into_archives(refs: pd.Series, origins: Mapping[str, tuple[str, str]]) -> pd.Series:
    """Image refs to files unpacked from a bundle, as ``zip:<archive>!<member>`` (the unpacked
    copy is removed when scoring ends)."""
    moved = {path: f"zip:{archive}!{member}" for path, (archive, member) in origins.items()}
    if isinstance(refs.dtype, pd.CategoricalDtype):
        return refs.cat.rename_categories([moved.get(c, c) for c in refs.cat.categories])
    return refs.map(lambda ref: moved.get(ref, ref) if isinstance(ref, str) else ref).astype(refs.dtype)


def score_records(
    records: Iterable[Mapping],
    *,
    name: str = "<rows>",
    base_dir: str | os.PathLike | None = None,
    options: BatchOptions | None = None,
    mapping: ColumnMapping | None = None,
    run_label: str | None = None,
    instances: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    join: str = "auto",
    image_root: str | os.PathLike | None = None,
    uploads: Mapping[str, bytes | str | os.PathLike] | None = None,
    workers: int | None = 1,
    chunk_rows: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    access: DataAccess | None = None,
    **option_kwargs: Any,
) -> ScoredRun:
    """Score in-memory records (dicts) as if they were one file called ``name``."""
    records = list(records)
    item = RunInput(display=name, records=records)
    item.path = Path(base_dir or ".") / "__records__"
    return score_inputs(
        [item],
        [run_label or name],
        run_label is not None,
        options=options,
        mapping=mapping,
        instances=instances,
        join=join,
        image_root=image_root,
        uploads=uploads,
        workers=workers,
        chunk_rows=chunk_rows,
        progress=progress,
        option_kwargs=option_kwargs,
        access=access,
    )


@dataclass
class PreparedRun:
    """Inputs opened and their layouts detected (:func:`prepare_run`): what scoring them needs.
    ``errors``: what opening found (the instance files', each input's notes and refusals)."""

    options: BatchOptions
    resolver: ImageResolver
    index: InstanceIndex | None
    errors: list[RowError]
    jobs: list[tuple[RunInput, FileJob]]
    layouts: dict[str, Layout]
    workers: int
    chunk_rows: int
    rows_total: int
    bytes_total: int
    join: str | None


def prepare_run(
    inputs: list[RunInput],
    labels: list[str],
    force_run: bool,
    *,
    options: BatchOptions | None,
    mapping: ColumnMapping | None,
    instances,
    join: str,
    image_root,
    uploads,
    workers: int | None,
    chunk_rows: int | None,
    option_kwargs: Mapping[str, Any],
    access: DataAccess | None = None,
) -> PreparedRun:
    """Open every input, detect its layout from its first records, and size the work: what
    :func:`score_inputs` and :func:`scoring.runs.stream_inputs` share."""
    options = replace(options or BatchOptions(), **option_kwargs).validated()
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    access = access or default_access()
    resolver = ImageResolver(image_root=image_root, uploads=uploads, access=access)
    errors: list[RowError] = []
    index = None
    if instances:
        instance_paths = [instances] if isinstance(instances, (str, os.PathLike)) else list(instances)
        index = InstanceIndex(instance_paths, join=join, access=access)
        errors.extend(index.errors)
    simple = options.scorer != TRACE

    # open every input and detect its layout
    jobs: list[tuple[RunInput, FileJob]] = []
    layouts: dict[str, Layout] = {}
    for key, (item, label) in enumerate(zip(inputs, labels, strict=True)):
        try:
            if item.records is not None:
                sample = [r for r in item.records[:32] if isinstance(r, Mapping)]
                unit = "row"
                item.size = len(item.records)
            else:
                item.source = Source(item.path, display=item.display, access=access)
                errors.extend(item.source.notes)
                sample = item.source.sample(32)
                unit = item.source.unit
                item.size = item.source.size
            if not sample:
                _drain_errors(item, errors)
                errors.append(
                    RowError(
                        item.display,
                        None,
                        None,
                        "no usable row: no line could be read as a record",
                        unit=unit,
                    )
                )
                continue
            layout = detect_layout(
                sample,
                path=item.path if item.records is None else None,
                mapping=mapping,
                simple=simple,
                joined=index is not None,
            )
        except SourceError as exc:
            errors.append(exc.error)
            continue
        except LayoutError as exc:
            errors.append(
                RowError(item.display, None, None, str(exc), unit=item.source.unit if item.source else "row")
            )
            continue
        item.estimated_rows = (
            len(item.records) if item.records is not None else _estimate_rows(item.source, sample)
        )
        layouts[item.display] = layout
        base_dir = item.base_dir or str(item.path.resolve().parent)
        jobs.append((item, FileJob(key, item.display, unit, layout, base_dir, label, force_run)))

    total_rows = sum(item.estimated_rows for item, _ in jobs)
    if workers is None:
        workers = min(available_cpus(), 8) if total_rows >= PARALLEL_MIN_ROWS else 1
    workers = max(1, int(workers))
    if chunk_rows is None:
        chunk_rows = automatic_chunk_rows(total_rows, workers)
    return PreparedRun(
        options=options,
        resolver=resolver,
        index=index,
        errors=errors,
        jobs=jobs,
        layouts=layouts,
        workers=workers,
        chunk_rows=chunk_rows,
        rows_total=total_rows,
        bytes_total=sum(item.size for item, _ in jobs) or total_rows,
        join=join if index is not None else None,
    )


class InputTally:
    """What one input's chunks gave so far: its rows, and -- while it has none -- its errors by
    (field, reason), for the error that says why a file gave no usable row."""

    #: Distinct (field, reason) pairs counted at most (reasons that quote values can be many).
    REASONS_MAX = 10_000

    def __init__(self, job: FileJob):
        self.job = job
        self.rows = 0
        self.failures = 0
        self.reasons: Counter = Counter()

    def add(self, result: dict[str, Any]) -> None:
        self.rows += result["n"]
        if self.rows:
            self.reasons.clear()
            return
        for error in result["errors"]:
            if error.severity == ERROR:
                self.failures += 1
                key = (error.field, error.reason if len(error.reason) < 120 else error.reason[:117] + "...")
                if key in self.reasons or len(self.reasons) < self.REASONS_MAX:
                    self.reasons[key] += 1

    def no_rows_error(self) -> RowError | None:
        """The file-level error of an input that gave no row, None when it gave some."""
        if self.rows:
            return None
        if self.failures:
            common, count = self.reasons.most_common(1)[0]
            field_note = f"field '{common[0]}': " if common[0] else ""
            reason = f"no usable row: all {self.failures} rows failed; most often ({count}x) {field_note}{common[1]}"
        else:
            reason = "no usable row: the file holds no records"
        return RowError(self.job.display, None, None, reason, unit=self.job.unit)


def scored_chunks(
    run: PreparedRun, progress: Callable[[Progress], None] | None = None
) -> Iterator[tuple[FileJob, dict[str, Any] | None]]:
    """Each chunk's result (``columns``, ``n``, ``errors``) in input order, then ``(job, None)``
    once an input's last chunk is given. In worker processes when ``run.workers`` > 1 (one
    process when they cannot start: the same results): at most four chunks per worker, and two
    chunks' worth of bytes (:data:`MAX_CHUNK_BYTES`), are out at a time, so the reading never
    runs far ahead of the caller taking the results."""

    def tasks(ranged: bool) -> Iterator[tuple[FileJob, int, list | LineRange | None, RunInput]]:
        """Each input's chunks; with ``ranged``, a plain JSONL file's as :class:`LineRange` s
        its worker reads itself (not when joining instances, whose join takes the ordinals)."""
        for item, job in run.jobs:
            if item.records is not None:
                items = (
                    (
                        i,
                        r
                        if isinstance(r, Mapping)
                        else RowError(item.display, i, None, "row is not a mapping", unit="row"),
                    )
                    for i, r in enumerate(item.records, 1)
                )
                batches = in_batches(items, run.chunk_rows)
            else:
                batches = item.source.line_ranges(run.chunk_rows, MAX_CHUNK_BYTES) if ranged else None
                if batches is None:
                    batches = item.source.item_batches(run.chunk_rows, MAX_CHUNK_BYTES)
            start = 0
            for batch in batches:
                item.consumed = start + len(batch)
                yield job, start, batch, item
                start += len(batch)
            yield job, start, None, item

    started = time.perf_counter()
    state = {"rows": 0, "errors": 0, "files_done": 0}
    finished_bytes = 0

    def report(result: dict[str, Any] | None, job: FileJob, item: RunInput, position: int) -> None:
        nonlocal finished_bytes
        if result is None:
            finished_bytes += item.size
            state["files_done"] += 1
            return
        state["rows"] += result["n"]
        state["errors"] += sum(1 for e in result["errors"] if e.severity == ERROR)
        if progress is not None:
            progress(
                Progress(
                    state["rows"], state["errors"], finished_bytes + position, run.bytes_total, job.display,
                    state["files_done"], len(run.jobs), run.rows_total, time.perf_counter() - started,
                )
            )  # fmt: skip

    pool_cm = None
    if run.workers > 1:
        from concurrent.futures.process import BrokenProcessPool

        try:
            pool_cm = _pool(run.workers, _mp_context(), run.options, run.resolver, run.index)
        except (BrokenProcessPool, OSError):  # no processes here: the single-process path gives the same rows
            run.workers = 1
    if pool_cm is None:
        engine = Engine(run.options, run.resolver, run.index)
        for job, start, batch, item in tasks(False):
            result = None if batch is None else engine.score_chunk(job, start, batch)
            report(result, job, item, _position(item))
            yield job, result
    else:
        with pool_cm as pool:
            pending: deque = deque()
            out_bytes, budget = 0, run.workers * 2 * MAX_CHUNK_BYTES
            here = _ScoredHere(run)
            for job, start, batch, item in tasks(run.index is None):
                if batch is None:
                    weight = 0
                elif type(batch) is LineRange:
                    weight = batch.weight
                else:
                    weight = sum([len(p) for _, p in batch if type(p) is bytes])
                future = None if batch is None else pool.submit(score_in_worker, job, start, batch)
                # the batch is kept until its result is in: a result lost on its way is scored here
                pending.append((future, job, start, batch, item, _position(item), weight))
                out_bytes += weight
                while len(pending) > run.workers * 4 or (out_bytes > budget and len(pending) > 1):
                    future, pjob, pstart, pbatch, pitem, ppos, pweight = pending.popleft()
                    out_bytes -= pweight
                    result = None if future is None else here.unless_lost(future.result(), pjob, pstart, pbatch)
                    report(result, pjob, pitem, ppos)
                    yield pjob, result
            while pending:
                future, pjob, pstart, pbatch, pitem, ppos, _ = pending.popleft()
                result = None if future is None else here.unless_lost(future.result(), pjob, pstart, pbatch)
                report(result, pjob, pitem, ppos)
                yield pjob, result
    if progress is not None:
        progress(
            Progress(
                state["rows"], state["errors"], run.bytes_total, run.bytes_total, "", len(run.jobs), len(run.jobs),
                run.rows_total, time.perf_counter() - started,
            )
        )  # fmt: skip


class _ScoredHere:
    """A worker's result that came back as a :class:`~scoring.runs.transfer.LostResult` (its file
    in ``/dev/shm`` removed before it was read), scored again in this process: the same rows."""

    def __init__(self, run: PreparedRun):
        self.run = run
        self.engine: Engine | None = None

    def unless_lost(self, result: Any, job: FileJob, start: int, batch: Any) -> dict[str, Any]:
        if type(result) is not LostResult:
            return result
        log.warning("a worker's result for %s was lost (%s): its chunk is scored again here", job.display,
                    result.reason)  # fmt: skip
        if self.engine is None:
            self.engine = Engine(self.run.options, self.run.resolver, self.run.index)
        return self.engine.score_chunk(job, start, batch)


def with_option_columns(table: pd.DataFrame, options: BatchOptions) -> pd.DataFrame:
    """``table`` with the run-wide weights as given (:data:`OPTION_COLUMNS`) on its trace rows."""
    trace_rows = table["scorer"].to_numpy(dtype=object) == TRACE
    for column, value in zip(OPTION_COLUMNS, (options.answer_weight, options.annotation_weight), strict=True):
        table[column] = np.where(trace_rows, float(value), math.nan)
    return table


def score_inputs(
    inputs: list[RunInput],
    labels: list[str],
    force_run: bool,
    *,
    options: BatchOptions | None,
    mapping: ColumnMapping | None,
    instances,
    join: str,
    image_root,
    uploads,
    workers: int | None,
    chunk_rows: int | None,
    progress: Callable[[Progress], None] | None,
    option_kwargs: Mapping[str, Any],
    access: DataAccess | None = None,
) -> ScoredRun:
    """Score opened inputs into one table held in memory (:func:`score_files`' engine; the
    dataset engines stream instead: :func:`scoring.runs.stream_inputs`)."""
    run = prepare_run(
        inputs, labels, force_run, options=options, mapping=mapping, instances=instances, join=join,
        image_root=image_root, uploads=uploads, workers=workers, chunk_rows=chunk_rows,
        option_kwargs=option_kwargs, access=access,
    )  # fmt: skip
    errors = run.errors
    collected: list[dict[str, Any]] = []
    no_rows: list[RowError] = []
    tallies: dict[int, InputTally] = {}
    for job, result in scored_chunks(run, progress):
        tally = tallies.setdefault(job.key, InputTally(job))
        if result is None:
            error = tally.no_rows_error()
            if error is not None:
                no_rows.append(error)
            continue
        tally.add(result)
        collected.append(result["columns"])
        errors.extend(result["errors"])
    errors.extend(no_rows)
    table = with_option_columns(assemble_table(collected), run.options)
    table = with_logged_mismatch(table, run.options.logged_atol)
    table.attrs["scoring_options"] = asdict(run.options)
    return ScoredRun(
        table=table,
        errors=errors_frame(errors),
        layouts=run.layouts,
        options=run.options,
        workers=run.workers,
        join=run.join,
    )


def _ready() -> int:
    return os.getpid()


@contextlib.contextmanager
def _main_not_reimported():
    """Worker processes would re-import the caller's ``__main__`` (a script, an app):
    hide it while they start. Everything they run lives in this package."""
    main = sys.modules.get("__main__")
    saved = {}
    if main is not None:
        for attribute in ("__file__", "__spec__"):
            if getattr(main, attribute, None) is not None:
                saved[attribute] = getattr(main, attribute)
        if "__file__" in saved:
            del main.__file__
        if "__spec__" in saved:
            main.__spec__ = None
    try:
        yield
    finally:
        for attribute, value in saved.items():
            setattr(main, attribute, value)


class _pool:
    """A started ProcessPoolExecutor (every worker up), shut down without waiting on errors; its
    workers ship their results through a folder of its own (:mod:`scoring.runs.transfer`),
    removed with whatever is left in it when the pool ends."""

    def __init__(self, workers, context, options, resolver, index):
        from concurrent.futures import ProcessPoolExecutor

        self.cleanup = contextlib.ExitStack()
        results = self.cleanup.enter_context(results_folder())
        try:
            self.executor = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=init_worker,
                initargs=(options, resolver, index, results),
            )
        except BaseException:
            self.cleanup.close()
            raise
        try:
            with _main_not_reimported():
                futures = [self.executor.submit(_ready) for _ in range(workers)]
            for future in futures:
                future.result()
        except BaseException:
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.cleanup.close()
            raise

    def __enter__(self):
        return self.executor

    def __exit__(self, exc_type, exc, tb):
        try:
            self.executor.shutdown(wait=exc_type is None, cancel_futures=exc_type is not None)
        finally:
            self.cleanup.close()
        return False


def _drain_errors(item: RunInput, errors: list[RowError]) -> None:
    if item.source is None:
        return
    try:
        for _, record in item.source.records():
            if isinstance(record, RowError):
                errors.append(record)
    except SourceError as exc:
        errors.append(exc.error)


def _categorical(parts: list[Codes]) -> pd.Categorical:
    """One categorical from the chunks' codes; categories sorted, whatever the chunking."""
    categories = sorted({c for part in parts for c in part.categories})
    index = {c: i for i, c in enumerate(categories)}
    pieces = []
    for part in parts:
        remap = np.array([index[c] for c in part.categories] + [-1], dtype=np.int32)
        pieces.append(remap[part.codes])  # code -1 picks the trailing -1
    codes = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int32)
    return pd.Categorical.from_codes(codes, categories=categories, validate=False)


def assemble_table(collected: list[dict[str, Any]]) -> pd.DataFrame:
    names: dict[str, None] = {}
    for columns in collected:
        for name in columns:
            names.setdefault(name, None)
    lengths = [len(columns["source_line"][0]) for columns in collected]
    total = sum(lengths)
    data: dict[str, Any] = {}
    for name in names:
        if name in ARROW_TEXT:
            chunks = [columns[name] for columns in collected]
            data[name] = pd.array(pa.chunked_array(chunks, type=pa.string()), dtype="str")
        elif name in CATEGORY_COLUMNS:
            data[name] = _categorical([columns[name] for columns in collected])
        elif name in INT_COLUMNS:
            values = np.concatenate([columns[name][0] for columns in collected])
            mask = np.concatenate([columns[name][1] for columns in collected])
            data[name] = pd.arrays.IntegerArray(values, mask)
        elif name == "solved":
            data[name] = np.concatenate([c[name] for c in collected])
        else:
            parts = [
                columns[name] if name in columns else np.full(length, math.nan)
                for columns, length in zip(collected, lengths, strict=True)
            ]
            data[name] = np.concatenate(parts)
    for name in COLUMNS:
        if name not in data and name not in OPTION_COLUMNS and name != MISMATCH_COLUMN:
            if name in ARROW_TEXT:
                data[name] = pd.array(pa.nulls(total, type=pa.string()), dtype="str")
            elif name in CATEGORY_COLUMNS:
                data[name] = pd.Categorical.from_codes(np.full(total, -1, dtype=np.int32), categories=[])
            elif name in INT_COLUMNS:
                data[name] = pd.arrays.IntegerArray(
                    np.zeros(total, dtype=np.int64), np.ones(total, dtype=bool)
                )
            elif name == "solved":
                data[name] = np.zeros(total, dtype=bool)
            else:
                data[name] = np.full(total, math.nan)
    ordered = [c for c in COLUMNS if c in data]
    logged = sorted(c for c in data if c.startswith(LOGGED_PREFIX) and c != MISMATCH_COLUMN)
    rest = [c for c in data if c not in ordered and c not in logged]
    return pd.DataFrame({name: data[name] for name in (*ordered, *rest, *logged)}, copy=False)
