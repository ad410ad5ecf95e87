"""The Suspects page and the Inspector's correction panel, headless with AppTest.

Numbers on screen are recomputed from the library on the same data. AppTest cannot fire a plotly
box selection, so the panel is driven through its non-drawing corrections (remove an item, set the
answer) here; selection -> correction is unit-tested in tests/review/test_corrections.py and a
real drag runs in tests/e2e/test_browser_corrections.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import test_apptest_reviews_frames as reviews  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard import corrections as dc  # noqa: E402
from dashboard import verdicts as vd  # noqa: E402
from scoring.review import consensus as cs  # noqa: E402
from scoring.review import corrections as cr  # noqa: E402

# the Reviews/Frames AppTests' fixtures: no disk cache, the scored sample, a temporary verdict file
no_disk_cache, sample_run, verdict_file = reviews.no_disk_cache, reviews.sample_run, reviews.verdict_file

SUSPECTS_PAGE = str(ROOT / "pages" / "11_Suspects.py")
TIMEOUT = 180
PANEL_SCRIPT = """
import streamlit as st
from dashboard.state import bootstrap
from dashboard.correction_view import render_correction_panel

ctx = bootstrap("Panel")
row_id = st.session_state.get("test_row")
if row_id is not None:
    render_correction_panel(ctx, row_id, ctx.explain(row_id))
"""


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    for element in [*at.markdown, *at.caption]:
        assert not element.proto.allow_html, element.value
    return at


def test_suspects_page_lists_the_librarys_suspects_and_the_what_if_of_saved_corrections(verdict_file, sample_run):
    expected = cs.suspects(sample_run.table, with_text=sample_run.with_text)
    at = ok(AppTest.from_file(SUSPECTS_PAGE, default_timeout=TIMEOUT).run())
    shown = {m.label: m.value for m in at.metric}
    assert shown["Suspects"] == str(len(expected)) and len(expected) == 15
    assert shown["Answer"] == str(int((expected["kind"] == "answer").sum()))
    table = next(d.value for d in at.dataframe if "confidence" in d.value.columns)
    assert table["instance_id"].tolist() == expected["instance_id"].tolist()
    assert any("No correction saved yet" in i.value for i in at.info)

    # a reviewer adopts two consensus values (as the page's button does), then the page shows the what-if
    store = vd.store_for(verdict_file)
    for suspect in expected.head(2).to_dict(orient="records"):
        row = sample_run.table.loc[suspect["example_row"]]
        value = json.loads(suspect["consensus"])
        edit = cr.Edit(cr.ANSWER, value=value) if suspect["kind"] == "answer" else cr.Edit(cr.ADOPT, value=value)
        dc.save_correction(store, dc.correction_for_row(row, suspect["example_row"], edit, reviewer="ann"), row)
    at = ok(at.run())
    saved = dc.corrections_frame(store)
    rescored = cr.rescore(sample_run.table, saved, with_text=sample_run.with_text)
    summary = cr.what_if_summary(sample_run.table, rescored)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Rows re-run"] == f"{len(rescored):,}" and len(rescored) == 16
    assert shown["Mean reward, all rows (what-if)"] == f"{summary['table']['overall_after']:.4f}"
    assert shown["Solve rate, all rows (what-if)"] == f"{summary['table']['solve_rate_after']:.2%}"
    labels = [b.label for b in at.get("download_button")]
    assert "Download the corrections (JSONL patch)" in labels
    assert any(reviews.unescaped(label).startswith("Download gt_audit/rollouts_gt_audit.jsonl corrected (16 records changed)")
               for label in labels)


def test_panel_removes_an_item_and_sets_an_answer_saving_each_with_a_verdict(verdict_file, sample_run):
    table = sample_run.table
    row_id = next(r for r in table.index if str(r).startswith("gt_audit/") and
                  json.loads(table.loc[r, "scorer_kwargs"])["annotation_gt"]["type"].endswith("_set"))
    at = AppTest.from_string(PANEL_SCRIPT, default_timeout=TIMEOUT)
    at.session_state["test_row"] = row_id
    at = ok(at.run())
    assert not [r for r in at.radio if r.label == "Correction"]  # folded until the toggle is on
    at.toggle(key="gtc_open").set_value(True).run()
    ok(at)
    radio = next(r for r in at.radio if r.label == "Correction")
    assert radio.value == cr.REPLACE
    save = next(b for b in at.button if b.label == "Save correction")
    assert save.disabled  # nothing dragged yet
    assert any("no box was dragged" in i.value for i in at.info)

    radio.set_value(cr.REMOVE).run()
    ok(at)
    at.text_input(key=next(t.key for t in at.text_input if t.label == "Reviewer")).set_value("ann").run()
    next(b for b in at.button if b.label == "Save correction").click().run()
    ok(at)
    assert any("Saved correction" in s.value for s in at.success)
    store = vd.store_for(verdict_file)
    saved = dc.corrections_frame(store)
    assert len(saved) == 1 and saved.iloc[0]["action"] == cr.REMOVE and saved.iloc[0]["reviewer"] == "ann"
    before, after = json.loads(saved.iloc[0]["before"]), json.loads(saved.iloc[0]["after"])
    assert len(after["value"]) == len(before["value"]) - 1 and before["value"][1:] == after["value"]
    assert store.current(row_id).verdict == vd.GT_WRONG

    next(r for r in at.radio if r.label == "Correction").set_value(cr.ANSWER).run()
    answer = next(t for t in at.text_input if t.label.startswith("New answer"))
    answer.set_value("12345").run()
    next(b for b in at.button if b.label == "Save correction").click().run()
    ok(at)
    saved = dc.corrections_frame(store)
    assert saved["field"].tolist() == [cr.ANNOTATION_GT, cr.ANSWER_GT]
    assert json.loads(saved.iloc[1]["after"])["value"] == 12345
    history = next(d.value for d in at.dataframe if "action" in d.value.columns)
    assert history["action"].tolist() == [cr.REMOVE, cr.ANSWER]


SUSPECT_SCRIPT = """
import streamlit as st
from dashboard.state import bootstrap
from dashboard.correction_view import render_suspect

ctx = bootstrap("Suspect")
suspect = st.session_state.get("test_suspect")
if suspect is not None:
    render_suspect(ctx, suspect)
"""


def test_one_suspect_is_drawn_and_its_consensus_adopted(verdict_file, sample_run):
    found = cs.suspects(sample_run.table, kinds=("annotation",), with_text=sample_run.with_text)
    suspect = found.iloc[0].to_dict()
    at = AppTest.from_string(SUSPECT_SCRIPT, default_timeout=TIMEOUT)
    at.session_state["test_suspect"] = suspect
    at = ok(at.run())
    assert [c.value for c in at.code] == [suspect["ground_truth"], suspect["consensus"]]
    assert len(at.get("plotly_chart")) == 1
    adopt = next(b for b in at.button if b.label.startswith("Adopt the consensus"))
    assert not adopt.disabled
    adopt.click().run()
    ok(at)
    saved = dc.corrections_frame(vd.store_for(verdict_file))
    assert saved[["instance_id", "action", "row_key"]].values.tolist() == [
        [suspect["instance_id"], cr.ADOPT, suspect["example_row"]]]
    assert json.loads(saved.iloc[0]["after"])["value"] == json.loads(suspect["consensus"])
    # the adopted consensus is what the what-if rescoring applies: its rows now agree with it
    rescored = cr.rescore(sample_run.table, saved, with_text=sample_run.with_text)
    assert (rescored["annotation_reward_after"] > rescored["annotation_reward_before"]).mean() > 0.5
