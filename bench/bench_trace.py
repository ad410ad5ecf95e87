"""Benchmark of the trace verifier: throughput, cost versus length, hostile inputs.

Run:  python bench/bench_trace.py            (about two minutes; one core)
      python bench/bench_trace.py --against DIR   (also pairs slices with the scorer of another
                                                   checkout DIR, e.g. the commit before a change)
Prints medians over repeats and ratios against baselines measured in the same run:
a naive json.loads verifier, and the same scorer run interpreted
(ROLLOUTSCOPE_PURE_PYTHON=1, in a subprocess) instead of its Cython build.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring import compiled, score_trace_response  # noqa: E402

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


#: Throughput is sampled in many short slices: this shared VM's speed drifts by up to 2x
#: over seconds, so a median over slices spread across ~40 s is the typical speed. The
#: interpreted scorer runs in a child process, slice for slice in turn with this one, so
#: both meet the same drift and their ratio is paired.
THROUGHPUT_SLICES = 121
CALLS_PER_SLICE = 4_000
CASES = {"bbox": box_case, "point": point_case}


def time_slice(kwargs: dict) -> float:
    start = time.perf_counter()
    for _ in range(CALLS_PER_SLICE):
        score_trace_response(**kwargs)
    return (time.perf_counter() - start) / CALLS_PER_SLICE


def serve_slices() -> None:
    """Child side: time one slice per case name read from stdin, answer with seconds per call."""
    cases = {name: make(2000) for name, make in CASES.items()}
    for line in sys.stdin:
        print(time_slice(cases[line.strip()]), flush=True)


def throughput(against: str | None = None) -> tuple[dict[str, list[float]], dict[str, dict[str, list[float]]]]:
    """Seconds per call per slice, for this (compiled) process and each child: the interpreted
    scorer and, with ``against``, the scorer of that other checkout (its own bench serves slices)."""
    environment = dict(os.environ, **{compiled.PURE_PYTHON_ENV: "1"})
    commands = {"interpreted": ([sys.executable, __file__, "--serve-slices"], environment)}
    if against is not None:
        other = Path(against).resolve() / "bench" / Path(__file__).name
        commands["against"] = ([sys.executable, str(other), "--serve-slices"], dict(os.environ))
    children = {
        label: subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for label, (command, env) in commands.items()
    }
    cases = {name: make(2000) for name, make in CASES.items()}
    ours: dict[str, list[float]] = {name: [] for name in cases}
    theirs = {label: {name: [] for name in cases} for label in children}
    try:
        for _ in range(THROUGHPUT_SLICES):
            for name, kwargs in cases.items():
                ours[name].append(time_slice(kwargs))
                for label, child in children.items():
                    child.stdin.write(name + "\n")
                    child.stdin.flush()
                    theirs[label][name].append(float(child.stdout.readline()))
    finally:
        for child in children.values():
            child.stdin.close()
            child.wait()
    return ours, theirs


def quartiles(per_call: list[float]) -> str:
    low, _, high = statistics.quantiles([1 / x for x in per_call], n=4)
    return f"{low:,.0f}-{high:,.0f}"


def build_line() -> str:
    status = compiled.layer_status()
    if all(value == compiled.COMPILED for value in status.values()):
        return f"build: compiled with Cython ({', '.join(status)})"
    return "build: NOT fully compiled: " + "; ".join(f"{layer}: {value}" for layer, value in status.items())


def main() -> None:
    if "--serve-slices" in sys.argv:
        serve_slices()
        return
    against = sys.argv[sys.argv.index("--against") + 1] if "--against" in sys.argv else None
    print("command: python bench/bench_trace.py" + (f" --against {against}" if against else ""))
    print(f"python {sys.version.split()[0]}, medians; {build_line()}\n")

    print(
        "1. throughput on ~2 KB of prose + final object (target >= 50,000 calls/s; median of "
        f"{THROUGHPUT_SLICES} slices of {CALLS_PER_SLICE:,} calls, interquartile range in brackets)"
    )
    ours, children = throughput(against)
    interpreted = children["interpreted"]
    for name, make in CASES.items():
        kwargs = make(2000)
        per_call = statistics.median(ours[name])
        slower = statistics.median(i / c for i, c in zip(interpreted[name], ours[name], strict=True))
        baseline = median_seconds_per_call(lambda kwargs=kwargs: naive_baseline(kwargs), 20_000)  # 7 repeats
        print(
            f"   {name:6s} {1 / per_call:8,.0f} calls/s [{quartiles(ours[name])}] ({per_call * 1e6:5.1f} us/call); "
            f"interpreted {1 / statistics.median(interpreted[name]):8,.0f} [{quartiles(interpreted[name])}], "
            f"{slower:4.2f}x slower (paired slices); naive json.loads verifier {1 / baseline:8,.0f} "
            f"(the scorer costs {per_call / baseline:3.1f}x that)"
        )
        if against is not None:
            other = children["against"][name]
            ratio = statistics.median(c / o for c, o in zip(ours[name], other, strict=True))
            print(
                f"          the --against scorer {1 / statistics.median(other):8,.0f} calls/s; this one takes "
                f"{ratio:4.2f}x its time (paired slices)"
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

    print("\n5. a one-line fenced object after a run of blanks (```json<blanks>{...}```; twice the blanks about twice the time)")
    fenced = {}
    for count in (100_000, 200_000):
        response = "```json" + " " * count + '{"answer": 7, "annotation": [12, 30, 118, 140]}```'
        fenced[count] = median_seconds_per_call(lambda response=response: score_trace_response(**dict(box_case(0), response=response)), 5)
        print(f"   {count:>7,} blanks {fenced[count] * 1e3:8.3f} ms")
    print(f"   ratio 2x input: {fenced[200_000] / fenced[100_000]:.2f}x")


if __name__ == "__main__":
    main()
