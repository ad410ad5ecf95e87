"""Precision and recall of the ground-truth suspects, and how many a clean run raises.

Run from the project root: python bench/bench_suspects.py [--replicas 24] [--repeats 3]

The sample generator (``sample_data/make_sample_data.py``, fixed seed) writes a trained model's
rollouts for its 45 instances; every third instance's ground truth is corrupted (an item
shifted off its object, two sequence items or map keys swapped, a wrong answer) while the
simulated model answers the true instance. ``--replicas`` copies with other seeds and group
sizes 4, 8, 12 and 16 make the corrupted set; the same without corruption is the clean set.

Reported:

- **corrupted set**: precision and recall of :func:`scoring.review.consensus.suspects` against the
  generator's labels (a hit is the right instance *and* kind), overall, per corruption and per
  group size -- aim: recall >= 90 % at precision >= 80 %;
- **clean set**: suspects per 1,000 instances (all are false alarms);
- **noisy clean run**: the sample's ``ckpt-A`` / ``ckpt-B`` rollouts (early checkpoints with
  format failures, wrong answers and 0-1000 coordinates), one vote per GRPO group of 4
  (``split_by=("run", "step")``): suspects per 1,000 groups;
- **time**: median of ``suspects`` over ``--repeats`` on the corrupted and on the clean set, against
  a baseline measured in the same run: a bare pandas ``groupby(instance_id)`` mean of the answer and
  annotation rewards (the vectorised prefilter's floor).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COMMAND = "python bench/bench_suspects.py"
GROUP_SIZES = (4, 8, 12, 16)
RECALL_AIM, PRECISION_AIM = 0.90, 0.80


def generator():
    spec = importlib.util.spec_from_file_location("make_sample_data", ROOT / "sample_data" / "make_sample_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generated(gen, instances, replicas: int, corrupt_every: int, salt: str):
    """Rows and labels of ``replicas`` copies (group sizes cycling through GROUP_SIZES)."""
    rows, labels, sizes = [], [], {}
    for r in range(replicas):
        samples = GROUP_SIZES[r % len(GROUP_SIZES)]
        part, part_labels = gen.gt_audit_rollouts(instances, salt=f"{salt}{r}", samples=samples,
                                                  corrupt_every=corrupt_every, replica=r)
        rows += part
        labels += part_labels
        for row in part:
            sizes[row["instance_id"]] = samples
    return rows, labels, sizes


def score(rows):
    from scoring.runs import score_records

    base = ROOT / "sample_data" / "gt_audit"
    table = score_records(rows, name="bench.jsonl", base_dir=base, workers=1).table
    return table.set_index("row_id", drop=False) if "row_id" in table.columns else table


def judge(found, labels, sizes) -> dict:
    truth = {(x["instance_id"], x["kind"]): x["corruption"] for x in labels}
    hits = [(i, k) for i, k in zip(found["instance_id"], found["kind"], strict=True) if (i, k) in truth]
    precision = len(hits) / len(found) if len(found) else 1.0
    recall = len(hits) / len(truth) if truth else 1.0
    by_corruption = Counter(truth.values())
    found_by_corruption = Counter(truth[h] for h in hits)
    by_size = Counter(sizes[i] for i, _ in truth)
    found_by_size = Counter(sizes[i] for i, _ in hits)
    return {
        "precision": precision, "recall": recall, "suspects": len(found), "labels": len(truth), "hits": len(hits),
        "recall_by_corruption": {c: found_by_corruption[c] / n for c, n in sorted(by_corruption.items())},
        "recall_by_size": {s: found_by_size[s] / n for s, n in sorted(by_size.items())},
    }


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=24, help="copies of the 45 instances (default 24)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    from dashboard import loading, sources
    from scoring.review import consensus as cs

    gen = generator()
    instances = gen.build_bank().instances
    started = time.perf_counter()
    rows, labels, sizes = generated(gen, instances, args.replicas, gen.AUDIT_CORRUPT_EVERY, "bench-corrupt")
    corrupted = score(rows)
    clean_rows, _, _ = generated(gen, instances, args.replicas, 0, "bench-clean")
    clean = score(clean_rows)
    print(f"{COMMAND} --replicas {args.replicas} --repeats {args.repeats}  (cpus: {os.cpu_count()})")
    print(f"generated and scored {len(corrupted):,} + {len(clean):,} rows in {time.perf_counter() - started:.1f} s")

    found = cs.suspects(corrupted)
    result = judge(found, labels, sizes)
    instances_n = corrupted["instance_id"].nunique()
    print(f"\ncorrupted set: {instances_n:,} instances, {result['labels']:,} corrupted, {result['suspects']:,} suspects")
    print(f"  precision {result['precision']:.1%}  recall {result['recall']:.1%}  "
          f"(aim: recall >= {RECALL_AIM:.0%} at precision >= {PRECISION_AIM:.0%}: "
          f"{'met' if result['recall'] >= RECALL_AIM and result['precision'] >= PRECISION_AIM else 'NOT met'})")
    print("  recall by corruption: " + ", ".join(f"{c} {v:.1%}" for c, v in result["recall_by_corruption"].items()))
    print("  recall by group size: " + ", ".join(f"{s}: {v:.1%}" for s, v in result["recall_by_size"].items()))

    clean_found = cs.suspects(clean)
    clean_instances = clean["instance_id"].nunique()
    print(f"\nclean set: {clean_instances:,} instances, {len(clean_found):,} suspects = "
          f"{1000 * len(clean_found) / clean_instances:.1f} per 1,000 instances")

    sample = loading.load_cached(sources.sample_source()).table
    canonical = sample[sample["source_file"].isin(["rollouts_ckpt-A.jsonl", "rollouts_ckpt-B.jsonl"])]
    groups = canonical.groupby(["run", "step", "instance_id"], observed=True).ngroups
    noisy = cs.suspects(canonical, cs.ConsensusSettings(split_by=("run", "step")))
    print(f"noisy clean run (sample ckpt-A/B, GRPO groups of 4): {groups:,} groups, {len(noisy):,} suspects = "
          f"{1000 * len(noisy) / groups:.1f} per 1,000 groups "
          f"({', '.join(f'{k} {v}' for k, v in Counter(noisy['kind']).items()) or 'none'})")
    everything = cs.suspects(canonical)
    print(f"  same rows, one vote per instance across runs and steps: {len(everything):,} suspects "
          f"among {canonical['instance_id'].nunique():,} instances")

    def baseline():
        corrupted.groupby("instance_id", observed=True)[["answer_reward", "annotation_reward"]].mean()

    base = timed(baseline, args.repeats)
    full = timed(lambda: cs.suspects(corrupted), args.repeats)
    print(f"\ntime on the corrupted set ({len(corrupted):,} rows), median of {args.repeats}:")
    print(f"  suspects            {full * 1000:8.1f} ms  ({full / len(corrupted) * 1e6:.0f} us per row)")
    print(f"  baseline groupby    {base * 1000:8.1f} ms")
    print(f"  ratio               {full / base:8.1f} x")
    clean_time = timed(lambda: cs.suspects(clean), args.repeats)
    print(f"clean set ({len(clean):,} rows; most groups settled from their columns): "
          f"{clean_time * 1000:.1f} ms ({clean_time / base:.1f} x the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
