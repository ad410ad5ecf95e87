"""Every link parameter under AppTest: a page opened with it restores that piece of the view (as a
fresh browser would: a new session), and a bad value falls back with a note, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import inspector, links, loading, sources, state, tuning

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = str(REPO / "pages" / "1_Inspector.py")
DISTRIBUTIONS = str(REPO / "pages" / "3_Distributions.py")
FAILURES = str(REPO / "pages" / "4_Format_failures.py")
TUNING = str(REPO / "pages" / "5_Tuning.py")
TIMEOUT = 90


@pytest.fixture(autouse=True)
def _no_data_env(monkeypatch):
    monkeypatch.delenv(state.DATA_ENV, raising=False)


@pytest.fixture(scope="module")
def table():
    return loading.load_cached(sources.sample_source()).table


def open_link(page: str, params: dict) -> AppTest:
    """A new session (a fresh browser) opening ``page`` with ``params`` in its URL."""
    at = AppTest.from_file(page, default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def notes(at: AppTest) -> list[str]:
    return [w.value.replace("\\", "") for w in at.warning]  # plain() escapes Markdown


def url(at: AppTest) -> dict:
    return {k: v if isinstance(v, list) else [v] for k, v in at.query_params.items()}


def position(at: AppTest) -> str:
    return next(t.value for t in at.text if " of " in t.value.split("\n")[0] and "\n" in t.value)


# --------------------------------------------------------------------------- Inspector


def test_a_row_link_opens_that_row(table):
    row_id = table.index[table["scorer"] == "trace"][300]
    run = str(table.at[row_id, "run"])
    at = open_link(INSPECTOR, {"row": row_id, "run": run})
    assert at.session_state[state.K_SELECTED] == row_id
    assert row_id in position(at)
    assert not notes(at)
    assert url(at) == {"row": [row_id], "run": [run]}  # the URL names the row it shows
    assert any(links.query_string(url(at)) in c.value for c in at.code)  # the copy-link box


def test_a_row_link_without_its_run_opens_the_row_too(table):
    row_id = table.index[5]
    at = open_link(INSPECTOR, {"row": row_id})
    assert at.session_state[state.K_SELECTED] == row_id


@pytest.mark.parametrize(("params", "said"), [
    ({"row": "no_such_file.jsonl:1"}, "'no_such_file.jsonl:1' is not in the loaded data"),
    ({"row": "rollouts_ckpt-A.jsonl:7", "run": "ckpt-Z"}, "is not in run 'ckpt-Z'"),
])
def test_a_bad_row_link_opens_the_default_row_with_a_note(table, params, said):
    at = open_link(INSPECTOR, params)
    assert at.session_state[state.K_SELECTED] == inspector.default_row(table)
    assert any(said in n for n in notes(at))


@pytest.mark.parametrize(("key", "column", "value"), [
    ("task", "task_id", "count_shapes"),
    ("type", "annotation_type", "point_set"),
    ("runs", "run", "ckpt-B"),
    ("reason", "format_reason", "text_after_object"),
])
def test_category_filter_links(table, key, column, value):
    at = open_link(INSPECTOR, {key: value})
    assert at.multiselect(key=f"insp_f_{column}").value == [value]
    rows = int((table[column].astype(str) == value).sum())
    assert position(at).split("\n")[0].endswith(f" of {rows}")
    assert url(at)[key] == [value]
    bad = open_link(INSPECTOR, {key: [value, "no-such-value"]})
    assert bad.multiselect(key=f"insp_f_{column}").value == [value]
    assert any("'no-such-value' not in the loaded data" in n for n in notes(bad))


def test_text_search_link(table):
    at = open_link(INSPECTOR, {"q": "ckpt-B"})
    assert at.text_input(key="insp_f_text").value == "ckpt-B"
    assert url(at)["q"] == ["ckpt-B"]
    assert position(at).split("\n")[0].endswith(f" of {len(inspector.apply_filter(table, inspector.InspectorFilter(text='ckpt-B')))}")


@pytest.mark.parametrize(("key", "text", "value"), [
    ("score", "0..0.5", (0.0, 0.5)),
    ("answer_reward", "0.5..1", (0.5, 1.0)),
    ("annotation_reward", "0..0.25", (0.0, 0.25)),
    ("format", "1..1", (1.0, 1.0)),
    ("step", "200..300", (200, 300)),
])
def test_range_filter_links(key, text, value):
    at = open_link(INSPECTOR, {key: text})
    assert tuple(at.slider(key=f"insp_f_{key}").value) == value
    assert url(at)[key] == [text]


@pytest.mark.parametrize(("key", "text", "said"), [
    ("score", "0.9..0.1", "starts above its end"),
    ("score", "zero..one", "is not a range"),
    ("step", "0..300", "is outside 50..300"),
])
def test_bad_range_links_fall_back_to_the_full_range(table, key, text, said):
    at = open_link(INSPECTOR, {key: text})
    full = (int(table["step"].min()), int(table["step"].max())) if key == "step" else (0.0, 1.0)
    assert tuple(at.slider(key=f"insp_f_{key}").value) == full
    assert any(said in n for n in notes(at))
    assert key not in url(at)


def test_order_and_view_links():
    at = open_link(INSPECTOR, {"sort": "score-best-first"})
    assert at.selectbox(key="insp_sort").value == "score, best first"
    # an older link to the Inspector's gallery view points to the Gallery page, worst annotation first
    at = open_link(INSPECTOR, {"view": "gallery-of-worst-annotation-rewards", "type": "bbox"})
    assert any("now the Gallery page" in i.value for i in at.info)
    [moved] = [m.value for m in at.markdown if m.value.startswith("[Open the Gallery](")]
    assert moved == "[Open the Gallery](Gallery?type=bbox)"  # the default sort: annotation reward, lowest first
    at = open_link(INSPECTOR, {"sort": "sideways", "view": "upside-down", "zoom": "2"})
    assert at.selectbox(key="insp_sort").value == "file order"
    said = notes(at)
    assert any("order: 'sideways' is not one of" in n for n in said)
    assert any("view: 'upside-down' is not one of" in n for n in said)
    assert any("parameter zoom is not used" in n for n in said)


def test_a_link_written_by_the_page_reopens_the_same_view_in_a_fresh_session(table):
    at = open_link(INSPECTOR, {})
    at.multiselect(key="insp_f_annotation_type").select("bbox").run()
    at.slider(key="insp_f_score").set_value((0.0, 0.6)).run()
    at.selectbox(key="insp_sort").set_value("score, worst first").run()
    at.button(key="insp_next").click().run()
    at.button(key="insp_next").click().run()
    shown = position(at)
    again = open_link(INSPECTOR, url(at))
    assert not notes(again)
    assert position(again) == shown
    assert again.session_state[state.K_SELECTED] == at.session_state[state.K_SELECTED]
    assert url(again) == url(at)


# --------------------------------------------------------------------------- Distributions


def test_distributions_links():
    at = open_link(DISTRIBUTIONS, {"component": "task-reward", "facet": "run", "bins": "10"})
    assert at.segmented_control(key="dist_component").value == "task reward"
    assert at.selectbox(key="dist_facet").value == "run"
    assert at.slider(key="dist_bins").value == 10
    assert url(at) == {"component": ["task-reward"], "facet": ["run"], "bins": ["10"]}
    bad = open_link(DISTRIBUTIONS, {"component": "colour", "facet": "planet", "bins": "999"})
    assert bad.segmented_control(key="dist_component").value == "overall"
    assert bad.selectbox(key="dist_facet").value == "none"
    assert bad.slider(key="dist_bins").value == 20
    assert len(notes(bad)) == 3 and url(bad) == {}


# --------------------------------------------------------------------------- Format failures


def test_format_failure_links(table):
    run = "ckpt-B"
    at = open_link(FAILURES, {"reason": "text_after_object", "run": run})
    assert at.multiselect(key="ff_reason").value == ["text_after_object"]
    assert at.multiselect(key="ff_run").value == [run]
    headers = [t.value for t in at.main.text if " · reason " in t.value]
    assert headers and all("reason text_after_object" in h and f"run {run}" in h for h in headers)
    task = next(t for t in at.multiselect(key="ff_task").options)
    at = open_link(FAILURES, {"task": task})
    assert at.multiselect(key="ff_task").value == [task]
    at = open_link(FAILURES, {"page": "2"})
    assert at.number_input(key="ff_page").value == 2
    assert url(at) == {"page": ["2"]}
    bad = open_link(FAILURES, {"page": "9999", "reason": "gremlins"})
    assert bad.number_input(key="ff_page").value == 1 and bad.multiselect(key="ff_reason").value == []
    assert len(notes(bad)) == 2


# --------------------------------------------------------------------------- Tuning


@pytest.mark.parametrize(("key", "text", "option", "value"), [
    ("mode", "answer", "mode", "answer"),
    ("formula", "additive", "formula", "additive"),
    ("answer_weight", "0.7", "answer_weight", 0.7),
    ("annotation_weight", "0.3", "annotation_weight", 0.3),
    ("format_weight", "0.2", "format_weight", 0.2),
    ("solved_threshold", "0.5", "solved_threshold", 0.5),
])
def test_tuning_links(key, text, option, value):
    at = open_link(TUNING, {key: text})
    assert at.session_state[state.K_OPTIONS][option] == value
    widget = {"mode": at.selectbox, "formula": at.radio}.get(key, at.slider)
    assert widget(key=f"tune_{key}").value == value
    assert url(at) == {key: [text]}


def test_bad_tuning_links_keep_the_scored_options(table):
    scored = tuning.scored_options(table)
    at = open_link(TUNING, {"format_weight": "7", "mode": "everything"})
    assert at.session_state[state.K_OPTIONS] == scored
    assert len(notes(at)) == 2
    at = open_link(TUNING, {"answer_weight": "0", "annotation_weight": "0"})
    assert at.session_state[state.K_OPTIONS] == scored
    assert any("cannot be used together" in n for n in notes(at))
