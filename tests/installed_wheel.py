"""Build this checkout's wheel and install it into a fresh virtual environment, offline.

The wheel is built from a copy of the checkout (no build products, caches or secrets), with
``pip wheel --no-deps --no-build-isolation --no-index``: the build's requirements (setuptools,
wheel, Cython: the ``test`` extra) come from this machine, so nothing is downloaded. The venv uses
``--system-site-packages`` for the dependencies; the wheel goes in with ``--ignore-installed``, so
an editable install of some checkout on the machine cannot stand in for it (the tests check where
``scoring`` is imported from).

The test command runs pytest twice (the browser tests on their own, after the rest), and both runs
need the wheel: it gives them a folder of its own for that one run of it, where a built wheel is kept
under the digest of everything it was built from (the copied source, the Python, Cython and
setuptools that build it), so the second run installs the very wheel the first built instead of
translating and compiling the same sources again. The folder goes when the test command ends.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Top-level folders not copied for the build: not the package's, or build products.
NOT_COPIED_TOP = {".git", ".ci", "tests", "bench", "docs", "scripts", "build", "dist", ".venv"}
#: Not copied at any depth: caches, compiled files, secrets.
NOT_COPIED = shutil.ignore_patterns(
    "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", ".rolloutscope", "*.so", "*.pyd",
    "*.source-sha256", "*.c", "secrets.toml",
)


def _not_copied(folder: str, names: list[str]) -> set[str]:
    top = NOT_COPIED_TOP.intersection(names) if Path(folder) == REPO else set()
    return top | NOT_COPIED(folder, names)


@dataclass(frozen=True)
class InstalledWheel:
    wheel: Path
    venv: Path
    build_seconds: float
    install_seconds: float

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def rolloutscope(self) -> Path:
        return self.venv / "bin" / "rolloutscope"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a user of the venv would have: nothing pointing back at the checkout."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROLLOUTSCOPE_", "PYTHON", "STREAMLIT_"))}
        env.update(PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(self.venv),
                   PYTHONUNBUFFERED="1", **extra)
        return env


def build_and_install(workdir: Path, built: Path | None = None) -> InstalledWheel:
    """The wheel, built in ``workdir/dist`` (about a minute of compiling on two cores) unless
    ``built`` already holds it, installed into ``workdir/venv``. ``built``: the folder of wheels
    already built, kept under the digest of their sources (see the
    module's docstring; None: always build)."""
    source, dist, venv = workdir / "source", workdir / "dist", workdir / "venv"
    shutil.copytree(REPO, source, ignore=_not_copied)
    build_env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTSCOPE_")}
    started = time.monotonic()
    kept = built / source_digest(source) if built is not None else None
    wheel = next(kept.glob("rolloutscope-*.whl"), None) if kept is not None and kept.is_dir() else None
    if wheel is None:
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w",
              str(dist), str(source)], build_env, workdir)
        (wheel,) = dist.glob("rolloutscope-*.whl")
        if kept is not None:
            _keep(wheel, kept)
    build_seconds = time.monotonic() - started
    started = time.monotonic()
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], build_env, workdir)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
          str(wheel)], build_env, workdir)
    return InstalledWheel(wheel, venv, build_seconds, time.monotonic() - started)


#: The folder the test command (scripts/test.sh) makes for this one run of it, where a built wheel
#: is kept for its second pytest run. Unset (pytest run directly): every session builds its own.
BUILT_WHEELS_ENV = "ROLLOUTSCOPE_TEST_WHEELS"


def built_wheels_folder() -> Path | None:
    """The test command's folder of built wheels (:data:`BUILT_WHEELS_ENV`), or None."""
    folder = os.environ.get(BUILT_WHEELS_ENV, "")
    return Path(folder) if folder and Path(folder).is_dir() else None


def source_digest(source: Path) -> str:
    """Digest of what a wheel is built from: every file of the copied source (path and bytes), the
    Python it is built for, and the Cython and setuptools that build it."""
    from importlib.metadata import version

    tools = (sys.version, sysconfig.get_platform(), version("Cython"), version("setuptools"))
    digest = hashlib.sha256("\0".join(tools).encode())
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        digest.update(b"\0" + path.relative_to(source).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def _keep(wheel: Path, kept: Path) -> None:
    """Keep ``wheel`` as the one built from digest ``kept.name``, written whole before it is
    visible (a rename)."""
    folder = kept.parent
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=".staging-"))
    shutil.copy2(wheel, staging / wheel.name)
    try:
        staging.rename(kept)
    except OSError:  # kept by a run at the same moment: theirs is the same wheel
        shutil.rmtree(staging, ignore_errors=True)


def _run(command: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({done.returncode}):\n{done.stdout[-3000:]}"
                           f"\n{done.stderr[-3000:]}")
