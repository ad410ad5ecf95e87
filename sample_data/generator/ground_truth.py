"""Instances (prompt with its output-format hint, typed answer and annotation ground truth, reward
contract) and the ground-truth fields each written row carries.
"""

from __future__ import annotations

from PIL import Image

from .common import RESOLVER

ANSWER_HINT = {
    "integer": "<integer>",
    "number": "<number>",
    "string": "<string>",
    "option_letter": "<letter>",
    "index_list": "<list of integers>",
    "mapping": "<object>",
    "boolean": "<true or false>",
    "matrix": "<list of rows>",
}
ANNOT_HINT = {
    "bbox": "[x0, y0, x1, y1]",
    "bbox_set": "[[x0, y0, x1, y1], ...]",
    "bbox_sequence": "[[x0, y0, x1, y1], ...] in the requested order",
    "bbox_map": '{"<key>": [x0, y0, x1, y1], ...}',
    "bbox_set_map": '{"<key>": [[x0, y0, x1, y1], ...], ...}',
    "point": "[x, y]",
    "point_set": "[[x, y], ...]",
    "point_sequence": "[[x, y], ...] in the requested order",
    "point_map": '{"<key>": [x, y], ...}',
    "point_set_map": '{"<key>": [[x, y], ...], ...}',
    "segment": "[[x0, y0], [x1, y1]]",
    "segment_set": "[[[x0, y0], [x1, y1]], ...]",
}


def reward_contract(answer_type, annotation_type):
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": answer_type},
        "annotation": {"id": RESOLVER[annotation_type], "type": annotation_type},
    }


def make_instance(
    iid,
    task,
    image,
    size,
    question,
    answer_type,
    answer,
    ann_type,
    ann,
    *,
    wrong,
    mode="answer_and_annotation",
    variants=(),
    facts=(),
    distractors=(),
    keep_size=True,
):
    if mode == "answer_and_annotation":
        suffix = (
            f'End your reply with one JSON object: {{"answer": {ANSWER_HINT[answer_type]}, '
            f'"annotation": {ANNOT_HINT[ann_type]}}}. Coordinates are pixels of the image as given '
            "(origin top-left, x to the right, y down)."
        )
    else:
        suffix = f'End your reply with one JSON object: {{"answer": {ANSWER_HINT[answer_type]}}}.'
    wrong = [v for v in wrong if canon(v) != canon(answer)]
    assert wrong, iid
    return {
        "id": iid,
        "task_id": task,
        "image": image,
        "size": list(size),
        "keep_size": keep_size,
        "prompt": question + "\n\n" + suffix,
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": ann_type, "value": ann},
        "reward_contract": reward_contract(answer_type, ann_type),
        "trace_output_mode": mode,
        "meta": {
            "wrong": wrong,
            "variants": list(variants),
            "facts": list(facts),
            "distractors": list(distractors),
        },
    }


def canon(v):
    """Enough of the v0 answer canonical form to keep simulated wrong answers really wrong."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("num", int(v)) if float(v).is_integer() else ("num", float(v))
    if isinstance(v, str):
        return ("str", v.strip().lower())
    if isinstance(v, dict):
        return ("map", tuple(sorted((k.strip().lower(), canon(x)) for k, x in v.items())))
    return ("list", tuple(canon(x) for x in v))


def wrong_ints(n, *extra):
    return [n + 1, n - 1, n + 2, *extra]


class Bank:
    """Collects drawn images (written later) and instances."""

    def __init__(self):
        self.images: dict[str, tuple[Image.Image, tuple[int, int]]] = {}
        self.instances: list[dict] = []

    def image(self, name, img):
        self.images[name] = (img, img.size)
        return name

    def add(self, inst):
        self.instances.append(inst)


def gt_fields(inst, image_prefix="", include_size=True):
    row = {
        "image": image_prefix + inst["image"],
        "prompt": inst["prompt"],
        "answer_gt": inst["answer_gt"],
        "annotation_gt": inst["annotation_gt"],
        "reward_contract": inst["reward_contract"],
    }
    if include_size and inst["keep_size"]:
        row["image_size"] = inst["size"]
    return row


def instance_record(inst, image_prefix=""):
    rec = {
        "id": inst["id"],
        "instance_id": inst["id"],
        "task_id": inst["task_id"],
        "trace_output_mode": inst["trace_output_mode"],
    }
    rec.update(gt_fields(inst, image_prefix))
    return rec
