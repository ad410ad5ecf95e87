"""Data roots, self-contained uploads and bounded reads: hostile inputs get one clear message each."""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from rollout_fixtures import row, write_jsonl, write_png

from scoring.rollouts.access import (
    OUTSIDE_ROOTS,
    OUTSIDE_UPLOAD,
    ROOTS_ENV,
    SETTINGS,
    AccessDenied,
    DataAccess,
    LimitExceeded,
    Limits,
    extract_bundle,
    find_files,
    glob_regex,
    private_dir,
)
from scoring.rollouts.images import ImageProblem, ImageResolver, open_image
from scoring.rollouts.sources import Source, SourceError
from scoring.runs import score_files

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _no_roots(monkeypatch):
    monkeypatch.delenv(ROOTS_ENV, raising=False)


@pytest.fixture
def secret(tmp_path) -> Path:
    """A readable file outside the data root (as /etc/passwd would be)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "passwd"
    path.write_text("root:x:0:0:root:/root:/bin/bash\n")
    return path


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def png_bytes(size=(30, 20), colour="red", fmt="PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format=fmt)
    return buffer.getvalue()


# --------------------------------------------------------------------------- data roots


def test_roots_come_from_the_environment_resolved(monkeypatch, root, tmp_path):
    monkeypatch.setenv(ROOTS_ENV, f"{root}{os.pathsep}{tmp_path / 'other' / '..' / 'data2'}")
    access = DataAccess.from_env()
    assert access.roots == (str(root.resolve()), str((tmp_path / "data2").resolve()))
    monkeypatch.setenv(ROOTS_ENV, "")
    assert DataAccess.from_env().roots is None and not DataAccess.from_env().restricted


def test_paths_are_judged_after_resolving_symlinks_and_dotdot(root, secret):
    access = DataAccess(roots=(str(root.resolve()),))
    (root / "inside.jsonl").write_text("{}\n")
    (root / "escape.jsonl").symlink_to(secret)
    (root / "sub").mkdir()
    assert access.allows(root / "inside.jsonl")
    assert access.allows(root / "not-yet-there.jsonl")
    assert not access.allows(root / "escape.jsonl")  # a symlink inside pointing outside
    assert not access.allows(root / "sub" / ".." / ".." / "outside" / "passwd")
    assert not access.allows(Path(str(root) + "-sibling") / "x.jsonl")  # a prefix is not a parent
    assert not access.allows("/etc/passwd")
    with pytest.raises(AccessDenied, match=OUTSIDE_ROOTS):
        access.check(secret)


def test_the_refusal_is_the_same_for_present_and_missing_files(root, secret):
    access = DataAccess(roots=(str(root),))
    messages = []
    for path in (secret, secret.with_name("no-such-file"), Path("/etc/passwd"), Path("/etc/shadow-nope")):
        with pytest.raises(SourceError) as info:
            Source(path, display="X", access=access)
        messages.append(info.value.error.message())
    assert set(messages) == {f"X: {OUTSIDE_ROOTS}"}
    with pytest.raises(SourceError, match="file not found"):  # inside the roots a missing file is said so
        Source(root / "missing.jsonl", access=access)


def test_score_files_keeps_a_row_whose_image_or_instances_are_outside_the_roots(monkeypatch, root, secret):
    outside_png = write_png(secret.parent / "private.png", (64, 48))
    write_png(root / "ok.png", (10, 10))
    rows = [row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image=str(outside_png)),
            row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image="../outside/private.png"),
            row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image=str(secret.parent / "missing.png")),
            row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image="ok.png")]
    for item in rows:
        item.pop("image_size", None)
    path = write_jsonl(root / "r.jsonl", rows)
    monkeypatch.setenv(ROOTS_ENV, str(root))
    run = score_files([path], workers=1)
    assert len(run.table) == 4
    warnings = run.table["image_warning"].tolist()
    assert all(OUTSIDE_ROOTS in w for w in warnings[:3]), warnings
    assert len({w.split("'")[2] for w in warnings[:3]}) == 1  # the same words for present and missing
    assert run.table["image_ref"].iloc[:3].isna().all()
    assert run.table["image_width"].iloc[3] == 10
    outside_instances = write_jsonl(secret.parent / "instances.jsonl", [row(None, id="a")])
    run = score_files([path], instances=[outside_instances], workers=1)
    assert any(OUTSIDE_ROOTS in r for r in run.errors["reason"])
    with pytest.raises(ValueError, match=OUTSIDE_ROOTS):
        score_files([path], image_root=secret.parent, workers=1)


def test_reading_an_image_by_reference_checks_the_roots_again(root, secret):
    png = write_png(secret.parent / "private.png", (8, 8))
    resolver = ImageResolver(access=DataAccess(roots=(str(root),)))
    with pytest.raises(ImageProblem, match=OUTSIDE_ROOTS):
        open_image(str(png), resolver=resolver)  # a ref planted in a table is not trusted


# --------------------------------------------------------------------------- self-contained uploads


@pytest.mark.parametrize(
    "reference",
    ["{secret}", "{missing}", "../../outside/private.png", "../../outside/missing.png", "file://{secret}",
     "file:///etc/passwd", "http://example.invalid/x.png", "https://example.invalid/x.png", "~/x.png",
     "C:\\secret.png", "//server/share/x.png"],
)
def test_an_upload_refers_only_to_its_own_files(tmp_path, reference):
    (tmp_path / "outside").mkdir()
    secret_png = write_png(tmp_path / "outside" / "private.png", (8, 8))
    upload = tmp_path / "session" / "abc"
    upload.mkdir(parents=True)
    write_png(upload / "pic.png", (5, 6))
    value = reference.format(secret=secret_png, missing=tmp_path / "outside" / "missing.png")
    resolver = ImageResolver(access=DataAccess.upload(tmp_path / "session"), uploads={"pic.png": str(upload / "pic.png")})
    info = resolver.resolve(value, base_dirs=[str(upload)])
    assert info.ref is None and info.width is None
    assert info.warning == f"image '{value}': {OUTSIDE_UPLOAD}"  # nothing else: no hint of what exists
    assert resolver.resolve("pic.png", base_dirs=[str(upload)]).width == 5
    assert resolver.resolve("somewhere/else/pic.png", base_dirs=[str(upload)]).width == 5  # by name


# --------------------------------------------------------------------------- globs and folders


def test_glob_regex_matches_like_a_shell():
    assert glob_regex("**/*.jsonl").match("a.jsonl") and glob_regex("**/*.jsonl").match("x/y/a.jsonl")
    assert not glob_regex("*.jsonl").match("x/a.jsonl")
    assert glob_regex("step_?/[ab].json").match("step_1/a.json")
    assert not glob_regex("step_?/[ab].json").match("step_10/a.json")


def test_a_symlink_loop_under_a_glob_ends_and_lists_each_file_once(root):
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "x.jsonl").write_text("{}\n")
    (root / "a" / "b" / "loop").symlink_to(root / "a")  # a -> b -> loop -> a ...
    (root / "self").symlink_to(root)
    started = time.monotonic()
    found = find_files(f"{root}/**/*.jsonl", DataAccess(roots=(str(root),)))
    assert found == [root / "a" / "b" / "x.jsonl"]
    assert time.monotonic() - started < 5
    assert find_files(root, DataAccess()) == [root / "a" / "b" / "x.jsonl"]  # a folder walk too


def test_a_glob_stays_inside_the_roots(root, secret):
    (root / "link.jsonl").symlink_to(secret)
    (root / "real.jsonl").write_text("{}\n")
    access = DataAccess(roots=(str(root),))
    assert find_files(f"{root}/*.jsonl", access) == [root / "real.jsonl"]
    with pytest.raises(AccessDenied, match=OUTSIDE_ROOTS):
        find_files(f"{secret.parent}/*", access)
    with pytest.raises(AccessDenied, match=OUTSIDE_ROOTS):
        find_files(f"{root}/../outside/**/*", access)


def test_a_glob_stops_at_its_file_count_and_time_budget(root):
    for i in range(12):
        (root / f"{i}.jsonl").write_text("{}\n")
    with pytest.raises(LimitExceeded, match=SETTINGS["glob_files"].env):
        find_files(f"{root}/*.jsonl", DataAccess(limits=Limits(glob_files=10)))
    assert len(find_files(f"{root}/*.jsonl", DataAccess(limits=Limits(glob_files=12)))) == 12
    with pytest.raises(LimitExceeded, match=SETTINGS["glob_seconds"].env):
        find_files(f"{root}/**/*", DataAccess(limits=Limits(glob_seconds=1e-9)))


def test_limits_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("ROLLOUTSCOPE_MAX_LINE_BYTES", "1000")
    monkeypatch.setenv("ROLLOUTSCOPE_GLOB_SECONDS", "2.5")
    limits = Limits.from_env()
    assert limits.line_bytes == 1000 and limits.glob_seconds == 2.5
    assert limits.image_pixels == SETTINGS["image_pixels"].default == 40_000_000
    monkeypatch.setenv("ROLLOUTSCOPE_MAX_LINE_BYTES", "-1")
    with pytest.raises(ValueError, match="ROLLOUTSCOPE_MAX_LINE_BYTES"):
        Limits.from_env()


# --------------------------------------------------------------------------- bounded reading


def write_gzip_bomb(path: Path, line_bytes: int, before=b'{"a": 1}\n', after=b'\n{"b": 2}\n') -> Path:
    """A gzipped JSONL file whose second line is ``line_bytes`` long, written a MiB at a time."""
    block = b"x" * MIB
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(before + b'{"response": "')
        for _ in range(line_bytes // MIB):
            out.write(block)
        out.write(b'"}' + after)
    return path


def test_a_gzip_bomb_line_is_skipped_without_being_held(tmp_path):
    path = write_gzip_bomb(tmp_path / "bomb.jsonl.gz", 64 * MIB)
    assert path.stat().st_size < MIB
    source = Source(path, access=DataAccess(limits=Limits(line_bytes=MIB)))
    tracemalloc.start()
    got = list(source.records())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB while the limit is 1 MiB"
    assert [r for _, r in got if isinstance(r, dict)] == [{"a": 1}, {"b": 2}]
    [(line, error)] = [(n, r) for n, r in got if not isinstance(r, dict)]
    assert line == 2 and error.line == 2 and error.field == "response"
    assert "ROLLOUTSCOPE_MAX_LINE_BYTES" in error.reason and "skipped" in error.reason


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 60), min_size=1, max_size=12).filter(any), limit=st.integers(1, 40),
       read_bytes=st.integers(1, 16))
def test_lines_over_the_limit_become_errors_and_the_others_stay_whole(tmp_path_factory, lengths, limit, read_bytes):
    """Whatever the read size, a line (newline included) over the limit is one error at its
    number, and every other non-blank line comes out whole."""
    path = tmp_path_factory.mktemp("lines") / "l.jsonl"
    path.write_bytes(b"".join(b"y" * n + b"\n" for n in lengths))
    source = Source(path, access=DataAccess(limits=Limits(line_bytes=limit)))
    source.jsonl_read_bytes = read_bytes
    got = [item for batch in source.item_batches(5) for item in batch]
    expected = [(i, b"y" * n + b"\n") for i, n in enumerate(lengths, 1) if n > 0 and n + 1 <= limit]
    assert [(n, p) for n, p in got if isinstance(p, bytes)] == expected
    too_long = [n for n, p in got if not isinstance(p, bytes)]
    assert too_long == [i for i, n in enumerate(lengths, 1) if n + 1 > limit]


def test_a_gzipped_file_stops_at_its_decompressed_limit(tmp_path):
    path = tmp_path / "many.jsonl.gz"
    with gzip.open(path, "wb") as out:
        for i in range(200_000):
            out.write(b'{"i": %d}\n' % i)
    got = list(Source(path, access=DataAccess(limits=Limits(decompressed_bytes=MIB))).records())
    good = [r for _, r in got if isinstance(r, dict)]
    assert 50_000 < len(good) < 200_000 and good[0] == {"i": 0}
    last = got[-1][1]
    assert "ROLLOUTSCOPE_MAX_DECOMPRESSED_BYTES" in last.reason and "stopped" in last.reason


def test_a_csv_line_over_the_limit_is_one_error(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("id,response\na,short\nb," + "z" * 5000 + "\nc,fine\n")
    got = list(Source(path, access=DataAccess(limits=Limits(line_bytes=1000))).records())
    assert [r["id"] for _, r in got if isinstance(r, dict)] == ["a", "c"]
    [error] = [r for _, r in got if not isinstance(r, dict)]
    assert error.line == 3 and "ROLLOUTSCOPE_MAX_LINE_BYTES" in error.reason


def test_a_big_json_array_is_streamed_an_item_at_a_time(tmp_path):
    path = tmp_path / "big.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"[")
        for i in range(100_000):
            out.write(b'{"i": %d, "response": "' % i + b"x" * 200 + b'"},\n')
        out.write(b"{}]")
    tracemalloc.start()
    count = 0
    for index, record in Source(path).items():
        assert isinstance(record, dict) and index == count + 1
        count += 1
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 100_001
    assert peak < 8 * MIB, f"peak {peak / MIB:.1f} MiB for a document of 22 MiB"


def test_a_json_item_over_the_limit_is_an_error_naming_its_field_and_the_items_after_it_are_read(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'[{"a": 1}, {"big": "' + b"x" * (3 * MIB) + b'"}, {"b": 2}]')
    got = list(Source(path, access=DataAccess(limits=Limits(line_bytes=MIB))).items())
    assert got[0] == (1, {"a": 1}) and got[2] == (3, {"b": 2}) and len(got) == 3
    assert got[1][0] == 2 and got[1][1].field == "big"
    assert got[1][1].reason.endswith("(set ROLLOUTSCOPE_MAX_LINE_BYTES to change it); the item is skipped")


def test_rows_under_a_key_of_a_big_object_are_refused_past_the_document_limit(tmp_path):
    path = tmp_path / "wrapped.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b'{"meta": {}, "rows": [')
        for _ in range(100_000):
            out.write(b'{"response": "' + b"x" * 200 + b'"},')
        out.write(b"{}]}")
    tracemalloc.start()
    with pytest.raises(SourceError, match="ROLLOUTSCOPE_MAX_JSON_BYTES"):
        list(Source(path, access=DataAccess(limits=Limits(json_bytes=2 * MIB))).items())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 * MIB
    assert sum(1 for _ in Source(path).items()) == 100_001  # within the default limit it is read


@settings(max_examples=40, deadline=None)
@given(items=st.lists(st.one_of(st.integers(-10**30, 10**30), st.text(max_size=30),
                                st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)), max_size=20),
       block=st.integers(1, 64), indent=st.sampled_from([None, 0, 2]))
def test_streamed_json_arrays_read_as_a_whole_parse_does(tmp_path_factory, items, block, indent):
    """Whatever the block size, streaming gives what json.loads of the whole text gives."""
    path = tmp_path_factory.mktemp("arr") / "a.json"
    path.write_text(json.dumps(items, indent=indent, ensure_ascii=False), encoding="utf-8")
    from scoring.rollouts import json_window

    original = json_window.TextWindow.block_bytes
    json_window.TextWindow.block_bytes = block
    try:
        got = list(Source(path).items())
    finally:
        json_window.TextWindow.block_bytes = original
    assert [i for i, _ in got] == list(range(1, len(items) + 1))
    for (_, payload), item in zip(got, items, strict=True):
        assert payload == item if isinstance(item, dict) else "expected an object" in payload.reason


# --------------------------------------------------------------------------- containers


def test_a_json_array_saved_as_jsonl_is_read_with_one_note(tmp_path):
    rows = [row('{"answer": 7, "annotation": [0, 0, 10, 10]}'), row('{"answer": 2}', mode="answer")]
    path = tmp_path / "array.jsonl"
    path.write_text(json.dumps(rows, indent=1))
    source = Source(path)
    assert source.container == "json" and source.unit == "item"
    [note] = source.notes
    assert note.severity == "warning" and "one JSON array" in note.reason
    run = score_files([path], workers=1)
    assert len(run.table) == 2
    assert (run.errors["severity"] == "warning").sum() == 1 and (run.errors["severity"] == "error").sum() == 0


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf\n"])
@pytest.mark.parametrize("name", ["e.jsonl", "e.json", "e.csv", "e.jsonl.gz"])
def test_an_empty_file_says_so(tmp_path, content, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    with pytest.raises(SourceError) as info:
        Source(path)
    assert info.value.error.reason == "empty file"
    run = score_files([path], workers=1)
    assert run.errors["reason"].tolist() == ["empty file"]


# --------------------------------------------------------------------------- zip members and images


def zip_with_lying_header(path: Path, member: str, data: bytes, claimed: int) -> Path:
    """A zip whose member says (in both headers) it expands to ``claimed`` bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("fine.png", png_bytes((7, 7)))
        handle.writestr(member, data)
    raw = bytearray(path.read_bytes())
    name = member.encode()
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := raw.find(signature, start)) != -1:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if raw[name_at : name_at + len(name)] == name:
                struct.pack_into("<I", raw, start + offset, claimed)
            start += 4
    path.write_bytes(bytes(raw))
    return path


def test_a_zip_member_claiming_a_huge_size_is_refused_from_its_header(tmp_path, monkeypatch):
    archive = zip_with_lying_header(tmp_path / "imgs.zip", "huge.png", png_bytes((9, 9)), 3 << 30)
    assert zipfile.ZipFile(archive).getinfo("huge.png").file_size == 3 << 30
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **k: opened.append(
        getattr(name, "filename", name)) or real_open(self, name, *a, **k))
    resolver = ImageResolver(image_root=archive)
    info = resolver.resolve("huge.png")
    assert info.width is None and "ROLLOUTSCOPE_MAX_IMAGE_BYTES" in info.warning
    with pytest.raises(ImageProblem, match="ROLLOUTSCOPE_MAX_IMAGE_BYTES"):
        open_image(info.ref, resolver=resolver)
    assert "huge.png" not in opened  # judged from the header: never decompressed
    assert resolver.resolve("fine.png").width == 7
    bundle = extract_bundle(archive, private_dir(tmp_path / "out"), Limits())
    assert [p.name for p in bundle.images] == ["fine.png"]
    assert bundle.problems[0][0] == "huge.png" and "ROLLOUTSCOPE_MAX_IMAGE_BYTES" in bundle.problems[0][1]


def test_a_compressed_zip_member_is_sized_without_decompressing_it_whole(tmp_path, monkeypatch):
    noise = Image.frombytes("RGB", (1200, 1000), os.urandom(1200 * 1000 * 3))
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG", compress_level=0)
    archive = tmp_path / "i.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("a.png", buffer.getvalue())
    delivered = []
    real_read = zipfile.ZipExtFile.read

    def counting_read(self, n=-1):
        data = real_read(self, n)
        delivered.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    assert ImageResolver(image_root=archive).resolve("a.png").width == 1200
    assert sum(delivered) < MIB < len(buffer.getvalue())  # the header, not a seek to the end marker


def test_a_big_pixel_png_is_refused_before_decoding(tmp_path, monkeypatch):
    path = tmp_path / "wide.png"
    Image.new("1", (9000, 5000)).save(path)  # 45 megapixels in a few kilobytes
    assert path.stat().st_size < 200_000

    def no_decoding(self, *args, **kwargs):  # pragma: no cover - must not run
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr("PIL.ImageFile.ImageFile.load", no_decoding)
    with pytest.raises(ImageProblem, match="ROLLOUTSCOPE_MAX_IMAGE_PIXELS") as info:
        open_image(str(path))
    assert "45,000,000 pixels" in str(info.value)
    assert Image.MAX_IMAGE_PIXELS > 40_000_000  # Pillow's global is left alone


def test_an_image_is_shrunk_to_the_display_size_while_opening(tmp_path):
    path = tmp_path / "photo.jpg"
    path.write_bytes(png_bytes((1600, 1200), fmt="JPEG"))
    image = open_image(str(path), max_side=200)
    assert max(image.size) <= 200 and image.size[0] > image.size[1]
    assert image.info["source_size"] == (1600, 1200)
    assert open_image(str(path)).size == (1600, 1200)


def test_an_image_file_over_its_byte_limit_is_refused(tmp_path):
    path = write_png(tmp_path / "p.png", (50, 50))
    resolver = ImageResolver(access=DataAccess(limits=Limits(image_bytes=100)))
    with pytest.raises(ImageProblem, match="ROLLOUTSCOPE_MAX_IMAGE_BYTES"):
        open_image(str(path), resolver=resolver)


# --------------------------------------------------------------------------- bundles


def make_bundle(path: Path, rows, *, extra=()) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("run/rollouts.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        handle.writestr("imgs/a.png", png_bytes((50, 40)))
        handle.writestr("run/near.png", png_bytes((20, 10)))
        for name, data in extra:
            handle.writestr(name, data)
    return path


def bundle_rows():
    rows = [row('{"answer": 7, "annotation": [0, 0, 10, 10]}', image=image) for image in
            ("imgs/a.png", "near.png", "/abs/secret.png")]
    for item in rows:
        item.pop("image_size", None)
    return rows


def test_a_zip_of_rollouts_and_images_is_read_as_a_bundle(tmp_path):
    archive = make_bundle(tmp_path / "bundle.zip", bundle_rows(), extra=[("../evil.jsonl", "{}\n")])
    run = score_files([archive], workers=1)
    table = run.table
    assert len(table) == 3 and set(table["source_file"]) == {f"{archive}!run/rollouts.jsonl"}
    assert table["run"].iloc[0] == "bundle"
    assert table["image_width"].tolist()[:2] == [50.0, 20.0]
    refs = table["image_ref"].tolist()
    assert refs[:2] == [f"zip:{archive.resolve()}!imgs/a.png", f"zip:{archive.resolve()}!run/near.png"]
    assert open_image(refs[0]).size == (50, 40)  # the unpacked copy is gone; the archive serves it
    assert "not found" in table["image_warning"].iloc[2]
    assert any("leaves the archive" in r for r in run.errors["reason"])


def test_every_limit_applies_inside_a_bundle(tmp_path, monkeypatch):
    bomb = io.BytesIO()
    with gzip.GzipFile(fileobj=bomb, mode="wb", compresslevel=1) as out:
        out.write(b'{"response": "' + b"x" * (4 * MIB) + b'"}\n')
    archive = make_bundle(tmp_path / "b.zip", bundle_rows(), extra=[("run/bomb.jsonl.gz", bomb.getvalue())])
    monkeypatch.setenv("ROLLOUTSCOPE_MAX_LINE_BYTES", str(MIB))
    run = score_files([archive], workers=1)
    assert len(run.table) == 3
    errors = run.errors[run.errors["file"] == f"{archive}!run/bomb.jsonl.gz"]
    assert errors["line"].tolist()[0] == 1 and "ROLLOUTSCOPE_MAX_LINE_BYTES" in errors["reason"].iloc[0]
    monkeypatch.setenv("ROLLOUTSCOPE_MAX_DECOMPRESSED_BYTES", str(MIB))
    run = score_files([archive], workers=1)
    assert any("ROLLOUTSCOPE_MAX_DECOMPRESSED_BYTES" in r for r in run.errors["reason"])


def test_a_bundle_outside_the_roots_is_refused(monkeypatch, root, tmp_path):
    archive = make_bundle(tmp_path / "outside.zip", bundle_rows())
    monkeypatch.setenv(ROOTS_ENV, str(root))
    run = score_files([archive], workers=1)
    assert len(run.table) == 0 and run.errors["reason"].tolist() == [OUTSIDE_ROOTS]
    inside = make_bundle(root / "inside.zip", bundle_rows())
    assert len(score_files([inside], workers=1).table) == 3  # its own unpacked files are readable


def test_private_dir_refuses_a_folder_others_made(tmp_path):
    folder = private_dir(tmp_path / "p")
    assert folder.stat().st_mode & 0o777 == 0o700
    os.chmod(folder, 0o777)
    assert private_dir(folder).stat().st_mode & 0o777 == 0o700
    (tmp_path / "link").symlink_to(folder)
    with pytest.raises(AccessDenied, match="not a plain folder"):
        private_dir(tmp_path / "link")


def test_a_truncated_gzipped_json_array_keeps_the_items_before_the_damage(tmp_path):
    data = gzip.compress(json.dumps([{"i": i, "pad": "p" * 50} for i in range(5000)]).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    got = list(Source(path).items())
    good = [r for _, r in got if isinstance(r, dict)]
    assert len(good) > 100 and good == [{"i": i, "pad": "p" * 50} for i in range(len(good))]
    [(line, error)] = [(n, r) for n, r in got if not isinstance(r, dict)]
    assert line == len(good) + 1 and "truncated or corrupt" in error.reason
