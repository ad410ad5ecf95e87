"""Corrections stored with the verdicts (same SQLite file), and what the pages build from them."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dashboard import corrections as dc  # noqa: E402
from dashboard import loading, overlay, sources  # noqa: E402
from dashboard import verdicts as vd  # noqa: E402
from scoring.review import consensus as cs  # noqa: E402
from scoring.review import corrections as cr  # noqa: E402


@pytest.fixture(scope="module")
def sample():
    return loading.load_cached(sources.sample_source())


@pytest.fixture(scope="module")
def audit_rows(sample):
    table = sample.table
    return table[table["run"].astype(str) == "gt-audit"]


def drag(x0, y0, x1, y1):
    return {"selection": {"points": [], "point_indices": [], "lasso": [],
                          "box": [{"xref": "x", "yref": "y", "x": [x0, x1], "y": [y0, y1]}]}}


def test_correction_for_row_uses_the_rows_ground_truth(audit_rows):
    row_id = audit_rows.index[0]
    row = audit_rows.loc[row_id]
    answer_gt, annotation_gt = dc.row_ground_truth(row)
    assert answer_gt == json.loads(row["scorer_kwargs"])["answer_gt"]
    edit = cr.edit_from_selection(drag(10, 20, 60, 90), cr.REPLACE, annotation_gt["type"], index=0,
                                  key=cr.ground_truth_items(annotation_gt)[0][0])
    correction = dc.correction_for_row(row, row_id, edit, reviewer=" ann ", note=" moved ")
    assert correction.instance_id == row["instance_id"] and correction.field == cr.ANNOTATION_GT
    assert correction.before == annotation_gt and correction.after != annotation_gt
    assert correction.reviewer == "ann" and correction.note == "moved" and correction.row_key == row_id
    answer = dc.correction_for_row(row, row_id, cr.Edit(cr.ANSWER, value="x"))
    assert answer.field == cr.ANSWER_GT and answer.after == {**answer_gt, "value": "x"}
    with pytest.raises(cr.CorrectionError, match="no instance id"):
        dc.correction_for_row(row.drop("instance_id"), row_id, cr.Edit(cr.ANSWER, value=1))


def test_save_stores_the_verdict_and_the_correction_in_one_file(tmp_path, sample, audit_rows):
    store = vd.VerdictStore(tmp_path / "v.sqlite")
    assert dc.corrections_frame(store).empty  # no file yet
    row_id = audit_rows.index[3]
    row = audit_rows.loc[row_id]
    correction = dc.correction_for_row(row, row_id, cr.Edit(cr.ANSWER, value=99), reviewer="ann", note="typo")
    saved = dc.save_correction(store, correction, row)
    verdict = store.current(row_id)
    assert verdict.verdict == vd.GT_WRONG and verdict.reviewer == "ann" and verdict.id == saved.verdict_id
    assert verdict.note == "ground truth corrected (answer_gt: answer): typo"
    frame = dc.corrections_frame(store)
    assert len(frame) == 1 and list(frame.columns) == list(dc.COLUMNS)
    line = frame.iloc[0]
    assert line["instance_id"] == row["instance_id"] and line["created_at"] == verdict.created_at
    assert json.loads(line["after"])["value"] == 99 and json.loads(line["before"]) == correction.before
    assert line["source_file"] == row["source_file"] and int(line["source_line"]) == int(row["source_line"])
    assert dc.corrections_frame(store, "someone-else").empty
    # append-only, like verdicts
    with sqlite3.connect(store.path) as connection, pytest.raises(sqlite3.DatabaseError, match="append-only"):
        connection.execute(f"DELETE FROM {dc.TABLE}")
    # the saved frame drives the what-if directly
    rescored = cr.rescore(audit_rows, frame, with_text=sample.with_text)
    assert set(rescored["instance_id"]) == {row["instance_id"]} and len(rescored) == 8


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_an_unwritable_folder_keeps_the_verdict_in_memory_and_saves_no_correction(tmp_path, audit_rows):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        store = vd.VerdictStore(folder / "sub" / "v.sqlite")
        row_id = audit_rows.index[0]
        correction = dc.correction_for_row(audit_rows.loc[row_id], row_id, cr.Edit(cr.ANSWER, value=1))
        with pytest.raises(vd.VerdictStoreError):
            dc.save_correction(store, correction)
        assert len(store.pending) == 1 and dc.corrections_frame(store).empty
    finally:
        folder.chmod(0o700)


def test_corrected_sources_rewrite_only_the_corrected_rows(sample, audit_rows, tmp_path):
    suspect = cs.suspects(audit_rows, with_text=sample.with_text).iloc[0]
    row = audit_rows.loc[suspect["example_row"]]
    edit = cr.Edit(cr.ANSWER if suspect["kind"] == "answer" else cr.ADOPT, value=json.loads(suspect["consensus"]))
    correction = dc.correction_for_row(row, suspect["example_row"], edit)
    lines = cr.patch_lines([correction])
    files = dc.corrected_sources(sample.table, lines, sample.paths)
    assert set(files) == {"gt_audit/rollouts_gt_audit.jsonl"}  # the other files hold the true ground truth
    data, changed = files["gt_audit/rollouts_gt_audit.jsonl"]
    expected = audit_rows[audit_rows["instance_id"] == suspect["instance_id"]]["source_line"].astype(int).tolist()
    assert changed == sorted(expected)
    patched = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    name = correction.field
    assert all(patched[n - 1][name] == correction.after for n in changed)
    assert dc.corrected_sources(sample.table, [], sample.paths) == {}
    bad = dc.corrected_sources(sample.table, lines, {})
    assert bad == {"gt_audit/rollouts_gt_audit.jsonl": "the file is not on disk here"}


def test_figures_draw_the_consensus_against_the_ground_truth_and_allow_box_selection(sample, audit_rows):
    suspect = cs.suspects(audit_rows, kinds=("annotation",), with_text=sample.with_text).iloc[0].to_dict()
    truth, consensus = dc.suspect_truths(suspect)
    model = dc.comparison_model(consensus, truth, (640, 480))
    assert model.count(overlay.LAYER_GROUND_TRUTH) + model.count(overlay.LAYER_MISSED) == len(
        cr.ground_truth_items(truth))
    assert model.count(overlay.LAYER_PREDICTION) + model.count(overlay.LAYER_UNMATCHED) == len(
        cr.ground_truth_items(consensus))
    # the wrong ground-truth item is matched by nothing, or only poorly
    poor = [c for c in model.connectors if c.similarity < cs.ConsensusSettings().item_similarity_max]
    assert model.count(overlay.LAYER_MISSED) + len(poor) >= 1
    figure = dc.drawing_figure(model, None, truth)
    assert figure["layout"]["dragmode"] == "select"
    tags = [a["text"] for a in figure["layout"]["annotations"]]
    assert all(any(label.split(" ")[0] == tag for tag in tags)
               for label in (dc.item_label(*item) for item in cr.ground_truth_items(truth)))
    assert figure["data"][-1]["name"] == "drawing grid"
    assert dc.suspect_truths({"kind": "answer"}) == (None, None)


def test_corrections_summary_shows_values_not_objects():
    frame = pd.DataFrame([{
        "created_at": "t", "instance_id": "i", "field": "answer_gt", "action": "answer", "reviewer": "r", "note": "",
        "row_key": "k", "before": json.dumps({"type": "integer", "value": 3}),
        "after": json.dumps({"type": "integer", "value": 4}),
    }])
    shown = dc.corrections_summary(frame)
    assert shown[["before", "after"]].iloc[0].tolist() == ["3", "4"]


def test_joined_rows_get_their_instance_file_corrected(sample):
    """TRL completions hold no ground truth: it came from the instance file they were joined to."""
    table = sample.table
    trl = table[table["source_file"].astype(str).str.startswith("trl/completions") & table["joined"].notna()]
    row_id = trl.index[0]
    row = trl.loc[row_id]
    correction = dc.correction_for_row(row, row_id, cr.Edit(cr.ANSWER, value="corrected answer"))
    lines = cr.patch_lines([correction])
    instances = "trl/train_instances.jsonl"
    files = dc.corrected_sources(table, lines, sample.paths, [instances])
    data, changed = files[instances]
    assert len(changed) == 1
    record = json.loads(data.decode("utf-8").splitlines()[changed[0] - 1])
    assert record["answer_gt"] == correction.after
    assert str(next(record[k] for k in ("instance_id", "id") if k in record)) == row["instance_id"]
    assert isinstance(files[str(row["source_file"])], str)  # the completions file holds no ground truth
    assert instances not in dc.corrected_sources(table, lines, sample.paths)  # only when asked
