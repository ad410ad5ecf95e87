"""Reading rollout files: containers, layouts, ground-truth fields, text, instance joins, rows, images, errors.

Modules: access, errors, json_window, oversize, line_ranges, sources, fields, text, mapping, join, rows, images. May import: ``verifier``, ``rewards``.
The names below are the layer's public entry point: other layers and the app import only these.
"""

from .access import (
    ARCHIVE_SUFFIXES,
    ROOTS_ENV,
    AccessDenied,
    DataAccess,
    LimitExceeded,
    default_access,
    extract_bundle,
    find_files,
    has_wildcards,
    image_name,
    is_bundle,
    looks_like_zip,
    private_dir,
    rollout_name,
    roots_from_env,
    split_pattern,
    unpack_inputs,
)
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
from .line_ranges import LineRange
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
    "ARCHIVE_SUFFIXES",
    "AccessDenied",
    "ColumnMapping",
    "DataAccess",
    "ERROR",
    "ERROR_COLUMNS",
    "ImageProblem",
    "ImageResolver",
    "InstanceIndex",
    "Layout",
    "LayoutError",
    "LimitExceeded",
    "LineRange",
    "MISSING",
    "NESTED_CONTAINERS",
    "ROLES",
    "ROOTS_ENV",
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
    "extract_bundle",
    "file_stem",
    "find_files",
    "first_image",
    "get_path",
    "has_wildcards",
    "image_name",
    "in_batches",
    "is_bundle",
    "iter_decoded",
    "logged_component",
    "looks_like_zip",
    "open_image",
    "private_dir",
    "rollout_name",
    "roots_from_env",
    "split_pattern",
    "step_from_name",
    "unpack_inputs",
    "utf8_encodable",
    "utf8_safe",
]
