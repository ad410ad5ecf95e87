"""The direct reader (RowReader._read_direct) gives what the general reader gives.

The batch path reads the common record -- every field present has the plain type the
spec names -- without the general reader's search (scoring/rollouts/mapping.py); anything
else it hands to the general reader. These tests hold the two side by side on records
mutated field by field, and on whole files.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rollout_fixtures import contract, diverse_rows, row, write_jsonl

from scoring.rollouts import ColumnMapping, detect_layout
from scoring.rollouts.errors import RowProblem
from scoring.rollouts.rows import _ABSENT, Row, RowReader, _direct_getters
from scoring.runs import score_files

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"
ABSENT = object()

#: Per field, values a record may carry there: plain ones the direct reader takes, and others
#: (other types, JSON strings, aliases, out-of-range numbers) it must hand to the general reader.
FIELD_VALUES: dict[str, list] = {
    "response": ['{"answer": 7, "annotation": [0, 0, 10, 10]}', "", None, 5, ["a", "b"], {"content": "x"}],
    "output": ['{"answer": 7}', None],
    "prompt": ["Count the blocks.", None, 3, [{"role": "user", "content": "q"}], {"text": "t"}],
    "id": ["r1", 7, 7.0, 7.5, None, {"a": 1}, True],
    "instance_id": ["inst-1", 12, None],
    "task_id": ["counting", 3, None, ["x"]],
    "step": [0, 40, -3, "40", 2.0, 2.5, True, None, "late", 2**63 - 1, 2**63, -(2**63) - 1, 1e300, "1e30"],
    "run": ["ckpt-A", 2, None],
    "sample_index": [0, 3, "1", 1.5, None, False, 2**64],
    "answer_gt": [
        {"type": "integer", "value": 7},
        {"type": "integer"},
        '{"type": "integer", "value": 7}',
        None,
        5,
    ],
    "reward_contract": [
        contract("bbox"),
        contract(None),
        '{"answer": {"id": "answer_exact_match_v0", "type": "integer"}}',
        {"answer": {"id": "answer_exact_match_v0", "type": "integer"}, "annotation": "bbox"},
        None,
        7,
    ],
    "annotation_gt": [
        {"type": "bbox", "value": [0, 0, 10, 10]},
        {"type": "bbox"},
        {"type": "polygon", "value": [1, 2]},
        {"value": [1, 2, 3, 4]},
        '{"type": "bbox", "value": [0, 0, 10, 10]}',
        None,
        3,
    ],
    "trace_output_mode": ["answer", "answer_only", "answer_and_annotation", " ANSWER ", "bogus", 3, None],
    "image": ["img.png", {"path": "img.png"}, None],
    "image_size": [
        [640, 480],
        [640.5, 480],
        [0, 480],
        [-1, 2],
        [math.inf, 480],
        [math.nan, 480],
        [10**400, 480],
        [2**1024 - 1, 480],  # below 2**1024, still too large for a float
        [True, 480],
        [640],
        "640x480",
        {"width": 640, "height": 480},
        None,
    ],
    "point_half_life_px": [12, 2.5, 0, -1, "3", True, math.inf, math.nan, 10**400, 2**1024 - 1, None],
    "metadata": [{"image_size": [100, 50]}, {"width": 100, "height": 50}, None],
    "score": [0.5, "0.25", None, [1.0]],
}


def _readers(layout) -> tuple[RowReader, RowReader]:
    """(the batch path's reader, one that always takes the general path)."""
    kwargs = dict(base_dir="/data", run="run-label")
    direct = RowReader(layout, **kwargs)
    general = RowReader(layout, **kwargs)
    general._direct_plan = lambda shape: ()  # the general path only
    return direct, general


def _outcome(reader: RowReader, record: dict):
    try:
        rows = reader.read(record, 0)
    except RowProblem as problem:
        return ("problem", problem.field, problem.reason, problem.severity)
    return [tuple(_normalised(getattr(r, slot, ABSENT)) for slot in Row.__slots__) for r in rows]


def _normalised(value):
    """NaN equals NaN here (two reads of one record)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, (list, tuple)):
        return type(value)(_normalised(v) for v in value)
    return value


CANONICAL_LAYOUT = detect_layout([row('{"answer": 7}', id="a", step=1, task_id="t", score=0.5)])


@given(
    mutations=st.dictionaries(
        st.sampled_from(sorted(FIELD_VALUES)),
        st.one_of(st.just(ABSENT), st.integers(min_value=0, max_value=99)),
        max_size=6,
    )
)
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_direct_and_general_readers_agree_on_mutated_records(mutations):
    record = row('{"answer": 7, "annotation": [0, 0, 10, 10]}', id="r0", task_id="t", step=10, score=0.5)
    for field, choice in mutations.items():
        if choice is ABSENT:
            record.pop(field, None)
        else:
            options = FIELD_VALUES[field]
            record[field] = options[choice % len(options)]
    direct, general = _readers(CANONICAL_LAYOUT)
    assert _outcome(direct, record) == _outcome(general, record)


def test_the_direct_path_is_taken_for_plain_records():
    """Not vacuous: the common record goes through the direct path, the others do not."""
    direct, _ = _readers(CANONICAL_LAYOUT)
    plain = row('{"answer": 7}', id="r0", task_id="t", step=10, score=0.5, image_size=[64, 48])
    keys = direct._direct_plan(tuple(plain))
    assert keys and direct._read_direct(plain, keys) is not None
    for field, value in [
        ("step", "10"),
        ("image_size", "64x48"),
        ("answer_gt", '{"type": "integer", "value": 7}'),
    ]:
        odd = dict(plain, **{field: value})
        assert direct._read_direct(odd, direct._direct_plan(tuple(odd))) is None, field
    # two candidate keys for one role (response and output): the general reader decides
    both = dict(plain, output="x")
    assert direct._direct_plan(tuple(both)) == ()


def test_explicit_mapping_and_nested_ground_truth():
    mapped = {"completion_text": '{"answer": 7}', "gt": {"type": "integer", "value": 7}, "rc": contract(None)}
    layout = detect_layout(
        [mapped],
        mapping=ColumnMapping(
            roles={"response": "completion_text", "answer_gt": "gt", "reward_contract": "rc"}
        ),
    )
    direct, general = _readers(layout)
    assert direct._direct_plan(tuple(mapped))
    assert _outcome(direct, mapped) == _outcome(general, mapped)
    nested = {
        "response": '{"answer": 7}',
        "extra_info": {"answer_gt": {"type": "integer", "value": 7}, "reward_contract": contract(None)},
    }
    direct, general = _readers(detect_layout([nested]))
    assert direct._direct_plan(tuple(nested)) == ()  # ground truth may sit in a container
    assert _outcome(direct, nested) == _outcome(general, nested)


def _general_only(monkeypatch):
    monkeypatch.setattr(RowReader, "_direct_plan", lambda self, shape: ())


@pytest.mark.parametrize(
    "files",
    [
        ["rollouts_ckpt-A.jsonl", "rollouts_ckpt-B.jsonl"],
        ["rollouts_with_errors.jsonl"],
        ["rollouts_small.csv"],
    ],
)
def test_tables_are_identical_with_and_without_the_direct_path(files, monkeypatch):
    paths = [SAMPLE_DATA / name for name in files]
    fast = score_files(paths, workers=1)
    _general_only(monkeypatch)
    slow = score_files(paths, workers=1)
    pd.testing.assert_frame_equal(fast.table, slow.table)
    pd.testing.assert_frame_equal(fast.errors, slow.errors)


def test_diverse_rows_identical_with_and_without_the_direct_path(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "rows.jsonl", diverse_rows())
    fast = score_files(path, workers=1)
    _general_only(monkeypatch)
    slow = score_files(path, workers=1)
    pd.testing.assert_frame_equal(fast.table, slow.table)
    pd.testing.assert_frame_equal(fast.errors, slow.errors)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(
        st.one_of(st.none(), st.sampled_from(["id", "response", "step", "a.b", "x"])), min_size=2, max_size=15
    ).filter(lambda keys: any(key is not None for key in keys)),
    values=st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=3)), min_size=5, max_size=5),
)
def test_direct_getters_give_each_keys_value_in_order(keys, values):
    """The two itemgetters give what a ``get`` per key gives (None for an absent role), with one
    present key, repeated keys, and values that are themselves None."""
    record = dict(zip(["id", "response", "step", "a.b", "x"], values, strict=True))
    record = {key: value for key, value in record.items() if key in keys}
    take, arrange = _direct_getters(keys)
    assert arrange(take(record) + _ABSENT) == tuple(None if key is None else record[key] for key in keys)


def test_the_compiled_row_declares_exactly_the_rows_fields():
    """rows.pxd makes Row an extension type when compiled: its fields must be Row.__slots__,
    or the compiled and interpreted readers would differ in what a row can hold."""
    import re

    from scoring.rollouts import rows as layouts

    declarations = Path(layouts.__file__).with_name("rows.pxd").read_text()
    (body,) = re.findall(r"^cdef class Row:\n((?:    .*\n|\s*\n)+)", declarations, flags=re.MULTILINE)
    fields = [
        name.strip()
        for line in body.splitlines()
        if line.strip().startswith("cdef public object")
        for name in line.strip().removeprefix("cdef public object").split(",")
    ]
    assert fields == list(Row.__slots__)
    row = Row()
    assert row.warnings == [] and row.joined is None
    with pytest.raises(AttributeError):
        row.not_a_field = 1
