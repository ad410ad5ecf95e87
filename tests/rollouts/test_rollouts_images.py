"""Image resolution for every source kind, header-only sizes, and the failure cases."""

from __future__ import annotations

import base64
import io
import zipfile

import pytest
from PIL import Image
from rollout_fixtures import write_png

from scoring.rollouts.images import ImageProblem, ImageResolver, open_image


def _png_bytes(size=(30, 20)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_path_relative_to_the_rollout_file(tmp_path):
    (tmp_path / "imgs").mkdir()
    write_png(tmp_path / "imgs" / "a.png", (64, 48))
    info = ImageResolver().resolve("imgs/a.png", base_dirs=[str(tmp_path)])
    assert info.ref == str((tmp_path / "imgs" / "a.png").resolve())
    assert (info.width, info.height) == (64.0, 48.0)
    assert info.warning is None


def test_absolute_path_and_file_url(tmp_path):
    path = write_png(tmp_path / "b.png", (10, 11))
    assert ImageResolver().resolve(str(path)).width == 10
    assert ImageResolver().resolve(f"file://{path}").height == 11


def test_path_relative_to_an_image_folder_or_by_file_name(tmp_path):
    root = tmp_path / "images"
    (root / "sub").mkdir(parents=True)
    write_png(root / "sub" / "c.png", (5, 6))
    resolver = ImageResolver(image_root=root)
    assert resolver.resolve("sub/c.png", base_dirs=["/nowhere"]).width == 5
    assert resolver.resolve("/old/machine/path/c.png").width is None  # not under root by that path...
    write_png(root / "d.png", (7, 8))
    assert resolver.resolve("/old/machine/path/d.png").width == 7  # ...but found by its file name


def test_images_inside_a_zip_archive(tmp_path):
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("dataset/imgs/e.png", _png_bytes((12, 13)))
    resolver = ImageResolver(image_root=archive)
    exact = resolver.resolve("dataset/imgs/e.png")
    assert exact.ref == f"zip:{archive.resolve()}!dataset/imgs/e.png"
    assert (exact.width, exact.height) == (12.0, 13.0)
    assert resolver.resolve("imgs/e.png").width == 12  # a suffix of the member path
    assert resolver.resolve("other/e.png").width == 12  # by file name
    assert open_image(exact.ref, resolver=resolver).size == (12, 13)


def test_uploaded_files_by_name(tmp_path):
    resolver = ImageResolver(uploads={"f.png": _png_bytes((3, 4))})
    info = resolver.resolve("/some/where/f.png")
    assert info.ref == "upload:f.png" and info.width == 3
    assert open_image(info.ref, uploads={"f.png": _png_bytes((3, 4))}).size == (3, 4)


def test_data_urls_and_hf_records_and_lists(tmp_path):
    data = _png_bytes((21, 22))
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    resolver = ImageResolver()
    assert resolver.resolve(url).ref == "inline:data-url"
    assert resolver.resolve(url).width == 21
    assert resolver.resolve({"bytes": data, "path": "ignored.png"}).height == 22
    assert resolver.resolve({"bytes": base64.b64encode(data).decode()}).width == 21
    path = write_png(tmp_path / "g.png", (8, 9))
    assert resolver.resolve({"path": "g.png", "bytes": None}, base_dirs=[str(tmp_path)]).width == 8
    assert resolver.resolve([{"path": str(path)}, "second.png"]).width == 8  # images: the first
    assert resolver.resolve({"url": url}).width == 21
    assert open_image("inline:data-url", image_value=url).size == (21, 22)
    assert open_image("inline:bytes", image_value={"bytes": data}).size == (21, 22)


def test_size_is_read_from_the_header_without_decoding(tmp_path, monkeypatch):
    path = write_png(tmp_path / "h.png", (40, 30))

    def no_decoding(self, *args, **kwargs):  # pragma: no cover - must not run
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(Image.Image, "load", no_decoding)
    monkeypatch.setattr("PIL.ImageFile.ImageFile.load", no_decoding)
    assert ImageResolver().resolve(str(path)).width == 40


def test_no_size_needed_means_no_image_read(tmp_path):
    path = tmp_path / "not_really.png"
    path.write_bytes(b"garbage")
    info = ImageResolver().resolve(str(path), need_size=False)
    assert info.ref == str(path) and info.warning is None


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: None, "image not found: 'x.png'"),
        (lambda p: (p / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n not really"), "not a readable image"),
        (lambda p: (p / "x.png").write_bytes(b"hello"), "not a readable image"),
        (lambda p: (p / "x.png").write_bytes(_png_bytes()[:-30]), "truncated"),
    ],
    ids=["missing", "corrupt-header", "not-an-image", "truncated"],
)
def test_bad_images_are_warnings_not_failures(tmp_path, make, reason):
    make(tmp_path)
    info = ImageResolver().resolve("x.png", base_dirs=[str(tmp_path)])
    assert info.width is None
    assert reason in info.warning


def test_other_bad_values(tmp_path):
    resolver = ImageResolver()
    assert "not fetched" in resolver.resolve("https://example.com/a.png").warning
    assert "no 'path' or 'bytes'" in resolver.resolve({"name": "a"}).warning
    assert "has type int" in resolver.resolve(5).warning
    assert (
        "not valid base64" in resolver.resolve("data:image/png;base64,@@@").warning
        or "not a readable image" in resolver.resolve("data:image/png;base64,@@@").warning
    )
    assert resolver.resolve(None).ref is None and resolver.resolve([]).warning is None
    with pytest.raises(ValueError, match="image folder not found"):
        ImageResolver(image_root=tmp_path / "nope")


def test_decompression_bomb_is_refused_with_a_clear_message(tmp_path, monkeypatch):
    path = write_png(tmp_path / "big.png", (200, 200))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    info = ImageResolver().resolve(str(path))
    assert info.width is None
    assert "decompression-bomb guard" in info.warning and "1,000" in info.warning
    with pytest.raises(ImageProblem, match="decompression-bomb guard"):
        open_image(str(path))


def test_open_image_errors(tmp_path):
    with pytest.raises(ImageProblem, match="no image"):
        open_image(None)
    with pytest.raises(ImageProblem, match="cannot read image"):
        open_image(str(tmp_path / "missing.png"))
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"nope")
    with pytest.raises(ImageProblem, match="not a readable image"):
        open_image(str(bad))
    with pytest.raises(ImageProblem, match="pass the row's image value"):
        open_image("inline:bytes")


def test_resolver_pickles_without_open_handles(tmp_path):
    import pickle

    archive = tmp_path / "i.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("a.png", _png_bytes())
    resolver = ImageResolver(image_root=archive)
    resolver.resolve("a.png")
    clone = pickle.loads(pickle.dumps(resolver))
    assert clone.resolve("a.png").width == 30
