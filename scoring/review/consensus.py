"""Suspected ground-truth errors, from what several rollouts of one instance agree on.

A diagnostic layer above :mod:`scoring.verifier.trace` and :mod:`scoring.review.frames` (no
scorer module imports it). It never changes a score. For every instance that
has several rollouts -- a GRPO group, or the same instance across steps and
runs -- it asks: do most rollouts agree with *each other* and disagree with the
ground truth? If so the ground truth is suspect:

- **answer**: the rollouts whose answer was read (from the final object, or a
  short whole-response answer) vote with their canonical answers (the spec's
  canonical form, :func:`scoring.verifier.answers.canonical_equal`). When the most common
  answer differs from the ground truth and holds at least ``min_support`` votes
  and ``min_agreement`` of them, the instance is an answer suspect.
- **annotation**: the rollouts whose annotation parsed vote with their geometry.
  A rollout *contradicts* the ground truth when some item is unmatched or
  matched below ``item_similarity_max`` (a ground-truth item nobody draws near,
  a drawn item on no ground-truth item: :func:`scoring.verifier.matching.match_annotations`
  pairings). Among the contradicting rollouts, two agree when their predictions
  match each other at ``agree_similarity`` or better (the same matching code,
  prediction against prediction). The prediction agreeing with the most others
  (the medoid) is the consensus; its agreeing rollouts are the support. A
  consensus whose own coordinates point at another frame (:func:`scoring.review.frames.diagnose_geometry`
  with high confidence: fractions of the image, or beyond the image on the 0-1000 grid) is a
  model error, not a ground-truth error, and is dropped.

``confidence`` ranks suspects: the Wilson lower bound of ``support / voters``
(strength of agreement, discounted for small groups), times ``distance``, how
far the consensus is from the ground truth (1 for a different answer; for
geometry ``1 -`` the similarity of its worst item, an unmatched item counting
0), times ``cohesion``, the mean similarity of the agreeing rollouts to the consensus.

Only rows that could change the verdict are re-run: a group is dropped from its
columns alone (vectorised) when too few of its rows got the answer wrong, or
too few scored low enough to contradict any ground-truth item.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..verifier import (
    ANSWER_FROM_MAPPING,
    MAP,
    SEQUENCE,
    SET,
    SET_MAP,
    SINGLE,
    MatchResult,
    ParsedAnnotation,
    Segment,
    Shape,
    TraceEvaluation,
    canonical,
    canonical_equal,
    canonical_text,
    evaluate,
    match_annotations,
    to_plain,
)
from .frames import CONFIDENCE_HIGH, FRAME_OUTSIDE, FRAME_PIXEL, STATUS_CHECKED, diagnose_geometry

KIND_ANSWER, KIND_ANNOTATION = "answer", "annotation"
KINDS: tuple[str, ...] = (KIND_ANSWER, KIND_ANNOTATION)

#: A whole response this short, on one line, counts as an answer vote (``7``, ``B``, ``[2, 0]``).
ATOMIC_ANSWER_MAX_CHARS = 64

#: Columns of :func:`suspects`, in order.
SUSPECT_COLUMNS: tuple[str, ...] = (
    "instance_id", "kind", "support", "voters", "rows", "agreement", "confidence", "consensus", "ground_truth",
    "gt_similarity", "distance", "cohesion", "task_id", "annotation_type", "runs", "example_row", "supporting_rows",
    "group", "detail",
)


@dataclass(frozen=True)
class ConsensusSettings:
    """Thresholds of the consensus rule; the defaults suit groups of 4 to 16 rollouts.

    With 4 rollouts a suspect needs 3 agreeing, with 16 it needs 10.
    """

    #: At least this many rollouts hold the consensus value.
    min_support: int = 3
    #: ... and at least this share of the rollouts that voted (read answer / parsed geometry).
    min_agreement: float = 0.6
    #: Two predictions agree when they match each other at least this well (the annotation score; 0.5 is
    #: the usual "same object" IoU for boxes).
    agree_similarity: float = 0.5
    #: A matched pair below this similarity is a contradiction of that ground-truth item.
    item_similarity_max: float = 0.3
    #: z of the Wilson lower bound used for the agreement part of ``confidence``.
    wilson_z: float = 1.0
    #: Suspects below this confidence are not reported.
    min_confidence: float = 0.0
    #: Columns that split an instance's rows into separate groups (e.g. ``("run", "step")`` for GRPO groups).
    split_by: tuple[str, ...] = ()
    #: Drop an annotation consensus that a coordinate-frame mistake explains.
    skip_frame_errors: bool = True

    def __post_init__(self) -> None:
        if int(self.min_support) < 2:
            raise ValueError(f"min_support must be at least 2, got {self.min_support}")
        for name in ("min_agreement", "agree_similarity", "item_similarity_max", "min_confidence"):
            value = float(getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if not float(self.wilson_z) >= 0.0:
            raise ValueError(f"wilson_z must be >= 0, got {self.wilson_z}")

    def with_(self, **changes: Any) -> ConsensusSettings:
        return replace(self, **changes)


SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ConsensusSettings))


class Vote(NamedTuple):
    """One rollout's vote: its row, and the value it holds (canonical answer or parsed geometry)."""

    row: Any
    value: Any
    key: str  # a canonical text, for order-independent tie-breaks


class Consensus(NamedTuple):
    """The agreeing cluster of one group: the value, its voters and how tight the agreement is."""

    value: Any
    key: str
    support: int
    rows: tuple[Any, ...]
    medoid_row: Any
    cohesion: float


EvaluateRow = Callable[[Mapping[str, Any]], TraceEvaluation]

#: Row columns :func:`scoring.runs.row_kwargs` reads.
_KWARG_COLUMNS = (
    "scorer", "scorer_kwargs", "response", "trace_answer_weight", "trace_annotation_weight", "format_weight",
    "trace_annotation_reward_formula_additive", "option_answer_weight", "option_annotation_weight",
)


def evaluate_table_row(row: Mapping[str, Any]) -> TraceEvaluation:
    """Re-run one scored-table row with the batch table's own recipe."""
    from ..runs import row_kwargs

    return evaluate(**row_kwargs(row))


# --------------------------------------------------------------------------- values


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else float(value)


def shape_value(shape: Shape) -> list:
    """One shape as the JSON the contracts use (boxes ``[x0, y0, x1, y1]``, points ``[x, y]``)."""
    if isinstance(shape, Segment):
        return [[_number(shape.start.x), _number(shape.start.y)], [_number(shape.end.x), _number(shape.end.y)]]
    return [_number(v) for v in shape]


def annotation_value(parsed: ParsedAnnotation) -> Any:
    """A parsed annotation back as the value of its declared type (the layout ``annotation_gt.value`` uses)."""
    collection = parsed.collection
    if collection == SINGLE:
        return shape_value(parsed.groups[0][1][0])
    if collection in (SET, SEQUENCE):
        return [shape_value(s) for s in parsed.groups[0][1]] if parsed.groups else []
    if collection == MAP:
        return {key: shape_value(group[0]) for key, group in parsed.groups}
    return {key: [shape_value(s) for s in group] for key, group in parsed.groups}


def value_text(value: Any) -> str:
    """Compact, key-sorted JSON (the CSV and table form of a consensus or ground-truth value)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr)


def wilson_lower(successes: int, total: int, z: float) -> float:
    """Lower bound of the Wilson score interval of ``successes / total`` (0 for no trials)."""
    if total <= 0:
        return 0.0
    p = successes / total
    z2 = z * z
    centre = p + z2 / (2 * total)
    margin = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    return max(0.0, (centre - margin) / (1 + z2 / total))


# --------------------------------------------------------------------------- the rule on votes


def answer_consensus(votes: Sequence[Vote]) -> Consensus | None:
    """The most common canonical answer (ties: the smallest canonical text), or None without votes."""
    clusters: list[list[Vote]] = []
    for vote in sorted(votes, key=lambda v: v.key):
        for cluster in clusters:
            if canonical_equal(cluster[0].value, vote.value):
                cluster.append(vote)
                break
        else:
            clusters.append([vote])
    if not clusters:
        return None
    best = min(clusters, key=lambda c: (-len(c), c[0].key))
    return Consensus(best[0].value, best[0].key, len(best), tuple(v.row for v in best), best[0].row, 1.0)


def geometry_consensus(votes: Sequence[Vote], half_life_px: float, agree_similarity: float) -> Consensus | None:
    """The prediction that matches the most others at ``agree_similarity`` or better (the medoid).

    Ties go to the larger summed similarity, then to the smallest canonical text, so the
    order of the votes never matters.
    """
    if not votes:
        return None
    ordered = sorted(votes, key=lambda v: v.key)
    n = len(ordered)
    similarity = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            similarity[i, j] = similarity[j, i] = match_annotations(
                ordered[i].value, ordered[j].value, half_life_px
            ).score
    agrees = similarity >= agree_similarity
    counts = agrees.sum(axis=1)
    totals = np.where(agrees, similarity, 0.0).sum(axis=1)
    medoid = min(range(n), key=lambda i: (-int(counts[i]), -round(float(totals[i]), 9), ordered[i].key))
    members = np.flatnonzero(agrees[medoid])
    others = [float(similarity[medoid, j]) for j in members if j != medoid]
    cohesion = sum(others) / len(others) if others else 1.0
    return Consensus(
        ordered[medoid].value, ordered[medoid].key, len(members), tuple(ordered[j].row for j in members),
        ordered[medoid].row, cohesion,
    )


def contradicts(match: MatchResult, item_similarity_max: float) -> bool:
    """Does a prediction disagree with some ground-truth item (unmatched on either side, or matched poorly)?"""
    if match.unmatched_gt or match.unmatched_pred:
        return True
    return any(m.similarity < item_similarity_max for m in match.matches)


def item_distance(match: MatchResult) -> float:
    """``1 -`` the similarity of the worst-placed item (1 when any item is unmatched)."""
    if match.unmatched_gt or match.unmatched_pred or not match.matches:
        return 1.0
    return 1.0 - min(m.similarity for m in match.matches)


def _geometry_key(parsed: ParsedAnnotation) -> str:
    return value_text(annotation_value(parsed))


# --------------------------------------------------------------------------- groups from the table


def _text_column(table: pd.DataFrame, name: str) -> np.ndarray:
    if name not in table.columns:
        return np.full(len(table), None, dtype=object)
    return table[name].astype(object).to_numpy()


def _float_column(table: pd.DataFrame, name: str) -> np.ndarray:
    if name not in table.columns:
        return np.full(len(table), np.nan)
    return pd.to_numeric(table[name], errors="coerce").array.to_numpy(dtype=np.float64, na_value=np.nan)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def ground_truth_of(kwargs_text: Any) -> tuple[Any, Any]:
    """(answer_gt, annotation_gt) from a row's ``scorer_kwargs`` JSON (None, None when unreadable)."""
    if not isinstance(kwargs_text, str):
        return None, None
    try:
        kwargs = json.loads(kwargs_text)
    except ValueError:
        return None, None
    if not isinstance(kwargs, dict):
        return None, None
    return kwargs.get("answer_gt"), kwargs.get("annotation_gt")


def instance_keys(table: pd.DataFrame) -> np.ndarray:
    """The instance of every row: ``instance_id``, else the prompt and image (as a short digest)."""
    ids = _text_column(table, "instance_id")
    prompts = _text_column(table, "prompt")
    images = _text_column(table, "image_ref")
    out = ids.copy()
    for i in np.flatnonzero([_missing(v) or v == "" for v in ids]):
        text = json.dumps([None if _missing(prompts[i]) else str(prompts[i]),
                           None if _missing(images[i]) else str(images[i])])
        out[i] = "prompt:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return out


class _Groups(NamedTuple):
    codes: np.ndarray  # group number per row (-1: not a trace row)
    labels: list[str]  # group label per code
    instances: list[Any]
    answer_gt: list[Any]
    annotation_gt: list[Any]


def _groups(table: pd.DataFrame, split_by: Sequence[str]) -> _Groups:
    """Rows of one instance scored against the same ground truth (and equal ``split_by`` values)."""
    trace = _text_column(table, "scorer") == "trace"
    kwargs_codes, kwargs_uniques = pd.factorize(pd.Series(_text_column(table, "scorer_kwargs")), use_na_sentinel=True)
    truths = [ground_truth_of(text) for text in kwargs_uniques]
    truth_text = [value_text(list(t)) for t in truths]
    truth_codes, truth_uniques = pd.factorize(pd.Series(truth_text, dtype=object))
    row_truth = np.where(kwargs_codes >= 0, np.asarray(truth_codes)[np.maximum(kwargs_codes, 0)], -1)
    truth_digest = np.array([hashlib.sha256(text.encode("utf-8")).hexdigest()[:8] for text in truth_uniques],
                            dtype=object)
    row_digest = np.where(row_truth >= 0, truth_digest[np.maximum(row_truth, 0)] if len(truth_digest) else "", "")
    ids = instance_keys(table)
    parts = [pd.Series(ids, dtype=object).astype(str), pd.Series(row_digest, dtype=object)]
    for column in split_by:
        if column not in table.columns:
            raise ValueError(f"cannot split groups by {column!r}: the table has no such column")
        parts.append(pd.Series(_text_column(table, column)).astype(str))
    joined = parts[0].str.cat(parts[1:], sep="\x1f")
    codes, uniques = pd.factorize(joined)
    codes = np.where(trace & (row_truth >= 0), codes, -1)
    first = {}
    for position, code in enumerate(codes.tolist()):
        if code >= 0 and code not in first:
            first[code] = position
    instances = [None] * len(uniques)
    answer_gt = [None] * len(uniques)
    annotation_gt = [None] * len(uniques)
    for code, position in first.items():
        instances[code] = ids[position]
        truth = truths[kwargs_codes[position]]
        answer_gt[code], annotation_gt[code] = truth
    labels = [str(u).replace("\x1f", " | gt ", 1).replace("\x1f", " | ") for u in uniques]
    return _Groups(np.asarray(codes), labels, instances, answer_gt, annotation_gt)


def _contradiction_bound(table: pd.DataFrame, item_similarity_max: float) -> np.ndarray:
    """Per row, the highest annotation reward a contradicting prediction can score.

    One item below ``item_similarity_max`` (or unmatched) among ``m`` slots caps the score at
    ``1 - (1 - item_similarity_max) / m``; ``m`` is 1 for single shapes, the larger item count
    for sets and sequences, the key union for maps. Set maps have no cheap bound (1).
    """
    types = _text_column(table, "annotation_type")
    collection = np.array([
        (t.split("_", 1)[1] if "_" in t else SINGLE) if isinstance(t, str) else "" for t in types
    ], dtype=object)
    sizes = np.fmax(
        np.fmax(_float_column(table, "annotation_pred_size"), _float_column(table, "annotation_gt_size")),
        np.fmax(_float_column(table, "annotation_pred_len"), _float_column(table, "annotation_gt_len")),
    )
    keys = (
        np.nan_to_num(_float_column(table, "annotation_shared_key_count"))
        + np.nan_to_num(_float_column(table, "annotation_missing_key_count"))
        + np.nan_to_num(_float_column(table, "annotation_extra_key_count"))
    )
    slots = np.where(collection == SINGLE, 1.0, np.where(collection == MAP, keys, sizes))
    slots = np.where(np.isfinite(slots) & (slots >= 1), slots, np.inf)
    bound = 1.0 - (1.0 - item_similarity_max) / slots
    return np.where(collection == SET_MAP, 1.0, bound)


def _candidate_groups(codes: np.ndarray, voter: np.ndarray, maybe: np.ndarray, settings: ConsensusSettings) -> np.ndarray:
    """Groups where ``maybe`` rows could still form a consensus (``voters``: every possible voter)."""
    valid = codes >= 0
    size = int(codes.max()) + 1 if valid.any() else 0
    voters = np.bincount(codes[valid & voter], minlength=size)
    maybes = np.bincount(codes[valid & maybe], minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(voters > 0, maybes / np.maximum(voters, 1), 0.0)
    return np.flatnonzero((maybes >= settings.min_support) & (share >= settings.min_agreement))


def _atomic(response: Any) -> bool:
    return isinstance(response, str) and "\n" not in response.strip() and len(response.strip()) <= ATOMIC_ANSWER_MAX_CHARS


def _answer_vote(evaluation: TraceEvaluation, response: Any, row: Any) -> Vote | None:
    answer = evaluation.answer
    if answer.predicted_canonical is None:
        return None
    if answer.source != ANSWER_FROM_MAPPING and not _atomic(response):
        return None
    return Vote(row, answer.predicted_canonical, canonical_text(answer.predicted_canonical))


def suspects(
    table: pd.DataFrame,
    settings: ConsensusSettings | None = None,
    *,
    kinds: Iterable[str] = KINDS,
    evaluate_row: EvaluateRow | None = None,
    progress: Callable[[int, int], None] | None = None,
    with_text: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Suspected ground-truth errors of a scored table, most confident first (columns :data:`SUSPECT_COLUMNS`).

    ``table`` is a :mod:`scoring.runs` table (index = row ids). ``evaluate_row`` re-runs one
    row (default: :func:`evaluate_table_row`); only rows of candidate groups are re-run.
    ``with_text`` adds the columns a table holds elsewhere (an opened dataset's responses) to
    rows: it is asked only for the rows re-run.
    """
    settings = settings or ConsensusSettings()
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown suspect kind(s) {unknown}; expected {list(KINDS)}")
    evaluate_row = evaluate_row or evaluate_table_row
    if not len(table):
        return _empty()
    groups = _groups(table, settings.split_by)
    codes = groups.codes
    answer_reward = _float_column(table, "answer_reward")
    annotation_reward = _float_column(table, "annotation_reward")
    parsed = _float_column(table, "annotation_parse_ok") == 1.0
    responses = _text_column(table, "response")

    plans: list[tuple[str, np.ndarray, np.ndarray]] = []  # (kind, candidate groups, rows to re-run)
    if KIND_ANSWER in kinds:
        wrong = answer_reward == 0.0
        right = answer_reward == 1.0
        groups_a = _candidate_groups(codes, wrong | right, wrong, settings)
        rows_a = np.flatnonzero(np.isin(codes, groups_a) & wrong)
        plans.append((KIND_ANSWER, groups_a, rows_a))
    if KIND_ANNOTATION in kinds:
        maybe = parsed & (annotation_reward <= _contradiction_bound(table, settings.item_similarity_max))
        groups_b = _candidate_groups(codes, parsed, maybe, settings)
        rows_b = np.flatnonzero(np.isin(codes, groups_b) & maybe)
        plans.append((KIND_ANNOTATION, groups_b, rows_b))

    needed = sorted(set().union(*(set(rows.tolist()) for _, _, rows in plans)))
    columns = {name: _text_column(table, name) for name in _KWARG_COLUMNS if name in table.columns}
    absent = [name for name in _KWARG_COLUMNS if name not in table.columns]
    if with_text is not None and absent and needed:
        read = with_text(table.iloc[needed])
        for name in absent:
            if name in read.columns:
                values = np.full(len(table), None, dtype=object)
                values[needed] = read[name].to_numpy(dtype=object)
                columns[name] = values
        responses = columns.get("response", responses)
    evaluations: dict[int, TraceEvaluation | None] = {}
    for done, position in enumerate(needed):
        try:
            evaluations[position] = evaluate_row({name: values[position] for name, values in columns.items()})
        except Exception:  # a row that cannot be re-run does not vote; the others still do
            evaluations[position] = None
        if progress is not None and (done + 1) % 500 == 0:
            progress(done + 1, len(needed))
    if progress is not None:
        progress(len(needed), len(needed))

    index = table.index
    records: list[dict[str, Any]] = []
    for kind, candidate_groups, rows in plans:
        by_group: dict[int, list[int]] = {}
        for position in rows.tolist():
            by_group.setdefault(int(codes[position]), []).append(position)
        for group in candidate_groups.tolist():
            # in row-id order, so votes that tie (the same geometry) pick the same example row
            # however the table's rows are ordered
            positions = sorted(by_group.get(group, []), key=lambda p: str(index[p]))
            members = np.flatnonzero(codes == group)
            if kind == KIND_ANSWER:
                record = _answer_suspect(
                    group, members, positions, evaluations, answer_reward, responses, groups, settings)
            else:
                record = _annotation_suspect(group, members, positions, evaluations, parsed, groups, settings)
            if record is not None:
                _add_context(record, table, members, index)
                records.append(record)
    if not records:
        return _empty()
    out = pd.DataFrame.from_records(records, columns=list(SUSPECT_COLUMNS))
    out = out[out["confidence"] >= settings.min_confidence]
    out = out.sort_values(["confidence", "support", "instance_id", "kind"], ascending=[False, False, True, True],
                          kind="stable").reset_index(drop=True)
    return out


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series(dtype=object) for name in SUSPECT_COLUMNS})
    for name in ("support", "voters", "rows"):
        frame[name] = frame[name].astype("int64")
    for name in ("agreement", "confidence", "gt_similarity", "distance", "cohesion"):
        frame[name] = frame[name].astype("float64")
    return frame


def _answer_suspect(group, members, positions, evaluations, answer_reward, responses, groups, settings):
    votes = []
    for position in positions:
        evaluation = evaluations.get(position)
        if evaluation is not None:
            vote = _answer_vote(evaluation, responses[position], position)
            if vote is not None:
                votes.append(vote)
    consensus = answer_consensus(votes)
    right = int(np.count_nonzero(answer_reward[members] == 1.0))
    voters = right + len(votes)
    if consensus is None or not _strong(consensus.support, voters, settings):
        return None
    truth = groups.answer_gt[group]
    truth_value = truth.get("value") if isinstance(truth, dict) else None
    if canonical_equal(consensus.value, canonical(truth_value)):
        return None  # cannot happen for rows scored 0, but a re-run may differ from the table
    consensus_value = to_plain(consensus.value)
    detail = (f"{consensus.support} of {voters} rollouts answer {value_text(consensus_value)}; "
              f"the ground truth says {value_text(truth_value)}")
    return _record(KIND_ANSWER, group, groups, consensus, voters, settings, consensus_value, truth_value,
                   float("nan"), 1.0, detail)


def _record(kind, group, groups, consensus, voters, settings, consensus_value, truth_value, gt_similarity,
            distance, detail) -> dict[str, Any]:
    """One suspect line (before the table context of :func:`_add_context`)."""
    return {
        "instance_id": groups.instances[group],
        "kind": kind,
        "support": consensus.support,
        "voters": voters,
        "agreement": consensus.support / voters,
        "confidence": wilson_lower(consensus.support, voters, settings.wilson_z) * distance * consensus.cohesion,
        "consensus": value_text(consensus_value),
        "ground_truth": value_text(truth_value),
        "gt_similarity": gt_similarity,
        "distance": distance,
        "cohesion": consensus.cohesion,
        "supporting": consensus.rows,
        "medoid": consensus.medoid_row,
        "group": groups.labels[group],
        "detail": detail,
    }


def _annotation_suspect(group, members, positions, evaluations, parsed, groups, settings):
    votes = []
    half_life = None
    ground_truth = None
    image_size = None
    for position in positions:
        evaluation = evaluations.get(position)
        if evaluation is None or not evaluation.annotation.parse_ok:
            continue
        annotation = evaluation.annotation
        if contradicts(annotation.match, settings.item_similarity_max):
            votes.append(Vote(position, annotation.predicted, _geometry_key(annotation.predicted)))
            half_life = annotation.half_life_px if half_life is None else half_life
            ground_truth = annotation.ground_truth if ground_truth is None else ground_truth
            image_size = evaluation.image_size
    voters = int(np.count_nonzero(parsed[members]))
    if not votes or ground_truth is None:
        return None
    consensus = geometry_consensus(votes, half_life, settings.agree_similarity)
    if consensus is None or not _strong(consensus.support, voters, settings):
        return None
    against_truth = match_annotations(consensus.value, ground_truth, half_life)
    gt_similarity = against_truth.score
    distance = item_distance(against_truth)
    if settings.skip_frame_errors and image_size is not None:
        diagnosis = diagnose_geometry(consensus.value, ground_truth, half_life, image_size, pixel_score=gt_similarity,
                                      explain=False)
        # Only a frame the coordinates themselves point at (high confidence): a rescaling that merely
        # lands on the ground truth could as well be the ground truth's own error.
        if (diagnosis.status == STATUS_CHECKED and diagnosis.frame not in (FRAME_PIXEL, FRAME_OUTSIDE, None)
                and diagnosis.confidence == CONFIDENCE_HIGH):
            return None
    truth = groups.annotation_gt[group]
    truth_value = truth.get("value") if isinstance(truth, dict) else None
    detail = (f"{consensus.support} of {voters} rollouts draw geometry that matches each other "
              f"(cohesion {consensus.cohesion:.2f}) and scores {gt_similarity:.2f} against the ground truth")
    return _record(KIND_ANNOTATION, group, groups, consensus, voters, settings, annotation_value(consensus.value),
                   truth_value, gt_similarity, distance, detail)


def _strong(support: int, voters: int, settings: ConsensusSettings) -> bool:
    return support >= settings.min_support and voters > 0 and support / voters >= settings.min_agreement


def _add_context(record: dict[str, Any], table: pd.DataFrame, members: np.ndarray, index: pd.Index) -> None:
    supporting = record.pop("supporting")
    medoid = record.pop("medoid")
    record["rows"] = len(members)
    record["example_row"] = str(index[medoid])
    record["supporting_rows"] = ";".join(sorted(str(index[p]) for p in supporting))
    for name in ("task_id", "annotation_type"):
        values = _text_column(table, name)[members]
        present = sorted({str(v) for v in values if not _missing(v)})
        record[name] = present[0] if len(present) == 1 else ";".join(present) or None
    runs = _text_column(table, "run")[members]
    record["runs"] = ";".join(sorted({str(v) for v in runs if not _missing(v)}))


__all__ = [
    "KINDS",
    "KIND_ANNOTATION",
    "KIND_ANSWER",
    "SETTING_NAMES",
    "SUSPECT_COLUMNS",
    "Consensus",
    "ConsensusSettings",
    "Vote",
    "annotation_value",
    "answer_consensus",
    "contradicts",
    "evaluate_table_row",
    "ground_truth_of",
    "geometry_consensus",
    "instance_keys",
    "item_distance",
    "shape_value",
    "suspects",
    "value_text",
    "wilson_lower",
]
