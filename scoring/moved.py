"""Import paths of the flat ``scoring/`` of 0.1, kept working for one release with a DeprecationWarning.

``import scoring.batch`` (or ``from scoring import store``) gives a module that forwards each
public name to the layer that now holds it, and warns once per old path. Nothing inside
``scoring`` uses these paths; they exist for code written against 0.1.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

#: old module -> the layers (or modules) that hold its public names now, searched in order.
MOVED: dict[str, tuple[str, ...]] = {
    "answers": ("verifier",),
    "compose": ("verifier",),
    "contracts": ("verifier",),
    "extract": ("verifier",),
    "geometry": ("verifier",),
    "literals": ("verifier",),
    "matching": ("verifier",),
    "records": ("verifier",),
    "spec": ("verifier",),
    "trace": ("verifier",),
    "batch": ("runs",),
    "reweight": ("runs",),
    "compact_dtypes": ("datasets",),
    "dataset_parts": ("datasets",),
    "dataset_table": ("datasets",),
    "dataset_text": ("datasets",),
    "table_snapshot": ("datasets.snapshot",),
    "store": ("datasets", "engines"),
    "ray_engine": ("engines.ray",),
    "frames": ("review.frames", "review.frame_tables"),
    "consensus": ("review.consensus",),
    "corrections": ("review.corrections",),
    "corrected_files": ("review.corrected_files",),
    "rollouts.layouts": ("rollouts",),
}

_PACKAGE = __name__.rpartition(".")[0]


def _forwarding_module(old: str, targets: tuple[str, ...]) -> types.ModuleType:
    module = types.ModuleType(f"{_PACKAGE}.{old}", f"Moved: see {', '.join(f'scoring.{t}' for t in targets)}.")
    homes = [importlib.import_module(f"{_PACKAGE}.{target}") for target in targets]

    def __getattr__(name: str):
        for home in homes:
            if hasattr(home, name):
                return getattr(home, name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r} (it moved to "
                             f"{' or '.join(h.__name__ for h in homes)})")

    def __dir__():
        return sorted({name for home in homes for name in getattr(home, "__all__", dir(home))})

    module.__getattr__ = __getattr__
    module.__dir__ = __dir__
    return module


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, old: str) -> None:
        self.old = old

    def create_module(self, spec):
        targets = MOVED[self.old]
        new = ", ".join(f"scoring.{t}" for t in targets)
        warnings.warn(f"scoring.{self.old} moved to {new}; the old path goes away in the next release",
                      DeprecationWarning, stacklevel=3)
        return _forwarding_module(self.old, targets)

    def exec_module(self, module) -> None:
        """Nothing to run: the forwarding module is complete."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        package, _, old = fullname.partition(".")
        if package != _PACKAGE or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader(old))


def install() -> None:
    """Let the old paths import (idempotent); after the package's own finders."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
