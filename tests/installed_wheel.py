"""Build this checkout's wheel and install it into a fresh virtual environment, offline.

The wheel is built from a copy of the checkout (no build products, caches or secrets), with
``pip wheel --no-deps --no-build-isolation --no-index``: the build's requirements (setuptools,
wheel, Cython: the ``test`` extra) come from this machine, so nothing is downloaded. The venv uses
``--system-site-packages`` for the dependencies; the wheel goes in with ``--ignore-installed``, so
an editable install of some checkout on the machine cannot stand in for it (the tests check where
``scoring`` is imported from).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def build_and_install(workdir: Path) -> InstalledWheel:
    """The wheel in ``workdir/dist``, installed into ``workdir/venv`` (about a minute of compiling
    on two cores; seconds when the test command's ccache already holds the objects)."""
    source, dist, venv = workdir / "source", workdir / "dist", workdir / "venv"
    shutil.copytree(REPO, source, ignore=_not_copied)
    build_env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTSCOPE_")}
    started = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist),
          str(source)], build_env, workdir)
    build_seconds = time.monotonic() - started
    (wheel,) = dist.glob("rolloutscope-*.whl")
    started = time.monotonic()
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], build_env, workdir)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
          str(wheel)], build_env, workdir)
    return InstalledWheel(wheel, venv, build_seconds, time.monotonic() - started)


def _run(command: list[str], env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({done.returncode}):\n{done.stdout[-3000:]}"
                           f"\n{done.stderr[-3000:]}")
