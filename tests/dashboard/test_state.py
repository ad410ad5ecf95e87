"""dashboard.state: the bootstrap contract and the session-state helpers (run under AppTest)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import loading, sources, state

TIMEOUT = 60


def test_plain_escapes_markdown():
    assert state.plain("**bold** [link](x) `code` <b>") == r"\*\*bold\*\* \[link\]\(x\) \`code\` \<b\>"
    assert state.plain("plain words") == "plain words"


def _contract_script():
    import streamlit as st

    from dashboard.state import bootstrap, select_row, selected_row

    ctx = bootstrap("Contract")
    first = ctx.table.index[0]
    trace_row = ctx.table.index[ctx.table["scorer"] == "trace"][0]
    evaluation = ctx.explain(trace_row)
    image, warning = ctx.load_image(trace_row)
    select_row(first)
    st.text(
        "|".join(
            [
                ctx.source_label,
                str(ctx.table.index.name),
                ",".join(ctx.errors.columns[:4]),
                ",".join(sorted(ctx.options)),
                str(selected_row() == first),
                str(ctx.row(first).name == first),
                type(evaluation).__name__,
                str(evaluation.overall == ctx.table.at[trace_row, "overall"]),
                str(image is not None or bool(warning)),
                str(len(ctx.scores()) == len(ctx.table)),
            ]
        )
    )


def test_bootstrap_returns_the_contract():
    at = AppTest.from_function(_contract_script, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    fields = at.main.text[-1].value.split("|")
    n = len(loading.load_cached(sources.sample_source()).table)
    assert fields[0] == f"sample data ({n:,} rollouts)"
    assert fields[1] == "row_id"
    assert fields[2] == "file,line,field,reason"
    assert fields[3] == "annotation_weight,answer_weight,format_weight,formula,mode,solved_threshold"
    assert fields[4:] == ["True", "True", "TraceEvaluation", "True", "True", "True"]
    assert at.session_state[state.K_OPTIONS]["solved_threshold"] == 0.999


def _options_script():
    import streamlit as st

    from dashboard.state import bootstrap, set_options

    ctx = bootstrap("Options")
    try:
        set_options(dict(ctx.options, answer_weight=0, annotation_weight=0))
    except ValueError as exc:
        st.text(f"refused: {exc}")
    set_options(dict(ctx.options, format_weight=0.25, mode="per_row"))


def test_set_options_validates_and_persists():
    at = AppTest.from_function(_options_script, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert "answer_weight + annotation_weight must be > 0" in at.main.text[-1].value
    assert at.session_state[state.K_OPTIONS]["format_weight"] == 0.25
    assert at.session_state[state.K_OPTIONS]["mode"] is None
    at.run()  # the same data: the options are kept
    assert at.session_state[state.K_OPTIONS]["format_weight"] == 0.25


def _sync_script():
    import streamlit as st

    from dashboard.state import sync_widget

    def remember():
        st.session_state["kept"] = st.session_state["w"]

    sync_widget("w", st.session_state.get("kept", 0.3))
    st.slider("w", 0.0, 1.0, key="w", on_change=remember)


def test_sync_widget_hands_back_the_remembered_value():
    at = AppTest.from_function(_sync_script).run()
    assert at.slider(key="w").value == 0.3
    at.slider(key="w").set_value(0.7).run()
    assert at.slider(key="w").value == 0.7 and at.session_state["kept"] == 0.7
    at.run()
    assert at.slider(key="w").value == 0.7


def _page_script():
    from dashboard.state import bootstrap

    bootstrap("Page")


def test_data_folder_from_the_environment(tmp_path, monkeypatch):
    records = [json.loads(line) for line in (sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl").read_text().splitlines()[:4]]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.setenv(state.DATA_ENV, str(tmp_path))
    at = AppTest.from_function(_page_script, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.radio(key="rs_kind_w").value == state.KIND_PATH
    assert at.text_area(key="rs_path_w").value == str(tmp_path)
    assert any("(4 rollouts)" in t.value for t in at.sidebar.text)


def test_the_paths_of_the_command_line_open_together(tmp_path, monkeypatch):
    """``rolloutscope app A B`` runs ``streamlit run app.py -- A B``: one source, one path per line."""
    records = [json.loads(line) for line in (sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl").read_text().splitlines()[:6]]
    for name, rows in (("a/r.jsonl", records[:4]), ("b.jsonl", records[4:])):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.delenv(state.DATA_ENV, raising=False)
    monkeypatch.setattr("sys.argv", [str(sources.APP_ROOT / "app.py"), str(tmp_path / "a"), str(tmp_path / "b.jsonl")])
    at = AppTest.from_function(_page_script, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.text_area(key="rs_path_w").value == f"{tmp_path / 'a'}\n{tmp_path / 'b.jsonl'}"
    assert any("(6 rollouts)" in t.value for t in at.sidebar.text)


def test_missing_path_is_a_friendly_error(tmp_path, monkeypatch):
    monkeypatch.setenv(state.DATA_ENV, str(tmp_path / "nowhere"))
    at = AppTest.from_function(_page_script, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert any("not found" in e.value for e in at.sidebar.error)
    assert any("Choose the data" in i.value for i in at.info)


def test_default_path_prefers_the_command_line(monkeypatch):
    monkeypatch.setenv(state.DATA_ENV, "/from/env")
    app = str(sources.REPO_ROOT / "app.py")
    monkeypatch.setattr("sys.argv", [app, "/from/argv"])
    assert state.default_path() == "/from/argv"
    monkeypatch.setattr("sys.argv", [app, "/runs/a", "/runs/b.jsonl"])  # rolloutscope app PATH PATH
    assert state.default_path() == "/runs/a\n/runs/b.jsonl"
    monkeypatch.setattr("sys.argv", [app])
    assert state.default_path() == "/from/env"
    monkeypatch.setattr("sys.argv", ["pytest", "tests/x.py"])  # not streamlit run app.py: arguments are not data
    assert state.default_path() == "/from/env"


@pytest.mark.parametrize("kind", [state.KIND_UPLOAD, state.KIND_PATH])
def test_sources_waiting_for_input_say_so(kind, monkeypatch):
    monkeypatch.delenv(state.DATA_ENV, raising=False)
    at = AppTest.from_function(_page_script, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(kind).run()
    assert not at.exception
    assert at.sidebar.info, "the sidebar says what to do next"
    assert any("Choose the data" in i.value for i in at.info)
