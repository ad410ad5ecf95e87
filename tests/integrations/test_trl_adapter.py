"""``scoring.integrations.trl``'s reward functions, called exactly as GRPOTrainer calls them, give
what ``rolloutscope score`` gives for the same completions joined to their instances, to the bit."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from sample_runs import GSM8K, TRL_INSTANCES, TRL_TABLES, cli_table, gsm8k_rows, read_jsonl, same

import scoring.integrations.training_rows as training_rows
from scoring.integrations.trl import (
    FORMAT_REASON_COLUMN,
    TraceRewards,
    annotation_reward,
    answer_reward,
    format_reward,
    trace_reward,
)
from scoring.rollouts import logged_component

COMPLETIONS = pd.concat([pd.read_parquet(path) for path in TRL_TABLES], ignore_index=True)
INSTANCE_BY_ID = {row["instance_id"]: row for row in read_jsonl(TRL_INSTANCES)}
#: Each function and the scored table's column it equals.
FUNCTIONS = {
    trace_reward: "overall",
    answer_reward: "answer_reward",
    annotation_reward: "annotation_reward",
    format_reward: "format",
}
GROUND_TRUTH = ("answer_gt", "annotation_gt", "reward_contract", "trace_output_mode")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    out = tmp_path_factory.mktemp("trl")
    tables = [str(p) for p in TRL_TABLES]
    joined = ("--instances", str(TRL_INSTANCES))
    return {
        "default": cli_table(out, "default", *tables, *joined),
        "options": cli_table(
            out, "options", *tables, *joined, "--answer-weight", "0.3", "--annotation-weight", "0.6",
            "--format-weight", "0.2", "--mode", "answer",
        ),
    }  # fmt: skip


@pytest.fixture(scope="module")
def dataset_columns(tables):
    """The training set's columns for each completion: its instance's fields, but ``prompt`` (TRL
    passes the prompt as ``prompts=``, and every other column under its own name)."""
    instances = [INSTANCE_BY_ID[i] for i in tables["default"]["instance_id"]]
    names = sorted({key for instance in instances for key in instance} - {"prompt"})
    return {name: [instance.get(name) for instance in instances] for name in names}


def call(function, completions, columns, **trainer_kwargs):
    """As GRPOTrainer._calculate_rewards calls a reward function (and as a newer trainer might, with
    a keyword argument of its own that is no dataset column)."""
    return function(
        prompts=list(COMPLETIONS["prompt"]),
        completions=completions,
        completion_ids=[[1, 2, 3]] * len(completions),
        trainer_state=object(),
        **columns,
        **{"some_newer_trainer_argument": object(), **trainer_kwargs},
    )


def conversational(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def test_each_function_equals_the_cli_on_the_sample_completions(tables, dataset_columns):
    table = tables["default"]
    assert len(table) == len(COMPLETIONS) == 160
    rewards = TraceRewards(image_root=str(TRL_INSTANCES.parent))  # instance image paths are relative to trl/
    standard = list(COMPLETIONS["completion"])
    chat = [conversational(text) for text in standard]
    for function, column in FUNCTIONS.items():
        bound = getattr(rewards, function.__name__)
        for completions in (standard, chat):
            got = call(bound, completions, dataset_columns)
            assert len(got) == len(table)
            for n, (value, expected) in enumerate(zip(got, table[column], strict=True)):
                assert same(value, float(expected)), (function.__name__, n, value, expected)


def test_two_instances_without_a_size_are_sized_from_their_image_as_the_cli_sizes_them(dataset_columns):
    """Without ``image_root`` the relative image paths are not found: only those two rows change."""
    sizeless = [i for i, size in enumerate(dataset_columns["image_size"]) if size is None]
    assert sizeless
    sized = call(
        TraceRewards(image_root=str(TRL_INSTANCES.parent)).trace_reward,
        list(COMPLETIONS["completion"]),
        dataset_columns,
    )
    unsized = call(trace_reward, list(COMPLETIONS["completion"]), dataset_columns)
    changed = {i for i, (a, b) in enumerate(zip(sized, unsized, strict=True)) if a != b}
    assert changed and changed <= set(sizeless)


def test_options_score_as_the_same_cli_options(tables, dataset_columns):
    rewards = TraceRewards(
        answer_weight=0.3, annotation_weight=0.6, format_weight=0.2, trace_reward_mode="answer",
        image_root=str(TRL_INSTANCES.parent),
    )  # fmt: skip
    got = call(rewards.trace_reward, list(COMPLETIONS["completion"]), dataset_columns)
    expected = tables["options"]["overall"]
    assert all(same(a, float(b)) for a, b in zip(got, expected, strict=True))
    assert got != call(
        TraceRewards(image_root=str(TRL_INSTANCES.parent)).trace_reward,
        list(COMPLETIONS["completion"]),
        dataset_columns,
    )


def test_log_extra_receives_each_completions_format_reason_once(tables, dataset_columns):
    logged: list[tuple[str, list]] = []
    metrics: list = []

    def log_extra(column, values):
        logged.append((column, values))

    rewards = TraceRewards(image_root=str(TRL_INSTANCES.parent))
    completions = list(COMPLETIONS["completion"])
    call(rewards.trace_reward, completions, dataset_columns, log_extra=log_extra, log_metric=metrics.append)
    assert logged == [(FORMAT_REASON_COLUMN, list(tables["default"]["format_reason"].astype(str)))]
    assert {reason for _, values in logged for reason in values} >= {"ok", "text_after_object"}
    for function in (rewards.answer_reward, rewards.annotation_reward, rewards.format_reward):
        call(function, completions, dataset_columns, log_extra=log_extra)
    assert len(logged) == 1 and not metrics


def test_function_names_read_back_as_their_components():
    """TRL names each completions-table column after its reward function: the dashboard reads the
    names back as the components they hold."""
    for function, column in FUNCTIONS.items():
        assert logged_component(function.__name__, layout="trl") == column, function.__name__


def test_the_functions_of_one_step_share_each_completions_evaluation(monkeypatch, dataset_columns):
    calls = []
    evaluate = training_rows.explain_trace_response
    monkeypatch.setattr(
        training_rows, "explain_trace_response", lambda **kw: calls.append(1) or evaluate(**kw)
    )
    rewards = TraceRewards()
    completions = list(COMPLETIONS["completion"])
    for function in (
        rewards.trace_reward,
        rewards.answer_reward,
        rewards.annotation_reward,
        rewards.format_reward,
    ):
        call(function, completions, dataset_columns)
    assert len(calls) == len(completions)


def test_a_batch_changed_in_place_is_scored_again(dataset_columns):
    rewards = TraceRewards()
    completions = list(COMPLETIONS["completion"][:6])
    columns = columns_at(dataset_columns, range(6))
    first = rewards.trace_reward(completions=completions, **columns)
    completions[2] = COMPLETIONS["completion"][40]  # the same list objects, one item replaced
    columns["answer_gt"][3] = {**columns["answer_gt"][3], "value": "not the answer"}
    again = rewards.trace_reward(completions=completions, **columns)
    assert again == TraceRewards().trace_reward(completions=completions, **columns)
    assert again[2] != first[2] or again[3] != first[3]


def test_plain_answers_score_by_the_chosen_simple_scorer_and_are_none_without_one(tmp_path):
    rows = gsm8k_rows()
    table = cli_table(tmp_path, "gsm8k", str(GSM8K), "--scorer", "last_number")
    columns = {"gold": [r["gold"] for r in rows], "task_id": [r["task_id"] for r in rows]}
    completions = [r["output"] for r in rows]
    scored = TraceRewards(scorer="last_number")
    got = scored.trace_reward(prompts=[r["prompt"] for r in rows], completions=completions, **columns)
    assert got == [float(s) for s in table["score"]] and set(got) == {0.0, 1.0}
    assert scored.answer_reward(completions=completions, **columns) == got
    assert scored.format_reward(completions=completions, **columns) == [None] * len(rows)
    assert scored.annotation_reward(completions=completions, **columns) == [None] * len(rows)
    assert trace_reward(completions=completions, **columns) == [None] * len(rows)  # no scorer: another's row
    by_source = TraceRewards(scorers={"gsm8k": "last_number"})
    mixed = by_source.trace_reward(
        completions=completions[:4], data_source=["gsm8k", "other"] * 2, gold=columns["gold"][:4]
    )
    assert mixed == [got[0], None, got[2], None]


# --------------------------------------------------------------------------- properties

indices = st.lists(st.integers(0, len(COMPLETIONS) - 1), min_size=1, max_size=10)


def columns_at(dataset_columns: dict, rows: list[int]) -> dict:
    return {name: [values[i] for i in rows] for name, values in dataset_columns.items()}


@settings(max_examples=40)
@given(rows=indices, shape=st.sampled_from(["message", "parts", "message_list"]))
def test_conversational_completions_score_as_standard_ones(dataset_columns, rows, shape):
    texts = [COMPLETIONS["completion"][i] for i in rows]
    if shape == "message":
        chats = [conversational(t) for t in texts]
    elif shape == "parts":  # multimodal content: a list of typed parts
        chats = [[{"role": "assistant", "content": [{"type": "text", "text": t}]}] for t in texts]
    else:  # the prompt's messages kept before the answer
        chats = [[{"role": "user", "content": "look"}, *conversational(t)] for t in texts]
    columns = columns_at(dataset_columns, rows)
    for function in FUNCTIONS:
        assert function(completions=chats, **columns) == function(completions=texts, **columns)


@settings(max_examples=40)
@given(rows=indices, blank=st.lists(st.booleans(), min_size=10, max_size=10))
def test_rows_without_ground_truth_are_none_and_leave_the_others_unchanged(dataset_columns, rows, blank):
    texts = [COMPLETIONS["completion"][i] for i in rows]
    columns = columns_at(dataset_columns, rows)
    full = trace_reward(completions=texts, **columns)
    for name in GROUND_TRUTH:
        columns[name] = [None if blank[k] else v for k, v in enumerate(columns[name])]
    got = trace_reward(completions=texts, **columns)
    assert got == [None if blank[k] else full[k] for k in range(len(rows))]
    for function in (answer_reward, annotation_reward, format_reward):
        assert [v is None for v in function(completions=texts, **columns)] == [
            blank[k] for k in range(len(rows))
        ]


@settings(max_examples=40)
@given(rows=indices, container=st.sampled_from(["gts", "ground_truth", "extra_info", "reward_model"]),
       as_text=st.booleans())  # fmt: skip
def test_ground_truth_inside_one_column_scores_as_separate_columns(dataset_columns, rows, container, as_text):
    texts = [COMPLETIONS["completion"][i] for i in rows]
    columns = columns_at(dataset_columns, rows)
    separate = trace_reward(completions=texts, **columns)
    inside = []
    for k in range(len(rows)):
        truth = {name: columns[name][k] for name in GROUND_TRUTH}
        inside.append(json.dumps(truth) if as_text else truth)
    for name in GROUND_TRUTH:
        del columns[name]
    columns[container] = inside
    assert trace_reward(completions=texts, **columns) == separate


@settings(max_examples=25)
@given(rows=indices, listed=st.booleans())
def test_a_decoded_image_sizes_its_row_as_an_image_size_column(dataset_columns, rows, listed):
    """TRL hands a vision dataset's images as decoded images (``image``, or ``images`` lists)."""
    texts = [COMPLETIONS["completion"][i] for i in rows]
    columns = columns_at(dataset_columns, rows)
    sizes = [size or [640, 480] for size in columns["image_size"]]
    expected = trace_reward(
        completions=texts, **{**columns, "image_size": sizes, "image": [None] * len(rows)}
    )
    images = [Image.new("RGB", (w, h)) for w, h in sizes]
    del columns["image_size"]
    columns.pop("image")
    if listed:
        columns["images"] = [[image] for image in images]
    else:
        columns["image"] = images
    assert trace_reward(completions=texts, **columns) == expected


# --------------------------------------------------------------------------- bad input


def test_a_column_that_is_not_one_value_per_completion_is_refused(dataset_columns):
    columns = columns_at(dataset_columns, [0, 1, 2])
    with pytest.raises(ValueError, match="column 'answer_gt' holds 2 values for 3 completions"):
        trace_reward(completions=["a", "b", "c"], **{**columns, "answer_gt": columns["answer_gt"][:2]})


def test_broken_ground_truth_is_an_error_naming_the_completion_and_field(dataset_columns):
    columns = columns_at(dataset_columns, [0, 1, 2])
    columns["reward_contract"] = [columns["reward_contract"][0], None, columns["reward_contract"][2]]
    with pytest.raises(ValueError, match="^completion 1, field 'reward_contract': missing$"):
        trace_reward(completions=["a", "b", "c"], **columns)
    columns = columns_at(dataset_columns, [0])
    columns["annotation_gt"] = ['{"type": "bbox", "value": [0, 0, 1']
    with pytest.raises(
        ValueError, match="^completion 0, field 'annotation_gt': is a string that is not valid JSON"
    ):
        trace_reward(completions=["a"], **columns)


def test_an_invalid_option_is_refused_when_the_functions_are_made():
    with pytest.raises(ValueError, match="unknown option\\(s\\) 'fromat_weight'"):
        TraceRewards(fromat_weight=0.1)
    with pytest.raises(ValueError, match="answer_weight \\+ annotation_weight must be > 0"):
        TraceRewards(answer_weight=0, annotation_weight=0)
