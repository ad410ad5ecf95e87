"""What the training adapters add to the verifier, per completion.

    python bench/bench_integrations.py              # the sample's verl and TRL rows, 20 passes
    python bench/bench_integrations.py --passes 50

Prints medians over ``--repeat`` runs (default 5) of microseconds per completion, one core:

- bare: ``score_trace_response`` with each row's arguments already unpacked, over the verl rows
  and over the TRL rows (each adapter's ratio is to the bare loop over its own rows);
- verl: ``compute_score`` per response (the naive manager), and in its batch form;
- TRL: ``trace_reward`` over a batch of distinct completions, and all four functions on the same
  batch (they share each completion's evaluation, so four cost about one).

The rows are the bundled sample's verl dumps (90 rows, ground truth as JSON text, as a verl
dataset stores it) and TRL completions with their instances' columns (160 rows).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from scoring import score_trace_response  # noqa: E402
from scoring.integrations.trl import TraceRewards  # noqa: E402
from scoring.integrations.verl import compute_score  # noqa: E402
from scoring.verifier import MODE_ALIASES  # noqa: E402

SAMPLE = ROOT / "sample_data"


def per_completion(run, count: int, repeat: int) -> float:
    """Median microseconds per completion of ``run()`` (which handles ``count`` completions)."""
    run()  # warm caches (options, readers) as a training run's first step does
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=20, help="copies of the sample rows per run")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    verl_rows = [
        json.loads(line) for path in sorted((SAMPLE / "verl").glob("*.jsonl")) for line in path.open()
    ]
    verl_rows *= args.passes
    texts = [json.dumps(row["gts"]) for row in verl_rows]
    bare_args = [
        dict(
            response=row["output"], answer_gt=row["gts"]["answer_gt"], annotation_gt=row["gts"]["annotation_gt"],
            reward_contract=row["gts"]["reward_contract"],
            trace_reward_mode=MODE_ALIASES[row["gts"]["trace_output_mode"]],
        )
        for row in verl_rows
    ]  # fmt: skip
    n = len(verl_rows)
    results = {
        "bare score_trace_response, verl rows": per_completion(
            lambda: [score_trace_response(**a) for a in bare_args], n, args.repeat
        ),
        "verl compute_score, per response": per_completion(
            lambda: [compute_score("trace", r["output"], t, None) for r, t in zip(verl_rows, texts, strict=True)], n, args.repeat
        ),
        "verl compute_score, batch form": per_completion(
            lambda: compute_score(
                data_sources=["trace"] * n, solution_strs=[r["output"] for r in verl_rows],
                ground_truths=texts, extra_infos=[None] * n,
            ),
            n, args.repeat,
        ),
    }  # fmt: skip

    # TRL: a fresh set of functions per run, and every completion once (GRPO's completions of a
    # prompt differ): nothing is left for the shared evaluations but what one step shares
    instances = {
        json.loads(line)["prompt"]: json.loads(line)
        for line in (SAMPLE / "trl" / "train_instances.jsonl").open()
    }
    table = pd.concat([pd.read_parquet(p) for p in sorted((SAMPLE / "trl").glob("completions_*.parquet"))])
    completions = list(table["completion"])
    matched = [instances[prompt] for prompt in table["prompt"]]
    names = sorted({key for instance in matched for key in instance} - {"prompt"})
    columns = {name: [instance.get(name) for instance in matched] for name in names}
    image_root = str(SAMPLE / "trl")

    def all_four() -> None:
        rewards = TraceRewards(image_root=image_root)
        for function in (
            rewards.trace_reward,
            rewards.answer_reward,
            rewards.annotation_reward,
            rewards.format_reward,
        ):
            function(completions=completions, **columns)

    m = len(completions)
    repeat = args.repeat * args.passes // 4 or 1
    trl_bare_args = [
        dict(
            response=text, answer_gt=instance["answer_gt"], annotation_gt=instance["annotation_gt"],
            reward_contract=instance["reward_contract"], image_size=instance.get("image_size"),
            trace_reward_mode=MODE_ALIASES[instance["trace_output_mode"]],
        )
        for text, instance in zip(completions, matched, strict=True)
    ]  # fmt: skip
    results["bare score_trace_response, TRL rows"] = per_completion(
        lambda: [score_trace_response(**a) for a in trl_bare_args], m, repeat
    )
    results["TRL trace_reward"] = per_completion(
        lambda: TraceRewards(image_root=image_root).trace_reward(completions=completions, **columns),
        m,
        repeat,
    )
    results["TRL all four functions"] = per_completion(all_four, m, repeat)
    print(f"python bench/bench_integrations.py --passes {args.passes} --repeat {args.repeat}")
    print(f"{n} verl rows, {m} TRL completions; median microseconds per completion, one core")
    bare = None
    for name, value in results.items():  # each group starts with its bare loop
        bare = value if name.startswith("bare") else bare
        print(f"  {name:<40} {value:8.1f} us   x{value / bare:.2f} of bare")


if __name__ == "__main__":
    main()
