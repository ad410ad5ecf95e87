"""Which scoring layers run compiled, and the guard that keeps a stale build from running.

The hot layers are plain Python; ``pip install`` also compiles them with Cython
(``setup.py``) because the trace verifier must score 50,000 responses a second
on one core, and reading and tabulating rollout records (``rollouts.*``, ``runs.*``)
must stay cheap next to scoring them.
The ``.py`` file stays the source of truth:

* a layer runs compiled only when the digest its build recorded (a
  ``<extension>.source-sha256`` file beside it) equals the digest of its
  ``.py`` file (and of the ``.pxd`` declarations beside it, if any) now, so an
  edited source never hides behind an old build;
* ``ROLLOUTSCOPE_PURE_PYTHON=1`` runs every layer from source, which is how
  the tests check that both give the same numbers;
* without a compiler (or Cython) the package simply runs from source.

The finder is installed by ``scoring/__init__.py`` before any layer is imported.
"""

from __future__ import annotations

# Standard library only: setup.py loads this file on its own at build time (a test checks it).
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from pathlib import Path

#: The layers ``setup.py`` compiles. Compiled code does not count towards Python's recursion
#: limit, so a deeply nested value handed in by a caller would overflow the C stack instead of
#: raising RecursionError: none of them recurses but ``answers``, which counts its own depth
#: and refuses a value nested past ``CANONICAL_MAX_DEPTH`` levels the same way compiled or not.
#: Dotted names are modules of subpackages (``rollouts.rows`` is ``scoring/rollouts/rows.py``).
COMPILED_LAYERS = (
    "verifier.literals", "verifier.answers", "verifier.extraction", "verifier.geometry", "verifier.matching",
    "verifier.contracts", "verifier.composition", "verifier.trace",
    "rollouts.json_window", "rollouts.line_ranges", "rollouts.sources", "rollouts.fields", "rollouts.text", "rollouts.mapping",
    "rollouts.join", "rollouts.rows",
    "runs.columns", "runs.reports", "runs.rescoring", "runs.truths", "runs.chunks", "runs.pipeline", "runs.streaming",
    "datasets.hashing",
)  # fmt: skip

#: Set to a non-empty value other than ``0`` to run every layer from its ``.py`` source.
PURE_PYTHON_ENV = "ROLLOUTSCOPE_PURE_PYTHON"

#: Suffix of the file a build writes beside each extension: the source digest it was built from.
SOURCE_DIGEST_SUFFIX = ".source-sha256"

COMPILED = "compiled"
PURE_DISABLED = f"pure Python ({PURE_PYTHON_ENV} is set)"
PURE_NOT_BUILT = "pure Python (not compiled)"
PURE_STALE = "pure Python (source changed since it was compiled: re-run pip install -e .)"

_PACKAGE = __name__.rpartition(".")[0]
_PACKAGE_DIR = Path(__file__).resolve().parent


def source_digest(source: Path) -> str:
    """Digest of what a layer is compiled from: its ``.py`` and, when there is one, the
    ``.pxd`` beside it (Cython's declarations for the compiled build). setup.py loads this
    module on its own to write the digest, so the build and the check cannot disagree."""
    digest = hashlib.sha256(source.read_bytes())
    declarations = source.with_suffix(".pxd")
    if declarations.is_file():
        digest.update(b"\0" + declarations.read_bytes())
    return digest.hexdigest()


def pure_python_requested() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def _layer_stem(layer: str) -> Path:
    """The layer's path without suffix: ``rollouts.rows`` -> ``<package>/rollouts/rows``."""
    return _PACKAGE_DIR.joinpath(*layer.split("."))


def _extension_path(layer: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = Path(f"{_layer_stem(layer)}{suffix}")
        if candidate.is_file():
            return candidate
    return None


def _resolve(layer: str) -> tuple[str, Path]:
    """(status, file to load) for one layer."""
    source = Path(f"{_layer_stem(layer)}.py")
    if pure_python_requested():
        return PURE_DISABLED, source
    extension = _extension_path(layer)
    if extension is None:
        return PURE_NOT_BUILT, source
    recorded = Path(f"{extension}{SOURCE_DIGEST_SUFFIX}")
    try:
        fresh = recorded.read_text().strip() == source_digest(source)
    except OSError:
        fresh = False
    return (COMPILED, extension) if fresh else (PURE_STALE, source)


class _LayerFinder(importlib.abc.MetaPathFinder):
    """Loads each compiled layer from its extension when fresh, else from its source."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, layer = fullname.partition(".")
        if package != _PACKAGE or layer not in COMPILED_LAYERS:
            return None
        status, location = _resolve(layer)
        if status == PURE_STALE:
            warnings.warn(f"{fullname}: {status}", RuntimeWarning, stacklevel=2)
        return importlib.util.spec_from_file_location(fullname, location)


def install() -> None:
    """Put the layer finder ahead of the default path finder (idempotent)."""
    if not any(isinstance(finder, _LayerFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LayerFinder())


def layer_status() -> dict[str, str]:
    """Layer -> how it runs in this process (compiled, or why pure Python)."""
    status = {}
    for layer in COMPILED_LAYERS:
        module = sys.modules.get(f"{_PACKAGE}.{layer}")
        if module is None:
            status[layer] = _resolve(layer)[0]
        elif (module.__file__ or "").endswith(".py"):
            now = _resolve(layer)[0]
            status[layer] = PURE_NOT_BUILT if now == COMPILED else now  # built after this import
        else:
            status[layer] = COMPILED
    return status


def all_compiled() -> bool:
    return all(status == COMPILED for status in layer_status().values())
