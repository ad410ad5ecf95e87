"""The ground-truth audit run (``gt_audit/``): a trained model's rollouts on every instance, every
third instance's ground truth corrupted, and the labels of those corruptions.

``bench/bench_suspects.py`` calls ``gt_audit_rollouts`` to make larger sets.
"""

from __future__ import annotations

import json
import math

from .common import LEAF, STRUCT, dumps, rng_for
from .geometry import half_life, iter_leaves, leaf_points, map_leaves, map_xy, num
from .ground_truth import gt_fields
from .responses import BAD_WRAPPERS
from .simulated_model import simulate

AUDIT_RUN = "gt-audit"
AUDIT_STEP = 300
AUDIT_SAMPLES = 8
AUDIT_FILE = "gt_audit/rollouts_gt_audit.jsonl"
AUDIT_LABELS = "gt_audit/gt_audit.expected.json"
#: Every this-many-th instance gets a corrupted ground truth.
AUDIT_CORRUPT_EVERY = 3
#: A trained model: good format, few wrong answers, mostly precise geometry.
AUDIT_POLICY = {
    "p_bad_format": 0.08,
    "p_wrong": 0.12,
    "geom": {
        "jitter": 10.0,
        "near_miss": 1.5,
        "normalized_01": 0.1,
        "scaled_1000": 0.2,
        "xy_swapped": 0.1,
        "swapped_keys": 0.3,
        "reversed_sequence": 0.3,
        "missing_item": 0.6,
        "extra_item": 0.5,
        "segment_flipped": 0.5,
    },
    "good": {"bare": 1.0, "prose": 2.0, "think": 1.0, "fenced_json": 1.0},
    "bad": {w: 0.0 for w in BAD_WRAPPERS}
    | {"text_after": 1.0, "answer_tag": 1.0, "extra_keys": 1.0, "no_object_prose": 0.5, "atomic": 0.5},
    "prose": {"none": 0.3, "short": 0.6, "long": 0.1},
}


def shift_leaf(kind, leaf, size, rng, hl):
    """``leaf`` moved well clear of itself (a box by more than its size, a point by 3-5 half-lives), inside the image."""
    w, h = size
    for _ in range(100):
        angle = rng.uniform(0, 2 * math.pi)
        if kind == "box":
            bw, bh = leaf[2] - leaf[0], leaf[3] - leaf[1]
            reach = rng.uniform(1.3, 2.2)
            dx, dy = round(math.cos(angle) * bw * reach), round(math.sin(angle) * bh * reach)
        else:
            d = rng.uniform(3.0, 5.0) * hl
            dx, dy = round(math.cos(angle) * d), round(math.sin(angle) * d)
        moved = map_xy(kind, leaf, lambda x, y, dx=dx, dy=dy: (num(x + dx), num(y + dy)))
        if all(0 <= x <= w and 0 <= y <= h for x, y in leaf_points(kind, moved)):
            return moved
    return None  # too large to move clear of itself inside the image


def corrupt_ground_truth(inst, how, rng):
    """(a copy of ``inst`` whose ground truth is wrong in the way ``how`` says, ``how``).

    An instance whose items are all too large to shift gets a wrong answer instead.
    """
    out = json.loads(json.dumps(inst))
    t, value = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    kind, struct = LEAF[t], STRUCT[t]
    if how == "wrong_answer":
        out["answer_gt"]["value"] = rng.choice(inst["meta"]["wrong"])
    elif how == "swapped":
        if struct == "sequence":
            i, j = sorted(rng.sample(range(len(value)), 2))
            swapped = list(value)
            swapped[i], swapped[j] = value[j], value[i]
            out["annotation_gt"]["value"] = swapped
        else:  # map / set map: two keys exchange their geometry
            a, b = sorted(rng.sample(sorted(value), 2))
            out["annotation_gt"]["value"] = dict(value, **{a: value[b], b: value[a]})
    else:  # shifted: one item moved away from what it marks
        leaves = iter_leaves(t, value)
        first = rng.randrange(len(leaves))
        for target in [first, *(i for i in range(len(leaves)) if i != first)]:
            moved = shift_leaf(kind, leaves[target], inst["size"], rng, half_life(inst["size"]))
            if moved is not None:
                break
        else:
            return corrupt_ground_truth(inst, "wrong_answer", rng)
        counter = iter(range(len(leaves)))
        out["annotation_gt"]["value"] = map_leaves(
            t, value, lambda leaf: moved if next(counter) == target else leaf
        )
    return out, how


def corruption_for(inst, rng):
    """How to corrupt this instance: a wrong answer, swapped items (sequences, maps) or a shifted item."""
    if inst["trace_output_mode"] != "answer_and_annotation":
        return "wrong_answer"
    t, value = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    options = ["shifted", "wrong_answer"]
    if (
        STRUCT[t] in ("sequence", "map", "set_map")
        and len(value) >= 2
        and len({dumps(v) for v in (value if STRUCT[t] == "sequence" else value.values())}) >= 2
    ):
        options.append("swapped")
    return rng.choice(options)


def gt_audit_rollouts(
    instances, *, salt="", samples=AUDIT_SAMPLES, corrupt_every=AUDIT_CORRUPT_EVERY, replica=None
):
    """Rollouts of a trained model on every instance, with every ``corrupt_every``-th ground truth corrupted.

    The simulated model answers the *true* instance; the rows carry the corrupted ground truth,
    so most rollouts agree with each other and disagree with it. ``corrupt_every`` 0 corrupts
    nothing (a clean run). ``replica`` suffixes instance ids (larger generated sets for the benchmark).
    Returns (rows, labels): one label per corrupted instance.
    """
    rows, labels = [], []
    for n, true_inst in enumerate(instances):
        rng = rng_for("gt-audit", salt, true_inst["id"])
        iid = true_inst["id"] if replica is None else f"{true_inst['id']}~{replica}"
        row_inst = true_inst
        if corrupt_every and n % corrupt_every == corrupt_every - 1:
            row_inst, how = corrupt_ground_truth(true_inst, corruption_for(true_inst, rng), rng)
            kind = "answer" if how == "wrong_answer" else "annotation"
            labels.append(
                {
                    "instance_id": iid,
                    "corruption": how,
                    "kind": kind,
                    "true_value": true_inst[f"{kind}_gt"]["value"],
                    "corrupted_value": row_inst[f"{kind}_gt"]["value"],
                }
            )
        for k in range(samples):
            response, _ = simulate(
                true_inst, AUDIT_RUN, AUDIT_STEP, k, salt=f"gt-audit{salt}", pol=AUDIT_POLICY
            )
            row = {
                "id": f"{AUDIT_RUN}/{iid}/s{k}",
                "instance_id": iid,
                "task_id": true_inst["task_id"],
                "run": AUDIT_RUN,
                "step": AUDIT_STEP,
                "sample_index": k,
                "response": response,
            }
            row.update(gt_fields(row_inst, image_prefix="../"))
            if true_inst["trace_output_mode"] != "answer_and_annotation":
                row["trace_output_mode"] = true_inst["trace_output_mode"]
            rows.append(row)
    return rows, labels
