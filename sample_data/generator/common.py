"""What every module shares: the seeded random source, the one JSON serialisation and the file
writers, the simulated runs and steps, and the annotation-type tables.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parents[1]  # where the files are written by default
SEED = 20261130

RUNS = ("ckpt-A", "ckpt-B")
STEPS = (100, 200, 300)
SAMPLES_PER_PROMPT = 4

ANSWER_TYPES = ("integer", "number", "string", "option_letter", "index_list", "mapping", "boolean", "matrix")
RESOLVER = {
    "bbox": "bbox_soft_iou_v0",
    "bbox_set": "bbox_set_soft_iou_v0",
    "bbox_sequence": "bbox_sequence_soft_iou_v0",
    "bbox_map": "bbox_map_soft_iou_v0",
    "bbox_set_map": "bbox_set_map_soft_iou_v0",
    "point": "point_soft_distance_v0",
    "point_set": "point_set_soft_distance_v0",
    "point_sequence": "point_sequence_soft_distance_v0",
    "point_map": "point_map_soft_distance_v0",
    "point_set_map": "point_set_map_soft_distance_v0",
    "segment": "segment_soft_distance_v0",
    "segment_set": "segment_set_soft_distance_v0",
}
ANNOTATION_TYPES = tuple(RESOLVER)
LEAF = {
    t: ("box" if t.startswith("bbox") else "point" if t.startswith("point") else "segment") for t in RESOLVER
}
STRUCT = {
    "bbox": "scalar",
    "point": "scalar",
    "segment": "scalar",
    "bbox_set": "set",
    "point_set": "set",
    "segment_set": "set",
    "bbox_sequence": "sequence",
    "point_sequence": "sequence",
    "bbox_map": "map",
    "point_map": "map",
    "bbox_set_map": "set_map",
    "point_set_map": "set_map",
}


def dumps(obj) -> str:
    """The one JSON serialisation used for every file written here."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rng_for(*parts) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in (SEED, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def write_jsonl(path: Path, rows) -> None:
    write_text(path, "".join(dumps(r) + "\n" for r in rows))
