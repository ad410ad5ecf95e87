"""Image resolution: where a row's image is, and its size from the header.

A row's ``image`` (or the first of ``images``) may be

- a path, relative to the rollout file (or the instance file it came from), or to
  the image folder or ``.zip`` archive the user gives (``image_root``), or absolute;
- a file name among uploaded files (``uploads``: name -> bytes or path);
- a ``data:`` URL;
- a ``{"path": ...}`` / ``{"bytes": ...}`` record as Hugging Face datasets store
  images (bytes win when both are present), or ``{"url": ...}``.

:meth:`ImageResolver.resolve` returns an :class:`ImageInfo`: a reference string
the dashboard can open later (:func:`open_image`), the size read from the image
header when the caller needs it (Pillow's lazy ``Image.open`` reads the header
only; no pixels are decoded), and a warning when the image is missing or
unreadable. A bad image is never an exception: the row is scored without it.

Decompression bombs: an image with more pixels than ``PIL.Image.MAX_IMAGE_PIXELS``
is refused with a message saying so (both when sizing and when opening); opening
for display also refuses more than ``Limits.image_pixels`` (a lower bound, checked
on each open from the header -- Pillow's global is left alone), and shrinks the
image to ``max_side`` while decoding where the format allows (JPEG draft mode).
An image file, zip member or upload larger than ``Limits.image_bytes`` is refused
from its size (a zip member's from its header) before any byte is read.

Where images may come from follows the resolver's
:class:`~scoring.rollouts.access.DataAccess`: outside the data roots nothing is
looked at, and an upload's rows may only name files uploaded with them.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

from .access import AccessDenied, DataAccess, LimitExceeded, default_access, read_capped

INLINE_DATA_URL = "inline:data-url"
INLINE_BYTES = "inline:bytes"
_CACHE_LIMIT = 50_000


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """Where a row's image is and how big it is.

    ``ref``: an absolute path, ``zip:<archive>!<member>``, ``upload:<name>``,
    ``inline:data-url`` or ``inline:bytes`` (the image lives in the row itself),
    or None when the row has no usable image. ``width``/``height`` are set when
    the size was read from the image. ``warning`` is a plain reason or None.
    """

    ref: str | None = None
    width: float | None = None
    height: float | None = None
    warning: str | None = None


class ImageProblem(ValueError):
    """An image cannot be opened (missing, unreadable, or over the pixel limit)."""


def first_image(value: Any) -> Any:
    """``images`` lists take their first entry."""
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return value


def bomb_message(exc: BaseException) -> str:
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    return (
        f"image refused by Pillow's decompression-bomb guard ({exc}); the pixel limit is "
        f"{limit:,} (PIL.Image.MAX_IMAGE_PIXELS)"
    )


def _header_size(source: Any, *, check_end: bool = True) -> tuple[float, float]:
    """Size from the header only (lazy open); raises ImageProblem with a plain reason.

    ``check_end``: look for the format's end marker (a seek to the end: cheap for a file or
    bytes, a whole decompression for a compressed zip member, which is therefore not checked).
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(source) as image:
                width, height = image.size
                truncated = _truncated(image) if check_end else None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageProblem(bomb_message(exc)) from None
    except UnidentifiedImageError:
        raise ImageProblem("not a readable image (unknown or corrupt format)") from None
    except FileNotFoundError:
        raise ImageProblem("image file not found") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageProblem(f"cannot read image header ({exc})") from None
    if width <= 0 or height <= 0:
        raise ImageProblem(f"image header gives a size of {width}x{height}")
    if truncated:
        raise ImageProblem(f"image file is truncated (no {truncated} end marker); it cannot be drawn")
    return float(width), float(height)


#: How a complete file of these formats ends (a cheap check instead of decoding the pixels).
_END_MARKERS = {"PNG": (b"IEND\xaeB`\x82", 12), "JPEG": (b"\xff\xd9", 64), "GIF": (b";", 1)}


def _truncated(image) -> str | None:
    """The format name when the file lacks its end marker (a truncated write or download)."""
    marker = _END_MARKERS.get(image.format or "")
    stream = getattr(image, "fp", None)
    if marker is None or stream is None:
        return None
    end, tail = marker
    try:
        position = stream.tell()
        stream.seek(0, io.SEEK_END)
        size = stream.tell()
        stream.seek(max(0, size - tail))
        data = stream.read(tail)
        stream.seek(position)
    except (OSError, ValueError, AttributeError):
        return None
    return None if end in data else image.format


def decode_data_url(url: str) -> bytes:
    """The bytes of a ``data:`` URL; raises ImageProblem when malformed."""
    head, sep, data = url.partition(",")
    if not sep:
        raise ImageProblem("data: URL has no ',' before its data")
    if head.endswith(";base64"):
        try:
            return base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ImageProblem(f"data: URL is not valid base64 ({exc})") from None
    return unquote(data).encode("latin-1", errors="replace")


def _bytes_of(value: Any) -> bytes | None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str) and value:
        if value.startswith("data:"):
            return decode_data_url(value)
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ImageProblem("'bytes' holds a string that is not base64") from None
    return None


class ImageResolver:
    """Resolves image values for rows; caches lookups and header sizes.

    ``image_root``: a folder or a ``.zip`` archive to look in besides the rollout
    file's folder. ``uploads``: file name -> bytes or path (files the app received).
    ``access``: where images may be read from and how big they may be (default: the
    environment's). Picklable (the zip handle is reopened in each process).
    """

    def __init__(
        self,
        image_root: str | os.PathLike | None = None,
        uploads: Mapping[str, bytes | str | os.PathLike] | None = None,
        access: DataAccess | None = None,
    ):
        self.access = access or default_access()
        if image_root and not self.access.allows(image_root):
            raise ValueError(f"image folder {image_root}: {self.access.refusal()}")
        self.image_root = str(Path(image_root).resolve()) if image_root else None
        self.root_is_zip = bool(self.image_root and zipfile.is_zipfile(self.image_root))
        if self.image_root and not self.root_is_zip and not os.path.isdir(self.image_root):
            raise ValueError(f"image folder not found: {image_root} (expected a folder or a .zip archive)")
        self.uploads = dict(uploads or {})
        self._upload_names = {PurePosixPath(name.replace("\\", "/")).name: name for name in self.uploads}
        self._zip: zipfile.ZipFile | None = None
        self._zip_members: dict[str, str] | None = None
        self._zip_basenames: dict[str, str | None] | None = None
        self._where: dict[tuple, tuple[str | None, str | None]] = {}
        self._sizes: dict[str, tuple[float, float] | str] = {}

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_zip"] = None
        state["_where"] = {}
        state["_sizes"] = {}
        return state

    # -- lookup -------------------------------------------------------------
    def _zipfile(self) -> zipfile.ZipFile:
        if self._zip is None:
            self._zip = zipfile.ZipFile(self.image_root)
            names = [n for n in self._zip.namelist() if not n.endswith("/")]
            self._zip_members = {n: n for n in names}
            basenames: dict[str, str | None] = {}
            for name in names:
                base = PurePosixPath(name).name
                basenames[base] = None if base in basenames else name  # None: ambiguous
            self._zip_basenames = basenames
        return self._zip

    def _zip_member(self, value: str) -> str | None:
        self._zipfile()
        clean = value.replace("\\", "/").lstrip("./") if not value.startswith("../") else value
        member = self._zip_members.get(clean) or self._zip_members.get(value)
        if member:
            return member
        # the archive may hold one top-level folder, or the path may carry extra folders
        for name in self._zip_members:
            if name.endswith("/" + clean):
                return name
        return self._zip_basenames.get(PurePosixPath(clean).name)

    def _locate(self, value: str, base_dirs: tuple[str, ...]) -> tuple[str | None, str | None]:
        key = (value, base_dirs)
        hit = self._where.get(key)
        if hit is not None:
            return hit
        result = self._locate_uncached(value, base_dirs)
        if len(self._where) > _CACHE_LIMIT:
            self._where.clear()
        self._where[key] = result
        return result

    def _locate_uncached(self, value: str, base_dirs: tuple[str, ...]) -> tuple[str | None, str | None]:
        access = self.access
        try:
            access.check_reference(value)
        except AccessDenied:
            return None, f"image '{value}': {access.refusal()}"
        text = value
        if text.startswith("file://"):
            text = unquote(text[7:])
        looked: list[str] = []
        refused = False
        path = Path(text).expanduser()
        if path.is_absolute():
            candidates = [path]
            looked.append(str(path.parent))
        else:
            candidates = [Path(base) / path for base in base_dirs]
            looked.extend(base_dirs)
        if self.image_root and not self.root_is_zip:
            root = Path(self.image_root)
            candidates.extend((root / path, root / path.name) if not path.is_absolute() else (root / path.name,))
            looked.append(self.image_root)
        for candidate in candidates:
            if not access.allows(candidate):
                refused = True  # judged from the path alone: nothing outside the roots is looked at
                continue
            if candidate.is_file():
                return str(candidate.resolve()), None
        if self.root_is_zip:
            member = self._zip_member(text)
            if member:
                return f"zip:{self.image_root}!{member}", None
            looked.append(self.image_root)
        if self.uploads:
            name = (
                text
                if text in self.uploads
                else self._upload_names.get(PurePosixPath(text.replace("\\", "/")).name)
            )
            if name is not None:
                return f"upload:{name}", None
            looked.append("uploaded files")
        if refused:
            return None, f"image '{value}': {access.refusal()}"
        if access.self_contained:
            looked = ["the uploaded files"]
        where = ", ".join(dict.fromkeys(looked)) or "nowhere"
        return None, f"image not found: '{value}' (looked in {where})"

    # -- size ---------------------------------------------------------------
    def _size_of_ref(self, ref: str) -> tuple[float, float]:
        cached = self._sizes.get(ref)
        if cached is None:
            try:
                cached = _header_size_of_ref(ref, self)
            except ImageProblem as exc:
                cached = str(exc)
            if len(self._sizes) > _CACHE_LIMIT:
                self._sizes.clear()
            self._sizes[ref] = cached
        if isinstance(cached, str):
            raise ImageProblem(cached)
        return cached

    # -- public -------------------------------------------------------------
    def resolve(self, value: Any, *, base_dirs: Sequence[str] = (), need_size: bool = True) -> ImageInfo:
        """Resolve one image value; never raises for a bad image (see ``warning``)."""
        value = first_image(value)
        if value is None or value == "":
            return ImageInfo()
        try:
            return self._resolve(value, tuple(base_dirs), need_size)
        except ImageProblem as exc:
            return ImageInfo(warning=str(exc))

    def _resolve(self, value: Any, base_dirs: tuple[str, ...], need_size: bool) -> ImageInfo:
        inline: bytes | None = None
        ref: str | None = None
        if isinstance(value, Mapping):
            raw = value.get("bytes")
            if raw:
                inline = _bytes_of(raw)
                ref = INLINE_BYTES
            elif value.get("path"):
                value = str(value["path"])
            elif value.get("url") or value.get("image_url"):
                url = value.get("url") or value.get("image_url")
                if isinstance(url, Mapping):
                    url = url.get("url")
                value = str(url or "")
            else:
                keys = ", ".join(map(str, value)) or "none"
                raise ImageProblem(f"image record has no 'path' or 'bytes' (keys: {keys})")
        elif isinstance(value, (bytes, bytearray, memoryview)):
            inline = bytes(value)
            ref = INLINE_BYTES
        elif not isinstance(value, str):
            raise ImageProblem(
                f"image value has type {type(value).__name__}, expected a path, data: URL or record"
            )
        if inline is None and isinstance(value, str):
            if value.startswith("data:"):
                inline = decode_data_url(value)
                ref = INLINE_DATA_URL
            elif value.startswith(("http://", "https://")):
                if self.access.self_contained:
                    return ImageInfo(warning=f"image '{value}': {self.access.refusal()}")
                return ImageInfo(ref=value, warning="remote image URLs are not fetched; size unknown")
        if inline is not None:
            if not need_size:
                return ImageInfo(ref=ref)
            width, height = _header_size(io.BytesIO(inline))
            return ImageInfo(ref=ref, width=width, height=height)
        ref, warning = self._locate(value, base_dirs)
        if ref is None:
            return ImageInfo(warning=warning)
        if not need_size:
            return ImageInfo(ref=ref)
        try:
            width, height = self._size_of_ref(ref)
        except ImageProblem as exc:
            return ImageInfo(ref=ref, warning=f"{exc}: '{value}'")
        return ImageInfo(ref=ref, width=width, height=height)

    def read_bytes(self, ref: str) -> bytes:
        """The bytes behind a path, ``zip:`` or ``upload:`` reference (at most ``image_bytes``;
        a zip member is judged from its header first and never read past the limit)."""
        limits = self.access.limits
        try:
            if ref.startswith("zip:"):
                archive, _, member = ref[4:].rpartition("!")
                handle = self._archive(archive)
                info = handle.getinfo(member)
                if info.file_size > limits.image_bytes:
                    raise LimitExceeded(limits.over("image_bytes", f"the image's size ({info.file_size:,} bytes)"))
                with handle.open(info) as stream:
                    return read_capped(stream, limits.image_bytes, "the image", "image_bytes", limits)
            if ref.startswith("upload:"):
                item = self.uploads[ref[7:]]
                if isinstance(item, (bytes, bytearray, memoryview)):
                    data = bytes(item)
                    if len(data) > limits.image_bytes:
                        raise LimitExceeded(limits.over("image_bytes", f"the image's size ({len(data):,} bytes)"))
                    return data
                ref_path = Path(item)
            else:
                ref_path = self.access.check(ref, shown="the image")
            with open(ref_path, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                if size > limits.image_bytes:
                    raise LimitExceeded(limits.over("image_bytes", f"the image's size ({size:,} bytes)"))
                return read_capped(stream, limits.image_bytes, "the image", "image_bytes", limits)
        except (AccessDenied, LimitExceeded) as exc:
            raise ImageProblem(str(exc)) from None

    def _archive(self, archive: str) -> zipfile.ZipFile:
        """The open zip for ``archive`` (the image root's handle is kept; others are opened)."""
        if self.image_root == archive:
            return self._zipfile()
        self.access.check(archive, shown="the image archive")
        return zipfile.ZipFile(archive)


def _header_size_of_ref(ref: str, resolver: ImageResolver) -> tuple[float, float]:
    limits = resolver.access.limits
    if ref.startswith("zip:"):
        archive, _, member = ref[4:].rpartition("!")
        try:
            handle = resolver._archive(archive)
            info = handle.getinfo(member)
            if info.file_size > limits.image_bytes:
                raise ImageProblem(limits.over("image_bytes", f"the image's size ({info.file_size:,} bytes)"))
            with handle.open(info) as stream:
                return _header_size(stream, check_end=info.compress_type == zipfile.ZIP_STORED)
        except AccessDenied as exc:
            raise ImageProblem(str(exc)) from None
        except (KeyError, zipfile.BadZipFile, OSError) as exc:
            raise ImageProblem(f"cannot read '{member}' from the archive ({exc})") from None
    if ref.startswith("upload:"):
        item = resolver.uploads[ref[7:]]
        if isinstance(item, (bytes, bytearray, memoryview)):
            return _header_size(io.BytesIO(bytes(item)))
        return _header_size(str(item))
    if not resolver.access.allows(ref):
        raise ImageProblem(resolver.access.refusal())
    return _header_size(ref)


def open_image(
    ref: str | None,
    *,
    image_value: Any = None,
    resolver: ImageResolver | None = None,
    uploads: Mapping[str, bytes | str | os.PathLike] | None = None,
    max_side: int | None = None,
):
    """Open an image for display from a table's ``image_ref`` (pixels decoded).

    Inline refs (``inline:...``) need the row's original ``image`` value as
    ``image_value``. Raises :class:`ImageProblem` with a plain reason: for images
    above the resolver's ``Limits.image_pixels`` (judged from the header, before
    decoding) or Pillow's pixel limit, and for files above ``Limits.image_bytes``.
    ``max_side``: shrink the image to fit a square of that side -- while decoding
    where the format can (JPEG draft mode), else right after; the size of the file's
    image is kept in ``image.info["source_size"]``.
    """
    from PIL import Image, UnidentifiedImageError

    if ref is None:
        raise ImageProblem("the row has no image")
    resolver = resolver or ImageResolver(uploads=uploads)
    limits = resolver.access.limits
    if ref.startswith("inline:"):
        raw = first_image(image_value)
        if isinstance(raw, Mapping):
            raw = raw.get("bytes") or (raw.get("url") if isinstance(raw.get("url"), str) else None)
        data = _bytes_of(raw)
        if data is None:
            raise ImageProblem("inline image: pass the row's image value to open it")
    elif ref.startswith(("http://", "https://")):
        raise ImageProblem("remote image URLs are not fetched")
    else:
        try:
            data = resolver.read_bytes(ref)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ImageProblem(f"cannot read image {ref} ({exc})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > limits.image_pixels:
                raise ImageProblem(
                    limits.over("image_pixels", f"the image's {width:,} x {height:,} = {width * height:,} pixels")
                )
            if max_side and max(width, height) > max_side:
                scale = max_side / max(width, height)
                image.draft("RGB", (max(1, int(width * scale)), max(1, int(height * scale))))
            image.load()
    except ImageProblem:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageProblem(bomb_message(exc)) from None
    except UnidentifiedImageError:
        raise ImageProblem(f"not a readable image (unknown or corrupt format): {ref}") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageProblem(f"cannot decode image {ref} ({exc})") from None
    if max_side and max(image.size) > max_side:
        image.thumbnail((max_side, max_side), reducing_gap=2.0)
    image.info["source_size"] = (width, height)
    return image
