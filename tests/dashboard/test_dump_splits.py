"""The app on real dumps: lm-eval filters never pooled (Overview groups, step chart, Compare), and
files with plain-gold rows classified for the mapping dialog's simple-scorer question."""

from __future__ import annotations

import json

import pytest

from dashboard import compare, filters, loading, sources, state, tuning
from dashboard.compare import Side
from scoring.runs import score_files
from scoring.verifier import RESOLVER_IDS

TRUTH = {
    "answer_gt": {"type": "integer", "value": 7},
    "annotation_gt": {"type": "bbox", "value": [0, 0, 10, 10]},
    "reward_contract": {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": RESOLVER_IDS["bbox"], "type": "bbox"},
    },
}
GOOD, BAD = '{"answer": 7, "annotation": [0, 0, 10, 10]}', "It is 7."


def lm_eval_lines(run: str, good_filter: str) -> list[dict]:
    """lm-eval samples: one line per document and filter; ``good_filter``'s responses are right."""
    lines = []
    for doc_id in range(4):
        for name in ("strict-match", "flexible-extract"):
            response = GOOD if name == good_filter else BAD
            lines.append({
                "doc_id": doc_id, "doc": {"question": f"q{doc_id}", "instance_id": f"i{doc_id}", **TRUTH},
                "target": "7", "arguments": {"gen_args_0": {"arg_0": f"q{doc_id}"}}, "resps": [[response]],
                "filtered_resps": [response], "filter": name, "metrics": ["trace_overall"], "run": run,
                "doc_hash": "d", "prompt_hash": "p", "target_hash": "t",
            })  # fmt: skip
    return lines


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm_eval")
    paths = []
    for run, good in (("A", "flexible-extract"), ("B", "strict-match")):
        path = folder / f"samples_count_{run}_2024-06-01T10-00-00.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lm_eval_lines(run, good)))
        paths.append(path)
    table = score_files(paths, workers=1).table
    return table, tuning.scores(table, tuning.scored_options(table))


def test_overview_groups_split_by_filter(two_runs):
    table, scores = two_runs
    summary = filters.group_summary(table, scores, "run").set_index(["filter", "run"])
    assert summary["overall"].to_dict() == {
        ("flexible-extract", "A"): 1.0, ("flexible-extract", "B"): 0.0,
        ("strict-match", "A"): 0.0, ("strict-match", "B"): 1.0,
    }  # fmt: skip
    assert (summary["rows"] == 4).all()
    one_filter = table[table["filter"] == "strict-match"]
    assert "filter" not in filters.group_summary(one_filter, scores.loc[one_filter.index], "run").columns


def test_compare_pairs_rows_of_the_same_filter(two_runs):
    table, scores = two_runs
    joined = compare.compare_runs(table, scores, Side("A", None), Side("B", None))
    units = joined.units
    assert len(units) == 8 and set(units["filter"]) == {"strict-match", "flexible-extract"}
    assert units["key"].str.endswith((" · strict-match", " · flexible-extract")).all()
    by_filter = units.groupby("filter")["overall_delta"].mean().to_dict()
    assert by_filter == {"flexible-extract": -1.0, "strict-match": 1.0}  # pooled, they would cancel to 0
    deltas = compare.all_deltas(joined)
    assert set(deltas) == {"all", "task_id", "annotation_type", "filter"}
    per_filter = deltas["filter"].query("component == 'overall'").set_index("slice")["delta"].to_dict()
    assert per_filter == {"flexible-extract": -1.0, "strict-match": 1.0}


def test_plain_gold_files_are_offered_the_scorer_question(tmp_path):
    trace = {"input": "How many?", "output": GOOD, "gts": json.dumps(TRUTH), "score": 1.0, "step": 3}
    math = [
        {"input": f"{i}+1?", "output": f"so {i + 1}", "gts": str(i + 1), "score": 1.0, "step": 3}
        for i in range(40)
    ]
    (tmp_path / "3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*math, trace]))
    source = sources.source_from_path(str(tmp_path / "3.jsonl")).with_options(simple_scorer="last_number")
    run = loading.load(source, workers=1)
    [plan] = run.plans
    assert plan.kind == sources.SIMPLE and state.has_plain_gold(plan)
    assert state.plain_gold_files(run) == [plan]
    assert run.table["scorer"].value_counts().to_dict() == {"last_number": 40, "trace": 1}
    assert run.table.loc[run.table["scorer"] == "trace", "overall"].tolist() == [1.0]


def test_the_mapping_dialog_asks_the_simple_scorer_for_plain_gold_rows():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    trace = {"input": "How many?", "output": GOOD, "gts": json.dumps(TRUTH), "score": 1.0, "step": 3}
    rows = [{"input": "2+1?", "output": "so 3.01", "gts": "3", "score": 0.0, "step": 3}, trace]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(
        ("3.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode(), "application/jsonl")
    )
    at.run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == "2" and metrics["Solve rate (≥ 0.999)"] == "100%"  # numeric_close: 3.01 ~ 3
    next(b for b in at.sidebar.button if b.label.startswith("Choose the simple scorer")).click().run()
    question = next(s for s in at.selectbox if s.key.startswith("rs_map_") and s.key.endswith("_scorer"))
    assert question.value == sources.DEFAULT_SIMPLE_SCORER
    question.set_value("exact_match")
    next(b for b in at.button if b.label == "Apply mapping").click().run()
    assert not at.exception and not at.error
    assert at.session_state[state.K_SCORER] == "exact_match"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows"] == "2" and metrics["Solve rate (≥ 0.999)"] == "50%"  # 3.01 is not exactly 3


def test_the_compare_page_has_a_per_filter_slice(tmp_path):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    app = Path(__file__).resolve().parents[2] / "app.py"
    uploads = [
        (f"samples_count_{run}_2024-06-01T10-00-00.jsonl", lm_eval_lines(run, good))
        for run, good in (("A", "flexible-extract"), ("B", "strict-match"))
    ]
    at = AppTest.from_file(str(app), default_timeout=90).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(
        [
            (name, "".join(json.dumps(r) + "\n" for r in lines).encode(), "application/jsonl")
            for name, lines in uploads
        ]
    )
    at.run()
    at.switch_page("pages/7_Compare.py").run()
    at.selectbox(key="cmp_a_run_w").select("A")
    at.selectbox(key="cmp_b_run_w").select("B")
    at.run()
    assert not at.exception and not at.error
    assert [tab.label for tab in at.tabs][:4] == [
        "All components",
        "Per task",
        "Per annotation type",
        "Per filter",
    ]
