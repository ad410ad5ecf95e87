"""Benchmark of counting a text column's distinct values as a dataset's batches are written
(``scoring.datasets.DistinctCount``): each value hashed where it lies in the Arrow buffers
(``scoring.datasets.hashing``, compiled), against each value made a Python string for pandas to
hash (what runs from source).

    python bench/bench_distinct.py                      # 65,536 values of 400 bytes, 7 rounds
    python bench/bench_distinct.py --values 16000 --bytes 1000 --rounds 9

The values are like a run's ``scorer_kwargs`` whose rows each have their own ground truth: compact
JSON, every one distinct. Prints the CPU per value of each way (medians of the rounds, the two in
turn within each round) and their ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from scoring import compiled  # noqa: E402
from scoring.datasets.hashing import HASHED_IN_PLACE, hashes_through_python, text_hashes  # noqa: E402


def kwargs_texts(count: int, size: int, seed: int) -> pa.Array:
    """``count`` distinct compact JSON texts of about ``size`` bytes, as a batch's dictionary."""
    generator = random.Random(seed)
    texts = []
    for index in range(count):
        points = [
            [round(generator.uniform(0, 640), 1), round(generator.uniform(0, 480), 1)] for _ in range(4)
        ]
        value = {
            "answer_gt": {"type": "number", "value": index},
            "annotation_gt": {"type": "points", "value": points},
        }
        text = json.dumps(value, separators=(",", ":"))
        texts.append(text + "x" * max(0, size - len(text)))
    return pa.array(texts, pa.large_string())


def cpu_per_value(hash_values, values: pa.Array) -> float:
    started = time.process_time()
    hash_values(values)
    return (time.process_time() - started) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--values", type=int, default=65_536)
    parser.add_argument("--bytes", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    values = kwargs_texts(args.values, args.bytes, args.seed)
    in_place, pandas_way = [], []
    for _ in range(args.rounds):
        in_place.append(cpu_per_value(text_hashes, values))
        pandas_way.append(cpu_per_value(hashes_through_python, values))
    in_place_us, pandas_us = statistics.median(in_place) * 1e6, statistics.median(pandas_way) * 1e6
    print(
        f"command: python bench/bench_distinct.py --values {args.values} --bytes {args.bytes} --rounds {args.rounds}"
    )
    print(f"layer datasets.hashing: {compiled.layer_status()['datasets.hashing']}")
    print(f"{args.values:,} distinct values of {args.bytes} bytes, medians of {args.rounds} rounds:")
    print(
        f"  hashed in place (text_hashes{'' if HASHED_IN_PLACE else ', from source: the pandas way'}): {in_place_us:.3f} µs per value"
    )
    print(f"  made Python strings, hashed by pandas: {pandas_us:.3f} µs per value")
    print(f"  ratio: {in_place_us / pandas_us:.2f}x")


if __name__ == "__main__":
    main()
