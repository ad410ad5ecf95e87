"""The deliberately broken file (``rollouts_with_errors.jsonl`` and its ``.expected.json``) and the
truncated PNG one of its rows points at.
"""

from __future__ import annotations

import io

from .common import dumps
from .drawing import draw_shapes_image, shape_plan
from .ground_truth import gt_fields
from .simulated_model import simulate

MISSING_IMAGE = "images/missing_scan_404.png"
CORRUPT_IMAGE = "images/corrupt_truncated.png"


def corrupt_png_bytes() -> bytes:
    img, _ = draw_shapes_image("corrupt", (320, 240), shape_plan("corrupt", 4))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    data = buf.getvalue()
    return data[: int(len(data) * 0.45)]


def error_rollouts(instances):
    """Mostly good rows plus deliberate problems; returns (text, expected-problems list, plans)."""
    good = [inst for inst in instances if inst["trace_output_mode"] == "answer_and_annotation"][:24]
    lines, expected, plans = [], [], {}

    def good_row(inst, n):
        response, plan = simulate(inst, "ckpt-A", 100, 0, salt="errors")
        row = {
            "id": f"err-{n:02d}",
            "instance_id": inst["id"],
            "task_id": inst["task_id"],
            "run": "ckpt-A",
            "step": 100,
            "sample_index": 0,
            "response": response,
        }
        row.update(gt_fields(inst))
        return row, plan

    bbox_inst = next(i for i in instances if i["annotation_gt"]["type"] == "bbox")
    count_inst = instances[0]

    def bad(kind, field, reason, text=None, row=None, valid=False):
        lines.append(text if text is not None else dumps(row))
        expected.append(
            {"line": len(lines), "kind": kind, "field": field, "reason": reason, "valid_input": valid}
        )

    for j, inst in enumerate(good):
        row, plan = good_row(inst, j)
        lines.append(dumps(row))
        plans[f"rollouts_with_errors.jsonl:{len(lines)}"] = dict(plan, instance_id=inst["id"])
        if j == 1:
            r, _ = good_row(good[5], 90)
            bad(
                "malformed_json",
                None,
                "line is cut off part-way through (truncated write)",
                text=dumps(r)[: len(dumps(r)) * 3 // 5],
            )
        elif j == 4:
            r, _ = good_row(good[6], 91)
            del r["response"]
            bad("missing_field", "response", "row has no response", row=r)
        elif j == 7:
            r, _ = good_row(count_inst, 92)
            r["answer_gt"] = count_inst["answer_gt"]["value"]
            bad("bad_field", "answer_gt", "answer_gt is a number, not an object with type and value", row=r)
        elif j == 10:
            r, _ = good_row(count_inst, 93)
            r["annotation_gt"] = {"type": "polygon", "value": [[120, 80], [260, 90], [200, 210]]}
            r["reward_contract"] = dict(
                r["reward_contract"], annotation={"id": "polygon_soft_iou_v0", "type": "polygon"}
            )
            r["response"] = '{"answer": 3, "annotation": [[118, 82], [258, 91], [203, 207]]}'
            bad(
                "unknown_annotation_type",
                "annotation_gt",
                "annotation type 'polygon' is not one of the 12 v0 types",
                row=r,
            )
        elif j == 13:
            r, plan = good_row(good[8], 94)
            r["reward_contract"] = dumps(r["reward_contract"])
            bad(
                "json_string_field",
                "reward_contract",
                "reward_contract arrives as a JSON string: decode it, then score",
                row=r,
                valid=True,
            )
            plans[f"rollouts_with_errors.jsonl:{len(lines)}"] = dict(plan, instance_id=good[8]["id"])
        elif j == 16:
            r, _ = good_row(bbox_inst, 95)
            r["image"] = MISSING_IMAGE
            r.pop("image_size", None)
            bad("missing_image", "image", f"image file {MISSING_IMAGE} does not exist", row=r)
        elif j == 19:
            r, _ = good_row(bbox_inst, 96)
            r["image"] = CORRUPT_IMAGE
            r.pop("image_size", None)
            bad("corrupt_image", "image", f"image file {CORRUPT_IMAGE} is a truncated PNG", row=r)
        elif j == 21:
            bad(
                "malformed_json",
                None,
                "trailing comma is not JSON",
                text='{"id": "err-97", "response": "{\\"answer\\": 3}", "answer_gt": {"type": "integer", "value": 3},}',
            )
        elif j == 22:
            bad("malformed_json", None, "not JSON at all (merge-conflict marker)", text="<<<<<<< HEAD")
    return "".join(line + "\n" for line in lines), expected, plans
