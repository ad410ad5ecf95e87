"""Reading rollout files: containers, layouts, ground-truth fields, text, instance joins, rows, images, errors.

Modules: access, errors, sources, fields, text, mapping, join, rows, images. May import: ``verifier``, ``rewards``.
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
from .fields import MISSING, NESTED_CONTAINERS, Scopes, as_mapping, clip, decode_text_value, get_path
from .images import ImageProblem, ImageResolver, first_image, open_image
from .join import InstanceIndex
from .mapping import (
    ROLES,
    SIMPLE_ROW,
    TRACE_ROW,
    ColumnMapping,
    Layout,
    LayoutError,
    detect_layout,
    file_stem,
    logged_component,
    step_from_name,
)
from .rows import Row, RowReader
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
    "MISSING",
    "NESTED_CONTAINERS",
    "ROLES",
    "Row",
    "RowError",
    "RowProblem",
    "RowReader",
    "SIMPLE_ROW",
    "Scopes",
    "Source",
    "SourceError",
    "TRACE_ROW",
    "WARNING",
    "as_mapping",
    "as_text",
    "clip",
    "decode_line",
    "decode_text_value",
    "default_access",
    "detect_layout",
    "errors_frame",
    "file_stem",
    "first_image",
    "get_path",
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
