"""Shared fixtures for the scoring tests: the spec's worked examples and contract builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.spec import RESOLVER_IDS

#: The spec's worked examples, copied into the repository (see tests/data/spec_examples/README.md).
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "data" / "spec_examples"


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
