"""This checkout against another, in one run: the same work timed in both, alternating.

    python bench/bench_against.py --baseline /path/to/older/checkout     # both built (pip install -e / build_ext)
    python bench/bench_against.py --baseline DIR --rows 20000 --repeat 5

For a change that should move no figure (a reorganisation), or one that should: each measure runs
in a fresh process with ``PYTHONPATH`` set to one checkout, the two checkouts alternating, and
prints the medians side by side with their ratio (this checkout / baseline). Both import through
the 0.1 paths (``scoring.batch``...), which this checkout keeps working, so any two versions
compare. Measures:

- import: ``import scoring`` and the batch layer, cold, in ms;
- verifier: ``score_trace_response`` over the generated rows already in memory, µs per call;
- pipeline: ``score_files`` on the generated JSONL with one worker, µs per row;
- reweight: re-weighting the scored table with new weights, ms.

Each checkout must carry its own compiled build (or neither): the child prints which layers run
compiled, and the two must agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_batch import bare_kwargs, write_rows  # noqa: E402

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)
started = time.perf_counter()
import scoring
from scoring import compiled
from scoring.batch import score_files
imported = time.perf_counter() - started
from scoring import score_trace_response
from scoring.reweight import reweight
path, rows_file = sys.argv[1], sys.argv[2]
kwargs = json.loads(open(rows_file).read())
started = time.perf_counter()
for k in kwargs:
    score_trace_response(**k)
verifier = (time.perf_counter() - started) / len(kwargs)
started = time.perf_counter()
run = score_files([path], workers=1)
pipeline = (time.perf_counter() - started) / len(run.table)
started = time.perf_counter()
reweight(run.table, answer_weight=2.0, annotation_weight=1.0)
weights = time.perf_counter() - started
status = sorted(set(compiled.layer_status().values()))
print(json.dumps({"import_ms": imported * 1e3, "verifier_us": verifier * 1e6, "pipeline_us_per_row": pipeline * 1e6,
                  "reweight_ms": weights * 1e3, "compiled": status}))
"""


def measure(checkout: Path, path: Path, rows_file: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(rows_file)], env=env, cwd=checkout,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout (built as this one is)")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    this = HERE.parent
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        write_rows(path, args.rows, args.seed)
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        rows_file = Path(folder) / "kwargs.json"
        rows_file.write_text(json.dumps([bare_kwargs(r) for r in rows]))
        results: dict[str, list[dict]] = {"this": [], "baseline": []}
        for _ in range(args.repeat):
            results["this"].append(measure(this, path, rows_file))
            results["baseline"].append(measure(args.baseline.resolve(), path, rows_file))
    builds = {side: runs[0]["compiled"] for side, runs in results.items()}
    print(f"command: python bench/bench_against.py --baseline {args.baseline} --rows {args.rows} "
          f"--repeat {args.repeat}")
    print(f"layers: this {builds['this']}, baseline {builds['baseline']}")
    print(f"{'measure':<24}{'this':>12}{'baseline':>12}{'ratio':>8}")
    for key in ("import_ms", "verifier_us", "pipeline_us_per_row", "reweight_ms"):
        ours = statistics.median(r[key] for r in results["this"])
        theirs = statistics.median(r[key] for r in results["baseline"])
        print(f"{key:<24}{ours:>12.1f}{theirs:>12.1f}{ours / theirs:>8.2f}")
    return 0 if builds["this"] == builds["baseline"] else 1


if __name__ == "__main__":
    sys.exit(main())
