"""Row errors: what could not be read or scored, and where.

Every problem with an input is recorded as a :class:`RowError` naming the file,
the line (or row) and the field, with a plain reason. Nothing is dropped
silently: a bad row becomes one ``RowError`` and every good row beside it is
still scored. Image problems are *warnings* (``severity="warning"``): the row is
scored anyway, only without the image or its size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"

#: Columns of the errors table, in order.
ERROR_COLUMNS = ("file", "line", "field", "reason", "severity", "unit")


@dataclass(frozen=True, slots=True)
class RowError:
    """One problem with one input row (or a whole file when ``line`` is None).

    ``line`` is 1-based: the physical line of a JSONL/CSV file, or the row
    number of a Parquet file / item number of a JSON array (``unit`` tells
    which). ``field`` names the column or nested field (``answer_gt.type``),
    or is None when the whole line or file is at fault.
    """

    file: str
    line: int | None
    field: str | None
    reason: str
    severity: str = ERROR
    unit: str = "line"

    def location(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", {self.unit} {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return where

    def message(self) -> str:
        """A one-line message: ``file, line N, field 'x': reason``."""
        return f"{self.location()}: {self.reason}"

    def __str__(self) -> str:  # pragma: no cover - convenience
        return self.message()


class RowProblem(Exception):
    """Raised inside the readers for one bad row; turned into a :class:`RowError`."""

    def __init__(self, field: str | None, reason: str, severity: str = ERROR):
        super().__init__(reason)
        self.field = field
        self.reason = reason
        self.severity = severity


def errors_frame(errors: Iterable[RowError]):
    """The errors table as a pandas DataFrame (columns :data:`ERROR_COLUMNS`)."""
    import pandas as pd

    rows = [asdict(e) for e in errors]
    frame = pd.DataFrame(rows, columns=list(ERROR_COLUMNS))
    frame["line"] = frame["line"].astype("Int64")
    return frame
