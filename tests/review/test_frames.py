"""Coordinate-frame diagnosis: every frame is recognised, what-ifs use the scorer's own matching and never
change the score, rows without an image size are not guessed at, and the batch table agrees with the
one-row diagnosis on the sample data (whose generator says which rows are normalized, 0-1000 or swapped).

Cost measurement (not a test): ``python tests/review/test_frames.py --rows 200000``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scoring.review import frame_tables  # noqa: E402
from scoring.review import frames as fr  # noqa: E402
from scoring.runs import score_files, score_records  # noqa: E402
from scoring.verifier import (  # noqa: E402
    RESOLVER_IDS,  # noqa: E402
    Box,
    Point,
    Segment,
    evaluate,  # noqa: E402
    match_annotations,  # noqa: E402
)

SAMPLE = ROOT / "sample_data"
CANONICAL = [SAMPLE / "rollouts_ckpt-A.jsonl", SAMPLE / "rollouts_ckpt-B.jsonl"]


def contract(kind: str) -> dict:
    return {
        "reward_contract_version": "v0",
        "answer": {"id": "answer_exact_match_v0", "type": "integer"},
        "annotation": {"id": RESOLVER_IDS[kind], "type": kind},
    }


def run(kind: str, pred, gt, size=(640, 480), *, answer=3, **kwargs):
    """Score one response holding ``pred`` against ``gt`` (answer right unless told)."""
    return evaluate(
        response="Looking at the image.\n" + json.dumps({"answer": answer, "annotation": pred}),
        answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": kind, "value": gt},
        reward_contract=contract(kind),
        image_size=list(size) if size is not None else None,
        **kwargs,
    )


def mapped(value, fn):
    """Apply ``fn(x, y) -> (x, y)`` to every coordinate pair of a nested annotation value."""
    if isinstance(value, dict):
        return {k: mapped(v, fn) for k, v in value.items()}
    if isinstance(value, list) and len(value) == 4 and all(isinstance(v, (int, float)) for v in value):
        (a, b), (c, d) = fn(value[0], value[1]), fn(value[2], value[3])
        return [a, b, c, d]
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return list(fn(value[0], value[1]))
    return [mapped(v, fn) for v in value]


BOXES = [[60, 50, 180, 140], [300, 200, 420, 330], [480, 60, 600, 150]]
POINTS = [[100, 90], [350, 260], [560, 120]]
SEGMENTS = [[[40, 60], [220, 90]], [[300, 300], [500, 200]]]
CASES = {
    "bbox_set": BOXES,
    "point_set": POINTS,
    "segment_set": SEGMENTS,
    "bbox": BOXES[1],
    "point": POINTS[1],
    "bbox_map": {"cat": BOXES[0], "dog": BOXES[2]},
    "point_sequence": POINTS,
}


# --------------------------------------------------------------------------- one row, every frame


@pytest.mark.parametrize("kind", sorted(CASES))
def test_pixel_predictions_are_pixel(kind):
    gt = CASES[kind]
    pred = mapped(gt, lambda x, y: (x + 1, y - 2))
    diagnosis = fr.diagnose_frame(run(kind, pred, gt))
    assert diagnosis.checked and diagnosis.frame == fr.FRAME_PIXEL and not diagnosis.flagged
    assert diagnosis.pixel_score > 0.8


@pytest.mark.parametrize("kind", sorted(CASES))
def test_normalized_predictions(kind):
    gt = CASES[kind]
    pred = mapped(gt, lambda x, y: (round(x / 640, 3), round(y / 480, 3)))
    evaluation = run(kind, pred, gt)
    diagnosis = fr.diagnose_frame(evaluation)
    assert diagnosis.frame == fr.FRAME_NORMALIZED and diagnosis.confidence == fr.CONFIDENCE_HIGH
    assert diagnosis.pixel_score < 0.05
    assert diagnosis.what_if_score > 0.95
    assert diagnosis.best.scale_x == 640 and diagnosis.best.scale_y == 480
    assert "every coordinate is in [0, 1]" in diagnosis.evidence


@pytest.mark.parametrize("kind", sorted(CASES))
def test_scaled_1000_predictions_beyond_the_image(kind):
    gt = CASES[kind]
    pred = mapped(gt, lambda x, y: (round(x / 640 * 1000), round(y / 480 * 1000)))
    diagnosis = fr.diagnose_frame(run(kind, pred, gt))
    assert diagnosis.frame == fr.FRAME_SCALED_1000
    assert diagnosis.what_if_score > 0.95 and diagnosis.best.structural
    assert diagnosis.confidence == fr.CONFIDENCE_HIGH
    assert diagnosis.shapes_outside > 0


def test_scaled_1000_inside_a_large_image_is_found_through_the_ground_truth():
    size = (1920, 1080)
    gt = [[200, 150, 600, 500], [1200, 300, 1700, 900]]
    pred = mapped(gt, lambda x, y: (round(x / 1920 * 1000), round(y / 1080 * 1000)))
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt, size))
    assert diagnosis.shapes_outside == 0
    assert diagnosis.frame == fr.FRAME_SCALED_1000 and diagnosis.confidence == fr.CONFIDENCE_MEDIUM
    assert diagnosis.what_if_score > 0.95


@pytest.mark.parametrize("kind", ["bbox_set", "point_set", "segment_set", "bbox_map"])
def test_swapped_predictions(kind):
    gt = CASES[kind]
    pred = mapped(gt, lambda x, y: (y, x))
    diagnosis = fr.diagnose_frame(run(kind, pred, gt))
    assert diagnosis.frame == fr.FRAME_SWAPPED
    assert diagnosis.best.swap and diagnosis.what_if_score > 0.95


@pytest.mark.parametrize(
    ("name", "size", "frame_size"),
    [
        ("resized_long_1024", (640, 480), (1024, 768)),
        ("resized_long_448", (1280, 720), (448, 252)),
        ("resized_square_448", (640, 480), (448, 448)),
        ("resized_qwen_1003520", (1920, 1080), (1316, 728)),
    ],
)
def test_resized_model_frames(name, size, frame_size):
    width, height = size
    gt = [[0.1 * width, 0.2 * height, 0.3 * width, 0.5 * height], [0.6 * width, 0.1 * height, 0.9 * width, 0.4 * height]]
    gt = [[round(v) for v in box] for box in gt]
    fx, fy = frame_size[0] / width, frame_size[1] / height
    pred = mapped(gt, lambda x, y: (round(x * fx), round(y * fy)))
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt, size))
    assert diagnosis.frame == fr.FRAME_RESIZED
    assert diagnosis.best.name == name, diagnosis.hypothesis_rows()
    assert diagnosis.what_if_score > 0.9


def test_a_uniform_scale_off_every_known_frame_is_fitted_with_low_confidence():
    gt = [[100, 100, 200, 180], [300, 250, 420, 400], [500, 60, 600, 160]]
    pred = mapped(gt, lambda x, y: (round(x * 0.77), round(y * 0.77)))
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt))
    assert diagnosis.frame == fr.FRAME_RESIZED and diagnosis.best.name == "resized_fitted"
    assert diagnosis.confidence == fr.CONFIDENCE_LOW
    assert diagnosis.what_if_score > 0.9


def test_outside_the_image_when_no_rescaling_explains_it():
    gt = BOXES
    pred = [[2000, 1500, 2300, 1800], [2500, 100, 2600, 300], [3000, 900, 3100, 1000]]
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt))
    assert diagnosis.frame == fr.FRAME_OUTSIDE and diagnosis.shapes_outside == 3
    assert diagnosis.best is None and diagnosis.what_if_score is None
    assert "outside the 640×480 image" in diagnosis.message


def test_a_wrong_prediction_inside_the_image_is_not_flagged():
    gt = BOXES
    pred = [[10, 400, 40, 470], [600, 10, 630, 40], [200, 420, 260, 470]]
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt))
    assert diagnosis.frame == fr.FRAME_PIXEL and diagnosis.pixel_score == 0.0


# --------------------------------------------------------------------------- what-if semantics


def test_what_ifs_use_the_scorers_matching_and_never_change_the_score():
    gt = CASES["point_set"]
    pred = mapped(gt, lambda x, y: (round(x / 640, 3), round(y / 480, 3)))
    evaluation = run("point_set", pred, gt)
    before = evaluation.as_flat_dict()
    diagnosis = fr.diagnose_frame(evaluation)
    assert evaluation.as_flat_dict() == before
    assert diagnosis.pixel_score == evaluation.annotation.match.score == evaluation.annotation_reward
    assert diagnosis.overall == evaluation.overall
    annotation = evaluation.annotation
    identity = fr.rescale(annotation.predicted, 1.0, 1.0)
    assert match_annotations(identity, annotation.ground_truth, annotation.half_life_px).score == diagnosis.pixel_score
    for h in diagnosis.hypotheses:
        if h.what_if_score is None:
            assert not h.applies
            continue
        again = match_annotations(h.predicted, annotation.ground_truth, annotation.half_life_px).score
        assert again == h.what_if_score
        assert h.gain == pytest.approx(h.what_if_score - diagnosis.pixel_score)


def test_what_if_equals_scoring_the_rescaled_response():
    """Writing the hypothesis's pixels into the response and scoring it gives the what-if exactly."""
    gt = CASES["bbox_set"]
    pred = mapped(gt, lambda x, y: (round(x / 640 * 1000), round(y / 480 * 1000)))
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt))
    best = diagnosis.best
    pixels = [list(shape) for shape in best.predicted.groups[0][1]]
    rescored = run("bbox_set", pixels, gt)
    assert rescored.annotation_reward == best.what_if_score
    assert rescored.overall == best.what_if_overall


def test_rescale_keeps_type_keys_and_corner_order():
    gt = CASES["bbox_map"]
    evaluation = run("bbox_map", gt, gt)
    mapped_ann = fr.rescale(evaluation.annotation.predicted, 2.0, 0.5, swap=True)
    assert mapped_ann.keys == evaluation.annotation.predicted.keys
    assert mapped_ann.annotation_type == "bbox_map"
    for _, shapes in mapped_ann.groups:
        for box in shapes:
            assert isinstance(box, Box) and box.x0 < box.x1 and box.y0 < box.y1
    seg = fr.rescale(run("segment", [[1, 2], [3, 4]], [[1, 2], [3, 4]]).annotation.predicted, 10, 100, swap=True)
    assert seg.groups[0][1][0] == Segment(Point(20.0, 100.0), Point(40.0, 300.0))


@pytest.mark.parametrize(
    ("height", "width", "max_pixels", "expected"),
    [
        (1080, 1920, 1280 * 28 * 28, (728, 1316)),
        (480, 640, 1280 * 28 * 28, (476, 644)),
        (240, 320, 1280 * 28 * 28, (252, 308)),
        (20, 30, 1280 * 28 * 28, (56, 84)),
        (4000, 6000, 16384 * 28 * 28, (2912, 4368)),
    ],
)
def test_smart_resize_matches_qwen(height, width, max_pixels, expected):
    assert fr.smart_resize(height, width, max_pixels=max_pixels) == expected


# --------------------------------------------------------------------------- rows it cannot check


def test_no_image_size_says_so_instead_of_guessing():
    gt = CASES["bbox_set"]
    pred = mapped(gt, lambda x, y: (round(x / 640, 3), round(y / 480, 3)))  # obviously normalized ...
    evaluation = run("bbox_set", pred, gt, size=None)
    diagnosis = fr.diagnose_frame(evaluation)
    assert diagnosis.status == fr.STATUS_NO_IMAGE_SIZE and diagnosis.frame is None  # ... but no guess
    assert diagnosis.message == fr.NO_IMAGE_SIZE_MESSAGE == "no image size: frame check needs the image"
    assert diagnosis.hypotheses == () and diagnosis.pixel_score == evaluation.annotation_reward
    given_size = fr.diagnose_frame(evaluation, (640, 480))
    assert given_size.frame == fr.FRAME_NORMALIZED


def test_no_prediction_and_no_annotation():
    evaluation = evaluate(
        response='{"answer": 3}', answer_gt={"type": "integer", "value": 3},
        annotation_gt={"type": "bbox", "value": BOXES[0]}, reward_contract=contract("bbox"), image_size=[640, 480],
    )
    diagnosis = fr.diagnose_frame(evaluation)
    assert diagnosis.status == fr.STATUS_NO_PREDICTION and "no annotation in the response" in diagnosis.message
    answer_only = evaluate(
        response='{"answer": 3}', answer_gt={"type": "integer", "value": 3}, annotation_gt=None,
        reward_contract={"answer": {"id": "answer_exact_match_v0", "type": "integer"}}, trace_reward_mode="answer",
    )
    assert fr.diagnose_frame(answer_only).status == fr.STATUS_NO_ANNOTATION


def test_empty_prediction_set_is_pixel():
    diagnosis = fr.diagnose_frame(run("bbox_set", [], BOXES))
    assert diagnosis.frame == fr.FRAME_PIXEL and diagnosis.shapes == 0


# --------------------------------------------------------------------------- properties

sizes = st.tuples(st.integers(120, 1900), st.integers(120, 1900))


@st.composite
def boxes_in(draw, size):
    width, height = size
    out = []
    for _ in range(draw(st.integers(1, 4))):
        w = draw(st.integers(max(40, width // 8), max(40, width // 3)))
        h = draw(st.integers(max(40, height // 8), max(40, height // 3)))
        x0 = draw(st.integers(0, width - w))
        y0 = draw(st.integers(0, height - h))
        out.append([x0, y0, x0 + w, y0 + h])
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), size=sizes)
def test_property_jittered_pixels_are_never_flagged(data, size):
    gt = data.draw(boxes_in(size))
    jitter = data.draw(st.lists(st.integers(-2, 2), min_size=4 * len(gt), max_size=4 * len(gt)))
    pred = [[v + jitter[4 * i + j] for j, v in enumerate(box)] for i, box in enumerate(gt)]
    for i, box in enumerate(pred):  # keep corners ordered
        pred[i] = [min(box[0], box[2] - 1), min(box[1], box[3] - 1), box[2], box[3]]
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt, size))
    assert diagnosis.frame == fr.FRAME_PIXEL, diagnosis.message


ROUNDING_SLACK = 0.01


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), size=sizes, frame=st.sampled_from([fr.FRAME_NORMALIZED, fr.FRAME_SCALED_1000]))
def test_property_normalized_and_1000_are_recognised_and_recovered(data, size, frame):
    width, height = size
    if frame == fr.FRAME_SCALED_1000 and abs(width - 1000) < 60 and abs(height - 1000) < 60:
        return  # the 0-1000 grid is the pixel frame there
    gt = data.draw(boxes_in(size))
    scale = 1.0 if frame == fr.FRAME_NORMALIZED else 1000.0
    digits = 4 if frame == fr.FRAME_NORMALIZED else 1
    pred = mapped(gt, lambda x, y: (round(x / width * scale, digits), round(y / height * scale, digits)))
    diagnosis = fr.diagnose_frame(run("bbox_set", pred, gt, size))
    # By design a row that already scores within GAIN_MIN of a perfect match is not re-read
    # (e.g. a small box at the origin, 779 px wide, on the 0-1000 grid: IoU 0.75 as it is);
    # the rounding of the drawn coordinates costs up to about 0.01 of the what-if.
    assume(diagnosis.pixel_score < 1.0 - fr.GAIN_MIN - ROUNDING_SLACK)
    assert diagnosis.frame == frame, diagnosis.hypothesis_rows()
    assert diagnosis.what_if_score > 0.9
    assert diagnosis.pixel_score <= diagnosis.what_if_score


# --------------------------------------------------------------------------- the batch table on the sample data


def _generator_plans() -> dict:
    spec = importlib.util.spec_from_file_location("rs_make_sample_data", SAMPLE / "make_sample_data.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        bank = module.build_bank()
        _, plans = module.canonical_rollouts(bank.instances)
    finally:
        sys.modules.pop(spec.name, None)
    return plans


@pytest.fixture(scope="module")
def sample():
    table = score_files(CANONICAL, runs="separate", workers=1).table
    start = time.perf_counter()
    frames = frame_tables.frame_table(table)
    seconds = time.perf_counter() - start
    behaviour = table["row_id"].map(lambda rid: _PLANS[rid]["behaviour"])
    return table, frames, behaviour, seconds


_PLANS = _generator_plans()


def test_sample_frames_match_the_simulated_behaviours(sample):
    table, frames, behaviour, _ = sample
    checked = frames["status"] == fr.STATUS_CHECKED
    expected = {"normalized_01": fr.FRAME_NORMALIZED, "scaled_1000": fr.FRAME_SCALED_1000, "xy_swapped": fr.FRAME_SWAPPED}
    for simulated, frame in expected.items():
        rows = checked & (behaviour == simulated)
        assert rows.sum() >= 30, simulated
        assert (frames.loc[rows, "frame"] == frame).all(), frames.loc[rows & (frames["frame"] != frame)]
        assert (frames.loc[rows, "what_if_score"] > 0.9).mean() > 0.95
    # nothing else is called a frame mistake: right geometry is pixel; near misses at most reach outside
    others = checked & ~behaviour.isin(list(expected))
    assert set(frames.loc[others, "frame"]) <= {fr.FRAME_PIXEL, fr.FRAME_OUTSIDE}
    near = others & frames["frame"].eq(fr.FRAME_OUTSIDE)
    assert set(behaviour[near]) <= {"near_miss"}
    assert (frames.loc[near, "shapes_outside"] > 0).all()
    # ckpt-B makes the 0-1000 mistake, fading with training
    b = checked & (frames["run"] == "rollouts_ckpt-B")
    per_step = frames[b].groupby("step")["frame"].apply(lambda f: (f == fr.FRAME_SCALED_1000).mean())
    assert per_step.iloc[0] > per_step.iloc[-1] > 0


def test_sample_table_agrees_with_the_one_row_diagnosis(sample):
    table, frames, _, _ = sample
    from scoring.runs import explain_row

    flagged = frames.index[frames["frame"].isin(fr.FLAGGED_FRAMES)]
    others = frames.index[frames["frame"] == fr.FRAME_PIXEL][::25]
    for index in [*flagged, *others]:
        diagnosis = fr.diagnose_frame(explain_row(table, index))
        assert diagnosis.frame == frames.at[index, "frame"], index
        assert diagnosis.message == frames.at[index, "message"] and diagnosis.confidence == frames.at[index, "confidence"]
        assert diagnosis.pixel_score == frames.at[index, "score"] == table.at[index, "annotation_reward"]
        if diagnosis.flagged and diagnosis.best is not None:
            assert diagnosis.what_if_score == frames.at[index, "what_if_score"]


def test_sample_statuses_come_from_the_columns(sample):
    table, frames, _, seconds = sample
    parse_failed = table["annotation_parse_ok"] == 0
    answer_mode = table["trace_reward_mode_answer"] == 1
    assert (frames.loc[parse_failed & ~answer_mode, "status"] == fr.STATUS_NO_PREDICTION).all()
    assert (frames.loc[answer_mode & parse_failed, "status"] == fr.STATUS_NO_ANNOTATION).all()
    assert (frames.loc[~parse_failed, "status"] == fr.STATUS_CHECKED).all()
    assert frames.index.equals(table.index) and list(frames.columns[:4]) == ["run", "step", "task_id", "annotation_type"]
    assert seconds < 20, f"frame_table took {seconds:.1f}s on {len(table)} rows"


def test_frame_counts_per_task_and_run(sample):
    _, frames, _, _ = sample
    counts = frame_tables.frame_counts(frames, ["run", "task_id"])
    assert counts["rows"].sum() == len(frames)
    checked = frames["status"] == fr.STATUS_CHECKED
    assert counts["checked"].sum() == checked.sum()
    for frame in fr.FRAMES:
        assert counts[frame].sum() == (checked & (frames["frame"] == frame)).sum()
    assert (counts["flagged"] == counts[list(fr.FLAGGED_FRAMES)].sum(axis=1)).all()
    by_run = frame_tables.frame_counts(frames, "run").set_index("run")
    assert by_run.loc["rollouts_ckpt-B", fr.FRAME_SCALED_1000] > by_run.loc["rollouts_ckpt-A", fr.FRAME_SCALED_1000]
    assert 0 <= by_run["flagged_share"].max() <= 1
    flagged = frame_tables.flagged_rows(frames)
    assert len(flagged) == counts["flagged"].sum() and flagged["gain"].dropna().is_monotonic_decreasing


def test_rows_without_image_size_in_a_table(tmp_path):
    gt = BOXES
    pred = mapped(gt, lambda x, y: (round(x / 640, 3), round(y / 480, 3)))
    base = {
        "answer_gt": {"type": "integer", "value": 3},
        "annotation_gt": {"type": "bbox_set", "value": gt},
        "reward_contract": contract("bbox_set"),
        "response": json.dumps({"answer": 3, "annotation": pred}),
        "task_id": "t",
        "run": "r",
    }
    records = [dict(base, id="sized", image_size=[640, 480]), dict(base, id="unsized")]
    table = score_records(records, base_dir=tmp_path).table
    frames = frame_tables.frame_table(table)
    by_id = frames.set_index(table["row_id"])
    assert by_id.at["sized", "frame"] == fr.FRAME_NORMALIZED
    assert by_id.at["unsized", "status"] == fr.STATUS_NO_IMAGE_SIZE
    assert by_id.at["unsized", "message"] == fr.NO_IMAGE_SIZE_MESSAGE
    assert pd.isna(by_id.at["unsized", "frame"])
    assert frame_tables.frame_counts(frames, "task_id")["no_image_size"].tolist() == [1]
    assert frame_tables.rows_to_evaluate(table) == 1


def test_a_row_that_cannot_be_rerun_is_an_error_row_not_a_crash(sample):
    table, _, _, _ = sample

    def broken(row):
        raise RuntimeError("boom")

    frames = frame_tables.frame_table(table.head(30), evaluate_row=broken)
    checked_before = frame_tables.rows_to_evaluate(table.head(30))
    assert (frames["status"] == fr.STATUS_ERROR).sum() == checked_before
    assert frames.loc[frames["status"] == fr.STATUS_ERROR, "message"].str.contains("boom").all()


def test_incremental_frames_compute_each_row_once(sample):
    table, frames, _, _ = sample
    subset = table.head(200)
    calls = []
    default = frame_tables._default_evaluate_row()

    def counting(row):
        calls.append(1)
        return default(row)

    lazy = frame_tables.IncrementalFrames(subset, evaluate_row=counting)
    part = lazy.frames_for(subset.index[:50])
    assert len(part) == 50 and not lazy.complete
    first = len(calls)
    again = lazy.frames_for(subset.index[:50])
    assert len(calls) == first and again.equals(part)
    whole = lazy.frames_for()
    assert lazy.complete and len(calls) == frame_tables.rows_to_evaluate(subset)
    pd.testing.assert_frame_equal(whole, frames.loc[subset.index])
    assert lazy.seconds_per_row is not None and lazy.remaining().empty


#: Diagnostic layers above frames (they read its diagnosis; no scorer imports them either).


# --------------------------------------------------------------------------- cost measurement


def _tiled(rows: int) -> pd.DataFrame:
    files = sorted(p for p in SAMPLE.glob("rollouts_*.jsonl") if "errors" not in p.name)
    base = score_files(files, runs="separate", workers=1).table
    copies = math.ceil(rows / len(base))
    big = pd.concat([base] * copies, ignore_index=True).iloc[:rows]
    return big


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Measure frame_table on the sample data tiled to --rows rows.")
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args(argv)
    table = _tiled(args.rows)
    to_run = frame_tables.rows_to_evaluate(table)
    start = time.perf_counter()
    frames = frame_tables.frame_table(table)
    seconds = time.perf_counter() - start
    flagged = int(frames["frame"].isin(fr.FLAGGED_FRAMES).sum())
    start = time.perf_counter()
    frame_tables.frame_counts(frames, ["run", "task_id"])
    counting = time.perf_counter() - start
    print(f"python tests/review/test_frames.py --rows {args.rows}")
    print(f"rows {len(table):,}, re-run {to_run:,}, flagged {flagged:,}")
    print(f"frame_table {seconds:.1f} s ({seconds / max(to_run, 1) * 1e3:.3f} ms per re-run row); "
          f"frame_counts {counting * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
