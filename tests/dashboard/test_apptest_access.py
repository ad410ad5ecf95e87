"""The sidebar under AppTest on a shared server: data roots in the path box, uploads-only mode, uploads."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image
from streamlit import config
from streamlit.testing.v1 import AppTest

from dashboard import loading, sources, state, uploads
from scoring.rollouts.access import OUTSIDE_ROOTS, OUTSIDE_UPLOAD, ROOTS_ENV

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
TIMEOUT = 90


@pytest.fixture(autouse=True)
def _no_data_env(monkeypatch, tmp_path):
    monkeypatch.delenv(state.DATA_ENV, raising=False)
    monkeypatch.setenv(uploads.UPLOAD_DIR_ENV, str(tmp_path / "uploads"))
    monkeypatch.setenv(loading.CACHE_DIR_ENV, "off")


def rollout_lines(n: int = 6) -> list[dict]:
    lines = (sources.SAMPLE_DIR / "rollouts_ckpt-B.jsonl").read_text().splitlines()[:n]
    return [json.loads(line) for line in lines]


def jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def path_box(at: AppTest, text: str) -> AppTest:
    at.text_area(key="rs_path_w").set_value(text)
    next(b for b in at.sidebar.button if b.label == "Load").click().run()
    return at


def test_with_roots_the_path_box_shows_them_and_refuses_the_rest(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    (root / "a.jsonl").write_bytes(jsonl(rollout_lines(4)))
    secret = tmp_path / "etc" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0::/root:/bin/sh\n")
    monkeypatch.setenv(ROOTS_ENV, str(root))
    config.set_option("server.address", "0.0.0.0")  # served to the team: the roots keep the box on
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_PATH).run()
    assert any(state.plain(root.resolve()) in c.value for c in at.sidebar.caption)
    errors = []
    for text in (str(secret), str(secret.with_name("shadow")), "/etc/passwd", f"{root}/../etc/passwd"):
        path_box(at, text)
        assert not at.exception
        [error] = at.sidebar.error
        assert OUTSIDE_ROOTS in error.value
        errors.append(error.value.replace(state.plain(text), "<path>"))
    assert len(set(errors)) == 1  # present or missing: the same words
    assert not any("root:x" in t.value for t in at.text)
    path_box(at, str(root))
    assert not at.exception and not at.sidebar.error
    assert {m.label: m.value for m in at.metric}["Rows"] == "4"


def test_beyond_loopback_without_roots_the_path_box_is_off(monkeypatch, tmp_path):
    monkeypatch.setenv(state.DATA_ENV, str(tmp_path))  # a default path is not used either
    config.set_option("server.address", "0.0.0.0")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert at.radio(key="rs_kind_w").value == state.KIND_SAMPLE
    at.radio(key="rs_kind_w").set_value(state.KIND_PATH).run()
    assert not at.exception
    assert [i.value for i in at.sidebar.info] == [sources.PATH_BOX_OFF]
    assert not [t for t in at.text_area if t.key == "rs_path_w"]


def test_on_loopback_without_roots_the_path_box_is_on(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(jsonl(rollout_lines(3)))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_PATH).run()
    path_box(at, str(tmp_path))
    assert not at.exception and {m.label: m.value for m in at.metric}["Rows"] == "3"


def test_an_upload_reads_only_its_own_files(tmp_path):
    secret = tmp_path / "server" / "secret.png"
    secret.parent.mkdir()
    Image.new("RGB", (64, 64), (255, 0, 255)).save(secret)
    records = rollout_lines(3)
    records[0]["image"] = str(secret)
    records[1]["image"] = "../../server/secret.png"
    records[2]["image"] = f"file://{secret}"
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(("mine.jsonl", jsonl(records), "application/jsonl")).run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Rows"] == "3"  # every row kept
    [errors] = [d.value for d in at.dataframe if "reason" in d.value.columns]
    warned = errors[errors["reason"].str.contains(OUTSIDE_UPLOAD, regex=False)]
    assert len(warned) == 3 and set(warned["severity"]) == {"warning"}
    folder = at.session_state[state.K_UPLOAD_FOLDER].path
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.parent == tmp_path / "uploads"


def test_an_uploaded_bundle_is_read_with_its_images(tmp_path):
    records = rollout_lines(2)
    for record in records:
        record["image"] = "imgs/pic.png"
        record.pop("image_size", None)
    buffer = io.BytesIO()
    Image.new("RGB", (30, 20), "blue").save(buffer, format="PNG")
    archive = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("rollouts.jsonl", jsonl(records))
        handle.writestr("imgs/pic.png", buffer.getvalue())
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.radio(key="rs_kind_w").set_value(state.KIND_UPLOAD).run()
    at.sidebar.file_uploader[0].set_value(("bundle.zip", archive.getvalue(), "application/zip")).run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Rows"] == "2"
    assert any("bundle.zip!rollouts.jsonl" in t.value for t in at.sidebar.text)
