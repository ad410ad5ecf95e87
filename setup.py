"""Build hook: compiles the scoring package's hot layers with Cython (metadata is in pyproject.toml).

The layers stay plain Python and run from source whenever they are not compiled
(no compiler, no Cython, ``ROLLOUTSCOPE_NO_COMPILE=1``, or a source edited since
the build): see ``scoring/compiled.py``. Every extension is ``optional``, so a
failed compile leaves a working, slower install instead of a failed one.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NO_COMPILE_ENV = "ROLLOUTSCOPE_NO_COMPILE"
ROOT = Path(__file__).resolve().parent


def _load_compiled_module():
    """``scoring/compiled.py`` on its own (standard library only): the build and the package read
    the same list of layers and the same source digest. Importing ``scoring`` itself would need
    the package's dependencies at build time."""
    spec = importlib.util.spec_from_file_location("_rolloutscope_compiled", ROOT / "scoring" / "compiled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_COMPILED = _load_compiled_module()


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
        digest_file = Path(self.get_ext_fullpath(ext.name) + _COMPILED.SOURCE_DIGEST_SUFFIX)
        digest_file.write_text(_COMPILED.source_digest(source) + "\n")


def compiled_extensions() -> list[Extension]:
    if os.environ.get(NO_COMPILE_ENV, "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    extensions = [
        Extension(f"scoring.{layer}", [f"scoring/{layer.replace('.', '/')}.py"], optional=True)
        for layer in _COMPILED.COMPILED_LAYERS
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
