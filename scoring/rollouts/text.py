"""Reading a role's value: the text of strings, chat messages and lm-eval response lists; identifiers; image locations."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import RowProblem
from .fields import (
    MISSING,
    clip,
    decode_text_value,
    type_name,
)

#: Steps and sample indices are stored as 64-bit integers.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------- text


def as_text(value: Any, field_name: str) -> str | None:
    """Response/prompt text from a string, a chat message list, or ``{"content": ...}``.

    A list of one item stands for that item, however deeply nested: unwrapped in a loop, not
    by recursion (this layer is compiled, and compiled code has no recursion limit to hit).
    """
    while isinstance(value, (list, tuple)) and len(value) == 1 and not isinstance(value[0], Mapping):
        value = value[0]
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return _message_text(value, field_name)
    if isinstance(value, (list, tuple)):
        if not value:
            return ""
        if all(isinstance(item, Mapping) for item in value):
            if any("role" in item for item in value):
                assistant = [m for m in value if m.get("role") == "assistant"]
                if field_name.startswith("response") or field_name in ("completion", "output"):
                    chosen = assistant[-1:] or [value[-1]]
                else:
                    chosen = [m for m in value if m.get("role") != "assistant"] or list(value)
                return "\n".join(_content_text(m.get("content"), field_name) or "" for m in chosen)
            return _message_text(value[-1], field_name)
        raise RowProblem(field_name, f"is an array of {len(value)} items, expected text")
    raise RowProblem(field_name, f"has type {type_name(value)}, expected text")


def _message_text(message: Mapping, field_name: str) -> str | None:
    content = message.get("content", message.get("text", MISSING))
    if content is MISSING:
        raise RowProblem(field_name, f"is an object without 'content' or 'text' (keys: {', '.join(map(str, message))})")
    return _content_text(content, field_name)


def _content_text(content: Any, field_name: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):  # multimodal parts
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    raise RowProblem(field_name, f"message content has type {type_name(content)}, expected text")


def lm_eval_texts(value: Any, field_name: str) -> list[str | None]:
    """lm-eval responses: ``["a", "b"]`` or ``[["a"], ["b"]]`` -> one text per sample."""
    if isinstance(value, str) or value is None:
        return [value]
    if isinstance(value, (list, tuple)):
        texts: list[str | None] = []
        for item in value:
            while isinstance(item, (list, tuple)) and item:
                item = item[0]
            if isinstance(item, (list, tuple)):
                item = None
            if item is not None and not isinstance(item, str):
                raise RowProblem(
                    field_name,
                    f"holds a {type_name(item)}, not generated text (a loglikelihood task cannot be scored)",
                )
            texts.append(item)
        return texts or [None]
    raise RowProblem(field_name, f"has type {type_name(value)}, expected a list of generated texts")


def norm_prompt(text: str) -> str:
    return " ".join(text.split())


def decoded_or_text(value: Any) -> Any:
    """A JSON (or Python-literal) string decoded, so that it compares equal to the object it
    holds; a string that only looks like one stays the text it is."""
    try:
        return decode_text_value(value)
    except ValueError:
        return value


def image_location(value: Any, base: str) -> Any:
    """An image path as the absolute path it names from ``base`` (other references unchanged)."""
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, Mapping) and isinstance(value.get("path"), str) and value.get("bytes") is None:
        value = value["path"]
    if isinstance(value, str) and value and not value.startswith("data:") and "://" not in value:
        return os.path.normpath(os.path.join(base, value))
    return value


def image_name(value: Any) -> str | None:
    """The file name an image reference points to (for matching a row's image to an instance's)."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, Mapping):
        value = value.get("path")
    if not isinstance(value, str) or not value or value.startswith("data:"):
        return None
    return re.split(r"[\\/]", value)[-1] or None


def first_present(record: Mapping, keys: Sequence[str]) -> Any:
    for key in keys:
        value = record.get(key)
        if value is not None:
            return value
    return None


def identifier_text(value: Any) -> str | None:
    if type(value) is str:
        return value
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def text_or_none(value: Any, field_name: str | None) -> str | None:
    try:
        return as_text(value, field_name or "prompt")
    except RowProblem:
        return clip(str(value), 2000)
