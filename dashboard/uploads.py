"""Uploaded files: checked in memory, then staged in a private folder per session (no Streamlit here).

Nothing is written for an upload that is refused. What is accepted goes under the session's
:class:`UploadFolder` -- a folder only the server's user can enter (0700), removed when the
session's state is dropped or, by :func:`sweep_uploads`, once unused for longer than
``ROLLOUTSCOPE_UPLOAD_TTL_SECONDS``. A ``.zip`` holding rollout files is a bundle and is unpacked
within the limits of :mod:`scoring.rollouts.access`; any other ``.zip`` is the image archive.
:func:`dashboard.sources.stage_uploads` turns the result into a data source.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import io
import os
import shutil
import tempfile
import threading
import time
import weakref
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scoring.rollouts import (
    ARCHIVE_SUFFIXES,
    DataAccess,
    LimitExceeded,
    default_access,
    extract_bundle,
    image_name,
    is_bundle,
    private_dir,
    rollout_name,
)

UPLOAD_DIR_ENV = "ROLLOUTSCOPE_UPLOAD_DIR"


class UploadRefused(Exception):
    """No rollout file among the uploads could be used (one friendly sentence)."""


def upload_dir() -> Path:
    """The private folder (0700) under which each session stages its uploads
    ($ROLLOUTSCOPE_UPLOAD_DIR, else ``rolloutscope-<uid>/uploads`` in the temporary folder)."""
    configured = os.environ.get(UPLOAD_DIR_ENV, "").strip()
    if configured:
        return private_dir(configured)
    user = os.getuid() if hasattr(os, "getuid") else getpass.getuser()
    base = private_dir(Path(tempfile.gettempdir()) / f"rolloutscope-{user}")
    return private_dir(base / "uploads")


def sweep_uploads(base: str | os.PathLike, ttl_seconds: float, now: float | None = None) -> list[Path]:
    """Remove session folders under ``base`` untouched for longer than ``ttl_seconds``."""
    now = time.time() if now is None else now
    removed = []
    for folder in Path(base).glob("session-*"):
        try:
            if folder.is_dir() and not folder.is_symlink() and now - folder.stat().st_mtime > ttl_seconds:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except OSError:
            continue
    return removed


class UploadFolder:
    """One session's private staging folder: removed when the object is collected (the session
    ended), at exit, or by :func:`sweep_uploads` once past the time-to-live."""

    def __init__(self, base: str | os.PathLike | None = None):
        base = Path(base) if base is not None else upload_dir()
        sweep_uploads(base, default_access().limits.upload_ttl_seconds)
        self.path = Path(tempfile.mkdtemp(prefix="session-", dir=base))
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), True)

    def touch(self) -> None:
        """Mark the folder as in use (the time-to-live counts from here)."""
        with contextlib.suppress(OSError):
            os.utime(self.path)

    def remove(self) -> None:
        self._finalizer()

    @property
    def removed(self) -> bool:
        return not self._finalizer.alive


@dataclass
class _Upload:
    name: str
    data: bytes
    kind: str  # "rollout", "image", "archive", "bundle"


@dataclass
class StagedUploads:
    """Accepted uploads on disk: rollout files (with display names), images by name, the image
    archive, and ``(file, reason)`` of what was refused."""

    root: Path
    files: list[str]
    names: list[str]
    images: list[tuple[str, str]]
    archive: str | None
    notes: list[tuple[str, str]]


def _classify(name: str, data: bytes, access: DataAccess, refused: list[tuple[str, str]]) -> _Upload | None:
    """What an uploaded file is, judged in memory (nothing is written for a refused one)."""
    safe = PurePosixPath(name.replace("\\", "/")).name or "upload"
    lower = safe.lower()
    limits = access.limits
    if lower.endswith(ARCHIVE_SUFFIXES):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                kind = "bundle" if is_bundle(archive) else "archive"
        except (zipfile.BadZipFile, OSError) as exc:
            refused.append((safe, f"not a readable zip ({exc})"))
            return None
        return _Upload(safe, data, kind)
    if image_name(lower):
        if len(data) > limits.image_bytes:
            refused.append((safe, limits.over("image_bytes", "the image size")))
            return None
        return _Upload(safe, data, "image")
    if rollout_name(lower):
        return _Upload(safe, data, "rollout")
    refused.append((safe, "not a rollout file, image or zip; not used"))
    return None


def _write_once(target: Path, data: bytes) -> None:
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(target.name + f".{os.getpid()}.{threading.get_ident()}.part")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def stage(uploads: Iterable[tuple[str, bytes]], root: str | os.PathLike | None = None) -> StagedUploads:
    """Check uploaded ``(name, bytes)`` and, once accepted, write them under ``root`` (a private
    session folder; a fresh one by default), each in a folder named by its content's hash (so
    the same bytes uploaded again reuse it). :class:`UploadRefused` when no rollout file can be
    used -- and then nothing was written for files refused by their name or content."""
    access = default_access()
    refused: list[tuple[str, str]] = []
    accepted = [item for name, data in uploads if (item := _classify(name, data, access, refused))]
    if not any(item.kind in ("rollout", "bundle") for item in accepted):
        extra = f" (not used: {'; '.join(f'{n}: {r}' for n, r in refused)})" if refused else ""
        raise UploadRefused("no rollout file among the uploads: add a .jsonl, .json, .parquet or .csv file, "
                            "or a .zip holding them" + extra)
    root = private_dir(root) if root is not None else UploadFolder().path
    staged = StagedUploads(root, [], [], [], None, list(refused))
    for item in accepted:
        folder = root / hashlib.sha256(item.data).hexdigest()[:20]
        if item.kind == "bundle":
            private_dir(folder)
            try:
                bundle = extract_bundle(io.BytesIO(item.data), folder / item.name[: -len(".zip")], access.limits)
            except (LimitExceeded, zipfile.BadZipFile, OSError) as exc:
                staged.notes.append((item.name, str(exc)))
                continue
            staged.notes.extend((f"{item.name}!{member}", reason) for member, reason in bundle.problems)
            for path in sorted(bundle.rollouts):
                staged.files.append(str(path))
                staged.names.append(f"{item.name}!{bundle.members[str(path)]}")
            staged.images.extend((PurePosixPath(bundle.members[str(p)]).name, str(p)) for p in bundle.images)
            continue
        target = folder / item.name
        _write_once(target, item.data)
        if item.kind == "archive":
            staged.archive = staged.archive or str(target)
        elif item.kind == "image":
            staged.images.append((item.name, str(target)))
        else:
            staged.files.append(str(target))
            staged.names.append(item.name)
    if not staged.files:
        raise UploadRefused(
            "no rollout file could be read from the uploads: " + "; ".join(f"{f}: {r}" for f, r in staged.notes)
        )
    return staged
