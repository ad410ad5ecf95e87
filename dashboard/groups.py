"""GRPO groups: rollouts of one prompt, their spread, and the groups that teach nothing.

No Streamlit here; ``pages/8_Groups.py`` only lays these out.

A GRPO group is the set of rollouts sampled for one prompt in one batch. GRPO
normalises each reward by its group's mean and spread, so a group whose
rollouts all scored the same (all 0, all 1, or any other constant) has zero
advantage everywhere: it costs generation and carries **no learning signal**.

Group key (:func:`detect_groups`), always within one run, step and file:

* rows **with a** ``sample_index``: the same ``instance_id`` (else the same
  prompt + image); the sample index numbers the group's rollouts, and a repeated
  index is reported;
* rows **without** one: the identical prompt text and the same image (file
  name); rows without an image are grouped on the prompt alone, and counted;
  rows without a prompt fall back to the instance id.

Rows of different files are never pooled (a CSV export of the same run would
otherwise double its groups). Rows with neither a prompt nor an instance id
are not grouped, and counted.

:func:`zero_signal_share` answers the Tuning question "how many groups carry no
signal under these weights / this threshold?" for a grid of options; every
option set is re-weighted with :func:`scoring.runs.reweighting.recompute` (that is,
:func:`scoring.verifier.composition.recompose`), never with a copy of the reward formula.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dashboard import tuning
from dashboard.filters import NONE_LABEL
from dashboard.numbers import plural, verb
from dashboard.plot_text import plotly_text
from scoring.runs import recompute

HOW_SAMPLE = "sample index"
HOW_PROMPT = "prompt + image"

#: Two scores closer than this count as equal (re-weighting is exact float arithmetic).
EQUAL_TOL = 1e-9

SIGNAL_MIXED = "mixed"
SIGNAL_ALL_ZERO = "all 0"
SIGNAL_ALL_ONE = "all 1"
SIGNAL_ALL_EQUAL = "all equal"
SIGNAL_SINGLE = "single rollout"
SIGNAL_UNSCORED = "unscored"
SOLVED_MIXED = "mixed"
SOLVED_ALL = "all solved"
SOLVED_NONE = "none solved"

KEY_CHARS = 90
_SEP = re.compile(r"[\\/]")

GROUP_COLUMNS = ["run", "step", "source_file", "key", "how", "task_id", "annotation_type", "size",
                 "repeated_samples", "first_row"]
STAT_COLUMNS = ["scored", "mean", "std", "min", "max", "solved_fraction", "signal", "zero_signal", "solved_signal"]
SHARE_COLUMNS = [*tuning.OPTION_KEYS, "groups", "zero_signal", "zero_signal_share", "all_zero_share",
                 "all_one_share", "all_equal_share", "uniform_solved_share", "none_solved_share", "all_solved_share"]


# --------------------------------------------------------------------------- detection


@dataclass
class Grouping:
    """Which rows form which group."""

    #: group number of every table row (-1: not grouped), in table order
    codes: np.ndarray
    #: one row per group (see :data:`GROUP_COLUMNS`), index: the group number
    groups: pd.DataFrame
    index: pd.Index  # the table's row ids
    rows: int
    ungrouped: int = 0  # rows with neither prompt nor instance id
    no_image: int = 0  # prompt-grouped rows without an image (grouped on the prompt alone)
    notes: list[str] = field(default_factory=list)
    _order: np.ndarray | None = field(default=None, repr=False)
    _starts: np.ndarray | None = field(default=None, repr=False)

    def rows_of(self, group: int) -> pd.Index:
        return self.index[self.codes == group]

    @property
    def sorted_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(row positions sorted by group, start of each group in that order)."""
        if self._order is None:
            grouped = np.flatnonzero(self.codes >= 0)
            order = grouped[np.argsort(self.codes[grouped], kind="stable")]
            sizes = np.bincount(self.codes[order], minlength=len(self.groups))
            self._order = order
            self._starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else np.zeros(0, np.int64)
        return self._order, self._starts

    def describe(self) -> str:
        """How the groups were formed and what was left out, in plain words."""
        if not self.rows:
            return "No rows."
        groups = self.groups
        how = groups["how"].value_counts()
        parts = []
        if how.get(HOW_SAMPLE, 0):
            parts.append(f"{how[HOW_SAMPLE]:,} by sample index (same run, step, file and instance id or prompt)")
        if how.get(HOW_PROMPT, 0):
            parts.append(f"{how[HOW_PROMPT]:,} by identical prompt + image (same run, step and file)")
        sizes = groups["size"].to_numpy()
        text = f"{plural(len(groups), 'group')} from {plural(self.rows - self.ungrouped, 'rollout')}: " + "; ".join(parts) + "."
        multi = int((sizes >= 2).sum())
        if multi:
            text += f" {multi:,} {verb(multi, 'has', 'have')} several rollouts (median size {np.median(sizes[sizes >= 2]):g})."
        return " ".join([text, *self.notes])


def _as_text(uniques: Any) -> np.ndarray:
    """Distinct values as an object array of text (vectorised; no per-value Python loop)."""
    return pd.Index(uniques).astype("str").to_numpy(dtype=object)


def _codes(values: pd.Series | np.ndarray, *, blank_is_missing: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Codes (-1 missing) and uniques of one column, as text keys."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    uniques = np.asarray(uniques, dtype=object)
    if blank_is_missing and len(uniques):
        blank = np.asarray(pd.Index(_as_text(uniques)).str.strip() == "", dtype=bool)
        if blank.any():
            codes = np.where((codes >= 0) & blank[np.maximum(codes, 0)], -1, codes)
    return codes, uniques


def _combine(*code_arrays: np.ndarray) -> np.ndarray:
    """One compact code per distinct tuple of codes (-1 stays a value of its own)."""
    combined = np.zeros(len(code_arrays[0]), dtype=np.int64)
    for codes in code_arrays:
        width = int(codes.max(initial=-1)) + 2
        combined, _ = pd.factorize(combined * width + (codes + 1))
        combined = np.asarray(combined, dtype=np.int64)
    return combined


def _column(table: pd.DataFrame, name: str) -> pd.Series:
    if name in table.columns:
        return table[name]
    return pd.Series([None] * len(table), index=table.index, dtype="object")


def _clip(text: Any, limit: int = KEY_CHARS) -> str:
    """The start of ``text`` on one line, at most ``limit`` characters."""
    text = str(text)
    short = text[:limit].replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ").strip()
    return short if len(text) <= limit else short[: limit - 1] + "…"


def detect_groups(table: pd.DataFrame) -> Grouping:
    """Assign every row to its GRPO group (see the module docstring for the rule)."""
    n = len(table)
    if not n:
        return Grouping(codes=np.zeros(0, dtype=np.int64), groups=pd.DataFrame(columns=GROUP_COLUMNS),
                        index=table.index, rows=0)
    run = _column(table, "run")
    run_codes, _ = _codes(run)
    step_codes, _ = _codes(_column(table, "step"))
    file_codes, _ = _codes(_column(table, "source_file"))
    id_codes, _ = _codes(_column(table, "instance_id"), blank_is_missing=True)
    sample = _column(table, "sample_index").notna().to_numpy()
    has_id = id_codes >= 0
    # prompts and images are only read for rows not keyed by sample index + instance id
    need = ~(sample & has_id)
    prompt_codes = np.full(n, -1, dtype=np.int64)
    image_codes = np.full(n, -1, dtype=np.int64)
    names = np.zeros(0, dtype=object)
    ref_codes = np.full(n, -1, dtype=np.int64)
    if need.any():
        rows = np.flatnonzero(need)
        everything = len(rows) == n
        prompt = _column(table, "prompt")
        refs_column = _column(table, "image_ref")
        prompt_codes[rows], _ = _codes(prompt if everything else prompt.iloc[rows], blank_is_missing=True)
        ref_codes[rows], refs = _codes(refs_column if everything else refs_column.iloc[rows], blank_is_missing=True)
        names = np.array([_SEP.split(str(r))[-1] for r in _as_text(refs)], dtype=object)
        if len(names):
            name_codes, _ = _codes(names)
            image_codes = np.where(ref_codes >= 0, name_codes[np.maximum(ref_codes, 0)], -1)
    has_prompt = prompt_codes >= 0
    use_id = np.where(sample, has_id, ~has_prompt & has_id)
    use_prompt = ~use_id & has_prompt
    grouped = use_id | use_prompt
    prompt_image = _combine(prompt_codes, image_codes)
    ident = np.where(use_id, id_codes * 2, np.where(use_prompt, prompt_image * 2 + 1, -1))
    keys = _combine(run_codes, step_codes, file_codes, ident)
    keys = np.where(grouped, keys, -1)
    valid = keys >= 0
    codes = np.full(n, -1, dtype=np.int64)
    if valid.any():
        compact, _ = pd.factorize(keys[valid])
        codes[valid] = compact
    count = int(codes.max(initial=-1)) + 1
    if not count:
        return Grouping(codes=codes, groups=pd.DataFrame(columns=GROUP_COLUMNS), index=table.index, rows=n,
                        ungrouped=n, notes=[f"{n:,} row(s) have neither a prompt nor an instance id: no groups."])

    first = np.full(count, -1, dtype=np.int64)
    where = np.flatnonzero(valid)[::-1]
    first[codes[where]] = where
    size = np.bincount(codes[valid], minlength=count)
    # repeated sample indexes: rollouts minus distinct (group, sample index) pairs, on sample rows
    sample_rows = valid & sample
    repeated = np.zeros(count, dtype=np.int64)
    if sample_rows.any():
        sample_codes, _ = _codes(_column(table, "sample_index")[sample_rows])
        pair = _combine(codes[sample_rows], sample_codes)
        pair_group = np.full(int(pair.max()) + 1, -1, dtype=np.int64)
        pair_group[pair] = codes[sample_rows]
        repeated = np.bincount(codes[sample_rows], minlength=count) - np.bincount(pair_group, minlength=count)

    def at_first(column: str, missing: Any = NONE_LABEL) -> np.ndarray:
        """``column`` at each group's first row as text (``missing`` where absent)."""
        picked = _column(table, column).iloc[first]
        codes_, uniques = pd.factorize(picked, use_na_sentinel=True)
        texts = np.append(_as_text(uniques), np.array([missing], dtype=object))
        return texts[np.asarray(codes_)]

    how = np.where(sample[first], HOW_SAMPLE, HOW_PROMPT).astype(object)
    first_use_id = use_id[first]
    ids = at_first("instance_id", None)
    prompts = at_first("prompt", "")
    first_refs = ref_codes[first]
    images = np.where(first_refs >= 0, names[np.maximum(first_refs, 0)] if len(names) else "", "(no image)")
    key_text = np.array(
        [str(ids[g]) if first_use_id[g] else f"{_clip(prompts[g])} · {images[g]}" for g in range(count)], dtype=object
    )
    steps = _column(table, "step").iloc[first].array.to_numpy(dtype=np.float64, na_value=np.nan)
    groups = pd.DataFrame(
        {
            "run": at_first("run"),
            "step": pd.array(np.where(np.isnan(steps), 0, steps).astype(np.int64), dtype="Int64"),
            "source_file": at_first("source_file"),
            "key": key_text,
            "how": how,
            "task_id": at_first("task_id"),
            "annotation_type": at_first("annotation_type"),
            "size": size.astype(np.int64),
            "repeated_samples": repeated.astype(np.int64),
            "first_row": table.index[first].to_numpy(dtype=object),
        }
    )
    groups.loc[np.isnan(steps), "step"] = pd.NA
    groups.index.name = "group"
    ungrouped = int((~valid).sum())
    no_image = int((valid & use_prompt & (image_codes < 0)).sum())
    notes = []
    if ungrouped:
        notes.append(f"{plural(ungrouped, 'row')} {verb(ungrouped, 'has', 'have')} neither a prompt nor an instance id "
                     f"and {verb(ungrouped, 'is', 'are')} not in any group.")
    if no_image:
        notes.append(f"{plural(no_image, 'row')} {verb(no_image, 'has', 'have')} no image: "
                     f"{verb(no_image, 'it was', 'they were')} grouped on the prompt alone.")
    dup_groups = int((repeated > 0).sum())
    if dup_groups:
        notes.append(
            f"{plural(dup_groups, 'group')} {verb(dup_groups, 'repeats', 'repeat')} a sample index "
            f"({plural(int(repeated.sum()), 'extra rollout')}): "
            "the same rollout may have been logged twice."
        )
    singles = int((size == 1).sum())
    if singles and singles == count:
        notes.append("Every group has a single rollout: these files hold one rollout per prompt, so there is no "
                     "group spread to show (GRPO groups need several rollouts of the same prompt).")
    elif singles:
        notes.append(f"{plural(singles, 'group')} {verb(singles, 'has', 'have')} a single rollout (no spread; "
                     "left out of the no-signal share).")
    return Grouping(codes=codes, groups=groups, index=table.index, rows=n, ungrouped=ungrouped, no_image=no_image,
                    notes=notes)


# --------------------------------------------------------------------------- statistics


def _reduce(grouping: Grouping, score: np.ndarray, solved: np.ndarray) -> dict[str, np.ndarray]:
    """Per group: scored rollouts, mean, std (ddof=1), min, max, solved fraction (vectorised)."""
    order, starts = grouping.sorted_rows
    count = len(grouping.groups)
    if not count:
        empty = np.zeros(0)
        return {"scored": empty.astype(np.int64), "mean": empty, "std": empty, "min": empty, "max": empty,
                "solved_fraction": empty}
    values = score[order]
    ok = ~np.isnan(values)
    group = grouping.codes[order]
    scored = np.bincount(group[ok], minlength=count)
    total = np.bincount(group[ok], weights=values[ok], minlength=count)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(scored > 0, total / np.maximum(scored, 1), np.nan)
        dev = np.bincount(group[ok], weights=(values[ok] - mean[group[ok]]) ** 2, minlength=count)
        std = np.where(scored > 1, np.sqrt(dev / np.maximum(scored - 1, 1)), np.nan)
        low = np.fmin.reduceat(values, starts)
        high = np.fmax.reduceat(values, starts)
        solved_count = np.bincount(group[ok], weights=solved[order][ok].astype(np.float64), minlength=count)
        fraction = np.where(scored > 0, solved_count / np.maximum(scored, 1), np.nan)
    return {"scored": scored.astype(np.int64), "mean": mean, "std": std, "min": low, "max": high,
            "solved_fraction": fraction}


def _signals(reduced: Mapping[str, np.ndarray], tol: float = EQUAL_TOL) -> tuple[np.ndarray, np.ndarray]:
    scored, low, high, fraction = reduced["scored"], reduced["min"], reduced["max"], reduced["solved_fraction"]
    multi = scored >= 2
    constant = multi & (high - low <= tol)
    signal = np.full(len(scored), SIGNAL_MIXED, dtype=object)
    signal[constant] = SIGNAL_ALL_EQUAL
    signal[constant & (high <= tol)] = SIGNAL_ALL_ZERO
    signal[constant & (low >= 1.0 - tol)] = SIGNAL_ALL_ONE
    signal[scored == 1] = SIGNAL_SINGLE
    signal[scored == 0] = SIGNAL_UNSCORED
    solved = np.full(len(scored), SOLVED_MIXED, dtype=object)
    solved[multi & (fraction == 1.0)] = SOLVED_ALL
    solved[multi & (fraction == 0.0)] = SOLVED_NONE
    solved[scored == 1] = SIGNAL_SINGLE
    solved[scored == 0] = SIGNAL_UNSCORED
    return signal, solved


def group_stats(grouping: Grouping, scores: pd.DataFrame, *, tol: float = EQUAL_TOL) -> pd.DataFrame:
    """Per group (the :attr:`Grouping.groups` columns plus :data:`STAT_COLUMNS`): scored rollouts,
    mean / std (ddof=1, as GRPO normalises) / min / max of the score, solved fraction,
    ``signal`` (mixed, all 0, all 1, all equal, single rollout), ``zero_signal`` and
    ``solved_signal`` (mixed, all solved, none solved).

    ``scores`` is :func:`dashboard.tuning.scores` of the same table (current options)."""
    score = scores["score"].to_numpy(dtype=np.float64)
    solved = scores["solved"].to_numpy(dtype=bool)
    reduced = _reduce(grouping, score, solved)
    signal, solved_signal = _signals(reduced, tol)
    out = grouping.groups.copy()
    for key in ("scored", "mean", "std", "min", "max", "solved_fraction"):
        out[key] = reduced[key]
    out["signal"] = signal
    out["zero_signal"] = np.isin(signal, (SIGNAL_ALL_ZERO, SIGNAL_ALL_ONE, SIGNAL_ALL_EQUAL))
    out["solved_signal"] = solved_signal
    return out


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def signal_summary(stats: pd.DataFrame) -> dict[str, Any]:
    """Counts and shares over the groups with at least two scored rollouts."""
    scored = stats["scored"].to_numpy() if len(stats) else np.zeros(0, dtype=np.int64)
    multi = scored >= 2
    signal = stats["signal"].to_numpy() if len(stats) else np.zeros(0, dtype=object)
    solved = stats["solved_signal"].to_numpy() if len(stats) else np.zeros(0, dtype=object)
    groups = int(multi.sum())
    counts = {
        "zero_signal": int(np.isin(signal, (SIGNAL_ALL_ZERO, SIGNAL_ALL_ONE, SIGNAL_ALL_EQUAL)).sum()),
        "all_zero": int((signal == SIGNAL_ALL_ZERO).sum()),
        "all_one": int((signal == SIGNAL_ALL_ONE).sum()),
        "all_equal": int((signal == SIGNAL_ALL_EQUAL).sum()),
        "none_solved": int((solved == SOLVED_NONE).sum()),
        "all_solved": int((solved == SOLVED_ALL).sum()),
    }
    out: dict[str, Any] = {
        "groups": len(stats),
        "multi_groups": groups,
        "single_groups": int((scored == 1).sum()),
        "rollouts": int(stats["size"].sum()) if len(stats) else 0,
        **counts,
        "uniform_solved": counts["none_solved"] + counts["all_solved"],
    }
    for key in ("zero_signal", "all_zero", "all_one", "all_equal", "none_solved", "all_solved", "uniform_solved"):
        out[f"{key}_share"] = _share(out[key], groups)
    return out


def per_run_step(stats: pd.DataFrame) -> pd.DataFrame:
    """Per run and step: groups with several rollouts, their mean size, and the no-signal shares."""
    columns = ["run", "step", "groups", "mean_size", "zero_signal_share", "all_zero_share", "all_one_share",
               "uniform_solved_share", "mean_std"]
    multi = stats[stats["scored"] >= 2] if len(stats) else stats
    if not len(multi):
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(
        {
            "run": multi["run"].astype(str).to_numpy(),
            "step": multi["step"].astype("float64").to_numpy(),
            "size": multi["scored"].to_numpy(dtype=np.float64),
            "zero": multi["zero_signal"].to_numpy(dtype=np.float64),
            "all0": (multi["signal"] == SIGNAL_ALL_ZERO).to_numpy(dtype=np.float64),
            "all1": (multi["signal"] == SIGNAL_ALL_ONE).to_numpy(dtype=np.float64),
            "uniform": multi["solved_signal"].isin([SOLVED_ALL, SOLVED_NONE]).to_numpy(dtype=np.float64),
            "std": multi["std"].to_numpy(dtype=np.float64),
        }
    )
    grouped = frame.groupby(["run", "step"], dropna=False, sort=True)
    out = pd.DataFrame(
        {
            "groups": grouped.size(),
            "mean_size": grouped["size"].mean(),
            "zero_signal_share": grouped["zero"].mean(),
            "all_zero_share": grouped["all0"].mean(),
            "all_one_share": grouped["all1"].mean(),
            "uniform_solved_share": grouped["uniform"].mean(),
            "mean_std": grouped["std"].mean(),
        }
    ).reset_index()
    out["step"] = out["step"].astype("Int64")
    return out[columns]


def group_rollouts(table: pd.DataFrame, scores: pd.DataFrame, grouping: Grouping, group: int) -> pd.DataFrame:
    """The rollouts of one group (index row id), by sample index when there is one."""
    ids = grouping.rows_of(group)
    cols = [c for c in ("sample_index", "step", "format_reason", "answer_reward", "annotation_reward")
            if c in table.columns]
    frame = table.loc[ids, cols].copy()
    frame.insert(1 if "sample_index" in cols else 0, "score", scores.loc[ids, "score"].to_numpy())
    frame.insert(2 if "sample_index" in cols else 1, "solved", scores.loc[ids, "solved"].to_numpy())
    if "sample_index" in frame.columns:
        frame = frame.sort_values("sample_index", kind="stable")
    return frame


# --------------------------------------------------------------------------- no-signal share vs options


def _options_list(table: pd.DataFrame, options_grid: Any, base: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if isinstance(options_grid, pd.DataFrame):
        items: Iterable[Mapping[str, Any]] = options_grid.to_dict("records")
    elif isinstance(options_grid, Mapping):
        items = [options_grid]
    else:
        items = list(options_grid)
    start = dict(base) if base is not None else tuning.scored_options(table)
    out = []
    for item in items:
        merged = {**start, **{k: v for k, v in dict(item).items() if k in tuning.OPTION_KEYS}}
        if isinstance(merged.get("mode"), float) and math.isnan(merged["mode"]):
            merged["mode"] = None  # a DataFrame grid stores None modes as NaN
        problem = tuning.validate(merged)
        if problem:
            raise ValueError(problem)
        out.append(tuning.normalised(merged))
    return out


def zero_signal_share(
    table: pd.DataFrame,
    options_grid: Iterable[Mapping[str, Any]] | Mapping[str, Any] | pd.DataFrame,
    *,
    grouping: Grouping | None = None,
    base: Mapping[str, Any] | None = None,
    tol: float = EQUAL_TOL,
) -> pd.DataFrame:
    """The share of GRPO groups with no learning signal under each option set of ``options_grid``.

    ``options_grid``: option dicts as used by the app (keys of
    :data:`dashboard.tuning.OPTION_KEYS`: mode, formula, answer_weight,
    annotation_weight, format_weight, solved_threshold); missing keys come from
    ``base`` (default: the options the table was scored with). A DataFrame with
    those columns works too. Invalid options raise ValueError naming the option.

    One row per option set (:data:`SHARE_COLUMNS`), over groups with at least two
    scored rollouts: ``zero_signal_share`` (all rewards equal: all 0, all 1 or
    another constant; depends on the weights), ``all_zero_share``,
    ``all_one_share``, ``all_equal_share``, and ``uniform_solved_share`` (all
    solved or none solved at ``solved_threshold``: no signal for a binary
    solved reward) split into ``none_solved_share`` / ``all_solved_share``.

    Each distinct weight set is re-weighted once with
    :func:`scoring.runs.reweighting.recompute` (the scorer's own ``recompose``).
    """
    options = _options_list(table, options_grid, base)
    grouping = grouping if grouping is not None else detect_groups(table)
    cache: dict[tuple, np.ndarray] = {}
    records = []
    for opts in options:
        weights = tuple(opts[k] for k in tuning.OPTION_KEYS if k != "solved_threshold")
        score = cache.get(weights)
        if score is None:
            kwargs = tuning.recompute_kwargs(opts)
            kwargs.pop("solved_threshold")
            score = recompute(table, **kwargs, columns=("score",))["score"] if len(table) else np.zeros(0)
            cache[weights] = score
        solved = score >= opts["solved_threshold"]
        reduced = _reduce(grouping, score, solved)
        signal, solved_signal = _signals(reduced, tol)
        groups = int((reduced["scored"] >= 2).sum())
        zero = int(np.isin(signal, (SIGNAL_ALL_ZERO, SIGNAL_ALL_ONE, SIGNAL_ALL_EQUAL)).sum())
        none_solved = int((solved_signal == SOLVED_NONE).sum())
        all_solved = int((solved_signal == SOLVED_ALL).sum())
        records.append(
            {
                **opts,
                "groups": groups,
                "zero_signal": zero,
                "zero_signal_share": _share(zero, groups),
                "all_zero_share": _share(int((signal == SIGNAL_ALL_ZERO).sum()), groups),
                "all_one_share": _share(int((signal == SIGNAL_ALL_ONE).sum()), groups),
                "all_equal_share": _share(int((signal == SIGNAL_ALL_EQUAL).sum()), groups),
                "uniform_solved_share": _share(none_solved + all_solved, groups),
                "none_solved_share": _share(none_solved, groups),
                "all_solved_share": _share(all_solved, groups),
            }
        )
    return pd.DataFrame.from_records(records, columns=SHARE_COLUMNS)


def weight_grid(base: Mapping[str, Any], annotation_shares: Sequence[float] = tuple(np.linspace(0.0, 1.0, 11))) -> list[dict[str, Any]]:
    """``base`` with the annotation weight's share of answer + annotation swept over ``annotation_shares``."""
    return [
        {**base, "answer_weight": round(1.0 - float(s), 10), "annotation_weight": round(float(s), 10)}
        for s in annotation_shares
    ]


def format_weight_grid(base: Mapping[str, Any], format_weights: Sequence[float] = tuple(np.linspace(0.0, 0.5, 6))) -> list[dict[str, Any]]:
    """``base`` with ``format_weight`` swept."""
    return [{**base, "format_weight": round(float(w), 10)} for w in format_weights]


def threshold_grid(base: Mapping[str, Any], thresholds: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.999)) -> list[dict[str, Any]]:
    """``base`` with ``solved_threshold`` swept."""
    return [{**base, "solved_threshold": float(t)} for t in thresholds]


# --------------------------------------------------------------------------- figures


def _layout(fig, title: str, height: int = 300):
    fig.update_layout(
        title={"text": plotly_text(title), "x": 0.0, "xanchor": "left", "font": {"size": 15}},
        height=height, margin={"l": 40, "r": 16, "t": 48, "b": 36},
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_yaxes(range=[-0.02, 1.02], tickformat=".0%")
    return fig


def steps_figure(per_step: pd.DataFrame):
    """No-signal share of groups by step, one line per run (a :func:`per_run_step` frame)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    frame = per_step.dropna(subset=["step"])
    for run in dict.fromkeys(frame["run"]):
        part = frame[frame["run"] == run]
        name = plotly_text(run)
        fig.add_trace(go.Scatter(x=part["step"].astype(float), y=part["zero_signal_share"], mode="lines+markers",
                                 name=f"{name}: all rewards equal"))
        fig.add_trace(go.Scatter(x=part["step"].astype(float), y=part["uniform_solved_share"], mode="lines+markers",
                                 line={"dash": "dot"}, name=f"{name}: all / none solved"))
    return _layout(fig, "Groups with no learning signal, by step")


def sweep_figure(shares: pd.DataFrame, *, x: str, title: str, current: float | None = None):
    """Shares of no-signal groups against one swept option (a :func:`zero_signal_share` frame)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for column, label, dash in (
        ("zero_signal_share", "all rewards equal (no GRPO signal)", "solid"),
        ("uniform_solved_share", "all solved or none solved", "dot"),
    ):
        fig.add_trace(go.Scatter(x=shares[x], y=shares[column], mode="lines+markers", name=label,
                                 line={"dash": dash}))
    if current is not None:
        fig.add_vline(x=current, line_dash="dash", line_color="#c92a2a", line_width=1.2,
                      annotation_text="current", annotation_position="top")
    return _layout(fig, title)


__all__ = [
    "Grouping",
    "detect_groups",
    "format_weight_grid",
    "group_rollouts",
    "group_stats",
    "per_run_step",
    "steps_figure",
    "sweep_figure",
    "signal_summary",
    "threshold_grid",
    "weight_grid",
    "zero_signal_share",
]
