"""Thumbnails kept on disk, bounded in bytes, the least recently used removed first (no Streamlit).

A thumbnail is found again by a key naming everything that shapes it: the row (its id, and the
size and modification time of the rollout file it came from), the image (its reference, size and
modification time), the drawing options (mode, tile size, layers, scoring options) and the code
version (:func:`code_version`: the scorer's, the overlay's and the gallery's sources). Change any
of them and the key changes, so nothing stale is ever shown; what is no longer asked for ages out.

Where: ``thumbnails/`` in the app's cache folder (``$ROLLOUTSCOPE_CACHE_DIR``, private: 0700,
owner-checked, files 0600), or for an upload in its session's private folder, removed with it.
With the cache folder off, a private temporary folder of this process. How much:
``$ROLLOUTSCOPE_THUMBNAIL_CACHE_MB`` (default :data:`DEFAULT_MB`; ``0`` keeps nothing). When a
write takes the folder past the bound, the least recently used files go until it is under 90% of
it. Last use is a file's modification time (touched on every hit), so the order survives a
restart; several servers sharing the folder each keep the bound as they see it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scoring.rollouts import private_dir

from .. import loading

log = logging.getLogger("rolloutscope.dashboard.gallery")

ENV = "ROLLOUTSCOPE_THUMBNAIL_CACHE_MB"
DEFAULT_MB = 500
FOLDER = "thumbnails"
SUFFIX = ".jpg"
#: After an eviction the folder holds at most this share of the bound.
LOW_WATER = 0.9


def max_bytes_from_env(env: dict[str, str] | None = None) -> int:
    """The bound in bytes from ``$ROLLOUTSCOPE_THUMBNAIL_CACHE_MB`` (a bad value: the default)."""
    text = (env if env is not None else os.environ).get(ENV, "").strip()
    try:
        megabytes = float(text) if text else DEFAULT_MB
    except ValueError:
        log.warning("%s=%r is not a number of megabytes; using %d", ENV, text, DEFAULT_MB)
        megabytes = DEFAULT_MB
    return max(0, int(megabytes * 1e6))


_CODE: str | None = None


def code_version() -> str:
    """A hash of what draws a thumbnail: the scoring code (:func:`dashboard.loading.code_version`),
    the overlay and the gallery modules."""
    global _CODE
    if _CODE is None:
        digest = hashlib.sha256(loading.code_version().encode())
        here = Path(__file__).resolve().parent
        for path in sorted([*here.glob("*.py"), *(here.parent / "overlay").glob("*.py")]):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        _CODE = digest.hexdigest()[:16]
    return _CODE


def key_of(*parts: Any) -> str:
    """The cache key of a thumbnail from what shapes it (JSON-able parts) and the code version."""
    text = json.dumps([code_version(), *parts], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ThumbnailCache:
    """Encoded thumbnails by key in ``folder``, at most ``max_bytes`` of them (0: none kept)."""

    def __init__(self, folder: str | os.PathLike, max_bytes: int) -> None:
        self.folder = Path(folder)
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._index: dict[str, list[float]] | None = None  # name -> [bytes, last use]
        self._held = 0

    def __repr__(self) -> str:
        return f"ThumbnailCache({str(self.folder)!r}, max_bytes={self.max_bytes})"

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / (key + SUFFIX)

    def _load_index(self) -> dict[str, list[float]]:
        """What the folder holds (read once per process)."""
        if self._index is None:
            index: dict[str, list[float]] = {}
            if self.folder.is_dir():
                for shard in os.scandir(self.folder):
                    if not shard.is_dir(follow_symlinks=False):
                        continue
                    for entry in os.scandir(shard.path):
                        if entry.name.endswith(SUFFIX) and entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            index[entry.name[: -len(SUFFIX)]] = [float(info.st_size), info.st_mtime]
            self._index = index
            self._held = int(sum(size for size, _ in index.values()))
        return self._index

    @property
    def held_bytes(self) -> int:
        with self._lock:
            self._load_index()
            return self._held

    def __len__(self) -> int:
        with self._lock:
            return len(self._load_index())

    def get(self, key: str) -> bytes | None:
        """The thumbnail stored under ``key`` (its last use becomes now), or None."""
        if self.max_bytes <= 0:
            return None
        path = self._path(key)
        try:
            data = path.read_bytes()
            os.utime(path)
        except OSError:
            with self._lock:
                gone = self._load_index().pop(key, None)
                if gone is not None:
                    self._held -= int(gone[0])
            return None
        with self._lock:
            index = self._load_index()
            entry = index.get(key)
            if entry is None:  # written by another server sharing the folder
                index[key] = [float(len(data)), time.time()]
                self._held += len(data)
            else:
                entry[1] = time.time()
        return data

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (atomically), then keep the folder within the bound.
        A thumbnail larger than the whole bound is not stored; a full disk only logs."""
        if self.max_bytes <= 0 or len(data) > self.max_bytes:
            return
        path = self._path(key)
        try:
            private_dir(self.folder)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=SUFFIX)  # 0600
            try:
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning("could not keep a thumbnail in %s: %s", self.folder, exc)
            return
        with self._lock:
            index = self._load_index()
            previous = index.get(key)
            if previous is not None:
                self._held -= int(previous[0])
            index[key] = [float(len(data)), time.time()]
            self._held += len(data)
            if self._held > self.max_bytes:
                self._evict(int(self.max_bytes * LOW_WATER))

    def _evict(self, target: int) -> None:
        """Remove the least recently used thumbnails until at most ``target`` bytes are held."""
        index = self._index or {}
        for key, (size, _used) in sorted(index.items(), key=lambda item: item[1][1]):
            if self._held <= target:
                break
            self._path(key).unlink(missing_ok=True)
            del index[key]
            self._held -= int(size)


_CACHES: dict[tuple[str, int], ThumbnailCache] = {}
_CACHES_LOCK = threading.Lock()
_SCRATCH: Path | None = None


def folder_for(source: Any) -> Path:
    """Where a source's thumbnails go: an upload's in its session folder, others in the app's
    cache folder (a private temporary folder of this process when that is off)."""
    global _SCRATCH
    upload_root = getattr(source, "upload_root", None)
    if getattr(source, "kind", None) == "upload" and upload_root:
        return Path(upload_root) / ".thumbnails"
    folder = loading.cache_dir()
    if folder is not None:
        return private_dir(folder) / FOLDER
    if _SCRATCH is None:
        _SCRATCH = Path(tempfile.mkdtemp(prefix="rolloutscope-thumbnails-"))
    return _SCRATCH


def cache_for(source: Any, max_bytes: int | None = None) -> ThumbnailCache:
    """The process-wide cache of ``source``'s folder (one object per folder and bound)."""
    folder = folder_for(source)
    bound = max_bytes_from_env() if max_bytes is None else int(max_bytes)
    with _CACHES_LOCK:
        cache = _CACHES.get((str(folder), bound))
        if cache is None:
            cache = _CACHES[(str(folder), bound)] = ThumbnailCache(folder, bound)
        return cache


__all__ = [
    "DEFAULT_MB",
    "ENV",
    "ThumbnailCache",
    "cache_for",
    "code_version",
    "folder_for",
    "key_of",
    "max_bytes_from_env",
]
