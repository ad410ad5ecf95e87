"""TRL GRPO completions tables (``trl/completions_*.parquet``) and the instances their prompts
come from (``trl/train_instances.jsonl``).
"""

from __future__ import annotations

import math
from pathlib import Path

from .common import SAMPLES_PER_PROMPT, STEPS, rng_for
from .ground_truth import instance_record
from .simulated_model import simulate

TRL_STEPS = (50, 100)
TRL_PROMPTS = 20


def trl_rollouts(instances):
    rng = rng_for("trl-pick")
    picked = sorted(rng.sample(range(len(instances)), TRL_PROMPTS))
    train = [instances[i] for i in picked]
    tables, plans = {}, {}
    for step in TRL_STEPS:
        cols = {
            "step": [],
            "prompt": [],
            "completion": [],
            "reward_trace": [],
            "reward_format": [],
            "advantage": [],
        }
        policy_step = STEPS[TRL_STEPS.index(step)]
        for inst in train:
            group = []
            for k in range(SAMPLES_PER_PROMPT):
                response, plan = simulate(inst, "ckpt-B", policy_step, k, salt=f"trl-{step}")
                exp = plan["expected"]
                group.append((response, exp["overall"], exp["format"]))
                plans[f"trl/completions_{step}.parquet:{len(cols['step']) + k}"] = dict(
                    plan, instance_id=inst["id"]
                )
            totals = [r + f for _, r, f in group]
            mean = sum(totals) / len(totals)
            std = math.sqrt(sum((t - mean) ** 2 for t in totals) / (len(totals) - 1))
            for (response, r, f), t in zip(group, totals, strict=True):
                cols["step"].append(step)
                cols["prompt"].append(inst["prompt"])
                cols["completion"].append(response)
                cols["reward_trace"].append(r)
                cols["reward_format"].append(f)
                cols["advantage"].append((t - mean) / (std + 1e-4))
        tables[f"trl/completions_{step}.parquet"] = cols
    train_rows = [instance_record(inst, "../") for inst in train]
    return tables, train_rows, plans


def write_parquet(path: Path, cols: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("step", pa.int64()),
            ("prompt", pa.string()),
            ("completion", pa.string()),
            ("reward_trace", pa.float64()),
            ("reward_format", pa.float64()),
            ("advantage", pa.float64()),
        ]
    )
    table = pa.Table.from_pydict(cols, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="snappy", use_dictionary=False, write_statistics=False)
