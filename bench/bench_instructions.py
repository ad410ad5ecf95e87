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
    from scoring.batch import score_files

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


def _count(mode: str, path: Path, rows: int, out: Path) -> float:
    env = dict(os.environ, PYTHONHASHSEED="0")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        sys.executable,
        __file__,
        "--child",
        mode,
        str(path),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"callgrind run failed ({mode}):\n{done.stderr[-2000:]}")
    for line in out.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1]) / rows
    raise SystemExit(f"no instruction total in {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
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
        bare = _count("bare", path, args.rows, folder / "bare.out")
        pipeline = _count("pipeline", path, args.rows, folder / "pipeline.out")
    print(
        f"instructions per row over {args.rows:,} mixed rows: bare score_trace_response loop {bare:,.0f}; "
        f"pipeline (read + score + table, 1 process) {pipeline:,.0f}; ratio {pipeline / bare:.2f}x; "
        f"outside the scorer {pipeline - bare:,.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
