"""Rolloutscope scoring: the trace verifier, the simple scorers, and the run tools built on them.

No UI imports. Layers, bottom up; each imports only the layers before it, through their
``__init__`` (docs/internals.md draws the map)::

    verifier     response text -> extraction -> typed parsing by contract -> geometry -> matching
                 -> composition: score_trace_response, explain_trace_response, evaluate
    rewards      the simple scorers (exact_match, contains, last_number, numeric_close)
    rollouts     reading rollout files: containers, layouts, joins, rows, images, errors
    runs         rows -> one scored table (score_files), logged vs recomputed, re-weighting
    datasets     the scored dataset on disk: plan, parts, open, text on demand, snapshots
    engines      score_to_dataset here or on Ray
    review       coordinate frames, consensus suspects, corrections
    integrations verl and TRL reward functions over the verifier
    cli          ``rolloutscope``

``compiled`` decides whether the hot layers run from their Cython build or from source (see its
docstring); it must be installed before they are imported. ``moved`` keeps the 0.1 import paths
(``scoring.runs``, ``scoring.datasets``...) working for one release, with a DeprecationWarning.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import compiled, moved

compiled.install()
moved.install()

#: The verifier's names the package gives at its top (``from scoring import score_trace_response``).
#: They load with the verifier when first asked for, not with the package: ``import scoring``
#: stays free of numpy, so the ``rolloutscope`` program (``scoring.__main__``) can still choose
#: Arrow's allocator and OpenBLAS's threads before they load.
__all__ = [
    "SOLVED_THRESHOLD",
    "ScoringOptions",
    "TraceEvaluation",
    "evaluate",
    "explain_trace_response",
    "recompose",
    "resolve_options",
    "score_trace_response",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module(".verifier", __name__), name)
        globals()[name] = value  # asked once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
