"""Benchmark of a worker handing a scored chunk back: through the process pool's pipe, or through
a file in ``/dev/shm`` (``scoring.runs.transfer``, what the scoring pipeline does).

    python bench/bench_handover.py                 # a 4,000-row chunk, 20 hand-overs a round, 5 rounds
    python bench/bench_handover.py --rows 2000 --rounds 9

A one-worker pool scores one chunk of generated rows like a real run's (bench_stream.py's) once,
then hands the same result back ``--handovers`` times a round, a round each way in turn. Prints,
per row, the CPU the worker and the scoring process spend handing it over (medians of the rounds),
and the file's figures against the pipe's, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scoring.runs.transfer import ShippedResult, results_folder  # noqa: E402

_RESULT = None
_FOLDER = None


def _score_once(path: str, rows: int, folder: str | None) -> int:
    """In the worker: score the file's first ``rows`` rows as one chunk and keep the result."""
    global _RESULT, _FOLDER
    from scoring.runs.chunks import Engine
    from scoring.runs.memory import keep_freed_memory

    keep_freed_memory()  # as the pipeline's workers do (init_worker)
    from scoring.runs.pipeline import RunInput, prepare_run

    run = prepare_run(
        [RunInput(display=path, path=Path(path))], ["bench"], False, options=None, mapping=None, instances=None,
        join="auto", image_root=None, uploads=None, workers=2, chunk_rows=rows, option_kwargs={},
    )  # fmt: skip
    item, job = run.jobs[0]
    chunk = next(iter(item.source.line_ranges(rows, 1 << 30)))
    _RESULT, _FOLDER = Engine(run.options, run.resolver, run.index).score_chunk(job, 0, chunk), folder
    return _RESULT["n"]


def _hand_over(through_file: bool):
    """In the worker: the kept result, as the pool would pickle it (or shipped through the folder)."""
    return ShippedResult(_RESULT, _FOLDER) if through_file else _RESULT


def _cpu() -> float:
    return time.process_time()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4000, help="rows of the chunk handed over")
    parser.add_argument("--handovers", type=int, default=20, help="hand-overs per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds each way (medians printed)")
    args = parser.parse_args(argv)
    print("command: python bench/bench_handover.py " + " ".join(sys.argv[1:] if argv is None else argv))
    from bench_stream import write_run
    from PIL import Image

    with tempfile.TemporaryDirectory(prefix="bench_handover_") as tmp, results_folder() as folder:
        image = Path(tmp) / "img.png"
        Image.new("RGB", (800, 600), "white").save(image)
        path = Path(tmp) / "run.jsonl"
        write_run(path, args.rows, 11, image)
        if folder is None:
            print("no writable /dev/shm: the file way cannot be measured here")
            return 1
        figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        with ProcessPoolExecutor(1, mp_context=get_context("forkserver")) as pool:
            rows = pool.submit(_score_once, str(path), args.rows, folder).result()
            for through_file in (False, True):  # a warm-up round each way
                pool.submit(_hand_over, through_file).result()
            for _ in range(args.rounds):
                for through_file in (False, True):
                    worker_before, before = pool.submit(_cpu).result(), time.process_time()
                    for _ in range(args.handovers):
                        pool.submit(_hand_over, through_file).result()
                    after, worker_after = time.process_time(), pool.submit(_cpu).result()
                    handed = rows * args.handovers
                    figures[through_file].append(((worker_after - worker_before) / handed, (after - before) / handed))
    print(f"a chunk of {rows:,} rows handed over {args.handovers} times a round, {args.rounds} rounds each way")
    medians = {}
    for through_file, name in ((False, "the pool's pipe"), (True, "a file in /dev/shm")):
        worker = statistics.median(w for w, _ in figures[through_file])
        scoring = statistics.median(s for _, s in figures[through_file])
        medians[through_file] = worker + scoring
        print(f"{name}: worker {worker * 1e6:.2f} us per row, scoring process {scoring * 1e6:.2f} us per row")
    print(f"the file against the pipe, both sides: {medians[True] / medians[False]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
