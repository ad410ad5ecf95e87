"""``match_set`` against its plain formulation: the same pairs, the same floats, bit for bit.

The scorer builds the assignment's cost matrix flat, caps it in Python and reads each kept
pair's similarity off the cost it already computed. The reference below is the direct reading
of the rule -- a nested matrix, ``np.minimum`` for the cap, every kept pair measured again --
so any difference in a choice among tied assignments, in the order of a sum or in a capped
distance shows up as an inequality.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from scoring.verifier.geometry import (
    BOX,
    Box,
    Point,
    Segment,
    box_iou,
    point_distance,
    segment_distance,
    soft_similarity,
)
from scoring.verifier.matching import Match, match_sequence, match_set, measure_for

HALF_LIFE = 32.0
CAP = 1e300


def reference_pair(shape: str, pred, gt, key, i, j) -> Match:
    if shape == BOX:
        iou = box_iou(pred, gt)
        return Match(key, i, j, iou, iou, None)
    distance = (point_distance if shape == "point" else segment_distance)(pred, gt)
    return Match(key, i, j, soft_similarity(distance, HALF_LIFE), None, distance)


def reference_cost(shape: str, pred, gt) -> float:
    if shape == BOX:
        return -box_iou(pred, gt)
    return (point_distance if shape == "point" else segment_distance)(pred, gt)


def reference_match_set(shape: str, pred: tuple, gt: tuple, key=None):
    if not pred or not gt:
        score = 1.0 if not pred and not gt else 0.0
        return score, (), tuple((key, i) for i in range(len(pred))), tuple((key, j) for j in range(len(gt))), ()
    costs = [[reference_cost(shape, p, g) for g in gt] for p in pred]
    if len(pred) == 1 or len(gt) == 1:
        flat = [c for row in costs for c in row]
        pairs = [divmod(flat.index(min(flat)), len(gt))]
    else:
        pred_order = sorted(range(len(pred)), key=pred.__getitem__)
        gt_order = sorted(range(len(gt)), key=gt.__getitem__)
        matrix = np.array([[costs[i][j] for j in gt_order] for i in pred_order], dtype=np.float64)
        np.minimum(matrix, CAP, out=matrix)
        rows, cols = linear_sum_assignment(matrix)
        pairs = [(pred_order[r], gt_order[c]) for r, c in zip(rows.tolist(), cols.tolist(), strict=True)]
    chosen = [reference_pair(shape, pred[i], gt[j], key, i, j) for i, j in pairs]
    total = 0.0
    for match in chosen:
        total += match.similarity
    chosen.sort(key=lambda match: match.pred_index)
    matches = [m for m in chosen if m.similarity > 0.0]
    zero = tuple(m for m in chosen if not m.similarity > 0.0)
    used_pred = {m.pred_index for m in matches}
    used_gt = {m.gt_index for m in matches}
    return (
        total / max(len(pred), len(gt)),
        tuple(matches),
        tuple((key, i) for i in range(len(pred)) if i not in used_pred),
        tuple((key, j) for j in range(len(gt)) if j not in used_gt),
        zero,
    )


# Small integer grids make tied assignments common; a few huge coordinates make distances
# overflow to inf (capped for the solver, similarity 0).
coordinate = st.one_of(st.integers(0, 6).map(float), st.sampled_from([1e308, -1e308, 0.5]))
points = st.builds(Point, coordinate, coordinate)
segments = st.builds(Segment, points, points)
boxes = st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(1, 6), st.integers(1, 6)).map(
    lambda t: Box(float(t[0]), float(t[1]), float(t[0] + t[2]), float(t[1] + t[3]))
)
SHAPES = {"point": points, "segment": segments, BOX: boxes}


@st.composite
def shape_sets(draw):
    shape = draw(st.sampled_from(sorted(SHAPES)))
    items = st.lists(SHAPES[shape], max_size=5).map(tuple)
    return shape, draw(items), draw(items), draw(st.sampled_from([None, "role"]))


def same(a, b) -> bool:
    """Equal, NaN-aware and bit-exact for floats (0.0 and -0.0 told apart)."""
    if isinstance(a, float) and isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(shape_sets())
def test_match_set_equals_its_plain_formulation(case):
    shape, pred, gt, key = case
    got = match_set(pred, gt, measure_for(shape, HALF_LIFE), key)
    assert same(got, reference_match_set(shape, pred, gt, key))


@settings(max_examples=200, deadline=None)
@given(shape_sets())
def test_match_sequence_measures_each_pair_as_the_rule_says(case):
    shape, pred, gt, key = case
    _, matches, _, _, zero = match_sequence(pred, gt, measure_for(shape, HALF_LIFE), key)
    expected = [reference_pair(shape, p, g, key, i, i) for i, (p, g) in enumerate(zip(pred, gt, strict=False))]
    assert same(tuple(sorted(matches + zero, key=lambda m: m.pred_index)), tuple(expected))
