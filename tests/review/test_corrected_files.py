"""A ground-truth patch applied to whole files, in every container the readers take."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.review import patch_csv, patch_file, patch_json, patch_parquet
from scoring.rollouts.sources import Source

BEFORE = {"type": "bbox", "value": [0, 0, 10, 10]}
AFTER = {"type": "bbox", "value": [5, 5, 20, 25]}
OTHER = {"type": "bbox", "value": [1, 1, 2, 2]}
PATCH = [{"instance_id": "i-2", "field": "annotation_gt", "before": BEFORE, "after": AFTER}]


def records() -> list[dict]:
    return [
        {"id": "i-1", "prompt": "a, \"quoted\"\nprompt", "annotation_gt": OTHER},
        {"id": "i-2", "prompt": "b", "annotation_gt": BEFORE},
        {"id": "i-3", "prompt": "c", "annotation_gt": BEFORE},  # same ground truth, another instance
    ]


def read_back(name: str, data: bytes, tmp_path) -> list[tuple[int, dict]]:
    """The records as the rollout readers see them (number, record)."""
    path = tmp_path / name
    path.write_bytes(data)
    return [(number, record) for number, record in Source(path).records()]


def ground_truths(rows: list[tuple[int, dict]]) -> list:
    out = []
    for _, record in rows:
        value = record["annotation_gt"]
        out.append(json.loads(value) if isinstance(value, str) else value)
    return out


def as_jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def as_csv(rows, delimiter=",") -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    columns = list(rows[0])
    writer.writerow(columns)
    for r in rows:
        writer.writerow([json.dumps(r[c]) if c == "annotation_gt" else r[c] for c in columns])
    return buffer.getvalue().encode()


def as_parquet(rows, *, json_text: bool) -> bytes:
    table = pa.Table.from_pylist(
        [{**r, "annotation_gt": json.dumps(r["annotation_gt"]) if json_text else r["annotation_gt"]} for r in rows]
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


CONTAINERS = {
    "r.jsonl": as_jsonl,
    "r.json": lambda rows: json.dumps(rows).encode(),
    "r.csv": as_csv,
    "r.tsv": lambda rows: as_csv(rows, "\t"),
    "r.parquet": lambda rows: as_parquet(rows, json_text=False),
    "text.parquet": lambda rows: as_parquet(rows, json_text=True),
}


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_each_container_is_patched_at_the_corrected_instance_only(name, tmp_path):
    data = CONTAINERS[name](records())
    numbers = [number for number, _ in read_back(name, data, tmp_path)]
    patched, changed = patch_file(name, data, PATCH)
    rows = read_back("patched-" + name, patched, tmp_path)
    assert changed == [numbers[1]]  # by instance id: i-3 holds the same ground truth and stays
    assert ground_truths(rows) == [OTHER, AFTER, BEFORE]
    assert [record["prompt"] for _, record in rows] == [r["prompt"] for r in records()]
    assert [number for number, _ in rows] == numbers  # the readers number the records as before


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_rows_named_by_the_scored_table_are_patched_without_an_id(name, tmp_path):
    """Rows joined by prompt carry no instance id: the scored table's line numbers pick them."""
    bare = [{k: v for k, v in r.items() if k != "id"} for r in records()]
    data = CONTAINERS[name](bare)
    numbers = [number for number, _ in read_back(name, data, tmp_path)]
    patched, changed = patch_file(name, data, PATCH, only_rows=[numbers[2]])
    assert changed == [numbers[2]]
    assert ground_truths(read_back("patched-" + name, patched, tmp_path)) == [OTHER, BEFORE, AFTER]


def test_unchanged_csv_and_jsonl_rows_keep_their_bytes():
    data = as_csv(records()).decode()
    patched, changed = patch_csv(data, PATCH)
    assert changed == [4]  # header, then i-1 spans lines 2-3 (a quoted newline), i-2 starts on 4
    old, new = data.splitlines(keepends=True), patched.splitlines(keepends=True)
    assert new[:3] == old[:3] and new[4:] == old[4:] and new[3] != old[3]
    text = as_jsonl(records()).decode()
    patched, changed = patch_file("r.jsonl", text.encode(), PATCH)
    assert changed == [2]
    assert patched.decode().splitlines()[::2] == text.splitlines()[::2]


def test_parquet_keeps_its_schema_when_the_new_value_fits_and_turns_to_json_text_when_not():
    data = as_parquet(records(), json_text=False)
    patched, _ = patch_parquet(data, PATCH)
    assert pq.read_table(io.BytesIO(patched)).schema == pq.read_table(io.BytesIO(data)).schema
    points = [{"instance_id": "i-2", "field": "annotation_gt", "before": BEFORE,
               "after": {"type": "point_set", "value": [[1.5, 2.5]]}}]
    patched, changed = patch_parquet(data, points)
    assert changed == [2]
    rows = pq.read_table(io.BytesIO(patched)).to_pylist()
    assert [json.loads(r["annotation_gt"]) for r in rows] == [OTHER, points[0]["after"], BEFORE]
    assert [r["prompt"] for r in rows] == [r["prompt"] for r in records()]


def test_a_json_object_holding_its_rows_under_a_key():
    text = json.dumps({"meta": {"n": 3}, "rows": records()})
    patched, changed = patch_json(text, PATCH)
    document = json.loads(patched)
    assert changed == [2] and document["meta"] == {"n": 3}
    assert [r["annotation_gt"] for r in document["rows"]] == [OTHER, AFTER, BEFORE]
    with pytest.raises(ValueError, match="no list of records"):
        patch_json(json.dumps({"n": 1}), PATCH)


def test_containers_it_cannot_rewrite_say_so():
    with pytest.raises(ValueError, match="apply the JSONL patch"):
        patch_file("r.jsonl.gz", b"", PATCH)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["i-1", "i-2", "i-3"]), min_size=1, max_size=8),
       st.sampled_from(sorted(CONTAINERS)))
def test_exactly_the_records_of_the_corrected_instance_with_its_old_truth_change(ids, name):
    rows = [{"id": i, "prompt": f"p{n}", "annotation_gt": BEFORE if n % 2 == 0 else OTHER} for n, i in enumerate(ids)]
    data = CONTAINERS[name](rows)
    _, changed = patch_file(name, data, PATCH)
    want = [n for n, r in enumerate(rows) if r["id"] == "i-2" and r["annotation_gt"] == BEFORE]
    assert len(changed) == len(want)
