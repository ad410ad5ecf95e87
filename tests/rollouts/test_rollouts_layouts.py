"""Layouts, the column mapping, and ground truth found wherever it arrives."""

from __future__ import annotations

import json

import pytest
from rollout_fixtures import contract, row

from scoring.rollouts import (
    ColumnMapping,
    InstanceIndex,
    LayoutError,
    RowReader,
    as_text,
    detect_layout,
    logged_component,
    step_from_name,
)
from scoring.rollouts.errors import RowProblem
from scoring.rollouts.fields import MISSING, Scopes, as_mapping, get_path


def _read(records, record=None, *, path=None, mapping=None, simple=False, instances=None, gold_key="gold"):
    layout = detect_layout(records, path=path, mapping=mapping, simple=simple, joined=instances is not None)
    reader = RowReader(
        layout, base_dir="/data", run="run", simple=simple, gold_key=gold_key, instances=instances
    )
    return layout, reader.read(record if record is not None else records[0], 0)


# --------------------------------------------------------------------------- ground truth fields


@pytest.mark.parametrize(
    "wrap",
    [
        lambda gt: gt,
        lambda gt: {"reward_input": gt},
        lambda gt: {"ground_truth": json.dumps(gt)},
        lambda gt: {"gts": gt},
        lambda gt: {"extra_info": {"reward_input": json.dumps(gt)}},
        lambda gt: {"reward_model": {"ground_truth": gt}},
    ],
    ids=["top", "reward_input", "ground_truth-json", "gts", "extra_info-nested-json", "reward_model"],
)
def test_ground_truth_is_found_nested_or_json_encoded(wrap):
    truth = row(None)
    gt = {k: json.dumps(truth[k]) for k in ("answer_gt", "annotation_gt", "reward_contract")}
    record = {"response": '{"answer": 7, "annotation": [0, 0, 10, 10]}', **wrap(gt)}
    _, (out,) = _read([record])
    assert out.answer_gt == truth["answer_gt"]
    assert out.annotation_gt == truth["annotation_gt"]
    assert out.reward_contract == truth["reward_contract"]
    assert out.mode == "answer_and_annotation"


def test_python_repr_strings_are_decoded():
    record = {
        "response": "x",
        "answer_gt": "{'type': 'integer', 'value': 7}",
        "reward_contract": repr(contract(None)),
    }
    _, (out,) = _read([record])
    assert out.answer_gt == {"type": "integer", "value": 7}
    assert out.mode is None  # no annotation contract: answer mode


def test_get_path_walks_dotted_paths_and_json_strings():
    record = {"extra_info": json.dumps({"gt": {"a": [1, 2]}}), "x.y": 5}
    assert get_path(record, "extra_info.gt.a.1") == 2
    assert get_path(record, "x.y") == 5
    assert get_path(record, "extra_info.nope") is MISSING
    scopes = Scopes({"gts": {"answer_gt": 1}})
    assert scopes.find("answer_gt") == (1, "gts.answer_gt")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (3, "has type number, expected an object"),
        ("", "is an empty string"),
        ("{not json", "not valid JSON"),
        ('"text"', "does not hold a JSON object"),
        ([1, 2], "has type array"),
    ],
)
def test_bad_ground_truth_values_name_the_field(value, reason):
    with pytest.raises(RowProblem) as info:
        as_mapping(value, "answer_gt")
    assert info.value.field == "answer_gt" and reason in info.value.reason


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (lambda r: r.pop("response"), "response", "missing"),
        (lambda r: r.update(response=12), "response", "has type number, expected text"),
        (lambda r: r.pop("answer_gt"), "answer_gt", "missing"),
        (lambda r: r.pop("reward_contract"), "reward_contract", "missing"),
        (lambda r: r.update(answer_gt={"type": "integer"}), "answer_gt.value", "missing"),
        (lambda r: r.update(answer_gt=5), "answer_gt", "has type number"),
        (
            lambda r: r["annotation_gt"].update(type="polygon"),
            "annotation_gt.type",
            "unknown annotation type 'polygon'",
        ),
        (lambda r: r.pop("annotation_gt"), "annotation_gt", "required in answer_and_annotation mode"),
        (lambda r: r.update(trace_output_mode="both"), "trace_output_mode", "unknown output mode 'both'"),
        (lambda r: r.update(point_half_life_px=-3), "point_half_life_px", "finite number > 0"),
        (lambda r: r.update(step="late"), "step", "must be an integer step"),
    ],
)
def test_row_problems_name_the_field(change, field, reason):
    good = row('{"answer": 7, "annotation": [0, 0, 10, 10]}', id="a", step=3)
    bad = json.loads(json.dumps(good))
    change(bad)
    layout = detect_layout([good])
    reader = RowReader(layout, base_dir="/d", run=None)
    with pytest.raises(RowProblem) as info:
        reader.read(bad, 0)
    assert info.value.field == field
    assert reason in info.value.reason


def test_unknown_annotation_type_is_only_a_warning_in_answer_mode():
    record = row('{"answer": 7}', mode="answer")
    record["annotation_gt"]["type"] = "polygon"
    _, (out,) = _read([record])
    assert out.mode == "answer"
    assert out.warnings and out.warnings[0][0] == "annotation_gt.type"


@pytest.mark.parametrize("declared", [" bbox", "bbox\t", "\n bbox  "])
def test_annotation_type_with_surrounding_white_space_is_that_type(declared):
    record = row('{"answer": 7, "annotation": [0, 0, 10, 10]}')
    record["annotation_gt"]["type"] = declared
    _, (out,) = _read([record])
    assert out.mode == "answer_and_annotation" and not out.warnings
    assert out.annotation_gt["type"] == declared  # kept as given; the scorer compares it stripped


def test_unusable_image_size_is_a_warning():
    _, (out,) = _read([row("x", image_size=[0, 10])])
    assert out.image_size is None
    assert out.warnings[0][0] == "image_size"


def test_response_from_chat_messages():
    assert (
        as_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "response") == "a"
    )
    assert (
        as_text(
            [
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}],
                }
            ],
            "completion",
        )
        == "xy"
    )
    assert as_text({"content": "hello"}, "response") == "hello"
    with pytest.raises(RowProblem, match="array of 2 items"):
        as_text(["a", "b"], "response")


# --------------------------------------------------------------------------- layouts


def test_detects_canonical_and_reports_found_roles():
    layout = detect_layout([row("x", id="a", step=1, image="a.png")], path="/x/rollouts.jsonl")
    assert layout.name == "canonical"
    assert layout.found["response"] == "response"
    assert layout.found["image"] == "image"
    assert "response" in layout.describe()


def test_detects_verl_dump_with_step_from_name_and_logged_rewards():
    truth = row(None)
    record = {
        "input": "user: count",
        "output": '{"answer": 7, "annotation": [0, 0, 10, 10]}',
        "gts": json.dumps({k: truth[k] for k in ("answer_gt", "annotation_gt", "reward_contract")}),
        "score": 1.0,
        "acc": 1.0,
        "format": 1.0,
        "annotation_reward": 1.0,
    }
    layout, (out,) = _read([record], path="/dumps/300.jsonl")
    assert layout.name == "verl"
    assert out.step == 300 and out.prompt == "user: count"
    assert dict(layout.logged) == {
        "score": "overall",
        "acc": "accuracy",
        "format": "format",
        "annotation_reward": "annotation_reward",
    }
    assert out.logged == {"overall": 1.0, "accuracy": 1.0, "format": 1.0, "annotation_reward": 1.0}


def test_detects_trl_completions_and_their_reward_columns():
    record = {
        "step": 50,
        "prompt": "p",
        "completion": "c",
        "reward_trace": 0.5,
        "reward_format": 1.0,
        "advantage": 0.1,
    }
    layout = detect_layout([record], path="/x/completions_50.parquet", joined=True)
    assert layout.name == "trl"
    assert dict(layout.logged) == {"reward_trace": "overall", "reward_format": "format"}


def test_detects_lm_eval_samples_and_expands_repeats():
    truth = row(None)
    record = {
        "doc_id": 4,
        "doc": {**truth, "question": "q"},
        "target": "7",
        "arguments": [["the prompt", {"max_new_tokens": 10}]],
        "resps": [["r1"], ["r2"]],
        "filtered_resps": ["r1", "r2"],
        "trace_overall": 1.0,
    }
    layout, rows = _read([record], path="/x/samples_mytask_2026-01-01T10-00-00.jsonl")
    assert layout.name == "lm_eval"
    assert layout.task_from_name == "mytask"
    assert [(r.response, r.sample_index, r.row_id) for r in rows] == [("r1", 0, "4"), ("r2", 1, "4")]
    assert rows[0].prompt == "the prompt"
    assert rows[0].answer_gt == truth["answer_gt"]
    assert dict(layout.logged) == {"trace_overall": "overall"}


def test_lm_eval_loglikelihood_responses_are_refused():
    record = {"doc_id": 1, "doc": row(None), "resps": [[[-1.5, False]]], "filtered_resps": [[-1.5, False]]}
    layout = detect_layout([record])
    with pytest.raises(RowProblem, match="loglikelihood"):
        RowReader(layout, base_dir="/", run=None).read(record, 0)


@pytest.mark.parametrize(
    ("records", "kwargs", "message"),
    [
        (
            [{"answer_gt": {"type": "integer", "value": 1}, "reward_contract": contract(None)}],
            {},
            "looks like an instances file",
        ),
        ([{"text": "hi", "label": 1}], {}, "no response column (looked for response, output, completion"),
        ([{"response": "x"}], {}, "no plain gold answer"),  # nothing to score the rows against
        ([{"response": "x"}], {"simple": True}, "no gold answer column"),
        (
            [{"response": "x", "answer_gt": {}, "reward_contract": {}}],
            {"mapping": ColumnMapping.of(response="completion")},
            "column 'completion' (mapped to role 'response')",
        ),
        ([], {}, "no readable rows"),
    ],
)
def test_files_that_are_not_rollouts_say_why_in_one_line(records, kwargs, message):
    with pytest.raises(LayoutError) as info:
        detect_layout(records, **kwargs)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_step_from_file_names():
    assert step_from_name("runs/100.jsonl") == 100
    assert step_from_name("completions_250.parquet") == 250
    assert step_from_name("rollouts_global_step_40.jsonl.gz") == 40
    assert step_from_name("rollouts.jsonl") is None


def test_logged_component_names():
    assert logged_component("rewards/accuracy_reward") == "accuracy"
    assert logged_component("trace_format") == "format"
    assert logged_component("trace_reward") is None  # the constant marker of the flat dict
    assert logged_component("exact_match", simple=True) == "score"


# --------------------------------------------------------------------------- the mapping


def test_mapping_overrides_roles_and_round_trips():
    record = {
        "completion_text": '{"answer": 7}',
        "truth": json.dumps({"type": "integer", "value": 7}),
        "meta": {"contract": contract(None)},
        "my_reward": 0.5,
    }
    mapping = ColumnMapping.of(
        response="completion_text",
        answer_gt="truth",
        reward_contract="meta.contract",
        logged={"my_reward": "overall"},
    )
    layout, (out,) = _read([record], mapping=mapping)
    assert layout.found["response"] == "completion_text"
    assert out.response == '{"answer": 7}' and out.reward_contract == contract(None)
    assert out.logged == {"overall": 0.5}
    again = ColumnMapping.from_json(mapping.to_json())
    assert again == mapping
    assert ColumnMapping.from_dict({"response": "x"}).roles == {"response": "x"}
    assert ColumnMapping.shape_key(["b", "a"]) == ColumnMapping.shape_key(["a", "b", "a"])


def test_mapping_from_pairs_and_its_errors():
    mapping = ColumnMapping.from_pairs(["response=out", "gold = label"], ["r=overall"], layout="canonical")
    assert mapping.roles == {"response": "out", "gold": "label"} and mapping.logged == {"r": "overall"}
    merged = ColumnMapping.of(response="a", prompt="p").merged(ColumnMapping.of(response="b"))
    assert merged.roles == {"response": "b", "prompt": "p"}
    with pytest.raises(ValueError, match="unknown role"):
        ColumnMapping.of(answer="x")
    with pytest.raises(ValueError, match="expected ROLE=COLUMN"):
        ColumnMapping.from_pairs(["response"])
    with pytest.raises(ValueError, match="unknown component"):
        ColumnMapping.of(logged={"x": "nonsense"})
    with pytest.raises(ValueError, match="unknown layout"):
        ColumnMapping(layout="openai")


def test_simple_rows_read_gold_from_meta_or_columns():
    _, (a,) = _read([{"output": "72", "meta": {"gold": "#### 72"}}], simple=True)
    assert a.gold == "#### 72" and a.kind == "simple"
    _, (b,) = _read([{"completion": "x", "target": 5}], simple=True)
    assert b.meta == {"gold": 5}
    _, (c,) = _read(
        [{"response": "x", "label": "y"}],
        simple=True,
        mapping=ColumnMapping.of(gold="label"),
        gold_key="answer",
    )
    assert c.meta == {"answer": "y"}


# --------------------------------------------------------------------------- instances


def test_instances_join_by_id_prompt_and_order(tmp_path):
    truth = row(None, image="img/a.png")
    instances = tmp_path / "inst" / "train_instances.jsonl"
    instances.parent.mkdir()
    items = [{**truth, "id": f"i{k}", "prompt": f"Question number {k}?"} for k in range(3)]
    instances.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    index = InstanceIndex([instances])
    layout = detect_layout([{"response": "x", "id": "i1"}], joined=True)
    reader = RowReader(layout, base_dir="/responses", run=None, instances=index)
    (by_id,) = reader.read({"response": "x", "id": "i1"}, 0)
    assert by_id.joined == "id" and by_id.instance_id == "i1" and by_id.answer_gt == truth["answer_gt"]
    assert by_id.image == "img/a.png" and by_id.image_bases[0] == str(instances.parent.resolve())
    (by_prompt,) = reader.read({"response": "x", "prompt": "<chat>Question   number 2?</chat>"}, 0)
    assert by_prompt.joined == "prompt" and by_prompt.instance_id == "i2"
    with pytest.raises(RowProblem, match="no instance matches"):
        reader.read({"response": "x", "prompt": "unrelated"}, 0)
    ordered = RowReader(layout, base_dir="/r", run=None, instances=InstanceIndex([instances], join="order"))
    assert ordered.read({"response": "x"}, 2)[0].instance_id == "i2"
    with pytest.raises(RowProblem, match="instances file has 3 rows"):
        ordered.read({"response": "x"}, 5)
    with pytest.raises(ValueError, match="unknown join"):
        InstanceIndex([instances], join="fuzzy")


def test_text_in_deeply_nested_one_item_lists_is_found_without_recursion():
    """as_text unwraps one-item lists in a loop: compiled, this layer has no recursion limit to
    raise RecursionError, so a recursive unwrap of a deep value would overflow the C stack."""
    value = "the text"
    for _ in range(200_000):
        value = [value]
    assert as_text(value, "response") == "the text"
    assert as_text([[{"role": "assistant", "content": "hi"}]], "response") == "hi"
