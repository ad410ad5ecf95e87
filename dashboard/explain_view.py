"""View-model of one explanation: what the Inspector shows beside the overlay.

Everything here is read off one :class:`scoring.verifier.trace.TraceEvaluation` (never a
second scoring path) and is plain data: strings, numbers and small dataclasses.
Response text is only ever returned as text to be shown with ``st.code`` /
``st.text``; positions are marked with caret lines, never with markup.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.verifier import FORMULA_ADDITIVE, MODE_ANSWER, RESOLVER_IDS

# --------------------------------------------------------------------------- plain-text marking

#: Characters of context either side of a marked position.
CONTEXT_CHARS = 60
#: Pieces longer than this are shown as head + tail with a note in between.
DISPLAY_LIMIT = 20_000


def _cell_width(char: str) -> int:
    """Monospace cells a character takes: 0 for combining marks, 2 for wide East Asian ones."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_char(char: str) -> str:
    """A character as shown in caret views: tabs and control characters become one visible cell."""
    if char == "\t":
        return " "
    if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
        return "\N{REPLACEMENT CHARACTER}"
    return char


def caret_under(line: str, marks: Iterable[tuple[int, int] | tuple[int, int, str]], marker: str = "^") -> str:
    """A line of markers under the characters ``line[start:end]`` of each mark (empty marks: one marker).

    A mark may carry its own marker character as a third item (later marks win).
    Widths follow :func:`_cell_width`, so markers stay aligned under wide characters.
    """
    cells = [_cell_width(display_char(c)) for c in line]
    flags: list[str | None] = [None] * (len(line) + 1)
    for mark in marks:
        start, end = mark[0], mark[1]
        char = mark[2] if len(mark) > 2 else marker
        start = max(0, min(start, len(line)))
        end = max(start, min(end, len(line)))
        if end == start:
            flags[start] = char
        for i in range(start, end):
            flags[i] = char
    out = []
    for i, flag in enumerate(flags):
        width = cells[i] if i < len(cells) else 1
        out.append(flag * max(width, 1) if flag is not None else " " * width)
    return "".join(out).rstrip()


def mark_spans(text: str, spans: Sequence[tuple[int, int] | tuple[int, int, str]], marker: str = "^") -> str:
    """``text`` with a marker line under every line holding part of a span (plain text).

    A span may carry its own marker character as a third item.
    """
    lines_out: list[str] = []
    offset = 0
    for raw in text.split("\n"):
        line_start, line_end = offset, offset + len(raw)
        local = [
            (max(s[0], line_start) - line_start, min(s[1], line_end) - line_start, *s[2:3])
            for s in spans
            if (s[0] < line_end and s[1] > line_start) or (s[0] == s[1] and line_start <= s[0] <= line_end)
        ]
        lines_out.append("".join(display_char(c) for c in raw))
        if local:
            lines_out.append(caret_under(raw, local, marker))
        offset = line_end + 1
    return "\n".join(lines_out)


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of character ``offset`` in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def caret_context(text: str, offset: int, context: int = CONTEXT_CHARS) -> str:
    """The line around ``offset`` (cut to ``context`` characters either side) and a caret under it."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end == -1:
        line_end = len(text)
    start = max(line_start, offset - context)
    end = min(line_end, offset + 1 + context)
    piece = text[start:end]
    prefix = "…" if start > line_start else ""
    suffix = "…" if end < line_end else ""
    shown = prefix + "".join(display_char(c) for c in piece) + suffix
    caret = caret_under(prefix + piece, [(len(prefix) + offset - start, len(prefix) + offset - start + 1)])
    if offset == len(text) or text[offset : offset + 1] == "\n":
        caret = caret_under(prefix + piece, [(len(prefix) + offset - start, len(prefix) + offset - start)])
    return f"{shown}\n{caret}"


def clip_middle(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """``text`` itself, or its head and tail with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    hidden = len(text) - 2 * half
    return f"{text[:half]}\n… [{hidden:,} characters not shown] …\n{text[-half:]}"


# --------------------------------------------------------------------------- the response


ROLE_BEFORE = "before"
ROLE_FINAL = "final_object"
ROLE_RECOVERED = "recovered"
ROLE_AFTER = "after"
ROLE_WHOLE = "whole_response"

_ROLE_TITLES = {
    ROLE_BEFORE: "Before the final object",
    ROLE_FINAL: "Final object",
    ROLE_RECOVERED: "Recovered object",
    ROLE_AFTER: "After the final object",
    ROLE_WHOLE: "Response (no object found)",
}


@dataclass(frozen=True, slots=True)
class TextPiece:
    """A slice ``[start, end)`` of the response and what it is."""

    role: str
    start: int
    end: int
    text: str

    @property
    def title(self) -> str:
        return f"{_ROLE_TITLES[self.role]} — chars {self.start}–{self.end}"


@dataclass(frozen=True, slots=True)
class ResponseView:
    """The response split around the object the scorer located, and where the format broke."""

    response: str
    pieces: tuple[TextPiece, ...]
    final_kind: str | None
    final_span: tuple[int, int] | None
    recovered_source: str
    recovered_span: tuple[int, int] | None
    format_reason: str
    format_detail: str
    format_ok: bool
    break_at: int | None
    break_line: int | None
    break_column: int | None
    break_context: str

    def piece(self, role: str) -> TextPiece | None:
        return next((p for p in self.pieces if p.role == role), None)

    @property
    def recovered_is_final(self) -> bool:
        return self.recovered_span is not None and self.recovered_span == self.final_span

    @property
    def summary(self) -> str:
        parts = []
        if self.final_span is not None:
            parts.append(f"final object ({self.final_kind}) at chars {self.final_span[0]}–{self.final_span[1]}")
        else:
            parts.append("no final object")
        if self.recovered_span is None:
            parts.append("nothing recovered")
        elif self.recovered_is_final:
            parts.append("scored from the final object")
        else:
            parts.append(
                f"scored from {self.recovered_source.replace('_', ' ')} at chars "
                f"{self.recovered_span[0]}–{self.recovered_span[1]}"
            )
        verdict = "format ok" if self.format_ok else "format broken"
        parts.append(f"{verdict}: {self.format_reason}")
        return "; ".join(parts)


def _split(text: str, span: tuple[int, int], role: str) -> list[TextPiece]:
    start, end = span
    pieces = []
    if start > 0:
        pieces.append(TextPiece(ROLE_BEFORE, 0, start, text[:start]))
    pieces.append(TextPiece(role, start, end, text[start:end]))
    if end < len(text):
        pieces.append(TextPiece(ROLE_AFTER, end, len(text), text[end:]))
    return pieces


def response_view(evaluation: Any) -> ResponseView:
    """Split the response at the final object (else the recovered one) and locate the format break."""
    extraction = evaluation.extraction
    text = extraction.response
    final = extraction.final_object
    final_span = (final.span.start, final.span.end) if final is not None else None
    recovered = extraction.recovered_span
    recovered_span = (recovered.start, recovered.end) if recovered is not None else None
    if final_span is not None:
        pieces = _split(text, final_span, ROLE_FINAL)
    elif recovered_span is not None and recovered_span != (0, len(text)):
        pieces = _split(text, recovered_span, ROLE_RECOVERED)
    else:
        pieces = [TextPiece(ROLE_WHOLE, 0, len(text), text)]
    break_at = extraction.format_break_at
    if break_at is not None and not extraction.schema_ok:
        line, column = line_and_column(text, break_at)
        context = caret_context(text, break_at)
    else:
        line = column = None
        context = ""
    return ResponseView(
        response=text,
        pieces=tuple(pieces),
        final_kind=final.kind if final is not None else None,
        final_span=final_span,
        recovered_source=extraction.recovered_source,
        recovered_span=recovered_span,
        format_reason=extraction.format_reason,
        format_detail=extraction.format_detail,
        format_ok=bool(extraction.schema_ok),
        break_at=break_at,
        break_line=line,
        break_column=column,
        break_context=context,
    )


# --------------------------------------------------------------------------- components


@dataclass(frozen=True, slots=True)
class ComponentRow:
    """One reward component, its value and (for a zero) why."""

    component: str
    value: float
    reason: str


COMPONENTS: tuple[tuple[str, str], ...] = (
    ("answer_reward", "answer"),
    ("annotation_reward", "annotation"),
    ("format_score", "format"),
    ("task_reward", "task reward"),
    ("overall", "overall"),
    ("zero_reward", "zero_reward (flag)"),
)


def _fmt(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else str(value)


def annotation_zero_reason(evaluation: Any) -> str:
    """Why the annotation reward is zero (the scorer's reason, or what the pairings show)."""
    annotation = evaluation.annotation
    if not annotation.scored:
        return annotation.reason or "annotation not scored"
    match = annotation.match
    if match is None:
        return "annotation not scored"
    zero_pairs = match.zero_similarity_pairs
    if not match.matches and zero_pairs:  # everything assigned had similarity 0
        if annotation.ground_truth is not None and annotation.ground_truth.shape == "bbox":
            return f"every paired box has IoU 0 (no overlap) across {len(zero_pairs)} pair(s)"
        return (
            f"every pair is far beyond the {annotation.half_life_px:.1f} px half-life "
            f"(similarity rounds to 0) across {len(zero_pairs)} pair(s)"
        )
    if not match.matches:
        if match.pred_size == 0 and match.gt_size > 0:
            return "the predicted annotation is empty"
        if match.missing_keys and not match.shared_keys:
            return f"no role key in common (missing {list(match.missing_keys)}, extra {list(match.extra_keys)})"
        return f"nothing was paired ({match.pred_size} predicted, {match.gt_size} in the ground truth)"
    return f"score {match.score:.4g}"


def _task_zero_reason(evaluation: Any) -> str:
    options = evaluation.options
    if options.mode == MODE_ANSWER:
        return "answer-only mode: task reward = answer reward, which is 0"
    a, n = evaluation.answer_reward, evaluation.annotation_reward
    wa, wn = options.answer_weight, options.annotation_weight
    if options.formula == FORMULA_ADDITIVE:
        parts = []
        if a == 0.0 or wa == 0.0:
            parts.append("answer reward 0" if a == 0.0 else "answer weight 0")
        if n == 0.0 or wn == 0.0:
            parts.append("annotation reward 0" if n == 0.0 else "annotation weight 0")
        return f"additive: {_fmt(wa)}×answer + {_fmt(wn)}×annotation = 0 ({', '.join(parts)})"
    if a == 0.0:
        return "gated: answer reward is 0, so the annotation cannot count (answer × (w_a + w_n × annotation))"
    return f"gated: answer weight {_fmt(wa)} and annotation reward {_fmt(n)} leave nothing"


def component_rows(evaluation: Any) -> list[ComponentRow]:
    """Every reward component with the reason for any zero."""
    options = evaluation.options
    answer = evaluation.answer
    extraction = evaluation.extraction
    rows: list[ComponentRow] = []
    for name, label in COMPONENTS:
        value = float(getattr(evaluation, name))
        reason = ""
        if name == "zero_reward":
            reason = "1: the task reward is zero" if value else ""
        elif value == 0.0:
            if name == "answer_reward":
                reason = answer.reason or "answer does not match"
                if answer.source == "whole_response":
                    reason = f"no object with an 'answer' was recovered; the whole response was compared: {reason}"
            elif name == "annotation_reward":
                reason = annotation_zero_reason(evaluation)
                if options.mode == MODE_ANSWER:
                    reason += " (not used: answer-only mode)"
            elif name == "format_score":
                reason = f"{extraction.format_reason}: {extraction.format_detail}".rstrip(": ")
            elif name == "task_reward":
                reason = _task_zero_reason(evaluation)
            elif name == "overall":
                if options.format_weight == 0.0:
                    reason = "format weight 0: overall = task reward, which is 0"
                elif evaluation.format_score == 0.0:
                    reason = "task reward 0 and format 0"
                else:
                    reason = "format weight 1 and format 0"
        elif name == "annotation_reward" and options.mode == MODE_ANSWER:
            reason = "not used: answer-only mode"
        rows.append(ComponentRow(label, value, reason))
    return rows


def component_table(evaluation: Any) -> list[dict[str, Any]]:
    """:func:`component_rows` as records for ``st.dataframe``."""
    return [{"component": r.component, "value": r.value, "why (for a zero)": r.reason} for r in component_rows(evaluation)]


def options_line(evaluation: Any) -> str:
    o = evaluation.options
    return (
        f"mode {o.mode}, formula {o.formula}, weights answer {_fmt(o.answer_weight)} / "
        f"annotation {_fmt(o.annotation_weight)}, format weight {_fmt(o.format_weight)}"
    )


# --------------------------------------------------------------------------- answer


@dataclass(frozen=True, slots=True)
class AnswerView:
    predicted: str
    ground_truth: str
    source: str
    correct: bool
    reason: str

    def rows(self) -> list[dict[str, str]]:
        return [
            {"": "predicted (canonical)", "value": self.predicted},
            {"": "ground truth (canonical)", "value": self.ground_truth},
            {"": "read from", "value": self.source},
            {"": "verdict", "value": "match" if self.correct else f"no match: {self.reason}"},
        ]


_SOURCE_TEXT = {
    "mapping": "the 'answer' of the recovered object",
    "whole_response": "the whole response (no object with an 'answer')",
}


def answer_view(evaluation: Any) -> AnswerView:
    answer = evaluation.answer
    predicted = answer.predicted_text
    if answer.source == "whole_response" and isinstance(answer.predicted, str):
        predicted = clip_middle(answer.predicted, 400)
    return AnswerView(
        predicted=predicted,
        ground_truth=answer.ground_truth_text,
        source=_SOURCE_TEXT.get(answer.source, answer.source),
        correct=bool(answer.correct),
        reason=answer.reason,
    )


# --------------------------------------------------------------------------- annotation


def _shape_text(shape: Any) -> str:
    if shape is None:
        return ""
    if hasattr(shape, "start"):
        return f"[[{shape.start.x:g}, {shape.start.y:g}], [{shape.end.x:g}, {shape.end.y:g}]]"
    return "[" + ", ".join(f"{v:g}" for v in shape) + "]"


def annotation_facts(evaluation: Any) -> list[dict[str, str]]:
    """Type, contract, half-life and sizes of the annotation comparison."""
    a = evaluation.annotation
    facts = [
        ("annotation type", a.annotation_type or "—"),
        ("reward id", RESOLVER_IDS.get(a.annotation_type or "", "—")),
        ("scored", "yes" if a.scored else f"no: {a.reason}"),
    ]
    if a.ground_truth is not None and a.ground_truth.shape in ("point", "segment"):
        facts.append(("half-life", f"{a.half_life_px:.1f} px ({a.half_life_source.replace('_', ' ')})"))
    if evaluation.image_size is not None:
        w, h = evaluation.image_size
        facts.append(("image size (metadata)", f"{w:g} × {h:g}"))
    match = a.match
    if match is not None:
        facts.append(("predicted / ground truth", f"{match.pred_size} / {match.gt_size}"))
        pairs = str(len(match.matches))
        if match.zero_similarity_pairs:
            zero = len(match.zero_similarity_pairs)
            pairs += f" (+{zero} assigned with similarity 0, shown as missed and unmatched)"
        facts.append(("pairs", pairs))
        if match.missing_keys:
            facts.append(("missing keys", ", ".join(repr(k) for k in match.missing_keys)))
        if match.extra_keys:
            facts.append(("extra keys", ", ".join(repr(k) for k in match.extra_keys)))
        for key, score in match.key_scores:
            facts.append((f"key {key!r}", f"{score:.4g}"))
    return [{"": k, "value": v} for k, v in facts]


def pair_rows(evaluation: Any) -> list[dict[str, Any]]:
    """Every pairing the scorer made, then every unmatched item, one row each."""
    a = evaluation.annotation
    match, pred, gt = a.match, a.predicted, a.ground_truth
    if match is None or pred is None or gt is None:
        return []

    def shape(ann, key, index):
        group = ann.group(key)
        return group[index] if 0 <= index < len(group) else None

    keyed = gt.collection in ("map", "set_map")
    measure = "iou" if gt.shape == "bbox" else "distance_px"
    rows = []
    for m in match.matches:
        rows.append(
            {
                "status": "matched",
                "key": m.key,
                "pred": m.pred_index,
                "gt": m.gt_index,
                "similarity": m.similarity,
                "iou": m.iou,
                "distance_px": m.distance,
                "pred shape": _shape_text(shape(pred, m.key, m.pred_index)),
                "gt shape": _shape_text(shape(gt, m.key, m.gt_index)),
            }
        )
    for key, index in match.unmatched_pred:
        status = "extra key" if key in match.extra_keys else "unmatched prediction"
        rows.append(
            {"status": status, "key": key, "pred": index, "gt": None, "similarity": None, "iou": None,
             "distance_px": None, "pred shape": _shape_text(shape(pred, key, index)), "gt shape": ""}
        )
    for key, index in match.unmatched_gt:
        status = "missing key" if key in match.missing_keys else "missed ground truth"
        rows.append(
            {"status": status, "key": key, "pred": None, "gt": index, "similarity": None, "iou": None,
             "distance_px": None, "pred shape": "", "gt shape": _shape_text(shape(gt, key, index))}
        )
    dropped = {"iou", "distance_px"} - {measure}
    if not keyed:
        dropped.add("key")
    return [{k: v for k, v in row.items() if k not in dropped} for row in rows]


def flat_rows(evaluation: Any) -> list[dict[str, Any]]:
    """The training-log view (``as_flat_dict``) as records."""
    return [{"key": k, "value": v} for k, v in evaluation.as_flat_dict().items()]


__all__ = [
    "AnswerView",
    "ComponentRow",
    "ResponseView",
    "TextPiece",
    "annotation_facts",
    "annotation_zero_reason",
    "answer_view",
    "caret_context",
    "caret_under",
    "clip_middle",
    "component_rows",
    "component_table",
    "flat_rows",
    "line_and_column",
    "mark_spans",
    "options_line",
    "pair_rows",
    "response_view",
]
