"""Layouts: what kind of file this is, and where each role's value lives in a row.

Detection looks at the first records of a file (and its name) and picks one of

- ``canonical``  -- rows as in rollout-format.md (``response``, ``answer_gt``, ...);
- ``verl``       -- verl generation dumps (``input``, ``output``, ``gts``, ``score``, ``step``);
- ``trl``        -- TRL GRPO completion tables (``prompt``, ``completion``, reward columns, ``advantage``);
- ``lm_eval``    -- lm-eval / lmms-eval sample files (``doc_id``, ``doc``, ``target``, ``resps``, ``filtered_resps``);
- ``instances``  -- trace instance files (ground truth, no response): only useful joined
  to a responses file (:class:`InstanceIndex`).

For every *role* (``response``, ``answer_gt``, ``image``, ``step``...) a layout
has a list of candidate columns; a :class:`ColumnMapping` overrides any of them
(and the layout itself). The mapping is the small object the app shows and
remembers per file shape (:meth:`ColumnMapping.shape_key`).
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from ..contracts import declared_type
from ..geometry import resolve_image_size
from ..rewards import SCORERS
from ..spec import ANNOTATION_TYPES, MODE_ALIASES, MODE_ANSWER, MODE_ANSWER_AND_ANNOTATION
from .errors import ERROR, WARNING, RowError, RowProblem
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
from .sources import Source, SourceError

LAYOUTS = ("canonical", "verl", "trl", "lm_eval", "instances")

#: Every role a column can play, with its meaning (documented in the README, "The column mapping").
ROLES: dict[str, str] = {
    "response": "the model's full text (required)",
    "prompt": "the prompt, shown beside the response",
    "answer_gt": "trace ground truth {type, value} of the answer",
    "annotation_gt": "trace ground truth {type, value} of the annotation",
    "reward_contract": "the reward contract object",
    "trace_output_mode": "answer / answer_only / answer_and_annotation",
    "image": "image path, data: URL, {path}/{bytes} record, or a list of those",
    "image_size": "[width, height] of the image",
    "point_half_life_px": "explicit half-life for point/segment similarity",
    "id": "row identity",
    "instance_id": "instance identity (also the join key to an instances file)",
    "task_id": "task family (slicing key)",
    "step": "training step (slicing key)",
    "run": "run or checkpoint label (slicing key)",
    "sample_index": "index within the samples of one prompt",
    "gold": "gold answer for the simple scorers",
}

#: Reward components a logged value can be compared with (trace rows).
TRACE_COMPONENTS = (
    "overall",
    "format",
    "accuracy",
    "answer_reward",
    "annotation_reward",
    "task_reward_raw",
    "task_reward_effective",
    "task_reward_gated",
    "format_structure_ok",
    "format_json_ok",
    "format_schema_ok",
    "answer_parse_ok",
    "annotation_parse_ok",
    "json_found",
    "zero_reward",
)
#: Logged key -> recomputed component, for trace rows.
TRACE_LOGGED_ALIASES: dict[str, str] = {
    **{c: c for c in TRACE_COMPONENTS},
    "score": "overall",
    "reward": "overall",
    "acc": "accuracy",
}
#: Logged key -> recomputed component, for simple-scorer rows (one component: ``score``).
SIMPLE_LOGGED_ALIASES: dict[str, str] = {
    k: "score" for k in ("score", "reward", "overall", "acc", "accuracy", "exact_match", "correct")
}
#: Dict columns whose keys are logged values.
_LOGGED_CONTAINERS = ("reward_extra_info", "rewards", "metrics", "scores")

_CANDIDATES: dict[str, tuple[str, ...]] = {
    "response": ("response", "output", "completion", "model_response", "generated_text", "prediction"),
    "prompt": ("prompt", "input", "question", "query"),
    "answer_gt": ("answer_gt",),
    "annotation_gt": ("annotation_gt",),
    "reward_contract": ("reward_contract",),
    "trace_output_mode": ("trace_output_mode", "output_mode"),
    "image": ("image", "images", "image_path"),
    "image_size": ("image_size", "image_sizes"),
    "point_half_life_px": ("point_half_life_px",),
    "id": ("id",),
    "instance_id": ("instance_id",),
    "task_id": ("task_id", "task", "task_name"),
    "step": ("step", "global_step"),
    "run": ("run", "checkpoint"),
    "sample_index": ("sample_index", "sample_idx"),
    "gold": ("meta.gold", "gold", "answer", "target", "gts", "ground_truth", "solution"),
}
_LAYOUT_CANDIDATES: dict[str, dict[str, tuple[str, ...]]] = {
    "verl": {"response": ("output",), "prompt": ("input", "prompt"), "gold": ("gts", "ground_truth")},
    "trl": {"response": ("completion",), "prompt": ("prompt",)},
    "lm_eval": {
        "response": ("filtered_resps", "resps"),
        "prompt": ("arguments.gen_args_0.arg_0", "arguments.0.0", "input", "doc.prompt", "doc.question"),
        "id": ("doc_id",),
        "gold": ("target", "doc.gold", "doc.answer"),
    },
}
#: Roles also looked for inside reward_input / ground_truth / gts / extra_info / doc.
_NESTED_ROLES = frozenset(
    {
        "answer_gt",
        "annotation_gt",
        "reward_contract",
        "trace_output_mode",
        "image",
        "image_size",
        "point_half_life_px",
        "task_id",
        "instance_id",
    }
)
_TRACE_GT = ("answer_gt", "annotation_gt", "reward_contract")
#: Either of these makes a row a trace row (the other missing is then that row's error).
_TRACE_KEYS = ("answer_gt", "reward_contract")
#: Columns of the known layouts that are never logged rewards.
_NOT_LOGGED = frozenset(
    {
        "step",
        "prompt",
        "completion",
        "advantage",
        "image",
        "images",
        "input",
        "output",
        "gts",
        "sample_index",
        "doc_id",
        "doc",
        "target",
        "resps",
        "filtered_resps",
        "id",
        "instance_id",
        "run",
        "task_id",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)


_INF = float("inf")
_NOTHING = (MISSING, None)
_ANNOTATION_TYPE_SET = frozenset(ANNOTATION_TYPES)
_PLAIN_NUMBERS = (int, float)
#: Steps and sample indices are stored as 64-bit integers.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _plain_positive(value: Any) -> bool:
    """A plain int or float, > 0 and finite; an int too large for a float is not."""
    return type(value) in _PLAIN_NUMBERS and 0 < value <= sys.float_info.max


def _plain_int64(value: Any) -> bool:
    return type(value) is int and _INT64_MIN <= value <= _INT64_MAX


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


class LayoutError(Exception):
    """The file as a whole cannot be read as rollouts (one line saying why)."""


class AmbiguousJoin(RowProblem):
    """A row's key matches several instances that disagree on what the score uses."""


#: ``Row.kind``: scored by the trace verifier, or by the chosen simple scorer.
TRACE_ROW = "trace"
SIMPLE_ROW = "simple"
SIMPLE_SCORER_NAMES = tuple(SCORERS)
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


def _lm_eval_identity(record: Mapping) -> tuple[str | None, str | None]:
    """lm-eval's ``filter`` and metric names (``metrics``), as texts: with the document they name
    a line (lm-eval writes one per document and filter)."""
    filter_name = record.get("filter")
    metrics = record.get("metrics")
    if isinstance(metrics, (list, tuple)):
        metrics = ",".join(str(name) for name in metrics)
    return (
        None if filter_name is None else _ident(filter_name),
        None if metrics is None or metrics == "" else _ident(metrics),
    )


# --------------------------------------------------------------------------- the mapping


@dataclass(frozen=True)
class ColumnMapping:
    """Which column plays which role -- the override of automatic detection.

    ``roles`` maps a role (see :data:`ROLES`) to a column name; a dotted path
    reaches into nested objects and JSON strings (``extra_info.answer_gt``).
    ``logged`` maps a column holding a reward the trainer logged to the component
    it should be compared with (``{"rewards/trace": "overall"}``). ``layout``
    forces one of :data:`LAYOUTS`. Roles left out are detected as usual.

    Plain data: :meth:`to_dict` / :meth:`from_dict` (and JSON) round-trip it, and
    :meth:`shape_key` names a file shape so an app can remember the mapping.
    """

    roles: Mapping[str, str] = field(default_factory=dict)
    logged: Mapping[str, str] = field(default_factory=dict)
    layout: str | None = None

    def __post_init__(self):
        roles = dict(self.roles or {})
        unknown = sorted(set(roles) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {', '.join(unknown)}; roles are: {', '.join(ROLES)}")
        for role, column in roles.items():
            if not isinstance(column, str) or not column.strip():
                raise ValueError(f"role {role!r} must map to a column name, got {column!r}")
        logged = dict(self.logged or {})
        for column, component in logged.items():
            if component not in TRACE_COMPONENTS and component != "score":
                raise ValueError(
                    f"logged column {column!r} maps to unknown component {component!r}; "
                    f"components are: score, {', '.join(TRACE_COMPONENTS)}"
                )
        if self.layout is not None and self.layout not in LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}; layouts are: {', '.join(LAYOUTS)}")
        object.__setattr__(self, "roles", {r: c.strip() for r, c in roles.items()})
        object.__setattr__(self, "logged", logged)

    @classmethod
    def of(
        cls, layout: str | None = None, logged: Mapping[str, str] | None = None, **roles: str
    ) -> ColumnMapping:
        """``ColumnMapping.of(response="completion", gold="label")``."""
        return cls(roles=roles, logged=logged or {}, layout=layout)

    @classmethod
    def from_pairs(cls, pairs: Iterable[str], logged_pairs: Iterable[str] = (), layout: str | None = None):
        """From ``ROLE=COLUMN`` strings (and ``COLUMN=COMPONENT`` for logged values)."""
        roles, logged = {}, {}
        for pair in pairs:
            role, sep, column = pair.partition("=")
            if not sep or not role.strip() or not column.strip():
                raise ValueError(f"expected ROLE=COLUMN, got {pair!r}")
            roles[role.strip()] = column.strip()
        for pair in logged_pairs:
            column, sep, component = pair.rpartition("=")
            if not sep or not column.strip() or not component.strip():
                raise ValueError(f"expected COLUMN=COMPONENT, got {pair!r}")
            logged[column.strip()] = component.strip()
        return cls(roles=roles, logged=logged, layout=layout)

    def to_dict(self) -> dict:
        return {"layout": self.layout, "roles": dict(self.roles), "logged": dict(self.logged)}

    @classmethod
    def from_dict(cls, data: Mapping) -> ColumnMapping:
        """Accepts :meth:`to_dict` output, or a flat ``{role: column}`` mapping."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a column mapping must be an object, got {type_name(data)}")
        if "roles" in data or "logged" in data or "layout" in data:
            extra = sorted(set(data) - {"roles", "logged", "layout"})
            if extra:
                raise ValueError(f"unknown key(s) in column mapping: {', '.join(extra)}")
            return cls(
                roles=data.get("roles") or {}, logged=data.get("logged") or {}, layout=data.get("layout")
            )
        return cls(roles=dict(data))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ColumnMapping:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"column mapping is not valid JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ColumnMapping:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def merged(self, other: ColumnMapping | None) -> ColumnMapping:
        """This mapping with ``other``'s entries taking precedence."""
        if other is None:
            return self
        return ColumnMapping(
            roles={**self.roles, **other.roles},
            logged={**self.logged, **other.logged},
            layout=other.layout or self.layout,
        )

    def __bool__(self) -> bool:
        return bool(self.roles or self.logged or self.layout)

    @staticmethod
    def shape_key(columns: Iterable[str]) -> str:
        """A short stable name for a set of column names (to remember a mapping per file shape)."""
        joined = "\x1f".join(sorted(set(map(str, columns))))
        return hashlib.sha1(joined.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------- detection


@dataclass(frozen=True)
class Layout:
    """What detection decided for one file (plain, picklable data)."""

    name: str
    columns: tuple[str, ...]
    paths: Mapping[str, tuple[str, ...]]
    explicit: frozenset[str]
    found: Mapping[str, str]
    logged: tuple[tuple[str, str], ...]
    has_trace_gt: bool
    step_from_name: int | None = None
    task_from_name: str | None = None
    notes: tuple[str, ...] = ()
    #: some of the first rows hold a plain gold answer and no trace ground truth (a simple scorer scores them)
    plain_gold: bool = False

    def describe(self) -> str:
        """Several lines: the layout and the column found for each role."""
        lines = [f"layout: {self.name}"]
        for role in ROLES:
            if role in self.found:
                how = "mapped" if role in self.explicit else "found"
                lines.append(f"  {role:<20} <- {self.found[role]} ({how})")
        if self.logged:
            pairs = ", ".join(f"{col} -> {comp}" for col, comp in self.logged)
            lines.append(f"  logged rewards: {pairs}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


_STEP_PATTERNS = (
    re.compile(r"^(\d+)$"),
    re.compile(r"^completions_(\d+)$"),
    re.compile(r"(?:^|[_\-.])(?:global_)?step[_\-]?(\d+)(?:$|[_\-.])"),
)
_LM_EVAL_NAME = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.:]+))?$")
#: lmms-eval names its sample logs ``{date}_samples_{task}.jsonl`` (date ``20240614_211533``).
_LMMS_EVAL_NAME = re.compile(r"^(?P<stamp>\d{8}_\d{6})_samples_(?P<task>.+)$")


def file_stem(path: str | os.PathLike | None) -> str:
    """The file name without its container endings, every other dot kept: ``a.v1.parquet`` ->
    ``a.v1``, ``b.jsonl.gz`` -> ``b``, ``out`` -> ``out``."""
    if path is None:
        return ""
    name = Path(path).name
    for ext in (".gz", ".gzip", ".jsonl", ".ndjson", ".json", ".parquet", ".pq", ".csv", ".tsv"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
    return name


def step_from_name(path: str | os.PathLike | None) -> int | None:
    """``100`` from ``100.jsonl``, ``completions_100.parquet`` or ``rollouts_step_100.jsonl``."""
    stem = file_stem(path)
    for pattern in _STEP_PATTERNS:
        match = pattern.search(stem)
        if match:
            step = int(match.group(1))
            return step if step <= _INT64_MAX else None
    return None


def _keys(records: Sequence[Mapping]) -> list[str]:
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(str(key), None)
    return list(seen)


def _guess_layout(keys: set[str], stem: str, has_trace_gt: bool, mapped_response: bool = False) -> str:
    if "doc_id" in keys and keys & {"resps", "filtered_resps"}:
        return "lm_eval"
    if stem.startswith("samples_") and "doc" in keys and keys & {"resps", "filtered_resps"}:
        return "lm_eval"
    if "completion" in keys and "prompt" in keys and ("advantage" in keys or stem.startswith("completions_")):
        return "trl"
    if "input" in keys and "output" in keys and keys & {"gts", "score"}:
        return "verl"
    if mapped_response or keys & set(_CANDIDATES["response"]):
        return "canonical"
    if has_trace_gt:
        return "instances"
    return "canonical"


def _has_trace_ground_truth(scopes: Scopes) -> bool:
    return scopes.find_any(_TRACE_KEYS)[0] is not MISSING


def _find_in_sample(
    records: Sequence[Mapping], role: str, paths: tuple[str, ...], explicit: bool
) -> str | None:
    for record in records:
        if explicit or role not in _NESTED_ROLES:
            for path in paths:
                value = get_path(record, path)
                if value is not MISSING and value is not None:
                    return path
        else:
            value, where = Scopes(record).find_any(paths)
            if value is not MISSING:
                return where
    return None


def _logged_pairs(
    records: Sequence[Mapping], keys: list[str], layout: str, mapping: ColumnMapping, simple: bool
):
    pairs: list[tuple[str, str]] = []
    for column, component in mapping.logged.items():
        pairs.append((column, component))
    taken_columns = {c for c, _ in pairs} | set(mapping.roles.values())
    candidates: list[tuple[str, str]] = []
    unknown_numeric: list[str] = []
    for key in keys:
        if key in taken_columns or key in _NOT_LOGGED:
            continue
        component = logged_component(key, simple=simple, layout=layout)
        if component is not None and _numeric_in_sample(records, key):
            candidates.append((key, component))
        elif layout == "trl" and _numeric_in_sample(records, key):
            unknown_numeric.append(key)
    for container in _LOGGED_CONTAINERS:
        for record in records:
            inner = record.get(container)
            if isinstance(inner, str):
                try:
                    inner = decode_text_value(inner)
                except ValueError:
                    inner = None
            if isinstance(inner, Mapping):
                for key in inner:
                    component = logged_component(str(key), simple=simple, layout=layout)
                    if component is not None:
                        candidates.append((f"{container}.{key}", component))
    if (
        layout == "trl"
        and len(unknown_numeric) == 1
        and not any(c == "score" or c == "overall" for _, c in candidates)
    ):
        candidates.append((unknown_numeric[0], "score" if simple else "overall"))
    # one column per component: the exact name first, then the others in column order
    candidates.sort(key=lambda pair: 0 if pair[0].rsplit(".", 1)[-1].split("/")[-1] == pair[1] else 1)
    have = {component for _, component in pairs}
    for column, component in candidates:
        if component not in have:
            pairs.append((column, component))
            have.add(component)
    return tuple(pairs)


def logged_component(name: str, *, simple: bool = False, layout: str = "canonical") -> str | None:
    """The component a logged column name stands for (``reward_format`` -> ``format``,
    ``trace_overall`` -> ``overall``, ``rewards/accuracy_reward`` -> ``accuracy``), or None."""
    aliases = SIMPLE_LOGGED_ALIASES if simple else TRACE_LOGGED_ALIASES
    base = name.rsplit("/", 1)[-1] if "/" in name else name
    if base in (
        "reward_trace",
        "trace_reward",
        "trace",
    ):  # the flat dict's constant marker, or TRL's trace reward
        return ("score" if simple else "overall") if layout == "trl" else None
    if base in aliases:
        return aliases[base]
    for prefix in ("reward_", "trace_"):
        if base.startswith(prefix) and base[len(prefix) :] in aliases:
            return aliases[base[len(prefix) :]]
    if base.endswith("_reward") and base[: -len("_reward")] in aliases:
        return aliases[base[: -len("_reward")]]
    return None


def _numeric_in_sample(records: Sequence[Mapping], key: str) -> bool:
    for record in records:
        value = record.get(key)
        if value is None:
            continue
        return isinstance(value, (int, float)) and not isinstance(value, bool) or as_number(value) is not None
    return False


def detect_layout(
    records: Sequence[Mapping],
    *,
    path: str | os.PathLike | None = None,
    mapping: ColumnMapping | None = None,
    simple: bool = False,
    joined: bool = False,
) -> Layout:
    """Decide the layout of a file from its first records (and name).

    ``simple``: rows are scored by a simple scorer (a gold answer is needed, not
    trace ground truth). ``joined``: an instances file supplies what rows lack.
    Raises :class:`LayoutError` (one line) when the file cannot be rollouts.
    """
    mapping = mapping or ColumnMapping()
    keys = _keys(records)
    key_set = set(keys)
    stem = file_stem(path)
    sample_scopes = [Scopes(r) for r in records]
    has_trace_gt = any(_has_trace_ground_truth(scope) for scope in sample_scopes)
    if not records:
        raise LayoutError("no readable rows")
    name = mapping.layout or _guess_layout(key_set, stem, has_trace_gt, "response" in mapping.roles)
    paths: dict[str, tuple[str, ...]] = {}
    for role in ROLES:
        if role in mapping.roles:
            paths[role] = (mapping.roles[role],)
        else:
            paths[role] = _LAYOUT_CANDIDATES.get(name, {}).get(role, _CANDIDATES[role])
    explicit = frozenset(mapping.roles)
    found: dict[str, str] = {}
    for role in ROLES:
        where = _find_in_sample(records, role, paths[role], role in explicit)
        if where is not None:
            found[role] = where
        elif role in explicit:
            raise LayoutError(
                f"column '{mapping.roles[role]}' (mapped to role '{role}') is not in the file; "
                f"columns: {', '.join(keys[:40])}"
            )
    notes: list[str] = []
    has_trace_gt = has_trace_gt or "answer_gt" in found or "reward_contract" in found
    if name == "instances":
        raise LayoutError(
            "this looks like an instances file (ground truth, no response column); "
            "pass it with --instances next to a responses file, or map the response column with --map response=COLUMN"
        )
    if "response" not in found:
        looked = ", ".join(paths["response"])
        raise LayoutError(
            f"no response column (looked for {looked}); columns: {', '.join(keys[:40])}; "
            "map one with --map response=COLUMN"
        )
    # Each row is scored by what it holds (RowReader.read): the first rows only need to show
    # that the file holds something to score -- trace ground truth, or a plain gold answer.
    plain_gold = "gold" in found and not all(_has_trace_ground_truth(scope) for scope in sample_scopes)
    if not has_trace_gt and "gold" not in found and not joined:
        if simple:
            raise LayoutError(
                f"no gold answer column (looked for {', '.join(paths['gold'])}) and no trace ground truth "
                "(answer_gt / reward_contract) in the first rows; name the gold column with --map gold=COLUMN"
            )
        raise LayoutError(
            "no trace ground truth (answer_gt / reward_contract) in the first rows, at the top level or under "
            "reward_input, ground_truth, gts, extra_info, and no plain gold answer; join an instances file with "
            "--instances, or choose a simple scorer with --scorer and name the gold column with --map gold=COLUMN"
        )
    if plain_gold and not simple:
        notes.append(
            f"rows with a plain gold answer ({found['gold']}) and no trace ground truth need a simple scorer: "
            "choose one with --scorer exact_match|contains|last_number|numeric_close"
        )
    step = step_from_name(path) if name in ("verl", "trl") or "step" in stem.lower() else None
    task = None
    if name == "lm_eval":
        match = _LM_EVAL_NAME.match(stem) or _LMMS_EVAL_NAME.match(stem)
        if match:
            task = match.group("task")
    # logged rewards of plain-gold rows compare with the simple score (see SIMPLE_LOGGED_ALIASES)
    logged = _logged_pairs(records, keys, name, mapping, plain_gold and not has_trace_gt)
    return Layout(
        name=name,
        columns=tuple(keys),
        paths=paths,
        explicit=explicit,
        found=found,
        logged=logged,
        has_trace_gt=has_trace_gt,
        step_from_name=step,
        task_from_name=task,
        notes=tuple(notes),
        plain_gold=plain_gold,
    )


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


def _lm_eval_texts(value: Any, field_name: str) -> list[str | None]:
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


def _norm_prompt(text: str) -> str:
    return " ".join(text.split())


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
                    prompt = _first_present(record, ("prompt", "question", "input", "problem"))
                    if prompt is not None:
                        try:
                            text = as_text(prompt, "prompt")
                        except RowProblem:
                            text = None
                        if text:
                            self.by_prompt.setdefault(_norm_prompt(text), []).append(index)
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
            key = _norm_prompt(prompt)
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
            name = _image_name(image)
            if name is not None:
                same = [i for i in candidates if _image_name(self._value(i, "image")) == name]
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
        value, _ = Scopes(self.records[index][0]).find_any(_CANDIDATES[role])
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
                value = _decoded_or_text(value)
                if role == "image":  # two files may name one image by different relative paths
                    value = _image_location(value, self.records[index][1])
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


def _decoded_or_text(value: Any) -> Any:
    """A JSON (or Python-literal) string decoded, so that it compares equal to the object it
    holds; a string that only looks like one stays the text it is."""
    try:
        return decode_text_value(value)
    except ValueError:
        return value


def _image_location(value: Any, base: str) -> Any:
    """An image path as the absolute path it names from ``base`` (other references unchanged)."""
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, Mapping) and isinstance(value.get("path"), str) and value.get("bytes") is None:
        value = value["path"]
    if isinstance(value, str) and value and not value.startswith("data:") and "://" not in value:
        return os.path.normpath(os.path.join(base, value))
    return value


def _image_name(value: Any) -> str | None:
    """The file name an image reference points to (for matching a row's image to an instance's)."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, Mapping):
        value = value.get("path")
    if not isinstance(value, str) or not value or value.startswith("data:"):
        return None
    return re.split(r"[\\/]", value)[-1] or None


def _first_present(record: Mapping, keys: Sequence[str]) -> Any:
    for key in keys:
        value = record.get(key)
        if value is not None:
            return value
    return None


# --------------------------------------------------------------------------- rows


class Row:
    """One rollout, normalised: what the scorer and the table need.

    Compiled, it is an extension type with these fields (``layouts.pxd``; a test keeps the two
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
            nested = role in _NESTED_ROLES and explicit is None
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
            for role, (explicit, _keys, dotted, can_nest) in self._plan.items()
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
        row.row_id = None if row_id is None else _ident(row_id)
        row.instance_id = None if instance_id is None else _ident(instance_id)
        row.task_id = layout.task_from_name if task_id is None else _ident(task_id)
        row.step = layout.step_from_name if step is None else step
        row.run = self.run if run is None else _ident(run)
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
            value, where = instance_scopes.find_any(_CANDIDATES[role])
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
            texts = _lm_eval_texts(raw_response, response_field)
        else:
            texts = [as_text(raw_response, response_field)]

        base = Row()
        prompt_value, prompt_field = role("prompt", _NOTHING)
        base.prompt = None if prompt_value is MISSING else _safe_text(prompt_value, prompt_field)
        row_id, _ = role("id", _NOTHING)
        base.row_id = None if row_id is MISSING else _ident(row_id)
        instance_id, _ = role("instance_id", _NOTHING)
        base.instance_id = None if instance_id is MISSING else _ident(instance_id)
        task, _ = role("task_id", _NOTHING)
        base.task_id = _ident(task) if task is not MISSING else layout.task_from_name
        step, step_field = role("step", _NOTHING)
        if step is MISSING:
            base.step = layout.step_from_name
        else:
            base.step = _int64(step, step_field, "an integer step")
        run, _ = role("run", _NOTHING)
        base.run = _ident(run) if run is not MISSING else self.run
        sample_index, sample_field = role("sample_index", _NOTHING)
        if sample_index is MISSING:
            base.sample_index = None
        else:
            base.sample_index = _int64(sample_index, sample_field, "an integer")
        base.logged = self._logged(record, scopes) if self.layout.logged else None
        if layout.name == "lm_eval":
            base.filter, base.metrics = _lm_eval_identity(record)

        joined = None
        instance_base = None
        instance = None
        if self.instances is not None:
            try:
                own_image = found.get("image")
                instance, instance_base, how = self.instances.find(
                    (base.instance_id, base.row_id), base.prompt, ordinal, own_image and own_image[0]
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
                value = _first_present(instance, ("instance_id", "id"))
                base.instance_id = None if value is None else _ident(value)
            if base.task_id is None:
                value, _ = instance_scopes.find_any(_CANDIDATES["task_id"])
                base.task_id = None if value is MISSING else _ident(value)
            if base.prompt is None:
                value = _first_present(instance, ("prompt", "question"))
                base.prompt = None if value is None else _safe_text(value, "instance:prompt")

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


def _ident(value: Any) -> str | None:
    if type(value) is str:
        return value
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _safe_text(value: Any, field_name: str | None) -> str | None:
    try:
        return as_text(value, field_name or "prompt")
    except RowProblem:
        return clip(str(value), 2000)


__all__ = [
    "ERROR",
    "SIMPLE_ROW",
    "TRACE_ROW",
    "AmbiguousJoin",
    "LAYOUTS",
    "ROLES",
    "SIMPLE_LOGGED_ALIASES",
    "TRACE_COMPONENTS",
    "TRACE_LOGGED_ALIASES",
    "WARNING",
    "ColumnMapping",
    "InstanceIndex",
    "Layout",
    "LayoutError",
    "Row",
    "RowReader",
    "as_text",
    "canonical_mode",
    "detect_layout",
    "file_stem",
    "step_from_name",
]
