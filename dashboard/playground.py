"""View-models of the two playgrounds (no Streamlit).

* Simple scorers: :func:`run_simple` wraps :func:`scoring.rewards.explain` (the
  scorer's own core) and adds what a person needs to see *why*: the normalised
  strings, every number read with its position marked by a caret line, the
  tolerance test. :func:`run_batch` does the same row by row and reports the
  solve rate against ``solved_threshold``.
* Trace scorer: :class:`TraceInputs` are the text boxes (JSON text for the
  ground truth and contract), pre-filled from a table row or an example;
  :func:`run_trace` parses them and calls ``explain_trace_response`` once.

Errors come back as friendly one-line messages, never exceptions.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd

from dashboard.explain_view import mark_spans
from scoring import explain_trace_response
from scoring.rewards import (
    DEFAULT_READING,
    DEFAULT_TOLERANCE,
    READING_AGENTDESCENT,
    READING_SIGNED,
    SCORER_INFO,
    SOLVED_THRESHOLD,
    NumericExplanation,
    TextExplanation,
    explain,
    is_solved,
    read_numbers,
    scorer_names,
)
from scoring.verifier import FORMULA_GATED, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION, RESOLVER_IDS

USED_MARK = "^"
OTHER_MARK = "~"

# --------------------------------------------------------------------------- simple scorers


#: How the playground names each number reading (``scoring.rewards.READINGS``).
READING_LABELS = {
    READING_AGENTDESCENT: "agentdescent 0.7.0 (default): '-$18' reads 18, '−5' reads 5",
    READING_SIGNED: "signed: '-$18' reads -18, '−5' reads -5",
}


def scorer_options(
    scorer: str, *, normalise: bool = True, tolerance: float = DEFAULT_TOLERANCE, reading: str = DEFAULT_READING
) -> dict[str, Any]:
    """The options ``scorer`` takes, from the playground's controls."""
    info = SCORER_INFO[scorer]
    options: dict[str, Any] = {}
    if "normalise" in info.options:
        options["normalise"] = normalise
    if "tolerance" in info.options:
        options["tolerance"] = tolerance
    if "reading" in info.options:
        options["reading"] = reading
    return options


def first_difference(a: str, b: str) -> int | None:
    """Index of the first character where ``a`` and ``b`` differ (None when equal)."""
    if a == b:
        return None
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _difference_block(output: str, gold: str, at: int) -> str:
    """Both compared strings with a caret at ``at`` (just past the end when one is a prefix)."""

    def marked(label: str, text: str) -> str:
        span = (at, at + 1) if at < len(text) else (len(text), len(text))
        return label + mark_spans(text, [span]).replace("\n", "\n" + " " * len(label))

    return marked("output: ", output) + "\n" + marked("gold:   ", gold)


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(float(value))


@dataclass(frozen=True)
class SimpleView:
    """What the simple-scorer playground shows for one (gold, output) pair."""

    scorer: str
    error: str = ""
    score: float | None = None
    solved: bool | None = None
    reason: str = ""
    #: (title, plain text) blocks: normalised strings, marked texts.
    blocks: tuple[tuple[str, str], ...] = ()
    #: Every number read from the output / gold (records for a table).
    output_numbers: tuple[dict[str, Any], ...] = ()
    gold_numbers: tuple[dict[str, Any], ...] = ()
    tolerance_test: str = ""
    #: Which number reading ran (numeric scorers only), as READING_LABELS words it.
    reading: str = ""
    explanation: TextExplanation | NumericExplanation | None = None

    @property
    def ok(self) -> bool:
        return not self.error


def _number_records(text: str, used: Any, reading: str) -> list[dict[str, Any]]:
    records = []
    for i, number in enumerate(read_numbers(text, reading=reading)):
        is_used = used is not None and number.start == used.start and number.end == used.end
        records.append(
            {
                "#": i,
                "text": number.text,
                "value": number.value,
                "start": number.start,
                "end": number.end,
                "used": "← compared" if is_used else "",
            }
        )
    return records


def _marked_numbers(text: str, used: Any, reading: str) -> str:
    spans = []
    for number in read_numbers(text, reading=reading):
        is_used = used is not None and (number.start, number.end) == (used.start, used.end)
        spans.append((number.start, number.end, USED_MARK if is_used else OTHER_MARK))
    if used is not None and not any(s[2] == USED_MARK for s in spans):
        spans.append((used.start, used.end, USED_MARK))
    return mark_spans(text, spans)


def tolerance_test(explanation: NumericExplanation) -> str:
    """The numeric test written out: ``|got - want| = d <= allowed = tol x max(1, |want|)``."""
    want = explanation.gold_number.value
    got = explanation.output_number
    allowed = explanation.allowed_difference
    rule = f"allowed = {_fmt(explanation.tolerance)} × max(1, |{_fmt(want)}|) = {_fmt(allowed)}"
    if got is None:
        return f"no number in the output → 0   ({rule})"
    if explanation.difference is None:
        return f"the output's last number {got.text} is not finite → 0"
    relation = "≤" if explanation.score else ">"
    verdict = "pass" if explanation.score else "fail"
    return (
        f"|{_fmt(got.value)} − {_fmt(want)}| = {_fmt(explanation.difference)} {relation} "
        f"{_fmt(allowed)} → {verdict}   ({rule})"
    )


def run_simple(
    scorer: str,
    gold: str,
    output: str,
    *,
    normalise: bool = True,
    tolerance: float = DEFAULT_TOLERANCE,
    reading: str = DEFAULT_READING,
    solved_threshold: float = SOLVED_THRESHOLD,
) -> SimpleView:
    """Score ``output`` against ``gold`` with the named simple scorer and explain it."""
    if scorer not in SCORER_INFO:
        return SimpleView(scorer, error=f"unknown scorer {scorer!r}; choose one of {', '.join(scorer_names())}")
    try:
        options = scorer_options(scorer, normalise=normalise, tolerance=tolerance, reading=reading)
        explanation = explain(scorer, gold, output, **options)
        solved = is_solved(explanation.score, solved_threshold)
    except (ValueError, KeyError, TypeError) as exc:
        return SimpleView(scorer, error=str(exc).strip("'\""))
    blocks: list[tuple[str, str]] = []
    if isinstance(explanation, TextExplanation):
        what = "normalised" if explanation.normalise else "compared as is"
        gold_c, output_c = explanation.gold_compared, explanation.output_compared
        if explanation.match_span is not None:
            blocks.append((f"output ({what}); ^ marks where the gold was found", mark_spans(output_c, [explanation.match_span])))
        else:
            blocks.append((f"output ({what})", output_c))
        blocks.append((f"gold ({what})", gold_c))
        if scorer == "exact_match":
            at = first_difference(output_c, gold_c)
            if at is not None:
                blocks.append((f"first difference at character {at}", _difference_block(output_c, gold_c, at)))
        return SimpleView(
            scorer, score=explanation.score, solved=solved, reason=explanation.reason, blocks=tuple(blocks),
            explanation=explanation,
        )
    used_out, used_gold, ran = explanation.output_number, explanation.gold_number, explanation.reading
    blocks.append(("output: ^ the number compared, ~ other numbers read", _marked_numbers(explanation.output, used_out, ran)))
    blocks.append(("gold: ^ the number compared, ~ other numbers read", _marked_numbers(explanation.gold, used_gold, ran)))
    return SimpleView(
        scorer,
        score=explanation.score,
        solved=solved,
        reason=explanation.reason,
        blocks=tuple(blocks),
        output_numbers=tuple(_number_records(explanation.output, used_out, ran)),
        gold_numbers=tuple(_number_records(explanation.gold, used_gold, ran)),
        tolerance_test=tolerance_test(explanation),
        reading=READING_LABELS[ran],
        explanation=explanation,
    )


# --------------------------------------------------------------------------- batch

GOLD_COLUMNS = ("gold", "answer", "target", "reference", "expected")
OUTPUT_COLUMNS = ("output", "response", "completion", "prediction", "model_output")


@dataclass(frozen=True)
class BatchResult:
    """Per-row scores and the solve rate."""

    frame: pd.DataFrame  # gold, output, score, solved, reason, error
    solved_threshold: float
    error: str = ""

    @property
    def rows(self) -> int:
        return len(self.frame)

    @property
    def scored(self) -> int:
        return int(self.frame["score"].notna().sum()) if self.rows else 0

    @property
    def failed(self) -> int:
        return self.rows - self.scored

    @property
    def solve_rate(self) -> float | None:
        """Solved rows over scored rows (None when nothing scored)."""
        if not self.scored:
            return None
        return float(self.frame["solved"].fillna(False).astype(bool).sum()) / self.scored

    @property
    def mean_score(self) -> float | None:
        return float(self.frame["score"].mean()) if self.scored else None


def _pick(columns: Sequence[str], candidates: Sequence[str]) -> str | None:
    lowered = {c.lower(): c for c in columns}
    for name in candidates:
        if name in lowered:
            return lowered[name]
    return None


def parse_batch_text(text: str) -> tuple[pd.DataFrame, str]:
    """Pasted rows -> a frame with ``gold`` and ``output`` columns, and '' or a friendly error.

    Accepts JSON lines (objects with a gold and an output field; ``gold``/
    ``answer``/``target`` and ``output``/``response``/``completion`` are
    recognised) or CSV/TSV with a header row naming those columns.
    """
    text = (text or "").strip()
    empty = pd.DataFrame({"gold": [], "output": []})
    if not text:
        return empty, "paste some rows first"
    if text.startswith("{") or text.startswith("["):
        records: list[Any] = []
        if text.startswith("["):
            try:
                records = json.loads(text)
            except json.JSONDecodeError as exc:
                return empty, f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        else:
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    return empty, f"line {number} is not valid JSON: {exc.msg} (column {exc.colno})"
        if not all(isinstance(r, dict) for r in records):
            return empty, "every JSON row must be an object with a gold and an output field"
        frame = pd.DataFrame.from_records(records)
    else:
        dialect = "excel-tab" if "\t" in text.splitlines()[0] else "excel"
        try:
            rows = list(csv.DictReader(io.StringIO(text), dialect=dialect))
        except csv.Error as exc:
            return empty, f"could not read the CSV: {exc}"
        frame = pd.DataFrame(rows)
    gold = _pick(list(frame.columns), GOLD_COLUMNS)
    output = _pick(list(frame.columns), OUTPUT_COLUMNS)
    if gold is None or output is None:
        found = ", ".join(map(str, frame.columns)) or "none"
        return empty, (
            f"need a gold column ({'/'.join(GOLD_COLUMNS)}) and an output column "
            f"({'/'.join(OUTPUT_COLUMNS)}); found: {found}"
        )
    out = pd.DataFrame({"gold": frame[gold], "output": frame[output]})
    out = out.astype(object).where(out.notna(), None)
    return out.reset_index(drop=True), ""


#: Loaded rows the batch playground scores at most (the first ones): it is a place to try a
#: scorer, and a run's responses are read from disk for it.
TABLE_ROWS_MAX = 50_000


def simple_row_ids(table: pd.DataFrame) -> pd.Index:
    """Row ids of a scored table that a simple scorer scored."""
    if table is None or not len(table) or "scorer" not in table.columns:
        return pd.Index([])
    return table.index[table["scorer"].astype(str).isin(list(SCORER_INFO)).to_numpy()]


def simple_rows(
    table: pd.DataFrame, with_text: Callable[[pd.DataFrame], pd.DataFrame] | None = None, limit: int | None = None
) -> pd.DataFrame:
    """Rows of a scored table that a simple scorer scored: ``gold`` and ``output`` (index row_id);
    the first ``limit`` of them; ``with_text`` adds a response the table holds on disk."""
    ids = simple_row_ids(table)
    if not len(ids):
        return pd.DataFrame({"gold": [], "output": []})
    rows = table.loc[ids[:limit] if limit is not None else ids]
    if with_text is not None and not {"response", "gold"} <= set(rows.columns):
        rows = with_text(rows)
    absent = pd.Series([None] * len(rows), index=rows.index, dtype=object)
    output = rows["response"] if "response" in rows.columns else absent
    return pd.DataFrame({"gold": rows["gold"] if "gold" in rows.columns else absent, "output": output}, index=rows.index)


def run_batch(
    rows: pd.DataFrame,
    scorer: str,
    *,
    normalise: bool = True,
    tolerance: float = DEFAULT_TOLERANCE,
    reading: str = DEFAULT_READING,
    solved_threshold: float = SOLVED_THRESHOLD,
) -> BatchResult:
    """Score every (gold, output) row with the scorer's own explanation; bad rows get an error, not a crash."""
    try:
        is_solved(0.0, solved_threshold)  # validates the threshold
        options = scorer_options(scorer, normalise=normalise, tolerance=tolerance, reading=reading)
        if "tolerance" in options or "reading" in options:
            explain(scorer, "1", "1", **options)  # validates the tolerance and the reading once
    except (ValueError, KeyError) as exc:
        return BatchResult(pd.DataFrame(), float("nan"), error=str(exc).strip("'\""))
    scores, solved, reasons, errors = [], [], [], []
    for gold, output in zip(rows["gold"].tolist(), rows["output"].tolist(), strict=True):
        try:
            explanation = explain(scorer, gold, output, **options)
        except (ValueError, KeyError, TypeError) as exc:
            scores.append(None)
            solved.append(None)
            reasons.append("")
            errors.append(str(exc).strip("'\""))
            continue
        scores.append(explanation.score)
        solved.append(is_solved(explanation.score, solved_threshold))
        reasons.append(explanation.reason)
        errors.append("")
    frame = rows[["gold", "output"]].copy()
    frame["score"] = pd.array(scores, dtype="Float64")
    frame["solved"] = pd.array(solved, dtype="boolean")
    frame["reason"] = reasons
    frame["error"] = errors
    return BatchResult(frame, float(solved_threshold))


def batch_example() -> str:
    """A few JSON lines to try batch mode with."""
    rows = [
        {"gold": "#### 72", "output": "Natalia sold 48 + 24 = 72 clips. The answer is 72."},
        {"gold": "#### 10", "output": "She earned $10.00."},
        {"gold": "#### 5", "output": "The answer is 15."},
        {"gold": "#### 1,200", "output": "Total: 1200"},
        {"gold": "Paris", "output": "paris."},
    ]
    return "\n".join(json.dumps(r) for r in rows)


# --------------------------------------------------------------------------- trace playground


@dataclass(frozen=True)
class TraceInputs:
    """The trace playground's text boxes and options."""

    response: str = ""
    answer_gt: str = ""  # JSON text
    annotation_gt: str = ""  # JSON text ('' = none)
    reward_contract: str = ""  # JSON text
    image_size: str = ""  # "W,H", "WxH" or JSON; '' = none
    mode: str = MODE_ANSWER_AND_ANNOTATION
    formula: str = FORMULA_GATED
    answer_weight: float = 0.5
    annotation_weight: float = 0.5
    format_weight: float = 0.0
    point_half_life_px: str = ""  # '' = from the image size
    row_id: Any = None  # the table row these came from, if any

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def _contract(answer_type: str, annotation_type: str | None) -> str:
    contract: dict[str, Any] = {"answer": {"id": "answer_exact_match_v0", "type": answer_type}}
    if annotation_type is not None:
        contract["annotation"] = {"id": RESOLVER_IDS[annotation_type], "type": annotation_type}
    return json.dumps(contract)


def _example(response: str, answer: Any, answer_type: str, annotation_type: str | None, value: Any,
             size: str = "1024,768", mode: str = MODE_ANSWER_AND_ANNOTATION) -> TraceInputs:
    return TraceInputs(
        response=response,
        answer_gt=json.dumps({"type": answer_type, "value": answer}),
        annotation_gt=json.dumps({"type": annotation_type, "value": value}) if annotation_type else "",
        reward_contract=_contract(answer_type, annotation_type),
        image_size=size,
        mode=mode,
    )


#: Worked examples for the trace playground (name -> inputs).
EXAMPLES: dict[str, TraceInputs] = {
    "bbox_set: one box missed, one extra": _example(
        'There are three red squares; I box the two I can see and one more.\n'
        '{"answer": 3, "annotation": [[100, 100, 220, 210], [400, 380, 520, 500], [800, 80, 900, 160]]}',
        3, "integer", "bbox_set",
        [[104, 96, 224, 214], [410, 390, 515, 505], [620, 560, 700, 650]],
    ),
    "point_sequence: text after the object": _example(
        'Visit order:\n{"answer": "B", "annotation": [[200, 300], [420, 310], [640, 500]]}\nHope this helps!',
        "B", "option_letter", "point_sequence",
        [[205, 296], [455, 300], [610, 520], [800, 600]],
    ),
    "bbox_map: an extra and a missing key": _example(
        '```json\n{"answer": "cat", "annotation": {"cat": [60, 80, 300, 330], "hat": [90, 20, 200, 90]}}\n```',
        "cat", "string", "bbox_map",
        {"cat": [70, 90, 310, 340], "dog": [500, 200, 760, 520]},
    ),
    "segment_set: wrong answer gates the reward": _example(
        '{"answer": 4, "annotation": [[[100, 600], [400, 200]], [[500, 650], [900, 640]]]}',
        5, "integer", "segment_set",
        [[[110, 590], [395, 215]], [[520, 300], [880, 310]]],
    ),
    "not valid JSON, recovered from an answer tag": _example(
        "<answer>{'answer': 12, 'annotation': [512, 384]}</answer>\nFinal: {answer: 12}",
        12, "integer", "point", [530, 370],
    ),
    "answer only (python literal)": _example(
        "The largest bar is March. {'answer': 'march'}", "March", "string", None, None, size="",
        mode=MODE_ANSWER,
    ),
}
DEFAULT_EXAMPLE = next(iter(EXAMPLES))


def _size_text(kwargs: Mapping[str, Any]) -> str:
    for key in ("image_size", "image_sizes", "metadata", "extra_info"):
        value = kwargs.get(key)
        if value is not None:
            from scoring.verifier import image_size_from

            size = image_size_from(value)
            if size is not None:
                return f"{size[0]:g},{size[1]:g}"
    return ""


def inputs_from_row(row: pd.Series, row_id: Any = None) -> tuple[TraceInputs | None, str]:
    """The inputs that produced a trace row (its stored scorer kwargs), or None and why not."""
    try:
        from scoring.runs import row_kwargs

        kwargs = row_kwargs(row)
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"this row cannot be loaded into the trace playground: {exc}"
    except json.JSONDecodeError as exc:  # pragma: no cover - JSONDecodeError is a ValueError
        return None, f"the row's stored scorer inputs are not valid JSON: {exc}"
    mode = kwargs.get("trace_reward_mode") or MODE_ANSWER
    half_life = kwargs.get("point_half_life_px")
    return (
        TraceInputs(
            response=kwargs.get("response") or "",
            answer_gt=_json_text(kwargs.get("answer_gt")),
            annotation_gt=_json_text(kwargs.get("annotation_gt")),
            reward_contract=_json_text(kwargs.get("reward_contract")),
            image_size=_size_text(kwargs),
            mode=MODE_ANSWER if mode in ("answer", "answer_only", "auto", "") else MODE_ANSWER_AND_ANNOTATION,
            formula=kwargs.get("trace_annotation_reward_formula") or FORMULA_GATED,
            answer_weight=float(kwargs.get("answer_weight", 0.5)),
            annotation_weight=float(kwargs.get("annotation_weight", 0.5)),
            format_weight=float(kwargs.get("format_weight", 0.0)),
            point_half_life_px="" if half_life is None else f"{float(half_life):g}",
            row_id=row_id,
        ),
        "",
    )


def parse_json_field(name: str, text: str, *, required: bool) -> tuple[Any, str]:
    """``(value, '')`` or ``(None, friendly error)``; empty text is None (an error when required)."""
    if not (text or "").strip():
        return None, (f"{name} is empty" if required else "")
    try:
        return json.loads(text), ""
    except json.JSONDecodeError as exc:
        return None, f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"


def parse_size(text: str) -> tuple[list[float] | None, str]:
    """``"1024,768"``, ``"1024x768"``, ``"[1024, 768]"`` or ``{"width": .., "height": ..}`` -> [w, h]."""
    text = (text or "").strip()
    if not text:
        return None, ""
    from scoring.verifier import image_size_from

    candidate: Any = text
    lowered = text.lower().replace("×", "x")
    if "x" in lowered and not lowered.startswith(("{", "[")):
        candidate = "[" + lowered.replace("x", ",") + "]"
    elif not text.startswith(("{", "[")):
        candidate = "[" + text + "]"
    size = image_size_from(candidate)
    if size is None:
        return None, f"image size {text!r} is not a width and height, e.g. 1024,768"
    return [size[0], size[1]], ""


def trace_kwargs(inputs: TraceInputs) -> tuple[dict[str, Any] | None, str]:
    """Keyword arguments for ``explain_trace_response``, or None and a friendly error."""
    answer_gt, problem = parse_json_field("answer_gt", inputs.answer_gt, required=True)
    if problem:
        return None, problem
    annotation_gt, problem = parse_json_field("annotation_gt", inputs.annotation_gt, required=False)
    if problem:
        return None, problem
    contract, problem = parse_json_field("reward_contract", inputs.reward_contract, required=True)
    if problem:
        return None, problem
    size, problem = parse_size(inputs.image_size)
    if problem:
        return None, problem
    half_life: float | None = None
    if (inputs.point_half_life_px or "").strip():
        try:
            half_life = float(inputs.point_half_life_px)
        except ValueError:
            return None, f"point_half_life_px {inputs.point_half_life_px!r} is not a number"
    return (
        {
            "response": inputs.response,
            "answer_gt": answer_gt,
            "annotation_gt": annotation_gt,
            "reward_contract": contract,
            "image_size": size,
            "point_half_life_px": half_life,
            "trace_reward_mode": inputs.mode,
            "trace_annotation_reward_formula": inputs.formula,
            "answer_weight": inputs.answer_weight,
            "annotation_weight": inputs.annotation_weight,
            "format_weight": inputs.format_weight,
        },
        "",
    )


def run_trace(inputs: TraceInputs) -> tuple[Any | None, str]:
    """``(TraceEvaluation, '')`` or ``(None, friendly error)`` -- one call of the scorer."""
    kwargs, problem = trace_kwargs(inputs)
    if kwargs is None:
        return None, problem
    try:
        return explain_trace_response(**kwargs), ""
    except ValueError as exc:
        return None, f"invalid option: {exc}"
    except RecursionError:
        return None, "the input is nested too deeply to score"


def with_options(inputs: TraceInputs, **changes: Any) -> TraceInputs:
    return replace(inputs, **changes)


@dataclass
class PlaygroundDefaults:
    """Initial values of the simple playground's boxes."""

    scorer: str = "last_number"
    gold: str = "#### 72"
    output: str = "Natalia sold 48/2 = 24 clips in May, so 48 + 24 = 72 in total. The answer is 72."
    normalise: bool = True
    tolerance: float = DEFAULT_TOLERANCE
    reading: str = DEFAULT_READING
    extra: dict[str, Any] = field(default_factory=dict)


__all__ = [
    "DEFAULT_EXAMPLE",
    "EXAMPLES",
    "BatchResult",
    "READING_LABELS",
    "PlaygroundDefaults",
    "SimpleView",
    "TraceInputs",
    "batch_example",
    "first_difference",
    "inputs_from_row",
    "parse_batch_text",
    "parse_json_field",
    "parse_size",
    "run_batch",
    "run_simple",
    "run_trace",
    "scorer_options",
    "simple_rows",
    "tolerance_test",
    "trace_kwargs",
    "with_options",
]
