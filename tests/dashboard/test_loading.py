"""Data sources -> one scored table: classification, staging, content keys, rows, images."""

from __future__ import annotations

import base64
import gc
import io
import json
import os
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lock_holder import Holder, free_for_another_process
from PIL import Image

from dashboard import loaded_run, loading, sources, uploads
from scoring.datasets import snapshot as table_snapshot
from scoring.datasets import writing
from scoring.rollouts import ColumnMapping
from scoring.rollouts.access import OUTSIDE_UPLOAD, ROOTS_ENV

SAMPLE = sources.SAMPLE_DIR


def sample_records(n: int = 6) -> list[dict]:
    lines = (SAMPLE / "rollouts_ckpt-A.jsonl").read_text().splitlines()[:n]
    return [json.loads(line) for line in lines]


def jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def png_bytes(size=(40, 30), colour=(200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def sample_run():
    return loading.load_cached(sources.sample_source())


# --------------------------------------------------------------------------- sources


def test_sample_source_lists_rollout_files_only():
    source = sources.sample_source()
    assert source.kind == "sample"
    names = set(source.names)
    assert {"rollouts_ckpt-A.jsonl", "gsm8k_rollouts.jsonl", "trl/completions_50.parquet", "verl/100.jsonl"} <= names
    assert not any(n.endswith((".png", ".py", ".expected.json")) for n in names)


def test_source_from_path_folder_glob_and_file(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jsonl").write_bytes(jsonl(sample_records(2)))
    (tmp_path / "a" / "notes.md").write_text("hi")
    (tmp_path / "b.jsonl").write_bytes(jsonl(sample_records(2)))
    folder = sources.source_from_path(str(tmp_path))
    assert folder.names == ("a/x.jsonl", "b.jsonl")
    glob = sources.source_from_path(str(tmp_path / "**" / "*.jsonl"))
    assert len(glob.files) == 2
    single = sources.source_from_path(str(tmp_path / "b.jsonl"))
    assert single.names == ("b.jsonl",)
    for bad, message in (("", "enter a file"), (str(tmp_path / "nope"), "not found"),
                         (str(tmp_path / "*.parquet"), "no rollout files match")):
        with pytest.raises(sources.LoadError, match=message):
            sources.source_from_path(bad)
    with pytest.raises(sources.LoadError, match="image folder"):
        sources.source_from_path(str(tmp_path), image_root=str(tmp_path / "missing"))


def test_stage_uploads_sorts_rollouts_images_and_archives(tmp_path):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("imgs/a.png", png_bytes())
    uploads = [("run.jsonl", jsonl(sample_records(2))), ("a.png", png_bytes()), ("imgs.zip", archive.getvalue()),
               ("notes.txt", b"x")]
    source = sources.stage_uploads(uploads, root=tmp_path)
    assert source.kind == "upload" and source.names == ("run.jsonl",) and source.label == "run.jsonl"
    assert [n for n, _ in source.image_files] == ["a.png"]
    assert source.image_root and source.image_root.endswith("imgs.zip")
    again = sources.stage_uploads(uploads, root=tmp_path)
    assert again == source  # content-addressed: same bytes, same paths
    with pytest.raises(sources.LoadError, match="no rollout file"):
        sources.stage_uploads([("a.png", png_bytes())], root=tmp_path)


def test_a_re_upload_of_the_same_bytes_reuses_its_dataset_and_options_get_their_own(tmp_path):
    records = sample_records(3)
    one = sources.stage_uploads([("r.jsonl", jsonl(records))], root=tmp_path / "1")
    first = loading.load(one)
    same = sources.stage_uploads([("r.jsonl", jsonl(records))], root=tmp_path / "1")
    again = loading.load(same)
    assert again.key == first.key and [u.rows_scored for u in again.updates] == [0]  # nothing rescored
    other = loading.load(one.with_options(simple_scorer="exact_match"))
    assert other.key != first.key and [u.rows_scored for u in other.updates] == [3]
    folders = sorted(p.name for p in (tmp_path / "1" / ".scored").iterdir())
    assert len(folders) == 2  # one dataset per set of options, in the upload's own folder


def test_the_run_key_changes_when_a_file_changes_and_only_then(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(jsonl(sample_records(2)))
    source = sources.source_from_path(str(path))
    key = loading.load(source).key
    assert loading.load(source).key == key
    path.write_bytes(jsonl(sample_records(3)))
    grown = loading.load(source)
    assert grown.key != key and len(grown.table) == 3


def test_the_run_key_includes_the_code_version(monkeypatch, tmp_path):
    source = sources.stage_uploads([("r.jsonl", jsonl(sample_records(1)))], root=tmp_path)
    key = loading.load(source).key
    monkeypatch.setattr(loading, "_CODE_VERSION", "something-else")
    assert loading.load(source).key != key


# --------------------------------------------------------------------------- classification and load


def test_sample_files_are_classified(sample_run):
    kinds = {p.name: p.kind for p in sample_run.plans}
    assert kinds["gsm8k_rollouts.jsonl"] == sources.SIMPLE
    assert kinds["instances.jsonl"] == kinds["trl/train_instances.jsonl"] == sources.INSTANCES
    assert kinds["trl/completions_50.parquet"] == sources.TRACE  # joined to the instances
    assert kinds["rollouts_ckpt-A.jsonl"] == kinds["verl/100.jsonl"] == sources.TRACE


def test_sample_table_shape(sample_run):
    table = sample_run.table
    assert table.index.name == "row_id" and table.index.is_unique
    assert "row_id" not in table.columns and "record_id" in table.columns
    assert table.index.str.fullmatch(r"[\w./\-:T]+:\d+(#\d+)?").all()
    assert set(table["run"].dropna()) >= {"ckpt-A", "ckpt-B"}
    assert set(table.loc[table["source_file"] == "gsm8k_rollouts.jsonl", "scorer"]) == {"numeric_close"}
    assert not table["source_file"].str.startswith("/").any()
    errors = sample_run.errors
    assert list(errors.columns[:4]) == ["file", "line", "field", "reason"]
    assert set(errors["file"]) == {"rollouts_with_errors.jsonl"}
    assert sample_run.label == f"sample data ({len(table):,} rollouts)"


def test_row_ids_are_stable_across_loads(sample_run):
    again = loading.load(sources.sample_source())
    assert again.table.index.equals(sample_run.table.index)


def test_load_cached_scores_once(sample_run):
    assert loading.load_cached(sources.sample_source()) is sample_run


def test_progress_reaches_one(tmp_path):
    source = sources.stage_uploads([("r.jsonl", jsonl(sample_records(8)))], root=tmp_path)
    seen = []
    loading.load(source, progress=lambda fraction, text: seen.append(fraction))
    assert seen[0] == 0.0 and seen[-1] == 1.0
    assert all(0.0 <= f <= 1.0 for f in seen)


def test_one_run_per_file(tmp_path):
    records = sample_records(2)
    for r in records:
        r.pop("run")
    (tmp_path / "first.jsonl").write_bytes(jsonl(records))
    (tmp_path / "second.jsonl").write_bytes(jsonl(records))
    source = sources.source_from_path(str(tmp_path))
    assert set(loading.load(source).table["run"]) == {tmp_path.name}
    assert set(loading.load(source.with_options(runs="file")).table["run"]) == {"first", "second"}


def test_unrecognised_file_then_mapped(tmp_path):
    records = [{"text": f"The answer is {i}", "truth": str(i), "when": i} for i in range(5)]
    source = sources.stage_uploads([("odd.jsonl", jsonl(records))], root=tmp_path)
    run = loading.load(source)
    [plan] = run.unrecognised
    assert plan.columns == ("text", "truth", "when")
    assert "response" in plan.message
    assert len(run.table) == 0
    assert "odd.jsonl" in set(run.errors["file"])  # the file-level reason is in the errors table
    mapped = source.with_mapping(plan.shape_key, ColumnMapping.of(response="text", gold="truth", step="when"))
    run = loading.load(mapped)
    assert not run.unrecognised
    assert len(run.table) == 5 and set(run.table["scorer"]) == {sources.DEFAULT_SIMPLE_SCORER}
    assert run.table["solved"].all()
    assert run.table["step"].tolist() == [0, 1, 2, 3, 4]


def test_unreadable_file_lands_in_errors(tmp_path):
    source = sources.stage_uploads(
        [("good.jsonl", jsonl(sample_records(2))), ("bad.jsonl", b"\x00\x01 not json\n")], root=tmp_path
    )
    run = loading.load(source)
    assert len(run.table) == 2
    assert "bad.jsonl" in set(run.errors["file"])


def test_unknown_simple_scorer_is_a_load_error(tmp_path):
    source = sources.stage_uploads([("r.jsonl", jsonl(sample_records(1)))], root=tmp_path)
    with pytest.raises(sources.LoadError, match="unknown simple scorer"):
        loading.load(source.with_options(simple_scorer="bleu"))


# --------------------------------------------------------------------------- one row again


def test_explain_matches_the_table(sample_run):
    table = sample_run.table
    for row_id in table[table["scorer"] == "trace"].index[:: max(1, len(table) // 25)]:
        evaluation = sample_run.explain(row_id)
        assert evaluation.overall == table.at[row_id, "overall"]
        assert evaluation.format_reason == table.at[row_id, "format_reason"]
    first = table.index[table["scorer"] == "trace"][0]
    assert sample_run.explain(first) is sample_run.explain(first)
    assert sample_run.explain(first, format_weight=0.5).options.format_weight == 0.5


def test_explain_simple_row_raises(sample_run):
    row_id = sample_run.table.index[sample_run.table["scorer"] != "trace"][0]
    with pytest.raises(ValueError, match="not the trace verifier"):
        sample_run.explain(row_id)


def test_load_image_from_the_sample(sample_run):
    table = sample_run.table
    row_id = table.index[table["image_ref"].notna()][0]
    image, warning = sample_run.load_image(row_id)
    assert image is not None and warning == ""
    assert image.size == (int(table.at[row_id, "image_width"]), int(table.at[row_id, "image_height"]))


def test_load_image_missing_gives_the_reason(sample_run):
    table = sample_run.table
    missing = table.index[table["image_warning"].notna()]
    assert len(missing)
    image, warning = sample_run.load_image(missing[0])
    assert image is None and "not found" in warning
    no_image = table.index[table["image_ref"].isna() & table["image_warning"].isna()][0]
    assert sample_run.load_image(no_image) == (None, "this row has no image")


def test_uploaded_image_and_inline_image(tmp_path):
    records = sample_records(2)
    records[0]["image"] = "pic.png"
    records[0].pop("image_size", None)
    records[1]["image"] = "data:image/png;base64," + base64.b64encode(png_bytes((12, 9))).decode()
    records[1].pop("image_size", None)
    source = sources.stage_uploads([("r.jsonl", jsonl(records)), ("pic.png", png_bytes((40, 30)))], root=tmp_path)
    run = loading.load(source)
    first, second = run.table.index
    image, warning = run.load_image(first)
    assert image.size == (40, 30) and warning == ""
    image, warning = run.load_image(second)
    assert image is not None and image.size == (12, 9)
    assert run.record(second)["id"] == records[1]["id"]


def test_images_are_shrunk_for_display_and_keep_their_file_size(tmp_path):
    side = loaded_run.DISPLAY_MAX_SIDE
    records = sample_records(1)
    records[0]["image"] = "big.png"
    records[0].pop("image_size", None)
    source = sources.stage_uploads(
        [("r.jsonl", jsonl(records)), ("big.png", png_bytes((2 * side + 10, side)))], root=tmp_path
    )
    run = loading.load(source)
    image, warning = run.load_image(run.table.index[0])
    assert warning == ""
    assert max(image.size) == side  # decoded at display size ...
    assert image.info["source_size"] == (2 * side + 10, side)  # ... in the file's coordinate space
    assert np.isclose(run.table["image_width"].iloc[0], 2 * side + 10)  # the scorer saw the file's size


def test_zip_of_images(tmp_path):
    records = sample_records(1)
    records[0]["image"] = "deep/pic.png"
    records[0].pop("image_size", None)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("deep/pic.png", png_bytes((33, 22)))
    source = sources.stage_uploads([("r.jsonl", jsonl(records)), ("images.zip", archive.getvalue())], root=tmp_path)
    run = loading.load(source)
    image, warning = run.load_image(run.table.index[0])
    assert image.size == (33, 22) and warning == ""
    assert np.isclose(run.table["image_width"].iloc[0], 33)


def test_short_names():
    assert sources.short_names(["/a/b/c.jsonl"]) == {"/a/b/c.jsonl": "c.jsonl"}
    assert sources.short_names(["/a/b/c.jsonl", "/a/d/e.jsonl"]) == {"/a/b/c.jsonl": "b/c.jsonl", "/a/d/e.jsonl": "d/e.jsonl"}


def _scored_into_app_cache(tmp_path, monkeypatch):
    """Five sample rows scored once into an app cache under tmp_path: (source, run, dataset folder)."""
    monkeypatch.setenv(loading.CACHE_DIR_ENV, str(tmp_path / "cache"))
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r.jsonl").write_bytes(jsonl(sample_records(5)))
    source = sources.source_from_path(str(tmp_path / "runs"))
    first = loading.load_cached(source)
    [folder] = (tmp_path / "cache" / "datasets").iterdir()
    return source, first, folder


def test_scored_datasets_survive_a_restart(tmp_path, monkeypatch):
    source, first, folder = _scored_into_app_cache(tmp_path, monkeypatch)
    assert (folder / "manifest.json").is_file()
    loading.clear_cache()  # a new server process: nothing in memory
    again = loading.load_cached(source)
    assert again is not first and [u.rows_scored for u in again.updates] == [0]  # read, not scored
    pd.testing.assert_frame_equal(again.table, first.table)
    assert again.explain(again.table.index[0]).overall == first.table["overall"].iloc[0]
    assert loading.load_cached(source, key=again.key) is again  # and then from memory


def test_a_dataset_whose_first_scoring_was_cut_short_is_scored_anew(tmp_path, monkeypatch):
    source, first, folder = _scored_into_app_cache(tmp_path, monkeypatch)
    (folder / "manifest.json").unlink()  # what a server killed during its first scoring leaves: parts, no manifest
    loading.clear_cache()
    again = loading.load_cached(source)
    assert [u.rows_scored for u in again.updates] == [5]
    pd.testing.assert_frame_equal(again.table, first.table)


def test_a_cache_dataset_the_scorer_refuses_is_cleared_and_scored_anew_while_held(tmp_path, monkeypatch):
    source, first, folder = _scored_into_app_cache(tmp_path, monkeypatch)
    (folder / "stray.txt").write_text("left by other code", encoding="utf-8")
    real, calls = loading.score_to_dataset, []

    def refuse_once(paths, directory, **kwargs):
        calls.append(free_for_another_process(directory))
        if len(calls) == 1:
            raise ValueError("written by other code")
        return real(paths, directory, **kwargs)

    monkeypatch.setattr(loading, "score_to_dataset", refuse_once)
    loading.clear_cache()
    again = loading.load_cached(source)
    assert calls == [False, False]  # the folder stayed held from the refusal to the new scoring
    assert [u.rows_scored for u in again.updates] == [5]
    assert not (folder / "stray.txt").exists() and (folder / "manifest.json").is_file()
    pd.testing.assert_frame_equal(again.table, first.table)


def test_old_datasets_are_dropped_but_not_one_another_process_is_writing(tmp_path, monkeypatch):
    base = tmp_path / "datasets"
    folders = [base / name for name in ("oldest", "older", "kept")]
    for age, folder in enumerate(folders):
        (folder / "parts").mkdir(parents=True)
        os.utime(folder, (1_000_000 + age, 1_000_000 + age))
    monkeypatch.setattr(loading, "DISK_DATASETS", 1)
    holder = Holder(folders[0], tmp_path / "signals")
    try:
        loading._drop_old_datasets(base, keep={folders[2]})
        assert [f.exists() for f in folders] == [True, False, True]  # the one being written stays
    finally:
        holder.release()
    held, leave = threading.Event(), threading.Event()

    def hold_in_another_thread() -> None:
        with writing(folders[0]):
            held.set()
            leave.wait(60)

    thread = threading.Thread(target=hold_in_another_thread)
    thread.start()
    try:
        assert held.wait(60)
        loading._drop_old_datasets(base, keep={folders[2]})
        assert folders[0].exists()  # a thread of this server is writing it
    finally:
        leave.set()
        thread.join(60)
    loading._drop_old_datasets(base, keep={folders[2]})
    assert [f.exists() for f in folders] == [False, False, True]


def test_disk_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv(loading.CACHE_DIR_ENV, "off")
    assert loading.cache_dir() is None
    source = sources.stage_uploads([("r.jsonl", jsonl(sample_records(2)))], root=tmp_path)
    loading.clear_cache()
    assert len(loading.load_cached(source).table) == 2


def test_load_cached_with_a_stale_key_reads_the_current_files(tmp_path, monkeypatch):
    monkeypatch.setenv(loading.CACHE_DIR_ENV, "off")
    path = tmp_path / "r.jsonl"
    path.write_bytes(jsonl(sample_records(2)))
    source = sources.source_from_path(str(path))
    first = loading.load_cached(source)
    assert loading.load_cached(source, key=first.key) is first  # pinned key: no re-read
    path.write_bytes(jsonl(sample_records(3)))
    loading.clear_cache()
    again = loading.load_cached(source, key=first.key)  # nothing kept under the old key any more
    assert len(again.table) == 3 and again.key != first.key


# --------------------------------------------------------------------------- data roots and the path box


def test_several_paths_one_per_line_make_one_source(tmp_path):
    for name in ("exp1/100.jsonl", "exp1/200.jsonl", "exp2/100.jsonl", "extra.jsonl"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(jsonl(sample_records(2)))
    text = f"{tmp_path / 'exp1'}\n  {tmp_path / 'exp*' / '100.jsonl'}  \n\n{tmp_path / 'extra.jsonl'}\n"
    source = sources.source_from_path(text)
    # in the order given, each file once (exp1/100.jsonl is named by the folder and by the glob)
    assert source.names == ("exp1/100.jsonl", "exp1/200.jsonl", "exp2/100.jsonl", "extra.jsonl")
    assert source.origin == "\n".join([str(tmp_path / "exp1"), str(tmp_path / "exp*" / "100.jsonl"),
                                       str(tmp_path / "extra.jsonl")])
    assert source.label.endswith("and 2 more")
    assert sources.followed(source).files == source.files  # Follow reads every path again
    (tmp_path / "exp1" / "300.jsonl").write_bytes(jsonl(sample_records(2)))
    assert len(sources.followed(source).files) == 5
    assert loading._grows(source)
    assert not loading._grows(sources.source_from_path(f"{tmp_path / 'extra.jsonl'}\n{tmp_path / 'exp2' / '100.jsonl'}"))
    with pytest.raises(sources.LoadError, match=r"nope: not found|not found: .*nope"):  # one bad path: no source
        sources.source_from_path(f"{tmp_path / 'exp1'}\n{tmp_path / 'nope'}")


def test_a_scored_dataset_opens_on_its_own(tmp_path):
    from scoring.engines import score_to_dataset

    (tmp_path / "b.jsonl").write_bytes(jsonl(sample_records(2)))
    score_to_dataset([tmp_path / "b.jsonl"], tmp_path / "scored", workers=1)
    assert sources.source_from_path(str(tmp_path / "scored")).kind == "dataset"
    with pytest.raises(sources.LoadError, match="a scored dataset opens on its own, not with other paths"):
        sources.source_from_path(f"{tmp_path / 'b.jsonl'}\n{tmp_path / 'scored'}")


@pytest.fixture
def roots(tmp_path, monkeypatch):
    """A data root holding one rollout file, and a secret file outside it."""
    root = tmp_path / "data"
    (root / "runs").mkdir(parents=True)
    (root / "runs" / "a.jsonl").write_bytes(jsonl(sample_records(2)))
    secret = tmp_path / "private" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0::/root:/bin/sh\n")
    monkeypatch.setenv(ROOTS_ENV, str(root))
    return root, secret


def test_the_path_box_reads_only_inside_the_roots(roots, tmp_path):
    root, secret = roots
    assert sources.source_from_path(str(root / "runs")).names == ("a.jsonl",)
    assert sources.source_from_path(str(root / "**" / "*.jsonl")).names == ("a.jsonl",)
    messages = []
    for path in (secret, secret.with_name("missing"), "/etc/passwd", "/etc/no-such-file",
                 f"{root}/../private/passwd", f"{secret.parent}/*", "~"):
        with pytest.raises(sources.LoadError) as info:
            sources.source_from_path(str(path))
        messages.append(str(info.value).replace(os.path.expanduser(str(path)), "<path>"))
    assert set(messages) == {f"<path>: outside the allowed data roots (allowed: {root.resolve()})"}
    with pytest.raises(sources.LoadError, match="not found"):  # inside the roots a missing file is said so
        sources.source_from_path(str(root / "missing.jsonl"))
    with pytest.raises(sources.LoadError, match="outside the allowed data roots"):
        sources.source_from_path(str(root / "runs"), image_root=str(secret.parent))


def test_a_symlink_inside_a_root_does_not_lead_out(roots):
    root, secret = roots
    (root / "runs" / "leak.jsonl").symlink_to(secret)
    (root / "runs" / "outside").symlink_to(secret.parent, target_is_directory=True)
    assert sources.source_from_path(str(root)).names == ("a.jsonl",)
    with pytest.raises(sources.LoadError, match="outside the allowed data roots"):
        sources.source_from_path(str(root / "runs" / "leak.jsonl"))
    with pytest.raises(sources.LoadError, match="outside the allowed data roots"):
        sources.source_from_path(str(root / "runs" / "outside" / "passwd"))


@pytest.mark.parametrize(
    ("address", "on"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("127.0.0.2", True), ("", False), (None, False),
     ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("gpu-box.lan", False)],
)
def test_the_path_box_is_off_beyond_loopback_without_roots(address, on, monkeypatch, tmp_path):
    enabled, note = sources.path_box_policy(address)
    assert enabled is on
    assert (note == sources.PATH_BOX_OFF) is (not on)
    monkeypatch.setenv(ROOTS_ENV, str(tmp_path))
    enabled, note = sources.path_box_policy(address)
    assert enabled and str(tmp_path.resolve()) in note  # with roots: on, and it says which


# --------------------------------------------------------------------------- uploads


def test_uploads_are_staged_only_when_accepted_in_a_private_session_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(uploads.UPLOAD_DIR_ENV, str(tmp_path / "uploads"))
    base = uploads.upload_dir()
    assert base.stat().st_mode & 0o777 == 0o700
    with pytest.raises(sources.LoadError, match="no rollout file"):
        sources.stage_uploads([("a.png", png_bytes()), ("notes.txt", b"x"), ("bad.zip", b"PK no zip")])
    assert list(base.iterdir()) == []  # refused: nothing was written
    folder = uploads.UploadFolder()
    assert folder.path.parent == base and folder.path.stat().st_mode & 0o777 == 0o700
    source = sources.stage_uploads([("r.jsonl", jsonl(sample_records(2)))], root=folder.path)
    assert Path(source.files[0]).is_relative_to(folder.path)
    assert all(p.stat().st_mode & 0o077 == 0 for p in folder.path.rglob("*") if p.is_dir())
    del folder  # the session's state is dropped
    gc.collect()
    assert list(base.iterdir()) == []


def test_stale_upload_folders_are_swept(tmp_path):
    old = uploads.UploadFolder(tmp_path)
    fresh = uploads.UploadFolder(tmp_path)
    os.utime(old.path, (time.time() - 7200, time.time() - 7200))
    assert uploads.sweep_uploads(tmp_path, ttl_seconds=3600) == [old.path]
    assert not old.path.exists() and fresh.path.exists()


@pytest.fixture
def server_secret(tmp_path) -> Path:
    """A real image on the server, outside any upload."""
    return write_image(tmp_path / "server" / "secret.png", (64, 64))


def write_image(path: Path, size) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(size, colour=(255, 0, 255)))
    return path


def test_an_uploaded_row_cannot_reach_the_server_files(tmp_path, server_secret):
    references = [str(server_secret), str(server_secret.with_name("missing.png")), "../../server/secret.png",
                  f"file://{server_secret}", "http://169.254.169.254/latest/x.png", "pic.png"]
    records = sample_records(len(references))
    for record, reference in zip(records, references, strict=True):
        record["image"] = reference
        record.pop("image_size", None)
    source = sources.stage_uploads([("r.jsonl", jsonl(records)), ("pic.png", png_bytes((40, 30)))],
                                   root=tmp_path / "session")
    run = loading.load(source)
    assert len(run.table) == len(references)  # every row kept
    for row_id, reference in zip(run.table.index[:-1], references[:-1], strict=True):
        image, warning = run.load_image(row_id)
        assert image is None
        assert warning == f"image '{reference}': {OUTSIDE_UPLOAD}"
    image, warning = run.load_image(run.table.index[-1])
    assert image.size == (40, 30) and warning == ""


def test_an_uploaded_zip_of_rollouts_is_a_bundle(tmp_path):
    records = sample_records(2)
    records[0]["image"], records[1]["image"] = "imgs/a.png", "/etc/x.png"
    for record in records:
        record.pop("image_size", None)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("run/rollouts.jsonl", jsonl(records))
        zf.writestr("run/imgs/a.png", png_bytes((33, 22)))
        zf.writestr("../escape.jsonl", jsonl(records))
    source = sources.stage_uploads([("bundle.zip", archive.getvalue())], root=tmp_path / "s")
    assert source.names == ("bundle.zip!run/rollouts.jsonl",) and source.image_root is None
    assert [f for f, _ in source.notes] == ["bundle.zip!../escape.jsonl"]
    run = loading.load(source)
    first, second = run.table.index
    image, warning = run.load_image(first)
    assert image.size == (33, 22) and warning == ""
    assert OUTSIDE_UPLOAD in run.load_image(second)[1]
    assert "bundle.zip!../escape.jsonl" in set(run.errors["file"])


def test_the_cache_holds_no_pickle_is_private_and_keeps_no_upload(tmp_path, monkeypatch):
    monkeypatch.setenv(loading.CACHE_DIR_ENV, str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir(mode=0o755)
    (tmp_path / "cache" / "run-0123.pkl").write_bytes(b"\x80\x04 an old pickled run")
    (tmp_path / "cache" / "run-0123").mkdir()  # a table cached by an older version
    upload = sources.stage_uploads([("r.jsonl", jsonl(sample_records(3)))], root=tmp_path / "up")
    loading.clear_cache()
    loading.load_cached(upload)
    assert not (tmp_path / "cache" / "datasets").exists()  # an upload's dataset lives in its session folder
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r.jsonl").write_bytes(jsonl(sample_records(3)))
    loading.load_cached(sources.source_from_path(str(tmp_path / "runs")))
    assert table_snapshot.wait_kept(timeout=60)  # the run's table and row ids, kept in the background
    cache = tmp_path / "cache"
    assert cache.stat().st_mode & 0o777 == 0o700
    names = {p.name for p in cache.iterdir()}
    assert "datasets" in names and names <= {"datasets", "opened"}  # older caches removed, never read
    assert not [p for p in cache.rglob("*") if p.is_file() and p.read_bytes()[:1] == b"\x80"]




@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from(["a.jsonl", "b/c.jsonl", "d.csv"]), st.one_of(st.none(), st.integers(1, 6))),
                min_size=1, max_size=25))
def test_row_ids_name_each_row_by_file_and_line_and_number_the_repeats(rows):
    table = pd.DataFrame({"source_file": pd.Categorical([f for f, _ in rows]),
                          "source_line": pd.array([n for _, n in rows], dtype="Int32")})
    seen: dict[str, int] = {}
    expected = []
    for name, line in rows:
        base = f"{name}:{'?' if line is None else line}"
        expected.append(base if base not in seen else f"{base}#{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    ids = loaded_run._row_ids(table)
    assert ids.tolist() == expected and ids.is_unique and ids.name == "row_id"


_CATEGORY_VALUES = st.lists(st.one_of(st.none(), st.sampled_from(["b", "a", "c"])), min_size=1, max_size=6)


def _as_opened(values: list) -> pd.Series:
    """A categorical as opening a dataset gives it: the values present as categories, sorted
    (none present: categories of object dtype)."""
    present = sorted({v for v in values if v is not None})
    return pd.Series(values, dtype=object).astype(pd.CategoricalDtype(pd.Index(present, dtype="str" if present else object)))


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(_CATEGORY_VALUES, min_size=2, max_size=4))
def test_tables_put_one_under_the_other_keep_the_categoricals_a_whole_table_has(parts):
    joined = loaded_run.concat_tables([pd.DataFrame({"c": _as_opened(values)}) for values in parts])
    whole = _as_opened([v for values in parts for v in values])
    pd.testing.assert_series_equal(joined["c"], whole, check_names=False)
    assert joined["c"].cat.categories.dtype == whole.cat.categories.dtype


@settings(max_examples=150, deadline=None)
@given(
    index=st.lists(st.sampled_from(["a.jsonl:1", "a.jsonl:2", "b.jsonl:1", "b.jsonl:1#1", "c:9"]), max_size=12),
    ids=st.lists(st.one_of(st.sampled_from(["a.jsonl:1", "b.jsonl:1#1", "c:9", "zz"]), st.integers(0, 3)), max_size=6),
)
def test_row_positions_are_the_first_place_of_each_id_in_any_index(index, ids):
    """Row ids are found by a scan (Arrow strings) or against the few ids hashed (any other
    index): each at its first place, -1 where absent, whatever the index's dtype."""
    from dashboard.row_lookup import row_positions

    expected = [index.index(i) if i in index else -1 for i in ids]
    for given_index in (pd.Index(index, dtype="str"), pd.Index(index, dtype=object)):
        assert row_positions(given_index, ids).tolist() == expected
    numbers = [len(i) % 7 for i in index]
    wanted = [n for n in ids if isinstance(n, int)]
    assert row_positions(pd.Index(numbers, dtype=np.int64), wanted).tolist() == [
        numbers.index(n) if n in numbers else -1 for n in wanted
    ]
