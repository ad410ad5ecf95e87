"""Response text -> the final object, the recovery candidates and the format verdict.

Two questions are asked of a response, and kept apart on purpose
(scoring-behaviour.md): does it *end with* one object of the required schema
(format), and which mapping holding ``answer``/``annotation`` can be *recovered*
from it (scoring). Both are answered here, in time linear in the text length:

* Balanced ``{...}`` objects are found by a string-aware scan that starts at a
  ``{`` and closes when its depth returns to zero. Scans that start at different
  braces can read quotes differently, but there are only two lexical states that
  matter (inside or outside a JSON string), so all scans collapse into at most two
  live "trajectories" (:class:`_BraceMatcher`). One pass therefore gives every
  brace's closing position, however hostile the text.
* The common case - prose followed by one object - is answered from the end of
  the text with a bounded backward search, and falls back to the linear pass
  when the bound is exceeded, so both paths give the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .literals import (
    JSON,
    Literal,
    LiteralError,
    is_mapping,
    json_value_at,
    nesting_depth,
    parse_literal,
    parse_mapping,
)
from .records import new_record
from .spec import ANNOTATION_KEY, ANSWER_KEY, MAX_NESTING_DEPTH, SCHEMA_KEYS

FENCE = "```"
ANSWER_TAG_OPEN = "<answer>"
ANSWER_TAG_CLOSE = "</answer>"

# Final-object kinds.
BARE_OBJECT = "bare_object"
FENCED_BLOCK = "fenced_block"

# Where the scored mapping came from.
SOURCE_FINAL_OBJECT = "final_object"
SOURCE_TAG = "tag"
SOURCE_FENCED_BLOCK = "fenced_block"
SOURCE_EARLIER_OBJECT = "earlier_object"
SOURCE_WHOLE_RESPONSE = "whole_response"
SOURCE_NOTHING = "nothing"

# Format verdicts: "ok" and "python_literal" earn format 1, every other one 0.
FORMAT_OK = "ok"
FORMAT_PYTHON_LITERAL = "python_literal"
FORMAT_EMPTY_RESPONSE = "empty_response"
FORMAT_NO_FINAL_OBJECT = "no_final_object"
FORMAT_TEXT_AFTER_OBJECT = "text_after_object"
FORMAT_NOT_VALID_JSON = "not_valid_json"
FORMAT_NOT_A_MAPPING = "not_a_mapping"
FORMAT_MISSING_KEYS = "missing_keys"
FORMAT_EXTRA_KEYS = "extra_keys"
FORMAT_REASONS = (
    FORMAT_OK,
    FORMAT_PYTHON_LITERAL,
    FORMAT_EMPTY_RESPONSE,
    FORMAT_NO_FINAL_OBJECT,
    FORMAT_TEXT_AFTER_OBJECT,
    FORMAT_NOT_VALID_JSON,
    FORMAT_NOT_A_MAPPING,
    FORMAT_MISSING_KEYS,
    FORMAT_EXTRA_KEYS,
)

#: The backward search for the final object may read this many characters per
#: character of text (plus a constant) before the linear pass takes over.
_BACKWARD_BUDGET_FACTOR = 2
_BACKWARD_BUDGET_CONSTANT = 4096

_MERGE_MARK = '\\"'
# A character class first (the regex engine skips prose fast), then the rest of a brace run.
_SCAN_EVENT = re.compile(r'[{}"](?:(?<=\{)\{*|(?<=\})\}*|)')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_MATCHER_EVENT = re.compile(r'[{}"\\](?:(?<=\{)\{*|(?<=\})\}*|)')
#: The optional info string after an opening fence (``json``, ``python``): one word, ended by the
#: end of the fence's line or, when the content starts on the fence's own line
#: (```` ```json {"answer": 1}``` ````), by white space. Each run (blanks, word, blanks) is taken
#: whole and never given back (``(?=(x*))\1`` is an atomic ``x*``, which Python 3.10 lacks), so
#: the match reads the text once however long the runs are.
_INFO_STRING = re.compile(
    r"(?=([ \t]*))\1(?=([A-Za-z0-9_+.#-]*))\2(?=([ \t]*))\3(?:\r?\n|(?<=[ \t]))"
)


class Span(NamedTuple):
    """A half-open character range ``[start, end)`` of the response."""

    start: int
    end: int


class FinalObject(NamedTuple):
    """What the response ends with: a bare ``{...}`` or a fenced block's content."""

    kind: str
    span: Span  # of the object text (fence content without the info string)
    text: str


class Candidate(NamedTuple):
    """A piece of the response that may hold the answer mapping."""

    source: str
    span: Span
    text: str


class Extraction(NamedTuple):
    """Everything the format check and content recovery found in one response."""

    response: str
    final_object: FinalObject | None
    final_parse: Literal | LiteralError | None
    structure_ok: bool
    json_ok: bool
    schema_ok: bool
    format_reason: str
    format_detail: str
    format_break_at: int | None  # where the format broke, as a character offset
    missing_keys: tuple[str, ...]
    extra_keys: tuple[str, ...]
    recovered_source: str
    recovered_span: Span | None
    recovered_mapping: Mapping[str, Any] | None

    @property
    def format_ok(self) -> bool:
        return self.schema_ok

    @property
    def json_found(self) -> bool:
        return self.recovered_mapping is not None

    @property
    def recovered_text(self) -> str | None:
        if self.recovered_span is None:
            return None
        return self.response[self.recovered_span.start : self.recovered_span.end]


# ---------------------------------------------------------------------------
# Balanced objects


def _scan_close(text: str, start: int, limit: int) -> tuple[int | None, int]:
    """Close of the string-aware scan from the ``{`` at ``start``, reading at most to ``limit``.

    Returns ``(close_index or None, characters read)``. Runs of braces are one step.
    """
    depth = 0
    position = start
    search = _SCAN_EVENT.search
    while True:
        match = search(text, position, limit)
        if match is None:
            return None, limit - start
        at, end = match.span()
        char = text[at]
        if char == "{":
            depth += end - at
        elif char == "}":
            if end - at >= depth:
                closed_at = at + depth - 1
                return closed_at, closed_at + 1 - start
            depth -= end - at
        else:
            rest = _STRING_REST.match(text, at + 1, limit)
            if rest is None:
                return None, limit - start
            end = rest.end()
        position = end


class _BraceMatcher:
    """Closing index of the scan from every ``{``, in one left-to-right pass.

    A scan is a trajectory through two lexical states (outside / inside a JSON
    string). At any position there is at most one trajectory outside a string and
    one inside; a trajectory outside meets the one inside exactly at ``\\"``
    (the string sees an escaped quote, the outside scan opens a string), where the
    two merge. Each trajectory keeps its pending braces on a stack whose levels
    are contiguous and end at its current depth, so merging aligns the stacks at
    the top. Runs of braces are one event, so ``{`` * 10**5 costs one step.
    """

    def __init__(self, text: str) -> None:
        self.close: dict[int, int] = {}
        outside: list | None = None  # pending starts: list of int or list[int]
        inside: list | None = None
        escaped_at = -1
        close = self.close
        for match in _MATCHER_EVENT.finditer(text):
            at = match.start()
            char = text[at]
            if inside is not None and at == escaped_at:
                # The inside trajectory skips this character.
                if char == '"':
                    if outside is not None:
                        inside = self._merge(inside, outside)
                        outside = None
                    continue
                if char == "\\":
                    continue
                run = match.end() - at
                if char == "{":
                    if outside is None:
                        outside = []
                    outside.extend(range(at, at + run))
                elif outside is not None:
                    self._pop(outside, at, run)
                continue
            if char == "\\":
                if inside is not None:
                    escaped_at = at + 1
            elif char == '"':
                outside, inside = inside, outside
                escaped_at = -1
            elif char == "{":
                if outside is None:
                    outside = []
                outside.extend(range(at, match.end()))
            elif outside is not None:
                self._pop(outside, at, match.end() - at)
        del close  # kept as self.close

    def _pop(self, stack: list, at: int, run: int) -> None:
        """A run of ``run`` closing braces at ``at`` closes the top ``run`` pending entries."""
        count = min(run, len(stack))
        if not count:
            return
        popped = stack[len(stack) - count :]
        del stack[len(stack) - count :]
        popped.reverse()  # the top entry closes first
        if list(map(type, popped)).count(list) == 0:
            self.close.update(zip(popped, range(at, at + count), strict=True))
            return
        for offset, starts in enumerate(popped):
            for start in starts if isinstance(starts, list) else (starts,):
                self.close[start] = at + offset

    @staticmethod
    def _merge(first: list, second: list) -> list:
        """Union two stacks aligned at the top (same current depth after the merge)."""
        large, small = (first, second) if len(first) >= len(second) else (second, first)
        for depth_from_top in range(1, len(small) + 1):
            mine = large[-depth_from_top]
            theirs = small[-depth_from_top]
            if not isinstance(mine, list):
                mine = large[-depth_from_top] = [mine]
            if isinstance(theirs, list):
                mine.extend(theirs)
            else:
                mine.append(theirs)
        return large


def balanced_objects(text: str) -> list[Span]:
    """Non-overlapping balanced objects, left to right: after one closes, the scan resumes past it.

    Scans from each ``{`` in turn while they stay cheap (typical text: a few short
    objects in prose); past a linear budget, the one-pass matcher answers instead.
    """
    if "{" not in text:
        return []
    budget = _BACKWARD_BUDGET_FACTOR * len(text) + _BACKWARD_BUDGET_CONSTANT
    spans = []
    start = text.find("{")
    while start != -1:
        end, read = _scan_close(text, start, len(text))
        budget -= read
        if budget < 0:
            return _balanced_objects_one_pass(text)
        if end is None:
            start = text.find("{", start + 1)
        else:
            spans.append(new_record(Span, (start, end + 1)))
            start = text.find("{", end + 1)
    return spans


def _balanced_objects_one_pass(text: str) -> list[Span]:
    close = _BraceMatcher(text).close
    spans = []
    resume_at = 0
    for start in sorted(close):
        if start >= resume_at:
            end = close[start]
            spans.append(new_record(Span, (start, end + 1)))
            resume_at = end + 1
    return spans


def _may_merge(text: str) -> bool:
    """Whether two scans could close at the same brace (needs an escaped quote)."""
    return "\\" in text and _MERGE_MARK in text  # a lone-byte search first: it is much faster


def _final_brace_start(text: str, last: int) -> int | None:
    """The leftmost ``{`` whose scan closes exactly at ``text[last]``.

    Two scans can only close at the same brace after their trajectories merged,
    which needs an escaped quote; without one, the closing scan is unique and a
    short backward search finds it.
    """
    if _may_merge(text):
        return _leftmost_closing_at(text, last)
    budget = _BACKWARD_BUDGET_FACTOR * len(text) + _BACKWARD_BUDGET_CONSTANT
    start = text.rfind("{", 0, last)
    while start != -1:
        closed_at, read = _scan_close(text, start, last + 1)
        if closed_at == last:
            return start
        budget -= read
        if budget < 0:
            return _leftmost_closing_at(text, last)
        start = text.rfind("{", 0, start)
    return None


def _leftmost_closing_at(text: str, last: int) -> int | None:
    close = _BraceMatcher(text[: last + 1]).close
    return min((start for start, end in close.items() if end == last), default=None)


# ---------------------------------------------------------------------------
# Fences and tags


def _fence_content(text: str, open_at: int, close_at: int) -> Span:
    """Content between an opening fence at ``open_at`` and a closing one at ``close_at``,
    without the info string; the content may start on the fence's own line."""
    start = open_at + len(FENCE)
    info = _INFO_STRING.match(text, start, close_at)
    if info is not None:
        start = info.end()
    return new_record(Span, (start, close_at))


def fenced_blocks(text: str) -> list[Span]:
    """Contents of fenced blocks, fences paired left to right."""
    spans = []
    open_at = text.find(FENCE)
    while open_at != -1:
        close_at = text.find(FENCE, open_at + len(FENCE))
        if close_at == -1:
            break
        spans.append(_fence_content(text, open_at, close_at))
        open_at = text.find(FENCE, close_at + len(FENCE))
    return spans


def answer_tags(text: str) -> list[Span]:
    """Contents of ``<answer>...</answer>`` pairs, left to right."""
    spans = []
    open_at = text.find(ANSWER_TAG_OPEN)
    while open_at != -1:
        start = open_at + len(ANSWER_TAG_OPEN)
        close_at = text.find(ANSWER_TAG_CLOSE, start)
        if close_at == -1:
            break
        spans.append(new_record(Span, (start, close_at)))
        open_at = text.find(ANSWER_TAG_OPEN, close_at + len(ANSWER_TAG_CLOSE))
    return spans


# ---------------------------------------------------------------------------
# The final object and the format verdict


def find_final_object(text: str) -> FinalObject | None:
    """What the response ends with, if it ends with an object (format_structure_ok)."""
    return _locate_final(text)[0]


#: How many braces the JSON fast path tries from the right before the scan takes over.
_FAST_PATH_ATTEMPTS = 4


def _final_json_object(text: str, last: int) -> tuple[int, Literal] | None:
    """Fast path: the final object is valid JSON ending at ``text[last]``.

    A valid JSON object's scan closes exactly at its last brace, and without an
    escaped quote that closing scan is unique, so this agrees with the scan.
    """
    start = text.rfind("{", 0, last)
    for _ in range(_FAST_PATH_ATTEMPTS):
        if start == -1:
            return None
        try:
            value, end = json_value_at(text, start)
        except (StopIteration, ValueError, RecursionError):
            value, end = None, -1
        if end == last + 1 and type(value) is dict:
            # Nesting MAX_NESTING_DEPTH deep needs that many brackets: shorter objects are fine.
            if end - start >= MAX_NESTING_DEPTH and nesting_depth(text[start:end]) >= MAX_NESTING_DEPTH:
                return None  # the general path reports the nesting failure
            return start, new_record(Literal, (value, JSON))
        start = text.rfind("{", 0, start)
    return None


def _locate_final(text: str) -> tuple[FinalObject | None, Literal | None]:
    """The final object, and its parse when the fast path already has it."""
    end = len(text.rstrip())
    if end == 0:
        return None, None
    if text.endswith(FENCE, 0, end) and end >= 2 * len(FENCE):
        open_at = text.rfind(FENCE, 0, end - len(FENCE))
        if open_at == -1:
            return None, None
        span = _fence_content(text, open_at, end - len(FENCE))
        content = text[span.start : span.end]
        if not content.strip():
            return None, None
        return new_record(FinalObject, (FENCED_BLOCK, span, content)), None
    if text[end - 1] == "}":
        if not _may_merge(text):
            fast = _final_json_object(text, end - 1)
            if fast is not None:
                start, parsed = fast
                span = new_record(Span, (start, end))
                return new_record(FinalObject, (BARE_OBJECT, span, text[start:end])), parsed
        start = _final_brace_start(text, end - 1)
        if start is not None:
            return new_record(FinalObject, (BARE_OBJECT, new_record(Span, (start, end)), text[start:end])), None
    return None, None


def _holds_content(value: Any) -> bool:
    return is_mapping(value) and (ANSWER_KEY in value or ANNOTATION_KEY in value)


_SCHEMA_DETAIL = {
    FORMAT_OK: lambda missing, extra: "",
    FORMAT_PYTHON_LITERAL: lambda missing, extra: "a Python literal, not JSON: accepted, but not portable",
    FORMAT_MISSING_KEYS: lambda missing, extra: f"missing key(s) {list(missing)}"
    + (f", extra key(s) {list(extra)}" if extra else ""),
    FORMAT_EXTRA_KEYS: lambda missing, extra: f"extra key(s) {list(extra)}",
}


def schema_reason(final_parse: Literal, mode: str) -> tuple[bool, str]:
    """(schema ok, reason) of a final object that parsed to a mapping, without listing keys.

    The rule itself: :func:`schema_verdict` adds the missing and extra keys. The batch
    engine asks it what the verdict *would be* under the other output mode, per row.
    """
    keys = final_parse.value.keys()
    required = SCHEMA_KEYS[mode]
    if keys == required:
        return True, (FORMAT_OK if final_parse.parser == JSON else FORMAT_PYTHON_LITERAL)
    if keys >= required:  # every required key present, so something else is there too
        return False, FORMAT_EXTRA_KEYS
    return False, FORMAT_MISSING_KEYS


def schema_verdict(final_parse: Literal, mode: str) -> tuple[bool, str, tuple[str, ...], tuple[str, ...]]:
    """(schema ok, reason, missing keys, extra keys) of a final object that parsed to a mapping."""
    ok, reason = schema_reason(final_parse, mode)
    if ok:
        return ok, reason, (), ()
    missing, extra = _key_differences(final_parse.value, SCHEMA_KEYS[mode])
    return ok, reason, missing, extra


def _key_differences(value: Mapping, required: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(missing, extra) keys of the final object against the schema."""
    keys = {k for k in value if isinstance(k, str)}
    others = tuple(repr(k) for k in value if not isinstance(k, str))
    return tuple(sorted(required - keys)), tuple(sorted(keys - required)) + others


def candidates(text: str) -> list[Candidate]:
    """Recovery candidates in priority order, first place kept for repeated text."""
    ordered: list[Candidate] = []
    seen: set[str] = set()
    groups = (
        (SOURCE_TAG, answer_tags(text)),
        (SOURCE_FENCED_BLOCK, fenced_blocks(text)),
        (SOURCE_EARLIER_OBJECT, balanced_objects(text)),
        (SOURCE_WHOLE_RESPONSE, [Span(0, len(text))]),
    )
    for source, spans in groups:
        for span in spans:
            piece = text[span.start : span.end]
            key = piece.strip()
            if key in seen:
                continue
            seen.add(key)
            ordered.append(new_record(Candidate, (source, span, piece)))
    return ordered


def _last_object(found: list[Candidate]) -> Candidate | None:
    """The candidate ending last that looks like an answer object (fence, tag or parsable mapping)."""
    pieces = [c for c in found if c.source != SOURCE_WHOLE_RESPONSE]
    for candidate in sorted(pieces, key=lambda c: c.span.end, reverse=True):
        if candidate.source != SOURCE_EARLIER_OBJECT or isinstance(parse_mapping(candidate.text), Literal):
            return candidate
    return None


def _recover(text: str, found: list[Candidate]) -> tuple[str, Span | None, Mapping | None]:
    for candidate in reversed(found):
        parsed = parse_mapping(candidate.text)
        if isinstance(parsed, Literal) and _holds_content(parsed.value):
            return candidate.source, candidate.span, parsed.value
    return SOURCE_NOTHING, None, None


def _text_after(text: str, last: Candidate) -> tuple[str, str, int]:
    """(reason, detail, break_at) when ``last`` is the last object and text follows it.

    A tag's content is the object, so its closing ``</answer>`` is the text after it; a fenced
    block ends with its closing fence. The caret goes to the first character of what follows,
    and the detail quotes it.
    """
    object_end = last.span.end
    if last.source == SOURCE_FENCED_BLOCK:
        object_end = text.find(FENCE, object_end) + len(FENCE)
    rest = text[object_end:]
    trailing = rest.strip()
    if not trailing:  # only an empty fenced block can end the text and still not be an object
        return FORMAT_NO_FINAL_OBJECT, "the final fenced block is empty", last.span.start
    break_at = object_end + len(rest) - len(rest.lstrip())
    return FORMAT_TEXT_AFTER_OBJECT, f"text after the last object: {_clip(trailing)!r}", break_at


def extract(response: str | None, mode: str) -> Extraction:
    """Format verdict and recovered content for ``response`` under output ``mode``."""
    text = "" if response is None else response
    final, final_parse = _locate_final(text)
    json_ok = schema_ok = False
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    break_at: int | None = None
    found: list[Candidate] | None = None

    if final is None:
        if not text.strip():
            reason, detail = FORMAT_EMPTY_RESPONSE, "the response is empty"
        else:
            found = candidates(text)
            last = _last_object(found)
            if last is not None:
                reason, detail, break_at = _text_after(text, last)
            else:
                reason = FORMAT_NO_FINAL_OBJECT
                break_at = len(text.rstrip())
                detail = "the response does not end with a JSON object or a fenced block"
    else:
        if final_parse is None:
            final_parse = parse_literal(final.text.strip())
        if isinstance(final_parse, LiteralError):
            reason = FORMAT_NOT_VALID_JSON
            detail = f"final object: {final_parse.message}"
            offset = len(final.text) - len(final.text.lstrip())
            break_at = final.span.start + offset + (final_parse.position or 0)
        elif not is_mapping(final_parse.value):
            reason = FORMAT_NOT_A_MAPPING
            detail = f"the final object is a {type(final_parse.value).__name__}, not a mapping"
            break_at = final.span.start
        else:
            json_ok = True
            schema_ok, reason, missing, extra = schema_verdict(final_parse, mode)
            detail = "" if reason == FORMAT_OK else _SCHEMA_DETAIL[reason](missing, extra)
            if not schema_ok:
                break_at = final.span.start

    if final is not None and isinstance(final_parse, Literal) and _holds_content(final_parse.value):
        source, span, mapping = SOURCE_FINAL_OBJECT, final.span, final_parse.value
    elif text.strip():
        source, span, mapping = _recover(text, found if found is not None else candidates(text))
    else:
        source, span, mapping = SOURCE_NOTHING, None, None

    return new_record(
        Extraction,
        (
            text, final, final_parse, final is not None, json_ok, schema_ok, reason, detail, break_at,
            missing, extra, source, span, mapping,
        ),
    )


_CLIP_CHARS = 80


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP_CHARS else text[: _CLIP_CHARS - 1] + "…"
