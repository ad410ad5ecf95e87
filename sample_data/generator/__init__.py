"""The sample-data generator, one module per file family it writes.

Shared pieces: ``common`` (seeded random source, JSON writing, the annotation-type tables),
``geometry`` (the generator's own v0 matching), ``drawing`` (the synthetic images),
``ground_truth`` (instances and the ground-truth fields rows carry). ``instances`` and the
``instances_*`` modules draw the images and build the instances, one task family each;
``responses`` and ``simulated_model`` turn an instance into a simulated response. Each remaining
module writes one family of files, and ``generate`` writes them all.

Every random draw comes from a ``random.Random`` seeded by the name of what it makes (``rng_for``)
or from a numpy generator with a fixed seed, so one module's output does not depend on what ran
before it; within a module, the order of the draws is part of the output.
"""

from __future__ import annotations

import json
from pathlib import Path

from .checkpoint_rollouts import canonical_rollouts
from .common import SAMPLE_DIR, write_jsonl, write_text
from .drawing import save_image
from .ground_truth import instance_record
from .gsm8k import gsm8k_rows
from .gt_audit import AUDIT_CORRUPT_EVERY, AUDIT_FILE, AUDIT_LABELS, gt_audit_rollouts
from .instances import build_bank
from .lmms_eval_samples import LMMS_FILE, lmms_rollouts
from .rollouts_with_errors import CORRUPT_IMAGE, corrupt_png_bytes, error_rollouts
from .small_csv import csv_rollouts
from .trl_completions import trl_rollouts, write_parquet
from .verl_dumps import verl_rollouts

__all__ = ["AUDIT_CORRUPT_EVERY", "build_bank", "canonical_rollouts", "generate", "gt_audit_rollouts"]


def generate(out_dir: Path | str = SAMPLE_DIR) -> dict:
    """Write every sample file under out_dir; return {"files": [...], "plans": {...}, ...} for the tests."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def record(rel):
        written.append(rel)
        return out / rel

    bank = build_bank()
    for rel, (img, _size) in bank.images.items():
        save_image(img, record(rel))
    path = record(CORRUPT_IMAGE)
    path.write_bytes(corrupt_png_bytes())
    instances = bank.instances

    write_jsonl(record("instances.jsonl"), [instance_record(i) for i in instances])
    plans: dict[str, dict] = {}
    checkpoints, p = canonical_rollouts(instances)
    plans.update(p)
    for run, rows in checkpoints.items():
        write_jsonl(record(f"rollouts_{run}.jsonl"), rows)
    text, expected_errors, p = error_rollouts(instances)
    plans.update(p)
    write_text(record("rollouts_with_errors.jsonl"), text)
    write_text(
        record("rollouts_with_errors.expected.json"),
        json.dumps(expected_errors, indent=2, sort_keys=True) + "\n",
    )
    verl, p = verl_rollouts(instances)
    plans.update(p)
    for rel, rows in verl.items():
        write_jsonl(record(rel), rows)
    tables, train_rows, p = trl_rollouts(instances)
    plans.update(p)
    for rel, cols in tables.items():
        write_parquet(record(rel), cols)
    write_jsonl(record("trl/train_instances.jsonl"), train_rows)
    rows, p = lmms_rollouts(instances)
    plans.update(p)
    write_jsonl(record(LMMS_FILE), rows)
    text, p = csv_rollouts(instances)
    plans.update(p)
    write_text(record("rollouts_small.csv"), text)
    rows, gsm_plans = gsm8k_rows()
    write_jsonl(record("gsm8k_rollouts.jsonl"), rows)
    rows, labels = gt_audit_rollouts(instances)
    write_jsonl(record(AUDIT_FILE), rows)
    write_text(record(AUDIT_LABELS), json.dumps(labels, indent=2, sort_keys=True) + "\n")
    return {
        "files": sorted(written),
        "plans": plans,
        "gsm8k_plans": gsm_plans,
        "expected_errors": expected_errors,
        "instances": instances,
        "gt_audit_labels": labels,
    }
