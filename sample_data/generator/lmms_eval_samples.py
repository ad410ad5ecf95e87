"""The lmms-eval samples file (``lmms_eval/samples_trace_*.jsonl``): the instance as ``doc``, the
response in ``resps``, the hashes and the trace metrics.
"""

from __future__ import annotations

import hashlib
import json

from .common import dumps
from .simulated_model import simulate

LMMS_FILE = "lmms_eval/samples_trace_2026-11-30T10-00-00.jsonl"


def lmms_rollouts(instances):
    rows, plans = [], {}
    for i, inst in enumerate(instances):
        response, plan = simulate(inst, "ckpt-B", 300, 0, salt="lmms")
        exp = plan["expected"]
        doc = {
            "id": inst["id"],
            "task_id": inst["task_id"],
            "question": inst["prompt"],
            "image": "../" + inst["image"],
            "answer_gt": inst["answer_gt"],
            "annotation_gt": inst["annotation_gt"],
            "reward_contract": inst["reward_contract"],
            "trace_output_mode": inst["trace_output_mode"],
        }
        if inst["keep_size"]:
            doc["image_size"] = inst["size"]
        target = json.dumps(inst["answer_gt"]["value"], ensure_ascii=False)
        rows.append(
            {
                "doc_id": i,
                "doc": doc,
                "target": target,
                "arguments": [
                    [inst["prompt"], {"max_new_tokens": 2048, "temperature": 0.0, "do_sample": False}]
                ],
                "resps": [[response]],
                "filtered_resps": [response],
                "filter": "none",
                "metrics": ["trace_overall", "trace_accuracy", "trace_format"],
                "doc_hash": hashlib.sha256(dumps(doc).encode()).hexdigest(),
                "prompt_hash": hashlib.sha256(inst["prompt"].encode()).hexdigest(),
                "target_hash": hashlib.sha256(target.encode()).hexdigest(),
                "trace_overall": exp["overall"],
                "trace_accuracy": exp["accuracy"],
                "trace_format": exp["format"],
            }
        )
        plans[f"{LMMS_FILE}:{i + 1}"] = dict(plan, instance_id=inst["id"])
    return rows, plans
