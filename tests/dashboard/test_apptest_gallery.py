"""The Gallery page under AppTest: each mode, sorting, paging, its link, a tile's link into the
Inspector (whose previous/next then follow the gallery), shared filters, verdicts for selected
tiles, and the other kinds of data (an upload, a local folder with a missing image, a scored dataset)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import inspector, loading, sources, state, tuning, uploads
from dashboard import verdicts as vd
from dashboard.gallery import cache, ordering
from scoring.engines import score_to_dataset

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
GALLERY = str(REPO / "pages" / "2_Gallery.py")
INSPECTOR = str(REPO / "pages" / "1_Inspector.py")
TIMEOUT = 120


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.delenv(state.DATA_ENV, raising=False)
    monkeypatch.setenv(vd.ENV_VAR, str(tmp_path / "verdicts.sqlite"))
    monkeypatch.setenv(cache.ENV, "50")


@pytest.fixture(scope="module")
def table():
    run = loading.load_cached(sources.sample_source())
    return inspector.with_scores(run.table, tuning.scores(run.table, tuning.scored_options(run.table)))


def clean(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def open_gallery(params: dict | None = None) -> AppTest:
    at = AppTest.from_file(GALLERY, default_timeout=TIMEOUT)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    return clean(at.run())


def url(at: AppTest) -> dict:
    return {k: v if isinstance(v, list) else [v] for k, v in at.query_params.items()}


def status(at: AppTest) -> str:
    return next(t.value for t in at.text if t.value.startswith(("Page ", "No ")))


def tile_links(at: AppTest) -> list[dict]:
    """Each tile's link to the Inspector, as query parameters (the page-run fallback of st.page_link)."""
    found = [re.fullmatch(r"\[Inspect\]\((Inspector\?.*)\)", m.value) for m in at.markdown]
    return [parse_qs(urlsplit(m.group(1)).query) for m in found if m]


def heads(at: AppTest) -> list[str]:
    """The bold first part of each tile's caption: the sort value (or an object's name)."""
    return [c.value.split("**")[1].replace("\\", "") for c in at.caption if c.value.startswith("**")]


def notes(at: AppTest) -> list[str]:
    return [w.value.replace("\\", "") for w in at.warning]


# --------------------------------------------------------------------------- modes, sort, paging


@pytest.mark.parametrize(("mode", "noun", "total"), [("rows", "rows", 1907), ("images", "images", 139)])
def test_rows_and_images_each_fill_a_page(mode, noun, total):
    at = open_gallery({"mode": mode} if mode != "rows" else {})
    assert len(at.get("image")) == ordering.DEFAULT_PER_PAGE
    assert status(at) == f"Page 1 of {-(-total // 48)} · 1–48 of {total:,} {noun}"
    assert url(at) == ({"mode": [mode]} if mode != "rows" else {})
    assert len(tile_links(at)) == 48


def test_objects_are_counted_as_they_are_shown():
    at = open_gallery({"mode": "patches", "per_page": "24"})
    assert len(at.get("image")) == 24
    assert status(at).startswith("Page 1 of ") and status(at).endswith("objects so far")
    assert {h.split(" ")[0] for h in heads(at)} <= {"TP", "FN", "FP"}
    at.button(key="gal_next_top").click().run()
    clean(at)
    assert url(at)["page"] == ["2"] and len(at.get("image")) == 24


def test_sorting_by_another_column_and_order(table):
    at = open_gallery()
    at.selectbox(key="gal_sort_w").set_value("score").run()
    at.segmented_control(key="gal_order_w").set_value(ordering.DESC).run()
    clean(at)
    assert url(at) == {"sort": ["score"], "order": ["desc"]}
    expected = table["score"].sort_values(ascending=False, kind="stable").index[:48]
    assert [link["row"][0] for link in tile_links(at)] == list(expected)
    assert heads(at)[0] == f"score {table['score'].max():g}"


def test_paging_and_tiles_per_page():
    at = open_gallery()
    first = [link["row"][0] for link in tile_links(at)]
    at.button(key="gal_next_top").click().run()
    clean(at)
    assert status(at) == "Page 2 of 40 · 49–96 of 1,907 rows" and url(at) == {"page": ["2"]}
    assert not set(first) & {link["row"][0] for link in tile_links(at)}
    at.number_input(key="gal_page_w").set_value(40).run()
    assert status(at) == "Page 40 of 40 · 1,873–1,907 of 1,907 rows" and len(at.get("image")) == 35
    at.selectbox(key="gal_per_page_w").set_value(24).run()
    clean(at)
    assert status(at) == "Page 1 of 80 · 1–24 of 1,907 rows"  # another size: from the first page
    assert url(at) == {"per_page": ["24"]}


# --------------------------------------------------------------------------- links


def test_a_link_reopens_the_same_view_in_a_fresh_session():
    params = {"mode": "images", "sort": "score", "order": "desc", "page": "2", "per_page": "24", "runs": "ckpt-A"}
    at = open_gallery(params)
    assert at.segmented_control(key="gal_mode_w").value == "images"
    assert at.selectbox(key="gal_sort_w").value == "score"
    assert at.multiselect(key="insp_f_run").value == ["ckpt-A"]
    assert status(at) == "Page 2 of 4 · 25–48 of 89 images" and len(at.get("image")) == 24
    assert url(at) == {k: [v] for k, v in params.items()} and not notes(at)
    again = open_gallery(url(at))
    assert [link["row"] for link in tile_links(again)] == [link["row"] for link in tile_links(at)]


def test_bad_link_values_fall_back_with_a_note():
    at = open_gallery({"mode": "grid", "sort": "no_such_column", "order": "up", "page": "x", "zoom": "2"})
    said = notes(at)
    assert any("mode: 'grid' is not one of" in n for n in said)
    assert any("sort: 'no_such_column' is not one of" in n for n in said)
    assert any("page: 'x' is not a whole number" in n for n in said)
    assert any("parameter zoom is not used" in n for n in said)
    assert status(at).startswith("Page 1 of 40")
    clamped = open_gallery({"page": "999"})
    assert status(clamped).startswith("Page 40 of 40") and url(clamped) == {"page": ["40"]}


def test_a_tile_opens_its_row_in_the_inspector_which_walks_the_gallery_order(table):
    at = open_gallery({"sort": "score", "order": "desc", "type": "bbox", "page": "2", "per_page": "24"})
    link = tile_links(at)[5]
    order = table[table["annotation_type"].astype(object) == "bbox"]["score"].sort_values(
        ascending=False, kind="stable").index
    assert link["row"] == [order[24 + 5]] and link["from"] == ["gallery"] and link["type"] == ["bbox"]
    assert link["run"] == [str(table.at[order[29], "run"])]
    inspector_at = AppTest.from_file(INSPECTOR, default_timeout=TIMEOUT)
    for key, value in link.items():
        inspector_at.query_params[key] = value
    clean(inspector_at.run())
    assert inspector_at.session_state[state.K_SELECTED] == order[29]
    inspector_at.button(key="insp_next").click().run()
    assert inspector_at.session_state[state.K_SELECTED] == order[30]  # the gallery's next tile
    back = [m.value for m in inspector_at.markdown if m.value.startswith("[Back to the gallery")]
    assert back == ["[Back to the gallery, page 2](Gallery?sort=score&order=desc&page=2&per_page=24&type=bbox)"]
    written = url(inspector_at)
    assert written["row"] == [order[30]] and written["gallery_sort"] == ["score"]  # the link box keeps it
    inspector_at.button(key="insp_own_order").click().run()
    assert "from" not in url(inspector_at) and inspector_at.selectbox(key="insp_sort").value == "file order"


def test_filters_are_the_inspectors_and_survive_switching_between_the_two():
    at = clean(AppTest.from_file(APP, default_timeout=TIMEOUT).run())
    at.switch_page("pages/2_Gallery.py").run()
    at.multiselect(key="insp_f_annotation_type").select("point_set").run()
    at.text_input(key="insp_f_text").input("ckpt-A").run()
    clean(at)
    gallery_rows = {link["row"][0] for link in tile_links(at)} if tile_links(at) else set()
    at.switch_page("pages/1_Inspector.py").run()
    clean(at)
    assert at.multiselect(key="insp_f_annotation_type").value == ["point_set"]
    assert at.text_input(key="insp_f_text").value == "ckpt-A"
    at.multiselect(key="insp_f_annotation_type").unselect("point_set").select("segment").run()
    at.switch_page("pages/2_Gallery.py").run()
    clean(at)
    assert at.multiselect(key="insp_f_annotation_type").value == ["segment"]
    assert status(at).startswith("Page 1 of ")
    assert gallery_rows.isdisjoint({link["row"][0] for link in tile_links(at)})


# --------------------------------------------------------------------------- verdicts


def test_selected_tiles_get_one_verdict_and_show_it(tmp_path):
    at = open_gallery({"per_page": "24"})
    picked = [link["row"][0] for link in tile_links(at)][1:3]
    at.checkbox[1].check().run()
    at.checkbox[2].check().run()
    assert list(at.session_state["gal_selected"]) == picked
    at.radio(key="gal_verdict").set_value(vd.MODEL_WRONG)
    at.text_input(key="gal_note").input("both draw the legend")
    next(b for b in at.button if b.label.startswith("Save the verdict for 2 rows")).click().run()
    clean(at)
    saved = vd.VerdictStore(tmp_path / "verdicts.sqlite").latest()
    assert sorted(saved["row_key"]) == sorted(picked) and set(saved["verdict"]) == {vd.MODEL_WRONG}
    assert set(saved["note"]) == {"both draw the legend"}
    assert any("Saved “model wrong” for 2 rows" in s.value for s in at.success)
    badges = [m.value.replace("\\", "") for m in at.markdown if "-badge[" in m.value]
    assert badges.count(":blue-badge[verdict: model wrong]") == 2
    assert not at.session_state["gal_selected"]  # saved: the selection is cleared
    at.button(key="gal_select_page").click().run()
    assert len(at.session_state["gal_selected"]) == 24
    next(b for b in at.button if b.label.startswith("Tag them as ground-truth errors")).click().run()
    assert set(vd.VerdictStore(tmp_path / "verdicts.sqlite").latest()["verdict"]) == {vd.GT_WRONG}


# --------------------------------------------------------------------------- other data


def test_an_upload_a_local_folder_and_a_scored_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv(uploads.UPLOAD_DIR_ENV, str(tmp_path / "uploads"))
    monkeypatch.setenv(loading.CACHE_DIR_ENV, str(tmp_path / "cache"))
    lines = (sources.SAMPLE_DIR / "rollouts_with_errors.jsonl").read_text().splitlines()
    data = ("\n".join(lines) + "\n").encode()

    at = clean(AppTest.from_file(APP, default_timeout=TIMEOUT).run())
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(("broken.jsonl", data, "application/jsonl"))
    at.run()
    at.switch_page("pages/2_Gallery.py").run()
    clean(at)
    assert len(at.get("image")) > 0
    upload_notes = [c.value.replace("\\", "") for c in at.caption if "image missing" in c.value]
    assert upload_notes  # an upload may not name a file it did not upload
    thumbnails = list((tmp_path / "uploads").rglob(".thumbnails/*/*.jpg"))
    assert thumbnails  # kept in the session's own folder

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "broken.jsonl").write_bytes(data)
    at = clean(AppTest.from_file(APP, default_timeout=TIMEOUT).run())
    at.radio(key="rs_kind_w").set_value(state.KIND_PATH).run()
    at.text_area(key="rs_path_w").set_value(str(folder))
    at.sidebar.button[0].click().run()
    at.switch_page("pages/2_Gallery.py").run()
    clean(at)
    missing = [c.value.replace("\\", "") for c in at.caption if "image missing" in c.value]
    assert any("image not found: 'images/missing_scan_404.png'" in m for m in missing)
    assert list((tmp_path / "cache" / cache.FOLDER).rglob("*.jpg"))

    score_to_dataset([sources.SAMPLE_DIR / "rollouts_ckpt-A.jsonl"], tmp_path / "scored", workers=1)
    monkeypatch.setenv(state.DATA_ENV, str(tmp_path / "scored"))
    at = clean(AppTest.from_file(GALLERY, default_timeout=TIMEOUT).run())
    assert status(at).startswith("Page 1 of ") and len(at.get("image")) == 48
