"""Hostile records through the whole batch path: no exception escapes, no row goes missing.

For each layout (canonical, verl, lm-eval, a simple scorer), records of that layout have up
to four fields replaced by arbitrary JSON: lone surrogates, NUL, huge integers, NaN, nesting.
Every record must come back as table rows or as an error naming its line, never both; the
good rows beside them score as they would alone; the table and the errors table can be
written to Parquet (valid UTF-8 everywhere). Run with ``max_examples=3000`` when the readers
change: that found a lone surrogate in an error message and a step beyond 64 bits, each of
which used to sink the whole run.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rollout_fixtures import row

from scoring.runs import score_files, score_records

# Text with the characters that break encoders: lone surrogates, NUL, newlines, non-BMP.
hostile_text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.sampled_from(["\x00", "\n", "\\", '"', "{", "}", "é", "🙂", "a", "7"]),
    ),
    max_size=12,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(hostile_text, st.sampled_from(["type", "value"])), inner, max_size=4),
    ),
    max_leaves=12,
)
TRUTH = row(None)
GTS = {key: TRUTH[key] for key in ("answer_gt", "annotation_gt", "reward_contract")}

#: (file name, options, a good record of that layout, fields to corrupt besides its own)
LAYOUTS = {
    "canonical": (
        "rows.jsonl",
        {},
        row('{"answer": 7, "annotation": [0, 0, 10, 10]}', id="good", task_id="t", step=1, score=1.0),
        ["prompt", "instance_id", "run", "sample_index", "trace_output_mode", "image", "image_size",
         "point_half_life_px", "metadata", "extra_info", "reward_input", "images"],
    ),
    "verl": (
        "300.jsonl",
        {},
        {"input": "user: count", "output": '{"answer": 7, "annotation": [0, 0, 10, 10]}', "gts": GTS,
         "score": 1.0, "acc": 1.0},
        ["reward_extra_info", "step", "data_source", "extra_info"],
    ),
    "lm_eval": (
        "samples_counting_2026-01-01T10-00-00.jsonl",
        {},
        {"doc_id": 4, "doc": {**TRUTH, "question": "q"}, "arguments": [["the prompt", {}]],
         "resps": [['{"answer": 7}'], ["r2"]], "filtered_resps": ['{"answer": 7}', "r2"], "trace_overall": 1.0},
        ["target"],
    ),
    "simple": (
        "gsm.jsonl",
        {"scorer": "last_number"},
        {"id": "a", "output": "so it is 72.", "gold": "#### 72", "reward": 1.0},
        ["meta", "response"],
    ),
}  # fmt: skip


@st.composite
def hostile_batches(draw) -> tuple[str, list[dict], list[dict]]:
    """(layout, good records, good and corrupted records in a random order)."""
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    _, _, base, extra_fields = LAYOUTS[layout]
    fields = sorted(base) + extra_fields
    records = []
    for _ in range(draw(st.integers(1, 5))):
        record = json.loads(json.dumps(base))
        for field in draw(st.lists(st.sampled_from(fields), max_size=4, unique=True)):
            record[field] = draw(json_values)
        records.append(record)
    good = [json.loads(json.dumps(base)) for _ in range(2)]
    return layout, good, good + records


def _accounted(run, count: int, numbered_from_one: bool = True) -> None:
    """Each record is a table row or has an error on its line, never both; the errors come in
    line order. Lines count from 1,
    except in a CSV file: there they are physical lines, after the header and any line break
    inside a quoted field."""
    lines = run.errors["line"].dropna().astype(int).tolist()
    assert lines == sorted(lines)  # errors and warnings come in line order
    errors = run.errors[(run.errors["severity"] == "error") & run.errors["line"].notna()]
    scored_lines = set(run.table["source_line"].astype(int))
    failed_lines = set(errors["line"].astype(int))
    assert not scored_lines & failed_lines
    if numbered_from_one:
        assert scored_lines | failed_lines == set(range(1, count + 1))
    else:
        assert len(scored_lines | failed_lines) == count and min(scored_lines | failed_lines) >= 2


@given(hostile_batches())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_hostile_records_never_sink_the_run(tmp_path_factory, batch):
    layout, good, records = batch
    name, options, _, _ = LAYOUTS[layout]
    folder = tmp_path_factory.mktemp("hostile")
    path = folder / name
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="ascii")
    run = score_files(path, workers=1, **options)
    _accounted(run, len(records))
    alone = score_files(_written(folder / ("good_" + name), good), workers=1, **options).table
    score_column = "score"
    assert run.table[score_column].iloc[: len(alone)].tolist() == alone[score_column].tolist()
    run.table.to_parquet(folder / "table.parquet")
    run.errors.to_parquet(folder / "errors.parquet")
    for error in run.errors.itertuples():
        assert error.reason and error.file == str(path)

    in_memory = score_records(records, **options)
    _accounted(in_memory, len(records))


def _written(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="ascii")
    return path


def test_steps_and_indices_beyond_64_bits_are_row_errors(tmp_path):
    """The table stores them as 64-bit integers: a larger one is an error naming the line and
    field (it used to overflow the whole chunk); a file name's step that large is ignored."""
    good = LAYOUTS["canonical"][2]
    records = [good, {**good, "step": 2**63}, {**good, "sample_index": -(2**63) - 1}, {**good, "step": 1e300}]
    run = score_files(_written(tmp_path / "rows.jsonl", records), workers=1)
    assert run.table["source_line"].tolist() == [1]
    errors = run.errors
    assert list(zip(errors["line"], errors["field"], strict=True)) == [(2, "step"), (3, "sample_index"), (4, "step")]
    assert all("within 64 bits" in reason for reason in errors["reason"])

    unstepped = {key: value for key, value in good.items() if key != "step"}
    named = score_files(_written(tmp_path / f"rollouts_step_{10**30}.jsonl", [unstepped]), workers=1)
    assert named.errors.empty and named.table["step"].isna().all()


def _as_column_text(value):
    """What a Parquet or CSV writer keeps of a nested or mixed-type value: its JSON text (both
    formats are UTF-8, so a lone surrogate can only arrive escaped)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return json.dumps(value)


@given(hostile_batches(), st.sampled_from(["csv", "parquet", "json"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_hostile_records_in_other_containers_never_sink_the_run(tmp_path_factory, batch, container):
    """The same, from a CSV, a Parquet file or a JSON array (line = row or item number)."""
    import pandas as pd

    layout, _, records = batch
    name, options, _, _ = LAYOUTS[layout]
    folder = tmp_path_factory.mktemp("containers")
    path = folder / name.replace(".jsonl", f".{container}")
    if container == "json":
        path.write_text(json.dumps(records), encoding="ascii")
    else:
        frame = pd.DataFrame([{k: _as_column_text(v) for k, v in record.items()} for record in records])
        frame = frame.astype(object).where(frame.notna(), None)
        if container == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path)
    run = score_files(path, workers=1, **options)
    _accounted(run, len(records), numbered_from_one=container != "csv")
    run.table.to_parquet(folder / "table.parquet")
    run.errors.to_parquet(folder / "errors.parquet")
