"""Ground-truth corrections: from a dragged box to a new ground truth, its what-if, and its patch.

A diagnostic layer above :mod:`scoring.review.consensus` (no scorer module imports it); no
Streamlit here. Four plain steps:

1. :func:`selection_box` reads the box a reviewer dragged on a plotly chart (Streamlit's
   selection state), :func:`edit_from_selection` turns it into an :class:`Edit` -- replace a
   ground-truth item, add a missing one (a box; for point types its centre; for segments a
   diagonal) -- and :func:`apply_edit` applies an edit (also *remove*: a spurious item; *answer*:
   a new answer value; *adopt*: a whole value, e.g. the rollouts' consensus) to a ground-truth
   object ``{"type", "value"}``, checking that the result still parses as its type.
2. :class:`Correction` records one change of one instance's ``answer_gt`` or ``annotation_gt``
   (before, after, who, when, why). :func:`corrected_truths` chains them: the latest wins, and a
   correction of an already corrected value continues the chain.
3. :func:`rescore` re-runs only the rows of corrected instances (their ground truth equal to the
   chain's original) with the corrected ground truth -- the table's own recipe
   (:func:`scoring.runs.row_kwargs`) -- and :func:`what_if_summary` says how rewards, the solve
   rate and the groups (rows of one run, step and instance) move. A what-if, not the score.
4. :func:`patch_lines` is the JSONL patch (one line per corrected instance: id, ground truth
   before and after, reviewers, notes); :func:`patch_record` / :func:`patch_jsonl` apply it to
   records of any layout (the ground truth at the top level or inside ``reward_input``, ``gts``,
   ``extra_info``, ``doc`` ..., as an object or a JSON string), leaving every other byte alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..rollouts import NESTED_CONTAINERS, decode_text_value
from ..verifier import (
    ANNOTATION_TYPES,
    COLLECTION_OF_TYPE,
    MAP,
    SEQUENCE,
    SET,
    SHAPE_OF_TYPE,
    SINGLE,
    AnnotationParseError,
    parse_annotation,
)
from .consensus import value_text

ANSWER_GT, ANNOTATION_GT = "answer_gt", "annotation_gt"
FIELDS: tuple[str, ...] = (ANSWER_GT, ANNOTATION_GT)

REPLACE, ADD, REMOVE, ANSWER, ADOPT = "replace", "add", "remove", "answer", "adopt"
#: What a correction does, and how the form names it.
ACTIONS: dict[str, str] = {
    REPLACE: "replace a ground-truth item with the dragged box (point types: its centre)",
    ADD: "add a missing item (the dragged box)",
    REMOVE: "remove a spurious ground-truth item",
    ANSWER: "set the answer",
    ADOPT: "replace the whole annotation (e.g. with the rollouts' consensus)",
}
#: Actions that need a dragged box.
DRAWN_ACTIONS = frozenset({REPLACE, ADD})
SEGMENT_DOWN, SEGMENT_UP = "down", "up"  # top-left -> bottom-right, bottom-left -> top-right


class CorrectionError(ValueError):
    """A correction that cannot be made; the message says why in one sentence."""


@dataclass(frozen=True)
class Edit:
    """One change to a ground truth: ``action`` on item ``index`` of group ``key`` (maps) with ``shape``."""

    action: str
    key: str | None = None
    index: int | None = None
    shape: Any = None  # new geometry, in the contract's JSON form
    value: Any = None  # the answer value (ANSWER) or the whole annotation value (ADOPT)


# --------------------------------------------------------------------------- selection -> edit


def selection_box(selection: Any) -> tuple[float, float, float, float] | None:
    """The last box dragged on a plotly chart, ``(x0, y0, x1, y1)`` ordered, or None.

    ``selection`` is Streamlit's chart state (``event.selection`` or the whole event, a mapping
    with ``box: [{"x": [x0, x1], "y": [y0, y1], ...}]``). Lasso selections are ignored.
    """
    if selection is None:
        return None
    if isinstance(selection, Mapping) and "selection" in selection:
        selection = selection["selection"]
    boxes = selection.get("box") if isinstance(selection, Mapping) else getattr(selection, "box", None)
    if not boxes:
        return None
    last = boxes[-1]
    try:
        xs = [float(v) for v in last["x"]]
        ys = [float(v) for v in last["y"]]
    except (KeyError, TypeError, ValueError):
        return None
    if len(xs) < 2 or len(ys) < 2 or not all(math.isfinite(v) for v in (*xs, *ys)):
        return None
    return (min(xs), min(ys), max(xs), max(ys))


def _pixel(value: float, limit: float | None) -> int | float:
    if limit is not None:
        value = min(max(value, 0.0), float(limit))
    rounded = round(value)
    return int(rounded)


def shape_from_box(box: Sequence[float], shape: str, image_size: Sequence[float] | None = None,
                   segment_direction: str = SEGMENT_DOWN) -> list:
    """The dragged box as one item of ``shape`` (``bbox``, ``point``: its centre, ``segment``: a
    diagonal), in whole pixels clipped to the image."""
    width, height = (image_size[0], image_size[1]) if image_size is not None else (None, None)
    x0, y0, x1, y1 = (_pixel(box[0], width), _pixel(box[1], height), _pixel(box[2], width), _pixel(box[3], height))
    if shape == "bbox":
        if x1 <= x0 or y1 <= y0:
            raise CorrectionError("the dragged box is too small: drag a box at least one pixel wide and high")
        return [x0, y0, x1, y1]
    if shape == "point":
        cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
        return [_pixel(cx, width), _pixel(cy, height)]
    if shape == "segment":
        if segment_direction == SEGMENT_UP:
            return [[x0, y1], [x1, y0]]
        return [[x0, y0], [x1, y1]]
    raise CorrectionError(f"unknown shape {shape!r}")


def edit_from_selection(selection: Any, action: str, annotation_type: str, *, key: str | None = None,
                        index: int | None = None, image_size: Sequence[float] | None = None,
                        segment_direction: str = SEGMENT_DOWN) -> Edit:
    """A dragged box (Streamlit's plotly selection state) as an :class:`Edit` of ``annotation_type``."""
    if action not in DRAWN_ACTIONS:
        raise CorrectionError(f"{action!r} does not use a dragged box")
    if annotation_type not in ANNOTATION_TYPES:
        raise CorrectionError(f"unknown annotation type {annotation_type!r}")
    box = selection_box(selection)
    if box is None:
        raise CorrectionError("no box was dragged: choose Box Select in the chart's mode bar and drag over the image")
    shape = shape_from_box(box, SHAPE_OF_TYPE[annotation_type], image_size, segment_direction)
    return Edit(action, key=key, index=index, shape=shape)


# --------------------------------------------------------------------------- edit -> ground truth


def ground_truth_items(annotation_gt: Mapping[str, Any]) -> list[tuple[str | None, int, Any]]:
    """``(key, index, item)`` of every item of a ground truth, in order (what an edit can target)."""
    kind, value = annotation_gt["type"], annotation_gt["value"]
    collection = COLLECTION_OF_TYPE[kind]
    if collection == SINGLE:
        return [(None, 0, value)]
    if collection in (SET, SEQUENCE):
        if isinstance(value, Mapping):  # {"bboxes": [...]}
            value = next(iter(value.values()), [])
        return [(None, i, item) for i, item in enumerate(value)]
    if collection == MAP:
        return [(key, 0, item) for key, item in value.items()]
    return [(key, i, item) for key, items in value.items() for i, item in enumerate(items)]


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def apply_edit(annotation_gt: Mapping[str, Any] | None, edit: Edit, *, answer_gt: Mapping[str, Any] | None = None
               ) -> dict[str, Any]:
    """The ground truth after ``edit`` (a new object; ``annotation_gt`` itself is not changed).

    For :data:`ANSWER` pass the ``answer_gt`` (its type is kept). Raises :class:`CorrectionError`
    when the item does not exist or the result no longer parses as the declared type.
    """
    if edit.action == ANSWER:
        if not isinstance(answer_gt, Mapping):
            raise CorrectionError("this row has no answer_gt to correct")
        return {**_copy(dict(answer_gt)), "value": _copy(edit.value)}
    if not isinstance(annotation_gt, Mapping) or annotation_gt.get("type") not in ANNOTATION_TYPES:
        raise CorrectionError("this row has no annotation_gt of a known type to correct")
    kind = annotation_gt["type"]
    collection = COLLECTION_OF_TYPE[kind]
    value = _copy(annotation_gt["value"])
    if isinstance(value, Mapping) and collection in (SET, SEQUENCE):
        value = next(iter(value.values()), [])  # the {"bboxes": [...]} wrapper: edit the list inside
    if edit.action == ADOPT:
        value = _copy(edit.value)
    elif edit.action == REPLACE:
        value = _replaced(value, collection, edit)
    elif edit.action == ADD:
        value = _added(value, collection, edit)
    elif edit.action == REMOVE:
        value = _removed(value, collection, edit)
    else:
        raise CorrectionError(f"unknown correction {edit.action!r} (one of {', '.join(ACTIONS)})")
    try:
        parse_annotation(value, kind, "corrected ground truth")
    except AnnotationParseError as exc:
        raise CorrectionError(str(exc)) from None
    return {**_copy(dict(annotation_gt)), "value": value}


def _index(items: list, index: int | None, what: str) -> int:
    if index is None or not 0 <= int(index) < len(items):
        raise CorrectionError(f"{what} has no item {index!r} (it has {len(items)})")
    return int(index)


def _group(value: dict, key: str | None) -> Any:
    if key not in value:
        raise CorrectionError(f"the ground truth has no key {key!r} (keys: {', '.join(map(str, value))})")
    return value[key]


def _replaced(value: Any, collection: str, edit: Edit) -> Any:
    if collection == SINGLE:
        return edit.shape
    if collection in (SET, SEQUENCE):
        value[_index(value, edit.index, "the ground truth")] = edit.shape
        return value
    if collection == MAP:
        _group(value, edit.key)
        value[edit.key] = edit.shape
        return value
    items = _group(value, edit.key)
    items[_index(items, edit.index, f"key {edit.key!r}")] = edit.shape
    return value


def _added(value: Any, collection: str, edit: Edit) -> Any:
    if collection == SINGLE:
        raise CorrectionError("a single-item ground truth cannot gain an item: replace it instead")
    if collection in (SET, SEQUENCE):
        position = len(value) if edit.index is None else min(max(int(edit.index), 0), len(value))
        value.insert(position, edit.shape)
        return value
    key = (edit.key or "").strip()
    if not key:
        raise CorrectionError("name the key of the added item")
    if collection == MAP:
        if key in value:
            raise CorrectionError(f"key {key!r} already has an item: replace it instead")
        value[key] = edit.shape
        return value
    value.setdefault(key, []).append(edit.shape)
    return value


def _removed(value: Any, collection: str, edit: Edit) -> Any:
    if collection == SINGLE:
        raise CorrectionError("a single-item ground truth cannot lose its item: replace it instead")
    if collection in (SET, SEQUENCE):
        del value[_index(value, edit.index, "the ground truth")]
        return value
    if collection == MAP:
        _group(value, edit.key)
        del value[edit.key]
        return value
    items = _group(value, edit.key)
    del items[_index(items, edit.index, f"key {edit.key!r}")]
    if not items:
        del value[edit.key]
    return value


# --------------------------------------------------------------------------- corrections and chains


@dataclass(frozen=True)
class Correction:
    """One change of one instance's ground-truth field, with who, when and why."""

    instance_id: str
    field: str  # ANSWER_GT or ANNOTATION_GT
    before: Any  # the whole field object, {"type", "value"}
    after: Any
    action: str = ADOPT
    reviewer: str = ""
    note: str = ""
    created_at: str = ""
    row_key: str | None = None

    def __post_init__(self) -> None:
        if self.field not in FIELDS:
            raise CorrectionError(f"a correction changes answer_gt or annotation_gt, not {self.field!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_corrections(corrections: Iterable[Correction | Mapping[str, Any]] | pd.DataFrame) -> list[Correction]:
    if isinstance(corrections, pd.DataFrame):
        corrections = corrections.to_dict(orient="records")
    out = []
    for item in corrections:
        if isinstance(item, Correction):
            out.append(item)
            continue
        values = {k: item.get(k) for k in ("instance_id", "field", "before", "after", "action", "reviewer", "note",
                                           "created_at", "row_key")}
        for name in ("before", "after"):
            if isinstance(values[name], str):
                values[name] = json.loads(values[name])
        values = {k: ("" if v is None and k in ("reviewer", "note", "created_at") else v) for k, v in values.items()}
        values["action"] = values["action"] or ADOPT
        out.append(Correction(**values))
    return out


def corrected_truths(corrections: Iterable[Correction | Mapping[str, Any]] | pd.DataFrame
                     ) -> dict[tuple[str, str, str], dict[str, Any]]:
    """``(instance_id, field, original value text) -> {"before", "after", "corrections"}``.

    Corrections apply in time order; one whose ``before`` is the current corrected value of a
    chain continues it (so the original is remembered), any other starts a chain of its own.
    A chain that ends where it started is dropped (nothing changes).
    """
    chains: dict[tuple[str, str, str], dict[str, Any]] = {}
    current: dict[tuple[str, str, str], tuple[str, str, str]] = {}  # (id, field, latest after) -> chain key
    for c in sorted(_as_corrections(corrections), key=lambda c: c.created_at or ""):
        before_text = value_text(c.before)
        chain_key = current.pop((c.instance_id, c.field, before_text), None)
        if chain_key is None:
            chain_key = (c.instance_id, c.field, before_text)
            chains[chain_key] = {"before": c.before, "after": c.after, "corrections": [c]}
        else:
            chains[chain_key]["after"] = c.after
            chains[chain_key]["corrections"].append(c)
        current[(c.instance_id, c.field, value_text(c.after))] = chain_key
    return {k: v for k, v in chains.items() if value_text(v["before"]) != value_text(v["after"])}


# --------------------------------------------------------------------------- what-if


#: Columns of :func:`rescore`.
RESCORE_COMPONENTS: tuple[str, ...] = ("overall", "answer_reward", "annotation_reward")


def _row_truths(table: pd.DataFrame) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Per row, an index into the distinct ``scorer_kwargs`` and those parsed (kwargs decoded once)."""
    kwargs = table["scorer_kwargs"].astype(object) if "scorer_kwargs" in table.columns else pd.Series(
        None, index=table.index, dtype=object)
    codes, uniques = pd.factorize(kwargs, use_na_sentinel=True)
    parsed = []
    for text in uniques:
        try:
            value = json.loads(text) if isinstance(text, str) else {}
        except ValueError:
            value = {}
        parsed.append(value if isinstance(value, dict) else {})
    return np.asarray(codes), parsed


def rows_to_rescore(table: pd.DataFrame, chains: Mapping[tuple[str, str, str], Mapping[str, Any]]
                    ) -> dict[int, dict[str, Any]]:
    """Row position -> ground-truth overrides, for the rows of corrected instances whose ground
    truth is a chain's original (other versions of the instance are left alone)."""
    if not chains or "instance_id" not in table.columns:
        return {}
    wanted = {instance for instance, _, _ in chains}
    ids = table["instance_id"].astype(object).to_numpy()
    scorers = table["scorer"].astype(object).to_numpy() if "scorer" in table.columns else np.full(len(table), None)
    codes, kwargs = _row_truths(table)
    overrides: dict[int, dict[str, Any]] = {}
    for position in np.flatnonzero(pd.Series(ids).isin(wanted).to_numpy() & (scorers == "trace")).tolist():
        if codes[position] < 0:
            continue
        row_kwargs = kwargs[codes[position]]
        for name in FIELDS:
            chain = chains.get((ids[position], name, value_text(row_kwargs.get(name))))
            if chain is not None:
                overrides.setdefault(position, {})[name] = chain["after"]
    return overrides


def rescore(table: pd.DataFrame, corrections: Iterable[Correction | Mapping[str, Any]] | pd.DataFrame,
            solved_threshold: float | None = None,
            with_text: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> pd.DataFrame:
    """Only the rows of corrected instances, re-run with the corrected ground truth (a what-if).

    One line per row (index = the table's): ``instance_id``, ``run``, ``step``, ``sample_index``,
    ``<component>_before`` / ``_after`` for overall, answer and annotation rewards, ``solved_before``
    / ``_after`` and ``changed`` (the fields corrected). The table is not modified. ``with_text``
    adds the columns a table holds elsewhere (an opened dataset's responses) to the rows re-run.
    """
    from ..runs import row_kwargs
    from ..verifier import SOLVED_THRESHOLD, evaluate

    threshold = SOLVED_THRESHOLD if solved_threshold is None else float(solved_threshold)
    overrides = rows_to_rescore(table, corrected_truths(corrections))
    positions = sorted(overrides)
    rows = table.iloc[positions]
    if with_text is not None:
        rows = with_text(rows)
    records = []
    for at, position in enumerate(positions):
        override = overrides[position]
        row = rows.iloc[at]
        evaluation = evaluate(**row_kwargs(row, **override))
        record = {
            "row_id": table.index[position],
            "instance_id": row.get("instance_id"),
            "run": row.get("run"),
            "step": row.get("step"),
            "sample_index": row.get("sample_index"),
            "changed": ",".join(sorted(override)),
        }
        after = {"overall": evaluation.overall, "answer_reward": evaluation.answer_reward,
                 "annotation_reward": evaluation.annotation_reward}
        for name in RESCORE_COMPONENTS:
            record[f"{name}_before"] = float(row.get(name))
            record[f"{name}_after"] = float(after[name])
        record["solved_before"] = bool(record["overall_before"] >= threshold)
        record["solved_after"] = bool(record["overall_after"] >= threshold)
        records.append(record)
    columns = ["row_id", "instance_id", "run", "step", "sample_index", "changed",
               *(f"{n}_{w}" for n in RESCORE_COMPONENTS for w in ("before", "after")), "solved_before", "solved_after"]
    out = pd.DataFrame.from_records(records, columns=columns)
    return out.set_index("row_id", drop=True) if len(out) else out.set_index("row_id")


def what_if_summary(table: pd.DataFrame, rescored: pd.DataFrame, group_by: Sequence[str] = ("run", "step", "instance_id"),
                    solved_threshold: float | None = None) -> dict[str, Any]:
    """How the corrections move rewards, the solve rate and the groups.

    ``rows``: the mean of each component before and after on the rescored rows; ``table``: the
    whole table's mean overall and solve rate before and after; ``groups``: one line per group
    (``group_by`` columns) touched: mean and spread of the overall reward before and after, and
    whether it had a learning signal (rewards that differ) before and after.
    """
    from ..verifier import SOLVED_THRESHOLD

    threshold = SOLVED_THRESHOLD if solved_threshold is None else float(solved_threshold)
    scores = pd.to_numeric(table["overall"], errors="coerce") if "overall" in table.columns else pd.Series(dtype=float)
    after = scores.copy()
    if len(rescored):
        after.loc[rescored.index] = rescored["overall_after"].to_numpy()
    rows = {name: {"before": float(rescored[f"{name}_before"].mean()) if len(rescored) else float("nan"),
                   "after": float(rescored[f"{name}_after"].mean()) if len(rescored) else float("nan")}
            for name in RESCORE_COMPONENTS}
    rows["solved"] = {"before": float(rescored["solved_before"].mean()) if len(rescored) else float("nan"),
                      "after": float(rescored["solved_after"].mean()) if len(rescored) else float("nan")}
    whole = {
        "rows": int(len(table)),
        "rescored_rows": int(len(rescored)),
        "overall_before": float(scores.mean()),
        "overall_after": float(after.mean()),
        "solve_rate_before": float((scores >= threshold).mean()),
        "solve_rate_after": float((after >= threshold).mean()),
    }
    keys = [c for c in group_by if c in table.columns]
    groups = pd.DataFrame()
    if len(rescored) and keys:
        touched = table.loc[rescored.index, keys].drop_duplicates()
        members = table[keys].merge(touched.assign(_touched=True), on=keys, how="left")["_touched"].fillna(False)
        mask = members.to_numpy(dtype=bool)
        frame = table.loc[mask, keys].copy()
        frame["before"] = scores[mask].to_numpy()
        frame["after"] = after[mask].to_numpy()
        grouped = frame.groupby(keys, observed=True, dropna=False)
        groups = grouped.agg(rows=("before", "size"), mean_before=("before", "mean"), mean_after=("after", "mean"),
                             std_before=("before", lambda s: float(np.std(s))),
                             std_after=("after", lambda s: float(np.std(s)))).reset_index()
        groups["signal_before"] = groups["std_before"] > 0
        groups["signal_after"] = groups["std_after"] > 0
    return {"rows": rows, "table": whole, "groups": groups}


# --------------------------------------------------------------------------- the patch


def patch_lines(corrections: Iterable[Correction | Mapping[str, Any]] | pd.DataFrame) -> list[dict[str, Any]]:
    """One JSON object per corrected instance and field: the ground truth before and after, and
    who corrected it and why (every correction of the chain, latest last)."""
    lines = []
    for (instance, name, _), chain in sorted(corrected_truths(corrections).items()):
        chain_corrections = chain["corrections"]
        lines.append({
            "instance_id": instance,
            "field": name,
            "before": chain["before"],
            "after": chain["after"],
            "reviewer": chain_corrections[-1].reviewer,
            "note": chain_corrections[-1].note,
            "created_at": chain_corrections[-1].created_at,
            "history": [{"action": c.action, "reviewer": c.reviewer, "note": c.note, "created_at": c.created_at}
                        for c in chain_corrections],
        })
    return lines


def patch_bytes(lines: Iterable[Mapping[str, Any]]) -> bytes:
    """The patch as JSONL (UTF-8)."""
    return "".join(json.dumps(line, ensure_ascii=False, sort_keys=False) + "\n" for line in lines).encode("utf-8")


def read_patch(text: str | bytes) -> list[dict[str, Any]]:
    """Patch lines from JSONL text; a bad line raises CorrectionError naming it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise CorrectionError(f"patch line {number}: not JSON ({exc})") from None
        missing = [k for k in ("instance_id", "field", "before", "after") if k not in item]
        if missing:
            raise CorrectionError(f"patch line {number}: no {', '.join(missing)}")
        lines.append(item)
    return lines


def _record_instance(record: Mapping[str, Any]) -> Any:
    for key in ("instance_id", "id", "doc_id"):
        if key in record:
            return record[key]
    return None


def patch_record(record: dict[str, Any], lines: Sequence[Mapping[str, Any]], *, match_instance: bool = True
                 ) -> tuple[dict[str, Any], list[str]]:
    """``record`` with every ground-truth field the patch changes replaced (a new dict), and the
    fields replaced. A field is replaced where it sits -- top level or a nested container, as an
    object or a JSON string -- when it equals the patch line's ``before`` (and, with
    ``match_instance``, the record's ``instance_id`` / ``id`` / ``doc_id`` is the line's)."""
    wanted = {}
    own = _record_instance(record)
    for line in lines:
        if match_instance and own is not None and str(own) != str(line["instance_id"]):
            continue
        wanted[(line["field"], value_text(line["before"]))] = line["after"]
    if not wanted:
        return record, []
    changed: list[str] = []
    return _patched_scope(record, wanted, changed, depth=0), changed


def _patched_scope(scope: dict[str, Any], wanted: Mapping[tuple[str, str], Any], changed: list[str], depth: int
                   ) -> dict[str, Any]:
    out = dict(scope)
    for name in FIELDS:
        if name not in out:
            continue
        raw = out[name]
        try:
            value = decode_text_value(raw) if isinstance(raw, str) else raw
        except ValueError:
            continue
        after = wanted.get((name, value_text(value)))
        if after is not None:
            out[name] = json.dumps(after, ensure_ascii=False) if isinstance(raw, str) else _copy(after)
            changed.append(name)
    if depth < 3:
        for key in NESTED_CONTAINERS:
            raw = out.get(key)
            try:
                inner = decode_text_value(raw) if isinstance(raw, str) else raw
            except ValueError:
                continue
            if isinstance(inner, dict):
                patched = _patched_scope(inner, wanted, changed, depth + 1)
                if patched != inner:
                    out[key] = json.dumps(patched, ensure_ascii=False) if isinstance(raw, str) else patched
    return out


def patch_jsonl(text: str, lines: Sequence[Mapping[str, Any]], *, only_lines: Iterable[int] | None = None
                ) -> tuple[str, list[int]]:
    """A JSONL file's text with the patch applied, and the (1-based) lines that changed.

    ``only_lines`` limits the patch to those lines (e.g. the rows of the corrected instances as the
    scored table found them, for layouts whose records carry no instance id); there a record's own
    id is not required to match. Unchanged lines are kept byte for byte.
    """
    limit = set(only_lines) if only_lines is not None else None
    out, changed = [], []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if (limit is not None and number not in limit) or not line.strip():
            out.append(line)
            continue
        try:
            record = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if not isinstance(record, dict):
            out.append(line)
            continue
        patched, fields_changed = patch_record(record, lines, match_instance=limit is None)
        if fields_changed:
            ending = "\n" if line.endswith("\n") else ""
            out.append(json.dumps(patched, ensure_ascii=False) + ending)
            changed.append(number)
        else:
            out.append(line)
    return "".join(out), changed


__all__ = [
    "ACTIONS",
    "ADD",
    "ADOPT",
    "ANNOTATION_GT",
    "ANSWER",
    "ANSWER_GT",
    "DRAWN_ACTIONS",
    "FIELDS",
    "REMOVE",
    "REPLACE",
    "Correction",
    "CorrectionError",
    "Edit",
    "apply_edit",
    "corrected_truths",
    "edit_from_selection",
    "ground_truth_items",
    "patch_bytes",
    "patch_jsonl",
    "patch_lines",
    "patch_record",
    "read_patch",
    "rescore",
    "rows_to_rescore",
    "selection_box",
    "shape_from_box",
    "what_if_summary",
]
