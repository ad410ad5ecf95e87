"""The gallery's plain modules: sorting and paging, image groups, objects, thumbnails, their cache, links."""

from __future__ import annotations

import io
import math
import os
import stat
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from dashboard import filter_panel, inspector, links, loading, overlay, sources, tuning
from dashboard.gallery import cache, ordering, patches, render, tiles, view
from scoring.verifier import Box

floats = st.one_of(st.floats(-5, 5, allow_nan=False), st.just(math.nan))
tied = st.one_of(st.sampled_from([0.0, 0.5, 1.0, math.nan]), floats)  # many ties: stability shows


@pytest.fixture(scope="module")
def run():
    return loading.load_cached(sources.sample_source())


@pytest.fixture
def page_inputs(run, tmp_path):
    scores = tuning.scores(run.table, tuning.scored_options(run.table))
    table = inspector.with_scores(run.table, scores)
    return tiles.PageInputs(run=run, table=table, scores=scores, mask=None, filter_key="all",
                            cache=cache.ThumbnailCache(tmp_path / "thumbnails", 200_000_000))


# --------------------------------------------------------------------------- sorting and paging


@given(st.lists(tied, min_size=0, max_size=200), st.booleans(), st.data())
def test_sorting_is_a_stable_permutation_with_missing_values_last(values, descending, data):
    values = np.array(values, dtype=float)
    positions = np.array(sorted(data.draw(st.sets(st.integers(0, max(len(values) - 1, 0)))))) if len(values) \
        else np.zeros(0, dtype=np.int64)
    positions = positions.astype(np.int64)
    out = ordering.ordered(positions, values, descending)
    assert sorted(out.tolist()) == positions.tolist()
    picked = values[out]
    finite = picked[~np.isnan(picked)]
    assert np.isnan(picked[len(finite):]).all()  # every missing value after every number
    steps = np.diff(finite)
    assert (steps <= 0).all() if descending else (steps >= 0).all()
    for a, b in zip(out, out[1:], strict=False):  # ties keep the table's order
        if values[a] == values[b] or (np.isnan(values[a]) and np.isnan(values[b])):
            assert a < b


def test_sorting_by_a_column_gives_its_exact_order():
    table = pd.DataFrame({"score": [0.5, np.nan, 0.1, 0.5, 0.9]}, index=list("abcde"))
    values = ordering.sort_values(table, "score")
    assert table.index[ordering.ordered(np.arange(5), values, False)].tolist() == ["c", "a", "d", "e", "b"]
    assert table.index[ordering.ordered(np.arange(5), values, True)].tolist() == ["e", "a", "d", "c", "b"]
    mask = np.array([True, True, False, True, True])
    assert table.index[ordering.sorted_positions(table, mask, "k", values, False)].tolist() == ["a", "d", "e", "b"]
    many = np.random.default_rng(0).choice([0.0, 0.5, 1.0, np.nan], 500)  # ties everywhere
    for descending in (False, True):
        out = ordering.ordered(np.arange(500), many, descending)
        key = np.where(np.isnan(many), np.inf, -many if descending else many)
        assert out.tolist() == sorted(range(500), key=lambda i: (key[i], i))


@given(st.integers(0, 500), st.sampled_from(ordering.PER_PAGE_CHOICES))
def test_pages_hold_every_tile_once(count, per_page):
    seen = []
    for page in range(1, ordering.page_count(count, per_page) + 1):
        shown, start, stop = ordering.page_bounds(page, per_page, count)
        assert shown == page
        seen.extend(range(start, stop))
        assert all(ordering.page_of(i, per_page) == page for i in range(start, stop))
    assert seen == list(range(count))
    assert ordering.page_bounds(10**6, per_page, count)[0] == ordering.page_count(count, per_page)  # clamped
    assert ordering.page_bounds(-3, per_page, count)[0] == 1


def test_a_page_describes_where_it_is():
    assert ordering.describe_page(3, 48, 5731, "row") == "Page 3 of 120 · 97–144 of 5,731 rows"
    assert ordering.describe_page(1, 24, 1, "image") == "Page 1 of 1 · 1–1 of 1 image"
    assert ordering.describe_page(1, 24, 0, "object") == "No objects"


def test_the_logged_difference_is_the_largest_disagreement_per_row():
    table = pd.DataFrame({"overall": [0.5, 1.0, np.nan, 0.2], "logged_overall": [0.5, 0.25, 0.3, np.nan],
                          "format": [1.0, 1.0, 0.0, 0.0], "logged_format": [0.0, 1.0, np.nan, np.nan]})
    got = ordering.logged_difference(table)
    assert got[:2].tolist() == [1.0, 0.75]
    assert np.isnan(got[2]) and np.isnan(got[3])
    assert ordering.LOGGED_DIFFERENCE in ordering.sort_columns(table)


def test_sort_choices_are_the_numeric_columns_that_vary(run):
    columns = ordering.sort_columns(run.table, (ordering.SUSPECT_CONFIDENCE,))
    assert columns[:3] == ["annotation_reward", "score", "answer_reward"]
    assert ordering.SUSPECT_CONFIDENCE in columns and ordering.OBJECT_SIMILARITY not in columns
    assert "step" in columns and "annotation_assigned_iou_mean" in columns
    assert not [c for c in columns if c.startswith(("annotation_type_", "trace_reward_mode_"))]  # one-hot flags
    assert "source_line" not in columns and "run" not in columns and "solved" not in columns
    assert ordering.default_sort(columns) == "annotation_reward"


@given(st.lists(st.tuples(st.integers(0, 5), floats), min_size=1, max_size=50), st.booleans())
def test_image_groups_hold_every_row_once_in_the_rows_order(rows, descending):
    codes = np.array([c for c, _ in rows], dtype=np.int64)
    values = np.array([v for _, v in rows], dtype=float)
    order = ordering.ordered(np.arange(len(rows)), values, descending)
    groups = ordering._image_groups(codes, order, values, descending)
    assert sorted(groups.rows.tolist()) == list(range(len(rows)))
    means = []
    for k in range(len(groups)):
        members = groups.members(k)
        assert len(set(codes[members].tolist())) == 1  # one image per tile
        rank = {p: i for i, p in enumerate(order.tolist())}
        assert [rank[p] for p in members] == sorted(rank[p] for p in members)  # the rows' own order
        finite = values[members][~np.isnan(values[members])]
        expected = finite.mean() if len(finite) else math.nan
        assert groups.values[k] == pytest.approx(expected, nan_ok=True)
        means.append(groups.values[k])
    means = np.array(means)
    finite = means[~np.isnan(means)]
    assert np.isnan(means[len(finite):]).all()
    assert (np.diff(finite) <= 1e-12).all() if descending else (np.diff(finite) >= -1e-12).all()


def test_rows_without_an_image_are_grouped_by_instance_then_alone():
    table = pd.DataFrame({"image_ref": pd.Categorical(["a.png", None, None, "a.png", None]),
                          "instance_id": ["i1", "i2", "i2", "i1", None]})
    codes = ordering.image_codes(table)
    assert codes[0] == codes[3] and codes[1] == codes[2]
    assert len({codes[0], codes[1], codes[4]}) == 3


# --------------------------------------------------------------------------- objects


def _model(match_iou: float = 0.6):
    """A bbox_set overlay: two ground-truth boxes, two predictions, one pair matched."""
    from scoring.verifier import Match, MatchResult, ParsedAnnotation

    gt = _model_truth()
    pred = ParsedAnnotation("bbox_set", "bbox", "set", ((None, (Box(12, 12, 52, 48), Box(400, 10, 420, 30))),))
    match = MatchResult(0.3, (Match(None, 0, 0, match_iou, match_iou),), ((None, 1),), ((None, 1),), 2, 2, match_iou)
    return overlay.build_layers(pred, gt, match, image_size=(640, 480))


def test_a_rows_objects_are_what_its_overlay_draws():
    model = _model()
    found = patches.objects_of(model)
    assert [o.kind for o in found] == [patches.FN, patches.FP, patches.TP]  # lowest similarity first
    tp = found[-1]
    assert tp.similarity == pytest.approx(0.6) and tp.label == "IoU 0.60"
    assert tp.bounds == (10, 10, 52, 50)  # the pair's union
    assert found[0].bounds == (200, 200, 260, 240) and found[1].bounds == (400, 10, 420, 30)
    assert [o.kind for o in patches.objects_of(model, descending=True)] == [patches.TP, patches.FN, patches.FP]
    assert found[0].name == "FN (missed)[1] · missed"


@given(st.floats(0, 630), st.floats(0, 470), st.floats(0, 200), st.floats(0, 200))
def test_a_patch_holds_its_object_and_stays_on_the_canvas(x, y, w, h):
    model = _model()
    obj = patches.PatchObject(patches.FN, None, 0, None, 0.0, "missed", (x, y, min(x + w, 640), min(y + h, 480)))
    x0, y0, x1, y1 = patches.crop_region(obj, model)
    assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 480
    ox0, oy0, ox1, oy1 = obj.bounds
    assert x0 <= ox0 and y0 <= oy0 and ox1 <= x1 and oy1 <= y1
    assert x1 - x0 >= min(2 * patches.MIN_MARGIN_PX, 640) - 1e-9


def _fake_rows(counts):
    """``count_rows`` for rows whose objects are known: row p has ``counts[p]`` objects."""
    asked = []

    def count_rows(positions):
        asked.extend(int(p) for p in positions)
        return [[patches.PatchObject(patches.TP, None, k, k, (p * 7 + k) % 10 / 10, "", (0, 0, 1, 1))
                 for k in range(counts[p])] for p in positions]

    return count_rows, asked


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=0, max_size=40), st.integers(1, 7))
def test_object_pages_follow_each_other_without_a_gap_or_a_repeat(counts, per_page):
    order = np.arange(len(counts))[::-1].copy()
    count_rows, asked = _fake_rows(counts)
    index = patches.PatchIndex(order)
    seen = []
    start = 0
    while True:
        window, reached = index.window(start, start + per_page, count_rows, batch=3)
        if not window:
            break
        assert reached and len(window) <= per_page
        seen.extend((p, o.gt_index) for p, o in window)
        start += per_page
    expected = [(int(p), k) for p in order for k in range(counts[p])]
    assert seen == expected
    assert index.complete and index.known_objects() == sum(counts)
    assert len(asked) == len(set(asked))  # each row explained once (its objects kept)


def test_objects_are_counted_only_as_far_as_the_page_asked_for():
    count_rows, asked = _fake_rows([2] * 1000)
    index = patches.PatchIndex(np.arange(1000))
    window, reached = index.window(0, 10, count_rows, batch=4)
    assert reached and len(window) == 10 and index.counted_rows <= 8
    far, reached = index.window(1500, 1510, count_rows, budget=100, batch=4)
    assert far == [] and not reached and index.counted_rows <= 8 + 100 + 4


def test_every_object_sorted_by_its_own_similarity():
    counts = [3, 0, 2, 4]
    count_rows, _ = _fake_rows(counts)
    index = patches.PatchIndex(np.arange(4))
    rows, within = index.by_similarity(count_rows, descending=False)
    similarities = [index.objects(p, count_rows)[k].similarity for p, k in zip(rows, within, strict=True)]
    assert similarities == sorted(similarities) and len(similarities) == sum(counts)
    rows, within = index.by_similarity(count_rows, descending=True)
    similarities = [index.objects(p, count_rows)[k].similarity for p, k in zip(rows, within, strict=True)]
    assert similarities == sorted(similarities, reverse=True)


# --------------------------------------------------------------------------- thumbnails


def test_thumbnails_fit_the_tile_and_keep_the_overlay_colours():
    model = _model()
    image = Image.new("RGB", (1280, 960), "white")
    image.info["source_size"] = (640, 480)
    picture = render.row_picture(model, image, 230)
    assert picture.size == (230, 172)
    colours = {c for _, c in picture.getcolors(1 << 16)}
    assert overlay.OKABE_ITO["reddish_purple"] in colours  # the missed box
    assert overlay.OKABE_ITO["vermillion"] in colours  # the extra prediction
    decoded = Image.open(io.BytesIO(render.encode(picture)))
    assert decoded.format == "JPEG" and decoded.size == (230, 172)
    patch = render.patch_picture(model, patches.objects_of(model)[0], image, 160)
    assert max(patch.size) == 160
    assert render.placeholder(160, ["image not found: 'x.png'"]).size == (160, 120)


def test_an_image_tile_draws_the_truth_once_and_marks_what_most_rollouts_missed():
    missed_by_both = [(None, _model()), (None, _model())]
    picture_model = render.image_picture(missed_by_both, None, 230)
    assert picture_model.size == (230, 172)
    found_by_one = [(None, _model()), (None, overlay.build_layers(None, _model_truth(), None, image_size=(640, 480)))]
    assert render.image_picture(found_by_one, None, 230).size == (230, 172)


def _model_truth():
    from scoring.verifier import ParsedAnnotation

    return ParsedAnnotation("bbox_set", "bbox", "set", ((None, (Box(10, 10, 50, 50), Box(200, 200, 260, 240))),))


# --------------------------------------------------------------------------- the cache


def test_the_cache_gives_back_what_it_kept_privately(tmp_path):
    store = cache.ThumbnailCache(tmp_path / "thumbs", 10_000)
    key = cache.key_of("row", ["a.jsonl:1", "a.jsonl", (10, 5)], [None], [230])
    assert store.get(key) is None
    store.put(key, b"jpeg bytes")
    assert store.get(key) == b"jpeg bytes"
    path = next((tmp_path / "thumbs").rglob("*.jpg"))
    assert stat.S_IMODE(os.stat(tmp_path / "thumbs").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert cache.key_of("row", ["a.jsonl:1", "a.jsonl", (11, 5)], [None], [230]) != key  # the file changed
    assert cache.ThumbnailCache(tmp_path / "thumbs", 10_000).get(key) == b"jpeg bytes"  # a restart reads it


def test_the_cache_stays_within_its_bound_dropping_the_least_recently_used(tmp_path):
    store = cache.ThumbnailCache(tmp_path, 1000)
    keys = [cache.key_of(i) for i in range(6)]
    for key in keys[:4]:
        store.put(key, b"x" * 200)
    assert store.get(keys[0]) is not None  # used again: the newest
    store.put(keys[4], b"x" * 200)
    store.put(keys[5], b"x" * 200)  # 1,200 bytes: down to 900 at most
    assert store.held_bytes <= 900
    assert store.get(keys[0]) is not None and store.get(keys[5]) is not None
    assert store.get(keys[1]) is None and store.get(keys[2]) is None
    assert sum(p.stat().st_size for p in tmp_path.rglob("*.jpg")) == store.held_bytes


def test_a_zero_bound_keeps_nothing_and_the_setting_is_read_in_megabytes(tmp_path):
    store = cache.ThumbnailCache(tmp_path / "none", 0)
    store.put("k" * 64, b"data")
    assert store.get("k" * 64) is None and not (tmp_path / "none").exists()
    assert cache.max_bytes_from_env({}) == cache.DEFAULT_MB * 1_000_000
    assert cache.max_bytes_from_env({cache.ENV: "50"}) == 50_000_000
    assert cache.max_bytes_from_env({cache.ENV: "lots"}) == cache.DEFAULT_MB * 1_000_000


def test_an_uploads_thumbnails_live_in_its_session_folder(tmp_path, monkeypatch):
    upload = sources.DataSource(kind="upload", label="x", files=(), upload_root=str(tmp_path / "session"))
    assert cache.folder_for(upload) == tmp_path / "session" / ".thumbnails"
    monkeypatch.setenv(loading.CACHE_DIR_ENV, str(tmp_path / "cache"))
    assert cache.folder_for(sources.sample_source()) == tmp_path / "cache" / cache.FOLDER


# --------------------------------------------------------------------------- a page


def test_a_row_page_is_the_sorted_rows_and_comes_from_the_cache_the_second_time(run, page_inputs):
    view_ = tiles.GalleryView(sort="score", descending=True, page=2, per_page=24)
    first = tiles.build_page(page_inputs, view_)
    scores = page_inputs.table["score"]
    expected = scores.sort_values(ascending=False, kind="stable").index[24:48].tolist()
    assert [t.row_id for t in first.tiles] == expected
    assert [t.sort_value for t in first.tiles] == pytest.approx(scores[expected].tolist())
    assert first.page == 2 and first.count == len(run.table) and first.cached == 0
    again = tiles.build_page(page_inputs, view_)
    assert again.cached == 24 and [t.picture for t in again.tiles] == [t.picture for t in first.tiles]
    assert dict(first.tiles[0].numbers)["score"] == pytest.approx(scores[expected[0]])
    assert [t.run for t in first.tiles] == [str(run.table.at[r, "run"]) for r in expected]


def test_a_missing_image_gets_a_tile_that_says_why(run, page_inputs):
    row_id = "rollouts_with_errors.jsonl:23"
    mask = (run.table.index == row_id)
    page = tiles.build_page(replace(page_inputs, mask=mask, filter_key="one"), tiles.GalleryView())
    [tile] = page.tiles
    assert tile.note.startswith("image missing: image not found: 'images/missing_scan_404.png'")
    assert Image.open(io.BytesIO(tile.picture)).format == "JPEG"


def test_a_simple_scorer_row_gets_a_placeholder(run, page_inputs):
    simple = (run.table["scorer"].astype(str) != "trace").to_numpy()
    page = tiles.build_page(replace(page_inputs, mask=simple, filter_key="simple"), tiles.GalleryView(per_page=24))
    assert len(page.tiles) == 24
    assert all(t.note.startswith("nothing to draw") for t in page.tiles)


def test_an_image_page_has_one_tile_per_image_with_its_rollouts(run, page_inputs):
    page = tiles.build_page(page_inputs, tiles.GalleryView(mode=ordering.MODE_IMAGES, per_page=24))
    assert page.noun == "image" and len(page.tiles) == 24
    refs = run.table["image_ref"].astype(object)
    for tile in page.tiles:
        assert len({refs[r] for r in tile.rows}) == 1  # every rollout of the tile shows its image
        assert dict(tile.numbers)["rollouts"] == len(tile.rows)
    first = page.tiles[0]
    others = refs[refs == refs[first.rows[0]]].index
    assert set(first.rows) == set(others)  # all of them (no filter)
    means = [t.sort_value for t in page.tiles]
    assert means == sorted(means)


def test_an_object_page_continues_where_the_last_stopped(run, page_inputs):
    view_ = tiles.GalleryView(mode=ordering.MODE_PATCHES, per_page=24)
    one = tiles.build_page(page_inputs, view_)
    two = tiles.build_page(page_inputs, replace(view_, page=2))
    assert len(one.tiles) == len(two.tiles) == 24 and not one.complete
    keys = [(t.row_id, t.title) for t in one.tiles + two.tiles]
    assert len(set(keys)) == 48
    rewards = run.table["annotation_reward"]
    shown = [rewards[t.row_id] for t in one.tiles + two.tiles]
    assert shown == sorted(shown)  # rows in the sort's order, each row's objects together
    assert {t.title.split(" ")[0] for t in one.tiles} <= {"TP", "FN", "FP"}


def test_the_object_sort_puts_every_object_in_order_of_its_own_iou(run, page_inputs):
    mask = (run.table["annotation_type"].astype(object) == "bbox_set").to_numpy()
    view_ = tiles.GalleryView(mode=ordering.MODE_PATCHES, sort=ordering.OBJECT_SIMILARITY, descending=True, per_page=96)
    page = tiles.build_page(replace(page_inputs, mask=mask, filter_key="sets"), view_)
    assert page.complete
    values = [t.sort_value for t in page.tiles]
    assert values == sorted(values, reverse=True) and values[0] > 0.9


# --------------------------------------------------------------------------- links


def test_a_tile_link_names_the_row_the_filters_and_the_gallery_order(run):
    table = run.table
    choices, bounds = filter_panel.summaries(table)
    sorts = ordering.sort_columns(table)
    spec = inspector.InspectorFilter(annotation_types=("bbox",))
    shown = tiles.GalleryView(mode=ordering.MODE_IMAGES, sort="score", descending=True, page=3, per_page=24)
    fields = view.inspector_fields(choices, bounds, sorts)
    params = view.inspector_params("a.jsonl:7", "ckpt-A", shown, spec, fields)
    assert params == {"row": ["a.jsonl:7"], "run": ["ckpt-A"], "type": ["bbox"], "from": ["gallery"],
                      "gallery_mode": ["images"], "gallery_sort": ["score"], "gallery_order": ["desc"],
                      "gallery_page": ["3"], "gallery_per_page": ["24"]}
    values, notes = links.decode(params, fields)
    assert not notes and view.came_from_gallery(values)
    assert view.view_of(values, links.GALLERY_PREFIX) == shown
    assert view.gallery_params(shown, spec, choices, bounds, sorts) == {
        "mode": ["images"], "sort": ["score"], "order": ["desc"], "page": ["3"], "per_page": ["24"], "type": ["bbox"]}
    assert view.gallery_params(tiles.GalleryView(), inspector.InspectorFilter(), choices, bounds, sorts) == {}


def test_the_inspector_walks_the_gallery_order_and_finds_its_page(run):
    table = run.table
    shown = tiles.GalleryView(sort="score", descending=True, per_page=24)
    order = view.row_order(table, None, "all", shown)
    expected = table["score"].sort_values(ascending=False, kind="stable").index
    assert table.index[order].tolist() == expected.tolist()
    rows, same = view.ordered_rows(table, None, "all", shown)
    assert rows.index.tolist() == expected.tolist() and same.tolist() == order.tolist()
    assert "response" not in rows and "prompt" not in rows and list(rows["score"]) == list(table["score"][expected])
    assert view.ordered_rows(table, None, "all", shown)[0] is rows  # previous / next do not copy it again
    assert view.page_holding(table, order, shown, expected[30]) == 2
    assert view.page_holding(table, order, shown, "no such row") == shown.page
    images = replace(shown, mode=ordering.MODE_IMAGES)
    grouped = view.row_order(table, None, "all", images)
    codes = ordering.image_codes(table)[grouped]
    tile_of_row = np.concatenate([[0], np.cumsum(np.diff(codes) != 0)])
    k = 60
    assert view.page_holding(table, grouped, images, table.index[grouped[k]]) == tile_of_row[k] // 24 + 1


def test_a_pages_rows_are_read_from_disk_in_one_pass(run, monkeypatch):
    assert run.on_disk  # the sample opens as a dataset: responses stay on disk
    ids = list(run.table.index[200:230])
    run._rows.clear()
    calls = []
    with_text = run.with_text
    monkeypatch.setattr(run, "with_text", lambda rows: calls.append(len(rows)) or with_text(rows))
    run.prefetch(ids)
    assert calls == [30]
    for row_id in ids:
        assert run.row(row_id)["response"] == with_text([row_id]).iloc[0]["response"]
    assert calls == [30]  # every row from memory
    run.prefetch(ids[:5])
    assert calls == [30]
