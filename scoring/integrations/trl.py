"""TRL reward functions, scoring as ``rolloutscope score`` scores TRL's completions tables.

``GRPOTrainer(reward_funcs=[...])`` calls each function as
``f(prompts=, completions=, completion_ids=, trainer_state=, **columns)`` -- every dataset column
but ``prompt``, one value per completion; recent versions add ``log_extra`` and ``log_metric`` --
and takes a list with one float per completion, ``None`` where the function does not apply. Each
completion is read and scored as the batch scorer reads and scores the same completion joined to
its instance: ground truth from the columns (``answer_gt``, ``annotation_gt``, ``reward_contract``,
``trace_output_mode``, or all of them inside ``gts`` / ``ground_truth`` / ``extra_info`` /
``reward_model``), the image size from ``image_size``, else from the ``image`` / ``images`` column
(a decoded image's own size, or a path's header).

:func:`trace_reward` is the overall score; :func:`answer_reward`, :func:`annotation_reward` and
:func:`format_reward` are its components. Their names are the ones the dashboard reads back from
TRL's completions table (``trace_reward`` -> overall, ``format_reward`` -> format ...).
:class:`TraceRewards` makes the same functions with other options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scoring.integrations.training_rows import RowScore, TrainingRowScorer, scorer_for
from scoring.rollouts import SIMPLE_ROW

#: Keyword arguments GRPOTrainer passes that are not dataset columns.
TRAINER_KWARGS = ("completion_ids", "trainer_state", "log_extra", "log_metric", "environments")
#: The column :func:`trace_reward` adds to TRL's completions table through ``log_extra``.
FORMAT_REASON_COLUMN = "format_reason"


class TraceRewards:
    """Reward functions for ``GRPOTrainer`` sharing one set of options.

    ``options`` are those of the batch scorer (``answer_weight``, ``annotation_weight``,
    ``format_weight``, ``trace_reward_mode``, ``trace_annotation_reward_formula``,
    ``point_half_life_px``, ``scorer`` / ``scorers`` for plain answers, ``gold_key``,
    ``normalise``, ``tolerance``, ``reading``, ``read_image_sizes``) and ``image_root``, where
    relative image paths are read from. The functions share each completion's evaluation within a
    training step, so using several costs about one.
    """

    def __init__(self, **options: Any):
        self.scorer: TrainingRowScorer = scorer_for("trl", options)
        #: the last batch's inputs and scores (see :meth:`score_batch`)
        self._last: tuple[tuple, list[RowScore | None]] | None = None

    def trace_reward(self, prompts=None, completions=None, **kwargs: Any) -> list[float | None]:
        """The overall score (a simple scorer's score for a plain-answer row); None for a row
        without ground truth. Logs each completion's format reason through ``log_extra``."""
        scores = self.score_batch(completions, kwargs)
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra(FORMAT_REASON_COLUMN, [None if s is None else s.format_reason for s in scores])
        return [None if s is None else s.score for s in scores]

    def answer_reward(self, prompts=None, completions=None, **kwargs: Any) -> list[float | None]:
        """The answer's reward (a simple scorer's score for a plain-answer row)."""
        return self._component("accuracy", completions, kwargs)

    def annotation_reward(self, prompts=None, completions=None, **kwargs: Any) -> list[float | None]:
        """The annotation's reward; None for a plain-answer row."""
        return self._component("annotation_reward", completions, kwargs)

    def format_reward(self, prompts=None, completions=None, **kwargs: Any) -> list[float | None]:
        """1.0 when the response ends with the final object the output mode asks for, else 0.0;
        None for a plain-answer row."""
        return self._component("format", completions, kwargs)

    def _component(self, name: str, completions: Sequence[Any] | None, kwargs: Mapping[str, Any]):
        return [None if s is None else s.component(name) for s in self.score_batch(completions, kwargs)]

    def score_batch(
        self, completions: Sequence[Any] | None, kwargs: Mapping[str, Any]
    ) -> list[RowScore | None]:
        """Each completion's :class:`RowScore`, None where the row has no ground truth, or a plain
        answer and no simple scorer. Raises ValueError naming the row and field for ground truth
        that cannot be scored.

        GRPOTrainer hands every reward function of a step the same objects: a call given exactly
        the objects of the previous call (every completion and column value, by identity) reuses
        its scores, so the four functions score each completion once. (A value changed in place
        between two calls, which GRPOTrainer never does, would not be seen.)"""
        if completions is None:
            raise TypeError("completions= is required (GRPOTrainer passes it)")
        columns = dataset_columns(kwargs, len(completions))
        inputs = (
            ("", tuple(completions)),
            *((name, tuple(values)) for name, values in sorted(columns.items())),
        )
        if self._last is not None and _same_objects(self._last[0], inputs):
            return self._last[1]
        scorer = self.scorer
        scores: list[RowScore | None] = []
        for index, completion in enumerate(completions):
            record = {name: values[index] for name, values in columns.items()}
            record["completion"] = completion
            if not scorer.holds_ground_truth(record):
                scores.append(None)
                continue
            where = f"completion {index}"
            row = scorer.read(record, where)
            scorer_name = scorer.scorer_name(row, record.get("data_source"), record.get("extra_info"))
            if row.kind == SIMPLE_ROW and scorer_name is None:
                scores.append(None)  # a plain answer: another reward function's row
                continue
            scores.append(scorer.score(row, where, scorer_name))
        self._last = (inputs, scores)
        return scores

    def functions(self) -> list[Callable[..., list[float | None]]]:
        """The four reward functions, overall first."""
        return [self.trace_reward, self.answer_reward, self.annotation_reward, self.format_reward]


def dataset_columns(kwargs: Mapping[str, Any], count: int) -> dict[str, Sequence[Any]]:
    """The dataset columns among a reward function's keyword arguments: lists (or tuples) of one
    value per completion. Other values -- ``trainer_state``, a hook, whatever a newer trainer adds
    -- are not columns and are left out; a list of another length is an error naming it."""
    columns = {}
    for name, values in kwargs.items():
        if name in TRAINER_KWARGS or not isinstance(values, (list, tuple)):
            continue
        if len(values) != count:
            raise ValueError(f"column {name!r} holds {len(values)} values for {count} completions")
        columns[name] = values
    return columns


def _same_objects(last: tuple, now: tuple) -> bool:
    """Whether two calls' ``(name, values)`` inputs hold the very same objects, in the same places
    (by identity: GRPOTrainer changes nothing between its reward functions)."""
    return len(last) == len(now) and all(
        name == other
        and len(values) == len(others)
        and all(a is b for a, b in zip(values, others, strict=True))
        for (name, values), (other, others) in zip(last, now, strict=True)
    )


_DEFAULT = TraceRewards()
#: The reward functions with the batch scorer's default options.
trace_reward = _DEFAULT.trace_reward
answer_reward = _DEFAULT.answer_reward
annotation_reward = _DEFAULT.annotation_reward
format_reward = _DEFAULT.format_reward

__all__ = [
    "FORMAT_REASON_COLUMN",
    "TRAINER_KWARGS",
    "TraceRewards",
    "annotation_reward",
    "answer_reward",
    "format_reward",
    "trace_reward",
]
