"""Instance joins: responses matched to the instance files that hold their ground truth."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
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
    first, and one that brings its own ground truth (verl's ``gts``,
    ``reward_model.ground_truth``, a canonical ``answer_gt``...) to the instances whose ground
    truth equals it. Only when several that disagree are still left does the row get an
    :class:`AmbiguousJoin` error naming them; when none has the row's ground truth, a
    :class:`RowProblem` (a row with trace ground truth of its own is then read without an instance).
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
        self,
        ids: Sequence[Any],
        prompt: str | None,
        ordinal: int,
        image: Any = None,
        truth: Callable[[], Mapping[str, Any]] | None = None,
    ) -> tuple[dict, str, str]:
        """``(instance record, its folder, how it was joined)``; RowProblem when none matches,
        :class:`AmbiguousJoin` when several that disagree do. ``image`` is the row's own image;
        ``truth()`` its own ground truth -- values of :data:`TRUTH_ROLES`, or a plain ``gold``
        answer compared with an instance's ``answer_gt`` value -- asked for only when a key
        matches instances that disagree."""
        join = self.join
        if join in ("auto", "id"):
            for value in ids:
                if value is not None:
                    candidates = self.by_id.get(str(value))
                    if candidates is not None:
                        return self._settle(candidates, "id", image, truth)
            if join == "id":
                shown = ", ".join(repr(v) for v in ids if v is not None) or "none"
                raise RowProblem("id", f"no instance has this id ({shown}) in {', '.join(self.paths)}")
        if join in ("auto", "prompt") and prompt:
            key = norm_prompt(prompt)
            candidates = self.by_prompt.get(key) or self._containing(key)
            if candidates:
                return self._settle(candidates, "prompt", image, truth)
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

    def _settle(
        self, candidates: Sequence[int], how: str, image: Any, truth: Callable[[], Mapping[str, Any]] | None
    ) -> tuple[dict, str, str]:
        """The instance a key joins to: the only candidate, or the first of candidates that agree
        -- after narrowing them to the row's own image, then to its own ground truth."""
        key = "id" if how == "id" else "prompt"
        if len(candidates) > 1 and image is not None:
            name = image_name(image)
            if name is not None:
                same = [i for i in candidates if image_name(self._value(i, "image")) == name]
                if same:
                    candidates, how = same, f"{how}+image"
        matched = len(candidates)
        if truth is not None and self._differing(candidates):
            own = _truth_texts(truth())
            if own:
                same = [i for i in candidates if self._holds_truth(i, own)]
                if not same:
                    raise RowProblem(
                        key,
                        f"no instance among the {len(candidates)} that share this {key} has the row's own "
                        f"ground truth ({self._shown(candidates)})",
                    )
                candidates, how = same, f"{how}+ground_truth"
        differing = self._differing(candidates)
        if differing:
            signature = self._signature(candidates[0])
            fields = [
                role
                for position, role in enumerate(self.JOIN_FIELDS)
                if any(self._signature(i)[position] != signature[position] for i in differing)
            ]
            hint = (
                "give each instance its own id"
                if key == "id"
                else "give the rows an instance_id, or join by row order (--join order)"
            )
            which = (
                f"instances, {len(candidates)} of them with the row's own ground truth, that"
                if len(candidates) < matched
                else "instances that"
            )
            raise AmbiguousJoin(
                key, f"matches {matched} {which} differ in {', '.join(fields)} ({self._shown(candidates)}); {hint}"
            )
        return (*self.records[candidates[0]], how)

    def _differing(self, candidates: Sequence[int]) -> list[int]:
        """The candidates after the first that lend the score something else than it does."""
        if len(candidates) < 2:
            return []
        signature = self._signature(candidates[0])
        return [i for i in candidates[1:] if self._signature(i) != signature]

    def _shown(self, candidates: Sequence[int]) -> str:
        shown = ", ".join(self.places[i] for i in candidates[:5])
        return shown + (f" and {len(candidates) - 5} more" if len(candidates) > 5 else "")

    def _holds_truth(self, index: int, own: Mapping[str, str]) -> bool:
        """Whether instance ``index``'s ground truth is ``own`` (:func:`_truth_texts`)."""
        signature = self._signature(index)
        for role, text in own.items():
            if role == "gold":
                answer = decoded_or_text(self._value(index, "answer_gt"))
                value = answer.get("value", MISSING) if isinstance(answer, Mapping) else MISSING
                if value is MISSING or _plain_text(value) != text:
                    return False
            elif signature[self.JOIN_FIELDS.index(role)] != text:
                return False
        return True

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
                if role == "image":  # two files may name one image by different relative paths
                    value = image_location(decoded_or_text(value), self.records[index][1])
                parts.append(_signature_text(value))
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


#: The roles of a row's own trace ground truth that pick among instances sharing its key.
TRUTH_ROLES = ("answer_gt", "annotation_gt", "reward_contract")


def _truth_texts(truth: Mapping[str, Any]) -> dict[str, str]:
    """A row's own ground truth as comparable texts: its trace roles as instance signatures
    hold them, else its plain gold answer (:func:`_plain_text`)."""
    own = {role: _signature_text(truth[role]) for role in TRUTH_ROLES if truth.get(role, MISSING) is not MISSING}
    if not own and truth.get("gold", MISSING) not in (MISSING, None):
        own["gold"] = _plain_text(truth["gold"])
    return own


def _signature_text(value: Any) -> str:
    return json.dumps(decoded_or_text(value), sort_keys=True, default=str)


def _plain_text(value: Any) -> str:
    """An answer as text: a string as written (trimmed), anything else as compact JSON -- so the
    gold ``"7"`` of a verl row equals an instance's ``{"type": "integer", "value": 7}``."""
    value = decoded_or_text(value)
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
