"""No result depends on the hash seed or on set iteration order.

The same corpus - the worked examples plus generated answers and annotations built to meet
sets, colliding mapping keys and tied matchings - is scored in subprocesses under several
``PYTHONHASHSEED`` values; every score and every piece of the explanation must be identical.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from scoring_fixtures import contract, load_cases

SEEDS = range(8)
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PROBE = "rolloutscope"

_KEYS = ["a", "A", " a", "a ", "B", "b", "\tb", "Key", "KEY", "key "]
_SCALARS = [0, 1, 1.0, 2, "x", "X", " x ", "...", True, None]


def _literal(rng: random.Random, depth: int = 0) -> str:
    """Python-literal text of a value with sets, tuples, Ellipsis and colliding keys."""
    kind = rng.choice(["scalar", "scalar", "set", "list", "map", "tuple"] if depth < 2 else ["scalar"])
    if kind == "scalar":
        return rng.choice([repr(v) for v in _SCALARS] + ["..."])
    items = [_literal(rng, depth + 1) for _ in range(rng.randint(1, 4))]
    if kind == "set":  # hashable items only
        return "{" + ", ".join(rng.choice([repr(v) for v in _SCALARS] + ["..."]) for _ in items) + "}"
    if kind == "list":
        return "[" + ", ".join(items) + "]"
    if kind == "tuple":
        return "(" + ", ".join(items) + ",)"
    return "{" + ", ".join(f"{rng.choice(_KEYS)!r}: {item}" for item in items) + "}"


def _json_value(rng: random.Random, depth: int = 0):
    kind = rng.choice(["scalar", "list", "map"] if depth < 2 else ["scalar"])
    if kind == "scalar":
        return rng.choice(_SCALARS)
    if kind == "list":
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(_KEYS): _json_value(rng, depth + 1) for _ in range(rng.randint(1, 4))}


def _answer_cases(rng: random.Random) -> list[dict]:
    cases = []
    for _ in range(150):
        truth = _json_value(rng)
        if rng.random() < 0.5:
            response = "{'answer': " + _literal(rng) + "}"
        else:
            body = ", ".join(f"{json.dumps(rng.choice(_KEYS))}: {json.dumps(_json_value(rng))}" for _ in range(3))
            response = '{"answer": {' + body + "}}"
        cases.append({
            "response": response, "answer_gt": {"type": "value", "value": truth}, "annotation_gt": None,
            "reward_contract": None, "trace_reward_mode": "answer",
        })
    for _ in range(50):  # an answer and the same answer re-spelled: collisions on both sides
        value = _json_value(rng)
        cases.append({
            "response": json.dumps({"answer": value}), "answer_gt": {"type": "value", "value": _json_value(rng)},
            "annotation_gt": None, "reward_contract": None, "trace_reward_mode": "answer",
        })
    return cases


def _annotation_cases(rng: random.Random) -> list[dict]:
    """Maps and set maps with many role keys, and point sets full of tied distances."""
    cases = []
    roles = ["left", "right", "top", "a", "b", "c", "数据", "x y"]

    def item(annotation_type):
        x, y = rng.randint(0, 4) * 10, rng.randint(0, 4) * 10
        return [x, y, x + 10, y + 10] if annotation_type.startswith("bbox") else [x, y]

    def value(annotation_type):
        if annotation_type.endswith("_set_map"):
            return {k: [item(annotation_type) for _ in range(rng.randint(0, 3))] for k in rng.sample(roles, 4)}
        if annotation_type.endswith("_map"):
            return {k: item(annotation_type) for k in rng.sample(roles, 4)}
        return [item(annotation_type) for _ in range(rng.randint(0, 5))]

    for annotation_type in ("bbox_map", "bbox_set_map", "point_map", "point_set_map", "point_set", "bbox_set"):
        for _ in range(20):
            cases.append({
                "response": json.dumps({"answer": 7, "annotation": value(annotation_type)}),
                "answer_gt": {"type": "integer", "value": 7},
                "annotation_gt": {"type": annotation_type, "value": value(annotation_type)},
                "reward_contract": contract(annotation_type),
                "point_half_life_px": rng.choice([None, 5.0, 10.0]),
            })
    return cases


def summarize() -> dict:
    """Every score and explanation piece of the corpus, as JSON-ready values."""
    from scoring import explain_trace_response
    from scoring.verifier import candidates

    rng = random.Random(20261201)
    corpus = [c["kwargs"] for c in load_cases("trace_cases.jsonl") if "raises" not in c]
    corpus += _answer_cases(rng) + _annotation_cases(rng)
    results = []
    for kwargs in corpus:
        evaluation = explain_trace_response(**kwargs)
        extraction, answer, annotation = evaluation.extraction, evaluation.answer, evaluation.annotation
        match = annotation.match
        results.append([
            evaluation.as_flat_dict(),
            [extraction.format_reason, extraction.format_detail, extraction.format_break_at,
             extraction.recovered_source, extraction.missing_keys, extraction.extra_keys],
            [c.source for c in candidates(kwargs["response"] or "")],
            [answer.reason, answer.predicted_text, answer.ground_truth_text],
            None if match is None else [
                [tuple(m) for m in match.matches], match.unmatched_pred, match.unmatched_gt,
                [tuple(m) for m in match.zero_similarity_pairs], match.shared_keys, match.missing_keys,
                match.extra_keys, match.key_scores,
            ],
            annotation.reason,
        ])
    return {"hash": hash(PROBE), "results": json.loads(json.dumps(results, default=repr))}


def _run(seed: int) -> dict:
    environment = dict(os.environ, PYTHONHASHSEED=str(seed))
    code = "import json, sys; sys.path[:0] = sys.argv[1:]; from test_hash_seed import summarize; print(json.dumps(summarize()))"
    completed = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(HERE), str(HERE.parent)], env=environment, capture_output=True, text=True,
        check=False, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_every_result_is_the_same_under_every_hash_seed():
    runs = {seed: _run(seed) for seed in SEEDS}
    assert len({run["hash"] for run in runs.values()}) > 1  # the seeds did change string hashing
    first = runs[SEEDS[0]]["results"]
    assert len(first) > 350
    for seed, run in runs.items():
        differing = [i for i, (a, b) in enumerate(zip(first, run["results"], strict=True)) if a != b]
        assert not differing, f"PYTHONHASHSEED={seed} changes case(s) {differing[:10]}"
