"""Ground-truth corrections: dragged box -> edit -> new ground truth -> what-if -> patch -> rescored file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scoring.review import consensus as cs
from scoring.review import corrections as cr
from scoring.runs import score_files

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "sample_data" / "gt_audit"


def streamlit_event(*boxes):
    """The shape of ``st.plotly_chart(..., on_select="rerun")``'s state after box selections."""
    return {"selection": {"points": [], "point_indices": [], "lasso": [],
                          "box": [{"xref": "x", "yref": "y", "x": list(x), "y": list(y)} for x, y in boxes]}}


# --------------------------------------------------------------------------- selection -> edit


def test_selection_box_reads_the_last_box_in_either_drag_direction():
    assert cr.selection_box(streamlit_event(((10.4, 2.2), (30, 5)))) == (2.2, 5.0, 10.4, 30.0)
    assert cr.selection_box(streamlit_event(((0, 1), (0, 1)), ((50, 20), (5, 60)))["selection"]) == (20, 5, 50, 60)
    for nothing in (None, {}, streamlit_event(), {"selection": {"box": [{"x": [1]}]}},
                    {"box": [{"x": [1, float("nan")], "y": [1, 2]}]}):
        assert cr.selection_box(nothing) is None


def test_edit_from_selection_per_shape():
    event = streamlit_event(((100.6, 40.2), (20.4, 80.5)))
    box = cr.edit_from_selection(event, cr.REPLACE, "bbox_set", index=2, image_size=(640, 480))
    assert box == cr.Edit(cr.REPLACE, index=2, shape=[40, 20, 101, 80])
    point = cr.edit_from_selection(event, cr.ADD, "point_map", key="tip")
    assert point.shape == [70, 50] and point.key == "tip"  # the centre
    segment = cr.edit_from_selection(event, cr.REPLACE, "segment")
    assert segment.shape == [[40, 20], [101, 80]]
    up = cr.edit_from_selection(event, cr.REPLACE, "segment", segment_direction=cr.SEGMENT_UP)
    assert up.shape == [[40, 80], [101, 20]]
    clipped = cr.edit_from_selection(streamlit_event(((-30, 700), (-5, 500))), cr.REPLACE, "bbox", image_size=(640, 480))
    assert clipped.shape == [0, 0, 640, 480]


def test_edit_from_selection_refuses_what_it_cannot_do():
    with pytest.raises(cr.CorrectionError, match="no box was dragged"):
        cr.edit_from_selection(streamlit_event(), cr.REPLACE, "bbox")
    with pytest.raises(cr.CorrectionError, match="too small"):
        cr.edit_from_selection(streamlit_event(((5, 5.2), (5, 9))), cr.REPLACE, "bbox")
    with pytest.raises(cr.CorrectionError, match="does not use a dragged box"):
        cr.edit_from_selection(streamlit_event(((0, 9), (0, 9))), cr.REMOVE, "bbox")
    with pytest.raises(cr.CorrectionError, match="unknown annotation type"):
        cr.edit_from_selection(streamlit_event(((0, 9), (0, 9))), cr.REPLACE, "polygon")


# --------------------------------------------------------------------------- edit -> ground truth


SET_GT = {"type": "bbox_set", "value": [[0, 0, 10, 10], [20, 20, 30, 30]]}
MAP_GT = {"type": "point_map", "value": {"a": [1, 2], "b": [3, 4]}}
SET_MAP_GT = {"type": "bbox_set_map", "value": {"red": [[0, 0, 5, 5], [10, 10, 15, 15]], "blue": [[1, 1, 4, 4]]}}


def test_apply_edit_replace_add_remove():
    assert cr.apply_edit(SET_GT, cr.Edit(cr.REPLACE, index=1, shape=[40, 40, 50, 50]))["value"] == [
        [0, 0, 10, 10], [40, 40, 50, 50]]
    assert cr.apply_edit(SET_GT, cr.Edit(cr.ADD, shape=[1, 1, 2, 2]))["value"][-1] == [1, 1, 2, 2]
    assert cr.apply_edit(SET_GT, cr.Edit(cr.REMOVE, index=0))["value"] == [[20, 20, 30, 30]]
    assert SET_GT["value"] == [[0, 0, 10, 10], [20, 20, 30, 30]]  # the input is untouched
    assert cr.apply_edit(MAP_GT, cr.Edit(cr.REPLACE, key="b", shape=[9, 9]))["value"] == {"a": [1, 2], "b": [9, 9]}
    assert cr.apply_edit(MAP_GT, cr.Edit(cr.ADD, key="c", shape=[5, 5]))["value"]["c"] == [5, 5]
    assert cr.apply_edit(MAP_GT, cr.Edit(cr.REMOVE, key="a"))["value"] == {"b": [3, 4]}
    removed = cr.apply_edit(SET_MAP_GT, cr.Edit(cr.REMOVE, key="blue", index=0))["value"]
    assert removed == {"red": SET_MAP_GT["value"]["red"]}
    assert cr.apply_edit(SET_MAP_GT, cr.Edit(cr.ADD, key="blue", shape=[7, 7, 9, 9]))["value"]["blue"][-1] == [7, 7, 9, 9]
    assert cr.apply_edit({"type": "bbox", "value": [0, 0, 1, 1]}, cr.Edit(cr.REPLACE, shape=[2, 2, 5, 5]))["value"] == [
        2, 2, 5, 5]
    assert cr.apply_edit(SET_GT, cr.Edit(cr.ADOPT, value=[[1, 1, 3, 3]]))["value"] == [[1, 1, 3, 3]]
    answer = cr.apply_edit(None, cr.Edit(cr.ANSWER, value=4), answer_gt={"type": "integer", "value": 3})
    assert answer == {"type": "integer", "value": 4}
    wrapped = {"type": "bbox_set", "value": {"bboxes": [[0, 0, 10, 10]]}}
    assert cr.apply_edit(wrapped, cr.Edit(cr.ADD, shape=[5, 5, 8, 8]))["value"] == [[0, 0, 10, 10], [5, 5, 8, 8]]


def test_apply_edit_errors_name_the_problem():
    cases = [
        (SET_GT, cr.Edit(cr.REPLACE, index=5, shape=[0, 0, 1, 1]), "no item 5"),
        (MAP_GT, cr.Edit(cr.REPLACE, key="z", shape=[0, 0]), "no key 'z'"),
        (MAP_GT, cr.Edit(cr.ADD, key="a", shape=[0, 0]), "already has an item"),
        (MAP_GT, cr.Edit(cr.ADD, key=" ", shape=[0, 0]), "name the key"),
        ({"type": "point", "value": [1, 1]}, cr.Edit(cr.REMOVE), "cannot lose"),
        ({"type": "point", "value": [1, 1]}, cr.Edit(cr.ADD, shape=[1, 1]), "cannot gain"),
        (SET_GT, cr.Edit(cr.ADOPT, value=[[5, 5, 5, 9]]), "zero-area"),
        (SET_GT, cr.Edit("paint"), "unknown correction"),
        (None, cr.Edit(cr.REPLACE, shape=[0, 0, 1, 1]), "no annotation_gt"),
        (None, cr.Edit(cr.ANSWER, value=1), "no answer_gt"),
    ]
    for gt, edit, message in cases:
        with pytest.raises(cr.CorrectionError, match=message):
            cr.apply_edit(gt, edit)


def test_ground_truth_items_lists_what_an_edit_can_target():
    assert cr.ground_truth_items(SET_MAP_GT) == [("red", 0, [0, 0, 5, 5]), ("red", 1, [10, 10, 15, 15]),
                                                 ("blue", 0, [1, 1, 4, 4])]
    assert cr.ground_truth_items(MAP_GT) == [("a", 0, [1, 2]), ("b", 0, [3, 4])]
    assert cr.ground_truth_items({"type": "bbox", "value": [0, 0, 1, 1]}) == [(None, 0, [0, 0, 1, 1])]


def test_corrections_chain_and_the_latest_wins():
    a, b, c = ({"type": "integer", "value": v} for v in (3, 4, 5))
    chain = cr.corrected_truths([
        cr.Correction("i", cr.ANSWER_GT, a, b, created_at="2026-01-01T00:00:01Z"),
        cr.Correction("i", cr.ANSWER_GT, b, c, created_at="2026-01-01T00:00:02Z", reviewer="ann"),
    ])
    ((key, value),) = chain.items()
    assert key == ("i", cr.ANSWER_GT, cs.value_text(a)) and value["after"] == c and len(value["corrections"]) == 2
    back = cr.corrected_truths([
        cr.Correction("i", cr.ANSWER_GT, a, b, created_at="1"), cr.Correction("i", cr.ANSWER_GT, b, a, created_at="2")])
    assert back == {}  # corrected and then undone
    with pytest.raises(cr.CorrectionError, match="answer_gt or annotation_gt"):
        cr.Correction("i", "prompt", a, b)


# --------------------------------------------------------------------------- what-if and the round trip


@pytest.fixture(scope="module")
def audit():
    table = score_files(AUDIT / "rollouts_gt_audit.jsonl", workers=1).table
    return table.set_index("row_id", drop=False)  # as the app and the CLI index it


@pytest.fixture(scope="module")
def consensus_corrections(audit):
    """Every suspect of the sample gt-audit file corrected to its consensus (as a reviewer would)."""
    found = cs.suspects(audit)
    out = []
    for n, suspect in enumerate(found.to_dict(orient="records")):
        name = cr.ANSWER_GT if suspect["kind"] == "answer" else cr.ANNOTATION_GT
        row = audit.loc[suspect["example_row"]]
        before = json.loads(row["scorer_kwargs"])[name]
        action = cr.ANSWER if name == cr.ANSWER_GT else cr.ADOPT
        after = cr.apply_edit(before if name == cr.ANNOTATION_GT else None,
                              cr.Edit(action, value=json.loads(suspect["consensus"])),
                              answer_gt=before if name == cr.ANSWER_GT else None)
        out.append(cr.Correction(suspect["instance_id"], name, before, after, action, reviewer="ann",
                                 note=f"consensus {n}", created_at=f"2026-12-01T10:00:{n:02d}Z",
                                 row_key=suspect["example_row"]))
    return out


def test_what_if_rescores_only_corrected_instances_and_lifts_them(audit, consensus_corrections):
    rescored = cr.rescore(audit, consensus_corrections)
    corrected = {c.instance_id for c in consensus_corrections}
    assert set(rescored["instance_id"]) == corrected
    assert len(rescored) == int(audit["instance_id"].isin(corrected).sum())  # 8 rollouts each
    assert rescored["overall_after"].mean() > rescored["overall_before"].mean() + 0.3
    assert (rescored["overall_after"] >= rescored["overall_before"] - 1e-9).mean() > 0.9
    summary = cr.what_if_summary(audit, rescored)
    table = summary["table"]
    assert table["rescored_rows"] == len(rescored) and table["rows"] == len(audit)
    assert table["solve_rate_after"] > table["solve_rate_before"]
    expected = audit["overall"].copy()
    expected.loc[rescored.index] = rescored["overall_after"]
    assert np.isclose(table["overall_after"], expected.mean())
    groups = summary["groups"]
    assert len(groups) == len(corrected) and (groups["rows"] == 8).all()
    assert (groups["mean_after"] > groups["mean_before"]).mean() > 0.9


def test_export_round_trip_patch_then_rescore_equals_the_what_if(audit, consensus_corrections, tmp_path):
    rescored = cr.rescore(audit, consensus_corrections)
    patch = cr.read_patch(cr.patch_bytes(cr.patch_lines(consensus_corrections)))
    assert len(patch) == len(consensus_corrections)
    assert {"instance_id", "before", "after", "reviewer", "note"} <= set(patch[0])
    original = (AUDIT / "rollouts_gt_audit.jsonl").read_text(encoding="utf-8")
    text, changed = cr.patch_jsonl(original, patch)
    assert len(changed) == len(rescored)
    kept = [a for n, (a, b) in enumerate(zip(original.splitlines(), text.splitlines(), strict=True), start=1)
            if n not in changed and a != b]
    assert kept == []  # every other line byte for byte
    (tmp_path / "gt_audit").mkdir()
    corrected_file = tmp_path / "gt_audit" / "rollouts_gt_audit.jsonl"
    corrected_file.write_text(text, encoding="utf-8")
    (tmp_path / "images").symlink_to(ROOT / "sample_data" / "images")
    again = score_files(corrected_file, workers=1).table.set_index("row_id", drop=False)
    for component in cr.RESCORE_COMPONENTS:
        np.testing.assert_allclose(again.loc[rescored.index, component].to_numpy(dtype=float),
                                   rescored[f"{component}_after"].to_numpy(dtype=float), rtol=0, atol=1e-12)
    untouched = again.index.difference(rescored.index)
    np.testing.assert_array_equal(again.loc[untouched, "overall"].to_numpy(), audit.loc[untouched, "overall"].to_numpy())
    # the corrected file raises no suspect any more
    assert cs.suspects(again).empty


def test_patch_record_finds_the_ground_truth_in_any_layout():
    line = {"instance_id": "i", "field": cr.ANSWER_GT, "before": {"type": "integer", "value": 3},
            "after": {"type": "integer", "value": 4}}
    verl = {"input": "q", "output": "o", "gts": {"answer_gt": {"type": "integer", "value": 3}}}
    patched, fields = cr.patch_record(verl, [line])
    assert fields == [cr.ANSWER_GT] and patched["gts"]["answer_gt"]["value"] == 4 and verl["gts"]["answer_gt"]["value"] == 3
    as_text = {"id": "i", "extra_info": json.dumps({"answer_gt": {"type": "integer", "value": 3}})}
    patched, _ = cr.patch_record(as_text, [line])
    assert json.loads(patched["extra_info"])["answer_gt"]["value"] == 4
    other = {"id": "j", "answer_gt": {"type": "integer", "value": 3}}
    assert cr.patch_record(other, [line]) == (other, [])  # another instance with the same value
    assert cr.patch_record(other, [line], match_instance=False)[1] == [cr.ANSWER_GT]
    text, changed = cr.patch_jsonl(json.dumps(verl) + "\nnot json\n" + json.dumps(other) + "\n", [line], only_lines=[1])
    assert changed == [1] and text.splitlines()[1] == "not json"
    with pytest.raises(cr.CorrectionError, match="patch line 2: no field"):
        cr.read_patch(json.dumps(line) + "\n" + json.dumps({"instance_id": "x", "before": 1, "after": 2}))
