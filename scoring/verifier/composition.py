"""Scorer options and the composition of answer, annotation and format into one reward.

:func:`compose` is written once over "numbers": it takes Python floats or numpy
arrays alike, so the per-response scorer and the vectorised re-weighting of a
whole run execute the very same floating-point operations and cannot disagree.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .spec import (
    ANSWER_SCORING_ALIASES,
    ANSWER_SCORING_EXACT_JSON,
    DEFAULT_ANNOTATION_WEIGHT,
    DEFAULT_ANSWER_WEIGHT,
    DEFAULT_FORMAT_WEIGHT,
    FORMULA_ADDITIVE,
    FORMULA_ALIASES,
    FORMULA_GATED,
    MODE_ALIASES,
    MODE_ANSWER,
    MODE_ANSWER_AND_ANNOTATION,
)


@dataclass(frozen=True, slots=True)
class ScoringOptions:
    """Validated, canonical scorer options (weights already normalised by their sum)."""

    mode: str = MODE_ANSWER_AND_ANNOTATION
    formula: str = FORMULA_GATED
    answer_weight: float = DEFAULT_ANSWER_WEIGHT
    annotation_weight: float = DEFAULT_ANNOTATION_WEIGHT
    format_weight: float = DEFAULT_FORMAT_WEIGHT
    answer_scoring: str = ANSWER_SCORING_EXACT_JSON
    point_half_life_px: float | None = None


def _name(option: str, value: Any, aliases: dict[str, str], *, none_means: str) -> str:
    if value is None:
        return none_means
    if not isinstance(value, str):
        raise ValueError(f"{option} must be a string or None, got {value!r}")
    key = value.strip().lower()
    if key not in aliases:
        choices = ", ".join(sorted(k for k in aliases if k))
        raise ValueError(f"{option}={value!r} is not one of: {choices}")
    return aliases[key]


def _number(option: str, value: Any) -> float:
    """A float from a number or a numeric string; bool and None are not numbers here."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{option} must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise ValueError(f"{option} must be a number, got {value!r}") from None
    if isinstance(value, (int, float, np.integer, np.floating)):
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"{option} must be a finite number, got {value!r}") from None
    raise ValueError(f"{option} must be a number, got {value!r}")


def _weight(option: str, value: Any) -> float:
    number = _number(option, value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{option} must be a finite number >= 0, got {value!r}")
    return number


def resolve_mode(value: Any) -> str:
    """Canonical output mode; ``None``, ``""`` and ``"auto"`` mean answer mode."""
    return _name("trace_reward_mode", value, MODE_ALIASES, none_means=MODE_ANSWER)


def resolve_options(
    *,
    trace_reward_mode: Any = MODE_ANSWER_AND_ANNOTATION,
    trace_annotation_reward_formula: Any = FORMULA_GATED,
    trace_answer_scoring: Any = ANSWER_SCORING_EXACT_JSON,
    answer_weight: Any = DEFAULT_ANSWER_WEIGHT,
    annotation_weight: Any = DEFAULT_ANNOTATION_WEIGHT,
    format_weight: Any = DEFAULT_FORMAT_WEIGHT,
    point_half_life_px: Any = None,
) -> ScoringOptions:
    """Validate every option whatever the mode; invalid ones raise ValueError naming the option.

    Results are cached per distinct (hashable) set of raw options: a training run
    scores millions of responses with a handful of option sets.
    """
    raw = (
        trace_reward_mode,
        trace_annotation_reward_formula,
        trace_answer_scoring,
        answer_weight,
        annotation_weight,
        format_weight,
        point_half_life_px,
    )
    try:
        return _resolve_options_cached(*raw)
    except TypeError:  # an unhashable option value: validate without the cache
        return _resolve_options(*raw)


#: ``typed``: True, 1 and 1.0 hash alike but are not the same option value.
_resolve_options_cached = functools.lru_cache(maxsize=1024, typed=True)(lambda *raw: _resolve_options(*raw))


def _resolve_options(
    trace_reward_mode: Any,
    trace_annotation_reward_formula: Any,
    trace_answer_scoring: Any,
    answer_weight: Any,
    annotation_weight: Any,
    format_weight: Any,
    point_half_life_px: Any,
) -> ScoringOptions:
    mode = resolve_mode(trace_reward_mode)
    formula = _name(
        "trace_annotation_reward_formula",
        trace_annotation_reward_formula,
        FORMULA_ALIASES,
        none_means=FORMULA_GATED,
    )
    answer_scoring = _name(
        "trace_answer_scoring", trace_answer_scoring, ANSWER_SCORING_ALIASES, none_means=ANSWER_SCORING_EXACT_JSON
    )
    raw_answer_weight = _weight("answer_weight", answer_weight)
    raw_annotation_weight = _weight("annotation_weight", annotation_weight)
    total = raw_answer_weight + raw_annotation_weight
    if not total > 0:
        raise ValueError(
            f"answer_weight + annotation_weight must be > 0, got {answer_weight!r} + {annotation_weight!r}"
        )
    blend = _number("format_weight", format_weight)
    if not 0.0 <= blend <= 1.0:
        raise ValueError(f"format_weight must be in [0, 1], got {format_weight!r}")
    half_life = None
    if point_half_life_px is not None:
        half_life = _number("point_half_life_px", point_half_life_px)
        if not (math.isfinite(half_life) and half_life > 0):
            raise ValueError(f"point_half_life_px must be a finite number > 0, got {point_half_life_px!r}")
    return ScoringOptions(
        mode=mode,
        formula=formula,
        answer_weight=raw_answer_weight / total,
        annotation_weight=raw_annotation_weight / total,
        format_weight=blend,
        answer_scoring=answer_scoring,
        point_half_life_px=half_life,
    )


def _at_most_one(reward):
    """Rewards are convex combinations of [0, 1] values, but the normalised weights can sum
    to one ulp above 1 (e.g. 1.024 and 4.3226 give 1.0000000000000002): clip that ulp, so
    the [0, 1] contract holds exactly (floats or arrays)."""
    if isinstance(reward, np.ndarray):
        return np.minimum(reward, 1.0)
    return 1.0 if reward > 1.0 else reward  # (NaN stays NaN, as np.minimum keeps it)


def task_reward(answer_reward, annotation_reward, mode: str, options: ScoringOptions):
    """Answer/annotation reward before the format blend (floats or arrays)."""
    if mode == MODE_ANSWER:
        return answer_reward * 1.0
    if options.formula == FORMULA_ADDITIVE:
        task = options.answer_weight * answer_reward + options.annotation_weight * annotation_reward
    else:
        task = answer_reward * (options.answer_weight + options.annotation_weight * annotation_reward)
    return _at_most_one(task)


def overall_reward(task, format_score, options: ScoringOptions):
    """``(1 - format_weight) * task_reward + format_weight * format``."""
    return _at_most_one((1.0 - options.format_weight) * task + options.format_weight * format_score)


def zero_reward(task):
    """1.0 where the task reward is zero (independent of any format reward)."""
    if isinstance(task, np.ndarray):
        return (task <= 0.0).astype(np.float64)
    return 1.0 if task <= 0.0 else 0.0


def compose(answer_reward, annotation_reward, format_score, mode: str, options: ScoringOptions):
    """(task_reward, overall, zero_reward) for one response or, vectorised, for many."""
    task = task_reward(answer_reward, annotation_reward, mode, options)
    return task, overall_reward(task, format_score, options), zero_reward(task)


def recompose(
    answer_reward,
    annotation_reward,
    format_score,
    *,
    row_modes=None,
    answer_only=None,
    trace_reward_mode: Any = None,
    trace_annotation_reward_formula: Any = FORMULA_GATED,
    answer_weight: Any = DEFAULT_ANSWER_WEIGHT,
    annotation_weight: Any = DEFAULT_ANNOTATION_WEIGHT,
    format_weight: Any = DEFAULT_FORMAT_WEIGHT,
    outputs: Any = ("task_reward", "overall", "zero_reward"),
) -> dict[str, np.ndarray]:
    """Re-weight a whole run without rescoring: numpy arrays in, arrays out.

    ``row_modes`` (canonical mode per row), or ``answer_only`` (a boolean mask: True where a
    row was scored in answer mode, the others in answer-and-annotation mode), applies when
    ``trace_reward_mode`` is None, so each row keeps the output mode it was scored under: the
    mode decides only the task reward, and the format blend is the same for every row.
    ``outputs``: the arrays wanted (a ten-million-row run need not fill the ones it drops).
    """
    options = resolve_options(
        trace_reward_mode=trace_reward_mode if trace_reward_mode is not None else MODE_ANSWER_AND_ANNOTATION,
        trace_annotation_reward_formula=trace_annotation_reward_formula,
        answer_weight=answer_weight,
        annotation_weight=annotation_weight,
        format_weight=format_weight,
    )
    answer = np.asarray(answer_reward, dtype=np.float64)
    annotation = np.asarray(annotation_reward, dtype=np.float64)
    fmt = np.asarray(format_score, dtype=np.float64)
    if trace_reward_mode is None and row_modes is not None and answer_only is None:
        answer_only = np.asarray(row_modes) == MODE_ANSWER
    if trace_reward_mode is not None or answer_only is None:
        task = task_reward(answer, annotation, options.mode, options)
    else:
        answer_only = np.asarray(answer_only, dtype=bool)
        if answer_only.all():
            task = task_reward(answer, annotation, MODE_ANSWER, options)
        elif not answer_only.any():
            task = task_reward(answer, annotation, MODE_ANSWER_AND_ANNOTATION, options)
        else:
            task = np.where(
                answer_only,
                task_reward(answer, annotation, MODE_ANSWER, options),
                task_reward(answer, annotation, MODE_ANSWER_AND_ANNOTATION, options),
            )
    out = {"task_reward": task}
    if "overall" in outputs:
        out["overall"] = overall_reward(task, fmt, options)
    if "zero_reward" in outputs:
        out["zero_reward"] = zero_reward(task)
    return out
