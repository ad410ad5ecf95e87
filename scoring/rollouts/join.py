"""Instance joins: responses matched to the instance files that hold their ground truth."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import RowError, RowProblem
from .fields import (
    MISSING,
    Scopes,
)
from .mapping import CANDIDATES
from .sources import Source, SourceError
from .text import as_text, decoded_or_text, first_present, image_location, image_name, norm_prompt


class AmbiguousJoin(RowProblem):
    """A row's key matches several instances that disagree on what the score uses."""


# --------------------------------------------------------------------------- joining


class InstanceIndex:
    """Trace instances (ground truth, image) that responses are joined to.

    ``join``: ``auto`` (row id / instance_id, else prompt text), ``id``,
    ``prompt`` (exact after collapsing white space, else the instance prompt
    contained in the row's prompt -- for chat templates), or ``order`` (the k-th
    row of each responses file takes the k-th instance).

    A key that several instances share joins only when they agree on everything the score
    uses (:data:`JOIN_FIELDS`); a row that brings its own image narrows them to that image
    first. Otherwise the row gets an :class:`AmbiguousJoin` error naming the candidates.
    """

    JOINS = ("auto", "id", "prompt", "order")
    #: What an instance lends that the score reads: instances sharing a key must agree on these.
    JOIN_FIELDS = (
        "answer_gt", "annotation_gt", "reward_contract", "trace_output_mode", "image", "image_size",
        "point_half_life_px",
    )  # fmt: skip

    def __init__(self, paths: Sequence[str | os.PathLike], *, join: str = "auto", access=None):
        if join not in self.JOINS:
            raise ValueError(f"unknown join {join!r}; joins are: {', '.join(self.JOINS)}")
        self.join = join
        self.records: list[tuple[dict, str]] = []
        #: ``file:line`` of each instance (named by an ambiguous join's error)
        self.places: list[str] = []
        self.by_id: dict[str, list[int]] = {}
        self.by_prompt: dict[str, list[int]] = {}
        self.errors: list[RowError] = []
        self.paths = [str(p) for p in paths]
        for path in paths:
            try:
                source = Source(path, access=access)  # access: a DataAccess (default: the environment's)
            except SourceError as exc:
                self.errors.append(exc.error)
                continue
            base = str(Path(path).resolve().parent)
            try:
                for line, record in source.records():
                    if isinstance(record, RowError):
                        self.errors.append(record)
                        continue
                    index = len(self.records)
                    self.records.append((record, base))
                    self.places.append(f"{path}:{line}")
                    ids = {str(record[key]) for key in ("instance_id", "id") if record.get(key) is not None}
                    for value in ids:
                        self.by_id.setdefault(value, []).append(index)
                    prompt = first_present(record, ("prompt", "question", "input", "problem"))
                    if prompt is not None:
                        try:
                            text = as_text(prompt, "prompt")
                        except RowProblem:
                            text = None
                        if text:
                            self.by_prompt.setdefault(norm_prompt(text), []).append(index)
            except SourceError as exc:
                self.errors.append(exc.error)
        self._contained: dict[str, tuple[int, ...]] = {}
        self._signatures: dict[int, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self.records)

    def find(
        self, ids: Sequence[Any], prompt: str | None, ordinal: int, image: Any = None
    ) -> tuple[dict, str, str]:
        """``(instance record, its folder, how it was joined)``; RowProblem when none matches,
        :class:`AmbiguousJoin` when several that disagree do. ``image`` is the row's own image."""
        join = self.join
        if join in ("auto", "id"):
            for value in ids:
                if value is not None:
                    candidates = self.by_id.get(str(value))
                    if candidates is not None:
                        return self._settle(candidates, "id", f"id {value!r}", image)
            if join == "id":
                shown = ", ".join(repr(v) for v in ids if v is not None) or "none"
                raise RowProblem("id", f"no instance has this id ({shown}) in {', '.join(self.paths)}")
        if join in ("auto", "prompt") and prompt:
            key = norm_prompt(prompt)
            candidates = self.by_prompt.get(key) or self._containing(key)
            if candidates:
                return self._settle(candidates, "prompt", "prompt", image)
        if join == "order":
            if ordinal < len(self.records):
                return (*self.records[ordinal], "order")
            raise RowProblem(
                None, f"row {ordinal + 1} has no instance: the instances file has {len(self.records)} rows"
            )
        shown = ", ".join(repr(v) for v in ids if v is not None)
        what = f"id {shown} or " if shown else ""
        raise RowProblem(
            "id" if shown else "prompt",
            f"no instance matches this row's {what}prompt in {', '.join(self.paths)} (try --join order)",
        )

    def _settle(self, candidates: Sequence[int], how: str, key: str, image: Any) -> tuple[dict, str, str]:
        """The instance a key joins to: the only candidate, or the first of candidates that agree."""
        if len(candidates) > 1 and image is not None:
            name = image_name(image)
            if name is not None:
                same = [i for i in candidates if image_name(self._value(i, "image")) == name]
                if same:
                    candidates, how = same, f"{how}+image"
        first = candidates[0]
        if len(candidates) > 1:
            signature = self._signature(first)
            differing = [i for i in candidates[1:] if self._signature(i) != signature]
            if differing:
                fields = [
                    role
                    for position, role in enumerate(self.JOIN_FIELDS)
                    if any(self._signature(i)[position] != signature[position] for i in differing)
                ]
                shown = ", ".join(self.places[i] for i in candidates[:5])
                more = f" and {len(candidates) - 5} more" if len(candidates) > 5 else ""
                by_id = how.startswith("id")
                hint = (
                    "give each instance its own id"
                    if by_id
                    else "give the rows an instance_id, or join by row order (--join order)"
                )
                raise AmbiguousJoin(
                    "id" if by_id else "prompt",
                    f"matches {len(candidates)} instances that differ in {', '.join(fields)} ({shown}{more}); {hint}",
                )
        return (*self.records[first], how)

    def _value(self, index: int, role: str) -> Any:
        value, _ = Scopes(self.records[index][0]).find_any(CANDIDATES[role])
        return value

    def _signature(self, index: int) -> tuple[str, ...]:
        """What instance ``index`` lends the score, one comparable text per :data:`JOIN_FIELDS` role."""
        signature = self._signatures.get(index)
        if signature is None:
            parts = []
            for role in self.JOIN_FIELDS:
                value = self._value(index, role)
                if value is MISSING:
                    parts.append("")
                    continue
                value = decoded_or_text(value)
                if role == "image":  # two files may name one image by different relative paths
                    value = image_location(value, self.records[index][1])
                parts.append(json.dumps(value, sort_keys=True, default=str))
            signature = self._signatures[index] = tuple(parts)
        return signature

    def _containing(self, key: str) -> tuple[int, ...]:
        """The instances whose prompt is the longest one found inside ``key`` (chat templates wrap it)."""
        if key in self._contained:
            return self._contained[key]
        best: list[int] = []
        best_len = 0
        for prompt, indices in self.by_prompt.items():
            if len(prompt) >= best_len and prompt in key:
                if len(prompt) > best_len:
                    best, best_len = [], len(prompt)
                best.extend(indices)
        found = tuple(best)
        if len(self._contained) < 100_000:
            self._contained[key] = found
        return found
