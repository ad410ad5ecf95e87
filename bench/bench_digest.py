"""Benchmark of the content digest a dataset records for each input (``scoring.datasets.file_digest``,
BLAKE3), against SHA-256 read the same way: the scoring process hashes every byte of every new
input while its workers score it, so the digest's CPU is the scoring's.

    python bench/bench_digest.py                    # a 512 MB file of JSONL-like lines, 5 rounds
    python bench/bench_digest.py --mb 2048 --rounds 3

The file is written once into a temporary folder (in the page cache afterwards, as an input just
scored is). Prints the CPU per MB of each (medians of the rounds, the two in turn within each
round) and their ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scoring.datasets import DIGEST_ALGORITHM, file_digest  # noqa: E402


def sha256_digest(path: Path) -> str:
    """SHA-256 of the file, read into one reused buffer as ``file_digest`` reads it."""
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(1 << 20))
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            digest.update(buffer[:count])
    return digest.hexdigest()


def write_lines(path: Path, megabytes: int, seed: int) -> None:
    generator = random.Random(seed)
    words = [bytes(generator.choices(b"abcdefghijklmnopqrstuvwxyz", k=generator.randint(2, 9))) for _ in range(500)]
    with open(path, "wb") as handle:
        written = 0
        while written < megabytes << 20:
            line = b'{"response": "' + b" ".join(generator.choices(words, k=300)) + b'", "score": 0.5}\n'
            handle.write(line)
            written += len(line)


def cpu_per_megabyte(digest, path: Path) -> float:
    started = time.process_time()
    digest(path)
    return (time.process_time() - started) / (os.path.getsize(path) / (1 << 20))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-digest-") as folder:
        path = Path(folder) / "run.jsonl"
        write_lines(path, args.mb, args.seed)
        size = os.path.getsize(path)
        ours, baseline = [], []
        for _ in range(args.rounds):
            ours.append(cpu_per_megabyte(file_digest, path))
            baseline.append(cpu_per_megabyte(sha256_digest, path))
        ours_ms, baseline_ms = statistics.median(ours) * 1e3, statistics.median(baseline) * 1e3
    print(f"command: python bench/bench_digest.py --mb {args.mb} --rounds {args.rounds}")
    print(f"file: {size / (1 << 20):,.0f} MB of JSONL-like lines; medians of {args.rounds} rounds")
    print(f"file_digest ({DIGEST_ALGORITHM}): {ours_ms:.3f} ms of CPU per MB ({1e3 / ours_ms:,.0f} MB/s)")
    print(f"SHA-256, read the same way: {baseline_ms:.3f} ms of CPU per MB ({1e3 / baseline_ms:,.0f} MB/s)")
    print(f"ratio: {ours_ms / baseline_ms:.2f}x")


if __name__ == "__main__":
    main()
