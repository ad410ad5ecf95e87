"""What a scored run reports besides its rows: rewards the trainer logged next to the recomputed ones, and how rows met their instances."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

try:
    import msgspec as _msgspec
except ImportError:  # pragma: no cover
    _msgspec = None
from .columns import LOGGED_PREFIX, MISMATCH_COLUMN

#: Columns of :func:`join_report`.
JOIN_REPORT_COLUMNS = (
    "file", "rule", "rows", "by_id", "by_prompt", "by_order", "own_ground_truth", "ambiguous", "unmatched",
)  # fmt: skip
#: The start of the reasons :class:`InstanceIndex` gives rows it cannot join.
_AMBIGUOUS_REASON = "matches "
_UNMATCHED_REASONS = ("no instance ", "row ")


def join_report(table: pd.DataFrame, errors: pd.DataFrame, join: str) -> pd.DataFrame:
    """Per rollout file: the join asked for and the rules that matched (``rule``, e.g. ``auto: id,
    prompt``), rows joined by each (``+image``: narrowed by the row's own image), rows that kept
    their own ground truth, and rows left unjoined because their key matched instances that
    disagree (``ambiguous``) or none (``unmatched``) -- those are in the errors table."""
    files: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return files.setdefault(
            name, {column: 0 for column in JOIN_REPORT_COLUMNS} | {"file": name, "rule": join}
        )

    if len(table):
        counts = table.groupby(["source_file", "joined"], observed=True, dropna=False).size()
        for (name, how), count in counts.items():
            row = entry(str(name))
            row["rows"] += int(count)
            if isinstance(how, str):
                row["by_" + how.split("+")[0]] += int(count)
            else:
                row["own_ground_truth"] += int(count)
    if len(errors):
        joining = errors[(errors["field"].isin(["id", "prompt"]) | errors["field"].isna()) & errors["line"].notna()]
        for name, reason in zip(joining["file"], joining["reason"], strict=True):
            if reason.startswith(_AMBIGUOUS_REASON):
                entry(str(name))["ambiguous"] += 1
            elif reason.startswith(_UNMATCHED_REASONS) and "instance" in reason:
                entry(str(name))["unmatched"] += 1
    for row in files.values():
        used = [rule for rule in ("id", "prompt", "order") if row["by_" + rule]]
        row["rule"] = f"{join}: {', '.join(used) or 'nothing matched'}"
    return pd.DataFrame(list(files.values()), columns=list(JOIN_REPORT_COLUMNS))


# --------------------------------------------------------------------------- logged values


def logged_components(table: pd.DataFrame) -> list[str]:
    """Components with a ``logged_<component>`` column."""
    return _logged_of(table.columns)


def _logged_of(names: Iterable[str]) -> list[str]:
    """The components that column ``names`` hold a ``logged_<component>`` value of."""
    return [c[len(LOGGED_PREFIX) :] for c in names if c.startswith(LOGGED_PREFIX) and c != MISMATCH_COLUMN]


def _recomputed(table: pd.DataFrame, component: str) -> np.ndarray:
    if component == "score":
        return table["score"].to_numpy(dtype=np.float64)
    if component in table.columns:
        return table[component].to_numpy(dtype=np.float64)
    return np.full(len(table), math.nan)


def _mismatch_masks(table: pd.DataFrame, atol: float) -> dict[str, np.ndarray]:
    masks = {}
    for component in logged_components(table):
        logged = table[LOGGED_PREFIX + component].to_numpy(dtype=np.float64)
        recomputed = _recomputed(table, component)
        if component == "overall":  # simple rows log their score as overall/reward
            recomputed = np.where(np.isnan(recomputed), table["score"].to_numpy(dtype=np.float64), recomputed)
        compared = ~np.isnan(logged) & ~np.isnan(recomputed)
        masks[component] = compared & ~(np.abs(logged - recomputed) <= atol)
    return masks


def mismatch_inputs(names: list[str]) -> list[str]:
    """Of a table's column ``names``, those :func:`with_logged_mismatch` reads: the logged values,
    the components they are compared with and ``score`` (a table written a column at a time
    reads back only these)."""
    components = _logged_of(names)
    read = {"score", *components, *(LOGGED_PREFIX + c for c in components)}
    return [c for c in names if c in read]


def with_logged_mismatch(table: pd.DataFrame, atol: float) -> pd.DataFrame:
    """Set ``logged_mismatch``: the components (comma-separated) whose logged value differs."""
    masks = _mismatch_masks(table, atol)
    n = len(table)
    if not masks:
        table[MISMATCH_COLUMN] = pd.Series(pd.Categorical([None] * n if n else []), index=table.index)
        return table
    names = list(masks)
    codes = np.zeros(n, dtype=np.int64)
    for bit, name in enumerate(names):
        codes |= masks[name].astype(np.int64) << bit
    present = np.flatnonzero(np.bincount(codes, minlength=1))
    labels = {
        int(code): ",".join(names[b] for b in range(len(names)) if code >> b & 1) for code in present if code
    }
    categories = sorted(set(labels.values()))
    lookup = np.full(
        len(names) and (1 << len(names)), -1, dtype=np.int8 if len(categories) < 127 else np.int64
    )
    for code, label in labels.items():
        lookup[code] = categories.index(label)
    column = pd.Categorical.from_codes(lookup[codes], categories=categories, validate=False)
    table[MISMATCH_COLUMN] = pd.Series(column, index=table.index)
    return table


def logged_vs_recomputed(table: pd.DataFrame, atol: float = 1e-6) -> pd.DataFrame:
    """Per component: rows with a logged value, how many differ from the recomputed
    value (beyond ``atol``), the largest difference and the first differing row."""
    rows = []
    masks = _mismatch_masks(table, atol)
    for component, mask in masks.items():
        logged = table[LOGGED_PREFIX + component].to_numpy(dtype=np.float64)
        recomputed = _recomputed(table, component)
        if component == "overall":
            recomputed = np.where(np.isnan(recomputed), table["score"].to_numpy(dtype=np.float64), recomputed)
        compared = ~np.isnan(logged) & ~np.isnan(recomputed)
        diff = np.abs(logged - recomputed)
        differing = np.flatnonzero(mask)
        first = None
        if len(differing):
            i = differing[0]
            first = f"{table['source_file'].iat[i]}:{table['source_line'].iat[i]}"
        rows.append(
            {
                "component": component,
                "rows_logged": int(compared.sum()),
                "rows_differ": int(mask.sum()),
                "share_differ": float(mask.sum() / compared.sum()) if compared.sum() else math.nan,
                "max_abs_diff": float(np.nanmax(np.where(compared, diff, np.nan)))
                if compared.any()
                else math.nan,
                "mean_logged": float(np.nanmean(np.where(compared, logged, np.nan)))
                if compared.any()
                else math.nan,
                "mean_recomputed": float(np.nanmean(np.where(compared, recomputed, np.nan)))
                if compared.any()
                else math.nan,
                "first_differing_row": first,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "component",
            "rows_logged",
            "rows_differ",
            "share_differ",
            "max_abs_diff",
            "mean_logged",
            "mean_recomputed",
            "first_differing_row",
        ],
    )
