"""The generator's own v0 geometry: IoU and soft-distance similarity, set matching, and walking
an annotation's leaves.

It is independent of ``scoring`` on purpose: the rewards the simulated trainer logs come from
here, and the tests check them against ``scoring``.
"""

from __future__ import annotations

import math

from .common import LEAF, STRUCT


def half_life(size) -> float:
    w, h = size
    return min(80.0, max(20.0, 0.035 * math.hypot(w, h)))


def box_iou(a, b) -> float:
    ax0, ax1 = sorted((a[0], a[2]))
    ay0, ay1 = sorted((a[1], a[3]))
    bx0, bx1 = sorted((b[0], b[2]))
    by0, by1 = sorted((b[1], b[3]))
    iw = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    ih = max(0.0, min(ay1, by1) - max(ay0, by0))
    inter = iw * ih
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    return inter / union if union > 0 else 0.0


def soft(d: float, hl: float) -> float:
    return math.exp(-math.log(2) * (d / hl) ** 2)


def seg_dist(p, g) -> float:
    direct = max(math.dist(p[0], g[0]), math.dist(p[1], g[1]))
    flipped = max(math.dist(p[0], g[1]), math.dist(p[1], g[0]))
    return min(direct, flipped)


def leaf_sim(kind, p, g, hl) -> float:
    if kind == "box":
        return box_iou(p, g)
    if kind == "point":
        return soft(math.dist(p, g), hl)
    return soft(seg_dist(p, g), hl)


def leaf_cost(kind, p, g) -> float:
    if kind == "box":
        return -box_iou(p, g)
    if kind == "point":
        return math.dist(p, g)
    return seg_dist(p, g)


def set_score(kind, preds, gts, hl) -> float:
    """Optimal one-to-one matching (exact, bitmask DP), then mean similarity over max(len)."""
    n, m = len(preds), len(gts)
    if n == 0 and m == 0:
        return 1.0
    if n == 0 or m == 0:
        return 0.0
    rows, cols, swap = (preds, gts, False) if n <= m else (gts, preds, True)
    cost = [[leaf_cost(kind, *((c, r) if swap else (r, c))) for c in cols] for r in rows]
    sim = [[leaf_sim(kind, *((c, r) if swap else (r, c)), hl) for c in cols] for r in rows]
    best = {0: (0.0, 0.0)}
    for i in range(len(rows)):
        nxt: dict[int, tuple[float, float]] = {}
        for mask, (c0, s0) in best.items():
            for j in range(len(cols)):
                if mask & (1 << j):
                    continue
                key = mask | (1 << j)
                cand = (c0 + cost[i][j], s0 + sim[i][j])
                if key not in nxt or cand[0] < nxt[key][0]:
                    nxt[key] = cand
        best = nxt
    total = min(best.values(), key=lambda cs: cs[0])[1]
    return total / max(n, m, 1)


def annotation_score(ann_type, pred, gt, size) -> float:
    kind, struct, hl = LEAF[ann_type], STRUCT[ann_type], half_life(size)
    if struct == "scalar":
        return leaf_sim(kind, pred, gt, hl)
    if struct == "set":
        return set_score(kind, pred, gt, hl)
    if struct == "sequence":
        total = sum(leaf_sim(kind, p, g, hl) for p, g in zip(pred, gt, strict=False))
        return total / max(len(pred), len(gt), 1)
    keys = set(pred) | set(gt)
    shared = sorted(set(pred) & set(gt))  # sorted: set order depends on PYTHONHASHSEED
    if struct == "map":
        total = sum(leaf_sim(kind, pred[k], gt[k], hl) for k in shared)
    else:
        total = sum(set_score(kind, pred[k], gt[k], hl) for k in shared)
    return total / max(len(keys), 1)


def map_leaves(ann_type, value, fn):
    struct = STRUCT[ann_type]
    if struct == "scalar":
        return fn(value)
    if struct in ("set", "sequence"):
        return [fn(v) for v in value]
    if struct == "map":
        return {k: fn(v) for k, v in value.items()}
    return {k: [fn(x) for x in v] for k, v in value.items()}


def map_xy(kind, leaf, f):
    if kind == "box":
        x0, y0 = f(leaf[0], leaf[1])
        x1, y1 = f(leaf[2], leaf[3])
        return [x0, y0, x1, y1]
    if kind == "point":
        return list(f(leaf[0], leaf[1]))
    return [list(f(*leaf[0])), list(f(*leaf[1]))]


def iter_leaves(ann_type, value):
    struct = STRUCT[ann_type]
    if struct == "scalar":
        return [value]
    if struct in ("set", "sequence"):
        return list(value)
    if struct == "map":
        return list(value.values())
    return [x for v in value.values() for x in v]


def leaf_points(kind, leaf):
    if kind == "box":
        return [(leaf[0], leaf[1]), (leaf[2], leaf[3])]
    if kind == "point":
        return [tuple(leaf)]
    return [tuple(leaf[0]), tuple(leaf[1])]


def point_segment_distance(p, a, b):
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    t = max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy)


def num(v):
    """Integral floats as ints so coordinates print like a model would write them."""
    return int(v) if isinstance(v, float) and v.is_integer() else v
