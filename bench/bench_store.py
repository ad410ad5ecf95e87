"""Benchmark of the scored dataset on disk (scoring.datasets) against the in-memory path.

    python bench/bench_store.py                   # 1,000,000 rows in 20 step files (long; memory-hungry)
    python bench/bench_store.py --rows 100000     # quicker

The rows are bench_batch.py's mixed rollouts (about 1.5 KB responses, all annotation types,
both output modes, some image rows), written as ``--files`` step files. Prints, with the
machine's core count:

- in memory: ``score_files`` on the folder (wall s, in a fresh process), and its table's bytes per row;
- dataset: ``score_to_dataset`` into a fresh folder, keeping its opened table (wall s; ratio to in
  memory, the two alternating ``--score-repeat`` times). Target for 1M rows: <= 60 s on 2 cores;
- unchanged re-check: ``score_to_dataset`` again, nothing changed (median s). Target < 2 s;
- one new 10,000-row step file added (s);
- ``open_dataset`` in a fresh process, from the table the dataset keeps and (that table hidden)
  by decoding the parts (s; ratio); RSS growth (MB; ratio to the in-memory table's) and
  bytes per row the table holds (``datasets.held_bytes``: ``memory_usage(deep=True)``, a float
  array shared by equal columns counted once; aim <= 150), overall and per column group, each
  beside the in-memory table's (ratio), and the columns that weigh most;
- ``row_text`` of one row (median ms over ``--probes`` random rows), and a whole row with
  ``rows_with_text`` + ``explain_row`` (median ms).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_batch import make_row  # noqa: E402

STEP_ROWS_NEW = 10_000


def write_step(path: Path, first: int, n: int, seed: int, image: str) -> None:
    """Rows ``first .. first + n - 1`` of the run as one step file (ids unique across files)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(first, first + n):
            handle.write(json.dumps(make_row(i, rng, image)) + "\n")


def write_run(folder: Path, rows: int, files: int, seed: int) -> tuple[Path, list[Path]]:
    """``rows`` rows as ``files`` step files in ``folder/run`` (their images point to one 800x600
    PNG in ``folder``): the image and the step files."""
    from PIL import Image

    image = folder / "img.png"
    Image.new("RGB", (800, 600), "white").save(image)
    data = folder / "run"
    data.mkdir()
    per_file = -(-rows // files)
    paths = []
    for f in range(files):
        first = f * per_file
        n = min(per_file, rows - first)
        if n <= 0:
            break
        path = data / f"step_{f:04d}.jsonl"
        write_step(path, first, n, seed + f, str(image))
        paths.append(path)
    return image, paths


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


#: Run in a fresh process: what opening costs (RSS growth), without this process's heap.
_CHILD = r"""
import gc, json, os, sys, time
sys.path.insert(0, sys.argv[1])
def rss():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
import resource
import numpy, pandas, pyarrow, pyarrow.parquet
from scoring import datasets, runs
gc.collect()
before = rss()
started = time.perf_counter()
if sys.argv[2] == "dataset":
    table = datasets.open_dataset(sys.argv[3]).table
else:
    table = runs.score_files(sys.argv[3:], workers=None).table
seconds = time.perf_counter() - started
gc.collect()
usage = table.memory_usage(deep=True, index=False)
held = datasets.held_bytes(table)
print(json.dumps({
    "seconds": seconds,
    "rss_growth": rss() - before,
    "rss_peak_growth": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before,
    "rows": len(table),
    "bytes": int(held.sum()),
    "named_bytes": int(usage.sum()),
    "columns": {name: int(value) for name, value in held.items()},
}))
"""


@contextlib.contextmanager
def table_hidden(dataset: Path):
    """The dataset without the opened table it keeps (``DIR/table``), as an older dataset is:
    opening it decodes the parts. Put back on leaving."""
    from scoring import datasets

    hidden = dataset / f".{datasets.TABLE}-hidden"
    (dataset / datasets.TABLE).rename(hidden)
    try:
        yield
    finally:
        hidden.rename(dataset / datasets.TABLE)


def in_child(*argv: str) -> dict:
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, root, *argv], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def column_group(name: str) -> str:
    """The group a table column is counted in."""
    from scoring import datasets, runs

    if name in datasets.STORED_TEXT_COLUMNS:
        return "text (on disk when opened)"
    if name in runs.INT_COLUMNS:
        return "integers (line, step, sample index)"
    if name in runs.CATEGORY_COLUMNS or name == runs.MISMATCH_COLUMN:
        return "categories"
    if name in runs.TEXT_COLUMNS:
        return "ids (row, instance)"
    if name.startswith(runs.LOGGED_PREFIX):
        return "logged values"
    if name in runs.DIAGNOSTIC_KEYS:
        return "annotation diagnostics"
    if name == "solved":
        return "solved flag"
    return "results and other numbers"


def print_groups(opened: dict, memory: dict) -> None:
    """Bytes per row of each column group, opened beside in memory, and the heaviest columns."""
    groups: dict[str, list[float]] = {}
    for which, measured in enumerate((opened, memory)):
        for name, value in measured["columns"].items():
            groups.setdefault(column_group(name), [0.0, 0.0])[which] += value / measured["rows"]
    print("  bytes per row by column group: opened / in memory (ratio)")
    for group, (mine, theirs) in sorted(groups.items(), key=lambda item: -item[1][1]):
        ratio = f"{mine / theirs:.2f}x" if theirs else "-"
        print(f"    {group:<38} {mine:8.1f} / {theirs:8.1f}  ({ratio})")
    top = sorted(opened["columns"].items(), key=lambda item: -item[1])[:8]
    print("  heaviest opened columns (B/row): " + ", ".join(f"{n} {v / opened['rows']:.1f}" for n, v in top))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=20, help="step files the rows are written as")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the unchanged re-check")
    parser.add_argument("--score-repeat", type=int, default=3, help="alternating runs of both scoring paths")
    parser.add_argument("--probes", type=int, default=25, help="random rows whose text is read")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=None, help="default: auto (every core)")
    args = parser.parse_args(argv)


    from scoring import datasets, engines
    from scoring.datasets import parts as dataset_parts
    from scoring.runs import explain_row

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("command:", "python bench/bench_store.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print(f"machine: {cores} cores, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench_store_") as tmp:
        folder = Path(tmp)
        image, paths = write_run(folder, args.rows, args.files, args.seed)
        data = folder / "run"
        megabytes = sum(p.stat().st_size for p in paths) / 1e6
        print(f"input: {args.rows:,} rows in {len(paths)} files, {megabytes:.0f} MB JSONL")

        # the two paths alternate, so that load from other tenants weighs on both alike
        memory_runs, dataset_runs = [], []
        for attempt in range(args.score_repeat):
            memory = in_child("memory", *map(str, paths))
            memory_runs.append(memory["seconds"])
            dataset = folder / f"dataset_{attempt}"
            started = time.perf_counter()
            update = engines.score_to_dataset(paths, dataset, workers=args.workers)
            dataset_runs.append(time.perf_counter() - started)
            assert update.rows == args.rows, update.describe()
        ratio = statistics.median(d / m for d, m in zip(dataset_runs, memory_runs, strict=True))
        scored = statistics.median(dataset_runs)
        disk = sum(p.stat().st_size for p in (dataset / datasets.PARTS).iterdir()) / 1e6
        print(
            f"in memory (score_files, fresh process): median {statistics.median(memory_runs):.1f} s "
            f"(runs: {', '.join(f'{t:.1f}' for t in memory_runs)}); RSS growth "
            f"{memory['rss_growth'] / 1e6:.0f} MB; table {memory['bytes'] / memory['rows']:.0f} B/row"
        )
        print(
            f"score into dataset: median {scored:.1f} s (runs: {', '.join(f'{t:.1f}' for t in dataset_runs)}); "
            f"{ratio:.2f}x in memory (median of paired runs); {args.rows / scored:,.0f} rows/s; "
            f"{disk:.0f} MB on disk"
        )

        rechecks = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            again = engines.score_to_dataset(paths, dataset, workers=args.workers)
            rechecks.append(time.perf_counter() - started)
            assert again.rows_scored == 0, again.describe()
        print(
            f"unchanged re-check ({len(paths)} files): median {statistics.median(rechecks) * 1e3:.0f} ms "
            f"(runs: {', '.join(f'{t * 1e3:.0f}' for t in rechecks)})"
        )

        added = data / "step_new.jsonl"
        write_step(added, args.rows, STEP_ROWS_NEW, args.seed - 1, str(image))
        started = time.perf_counter()
        grown = engines.score_to_dataset([*paths, added], dataset, workers=args.workers)
        print(
            f"one new {STEP_ROWS_NEW:,}-row file: {time.perf_counter() - started:.1f} s "
            f"({grown.rows_scored:,} rows scored, {len(grown.unchanged)} files unchanged)"
        )

        opened = in_child("dataset", str(dataset))  # the table the dataset keeps, read
        with table_hidden(dataset):  # a dataset without it: the parts decoded
            decoded = in_child("dataset", str(dataset))
        table_mb = sum(p.stat().st_size for p in (dataset / datasets.TABLE).rglob("*") if p.is_file()) / 1e6
        print(
            f"open_dataset (fresh process), the table the dataset keeps ({table_mb:.0f} MB) read: "
            f"{opened['seconds']:.2f} s; without it, the parts decoded: {decoded['seconds']:.2f} s "
            f"({opened['seconds'] / decoded['seconds']:.2f}x); RSS growth {decoded['rss_growth'] / 1e6:.0f} MB decoded"
        )
        per_row = opened["bytes"] / opened["rows"]
        in_memory = memory["bytes"] / memory["rows"]
        print(
            f"opened table: RSS growth {opened['rss_growth'] / 1e6:.0f} MB "
            f"({opened['rss_growth'] / memory['rss_growth']:.2f}x in memory); table {per_row:.1f} B/row "
            f"({per_row / in_memory:.3f}x the in-memory table's {in_memory:.0f}; memory_usage, which counts a "
            f"shared array once per name: {opened['named_bytes'] / opened['rows']:.1f})"
        )
        print_groups(opened, memory)

        ds = datasets.open_dataset(dataset)
        rng = random.Random(args.seed)
        probes = [rng.randrange(len(ds.table)) for _ in range(args.probes)]
        text_ms, explain_ms = [], []
        for row in probes:
            started = time.perf_counter()
            datasets.row_text(ds, [row])
            text_ms.append((time.perf_counter() - started) * 1e3)
            started = time.perf_counter()
            explain_row(datasets.rows_with_text(ds, [row]), row)
            explain_ms.append((time.perf_counter() - started) * 1e3)
        print(
            f"row_text of one row: median {statistics.median(text_ms):.1f} ms (max {max(text_ms):.1f}); "
            f"rows_with_text + explain_row: median {statistics.median(explain_ms):.1f} ms; "
            f"{dataset_parts.TEXT_ROW_GROUP_ROWS:,} rows per text row group"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
