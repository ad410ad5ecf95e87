"""Finding and decoding fields inside a record.

Parquet and CSV writers store nested objects as JSON strings (or, from pandas,
as Python reprs), and trainers tuck the ground truth under ``reward_input``,
``ground_truth``, ``gts`` or ``extra_info``. :class:`Scopes` looks a key up at
the top level first, then inside those containers (decoding JSON strings on
the way), so the readers find ``answer_gt`` wherever it arrived.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import Any

from .errors import RowProblem
from .sources import loads

#: Containers searched (in this order, breadth first) when a key is not at the top level.
NESTED_CONTAINERS = (
    "reward_input",
    "ground_truth",
    "gts",
    "extra_info",
    "reward_model",
    "instance",
    "doc",
    "non_tensor_batch",
    "target",  # lmms-eval drops ``doc`` from its sample logs and keeps ``str(target)``
)
_NESTED_SET = frozenset(NESTED_CONTAINERS)
_MAX_DEPTH = 3
MISSING = object()


def decode_text_value(value: Any) -> Any:
    """A JSON (or Python-literal) string holding an object or array, decoded; else unchanged.

    Raises ValueError when the string looks like an object/array but is neither.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{":
        return value
    try:
        return loads(text)
    except (ValueError, RecursionError) as first:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            raise ValueError(str(first)) from None


def get_path(record: Mapping, path: str) -> Any:
    """``record[path]``, or a dotted path (``extra_info.answer_gt``) through nested
    mappings and JSON strings. Returns :data:`MISSING` when absent."""
    if path in record:
        return record[path]
    if "." not in path:
        return MISSING
    value: Any = record
    for part in path.split("."):
        if isinstance(value, str):
            try:
                value = decode_text_value(value)
            except ValueError:
                return MISSING
        if isinstance(value, Mapping):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, (list, tuple)) and part.lstrip("-").isdigit():
            try:
                value = value[int(part)]
            except IndexError:
                return MISSING
        else:
            return MISSING
    return value


class Scopes:
    """Key lookup in a record and, lazily, in its nested ground-truth containers."""

    __slots__ = ("record", "_nested", "prefix")

    def __init__(self, record: Mapping, prefix: str = ""):
        self.record = record
        self._nested: list[tuple[str, Mapping]] | None = None
        self.prefix = prefix

    def _containers(self) -> list[tuple[str, Mapping]]:
        if self._nested is None:
            found: list[tuple[str, Mapping]] = []
            frontier: list[tuple[str, Mapping]] = [("", self.record)]
            for _ in range(_MAX_DEPTH):
                next_frontier: list[tuple[str, Mapping]] = []
                for where, scope in frontier:
                    for key in NESTED_CONTAINERS:
                        value = scope.get(key)
                        if value is None:
                            continue
                        if isinstance(value, str):
                            try:
                                value = decode_text_value(value)
                            except ValueError:
                                continue
                        if isinstance(value, Mapping):
                            path = f"{where}{key}"
                            found.append((path, value))
                            next_frontier.append((path + ".", value))
                frontier = next_frontier
                if not frontier:
                    break
            self._nested = found
        return self._nested

    def has_nested(self) -> bool:
        """Whether the record has any nested container at its top level."""
        if self._nested is not None:
            return bool(self._nested)
        if _NESTED_SET.isdisjoint(self.record):
            self._nested = []
            return False
        return bool(self._containers())

    def find(self, key: str) -> tuple[Any, str | None]:
        """``(value, path)`` of the first ``key`` found; ``(MISSING, None)`` when absent."""
        record = self.record
        if key in record and record[key] is not None:
            return record[key], self.prefix + key
        for where, scope in self._containers():
            if key in scope and scope[key] is not None:
                return scope[key], f"{self.prefix}{where}.{key}"
        return MISSING, None

    def find_any(self, keys) -> tuple[Any, str | None]:
        """The first of ``keys`` at the top level, else the first inside a nested container."""
        record = self.record
        for key in keys:
            value = record.get(key)
            if value is not None:
                return value, self.prefix + key
        return self.find_nested(keys)

    def find_nested(self, keys) -> tuple[Any, str | None]:
        """The first of ``keys`` inside the nested containers (not the top level)."""
        for where, scope in self._containers():
            for key in keys:
                value = scope.get(key)
                if value is not None:
                    return value, f"{self.prefix}{where}.{key}"
        return MISSING, None


def as_mapping(value: Any, field: str) -> Mapping:
    """Decode a ground-truth field to a mapping, or raise RowProblem naming ``field``."""
    if type(value) is dict or isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise RowProblem(field, "is an empty string, expected an object")
        try:
            decoded = decode_text_value(text)
        except ValueError as exc:
            raise RowProblem(field, f"is a string that is not valid JSON ({_clip(str(exc))})") from None
        if isinstance(decoded, Mapping):
            return dict(decoded)
        raise RowProblem(field, f"is a string that does not hold a JSON object: {_clip(text)!r}")
    raise RowProblem(field, f"has type {_type_name(value)}, expected an object")


def as_number(value: Any) -> float | None:
    """A finite-or-not float from numbers, numeric strings and booleans; None when not numeric."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    try:  # numpy scalars
        return float(value)
    except (TypeError, ValueError):
        return None


def as_int(value: Any) -> int | None:
    number = as_number(value)
    if number is None or not math.isfinite(number) or number != int(number):
        return None
    return int(number)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


type_name = _type_name
clip = _clip
