"""verl validation dumps (``verl/100.jsonl``, ``verl/200.jsonl``): chat-templated input, output,
the ground truth in ``gts``, the score and the reward extras.
"""

from __future__ import annotations

from .simulated_model import simulate

VERL_STEPS = (100, 200)


def chat_input(prompt):
    # what verl's dump shows for a Qwen2.5-VL prompt decoded with skip_special_tokens=True
    return f"system\nYou are a helpful assistant.\nuser\n{prompt}\nassistant\n"


def verl_rollouts(instances):
    files, plans = {}, {}
    for step in VERL_STEPS:
        rows = []
        for i, inst in enumerate(instances):
            response, plan = simulate(inst, "ckpt-A", step, 0, salt="verl")
            exp = plan["expected"]
            gts = {
                "answer_gt": inst["answer_gt"],
                "annotation_gt": inst["annotation_gt"],
                "reward_contract": inst["reward_contract"],
                "trace_output_mode": inst["trace_output_mode"],
            }
            rows.append(
                {
                    "input": chat_input(inst["prompt"]),
                    "output": response,
                    "gts": gts,
                    "score": exp["overall"],
                    "step": step,
                    "acc": exp["accuracy"],
                    "format": exp["format"],
                    "annotation_reward": exp["annotation_reward"] or 0.0,
                }
            )
            plans[f"verl/{step}.jsonl:{i + 1}"] = dict(plan, instance_id=inst["id"])
        files[f"verl/{step}.jsonl"] = rows
    return files, plans
