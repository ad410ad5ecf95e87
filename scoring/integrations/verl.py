"""verl's custom reward function, scoring as ``rolloutscope score`` scores verl's dumps.

Point verl at this file (``custom_reward_function.path``, ``.name=compute_score``); options come
from ``custom_reward_function.reward_kwargs``. verl calls

- ``compute_score(data_source, solution_str, ground_truth, extra_info)`` per response (the naive,
  DAPO and reward-loop managers), or
- ``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)`` for a whole batch
  (the batch manager),

and logs every key of a returned dict (``reward_extra_info``) beside ``score``, and dumps them with
each generation. ``ground_truth`` is what the dataset's ``reward_model.ground_truth`` holds and the
dump's ``gts`` keeps: trace ground truth (``answer_gt``, ``annotation_gt``, ``reward_contract``,
``trace_output_mode``, and ``image_size`` / ``point_half_life_px`` when given) as a dict or its
JSON string, or a plain answer for a simple scorer. Each response is read and scored as the batch
scorer reads and scores the dump's row, so the dashboard's *Logged vs recomputed* matches.

verl loads this file by its path, as a module of its own: imports here are absolute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from scoring.integrations.training_rows import TrainingRowError, TrainingRowScorer, scorer_for
from scoring.rollouts import SIMPLE_ROW, RowProblem, as_mapping, clip

#: Keys of the dict :func:`compute_score` returns, and the component each holds. ``acc`` is verl's
#: name for correctness (its validation summary reads it); the others keep the flat result's names.
RESULT_KEYS = {
    "score": "overall",
    "acc": "accuracy",
    "answer_reward": "answer_reward",
    "annotation_reward": "annotation_reward",
    "format": "format",
}
#: Keyword arguments verl's managers pass besides the row's fields; they are not options.
FRAMEWORK_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})


def compute_score(
    data_source: Any = None,
    solution_str: str | None = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    *,
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[str] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> dict[str, float] | list[dict[str, float]]:
    """The score of one response (a dict), or of a batch given as ``solution_strs=`` (a list).

    ``kwargs`` are ``reward_kwargs``: ``answer_weight``, ``annotation_weight``, ``format_weight``,
    ``trace_reward_mode`` (overrides each row's mode), ``trace_annotation_reward_formula``,
    ``point_half_life_px`` (overrides each row's), ``scorer`` (the simple scorer for plain
    answers), ``scorers`` (data source -> simple scorer), ``gold_key``, ``normalise``,
    ``tolerance``, ``reading``, ``image_root`` (where relative image paths are read from) and
    ``read_image_sizes``. The dict holds :data:`RESULT_KEYS`, the same keys for every row (verl
    needs that); a component that does not apply to a plain-answer row is NaN, as in the scored
    table. Raises ValueError for an unknown option and for a row that cannot be scored (no ground
    truth, broken ground truth, a plain answer with no simple scorer), naming the row and field.
    """
    options = {key: value for key, value in kwargs.items() if key not in FRAMEWORK_KWARGS}
    scorer = scorer_for("verl", options)
    if solution_strs is not None:
        if solution_str is not None:
            raise TypeError("pass either solution_str (one response) or solution_strs (a batch), not both")
        count = len(solution_strs)
        sources = _per_row(data_sources, "data_sources", count)
        truths = _per_row(ground_truths, "ground_truths", count)
        extras = _per_row(extra_infos, "extra_infos", count)
        return [
            _score_one(scorer, sources[i], solution_strs[i], truths[i], extras[i], f"row {i} of the batch")
            for i in range(count)
        ]
    return _score_one(scorer, data_source, solution_str, ground_truth, extra_info, "the row")


def _per_row(values: Sequence[Any] | None, name: str, count: int) -> Sequence[Any]:
    if values is None:
        return [None] * count
    if len(values) != count:
        raise ValueError(f"{name} holds {len(values)} values for {count} solution_strs")
    return values


def _score_one(
    scorer: TrainingRowScorer,
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Any,
    where: str,
) -> dict[str, float]:
    if data_source is not None:
        where = f"{where} (data_source {str(data_source)!r})"
    # the record verl's dump holds for this response: ``output``, and the ground truth (dumped as
    # ``gts``; named ``ground_truth`` here so messages name the argument, and both are read alike)
    record = {"output": solution_str, "ground_truth": ground_truth, "extra_info": extra_info}
    if not scorer.holds_ground_truth(record):
        raise TrainingRowError(
            f"{where}, field 'ground_truth': holds neither trace ground truth (answer_gt, reward_contract) "
            f"nor a plain answer (got {clip(repr(ground_truth))})"
        )
    row = scorer.read(record, where)
    scorer_name = scorer.scorer_name(row, data_source, extra_info)
    if row.kind == SIMPLE_ROW and scorer_name is None:
        if isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
            try:  # meant as trace ground truth, most likely: say why it is not
                as_mapping(ground_truth, "ground_truth")
            except RowProblem as problem:
                raise TrainingRowError(f"{where}, field 'ground_truth': {problem.reason}") from None
        raise TrainingRowError(
            f"{where}, field 'ground_truth': holds a plain answer ({clip(repr(ground_truth))}), not trace ground "
            "truth; choose a simple scorer for it in reward_kwargs: scorer=NAME, or scorers={data_source: NAME} "
            "(exact_match, contains, last_number, numeric_close)"
        )
    scored = scorer.score(row, where, scorer_name)
    result = {}
    for key, component in RESULT_KEYS.items():
        value = scored.component(component)
        result[key] = math.nan if value is None else value
    return result


__all__ = ["FRAMEWORK_KWARGS", "RESULT_KEYS", "compute_score"]
