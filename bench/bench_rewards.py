"""Throughput of the simple scorers on GSM8K-style worked solutions.

Run from the project root: python bench/bench_rewards.py

``last_number`` runs on the hot path of every evaluation, so it has a target of
30,000 calls/second on one core for ~500-character solutions. Absolute numbers
depend on the machine, so the result is also given as a ratio against a bare
``re.findall(r"-?\\d+", text)[-1]`` loop measured in the same run.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import sys
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scoring.rewards import simple as rewards

COMMAND = "python bench/bench_rewards.py"
SEED = 20240601
N_TEXTS = 200
TARGET_CHARS = 500
REPEATS = 7
CALLS_PER_REPEAT = 20_000
TARGET_CALLS_PER_SECOND = 30_000

_NAMES = ("Natalia", "Weng", "Betty", "Julie", "James", "Mark", "Albert", "Ken")
_ITEMS = ("clips", "apples", "pages", "dollars", "eggs", "marbles", "tickets", "cookies")
_STEPS = (
    "{name} had {a} {item} and bought {b} more, so {name} has {a} + {b} = <<{a}+{b}={s}>>{s} {item}.",
    "Each box holds {b} {item}, so {a} boxes hold {a} * {b} = <<{a}*{b}={p}>>{p} {item}.",
    "After giving away {b} {item}, {a} - {b} = <<{a}-{b}={d}>>{d} {item} are left.",
    "The price went from ${a} to ${big:,}, which is {pct}% more than last year.",
    "Half of {a} is {a}/2 = <<{a}/2={h}>>{h}, and {name} keeps the rest.",
)


def worked_solution(rng: random.Random) -> tuple[str, str]:
    """One deterministic ~500-character worked solution and its gold (``#### answer``)."""
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    lines: list[str] = []
    answer = 0
    while sum(len(line) + 1 for line in lines) < TARGET_CHARS - 60:
        a, b = rng.randint(10, 999), rng.randint(2, 99)
        step = rng.choice(_STEPS)
        values = {"s": a + b, "p": a * b, "d": a - b, "h": a / 2, "big": a * 1000 + b, "pct": b}
        lines.append(step.format(name=name, item=item, a=a, b=b, **values))
        answer = values["s"]
    lines.append(f"So the answer is {answer} {item}.")
    lines.append(f"#### {answer}")
    return "\n".join(lines), f"#### {answer}"


def median_rate(call, tasks, outputs) -> float:
    """Median calls/second over REPEATS runs of CALLS_PER_REPEAT calls."""
    pairs = [(tasks[i % len(tasks)], outputs[i % len(outputs)]) for i in range(CALLS_PER_REPEAT)]
    rates = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for task, output in pairs:
            call(task, output)
        rates.append(CALLS_PER_REPEAT / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    print(COMMAND)
    rng = random.Random(SEED)
    solutions = [worked_solution(rng) for _ in range(N_TEXTS)]
    outputs = [text for text, _ in solutions]
    tasks = [SimpleNamespace(id=f"t{i}", meta={"gold": gold}) for i, (_, gold) in enumerate(solutions)]
    mean_chars = statistics.mean(len(text) for text in outputs)
    print(
        f"{N_TEXTS} worked solutions, mean {mean_chars:.0f} chars; {REPEATS} repeats x {CALLS_PER_REPEAT} calls"
    )

    digits = re.compile(r"-?\d+")

    def baseline(task, output):
        return digits.findall(output)[-1]

    scorer = rewards.last_number()
    assert all(scorer(task, output) == 1.0 for task, output in zip(tasks, outputs, strict=True))

    base = median_rate(baseline, tasks, outputs)
    rate = median_rate(scorer, tasks, outputs)
    verdict = "meets" if rate >= TARGET_CALLS_PER_SECOND else "MISSES"
    print(f"baseline re.findall(r'-?\\d+')[-1]: {base:12,.0f} calls/s (median)")
    print(
        f"last_number()                    : {rate:12,.0f} calls/s (median), "
        f"{rate / base:.2f}x baseline; {verdict} the {TARGET_CALLS_PER_SECOND:,}/s target"
    )
    others = {
        "numeric_close()": rewards.numeric_close(),
        "exact_match()": rewards.exact_match(),
        "contains()": rewards.contains(),
    }
    for label, other in others.items():
        other_rate = median_rate(other, tasks, outputs)
        print(f"{label:<33}: {other_rate:12,.0f} calls/s (median), {other_rate / base:.2f}x baseline")


if __name__ == "__main__":
    main()
