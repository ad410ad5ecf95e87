"""The layers of ``scoring`` (docs/internals.md): each imports only the layers below it, through
their ``__init__``; no import cycle; no private name across modules; no UI; Ray only when the Ray
engine runs. Read from the source with ``ast``, imports inside functions included."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

import scoring

SCORING = Path(__file__).resolve().parents[1] / "scoring"

#: layer -> the layers it may import (through their ``__init__``).
MAY_IMPORT: dict[str, set[str]] = {
    "verifier": set(),
    "rewards": {"verifier"},
    "rollouts": {"verifier", "rewards"},
    "runs": {"verifier", "rewards", "rollouts"},
    "datasets": {"verifier", "rollouts", "runs"},
    "engines": {"rollouts", "runs", "datasets"},
    "review": {"verifier", "rollouts", "runs"},
    "integrations": {"verifier", "rewards", "rollouts", "runs"},
}
#: Imports of a module below a layer's ``__init__``, with the reason they cannot go through it.
DIRECT_IMPORTS = {
    ("scoring.runs.chunks", "scoring.rollouts.rows"): "chunks.pxd cimports the compiled Row type from that module",
}
UI = ("streamlit", "dashboard", "plotly")
#: Modules beside the layers that any layer may use: what a process sets up before the layers
#: load (standard library only), and the package itself.
SET_UP = ("scoring", "scoring.compiled", "scoring.allocator", "scoring.blas_threads")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SCORING.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SCORING.rglob("*.py")}


def imports(name: str) -> list[tuple[str, list[str], bool]]:
    """(module, names imported from it, at module level) for every import of ``name``'s source."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [alias.name for alias in node.names]
            # `from scoring import runs` imports the package scoring.runs
            submodules = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES and n not in exported(module)]
            if submodules:
                found += [(sub, [], id(node) in top) for sub in submodules]
            else:
                found.append((module, names, id(node) in top))
    return found


def exported(package: str) -> set[str]:
    """The names a package's ``__init__`` gives (a function may share its module's name)."""
    path = MODULES.get(package)
    if path is None or path.name != "__init__.py":
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def layer_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "scoring" and parts[1] in MAY_IMPORT else None


def test_the_tree_is_the_map_of_layers():
    present = {p.name for p in SCORING.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert set(MAY_IMPORT) <= present
    assert len(list(SCORING.glob("*.py"))) <= 8  # the rest lives in the layers


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer_of(n)))
def test_a_layer_imports_only_the_layers_below_it_through_their_entry_point(name):
    layer = layer_of(name)
    for module, _, _ in imports(name):
        if not module.startswith("scoring"):
            continue
        target = layer_of(module)
        assert target is not None or module in SET_UP, (name, module)
        if target in (None, layer):
            continue
        assert target in MAY_IMPORT[layer], f"{name} imports {module}: {layer} may import {MAY_IMPORT[layer]}"
        assert module == f"scoring.{target}" or (name, module) in DIRECT_IMPORTS, (
            f"{name} reaches into {module}: import from scoring.{target}")


def test_each_layer_entry_point_documents_what_it_offers():
    for layer in MAY_IMPORT:
        if f"scoring.{layer}" not in MODULES:
            continue
        module = __import__(f"scoring.{layer}", fromlist=["__all__"])
        if layer == "integrations":  # the frameworks load an adapter module by its path: verl, trl
            assert module.__doc__ and not hasattr(module, "__all__")
            continue
        assert module.__doc__ and module.__all__, layer
        assert all(hasattr(module, name) for name in module.__all__), layer
        assert not [n for n in module.__all__ if n.startswith("_")], layer


def test_no_private_name_crosses_a_module():
    for name in MODULES:
        for module, names, _ in imports(name):
            if module.startswith("scoring") and module != name:
                assert not [n for n in names if n.startswith("_") and not n.startswith("__")], (name, module)


def test_no_import_cycle_between_modules():
    graph = {name: {m for m, _, _ in imports(name) if m in MODULES and m != name} for name in MODULES}
    # a package importing its own submodules for its entry point is not a cycle between layers
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            assert state.get(nxt) != 1, " -> ".join([*path, node, nxt])
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def test_scoring_imports_no_ui_and_ray_only_inside_the_ray_engine_functions():
    for name in MODULES:
        for module, _, at_top in imports(name):
            assert module.split(".")[0] not in UI, (name, module)
            if module.split(".")[0] == "ray":
                assert name == "scoring.engines.ray" and not at_top, name


def test_the_snapshot_is_a_leaf():
    assert not [m for m, _, _ in imports("scoring.datasets.snapshot") if m.split(".")[0] in ("scoring", "pickle")]


@pytest.mark.parametrize("old, name, home", [
    ("scoring.batch", "score_files", "scoring.runs"),
    ("scoring.store", "open_dataset", "scoring.datasets"),
    ("scoring.store", "score_to_dataset", "scoring.engines"),
    ("scoring.rollouts.layouts", "RowReader", "scoring.rollouts"),
    ("scoring.spec", "SOLVED_THRESHOLD", "scoring.verifier"),
    ("scoring.consensus", "suspects", "scoring.review.consensus"),
])
def test_an_old_import_path_still_works_and_says_where_the_name_moved(old, name, home):
    import importlib
    import sys

    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(home), name)
    assert [w for w in caught if issubclass(w.category, DeprecationWarning) and home.split(".")[1] in str(w.message)]
    with pytest.raises(AttributeError, match="moved to"):
        module.no_such_name  # noqa: B018


def test_the_public_api_is_where_the_readme_says():
    assert scoring.score_trace_response is scoring.verifier.score_trace_response
    from scoring.rewards import SOLVED_THRESHOLD, scorer

    assert SOLVED_THRESHOLD is scoring.SOLVED_THRESHOLD and callable(scorer)


def test_the_project_itself_uses_no_old_import_path():
    """The 0.1 paths are for code outside: the app, the bench, the tests and scoring import the layers."""
    from scoring.moved import MOVED

    old = {f"scoring.{name}" for name in MOVED}
    root = SCORING.parent
    found = []
    for folder in ("scoring", "dashboard", "pages", "bench", "tests", "scripts"):
        for path in (root / folder).rglob("*.py"):
            if path.name in ("test_layers.py", "moved.py"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and not node.level:
                    names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                elif isinstance(node, ast.Import):
                    names = {a.name for a in node.names}
                else:
                    continue
                found += [f"{path.relative_to(root)}:{node.lineno} {n}" for n in names & old]
    assert not found, found
