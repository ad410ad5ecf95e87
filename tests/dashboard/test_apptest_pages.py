"""Every page under Streamlit's AppTest: on the sample data, on an uploaded file, and its main interactions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import loading, sources, state

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
OVERVIEW = "app.py"  # the Overview: the page the app opens first
TIMEOUT = 90
MY_PAGES = ["pages/3_Distributions.py", "pages/4_Format_failures.py", "pages/5_Tuning.py"]
OTHER_PAGES = ["pages/1_Inspector.py", "pages/2_Gallery.py", "pages/6_Playground.py"]  # the other engineer's; smoke-tested when present
ALL_PAGES = ["app.py", *MY_PAGES, *OTHER_PAGES]
EVERY_PAGE = ["app.py", "pages/1_Inspector.py", "pages/2_Gallery.py", "pages/3_Distributions.py", "pages/4_Format_failures.py",
              "pages/5_Tuning.py", "pages/6_Playground.py", "pages/7_Compare.py", "pages/8_Groups.py",
              "pages/9_Reviews.py", "pages/10_Frames.py"]
LONG_NUMBER = re.compile(r"\d\.\d{13,}")


def existing(pages):
    return [pytest.param(p, marks=pytest.mark.skipif(not (REPO / p).exists(), reason=f"{p} not in this build"))
            for p in pages]


@pytest.fixture(autouse=True)
def _no_data_env(monkeypatch):
    monkeypatch.delenv(state.DATA_ENV, raising=False)


def run_page(page: str) -> AppTest:
    at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT)
    at.run()
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def upload_bytes() -> bytes:
    lines = (sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl").read_text().splitlines()[:60]
    return ("\n".join(lines) + "\n").encode()


def uploaded_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(("my_run.jsonl", upload_bytes(), "application/jsonl"))
    at.run()
    return at


# --------------------------------------------------------------------------- smoke: every page, both sources


@pytest.mark.parametrize("page", existing(ALL_PAGES))
def test_page_runs_on_the_sample(page):
    at = run_page(page)
    assert_clean(at)
    n = len(loading.load_cached(sources.sample_source()).table)
    assert any(t.value == f"sample data ({n:,} rollouts)" for t in at.sidebar.text)


@pytest.mark.parametrize("page", existing(ALL_PAGES))
def test_page_runs_on_an_uploaded_file(page):
    at = uploaded_app()
    assert_clean(at)
    if page != "app.py":
        at.switch_page(page).run()
    assert_clean(at)
    assert any(t.value == "my_run.jsonl (60 rollouts)" for t in at.sidebar.text)
    assert at.radio(key="rs_kind_w").value == state.KIND_UPLOAD  # the choice survives the page switch


# --------------------------------------------------------------------------- the number policy


@pytest.mark.parametrize("page", EVERY_PAGE)
def test_every_table_and_text_follows_the_number_policy(page):
    """No float column of any table is left to Streamlit's default (which writes a float's full
    expansion); no metric, text or caption shows more than 12 digits after the point."""
    at = run_page(page)
    assert_clean(at)
    for element in at.dataframe:
        config = json.loads(element.proto.columns or "{}")
        frame = element.value
        for name in frame.columns:
            if frame[name].dtype.kind == "f":
                assert config.get(str(name), {}).get("type_config", {}).get("format"), (element.proto.id, name)
    shown = [m.value for m in at.metric] + [t.value for t in at.text] + [c.value for c in at.caption]
    shown += [m.value for m in at.markdown]
    assert not [s for s in shown if LONG_NUMBER.search(str(s))]


# --------------------------------------------------------------------------- Overview


def test_overview_numbers():
    at = run_page("app.py")
    metrics = {m.label: m.value for m in at.metric}
    n = len(loading.load_cached(sources.sample_source()).table)
    assert metrics["Rows"] == f"{n:,}"
    assert metrics["Runs"] == "6" and metrics["Steps"] == "4"  # ckpt-A, ckpt-B, gt-audit, lmms-eval, trl, verl
    assert metrics["Errors"] == "6"
    assert metrics["Solve rate (≥ 0.999)"].endswith("%")
    assert int(metrics["Format 0, reward > 0"].replace(",", "")) > 0
    for group, column in (("annotation type", "annotation_type"), ("run", "run"), ("task", "task")):
        at.segmented_control(key="overview_group").set_value(group).run()
        assert_clean(at)
        assert any(df.value.columns[0] == column and "solve_rate" in df.value.columns for df in at.dataframe)
    assert len(at.get("vega_lite_chart")) == 1  # overall, solve rate, format by step
    titles = [s.value for s in at.subheader]
    assert "Reward by training step" in titles and "Logged vs recomputed rewards" in titles
    problems = next(e for e in at.expander if e.label.startswith("Problems reading the files"))
    assert problems.label == "Problems reading the files (6 errors, 1 warning)"
    sidebar = " ".join(c.value.replace("\\", "") for c in at.sidebar.caption)
    assert "6 errors, 1 warning reading the files — deliberate: the sample's rollouts_with_errors.jsonl" in sidebar


def test_problems_of_a_file_that_is_not_the_sample_are_not_called_deliberate():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    broken = (sources.SAMPLE_DIR / "rollouts_with_errors.jsonl").read_bytes()
    at.sidebar.file_uploader[0].set_value(("my_errors.jsonl", broken, "application/jsonl"))
    at.run()
    assert_clean(at)
    sidebar = " ".join(c.value.replace("\\", "") for c in at.sidebar.caption)
    assert "reading the files — see Overview" in sidebar and "deliberate" not in sidebar


def test_overview_follows_the_tuning_threshold():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    before = {m.label: m.value for m in at.metric}["Solve rate (≥ 0.999)"]
    at.switch_page("pages/5_Tuning.py").run()
    at.slider(key="tune_solved_threshold").set_value(0.5).run()
    assert_clean(at)
    at.switch_page(OVERVIEW).run()
    after = {m.label: m.value for m in at.metric}["Solve rate (≥ 0.5)"]
    assert float(after.rstrip("%")) > float(before.rstrip("%"))


# --------------------------------------------------------------------------- Distributions


def test_distributions_components_and_facets():
    at = run_page("pages/3_Distributions.py")
    assert len(at.get("plotly_chart")) == 1
    for component in ("answer", "annotation", "format", "task reward"):
        at.segmented_control(key="dist_component").set_value(component).run()
        assert_clean(at)
    for facet in ("annotation type", "task", "run", "step"):
        at.selectbox(key="dist_facet").set_value(facet).run()
        assert_clean(at)
    at.slider(key="dist_bins").set_value(10).run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 1


# --------------------------------------------------------------------------- Format failures


def test_format_failures_show_where_it_broke():
    at = run_page("pages/4_Format_failures.py")
    assert_clean(at)
    codes = [c.value for c in at.code]
    assert any("^ format broke here" in c for c in codes)
    headers = [t.value for t in at.main.text if " · reason " in t.value]
    assert len(headers) == 10
    assert headers[0].split("task reward ")[-1] != "0.000"  # reward-positive rows first
    assert len(at.get("download_button")) == 2


def test_format_failures_filters_and_pages():
    at = run_page("pages/4_Format_failures.py")
    at.multiselect(key="ff_reason").set_value(["missing_keys"]).run()
    assert_clean(at)
    headers = [t.value for t in at.main.text if " · reason " in t.value]
    assert headers and all("reason missing_keys" in h for h in headers)
    at.multiselect(key="ff_reason").set_value([]).run()
    at.number_input(key="ff_page").set_value(2).run()
    assert_clean(at)
    assert len([t for t in at.main.text if " · reason " in t.value]) == 10


# --------------------------------------------------------------------------- Tuning


def test_tuning_recomputes_and_resets():
    at = run_page("pages/5_Tuning.py")
    assert_clean(at)
    assert all(not m.delta for m in at.metric)
    at.slider(key="tune_format_weight").set_value(0.3).run()
    assert_clean(at)
    assert at.session_state[state.K_OPTIONS]["format_weight"] == 0.3
    deltas = {m.label: m.delta for m in at.metric}
    assert deltas["mean overall"].startswith("+")
    python, yaml = (c.value for c in at.code if c.language in ("python", "yaml"))  # the snippets
    assert "format_weight=0.3" in python and "format_weight: 0.3" in yaml
    at.selectbox(key="tune_mode").set_value("answer").run()
    at.radio(key="tune_formula").set_value("additive").run()
    assert_clean(at)
    assert at.session_state[state.K_OPTIONS]["mode"] == "answer"
    at.button[0].click().run()  # reset to the scored options
    assert at.session_state[state.K_OPTIONS]["format_weight"] == 0.0
    assert at.session_state[state.K_OPTIONS]["mode"] is None
    assert at.slider(key="tune_format_weight").value == 0.0


def test_tuning_shows_the_grpo_no_signal_share_on_demand():
    from dashboard import filters, groups

    at = run_page("pages/5_Tuning.py")
    assert "all rewards equal" not in {m.label for m in at.metric}  # not computed until asked
    at.slider(key="tune_annotation_weight").set_value(0.0).run()
    at.toggle(key="tune_grpo").set_value(True).run()
    assert_clean(at)
    metrics = {m.label: m for m in at.metric}
    table = loading.load(sources.sample_source()).table
    expected = groups.zero_signal_share(table, [at.session_state[state.K_OPTIONS]]).iloc[0]
    assert metrics["all rewards equal"].value == filters.pct(expected["zero_signal_share"])
    assert metrics["all rewards equal"].delta.endswith("pts")
    assert len(at.get("plotly_chart")) >= 4  # histogram, deltas, two sweeps


def test_tuning_refuses_invalid_weights():
    at = run_page("pages/5_Tuning.py")
    at.slider(key="tune_answer_weight").set_value(0.0).run()
    at.slider(key="tune_annotation_weight").set_value(0.0).run()
    assert not at.exception
    assert any("answer_weight + annotation_weight must be > 0" in e.value for e in at.error)
    assert at.session_state[state.K_OPTIONS]["answer_weight"] == 0.0 or at.session_state[state.K_OPTIONS][
        "annotation_weight"] == 0.0
    assert at.session_state[state.K_OPTIONS]["answer_weight"] + at.session_state[state.K_OPTIONS][
        "annotation_weight"] > 0


def test_tuning_options_survive_a_page_switch():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page("pages/5_Tuning.py").run()
    at.slider(key="tune_format_weight").set_value(0.2).run()
    at.switch_page("pages/3_Distributions.py").run()
    at.switch_page("pages/5_Tuning.py").run()
    assert at.slider(key="tune_format_weight").value == 0.2


# --------------------------------------------------------------------------- data sources


def test_unrecognised_upload_opens_the_mapping_dialog_and_loads_after_mapping():
    records = [{"text": f"so it is {i}", "truth": str(i), "when": 10 * i} for i in range(6)]
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(
        ("odd.jsonl", "".join(json.dumps(r) + "\n" for r in records).encode(), "application/jsonl"))
    at.run()
    assert not at.exception
    assert any("not recognised" in w.value for w in at.sidebar.warning)
    assert any(t.value.startswith("No rollout could be read") for t in at.main.text)
    shape = next(s.key for s in at.selectbox if s.key.startswith("rs_map_") and s.key.endswith("_response"))
    prefix = shape[: -len("response")]
    at.selectbox(key=prefix + "response").set_value("text")
    at.selectbox(key=prefix + "gold").set_value("truth")
    at.selectbox(key=prefix + "step").set_value("when")
    next(b for b in at.button if b.label == "Apply mapping").click().run()
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == "6" and metrics["Steps"] == "6"
    assert not at.sidebar.warning


def test_local_folder_source(tmp_path):
    (tmp_path / "step_7.jsonl").write_bytes(upload_bytes())
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_PATH).run()
    at.text_area(key="rs_path_w").set_value(str(tmp_path / "*.jsonl"))
    at.sidebar.button[0].click().run()  # the form's Load button
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Rows"] == "60"
    # a training job appends rows: they are read on Load, not on every click
    extra = (sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl").read_text().splitlines()[60:65]
    with open(tmp_path / "step_7.jsonl", "a") as handle:
        handle.write("\n".join(extra) + "\n")
    at.switch_page("pages/3_Distributions.py").run()
    at.switch_page(OVERVIEW).run()
    assert {m.label: m.value for m in at.metric}["Rows"] == "60"
    at.sidebar.button[0].click().run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Rows"] == "65"


def test_upload_without_rollout_files_is_a_friendly_error():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(("picture.png", b"\x89PNG", "image/png"))
    at.run()
    assert not at.exception
    assert any("no rollout file among the uploads" in e.value for e in at.sidebar.error)
