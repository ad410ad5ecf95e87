"""The simulated model and trainer: per-checkpoint policies, geometry behaviours (jitter, near
misses, coordinate-frame mistakes, ...), wrong answers, and the rewards the trainer logs.
``simulate`` makes one response and its plan.
"""

from __future__ import annotations

import math

from .common import LEAF, STEPS, STRUCT, rng_for
from .geometry import annotation_score, half_life, iter_leaves, leaf_sim, map_leaves, map_xy, num
from .responses import (
    BAD_WRAPPERS,
    FORMAT_REASON,
    GOOD_WRAPPERS,
    RECOVERABLE_BAD,
    applicable_wrappers,
    make_prose,
    render,
)

GEOM_BEHAVIOURS = (
    "jitter",
    "near_miss",
    "normalized_01",
    "scaled_1000",
    "xy_swapped",
    "swapped_keys",
    "reversed_sequence",
    "missing_item",
    "extra_item",
    "segment_flipped",
)


def policy(run, step):
    p = STEPS.index(step) / (len(STEPS) - 1)
    if run == "ckpt-A":
        # an early checkpoint that slowly learns the output format
        return {
            "p_bad_format": 0.42 - 0.30 * p,
            "p_wrong": 0.34 - 0.14 * p,
            "geom": {
                "jitter": 5.0,
                "near_miss": 2.0,
                "normalized_01": 0.8 - 0.5 * p,
                "scaled_1000": 0.3,
                "xy_swapped": 0.6,
                "swapped_keys": 1.5,
                "reversed_sequence": 3.0,
                "missing_item": 1.0,
                "extra_item": 0.8,
                "segment_flipped": 0.8,
            },
            "good": {
                "bare": 1.0,
                "prose": 3.0,
                "think": 0.5,
                "fenced_json": 2.0,
                "fenced_plain": 0.5,
                "pretty": 0.7,
                "two_objects": 0.4,
                "python_literal": 0.9 - 0.6 * p,
            },
            "bad": {
                "text_after": 1.5,
                "fenced_then_text": 1.0,
                "answer_tag": 1.5,
                "comment": 0.6,
                "not_mapping": 0.6,
                "not_mapping_draft": 0.5,
                "missing_keys": 1.0,
                "extra_keys": 1.0,
                "final_other_object": 0.5,
                "no_object_prose": 0.8,
                "atomic": 0.8,
            },
            "prose": {"none": 0.2, "short": 0.55, "long": 0.25},
        }
    # a later checkpoint with good format but the 0-1000 coordinate frame mistake
    return {
        "p_bad_format": 0.12,
        "p_wrong": 0.22 - 0.08 * p,
        "geom": {
            "jitter": 4.0,
            "near_miss": 2.5,
            "normalized_01": 0.2,
            "scaled_1000": 3.0 - 1.8 * p,
            "xy_swapped": 0.3,
            "swapped_keys": 0.8,
            "reversed_sequence": 1.5,
            "missing_item": 0.8,
            "extra_item": 0.6,
            "segment_flipped": 0.8,
        },
        "good": {
            "bare": 1.0,
            "prose": 1.0,
            "think": 3.0,
            "fenced_json": 1.0,
            "fenced_plain": 0.3,
            "pretty": 0.3,
            "two_objects": 0.4,
            "python_literal": 0.15,
        },
        "bad": {
            "text_after": 1.0,
            "fenced_then_text": 1.0,
            "answer_tag": 1.0,
            "comment": 0.3,
            "not_mapping": 0.3,
            "not_mapping_draft": 0.3,
            "missing_keys": 1.0,
            "extra_keys": 1.0,
            "final_other_object": 0.5,
            "no_object_prose": 0.3,
            "atomic": 0.5,
        },
        "prose": {"none": 0.1, "short": 0.55, "long": 0.35},
    }


def weighted(rng, weights: dict):
    keys = list(weights)
    return rng.choices(keys, weights=[max(0.0, weights[k]) for k in keys])[0]


def applicable_geoms(inst):
    t, v = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    struct = STRUCT[t]
    out = ["jitter", "near_miss", "normalized_01", "scaled_1000", "xy_swapped"]
    if struct in ("map", "set_map") and len(v) >= 2:
        out.append("swapped_keys")
    if struct == "sequence" and len(v) >= 2:
        out.append("reversed_sequence")
    if struct in ("set", "sequence", "map", "set_map") and len(iter_leaves(t, v)) >= 2:
        out.append("missing_item")
    if struct in ("set", "map", "set_map", "sequence"):
        out.append("extra_item")
    if LEAF[t] == "segment":
        out.append("segment_flipped")
    return out


def jitter_leaf(kind, leaf, rng, px=2):
    def j(x, y):
        return num(x + rng.randint(-px, px)), num(y + rng.randint(-px, px))

    out = map_xy(kind, leaf, j)
    if kind == "box" and (out[2] - out[0] < 2 or out[3] - out[1] < 2):
        return list(leaf)
    return out


def near_miss_leaf(kind, leaf, rng, hl):
    for _ in range(200):
        target = rng.uniform(0.58, 0.82)
        if kind == "box":
            x0, y0, x1, y1 = leaf
            bw, bh = x1 - x0, y1 - y0
            how = rng.choice(("x", "y", "grow", "shrink"))
            if how == "x":
                dx = rng.choice((-1, 1)) * bw * (1 - target) / (1 + target)
                cand = [x0 + dx, y0, x1 + dx, y1]
            elif how == "y":
                dy = rng.choice((-1, 1)) * bh * (1 - target) / (1 + target)
                cand = [x0, y0 + dy, x1, y1 + dy]
            else:
                k = 1 / math.sqrt(target) if how == "grow" else math.sqrt(target)
                cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                cand = [cx - bw * k / 2, cy - bh * k / 2, cx + bw * k / 2, cy + bh * k / 2]
            cand = [round(v) for v in cand]
        else:
            d = hl * math.sqrt(math.log2(1 / target))

            def move(x, y, d=d):
                a = rng.uniform(0, 2 * math.pi)
                return round(x + d * math.cos(a)), round(y + d * math.sin(a))

            cand = map_xy(kind, leaf, move)
        sim = leaf_sim(kind, cand, leaf, hl)
        if 0.55 <= sim <= 0.86 and (kind != "box" or (cand[2] > cand[0] and cand[3] > cand[1])):
            return cand
    raise RuntimeError("near miss not found")  # pragma: no cover


def simulate_annotation(inst, behaviour, rng):
    t, gt = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    kind, struct = LEAF[t], STRUCT[t]
    w, h = inst["size"]
    hl = half_life(inst["size"])
    distractors = inst["meta"]["distractors"] or [iter_leaves(t, gt)[0]]

    def jit(leaf):
        return jitter_leaf(kind, leaf, rng)

    if behaviour == "near_miss":
        return map_leaves(t, gt, lambda leaf: near_miss_leaf(kind, leaf, rng, hl))
    base = map_leaves(t, gt, jit)
    if behaviour == "jitter":
        return base
    if behaviour == "normalized_01":
        return map_leaves(
            t, base, lambda leaf: map_xy(kind, leaf, lambda x, y: (round(x / w, 3), round(y / h, 3)))
        )
    if behaviour == "scaled_1000":
        return map_leaves(
            t, base, lambda leaf: map_xy(kind, leaf, lambda x, y: (round(x / w * 1000), round(y / h * 1000)))
        )
    if behaviour == "xy_swapped":
        return map_leaves(t, base, lambda leaf: map_xy(kind, leaf, lambda x, y: (y, x)))
    if behaviour == "segment_flipped":
        return map_leaves(t, base, lambda leaf: [leaf[1], leaf[0]])
    if behaviour == "reversed_sequence":
        return base[::-1]
    if behaviour == "swapped_keys":
        keys = list(base)
        a, b = rng.sample(keys, 2)
        out = dict(base)
        out[a], out[b] = base[b], base[a]
        return out
    if behaviour == "missing_item":
        if struct in ("set", "sequence"):
            i = len(base) - 1 if struct == "sequence" else rng.randrange(len(base))
            return base[:i] + base[i + 1 :]
        if struct == "map":
            drop = rng.choice(list(base))
            return {k: v for k, v in base.items() if k != drop}
        keys = [k for k, v in base.items() if len(v) >= 2] or list(base)
        k = rng.choice(keys)
        if len(base[k]) == 1:
            return {kk: v for kk, v in base.items() if kk != k}
        i = rng.randrange(len(base[k]))
        return dict(base, **{k: base[k][:i] + base[k][i + 1 :]})
    if behaviour == "extra_item":
        extra = jit(rng.choice(distractors))
        if struct in ("set", "sequence"):
            out = list(base)
            out.insert(rng.randrange(len(out) + 1) if struct == "set" else len(out), extra)
            return out
        if struct == "map":
            return dict(base, other=extra)
        k = rng.choice(list(base))
        return dict(base, **{k: [*base[k], extra]})
    raise ValueError(behaviour)


def simulate_answer(inst, correct, rng):
    gt = inst["answer_gt"]["value"]
    if not correct:
        return rng.choice(inst["meta"]["wrong"])
    variants = inst["meta"]["variants"]
    if variants and rng.random() < 0.15:
        return rng.choice(variants)
    return gt


def expected_rewards(inst, wrapper, answer_correct, recovered, response):
    """Independent v0 re-implementation for the simulated shapes (used for logged rewards and checks)."""
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    fmt = 1.0 if wrapper in GOOD_WRAPPERS else 0.0
    # the answer is compared when a mapping with an answer is recovered, or (atomic) as the whole response;
    # otherwise the whole prose response is compared and never matches
    answer_seen = (recovered is not None and recovered.get("answer") is not None) or wrapper == "atomic"
    acc = 1.0 if answer_seen and answer_correct else 0.0
    ann = None
    # The scorer also scores an annotation an answer-mode response carries (a diagnostic: the task
    # reward ignores it), so the simulated trainer logs it the same way.
    if recovered is not None and recovered.get("annotation") is not None and inst.get("annotation_gt"):
        ann = annotation_score(
            inst["annotation_gt"]["type"],
            recovered["annotation"],
            inst["annotation_gt"]["value"],
            inst["size"],
        )
    task = acc * (0.5 + 0.5 * (ann or 0.0)) if aa else acc
    return {"overall": task, "accuracy": acc, "format": fmt, "annotation_reward": ann}


def simulate(inst, run, step, k, salt="", force=None, pol=None):
    """One simulated response (``pol``: a policy other than the run's). Returns (response, plan)."""
    rng = rng_for("sample", salt, run, step, inst["id"], k)
    pol = pol or policy(run, step)
    force = force or {}
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    geoms = applicable_geoms(inst)
    behaviour = force.get("behaviour") or weighted(rng, {g: pol["geom"][g] for g in geoms})
    if not aa:
        behaviour = "jitter"
    correct = force["correct"] if "correct" in force else rng.random() >= pol["p_wrong"]
    if "wrapper" in force:
        wrapper = force["wrapper"]
    elif rng.random() < pol["p_bad_format"]:
        bad = applicable_wrappers(inst, RECOVERABLE_BAD if force.get("recoverable") else BAD_WRAPPERS)
        wrapper = weighted(rng, {w: pol["bad"][w] for w in bad})
    else:
        wrapper = weighted(rng, pol["good"])
    prose_len = force.get("prose") or weighted(rng, pol["prose"])
    answer = simulate_answer(inst, correct, rng)
    annotation = simulate_annotation(inst, behaviour, rng)
    prose = make_prose(inst, prose_len, behaviour, answer, rng)
    response, recovered = render(inst, wrapper, answer, annotation, prose, rng)
    exp = expected_rewards(inst, wrapper, correct, recovered, response)
    plan = {
        "behaviour": behaviour if aa else "answer_mode",
        "wrapper": wrapper,
        "format_reason": FORMAT_REASON[wrapper],
        "answer_correct": correct,
        "prose": prose_len,
        "expected": exp,
        "recovered": recovered is not None,
    }
    return response, plan
