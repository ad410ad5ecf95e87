"""Rolloutscope scoring: the trace verifier and the simple scorers (no UI imports).

Layers, each importing only those above it::

    spec        the spec's named constants
    literals    untrusted text -> value (JSON, then Python literal), under limits
    extract     response -> final object, recovery candidates, format verdict
    answers     canonical answers and their comparison
    geometry    typed boxes/points/segments, IoU, soft distance, image size
    matching    sets / sequences / maps -> pairings and one soft score
    contracts   the reward contract check
    compose     options, weights, formulas (scalar and vectorised)
    trace       evaluate() -> TraceEvaluation -> as_flat_dict()
    rewards     the simple scorers (exact_match, contains, last_number, numeric_close)

``compiled`` decides whether the hot layers run from their Cython build or
from source (see its docstring); it must be installed before they are imported.
"""

from . import compiled

compiled.install()

from .compose import ScoringOptions, recompose, resolve_options  # noqa: E402
from .spec import SOLVED_THRESHOLD  # noqa: E402
from .trace import TraceEvaluation, evaluate, explain_trace_response, score_trace_response  # noqa: E402

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
