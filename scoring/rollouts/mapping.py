"""Layouts: what kind of file this is, and where each role's value lives in a row.

Detection looks at the first records of a file (and its name) and picks one of

- ``canonical``  -- rows as in rollout-format.md (``response``, ``answer_gt``, ...);
- ``verl``       -- verl generation dumps (``input``, ``output``, ``gts``, ``score``, ``step``);
- ``trl``        -- TRL GRPO completion tables (``prompt``, ``completion``, reward columns, ``advantage``);
- ``lm_eval``    -- lm-eval / lmms-eval sample files (``doc_id``, ``doc``, ``target``, ``resps``, ``filtered_resps``);
- ``instances``  -- trace instance files (ground truth, no response): only useful joined
  to a responses file (:class:`~scoring.rollouts.join.InstanceIndex`).

For every *role* (``response``, ``answer_gt``, ``image``, ``step``...) a layout
has a list of candidate columns; a :class:`ColumnMapping` overrides any of them
(and the layout itself). The mapping is the small object the app shows and
remembers per file shape (:meth:`ColumnMapping.shape_key`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..rewards import SCORERS
from .fields import (
    MISSING,
    Scopes,
    as_number,
    decode_text_value,
    get_path,
    type_name,
)
from .text import INT64_MAX, identifier_text

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

CANDIDATES: dict[str, tuple[str, ...]] = {
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
NESTED_ROLES = frozenset(
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


class LayoutError(Exception):
    """The file as a whole cannot be read as rollouts (one line saying why)."""


#: ``Row.kind``: scored by the trace verifier, or by the chosen simple scorer.
TRACE_ROW = "trace"
SIMPLE_ROW = "simple"
SIMPLE_SCORER_NAMES = tuple(SCORERS)


def lm_eval_identity(record: Mapping) -> tuple[str | None, str | None]:
    """lm-eval's ``filter`` and metric names (``metrics``), as texts: with the document they name
    a line (lm-eval writes one per document and filter)."""
    filter_name = record.get("filter")
    metrics = record.get("metrics")
    if isinstance(metrics, (list, tuple)):
        metrics = ",".join(str(name) for name in metrics)
    return (
        None if filter_name is None else identifier_text(filter_name),
        None if metrics is None or metrics == "" else identifier_text(metrics),
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
            return step if step <= INT64_MAX else None
    return None


def record_keys(records: Sequence[Mapping]) -> list[str]:
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
    if mapped_response or keys & set(CANDIDATES["response"]):
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
        if explicit or role not in NESTED_ROLES:
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
    keys = record_keys(records)
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
            paths[role] = _LAYOUT_CANDIDATES.get(name, {}).get(role, CANDIDATES[role])
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
