"""``rolloutscope suspects SCORED [-o FILE.csv]``: one CSV line per suspected ground-truth error."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from scoring import cli
from scoring.review import consensus as cs

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "sample_data" / "gt_audit"


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("suspects") / "audit.parquet"
    assert cli.main(["score", str(AUDIT / "rollouts_gt_audit.jsonl"), "-o", str(out), "-q", "--workers", "1"]) == 0
    return out


def test_suspects_writes_one_line_per_labelled_corruption(scored, tmp_path, capsys):
    out = tmp_path / "suspects.csv"
    assert cli.main(["suspects", str(scored), "-o", str(out)]) == 0
    assert "15 suspect(s) among 45 instances (360 rows)" in capsys.readouterr().err
    found = pd.read_csv(out, keep_default_na=False)
    assert list(found.columns) == list(cs.SUSPECT_COLUMNS)
    labels = json.loads((AUDIT / "gt_audit.expected.json").read_text())
    assert sorted(zip(found["instance_id"], found["kind"], strict=True)) == sorted(
        (x["instance_id"], x["kind"]) for x in labels)
    answers = found[found["kind"] == "answer"].set_index("instance_id")
    for label in labels:
        if label["kind"] == "answer":
            assert json.loads(answers.loc[label["instance_id"], "ground_truth"]) == label["corrupted_value"]
    assert (found["support"] >= 3).all() and found["confidence"].is_monotonic_decreasing
    assert found["example_row"].str.startswith("gt-audit/").all()  # the scored table's row ids


def test_suspects_to_stdout_with_options(scored, capsys):
    assert cli.main(["suspects", str(scored), "--kind", "answer", "--split-by", "run,step", "-q"]) == 0
    captured = capsys.readouterr()
    found = pd.read_csv(io.StringIO(captured.out))
    assert set(found["kind"]) == {"answer"} and len(found) == 8 and captured.err == ""
    assert cli.main(["suspects", str(scored), "--min-support", "9", "-q"]) == 0
    assert pd.read_csv(io.StringIO(capsys.readouterr().out)).empty


def test_suspects_usage_errors(scored, tmp_path, capsys):
    assert cli.main(["suspects", str(scored), "--min-agreement", "3"]) == cli.EXIT_USAGE
    assert "min_agreement must be in [0, 1]" in capsys.readouterr().err
    assert cli.main(["suspects", str(scored), "--split-by", "nope"]) == cli.EXIT_USAGE
    assert cli.main(["suspects", str(tmp_path / "missing.parquet")]) == cli.EXIT_FAILED
    assert "file not found" in capsys.readouterr().err
