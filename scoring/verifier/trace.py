"""The trace verifier: one evaluation per response, two views of it.

:func:`evaluate` runs the layers once (extraction -> typed parsing -> matching
-> composition) and returns a frozen :class:`TraceEvaluation`. The training-log
view, :meth:`TraceEvaluation.as_flat_dict`, and the dashboard's explanation are
both read off that one object, so they cannot disagree.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from .answers import ANSWER_FROM_MAPPING, ANSWER_FROM_WHOLE_RESPONSE, AnswerResult, score_answer
from .composition import ScoringOptions, compose, resolve_options
from .contracts import ContractCheck, check_contract, declared_type
from .extraction import Extraction, extract
from .geometry import (
    AnnotationParseError,
    ParsedAnnotation,
    half_life_for_size,
    parse_annotation,
    resolve_image_size,
)
from .matching import MatchResult, flat_diagnostics, match_annotations
from .records import new_record
from .spec import (
    ANNOTATION_KEY,
    ANNOTATION_TYPES,
    ANSWER_KEY,
    FORMULA_GATED,
    MODE_ANSWER,
    MODE_ANSWER_AND_ANNOTATION,
)

_ONE_HOT_KEY = {t: f"annotation_type_{t}" for t in ANNOTATION_TYPES}

#: The flat result's fixed keys, in the order of scoring-behaviour.md.
_FIXED_KEYS = (
    "overall", "format", "accuracy", "answer_reward", "annotation_reward",
    "task_reward_raw", "task_reward_effective", "task_reward_gated", "format_weight",
    "trace_reward_mode_answer", "trace_reward_mode_answer_only", "trace_reward_mode_answer_and_annotation",
    "trace_answer_scoring_exact_json", "trace_answer_scoring_legacy_strict",
    "trace_annotation_reward_formula_gated", "trace_annotation_reward_formula_additive",
    "trace_answer_weight", "trace_annotation_weight",
    "format_structure_ok", "format_json_ok", "format_schema_ok",
    "answer_parse_ok", "annotation_parse_ok", "json_found", "zero_reward", "trace_reward",
)
#: Every key of the flat result that every response has, in order: the fixed keys, then the
#: one-hot of the declared annotation type. Diagnostics (matching.DIAGNOSTIC_LAYOUTS) follow.
FLAT_KEYS: tuple[str, ...] = (*_FIXED_KEYS, *_ONE_HOT_KEY.values())
#: The flat keys whose values vary from response to response, in the order of
#: :meth:`TraceEvaluation.flat_parts`' values; every other key of :data:`FLAT_KEYS` is set by the
#: options and the declared annotation type alone (the template).
RESPONSE_KEYS: tuple[str, ...] = (
    "overall", "format", "accuracy", "answer_reward", "annotation_reward",
    "task_reward_raw", "task_reward_effective", "task_reward_gated",
    "format_structure_ok", "format_json_ok", "format_schema_ok",
    "answer_parse_ok", "annotation_parse_ok", "json_found", "zero_reward",
)

HALF_LIFE_EXPLICIT = "explicit"
HALF_LIFE_IMAGE_SIZE = "image_size"
HALF_LIFE_DEFAULT = "default"


class AnnotationResult(NamedTuple):
    """Why the annotation scored what it did: contract, parsed geometry, pairings."""

    reward: float
    parse_ok: bool
    scored: bool
    annotation_type: str | None
    reason: str  # '' when parsed and scored; else why not
    contract: ContractCheck
    predicted: ParsedAnnotation | None
    ground_truth: ParsedAnnotation | None
    match: MatchResult | None
    half_life_px: float
    half_life_source: str


class TraceEvaluation(NamedTuple):
    """Everything :func:`score_trace_response` knows about one response."""

    options: ScoringOptions
    extraction: Extraction
    answer: AnswerResult
    annotation: AnnotationResult
    image_size: tuple[float, float] | None
    answer_reward: float
    annotation_reward: float
    format_score: float
    task_reward: float
    overall: float
    zero_reward: float

    # Convenience views used by tables and the dashboard.
    @property
    def format_reason(self) -> str:
        return self.extraction.format_reason

    @property
    def recovered_source(self) -> str:
        return self.extraction.recovered_source

    @property
    def recovered_text(self) -> str | None:
        return self.extraction.recovered_text

    @property
    def annotation_type(self) -> str | None:
        return self.annotation.annotation_type

    @property
    def annotation_reason(self) -> str:
        return self.annotation.reason

    def flat_parts(self) -> tuple[dict[str, float], tuple[float, ...], tuple[str, ...], tuple[float, ...]]:
        """The flat result in four parts: ``(template, values, diagnostic keys, diagnostic values)``.

        ``template`` holds every key of :data:`FLAT_KEYS` in order, with the values the options
        and the declared annotation type fix (shared between responses: do not modify it);
        ``values`` are those of :data:`RESPONSE_KEYS`; the diagnostics (one of
        ``matching.DIAGNOSTIC_LAYOUTS``, both empty unless the annotation parsed) come last.
        :meth:`as_flat_dict` puts them together one response at a time, tables a column at a time.
        """
        (options, extraction, answer, annotation, _, answer_reward, annotation_reward, format_score, task,
         overall, zero) = self  # one unpack instead of attribute lookups: this runs per response
        values = (
            overall, format_score, answer_reward, answer_reward, annotation_reward, task, task, task,
            1.0 if extraction.structure_ok else 0.0,
            1.0 if extraction.json_ok else 0.0,
            1.0 if extraction.schema_ok else 0.0,
            1.0 if answer.parse_ok else 0.0,
            1.0 if annotation.parse_ok else 0.0,
            1.0 if extraction.recovered_mapping is not None else 0.0,
            zero,
        )  # fmt: skip
        template = flat_template(options, annotation.contract.annotation_type)
        if not annotation.parse_ok:
            return template, values, (), ()
        keys, diagnostics = flat_diagnostics(annotation.match, annotation.ground_truth, annotation.half_life_px)
        return template, values, keys, diagnostics

    def as_flat_dict(self) -> dict[str, float]:
        """The training-log view: 38 float keys, plus ``annotation_*`` diagnostics when parsed."""
        template, values, diagnostic_keys, diagnostics = self.flat_parts()
        flat = dict(template)  # a copy of a filled dict is far cheaper than growing a new one
        keys = RESPONSE_KEYS
        for i in range(len(keys)):  # indexes, not zip: the compiled loop is cheaper
            flat[keys[i]] = values[i]
        for i in range(len(diagnostic_keys)):
            flat[diagnostic_keys[i]] = diagnostics[i]
        return flat


#: id(options) -> (options, {declared type: flat template}); options come from resolve_options'
#: cache, so a run meets a handful of them. The entry holds the options object, so its id
#: stays its own.
_TEMPLATES: dict[int, tuple[ScoringOptions, dict[str | None, dict[str, float]]]] = {}
_TEMPLATES_MAX = 256


def flat_template(options: ScoringOptions, declared_type: str | None) -> dict[str, float]:
    """Every key of :data:`FLAT_KEYS` in order, with the values the options and the declared
    annotation type fix; the :data:`RESPONSE_KEYS` hold 0.0. Cached: do not modify it."""
    entry = _TEMPLATES.get(id(options))
    if entry is not None and entry[0] is options:
        template = entry[1].get(declared_type)
        if template is not None:
            return template
    else:
        if len(_TEMPLATES) >= _TEMPLATES_MAX:
            _TEMPLATES.clear()
        entry = _TEMPLATES[id(options)] = (options, {})
    template = entry[1][declared_type] = _new_template(options, declared_type)
    return template


def _new_template(options: ScoringOptions, declared_type: str | None) -> dict[str, float]:
    """Built once per options and declared type (see :func:`flat_template`)."""
    is_answer_mode = 1.0 if options.mode == MODE_ANSWER else 0.0
    gated = 1.0 if options.formula == FORMULA_GATED else 0.0
    template = dict.fromkeys(FLAT_KEYS, 0.0)
    template["format_weight"] = float(options.format_weight)
    template["trace_reward_mode_answer"] = template["trace_reward_mode_answer_only"] = is_answer_mode
    template["trace_reward_mode_answer_and_annotation"] = 1.0 - is_answer_mode
    template["trace_answer_scoring_exact_json"] = 1.0  # answers are always scored as exact JSON
    template["trace_annotation_reward_formula_gated"] = gated
    template["trace_annotation_reward_formula_additive"] = 1.0 - gated
    template["trace_answer_weight"] = float(options.answer_weight)
    template["trace_annotation_weight"] = float(options.annotation_weight)
    template["trace_reward"] = 1.0  # the trace verifier's constant
    if declared_type is not None:
        template[_ONE_HOT_KEY[declared_type]] = 1.0
    return template


def _half_life(options: ScoringOptions, image_size) -> tuple[float, str]:
    if options.point_half_life_px is not None:
        return options.point_half_life_px, HALF_LIFE_EXPLICIT
    if image_size is not None:
        return half_life_for_size(image_size), HALF_LIFE_IMAGE_SIZE
    return half_life_for_size(None), HALF_LIFE_DEFAULT


def _response_text(response: Any) -> str:
    """A non-string response as text; one that cannot be shown (str() raises) counts as empty."""
    if response is None:
        return ""
    if isinstance(response, str):
        return str(response)  # a str subclass, as a plain str
    try:
        return str(response)
    except Exception:  # the spec: nothing about the response ever raises
        return ""


def _unscored(contract, annotation_type, reason, ground_truth, half_life, half_life_source) -> AnnotationResult:
    """An annotation that earns 0 and why; the ground truth is kept when it parsed, for drawing."""
    return AnnotationResult(
        0.0, False, False, annotation_type, reason, contract, None, ground_truth, None, half_life, half_life_source
    )


class AnnotationTruth(NamedTuple):
    """What scoring an annotation needs of its ground truth and reward contract, worked out once
    (:func:`annotation_truth`): the same for every response scored against them, so a caller
    that scores the samples of one prompt can share it."""

    contract: ContractCheck
    annotation_type: str | None
    ground_truth: ParsedAnnotation | None  # None when the contract or the ground truth is unusable
    problem: str  # '' when the ground truth parsed under a usable contract; else why not


def annotation_truth(annotation_gt: Any, reward_contract: Any) -> AnnotationTruth:
    """The contract check and the parsed ground truth of an annotation. Never raises."""
    contract = check_contract(annotation_gt, reward_contract)
    annotation_type = contract.annotation_type or declared_type(annotation_gt)
    if contract.problem:
        return new_record(AnnotationTruth, (contract, annotation_type, None, contract.problem))
    try:
        ground_truth = parse_annotation(annotation_gt["value"], contract.annotation_type, "ground truth")
    except AnnotationParseError as exc:
        return new_record(AnnotationTruth, (contract, annotation_type, None, str(exc)))
    return new_record(AnnotationTruth, (contract, annotation_type, ground_truth, ""))


def _score_annotation(
    mapping: Mapping | None, truth: AnnotationTruth, half_life: float, half_life_source: str
) -> AnnotationResult:
    contract, annotation_type, ground_truth, problem = truth
    if problem:
        return _unscored(contract, annotation_type, problem, None, half_life, half_life_source)
    predicted_value = mapping.get(ANNOTATION_KEY) if mapping is not None else None
    if predicted_value is None:
        reason = "no annotation in the response"
        return _unscored(contract, annotation_type, reason, ground_truth, half_life, half_life_source)
    try:
        predicted = parse_annotation(predicted_value, contract.annotation_type, "annotation")
    except AnnotationParseError as exc:
        return _unscored(contract, annotation_type, str(exc), ground_truth, half_life, half_life_source)
    match = match_annotations(predicted, ground_truth, half_life)
    return new_record(
        AnnotationResult,
        (
            match.score, True, True, annotation_type, "", contract, predicted, ground_truth, match,
            half_life, half_life_source,
        ),
    )


def evaluate(
    *,
    response: str | None,
    answer_gt: Any,
    annotation_gt: Any,
    reward_contract: Any,
    point_half_life_px: Any = None,
    image_size: Any = None,
    image_sizes: Any = None,
    metadata: Any = None,
    extra_info: Any = None,
    answer_weight: Any = 0.5,
    annotation_weight: Any = 0.5,
    trace_reward_mode: Any = MODE_ANSWER_AND_ANNOTATION,
    trace_answer_scoring: Any = "exact_json",
    trace_annotation_reward_formula: Any = FORMULA_GATED,
    format_weight: Any = 0.0,
    bbox_iou_threshold: Any = None,  # accepted and ignored: old callers pass it
) -> TraceEvaluation:
    """Score one response; only invalid options raise (ValueError naming the option)."""
    del bbox_iou_threshold
    options = resolve_options(
        trace_reward_mode=trace_reward_mode,
        trace_annotation_reward_formula=trace_annotation_reward_formula,
        trace_answer_scoring=trace_answer_scoring,
        answer_weight=answer_weight,
        annotation_weight=annotation_weight,
        format_weight=format_weight,
        point_half_life_px=point_half_life_px,
    )
    return evaluate_resolved(response, answer_gt, annotation_gt, reward_contract, options, image_size, image_sizes,
                             metadata, extra_info)  # fmt: skip


def evaluate_resolved(
    response: str | None,
    answer_gt: Any,
    annotation_gt: Any,
    reward_contract: Any,
    options: ScoringOptions,
    image_size: Any = None,
    image_sizes: Any = None,
    metadata: Any = None,
    extra_info: Any = None,
    truth: AnnotationTruth | None = None,
) -> TraceEvaluation:
    """:func:`evaluate` with its options already resolved (``compose.resolve_options``): what
    :func:`evaluate` runs after validating them, for callers that score many responses under a
    few option sets and resolve each set once. ``truth``: ``annotation_truth(annotation_gt,
    reward_contract)`` when the caller has it already (the samples of one prompt share it).
    Never raises."""
    text = response if type(response) is str else _response_text(response)
    extraction = extract(text, options.mode)
    mapping = extraction.recovered_mapping

    if mapping is not None and mapping.get(ANSWER_KEY) is not None:
        answer = score_answer(mapping[ANSWER_KEY], ANSWER_FROM_MAPPING, answer_gt)
    else:
        answer = score_answer(text, ANSWER_FROM_WHOLE_RESPONSE, answer_gt)

    size = resolve_image_size(image_size, image_sizes, metadata, extra_info)
    half_life, half_life_source = _half_life(options, size)
    if truth is None:
        truth = annotation_truth(annotation_gt, reward_contract)
    annotation = _score_annotation(mapping, truth, half_life, half_life_source)

    format_score = 1.0 if extraction.schema_ok else 0.0
    task, overall, zero = compose(answer.reward, annotation.reward, format_score, options.mode, options)
    return new_record(
        TraceEvaluation,
        (options, extraction, answer, annotation, size, answer.reward, annotation.reward, format_score, task, overall, zero),
    )


@functools.wraps(evaluate)
def explain_trace_response(**kwargs: Any) -> TraceEvaluation:
    """The full explanation of one score (same keyword arguments as :func:`score_trace_response`)."""
    return evaluate(**kwargs)


@functools.wraps(evaluate)
def score_trace_response(**kwargs: Any) -> dict[str, float]:
    """The flat ``dict[str, float]`` for training logs (trace-verifier.txt)."""
    return evaluate(**kwargs).as_flat_dict()


explain_trace_response.__doc__ = "The full explanation of one score: a frozen TraceEvaluation."
score_trace_response.__doc__ = "The flat dict[str, float] for training logs (trace-verifier.txt)."


__all__ = [
    "FLAT_KEYS",
    "RESPONSE_KEYS",
    "AnnotationResult",
    "AnnotationTruth",
    "TraceEvaluation",
    "annotation_truth",
    "evaluate",
    "evaluate_resolved",
    "explain_trace_response",
    "score_trace_response",
]
