"""Benchmark of the batch path: JSONL -> scored DataFrame, re-weighting, streaming memory.

    python bench/bench_batch.py                 # the full benchmark (a few minutes)
    python bench/bench_batch.py --rows 20000    # quicker
    python bench/bench_batch.py --stream-mb 200 # also the bounded-memory check on a 200 MB JSONL

Prints medians over ``--repeat`` runs (default 3) and the command that produced them:

- score: N mixed rollouts (about 1.5 KB responses, all 12 annotation types, both
  output modes, some with images whose size is read from the header) from JSONL to
  a DataFrame with ``score_files`` (processes on every core); peak memory (PSS) of the
  process tree during a run, sampled every 0.1 s, the previous run's table dropped first.
  Target: 200,000 rows < 20 s, peak < 2 GB.
- bare loop: ``score_trace_response`` over the same rows already in memory, one
  core; the ratio per core (pipeline with 1 worker / bare loop), over ``--bare-rows``
  rows (20,000), in a fresh process of its own (as a run starts): the benchmark's own
  process holds the 200,000-row table and the heap its runs left, which weighs on the
  pipeline's allocations more than on the bare loop's. Target <= 1.5.
  ``bench_instructions.py`` counts the same comparison in instructions, free of this VM's
  timing noise.
- reweight: 1,000,000 scored rows, ``reweight`` with new weights and with a new
  mode. Target < 100 ms.
- stream: a large generated JSONL read by ``Source.records`` (the streaming
  reader), peak RSS growth; and scored in chunks with the table's text dropped.

Every input is generated deterministically from ``--seed`` into a temp folder.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.verifier import RESOLVER_IDS  # noqa: E402

ANNOTATION_IDS = RESOLVER_IDS  # the spec's resolver table, stated once in scoring.verifier.spec
WORDS = [
    "the",
    "image",
    "shows",
    "a",
    "small",
    "red",
    "block",
    "near",
    "the",
    "left",
    "edge",
    "and",
    "two",
    "larger",
    "shapes",
    "on",
    "the",
    "right",
    "side",
    "so",
    "counting",
    "carefully",
    "each",
    "object",
    "is",
    "inside",
    "the",
    "grid",
    "first",
    "I",
    "locate",
    "the",
    "marker",
    "then",
    "measure",
    "its",
    "distance",
    "from",
    "the",
    "corner",
    "which",
    "gives",
    "the",
    "coordinates",
    "needed",
    "for",
    "the",
    "final",
    "answer",
    "below",
]


def _box(rng: random.Random) -> list[int]:
    x0, y0 = rng.randint(0, 500), rng.randint(0, 400)
    return [x0, y0, x0 + rng.randint(5, 120), y0 + rng.randint(5, 120)]


def _point(rng: random.Random) -> list[int]:
    return [rng.randint(0, 640), rng.randint(0, 480)]


def _value(kind: str, rng: random.Random):
    shape, _, collection = kind.partition("_")
    item = {"bbox": _box, "point": _point, "segment": lambda r: [_point(r), _point(r)]}[shape]
    if not collection:
        return item(rng)
    if collection in ("set", "sequence"):
        return [item(rng) for _ in range(rng.randint(1, 4))]
    keys = ["left", "right", "top", "bottom"][: rng.randint(1, 4)]
    if collection == "map":
        return {k: item(rng) for k in keys}
    return {k: [item(rng) for _ in range(rng.randint(1, 3))] for k in keys}


def _jitter(value, rng: random.Random):
    if isinstance(value, list):
        return [_jitter(v, rng) for v in value]
    if isinstance(value, dict):
        return {k: _jitter(v, rng) for k, v in value.items()}
    return value + rng.randint(-6, 6)


def make_row(
    i: int, rng: random.Random, image: str | None = None, instance: int | None = None, truth_seed: int = 0
) -> dict:
    """One mixed trace rollout with a ~1.5 KB response. With ``instance``, the row is a sample of
    that instance: its truth (answer, annotation, contract, mode, image) is the instance's, drawn
    from ``truth_seed`` and the instance alone, as every sample of a GRPO group shares it; without,
    each row has a truth of its own."""
    j = i if instance is None else instance
    truth = rng if instance is None else random.Random(truth_seed * 1_000_003 + instance)
    kind = list(ANNOTATION_IDS)[j % len(ANNOTATION_IDS)]
    answer_type, answer = [
        ("integer", truth.randint(0, 20)),
        ("string", truth.choice(["red", "blue", "cube"])),
        ("list", [truth.randint(0, 9) for _ in range(3)]),
    ][j % 3]
    gt_value = _value(kind, truth)
    mode = "answer" if j % 4 == 0 else "answer_and_annotation"
    predicted_answer = answer if rng.random() < 0.7 else rng.randint(0, 20)
    final = {"answer": predicted_answer}
    if mode != "answer" or rng.random() < 0.1:
        final["annotation"] = _jitter(gt_value, rng)
    prose = " ".join(rng.choice(WORDS) for _ in range(rng.randint(230, 270)))
    body = json.dumps(final)
    style = rng.random()
    if style < 0.55:
        response = f"{prose}\n{body}"
    elif style < 0.8:
        response = f"{prose}\n```json\n{body}\n```"
    elif style < 0.9:
        response = f"{prose}\n{body}\nHope this helps."
    else:
        response = f"{prose}\n<answer>{body}</answer> done"
    row = {
        "id": f"r{i}",
        "task_id": f"task_{i % 7}",
        "step": (i // 1000) * 10,
        "response": response,
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": kind, "value": gt_value},
        "reward_contract": {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": answer_type},
            "annotation": {"id": ANNOTATION_IDS[kind], "type": kind},
        },
        "trace_output_mode": mode,
    }
    if image is not None and j % 10 == 0:
        row["image"] = image
    else:
        row["image_size"] = [640, 480]
    if i % 5 == 0:
        row["score"] = 0.5
    return row


def bare_kwargs(row: dict) -> dict:
    """What the bare loop passes to ``score_trace_response`` for a generated row (the
    pipeline reads the same from the JSONL line; an image row's size is its PNG's, 800x600)."""
    return {
        "response": row["response"],
        "answer_gt": row["answer_gt"],
        "annotation_gt": row["annotation_gt"],
        "reward_contract": row["reward_contract"],
        "image_size": row.get("image_size", [800, 600]),
        "trace_reward_mode": row["trace_output_mode"],
    }


def write_rows(path: Path, n: int, seed: int, image: str | None = None) -> float:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(json.dumps(make_row(i, rng, image)) + "\n")
    return path.stat().st_size / 1e6


class PeakRss:
    """Peak memory of this process plus its live descendants (workers), and the CPU time of
    the descendants, both sampled every 0.1 s.

    Summed as PSS (proportional set size): pages the forked workers share with
    each other are counted once, not once per process as a plain RSS sum would."""

    def __init__(self, interval: float = 0.1, memory_every: int = 1):
        self.interval = interval
        self.peak = 0
        self.memory_every = memory_every  # ticks between memory samples (a few ms of smaps reading each)
        self.cpu: dict[int, float] = {}  # pid -> CPU seconds last seen (user + system)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _descendants(pid: int) -> list[int]:
        out = [pid]
        for index in range(len(out) + 64):
            if index >= len(out):
                break
            current = out[index]
            try:
                for task in Path(f"/proc/{current}/task").iterdir():
                    out += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                pass
        return out

    @classmethod
    def _rss_tree(cls) -> int:
        total = 0
        for pid in cls._descendants(os.getpid()):
            try:
                text = Path(f"/proc/{pid}/smaps_rollup").read_text()
                key = "Pss:"
            except OSError:
                try:
                    text = Path(f"/proc/{pid}/status").read_text()
                    key = "VmRSS:"
                except OSError:
                    continue
            for line in text.splitlines():
                if line.startswith(key):
                    total += int(line.split()[1]) * 1024
                    break
        return total

    def _sample_cpu(self):
        ticks = os.sysconf("SC_CLK_TCK")
        for pid in self._descendants(os.getpid())[1:]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            self.cpu[pid] = (int(fields[11]) + int(fields[12])) / ticks

    @property
    def child_cpu_seconds(self) -> float:
        """CPU seconds the descendants used while this monitor ran."""
        return sum(seconds - self.baseline.get(pid, 0.0) for pid, seconds in self.cpu.items())

    def _run(self):
        tick = 0
        while not self._stop.is_set():
            if tick % self.memory_every == 0:
                self.peak = max(self.peak, self._rss_tree())
            self._sample_cpu()
            tick += 1
            time.sleep(self.interval)

    def __enter__(self):
        self.peak = self._rss_tree()
        self._sample_cpu()
        self.baseline = dict(self.cpu)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss_tree())


def median(values):
    return statistics.median(values)


def bench_score(path: Path, rows: int, repeat: int, workers: int | None) -> dict:
    from scoring.runs import score_files

    times, peaks, loads, cpus = [], [], [], []
    table = None
    for _ in range(repeat):
        table = None  # the previous run's table is not part of this run's memory
        gc.collect()
        with PeakRss() as rss:
            start, cpu_start = time.perf_counter(), time.process_time()
            run = score_files(path, workers=workers)
            elapsed = time.perf_counter() - start
            cpus.append(time.process_time() - cpu_start + rss.child_cpu_seconds)
        loads.append(os.getloadavg()[0])
        assert len(run.table) == rows, (len(run.table), run.errors.head())
        times.append(elapsed)
        peaks.append(rss.peak)
        table = run.table
        used = run.workers
        del run
    return {
        "seconds": median(times),
        "all": times,
        "loads": loads,
        "cpu": median(cpus),
        "peak_rss_mb": max(peaks) / 1e6,
        "workers": used,
        "table": table,
    }


def bench_per_core(path: Path, limit: int, repeat: int, folder: Path) -> tuple[float, float, float]:
    """CPU seconds per row, one process: (bare score_trace_response loop, the pipeline).

    The bare loop gets the rows already parsed; the pipeline reads the same rows
    from JSONL, scores them and builds the table (``score_files(workers=1)``).
    Runs alternate, and the ratio is the median of the ratios of neighbouring
    runs, so that load from other processes on the machine hits both alike.
    """
    from scoring import score_trace_response
    from scoring.runs import score_files

    small = folder / "one_core.jsonl"
    kwargs = []
    with open(path, "rb") as source, open(small, "wb") as target:
        for line_no, line in enumerate(source):
            if line_no >= limit:
                break
            target.write(line)
            kwargs.append(bare_kwargs(json.loads(line)))
    score_files(small, workers=1)  # warm caches and imports
    bare, pipeline = [], []
    for _ in range(max(repeat, 7)):
        start = time.process_time()
        for kw in kwargs:
            score_trace_response(**kw)
        bare.append((time.process_time() - start) / len(kwargs))
        start = time.process_time()
        score_files(small, workers=1)
        pipeline.append((time.process_time() - start) / len(kwargs))
    ratios = [p / b for p, b in zip(pipeline, bare, strict=True)]
    return median(bare), median(pipeline), median(ratios)


def bench_per_core_in_child(path: Path, limit: int, repeat: int, folder: Path) -> tuple[float, float, float]:
    """:func:`bench_per_core` in a fresh Python process (see the module docstring)."""
    import subprocess

    command = [sys.executable, __file__, "--per-core-child", str(path), str(limit), str(repeat), str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    bare, pipeline, ratio = json.loads(done.stdout.strip().splitlines()[-1])
    return bare, pipeline, ratio


def bench_reweight(table, rows: int, repeat: int) -> dict:
    import pandas as pd

    from scoring.runs import recompute, reweight

    copies = rows // len(table) + 1
    big = pd.concat([table] * copies, ignore_index=True).iloc[:rows].copy()
    out = {}
    cases = {
        "weights": {"answer_weight": 0.7, "annotation_weight": 0.3, "format_weight": 0.1},
        "formula": {"trace_annotation_reward_formula": "additive", "solved_threshold": 0.9},
        "mode": {"trace_reward_mode": "answer", "format_weight": 0.2},
    }
    for name, options in cases.items():
        for fn in (recompute, reweight):
            fn(big, **options)
            times = []
            for _ in range(max(repeat, 5)):
                start = time.perf_counter()
                fn(big, **options)
                times.append(time.perf_counter() - start)
            out[f"{fn.__name__}[{name}]"] = median(times) * 1000
    return out


def bench_stream(folder: Path, megabytes: int, seed: int) -> dict:
    """Peak RSS growth while streaming a big JSONL (reader only, and read + score + no text kept)."""
    from scoring.rollouts.sources import Source

    path = folder / "stream.jsonl"
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        i = 0
        while handle.tell() < megabytes * 1_000_000:
            handle.write(json.dumps(make_row(i, rng)) + "\n")
            i += 1
    gc.collect()
    base = PeakRss._rss_tree()
    with PeakRss() as rss:
        start = time.perf_counter()
        count = sum(1 for _ in Source(path).records())
        elapsed = time.perf_counter() - start
    return {
        "file_mb": path.stat().st_size / 1e6,
        "rows": count,
        "read_seconds": elapsed,
        "rss_growth_mb": (rss.peak - base) / 1e6,
        "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=None, help="default: auto (every core)")
    parser.add_argument(
        "--bare-rows",
        type=int,
        default=20_000,
        help="rows for the per-core comparison (enough that the ~15 ms a call costs whatever its size "
        "-- layout detection on a sample, assembling the DataFrame -- weighs on it as little as on a run)",
    )
    parser.add_argument("--reweight-rows", type=int, default=1_000_000)
    parser.add_argument("--stream-mb", type=int, default=0, help="also stream a generated JSONL of this size")
    args = parser.parse_args(argv)

    from PIL import Image

    print("command:", "python bench/bench_batch.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print(f"machine: {os.cpu_count()} cpus, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench_batch_") as tmp:
        folder = Path(tmp)
        image = folder / "img.png"
        Image.new("RGB", (800, 600), "white").save(image)
        path = folder / "rollouts.jsonl"
        size = write_rows(path, args.rows, args.seed, image=str(image))
        print(
            f"input: {args.rows:,} rows, {size:.0f} MB JSONL ({size * 1e6 / args.rows / 1e3:.2f} KB per row)"
        )

        result = bench_score(path, args.rows, args.repeat, args.workers)
        table = result.pop("table")
        print(
            f"score {args.rows:,} rows -> DataFrame: median {result['seconds']:.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for t in result['all'])}; {result['workers']} processes); "
            f"{args.rows / result['seconds']:,.0f} rows/s; peak memory (PSS, all processes) {result['peak_rss_mb']:.0f} MB; "
            f"1-min load average after each run: {', '.join(f'{x:.1f}' for x in result['loads'])}"
        )

        bare, one, ratio = bench_per_core_in_child(path, args.bare_rows, args.repeat, folder)
        print(
            f"per core (CPU time, fresh process, medians of 7 alternating runs over {args.bare_rows:,} rows): "
            "bare "
            f"score_trace_response loop {bare * 1e6:.0f} us/row; pipeline (1 process, read + score + table) "
            f"{one * 1e6:.0f} us/row; ratio {ratio:.2f}x"
        )
        cores = result["workers"]
        print(
            f"CPU used by the {args.rows:,}-row run (parent + workers, median): {result['cpu']:.1f} s, i.e. "
            f"{result['cpu'] / cores:.1f} s of wall time on {cores} otherwise idle cores; the wall times above "
            "include other load on the machine"
        )

        rw = bench_reweight(table, args.reweight_rows, args.repeat)
        print(
            f"re-weight {args.reweight_rows:,} rows (median ms): "
            + ", ".join(f"{k} {v:.1f}" for k, v in rw.items())
        )

        if args.stream_mb:
            stream = bench_stream(folder, args.stream_mb, args.seed)
            print(
                f"stream: {stream['file_mb']:.0f} MB JSONL, {stream['rows']:,} rows read in "
                f"{stream['read_seconds']:.1f} s; RSS growth {stream['rss_growth_mb']:.0f} MB"
            )
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--per-core-child"]:  # see bench_per_core_in_child
        child_path, child_limit, child_repeat, child_folder = sys.argv[2:6]
        figures = bench_per_core(Path(child_path), int(child_limit), int(child_repeat), Path(child_folder))
        print(json.dumps(figures))
        sys.exit(0)
    sys.exit(main())
