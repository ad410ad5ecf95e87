#!/usr/bin/env python3
"""Deterministic generator for Rolloutscope's sample data.

    python sample_data/make_sample_data.py            # (re)writes sample_data/
    python sample_data/make_sample_data.py --out DIR  # writes the same files into DIR

Every run with the same Python / Pillow / numpy / pyarrow produces byte-identical files:
all randomness comes from seeded ``random.Random`` / ``numpy`` generators, JSON is written
with ``sort_keys`` and fixed separators, PNGs carry no timestamp chunk.

The generator simulates a model (and a trainer that logs rewards); it deliberately does
NOT import the ``scoring`` package. The rewards it logs are computed by a small,
independent re-implementation of the v0 contract so the logged-vs-recomputed view of the
dashboard has something to compare; the tests check them against ``scoring``.

Only Pillow, numpy, pyarrow (for the TRL parquet files) and the standard library are used.

This script is the command line; the code is the ``generator`` package beside it, one module
per family of files (``generator/__init__.py`` lists them).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the generator package sits beside this script
    sys.path.insert(0, str(HERE))

from generator import (  # noqa: E402
    AUDIT_CORRUPT_EVERY,
    build_bank,
    canonical_rollouts,
    generate,
    gt_audit_rollouts,
)

__all__ = ["AUDIT_CORRUPT_EVERY", "build_bank", "canonical_rollouts", "generate", "gt_audit_rollouts", "main"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE), help="output directory (default: the sample_data folder)")
    args = parser.parse_args(argv)
    result = generate(args.out)
    total = sum((Path(args.out) / f).stat().st_size for f in result["files"])
    print(f"wrote {len(result['files'])} files, {total / 1e6:.2f} MB, into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
