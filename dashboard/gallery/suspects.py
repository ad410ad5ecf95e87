"""GT-suspect confidence per row, for the gallery's badge and sort (no Streamlit).

The Suspects page's rule (:func:`scoring.review.suspects`, default settings) names instances
whose rollouts agree with each other against their ground truth; every row of such an instance
gets the instance's confidence (the higher of its answer and annotation suspicions), the other
rows NaN. Running the rule re-explains the candidate rows, so it costs seconds on a large run:
it runs by itself on runs of at most :data:`AUTO_ROWS` rows, otherwise when asked, and its
result is kept per run (a few runs at a time).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd

from scoring.review import ConsensusSettings, instance_keys
from scoring.review import suspects as find_suspects

from ..loaded_run import GROUND_TRUTH_COLUMNS

#: Runs up to this many rows are checked for suspects without being asked.
AUTO_ROWS = 5_000
_KEPT = 4
_RESULTS: OrderedDict[tuple, np.ndarray] = OrderedDict()
_LOCK = threading.Lock()


def held(run: Any) -> np.ndarray | None:
    """The confidence computed for ``run`` already, or None."""
    with _LOCK:
        return _RESULTS.get((run.key, len(run.table)))


def confidence_per_row(run: Any) -> np.ndarray:
    """Per row of ``run.table``: the suspect confidence of its instance, NaN when it is not
    suspect (read-only; computed once per run)."""
    key = (run.key, len(run.table))
    found = held(run)
    if found is not None:
        return found
    table = run.table
    suspects = find_suspects(run.table_with(GROUND_TRUTH_COLUMNS), ConsensusSettings(),
                                  with_text=run.with_text)
    out = np.full(len(table), np.nan)
    if len(suspects):
        best = suspects.groupby("instance_id", sort=False)["confidence"].max()
        instances = pd.Series(instance_keys(table), dtype=object)
        out = instances.map(best).array.to_numpy(dtype=np.float64, na_value=np.nan)
    out.setflags(write=False)
    with _LOCK:
        _RESULTS[key] = out
        while len(_RESULTS) > _KEPT:
            _RESULTS.popitem(last=False)
    return out


__all__ = ["AUTO_ROWS", "confidence_per_row", "held"]
