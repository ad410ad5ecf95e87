"""The dataset store, the writing and decoding of its parts, the reading of its text and the Ray
engine sit on top of the batch layer: nothing below imports them, they import no UI, Ray is
imported only when the Ray engine runs, and the writing and decoding of the parts and the reading
of the text import nothing of the store that uses them."""

from __future__ import annotations

import ast
from pathlib import Path

SCORING = Path(__file__).resolve().parents[2] / "scoring"
ON_TOP = {"store", "dataset_parts", "dataset_table", "dataset_text", "ray_engine"}
#: Who may import the modules on top: each other and the command line.
USERS = {"store.py", "dataset_parts.py", "dataset_text.py", "ray_engine.py", "cli.py"}


def imported(path: Path) -> list[tuple[str, bool]]:
    """(module imported, at module level) of every import in a file; relative imports resolved
    to their name inside ``scoring``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                found += [(f"scoring.{base}.{a.name}".replace("..", ".").strip(".") if not base else f"scoring.{base}",
                           id(node) in top) for a in node.names]
            else:
                found.append((base, id(node) in top))
    return found


def test_nothing_below_imports_the_store_or_the_ray_engine():
    for path in SCORING.rglob("*.py"):
        if path.name in USERS:
            continue
        names = {name for name, _ in imported(path)}
        assert not {f"scoring.{m}" for m in ON_TOP} & names, path


def test_the_store_and_the_ray_engine_import_no_ui_and_ray_only_inside_functions():
    for name in ON_TOP:
        found = imported(SCORING / f"{name}.py")
        assert not [m for m, _ in found if m.split(".")[0] in ("streamlit", "dashboard", "plotly")], name
        assert not [m for m, top in found if top and m.split(".")[0] == "ray"], name  # import scoring works without Ray


def test_the_table_snapshot_is_a_leaf_the_store_uses():
    found = {name for name, _ in imported(SCORING / "table_snapshot.py")}
    assert not [m for m in found if m.split(".")[0] in ("scoring", "streamlit", "dashboard", "plotly", "pickle")]
    assert "scoring.table_snapshot" in {name for name, _ in imported(SCORING / "store.py")}


def test_the_part_writing_decoding_and_text_reading_sit_under_the_store_and_import_none_of_it():
    for name in ("dataset_parts", "dataset_table", "dataset_text"):
        found = {module for module, _ in imported(SCORING / f"{name}.py")}
        assert not {"scoring.store", "scoring.ray_engine"} & found, name
        assert f"scoring.{name}" in {module for module, _ in imported(SCORING / "store.py")}, name
