"""How fast the Inspector's overlay renders: a 1024x768 image with 50 shapes.

Run from the project root: python bench/bench_overlay.py [--repeats N]

Target: building the layer model and drawing it with Pillow (all layers, labels
included) takes under 100 ms (median). Also reported: PNG export, the plotly
figure dict, and the figure validation ``st.plotly_chart`` performs, each as
the median over the repeats, for three scenes of 50 shapes (25 predicted + 25
ground truth): boxes (dashed outlines, crosses, IoU labels), points (half-life
rings, sequence numbers) and a box set map (key labels, extra/missing keys).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from dashboard import overlay  # noqa: E402
from dashboard.overlay import pil as overlay_pil  # noqa: E402
from scoring import explain_trace_response  # noqa: E402
from scoring.verifier import RESOLVER_IDS  # noqa: E402

COMMAND = "python bench/bench_overlay.py"
SEED = 20261130
WIDTH, HEIGHT = 1024, 768
PER_SIDE = 25
REPEATS = 30
TARGET_MS = 100.0


def _box(rng: random.Random) -> list[int]:
    w, h = rng.randint(40, 260), rng.randint(40, 200)
    x, y = rng.randint(0, WIDTH - w), rng.randint(0, HEIGHT - h)
    return [x, y, x + w, y + h]


def _jitter_box(rng: random.Random, box: list[int]) -> list[int]:
    d = [rng.randint(-25, 25) for _ in range(4)]
    x0, y0, x1, y1 = (v + dv for v, dv in zip(box, d, strict=True))
    return [min(x0, x1 - 5), min(y0, y1 - 5), max(x1, x0 + 5), max(y1, y0 + 5)]


def scenes(rng: random.Random) -> dict[str, dict]:
    """Three 50-shape scenes as ``explain_trace_response`` keyword arguments."""
    gt_boxes = [_box(rng) for _ in range(PER_SIDE)]
    pred_boxes = [_jitter_box(rng, b) for b in gt_boxes[:20]] + [_box(rng) for _ in range(PER_SIDE - 20)]
    gt_points = [[rng.randint(0, WIDTH), rng.randint(0, HEIGHT)] for _ in range(PER_SIDE)]
    pred_points = [[x + rng.randint(-40, 40), y + rng.randint(-40, 40)] for x, y in gt_points]
    keys = [f"object_{i}" for i in range(PER_SIDE)]
    gt_map = {k: [b] for k, b in zip(keys[:22], gt_boxes[:22], strict=True)}
    gt_map["missing_one"] = [gt_boxes[22]]
    pred_map = {k: [_jitter_box(rng, b)] for k, b in zip(keys[:22], gt_boxes[:22], strict=True)}
    pred_map["extra_one"] = [_box(rng)]

    def kwargs(kind: str, pred, gt) -> dict:
        return {
            "response": "Thinking about the picture...\n" + json.dumps({"answer": 1, "annotation": pred}),
            "answer_gt": {"type": "integer", "value": 1},
            "annotation_gt": {"type": kind, "value": gt},
            "reward_contract": {"answer": {"id": "answer_exact_match_v0"}, "annotation": {"id": RESOLVER_IDS[kind]}},
            "image_size": [WIDTH, HEIGHT],
        }

    return {
        "bbox_set (25 + 25 boxes)": kwargs("bbox_set", pred_boxes, gt_boxes),
        "point_sequence (25 + 25 points)": kwargs("point_sequence", pred_points, gt_points),
        "bbox_set_map (23 + 23 boxes)": kwargs("bbox_set_map", pred_map, gt_map),
    }


def photo_like() -> Image.Image:
    """A 1024x768 picture like the sample data's: a gradient, filled shapes, mild noise."""
    gen = np.random.default_rng(SEED)
    y = np.linspace(0.0, 1.0, HEIGHT)[:, None, None]
    x = np.linspace(0.0, 1.0, WIDTH)[None, :, None]
    base = 200 + 40 * y * np.array([1.0, 0.6, 0.2]) - 30 * x * np.array([0.2, 0.5, 1.0])
    pixels = base + gen.normal(0.0, 4.0, size=(HEIGHT, WIDTH, 3))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    from PIL import ImageDraw

    draw = ImageDraw.Draw(image)
    shape_rng = random.Random(SEED + 1)
    for _ in range(30):
        box = _box(shape_rng)
        colour = tuple(shape_rng.randint(30, 230) for _ in range(3))
        (draw.ellipse if shape_rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    return image


def median_ms(call, repeats: int) -> float:
    call()  # warm-up (fonts, caches)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000.0 * statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    rng = random.Random(SEED)
    image = photo_like()
    noise = Image.fromarray(
        np.random.default_rng(SEED).integers(0, 255, size=(HEIGHT, WIDTH, 3), dtype=np.uint8), "RGB"
    )

    import plotly.graph_objects as go

    print(f"command: {COMMAND} --repeats {args.repeats}")
    print(f"photo-like image {WIDTH}x{HEIGHT}, medians over {args.repeats} repeats, target: model + Pillow render < {TARGET_MS:g} ms")
    print(
        f"{'scene':34} {'shapes':>6} {'model+render':>13} {'(cold)':>9} {'png export':>11} {'plotly dict':>12} "
        f"{'go.Figure':>10}"
    )
    worst = 0.0
    for name, kwargs in scenes(rng).items():
        evaluation = explain_trace_response(**kwargs)
        model = overlay.build_overlay(evaluation, image.size)
        shapes = len(model.marks)
        render = median_ms(lambda e=evaluation: overlay.render_pil(overlay.build_overlay(e, image.size), image), args.repeats)

        def cold(e=evaluation):
            overlay_pil._text_box.cache_clear()  # label sizes measured afresh, as for a row never seen
            overlay.render_pil(overlay.build_overlay(e, image.size), image)

        render_cold = median_ms(cold, args.repeats)
        picture = overlay.render_pil(model, image)
        export = median_ms(lambda p=picture: overlay.png_bytes(p), args.repeats)
        uri = overlay.image_data_uri(image)
        figure = median_ms(lambda m=model, u=uri: overlay.plotly_figure(m, image_uri=u), args.repeats)
        validate = median_ms(lambda m=model, u=uri: go.Figure(overlay.plotly_figure(m, image_uri=u)), args.repeats)
        worst = max(worst, render, render_cold)
        print(
            f"{name:34} {shapes:6d} {render:10.1f} ms {render_cold:6.1f} ms {export:8.1f} ms {figure:9.1f} ms "
            f"{validate:7.1f} ms"
        )
    encode = median_ms(lambda: overlay.image_data_uri(image), args.repeats)
    print(f"image -> data URI for the plotly figure (once per row): {encode:.1f} ms")
    worst_export = median_ms(lambda: overlay.png_bytes(overlay.render_pil(model, noise)), max(5, args.repeats // 3))
    print(f"worst case, pure-noise image: render + PNG export {worst_export:.1f} ms (export is deferred to the click)")
    verdict = "PASS" if worst < TARGET_MS else "FAIL"
    print(f"{verdict}: slowest model + render median {worst:.1f} ms, cold or warm (target < {TARGET_MS:g} ms)")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
