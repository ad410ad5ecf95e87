"""The bundled sample's verl and TRL dumps, and what ``rolloutscope score`` makes of them.

The adapter tests hold every adapter value to the CLI's table for the same rows, so the tables come
from the command line itself (in-process, ``scoring.cli.main``), written to Parquet and read back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from scoring.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
VERL_DUMPS = sorted((SAMPLE / "verl").glob("*.jsonl"))
TRL_TABLES = sorted((SAMPLE / "trl").glob("completions_*.parquet"))
TRL_INSTANCES = SAMPLE / "trl" / "train_instances.jsonl"
INSTANCES = SAMPLE / "instances.jsonl"
GSM8K = SAMPLE / "gsm8k_rollouts.jsonl"

#: verl's result key -> the scored table's column.
VERL_COLUMNS = {
    "score": "overall",
    "acc": "accuracy",
    "answer_reward": "answer_reward",
    "annotation_reward": "annotation_reward",
    "format": "format",
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def cli_table(out_dir: Path, name: str, *arguments: str) -> pd.DataFrame:
    """``rolloutscope score ARGUMENTS -o OUT_DIR/NAME.parquet``, read back; no row may be an error."""
    out = out_dir / f"{name}.parquet"
    code = main(["score", *arguments, "-o", str(out), "-q", "--workers", "1", "--strict"])
    assert code == 0, f"rolloutscope score {' '.join(arguments)} exited {code}"
    return pd.read_parquet(out)


def same(a: float | None, b: float | None) -> bool:
    """Equal to the last bit (NaN equals NaN: both say "does not apply")."""
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def gsm8k_rows() -> list[dict]:
    return read_jsonl(GSM8K)
