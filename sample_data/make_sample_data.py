#!/usr/bin/env python3
"""Deterministic generator for Rolloutscope's sample data.

    python sample_data/make_sample_data.py            # (re)writes sample_data/
    python sample_data/make_sample_data.py --out DIR  # writes the same files into DIR

Every run with the same Python / Pillow / numpy / pyarrow produces byte-identical files:
all randomness comes from seeded ``random.Random`` / ``numpy`` generators, JSON is written
with ``sort_keys`` and fixed separators, PNGs carry no timestamp chunk.

The generator simulates a model (and a trainer that logs rewards); it deliberately does
NOT import the ``scoring`` package. The rewards it logs are computed by a small,
independent re-implementation of the v0 contract so the logged-vs-recomputed view of the
dashboard has something to compare; the tests check them against ``scoring``.

Only Pillow, numpy, pyarrow (for the TRL parquet files) and the standard library are used.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import random
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SEED = 20261130
HERE = Path(__file__).resolve().parent

RUNS = ("ckpt-A", "ckpt-B")
STEPS = (100, 200, 300)
SAMPLES_PER_PROMPT = 4
VERL_STEPS = (100, 200)
TRL_STEPS = (50, 100)
TRL_PROMPTS = 20
LMMS_FILE = "lmms_eval/samples_trace_2026-11-30T10-00-00.jsonl"

ANSWER_TYPES = ("integer", "number", "string", "option_letter", "index_list", "mapping", "boolean", "matrix")
RESOLVER = {
    "bbox": "bbox_soft_iou_v0",
    "bbox_set": "bbox_set_soft_iou_v0",
    "bbox_sequence": "bbox_sequence_soft_iou_v0",
    "bbox_map": "bbox_map_soft_iou_v0",
    "bbox_set_map": "bbox_set_map_soft_iou_v0",
    "point": "point_soft_distance_v0",
    "point_set": "point_set_soft_distance_v0",
    "point_sequence": "point_sequence_soft_distance_v0",
    "point_map": "point_map_soft_distance_v0",
    "point_set_map": "point_set_map_soft_distance_v0",
    "segment": "segment_soft_distance_v0",
    "segment_set": "segment_set_soft_distance_v0",
}
ANNOTATION_TYPES = tuple(RESOLVER)
LEAF = {
    t: ("box" if t.startswith("bbox") else "point" if t.startswith("point") else "segment") for t in RESOLVER
}
STRUCT = {
    "bbox": "scalar",
    "point": "scalar",
    "segment": "scalar",
    "bbox_set": "set",
    "point_set": "set",
    "segment_set": "set",
    "bbox_sequence": "sequence",
    "point_sequence": "sequence",
    "bbox_map": "map",
    "point_map": "map",
    "bbox_set_map": "set_map",
    "point_set_map": "set_map",
}

COLOURS = {
    "red": (214, 48, 49),
    "blue": (41, 98, 235),
    "green": (39, 160, 90),
    "yellow": (236, 190, 20),
    "purple": (142, 68, 173),
    "orange": (230, 126, 34),
}


# ----------------------------------------------------------------------------- helpers


def dumps(obj) -> str:
    """The one JSON serialisation used for every file written here."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rng_for(*parts) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in (SEED, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def write_jsonl(path: Path, rows) -> None:
    write_text(path, "".join(dumps(r) + "\n" for r in rows))


_FONTS: dict[int, ImageFont.ImageFont] = {}


def font(size: int):
    if size not in _FONTS:
        _FONTS[size] = ImageFont.load_default(size=size)
    return _FONTS[size]


def half_life(size) -> float:
    w, h = size
    return min(80.0, max(20.0, 0.035 * math.hypot(w, h)))


def darker(c, k=0.6):
    return tuple(int(v * k) for v in c)


def gradient(w, h, top, bottom, noise=0.0, seed=0) -> Image.Image:
    """Vertical gradient; ``noise`` adds faint monochrome grain (a scanned look) to small images."""
    t = np.linspace(0.0, 1.0, h)[:, None]
    rows = np.rint((1 - t) * np.array(top, dtype=np.float64) + t * np.array(bottom, dtype=np.float64))
    if not noise:
        arr = np.ascontiguousarray(np.broadcast_to(rows.astype(np.uint8)[:, None, :], (h, w, 3)))
        return Image.fromarray(arr, "RGB")
    grain = np.rint(np.random.default_rng(seed).normal(0.0, noise, (h, w, 1)))
    arr = np.clip(rows[:, None, :] + grain, 0, 255).astype(np.uint8)
    return Image.fromarray(arr, "RGB")


def save_image(img: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jpg":
        img.save(path, format="JPEG", quality=82, optimize=False, progressive=False)
    else:
        img.save(path, format="PNG", compress_level=6)


# ----------------------------------------------------------------------------- geometry (model-independent)


def box_iou(a, b) -> float:
    ax0, ax1 = sorted((a[0], a[2]))
    ay0, ay1 = sorted((a[1], a[3]))
    bx0, bx1 = sorted((b[0], b[2]))
    by0, by1 = sorted((b[1], b[3]))
    iw = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    ih = max(0.0, min(ay1, by1) - max(ay0, by0))
    inter = iw * ih
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    return inter / union if union > 0 else 0.0


def soft(d: float, hl: float) -> float:
    return math.exp(-math.log(2) * (d / hl) ** 2)


def seg_dist(p, g) -> float:
    direct = max(math.dist(p[0], g[0]), math.dist(p[1], g[1]))
    flipped = max(math.dist(p[0], g[1]), math.dist(p[1], g[0]))
    return min(direct, flipped)


def leaf_sim(kind, p, g, hl) -> float:
    if kind == "box":
        return box_iou(p, g)
    if kind == "point":
        return soft(math.dist(p, g), hl)
    return soft(seg_dist(p, g), hl)


def leaf_cost(kind, p, g) -> float:
    if kind == "box":
        return -box_iou(p, g)
    if kind == "point":
        return math.dist(p, g)
    return seg_dist(p, g)


def set_score(kind, preds, gts, hl) -> float:
    """Optimal one-to-one matching (exact, bitmask DP), then mean similarity over max(len)."""
    n, m = len(preds), len(gts)
    if n == 0 and m == 0:
        return 1.0
    if n == 0 or m == 0:
        return 0.0
    rows, cols, swap = (preds, gts, False) if n <= m else (gts, preds, True)
    cost = [[leaf_cost(kind, *((c, r) if swap else (r, c))) for c in cols] for r in rows]
    sim = [[leaf_sim(kind, *((c, r) if swap else (r, c)), hl) for c in cols] for r in rows]
    best = {0: (0.0, 0.0)}
    for i in range(len(rows)):
        nxt: dict[int, tuple[float, float]] = {}
        for mask, (c0, s0) in best.items():
            for j in range(len(cols)):
                if mask & (1 << j):
                    continue
                key = mask | (1 << j)
                cand = (c0 + cost[i][j], s0 + sim[i][j])
                if key not in nxt or cand[0] < nxt[key][0]:
                    nxt[key] = cand
        best = nxt
    total = min(best.values(), key=lambda cs: cs[0])[1]
    return total / max(n, m, 1)


def annotation_score(ann_type, pred, gt, size) -> float:
    kind, struct, hl = LEAF[ann_type], STRUCT[ann_type], half_life(size)
    if struct == "scalar":
        return leaf_sim(kind, pred, gt, hl)
    if struct == "set":
        return set_score(kind, pred, gt, hl)
    if struct == "sequence":
        total = sum(leaf_sim(kind, p, g, hl) for p, g in zip(pred, gt, strict=False))
        return total / max(len(pred), len(gt), 1)
    keys = set(pred) | set(gt)
    shared = sorted(set(pred) & set(gt))  # sorted: set order depends on PYTHONHASHSEED
    if struct == "map":
        total = sum(leaf_sim(kind, pred[k], gt[k], hl) for k in shared)
    else:
        total = sum(set_score(kind, pred[k], gt[k], hl) for k in shared)
    return total / max(len(keys), 1)


def map_leaves(ann_type, value, fn):
    struct = STRUCT[ann_type]
    if struct == "scalar":
        return fn(value)
    if struct in ("set", "sequence"):
        return [fn(v) for v in value]
    if struct == "map":
        return {k: fn(v) for k, v in value.items()}
    return {k: [fn(x) for x in v] for k, v in value.items()}


def map_xy(kind, leaf, f):
    if kind == "box":
        x0, y0 = f(leaf[0], leaf[1])
        x1, y1 = f(leaf[2], leaf[3])
        return [x0, y0, x1, y1]
    if kind == "point":
        return list(f(leaf[0], leaf[1]))
    return [list(f(*leaf[0])), list(f(*leaf[1]))]


def iter_leaves(ann_type, value):
    struct = STRUCT[ann_type]
    if struct == "scalar":
        return [value]
    if struct in ("set", "sequence"):
        return list(value)
    if struct == "map":
        return list(value.values())
    return [x for v in value.values() for x in v]


def leaf_points(kind, leaf):
    if kind == "box":
        return [(leaf[0], leaf[1]), (leaf[2], leaf[3])]
    if kind == "point":
        return [tuple(leaf)]
    return [tuple(leaf[0]), tuple(leaf[1])]


# ----------------------------------------------------------------------------- drawing


def place_boxes(rng, w, h, dims, margin=12, gap=10):
    """Non-overlapping integer boxes of the given (width, height) dims, placed in order."""
    boxes = []
    for bw, bh in dims:
        for _ in range(2000):
            x0 = rng.randint(margin, w - margin - bw)
            y0 = rng.randint(margin, h - margin - bh)
            b = [x0, y0, x0 + bw, y0 + bh]
            if all(
                b[2] + gap <= o[0] or o[2] + gap <= b[0] or b[3] + gap <= o[1] or o[3] + gap <= b[1]
                for o in boxes
            ):
                boxes.append(b)
                break
        else:  # pragma: no cover - the layouts below always fit
            raise RuntimeError("could not place shapes")
    return boxes


def draw_shapes_image(name, size, plan, labels=False, bg=((246, 244, 238), (226, 232, 240)), noise=0.0):
    """plan: list of (kind, colour). Returns (image, objects) with exact drawn boxes."""
    w, h = size
    rng = rng_for("shapes", name)
    lo, hi = int(min(w, h) * 0.10), int(min(w, h) * 0.22)
    while True:
        dims = []
        for kind, _colour in plan:
            s = rng.randint(lo // 2, hi // 2) * 2
            if kind == "circle":
                dims.append((s, s))
            elif kind == "rectangle":
                dims.append((s, int(s * rng.uniform(0.55, 0.95)) // 2 * 2))
            else:
                dims.append((s, int(s * 0.86) // 2 * 2))
        areas = [area_of(kind, d) for (kind, _), d in zip(plan, dims, strict=True)]
        if len(set(areas)) == len(areas):
            break
    order = sorted(range(len(plan)), key=lambda i: -dims[i][0] * dims[i][1])
    placed = place_boxes(rng, w, h, [dims[i] for i in order])
    boxes = [None] * len(plan)
    for i, b in zip(order, placed, strict=True):
        boxes[i] = b
    img = gradient(w, h, *bg, noise=noise, seed=len(name))
    d = ImageDraw.Draw(img)
    # faint background grid so the images are not completely flat
    for gx in range(0, w, 64):
        d.line([(gx, 0), (gx, h)], fill=(232, 232, 228), width=1)
    objects = []
    for i, ((kind, colour), b) in enumerate(zip(plan, boxes, strict=True)):
        fill = COLOURS[colour]
        x0, y0, x1, y1 = b
        if kind == "circle":
            d.ellipse(b, fill=fill, outline=darker(fill), width=2)
            label_at = ((x0 + x1) / 2, (y0 + y1) / 2)
        elif kind == "rectangle":
            d.rectangle(b, fill=fill, outline=darker(fill), width=2)
            label_at = ((x0 + x1) / 2, (y0 + y1) / 2)
        else:
            d.polygon([(x0, y1), ((x0 + x1) / 2, y0), (x1, y1)], fill=fill, outline=darker(fill), width=2)
            label_at = ((x0 + x1) / 2, y0 + (y1 - y0) * 2 / 3)
        label = i + 1 if labels else None
        if labels:
            d.text(
                label_at,
                str(label),
                fill=(255, 255, 255),
                font=font(max(12, (x1 - x0) // 3)),
                anchor="mm",
                stroke_width=2,
                stroke_fill=(20, 20, 20),
            )
        objects.append(
            {
                "kind": kind,
                "colour": colour,
                "box": b,
                "centre": [(x0 + x1) // 2, (y0 + y1) // 2],
                "area": areas[i],
                "label": label,
            }
        )
    return img, objects


def area_of(kind, dims):
    bw, bh = dims
    if kind == "circle":
        return round(math.pi * bw * bh / 4, 3)
    if kind == "triangle":
        return bw * bh / 2
    return bw * bh


def fmt_num(v):
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def chart_frame(w, h, title, vmax, tick):
    img = gradient(w, h, (253, 253, 251), (238, 241, 246))
    d = ImageDraw.Draw(img)
    fs = max(11, round(h / 42))
    left, right, top, base = round(w * 0.11), round(w * 0.96), round(h * 0.14), round(h * 0.85)
    d.text((w // 2, round(h * 0.06)), title, fill=(25, 25, 25), font=font(fs + 4), anchor="mm")
    v = 0.0
    while v <= vmax + 1e-9:
        y = base - round(v / vmax * (base - top))
        d.line([(left, y), (right, y)], fill=(222, 224, 228), width=1)
        d.line([(left - 6, y), (left, y)], fill=(50, 50, 50), width=1)
        d.text((left - 9, y), fmt_num(v), fill=(50, 50, 50), font=font(fs), anchor="rm")
        v += tick
    return img, d, (left, top, right, base), fs


def chart_axes(d, frame):
    left, top, right, base = frame
    d.line([(left, top - 8), (left, base)], fill=(30, 30, 30), width=2)
    d.line([(left, base), (right, base)], fill=(30, 30, 30), width=2)


def draw_bar_chart(size, title, cats, values, tick, palette=("blue",), value_labels=True):
    w, h = size
    vmax = tick * math.ceil(max(values) * 1.12 / tick)
    img, d, frame, fs = chart_frame(w, h, title, vmax, tick)
    left, top, right, base = frame
    slot = (right - left) / len(values)
    bw = round(slot * 0.62)
    bars = []
    for i, (cat, val) in enumerate(zip(cats, values, strict=True)):
        x0 = round(left + slot * i + (slot - bw) / 2)
        x1 = x0 + bw
        yt = base - round(val / vmax * (base - top))
        colour = COLOURS[palette[i % len(palette)]]
        d.rectangle([x0, yt, x1, base], fill=colour, outline=darker(colour), width=1)
        if value_labels:
            d.text(((x0 + x1) / 2, yt - 4), fmt_num(val), fill=(20, 20, 20), font=font(fs), anchor="mb")
        d.text(((x0 + x1) / 2, base + 8), cat, fill=(20, 20, 20), font=font(fs), anchor="mt")
        bars.append({"cat": cat, "value": val, "box": [x0, yt, x1, base], "top": [(x0 + x1) // 2, yt]})
    chart_axes(d, frame)
    return img, bars


def draw_line_chart(size, title, labels, values, tick, colour="purple"):
    w, h = size
    vmax = tick * math.ceil(max(values) * 1.12 / tick)
    img, d, frame, fs = chart_frame(w, h, title, vmax, tick)
    left, top, right, base = frame
    slot = (right - left) / len(values)
    pts = []
    for i, (lab, val) in enumerate(zip(labels, values, strict=True)):
        x = round(left + slot * (i + 0.5))
        y = base - round(val / vmax * (base - top))
        pts.append({"label": lab, "value": val, "pt": [x, y]})
        d.line([(x, base), (x, base + 5)], fill=(30, 30, 30), width=1)
        d.text((x, base + 8), str(lab), fill=(20, 20, 20), font=font(fs), anchor="mt")
    d.line([tuple(p["pt"]) for p in pts], fill=COLOURS[colour], width=3, joint="curve")
    for p in pts:
        x, y = p["pt"]
        d.ellipse(
            [x - 5, y - 5, x + 5, y + 5], fill=(255, 255, 255), outline=darker(COLOURS[colour]), width=2
        )
        d.text((x, y - 9), fmt_num(p["value"]), fill=(20, 20, 20), font=font(fs), anchor="mb")
    chart_axes(d, frame)
    return img, pts


def draw_table(size, texts, fills=None, row_labels=None, col_labels=None, noise=0.0, seed=0):
    """texts: list of rows. Returns (image, cells) with cells[(r, c)] = {"text", "box", "fill"}."""
    w, h = size
    nrows, ncols = len(texts), len(texts[0])
    img = gradient(w, h, (251, 251, 249), (242, 242, 236), noise=noise, seed=seed)
    d = ImageDraw.Draw(img)
    ox, oy, tw, th = round(w * 0.08), round(h * 0.12), round(w * 0.84), round(h * 0.78)
    lw = round(tw * 0.1)
    hh = round(th / (nrows + 1))
    cw, ch = (tw - lw) / ncols, (th - hh) / nrows
    fs = max(11, round(ch * 0.32))
    fills = fills or {}
    cells = {}
    for r in range(nrows):
        for c in range(ncols):
            box = [
                round(ox + lw + c * cw),
                round(oy + hh + r * ch),
                round(ox + lw + (c + 1) * cw),
                round(oy + hh + (r + 1) * ch),
            ]
            fill = fills.get((r, c))
            if fill:
                d.rectangle(box, fill=tuple(min(255, v + 70) for v in COLOURS[fill]))
            cells[(r, c)] = {"text": texts[r][c], "box": box, "fill": fill}
    col_labels = col_labels or [chr(ord("A") + c) for c in range(ncols)]
    row_labels = row_labels or [str(r + 1) for r in range(nrows)]
    for c, lab in enumerate(col_labels):
        d.text((ox + lw + (c + 0.5) * cw, oy + hh / 2), lab, fill=(40, 40, 40), font=font(fs), anchor="mm")
    for r, lab in enumerate(row_labels):
        d.text((ox + lw / 2, oy + hh + (r + 0.5) * ch), lab, fill=(40, 40, 40), font=font(fs), anchor="mm")
    for c in range(ncols + 1):
        x = round(ox + lw + c * cw)
        d.line([(x, oy + hh), (x, oy + th)], fill=(90, 90, 90), width=1)
    for r in range(nrows + 1):
        y = round(oy + hh + r * ch)
        d.line([(ox + lw, y), (ox + tw, y)], fill=(90, 90, 90), width=1)
    for cell in cells.values():
        x0, y0, x1, y1 = cell["box"]
        d.text(
            ((x0 + x1) / 2, (y0 + y1) / 2), str(cell["text"]), fill=(15, 15, 15), font=font(fs), anchor="mm"
        )
    return img, cells


def draw_diagram(size, labels, edges, seed_name, highlight=()):
    """Nodes on a jittered grid, directed edges as arrows. Returns (image, nodes, edge_segments)."""
    w, h = size
    rng = rng_for("diagram", seed_name)
    n = len(labels)
    cols = 3 if n <= 6 else 4
    rows = math.ceil(n / cols)
    r = round(min(w, h) * 0.05)
    cw, ch = (w - 2 * r) / cols, (h - 2 * r) / rows
    for _ in range(500):
        slots = [(i, j) for j in range(rows) for i in range(cols)]
        rng.shuffle(slots)
        nodes = {}
        for lab, (i, j) in zip(labels, slots, strict=False):
            cx = round(r + cw * (i + 0.5) + rng.uniform(-0.22, 0.22) * cw)
            cy = round(r + ch * (j + 0.5) + rng.uniform(-0.22, 0.22) * ch)
            nodes[lab] = {"label": lab, "centre": [cx, cy], "box": [cx - r, cy - r, cx + r, cy + r]}
        # no edge may pass close to a node it does not connect (the route must be readable)
        if all(
            point_segment_distance(nodes[k]["centre"], nodes[a]["centre"], nodes[b]["centre"]) > 2 * r
            for a, b in edges
            for k in nodes
            if k not in (a, b)
        ):
            break
    else:  # pragma: no cover
        raise RuntimeError(f"no clean layout for {seed_name}")
    img = gradient(w, h, (250, 250, 252), (236, 240, 236))
    d = ImageDraw.Draw(img)
    segs = {}
    for a, b in edges:
        (ax, ay), (bx, by) = nodes[a]["centre"], nodes[b]["centre"]
        length = math.hypot(bx - ax, by - ay)
        ux, uy = (bx - ax) / length, (by - ay) / length
        sx, sy = ax + ux * (r + 2), ay + uy * (r + 2)
        ex, ey = bx - ux * (r + 3), by - uy * (r + 3)
        colour = (200, 60, 40) if (a, b) in highlight else (60, 60, 70)
        d.line([(sx, sy), (ex, ey)], fill=colour, width=3)
        hl, hw = 14, 7
        d.polygon(
            [
                (ex, ey),
                (ex - ux * hl - uy * hw, ey - uy * hl + ux * hw),
                (ex - ux * hl + uy * hw, ey - uy * hl - ux * hw),
            ],
            fill=colour,
        )
        segs[(a, b)] = [[round(sx), round(sy)], [round(ex), round(ey)]]
    for node in nodes.values():
        d.ellipse(node["box"], fill=(255, 255, 255), outline=(40, 70, 140), width=3)
        d.text(
            tuple(node["centre"]),
            str(node["label"]),
            fill=(20, 30, 60),
            font=font(round(r * 0.9)),
            anchor="mm",
        )
    return img, nodes, segs


def point_segment_distance(p, a, b):
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    t = max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy)


def draw_document(size, fields, tags=None, items=None, noise=0.0, seed=0, title="INVOICE"):
    """fields: list of (key, label, value) laid out in two columns of labelled boxes."""
    w, h = size
    img = gradient(w, h, (250, 249, 244), (243, 241, 234), noise=noise, seed=seed)
    d = ImageDraw.Draw(img)
    fs = max(11, round(h / 40))
    d.rectangle([10, 10, w - 11, h - 11], outline=(180, 180, 175), width=2)
    d.rectangle([10, 10, w - 11, round(h * 0.12)], fill=(44, 62, 80))
    d.text((30, round(h * 0.065)), title, fill=(255, 255, 255), font=font(fs + 8), anchor="lm")
    d.text(
        (w - 30, round(h * 0.065)), "Northwind Optics Ltd.", fill=(230, 230, 230), font=font(fs), anchor="rm"
    )
    out = {}
    top = round(h * 0.18)
    bw, bh = round(w * 0.38), round(h * 0.09)
    rows_used = math.ceil(len(fields) / 2)
    for k, (key, label, value) in enumerate(fields):
        col, row = k % 2, k // 2
        x0 = round(w * 0.07) + col * round(w * 0.47)
        y0 = top + row * round(bh * 1.9) + fs + 6
        box = [x0, y0, x0 + bw, y0 + bh]
        d.text((x0, y0 - 4), label, fill=(90, 90, 90), font=font(fs), anchor="lb")
        d.rectangle(box, fill=(255, 255, 255), outline=(60, 60, 60), width=2)
        d.text((x0 + 12, y0 + bh / 2), value, fill=(10, 10, 10), font=font(fs + 3), anchor="lm")
        if tags:
            d.text((x0 + bw - 8, y0 + 6), tags[k], fill=(200, 40, 40), font=font(fs), anchor="ra")
        out[key] = {"label": label, "value": value, "box": box}
    item_cells = []
    if items:
        y = top + rows_used * round(bh * 1.9) + fs + 16
        rh = round(h * 0.065)
        xd0, xd1, xa1 = round(w * 0.07), round(w * 0.70), round(w * 0.93)
        d.text((xd0, y - 4), "Description", fill=(90, 90, 90), font=font(fs), anchor="lb")
        d.text((xa1, y - 4), "Amount", fill=(90, 90, 90), font=font(fs), anchor="rb")
        for i, (desc, amount) in enumerate(items):
            yy = y + i * rh
            dbox, abox = [xd0, yy, xd1, yy + rh], [xd1, yy, xa1, yy + rh]
            d.rectangle(dbox, outline=(150, 150, 150), width=1)
            d.rectangle(abox, outline=(150, 150, 150), width=1)
            d.text((xd0 + 10, yy + rh / 2), desc, fill=(10, 10, 10), font=font(fs), anchor="lm")
            d.text((xa1 - 10, yy + rh / 2), f"{amount:,.2f}", fill=(10, 10, 10), font=font(fs), anchor="rm")
            item_cells.append({"desc": desc, "amount": amount, "desc_box": dbox, "amount_box": abox})
    return img, out, item_cells


# ----------------------------------------------------------------------------- instances

ANSWER_HINT = {
    "integer": "<integer>",
    "number": "<number>",
    "string": "<string>",
    "option_letter": "<letter>",
    "index_list": "<list of integers>",
    "mapping": "<object>",
    "boolean": "<true or false>",
    "matrix": "<list of rows>",
}
ANNOT_HINT = {
    "bbox": "[x0, y0, x1, y1]",
    "bbox_set": "[[x0, y0, x1, y1], ...]",
    "bbox_sequence": "[[x0, y0, x1, y1], ...] in the requested order",
    "bbox_map": '{"<key>": [x0, y0, x1, y1], ...}',
    "bbox_set_map": '{"<key>": [[x0, y0, x1, y1], ...], ...}',
    "point": "[x, y]",
    "point_set": "[[x, y], ...]",
    "point_sequence": "[[x, y], ...] in the requested order",
    "point_map": '{"<key>": [x, y], ...}',
    "point_set_map": '{"<key>": [[x, y], ...], ...}',
    "segment": "[[x0, y0], [x1, y1]]",
    "segment_set": "[[[x0, y0], [x1, y1]], ...]",
}


def reward_contract(answer_type, annotation_type):
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": answer_type},
        "annotation": {"id": RESOLVER[annotation_type], "type": annotation_type},
    }


def make_instance(
    iid,
    task,
    image,
    size,
    question,
    answer_type,
    answer,
    ann_type,
    ann,
    *,
    wrong,
    mode="answer_and_annotation",
    variants=(),
    facts=(),
    distractors=(),
    keep_size=True,
):
    if mode == "answer_and_annotation":
        suffix = (
            f'End your reply with one JSON object: {{"answer": {ANSWER_HINT[answer_type]}, '
            f'"annotation": {ANNOT_HINT[ann_type]}}}. Coordinates are pixels of the image as given '
            "(origin top-left, x to the right, y down)."
        )
    else:
        suffix = f'End your reply with one JSON object: {{"answer": {ANSWER_HINT[answer_type]}}}.'
    wrong = [v for v in wrong if canon(v) != canon(answer)]
    assert wrong, iid
    return {
        "id": iid,
        "task_id": task,
        "image": image,
        "size": list(size),
        "keep_size": keep_size,
        "prompt": question + "\n\n" + suffix,
        "answer_gt": {"type": answer_type, "value": answer},
        "annotation_gt": {"type": ann_type, "value": ann},
        "reward_contract": reward_contract(answer_type, ann_type),
        "trace_output_mode": mode,
        "meta": {
            "wrong": wrong,
            "variants": list(variants),
            "facts": list(facts),
            "distractors": list(distractors),
        },
    }


def canon(v):
    """Enough of the v0 answer canonical form to keep simulated wrong answers really wrong."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("num", int(v)) if float(v).is_integer() else ("num", float(v))
    if isinstance(v, str):
        return ("str", v.strip().lower())
    if isinstance(v, dict):
        return ("map", tuple(sorted((k.strip().lower(), canon(x)) for k, x in v.items())))
    return ("list", tuple(canon(x) for x in v))


def wrong_ints(n, *extra):
    return [n + 1, n - 1, n + 2, *extra]


def shape_plan(name, n, required=(), colours=("red", "blue", "green", "yellow"), kinds=None):
    rng = rng_for("plan", name)
    plan = list(required)
    pool_kinds = ("circle", "rectangle", "triangle")
    while len(plan) < n:
        plan.append((rng.choice(pool_kinds), rng.choice(colours)))
    plan = [
        (k if k != "*" else rng.choice(pool_kinds), c if c != "*" else rng.choice(colours)) for k, c in plan
    ]
    rng.shuffle(plan)
    return plan


def shape_facts(objs, k=6):
    out = []
    for o in objs[:k]:
        cx, cy = o["centre"]
        out.append(f"There is a {o['colour']} {o['kind']} centred near x={cx}, y={cy}.")
        out.append(f"The {o['colour']} {o['kind']} spans x from {o['box'][0]} to {o['box'][2]}.")
    return out


class Bank:
    """Collects drawn images (written later) and instances."""

    def __init__(self):
        self.images: dict[str, tuple[Image.Image, tuple[int, int]]] = {}
        self.instances: list[dict] = []

    def image(self, name, img):
        self.images[name] = (img, img.size)
        return name

    def add(self, inst):
        self.instances.append(inst)


def build_shapes(bank: Bank):
    T = "count_shapes"
    # shapes_01: count red, bbox_set
    size = (640, 480)
    plan = shape_plan("shapes_01", 7, [("*", "red")] * 3, colours=("blue", "green", "yellow"))
    img, objs = draw_shapes_image("shapes_01", size, plan)
    f = bank.image("images/shapes_01.png", img)
    red = [o for o in objs if o["colour"] == "red"]
    bank.add(
        make_instance(
            "count_shapes-001",
            T,
            f,
            size,
            "How many red shapes are in the image? Give the count and the bounding box of every red shape.",
            "integer",
            len(red),
            "bbox_set",
            [o["box"] for o in red],
            wrong=wrong_ints(len(red)),
            variants=[float(len(red))],
            facts=shape_facts(objs),
            distractors=[o["box"] for o in objs if o["colour"] != "red"],
        )
    )

    # shapes_02: count per kind, bbox_set_map
    size = (512, 512)
    plan = shape_plan(
        "shapes_02", 7, [("circle", "*"), ("rectangle", "*"), ("triangle", "*"), ("triangle", "*")]
    )
    img, objs = draw_shapes_image("shapes_02", size, plan)
    f = bank.image("images/shapes_02.png", img)
    kinds = ("circle", "rectangle", "triangle")
    counts = {k: sum(o["kind"] == k for o in objs) for k in kinds}
    wrong = [
        dict(counts, circle=counts["circle"] + 1),
        dict(counts, triangle=counts["triangle"] - 1),
        {k: counts[k] for k in kinds[:2]},
    ]
    bank.add(
        make_instance(
            "count_shapes-002",
            T,
            f,
            size,
            "Count the shapes of each kind (circle, rectangle, triangle) and box every shape, grouped by kind "
            '(keys "circle", "rectangle", "triangle").',
            "mapping",
            counts,
            "bbox_set_map",
            {k: [o["box"] for o in objs if o["kind"] == k] for k in kinds},
            wrong=wrong,
            variants=[{k.upper(): v for k, v in counts.items()}],
            facts=shape_facts(objs),
            distractors=[[8, 8, 40, 40]],
        )
    )

    # shapes_03: blue centres, point_set ; 03b: largest shape centre, point
    size = (800, 600)
    plan = shape_plan("shapes_03", 8, [("*", "blue")] * 3, colours=("red", "green", "yellow", "purple"))
    img, objs = draw_shapes_image("shapes_03", size, plan)
    f = bank.image("images/shapes_03.png", img)
    blue = [o for o in objs if o["colour"] == "blue"]
    bank.add(
        make_instance(
            "count_shapes-003",
            T,
            f,
            size,
            "Mark the centre of every blue shape and say how many blue shapes there are.",
            "integer",
            len(blue),
            "point_set",
            [o["centre"] for o in blue],
            wrong=wrong_ints(len(blue)),
            facts=shape_facts(objs),
            distractors=[o["centre"] for o in objs if o["colour"] != "blue"],
        )
    )
    big = max(objs, key=lambda o: o["area"])
    bank.add(
        make_instance(
            "count_shapes-004",
            T,
            f,
            size,
            "Point at the centre of the largest shape. What colour is it?",
            "string",
            big["colour"],
            "point",
            big["centre"],
            wrong=[c for c in ("red", "blue", "green", "yellow", "purple") if c != big["colour"]][:3],
            variants=[big["colour"].title(), big["colour"].upper() + " "],
            facts=shape_facts(objs),
        )
    )

    # shapes_04: kind of the largest shape, bbox
    size = (320, 240)
    plan = shape_plan("shapes_04", 4, [("triangle", "*"), ("circle", "*"), ("rectangle", "*")])
    img, objs = draw_shapes_image("shapes_04", size, plan, noise=1.5)
    f = bank.image("images/shapes_04.png", img)
    big = max(objs, key=lambda o: o["area"])
    bank.add(
        make_instance(
            "count_shapes-005",
            T,
            f,
            size,
            "What kind of shape is the largest one (circle, rectangle or triangle)? Give its bounding box.",
            "string",
            big["kind"],
            "bbox",
            big["box"],
            wrong=[k for k in kinds if k != big["kind"]] + ["square"],
            variants=[big["kind"].title(), f" {big['kind']}"],
            facts=shape_facts(objs),
        )
    )

    # shapes_05: centres by colour, point_set_map
    size = (1024, 768)
    plan = shape_plan(
        "shapes_05",
        9,
        [("*", "red")] * 2 + [("*", "blue")] * 2 + [("*", "green")] * 2,
        colours=("red", "blue", "green"),
    )
    img, objs = draw_shapes_image("shapes_05", size, plan)
    f = bank.image("images/shapes_05.png", img)
    cols = ("red", "blue", "green")
    counts = {c: sum(o["colour"] == c for o in objs) for c in cols}
    bank.add(
        make_instance(
            "count_shapes-006",
            T,
            f,
            size,
            'Group the shape centres by colour (keys "red", "blue", "green") and give the number of shapes '
            "of each colour.",
            "mapping",
            counts,
            "point_set_map",
            {c: [o["centre"] for o in objs if o["colour"] == c] for c in cols},
            wrong=[dict(counts, red=counts["red"] + 1), dict(counts, green=counts["green"] - 1)],
            facts=shape_facts(objs),
            distractors=[[30, 30]],
        )
    )

    # shapes_06: largest/smallest, bbox_map, boolean
    size = (640, 480)
    plan = shape_plan("shapes_06", 6, [("circle", "*"), ("rectangle", "*")])
    img, objs = draw_shapes_image("shapes_06", size, plan)
    f = bank.image("images/shapes_06.png", img)
    big, small = max(objs, key=lambda o: o["area"]), min(objs, key=lambda o: o["area"])
    bank.add(
        make_instance(
            "count_shapes-007",
            T,
            f,
            size,
            'Box the largest and the smallest shape (keys "largest" and "smallest"). Is the largest shape a circle?',
            "boolean",
            big["kind"] == "circle",
            "bbox_map",
            {"largest": big["box"], "smallest": small["box"]},
            wrong=[big["kind"] != "circle"],
            facts=shape_facts(objs),
            distractors=[o["box"] for o in objs if o is not big and o is not small],
        )
    )

    # shapes_07: leftmost/rightmost centres, point_map, option letter (no image_size)
    size = (400, 300)
    plan = shape_plan("shapes_07", 5)
    img, objs = draw_shapes_image("shapes_07", size, plan)
    f = bank.image("images/shapes_07.png", img)
    by_x = sorted(objs, key=lambda o: o["centre"][0])
    assert by_x[0]["centre"][0] < by_x[1]["centre"][0] and by_x[-2]["centre"][0] < by_x[-1]["centre"][0]
    letters = {"red": "A", "blue": "B", "green": "C", "yellow": "D"}
    bank.add(
        make_instance(
            "count_shapes-008",
            T,
            f,
            size,
            'Give the centres of the leftmost and the rightmost shape (keys "leftmost", "rightmost"). '
            "What colour is the leftmost shape? A) red B) blue C) green D) yellow",
            "option_letter",
            letters[by_x[0]["colour"]],
            "point_map",
            {"leftmost": by_x[0]["centre"], "rightmost": by_x[-1]["centre"]},
            wrong=[v for v in "ABCD" if v != letters[by_x[0]["colour"]]],
            variants=[letters[by_x[0]["colour"]].lower()],
            facts=shape_facts(objs),
            keep_size=False,
            distractors=[o["centre"] for o in by_x[1:-1]],
        )
    )

    # shapes_08: labelled shapes, red labels by size, bbox_sequence + index_list
    size = (800, 600)
    plan = shape_plan("shapes_08", 7, [("*", "red")] * 3, colours=("blue", "green", "yellow"))
    img, objs = draw_shapes_image("shapes_08", size, plan, labels=True)
    f = bank.image("images/shapes_08.png", img)
    red = sorted((o for o in objs if o["colour"] == "red"), key=lambda o: -o["area"])
    order = [o["label"] for o in red]
    bank.add(
        make_instance(
            "count_shapes-009",
            T,
            f,
            size,
            "The shapes carry numbers. List the numbers on the red shapes from the largest red shape to the smallest, "
            "and box those shapes in the same order.",
            "index_list",
            order,
            "bbox_sequence",
            [o["box"] for o in red],
            wrong=[order[::-1], sorted(order), order[1:]],
            facts=shape_facts(objs),
            distractors=[o["box"] for o in objs if o["colour"] != "red"],
        )
    )

    # shapes_09: circles, answer mode
    size = (1024, 768)
    plan = shape_plan("shapes_09", 8, [("circle", "*")] * 3)
    img, objs = draw_shapes_image("shapes_09", size, plan)
    f = bank.image("images/shapes_09.png", img)
    circ = [o for o in objs if o["kind"] == "circle"]
    bank.add(
        make_instance(
            "count_shapes-010",
            T,
            f,
            size,
            "How many circles are in the image?",
            "integer",
            len(circ),
            "bbox_set",
            [o["box"] for o in circ],
            wrong=wrong_ints(len(circ)),
            mode="answer",
            variants=[str(len(circ))],
            facts=shape_facts(objs),
        )
    )

    # shapes_10: labelled, point_sequence in label order, colour of the last
    size = (512, 512)
    plan = shape_plan("shapes_10", 5, colours=("red", "blue", "green", "orange"))
    img, objs = draw_shapes_image("shapes_10", size, plan, labels=True)
    f = bank.image("images/shapes_10.png", img)
    last = objs[-1]
    bank.add(
        make_instance(
            "count_shapes-011",
            T,
            f,
            size,
            "Visit the shapes in the order of their numbers and give their centres in that order. "
            "What colour is the last shape you visit?",
            "string",
            last["colour"],
            "point_sequence",
            [o["centre"] for o in objs],
            wrong=[c for c in ("red", "blue", "green", "orange") if c != last["colour"]],
            variants=[last["colour"].title()],
            facts=shape_facts(objs),
        )
    )


def build_charts(bank: Bank):
    T = "chart_value"
    # bar_01: tallest bar (bbox) ; 01b: all bar tops (point_set)
    size = (640, 480)
    rng = rng_for("bar_01")
    values = rng.sample(range(12, 96), 5)
    cats = ["North", "South", "East", "West", "Central"]
    img, bars = draw_bar_chart(size, "Units sold by region", cats, values, 20)
    f = bank.image("images/bar_01.png", img)
    top = max(bars, key=lambda b: b["value"])
    second = sorted(values)[-2]
    facts = [f"The {b['cat']} bar reaches {b['value']}, its top edge is at y={b['box'][1]}." for b in bars]
    bank.add(
        make_instance(
            "chart_value-001",
            T,
            f,
            size,
            "What is the value of the tallest bar? Give its bounding box.",
            "integer",
            top["value"],
            "bbox",
            top["box"],
            wrong=[second, top["value"] + 5, top["value"] - 2],
            variants=[float(top["value"])],
            facts=facts,
        )
    )
    bank.add(
        make_instance(
            "chart_value-002",
            T,
            f,
            size,
            "Mark the top-centre of every bar. How many bars are there?",
            "integer",
            len(bars),
            "point_set",
            [b["top"] for b in bars],
            wrong=wrong_ints(len(bars)),
            facts=facts,
            distractors=[[b["top"][0], b["box"][3]] for b in bars],
        )
    )

    # bar_02: ranking + bbox_sequence left to right
    size = (800, 600)
    rng = rng_for("bar_02")
    values = rng.sample(range(5, 60), 6)
    cats = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
    img, bars = draw_bar_chart(size, "Monthly sign-ups (thousands)", cats, values, 10, palette=("green",))
    f = bank.image("images/bar_02.png", img)
    rank = sorted(range(6), key=lambda i: -values[i])
    bank.add(
        make_instance(
            "chart_value-003",
            T,
            f,
            size,
            "Rank the bars from the highest to the lowest value, giving their 0-based positions from the left, "
            "and box the bars from left to right.",
            "index_list",
            rank,
            "bbox_sequence",
            [b["box"] for b in bars],
            wrong=[rank[::-1], rank[:2][::-1] + rank[2:]],
            facts=[f"{b['cat']} shows {b['value']} thousand sign-ups." for b in bars],
        )
    )

    # bar_03: max/min bbox_map, difference (number)
    size = (1024, 768)
    rng = rng_for("bar_03")
    values = [v / 2 for v in rng.sample(range(20, 180), 7)]
    cats = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    img, bars = draw_bar_chart(
        size, "Average wait time (minutes)", cats, values, 10, palette=("orange", "blue")
    )
    f = bank.image("images/bar_03.png", img)
    hi_, lo_ = max(bars, key=lambda b: b["value"]), min(bars, key=lambda b: b["value"])
    diff = hi_["value"] - lo_["value"]
    bank.add(
        make_instance(
            "chart_value-004",
            T,
            f,
            size,
            'Box the highest and the lowest bar (keys "max" and "min"). What is the difference between their values?',
            "number",
            diff,
            "bbox_map",
            {"max": hi_["box"], "min": lo_["box"]},
            wrong=[diff + 0.5, diff - 1, hi_["value"] + lo_["value"]],
            variants=[fmt_num(diff)],
            facts=[f"{b['cat']} averages {fmt_num(b['value'])} minutes." for b in bars],
            distractors=[b["box"] for b in bars if b is not hi_ and b is not lo_],
        )
    )

    # bar_04: point at top of C, number
    size = (512, 512)
    rng = rng_for("bar_04")
    values = [v / 4 for v in rng.sample(range(20, 160), 4)]
    cats = ["A", "B", "C", "D"]
    img, bars = draw_bar_chart(size, "Yield per plot (kg)", cats, values, 5, palette=("purple", "green"))
    f = bank.image("images/bar_04.png", img)
    c = bars[2]
    bank.add(
        make_instance(
            "chart_value-005",
            T,
            f,
            size,
            "Mark the top-centre of the bar labelled C. What is its value?",
            "number",
            c["value"],
            "point",
            c["top"],
            wrong=[bars[1]["value"], c["value"] + 0.25, round(c["value"])],
            facts=[f"Plot {b['cat']} yields {fmt_num(b['value'])} kg." for b in bars],
        )
    )

    # bar_05: 1920x1080 JPEG, bars above 50 (bbox_set)
    size = (1920, 1080)
    rng = rng_for("bar_05")
    values = rng.sample([v for v in range(18, 96) if v != 50], 8)
    cats = [f"Q{i + 1}" for i in range(8)]
    img, bars = draw_bar_chart(size, "Revenue per quarter (M$)", cats, values, 10, palette=("blue", "red"))
    f = bank.image("images/bar_05.jpg", img)
    above = [b for b in bars if b["value"] > 50]
    bank.add(
        make_instance(
            "chart_value-006",
            T,
            f,
            size,
            "How many bars exceed 50? Box each of them.",
            "integer",
            len(above),
            "bbox_set",
            [b["box"] for b in above],
            wrong=wrong_ints(len(above)),
            facts=[f"{b['cat']} is at {b['value']}." for b in bars],
            distractors=[b["box"] for b in bars if b["value"] < 50],
        )
    )

    # bar_06: lowest bar as option letter, answer_only mode
    size = (640, 480)
    rng = rng_for("bar_06")
    values = rng.sample(range(10, 80), 5)
    cats = ["Mon", "Tue", "Wed", "Thu", "Fri"]
    img, bars = draw_bar_chart(size, "Tickets closed", cats, values, 10, palette=("yellow",))
    f = bank.image("images/bar_06.png", img)
    low = min(range(5), key=lambda i: values[i])
    bank.add(
        make_instance(
            "chart_value-007",
            T,
            f,
            size,
            "Which day has the fewest tickets closed? A) Mon B) Tue C) Wed D) Thu E) Fri",
            "option_letter",
            "ABCDE"[low],
            "bbox",
            bars[low]["box"],
            wrong=[v for v in "ABCDE" if v != "ABCDE"[low]],
            mode="answer_only",
            variants=["ABCDE"[low].lower()],
            facts=[f"{b['cat']} closed {b['value']} tickets." for b in bars],
        )
    )

    # line_01: all points (point_sequence), max value ; 01b: steepest rise segment
    size = (800, 600)
    rng = rng_for("line_01")
    years = list(range(2016, 2023))
    values = [v + 0.5 for v in rng.sample(range(10, 90), 7)]
    img, pts = draw_line_chart(size, "Median latency (ms)", years, values, 10)
    f = bank.image("images/line_01.png", img)
    facts = [f"In {p['label']} the line is at {fmt_num(p['value'])}." for p in pts]
    bank.add(
        make_instance(
            "chart_value-008",
            T,
            f,
            size,
            "Mark every data point of the line from left to right. What is the highest value?",
            "number",
            max(values),
            "point_sequence",
            [p["pt"] for p in pts],
            wrong=[sorted(values)[-2], max(values) - 0.5, max(values) + 1],
            variants=[str(max(values))],
            facts=facts,
        )
    )
    rises = [(pts[i + 1]["value"] - pts[i]["value"], i) for i in range(6)]
    _, i = max(rises)
    bank.add(
        make_instance(
            "chart_value-009",
            T,
            f,
            size,
            "Give the line segment with the steepest rise between two consecutive points. In which year does it end?",
            "integer",
            pts[i + 1]["label"],
            "segment",
            [pts[i]["pt"], pts[i + 1]["pt"]],
            wrong=[pts[i]["label"], pts[i + 1]["label"] + 1],
            facts=facts,
            distractors=[[pts[j]["pt"], pts[j + 1]["pt"]] for j in range(6) if j != i],
        )
    )

    # line_02: decreasing segments (segment_set) ; 02b: above/below 50 (point_set_map)
    size = (640, 480)
    rng = rng_for("line_02")
    while True:
        values = [rng.choice([v for v in range(8, 95) if v != 50]) for _ in range(8)]
        downs = [i for i in range(7) if values[i + 1] < values[i]]
        ups = [i for i in range(7) if values[i + 1] > values[i]]
        above = [v for v in values if v > 50]
        if 2 <= len(downs) <= 4 and ups and 2 <= len(above) <= 6:
            break
    img, pts = draw_line_chart(
        size, "Weekly active users (k)", [f"W{i + 1}" for i in range(8)], values, 20, colour="blue"
    )
    f = bank.image("images/line_02.png", img)
    facts = [f"Week {p['label']} reads {p['value']}." for p in pts]
    bank.add(
        make_instance(
            "chart_value-010",
            T,
            f,
            size,
            "Give every segment of the line where the value decreases. How many are there?",
            "integer",
            len(downs),
            "segment_set",
            [[pts[i]["pt"], pts[i + 1]["pt"]] for i in downs],
            wrong=wrong_ints(len(downs)),
            facts=facts,
            distractors=[[pts[i]["pt"], pts[i + 1]["pt"]] for i in ups],
        )
    )
    bank.add(
        make_instance(
            "chart_value-011",
            T,
            f,
            size,
            'Mark the data points above 50 and below 50 (keys "above" and "below"). How many points are above 50?',
            "integer",
            len(above),
            "point_set_map",
            {
                "above": [p["pt"] for p in pts if p["value"] > 50],
                "below": [p["pt"] for p in pts if p["value"] < 50],
            },
            wrong=wrong_ints(len(above)),
            facts=facts,
            distractors=[[pts[0]["pt"][0], 40]],
        )
    )

    # line_03: max/min point_map, mapping answer
    size = (1024, 768)
    rng = rng_for("line_03")
    values = rng.sample(range(15, 120), 6)
    img, pts = draw_line_chart(
        size, "Daily orders", ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], values, 20, colour="green"
    )
    f = bank.image("images/line_03.png", img)
    hi_, lo_ = max(pts, key=lambda p: p["value"]), min(pts, key=lambda p: p["value"])
    ans = {"max": hi_["value"], "min": lo_["value"]}
    bank.add(
        make_instance(
            "chart_value-012",
            T,
            f,
            size,
            'Mark the highest and the lowest point of the line (keys "max" and "min") and give both values '
            "as an object with the same keys.",
            "mapping",
            ans,
            "point_map",
            {"max": hi_["pt"], "min": lo_["pt"]},
            wrong=[{"max": ans["min"], "min": ans["max"]}, dict(ans, max=ans["max"] - 5)],
            variants=[{"MAX": ans["max"], "Min": ans["min"]}],
            facts=[f"{p['label']} has {p['value']} orders." for p in pts],
            distractors=[p["pt"] for p in pts if p is not hi_ and p is not lo_],
        )
    )

    # line_04: local peaks, point_set (no image_size)
    size = (512, 512)
    rng = rng_for("line_04")
    while True:
        values = rng.sample(range(5, 60), 9)
        peaks = [i for i in range(1, 8) if values[i] > values[i - 1] and values[i] > values[i + 1]]
        if 2 <= len(peaks) <= 3:
            break
    img, pts = draw_line_chart(size, "Sensor reading", list(range(1, 10)), values, 10, colour="red")
    f = bank.image("images/line_04.png", img)
    bank.add(
        make_instance(
            "chart_value-013",
            T,
            f,
            size,
            "Mark the local peaks of the line (points higher than both neighbours). How many are there?",
            "integer",
            len(peaks),
            "point_set",
            [pts[i]["pt"] for i in peaks],
            wrong=wrong_ints(len(peaks)),
            facts=[f"Reading {p['label']} is {p['value']}." for p in pts],
            keep_size=False,
            distractors=[pts[i]["pt"] for i in range(9) if i not in peaks],
        )
    )

    # line_05: segment 2020-2021, boolean
    size = (800, 600)
    rng = rng_for("line_05")
    values = rng.sample(range(20, 100), 6)
    years = list(range(2018, 2024))
    img, pts = draw_line_chart(size, "Field trials completed", years, values, 20, colour="orange")
    f = bank.image("images/line_05.png", img)
    bank.add(
        make_instance(
            "chart_value-014",
            T,
            f,
            size,
            "Give the line segment between the 2020 and 2021 points. Is the 2021 value higher than the 2020 value?",
            "boolean",
            values[3] > values[2],
            "segment",
            [pts[2]["pt"], pts[3]["pt"]],
            wrong=[values[3] <= values[2]],
            facts=[f"{p['label']}: {p['value']} trials." for p in pts],
            distractors=[[pts[3]["pt"], pts[4]["pt"]]],
        )
    )


def build_tables(bank: Bank):
    T = "locate_cell"
    # table_01: find 'delta', bbox, string cell id
    size = (640, 480)
    rng = rng_for("table_01")
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "omega",
        "sigma",
        "kappa",
        "theta",
        "lambda",
        "zeta",
        "iota",
        "rho",
        "tau",
        "phi",
        "chi",
        "psi",
    ]
    rng.shuffle(words)
    texts = [words[r * 4 : (r + 1) * 4] for r in range(4)]
    img, cells = draw_table(size, texts)
    f = bank.image("images/table_01.png", img)
    ((r, c),) = [k for k, v in cells.items() if v["text"] == "delta"]
    cid = f"{'ABCD'[c]}{r + 1}"
    bank.add(
        make_instance(
            "locate_cell-001",
            T,
            f,
            size,
            "Which cell contains the word 'delta'? Answer with its column letter and row number (for example B3) "
            "and box the cell.",
            "string",
            cid,
            "bbox",
            cells[(r, c)]["box"],
            wrong=[f"{'ABCD'[(c + 1) % 4]}{r + 1}", f"{'ABCD'[c]}{(r + 1) % 4 + 1}", f"{r + 1}{'ABCD'[c]}"],
            variants=[cid.lower()],
            facts=[f"Cell {'ABCD'[cc]}{rr + 1} reads '{v['text']}'." for (rr, cc), v in cells.items()][:8],
        )
    )

    # table_02: 3x3 matrix, bbox of the grid
    size = (800, 600)
    rng = rng_for("table_02")
    mat = [[rng.randint(-9, 20) for _ in range(3)] for _ in range(3)]
    img, cells = draw_table(size, mat)
    f = bank.image("images/table_02.png", img)
    grid = [
        cells[(0, 0)]["box"][0],
        cells[(0, 0)]["box"][1],
        cells[(2, 2)]["box"][2],
        cells[(2, 2)]["box"][3],
    ]
    wrong1 = [row[:] for row in mat]
    wrong1[1][2] += 1
    bank.add(
        make_instance(
            "locate_cell-002",
            T,
            f,
            size,
            "Read the 3x3 grid of numbers as a matrix (rows from top to bottom) and box the whole grid.",
            "matrix",
            mat,
            "bbox",
            grid,
            wrong=[wrong1, [list(col) for col in zip(*mat, strict=True)], mat[:2]],
            variants=[[[float(v) for v in row] for row in mat]],
            facts=[f"Row {r + 1} reads {', '.join(str(v) for v in row)}." for r, row in enumerate(mat)],
        )
    )

    # table_03: coloured cells, bbox_set_map, mapping counts
    size = (1024, 768)
    rng = rng_for("table_03")
    mat = [[rng.randint(0, 99) for _ in range(5)] for _ in range(5)]
    spots = rng.sample([(r, c) for r in range(5) for c in range(5)], 7)
    fills = {k: ("red" if i < 3 else "blue") for i, k in enumerate(spots)}
    img, cells = draw_table(size, mat, fills=fills)
    f = bank.image("images/table_03.png", img)
    groups = {col: [cells[k]["box"] for k in sorted(fills) if fills[k] == col] for col in ("red", "blue")}
    bank.add(
        make_instance(
            "locate_cell-003",
            T,
            f,
            size,
            'Box the highlighted cells grouped by colour (keys "red" and "blue") and count the cells of each colour.',
            "mapping",
            {"red": 3, "blue": 4},
            "bbox_set_map",
            groups,
            wrong=[{"red": 4, "blue": 3}, {"red": 3, "blue": 5}],
            variants=[{"Red": 3, "BLUE": 4}],
            facts=[
                f"The cell in row {r + 1}, column {'ABCDE'[c]} is shaded {fills[(r, c)]}."
                for r, c in sorted(fills)
            ],
            distractors=[cells[(r, c)]["box"] for r in range(5) for c in range(5) if (r, c) not in fills][:4],
        )
    )

    # table_04: negative numbers, bbox_set
    size = (512, 512)
    rng = rng_for("table_04")
    while True:
        mat = [[rng.randint(-30, 60) for _ in range(4)] for _ in range(4)]
        neg = [(r, c) for r in range(4) for c in range(4) if mat[r][c] < 0]
        if 3 <= len(neg) <= 5:
            break
    img, cells = draw_table(size, mat)
    f = bank.image("images/table_04.png", img)
    bank.add(
        make_instance(
            "locate_cell-004",
            T,
            f,
            size,
            "Box every cell that holds a negative number. How many are there?",
            "integer",
            len(neg),
            "bbox_set",
            [cells[k]["box"] for k in neg],
            wrong=wrong_ints(len(neg)),
            facts=[f"Cell {'ABCD'[c]}{r + 1} holds {mat[r][c]}." for r, c in neg],
            distractors=[cells[(r, c)]["box"] for r in range(4) for c in range(4) if mat[r][c] >= 0][:4],
        )
    )

    # table_05: highlighted centres by colour, point_set_map (no image_size)
    size = (640, 480)
    rng = rng_for("table_05")
    texts = [[rng.choice(["ok", "late", "n/a", "done", "todo"]) for _ in range(5)] for _ in range(4)]
    spots = rng.sample([(r, c) for r in range(4) for c in range(5)], 5)
    fills = {k: ("green" if i < 3 else "yellow") for i, k in enumerate(spots)}
    img, cells = draw_table(size, texts, fills=fills)
    f = bank.image("images/table_05.png", img)

    def centre(b):
        return [(b[0] + b[2]) // 2, (b[1] + b[3]) // 2]

    bank.add(
        make_instance(
            "locate_cell-005",
            T,
            f,
            size,
            'Mark the centre of each highlighted cell, grouped by colour (keys "green" and "yellow"). '
            "How many highlighted cells are there in total?",
            "integer",
            5,
            "point_set_map",
            {
                col: [centre(cells[k]["box"]) for k in sorted(fills) if fills[k] == col]
                for col in ("green", "yellow")
            },
            wrong=[4, 6, 3],
            keep_size=False,
            facts=[
                f"Row {r + 1}, column {'ABCDE'[c]} is highlighted {fills[(r, c)]}." for r, c in sorted(fills)
            ],
            distractors=[centre(cells[(0, 0)]["box"])]
            if (0, 0) not in fills
            else [centre(cells[(3, 4)]["box"])],
        )
    )

    # table_06: row with the largest sum (option letter, bbox) ; 06b: rows A and B as matrix (bbox_sequence)
    size = (800, 600)
    rng = rng_for("table_06")
    while True:
        mat = [[rng.randint(1, 40) for _ in range(4)] for _ in range(4)]
        sums = [sum(r) for r in mat]
        if sums.count(max(sums)) == 1:
            break
    img, cells = draw_table(size, mat, row_labels=["A", "B", "C", "D"], col_labels=["Q1", "Q2", "Q3", "Q4"])
    f = bank.image("images/table_06.png", img)

    def row_box(r):
        return [
            cells[(r, 0)]["box"][0],
            cells[(r, 0)]["box"][1],
            cells[(r, 3)]["box"][2],
            cells[(r, 3)]["box"][3],
        ]

    best = sums.index(max(sums))
    facts = [f"Row {'ABCD'[r]} sums to {sums[r]}." for r in range(4)]
    bank.add(
        make_instance(
            "locate_cell-006",
            T,
            f,
            size,
            "Which row has the largest sum? Answer with the row letter and box the whole row.",
            "option_letter",
            "ABCD"[best],
            "bbox",
            row_box(best),
            wrong=[v for v in "ABCD" if v != "ABCD"[best]],
            facts=facts,
            variants=["ABCD"[best].lower()],
        )
    )
    bank.add(
        make_instance(
            "locate_cell-007",
            T,
            f,
            size,
            "Read rows A and B as a 2x4 matrix and box row A and then row B.",
            "matrix",
            mat[:2],
            "bbox_sequence",
            [row_box(0), row_box(1)],
            wrong=[mat[1::-1], [mat[0], mat[2]]],
            facts=facts,
            distractors=[row_box(2)],
        )
    )


def build_diagrams(bank: Bank):
    T = "trace_path"
    # diagram_01: numbered nodes, follow arrows from 0 (index_list + point_sequence)
    size = (640, 480)
    rng = rng_for("diagram_01")
    rest = rng.sample(range(1, 6), 5)
    path = [0] + rest[:3]
    others = rest[3:]
    labels = [str(i) for i in range(6)]
    edges = [(str(a), str(b)) for a, b in zip(path, path[1:], strict=False)]
    edges += [
        (str(others[0]), str(path[2])),
        (str(others[1]), str(others[0])),
        (str(others[1]), str(path[1])),
    ]
    img, nodes, segs = draw_diagram(size, labels, edges, "diagram_01")
    f = bank.image("images/diagram_01.png", img)
    bank.add(
        make_instance(
            "trace_path-001",
            T,
            f,
            size,
            "Start at node 0 and follow the arrows until you cannot continue. List the nodes you visit (including 0) "
            "and mark their centres in the same order.",
            "index_list",
            path,
            "point_sequence",
            [nodes[str(i)]["centre"] for i in path],
            wrong=[path[:-1], path[::-1], [0, *others, path[-1]]],
            facts=[f"Node {a} has an arrow to node {b}." for a, b in edges],
            distractors=[nodes[str(i)]["centre"] for i in others],
        )
    )

    # diagram_02: route A->F, segment_set
    size = (800, 600)
    rng = rng_for("diagram_02")
    mid = rng.sample(["B", "C", "D", "E"], 4)
    route = ["A", mid[0], mid[1], "F"]
    edges = list(zip(route, route[1:], strict=False))
    edges += [(mid[2], mid[1]), (mid[3], "F"), (mid[2], mid[3])]
    img, nodes, segs = draw_diagram(size, list("ABCDEF"), edges, "diagram_02")
    f = bank.image("images/diagram_02.png", img)
    bank.add(
        make_instance(
            "trace_path-002",
            T,
            f,
            size,
            "Follow the arrows from A to F and give each edge on the route as a segment. How many edges does the route use?",
            "integer",
            3,
            "segment_set",
            [segs[e] for e in edges[:3]],
            wrong=[2, 4, 5],
            facts=[f"An arrow runs from {a} to {b}." for a, b in edges],
            distractors=[segs[e] for e in edges[3:]],
        )
    )

    # diagram_03: edge between B and D (segment, boolean) ; 03b: centre of E (point), in-degree
    size = (1024, 768)
    rng = rng_for("diagram_03")
    bd = ("B", "D") if rng.random() < 0.5 else ("D", "B")
    edges = [bd, ("A", "B"), ("C", "E"), ("F", "E"), ("D", "F"), ("A", "C")]
    img, nodes, segs = draw_diagram(size, list("ABCDEF"), edges, "diagram_03")
    f = bank.image("images/diagram_03.png", img)
    facts = [f"There is an arrow from {a} to {b}." for a, b in edges] + [
        f"Node {k} sits near x={v['centre'][0]}, y={v['centre'][1]}." for k, v in nodes.items()
    ]
    bank.add(
        make_instance(
            "trace_path-003",
            T,
            f,
            size,
            "Give the edge between nodes B and D as a segment. Does its arrow point towards D?",
            "boolean",
            bd == ("B", "D"),
            "segment",
            segs[bd],
            wrong=[bd != ("B", "D")],
            facts=facts,
            distractors=[segs[("A", "B")]],
        )
    )
    bank.add(
        make_instance(
            "trace_path-004",
            T,
            f,
            size,
            "Mark the centre of node E. How many arrows point into E?",
            "integer",
            2,
            "point",
            nodes["E"]["centre"],
            wrong=[1, 3],
            facts=facts,
            variants=["2"],
        )
    )

    # diagram_04: chain, start/end point_map (no image_size)
    size = (512, 512)
    rng = rng_for("diagram_04")
    chain = rng.sample(list("ABCDE"), 5)
    edges = list(zip(chain, chain[1:], strict=False))
    img, nodes, segs = draw_diagram(size, list("ABCDE"), edges, "diagram_04")
    f = bank.image("images/diagram_04.png", img)
    bank.add(
        make_instance(
            "trace_path-005",
            T,
            f,
            size,
            'Mark the start node (no incoming arrow) and the end node (no outgoing arrow) with keys "start" and "end". '
            "How many arrows lie on the path from start to end?",
            "integer",
            4,
            "point_map",
            {"start": nodes[chain[0]]["centre"], "end": nodes[chain[-1]]["centre"]},
            wrong=[3, 5],
            keep_size=False,
            facts=[f"{a} points to {b}." for a, b in edges],
            distractors=[nodes[chain[2]]["centre"]],
        )
    )

    # diagram_05: node boxes (bbox_map), most outgoing ; 05b: arrows leaving A (segment_set)
    size = (800, 600)
    edges = [("A", "B"), ("A", "D"), ("C", "A"), ("C", "E"), ("C", "B"), ("D", "E"), ("E", "B")]
    img, nodes, segs = draw_diagram(size, list("ABCDE"), edges, "diagram_05")
    f = bank.image("images/diagram_05.png", img)
    facts = [f"Node {a} sends an arrow to {b}." for a, b in edges]
    bank.add(
        make_instance(
            "trace_path-006",
            T,
            f,
            size,
            'Box the nodes A, B and C (keys "A", "B", "C"). Which node has the most outgoing arrows?',
            "string",
            "C",
            "bbox_map",
            {k: nodes[k]["box"] for k in "ABC"},
            wrong=["A", "E", "B"],
            variants=["c", " C"],
            facts=facts,
            distractors=[nodes["D"]["box"]],
        )
    )
    bank.add(
        make_instance(
            "trace_path-007",
            T,
            f,
            size,
            "Give every arrow that leaves node A as a segment. How many are there?",
            "integer",
            2,
            "segment_set",
            [segs[("A", "B")], segs[("A", "D")]],
            wrong=[1, 3],
            facts=facts,
            distractors=[segs[("C", "A")]],
        )
    )

    # diagram_06: arrows leaving A, answer mode
    size = (640, 480)
    edges = [("A", "B"), ("A", "C"), ("A", "E"), ("D", "A"), ("B", "F"), ("E", "F")]
    img, nodes, segs = draw_diagram(
        size, list("ABCDEF"), edges, "diagram_06", highlight={e for e in edges if e[0] == "A"}
    )
    f = bank.image("images/diagram_06.png", img)
    bank.add(
        make_instance(
            "trace_path-008",
            T,
            f,
            size,
            "How many arrows leave node A?",
            "integer",
            3,
            "point_set",
            [nodes[k]["centre"] for k in "BCE"],
            wrong=[2, 4],
            mode="answer",
            facts=[f"A red arrow goes from {a} to {b}." for a, b in edges if a == "A"],
        )
    )


def build_documents(bank: Bank):
    T = "read_document"
    # doc_01: field boxes (bbox_map) + values (mapping) ; 01b: reading order (bbox_sequence)
    size = (800, 600)
    fields = [
        ("invoice_no", "Invoice No.", "INV-2041"),
        ("date", "Date", "2026-03-14"),
        ("customer", "Customer", "Harbor Labs"),
        ("total", "Total", "$1,284.50"),
    ]
    img, out, _ = draw_document(size, fields)
    f = bank.image("images/doc_01.png", img)
    facts = [f"The '{v['label']}' box reads {v['value']}." for v in out.values()]
    keys = ("invoice_no", "date", "total")
    ans = {k: out[k]["value"] for k in keys}
    bank.add(
        make_instance(
            "read_document-001",
            T,
            f,
            size,
            'Box the fields Invoice No., Date and Total (keys "invoice_no", "date", "total") and read their values '
            "into an object with the same keys.",
            "mapping",
            ans,
            "bbox_map",
            {k: out[k]["box"] for k in keys},
            wrong=[dict(ans, total="$1,248.50"), dict(ans, date="2026-04-14")],
            variants=[{k: v.upper() for k, v in ans.items()}],
            facts=facts,
            distractors=[out["customer"]["box"]],
        )
    )
    bank.add(
        make_instance(
            "read_document-002",
            T,
            f,
            size,
            "Box every field box in reading order (left to right, then top to bottom). How many field boxes are there?",
            "integer",
            4,
            "bbox_sequence",
            [out[k]["box"] for k, _, _ in fields],
            wrong=[3, 5],
            facts=facts,
        )
    )

    # doc_02: which tagged box holds the total (option letter, bbox)
    size = (1024, 768)
    rng = rng_for("doc_02")
    fields = [
        ("subtotal", "Subtotal", "$1,180.00"),
        ("tax", "Tax", "$104.50"),
        ("total", "Total", "$1,284.50"),
        ("paid", "Paid", "$0.00"),
    ]
    rng.shuffle(fields)
    tags = ["A", "B", "C", "D"]
    img, out, _ = draw_document(size, fields, tags=tags)
    f = bank.image("images/doc_02.png", img)
    letter = tags[[k for k, _, _ in fields].index("total")]
    bank.add(
        make_instance(
            "read_document-003",
            T,
            f,
            size,
            "The boxes are tagged A to D in their top-right corner. Which box holds the invoice total? "
            "Give the letter and box it.",
            "option_letter",
            letter,
            "bbox",
            out["total"]["box"],
            wrong=[t for t in tags if t != letter],
            facts=[
                f"Box {t} is labelled '{lab}' and reads {val}."
                for t, (_, lab, val) in zip(tags, fields, strict=True)
            ],
        )
    )

    # doc_03: due date (string, bbox), noisy scan
    size = (640, 480)
    fields = [
        ("issued", "Issued", "2026-02-01"),
        ("due", "Due date", "2026-03-03"),
        ("reference", "Reference", "PO-7781"),
        ("terms", "Terms", "Net 30"),
    ]
    img, out, _ = draw_document(size, fields, noise=1.2, seed=3, title="STATEMENT")
    f = bank.image("images/doc_03.png", img)
    bank.add(
        make_instance(
            "read_document-004",
            T,
            f,
            size,
            "What is the due date printed on the document? Box it.",
            "string",
            "2026-03-03",
            "bbox",
            out["due"]["box"],
            wrong=["2026-02-01", "2026-03-30", "03/03/2026"],
            facts=[f"The {v['label']} field shows {v['value']}." for v in out.values()],
        )
    )

    # doc_04: line items (bbox_set_map), sum of amounts (number)
    size = (1280, 720)
    items = [
        ("Lens cleaning kit", 12.5),
        ("Calibration service", 240.0),
        ("Shipping", 7.25),
        ("Mount adapter", 64.0),
    ]
    img, out, cells = draw_document(
        size, [("invoice_no", "Invoice No.", "INV-3317"), ("date", "Date", "2026-05-02")], items=items
    )
    f = bank.image("images/doc_04.png", img)
    total = sum(a for _, a in items)
    bank.add(
        make_instance(
            "read_document-005",
            T,
            f,
            size,
            'Box the line-item descriptions and amounts (keys "description" and "amount"). '
            "What is the sum of the amounts?",
            "number",
            total,
            "bbox_set_map",
            {"description": [c["desc_box"] for c in cells], "amount": [c["amount_box"] for c in cells]},
            wrong=[total - 7.25, 323.5, 316.0],
            variants=[f"{total:.2f}"],
            facts=[f"The line '{c['desc']}' costs {c['amount']:.2f}." for c in cells],
            distractors=[out["date"]["box"]],
        )
    )


def build_bank() -> Bank:
    bank = Bank()
    build_shapes(bank)
    build_charts(bank)
    build_tables(bank)
    build_diagrams(bank)
    build_documents(bank)
    for inst in bank.instances:
        w, h = inst["size"]
        for leaf in iter_leaves(inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]):
            for x, y in leaf_points(LEAF[inst["annotation_gt"]["type"]], leaf):
                assert 0 <= x <= w and 0 <= y <= h, (inst["id"], leaf)
    return bank


# ----------------------------------------------------------------------------- simulated model

GEOM_BEHAVIOURS = (
    "jitter",
    "near_miss",
    "normalized_01",
    "scaled_1000",
    "xy_swapped",
    "swapped_keys",
    "reversed_sequence",
    "missing_item",
    "extra_item",
    "segment_flipped",
)
GOOD_WRAPPERS = (
    "bare",
    "prose",
    "think",
    "fenced_json",
    "fenced_plain",
    "pretty",
    "two_objects",
    "python_literal",
)
BAD_WRAPPERS = (
    "text_after",
    "fenced_then_text",
    "answer_tag",
    "comment",
    "not_mapping",
    "not_mapping_draft",
    "missing_keys",
    "extra_keys",
    "final_other_object",
    "no_object_prose",
    "atomic",
)
# what the format check says about each response shape (format 1 only for GOOD_WRAPPERS)
FORMAT_REASON = {
    "bare": "ok",
    "prose": "ok",
    "think": "ok",
    "fenced_json": "ok",
    "fenced_plain": "ok",
    "pretty": "ok",
    "two_objects": "ok",
    "python_literal": "ok_python_literal",
    "text_after": "text_after_object",
    "fenced_then_text": "text_after_object",
    "answer_tag": "text_after_object",
    "no_object_prose": "no_final_object",
    "atomic": "no_final_object",
    "comment": "not_json",
    "not_mapping": "not_a_mapping",
    "not_mapping_draft": "not_a_mapping",
    "missing_keys": "missing_keys",
    "extra_keys": "extra_keys",
    "final_other_object": "missing_keys",
}
# format-0 shapes from which the scorer still recovers both answer and annotation
RECOVERABLE_BAD = (
    "text_after",
    "fenced_then_text",
    "answer_tag",
    "not_mapping_draft",
    "extra_keys",
    "final_other_object",
)
ATOMIC_TYPES = ("integer", "number", "string", "option_letter", "boolean", "index_list")

GENERIC_SENTENCES = [
    "First, I look at the whole image to understand its layout.",
    "I will report coordinates in the pixel frame of the image as it was given to me.",
    "Let me scan the image again from left to right to make sure nothing is missed.",
    "The background is plain, so the objects stand out clearly.",
    "I need to be careful not to confuse neighbouring items that share a colour.",
    "Edges are slightly anti-aliased, so I estimate each boundary to the nearest pixel.",
    "Re-reading the question, it asks for exactly one final object at the end.",
    "There is no legend, so I rely on the colours and the printed labels directly.",
    "Counting a second time gives the same result, which is reassuring.",
    "The image is not rotated: x grows to the right and y grows downwards.",
    "Nothing in the corners looks relevant to the question.",
    "A thin grid in the background helps me estimate positions.",
    "I double-check each item by tracing its outline once more.",
    "The text is small, but it is still legible when I look closely.",
    "I should not include items that only partially match the description.",
    "Let me reconsider whether the item near the top edge should be counted.",
    "Comparing the left and right halves, the distribution is not symmetric.",
    "The labels are printed in a dark colour, which makes them easy to read.",
    "I will keep the order exactly as the question asks.",
    "Some items are close together, so I separate them by their outlines.",
    "To be safe, I verify the extreme values against the axis ticks.",
    "The spacing between items is roughly regular.",
    "I avoid guessing hidden items; only what is visible counts.",
    "It helps to think of the image as a grid of rows and columns.",
    "The title at the top tells me what the image is about.",
    "Checking against the question once more, I have everything I need.",
    "I'll note the approximate pixel positions as I go.",
    "The outline colour is a darker shade of the fill colour.",
    "Each element seems to be drawn without overlap.",
    "My estimate of the boundaries may be off by a pixel or two.",
]
OPENINGS = [
    "Let me work through this step by step.",
    "Okay, let me look at the image carefully.",
    "I'll start by describing what I see.",
    "Let's break the task down.",
    "First I need to find the relevant elements in the image.",
]
BEHAVIOUR_SENTENCES = {
    "normalized_01": "I will give the coordinates as fractions of the image width and height.",
    "scaled_1000": "Coordinates below are on the usual 0-1000 grid.",
    "missing_item": "I think I have found all of them now.",
    "extra_item": "There also seems to be one more matching item near the edge.",
}
TAILS = [
    "I am fairly confident in this answer.",
    "Let me know if you need more detail.",
    "(Coordinates are approximate.)",
    "Hope this helps!",
]


def policy(run, step):
    p = STEPS.index(step) / (len(STEPS) - 1)
    if run == "ckpt-A":
        # an early checkpoint that slowly learns the output format
        return {
            "p_bad_format": 0.42 - 0.30 * p,
            "p_wrong": 0.34 - 0.14 * p,
            "geom": {
                "jitter": 5.0,
                "near_miss": 2.0,
                "normalized_01": 0.8 - 0.5 * p,
                "scaled_1000": 0.3,
                "xy_swapped": 0.6,
                "swapped_keys": 1.5,
                "reversed_sequence": 3.0,
                "missing_item": 1.0,
                "extra_item": 0.8,
                "segment_flipped": 0.8,
            },
            "good": {
                "bare": 1.0,
                "prose": 3.0,
                "think": 0.5,
                "fenced_json": 2.0,
                "fenced_plain": 0.5,
                "pretty": 0.7,
                "two_objects": 0.4,
                "python_literal": 0.9 - 0.6 * p,
            },
            "bad": {
                "text_after": 1.5,
                "fenced_then_text": 1.0,
                "answer_tag": 1.5,
                "comment": 0.6,
                "not_mapping": 0.6,
                "not_mapping_draft": 0.5,
                "missing_keys": 1.0,
                "extra_keys": 1.0,
                "final_other_object": 0.5,
                "no_object_prose": 0.8,
                "atomic": 0.8,
            },
            "prose": {"none": 0.2, "short": 0.55, "long": 0.25},
        }
    # a later checkpoint with good format but the 0-1000 coordinate frame mistake
    return {
        "p_bad_format": 0.12,
        "p_wrong": 0.22 - 0.08 * p,
        "geom": {
            "jitter": 4.0,
            "near_miss": 2.5,
            "normalized_01": 0.2,
            "scaled_1000": 3.0 - 1.8 * p,
            "xy_swapped": 0.3,
            "swapped_keys": 0.8,
            "reversed_sequence": 1.5,
            "missing_item": 0.8,
            "extra_item": 0.6,
            "segment_flipped": 0.8,
        },
        "good": {
            "bare": 1.0,
            "prose": 1.0,
            "think": 3.0,
            "fenced_json": 1.0,
            "fenced_plain": 0.3,
            "pretty": 0.3,
            "two_objects": 0.4,
            "python_literal": 0.15,
        },
        "bad": {
            "text_after": 1.0,
            "fenced_then_text": 1.0,
            "answer_tag": 1.0,
            "comment": 0.3,
            "not_mapping": 0.3,
            "not_mapping_draft": 0.3,
            "missing_keys": 1.0,
            "extra_keys": 1.0,
            "final_other_object": 0.5,
            "no_object_prose": 0.3,
            "atomic": 0.5,
        },
        "prose": {"none": 0.1, "short": 0.55, "long": 0.35},
    }


def weighted(rng, weights: dict):
    keys = list(weights)
    return rng.choices(keys, weights=[max(0.0, weights[k]) for k in keys])[0]


def applicable_geoms(inst):
    t, v = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    struct = STRUCT[t]
    out = ["jitter", "near_miss", "normalized_01", "scaled_1000", "xy_swapped"]
    if struct in ("map", "set_map") and len(v) >= 2:
        out.append("swapped_keys")
    if struct == "sequence" and len(v) >= 2:
        out.append("reversed_sequence")
    if struct in ("set", "sequence", "map", "set_map") and len(iter_leaves(t, v)) >= 2:
        out.append("missing_item")
    if struct in ("set", "map", "set_map", "sequence"):
        out.append("extra_item")
    if LEAF[t] == "segment":
        out.append("segment_flipped")
    return out


def applicable_wrappers(inst, wrappers):
    mode = inst["trace_output_mode"]
    out = []
    for w in wrappers:
        if w == "missing_keys" and mode != "answer_and_annotation":
            continue
        if w == "atomic" and inst["answer_gt"]["type"] not in ATOMIC_TYPES:
            continue
        out.append(w)
    return out


def num(v):
    """Integral floats as ints so coordinates print like a model would write them."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def jitter_leaf(kind, leaf, rng, px=2):
    def j(x, y):
        return num(x + rng.randint(-px, px)), num(y + rng.randint(-px, px))

    out = map_xy(kind, leaf, j)
    if kind == "box" and (out[2] - out[0] < 2 or out[3] - out[1] < 2):
        return list(leaf)
    return out


def near_miss_leaf(kind, leaf, rng, hl):
    for _ in range(200):
        target = rng.uniform(0.58, 0.82)
        if kind == "box":
            x0, y0, x1, y1 = leaf
            bw, bh = x1 - x0, y1 - y0
            how = rng.choice(("x", "y", "grow", "shrink"))
            if how == "x":
                dx = rng.choice((-1, 1)) * bw * (1 - target) / (1 + target)
                cand = [x0 + dx, y0, x1 + dx, y1]
            elif how == "y":
                dy = rng.choice((-1, 1)) * bh * (1 - target) / (1 + target)
                cand = [x0, y0 + dy, x1, y1 + dy]
            else:
                k = 1 / math.sqrt(target) if how == "grow" else math.sqrt(target)
                cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                cand = [cx - bw * k / 2, cy - bh * k / 2, cx + bw * k / 2, cy + bh * k / 2]
            cand = [round(v) for v in cand]
        else:
            d = hl * math.sqrt(math.log2(1 / target))

            def move(x, y, d=d):
                a = rng.uniform(0, 2 * math.pi)
                return round(x + d * math.cos(a)), round(y + d * math.sin(a))

            cand = map_xy(kind, leaf, move)
        sim = leaf_sim(kind, cand, leaf, hl)
        if 0.55 <= sim <= 0.86 and (kind != "box" or (cand[2] > cand[0] and cand[3] > cand[1])):
            return cand
    raise RuntimeError("near miss not found")  # pragma: no cover


def simulate_annotation(inst, behaviour, rng):
    t, gt = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    kind, struct = LEAF[t], STRUCT[t]
    w, h = inst["size"]
    hl = half_life(inst["size"])
    distractors = inst["meta"]["distractors"] or [iter_leaves(t, gt)[0]]

    def jit(leaf):
        return jitter_leaf(kind, leaf, rng)

    if behaviour == "near_miss":
        return map_leaves(t, gt, lambda leaf: near_miss_leaf(kind, leaf, rng, hl))
    base = map_leaves(t, gt, jit)
    if behaviour == "jitter":
        return base
    if behaviour == "normalized_01":
        return map_leaves(
            t, base, lambda leaf: map_xy(kind, leaf, lambda x, y: (round(x / w, 3), round(y / h, 3)))
        )
    if behaviour == "scaled_1000":
        return map_leaves(
            t, base, lambda leaf: map_xy(kind, leaf, lambda x, y: (round(x / w * 1000), round(y / h * 1000)))
        )
    if behaviour == "xy_swapped":
        return map_leaves(t, base, lambda leaf: map_xy(kind, leaf, lambda x, y: (y, x)))
    if behaviour == "segment_flipped":
        return map_leaves(t, base, lambda leaf: [leaf[1], leaf[0]])
    if behaviour == "reversed_sequence":
        return base[::-1]
    if behaviour == "swapped_keys":
        keys = list(base)
        a, b = rng.sample(keys, 2)
        out = dict(base)
        out[a], out[b] = base[b], base[a]
        return out
    if behaviour == "missing_item":
        if struct in ("set", "sequence"):
            i = len(base) - 1 if struct == "sequence" else rng.randrange(len(base))
            return base[:i] + base[i + 1 :]
        if struct == "map":
            drop = rng.choice(list(base))
            return {k: v for k, v in base.items() if k != drop}
        keys = [k for k, v in base.items() if len(v) >= 2] or list(base)
        k = rng.choice(keys)
        if len(base[k]) == 1:
            return {kk: v for kk, v in base.items() if kk != k}
        i = rng.randrange(len(base[k]))
        return dict(base, **{k: base[k][:i] + base[k][i + 1 :]})
    if behaviour == "extra_item":
        extra = jit(rng.choice(distractors))
        if struct in ("set", "sequence"):
            out = list(base)
            out.insert(rng.randrange(len(out) + 1) if struct == "set" else len(out), extra)
            return out
        if struct == "map":
            return dict(base, other=extra)
        k = rng.choice(list(base))
        return dict(base, **{k: [*base[k], extra]})
    raise ValueError(behaviour)


def simulate_answer(inst, correct, rng):
    gt = inst["answer_gt"]["value"]
    if not correct:
        return rng.choice(inst["meta"]["wrong"])
    variants = inst["meta"]["variants"]
    if variants and rng.random() < 0.15:
        return rng.choice(variants)
    return gt


def answer_words(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k} {answer_words(v)}" for k, v in value.items())
    if isinstance(value, list):
        return (
            "; ".join(answer_words(v) for v in value)
            if value and isinstance(value[0], list)
            else ", ".join(str(v) for v in value)
        )
    return str(value)


def make_prose(inst, length, behaviour, answer, rng):
    if length == "none":
        return ""
    target = rng.randint(150, 420) if length == "short" else rng.randint(1000, 2000)
    pool = list(inst["meta"]["facts"]) + GENERIC_SENTENCES
    rng.shuffle(pool)
    sentences = [rng.choice(OPENINGS)]
    i = 0
    while sum(len(s) + 1 for s in sentences) < target:
        sentences.append(pool[i % len(pool)])
        i += 1
    if behaviour in BEHAVIOUR_SENTENCES:
        sentences.append(BEHAVIOUR_SENTENCES[behaviour])
    sentences.append(f"So the answer is {answer_words(answer)}.")
    paragraphs, cur = [], []
    for s in sentences:
        cur.append(s)
        if len(cur) >= rng.randint(3, 5):
            paragraphs.append(" ".join(cur))
            cur = []
    if cur:
        paragraphs.append(" ".join(cur))
    return "\n\n".join(paragraphs)


def json_obj(d, rng, style=None):
    style = style or rng.choice(("compact", "spaced", "spaced"))
    if style == "compact":
        return json.dumps(d, separators=(",", ":"), ensure_ascii=False)
    if style == "pretty":
        return json.dumps(d, indent=2, ensure_ascii=False)
    return json.dumps(d, ensure_ascii=False)


def atomic_text(value, rng):
    if isinstance(value, bool):
        return rng.choice(("true", "True") if value else ("false", "False"))
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def render(inst, wrapper, answer, annotation, prose, rng):
    """Return (response text, recovered mapping or None) for a wrapper.

    ``recovered`` is what the v0 scorer must find: the final object when it is a mapping with
    answer/annotation, otherwise the last such candidate; None when nothing is recoverable and the whole
    response is compared as the answer.
    """
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    final = {"answer": answer, "annotation": annotation} if aa else {"answer": answer}
    lead = prose + "\n\n" if prose else ""
    if wrapper == "bare":
        return lead + json_obj(final, rng), final
    if wrapper == "prose":
        return (prose or rng.choice(OPENINGS)) + "\n\n" + json_obj(final, rng), final
    if wrapper == "think":
        return "<think>\n" + (prose or rng.choice(OPENINGS)) + "\n</think>\n" + json_obj(final, rng), final
    if wrapper == "fenced_json":
        return lead + "```json\n" + json_obj(final, rng) + "\n```", final
    if wrapper == "fenced_plain":
        return lead + "```\n" + json_obj(final, rng) + "\n```\n", final
    if wrapper == "pretty":
        return lead + json_obj(final, rng, "pretty"), final
    if wrapper == "two_objects":
        draft = dict(final, answer=rng.choice(inst["meta"]["wrong"]))
        return (
            lead + "Draft: " + json_obj(draft, rng) + "\nWait, let me correct that.\n" + json_obj(final, rng),
            final,
        )
    if wrapper == "python_literal":
        return lead + repr(final), final
    if wrapper == "text_after":
        return lead + json_obj(final, rng) + "\n" + rng.choice(TAILS), final
    if wrapper == "fenced_then_text":
        return lead + "```json\n" + json_obj(final, rng) + "\n```\n" + rng.choice(TAILS), final
    if wrapper == "answer_tag":
        return lead + "<answer>" + json_obj(final, rng) + "</answer>", final
    if wrapper == "comment":
        body = json_obj(final, rng, rng.choice(("compact", "spaced")))
        return lead + body[:-1] + " // final answer\n}", None
    if wrapper == "not_mapping":
        items = [answer, annotation] if aa else [answer]
        return lead + "```json\n" + json.dumps(items, ensure_ascii=False) + "\n```", None
    if wrapper == "not_mapping_draft":
        items = [answer, annotation] if aa else [answer]
        return (
            lead
            + "My draft: "
            + json_obj(final, rng)
            + "\nSame thing as a list:\n```json\n"
            + json.dumps(items, ensure_ascii=False)
            + "\n```"
        ), final
    if wrapper == "missing_keys":
        return lead + json_obj({"answer": answer}, rng), {"answer": answer}
    if wrapper == "extra_keys":
        extra = dict(final)
        if not aa:
            extra["annotation"] = annotation
        extra["explanation"] = rng.choice(
            ("counted the visible items", "read from the image", "see reasoning above")
        )
        return lead + json_obj(extra, rng), extra
    if wrapper == "final_other_object":
        return lead + json_obj(final, rng) + "\n" + json.dumps(
            {"confidence": rng.choice((0.7, 0.8, 0.9))}
        ), final
    if wrapper == "no_object_prose":
        text = prose or f"{rng.choice(OPENINGS)} So the answer is {answer_words(answer)}."
        return text, None
    if wrapper == "atomic":
        return atomic_text(answer, rng), None
    raise ValueError(wrapper)


def expected_rewards(inst, wrapper, answer_correct, recovered, response):
    """Independent v0 re-implementation for the simulated shapes (used for logged rewards and checks)."""
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    fmt = 1.0 if wrapper in GOOD_WRAPPERS else 0.0
    # the answer is compared when a mapping with an answer is recovered, or (atomic) as the whole response;
    # otherwise the whole prose response is compared and never matches
    answer_seen = (recovered is not None and recovered.get("answer") is not None) or wrapper == "atomic"
    acc = 1.0 if answer_seen and answer_correct else 0.0
    ann = None
    # The scorer also scores an annotation an answer-mode response carries (a diagnostic: the task
    # reward ignores it), so the simulated trainer logs it the same way.
    if recovered is not None and recovered.get("annotation") is not None and inst.get("annotation_gt"):
        ann = annotation_score(
            inst["annotation_gt"]["type"],
            recovered["annotation"],
            inst["annotation_gt"]["value"],
            inst["size"],
        )
    task = acc * (0.5 + 0.5 * (ann or 0.0)) if aa else acc
    return {"overall": task, "accuracy": acc, "format": fmt, "annotation_reward": ann}


def simulate(inst, run, step, k, salt="", force=None, pol=None):
    """One simulated response (``pol``: a policy other than the run's). Returns (response, plan)."""
    rng = rng_for("sample", salt, run, step, inst["id"], k)
    pol = pol or policy(run, step)
    force = force or {}
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    geoms = applicable_geoms(inst)
    behaviour = force.get("behaviour") or weighted(rng, {g: pol["geom"][g] for g in geoms})
    if not aa:
        behaviour = "jitter"
    correct = force["correct"] if "correct" in force else rng.random() >= pol["p_wrong"]
    if "wrapper" in force:
        wrapper = force["wrapper"]
    elif rng.random() < pol["p_bad_format"]:
        bad = applicable_wrappers(inst, RECOVERABLE_BAD if force.get("recoverable") else BAD_WRAPPERS)
        wrapper = weighted(rng, {w: pol["bad"][w] for w in bad})
    else:
        wrapper = weighted(rng, pol["good"])
    prose_len = force.get("prose") or weighted(rng, pol["prose"])
    answer = simulate_answer(inst, correct, rng)
    annotation = simulate_annotation(inst, behaviour, rng)
    prose = make_prose(inst, prose_len, behaviour, answer, rng)
    response, recovered = render(inst, wrapper, answer, annotation, prose, rng)
    exp = expected_rewards(inst, wrapper, correct, recovered, response)
    plan = {
        "behaviour": behaviour if aa else "answer_mode",
        "wrapper": wrapper,
        "format_reason": FORMAT_REASON[wrapper],
        "answer_correct": correct,
        "prose": prose_len,
        "expected": exp,
        "recovered": recovered is not None,
    }
    return response, plan


# ----------------------------------------------------------------------------- ground-truth errors

AUDIT_RUN = "gt-audit"
AUDIT_STEP = 300
AUDIT_SAMPLES = 8
AUDIT_FILE = "gt_audit/rollouts_gt_audit.jsonl"
AUDIT_LABELS = "gt_audit/gt_audit.expected.json"
#: Every this-many-th instance gets a corrupted ground truth.
AUDIT_CORRUPT_EVERY = 3
#: A trained model: good format, few wrong answers, mostly precise geometry.
AUDIT_POLICY = {
    "p_bad_format": 0.08,
    "p_wrong": 0.12,
    "geom": {
        "jitter": 10.0,
        "near_miss": 1.5,
        "normalized_01": 0.1,
        "scaled_1000": 0.2,
        "xy_swapped": 0.1,
        "swapped_keys": 0.3,
        "reversed_sequence": 0.3,
        "missing_item": 0.6,
        "extra_item": 0.5,
        "segment_flipped": 0.5,
    },
    "good": {"bare": 1.0, "prose": 2.0, "think": 1.0, "fenced_json": 1.0},
    "bad": {w: 0.0 for w in BAD_WRAPPERS} | {"text_after": 1.0, "answer_tag": 1.0, "extra_keys": 1.0,
                                             "no_object_prose": 0.5, "atomic": 0.5},
    "prose": {"none": 0.3, "short": 0.6, "long": 0.1},
}


def shift_leaf(kind, leaf, size, rng, hl):
    """``leaf`` moved well clear of itself (a box by more than its size, a point by 3-5 half-lives), inside the image."""
    w, h = size
    for _ in range(100):
        angle = rng.uniform(0, 2 * math.pi)
        if kind == "box":
            bw, bh = leaf[2] - leaf[0], leaf[3] - leaf[1]
            reach = rng.uniform(1.3, 2.2)
            dx, dy = round(math.cos(angle) * bw * reach), round(math.sin(angle) * bh * reach)
        else:
            d = rng.uniform(3.0, 5.0) * hl
            dx, dy = round(math.cos(angle) * d), round(math.sin(angle) * d)
        moved = map_xy(kind, leaf, lambda x, y, dx=dx, dy=dy: (num(x + dx), num(y + dy)))
        if all(0 <= x <= w and 0 <= y <= h for x, y in leaf_points(kind, moved)):
            return moved
    return None  # too large to move clear of itself inside the image


def corrupt_ground_truth(inst, how, rng):
    """(a copy of ``inst`` whose ground truth is wrong in the way ``how`` says, ``how``).

    An instance whose items are all too large to shift gets a wrong answer instead.
    """
    out = json.loads(json.dumps(inst))
    t, value = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    kind, struct = LEAF[t], STRUCT[t]
    if how == "wrong_answer":
        out["answer_gt"]["value"] = rng.choice(inst["meta"]["wrong"])
    elif how == "swapped":
        if struct == "sequence":
            i, j = sorted(rng.sample(range(len(value)), 2))
            swapped = list(value)
            swapped[i], swapped[j] = value[j], value[i]
            out["annotation_gt"]["value"] = swapped
        else:  # map / set map: two keys exchange their geometry
            a, b = sorted(rng.sample(sorted(value), 2))
            out["annotation_gt"]["value"] = dict(value, **{a: value[b], b: value[a]})
    else:  # shifted: one item moved away from what it marks
        leaves = iter_leaves(t, value)
        first = rng.randrange(len(leaves))
        for target in [first, *(i for i in range(len(leaves)) if i != first)]:
            moved = shift_leaf(kind, leaves[target], inst["size"], rng, half_life(inst["size"]))
            if moved is not None:
                break
        else:
            return corrupt_ground_truth(inst, "wrong_answer", rng)
        counter = iter(range(len(leaves)))
        out["annotation_gt"]["value"] = map_leaves(t, value, lambda leaf: moved if next(counter) == target else leaf)
    return out, how


def corruption_for(inst, rng):
    """How to corrupt this instance: a wrong answer, swapped items (sequences, maps) or a shifted item."""
    if inst["trace_output_mode"] != "answer_and_annotation":
        return "wrong_answer"
    t, value = inst["annotation_gt"]["type"], inst["annotation_gt"]["value"]
    options = ["shifted", "wrong_answer"]
    if STRUCT[t] in ("sequence", "map", "set_map") and len(value) >= 2 and len({dumps(v) for v in (
            value if STRUCT[t] == "sequence" else value.values())}) >= 2:
        options.append("swapped")
    return rng.choice(options)


def gt_audit_rollouts(instances, *, salt="", samples=AUDIT_SAMPLES, corrupt_every=AUDIT_CORRUPT_EVERY,
                      replica=None):
    """Rollouts of a trained model on every instance, with every ``corrupt_every``-th ground truth corrupted.

    The simulated model answers the *true* instance; the rows carry the corrupted ground truth,
    so most rollouts agree with each other and disagree with it. ``corrupt_every`` 0 corrupts
    nothing (a clean run). ``replica`` suffixes instance ids (larger generated sets for the benchmark).
    Returns (rows, labels): one label per corrupted instance.
    """
    rows, labels = [], []
    for n, true_inst in enumerate(instances):
        rng = rng_for("gt-audit", salt, true_inst["id"])
        iid = true_inst["id"] if replica is None else f"{true_inst['id']}~{replica}"
        row_inst = true_inst
        if corrupt_every and n % corrupt_every == corrupt_every - 1:
            row_inst, how = corrupt_ground_truth(true_inst, corruption_for(true_inst, rng), rng)
            kind = "answer" if how == "wrong_answer" else "annotation"
            labels.append({
                "instance_id": iid,
                "corruption": how,
                "kind": kind,
                "true_value": true_inst[f"{kind}_gt"]["value"],
                "corrupted_value": row_inst[f"{kind}_gt"]["value"],
            })
        for k in range(samples):
            response, _ = simulate(true_inst, AUDIT_RUN, AUDIT_STEP, k, salt=f"gt-audit{salt}", pol=AUDIT_POLICY)
            row = {
                "id": f"{AUDIT_RUN}/{iid}/s{k}",
                "instance_id": iid,
                "task_id": true_inst["task_id"],
                "run": AUDIT_RUN,
                "step": AUDIT_STEP,
                "sample_index": k,
                "response": response,
            }
            row.update(gt_fields(row_inst, image_prefix="../"))
            if true_inst["trace_output_mode"] != "answer_and_annotation":
                row["trace_output_mode"] = true_inst["trace_output_mode"]
            rows.append(row)
    return rows, labels


# ----------------------------------------------------------------------------- rows and files


def gt_fields(inst, image_prefix="", include_size=True):
    row = {
        "image": image_prefix + inst["image"],
        "prompt": inst["prompt"],
        "answer_gt": inst["answer_gt"],
        "annotation_gt": inst["annotation_gt"],
        "reward_contract": inst["reward_contract"],
    }
    if include_size and inst["keep_size"]:
        row["image_size"] = inst["size"]
    return row


def instance_record(inst, image_prefix=""):
    rec = {
        "id": inst["id"],
        "instance_id": inst["id"],
        "task_id": inst["task_id"],
        "trace_output_mode": inst["trace_output_mode"],
    }
    rec.update(gt_fields(inst, image_prefix))
    return rec


class Cycler:
    """Deterministic round-robin over a list, skipping entries that do not apply."""

    def __init__(self, items):
        self.items, self.i = list(items), 0

    def next(self, allowed):
        for _ in range(len(self.items)):
            item = self.items[self.i % len(self.items)]
            self.i += 1
            if item in allowed:
                return item
        return None


def forced_plan(run, step, k, inst, cyc):
    """Fixed slots that guarantee every behaviour and format reason occurs (the rest is random).

    They sit at the early steps, so the runs still improve over training.
    """
    aa = inst["trace_output_mode"] == "answer_and_annotation"
    if k == 3 and run == "ckpt-A" and step in (100, 200):
        w = cyc["bad"].next(applicable_wrappers(inst, BAD_WRAPPERS))
        return {"wrapper": w, "correct": True, "behaviour": "jitter"}
    if k == 3 and (run, step) == ("ckpt-B", 100):
        return {"wrapper": cyc["good"].next(GOOD_WRAPPERS), "correct": True, "behaviour": "jitter"}
    if not aa:
        return None
    if k == 1 and (run, step) == ("ckpt-B", 300):
        return {"behaviour": "near_miss", "correct": True, "wrapper": "prose"}
    if k == 2 and step == 100:
        allowed = [g for g in applicable_geoms(inst) if g not in ("jitter", "near_miss")]
        return {"behaviour": cyc["geom"].next(allowed), "correct": True, "recoverable": True}
    if k == 0 and (run, step) == ("ckpt-A", 100):
        return {"behaviour": "jitter", "correct": False, "recoverable": True}
    return None


def canonical_rollouts(instances):
    cyc = {"bad": Cycler(BAD_WRAPPERS), "good": Cycler(GOOD_WRAPPERS), "geom": Cycler(GEOM_BEHAVIOURS[2:])}
    files, plans = {}, {}
    for run in RUNS:
        rows = []
        for step in STEPS:
            for inst in instances:
                for k in range(SAMPLES_PER_PROMPT):
                    force = forced_plan(run, step, k, inst, cyc)
                    response, plan = simulate(inst, run, step, k, force=force)
                    rid = f"{run}/step-{step}/{inst['id']}/s{k}"
                    row = {
                        "id": rid,
                        "instance_id": inst["id"],
                        "task_id": inst["task_id"],
                        "run": run,
                        "step": step,
                        "sample_index": k,
                        "response": response,
                    }
                    row.update(gt_fields(inst))
                    if inst["trace_output_mode"] != "answer_and_annotation":
                        row["trace_output_mode"] = inst["trace_output_mode"]
                    if run == "ckpt-A":  # this trainer logged its rewards next to each rollout
                        exp = plan["expected"]
                        row.update(score=exp["overall"], acc=exp["accuracy"], format=exp["format"])
                    plan["forced"] = force is not None
                    rows.append(row)
                    plans[rid] = plan
        files[run] = rows
    apply_drift(files["ckpt-A"], plans)
    return files, plans


def apply_drift(rows, plans):
    """A few logged rewards that deliberately disagree with the contract (stale trainer code)."""
    rng = rng_for("drift")
    picks = []

    def pick(kind, pred, n):
        cands = [r for r in rows if pred(r, plans[r["id"]]) and r["id"] not in {p[0]["id"] for p in picks}]
        for r in rng.sample(cands, n):
            picks.append((r, kind))

    # the trainer blended format into the reward (format_weight 0.1)
    pick("format_weight_0.1", lambda r, p: r["step"] == 200 and abs(r["score"] - r["format"]) > 0.2, 3)
    # an older lenient answer check ("contains") marked wrong answers correct
    pick("lenient_answer", lambda r, p: r["acc"] == 0.0 and p["recovered"] and r["score"] == 0.0, 2)
    # an older format check accepted <answer> tags
    pick("tag_format_accepted", lambda r, p: p["wrapper"] == "answer_tag" and p["answer_correct"], 2)
    for row, kind in picks:
        if kind == "format_weight_0.1":
            row["score"] = 0.9 * row["score"] + 0.1 * row["format"]
        elif kind == "lenient_answer":
            row["acc"] = 1.0
            ann = plans[row["id"]]["expected"]["annotation_reward"]
            row["score"] = 0.5 + 0.5 * (ann or 0.0) if "annotation_gt" in row and ann is not None else 1.0
        else:
            row["format"] = 1.0
        plans[row["id"]]["drift"] = kind


def chat_input(prompt):
    # what verl's dump shows for a Qwen2.5-VL prompt decoded with skip_special_tokens=True
    return f"system\nYou are a helpful assistant.\nuser\n{prompt}\nassistant\n"


def verl_rollouts(instances):
    files, plans = {}, {}
    for step in VERL_STEPS:
        rows = []
        for i, inst in enumerate(instances):
            response, plan = simulate(inst, "ckpt-A", step, 0, salt="verl")
            exp = plan["expected"]
            gts = {
                "answer_gt": inst["answer_gt"],
                "annotation_gt": inst["annotation_gt"],
                "reward_contract": inst["reward_contract"],
                "trace_output_mode": inst["trace_output_mode"],
            }
            rows.append(
                {
                    "input": chat_input(inst["prompt"]),
                    "output": response,
                    "gts": gts,
                    "score": exp["overall"],
                    "step": step,
                    "acc": exp["accuracy"],
                    "format": exp["format"],
                    "annotation_reward": exp["annotation_reward"] or 0.0,
                }
            )
            plans[f"verl/{step}.jsonl:{i + 1}"] = dict(plan, instance_id=inst["id"])
        files[f"verl/{step}.jsonl"] = rows
    return files, plans


def trl_rollouts(instances):
    rng = rng_for("trl-pick")
    picked = sorted(rng.sample(range(len(instances)), TRL_PROMPTS))
    train = [instances[i] for i in picked]
    tables, plans = {}, {}
    for step in TRL_STEPS:
        cols = {
            "step": [],
            "prompt": [],
            "completion": [],
            "reward_trace": [],
            "reward_format": [],
            "advantage": [],
        }
        policy_step = STEPS[TRL_STEPS.index(step)]
        for inst in train:
            group = []
            for k in range(SAMPLES_PER_PROMPT):
                response, plan = simulate(inst, "ckpt-B", policy_step, k, salt=f"trl-{step}")
                exp = plan["expected"]
                group.append((response, exp["overall"], exp["format"]))
                plans[f"trl/completions_{step}.parquet:{len(cols['step']) + k}"] = dict(
                    plan, instance_id=inst["id"]
                )
            totals = [r + f for _, r, f in group]
            mean = sum(totals) / len(totals)
            std = math.sqrt(sum((t - mean) ** 2 for t in totals) / (len(totals) - 1))
            for (response, r, f), t in zip(group, totals, strict=True):
                cols["step"].append(step)
                cols["prompt"].append(inst["prompt"])
                cols["completion"].append(response)
                cols["reward_trace"].append(r)
                cols["reward_format"].append(f)
                cols["advantage"].append((t - mean) / (std + 1e-4))
        tables[f"trl/completions_{step}.parquet"] = cols
    train_rows = [instance_record(inst, "../") for inst in train]
    return tables, train_rows, plans


def lmms_rollouts(instances):
    rows, plans = [], {}
    for i, inst in enumerate(instances):
        response, plan = simulate(inst, "ckpt-B", 300, 0, salt="lmms")
        exp = plan["expected"]
        doc = {
            "id": inst["id"],
            "task_id": inst["task_id"],
            "question": inst["prompt"],
            "image": "../" + inst["image"],
            "answer_gt": inst["answer_gt"],
            "annotation_gt": inst["annotation_gt"],
            "reward_contract": inst["reward_contract"],
            "trace_output_mode": inst["trace_output_mode"],
        }
        if inst["keep_size"]:
            doc["image_size"] = inst["size"]
        target = json.dumps(inst["answer_gt"]["value"], ensure_ascii=False)
        rows.append(
            {
                "doc_id": i,
                "doc": doc,
                "target": target,
                "arguments": [
                    [inst["prompt"], {"max_new_tokens": 2048, "temperature": 0.0, "do_sample": False}]
                ],
                "resps": [[response]],
                "filtered_resps": [response],
                "filter": "none",
                "metrics": ["trace_overall", "trace_accuracy", "trace_format"],
                "doc_hash": hashlib.sha256(dumps(doc).encode()).hexdigest(),
                "prompt_hash": hashlib.sha256(inst["prompt"].encode()).hexdigest(),
                "target_hash": hashlib.sha256(target.encode()).hexdigest(),
                "trace_overall": exp["overall"],
                "trace_accuracy": exp["accuracy"],
                "trace_format": exp["format"],
            }
        )
        plans[f"{LMMS_FILE}:{i + 1}"] = dict(plan, instance_id=inst["id"])
    return rows, plans


CSV_COLUMNS = (
    "id",
    "instance_id",
    "task_id",
    "run",
    "step",
    "sample_index",
    "image",
    "image_size",
    "prompt",
    "response",
    "answer_gt",
    "annotation_gt",
    "reward_contract",
    "trace_output_mode",
)


def csv_rollouts(instances):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    plans = {}
    for inst in instances:
        response, plan = simulate(inst, "ckpt-B", 200, 0, salt="csv")
        rid = f"csv/{inst['id']}/s0"
        writer.writerow(
            [
                rid,
                inst["id"],
                inst["task_id"],
                "ckpt-B",
                200,
                0,
                inst["image"],
                json.dumps(inst["size"]) if inst["keep_size"] else "",
                inst["prompt"],
                response,
                dumps(inst["answer_gt"]),
                dumps(inst["annotation_gt"]),
                dumps(inst["reward_contract"]),
                inst["trace_output_mode"],
            ]
        )
        plans[rid] = dict(plan, instance_id=inst["id"])
    return buf.getvalue(), plans


MISSING_IMAGE = "images/missing_scan_404.png"
CORRUPT_IMAGE = "images/corrupt_truncated.png"


def corrupt_png_bytes() -> bytes:
    img, _ = draw_shapes_image("corrupt", (320, 240), shape_plan("corrupt", 4))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    data = buf.getvalue()
    return data[: int(len(data) * 0.45)]


def error_rollouts(instances):
    """Mostly good rows plus deliberate problems; returns (text, expected-problems list, plans)."""
    good = [inst for inst in instances if inst["trace_output_mode"] == "answer_and_annotation"][:24]
    lines, expected, plans = [], [], {}

    def good_row(inst, n):
        response, plan = simulate(inst, "ckpt-A", 100, 0, salt="errors")
        row = {
            "id": f"err-{n:02d}",
            "instance_id": inst["id"],
            "task_id": inst["task_id"],
            "run": "ckpt-A",
            "step": 100,
            "sample_index": 0,
            "response": response,
        }
        row.update(gt_fields(inst))
        return row, plan

    bbox_inst = next(i for i in instances if i["annotation_gt"]["type"] == "bbox")
    count_inst = instances[0]

    def bad(kind, field, reason, text=None, row=None, valid=False):
        lines.append(text if text is not None else dumps(row))
        expected.append(
            {"line": len(lines), "kind": kind, "field": field, "reason": reason, "valid_input": valid}
        )

    for j, inst in enumerate(good):
        row, plan = good_row(inst, j)
        lines.append(dumps(row))
        plans[f"rollouts_with_errors.jsonl:{len(lines)}"] = dict(plan, instance_id=inst["id"])
        if j == 1:
            r, _ = good_row(good[5], 90)
            bad(
                "malformed_json",
                None,
                "line is cut off part-way through (truncated write)",
                text=dumps(r)[: len(dumps(r)) * 3 // 5],
            )
        elif j == 4:
            r, _ = good_row(good[6], 91)
            del r["response"]
            bad("missing_field", "response", "row has no response", row=r)
        elif j == 7:
            r, _ = good_row(count_inst, 92)
            r["answer_gt"] = count_inst["answer_gt"]["value"]
            bad("bad_field", "answer_gt", "answer_gt is a number, not an object with type and value", row=r)
        elif j == 10:
            r, _ = good_row(count_inst, 93)
            r["annotation_gt"] = {"type": "polygon", "value": [[120, 80], [260, 90], [200, 210]]}
            r["reward_contract"] = dict(
                r["reward_contract"], annotation={"id": "polygon_soft_iou_v0", "type": "polygon"}
            )
            r["response"] = '{"answer": 3, "annotation": [[118, 82], [258, 91], [203, 207]]}'
            bad(
                "unknown_annotation_type",
                "annotation_gt",
                "annotation type 'polygon' is not one of the 12 v0 types",
                row=r,
            )
        elif j == 13:
            r, plan = good_row(good[8], 94)
            r["reward_contract"] = dumps(r["reward_contract"])
            bad(
                "json_string_field",
                "reward_contract",
                "reward_contract arrives as a JSON string: decode it, then score",
                row=r,
                valid=True,
            )
            plans[f"rollouts_with_errors.jsonl:{len(lines)}"] = dict(plan, instance_id=good[8]["id"])
        elif j == 16:
            r, _ = good_row(bbox_inst, 95)
            r["image"] = MISSING_IMAGE
            r.pop("image_size", None)
            bad("missing_image", "image", f"image file {MISSING_IMAGE} does not exist", row=r)
        elif j == 19:
            r, _ = good_row(bbox_inst, 96)
            r["image"] = CORRUPT_IMAGE
            r.pop("image_size", None)
            bad("corrupt_image", "image", f"image file {CORRUPT_IMAGE} is a truncated PNG", row=r)
        elif j == 21:
            bad(
                "malformed_json",
                None,
                "trailing comma is not JSON",
                text='{"id": "err-97", "response": "{\\"answer\\": 3}", "answer_gt": {"type": "integer", "value": 3},}',
            )
        elif j == 22:
            bad("malformed_json", None, "not JSON at all (merge-conflict marker)", text="<<<<<<< HEAD")
    return "".join(line + "\n" for line in lines), expected, plans


# ----------------------------------------------------------------------------- GSM8K-style rows for the simple scorers

NAMES = [
    "Natalia",
    "Weng",
    "Betty",
    "Julie",
    "James",
    "Albert",
    "Ken",
    "Alexis",
    "Tina",
    "Mark",
    "Carla",
    "Joy",
]


def gsm8k_problem(idx):
    rng = rng_for("gsm8k", idx)
    name = rng.choice(NAMES)
    kind = idx % 10
    if kind == 0:
        a, p = rng.randint(12, 60), rng.randint(2, 6)
        q = (
            f"{name} sells {a} cupcakes on Monday and twice as many on Tuesday. Each cupcake costs ${p}. "
            f"How much money does {name} make in total?"
        )
        steps = [
            (f"On Tuesday {name} sells {a}*2", f"{a}*2", a * 2),
            (f"In total {name} sells {a}+{a * 2}", f"{a}+{a * 2}", a * 3),
            (f"{name} makes {a * 3}*{p}", f"{a * 3}*{p}", a * 3 * p),
        ]
    elif kind == 1:
        c, s, f = rng.randint(8, 30), rng.randint(20, 35), rng.randint(5, 40)
        q = f"A school has {c} classrooms with {s} students each. If {f} students are absent, how many students are present?"
        steps = [
            (f"The school has {c}*{s}", f"{c}*{s}", c * s),
            (f"Present students are {c * s}-{f}", f"{c * s}-{f}", c * s - f),
        ]
    elif kind == 2:
        p, d, q2, e = rng.randint(10, 40), rng.randint(3, 9), rng.randint(20, 60), rng.randint(2, 6)
        q = (
            f"{name} reads {p} pages a day for {d} days and then {q2} pages a day for {e} days. "
            f"How many pages does {name} read in total?"
        )
        steps = [
            (f"First {name} reads {p}*{d}", f"{p}*{d}", p * d),
            (f"Then {name} reads {q2}*{e}", f"{q2}*{e}", q2 * e),
            (f"Altogether {p * d}+{q2 * e}", f"{p * d}+{q2 * e}", p * d + q2 * e),
        ]
    elif kind == 3:
        a, h, d = rng.randint(40, 150), rng.randint(8, 16), rng.randint(5, 12)
        q = f"A factory produces {a} widgets per hour and runs {h} hours a day. How many widgets does it make in {d} days?"
        steps = [
            (f"Each day it makes {a}*{h}", f"{a}*{h}", a * h),
            (f"In {d} days it makes {a * h}*{d}", f"{a * h}*{d}", a * h * d),
        ]
    elif kind == 4:
        n, b = rng.randint(3, 9), rng.randint(7, 25)
        m = n * b + rng.randint(15, 400)
        q = f"{name} has ${m}. She buys {n} books at ${b} each. How much money does she have left?"
        steps = [
            (f"The books cost {n}*{b}", f"{n}*{b}", n * b),
            (f"She has {m}-{n * b}", f"{m}-{n * b}", m - n * b),
        ]
    elif kind == 5:
        v, t = rng.randint(45, 90), rng.randint(3, 14)
        q = f"A train travels at {v} miles per hour for {t} hours. How many miles does it travel?"
        steps = [(f"The train travels {v}*{t}", f"{v}*{t}", v * t)]
    elif kind == 6:
        r, c, k = rng.randint(10, 40), rng.randint(12, 30), rng.randint(3, 25)
        q = f"There are {r} rows of {c} chairs in a hall. {k} chairs are broken. How many chairs can be used?"
        steps = [
            (f"There are {r}*{c}", f"{r}*{c}", r * c),
            (f"Usable chairs are {r * c}-{k}", f"{r * c}-{k}", r * c - k),
        ]
    elif kind == 7:
        w, n = rng.randint(35, 120), rng.randint(20, 52)
        q = f"{name} saves ${w} every week. How much has {name} saved after {n} weeks?"
        steps = [(f"{name} saves {w}*{n}", f"{w}*{n}", w * n)]
    elif kind == 8:
        a, b = rng.randint(5, 40), rng.randint(3, 25)
        q = f"A farmer has {a} chickens and {b} cows. How many legs do the animals have in total?"
        steps = [
            (f"The chickens have {a}*2", f"{a}*2", a * 2),
            (f"The cows have {b}*4", f"{b}*4", b * 4),
            (f"In total {a * 2}+{b * 4}", f"{a * 2}+{b * 4}", a * 2 + b * 4),
        ]
    else:
        s, n, e = rng.choice((8, 10, 12)) * 3, rng.randint(3, 6), rng.randint(2, 4)
        q = f"Three pizzas are each cut into {s // 3} slices. {n} friends each eat {e} slices. How many slices are left?"
        steps = [
            (f"There are 3*{s // 3}", f"3*{s // 3}", s),
            (f"The friends eat {n}*{e}", f"{n}*{e}", n * e),
            (f"Left over {s}-{n * e}", f"{s}-{n * e}", s - n * e),
        ]
    answer = steps[-1][2]
    gold = "\n".join(f"{text} = <<{expr}={val}>>{val}." for text, expr, val in steps) + f"\n#### {answer}"
    return q, steps, answer, gold


GSM_STYLES_RIGHT = (
    "sentence_period",
    "hashes",
    "dollar_commas",
    "final_answer_commas",
    "boxed",
    "decimal_zeros",
)
GSM_STYLES_WRONG = ("arithmetic_slip", "trailing_number_trap", "partial_result")


def gsm8k_rows():
    rows, plans = [], {}
    for run in RUNS:
        for step in (100, 200):
            for idx in range(25):
                q, steps, ans, gold = gsm8k_problem(idx)
                rng = rng_for("gsm8k-row", run, step, idx)
                p_right = {
                    ("ckpt-A", 100): 0.55,
                    ("ckpt-A", 200): 0.7,
                    ("ckpt-B", 100): 0.75,
                    ("ckpt-B", 200): 0.85,
                }
                right = rng.random() < p_right[(run, step)]
                style = rng.choice(GSM_STYLES_RIGHT if right else GSM_STYLES_WRONG)
                work = "\n".join(f"{t} = {v}." for t, _, v in steps[:-1])
                last_t, _, last_v = steps[-1]
                reported = ans
                if style == "arithmetic_slip":
                    reported = ans + rng.choice((-10, -2, -1, 1, 3, 12))
                elif style == "partial_result":
                    reported = steps[-2][2] if len(steps) > 1 else ans * 2
                shown = f"{last_t} = {reported}." if style != "partial_result" else ""
                body = (work + "\n" + shown).strip()
                money = "$" if "$" in q else ""
                # models often group thousands and add the currency sign in sentence answers
                said = (
                    f"{money if rng.random() < 0.5 else ''}{reported:,}"
                    if abs(reported) >= 1000
                    else str(reported)
                )
                tail = {
                    "sentence_period": f"The answer is {said}.",
                    "hashes": f"#### {reported}",
                    "dollar_commas": f"So the total is {money}{reported:,}.",
                    "final_answer_commas": f"Final answer: {reported:,}",
                    "boxed": f"\\boxed{{{reported}}}",
                    "decimal_zeros": f"That comes to {reported:,}.00{' dollars' if money else ''}.",
                    "arithmetic_slip": f"The answer is {said}.",
                    "trailing_number_trap": f"The answer is {said} (I checked it in 2 ways).",
                    "partial_result": f"So the answer is {said}.",
                }[style]
                output = f"{body}\n{tail}" if body else tail
                rid = f"gsm8k/{run}/step-{step}/{idx:03d}"
                rows.append(
                    {
                        "id": rid,
                        "task_id": f"gsm8k-train-{idx:04d}",
                        "run": run,
                        "step": step,
                        "prompt": q,
                        "output": output,
                        "gold": gold,
                    }
                )
                plans[rid] = {
                    "style": style,
                    "model_correct": reported == ans,
                    "last_number_correct": reported == ans and style != "trailing_number_trap",
                    "answer": ans,
                }
    return rows, plans


# ----------------------------------------------------------------------------- entry point


def write_parquet(path: Path, cols: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("step", pa.int64()),
            ("prompt", pa.string()),
            ("completion", pa.string()),
            ("reward_trace", pa.float64()),
            ("reward_format", pa.float64()),
            ("advantage", pa.float64()),
        ]
    )
    table = pa.Table.from_pydict(cols, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="snappy", use_dictionary=False, write_statistics=False)


def generate(out_dir: Path | str = HERE) -> dict:
    """Write every sample file under out_dir; return {"files": [...], "plans": {...}, ...} for the tests."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def record(rel):
        written.append(rel)
        return out / rel

    bank = build_bank()
    for rel, (img, _size) in bank.images.items():
        save_image(img, record(rel))
    path = record(CORRUPT_IMAGE)
    path.write_bytes(corrupt_png_bytes())
    instances = bank.instances

    write_jsonl(record("instances.jsonl"), [instance_record(i) for i in instances])
    plans: dict[str, dict] = {}
    canon, p = canonical_rollouts(instances)
    plans.update(p)
    for run, rows in canon.items():
        write_jsonl(record(f"rollouts_{run}.jsonl"), rows)
    text, expected_errors, p = error_rollouts(instances)
    plans.update(p)
    write_text(record("rollouts_with_errors.jsonl"), text)
    write_text(
        record("rollouts_with_errors.expected.json"),
        json.dumps(expected_errors, indent=2, sort_keys=True) + "\n",
    )
    verl, p = verl_rollouts(instances)
    plans.update(p)
    for rel, rows in verl.items():
        write_jsonl(record(rel), rows)
    tables, train_rows, p = trl_rollouts(instances)
    plans.update(p)
    for rel, cols in tables.items():
        write_parquet(record(rel), cols)
    write_jsonl(record("trl/train_instances.jsonl"), train_rows)
    rows, p = lmms_rollouts(instances)
    plans.update(p)
    write_jsonl(record(LMMS_FILE), rows)
    text, p = csv_rollouts(instances)
    plans.update(p)
    write_text(record("rollouts_small.csv"), text)
    rows, gsm_plans = gsm8k_rows()
    write_jsonl(record("gsm8k_rollouts.jsonl"), rows)
    rows, labels = gt_audit_rollouts(instances)
    write_jsonl(record(AUDIT_FILE), rows)
    write_text(record(AUDIT_LABELS), json.dumps(labels, indent=2, sort_keys=True) + "\n")
    return {
        "files": sorted(written),
        "plans": plans,
        "gsm8k_plans": gsm_plans,
        "expected_errors": expected_errors,
        "instances": instances,
        "gt_audit_labels": labels,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE), help="output directory (default: the sample_data folder)")
    args = parser.parse_args(argv)
    result = generate(args.out)
    total = sum((Path(args.out) / f).stat().st_size for f in result["files"])
    print(f"wrote {len(result['files'])} files, {total / 1e6:.2f} MB, into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
