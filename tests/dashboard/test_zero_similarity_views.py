"""Every view of a pair assigned with similarity 0 shows one missed ground truth plus one extra
prediction: the overlay draws no connector for it, the pair table lists no match for it."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from dashboard import explain_view, overlay, playground  # noqa: E402
from dashboard.overlay import LAYER_GROUND_TRUTH, LAYER_MISSED, LAYER_PREDICTION, LAYER_UNMATCHED  # noqa: E402

EXAMPLE = "bbox_set: one box missed, one extra"


def _evaluation():
    evaluation, problem = playground.run_trace(playground.EXAMPLES[EXAMPLE])
    assert problem == ""
    return evaluation


def test_the_overlay_draws_matches_only_for_overlapping_pairs():
    evaluation = _evaluation()
    model = overlay.build_overlay(evaluation)
    assert [(c.pred_index, c.gt_index) for c in model.connectors] == [(0, 0), (1, 1)]
    assert all(c.similarity > 0.0 and not c.label.endswith(" 0.00") for c in model.connectors)
    layers = {(m.side, m.index): m.layer for m in model.marks}
    assert layers == {
        ("gt", 0): LAYER_GROUND_TRUTH, ("gt", 1): LAYER_GROUND_TRUTH, ("gt", 2): LAYER_MISSED,
        ("pred", 0): LAYER_PREDICTION, ("pred", 1): LAYER_PREDICTION, ("pred", 2): LAYER_UNMATCHED,
    }


def test_the_pair_table_lists_two_matches_one_extra_and_one_missed():
    evaluation = _evaluation()
    statuses = [(row["status"], row["pred"], row["gt"]) for row in explain_view.pair_rows(evaluation)]
    assert statuses == [
        ("matched", 0, 0), ("matched", 1, 1), ("unmatched prediction", 2, None), ("missed ground truth", None, 2),
    ]
    facts = {row[""]: row["value"] for row in explain_view.annotation_facts(evaluation)}
    assert facts["pairs"].startswith("2 (+1 assigned with similarity 0")


def test_a_zero_reward_from_non_overlapping_boxes_is_explained_as_such():
    inputs = playground.with_options(
        playground.EXAMPLES[EXAMPLE], response='{"answer": 3, "annotation": [[900, 700, 950, 740]]}'
    )
    evaluation, _ = playground.run_trace(inputs)
    assert evaluation.annotation_reward == 0.0 and evaluation.annotation.match.matches == ()
    assert explain_view.annotation_zero_reason(evaluation) == "every paired box has IoU 0 (no overlap) across 1 pair(s)"
