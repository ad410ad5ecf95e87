"""The Reviews and Frames pages, and the two inspector panels, run headless with Streamlit's AppTest.

Every number asserted on screen is recomputed here from the library (``scoring.review.frames``,
``dashboard.verdicts``) on the same data, so the pages are checked against the logic, not against
themselves. Verdict files live in temporary folders (``ROLLOUTSCOPE_VERDICTS``), never next to the
bundled sample data.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard import filters, loading, sources  # noqa: E402
from dashboard import verdicts as vd  # noqa: E402
from scoring.review import frame_tables  # noqa: E402
from scoring.review import frames as fr  # noqa: E402

FRAMES_PAGE = str(ROOT / "pages" / "10_Frames.py")
REVIEWS_PAGE = str(ROOT / "pages" / "9_Reviews.py")
TIMEOUT = 120
EXTRAS_SCRIPT = """
import streamlit as st
from dashboard.state import bootstrap
from dashboard.inspector_extras import render_frame_diagnosis, render_verdict_form

ctx = bootstrap("Extras")
row_id = st.session_state.get("test_row")
if row_id is not None:
    render_frame_diagnosis(ctx, row_id)
    render_verdict_form(ctx, row_id)
"""


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    """Scored runs stay in memory: nothing written to (or read from) the user's cache folder."""
    monkeypatch.setenv(loading.CACHE_DIR_ENV, "off")


@pytest.fixture(scope="module")
def sample_run():
    """The scored sample, put in the loader's memory cache where the pages find it (no disk cache)."""
    source = sources.sample_source()
    return loading.load_cached(source)


@pytest.fixture(scope="module")
def sample_frames(sample_run):
    return frame_tables.frame_table(sample_run.with_text(sample_run.table))  # every row with its response


@pytest.fixture
def verdict_file(tmp_path, monkeypatch):
    path = tmp_path / "verdicts" / "verdicts.sqlite"
    monkeypatch.setenv(vd.ENV_VAR, str(path))
    monkeypatch.delenv("ROLLOUTSCOPE_DATA", raising=False)
    monkeypatch.setattr(sys, "argv", ["streamlit"])
    return path


def app(path: str) -> AppTest:
    return AppTest.from_file(path, default_timeout=TIMEOUT)


def extras(row_id) -> AppTest:
    at = AppTest.from_string(EXTRAS_SCRIPT, default_timeout=TIMEOUT)
    at.session_state["test_row"] = row_id
    return at


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def texts(at: AppTest) -> str:
    return "\n".join(str(t.value) for t in at.text)


def unescaped(text: str) -> str:
    """What the browser shows for Markdown-escaped text (``plain()`` escapes data)."""
    return re.sub(r"\\(.)", r"\1", str(text))


def messages(at: AppTest, kind: str) -> list[str]:
    """The texts of st.info / warning / error / success / caption elements, as displayed."""
    return [unescaped(e.value) for e in getattr(at, kind)]


def no_html(at: AppTest) -> None:
    """Nothing is rendered as HTML (``unsafe_allow_html``) anywhere on the page."""
    elements = [*at.markdown, *at.caption]
    assert elements  # the check is not vacuous
    for element in elements:
        assert not element.proto.allow_html, element.value


def key_of(row_id) -> str:
    return hashlib.sha1(str(row_id).encode("utf-8")).hexdigest()[:10]


# --------------------------------------------------------------------------- Frames page


def test_frames_page_counts_match_the_library(verdict_file, sample_run, sample_frames):
    at = ok(app(FRAMES_PAGE).run())
    no_html(at)
    shown = metrics(at)
    checked = sample_frames[sample_frames["status"] == fr.STATUS_CHECKED]
    assert shown["Rows checked"] == f"{len(checked):,}"
    assert shown["Flagged (not pixel)"] == f"{int(checked['frame'].isin(fr.FLAGGED_FRAMES).sum()):,}"
    for frame in fr.FLAGGED_FRAMES:
        assert shown[fr.FRAME_TITLES[frame]] == f"{int((checked['frame'] == frame).sum()):,}"
    assert int(shown[fr.FRAME_TITLES[fr.FRAME_SCALED_1000]].replace(",", "")) > 50  # ckpt-B's classic mistake
    assert shown["No image size"] == "0"

    # per task family: per-question ids (gsm8k-train-00xx) count as one task
    per_task = next(d.value for d in at.dataframe if "task" in d.value.columns and "run" not in d.value.columns)
    families = sample_frames.assign(task=filters.task_families(sample_frames["task_id"]))
    expected = frame_tables.frame_counts(families, "task")
    assert not per_task["task"].str.fullmatch(r"gsm8k-train-\d+").any()
    pd.testing.assert_frame_equal(per_task.reset_index(drop=True), expected, check_dtype=False)
    per_run = next(d.value for d in at.dataframe if list(d.value.columns[:2]) == ["run", "rows"])
    by_run = per_run.set_index("run")
    assert by_run.loc["ckpt-B", fr.FRAME_SCALED_1000] > by_run.loc["ckpt-A", fr.FRAME_SCALED_1000]

    flagged_table = next(d.value for d in at.dataframe if "what-if (diagnosis)" in d.value.columns)
    assert len(flagged_table) == len(frame_tables.flagged_rows(sample_frames))
    assert set(flagged_table["frame"]) <= set(fr.FLAGGED_FRAMES)


def test_frames_page_diagnoses_a_chosen_row(verdict_file, sample_run, sample_frames):
    at = ok(app(FRAMES_PAGE).run())
    scaled = sample_frames.index[
        (sample_frames["frame"] == fr.FRAME_SCALED_1000) & (sample_frames["run"] == "ckpt-B")
    ][0]
    at.selectbox(key="fr_row").set_value(scaled)
    ok(at.run())
    diagnosis = fr.diagnose_frame(sample_run.explain(scaled))
    shown = metrics(at)
    assert shown["Frame"] == fr.FRAME_TITLES[fr.FRAME_SCALED_1000]
    assert shown["Annotation score (the score)"] == f"{diagnosis.pixel_score:.3f}"
    assert shown["What-if in pixels (diagnosis, not the score)"] == f"{diagnosis.what_if_score:.3f}"
    assert diagnosis.message in texts(at) and "not the score" in diagnosis.message
    hypotheses = next(d.value for d in at.dataframe if "hypothesis" in d.value.columns)
    assert hypotheses.iloc[0]["what it is"] == "the score"
    assert set(hypotheses["what it is"].iloc[1:]) <= {fr.WHAT_IF_LABEL, ""}

    at.multiselect(key="fr_filter_frames").set_value([fr.FRAME_SWAPPED])
    ok(at.run())
    flagged_table = next(d.value for d in at.dataframe if "what-if (diagnosis)" in d.value.columns)
    assert set(flagged_table["frame"]) == {fr.FRAME_SWAPPED}
    assert len(flagged_table) == int((sample_frames["frame"] == fr.FRAME_SWAPPED).sum())


# --------------------------------------------------------------------------- rows without images / sizes


@pytest.fixture
def unsized_data(tmp_path, monkeypatch):
    """A local folder with one sized row and one row without image size or image."""
    monkeypatch.setattr(sys, "argv", ["streamlit"])
    monkeypatch.delenv(vd.ENV_VAR, raising=False)
    gt = [[60, 50, 180, 140], [300, 200, 420, 330]]
    base = {
        "answer_gt": {"type": "integer", "value": 2},
        "annotation_gt": {"type": "bbox_set", "value": gt},
        "reward_contract": {
            "reward_contract_version": "v0",
            "answer": {"id": "answer_exact_match_v0", "type": "integer"},
            "annotation": {"id": "bbox_set_soft_iou_v0", "type": "bbox_set"},
        },
        "task_id": "boxes",
        "run": uuid.uuid4().hex,  # unique content: the loader caches runs by content, not by folder
        "response": json.dumps({"answer": 2, "annotation": [[round(x / 640, 3) for x in b] for b in gt]}),
    }
    folder = tmp_path / "run"
    folder.mkdir()
    rows = [dict(base, id="no-size"), dict(base, id="sized", image_size=[640, 480])]
    (folder / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("ROLLOUTSCOPE_DATA", str(folder))
    return folder


def test_rows_without_image_size_say_so(unsized_data):
    at = ok(app(FRAMES_PAGE).run())
    shown = metrics(at)
    assert shown["No image size"] == "1" and shown["Rows checked"] == "1"
    assert shown[fr.FRAME_TITLES[fr.FRAME_NORMALIZED]] == "1"
    expander_tables = [d.value for d in at.dataframe if "message" in d.value.columns]
    assert expander_tables and expander_tables[0]["message"].tolist() == [fr.NO_IMAGE_SIZE_MESSAGE]

    at = ok(extras("rollouts.jsonl:1").run())
    assert fr.NO_IMAGE_SIZE_MESSAGE in messages(at, "info")
    assert "Frame" not in metrics(at)  # no guess
    at = ok(extras("rollouts.jsonl:2").run())
    assert metrics(at)["Frame"] == fr.FRAME_TITLES[fr.FRAME_NORMALIZED]


def test_verdicts_default_to_the_users_state_folder_not_the_data_folder(unsized_data, tmp_path, monkeypatch):
    monkeypatch.delenv(vd.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    at = ok(extras("rollouts.jsonl:1").run())
    at.radio(key=f"rv_verdict_{key_of('rollouts.jsonl:1')}").set_value(vd.MODEL_WRONG)
    next(b for b in at.button if b.label == "Save verdict").click()
    ok(at.run())
    written = list((tmp_path / "state" / "rolloutscope" / "verdicts").glob("*.sqlite"))
    assert len(written) == 1 and written[0].name.startswith(f"{unsized_data.name}-"), messages(at, "caption")
    assert f"Verdicts are saved to {written[0]}." in messages(at, "caption")
    assert not (unsized_data / ".rolloutscope").exists()
    assert vd.VerdictStore(written[0]).current("rollouts.jsonl:1").verdict == vd.MODEL_WRONG


# --------------------------------------------------------------------------- the two inspector panels


def test_extras_frame_panel_and_verdict_form(verdict_file, sample_run, sample_frames):
    row_id = sample_frames.index[sample_frames["frame"] == fr.FRAME_NORMALIZED][0]
    key = key_of(row_id)
    at = ok(extras(row_id).run())
    no_html(at)
    diagnosis = fr.diagnose_frame(sample_run.explain(row_id))
    shown = metrics(at)
    assert shown["Frame"] == fr.FRAME_TITLES[fr.FRAME_NORMALIZED]
    assert shown["What-if in pixels (diagnosis, not the score)"] == f"{diagnosis.what_if_score:.3f}"
    assert shown["Annotation score (the score)"] == f"{diagnosis.pixel_score:.3f}"
    assert "No verdict yet." in texts(at)

    at.radio(key=f"rv_verdict_{key}").set_value(vd.GT_WRONG)
    at.text_area(key=f"rv_note_{key}").input('box <b>is</b> off by "one"')
    at.text_input(key="rv_reviewer_w").input("alice")
    next(b for b in at.button if b.label == "Save verdict").click()
    ok(at.run())
    assert "Saved: ground truth wrong (by alice)." in messages(at, "success")
    assert "Current verdict: ground truth wrong — by alice" in texts(at)
    assert 'Note: box <b>is</b> off by "one"' in texts(at)  # shown as typed, not as HTML
    saved = vd.VerdictStore(verdict_file).current(row_id)
    assert saved.verdict == vd.GT_WRONG and saved.reviewer == "alice" and saved.record_id is not None
    assert at.text_area(key=f"rv_note_{key}").value == ""  # cleared for the next verdict

    at.radio(key=f"rv_verdict_{key}").set_value(vd.SCORER_WRONG)
    next(b for b in at.button if b.label == "Save verdict").click()
    ok(at.run())
    assert "Current verdict: scorer wrong — by alice" in texts(at)  # the reviewer name is remembered
    assert len(vd.VerdictStore(verdict_file).history(row_id)) == 2


def test_extras_simple_scorer_row(verdict_file, sample_run):
    row_id = sample_run.table.index[sample_run.table["scorer"] != "trace"][0]
    at = ok(extras(row_id).run())
    assert fr.STATUS_MESSAGES[fr.STATUS_NOT_TRACE] in messages(at, "info")
    assert "No verdict yet." in texts(at)  # simple rows can still be reviewed


def test_extras_unusable_verdict_file_keeps_the_verdict(verdict_file, sample_frames):
    verdict_file.parent.mkdir(parents=True)
    verdict_file.write_text("not a database")
    row_id = sample_frames.index[0]
    key = key_of(row_id)
    at = ok(extras(row_id).run())
    at.radio(key=f"rv_verdict_{key}").set_value(vd.UNCLEAR)
    next(b for b in at.button if b.label == "Save verdict").click()
    ok(at.run())
    warnings = " ".join(messages(at, "warning"))
    assert "NOT saved" in warnings and "not a usable verdict file" in warnings
    assert "1 verdict is NOT saved" in warnings
    assert "Current verdict: unclear" in texts(at) and "NOT saved (kept in memory)" in texts(at)
    store = vd.store_for(verdict_file)
    assert [v.verdict for v in store.pending] == [vd.UNCLEAR]
    assert verdict_file.read_text() == "not a database"

    verdict_file.unlink()  # the file is fixed: retry saves what was kept
    next(b for b in at.button if b.label == "Retry saving").click()
    ok(at.run())
    assert "Saved 1 verdict." in messages(at, "success")
    assert not store.pending and vd.VerdictStore(verdict_file).current(row_id).verdict == vd.UNCLEAR


# --------------------------------------------------------------------------- Reviews page


def test_reviews_page_empty_then_filtered_and_exported(verdict_file, sample_run):
    at = ok(app(REVIEWS_PAGE).run())
    assert any("No verdicts yet" in m for m in messages(at, "info"))
    assert f"Verdicts are saved to {verdict_file}." in messages(at, "caption")

    table = sample_run.table
    ids = table.index[table["scorer"] == "trace"][:3]
    store = vd.store_for(verdict_file)
    store.set_verdict(ids[0], vd.MODEL_WRONG, "wrong count", "alice", row=table.loc[ids[0]])
    store.set_verdict(ids[1], vd.GT_WRONG, "label typo", "bob", row=table.loc[ids[1]])
    store.set_verdict(ids[1], vd.SCORER_WRONG, "on second look", "bob", row=table.loc[ids[1]])
    store.set_verdict("deleted.jsonl:4", vd.UNCLEAR, "row is gone", "carol", row={"run": "old", "task_id": "t"})

    at = ok(app(REVIEWS_PAGE).run())
    no_html(at)
    shown = metrics(at)
    assert shown["Reviewed rows"] == "3"
    assert shown["model wrong"] == "1" and shown["scorer wrong"] == "1" and shown["unclear"] == "1"
    assert shown["ground truth wrong"] == "0"  # superseded: latest wins
    listed = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert set(listed.index) == {ids[0], ids[1], "deleted.jsonl:4"}
    assert listed.loc[ids[1], "revisions"] == 2 and listed.loc[ids[1], "verdict"] == "scorer wrong"
    assert not listed.loc["deleted.jsonl:4", "row_found"]
    assert any("not in the loaded data" in c for c in messages(at, "caption"))

    downloads = at.get("download_button")
    assert [d.proto.label for d in downloads] == ["Download JSONL", "Download CSV"]

    at.multiselect(key="rv_f_verdict").set_value([vd.MODEL_WRONG, vd.SCORER_WRONG])
    ok(at.run())
    listed = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert set(listed.index) == {ids[0], ids[1]}
    at.toggle(key="rv_f_history").set_value(True)
    at.multiselect(key="rv_f_verdict").set_value([])
    at.text_input(key="rv_f_text").input("typo")
    ok(at.run())
    listed = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert list(listed["verdict"]) == ["ground truth wrong"]  # the superseded revision, found in history

    exported = [json.loads(line) for line in store.export(table, "jsonl").decode().splitlines()]
    assert {r["row_key"] for r in exported} == {ids[0], ids[1], "deleted.jsonl:4"}
    assert next(r for r in exported if r["row_key"] == ids[0])["task_id"] == table.at[ids[0], "task_id"]


def test_reviews_page_with_an_unreadable_verdict_file(verdict_file):
    verdict_file.parent.mkdir(parents=True)
    verdict_file.write_text("not a database")
    at = ok(app(REVIEWS_PAGE).run())
    errors = messages(at, "error")
    assert any("not a usable verdict file" in e for e in errors), errors


def test_frames_page_checks_big_runs_lazily(verdict_file, sample_run, sample_frames, monkeypatch):
    import streamlit as st

    st.cache_resource.clear()  # forget the fully checked table of the other tests
    monkeypatch.setenv("ROLLOUTSCOPE_FRAMES_EAGER_ROWS", "100")
    at = ok(app(FRAMES_PAGE).run())
    assert any("not checked yet" in m for m in messages(at, "info"))
    table = sample_run.table
    run = sorted(table["run"].dropna().astype(str).unique())[0]
    task = sorted(table["task_id"].dropna().astype(str).unique())[0]
    assert at.selectbox(key="fr_scope_run").value == run and at.selectbox(key="fr_scope_task").value == task
    scope = (table["run"].astype(str) == run) & (table["task_id"].astype(str) == task)
    subset = sample_frames[scope.to_numpy()]
    checked = subset["status"] == fr.STATUS_CHECKED
    assert metrics(at)["Rows checked"] == f"{int(checked.sum()):,}"

    at.selectbox(key="fr_scope_task").set_value("(all)")
    ok(at.run())
    in_run = sample_frames[(table["run"].astype(str) == run).to_numpy()]
    assert metrics(at)["Rows checked"] == f"{int((in_run['status'] == fr.STATUS_CHECKED).sum()):,}"

    at.button(key="fr_check_all_button").click()
    ok(at.run())
    everything = int((sample_frames["status"] == fr.STATUS_CHECKED).sum())
    assert metrics(at)["Rows checked"] == f"{everything:,}"
    st.cache_resource.clear()
