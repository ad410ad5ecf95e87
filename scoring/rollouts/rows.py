"""Records -> rows: each role's value read, checked and typed (:class:`RowReader`, :class:`Row`; compiled with Cython, ``rows.pxd``)."""

from __future__ import annotations

import math
import operator
import sys
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

from ..verifier import (
    ANNOTATION_TYPES,
    MODE_ALIASES,
    MODE_ANSWER,
    MODE_ANSWER_AND_ANNOTATION,
    declared_type,
    resolve_image_size,
)
from .errors import RowProblem
from .fields import (
    MISSING,
    NESTED_CONTAINERS,
    Scopes,
    as_int,
    as_mapping,
    as_number,
    clip,
    decode_text_value,
    get_path,
    type_name,
)
from .join import TRUTH_ROLES, AmbiguousJoin, InstanceIndex
from .mapping import (
    CANDIDATES,
    NESTED_ROLES,
    SIMPLE_ROW,
    SIMPLE_SCORER_NAMES,
    TRACE_ROW,
    Layout,
    lm_eval_identity,
)
from .text import INT64_MAX, INT64_MIN, as_text, first_present, identifier_text, lm_eval_texts, text_or_none

_INF = float("inf")
_NOTHING = (MISSING, None)
_ANNOTATION_TYPE_SET = frozenset(ANNOTATION_TYPES)
_PLAIN_NUMBERS = (int, float)


def _plain_positive(value: Any) -> bool:
    """A plain int or float, > 0 and finite; an int too large for a float is not."""
    return type(value) in _PLAIN_NUMBERS and 0 < value <= sys.float_info.max


def _plain_int64(value: Any) -> bool:
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def _plain_size(value: Any) -> tuple[float, float] | None:
    """``[width, height]`` of two plain positive finite numbers, as floats; None for anything else
    (the caller decides what else may hold a size, and what to say)."""
    if type(value) is list and len(value) == 2 and _plain_positive(value[0]) and _plain_positive(value[1]):
        return float(value[0]), float(value[1])
    return None


#: The roles of a trace row, in the order RowReader._read_direct unpacks them.
_DIRECT_ROLES = (
    "response", "prompt", "id", "instance_id", "task_id", "step", "run", "sample_index", "answer_gt",
    "reward_contract", "annotation_gt", "trace_output_mode", "image", "image_size", "point_half_life_px",
)  # fmt: skip
_NESTED_KEYS = frozenset(NESTED_CONTAINERS)
#: What an absent role reads as, appended to the present values (see :func:`_direct_getters`).
_ABSENT = (None,)


def _direct_getters(
    keys: Sequence[str | None],
) -> tuple[Callable[[Mapping], tuple], Callable[[tuple], tuple]]:
    """``(take, arrange)``: ``arrange(take(record) + _ABSENT)`` gives a record's values under
    ``keys`` in order, None where a key is None (a role absent from records of this shape), every
    other key being present. Two C-level calls per record instead of a ``get`` call per role.
    ``keys`` holds at least two (one would make ``arrange`` give the value, not a 1-tuple)."""
    if len(keys) < 2:
        raise ValueError("_direct_getters needs at least two keys")
    present = list(dict.fromkeys(key for key in keys if key is not None))  # at least one
    # a single key would make itemgetter return the value itself, not a 1-tuple: ask for it twice
    taken = present * 2 if len(present) == 1 else present
    take = operator.itemgetter(*taken)
    position = {key: index for index, key in enumerate(present)}
    absent = len(taken)  # where _ABSENT's None lands
    arrange = operator.itemgetter(*(absent if key is None else position[key] for key in keys))
    return take, arrange
_NON_FINITE = "is not a finite number (NaN or infinity), which the score cannot use"
#: How deep :func:`_non_finite_at` looks into nested ground truth (deeper is not ground truth).
_FINITE_DEPTH = 64


def _plain_finite(value: Any) -> bool:
    """True for a value with no NaN or infinite number: a string, an int, a finite float, or an
    annotation shape -- numbers in lists up to three deep, or the lists of a map -- whose sum is
    finite (NaN and infinities propagate through a sum). Summed by C calls, not a loop per
    number: this runs for every row. False when unsure (a string inside, another shape, finite
    numbers whose sum overflows): the general reader then looks closer (:func:`_non_finite_at`)."""
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool:
        return True
    if kind is float:
        return value - value == 0.0  # NaN - NaN and inf - inf are NaN
    if kind is dict:
        value = list(value.values())
    elif kind is not list:
        return False
    if not value:
        return True
    # the sum of the numbers, judged by the first item's shape; TypeError: not numbers all the way down
    first = value[0]
    try:
        if type(first) is not list:
            total = sum(value)
        elif first and type(first[0]) is list:
            total = sum(map(sum, chain.from_iterable(value)))
        else:
            total = sum(map(sum, value))
    except TypeError:
        return False
    return total - total == 0


def _non_finite_at(value: Any, where: str) -> str | None:
    """Where in ``value`` (``where``, ``where[2]``, ``where.x``) the first NaN or infinite number
    is, or None. A loop over a stack, not recursion (this layer is compiled)."""
    if _plain_finite(value):  # the common case, in C calls
        return None
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return path
        elif depth < _FINITE_DEPTH and isinstance(item, (list, tuple)):
            for index in range(len(item) - 1, -1, -1):
                stack.append((item[index], f"{path}[{index}]", depth + 1))
        elif depth < _FINITE_DEPTH and isinstance(item, Mapping):
            for key in reversed(list(item)):
                stack.append((item[key], f"{path}.{key}", depth + 1))
        elif not isinstance(item, (str, bytes, int)) and item is not None:
            try:  # numpy scalars
                number = float(item)
            except (TypeError, ValueError, OverflowError):
                continue
            if not math.isfinite(number):
                return path
    return None


def _require_finite(value: Any, where: str) -> None:
    at = _non_finite_at(value, where)
    if at is not None:
        raise RowProblem(at, _NON_FINITE)


# --------------------------------------------------------------------------- rows


class Row:
    """One rollout, normalised: what the scorer and the table need.

    Compiled, it is an extension type with these fields (``rows.pxd``; a test keeps the two
    lists equal), so the reader fills a row with stores instead of attribute lookups.
    """

    __slots__ = (
        "kind",
        "response",
        "prompt",
        "answer_gt",
        "annotation_gt",
        "reward_contract",
        "mode",
        "image",
        "image_bases",
        "image_size",
        "half_life",
        "row_id",
        "instance_id",
        "task_id",
        "step",
        "run",
        "sample_index",
        "gold",
        "meta",
        "logged",
        "warnings",
        "joined",
        "filter",
        "metrics",
    )

    def __init__(self):
        self.kind = None
        self.warnings: list[tuple[str, str]] = []
        self.joined = None
        self.filter = None
        self.metrics = None


def canonical_mode(value: Any) -> str:
    """Canonical output mode of a row's ``trace_output_mode``; RowProblem when unknown."""
    mode = MODE_ALIASES.get(value) if type(value) is str else None
    if mode is not None:
        return mode
    if not isinstance(value, str):
        raise RowProblem("trace_output_mode", f"has type {type_name(value)}, expected a string")
    key = value.strip().lower()
    mode = MODE_ALIASES.get(key)
    if mode is None:
        raise RowProblem(
            "trace_output_mode",
            f"unknown output mode {clip(value)!r} (expected answer, answer_only or answer_and_annotation)",
        )
    return mode


class RowReader:
    """Turns the records of one file into :class:`Row` objects (picklable).

    ``simple``: read a gold answer for a simple scorer instead of trace ground
    truth. ``gold_key``: where the simple scorer reads the gold in ``meta``.
    """

    def __init__(
        self,
        layout: Layout,
        *,
        base_dir: str,
        run: str | None,
        simple: bool = False,
        gold_key: str = "gold",
        instances: InstanceIndex | None = None,
    ):
        self.layout = layout
        self.base_dir = base_dir
        self.run = run
        self.simple = simple
        self.gold_key = gold_key
        self.instances = instances
        self._response_path = layout.paths["response"]
        self._prompt_path = layout.paths["prompt"]
        self._compile()

    # -- helpers ----------------------------------------------------------
    def _compile(self) -> None:
        plan = {}
        for role, paths in self.layout.paths.items():
            explicit = paths[0] if role in self.layout.explicit else None
            keys = tuple(p for p in paths if "." not in p)
            dotted = tuple(p for p in paths if "." in p)
            nested = role in NESTED_ROLES and explicit is None
            plan[role] = (explicit, keys, dotted, nested)
        self._plan = plan
        # one pass over a record's keys finds every top-level role (see _scan)
        key_role: dict[str, list[tuple[str, int]]] = {}
        for role, (explicit, keys, _dotted, _nested) in plan.items():
            names = keys if explicit is None else (() if "." in explicit else (explicit,))
            for priority, key in enumerate(names):
                key_role.setdefault(key, []).append((role, priority))
        self._key_role = key_role
        self._shapes: dict[tuple, tuple] = {}
        #: record shape -> the getters of _DIRECT_ROLES for :meth:`_read_direct`,
        #: or () when records of that shape need the general reader
        self._direct: dict[tuple, tuple] = {}

    def _get(self, record: Mapping, scopes: Scopes, role: str) -> tuple[Any, str | None]:
        """The value of ``role`` in ``record`` and where it was found (``MISSING`` when absent)."""
        explicit, keys, dotted, nested = self._plan[role]
        if explicit is not None:
            value = get_path(record, explicit)
            return (MISSING, None) if value is None else (value, explicit)
        for key in keys:
            value = record.get(key)
            if value is not None:
                return value, key
        for path in dotted:
            value = get_path(record, path)
            if value is not MISSING and value is not None:
                return value, path
        if nested:
            return scopes.find_nested(keys)
        return MISSING, None

    def _shape_plan(self, shape: tuple) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
        """For records with these keys (in this order): the (role, key) pairs to read, best
        key first, and the roles that need the slow lookup when those give nothing."""
        pairs = []
        for key in shape:
            for role, priority in self._key_role.get(key, ()):
                pairs.append((role, priority, key))
        pairs.sort(key=lambda item: (item[0], item[1]))
        nested = not _NESTED_KEYS.isdisjoint(shape)
        slow = tuple(
            role
            for role, (explicit, record_keys, dotted, can_nest) in self._plan.items()
            if ((explicit is not None and "." in explicit) or dotted or (can_nest and nested))
            and (role != "gold" or self.simple)
        )
        plan = (tuple((role, key) for role, _, key in pairs), slow)
        if len(self._shapes) < 256:
            self._shapes[shape] = plan
        return plan

    def _direct_plan(self, shape: tuple) -> tuple:
        """How :meth:`_read_direct` takes the values of :data:`_DIRECT_ROLES` from records of
        this shape (:func:`_direct_getters`), or () when such records need the general reader:
        a simple scorer or joined instances, a role that may sit in a nested container or
        behind a dotted path, or a role with two candidate keys (the general reader takes the
        first that is not null)."""
        getters: tuple = ()
        pairs, slow = self._shape_plan(shape)
        roles = [role for role, _ in pairs]
        if not (self.simple or self.instances is not None or slow or None in shape) and len(roles) == len(
            set(roles)
        ):
            key_of = dict(pairs)
            keys = [key_of.get(role) for role in _DIRECT_ROLES]
            if any(key is not None for key in keys):
                getters = _direct_getters(keys)
        if len(self._direct) < 256:
            self._direct[shape] = getters
        return getters

    def _read_direct(self, record: Mapping, getters: tuple) -> Row | None:
        """The common record -- every field present has the plain type the spec names -- read
        without the general reader's search; None hands anything else to the general reader,
        which alone reports problems and warnings. Gives the same Row as the general reader
        (tests/rollouts/test_direct_reader.py holds the two side by side)."""
        take, arrange = getters
        (
            response, prompt, row_id, instance_id, task_id, step, run, sample_index, answer_gt,
            contract, annotation_gt, mode_value, image, size, half_life,
        ) = arrange(take(record) + _ABSENT)  # fmt: skip
        if (
            type(response) is not str
            or type(answer_gt) is not dict
            or type(contract) is not dict
            or "value" not in answer_gt
            or (type(answer_gt["value"]) is not int and not _plain_finite(answer_gt["value"]))
            or (prompt is not None and type(prompt) is not str)
            or (step is not None and not _plain_int64(step))
            or (sample_index is not None and not _plain_int64(sample_index))
        ):
            return None
        annotation_contract = contract.get("annotation")
        if annotation_contract is not None and type(annotation_contract) is not dict:
            return None
        if mode_value is None:
            mode = None if annotation_contract is None else MODE_ANSWER_AND_ANNOTATION
        else:
            mode = MODE_ALIASES.get(mode_value) if type(mode_value) is str else None
            if mode is None:
                return None
        if annotation_gt is None:
            if mode == MODE_ANSWER_AND_ANNOTATION:
                return None
        elif not (
            type(annotation_gt) is dict
            and annotation_gt.get("type") in _ANNOTATION_TYPE_SET
            and "value" in annotation_gt
            and _plain_finite(annotation_gt["value"])
        ):
            return None
        if size is not None:
            size = _plain_size(size)
            if size is None:
                return None
        elif "metadata" in record or "extra_info" in record:
            return None  # the size may be in there
        if half_life is not None:
            if not _plain_positive(half_life):
                return None
            half_life = float(half_life)
        layout = self.layout
        row = Row()
        row.kind = TRACE_ROW
        row.response = response
        row.prompt = prompt
        row.row_id = None if row_id is None else identifier_text(row_id)
        row.instance_id = None if instance_id is None else identifier_text(instance_id)
        row.task_id = layout.task_from_name if task_id is None else identifier_text(task_id)
        row.step = layout.step_from_name if step is None else step
        row.run = self.run if run is None else identifier_text(run)
        row.sample_index = sample_index
        row.logged = self._logged(record, None) if layout.logged else None
        row.answer_gt = answer_gt
        row.annotation_gt = annotation_gt
        row.reward_contract = contract
        row.gold = row.meta = None
        row.mode = mode
        row.image = image
        row.image_bases = () if image is None else (self.base_dir,)
        row.image_size = size
        row.half_life = half_life
        return row

    def _scan(self, record: Mapping, scopes: Scopes) -> dict[str, tuple[Any, str | None]]:
        """Every role's value in ``record`` and where it was found (absent roles are left out)."""
        shape = tuple(record)
        plan = self._shapes.get(shape)
        if plan is None:
            plan = self._shape_plan(shape)
        pairs, slow = plan
        found: dict[str, tuple[Any, str | None]] = {}
        for role, key in pairs:
            if role not in found:
                value = record[key]
                if value is not None:
                    found[role] = (value, key)
        for role in slow:
            if role not in found:
                value, where = self._role_slow(record, scopes, role)
                if value is not MISSING:
                    found[role] = (value, where)
        return found

    def _role_slow(self, record: Mapping, scopes: Scopes, role: str) -> tuple[Any, str | None]:
        explicit, keys, dotted, nested = self._plan[role]
        if explicit is not None:
            value = get_path(record, explicit)
            return (MISSING, None) if value is None else (value, explicit)
        for path in dotted:
            value = get_path(record, path)
            if value is not MISSING and value is not None:
                return value, path
        if nested and scopes.has_nested():
            return scopes.find_nested(keys)
        return MISSING, None

    def _lookup(
        self, record: Mapping, scopes: Scopes, found: dict, role: str, joined
    ) -> tuple[Any, str | None, str]:
        """A role's value, falling back to the joined instance; also the folder the value is relative to."""
        hit = found.get(role)
        if hit is not None:
            return hit[0], hit[1], self.base_dir
        if joined is not None:
            instance_scopes, instance_base = joined
            value, where = instance_scopes.find_any(CANDIDATES[role])
            if value is not MISSING:
                return value, where, instance_base
        return MISSING, None, self.base_dir

    def read(self, record: Mapping, ordinal: int) -> list[Row]:
        """One record -> its rollouts (lm-eval records with several samples give several)."""
        shape = tuple(record)
        getters = self._direct.get(shape)
        if getters is None:
            getters = self._direct_plan(shape)
        if getters:
            row = self._read_direct(record, getters)
            if row is not None:
                return [row]
        scopes = Scopes(record)
        layout = self.layout
        found = self._scan(record, scopes)
        role = found.get
        raw_response, response_field = role("response", _NOTHING)
        if raw_response is MISSING:
            # an explicit null counts as an empty response; an absent column is an error
            present = next((p for p in self._response_path if get_path(record, p) is not MISSING), None)
            if present is None:
                raise RowProblem(self._response_path[0], "missing (no response in this row)")
            raw_response, response_field = None, present
        if type(raw_response) is str:
            texts = [raw_response]
        elif layout.name == "lm_eval" and isinstance(raw_response, (list, tuple)):
            texts = lm_eval_texts(raw_response, response_field)
        else:
            texts = [as_text(raw_response, response_field)]

        base = Row()
        prompt_value, prompt_field = role("prompt", _NOTHING)
        base.prompt = None if prompt_value is MISSING else text_or_none(prompt_value, prompt_field)
        row_id, _ = role("id", _NOTHING)
        base.row_id = None if row_id is MISSING else identifier_text(row_id)
        instance_id, _ = role("instance_id", _NOTHING)
        base.instance_id = None if instance_id is MISSING else identifier_text(instance_id)
        task, _ = role("task_id", _NOTHING)
        base.task_id = identifier_text(task) if task is not MISSING else layout.task_from_name
        step, step_field = role("step", _NOTHING)
        if step is MISSING:
            base.step = layout.step_from_name
        else:
            base.step = _int64(step, step_field, "an integer step")
        run, _ = role("run", _NOTHING)
        base.run = identifier_text(run) if run is not MISSING else self.run
        sample_index, sample_field = role("sample_index", _NOTHING)
        if sample_index is MISSING:
            base.sample_index = None
        else:
            base.sample_index = _int64(sample_index, sample_field, "an integer")
        base.logged = self._logged(record, scopes) if self.layout.logged else None
        if layout.name == "lm_eval":
            base.filter, base.metrics = lm_eval_identity(record)

        joined = None
        instance_base = None
        instance = None
        if self.instances is not None:
            try:
                own_image = found.get("image")
                instance, instance_base, how = self.instances.find(
                    (base.instance_id, base.row_id),
                    base.prompt,
                    ordinal,
                    own_image and own_image[0],
                    lambda: _own_truth(record, found),
                )
            except AmbiguousJoin:
                raise  # the candidates could lend different images or sizes, even to a row with its own ground truth
            except RowProblem:
                # a row with its own ground truth needs no instance (it only lends the image)
                if not _has_trace_gt(self, record, scopes):
                    raise
        if instance is not None:
            instance_scopes = Scopes(instance, prefix="instance:")
            joined = (instance_scopes, instance_base)
            base.joined = how
            if base.instance_id is None:
                value = first_present(instance, ("instance_id", "id"))
                base.instance_id = None if value is None else identifier_text(value)
            if base.task_id is None:
                value, _ = instance_scopes.find_any(CANDIDATES["task_id"])
                base.task_id = None if value is MISSING else identifier_text(value)
            if base.prompt is None:
                value = first_present(instance, ("prompt", "question"))
                base.prompt = None if value is None else text_or_none(value, "instance:prompt")

        if base.filter is not None or base.metrics is not None:  # lm-eval: one line per document and filter
            base.row_id = "/".join(
                part for part in (base.row_id, base.filter, base.metrics) if part is not None
            )

        lookup = self._lookup
        # each row is scored by what it holds: trace ground truth, else a plain gold answer
        if not self._read_trace(base, record, scopes, found, joined):
            self._read_simple(base, record, scopes, found, joined)

        # image and its size
        image, _, image_base = lookup(record, scopes, found, "image", joined)
        if image is MISSING:
            base.image = None
            base.image_bases = ()
        else:
            base.image = image
            bases = [image_base]
            if instance_base and instance_base not in bases:
                bases.append(instance_base)
            if self.base_dir not in bases:
                bases.append(self.base_dir)
            base.image_bases = tuple(bases)
        size_value, size_field, _ = lookup(record, scopes, found, "image_size", joined)
        base.image_size = _plain_size(size_value)
        if base.image_size is None and size_value is not MISSING and base.kind == TRACE_ROW:
            _require_finite(size_value, size_field or "image_size")
        if base.image_size is None:
            metadata, extra_info = record.get("metadata"), record.get("extra_info")
            if size_value is not MISSING or metadata is not None or extra_info is not None:
                base.image_size = resolve_image_size(
                    None if size_value is MISSING else size_value, None, metadata, extra_info
                )
                if base.image_size is None and size_value is not MISSING:
                    base.warnings.append(
                        (
                            size_field,
                            f"is not a usable [width, height] ({clip(repr(size_value))}); size read from the image instead",
                        )
                    )
        half, half_field, _ = lookup(record, scopes, found, "point_half_life_px", joined)
        if half is MISSING:
            base.half_life = None
        else:
            number = as_number(half)
            if number is None or not (number > 0 and number != _INF):
                raise RowProblem(half_field, f"must be a finite number > 0, got {clip(repr(half))}")
            base.half_life = number

        if len(texts) == 1:
            base.response = texts[0]
            return [base]
        rows = []
        for index, text in enumerate(texts):
            row = Row()
            for slot in Row.__slots__:
                if slot not in ("response", "sample_index", "warnings"):
                    setattr(row, slot, getattr(base, slot))
            row.warnings = list(base.warnings)
            row.response = text
            row.sample_index = index
            rows.append(row)
        return rows

    def _logged(self, record: Mapping, scopes: Scopes) -> dict[str, float]:
        logged: dict[str, float] = {}
        for column, component in self.layout.logged:
            value = get_path(record, column)
            if value is MISSING or value is None:
                continue
            if isinstance(value, (list, tuple)) and len(value) == 1:
                value = value[0]
            number = as_number(value)
            if number is not None:
                logged[component] = number
        return logged

    def _read_simple(self, row: Row, record: Mapping, scopes: Scopes, found: dict, joined) -> None:
        """A row without trace ground truth: its plain gold answer, for the chosen simple scorer."""
        row.kind = SIMPLE_ROW
        meta = record.get("meta")
        if isinstance(meta, str):
            try:
                meta = decode_text_value(meta)
            except ValueError:
                meta = None
        meta = dict(meta) if isinstance(meta, Mapping) else {}
        gold = meta.get(self.gold_key, MISSING)
        if gold is MISSING or gold is None:
            gold, where = MISSING, None
            for path in self.layout.paths["gold"]:
                value = get_path(record, path)
                if value is not MISSING and value is not None:
                    gold, where = value, path
                    break
            if gold is MISSING:
                value, where, _ = self._lookup(record, scopes, found, "gold", joined)
                gold = value
            if gold is MISSING:
                looked = ", ".join(dict.fromkeys((f"meta.{self.gold_key}", *self.layout.paths["gold"])))
                raise RowProblem(
                    "answer_gt" if not self.simple else "gold",
                    "missing: no trace ground truth (answer_gt / reward_contract) at the top level or under "
                    f"reward_input, ground_truth, gts, extra_info, and no plain gold answer (looked for {looked}); "
                    "name the gold column with --map gold=COLUMN",
                )
            if isinstance(gold, (Mapping, list)) and not isinstance(gold, str):
                raise RowProblem(
                    where,
                    f"has type {type_name(gold)}, expected trace ground truth (answer_gt / reward_contract) "
                    "or a plain gold answer",
                )
            meta[self.gold_key] = gold
            where = where or "gold"
        else:
            where = f"meta.{self.gold_key}"
        if not self.simple:
            raise RowProblem(
                where,
                f"holds a plain gold answer ({clip(repr(meta[self.gold_key]))}), not trace ground truth: "
                f"choose a simple scorer for such rows with --scorer {'|'.join(SIMPLE_SCORER_NAMES)}",
            )
        gold = meta[self.gold_key]
        if type(gold) is float and not gold - gold == 0.0:
            raise RowProblem(where, f"is {gold!r}, not a gold answer the score can use")
        row.gold = gold
        row.meta = meta
        row.answer_gt = row.annotation_gt = row.reward_contract = None
        row.mode = None

    def _read_trace(self, row: Row, record: Mapping, scopes: Scopes, found: dict, joined) -> None:
        if joined is None:
            answer_value, answer_field = found.get("answer_gt", _NOTHING)
            contract_value, contract_field = found.get("reward_contract", _NOTHING)
            annotation_value, annotation_field = found.get("annotation_gt", _NOTHING)
            mode_value = found.get("trace_output_mode", _NOTHING)[0]
        else:
            lookup = self._lookup
            answer_value, answer_field, _ = lookup(record, scopes, found, "answer_gt", joined)
            contract_value, contract_field, _ = lookup(record, scopes, found, "reward_contract", joined)
            annotation_value, annotation_field, _ = lookup(record, scopes, found, "annotation_gt", joined)
            mode_value = lookup(record, scopes, found, "trace_output_mode", joined)[0]
        if answer_value is MISSING and contract_value is MISSING:
            return False  # not a trace row
        row.kind = TRACE_ROW
        if answer_value is MISSING:
            raise RowProblem("answer_gt", "missing")
        if contract_value is MISSING:
            raise RowProblem("reward_contract", "missing")
        answer_gt = answer_value if type(answer_value) is dict else as_mapping(answer_value, answer_field)
        if "value" not in answer_gt:
            raise RowProblem(f"{answer_field}.value", "missing (answer_gt needs {type, value})")
        _require_finite(answer_gt["value"], f"{answer_field}.value")
        contract = (
            contract_value if type(contract_value) is dict else as_mapping(contract_value, contract_field)
        )
        annotation_gt = None
        if annotation_value is not MISSING:
            annotation_gt = (
                annotation_value
                if type(annotation_value) is dict
                else as_mapping(annotation_value, annotation_field)
            )
        annotation_contract = contract.get("annotation")
        has_annotation_contract = type(annotation_contract) is dict or isinstance(
            annotation_contract, Mapping
        )
        if mode_value is MISSING:
            mode = MODE_ANSWER_AND_ANNOTATION if has_annotation_contract else None
        else:
            mode = canonical_mode(mode_value)
        row.mode = mode  # None: answer mode by default (no annotation contract)
        effective = mode or MODE_ANSWER
        problems: list[tuple[str, str]] = []
        if annotation_gt is None:
            if effective == MODE_ANSWER_AND_ANNOTATION:
                problems.append(("annotation_gt", "missing (required in answer_and_annotation mode)"))
        elif annotation_gt.get("type") in _ANNOTATION_TYPE_SET and "value" in annotation_gt:
            where = _non_finite_at(annotation_gt["value"], f"{annotation_field}.value")
            if where is not None:
                problems.append((where, _NON_FINITE))
        else:
            declared = annotation_gt.get("type")
            where = f"{annotation_field}.type"
            if declared is None:
                problems.append((where, "missing"))
            elif declared_type(annotation_gt) is None:
                problems.append(
                    (
                        where,
                        f"unknown annotation type {clip(str(declared))!r} (known: {', '.join(ANNOTATION_TYPES)})",
                    )
                )
            elif "value" not in annotation_gt:
                problems.append((f"{annotation_field}.value", "missing (annotation_gt needs {type, value})"))
        for where, reason in problems:
            if effective == MODE_ANSWER_AND_ANNOTATION:
                raise RowProblem(where, reason)
            row.warnings.append((where, reason + "; ignored in answer mode"))
        row.answer_gt = answer_gt
        row.annotation_gt = annotation_gt
        row.reward_contract = contract
        row.gold = row.meta = None
        return True


def _own_truth(record: Mapping, found: dict) -> dict[str, Any]:
    """A row's own ground truth, to choose among instances sharing its key: its trace roles
    (``answer_gt``... at the top level or in ``gts`` / ``reward_model.ground_truth``), else its
    plain gold answer (verl's ``gts``, a dataset's ``reward_model.ground_truth``)."""
    truth = {role: found[role][0] for role in TRUTH_ROLES if role in found}
    if not truth:
        gold = found["gold"][0] if "gold" in found else get_path(record, "reward_model.ground_truth")
        if gold is not MISSING and gold is not None:
            truth["gold"] = gold
    return truth


def _has_trace_gt(reader: RowReader, record: Mapping, scopes: Scopes) -> bool:
    value, _ = reader._get(record, scopes, "answer_gt")
    if value is not MISSING:
        return True
    value, _ = reader._get(record, scopes, "reward_contract")
    return value is not MISSING


def _int64(value: Any, field: str | None, expected: str) -> int:
    """``value`` as an integer the table's 64-bit columns hold; RowProblem naming ``field`` otherwise."""
    number = value if type(value) is int else as_int(value)
    if number is None:
        raise RowProblem(field, f"must be {expected}, got {clip(repr(value))}")
    if not _plain_int64(number):
        raise RowProblem(field, f"must be {expected} within 64 bits, got {clip(repr(value))}")
    return number
