"""Build hooks (metadata is in pyproject.toml): the scoring package's hot layers compiled with Cython,
and the app's files carried inside the ``dashboard`` package.

The layers stay plain Python and run from source whenever they are not compiled
(no compiler, no Cython, ``ROLLOUTSCOPE_NO_COMPILE=1``, or a source edited since
the build): see ``scoring/compiled.py``. Every extension is ``optional``, so a
failed compile leaves a working, slower install instead of a failed one.

A checkout keeps the app at its top level (``app.py``, ``pages/``, ``.streamlit/``,
``sample_data/``: ``streamlit run app.py``). A wheel gets a copy of those files in
``dashboard/app_bundle/`` (:class:`BuildPyWithApp`), so ``rolloutscope app`` works from an
installed package while the repository holds one copy; ``scoring/launch.py`` finds either.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

NO_COMPILE_ENV = "ROLLOUTSCOPE_NO_COMPILE"
#: No debug information in the extensions: about a third less compile time and an eighth of the
#: size; the code generated is the same.
NO_DEBUG_INFO = [] if sys.platform == "win32" else ["-g0"]
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


def say(message: str) -> None:
    """Progress the person installing sees with pip's default verbosity.

    pip keeps a build's output to itself unless run with ``-v``, so progress goes to the terminal
    the install runs in when there is one, else to stderr (shown by ``pip -v`` and in logs).
    """
    line = f"rolloutscope: {message}\n"
    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:
            tty.write(line)
            return
    except OSError:  # no terminal (CI, a container without a tty)
        pass
    sys.stderr.write(line)
    sys.stderr.flush()


class BuildExtRecordingSources(build_ext):
    """Builds in parallel and records, beside each extension, the digest of the source it came from."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1
        self._done, self._lock, self._started = 0, threading.Lock(), time.monotonic()

    def build_extensions(self):
        self._started = time.monotonic()
        say(f"compiling {len(self.extensions)} C extensions on {self.parallel} core(s) -- about a minute on 2 cores "
            f"(set {NO_COMPILE_ENV}=1 to skip: the package then runs from its Python source)")
        super().build_extensions()
        say(f"compiled in {time.monotonic() - self._started:.0f} s")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)  # raises on failure, so only built extensions get a digest
        except Exception:
            say(f"could not compile {ext.name}: it will run from its Python source")
            raise
        self._record_digest(ext)
        with self._lock:
            self._done += 1
            say(f"  {ext.name} ({self._done}/{len(self.extensions)}, {time.monotonic() - self._started:.0f} s)")

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


#: Where a wheel carries the app (``scoring.launch.APP_BUNDLE``, inside the ``dashboard`` package).
APP_BUNDLE = Path("dashboard", "app_bundle")
#: Sample-data files that are not data: the generator (a script or a package) and its notes.
NOT_SAMPLE_DATA = (".py", ".pyc", ".md")


def app_files(root: Path = ROOT) -> list[Path]:
    """The app's files, relative to ``root``: the Overview script, the pages, the Streamlit settings
    (never ``secrets.toml``) and the sample data the app opens (not its generator)."""
    files = [Path("app.py"), Path(".streamlit", "config.toml")]
    files += sorted(p.relative_to(root) for p in (root / "pages").glob("*.py"))
    for path in sorted((root / "sample_data").rglob("*")):
        relative = path.relative_to(root)
        generator = any((root.joinpath(*relative.parts[:i]) / "__init__.py").is_file() for i in range(2, len(relative.parts)))
        if path.is_file() and path.suffix not in NOT_SAMPLE_DATA and "__pycache__" not in relative.parts and not generator:
            files.append(relative)
    missing = [str(f) for f in files if not (root / f).is_file()]
    if missing:
        raise FileNotFoundError(f"the app's files are missing from {root}: {', '.join(missing)}")
    return files


class BuildPyWithApp(build_py):
    """Copies the app's files into ``dashboard/app_bundle/`` of the build (wheels only: an editable
    install runs the checkout's own files)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for relative in app_files():
            target = Path(self.build_lib) / APP_BUNDLE / relative
            self.mkpath(str(target.parent))
            self.copy_file(str(ROOT / relative), str(target), preserve_mode=False)
        say(f"the app's files are in {APP_BUNDLE.as_posix()}/ of the package")

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return [*outputs, *(str(Path(self.build_lib) / APP_BUNDLE / f) for f in app_files())]


def compiled_extensions() -> list[Extension]:
    if os.environ.get(NO_COMPILE_ENV, "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    extensions = [
        Extension(f"scoring.{layer}", [f"scoring/{layer.replace('.', '/')}.py"], optional=True,
                  extra_compile_args=NO_DEBUG_INFO)
        for layer in _COMPILED.COMPILED_LAYERS
    ]
    say(f"translating {len(extensions)} modules to C with Cython (skipped when unchanged)")
    return cythonize(
        extensions,
        # Python semantics exactly: annotations are documentation, not C types.
        compiler_directives={"language_level": 3, "annotation_typing": False},
        build_dir="build/cython",
        nthreads=os.cpu_count() or 1,
        quiet=True,
    )


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": BuildExtRecordingSources, "build_py": BuildPyWithApp})
