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


def utf8_encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_safe(text: str) -> str:
    """``text`` with each character UTF-8 cannot hold -- a lone surrogate, which json reads from
    an unpaired ``\\ud800`` escape -- written as its escape: Arrow, Parquet and a terminal
    refuse them, and a message must never be what fails."""
    if text.isascii() or utf8_encodable(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


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

    def __post_init__(self):
        # a reason may quote the bad value, and a field name may be a key of the file's
        for name in ("file", "field", "reason"):
            text = getattr(self, name)
            if text is not None:
                object.__setattr__(self, name, utf8_safe(text))

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
    # text columns are text even when every value is missing (say, no error names a field), so
    # the errors of separately scored inputs stack into one table of the same dtypes
    for name in ERROR_COLUMNS:
        if name != "line":
            frame[name] = frame[name].astype("str")
    return frame
