"""One training row, scored exactly as ``rolloutscope score`` scores the same row of a dump.

The adapters (:mod:`scoring.integrations.verl`, :mod:`scoring.integrations.trl`) turn what a trainer
hands its reward function into the record the trainer's dump would hold, read that record with the
batch scorer's own reader (:class:`~scoring.rollouts.layouts.RowReader`), and score it with the
options the batch scorer resolves for such a row: the row's own output mode, image size and
half-life unless an option overrides them, the run-wide weights, formula and format weight, and a
simple scorer for a row whose ground truth is a plain answer. The reward the trainer optimised and
the one the dashboard recomputes from the dump are then one number, to the last bit.

Imports are absolute on purpose: verl loads ``verl.py`` from its path, outside this package.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from scoring import TraceEvaluation, explain_trace_response
from scoring.rollouts import (
    MISSING,
    SIMPLE_ROW,
    ColumnMapping,
    ImageResolver,
    Row,
    RowProblem,
    RowReader,
    Scopes,
    detect_layout,
    first_image,
    get_path,
)
from scoring.runs import BatchOptions, score_simple_row
from scoring.verifier import MODE_ANSWER

LOG = logging.getLogger("scoring.integrations")

#: Options of the trace verifier, with the batch scorer's names and meaning (``BatchOptions``).
TRACE_OPTIONS = (
    "answer_weight",
    "annotation_weight",
    "format_weight",
    "trace_reward_mode",
    "trace_annotation_reward_formula",
    "trace_answer_scoring",
    "point_half_life_px",
    "read_image_sizes",
)
#: Options of the simple scorers (``BatchOptions``); ``scorer`` names the one for plain answers.
SIMPLE_OPTIONS = ("scorer", "gold_key", "normalise", "tolerance", "reading")
#: Options only the adapters have: a simple scorer per data source, and where relative image
#: paths are read from (default: the current folder).
ADAPTER_OPTIONS = ("scorers", "image_root")
OPTIONS = (*TRACE_OPTIONS, *SIMPLE_OPTIONS, *ADAPTER_OPTIONS)
#: ``scorer`` values that choose no simple scorer.
NO_SIMPLE_SCORER = (None, "", "trace")
#: Trace-verifier components each adapter reports, under the flat result's names.
COMPONENTS = ("overall", "accuracy", "answer_reward", "annotation_reward", "format")
#: The batch scorer's trace-verifier marker in its ``scorer`` column.
TRACE = "trace"

#: Where the trace ground-truth keys are looked for first (detection looks for either).
_TRACE_KEYS = ("answer_gt", "reward_contract")


class TrainingRowError(ValueError):
    """A training row whose ground truth cannot be scored; the message names the row and field."""


@dataclass(frozen=True, slots=True)
class RowScore:
    """What one row scored: ``score`` is the overall (trace rows) or the simple score.

    ``evaluation`` is the trace verifier's full explanation (None for a simple-scorer row)."""

    score: float
    scorer: str
    evaluation: TraceEvaluation | None

    def component(self, name: str) -> float | None:
        """A component of :data:`COMPONENTS`; None where it does not apply (a simple-scorer row has
        only ``overall`` and ``accuracy``, both its score)."""
        evaluation = self.evaluation
        if evaluation is None:
            return self.score if name in ("overall", "accuracy") else None
        if name == "format":
            return evaluation.format_score
        if name == "accuracy":
            return evaluation.answer_reward
        return getattr(evaluation, name)

    @property
    def format_reason(self) -> str | None:
        """Why the format check passed or failed (``ok``, ``text_after_object``...); None for a
        simple-scorer row."""
        return None if self.evaluation is None else self.evaluation.format_reason


class TrainingRowScorer:
    """Reads and scores records of one layout (``verl`` or ``trl``) under fixed options.

    ``options`` are :data:`OPTIONS`; anything else is a ValueError naming it, so a misspelt weight
    never trains silently with the default. Build one through :func:`scorer_for` (cached).
    """

    def __init__(self, layout: str, options: Mapping[str, Any]):
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ValueError(
                f"unknown option(s) {', '.join(map(repr, unknown))}; options are: {', '.join(OPTIONS)}"
            )
        given = {key: options[key] for key in (*TRACE_OPTIONS, *SIMPLE_OPTIONS[1:]) if key in options}
        self.options = BatchOptions(**given).validated()
        self.run_options = self.options.scorer_options()
        default = options.get("scorer")
        self.default_scorer = None if default in NO_SIMPLE_SCORER else default
        by_source = options.get("scorers") or {}
        if not isinstance(by_source, Mapping):
            raise ValueError(f"scorers must map a data source to a simple scorer name, got {by_source!r}")
        self.scorers_by_source = {str(source): name for source, name in by_source.items()}
        self._simple_rewards: dict[str, Callable[[Any, Any], float]] = {}
        if self.default_scorer is not None:
            self.simple_reward(self.default_scorer, "scorer")
        for source, name in self.scorers_by_source.items():
            self.simple_reward(name, f"scorers[{source!r}]")
        image_root = options.get("image_root")
        self.resolver = ImageResolver(image_root)
        # what a layout's reader needs does not depend on the rows: a record holding only the
        # response is enough to detect it (``joined``: no ground truth is expected there)
        response_column = {"verl": "output", "trl": "completion"}[layout]
        detected = detect_layout(
            [{response_column: ""}], mapping=ColumnMapping(layout=layout), simple=True, joined=True
        )
        self.reader = RowReader(
            detected,
            base_dir=str(image_root) if image_root else ".",
            run=None,
            simple=True,
            gold_key=self.options.gold_key,
        )
        self._gold_paths = (f"meta.{self.options.gold_key}", *detected.paths["gold"])

    def simple_reward(self, name: Any, option: str = "scorer") -> Callable[[Any, Any], float]:
        """The simple scorer called ``name``, with the run's simple-scorer options."""
        reward = self._simple_rewards.get(name) if isinstance(name, str) else None
        if reward is None:
            if name in NO_SIMPLE_SCORER or not isinstance(name, str):
                raise ValueError(f"{option} must name a simple scorer, got {name!r}")
            try:
                reward = replace(self.options, scorer=name).validated().simple_factory()
            except ValueError as exc:
                raise ValueError(f"{option}: {exc}") from None
            self._simple_rewards[name] = reward
        return reward

    # -- reading -------------------------------------------------------------
    def holds_ground_truth(self, record: Mapping) -> bool:
        """Whether the record holds trace ground truth or a plain answer where the reader looks."""
        if Scopes(record).find_any(_TRACE_KEYS)[0] is not MISSING:
            return True
        for path in self._gold_paths:
            value = get_path(record, path)
            if value is not MISSING and value is not None:
                return True
        return False

    def read(self, record: Mapping, where: str) -> Row:
        """The record as the batch scorer reads it; TrainingRowError naming ``where`` and the field."""
        try:
            (row,) = self.reader.read(record, 0)
        except RowProblem as problem:
            raise _row_error(where, problem) from None
        for field, reason in row.warnings:
            LOG.warning("%s, field '%s': %s", where, field, reason)
        return row

    def scorer_name(self, row: Row, data_source: Any, extra_info: Any) -> str | None:
        """The simple scorer for a plain-answer row: ``extra_info["scorer"]``, else the one for its
        data source, else the ``scorer`` option; None when none is chosen."""
        if isinstance(extra_info, Mapping) and extra_info.get("scorer") not in NO_SIMPLE_SCORER:
            return extra_info["scorer"]
        if data_source is not None and str(data_source) in self.scorers_by_source:
            return self.scorers_by_source[str(data_source)]
        return self.default_scorer

    # -- scoring -------------------------------------------------------------
    def score(self, row: Row, where: str, scorer_name: str | None = None) -> RowScore:
        """Score a read row: a trace row by the verifier, a plain-answer row by ``scorer_name``."""
        try:
            if row.kind == SIMPLE_ROW:
                if scorer_name is None:
                    raise RowProblem(
                        None, "holds a plain answer, not trace ground truth, and no simple scorer is chosen"
                    )
                return RowScore(self._simple_score(row, scorer_name, where), scorer_name, None)
            evaluation = explain_trace_response(**self.trace_arguments(row, where))
        except RowProblem as problem:
            raise _row_error(where, problem) from None
        except ValueError as exc:  # an option the row brings that the verifier refuses
            raise TrainingRowError(f"{where}: invalid scorer input ({exc})") from None
        return RowScore(evaluation.overall, TRACE, evaluation)

    def trace_arguments(self, row: Row, where: str) -> dict[str, Any]:
        """The ``score_trace_response`` keywords the batch scorer gives this row."""
        options = self.options
        mode = (
            options.trace_reward_mode if options.trace_reward_mode is not None else (row.mode or MODE_ANSWER)
        )
        half_life = options.point_half_life_px if options.point_half_life_px is not None else row.half_life
        size = row.image_size
        if size is None and row.image is not None and options.read_image_sizes:
            size = self._image_size(row, where)
        return {
            "response": row.response,
            "answer_gt": row.answer_gt,
            "annotation_gt": row.annotation_gt,
            "reward_contract": row.reward_contract,
            "image_size": [size[0], size[1]] if size is not None else None,
            "point_half_life_px": half_life,
            "trace_reward_mode": mode,
            **self.run_options,
        }

    def _image_size(self, row: Row, where: str) -> tuple[float, float] | None:
        """The size of the row's image: a decoded image's own (PIL, as TRL passes a dataset's
        images), else read from the file's header as the batch scorer reads it."""
        image = first_image(row.image)
        width, height = getattr(image, "width", None), getattr(image, "height", None)
        if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
            return width, height
        info = self.resolver.resolve(row.image, base_dirs=row.image_bases, need_size=True)
        if info.warning:
            LOG.warning("%s, field 'image': %s; scored without the image size", where, info.warning)
        return (info.width, info.height) if info.width else None

    def _simple_score(self, row: Row, scorer_name: str, where: str) -> float:
        return score_simple_row(self.simple_reward(scorer_name), row, where, self.options.gold_key)


def _row_error(where: str, problem: RowProblem) -> TrainingRowError:
    field = f", field '{problem.field}'" if problem.field else ""
    return TrainingRowError(f"{where}{field}: {problem.reason}")


def _frozen(value: Any) -> Any:
    """A hashable stand-in for an option value (mappings and lists from a config)."""
    if isinstance(value, Mapping):
        return ("mapping", tuple(sorted((str(k), _frozen(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("sequence", tuple(_frozen(v) for v in value))
    hash(value)
    return (type(value).__name__, value)


#: Scorers built by :func:`scorer_for`, by layout and options.
_SCORERS: dict[tuple, TrainingRowScorer] = {}
_SCORERS_MAX = 32


def scorer_for(layout: str, options: Mapping[str, Any]) -> TrainingRowScorer:
    """The :class:`TrainingRowScorer` for these options, built once per distinct set."""
    options = {key: dict(value) if isinstance(value, Mapping) else value for key, value in options.items()}
    try:
        key = (layout, tuple(sorted((name, _frozen(value)) for name, value in options.items())))
    except TypeError:  # an unhashable value: built afresh (TrainingRowScorer names what is wrong)
        return TrainingRowScorer(layout, options)
    scorer = _SCORERS.get(key)
    if scorer is None:
        scorer = TrainingRowScorer(layout, options)
        if len(_SCORERS) >= _SCORERS_MAX:
            _SCORERS.clear()
        _SCORERS[key] = scorer
    return scorer
