"""Reading rollout files: containers, layouts, ground-truth fields, text, instance joins, rows, images, errors.

Modules: access, errors, oversize, json_window, sources, fields, text, mapping, join, rows, images. May import: ``verifier``, ``rewards``.
The names below are the layer's public entry point: other layers and the app import only these.
"""

from .access import DataAccess, default_access, looks_like_zip, private_dir, rollout_name, unpack_inputs
from .errors import (
    ERROR,
    ERROR_COLUMNS,
    WARNING,
    RowError,
    RowProblem,
    errors_frame,
    utf8_encodable,
    utf8_safe,
)
from .fields import NESTED_CONTAINERS, decode_text_value
from .images import ImageProblem, ImageResolver, open_image
from .join import InstanceIndex
from .mapping import (
    ROLES,
    TRACE_ROW,
    ColumnMapping,
    Layout,
    LayoutError,
    detect_layout,
    file_stem,
    logged_component,
    step_from_name,
)
from .rows import RowReader
from .sources import Source, SourceError, decode_line, in_batches, iter_decoded
from .text import as_text

__all__ = [
    "ColumnMapping",
    "DataAccess",
    "ERROR",
    "ERROR_COLUMNS",
    "ImageProblem",
    "ImageResolver",
    "InstanceIndex",
    "Layout",
    "LayoutError",
    "NESTED_CONTAINERS",
    "ROLES",
    "RowError",
    "RowProblem",
    "RowReader",
    "Source",
    "SourceError",
    "TRACE_ROW",
    "WARNING",
    "as_text",
    "decode_line",
    "decode_text_value",
    "default_access",
    "detect_layout",
    "errors_frame",
    "file_stem",
    "in_batches",
    "iter_decoded",
    "logged_component",
    "looks_like_zip",
    "open_image",
    "private_dir",
    "rollout_name",
    "step_from_name",
    "unpack_inputs",
    "utf8_encodable",
    "utf8_safe",
]
