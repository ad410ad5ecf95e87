"""The synthetic images (shapes, bar and line charts, tables, arrow diagrams, documents).

Each drawing function returns the exact geometry it drew, so the ground truth is the drawn geometry.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .common import rng_for
from .geometry import point_segment_distance

COLOURS = {
    "red": (214, 48, 49),
    "blue": (41, 98, 235),
    "green": (39, 160, 90),
    "yellow": (236, 190, 20),
    "purple": (142, 68, 173),
    "orange": (230, 126, 34),
}

_FONTS: dict[int, ImageFont.ImageFont] = {}


def font(size: int):
    if size not in _FONTS:
        _FONTS[size] = ImageFont.load_default(size=size)
    return _FONTS[size]


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
        else:  # pragma: no cover - the instances_* layouts always fit
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
