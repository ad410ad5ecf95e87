"""Streamlit AppTest of the Inspector and Playground pages on the bundled sample data.

Assertions are on rendered values (texts, tables, code blocks, the plotly spec),
checked against the scorer run independently in the test.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import explain_view, inspector, loading, playground, sources
from dashboard.state import DATA_ENV, K_SELECTED
from scoring.rewards import simple as rewards

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INSPECTOR = os.path.join(ROOT, "pages", "1_Inspector.py")
PLAYGROUND = os.path.join(ROOT, "pages", "6_Playground.py")
TIMEOUT = 90



@pytest.fixture(autouse=True, scope="module")
def _sample_data_by_default():
    """The pages open on the sample unless $ROLLOUTSCOPE_DATA names other data."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(DATA_ENV, raising=False)
        yield


def run_page(path: str, **state) -> AppTest:
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page_run() -> loading.LoadedRun:
    """The run the page loaded (the most recent in the loader's cache)."""
    runs = [r for r in loading._CACHE.values() if r.source.kind == "sample"]
    return runs[-1] if runs else loading.load_cached(sources.sample_source())


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    """The first rendered dataframe that has ``column``."""
    for element in at.dataframe:
        if column in element.value.columns:
            return element.value
    raise AssertionError(f"no dataframe with a {column!r} column")


def plot_spec(at: AppTest) -> dict:
    (chart,) = at.get("plotly_chart")
    return json.loads(chart.proto.spec)


def position_text(at: AppTest) -> str:
    return next(t for t in texts(at) if " of " in t.split("\n")[0] and "\n" in t)


# --------------------------------------------------------------------------- inspector


@pytest.fixture(scope="module")
def bbox_set_inspector(_sample_data_by_default):
    at = run_page(INSPECTOR)
    at.multiselect(key="insp_f_annotation_type").select("bbox_set").run()
    at.number_input(key="insp_pos").set_value(1).run()  # the first bbox_set row (the page opens on the worst)
    assert not at.exception
    return at


def test_the_inspector_opens_on_the_worst_annotated_image_row():
    at = run_page(INSPECTOR)
    table = page_run().table
    opened = at.session_state[K_SELECTED]
    assert opened == inspector.default_row(table)
    row = table.loc[opened]
    assert row["scorer"] == "trace" and row["trace_reward_mode_answer_and_annotation"] == 1.0
    assert row["annotation_pred_size"] > 0 and isinstance(row["image_ref"], str)  # an image with a prediction drawn
    annotated = table[(table["trace_reward_mode_answer_and_annotation"] == 1.0) & (table["annotation_pred_size"] > 0)]
    assert row["annotation_reward"] == annotated["annotation_reward"].min()
    assert len(at.get("plotly_chart")) == 1


def test_filter_selects_rows_and_the_explanation_matches_the_scorer(bbox_set_inspector):
    at = bbox_set_inspector
    run = page_run()
    table = run.table
    expected_ids = table.index[table["annotation_type"].astype(str) == "bbox_set"].tolist()
    first = expected_ids[0]
    assert position_text(at) == f"1 of {len(expected_ids)}\n{inspector.row_caption(table.loc[first], first)}"
    assert at.session_state[K_SELECTED] == first

    evaluation = run.explain(first)
    components = frame_with(at, "why (for a zero)")
    assert components["value"].tolist() == pytest.approx([r.value for r in explain_view.component_rows(evaluation)])
    assert components["why (for a zero)"].tolist() == [r.reason for r in explain_view.component_rows(evaluation)]
    shown = [v for d in at.dataframe if "value" in d.value.columns for v in d.value["value"].tolist()]
    assert evaluation.answer.predicted_text in shown

    # The response is shown as plain code blocks, split at the final object.
    view = explain_view.response_view(evaluation)
    codes = [c.value for c in at.code]
    final = view.piece("final_object")
    assert final is not None and final.text in codes


def test_overlay_layers_follow_the_match_and_the_toggles(bbox_set_inspector):
    at = bbox_set_inspector
    evaluation = page_run().explain(at.session_state[K_SELECTED])
    spec = plot_spec(at)
    groups = [t["legendgroup"] for t in spec["data"]]
    assert "ground_truth" in groups and "matches" in groups
    labels = {a["text"] for a in spec["layout"]["annotations"]}
    for match in evaluation.annotation.match.matches:
        assert f"IoU {match.iou:.2f}" in labels
    assert spec["layout"]["images"][0]["source"].startswith("data:image/")  # the row's image is drawn

    at.checkbox(key="insp_layer_ground_truth").uncheck().run()
    at.checkbox(key="insp_layer_matches").uncheck().run()
    spec = plot_spec(at)
    groups = [t["legendgroup"] for t in spec["data"]]
    assert "ground_truth" not in groups and "matches" not in groups
    assert not any(a["text"].startswith("IoU") for a in spec["layout"].get("annotations", []))
    at.checkbox(key="insp_layer_ground_truth").check().run()
    at.checkbox(key="insp_layer_matches").check().run()

    at.radio(key="insp_overlay_mode").set_value("Static picture").run()
    assert len(at.get("image")) == 1 and not at.get("plotly_chart")
    assert at.get("download_button")[0].label == "Download overlay (PNG)"
    at.radio(key="insp_overlay_mode").set_value("Interactive (zoom and pan)").run()


def test_previous_next_and_position_walk_the_filtered_order(bbox_set_inspector):
    at = bbox_set_inspector
    table = page_run().table
    order = table.index[table["annotation_type"].astype(str) == "bbox_set"].tolist()
    at.number_input(key="insp_pos").set_value(1).run()
    assert at.session_state[K_SELECTED] == order[0]
    assert at.button(key="insp_prev").disabled

    at.button(key="insp_next").click().run()
    assert at.session_state[K_SELECTED] == order[1]
    assert position_text(at).startswith(f"2 of {len(order)}\n{order[1]}")
    at.button(key="insp_next").click().run()
    assert at.session_state[K_SELECTED] == order[2]
    at.button(key="insp_prev").click().run()
    assert at.session_state[K_SELECTED] == order[1]

    at.number_input(key="insp_pos").set_value(len(order)).run()
    assert at.session_state[K_SELECTED] == order[-1]
    assert at.button(key="insp_next").disabled
    assert at.number_input(key="insp_pos").value == len(order)


def test_format_break_is_shown_with_a_caret():
    at = run_page(INSPECTOR)
    at.multiselect(key="insp_f_format_reason").select("text_after_object").run()
    row_id = at.session_state[K_SELECTED]
    evaluation = page_run().explain(row_id)
    assert evaluation.format_reason == "text_after_object"
    view = explain_view.response_view(evaluation)
    assert view.break_context in [c.value for c in at.code]
    components = frame_with(at, "why (for a zero)")
    assert components.loc[components["component"] == "format", "why (for a zero)"].iloc[0].startswith(
        "text_after_object"
    )


def test_text_search_and_empty_result():
    at = run_page(INSPECTOR)
    before = position_text(at)
    at.text_input(key="insp_f_text").input("no response contains this 9f8e7d").run()
    assert "No rows match these filters." in [i.value for i in at.info]
    at.text_input(key="insp_f_text").input("").run()
    assert position_text(at) == before  # back on the row shown before the search


def test_simple_scorer_rows_are_explained_with_their_scorer():
    at = run_page(INSPECTOR)
    table = page_run().table
    simple = table[table["scorer"].astype(str) != "trace"]
    if not len(simple):
        pytest.skip("no simple-scorer rows in the sample data")
    row_id = simple.index[0]
    at.text_input(key="insp_f_text").input(str(row_id)).run()
    assert at.session_state[K_SELECTED] == row_id
    row = page_run().row(row_id)  # with its response, read from disk
    view = playground.run_simple(str(row["scorer"]), row["gold"], row["response"])
    assert [m.value for m in at.metric] == [f"{view.score:g}"]
    assert view.reason in texts(at)


# --------------------------------------------------------------------------- playground


def test_simple_playground_scores_and_marks_numbers():
    at = run_page(PLAYGROUND)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Score"] == "1"
    at.text_area(key="pg_output").input("First 48, then 24, so 71 in total.").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Score"] == "0" and metrics["Solved (score ≥ 0.999)"] == "no"
    codes = [c.value for c in at.code]
    assert "last number in output 71 != 72 from gold" in codes
    assert "First 48, then 24, so 71 in total.\n      ~~       ~~     ^^" in codes

    at.selectbox(key="pg_scorer").set_value("numeric_close").run()
    at.number_input(key="pg_tolerance").set_value(0.05).run()
    codes = [c.value for c in at.code]
    assert "|71 − 72| = 1 ≤ 3.6 → pass   (allowed = 0.05 × max(1, |72|) = 3.6)" in codes
    assert {m.label: m.value for m in at.metric}["Score"] == "1"

    at.selectbox(key="pg_scorer").set_value("last_number").run()
    at.text_area(key="pg_gold").input("no digits").run()
    assert at.error and "holds no number" in " ".join(texts(at))


def test_simple_playground_lets_the_user_pick_the_number_reading():
    at = run_page(PLAYGROUND)
    at.text_area(key="pg_gold").input("-18").run()
    at.text_area(key="pg_output").input("It fell by -$18").run()
    assert at.selectbox(key="pg_reading").value == rewards.READING_AGENTDESCENT
    assert {m.label: m.value for m in at.metric}["Score"] == "0"  # the reference reads 18
    assert f"Number reading: {playground.READING_LABELS[rewards.READING_AGENTDESCENT]}" in [c.value for c in at.caption]
    at.selectbox(key="pg_reading").set_value(rewards.READING_SIGNED).run()
    assert {m.label: m.value for m in at.metric}["Score"] == "1"
    assert f"Number reading: {playground.READING_LABELS[rewards.READING_SIGNED]}" in [c.value for c in at.caption]
    assert "last number in output -18 == -18 from gold [reading 'signed']" in [c.value for c in at.code]


def test_batch_playground_on_loaded_rows_and_pasted_rows():
    at = run_page(PLAYGROUND)
    run = page_run()
    table = run.table
    rows = playground.simple_rows(table, run.with_text)  # their responses read from disk
    metrics = {m.label: m.value for m in at.metric}
    if len(rows):
        assert metrics["Rows"] == f"{len(rows):,}"
        scorer = at.selectbox(key="pg_batch_scorer").value
        expected = playground.run_batch(rows, scorer, solved_threshold=0.999)
        assert metrics["Solve rate (≥ 0.999)"] == f"{100 * expected.solve_rate:.1f}%"
        # the loader scored these rows with the same scorer: same solved flags
        assert expected.frame["solved"].astype(bool).tolist() == table.loc[rows.index, "solved"].astype(bool).tolist()
        at.radio(key="pg_batch_source").set_value(playground_paste_label()).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == "5"
    assert metrics["Solve rate (≥ 0.999)"] == "75.0%"
    assert metrics["Rows that could not be scored"] == "1"
    at.number_input(key="pg_batch_threshold").set_value(0.0).run()
    assert {m.label: m.value for m in at.metric}["Solve rate (≥ 0)"] == "100.0%"
    at.text_area(key="pg_batch_text").input('{"gold": 1').run()
    assert "line 1 is not valid JSON" in " ".join(texts(at))


def playground_paste_label() -> str:
    return "Paste rows (JSON lines or CSV)"


def test_trace_playground_prefills_from_the_selected_row_and_scores_it():
    run = page_run()
    table = run.table
    row_id = table.index[(table["scorer"].astype(str) == "trace") & (table["annotation_type"].astype(str) == "point_map")][0]
    at = run_page(PLAYGROUND, **{K_SELECTED: row_id})
    assert at.selectbox(key="pg_t_choice").value == f"Selected row: {row_id}"
    assert at.text_area(key="pg_t_response").value == run.row(row_id)["response"]
    evaluation = run.explain(row_id)
    components = frame_with(at, "why (for a zero)")
    assert components["value"].tolist() == pytest.approx([r.value for r in explain_view.component_rows(evaluation)])
    spec = plot_spec(at)
    assert {"ground_truth", "half_life"} <= {t["legendgroup"] for t in spec["data"]}
    keys = {k for k, _ in evaluation.annotation.ground_truth.groups}
    assert keys <= {a["text"].removeprefix("missed key '").rstrip("'") for a in spec["layout"]["annotations"]}

    at.text_area(key="pg_t_answer_gt").input('{"type": ').run()
    assert "answer_gt is not valid JSON: Expecting value at line 1, column 10" in texts(at)

    at.selectbox(key="pg_t_choice").set_value("bbox_map: an extra and a missing key").run()
    labels = {a["text"] for a in plot_spec(at)["layout"]["annotations"]}
    assert {"missed key 'dog'", "extra key 'hat'"} <= labels
    components = frame_with(at, "why (for a zero)")
    expected, _ = playground.run_trace(playground.EXAMPLES["bbox_map: an extra and a missing key"])
    assert components["value"].iloc[1] == pytest.approx(expected.annotation_reward)
