"""Build hook: compiles the scoring package's hot layers with Cython (metadata is in pyproject.toml).

The layers stay plain Python and run from source whenever they are not compiled
(no compiler, no Cython, ``ROLLOUTSCOPE_NO_COMPILE=1``, or a source edited since
the build): see ``scoring/compiled.py``. Every extension is ``optional``, so a
failed compile leaves a working, slower install instead of a failed one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Kept in step with scoring.compiled.COMPILED_LAYERS (a test checks it); not imported,
# because importing the package here would need its dependencies at build time.
COMPILED_LAYERS = (
    "extract", "geometry", "matching", "contracts", "compose", "trace",
    "rollouts.layouts", "rollouts.sources", "rollouts.fields", "batch",
)  # fmt: skip
SOURCE_DIGEST_SUFFIX = ".source-sha256"
NO_COMPILE_ENV = "ROLLOUTSCOPE_NO_COMPILE"
ROOT = Path(__file__).resolve().parent


class BuildExtRecordingSources(build_ext):
    """Builds in parallel and records, beside each extension, the digest of the source it came from."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext):
        super().build_extension(ext)  # raises on failure, so only built extensions get a digest
        self._record_digest(ext)

    def copy_extensions_to_source(self):
        """Editable installs copy each extension into ``scoring/``: its digest goes beside it."""
        super().copy_extensions_to_source()  # runs with ``inplace`` set: paths below are in-place
        for ext in self.extensions:
            if Path(self.get_ext_fullpath(ext.name)).is_file():
                self._record_digest(ext)

    def _record_digest(self, ext):
        source = ROOT.joinpath(*ext.name.split(".")).with_suffix(".py")  # scoring.rollouts.x -> scoring/rollouts/x.py
        Path(self.get_ext_fullpath(ext.name) + SOURCE_DIGEST_SUFFIX).write_text(source_digest(source) + "\n")


def source_digest(source: Path) -> str:
    """Digest of what a layer is compiled from: its ``.py`` and, when there is one, the
    ``.pxd`` beside it (the same function as scoring.compiled.source_digest; a test checks it)."""
    digest = hashlib.sha256(source.read_bytes())
    declarations = source.with_suffix(".pxd")
    if declarations.is_file():
        digest.update(b"\0" + declarations.read_bytes())
    return digest.hexdigest()


def compiled_extensions() -> list[Extension]:
    if os.environ.get(NO_COMPILE_ENV, "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    extensions = [
        Extension(f"scoring.{layer}", [f"scoring/{layer.replace('.', '/')}.py"], optional=True)
        for layer in COMPILED_LAYERS
    ]
    return cythonize(
        extensions,
        # Python semantics exactly: annotations are documentation, not C types.
        compiler_directives={"language_level": 3, "annotation_typing": False},
        build_dir="build/cython",
        nthreads=os.cpu_count() or 1,
        quiet=True,
    )


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": BuildExtRecordingSources})
