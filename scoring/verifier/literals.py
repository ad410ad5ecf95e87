"""Untrusted text -> Python value: strict JSON first, then the compatibility parser.

The compatibility parser reads Python literal syntax (single quotes, ``True``/
``None``, trailing commas, tuples, sets) through ``ast.literal_eval``. Both run
under limits so that no response can raise, recurse without bound or allocate
without bound: nesting of ``MAX_NESTING_DEPTH`` levels or more is a failure, and
the Python parser is skipped for texts longer than ``COMPAT_PARSER_MAX_CHARS``.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import sys
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from .records import new_record
from .spec import MAX_NESTING_DEPTH

JSON = "json"
PYTHON = "python"

#: ast trees cost ~100 bytes per character of dense literal text; beyond this the
#: compatibility parser is not attempted (strict JSON still is).
COMPAT_PARSER_MAX_CHARS = 256 * 1024

_QUOTE = re.compile(r"[\"']")
_STRING_REST = {
    '"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.S),
    "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*'", re.S),
}
_OPEN_CODES = np.frombuffer(b"[{(", dtype=np.uint8)
_CLOSE_CODES = np.frombuffer(b"]})", dtype=np.uint8)

#: ``json.JSONDecoder().raw_decode`` without its Python-level wrapper: ``json_value_at(text, i)``
#: is ``(value, end)`` for the JSON value starting at ``i``, or raises StopIteration when none
#: starts there (the wrapper only turns that into a JSONDecodeError). Extraction uses it to parse
#: an object where it starts.
json_value_at = json.JSONDecoder().scan_once

#: What ``json.loads`` skips before and after the document (``json.decoder.WHITESPACE``).
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*", re.VERBOSE | re.MULTILINE | re.DOTALL)


def json_document(text: str) -> Any:
    """``json.loads(text)`` for a ``str``, the same value or the same JSONDecodeError (message and
    position), without the three interpreted frames ``json.loads`` runs around the C scanner: on
    a short object those cost about as much as the scan itself."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value, end = json_value_at(text, _JSON_WHITESPACE.match(text, 0).end())
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    end = _JSON_WHITESPACE.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


class Literal(NamedTuple):
    """A parsed value and which parser read it (``"json"`` or ``"python"``)."""

    value: Any
    parser: str


class LiteralError(NamedTuple):
    """Why a text is not a literal: message plus character offset when known."""

    message: str
    position: int | None = None


def is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)`` with a fast path for the dicts parsers return."""
    return type(value) is dict or isinstance(value, Mapping)


def _outside_strings(text: str) -> str:
    """``text`` without its string literals, in one linear pass (an unterminated string ends it)."""
    pieces = []
    position = 0
    while True:
        quote = _QUOTE.search(text, position)
        if quote is None:
            pieces.append(text[position:])
            break
        pieces.append(text[position : quote.start()])
        rest = _STRING_REST[quote.group()].match(text, quote.end())
        if rest is None:
            break
        position = rest.end()
    return "".join(pieces)


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting outside string literals.

    Exact when it could matter; for texts with few brackets, their count (an
    upper bound that is cheap to get) is returned instead.
    """
    openers = text.count("[") + text.count("{") + text.count("(")
    if openers < _MEASURE_FROM_OPENERS:
        return openers
    stripped = _outside_strings(text).encode("utf-8", "surrogatepass")
    # UTF-8 multi-byte sequences never contain ASCII bytes, so bytes are safe to count.
    codes = np.frombuffer(stripped, dtype=np.uint8)
    steps = np.isin(codes, _OPEN_CODES).astype(np.int32) - np.isin(codes, _CLOSE_CODES)
    return int(np.cumsum(steps).max(initial=0))


#: Below this many opening brackets, their count bounds the depth well enough.
_MEASURE_FROM_OPENERS = 256
#: Python frames a parse or a walk over a value may need per nesting level, plus slack.
_FRAMES_PER_LEVEL = 3
_FRAME_SLACK = 200


@contextlib.contextmanager
def recursion_headroom(depth: int = MAX_NESTING_DEPTH):
    """Let a value nested ``depth`` levels be parsed or walked recursively.

    The spec makes 1,000 levels a parse failure and anything shallower valid;
    CPython's default limit of 1,000 frames would fail earlier than that.
    """
    previous = sys.getrecursionlimit()
    needed = _FRAMES_PER_LEVEL * depth + _FRAME_SLACK + _stack_depth()
    if needed > previous:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if needed > previous:
            sys.setrecursionlimit(previous)


def _stack_depth() -> int:
    """Frames already on the stack."""
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def parse_literal(text: str) -> Literal | LiteralError:
    """Parse ``text`` as JSON, else as a Python literal; never raises."""
    if not isinstance(text, str):
        return LiteralError("not text")
    depth = nesting_depth(text)
    if depth >= MAX_NESTING_DEPTH:
        return LiteralError(f"nested {MAX_NESTING_DEPTH} levels or more")
    if depth >= _MEASURE_FROM_OPENERS:
        with recursion_headroom(depth):
            return _parse(text)
    return _parse(text)


def _parse(text: str) -> Literal | LiteralError:
    try:
        return new_record(Literal, (json_document(text), JSON))
    except json.JSONDecodeError as exc:
        json_error = LiteralError(f"not valid JSON: {exc.msg}", exc.pos)
    except (ValueError, RecursionError, MemoryError) as exc:  # digit limit, deep nesting
        json_error = LiteralError(f"not valid JSON: {exc}")
    if len(text) > COMPAT_PARSER_MAX_CHARS or "\x00" in text:
        return json_error
    try:
        with warnings.catch_warnings():  # invalid escapes in model text warn; they are not our news
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            return Literal(ast.literal_eval(text.strip()), PYTHON)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
        return json_error
    except Exception:  # noqa: BLE001 - ast may raise anything on hostile text; a failure is the answer
        return json_error


def parse_mapping(text: str) -> Literal | LiteralError:
    """Like :func:`parse_literal` but cheap-rejects texts that cannot be a mapping."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return LiteralError("not an object")
    return parse_literal(stripped)
