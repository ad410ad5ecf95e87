"""``rollouts_small.csv``: canonical columns as CSV, the structured fields as JSON strings."""

from __future__ import annotations

import csv
import io
import json

from .common import dumps
from .simulated_model import simulate

CSV_COLUMNS = (
    "id",
    "instance_id",
    "task_id",
    "run",
    "step",
    "sample_index",
    "image",
    "image_size",
    "prompt",
    "response",
    "answer_gt",
    "annotation_gt",
    "reward_contract",
    "trace_output_mode",
)


def csv_rollouts(instances):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    plans = {}
    for inst in instances:
        response, plan = simulate(inst, "ckpt-B", 200, 0, salt="csv")
        rid = f"csv/{inst['id']}/s0"
        writer.writerow(
            [
                rid,
                inst["id"],
                inst["task_id"],
                "ckpt-B",
                200,
                0,
                inst["image"],
                json.dumps(inst["size"]) if inst["keep_size"] else "",
                inst["prompt"],
                response,
                dumps(inst["answer_gt"]),
                dumps(inst["annotation_gt"]),
                dumps(inst["reward_contract"]),
                inst["trace_output_mode"],
            ]
        )
        plans[rid] = dict(plan, instance_id=inst["id"])
    return buf.getvalue(), plans
