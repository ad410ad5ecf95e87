"""Scored tables in and out of the command line: writing and reading them, and the summary."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from .arguments import EXIT_USAGE, CliError


def output_format(path: Path, explicit: str | None) -> str:
    if explicit:
        return explicit
    name = path.name.lower()
    if name.endswith(".parquet") or name.endswith(".pq"):
        return "parquet"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        return "jsonl"
    raise CliError(
        f"cannot tell the output format of {path} (use .parquet, .csv or .jsonl, or --to)", EXIT_USAGE
    )


def write_table(frame, path: Path, fmt: str) -> None:
    """Write a table as Parquet, CSV or JSONL (CLI output; raises CliError when it cannot)."""
    try:
        if path.parent and not path.parent.exists():
            raise CliError(f"cannot write {path}: folder {path.parent} does not exist")
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        elif fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_json(path, orient="records", lines=True, force_ascii=False)
    except CliError:
        raise
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise CliError(f"cannot write {path}: {reason}") from None


def read_table(path: str):
    """Read a scored table (Parquet, CSV or JSONL), or raise CliError."""
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: file not found")
    if p.is_dir():
        return _read_dataset(p)
    name = p.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            frame = pd.read_parquet(p)
        elif name.endswith((".csv", ".csv.gz")):
            frame = pd.read_csv(p, low_memory=False)
        elif name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".json")):
            frame = pd.read_json(p, lines=not name.endswith(".json"))
        else:
            raise CliError(f"{path}: unknown table format (expected .parquet, .csv or .jsonl)")
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"{path}: cannot read the table ({exc})") from None
    missing = [c for c in ("scorer", "score", "solved") if c not in frame.columns]
    if missing:
        raise CliError(
            f"{path}: not a scored table (no {', '.join(missing)} column); run 'rolloutscope score' first"
        )
    return frame


def _read_dataset(path: Path):
    """The in-memory columns of a scored dataset folder (no text), or raise CliError."""
    from ..datasets import open_dataset

    try:
        return open_dataset(path, compact=False).table
    except FileNotFoundError:
        raise CliError(f"{path}: a folder without a scored dataset (no manifest.json)") from None
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: cannot read the scored dataset ({exc})") from None


def summarize(table, by: Sequence[str] | None = None, solved_threshold: float | None = None):
    """The summary table: one row per group (``grouping`` names the grouping columns).

    Rows of different lm-eval filters are never pooled: when the table holds several, every
    grouping is split by ``filter`` too (unless ``by`` is given)."""
    import numpy as np
    import pandas as pd

    from ..runs import SPLIT_COLUMNS

    frame = table
    if solved_threshold is not None:
        frame = frame.assign(solved=frame["score"].to_numpy(dtype=float) >= solved_threshold)
    trace = frame["scorer"].astype(str) == "trace"
    work = pd.DataFrame(
        {
            "score": frame["score"].astype(float),
            "answer_reward": frame["answer_reward"].astype(float) if "answer_reward" in frame else np.nan,
            "annotation_reward": frame["annotation_reward"].astype(float)
            if "annotation_reward" in frame
            else np.nan,
            "format": frame["format"].astype(float) if "format" in frame else np.nan,
            "format_failure": np.where(trace, (frame["format"].astype(float) == 0.0).astype(float), np.nan)
            if "format" in frame
            else np.nan,
            "zero_reward": frame["zero_reward"].astype(float) if "zero_reward" in frame else np.nan,
            "solved": frame["solved"].astype(float),
            "logged_mismatch": frame["logged_mismatch"].notna().astype(float)
            if "logged_mismatch" in frame
            else 0.0,
            "format_reason": frame["format_reason"].astype(object) if "format_reason" in frame else None,
        }
    )
    if by:
        groupings = [list(by)]
    else:
        groupings = []
        if "run" in frame and frame["run"].nunique(dropna=True) > 1:
            groupings.append(["run"])
        for column in ("task_id", "annotation_type", "step"):
            if column in frame and frame[column].notna().any():
                groupings.append([column])
        groupings.append([])
        split = [c for c in SPLIT_COLUMNS if c in frame and frame[c].nunique(dropna=True) > 1]
        groupings = [[*split, *columns] for columns in groupings]
    missing = sorted({c for g in groupings for c in g} - set(frame.columns))
    if missing:
        raise CliError(f"unknown column(s) for --by: {', '.join(missing)}", EXIT_USAGE)
    out = []
    for columns in groupings:
        keys = [frame[c].astype(object).where(frame[c].notna(), "(none)") for c in columns]
        groups = work.groupby(keys, sort=True, dropna=False) if columns else [((), work)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            failures = part["format_reason"][(part["format_failure"] == 1.0)]
            top = failures.value_counts().index[0] if len(failures) else None
            out.append(
                {
                    "grouping": ",".join(columns) or "all",
                    "group": ", ".join(str(k) for k in key) if columns else "all",
                    "rows": len(part),
                    "mean_score": part["score"].mean(),
                    "mean_answer_reward": part["answer_reward"].mean(),
                    "mean_annotation_reward": part["annotation_reward"].mean(),
                    "mean_format": part["format"].mean(),
                    "format_failures": int((part["format_failure"] == 1.0).sum()),
                    "format_failure_rate": part["format_failure"].mean(),
                    "top_format_failure": top,
                    "zero_reward_rate": part["zero_reward"].mean(),
                    "solve_rate": part["solved"].mean(),
                    "logged_mismatches": int(part["logged_mismatch"].sum()),
                }
            )
    return pd.DataFrame(out)


def _render_text(summary) -> str:
    lines = []
    for grouping, part in summary.groupby("grouping", sort=False):
        title = "all rows" if grouping == "all" else f"by {grouping}"
        lines.append(title)
        shown = part.drop(columns=["grouping"]).rename(
            columns={"group": grouping if grouping != "all" else ""}
        )
        shown["top_format_failure"] = [v if isinstance(v, str) else "-" for v in shown["top_format_failure"]]
        lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
        lines.append("")
    return "\n".join(lines)


def _render_markdown(summary) -> str:
    columns = list(summary.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in summary.iterrows():
        cells = []
        for column in columns:
            value = row[column]
            if isinstance(value, float):
                cells.append("-" if math.isnan(value) else f"{value:.3f}")
            else:
                cells.append("-" if value is None else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

def render_summary(summary, fmt: str) -> str:
    """The summary table as ``summary --format`` prints it: csv, json, markdown or text."""
    if fmt == "csv":
        return summary.to_csv(index=False)
    if fmt == "json":
        return summary.to_json(orient="records", indent=1)
    if fmt == "markdown":
        return _render_markdown(summary)
    return _render_text(summary)
