"""The ground truth a row shares with the row before it, worked out once.

A GRPO run scores n samples of each prompt against the same ground truth, and trainers write a
prompt's samples one after another (verl repeats a batch interleaved; TRL's sampler repeats each
prompt ``num_generations`` times). Checking the reward contract and parsing the ground-truth
geometry (:func:`scoring.verifier.annotation_truth`) is about a sixth of the verifier's work per
response, so :class:`TruthMemo` keeps the last one and hands it on while the truth repeats.

"Repeats" is exact: the annotation and the contract must equal the previous row's as plain JSON
of exact built-in types, value for value and type for type -- ``1``, ``1.0`` and ``True`` differ,
so do ``0.0`` and ``-0.0``, a list and a tuple, and dicts whose keys come in another order; a
NaN, a numpy value, a subclass of a built-in type or nesting deeper than :data:`TRUTH_DEPTH`
never counts as a repeat. Such a row's truth is worked out for it alone, as the verifier would.
"""

from __future__ import annotations

import math
from typing import Any

from ..verifier import AnnotationTruth, annotation_truth

#: Deepest nesting compared (a geometry is a few levels deep); anything deeper is worked out anew.
TRUTH_DEPTH = 16


def same_plain_json(a: Any, b: Any, depth: int = TRUTH_DEPTH) -> bool:
    """Whether ``a`` and ``b`` are the same plain JSON value, type for type (see the module)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is str or kind is int or kind is bool or a is None:
        return a == b
    if kind is float:  # NaN is never equal; -0.0 and 0.0 are equal but not the same
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if depth <= 0:
        return False
    # plain loops over positions (compiled, typed in truths.pxd): a generator or a zip costs
    # objects at every node, and the walk must stay cheaper than the parse it saves
    if kind is list:
        count = len(a)
        if count != len(b):
            return False
        for position in range(count):  # noqa: SIM110 (a loop: see above)
            if not same_plain_json(a[position], b[position], depth - 1):
                return False
        return True
    if kind is dict:
        if len(a) != len(b):
            return False
        other_keys = iter(b)
        for key in a:
            if type(key) is not str or key != next(other_keys) or not same_plain_json(a[key], b[key], depth - 1):
                return False
        return True
    return False


class TruthMemo:
    """:func:`scoring.verifier.annotation_truth` of the rows' ground truths, worked out once for
    each run of rows that repeat it (see the module)."""

    __slots__ = ("annotation_gt", "reward_contract", "truth")

    def __init__(self) -> None:
        self.annotation_gt: Any = None
        self.reward_contract: Any = None
        self.truth: AnnotationTruth | None = None

    def get(self, annotation_gt: Any, reward_contract: Any) -> AnnotationTruth:
        truth = self.truth
        if (
            truth is None
            or not same_plain_json(annotation_gt, self.annotation_gt)
            or not same_plain_json(reward_contract, self.reward_contract)
        ):
            truth = self.truth = annotation_truth(annotation_gt, reward_contract)
            self.annotation_gt, self.reward_contract = annotation_gt, reward_contract
        return truth


__all__ = ["TRUTH_DEPTH", "TruthMemo", "same_plain_json"]
