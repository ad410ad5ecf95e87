"""Benchmark of the Ray engine (scoring.engines.ray) against the local engine, same inputs.

    python bench/bench_ray.py                          # 200,000 rows in 20 step files, 3 repeats
    python bench/bench_ray.py --repeat 1 --rows 50000  # quicker

The rows are bench_batch.py's mixed rollouts (about 1.5 KB responses, all annotation types),
written as ``--files`` step files (bench_store.py's writer). Prints, with the machine's core count:

- local: ``score_to_dataset`` into a fresh folder with every core (median wall s);
- ray: ``score_to_dataset(engine="ray")`` into a fresh folder on a local Ray with as many CPUs,
  started once beforehand as a cluster would be (median wall s; ratio to local, the two
  alternating ``--repeat`` times; aim <= 1.5), and the first call's time with Ray's start;
- both datasets opened equal (table and errors), or the benchmark stops;
- Ray's workers run at the local engine's priority (``RAY_worker_niceness=0``; Ray's default is
  nice 15, which on a busy shared machine starves them);
- with ``--nodes``: a simulated cluster (``ray.cluster_utils.Cluster``) of one node, then two,
  of 1 CPU each: wall s of each and the speed-up from the second node.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import write_run  # noqa: E402


def _timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=20, help="step files the rows are written as")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of both engines")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--nodes", action="store_true", help="also time a simulated cluster of 1, then 2 nodes")
    args = parser.parse_args(argv)

    import pandas as pd
    import ray

    from scoring import datasets, engines
    from scoring.engines import ray as ray_engine

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("command:", "python bench/bench_ray.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print(
        f"machine: {cores} cores, python {sys.version.split()[0]}, ray {ray.__version__}; "
        f"load average {os.getloadavg()[0]:.1f} (other work on the machine weighs on both engines)"
    )
    os.environ["RAY_DATA_DISABLE_PROGRESS_BARS"] = "1"
    # Ray starts its workers at nice 15, the local engine's processes run at ours: on a machine
    # shared with other work that alone would starve Ray's. Both run at the same priority here.
    os.environ.setdefault("RAY_worker_niceness", "0")
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
        folder = Path(tmp)
        _, paths = write_run(folder, args.rows, args.files, args.seed)
        megabytes = sum(p.stat().st_size for p in paths) / 1e6
        print(f"input: {args.rows:,} rows in {len(paths)} files, {megabytes:.0f} MB JSONL")

        counter = iter(range(1_000_000))

        def fresh() -> Path:
            return folder / f"out_{next(counter)}"

        start = _timed(lambda: ray_engine.init_ray(cores, include_dashboard=False))
        first_out = fresh()
        first = _timed(lambda: engines.score_to_dataset(paths, first_out, engine="ray"))
        local_runs, ray_runs = [], []
        local_out = ray_out = first_out
        for _ in range(args.repeat):
            local_out = fresh()
            local_runs.append(_timed(lambda out=local_out: engines.score_to_dataset(paths, out, workers=cores)))
            ray_out = fresh()
            ray_runs.append(_timed(lambda out=ray_out: engines.score_to_dataset(paths, out, engine="ray")))
        ours, theirs = datasets.open_dataset(ray_out), datasets.open_dataset(local_out)
        pd.testing.assert_frame_equal(ours.table, theirs.table)
        pd.testing.assert_frame_equal(ours.errors, theirs.errors)
        local_s, ray_s = statistics.median(local_runs), statistics.median(ray_runs)
        print(f"local engine, {cores} processes: median {local_s:.2f} s ({args.rows / local_s:,.0f} rows/s)")
        print(
            f"ray engine, {cores} CPUs: median {ray_s:.2f} s ({args.rows / ray_s:,.0f} rows/s); "
            f"ratio ray/local {ray_s / local_s:.2f} (aim <= 1.5)"
        )
        print(f"ray engine, first call: {first:.2f} s, after Ray's start {start:.2f} s")
        print("datasets: equal (table and errors)")
        ray.shutdown()

        if args.nodes:
            from ray.cluster_utils import Cluster

            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            os.environ["RAY_ADDRESS"] = cluster.address
            try:
                ray_engine.init_ray()
                engines.score_to_dataset(paths[:1], fresh(), engine="ray")  # workers up, package sent
                one = _timed(lambda: engines.score_to_dataset(paths, fresh(), engine="ray"))
                cluster.add_node(num_cpus=1)
                cluster.wait_for_nodes()
                engines.score_to_dataset(paths[:2], fresh(), engine="ray")
                two = _timed(lambda: engines.score_to_dataset(paths, fresh(), engine="ray"))
            finally:
                ray.shutdown()
                cluster.shutdown()
                del os.environ["RAY_ADDRESS"]
            print(
                f"simulated cluster, 1 node x 1 CPU: {one:.2f} s; 2 nodes x 1 CPU: {two:.2f} s; "
                f"speed-up {one / two:.2f}x (the nodes share this machine's {cores} cores; load average "
                f"{os.getloadavg()[0]:.1f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
