"""Where rows get scored into a dataset: here (processes) or on a Ray cluster; ``score_to_dataset(engine=...)``.

Modules: local, ray. May import: ``rollouts``, ``runs``, ``datasets``.
The names below are the layer's public entry point: other layers and the app import only these.
"""

from .local import KEEP_TABLE_AUTO, score_to_dataset
from .ray import RayUnavailable, expand_uris, is_uri

__all__ = [
    "KEEP_TABLE_AUTO",
    "RayUnavailable",
    "expand_uris",
    "is_uri",
    "score_to_dataset",
]
