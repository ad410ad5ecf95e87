"""Matching predicted shapes to ground truth, and aggregating to one soft score.

Sets use one-to-one (Hungarian) assignment: boxes maximise total IoU, points
and segments minimise total pixel distance; sequences pair position i with
position i; maps pair equal role keys. Missing and extra items (or keys) cost,
because each aggregate divides by the larger side (or the key union).

The explanation lists as matches only the pairs with a similarity above zero: a
pair the assignment made with similarity 0 (boxes that do not overlap, points so
far apart the soft distance underflows) is shown as a missed ground truth plus
an extra prediction. It still counts as assigned in the diagnostics, and no
score changes: it added 0 to every sum.
"""

from __future__ import annotations

import functools
import importlib
import operator
from array import array
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .geometry import (
    BOX,
    Box,
    ParsedAnnotation,
    Shape,
    box_iou,
    point_distance,
    segment_distance,
    soft_similarity,
)
from .records import new_record
from .spec import MAP, SEQUENCE, SET, SET_MAP, SINGLE

#: Largest assignment cost handed to the solver (sums of a few hundred stay finite).
_COST_CAP = 1e300

#: Where the assignment solver comes from, imported when a set first needs it: importing
#: ``scipy.optimize`` takes about 0.3 s of CPU, which a process that never matches a set need
#: not pay (the command line's own process while its workers score, ``rolloutscope --help``).
#: A process about to score many rows imports it ahead (``scoring.runs``' worker pool does).
SOLVER_MODULE = "scipy.optimize"
_solver: Callable | None = None


def _assignment_solver() -> Callable:
    """``scipy.optimize.linear_sum_assignment``, imported on first use (see :data:`SOLVER_MODULE`)."""
    global _solver
    if _solver is None:
        _solver = importlib.import_module(SOLVER_MODULE).linear_sum_assignment
    return _solver


#: Score of an empty prediction against an empty ground truth.
EMPTY_AGAINST_EMPTY = 1.0


class Match(NamedTuple):
    """One predicted item paired with one ground-truth item."""

    key: str | None
    pred_index: int
    gt_index: int
    similarity: float
    iou: float | None = None  # boxes
    distance: float | None = None  # points and segments, pixels


class MatchResult(NamedTuple):
    """The soft annotation score and every pairing behind it."""

    score: float
    matches: tuple[Match, ...]
    unmatched_pred: tuple[tuple[str | None, int], ...]
    unmatched_gt: tuple[tuple[str | None, int], ...]
    pred_size: int  # items, or role keys for map types
    gt_size: int
    assigned_mean: float  # mean similarity over assigned pairs (per-key means for set maps)
    shared_keys: tuple[str, ...] = ()
    missing_keys: tuple[str, ...] = ()  # in the ground truth, not predicted
    extra_keys: tuple[str, ...] = ()  # predicted, not in the ground truth
    key_scores: tuple[tuple[str, float], ...] = ()
    #: Pairs assigned with similarity 0: counted as assigned, explained as unmatched on both
    #: sides (their items are in ``unmatched_pred`` and ``unmatched_gt``), never in ``matches``.
    zero_similarity_pairs: tuple[Match, ...] = ()

    @property
    def assigned_count(self) -> int:
        """Pairs the matching assigned, zero-similarity ones included (``annotation_assigned_count``)."""
        return len(self.matches) + len(self.zero_similarity_pairs)


class Measure(NamedTuple):
    """How one predicted item is compared with one ground-truth item.

    ``cost`` is what the assignment minimises (a float); ``explain`` reads the explained
    :class:`Match` of a kept pair off that same cost, so a pair's similarity is never computed
    twice, nor two ways: for boxes the cost is the negated IoU, for points and segments the
    distance in pixels.
    """

    cost: Callable[[Shape, Shape], float]
    explain: Callable[[float, str | None, int, int], Match]

    def pair(self, pred: Shape, gt: Shape, key: str | None, i: int, j: int) -> Match:
        """The explained :class:`Match` of ``pred`` against ``gt``."""
        return self.explain(self.cost(pred, gt), key, i, j)


def _negative_iou(pred: Box, gt: Box) -> float:
    return -box_iou(pred, gt)


def _box_match(cost: float, key, i, j) -> Match:
    iou = -cost  # exact: negation only flips the sign
    return new_record(Match, (key, i, j, iou, iou, None))


@functools.lru_cache(maxsize=256)
def measure_for(shape: str, half_life_px: float) -> Measure:
    """Boxes maximise IoU; points and segments minimise pixel distance."""
    if shape == BOX:
        return Measure(_negative_iou, _box_match)

    def distance_match(distance: float, key, i, j) -> Match:
        return new_record(Match, (key, i, j, soft_similarity(distance, half_life_px), None, distance))

    return Measure(point_distance if shape == "point" else segment_distance, distance_match)


def match_set(pred: tuple[Shape, ...], gt: tuple[Shape, ...], measure: Measure, key: str | None = None):
    """One-to-one assignment; returns (score, matches, unmatched pred, unmatched gt, zero-similarity pairs)."""
    pred_count, gt_count = len(pred), len(gt)
    if not pred_count or not gt_count:
        score = EMPTY_AGAINST_EMPTY if not pred_count and not gt_count else 0.0
        return score, (), tuple((key, i) for i in range(pred_count)), tuple((key, j) for j in range(gt_count)), ()
    cost = measure.cost
    explain = measure.explain
    if pred_count == 1 or gt_count == 1:
        costs = [cost(p, g) for p in pred for g in gt]
        best = costs.index(min(costs))  # the first minimum, row-major
        i, j = divmod(best, gt_count)
        chosen = [explain(costs[best], key, i, j)]
    else:
        # Several assignments can share the minimal total cost (integer pixel coordinates make
        # that common), and for points and segments they need not share the summed similarity.
        # Solving over the items in coordinate order makes the choice, and the order of the sum,
        # independent of the order the items were listed in.
        pred_order = sorted(range(pred_count), key=pred.__getitem__)
        gt_order = sorted(range(gt_count), key=gt.__getitem__)
        gt_sorted = [gt[j] for j in gt_order]
        costs = [cost(pred[i], g) for i in pred_order for g in gt_sorted]
        # Distances may be inf (coordinates near the float limit): any finite cap keeps the
        # assignment feasible, and such pairs have similarity 0 whichever way they pair. (A NaN
        # stays NaN, as np.minimum keeps it, and the solver refuses it.)
        capped = array("d", [c if not c > _COST_CAP else _COST_CAP for c in costs])
        rows, cols = _assignment_solver()(np.frombuffer(capped, dtype=np.float64).reshape(pred_count, gt_count))
        chosen = [
            explain(costs[r * gt_count + c], key, pred_order[r], gt_order[c])
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True)
        ]
    total = 0.0
    for match in chosen:  # summed in coordinate order (see above)
        total += match.similarity
    chosen.sort(key=_PRED_INDEX)  # listed in prediction order
    return (total / max(pred_count, gt_count), *_explained(chosen, pred_count, gt_count, key))


_PRED_INDEX = operator.itemgetter(1)  # Match.pred_index


def _explained(chosen: list[Match], pred_count: int, gt_count: int, key: str | None):
    """(matches, unmatched pred, unmatched gt, zero-similarity pairs) of the assigned pairs.

    Pairs with similarity 0 are not matches: their items are listed as unmatched (in index
    order, with the items nothing was assigned to) and the pairs themselves kept apart.
    """
    matches = [m for m in chosen if m.similarity > 0.0]
    if len(matches) == pred_count == gt_count:  # every item paired above zero: nothing unmatched
        return tuple(matches), (), (), ()
    zero = () if len(matches) == len(chosen) else tuple(m for m in chosen if not m.similarity > 0.0)
    used_pred = {m.pred_index for m in matches}
    used_gt = {m.gt_index for m in matches}
    return (
        tuple(matches),
        tuple((key, i) for i in range(pred_count) if i not in used_pred),
        tuple((key, j) for j in range(gt_count) if j not in used_gt),
        zero,
    )


def match_sequence(pred: tuple[Shape, ...], gt: tuple[Shape, ...], measure: Measure, key: str | None = None):
    """Position i against position i, summed over the longer length (same return as :func:`match_set`)."""
    if not pred and not gt:
        return EMPTY_AGAINST_EMPTY, (), (), (), ()
    cost, explain = measure
    chosen = [explain(cost(p, g), key, i, i) for i, (p, g) in enumerate(zip(pred, gt, strict=False))]
    total = 0.0
    for match in chosen:
        total += match.similarity
    return (total / max(len(pred), len(gt), 1), *_explained(chosen, len(pred), len(gt), key))


def _mean(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total / len(values) if values else 0.0


def _assigned_mean(matches: tuple[Match, ...] | list[Match], assigned: int) -> float:
    """Mean similarity over ``assigned`` pairs, of which ``matches`` are those above zero: the
    zero-similarity ones would add 0.0 to the sum, which leaves any float sum as it is."""
    total = 0.0
    for match in matches:
        total += match.similarity
    return total / assigned if assigned else 0.0


def match_annotations(pred: ParsedAnnotation, gt: ParsedAnnotation, half_life_px: float) -> MatchResult:
    """Score ``pred`` against ``gt`` (same declared type) with every pairing explained."""
    measure = measure_for(gt.shape, half_life_px)
    collection = gt.collection
    if collection == SINGLE:
        match = measure.pair(pred.groups[0][1][0], gt.groups[0][1][0], None, 0, 0)
        similarity = match.similarity
        if similarity > 0.0:
            return new_record(MatchResult, (similarity, (match,), (), (), 1, 1, similarity, (), (), (), (), ()))
        only = ((None, 0),)
        return new_record(MatchResult, (similarity, (), only, only, 1, 1, similarity, (), (), (), (), (match,)))
    if collection in (SET, SEQUENCE):
        pred_items, gt_items = pred.groups[0][1], gt.groups[0][1]
        matcher = match_sequence if collection == SEQUENCE else match_set
        score, matches, unmatched_pred, unmatched_gt, zero = matcher(pred_items, gt_items, measure)
        mean = _assigned_mean(matches, len(matches) + len(zero))
        return new_record(
            MatchResult,
            (score, matches, unmatched_pred, unmatched_gt, len(pred_items), len(gt_items), mean, (), (), (), (), zero),
        )
    return _match_maps(pred, gt, measure, collection)


#: ``annotation_*`` diagnostic keys (scoring-behaviour.md table): the two size keys depend on
#: whether the ground truth is a sequence, the key counts appear for maps, and boxes report a
#: mean IoU where points and segments report a mean similarity and the half-life.
_SIZE_KEYS = {
    False: ("annotation_pred_size", "annotation_gt_size"),
    True: ("annotation_pred_len", "annotation_gt_len"),
}
_ASSIGNED_COUNT_KEY = "annotation_assigned_count"
_KEY_COUNT_KEYS = ("annotation_shared_key_count", "annotation_missing_key_count", "annotation_extra_key_count")
_BOX_MEAN_KEYS = ("annotation_assigned_iou_mean",)
_SOFT_MEAN_KEYS = ("annotation_assigned_similarity_mean", "annotation_point_half_life_px")

#: (is sequence, is map, is box) -> the diagnostic keys in order. A handful of fixed tuples,
#: so a table can group rows by the very tuple object :func:`flat_diagnostics` returns.
DIAGNOSTIC_LAYOUTS: dict[tuple[bool, bool, bool], tuple[str, ...]] = {
    (is_sequence, is_map, is_box): (
        *_SIZE_KEYS[is_sequence],
        _ASSIGNED_COUNT_KEY,
        *(_KEY_COUNT_KEYS if is_map else ()),
        *(_BOX_MEAN_KEYS if is_box else _SOFT_MEAN_KEYS),
    )
    for is_sequence in (False, True)
    for is_map in (False, True)
    for is_box in (False, True)
}


def flat_diagnostics(
    result: MatchResult, gt: ParsedAnnotation, half_life_px: float
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The ``annotation_*`` keys of the flat result (one of :data:`DIAGNOSTIC_LAYOUTS`) and their values."""
    collection = gt.collection
    is_map = collection in (MAP, SET_MAP)
    is_box = gt.shape == BOX
    keys = DIAGNOSTIC_LAYOUTS[collection == SEQUENCE, is_map, is_box]
    assigned = len(result.matches) + len(result.zero_similarity_pairs)  # result.assigned_count, inline
    counts = (float(result.pred_size), float(result.gt_size), float(assigned))
    if is_map:
        counts += (float(len(result.shared_keys)), float(len(result.missing_keys)), float(len(result.extra_keys)))
    if is_box:
        return keys, counts + (result.assigned_mean,)
    return keys, counts + (result.assigned_mean, float(half_life_px))


def _match_maps(pred, gt, measure, collection) -> MatchResult:
    pred_groups, gt_groups = dict(pred.groups), dict(gt.groups)  # role key -> shapes (keys are unique)
    shared = tuple(k for k in gt_groups if k in pred_groups)
    missing = tuple(k for k in gt_groups if k not in pred_groups)
    extra = tuple(k for k in pred_groups if k not in gt_groups)
    union = len(shared) + len(missing) + len(extra)

    matches: list[Match] = []
    zero: list[Match] = []
    unmatched_pred: list[tuple[str | None, int]] = []
    unmatched_gt: list[tuple[str | None, int]] = []
    key_scores: list[tuple[str, float]] = []
    key_means: list[float] = []
    total = 0.0
    for key in shared:
        key_score, key_matches, key_unmatched_pred, key_unmatched_gt, key_zero = match_set(
            pred_groups[key], gt_groups[key], measure, key
        )
        total += key_score
        key_scores.append((key, key_score))
        matches.extend(key_matches)
        zero.extend(key_zero)
        unmatched_pred.extend(key_unmatched_pred)
        unmatched_gt.extend(key_unmatched_gt)
        key_assigned = len(key_matches) + len(key_zero)
        if key_assigned:
            key_means.append(_assigned_mean(key_matches, key_assigned))
    for key in extra:
        unmatched_pred.extend((key, i) for i in range(len(pred_groups[key])))
    for key in missing:
        unmatched_gt.extend((key, j) for j in range(len(gt_groups[key])))
    score = EMPTY_AGAINST_EMPTY if union == 0 else total / union

    mean = _assigned_mean(matches, len(matches) + len(zero)) if collection == MAP else _mean(key_means)
    return new_record(
        MatchResult,
        (
            score, tuple(matches), tuple(unmatched_pred), tuple(unmatched_gt), len(pred_groups), len(gt_groups),
            mean, shared, missing, extra, tuple(key_scores), tuple(zero),
        ),
    )
