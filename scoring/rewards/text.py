"""Text helpers the simple scorers share: an output as text, and values quoted in messages
(cut short, never raising)."""

from __future__ import annotations

from typing import Any

#: Texts quoted in reasons and error messages are cut to this many characters.
QUOTE_LIMIT = 60


def quoted(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` cut to ``limit`` characters, and never raising (huge ints, odd objects)."""
    try:
        text = repr(value)
    except Exception:  # a message must never fail
        if isinstance(value, int):
            return f"<int of {value.bit_length()} bits>"
        return f"<unprintable {type(value).__name__}>"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def for_task(task_id: Any) -> str:
    return "" if task_id is None else f"task {quoted(task_id)}: "


def as_text(output: Any) -> str:
    """The output as text: ``None`` is empty, a non-str is ``str()``-ed."""
    if output is None:
        return ""
    return output if isinstance(output, str) else str(output)


__all__ = ["QUOTE_LIMIT", "as_text", "for_task", "quoted"]
