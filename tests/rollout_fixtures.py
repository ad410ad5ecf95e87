"""Small rollout files built in temp folders (the rollouts tests never depend on sample_data/)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

from scoring.verifier import RESOLVER_IDS

RESOLVER = RESOLVER_IDS  # the spec's resolver table, stated once in scoring.verifier.spec


def contract(annotation_type: str | None = "bbox", answer_type: str = "integer") -> dict:
    result = {"reward_contract_version": "v0", "answer": {"id": "answer_exact_match_v0", "type": answer_type}}
    if annotation_type is not None:
        result["annotation"] = {"id": RESOLVER[annotation_type], "type": annotation_type}
    return result


def row(
    response: str | None,
    *,
    answer=7,
    answer_type: str = "integer",
    annotation_type: str | None = "bbox",
    annotation=(0, 0, 10, 10),
    mode: str | None = None,
    **extra,
) -> dict:
    """A canonical trace row."""
    result = {
        "response": response,
        "answer_gt": {"type": answer_type, "value": answer},
        "reward_contract": contract(annotation_type, answer_type),
    }
    if annotation_type is not None:
        value = list(annotation) if isinstance(annotation, tuple) else annotation
        result["annotation_gt"] = {"type": annotation_type, "value": value}
    if mode is not None:
        result["trace_output_mode"] = mode
    result.update(extra)
    return result


def diverse_rows() -> list[dict]:
    """Rows covering the annotation families, both modes, recovered and failed formats."""
    rows = [
        row('{"answer": 2, "annotation": [5, 0, 15, 10]}', answer=2),  # IoU 1/3
        row('Counting... {"answer": 7, "annotation": [0, 0, 10, 10]}', id="exact", step=100),
        row('{"answer": 7}', mode="answer", step=100),
        row('{"answer": 7}\nHope this helps.', mode="answer"),
        row('{"answer": 7}'),  # missing_keys in answer_and_annotation mode
        row("{'answer': 7, 'annotation': [0, 0, 10, 12]}"),  # python literal
        row('{"answer": 3, "annotation": [0, 0, 10, 10]}'),  # wrong answer: gated 0
        row(""),
        row("7", mode="answer_only"),
        row(
            'Boxes:\n```json\n{"answer": 2, "annotation": [[0, 0, 10, 10], [20, 20, 30, 30]]}\n```',
            answer=2,
            annotation_type="bbox_set",
            annotation=[[0, 0, 10, 10], [22, 20, 30, 30]],
        ),
        row(
            '{"answer": "left", "annotation": [100, 100]}',
            answer="left",
            answer_type="string",
            annotation_type="point",
            annotation=[110, 100],
            image_size=[640, 480],
        ),
        row(
            '{"answer": 1, "annotation": [[0, 0], [50, 50]]}',
            answer=1,
            annotation_type="segment",
            annotation=[[50, 50], [0, 2]],
            image_size=[1000, 1000],
        ),
        row(
            '{"answer": 2, "annotation": {"a": [10, 10], "b": [40, 40]}}',
            answer=2,
            annotation_type="point_map",
            annotation={"a": [12, 10], "c": [40, 40]},
            point_half_life_px=16,
        ),
        row(
            '<answer>{"answer": [1, 2], "annotation": [[0, 0, 5, 5]]}</answer> done',
            answer=[1, 2],
            answer_type="index_list",
            annotation_type="bbox_sequence",
            annotation=[[0, 0, 5, 5]],
        ),
    ]
    for index, item in enumerate(rows):
        item.setdefault("id", f"r{index}")
        item.setdefault("task_id", ["count", "locate"][index % 2])
    return rows


def write_jsonl(path: Path, rows, *, extra_lines=(), gz: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows) + "".join(line + "\n" for line in extra_lines)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def stringified(
    rows: list[dict], keys=("answer_gt", "annotation_gt", "reward_contract", "image_size")
) -> list[dict]:
    """Rows with nested fields as JSON strings (what Parquet and CSV writers produce)."""
    out = []
    for item in rows:
        item = copy.deepcopy(item)
        for key in keys:
            if key in item and item[key] is not None:
                item[key] = json.dumps(item[key])
        out.append(item)
    return out


def write_png(path: Path, size=(64, 48)) -> Path:
    from PIL import Image

    Image.new("RGB", size, "white").save(path)
    return path


def scorer_kwargs(item: dict, **options) -> dict:
    """What score_trace_response gets for a canonical row (default per-row mode rule)."""
    mode = item.get("trace_output_mode")
    if mode is None:
        mode = "answer_and_annotation" if item.get("annotation_gt") is not None else "answer"
    kwargs = {
        "response": item["response"],
        "answer_gt": item["answer_gt"],
        "annotation_gt": item.get("annotation_gt"),
        "reward_contract": item["reward_contract"],
        "image_size": item.get("image_size"),
        "point_half_life_px": item.get("point_half_life_px"),
        "trace_reward_mode": mode,
    }
    kwargs.update(options)
    return kwargs


def patch_code_version(monkeypatch, version: str) -> None:
    """Pretend the scoring code changed: the dataset's plan and its opened-table identity both
    read the code version."""
    from scoring.datasets import open as dataset_open
    from scoring.datasets import plan as dataset_plan

    for module in (dataset_plan, dataset_open):
        monkeypatch.setattr(module, "code_version", lambda: version)
