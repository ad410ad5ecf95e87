"""Benchmark of scoring one big file into a dataset folder: memory, wall time, CPU per row.

    python bench/bench_stream.py                        # 2,000,000 rows in one JSONL, 2 workers (long)
    python bench/bench_stream.py --rows 200000          # quicker
    python bench/bench_stream.py --data /tmp/stream     # keep the generated file for the next run
    python bench/bench_stream.py --truths instance      # an instance's 8 samples share its truth

The rows are like a real run's: bench_batch.py's mixed rollouts (all 12 annotation types, both
output modes, one row in ten with an image whose size is read from its header) with responses of
0.9-1.9 KB, a prompt per instance shared by its 8 samples, instance ids and sample indices --
about 2.3 KB per JSONL line. Each row has a truth of its own (the harder case for the scorer);
``--truths instance`` gives the samples of an instance its truth, as a GRPO run's share theirs.
The file is scored as a user would, ``rolloutscope score FILE -o DIR/ --workers N`` in a fresh
process, while this process samples ``/proc`` of that process and
its descendants every 0.1 s. Prints, with the machine's core count, whether the layers run
compiled, and the 1-minute load average:

- peak memory of all the processes together (``--no-table``: the scoring alone, without the
  opened table built at its end; with the workers' results in flight in ``/dev/shm``), as RSS
  (each process's resident pages summed: pages the workers share with each other count once per
  process) and as PSS (shared pages split), and
  each process's own peak. Target: RSS <= 1.5 GB with 2 workers, whatever the file's size;
- wall time, and per million rows. Target: <= 30 s per million rows on 2 cores;
- CPU of the whole scoring (every process: reading, decoding, scoring, writing), per row, next to
  the verifier's own cost per call -- ``score_trace_response`` over the same rows already decoded,
  in a fresh process, measured before each scoring and after the last -- and their ratio: each run's
  CPU per row against the verifier measured just before and after it, the median of those. Target:
  <= 2.2. Beside it, the verifier
  measured in as many processes at once as there are workers: the same per-call cost under the
  load the workers run under (on 2 cores, a busy neighbour costs each process some speed).

``--repeat N`` scores N times (each into a fresh folder) and prints medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_batch import WORDS, make_row  # noqa: E402

SAMPLES_PER_PROMPT = 8
PROMPT = (
    "Question {group}: look at the image and answer the question about it. Give the answer and the "
    "geometry that supports it. End your reply with one JSON object: {{\"answer\": <answer>, "
    "\"annotation\": <geometry>}}. Coordinates are pixels of the image as given (origin top-left, x to "
    "the right, y down); boxes are [x0, y0, x1, y1], points [x, y]."
)


def stream_row(i: int, rng: random.Random, image: str, instance_truths: bool = False, seed: int = 0) -> dict:
    """Row ``i`` of the run: a mixed rollout with a 0.9-1.9 KB response and its instance's prompt
    (with ``instance_truths``, also its instance's truth, as in a GRPO run)."""
    group = i // SAMPLES_PER_PROMPT
    row = make_row(i, rng, image, instance=group if instance_truths else None, truth_seed=seed)
    _, tail = row["response"].split("\n", 1)  # the prose, then what the reply ends with
    row["response"] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(150, 320))) + "\n" + tail
    row["prompt"] = PROMPT.format(group=group)
    row["instance_id"] = f"instance-{group}"
    row["sample_index"] = i % SAMPLES_PER_PROMPT
    return row


def write_run(path: Path, rows: int, seed: int, image: Path, instance_truths: bool = False) -> None:
    rng = random.Random(seed)
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as handle:
        for i in range(rows):
            handle.write(json.dumps(stream_row(i, rng, str(image), instance_truths, seed)) + "\n")
    partial.rename(path)


def describe_input(path: Path, rows: int) -> str:
    sizes = []
    with open(path, "rb") as handle:
        for line_no, line in enumerate(handle):
            if line_no >= 20_000:
                break
            sizes.append(len(json.loads(line)["response"].encode()))
    size = path.stat().st_size
    return (
        f"input: {rows:,} rows in one JSONL, {size / 1e9:.2f} GB ({size / rows / 1e3:.2f} KB per line; "
        f"responses {min(sizes) / 1e3:.1f}-{max(sizes) / 1e3:.1f} KB, mean {statistics.mean(sizes) / 1e3:.2f} KB)"
    )


# --------------------------------------------------------------------------- watching a process tree


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it."""
    out = [pid]
    index = 0
    while index < len(out):
        try:
            for task in Path(f"/proc/{out[index]}/task").iterdir():
                out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
        index += 1
    return out


def memory(pid: int) -> tuple[int, int]:
    """``(RSS, PSS)`` of one process in bytes (0 once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            values[name] = int(rest.split()[0]) * 1024
    return values.get("Rss", 0), values.get("Pss", 0)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of one process so far (its own, not its children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def shared_memory() -> int:
    """Bytes the machine holds in shared memory and RAM-backed files (``Shmem`` of /proc/meminfo)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * 1024
    return 0


class TreeWatch:
    """Peak RSS and PSS of a process tree (summed over its processes, sampled every ``interval``
    seconds), each process's own peak RSS, and the CPU seconds of every process that was part of
    it (the last figure seen of each: a worker's last tenth of a second before it ends is missed).

    The workers hand results back through files in ``/dev/shm`` (``scoring.runs.transfer``), whose
    pages belong to no process until the scoring process maps and touches them: the machine's
    shared memory grown since the start is added to both sums (``peak_shared`` alone). Pages that
    are mapped and touched then count twice: the sums are an upper bound."""

    def __init__(self, pid: int, interval: float = 0.1):
        self.pid = pid
        self.interval = interval
        self.peak_rss = self.peak_pss = self.peak_shared = 0
        self.shared_before = shared_memory()
        self.own: dict[int, int] = {}
        self.cpu: dict[int, float] = {}
        self.names: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = pss = 0
            for pid in descendants(self.pid):
                one, shared = memory(pid)
                rss, pss = rss + one, pss + shared
                self.own[pid] = max(self.own.get(pid, 0), one)
                seconds = cpu_seconds(pid)
                if seconds is not None:
                    self.cpu[pid] = seconds
                if pid not in self.names:
                    try:
                        self.names[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:60].decode()
                    except OSError:
                        self.names[pid] = "?"
            shared = max(0, shared_memory() - self.shared_before)
            self.peak_shared = max(self.peak_shared, shared)
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss + shared), max(self.peak_pss, pss + shared)
            time.sleep(self.interval)

    def __enter__(self) -> TreeWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def score_once(path: Path, out: Path, workers: int, keep_table: bool = True) -> dict:
    """``rolloutscope score FILE -o OUT/ --workers N`` in a fresh process (``--no-table`` unless
    ``keep_table``): wall, CPU, memory."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "scoring", "score", str(path), "-o", f"{out}{os.sep}",
               "--workers", str(workers), "--no-progress", *([] if keep_table else ["--no-table"])]  # fmt: skip
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with TreeWatch(process.pid) as watch:
        stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"scoring failed ({process.returncode}):\n{stderr[-3000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "wall": wall,
        "cpu": sum(watch.cpu.values()),
        "peak_rss": watch.peak_rss,
        "peak_pss": watch.peak_pss,
        "peak_shared": watch.peak_shared,
        "processes": sorted(
            ((watch.own[p], watch.cpu.get(p, 0.0), watch.names.get(p, "?")) for p in watch.own), reverse=True
        ),
        "rows": sum(entry["rows"] for entry in manifest["files"]),
        "errors": sum(entry["errors"] for entry in manifest["files"]),
        "load": os.getloadavg()[0],
        "summary": (stdout + stderr).strip().splitlines()[-1:] or [""],
    }


# --------------------------------------------------------------------------- the verifier alone

# The verifier runs as in a worker: one OpenBLAS thread (what the program asks for, before numpy
# loads) and scipy's solver imported ahead (the worker pool's server preloads it). Otherwise the
# solver's first import, in the warm-up, starts OpenBLAS threads that spin into the timed calls.
_VERIFIER_CHILD = r"""
import importlib, json, os, sys, time, statistics
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/bench")
from bench_batch import bare_kwargs
from scoring import score_trace_response
from scoring.verifier import SOLVER_MODULE
importlib.import_module(SOLVER_MODULE)
calls = []
with open(sys.argv[2], "rb") as handle:
    for line_no, line in enumerate(handle):
        if line_no >= int(sys.argv[3]):
            break
        calls.append(bare_kwargs(json.loads(line)))
for kw in calls[:2000]:
    score_trace_response(**kw)  # warm
runs = []
for _ in range(int(sys.argv[4])):
    start = time.process_time()
    for kw in calls:
        score_trace_response(**kw)
    runs.append((time.process_time() - start) / len(calls))
print(json.dumps(runs))
"""


def verifier_cost(path: Path, rows: int, repeat: int) -> list[float]:
    """CPU seconds per ``score_trace_response`` call over the file's first ``rows`` rows, decoded
    beforehand, in a fresh process: one figure per repeat."""
    command = [sys.executable, "-c", _VERIFIER_CHILD, str(ROOT), str(path), str(rows), str(repeat)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def verifier_cost_side_by_side(path: Path, rows: int, repeat: int, processes: int) -> list[float]:
    """:func:`verifier_cost` in ``processes`` fresh processes at once -- the cores as busy as the
    workers keep them (shared caches, memory bandwidth): every process's figures."""
    command = [sys.executable, "-c", _VERIFIER_CHILD, str(ROOT), str(path), str(rows), str(repeat)]
    children = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    figures: list[float] = []
    for child in children:
        stdout, _ = child.communicate()
        if child.returncode:
            raise subprocess.CalledProcessError(child.returncode, command)
        figures += json.loads(stdout.strip().splitlines()[-1])
    return figures


def layers_status() -> str:
    from scoring import compiled

    status = compiled.layer_status()
    kinds = sorted(set(status.values()))
    return "compiled" if kinds == [compiled.COMPILED] else "; ".join(kinds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="scorings of the file (medians printed)")
    parser.add_argument("--verifier-rows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--data", type=Path, default=None, help="folder to keep the generated file in")
    parser.add_argument("--no-table", dest="keep_table", action="store_false",
                        help="score with --no-table: without building the opened table at the end")  # fmt: skip
    parser.add_argument("--truths", choices=("row", "instance"), default="row",
                        help="row: each row has a truth of its own; instance: the 8 samples of an instance "
                             "share its truth, as in a GRPO run")  # fmt: skip
    args = parser.parse_args(argv)
    print("command: python bench/bench_stream.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print(f"machine: {os.cpu_count()} cpus, python {sys.version.split()[0]}; layers: {layers_status()}")
    with tempfile.TemporaryDirectory(prefix="bench_stream_") as tmp:
        folder = args.data or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        image = folder / "img.png"
        if not image.exists():
            from PIL import Image

            Image.new("RGB", (800, 600), "white").save(image)
        shared = args.truths == "instance"
        path = folder / f"run_{args.rows}_{args.seed}{'_instance_truths' if shared else ''}.jsonl"
        if not path.exists():
            started = time.perf_counter()
            write_run(path, args.rows, args.seed, image, shared)
            print(f"(generated in {time.perf_counter() - started:.0f} s)")
        print(describe_input(path, args.rows))

        # the verifier measured before each scoring and after the last: each run's ratio is taken
        # against the measurements on either side of it, so a host whose speed drifts within the
        # hour moves both sides of a ratio together
        verifier_around: list[list[float]] = [verifier_cost(path, args.verifier_rows, 3)]
        runs = []
        for _ in range(args.repeat):
            runs.append(score_once(path, Path(tmp) / "scored", args.workers, args.keep_table))
            verifier_around.append(verifier_cost(path, args.verifier_rows, 3))
        verifier = [figure for figures in verifier_around for figure in figures]
        side_by_side = verifier_cost_side_by_side(path, args.verifier_rows, 3, args.workers)
        assert all(run["rows"] == args.rows for run in runs), [run["rows"] for run in runs]

    wall = statistics.median(run["wall"] for run in runs)
    cpu_per_row = statistics.median(run["cpu"] for run in runs) / args.rows
    call = statistics.median(verifier)
    rss = max(run["peak_rss"] for run in runs)
    pss = max(run["peak_pss"] for run in runs)
    loads = ", ".join(f"{run['load']:.1f}" for run in runs)
    table = "" if args.keep_table else " --no-table"
    print(f"scored with --workers {args.workers}{table} ({args.repeat} run(s); 1-min load average after each: "
          f"{loads}): {runs[-1]['summary'][0]}")  # fmt: skip
    print(f"wall: {wall:.1f} s ({wall / args.rows * 1e6:.1f} s per million rows, {args.rows / wall:,.0f} rows/s)")
    shared = max(run["peak_shared"] for run in runs)
    print(f"peak memory of all processes together: RSS {rss / 1e9:.2f} GB, PSS {pss / 1e9:.2f} GB "
          f"(each with the results in flight in /dev/shm, at most {shared / 1e6:,.0f} MB)")  # fmt: skip
    print("  each process's peak RSS and CPU: " + "; ".join(
        f"{size / 1e6:,.0f} MB, {cpu:.1f} s" for size, cpu, _ in runs[-1]["processes"][:6]
    ) + " (the scoring process first, then its workers)")  # fmt: skip
    print(f"CPU of the scoring (every process): {cpu_per_row * 1e6:.1f} us per row")
    print(f"verifier alone (score_trace_response, {args.verifier_rows:,} rows decoded, fresh process, "
          f"median of {len(verifier)}): {call * 1e6:.1f} us per call")  # fmt: skip
    ratios = [
        run["cpu"] / args.rows / statistics.median(before + after)
        for run, before, after in zip(runs, verifier_around, verifier_around[1:], strict=False)
    ]
    print(f"ratio pipeline / verifier: {statistics.median(ratios):.2f} (median of each run's CPU per row against "
          f"the verifier measured just before and after it: {', '.join(f'{ratio:.2f}' for ratio in ratios)})")  # fmt: skip
    beside = statistics.median(side_by_side)
    print(f"verifier in {args.workers} processes at once (the cores as busy as the workers keep them; median of "
          f"{len(side_by_side)}): {beside * 1e6:.1f} us per call; the pipeline's CPU per row against it: "
          f"{cpu_per_row / beside:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
