"""Reading rollout files: containers, layouts, ground-truth fields, images, errors.

The batch scorer (:mod:`scoring.batch`) and the app build on these:

- :mod:`.sources`  -- JSONL (gzipped too), JSON arrays, Parquet, CSV, streamed;
- :mod:`.layouts`  -- canonical / verl / TRL / lm-eval / instances detection,
  :class:`ColumnMapping` (the role override), :class:`InstanceIndex` (joins);
- :mod:`.fields`   -- finding ground truth nested or JSON-encoded;
- :mod:`.images`   -- image resolution, header-only size, decompression-bomb guard;
- :mod:`.access`   -- data roots, self-contained uploads, limits on every read, zip bundles;
- :mod:`.errors`   -- :class:`RowError` and the errors table.
"""

from .access import DataAccess, Limits
from .errors import ERROR_COLUMNS, RowError, errors_frame
from .images import ImageInfo, ImageProblem, ImageResolver, open_image
from .layouts import (
    LAYOUTS,
    ROLES,
    ColumnMapping,
    InstanceIndex,
    Layout,
    LayoutError,
    detect_layout,
)
from .sources import CONTAINERS, Source, SourceError, detect_container, iter_records

__all__ = [
    "CONTAINERS",
    "ERROR_COLUMNS",
    "LAYOUTS",
    "ROLES",
    "ColumnMapping",
    "DataAccess",
    "ImageInfo",
    "ImageProblem",
    "ImageResolver",
    "InstanceIndex",
    "Layout",
    "LayoutError",
    "Limits",
    "RowError",
    "Source",
    "SourceError",
    "detect_container",
    "detect_layout",
    "errors_frame",
    "iter_records",
    "open_image",
]
