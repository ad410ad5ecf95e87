"""The canonical trace runs, one file per checkpoint: ``rollouts_ckpt-A.jsonl`` and ``rollouts_ckpt-B.jsonl``.

Fixed early-step slots make every behaviour and format reason occur; ckpt-A logs its rewards,
a few of them deliberately drifted.
"""

from __future__ import annotations

from .common import RUNS, SAMPLES_PER_PROMPT, STEPS, rng_for
from .ground_truth import gt_fields
from .responses import BAD_WRAPPERS, GOOD_WRAPPERS, applicable_wrappers
from .simulated_model import GEOM_BEHAVIOURS, applicable_geoms, simulate


class Cycler:
    """Deterministic round-robin over a list, skipping entries that do not apply."""

    def __init__(self, items):
        self.items, self.i = list(items), 0

    def next(self, allowed):
        for _ in range(len(self.items)):
            item = self.items[self.i % len(self.items)]
            self.i += 1
            if item in allowed:
                return item
        return None


def forced_plan(run, step, k, inst, cyc):
    """Fixed slots that guarantee every behaviour and format reason occurs (the rest is random).

    They sit at the early steps, so the runs still improve over training.
    """
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    if k == 3 and run == "ckpt-A" and step in (100, 200):
        w = cyc["bad"].next(applicable_wrappers(inst, BAD_WRAPPERS))
        return {"wrapper": w, "correct": True, "behaviour": "jitter"}
    if k == 3 and (run, step) == ("ckpt-B", 100):
        return {"wrapper": cyc["good"].next(GOOD_WRAPPERS), "correct": True, "behaviour": "jitter"}
    if not aa:
        return None
    if k == 1 and (run, step) == ("ckpt-B", 300):
        return {"behaviour": "near_miss", "correct": True, "wrapper": "prose"}
    if k == 2 and step == 100:
        allowed = [g for g in applicable_geoms(inst) if g not in ("jitter", "near_miss")]
        return {"behaviour": cyc["geom"].next(allowed), "correct": True, "recoverable": True}
    if k == 0 and (run, step) == ("ckpt-A", 100):
        return {"behaviour": "jitter", "correct": False, "recoverable": True}
    return None


def canonical_rollouts(instances):
    cyc = {"bad": Cycler(BAD_WRAPPERS), "good": Cycler(GOOD_WRAPPERS), "geom": Cycler(GEOM_BEHAVIOURS[2:])}
    files, plans = {}, {}
    for run in RUNS:
        rows = []
        for step in STEPS:
            for inst in instances:
                for k in range(SAMPLES_PER_PROMPT):
                    force = forced_plan(run, step, k, inst, cyc)
                    response, plan = simulate(inst, run, step, k, force=force)
                    rid = f"{run}/step-{step}/{inst['id']}/s{k}"
                    row = {
                        "id": rid,
                        "instance_id": inst["id"],
                        "task_id": inst["task_id"],
                        "run": run,
                        "step": step,
                        "sample_index": k,
                        "response": response,
                    }
                    row.update(gt_fields(inst))
                    if inst["trace_output_mode"] != "answer_and_annotation":
                        row["trace_output_mode"] = inst["trace_output_mode"]
                    if run == "ckpt-A":  # this trainer logged its rewards next to each rollout
                        exp = plan["expected"]
                        row.update(score=exp["overall"], acc=exp["accuracy"], format=exp["format"])
                    plan["forced"] = force is not None
                    rows.append(row)
                    plans[rid] = plan
        files[run] = rows
    apply_drift(files["ckpt-A"], plans)
    return files, plans


def apply_drift(rows, plans):
    """A few logged rewards that deliberately disagree with the contract (stale trainer code)."""
    rng = rng_for("drift")
    picks = []

    def pick(kind, pred, n):
        cands = [r for r in rows if pred(r, plans[r["id"]]) and r["id"] not in {p[0]["id"] for p in picks}]
        for r in rng.sample(cands, n):
            picks.append((r, kind))

    # the trainer blended format into the reward (format_weight 0.1)
    pick("format_weight_0.1", lambda r, p: r["step"] == 200 and abs(r["score"] - r["format"]) > 0.2, 3)
    # an older lenient answer check ("contains") marked wrong answers correct
    pick("lenient_answer", lambda r, p: r["acc"] == 0.0 and p["recovered"] and r["score"] == 0.0, 2)
    # an older format check accepted <answer> tags
    pick("tag_format_accepted", lambda r, p: p["wrapper"] == "answer_tag" and p["answer_correct"], 2)
    for row, kind in picks:
        if kind == "format_weight_0.1":
            row["score"] = 0.9 * row["score"] + 0.1 * row["format"]
        elif kind == "lenient_answer":
            row["acc"] = 1.0
            ann = plans[row["id"]]["expected"]["annotation_reward"]
            row["score"] = 0.5 + 0.5 * (ann or 0.0) if "annotation_gt" in row and ann is not None else 1.0
        else:
            row["format"] = 1.0
        plans[row["id"]]["drift"] = kind
