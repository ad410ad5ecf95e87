"""Benchmark of the trace verifier: throughput, cost versus length, hostile inputs.

Run:  python bench/bench_trace.py            (about a minute; one core)
Prints medians over repeats and ratios against baselines measured in the same run.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring import score_trace_response  # noqa: E402

REPEATS = 7
WORDS = (
    "the bar near the left axis appears to have a value of about counting carefully I find segments "
    "in total legend maps darker shade to second series comparing panels marker differs in color"
).split()


def prose(length: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    words = []
    size = 0
    while size < length:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:length]


def contract(annotation_type: str, reward_id: str) -> dict:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": reward_id, "type": annotation_type},
    }


def box_case(prose_chars: int) -> dict:
    return {
        "response": prose(prose_chars) + '\n\n{"answer": 7, "annotation": [12, 30, 118, 140]}',
        "answer_gt": {"type": "integer", "value": 7},
        "annotation_gt": {"type": "bbox", "value": [10, 32, 120, 138]},
        "reward_contract": contract("bbox", "bbox_soft_iou_v0"),
        "image_size": [640, 480],
    }


def point_case(prose_chars: int) -> dict:
    return {
        "response": prose(prose_chars) + '\n\n{"answer": 7, "annotation": [100, 200]}',
        "answer_gt": {"type": "integer", "value": 7},
        "annotation_gt": {"type": "point", "value": [103, 198]},
        "reward_contract": contract("point", "point_soft_distance_v0"),
        "image_size": [640, 480],
    }


def median_seconds_per_call(function, calls: int) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def naive_baseline(kwargs: dict):
    """What a minimal hand-written verifier does: parse the last object, compare the answer."""
    response = kwargs["response"]
    start = response.rfind("{", 0, response.rfind("{") + 1)
    value = json.loads(response[start:])
    return float(value.get("answer") == kwargs["answer_gt"]["value"])


def main() -> None:
    print("command: python bench/bench_trace.py")
    print(f"python {sys.version.split()[0]}, {REPEATS} repeats, medians\n")

    print("1. throughput on ~2 KB of prose + final object (target >= 50,000 calls/s)")
    for name, make in (("bbox", box_case), ("point", point_case)):
        kwargs = make(2000)
        per_call = median_seconds_per_call(lambda kwargs=kwargs: score_trace_response(**kwargs), 20_000)
        baseline = median_seconds_per_call(lambda kwargs=kwargs: naive_baseline(kwargs), 20_000)
        print(
            f"   {name:6s} {1 / per_call:10,.0f} calls/s  ({per_call * 1e6:6.1f} us/call; "
            f"naive json.loads verifier {1 / baseline:10,.0f} calls/s, ratio {per_call / baseline:4.1f}x)"
        )

    print("\n2. cost versus response length (target: 20 KB at most 10x the 2 KB cost)")
    costs = {}
    for chars in (2_000, 20_000, 200_000):
        kwargs = box_case(chars)
        calls = max(200, 4_000_000 // chars)
        costs[chars] = median_seconds_per_call(lambda kwargs=kwargs: score_trace_response(**kwargs), calls)
        print(f"   {chars:>7,} chars {costs[chars] * 1e6:9.1f} us/call  ratio to 2 KB {costs[chars] / costs[2000]:5.2f}x")

    print("\n3. 20 KB with 250 code fences, ending in a fenced object (target < 1 ms)")
    fences = "".join(f"Step {i}:\n```python\nx = {i}\n```\n" for i in range(250))
    fences = (fences + prose(20_000 - len(fences)))[:19_950]
    kwargs = dict(box_case(0), response=fences + '\n```json\n{"answer": 7, "annotation": [12, 30, 118, 140]}\n```')
    seconds = median_seconds_per_call(lambda: score_trace_response(**kwargs), 200)
    result = score_trace_response(**kwargs)
    print(f"   {seconds * 1e3:.3f} ms/call (format {result['format']}, overall {result['overall']:.3f})")

    print("\n4. unmatched opening braces (target: 10^5 under 20 ms; twice the input about twice the time)")
    timings = {}
    for count in (100_000, 200_000):
        kwargs = dict(box_case(0), response="{" * count)
        timings[count] = median_seconds_per_call(lambda kwargs=kwargs: score_trace_response(**kwargs), 5)
        print(f"   {count:>7,} braces {timings[count] * 1e3:8.2f} ms")
    print(f"   ratio 2x input: {timings[200_000] / timings[100_000]:.2f}x")
    for name, unit in (("'{ '", "{ "), ("'{\"'", '{"'), ("'\\\\\"{'", '\\"{')):
        small = median_seconds_per_call(lambda unit=unit: score_trace_response(**dict(box_case(0), response=unit * 50_000)), 3)
        large = median_seconds_per_call(lambda unit=unit: score_trace_response(**dict(box_case(0), response=unit * 100_000)), 3)
        print(f"   {name:8s} x 50,000: {small * 1e3:7.2f} ms, x 100,000: {large * 1e3:7.2f} ms, ratio {large / small:.2f}x")


if __name__ == "__main__":
    main()
