"""Instructions per row, counted by valgrind's callgrind: the per-core comparison of
bench_batch.py (pipeline vs bare scorer loop) without this VM's timing noise.

    python bench/bench_instructions.py               # 2,000 generated rows, about 2 minutes
    python bench/bench_instructions.py --rows 5000

CPU time on a shared VM drifts by up to 1.7x between minutes, so two builds compared by
time need many alternating runs; instruction counts repeat to within 0.1%. Each measure
runs in its own process under ``valgrind --tool=callgrind --instr-atstart=no``: the
process imports, warms up with one untimed pass, switches counting on for one pass
(``callgrind_control -i on``), off again, and dumps. Printed: instructions per row of

- bare: ``score_trace_response`` over the rows already in memory (as bench_batch.py);
- pipeline: ``score_files(workers=1)`` on the JSONL (read, decode, score, build the table);

and their ratio. Instructions are not time -- the pipeline's memory traffic costs more
per instruction than the scorer's -- so the ratio in time (bench_batch.py) runs higher.
With ``--cache-sim``, callgrind also simulates the caches and branch prediction, and the
estimated cycles per row (an L1 hit 1, a last-level hit 5, memory 35) and mispredicted branches
are a second opinion on changes that move memory traffic rather than instructions: working a
chunk in passes costs 0.8% more instructions yet 9-10% less time. Still a model, not time.
Needs valgrind (Debian: ``apt-get install valgrind``); prints why and exits 2 without it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _child(mode: str, path: str) -> None:
    """Runs under callgrind: warm up, then count one pass."""
    sys.path.insert(0, str(REPO))
    from scoring import score_trace_response
    from scoring.runs import score_files

    if mode == "bare":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_batch import bare_kwargs

        with open(path, "rb") as handle:
            kwargs = [bare_kwargs(json.loads(line)) for line in handle]

        def run():
            for kw in kwargs:
                score_trace_response(**kw)
    else:

        def run():
            score_files(path, workers=1)

    run()
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    run()
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)


def _count(mode: str, path: Path, rows: int, out: Path, simulate: bool = False) -> dict[str, float]:
    """Callgrind's event totals for one measured pass, per row (``Ir``: instructions; with
    ``simulate``, also the cache and branch events of ``--cache-sim`` and ``--branch-sim``)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        *(["--cache-sim=yes", "--branch-sim=yes"] if simulate else []),
        sys.executable,
        __file__,
        "--child",
        mode,
        str(path),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"callgrind run failed ({mode}):\n{done.stderr[-2000:]}")
    events = None
    for line in out.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:") and events is not None:
            return {event: int(total) / rows for event, total in zip(events, line.split()[1:], strict=True)}
    raise SystemExit(f"no event totals in {out}")


#: Estimated cycles from the simulated caches, the formula of iai and iai-callgrind (after
#: pythonspeed.com/articles/consistent-benchmarking-in-ci): an L1 hit costs 1, a last-level
#: hit 5, a trip to memory 35. Branch mispredictions are printed beside it, not weighed in.
L1_HIT_CYCLES, LL_HIT_CYCLES, RAM_HIT_CYCLES = 1, 5, 35


def estimated_cycles(counts: dict[str, float]) -> float:
    accesses = counts["Ir"] + counts["Dr"] + counts["Dw"]
    l1_misses = counts["I1mr"] + counts["D1mr"] + counts["D1mw"]
    ram_hits = counts["ILmr"] + counts["DLmr"] + counts["DLmw"]
    return (
        L1_HIT_CYCLES * (accesses - l1_misses)
        + LL_HIT_CYCLES * (l1_misses - ram_hits)
        + RAM_HIT_CYCLES * ram_hits
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--cache-sim",
        action="store_true",
        help="also simulate caches and branch prediction (about 2x slower) and print estimated cycles",
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind); nothing measured")
        return 2

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_batch import write_rows

    print(
        "command:", "python bench/bench_instructions.py " + " ".join(sys.argv[1:] if argv is None else argv)
    )
    with tempfile.TemporaryDirectory(prefix="bench_instructions_") as tmp:
        folder = Path(tmp)
        path = folder / "rollouts.jsonl"
        write_rows(path, args.rows, args.seed)
        bare = _count("bare", path, args.rows, folder / "bare.out", args.cache_sim)
        pipeline = _count("pipeline", path, args.rows, folder / "pipeline.out", args.cache_sim)
    print(
        f"instructions per row over {args.rows:,} mixed rows: bare score_trace_response loop {bare['Ir']:,.0f}; "
        f"pipeline (read + score + table, 1 process) {pipeline['Ir']:,.0f}; ratio {pipeline['Ir'] / bare['Ir']:.2f}x; "
        f"outside the scorer {pipeline['Ir'] - bare['Ir']:,.0f}"
    )
    if args.cache_sim:
        bare_cycles, pipeline_cycles = estimated_cycles(bare), estimated_cycles(pipeline)
        print(
            f"estimated cycles per row (simulated caches): bare {bare_cycles:,.0f}; pipeline "
            f"{pipeline_cycles:,.0f}; ratio {pipeline_cycles / bare_cycles:.2f}x; mispredicted branches per "
            f"row: bare {bare['Bcm'] + bare['Bim']:,.0f}, pipeline {pipeline['Bcm'] + pipeline['Bim']:,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
