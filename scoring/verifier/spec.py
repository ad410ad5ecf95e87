"""The spec's named constants, stated once.

Everything here is copied from the normative text in ``shared/spec`` so that no
module repeats a magic number: annotation types and their reward ids, the
half-life rule for soft distances, option aliases and the JSON nesting cap.
"""

from __future__ import annotations

import math

CONTRACT_VERSION = "v0"
ANSWER_REWARD_ID = "answer_exact_match_v0"

#: annotation_gt.type -> reward id (annotation-contracts.md, resolver table).
RESOLVER_IDS: dict[str, str] = {
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
ANNOTATION_TYPES: tuple[str, ...] = tuple(RESOLVER_IDS)

#: Shape of one item ("bbox", "point", "segment") and how items combine.
SHAPE_OF_TYPE: dict[str, str] = {t: t.split("_", 1)[0] for t in ANNOTATION_TYPES}
SINGLE, SET, SEQUENCE, MAP, SET_MAP = "single", "set", "sequence", "map", "set_map"
COLLECTION_OF_TYPE: dict[str, str] = {
    t: (t.split("_", 1)[1] if "_" in t else SINGLE) for t in ANNOTATION_TYPES
}
#: List types that also accept one bare item (scoring-behaviour.md).
BARE_ITEM_TYPES = frozenset({"bbox_set", "bbox_sequence", "point_set", "point_sequence"})
#: Set maps whose roles each accept one bare item as a set of that item (the December clarifications).
BARE_ITEM_ROLE_TYPES = frozenset({"bbox_set_map", "point_set_map"})
#: List types that also accept ``{"bboxes": [...]}``.
BBOXES_WRAPPER_TYPES = frozenset({"bbox_set", "bbox_sequence"})
BBOXES_WRAPPER_KEY = "bboxes"

# Soft pixel distance: similarity = exp(-ln 2 * (d / half_life)^2).
LN2 = math.log(2.0)
HALF_LIFE_DIAGONAL_FRACTION = 0.035
HALF_LIFE_MIN_PX = 20.0
HALF_LIFE_MAX_PX = 80.0
HALF_LIFE_DEFAULT_PX = 32.0

# Output modes and formulas, with every accepted alias.
MODE_ANSWER = "answer"
MODE_ANSWER_AND_ANNOTATION = "answer_and_annotation"
MODE_ALIASES: dict[str, str] = {
    "answer": MODE_ANSWER,
    "answer_only": MODE_ANSWER,
    "auto": MODE_ANSWER,
    "": MODE_ANSWER,
    "answer_and_annotation": MODE_ANSWER_AND_ANNOTATION,
    "annotation": MODE_ANSWER_AND_ANNOTATION,
}
FORMULA_GATED = "gated"
FORMULA_ADDITIVE = "additive"
FORMULA_ALIASES: dict[str, str] = {
    "gated": FORMULA_GATED,
    "answer_gated": FORMULA_GATED,
    "gated_annotation": FORMULA_GATED,
    "": FORMULA_GATED,
    "additive": FORMULA_ADDITIVE,
    "separate": FORMULA_ADDITIVE,
    "linear": FORMULA_ADDITIVE,
}
ANSWER_SCORING_EXACT_JSON = "exact_json"
ANSWER_SCORING_ALIASES: dict[str, str] = {
    "exact_json": ANSWER_SCORING_EXACT_JSON,
    "exact": ANSWER_SCORING_EXACT_JSON,
    "": ANSWER_SCORING_EXACT_JSON,
}

DEFAULT_ANSWER_WEIGHT = 0.5
DEFAULT_ANNOTATION_WEIGHT = 0.5
DEFAULT_FORMAT_WEIGHT = 0.0

#: Required keys of the final object per output mode.
SCHEMA_KEYS: dict[str, frozenset[str]] = {
    MODE_ANSWER: frozenset({"answer"}),
    MODE_ANSWER_AND_ANNOTATION: frozenset({"answer", "annotation"}),
}
ANSWER_KEY = "answer"
ANNOTATION_KEY = "annotation"

#: Nesting of this many levels or more is a parse failure, never a RecursionError.
MAX_NESTING_DEPTH = 1000

#: A task counts as solved when its score reaches this (simple-rewards.txt).
SOLVED_THRESHOLD = 0.999
