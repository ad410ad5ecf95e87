"""What may be read, and how much: data roots, self-contained uploads, resource limits.

A shared server reads files for people who must not see the rest of the machine,
and any input may be hostile (a gzip bomb, a zip member claiming gigabytes, a
glob over a symlink loop). This module holds the rules every reader follows:

- :class:`Limits` -- every bound on work, with its default and the environment
  variable that changes it, named once here;
- :class:`DataAccess` -- where files may be read from: anywhere (the default on a
  laptop), only inside ``ROLLOUTSCOPE_DATA_ROOTS`` (judged after resolving
  symlinks and ``..``), or only inside one upload (*self-contained*: no absolute
  paths, no ``file://`` or ``http(s)://`` references at all);
- :func:`find_files` -- a glob/folder walk that never follows symlinked folders,
  stays inside the roots and stops at a file-count and time budget;
- :func:`extract_bundle` -- a zip of rollout files and images unpacked with every
  member checked from its header first and never read past its limit;
- :func:`private_dir` -- folders only their owner can enter (uploads, caches).

A refusal never says whether the refused path exists: the message is the same
for a missing file and a present one (:data:`OUTSIDE_ROOTS`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

ROOTS_ENV = "ROLLOUTSCOPE_DATA_ROOTS"
#: The one message for a path outside the data roots (whether or not it exists).
OUTSIDE_ROOTS = "outside the allowed data roots"
#: The one message for a reference an upload may not follow (whether or not it exists).
OUTSIDE_UPLOAD = (
    "refers outside the upload: an uploaded file's images and instances are looked up only "
    "among the files uploaded with it"
)

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

#: Rollout file name endings (gzipped too); the rest of a bundle is images or skipped.
ROLLOUT_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines", ".json", ".parquet", ".pq", ".csv", ".tsv")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff")
GZIP_SUFFIXES = (".gz", ".gzip")
ARCHIVE_SUFFIXES = (".zip",)
#: File names inside a data folder that are never rollouts.
IGNORED_NAMES = frozenset({"manifest.json", "expected.json", "package.json"})


class AccessDenied(PermissionError):
    """A path or reference may not be read; ``str()`` is the plain reason."""


class LimitExceeded(ValueError):
    """An input is over one of the :class:`Limits`; ``str()`` names the setting."""


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Setting:
    """One limit: its environment variable, default and what it bounds (for messages and docs)."""

    env: str
    default: int | float
    what: str


#: Every limit: attribute of :class:`Limits` -> its setting. ``docs/rollouts.md`` lists them.
SETTINGS = {
    "decompressed_bytes": Setting(
        "ROLLOUTSCOPE_MAX_DECOMPRESSED_BYTES", 8 * GIB, "bytes a gzipped file or a zip bundle expands to"
    ),
    "line_bytes": Setting("ROLLOUTSCOPE_MAX_LINE_BYTES", 64 * MIB, "bytes of one line, record or array item"),
    "json_bytes": Setting("ROLLOUTSCOPE_MAX_JSON_BYTES", 256 * MIB, "bytes of one JSON document (.json file)"),
    "image_bytes": Setting("ROLLOUTSCOPE_MAX_IMAGE_BYTES", 64 * MIB, "bytes of one image file or zip member"),
    "image_pixels": Setting("ROLLOUTSCOPE_MAX_IMAGE_PIXELS", 40_000_000, "pixels of one image opened for display"),
    "display_side": Setting("ROLLOUTSCOPE_DISPLAY_MAX_SIDE", 2048, "longest side an image is shrunk to for display"),
    "glob_files": Setting("ROLLOUTSCOPE_MAX_GLOB_FILES", 10_000, "files a folder or glob may list"),
    "glob_seconds": Setting("ROLLOUTSCOPE_GLOB_SECONDS", 10.0, "seconds a folder or glob walk may take"),
    "bundle_files": Setting("ROLLOUTSCOPE_MAX_BUNDLE_FILES", 10_000, "members of one zip bundle"),
    "upload_ttl_seconds": Setting(
        "ROLLOUTSCOPE_UPLOAD_TTL_SECONDS", 12 * 3600, "seconds staged uploads are kept at most"
    ),
}


def _env_number(setting: Setting) -> int | float:
    text = os.environ.get(setting.env, "").strip().replace("_", "")
    if not text:
        return setting.default
    try:
        value = float(text) if isinstance(setting.default, float) else int(float(text))
    except ValueError:
        raise ValueError(f"{setting.env}={text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"{setting.env} must be > 0, got {text}")
    return value


@dataclass(frozen=True)
class Limits:
    """Bounds on the work one input may cause (defaults in :data:`SETTINGS`).

    :meth:`from_env` reads the ``ROLLOUTSCOPE_MAX_...`` variables; ``Limits(line_bytes=...)``
    sets one in code.
    """

    decompressed_bytes: int = SETTINGS["decompressed_bytes"].default
    line_bytes: int = SETTINGS["line_bytes"].default
    json_bytes: int = SETTINGS["json_bytes"].default
    image_bytes: int = SETTINGS["image_bytes"].default
    image_pixels: int = SETTINGS["image_pixels"].default
    display_side: int = SETTINGS["display_side"].default
    glob_files: int = SETTINGS["glob_files"].default
    glob_seconds: float = SETTINGS["glob_seconds"].default
    bundle_files: int = SETTINGS["bundle_files"].default
    upload_ttl_seconds: int = SETTINGS["upload_ttl_seconds"].default

    @classmethod
    def from_env(cls) -> Limits:
        return cls(**{name: _env_number(setting) for name, setting in SETTINGS.items()})

    def over(self, name: str, what: str) -> str:
        """``<what> is over the limit of N <unit> (set ENV to change it)``."""
        setting = SETTINGS[name]
        value = getattr(self, name)
        shown = _bytes(value) if name.endswith("_bytes") else f"{value:,}"
        return f"{what} is over the limit of {shown} (set {setting.env} to change it)"


def _bytes(n: int) -> str:
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size and n % size == 0:
            return f"{n // size:,} {unit}"
    return f"{n:,} bytes"


# --------------------------------------------------------------------------- where files may be read


def roots_from_env() -> tuple[str, ...] | None:
    """``ROLLOUTSCOPE_DATA_ROOTS`` as resolved folders (``os.pathsep``-separated); None when unset."""
    text = os.environ.get(ROOTS_ENV, "")
    parts = [p.strip() for p in text.split(os.pathsep) if p.strip()]
    if not parts:
        return None
    return tuple(dict.fromkeys(os.path.realpath(os.path.expanduser(p)) for p in parts))


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class DataAccess:
    """Where files may be read from, and the limits on reading them (plain, picklable data).

    ``roots``: None reads anywhere; else only paths whose real location (symlinks and ``..``
    resolved) is inside one of them. ``self_contained``: an upload -- a row's reference must be
    relative and is looked up only inside ``roots`` (no absolute paths, ``file://``, ``http(s)://``).
    """

    roots: tuple[str, ...] | None = None
    self_contained: bool = False
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_env(cls) -> DataAccess:
        """The roots of ``ROLLOUTSCOPE_DATA_ROOTS`` and the limits of the environment."""
        return cls(roots=roots_from_env(), limits=Limits.from_env())

    @classmethod
    def upload(cls, folder: str | os.PathLike, limits: Limits | None = None) -> DataAccess:
        """Only the files of one upload (staged in ``folder``)."""
        return cls(roots=(os.path.realpath(folder),), self_contained=True, limits=limits or Limits.from_env())

    def with_root(self, folder: str | os.PathLike) -> DataAccess:
        """The same rules plus one more allowed folder (a bundle unpacked by the reader itself)."""
        if self.roots is None:
            return self
        return replace(self, roots=(*self.roots, os.path.realpath(folder)))

    @property
    def restricted(self) -> bool:
        return self.roots is not None

    def refusal(self) -> str:
        return OUTSIDE_UPLOAD if self.self_contained else OUTSIDE_ROOTS

    def allows(self, path: str | os.PathLike) -> bool:
        if self.roots is None:
            return True
        real = os.path.realpath(os.path.expanduser(os.fspath(path)))
        return any(_inside(real, root) for root in self.roots)

    def check(self, path: str | os.PathLike, shown: str | None = None) -> Path:
        """``path`` when it may be read, else :class:`AccessDenied` (the same for a missing file)."""
        if not self.allows(path):
            raise AccessDenied(f"{shown if shown is not None else os.fspath(path)}: {self.refusal()}")
        return Path(path)

    def check_reference(self, value: str) -> None:
        """A reference written in a row (image, instance): refuse what an upload may not follow."""
        if not self.self_contained:
            return
        lowered = value.strip().lower()
        if lowered.startswith(("file:", "http://", "https://", "ftp://", "//", "\\\\", "~")):
            raise AccessDenied(self.refusal())
        if os.path.isabs(value) or PurePosixPath(value.replace("\\", "/")).is_absolute() or re.match(
            r"^[A-Za-z]:[\\/]", value
        ):
            raise AccessDenied(self.refusal())

    def describe_roots(self) -> str:
        return ", ".join(self.roots or ()) or "(any folder)"


def default_access() -> DataAccess:
    """The rules from the environment: what the CLI and the Python API use unless told otherwise."""
    return DataAccess.from_env()


# --------------------------------------------------------------------------- reading with a cap


def capped_chunks(stream, limit: int, what: str, setting: str, limits: Limits, block: int = MIB):
    """The blocks of ``stream``; :class:`LimitExceeded` as soon as they pass ``limit`` bytes
    (never more than ``limit + 1`` bytes are read)."""
    total = 0
    while True:
        chunk = stream.read(min(block, limit + 1 - total))
        if not chunk:
            return
        total += len(chunk)
        if total > limit:
            raise LimitExceeded(limits.over(setting, what))
        yield chunk


def read_capped(stream, limit: int, what: str, setting: str, limits: Limits) -> bytes:
    """All of ``stream``, or :class:`LimitExceeded` past ``limit`` bytes (see :func:`capped_chunks`)."""
    return b"".join(capped_chunks(stream, limit, what, setting, limits))


# --------------------------------------------------------------------------- folders and globs

_GLOB_CHARS = frozenset("*?[")


def has_wildcards(text: str) -> bool:
    return any(ch in _GLOB_CHARS for ch in text)


def _segment_regex(segment: str) -> str:
    """One path segment of a glob as a regex: ``*`` and ``?`` never match ``/``."""
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        i += 1
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (end := segment.find("]", i + 1 if segment[i : i + 1] in ("!", "]") else i)) != -1:
            body = segment[i:end]
            i = end + 1
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern:
    """A regex for a relative posix pattern: ``**`` is any number of folders, ``*`` stays in one."""
    parts = []
    segments = pattern.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            parts.append("(?:.*)" if last else "(?:[^/]*/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("(?s:" + "".join(parts) + r")\Z")


def split_pattern(pattern: str) -> tuple[Path, str]:
    """``(folder without wildcards, the rest as a posix pattern)``."""
    parts = Path(pattern).parts
    for i, part in enumerate(parts):
        if has_wildcards(part):
            return Path(*parts[:i]) if i else Path("."), "/".join(parts[i:])
    return Path(pattern), ""


def find_files(
    pattern: str | os.PathLike,
    access: DataAccess,
    *,
    keep=lambda name: True,
) -> list[Path]:
    """Files matching a glob pattern, or every file under a folder, sorted.

    Never follows a symlinked folder (a loop cannot trap it); a symlinked file counts only
    when its target is inside the roots. Raises :class:`AccessDenied` when the folder part is
    outside the roots, :class:`LimitExceeded` past ``glob_files`` files or ``glob_seconds``.
    ``keep(name)`` filters by file name (its files count towards the budget only when kept).
    """
    text = os.path.expanduser(os.fspath(pattern))
    base, rest = split_pattern(text) if has_wildcards(text) else (Path(text), "**/*")
    access.check(base, shown=text)
    regex = glob_regex(rest)
    depth = None if "**" in rest.split("/") else rest.count("/") + 1
    limits = access.limits
    deadline = time.monotonic() + limits.glob_seconds
    found: list[Path] = []
    stack: list[tuple[str, str, int]] = [(os.fspath(base), "", 0)]
    while stack:
        folder, prefix, level = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable folder: as if empty
        for entry in entries:
            if time.monotonic() > deadline:
                raise LimitExceeded(limits.over("glob_seconds", f"listing {text} took too long; it"))
            relative = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth is None or level + 1 < depth:
                        stack.append((entry.path, relative + "/", level + 1))
                    continue
                if not regex.match(relative) or not keep(entry.name):
                    continue
                if entry.is_symlink() and not (access.allows(entry.path) and os.path.isfile(entry.path)):
                    continue
                if not entry.is_file():
                    continue
            except OSError:
                continue
            if not access.allows(entry.path):
                continue
            found.append(Path(entry.path))
            if len(found) > limits.glob_files:
                raise LimitExceeded(limits.over("glob_files", f"the number of files under {text}"))
    return sorted(found)


# --------------------------------------------------------------------------- private folders


def private_dir(path: str | os.PathLike) -> Path:
    """``path`` created (with parents) as a folder only its owner can enter (0700).

    An existing folder must be ours, not a symlink, and private; otherwise :class:`AccessDenied`
    (someone else may have made it first to read what we put there).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise AccessDenied(f"{path} is not a plain folder; refusing to keep files there")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise AccessDenied(f"{path} belongs to another user; refusing to keep files there")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


# --------------------------------------------------------------------------- zip bundles


def rollout_name(name: str) -> bool:
    """A file name a rollout file may have (gzipped too); hidden files, manifests and
    ``*.expected.json`` files beside the data are not."""
    base = PurePosixPath(name.replace("\\", "/").lower()).name
    if base in IGNORED_NAMES or base.startswith(".") or base.endswith(".expected.json"):
        return False
    return base.endswith(ROLLOUT_SUFFIXES + GZIP_SUFFIXES)


def image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def safe_member_name(name: str) -> str | None:
    """The member's relative posix path, or None when it would land outside the folder."""
    clean = name.replace("\\", "/")
    if clean.startswith("/") or re.match(r"^[A-Za-z]:", clean):
        return None
    parts = [p for p in clean.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def bundle_members(archive: zipfile.ZipFile) -> tuple[list[zipfile.ZipInfo], list[zipfile.ZipInfo]]:
    """``(rollout members, image members)`` of an archive (by name; nothing is read)."""
    rollouts, images = [], []
    for info in archive.infolist():
        if info.is_dir() or PurePosixPath(info.filename).name.startswith(("._", ".")):
            continue
        if rollout_name(info.filename):
            rollouts.append(info)
        elif image_name(info.filename):
            images.append(info)
    return rollouts, images


def is_bundle(archive: zipfile.ZipFile) -> bool:
    """A zip holding at least one rollout file (else it is an image archive)."""
    return bool(bundle_members(archive)[0])


@dataclass
class Bundle:
    """What :func:`extract_bundle` unpacked: rollout files, images, and members it refused."""

    rollouts: list[Path]
    images: list[Path]
    members: dict[str, str]  # unpacked path -> member name
    problems: list[tuple[str, str]]  # (member name, reason)


def _copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, limit: int,
                 what: str, setting: str, limits: Limits) -> int:
    """Copy one member, never writing more than ``limit`` bytes (the header may lie)."""
    written = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with archive.open(info) as source, open(target, "wb") as out:
            for chunk in capped_chunks(source, limit, what, setting, limits):
                out.write(chunk)
                written += len(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return written


def extract_bundle(archive_path, folder: str | os.PathLike, limits: Limits) -> Bundle:
    """Unpack the rollout files and images of a zip (a path or a binary file object) into
    ``folder``, which must be private.

    Every member is judged from its header first (size against the limits, a name that stays
    inside ``folder``) and copied with a cap, so a member that lies about its size stops at the
    limit. The whole bundle may expand to at most ``decompressed_bytes``. Refused members are
    listed in ``problems``; :class:`LimitExceeded` for too many members; zipfile.BadZipFile for
    a broken archive.
    """
    folder = Path(folder)
    rollouts: list[Path] = []
    images: list[Path] = []
    members: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    total = 0
    with zipfile.ZipFile(archive_path) as archive:
        rollout_infos, image_infos = bundle_members(archive)
        if len(rollout_infos) + len(image_infos) > limits.bundle_files:
            raise LimitExceeded(limits.over("bundle_files", "the number of files in the zip"))
        for info, is_rollout in [(i, True) for i in rollout_infos] + [(i, False) for i in image_infos]:
            name = safe_member_name(info.filename)
            if name is None:
                problems.append((info.filename, "member path leaves the archive's folder; skipped"))
                continue
            setting = "decompressed_bytes" if is_rollout else "image_bytes"
            limit = limits.decompressed_bytes - total if is_rollout else limits.image_bytes
            limit = min(limit, limits.decompressed_bytes - total)
            what = f"member {info.filename} ({_bytes(info.file_size)} by its header)"
            if info.file_size > limit:
                problems.append((info.filename, limits.over(setting, what)))
                continue
            target = folder / name
            try:
                total += _copy_member(archive, info, target, limit, f"member {info.filename}", setting, limits)
            except LimitExceeded as exc:
                problems.append((info.filename, str(exc)))
                continue
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                target.unlink(missing_ok=True)
                problems.append((info.filename, f"cannot be unpacked ({exc})"))
                continue
            members[str(target)] = info.filename
            (rollouts if is_rollout else images).append(target)
    return Bundle(rollouts, images, members, problems)




# --------------------------------------------------------------------------- bundles among the inputs


def looks_like_zip(path: str | os.PathLike) -> bool:
    """A ``.zip`` by name (a rollout file is never read as a bundle because of its bytes)."""
    return os.fspath(path).lower().endswith(".zip")


@dataclass
class Inputs:
    """Rollout files to read after bundles were unpacked: each file's path and display name,
    where an unpacked file came from (``path -> (archive, member)``) and what was refused."""

    files: list[Path] = field(default_factory=list)
    displays: list[str] = field(default_factory=list)
    origins: dict[str, tuple[str, str]] = field(default_factory=dict)
    folders: list[Path] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (display, reason)


def unpack_inputs(paths: Sequence[str | os.PathLike], access: DataAccess, workdir_factory) -> Inputs:
    """``paths`` with each zip bundle replaced by the rollout files inside it.

    ``workdir_factory()`` gives a fresh private folder for one bundle (the caller removes it).
    A bundle's display names are ``archive!member``; its images unpack beside its rollout
    files so paths relative to the zip resolve as they would inside it.
    """
    inputs = Inputs()
    for given in paths:
        path = Path(given)
        if not looks_like_zip(path):
            inputs.files.append(path)
            inputs.displays.append(str(given))
            continue
        shown = str(given)
        if not access.allows(path):
            inputs.problems.append((shown, access.refusal()))
            continue
        if not path.is_file():
            inputs.problems.append((shown, "file not found"))
            continue
        folder = Path(workdir_factory()) / (path.name[: -len(".zip")] or "bundle")
        try:
            bundle = extract_bundle(path, folder, access.limits)
        except (zipfile.BadZipFile, OSError) as exc:
            inputs.problems.append((shown, f"not a readable zip archive ({exc})"))
            continue
        except LimitExceeded as exc:
            inputs.problems.append((shown, str(exc)))
            continue
        archive = os.path.realpath(path)
        inputs.folders.append(folder)
        for name, reason in bundle.problems:
            inputs.problems.append((f"{shown}!{name}", reason))
        for unpacked, member in bundle.members.items():
            inputs.origins[os.path.realpath(unpacked)] = (archive, member)
        if not bundle.rollouts:
            inputs.problems.append((shown, "the zip holds no rollout file (.jsonl, .json, .parquet, .csv)"))
        for file in sorted(bundle.rollouts):
            inputs.files.append(file)
            inputs.displays.append(f"{shown}!{bundle.members[str(file)]}")
    return inputs


__all__: Sequence[str] = (
    "OUTSIDE_ROOTS", "OUTSIDE_UPLOAD", "ROOTS_ENV", "SETTINGS", "AccessDenied", "Bundle", "DataAccess",
    "LimitExceeded", "Limits", "default_access", "extract_bundle", "find_files", "is_bundle",
    "private_dir", "read_capped", "roots_from_env", "unpack_inputs",
)
