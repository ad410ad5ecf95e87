"""Untrusted text -> Python value: strict JSON first, then the compatibility parser.

The compatibility parser reads Python literal syntax (single quotes, ``True``/
``None``, trailing commas, tuples, sets) through ``ast.literal_eval``. Both run
under limits so that no response can raise, recurse without bound or allocate
without bound: nesting of ``MAX_NESTING_DEPTH`` levels or more is a failure, and
the Python parser is skipped for texts longer than ``COMPAT_PARSER_MAX_CHARS``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .spec import MAX_NESTING_DEPTH

JSON = "json"
PYTHON = "python"

#: ast trees cost ~100 bytes per character of dense literal text; beyond this the
#: compatibility parser is not attempted (strict JSON still is).
COMPAT_PARSER_MAX_CHARS = 256 * 1024

_STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"' r"|'[^'\\]*(?:\\.[^'\\]*)*'", re.S)
_BRACKET = re.compile(r"[\[\]{}()]")
_OPENERS = "[{("

#: Shared decoder; ``raw_decode`` lets extraction parse an object where it starts.
_json_decoder = json.JSONDecoder()


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


def nesting_depth(text: str) -> int:
    """Deepest bracket nesting outside string literals (only computed when it can matter)."""
    if len(text) < MAX_NESTING_DEPTH or sum(text.count(o) for o in _OPENERS) < MAX_NESTING_DEPTH:
        return 0
    stripped = _STRING_LITERAL.sub("", text)
    depth = deepest = 0
    for match in _BRACKET.finditer(stripped):
        if match.group() in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_literal(text: str) -> Literal | LiteralError:
    """Parse ``text`` as JSON, else as a Python literal; never raises."""
    if not isinstance(text, str):
        return LiteralError("not text")
    if nesting_depth(text) >= MAX_NESTING_DEPTH:
        return LiteralError(f"nested {MAX_NESTING_DEPTH} levels or more")
    try:
        return Literal(json.loads(text), JSON)
    except json.JSONDecodeError as exc:
        json_error = LiteralError(f"not valid JSON: {exc.msg}", exc.pos)
    except (ValueError, RecursionError, MemoryError) as exc:  # digit limit, deep nesting
        json_error = LiteralError(f"not valid JSON: {exc}")
    if len(text) > COMPAT_PARSER_MAX_CHARS or "\x00" in text:
        return json_error
    try:
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
