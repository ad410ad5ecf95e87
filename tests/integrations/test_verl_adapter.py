"""``scoring.integrations.verl.compute_score``, called exactly as verl's reward managers call it,
gives what ``rolloutscope score`` gives for the same rows of verl's dumps, to the last bit."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sample_runs import (
    INSTANCES,
    SAMPLE,
    VERL_COLUMNS,
    VERL_DUMPS,
    cli_table,
    gsm8k_rows,
    read_jsonl,
    same,
)

import scoring.integrations.verl as verl_adapter
from scoring import score_trace_response
from scoring.integrations.verl import RESULT_KEYS, compute_score
from scoring.verifier import MODE_ALIASES

VERL_ROWS = [row for path in VERL_DUMPS for row in read_jsonl(path)]
INSTANCE_BY_ID = {row["instance_id"]: row for row in read_jsonl(INSTANCES)}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The CLI's tables of the verl dumps: alone, joined to the instances (their images and sizes),
    and with run-wide options."""
    out = tmp_path_factory.mktemp("verl")
    dumps = [str(p) for p in VERL_DUMPS]
    return {
        "alone": cli_table(out, "alone", *dumps),
        "joined": cli_table(out, "joined", *dumps, "--instances", str(INSTANCES)),
        "options": cli_table(
            out, "options", *dumps, "--answer-weight", "0.7", "--annotation-weight", "0.2",
            "--format-weight", "0.1", "--formula", "additive", "--point-half-life-px", "12",
        ),
    }  # fmt: skip


def assert_row_equals_table(result: dict, table_row, where: str) -> None:
    assert set(result) == set(RESULT_KEYS), where
    for key, column in VERL_COLUMNS.items():
        assert same(result[key], float(table_row[column])), (where, key, result[key], table_row[column])


def test_each_dump_row_scores_as_the_cli_scores_it(tables):
    table = tables["alone"]
    assert len(table) == len(VERL_ROWS) == 90
    for n, (row, (_, expected)) in enumerate(zip(VERL_ROWS, table.iterrows(), strict=True)):
        result = compute_score(data_source="trace_vqa", solution_str=row["output"], ground_truth=row["gts"])
        assert_row_equals_table(result, expected, f"row {n}")


def test_image_and_size_in_extra_info_score_as_the_cli_with_instances_joined(tables):
    """The joined instances lend the CLI each row's image and size; verl's extra_info lends the
    adapter the same (a path without a size: read from the image's header, as the CLI reads it)."""
    joined, alone = tables["joined"], tables["alone"]
    # the sizes change point scores, so this compares something the size decides
    assert (joined["overall"].to_numpy() != alone["overall"].to_numpy()).sum() >= 10
    read_from_header = 0
    for n, (row, (_, expected)) in enumerate(zip(VERL_ROWS, joined.iterrows(), strict=True)):
        instance = INSTANCE_BY_ID[expected["instance_id"]]
        extra_info = {"split": "test", "index": n, "image": instance["image"]}
        if instance.get("image_size"):
            extra_info["image_size"] = instance["image_size"]
        else:
            read_from_header += 1
        result = compute_score(
            "trace_vqa", row["output"], json.dumps(row["gts"]), extra_info, image_root=str(SAMPLE)
        )
        assert_row_equals_table(result, expected, f"row {n}")
    assert read_from_header >= 4


def test_image_size_inside_ground_truth_keeps_the_dump_self_contained(tables):
    """A size stored in the ground truth is dumped with it (``gts``): the CLI then needs no instances."""
    joined = tables["joined"]
    for n, (row, (_, expected)) in enumerate(zip(VERL_ROWS, joined.iterrows(), strict=True)):
        size = [float(expected["image_width"]), float(expected["image_height"])]
        truth = {**row["gts"], "image_size": size}
        result = compute_score("trace_vqa", row["output"], truth, None)
        assert_row_equals_table(result, expected, f"row {n}")


def test_reward_kwargs_score_as_the_same_cli_options(tables):
    table = tables["options"]
    options = dict(
        answer_weight=0.7, annotation_weight=0.2, format_weight=0.1,
        trace_annotation_reward_formula="additive", point_half_life_px=12,
    )  # fmt: skip
    results = compute_score(
        data_sources=["trace_vqa"] * len(VERL_ROWS),
        solution_strs=[row["output"] for row in VERL_ROWS],
        ground_truths=[row["gts"] for row in VERL_ROWS],
        extra_infos=[None] * len(VERL_ROWS),
        **options,
    )
    assert len(results) == len(table)
    for n, (result, (_, expected)) in enumerate(zip(results, table.iterrows(), strict=True)):
        assert_row_equals_table(result, expected, f"row {n}")


def test_loaded_from_its_path_as_verl_loads_it():
    """verl imports ``custom_reward_function.path`` as a module of its own (``custom_module``) and
    merges ``reward_kwargs`` into each call; the reward loop adds two keywords of its own."""
    spec = importlib.util.spec_from_file_location("custom_module", verl_adapter.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw_fn = module.compute_score
    reward_kwargs = {"format_weight": 0.25}

    def wrapped_fn(*args, **kwargs):  # verl's _call_with_kwargs
        return raw_fn(*args, **{**kwargs, **reward_kwargs})

    for row in VERL_ROWS[:12]:
        got = wrapped_fn(
            data_source="trace_vqa", solution_str=row["output"], ground_truth=json.dumps(row["gts"]),
            extra_info={"index": 0}, reward_router_address=None, reward_model_tokenizer=None,
        )  # fmt: skip
        assert got == compute_score("trace_vqa", row["output"], row["gts"], format_weight=0.25)


def test_plain_answers_score_by_the_simple_scorer_chosen_for_their_data_source(tmp_path):
    """An unshuffled validation dump: GSM8K rows (a plain ``gts``) then trace rows; the CLI scores
    the plain rows with ``--scorer last_number``, the adapter with ``scorers`` by data source."""
    plain = gsm8k_rows()[:30]
    lines = [
        {"input": r["prompt"], "output": r["output"], "gts": r["gold"], "score": 0.0, "step": 7}
        for r in plain
    ]
    lines += [{**row, "step": 7} for row in VERL_ROWS[:20]]
    dump = tmp_path / "7.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    table = cli_table(tmp_path, "mixed", str(dump), "--scorer", "last_number")
    assert list(table["scorer"].astype(str)) == ["last_number"] * 30 + ["trace"] * 20
    sources = ["openai/gsm8k"] * 30 + ["trace_vqa"] * 20
    results = compute_score(
        data_sources=sources,
        solution_strs=[line["output"] for line in lines],
        ground_truths=[line["gts"] for line in lines],
        extra_infos=[{"index": i} for i in range(len(lines))],
        scorers={"openai/gsm8k": "last_number"},
    )
    for n, (result, (_, expected)) in enumerate(zip(results, table.iterrows(), strict=True)):
        if n < 30:
            assert result["score"] == result["acc"] == float(expected["score"]), n
            assert all(math.isnan(result[k]) for k in ("answer_reward", "annotation_reward", "format")), n
        else:
            assert_row_equals_table(result, expected, f"row {n}")
    assert {r["score"] for r in results[:30]} == {0.0, 1.0}
    # the ``scorer`` option applies to every data source; extra_info names one for its own row
    same_by_option = compute_score("openai/gsm8k", lines[0]["output"], lines[0]["gts"], scorer="last_number")
    same_by_row = compute_score("x", lines[0]["output"], lines[0]["gts"], {"scorer": "last_number"})
    for key in RESULT_KEYS:
        assert same(same_by_option[key], results[0][key]) and same(same_by_row[key], results[0][key]), key


# --------------------------------------------------------------------------- properties

row_indices = st.integers(0, len(VERL_ROWS) - 1)
weights = st.floats(0.0, 1.0, allow_nan=False)
modes = st.sampled_from([None, "answer", "answer_only", "answer_and_annotation"])
formulas = st.sampled_from(["gated", "additive"])


@settings(max_examples=60)
@given(index=row_indices, form=st.sampled_from(["json", "python_repr"]), format_weight=weights, mode=modes)
def test_ground_truth_as_json_or_python_text_scores_as_the_dict(index, form, format_weight, mode):
    row = VERL_ROWS[index]
    text = json.dumps(row["gts"]) if form == "json" else repr(row["gts"])
    options = {"format_weight": format_weight, "trace_reward_mode": mode}
    assert compute_score("v", row["output"], text, None, **options) == compute_score(
        "v", row["output"], row["gts"], None, **options
    )


@settings(max_examples=30)
@given(indices=st.lists(row_indices, max_size=12), format_weight=weights)
def test_batch_form_equals_the_per_row_form(indices, format_weight):
    rows = [VERL_ROWS[i] for i in indices]
    batch = compute_score(
        data_sources=["v"] * len(rows),
        solution_strs=[r["output"] for r in rows],
        ground_truths=[r["gts"] for r in rows],
        extra_infos=[{"index": i} for i in indices],
        format_weight=format_weight,
    )
    assert batch == [compute_score("v", r["output"], r["gts"], {"index": i}, format_weight=format_weight)
                     for i, r in zip(indices, rows, strict=True)]  # fmt: skip


@settings(max_examples=80)
@given(
    index=row_indices, answer_weight=weights, annotation_weight=weights, format_weight=weights,
    formula=formulas, mode=modes, half_life=st.none() | st.floats(0.5, 500.0),
)  # fmt: skip
def test_options_in_reward_kwargs_score_as_score_trace_response(
    index, answer_weight, annotation_weight, format_weight, formula, mode, half_life
):
    row = VERL_ROWS[index]
    truth = row["gts"]
    options = dict(
        answer_weight=answer_weight, annotation_weight=annotation_weight, format_weight=format_weight,
        trace_annotation_reward_formula=formula, point_half_life_px=half_life,
    )  # fmt: skip
    row_mode = MODE_ALIASES[truth["trace_output_mode"]]
    try:
        flat = score_trace_response(
            response=row["output"], answer_gt=truth["answer_gt"], annotation_gt=truth["annotation_gt"],
            reward_contract=truth["reward_contract"], trace_reward_mode=mode or row_mode, **options,
        )  # fmt: skip
    except ValueError:  # both weights 0: the options are refused either way
        with pytest.raises(ValueError):
            compute_score("v", row["output"], truth, trace_reward_mode=mode, **options)
        return
    result = compute_score("v", row["output"], truth, trace_reward_mode=mode, **options)
    for key, column in VERL_COLUMNS.items():
        assert same(result[key], flat[column]), key


# --------------------------------------------------------------------------- bad input

TRUTH = VERL_ROWS[0]["gts"]


@pytest.mark.parametrize(
    ("ground_truth", "field", "reason"),
    [
        (None, "ground_truth", "holds neither trace ground truth"),
        (
            "219",
            "ground_truth",
            "holds a plain answer ('219'), not trace ground truth; choose a simple scorer",
        ),
        ('{"answer_gt": ', "ground_truth", "is a string that is not valid JSON"),
        ({"answer_gt": TRUTH["answer_gt"]}, "reward_contract", "missing"),
        (
            {**TRUTH, "answer_gt": {"type": "number", "value": math.inf}},
            "ground_truth.answer_gt.value",
            "is not a finite number",
        ),
        ({**TRUTH, "trace_output_mode": "both"}, "trace_output_mode", "unknown output mode 'both'"),
    ],
)
def test_a_row_that_cannot_be_scored_is_an_error_naming_the_row_and_field(ground_truth, field, reason):
    with pytest.raises(ValueError, match=f"^the row \\(data_source 'v'\\), field '{field}': ") as caught:
        compute_score("v", "The answer is 219", ground_truth)
    assert reason in str(caught.value)


def test_a_batch_error_names_the_row_of_the_batch():
    with pytest.raises(
        ValueError, match=r"^row 2 of the batch \(data_source 'b'\), field 'ground_truth': holds neither"
    ):
        compute_score(
            data_sources=["a", "a", "b"],
            solution_strs=["1", "2", "3"],
            ground_truths=[TRUTH, json.dumps(TRUTH), None],
            extra_infos=[None, None, None],
        )
    with pytest.raises(ValueError, match="ground_truths holds 1 values for 2 solution_strs"):
        compute_score(data_sources=["a", "a"], solution_strs=["1", "2"], ground_truths=[TRUTH])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"answer_weigth": 0.7}, "unknown option(s) 'answer_weigth'; options are: answer_weight"),
        ({"format_weight": 2}, "format_weight must be in [0, 1]"),
        ({"scorer": "f1"}, "scorer: scorer must be 'trace' or one of exact_match"),
        ({"scorers": {"openai/gsm8k": "f1"}}, "scorers['openai/gsm8k']: scorer must be"),
        ({"trace_reward_mode": "both"}, "trace_reward_mode='both' is not one of"),
    ],
)
def test_an_invalid_option_is_refused_naming_it(options, message):
    with pytest.raises(ValueError) as caught:
        compute_score("v", "x", TRUTH, **options)
    assert message in str(caught.value)
