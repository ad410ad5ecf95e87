"""Check that pyproject.toml's version floors are real: install every floor exactly, then run the tests.

    python3 scripts/check_floors.py VENV [pytest arguments]

creates the virtual environment VENV (outside the repository, e.g. /tmp/floors), installs each
dependency of ``[project]`` and of the ``auth`` and ``test`` extras pinned to its floor
(``numpy>=1.26`` -> ``numpy==1.26``), and runs pytest with this tree on ``PYTHONPATH`` and the
pure-Python build (``ROLLOUTSCOPE_NO_COMPILE=1``). Default pytest arguments: the whole suite but
the browser tests and the sample data's byte-for-byte regeneration (its images are drawn with
Pillow's bundled font renderer, which changes between Pillow releases; the committed files stay
readable by every version). See docs/serving.md, "Supported versions".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("auth", "test")
#: Packages whose floor does not matter for the suite (the browser test and lint are skipped or run apart).
UNPINNED = {"playwright", "ruff"}
DEFAULT_PYTEST = [
    "tests", "-q", "-m", "not browser", "-p", "no:cacheprovider",
    "--deselect", "tests/test_sample_data.py::test_regeneration_is_byte_identical",
]


def floor_pins(pyproject: dict) -> list[str]:
    """``name==floor`` for every ``name>=floor`` requirement of the project and of :data:`EXTRAS`."""
    project = pyproject["project"]
    requirements = list(project["dependencies"])
    for extra in EXTRAS:
        requirements += project.get("optional-dependencies", {}).get(extra, [])
    pins = []
    for requirement in requirements:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*", requirement)
        if match is None:
            raise SystemExit(f"pyproject.toml: {requirement!r} is not of the form 'name>=floor'")
        name, floor = match.groups()
        if name.lower() not in UNPINNED:
            pins.append(f"{name}=={floor}")
    return sorted(set(pins), key=str.lower)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    venv = Path(argv[0]).absolute()
    if venv.is_relative_to(ROOT):
        raise SystemExit("put the virtual environment outside the repository")
    pins = floor_pins(tomllib.loads((ROOT / "pyproject.toml").read_text()))
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print("installing", " ".join(pins), flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pins], check=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROLLOUTSCOPE_NO_COMPILE": "1"}
    return subprocess.run([str(python), "-m", "pytest", *(argv[1:] or DEFAULT_PYTEST)], cwd=ROOT,
                          env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
