"""Shared helpers for the verifier, rewards and review tests: the spec's worked examples and contract builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import strategies as st

from scoring.verifier import COLLECTION_OF_TYPE, RESOLVER_IDS, SHAPE_OF_TYPE

#: The spec's worked examples, copied into the repository (see tests/data/spec_examples/README.md).
EXAMPLES_DIR = Path(__file__).resolve().parent / "data" / "spec_examples"


def load_cases(name: str) -> list[dict]:
    path = EXAMPLES_DIR / name
    if not path.exists():
        pytest.fail(f"worked examples missing from the repository: {path}")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def contract(annotation_type: str, answer_type: str = "integer") -> dict:
    """A well-formed v0 reward contract for ``annotation_type``."""
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": answer_type},
        "annotation": {"id": RESOLVER_IDS[annotation_type], "type": annotation_type},
    }


def instance(annotation_type: str, gt_value, answer=7) -> dict:
    """Keyword arguments for one instance (ground truth + contract), response left out."""
    return {
        "answer_gt": {"type": "integer", "value": answer},
        "annotation_gt": {"type": annotation_type, "value": gt_value},
        "reward_contract": contract(annotation_type),
    }


def shape_strategies(coordinate) -> dict:
    """Hypothesis strategies for one box (non-zero area), point and segment from ``coordinate``."""
    box = st.tuples(coordinate, coordinate, coordinate, coordinate).filter(
        lambda b: b[0] != b[2] and b[1] != b[3]
    ).map(list)
    point = st.tuples(coordinate, coordinate).map(list)
    return {"bbox": box, "point": point, "segment": st.tuples(point, point).map(list)}


def annotation_values(annotation_type: str, shapes: dict, role, *, max_items: int, max_keys: int, max_per_key: int = 3):
    """A hypothesis strategy for well-formed values of ``annotation_type``, built from one
    strategy per shape (``{"bbox": ..., "point": ..., "segment": ...}``) and one for role keys."""
    shape = shapes[SHAPE_OF_TYPE[annotation_type]]
    collection = COLLECTION_OF_TYPE[annotation_type]
    if collection == "single":
        return shape
    if collection in ("set", "sequence"):
        return st.lists(shape, max_size=max_items)
    if collection == "map":
        return st.dictionaries(role, shape, max_size=max_keys)
    return st.dictionaries(role, st.lists(shape, max_size=max_per_key), max_size=max_keys)
