"""The consensus rule: suspected ground-truth errors from rollouts that agree with each other."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.review import consensus as cs
from scoring.runs import score_files, score_records
from scoring.verifier import canonical, canonical_text, match_annotations, parse_annotation

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "sample_data" / "gt_audit"
CONTRACT = {
    "reward_contract_version": "v0",
    "answer": {"id": "answer_exact_match_v0", "type": "integer"},
    "annotation": {"id": "bbox_set_soft_iou_v0", "type": "bbox_set"},
}
SIZE = [640, 480]


def record(instance: str, k: int, answer, boxes, gt_answer, gt_boxes, **extra) -> dict:
    return {
        "id": f"{instance}/s{k}",
        "instance_id": instance,
        "task_id": "count",
        "run": extra.pop("run", "r"),
        "step": extra.pop("step", 1),
        "sample_index": k,
        "response": json.dumps({"answer": answer, "annotation": boxes}),
        "answer_gt": {"type": "integer", "value": gt_answer},
        "annotation_gt": {"type": "bbox_set", "value": gt_boxes},
        "reward_contract": CONTRACT,
        "image_size": SIZE,
        **extra,
    }


def jittered(boxes, rng, px=2):
    out = []
    for x0, y0, x1, y1 in boxes:
        out.append([x0 + rng.randint(-px, px), y0 + rng.randint(-px, px), x1 + rng.randint(-px, px),
                    y1 + rng.randint(-px, px)])
    return out


TRUE_BOXES = [[40, 40, 120, 110], [300, 200, 380, 290], [500, 60, 600, 150]]
SHIFTED = [TRUE_BOXES[0], TRUE_BOXES[1], [500, 300, 600, 390]]  # the third box moved off its object


def group(instance: str, n: int, gt_answer=3, gt_boxes=TRUE_BOXES, answers=None, seed=0, **extra) -> list[dict]:
    rng = random.Random(seed)
    answers = answers or [3] * n
    return [record(instance, k, answers[k], jittered(TRUE_BOXES, rng), gt_answer, gt_boxes, **extra)
            for k in range(n)]


def table_of(records) -> pd.DataFrame:
    return score_records(records, name="rows.jsonl").table


# --------------------------------------------------------------------------- the rule on one group


def test_a_clean_group_raises_no_suspect():
    assert cs.suspects(table_of(group("clean", 8))).empty


def test_a_group_agreeing_on_a_shifted_box_raises_an_annotation_suspect():
    out = cs.suspects(table_of(group("shifted", 8, gt_boxes=SHIFTED)))
    assert out["kind"].tolist() == ["annotation"]
    suspect = out.iloc[0]
    assert suspect["instance_id"] == "shifted" and suspect["support"] == 8 and suspect["voters"] == 8
    assert suspect["agreement"] == 1.0 and suspect["distance"] == 1.0
    # the consensus is where the rollouts drew the box, not where the ground truth says
    value = json.loads(suspect["consensus"])
    consensus = parse_annotation(value, "bbox_set")
    truth = parse_annotation(TRUE_BOXES, "bbox_set")
    assert match_annotations(consensus, truth, 32.0).score > 0.85
    assert json.loads(suspect["ground_truth"]) == SHIFTED
    assert math.isclose(suspect["gt_similarity"], match_annotations(consensus, parse_annotation(SHIFTED, "bbox_set"),
                                                                    32.0).score)
    assert 0 < suspect["confidence"] <= 1
    assert len(suspect["supporting_rows"].split(";")) == 8


def test_a_wrong_answer_in_the_ground_truth_raises_an_answer_suspect():
    out = cs.suspects(table_of(group("wrong", 6, gt_answer=4)))
    assert out["kind"].tolist() == ["answer"]
    assert out.iloc[0]["consensus"] == "3" and out.iloc[0]["ground_truth"] == "4"
    assert out.iloc[0]["support"] == 6 and out.iloc[0]["detail"].startswith("6 of 6 rollouts answer 3")


def test_support_and_agreement_thresholds():
    # 4 of 8 agree on a wrong answer, 4 say 3 (the ground truth): 0.5 < 0.6, no suspect
    answers = [5, 5, 5, 5, 3, 3, 3, 3]
    assert cs.suspects(table_of(group("split", 8, answers=answers))).empty
    # 5 of 8: a suspect, and a looser or stricter setting moves it in or out
    answers = [5, 5, 5, 5, 5, 3, 3, 3]
    table = table_of(group("five", 8, answers=answers))
    out = cs.suspects(table)
    assert out["consensus"].tolist() == ["5"] and out["support"].tolist() == [5]
    assert cs.suspects(table, cs.ConsensusSettings(min_agreement=0.7)).empty
    assert cs.suspects(table, cs.ConsensusSettings(min_support=6)).empty
    # scattered wrong answers agree with nothing
    assert cs.suspects(table_of(group("scatter", 8, answers=[5, 6, 7, 8, 9, 10, 3, 3]))).empty


def test_four_rollouts_need_three_agreeing():
    assert cs.suspects(table_of(group("g4", 4, answers=[5, 5, 3, 3]))).empty
    assert cs.suspects(table_of(group("g4b", 4, answers=[5, 5, 5, 3])))["support"].tolist() == [3]


def test_split_by_makes_each_grpo_group_its_own_vote():
    records = group("i", 4, gt_answer=4, step=1) + group("i", 4, answers=[4, 4, 4, 4], gt_answer=4, step=2, seed=1)
    for k, r in enumerate(records):
        r["id"] = f"row{k}"
    table = table_of(records)
    assert cs.suspects(table).empty  # 4 of 8 across steps
    split = cs.suspects(table, cs.ConsensusSettings(split_by=("step",)))
    assert split["kind"].tolist() == ["answer"] and split["group"].str.endswith("| 1").all()
    with pytest.raises(ValueError, match="no such column"):
        cs.suspects(table, cs.ConsensusSettings(split_by=("nope",)))


def test_a_different_ground_truth_for_the_same_instance_is_its_own_group():
    records = group("same", 8) + group("same", 8, gt_boxes=SHIFTED, seed=3)
    for k, r in enumerate(records):
        r["id"] = f"row{k}"
    out = cs.suspects(table_of(records))
    assert out["kind"].tolist() == ["annotation"] and json.loads(out.iloc[0]["ground_truth"]) == SHIFTED


def test_a_coordinate_frame_mistake_is_not_a_ground_truth_error():
    rng = random.Random(5)
    records = []
    for k in range(8):  # every rollout writes the 0-1000 grid
        boxes = [[round(x0 / 640 * 1000), round(y0 / 480 * 1000), round(x1 / 640 * 1000), round(y1 / 480 * 1000)]
                 for x0, y0, x1, y1 in jittered(TRUE_BOXES, rng)]
        records.append(record("frame", k, 3, boxes, 3, TRUE_BOXES))
    table = table_of(records)
    assert cs.suspects(table).empty
    assert cs.suspects(table, cs.ConsensusSettings(skip_frame_errors=False))["kind"].tolist() == ["annotation"]


def test_rows_that_are_not_trace_or_lack_votes_are_ignored_and_only_candidates_are_rerun():
    table = table_of(group("clean", 8) + group("wrong", 8, gt_answer=9, seed=2))
    calls = []

    def counting(row):
        calls.append(row["response"])
        return cs.evaluate_table_row(row)

    out = cs.suspects(table, evaluate_row=counting)
    assert out["instance_id"].tolist() == ["wrong"]
    assert len(calls) == 8  # the clean group is settled from its columns
    assert cs.suspects(table.iloc[:0]).columns.tolist() == list(cs.SUSPECT_COLUMNS)
    assert cs.suspects(table, kinds=("annotation",)).empty
    with pytest.raises(ValueError, match="unknown suspect kind"):
        cs.suspects(table, kinds=("colour",))


def test_settings_are_validated():
    with pytest.raises(ValueError, match="min_support"):
        cs.ConsensusSettings(min_support=1)
    with pytest.raises(ValueError, match="agree_similarity"):
        cs.ConsensusSettings(agree_similarity=1.5)


# --------------------------------------------------------------------------- the pieces


def test_wilson_lower_bound():
    assert cs.wilson_lower(0, 0, 1.0) == 0.0
    assert cs.wilson_lower(8, 8, 0.0) == 1.0
    # z = 1.96, 8/10: the textbook interval [0.4902, 0.9433]
    assert math.isclose(cs.wilson_lower(8, 10, 1.96), 0.4902, abs_tol=1e-4)
    assert cs.wilson_lower(8, 8, 1.0) > cs.wilson_lower(4, 4, 1.0) > cs.wilson_lower(3, 4, 1.0)


def test_answer_consensus_uses_the_canonical_form():
    votes = [cs.Vote(i, canonical(v), canonical_text(canonical(v))) for i, v in enumerate(["Circle", " circle", 7.0, 7])]
    best = cs.answer_consensus(votes)
    assert best.support == 2 and best.key in ('"circle"', "7")
    # tie: the smaller canonical text wins whatever the order
    assert cs.answer_consensus(list(reversed(votes))).key == best.key
    assert cs.answer_consensus([]) is None


def test_annotation_value_round_trips_every_collection():
    for value, kind in (
        ([1, 2, 30, 40], "bbox"),
        ([[1, 2], [3, 4]], "point_sequence"),
        ({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8]}, "bbox_map"),
        ({"a": [[1, 2], [3, 4]], "b": [[5.5, 6]]}, "point_set_map"),
        ([[[0, 0], [10, 10]]], "segment_set"),
        ([[0, 0], [10, 10]], "segment"),
    ):
        assert cs.annotation_value(parse_annotation(value, kind)) == value


def test_contradicts_and_item_distance():
    truth = parse_annotation(TRUE_BOXES, "bbox_set")
    same = match_annotations(parse_annotation(TRUE_BOXES, "bbox_set"), truth, 32.0)
    assert not cs.contradicts(same, 0.3) and cs.item_distance(same) == 0.0
    missing = match_annotations(parse_annotation(TRUE_BOXES[:2], "bbox_set"), truth, 32.0)
    assert cs.contradicts(missing, 0.3) and cs.item_distance(missing) == 1.0


# --------------------------------------------------------------------------- properties


boxes_strategy = st.lists(
    st.tuples(st.integers(0, 500), st.integers(0, 360), st.integers(30, 120), st.integers(30, 110)),
    min_size=1, max_size=4,
).map(lambda items: [[x, y, x + w, y + h] for x, y, w, h in items])


def _disjoint(boxes) -> bool:
    truth = parse_annotation(boxes, "bbox_set")
    shapes = truth.groups[0][1]
    from scoring.verifier import box_iou

    return all(box_iou(a, b) == 0.0 for i, a in enumerate(shapes) for b in shapes[i + 1:])


def _rollouts(instance, truth, gt, n, seed):
    rng = random.Random(seed)
    return [record(instance, k, 3, jittered(truth, rng), 3, gt) for k in range(n)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(truth=boxes_strategy, n=st.integers(4, 16), seed=st.integers(0, 10_000), shuffle=st.randoms())
def test_property_permuting_rollouts_changes_nothing(truth, n, seed, shuffle):
    shifted = [list(b) for b in truth]
    x0, y0, x1, y1 = shifted[0]
    dx = (x1 - x0) * 2 if x1 + (x1 - x0) * 2 <= 640 else -(x1 - x0) * 2
    shifted[0] = [x0 + dx, y0, x1 + dx, y1]
    table = table_of(_rollouts("a", truth, shifted, n, seed) + _rollouts("b", truth, truth, n, seed + 1))
    order = list(range(len(table)))
    shuffle.shuffle(order)
    before = cs.suspects(table)
    after = cs.suspects(table.iloc[order])
    pd.testing.assert_frame_equal(before, after)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(truth=boxes_strategy, n=st.integers(4, 16), seed=st.integers(0, 10_000))
def test_property_clean_groups_raise_nothing_and_a_shifted_box_is_found(truth, n, seed):
    if not _disjoint(truth):
        truth = truth[:1]
    assert cs.suspects(table_of(_rollouts("clean", truth, truth, n, seed))).empty
    shifted = [list(b) for b in truth]
    x0, y0, x1, y1 = shifted[-1]
    w = x1 - x0
    dx = 2 * w if x1 + 2 * w <= 640 else -2 * w
    shifted[-1] = [x0 + dx, y0, x1 + dx, y1]
    moved = parse_annotation(shifted, "bbox_set").groups[0][1][-1]
    if any(match_annotations(parse_annotation([moved.as_list()], "bbox_set"),
                             parse_annotation([b], "bbox_set"), 32.0).score > 0.0 for b in truth):
        return  # the shifted box landed on another object: not a clean corruption
    out = cs.suspects(table_of(_rollouts("shifted", truth, shifted, n, seed)))
    assert out["kind"].tolist() == ["annotation"] and out.iloc[0]["support"] == n


# --------------------------------------------------------------------------- the sample data


@pytest.fixture(scope="module")
def audit_table():
    return score_files(AUDIT / "rollouts_gt_audit.jsonl", workers=1).table


def test_sample_gt_audit_every_corruption_is_found_and_nothing_else(audit_table):
    labels = json.loads((AUDIT / "gt_audit.expected.json").read_text())
    assert {x["corruption"] for x in labels} == {"shifted", "swapped", "wrong_answer"}
    out = cs.suspects(audit_table)
    assert set(zip(out["instance_id"], out["kind"], strict=True)) == {(x["instance_id"], x["kind"]) for x in labels}
    by_instance = out.set_index("instance_id")
    for label in labels:
        suspect = by_instance.loc[label["instance_id"]]
        assert json.loads(suspect["ground_truth"]) == label["corrupted_value"]
        if label["kind"] == "answer":
            assert canonical(json.loads(suspect["consensus"])) == canonical(label["true_value"])
        else:
            kind = suspect["annotation_type"]
            consensus = parse_annotation(json.loads(suspect["consensus"]), kind)
            truth = parse_annotation(label["true_value"], kind)
            assert match_annotations(consensus, truth, 20.0).score > 0.6, label["instance_id"]


def test_sample_gt_audit_ranks_by_confidence(audit_table):
    out = cs.suspects(audit_table)
    assert np.all(np.diff(out["confidence"].to_numpy()) <= 0)
    assert (out["agreement"] >= 0.6).all() and (out["support"] >= 3).all()


