"""The data bench_dashboard.py measures the app on: step files of mixed rollouts scored into the
app's cache, and copies of that dataset under other run names (ten million rows without scoring
them again)."""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from bench_store import STEP_ROWS_NEW, write_step

MB = 1e6


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def write_steps(folder: Path, rows: int, files: int, seed: int, image: Path) -> list[Path]:
    """``rows`` rollouts as ``files`` step files (bench_store.write_step), written on every core."""
    folder.mkdir(parents=True, exist_ok=True)
    per_file = -(-rows // files)
    jobs = []
    for f in range(files):
        first = f * per_file
        n = min(per_file, rows - first)
        if n > 0:
            jobs.append((folder / f"step_{f:04d}.jsonl", first, n, seed + f, str(image)))
    with ProcessPoolExecutor(max_workers=cores()) as pool:
        list(pool.map(write_step, *zip(*jobs, strict=True)))
    return [job[0] for job in jobs]


def build(work: Path, rows: int, files: int, seed: int, workers: int | None) -> tuple[Path, Path, dict]:
    """The step files (written unless ``work`` holds them for these arguments) and their dataset in
    the app's cache; ``(run folder, dataset folder, what the build did)``."""
    from PIL import Image

    from dashboard import loading, sources

    run_dir, pending = work / "run", work / "pending"
    wanted = {"rows": rows, "files": files, "seed": seed}
    marker = work / "bench_steps.json"
    follow_file = run_dir / follow_name(files)
    follow_file.unlink(missing_ok=True)  # left by an interrupted follow measurement
    written = 0.0
    if not (marker.is_file() and json.loads(marker.read_text()) == wanted):
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(pending, ignore_errors=True)
        marker.unlink(missing_ok=True)
        image = work / "img.png"
        Image.new("RGB", (800, 600), "white").save(image)
        started = time.perf_counter()
        write_steps(run_dir, rows, files, seed, image)
        written = time.perf_counter() - started
        marker.write_text(json.dumps(wanted))
    pending.mkdir(exist_ok=True)
    if not (pending / follow_name(files)).is_file():
        write_step(pending / follow_name(files), rows, STEP_ROWS_NEW, seed - 1, str(work / "img.png"))
    started = time.perf_counter()
    prepared = loading.prepare(sources.source_from_path(str(run_dir)), workers=workers)
    [update] = prepared.updates
    if update.rows != rows:
        raise SystemExit(f"the dataset holds {update.rows:,} rows, not {rows:,}: {update.describe()}")
    return run_dir, prepared.folders[0], {
        "write_s": written,
        "prepare_s": time.perf_counter() - started,
        "score_s": update.seconds,
        "rows_scored": update.rows_scored,
        "describe": update.describe(),
        "jsonl_mb": sum(p.stat().st_size for p in run_dir.iterdir()) / MB,
    }


def follow_name(files: int) -> str:
    return f"step_{files:04d}.jsonl"


def restore(run_dir: Path, files: int, workers: int | None) -> None:
    """The run folder and its dataset as before the follow measurement (a kept ``--dataset``)."""
    from dashboard import loading, sources

    added = run_dir / follow_name(files)
    if added.exists():
        added.unlink()
        loading.prepare(sources.source_from_path(str(run_dir)), workers=workers)


def _renamed(column, rename):
    """An Arrow column with every value renamed; a dictionary column stays one with the same
    indices (only its dictionary is renamed)."""
    import pyarrow as pa

    chunks = []
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            words = pa.array([rename(v) for v in chunk.dictionary.to_pylist()], type=chunk.dictionary.type)
            chunks.append(pa.DictionaryArray.from_arrays(chunk.indices, words))
        else:
            chunks.append(pa.array([None if v is None else rename(v) for v in chunk.to_pylist()], type=chunk.type))
    return pa.chunked_array(chunks, type=column.type)


def _rewrite_part(source: Path, target: Path, renames: dict, row_group_rows: int) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(source)
    for name, rename in renames.items():
        position = table.schema.get_field_index(name)
        if position >= 0:
            table = table.set_column(position, table.schema.field(position), _renamed(table[name], rename))
    pq.write_table(table, target, row_group_size=row_group_rows)


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def build_copies(dataset: Path, target: Path, copies: int) -> tuple[float, bool]:
    """``copies`` copies of ``dataset`` as one dataset, copy k under the run names ``<run>-copyK``
    and the input paths ``<folder>/copyK/<file>``: each numbers part rewritten with its ``run`` and
    ``source_file`` renamed (dictionary-encoded as the part had them), its errors' ``file`` too,
    the text parts linked, the manifest's entries repeated. ``(seconds, reused)``: a copy built
    from the same dataset generation is reused."""
    from scoring import datasets
    from scoring.datasets import parts as dataset_parts

    manifest = datasets.read_manifest(dataset)
    wanted = {"source": str(dataset.resolve()), "copies": copies,
              "files": [[e["path"], e["digest"], e["part"]] for e in manifest["files"]]}
    marker = target / "bench_copies.json"
    if datasets.is_dataset(target) and marker.is_file() and json.loads(marker.read_text()) == wanted:
        return 0.0, True
    started = time.perf_counter()
    shutil.rmtree(target, ignore_errors=True)
    parts_in, parts_out = dataset / datasets.PARTS, target / datasets.PARTS
    parts_out.mkdir(parents=True)
    generation = manifest["generation"]
    entries = []
    for k in range(1, copies + 1):
        tag = f"copy{k:02d}"

        def moved(path: str, tag: str = tag) -> str:
            return str(Path(path).parent / tag / Path(path).name)

        def renamed_run(label: str, tag: str = tag) -> str:
            return f"{label}-{tag}"

        for entry in manifest["files"]:
            name = f"{generation:06d}-{len(entries):05d}"
            copy = dict(entry, path=moved(entry["path"]), run=renamed_run(entry["run"]))
            if entry["part"]:
                copy["part"], copy["text_part"] = f"{name}.parquet", f"{name}.text.parquet"
                _rewrite_part(parts_in / entry["part"], parts_out / copy["part"],
                              {"run": renamed_run, "source_file": moved}, dataset_parts.NUMBER_ROW_GROUP_ROWS)
                _link(parts_in / entry["text_part"], parts_out / copy["text_part"])
            copy["errors_part"] = f"{name}.errors.parquet"
            _rewrite_part(parts_in / entry["errors_part"], parts_out / copy["errors_part"], {"file": moved},
                          dataset_parts.NUMBER_ROW_GROUP_ROWS)
            entries.append(copy)
    _link(parts_in / manifest["run_errors"], parts_out / manifest["run_errors"])
    text = json.dumps(dict(manifest, files=entries), indent=1, ensure_ascii=False)
    (target / datasets.MANIFEST).write_text(text, encoding="utf-8")
    marker.write_text(json.dumps(wanted))
    return time.perf_counter() - started, False
