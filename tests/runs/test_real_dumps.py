"""Files as real trainers and harnesses write them, tried as a new user would.

Shapes follow the writers' own field names: verl ``RayPPOTrainer._dump_generations``
(``{step}.jsonl`` with input/output/gts/score/step plus every reward_extra_info key), TRL
``GRPOTrainer`` completion tables (``completions_{step}.parquet``: step, prompt, completion, one
column per reward function, advantage), lm-eval ``samples_{task}_{date}.jsonl`` (doc_id, doc,
target, arguments, resps, filtered_resps, filter, metrics, doc_hash, prompt_hash, target_hash and
the metric values) and lmms-eval's ``{date}_samples_{task}.jsonl`` (doc_id, input, target,
filtered_resps, the hashes and the metric values; no doc, no filter).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from rollout_fixtures import contract, row, write_jsonl

from scoring import score_trace_response
from scoring.cli import main, summarize
from scoring.rollouts import detect_layout, file_stem
from scoring.rollouts.rows import _non_finite_at, _plain_finite
from scoring.runs import score_files, score_records

# --------------------------------------------------------------------------- writers' shapes


def trace_truth(answer=7, box=(0, 0, 10, 10)) -> dict:
    """What a trace dataset stores as ``reward_model.ground_truth`` (verl dumps it as ``gts``)."""
    return {
        "answer_gt": {"type": "integer", "value": answer},
        "annotation_gt": {"type": "bbox", "value": list(box)},
        "reward_contract": contract("bbox"),
    }


def expected_overall(response: str) -> float:
    """The verifier's overall for a response against :func:`trace_truth` (annotation contract: both parts)."""
    return score_trace_response(
        response=response, trace_reward_mode="answer_and_annotation", **trace_truth()
    )["overall"]


def verl_line(step: int, prompt: str, output: str, gts, score: float, **extra_info) -> dict:
    """One line of verl's ``_dump_generations``: input, output, gts, score, step, reward_extra_info keys."""
    return {"input": prompt, "output": output, "gts": gts, "score": score, "step": step, **extra_info}


def verl_mixed_dump(path, math_rows: int = 36, trace_rows: int = 16):
    """An unshuffled validation set: math rows first (plain ``gts``), then trace rows (JSON ``gts``)."""
    lines = []
    for i in range(math_rows):
        lines.append(
            verl_line(
                200,
                f"What is {i} + 219 - {i}?",
                f"Let me think. The answer is {219 if i % 3 else 218}",
                "219",
                1.0 if i % 3 else 0.0,
                acc=bool(i % 3),
            )
        )
    for i in range(trace_rows):
        answer = 2 if i % 2 else 7
        output = f'<think>boxes</think>{{"answer": {answer}, "annotation": [0, 0, 10, 10]}}'
        expected = expected_overall(output)
        lines.append(
            verl_line(
                200,
                f"How many cars are in image {i}?",
                output,
                json.dumps(trace_truth()),
                expected,
                acc=float(answer == 7),
            )
        )
    return write_jsonl(path, lines)


def lm_eval_line(doc_id: int, filter_name: str, response: str, overall: float) -> dict:
    """One line of lm-eval's samples file (``evaluator.evaluate`` with ``log_samples``)."""
    prompt = f"Question {doc_id}: how many cars? Answer as JSON."
    return {
        "doc_id": doc_id,
        "doc": {"question": prompt, **trace_truth()},
        "target": "7",
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["</s>"], "do_sample": False}}},
        "resps": [[f"raw: {response}"]],
        "filtered_resps": [response],
        "filter": filter_name,
        "metrics": ["trace_overall"],
        "doc_hash": f"d{doc_id}",
        "prompt_hash": f"p{doc_id}",
        "target_hash": "t",
        "trace_overall": overall,
    }


# --------------------------------------------------------------------------- 1. detection per row


def test_verl_dump_whose_first_rows_are_math_scores_its_trace_rows(tmp_path):
    path = verl_mixed_dump(tmp_path / "200.jsonl")
    run = score_files(path, workers=1)
    assert len(run.table) == 16 and set(run.table["scorer"]) == {"trace"}
    assert run.table["source_line"].tolist() == list(range(37, 53))
    # the logged score is the recomputed one, row for row
    assert (run.table["logged_score"] - run.table["overall"]).abs().max() < 1e-9
    errors = run.errors[run.errors["severity"] == "error"]
    assert errors["line"].tolist() == list(range(1, 37))  # every math row, each on its own line
    assert set(errors["file"]) == {str(path)} and set(errors["field"]) == {"gts"}
    assert errors["reason"].str.contains("plain gold answer").all()
    assert errors["reason"].str.contains("choose a simple scorer").all()
    assert "'219'" in errors["reason"].iloc[0]
    assert run.file_errors().empty  # the file is not rejected whole


def test_a_simple_scorer_scores_plain_gold_rows_and_never_trace_rows(tmp_path):
    path = verl_mixed_dump(tmp_path / "200.jsonl")
    run = score_files(path, workers=1, scorer="last_number")
    table = run.table.set_index("source_line")
    assert len(table) == 52 and run.error_count == 0
    math_rows, trace_rows = table.loc[1:36], table.loc[37:52]
    assert set(math_rows["scorer"]) == {"last_number"} and set(trace_rows["scorer"]) == {"trace"}
    assert math_rows["score"].tolist() == [0.0 if i % 3 == 0 else 1.0 for i in range(36)]
    assert math_rows["gold"].eq("219").all() and math_rows["overall"].isna().all()
    # the trace rows get the verifier's score, not last_number against the JSON text of their ground truth
    expected = [expected_overall(text) for text in trace_rows["response"]]
    assert trace_rows["score"].tolist() == expected and trace_rows["annotation_type"].eq("bbox").all()
    assert trace_rows["option_answer_weight"].eq(0.5).all() and math_rows["option_answer_weight"].isna().all()


def test_trace_rows_among_plain_gold_rows_in_canonical_files(tmp_path):
    rows = [
        {"response": "so 12", "gold": "12"},
        row('{"answer": 7, "annotation": [0, 0, 10, 10]}'),
        {"response": "so 3", "answer": "4"},
        {"response": "nothing to compare"},
    ]
    run = score_files(
        write_jsonl(tmp_path / "mixed.jsonl", rows), workers=1, scorer="exact_match", normalise=False
    )
    assert run.table["scorer"].tolist() == ["exact_match", "trace", "exact_match"]
    assert run.table["source_line"].tolist() == [1, 2, 3]
    [error] = run.errors.itertuples()
    assert (error.line, error.field) == (4, "gold") and "no plain gold answer" in error.reason


def test_layout_notes_that_plain_gold_rows_need_a_scorer(tmp_path):
    records = [verl_line(1, "q", "a", "219", 1.0)]
    layout = detect_layout(records, path=tmp_path / "1.jsonl")
    assert layout.plain_gold and not layout.has_trace_gt
    assert any("simple scorer" in note for note in layout.notes)
    assert not detect_layout(records, path=tmp_path / "1.jsonl", simple=True).notes


def test_cli_scores_the_trace_rows_of_a_mixed_dump(tmp_path, capsys):
    path = verl_mixed_dump(tmp_path / "200.jsonl")
    code = main(["score", str(path), "-o", str(tmp_path / "out.parquet"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0 and "scored 16 rows" in err
    assert f"{path}, line 1, field 'gts': holds a plain gold answer" in err


# --------------------------------------------------------------------------- 2. joins


def trl_completions(path, prompts: list[str], images: list[str | None] | None = None):
    """A TRL GRPOTrainer completions table: step, prompt, completion, reward columns, advantage."""
    frame = pd.DataFrame(
        {
            "step": [50] * len(prompts),
            "prompt": prompts,
            "completion": ['{"answer": 7, "annotation": [0, 0, 10, 10]}'] * len(prompts),
            "reward_trace": [1.0] * len(prompts),
            "advantage": [0.0] * len(prompts),
        }
    )
    if images is not None:
        frame["image"] = images
    frame.to_parquet(path, index=False)
    return path


def instance(prompt: str, answer: int, image: str = "a.png", **extra) -> dict:
    return {"prompt": prompt, "image": image, "image_size": [100, 100], **trace_truth(answer), **extra}


def test_a_prompt_shared_by_instances_that_disagree_is_an_error_naming_them(tmp_path):
    instances = write_jsonl(
        tmp_path / "train_instances.jsonl",
        [
            instance("Count the cars.", 7),
            instance("Count the cars.", 3),  # the same prompt, another image's answer
            instance("Count the bikes.", 7),
            instance("Count the bikes.", 7),  # a duplicate: agrees on everything the score uses
        ],
    )
    path = trl_completions(
        tmp_path / "completions_50.parquet", ["Count the cars.", "Count the bikes.", "Count the cars."]
    )
    run = score_files(path, instances=instances, workers=1)
    assert run.table["source_line"].tolist() == [2]  # the bikes joined, the cars did not
    assert run.table["joined"].tolist() == ["prompt"] and run.table["overall"].tolist() == [1.0]
    errors = run.errors[run.errors["severity"] == "error"]
    assert errors["line"].tolist() == [1, 3] and set(errors["field"]) == {"prompt"}
    reason = errors["reason"].iloc[0]
    assert "matches 2 instances that differ in answer_gt" in reason
    assert f"{instances}:1" in reason and f"{instances}:2" in reason
    report = run.join_report()
    assert report.to_dict("records") == [
        {
            "file": str(path),
            "rule": "auto: prompt",
            "rows": 1,
            "by_id": 0,
            "by_prompt": 1,
            "by_order": 0,
            "own_ground_truth": 0,
            "ambiguous": 2,
            "unmatched": 0,
        },
    ]


def test_the_rows_own_image_settles_a_shared_prompt(tmp_path):
    instances = write_jsonl(
        tmp_path / "instances.jsonl",
        [
            instance("Count the cars.", 7, image="imgs/a.png"),
            instance("Count the cars.", 3, image="imgs/b.png"),
        ],
    )
    path = trl_completions(
        tmp_path / "completions_50.parquet", ["Count the cars."] * 3, ["a.png", "b.png", "c.png"]
    )
    run = score_files(path, instances=instances, workers=1, read_image_sizes=False)
    assert run.table["source_line"].tolist() == [1, 2]
    assert run.table["joined"].tolist() == ["prompt+image"] * 2
    assert run.table["overall"].tolist() == [1.0, 0.0]  # each row met its own image's answer
    [error] = run.errors[run.errors["severity"] == "error"].itertuples()
    assert (error.line, error.field) == (3, "prompt") and "differ in answer_gt, image" in error.reason


def shared_prompt_instances(tmp_path) -> Path:
    """Three instances of one prompt (each its own image and ground truth) and two of another
    that differ only in their image (each a 100x100 PNG beside them)."""
    for name in "abcde":
        Image.new("RGB", (100, 100), "white").save(tmp_path / f"{name}.png")
    return write_jsonl(
        tmp_path / "instances.jsonl",
        [
            instance("Count the cars.", 7, image="a.png"),
            instance("Count the cars.", 3, image="b.png"),
            instance("Count the cars.", 3, image="c.png", annotation_gt={"type": "bbox", "value": [5, 5, 20, 20]}),
            instance("Count the bikes.", 7, image="d.png"),
            instance("Count the bikes.", 7, image="e.png"),
        ],
    )


def test_a_rows_own_ground_truth_picks_among_instances_sharing_its_prompt(tmp_path):
    instances = shared_prompt_instances(tmp_path)
    chat = "system\nYou are a helpful assistant.\nuser\n{}\nassistant\n"  # verl's input: the prompt templated
    output = '{"answer": 3, "annotation": [0, 0, 10, 10]}'
    lines = [
        verl_line(10, chat.format("Count the cars."), output, trace_truth(7), 0.0),
        verl_line(10, chat.format("Count the cars."), output, json.dumps(trace_truth(3)), 1.0),  # JSON text
        verl_line(10, chat.format("Count the cars."), output, trace_truth(3, box=(5, 5, 20, 20)), 0.5),
        verl_line(10, chat.format("Count the cars."), output, trace_truth(9), 0.0),  # no instance has it
        verl_line(10, chat.format("Count the bikes."), output, trace_truth(7), 0.0),  # two images hold it
    ]
    path = write_jsonl(tmp_path / "10.jsonl", lines)
    run = score_files(path, instances=instances, workers=1, read_image_sizes=False)
    table = run.table
    assert table["source_line"].tolist() == [1, 2, 3, 4]
    assert table["joined"].tolist()[:3] == ["prompt+ground_truth"] * 3 and pd.isna(table["joined"].iloc[3])
    assert [Path(ref).name if isinstance(ref, str) else None for ref in table["image_ref"]] == [
        "a.png", "b.png", "c.png", None,
    ]  # fmt: skip
    assert table["answer_reward"].tolist() == [0.0, 1.0, 1.0, 0.0]  # each scored against its own truth
    assert table["image_width"].tolist()[:3] == [100.0] * 3  # the size its instance lends
    [error] = run.errors[run.errors["severity"] == "error"].itertuples()
    assert (error.line, error.field) == (5, "prompt")
    assert error.reason.startswith("matches 2 instances that differ in image (")
    report = run.join_report().to_dict("records")[0]
    assert (report["by_prompt"], report["own_ground_truth"], report["ambiguous"]) == (3, 1, 1)


def test_a_plain_gold_answer_picks_the_instance_whose_answer_it_is(tmp_path):
    instances = shared_prompt_instances(tmp_path)
    output = '{"answer": 3, "annotation": [0, 0, 10, 10]}'
    rows = [
        {"prompt": "Count the cars.", "response": output, "reward_model": {"ground_truth": "7"}},
        {"prompt": "Count the cars.", "response": output, "reward_model": {"ground_truth": "3"}},  # two hold 3
        {"prompt": "Count the cars.", "response": output, "reward_model": {"ground_truth": "4"}},  # none
        {"prompt": "Count the cars.", "response": output},  # no ground truth of its own
    ]
    run = score_files(write_jsonl(tmp_path / "rows.jsonl", rows), instances=instances, workers=1,
                      read_image_sizes=False)  # fmt: skip
    assert run.table["source_line"].tolist() == [1]
    assert run.table["joined"].tolist() == ["prompt+ground_truth"]
    assert Path(run.table["image_ref"].iloc[0]).name == "a.png" and run.table["answer_reward"].tolist() == [0.0]
    errors = run.errors[run.errors["severity"] == "error"]
    assert errors["line"].tolist() == [2, 3, 4] and set(errors["field"]) == {"prompt"}
    two, none, bare = errors["reason"].tolist()
    assert two.startswith(
        "matches 3 instances, 2 of them with the row's own ground truth, that differ in annotation_gt, image ("
    )
    assert f"{instances}:2" in two and f"{instances}:3" in two and f"{instances}:1" not in two
    assert none.startswith("no instance among the 3 that share this prompt has the row's own ground truth (")
    assert bare.startswith("matches 3 instances that differ in answer_gt, annotation_gt, image (")
    report = run.join_report().to_dict("records")[0]
    assert (report["by_prompt"], report["ambiguous"], report["unmatched"]) == (1, 2, 1)


def test_ids_shared_by_disagreeing_instances_are_ambiguous_too(tmp_path):
    instances = write_jsonl(
        tmp_path / "instances.jsonl",
        [
            instance("a", 7, id="x1"),
            instance("b", 7, id="x1", image_size=[50, 50]),
            instance("c", 7, id="x2"),
        ],
    )
    rows = [
        {"response": '{"answer": 7, "annotation": [0, 0, 10, 10]}', "instance_id": key}
        for key in ("x1", "x2")
    ]
    run = score_files(write_jsonl(tmp_path / "r.jsonl", rows), instances=instances, workers=1)
    assert run.table["instance_id"].tolist() == ["x2"] and run.table["joined"].tolist() == ["id"]
    [error] = run.errors[run.errors["severity"] == "error"].itertuples()
    assert (error.line, error.field) == (1, "id") and "differ in image_size" in error.reason


def test_cli_reports_the_join_per_file(tmp_path, capsys):
    instances = write_jsonl(tmp_path / "instances.jsonl", [instance("Count the cars.", 7)])
    path = trl_completions(tmp_path / "completions_50.parquet", ["Count the cars.", "Unknown prompt"])
    code = main(
        [
            "score",
            str(path),
            "--instances",
            str(instances),
            "-o",
            str(tmp_path / "o.parquet"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert f"joined instances (auto: prompt): {path}: 1 by prompt; 1 unmatched (see the errors file)" in err


# --------------------------------------------------------------------------- 3. lm-eval filters


def lm_eval_file(path):
    good, bad = '{"answer": 7, "annotation": [0, 0, 10, 10]}', "The answer is 7."
    lines = []
    for doc_id in range(3):
        lines.append(lm_eval_line(doc_id, "strict-match", bad, 0.0))
        lines.append(lm_eval_line(doc_id, "flexible-extract", good, 1.0))
    return write_jsonl(path, lines)


def test_lm_eval_filters_are_columns_and_part_of_the_row_id(tmp_path):
    path = lm_eval_file(tmp_path / "samples_trace_count_2024-06-01T10-00-00.123456.jsonl")
    run = score_files(path, workers=1)
    table = run.table
    assert len(table) == 6 and run.error_count == 0
    assert table["filter"].tolist() == ["strict-match", "flexible-extract"] * 3
    assert table["metrics"].eq("trace_overall").all() and table["task_id"].eq("trace_count").all()
    assert table["row_id"].is_unique
    assert table["row_id"].tolist()[:2] == [
        "0/strict-match/trace_overall",
        "0/flexible-extract/trace_overall",
    ]
    assert table.groupby("filter", observed=True)["score"].mean().to_dict() == {
        "flexible-extract": 1.0,
        "strict-match": 0.0,
    }
    assert (table["logged_overall"] == table["overall"]).all()


def test_summary_splits_by_filter(tmp_path, capsys):
    path = lm_eval_file(tmp_path / "samples_trace_count_2024-06-01T10-00-00.jsonl")
    table = score_files(path, workers=1).table
    summary = summarize(table)
    assert set(summary["grouping"]) == {"filter,task_id", "filter,annotation_type", "filter"}
    overall = summary[summary["grouping"] == "filter"].set_index("group")["mean_score"].to_dict()
    assert overall == {"flexible-extract": 1.0, "strict-match": 0.0}  # never pooled into 0.5
    scored = tmp_path / "scored.parquet"
    assert main(["score", str(path), "-o", str(scored), "--no-progress", "-q"]) == 0
    assert main(["summary", str(scored), "--format", "csv"]) == 0
    out = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert "all" not in set(out["grouping"]) and len(out[out["grouping"] == "filter"]) == 2


# --------------------------------------------------------------------------- 4. NaN and infinities


def test_non_finite_ground_truth_is_a_row_error_naming_the_field(tmp_path):
    good = json.dumps(row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image_size=[100, 100]))
    lines = [
        good,
        good.replace('"value": 7', '"value": NaN'),
        good.replace('"value": [0, 0, 10, 10]', '"value": [0, 0, Infinity, 10]'),
        good.replace("[100, 100]", "[NaN, 100]"),
        good.replace('"value": [0, 0, 10, 10]', '"value": [0, 0, 1e999, 10]'),
        good,
    ]
    path = tmp_path / "nan.jsonl"
    path.write_text("\n".join(lines) + "\n")
    run = score_files(path, workers=1)
    assert run.table["source_line"].tolist() == [1, 6]
    errors = run.errors[run.errors["severity"] == "error"]
    assert errors[["line", "field"]].values.tolist() == [
        [2, "answer_gt.value"],
        [3, "annotation_gt.value[2]"],
        [4, "image_size[0]"],
        [5, "annotation_gt.value[2]"],
    ]
    assert errors["reason"].str.contains("not a finite number").all() and set(errors["file"]) == {str(path)}


def test_non_finite_values_in_memory_and_in_nested_ground_truth(tmp_path):
    nan = math.nan
    records = [
        row(
            '{"answer": 2, "annotation": [[0, 0, 10, 10]]}',
            answer=2,
            annotation_type="bbox_set",
            annotation=[[0, 0, 10, 10], [0, nan, 5, 5]],
        ),
        row('{"answer": 7}', mode="answer", annotation=[0, 0, float("inf"), 10]),  # not read in answer mode
        {"response": "so 12", "gold": nan},
        row('{"answer": 7, "annotation": [0, 0, 10, 10]}'),
    ]
    run = score_records(records, name="mem", scorer="numeric_close")
    assert run.table["source_line"].tolist() == [2, 4]
    errors = run.errors.set_index("line")
    assert errors.loc[1, "field"] == "annotation_gt.value[1][1]" and errors.loc[1, "severity"] == "error"
    assert errors.loc[2, "field"] == "annotation_gt.value[2]" and errors.loc[2, "severity"] == "warning"
    assert errors.loc[3, "field"] == "gold" and errors.loc[3, "severity"] == "error"


finite_floats = st.floats(allow_nan=False, allow_infinity=False)
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
trees = st.recursive(
    st.one_of(st.integers(), finite_floats, st.text(max_size=3), st.none(), st.booleans()),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=2), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(trees, st.data())
def test_non_finite_numbers_are_found_wherever_they_sit(tree, data):
    assert _non_finite_at(tree, "v") is None
    # put one non-finite number somewhere in the tree: it is found, at the path that leads to it
    holder = {"v": tree}
    parent, key = holder, "v"
    path = "v"
    while isinstance(parent[key], (list, dict)) and parent[key] and data.draw(st.booleans()):
        inner = parent[key]
        step = data.draw(st.sampled_from(range(len(inner)) if isinstance(inner, list) else sorted(inner)))
        path += f"[{step}]" if isinstance(inner, list) else f".{step}"
        parent, key = inner, step
    parent[key] = data.draw(non_finite)
    where = _non_finite_at(holder["v"], "v")
    assert where is not None
    assert not _plain_finite(holder["v"])
    assert where == path


# --------------------------------------------------------------------------- 6. the errors file


@pytest.mark.parametrize(
    ("output", "errors_file"),
    [
        ("a.v1.parquet", "a.v1.errors.csv"),
        ("a.v2.parquet", "a.v2.errors.csv"),
        ("b.csv.gz", "b.errors.csv"),
        ("run.2024-06-01.jsonl", "run.2024-06-01.errors.csv"),
    ],
)
def test_the_errors_file_keeps_the_whole_output_stem(tmp_path, output, errors_file):
    path = write_jsonl(tmp_path / "in.jsonl", [row('{"answer": 7}', mode="answer"), {"response": "x"}])
    assert main(["score", str(path), "-o", str(tmp_path / output), "--no-progress", "-q"]) == 0
    errors = pd.read_csv(tmp_path / errors_file)
    assert errors[["line", "field"]].values.tolist() == [[2, "answer_gt"]]


def test_file_stem_drops_only_the_table_ending(tmp_path):
    assert [
        file_stem(tmp_path / n)
        for n in ("a.v1.parquet", "x.jsonl.gz", "out", "samples_t_2024-06-01T10-00-00.123.jsonl")
    ] == [
        "a.v1",
        "x",
        "out",
        "samples_t_2024-06-01T10-00-00.123",
    ]


# --------------------------------------------------------------------------- 7. lmms-eval


def lmms_eval_line(doc_id: int, response: str, overall: float) -> dict:
    """lmms-eval's ``save_results_samples``: ``input`` is the context, ``doc`` and ``arguments`` are
    dropped, ``resps`` too when it equals ``filtered_resps``, and ``target`` is ``str(target)``."""
    return {
        "doc_id": doc_id,
        "target": str(trace_truth()),  # a Python repr of the task's target dict
        "filtered_resps": [response],
        "doc_hash": f"d{doc_id}",
        "prompt_hash": f"p{doc_id}",
        "target_hash": "t",
        "trace_overall": overall,
        "input": f"<image>Question {doc_id}: how many cars?",
    }


def test_lmms_eval_sample_logs_read_as_lm_evals(tmp_path):
    good = '{"answer": 7, "annotation": [0, 0, 10, 10]}'
    lines = [
        lmms_eval_line(0, good, 1.0),
        lmms_eval_line(1, "seven", 0.0),
        {"doc_id": 2, "filtered_resps": ["x"]},
    ]
    path = write_jsonl(tmp_path / "20240614_211533_samples_trace_count.jsonl", lines)
    run = score_files(path, workers=1)
    table = run.table
    assert run.layouts[str(path)].name == "lm_eval"
    assert table["row_id"].tolist() == ["0", "1"] and table["task_id"].eq("trace_count").all()
    assert table["prompt"].tolist() == [lines[0]["input"], lines[1]["input"]]
    assert table["overall"].tolist() == [1.0, 0.0] and (table["logged_overall"] == table["overall"]).all()
    assert table["filter"].isna().all()
    [error] = run.errors.itertuples()
    assert (error.file, error.line, error.field) == (str(path), 3, "answer_gt")
