"""The scored dataset on disk: manifest and update plan, part files, the opened table, text read on demand, compact dtypes, snapshots.

Modules: compact, snapshot, table, text, parts, lock, plan, open. May import: ``rollouts``, ``runs``.
The names below are the layer's public entry point: other layers and the app import only these.
"""

from .compact import INTEGER_WIDTHS, SPARSE_MAX_SHARE, compact_table, held_bytes, widened
from .lock import LOCK_NAME, DatasetBusy, clear_held, writing, writing_if_free
from .open import open_dataset, open_errors, row_text, write_table
from .parts import DistinctCount, PartWriter
from .plan import (
    DIGEST_ALGORITHM,
    MANIFEST,
    RESIDENT_ALWAYS_MAX,
    RESIDENT_MIN_REPEATS,
    TABLE,
    DatasetUpdate,
    UpdatePlan,
    bytes_digest,
    code_version,
    digest_or_none,
    file_digest,
    input_groups,
    input_stat,
    instance_paths,
    is_dataset,
    options_record,
    plan_update,
    read_manifest,
    refuse_bundles,
    stream_digest,
    text_on_disk,
)
from .table import PARTS, RESIDENT_TEXT_COLUMNS, STORED_TEXT_COLUMNS, give_back_memory
from .text import ScoredDataset, read_columns, rows_with_text, search_text

__all__ = [
    "DIGEST_ALGORITHM",
    "DatasetBusy",
    "DatasetUpdate",
    "DistinctCount",
    "INTEGER_WIDTHS",
    "LOCK_NAME",
    "MANIFEST",
    "PARTS",
    "PartWriter",
    "RESIDENT_ALWAYS_MAX",
    "RESIDENT_MIN_REPEATS",
    "RESIDENT_TEXT_COLUMNS",
    "SPARSE_MAX_SHARE",
    "STORED_TEXT_COLUMNS",
    "ScoredDataset",
    "TABLE",
    "UpdatePlan",
    "code_version",
    "clear_held",
    "bytes_digest",
    "compact_table",
    "digest_or_none",
    "file_digest",
    "stream_digest",
    "give_back_memory",
    "held_bytes",
    "input_groups",
    "input_stat",
    "instance_paths",
    "is_dataset",
    "open_dataset",
    "open_errors",
    "options_record",
    "plan_update",
    "read_columns",
    "read_manifest",
    "refuse_bundles",
    "row_text",
    "rows_with_text",
    "search_text",
    "text_on_disk",
    "widened",
    "write_table",
    "writing",
    "writing_if_free",
]
